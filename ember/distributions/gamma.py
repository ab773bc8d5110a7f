"""Distributions built on Gamma draws: Gamma, Chi2, Beta, Dirichlet, StudentT."""
from __future__ import annotations

import math
from typing import Any

import ember
from ember.distributions import constraints
from ember.distributions.continuous import _new, _shape
from ember.distributions.distribution import Distribution
from ember.distributions.samplers import rgamma
from ember.distributions.utils import broadcast_all, digamma, igamma

__all__ = ["Beta", "Chi2", "Dirichlet", "Gamma", "StudentT"]


class Gamma(Distribution):
    """Gamma distribution with ``concentration`` (shape) and ``rate`` (inverse scale).

    ``rsample`` is reparameterised through the implicit gradient of the draw with
    respect to the concentration.
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, concentration: Any, rate: Any, validate_args: bool | None = None) -> None:
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(self.concentration.shape, validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> Gamma:
        return _new(self, Gamma, batch_shape, _instance, ("concentration", "rate"))

    @property
    def mean(self) -> Any:
        return self.concentration / self.rate

    @property
    def mode(self) -> Any:
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self) -> Any:
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape: tuple = ()) -> Any:
        shape = _shape(self, sample_shape)
        value = rgamma(self.concentration.expand(*shape)) / self.rate.expand(*shape)
        return value.clamp(min=ember.finfo(value.dtype).tiny)

    def log_prob(self, value: Any) -> Any:
        value = ember.as_tensor(value, dtype=self.rate.dtype)
        if self._validate_args:
            self._validate_sample(value)
        return (ember.xlogy(self.concentration, self.rate)
                + ember.xlogy(self.concentration - 1, value)
                - self.rate * value - self.concentration.lgamma())

    def cdf(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        value = ember.as_tensor(value, dtype=self.rate.dtype)
        a, x = broadcast_all(self.concentration, self.rate * value)
        return igamma(a, x)

    def entropy(self) -> Any:
        return (self.concentration - self.rate.log() + self.concentration.lgamma()
                + (1.0 - self.concentration) * digamma(self.concentration))


class Chi2(Gamma):
    """Chi-squared distribution with ``df`` degrees of freedom (``Gamma(df / 2, 1 / 2)``)."""

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df: Any, validate_args: bool | None = None) -> None:
        (df,) = broadcast_all(df)
        super().__init__(0.5 * df, ember.full_like(df, 0.5), validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> Chi2:
        new = self._get_checked_instance(Chi2, _instance)
        return super().expand(batch_shape, new)

    @property
    def df(self) -> Any:
        return self.concentration * 2


class Dirichlet(Distribution):
    """Dirichlet distribution over the simplex with ``concentration`` (last dim = event)."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration: Any, validate_args: bool | None = None) -> None:
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        shape = tuple(concentration.shape)
        super().__init__(shape[:-1], shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> Dirichlet:
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = tuple(batch_shape)
        new.concentration = self.concentration.expand(*batch_shape, *self.event_shape)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape: tuple = ()) -> Any:
        shape = _shape(self, sample_shape)
        g = rgamma(self.concentration.expand(*shape))
        x = g / g.sum(-1, keepdim=True)
        finfo = ember.finfo(x.dtype)
        return x.clamp(min=finfo.tiny, max=1 - finfo.eps)

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        return (ember.xlogy(self.concentration - 1.0, value).sum(-1)
                + self.concentration.sum(-1).lgamma() - self.concentration.lgamma().sum(-1))

    @property
    def mean(self) -> Any:
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self) -> Any:
        concentrationm1 = (self.concentration - 1).clamp(min=0.0)
        mode = concentrationm1 / concentrationm1.sum(-1, keepdim=True)
        mask = (self.concentration < 1).all(-1)
        if bool(mask.any()):
            k = self.concentration.shape[-1]
            one_hot = ember.nn.functional.one_hot(self.concentration.argmax(-1), k) \
                .to(mode.dtype)
            mode = ember.where(mask.unsqueeze(-1), one_hot, mode)
        return mode

    @property
    def variance(self) -> Any:
        con0 = self.concentration.sum(-1, keepdim=True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def entropy(self) -> Any:
        k = self.concentration.shape[-1]
        a0 = self.concentration.sum(-1)
        return (self.concentration.lgamma().sum(-1) - a0.lgamma()
                - (k - a0) * digamma(a0)
                - ((self.concentration - 1.0) * digamma(self.concentration)).sum(-1))


class Beta(Distribution):
    """Beta distribution with ``concentration1`` (alpha) and ``concentration0`` (beta)."""

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1: Any, concentration0: Any,
                 validate_args: bool | None = None) -> None:
        c1, c0 = broadcast_all(concentration1, concentration0)
        self._dirichlet = Dirichlet(ember.stack([c1, c0], -1), validate_args=validate_args)
        super().__init__(self._dirichlet._batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> Beta:
        new = self._get_checked_instance(Beta, _instance)
        new._dirichlet = self._dirichlet.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Any:
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self) -> Any:
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self) -> Any:
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape: tuple = ()) -> Any:
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        heads_tails = ember.stack([value, 1.0 - value], -1)
        return self._dirichlet.log_prob(heads_tails)

    def entropy(self) -> Any:
        return self._dirichlet.entropy()

    @property
    def concentration1(self) -> Any:
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self) -> Any:
        return self._dirichlet.concentration[..., 1]


class StudentT(Distribution):
    """Student's t distribution with ``df``, ``loc`` and ``scale``."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real,
                       "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df: Any, loc: Any = 0.0, scale: Any = 1.0,
                 validate_args: bool | None = None) -> None:
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(self.df.shape, validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> StudentT:
        new = _new(self, StudentT, batch_shape, _instance, ("df", "loc", "scale"))
        new._chi2 = self._chi2.expand(batch_shape)
        return new

    @property
    def mean(self) -> Any:
        m = self.loc.clone()
        return ember.where(self.df <= 1, math.nan, m)

    @property
    def mode(self) -> Any:
        return self.loc

    @property
    def variance(self) -> Any:
        m = self.scale.pow(2) * self.df / (self.df - 2)
        m = ember.where((self.df <= 2) & (self.df > 1), math.inf, m)
        return ember.where(self.df <= 1, math.nan, m)

    def rsample(self, sample_shape: tuple = ()) -> Any:
        shape = _shape(self, sample_shape)
        X = ember.randn(*shape, dtype=self.df.dtype)
        Z = self._chi2.rsample(sample_shape)
        Y = X * (self.df / Z).sqrt()
        return self.loc + self.scale * Y

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        Z = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi)
             + (0.5 * self.df).lgamma() - (0.5 * (self.df + 1.0)).lgamma())
        return -0.5 * (self.df + 1.0) * (y.pow(2) / self.df).log1p() - Z

    def entropy(self) -> Any:
        lbeta = ((0.5 * self.df).lgamma() + math.lgamma(0.5)
                 - (0.5 * (self.df + 1)).lgamma())
        return (self.scale.log() + 0.5 * (self.df + 1)
                * (digamma(0.5 * (self.df + 1)) - digamma(0.5 * self.df))
                + 0.5 * self.df.log() + lbeta)
