# cython: freethreading_compatible = False
"""Complex tensors: the views between complex and real layouts (``view_as_real``,
``view_as_complex``, ``real``, ``imag``), construction (``complex``, ``polar``),
``angle``, conjugation, and the complex paths of sum/mean/prod and matmul.

A complex element is an interleaved (re, im) pair, so a complex tensor is also a
real tensor with a trailing dim of 2: most ops here are views or compositions of
real kernels through that view; only the product reduction has its own loop.
Autograd follows torch's convention (the gradient is the conjugate Wirtinger
derivative): every op here records, or is a composition of ops that do."""
from libc.stdint cimport int64_t

from ember._C.core cimport *

cdef extern from *:
    """
    #include <complex.h>
    /* rows of k complex values -> their products (float and double) */
    static void em_cprod_f(const float complex *x, int64_t rows, int64_t k, float complex *o) {
        for (int64_t r = 0; r < rows; r++) {
            double complex acc = 1;
            for (int64_t j = 0; j < k; j++) acc *= x[r * k + j];
            o[r] = (float complex)acc;
        }
    }
    static void em_cprod_d(const double complex *x, int64_t rows, int64_t k, double complex *o) {
        for (int64_t r = 0; r < rows; r++) {
            double complex acc = 1;
            for (int64_t j = 0; j < k; j++) acc *= x[r * k + j];
            o[r] = acc;
        }
    }
    """
    void em_cprod_f(const void *x, int64_t rows, int64_t k, void *o) nogil
    void em_cprod_d(const void *x, int64_t rows, int64_t k, void *o) nogil


cdef inline bint _is_c(TensorBase t) noexcept:
    return t._dtype == EM_C64 or t._dtype == EM_C128


cdef TensorBase _arg(object x, str op, str name="input"):
    if not isinstance(x, TensorBase):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(x).__name__}")
    return <TensorBase>x


cdef TensorBase _retyped(TensorBase base, int ndim, const int64_t *shape,
                         const int64_t *strides, int64_t offset, int dtype):
    """A view of base's storage with another element type (strides/offset in its items)."""
    cdef TensorBase v = make_view(base, ndim, shape, strides, 0)
    v._dtype = dtype
    v._offset = offset
    return v


def _ember():
    import ember
    return ember


# ---------------------------------------------------------------------------
# views

def view_as_real(input):
    """A real view of a complex tensor with a trailing dim of size 2 (re, im)."""
    cdef TensorBase t = _arg(input, "view_as_real")
    if not _is_c(t):
        raise RuntimeError("view_as_real is only supported for complex tensors")
    if slow_path() or t._device.kind:
        return redispatch("view_as_real", view_as_real, (input,), None)
    cdef int64_t shp[MAX_DIMS]
    cdef int64_t st[MAX_DIMS]
    cdef int i
    check_ndim(t._ndim + 1, "view_as_real")
    for i in range(t._ndim):
        shp[i] = t._shape[i]
        st[i] = t._strides[i] * 2
    shp[t._ndim] = 2
    st[t._ndim] = 1
    r = _retyped(t, t._ndim + 1, shp, st, t._offset * 2, real_of(t._dtype))
    if grad_on() and t._requires_grad:
        record("view_as_real", (t,), r, None)
    return r


def view_as_complex(input):
    """A complex view of a float tensor whose last dim is (re, im) of size 2, stride 1."""
    cdef TensorBase t = _arg(input, "view_as_complex")
    if t._dtype != EM_F32 and t._dtype != EM_F64:
        raise RuntimeError(f"view_as_complex is only supported for float and double tensors, "
                           f"but got a tensor of scalar type: {dtype_obj(t._dtype)}")
    if slow_path() or t._device.kind:
        return redispatch("view_as_complex", view_as_complex, (input,), None)
    if t._ndim == 0 or t._shape[t._ndim - 1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if t._strides[t._ndim - 1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    cdef int i
    for i in range(t._ndim - 1):
        if t._strides[i] % 2:
            raise RuntimeError("Tensor must have a stride divisible by 2 for all but last "
                               "dimension")
    if t._offset % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    cdef int64_t st[MAX_DIMS]
    for i in range(t._ndim - 1):
        st[i] = t._strides[i] // 2
    r = _retyped(t, t._ndim - 1, t._shape, st, t._offset // 2, complex_of(t._dtype))
    if grad_on() and t._requires_grad:
        record("view_as_complex", (t,), r, None)
    return r


cdef TensorBase _part(TensorBase t, int which):
    """The real (0) or imaginary (1) part of a complex tensor as a strided real view."""
    cdef int64_t st[MAX_DIMS]
    cdef int i
    for i in range(t._ndim):
        st[i] = t._strides[i] * 2
    return _retyped(t, t._ndim, t._shape, st, t._offset * 2 + which, real_of(t._dtype))


def real(input):
    """The real part: a view for a complex tensor, ``input`` itself for a real one."""
    cdef TensorBase t = _arg(input, "real")
    if not _is_c(t):
        return t
    if slow_path() or t._device.kind:
        return redispatch("real", real, (input,), None)
    r = _part(t, 0)
    if grad_on() and t._requires_grad:
        record("real", (t,), r, None)
    return r


def imag(input):
    """The imaginary part of a complex tensor (a view)."""
    cdef TensorBase t = _arg(input, "imag")
    if not _is_c(t):
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    if slow_path() or t._device.kind:
        return redispatch("imag", imag, (input,), None)
    r = _part(t, 1)
    if grad_on() and t._requires_grad:
        record("imag", (t,), r, None)
    return r


# ---------------------------------------------------------------------------
# construction

def complex(real, imag, *, out=None):
    """``real + 1j * imag`` from two float tensors of the same dtype (broadcast)."""
    cdef TensorBase re = _arg(real, "complex", "real"), im = _arg(imag, "complex", "imag")
    if re._dtype != im._dtype:
        raise RuntimeError(f"Expected object of scalar type {dtype_obj(re._dtype)} but got "
                           f"scalar type {dtype_obj(im._dtype)} for second argument")
    if re._dtype not in (EM_F32, EM_F64):
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{dtype_obj(re._dtype)} and {dtype_obj(im._dtype)}")
    if slow_path() or re._device.kind:
        return redispatch("complex", complex, (real, imag),
                          None if out is None else {"out": out})
    cdef int64_t shp[MAX_DIMS]
    cdef int nd = broadcast_shape(re._ndim, re._shape, im._ndim, im._shape, shp)
    cdef TensorBase r = new_tensor(nd, shp, complex_of(re._dtype), re._device)
    copy_into(_part(r, 0), re)
    copy_into(_part(r, 1), im)
    if out is not None:
        return write_out(out, r, OUT_EXACT, (real, imag), "complex")
    if grad_on() and (re._requires_grad or im._requires_grad):
        record("complex", (re, im), r, None)
    return r


def polar(abs, angle, *, out=None):
    """``abs * (cos(angle) + 1j * sin(angle))``."""
    E = _ember()
    a = _arg(abs, "polar", "abs")
    t = _arg(angle, "polar", "angle")
    r = complex(E.mul(a, E.cos(t)), E.mul(a, E.sin(t)))
    if out is not None:
        return write_out(out, <TensorBase>r, OUT_EXACT, (abs, angle), "polar")
    return r


def angle(input, *, out=None):
    """Elementwise argument: atan2(imag, real) for complex, 0 or pi for real input."""
    E = _ember()
    cdef TensorBase t = _arg(input, "angle")
    if _is_c(t):
        with _no_grad():
            r = E.atan2(_part(t, 1), _part(t, 0))
        if grad_on() and t._requires_grad:
            record("angle", (t,), r, None)
    else:
        x = t if category(t._dtype) == 2 else t.to(dtype_obj(default_dtype()))
        # pi where negative, nan kept; the gradient of angle on real input is zero
        with _no_grad():
            r = E.where(E.lt(x, 0), 3.141592653589793, E.mul(x, 0))
        if grad_on() and t._requires_grad:
            record("angle", (t,), r, None)
    if out is not None:
        return write_out(out, <TensorBase>r, OUT_CAST, (input,), "angle")
    return r


def _no_grad():
    from ember.autograd.grad_mode import no_grad
    return no_grad()


# ---------------------------------------------------------------------------
# conjugation (materialised: ember keeps no lazy conjugate bit)

def conj_physical(input, *, out=None):
    """The complex conjugate as a new tensor (``input`` itself for a real tensor)."""
    cdef TensorBase t = _arg(input, "conj_physical")
    if not _is_c(t):
        r = t
    else:
        if slow_path() or t._device.kind:
            return redispatch("conj_physical", conj_physical, (input,),
                              None if out is None else {"out": out})
        r = new_like(t, -1)
        copy_into(<TensorBase>r, t)
        im = _part(<TensorBase>r, 1)
        with _no_grad():
            im.neg_()
        if grad_on() and t._requires_grad:
            record("conj_physical", (t,), r, None)
    if out is not None:
        return write_out(out, <TensorBase>r, OUT_EXACT, (input,), "conj_physical")
    return r


def conj_physical_(input):
    """Conjugate ``input`` in place."""
    cdef TensorBase t = _arg(input, "conj_physical_")
    if _is_c(t):
        check_inplace(t, "conj_physical_")
        _part(t, 1).neg_()
        bump_version(t)
    return t


def conj(input):
    """The complex conjugate (materialised for complex input; ``input`` for real)."""
    return conj_physical(_arg(input, "conj"))


def resolve_conj(input):
    """``input``: ember materialises conjugates, so there is never a bit to resolve."""
    return _arg(input, "resolve_conj")


def is_conj(input) -> bool:
    """Whether ``input`` carries a lazy conjugate bit: never in ember, whose ``conj``
    materialises the result."""
    _arg(input, "is_conj")
    return False


def isreal(input):
    """True where ``input`` has no imaginary part (every element of a real tensor)."""
    E = _ember()
    cdef TensorBase t = _arg(input, "isreal")
    if _is_c(t):
        return E.eq(_part(t, 1), 0)
    return E.ones_like(t, dtype=E.bool)


# ---------------------------------------------------------------------------
# reductions and products

def reduce(str op, TensorBase t, dim, keepdim, dtype, out):
    """sum / mean / prod of a complex tensor (called by the reduction module)."""
    E = _ember()
    if dtype is not None:
        d = dtype_code(dtype)
        if category(d) != 3:
            raise RuntimeError(f"{op}(): dtype {dtype} cannot hold complex input "
                               f"{dtype_obj(t._dtype)}")
        t = t.to(dtype)
    if isinstance(dim, int):
        dim = (dim,)
    dims = tuple(range(t._ndim)) if dim is None or len(dim) == 0 else tuple(
        wrap_dim(d, t._ndim, op) for d in dim)
    if op == "prod":
        r = _prod(t, dims, keepdim)
    else:
        # sum and mean are real-linear: reduce the (re, im) view over the same dims
        v = view_as_real(t)
        r = view_as_complex(getattr(E, op)(v, dims, keepdim=keepdim))
    if out is not None:
        return write_out(out, <TensorBase>r, OUT_CAST, (t,), op)
    return r


cdef object _prod(TensorBase t, tuple dims, bint keepdim):
    E = _ember()
    keep = [d for d in range(t._ndim) if d not in dims]
    x = t.permute(keep + list(dims)).contiguous()
    cdef int64_t rows = 1, k = 1
    for d in keep:
        rows *= t._shape[d]
    for d in dims:
        k *= t._shape[d]
    cdef TensorBase xc = <TensorBase>x
    cdef TensorBase o = <TensorBase>E.empty((rows,), dtype=dtype_obj(t._dtype))
    cdef char *xp = xc._storage.data + xc._offset * em_itemsize[xc._dtype]
    cdef char *op_ = o._storage.data
    with nogil:
        if xc._dtype == EM_C64:
            em_cprod_f(xp, rows, k, op_)
        else:
            em_cprod_d(xp, rows, k, op_)
    shape = [t._shape[d] if d not in dims else 1 for d in range(t._ndim)] if keepdim else \
        [t._shape[d] for d in keep]
    r = o.reshape(shape)
    if grad_on() and t._requires_grad:
        record("cprod", (t,), r, {"dims": dims, "keepdim": bool(keepdim)})
    return r


def matmul(a, b):
    """Complex matrix product from four real GEMMs on the (re, im) parts."""
    E = _ember()
    ar, ai = real(a), imag(a)
    br, bi = real(b), imag(b)
    return complex(E.sub(E.matmul(ar, br), E.matmul(ai, bi)),
                   E.add(E.matmul(ar, bi), E.matmul(ai, br)))
