"""Helpers shared by the distributions: broadcasting, probs/logits, lazy properties."""
from __future__ import annotations

import math
from typing import Any

import ember

euler_constant = 0.57721566490153286060


def broadcast_all(*values: Any) -> tuple:
    """Broadcast tensors and Python numbers to one shape (numbers become default-dtype tensors).

    Raises
    ------
    ValueError
        When a value is neither a Tensor nor a number.
    """
    tensors = [v for v in values if isinstance(v, ember.Tensor)]
    for v in values:
        if not isinstance(v, (ember.Tensor, int, float)):
            raise ValueError("Input arguments must all be instances of numbers.Number, "
                             "torch.Tensor or objects implementing __torch_function__.")
    dtype = tensors[0].dtype if tensors else ember.get_default_dtype()
    vals = [v if isinstance(v, ember.Tensor) else ember.tensor(float(v), dtype=dtype)
            for v in values]
    return tuple(ember.broadcast_tensors(*vals))


def _standard_normal(shape: tuple, dtype: Any) -> Any:
    return ember.randn(*shape, dtype=dtype) if shape else ember.randn((), dtype=dtype)


def _sum_rightmost(value: Any, dim: int) -> Any:
    """Sum out the ``dim`` rightmost dimensions of ``value``."""
    if dim == 0:
        return value
    return value.reshape(*value.shape[:-dim], -1).sum(-1)


def clamp_probs(probs: Any) -> Any:
    eps = ember.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def logits_to_probs(logits: Any, is_binary: bool = False) -> Any:
    """Probabilities from logits: sigmoid (binary) or softmax over the last dimension."""
    if is_binary:
        return ember.sigmoid(logits)
    return ember.softmax(logits, -1)


def probs_to_logits(probs: Any, is_binary: bool = False) -> Any:
    """Logits from probabilities (clamped away from 0 and 1)."""
    ps = clamp_probs(probs)
    if is_binary:
        return ps.log() - (-ps).log1p()
    return ps.log()


def tril_matrix_to_vec(mat: Any, diag: int = 0) -> Any:
    """The entries of ``mat`` on and below diagonal ``diag``, row by row."""
    n = mat.shape[-1]
    idx = [i * n + j for i in range(n) for j in range(n) if j - i <= diag]
    return mat.reshape(*mat.shape[:-2], n * n)[..., ember.tensor(idx, dtype=ember.int64)]


def vec_to_tril_matrix(vec: Any, diag: int = 0) -> Any:
    """Inverse of :func:`tril_matrix_to_vec`: a matrix with ``vec`` on and below ``diag``."""
    k = vec.shape[-1]
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * k + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    if abs(round(n) - n) > 1e-6:
        raise ValueError("The size of last dimension is not a triangular number")
    n = round(n)
    pos = {}
    for i in range(n):
        for j in range(n):
            if j - i <= diag:
                pos[i, j] = len(pos)
    idx = [pos.get((i, j), k) for i in range(n) for j in range(n)]
    padded = ember.cat([vec, ember.zeros(*vec.shape[:-1], 1, dtype=vec.dtype)], -1)
    return padded[..., ember.tensor(idx, dtype=ember.int64)].reshape(*vec.shape[:-1], n, n)


class lazy_property:
    """A property computed once per instance on first access (as torch's)."""

    def __init__(self, wrapped: Any) -> None:
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__
        self.__name__ = wrapped.__name__

    def __get__(self, instance: Any, obj_type: Any = None) -> Any:
        if instance is None:
            return self
        with ember.enable_grad():
            value = self.wrapped(instance)
        instance.__dict__[self.wrapped.__name__] = value
        return value


class BinaryParams:
    """The probability and log-odds of a two-outcome parameter, each derived lazily from
    the other (a distribution's ``__init__`` sets one of them)."""

    @lazy_property
    def logits(self) -> Any:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Any:
        return logits_to_probs(self.logits, is_binary=True)


def _log_normalizer_const() -> float:
    return 0.5 * math.log(2 * math.pi)


# special functions the distributions use: ember's special-function kernels
digamma = ember.digamma
erfinv = ember.erfinv
igamma = ember.igamma


def mvlgamma(a: Any, p: int) -> Any:
    """Log of the multivariate gamma function of dimension ``p``."""
    return ember.mvlgamma(a, p)


def mvdigamma(x: Any, p: int) -> Any:
    """Multivariate digamma: ``sum_j digamma(x - j / 2)`` for ``j < p``."""
    r = ember.zeros_like(x)
    for j in range(p):
        r = r + ember.digamma(x - j / 2)
    return r
