# cython: freethreading_compatible = False
"""Range and structured creation: ``arange``, ``range``, ``linspace``,
``logspace``, ``eye``, ``empty_strided``, ``tril_indices``, ``triu_indices``.

Sizes, dtype inference and errors follow PyTorch (``arange`` sizes are
``ceil((end - start) / step)`` in double; integer dtypes compute in int64);
the values come from src_c/creation.c.  The default dtype and the default
device are honoured; plugin devices get their own kernel when they registered
one, else the CPU result moved with their ``to`` kernel."""
import math as _math
import warnings as _warnings

from libc.math cimport ceil, floor
from libc.stdint cimport INT64_MAX, int64_t
from libc.string cimport memcpy

from ember._C.core cimport *
from ember._C.frame cimport *
from ember._C import core as _core

cdef extern from *:
    """
    void em_arange(int dtype, void *out, int64_t n, double start, double step, int64_t istart,
                   int64_t istep, int nthreads);
    void em_linspace(int dtype, void *out, int64_t n, double start, double end, int nthreads);
    void em_logspace(int dtype, void *out, int64_t n, double start, double end, double base,
                     int nthreads);
    """
    void em_arange(int dtype, void *out, int64_t n, double start, double step, int64_t istart,
                   int64_t istep, int nthreads) nogil
    void em_linspace(int dtype, void *out, int64_t n, double start, double end,
                     int nthreads) nogil
    void em_logspace(int dtype, void *out, int64_t n, double start, double end, double base,
                     int nthreads) nogil

_CTYPE = ("bool", "uint8_t", "int8_t", "int16_t", "int32_t", "int64_t", "c10::Half",
          "c10::BFloat16", "float", "double")
_INT_RANGE = {EM_BOOL: (0, 1), EM_U8: (0, 255), EM_I8: (-128, 127), EM_I16: (-32768, 32767),
              EM_I32: (-2 ** 31, 2 ** 31 - 1), EM_I64: (-2 ** 63, 2 ** 63 - 1)}
_FLOAT_MAX = {EM_F16: 65504.0, EM_BF16: 3.3895313892515355e38, EM_F32: 3.4028234663852886e38}


def _kw(**kwargs):
    return {k: v for k, v in kwargs.items() if v is not None and v is not False}


cdef object _number(object v, str op, str arg, int pos):
    """A PyTorch Scalar argument: Python number, NumPy scalar or 0-dim tensor."""
    if isinstance(v, TensorBase):
        if (<TensorBase>v)._ndim != 0:
            raise TypeError(f"{op}(): argument '{arg}' (position {pos}) must be Number, not "
                            f"Tensor")
        return v.item()
    c = scalar_category(v)
    if c < 0:
        raise TypeError(f"{op}(): argument '{arg}' (position {pos}) must be Number, not "
                        f"{type(v).__name__}")
    if c == 2:
        return float(v)
    if c == 0:
        return int(bool(v))
    if c == 3:
        return complex(v)
    return v.__index__()


cdef bint _is_float_arg(object v):
    if isinstance(v, TensorBase):
        return (<TensorBase>v)._dtype >= EM_F16
    return scalar_category(v) == 2


cdef str _num(object v):
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


cdef object _to_int(object v):
    """Scalar.to<int64_t>(): truncation toward zero"""
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            raise RuntimeError(f"value cannot be converted to type int64_t without overflow")
        return int(v)
    return v


cdef int _check_convertible(object v, int dt) except -1:
    """Scalar.to<dtype>() overflow check (PyTorch's checked_convert)"""
    if dt in _INT_RANGE:
        if isinstance(v, float) and (v != v or abs(v) == float("inf")):
            raise RuntimeError(f"value cannot be converted to type {_CTYPE[dt]} without overflow")
        mn, mx = _INT_RANGE[dt]
        iv = int(v)
        if dt != EM_BOOL and (iv < mn or iv > mx):
            raise RuntimeError(f"value cannot be converted to type {_CTYPE[dt]} without overflow")
    elif dt in _FLOAT_MAX:
        fv = float(v)
        if fv == fv and abs(fv) != float("inf") and abs(fv) > _FLOAT_MAX[dt]:
            raise RuntimeError(f"value cannot be converted to type {_CTYPE[dt]} without overflow")
    return 0


cdef TensorBase _new1(int64_t n, int dt):
    return new_tensor(1, &n, dt, cpu_device())


# ----------------------------------------------------------------------------
# arange / range

def arange(start=None, end=None, step=1, *, out=None, dtype=None, layout=None, device=None,
           requires_grad=False, pin_memory=False):
    """Values from ``start`` to ``end`` (exclusive) by ``step``: ``arange(5)``,
    ``arange(1, 2.5, 0.5)``.  int64 unless an argument is a float (then the
    default dtype) or ``dtype`` is given."""
    cdef Device dev = as_device(device)
    if slow_path() or dev.kind != DEV_CPU:
        return factory_slow("arange", arange, (start, end, step), _kw(
            out=out, dtype=dtype, device=device, requires_grad=requires_grad), dev)
    if end is None:
        if start is None:
            raise TypeError("arange() missing required argument 'end' (pos 1)")
        start, end = 0, start
    elif start is None:
        start = 0
    cdef bint floaty = _is_float_arg(start) or _is_float_arg(end) or _is_float_arg(step)
    s = _number(start, "arange", "start", 0)
    e = _number(end, "arange", "end", 1)
    st = _number(step, "arange", "step", 2)
    cdef int dt = dtype_code(dtype)
    if dt < 0:
        dt = default_dtype() if floaty else EM_I64
    if dt == EM_BOOL:
        raise NotImplementedError("\"arange_cpu\" not implemented for 'Bool'")
    cdef int64_t n
    cdef double size_d
    cdef bint is_int = dt < EM_F16
    if is_int:
        xs, xe, xst = _to_int(s), _to_int(e), _to_int(st)
        if xst == 0:
            if st != 0:
                raise ValueError("step must be nonzero")
            raise RuntimeError("step must be nonzero")
    else:
        xs, xe, xst = float(s), float(e), float(st)
        if xst == 0:
            raise RuntimeError("step must be nonzero")
        if not (_math.isfinite(xs) and _math.isfinite(xe)):
            raise RuntimeError(f"unsupported range: {_num(xs)} -> {_num(xe)}")
    if not ((xst > 0 and xe >= xs) or (xst < 0 and xe <= xs)):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    if dt == EM_I64:
        sgn = 1 if xst > 0 else -1
        q = xe - xs + xst - sgn
        size_i = abs(q) // abs(xst)   # C truncation; q and xst share a sign here
        size_d = <double>size_i
    else:
        size_d = ceil((<double>float(e) - <double>float(s)) / <double>float(st))
    if not (size_d >= 0 and size_d <= 9.223372036854775807e18):
        raise RuntimeError("invalid size, possible overflow?")
    n = <int64_t>size_d
    if is_int:
        if xs < -2 ** 63 or xs > 2 ** 63 - 1 or xst < -2 ** 63 or xst > 2 ** 63 - 1:
            raise RuntimeError("value cannot be converted to type int64_t without overflow")
    cdef TensorBase t = _new1(n, dt)
    cdef double ds = float(xs), dstep = float(xst)
    cdef int64_t is_ = xs if is_int else 0, istep = xst if is_int else 0
    cdef char *p = data_ptr(t)
    cdef int nt = nthreads_for(n)
    _real_kernel(dt, "arange_cpu")
    with nogil:
        em_arange(dt, p, n, ds, dstep, is_, istep, nt)
    return finish_out(t, out, requires_grad, "arange")


def _range(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None,
           requires_grad=False):
    """Deprecated inclusive form of ``arange``: ``range(0, 4)`` has 5 values
    (always a floating-point dtype unless ``dtype`` is given)."""
    _warnings.warn("ember.range is deprecated and will be removed in a future release because "
                   "its behavior is inconsistent with Python's range builtin. Instead, use "
                   "ember.arange, which produces values in [start, end).", DeprecationWarning,
                   stacklevel=2)
    cdef Device dev = as_device(device)
    if slow_path() or dev.kind != DEV_CPU:
        return factory_slow("range", _range, (start, end, step), _kw(
            out=out, dtype=dtype, device=device, requires_grad=requires_grad), dev)
    if end is None:
        raise TypeError("range() missing required argument 'end' (pos 2)")
    s = float(_number(start, "range", "start", 0))
    e = float(_number(end, "range", "end", 1))
    st = float(_number(step, "range", "step", 2))
    cdef int dt = dtype_code(dtype)
    if dt < 0:
        dt = default_dtype()
    if st == 0:
        raise RuntimeError("step must be nonzero")
    if not (_math.isfinite(s) and _math.isfinite(e)):
        raise RuntimeError(f"unsupported range: {_num(s)} -> {_num(e)}")
    if not ((st > 0 and e >= s) or (st < 0 and e <= s)):
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    cdef double size_r = floor((<double>e - <double>s) / <double>st) + 1
    if not size_r <= 9.223372036854775807e18:
        raise RuntimeError("invalid size, possible overflow?")
    cdef int64_t n = <int64_t>size_r
    cdef TensorBase t = _new1(n, dt)
    cdef int64_t is_ = int(s) if dt < EM_F16 else 0, istep = int(st) if dt < EM_F16 else 0
    cdef double ds = s, dstep = st
    cdef char *p = data_ptr(t)
    _real_kernel(dt, "arange_cpu")
    with nogil:
        em_arange(dt, p, n, ds, dstep, is_, istep, nthreads_for(n))
    return finish_out(t, out, requires_grad, "range")


# ----------------------------------------------------------------------------
# linspace / logspace

cdef int64_t _steps(object steps, str op) except -1:
    if isinstance(steps, bool) or not (isinstance(steps, int) or (
            scalar_category(steps) == 1 and not isinstance(steps, TensorBase))):
        raise TypeError(f"{op}(): argument 'steps' (position 3) must be int, not "
                        f"{type(steps).__name__}")
    cdef int64_t n = int64_arg(steps.__index__(), op, "steps")
    if n < 0:
        raise RuntimeError("number of steps must be non-negative")
    return n


cdef int _real_kernel(int dt, str op) except -1:
    """The range kernels fill real values only."""
    if category(dt) == 3:
        raise NotImplementedError(f"\"{op}\" not implemented for '{torch_type_name(dt)}'")
    return 0


cdef int _range_dtype(object s, object e, object dtype, str op) except -1:
    """linspace/logspace's dtype: ``dtype``, else the default (complex for a complex end)."""
    cdef int dt = dtype_code(dtype)
    cdef bint c = isinstance(s, complex) or isinstance(e, complex)
    if dt < 0:
        return complex_of(default_dtype()) if c else default_dtype()
    if c and category(dt) != 3:
        raise RuntimeError(f"torch.{op}(): inferred dtype "
                           f"{torch_type_name(complex_of(default_dtype()))} can't be safely "
                           f"cast to passed dtype {torch_type_name(dt)}")
    return dt


def linspace(start, end, steps, *, out=None, dtype=None, layout=None, device=None,
             requires_grad=False):
    """``steps`` values evenly spaced from ``start`` to ``end`` inclusive."""
    cdef Device dev = as_device(device)
    if slow_path() or dev.kind != DEV_CPU:
        return factory_slow("linspace", linspace, (start, end, steps), _kw(
            out=out, dtype=dtype, device=device, requires_grad=requires_grad), dev)
    s = _number(start, "linspace", "start", 0)
    e = _number(end, "linspace", "end", 1)
    cdef int64_t n = _steps(steps, "linspace")
    cdef int dt = _range_dtype(s, e, dtype, "linspace")
    if category(dt) == 3:
        from ember._C import cplx
        return finish_out(cplx.linspace(s, e, n, dt), out, requires_grad, "linspace")
    if dt == EM_BOOL:
        raise NotImplementedError("\"linspace_cpu\" not implemented for 'Bool'")
    _check_convertible(s, dt)
    _check_convertible(e, dt)
    cdef double ds, de
    if dt < EM_F16:
        ds, de = <double>int(s), <double>int(e)
    else:
        ds, de = float(s), float(e)
    cdef TensorBase t = _new1(n, dt)
    cdef char *p = data_ptr(t)
    _real_kernel(dt, "linspace_cpu")
    with nogil:
        em_linspace(dt, p, n, ds, de, nthreads_for(n))
    return finish_out(t, out, requires_grad, "linspace")


def logspace(start, end, steps, base=10.0, *, out=None, dtype=None, layout=None, device=None,
             requires_grad=False):
    """``base ** linspace(start, end, steps)``."""
    cdef Device dev = as_device(device)
    if slow_path() or dev.kind != DEV_CPU:
        return factory_slow("logspace", logspace, (start, end, steps, base), _kw(
            out=out, dtype=dtype, device=device, requires_grad=requires_grad), dev)
    s = _number(start, "logspace", "start", 0)
    e = _number(end, "logspace", "end", 1)
    cdef int64_t n = _steps(steps, "logspace")
    cdef double b = float(_number(base, "logspace", "base", 3))
    cdef int dt = _range_dtype(s, e, dtype, "logspace")
    if category(dt) == 3:
        from ember._C import cplx
        return finish_out(cplx.logspace(s, e, n, b, dt), out, requires_grad, "logspace")
    s, e = float(s), float(e)
    if dt == EM_BOOL:
        raise NotImplementedError("\"logspace_cpu\" not implemented for 'Bool'")
    if dt < EM_F16 and n > 1:
        _check_convertible(s, dt)
        _check_convertible(e, dt)
        s, e = float(int(s)), float(int(e))
    cdef TensorBase t = _new1(n, dt)
    cdef char *p = data_ptr(t)
    cdef double ds = s, de = e
    _real_kernel(dt, "logspace_cpu")
    with nogil:
        em_logspace(dt, p, n, ds, de, b, nthreads_for(n))
    return finish_out(t, out, requires_grad, "logspace")


# ----------------------------------------------------------------------------
# eye, empty_strided, tril/triu_indices

cdef int64_t _int_arg(object v, str op, str name, int pos) except? -1:
    if isinstance(v, bool) or isinstance(v, float) or not (
            isinstance(v, int) or scalar_category(v) == 1):
        raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be int, not "
                        f"{type(v).__name__}")
    v = v.__index__()
    if not -2 ** 63 <= v < 2 ** 63:
        raise ValueError(f"{op}(): argument '{name}' (position {pos}): Overflow when unpacking "
                         f"long long ({v})")
    return v


def eye(n, m=None, *, out=None, dtype=None, layout=None, device=None, requires_grad=False,
        pin_memory=False):
    """A 2-D tensor with ones on the diagonal: ``eye(3)``, ``eye(2, 3)``."""
    cdef Device dev = as_device(device)
    if slow_path() or dev.kind != DEV_CPU:
        return factory_slow("eye", eye, (n, m), _kw(out=out, dtype=dtype, device=device,
                                             requires_grad=requires_grad), dev)
    cdef int64_t shp[2]
    shp[0] = _int_arg(n, "eye", "n", 1)
    shp[1] = shp[0] if m is None else _int_arg(m, "eye", "m", 2)
    if shp[0] < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {shp[0]}")
    if shp[1] < 0:
        raise RuntimeError(f"m must be greater or equal to 0, got {shp[1]}")
    cdef int dt = dtype_code(dtype)
    if dt < 0:
        dt = default_dtype()
    cdef TensorBase t = new_tensor(2, shp, dt, cpu_device())
    fill_scalar(t, 0)
    cdef char one[16]
    scalar_to_buf(1, dt, one)
    cdef int64_t i, k = shp[0] if shp[0] < shp[1] else shp[1]
    cdef int isz = em_itemsize[dt]
    cdef char *p = data_ptr(t)
    cdef int64_t stride = (shp[1] + 1) * isz
    for i in range(k):
        memcpy(p + i * stride, one, isz)
    return finish_out(t, out, requires_grad, "eye")


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False):
    """An uninitialised tensor with the given sizes and strides (in elements)."""
    size = tuple(size)
    stride = tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError(f"dimensionality of sizes ({len(size)}) must match dimensionality of "
                           f"strides ({len(stride)})")
    for i, s in enumerate(size):
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                               f"{list(size)}")
    for s in stride:
        if s < 0:
            raise RuntimeError(f"Storage size calculation overflowed with sizes={list(size)} and "
                               f"strides={list(stride)}")
    numel = 1
    for s in size:
        numel *= s
    nelem = 0 if numel == 0 else 1 + sum((s - 1) * st for s, st in zip(size, stride))
    _core._check_size((nelem,), dtype, "empty_strided")
    _core._check_size(size, dtype, "empty_strided")
    cdef Device dev = as_device(device)
    cdef int dt = dtype_code(dtype)
    if dt < 0:
        dt = default_dtype()
    if slow_path() and dev.kind == DEV_CPU:
        return redispatch("empty_strided", empty_strided, (size, stride), _kw(
            dtype=dtype, device=device, requires_grad=requires_grad))
    if dev.kind != DEV_CPU:
        base = _core.empty((nelem,), dtype=dtype_obj(dt),
                           device=dev)
        t = base.as_strided(size, stride, 0)
    else:
        st = _core._new_storage(nelem * em_itemsize[dt], dev)
        t = _core._from_storage(st, size, stride, dtype_obj(dt))
    if requires_grad:
        t.requires_grad_(True)
    return t




cdef object _clamped_sum(object a, object b, object c):
    """sum(min(max(x, 0), c) for x in range(a, b + 1)), in O(1) (Python ints)."""
    if b < a:
        return 0
    lo, hi = max(a, 1), min(b, c - 1)
    s = (lo + hi) * (hi - lo + 1) // 2 if hi >= lo else 0
    return s + c * max(0, b - max(a, c) + 1)


cdef int64_t _tri_count(int64_t row, int64_t col, int64_t offset, bint lower) except -1:
    """Entries of the lower (upper) triangle: row i holds clamp(i + offset + 1, 0, col)
    (col - clamp(i + offset, 0, col)); computed in closed form, so a huge row count
    is refused at once instead of being counted."""
    cdef object r = row, c = col, off = offset      # Python ints: no C overflow
    if lower:
        total = _clamped_sum(off + 1, off + r, c)
    else:
        total = r * c - _clamped_sum(off, off + r - 1, c)
    if total > INT64_MAX // 2:
        raise RuntimeError(f"Storage size calculation overflowed with sizes=[2, {total}]")
    return total


cdef object _tri_indices(object row, object col, object offset, object dtype, object device,
                         bint lower, str op):
    cdef int64_t r = _int_arg(row, op, "row", 1), c = _int_arg(col, op, "col", 2)
    cdef int64_t off = _int_arg(offset, op, "offset", 3)
    if r < 0:
        raise RuntimeError(f"row must be non-negative, got{r}")
    if c < 0:
        raise RuntimeError(f"col must be non-negative, got{c}")
    cdef int dt = dtype_code(dtype)
    if dt < 0:
        dt = EM_I64
    if dt != EM_I64 and dt != EM_I32:
        raise NotImplementedError(f"\"{op}\" not implemented for '{torch_type_name(dt)}'")
    # an offset past either edge selects the same entries as one just past it; clamping
    # keeps the row arithmetic below in int64
    off = -r if off < -r else (c if off > c else off)
    cdef int64_t total = _tri_count(r, c, off, lower)
    cdef int64_t shp[2]
    shp[0] = 2
    shp[1] = total
    cdef TensorBase t = new_tensor(2, shp, EM_I64, cpu_device())
    cdef int64_t *p = <int64_t *>data_ptr(t)
    cdef int64_t i, j, k = 0, j0, j1
    # only rows that hold entries are walked (each holds at least one)
    cdef int64_t i0 = 0, i1 = r
    if lower and off < 0:
        i0 = -off if -off < r else r
    if not lower:
        i1 = c - off if off < c else 0
        i1 = r if i1 > r else i1
    if total == 0:
        i1 = i0
    with nogil:
        for i in range(i0, i1):
            if lower:
                j0 = 0
                j1 = i + off + 1
                j1 = c if j1 > c else j1
            else:
                j0 = i + off
                j0 = 0 if j0 < 0 else j0
                j1 = c
            j = j0
            while j < j1:
                p[k] = i
                p[total + k] = j
                k += 1
                j += 1
    if dt != EM_I64:
        t = cast(t, dt)
    cdef Device dev = as_device(device)
    if dev.kind != DEV_CPU:
        return t.to(dev)
    return t


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """Coordinates (2 x N) of the lower triangle of a row x col matrix."""
    return _tri_indices(row, col, offset, dtype, device, True, "tril_indices")


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """Coordinates (2 x N) of the upper triangle of a row x col matrix."""
    return _tri_indices(row, col, offset, dtype, device, False, "triu_indices")


# `range` is bound here, after every compiled loop: inside this module the name
# must stay Python's builtin (Cython turns `for i in range(n)` into C loops).
globals()["range"] = _range
_range.__name__ = "range"
