"""threshold, hardshrink, softshrink, prelu and glu as one-pass kernels: values (NaN,
infinities, signed zeros, ties at the threshold / lambd), gradients and double
backward, errors, integer and half inputs, in-place forms, strided inputs and 1 vs 2
threads, against PyTorch; the composite form (Python modes, other devices) alike."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import library

torch = pytest.importorskip("torch")
tF = torch.nn.functional

RNG = np.random.default_rng(1707)
SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 0.1, -0.1, 2.0, -3.0, 1e-30, -1e30]

# (name, ember call, torch call): each a function of (module F, input)
CASES = [
    ("threshold", lambda f, x: f.threshold(x, 0.1, 2.0)),
    ("threshold-neg", lambda f, x: f.threshold(x, -0.5, -3.0)),
    ("hardshrink", lambda f, x: f.hardshrink(x, 0.5)),
    ("hardshrink-0.1", lambda f, x: f.hardshrink(x, 0.1)),
    ("softshrink", lambda f, x: f.softshrink(x, 0.5)),
    ("softshrink-0.1", lambda f, x: f.softshrink(x, 0.1)),
    ("softshrink-0", lambda f, x: f.softshrink(x, 0.0)),
]
IDS = [c[0] for c in CASES]


def _data(dtype, n=4000):
    # a multiple of 64 elements: torch's vectorised loop covers them all (its scalar
    # tail gives softshrink's zeros the input's sign)
    n = -(-(n + len(SPECIAL)) // 64) * 64 - len(SPECIAL)
    return np.concatenate([SPECIAL, RNG.standard_normal(n) * 2]).astype(dtype)


def _same(got, want):
    """equality: NaN where NaN, the same values and the same zero signs"""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    num = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got[num]), np.signbit(want[num]))


def _threads(fn):
    old = ember.get_num_threads()
    try:
        out = []
        for n in (1, 2):
            ember.set_num_threads(n)
            out.append(fn())
        return out
    finally:
        ember.set_num_threads(old)


class _Pass(library.DispatchMode):
    """a Python mode that runs every op: the functions take their composite form"""
    def __ember_dispatch__(self, name, func, args, kwargs):
        return func(*args, **kwargs)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,fn", CASES, ids=IDS)
def test_values_match_torch_bitwise(name, fn, dtype):
    x = _data(dtype)
    _same(fn(F, ember.from_numpy(x.copy())).numpy(), fn(tF, torch.from_numpy(x.copy())).numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("w", [0.25, -0.25, 0.0])
def test_prelu_one_weight_matches_torch_bitwise(w, dtype):
    x = _data(dtype)
    we, wt = ember.tensor([w], dtype=getattr(ember, dtype)), torch.tensor([w]).to(
        getattr(torch, dtype))
    _same(F.prelu(ember.from_numpy(x.copy()), we).numpy(),
          tF.prelu(torch.from_numpy(x.copy()), wt).numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_prelu_per_channel_and_glu_match_torch(dtype):
    x = RNG.standard_normal((3, 4, 5, 6)).astype(dtype)
    x[0, 0, 0, :4] = [np.nan, 0.0, -0.0, -np.inf]
    w = RNG.standard_normal(4).astype(dtype)
    _same(F.prelu(ember.from_numpy(x), ember.from_numpy(w)).numpy(),
          tF.prelu(torch.from_numpy(x), torch.from_numpy(w)).numpy())
    xg = RNG.standard_normal((4, 6, 8)).astype(dtype) * 4
    xg[0, 0, :3] = [np.nan, np.inf, -np.inf]
    for d in (0, 1, 2, -1):
        got = F.glu(ember.from_numpy(xg), d).numpy()
        want = tF.glu(torch.from_numpy(xg), d).numpy()
        np.testing.assert_allclose(got, want, rtol=4e-7 if dtype == "float32" else 1e-15,
                                   atol=0)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        # one pass equals the composite a * sigmoid(b) bit for bit
        a, b = ember.from_numpy(xg).chunk(2, d)
        _same(got, (a * ember.sigmoid(b)).numpy())


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_types_match_torch(dtype):
    x = _data("float32", 500)
    xe, xt = ember.from_numpy(x).to(getattr(ember, dtype)), torch.from_numpy(x).to(
        getattr(torch, dtype))
    for _, fn in CASES:
        r, w = fn(F, xe), fn(tF, xt)
        assert str(r.dtype) == str(w.dtype).replace("torch", "ember")
        _same(r.float().numpy(), w.float().numpy())
    np.testing.assert_allclose(F.glu(xe[:500]).float().numpy(), tF.glu(xt[:500]).float().numpy(),
                               rtol=1e-2, atol=1e-3)
    # the gradients (the shrinks' backward takes lambd in the element type)
    for _, fn in CASES:
        ge, gt = xe.detach().requires_grad_(), xt.detach().requires_grad_()
        fn(F, ge).sum().backward()
        fn(tF, gt).sum().backward()
        _same(ge.grad.float().numpy(), gt.grad.float().numpy())


INT_CASES = [(1.5, 9), (-0.5, 9), (1, 2.7), (-1, 5), (1e20, 1), (1, 1e20), (float("nan"), 1),
             (1, float("inf")), (True, 7)]


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "int64"])
def test_threshold_of_integers_matches_torch(dtype):
    a = np.arange(-3, 5).astype(dtype) if dtype != "uint8" else np.arange(8).astype(dtype)
    for th, v in INT_CASES:
        try:
            want = tF.threshold(torch.from_numpy(a.copy()), th, v)
        except RuntimeError as e:
            with pytest.raises(RuntimeError, match=str(e)):
                F.threshold(ember.from_numpy(a.copy()), th, v)
            continue
        got = F.threshold(ember.from_numpy(a.copy()), th, v)
        assert str(got.dtype) == str(want.dtype).replace("torch", "ember")
        np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=f"{th} {v}")


def _same_error(fe, ft):
    with pytest.raises(Exception) as et:
        ft()
    with pytest.raises(type(et.value)) as ee:
        fe()
    assert str(et.value) in str(ee.value), (str(ee.value), str(et.value))


@pytest.mark.parametrize("call", [
    lambda L, f: f.softshrink(L.ones(3), -1.0),
    lambda L, f: f.softshrink(L.ones(3, dtype=L.float64), -0.5),
    lambda L, f: f.softshrink(L.ones(3, dtype=L.float16), 1e5),
    lambda L, f: f.softshrink(L.ones(3), float("nan")),
    lambda L, f: f.softshrink(L.ones(3, dtype=L.int64), 0.5),
    lambda L, f: f.hardshrink(L.ones(3, dtype=L.int32), 0.5),
    lambda L, f: f.hardshrink(L.ones(3), 1e39),
    lambda L, f: f.hardshrink(L.ones(3, dtype=L.complex64), 0.5),
    lambda L, f: f.threshold(L.ones(3), 1e39, 0.0),
    lambda L, f: f.threshold(L.ones(3, dtype=L.bool), 0.5, 0.0),
    lambda L, f: f.threshold(L.ones(3, dtype=L.complex64), 0.5, 0.0),
    lambda L, f: f.glu(L.ones(3)),
    lambda L, f: f.glu(L.ones(())),
    lambda L, f: f.glu(L.ones(2, 4), dim=2),
    lambda L, f: f.glu(L.ones(2, 4), dim=-3),
    lambda L, f: f.glu(L.ones(2, 4, dtype=L.int64)),
    lambda L, f: f.glu(L.ones(2, 4, dtype=L.complex64)),
    lambda L, f: f.prelu(L.ones(2, 3), L.ones(2)),
    lambda L, f: f.prelu(L.ones(3), L.ones(3)),
    lambda L, f: f.prelu(L.ones(()), L.ones(2)),
    lambda L, f: f.prelu(L.ones(2, 3), L.ones(1, 3)),
    lambda L, f: f.prelu(L.ones(2, 3, dtype=L.float64), L.ones(1)),
    lambda L, f: f.prelu(L.ones(2, 3, dtype=L.int64), L.ones(1, dtype=L.int64)),
])
def test_errors_match_torch(call):
    _same_error(lambda: call(ember, F), lambda: call(torch, tF))


def _grad_cases(dtype):
    x = _data(dtype, 2000)
    g = RNG.standard_normal(x.size).astype(dtype)
    return x, g


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,fn", CASES, ids=IDS)
def test_gradients_match_torch_bitwise(name, fn, dtype):
    x, g = _grad_cases(dtype)
    xe = ember.from_numpy(x.copy()).requires_grad_()
    xt = torch.from_numpy(x.copy()).requires_grad_()
    fn(F, xe).backward(ember.from_numpy(g))
    fn(tF, xt).backward(torch.from_numpy(g))
    _same(xe.grad.numpy(), xt.grad.numpy())
    # a broadcast incoming gradient (the backward of a sum)
    xe.grad = None
    xt.grad = None
    fn(F, xe).sum().backward()
    fn(tF, xt).sum().backward()
    _same(xe.grad.numpy(), xt.grad.numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_prelu_and_glu_gradients_match_torch(dtype):
    tol = 2e-6 if dtype == "float32" else 1e-14
    x = RNG.standard_normal((3, 4, 5)).astype(dtype)
    x[0, 0, :3] = [np.nan, 0.0, -0.0]
    g = RNG.standard_normal(x.shape).astype(dtype)
    for w in (RNG.standard_normal(4).astype(dtype), np.array([-0.3], dtype)):
        xe, we = (ember.from_numpy(v.copy()).requires_grad_() for v in (x, w))
        xt, wt = (torch.from_numpy(v.copy()).requires_grad_() for v in (x, w))
        F.prelu(xe, we).backward(ember.from_numpy(g))
        tF.prelu(xt, wt).backward(torch.from_numpy(g))
        _same(xe.grad.numpy(), xt.grad.numpy())
        np.testing.assert_allclose(we.grad.numpy(), wt.grad.numpy(), rtol=tol * 10)
    xg = RNG.standard_normal((4, 6, 8)).astype(dtype) * 3
    for d in (0, 1, -1):
        gg = RNG.standard_normal(tF.glu(torch.from_numpy(xg), d).shape).astype(dtype)
        xe = ember.from_numpy(xg.copy()).requires_grad_()
        xt = torch.from_numpy(xg.copy()).requires_grad_()
        F.glu(xe, d).backward(ember.from_numpy(gg))
        tF.glu(xt, d).backward(torch.from_numpy(gg))
        np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=tol, atol=tol)
        assert xe.grad_fn is None and F.glu(xe, d).grad_fn.name() == "GluBackward0"


@pytest.mark.parametrize("fn", [
    lambda x: F.threshold(x, 0.1, 2.0), lambda x: F.hardshrink(x, 0.5),
    lambda x: F.softshrink(x, 0.5), lambda x: F.glu(x.reshape(2, 6), 1),
    lambda x: F.glu(x.reshape(4, 3), 0),
], ids=["threshold", "hardshrink", "softshrink", "glu1", "glu0"])
def test_gradcheck_and_double_backward(fn):
    # away from the kinks (|x| - 0.5 and x - 0.1 at least 0.05)
    x = np.array([-2.0, -1.2, -0.8, -0.3, 0.2, 0.3, 0.7, 1.1, 1.6, 2.4, -0.05, 0.9])
    xe = ember.tensor(x, requires_grad=True)
    assert ember.autograd.gradcheck(fn, (xe,))
    assert ember.autograd.gradgradcheck(fn, (xe,))


def test_prelu_gradcheck_with_weight():
    x = ember.tensor(RNG.standard_normal((2, 3, 4)), requires_grad=True)
    w = ember.tensor([0.2, -0.4, 0.7], dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(F.prelu, (x, w))
    assert ember.autograd.gradgradcheck(F.prelu, (x, w))
    assert F.prelu(x, w).grad_fn.name() == "PreluKernelBackward0"


def test_double_backward_matches_torch():
    x = np.array([-2.0, -0.5, 0.1, 0.3, 0.5, 1.0, 2.5, -0.2])
    for fn in (lambda f, t: f.threshold(t, 0.1, 2.0), lambda f, t: f.softshrink(t, 0.5),
               lambda f, t: f.hardshrink(t, 0.5), lambda f, t: f.glu(t)):
        res = []
        for L, f in ((ember, F), (torch, tF)):
            t = L.tensor(x, requires_grad=True)
            gout = L.tensor(np.linspace(-1, 1, fn(f, t).numel()), requires_grad=True)
            (gx,) = L.autograd.grad(fn(f, t), t, gout, create_graph=True)
            res.append([v.detach().numpy() for v in L.autograd.grad((gx * gx).sum(),
                                                                     (t, gout))])
        for a, b in zip(*res):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name,fn", CASES[::2] + [
    ("prelu", lambda f, x: f.prelu(x, x.new_tensor([0.3]))),
    ("glu", lambda f, x: f.glu(x, 0))], ids=IDS[::2] + ["prelu", "glu"])
def test_strided_inputs_equal_contiguous(name, fn):
    x = _data("float32", 6000).reshape(-1, 1)[:6000]
    big = ember.from_numpy(np.repeat(x, 3, axis=1))
    strided = big[:, 1]                   # stride 3
    dense = strided.contiguous()
    _same(fn(F, strided).numpy(), fn(F, dense).numpy())
    m = ember.from_numpy(RNG.standard_normal((60, 80)).astype(np.float32))
    _same(fn(F, m.t()).numpy(), fn(F, m.t().contiguous()).numpy())
    xs = strided.detach().requires_grad_()
    xd = dense.detach().requires_grad_()
    fn(F, xs).sum().backward()
    fn(F, xd).sum().backward()
    _same(xs.grad.numpy(), xd.grad.numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_one_and_two_threads_bit_identical(dtype):
    x = (RNG.standard_normal(300_000) * 2).astype(dtype)
    g = RNG.standard_normal(150_000).astype(dtype)
    fns = [lambda t, fn=fn: fn(F, t) for _, fn in CASES] + [
        lambda t: F.prelu(t, ember.tensor([0.2], dtype=t.dtype)),
        lambda t: F.prelu(t.reshape(100, 30, 100), ember.ones(30, dtype=t.dtype) * 0.1),
        lambda t: F.glu(t), lambda t: F.glu(t.reshape(300, 1000), 0)]

    def run():
        out = []
        for fn in fns:
            xe = ember.from_numpy(x.copy()).requires_grad_()
            y = fn(xe)
            gy = ember.from_numpy(np.resize(g, y.numel()).reshape(tuple(y.shape)))
            y.backward(gy)
            out += [y.detach().numpy(), xe.grad.numpy()]
        return out

    one, two = _threads(run)
    for a, b in zip(one, two):
        _same(a, b)


def test_inplace_forms():
    x = _data("float32", 100)
    xe, xt = ember.from_numpy(x.copy()), torch.from_numpy(x.copy())
    assert F.threshold(xe, 0.1, 2.0, inplace=True) is xe
    tF.threshold(xt, 0.1, 2.0, inplace=True)
    _same(xe.numpy(), xt.numpy())
    xe, xt = ember.from_numpy(x.copy()), torch.from_numpy(x.copy())
    assert ember.threshold_(xe, -0.5, 7.0) is xe
    torch.threshold_(xt, -0.5, 7.0)
    _same(xe.numpy(), xt.numpy())
    # through the graph: the in-place threshold of a non-leaf
    res = []
    for L, f in ((ember, F), (torch, tF)):
        t = L.tensor(x[4:40].astype(np.float64), requires_grad=True)
        y = t * 2
        f.threshold(y, 0.2, -1.0, inplace=True)
        (y * y).sum().backward()
        res.append(t.grad.numpy())
    _same(*res)
    # a leaf that requires grad refuses it, as torch
    _same_error(lambda: F.threshold(ember.ones(2, requires_grad=True), 0.5, 0.0, True),
                lambda: tF.threshold(torch.ones(2, requires_grad=True), 0.5, 0.0, True))


def test_composite_form_matches_kernels():
    # a Python mode sends the functions to their composite form (as other devices)
    x = _data("float64", 300)
    g = RNG.standard_normal(x.size)
    fns = [fn for _, fn in CASES] + [lambda f, t: f.prelu(t, ember.tensor([-0.2], dtype=t.dtype)),
                                     lambda f, t: f.glu(t.reshape(-1, 2, 3), 1)]
    for fn in fns:
        outs = []
        for mode in (None, _Pass()):
            xe = ember.from_numpy(x[:312].copy()).requires_grad_()
            if mode is None:
                y = fn(F, xe)
            else:
                with mode:
                    y = fn(F, xe)
            y.backward(ember.from_numpy(g[:y.numel()].reshape(tuple(y.shape))))
            outs.append((y.detach().numpy(), xe.grad.numpy()))
        np.testing.assert_allclose(outs[0][0], outs[1][0], rtol=1e-15, atol=0)
        np.testing.assert_allclose(outs[0][1], outs[1][1], rtol=1e-15, atol=0)
        np.testing.assert_array_equal(np.isnan(outs[0][0]), np.isnan(outs[1][0]))
