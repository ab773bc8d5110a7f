"""float64 vectorised math kernels (sinh, cosh, expm1, atanh, logaddexp, pow, lgamma,
digamma): accuracy in ulps against 80-bit long double references, special values
against NumPy / C99, parity with PyTorch, and results bit-identical at 1 and 2 threads."""
import math

import numpy as np
import pytest

import ember

LD = np.longdouble
RNG = np.random.default_rng(64)
needs_ld = pytest.mark.skipif(np.finfo(LD).nmant < 60, reason="needs an 80-bit long double")

SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 1e-310, -1e-310,
                     2.0 ** -30, -(2.0 ** -30), 1e-17, 0.5, -0.5, 1.0, -1.0, 2.0, 1e300, -1e300,
                     0.34657359027997264, 0.6931471805599453, -0.6931471805599453,
                     709.78, 710.47, -710.47, 710.476, 711.0, -745.2, 1 - 2.0 ** -53])


def _grid(lo, hi, n=200_000):
    k = n // 4
    mag = np.exp(RNG.uniform(-700, np.log(max(abs(lo), abs(hi))), k))
    x = np.concatenate([RNG.uniform(lo, hi, k), RNG.uniform(max(lo, -3), min(hi, 3), k), mag, -mag,
                        np.linspace(max(lo, -2), min(hi, 2), 20001)])
    return x[(x >= lo) & (x <= hi)]


def _ulps(got, ref):
    """|got - ref| in ulps of the float64 rounding of the long double ref."""
    r64 = ref.astype(np.float64)
    fin = np.isfinite(r64) & (r64 != 0)
    sp = np.maximum(np.spacing(np.abs(r64[fin])), 5e-324)
    return np.abs((got[fin].astype(LD) - ref[fin]) / sp).astype(np.float64), fin


def _e(a):
    return ember.from_numpy(np.ascontiguousarray(a, dtype=np.float64))


UNARY = {"sinh": (-710.47, 710.47, np.sinh), "cosh": (-710.47, 710.47, np.cosh),
         "expm1": (-50.0, 709.78, np.expm1), "atanh": (-1.0, 1.0, np.arctanh)}


@needs_ld
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_within_one_ulp(name):
    lo, hi, ref = UNARY[name]
    x = _grid(lo, hi)
    got = getattr(ember, name)(_e(x)).numpy()
    with np.errstate(divide="ignore"):
        err, fin = _ulps(got, ref(x.astype(LD)))
    assert err.max() < 1.0, (name, float(err.max()), x[fin][err.argmax()])


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_special_values_match_numpy(name):
    ref = {"atanh": np.arctanh}.get(name, getattr(np, name))
    with np.errstate(all="ignore"):
        want = ref(SPECIALS)
    got = getattr(ember, name)(_e(SPECIALS)).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    fin = np.isfinite(want)
    np.testing.assert_array_equal(got[~fin], want[~fin])
    np.testing.assert_allclose(got[fin], want[fin], rtol=2.5e-16, atol=0)
    # signed zeros and subnormals pass through exactly where the function is odd / x + O(x^2)
    tiny = (np.abs(SPECIALS) < 1e-300) & (name != "cosh")
    np.testing.assert_array_equal(got[tiny], SPECIALS[tiny])
    np.testing.assert_array_equal(np.signbit(got[tiny]), np.signbit(SPECIALS[tiny]))


@needs_ld
def test_logaddexp_accuracy():
    n = 100_000
    a = np.concatenate([RNG.standard_normal(n) * 3, RNG.standard_normal(n) * 300,
                        RNG.uniform(-1, 1, n), RNG.uniform(-800, 800, n)])
    b = np.concatenate([RNG.standard_normal(n) * 3, RNG.standard_normal(n) * 300,
                        -a[2 * n:3 * n] + RNG.uniform(-1, 1, n) * 1e-3, RNG.uniform(-800, 800, n)])
    got = ember.logaddexp(_e(a), _e(b)).numpy()
    A, B = a.astype(LD), b.astype(LD)
    ref = np.maximum(A, B) + np.log1p(np.exp(-np.abs(A - B)))
    # the sum max + log1p(..) cancels where the result nears 0: its error is
    # measured in ulps of the largest of |result|, |a|, |b|
    scale = np.maximum(np.abs(ref), np.maximum(np.abs(A), np.abs(B))).astype(np.float64)
    err = np.abs(got.astype(LD) - ref) / np.spacing(scale)
    assert float(err.max()) < 1.6
    rel, _ = _ulps(got, ref)
    assert np.median(rel) < 0.3


def test_logaddexp_special_values_match_numpy():
    v = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -50.0, 1e308, -1e308, 5e-324, 800.0])
    a, b = (g.ravel() for g in np.meshgrid(v, v))
    with np.errstate(all="ignore"):
        want = np.logaddexp(a, b)
    got = ember.logaddexp(_e(a), _e(b)).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    fin = np.isfinite(want)
    np.testing.assert_array_equal(got[~fin], want[~fin])
    np.testing.assert_allclose(got[fin], want[fin], rtol=2.5e-16, atol=0)


@pytest.mark.parametrize("name", ["sinh", "cosh", "expm1", "atanh", "logaddexp"])
def test_matches_torch(name):
    torch = pytest.importorskip("torch")
    x = np.concatenate([RNG.standard_normal(50_000) * 3, RNG.uniform(-700, 700, 1000),
                        RNG.uniform(-1, 1, 1000), SPECIALS])
    if name == "atanh":
        x = np.tanh(x)
    with np.errstate(all="ignore"):
        if name == "logaddexp":
            y = x[::-1].copy()
            got = ember.logaddexp(_e(x), _e(y)).numpy()
            want = torch.logaddexp(torch.from_numpy(x), torch.from_numpy(y)).numpy()
            # both round max + log1p(..), which cancels near 0: ulps of the inputs' size
            fin = np.isfinite(want) & np.isfinite(x) & np.isfinite(y)
            scale = np.maximum(np.abs(want), np.maximum(np.abs(x), np.abs(y)))
            assert (np.abs(got - want)[fin] <= 2 * np.spacing(scale[fin])).all()
            np.testing.assert_array_equal(got[~fin], want[~fin])
            return
        else:
            got = getattr(ember, name)(_e(x)).numpy()
            want = getattr(torch, name)(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-15, atol=1e-300)


@pytest.mark.parametrize("name", ["sinh", "cosh", "expm1", "atanh", "logaddexp"])
def test_bit_identical_across_thread_counts(name):
    x = RNG.standard_normal(1 << 20) * 3
    x[::101] = np.nan
    x[::103] = 800.0
    if name == "atanh":
        x = np.tanh(x)
    y = np.roll(x, 7)
    if name == "logaddexp":
        def fn(t):
            return ember.logaddexp(t, _e(y))
    else:
        fn = getattr(ember, name)
    old = ember.get_num_threads()
    outs = []
    try:
        for n in (1, 2):
            ember.set_num_threads(n)
            outs.append(fn(_e(x)).numpy().tobytes())
    finally:
        ember.set_num_threads(old)
    assert outs[0] == outs[1]


def test_strided_rows_match_contiguous():
    x = RNG.standard_normal((300, 40)) * 5
    for name in ("sinh", "cosh", "expm1"):
        f = getattr(ember, name)
        t = _e(x)
        np.testing.assert_array_equal(f(t.t()).numpy(), f(t.t().contiguous()).numpy())
    u = np.tanh(x)
    t = _e(u)
    np.testing.assert_array_equal(ember.atanh(t.t()).numpy(),
                                  ember.atanh(t.t().contiguous()).numpy())
    assert math.isinf(ember.atanh(_e([1.0])).item())


def _gamma_inputs(n=1500):
    return np.concatenate([RNG.uniform(0, 3, n), RNG.uniform(0.9, 1.1, n // 3),
                           RNG.uniform(1.9, 2.1, n // 3), RNG.uniform(3, 12, n),
                           np.exp(RNG.uniform(-700, 690, n // 2)),
                           [1.0, 2.0, 0.25, 1.25, 1.5, 1.75, 2.5, 10.0, 5e-324, 1e-310, 3.0,
                            1e299]])


def test_lgamma_within_two_ulps_of_mpmath():
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 30
    x = _gamma_inputs()
    got = ember.lgamma(_e(x)).numpy()
    ref = [mp.loggamma(mp.mpf(float(v))) for v in x]
    err = [float(abs(mp.mpf(float(g)) - r) / (float(np.spacing(abs(float(r)))) if r != 0 else 1))
           for g, r in zip(got, ref)]
    assert max(err) < 2.0, (max(err), x[int(np.argmax(err))])
    assert got[x == 1.0][0] == 0.0 and got[x == 2.0][0] == 0.0


def test_digamma_matches_mpmath():
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 30
    x = _gamma_inputs()
    got = ember.special.digamma(_e(x)).numpy()
    ref = np.array([float(mp.digamma(mp.mpf(float(v)))) for v in x])
    # psi(x + 10) - sum 1/(x + k), as torch: near the root the sum of ten rounded terms
    # leaves some ulps of 1/x
    fin = np.isfinite(ref)
    np.testing.assert_array_equal(got[~fin], ref[~fin])
    got, ref, x = got[fin], ref[fin], x[fin]
    scale = np.maximum(np.abs(ref), np.where(x < 10, np.abs(ref) + 1.0 / x, 0))
    err = np.abs(got - ref) / np.spacing(scale)
    assert err.max() <= 16, (err.max(), x[err.argmax()])


def test_gamma_functions_special_values_and_negatives_match_torch():
    torch = pytest.importorskip("torch")
    x = np.concatenate([[0.0, -0.0, np.inf, -np.inf, np.nan, -1.0, -2.0, -2.5, -0.5, -1e-300,
                         5e-324, 1e300, 1.7e308], RNG.uniform(-30, 0, 2000)])
    for e_fn, t_fn in ((ember.lgamma, torch.lgamma),
                       (ember.special.digamma, torch.special.digamma)):
        got = e_fn(_e(x)).numpy()
        want = t_fn(torch.from_numpy(x)).numpy()
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        fin = np.isfinite(want)
        np.testing.assert_array_equal(got[~fin], want[~fin])
        np.testing.assert_allclose(got[fin], want[fin], rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("name", ["lgamma", "digamma"])
def test_gamma_functions_match_torch_and_threads(name):
    torch = pytest.importorskip("torch")
    x = np.concatenate([RNG.uniform(0.01, 50, 1 << 20), _gamma_inputs()])
    x[::997] = -2.5
    e_fn = ember.lgamma if name == "lgamma" else ember.special.digamma
    t_fn = torch.lgamma if name == "lgamma" else torch.special.digamma
    old = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        one = e_fn(_e(x)).numpy()
        ember.set_num_threads(2)
        two = e_fn(_e(x)).numpy()
    finally:
        ember.set_num_threads(old)
    assert one.tobytes() == two.tobytes()
    want = t_fn(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(one, want, rtol=4e-15 if name == "lgamma" else 1e-13,
                               atol=1e-15)
    strided = e_fn(_e(np.stack([x[:4000], x[:4000]], 1)).t()[0]).numpy()
    np.testing.assert_allclose(strided, one[:4000], rtol=0, atol=0)
