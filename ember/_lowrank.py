"""Randomized low-rank decompositions (Halko, Martinsson and Tropp, 2009):
``svd_lowrank`` and ``pca_lowrank``, composed from matmul, QR and a small SVD."""
from __future__ import annotations

import ember

__all__ = ["svd_lowrank", "pca_lowrank"]


def _basis(A, q, niter, M):
    """An orthonormal ``(..., m, q)`` basis approximating the range of ``A - M``, sharpened
    by ``niter`` subspace iterations."""
    R = ember.randn(*A.shape[:-2], A.shape[-1], q, dtype=A.dtype, device=A.device)
    X = A @ R if M is None else A @ R - M @ R
    Q = ember.linalg.qr(X).Q
    for _ in range(niter):
        AhQ = A.mH @ Q if M is None else A.mH @ Q - M.mH @ Q
        Q = ember.linalg.qr(AhQ).Q
        X = A @ Q if M is None else A @ Q - M @ Q
        Q = ember.linalg.qr(X).Q
    return Q


def svd_lowrank(A, q: int | None = 6, niter: int = 2, M=None):
    """``(U, S, V)`` with ``A - M ~= U diag(S) V^T`` of rank ``q`` (batches too).

    Parameters
    ----------
    A : Tensor
        ``(..., m, n)``.
    q : int, optional
        The rank sought (6 by default; at most ``min(m, n)``).
    niter : int
        Subspace iterations (more: more accurate for slowly decaying spectra).
    M : Tensor, optional
        Subtracted from ``A`` (broadcast), e.g. a row of column means.
    """
    if not isinstance(A, ember.Tensor) or A.dim() < 2:
        raise RuntimeError("svd_lowrank: expected A to be a tensor of at least 2 dimensions")
    if not (A.dtype.is_floating_point or A.dtype.is_complex):
        raise RuntimeError(f"svd_lowrank: expected a floating point tensor, got {A.dtype}")
    m, n = A.shape[-2], A.shape[-1]
    q = 6 if q is None else q
    if not 0 <= q <= min(m, n):
        raise ValueError(f"svd_lowrank: q(={q}) must be non-negative integer and not greater "
                         f"than min(m, n)={min(m, n)}")
    if niter < 0:
        raise ValueError(f"svd_lowrank: niter(={niter}) must be non-negative integer")
    if M is not None:
        M = M.broadcast_to(A.shape)
    if m < n:       # work on the tall transpose
        V, S, U = svd_lowrank(A.mH, q, niter, None if M is None else M.mH)
        return U, S, V
    Q = _basis(A, q, niter, M)
    B = Q.mH @ (A if M is None else A - M)
    U, S, Vh = ember.linalg.svd(B, full_matrices=False)
    return Q @ U, S, Vh.mH


def pca_lowrank(A, q: int | None = None, center: bool = True, niter: int = 2):
    """``(U, S, V)`` of a rank-``q`` PCA of the rows of ``A`` (``(..., m, n)``): the
    low-rank SVD of ``A`` less its column means when ``center``. ``q`` defaults to
    ``min(6, m, n)``; the principal directions are the columns of ``V``."""
    if not isinstance(A, ember.Tensor) or A.dim() < 2:
        raise RuntimeError("pca_lowrank: expected A to be a tensor of at least 2 dimensions")
    m, n = A.shape[-2], A.shape[-1]
    q = min(6, m, n) if q is None else q
    if not 0 <= q <= min(m, n):
        raise ValueError(f"pca_lowrank: q(={q}) must be non-negative integer and not greater "
                         f"than min(m, n)={min(m, n)}")
    if niter < 0:
        raise ValueError(f"pca_lowrank: niter(={niter}) must be non-negative integer")
    if not center:
        return svd_lowrank(A, q, niter)
    return svd_lowrank(A - A.mean(-2, keepdim=True), q, niter)
