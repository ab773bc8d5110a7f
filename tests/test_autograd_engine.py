"""The compiled engine (ember/_C/engine.pyx): gradients kept without a copy only when
nothing else can see them, the reverse order on graphs with shared nodes and
several roots, leaf accumulation across passes, and the rare paths it hands back to
Python (hooks, anomaly mode, freed graphs) against PyTorch."""
import warnings

import numpy as np
import pytest

import ember
from ember import autograd

torch = pytest.importorskip("torch")


def _pair(a, grad=True):
    a = np.asarray(a, dtype=np.float64)
    return (ember.tensor(a.tolist(), dtype=ember.float64, requires_grad=grad),
            torch.tensor(a, dtype=torch.float64, requires_grad=grad))


def _close(e, t):
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-12, atol=1e-12)


def test_leaf_gradient_never_aliases_a_tensor_the_caller_holds():
    # the engine keeps a fresh gradient as .grad without copying it; a gradient the
    # caller passed, or a view of it, must be copied
    x = ember.ones(2, 3, requires_grad=True)
    g = ember.full((6,), 2.0)
    x.reshape(6).backward(g)          # x's gradient is a view of g
    g.add_(5.0)
    assert x.grad.tolist() == [[2.0] * 3] * 2
    x.grad = None
    g = ember.full((2, 3), 3.0)
    x.backward(g)                     # a leaf root: the gradient is g itself
    g.add_(5.0)
    assert x.grad.tolist() == [[3.0] * 3] * 2
    # a hook's result, and the shared implicit gradient of a scalar root
    s = ember.tensor(1.5, requires_grad=True)
    keep = []
    h = s.register_hook(lambda gr: keep.append(gr) or None)
    s.backward()
    s.backward()
    h.remove()
    assert s.grad.item() == 2.0 and keep[0].item() == 1.0 and keep[1].item() == 1.0


def test_kept_gradient_is_the_formula_result():
    # a formula's reshape of a fresh product (a view whose base nothing else holds) is
    # kept as .grad; later accumulation adds into it
    lin = ember.nn.Linear(4, 3)
    tl = torch.nn.Linear(4, 3)
    with torch.no_grad():
        tl.weight.copy_(torch.from_numpy(lin.weight.detach().numpy()))
        tl.bias.copy_(torch.from_numpy(lin.bias.detach().numpy()))
    x = ember.randn(5, 4)
    tx = torch.from_numpy(x.numpy())
    for _ in range(2):
        lin(x).pow(2).sum().backward()
        tl(tx).pow(2).sum().backward()
    np.testing.assert_allclose(lin.weight.grad.numpy(), tl.weight.grad.numpy(), rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose(lin.bias.grad.numpy(), tl.bias.grad.numpy(), rtol=1e-5,
                               atol=1e-5)


def test_shared_nodes_multiple_roots_and_multi_output():
    res = []
    for lib, a in zip((ember, torch), _pair([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]])):
        h = a.exp()
        p, q = h.split([1, 2], dim=1)          # a multi-output node used twice
        r1 = (p * q[:, :1]).sum() + h.sum()
        r2 = (q * 3).tanh().sum() + p.sum()
        lib.autograd.backward([r1, r2], [lib.tensor(2.0, dtype=lib.float64),
                                         lib.tensor(-1.0, dtype=lib.float64)])
        res.append(a.grad)
    _close(*res)


def test_retain_graph_accumulates_and_freed_graph_raises():
    e, t = _pair([0.3, -1.2, 2.0])
    ye, yt = (e.sin() * e).sum(), (t.sin() * t).sum()
    for _ in range(3):
        ye.backward(retain_graph=True)
        yt.backward(retain_graph=True)
    _close(e.grad, t.grad)
    ye.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        ye.backward()


def test_broadcast_and_dtype_fixups_match_torch():
    e, t = _pair([[1.0], [2.0]])
    eb, tb = _pair([0.5, -1.0, 2.0])
    ef = ember.tensor([1.0, 2.0, 3.0], dtype=ember.float32, requires_grad=True)
    tf = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float32, requires_grad=True)
    ((e * eb + ef) ** 2).sum().backward()
    ((t * tb + tf) ** 2).sum().backward()
    _close(e.grad, t.grad)
    _close(eb.grad, tb.grad)
    assert ef.grad.dtype == ember.float32 and ef.grad.shape == (3,)
    np.testing.assert_allclose(ef.grad.numpy(), tf.grad.numpy(), rtol=1e-6)


def test_create_graph_second_order_matches_torch():
    e, t = _pair([0.7, -0.4])
    ge, = autograd.grad((e ** 3).sum(), e, create_graph=True)
    gt, = torch.autograd.grad((t ** 3).sum(), t, create_graph=True)
    ge.sum().backward()
    gt.sum().backward()
    _close(e.grad, t.grad)
    # backward(create_graph=True) keeps .grad differentiable too
    e.grad = None
    t.grad = None
    (e ** 3).sum().backward(create_graph=True)
    (t ** 3).sum().backward(create_graph=True)
    assert e.grad.requires_grad and t.grad.requires_grad
    _close(e.grad, t.grad)


def test_node_hooks_and_retain_grad_through_the_engine():
    seen = []
    out = []
    for x in _pair([1.0, 2.0, 3.0]):
        y = x * 2
        y.retain_grad()
        z = y.exp()
        z.grad_fn.register_prehook(lambda go: (go[0] * 10,))
        z.grad_fn.register_hook(lambda gi, go: seen.append(float(gi[0].sum())))
        x.register_post_accumulate_grad_hook(lambda p: seen.append(float(p.grad.sum())))
        z.sum().backward()
        out.append((x.grad, y.grad))
    _close(out[0][0], out[1][0])
    _close(out[0][1], out[1][1])
    assert len(seen) == 4 and seen[:2] == pytest.approx(seen[2:])


def test_anomaly_trace_ends_at_the_forward_call():
    x = ember.tensor([0.0, 1.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with autograd.detect_anomaly():
            y = x.sqrt() * 0      # the forward line the trace ends at
            with pytest.raises(RuntimeError, match="SqrtBackward0"):
                y.sum().backward()
    msg = next(str(m.message) for m in w if "Traceback of forward call" in str(m.message))
    last = msg.rstrip().splitlines()[-1]
    assert "x.sqrt() * 0" in last


def test_deep_chain_runs_in_creation_order():
    # 2000 nodes; each value feeds the next op and a side branch summed at the end
    e, t = _pair([0.1, 0.2])
    res = []
    for x in (e, t):
        h, acc = x, 0
        for i in range(1000):
            h = h * 1.001 + 0.001
            acc = acc + h.sum() if i % 7 == 0 else acc
        (acc + h.sum()).backward()
        res.append(x.grad)
    _close(*res)


def test_fanout_buffers_summed_in_place_keep_values():
    # gradients from many consumers are summed into one buffer, in place when the
    # engine holds its only reference: pass-through gradients (add's backward hands
    # the same tensor to both inputs), views and broadcasts must not be written through
    res = []
    for x in _pair([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]]):
        h = x.exp()
        u = h + h                              # the same gradient object twice
        v = u + x                              # ... and reaching x again
        w = h.reshape(3, 2).t() * 2 + h.sum(0, keepdim=True).expand(2, 3)
        parts = [u.sum(), v.pow(2).sum(), (w * h).sum(), h[0].sum() * 3, (h.t() @ h).sum()]
        total = parts[0]
        for p in parts[1:]:
            total = total + p
        total.backward()
        res.append(x.grad)
    _close(*res)


def test_retained_and_hooked_buffers_are_not_added_into():
    seen = []
    res = []
    for x in _pair([1.0, -2.0, 0.5]):
        y = x * 3
        y.retain_grad()
        y.register_hook(lambda g: seen.append(g))
        z = y.sin() + y.cos() + y * y
        z.sum().backward()
        res.append((x.grad, y.grad, seen[-1]))
    for e, t in zip(*res):
        _close(e, t)


# --- capture: autograd.grad / backward(inputs=) in the compiled loop ---------------

def _counting(lib, calls):
    class Twice(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            calls.append(1)
            return g * 2
    return Twice


@pytest.mark.parametrize("create_graph", [False, True])
def test_capture_runs_only_the_nodes_on_a_path_to_the_inputs(create_graph):
    out = []
    for lib in (ember, torch):
        a, b = (lib.tensor([0.5, -1.0, 2.0], dtype=lib.float64, requires_grad=True)
                for _ in range(2))
        calls = []
        side = _counting(lib, calls).apply(b)            # on no path to `a`
        h = a.tanh() * 3
        parts = lib.stack([h, h * h, side]).unbind(0)    # multi-output node, 2 of 3 needed
        loss = (parts[0] * parts[1]).sum() + parts[2].sum() + (h * side).sum()
        gh, ga = lib.autograd.grad(loss, [h, a], create_graph=create_graph)
        out.append((gh, ga, len(calls), b.grad))
    (egh, ega, ecalls, ebg), (tgh, tga, tcalls, tbg) = out
    _close(egh, tgh)
    _close(ega, tga)
    assert ecalls == tcalls == 0 and ebg is None and tbg is None
    assert ega.requires_grad == create_graph


def test_capture_hooks_retain_grad_and_inputs_accumulate_like_torch():
    res = []
    for lib in (ember, torch):
        x = lib.tensor([1.0, -2.0, 3.0], dtype=lib.float64, requires_grad=True)
        w = lib.tensor([0.5, 0.25, -1.0], dtype=lib.float64, requires_grad=True)
        h = x * w
        h.retain_grad()
        h.register_hook(lambda g: g * 10)
        y = (h.exp() * x).sum()
        y.backward(inputs=[h, w], retain_graph=True)
        first = (h.grad.clone(), w.grad.clone(), x.grad)
        (gx,) = lib.autograd.grad(y, x)
        res.append(first + (gx,))
    (eh, ew, ex, egx), (th, tw, tx, tgx) = res
    _close(eh, th)
    _close(ew, tw)
    _close(egx, tgx)
    assert ex is None and tx is None


def test_capture_frees_the_graph_it_ran_and_restores_the_running_node():
    from ember._C import engine
    x = ember.tensor([1.0, 2.0], dtype=ember.float64, requires_grad=True)

    class Inner(autograd.Function):
        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return t * t

        @staticmethod
        def backward(ctx, g):
            (t,) = ctx.saved_tensors
            with ember.enable_grad():
                u = t.detach().requires_grad_()
                (gu,) = autograd.grad((u * u * u).sum(), u)   # nested capture
            seen.append(engine.current_node())
            return g * gu

    seen = []
    y = Inner.apply(x).sum()
    (gx,) = autograd.grad(y, x)
    assert gx.tolist() == [3.0, 12.0]
    assert seen and seen[0] is not None and engine.current_node() is None
    with pytest.raises(RuntimeError, match="second time"):
        autograd.grad(y, x)
