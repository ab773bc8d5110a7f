"""ember.testing: assert_close / assert_allclose / make_tensor against torch.testing."""
import math
import warnings

import numpy as np
import pytest

import ember
from ember.testing import assert_allclose, assert_close, make_tensor


def _outcome(fn, *args, **kw):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn(*args, **kw)
    except Exception as e:  # noqa: BLE001 - the exception is the result under test
        return type(e), str(e).replace("torch.", "ember.")
    return None, None


def _both(make, torch):
    """``make(lib)`` builds (actual, expected, kwargs) in ember and in torch."""
    ea, ee, kw = make(ember)
    ta, te, _ = make(torch)
    return _outcome(assert_close, ea, ee, **kw), _outcome(torch.testing.assert_close, ta, te, **kw)


CASES = {
    "close": lambda t: (t.tensor([1., 2., 3.]), t.tensor([1., 2. + 1e-6, 3.]), {}),
    "float32": lambda t: (t.tensor([1., 2., 3.]), t.tensor([1., 2.5, 3.]), {}),
    "float64": lambda t: (t.tensor([[1., 2.], [3., 4.]], dtype=t.float64),
                          t.tensor([[1., 2.], [3.001, 4.]], dtype=t.float64), {}),
    "bfloat16": lambda t: (t.tensor([1., 2.], dtype=t.bfloat16),
                           t.tensor([1., 2.0625], dtype=t.bfloat16), {}),
    "float16": lambda t: (t.tensor([1., 2.], dtype=t.float16),
                          t.tensor([1., 2.01], dtype=t.float16), {}),
    "int": lambda t: (t.tensor([1, 2, 3]), t.tensor([1, 3, 3]), {}),
    "bool": lambda t: (t.tensor([True]), t.tensor([False]), {}),
    "zero_dim": lambda t: (t.tensor(1.), t.tensor(2.), {}),
    "nan": lambda t: (t.tensor([1., float("nan")]), t.tensor([1., float("nan")]), {}),
    "nan_equal": lambda t: (t.tensor([1., float("nan")]), t.tensor([1., float("nan")]),
                            {"equal_nan": True}),
    "tolerances": lambda t: (t.tensor([1., 2.]), t.tensor([1., 2.1]), {"rtol": 0.1, "atol": 0.}),
    "only_rtol": lambda t: (t.tensor([1.]), t.tensor([1.]), {"rtol": 1.}),
    "only_atol": lambda t: (t.tensor([1.]), t.tensor([1.]), {"atol": 1.}),
    "dtype": lambda t: (t.tensor([1., 2.]), t.tensor([1., 2.], dtype=t.float64), {}),
    "dtype_unchecked": lambda t: (t.tensor([1, 2]), t.tensor([1., 2.5]), {"check_dtype": False}),
    "shape": lambda t: (t.tensor([1., 2.]), t.tensor([1., 2., 3.]), {}),
    "stride": lambda t: (t.ones(2, 3), t.ones(3, 2).t(), {"check_stride": True}),
    "seq": lambda t: ([t.tensor([1, 2, 3])], [t.tensor([1, 3, 3])], {}),
    "seq_len": lambda t: ([1, 2], [1, 2, 3], {}),
    "nested": lambda t: ([{"a": [t.tensor([1.])]}], [{"a": [t.tensor([2.])]}], {}),
    "keys": lambda t: ({"a": 1, "b": 2}, {"a": 1, "c": 2}, {}),
    "scalars": lambda t: (1.0, 2.0, {}),
    "ints": lambda t: (1, 2, {}),
    "int_float": lambda t: (1, 1.0, {}),
    "bools": lambda t: (True, False, {}),
    "none": lambda t: (None, 1, {}),
    "str": lambda t: ("a", "a", {}),
    "tensor_vs_int": lambda t: (1, t.tensor(1), {}),
    "msg": lambda t: (t.ones(2, 2), t.ones(2, 2) + t.eye(2), {"msg": "custom"}),
    "msg_fn": lambda t: (t.ones(2), t.ones(2) * 2, {"msg": lambda m: "X" + m[:20]}),
    "grad": lambda t: (t.ones(3, requires_grad=True) * 2, t.full((3,), 2.), {}),
    "empty": lambda t: (t.ones(0, 3), t.ones(0, 3), {}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_assert_close_matches_torch(case, torch):
    (e_type, e_msg), (t_type, t_msg) = _both(CASES[case], torch)
    assert e_type is t_type
    assert e_msg == t_msg


def test_assert_close_message_names_mismatch():
    want = (r"Mismatched elements: 2 / 4 \(50\.0%\)\n"
            r"Greatest absolute difference: 3\.0 at index \(1, 0\)")
    with pytest.raises(AssertionError, match=want):
        assert_close(ember.tensor([[1., 2.], [3., 4.]]), ember.tensor([[1., 3.], [6., 4.]]))


def test_assert_allclose_matches_torch(torch):
    cases = [(ember.tensor([1., 2.]), [1., 2.00001]),       # float32: rtol 1e-4
             (ember.tensor([1., 2.]), [1., 2.01]),
             (ember.tensor([1., float("nan")]), [1., float("nan")]),  # equal_nan by default
             (ember.tensor([1, 2]), ember.tensor([1., 2.]))]        # dtypes not checked
    for a, e in cases:
        ta = torch.tensor(a.numpy())
        te = torch.tensor(e.numpy()) if isinstance(e, ember.Tensor) else e
        got = _outcome(assert_allclose, a, e)
        want = _outcome(torch.testing.assert_allclose, ta, te)
        assert got[0] is want[0] and got[1] == want[1]
    with pytest.warns(FutureWarning, match="assert_allclose"):
        assert_allclose(1.0, 1.0)


@pytest.mark.parametrize("dtype,lo,hi", [("float32", -9, 9), ("float64", -9, 9),
                                         ("bfloat16", -9, 9), ("int64", -9, 10),
                                         ("int8", -9, 10), ("uint8", 0, 10), ("bool", 0, 2)])
def test_make_tensor_default_ranges(dtype, lo, hi):
    dt = getattr(ember, dtype)
    t = make_tensor(40, 50, dtype=dt, device="cpu")
    assert t.shape == (40, 50) and t.dtype == dt and t.is_contiguous()
    v = t.to(ember.float64).numpy()
    assert v.min() >= lo and v.max() < hi
    assert len(np.unique(v)) > 1
    if dtype in ("int64", "int8", "uint8"):
        assert v.min() == lo and v.max() == hi - 1   # 2000 draws hit both ends


def test_make_tensor_options():
    t = make_tensor((3, 4), dtype=ember.float32, device="cpu", low=2, high=3,
                    requires_grad=True, noncontiguous=True)
    assert t.shape == (3, 4) and not t.is_contiguous() and t.requires_grad
    assert float(t.min()) >= 2 and float(t.max()) < 3
    z = make_tensor(200, dtype=ember.int64, device="cpu", low=-1, high=2, exclude_zero=True)
    assert 0 not in z.tolist() and set(z.tolist()) <= {-1, 1}
    f = make_tensor(5, dtype=ember.float32, device="cpu", low=-1e-40, high=1e-40,
                    exclude_zero=True)
    assert (f != 0).all()
    wide = make_tensor(100, dtype=ember.float32, device="cpu", low=-math.inf, high=math.inf)
    assert bool(ember.isfinite(wide).all())
    assert make_tensor(1, dtype=ember.float32, device="cpu", noncontiguous=True).is_contiguous()
    assert make_tensor(0, 3, dtype=ember.float32, device="cpu").shape == (0, 3)


@pytest.mark.parametrize("kw,err,match", [
    ({"dtype": ember.int64, "requires_grad": True}, ValueError, "requires_grad=True"),
    ({"dtype": ember.float32, "low": 3, "high": 2}, ValueError, "`low` must be less than"),
    ({"dtype": ember.float32, "low": float("nan")}, ValueError, "cannot be NaN"),
    ({"dtype": ember.uint8, "low": -5, "high": -1}, ValueError, "only supports"),
])
def test_make_tensor_errors_match_torch(kw, err, match, torch):
    with pytest.raises(err, match=match):
        make_tensor(2, device="cpu", **kw)
    tkw = dict(kw, dtype=getattr(torch, str(kw["dtype"]).split(".")[-1]))
    with pytest.raises(err, match=match):
        torch.testing.make_tensor(2, device="cpu", **tkw)
