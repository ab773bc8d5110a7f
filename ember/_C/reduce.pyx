# cython: freethreading_compatible = False
"""Reductions, scans, softmax and sorting.

Every reduction goes: argument checks -> (slow path: Python mode / plugin
device) -> cast to the compute dtype (float16/bfloat16 -> float32, integers ->
int64) -> arrange the input as a contiguous [O, K, I] block (K = the reduced
dims; no copy when the memory layout allows it) -> one C kernel with the GIL
released -> results scattered into the output's layout -> autograd record.

Kernels (src_c/reduce.c, src_c/sort.c) are deterministic: the result does not
depend on the number of threads."""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libc.string cimport memset
from libc.math cimport isnan, INFINITY

from ember._C.core cimport *
from ember._C.frame cimport *
from ember._C.core import Size
from ember._C import elementwise as _ew
import builtins as _bi
import collections as _collections
import math as _math
import types as _types
import warnings as _warnings

from ember._C.c_attention cimport *

from ember._C.c_norm cimport *

from ember._C.c_reduce cimport *

cdef dict _PUBLIC = {}


# ---------------------------------------------------------------------------
# structseq-like result types (torch.return_types.*)

def _rt(str name, fields=("values", "indices")):
    cls = _collections.namedtuple(name, fields)
    cls.__module__ = "ember.return_types"
    cls.__qualname__ = name
    return cls


return_types = _types.SimpleNamespace(**{n: _rt(n) for n in (
    "max", "min", "sort", "topk", "kthvalue", "median", "nanmedian", "mode", "cummax",
    "cummin")})
return_types.aminmax = _rt("aminmax", ("min", "max"))
return_types.histogram = _rt("histogram", ("hist", "bin_edges"))
return_types.frexp = _rt("frexp", ("mantissa", "exponent"))


# ---------------------------------------------------------------------------
# helpers

cdef inline int _cdt(int d) noexcept:
    """Compute dtype of a reduction over dtype d."""
    if d == EM_F64:
        return EM_F64
    if d >= EM_F16:
        return EM_F32
    return EM_I64


cdef inline TensorBase _as_t(object x, str op):
    cdef TensorBase t = as_tensor(x, op, "input", 1)
    if category(t._dtype) == 3 and op in ("any", "all", "count_nonzero"):
        return <TensorBase>_ew.ne(t, 0)       # truth of a complex value: nonzero
    if category(t._dtype) == 3 and op not in ("sum", "mean", "prod", "cumsum", "cumprod", "var",
                                              "std", "var_mean", "std_mean", "logsumexp",
                                              "logcumsumexp"):
        # the kernels here are real-only: never let a complex input lose its imaginary part
        if op in ("argmax", "argmin"):
            raise RuntimeError(f"{op}(): does not support complex input")
        if op in ("sort", "argsort", "msort", "topk"):
            raise RuntimeError(f"{op}: does not support complex dtypes on CPU")
        raise NotImplementedError(f"\"{op}_cpu\" not implemented for "
                                  f"'{torch_type_name(t._dtype)}'")
    return t


cdef object _complex_reduce(str op, TensorBase t, dim, keepdim, dtype, out):
    from ember._C import cplx
    return cplx.reduce(op, t, dim, keepdim, dtype, out)


cdef int _dim_mask(object dim, int ndim, str op, bint *mask) except -1:
    """mask[d]: dim d is reduced.  None or () reduces every dim."""
    cdef int i, d
    for i in range(MAX_DIMS):
        mask[i] = False
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        for i in range(ndim):
            mask[i] = True
        return 0
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    for dd in dims:
        if isinstance(dd, bool) or not (isinstance(dd, int) or hasattr(dd, "__index__")):
            raise TypeError(f"{op}(): argument 'dim' must be tuple of ints, but found element "
                            f"of type {type(dd).__name__}")
        d = wrap_dim(dd.__index__(), ndim, op)
        if ndim == 0:
            continue
        if mask[d]:
            raise RuntimeError(f"{op}(): dim {d} appears multiple times in the list of dims")
        mask[d] = True
    return 0


cdef tuple _mask_tuple(bint *mask, int ndim):
    return tuple([i for i in range(ndim) if mask[i]])


cdef int _one_dim(object dim, int ndim, str op) except -100:
    if isinstance(dim, bool) or not (isinstance(dim, int) or hasattr(dim, "__index__")):
        raise TypeError(f"{op}(): argument 'dim' must be int, not {type(dim).__name__}")
    return wrap_dim(dim.__index__(), ndim, op)


cdef class _Arr:
    """A reduction's plan: the input as a contiguous [O, K, I] block and the
    map from the kernel's [O, I] output to the output tensor."""
    cdef TensorBase xc
    cdef int64_t O, K, I
    cdef int nk
    cdef int korder[MAX_DIMS]     # original dims (size != 1) of the kernel output, in order
    cdef bint direct              # kernel output order == output tensor order
    cdef int ond
    cdef int64_t oshape[MAX_DIMS]
    cdef int omap[MAX_DIMS]       # original dim -> output dim, -1 when dropped
    cdef int first_red_zero       # a reduced dim of size 0 (-1: none)


cdef _Arr _arrange(TensorBase x, bint *red, bint keepdim):
    cdef _Arr a = _Arr.__new__(_Arr)
    cdef int nd = x._ndim, i, j, t, n = 0, m = 0, first = -1, last = -1
    cdef int order[MAX_DIMS]
    cdef int seq[MAX_DIMS]
    cdef int64_t shp[MAX_DIMS]
    cdef int64_t st[MAX_DIMS]
    cdef int64_t expected = 1
    cdef bint ok = True, adjacent = True
    cdef TensorBase base
    a.ond = 0
    a.first_red_zero = -1
    for i in range(nd):
        if red[i]:
            if x._shape[i] == 0 and a.first_red_zero < 0:
                a.first_red_zero = i
            if keepdim:
                a.omap[i] = a.ond
                a.oshape[a.ond] = 1
                a.ond += 1
            else:
                a.omap[i] = -1
        else:
            a.omap[i] = a.ond
            a.oshape[a.ond] = x._shape[i]
            a.ond += 1
    # the order of dims in memory (largest stride first)
    for i in range(nd):
        order[i] = i
    for i in range(1, nd):
        j = i
        while j > 0 and x._strides[order[j - 1]] < x._strides[order[j]]:
            t = order[j - 1]
            order[j - 1] = order[j]
            order[j] = t
            j -= 1
    for i in range(nd - 1, -1, -1):
        t = order[i]
        if x._shape[t] != 1:
            if x._strides[t] != expected:
                ok = False
                break
            expected *= x._shape[t]
    if ok:
        base = x
    else:
        base = contig(x)
        for i in range(nd):
            order[i] = i
    for i in range(nd):
        if base._shape[order[i]] != 1:
            seq[n] = order[i]
            n += 1
    for i in range(n):
        if red[seq[i]]:
            if first < 0:
                first = i
            elif last != i - 1:
                adjacent = False
            last = i
    a.O = 1
    a.K = 1
    a.I = 1
    a.nk = 0
    if adjacent:
        for i in range(n):
            t = seq[i]
            if red[t]:
                a.K *= base._shape[t]
            else:
                if first < 0 or i < first:
                    a.O *= base._shape[t]
                else:
                    a.I *= base._shape[t]
                a.korder[a.nk] = t
                a.nk += 1
        a.xc = base
    else:
        for i in range(n):
            t = seq[i]
            if not red[t]:
                shp[m] = base._shape[t]
                st[m] = base._strides[t]
                m += 1
                a.O *= base._shape[t]
                a.korder[a.nk] = t
                a.nk += 1
        for i in range(n):
            t = seq[i]
            if red[t]:
                shp[m] = base._shape[t]
                st[m] = base._strides[t]
                m += 1
                a.K *= base._shape[t]
        a.xc = contig(make_view(base, m, shp, st, base._offset))
    a.direct = True
    for i in range(1, a.nk):
        if a.korder[i] < a.korder[i - 1]:
            a.direct = False
    return a


cdef TensorBase _new_out(_Arr a, int dtype):
    return new_tensor(a.ond, a.oshape, dtype, cpu_device())


cdef TensorBase _buf_for(_Arr a, TensorBase res):
    """The tensor the kernel writes: res itself when layouts agree, else a temporary."""
    cdef int64_t shp[MAX_DIMS]
    cdef int j
    if a.direct:
        return res
    for j in range(a.nk):
        shp[j] = res._shape[a.omap[a.korder[j]]]
    return new_tensor(a.nk, shp, res._dtype, cpu_device())


cdef TensorBase _kbuf(_Arr a, int dtype):
    """A temporary in the kernel's [O, I] layout."""
    cdef int64_t n = a.O * a.I
    return new_tensor(1, &n, dtype, cpu_device())


cdef int _scatter(_Arr a, TensorBase res, TensorBase buf) except -1:
    cdef int64_t shp[MAX_DIMS]
    cdef int64_t st[MAX_DIMS]
    cdef int j, od
    if buf is res:
        return 0
    for j in range(a.nk):
        od = a.omap[a.korder[j]]
        shp[j] = res._shape[od]
        st[j] = res._strides[od]
    copy_into(make_view(res, a.nk, shp, st, res._offset), buf.reshape(
        *[shp[j] for j in range(a.nk)]))
    return 0


cdef int _kern(_Arr a, int op, int cdt, TensorBase buf, const void *center, double p) except -1:
    cdef int rc
    cdef char *x = data_ptr(a.xc)
    cdef char *o = data_ptr(buf)
    cdef int nt = nthreads_for(a.O * a.K * a.I)
    with nogil:
        rc = em_reduce(op, cdt, x, a.O, a.K, a.I, o, center, p, nt)
    if rc:
        raise RuntimeError(f"reduce: no kernel for op {op} and dtype {torch_type_name(cdt)}")
    return 0


cdef void _post(int mode, TensorBase buf, double v, TensorBase center) noexcept:
    cdef int64_t n = numel_of(buf._ndim, buf._shape)
    cdef const void *c = NULL if center is None else <const void *>data_ptr(center)
    cdef char *o = data_ptr(buf)
    em_reduce_post(mode, buf._dtype, o, n, v, c)


cdef TensorBase _reduce_one(TensorBase x, bint *red, bint keepdim, int op, int post=RP_NONE,
                            double p=0, double pa=0, bint div_k=False):
    """One kernel: x already in a compute dtype (F32/F64/I64, or BOOL for RD_SUM)."""
    cdef _Arr a = _arrange(x, red, keepdim)
    cdef int odt = EM_I64 if x._dtype == EM_BOOL else x._dtype
    cdef TensorBase res = _new_out(a, odt)
    cdef TensorBase buf = _buf_for(a, res)
    _kern(a, op, x._dtype, buf, NULL, p)
    if div_k:
        post = RP_DIV
        pa = <double>a.K
    if post != RP_NONE:
        _post(post, buf, pa, None)
    _scatter(a, res, buf)
    return res


cdef object _finish(TensorBase r, int dt):
    return r if r._dtype == dt else cast(r, dt)


cdef object _out(object res, object out, object inputs, str op, int policy=OUT_CAST):
    return write_out(out, <TensorBase?>res, policy, inputs, op)


cdef object _out_pair(object v, object i, object out, object inputs, str op, object rt):
    """(values, indices) results: both written into out=(values, indices)."""
    if out is None:
        return rt(v, i)
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise TypeError(f"{op}(): argument 'out' must be a tuple of 2 Tensors")
    if isinstance(out[0], TensorBase) and isinstance(out[1], TensorBase):
        check_written(<TensorBase>out[0], out[1], op, True)
    return rt(write_out(out[0], <TensorBase?>v, OUT_EXACT, inputs, op),
              write_out(out[1], <TensorBase?>i, OUT_EXACT, inputs, op))


cdef object _out_dtype(object dtype, object out):
    """Reductions with out= and no dtype compute in out's dtype, as torch does."""
    if dtype is None and isinstance(out, TensorBase):
        return (<TensorBase>out).dtype
    return dtype


# ---------------------------------------------------------------------------
# sum, mean, prod, nansum, nanmean

cdef int _sum_dtype(int d) noexcept:
    return EM_I64 if d < EM_F16 else d


def sum(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Sum of the elements over ``dim`` (int, tuple or None for all)."""
    cdef TensorBase t = _as_t(input, "sum")
    cdef bint red[MAX_DIMS]
    if needs_slow1(t):
        return redispatch("sum", sum, (input,), {"dim": dim, "keepdim": keepdim, "dtype": dtype})
    if category(t._dtype) == 3 or (dtype is not None and category(dtype_code(dtype)) == 3):
        return _complex_reduce("sum", t, dim, keepdim, dtype, out)
    if isinstance(dim, DType) and dtype is None:
        dtype, dim = dim, None
    _dim_mask(dim, t._ndim, "sum", red)
    cdef int rdt = dtype_code(_out_dtype(dtype, out))
    cdef TensorBase x = t if rdt < 0 else cast(t, rdt)
    if rdt < 0:
        rdt = _sum_dtype(t._dtype)
    cdef int cd = EM_BOOL if x._dtype == EM_BOOL else _cdt(x._dtype)
    r = _finish(_reduce_one(cast(x, cd), red, keepdim, RD_SUM), rdt)
    if wants_grad1(t) and category(rdt) == 2:
        record("sum", (input,), r, {"dim": _mask_tuple(red, t._ndim), "keepdim": bool(keepdim)})
    return _out(r, out, input, "sum")


cdef int _nansum_dtype(TensorBase t, int rdt) except -1:
    if category(t._dtype) == 2 and category(rdt) < 2:
        raise NotImplementedError(f"\"nansum_cpu\" not implemented for '{torch_type_name(rdt)}'")
    return 0


def nansum(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Sum treating NaN as zero."""
    cdef TensorBase t = _as_t(input, "nansum")
    cdef bint red[MAX_DIMS]
    if needs_slow1(t):
        return redispatch("nansum", nansum, (input,),
                          {"dim": dim, "keepdim": keepdim, "dtype": dtype})
    _dim_mask(dim, t._ndim, "nansum", red)
    cdef int rdt = dtype_code(_out_dtype(dtype, out))
    if rdt >= 0:
        _nansum_dtype(t, rdt)
    cdef TensorBase x = t if rdt < 0 else cast(t, rdt)
    if rdt < 0:
        rdt = _sum_dtype(t._dtype)
    if category(x._dtype) < 2:
        r = _finish(_reduce_one(cast(x, EM_I64), red, keepdim, RD_SUM), rdt)
    else:
        r = _finish(_reduce_one(cast(x, _cdt(x._dtype)), red, keepdim, RD_NANSUM), rdt)
    if wants_grad1(t) and category(rdt) == 2:
        record("nansum", (input,), r, {"dim": _mask_tuple(red, t._ndim), "keepdim": bool(keepdim)})
    return _out(r, out, input, "nansum")


def mean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Arithmetic mean over ``dim``; floating-point inputs (or ``dtype``) only."""
    cdef TensorBase t = _as_t(input, "mean")
    cdef bint red[MAX_DIMS]
    if needs_slow1(t):
        return redispatch("mean", mean, (input,), {"dim": dim, "keepdim": keepdim, "dtype": dtype})
    if category(t._dtype) == 3 or (dtype is not None and category(dtype_code(dtype)) == 3):
        return _complex_reduce("mean", t, dim, keepdim, dtype, out)
    _dim_mask(dim, t._ndim, "mean", red)
    cdef int rdt = dtype_code(_out_dtype(dtype, out))
    if rdt < 0:
        rdt = t._dtype
    if category(rdt) < 2:
        raise RuntimeError(f"mean(): could not infer output dtype. "
                           f"{'Input' if dtype is None else 'Optional'} dtype must be either a "
                           f"floating point or complex dtype. Got: {torch_type_name(rdt)}")
    r = _finish(_reduce_one(cast(t, _cdt(rdt)), red, keepdim, RD_SUM, RP_NONE, 0, 0, True), rdt)
    if wants_grad1(t):
        record("mean", (input,), r, {"dim": _mask_tuple(red, t._ndim), "keepdim": bool(keepdim)})
    return _out(r, out, input, "mean")


def nanmean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Mean of the non-NaN elements."""
    cdef TensorBase t = _as_t(input, "nanmean")
    cdef bint red[MAX_DIMS]
    if needs_slow1(t):
        return redispatch("nanmean", nanmean, (input,),
                          {"dim": dim, "keepdim": keepdim, "dtype": dtype})
    if category(t._dtype) < 2:
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype "
                           f"but got {torch_type_name(t._dtype)}")
    _dim_mask(dim, t._ndim, "nanmean", red)
    cdef int rdt = dtype_code(_out_dtype(dtype, out))
    if rdt < 0:
        rdt = t._dtype
    _nansum_dtype(t, rdt)
    cdef TensorBase x = cast(t, _cdt(rdt))
    cdef TensorBase s = _reduce_one(x, red, keepdim, RD_NANSUM)
    cdef TensorBase c = _reduce_one(x, red, keepdim, RD_NNAN)
    r = _finish(_ew.div(s, c), rdt)
    if wants_grad1(t):
        record("nanmean", (input,), r, {"dim": _mask_tuple(red, t._ndim),
                                        "keepdim": bool(keepdim)})
    return _out(r, out, input, "nanmean")


def prod(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Product of the elements over ``dim``."""
    cdef TensorBase t = _as_t(input, "prod")
    cdef bint red[MAX_DIMS]
    if needs_slow1(t):
        return redispatch("prod", prod, (input,), {"dim": dim, "keepdim": keepdim, "dtype": dtype})
    if category(t._dtype) == 3 or (dtype is not None and category(dtype_code(dtype)) == 3):
        return _complex_reduce("prod", t, dim, keepdim, dtype, out)
    if isinstance(dim, DType) and dtype is None:
        dtype, dim = dim, None
    _dim_mask(dim, t._ndim, "prod", red)
    cdef int rdt = dtype_code(_out_dtype(dtype, out))
    cdef TensorBase x = t if rdt < 0 else cast(t, rdt)
    if rdt < 0:
        rdt = _sum_dtype(t._dtype)
    r = _finish(_reduce_one(cast(x, _cdt(x._dtype)), red, keepdim, RD_PROD), rdt)
    if wants_grad1(t) and category(rdt) == 2:
        record("prod", (input,), r, {"dim": _mask_tuple(red, t._ndim), "keepdim": bool(keepdim)})
    return _out(r, out, input, "prod")


# ---------------------------------------------------------------------------
# max / min / amax / amin / argmax / argmin / aminmax

cdef int _check_nonempty(TensorBase t, _Arr a, str op, bint alldims) except -1:
    if alldims and numel_of(t._ndim, t._shape) == 0:
        raise (RuntimeError if op in ("max", "min") else IndexError)(
            f"{op}(): Expected reduction dim to be specified for input.numel() == 0."
            + (" Specify the reduction dim with the 'dim' argument." if op in ("max", "min")
               else ""))
    if a.first_red_zero >= 0:
        raise IndexError(f"{op}(): Expected reduction dim {a.first_red_zero} to have non-zero "
                         f"size.")
    return 0


cdef object _extreme_all(TensorBase t, int op, str name):
    """max()/min() of every element: a 0-dim tensor of t's dtype."""
    cdef bint red[MAX_DIMS]
    _dim_mask(None, t._ndim, name, red)
    cdef TensorBase x = cast(t, _cdt(t._dtype))
    cdef _Arr a = _arrange(x, red, False)
    _check_nonempty(t, a, name, True)
    cdef TensorBase res = _new_out(a, x._dtype)
    _kern(a, op, x._dtype, res, NULL, 0)
    return _finish(res, t._dtype)


cdef object _extreme_dim(TensorBase t, object dim, bint keepdim, int op, str name):
    cdef bint red[MAX_DIMS]
    cdef int d = _one_dim(dim, t._ndim, name)
    cdef int i, rc
    for i in range(MAX_DIMS):
        red[i] = False
    if t._ndim:
        red[d] = True
    cdef TensorBase x = cast(t, _cdt(t._dtype))
    cdef _Arr a = _arrange(x, red, keepdim)
    _check_nonempty(t, a, name, False)
    cdef TensorBase vals = _new_out(a, x._dtype)
    cdef TensorBase idx = _new_out(a, EM_I64)
    cdef TensorBase vb = _buf_for(a, vals)
    cdef TensorBase ib = _buf_for(a, idx)
    cdef int nt = nthreads_for(a.O * a.K * a.I)
    cdef char *xp = data_ptr(a.xc)
    cdef char *vp = data_ptr(vb)
    cdef int64_t *ip = <int64_t *>data_ptr(ib)
    with nogil:
        rc = em_argreduce(op, x._dtype, xp, a.O, a.K, a.I, vp, ip, nt)
    _scatter(a, vals, vb)
    _scatter(a, idx, ib)
    return _finish(vals, t._dtype), idx


cdef object _max_min(object input, object dim, object keepdim, object other, int op, str name,
                     object fn, object out):
    cdef TensorBase t = _as_t(input, name)
    if isinstance(dim, TensorBase) or other is not None:
        o = dim if other is None else other
        return (_ew.maximum if op == RD_MAX else _ew.minimum)(input, o, out=out)
    if needs_slow1(t):
        return redispatch(name, fn, (input,) if dim is None else (input, dim),
                          {} if dim is None else {"keepdim": keepdim})
    if dim is None:
        if keepdim:
            raise TypeError(f"{name}() received an invalid combination of arguments: keepdim "
                            f"without dim")
        r = _extreme_all(t, op, name)
        if wants_grad1(t):
            record(name, (input,), r, {"dim": None, "keepdim": False})
        return _out(r, out, input, name, OUT_EXACT)
    v, i = _extreme_dim(t, dim, keepdim, op, name)
    if wants_grad1(t):
        record(name, (input,), (v, i), {"dim": _one_dim(dim, t._ndim, name),
                                        "keepdim": bool(keepdim)})
    return _out_pair(v, i, out, input, name, getattr(return_types, name))


def max(input, dim=None, keepdim=False, *, other=None, out=None):
    """max(input): the largest element; max(input, dim): (values, indices);
    max(input, other): elementwise maximum.  NaN propagates."""
    return _max_min(input, dim, keepdim, other, RD_MAX, "max", max, out)


def min(input, dim=None, keepdim=False, *, other=None, out=None):
    """min(input): the smallest element; min(input, dim): (values, indices);
    min(input, other): elementwise minimum.  NaN propagates."""
    return _max_min(input, dim, keepdim, other, RD_MIN, "min", min, out)


cdef object _amax_amin(object input, object dim, bint keepdim, int op, str name, object fn,
                       object out):
    cdef TensorBase t = _as_t(input, name)
    cdef bint red[MAX_DIMS]
    if needs_slow1(t):
        return redispatch(name, fn, (input,), {"dim": dim, "keepdim": keepdim})
    _dim_mask(dim, t._ndim, name, red)
    cdef TensorBase x = cast(t, _cdt(t._dtype))
    cdef _Arr a = _arrange(x, red, keepdim)
    _check_nonempty(t, a, name, dim is None or dim == () or dim == [])
    cdef TensorBase res = _new_out(a, x._dtype)
    cdef TensorBase buf = _buf_for(a, res)
    _kern(a, op, x._dtype, buf, NULL, 0)
    _scatter(a, res, buf)
    r = _finish(res, t._dtype)
    if wants_grad1(t):
        record(name, (input,), r, {"dim": _mask_tuple(red, t._ndim), "keepdim": bool(keepdim)})
    return _out(r, out, input, name, OUT_EXACT)


def amax(input, dim=(), keepdim=False, *, out=None):
    """Largest value over ``dim`` (int or tuple; () for all dims).  NaN propagates."""
    return _amax_amin(input, dim, keepdim, RD_MAX, "amax", amax, out)


def amin(input, dim=(), keepdim=False, *, out=None):
    """Smallest value over ``dim`` (int or tuple; () for all dims).  NaN propagates."""
    return _amax_amin(input, dim, keepdim, RD_MIN, "amin", amin, out)


def aminmax(input, *, dim=None, keepdim=False):
    """(min, max) over ``dim`` (or all elements)."""
    d = () if dim is None else dim
    return return_types.aminmax(amin(input, d, keepdim), amax(input, d, keepdim))


cdef object _argext(object input, object dim, bint keepdim, int op, str name, object fn):
    cdef TensorBase t = _as_t(input, name)
    cdef TensorBase x
    cdef int64_t n
    cdef int64_t one = 1
    if needs_slow1(t):
        return redispatch(name, fn, (input,), {"dim": dim, "keepdim": keepdim})
    if dim is not None:
        return _extreme_dim(t, dim, keepdim, op, name)[1]
    n = numel_of(t._ndim, t._shape)
    if n == 0:
        raise IndexError(f"{name}(): Expected reduction dim to be specified for "
                         f"input.numel() == 0.")
    x = contig(cast(t, _cdt(t._dtype)))
    flat = make_view(x, 1, &n, &one, x._offset)
    r = _extreme_dim(flat, 0, False, op, name)[1]
    if keepdim:
        r = r.reshape(*[1] * t._ndim)
    return r


def argmax(input, dim=None, keepdim=False):
    """Index of the largest element (of the flattened input when ``dim`` is None)."""
    return _argext(input, dim, keepdim, RD_MAX, "argmax", argmax)


def argmin(input, dim=None, keepdim=False):
    """Index of the smallest element (of the flattened input when ``dim`` is None)."""
    return _argext(input, dim, keepdim, RD_MIN, "argmin", argmin)


# ---------------------------------------------------------------------------
# var / std / var_mean / std_mean

cdef object _var_impl(object input, object dim, object unbiased, bint keepdim, object correction,
                      str name, bint want_std, bint want_mean):
    cdef TensorBase t = _as_t(input, name)
    cdef bint red[MAX_DIMS]
    if isinstance(dim, bool):
        if unbiased is not None and unbiased is not dim:
            raise TypeError(f"{name}(): argument 'dim' must be tuple of ints, not bool")
        unbiased, dim = dim, None
    if correction is not None and unbiased is not None:
        raise RuntimeError(f"{name}: can't specify both the unbiased and correction arguments")
    cdef double corr = 1.0
    if correction is not None:
        corr = float(correction)
    elif unbiased is not None:
        corr = 1.0 if unbiased else 0.0
    if category(t._dtype) == 3:
        from ember._C import cplx
        return cplx.var_like(name, t, dim, corr, keepdim, want_std, want_mean)
    if category(t._dtype) < 2:
        raise RuntimeError("std and var only support floating point and complex dtypes")
    _dim_mask(dim, t._ndim, name, red)
    cdef TensorBase x = cast(t, _cdt(t._dtype))
    cdef _Arr a = _arrange(x, red, keepdim)
    cdef TensorBase mbuf = _kbuf(a, x._dtype)
    _kern(a, RD_SUM, x._dtype, mbuf, NULL, 0)
    _post(RP_DIV, mbuf, <double>a.K, None)
    cdef TensorBase res = _new_out(a, x._dtype)
    cdef TensorBase buf = _buf_for(a, res)
    _kern(a, RD_SSQ, x._dtype, buf, data_ptr(mbuf), 0)
    cdef double dof = <double>a.K - corr
    if dof <= 0:
        _warnings.warn(f"{name}(): degrees of freedom is <= 0. Correction should be strictly "
                       f"less than the reduction factor (input numel divided by output numel).",
                       UserWarning, stacklevel=3)
        dof = 0
    _post(RP_DIVSQRT if want_std else RP_DIV, buf, dof, None)
    _scatter(a, res, buf)
    r = _finish(res, t._dtype)
    attrs = {"dim": _mask_tuple(red, t._ndim), "keepdim": bool(keepdim), "correction": corr}
    if not want_mean:
        if wants_grad1(t):
            record(name, (input,), r, attrs)
        return r
    cdef TensorBase mres = _new_out(a, x._dtype)
    _scatter(a, mres, mbuf)
    m = _finish(mres, t._dtype)
    if wants_grad1(t):
        record(name, (input,), (r, m), attrs)
    return (r, m)


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """Variance over ``dim`` with Bessel's ``correction`` (default 1)."""
    if needs_slow1(_as_t(input, "var")):
        return redispatch("var", var, (input,), {"dim": dim, "unbiased": unbiased,
                                                  "keepdim": keepdim, "correction": correction})
    return _out(_var_impl(input, dim, unbiased, keepdim, correction, "var", False, False), out,
                input, "var")


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """Standard deviation over ``dim`` with Bessel's ``correction`` (default 1)."""
    if needs_slow1(_as_t(input, "std")):
        return redispatch("std", std, (input,), {"dim": dim, "unbiased": unbiased,
                                                  "keepdim": keepdim, "correction": correction})
    return _out(_var_impl(input, dim, unbiased, keepdim, correction, "std", True, False), out,
                input, "std")


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(var, mean) over ``dim`` in one pass over the data's blocks."""
    if needs_slow1(_as_t(input, "var_mean")):
        return redispatch("var_mean", var_mean, (input,), {"dim": dim, "unbiased": unbiased,
                          "keepdim": keepdim, "correction": correction})
    return _var_impl(input, dim, unbiased, keepdim, correction, "var_mean", False, True)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(std, mean) over ``dim``."""
    if needs_slow1(_as_t(input, "std_mean")):
        return redispatch("std_mean", std_mean, (input,), {"dim": dim, "unbiased": unbiased,
                          "keepdim": keepdim, "correction": correction})
    return _var_impl(input, dim, unbiased, keepdim, correction, "std_mean", True, True)


# ---------------------------------------------------------------------------
# norms, logsumexp

def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """The vector ``ord``-norm over ``dim`` (all elements when None), as
    ``linalg.vector_norm``: ord 2 (default), 1, inf, -inf, 0 or any real p."""
    if isinstance(x, TensorBase) and category((<TensorBase>x)._dtype) == 3:
        # the norm of complex values is that of their moduli
        return vector_norm(_ew.abs(x), ord, dim, keepdim, dtype=dtype, out=out)
    cdef TensorBase t = _as_t(x, "linalg.vector_norm")
    cdef bint red[MAX_DIMS]
    cdef int op, post = RP_NONE
    cdef double p
    if needs_slow1(t):
        return redispatch("vector_norm", vector_norm, (x,), {"ord": ord, "dim": dim,
                          "keepdim": keepdim, "dtype": dtype})
    if category(t._dtype) < 2:
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor "
                           f"as input. Got {torch_type_name(t._dtype)}")
    if isinstance(ord, str) or isinstance(ord, bool):
        raise TypeError(f"linalg.vector_norm(): argument 'ord' must be Number, not "
                        f"{type(ord).__name__}")
    p = float(ord)
    cdef int rdt = t._dtype if dtype is None else dtype_code(dtype)
    _dim_mask(dim, t._ndim, "linalg.vector_norm", red)
    cdef TensorBase xx = cast(t, _cdt(rdt))
    if p == 2:
        op, post = RD_SSQ, RP_SQRT
    elif p == 1:
        op = RD_ASUM
    elif p == INFINITY:
        op = RD_AMAX
    elif p == -INFINITY:
        op = RD_AMIN
    elif p == 0:
        op = RD_NZ
    else:
        op, post = RD_PSUM, RP_ROOT
    cdef _Arr a = _arrange(xx, red, keepdim)
    if (op == RD_AMAX or op == RD_AMIN) and (a.first_red_zero >= 0 or (
            numel_of(t._ndim, t._shape) == 0 and dim is None)):
        raise RuntimeError("linalg.vector_norm cannot compute the inf norm on an empty tensor "
                           "because the operation does not have an identity")
    cdef TensorBase res = _new_out(a, xx._dtype)
    cdef TensorBase buf = _buf_for(a, res)
    _kern(a, op, xx._dtype, buf, NULL, p)
    if post != RP_NONE:
        _post(post, buf, p, None)
    _scatter(a, res, buf)
    r = _finish(res, rdt)
    if wants_grad1(t):
        record("vector_norm", (x,), r, {"ord": p, "dim": _mask_tuple(red, t._ndim),
                                        "keepdim": bool(keepdim)})
    return _out(r, out, x, "linalg.vector_norm", OUT_EXACT)


def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """Vector norm of ``input`` over ``dim`` (torch.norm): p "fro"/2, 1, inf, -inf, 0, any real."""
    if p is None or p == "fro":
        p = 2
    elif p == "nuc":
        from ember import _linalg
        return _linalg.matrix_norm(input, "nuc", tuple(range(input.dim())) if dim is None
                                   else dim, keepdim, dtype=dtype, out=out)
    elif isinstance(p, str):
        raise RuntimeError(f"norm: unsupported p={p!r}")
    return vector_norm(input, p, dim, keepdim, dtype=dtype, out=out)


def logsumexp(input, dim=None, keepdim=False, *, out=None):
    """log(sum(exp(input))) over ``dim``, computed stably (max-shifted)."""
    cdef TensorBase t = _as_t(input, "logsumexp")
    cdef bint red[MAX_DIMS]
    if needs_slow1(t):
        return redispatch("logsumexp", logsumexp, (input, dim), {"keepdim": keepdim})
    if category(t._dtype) == 3:
        from ember._C import cplx
        return _out(cplx.logsumexp(t, dim, keepdim), out, input, "logsumexp")
    _dim_mask(dim, t._ndim, "logsumexp", red)
    cdef int rdt = t._dtype if category(t._dtype) == 2 else default_dtype()
    cdef TensorBase x = cast(t, _cdt(rdt))
    cdef _Arr a = _arrange(x, red, keepdim)
    cdef TensorBase mbuf = _kbuf(a, x._dtype)
    _kern(a, RD_MAX, x._dtype, mbuf, NULL, 0)
    _post(RP_FINITE0, mbuf, 0, None)
    cdef TensorBase res = _new_out(a, x._dtype)
    cdef TensorBase buf = _buf_for(a, res)
    _kern(a, RD_SUMEXP, x._dtype, buf, data_ptr(mbuf), 0)
    _post(RP_LOGADD, buf, 0, mbuf)
    _scatter(a, res, buf)
    r = _finish(res, rdt)
    if wants_grad1(t):
        record("logsumexp", (input,), r, {"dim": _mask_tuple(red, t._ndim),
                                          "keepdim": bool(keepdim)})
    return _out(r, out, input, "logsumexp")


# ---------------------------------------------------------------------------
# all / any / count_nonzero

cdef TensorBase _count_nz(TensorBase t, bint *red, bint keepdim, int64_t *K):
    cdef TensorBase x = cast(t, EM_BOOL)
    cdef _Arr a = _arrange(x, red, keepdim)
    cdef TensorBase res = _new_out(a, EM_I64)
    cdef TensorBase buf = _buf_for(a, res)
    _kern(a, RD_SUM, EM_BOOL, buf, NULL, 0)
    _scatter(a, res, buf)
    K[0] = a.K
    return res


def count_nonzero(input, dim=None):
    """Number of non-zero elements over ``dim`` (int64)."""
    cdef TensorBase t = _as_t(input, "count_nonzero")
    cdef bint red[MAX_DIMS]
    cdef int64_t K
    if needs_slow1(t):
        return redispatch("count_nonzero", count_nonzero, (input,), {"dim": dim})
    _dim_mask(dim, t._ndim, "count_nonzero", red)
    return _count_nz(t, red, False, &K)


cdef object _all_any(object input, object dim, bint keepdim, bint is_all, object fn, object out):
    cdef str name = "all" if is_all else "any"
    cdef TensorBase t = _as_t(input, name)
    cdef bint red[MAX_DIMS]
    cdef int64_t K
    if needs_slow1(t):
        return redispatch(name, fn, (input,), {"dim": dim, "keepdim": keepdim})
    _dim_mask(dim, t._ndim, name, red)
    c = _count_nz(t, red, keepdim, &K)
    r = _ew.eq(c, K) if is_all else _ew.ne(c, 0)
    if t._dtype == EM_U8:
        r = cast(<TensorBase>r, EM_U8)
    return _out(r, out, input, name, OUT_EXACT)


def all(input, dim=None, keepdim=False, *, out=None):
    """True where every element over ``dim`` is non-zero."""
    return _all_any(input, dim, keepdim, True, all, out)


def any(input, dim=None, keepdim=False, *, out=None):
    """True where some element over ``dim`` is non-zero."""
    return _all_any(input, dim, keepdim, False, any, out)


# ---------------------------------------------------------------------------
# scans: cumsum, cumprod, cummax, cummin, logcumsumexp

cdef void _oki(TensorBase x, int d, int64_t *O, int64_t *K, int64_t *I) noexcept:
    cdef int i
    O[0] = 1
    K[0] = 1
    I[0] = 1
    for i in range(x._ndim):
        if i < d:
            O[0] *= x._shape[i]
        elif i == d:
            K[0] = x._shape[i]
        else:
            I[0] *= x._shape[i]


cdef TensorBase _scan_run(TensorBase x, int d, int op, TensorBase idx):
    """x contiguous in a compute dtype; returns the scanned tensor (same dtype)."""
    cdef int64_t O, K, I
    cdef int rc
    _oki(x, d, &O, &K, &I)
    cdef TensorBase r = new_like(x, -1)
    cdef char *xp = data_ptr(x)
    cdef char *rp = data_ptr(r)
    cdef int64_t *ip = NULL if idx is None else <int64_t *>data_ptr(idx)
    cdef int nt = nthreads_for(O * K * I)
    with nogil:
        rc = em_scan(op, x._dtype, xp, O, K, I, rp, ip, nt)
    if rc:
        raise RuntimeError(f"scan: no kernel for dtype {torch_type_name(x._dtype)}")
    return r


cdef object _cum(object input, object dim, object dtype, int op, str name, object fn,
                 object out):
    cdef TensorBase t = _as_t(input, name)
    if needs_slow1(t):
        return redispatch(name, fn, (input, dim), {"dtype": dtype} if out is None else
                          {"dtype": dtype, "out": out})
    if category(t._dtype) == 3 or (dtype is not None and category(dtype_code(dtype)) == 3):
        from ember._C import cplx
        return cplx.cum(name, t, dim, dtype, out)
    cdef int d = _one_dim(dim, t._ndim, name)
    cdef int rdt = dtype_code(_out_dtype(dtype, out))
    if rdt < 0:
        rdt = _sum_dtype(t._dtype)
    cdef TensorBase x = contig(cast(cast(t, rdt), _cdt(rdt)))
    r = _finish(_scan_run(x, d, op, None), rdt)
    if wants_grad1(t) and category(rdt) == 2:
        record(name, (input,), r, {"dim": d})
    return _out(r, out, input, name)


def cumsum(input, dim, *, dtype=None, out=None):
    """Inclusive cumulative sum along ``dim`` (integers accumulate in int64)."""
    return _cum(input, dim, dtype, SC_SUM, "cumsum", cumsum, out)


def cumprod(input, dim, *, dtype=None, out=None):
    """Inclusive cumulative product along ``dim``."""
    return _cum(input, dim, dtype, SC_PROD, "cumprod", cumprod, out)


def logcumsumexp(input, dim, *, out=None):
    """log(cumsum(exp(input))) along ``dim``, computed stably."""
    cdef TensorBase t = _as_t(input, "logcumsumexp")
    if needs_slow1(t):
        return redispatch("logcumsumexp", logcumsumexp, (input, dim),
                          {} if out is None else {"out": out})
    if category(t._dtype) == 3:
        from ember._C import cplx
        return cplx.cum("logcumsumexp", t, dim, None, out)
    if category(t._dtype) < 2:
        raise NotImplementedError(f"\"logcumsumexp_out_cpu\" not implemented for "
                                  f"'{torch_type_name(t._dtype)}'")
    cdef int d = _one_dim(dim, t._ndim, "logcumsumexp")
    cdef TensorBase x = contig(cast(t, _cdt(t._dtype)))
    r = _finish(_scan_run(x, d, SC_LOGSUMEXP, None), t._dtype)
    if wants_grad1(t):
        record("logcumsumexp", (input,), r, {"dim": d})
    return _out(r, out, input, "logcumsumexp", OUT_EXACT)


cdef object _cumext(object input, object dim, int op, str name, object fn):
    cdef TensorBase t = _as_t(input, name)
    if needs_slow1(t):
        return redispatch(name, fn, (input, dim), {})
    cdef int d = _one_dim(dim, t._ndim, name)
    cdef TensorBase x = contig(cast(t, _cdt(t._dtype)))
    cdef TensorBase idx = new_like(x, EM_I64)
    v = _finish(_scan_run(x, d, op, idx), t._dtype)
    if wants_grad1(t):
        record(name, (input,), (v, idx), {"dim": d})
    return getattr(return_types, name)(v, idx)


def cummax(input, dim):
    """(values, indices) of the running maximum along ``dim`` (NaN propagates)."""
    return _cumext(input, dim, SC_MAX, "cummax", cummax)


def cummin(input, dim):
    """(values, indices) of the running minimum along ``dim`` (NaN propagates)."""
    return _cumext(input, dim, SC_MIN, "cummin", cummin)


# ---------------------------------------------------------------------------
# softmax / log_softmax

cdef int _implicit_softmax_dim(int ndim, str name):
    _warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                   f"to include dim=X as an argument.", UserWarning, stacklevel=4)
    return 0 if ndim in (0, 1, 3) else 1


cdef object _softmax(object input, object dim, object dtype, bint lg, str name, object fn):
    cdef TensorBase t = _as_t(input, name)
    cdef int64_t O, K, I
    cdef int rc
    if needs_slow1(t):
        return redispatch(name, fn, (input, dim), {"dtype": dtype})
    if dim is None:
        dim = _implicit_softmax_dim(t._ndim, name)
    cdef int d = _one_dim(dim, t._ndim, name)
    cdef int rdt = dtype_code(dtype)
    if rdt < 0:
        rdt = t._dtype
    if category(rdt) < 2:
        raise NotImplementedError(f"\"{name}_lastdim_kernel_impl\" not implemented for "
                                  f"'{torch_type_name(rdt)}'")
    cdef TensorBase x = contig(cast(cast(t, rdt), _cdt(rdt)))
    _oki(x, d, &O, &K, &I)
    cdef TensorBase r = new_like(x, -1)
    cdef char *xp = data_ptr(x)
    cdef char *rp = data_ptr(r)
    cdef int nt = nthreads_for(O * K * I * 8)
    with nogil:
        rc = em_softmax(1 if lg else 0, x._dtype, xp, O, K, I, rp, nt)
    res = _finish(r, rdt)
    if wants_grad1(t):
        record(name, (input,), res, {"dim": d, "dtype": None if dtype is None else rdt})
    return res


def softmax(input, dim=None, dtype=None, *, _stacklevel=3):
    """exp(x) / sum(exp(x)) along ``dim``: one fused, max-shifted kernel per row."""
    return _softmax(input, dim, dtype, False, "softmax", softmax)


def log_softmax(input, dim=None, dtype=None, *, _stacklevel=3):
    """x - logsumexp(x) along ``dim``: one fused, max-shifted kernel per row."""
    return _softmax(input, dim, dtype, True, "log_softmax", log_softmax)


# ---------------------------------------------------------------------------
# layer_norm: one fused kernel per row forward, one per block of rows backward

cdef TensorBase _ln_param(object p, TensorBase x, int64_t N, str arg):
    """weight/bias as a contiguous [N] tensor of x's dtype, or None."""
    if p is None:
        return None
    if not isinstance(p, TensorBase):
        raise TypeError(f"layer_norm(): argument '{arg}' must be Tensor, not "
                        f"{type(p).__name__}")
    cdef TensorBase q = <TensorBase>p
    if q._dtype != x._dtype:
        raise RuntimeError(f"layer_norm: expected {arg} to have dtype "
                           f"{torch_type_name(x._dtype)}, but got {torch_type_name(q._dtype)}")
    if numel_of(q._ndim, q._shape) != N:
        raise RuntimeError(f"layer_norm: expected {arg} with {N} elements, but got "
                           f"shape {list(shape_tuple(q))}")
    return contig(q)


cdef int _norm_rows(TensorBase t, object normalized_shape, str op, int64_t *M,
                    int64_t *N) except -1:
    """Check ``normalized_shape`` against t's trailing dims and t's dtype (float32/
    float64); t is then M rows of N normalised elements.  Returns the dims normalised."""
    shp = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    cdef int k = len(shp), i
    if k == 0 or k > t._ndim or shape_tuple(t)[t._ndim - k:] != shp:
        raise RuntimeError(f"Given normalized_shape={list(shp)}, expected input with shape "
                           f"[*, {', '.join(map(str, shp))}], but got input of size"
                           f"{list(shape_tuple(t))}")
    if t._dtype != EM_F32 and t._dtype != EM_F64:
        raise RuntimeError(f"{op}: expected a float32 or float64 input, got "
                           f"{torch_type_name(t._dtype)}")
    M[0] = 1
    N[0] = 1
    for i in range(t._ndim):
        if i < t._ndim - k:
            M[0] *= t._shape[i]
        else:
            N[0] *= t._shape[i]
    return k


def layer_norm(input, normalized_shape, weight=None, bias=None, double eps=1e-5):
    """Layer normalisation over the trailing ``normalized_shape`` dims (float32/float64):
    one pass per row (two-pass mean and variance in a fixed order), saving each
    row's mean and 1/std for the backward."""
    cdef TensorBase t = _as_t(input, "layer_norm")
    if needs_slow1(t):
        return redispatch("layer_norm", layer_norm, (input, normalized_shape, weight, bias),
                          {"eps": eps})
    cdef int64_t N, M
    cdef int k = _norm_rows(t, normalized_shape, "layer_norm", &M, &N), i
    cdef TensorBase x = contig(t)
    cdef TensorBase w = _ln_param(weight, x, N, "weight")
    cdef TensorBase b = _ln_param(bias, x, N, "bias")
    cdef TensorBase y = new_like(x, -1)
    cdef int64_t sshape[MAX_DIMS]
    for i in range(t._ndim):
        sshape[i] = t._shape[i] if i < t._ndim - k else 1
    cdef TensorBase mean = new_tensor(t._ndim, sshape, x._dtype, x._device)
    cdef TensorBase rstd = new_tensor(t._ndim, sshape, x._dtype, x._device)
    cdef const char *wp = data_ptr(w) if w is not None else NULL
    cdef const char *bp = data_ptr(b) if b is not None else NULL
    cdef int nt = nthreads_for(M * N * 8)
    cdef int rc
    with nogil:
        rc = em_layer_norm_fwd(x._dtype, data_ptr(x), wp, bp, M, N, eps, data_ptr(y), data_ptr(mean),
                               data_ptr(rstd), nt)
    if rc != 0:
        raise RuntimeError("layer_norm: kernel failed")
    if grad_on() and (t._requires_grad or (w is not None and (<TensorBase>weight)._requires_grad)
                      or (b is not None and (<TensorBase>bias)._requires_grad)):
        record("layer_norm", (input, weight, bias), y,
               {"normalized_shape": shape_tuple(t)[t._ndim - k:], "eps": eps, "mean": mean,
                "rstd": rstd})
    return y


cdef tuple _rows_bwd_operands(str op, grad, input, stat, weight, bint need_input,
                              bint need_weight, bint need_bias):
    """The contiguous operands of a row normalisation's backward and its outputs (None
    where not needed): (x, g, stat, w, dx, dw, db, M, N), x being M rows (stat's
    numel) of N elements and the parameter gradients flat [N]."""
    cdef TensorBase x = contig(_as_t(input, op))
    cdef TensorBase st = contig(_as_t(stat, op))
    cdef int64_t M = numel_of(st._ndim, st._shape)
    cdef int64_t N = numel_of(x._ndim, x._shape) // M if M > 0 else 0
    cdef int64_t pshape[1]
    pshape[0] = N
    return (x, contig(cast(_as_t(grad, op), x._dtype)), st, _ln_param(weight, x, N, "weight"),
            new_like(x, -1) if need_input else None,
            new_tensor(1, pshape, x._dtype, x._device) if need_weight else None,
            new_tensor(1, pshape, x._dtype, x._device) if need_bias else None, M, N)


def layer_norm_backward(grad, input, mean, rstd, weight, bint need_input, bint need_weight,
                        bint need_bias):
    """(grad_input, grad_weight, grad_bias) of layer_norm from the saved row statistics
    (weight and bias gradients flat, [N]); None for each one not needed.  Not recorded:
    the formula composes public ops instead when a graph of the backward is wanted."""
    cdef TensorBase x, g, rs, w, dx, dw, db
    cdef int64_t M, N
    x, g, rs, w, dx, dw, db, M, N = _rows_bwd_operands(
        "layer_norm_backward", grad, input, rstd, weight, need_input, need_weight, need_bias)
    cdef TensorBase mu = contig(_as_t(mean, "layer_norm_backward"))
    cdef const char *wp = data_ptr(w) if w is not None else NULL
    cdef char *dxp = data_ptr(dx) if dx is not None else NULL
    cdef char *dwp = data_ptr(dw) if dw is not None else NULL
    cdef char *dbp = data_ptr(db) if db is not None else NULL
    cdef int nt = nthreads_for(M * N * 16)
    cdef int rc
    with nogil:
        rc = em_layer_norm_bwd(x._dtype, data_ptr(g), data_ptr(x), data_ptr(mu), data_ptr(rs),
                               wp, M, N, dxp, dwp, dbp, nt)
    if rc == -2:
        raise MemoryError("layer_norm_backward: out of memory")
    if rc != 0:
        raise RuntimeError("layer_norm_backward: kernel failed")
    return dx, dw, db


def rms_norm_fused(input, normalized_shape, weight, double eps):
    """(y, rstd) of rms_norm over the trailing ``normalized_shape`` dims of a float32/
    float64 tensor: one pass per row (the layer_norm kernel without centering);
    rstd is each row's 1 / sqrt(mean(x^2) + eps).  Not recorded for autograd."""
    cdef TensorBase t = _as_t(input, "rms_norm")
    cdef int64_t N, M
    cdef int k = _norm_rows(t, normalized_shape, "rms_norm", &M, &N), i
    cdef TensorBase x = contig(t)
    cdef TensorBase w = _ln_param(weight, x, N, "weight")
    cdef TensorBase y = new_like(x, -1)
    cdef int64_t sshape[MAX_DIMS]
    for i in range(t._ndim):
        sshape[i] = t._shape[i] if i < t._ndim - k else 1
    cdef TensorBase rstd = new_tensor(t._ndim, sshape, x._dtype, x._device)
    cdef const char *wp = data_ptr(w) if w is not None else NULL
    cdef int nt = nthreads_for(M * N * 8)
    cdef int rc
    with nogil:
        rc = em_rms_norm_fwd(x._dtype, data_ptr(x), wp, M, N, eps, data_ptr(y), data_ptr(rstd), nt)
    if rc == -2:
        raise MemoryError("rms_norm: out of memory")
    if rc != 0:
        raise RuntimeError("rms_norm: kernel failed")
    return y, rstd


def rms_norm_fused_backward(grad, input, rstd, weight, bint need_input, bint need_weight):
    """(grad_input, grad_weight) of rms_norm from the saved rstd (grad_weight flat,
    [N]); None for each one not needed.  Not recorded."""
    cdef TensorBase x, g, rs, w, dx, dw
    cdef int64_t M, N
    x, g, rs, w, dx, dw, _, M, N = _rows_bwd_operands(
        "rms_norm_backward", grad, input, rstd, weight, need_input, need_weight, False)
    cdef const char *wp = data_ptr(w) if w is not None else NULL
    cdef char *dxp = data_ptr(dx) if dx is not None else NULL
    cdef char *dwp = data_ptr(dw) if dw is not None else NULL
    cdef int nt = nthreads_for(M * N * 16)
    cdef int rc
    with nogil:
        rc = em_rms_norm_bwd(x._dtype, data_ptr(g), data_ptr(x), data_ptr(rs), wp, M, N, dxp,
                             dwp, nt)
    if rc == -2:
        raise MemoryError("rms_norm_backward: out of memory")
    if rc != 0:
        raise RuntimeError("rms_norm_backward: kernel failed")
    return dx, dw


# ---------------------------------------------------------------------------
# fused scaled-dot-product attention (causal or an additive mask, optional dropout)

cdef int _sdpa_dims(TensorBase q, TensorBase k, TensorBase v, int64_t *dims) except -1:
    """dims = BH, L, S, D, Dv for same-dtype float tensors with equal batch dims."""
    if q._ndim < 2 or q._ndim != k._ndim or q._ndim != v._ndim:
        raise RuntimeError("scaled_dot_product_attention: query, key and value must have "
                           "the same number of dims (at least 2)")
    if q._dtype != k._dtype or q._dtype != v._dtype or (q._dtype != EM_F32
                                                        and q._dtype != EM_F64):
        raise RuntimeError("scaled_dot_product_attention: the fused kernel takes float32 or "
                           "float64 query, key and value of one dtype")
    cdef int n = q._ndim, i
    cdef int64_t bh = 1
    for i in range(n - 2):
        if q._shape[i] != k._shape[i] or q._shape[i] != v._shape[i]:
            raise RuntimeError("scaled_dot_product_attention: query, key and value batch "
                               "dims differ")
        bh *= q._shape[i]
    if k._shape[n - 1] != q._shape[n - 1] or v._shape[n - 2] != k._shape[n - 2]:
        raise RuntimeError(f"scaled_dot_product_attention: shapes {list(shape_tuple(q))}, "
                           f"{list(shape_tuple(k))}, {list(shape_tuple(v))} do not match")
    dims[0] = bh
    dims[1] = q._shape[n - 2]
    dims[2] = k._shape[n - 2]
    dims[3] = q._shape[n - 1]
    dims[4] = v._shape[n - 1]
    return 0


cdef object _sdpa_mask_offsets(object attn_mask, TensorBase q, int64_t *dims, int64_t *mst):
    """The additive mask (None, or q's dtype and shape batch + (L, S), any strides, 0 to
    broadcast): its tensor, with each batch-head's element offset in the returned bytes
    object and its row / column strides in mst."""
    if attn_mask is None:
        return None, None
    cdef TensorBase m = _as_t(attn_mask, "scaled_dot_product_attention")
    cdef int n = q._ndim, i
    if m._dtype != q._dtype or m._ndim != n or m._shape[n - 2] != dims[1] or \
            m._shape[n - 1] != dims[2]:
        raise RuntimeError("scaled_dot_product_attention: the fused kernel takes an additive "
                           "mask of the query's dtype and shape batch + (L, S)")
    for i in range(n - 2):
        if m._shape[i] != q._shape[i]:
            raise RuntimeError("scaled_dot_product_attention: the mask's batch dims differ")
    off = bytearray(dims[0] * sizeof(int64_t))
    cdef int64_t *o = <int64_t *><char *>off
    cdef int64_t b, r, e
    for b in range(dims[0]):
        r = b
        e = 0
        for i in range(n - 3, -1, -1):
            e += (r % q._shape[i]) * m._strides[i]
            r //= q._shape[i]
        o[b] = e
    mst[0] = m._strides[n - 2]
    mst[1] = m._strides[n - 1]
    return m, off


def sdpa_fused(query, key, value, double scale, bint is_causal, attn_mask=None,
               double dropout_p=0.0, uint64_t seed=0, uint64_t offset=0):
    """dropout(softmax(Q K^T * scale [causal] [+ attn_mask])) V, flash-attention style;
    records the op for autograd with each row's log-sum-exp saved for the fused
    backward.  attn_mask: None, or an additive mask of the query's dtype and shape
    batch + (L, S) (expanded views welcome).  dropout_p > 0: the keep-mask is the one
    ember's dropout(seed, offset) draws for a contiguous batch + (L, S) tensor,
    regenerated (never stored) by the backward."""
    if needs_slow1(_as_t(query, "scaled_dot_product_attention")):
        args = (query, key, value, scale, is_causal) + (() if attn_mask is None
                                                        else (attn_mask,))
        kw = {} if dropout_p == 0.0 else {"dropout_p": dropout_p, "seed": seed,
                                          "offset": offset}
        return redispatch("scaled_dot_product_attention", sdpa_fused, args, kw)
    cdef TensorBase q = contig(_as_t(query, "scaled_dot_product_attention"))
    cdef TensorBase k = contig(_as_t(key, "scaled_dot_product_attention"))
    cdef TensorBase v = contig(_as_t(value, "scaled_dot_product_attention"))
    cdef int64_t dims[5]
    cdef int64_t mst[2]
    mst[0] = mst[1] = 0
    _sdpa_dims(q, k, v, dims)
    m, off = _sdpa_mask_offsets(attn_mask, q, dims, mst)
    cdef const char *mp = NULL
    cdef const int64_t *mo = NULL
    if m is not None:
        mp = data_ptr(<TensorBase>m)
        mo = <const int64_t *><char *>off
    cdef int64_t oshape[MAX_DIMS]
    cdef int i
    for i in range(q._ndim):
        oshape[i] = q._shape[i]
    oshape[q._ndim - 1] = dims[4]
    cdef TensorBase out = new_tensor(q._ndim, oshape, q._dtype, q._device)
    cdef TensorBase lse = new_tensor(q._ndim - 1, q._shape, q._dtype, q._device)
    cdef int nt = nthreads_for(dims[0] * dims[1] * dims[2] * (dims[3] + dims[4]) * 2)
    cdef int rc
    with nogil:
        rc = em_sdpa_fwd(q._dtype, data_ptr(q), data_ptr(k), data_ptr(v), mp, mo, mst[0],
                         mst[1], dims[0], dims[1], dims[2], dims[3], dims[4], scale,
                         1 if is_causal else 0, dropout_p, seed, offset, data_ptr(out),
                         data_ptr(lse), nt)
    if rc == -2:
        raise MemoryError("scaled_dot_product_attention: out of memory")
    if rc != 0:
        raise RuntimeError("scaled_dot_product_attention: kernel failed")
    if grad_on() and ((<TensorBase>query)._requires_grad or (<TensorBase>key)._requires_grad
                      or (<TensorBase>value)._requires_grad):
        record("scaled_dot_product_attention", (query, key, value), out,
               {"scale": scale, "is_causal": is_causal, "lse": lse, "attn_mask": attn_mask,
                "dropout_p": dropout_p, "seed": seed, "offset": offset})
    return out


def sdpa_fused_backward(grad, query, key, value, out, lse, double scale, bint is_causal,
                        attn_mask=None, double dropout_p=0.0, uint64_t seed=0,
                        uint64_t offset=0):
    """(grad_query, grad_key, grad_value) of sdpa_fused; not recorded."""
    cdef TensorBase q = contig(_as_t(query, "scaled_dot_product_attention"))
    cdef TensorBase k = contig(_as_t(key, "scaled_dot_product_attention"))
    cdef TensorBase v = contig(_as_t(value, "scaled_dot_product_attention"))
    cdef TensorBase g = contig(cast(_as_t(grad, "scaled_dot_product_attention"), q._dtype))
    cdef TensorBase o = contig(_as_t(out, "scaled_dot_product_attention"))
    cdef TensorBase ls = contig(_as_t(lse, "scaled_dot_product_attention"))
    cdef int64_t dims[5]
    cdef int64_t mst[2]
    mst[0] = mst[1] = 0
    _sdpa_dims(q, k, v, dims)
    m, off = _sdpa_mask_offsets(attn_mask, q, dims, mst)
    cdef const char *mp = NULL
    cdef const int64_t *mo = NULL
    if m is not None:
        mp = data_ptr(<TensorBase>m)
        mo = <const int64_t *><char *>off
    cdef TensorBase dq = new_like(q, -1)
    cdef TensorBase dk = new_like(k, -1)
    cdef TensorBase dv = new_like(v, -1)
    cdef int nt = nthreads_for(dims[0] * dims[1] * dims[2] * (dims[3] + dims[4]) * 4)
    cdef int rc
    with nogil:
        rc = em_sdpa_bwd(q._dtype, data_ptr(g), data_ptr(q), data_ptr(k), data_ptr(v),
                         data_ptr(o), data_ptr(ls), mp, mo, mst[0], mst[1], dims[0], dims[1],
                         dims[2], dims[3], dims[4], scale, 1 if is_causal else 0,
                         dropout_p, seed, offset, data_ptr(dq), data_ptr(dk), data_ptr(dv), nt)
    if rc == -2:
        raise MemoryError("scaled_dot_product_attention_backward: out of memory")
    if rc != 0:
        raise RuntimeError("scaled_dot_product_attention_backward: kernel failed")
    return dq, dk, dv


# ---------------------------------------------------------------------------
# sorting and selection

ctypedef fused num_t:
    float
    double
    int64_t


cdef class _Sorted:
    """Rows of t sorted along dim d, in the moved layout [rows, n] (dim d last)."""
    cdef TensorBase vals     # compute dtype, [.., n] with d moved last (None when not kept)
    cdef TensorBase idx      # int64, same layout
    cdef int64_t rows, n
    cdef int d, nd
    cdef int64_t mshape[MAX_DIMS]


cdef _Sorted _sort_moved(TensorBase t, int d, bint descending, bint want_vals):
    cdef _Sorted s = _Sorted.__new__(_Sorted)
    cdef int cd = _cdt(t._dtype), nd = t._ndim, i, m = 0, rc
    cdef TensorBase x = cast(t, cd)
    cdef int64_t shp[MAX_DIMS]
    cdef int64_t st[MAX_DIMS]
    for i in range(nd):
        if i != d:
            shp[m] = x._shape[i]
            st[m] = x._strides[i]
            m += 1
    if nd:
        shp[m] = x._shape[d]
        st[m] = x._strides[d]
    cdef TensorBase xc = contig(make_view(x, nd, shp, st, x._offset))
    s.nd = nd
    s.d = d
    s.n = x._shape[d] if nd else 1
    s.rows = numel_of(nd, shp) // s.n if s.n else 0
    for i in range(nd):
        s.mshape[i] = shp[i]
    s.vals = new_tensor(nd, shp, cd, cpu_device()) if want_vals else None
    s.idx = new_tensor(nd, shp, EM_I64, cpu_device())
    cdef char *xp = data_ptr(xc)
    cdef char *vp = NULL if s.vals is None else data_ptr(s.vals)
    cdef int64_t *ip = <int64_t *>data_ptr(s.idx)
    cdef int nt = nthreads_for(s.rows * s.n * 16)
    with nogil:
        rc = em_sort(cd, xp, s.rows, s.n, vp, ip, 1 if descending else 0, nt)
    if rc:
        raise RuntimeError(f"sort: no kernel for dtype {torch_type_name(cd)}")
    return s


cdef TensorBase _unmove(_Sorted s, TensorBase m, int64_t k):
    """A tensor in the moved layout (last dim size k) back to the original dim order."""
    cdef int nd = s.nd, i, j = 0
    if nd == 0 or s.d == nd - 1:
        return m
    cdef int64_t shp[MAX_DIMS]
    for i in range(nd):
        shp[i] = m._shape[i]
    cdef int64_t oshp[MAX_DIMS]
    for i in range(nd):
        if i == s.d:
            oshp[i] = k
        else:
            oshp[i] = shp[j]
            j += 1
    cdef TensorBase r = new_tensor(nd, oshp, m._dtype, cpu_device())
    cdef int64_t st[MAX_DIMS]
    j = 0
    for i in range(nd):
        if i != s.d:
            st[j] = r._strides[i]
            j += 1
    st[nd - 1] = r._strides[s.d]
    copy_into(make_view(r, nd, shp, st, r._offset), m)
    return r


def sort(input, dim=-1, descending=False, stable=False, *, out=None):
    """(values, indices) sorted along ``dim``; stable, NaN sorts as the largest value."""
    cdef TensorBase t = _as_t(input, "sort")
    if isinstance(dim, bool):
        raise TypeError("sort(): argument 'dim' must be int, not bool")
    if needs_slow1(t):
        return redispatch("sort", sort, (input,), {"dim": dim, "descending": descending,
                                                   "stable": stable})
    cdef int d = _one_dim(dim, t._ndim, "sort")
    cdef _Sorted s = _sort_moved(t, d, descending, True)
    cdef int64_t n = s.n
    v = _finish(_unmove(s, s.vals, n), t._dtype)
    i = _unmove(s, s.idx, n)
    if wants_grad1(t):
        record("sort", (input,), (v, i), {"dim": d})
    return _out_pair(v, i, out, input, "sort", return_types.sort)


def argsort(input, dim=-1, descending=False, stable=False):
    """Indices that sort ``input`` along ``dim``."""
    cdef TensorBase t = _as_t(input, "argsort")
    if needs_slow1(t):
        return redispatch("argsort", argsort, (input,), {"dim": dim, "descending": descending,
                                                         "stable": stable})
    cdef int d = _one_dim(dim, t._ndim, "argsort")
    cdef _Sorted s = _sort_moved(t, d, descending, False)
    return _unmove(s, s.idx, s.n)


def msort(input, *, out=None):
    """``input`` sorted along its first dimension."""
    return _out(sort(input, 0).values, out, input, "msort", OUT_EXACT)


def topk(input, k, dim=-1, largest=True, sorted=True, *, out=None):
    """The ``k`` largest (or smallest) elements along ``dim``: (values, indices)."""
    cdef TensorBase t = _as_t(input, "topk")
    if needs_slow1(t):
        return redispatch("topk", topk, (input, k), {"dim": dim, "largest": largest,
                                                     "sorted": sorted})
    cdef int d = _one_dim(dim, t._ndim, "topk")
    cdef int64_t n = t._shape[d] if t._ndim else 1
    if k < 0 or k > n:
        raise RuntimeError("selected index k out of range")
    cdef _Sorted s = _sort_moved(t, d, largest, True)
    cdef int last = t._ndim - 1
    vm = s.vals.narrow(last, 0, k) if t._ndim else s.vals
    im = s.idx.narrow(last, 0, k) if t._ndim else s.idx
    v = _finish(_unmove(s, contig(vm), k), t._dtype)
    i = _unmove(s, contig(im), k)
    if wants_grad1(t):
        record("topk", (input,), (v, i), {"dim": d, "k": int(k)})
    return _out_pair(v, i, out, input, "topk", return_types.topk)


cdef void _pick_rows(num_t *vals, int64_t *idx, int64_t rows, int64_t n, int mode, int64_t k,
                     num_t *ov, int64_t *oi) noexcept nogil:
    """Per sorted row: mode 0 the k-th, 1 the lower median (NaN wins), 2 the lower
    median of the non-NaN values, 3 the most frequent value (last index)."""
    cdef int64_t r, pos, nn, j, best, bestlen, run, runstart
    cdef num_t *v
    cdef int64_t *ix
    for r in range(rows):
        v = vals + r * n
        ix = idx + r * n
        if mode == 0:
            pos = k
        elif mode == 1 or mode == 2:
            nn = n
            while nn > 0 and v[nn - 1] != v[nn - 1]:
                nn -= 1
            if mode == 1:
                pos = (n - 1) // 2 if nn == n else nn
            else:
                pos = (nn - 1) // 2 if nn > 0 else 0
        else:
            best = 0
            bestlen = 0
            runstart = 0
            for j in range(1, n + 1):
                if j == n or v[j] != v[runstart]:
                    run = j - runstart
                    if run > bestlen:
                        bestlen = run
                        best = runstart
                    runstart = j
            # the last (largest) original index within the run
            pos = best
            for j in range(best, best + bestlen):
                if ix[j] > ix[pos]:
                    pos = j
        ov[r] = v[pos]
        oi[r] = ix[pos]


cdef object _select(TensorBase t, int d, bint keepdim, int mode, int64_t k, str name):
    cdef _Sorted s = _sort_moved(t, d, False, True)
    cdef int nd = t._ndim, i, m = 0
    cdef int64_t shp[MAX_DIMS]
    for i in range(nd):
        if i != d:
            shp[m] = t._shape[i]
            m += 1
        elif keepdim:
            shp[m] = 1
            m += 1
    cdef TensorBase ov = new_tensor(m, shp, s.vals._dtype, cpu_device())
    cdef TensorBase oi = new_tensor(m, shp, EM_I64, cpu_device())
    cdef char *vp = data_ptr(s.vals)
    cdef int64_t *ip = <int64_t *>data_ptr(s.idx)
    cdef char *ovp = data_ptr(ov)
    cdef int64_t *oip = <int64_t *>data_ptr(oi)
    cdef int cd = s.vals._dtype
    with nogil:
        if cd == EM_F32:
            _pick_rows(<float *>vp, ip, s.rows, s.n, mode, k, <float *>ovp, oip)
        elif cd == EM_F64:
            _pick_rows(<double *>vp, ip, s.rows, s.n, mode, k, <double *>ovp, oip)
        else:
            _pick_rows(<int64_t *>vp, ip, s.rows, s.n, mode, k, <int64_t *>ovp, oip)
    return _finish(ov, t._dtype), oi


def kthvalue(input, k, dim=-1, keepdim=False, *, out=None):
    """The ``k``-th smallest element along ``dim``: (values, indices)."""
    cdef TensorBase t = _as_t(input, "kthvalue")
    if needs_slow1(t):
        return redispatch("kthvalue", kthvalue, (input, k), {"dim": dim, "keepdim": keepdim})
    cdef int d = _one_dim(dim, t._ndim, "kthvalue")
    cdef int64_t n = t._shape[d] if t._ndim else 1
    if k < 1 or k > n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    v, i = _select(t, d, keepdim, 0, k - 1, "kthvalue")
    if wants_grad1(t):
        record("kthvalue", (input,), (v, i), {"dim": d, "keepdim": bool(keepdim)})
    return _out_pair(v, i, out, input, "kthvalue", return_types.kthvalue)


cdef object _median(object input, object dim, bint keepdim, int mode, str name, object fn):
    cdef TensorBase t = _as_t(input, name)
    cdef int64_t n
    cdef int64_t one = 1
    if needs_slow1(t):
        return redispatch(name, fn, (input,) if dim is None else (input, dim),
                          {} if dim is None else {"keepdim": keepdim})
    if dim is None:
        n = numel_of(t._ndim, t._shape)
        if n == 0:
            return _finish(wrap_scalar(float("nan"), _cdt(t._dtype)), t._dtype)
        x = contig(t)
        flat = make_view(x, 1, &n, &one, x._offset)
        v, i = _select(flat, 0, False, mode, 0, name)
        if wants_grad1(t):
            record(name, (input,), v, {"dim": None, "index": i})
        return v
    cdef int d = _one_dim(dim, t._ndim, name)
    if t._ndim and t._shape[d] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    v, i = _select(t, d, keepdim, mode, 0, name)
    if wants_grad1(t):
        record(name, (input,), (v, i), {"dim": d, "keepdim": bool(keepdim)})
    return getattr(return_types, name)(v, i)


def median(input, dim=None, keepdim=False):
    """The lower median (NaN when a NaN is present); with ``dim``: (values, indices)."""
    return _median(input, dim, keepdim, 1, "median", median)


def nanmedian(input, dim=None, keepdim=False):
    """The lower median of the non-NaN elements; with ``dim``: (values, indices)."""
    return _median(input, dim, keepdim, 2, "nanmedian", nanmedian)


def mode(input, dim=-1, keepdim=False):
    """The most frequent value along ``dim`` (smallest on ties) and its last index."""
    cdef TensorBase t = _as_t(input, "mode")
    if needs_slow1(t):
        return redispatch("mode", mode, (input,), {"dim": dim, "keepdim": keepdim})
    cdef int d = _one_dim(dim, t._ndim, "mode")
    if t._ndim and t._shape[d] == 0:
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size.")
    v, i = _select(t, d, keepdim, 3, 0, "mode")
    if wants_grad1(t):
        record("mode", (input,), (v, i), {"dim": d, "keepdim": bool(keepdim)})
    return return_types.mode(v, i)


# ---------------------------------------------------------------------------
# unique, unique_consecutive

cdef int64_t _groups(num_t *v, int64_t n, int64_t *starts) noexcept nogil:
    """Start of each run of equal values (NaN never equals); returns the count."""
    cdef int64_t j, g = 0
    for j in range(n):
        if j == 0 or v[j] != v[j - 1]:
            starts[g] = j
            g += 1
    return g


cdef object _runs(TensorBase vals, TensorBase order, TensorBase t, bint return_inverse,
                  bint return_counts):
    """vals: contiguous 1-D compute-dtype values (sorted, or as given); order: the
    original position of each (None: identity)."""
    cdef int64_t n = vals._shape[0] if vals._ndim else 1
    cdef int64_t g, j, k
    cdef TensorBase starts = new_tensor(1, &n, EM_I64, cpu_device())
    cdef int64_t *sp = <int64_t *>data_ptr(starts)
    cdef char *vp = data_ptr(vals)
    cdef int cd = vals._dtype
    with nogil:
        if cd == EM_F32:
            g = _groups(<float *>vp, n, sp)
        elif cd == EM_F64:
            g = _groups(<double *>vp, n, sp)
        else:
            g = _groups(<int64_t *>vp, n, sp)
    cdef TensorBase uv = new_tensor(1, &g, cd, cpu_device())
    cdef TensorBase cnt = new_tensor(1, &g, EM_I64, cpu_device())
    cdef TensorBase inv = new_tensor(t._ndim, t._shape, EM_I64, cpu_device())
    cdef int64_t *cp = <int64_t *>data_ptr(cnt)
    cdef int64_t *invp = <int64_t *>data_ptr(inv)
    cdef int64_t *op = NULL if order is None else <int64_t *>data_ptr(order)
    cdef int64_t isz = em_itemsize[cd], e
    cdef char *up = data_ptr(uv)
    with nogil:
        for k in range(g):
            e = sp[k + 1] if k + 1 < g else n
            cp[k] = e - sp[k]
            memcpy_(up + k * isz, vp + sp[k] * isz, isz)
            for j in range(sp[k], e):
                invp[op[j] if op != NULL else j] = k
    res = [_finish(uv, t._dtype)]
    if return_inverse:
        res.append(inv)
    if return_counts:
        res.append(cnt)
    return res[0] if len(res) == 1 else tuple(res)


cdef inline void memcpy_(char *dst, const char *src, int64_t n) noexcept nogil:
    cdef int64_t i
    for i in range(n):
        dst[i] = src[i]


def _unique_dim(TensorBase t, dim, bint consecutive, return_inverse, return_counts, str op):
    """unique / unique_consecutive over slices along ``dim``: the slices are sorted
    lexicographically (stable argsort per column, last column first), then runs of
    equal slices are collapsed."""
    from ember._C import index as _index
    cdef int d = wrap_dim(dim, t._ndim, op)
    for i in range(t._ndim):
        if i != d and t._shape[i] == 0:
            raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so "
                               f"{op} cannot be applied")
    x = t.movedim(d, 0)
    cdef int64_t n = x.shape[0]
    cdef int64_t m = 1
    for sz in x.shape[1:]:
        m *= sz
    rows = x.reshape(n, m)
    cdef int64_t one = 1
    order = _arange_i64(n)
    if not consecutive:
        for c in range(m - 1, -1, -1):
            order = _index.index_select(order, 0, argsort(
                _index.index_select(rows.select(1, c), 0, order), 0, False, True))
    srt = _index.index_select(rows, 0, order)
    if n > 1:
        new = _ew.ne(srt.narrow(0, 1, n - 1), srt.narrow(0, 0, n - 1))
        new = any(new, 1) if m > 0 else _ew.eq(new.sum(1), 1)
        is_new = _index.cat([_ew.eq(_arange_i64(1), 0), new])
    else:
        is_new = _ew.eq(_arange_i64(n), _arange_i64(n))
    group = _ew.sub(cumsum(is_new, 0), 1)
    uniq = _index.masked_select(srt, is_new.unsqueeze(1).expand(n, m)) if m > 0 else \
        srt.narrow(0, 0, int(is_new.sum().item()))
    k = int(is_new.sum().item())
    out = uniq.reshape((k,) + tuple(x.shape[1:])).movedim(0, d).contiguous()
    res = [out]
    if return_inverse:
        inverse = new_tensor(1, &n, EM_I64, cpu_device())
        _index.index_put_(inverse, (order,), group)
        res.append(inverse)
    if return_counts:
        res.append(bincount(group, None, k) if n else _arange_i64(0))
    return res[0] if len(res) == 1 else tuple(res)


cdef object _arange_i64(int64_t n):
    cdef TensorBase r = new_tensor(1, &n, EM_I64, cpu_device())
    cdef int64_t *p = <int64_t *>(r._storage.data + r._offset * 8)
    cdef int64_t i
    for i in range(n):
        p[i] = i
    return r


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct elements of ``input`` (sorted), optionally with the inverse
    indices and the counts."""
    cdef TensorBase t = _as_t(input, "unique")
    cdef int64_t n
    cdef int64_t one = 1
    if needs_slow1(t):
        return redispatch("unique", unique, (input,), {"sorted": sorted, "return_inverse":
                          return_inverse, "return_counts": return_counts, "dim": dim})
    if dim is not None:
        return _unique_dim(t, dim, False, return_inverse, return_counts, "unique")
    n = numel_of(t._ndim, t._shape)
    cdef TensorBase x = contig(t)
    cdef TensorBase flat = make_view(x, 1, &n, &one, x._offset)
    cdef _Sorted s = _sort_moved(flat, 0, False, True)
    return _runs(s.vals, s.idx, t, return_inverse, return_counts)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Collapse runs of equal consecutive elements (of the flattened input)."""
    cdef TensorBase t = _as_t(input, "unique_consecutive")
    cdef int64_t n
    cdef int64_t one = 1
    if needs_slow1(t):
        return redispatch("unique_consecutive", unique_consecutive, (input,), {
            "return_inverse": return_inverse, "return_counts": return_counts, "dim": dim})
    if dim is not None:
        return _unique_dim(t, dim, True, return_inverse, return_counts, "unique_consecutive")
    n = numel_of(t._ndim, t._shape)
    cdef TensorBase x = contig(cast(t, _cdt(t._dtype)))
    cdef TensorBase flat = make_view(x, 1, &n, &one, x._offset)
    return _runs(flat, None, t, return_inverse, return_counts)


# ---------------------------------------------------------------------------
# bincount, histc, searchsorted, bucketize

def bincount(input, weights=None, minlength=0):
    """Count of each non-negative integer value in the 1-D ``input`` (weighted
    when ``weights`` is given)."""
    cdef TensorBase t = _as_t(input, "bincount")
    cdef TensorBase x, w = None, r
    cdef int64_t n, i, v, mx = -1, size
    cdef int64_t *xp
    cdef int wdt
    if needs_slow1(t):
        return redispatch("bincount", bincount, (input,), {"weights": weights,
                                                           "minlength": minlength})
    if category(t._dtype) == 2:
        raise NotImplementedError(f"\"bincount_cpu\" not implemented for "
                                  f"'{torch_type_name(t._dtype)}'")
    if t._ndim != 1:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    x = contig(cast(t, EM_I64))
    n = x._shape[0]
    xp = <int64_t *>data_ptr(x)
    for i in range(n):
        if xp[i] < 0:
            raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
        if xp[i] > mx:
            mx = xp[i]
    size = mx + 1 if mx + 1 > minlength else minlength
    if weights is None:
        r = new_tensor(1, &size, EM_I64, cpu_device())
        fill_scalar(r, 0)
        with nogil:
            for i in range(n):
                (<int64_t *>data_ptr(r))[xp[i]] += 1
        return r
    w = <TensorBase>weights
    if w._ndim != 1 or w._shape[0] != n:
        raise RuntimeError("weights should be 1-d and have the same length as input")
    wdt = EM_F32 if w._dtype == EM_F32 else EM_F64
    w = contig(cast(w, wdt))
    r = new_tensor(1, &size, wdt, cpu_device())
    fill_scalar(r, 0)
    with nogil:
        if wdt == EM_F32:
            for i in range(n):
                (<float *>data_ptr(r))[xp[i]] += (<float *>data_ptr(w))[i]
        else:
            for i in range(n):
                (<double *>data_ptr(r))[xp[i]] += (<double *>data_ptr(w))[i]
    return r


cdef void _histc_loop(num_t *x, int64_t n, int64_t bins, num_t lo, num_t hi,
                      num_t *out) noexcept nogil:
    cdef int64_t i, b
    cdef num_t v
    for i in range(n):
        v = x[i]
        if v != v or v < lo or v > hi:
            continue
        b = <int64_t>((v - lo) * bins / (hi - lo))
        if b >= bins:
            b = bins - 1
        out[b] += 1


def histc(input, bins=100, min=0, max=0, *, out=None):
    """Histogram of ``input`` with ``bins`` equal-width bins over [min, max]
    (the data's range when min == max); values outside are ignored."""
    cdef TensorBase t = _as_t(input, "histc")
    cdef int64_t nb = bins, n
    cdef double lo = min, hi = max
    if needs_slow1(t):
        return redispatch("histc", histc, (input,), {"bins": bins, "min": min, "max": max})
    if category(t._dtype) < 2:
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for "
                                  f"'{torch_type_name(t._dtype)}'")
    if nb <= 0:
        raise RuntimeError("torch.histc: bins must be > 0")
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    n = numel_of(t._ndim, t._shape)
    cdef TensorBase x = contig(cast(t, _cdt(t._dtype)))
    if lo == hi and n > 0:
        lo = float(amin(x))
        hi = float(amax(x))
        if lo != lo or hi != hi or _math.isinf(lo) or _math.isinf(hi):
            raise RuntimeError(f"torch.histc: range of [{lo}, {hi}] is not finite")
    if lo == hi:
        lo -= 1
        hi += 1
    cdef TensorBase r = new_tensor(1, &nb, x._dtype, cpu_device())
    fill_scalar(r, 0)
    cdef char *xp = data_ptr(x)
    cdef char *rp = data_ptr(r)
    with nogil:
        if x._dtype == EM_F32:
            _histc_loop(<float *>xp, n, nb, <float>lo, <float>hi, <float *>rp)
        else:
            _histc_loop(<double *>xp, n, nb, lo, hi, <double *>rp)
    return _out(_finish(r, t._dtype), out, input, "histc", OUT_EXACT)


cdef void _ss_loop(num_t *seq, int64_t *sorter, int64_t R, int64_t n, num_t *val, int64_t m,
                   bint rowwise, bint right, int64_t *out) noexcept nogil:
    cdef int64_t r, j, lo, hi, mid
    cdef num_t v, s
    cdef num_t *row
    cdef int64_t *srow
    for r in range(R):
        row = seq + (r * n if rowwise else 0)
        srow = NULL if sorter == NULL else sorter + (r * n if rowwise else 0)
        for j in range(m):
            v = val[r * m + j]
            lo = 0
            hi = n
            while lo < hi:
                mid = (lo + hi) >> 1
                s = row[srow[mid]] if srow != NULL else row[mid]
                if (s <= v if right else s < v) or (v != v and s == s):
                    lo = mid + 1
                else:
                    hi = mid
            out[r * m + j] = lo


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None,
                 sorter=None, out=None):
    """Indices where ``input`` would be inserted into ``sorted_sequence`` (its
    innermost dim) to keep it sorted."""
    cdef TensorBase seq = _as_t(sorted_sequence, "searchsorted")
    cdef TensorBase v, sq, so = None, res
    cdef int64_t R, n, m, i
    cdef bint rowwise
    if needs_slow((seq, input, sorter)):
        return redispatch("searchsorted", searchsorted, (sorted_sequence, input), {
            "out_int32": out_int32, "right": right, "side": side, "sorter": sorter})
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but "
                               f"got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, "
                               "got side of left while right was True")
        right = side == "right"
    if seq._ndim == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive "
                           "dimension, but got 0 dimension")
    scalar = not isinstance(input, TensorBase)
    v = wrap_scalar(input, EM_F64 if isinstance(input, float) else EM_I64) if scalar \
        else <TensorBase>input
    rowwise = seq._ndim > 1
    if rowwise:
        if v._ndim != seq._ndim or any_([v._shape[i] != seq._shape[i]
                                         for i in range(seq._ndim - 1)]):
            raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension "
                               f"or the first N-1 dimensions of boundaries tensor and input "
                               f"value tensor must match, but we got boundaries tensor "
                               f"{list(seq.shape)} and input value tensor {list(v.shape)}")
    cdef int cd = EM_F64 if category(seq._dtype) == 2 or category(v._dtype) == 2 else EM_I64
    n = seq._shape[seq._ndim - 1]
    R = numel_of(seq._ndim, seq._shape) // n if (rowwise and n) else 1
    if rowwise and n == 0:
        R = numel_of(seq._ndim - 1, seq._shape)
    sq = contig(cast(seq, cd))
    cdef TensorBase vv = contig(cast(v, cd))
    m = numel_of(vv._ndim, vv._shape)
    if rowwise:
        m = vv._shape[vv._ndim - 1]
    if sorter is not None:
        so = contig(cast(<TensorBase>sorter, EM_I64))
        if so._ndim != seq._ndim or any_([so._shape[i] != seq._shape[i]
                                          for i in range(seq._ndim)]):
            raise RuntimeError("torch.searchsorted(): boundary and sorter must have the same "
                               "size")
    res = new_tensor(vv._ndim, vv._shape, EM_I64, cpu_device())
    cdef char *sp = data_ptr(sq)
    cdef char *vp = data_ptr(vv)
    cdef int64_t *sop = NULL if so is None else <int64_t *>data_ptr(so)
    cdef int64_t *rp = <int64_t *>data_ptr(res)
    cdef bint rt = right
    with nogil:
        if cd == EM_F64:
            _ss_loop(<double *>sp, sop, R, n, <double *>vp, m, rowwise, rt, rp)
        else:
            _ss_loop(<int64_t *>sp, sop, R, n, <int64_t *>vp, m, rowwise, rt, rp)
    r = cast(res, EM_I32) if out_int32 else res
    return _out(r, out, (sorted_sequence, input), "searchsorted", OUT_EXACT)


cdef bint any_(list xs):
    for x in xs:
        if x:
            return True
    return False


def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):
    """Index of the bucket of each element of ``input``, given 1-D ``boundaries``."""
    if not isinstance(boundaries, TensorBase):
        raise TypeError(f"bucketize(): argument 'boundaries' must be Tensor, not "
                        f"{type(boundaries).__name__}")
    if (<TensorBase>boundaries)._ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim("
                           f"{(<TensorBase>boundaries)._ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right, out=out)


# the public functions, for re-dispatch to modes and plugin backends
for _name, _fn in list(globals().items()):
    if callable(_fn) and not _name.startswith("_"):
        _PUBLIC[_name] = _fn
include "loss.pxi"
