"""``TransformedDistribution``, ``Independent`` and the distributions torch builds from them."""
from __future__ import annotations

import math
from typing import Any

import ember
from ember.distributions import constraints
from ember.distributions.continuous import Cauchy, Normal, Uniform
from ember.distributions.distribution import Distribution
from ember.distributions.transforms import (
    AbsTransform,
    AffineTransform,
    ComposeTransform,
    ExpTransform,
    PowerTransform,
    StickBreakingTransform,
    Transform,
)
from ember.distributions.utils import _sum_rightmost, broadcast_all, digamma, euler_constant

__all__ = ["Gumbel", "HalfCauchy", "HalfNormal", "Independent", "InverseGamma", "LogNormal",
           "LogisticNormal", "Pareto", "TransformedDistribution", "Weibull"]


class Independent(Distribution):
    """Reinterpret the rightmost ``reinterpreted_batch_ndims`` batch dims as event dims.

    ``log_prob`` sums over them, so ``Independent(Normal(loc, scale), 1)`` is a
    diagonal multivariate normal.
    """

    arg_constraints: dict = {}

    def __init__(self, base_distribution: Distribution, reinterpreted_batch_ndims: int,
                 validate_args: bool | None = None) -> None:
        if reinterpreted_batch_ndims > len(base_distribution.batch_shape):
            raise ValueError(f"Expected reinterpreted_batch_ndims <= "
                             f"len(base_distribution.batch_shape), actual "
                             f"{reinterpreted_batch_ndims} vs "
                             f"{len(base_distribution.batch_shape)}")
        shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        event_dim = reinterpreted_batch_ndims + len(base_distribution.event_shape)
        batch_shape = shape[:len(shape) - event_dim]
        event_shape = shape[len(shape) - event_dim:]
        self.base_dist = base_distribution
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> Independent:
        new = self._get_checked_instance(Independent, _instance)
        batch_shape = tuple(batch_shape)
        new.base_dist = self.base_dist.expand(
            batch_shape + tuple(self.event_shape[:self.reinterpreted_batch_ndims]))
        new.reinterpreted_batch_ndims = self.reinterpreted_batch_ndims
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def has_rsample(self) -> bool:
        return self.base_dist.has_rsample

    @property
    def has_enumerate_support(self) -> bool:
        if self.reinterpreted_batch_ndims > 0:
            return False
        return self.base_dist.has_enumerate_support

    @constraints.dependent_property
    def support(self) -> Any:
        result = self.base_dist.support
        if self.reinterpreted_batch_ndims:
            result = constraints.independent(result, self.reinterpreted_batch_ndims)
        return result

    @property
    def mean(self) -> Any:
        return self.base_dist.mean

    @property
    def mode(self) -> Any:
        return self.base_dist.mode

    @property
    def variance(self) -> Any:
        return self.base_dist.variance

    def sample(self, sample_shape: tuple = ()) -> Any:
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape: tuple = ()) -> Any:
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value: Any) -> Any:
        return _sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self) -> Any:
        return _sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def enumerate_support(self, expand: bool = True) -> Any:
        if self.reinterpreted_batch_ndims > 0:
            raise NotImplementedError("Enumeration over cartesian product is not implemented")
        return self.base_dist.enumerate_support(expand=expand)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}({self.base_dist}, "
                f"{self.reinterpreted_batch_ndims})")


class TransformedDistribution(Distribution):
    """``base_distribution`` pushed through ``transforms`` (applied in order).

    ``log_prob`` inverts the transforms and subtracts their log-det-Jacobians.
    """

    arg_constraints: dict = {}

    def __init__(self, base_distribution: Distribution, transforms: Any,
                 validate_args: bool | None = None) -> None:
        if isinstance(transforms, Transform):
            self.transforms = [transforms]
        elif isinstance(transforms, list):
            if not all(isinstance(t, Transform) for t in transforms):
                raise ValueError("transforms must be a Transform or a list of Transforms")
            self.transforms = transforms
        else:
            raise ValueError(f"transforms must be a Transform or list, but was {transforms}")
        base_shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        base_event_dim = len(base_distribution.event_shape)
        transform = ComposeTransform(self.transforms)
        if len(base_shape) < transform.domain.event_dim:
            raise ValueError(f"base_distribution needs to have shape with size at least "
                             f"{transform.domain.event_dim}, but got {base_shape}.")
        forward_shape = transform.forward_shape(base_shape)
        expanded_base_shape = transform.inverse_shape(forward_shape)
        if tuple(base_shape) != tuple(expanded_base_shape):
            base_batch_shape = expanded_base_shape[:len(expanded_base_shape) - base_event_dim]
            base_distribution = base_distribution.expand(base_batch_shape)
        reinterpreted = transform.domain.event_dim - base_event_dim
        if reinterpreted > 0:
            base_distribution = Independent(base_distribution, reinterpreted)
        self.base_dist = base_distribution
        transform_change_in_event_dim = transform.codomain.event_dim - transform.domain.event_dim
        event_dim = max(transform.codomain.event_dim,
                        base_event_dim + transform_change_in_event_dim)
        cut = len(forward_shape) - event_dim
        super().__init__(forward_shape[:cut], forward_shape[cut:], validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> TransformedDistribution:
        new = self._get_checked_instance(TransformedDistribution, _instance)
        batch_shape = tuple(batch_shape)
        shape = batch_shape + tuple(self.event_shape)
        for t in reversed(self.transforms):
            shape = t.inverse_shape(shape)
        base_batch_shape = shape[:len(shape) - len(self.base_dist.event_shape)]
        new.base_dist = self.base_dist.expand(base_batch_shape)
        new.transforms = self.transforms
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=False)
    def support(self) -> Any:
        if not self.transforms:
            return self.base_dist.support
        support = self.transforms[-1].codomain
        if len(self.event_shape) > support.event_dim:
            support = constraints.independent(support, len(self.event_shape) - support.event_dim)
        return support

    @property
    def has_rsample(self) -> bool:
        return self.base_dist.has_rsample

    def sample(self, sample_shape: tuple = ()) -> Any:
        with ember.no_grad():
            x = self.base_dist.sample(sample_shape)
            for transform in self.transforms:
                x = transform(x)
            return x

    def rsample(self, sample_shape: tuple = ()) -> Any:
        x = self.base_dist.rsample(sample_shape)
        for transform in self.transforms:
            x = transform(x)
        return x

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        event_dim = len(self.event_shape)
        log_prob = 0.0
        y = value
        for transform in reversed(self.transforms):
            x = transform.inv(y)
            event_dim += transform.domain.event_dim - transform.codomain.event_dim
            log_prob = log_prob - _sum_rightmost(transform.log_abs_det_jacobian(x, y),
                                                 event_dim - transform.domain.event_dim)
            y = x
        return log_prob + _sum_rightmost(self.base_dist.log_prob(y),
                                         event_dim - len(self.base_dist.event_shape))

    def _monotonize_cdf(self, value: Any) -> Any:
        sign = 1
        for transform in self.transforms:
            sign = sign * transform.sign
        if isinstance(sign, int) and sign == 1:
            return value
        return sign * (value - 0.5) + 0.5

    def cdf(self, value: Any) -> Any:
        for transform in self.transforms[::-1]:
            value = transform.inv(value)
        if self._validate_args:
            self.base_dist._validate_sample(value)
        value = self.base_dist.cdf(value)
        return self._monotonize_cdf(value)

    def icdf(self, value: Any) -> Any:
        value = self._monotonize_cdf(value)
        value = self.base_dist.icdf(value)
        for transform in self.transforms:
            value = transform(value)
        return value


class LogNormal(TransformedDistribution):
    """``exp(X)`` for ``X ~ Normal(loc, scale)``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        base_dist = Normal(loc, scale, validate_args=validate_args)
        super().__init__(base_dist, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> LogNormal:
        new = self._get_checked_instance(LogNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def loc(self) -> Any:
        return self.base_dist.loc

    @property
    def scale(self) -> Any:
        return self.base_dist.scale

    @property
    def mean(self) -> Any:
        return (self.loc + self.scale.pow(2) / 2).exp()

    @property
    def mode(self) -> Any:
        return (self.loc - self.scale.square()).exp()

    @property
    def variance(self) -> Any:
        scale_sq = self.scale.pow(2)
        return scale_sq.expm1() * (2 * self.loc + scale_sq).exp()

    def entropy(self) -> Any:
        return self.base_dist.entropy() + self.loc


class _Half(TransformedDistribution):
    """``|X|`` for ``X`` from the symmetric ``_base`` with location 0 and ``scale``: the
    density, cdf, icdf and entropy of the half follow from the base's."""

    _base: type
    _cast_value = False          # torch's HalfCauchy casts values to its dtype, HalfNormal not
    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, scale: Any, validate_args: bool | None = None) -> None:
        base_dist = self._base(0, scale, validate_args=False)
        super().__init__(base_dist, AbsTransform(), validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> Any:
        new = self._get_checked_instance(type(self), _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def scale(self) -> Any:
        return self.base_dist.scale

    @property
    def mode(self) -> Any:
        return ember.zeros_like(self.scale)

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        if self._cast_value:
            value = ember.as_tensor(value, dtype=self.base_dist.scale.dtype)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return ember.where(value >= 0, log_prob, -math.inf)

    def cdf(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob: Any) -> Any:
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self) -> Any:
        return self.base_dist.entropy() - math.log(2)


class HalfNormal(_Half):
    """``|X|`` for ``X ~ Normal(0, scale)``."""

    _base = Normal

    @property
    def mean(self) -> Any:
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self) -> Any:
        return self.scale.pow(2) * (1 - 2 / math.pi)


class HalfCauchy(_Half):
    """``|X|`` for ``X ~ Cauchy(0, scale)``."""

    _base = Cauchy
    _cast_value = True

    @property
    def mean(self) -> Any:
        return ember.full_like(self.scale, math.inf)

    @property
    def variance(self) -> Any:
        return self.base_dist.variance


class Gumbel(TransformedDistribution):
    """Gumbel (type-I extreme value) distribution with ``loc`` and ``scale``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        finfo = ember.finfo(self.loc.dtype)
        base_dist = Uniform(ember.full_like(self.loc, finfo.tiny),
                            ember.full_like(self.loc, 1 - finfo.eps), validate_args=validate_args)
        transforms = [ExpTransform().inv, AffineTransform(loc=0, scale=-ember.ones_like(
            self.scale)), ExpTransform().inv, AffineTransform(loc=self.loc, scale=-self.scale)]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> Gumbel:
        new = self._get_checked_instance(Gumbel, _instance)
        new.loc = self.loc.expand(*batch_shape)
        new.scale = self.scale.expand(*batch_shape)
        return super().expand(batch_shape, _instance=new)

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        y = (self.loc - value) / self.scale
        return (y - y.exp()) - self.scale.log()

    @property
    def mean(self) -> Any:
        return self.loc + self.scale * euler_constant

    @property
    def mode(self) -> Any:
        return self.loc

    @property
    def stddev(self) -> Any:
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self) -> Any:
        return self.stddev.pow(2)

    def entropy(self) -> Any:
        return self.scale.log() + (1 + euler_constant)


class Pareto(TransformedDistribution):
    """Pareto type-1 distribution with ``scale`` (minimum) and shape ``alpha``."""

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}

    def __init__(self, scale: Any, alpha: Any, validate_args: bool | None = None) -> None:
        self.scale, self.alpha = broadcast_all(scale, alpha)
        base_dist = _exponential(self.alpha, validate_args)
        transforms = [ExpTransform(), AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> Pareto:
        new = self._get_checked_instance(Pareto, _instance)
        new.scale = self.scale.expand(*batch_shape)
        new.alpha = self.alpha.expand(*batch_shape)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self) -> Any:
        a = self.alpha.clamp(min=1)
        return a * self.scale / (a - 1)

    @property
    def mode(self) -> Any:
        return self.scale

    @property
    def variance(self) -> Any:
        a = self.alpha.clamp(min=2)
        return self.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> Any:
        return constraints.greater_than_eq(self.scale)

    def entropy(self) -> Any:
        return (self.scale / self.alpha).log() + (1 + self.alpha.reciprocal())


class Weibull(TransformedDistribution):
    """Two-parameter Weibull distribution with ``scale`` and ``concentration``."""

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive

    def __init__(self, scale: Any, concentration: Any,
                 validate_args: bool | None = None) -> None:
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        base_dist = _exponential(ember.ones_like(self.scale), validate_args)
        transforms = [PowerTransform(exponent=self.concentration_reciprocal),
                      AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> Weibull:
        new = self._get_checked_instance(Weibull, _instance)
        new.scale = self.scale.expand(*batch_shape)
        new.concentration = self.concentration.expand(*batch_shape)
        new.concentration_reciprocal = new.concentration.reciprocal()
        base_dist = self.base_dist.expand(batch_shape)
        transforms = [PowerTransform(exponent=new.concentration_reciprocal),
                      AffineTransform(loc=0, scale=new.scale)]
        TransformedDistribution.__init__(new, base_dist, transforms, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Any:
        return self.scale * (1 + self.concentration_reciprocal).lgamma().exp()

    @property
    def mode(self) -> Any:
        return self.scale * ((self.concentration - 1) / self.concentration) \
            .pow(self.concentration.reciprocal())

    @property
    def variance(self) -> Any:
        return self.scale.pow(2) * ((1 + 2 * self.concentration_reciprocal).lgamma().exp()
                                    - (1 + self.concentration_reciprocal).lgamma().exp()
                                    .pow(2))

    def entropy(self) -> Any:
        return (euler_constant * (1 - self.concentration_reciprocal)
                + (self.scale * self.concentration_reciprocal).log() + 1)


class LogisticNormal(TransformedDistribution):
    """``StickBreakingTransform`` of ``Normal(loc, scale)`` vectors: a density on the simplex."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        base_dist = Normal(loc, scale, validate_args=validate_args)
        if not base_dist.batch_shape:
            base_dist = base_dist.expand([1])
        super().__init__(base_dist, StickBreakingTransform(), validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> LogisticNormal:
        new = self._get_checked_instance(LogisticNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def loc(self) -> Any:
        return self.base_dist.base_dist.loc

    @property
    def scale(self) -> Any:
        return self.base_dist.base_dist.scale


def _exponential(rate: Any, validate_args: Any) -> Any:
    from ember.distributions.continuous import Exponential
    return Exponential(rate, validate_args=validate_args)


class InverseGamma(TransformedDistribution):
    """``1 / X`` for ``X ~ Gamma(concentration, rate)``."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration: Any, rate: Any, validate_args: bool | None = None) -> None:
        from ember.distributions.gamma import Gamma

        base_dist = Gamma(concentration, rate, validate_args=validate_args)
        neg_one = -ember.ones((), dtype=base_dist.rate.dtype)
        super().__init__(base_dist, PowerTransform(neg_one), validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> InverseGamma:
        new = self._get_checked_instance(InverseGamma, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def concentration(self) -> Any:
        return self.base_dist.concentration

    @property
    def rate(self) -> Any:
        return self.base_dist.rate

    @property
    def mean(self) -> Any:
        result = self.rate / (self.concentration - 1)
        return ember.where(self.concentration > 1, result, math.inf)

    @property
    def mode(self) -> Any:
        return self.rate / (self.concentration + 1)

    @property
    def variance(self) -> Any:
        result = self.rate.pow(2) / ((self.concentration - 1).pow(2) * (self.concentration - 2))
        return ember.where(self.concentration > 2, result, math.inf)

    def entropy(self) -> Any:
        return (self.concentration + self.rate.log() + self.concentration.lgamma()
                - (1 + self.concentration) * digamma(self.concentration))
