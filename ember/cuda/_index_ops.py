"""CUDA kernels of advanced indexing and of the sampling factories:
``x[idx]`` / ``x[idx] = v`` with integer and boolean index tensors (any mix with
ints, slices, None and Ellipsis, PyTorch's placement of the indexed dims),
``index_put`` / ``index_put_`` (``accumulate=True`` sums duplicates; in index order
under ``use_deterministic_algorithms(True)``), ``randperm`` and ``multinomial``
(the CPU generator's streams).

The index rules mirror ``ember._C.index`` (the CPU): an item list splits into a
basic view and index tensors, a boolean mask becomes its coordinates (found by a
stable sort of the mask on the device), and each index tensor is checked against
its dim with the CPU's message.  Index tensors on the CPU and 0-dim values on the
CPU are moved to the device, as PyTorch allows."""

from __future__ import annotations

import ctypes
from typing import Any

import ember
from ember._C import core as _core
from ember.cuda import _kernels as K
from ember.cuda._device_ops import (
    _basic_index,
    _deterministic,
    _index_select,
    _philox,
    _sorted_rows,
)
from ember.cuda._dispatch import (
    _FLOATS,
    _TORCH_NAMES,
    _empty,
    _grad_on,
    _lib,
    _not_implemented,
    _numel,
    _ptr,
    _record,
    _stream,
    _where,
    _write_out,
    copy_into,
    kernel,
    own_device_check,
)

_I64, _BOOL, _U8 = ember.int64, ember.bool, ember.uint8


def _same_device_error(a: Any, b: Any, arg: str, op: str) -> RuntimeError:
    return RuntimeError(f"Expected all tensors to be on the same device, but found at least "
                        f"two devices, {a} and {b}! (when checking argument for argument {arg} "
                        f"in method {op})")


# ---------------------------------------------------------------------------
# the index list (ember._C.index's rules)

def _seq_as_tuple(seq: Any) -> bool:
    """PyTorch's treatSequenceAsTuple for a non-tuple sequence index."""
    if len(seq) >= 32:
        return False
    for it in seq:
        if it is None or it is Ellipsis or isinstance(it, (slice, ember.Tensor, list, tuple)):
            return True
        if hasattr(it, "__array_interface__") or (hasattr(it, "__len__") and
                                                  not isinstance(it, (str, bytes))):
            return True
    return False


def _index_tensor(t: Any) -> Any:
    if t.dtype.is_floating_point or t.dtype.is_complex:
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    return t


def _norm_item(it: Any) -> Any:
    """One index item -> int, bool, slice, None, Ellipsis or an index tensor."""
    if it is None or it is Ellipsis or isinstance(it, (bool, int)):
        return it
    if isinstance(it, slice):
        if any(isinstance(s, ember.Tensor) for s in (it.start, it.stop, it.step)):
            return slice(*[None if s is None else s.__index__()
                           for s in (it.start, it.stop, it.step)])
        return it
    if isinstance(it, ember.Tensor):
        _index_tensor(it)
        if it.dim() == 0:
            return bool(it.item()) if it.dtype in (_BOOL, _U8) else int(it.item())
        return it
    if type(it).__module__ == "numpy" and type(it).__name__ in ("bool_", "bool"):
        return bool(it)
    if hasattr(it, "__index__") and not hasattr(it, "__len__"):
        return it.__index__()
    if isinstance(it, (list, tuple)) or hasattr(it, "__array_interface__") or \
            hasattr(it, "__len__"):
        if isinstance(it, (list, tuple)) and len(it) == 0:
            return ember.tensor([], dtype=_I64)
        return _index_tensor(ember.tensor(it))
    raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                     f"Variables are valid indices (got {type(it).__name__})")


def normalize(idx: Any) -> tuple:
    """``x[idx]``'s items, each an int, bool, slice, None, Ellipsis or index tensor."""
    if isinstance(idx, tuple):
        items = idx
    elif isinstance(idx, list) and _seq_as_tuple(idx):
        items = tuple(idx)
    else:
        items = (idx,)
    return tuple(_norm_item(it) for it in items)


def _is_mask(t: Any) -> bool:
    return t.dtype in (_BOOL, _U8)


def _split(x: Any, items: tuple) -> tuple:
    """(basic index tuple for the view, [(view dim, index tensor)], trivial?)"""
    consumed = 0
    seen_ell = False
    for it in items:
        if it is Ellipsis:
            if seen_ell:
                raise IndexError("an index can only have a single ellipsis ('...')")
            seen_ell = True
        elif it is None or isinstance(it, bool):
            pass
        elif isinstance(it, ember.Tensor):
            consumed += it.dim() if _is_mask(it) else 1
        else:
            consumed += 1
    if consumed > x.dim():
        raise IndexError(f"too many indices for tensor of dimension {x.dim()}")
    ell = x.dim() - consumed
    basic, adv, trivial, vd = [], [], True, 0
    for it in items:
        if it is Ellipsis:
            basic.append(Ellipsis)
            vd += ell
        elif it is None:
            basic.append(None)
            trivial = False
            vd += 1
        elif isinstance(it, bool):
            basic.append(None)
            trivial = False
            adv.append((vd, ember.tensor([it], device=x.device)))
            vd += 1
        elif isinstance(it, ember.Tensor):
            adv.append((vd, it))
            k = it.dim() if _is_mask(it) else 1
            basic.extend([slice(None)] * k)
            vd += k
        else:
            basic.append(it)
            if not (isinstance(it, slice) and it == slice(None)):
                trivial = False
            if isinstance(it, slice):
                vd += 1
    return tuple(basic), adv, trivial


def _to_device(t: Any, dev: Any) -> Any:
    return t if t.device == dev else t.to(dev)


def nonzero_coords(mask: Any) -> Any:
    """(nnz, mask.dim()) int64 coordinates of the nonzero elements of a CUDA tensor, in
    row-major order: a stable descending sort of the flattened mask puts them first
    in index order; their flat positions unravel with the mask's strides."""
    m = mask.detach()
    m = (m if m.dtype == _BOOL else m != 0)._cast(_U8.code)     # 0 / 1 keys for the sort
    flat = m.reshape(-1)
    n = flat.numel()
    shape = tuple(mask.shape)
    if n == 0:
        return _empty((0, len(shape)), _I64, mask)
    with ember.no_grad():
        nnz = int(flat.sum().item())
        order = _sorted_rows("nonzero", flat, 0, None, True, False)[1]
        pos = order.narrow(0, 0, nnz)
        if not shape:
            return _empty((nnz, 0), _I64, mask)
        cols, acc = [], 1
        for s in reversed(shape):
            cols.append(ember.remainder(ember.floor_divide(pos, acc), s))
            acc *= s
        return ember.stack(list(reversed(cols)), 1)


def _mask_to_long(v: Any, mask: Any, at: int) -> list:
    """Coordinates of a bool/uint8 mask over v's dims at .. at + mask.dim() - 1."""
    if at + mask.dim() > v.dim():
        raise IndexError(f"too many indices for tensor of dimension {v.dim()}")
    for j in range(mask.dim()):
        if mask.shape[j] != v.shape[at + j]:
            raise IndexError(f"The shape of the mask {list(mask.shape)} at index {j} does not "
                             f"match the shape of the indexed tensor {list(v.shape)} at index "
                             f"{at + j}")
    nz = nonzero_coords(_to_device(mask, v.device))
    return [nz.select(1, j) for j in range(mask.dim())]


def _adv_to_ind(v: Any, adv: list) -> list:
    ind = [None] * v.dim()
    for vd, t in adv:
        if _is_mask(t):
            for j, c in enumerate(_mask_to_long(v, t, vd)):
                ind[vd + j] = c
        else:
            ind[vd] = _to_device(t, v.device)
    while ind and ind[-1] is None:
        ind.pop()
    return ind


def user_indices(v: Any, indices: Any, op: str) -> list:
    """index_put's indices (a tuple of None, integer or bool tensors, lists) -> one
    entry per leading dim, None or an integer tensor on v's device."""
    if isinstance(indices, ember.Tensor) or not isinstance(indices, (tuple, list)):
        indices = (indices,)
    ind: list = []
    for it in indices:
        if it is None:
            ind.append(None)
            continue
        t = it if isinstance(it, ember.Tensor) else ember.tensor(it)
        if _is_mask(t):
            ind.extend(_mask_to_long(v, t, len(ind)))
        else:
            ind.append(_to_device(_index_tensor(t), v.device))
    if len(ind) > v.dim():
        raise IndexError(f"too many indices for tensor of dimension {v.dim()}")
    return ind


def _prep(v: Any, ind: list) -> tuple:
    """(indexed dims, adjacent?, per indexed dim its index broadcast to the common
    shape B as contiguous int64 in [0, size), B)."""
    adv = [d for d, t in enumerate(ind) if t is not None]
    idx = [ind[d] for d in adv]
    try:
        B = ember.broadcast_shapes(*[tuple(t.shape) for t in idx])
    except RuntimeError:
        raise IndexError("shape mismatch: indexing tensors could not be broadcast together "
                         "with shapes " + ", ".join(str(list(t.shape)) for t in idx)) from None
    cols = []
    with ember.no_grad():
        for d, t in zip(adv, idx):
            t = t.detach()
            t = (t if t.dtype == _I64 else t._cast(_I64.code)).expand(B).contiguous()
            size = v.shape[d]
            if t.numel():
                bad = (t < -size) | (t >= size)
                if bad.any().item():
                    first = int(ember.argmax(bad.reshape(-1)._cast(_U8.code)).item())
                    val = int(t.reshape(-1)[first].item())
                    raise IndexError(f"index {val} is out of bounds for dimension {d} with "
                                     f"size {size}")
                t = ember.remainder(t, size)
            cols.append(t)
    adjacent = adv[-1] - adv[0] == len(adv) - 1
    return adv, adjacent, cols, tuple(B)


def _layout(v: Any, adv: list, adjacent: bool, B: tuple) -> tuple:
    """(rest: v's non-indexed dims, the result shape, the permutation taking
    B + rest to the result's order)."""
    rest = [d for d in range(v.dim()) if d not in adv]
    npre = adv[0] if adjacent else 0
    nb = len(B)
    rs = [v.shape[d] for d in rest]
    full = tuple(rs[:npre]) + B + tuple(rs[npre:])
    perm = list(range(nb, nb + npre)) + list(range(nb)) + list(range(nb + npre, nb + len(rest)))
    return rest, full, perm


def index_get(v: Any, ind: list) -> tuple:
    """v[ind] (ind: None or integer tensors per leading dim): the result, and the
    processed index list (what the backward's index_put reads)."""
    adv, adjacent, cols, B = _prep(v, ind)
    rest, full, perm = _layout(v, adv, adjacent, B)
    with ember.no_grad():
        if len(adv) == 1:                    # one index tensor: an index_select in place
            out = _index_select(v.detach(), adv[0], cols[0].reshape(-1)).view(full)
            return out, [None] * adv[0] + [cols[0]] + [None] * (len(ind) - adv[0] - 1)
        vp = v.detach().permute(*(adv + rest)).contiguous()
        A = _numel(tuple(v.shape[d] for d in adv))
        R = _numel(tuple(v.shape[d] for d in rest))
        lin = cols[0]
        for d, c in zip(adv[1:], cols[1:]):
            lin = lin * v.shape[d] + c
        out = _index_select(vp.reshape(A, R), 0, lin.reshape(-1))
        out = out.view(B + tuple(v.shape[d] for d in rest))
        if perm != sorted(perm):
            out = out.permute(*perm).contiguous()
    assert tuple(out.shape) == full
    pind = [None] * len(ind)
    for d, c in zip(adv, cols):
        pind[d] = c
    return out, pind


def _value_tensor(value: Any, v: Any, op: str) -> Any:
    if isinstance(value, ember.Tensor):
        if value.dtype != v.dtype:
            raise RuntimeError(f"Index put requires the source and destination dtypes match, "
                               f"got {_TORCH_NAMES[v.dtype]} for the destination and "
                               f"{_TORCH_NAMES[value.dtype]} for the source.")
        if value.device != v.device:
            if value.dim() != 0:
                raise _same_device_error(v.device, value.device, "values", op)
            value = value.to(v.device)
        return value.detach()
    return ember.tensor(value, dtype=v.dtype, device=v.device)


def index_put_into(v: Any, ind: list, value: Any, accumulate: bool, op: str) -> list:
    """v[ind] = value (+= with accumulate) in place, no autograd; returns the
    processed index list."""
    adv, adjacent, cols, B = _prep(v, ind)
    rest, full, perm = _layout(v, adv, adjacent, B)
    val = _value_tensor(value, v, op)
    while val.dim() > len(full) and val.shape[0] == 1:
        val = val.squeeze(0)
    try:
        val = val.expand(full)
    except RuntimeError:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(val.shape)} cannot be "
                           f"broadcast to indexing result of shape {list(full)}") from None
    if perm != sorted(perm):                 # to B + rest, the kernel's order
        inv = [0] * len(perm)
        for i, p in enumerate(perm):
            inv[p] = i
        val = val.permute(*inv)
    val = val.contiguous()
    n, R = _numel(B), _numel(tuple(v.shape[d] for d in rest))
    pind = [None] * len(ind)
    for d, c in zip(adv, cols):
        pind[d] = c
    if n * R == 0:
        return pind
    k = len(adv)
    ptrs = (ctypes.c_void_p * k)(*[c.data_ptr() for c in cols])
    sizes = (ctypes.c_int64 * k)(*[v.shape[d] for d in adv])
    strides = (ctypes.c_int64 * k)(*[v.stride()[d] for d in adv])
    rshape = tuple(v.shape[d] for d in rest)
    rst, acc = [], 1
    for s in reversed(rshape):
        rst.append(acc)
        acc *= s
    sl = K.make_nd(rshape, tuple(v.stride()[d] for d in rest), tuple(reversed(rst)))
    det = _deterministic(v.dtype) if accumulate else \
        int(ember.are_deterministic_algorithms_enabled())
    s = _stream(v)
    rc = _lib().emc_index_put(v.dtype.code, _ptr(v), k, ptrs, sizes, strides, n, _ptr(val), R,
                              ctypes.byref(sl), int(bool(accumulate)), det, s)
    if rc == 10001:
        raise _not_implemented(op, v.dtype)
    K.check(rc, op)
    K.check_index(op, s)
    return pind


# ---------------------------------------------------------------------------
# the ops

@kernel("getitem")
def _getitem(self, idx):
    items = normalize(idx)
    basic, adv, trivial = _split(self, items)
    v = self if trivial else _basic_index(self, basic)
    if not adv:
        return v
    out, pind = index_get(v, _adv_to_ind(v, adv))
    _record("index", (v,), out, (tuple(pind), tuple(v.shape)))
    return out


def _setitem_impl(x: Any, items: tuple, value: Any) -> None:
    basic, adv, trivial = _split(x, items)
    v = x if trivial else _basic_index(x, basic)
    with ember.no_grad():
        if not adv:
            if isinstance(value, ember.Tensor):
                val = value
                while val.dim() > v.dim() and val.shape[0] == 1:
                    val = val.squeeze(0)
                copy_into(v, val.detach().expand(tuple(v.shape)))
            else:
                copy_into(v, ember.tensor(value, dtype=v.dtype))
            return
        if len(adv) == 1 and adv[0][0] == 0:
            m = adv[0][1]
            one = not isinstance(value, ember.Tensor) or value.numel() == 1
            if m.dtype == _BOOL and tuple(m.shape) == tuple(v.shape) and m.dim() and one:
                # a masked fill, as on the CPU (a one-element tensor value is read)
                val = value.item() if isinstance(value, ember.Tensor) else value
                fill = ember.full((), val, dtype=v.dtype, device=v.device)
                copy_into(v, _where(_to_device(m, v.device), fill, v.detach()))
                return
        index_put_into(v, _adv_to_ind(v, adv), value, False, "index_put_")


@kernel("setitem")
def _setitem(self, idx, value):
    items = normalize(idx)
    if _grad_on(self, value):
        _core._check_inplace(self, "setitem")
        old = self.clone() if self.requires_grad else self.detach().clone()
        r = old.detach().clone()
        _setitem_impl(r, items, value)
        _core._record_op("setitem", (old, value), r, (items,))
        _core._commit_inplace(self, r)
        return None
    _setitem_impl(self, items, value)
    self._bump_version()
    return None


def _no_adv_put(r: Any, value: Any, accumulate: bool, op: str) -> None:
    val = _value_tensor(value, r, op)
    with ember.no_grad():
        copy_into(r, (r + val) if accumulate else val.expand(tuple(r.shape)))


@kernel("index_put")
def _index_put(input, indices, values, accumulate=False):
    op = "index_put"
    ind = user_indices(input, indices, op)
    r = input.detach().clone()
    if any(t is not None for t in ind):
        ind = index_put_into(r, ind, values, accumulate, op)
    else:
        _no_adv_put(r, values, accumulate, op)
    _record("index_put", (input, values), r, (tuple(ind), bool(accumulate)))
    return r


@kernel("index_put_")
def _index_put_(self, indices, values, accumulate=False):
    op = "index_put_"
    if _grad_on(self, values):
        _core._check_inplace(self, op)
        old = self.clone() if self.requires_grad else self.detach().clone()
        return _core._commit_inplace(self, _index_put(old, indices, values, accumulate))
    ind = user_indices(self, indices, op)
    if any(t is not None for t in ind):
        index_put_into(self, ind, values, accumulate, op)
    else:
        _no_adv_put(self, values, accumulate, op)
    self._bump_version()
    return self


own_device_check("getitem", "setitem", "index_put", "index_put_")


# ---------------------------------------------------------------------------
# sampling: the CPU generator's streams

_INT_MAX = {ember.uint8: 255, ember.int8: 127, ember.int16: 32767, ember.int32: 2**31 - 1}


@kernel("randperm")
def _randperm(n, *, generator=None, out=None, dtype=None, layout=None, device=None,
              requires_grad=False, pin_memory=False):
    if isinstance(n, bool) or not hasattr(n, "__index__"):
        raise TypeError(f"randperm(): argument 'n' must be int, not {type(n).__name__}")
    nn = n.__index__()
    if nn < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {nn}: [{nn}]")
    dt = dtype if dtype is not None else (out.dtype if isinstance(out, ember.Tensor) else _I64)
    if dt == _BOOL:
        raise NotImplementedError("\"randperm\" not implemented for 'Bool'")
    if nn > 0 and nn - 1 > _INT_MAX.get(dt, nn):
        raise RuntimeError(f"randperm: n={nn} does not fit in {dt}")
    t = ember.empty((nn,), dtype=_I64, device=device if out is None else out.device)
    seed, off = _philox(generator, t.device.index or 0)
    if nn:
        K.check(_lib().emc_randperm(_ptr(t), nn, ctypes.c_uint64(seed), ctypes.c_uint64(off),
                                    _stream(t)), "randperm")
    if dt != _I64:
        t = t._cast(dt.code)
    if out is not None:
        return _write_out(out, t, "randperm")
    return t.requires_grad_(True) if requires_grad else t


@kernel("multinomial")
def _multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
    if isinstance(num_samples, bool) or not hasattr(num_samples, "__index__"):
        raise TypeError(f"multinomial(): argument 'num_samples' must be int, not "
                        f"{type(num_samples).__name__}")
    k = num_samples.__index__()
    if input.dim() < 1 or input.dim() > 2:
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if input.dtype not in _FLOATS:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{_TORCH_NAMES[input.dtype]}")
    if k <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    ncat = input.shape[-1]
    rows = input.shape[0] if input.dim() == 2 else 1
    if not replacement and k > ncat:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    if ncat == 0:
        raise RuntimeError("multinomial: the probability distribution has no categories")
    p = input.detach().contiguous()
    r = _empty((rows, k) if input.dim() == 2 else (k,), _I64, input)
    status = ember.zeros((), dtype=ember.int32, device=input.device)
    seed, off = _philox(generator, input.device.index or 0)
    if rows:
        K.check(_lib().emc_multinomial(p.dtype.code, _ptr(p), rows, ncat, k, int(bool(replacement)),
                                       _ptr(r), ctypes.c_uint64(seed), ctypes.c_uint64(off),
                                       _ptr(status), _stream(r)), "multinomial")
        code = int(status.item())
        if code == 1:
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        if code == 2:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        if code == 3:
            raise RuntimeError("invalid multinomial distribution (with replacement=False, not "
                               "enough non-negative category to sample)")
    if out is not None:
        if out.dtype != _I64:
            raise RuntimeError(f"multinomial: expected out to have dtype Long, got "
                               f"{_TORCH_NAMES[out.dtype]}")
        return _write_out(out, r, "multinomial")
    return r


# ---------------------------------------------------------------------------
# scatter_reduce: the CPU's composition over the scatter kernels

_SCATTER_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


@kernel("scatter_reduce")
def _scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    from ember.cuda._device_ops import _scatter, _wrap

    if reduce not in _SCATTER_REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    d = _wrap(dim, input.dim(), "scatter_reduce")
    with ember.no_grad():
        r, s = input.detach(), src.detach()
        if not include_self:
            r = _scatter(r, d, index, 0 if reduce in ("sum", "mean") else 1
                         if reduce == "prod" else s)
        if reduce == "mean":
            r = _scatter(r, d, index, s, reduce="add")
            cnt = ember.full(tuple(input.shape), 1 if include_self else 0, dtype=_I64,
                             device=input.device)
            cnt = ember.clamp(_scatter(cnt, d, index, 1, reduce="add"), min=1)
            q = ember.div(r, cnt) if input.dtype.is_floating_point else \
                ember.floor_divide(r, cnt)
            r = q if q.dtype == input.dtype else q._cast(input.dtype.code)
        else:
            r = _scatter(r, d, index, s, reduce=reduce)
    _record("scatter_reduce", (input, index, src), r, (d, reduce, bool(include_self)))
    return r
