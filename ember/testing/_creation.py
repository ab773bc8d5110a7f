"""``make_tensor``: random test tensors in PyTorch's default value ranges."""
from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import ember

__all__ = ["make_tensor"]

_FLOATING = (ember.float16, ember.bfloat16, ember.float32, ember.float64)
_INTEGRAL = (ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64)


def make_tensor(*shape, dtype: ember.dtype, device, low: float | None = None,
                high: float | None = None, requires_grad: bool = False,
                noncontiguous: bool = False, exclude_zero: bool = False,
                memory_format=None) -> ember.Tensor:
    """A tensor of ``shape`` filled with random values from ``[low, high)``.

    Defaults are PyTorch's: ``[-9, 9)`` for floating dtypes, ``[-9, 10)`` for integers
    (clamped to the dtype's range, so ``[0, 10)`` for uint8), ``{False, True}`` for bool.

    Parameters
    ----------
    *shape : int or sequence of int
        The shape, as separate ints or one sequence.
    dtype : ember.dtype
        The dtype (floating, integral or bool).
    device : str or ember.device
        Where the tensor lives.
    low, high : float, optional
        The value interval; clamped to what ``dtype`` can hold. For integral dtypes both are
        rounded up, ``high`` stays exclusive.
    requires_grad : bool
        Floating dtypes only.
    noncontiguous : bool
        Return a non-contiguous view (every other element of a tensor twice as wide).
    exclude_zero : bool
        Replace zeros by the dtype's smallest normal number (1 for integral dtypes).
    memory_format : optional
        Passed to ``clone``; not together with ``noncontiguous``.

    Returns
    -------
    ember.Tensor
    """
    integral = dtype is ember.bool or dtype in _INTEGRAL

    def low_high(lowest, highest_excl, default_low, default_high):
        lo = default_low if low is None else low
        hi = default_high if high is None else high
        if any(isinstance(v, float) and math.isnan(v) for v in (lo, hi)):
            raise ValueError(f"`low` and `high` cannot be NaN, but got low={lo} and high={hi}")
        if lo == hi and not integral:
            warnings.warn("Passing `low==high` to `ember.testing.make_tensor` for floating types "
                          "is deprecated. Use `ember.full(...)` instead.", FutureWarning,
                          stacklevel=3)
        elif lo >= hi:
            raise ValueError(f"`low` must be less than `high`, but got {lo} >= {hi}")
        elif hi < lowest or lo >= highest_excl:
            raise ValueError(f"The value interval specified by `low` and `high` is [{lo}, {hi}), "
                             f"but {dtype} only supports [{lowest}, {highest_excl})")
        lo, hi = min(max(lo, lowest), highest_excl), min(max(hi, lowest), highest_excl)
        return (math.ceil(lo), math.ceil(hi)) if integral else (lo, hi)

    if len(shape) == 1 and isinstance(shape[0], Sequence):
        shape = shape[0]
    shape = tuple(shape)
    if noncontiguous and memory_format is not None:
        raise ValueError(f"The parameters `noncontiguous` and `memory_format` are mutually "
                         f"exclusive, but got noncontiguous={noncontiguous} and "
                         f"memory_format={memory_format}")
    if requires_grad and integral:
        raise ValueError(f"`requires_grad=True` is not supported for boolean and integral "
                         f"dtypes, but got dtype={dtype}")
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:
        shape = (*shape[:-1], 2 * shape[-1])

    if dtype is ember.bool:
        lo, hi = low_high(0, 2, 0, 2)
        result = ember.randint(lo, hi, shape, device=device, dtype=dtype)
    elif dtype in _INTEGRAL:
        info = ember.iinfo(dtype)
        lo, hi = low_high(info.min, info.max + (dtype is not ember.int64), -9, 10)
        result = ember.randint(lo, hi, shape, device=device, dtype=dtype)
    elif dtype in _FLOATING:
        info = ember.finfo(dtype)
        lo, hi = low_high(info.min, info.max, -9, 9)
        result = ember.empty(shape, device=device, dtype=dtype)
        if hi - lo >= info.max:      # the span itself would overflow the dtype
            result.uniform_(lo / 2, hi / 2).mul_(2)
        else:
            result.uniform_(lo, hi)
    else:
        raise TypeError(f"The requested dtype '{dtype}' is not supported by "
                        f"ember.testing.make_tensor().")

    if noncontiguous:
        result = result[..., 1::2]
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        result[result == 0] = 1 if integral else ember.finfo(dtype).tiny
    if not integral:
        result.requires_grad = requires_grad
    return result
