"""``linalg.eig`` / ``linalg.eigvals``: eigen-decomposition of general (non-symmetric)
matrices through LAPACK's geev (``scipy-openblas32``, loaded on first use).

Real input gives complex results, as in torch: LAPACK packs a conjugate pair of
eigenvectors into two real columns, unpacked here.  Differentiable as ``linalg_eig``
(torch's formula, ember/autograd/_formulas_linalg.py)."""
from __future__ import annotations

from typing import Any

from ember._C import core
from ember._linalg import (
    _RESULT_FIELDS,
    LinAlgError,
    _needs_grad,
    _on_host,
    _out,
    _raise_info,
    _recorded,
    _result,
    _scalar_name,
)

_RESULT_FIELDS.setdefault("linalg_eig", ("eigenvalues", "eigenvectors"))


def _check(A: Any, op: str):
    if not isinstance(A, core.TensorBase):
        raise TypeError(f"{op}(): argument 'A' must be Tensor, not {type(A).__name__}")
    if A.dim() < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    if A.dtype not in (core.float32, core.float64, core.complex64, core.complex128):
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got "
                           f"{_scalar_name(A.dtype)}")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{op}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")


def _geev(A, vectors: bool, op: str):
    import ember
    from ember import _lapack as L
    batch = tuple(A.shape[:-2])
    n = A.shape[-1]
    buf = L.fortran(A)
    B = buf.shape[0]
    cd = A.dtype if A.dtype.is_complex else A.dtype.to_complex()
    vbuf = core.empty(B, n, n, dtype=A.dtype) if vectors else None
    if A.dtype.is_complex:
        w = core.empty(B, n, dtype=A.dtype)
        infos = L.geev(buf, w, vbuf)
    else:
        wri = core.empty(B, 2, n, dtype=A.dtype)
        infos = L.geev(buf, wri, vbuf)
        w = ember.complex(wri[:, 0], wri[:, 1])
    _raise_info(op, infos, len(batch) > 0,
                lambda i: f"The algorithm failed to converge because the input matrix is "
                f"ill-conditioned or has too many repeated eigenvalues (error code: {i}).")
    w = w.reshape(*batch, n)
    if not vectors:
        return w, None
    V = L.matrix(vbuf, batch)                      # (..., n, n), columns are vectors
    if A.dtype.is_complex:
        return w, V.contiguous()
    wi = ember.imag(w).unsqueeze(-2)
    first, second = wi > 0, wi < 0                 # the two columns of a conjugate pair
    nxt, prv = ember.roll(V, -1, -1), ember.roll(V, 1, -1)
    re = ember.where(second, prv, V)
    im = ember.where(first, nxt, ember.where(second, -V, ember.zeros_like(V)))
    return w, ember.complex(re.contiguous(), im.contiguous()).to(cd)


def eig(A, *, out: Any = None) -> tuple:
    """Eigenvalues and right eigenvectors of square matrices (complex results).

    Parameters
    ----------
    A : Tensor
        ``(*, n, n)`` float or complex.

    Returns
    -------
    (eigenvalues, eigenvectors) : complex tensors ``(*, n)`` and ``(*, n, n)``; each
        eigenvector has unit norm, as LAPACK returns them.
    """
    _check(A, "linalg.eig")
    w, V = _recorded("linalg_eig", lambda a: _geev(a, True, "linalg.eig"), (A,))
    return _out(out, _result("linalg_eig", w, V))


def eigvals(A, *, out: Any = None):
    """Eigenvalues of square matrices (complex), see :func:`eig`."""
    _check(A, "linalg.eigvals")
    if _needs_grad(A):
        return _out(out, eig(A).eigenvalues)
    return _out(out, _geev(A, False, "linalg.eigvals")[0])


__all__ = ["eig", "eigvals", "LinAlgError"]


eig = _on_host(eig)
eigvals = _on_host(eigvals)
