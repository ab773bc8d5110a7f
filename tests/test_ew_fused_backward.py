"""Fused elementwise kernels: exact gelu's derivative over its whole tail, elu and
softplus backward in one pass with their parameters, float32 hypot in double,
and the max/min/clamp/hardswish loops; checked against float64 references,
PyTorch and ember's composite formulas, contiguous and strided, at 1 and 2 threads."""
import math

import numpy as np
import pytest

import ember
from ember._C import elementwise as E

RNG = np.random.default_rng(1606)
_erfc = np.vectorize(math.erfc, otypes=[np.float64])


def _gelu_grad64(x):
    return 0.5 * _erfc(-x / math.sqrt(2)) + x * np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)


def _threads(fn):
    old = ember.get_num_threads()
    out = []
    try:
        for n in (1, 2):
            ember.set_num_threads(n)
            out.append(fn())
    finally:
        ember.set_num_threads(old)
    return out


# --- exact gelu's derivative in the Gaussian tail (vectorised down to the zeros) ---
def test_gelu_grad_tail_keeps_float_precision():
    x = np.unique(np.linspace(-15.5, -4.0, 400_001).astype(np.float32))
    got = E.gelu_backward(ember.ones(x.size), ember.from_numpy(x)).numpy()
    ref = _gelu_grad64(x.astype(np.float64))
    normal = np.abs(ref) >= np.finfo(np.float32).tiny
    rel = np.abs(got[normal] - ref[normal]) / np.abs(ref[normal])
    assert rel.max() <= 3e-7, (float(rel.max()), x[normal][rel.argmax()])
    # subnormal results within two steps; zero (never garbage) past x = -14.6
    step = float(np.finfo(np.float32).smallest_subnormal)
    assert (np.abs(got[~normal] - ref[~normal]) <= 2 * step).all()
    assert (got[x < -14.6] == 0).all()


def test_gelu_grad_special_values_and_strided_input():
    x = np.array([-np.inf, np.inf, np.nan, -1e30, -20.0, -14.6, -5.5, -0.0, 0.0, 1e-30,
                  5.5, 1e30], dtype=np.float32)
    got = E.gelu_backward(ember.ones(x.size), ember.from_numpy(x)).numpy()
    # inf * phi(inf) is NaN, as torch
    np.testing.assert_array_equal(np.isnan(got), [True, True, True] + [False] * 9)
    np.testing.assert_array_equal(got[3:5], [0.0, 0.0])
    np.testing.assert_allclose(got[6:], _gelu_grad64(x[6:].astype(np.float64)), rtol=3e-7)
    xs = (RNG.standard_normal(6000) * 5).astype(np.float32)
    g = RNG.standard_normal(3000).astype(np.float32)
    strided = E.gelu_backward(ember.from_numpy(g), ember.from_numpy(xs)[::2]).numpy()
    dense = E.gelu_backward(ember.from_numpy(g), ember.from_numpy(xs[::2].copy())).numpy()
    np.testing.assert_array_equal(strided, dense)


def test_gelu_grad_tail_matches_torch_where_torch_is_accurate():
    torch = pytest.importorskip("torch")
    x = (RNG.standard_normal(50_000) * 4).astype(np.float32)
    g = RNG.standard_normal(x.size).astype(np.float32)
    te = ember.from_numpy(x.copy()).requires_grad_()
    tt = torch.from_numpy(x.copy()).requires_grad_()
    ember.nn.functional.gelu(te).backward(ember.from_numpy(g))
    torch.nn.functional.gelu(tt).backward(torch.from_numpy(g))
    np.testing.assert_allclose(te.grad.numpy(), tt.grad.numpy(), rtol=1e-5, atol=1e-6)


# --- elu / selu / celu and softplus backward: one fused pass ------------------------
ELU_CASES = [("elu", {}), ("elu", {"alpha": 0.3}), ("selu", {}), ("celu", {"alpha": 2.0}),
             ("celu", {"alpha": 0.5})]
SOFTPLUS_CASES = [{}, {"beta": 2.0}, {"beta": 0.5, "threshold": 3.0}, {"threshold": 1.0}]


def _act_inputs(dtype):
    x = RNG.standard_normal(5000) * 6
    x[:8] = [0.0, -0.0, 20.0, -20.0, 100.0, -100.0, 1e-30, -1e-30]
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name, kw", ELU_CASES + [("softplus", kw) for kw in SOFTPLUS_CASES])
def test_fused_backward_matches_torch(name, kw, dtype):
    torch = pytest.importorskip("torch")
    x = _act_inputs(dtype)
    g = RNG.standard_normal(x.size).astype(dtype)
    for xs, gs in ((x, g), (x[::2], g[: x[::2].size])):      # contiguous and strided
        te = ember.from_numpy(xs).requires_grad_()
        tt = torch.from_numpy(xs.copy()).requires_grad_()
        getattr(ember.nn.functional, name)(te, **kw).backward(ember.from_numpy(gs.copy()))
        getattr(torch.nn.functional, name)(tt, **kw).backward(torch.from_numpy(gs.copy()))
        tol = 1e-6 if dtype == "float32" else 1e-14
        np.testing.assert_allclose(te.grad.numpy(), tt.grad.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("name, kw", ELU_CASES + [("softplus", kw) for kw in SOFTPLUS_CASES])
def test_fused_backward_equals_the_composite_form(name, kw):
    # the recording form (create_graph=True) composes public ops; the fused kernel
    # (torch's order of products) agrees to a few roundings
    x = _act_inputs("float32")
    g = RNG.standard_normal(x.size).astype(np.float32)
    grads = []
    for create in (False, True):
        t = ember.from_numpy(x.copy()).requires_grad_()
        y = getattr(ember.nn.functional, name)(t, **kw)
        (gx,) = ember.autograd.grad(y, t, ember.from_numpy(g), create_graph=create)
        grads.append(gx.detach().numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=5e-7, atol=1e-44)


def test_fused_backward_broadcast_gradient_and_direct_calls():
    x = ember.from_numpy(_act_inputs("float32"))
    t = x.clone().requires_grad_()
    ember.nn.functional.elu(t, alpha=0.7).sum().backward()      # a stride-0 gradient
    xn = x.numpy().astype(np.float64)
    want = np.where(xn > 0, 1.0, 0.7 * np.exp(xn))
    np.testing.assert_allclose(t.grad.numpy(), want, rtol=2e-7, atol=1e-43)
    got = E._softplus_backward(ember.full((5000,), 2.0), x, 1.0, 20.0).numpy()
    sig = 1 / (1 + np.exp(-np.minimum(xn, 20)))
    np.testing.assert_allclose(got, np.where(xn > 20, 2.0, 2.0 * sig), rtol=3e-7, atol=1e-43)
    # not tensors: the formula's composite path runs instead
    assert E._elu_backward(1.0, x, 1.0, 1.0, 1.0) is None


@pytest.mark.parametrize("name", ["gelu", "elu", "softplus", "selu"])
def test_fused_backward_bit_identical_across_thread_counts(name):
    x = (RNG.standard_normal(1 << 20) * 5).astype(np.float32)
    g = RNG.standard_normal(1 << 20).astype(np.float32)

    def run():
        t = ember.from_numpy(x.copy()).requires_grad_()
        getattr(ember.nn.functional, name)(t).backward(ember.from_numpy(g))
        return t.grad.numpy().tobytes()

    one, two = _threads(run)
    assert one == two


# --- float32 hypot in double --------------------------------------------------------
def test_hypot_float32_rounds_once_and_keeps_range():
    a = np.concatenate([RNG.standard_normal(100_000) * 10 ** RNG.uniform(-40, 38, 100_000),
                        [3e38, 3e38, 1e-45, 1e-40, 0.0, -0.0, 3.0]]).astype(np.float32)
    b = np.concatenate([RNG.standard_normal(100_000) * 10 ** RNG.uniform(-40, 38, 100_000),
                        [3e38, 1.0, 1e-45, -1e-40, -0.0, 0.0, -4.0]]).astype(np.float32)
    got = ember.hypot(ember.from_numpy(a), ember.from_numpy(b)).numpy()
    ref = np.hypot(a.astype(np.float64), b.astype(np.float64))
    fin = ref < np.finfo(np.float32).max
    # correctly rounded but for double rounding (2^-29 of an ulp)
    spacing = np.spacing(ref[fin].astype(np.float32)).astype(np.float64)
    assert (np.abs(got[fin] - ref[fin]) <= 0.5000001 * spacing).all()
    assert np.isinf(got[~fin]).all()            # 3e38 * sqrt(2) overflows, as torch
    assert got[-1] == 5.0 and got[-3] == 0.0


def test_hypot_float32_special_values_match_torch():
    torch = pytest.importorskip("torch")
    v = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 1.0, 1e-45, 3e38], dtype=np.float32)
    a, b = np.meshgrid(v, v)
    a, b = a.ravel(), b.ravel()
    got = ember.hypot(ember.from_numpy(a), ember.from_numpy(b)).numpy()
    want = torch.hypot(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    np.testing.assert_array_equal(got, want)
    # broadcast scalar and strided operands take the same kernel
    x = (RNG.standard_normal(4000) * 3).astype(np.float32)
    got = ember.hypot(ember.from_numpy(x)[::2], 2.5).numpy()
    want = torch.hypot(torch.from_numpy(x)[::2], torch.tensor(2.5)).numpy()
    np.testing.assert_array_equal(got, want)


# --- max/min, clamp and hardswish loops: torch's results, bit for bit -----------------
def _edge_inputs():
    x = np.concatenate([RNG.standard_normal(3000) * 4,
                        [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-40, 3.0, -3.0, 6.0,
                         -6.0, 0.5, -0.5, 3e38, -3e38]]).astype(np.float32)
    return x


@pytest.mark.parametrize("name", ["maximum", "minimum"])
def test_max_min_propagate_nan_as_torch(name):
    torch = pytest.importorskip("torch")
    x = _edge_inputs()
    y = np.roll(x, 7)
    for xs, ys in ((x, y), (x[::3], y[::3]), (x, np.float32(np.nan)), (x, np.float32(0.0))):
        ye = ember.from_numpy(ys) if np.ndim(ys) else ember.tensor(float(ys))
        yt = torch.from_numpy(ys) if np.ndim(ys) else torch.tensor(float(ys))
        got = getattr(ember, name)(ember.from_numpy(xs), ye).numpy()
        want = getattr(torch, name)(torch.from_numpy(xs), yt).numpy()
        np.testing.assert_array_equal(got, want)
        num = ~np.isnan(want)
        np.testing.assert_array_equal(np.signbit(got[num]), np.signbit(want[num]))


@pytest.mark.parametrize("lo, hi", [(-0.5, 0.5), (None, 1.0), (-1.0, None), (0.0, 6.0)])
def test_float_clamp_matches_torch(lo, hi):
    torch = pytest.importorskip("torch")
    x = _edge_inputs()
    for xs in (x, x[::2]):
        got = ember.clamp(ember.from_numpy(xs), lo, hi).numpy()
        want = torch.clamp(torch.from_numpy(xs), lo, hi).numpy()
        np.testing.assert_array_equal(got, want)
    got = ember.nn.functional.relu6(ember.from_numpy(x)).numpy()
    np.testing.assert_array_equal(got, torch.nn.functional.relu6(torch.from_numpy(x)).numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_hardswish_loop_matches_torch_at_both_thread_counts(dtype):
    torch = pytest.importorskip("torch")
    x = np.concatenate([_edge_inputs(), RNG.uniform(-3.5, 3.5, 1 << 16)]).astype(dtype)
    want = torch.nn.functional.hardswish(torch.from_numpy(x)).numpy()
    outs = _threads(lambda: ember.nn.functional.hardswish(ember.from_numpy(x)).numpy())
    for got in outs + [ember.nn.functional.hardswish(ember.from_numpy(x)[::2]).numpy()]:
        ref = want if got.size == want.size else want[::2]
        np.testing.assert_array_equal(got, ref)
