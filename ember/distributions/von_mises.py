"""``VonMises``: the circular normal distribution."""
from __future__ import annotations

import math
from typing import Any

import ember
from ember.distributions import constraints
from ember.distributions.continuous import _new, _shape
from ember.distributions.distribution import Distribution
from ember.distributions.utils import broadcast_all, lazy_property

__all__ = ["VonMises"]

# Abramowitz and Stegun 9.8.1-9.8.4: I0 and I1 below 3.75 (in (x/3.75)^2) and the
# exponentially scaled I0, I1 above (in 3.75/x)
_COEF_SMALL = [
    [1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.360768e-1, 0.45813e-2],
    [0.5, 0.87890594, 0.51498869, 0.15084934, 0.2658733e-1, 0.301532e-2, 0.32411e-3],
]
_COEF_LARGE = [
    [0.39894228, 0.1328592e-1, 0.225319e-2, -0.157565e-2, 0.916281e-2, -0.2057706e-1,
     0.2635537e-1, -0.1647633e-1, 0.392377e-2],
    [0.39894228, -0.3988024e-1, -0.362018e-2, 0.163801e-2, -0.1031555e-1, 0.2282967e-1,
     -0.2895312e-1, 0.1787654e-1, -0.420059e-2],
]


def _eval_poly(y: Any, coef: list) -> Any:
    result = ember.full_like(y, coef[-1])
    for c in reversed(coef[:-1]):
        result = result * y + c
    return result


def _log_modified_bessel(x: Any, order: int = 0) -> Any:
    """``log I_order(x)`` for ``x > 0`` and order 0 or 1."""
    y = (x / 3.75) ** 2
    small = _eval_poly(y, _COEF_SMALL[order])
    if order == 1:
        small = x.abs() * small
    small = small.log()
    large = x - 0.5 * x.log() + _eval_poly(3.75 / x, _COEF_LARGE[order]).log()
    return ember.where(x < 3.75, small, large)


class VonMises(Distribution):
    """Von Mises distribution on the circle with ``loc`` and ``concentration`` (> 0).

    Samples lie in ``[-pi, pi)`` (Best and Fisher's rejection sampler, in float64)."""

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc: Any, concentration: Any, validate_args: bool | None = None) -> None:
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> VonMises:
        return _new(self, VonMises, batch_shape, _instance, ("loc", "concentration"))

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        return (self.concentration * (value - self.loc).cos() - math.log(2 * math.pi)
                - _log_modified_bessel(self.concentration, 0))

    @lazy_property
    def _proposal_r(self) -> Any:
        kappa = self.concentration.detach().to(ember.float64)
        tau = 1 + (1 + 4 * kappa ** 2).sqrt()
        rho = (tau - (2 * tau).sqrt()) / (2 * kappa)
        r = (1 + rho ** 2) / (2 * rho)
        return ember.where(kappa < 1e-5, 1 / kappa + kappa, r)

    def sample(self, sample_shape: tuple = ()) -> Any:
        shape = _shape(self, sample_shape)
        with ember.no_grad():
            loc = self.loc.to(ember.float64).expand(*shape)
            kappa = self.concentration.to(ember.float64).expand(*shape)
            r = self._proposal_r.expand(*shape)
            x = ember.zeros(*shape, dtype=ember.float64)
            done = ember.zeros(*shape, dtype=ember.bool)
            while not bool(done.all()):
                u1 = ember.rand(*shape, dtype=ember.float64)
                u2 = ember.rand(*shape, dtype=ember.float64)
                u3 = ember.rand(*shape, dtype=ember.float64)
                z = (math.pi * u1).cos()
                f = (1 + r * z) / (r + z)
                c = kappa * (r - f)
                accept = ((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0)
                x = ember.where(accept & ~done, (u3 - 0.5).sign() * f.clamp(-1, 1).acos(), x)
                done = done | accept
            return ((x + math.pi + loc) % (2 * math.pi) - math.pi).to(self.loc.dtype)

    @property
    def mean(self) -> Any:
        return self.loc

    @property
    def mode(self) -> Any:
        return self.loc

    @lazy_property
    def variance(self) -> Any:
        return 1 - (_log_modified_bessel(self.concentration, 1)
                    - _log_modified_bessel(self.concentration, 0)).exp()
