"""Univariate continuous distributions with closed forms (location-scale and friends)."""
from __future__ import annotations

import math
from typing import Any

import ember
from ember.distributions import constraints
from ember.distributions.distribution import Distribution
from ember.distributions.utils import broadcast_all, erfinv

__all__ = ["Cauchy", "Exponential", "Laplace", "Normal", "Uniform"]


def _shape(d: Distribution, sample_shape: tuple) -> tuple:
    return tuple(d._extended_shape(sample_shape))


def _new(d: Distribution, cls: type, batch_shape: tuple, _instance: Any, names: tuple) -> Any:
    new = d._get_checked_instance(cls, _instance)
    batch_shape = ember.Size(tuple(batch_shape))
    for n in names:
        setattr(new, n, getattr(d, n).expand(*batch_shape))
    Distribution.__init__(new, batch_shape, validate_args=False)
    new._validate_args = d._validate_args
    return new


class Normal(Distribution):
    """Normal (Gaussian) distribution ``N(loc, scale**2)``.

    Parameters
    ----------
    loc : float or Tensor
        Mean.
    scale : float or Tensor
        Standard deviation (> 0).
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> Normal:
        return _new(self, Normal, batch_shape, _instance, ("loc", "scale"))

    @property
    def mean(self) -> Any:
        return self.loc

    @property
    def mode(self) -> Any:
        return self.loc

    @property
    def stddev(self) -> Any:
        return self.scale

    @property
    def variance(self) -> Any:
        return self.stddev.pow(2)

    def sample(self, sample_shape: tuple = ()) -> Any:
        with ember.no_grad():
            return ember.normal(self.loc.expand(*_shape(self, sample_shape)),
                                self.scale.expand(*_shape(self, sample_shape)))

    def rsample(self, sample_shape: tuple = ()) -> Any:
        eps = ember.randn(*_shape(self, sample_shape), dtype=self.loc.dtype)
        return self.loc + eps * self.scale

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        var = self.scale ** 2
        log_scale = self.scale.log()
        return -((value - self.loc) ** 2) / (2 * var) - log_scale - math.log(
            math.sqrt(2 * math.pi))

    def cdf(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + ember.erf((value - self.loc) * self.scale.reciprocal()
                                    / math.sqrt(2)))

    def icdf(self, value: Any) -> Any:
        return self.loc + self.scale * erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self) -> Any:
        return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()


class Uniform(Distribution):
    """Uniform distribution on the half-open interval ``[low, high)``."""

    has_rsample = True

    @property
    def arg_constraints(self) -> dict:
        return {"low": constraints.less_than(self.high),
                "high": constraints.greater_than(self.low)}

    def __init__(self, low: Any, high: Any, validate_args: bool | None = None) -> None:
        self.low, self.high = broadcast_all(low, high)
        super().__init__(self.low.shape, validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> Uniform:
        return _new(self, Uniform, batch_shape, _instance, ("low", "high"))

    @property
    def mean(self) -> Any:
        return (self.high + self.low) / 2

    @property
    def mode(self) -> Any:
        return ember.full_like(self.high, math.nan)

    @property
    def stddev(self) -> Any:
        return (self.high - self.low) / 12 ** 0.5

    @property
    def variance(self) -> Any:
        return (self.high - self.low).pow(2) / 12

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> Any:
        return constraints.interval(self.low, self.high)

    def rsample(self, sample_shape: tuple = ()) -> Any:
        rand = ember.rand(*_shape(self, sample_shape), dtype=self.low.dtype)
        return self.low + rand * (self.high - self.low)

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        lb = (self.low <= value).to(self.low.dtype)
        ub = (self.high > value).to(self.low.dtype)
        return (lb * ub).log() - (self.high - self.low).log()

    def cdf(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        result = (value - self.low) / (self.high - self.low)
        return result.clamp(min=0, max=1)

    def icdf(self, value: Any) -> Any:
        return value * (self.high - self.low) + self.low

    def entropy(self) -> Any:
        return (self.high - self.low).log()


class Exponential(Distribution):
    """Exponential distribution with ``rate`` (> 0)."""

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, rate: Any, validate_args: bool | None = None) -> None:
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> Exponential:
        return _new(self, Exponential, batch_shape, _instance, ("rate",))

    @property
    def mean(self) -> Any:
        return self.rate.reciprocal()

    @property
    def mode(self) -> Any:
        return ember.zeros_like(self.rate)

    @property
    def stddev(self) -> Any:
        return self.rate.reciprocal()

    @property
    def variance(self) -> Any:
        return self.rate.pow(-2)

    def rsample(self, sample_shape: tuple = ()) -> Any:
        u = ember.empty(*_shape(self, sample_shape), dtype=self.rate.dtype).exponential_()
        return u / self.rate

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        return 1 - (-self.rate * value).exp()

    def icdf(self, value: Any) -> Any:
        return -(-value).log1p() / self.rate

    def entropy(self) -> Any:
        return 1.0 - self.rate.log()


class Laplace(Distribution):
    """Laplace distribution with ``loc`` and ``scale`` (> 0)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> Laplace:
        return _new(self, Laplace, batch_shape, _instance, ("loc", "scale"))

    @property
    def mean(self) -> Any:
        return self.loc

    @property
    def mode(self) -> Any:
        return self.loc

    @property
    def variance(self) -> Any:
        return 2 * self.scale.pow(2)

    @property
    def stddev(self) -> Any:
        return (2 ** 0.5) * self.scale

    def rsample(self, sample_shape: tuple = ()) -> Any:
        finfo = ember.finfo(self.loc.dtype)
        u = ember.rand(*_shape(self, sample_shape), dtype=self.loc.dtype) * 2 - 1
        u = u.clamp(min=finfo.eps - 1)
        return self.loc - self.scale * u.sign() * ember.log1p(-u.abs())

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        return -(2 * self.scale).log() - (value - self.loc).abs() / self.scale

    def cdf(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 - 0.5 * (value - self.loc).sign() * ember.expm1(
            -(value - self.loc).abs() / self.scale)

    def icdf(self, value: Any) -> Any:
        term = value - 0.5
        return self.loc - self.scale * term.sign() * ember.log1p(-2 * term.abs())

    def entropy(self) -> Any:
        return 1 + (2 * self.scale).log()


class Cauchy(Distribution):
    """Cauchy (Lorentz) distribution; mean and variance are undefined (nan / inf)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> Cauchy:
        return _new(self, Cauchy, batch_shape, _instance, ("loc", "scale"))

    @property
    def mean(self) -> Any:
        return ember.full_like(self.loc, math.nan)

    @property
    def mode(self) -> Any:
        return self.loc

    @property
    def variance(self) -> Any:
        return ember.full_like(self.loc, math.inf)

    def rsample(self, sample_shape: tuple = ()) -> Any:
        eps = ember.empty(*_shape(self, sample_shape), dtype=self.loc.dtype).cauchy_()
        return self.loc + eps * self.scale

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        return -math.log(math.pi) - self.scale.log() - (
            ((value - self.loc) / self.scale) ** 2).log1p()

    def cdf(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        return ember.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value: Any) -> Any:
        return ember.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self) -> Any:
        return math.log(4 * math.pi) + self.scale.log()


