"""Advanced indexing, gather/scatter, masked ops, joins and reorders.

Indexing goes: normalise the index expression once (lists / NumPy arrays ->
tensors, masks -> nonzero coordinates) -> the basic part (ints, slices, None,
Ellipsis) as a view from the core -> the advanced part as one C kernel over
[pre..., B, post...] with int64 byte offsets that were bounds-checked here.
Kernels check nothing and release the GIL; accumulating kernels parallelise
over the non-indexed dimensions only, so results are deterministic."""
from libc.stdint cimport INT64_MAX, int64_t, uint8_t, uint64_t
from libc.string cimport memset
import operator

from ember._C.core cimport *
from ember._C.frame cimport *
from ember._C import core as _core
from ember._C import elementwise as _ew

from ember._C.c_index cimport *
from ember._C.layout cimport cl_order, new_cl

_LOWER_NAMES = ("bool", "unsigned char", "signed char", "short", "int", "long", "half",
                "bfloat16", "float", "double", "c10::complex<float>", "c10::complex<double>")

# ----------------------------------------------------------------------------
# small helpers  (this module is built with wraparound=False: never index a
# Python list or tuple with a negative number here)


cdef inline bint _is_t(object x):
    return isinstance(x, TensorBase)


cdef TensorBase _dup(TensorBase t):
    """A contiguous copy that is not recorded by autograd."""
    cdef TensorBase r = new_like(t, -1)
    copy_into(r, t)
    return r


cdef TensorBase _long_contig(TensorBase t):
    t = cast(t, EM_I64)
    return contig(t)


cdef TensorBase _expand_view(TensorBase t, int nd, const int64_t *shape, str what) :
    """t broadcast to `shape` as a view (stride 0 on broadcast dims)."""
    cdef int64_t st[MAX_DIMS]
    cdef int k = nd - t._ndim, i
    if k < 0:
        raise RuntimeError(f"{what}")
    for i in range(nd):
        if i < k:
            st[i] = 0
        elif t._shape[i - k] == shape[i]:
            st[i] = t._strides[i - k]
        elif t._shape[i - k] == 1:
            st[i] = 0
        else:
            raise RuntimeError(f"{what}")
    return make_view(t, nd, shape, st, t._offset)


cdef list _shape_list(TensorBase t):
    return [t._shape[i] for i in range(t._ndim)]


cdef TensorBase _narrow_view(TensorBase t, int d, int64_t start, int64_t length):
    cdef TensorBase r = make_view(t, t._ndim, t._shape, t._strides,
                                  t._offset + start * t._strides[d])
    r._shape[d] = length
    return r


cdef TensorBase _to_tensor(object x, int dt=-1):
    if isinstance(x, TensorBase):
        return <TensorBase>x if dt < 0 else cast(<TensorBase>x, dt)
    r = _core.tensor(x)
    return <TensorBase>r if dt < 0 else cast(<TensorBase>r, dt)


cdef TensorBase _value_tensor(object value, int dt):
    """A tensor of dtype dt for an assigned value (tensor, scalar, list, array)."""
    if isinstance(value, TensorBase):
        return cast(<TensorBase>value, dt)
    if scalar_category(value) >= 0:
        return wrap_scalar(value, dt)
    return cast(<TensorBase>_core.tensor(value), dt)


# ----------------------------------------------------------------------------
# the advanced-index engine


cdef int _coalesce(int n, int64_t *shape, int64_t *sa, int64_t *sb) noexcept:
    cdef int m = 0, d
    for d in range(n):
        if shape[d] == 1:
            continue
        if m > 0 and sa[m - 1] == sa[d] * shape[d] and sb[m - 1] == sb[d] * shape[d]:
            shape[m - 1] *= shape[d]
            sa[m - 1] = sa[d]
            sb[m - 1] = sb[d]
            continue
        shape[m] = shape[d]
        sa[m] = sa[d]
        sb[m] = sb[d]
        m += 1
    return m


cdef int _ix_exec(int op, TensorBase a, list adv, bint adjacent, TensorBase off, int nB,
                  TensorBase b) except -1:
    """Run the [pre, B, post] kernel.  `adv` lists a's indexed dims (sorted), b's
    shape is pre + B + post.  Returns 1 (and does nothing) when b's B dims can
    not be walked as one flat dimension: the caller then materialises b."""
    cdef em_ix_plan p
    cdef int isz = em_itemsize[a._dtype], d, bd = 0, i, last = -1
    cdef int64_t expect = 0, sbb = 0
    cdef bint isadv[MAX_DIMS]
    cdef int first = adv[0]
    if numel_of(b._ndim, b._shape) == 0:
        return 0
    memset(isadv, 0, sizeof(isadv))
    for d in adv:
        isadv[d] = True
    p.op = op
    p.dtype = a._dtype
    p.a = data_ptr(a)
    p.b = data_ptr(b)
    p.npre = 0
    p.npost = 0
    if adjacent:
        for d in range(first):
            p.pre_shape[p.npre] = a._shape[d]
            p.pre_sa[p.npre] = a._strides[d] * isz
            p.pre_sb[p.npre] = b._strides[bd] * isz
            p.npre += 1
            bd += 1
    for i in range(bd + nB - 1, bd - 1, -1):
        if b._shape[i] == 1:
            continue
        if last < 0:
            sbb = b._strides[i]
        elif b._strides[i] != expect:
            return 1
        expect = b._strides[i] * b._shape[i]
        last = i
    bd += nB
    for d in range(a._ndim):
        if isadv[d] or (adjacent and d < first):
            continue
        p.post_shape[p.npost] = a._shape[d]
        p.post_sa[p.npost] = a._strides[d] * isz
        p.post_sb[p.npost] = b._strides[bd] * isz
        p.npost += 1
        bd += 1
    p.npre = _coalesce(p.npre, p.pre_shape, p.pre_sa, p.pre_sb)
    p.npost = _coalesce(p.npost, p.post_shape, p.post_sa, p.post_sb)
    p.nb = numel_of(off._ndim, off._shape)
    p.off = <const int64_t *>data_ptr(off)
    p.sb_b = sbb * isz
    cdef int nt = nthreads_for(numel_of(b._ndim, b._shape))
    with nogil:
        em_ix_run(&p, nt)
    return 0


cdef tuple _prep(TensorBase v, list ind):
    """ind: one entry per leading dim of v, None or an integer tensor.  Returns
    (adv dims, adjacent, offsets (contiguous int64, shape B), B shape tuple)."""
    cdef list adv = [], idx = []
    cdef int64_t bs[MAX_DIMS]
    cdef int64_t sizes[MAX_DIMS]
    cdef int64_t strides[MAX_DIMS]
    cdef const int64_t *ptrs[MAX_DIMS]
    cdef int nb = 0, k, d, r, i
    cdef int64_t bad = 0, n
    cdef TensorBase t, tt, off
    for d in range(len(ind)):
        if ind[d] is not None:
            adv.append(d)
            idx.append(ind[d])
    k = len(adv)
    if k == 0:
        raise RuntimeError(f"index: internal error, no index tensors in {ind!r} {v.shape}")
    cdef int64_t tmp[MAX_DIMS]
    try:
        for t in idx:
            nb = broadcast_shape(nb, bs, t._ndim, t._shape, tmp)
            for i in range(nb):
                bs[i] = tmp[i]
    except RuntimeError:
        raise IndexError("shape mismatch: indexing tensors could not be broadcast together with "
                         "shapes " + ", ".join([str(_shape_list(<TensorBase>x)) for x in idx]))
    n = numel_of(nb, bs)
    keep = []
    for i in range(k):
        t = <TensorBase>idx[i]
        tt = cast(t, EM_I64)
        if not (tt._ndim == nb and is_contig(tt) and
                all([tt._shape[j] == bs[j] for j in range(nb)])):
            tt2 = new_tensor(nb, bs, EM_I64, cpu_device())
            copy_into(tt2, tt)
            tt = tt2
        keep.append(tt)
        ptrs[i] = <const int64_t *>data_ptr(tt)
        d = adv[i]
        sizes[i] = v._shape[d]
        strides[i] = v._strides[d] * em_itemsize[v._dtype]
    off = new_tensor(nb, bs, EM_I64, cpu_device())
    with nogil:
        r = em_ix_offsets(k, ptrs, sizes, strides, n, <int64_t *>data_ptr(off), &bad)
    if r >= 0:
        raise IndexError(f"index {bad} is out of bounds for dimension {r} with size {sizes[r]}")
    cdef bint adjacent = adv[k - 1] - adv[0] == k - 1
    return adv, adjacent, off, tuple([bs[i] for i in range(nb)])


cdef tuple _result_shape(TensorBase v, list adv, bint adjacent, tuple bshape):
    cdef list pre = [], post = []
    cdef int first = adv[0], d
    for d in range(v._ndim):
        if d in adv:
            continue
        if adjacent and d < first:
            pre.append(v._shape[d])
        else:
            post.append(v._shape[d])
    return tuple(pre), tuple(post)


cdef TensorBase _index_long(TensorBase v, list ind):
    """aten::index with integer index tensors (None = whole dim)."""
    adv, adjacent, off, bshape = _prep(v, ind)
    pre, post = _result_shape(v, adv, adjacent, bshape)
    cdef int64_t shp[MAX_DIMS]
    cdef int nd = parse_shape(pre + bshape + post, shp, "index")
    cdef TensorBase out = new_tensor(nd, shp, v._dtype, v._device)
    _ix_exec(EM_IX_GET, v, adv, adjacent, <TensorBase>off, len(bshape), out)
    return out


cdef int _index_put_long(TensorBase v, list ind, object value, bint accumulate) except -1:
    """v[ind] = value (or +=), in place, no autograd."""
    adv, adjacent, off, bshape = _prep(v, ind)
    pre, post = _result_shape(v, adv, adjacent, bshape)
    full = pre + bshape + post
    cdef int64_t shp[MAX_DIMS]
    cdef int nd = parse_shape(full, shp, "index_put_"), i
    if isinstance(value, TensorBase) and (<TensorBase>value)._dtype != v._dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{torch_type_name(v._dtype)} for the destination and "
                           f"{torch_type_name((<TensorBase>value)._dtype)} for the source.")
    cdef TensorBase val = _value_tensor(value, v._dtype), b
    while val._ndim > nd and val._shape[0] == 1:
        val = make_view(val, val._ndim - 1, &val._shape[1], &val._strides[1], val._offset)
    msg = (f"shape mismatch: value tensor of shape {_shape_list(val)} cannot be broadcast to "
           f"indexing result of shape {list(full)}")
    b = _expand_view(val, nd, shp, msg)
    if _ix_exec(EM_IX_ACC if accumulate else EM_IX_PUT, v, adv, adjacent, <TensorBase>off,
                len(bshape), b):
        b = new_tensor(nd, shp, v._dtype, v._device)
        copy_into(b, val)
        _ix_exec(EM_IX_ACC if accumulate else EM_IX_PUT, v, adv, adjacent, <TensorBase>off,
                 len(bshape), b)
    return 0


cdef list _mask_to_long(TensorBase v, TensorBase mask, int at):
    """Coordinates of a bool/uint8 mask over v's dims at..at+mask.ndim-1."""
    cdef int j
    if at + mask._ndim > v._ndim:
        raise IndexError(f"too many indices for tensor of dimension {v._ndim}")
    for j in range(mask._ndim):
        if mask._shape[j] != v._shape[at + j]:
            raise IndexError(f"The shape of the mask {_shape_list(mask)} at index {j} does not "
                             f"match the shape of the indexed tensor {_shape_list(v)} at index "
                             f"{at + j}")
    nz = _nonzero(mask)
    return [make_view(nz, 1, nz._shape, nz._strides, nz._offset + j)
            for j in range(mask._ndim)]


cdef list _user_indices(TensorBase v, object indices, str op):
    """A tuple of index_put_/index entries (None, int/bool tensors, lists) -> one
    entry per dim (None or an integer tensor)."""
    if isinstance(indices, TensorBase) or not isinstance(indices, (tuple, list)):
        indices = (indices,)
    cdef list ind = []
    cdef TensorBase t
    for it in indices:
        if it is None:
            ind.append(None)
            continue
        t = _to_tensor(it)
        if t._dtype == EM_BOOL or t._dtype == EM_U8:
            ind.extend(_mask_to_long(v, t, len(ind)))
        elif t._dtype >= EM_F16:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        else:
            ind.append(t)
    if len(ind) > v._ndim:
        raise IndexError(f"too many indices for tensor of dimension {v._ndim}")
    return ind


cdef bint _any_adv(list ind):
    for x in ind:
        if x is not None:
            return True
    return False


# ----------------------------------------------------------------------------
# Python-level indexing: x[idx], x[idx] = value


cdef bint _seq_as_tuple(object seq):
    """PyTorch's treatSequenceAsTuple for a non-tuple sequence index."""
    if len(seq) >= 32:
        return False
    for it in seq:
        if it is None or it is Ellipsis or isinstance(it, (slice, TensorBase, list, tuple)):
            return True
        if hasattr(it, "__array_interface__") or (hasattr(it, "__len__") and
                                                  not isinstance(it, (str, bytes))):
            return True
    return False


cdef object _norm_item(object it):
    """One index item -> int, bool, slice, None, Ellipsis or an index tensor."""
    cdef TensorBase t
    if it is None or it is Ellipsis or isinstance(it, slice):
        if isinstance(it, slice) and any([isinstance(s, TensorBase) for s in
                                          (it.start, it.stop, it.step)]):
            return slice(*[None if s is None else s.__index__() for s in
                           (it.start, it.stop, it.step)])
        return it
    if isinstance(it, bool):
        return it
    if isinstance(it, int):
        return it
    if isinstance(it, TensorBase):
        t = <TensorBase>it
        if t._dtype >= EM_F16:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        if t._ndim == 0:
            if t._dtype == EM_BOOL or t._dtype == EM_U8:
                return bool(t.item())
            return int(t.item())
        return t
    tn = type(it).__name__
    if type(it).__module__ == "numpy" and tn in ("bool_", "bool"):
        return bool(it)
    if hasattr(it, "__index__") and not hasattr(it, "__len__"):
        return it.__index__()
    if isinstance(it, (list, tuple)) or hasattr(it, "__array_interface__") or hasattr(
            it, "__len__"):
        if isinstance(it, (list, tuple)) and len(it) == 0:
            return _core.tensor([], dtype=_core.int64)
        t = <TensorBase>_core.tensor(it)
        if t._dtype >= EM_F16:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        return t
    raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                     f"Variables are valid indices (got {type(it).__name__})")


cdef tuple _normalize(object idx):
    if isinstance(idx, tuple):
        items = idx
    elif isinstance(idx, list) and _seq_as_tuple(idx):
        items = tuple(idx)
    else:
        items = (idx,)
    return tuple([_norm_item(it) for it in items])


cdef tuple _split(TensorBase x, tuple items):
    """-> (basic index tuple for the core view, [(view dim, index tensor)], trivial?)"""
    cdef int consumed = 0, vd = 0, ell, k
    cdef bint seen_ell = False, trivial = True
    cdef TensorBase t
    for it in items:
        if it is Ellipsis:
            if seen_ell:
                raise IndexError("an index can only have a single ellipsis ('...')")
            seen_ell = True
        elif it is None or isinstance(it, bool):
            pass
        elif isinstance(it, TensorBase):
            t = <TensorBase>it
            consumed += t._ndim if (t._dtype == EM_BOOL or t._dtype == EM_U8) else 1
        else:
            consumed += 1
    if consumed > x._ndim:
        raise IndexError(f"too many indices for tensor of dimension {x._ndim}")
    ell = x._ndim - consumed
    cdef list basic = [], adv = []
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
            adv.append((vd, <TensorBase>_core.tensor([it])))
            vd += 1
        elif isinstance(it, TensorBase):
            t = <TensorBase>it
            adv.append((vd, t))
            k = t._ndim if (t._dtype == EM_BOOL or t._dtype == EM_U8) else 1
            for _ in range(k):
                basic.append(slice(None))
            vd += k
        else:
            basic.append(it)
            if not (isinstance(it, slice) and it.start is None and it.stop is None and
                    it.step is None):
                trivial = False
            if isinstance(it, slice):
                vd += 1
    return tuple(basic), adv, trivial


cdef list _adv_to_ind(TensorBase v, list adv):
    cdef list ind = [None] * v._ndim
    cdef TensorBase t
    cdef int vd, j
    for vd, t in adv:
        if t._dtype == EM_BOOL or t._dtype == EM_U8:
            cols = _mask_to_long(v, t, vd)
            for j in range(len(cols)):
                ind[vd + j] = cols[j]
        else:
            ind[vd] = t
    while ind and ind[len(ind) - 1] is None:
        ind.pop()
    return ind


cdef bint _index_off_cpu(object idx):
    """an index tensor in idx (a tensor or a tuple/list of items) is off the CPU: the
    op goes to that device's backend, which refuses a CPU tensor indexed by it"""
    if isinstance(idx, TensorBase):
        return (<TensorBase>idx)._device.kind != DEV_CPU
    if isinstance(idx, (tuple, list)):
        for it in idx:
            if isinstance(it, TensorBase) and (<TensorBase>it)._device.kind != DEV_CPU:
                return True
    return False


def getitem(TensorBase self not None, idx):
    """``self[idx]`` for everything basic indexing can't do (advanced indexing)."""
    if needs_slow1(self) or _index_off_cpu(idx):
        return redispatch("getitem", getitem, (self, idx), {})
    cdef tuple items = _normalize(idx)
    basic, adv, trivial = _split(self, items)
    cdef TensorBase v = self if trivial else <TensorBase>_core._basic_getitem(self, basic)
    if not adv:
        return v
    cdef TensorBase m, out
    # x[mask] with a mask over every dim: a masked select, no coordinates needed
    if len(adv) == 1 and adv[0][0] == 0:
        m = <TensorBase>adv[0][1]
        if (m._dtype == EM_BOOL) and m._ndim == v._ndim and m._ndim > 0 and \
                all([m._shape[i] == v._shape[i] for i in range(m._ndim)]):
            return masked_select(v, m)
    ind = _adv_to_ind(v, adv)
    out = _index_long(v, ind)
    if grad_on() and v._requires_grad:
        record("index", (v,), out, (tuple(ind), shape_tuple(v)))
    return out


def index(TensorBase input not None, indices):
    """aten::index: ``input[indices]`` where indices is a tuple of None / index tensors."""
    cdef list ind = _user_indices(input, indices, "index")
    if not _any_adv(ind):
        return input
    out = _index_long(input, ind)
    if grad_on() and input._requires_grad:
        record("index", (input,), out, (tuple(ind), shape_tuple(input)))
    return out


cdef int _setitem_impl(TensorBase self, tuple items, object value) except -1:
    basic, adv, trivial = _split(self, items)
    cdef TensorBase v = self if trivial else <TensorBase>_core._basic_getitem(self, basic)
    cdef TensorBase m, val
    if not adv:
        if isinstance(value, TensorBase):
            val = <TensorBase>value
            check_written(v, val, "copy_")
            while val._ndim > v._ndim and val._shape[0] == 1:
                val = make_view(val, val._ndim - 1, &val._shape[1], &val._strides[1],
                                val._offset)
            copy_into(v, val)
        elif scalar_category(value) >= 0:
            fill_scalar(v, value)
        else:
            copy_into(v, _value_tensor(value, v._dtype))
        return 0
    if len(adv) == 1 and adv[0][0] == 0 and ((not _is_t(value) and scalar_category(value) >= 0) or (
            _is_t(value) and (<TensorBase>value).numel() == 1 and
            not (<TensorBase>value)._requires_grad)):
        m = <TensorBase>adv[0][1]
        if m._dtype == EM_BOOL and m._ndim == v._ndim and m._ndim > 0 and \
                all([m._shape[i] == v._shape[i] for i in range(m._ndim)]):
            _masked_fill_impl(v, m, value.item() if _is_t(value) else value)
            return 0
    if isinstance(value, TensorBase):
        check_written(v, value, "index_put_")
    _index_put_long(v, _adv_to_ind(v, adv), value, False)
    return 0


def setitem(TensorBase self not None, idx, value):
    """``self[idx] = value`` (value: tensor, Python scalar, list or array)."""
    if needs_slow1(self) or _index_off_cpu(idx):
        return redispatch("setitem", setitem, (self, idx, value), {})
    cdef tuple items = _normalize(idx)
    cdef TensorBase old, r
    if any_grad((self, value)):
        old = graph_old(self, "setitem")
        r = _dup(old)
        _setitem_impl(r, items, value)
        record("setitem", (old, value), r, (items,))
        commit_inplace(self, r)
        return None
    _setitem_impl(self, items, value)
    bump_version(self)
    return None


def index_put_(TensorBase self not None, indices, values, accumulate=False):
    """self[indices] = values (or += with accumulate=True, duplicates summed)."""
    check_written(self, (indices, values), "index_put_", True)
    if needs_slow1(self) or _index_off_cpu(indices) or needs_slow_arg(values):
        return redispatch("index_put_", index_put_, (self, indices, values),
                          {"accumulate": accumulate})
    if any_grad((self, values)):
        return commit_inplace(self, <TensorBase>index_put(graph_old(self, "index_put_"), indices, values,
                                                   accumulate))
    cdef list ind = _user_indices(self, indices, "index_put_")
    if not _any_adv(ind):
        if accumulate:
            copy_into(self, <TensorBase>_ew.add(self, _value_tensor(values, self._dtype)))
        else:
            copy_into(self, _value_tensor(values, self._dtype))
    else:
        _index_put_long(self, ind, values, accumulate)
    bump_version(self)
    return self


def index_put(TensorBase input not None, indices, values, accumulate=False):
    """Out-of-place ``index_put_``."""
    if needs_slow1(input) or _index_off_cpu(indices) or needs_slow_arg(values):
        return redispatch("index_put", index_put, (input, indices, values),
                          {"accumulate": accumulate})
    cdef list ind = _user_indices(input, indices, "index_put")
    cdef TensorBase r = _dup(input)
    if _any_adv(ind):
        _index_put_long(r, ind, values, accumulate)
    elif accumulate:
        copy_into(r, <TensorBase>_ew.add(r, _value_tensor(values, r._dtype)))
    else:
        copy_into(r, _value_tensor(values, r._dtype))
    if any_grad((input, values)):
        record("index_put", (input, values), r, (tuple(ind), bool(accumulate)))
    return r


# ----------------------------------------------------------------------------
# index_select / index_add / index_copy / index_fill


cdef TensorBase _check_dim_index(TensorBase self, int d, object index, str op, bint allow_neg,
                                 str prefix):
    """A contiguous int64 1-D copy of index, checked against self.size(d)."""
    cdef TensorBase ix = as_tensor(index, op, "index")
    cdef int64_t n, bad, size = self._shape[d] if self._ndim else 1
    if ix._dtype != EM_I64 and ix._dtype != EM_I32:
        raise RuntimeError(f"{op}(): Expected dtype int32 or int64 for index")
    if ix._ndim > 1:
        raise IndexError(f"{op}(): Index is supposed to be a vector")
    ix = _long_contig(ix)
    n = numel_of(ix._ndim, ix._shape)
    cdef int64_t one = 1
    ix = make_view(ix, 1, &n, &one, ix._offset)
    with nogil:
        bad = em_check_bounds(<const int64_t *>data_ptr(ix), n, -size if allow_neg else 0, size)
    if bad >= 0:
        v = (<const int64_t *>data_ptr(ix))[bad]
        if op == "index_select":
            raise IndexError("index out of range in self")
        raise IndexError(f"{prefix}index {v} is out of bounds for dimension {d} with size {size}")
    if allow_neg:
        vals = None
        for i in range(n):
            if (<int64_t *>data_ptr(ix))[i] < 0:
                if vals is None:
                    ix = _dup(ix)
                    vals = True
                (<int64_t *>data_ptr(ix))[i] += size
    return ix


cdef TensorBase _dim_offsets(TensorBase self, int d, TensorBase ix):
    cdef int64_t n = ix._shape[0], i
    cdef int64_t st = (self._strides[d] if self._ndim else 0) * em_itemsize[self._dtype]
    cdef TensorBase off = new_tensor(1, &n, EM_I64, cpu_device())
    cdef const int64_t *src = <const int64_t *>data_ptr(ix)
    cdef int64_t *dst = <int64_t *>data_ptr(off)
    with nogil:
        for i in range(n):
            dst[i] = src[i] * st
    return off


cdef TensorBase _as1d(TensorBase t):
    cdef int64_t one = 1, z = 0
    if t._ndim > 0:
        return t
    return make_view(t, 1, &one, &z, t._offset)


def index_select(TensorBase input not None, dim, index, *, out=None):
    """Entries of ``input`` along ``dim`` at the positions in ``index`` (1-D)."""
    if needs_slow((input, index)):
        return redispatch("index_select", index_select, (input, dim, index), {})
    cdef int d = wrap_dim(dim, input._ndim, "index_select")
    cdef TensorBase x = _as1d(input)
    cdef TensorBase ix = _check_dim_index(x, d, index, "index_select", False, "")
    cdef int64_t shp[MAX_DIMS]
    cdef int i
    for i in range(x._ndim):
        shp[i] = x._shape[i]
    shp[d] = ix._shape[0]
    cdef TensorBase r = new_tensor(input._ndim if input._ndim else 0, shp, x._dtype, x._device)
    cdef TensorBase rv = _as1d(r)
    _ix_exec(EM_IX_GET, x, [d], True, _dim_offsets(x, d, ix), 1, rv)
    if grad_on() and input._requires_grad:
        record("index_select", (input, index), r, (d, shape_tuple(input)))
    if out is not None:
        return write_out(out, r, OUT_EXACT | OUT_NOALIAS, (input, index), "index_select")
    return r


cdef int _index_apply(int op, TensorBase self, int d, TensorBase ix, TensorBase src) except -1:
    """self.index_{copy,add,fill}_ along d with checked indices ix; src has the
    shape of index_select's result (or broadcasts to it)."""
    cdef TensorBase x = _as1d(self), b
    cdef int64_t shp[MAX_DIMS]
    cdef int i
    for i in range(x._ndim):
        shp[i] = x._shape[i]
    shp[d] = ix._shape[0]
    src = cast(src, x._dtype)
    b = _expand_view(src, x._ndim, shp,
                     f"source tensor shape must match self tensor shape, excluding the "
                     f"specified dimension. Got self.shape = {_shape_list(self)} "
                     f"source.shape = {_shape_list(src)}")
    if _ix_exec(op, x, [d], True, _dim_offsets(x, d, ix), 1, b):
        b = _dup(b)
        _ix_exec(op, x, [d], True, _dim_offsets(x, d, ix), 1, b)
    return 0


cdef int _check_source(TensorBase self, int d, TensorBase ix, TensorBase src, str op) except -1:
    cdef int i
    cdef int nd = self._ndim if self._ndim else 1
    if src._ndim != self._ndim and not (src._ndim <= 1 and self._ndim <= 1):
        raise IndexError(f"{op}(): When source and destination are not scalars, their "
                         f"dimensionality must match. Source dimensionality "
                         f"({src._ndim}), destination dimensionality ({self._ndim})")
    if numel_of(ix._ndim, ix._shape) != (src._shape[d] if src._ndim else 1):
        raise IndexError(f"{op}(): Number of indices ({ix._shape[0]}) should be equal to "
                         f"source.size(dim) ({src._shape[d] if src._ndim else 1})")
    for i in range(self._ndim):
        if i != d and src._shape[i] != self._shape[i]:
            raise RuntimeError(f"{op}(): source tensor shape must match self tensor shape, "
                               f"excluding the specified dimension. Got self.shape = "
                               f"{_shape_list(self)} source.shape = {_shape_list(src)}")
    return 0


def index_add(TensorBase input not None, dim, index, source, *, alpha=1, out=None):
    """input with ``alpha * source`` added at ``index`` along ``dim`` (duplicates summed)."""
    if needs_slow((input, index, source)):
        return redispatch("index_add", index_add, (input, dim, index, source), {"alpha": alpha})
    cdef int d = wrap_dim(dim, input._ndim, "index_add")
    cdef TensorBase src = as_tensor(source, "index_add", "source")
    if src._dtype != input._dtype:
        raise RuntimeError(f"index_add_(): self ({torch_type_name(input._dtype)}) and source "
                           f"({torch_type_name(src._dtype)}) must have the same scalar type")
    cdef TensorBase ix = _check_dim_index(input, d, index, "index_add", False, "")
    _check_source(input, d, ix, src, "index_add_")
    cdef TensorBase r = _dup(input)
    scaled = src if alpha == 1 else _ew.mul(src.detach(), alpha)
    _index_apply(EM_IX_ACC, r, d, ix, <TensorBase>scaled)
    if any_grad((input, source)):
        record("index_add", (input, index, source), r, (d, alpha))
    if out is not None:
        return write_out(out, r, OUT_EXACT, (input, index, source), "index_add")
    return r


def index_add_(TensorBase self not None, dim, index, source, *, alpha=1):
    check_written(self, (index, source), "index_add_", True)
    if any_grad((self, source)):
        return commit_inplace(self, <TensorBase>index_add(graph_old(self, "index_add_"), dim, index, source,
                                                   alpha=alpha))
    if needs_slow((self, index, source)):
        return redispatch("index_add_", index_add_, (self, dim, index, source), {"alpha": alpha})
    cdef int d = wrap_dim(dim, self._ndim, "index_add_")
    cdef TensorBase src = as_tensor(source, "index_add_", "source")
    if src._dtype != self._dtype:
        raise RuntimeError(f"index_add_(): self ({torch_type_name(self._dtype)}) and source "
                           f"({torch_type_name(src._dtype)}) must have the same scalar type")
    cdef TensorBase ix = _check_dim_index(self, d, index, "index_add", False, "")
    _check_source(self, d, ix, src, "index_add_")
    scaled = src if alpha == 1 else _ew.mul(src, alpha)
    _index_apply(EM_IX_ACC, self, d, ix, <TensorBase>scaled)
    bump_version(self)
    return self


def index_copy(TensorBase input not None, dim, index, source):
    """input with the slices at ``index`` along ``dim`` replaced by ``source``."""
    if needs_slow1(input):
        return redispatch("index_copy", index_copy, (input, dim, index, source), {})
    cdef int d = wrap_dim(dim, input._ndim, "index_copy")
    cdef TensorBase src = as_tensor(source, "index_copy", "source")
    if src._dtype != input._dtype:
        raise RuntimeError(f"index_copy_(): self and source expected to have the same dtype, "
                           f"but got (self) {torch_type_name(input._dtype)} and (source) "
                           f"{torch_type_name(src._dtype)}")
    cdef TensorBase ix = _check_dim_index(input, d, index, "index_copy", False, "index_copy_(): ")
    _check_source(input, d, ix, src, "index_copy_")
    cdef TensorBase r = _dup(input)
    _index_apply(EM_IX_PUT, r, d, ix, src)
    if any_grad((input, source)):
        record("index_copy", (input, index, source), r, (d,))
    return r


def index_copy_(TensorBase self not None, dim, index, source):
    check_written(self, (index, source), "index_copy_", True)
    if any_grad((self, source)):
        return commit_inplace(self, <TensorBase>index_copy(graph_old(self, "index_copy_"), dim, index, source))
    if needs_slow1(self):
        return redispatch("index_copy_", index_copy_, (self, dim, index, source), {})
    r = index_copy(self, dim, index, source)
    copy_into(self, <TensorBase>r)
    bump_version(self)
    return self


cdef int _index_fill_impl(TensorBase self, int d, TensorBase ix, object value) except -1:
    cdef TensorBase val
    if isinstance(value, TensorBase):
        if (<TensorBase>value)._ndim != 0:
            raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but "
                               f"got tensor with {(<TensorBase>value)._ndim} dimension(s).")
        val = cast(<TensorBase>value, self._dtype)
    else:
        if scalar_category(value) < 0:
            raise TypeError(f"index_fill(): argument 'value' must be Number or Tensor, not "
                            f"{type(value).__name__}")
        val = wrap_scalar(value, self._dtype)
    _index_apply(EM_IX_PUT, self, d, ix, val)
    return 0


def index_fill(TensorBase input not None, dim, index, value):
    """input with the slices at ``index`` along ``dim`` set to ``value``."""
    if needs_slow1(input):
        return redispatch("index_fill", index_fill, (input, dim, index, value), {})
    cdef int d = wrap_dim(dim, input._ndim, "index_fill")
    cdef TensorBase ix = _check_dim_index(input, d, index, "index_fill", True, "")
    cdef TensorBase r = _dup(input)
    _index_fill_impl(r, d, ix, value)
    if any_grad((input, value)):
        record("index_fill", (input, index, value), r, (d,))
    return r


def index_fill_(TensorBase self not None, dim, index, value):
    if any_grad((self, value)):
        return commit_inplace(self, <TensorBase>index_fill(graph_old(self, "index_fill_"), dim, index, value))
    if needs_slow1(self):
        return redispatch("index_fill_", index_fill_, (self, dim, index, value), {})
    cdef int d = wrap_dim(dim, self._ndim, "index_fill_")
    cdef TensorBase ix = _check_dim_index(self, d, index, "index_fill", True, "")
    _index_fill_impl(self, d, ix, value)
    bump_version(self)
    return self


# ----------------------------------------------------------------------------
# gather / scatter


cdef TensorBase _gs_index(TensorBase self, int d, object index, str op, object src):
    """Validate a gather/scatter index; return a contiguous int64 copy."""
    cdef TensorBase ix = as_tensor(index, op, "index"), s
    cdef int i
    cdef int64_t n, bad, size = self._shape[d] if self._ndim else 1
    if ix._dtype != EM_I64 and ix._dtype != EM_I32:
        raise RuntimeError(f"{op}(): Expected dtype int64 for index")
    if ix._ndim != self._ndim and not (ix._ndim <= 1 and self._ndim <= 1):
        raise RuntimeError(f"Index tensor must have the same number of dimensions as "
                           f"{'input' if op == 'gather' else 'self'} tensor")
    for i in range(ix._ndim):
        if i != d and ix._shape[i] > self._shape[i]:
            if op == "gather":
                raise RuntimeError(f"Size does not match at dimension {i} expected index "
                                   f"{_shape_list(ix)} to be no larger than self "
                                   f"{_shape_list(self)} apart from dimension {d}")
            raise RuntimeError(f"Expected index {_shape_list(ix)} to be no larger than self "
                               f"{_shape_list(self)} apart from dimension {d}")
    if isinstance(src, TensorBase):
        s = <TensorBase>src
        for i in range(ix._ndim):
            if ix._shape[i] > (s._shape[i] if i < s._ndim else 1):
                raise RuntimeError(f"Expected index {_shape_list(ix)} to be no larger than self "
                                   f"{_shape_list(self)} apart from dimension {d} and to be no "
                                   f"larger size than src {_shape_list(s)}")
    ix = _long_contig(ix)
    n = numel_of(ix._ndim, ix._shape)
    with nogil:
        bad = em_check_bounds(<const int64_t *>data_ptr(ix), n, 0, size)
    if bad >= 0:
        raise RuntimeError(f"index {(<const int64_t *>data_ptr(ix))[bad]} is out of bounds for "
                           f"dimension {d} with size {size}")
    return ix


cdef TensorBase _restride(TensorBase t, TensorBase like, int d):
    """t viewed with like's shape and a zero stride along d (the indexed dim)."""
    cdef int64_t st[MAX_DIMS]
    cdef int i
    for i in range(like._ndim):
        st[i] = 0 if (i == d or t._ndim == 0) else t._strides[i]
    return make_view(t, like._ndim, like._shape, st, t._offset)


def gather(TensorBase input not None, dim, index, *, sparse_grad=False, out=None):
    """out[i][j] = input[index[i][j]][j] (for dim 0), out has index's shape."""
    if needs_slow((input, index)):
        return redispatch("gather", gather, (input, dim, index), {})
    cdef int d = wrap_dim(dim, input._ndim, "gather")
    cdef TensorBase ix = _gs_index(input, d, index, "gather", None)
    cdef TensorBase r = new_tensor(ix._ndim, ix._shape, input._dtype, input._device)
    cdef em_dim_aux aux
    cdef NdIter it
    aux.dtype = input._dtype
    aux.op = 0
    aux.dim_stride = (input._strides[d] if input._ndim else 0) * em_itemsize[input._dtype]
    if numel_of(ix._ndim, ix._shape):
        iter_init(&it, [r, _restride(input, ix, d), ix], ix._ndim, ix._shape)
        with nogil:
            em_run_nd(em_gather_loop, 3, it.ptrs, it.ndim, it.shape, it.strides, &aux,
                      nthreads_for(it.numel))
    if grad_on() and input._requires_grad:
        record("gather", (input, index), r, (d, shape_tuple(input)))
    if out is not None:
        return write_out(out, r, OUT_EXACT | OUT_NOALIAS, (input, index), "gather")
    return r


cdef int _scatter_impl(TensorBase self, int d, TensorBase ix, object src, int op) except -1:
    """self.scatter_(d, ix, src) with a reduction op; deterministic for op != SET."""
    cdef TensorBase s, dv, sv, ixp
    cdef em_dim_aux aux
    cdef NdIter it
    cdef int64_t shp[MAX_DIMS]
    cdef int64_t st[MAX_DIMS]
    cdef int nd = ix._ndim, i, j, nt
    cdef int64_t rows
    if numel_of(ix._ndim, ix._shape) == 0:
        return 0
    if isinstance(src, TensorBase):
        s = <TensorBase>src
    else:
        s = wrap_scalar(src, self._dtype)
    aux.dtype = self._dtype
    aux.op = op
    aux.dim_stride = (self._strides[d] if self._ndim else 0) * em_itemsize[self._dtype]
    # iterate with the scattered dim innermost, so threads never share a target
    cdef int perm[MAX_DIMS]
    j = 0
    for i in range(nd):
        if i != d:
            perm[j] = i
            j += 1
    if nd:
        perm[nd - 1] = d
    for i in range(nd):
        shp[i] = ix._shape[perm[i]]
    for i in range(nd):
        st[i] = 0 if perm[i] == d else self._strides[perm[i]]
    dv = make_view(self, nd, shp, st, self._offset)
    for i in range(nd):
        st[i] = s._strides[perm[i]] if s._ndim else 0
    sv = make_view(s, nd, shp, st, s._offset)
    for i in range(nd):
        st[i] = ix._strides[perm[i]]
    ixp = make_view(ix, nd, shp, st, ix._offset)
    iter_init(&it, [dv, sv, ixp], nd, shp)
    nt = nthreads_for(it.numel)
    if op != EM_RED_SET and it.ndim > 0:
        rows = it.numel // it.shape[it.ndim - 1] if it.shape[it.ndim - 1] else 0
        if rows < nt:
            nt = 1
    with nogil:
        em_run_nd(em_scatter_loop, 3, it.ptrs, it.ndim, it.shape, it.strides, &aux, nt)
    return 0


cdef int _reduce_code(object reduce, str op) except -1:
    if reduce is None:
        return EM_RED_SET
    if reduce == "add" or reduce == "sum":
        return EM_RED_ADD
    if reduce == "multiply" or reduce == "prod":
        return EM_RED_MUL
    if reduce == "amax":
        return EM_RED_MAX
    if reduce == "amin":
        return EM_RED_MIN
    raise RuntimeError(f"{op}(): reduce argument must be either add or multiply, got {reduce}")


cdef object _scatter_src(TensorBase self, object src, object value, str op):
    if src is None:
        src = value
    if src is None:
        raise TypeError(f"{op}() missing 1 required positional argument: 'src' or 'value'")
    if isinstance(src, TensorBase):
        if (<TensorBase>src)._dtype != self._dtype:
            raise RuntimeError(f"{op}(): Expected self.dtype to be equal to src.dtype")
        return src
    if scalar_category(src) < 0:
        raise TypeError(f"{op}(): argument 'src' must be Tensor or Number, not "
                        f"{type(src).__name__}")
    return src


def scatter(TensorBase input not None, dim, index, src=None, *, value=None, reduce=None, out=None):
    """input with src (tensor or scalar) written at index along dim."""
    if needs_slow((input, index, src)):
        return redispatch("scatter", scatter, (input, dim, index, src),
                          {"value": value, "reduce": reduce})
    cdef int d = wrap_dim(dim, input._ndim, "scatter")
    src = _scatter_src(input, src, value, "scatter")
    cdef int op = _reduce_code(reduce, "scatter")
    cdef TensorBase ix = _gs_index(input, d, index, "scatter", src)
    cdef TensorBase r = _dup(input)
    _scatter_impl(r, d, ix, src, op)
    if any_grad((input, src)):
        record("scatter", (input, index, src), r, (d, reduce))
    if out is not None:
        return write_out(out, r, OUT_EXACT, (input, index, src), "scatter")
    return r


def scatter_(TensorBase self not None, dim, index, src=None, *, value=None, reduce=None):
    check_written(self, (index, src), "scatter_", True)
    if any_grad((self, src)):
        return commit_inplace(self, <TensorBase>scatter(graph_old(self, "scatter_"), dim, index, src,
                                                 value=value, reduce=reduce))
    if needs_slow((self, index, src)):
        return redispatch("scatter_", scatter_, (self, dim, index, src),
                          {"value": value, "reduce": reduce})
    cdef int d = wrap_dim(dim, self._ndim, "scatter_")
    src = _scatter_src(self, src, value, "scatter_")
    cdef int op = _reduce_code(reduce, "scatter_")
    _scatter_impl(self, d, _gs_index(self, d, index, "scatter", src), src, op)
    bump_version(self)
    return self


def scatter_add(TensorBase input not None, dim, index, src):
    """input with src summed into the positions index gives along dim (deterministic)."""
    if needs_slow((input, index, src)):
        return redispatch("scatter_add", scatter_add, (input, dim, index, src), {})
    cdef int d = wrap_dim(dim, input._ndim, "scatter_add")
    src = _scatter_src(input, as_tensor(src, "scatter_add", "src"), None, "scatter_add")
    cdef TensorBase ix = _gs_index(input, d, index, "scatter_add", src)
    cdef TensorBase r = _dup(input)
    _scatter_impl(r, d, ix, src, EM_RED_ADD)
    if any_grad((input, src)):
        record("scatter_add", (input, index, src), r, (d,))
    return r


def scatter_add_(TensorBase self not None, dim, index, src):
    check_written(self, (index, src), "scatter_add_", True)
    if any_grad((self, src)):
        return commit_inplace(self, <TensorBase>scatter_add(graph_old(self, "scatter_add_"), dim, index, src))
    if needs_slow((self, index, src)):
        return redispatch("scatter_add_", scatter_add_, (self, dim, index, src), {})
    cdef int d = wrap_dim(dim, self._ndim, "scatter_add_")
    src = _scatter_src(self, as_tensor(src, "scatter_add_", "src"), None, "scatter_add_")
    _scatter_impl(self, d, _gs_index(self, d, index, "scatter_add", src), src, EM_RED_ADD)
    bump_version(self)
    return self


def scatter_reduce(TensorBase input not None, dim, index, src, reduce, *, include_self=True):
    """Reduce src into input at index along dim: "sum", "prod", "mean", "amax", "amin"."""
    if needs_slow((input, index, src)):
        return redispatch("scatter_reduce", scatter_reduce, (input, dim, index, src, reduce),
                          {"include_self": include_self})
    if reduce not in ("sum", "prod", "mean", "amax", "amin"):
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    if category(input._dtype) == 3 and reduce in ("amax", "amin"):
        raise NotImplementedError(f"\"scatter_gather_tensor_cpu_reduce_{reduce}\" not "
                                  f"implemented for '{torch_type_name(input._dtype)}'")
    cdef int d = wrap_dim(dim, input._ndim, "scatter_reduce")
    src = _scatter_src(input, as_tensor(src, "scatter_reduce", "src"), None, "scatter_reduce")
    cdef TensorBase ix = _gs_index(input, d, index, "scatter_reduce", src)
    cdef TensorBase r = _dup(input), cnt
    cdef TensorBase s = <TensorBase>src
    if not include_self:
        if reduce in ("sum", "mean"):
            _scatter_impl(r, d, ix, 0, EM_RED_SET)
        elif reduce == "prod":
            _scatter_impl(r, d, ix, 1, EM_RED_SET)
        else:
            _scatter_impl(r, d, ix, s, EM_RED_SET)
    if reduce == "mean":
        _scatter_impl(r, d, ix, s, EM_RED_ADD)
        cnt = <TensorBase>_core.full(input.shape, 1 if include_self else 0, dtype=_core.int64)
        _scatter_impl(cnt, d, ix, 1, EM_RED_ADD)
        cnt = <TensorBase>_ew.clamp(cnt, min=1)
        if input._dtype >= EM_F16:
            q = _ew.div(r, cnt)
        else:
            q = _ew.div(r, cnt, rounding_mode="floor")
        copy_into(r, <TensorBase>q)
    else:
        _scatter_impl(r, d, ix, s, _reduce_code(reduce, "scatter_reduce"))
    if any_grad((input, src)):
        record("scatter_reduce", (input, index, src), r, (d, reduce, bool(include_self)))
    return r


def scatter_reduce_(TensorBase self not None, dim, index, src, reduce, *, include_self=True):
    check_written(self, (index, src), "scatter_reduce_", True)
    r = scatter_reduce(graph_old(self, "scatter_reduce_") if any_grad((self, src)) else self,
                       dim, index, src, reduce, include_self=include_self)
    return commit_inplace(self, <TensorBase>r)


def take_along_dim(TensorBase input not None, indices, dim=None, *, out=None):
    """Values of input at ``indices`` along ``dim`` (broadcasting the other dims)."""
    cdef TensorBase ix = as_tensor(indices, "take_along_dim", "indices")
    if ix._dtype != EM_I64:
        raise RuntimeError("torch.take_along_dim(): dtype of indices should be int64 but got "
                           f"{ix.dtype}")
    if dim is None:
        return gather(input.reshape(-1), 0, ix.reshape(-1))
    cdef int d = wrap_dim(dim, input._ndim, "take_along_dim")
    if ix._ndim != input._ndim:
        raise RuntimeError("torch.take_along_dim(): input and indices should have the same "
                           "number of dimensions, but got " + str(input._ndim) +
                           " dimensions for input, and " + str(ix._ndim) +
                           " dimensions for indices")
    ishape = list(input.shape)
    jshape = list(ix.shape)
    ishape[d] = 1
    jshape[d] = 1
    b = list(_core.broadcast_shapes(ishape, jshape))
    bi = list(b)
    bj = list(b)
    bi[d] = input._shape[d]
    bj[d] = ix._shape[d]
    r = gather(input.expand(*bi), d, ix.expand(*bj))
    if out is not None:
        return write_out(out, r, OUT_EXACT | OUT_NOALIAS, (input, indices), "take_along_dim")
    return r


def take(TensorBase input not None, index):
    """input treated as 1-D, at ``index`` (result has index's shape)."""
    cdef TensorBase ix = as_tensor(index, "take", "index")
    if needs_slow((input, ix)):
        return redispatch("take", take, (input, index), {})
    if ix._dtype != EM_I64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got {ix.dtype}")
    cdef int64_t n = numel_of(input._ndim, input._shape), bad, m
    cdef TensorBase ic = contig(ix)
    m = numel_of(ic._ndim, ic._shape)
    with nogil:
        bad = em_check_bounds(<const int64_t *>data_ptr(ic), m, -n, n)
    if bad >= 0:
        raise IndexError(f"out of range: tried to access index "
                         f"{(<const int64_t *>data_ptr(ic))[bad]} on a tensor of {n} elements.")
    flat = input.reshape(-1)
    if ix._ndim == 0:
        return getitem(flat, (ix.reshape(1),)).reshape(())
    return getitem(flat, (ix,))


def put(TensorBase input not None, index, source, accumulate=False):
    """Out-of-place ``put_``: input as 1-D with ``source`` written at ``index``."""
    cdef TensorBase ix = as_tensor(index, "put", "index")
    cdef TensorBase src = as_tensor(source, "put", "source")
    if ix._dtype != EM_I64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got {ix.dtype}")
    if src._dtype != input._dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {input.dtype} and source.dtype = {src.dtype}")
    if numel_of(ix._ndim, ix._shape) != numel_of(src._ndim, src._shape):
        raise RuntimeError(f"put_(): Expected source and index to have the same number of "
                           f"elements, but got source.numel() = "
                           f"{numel_of(src._ndim, src._shape)}, index.numel() = "
                           f"{numel_of(ix._ndim, ix._shape)}")
    cdef int64_t n = numel_of(input._ndim, input._shape), bad, m
    cdef TensorBase ic = contig(ix)
    m = numel_of(ic._ndim, ic._shape)
    with nogil:
        bad = em_check_bounds(<const int64_t *>data_ptr(ic), m, -n, n)
    if bad >= 0:
        raise IndexError(f"out of range: tried to access index "
                         f"{(<const int64_t *>data_ptr(ic))[bad]} on a tensor of {n} elements.")
    r = index_put(input.reshape(-1), (ix.reshape(-1),), src.reshape(-1), accumulate)
    return r.view(input.shape)


def put_(TensorBase self not None, index, source, accumulate=False):
    check_written(self, (index, source), "put_", True)
    if any_grad((self, source)):
        return commit_inplace(self, <TensorBase>put(graph_old(self, "put_"), index, source, accumulate))
    cdef TensorBase r = <TensorBase>put(self, index, source, accumulate)
    copy_into(self, r)
    bump_version(self)
    return self


# ----------------------------------------------------------------------------
# masks


cdef TensorBase _nonzero(TensorBase t):
    """(n, ndim) int64 coordinates of the non-zero elements of t."""
    cdef TensorBase m = contig(cast(t, EM_BOOL))
    cdef int64_t n = numel_of(m._ndim, m._shape), cnt
    cdef int64_t shp[2]
    with nogil:
        cnt = em_count_nonzero(<const uint8_t *>data_ptr(m), n, nthreads_for(n))
    shp[0] = cnt
    shp[1] = m._ndim
    cdef TensorBase r = new_tensor(2, shp, EM_I64, t._device)
    if cnt and m._ndim:
        with nogil:
            em_nonzero(<const uint8_t *>data_ptr(m), m._ndim, m._shape, n, <int64_t *>data_ptr(r))
    return r


def nonzero(TensorBase input not None, *, out=None, as_tuple=False):
    """Indices of the non-zero elements: an (n, ndim) tensor, or a tuple of 1-D tensors."""
    if needs_slow1(input):
        return redispatch("nonzero", nonzero, (input,), {"as_tuple": as_tuple} if out is None else
                          {"as_tuple": as_tuple, "out": out})
    cdef TensorBase r
    if as_tuple:
        r = _nonzero(_as1d(input))
        return tuple([r.select(1, j) for j in range(r._shape[1])])
    r = _nonzero(input)
    if out is not None:
        return write_out(out, r, OUT_EXACT, input, "nonzero")
    return r


def argwhere(TensorBase input not None):
    """Same as nonzero(input)."""
    return nonzero(input)


cdef int _masked_fill_impl(TensorBase self, TensorBase mask, object value) except -1:
    cdef em_fill_aux aux
    cdef NdIter it
    cdef TensorBase m = mask
    aux.itemsize = em_itemsize[self._dtype]
    aux.value = 0
    aux.value_hi = 0
    scalar_to_buf(value, self._dtype, &aux.value)
    if numel_of(self._ndim, self._shape) == 0:
        return 0
    if m._dtype != EM_BOOL:
        m = cast(m, EM_BOOL)
    m = _expand_view(m, self._ndim, self._shape,
                     f"The size of tensor a ({self._shape[self._ndim - 1] if self._ndim else 1})"
                     f" must match the size of tensor b "
                     f"({m._shape[m._ndim - 1] if m._ndim else 1}) at non-singleton dimension "
                     f"{self._ndim - 1 if self._ndim else 0}")
    iter_init(&it, [self, m], self._ndim, self._shape)
    with nogil:
        em_run_nd(em_masked_fill_loop, 2, it.ptrs, it.ndim, it.shape, it.strides, &aux,
                  nthreads_for(it.numel))
    return 0


cdef object _check_mask_value(TensorBase mask, object value, str op):
    if mask._dtype != EM_BOOL:
        raise RuntimeError(f"{op} only supports boolean masks, but got mask with dtype "
                           f"{_LOWER_NAMES[mask._dtype]}")
    if isinstance(value, TensorBase):
        if (<TensorBase>value)._ndim != 0:
            raise RuntimeError(f"{op} only supports a 0-dimensional value tensor, but got "
                               f"tensor with {(<TensorBase>value)._ndim} dimension(s).")
        return (<TensorBase>value).item()
    if scalar_category(value) < 0:
        raise TypeError(f"masked_fill(): argument 'value' must be Number or Tensor, not "
                        f"{type(value).__name__}")
    return value


def masked_fill(TensorBase input not None, mask, value):
    """input with ``value`` where ``mask`` (bool, broadcast) is True."""
    if needs_slow1(input):
        return redispatch("masked_fill", masked_fill, (input, mask, value), {})
    cdef TensorBase m = as_tensor(mask, "masked_fill", "mask")
    v = _check_mask_value(m, value, "masked_fill_")
    cdef int64_t shp[MAX_DIMS]
    cdef int nd = broadcast_shape(input._ndim, input._shape, m._ndim, m._shape, shp)
    cdef TensorBase r = new_tensor(nd, shp, input._dtype, input._device)
    copy_into(r, input)
    _masked_fill_impl(r, m, v)
    if any_grad((input, value)):
        record("masked_fill", (input, mask, value), r, None)
    return r


def masked_fill_(TensorBase self not None, mask, value):
    if any_grad((self, value)):
        return commit_inplace(self, <TensorBase>masked_fill(graph_old(self, "masked_fill_"), mask, value))
    if needs_slow1(self):
        return redispatch("masked_fill_", masked_fill_, (self, mask, value), {})
    cdef TensorBase m = as_tensor(mask, "masked_fill_", "mask")
    v = _check_mask_value(m, value, "masked_fill_")
    _masked_fill_impl(self, m, v)
    bump_version(self)
    return self


cdef tuple _broadcast_pair(TensorBase a, TensorBase b):
    cdef int64_t shp[MAX_DIMS]
    cdef int nd = broadcast_shape(a._ndim, a._shape, b._ndim, b._shape, shp)
    msg = "masked: shapes do not broadcast"
    return (_expand_view(a, nd, shp, msg), _expand_view(b, nd, shp, msg))


def masked_select(TensorBase input not None, mask, *, out=None):
    """1-D tensor of the elements of input where mask (broadcast) is True."""
    if needs_slow1(input):
        return redispatch("masked_select", masked_select, (input, mask),
                          {} if out is None else {"out": out})
    cdef TensorBase m = as_tensor(mask, "masked_select", "mask")
    if m._dtype != EM_BOOL:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    xa, ma = _broadcast_pair(input, m)
    cdef TensorBase x = contig(<TensorBase>xa), mc = contig(<TensorBase>ma)
    cdef int64_t n = numel_of(mc._ndim, mc._shape), cnt
    with nogil:
        cnt = em_count_nonzero(<const uint8_t *>data_ptr(mc), n, nthreads_for(n))
    cdef TensorBase r = new_tensor(1, &cnt, input._dtype, input._device)
    cdef int isz = em_itemsize[input._dtype]
    if cnt:
        with nogil:
            em_masked_select(data_ptr(r), data_ptr(x), <const uint8_t *>data_ptr(mc), n, isz)
    if grad_on() and input._requires_grad:
        record("masked_select", (input, mask), r, (shape_tuple(<TensorBase>xa),))
    if out is not None:
        return write_out(out, r, OUT_EXACT | OUT_NOALIAS, (input, mask), "masked_select")
    return r


def masked_scatter(TensorBase input not None, mask, source):
    """input with consecutive elements of source written where mask is True."""
    if needs_slow1(input):
        return redispatch("masked_scatter", masked_scatter, (input, mask, source), {})
    cdef TensorBase m = as_tensor(mask, "masked_scatter", "mask")
    cdef TensorBase src = as_tensor(source, "masked_scatter", "source")
    if m._dtype != EM_BOOL:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with "
                           f"dtype {_LOWER_NAMES[m._dtype]}")
    if src._dtype != input._dtype:
        raise RuntimeError(f"masked_scatter_: expected self and source to have same dtypes but "
                           f"got {torch_type_name(input._dtype)} and {torch_type_name(src._dtype)}")
    xa, ma = _broadcast_pair(input, m)
    cdef TensorBase r = _dup(<TensorBase>xa)
    cdef TensorBase mc = contig(<TensorBase>ma), sc = contig(src)
    cdef int64_t n = numel_of(mc._ndim, mc._shape), cnt
    with nogil:
        cnt = em_count_nonzero(<const uint8_t *>data_ptr(mc), n, nthreads_for(n))
    if cnt > numel_of(sc._ndim, sc._shape):
        raise RuntimeError("Number of elements of source < number of ones in mask")
    cdef int isz = em_itemsize[input._dtype]
    with nogil:
        em_masked_scatter(data_ptr(r), data_ptr(sc), <const uint8_t *>data_ptr(mc), n, isz)
    if any_grad((input, source)):
        record("masked_scatter", (input, mask, source), r, (shape_tuple(src),))
    return r


def masked_scatter_(TensorBase self not None, mask, source):
    check_written(self, (mask, source), "masked_scatter_", True)
    if any_grad((self, source)):
        return commit_inplace(self, <TensorBase>masked_scatter(graph_old(self, "masked_scatter_"), mask,
                                                        source))
    cdef TensorBase r = <TensorBase>masked_scatter(self, mask, source)
    if r._ndim != self._ndim or numel_of(r._ndim, r._shape) != numel_of(self._ndim,
                                                                         self._shape):
        raise RuntimeError("masked_scatter_: mask must be broadcastable to self")
    copy_into(self, r)
    bump_version(self)
    return self


# ----------------------------------------------------------------------------
# joins


cdef list _tensor_list(object tensors, str op):
    if isinstance(tensors, TensorBase):
        raise TypeError(f"{op}(): argument 'tensors' (position 1) must be tuple of Tensors, "
                        f"not Tensor")
    if not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{op}(): argument 'tensors' (position 1) must be tuple of Tensors, "
                        f"not {type(tensors).__name__}")
    cdef int i = 0
    for t in tensors:
        if not isinstance(t, TensorBase):
            m = type(t).__module__
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            + (type(t).__name__ if m == "builtins" else
                               f"{m.partition('.')[0]}.{type(t).__qualname__}"))
        i += 1
    return list(tensors)


def cat(tensors, dim=0, *, out=None, axis=None):
    """Concatenate tensors along an existing dim (dtype promoted across inputs); ``axis``
    is NumPy's spelling of ``dim``, accepted as torch does."""
    if axis is not None:
        dim = axis
    cdef list ts = _tensor_list(tensors, "cat")
    cdef TensorBase t, ref = None, r
    cdef int i, j, rd = -1, d, nd
    if not ts:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    for t in ts:
        if off_fast(t) or slow_path():
            if not slow_path() and t._device.kind != DEV_CPU:   # mixed devices fail here
                for i in range(1, len(ts)):
                    check_same_device(<TensorBase>ts[0], <TensorBase>ts[i], "cat", "tensors")
            return redispatch("cat", cat, (tensors,), {"dim": dim})
    for i in range(len(ts)):
        t = <TensorBase>ts[i]
        if t._ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be "
                               f"concatenated")
        rd = t._dtype if rd < 0 else promote(rd, t._dtype)
        if ref is None and not (t._ndim == 1 and t._shape[0] == 0):
            ref = t
    if ref is None:
        ref = <TensorBase>ts[0]
    nd = ref._ndim
    d = wrap_dim(dim, nd, "cat")
    cdef int64_t shp[MAX_DIMS]
    cdef int64_t total = 0
    cdef list sizes = []
    for i in range(nd):
        shp[i] = ref._shape[i]
    for i in range(len(ts)):
        t = <TensorBase>ts[i]
        if t._ndim == 1 and t._shape[0] == 0 and t is not ref:
            sizes.append(0)
            continue
        if t._ndim != nd:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {nd} and "
                               f"{t._ndim}")
        for j in range(nd):
            if j != d and t._shape[j] != ref._shape[j]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. "
                                   f"Expected size {ref._shape[j]} but got size {t._shape[j]} "
                                   f"for tensor number {i} in the list.")
        sizes.append(t._shape[d])
        total += t._shape[d]
    shp[d] = total
    r = new_tensor(nd, shp, rd, ref._device)
    if (nd == 4 or nd == 5) and all([cl_order(<TensorBase>x) for x in ts]):
        r = new_cl(nd, shp, rd, ref._device)    # torch: the inputs' common memory format
    _cat_into(r, ts, sizes, d)
    if grad_on() and any([(<TensorBase>x)._requires_grad for x in ts]):
        record("cat", tuple(ts), r, (d, tuple(sizes), tuple([
            (<TensorBase>x)._ndim == 1 and (<TensorBase>x)._shape[0] == 0 and x is not ref
            for x in ts])))
    if out is not None:
        if isinstance(out, TensorBase) and not castable(rd, (<TensorBase>out)._dtype):
            raise TypeError(f"torch.cat(): input types can't be cast to the desired output type "
                            f"{torch_type_name((<TensorBase>out)._dtype)}")
        return write_out(out, r, OUT_CAST | OUT_NOALIAS, ts, "cat")
    return r


cdef int _cat_into(TensorBase r, list ts, list sizes, int d) except -1:
    cdef int n = len(ts), i, q = 0
    cdef int isz = em_itemsize[r._dtype]
    cdef int64_t outer = numel_of(d, r._shape), inner = numel_of(r._ndim - d - 1, &r._shape[d + 1])
    cdef int64_t start = 0, sz
    cdef bint fast = True
    cdef TensorBase t
    for i in range(n):
        t = <TensorBase>ts[i]
        if sizes[i] and (t._dtype != r._dtype or not is_contig(t)):
            fast = False
    if fast and n <= 64:
        srcs = []
        rowb = []
        colb = []
        for i in range(n):
            sz = sizes[i]
            if sz == 0:
                continue
            srcs.append(ts[i])
            rowb.append(sz * inner * isz)
            colb.append(start * inner * isz)
            start += sz
        return _cat_fast(r, srcs, rowb, colb, outer, inner * r._shape[d] * isz)
    for i in range(n):
        sz = sizes[i]
        if sz == 0:
            continue
        copy_into(_narrow_view(r, d, start, sz), <TensorBase>ts[i])
        start += sz
    return 0


cdef int _cat_fast(TensorBase r, list srcs, list rowb, list colb, int64_t outer,
                   int64_t out_row) except -1:
    cdef char *ptrs[64]
    cdef int64_t rb[64]
    cdef int64_t cb[64]
    cdef int n = len(srcs), i
    for i in range(n):
        ptrs[i] = data_ptr(<TensorBase>srcs[i])
        rb[i] = rowb[i]
        cb[i] = colb[i]
    cdef int nt = nthreads_for(numel_of(r._ndim, r._shape))
    with nogil:
        em_cat_rows(data_ptr(r), outer, out_row, n, ptrs, rb, cb, nt)
    return 0


def stack(tensors, dim=0, *, out=None):
    """Join equally shaped tensors along a new dim."""
    cdef list ts = _tensor_list(tensors, "stack")
    cdef TensorBase t0, t
    if not ts:
        raise RuntimeError("stack expects a non-empty TensorList")
    t0 = <TensorBase>ts[0]
    cdef int i, j
    for i in range(1, len(ts)):
        t = <TensorBase>ts[i]
        if t._ndim != t0._ndim or any([t._shape[j] != t0._shape[j] for j in range(t._ndim)]):
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{_shape_list(t0)} at entry 0 and {_shape_list(t)} at entry {i}")
    cdef int d = wrap_dim(dim, t0._ndim + 1, "stack")
    return cat([x.unsqueeze(d) for x in ts], d, out=out)


def atleast_1d(*tensors):
    """Views with at least one dimension."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return tuple([atleast_1d(t) for t in tensors[0]])
    if len(tensors) != 1:
        return tuple([atleast_1d(t) for t in tensors])
    t = tensors[0]
    as_tensor(t, "atleast_1d", "tensors")
    return t.reshape(1) if t.dim() == 0 else t


def atleast_2d(*tensors):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return tuple([atleast_2d(t) for t in tensors[0]])
    if len(tensors) != 1:
        return tuple([atleast_2d(t) for t in tensors])
    t = tensors[0]
    as_tensor(t, "atleast_2d", "tensors")
    if t.dim() == 0:
        return t.reshape(1, 1)
    if t.dim() == 1:
        return t.unsqueeze(0)
    return t


def atleast_3d(*tensors):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return tuple([atleast_3d(t) for t in tensors[0]])
    if len(tensors) != 1:
        return tuple([atleast_3d(t) for t in tensors])
    t = tensors[0]
    as_tensor(t, "atleast_3d", "tensors")
    if t.dim() == 0:
        return t.reshape(1, 1, 1)
    if t.dim() == 1:
        return t.unsqueeze(0).unsqueeze(-1)
    if t.dim() == 2:
        return t.unsqueeze(-1)
    return t


def hstack(tensors, *, out=None):
    ts = atleast_1d(tuple(_tensor_list(tensors, "hstack")))
    if not ts:
        raise RuntimeError("hstack expects a non-empty TensorList")
    return cat(ts, 0 if ts[0].dim() == 1 else 1, out=out)


def vstack(tensors, *, out=None):
    ts = atleast_2d(tuple(_tensor_list(tensors, "vstack")))
    if not ts:
        raise RuntimeError("vstack expects a non-empty TensorList")
    return cat(ts, 0, out=out)


def dstack(tensors, *, out=None):
    ts = atleast_3d(tuple(_tensor_list(tensors, "dstack")))
    if not ts:
        raise RuntimeError("dstack expects a non-empty TensorList")
    return cat(ts, 2, out=out)


def column_stack(tensors, *, out=None):
    ts = _tensor_list(tensors, "column_stack")
    if not ts:
        raise RuntimeError("column_stack expects a non-empty TensorList")
    cols = [t.reshape(t.numel(), 1) if t.dim() <= 1 else t for t in ts]
    return cat(cols, 1, out=out)


def broadcast_tensors(*tensors):
    """Views of the tensors expanded to their common broadcast shape."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    for t in tensors:
        as_tensor(t, "broadcast_tensors", "tensors")
    shape = _core.broadcast_shapes(*[t.shape for t in tensors])
    return tuple([t if tuple(t.shape) == tuple(shape) else t.expand(*shape) for t in tensors])


def meshgrid(*tensors, indexing=None):
    """Coordinate grids from 1-D tensors; indexing "ij" (default) or "xy"."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise ValueError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but "
                         f"received: {indexing}")
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    ts = []
    for t in tensors:
        if not isinstance(t, TensorBase):
            raise TypeError(f"meshgrid(): expected Tensor, got {type(t).__name__}")
        if t.dim() > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but "
                               f"got: {t}")
        ts.append(t.reshape(-1))
    for t in ts[1:]:
        if t.dtype != ts[0].dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    n = len(ts)
    swap = indexing == "xy" and n >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = [t.numel() for t in ts]
    outs = []
    for i, t in enumerate(ts):
        vs = [1] * n
        vs[i] = shape[i]
        outs.append(t.view(*vs).expand(*shape))
    if swap:
        outs[0], outs[1] = outs[1], outs[0]
    return tuple(outs)


# ----------------------------------------------------------------------------
# reorders


cdef list _dims_list(object dims, int nd, str op):
    if isinstance(dims, int):
        dims = [dims]
    cdef list out = []
    for x in dims:
        d = wrap_dim(x, nd, op)
        if d in out:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        out.append(d)
    return out


def flip(TensorBase input not None, *dims):
    """A copy of input with the order of elements reversed along ``dims``."""
    if needs_slow1(input):
        return redispatch("flip", flip, (input,) + dims, {})
    if len(dims) == 1 and not isinstance(dims[0], int):
        dims = tuple(dims[0])
    cdef list ds = _dims_list(dims, input._ndim, "flip")
    cdef TensorBase v = make_view(input, input._ndim, input._shape, input._strides,
                                  input._offset)
    cdef int d
    for d in ds:
        if input._ndim == 0:
            continue
        if v._shape[d] > 0:
            v._offset += (v._shape[d] - 1) * v._strides[d]
        v._strides[d] = -v._strides[d]
    cdef TensorBase r = new_like(input, -1)
    copy_into(r, v)
    if grad_on() and input._requires_grad:
        record("flip", (input,), r, (tuple(ds),))
    return r


def fliplr(TensorBase input not None):
    if input._ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, (1,))


def flipud(TensorBase input not None):
    if input._ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, (0,))


def roll(TensorBase input not None, shifts, dims=None):
    """Elements shifted cyclically along dims (flattened when dims is None)."""
    if needs_slow1(input):
        return redispatch("roll", roll, (input, shifts, dims), {})
    sh = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    if dims is None:
        if len(sh) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(sh)}, dims:0")
        return roll(input.reshape(-1), sh, (0,)).view(input.shape)
    ds = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(sh) != len(ds):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(sh)}, "
                           f"dims:{len(ds)}")
    cdef TensorBase cur = input, r
    cdef int d, k
    cdef int64_t n, s
    wd = []
    for k in range(len(ds)):
        d = wrap_dim(ds[k], input._ndim, "roll")
        wd.append(d)
        n = cur._shape[d] if cur._ndim else 1
        r = new_like(cur, -1)
        if n == 0 or cur._ndim == 0:
            copy_into(r, cur)
            cur = r
            continue
        s = sh[k] % n
        if s == 0:
            copy_into(r, cur)
        else:
            copy_into(_narrow_view(r, d, s, n - s), _narrow_view(cur, d, 0, n - s))
            copy_into(_narrow_view(r, d, 0, s), _narrow_view(cur, d, n - s, s))
        cur = r
    if cur is input:
        cur = _dup(input)
    if grad_on() and input._requires_grad:
        record("roll", (input,), cur, (tuple(sh), tuple(wd)))
    return cur


def repeat(TensorBase input not None, *sizes):
    """input tiled ``sizes`` times along each dim (sizes may add leading dims)."""
    if needs_slow1(input):
        return redispatch("repeat", repeat, (input,) + sizes, {})
    cdef int64_t rep[MAX_DIMS]
    cdef int n = parse_shape(sizes, rep, "repeat"), k, i
    if n < input._ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number "
                           "of dimensions of tensor")
    if 2 * n > MAX_DIMS:
        raise RuntimeError(f"repeat: ember supports at most {MAX_DIMS // 2} repeat dims")
    for i in range(n):
        if rep[i] < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {rep[i]}: "
                               f"{[rep[j] for j in range(n)]}")
    k = n - input._ndim
    cdef int64_t shp[MAX_DIMS]
    cdef int64_t st[MAX_DIMS]
    cdef int64_t fin[MAX_DIMS]
    for i in range(n):
        shp[2 * i] = rep[i]
        st[2 * i] = 0
        shp[2 * i + 1] = input._shape[i - k] if i >= k else 1
        st[2 * i + 1] = input._strides[i - k] if i >= k else 0
        fin[i] = mul_sizes(shp[2 * i], shp[2 * i + 1], "repeat")
    check_alloc(n, fin, input._dtype, "repeat")
    cdef TensorBase src = make_view(input, 2 * n, shp, st, input._offset)
    cdef TensorBase r = new_tensor(n, fin, input._dtype, input._device)
    cdef int64_t inner = 1
    for i in range(n - 1, -1, -1):
        st[2 * i + 1] = inner
        st[2 * i] = inner * shp[2 * i + 1]
        inner *= fin[i]
    copy_into(make_view(r, 2 * n, shp, st, 0), src)
    if grad_on() and input._requires_grad:
        record("repeat", (input,), r, (tuple(input.shape), tuple([rep[i] for i in range(n)])))
    return r


def tile(TensorBase input not None, dims):
    """repeat() with dims padded by leading 1s to input.dim()."""
    if isinstance(dims, int):
        dims = (dims,)
    dims = tuple(dims)
    if len(dims) < input._ndim:
        dims = (1,) * (input._ndim - len(dims)) + dims
    return repeat(input, *dims)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Repeat each element (or slice along dim) ``repeats`` times."""
    cdef TensorBase x, rp
    cdef int64_t n, i, j, k, total, c
    cdef int64_t *src
    cdef int64_t *dst
    if repeats is None:
        rp = as_tensor(input, "repeat_interleave", "repeats")
        if needs_slow1(rp):
            return redispatch("repeat_interleave", repeat_interleave, (input,), {})
        if rp._ndim > 1:
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
        if rp._dtype != EM_I64 and rp._dtype != EM_I32:
            raise RuntimeError("repeats has to be Long or Int tensor")
        rp = _long_contig(_as1d(rp))
        n = rp._shape[0]
        src = <int64_t *>data_ptr(rp)
        total = 0
        for i in range(n):
            if src[i] < 0:
                raise RuntimeError("repeats can not be negative")
            if src[i] > INT64_MAX - total:
                raise RuntimeError("repeat_interleave: the repeats sum to more than int64 holds")
            total += src[i]
        r = new_tensor(1, &total, EM_I64, cpu_device())
        dst = <int64_t *>data_ptr(<TensorBase>r)
        k = 0
        for i in range(n):
            for j in range(src[i]):
                dst[k] = i
                k += 1
        return r
    x = as_tensor(input, "repeat_interleave", "input")
    if dim is None:
        x = x.reshape(-1)
        d = 0
    else:
        d = wrap_dim(dim, x._ndim, "repeat_interleave")
    if x._ndim == 0:
        x = x.reshape(1)
    if isinstance(repeats, TensorBase) and (<TensorBase>repeats)._ndim > 0 and \
            (<TensorBase>repeats).numel() != 1:
        rp = <TensorBase>repeats
        if rp._ndim != 1 or rp._shape[0] != x._shape[d]:
            raise RuntimeError("repeats must have the same size as input along dim, but got "
                               f"repeats.size(0) = {rp._shape[0] if rp._ndim else 1} and "
                               f"input.size({d}) = {x._shape[d]}")
        return index_select(x, d, repeat_interleave(rp))
    c = int64_arg(operator.index(repeats), "repeat_interleave", "repeats")
    if c < 0:
        raise RuntimeError("repeats can not be negative")
    shape = list(x.shape)
    ex = list(shape)
    ex.insert(d + 1, c)
    shape[d] = shape[d] * c
    return x.unsqueeze(d + 1).expand(*ex).reshape(*shape)


cdef object _tri(TensorBase input, int64_t k, bint upper, str name):
    if input._ndim < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
    cdef TensorBase r = new_like(input, -1)
    copy_into(r, input)
    cdef int64_t rows = input._shape[input._ndim - 2], cols = input._shape[input._ndim - 1]
    cdef int64_t batch = numel_of(input._ndim - 2, input._shape)
    cdef int isz = em_itemsize[input._dtype]
    cdef int nt = nthreads_for(numel_of(input._ndim, input._shape))
    if rows and cols and batch:
        with nogil:
            em_tri(data_ptr(r), batch, rows, cols, k, upper, isz, nt)
    if grad_on() and input._requires_grad:
        record(name, (input,), r, (k,))
    return r


def tril(TensorBase input not None, diagonal=0, *, out=None):
    """The lower triangle (j - i <= diagonal) of the last two dims; the rest zero."""
    if needs_slow1(input):
        return redispatch("tril", tril, (input, diagonal), {})
    r = _tri(input, int64_arg(diagonal, "tril", "diagonal"), False, "tril")
    return write_out(out, r, OUT_EXACT, input, "tril")


def triu(TensorBase input not None, diagonal=0, *, out=None):
    """The upper triangle (j - i >= diagonal) of the last two dims; the rest zero."""
    if needs_slow1(input):
        return redispatch("triu", triu, (input, diagonal), {})
    r = _tri(input, int64_arg(diagonal, "triu", "diagonal"), True, "triu")
    return write_out(out, r, OUT_EXACT, input, "triu")


def tril_(TensorBase self not None, diagonal=0):
    if any_grad((self,)):
        return commit_inplace(self, <TensorBase>tril(graph_old(self, "tril_"), diagonal))
    copy_into(self, <TensorBase>tril(self, diagonal))
    bump_version(self)
    return self


def triu_(TensorBase self not None, diagonal=0):
    if any_grad((self,)):
        return commit_inplace(self, <TensorBase>triu(graph_old(self, "triu_"), diagonal))
    copy_into(self, <TensorBase>triu(self, diagonal))
    bump_version(self)
    return self


def diag_embed(TensorBase input not None, offset=0, dim1=-2, dim2=-1):
    """Batched diagonal matrices whose diagonals (dims dim1, dim2) are input's last dim."""
    if needs_slow1(input):
        return redispatch("diag_embed", diag_embed, (input, offset, dim1, dim2), {})
    cdef int nd = input._ndim + 1
    cdef int a = wrap_dim(dim1, nd, "diag_embed"), b = wrap_dim(dim2, nd, "diag_embed")
    if a == b:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = (input._shape[input._ndim - 1] if input._ndim else 1) + abs(operator.index(offset))
    rest = list(input.shape)
    if rest:
        rest.pop()
    shape = []
    it = iter(rest)
    for i in range(nd):
        shape.append(n if i in (a, b) else next(it))
    r = _core.zeros(*shape, dtype=input.dtype)
    dv = r.diagonal(offset, a, b)
    cdef TensorBase src = input if input._ndim else _as1d(input)
    copy_into(<TensorBase>dv, src)
    if grad_on() and input._requires_grad:
        record("diag_embed", (input,), r, (offset, a, b))
    return r


def diag(TensorBase input not None, diagonal=0, *, out=None):
    """1-D input -> square matrix with it on a diagonal; 2-D -> that diagonal (a copy)."""
    if needs_slow1(input):
        return redispatch("diag", diag, (input, diagonal), {})
    if input._ndim == 1:
        r = diag_embed(input, diagonal, 0, 1)
    elif input._ndim == 2:
        r = input.diagonal(diagonal).clone()
    else:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input._ndim}D")
    return write_out(out, r, OUT_EXACT, input, "diag")
