"""Elementwise ops against NumPy, and against PyTorch (values, dtypes, errors) when installed."""

import math

import numpy as np
import pytest

import ember

rng = np.random.default_rng(0)
FLOAT_UNARY = {
    "exp": np.exp,
    "exp2": np.exp2,
    "expm1": np.expm1,
    "log": np.log,
    "log2": np.log2,
    "log10": np.log10,
    "log1p": np.log1p,
    "sqrt": np.sqrt,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "atan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
    "asinh": np.arcsinh,
    "floor": np.floor,
    "ceil": np.ceil,
    "trunc": np.trunc,
    "round": np.round,
    "abs": np.abs,
    "neg": np.negative,
    "sign": np.sign,
    "square": np.square,
    "reciprocal": np.reciprocal,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "relu": lambda x: np.maximum(x, 0),
    "rsqrt": lambda x: 1 / np.sqrt(x),
    "frac": lambda x: x - np.trunc(x),
    "silu": lambda x: x / (1 + np.exp(-x)),
}
POSITIVE = {"log", "log2", "log10", "sqrt", "rsqrt", "log1p", "reciprocal"}


@pytest.mark.parametrize("name", sorted(FLOAT_UNARY))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_unary_float_against_numpy(name, dtype):
    x = rng.standard_normal(1000).astype(dtype) * 3
    if name in POSITIVE:
        x = np.abs(x) + 0.1
    got = getattr(ember, name)(ember.tensor(x)).numpy()
    want = FLOAT_UNARY[name](x.astype(np.float64))
    tol = 2e-6 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    assert got.dtype == dtype


def test_exp_float32_large_array_and_specials():
    x = np.linspace(-120, 100, 100_003).astype(np.float32)
    x[:3] = [np.nan, np.inf, -np.inf]
    got = ember.exp(ember.tensor(x)).numpy()
    with np.errstate(over="ignore"):
        want = np.exp(x.astype(np.float64)).astype(np.float32)
    np.testing.assert_allclose(got[3:], want[3:], rtol=3e-7, atol=1e-38)
    assert np.isnan(got[0]) and got[1] == np.inf and got[2] == 0


BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "atan2": np.arctan2,
    "remainder": np.remainder,
    "fmod": np.fmod,
    "floor_divide": np.floor_divide,
    "pow": np.power,
    "hypot": np.hypot,
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_broadcast_noncontiguous(name):
    x = rng.standard_normal((4, 6)).astype(np.float64) + 3
    y = rng.standard_normal((6,)).astype(np.float64) + 2
    a = ember.tensor(x).t()  # non-contiguous (6, 4)
    b = ember.tensor(y).unsqueeze(1)  # (6, 1)
    got = getattr(ember, name)(a, b).numpy()
    want = BINARY[name](x.T, y[:, None])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["floor_divide", "remainder", "fmod"])
def test_integer_division_semantics(name):
    x = np.array([-7, -3, 0, 3, 7], dtype=np.int64)
    y = np.array([2, -2, 3, -3, 5], dtype=np.int64)
    got = getattr(ember, name)(ember.tensor(x), ember.tensor(y)).numpy()
    np.testing.assert_array_equal(got, BINARY[name](x, y))


def test_integer_division_by_zero_is_an_error_not_a_crash():
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        ember.tensor([1, 2]) // ember.tensor([1, 0])


def test_comparisons_and_logical():
    x = ember.tensor([1.0, 2.0, float("nan")])
    assert (x == 2).tolist() == [False, True, False]
    assert (x != x).tolist() == [False, False, True]
    assert ember.isnan(x).tolist() == [False, False, True]
    assert ember.logical_and(
        ember.tensor([1, 0, 2]), ember.tensor([True, True, False])
    ).tolist() == [True, False, False]
    assert (~ember.tensor([True, False])).tolist() == [False, True]
    assert (~ember.tensor([5], dtype=ember.int32)).tolist() == [-6]


def test_python_operators_and_reflected():
    a = ember.tensor([1.0, 2.0, 4.0])
    np.testing.assert_allclose((2 - a).numpy(), [1, 0, -2])
    np.testing.assert_allclose((2 / a).numpy(), [2, 1, 0.5])
    np.testing.assert_allclose((2**a).numpy(), [2, 4, 16])
    np.testing.assert_allclose((a**2).numpy(), [1, 4, 16])
    np.testing.assert_allclose((7 % a).numpy(), [0, 1, 3])
    np.testing.assert_allclose((-a).numpy(), [-1, -2, -4])
    b = a.clone()
    b += 1
    b *= 2
    np.testing.assert_allclose(b.numpy(), [4, 6, 10])
    assert a.tolist() == [1.0, 2.0, 4.0]


def test_inplace_shares_storage_and_bumps_version():
    a = ember.zeros(4)
    v = a[1:3]
    ver = a._version
    v.add_(5)
    assert a.tolist() == [0, 5, 5, 0]
    assert a._version > ver


def test_out_argument_writes_in_place():
    a, b = ember.ones(5), ember.ones(5)
    out = ember.empty(5)
    r = ember.add(a, b, out=out)
    assert r is out and out.tolist() == [2] * 5
    with pytest.raises(RuntimeError):
        ember.add(a, b, out=ember.empty(3))


def test_type_promotion_rules():
    i = ember.tensor([1, 2], dtype=ember.int32)
    f16 = ember.tensor([1, 2], dtype=ember.float16)
    assert (i + 1).dtype is ember.int32
    assert (i + 1.5).dtype is ember.float32
    assert (f16 + 1.5).dtype is ember.float16
    assert (i + ember.tensor(1.5, dtype=ember.float64)).dtype is ember.float64
    assert (i + ember.tensor([1], dtype=ember.int64)).dtype is ember.int64
    assert (ember.tensor([True]) + 1).dtype is ember.int64
    assert (i / 2).dtype is ember.float32
    u8 = ember.tensor([1], dtype=ember.uint8)
    assert (u8 + ember.tensor([1], dtype=ember.int8)).dtype is ember.int16
    assert (f16 + ember.tensor([1], dtype=ember.bfloat16)).dtype is ember.float32
    with pytest.raises(RuntimeError, match="Subtraction"):
        ember.tensor([True]) - ember.tensor([False])


def test_div_rounding_modes():
    x = ember.tensor([-7.0, 7.0, -7.5])
    assert ember.div(x, 2, rounding_mode="floor").tolist() == [-4.0, 3.0, -4.0]
    assert ember.div(x, 2, rounding_mode="trunc").tolist() == [-3.0, 3.0, -3.0]
    xi = ember.tensor([-7, 7])
    assert ember.div(xi, 2, rounding_mode="trunc").tolist() == [-3, 3]
    with pytest.raises(ValueError):
        ember.div(x, 2, rounding_mode="bad")


def test_clamp_where_lerp_isclose():
    x = ember.tensor([-2.0, 0.5, 3.0, float("nan")])
    r = ember.clamp(x, -1, 1).tolist()
    assert r[:3] == [-1.0, 0.5, 1.0] and math.isnan(r[3])
    assert ember.clamp(ember.tensor([1, 5, 9]), max=6).tolist() == [1, 5, 6]
    with pytest.raises(RuntimeError, match="At least one"):
        ember.clamp(x)
    w = ember.where(ember.tensor([True, False]), ember.tensor([1.0, 2.0]), 0.0)
    assert w.tolist() == [1.0, 0.0]
    np.testing.assert_allclose(ember.lerp(ember.zeros(3), ember.ones(3), 0.25).numpy(), [0.25] * 3)
    assert ember.allclose(ember.tensor([1.0, 2.0]), ember.tensor([1.0, 2.0 + 1e-7]))
    assert not ember.allclose(ember.tensor([1.0]), ember.tensor([1.1]))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_where_with_scalar_sides_matches_numpy(dtype):
    # a 0-dim or Python-scalar side takes its own contiguous loop: same values as NumPy
    n = 1000
    x = rng.standard_normal(n).astype(np.float64) * 5
    y = rng.standard_normal(n).astype(np.float64) * 5
    x, y = x.astype(dtype), y.astype(dtype)
    c = rng.standard_normal(n) > 0
    ex, ey, ec = ember.tensor(x), ember.tensor(y), ember.tensor(c)
    for a, b, na, nb in [(ex, 2, x, 2), (3, ey, 3, y), (1, 2, 1, 2),
                         (ex, ember.tensor(7, dtype=ex.dtype), x, 7),
                         (ember.tensor(-4, dtype=ex.dtype), ey, -4, y)]:
        r = ember.where(ec, a, b)
        assert r.dtype == ex.dtype or not isinstance(a, ember.Tensor) and \
            not isinstance(b, ember.Tensor)
        np.testing.assert_array_equal(r.numpy(), np.where(c, na, nb).astype(r.numpy().dtype))
    # strided condition and operands still take the general loop
    r = ember.where(ec[::2], ex[::2], 0)
    np.testing.assert_array_equal(r.numpy(), np.where(c[::2], x[::2], 0))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lerp_tensor_weight_contiguous_equals_strided_and_torch(dtype):
    # torch's vector form: x + t (y - x) where |t| < 0.5, else y + (t - 1)(y - x), one
    # multiply-add each (fused on the AVX2 / AVX-512 tables)
    n = 4099
    a, b = ((rng.standard_normal(2 * n) * 3).astype(dtype) for _ in range(2))
    w = rng.uniform(-1.5, 1.5, 2 * n).astype(dtype)
    w[:10] = [0.0, 0.5, 1.0, 0.4999, 0.5001, -0.25, 1.25, np.nan, -0.5, -0.4999]
    ea, eb, ew = (ember.tensor(v) for v in (a, b, w))
    contiguous = ember.lerp(ea[:n], eb[:n], ew[:n]).numpy()
    strided = ember.lerp(ea[::2], eb[::2], ew[::2]).numpy()
    np.testing.assert_array_equal(strided, ember.lerp(ea[::2].contiguous(), eb[::2].contiguous(),
                                                      ew[::2].contiguous()).numpy())
    small = np.abs(w) < 0.5
    d = b - a
    cd = np.where(small, w, w - 1).astype(np.float64) * d
    ref = cd + np.where(small, a, b)
    tol = 2 * np.finfo(dtype).eps * (np.abs(ref) + np.abs(cd))
    for got, sl in ((contiguous, slice(0, n)), (strided, slice(None, None, 2))):
        np.testing.assert_array_equal(np.isnan(got), np.isnan(ref[sl]))
        ok = ~np.isnan(ref[sl])
        assert np.all(np.abs(got[ok] - ref[sl][ok]) <= tol[sl][ok])
    for t in (-0.75, -0.5, -0.25, 0.25, 0.75):
        # a scalar weight rounds each step, as the multi-tensor optimizer loops do
        r = a + dtype(t) * d if abs(t) < 0.5 else b - d * (1 - dtype(t))
        np.testing.assert_array_equal(ember.lerp(ea, eb, t).numpy(), r)
        np.testing.assert_array_equal(ember.lerp(ea[::2], eb[::2], t).numpy(), r[::2])
    torch = pytest.importorskip("torch")
    ta, tb, tw = (torch.from_numpy(v[:n]) for v in (a, b, w))
    t = torch.lerp(ta, tb, tw).numpy()
    if ember.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512"):
        m = n - n % 64                                         # torch's scalar tail rounds twice
        np.testing.assert_array_equal(contiguous[:m], t[:m])
    np.testing.assert_allclose(contiguous, t, rtol=0, atol=4 * np.finfo(dtype).eps * 10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.int8,
                                   np.uint8])
def test_clamp_with_two_tensor_bounds_matches_maximum_then_minimum(dtype):
    # one pass over x and both bounds: the same bits as minimum(maximum(x, lo), hi),
    # NaN in any operand propagating and lo > hi giving hi
    n = 3001
    if np.dtype(dtype).kind == "f":
        x, lo, hi = ((rng.standard_normal(n) * 2).astype(dtype) for _ in range(3))
        x[::7], lo[::11], hi[::13] = np.nan, np.nan, np.nan
        lo[:4], hi[:4], x[:4] = [0.0, -0.0, 1.0, np.inf], [-0.0, 0.0, -1.0, -np.inf], 0.5
    else:
        x, lo, hi = (rng.integers(0, 100, n).astype(dtype) for _ in range(3))
    ex, el, eh = (ember.tensor(v) for v in (x, lo, hi))
    ref = ember.minimum(ember.maximum(ex, el), eh).numpy()
    np.testing.assert_array_equal(ember.clamp(ex, el, eh).numpy(), ref)
    np.testing.assert_array_equal(np.isnan(ref) if ref.dtype.kind == "f" else ref,
                                  np.isnan(x) | np.isnan(lo) | np.isnan(hi)
                                  if ref.dtype.kind == "f"
                                  else np.minimum(np.maximum(x, lo), hi))
    # broadcast bounds, a transposed input, out=
    m = ex[:1200].reshape(30, 40)
    got = ember.clamp(m.t(), el[:30].reshape(1, 30), eh[:40].reshape(40, 1))
    want = ember.minimum(ember.maximum(m.t(), el[:30].reshape(1, 30)), eh[:40].reshape(40, 1))
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    o = ember.empty(n, dtype=ex.dtype)
    assert ember.clamp(ex, el, eh, out=o) is o
    np.testing.assert_array_equal(o.numpy(), ref)
    torch = pytest.importorskip("torch")
    t = torch.clamp(torch.from_numpy(x), torch.from_numpy(lo), torch.from_numpy(hi))
    np.testing.assert_array_equal(ember.clamp(ex, el, eh).numpy(), t.numpy())


def test_clamp_tensor_bounds_gradients_and_mixed_dtypes_use_the_composite():
    x = ember.tensor([-2.0, 0.5, 3.0], requires_grad=True)
    lo, hi = ember.tensor([-1.0, -1.0, -1.0]), ember.tensor([1.0, 1.0, 1.0])
    ember.clamp(x, lo, hi).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 1.0, 0.0])
    r = ember.clamp(ember.tensor([1, 5, 9]), ember.tensor([2.5, 2.5, 2.5]),
                    ember.tensor([7.0, 7.0, 7.0]))
    assert r.dtype == ember.float32
    np.testing.assert_array_equal(r.numpy(), [2.5, 5.0, 7.0])


@pytest.mark.parametrize("weight", [0.3, 0.7])
def test_lerp_out_is_written_directly_and_may_alias_the_input(weight):
    a, b = (ember.tensor(rng.standard_normal(1001).astype(np.float32)) for _ in range(2))
    ref = ember.lerp(a, b, weight).numpy()
    o = ember.empty(1001)
    assert ember.lerp(a, b, weight, out=o) is o
    np.testing.assert_array_equal(o.numpy(), ref)
    a2 = a.clone()
    assert ember.lerp(a2, b, weight, out=a2) is a2          # the optimizers' moving average
    np.testing.assert_array_equal(a2.numpy(), ref)
    o64 = ember.empty(1001, dtype=ember.float64)              # another dtype: cast on the way
    ember.lerp(a, b, weight, out=o64)
    np.testing.assert_array_equal(o64.numpy(), ref.astype(np.float64))
    a3 = a.clone()
    assert a3.lerp_(b, weight) is a3
    np.testing.assert_array_equal(a3.numpy(), ref)
    with pytest.raises(RuntimeError, match="broadcast shape"):
        a3.lerp_(b.reshape(1, 1001).expand(2, 1001), weight)
    with pytest.raises(RuntimeError, match="lerp"):
        ember.lerp(a, b, weight, out=ember.empty(5))
    with pytest.raises(RuntimeError):
        ember.lerp(a[1:], b[:-1], weight, out=a[:-1])         # partial overlap, as torch


def test_half_and_bfloat16_compute_in_float32():
    x = np.array([0.1, 1.5, -2.25, 1000.0], dtype=np.float32)
    h = ember.tensor(x, dtype=ember.float16)
    np.testing.assert_allclose(
        (h * 2).float().numpy(), (x.astype(np.float16) * 2).astype(np.float32)
    )
    b = ember.tensor(x, dtype=ember.bfloat16)
    assert (b + b).dtype is ember.bfloat16
    np.testing.assert_allclose((b + b).float().numpy(), 2 * x, rtol=1e-2)


def test_large_parallel_add_matches_numpy():
    x = rng.standard_normal(3_000_001).astype(np.float32)
    y = rng.standard_normal(3_000_001).astype(np.float32)
    np.testing.assert_array_equal((ember.tensor(x) + ember.tensor(y)).numpy(), x + y)


def test_torch_parity_values_and_dtypes(torch):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    for name in ["exp", "tanh", "sigmoid", "erf", "gelu", "silu", "mish", "softplus", "log1p"]:
        e = getattr(ember, name)(ember.tensor(x))
        t = getattr(torch, name, None) or getattr(torch.nn.functional, name)
        np.testing.assert_allclose(e.numpy(), t(torch.tensor(x)).numpy(), rtol=2e-6, atol=2e-6)
    for a, b in [(1, 2.5), (True, 2), (1, True)]:
        ea = ember.tensor([a]) + b
        ta = torch.tensor([a]) + b
        assert str(ea.dtype).split(".")[1] == str(ta.dtype).split(".")[1]
    ei = ember.tensor([3], dtype=ember.int16) * ember.tensor(2.0)
    ti = torch.tensor([3], dtype=torch.int16) * torch.tensor(2.0)
    assert str(ei.dtype).split(".")[1] == str(ti.dtype).split(".")[1]


def test_torch_parity_errors(torch):
    for fn in (
        lambda m: m.ones(2, 3) + m.ones(4),
        lambda m: -m.tensor([True]),
        lambda m: m.tensor([1.0]).bitwise_and(m.tensor([1.0])),
    ):
        with pytest.raises(Exception) as te:
            fn(torch)
        with pytest.raises(Exception) as ee:
            fn(ember)
        assert ee.type is te.type or issubclass(ee.type, te.type)


def test_float32_trig_is_accurate_at_every_magnitude():
    """sin/cos/tan of float32 up to 3.4e38: the shared large-argument reduction keeps
    them within half an ulp (and NaN for inf)."""
    from tests.cuda.test_device_scan_optim import trig_inputs, ulps

    x = trig_inputs()
    finite = np.isfinite(x)
    for name in ("sin", "cos", "tan"):
        got = getattr(ember, name)(ember.tensor(x)).numpy()
        assert np.isnan(got[~finite]).all()
        assert ulps(got[finite], getattr(np, name)(x[finite].astype(np.float64))).max() <= 0.51
