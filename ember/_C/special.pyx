"""Special functions over the C kernels of src_c/special.c: the gamma family
(digamma, polygamma, incomplete gamma, zeta), the error-function family (erfinv,
erfcx, ndtr, ndtri, log_ndtr), Bessel and Airy functions, entropy and the
orthogonal polynomials.

Every op: argument checks -> (slow path: Python mode / plugin device) -> promotion
to a floating dtype (integers to the default dtype; float16/bfloat16 compute in
float32) -> broadcast -> one strided float32/float64 loop, threads over large
tensors -> out= and autograd record."""
from libc.stdint cimport int64_t

from ember._C.core cimport *
from ember._C.frame cimport torch_type_name, off_fast

cdef extern from "ember_special.h" nogil:
    enum:
        EM_SP_DIGAMMA, EM_SP_POLYGAMMA, EM_SP_ERFINV, EM_SP_ERFCX, EM_SP_NDTR
        EM_SP_NDTRI, EM_SP_LOG_NDTR, EM_SP_I0, EM_SP_I0E, EM_SP_I1, EM_SP_I1E, EM_SP_MI0
        EM_SP_MI1, EM_SP_K0, EM_SP_K1, EM_SP_K0E, EM_SP_K1E, EM_SP_J0, EM_SP_J1, EM_SP_Y0
        EM_SP_Y1, EM_SP_SPH_J0, EM_SP_AIRY_AI, EM_SP_ENTR
        EM_SP_ZETA, EM_SP_IGAMMA, EM_SP_IGAMMAC, EM_SP_XLOG1PY, EM_SP_CHEB_T, EM_SP_CHEB_U
        EM_SP_CHEB_V, EM_SP_CHEB_W, EM_SP_SCHEB_T, EM_SP_SCHEB_U, EM_SP_SCHEB_V
        EM_SP_SCHEB_W, EM_SP_HERM_H, EM_SP_HERM_HE, EM_SP_LAGUERRE, EM_SP_LEGENDRE
    em_loop em_special_unary(int op, int dtype)
    em_loop em_special_binary(int op, int dtype)

# each element costs tens to hundreds of flops: threads pay off on smaller tensors
# than for simple arithmetic
cdef int64_t WORK_PER_ELEMENT = 32
cdef dict _PUBLIC = {}


cdef int _float_dtype(int d) noexcept:
    """The result dtype of a special function of an input of dtype d."""
    return default_dtype() if category(d) < 2 else d


cdef int _compute(int d) noexcept:
    return EM_F32 if d == EM_F16 or d == EM_BF16 else d


cdef int _run(em_loop fn, list ops, TensorBase r, const void *aux) except -1:
    cdef NdIter it
    iter_init(&it, ops, r._ndim, r._shape)
    if it.numel == 0:
        return 0
    with nogil:
        em_run_nd(fn, it.nargs, it.ptrs, it.ndim, it.shape, it.strides, aux,
                  nthreads_for(it.numel * WORK_PER_ELEMENT))
    return 0


cdef object _unary(int op, str name, object a, object out, const void *aux=NULL,
                   tuple args=None, bint differentiable=True, object attrs=None):
    """out = op(a) elementwise.  ``args`` are the public call's positional arguments
    (for re-dispatch); non-differentiable ops return a result that does not require
    grad, as PyTorch's do."""
    cdef TensorBase t, x, r
    cdef int rd, cd
    if not isinstance(a, TensorBase):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(a).__name__}")
    if out is not None and not isinstance(out, TensorBase):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    t = <TensorBase>a
    if slow_path() or off_fast(t):
        return redispatch(name, _PUBLIC[name], args if args is not None else (a,),
                          {} if out is None else {"out": out})
    rd = _float_dtype(t._dtype)
    cd = _compute(rd)
    fn = em_special_unary(op, cd)
    if fn == NULL:
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{torch_type_name(rd)}'")
    x = cast(t, cd)
    r = new_tensor(t._ndim, t._shape, cd, t._device)
    _run(fn, [r, x], r, aux)
    if rd != cd:
        r = cast(r, rd)
    if differentiable and grad_on() and t._requires_grad:
        if out is not None:
            raise RuntimeError(f"{name}(): functions with out=... arguments don't support "
                               f"automatic differentiation, but one of the arguments "
                               f"requires grad.")
        record(name, (a,), r, attrs)
    return write_out(out, r, OUT_CAST, a, name)


cdef object _binary(int op, str name, object a, object b, object out,
                    bint differentiable=True):
    """out = op(a, b) elementwise with broadcasting; a or b may be a Python number."""
    cdef bint ta = isinstance(a, TensorBase), tb = isinstance(b, TensorBase)
    cdef TensorBase x, y, r
    cdef int64_t shape[MAX_DIMS]
    cdef int rd, cd, nd
    if not ta and not tb:
        raise TypeError(f"{name}(): expected at least one tensor argument, got "
                        f"{type(a).__name__} and {type(b).__name__}")
    for v, argname in ((a, "input"), (b, "other")):
        if not isinstance(v, TensorBase) and scalar_category(v) < 0:
            raise TypeError(f"{name}(): argument '{argname}' must be Tensor or Number, not "
                            f"{type(v).__name__}")
    if out is not None and not isinstance(out, TensorBase):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if slow_path() or (ta and off_fast(<TensorBase>a)) or (tb and off_fast(<TensorBase>b)):
        if ta and tb:
            check_same_device(<TensorBase>a, <TensorBase>b, name, "other")
        return redispatch(name, _PUBLIC[name], (a, b), {} if out is None else {"out": out})
    if ta and tb:
        check_same_device(<TensorBase>a, <TensorBase>b, name, "other")
    rd = _float_dtype(result_type2(a, b))
    cd = _compute(rd)
    fn = em_special_binary(op, cd)
    if fn == NULL:
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{torch_type_name(rd)}'")
    x = cast(<TensorBase>a, cd) if ta else wrap_scalar(a, cd)
    y = cast(<TensorBase>b, cd) if tb else wrap_scalar(b, cd)
    nd = broadcast_shape(x._ndim, x._shape, y._ndim, y._shape, shape)
    r = new_tensor(nd, shape, cd, x._device if ta else y._device)
    _run(fn, [r, x, y], r, NULL)
    if rd != cd:
        r = cast(r, rd)
    if differentiable and grad_on() and ((ta and (<TensorBase>a)._requires_grad) or
                                         (tb and (<TensorBase>b)._requires_grad)):
        if out is not None:
            raise RuntimeError(f"{name}(): functions with out=... arguments don't support "
                               f"automatic differentiation, but one of the arguments "
                               f"requires grad.")
        record(name, (a, b), r, None)
    return write_out(out, r, OUT_CAST, (a, b), name)


# ---------------------------------------------------------------------------
# unary functions: (name, kernel, differentiable); the functions are generated below

cdef dict _UNARY = {
    "digamma": (EM_SP_DIGAMMA, True), "erfinv": (EM_SP_ERFINV, True),
    "erfcx": (EM_SP_ERFCX, True), "ndtr": (EM_SP_NDTR, True), "ndtri": (EM_SP_NDTRI, True),
    "log_ndtr": (EM_SP_LOG_NDTR, True), "i0": (EM_SP_I0, True), "i0e": (EM_SP_I0E, True),
    "i1": (EM_SP_I1, True), "i1e": (EM_SP_I1E, True), "entr": (EM_SP_ENTR, True),
    "modified_bessel_i0": (EM_SP_MI0, False), "modified_bessel_i1": (EM_SP_MI1, False),
    "modified_bessel_k0": (EM_SP_K0, False), "modified_bessel_k1": (EM_SP_K1, False),
    "scaled_modified_bessel_k0": (EM_SP_K0E, False),
    "scaled_modified_bessel_k1": (EM_SP_K1E, False),
    "bessel_j0": (EM_SP_J0, False), "bessel_j1": (EM_SP_J1, False),
    "bessel_y0": (EM_SP_Y0, False), "bessel_y1": (EM_SP_Y1, False),
    "spherical_bessel_j0": (EM_SP_SPH_J0, False), "airy_ai": (EM_SP_AIRY_AI, False),
}

cdef dict _DOCS = {
    "digamma": "The logarithmic derivative of the gamma function, psi(x).",
    "erfinv": "The inverse error function (erfinv(+-1) = +-inf, NaN outside [-1, 1]).",
    "erfcx": "The scaled complementary error function exp(x**2) * erfc(x).",
    "ndtr": "The standard normal cumulative distribution function.",
    "ndtri": "The inverse of ndtr: the standard normal quantile function.",
    "log_ndtr": "log(ndtr(x)), accurate in both tails.",
    "i0": "The modified Bessel function of the first kind of order 0.",
    "i0e": "The exponentially scaled modified Bessel function exp(-|x|) * i0(x).",
    "i1": "The modified Bessel function of the first kind of order 1.",
    "i1e": "The exponentially scaled modified Bessel function exp(-|x|) * i1(x).",
    "entr": "The elementwise entropy -x * log(x) (0 at 0, -inf for x < 0).",
    "modified_bessel_i0": "The modified Bessel function of the first kind of order 0.",
    "modified_bessel_i1": "The modified Bessel function of the first kind of order 1.",
    "modified_bessel_k0": "The modified Bessel function of the second kind of order 0.",
    "modified_bessel_k1": "The modified Bessel function of the second kind of order 1.",
    "scaled_modified_bessel_k0": "exp(x) * modified_bessel_k0(x).",
    "scaled_modified_bessel_k1": "exp(x) * modified_bessel_k1(x).",
    "bessel_j0": "The Bessel function of the first kind of order 0.",
    "bessel_j1": "The Bessel function of the first kind of order 1.",
    "bessel_y0": "The Bessel function of the second kind of order 0.",
    "bessel_y1": "The Bessel function of the second kind of order 1.",
    "spherical_bessel_j0": "The spherical Bessel function of the first kind of order 0.",
    "airy_ai": "The Airy function Ai(x).",
}


def _make_unary(str name):
    op, diff = _UNARY[name]

    def f(input, *, out=None):
        return _unary(op, name, input, out, NULL, None, diff)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = (f"{_DOCS[name]}\n\nParameters\n----------\ninput : Tensor\n"
                 f"out : Tensor, optional\n\nReturns\n-------\nTensor\n"
                 f"    A floating tensor (integer inputs give the default dtype).")
    return f


_g = globals()
for _name in _UNARY:
    _g[_name] = _PUBLIC[_name] = _make_unary(_name)


def polygamma(n, input, *, out=None):
    """The n-th derivative of the digamma function (n >= 0).

    Parameters
    ----------
    n : int
        The order of the derivative.
    input : Tensor
    out : Tensor, optional

    Returns
    -------
    Tensor
    """
    cdef int64_t order
    if isinstance(n, bool) or not (isinstance(n, int) or hasattr(n, "__index__")):
        raise TypeError(f"polygamma(): argument 'n' (position 1) must be int, not "
                        f"{type(n).__name__}")
    order = n.__index__()
    if order < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return _unary(EM_SP_POLYGAMMA, "polygamma", input, out, &order, (n, input), True,
                  (order,))


_PUBLIC["polygamma"] = polygamma


# ---------------------------------------------------------------------------
# binary functions

cdef dict _BINARY = {
    "zeta": (EM_SP_ZETA, True, "The Hurwitz zeta function zeta(x, q)."),
    "igamma": (EM_SP_IGAMMA, True,
               "The regularized lower incomplete gamma function P(input, other)."),
    "igammac": (EM_SP_IGAMMAC, True,
                "The regularized upper incomplete gamma function Q(input, other)."),
    "xlog1py": (EM_SP_XLOG1PY, True,
                "input * log1p(other), 0 where input == 0 (unless other is NaN)."),
    "chebyshev_polynomial_t": (EM_SP_CHEB_T, False,
                               "The Chebyshev polynomial of the first kind T_n(input)."),
    "chebyshev_polynomial_u": (EM_SP_CHEB_U, False,
                               "The Chebyshev polynomial of the second kind U_n(input)."),
    "chebyshev_polynomial_v": (EM_SP_CHEB_V, False,
                               "The Chebyshev polynomial of the third kind V_n(input)."),
    "chebyshev_polynomial_w": (EM_SP_CHEB_W, False,
                               "The Chebyshev polynomial of the fourth kind W_n(input)."),
    "shifted_chebyshev_polynomial_t": (EM_SP_SCHEB_T, False,
                                       "The shifted Chebyshev polynomial T*_n(input)."),
    "shifted_chebyshev_polynomial_u": (EM_SP_SCHEB_U, False,
                                       "The shifted Chebyshev polynomial U*_n(input)."),
    "shifted_chebyshev_polynomial_v": (EM_SP_SCHEB_V, False,
                                       "The shifted Chebyshev polynomial V*_n(input)."),
    "shifted_chebyshev_polynomial_w": (EM_SP_SCHEB_W, False,
                                       "The shifted Chebyshev polynomial W*_n(input)."),
    "hermite_polynomial_h": (EM_SP_HERM_H, False,
                             "The physicists' Hermite polynomial H_n(input)."),
    "hermite_polynomial_he": (EM_SP_HERM_HE, False,
                              "The probabilists' Hermite polynomial He_n(input)."),
    "laguerre_polynomial_l": (EM_SP_LAGUERRE, False, "The Laguerre polynomial L_n(input)."),
    "legendre_polynomial_p": (EM_SP_LEGENDRE, False, "The Legendre polynomial P_n(input)."),
}


def _make_binary(str name):
    op, diff, doc = _BINARY[name]
    second = "n" if "polynomial" in name else "other"

    def f(input, other, *, out=None):
        return _binary(op, name, input, other, out, diff)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = (f"{doc}\n\nParameters\n----------\ninput : Tensor or Number\n"
                 f"{second} : Tensor or Number\n    Broadcast against ``input``.\n"
                 f"out : Tensor, optional\n\nReturns\n-------\nTensor\n")
    return f


for _name in _BINARY:
    _g[_name] = _PUBLIC[_name] = _make_binary(_name)
