"""The vectorised Hurwitz zeta(x, q) and polygamma(n, x) (n >= 2) loops: ulps against
a 50-digit Euler-Maclaurin reference (mpmath.zeta itself loses digits at large q)
across the regimes and the fast range's edges, integer and real x, polygamma for
n = 2..6 and large n, float32 within an ulp, torch's special values, rare lanes
inside a block, strided and broadcast inputs, and the same bits on any thread count."""
import math

import numpy as np
import pytest

import ember
import ember.special as S

mpmath = pytest.importorskip("mpmath")


def _zeta_mp(x: float, q: float):
    # sum_{k<40} (q+k)^-x plus Euler-Maclaurin at w = q + 40 through B_60: the
    # Bernoulli terms shrink by (x+2j)^2 / (4 pi^2 w^2) < 0.2 for x <= 64
    with mpmath.workdps(50):
        x, q = mpmath.mpf(x), mpmath.mpf(q)
        s = mpmath.fsum((q + k) ** -x for k in range(40))
        w = q + 40
        s += w ** (1 - x) / (x - 1) + w ** -x / 2
        for j in range(1, 31):
            s += (mpmath.bernoulli(2 * j) / mpmath.factorial(2 * j) * mpmath.rf(x, 2 * j - 1)
                  * w ** (-x - 2 * j + 1))
        return s


def _poly_mp(n: int, q: float):
    with mpmath.workdps(50):
        return (-1) ** (n + 1) * mpmath.factorial(n) * _zeta_mp(n + 1, q)


def _ulps(got, ref, dt) -> np.ndarray:
    out = []
    for g, r in zip(np.asarray(got).tolist(), ref):
        rf = min(abs(float(r)), float(np.finfo(dt).max) / 2)
        rf = dt(rf)
        out.append(abs(float(mpmath.mpf(g) - r)) / float(np.spacing(rf)))
    return np.array(out)


def _zeta(x, q, dt=np.float64):
    return S.zeta(ember.tensor(np.asarray(x, dt)), ember.tensor(np.asarray(q, dt))).numpy()


RNG = np.random.default_rng(41)
N = 150
# (x, q) per regime: the sweep's, x near 1, large real x, integer x, tiny and huge q,
# and the edges of the fast range (x = 32, q = 2^-20 and 1e6, each side)
REGIMES = {
    "sweep": (np.abs(RNG.standard_normal(N)) + 1.5, np.abs(RNG.standard_normal(N)) * 3 + 0.01),
    "x_near_1": (1 + np.exp(RNG.uniform(-30, 0, N)), np.exp(RNG.uniform(-5, 5, N))),
    "large_x": (RNG.uniform(8, 32, N), np.exp(RNG.uniform(-7, 12, N))),
    "integer_x": (RNG.integers(2, 33, N).astype(float), np.exp(RNG.uniform(-4, 9, N))),
    "q_range": (RNG.uniform(1.05, 6, N), np.exp(RNG.uniform(-14, 14, N))),
    "edges": (np.array([32.0, np.nextafter(32.0, 64), 33.0, 2.0, 2.0, 2.0, 2.0, 3.5, 3.5,
                        1.0000001, 20.0, 20.0]),
              np.array([1.5, 1.5, 2.5, 2.0 ** -20, np.nextafter(2.0 ** -20, 0), 1e6,
                        np.nextafter(1e6, 2e6), 1e-7, 3e6, 1e6, 0.9999999, 9.0])),
}


@pytest.mark.parametrize("regime", list(REGIMES))
def test_zeta_float64_ulps_against_mpmath(regime):
    # the scalar form (torch's algorithm) rounds q + k and raises the error to x: up
    # to x/2 ulps; the loop carries q + k and the sum in two parts (about an ulp);
    # q above 1e6 and x above 32 take the scalar form
    torch = pytest.importorskip("torch")
    x, q = REGIMES[regime]
    ref = [_zeta_mp(a, b) for a, b in zip(x.tolist(), q.tolist())]
    got = _zeta(x, q)
    assert got.dtype == np.float64
    ue = _ulps(got, ref, np.float64)
    ut = _ulps(torch.special.zeta(torch.tensor(x), torch.tensor(q)).numpy(), ref, np.float64)
    assert ue.max() <= 2.0, (regime, ue.max(), x[ue.argmax()], q[ue.argmax()])
    assert ue.max() <= ut.max() + 1.0, (regime, ue.max(), ut.max())


@pytest.mark.parametrize("regime", ["sweep", "x_near_1", "large_x", "integer_x", "q_range"])
def test_zeta_float32_within_an_ulp(regime):
    x, q = (v.astype(np.float32) for v in REGIMES[regime])
    x, q = x[x > 1], q[x > 1]        # x near 1 rounds to 1 (a pole) in float32
    ref = [_zeta_mp(float(a), float(b)) for a, b in zip(x.tolist(), q.tolist())]
    got = _zeta(x, q, np.float32)
    assert got.dtype == np.float32
    normal = np.array([1.2e-38 < abs(float(r)) < 3.4e38 for r in ref])
    u = _ulps(got, ref, np.float32)[normal]
    assert normal.sum() > N // 2 and u.max() <= 1.0, u.max()


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6, 7, 8, 12, 30, 31, 45])
def test_polygamma_float64_ulps_against_mpmath(n):
    # n <= 7: products by squaring in two parts; 8..30: the vector pow; above: the
    # scalar form (products by squaring, rounded at each step)
    q = np.concatenate([np.exp(RNG.uniform(-6, 10, 120)), [2.0 ** -20, 0.01, 1.0, 9.0, 1e6]])
    if n >= 31:       # the scalar form: (q + k)^-(n+1) below the underflow
        q = q[(q > 0.01) & (q < 1e3)]
    ref = [_poly_mp(n, v) for v in q.tolist()]
    got = S.polygamma(n, ember.tensor(q)).numpy()
    u = _ulps(got, ref, np.float64)
    bound = 2.0 if n <= 7 else 4.0 if n <= 30 else 40.0 + 3 * n
    assert u.max() <= bound, (n, u.max(), q[u.argmax()])
    got32 = S.polygamma(n, ember.tensor(q.astype(np.float32))).numpy()
    ref32 = [_poly_mp(n, float(v)) for v in q.astype(np.float32).tolist()]
    normal = np.array([1.2e-38 < abs(float(r)) < 3.4e38 for r in ref32])
    assert _ulps(got32, ref32, np.float32)[normal].max() <= 1.0


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_zeta_special_values_match_torch(dt):
    torch = pytest.importorskip("torch")
    xs = [1.0, 0.5, -2.0, 2.0, 2.0, 2.0, 2.0, 3.0, 2.5, np.inf, np.nan, 2.0, 2.0, 1e30,
          40.0, 4.0, 2.0, -np.inf, 3.0]
    qs = [2.0, 1.0, 1.0, 0.0, -1.0, -1.5, -0.0, -2.5, -2.5, 1.0, 1.0, np.nan, np.inf, 2.0,
          0.5, 1e-30, 1e300, 1.0, -np.inf]
    # the rare lanes inside blocks of ordinary ones, at scattered positions
    x = np.full(1500, 2.5)
    q = np.linspace(0.1, 50, 1500)
    pos = np.arange(len(xs)) * 71 + 3
    x[pos], q[pos] = xs, qs
    with np.errstate(over="ignore"):      # q = 1e300 is inf in float32
        x, q = x.astype(dt), q.astype(dt)
    e = _zeta(x, q, dt)
    t = torch.special.zeta(torch.tensor(x), torch.tensor(q)).numpy()
    np.testing.assert_array_equal(np.isnan(e), np.isnan(t))
    np.testing.assert_array_equal(np.isinf(e), np.isinf(t))
    if dt == np.float64:
        np.testing.assert_array_equal(e[pos], t[pos])
    # torch's float32 zeta runs in float, ember's in double (rounded once)
    np.testing.assert_allclose(e, t, rtol=4e-7 if dt == np.float32 else 4e-15, atol=0)


@pytest.mark.parametrize("n", [2, 3, 6, 40])
def test_polygamma_special_values_match_torch(n):
    torch = pytest.importorskip("torch")
    x = np.linspace(0.05, 30, 1200)
    sv = [0.0, -0.0, -1.0, -2.5, np.inf, -np.inf, np.nan, 1e-30, 1e300, 1e7]
    pos = np.arange(len(sv)) * 113 + 7
    x[pos] = sv
    e = S.polygamma(n, ember.tensor(x)).numpy()
    t = torch.polygamma(n, torch.tensor(x)).numpy()
    np.testing.assert_array_equal(np.isnan(e), np.isnan(t))
    np.testing.assert_array_equal(np.isinf(e), np.isinf(t))
    fin = np.isfinite(t)
    np.testing.assert_allclose(e[fin], t[fin], rtol=1e-13 if n < 12 else 1e-11, atol=0)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_zeta_strided_and_broadcast_give_the_contiguous_bits(dt):
    rng = np.random.default_rng(3)
    x = (rng.uniform(1.01, 40, 3000)).astype(dt)
    q = np.exp(rng.uniform(-22, 15, 3000)).astype(dt)
    q[::97] = -1.5
    full = _zeta(x, q, dt)
    ex, eq = ember.tensor(x), ember.tensor(q)
    np.testing.assert_array_equal(S.zeta(ex[::3], eq[::3]).numpy(), full[::3])
    np.testing.assert_array_equal(S.zeta(ex[1::2], eq[::2][: len(x[1::2])]).numpy(),
                                  _zeta(x[1::2], q[::2][: len(x[1::2])], dt))
    # a scalar q (stride 0) and a scalar x
    np.testing.assert_array_equal(S.zeta(ex, ember.tensor(dt(0.75))).numpy(),
                                  _zeta(x, np.full_like(x, 0.75), dt))
    np.testing.assert_array_equal(S.zeta(ember.tensor(dt(3.0)), eq).numpy(),
                                  _zeta(np.full_like(q, 3.0), q, dt))
    qq = ember.tensor(np.stack([q, q[::-1]], 1))          # column views: stride 2
    np.testing.assert_array_equal(S.polygamma(3, qq[:, 1]).numpy(),
                                  S.polygamma(3, ember.tensor(q[::-1].copy())).numpy())


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_same_bits_on_one_and_two_threads(dt):
    rng = np.random.default_rng(9)
    x = (np.abs(rng.standard_normal(300_000)) + 1.5).astype(dt)
    q = (np.abs(rng.standard_normal(300_000)) * 3 + 0.01).astype(dt)
    q[::1001] = -0.5
    ex, eq = ember.tensor(x), ember.tensor(q)
    old = ember.get_num_threads()
    try:
        out = []
        for th in (1, 2):
            ember.set_num_threads(th)
            out.append((S.zeta(ex, eq).numpy(), S.polygamma(2, eq).numpy(),
                        S.polygamma(9, eq).numpy()))
    finally:
        ember.set_num_threads(old)
    for a, b in zip(*out):
        np.testing.assert_array_equal(a, b)


def test_zeta_known_values():
    # zeta(2, 1) = pi^2/6, zeta(4, 1) = pi^4/90, zeta(2, 1/2) = pi^2/2, psi2(1) = -2 zeta(3)
    t = ember.tensor([2.0, 4.0, 2.0], dtype=ember.float64)
    got = S.zeta(t, ember.tensor([1.0, 1.0, 0.5], dtype=ember.float64)).tolist()
    assert got[0] == pytest.approx(math.pi ** 2 / 6, rel=2e-16)
    assert got[1] == pytest.approx(math.pi ** 4 / 90, rel=2e-16)
    assert got[2] == pytest.approx(math.pi ** 2 / 2, rel=2e-16)
    psi2 = S.polygamma(2, ember.tensor([1.0], dtype=ember.float64)).item()
    assert psi2 == pytest.approx(-2 * 1.2020569031595942, rel=3e-16)
