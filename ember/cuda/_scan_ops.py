"""CUDA kernels of the scans and of stream compaction: cumsum, cumprod,
logcumsumexp (``emc_scan``), cummax and cummin (``emc_cumext``), nonzero,
masked_select and masked_scatter (the mask's count per fixed tile, scanned by
``emc_mask_count``, then one pass that ranks each tile's selected elements and
moves them).

Scans take the CPU's dtypes and accumulators (integers in int64, float16 and
bfloat16 through float32, a double accumulator for float32).  A compaction's
output size is the mask's count: one device-to-host copy of 8 bytes, as in
torch.  Each op records the CPU path's autograd node."""

from __future__ import annotations

import ctypes
from typing import Any

import ember
from ember.cuda import _kernels as K
from ember.cuda._device_ops import _wrap
from ember.cuda._dispatch import (
    _FLOATS,
    _TORCH_NAMES,
    _binary,
    _empty,
    _grad_on,
    _lib,
    _not_implemented,
    _numel,
    _ptr,
    _record,
    _stream,
    _write_out,
    copy_into,
    kernel,
)

_SC_SUM, _SC_PROD, _SC_MAX, _SC_MIN, _SC_LOGSUMEXP = 0, 1, 2, 3, 4
_I64 = ember.int64


def _compute_dtype(dt: Any) -> Any:
    """The kernels' dtype for a scan in ``dt`` (the CPU's rule)."""
    if dt == ember.float64:
        return dt
    return ember.float32 if dt.is_floating_point else _I64


def _scan(name: str, op: int, input: Any, dim: Any, rdt: Any) -> Any:
    """The inclusive scan of ``input`` (detached) along ``dim``, in ``rdt``."""
    if input.dtype.is_complex or rdt.is_complex:
        raise _not_implemented(name, input.dtype)
    d = _wrap(dim, input.dim(), name)
    cdt = _compute_dtype(rdt)
    x = input.detach()
    x = (x if x.dtype == rdt else x._cast(rdt.code))
    x = (x if x.dtype == cdt else x._cast(cdt.code)).contiguous()
    shape = tuple(x.shape)
    r = _empty(shape, cdt, input)
    if r.numel():
        O = _numel(shape[:d])
        Kn = shape[d] if shape else 1
        In = _numel(shape[d + 1:])
        rc = _lib().emc_scan(op, cdt.code, _ptr(x), O, Kn, In, _ptr(r), _stream(r))
        if rc == 10001:
            raise _not_implemented(name, rdt)
        K.check(rc, name)
    return r if cdt == rdt else r._cast(rdt.code)


def _cumulative(name: str, op: int):
    def run(input, dim, *, dtype=None, out=None):
        rdt = dtype if dtype is not None else out.dtype if out is not None else \
            (_I64 if not input.dtype.is_floating_point and not input.dtype.is_complex
             else input.dtype)
        r = _scan(name, op, input, dim, rdt)
        if out is not None:
            return _write_out(out, r, name)
        if rdt.is_floating_point:
            _record(name, (input,), r, {"dim": _wrap(dim, input.dim(), name)})
        return r
    return run


kernel("cumsum")(_cumulative("cumsum", _SC_SUM))
kernel("cumprod")(_cumulative("cumprod", _SC_PROD))


@kernel("logcumsumexp")
def _logcumsumexp(input, dim, *, out=None):
    if input.dtype not in _FLOATS:
        raise _not_implemented("logcumsumexp", input.dtype)
    r = _scan("logcumsumexp", _SC_LOGSUMEXP, input, dim, input.dtype)
    if out is not None:
        return _write_out(out, r, "logcumsumexp")
    _record("logcumsumexp", (input,), r, {"dim": _wrap(dim, input.dim(), "logcumsumexp")})
    return r


def _cumext(name: str, op: int):
    def run(input, dim):
        if input.dtype.is_complex:
            raise _not_implemented(name, input.dtype)
        d = _wrap(dim, input.dim(), name)
        cdt = _compute_dtype(input.dtype)
        x = input.detach()
        x = (x if x.dtype == cdt else x._cast(cdt.code)).contiguous()
        shape = tuple(x.shape)
        v, i = _empty(shape, cdt, input), _empty(shape, _I64, input)
        if v.numel():
            K.check(_lib().emc_cumext(op, cdt.code, _ptr(x), _numel(shape[:d]),
                                      shape[d] if shape else 1, _numel(shape[d + 1:]), _ptr(v),
                                      _ptr(i), _stream(v)), name)
        if cdt != input.dtype:
            v = v._cast(input.dtype.code)
        _record(name, (input,), (v, i), {"dim": d})
        from ember._C.reduce import return_types
        return getattr(return_types, name)(v, i)
    return run


kernel("cummax")(_cumext("cummax", _SC_MAX))
kernel("cummin")(_cumext("cummin", _SC_MIN))


# ---------------------------------------------------------------------------
# stream compaction

def _bool_mask(x: Any) -> Any:
    """x != 0 as a contiguous bool tensor (x itself when it is one)."""
    m = x.detach()
    if m.dtype != ember.bool:
        if m.dtype.is_complex:
            raise _not_implemented("nonzero", m.dtype)
        m = _binary("ne", m, 0)
    return m.contiguous()


def _positions(m: Any) -> tuple:
    """(offs, count): offs[b] the number of True before the mask's tile b
    (``emc_mask_tiles(n) + 1`` int64 on the device, the last one the total) and the
    total, read back with one 8-byte copy."""
    n = m.numel()
    tiles = _lib().emc_mask_tiles(n)
    offs = _empty((tiles + 1,), _I64, m)
    s = _stream(offs)
    K.check(_lib().emc_mask_count(_ptr(m), n, _ptr(offs), s), "nonzero")
    cnt = ctypes.c_int64(0)
    K.memcpy(ctypes.addressof(cnt), offs.data_ptr() + 8 * tiles, 8, K.D2H, s, True)
    return offs, cnt.value


@kernel("nonzero", "argwhere")
def _nonzero(input, *, out=None, as_tuple=False):
    x = input.reshape(1) if as_tuple and input.dim() == 0 else input
    m = _bool_mask(x)
    shape = tuple(m.shape)
    pos, cnt = _positions(m)
    r = _empty((cnt, len(shape)), _I64, input)
    if cnt and shape:
        dims = (ctypes.c_int64 * len(shape))(*shape)
        K.check(_lib().emc_nonzero(_ptr(m), len(shape), dims, m.numel(), _ptr(pos), _ptr(r),
                                   _stream(r)), "nonzero")
    if as_tuple:
        return tuple(r.select(1, j) for j in range(r.shape[1]))
    return r if out is None else _write_out(out, r, "nonzero")


def _mask_arg(mask: Any, like: Any, name: str) -> Any:
    if not isinstance(mask, ember.Tensor):
        raise TypeError(f"{name}(): argument 'mask' (position 2) must be Tensor, not "
                        f"{type(mask).__name__}")
    if mask.device != like.device:
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least "
                           f"two devices, {like.device} and {mask.device}! (when checking "
                           f"argument for argument mask in method {name})")
    return mask


@kernel("masked_select")
def _masked_select(input, mask, *, out=None):
    m = _mask_arg(mask, input, "masked_select")
    if m.dtype != ember.bool:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    shape = ember.broadcast_shapes(tuple(input.shape), tuple(m.shape))
    x = input.detach().expand(shape).contiguous()
    mc = m.detach().expand(shape).contiguous()
    pos, cnt = _positions(mc)
    r = _empty((cnt,), input.dtype, input)
    if cnt:
        K.check(_lib().emc_masked_select(input.element_size(), _ptr(x), _ptr(mc), _ptr(pos),
                                         mc.numel(), _ptr(r), _stream(r)), "masked_select")
    if _grad_on(input):
        _record("masked_select", (input, mask), r, (shape,))
    return r if out is None else _write_out(out, r, "masked_select")


@kernel("masked_scatter")
def _masked_scatter(input, mask, source):
    m = _mask_arg(mask, input, "masked_scatter")
    if m.dtype != ember.bool:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with "
                           f"dtype {str(m.dtype).replace('ember.', '')}")
    if not isinstance(source, ember.Tensor):
        raise TypeError(f"masked_scatter(): argument 'source' (position 3) must be Tensor, not "
                        f"{type(source).__name__}")
    if source.dtype != input.dtype:
        raise RuntimeError(f"masked_scatter_: expected self and source to have same dtypes but "
                           f"got {_TORCH_NAMES[input.dtype]} and {_TORCH_NAMES[source.dtype]}")
    shape = ember.broadcast_shapes(tuple(input.shape), tuple(m.shape))
    r = _empty(shape, input.dtype, input)
    copy_into(r, input)
    mc = m.detach().expand(shape).contiguous()
    src = source.detach().contiguous()
    pos, cnt = _positions(mc)
    if cnt > src.numel():
        raise RuntimeError("Number of elements of source < number of ones in mask")
    if cnt:
        K.check(_lib().emc_masked_scatter(input.element_size(), _ptr(r), _ptr(mc), _ptr(pos),
                                          mc.numel(), _ptr(src), _stream(r)), "masked_scatter")
    if _grad_on(input, source):
        _record("masked_scatter", (input, mask, source), r, (tuple(source.shape),))
    return r
