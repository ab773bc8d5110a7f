"""float64 activations and their fused backward kernels (gelu exact and tanh, silu,
sigmoid, mish, softplus, elu/selu/celu): accuracy against long double references,
special values and gradients against PyTorch, strided and broadcast operands, and
results bit-identical across thread counts."""
import math

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck

LD = np.longdouble
RNG = np.random.default_rng(64)
SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 1e-300, -1e-300,
                    1e300, -1e300, 20.0, -20.0, 38.6, -38.6, 40.0, -40.0, 709.9, -745.5])

needs_ld = pytest.mark.skipif(np.finfo(LD).nmant < 60, reason="needs an 80-bit long double")


def _t(x, grad=False):
    return ember.from_numpy(np.ascontiguousarray(x)).requires_grad_(grad)


def _erfc_ld(a):
    """erfc of a >= 0 in long double: a positive series below 2, Laplace's continued
    fraction above (as tools/accuracy_f64.py)"""
    a = np.asarray(a, dtype=LD)
    lo = np.minimum(a, LD(2))
    term, s, a2 = lo.copy(), lo.copy(), 2 * lo * lo
    for n in range(1, 160):
        term = term * a2 / (2 * n + 1)
        s = s + term
    pi = LD("3.14159265358979323846264338327950288")
    erf_small = 2 / np.sqrt(pi) * np.exp(-lo * lo) * s
    hi = np.maximum(a, LD(2))
    t = np.zeros_like(hi)
    for k in range(200, 0, -1):
        t = (LD(k) / 2) / (hi + t)
    return np.where(a < 2, 1 - erf_small, np.exp(-hi * hi) / np.sqrt(pi) / (hi + t))


def _phi_ld(x):
    """Phi(x) and phi(x) in long double"""
    x = np.asarray(x, dtype=LD)
    sq2 = np.sqrt(LD(2))
    c = _erfc_ld(np.abs(x) / sq2) / 2
    cdf = np.where(x < 0, c, 1 - c)
    pdf = np.exp(-x * x / 2) / np.sqrt(2 * LD("3.14159265358979323846264338327950288"))
    return cdf, pdf


def _rel_ulps(got, ref):
    ref64 = ref.astype(np.float64)
    return np.abs((got.astype(LD) - ref) / np.spacing(np.abs(ref64)))


GRID = np.concatenate([np.linspace(-38.5, 12, 200_001), np.linspace(-3, 3, 100_001),
                       np.geomspace(1e-300, 30, 5_001), -np.geomspace(1e-300, 30, 5_001)])


@needs_ld
def test_gelu_float64_within_four_ulps():
    cdf, pdf = _phi_ld(GRID)
    ref = GRID.astype(LD) * cdf
    got = F.gelu(_t(GRID)).numpy()
    normal = np.abs(ref) > 2.3e-308
    err = _rel_ulps(got[normal], ref[normal])
    assert float(err.max()) <= 4.0, (float(err.max()), GRID[normal][err.argmax()])
    # the subnormal tail (x near -38.5): within two subnormal steps, not flushed
    sub = ~normal & (ref != 0)
    assert (np.abs(got[sub] - ref[sub].astype(np.float64)) <= 1e-323).all()


@needs_ld
def test_gelu_backward_float64_accuracy():
    x = GRID[np.abs(GRID) < 37]
    t = _t(x, True)
    F.gelu(t).backward(ember.ones_like(t))
    cdf, pdf = _phi_ld(x)
    xl = x.astype(LD)
    ref = cdf + xl * pdf
    # the two terms cancel near x = -0.75: the error is measured against their size
    scale = np.maximum(np.abs(cdf), np.abs(xl * pdf)).astype(np.float64)
    err = np.abs(t.grad.numpy().astype(LD) - ref) / np.spacing(scale)
    assert float(err.max()) <= 4.0, (float(err.max()), x[err.argmax()])


def _sig_ld(v):
    v = np.asarray(v, dtype=LD)
    e = np.exp(-np.abs(v))
    return np.where(v >= 0, 1 / (1 + e), e / (1 + e))


@needs_ld
@pytest.mark.parametrize("name, bound", [("sigmoid", 3.0), ("silu", 3.0), ("softplus", 2.0),
                                         ("mish", 4.0), ("elu", 1.5), ("celu", 1.5)])
def test_float64_activations_ulps(name, bound):
    x = np.concatenate([np.linspace(-700, 700, 100_001), np.linspace(-5, 5, 100_001),
                        np.geomspace(1e-300, 700, 5_001), -np.geomspace(1e-300, 700, 5_001)])
    xl = x.astype(LD)
    with np.errstate(all="ignore"):
        sp = np.where(xl > 20, xl, np.log1p(np.exp(np.minimum(xl, 20))))
        ref = {"sigmoid": lambda: _sig_ld(xl), "silu": lambda: xl * _sig_ld(xl),
               "softplus": lambda: sp, "mish": lambda: np.where(xl > 20, xl, xl * np.tanh(sp)),
               "elu": lambda: np.where(xl > 0, xl, np.expm1(xl)),
               "celu": lambda: np.where(xl > 0, xl, 0.5 * np.expm1(xl / 0.5))}[name]()
    fn = {"sigmoid": ember.sigmoid, "celu": lambda t: F.celu(t, 0.5)}.get(name) or getattr(F, name)
    got = fn(_t(x)).numpy()
    normal = np.abs(ref) > 2.3e-308
    err = _rel_ulps(got[normal], ref[normal])
    assert float(err.max()) <= bound, (name, float(err.max()), x[normal][err.argmax()])


@needs_ld
def test_sigmoid_silu_float64_across_the_fast_range_edge():
    # the loops run |x| <= 708 on a fast exponential and hand a block's other inputs
    # (the subnormal tail, overflow, NaN) to the exp(-|x|) forms: mixed in one block,
    # both sides within the bounds above (sigmoid's subnormal results to their own
    # spacing; silu's take x e with e subnormal, so normal results only)
    x = np.concatenate([np.linspace(-745, -700, 2001), np.linspace(700, 760, 601),
                        RNG.standard_normal(3000) * 4, [np.nan, np.inf, -np.inf, 1e300, -1e300]])
    x = RNG.permutation(x)
    xl = x.astype(LD)
    with np.errstate(all="ignore"):
        s = _sig_ld(xl)
        refs = {"sigmoid": s, "silu": xl * s, "grad": 0.75 * s * (1 + xl * (1 - s))}
        # silu's derivative cancels near its zero (x = -1.28): to the size of its terms
        size = {"grad": 0.75 * np.maximum(s, np.abs(xl * s * (1 - s)))}
    t = _t(x, True)
    got = {"sigmoid": ember.sigmoid(t).detach().numpy(), "silu": F.silu(t).detach().numpy()}
    F.silu(t).backward(ember.full_like(t, 0.75))
    got["grad"] = t.grad.numpy()
    fin = np.isfinite(x)
    for name, ref in refs.items():
        r64 = size.get(name, ref)[fin].astype(np.float64)
        sp = np.maximum(np.spacing(np.abs(r64)), 5e-324)
        err = np.abs(got[name][fin].astype(LD) - ref[fin]) / sp
        if name != "sigmoid":
            err = np.where(np.abs(r64) > 2.3e-308, err, 0.0)
        assert float(err.max()) <= 3.0, (name, float(err.max()), x[fin][err.argmax()])
    torch = pytest.importorskip("torch")
    tx = torch.from_numpy(x.copy()).requires_grad_()
    ty = torch.nn.functional.silu(tx)
    ty.backward(torch.full_like(tx, 0.75))
    for a, b in ((got["sigmoid"], torch.sigmoid(tx).detach().numpy()),
                 (got["silu"], ty.detach().numpy()), (got["grad"], tx.grad.numpy())):
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
        np.testing.assert_array_equal(a[~fin & ~np.isnan(a)], b[~fin & ~np.isnan(b)])


def test_gelu_tanh_float64_against_sigmoid_form():
    # 0.5 x (1 + tanh(u)) = x sigmoid(2u): relative to the value where u is moderate
    x = np.linspace(-6, 8, 20_001)
    xl = x.astype(LD)
    v = 2 * LD("0.7978845608028654") * (xl + LD("0.044715") * xl ** 3)
    s = _sig_ld(v)
    got = F.gelu(_t(x), approximate="tanh").numpy()
    ref = xl * s
    nz = ref != 0
    err = _rel_ulps(got[nz], ref[nz])
    # |v| up to 25 where x < 0: the rounding of v costs up to about |v| ulps of e^-|v|
    # (torch's 1 + tanh(u) cancels outright there)
    assert float(err.max()) <= 64.0, float(err.max())
    t = _t(x, True)
    F.gelu(t, approximate="tanh").backward(ember.ones_like(t))
    dv = 2 * LD("0.7978845608028654") * (1 + 3 * LD("0.044715") * xl * xl)
    ref_g = s + xl * s * (1 - s) * dv
    scale = np.maximum(np.abs(s), np.abs(xl * s * (1 - s) * dv)).astype(np.float64)
    err = np.abs(t.grad.numpy().astype(LD) - ref_g) / np.spacing(scale)
    assert float(err.max()) <= 64.0, float(err.max())


# --- against PyTorch: forward, backward (fused kernels), specials, layouts ------------
CASES = {
    "gelu": (lambda f, t: f.gelu(t)),
    "gelu_tanh": (lambda f, t: f.gelu(t, approximate="tanh")),
    "silu": (lambda f, t: f.silu(t)),
    "sigmoid": (lambda f, t: f.sigmoid(t)),
    "mish": (lambda f, t: f.mish(t)),
    "softplus": (lambda f, t: f.softplus(t)),
    "softplus_beta": (lambda f, t: f.softplus(t, 0.7, 3.0)),
    "softplus_big_threshold": (lambda f, t: f.softplus(t, 2.0, 40.0)),
    "elu": (lambda f, t: f.elu(t)),
    "elu_alpha": (lambda f, t: f.elu(t, 0.3)),
    "selu": (lambda f, t: f.selu(t)),
    "celu": (lambda f, t: f.celu(t, 1.7)),
    "celu_negative_alpha": (lambda f, t: f.celu(t, -0.8)),
}


def _inputs(dtype):
    x = np.concatenate([RNG.standard_normal(3000) * 3, RNG.uniform(-60, 60, 1000),
                        np.linspace(-2, 2, 401), SPECIAL[np.abs(SPECIAL) < 1e299]])
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", sorted(CASES))
def test_activation_and_fused_backward_match_torch(name, dtype):
    torch = pytest.importorskip("torch")
    fn = CASES[name]
    x = _inputs(dtype)
    g = RNG.standard_normal(x.size).astype(dtype)
    ex, tx = _t(x, True), torch.from_numpy(x.copy()).requires_grad_()
    ey, ty = fn(F, ex), fn(torch.nn.functional, tx)
    ey.backward(_t(g))
    ty.backward(torch.from_numpy(g.copy()))
    # torch's gelu forms take 1 + erf / 1 + tanh, which cancel in the negative tail
    # (absolute errors of a few ulps of 1): compared absolutely there
    rtol = 1e-13 if dtype == np.float64 else 2e-6
    atol = 2e-14 if dtype == np.float64 else 2e-5
    fin = np.isfinite(x)
    np.testing.assert_allclose(ey.detach().numpy()[fin], ty.detach().numpy()[fin], rtol=rtol,
                               atol=atol)
    # the derivative cancels near its zeros (gelu, mish, silu near x = -1): absolute
    # there; torch's celu backward takes 1/alpha in float32 (1e-7 relative, times x)
    gtol = 1e-4 if name.startswith("celu") else rtol * 10
    np.testing.assert_allclose(ex.grad.numpy()[fin], tx.grad.numpy()[fin], rtol=gtol,
                               atol=max(gtol, atol * 10))
    # NaN and infinities as torch, forward and backward (gelu(-inf) and the
    # derivatives at +-inf are NaN there too)
    sp = ~fin | (np.abs(x) > 700)
    np.testing.assert_array_equal(ey.detach().numpy()[sp], ty.detach().numpy()[sp])
    np.testing.assert_allclose(ex.grad.numpy()[sp], tx.grad.numpy()[sp], rtol=gtol, atol=0)


@pytest.mark.parametrize("name", sorted(CASES))
def test_strided_input_and_broadcast_grad(name):
    torch = pytest.importorskip("torch")
    fn = CASES[name]
    base = RNG.standard_normal((64, 40)) * 4
    ex = _t(base, True)
    tx = torch.from_numpy(base.copy()).requires_grad_()
    # a transposed, stepped view: the strided loops; .sum() hands back a broadcast grad
    fn(F, ex.t()[::2]).sum().backward()
    fn(torch.nn.functional, tx.t()[::2]).sum().backward()
    gtol = 1e-6 if name.startswith("celu") else 1e-12     # torch's float32 1/alpha
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=gtol, atol=gtol)
    np.testing.assert_allclose(fn(F, _t(base).t()[1::3]).numpy(),
                               fn(torch.nn.functional, torch.from_numpy(base).t()[1::3]).numpy(),
                               rtol=1e-13, atol=2e-14)


@pytest.mark.parametrize("name", ["elu_alpha", "selu", "celu", "celu_negative_alpha", "softplus",
                                  "softplus_beta", "mish"])
def test_fused_backward_gradcheck_and_double_backward(name):
    fn = CASES[name]
    x = _t(RNG.uniform(-3, 3, 12) + np.where(RNG.uniform(size=12) < 0.5, 0.1, -0.1), True)
    assert gradcheck(lambda t: fn(F, t), (x,))
    # create_graph records the composite form, which differentiates again
    assert gradgradcheck(lambda t: fn(F, t), (x,))


def test_fused_backward_helpers_decline_where_autograd_records():
    from ember._C import elementwise as E
    g, x = _t(np.ones(4), True), _t(np.linspace(-1, 1, 4))
    with ember.enable_grad():
        assert E._elu_backward(g, x, 1.0, 1.0, 1.0) is None
        assert E._softplus_backward(g, x, 1.0, 20.0) is None
        assert E._mish_backward(g, x) is None
    with ember.no_grad():
        r = E._elu_backward(g, x, 1.0, 1.0, 1.0)
    np.testing.assert_allclose(r.numpy(), np.where(x.numpy() > 0, 1.0, np.exp(x.numpy())))


@pytest.mark.parametrize("name", sorted(CASES))
def test_bit_identical_across_thread_counts(name):
    fn = CASES[name]
    x = RNG.standard_normal(1 << 18) * 5
    outs = []
    old = ember.get_num_threads()
    try:
        for n in (1, 2):
            ember.set_num_threads(n)
            t = _t(x, True)
            y = fn(F, t)
            y.sum().backward()
            outs.append((y.detach().numpy().tobytes(), t.grad.numpy().tobytes()))
    finally:
        ember.set_num_threads(old)
    assert outs[0] == outs[1]


def test_elu_family_signed_zero_and_nan_grad():
    torch = pytest.importorskip("torch")
    x = np.array([-0.0, 0.0, np.nan, -1e-320])
    for f in (F.elu, F.selu, F.celu):
        t = _t(x, True)
        y = f(t)
        y.backward(ember.ones_like(y))
        tt = torch.from_numpy(x.copy()).requires_grad_()
        ty = getattr(torch.nn.functional, f.__name__)(tt)
        ty.backward(torch.ones_like(ty))
        np.testing.assert_array_equal(np.signbit(y.detach().numpy()),
                                      np.signbit(ty.detach().numpy()))
        np.testing.assert_array_equal(t.grad.numpy(), tt.grad.numpy())


def test_gelu_float64_limits():
    x = np.array([-40.0, -1e300, 1e300, 50.0, -0.0, 0.0])
    got = F.gelu(_t(x)).numpy()
    np.testing.assert_array_equal(got, [-0.0, -0.0, 1e300, 50.0, -0.0, 0.0])
    assert np.signbit(got[[0, 1, 4]]).all()
    t = _t(x, True)
    F.gelu(t).backward(ember.ones_like(t))
    np.testing.assert_array_equal(t.grad.numpy(), [0.0, 0.0, 1.0, 1.0, 0.5, 0.5])
    assert math.isnan(F.gelu(_t(np.array([-np.inf]))).numpy()[0])
