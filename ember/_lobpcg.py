"""``lobpcg``: a few extreme eigenpairs of a symmetric (generalized) eigenproblem
``A x = lambda B x`` by the locally optimal block preconditioned conjugate gradient
method (Knyazev, 2001), each step a Rayleigh-Ritz projection onto ``[X, W, P]`` made
B-orthonormal by SVQB (Stathopoulos and Wu, 2002), which drops the directions that
became dependent instead of failing."""
from __future__ import annotations

import types

import ember

__all__ = ["lobpcg"]

_FEPS = {"float32": 1.2e-07, "float64": 2.23e-16}


def _matmul(M, X):
    return X if M is None else M @ X


def _svqb(S, B, tol):
    """A B-orthonormal basis of the columns of ``S`` (dependent directions dropped)."""
    BS = _matmul(B, S)
    G = S.mT @ BS
    d = G.diagonal().clamp_min(ember.finfo(S.dtype).tiny).rsqrt()
    w, V = ember.linalg.eigh(G * d.unsqueeze(0) * d.unsqueeze(1))
    keep = w > tol * w.max().clamp_min(ember.finfo(S.dtype).tiny)
    V, w = V[:, keep], w[keep]
    return S @ (d.unsqueeze(1) * V * w.rsqrt().unsqueeze(0))


def _lobpcg2d(A, k, B, X, n, iK, niter, tol, largest, tracker):
    m = A.shape[-1]
    X = ember.randn(m, n, dtype=A.dtype, device=A.device) if X is None else X.clone()
    A_norm = ember.linalg.matrix_norm(A, 2)
    B_norm = ember.linalg.matrix_norm(B, 2) if B is not None else 1.0

    def ritz(S, count):
        T = S.mT @ (A @ S)
        theta, C = ember.linalg.eigh((T + T.mT) * 0.5)
        order = ember.arange(theta.shape[0] - 1, -1, -1) if largest else \
            ember.arange(theta.shape[0])
        order = order[:count]
        return theta[order], C[:, order]

    X = _svqb(X, B, tol)
    E, C = ritz(X, n)
    X = X @ C
    P = None
    state = types.SimpleNamespace(A=A, B=B, E=E, X=X, R=None, P=None,
                                  iparams={"istep": 0, "converged_count": 0, "k": k, "n": n,
                                           "niter": niter, "m": m},
                                  fparams={"tol": tol}, bparams={"largest": largest})
    for step in range(niter):
        AX, BX = A @ X, _matmul(B, X)
        R = AX - BX * E.unsqueeze(0)
        rerr = ember.linalg.vector_norm(R, 2, (0,)) / (
            ember.linalg.vector_norm(X, 2, (0,)) * (A_norm + E.abs() * B_norm))
        converged = int((rerr[:k] < tol).sum().item())
        state.E, state.X, state.R, state.P = E, X, R, P
        state.iparams.update(istep=step, converged_count=converged)
        if tracker is not None:
            tracker(state)
        if converged == k:
            break
        W = _matmul(iK, R)
        S = ember.cat([X, W] if P is None else [X, W, P], 1)
        S = _svqb(S, B, tol)
        E, C = ritz(S, n)
        Xn = S @ C
        # the search direction: the new iterate's part outside the old one
        P = Xn - X @ (X.mT @ _matmul(B, Xn))
        X = Xn
    return E[:k], X[:, :k]


def lobpcg(A, k: int | None = None, B=None, X=None, n: int | None = None, iK=None,
           niter: int | None = None, tol: float | None = None, largest: bool | None = None,
           method: str | None = None, tracker=None, ortho_iparams=None, ortho_fparams=None,
           ortho_bparams=None):
    """The ``k`` largest (or smallest) eigenvalues and eigenvectors of the symmetric
    positive definite problem ``A x = lambda B x`` (``B`` the identity when omitted).

    Parameters
    ----------
    A : Tensor
        ``(*, m, m)`` symmetric.
    k : int, optional
        Eigenpairs wanted (``X.shape[-1]`` or 1 by default).
    B : Tensor, optional
        ``(*, m, m)`` symmetric positive definite.
    X : Tensor, optional
        ``(*, m, n)`` initial approximation (random when omitted).
    n : int, optional
        Block size (``k`` by default); ``3 n <= m``.
    iK : Tensor, optional
        ``(*, m, m)`` preconditioner applied to the residuals.
    niter : int, optional
        Maximum iterations (1000; -1: until convergence).
    tol : float, optional
        Residual tolerance (the square root of the dtype's epsilon).
    largest : bool, optional
        Largest eigenvalues (default) or smallest.
    method : str, optional
        ``"ortho"`` (default) or ``"basic"``: both run the B-orthonormalized iteration.
    tracker : callable, optional
        Called every iteration with the iteration state (``E``, ``X``, ``R``,
        ``iparams["istep"]``, ``iparams["converged_count"]``).

    Returns
    -------
    (Tensor, Tensor)
        Eigenvalues ``(*, k)`` and eigenvectors ``(*, m, k)``.
    """
    if A.shape[-2] != A.shape[-1]:
        raise AssertionError(f"A must be square, got shape {tuple(A.shape)}")
    if B is not None and tuple(A.shape) != tuple(B.shape):
        raise AssertionError(f"A and B must have same shape, got {tuple(A.shape)} vs "
                             f"{tuple(B.shape)}")
    if method not in (None, "ortho", "basic"):
        raise ValueError(f"lobpcg: method must be 'ortho' or 'basic', got {method!r}")
    dt = A.dtype if A.dtype in (ember.float32, ember.float64) else ember.float32
    A = A.to(dt)
    tol = _FEPS[str(dt).split(".")[-1]] ** 0.5 if tol is None else tol
    m = A.shape[-1]
    k = (1 if X is None else X.shape[-1]) if k is None else k
    n = (k if n is None else n) if X is None else X.shape[-1]
    if m < 3 * n:
        raise ValueError(f"LOBPCG algorithm is not applicable when the number of A rows "
                         f"(={m}) is smaller than 3 x the number of requested eigenpairs "
                         f"(={n})")
    niter = 1000 if niter is None else (2 ** 31 if niter < 0 else niter)
    largest = True if largest is None else largest
    if A.dim() == 2:
        return _lobpcg2d(A, k, B, X, n, iK, niter, tol, largest, tracker)
    lead = tuple(A.shape[:-2])

    def flat(T, *tail):
        return None if T is None else T.reshape(-1, *tail)
    bA, bB, bX, bK = flat(A, m, m), flat(B, m, m), flat(X, m, n), flat(iK, m, m)
    Es, Xs = [], []
    for i in range(bA.shape[0]):
        E, V = _lobpcg2d(bA[i], k, None if bB is None else bB[i],
                         None if bX is None else bX[i], n, None if bK is None else bK[i],
                         niter, tol, largest, tracker)
        Es.append(E)
        Xs.append(V)
    return ember.stack(Es).reshape(*lead, k), ember.stack(Xs).reshape(*lead, m, k)
