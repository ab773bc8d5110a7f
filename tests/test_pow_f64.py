"""float64 pow's table-driven kernel at its edges: subnormal bases, results at the
ends of the exponent range, every table interval, exact results, and atan2's
blocked loop at lengths that leave partial blocks.  References: 80-bit long double."""
import numpy as np
import pytest

import ember

LD = np.longdouble
needs_ld = pytest.mark.skipif(np.finfo(LD).nmant < 60, reason="needs an 80-bit long double")


def _e(a):
    return ember.from_numpy(np.ascontiguousarray(a, dtype=np.float64))


def _ulps(got, ref):
    with np.errstate(over="ignore"):
        r64 = ref.astype(np.float64)
    fin = np.isfinite(r64) & (r64 != 0)
    sp = np.maximum(np.spacing(np.abs(r64[fin])), 5e-324)
    return np.abs((got[fin].astype(LD) - ref[fin]) / sp).astype(np.float64), fin


def _pow_ref(a, b):
    with np.errstate(all="ignore"):
        return np.power(a.astype(LD), b.astype(LD))


@needs_ld
def test_subnormal_bases_and_range_ends_within_one_ulp():
    rng = np.random.default_rng(21)
    n = 40_000
    sub = np.exp(rng.uniform(np.log(5e-324), np.log(2.2e-308), n))       # subnormal bases
    a = np.concatenate([sub, sub, rng.uniform(0.5, 2.0, n), rng.uniform(0.5, 2.0, n)])
    # exponents that land near the overflow (709.78) and underflow (-745.13) ends
    t_hi = rng.uniform(700.0, 710.5, n)
    t_lo = rng.uniform(-750.0, -700.0, n)
    la = np.log(a[2 * n:])
    b = np.concatenate([rng.uniform(-1, 1, n), rng.uniform(-0.3, 0.3, n) + 0.5,
                        t_hi / la[:n], t_lo / la[n:]])
    got = ember.pow(_e(a), _e(b)).numpy()
    ref = _pow_ref(a, b)
    err, fin = _ulps(got, ref)
    # normal results round once (0.51 ulp); subnormal results round twice
    assert float(err.max()) < 1.0, (float(err.max()), a[fin][err.argmax()], b[fin][err.argmax()])
    with np.errstate(over="ignore"):
        r64 = ref.astype(np.float64)
    np.testing.assert_array_equal(got[np.isinf(r64)], r64[np.isinf(r64)])
    np.testing.assert_array_equal(got[r64 == 0], 0.0)


@needs_ld
def test_every_table_interval_within_one_ulp():
    rng = np.random.default_rng(22)
    # bases across the 128 intervals of [0x1.69555p-1, 0x1.69555p0) and their
    # neighbours in other binades, with exponents large enough to magnify log's error
    z = np.linspace(0.7057, 1.4116, 128 * 64)
    a = np.concatenate([z, z * 2.0 ** 40, z * 2.0 ** -900, 1 + rng.uniform(-2e-3, 2e-3, 8192)])
    b = rng.uniform(-600, 600, a.size) / np.maximum(np.abs(np.log(a)), 1.0)
    got = ember.pow(_e(a), _e(b)).numpy()
    err, fin = _ulps(got, _pow_ref(a, b))
    assert float(err.max()) < 0.6, (float(err.max()), a[fin][err.argmax()], b[fin][err.argmax()])


def test_exact_results_are_exact():
    k = np.arange(-1074, 1024, dtype=np.float64)
    np.testing.assert_array_equal(ember.pow(_e(np.full(k.size, 2.0)), _e(k)).numpy(),
                                  np.ldexp(1.0, k.astype(int)))
    p = np.arange(0, 23, dtype=np.float64)
    np.testing.assert_array_equal(ember.pow(_e(np.full(p.size, 10.0)), _e(p)).numpy(),
                                  [10.0 ** int(i) for i in p])
    x = np.random.default_rng(23).uniform(1e-5, 1e5, 5000)
    np.testing.assert_array_equal(ember.pow(_e(x), 1.0).numpy(), x)
    np.testing.assert_array_equal(ember.pow(_e(x), 0.0).numpy(), np.ones_like(x))
    sq = np.arange(1, 4000, dtype=np.float64)
    np.testing.assert_array_equal(ember.pow(_e(sq * sq), 0.5).numpy(), sq)


def test_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(24)
    a = np.concatenate([np.abs(rng.standard_normal(20_000)) * 3,
                        np.exp(rng.uniform(-700, 700, 5000)),
                        [0.0, -0.0, -2.0, np.inf, np.nan, 1.0, 5e-324, 1e308]])
    b = np.concatenate([rng.standard_normal(25_000) * 3,
                        [3.0, -1.0, 0.5, -2.0, 1.0, np.inf, 0.5, 1.5]])
    got = ember.pow(_e(a), _e(b)).numpy()
    want = torch.pow(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_allclose(got[ok], want[ok], rtol=4.5e-16, atol=0)


@needs_ld
@pytest.mark.parametrize("n", [1, 63, 64, 65, 200, 4097])
def test_atan2_partial_blocks(n):
    rng = np.random.default_rng(n)
    y = rng.standard_normal(n) * np.exp(rng.uniform(-5, 5, n))
    x = rng.standard_normal(n) * np.exp(rng.uniform(-5, 5, n))
    got = ember.atan2(_e(y), _e(x)).numpy()
    err, _ = _ulps(got, np.arctan2(y.astype(LD), x.astype(LD)))
    assert float(err.max()) < 1.0
    # the strided loop computes the same formula
    y2, x2 = np.repeat(y, 2), np.repeat(x, 2)
    np.testing.assert_array_equal(ember.atan2(_e(y2)[::2], _e(x2)[::2]).numpy(), got)
