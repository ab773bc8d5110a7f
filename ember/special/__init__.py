"""``ember.special``: PyTorch's ``torch.special``.

The gamma, error-function, Bessel, Airy, zeta and orthogonal-polynomial families
are C kernels (src_c/special.c, float32 and float64; integer inputs give the
default dtype, float16/bfloat16 compute in float32); the others are ember's own
elementwise and reduction ops under their ``torch.special`` names.
"""
from __future__ import annotations

from typing import Any

from ember._C.elementwise import (
    erf,
    erfc,
    exp2,
    expm1,
    lgamma,
    log1p,
    round,  # noqa: A004 - PyTorch's name
    sigmoid,
    xlogy,
)
from ember._C.reduce import log_softmax as _log_softmax
from ember._C.reduce import logsumexp
from ember._C.reduce import softmax as _softmax
from ember._C.special import (
    airy_ai,
    bessel_j0,
    bessel_j1,
    bessel_y0,
    bessel_y1,
    chebyshev_polynomial_t,
    chebyshev_polynomial_u,
    chebyshev_polynomial_v,
    chebyshev_polynomial_w,
    digamma,
    entr,
    erfcx,
    erfinv,
    hermite_polynomial_h,
    hermite_polynomial_he,
    i0,
    i0e,
    i1,
    i1e,
    igamma,
    igammac,
    laguerre_polynomial_l,
    legendre_polynomial_p,
    log_ndtr,
    modified_bessel_i0,
    modified_bessel_i1,
    modified_bessel_k0,
    modified_bessel_k1,
    ndtr,
    ndtri,
    polygamma,
    scaled_modified_bessel_k0,
    scaled_modified_bessel_k1,
    shifted_chebyshev_polynomial_t,
    shifted_chebyshev_polynomial_u,
    shifted_chebyshev_polynomial_v,
    shifted_chebyshev_polynomial_w,
    spherical_bessel_j0,
    xlog1py,
    zeta,
)
from ember._composite import logit, mvlgamma, sinc

psi = digamma
gammaln = lgamma
expit = sigmoid
gammainc = igamma
gammaincc = igammac


def multigammaln(input: Any, p: int, *, out: Any = None) -> Any:
    """The log of the multivariate gamma function of dimension ``p``.

    Parameters
    ----------
    input : Tensor
    p : int
        The dimension (>= 1).
    out : Tensor, optional

    Returns
    -------
    Tensor
    """
    return mvlgamma(input, p, out=out)


def softmax(input: Any, dim: int, *, dtype: Any = None) -> Any:
    """``exp(x) / sum(exp(x))`` along ``dim`` (computed in ``dtype`` when given).

    Parameters
    ----------
    input : Tensor
    dim : int
    dtype : ember.dtype, optional

    Returns
    -------
    Tensor
    """
    return _softmax(input, dim, dtype)


def log_softmax(input: Any, dim: int, *, dtype: Any = None) -> Any:
    """``log(softmax(x))`` along ``dim``, computed stably.

    Parameters
    ----------
    input : Tensor
    dim : int
    dtype : ember.dtype, optional

    Returns
    -------
    Tensor
    """
    return _log_softmax(input, dim, dtype)


__all__ = [
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "chebyshev_polynomial_t",
    "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w", "digamma",
    "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc",
    "gammaincc", "gammaln", "hermite_polynomial_h", "hermite_polynomial_he", "i0", "i0e",
    "i1", "i1e", "laguerre_polynomial_l", "legendre_polynomial_p", "log1p", "log_ndtr",
    "log_softmax", "logit", "logsumexp", "modified_bessel_i0", "modified_bessel_i1",
    "modified_bessel_k0", "modified_bessel_k1", "multigammaln", "ndtr", "ndtri",
    "polygamma", "psi", "round", "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w", "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1", "sinc", "softmax", "spherical_bessel_j0", "xlog1py",
    "xlogy", "zeta",
]
