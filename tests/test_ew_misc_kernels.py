"""One-pass kernels behind angle (real input), frexp, isposinf/isneginf and the
in-place nan_to_num_: values against torch, special values, strides, out=."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

SPECIAL = [0.0, -0.0, 1.0, -1.0, 3.0, -2.5, np.inf, -np.inf, np.nan, 1e-40, -1e-45,
           5e-324, -2.2e-308, 1.7e308, 3.4e38, 0.75]


def _vals(dtype, n=2000, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * 10.0 ** rng.integers(-8, 8, n)).astype(dtype)
    with np.errstate(over="ignore"):
        x[:len(SPECIAL)] = np.array(SPECIAL).astype(dtype)
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_angle_real_matches_torch(dtype):
    x = _vals(dtype)
    got = ember.angle(ember.from_numpy(x)).numpy()
    want = torch.angle(torch.from_numpy(x)).numpy()
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    strided = ember.angle(ember.from_numpy(x)[::3]).numpy()
    np.testing.assert_array_equal(strided, want[::3])
    ints = ember.angle(ember.tensor([-2, 0, 5]))
    np.testing.assert_array_equal(ints.numpy(), torch.angle(torch.tensor([-2, 0, 5])).numpy())


def test_angle_real_gradient_is_zero():
    x = ember.tensor([-1.0, 2.0], requires_grad=True)
    ember.angle(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_frexp_matches_torch(dtype):
    x = _vals(dtype)
    m, e = ember.frexp(ember.from_numpy(x))
    tm, te = torch.frexp(torch.from_numpy(x))
    assert e.dtype == ember.int32 and m.dtype == ember.from_numpy(x).dtype
    np.testing.assert_array_equal(m.numpy(), tm.numpy())
    np.testing.assert_array_equal(e.numpy(), te.numpy())
    fin = np.isfinite(x)
    np.testing.assert_array_equal(np.ldexp(m.numpy()[fin].astype(np.float64), e.numpy()[fin]),
                                  x[fin].astype(np.float64))
    sm, se = ember.frexp(ember.from_numpy(x)[1::2])
    np.testing.assert_array_equal(sm.numpy(), tm.numpy()[1::2])
    np.testing.assert_array_equal(se.numpy(), te.numpy()[1::2])


def test_frexp_out_and_errors():
    x = ember.tensor([8.0, -0.375, 0.0])
    mo, eo = ember.empty(3), ember.empty(3, dtype=ember.int32)
    r = ember.frexp(x, out=(mo, eo))
    assert r.mantissa is mo and r.exponent is eo
    np.testing.assert_array_equal(mo.numpy(), [0.5, -0.75, 0.0])
    np.testing.assert_array_equal(eo.numpy(), [4, -1, 0])
    with pytest.raises(RuntimeError, match="floating"):
        ember.frexp(ember.tensor([1, 2]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_isposinf_isneginf_match_torch(dtype):
    x = _vals(dtype)
    for name in ("isposinf", "isneginf"):
        got = getattr(ember, name)(ember.from_numpy(x))
        want = getattr(torch, name)(torch.from_numpy(x))
        assert got.dtype == ember.bool
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        out = ember.empty(len(x), dtype=ember.bool)
        assert getattr(ember, name)(ember.from_numpy(x), out=out) is out
        np.testing.assert_array_equal(out.numpy(), want.numpy())
        np.testing.assert_array_equal(getattr(ember, name)(ember.tensor([1, -3])).numpy(),
                                      [False, False])
        with pytest.raises(RuntimeError, match="does not support complex"):
            getattr(ember, name)(ember.tensor([1j]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nan_to_num_inplace_matches_torch(dtype):
    x = _vals(dtype)
    for kw in ({}, {"nan": 1.5, "posinf": 7.0, "neginf": -9.0}):
        e = ember.from_numpy(x.copy())
        v = e._version
        assert e.nan_to_num_(**kw) is e
        assert e._version > v
        t = torch.from_numpy(x.copy()).nan_to_num_(**kw)
        np.testing.assert_array_equal(e.numpy(), t.numpy())
    e = ember.from_numpy(x.copy())
    e[::2].nan_to_num_()
    t = torch.from_numpy(x.copy())
    t[::2].nan_to_num_()
    np.testing.assert_array_equal(e.numpy(), t.numpy())
    ints = ember.tensor([1, 2, 3])
    assert ints.nan_to_num_() is ints
    np.testing.assert_array_equal(ints.numpy(), [1, 2, 3])
    leaf = ember.tensor([1.0, float("nan")], requires_grad=True)
    with pytest.raises(RuntimeError, match="in-place"):
        leaf.nan_to_num_()
