"""The matrix maps behind ``parametrizations.orthogonal``, composed from ember's tensor
ops (so they are differentiable where the parametrization needs it): the matrix
exponential, the Cayley map's linear solve, LAPACK-style Householder QR (``geqrf``) and
the product of its reflectors (``householder_product``). All take batches ``(..., n, k)``."""
from __future__ import annotations

import math

import ember


def _eye_like(a, n, k=None):
    eye = ember.eye(n, n if k is None else k, dtype=a.dtype)
    return eye.expand(*a.shape[:-2], *eye.shape)


def matrix_exp(a):
    """exp(a) of square matrices by scaling and squaring a degree-18 Taylor polynomial."""
    n = a.shape[-1]
    norm = float(a.detach().abs().sum(-2).amax()) if a.numel() else 0.0
    s = max(0, math.ceil(math.log2(norm / 0.5))) if norm > 0.5 else 0
    x = a / (2 ** s)
    eye = _eye_like(a, n)
    result = eye
    for j in range(18, 0, -1):          # Horner: I + x/1 (I + x/2 (I + ... x/18))
        result = eye + ember.matmul(x, result) / j
    for _ in range(s):
        result = ember.matmul(result, result)
    return result


def solve(a, b):
    """a^-1 b by Gauss-Jordan elimination without pivoting (safe here: ``a = I - A/2``
    with A skew-symmetric has a positive definite symmetric part)."""
    n = a.shape[-1]
    aug = ember.cat([a, b], -1)
    for j in range(n):
        row = aug[..., j:j + 1, :] / aug[..., j:j + 1, j:j + 1]
        factor = aug[..., :, j:j + 1]
        onehot = ember.zeros(n, 1, dtype=a.dtype)
        onehot[j, 0] = 1.0
        aug = aug - factor * row + onehot * row
    return aug[..., :, n:]


def householder_product(a, tau):
    """The first k columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^T, where v_i is 1 at
    row i and ``a[i+1:, i]`` below it (``torch.linalg.householder_product``)."""
    n, k = a.shape[-2], a.shape[-1]
    q = _eye_like(a, n, k)
    rows = ember.arange(n).unsqueeze(-1)
    for i in range(tau.shape[-1] - 1, -1, -1):
        col = a[..., :, i:i + 1]
        v = ember.where(rows > i, col, ember.zeros_like(col))
        v = ember.where(rows == i, ember.ones_like(col), v)               # (..., n, 1)
        w = ember.matmul(v.transpose(-1, -2), q)                          # (..., 1, k)
        q = q - tau[..., i:i + 1].unsqueeze(-1) * ember.matmul(v, w)
    return q


def geqrf(a):
    """LAPACK's ``geqrf``: R on and above the diagonal, the Householder vectors below it,
    and their scalars ``tau`` (no gradient)."""
    with ember.no_grad():
        r = a.clone()
        n, k = r.shape[-2], r.shape[-1]
        taus = []
        for j in range(min(n, k)):
            alpha = r[..., j, j]
            below = r[..., j + 1:, j]
            xnorm = below.norm(2, -1) if n - j - 1 > 0 else ember.zeros_like(alpha)
            beta = -ember.where(alpha >= 0, ember.ones_like(alpha), -ember.ones_like(alpha)) \
                * ember.sqrt(alpha * alpha + xnorm * xnorm)
            skip = xnorm == 0
            tau = ember.where(skip, ember.zeros_like(alpha), (beta - alpha) / beta)
            denom = ember.where(skip, ember.ones_like(alpha), alpha - beta)
            v = below / denom.unsqueeze(-1)
            if k > j + 1:
                vf = ember.cat([ember.ones_like(alpha).unsqueeze(-1), v], -1)      # (..., m)
                sub = r[..., j:, j + 1:]
                wv = ember.matmul(vf.unsqueeze(-2), sub)                         # (..., 1, c)
                r[..., j:, j + 1:] = sub - tau[..., None, None] * vf.unsqueeze(-1) * wv
            r[..., j, j] = ember.where(skip, alpha, beta)
            if n - j - 1 > 0:
                r[..., j + 1:, j] = ember.where(skip.unsqueeze(-1), below, v)
            taus.append(tau)
        tau = ember.stack(taus, -1) if taus else ember.zeros(*a.shape[:-2], 0, dtype=a.dtype)
        return r, tau
