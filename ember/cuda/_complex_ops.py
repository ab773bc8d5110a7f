"""complex64 / complex128 on CUDA: copies and casts that involve a complex dtype or a
lazy conjugate / negative bit, the complex elementwise kernels, sum / mean / prod, and
the complex matrix products.

The views (``view_as_real``, ``real``, ``conj``, ...) and the compositions of
``ember/_C/cplx.pyx`` (``complex``, ``polar``, ``angle``, the four-GEMM product) are
device-agnostic and run here as on the CPU; this module supplies the kernels they and
the dispatcher need.  Autograd records the CPU's names, so the formula table computes
complex gradients on the device too.  A complex op without a kernel here raises the
RuntimeError that names the op and the dtype.
"""

from __future__ import annotations

import ctypes
from typing import Any

import ember
from ember.cuda import _dispatch as D
from ember.cuda import _kernels as K
from ember.cuda._device_ops import _same_dtype

_COMPLEX = (ember.complex64, ember.complex128)
_CONJ, _NEG = 1, 2

# unary ops with a complex kernel (ember_complex.h's em_cun_ok), by their EW code name
_CUN = {"neg", "abs", "sgn", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p",
        "sqrt", "rsqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh", "sigmoid",
        "reciprocal", "square", "asin", "acos", "atan", "asinh", "acosh", "atanh"}
_CBIN = {"add": "ADD", "sub": "SUB", "mul": "MUL", "div": "DIV", "pow": "POW"}
_CCMP = {"eq", "ne", "logical_and", "logical_or", "logical_xor"}


def _is_c(x: Any) -> bool:
    return isinstance(x, ember.Tensor) and x.dtype in _COMPLEX


def bits(t: Any) -> int:
    """t's lazy math bits: 1 conjugate, 2 negative."""
    return (_CONJ if t.is_conj() else 0) | (_NEG if t.is_neg() else 0)


# ---------------------------------------------------------------------------
# copies (called by ember.cuda._dispatch.copy_into)

def needs_copy_math(dst: Any, src: Any) -> bool:
    """The copy involves a math bit, or a cast to or from a complex dtype."""
    if bits(dst) or bits(src):
        return True
    return dst.dtype != src.dtype and (dst.dtype in _COMPLEX or src.dtype in _COMPLEX)


def _copy_math(dst: Any, db: int, src: Any, sb: int) -> None:
    """Same-device copy: dst stores what reads through its bits ``db`` as src's
    value through ``sb``."""
    shape = tuple(dst.shape)
    with K.on_device(dst.device.index):
        K.check(D._lib().emc_copy_math(dst.dtype.code, D._ptr(dst), db, src.dtype.code,
                                       D._ptr(src), sb, D._nd(shape, dst, src),
                                       D._stream(dst)), "copy_")


def copy_into(dst: Any, src: Any, non_blocking: bool = False) -> None:
    """dst[...] = src where a complex cast or a lazy bit is involved and either tensor
    is on a CUDA device.  Bits are applied on the device; across devices (or with the
    host) only plain values travel."""
    shape = tuple(dst.shape)
    db, sb = bits(dst), bits(src)
    if dst.is_cuda and src.is_cuda and dst.device == src.device:
        return _copy_math(dst, db, src, sb)
    if src.is_cuda and (sb or src.dtype != dst.dtype):
        # resolve and cast on the source device first
        tmp = ember.empty(shape, dtype=dst.dtype, device=src.device)
        _copy_math(tmp, 0, src, sb)
        src, sb = tmp, 0
    if not src.is_cuda and sb:
        src = src.detach().resolve_conj().resolve_neg()
    if db:
        tmp = ember.empty(shape, dtype=dst.dtype, device=dst.device)
        D.copy_into(tmp, src, non_blocking)
        if dst.is_cuda:
            return _copy_math(dst, db, tmp, 0)
        with ember.no_grad():
            dst.copy_(tmp)               # the CPU applies dst's bits
        return None
    D.copy_into(dst, src, non_blocking)
    return None


def apply_bits(t: Any, b: int) -> None:
    """Conjugate (1) and / or negate (2) a CUDA tensor's stored values in place; a dim of
    stride 0 is visited once (its elements share memory)."""
    keep = [d for d in range(t.dim()) if t.shape[d] != 1 and t.stride(d) != 0]
    shape = tuple(t.shape[d] for d in keep)
    st = tuple(t.stride(d) for d in keep)
    if not D._numel(shape):
        return
    nd = ctypes.byref(K.make_nd(shape, st, st))
    with K.on_device(t.device.index):
        K.check(D._lib().emc_copy_math(t.dtype.code, D._ptr(t), b, t.dtype.code, D._ptr(t), 0,
                                       nd, D._stream(t)), "conj_physical_")


# ---------------------------------------------------------------------------
# elementwise (called by ember.cuda._dispatch._binary / _unary)

def _cx_error(name: str, dt: Any) -> RuntimeError:
    return RuntimeError(f"\"{name}_cuda\" not implemented for '{D._TORCH_NAMES[dt]}' (ember "
                        f"has no complex CUDA kernel for {name}; move the tensors to the CPU)")


def is_complex_binary(a: Any, b: Any) -> bool:
    return _is_c(a) or _is_c(b) or (isinstance(a, ember.Tensor) and isinstance(b, complex)) \
        or (isinstance(b, ember.Tensor) and isinstance(a, complex))


def binary(name: str, a: Any, b: Any, out: Any = None, alpha: float | None = None) -> Any:
    """A binary op with a complex operand."""
    like = a if isinstance(a, ember.Tensor) else b
    rd = ember.result_type(a, b)
    cmp = name in _CCMP
    if not cmp and name not in _CBIN:
        raise _cx_error(name, rd)
    x, y = D._operand(a, rd, like), D._operand(b, rd, like)
    shape = ember.broadcast_shapes(tuple(x.shape), tuple(y.shape))
    r = D._empty(shape, ember.bool if cmp else rd, like)
    if r.numel():
        lib = D._lib()
        if cmp:
            rc = lib.emc_cew_compare(K.EW_CMP[D._COMPARE[name]], rd.code, D._ptr(r), D._ptr(x),
                                     D._ptr(y), D._nd(shape, r, x, y), D._stream(r))
        else:
            code, aux = _CBIN[name], None
            if alpha is not None:
                code, aux = "ADDA", (ctypes.c_double * 1)(alpha)
            rc = lib.emc_cew_binary(K.EW_BIN[code], rd.code, D._ptr(r), D._ptr(x), D._ptr(y),
                                    D._nd(shape, r, x, y), aux, D._stream(r))
        if rc == 10001:
            raise _cx_error(name, rd)
        K.check(rc, name)
    if out is not None:
        return D._write_out(out, r, name)
    if not cmp:
        D._record(name, (a, b), r)
    return r


def unary(name: str, code: str, x: Any, out: Any = None) -> Any:
    """A unary op (or predicate) of a complex tensor."""
    pred = name in D._PRED
    if name == "sign":
        raise RuntimeError("Unlike NumPy, torch.sign is not intended to support complex "
                           "numbers. Please use torch.sgn instead.")
    if not pred and name not in _CUN:
        raise _cx_error(name, x.dtype)
    xx = x.detach()
    shape = tuple(x.shape)
    odt = ember.bool if pred else (x.dtype.to_real() if name == "abs" else x.dtype)
    r = D._empty(shape, odt, x)
    if r.numel():
        lib = D._lib()
        if pred:
            rc = lib.emc_cew_predicate(K.EW_PRED[code], x.dtype.code, D._ptr(r), D._ptr(xx),
                                       D._nd(shape, r, xx), D._stream(r))
        else:
            rc = lib.emc_cew_unary(K.EW_UN[code], x.dtype.code, D._ptr(r), D._ptr(xx),
                                   D._nd(shape, r, xx), D._stream(r))
        if rc == 10001:
            raise _cx_error(name, x.dtype)
        K.check(rc, name)
    if out is not None:
        return D._write_out(out, r, name)
    if not pred:
        D._record(name, (x,), r, None)
    return r


# ---------------------------------------------------------------------------
# reductions and products: wrappers around the real kernels for complex operands

def prod(t: Any, dims: tuple, keepdim: bool) -> Any:
    """The product over ``dims`` (sorted, non-empty) of a complex CUDA tensor with at
    least one dim: the CPU's serial order with a double accumulator; records the CPU's
    ``cprod`` (called by cplx.reduce)."""
    keep = [d for d in range(t.dim()) if d not in dims]
    x = t.detach().permute(*(keep + list(dims))).contiguous()
    rows = D._numel(tuple(t.shape[d] for d in keep))
    k = D._numel(tuple(t.shape[d] for d in dims))
    o = D._empty((rows,), t.dtype, t)
    if rows:
        K.check(D._lib().emc_cprod(t.dtype.code, D._ptr(x), rows, k, 1, D._ptr(o),
                                   D._stream(o)), "prod")
    shape = [1 if d in dims else t.shape[d] for d in range(t.dim())] if keepdim else \
        [t.shape[d] for d in keep]
    r = o.view(tuple(shape))
    D._record("cprod", (t,), r, {"dims": dims, "keepdim": bool(keepdim)})
    return r


def _reduction(name: str, prev: Any) -> Any:
    """sum / mean / prod: complex input (or a complex dtype=) takes cplx.reduce, whose
    sum and mean reduce the real view and whose product calls :func:`prod`."""
    def run(input, dim=None, keepdim=False, *, dtype=None, out=None):
        if not (_is_c(input) or dtype in _COMPLEX):
            return prev(input, dim, keepdim, dtype=dtype, out=out)
        from ember._C import cplx
        r = cplx.reduce(name, input, dim, keepdim, dtype, None)
        return r if out is None else D._write_out(out, r, name)
    return run


def _var(name: str, prev: Any) -> Any:
    """var / std (/ _mean) of complex input: the variances of the parts add (cplx)."""
    def run(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
        if not _is_c(input):
            return prev(input, dim, unbiased, keepdim, correction=correction, out=out)
        from ember._C import cplx
        if isinstance(dim, bool):
            unbiased, dim = dim, None
        if correction is not None and unbiased is not None:
            raise RuntimeError(f"{name}: can't specify both the unbiased and correction "
                               f"arguments")
        corr = float(correction) if correction is not None else \
            (0.0 if unbiased is False else 1.0)
        r = cplx.var_like(name, input, dim, corr, keepdim, name.startswith("std"),
                          name.endswith("_mean"))
        return r if out is None else D._write_out(out, r, name)
    return run


def _logsumexp(prev: Any) -> Any:
    def run(input, dim=None, keepdim=False, *, out=None):
        if not _is_c(input):
            return prev(input, dim, keepdim, out=out)
        from ember._C import cplx
        r = cplx.logsumexp(input, dim, keepdim)
        return r if out is None else D._write_out(out, r, "logsumexp")
    return run


def _linear(prev: Any) -> Any:
    def run(input, weight, bias=None):
        if not (_is_c(input) or _is_c(weight) or _is_c(bias)):
            return prev(input, weight, bias)
        from ember._C import cplx
        return cplx.linear(input, weight, bias)
    return run


def _addprod(name: str, prev: Any) -> Any:
    """addmm / baddbmm / addmv of complex operands: beta * input + alpha * (a @ b)."""
    def run(input, a, b, *, beta=1, alpha=1, out=None):
        if not (_is_c(input) or _is_c(a) or _is_c(b)):
            return prev(input, a, b, beta=beta, alpha=alpha, out=out)
        from ember._C import cplx
        r = cplx.addprod(name, input, a, b, beta, alpha, None)
        return r if out is None else D._write_out(out, r, name)
    return run


def _resolved(t: Any) -> Any:
    return t.resolve_neg().resolve_conj() if bits(t) else t


def _product(name: str, prev: Any) -> Any:
    """mm / bmm / matmul: complex operands take cplx.matmul (four real GEMMs; a lazy
    conjugate bit folded into how they combine when nothing is recorded), others the
    real kernel on resolved operands."""
    def run(input, other, *, out=None):
        cx = _is_c(input) or _is_c(other)
        if not cx:
            return prev(_resolved(input), _resolved(other), out=out)
        from ember._C import cplx
        a, b = input, other
        _same_dtype(a, b)
        if D._grad_on(a, b) or (bits(a) | bits(b)) & _NEG:
            a, b = _resolved(a), _resolved(b)
        if name == "mm" and (a.dim() != 2 or b.dim() != 2):
            raise RuntimeError(f"{'self' if a.dim() != 2 else 'mat2'} must be a matrix")
        if name == "bmm":
            if a.dim() != 3 or b.dim() != 3:
                raise RuntimeError("batch1 must be a 3D tensor" if a.dim() != 3 else
                                   "batch2 must be a 3D tensor")
            if a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
                raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor "
                                   f"to be: [{a.shape[0]}, {a.shape[2]}] but got: "
                                   f"[{b.shape[0]}, {b.shape[1]}].")
        if a.dim() == 0 or b.dim() == 0:
            raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they "
                               f"are {a.dim()}D and {b.dim()}D")
        r = cplx.matmul(a, b)
        return r if out is None else D._write_out(out, r, name)
    return run


def install() -> None:
    """Wrap the registered real kernels with their complex paths (called by
    ember.cuda._dispatch once every kernel module has registered)."""
    for n in ("sum", "mean", "prod"):
        D._KERNELS[n] = _reduction(n, D._KERNELS[n])
    for n in ("mm", "bmm", "matmul"):
        D._KERNELS[n] = _product(n, D._KERNELS[n])
    for n in ("var", "std", "var_mean", "std_mean"):
        D._KERNELS[n] = _var(n, D._KERNELS[n])
    D._KERNELS["logsumexp"] = _logsumexp(D._KERNELS["logsumexp"])
    D._KERNELS["linear"] = _linear(D._KERNELS["linear"])
    for n in ("addmm", "baddbmm", "addmv"):          # where the real kernels exist
        if n in D._KERNELS:
            D._KERNELS[n] = _addprod(n, D._KERNELS[n])
    # ops that read lazy bits themselves (the dispatcher hands them unresolved operands)
    D.bits_native("clone", "mm", "bmm", "matmul")
