"""The vectorised float32 erfinv and lgamma (evaluated in double, rounded once) against
references built from Python's math module: every result is the float64 value rounded
to float32, or its neighbour at a near-tie; special values as torch; the block-wise
fix-up of rare inputs; strided inputs; the same bits on any thread count."""
import math

import numpy as np
import pytest

import ember
import ember.special as S

RNG = np.random.default_rng(17)


def _erfinv64(y: float) -> float:
    """erfinv in double from math.erf/erfc: Newton steps from a bisection start (on
    erfc near +-1, where 1 - |y| is exact for float32 y)."""
    if y == 0.0:
        return y
    a = abs(y)
    lo, hi = 0.0, 6.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if (math.erf(mid) < a) if a < 0.5 else (math.erfc(mid) > 1.0 - a):
            lo = mid
        else:
            hi = mid
    x = 0.5 * (lo + hi)
    for _ in range(3):
        d = 2.0 / math.sqrt(math.pi) * math.exp(-x * x)
        x -= (math.erf(x) - a) / d if a < 0.5 else -(math.erfc(x) - (1.0 - a)) / d
    return math.copysign(x, y)


def _ulps(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """|got - ref| in float32 ulps of the rounded reference."""
    r32 = ref.astype(np.float32)
    ulp = np.spacing(np.abs(r32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - ref) / ulp


def _erfinv_inputs() -> np.ndarray:
    return np.concatenate([
        RNG.uniform(-1, 1, 3000), RNG.uniform(-1e-3, 1e-3, 300),
        # the tail (|y| > 0.999) and the last floats below 1
        np.sign(RNG.uniform(-1, 1, 600)) * (1 - np.exp(RNG.uniform(-16.6, -6.9, 600))),
        np.nextafter(np.float32(1), np.float32(0)) * np.array([1, -1]),
        [1e-30, -1e-38, 1e-45, 0.5, -0.999, 0.999, 0.99903, 0.99904],
    ]).astype(np.float32)


def test_erfinv_float32_is_the_rounded_double():
    y = _erfinv_inputs()
    got = S.erfinv(ember.tensor(y)).numpy()
    ref = np.array([_erfinv64(float(v)) for v in y])
    u = _ulps(got, ref)
    assert u.max() <= 0.51, (y[u.argmax()], got[u.argmax()], ref[u.argmax()])
    # a correctly rounded result except at rare near-ties
    assert np.mean(got == ref.astype(np.float32)) > 0.998


def test_erfinv_float32_special_values_like_torch():
    torch = pytest.importorskip("torch")
    y = np.array([0.0, -0.0, 1.0, -1.0, 1.0000001, -1.5, np.inf, -np.inf, np.nan],
                 np.float32)
    got = S.erfinv(ember.tensor(y)).numpy()
    want = torch.special.erfinv(torch.tensor(y)).numpy()
    np.testing.assert_array_equal(got, want)
    assert np.signbit(got[1])


def test_erfinv_rare_inputs_inside_a_block_and_strided():
    # one tail value, one NaN and one 1.0 among 2000 central values: the block
    # fix-up must redo exactly those, wherever they fall
    y = RNG.uniform(-0.9, 0.9, 2000).astype(np.float32)
    y[[3, 700, 1999]] = [0.99995, np.nan, 1.0]
    got = S.erfinv(ember.tensor(y)).numpy()
    assert np.isnan(got[700]) and got[1999] == np.inf
    assert got[3] == np.float32(_erfinv64(float(y[3])))
    one = np.array([S.erfinv(ember.tensor(y[i:i + 1])).numpy()[0] for i in (0, 3, 500)])
    np.testing.assert_array_equal(one, got[[0, 3, 500]])
    # a strided view goes through the scalar loop: the same bits
    base = ember.tensor(np.stack([y, -y], 1))
    np.testing.assert_array_equal(S.erfinv(base[:, 0]).numpy(), got)


def _lgamma_inputs() -> np.ndarray:
    return np.concatenate([
        RNG.uniform(0, 50, 2000), np.exp(RNG.uniform(-100, 88, 1000)),
        # around the zeros at 1 and 2 and the minimum
        RNG.uniform(0.65, 1.35, 600), RNG.uniform(1.65, 2.35, 600), RNG.uniform(1.3, 1.7, 200),
        1 + np.arange(-40, 41) * 2.0 ** -23, 2 + np.arange(-40, 41) * 2.0 ** -22,
        [1e-45, 1e-38, 9.99, 10.0, 10.01, 0.7, 1.3, 1.7, 2.3, 3e38, 3.4028235e38],
        # negative non-integers go through libm: mixed into the same blocks
        -RNG.uniform(0, 30, 300),
    ]).astype(np.float32)


def test_lgamma_float32_is_the_rounded_double():
    x = _lgamma_inputs()
    x = x[(x > 0) | (x != np.round(x))]          # math.lgamma refuses poles
    got = ember.lgamma(ember.tensor(x)).numpy()
    ref = np.array([math.lgamma(float(v)) for v in x])
    with np.errstate(over="ignore"):
        fin = np.isfinite(ref.astype(np.float32))
        assert np.array_equal(np.isinf(got), ~fin)
    u = _ulps(got[fin], ref[fin])
    assert u.max() <= 0.51, (x[fin][u.argmax()], got[fin][u.argmax()], ref[fin][u.argmax()])
    assert np.mean(got[fin] == ref[fin].astype(np.float32)) > 0.998
    assert ember.special.gammaln(ember.tensor(x)).numpy().tobytes() == got.tobytes()


def test_lgamma_float32_special_values_like_torch():
    torch = pytest.importorskip("torch")
    x = np.array([0.0, -0.0, 1.0, 2.0, -1.0, -2.0, -1e9, np.inf, -np.inf, np.nan], np.float32)
    got = ember.lgamma(ember.tensor(x)).numpy()
    want = torch.lgamma(torch.tensor(x)).numpy()
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("fn", ["erfinv", "lgamma"])
def test_same_bits_on_any_thread_count(fn):
    x = (RNG.uniform(-1, 1, 300_001) if fn == "erfinv" else RNG.uniform(-5, 60, 300_001))
    t = ember.tensor(x.astype(np.float32))
    f = S.erfinv if fn == "erfinv" else ember.lgamma
    old = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        one = f(t).numpy()
        ember.set_num_threads(2)
        two = f(t).numpy()
    finally:
        ember.set_num_threads(old)
    assert one.tobytes() == two.tobytes()
