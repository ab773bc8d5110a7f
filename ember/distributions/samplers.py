"""Gamma, Poisson and Binomial draws: the rejection samplers of ember's random module
(C kernels on the Philox generator, the same numbers for a seed on any thread count)."""
from __future__ import annotations

from typing import Any

from ember._C import random as _random


def standard_gamma(alpha: Any) -> Any:
    """One ``Gamma(alpha, 1)`` draw per element (Marsaglia and Tsang), not recorded."""
    return _random._standard_gamma(alpha.detach())


def poisson(rate: Any) -> Any:
    """One Poisson draw per element of ``rate``."""
    return _random.poisson(rate.detach())


def binomial(count: Any, probs: Any) -> Any:
    """One Binomial draw per element of ``(count, probs)``."""
    return _random.binomial(count.detach(), probs.detach())


def standard_gamma_grad(alpha: Any, x: Any) -> Any:
    """``dx/dalpha`` of ``Gamma(alpha, 1)`` draws ``x`` at fixed CDF value (implicit
    reparameterisation)."""
    return _random._standard_gamma_grad(alpha.detach(), x.detach())


def rgamma(alpha: Any) -> Any:
    """``Gamma(alpha, 1)`` draws, differentiable in ``alpha`` (op ``_standard_gamma``)."""
    return _random._standard_gamma(alpha)
