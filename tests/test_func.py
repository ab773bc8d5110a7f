"""ember.func transforms against torch.func on the same functions and data."""
import numpy as np
import pytest

import ember
from ember import func as F

# name -> (function of (lib, *tensors), input shapes); outputs are tensors.
FUNCS = {
    "sin_mul": (lambda t, x: x.sin() * x, [(3,)]),
    "matvec_tanh": (lambda t, x, w: (w @ x).tanh(), [(3,), (2, 3)]),
    "softmax": (lambda t, x: t.softmax(x, -1), [(4,)]),
    "two_in": (lambda t, x, y: x * y.exp() + x ** 2, [(2, 2), (2, 2)]),
    "reduce": (lambda t, x: (x.cos() * x).sum(0), [(2, 3)]),
    "linear_relu": (lambda t, x, w: t.nn.functional.relu(t.nn.functional.linear(x, w)),
                    [(3,), (4, 3)]),
}
SCALAR = {
    "sum_sin": (lambda t, x: (x.sin() * x).sum(), [(3,)]),
    "quad": (lambda t, x, a: (x @ a @ x).tanh(), [(3,), (3, 3)]),
    "logsumexp": (lambda t, x: t.logsumexp(x * 2, 0), [(4,)]),
    "mse": (lambda t, x, y: ((x - y) ** 2).mean(), [(2, 3), (2, 3)]),
}


def _data(shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, s) for s in shapes]


def _np(x):
    return x.detach().numpy()


def _close(a, b, tol=1e-8):
    la = a if isinstance(a, (tuple, list)) else [a]
    lb = b if isinstance(b, (tuple, list)) else [b]
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        if isinstance(x, (tuple, list)):
            _close(x, y, tol)
        else:
            assert tuple(x.shape) == tuple(y.shape)
            np.testing.assert_allclose(_np(x), _np(y), rtol=tol, atol=tol)


def _run(lib, transform, fn, arrays, **kw):
    xs = [lib.tensor(a) for a in arrays]
    return transform(lambda *a: fn(lib, *a), **kw)(*xs)


@pytest.mark.parametrize("name", sorted(SCALAR))
@pytest.mark.parametrize("which", ["grad", "grad_and_value", "hessian", "jacrev2"])
def test_scalar_transforms_match_torch(name, which, torch):
    fn, shapes = SCALAR[name]
    arrays = _data(shapes)
    argnums = tuple(range(len(shapes))) if which != "hessian" else 0
    if which == "jacrev2":
        def tr(lib):
            return lambda f: lib.func.jacrev(lib.func.jacrev(f))
    else:
        def tr(lib):
            return lambda f: getattr(lib.func, which)(f, argnums)
    _close(_run(ember, tr(ember), fn, arrays), _run(torch, tr(torch), fn, arrays))


@pytest.mark.parametrize("name", sorted(FUNCS))
@pytest.mark.parametrize("which", ["jacrev", "jacfwd"])
def test_jacobians_match_torch(name, which, torch):
    fn, shapes = FUNCS[name]
    arrays = _data(shapes)
    argnums = tuple(range(len(shapes)))
    _close(_run(ember, lambda f: getattr(F, which)(f, argnums), fn, arrays),
           _run(torch, lambda f: getattr(torch.func, which)(f, argnums), fn, arrays))


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_vjp_jvp_linearize_match_torch(name, torch):
    fn, shapes = FUNCS[name]
    arrays = _data(shapes)
    tang = _data(shapes, seed=1)
    res = []
    for lib in (ember, torch):
        xs = tuple(lib.tensor(a) for a in arrays)
        ts = tuple(lib.tensor(a) for a in tang)
        out, vjp_fn = lib.func.vjp(lambda *a: fn(lib, *a), *xs)
        cot = lib.tensor(_data([tuple(out.shape)], seed=2)[0])
        o2, jv = lib.func.jvp(lambda *a: fn(lib, *a), xs, ts)
        o3, jvp_fn = lib.func.linearize(lambda *a: fn(lib, *a), *xs)
        res.append((out, vjp_fn(cot), o2, jv, o3, jvp_fn(*ts)))
    _close(res[0], res[1])


def test_has_aux(torch):
    arrays = _data([(3,)])
    outs = []
    for lib in (ember, torch):
        x = lib.tensor(arrays[0])

        def f(x, lib=lib):
            y = x.sin()
            return y.sum(), {"y": y}
        g, aux = lib.func.grad(f, has_aux=True)(x)
        (g2, (v, aux2)) = lib.func.grad_and_value(f, has_aux=True)(x)
        outs.append((g, aux["y"], g2, v, aux2["y"]))
    _close(outs[0], outs[1])
    with pytest.raises(RuntimeError, match="output of function f should be a tuple"):
        F.grad(lambda x: x.sum(), has_aux=True)(ember.ones(2))


def test_errors_match_torch(torch):
    cases = [
        (lambda lib: lib.func.grad(lambda x: x * 2)(lib.ones(3)), RuntimeError,
         "scalar Tensor"),
        (lambda lib: lib.func.grad(lambda x: x.sum(), argnums=2)(lib.ones(3)), RuntimeError,
         "positional inputs"),
        (lambda lib: lib.func.vmap(lambda x, y: x + y)(lib.ones(2, 3), lib.ones(3, 3)),
         ValueError, "same size in the mapped dimension"),
        (lambda lib: lib.func.vmap(lambda x: x, in_dims=(None,))(lib.ones(2)), ValueError,
         "Expected at least one Tensor to vmap over"),
        (lambda lib: lib.func.vmap(lambda x, y: x, in_dims=(None, 0))(lib.ones(2), 3),
         ValueError, "We cannot vmap over non-Tensor arguments"),
        (lambda lib: lib.func.vmap(lambda x: x, in_dims=(0, 0))(lib.ones(2)), ValueError,
         "in_dims"),
        (lambda lib: lib.func.vmap(lambda x: x, in_dims=2)(lib.ones(2)), ValueError,
         "expected in_dim to satisfy"),
        (lambda lib: lib.func.vmap(lambda x: x + lib.rand(1))(lib.ones(2)), RuntimeError,
         "randomness error mode"),
        (lambda lib: lib.func.vmap(lambda x: x, randomness="sometimes")(lib.ones(2)),
         RuntimeError, "Only allowed values for randomness"),
        (lambda lib: lib.func.jvp(lambda x: x, (lib.ones(2),), (lib.ones(3),)), RuntimeError,
         "different size"),
    ]
    for make, err, match in cases:
        for lib in (ember, torch):
            with pytest.raises(err, match=match):
                make(lib)


def test_vmap_dims_and_structures(torch):
    a, b = _data([(3, 4), (4,)])
    res = []
    for lib in (ember, torch):
        x, y = lib.tensor(a), lib.tensor(b)
        res.append((
            lib.func.vmap(lambda u, v: u * v)(x, lib.stack([y] * 3)),
            lib.func.vmap(lambda u, v: u * v, in_dims=(1, None))(x, lib.tensor(b[:3])),
            lib.func.vmap(lambda u: (u.sum(), u * 2), out_dims=(0, 1))(x),
            lib.func.vmap(lambda d: d["p"] @ d["q"], in_dims=({"p": 0, "q": None},))(
                {"p": x, "q": y}),
            lib.func.vmap(lib.func.vmap(lambda s: s.exp() * 2))(x),
            lib.func.vmap(lambda u: u.sum(), chunk_size=2)(x),
            lib.vmap(lambda u: u.cos(), in_dims=-1)(x),
        ))
    _close(res[0], res[1])


def test_jacfwd_randomness(torch):
    for lib in (ember, torch):
        with pytest.raises(RuntimeError, match="randomness error mode"):
            lib.func.jacfwd(lambda x: x * lib.rand(2))(lib.ones(2))
    j = F.jacfwd(lambda x: x * ember.rand(2), randomness="same")(ember.ones(2))
    assert j.shape == (2, 2) and float(j[0, 1]) == 0.0 and float(j[0, 0]) > 0


def test_vmap_randomness_modes():
    x = ember.zeros(4, 3)
    same = F.vmap(lambda u: u + ember.rand(3), randomness="same")(x)
    diff = F.vmap(lambda u: u + ember.rand(3), randomness="different")(x)
    assert bool((same == same[0]).all())
    assert not bool((diff == diff[0]).all())


def test_compositions_match_torch(torch):
    x_np, w_np = _data([(5, 3), (2, 3)])
    res = []
    for lib in (ember, torch):
        x, w = lib.tensor(x_np), lib.tensor(w_np)

        def loss(w, x, lib=lib):
            return (w @ x).tanh().sum()
        res.append((lib.func.vmap(lib.func.grad(loss), in_dims=(None, 0))(w, x),
                    lib.func.vmap(lib.func.jacfwd(lambda v: (v * v).sin()))(x),
                    lib.func.vmap(lib.func.jacrev(lambda v: v.exp() @ w.t()))(x),
                    lib.func.jacrev(lib.func.jacrev(lambda v: (v ** 3).sum()))(x[0])))
    _close(res[0], res[1])


class _CNN(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = ember.nn.Conv2d(1, 3, 3, padding=1)
        self.fc = ember.nn.Linear(3 * 4 * 4, 2)

    def forward(self, x):
        h = ember.nn.functional.relu(self.conv(x))
        return self.fc(ember.nn.functional.max_pool2d(h, 2).flatten(1))


def test_per_sample_grads_of_a_cnn_match_a_loop():
    ember.manual_seed(0)
    model = _CNN()
    xs, ys = ember.randn(6, 1, 8, 8), ember.tensor([0, 1, 1, 0, 1, 0])
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, x, y):
        out = F.functional_call(model, p, (x.unsqueeze(0),))
        return ember.nn.functional.cross_entropy(out, y.unsqueeze(0))

    per_sample = F.vmap(F.grad(loss), in_dims=(None, 0, 0))(params, xs, ys)
    for i in range(6):
        model.zero_grad()
        ember.nn.functional.cross_entropy(model(xs[i:i + 1]), ys[i:i + 1]).backward()
        for name, p in model.named_parameters():
            assert per_sample[name].shape == (6,) + tuple(p.shape)
            np.testing.assert_allclose(per_sample[name][i].numpy(), p.grad.numpy(),
                                       rtol=1e-5, atol=1e-6)


def test_functional_call_and_stack_module_state(torch):
    ember.manual_seed(1)
    models = [ember.nn.Linear(3, 2) for _ in range(4)]
    x = ember.randn(5, 3)
    params, buffers = F.stack_module_state(models)
    assert params["weight"].shape == (4, 2, 3) and params["weight"].requires_grad
    assert buffers == {}

    def run(p, b, x):
        return F.functional_call(models[0], (p, b), (x,))
    out = F.vmap(run, in_dims=(0, 0, None))(params, buffers, x)
    for i, m in enumerate(models):
        np.testing.assert_allclose(out[i].detach().numpy(), m(x).detach().numpy(), rtol=1e-6)
    # the module keeps its own parameters afterwards
    w0 = models[0].weight
    F.functional_call(models[0], {"weight": ember.zeros(2, 3)}, x)
    assert models[0].weight is w0
    with pytest.raises(RuntimeError, match="Missing key"):
        F.functional_call(models[0], {"weight": ember.zeros(2, 3)}, x, strict=True)
    tm = torch.nn.Linear(3, 2)
    tout = torch.func.functional_call(tm, {"weight": torch.ones(2, 3), "bias": torch.zeros(2)},
                                      (torch.tensor(x.numpy()),))
    eout = F.functional_call(models[1], {"weight": ember.ones(2, 3), "bias": ember.zeros(2)},
                             (x,))
    np.testing.assert_allclose(eout.detach().numpy(), tout.detach().numpy(), rtol=1e-6)


def test_results_detached_unless_inputs_track_grad():
    x = ember.ones(3)
    assert not F.grad(lambda v: (v * v).sum())(x).requires_grad
    w = ember.ones(3, requires_grad=True)
    g = F.grad(lambda v: (v * v * w).sum())(x)
    assert g.requires_grad            # the caller's w is still tracked
    g.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 2 * np.ones(3))
