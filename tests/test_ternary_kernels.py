"""addcmul / addcdiv (one ternary C pass with the scalar value), logaddexp2 and
nextafter (binary C kernels): torch parity for values, dtypes and promotion,
broadcasting, strided operands, out= and in-place forms, gradients, accuracy
against high-precision references, and bit-identical results at 1 and 2 threads."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(2611)

_NP = {"float32": np.float32, "float64": np.float64, "int64": np.int64, "int32": np.int32,
       "int16": np.int16, "int8": np.int8, "uint8": np.uint8}


def _arr(shape, dt, lo=-4, hi=4):
    if dt.startswith("float"):
        return (RNG.standard_normal(shape) * 3).astype(_NP[dt])
    return RNG.integers(lo if dt != "uint8" else 0, hi, shape).astype(_NP[dt])


def _pair(a):
    return ember.from_numpy(a.copy()), torch.from_numpy(a.copy())


def _same(e, t, exact=True):
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (e.dtype, t.dtype)
    assert tuple(e.shape) == tuple(t.shape)
    got, want = e.detach().numpy(), t.detach().numpy()
    if exact:
        np.testing.assert_array_equal(got, want)
    else:
        f32 = got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=2e-6 if f32 else 1e-14,
                                   atol=1e-7 if f32 else 1e-15)


def _threads(fn):
    old = ember.get_num_threads()
    out = []
    try:
        for n in (1, 2):
            ember.set_num_threads(n)
            out.append(fn().numpy())
    finally:
        ember.set_num_threads(old)
    return out


# --- addcmul / addcdiv -------------------------------------------------------------------
@pytest.mark.parametrize("op", ["addcmul", "addcdiv"])
@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("value", [1, 0.5, -3, True, 2.75])
def test_addc_float_values_match_torch(op, dt, value):
    a, b, c = (_arr((257, 9), dt) for _ in range(3))
    if op == "addcdiv":
        c = c + np.where(c >= 0, 0.5, -0.5).astype(c.dtype)
    (ea, ta), (eb, tb), (ec, tc) = _pair(a), _pair(b), _pair(c)
    _same(getattr(ember, op)(ea, eb, ec, value=value), getattr(torch, op)(ta, tb, tc, value=value))


@pytest.mark.parametrize("dt", ["int64", "int32", "int16", "int8", "uint8"])
@pytest.mark.parametrize("value", [1, 3, -2, True, 0.5, 2.9])
def test_addcmul_integers_cast_value_as_torch(dt, value):
    if dt == "uint8" and value == -2:
        value = 5
    (ea, ta), (eb, tb), (ec, tc) = (_pair(_arr((300,), dt)) for _ in range(3))
    _same(ember.addcmul(ea, eb, ec, value=value), torch.addcmul(ta, tb, tc, value=value))


@pytest.mark.parametrize("dts", [("float32", "float64", "float32"), ("int64", "float32", "int64"),
                                 ("int32", "int64", "int16"), ("uint8", "int8", "int8")])
def test_addcmul_promotion(dts):
    (ea, ta), (eb, tb), (ec, tc) = (_pair(_arr((64,), d)) for d in dts)
    _same(ember.addcmul(ea, eb, ec, value=2), torch.addcmul(ta, tb, tc, value=2))


def test_addcmul_zero_dim_operands_promote_as_torch():
    a = _pair(_arr((50,), "float32"))
    s = _pair(np.array(1.5, dtype=np.float64))
    i = _pair(np.array(3, dtype=np.int64))
    for x, y, z in [(a, s, a), (a, a, s), (a, i, a), (s, a, a), (i, a, a)]:
        _same(ember.addcmul(x[0], y[0], z[0], value=0.5),
              torch.addcmul(x[1], y[1], z[1], value=0.5), exact=False)


def test_addcdiv_promotes_integer_input_and_rejects_integer_division():
    (ea, ta) = _pair(_arr((40,), "int64"))
    (eb, tb), (ec, tc) = _pair(_arr((40,), "float32")), _pair(_arr((40,), "float32") + 9)
    _same(ember.addcdiv(ea, eb, ec, value=2), torch.addcdiv(ta, tb, tc, value=2))
    with pytest.raises(RuntimeError, match="Integer division with addcdiv"):
        ember.addcdiv(ea, ea, ea)


def test_addcmul_bool_is_rejected_like_torch():
    b = ember.tensor([True, False])
    with pytest.raises(RuntimeError):
        torch.addcmul(torch.tensor([True, False]), torch.tensor([True, False]),
                      torch.tensor([True, False]))
    with pytest.raises((RuntimeError, NotImplementedError)):
        ember.addcmul(b, b, b)


@pytest.mark.parametrize("op", ["addcmul", "addcdiv"])
def test_addc_broadcasting_and_strided_operands(op):
    a = _arr((6, 1, 5), "float32")
    b = _arr((4, 1), "float32")
    c = _arr((5,), "float32") + 7
    (ea, ta), (eb, tb), (ec, tc) = _pair(a), _pair(b), _pair(c)
    _same(getattr(ember, op)(ea, eb, ec, value=0.5), getattr(torch, op)(ta, tb, tc, value=0.5))
    m = _arr((40, 30), "float64")
    (em, tm) = _pair(m)
    args_e = (em.t(), em[::2, ::3].repeat(2, 3).t(), em.t() + 9)
    args_t = (tm.t(), tm[::2, ::3].repeat(2, 3).t(), tm.t() + 9)
    _same(getattr(ember, op)(*args_e, value=-1.5), getattr(torch, op)(*args_t, value=-1.5))
    # a strided view gives the bits of its contiguous copy
    dense = getattr(ember, op)(*(x.contiguous() for x in args_e), value=-1.5)
    np.testing.assert_array_equal(getattr(ember, op)(*args_e, value=-1.5).numpy(), dense.numpy())


@pytest.mark.parametrize("op", ["addcmul", "addcdiv"])
def test_addc_out_and_inplace(op):
    a, b, c = (_arr((33, 7), "float32") for _ in range(3))
    c = c + 9
    (ea, ta), (eb, tb), (ec, tc) = _pair(a), _pair(b), _pair(c)
    eo, to = ember.empty(33, 7, dtype=ember.float64), torch.empty(33, 7, dtype=torch.float64)
    r = getattr(ember, op)(ea, eb, ec, value=0.25, out=eo)
    getattr(torch, op)(ta, tb, tc, value=0.25, out=to)
    assert r is eo
    _same(eo, to)
    getattr(ea, op + "_")(eb, ec, value=3)
    getattr(ta, op + "_")(tb, tc, value=3)
    _same(ea, ta)
    with pytest.raises(RuntimeError):
        getattr(ember, op)(ea, eb, ec, out=ember.empty(3, 3, dtype=ember.int64))


@pytest.mark.parametrize("op", ["addcmul", "addcdiv"])
@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_addc_threads_bit_identical(op, dt):
    a, b, c = (ember.from_numpy(_arr((200_003,), dt)) for _ in range(3))
    one, two = _threads(lambda: getattr(ember, op)(a, b, c + 20, value=0.3))
    np.testing.assert_array_equal(one, two)


@pytest.mark.parametrize("op", ["addcmul", "addcdiv"])
def test_addc_gradients_match_torch(op):
    a, b, c = _arr((5, 1, 4), "float64"), _arr((3, 1), "float64"), _arr((4,), "float64") + 9
    e = [ember.from_numpy(x.copy()).requires_grad_() for x in (a, b, c)]
    t = [torch.from_numpy(x.copy()).requires_grad_() for x in (a, b, c)]
    ge = _arr((5, 3, 4), "float64")
    getattr(ember, op)(*e, value=-0.7).backward(ember.from_numpy(ge))
    getattr(torch, op)(*t, value=-0.7).backward(torch.from_numpy(ge))
    for x, y in zip(e, t):
        np.testing.assert_allclose(x.grad.numpy(), y.grad.numpy(), rtol=1e-13)
    # out= with an input that requires grad is refused, as torch
    with pytest.raises(RuntimeError, match="out="):
        getattr(ember, op)(*e, out=ember.empty(5, 3, 4, dtype=ember.float64))


# --- logaddexp2 --------------------------------------------------------------------------
def _ulps(got, ref, dt):
    """|got - ref| in units of the last place of ref in dtype dt (ref in float64 or mpf)."""
    tiny = float(np.finfo(dt).smallest_subnormal)
    ref = np.asarray(ref, dtype=np.float64)
    spacing = np.maximum(np.abs(np.spacing(ref.astype(dt))).astype(np.float64), tiny)
    return np.abs(got.astype(np.float64) - ref) / spacing


def _check_vs_torch(ue, ut, no_cancel, bound, worst=1.0):
    """ember's error (ulps) at most torch's, in the worst case and on average; where
    max(a, b) >= 0 (no cancellation: the answer is conditioned) within `bound` ulps.
    Where m is close to -log2(1 + 2^-d) the answer is tiny and ill-conditioned, and
    both libraries lose digits there (the worst cases)."""
    assert ue.max() <= worst * ut.max(), (ue.max(), ut.max())
    assert ue.mean() <= ut.mean(), (ue.mean(), ut.mean())
    assert ue[no_cancel].max() <= bound, ue[no_cancel].max()


def _lae2_points(n, dt):
    a = RNG.standard_normal(n) * 30
    d = np.concatenate([RNG.uniform(0, 2, n // 2), RNG.uniform(0, 160, n - n // 2)])
    b = a - d * RNG.choice([-1.0, 1.0], n)
    a[: n // 8] *= 1e-3                 # results near zero: the log2 term is the answer
    b[: n // 8] = -RNG.uniform(0, 60, n // 8)
    return a.astype(dt), b.astype(dt)


def test_logaddexp2_float32_accuracy_at_least_torchs():
    a, b = _lae2_points(200_000, np.float32)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    m = np.maximum(a64, b64)
    ref = m + np.log1p(np.exp2(-np.abs(a64 - b64))) / np.log(2.0)
    got = ember.logaddexp2(ember.from_numpy(a), ember.from_numpy(b)).numpy()
    tor = torch.logaddexp2(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    _check_vs_torch(_ulps(got, ref, np.float32), _ulps(tor, ref, np.float32),
                    np.maximum(a, b) >= 0, 2.0)


def test_logaddexp2_float64_accuracy_at_least_torchs():
    mp = pytest.importorskip("mpmath")
    a, b = _lae2_points(3000, np.float64)
    with mp.workdps(40):
        ref = np.array([float(mp.log(mp.mpf(2) ** mp.mpf(x) + mp.mpf(2) ** mp.mpf(y), 2))
                        for x, y in zip(a.tolist(), b.tolist())])
    got = ember.logaddexp2(ember.from_numpy(a), ember.from_numpy(b)).numpy()
    tor = torch.logaddexp2(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    _check_vs_torch(_ulps(got, ref, np.float64), _ulps(tor, ref, np.float64),
                    np.maximum(a, b) >= 0, 1.0, worst=2.0)


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_logaddexp2_special_values(dt):
    inf, nan = np.inf, np.nan
    a = np.array([inf, -inf, inf, -inf, nan, 1.0, nan, 3.0, -inf, 0.0, 1e30, -1e30], dtype=dt)
    b = np.array([inf, -inf, -inf, 2.0, 1.0, nan, nan, 3.0, 5.0, -200.0, -1e30, -1e30],
                 dtype=dt)
    (ea, ta), (eb, tb) = _pair(a), _pair(b)
    got = ember.logaddexp2(ea, eb).numpy()
    want = torch.logaddexp2(ta, tb).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_allclose(got[ok], want[ok], rtol=1e-6 if dt == "float32" else 1e-15)


def test_logaddexp2_broadcast_strided_scalar_out_threads_and_grad():
    x = _arr((64, 33), "float32")
    y = _arr((33,), "float32")
    (ex, tx), (ey, ty) = _pair(x), _pair(y)
    _same(ember.logaddexp2(ex.t(), ex.t()[:, :1]), torch.logaddexp2(tx.t(), tx.t()[:, :1]),
          exact=False)
    _same(ember.logaddexp2(ex, ey), torch.logaddexp2(tx, ty), exact=False)
    dense = ex.t().contiguous()
    np.testing.assert_array_equal(ember.logaddexp2(ex.t(), ex.t()).numpy(),
                                  ember.logaddexp2(dense, dense).numpy())
    eo = ember.empty(64, 33, dtype=ember.float64)
    assert ember.logaddexp2(ex, ey, out=eo) is eo
    np.testing.assert_allclose(eo.numpy(), torch.logaddexp2(tx, ty).double().numpy(),
                               rtol=2e-6, atol=1e-7)
    big = [ember.from_numpy(_arr((150_001,), "float64")) for _ in range(2)]
    one, two = _threads(lambda: ember.logaddexp2(*big))
    np.testing.assert_array_equal(one, two)
    e = [ember.from_numpy(v.astype(np.float64)).requires_grad_() for v in (x, y)]
    t = [torch.from_numpy(v.astype(np.float64)).requires_grad_() for v in (x, y)]
    ember.logaddexp2(*e).sum().backward()
    torch.logaddexp2(*t).sum().backward()
    for u, v in zip(e, t):
        np.testing.assert_allclose(u.grad.numpy(), v.grad.numpy(), rtol=1e-13)


# --- nextafter ---------------------------------------------------------------------------
def _bits(a):
    return a.view(np.int32 if a.dtype == np.float32 else np.int64)


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_nextafter_special_values_bit_exact(dt):
    f = np.finfo(dt)
    sub = float(f.smallest_subnormal)
    vals = np.array([0.0, -0.0, sub, -sub, 2 * sub, float(f.tiny), -float(f.tiny), 1.0, -1.0,
                     float(f.max), -float(f.max), np.inf, -np.inf, np.nan, 3.5, -2.25],
                    dtype=dt)
    a = np.repeat(vals, vals.size)
    b = np.tile(vals, vals.size)
    (ea, ta), (eb, tb) = _pair(a), _pair(b)
    got, want = ember.nextafter(ea, eb).numpy(), torch.nextafter(ta, tb).numpy()
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(_bits(got[~nan]), _bits(want[~nan]))


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_nextafter_random_broadcast_strided_inplace_out_threads(dt):
    x = _arr((128, 40), dt)
    x[::7] = 0.0
    y = _arr((40,), dt)
    y[::5] = x[0, ::5]
    (ex, tx), (ey, ty) = _pair(x), _pair(y)
    for e_args, t_args in [((ex, ey), (tx, ty)), ((ex.t(), ex.t()[:, :1]), (tx.t(), tx.t()[:, :1])),
                           ((ex[::3, 1::2], ey[1::2]), (tx[::3, 1::2], ty[1::2]))]:
        got, want = ember.nextafter(*e_args).numpy(), torch.nextafter(*t_args).numpy()
        np.testing.assert_array_equal(_bits(got), _bits(want))
    eo, to = ember.empty_like(ex), torch.empty_like(tx)
    assert ember.nextafter(ex, ey, out=eo) is eo
    torch.nextafter(tx, ty, out=to)
    np.testing.assert_array_equal(_bits(eo.numpy()), _bits(to.numpy()))
    ex.nextafter_(ey)
    tx.nextafter_(ty)
    np.testing.assert_array_equal(_bits(ex.numpy()), _bits(tx.numpy()))
    big = [ember.from_numpy(_arr((150_001,), dt)) for _ in range(2)]
    one, two = _threads(lambda: ember.nextafter(*big))
    np.testing.assert_array_equal(_bits(one), _bits(two))


def test_nextafter_dtype_checks_match_torch():
    with pytest.raises(RuntimeError):
        ember.nextafter(ember.ones(3), ember.ones(3, dtype=ember.float64))
    with pytest.raises(RuntimeError):
        ember.nextafter(ember.ones(3, dtype=ember.int64), ember.ones(3, dtype=ember.int64))
