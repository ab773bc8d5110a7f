"""``assert_close`` / ``assert_allclose``: PyTorch's comparison rules and messages."""
from __future__ import annotations

import cmath
import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Callable

import ember
from ember._C.core import TensorBase

__all__ = ["assert_close", "assert_allclose"]

# {dtype: (rtol, atol)}; any other dtype (integers, bool) is compared for equality.
_DTYPE_PRECISIONS = {
    ember.float16: (0.001, 1e-5),
    ember.bfloat16: (0.016, 1e-5),
    ember.float32: (1.3e-6, 1e-5),
    ember.float64: (1e-7, 1e-7),
}
_TYPE_TO_DTYPE = {int: ember.int64, float: ember.float64}


class _Mismatch(Exception):
    """A failed comparison: the exception type to raise, its message and the item path."""

    def __init__(self, type_: type, msg: str, id_: tuple = ()):
        super().__init__(msg)
        self.type, self.msg, self.id = type_, msg, id_

    def to_error(self, msg=None) -> Exception:
        if not isinstance(msg, str):
            generated = self.msg
            if self.id:
                generated += ("\n\nThe failure occurred for item "
                              + "".join(str([item]) for item in self.id))
            msg = msg(generated) if callable(msg) else generated
        return self.type(msg)


def _default_tolerances(*dtypes, precisions=None) -> tuple[float, float]:
    precisions = precisions or _DTYPE_PRECISIONS
    rtols, atols = zip(*[precisions.get(d, (0.0, 0.0)) for d in dtypes])
    return max(rtols), max(atols)


def _tolerances(*dtypes, rtol, atol, id_) -> tuple[float, float]:
    if (rtol is None) ^ (atol is None):
        # Only one given could pass surprising inputs (atol=0 matched through rtol).
        raise _Mismatch(ValueError, "Both 'rtol' and 'atol' must be either specified or omitted, "
                                    f"but got no {'rtol' if rtol is None else 'atol'}.", id_)
    if rtol is not None:
        return rtol, atol
    return _default_tolerances(*dtypes)


def _mismatch_msg(*, identifier, extra, abs_diff, abs_idx, atol, rel_diff, rel_idx, rtol):
    equality = rtol == 0 and atol == 0

    def diff_msg(kind, diff, idx, tol):
        msg = (f"{kind.title()} difference: {diff}" if idx is None
               else f"Greatest {kind} difference: {diff} at index {idx}")
        if not equality:
            msg += f" (up to {tol} allowed)"
        return msg + "\n"

    msg = f"{identifier} are not {'equal' if equality else 'close'}!\n\n"
    if extra:
        msg += f"{extra.strip()}\n"
    msg += diff_msg("absolute", abs_diff, abs_idx, atol)
    msg += diff_msg("relative", rel_diff, rel_idx, rtol)
    return msg.strip()


def _scalar_mismatch_msg(actual, expected, *, rtol, atol, identifier="Scalars"):
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _mismatch_msg(identifier=identifier, extra=f"Expected {expected} but got {actual}.",
                         abs_diff=abs_diff, abs_idx=None, atol=atol, rel_diff=rel_diff,
                         rel_idx=None, rtol=rtol)


def _unravel(flat: int, shape) -> tuple:
    idx = []
    for size in reversed(tuple(shape)):
        flat, mod = divmod(flat, size)
        idx.append(mod)
    return tuple(reversed(idx))


def _tensor_mismatch_msg(actual, expected, matches, *, rtol, atol):
    n = matches.numel()
    bad = n - int(matches.sum().item())
    extra = f"Mismatched elements: {bad} / {n} ({bad / n:.1%})"
    a, e, m = actual.flatten(), expected.flatten(), matches.flatten()
    if not a.dtype.is_floating_point:
        a, e = a.to(ember.int64), e.to(ember.int64)
    abs_diff = (a - e).abs()
    abs_diff[m] = 0
    max_abs, abs_i = ember.max(abs_diff, 0)
    rel_diff = abs_diff / e.abs()
    rel_diff[m] = 0
    max_rel, rel_i = ember.max(rel_diff, 0)
    return _mismatch_msg(identifier="Tensor-likes", extra=extra, abs_diff=max_abs.item(),
                         abs_idx=_unravel(int(abs_i.item()), actual.shape), atol=atol,
                         rel_diff=max_rel.item(), rel_idx=_unravel(int(rel_i.item()), actual.shape),
                         rtol=rtol)


def _compare_tensors(actual, expected, id_, *, allow_subclasses, rtol, atol, equal_nan,
                     check_device, check_dtype, check_stride):
    if not allow_subclasses and type(actual) is not type(expected):
        raise _Mismatch(AssertionError,
                        f"Except for Python scalars, type equality is required if "
                        f"allow_subclasses=False, but got {type(actual)} and {type(expected)} "
                        f"instead.", id_)

    def attr_mismatch(name, a, e):
        raise _Mismatch(AssertionError,
                        f"The values for attribute '{name}' do not match: {a} != {e}.", id_)

    if actual.shape != expected.shape:
        attr_mismatch("shape", actual.shape, expected.shape)
    if check_stride and actual.stride() != expected.stride():
        attr_mismatch("stride()", actual.stride(), expected.stride())
    if check_device and actual.device != expected.device:
        attr_mismatch("device", actual.device, expected.device)
    if check_dtype and actual.dtype != expected.dtype:
        attr_mismatch("dtype", actual.dtype, expected.dtype)
    rtol, atol = _tolerances(actual.dtype, expected.dtype, rtol=rtol, atol=atol, id_=id_)

    actual, expected = actual.detach(), expected.detach()
    if actual.device != expected.device:
        actual, expected = actual.cpu(), expected.cpu()
    if actual.dtype != expected.dtype:
        dtype = ember.promote_types(actual.dtype, expected.dtype)
        actual, expected = actual.to(dtype), expected.to(dtype)
    matches = ember.isclose(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if bool(matches.all()):
        return
    if actual.ndim == 0:
        msg = _scalar_mismatch_msg(actual.item(), expected.item(), rtol=rtol, atol=atol)
    else:
        msg = _tensor_mismatch_msg(actual, expected, matches, rtol=rtol, atol=atol)
    raise _Mismatch(AssertionError, msg, id_)


def _is_bool(x) -> bool:
    return isinstance(x, bool) or type(x).__name__ == "bool_"


def _is_number(x) -> bool:
    return isinstance(x, (int, float, complex)) and not isinstance(x, bool)


def _compare_numbers(actual, expected, id_, *, rtol, atol, equal_nan, check_dtype):
    if check_dtype and type(actual) is not type(expected):
        raise _Mismatch(AssertionError,
                        f"The (d)types do not match: {type(actual)} != {type(expected)}.", id_)
    dtypes = [_TYPE_TO_DTYPE.get(type(x)) for x in (actual, expected)]
    dtypes = [d for d in dtypes if d is not None] or [ember.float64]
    rtol, atol = _tolerances(*dtypes, rtol=rtol, atol=atol, id_=id_)
    if actual == expected:
        return
    if equal_nan and cmath.isnan(actual) and cmath.isnan(expected):
        return
    abs_diff = abs(actual - expected)
    tolerance = atol + rtol * abs(expected)
    if math.isfinite(abs_diff) and abs_diff <= tolerance:
        return
    raise _Mismatch(AssertionError,
                    _scalar_mismatch_msg(actual, expected, rtol=rtol, atol=atol), id_)


def _compare(actual, expected, id_, opts):
    if actual is None or expected is None:
        if actual is None and expected is None:
            return
        raise _Mismatch(AssertionError, f"None mismatch: {actual} is not {expected}", id_)
    if _is_bool(actual) and _is_bool(expected):
        if bool(actual) is not bool(expected):
            raise _Mismatch(AssertionError, f"Booleans mismatch: {actual} is not {expected}", id_)
        return
    if _is_number(actual) and _is_number(expected):
        _compare_numbers(actual, expected, id_, rtol=opts["rtol"], atol=opts["atol"],
                         equal_nan=opts["equal_nan"], check_dtype=opts["check_dtype"])
        return
    if isinstance(actual, TensorBase) and isinstance(expected, TensorBase):
        _compare_tensors(actual, expected, id_, **opts)
        return
    if (isinstance(actual, Sequence) and isinstance(expected, Sequence)
            and not isinstance(actual, str) and not isinstance(expected, str)):
        if len(actual) != len(expected):
            raise _Mismatch(AssertionError, f"The length of the sequences mismatch: "
                                            f"{len(actual)} != {len(expected)}", id_)
        for i, (a, e) in enumerate(zip(actual, expected)):
            _compare(a, e, (*id_, i), opts)
        return
    if isinstance(actual, Mapping) and isinstance(expected, Mapping):
        a_keys, e_keys = set(actual.keys()), set(expected.keys())
        if a_keys != e_keys:
            missing = sorted(e_keys - a_keys, key=str)
            extra = sorted(a_keys - e_keys, key=str)
            raise _Mismatch(AssertionError,
                            f"The keys of the mappings do not match:\n"
                            f"Missing keys in the actual mapping: {missing}\n"
                            f"Additional keys in the actual mapping: {extra}", id_)
        for key in actual:
            _compare(actual[key], expected[key], (*id_, key), opts)
        return
    raise _Mismatch(TypeError, f"No comparison pair was able to handle inputs of type "
                               f"{type(actual)} and {type(expected)}.", id_)


def assert_close(actual: Any, expected: Any, *, allow_subclasses: bool = True,
                 rtol: float | None = None, atol: float | None = None, equal_nan: bool = False,
                 check_device: bool = True, check_dtype: bool = True, check_layout: bool = True,
                 check_stride: bool = False, msg: str | Callable[[str], str] | None = None
                 ) -> None:
    r"""Assert that ``actual`` and ``expected`` are close.

    Tensors match when ``|actual - expected| <= atol + rtol * |expected|`` elementwise, after
    their shapes, devices, dtypes (and strides, when asked) were checked. Without ``rtol`` and
    ``atol`` the tolerances come from the dtype, as in PyTorch: float16 ``(1e-3, 1e-5)``,
    bfloat16 ``(1.6e-2, 1e-5)``, float32 ``(1.3e-6, 1e-5)``, float64 ``(1e-7, 1e-7)``, any
    other dtype exact. Python numbers, booleans, ``None``, sequences and mappings of those
    are compared element by element.

    Parameters
    ----------
    actual, expected : Any
        The values to compare.
    allow_subclasses : bool
        Allow tensors of different ``Tensor`` subclasses.
    rtol, atol : float, optional
        Relative and absolute tolerance; give both or neither.
    equal_nan : bool
        Treat two NaNs as equal.
    check_device, check_dtype, check_stride : bool
        Require equal devices, dtypes, strides. With ``check_dtype=False`` the values are
        compared in the promoted dtype.
    check_layout : bool
        Accepted for PyTorch compatibility; ember tensors are all strided.
    msg : str or callable, optional
        A message to raise instead of the generated one, or a function of the generated one.

    Raises
    ------
    AssertionError
        When the values differ; the message names the number of mismatched elements and the
        greatest absolute and relative differences with their indices.
    ValueError
        When only one of ``rtol`` and ``atol`` is given.
    TypeError
        When the inputs are of types that cannot be compared.
    """
    __tracebackhide__ = True
    opts = dict(allow_subclasses=allow_subclasses, rtol=rtol, atol=atol, equal_nan=equal_nan,
                check_device=check_device, check_dtype=check_dtype, check_stride=check_stride)
    try:
        _compare(actual, expected, (), opts)
    except _Mismatch as m:
        raise m.to_error(msg) from None


def assert_allclose(actual: Any, expected: Any, rtol: float | None = None,
                    atol: float | None = None, equal_nan: bool = True, msg: str = "") -> None:
    """Deprecated (as in PyTorch): ``assert_close`` with ``check_dtype=False``, NaNs equal and
    the old tolerances (float16 ``1e-3/1e-3``, float32 ``1e-4/1e-5``, float64 ``1e-5/1e-8``).

    Non-tensor inputs are made tensors, ``expected`` in ``actual``'s dtype.
    """
    __tracebackhide__ = True
    warnings.warn("`ember.testing.assert_allclose()` is deprecated since 1.12 and will be "
                  "removed in a future release. Please use `ember.testing.assert_close()` "
                  "instead.", FutureWarning, stacklevel=2)
    if not isinstance(actual, TensorBase):
        actual = ember.tensor(actual)
    if not isinstance(expected, TensorBase):
        expected = ember.tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        rtol, atol = _default_tolerances(
            actual.dtype, expected.dtype,
            precisions={ember.float16: (1e-3, 1e-3), ember.float32: (1e-4, 1e-5),
                        ember.float64: (1e-5, 1e-8)})
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=True,
                 check_dtype=False, check_stride=False, msg=msg or None)
