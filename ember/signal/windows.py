"""Window functions in SciPy's style (PyTorch's ``torch.signal.windows``): ``M`` samples,
symmetric for filter design (``sym=True``) or periodic for spectral analysis
(``sym=False``, the first ``M`` samples of the symmetric window of ``M + 1``)."""
from __future__ import annotations

import math
from collections.abc import Iterable

import ember

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
           "general_hamming", "hamming", "hann", "kaiser", "nuttall"]


def _positions(name: str, M: int, dtype, layout, device):
    """The sample indices ``0 .. M-1`` as a float tensor, after torch's checks."""
    dtype = ember.get_default_dtype() if dtype is None else dtype
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not None and layout is not ember.strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dtype not in (ember.float32, ember.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dtype}")
    return ember.arange(M, dtype=ember.float64, device=device), dtype


def _span(M: int, sym: bool) -> int:
    # the symmetric window's length minus one: periodic windows are cut from M + 1
    return M - 1 if sym else M


def _finish(w, dtype, requires_grad: bool):
    return w.to(dtype).requires_grad_(requires_grad)


def general_cosine(M: int, *, a: Iterable, sym: bool = True, dtype=None, layout=None,
                   device=None, requires_grad: bool = False):
    """``sum_k (-1)^k a[k] cos(2 pi k n / N)``, ``N = M - 1`` (symmetric) or ``M``."""
    n, dtype = _positions("general_cosine", M, dtype, layout, device)
    if M <= 1:
        return _finish(ember.ones(M, dtype=ember.float64, device=device), dtype, requires_grad)
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    a = list(a)
    if not a:
        raise ValueError("Coefficients cannot be empty")
    phase = n * (2 * math.pi / _span(M, sym))
    w = ember.zeros(M, dtype=ember.float64, device=device)
    for k, c in enumerate(a):
        w = w + ((-1) ** k * c) * ember.cos(phase * k)
    return _finish(w, dtype, requires_grad)


def general_hamming(M: int, *, alpha: float = 0.54, sym: bool = True, dtype=None, layout=None,
                    device=None, requires_grad: bool = False):
    """``alpha - (1 - alpha) cos(2 pi n / N)``."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def hamming(M: int, *, sym: bool = True, dtype=None, layout=None, device=None,
            requires_grad: bool = False):
    """The Hamming window, ``general_hamming`` with ``alpha = 0.54``."""
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def hann(M: int, *, sym: bool = True, dtype=None, layout=None, device=None,
         requires_grad: bool = False):
    """The Hann window, ``general_hamming`` with ``alpha = 0.5``."""
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M: int, *, sym: bool = True, dtype=None, layout=None, device=None,
             requires_grad: bool = False):
    """The Blackman window, ``general_cosine`` with ``a = [0.42, 0.5, 0.08]``."""
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def nuttall(M: int, *, sym: bool = True, dtype=None, layout=None, device=None,
            requires_grad: bool = False):
    """The minimum 4-term Blackman-Harris window of Nuttall."""
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym,
                          dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def bartlett(M: int, *, sym: bool = True, dtype=None, layout=None, device=None,
             requires_grad: bool = False):
    """The triangular window ``1 - |2 n / N - 1|``."""
    n, dtype = _positions("bartlett", M, dtype, layout, device)
    if M <= 1:
        return _finish(ember.ones(M, dtype=ember.float64, device=device), dtype, requires_grad)
    return _finish(1 - ember.abs(n * (2.0 / _span(M, sym)) - 1), dtype, requires_grad)


def cosine(M: int, *, sym: bool = True, dtype=None, layout=None, device=None,
           requires_grad: bool = False):
    """The sine window ``sin(pi (n + 1/2) / L)``, ``L = M`` (symmetric) or ``M + 1``."""
    n, dtype = _positions("cosine", M, dtype, layout, device)
    length = M + 1 if not sym and M > 1 else M
    return _finish(ember.sin((n + 0.5) * (math.pi / max(length, 1))), dtype, requires_grad)


def _center(M: int, sym: bool) -> float:
    return (M if not sym and M > 1 else M - 1) / 2.0


def gaussian(M: int, *, std: float = 1.0, sym: bool = True, dtype=None, layout=None,
             device=None, requires_grad: bool = False):
    """``exp(-(n - c)^2 / (2 std^2))`` around the window's center ``c``."""
    n, dtype = _positions("gaussian", M, dtype, layout, device)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    z = (n - _center(M, sym)) / std
    return _finish(ember.exp(z * z * -0.5), dtype, requires_grad)


def exponential(M: int, *, center: float | None = None, tau: float = 1.0, sym: bool = True,
                dtype=None, layout=None, device=None, requires_grad: bool = False):
    """``exp(-|n - center| / tau)``; ``center`` defaults to the window's center (and must
    be left so for a symmetric window)."""
    n, dtype = _positions("exponential", M, dtype, layout, device)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    c = _center(M, sym) if center is None else center
    return _finish(ember.exp(ember.abs(n - c) * (-1.0 / tau)), dtype, requires_grad)


def kaiser(M: int, *, beta: float = 12.0, sym: bool = True, dtype=None, layout=None,
           device=None, requires_grad: bool = False):
    """``I0(beta sqrt(1 - (2 n / N - 1)^2)) / I0(beta)``."""
    n, dtype = _positions("kaiser", M, dtype, layout, device)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    if M <= 1:
        return _finish(ember.ones(M, dtype=ember.float64, device=device), dtype, requires_grad)
    u = (n * (2.0 / _span(M, sym)) - 1).clamp(-1.0, 1.0)
    w = ember.i0(ember.sqrt(1 - u * u) * float(beta)) / ember.i0(
        ember.tensor(float(beta), dtype=ember.float64))
    return _finish(w, dtype, requires_grad)
