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


# ---------------------------------------------------------------------------
# special functions the distributions need, as compositions of ember ops

def digamma(x: Any) -> Any:
    """The digamma function psi(x) (recurrence to x >= 10, then the asymptotic series;
    reflection for x < 0.5), differentiable through ember's ops."""
    reflect = x < 0.5
    y = ember.where(reflect, 1 - x, x)
    acc = ember.zeros_like(y)
    for _ in range(10):
        small = y < 10
        acc = acc - ember.where(small, 1.0 / y, 0.0)
        y = ember.where(small, y + 1, y)
    inv = 1.0 / y
    inv2 = inv * inv
    series = inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (
        1 / 240 - inv2 * (1 / 132)))))
    r = acc + y.log() - 0.5 * inv - series
    return ember.where(reflect, r - math.pi / ember.tan(math.pi * x), r)


def mvlgamma(a: Any, p: int) -> Any:
    """Log of the multivariate gamma function of dimension ``p``."""
    r = ember.zeros_like(a) + p * (p - 1) / 4 * math.log(math.pi)
    for j in range(1, p + 1):
        r = r + (a + (1 - j) / 2).lgamma()
    return r


def mvdigamma(x: Any, p: int) -> Any:
    """Multivariate digamma: ``sum_j digamma(x - j / 2)`` for ``j < p``."""
    r = ember.zeros_like(x)
    for j in range(p):
        r = r + digamma(x - j / 2)
    return r


def erfinv(y: Any) -> Any:
    """Inverse error function: Giles' single-precision approximation refined by two Newton
    steps on ember's erf (float64 accurate)."""
    w = -((1 - y) * (1 + y)).log()
    central = w < 5
    wc = ember.where(central, w - 2.5, w.clamp(min=5).sqrt() - 3)
    pc = [2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
          -0.00125372503, -0.00417768164, 0.246640727, 1.50140941]
    pt = [-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
          -0.0076224613, 0.00943887047, 1.00167406, 2.83297682]
    p1 = ember.full_like(y, pc[0])
    p2 = ember.full_like(y, pt[0])
    for a, b in zip(pc[1:], pt[1:]):
        p1 = p1 * wc + a
        p2 = p2 * wc + b
    x = ember.where(central, p1, p2) * y
    two_over_sqrt_pi = 2 / math.sqrt(math.pi)
    for _ in range(2):
        err = ember.erf(x) - y
        x = x - err / (two_over_sqrt_pi * ember.exp(-x * x))
    return ember.where(y.abs() >= 1, y.sign() * math.inf, x)


def igamma(a: Any, x: Any) -> Any:
    """Regularised lower incomplete gamma ``P(a, x)`` for ``a > 0``, ``x >= 0``: the power
    series below ``x = a + 1``, the continued fraction for ``Q = 1 - P`` above (Lentz),
    each iterated until converged; differentiable in ``x`` through ember's ops."""
    series = x < a + 1
    xs = ember.where(series, x, 0.0)
    xc = ember.where(series, a + 2, x)
    # series: P = x^a e^-x / Gamma(a + 1) * sum_n x^n / ((a + 1) ... (a + n))
    term = ember.ones_like(a)
    total = term
    n = 0
    while True:
        n += 1
        term = term * xs / (a + n)
        total = total + term
        if n % 16 == 0 and (bool((term <= 1e-17 * total).all()) or n > 10000):
            break
    log_pre_s = ember.xlogy(a, xs) - xs - (a + 1).lgamma()
    p_series = total * log_pre_s.exp()
    # continued fraction for Q(a, x) (modified Lentz)
    tiny = 1e-300 if x.dtype == ember.float64 else 1e-30
    b = xc + 1 - a
    c = ember.full_like(b, 1 / tiny)
    d = 1 / b
    h = d
    i = 0
    while True:
        i += 1
        an = -i * (i - a)
        b = b + 2
        d = an * d + b
        d = ember.where(d.abs() < tiny, tiny, d)
        c = b + an / c
        c = ember.where(c.abs() < tiny, tiny, c)
        d = 1 / d
        delta = d * c
        h = h * delta
        if i % 8 == 0 and (bool(((delta - 1).abs() <= 1e-15).all()) or i > 10000):
            break
    q_cf = (ember.xlogy(a, xc) - xc - a.lgamma()).exp() * h
    return ember.where(series, p_series, 1 - q_cf)
