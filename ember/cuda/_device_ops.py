"""CUDA kernels of the non-elementwise ops: reductions, GEMM (mm/bmm/matmul/linear),
softmax, indexing (index_select/index_add/gather/scatter_add, basic getitem), cat,
random numbers and the factories.  Registered into the CUDA key by
``ember.cuda._dispatch``; each records the CPU path's autograd node."""

from __future__ import annotations

import ctypes
from typing import Any

import ember
from ember.cuda import _kernels as K
from ember.cuda._dispatch import (
    _FLOATS,
    _TORCH_NAMES,
    _binary,
    _empty,
    _inplace,
    _lib,
    _not_implemented,
    _numel,
    _ptr,
    _record,
    _stream,
    _write_out,
    kernel,
)
from ember.cuda._dispatch import _where as _where_kernel

_I64 = ember.int64


def _wrap(d: int, n: int, name: str) -> int:
    if isinstance(d, bool) or not isinstance(d, int):
        d = d.__index__()
    lo, hi = (-1, 0) if n == 0 else (-n, n - 1)
    if not lo <= d <= hi:
        raise IndexError(f"{name}(): Dimension out of range (expected to be in range of "
                         f"[{lo}, {hi}], but got {d})")
    return d + n if d < 0 else d if n else 0


def _dims(dim: Any, n: int, name: str) -> tuple:
    """The reduced dims, sorted (None or () means all)."""
    if dim is None:
        return tuple(range(n))
    if isinstance(dim, (list, tuple)):
        if len(dim) == 0:
            return tuple(range(n))
        ds = sorted({_wrap(d, n, name) for d in dim})
        if len(ds) != len(dim):
            raise RuntimeError(f"{name}(): dim appears multiple times in the list of dims")
        return tuple(ds)
    return (_wrap(dim, n, name),) if n else ()


def _okI(x: Any, red: tuple) -> tuple:
    """x (detached) as a contiguous [O, K, I] with the reduced dims as K, and the
    shapes of the result without and with keepdim."""
    shape = tuple(x.shape)
    n = len(shape)
    kept = [d for d in range(n) if d not in red]
    keep_shape = tuple(1 if d in red else shape[d] for d in range(n))
    out_shape = tuple(shape[d] for d in kept)
    x = x.detach()
    if red and list(red) == list(range(red[0], red[-1] + 1)) and x.is_contiguous():
        O = _numel(shape[:red[0]])
        Kn = _numel(shape[red[0]:red[-1] + 1])
        In = _numel(shape[red[-1] + 1:])
    else:
        x = x.permute(*(kept + list(red))).contiguous()
        O, Kn, In = _numel(out_shape), _numel(tuple(shape[d] for d in red)), 1
    return x, O, Kn, In, out_shape, keep_shape


_INTS = (ember.bool, ember.uint8, ember.int8, ember.int16, ember.int32)


def _reduce(name: str, op: str, input: Any, dim: Any, keepdim: bool, dtype: Any,
            scale_mean: bool = False) -> Any:
    red = _dims(dim, input.dim(), name)
    rdt = dtype if dtype is not None else (_I64 if input.dtype in _INTS + (_I64,) and
                                           op == "SUM" else input.dtype)
    if scale_mean and not rdt.is_floating_point:
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either "
                           f"a floating point or complex dtype. Got: {_TORCH_NAMES[rdt]}")
    cdt = _I64 if rdt in _INTS else rdt          # the kernels' integer type is int64
    x = input.detach()
    x = x if x.dtype == cdt else x._cast(cdt.code)
    x, O, Kn, In, out_shape, keep_shape = _okI(x, red)
    r = _empty((O * In,), cdt, input)
    if O * In:
        if Kn == 0:
            if op in ("MAX", "MIN", "AMAX"):
                raise RuntimeError(f"{name}(): Expected reduction dim to be specified for "
                                   f"input.numel() == 0. Specify the reduction dim with the "
                                   f"'dim' argument.")
            r.fill_(float("nan") if scale_mean else 0)
        else:
            scale = 1.0 / Kn if scale_mean else 1.0
            rc = _lib().emc_reduce(K.RD[op], cdt.code, _ptr(x), O, Kn, In, _ptr(r),
                                   ctypes.c_double(scale), _stream(r))
            if rc == 10001:
                raise _not_implemented(name, cdt)
            K.check(rc, name)
    r = r.view(keep_shape if keepdim else out_shape)
    if cdt != rdt:
        r = r._cast(rdt.code)
    return r, red


def _sum_like(name: str, op: str, mean: bool = False):
    def run(input, dim=None, keepdim=False, *, dtype=None, out=None):
        r, red = _reduce(name, op, input, dim, keepdim, dtype, mean)
        if out is not None:
            return _write_out(out, r, name)
        _record(name, (input,), r, {"dim": red, "keepdim": bool(keepdim)})
        return r
    return run


kernel("sum")(_sum_like("sum", "SUM"))
kernel("mean")(_sum_like("mean", "SUM", True))
kernel("prod")(_sum_like("prod", "PROD"))


def _amax_like(name: str, op: str):
    def run(input, dim=(), keepdim=False, *, out=None):
        r, red = _reduce(name, op, input, dim, keepdim, None)
        if out is not None:
            return _write_out(out, r, name)
        _record(name, (input,), r, {"dim": red, "keepdim": bool(keepdim)})
        return r
    return run


kernel("amax")(_amax_like("amax", "MAX"))
kernel("amin")(_amax_like("amin", "MIN"))


def _var_like(name: str, want_std: bool, want_mean: bool):
    def run(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
        if isinstance(dim, bool):
            unbiased, dim = dim, None
        if correction is not None and unbiased is not None:
            raise RuntimeError(f"{name}: can't specify both the unbiased and correction "
                               f"arguments")
        corr = float(correction) if correction is not None else \
            (0.0 if unbiased is False else 1.0)
        if input.dtype not in _FLOATS:
            raise RuntimeError("std and var only support floating point and complex dtypes")
        red = _dims(dim, input.dim(), name)
        x, O, Kn, In, out_shape, keep_shape = _okI(input.detach(), red)
        if Kn - corr <= 0:
            import warnings
            warnings.warn(f"{name}(): degrees of freedom is <= 0. Correction should be strictly "
                          f"less than the reduction factor (input numel divided by output "
                          f"numel).", UserWarning, stacklevel=3)
        v = _empty((O * In,), x.dtype, input)
        m = _empty((O * In,), x.dtype, input) if want_mean else None
        if O * In:
            if Kn == 0:
                v.fill_(float("nan"))
                if m is not None:
                    m.fill_(float("nan"))
            else:
                K.check(_lib().emc_var(x.dtype.code, _ptr(x), O, Kn, In, ctypes.c_double(corr),
                                       _ptr(v), _ptr(m) if m is not None else None,
                                       _stream(v)), name)
        shape = keep_shape if keepdim else out_shape
        v = v.view(shape)
        if want_std:
            with ember.no_grad():
                v = ember.sqrt(v)
        res = (v, m.view(shape)) if want_mean else v
        _record(name, (input,), res, {"dim": red, "keepdim": bool(keepdim), "correction": corr})
        return res if out is None else _write_out(out, res, name)
    return run


kernel("var")(_var_like("var", False, False))
kernel("std")(_var_like("std", True, False))
kernel("var_mean")(_var_like("var_mean", False, True))
kernel("std_mean")(_var_like("std_mean", True, True))


@kernel("vector_norm")
def _vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """``linalg.vector_norm`` from the elementwise and reduction kernels."""
    if isinstance(ord, (str, bool)):
        raise TypeError(f"linalg.vector_norm(): argument 'ord' must be Number, not "
                        f"{type(ord).__name__}")
    p = float(ord)
    rdt = x.dtype if dtype is None else dtype
    if rdt not in _FLOATS:
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {_TORCH_NAMES[rdt]}")
    dims = None if dim is None else dim
    with ember.no_grad():
        a = ember.abs(x.detach().to(rdt))
        if p == float("inf"):
            r = _reduce("vector_norm", "MAX", a, dims, keepdim, None)[0]
        elif p == float("-inf"):
            r = _reduce("vector_norm", "MIN", a, dims, keepdim, None)[0]
        elif p == 0:
            r = _reduce("vector_norm", "SUM", _binary("ne", a, 0).to(rdt), dims, keepdim,
                        None)[0]
        elif p == 1:
            r = _reduce("vector_norm", "SUM", a, dims, keepdim, None)[0]
        elif p == 2:
            r = ember.sqrt(_reduce("vector_norm", "SUM", _binary("mul", a, a), dims, keepdim,
                                   None)[0])
        else:
            r = _binary("pow", _reduce("vector_norm", "SUM", _binary("pow", a, p), dims,
                                       keepdim, None)[0], 1.0 / p)
    if out is not None:
        return _write_out(out, r, "linalg.vector_norm")
    _record("vector_norm", (x,), r, {"ord": p, "dim": _dims(dim, x.dim(), "vector_norm"),
                                     "keepdim": bool(keepdim)})
    return r


@kernel("logsumexp")
def _logsumexp(input, dim=None, keepdim=False, *, out=None):
    rdt = input.dtype if input.dtype in _FLOATS else ember.get_default_dtype()
    with ember.no_grad():
        x = input.detach().to(rdt)
        m = _reduce("logsumexp", "MAX", x, dim, True, None)[0]
        m = ember.where(ember.isinf(m), 0.0, m)          # all -inf (or inf) rows
        s = _reduce("logsumexp", "SUM", ember.exp(x - m), dim, True, None)[0]
        r = ember.log(s) + m
        if not keepdim:
            red = _dims(dim, input.dim(), "logsumexp")
            r = r.view(tuple(n for d, n in enumerate(r.shape) if d not in red))
    if out is not None:
        return _write_out(out, r, "logsumexp")
    _record("logsumexp", (input,), r, {"dim": _dims(dim, input.dim(), "logsumexp"),
                                       "keepdim": bool(keepdim)})
    return r


def _tri(name: str, upper: bool):
    def run(input, diagonal=0, *, out=None):
        if input.dim() < 2:
            raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
        R, C = input.shape[-2], input.shape[-1]
        with ember.no_grad():
            rows = ember.arange(R, device=input.device).view(R, 1)
            cols = ember.arange(C, device=input.device)
            keep = _binary("ge" if upper else "le", _binary("sub", cols, rows), int(diagonal))
            r = _where_kernel(keep, input.detach(), _binary("mul", input.detach(), 0))
        if out is not None:
            return _write_out(out, r, name)
        _record(name, (input,), r, (int(diagonal),))
        return r
    return run


kernel("tril")(_tri("tril", False))
kernel("triu")(_tri("triu", True))


def _sorted_rows(name: str, input: Any, dim: Any, k: int | None, flag: bool,
                 want_vals: bool) -> tuple:
    """emc_sort (k None) or emc_topk over ``dim`` moved last: (values, indices) laid out
    like ``input`` (values None when not wanted)."""
    if input.dtype not in _FLOATS + _INTS + (_I64,) or input.dtype == ember.bool:
        raise _not_implemented(name, input.dtype)
    x = input.detach()
    x = x.reshape(1) if x.dim() == 0 else x
    d = _wrap(dim, x.dim(), name)
    xm = x.transpose(d, -1).contiguous()
    n = xm.shape[-1]
    rows = xm.numel() // n if n else 0
    m = n if k is None else k
    shape = tuple(xm.shape[:-1]) + (m,)
    v = _empty(shape, x.dtype, input) if want_vals else None
    i = _empty(shape, _I64, input)
    if rows * n:
        vp = _ptr(v) if want_vals else None
        if k is None:
            rc = _lib().emc_sort(x.dtype.code, _ptr(xm), rows, n, int(flag), vp, _ptr(i),
                                 _stream(i))
        else:
            rc = _lib().emc_topk(x.dtype.code, _ptr(xm), rows, n, int(k), int(flag), vp,
                                 _ptr(i), _stream(i))
        if rc == 10001:
            raise _not_implemented(name, x.dtype)
        K.check(rc, name)

    def back(t):
        t = t.transpose(d, -1).contiguous()
        return t.reshape(()) if input.dim() == 0 else t
    return (back(v) if want_vals else None), back(i), d


@kernel("sort")
def _sort(input, dim=-1, descending=False, stable=False, *, out=None):
    v, i, d = _sorted_rows("sort", input, dim, None, descending, True)
    _record("sort", (input,), (v, i), {"dim": d})
    from ember._C.reduce import return_types
    return return_types.sort(v, i)


@kernel("argsort")
def _argsort(input, dim=-1, descending=False, stable=False):
    return _sorted_rows("argsort", input, dim, None, descending, False)[1]


@kernel("topk")
def _topk(input, k, dim=-1, largest=True, sorted=True, *, out=None):
    n = input.shape[_wrap(dim, input.dim(), "topk")] if input.dim() else 1
    if k < 0 or k > n:
        raise RuntimeError("selected index k out of range")
    v, i, d = _sorted_rows("topk", input, dim, int(k), largest, True)
    _record("topk", (input,), (v, i), {"dim": d, "k": int(k)})
    from ember._C.reduce import return_types
    return return_types.topk(v, i)


def _all_any(name: str, op: str, empty: bool):
    def run(input, dim=None, keepdim=False, *, out=None):
        x = input.detach()
        b = x if x.dtype == ember.bool else _binary("ne", x, 0)
        red = _dims(dim, b.dim(), name)
        if any(b.shape[d] == 0 for d in red):
            shape = tuple(1 if d in red else s for d, s in enumerate(b.shape)) if keepdim \
                else tuple(s for d, s in enumerate(b.shape) if d not in red)
            r = ember.full(shape, empty, dtype=ember.bool, device=input.device)
        else:
            r, _ = _reduce(name, op, b, dim, keepdim, None)
        return r if out is None else _write_out(out, r, name)
    return run


kernel("all")(_all_any("all", "MIN", True))
kernel("any")(_all_any("any", "MAX", False))


def _argreduce(name: str, op: str, input: Any, dim: Any, keepdim: bool, values: bool) -> tuple:
    x = input.detach()
    if dim is None:
        x = x.reshape(-1)
        d = 0
    else:
        d = _wrap(dim, input.dim(), name)
    if x.dim() == 0:
        x = x.reshape(1)
    cdt = _I64 if x.dtype in _INTS else x.dtype
    x = x if x.dtype == cdt else x._cast(cdt.code)
    if x.shape[d] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    x, O, Kn, In, out_shape, keep_shape = _okI(x, (d,))
    v = _empty((O * In,), cdt, input) if values else None
    i = _empty((O * In,), _I64, input)
    if O * In:
        rc = _lib().emc_argreduce(K.RD[op], cdt.code, _ptr(x), O, Kn, In,
                                  _ptr(v) if values else None, _ptr(i), _stream(i))
        if rc == 10001:
            raise _not_implemented(name, cdt)
        K.check(rc, name)
    if dim is None:
        shape = tuple(1 for _ in input.shape) if keepdim else ()
    else:
        shape = keep_shape if keepdim else out_shape
    i = i.view(shape)
    if values:
        v = v.view(shape)
        if cdt != input.dtype:
            v = v._cast(input.dtype.code)
    return v, i


def _argmax_like(name: str, op: str):
    def run(input, dim=None, keepdim=False, *, out=None):
        _, i = _argreduce(name, op, input, dim, keepdim, False)
        return i if out is None else _write_out(out, i, name)
    return run


kernel("argmax")(_argmax_like("argmax", "MAX"))
kernel("argmin")(_argmax_like("argmin", "MIN"))


def _max_like(name: str, op: str):
    def run(input, dim=None, keepdim=False, *, out=None):
        if dim is None:
            r, _ = _reduce(name, op, input, None, False, None)
            _record(name, (input,), r, {"dim": None, "keepdim": False})
            return r
        v, i = _argreduce(name, op, input, dim, keepdim, True)
        _record(name, (input,), (v, i), {"dim": _wrap(dim, input.dim(), name),
                                         "keepdim": bool(keepdim)})
        from ember._C.reduce import return_types
        return getattr(return_types, name)(v, i)
    return run


kernel("max")(_max_like("max", "MAX"))
kernel("min")(_max_like("min", "MIN"))


# ---------------------------------------------------------------------------
# softmax

def _softmax(name: str, log: int):
    def run(input, dim=None, *, dtype=None, _stacklevel=3):
        if dim is None:
            dim = 0 if input.dim() in (0, 1, 3) else 1
        d = _wrap(dim, input.dim(), name)
        rdt = input.dtype if dtype is None else dtype
        if rdt not in _FLOATS:
            raise RuntimeError(f"\"{name}_lastdim_kernel_impl\" not implemented for "
                               f"'{_TORCH_NAMES[rdt]}'")
        x = input.detach()
        x = x if x.dtype == rdt else x._cast(rdt.code)
        x = x.reshape(1) if x.dim() == 0 else x
        x, O, Kn, In, _, _ = _okI(x, (d,))
        r = _empty(tuple(input.shape), rdt, input)
        if r.numel():
            K.check(_lib().emc_softmax(log, rdt.code, _ptr(x), O, Kn, In, _ptr(r), _stream(r)),
                    name)
        _record(name, (input,), r, {"dim": d, "dtype": None if dtype is None else rdt.code})
        return r
    return run


kernel("softmax")(_softmax("softmax", 0))
kernel("log_softmax")(_softmax("log_softmax", 1))


# ---------------------------------------------------------------------------
# GEMM

def _mat(m: Any) -> tuple:
    """(tensor, transposed, leading dim, batch stride) of a [B, R, C] operand as
    the row-major GEMM reads it; copies only a layout it cannot read."""
    B, R, C = m.shape
    sb, sr, sc = m.stride()
    sb = 0 if B == 1 else sb
    if (C == 1 or sc == 1) and (R == 1 or sr >= C):
        return m, 0, sr if R > 1 else max(C, 1), sb
    if (R == 1 or sr == 1) and (C == 1 or sc >= R):
        return m, 1, sc if C > 1 else max(R, 1), sb
    m = m.contiguous()
    return m, 0, max(C, 1), 0 if B == 1 else R * C


def _allow_tf32() -> bool:
    return ember.get_float32_matmul_precision() != "highest"


# M * N * K from which a TF32 product on Hopper first copies its operands into the
# one layout wgmma reads for 32-bit data (A rows and B columns contiguous in K):
# the copies cost far less than the mma.sync kernel's 4-5x longer run
_TF32_RELAYOUT_FLOPS = 1 << 30


def _k_major(m: Any, t: int, ld: int, sb: int, want_t: int) -> tuple:
    """(tensor, transposed, leading dim, batch stride) of operand m ([B, R, C] as the
    GEMM reads it) re-laid so that its transposed flag is want_t; a broadcast batch
    (stride 0) stays one matrix."""
    if t == want_t:
        return m, t, ld, sb
    one = m[:1] if sb == 0 else m
    B, R, C = one.shape
    if want_t:   # [B, R, C] stored as [B, C, R]
        return one.transpose(1, 2).contiguous(), 1, R, 0 if sb == 0 else R * C
    return one.contiguous(), 0, C, 0 if sb == 0 else R * C


def _gemm(a3: Any, b3: Any, c3: Any, beta: float = 0.0, alpha: float = 1.0) -> None:
    """c3[b] = alpha * a3[b] @ b3[b] (+ beta * c3[b]) for [B, M, K] @ [B, K, N] ->
    contiguous [B, M, N]."""
    B, M, Kd = a3.shape
    N = b3.shape[2]
    if B * M * N == 0:
        return
    dt = c3.dtype
    if dt not in _FLOATS:
        raise _not_implemented("addmm", dt)
    if Kd == 0:
        if beta == 0.0:
            c3.zero_()
        elif beta != 1.0:
            c3.mul_(beta)
        return
    a, ta, lda, sa = _mat(a3)
    b, tb, ldb, sb = _mat(b3)
    tf32 = dt == ember.float32 and _allow_tf32()
    if (tf32 and (ta or not tb) and B * M * N * Kd >= _TF32_RELAYOUT_FLOPS
            and _lib().emc_gemm_wgmma()):
        a, ta, lda, sa = _k_major(a3 if ta else a, ta, lda, sa, 0)
        b, tb, ldb, sb = _k_major(b3 if not tb else b, tb, ldb, sb, 1)
    rc = _lib().emc_gemm(dt.code, ta, tb, M, N, Kd, ctypes.c_double(alpha), _ptr(a), lda, sa,
                         _ptr(b), ldb, sb, ctypes.c_double(beta), _ptr(c3), N, M * N, B,
                         1 if tf32 else 0, _stream(c3))
    if rc == 10001:
        raise _not_implemented("addmm", dt)
    K.check(rc, "matmul")


def _same_dtype(a: Any, b: Any) -> None:
    if a.dtype != b.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{_TORCH_NAMES[a.dtype].lower()} != {_TORCH_NAMES[b.dtype].lower()}")


@kernel("mm")
def _mm(input, mat2, *, out=None):
    if input.dim() != 2 or mat2.dim() != 2:
        raise RuntimeError(f"{'self' if input.dim() != 2 else 'mat2'} must be a matrix")
    if input.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({input.shape[0]}x"
                           f"{input.shape[1]} and {mat2.shape[0]}x{mat2.shape[1]})")
    _same_dtype(input, mat2)
    r = _empty((input.shape[0], mat2.shape[1]), input.dtype, input)
    _gemm(input.detach().unsqueeze(0), mat2.detach().unsqueeze(0), r.unsqueeze(0))
    if out is not None:
        return _write_out(out, r, "mm")
    _record("mm", (input, mat2), r, None)
    return r


@kernel("bmm")
def _bmm(input, mat2, *, out=None):
    if input.dim() != 3 or mat2.dim() != 3:
        raise RuntimeError("batch1 must be a 3D tensor" if input.dim() != 3 else
                           "batch2 must be a 3D tensor")
    if input.shape[0] != mat2.shape[0] or input.shape[2] != mat2.shape[1]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{input.shape[0]}, {input.shape[2]}] but got: [{mat2.shape[0]}, "
                           f"{mat2.shape[1]}].")
    _same_dtype(input, mat2)
    r = _empty((input.shape[0], input.shape[1], mat2.shape[2]), input.dtype, input)
    _gemm(input.detach(), mat2.detach(), r)
    if out is not None:
        return _write_out(out, r, "bmm")
    _record("bmm", (input, mat2), r, None)
    return r


@kernel("matmul")
def _matmul(input, other, *, out=None):
    a, b = input.detach(), other.detach()
    if a.dim() == 0 or b.dim() == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{a.dim()}D and {b.dim()}D")
    _same_dtype(a, b)
    a2 = a.unsqueeze(0) if a.dim() == 1 else a
    b2 = b.unsqueeze(1) if b.dim() == 1 else b
    M, Ka = a2.shape[-2], a2.shape[-1]
    Kb, N = b2.shape[-2], b2.shape[-1]
    if Ka != Kb:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({M}x{Ka} and "
                           f"{Kb}x{N})")
    batch = ember.broadcast_shapes(tuple(a2.shape[:-2]), tuple(b2.shape[:-2]))
    nb = _numel(batch)
    a3 = a2.expand(*batch, M, Ka).reshape(nb, M, Ka) if batch else a2.unsqueeze(0)
    b3 = b2.expand(*batch, Kb, N).reshape(nb, Kb, N) if batch else b2.unsqueeze(0)
    r = _empty((nb if batch else 1, M, N), a.dtype, input)
    _gemm(a3, b3, r)
    shape = list(batch) + [M, N]
    if input.dim() == 1:
        del shape[-2]
    if other.dim() == 1:
        del shape[-1]
    r = r.view(tuple(shape))
    if out is not None:
        return _write_out(out, r, "matmul")
    _record("matmul", (input, other), r, None)
    return r


@kernel("linear")
def _linear(input, weight, bias=None):
    if weight.dim() == 1:
        r = ember.matmul(input, weight)
        return r if bias is None else ember.add(r, bias)
    if weight.dim() != 2:
        raise RuntimeError(f"linear(): weight should be 1-D or 2-D, but got {weight.dim()}-D")
    _same_dtype(input, weight)
    x = input.detach()
    Kd, N = x.shape[-1], weight.shape[0]
    if weight.shape[1] != Kd:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied "
                           f"({_numel(tuple(x.shape[:-1]))}x{Kd} and {weight.shape[1]}x{N})")
    x2 = x.reshape(-1, Kd)
    r = _empty((x2.shape[0], N), x.dtype, input)
    beta = 0.0
    if bias is not None:
        from ember.cuda._dispatch import copy_into
        copy_into(r, bias.detach())
        beta = 1.0
    _gemm(x2.unsqueeze(0), weight.detach().t().unsqueeze(0), r.unsqueeze(0), beta)
    r = r.view(tuple(x.shape[:-1]) + (N,))
    _record("linear", (input, weight, bias) if bias is not None else (input, weight), r, None)
    return r


# ---------------------------------------------------------------------------
# indexing

def _index_arg(index: Any, name: str) -> Any:
    if not isinstance(index, ember.Tensor):
        raise TypeError(f"{name}(): argument 'index' must be Tensor, not "
                        f"{type(index).__name__}")
    if index.dtype not in (ember.int64, ember.int32):
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index")
    i = index.detach()
    return (i if i.dtype == _I64 else i._cast(_I64.code)).contiguous()


@kernel("index_select")
def _index_select(input, dim, index, *, out=None):
    d = _wrap(dim, input.dim(), "index_select")
    if index.dim() > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    idx = _index_arg(index, "index_select").reshape(-1)
    x = input.detach().contiguous()
    shape = tuple(x.shape) or (1,)
    O, S, In = _numel(shape[:d]), shape[d], _numel(shape[d + 1:])
    n = idx.numel()
    oshape = list(input.shape)
    if oshape:
        oshape[d] = n
    r = _empty(tuple(oshape), input.dtype, input)
    if r.numel():
        if S == 0:
            raise IndexError("index_select(): index out of range in self")
        s = _stream(r)
        K.check(_lib().emc_index_select(input.dtype.code, _ptr(x), O, S, In, _ptr(idx), n,
                                        _ptr(r), s), "index_select")
        K.check_index("index_select", s)
    if out is not None:
        return _write_out(out, r, "index_select")
    _record("index_select", (input, index), r, (d, tuple(input.shape)))
    return r


def _deterministic(dt: Any) -> int:
    return 0 if dt in (ember.float32, ember.float64) and \
        not ember.are_deterministic_algorithms_enabled() else 1


@kernel("index_add")
def _index_add(input, dim, index, source, *, alpha=1):
    d = _wrap(dim, input.dim(), "index_add")
    idx = _index_arg(index, "index_add").reshape(-1)
    r = _empty(tuple(input.shape), input.dtype, input)
    from ember.cuda._dispatch import copy_into
    copy_into(r, input)
    src = source.detach()
    if alpha != 1:
        with ember.no_grad():
            src = _binary("mul", src, alpha)
    src = (src if src.dtype == input.dtype else src._cast(input.dtype.code)).contiguous()
    shape = tuple(input.shape) or (1,)
    O, S, In = _numel(shape[:d]), shape[d], _numel(shape[d + 1:])
    if tuple(src.shape or (1,)) != tuple(shape[:d]) + (idx.numel(),) + tuple(shape[d + 1:]):
        raise RuntimeError(f"index_add_(): source of shape {list(source.shape)} does not match "
                           f"the input's shape {list(input.shape)} with {idx.numel()} indices "
                           f"along dim {d}")
    if idx.numel() and r.numel():
        s = _stream(r)
        K.check(_lib().emc_index_add(input.dtype.code, _ptr(r), O, S, In, _ptr(idx),
                                     idx.numel(), _ptr(src), _deterministic(input.dtype), s),
                "index_add")
        K.check_index("index_add", s)
    _record("index_add", (input, index, source), r, (d, alpha))
    return r


_KERNELS_INPLACE = {"index_add_": _inplace("index_add_", _index_add)}


@kernel("gather")
def _gather(input, dim, index, *, sparse_grad=False, out=None):
    d = _wrap(dim, input.dim(), "gather")
    idx = _index_arg(index, "gather")
    if idx.dim() != input.dim():
        raise RuntimeError("Index tensor must have the same number of dimensions as input "
                           "tensor")
    x = input.detach()
    for j in range(x.dim()):        # index may be smaller than input off the gather dim
        if j != d:
            if idx.shape[j] > x.shape[j]:
                raise RuntimeError(f"Size does not match at dimension {j} expected index "
                                   f"{list(idx.shape)} to be smaller than self "
                                   f"{list(x.shape)} apart from dimension {d}")
            x = x.narrow(j, 0, idx.shape[j])
    x = x.contiguous()
    shape = tuple(x.shape) or (1,)
    O, S, In = _numel(shape[:d]), shape[d], _numel(shape[d + 1:])
    r = _empty(tuple(idx.shape), input.dtype, input)
    if r.numel():
        s = _stream(r)
        K.check(_lib().emc_gather(input.dtype.code, _ptr(x), O, S, In, _ptr(idx),
                                  idx.shape[d] if idx.dim() else 1, _ptr(r), s), "gather")
        K.check_index("gather", s)
    if out is not None:
        return _write_out(out, r, "gather")
    _record("gather", (input, index), r, (d, tuple(input.shape)))
    return r


@kernel("scatter_add")
def _scatter_add(input, dim, index, src):
    """out[..., index[i, j, k], ...] += src[i, j, k] along ``dim``: emc_scatter's sum."""
    d = _wrap(dim, input.dim(), "scatter_add")
    with ember.no_grad():
        r = _scatter(input.detach(), d, index, src.detach(), reduce="add")
    _record("scatter_add", (input, index, src), r, (d,))
    return r


_SCATTER_REDUCE = {None: 0, "add": 1, "sum": 1, "multiply": 2, "prod": 2, "amax": 3, "amin": 4}


@kernel("scatter")
def _scatter(input, dim, index, src=None, *, value=None, reduce=None, out=None):
    """input with src (a tensor, or a number) written at index along dim; where an index
    repeats, the last write in index order wins (emc_scatter's deterministic mode);
    reduce= combines instead ("add"/"sum", "multiply"/"prod", "amax", "amin")."""
    code = _SCATTER_REDUCE.get(reduce)
    if code is None:
        raise RuntimeError(f"scatter(): reduce argument must be either add or multiply, got "
                           f"{reduce}")
    d = _wrap(dim, input.dim(), "scatter")
    src = value if src is None else src
    if src is None:
        raise TypeError("scatter(): expected a src tensor or a value")
    idx = _index_arg(index, "scatter")
    if idx.dim() != input.dim():
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    from ember.cuda._dispatch import _operand, copy_into
    r = _empty(tuple(input.shape), input.dtype, input)
    copy_into(r, input)
    sv = _operand(src, input.dtype, input)
    shape = tuple(idx.shape)
    if sv.dim() and (sv.dim() != len(shape) or any(a < b for a, b in zip(sv.shape, shape))):
        raise RuntimeError(f"scatter(): src of shape {list(sv.shape)} is smaller than the "
                           f"index's {list(shape)}")
    if idx.numel() and r.numel():
        st0 = list(r.stride())
        st0[d] = 0
        sst = tuple(sv.stride()) if sv.dim() else (0,) * len(shape)
        nd = K.make_nd(shape, tuple(st0), tuple(idx.stride()), sst)
        s = _stream(r)
        # plain writes run in index order (the last write wins, as on the CPU); sums
        # of floats use atomics unless deterministic algorithms are asked for
        det = _deterministic(input.dtype) if code == 1 else 1
        rc = _lib().emc_scatter(code, input.dtype.code, _ptr(r), r.shape[d], r.stride()[d],
                                _ptr(idx), _ptr(sv), ctypes.byref(nd), det, s)
        if rc == 10001:
            raise _not_implemented(f"scatter_{reduce}", input.dtype)
        K.check(rc, "scatter")
        K.check_index("scatter", s)
    if out is not None:
        return _write_out(out, r, "scatter")
    _record("scatter", (input, index, src), r, (d, reduce))
    return r


@kernel("cat", "concat", "concatenate")
def _cat(tensors, dim=0, *, out=None):
    ts = list(tensors)
    if not ts:
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    ref = next((t for t in ts if not (t.dim() == 1 and t.shape[0] == 0)), ts[0])
    d = _wrap(dim, ref.dim(), "cat")
    rd = ts[0].dtype
    for t in ts[1:]:
        rd = ember.promote_types(rd, t.dtype)
    skipped = [t.dim() == 1 and t.shape[0] == 0 and t is not ref for t in ts]
    parts, sizes = [], []
    for t, skip in zip(ts, skipped):
        if skip:
            continue
        if t.dim() != ref.dim() or any(t.shape[j] != ref.shape[j] for j in range(t.dim())
                                       if j != d):
            raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. "
                               f"Expected size {list(ref.shape)} but got {list(t.shape)}")
        x = t.detach()
        parts.append((x if x.dtype == rd else x._cast(rd.code)).contiguous())
        sizes.append(t.shape[d])
    shape = list(ref.shape)
    shape[d] = sum(sizes)
    r = _empty(tuple(shape), rd, ref)
    if r.numel():
        outer = _numel(tuple(shape[:d]))
        inner = _numel(tuple(shape[d + 1:]))
        n = len(parts)
        ptrs = (ctypes.c_void_p * n)(*[p.data_ptr() or None for p in parts])
        szs = (ctypes.c_int64 * n)(*sizes)
        K.check(_lib().emc_cat(rd.code, _ptr(r), n, ptrs, szs, outer, inner, _stream(r)),
                "cat")
    if out is not None:
        return _write_out(out, r, "cat")
    if any(isinstance(t, ember.Tensor) and t.requires_grad for t in ts):
        _record("cat", tuple(ts), r, (d, tuple(t.shape[d] if not s else 0
                                                for t, s in zip(ts, skipped)), tuple(skipped)))
    return r


def _basic_index(x: Any, idx: Any) -> Any:
    """x[idx] for ints, slices, None and Ellipsis: a view (recorded by the view ops);
    None when idx holds a tensor or a list (advanced indexing)."""
    items = idx if isinstance(idx, tuple) else (idx,)
    if any(isinstance(i, (ember.Tensor, list)) for i in items):
        return None
    n_real = sum(1 for i in items if i is not None and i is not Ellipsis)
    if any(i is Ellipsis for i in items):
        e = items.index(Ellipsis)
        items = items[:e] + (slice(None),) * (x.dim() - n_real) + items[e + 1:]
    if n_real > x.dim():
        raise IndexError(f"too many indices for tensor of dimension {x.dim()}")
    r, d = x, 0
    for i in items:
        if i is None:
            r = r.unsqueeze(d)
            d += 1
        elif isinstance(i, slice):
            start, stop, step = i.indices(r.shape[d])
            if step <= 0:
                raise ValueError("step must be greater than zero")
            length = max(0, (stop - start + step - 1) // step)
            r = r.narrow(d, start, length) if step == 1 else \
                r.as_strided(r.shape[:d] + (length,) + r.shape[d + 1:],
                             r.stride()[:d] + (r.stride()[d] * step,) + r.stride()[d + 1:],
                             r.storage_offset() + start * r.stride()[d])
            d += 1
        else:
            i = int(i)
            if not -r.shape[d] <= i < r.shape[d]:
                raise IndexError(f"index {i} is out of bounds for dimension {d} with size "
                                 f"{r.shape[d]}")
            r = r.select(d, i)
    return r


# ---------------------------------------------------------------------------
# random numbers: the CPU generator's Philox streams

def _philox(generator: Any, index: int) -> tuple:
    """(seed, offset) of the draw, advancing the generator by one draw."""
    if generator is not None:
        seed, off = generator.initial_seed(), generator.get_offset()
        generator.set_offset(off + 1)
        return seed, off
    from ember import cuda
    seed = cuda._device_seed(index)
    off = cuda._offsets.get(index, 0)
    cuda._offsets[index] = off + 1
    return seed, off


def _fill_random(t: Any, kind: int, a: float, b: float, generator: Any, name: str) -> Any:
    if t.dtype not in _FLOATS:
        raise _not_implemented(name, t.dtype)
    d = t if t.is_contiguous() else _empty(tuple(t.shape), t.dtype, t)
    seed, off = _philox(generator, t.device.index or 0)
    if d.numel():
        K.check(_lib().emc_rand_float(kind, d.dtype.code, _ptr(d), d.numel(),
                                      ctypes.c_uint64(seed), ctypes.c_uint64(off),
                                      ctypes.c_double(a), ctypes.c_double(b), _stream(d)), name)
    if d is not t:
        from ember.cuda._dispatch import copy_into
        copy_into(t, d)
    return t


def _shape_of(size: tuple, kw_size: Any) -> tuple:
    if kw_size is not None:
        size = (kw_size,)
    if len(size) == 1 and isinstance(size[0], (list, tuple)) or \
            len(size) == 1 and hasattr(size[0], "__len__") and not isinstance(size[0], int):
        size = tuple(size[0])
    return tuple(int(s) for s in size)


def _random_factory(name: str, kind: int):
    def run(*size, generator=None, out=None, dtype=None, layout=None, device=None,
            requires_grad=False, pin_memory=False, **kwargs):
        shape = _shape_of(size, kwargs.pop("size", None))
        if kwargs:
            raise TypeError(f"{name}() got an unexpected keyword argument "
                            f"'{next(iter(kwargs))}'")
        dt = dtype if dtype is not None else ember.get_default_dtype()
        t = ember.empty(shape, dtype=dt, device=device)
        _fill_random(t, kind, 0.0, 1.0, generator, name)
        if out is not None:
            return out.copy_(t)
        return t.requires_grad_(True) if requires_grad else t
    return run


kernel("rand")(_random_factory("rand", K.RAND_UNIFORM))
kernel("randn")(_random_factory("randn", K.RAND_NORMAL))


@kernel("uniform_")
def _uniform_(self, from_=0.0, to=1.0, *, generator=None):
    with ember.no_grad():
        return _fill_random(self, K.RAND_UNIFORM, float(from_), float(to), generator,
                            "uniform_")


@kernel("normal_")
def _normal_(self, mean=0.0, std=1.0, *, generator=None):
    with ember.no_grad():
        return _fill_random(self, K.RAND_NORMAL, float(mean), float(std), generator, "normal_")


@kernel("randint")
def _randint(*args, size=None, low=None, high=None, generator=None, out=None, dtype=None,
             layout=None, device=None, requires_grad=False, pin_memory=False):
    rest = list(args)
    if size is None and rest and isinstance(rest[-1], (tuple, list)):
        size = rest.pop()
    if high is None:
        high = rest.pop() if rest else None
    if low is None:
        low = rest.pop() if rest else 0
    if high is None or size is None:
        raise TypeError("randint() missing required arguments: high and size")
    lo, hi = int(low), int(high)
    if lo >= hi:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={lo} >= "
                           f"to={hi}")
    t = ember.empty(tuple(size), dtype=dtype or _I64, device=device)
    seed, off = _philox(generator, t.device.index or 0)
    if t.numel():
        rc = _lib().emc_rand_int(t.dtype.code, _ptr(t), t.numel(), ctypes.c_uint64(seed),
                                 ctypes.c_uint64(off), lo, ctypes.c_uint64(hi - lo),
                                 _stream(t))
        if rc == 10001:
            raise _not_implemented("randint", t.dtype)
        K.check(rc, "randint")
    return t if out is None else out.copy_(t)


def _host_factory(name: str):
    """Factories whose values are computed from Python numbers (arange, linspace,
    eye, ...): built on the host and copied over, as ``torch.tensor`` does."""
    def run(*args, **kwargs):
        fn = getattr(ember, name if name != "range" else "arange")
        device = kwargs.pop("device", None)
        rg = kwargs.pop("requires_grad", False)
        out = kwargs.pop("out", None)
        if name == "range":
            fn = ember._C.creation._range
        r = fn(*args, **kwargs).to(device)
        if out is not None:
            return out.copy_(r)
        return r.requires_grad_(True) if rg else r
    return run


for _n in ("arange", "range", "linspace", "logspace", "eye", "tensor"):
    kernel(_n)(_host_factory(_n))


@kernel("empty_strided")
def _empty_strided(size, stride, *, dtype=None, layout=None, device=None,
                   requires_grad=False, pin_memory=False):
    size, stride = tuple(size), tuple(stride)
    span = 1 + sum((s - 1) * st for s, st in zip(size, stride) if s > 0) if all(size) else 0
    base = ember.empty((span,), dtype=dtype or ember.get_default_dtype(), device=device)
    r = base.as_strided(size, stride)
    return r.requires_grad_(True) if requires_grad else r


def _register_inplace() -> None:
    from ember.cuda._dispatch import _KERNELS
    _KERNELS.update(_KERNELS_INPLACE)
    _KERNELS["scatter_add_"] = _inplace("scatter_add_", _scatter_add)
    _KERNELS["scatter_"] = _inplace("scatter_", _scatter)


_register_inplace()
