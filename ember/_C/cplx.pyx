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
from ember._C.frame cimport graph_old, commit_inplace

cdef extern from *:
    """
    #include <complex.h>
    /* the Cython side passes untyped data pointers */
    /* rows of k complex values -> their products (float and double) */
    static void em_cprod_f(const void *xv, int64_t rows, int64_t k, void *ov) {
        const float complex *x = xv;
        float complex *o = ov;
        for (int64_t r = 0; r < rows; r++) {
            double complex acc = 1;
            for (int64_t j = 0; j < k; j++) acc *= x[r * k + j];
            o[r] = (float complex)acc;
        }
    }
    static void em_cprod_d(const void *xv, int64_t rows, int64_t k, void *ov) {
        const double complex *x = xv;
        double complex *o = ov;
        for (int64_t r = 0; r < rows; r++) {
            double complex acc = 1;
            for (int64_t j = 0; j < k; j++) acc *= x[r * k + j];
            o[r] = acc;
        }
    }
    /* rows of k complex values -> their running products, accumulated in double */
    static void em_ccumprod_f(const void *xv, int64_t rows, int64_t k, void *ov) {
        const float complex *x = xv;
        float complex *o = ov;
        for (int64_t r = 0; r < rows; r++) {
            double complex acc = 1;
            for (int64_t j = 0; j < k; j++) { acc *= x[r * k + j]; o[r * k + j] = (float complex)acc; }
        }
    }
    static void em_ccumprod_d(const void *xv, int64_t rows, int64_t k, void *ov) {
        const double complex *x = xv;
        double complex *o = ov;
        for (int64_t r = 0; r < rows; r++) {
            double complex acc = 1;
            for (int64_t j = 0; j < k; j++) { acc *= x[r * k + j]; o[r * k + j] = acc; }
        }
    }
    /* log(exp(x) + exp(y)) shifted by the larger real part, with torch's NaN and
       infinity rules */
    static double complex em_clae(double complex x, double complex y) {
        double a = creal(x), b = creal(y);
        if (isnan(a) || isnan(b)) return CMPLX(NAN, NAN);
        double lo = a < b ? a : b, hi = a < b ? b : a;
        if (!isfinite(lo) && lo == hi) return lo < 0 ? x : clog(cexp(x) + cexp(y));
        double complex mx = a < b ? y : x, mn = a < b ? x : y;
        return mx + clog(1.0 + cexp(mn - mx));
    }
    static void em_clcse_f(const void *xv, int64_t rows, int64_t k, void *ov) {
        const float complex *x = xv;
        float complex *o = ov;
        for (int64_t r = 0; r < rows; r++) {
            double complex acc = k ? x[r * k] : 0;
            for (int64_t j = 0; j < k; j++) {
                if (j) acc = em_clae(acc, x[r * k + j]);
                o[r * k + j] = (float complex)acc;
            }
        }
    }
    static void em_clcse_d(const void *xv, int64_t rows, int64_t k, void *ov) {
        const double complex *x = xv;
        double complex *o = ov;
        for (int64_t r = 0; r < rows; r++) {
            double complex acc = k ? x[r * k] : 0;
            for (int64_t j = 0; j < k; j++) {
                if (j) acc = em_clae(acc, x[r * k + j]);
                o[r * k + j] = acc;
            }
        }
    }
    static void em_ccumsum_f(const void *xv, int64_t rows, int64_t k, void *ov) {
        const float complex *x = xv;
        float complex *o = ov;
        for (int64_t r = 0; r < rows; r++) {
            double complex acc = 0;
            for (int64_t j = 0; j < k; j++) { acc += x[r * k + j]; o[r * k + j] = (float complex)acc; }
        }
    }
    static void em_ccumsum_d(const void *xv, int64_t rows, int64_t k, void *ov) {
        const double complex *x = xv;
        double complex *o = ov;
        for (int64_t r = 0; r < rows; r++) {
            double complex acc = 0;
            for (int64_t j = 0; j < k; j++) { acc += x[r * k + j]; o[r * k + j] = acc; }
        }
    }
    """
    void em_ccumsum_f(const void *x, int64_t rows, int64_t k, void *o) nogil
    void em_ccumsum_d(const void *x, int64_t rows, int64_t k, void *o) nogil
    void em_clcse_f(const void *x, int64_t rows, int64_t k, void *o) nogil
    void em_clcse_d(const void *x, int64_t rows, int64_t k, void *o) nogil
    void em_cprod_f(const void *x, int64_t rows, int64_t k, void *o) nogil
    void em_cprod_d(const void *x, int64_t rows, int64_t k, void *o) nogil
    void em_ccumprod_f(const void *x, int64_t rows, int64_t k, void *o) nogil
    void em_ccumprod_d(const void *x, int64_t rows, int64_t k, void *o) nogil


cdef inline bint _foreign(TensorBase t) noexcept:
    """t is on a device whose backend runs these ops itself (the views, bits and
    compositions here serve the CPU and CUDA alike)"""
    return t._device.kind != DEV_CPU and t._device.kind != DEV_CUDA


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
    if t._mbits & MATH_CONJ:
        raise RuntimeError("view_as_real doesn't work on unresolved conjugated tensors.  To "
                           "resolve the conjugate tensor so you can view it as real, use "
                           "self.resolve_conj(); however, be warned that the resulting tensor "
                           "will NOT alias the original.")
    if slow_path() or _foreign(t):
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
    if slow_path() or _foreign(t):
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
    """The real (0) or imaginary (1) part of a complex tensor as a strided real view; the
    imaginary part of a conjugate view is a view with the negative bit, as in torch."""
    cdef int64_t st[MAX_DIMS]
    cdef int i
    for i in range(t._ndim):
        st[i] = t._strides[i] * 2
    cdef TensorBase r = _retyped(t, t._ndim, t._shape, st, t._offset * 2 + which,
                                 real_of(t._dtype))
    r._mbits = (t._mbits & MATH_NEG) ^ (MATH_NEG if which == 1 and t._mbits & MATH_CONJ
                                        else 0)
    return r


def real(input):
    """The real part: a view for a complex tensor, ``input`` itself for a real one."""
    cdef TensorBase t = _arg(input, "real")
    if not _is_c(t):
        return t
    if slow_path() or _foreign(t):
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
    if slow_path() or _foreign(t):
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
    check_same_device(re, im, "complex", "imag")
    if slow_path() or _foreign(re):
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
            r = _angle_real(x)
            if r is None:
                r = E.where(E.lt(x, 0), 3.141592653589793, E.mul(x, 0))
        if grad_on() and t._requires_grad:
            record("angle", (t,), r, None)
    if out is not None:
        return write_out(out, <TensorBase>r, OUT_CAST, (input,), "angle")
    return r


def _no_grad():
    from ember.autograd.grad_mode import no_grad
    return no_grad()


def _angle_real(x):
    from ember._C.elementwise import _angle_real as one_pass
    return one_pass(x)


# ---------------------------------------------------------------------------
# conjugation: a lazy bit on a view (torch's conjugate and negative bits).  The core
# copies honour the bits and every other kernel is handed resolved operands.

def conj(input):
    """The complex conjugate: an O(1) view of ``input``'s memory with the conjugate bit
    flipped (``input`` itself for a non-complex tensor). Kernels see the conjugated values;
    ``resolve_conj`` materialises them."""
    cdef TensorBase t = _arg(input, "conj")
    if not _is_c(t):
        return t
    if slow_path():
        return redispatch("conj", conj, (input,), None)
    if _foreign(t):
        return conj_physical(t)         # the bit is a CPU and CUDA feature: others copy
    cdef TensorBase r = make_view(t, t._ndim, t._shape, t._strides, t._offset)
    r._mbits = t._mbits ^ MATH_CONJ
    if grad_on() and t._requires_grad:
        record("conj", (t,), r, None)
    return r


cdef object _resolve(TensorBase t, int bit, str name, object fn):
    if not t._mbits & bit:
        return t
    if slow_path():
        return redispatch(name, fn, (t,), None)
    cdef TensorBase r = new_like(t, -1)
    r._mbits = t._mbits & ~bit
    copy_into(r, t)
    if grad_on() and t._requires_grad:
        record("clone", (t,), r, None)
    return r


def resolve_conj(input):
    """``input`` with its conjugate bit materialised: a new tensor holding the conjugated
    values when the bit is set, else ``input`` itself."""
    return _resolve(_arg(input, "resolve_conj"), MATH_CONJ, "resolve_conj", resolve_conj)


def resolve_neg(input):
    """``input`` with its negative bit materialised: a new tensor holding the negated
    values when the bit is set, else ``input`` itself."""
    return _resolve(_arg(input, "resolve_neg"), MATH_NEG, "resolve_neg", resolve_neg)


def is_conj(input) -> bool:
    """Whether ``input`` is a lazy conjugate view (its conjugate bit is set)."""
    return bool(_arg(input, "is_conj")._mbits & MATH_CONJ)


def is_neg(input) -> bool:
    """Whether ``input`` is a lazy negated view (its negative bit is set)."""
    return bool(_arg(input, "is_neg")._mbits & MATH_NEG)


def conj_physical(input, *, out=None):
    """The complex conjugate as a new tensor (``input`` itself for a real tensor)."""
    cdef TensorBase t = _arg(input, "conj_physical")
    if not _is_c(t):
        r = t
    else:
        if slow_path() or _foreign(t):
            return redispatch("conj_physical", conj_physical, (input,),
                              None if out is None else {"out": out})
        r = new_like(t, -1)
        (<TensorBase>r)._mbits = MATH_CONJ      # one pass: r stores what conj(t) reads
        copy_into(<TensorBase>r, t)
        (<TensorBase>r)._mbits = 0
        if grad_on() and t._requires_grad:
            record("conj_physical", (t,), r, None)
    if out is not None:
        return write_out(out, <TensorBase>r, OUT_EXACT, (input,), "conj_physical")
    return r


def conj_physical_(input):
    """Conjugate ``input`` in place (its stored values: whatever its bits, the values it
    reads become their conjugates)."""
    cdef TensorBase t = _arg(input, "conj_physical_")
    if not _is_c(t):
        return t
    if slow_path() or _foreign(t):
        return redispatch("conj_physical_", conj_physical_, (input,), None)
    if grad_on() and t._requires_grad:
        return commit_inplace(t, <TensorBase>conj_physical(graph_old(t, "conj_physical_")))
    check_inplace(t, "conj_physical_")
    apply_bits(t, MATH_CONJ)
    bump_version(t)
    return t


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
    if t._ndim == 0:
        # a 0-d tensor reduces over nothing (not over the (re, im) pair of its view)
        t, dims, keepdim = t.reshape(1), (0,), False
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
    if t._device.kind == DEV_CUDA:
        from ember.cuda import _complex_ops
        return _complex_ops.prod(t, dims, keepdim)
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
    """Complex matrix product from four real GEMMs on the (re, im) parts.  An operand
    with the conjugate bit (and nothing to record) is read as stored, its imaginary
    part's sign folded into how the four products combine."""
    E = _ember()
    cdef TensorBase x = <TensorBase>a, y = <TensorBase>b
    cdef bint ca = x._mbits == MATH_CONJ, cb = y._mbits == MATH_CONJ
    if ca or cb:
        if ca:
            x = make_view(x, x._ndim, x._shape, x._strides, x._offset)
            x._mbits = 0
        if cb:
            y = make_view(y, y._ndim, y._shape, y._strides, y._offset)
            y._mbits = 0
        ar, ai = _part(x, 0), _part(x, 1)
        br, bi = _part(y, 0), _part(y, 1)
        # (ar + sa i ai)(br + sb i bi) = ar br - sa sb ai bi + i (sb ar bi + sa ai br)
        p = E.matmul(ai, bi)
        re = E.add(E.matmul(ar, br), p) if ca != cb else E.sub(E.matmul(ar, br), p)
        q = E.matmul(ar, bi)
        s = E.matmul(ai, br)
        im = E.sub(s, q) if cb and not ca else E.sub(q, s) if ca and not cb else \
            E.add(q, s) if not ca else E.neg(E.add(q, s))
        return complex(re, im)
    ar, ai = real(a), imag(a)
    br, bi = real(b), imag(b)
    return complex(E.sub(E.matmul(ar, br), E.matmul(ai, bi)),
                   E.add(E.matmul(ar, bi), E.matmul(ai, br)))


# ---------------------------------------------------------------------------
# scans, variance, products with a scaled addend, convolution, ranges

def cum(str op, TensorBase t, dim, dtype, out):
    """cumsum / cumprod / logcumsumexp of a complex tensor (or of any tensor into a complex
    ``dtype``)."""
    E = _ember()
    if dtype is not None:
        t = t.to(dtype)
        if not _is_c(t):
            return getattr(E, op)(t, dim, out=out)
    if (dtype is None and op != "logcumsumexp" and isinstance(out, TensorBase)
            and not _is_c(<TensorBase>out)):
        # torch scans in out's dtype: the input is cast first (its warning included)
        return getattr(E, op)(t.to(out.dtype), dim, out=out)
    cdef int d = wrap_dim(dim, t._ndim if t._ndim else 1, op)
    if t._ndim == 0:
        r = getattr(E, op)(t.reshape(1), 0).reshape(())
    else:
        r = _scan(t, d, 0 if op == "cumsum" else 1 if op == "cumprod" else 2)
    if out is not None:
        return write_out(out, <TensorBase>r, OUT_CAST if op != "logcumsumexp" else OUT_EXACT,
                         (t,), op)
    return r


_SCANS = ("cumsum", "cumprod", "logcumsumexp")


cdef object _scan(TensorBase t, int d, int kind):
    """A running sum (kind 0), product (1) or log-sum-exp (2) along dim d, accumulated in
    double."""
    if t._device.kind != DEV_CPU:
        raise RuntimeError(f"{_SCANS[kind]}: complex {dtype_obj(t._dtype)} tensors on "
                           f"{t._device} have no kernel in ember; move them to the CPU")
    cdef TensorBase x = <TensorBase>(t.movedim(d, -1).contiguous())
    cdef TensorBase o = new_like(x, -1)
    cdef int64_t k = x._shape[x._ndim - 1]
    cdef int64_t rows = x.numel() // k if k else 0
    cdef char *xp = x._storage.data + x._offset * em_itemsize[x._dtype]
    cdef char *op_ = o._storage.data + o._offset * em_itemsize[o._dtype]
    cdef bint f = x._dtype == EM_C64
    with nogil:
        if kind == 0 and f:
            em_ccumsum_f(xp, rows, k, op_)
        elif kind == 0:
            em_ccumsum_d(xp, rows, k, op_)
        elif kind == 1 and f:
            em_ccumprod_f(xp, rows, k, op_)
        elif kind == 1:
            em_ccumprod_d(xp, rows, k, op_)
        elif f:
            em_clcse_f(xp, rows, k, op_)
        else:
            em_clcse_d(xp, rows, k, op_)
    r = o.movedim(-1, d)
    if grad_on() and t._requires_grad:
        record(_SCANS[kind], (t,), r, {"dim": d})
    return r


def var_like(str name, TensorBase t, dim, double correction, bint keepdim, bint want_std,
             bint want_mean):
    """var / std (real, as torch: the spread of |z - mean|) and var_mean / std_mean of a
    complex tensor: the variances of the real and imaginary parts add."""
    E = _ember()
    if t._ndim == 0:
        t = t.reshape(1)
        dims = (0,)
        keepdim = False
    elif dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        dims = tuple(range(t._ndim))
    else:
        dims = tuple(wrap_dim(d, t._ndim, name) for d in
                     (dim if isinstance(dim, (tuple, list)) else (dim,)))
    v = E.var(view_as_real(t), dims, correction=correction, keepdim=keepdim).sum(-1)
    r = E.sqrt(v) if want_std else v
    if want_mean:
        return r, E.mean(t, dims, keepdim=keepdim)
    return r


def logsumexp(TensorBase t, dim, bint keepdim):
    """log(sum(exp(z))) of complex ``z``, shifted by the largest real part of each slice."""
    E = _ember()
    dims = tuple(range(t._ndim)) if dim is None or (
        isinstance(dim, (tuple, list)) and len(dim) == 0) else dim
    with _no_grad():
        m = E.amax(_part(t, 0), dims, keepdim=True)
        m = E.where(E.isfinite(m), m, 0)
    r = E.add(E.log(E.sum(E.exp(E.sub(t, m)), dims, keepdim=True)), m)
    if not keepdim:
        for d in sorted((wrap_dim(d, t._ndim, "logsumexp") for d in
                         (dims if isinstance(dims, (tuple, list)) else (dims,))), reverse=True):
            r = r.squeeze(d)
    return r


def addprod(str op, TensorBase i, TensorBase a, TensorBase b, beta, alpha, out):
    """addmm / baddbmm / addmv of complex operands: beta * i + alpha * (a @ b); ``i`` is not
    read when beta is 0 (its NaNs do not propagate, as in torch)."""
    E = _ember()
    p = E.matmul(a, b)
    if alpha != 1:
        p = E.mul(p, alpha)
    r = p if beta == 0 else E.add(p, i if beta == 1 else E.mul(i, beta))
    if tuple(r.shape) != tuple(p.shape):
        raise RuntimeError(f"{op}: input of size {list(i.shape)} does not broadcast to the "
                           f"product's size {list(p.shape)}")
    if out is not None:
        return write_out(out, <TensorBase>r, OUT_EXACT, (i, a, b), op)
    return r


def linear(TensorBase x, TensorBase w, b):
    """``x @ w.T + b`` for complex operands."""
    E = _ember()
    r = E.matmul(x, w.t() if w._ndim == 2 else w)
    return r if b is None else E.add(r, b)


def conv(str op, x, w, b, args: tuple):
    """A convolution of complex input and weight from four real ones on the parts:
    (xr + i xi) * (wr + i wi) = (xr*wr - xi*wi) + i (xr*wi + xi*wr); the bias adds."""
    E = _ember()
    f = getattr(E.nn.functional, op)
    xr, xi = real(x).contiguous(), imag(x).contiguous()
    wr, wi = real(w).contiguous(), imag(w).contiguous()
    re = E.sub(f(xr, wr, None, *args), f(xi, wi, None, *args))
    im = E.add(f(xr, wi, None, *args), f(xi, wr, None, *args))
    r = complex(re, im)
    return r if b is None else E.add(r, b.reshape(-1, *([1] * (w.dim() - 2))))


def linspace(start, end, int64_t steps, int dt):
    """Evenly spaced complex values: the real and imaginary parts are two real ranges."""
    E = _ember()
    s, e = _complex_value(start), _complex_value(end)
    rd = dtype_obj(real_of(dt))
    return complex(E.linspace(s.real, e.real, steps, dtype=rd),
                   E.linspace(s.imag, e.imag, steps, dtype=rd))


def logspace(start, end, int64_t steps, base, int dt):
    """``base ** linspace(start, end)`` in complex arithmetic (double precision)."""
    E = _ember()
    x = linspace(start, end, steps, EM_C128)
    return E.pow(float(base), x).to(dtype_obj(dt))


_PyComplex = type(1j)     # the builtin: ``complex`` here is the tensor op


cdef object _complex_value(v):
    return _PyComplex(v.item() if isinstance(v, TensorBase) else v)
