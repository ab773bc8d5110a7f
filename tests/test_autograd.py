"""ember.autograd: the engine, graph API, grad modes, hooks, Function, anomaly mode,
gradcheck, functional and checkpoint."""
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest

import ember
from ember import autograd
from ember.autograd import Function, gradcheck, gradgradcheck, once_differentiable

rng = np.random.default_rng(7)


def T(a, grad=True, dtype=ember.float64):
    return ember.tensor(np.asarray(a, dtype=np.float64).tolist(), dtype=dtype,
                        requires_grad=grad)


# --- basics -----------------------------------------------------------------------

def test_leaf_graph_api():
    w = T([1.0, 2.0, 3.0])
    x = T([4.0, 5.0, 6.0], grad=False)
    b = T([1.0, 1.0, 1.0])
    assert w.is_leaf and w.grad_fn is None and w.grad is None
    y = w * x + b
    assert not y.is_leaf and y.requires_grad
    fn = y.grad_fn
    assert type(fn).__name__ == "AddBackward0" and fn.name() == "AddBackward0"
    (mul, nr), (acc, nr2) = fn.next_functions
    assert type(mul).__name__ == "MulBackward0" and nr == 0
    assert type(acc).__name__ == "AccumulateGrad" and acc.variable is b
    assert mul.next_functions[1] == (None, 0)
    assert mul.next_functions[0][0] is w.grad_fn or mul.next_functions[0][0].variable is w
    y.sum().backward()
    assert w.grad.tolist() == [4.0, 5.0, 6.0] and b.grad.tolist() == [1.0, 1.0, 1.0]
    assert x.grad is None


def test_gradients_accumulate_and_are_not_aliased():
    a, b = T([1.0, 2.0]), T([3.0, 4.0])
    (a + b).sum().backward()
    (a + b).sum().backward()
    assert a.grad.tolist() == [2.0, 2.0] and b.grad.tolist() == [2.0, 2.0]
    assert a.grad.data_ptr() != b.grad.data_ptr()
    a.grad.mul_(0)
    assert b.grad.tolist() == [2.0, 2.0]


def test_grad_of_expanded_sum_is_contiguous_and_writable():
    x = T(rng.normal(size=(3, 4)))
    x.sum().backward()
    assert x.grad.is_contiguous() and x.grad.shape == (3, 4)
    x.grad.add_(1)
    assert x.grad.tolist() == [[2.0] * 4] * 3


def test_root_gradient_is_not_stolen():
    x = T([1.0, 2.0])
    g = ember.ones(2, dtype=ember.float64)
    x.backward(g)
    x.grad.add_(1)
    assert g.tolist() == [1.0, 1.0]
    y = T([3.0])
    y.view(()).backward()
    y.view(()).backward()
    assert y.grad.tolist() == [2.0]
    z = T([3.0])
    z.view(()).backward()
    assert z.grad.tolist() == [1.0]


def test_broadcast_and_dtype_reduced_once():
    a = T(rng.normal(size=(3, 1)))
    b = T(rng.normal(size=(4,)))
    s = T(2.0, dtype=ember.float64)
    f = ember.tensor([1.0, 2.0, 3.0, 4.0], dtype=ember.float32, requires_grad=True)
    (a * b * s + f).sum().backward()
    assert a.grad.shape == (3, 1) and b.grad.shape == (4,) and s.grad.shape == ()
    assert s.grad.dtype == ember.float64 and f.grad.dtype == ember.float32


def test_errors():
    x = T([1.0, 2.0])
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar"):
        (x * 2).backward()
    with pytest.raises(RuntimeError, match="does not require grad"):
        T([1.0], grad=False).sum().backward()
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        (x * 2).backward(ember.ones(3, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="only Tensors of floating point"):
        ember.tensor([1, 2]).requires_grad_()


def test_freed_graph_raises_pytorch_error():
    x = T([1.0, 2.0])
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()
    y2 = (x.exp() * 3).sum()
    y2.backward(retain_graph=True)
    y2.backward()
    # nothing saved (multiplication by a Python scalar, additions): a second pass is fine
    x.grad = None
    z = (x * 2 + 1).sum()
    z.backward()
    z.backward()
    assert x.grad.tolist() == [4.0, 4.0]


def test_version_counter_error_names_the_op():
    x = T([1.0, 2.0])
    y = x.exp()
    z = (y * 2).sum()
    y.add_(1)
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation.*ExpBackward0.*"
                                           r"is at version 1; expected version 0 instead"):
        z.backward()
    a = x * 1
    b = (a * x).sum()
    with ember.no_grad():
        a.mul_(2)
    with pytest.raises(RuntimeError, match="MulBackward0"):
        b.backward()


def test_inplace_on_leaf_raises():
    x = T([1.0])
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x.add_(1)
    with ember.no_grad():
        x.add_(1)
    assert x.tolist() == [2.0]


def test_detach_and_requires_grad_flags():
    x = T([1.0, 2.0])
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.grad_fn is None and d.data_ptr() == y.data_ptr()
    y.detach_()
    assert not y.requires_grad and y.grad_fn is None
    with pytest.raises(RuntimeError, match="leaf variables"):
        (x * 2).requires_grad_(False)
    assert not x.data.requires_grad


def test_nonleaf_grad_warns_and_retain_grad():
    x = T([1.0, 2.0])
    y = x * 3
    y.retain_grad()
    z = y * y
    assert y.retains_grad
    z.sum().backward()
    assert y.grad.tolist() == [6.0, 12.0] and x.grad.tolist() == [18.0, 36.0]
    w = x * 2
    with pytest.warns(UserWarning, match="not a leaf Tensor"):
        assert w.grad is None


# --- autograd.grad / backward(inputs=) -----------------------------------------------

def test_grad_api():
    x = T([1.0, 2.0])
    u = T([5.0])
    y = x * x * x
    (gx,) = autograd.grad(y.sum(), x, create_graph=True)
    assert gx.tolist() == [3.0, 12.0] and gx.requires_grad
    (ggx,) = autograd.grad(gx.sum(), x)
    assert ggx.tolist() == [6.0, 12.0]
    assert x.grad is None
    with pytest.raises(RuntimeError, match="appears to not have been used"):
        autograd.grad((x * 2).sum(), [x, u])
    gx, gu = autograd.grad((x * 2).sum(), [x, u], allow_unused=True)
    assert gu is None
    gx, gu = autograd.grad((x * 2).sum(), [x, u], materialize_grads=True)
    assert gu.tolist() == [0.0]
    with pytest.raises(RuntimeError, match="does not require grad"):
        autograd.grad((x * 2).sum(), T([1.0], grad=False))


def test_grad_wrt_intermediate_does_not_run_upstream():
    x = T([1.0, 2.0])
    calls = []
    x.register_hook(lambda g: calls.append(g))
    h = x * 2
    y = (h * h).sum()
    (gh,) = autograd.grad(y, h)
    assert gh.tolist() == [4.0, 8.0] and calls == [] and x.grad is None


def test_backward_inputs_only_accumulates_there():
    a, b = T([1.0]), T([2.0])
    h = a * b
    (h * h).sum().backward(inputs=[b])
    assert a.grad is None and b.grad.tolist() == [2 * 2.0 * 1.0]
    h2 = a * b
    h2.retain_grad()
    (h2 * 3).sum().backward(inputs=[h2])
    assert h2.grad.tolist() == [3.0] and a.grad is None


def test_hessian_vector_product_closed_form():
    # f(x) = sum(x^3) + (x0 * x1)^2: H v in closed form
    xv = np.array([0.7, -1.3, 2.0])
    v = np.array([1.0, 0.5, -2.0])
    x = T(xv)
    f = (x * x * x).sum() + (x.select(0, 0) * x.select(0, 1)) ** 2
    (g,) = autograd.grad(f, x, create_graph=True)
    (hv,) = autograd.grad((g * T(v, grad=False)).sum(), x)
    H = np.diag(6 * xv)
    H[0, 0] += 2 * xv[1] ** 2
    H[1, 1] += 2 * xv[0] ** 2
    H[0, 1] += 4 * xv[0] * xv[1]
    H[1, 0] += 4 * xv[0] * xv[1]
    np.testing.assert_allclose(hv.numpy(), H @ v, rtol=1e-12)


def test_create_graph_leaf_grad_has_graph():
    x = T([2.0])
    (x ** 3).sum().backward(create_graph=True)
    assert x.grad.requires_grad and x.grad.tolist() == [12.0]
    (g2,) = autograd.grad(x.grad.sum(), x)
    assert g2.tolist() == [12.0]


# --- hooks ---------------------------------------------------------------------

def test_tensor_hooks():
    x = T([1.0, 2.0])
    h = x.register_hook(lambda g: g * 10)
    (x * 3).sum().backward()
    assert x.grad.tolist() == [30.0, 30.0]
    h.remove()
    x.grad = None
    y = x * 2
    seen = []
    y.register_hook(lambda g: seen.append(g.tolist()))
    y.register_hook(lambda g: g + 1)
    (y * y).sum().backward()
    assert seen == [[4.0, 8.0]] and x.grad.tolist() == [10.0, 18.0]
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        T([1.0], grad=False).register_hook(lambda g: g)


def test_post_accumulate_and_node_hooks():
    x = T([1.0, 2.0])
    acc = []
    x.register_post_accumulate_grad_hook(lambda t: acc.append(t.grad.tolist()))
    y = x * 2
    order = []
    y.grad_fn.register_prehook(lambda gout: order.append("pre"))
    y.grad_fn.register_hook(lambda gin, gout: (order.append("post"), (gin[0] * 0.5, None))[1])
    y.sum().backward()
    assert order == ["pre", "post"] and x.grad.tolist() == [1.0, 1.0] and acc == [[1.0, 1.0]]
    assert y.grad_fn.metadata == {} and isinstance(y.grad_fn.metadata, dict)
    with pytest.raises(RuntimeError, match="non-leaf"):
        y.register_post_accumulate_grad_hook(lambda t: None)


# --- Function --------------------------------------------------------------------

class Cube(Function):
    @staticmethod
    def forward(ctx, x, k):
        ctx.save_for_backward(x)
        ctx.k = k
        return x * x * x * k

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        assert ctx.needs_input_grad == (True, False)
        return g * 3 * x * x * ctx.k, None


def test_function_basic_and_double_backward():
    x = T([1.0, 2.0])
    y = Cube.apply(x, 2.0)
    assert type(y.grad_fn).__name__ == "CubeBackward"
    assert gradcheck(lambda t: Cube.apply(t, 2.0), (x,))
    assert gradgradcheck(lambda t: Cube.apply(t, 2.0), (x,))
    with ember.no_grad():
        assert not Cube.apply(x, 1.0).requires_grad


def test_function_saved_output_nondiff_and_materialize():
    class Two(Function):
        @staticmethod
        def forward(ctx, x):
            e = x.exp()
            idx = (x > 0).to(ember.float64)
            ctx.mark_non_differentiable(idx)
            ctx.save_for_backward(e)
            ctx.set_materialize_grads(True)
            return e, idx

        @staticmethod
        def backward(ctx, ge, gidx):
            (e,) = ctx.saved_tensors
            assert gidx is not None  # materialized zeros
            return ge * e

    x = T([0.5, -1.0])
    e, idx = Two.apply(x)
    assert not idx.requires_grad and e.requires_grad
    e.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp([0.5, -1.0]))
    assert gradgradcheck(lambda t: Two.apply(t)[0], (x,))


def test_function_setup_context_and_errors():
    class Scale(Function):
        @staticmethod
        def forward(x, s):
            return x * s

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.s = inputs[1]

        @staticmethod
        def backward(ctx, g):
            return g * ctx.s, None

    x = T([1.0, 3.0])
    Scale.apply(x, 4.0).sum().backward()
    assert x.grad.tolist() == [4.0, 4.0]

    class Bad(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g, g

    with pytest.raises(RuntimeError, match="incorrect number of gradients"):
        Bad.apply(x).sum().backward()


def test_function_mark_dirty_and_once_differentiable():
    class AddOne(Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            return g * 1

    x = T([1.0, 2.0])
    y = x * 1
    z = AddOne.apply(y)
    assert z is y and type(z.grad_fn).__name__ == "AddOneBackward"
    v = T([1.0, 1.0])
    (gx,) = autograd.grad(z, x, v, create_graph=True)
    assert gx.tolist() == [1.0, 1.0] and gx.requires_grad
    with pytest.raises(RuntimeError, match="once_differentiable"):
        autograd.grad(gx.sum(), v)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        AddOne.apply(T([1.0]))


def test_function_saved_tensor_version_check():
    x = T([1.0, 2.0])
    y = x * 1
    z = Cube.apply(y, 1.0)
    with ember.no_grad():
        y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


# --- grad modes -----------------------------------------------------------------

def test_grad_modes_context_and_decorator():
    x = T([1.0])
    with ember.no_grad():
        assert not (x * 2).requires_grad
        with ember.enable_grad():
            assert (x * 2).requires_grad
    assert ember.is_grad_enabled()

    @ember.no_grad()
    def f():
        return x * 2

    @autograd.no_grad
    def f2():
        return x * 2

    assert not f().requires_grad and not f2().requires_grad and ember.is_grad_enabled()

    @ember.no_grad()
    def gen():
        yield ember.is_grad_enabled()
        yield (x * 2).requires_grad

    assert list(gen()) == [False, False]
    ember.set_grad_enabled(False)
    assert not ember.is_grad_enabled()
    ember.set_grad_enabled(True)
    with ember.set_grad_enabled(False):
        assert not ember.is_grad_enabled()
    assert ember.is_grad_enabled()

    @ember.set_grad_enabled(False)
    def g():
        return ember.is_grad_enabled()

    assert g() is False and ember.is_grad_enabled()
    with ember.inference_mode():
        assert ember.is_inference_mode_enabled() and not (x * 2).requires_grad
    assert not ember.is_inference_mode_enabled()

    @ember.inference_mode()
    def h():
        return ember.is_inference_mode_enabled()

    assert h()
    with ember.inference_mode(False):
        assert ember.is_grad_enabled()


def test_grad_mode_is_thread_local():
    seen = {}

    def worker():
        seen["start"] = ember.is_grad_enabled()
        with ember.no_grad():
            seen["inner"] = ember.is_grad_enabled()
            ev.set()
            go.wait()

    ev, go = threading.Event(), threading.Event()
    t = threading.Thread(target=worker)
    t.start()
    ev.wait()
    assert ember.is_grad_enabled()          # the other thread's no_grad does not leak here
    go.set()
    t.join()
    with ember.no_grad():
        t2 = threading.Thread(target=lambda: seen.__setitem__("fresh", ember.is_grad_enabled()))
        t2.start()
        t2.join()
    assert seen == {"start": True, "inner": False, "fresh": True}


def test_backward_in_threads():
    errs = []

    def work():
        try:
            for _ in range(50):
                x = T(rng.normal(size=4))
                (x * x).sum().backward()
                np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy())
        except Exception as e:  # pragma: no cover
            errs.append(e)

    ts = [threading.Thread(target=work) for _ in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errs


# --- anomaly mode ---------------------------------------------------------------

def test_anomaly_mode_names_forward_op(capsys):
    x = T([0.0, 1.0])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with autograd.detect_anomaly():
            y = x.sqrt() * 0
            with pytest.raises(RuntimeError, match=r"Function 'SqrtBackward0' returned nan "
                                                   r"values in its 0th output."):
                y.sum().backward()
    msgs = [str(m.message) for m in w]
    assert any("Traceback of forward call" in m and "test_autograd.py" in m for m in msgs)
    assert not autograd.is_anomaly_enabled()
    autograd.set_detect_anomaly(True)
    try:
        assert autograd.is_anomaly_enabled()
    finally:
        autograd.set_detect_anomaly(False)
    # without anomaly mode the NaN just propagates
    x.grad = None
    (x.sqrt() * 0).sum().backward()
    assert np.isnan(x.grad.numpy()[0])


# --- gradcheck ------------------------------------------------------------------

def test_gradcheck_reports_wrong_gradients():
    class Wrong(Function):
        @staticmethod
        def forward(ctx, x):
            return x * x

        @staticmethod
        def backward(ctx, g):
            return g * 3.0

    x = T([0.5, 1.5])
    with pytest.raises(autograd.GradcheckError, match="Jacobian mismatch for output 0 with "
                                                       "respect to input 0"):
        gradcheck(Wrong.apply, (x,))
    assert gradcheck(Wrong.apply, (x,), raise_exception=False) is False


# --- functional ---------------------------------------------------------------------

def test_functional_against_torch(torch):
    from ember.autograd import functional as F
    xv = np.array([0.3, -0.8, 1.1])

    def f(t):
        return (t * t).sin() * t.select(0, 0)

    def s(t):
        return (t.exp() * t).sum()

    x = T(xv, grad=False)
    tx = torch.tensor(xv)
    np.testing.assert_allclose(F.jacobian(f, x).numpy(),
                               torch.autograd.functional.jacobian(f, tx).numpy(), rtol=1e-12)
    np.testing.assert_allclose(F.hessian(s, x).numpy(),
                               torch.autograd.functional.hessian(s, tx).numpy(), rtol=1e-12)
    v = np.array([1.0, -2.0, 0.5])
    _, vj = F.vjp(f, x, T(v, grad=False))
    _, tvj = torch.autograd.functional.vjp(f, tx, torch.tensor(v))
    np.testing.assert_allclose(vj.numpy(), tvj.numpy(), rtol=1e-12)
    _, jv = F.jvp(f, x, T(v, grad=False))
    _, tjv = torch.autograd.functional.jvp(f, tx, torch.tensor(v))
    np.testing.assert_allclose(jv.numpy(), tjv.numpy(), rtol=1e-12)
    _, hv = F.hvp(s, x, T(v, grad=False))
    _, thv = torch.autograd.functional.hvp(s, tx, torch.tensor(v))
    np.testing.assert_allclose(hv.numpy(), thv.numpy(), rtol=1e-12)


def test_functional_loads_lazily():
    code = ("import sys, ember; assert 'ember.autograd.functional' not in sys.modules; "
            "import ember.autograd as A; A.functional; "
            "assert 'ember.autograd.functional' in sys.modules; "
            "assert callable(A.gradcheck)")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_torch_gradients_match_on_a_small_network(torch):
    xv = rng.normal(size=(4, 3))
    wv = rng.normal(size=(3,))
    x, w = T(xv, grad=False), T(wv)
    out = ((x * w).tanh() - (x * w).sigmoid() * 0.5).clamp(-0.3, 0.9)
    (out * out).sum().backward()
    tw = torch.tensor(wv, requires_grad=True)
    tx = torch.tensor(xv)
    tout = ((tx * tw).tanh() - (tx * tw).sigmoid() * 0.5).clamp(-0.3, 0.9)
    (tout * tout).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-12)


# --- checkpoint -------------------------------------------------------------------

def _block(w):
    def f(x):
        return ((x * w).tanh() * w).sin()
    return f


@pytest.mark.parametrize("reentrant", [False, True])
def test_checkpoint_matches_plain(reentrant):
    from ember.utils.checkpoint import checkpoint
    w = T(rng.normal(size=(2, 3)))
    x = T(rng.normal(size=(3,)))
    checkpoint(_block(w), x, use_reentrant=reentrant).sum().backward()
    g = (x.grad.clone(), w.grad.clone())
    x.grad = w.grad = None
    _block(w)(x).sum().backward()
    np.testing.assert_allclose(g[0].numpy(), x.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(g[1].numpy(), w.grad.numpy(), rtol=1e-12)


def test_checkpoint_saves_nothing_and_recomputes():
    from ember.utils.checkpoint import checkpoint
    calls = []
    w = T([1.5, -0.5])

    def f(x):
        calls.append(1)
        return (x * w).exp()

    x = T([0.2, 0.3])
    y = checkpoint(f, x, use_reentrant=False)
    assert type(y.grad_fn).__name__ == "CheckpointFunctionBackward"
    assert len(calls) == 1
    gx, gw = autograd.grad(y.sum(), [x, w])
    assert len(calls) == 2
    np.testing.assert_allclose(gx.numpy(), (np.exp([0.3, -0.15]) * [1.5, -0.5]), rtol=1e-12)
    np.testing.assert_allclose(gw.numpy(), (np.exp([0.3, -0.15]) * [0.2, 0.3]), rtol=1e-12)


def test_checkpoint_restores_rng_state():
    from ember.utils.checkpoint import checkpoint
    x = T([1.0, 2.0, 3.0, 4.0])
    masks = []

    def f(t):
        m = (ember.rand(4, dtype=ember.float64) > 0.5).to(ember.float64)
        masks.append(m.tolist())
        return t * m

    ember.manual_seed(0)
    checkpoint(f, x, use_reentrant=False).sum().backward()
    assert masks[0] == masks[1]
    assert x.grad.tolist() == masks[0]


def test_checkpoint_sequential():
    from ember.utils.checkpoint import checkpoint_sequential
    w = T([0.5, -1.0])
    fns = [lambda t: t * w, lambda t: t.tanh(), lambda t: t * t, lambda t: t.exp()]
    x = T([0.1, 0.2])
    checkpoint_sequential(fns, 2, x, use_reentrant=False).sum().backward()
    g = x.grad.clone()
    x.grad = None
    y = x
    for f in fns:
        y = f(y)
    y.sum().backward()
    np.testing.assert_allclose(g.numpy(), x.grad.numpy(), rtol=1e-12)
