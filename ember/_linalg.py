"""Linear algebra: the ops behind ``ember.linalg`` and the legacy ``ember.det``/``svd``/... names.

Products and norms are compositions of ember's own kernels.  Factorizations
(LU, Cholesky, QR, symmetric eigen, SVD, least squares, LDL) call LAPACK from
the ``scipy-openblas32`` wheel on ember memory through :mod:`ember._lapack`,
which is imported (and the library loaded) on the first factorization only.

A factorization runs without recording and is recorded as one op (its name as
in PyTorch: ``linalg_svd``, ``linalg_eigh`` ...) whose backward formula lives in
``ember/autograd/_formulas_linalg.py``; everything else is differentiable
through the ops it is made of.  float32/float64 and complex64/complex128 (LAPACK's
c/z routines; a Hermitian matrix where the real one is symmetric).
"""
from __future__ import annotations

import math

import ember
from ember._C import core
from ember._C import reduce as _reduce

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Sequence

Tensor = core.TensorBase


class LinAlgError(RuntimeError):
    """A linear-algebra routine failed on its input (singular, not positive-definite, ...)."""


LinAlgError.__module__ = "ember.linalg"


# result types (torch.return_types.*), made on first use: namedtuple() is slow to import
_RESULT_FIELDS = {
    "slogdet": ("sign", "logabsdet"),
    "linalg_slogdet": ("sign", "logabsdet"),
    "linalg_inv_ex": ("inverse", "info"),
    "linalg_solve_ex": ("result", "info"),
    "linalg_cholesky_ex": ("L", "info"),
    "linalg_lu_factor": ("LU", "pivots"),
    "linalg_lu_factor_ex": ("LU", "pivots", "info"),
    "linalg_lu": ("P", "L", "U"),
    "lu_unpack": ("P", "L", "U"),
    "linalg_ldl_factor": ("LD", "pivots"),
    "linalg_ldl_factor_ex": ("LD", "pivots", "info"),
    "linalg_qr": ("Q", "R"),
    "qr": ("Q", "R"),
    "geqrf": ("a", "tau"),
    "linalg_eigh": ("eigenvalues", "eigenvectors"),
    "linalg_svd": ("U", "S", "Vh"),
    "svd": ("U", "S", "V"),
    "linalg_lstsq": ("solution", "residuals", "rank", "singular_values"),
    "triangular_solve": ("solution", "cloned_coefficient"),
}


def _result(name: str, *values: Any) -> tuple:
    cls = getattr(_reduce.return_types, name, None)
    if cls is None:
        cls = _reduce._rt(name, _RESULT_FIELDS[name])
        setattr(_reduce.return_types, name, cls)
    return cls(*values)


def _scalar_name(dt) -> str:
    """torch's scalar-type name of an ember dtype ('Float', 'ComplexDouble', ...)"""
    return core._SCALAR_NAMES[dt.code]


def _tensor(x: Any, op: str, arg: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{arg}' must be Tensor, not {type(x).__name__}")
    return x


def _floating(A: Tensor, op: str) -> None:
    if A.dtype in (core.float32, core.float64, core.complex64, core.complex128):
        return
    if A.dtype in (core.float16, core.bfloat16):
        raise RuntimeError(f"{op}: Low precision dtypes not supported. Got "
                           f"{_scalar_name(A.dtype)}")
    raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got "
                       f"{_scalar_name(A.dtype)}")


def _matrix(A: Any, op: str, arg: str = "A", square: bool = False) -> Tensor:
    """Check that ``A`` is a float (batch of) matrix (square when asked)."""
    _tensor(A, op, arg)
    if A.dim() < 2:
        raise RuntimeError(f"{op}: The input tensor {arg} must have at least 2 dimensions.")
    _floating(A, op)
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{op}: {arg} must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    return A


def _same_dtype(A: Tensor, B: Tensor, op: str, arg: str = "B") -> None:
    if A.dtype != B.dtype:
        raise RuntimeError(f"{op}: Expected {arg} to have the same dtype as A, but got "
                           f"{arg}.dtype={_scalar_name(B.dtype)} and A.dtype="
                           f"{_scalar_name(A.dtype)}")


def _raise_info(op: str, infos: list, batched: bool, message, error=None) -> None:
    if not any(infos):
        return
    for b, info in enumerate(infos):
        if info != 0:
            where = f"(Batch element {b}): " if batched else ""
            raise (error or LinAlgError)(f"{op}: {where}{message(info)}")


def _info_tensor(infos: list, batch: tuple) -> Tensor:
    if not any(infos):
        return core.zeros(batch, dtype=core.int32)
    return core.tensor(infos, dtype=core.int32).reshape(batch)


def _recorded(name: str, fn, inputs: tuple, attrs: dict | None = None):
    """Run ``fn(*inputs)`` unrecorded and record it as op ``name`` (see _formulas_linalg)."""
    from ember.autograd._engine import _record_composite
    return _record_composite(name, fn, inputs, attrs)


def _lapack():
    from ember import _lapack
    return _lapack


def _broadcast_batch(A: Tensor, B: Tensor) -> tuple:
    batch = tuple(core.broadcast_shapes(tuple(A.shape[:-2]), tuple(B.shape[:-2])))
    return (A.expand(*batch, *A.shape[-2:]), B.expand(*batch, *B.shape[-2:]), batch)


def _eye_like(n: int, A: Tensor) -> Tensor:
    return ember.eye(n, dtype=A.dtype)


def _mT(A: Tensor) -> Tensor:
    return A.transpose(-2, -1)


def _mH(A: Tensor) -> Tensor:
    """The conjugate transpose (the transpose of a real matrix)."""
    return A.transpose(-2, -1).conj() if A.is_complex() else A.transpose(-2, -1)


# ---------------------------------------------------------------------------
# LU

def _lu_raw(A: Tensor) -> tuple:
    """(LU, pivots, infos) of ``A`` (..., m, n) by getrf."""
    L = _lapack()
    batch = tuple(A.shape[:-2])
    k = min(A.shape[-2], A.shape[-1])
    buf = L.fortran(A)
    piv = core.empty(buf.shape[0], k, dtype=core.int32)
    infos = L.getrf(buf, piv)
    return L.matrix(buf, batch), piv.reshape(*batch, k), infos


def lu_factor_ex(A: Tensor, *, pivot: bool = True, check_errors: bool = False,
                 out: Any = None) -> tuple:
    """LU factorization with partial pivoting: ``(LU, pivots, info)``.

    Parameters
    ----------
    A : Tensor
        ``(*, m, n)`` float32/float64.
    pivot : bool
        Only ``True`` (partial pivoting) is supported on the CPU, as in PyTorch.
    check_errors : bool
        Raise when ``info`` is non-zero (an exactly zero pivot).

    Returns
    -------
    (LU, pivots, info)
        ``pivots`` are 1-based int32 row swaps (LAPACK's ``ipiv``); ``info`` int32.
    """
    op = "torch.linalg.lu_factor_ex"
    _matrix(A, op)
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    attrs: dict = {}

    def run(a):
        LU, piv, infos = _lu_raw(a)
        attrs["pivots"], attrs["infos"] = piv, infos
        return LU

    LU = _recorded("linalg_lu_factor_ex", run, (A,), attrs)
    piv, infos = attrs["pivots"], attrs.pop("infos")
    if check_errors:
        _raise_info(op, infos, A.dim() > 2, lambda i: f"U[{i},{i}] is zero and using it on "
                    "lu_solve would result in a division by zero.", RuntimeError)
    info = _info_tensor(infos, tuple(A.shape[:-2]))
    return _out(out, _result("linalg_lu_factor_ex", LU, piv, info))


def lu_factor(A: Tensor, *, pivot: bool = True, out: Any = None) -> tuple:
    """LU factorization ``(LU, pivots)``; raises on an exactly singular ``A``.

    See :func:`lu_factor_ex`.
    """
    LU, piv, info = lu_factor_ex(A, pivot=pivot)
    infos = info.reshape(-1).tolist()
    _raise_info("torch.linalg.lu_factor", infos, A.dim() > 2,
                lambda i: f"U[{i},{i}] is zero and using it on lu_solve would result in a "
                "division by zero. If you still want to perform the factorization, consider "
                "calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)", RuntimeError)
    return _out(out, _result("linalg_lu_factor", LU, piv))


def _perm_from_pivots(piv: Tensor, m: int) -> Tensor:
    """The row permutation ``perm`` (..., m) with ``A = P L U``, ``P[perm[j], j] = 1``."""
    batch = tuple(piv.shape[:-1])
    rows = piv.reshape(-1, piv.shape[-1]).tolist() if piv.numel() else [[]] * _prod(batch)
    perms = []
    for r in rows:
        p = list(range(m))
        for i, s in enumerate(r):
            s -= 1
            p[i], p[s] = p[s], p[i]
        perms.append(p)
    return core.tensor(perms, dtype=core.int64).reshape(*batch, m)


def _prod(xs) -> int:
    n = 1
    for x in xs:
        n *= x
    return n


def _perm_matrix(piv: Tensor, m: int, dtype) -> Tensor:
    perm = _perm_from_pivots(piv, m)
    return _mT(ember.eye(m, dtype=dtype)[perm])


def lu_unpack(LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True,
              unpack_pivots: bool = True, *, out: Any = None) -> tuple:
    """Unpack ``(P, L, U)`` from :func:`lu_factor`'s output (``A = P @ L @ U``).

    Parameters
    ----------
    LU_data : Tensor
        ``(*, m, n)`` packed factors.
    LU_pivots : Tensor
        ``(*, min(m, n))`` 1-based int32 pivots.
    unpack_data, unpack_pivots : bool
        Skip ``L, U`` or ``P`` (returned empty).
    """
    op = "torch.lu_unpack"
    _matrix(LU_data, op, "LU_data")
    _tensor(LU_pivots, op, "LU_pivots")
    if LU_pivots.dtype != core.int32:
        raise RuntimeError(f"{op}: LU_pivots is expected to be a contiguous tensor of torch.int32 "
                           f"dtype. Note: this function is intended to be used with the output "
                           f"produced by torch.linalg.lu_factor")
    m, n = LU_data.shape[-2], LU_data.shape[-1]
    k = min(m, n)
    empty = core.empty(0, dtype=LU_data.dtype)
    if unpack_data:
        L = LU_data[..., :, :k].tril(-1) + ember.eye(m, k, dtype=LU_data.dtype)
        U = LU_data[..., :k, :].triu()
    else:
        L = U = empty
    P = _perm_matrix(LU_pivots, m, LU_data.dtype) if unpack_pivots else empty
    return _out(out, _result("lu_unpack", P, L, U))


def lu(A: Tensor, *, pivot: bool = True, out: Any = None) -> tuple:
    """LU decomposition ``A = P @ L @ U`` as ``(P, L, U)``.

    Parameters
    ----------
    A : Tensor
        ``(*, m, n)`` float32/float64.
    pivot : bool
        Only ``True`` is supported on the CPU.
    """
    LU, piv, _ = lu_factor_ex(A, pivot=pivot)
    return _out(out, _result("linalg_lu", *lu_unpack(LU, piv)))


def _lu_solve_raw(LU: Tensor, piv: Tensor, B: Tensor, left: bool, adjoint: bool) -> Tensor:
    L = _lapack()
    if not left:          # X A = B  <=>  A^H X^H = B^H
        return _mH(_lu_solve_raw(LU, piv, _mH(B), True, not adjoint))
    LU, B, batch = _broadcast_batch(LU, B)
    piv = piv.expand(*batch, piv.shape[-1])
    a = L.fortran(LU)
    b = L.fortran(B)
    p = core.empty(*piv.shape, dtype=core.int32)
    p.copy_(piv)
    L.getrs(a, p.reshape(-1, piv.shape[-1]) if p.numel() else p.reshape(a.shape[0], 0), b,
            ("C" if LU.is_complex() else "T") if adjoint else "N")
    return L.matrix(b, batch)


def lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True,
             adjoint: bool = False, out: Any = None) -> Tensor:
    """Solve ``A X = B`` from the LU factors of ``A`` (:func:`lu_factor`).

    Parameters
    ----------
    LU, pivots : Tensor
        ``lu_factor(A)``'s output for square ``A``.
    B : Tensor
        ``(*, n, k)`` right-hand side.
    left : bool
        Solve ``A X = B`` (True) or ``X A = B``.
    adjoint : bool
        Solve with ``A^H`` instead of ``A``.
    """
    op = "linalg.lu_solve"
    _matrix(LU, op, "LU", square=True)
    _matrix(B, op, "B")
    _tensor(pivots, op, "pivots")
    _same_dtype(LU, B, op)
    n = LU.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation {eq} "
                           f"({n}x{n} and {B.shape[-2]}x{B.shape[-1]})")
    if pivots.shape[-1:] != (n,) or pivots.dtype != core.int32:
        raise RuntimeError(f"{op}: Expected pivots to be int32 of shape (*, {n}), got "
                           f"{tuple(pivots.shape)} {pivots.dtype}")
    X = _recorded("linalg_lu_solve", lambda a, p, b: _lu_solve_raw(a, p, b, left, adjoint),
                  (LU, pivots, B), {"left": left, "adjoint": adjoint})
    return _out(out, X)


# ---------------------------------------------------------------------------
# determinants, inverse, solve

def _lu_transposed(A: Tensor) -> tuple:
    """(LU buffer, pivots) of A^T, factored in A's own memory layout (no transposing copy):
    A^T is singular exactly when A is, det(A^T) = det(A) and inv(A^T) = inv(A)^T."""
    L = _lapack()
    buf = L.rowmajor(A)
    piv = core.empty(buf.shape[0], A.shape[-1], dtype=core.int32)
    infos = L.getrf(buf, piv)
    if any(infos):      # LAPACK's info names A's first zero pivot, not A^T's
        infos = L.getrf(L.fortran(A), core.empty(buf.shape[0], A.shape[-1], dtype=core.int32))
    return buf, piv, infos


def _lu_det_parts(A: Tensor) -> tuple:
    """(permutation sign, diag(U), infos) from one LU factorization (of A^T: same det)."""
    buf, piv, infos = _lu_transposed(A)
    n = A.shape[-1]
    batch = tuple(A.shape[:-2])
    swaps = (piv != ember.arange(1, n + 1, dtype=core.int32)).sum(-1)
    sign = (1 - 2 * (swaps % 2)).to(A.dtype).reshape(batch)
    return sign, buf.diagonal(0, -2, -1).reshape(*batch, n), infos


def det(A: Tensor, *, out: Any = None) -> Tensor:
    """Determinant of a (batch of) square matrix, by LU.

    Parameters
    ----------
    A : Tensor
        ``(*, n, n)`` float32/float64.
    """
    _matrix(A, "linalg.det", square=True)

    def run(a):
        if _lapack().small(a):
            return _lapack().small_det(a, False)
        sign, d, _ = _lu_det_parts(a)
        return sign * d.prod(-1)

    return _out(out, _recorded("linalg_det", run, (A,)))


def slogdet(A: Tensor, *, out: Any = None) -> tuple:
    """Sign and log of the absolute value of the determinant: ``(sign, logabsdet)``.

    ``sign`` is 0 and ``logabsdet`` is ``-inf`` for a singular matrix.
    """
    _matrix(A, "linalg.slogdet", square=True)

    def run(a):
        if _lapack().small(a):
            return _lapack().small_det(a, True)
        sign, d, _ = _lu_det_parts(a)
        return sign * (d.sgn() if d.is_complex() else d.sign()).prod(-1), d.abs().log().sum(-1)

    s, la = _recorded("linalg_slogdet", run, (A,))
    return _out(out, _result("linalg_slogdet", s, la))


def _legacy_slogdet(A: Tensor) -> tuple:
    """Sign and log-abs-determinant (``torch.slogdet``); see :func:`slogdet`."""
    return _result("slogdet", *slogdet(A))


def logdet(A: Tensor) -> Tensor:
    """Log-determinant: ``nan`` for a negative determinant, ``-inf`` for zero (complex
    ``log(det)`` for complex ``A``)."""
    s, la = slogdet(A)
    return la + s.log()


def _identity_solve(A: Tensor) -> tuple:
    """(inverse, infos): Gauss-Jordan for small real matrices, else getrf + getrs on the
    identity (singular members always take LAPACK's path, for its info and values)."""
    L = _lapack()
    if L.small(A):
        r, infos = L.small_inv(A)
        if not any(infos):
            return r, infos
    n = A.shape[-1]
    batch = tuple(A.shape[:-2])
    buf, piv, infos = _lu_transposed(A)
    b = ember.eye(n, dtype=A.dtype).expand(buf.shape[0], n, n).contiguous()
    L.getrs(buf, piv, b)        # inv(A^T), column-major: inv(A) in A's layout
    return b.reshape(*batch, n, n), infos


def inv_ex(A: Tensor, *, check_errors: bool = False, out: Any = None) -> tuple:
    """Inverse without raising for singular input: ``(inverse, info)``."""
    op = "linalg.inv"
    _matrix(A, op, square=True)
    holder = []

    def run(a):
        r, infos = _identity_solve(a)
        holder.append(infos)
        return r

    r = _recorded("linalg_inv", run, (A,))
    if check_errors:
        _raise_inv(op, holder[0], A.dim() > 2)
    return _out(out, _result("linalg_inv_ex", r, _info_tensor(holder[0], tuple(A.shape[:-2]))))


def _raise_inv(op: str, infos: list, batched: bool) -> None:
    _raise_info(op, infos, batched, lambda i: f"The diagonal element {i} is zero, the inversion "
                "could not be completed because the input matrix is singular.")


def inv(A: Tensor, *, out: Any = None) -> Tensor:
    """Inverse of a (batch of) square matrix; :class:`LinAlgError` when singular."""
    r, info = inv_ex(A)
    _raise_inv("linalg.inv", info.reshape(-1).tolist(), A.dim() > 2)
    return _out(out, r)


def _is_vector_rhs(A: Tensor, B: Tensor) -> bool:
    return B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1]))


def _solve_raw(A: Tensor, B: Tensor, left: bool) -> tuple:
    """(X, infos) for A X = B (left) or X A = B; B is a (batch of) matrix."""
    if not left:
        X, infos = _solve_raw(_mT(A), _mT(B), True)
        return _mT(X), infos
    if tuple(A.shape[:-2]) == tuple(B.shape[:-2]):
        L = _lapack()
        if L.small(A) and A.dtype == B.dtype:
            X, infos = L.small_solve(A, B)
            if not any(infos):
                return X, infos
        buf, piv, infos = _lu_transposed(A)
        b = L.fortran(B)
        L.getrs(buf, piv, b, "T")     # (A^T)^T X = B
        return L.matrix(b, tuple(B.shape[:-2])), infos
    LU, piv, infos = _lu_raw(A)       # info per matrix of A, as torch reports it
    return _lu_solve_raw(LU, piv, B, True, False), infos


def solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False,
             out: Any = None) -> tuple:
    """Solve ``A X = B`` (or ``X A = B``) without raising for singular ``A``: ``(result, info)``.

    Parameters
    ----------
    A : Tensor
        ``(*, n, n)`` float32/float64.
    B : Tensor
        ``(*, n, k)``, or ``(*, n)`` (a batch of vectors) when its shape is ``A.shape[:-1]``.
    left : bool
        Solve ``A X = B`` (True) or ``X A = B``.
    """
    op = "linalg.solve"
    _matrix(A, op, square=True)
    _tensor(B, op, "B")
    _floating(B, op)
    _same_dtype(A, B, op)
    vector = _is_vector_rhs(A, B)
    if vector and not left:
        raise RuntimeError(f"{op}: Vector broadcasting of the left hand side is not supported "
                           f"for left=False. In this case linalg.solve is equivalent to B / A."
                           f"squeeze(-1)")
    Bm = B.unsqueeze(-1) if vector else B
    n = A.shape[-1]
    if (Bm.shape[-2] if left else Bm.shape[-1]) != n:
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation {eq} "
                           f"({n}x{n} and {Bm.shape[-2]}x{Bm.shape[-1]})")
    holder = []

    def run(a, b):
        X, infos = _solve_raw(a, b.unsqueeze(-1) if vector else b, left)
        holder.append(infos)
        return X.squeeze(-1) if vector else X

    X = _recorded("linalg_solve", run, (A, B), {"left": left, "vector": vector})
    if check_errors:
        _raise_solve(holder[0], A.dim() > 2)
    info = _info_tensor(holder[0], tuple(A.shape[:-2]))
    return _out(out, _result("linalg_solve_ex", X, info))


def _raise_solve(infos: list, batched: bool) -> None:
    _raise_info("torch.linalg.solve", infos, batched,
                lambda i: "The solver failed because the input matrix is singular.")


def solve(A: Tensor, B: Tensor, *, left: bool = True, out: Any = None) -> Tensor:
    """Solve ``A X = B`` (or ``X A = B``); :class:`LinAlgError` when ``A`` is singular.

    See :func:`solve_ex` for the shapes.
    """
    X, info = solve_ex(A, B, left=left)
    _raise_solve(info.reshape(-1).tolist(), A.dim() > 2)
    return _out(out, X)


def _solve_triangular_raw(A: Tensor, B: Tensor, upper: bool, left: bool,
                          unitriangular: bool) -> Tensor:
    L = _lapack()
    A, B, batch = _broadcast_batch(A, B)
    a = L.fortran(A)
    b = L.fortran(B)
    L.trsm(a, b, "L" if left else "R", "U" if upper else "L", "N",
           "U" if unitriangular else "N")
    return L.matrix(b, batch)


def solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True,
                     unitriangular: bool = False, out: Any = None) -> Tensor:
    """Solve a triangular system ``A X = B`` (or ``X A = B``).

    Parameters
    ----------
    A : Tensor
        ``(*, n, n)``; only its ``upper`` (or lower) triangle is read.
    B : Tensor
        ``(*, n, k)`` (``(*, k, n)`` when ``left=False``).
    upper : bool
        Use the upper triangle of ``A``.
    unitriangular : bool
        Assume ones on the diagonal of ``A``.
    """
    op = "linalg.solve_triangular"
    _matrix(A, op, square=True)
    _matrix(B, op, "B")
    _same_dtype(A, B, op)
    n = A.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation {eq} "
                           f"({n}x{n} and {B.shape[-2]}x{B.shape[-1]})")
    X = _recorded("linalg_solve_triangular",
                  lambda a, b: _solve_triangular_raw(a, b, upper, left, unitriangular), (A, B),
                  {"upper": upper, "left": left, "unitriangular": unitriangular})
    return _out(out, X)


def triangular_solve(b: Tensor, A: Tensor, upper: bool = True, transpose: bool = False,
                     unitriangular: bool = False, *, out: Any = None) -> tuple:
    """Legacy ``torch.triangular_solve``: ``(solution, cloned_coefficient)`` of ``op(A) X = b``."""
    _matrix(b, "triangular_solve", "b")
    _matrix(A, "triangular_solve", "A", square=True)
    Ae = _mT(A) if transpose else A
    X = solve_triangular(Ae, b, upper=upper != transpose, unitriangular=unitriangular)
    return _out(out, _result("triangular_solve", X, A.clone()))


# ---------------------------------------------------------------------------
# Cholesky and LDL

def _cholesky_raw(A: Tensor) -> tuple:
    L = _lapack()
    # A's own layout read column-major is A^T (conj(A) for Hermitian A): its upper triangle
    # is A's lower one, and its upper factor U (conj(A) = U^H U) read row-major is L
    buf = L.rowmajor(A)
    infos = L.potrf(buf, "U")
    return buf.reshape(A.shape).tril(), infos


def cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False,
                out: Any = None) -> tuple:
    """Cholesky factor without raising: ``(L, info)``; ``info > 0`` names the failing minor.

    Parameters
    ----------
    A : Tensor
        ``(*, n, n)`` symmetric positive-definite; only its lower triangle is read.
    upper : bool
        Return ``U = L^T`` instead of ``L``.
    """
    op = "linalg.cholesky"
    _matrix(A, op, square=True)
    holder = []

    def run(a):
        Lf, infos = _cholesky_raw(a)
        holder.append(infos)
        return _mH(Lf).contiguous() if upper else Lf

    Lf = _recorded("linalg_cholesky_ex", run, (A,), {"upper": upper})
    if check_errors:
        _raise_cholesky(op, holder[0], A.dim() > 2)
    info = _info_tensor(holder[0], tuple(A.shape[:-2]))
    return _out(out, _result("linalg_cholesky_ex", Lf, info))


def _raise_cholesky(op: str, infos: list, batched: bool) -> None:
    _raise_info(op, infos, batched, lambda i: "The factorization could not be completed because "
                f"the input is not positive-definite (the leading minor of order {i} is not "
                "positive-definite).")


def cholesky(A: Tensor, *, upper: bool = False, out: Any = None) -> Tensor:
    """Cholesky factor ``L`` (``A = L L^T``); :class:`LinAlgError` if not positive-definite."""
    Lf, info = cholesky_ex(A, upper=upper)
    _raise_cholesky("linalg.cholesky", info.reshape(-1).tolist(), A.dim() > 2)
    return _out(out, Lf)


def _legacy_cholesky(input: Tensor, upper: bool = False, *, out: Any = None) -> Tensor:
    """Legacy ``torch.cholesky(input, upper=False)``; see :func:`cholesky`."""
    return cholesky(input, upper=upper, out=out)


def _cholesky_solve_raw(B: Tensor, L: Tensor, upper: bool) -> Tensor:
    Lo = _mH(L) if upper else L
    Y = _solve_triangular_raw(Lo, B, False, True, False)
    return _solve_triangular_raw(_mH(Lo), Y, True, True, False)


def cholesky_solve(B: Tensor, L: Tensor, upper: bool = False, *, out: Any = None) -> Tensor:
    """Solve ``A X = B`` given the Cholesky factor of ``A`` (``torch.cholesky_solve``).

    Parameters
    ----------
    B : Tensor
        ``(*, n, k)`` right-hand side.
    L : Tensor
        ``(*, n, n)`` lower (or ``upper``) Cholesky factor of ``A``.
    """
    op = "cholesky_solve"
    _matrix(B, op, "B")
    _matrix(L, op, "L", square=True)
    _same_dtype(L, B, op)
    if B.shape[-2] != L.shape[-1]:
        raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation AX = B "
                           f"({L.shape[-1]}x{L.shape[-1]} and {B.shape[-2]}x{B.shape[-1]})")
    X = _recorded("cholesky_solve", lambda b, lo: _cholesky_solve_raw(b, lo, upper), (B, L),
                  {"upper": upper})
    return _out(out, X)


def cholesky_inverse(L: Tensor, upper: bool = False, *, out: Any = None) -> Tensor:
    """Inverse of ``A`` from its Cholesky factor (``torch.cholesky_inverse``)."""
    _matrix(L, "cholesky_inverse", "L", square=True)
    n = L.shape[-1]

    def run(lo):
        eye = ember.eye(n, dtype=lo.dtype).expand(*lo.shape[:-2], n, n)
        return _cholesky_solve_raw(eye, lo, upper)

    return _out(out, _recorded("cholesky_inverse", run, (L,), {"upper": upper}))


def ldl_factor_ex(A: Tensor, *, hermitian: bool = False, check_errors: bool = False,
                  out: Any = None) -> tuple:
    """Bunch-Kaufman ``LDL^T`` of a symmetric matrix: ``(LD, pivots, info)`` (LAPACK sytrf).

    Only the lower triangle of ``A`` is read; ``pivots`` follow LAPACK's
    convention (negative entries mark 2x2 blocks).  Not differentiable (as in
    PyTorch).
    """
    op = "torch.linalg.ldl_factor_ex"
    _matrix(A, op, square=True)
    L = _lapack()
    batch = tuple(A.shape[:-2])
    n = A.shape[-1]

    def run(a):
        buf = L.fortran(a)
        piv = core.empty(buf.shape[0], n, dtype=core.int32)
        infos = L.sytrf(buf, piv, "L", hermitian)
        holder.append((piv.reshape(*batch, n), infos))
        return L.matrix(buf, batch).tril()

    holder = []
    LD = _recorded("linalg_ldl_factor_ex", run, (A,))
    piv, infos = holder[0]
    if check_errors:
        _raise_ldl(infos, A.dim() > 2)
    return _out(out, _result("linalg_ldl_factor_ex", LD, piv, _info_tensor(infos, batch)))


def _raise_ldl(infos: list, batched: bool) -> None:
    _raise_info("torch.linalg.ldl_factor", infos, batched,
                lambda i: f"The factorization could not be completed because the input is "
                f"singular (D[{i},{i}] is exactly zero).")


def ldl_factor(A: Tensor, *, hermitian: bool = False, out: Any = None) -> tuple:
    """``LDL^T`` factorization ``(LD, pivots)``; :class:`LinAlgError` when ``D`` is singular."""
    LD, piv, info = ldl_factor_ex(A, hermitian=hermitian)
    _raise_ldl(info.reshape(-1).tolist(), A.dim() > 2)
    return _out(out, _result("linalg_ldl_factor", LD, piv))


def ldl_solve(LD: Tensor, pivots: Tensor, B: Tensor, *, hermitian: bool = False,
              out: Any = None) -> Tensor:
    """Solve ``A X = B`` from :func:`ldl_factor`'s output (LAPACK sytrs)."""
    op = "torch.linalg.ldl_solve"
    _matrix(LD, op, "LD", square=True)
    _matrix(B, op, "B")
    _same_dtype(LD, B, op)
    n = LD.shape[-1]
    if B.shape[-2] != n:
        raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation AX = B "
                           f"({n}x{n} and {B.shape[-2]}x{B.shape[-1]})")
    L = _lapack()
    LDb, Bb, batch = _broadcast_batch(LD, B)
    a = L.fortran(LDb)
    b = L.fortran(Bb)
    p = core.empty(*batch, n, dtype=core.int32)
    p.copy_(pivots.expand(*batch, n))
    L.sytrs(a, p.reshape(a.shape[0], n), b, "L", hermitian)
    return _out(out, L.matrix(b, batch))


# ---------------------------------------------------------------------------
# QR and Householder

def _geqrf_raw(A: Tensor) -> tuple:
    L = _lapack()
    buf = L.fortran(A)
    tau = core.empty(buf.shape[0], min(A.shape[-2], A.shape[-1]), dtype=A.dtype)
    L.geqrf(buf, tau)
    return buf, tau


def _qr_raw(A: Tensor, mode: str) -> tuple:
    L = _lapack()
    batch = tuple(A.shape[:-2])
    m, n = A.shape[-2], A.shape[-1]
    k = min(m, n)
    buf, tau = _geqrf_raw(A)
    full = L.matrix(buf, batch)
    rrows = m if mode == "complete" else k
    R = full[..., :rrows, :].triu()
    if mode == "r":
        return core.empty(0, dtype=A.dtype), R
    qcols = m if mode == "complete" else k
    qbuf = core.zeros(buf.shape[0], qcols, m, dtype=A.dtype)
    qbuf[:, :k, :] = buf[:, :k, :]
    L.orgqr(qbuf, tau)
    return L.matrix(qbuf, batch), R


def qr(A: Tensor, mode: str = "reduced", *, out: Any = None) -> tuple:
    """QR decomposition ``A = Q R``.

    Parameters
    ----------
    A : Tensor
        ``(*, m, n)`` float32/float64.
    mode : {"reduced", "complete", "r"}
        ``Q`` is ``(m, k)``/``(m, m)``; ``"r"`` returns an empty ``Q``.
    """
    op = "linalg.qr"
    _matrix(A, op)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           f"'reduced' (default), 'r', or 'complete'")
    Q, R = _recorded("linalg_qr", lambda a: _qr_raw(a, mode), (A,), {"mode": mode})
    return _out(out, _result("linalg_qr", Q, R))


def _legacy_qr(input: Tensor, some: bool = True, *, out: Any = None) -> tuple:
    """Legacy ``torch.qr(input, some=True)``; see :func:`qr`."""
    return _out(out, _result("qr", *qr(input, "reduced" if some else "complete")))


def geqrf(input: Tensor, *, out: Any = None) -> tuple:
    """LAPACK's geqrf: ``(a, tau)``, the Householder representation of the QR factorization."""
    _matrix(input, "geqrf", "input")
    buf, tau = _geqrf_raw(input.detach())
    batch = tuple(input.shape[:-2])
    return _out(out, _result("geqrf", _lapack().matrix(buf, batch),
                              tau.reshape(*batch, tau.shape[-1])))


def householder_product(A: Tensor, tau: Tensor, *, out: Any = None) -> Tensor:
    """The first ``n`` columns of the product of Householder reflectors (LAPACK orgqr).

    Parameters
    ----------
    A : Tensor
        ``(*, m, n)`` with ``m >= n``; column ``i`` below the diagonal holds reflector ``i``.
    tau : Tensor
        ``(*, k)`` scale factors, ``k <= n``.
    """
    op = "torch.linalg.householder_product"
    _matrix(A, op, "input")
    _tensor(tau, op, "tau")
    _same_dtype(A, tau, op, "tau")
    m, n = A.shape[-2], A.shape[-1]
    if m < n:
        raise RuntimeError(f"{op}: input.shape[-2] must be greater than or equal to "
                           f"input.shape[-1]")
    if tau.dim() < 1 or tau.shape[-1] > n:
        raise RuntimeError(f"{op}: input.shape[-1] must be greater than or equal to "
                           f"tau.shape[-1]")
    if tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise RuntimeError(f"{op}: Expected batch dimensions of tau to be equal to "
                           f"input.shape[:-2], but got {tuple(tau.shape[:-1])}")
    L = _lapack()

    def run(a, t):
        buf = L.fortran(a)
        tt = core.empty(buf.shape[0], t.shape[-1], dtype=t.dtype)
        tt.copy_(t.reshape(buf.shape[0], t.shape[-1]))
        L.orgqr(buf, tt)
        return L.matrix(buf, tuple(a.shape[:-2]))

    if _needs_grad(A, tau):
        return _out(out, _householder_composite(A, tau))
    return _out(out, run(A, tau))


def _householder_composite(A: Tensor, tau: Tensor) -> Tensor:
    """``H_1 ... H_k`` (first n columns) from ember ops, so that autograd flows through it."""
    m, n = A.shape[-2], A.shape[-1]
    V = A.tril(-1) + ember.eye(m, n, dtype=A.dtype)
    Q = ember.eye(m, dtype=A.dtype).expand(*A.shape[:-2], m, m)
    for i in range(tau.shape[-1]):
        v = V[..., :, i:i + 1]
        Q = Q - (Q @ v) * tau[..., i:i + 1].unsqueeze(-1) * _mH(v)
    return Q[..., :, :n]


def ormqr(input: Tensor, tau: Tensor, other: Tensor, left: bool = True, transpose: bool = False,
          *, out: Any = None) -> Tensor:
    """Multiply ``other`` by the ``Q`` of :func:`geqrf`'s ``(input, tau)`` (LAPACK ormqr)."""
    op = "torch.ormqr"
    _matrix(input, op, "input")
    _matrix(other, op, "other")
    L = _lapack()
    batch = tuple(other.shape[:-2])
    a = L.fortran(input.detach().expand(*batch, *input.shape[-2:]))
    t = core.empty(a.shape[0], tau.shape[-1], dtype=tau.dtype)
    t.copy_(tau.detach().expand(*batch, tau.shape[-1]).reshape(a.shape[0], tau.shape[-1]))
    c = L.fortran(other.detach())
    L.ormqr(a, t, c, "L" if left else "R", "T" if transpose else "N")
    return _out(out, L.matrix(c, batch))


# ---------------------------------------------------------------------------
# symmetric eigen-decomposition and SVD

def _check_uplo(UPLO: str) -> None:
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")


def _eigh_raw(A: Tensor, UPLO: str, vectors: bool) -> tuple:
    L = _lapack()
    batch = tuple(A.shape[:-2])
    n = A.shape[-1]
    buf = L.fortran(A)
    w = core.empty(buf.shape[0], n, dtype=A.dtype.to_real())
    infos = L.syevd(buf, w, vectors, UPLO)
    _raise_info("linalg.eigh", infos, len(batch) > 0,
                lambda i: "The algorithm failed to converge because the input matrix is "
                f"ill-conditioned or has too many repeated eigenvalues (error code: {i}).")
    return w.reshape(*batch, n), (L.matrix(buf, batch) if vectors else None)


def eigh(A: Tensor, UPLO: str = "L", *, out: Any = None) -> tuple:
    """Eigenvalues (ascending) and eigenvectors of a symmetric matrix.

    Parameters
    ----------
    A : Tensor
        ``(*, n, n)``; only the ``UPLO`` triangle is read.
    UPLO : {"L", "U"}
    """
    _matrix(A, "linalg.eigh", square=True)
    _check_uplo(UPLO)
    w, V = _recorded("linalg_eigh", lambda a: _eigh_raw(a, UPLO, True), (A,))
    return _out(out, _result("linalg_eigh", w, V))


def eigvalsh(A: Tensor, UPLO: str = "L", *, out: Any = None) -> Tensor:
    """Eigenvalues (ascending) of a symmetric matrix."""
    _matrix(A, "linalg.eigvalsh", square=True)
    _check_uplo(UPLO)
    if _needs_grad(A):
        return _out(out, eigh(A, UPLO).eigenvalues)
    return _out(out, _eigh_raw(A, UPLO, False)[0])


def _needs_grad(*ts) -> bool:
    return core.is_grad_enabled() and any(isinstance(t, Tensor) and t.requires_grad for t in ts)


def _svd_raw(A: Tensor, full_matrices: bool, compute_uv: bool = True) -> tuple:
    L = _lapack()
    batch = tuple(A.shape[:-2])
    m, n = A.shape[-2], A.shape[-1]
    k = min(m, n)
    buf = L.fortran(A)
    B = buf.shape[0]
    s = core.empty(B, k, dtype=A.dtype.to_real())
    if not compute_uv:
        infos = L.gesdd(buf, s, None, None, "N")
        u = vt = None
    else:
        ucols = m if full_matrices else k
        vrows = n if full_matrices else k
        u = core.empty(B, ucols, m, dtype=A.dtype)
        vt = core.empty(B, n, vrows, dtype=A.dtype)
        infos = L.gesdd(buf, s, u, vt, "A" if full_matrices else "S")
    if any(infos):
        finite = A.isfinite().reshape(-1, m * n).all(-1).tolist() if A.numel() else []
        infos = [(-1 if i and not finite[b] else i) for b, i in enumerate(infos)]
    _raise_info("linalg.svd", infos, len(batch) > 0,
                lambda i: "The algorithm failed to converge because the input matrix "
                "contained non-finite values." if i < 0 else "The algorithm failed to "
                "converge because the input matrix is ill-conditioned or has too many "
                f"repeated singular values (error code: {i}).")
    S = s.reshape(*batch, k)
    if not compute_uv:
        return S
    return L.matrix(u, batch), S, L.matrix(vt, batch)


def svd(A: Tensor, full_matrices: bool = True, *, driver: str | None = None,
        out: Any = None) -> tuple:
    """Singular value decomposition ``A = U diag(S) Vh`` (LAPACK gesdd).

    Parameters
    ----------
    A : Tensor
        ``(*, m, n)`` float32/float64.
    full_matrices : bool
        ``U`` is ``(m, m)`` and ``Vh`` ``(n, n)`` (True) or ``(m, k)``/``(k, n)``.
    driver : None
        Only for CUDA in PyTorch; must be None.
    """
    _matrix(A, "linalg.svd")
    if driver is not None:
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on "
                           "CUDA inputs with cuSOLVER backend.")
    U, S, Vh = _recorded("linalg_svd", lambda a: _svd_raw(a, full_matrices), (A,),
                         {"full_matrices": full_matrices})
    return _out(out, _result("linalg_svd", U, S, Vh))


def svdvals(A: Tensor, *, driver: str | None = None, out: Any = None) -> Tensor:
    """Singular values (descending) of a (batch of) matrix."""
    _matrix(A, "linalg.svdvals")
    if _needs_grad(A):
        return _out(out, svd(A, full_matrices=False, driver=driver).S)
    return _out(out, _svd_raw(A, False, compute_uv=False))


def _legacy_svd(input: Tensor, some: bool = True, compute_uv: bool = True, *,
                out: Any = None) -> tuple:
    """Legacy ``torch.svd``: ``(U, S, V)`` with ``V`` (not ``V^T``)."""
    _matrix(input, "svd", "input")
    if not compute_uv:
        m, n = input.shape[-2], input.shape[-1]
        S = svdvals(input)
        b = tuple(input.shape[:-2])
        return _out(out, _result("svd", core.zeros(*b, m, m, dtype=input.dtype), S,
                                       core.zeros(*b, n, n, dtype=input.dtype)))
    U, S, Vh = svd(input, full_matrices=not some)
    return _out(out, _result("svd", U, S, _mH(Vh)))


# ---------------------------------------------------------------------------
# least squares, pseudo-inverse, rank, condition number

_LSTSQ_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def lstsq(A: Tensor, B: Tensor, rcond: float | None = None, *, driver: str | None = None,
          out: Any = None) -> tuple:
    """Least-squares solution of ``A X = B``: ``(solution, residuals, rank, singular_values)``.

    Parameters
    ----------
    A : Tensor
        ``(*, m, n)`` float32/float64.
    B : Tensor
        ``(*, m, k)`` or ``(*, m)``.
    rcond : float, optional
        Singular values below ``rcond * max(S)`` count as zero (default
        ``eps * max(m, n)``).
    driver : {"gelsy" (default), "gelsd", "gelss", "gels"}
        The LAPACK driver; ``gels`` assumes full rank.
    """
    op = "torch.linalg.lstsq"
    _matrix(A, "linalg.lstsq", "A")
    _tensor(B, op, "B")
    _floating(B, op)
    _same_dtype(A, B, "linalg.lstsq")
    driver = "gelsy" if driver is None else driver
    if driver not in _LSTSQ_DRIVERS:
        raise RuntimeError(f"{op}: parameter `driver` should be one of (gels, gelsy, gelsd, "
                           f"gelss)")
    vector = B.dim() == A.dim() - 1
    Bm = B.unsqueeze(-1) if vector else B
    if Bm.dim() < 2:
        raise RuntimeError(f"{op}: input.dim() must be greater or equal to other.dim() and "
                           f"(input.dim() - other.dim()) <= 1")
    m, n = A.shape[-2], A.shape[-1]
    if Bm.shape[-2] != m:
        raise RuntimeError(f"{op}: input.size(-2) should match other.size(-2)")
    if rcond is None:
        rcond = ember.finfo(A.dtype.to_real()).eps * max(m, n)
    holder = []

    def run(a, b):
        sol, extra = _lstsq_raw(a, b.unsqueeze(-1) if vector else b, rcond, driver)
        holder.append(extra)
        return sol.squeeze(-1) if vector else sol

    X = _recorded("linalg_lstsq", run, (A, B), {"vector": vector})
    residuals, rank, sv = holder[0]
    if vector and residuals.numel():
        residuals = residuals.squeeze(-1)
    return _out(out, _result("linalg_lstsq", X, residuals, rank, sv))


def _lstsq_raw(A: Tensor, B: Tensor, rcond: float, driver: str) -> tuple:
    L = _lapack()
    A, B, batch = _broadcast_batch(A, B)
    m, n, k = A.shape[-2], A.shape[-1], B.shape[-1]
    a = L.fortran(A)
    nb = a.shape[0]
    ldb = max(m, n)
    b = core.zeros(nb, k, ldb, dtype=A.dtype)
    if m:
        b[:, :, :m] = L.fortran(B)
    rank = core.zeros(nb, dtype=core.int64)
    sv = core.empty(0, dtype=A.dtype.to_real())
    if driver == "gels":
        infos = L.gels(a, b)
        _raise_info("torch.linalg.lstsq", infos, len(batch) > 0,
                    lambda i: f"The least squares solution could not be computed because the "
                    f"input matrix does not have full rank (error code: {i}).")
    elif driver == "gelsy":
        L.gelsy(a, b, rcond, rank)
    else:
        s = core.empty(nb, min(m, n), dtype=A.dtype.to_real())
        L.gelsd(a, b, rcond, rank, s, driver)
        sv = s.reshape(*batch, min(m, n))
    full = L.matrix(b, batch)
    sol = full[..., :n, :]
    residuals = core.empty(0, dtype=A.dtype.to_real())
    if m > n and driver != "gelsy":
        if driver == "gels" or bool((rank == n).all()):
            residuals = (full[..., n:, :].abs() ** 2).sum(-2)
    rank = rank.reshape(batch) if driver != "gels" else core.empty(0, dtype=core.int64)
    return sol, (residuals, rank, sv)


def _tolerances(S: Tensor, m: int, n: int, atol, rtol, op: str) -> Tensor:
    """``max(atol, rtol * max(S))`` per matrix, keepdim over the last axis."""
    eps = ember.finfo(S.dtype).eps
    if rtol is None:
        rtol = 0.0 if (atol is not None and not isinstance(atol, Tensor) and atol > 0) \
            else eps * max(m, n)
    if atol is None:
        atol = 0.0
    smax = S.amax(-1, keepdim=True) if S.shape[-1] else core.zeros(*S.shape[:-1], 1,
                                                                   dtype=S.dtype)
    at = atol.unsqueeze(-1) if isinstance(atol, Tensor) else atol
    rt = rtol.unsqueeze(-1) if isinstance(rtol, Tensor) else rtol
    tol = smax * rt
    return ember.maximum(tol, at * core.ones((), dtype=S.dtype)) if isinstance(at, Tensor) \
        else tol.clamp(min=at)


def pinv(A: Tensor, *, atol: Any = None, rtol: Any = None, hermitian: bool = False,
         out: Any = None) -> Tensor:
    """Moore-Penrose pseudo-inverse by SVD (or ``eigh`` when ``hermitian``).

    Singular values at or below ``max(atol, rtol * max(S))`` are treated as zero;
    ``rtol`` defaults to ``eps * max(m, n)`` when ``atol`` is not positive.
    """
    _matrix(A, "linalg.pinv")
    m, n = A.shape[-2], A.shape[-1]

    def run(a):
        if hermitian:
            w, V = _eigh_raw(a, "L", True)
            tol = _tolerances(w.abs(), m, n, atol, rtol, "linalg.pinv")
            keep = w.abs() > tol
            winv = ember.where(keep, 1.0 / ember.where(keep, w, 1.0), 0.0)
            return (V * winv.unsqueeze(-2)) @ _mH(V)
        U, S, Vh = _svd_raw(a, False)
        tol = _tolerances(S, m, n, atol, rtol, "linalg.pinv")
        keep = S > tol
        sinv = ember.where(keep, 1.0 / ember.where(keep, S, 1.0), 0.0)
        return (_mH(Vh) * sinv.unsqueeze(-2)) @ _mH(U)

    return _out(out, _recorded("linalg_pinv", run, (A,)))


def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """Legacy ``torch.pinverse(input, rcond)``: :func:`pinv` with ``rtol=rcond``."""
    return pinv(input, rtol=rcond)


def matrix_rank(A: Tensor, *, atol: Any = None, rtol: Any = None, hermitian: bool = False,
                tol: Any = None, out: Any = None) -> Tensor:
    """Numerical rank: the number of singular values above ``max(atol, rtol * max(S))``."""
    _matrix(A, "torch.linalg.matrix_rank")
    if tol is not None:
        atol, rtol = tol, 0.0
    m, n = A.shape[-2], A.shape[-1]
    with ember.no_grad():
        S = eigvalsh(A).abs() if hermitian else svdvals(A)
        t = _tolerances(S, m, n, atol, rtol, "linalg.matrix_rank")
        return _out(out, (S > t).sum(-1))


def cond(A: Tensor, p: Any = None, *, out: Any = None) -> Tensor:
    """Condition number ``norm(A, p) * norm(inv(A), p)`` (ratio of singular values for 2/-2)."""
    _matrix(A, "linalg.cond")
    if p is None or p in (2, -2):
        S = svdvals(A)
        big, small = S[..., 0], S[..., -1]
        return _out(out, small / big if p == -2 else big / small)
    if p not in ("fro", "nuc", 1, -1, math.inf, -math.inf):
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.cond(ord={p}): A must be batches of square matrices, but "
                           f"they are {A.shape[-2]} by {A.shape[-1]} matrices")
    Ai, info = inv_ex(A)
    r = matrix_norm(A, p) * matrix_norm(Ai, p)
    return _out(out, ember.where(info > 0, math.inf, r))


# ---------------------------------------------------------------------------
# norms (ember's own reductions)

def vector_norm(x: Tensor, ord: float = 2, dim: Any = None, keepdim: bool = False, *,
                dtype: Any = None, out: Any = None) -> Tensor:
    """Vector ``ord``-norm over ``dim`` (all elements when None)."""
    op = "linalg.vector_norm"
    _tensor(x, op, "x")
    if not (x.is_floating_point() or x.is_complex() or dtype is not None):
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got "
                           f"{_scalar_name(x.dtype)}")
    return _reduce.vector_norm(x, ord, dim, keepdim, dtype=dtype, out=out)


def matrix_norm(A: Tensor, ord: Any = "fro", dim: tuple = (-2, -1), keepdim: bool = False, *,
                dtype: Any = None, out: Any = None) -> Tensor:
    """Matrix norm over the two dims ``dim``: "fro", "nuc", inf, -inf, 1, -1, 2, -2."""
    op = "linalg.matrix_norm"
    _tensor(A, op, "A")
    if A.dim() < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    if dtype is not None:
        A = A.to(dtype)
    _floating(A, op)
    dim = tuple(dim)
    if len(dim) != 2:
        raise RuntimeError(f"{op}: dim must be a 2-tuple. Got {' '.join(map(str, dim))}")
    nd = A.dim()
    d0, d1 = (d % nd for d in dim)
    if d0 == d1:
        raise RuntimeError(f"{op}: dims must be different. Got ({dim[0]}, {dim[1]})")
    if ord == "fro":
        r = _reduce.vector_norm(A, 2, (d0, d1), keepdim)
    elif ord == "nuc" or ord in (2, -2):
        S = svdvals(A.movedim((d0, d1), (-2, -1)))
        r = S.sum(-1) if ord == "nuc" else (S.amax(-1) if ord == 2 else S.amin(-1))
        if keepdim:
            for d in sorted((d0, d1)):
                r = r.unsqueeze(d)
    elif ord in (1, -1, math.inf, -math.inf):
        sum_dim, red_dim = (d0, d1) if ord in (1, -1) else (d1, d0)
        s = A.abs().sum(sum_dim, keepdim=True)
        r = s.amax(red_dim, keepdim=True) if ord > 0 else s.amin(red_dim, keepdim=True)
        if not keepdim:
            r = r.squeeze(max(d0, d1)).squeeze(min(d0, d1))
    else:
        raise RuntimeError(f"{op}: Order {ord} not supported.")
    return _out(out, r)


def norm(A: Tensor, ord: Any = None, dim: Any = None, keepdim: bool = False, *,
         dtype: Any = None, out: Any = None) -> Tensor:
    """Vector or matrix norm, as ``torch.linalg.norm`` decides from ``ord`` and ``dim``."""
    op = "linalg.norm"
    _tensor(A, op, "A")
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None and len(dim) == 2:
        return matrix_norm(A, "fro" if ord is None else ord, dim, keepdim, dtype=dtype, out=out)
    if isinstance(ord, str) or (ord is not None and dim is None and A.dim() == 2):
        if dim is None and A.dim() != 2:
            raise RuntimeError(f"{op}: If dim is not specified but ord is, the input must be "
                               f"1D or 2D. Got {A.dim()}D.")
        return matrix_norm(A, "fro" if ord is None else ord, (-2, -1), keepdim, dtype=dtype,
                           out=out)
    if ord is not None and dim is None and A.dim() != 1:
        raise RuntimeError(f"{op}: If dim is not specified but ord is, the input must be 1D "
                           f"or 2D. Got {A.dim()}D.")
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype, out=out)


# ---------------------------------------------------------------------------
# products and matrix functions

def matrix_power(A: Tensor, n: int, *, out: Any = None) -> Tensor:
    """``A`` to the integer power ``n`` (``n < 0`` inverts first), by repeated squaring."""
    _tensor(A, "linalg.matrix_power", "A")
    if A.dim() < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but "
                           f"they are {A.shape[-2] if A.dim() > 1 else 1} by "
                           f"{A.shape[-1] if A.dim() else 1} matrices")
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"matrix_power(): argument 'n' must be int, not {type(n).__name__}")
    if n == 0:
        k = A.shape[-1]
        return _out(out, ember.eye(k, dtype=A.dtype, device=A.device).expand(*A.shape).clone())
    if n < 0:
        A = inv(A)
        n = -n
    result = None
    base = A
    while n:
        if n & 1:
            result = base if result is None else result @ base
        n >>= 1
        if n:
            base = base @ base
    return _out(out, result)


# Pade 13 coefficients and the 1-norm bound up to which no scaling is needed (Higham 2005)
_PADE13 = (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800.,
           129060195264000., 10559470521600., 670442572800., 33522128640., 1323241920.,
           40840800., 960960., 16380., 182., 1.)
_THETA13 = 5.371920351148152


def matrix_exp(A: Tensor) -> Tensor:
    """Matrix exponential by scaling and squaring with a degree-13 Pade approximant."""
    _matrix(A, "linalg.matrix_exp", square=True)
    n = A.shape[-1]
    if A.numel() == 0:
        return A.clone()
    with ember.no_grad():
        norm1 = float(A.abs().sum(-2).amax().item())
    s = max(0, int(math.ceil(math.log2(norm1 / _THETA13)))) if norm1 > _THETA13 else 0
    X = A / (2.0 ** s) if s else A
    b = _PADE13
    eye = ember.eye(n, dtype=A.dtype, device=A.device)
    X2 = X @ X
    X4 = X2 @ X2
    X6 = X4 @ X2
    U = X @ (X6 @ (b[13] * X6 + b[11] * X4 + b[9] * X2) + b[7] * X6 + b[5] * X4 + b[3] * X2
             + b[1] * eye)
    V = X6 @ (b[12] * X6 + b[10] * X4 + b[8] * X2) + b[6] * X6 + b[4] * X4 + b[2] * X2 \
        + b[0] * eye
    R = solve(V - U, V + U)
    for _ in range(s):
        R = R @ R
    return R


def multi_dot(tensors: Sequence, *, out: Any = None) -> Tensor:
    """Product of a chain of matrices in the cheapest order (first/last may be 1-D)."""
    ts = list(tensors)
    if len(ts) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(ts)}")
    for i, t in enumerate(ts):
        _tensor(t, "multi_dot", f"tensors[{i}]")
        want = (1, 2) if i in (0, len(ts) - 1) else (2,)
        if t.dim() not in want:
            which = "first" if i == 0 else ("last" if i == len(ts) - 1 else None)
            if which:
                raise RuntimeError(f"multi_dot(): the {which} tensor must be 1D or 2D but got "
                                   f"{t.dim()}D")
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.dim()}D")
    first_vec, last_vec = ts[0].dim() == 1, ts[-1].dim() == 1
    ms = [ts[0].unsqueeze(0) if first_vec else ts[0]] + ts[1:-1] + \
        [ts[-1].unsqueeze(-1) if last_vec else ts[-1]]
    for i in range(len(ms) - 1):
        if ms[i].shape[1] != ms[i + 1].shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes "
                               f"{tuple(ts[i].shape)} and {tuple(ts[i + 1].shape)} cannot be "
                               f"multiplied")
    r = _chain(ms)
    if first_vec:
        r = r.squeeze(0)
    if last_vec:
        r = r.squeeze(-1)
    return _out(out, r)


def _chain(ms: list) -> Tensor:
    """Matrix-chain product in the order of least scalar multiplications."""
    k = len(ms)
    if k <= 2:
        return ms[0] @ ms[1] if k == 2 else ms[0]
    dims = [ms[0].shape[0]] + [m.shape[1] for m in ms]
    cost = [[0] * k for _ in range(k)]
    split = [[0] * k for _ in range(k)]
    for length in range(1, k):
        for i in range(k - length):
            j = i + length
            cost[i][j] = math.inf
            for s in range(i, j):
                c = cost[i][s] + cost[s + 1][j] + dims[i] * dims[s + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, s

    def build(i, j):
        if i == j:
            return ms[i]
        s = split[i][j]
        return build(i, s) @ build(s + 1, j)

    return build(0, k - 1)


def cross(input: Tensor, other: Tensor, *, dim: int = -1, out: Any = None) -> Tensor:
    """Cross product of 3-vectors along ``dim`` (operands broadcast)."""
    _tensor(input, "linalg.cross", "input")
    _tensor(other, "linalg.cross", "other")
    if input.dim() != other.dim():
        raise RuntimeError(f"linalg.cross: inputs must have the same number of dimensions. "
                           f"Got {input.dim()} and {other.dim()}")
    if input.shape[dim] != 3 or other.shape[dim] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                           f"{input.shape[dim]} and {other.shape[dim]}")
    a1, a2 = ember.roll(input, -1, dim), ember.roll(input, -2, dim)
    b1, b2 = ember.roll(other, -1, dim), ember.roll(other, -2, dim)
    return _out(out, a1 * b2 - a2 * b1)


def _legacy_cross(input: Tensor, other: Tensor, dim: int | None = None, *,
                  out: Any = None) -> Tensor:
    """Legacy ``torch.cross``: ``dim`` defaults to the first dimension of size 3."""
    _tensor(input, "cross", "input")
    _tensor(other, "cross", "other")
    if dim is None:
        shape = core.broadcast_shapes(tuple(input.shape), tuple(other.shape))
        dim = next((i for i, s in enumerate(shape) if s == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
        input = input.expand(*shape)
        other = other.expand(*shape)
    return cross(input, other, dim=dim, out=out)


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1, out: Any = None) -> Tensor:
    """Dot product of vectors along ``dim`` (operands broadcast): ``sum(conj(x) * y)``."""
    _tensor(x, "linalg.vecdot", "x")
    _tensor(y, "linalg.vecdot", "y")
    return _out(out, ((x.conj() if x.is_complex() else x) * y).sum(dim))


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """The diagonal of the matrices over ``dim1``/``dim2`` (a view)."""
    _tensor(A, "linalg.diagonal", "A")
    return A.diagonal(offset, dim1, dim2)


def _legacy_diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """``torch.diagonal(input, offset=0, dim1=0, dim2=1)`` (a view)."""
    return input.diagonal(offset, dim1, dim2)


def vander(x: Tensor, *, N: int | None = None) -> Tensor:
    """Vandermonde matrix with increasing powers ``x**0 .. x**(N-1)`` in the last dim."""
    _tensor(x, "linalg.vander", "x")
    if x.dim() < 1:
        raise RuntimeError("linalg.vander: x must have at least one dimension.")
    n = x.shape[-1] if N is None else N
    if n <= 1:
        if n == 1:
            return core.ones(*x.shape, 1, dtype=x.dtype, device=x.device)
        raise RuntimeError("N must be greater than 1.")
    ones = core.ones(*x.shape, 1, dtype=x.dtype, device=x.device)
    return ember.cat([ones, x.unsqueeze(-1).expand(*x.shape, n - 1)], -1).cumprod(-1)


def _legacy_vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:
    """``torch.vander(x, N=None, increasing=False)`` for a 1-D ``x``."""
    _tensor(x, "vander", "x")
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    if N is not None and N < 0:
        raise RuntimeError("N must be non-negative.")
    if N == 0:
        return core.empty(x.shape[0], 0, dtype=x.dtype, device=x.device)
    v = vander(x, N=N if N is not None else x.shape[0]) if (N or x.shape[0]) > 1 else \
        core.ones(x.shape[0], 1, dtype=x.dtype, device=x.device)
    return v if increasing else v.flip(-1)


def matmul(input: Tensor, other: Tensor, *, out: Any = None) -> Tensor:
    """Matrix product with broadcasting (``ember.matmul``)."""
    return ember.matmul(input, other, out=out)


def tensorinv(A: Tensor, ind: int = 2, *, out: Any = None) -> Tensor:
    """Inverse of ``A`` as a tensor map: ``tensordot(tensorinv(A), A, ind)`` is the identity."""
    _tensor(A, "linalg.tensorinv", "A")
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    left, right = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    p, q = _prod(left), _prod(right)
    if p != q:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {q} != {p}")
    return _out(out, inv(A.reshape(p, q)).reshape(*right, *left))


def tensorsolve(A: Tensor, B: Tensor, dims: Sequence | None = None, *,
                out: Any = None) -> Tensor:
    """Solve ``tensordot(A, X, X.ndim) = B`` for ``X``."""
    _tensor(A, "linalg.tensorsolve", "A")
    _tensor(B, "linalg.tensorsolve", "B")
    if dims is not None:
        nd = A.dim()
        src = [d % nd for d in dims]
        A = A.movedim(src, list(range(nd - len(src), nd)))
    rshape = tuple(A.shape[B.dim():])
    p, q = B.numel(), _prod(rshape)
    if p != q:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(result_shape) == "
                           f"prod(other.shape), but got {q} != {p}")
    return _out(out, solve(A.reshape(p, q), B.reshape(p)).reshape(rshape))


def _out(out: Any, result: Any) -> Any:
    """Copy ``result`` into ``out`` (a tensor or a tuple of tensors) when given."""
    if out is None:
        return result
    if isinstance(result, tuple):
        for o, r in zip(out, result):
            o.resize_(r.shape) if hasattr(o, "resize_") and tuple(o.shape) != tuple(r.shape) \
                else None
            o.copy_(r)
        return type(result)(*out) if hasattr(result, "_fields") else tuple(out)
    if tuple(out.shape) != tuple(result.shape):
        raise RuntimeError(f"Expected out tensor to have shape {tuple(result.shape)}, but got "
                           f"{tuple(out.shape)}")
    out.copy_(result)
    return out


# ---------------------------------------------------------------------------
# legacy entry points (ember/_linalg_legacy.py binds them as ember.* and Tensor methods)

def _lu_legacy(A: Tensor, pivot: bool = True, get_infos: bool = False, out: Any = None) -> tuple:
    """Legacy ``torch.lu``: ``(A_LU, pivots)`` or ``(A_LU, pivots, infos)``."""
    LU, piv, info = lu_factor_ex(A, pivot=pivot)
    if not get_infos:
        _raise_info("torch.lu", info.reshape(-1).tolist(), A.dim() > 2,
                    lambda i: f"U[{i},{i}] is zero and using it on lu_solve would result in a "
                    "division by zero.", RuntimeError)
    r = (LU, piv, info) if get_infos else (LU, piv)
    return _out(out, r)


def _lu_solve_legacy(b: Tensor, LU_data: Tensor, LU_pivots: Tensor, *, out: Any = None) -> Tensor:
    """Legacy ``torch.lu_solve(b, LU_data, LU_pivots)``; see :func:`lu_solve`."""
    return lu_solve(LU_data, LU_pivots, b, out=out)


# ---------------------------------------------------------------------------
# tensors on a device: LAPACK is a host library, so a factorization of device
# tensors runs on host copies and its results go back to that device, as torch
# returns them (both copies are recorded, so gradients flow through them)

def _to_host(x: Any, devices: list) -> Any:
    """``x`` with each tensor in it (also inside lists and tuples) on the host; the
    devices of the tensors met go into ``devices``."""
    if isinstance(x, Tensor):
        devices.append(x.device)
        return x.cpu() if x.device.type != "cpu" else x
    if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
        return type(x)(_to_host(v, devices) for v in x)
    return x


def _to_device(x: Any, device: Any) -> Any:
    if isinstance(x, Tensor):
        return x.to(device)
    if isinstance(x, tuple):
        moved = [_to_device(v, device) for v in x]
        return type(x)(*moved) if hasattr(x, "_fields") else tuple(moved)
    return x


def _on_host(fn):
    import functools

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        devices: list = []
        hargs = _to_host(args, devices)
        out = kwargs.pop("out", None)
        hkw = {k: _to_host(v, devices) for k, v in kwargs.items()}
        dev = next((d for d in devices if d.type != "cpu"), None)
        if dev is None:
            return fn(*args, out=out, **kwargs) if out is not None else fn(*args, **kwargs)
        other = next((d for d in devices if d != dev), None)
        if other is not None:
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at "
                               f"least two devices, {dev} and {other}! (in {fn.__name__})")
        return _out(out, _to_device(fn(*hargs, **hkw), dev))
    return wrapper


for _name in ("cholesky", "cholesky_ex", "cond", "det", "eigh", "eigvalsh",
              "householder_product", "inv", "inv_ex", "ldl_factor", "ldl_factor_ex", "ldl_solve",
              "lstsq", "lu", "lu_factor", "lu_factor_ex", "lu_solve", "lu_unpack", "matrix_rank",
              "pinv", "qr", "slogdet", "solve", "solve_ex", "solve_triangular", "svd", "svdvals",
              "logdet", "cholesky_solve", "cholesky_inverse", "triangular_solve", "geqrf",
              "ormqr", "_legacy_slogdet", "_legacy_svd", "_legacy_qr", "_legacy_cholesky",
              "_lu_legacy", "_lu_solve_legacy"):
    globals()[_name] = _on_host(globals()[_name])
del _name
