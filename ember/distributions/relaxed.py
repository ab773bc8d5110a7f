"""Continuous relaxations and other bounded families: RelaxedBernoulli,
RelaxedOneHotCategorical, ContinuousBernoulli, Kumaraswamy, FisherSnedecor."""
from __future__ import annotations

import math
from typing import Any

import ember
from ember.distributions import constraints
from ember.distributions.continuous import Uniform, _new, _shape
from ember.distributions.discrete import Categorical, _bce_with_logits, _one_of
from ember.distributions.distribution import Distribution
from ember.distributions.exp_family import ExponentialFamily
from ember.distributions.gamma import Gamma
from ember.distributions.transformed import TransformedDistribution
from ember.distributions.transforms import (
    AffineTransform,
    ExpTransform,
    PowerTransform,
    SigmoidTransform,
)
from ember.distributions.utils import (
    BinaryParams,
    broadcast_all,
    clamp_probs,
    digamma,
    euler_constant,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
)

__all__ = ["ContinuousBernoulli", "ExpRelaxedCategorical", "FisherSnedecor", "Kumaraswamy",
           "LogitRelaxedBernoulli", "RelaxedBernoulli", "RelaxedOneHotCategorical"]


def _as_tensor(x: Any, like: Any) -> Any:
    return x if isinstance(x, ember.Tensor) else ember.tensor(float(x), dtype=like.dtype)


class LogitRelaxedBernoulli(BinaryParams, Distribution):
    """The logit of a ``RelaxedBernoulli`` sample (Maddison et al. 2017)."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real

    def __init__(self, temperature: Any, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        _one_of(probs, logits)
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
            self._param = self.probs
        else:
            (self.logits,) = broadcast_all(logits)
            self._param = self.logits
        self.temperature = _as_tensor(temperature, self._param)
        super().__init__(self._param.shape, validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> LogitRelaxedBernoulli:
        new = self._get_checked_instance(LogitRelaxedBernoulli, _instance)
        batch_shape = tuple(batch_shape)
        new.temperature = self.temperature
        for name in ("probs", "logits"):
            if name in self.__dict__:
                setattr(new, name, getattr(self, name).expand(*batch_shape))
                new._param = getattr(new, name)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def param_shape(self) -> Any:
        return self._param.shape

    has_rsample = True

    def rsample(self, sample_shape: tuple = ()) -> Any:
        shape = _shape(self, sample_shape)
        probs = clamp_probs(self.probs.expand(*shape))
        uniforms = clamp_probs(ember.rand(*shape, dtype=probs.dtype))
        return (uniforms.log() - (-uniforms).log1p() + probs.log() - (-probs).log1p()) \
            / self.temperature

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value * self.temperature
        return self.temperature.log() + diff - 2 * diff.exp().log1p()


class RelaxedBernoulli(TransformedDistribution):
    """Concrete/Gumbel-sigmoid relaxation of a Bernoulli on ``(0, 1)`` with ``temperature``."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature: Any, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        base_dist = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(base_dist, SigmoidTransform(), validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> RelaxedBernoulli:
        new = self._get_checked_instance(RelaxedBernoulli, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def temperature(self) -> Any:
        return self.base_dist.temperature

    @property
    def logits(self) -> Any:
        return self.base_dist.logits

    @property
    def probs(self) -> Any:
        return self.base_dist.probs


class ExpRelaxedCategorical(Distribution):
    """The log of a ``RelaxedOneHotCategorical`` sample."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, temperature: Any, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        self._categorical = Categorical(probs, logits)
        self.temperature = _as_tensor(temperature, self._categorical._param)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> ExpRelaxedCategorical:
        new = self._get_checked_instance(ExpRelaxedCategorical, _instance)
        new.temperature = self.temperature
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def param_shape(self) -> Any:
        return self._categorical.param_shape

    @property
    def logits(self) -> Any:
        return self._categorical.logits

    @property
    def probs(self) -> Any:
        return self._categorical.probs

    def rsample(self, sample_shape: tuple = ()) -> Any:
        shape = _shape(self, sample_shape)
        uniforms = clamp_probs(ember.rand(*shape, dtype=self.logits.dtype))
        gumbels = -((-(uniforms.log())).log())
        scores = (self.logits + gumbels) / self.temperature
        return scores - scores.logsumexp(-1, keepdim=True)

    def log_prob(self, value: Any) -> Any:
        K = self._categorical._num_events
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        log_scale = ember.full_like(self.temperature, float(K)).lgamma() \
            + (K - 1) * self.temperature.log()
        score = logits - value * self.temperature
        score = (score - score.logsumexp(-1, keepdim=True)).sum(-1)
        return score + log_scale


class RelaxedOneHotCategorical(TransformedDistribution):
    """Concrete/Gumbel-softmax relaxation of a one-hot Categorical on the simplex."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature: Any, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        base_dist = ExpRelaxedCategorical(temperature, probs, logits,
                                          validate_args=validate_args)
        super().__init__(base_dist, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> RelaxedOneHotCategorical:
        new = self._get_checked_instance(RelaxedOneHotCategorical, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def temperature(self) -> Any:
        return self.base_dist.temperature

    @property
    def logits(self) -> Any:
        return self.base_dist.logits

    @property
    def probs(self) -> Any:
        return self.base_dist.probs


class ContinuousBernoulli(ExponentialFamily):
    """Continuous Bernoulli on ``[0, 1]`` (Loaiza-Ganem and Cunningham 2019); near
    ``probs = 0.5`` the normaliser and moments use Taylor expansions."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs: Any = None, logits: Any = None, lims: tuple = (0.499, 0.501),
                 validate_args: bool | None = None) -> None:
        _one_of(probs, logits)
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
            if validate_args is not None and not bool(
                    self.arg_constraints["probs"].check(self.probs).all()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(self.probs)
            self._param = self.probs
        else:
            (self.logits,) = broadcast_all(logits)
            self._param = self.logits
        self._lims = lims
        super().__init__(self._param.shape, validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> ContinuousBernoulli:
        new = self._get_checked_instance(ContinuousBernoulli, _instance)
        new._lims = self._lims
        batch_shape = tuple(batch_shape)
        for name in ("probs", "logits"):
            if name in self.__dict__:
                setattr(new, name, getattr(self, name).expand(*batch_shape))
                new._param = getattr(new, name)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _outside_unstable_region(self) -> Any:
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self) -> Any:
        return ember.where(self._outside_unstable_region(), self.probs,
                           self._lims[0] * ember.ones_like(self.probs))

    def _cont_bern_log_norm(self) -> Any:
        cut = self._cut_probs()
        below = ember.where(cut <= 0.5, cut, 0.0)
        above = ember.where(cut >= 0.5, cut, 1.0)
        log_norm = ((-cut).log1p() - cut.log()).abs().log() - ember.where(
            cut <= 0.5, (-2.0 * below).log1p(), (2.0 * above - 1.0).log())
        x = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return ember.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self) -> Any:
        cut = self._cut_probs()
        mus = cut / (2.0 * cut - 1.0) + 1.0 / ((-cut).log1p() - cut.log())
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x
        return ember.where(self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self) -> Any:
        return self.variance.sqrt()

    @property
    def variance(self) -> Any:
        cut = self._cut_probs()
        vs = cut * (cut - 1.0) / (1.0 - 2.0 * cut).pow(2) + 1.0 / ((-cut).log1p()
                                                               - cut.log()).pow(2)
        x = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return ember.where(self._outside_unstable_region(), vs, taylor)

    @lazy_property
    def logits(self) -> Any:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Any:
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self) -> Any:
        return self._param.shape

    def rsample(self, sample_shape: tuple = ()) -> Any:
        u = ember.rand(*_shape(self, sample_shape), dtype=self.probs.dtype)
        return self.icdf(u)

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -_bce_with_logits(logits, value) + self._cont_bern_log_norm()

    def cdf(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        cut = self._cut_probs()
        cdfs = (cut.pow(value) * (1.0 - cut).pow(1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        unbounded = ember.where(self._outside_unstable_region(), cdfs, value)
        return ember.where(value <= 0.0, 0.0, ember.where(value >= 1.0, 1.0, unbounded))

    def icdf(self, value: Any) -> Any:
        cut = self._cut_probs()
        return ember.where(self._outside_unstable_region(),
                           ((-cut + value * (2.0 * cut - 1.0)).log1p() - (-cut).log1p())
                           / (cut.log() - (-cut).log1p()), value)

    def entropy(self) -> Any:
        log_probs0 = (-self.probs).log1p()
        log_probs1 = self.probs.log()
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0

    @property
    def _natural_params(self) -> tuple:
        return (self.logits,)

    def _log_normalizer(self, x: Any) -> Any:
        """The log normaliser as a function of the natural parameter (Taylor near 0)."""
        outside = (x <= self._lims[0] - 0.5) | (x > self._lims[1] - 0.5)
        cut = ember.where(outside, x, (self._lims[0] - 0.5) * ember.ones_like(x))
        log_norm = (cut.exp() - 1.0).abs().log() - cut.abs().log()
        taylor = 0.5 * x + x.pow(2) / 24.0 - x.pow(4) / 2880.0
        return ember.where(outside, log_norm, taylor)


def _kumaraswamy_moments(a: Any, b: Any, n: int) -> Any:
    arg1 = 1 + n / a
    log_value = arg1.lgamma() + b.lgamma() - (arg1 + b).lgamma()
    return b * log_value.exp()


class Kumaraswamy(TransformedDistribution):
    """Kumaraswamy distribution on ``(0, 1)`` with ``concentration1`` (a) and
    ``concentration0`` (b)."""

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1: Any, concentration0: Any,
                 validate_args: bool | None = None) -> None:
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base_dist = Uniform(ember.zeros_like(self.concentration0),
                            ember.ones_like(self.concentration0), validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration0.reciprocal()),
                      AffineTransform(loc=1.0, scale=-1.0),
                      PowerTransform(exponent=self.concentration1.reciprocal())]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> Kumaraswamy:
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(*batch_shape)
        new.concentration0 = self.concentration0.expand(*batch_shape)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self) -> Any:
        return _kumaraswamy_moments(self.concentration1, self.concentration0, 1)

    @property
    def mode(self) -> Any:
        c0, c1 = self.concentration0, self.concentration1
        log_mode = c0.reciprocal() * (-c0).log1p() - (-c0 * c1).log1p()
        log_mode = ember.where((c0 < 1) | (c1 < 1), math.nan, log_mode)
        return log_mode.exp()

    @property
    def variance(self) -> Any:
        return _kumaraswamy_moments(self.concentration1, self.concentration0, 2) \
            - self.mean.pow(2)

    def entropy(self) -> Any:
        t1 = 1 - self.concentration1.reciprocal()
        t0 = 1 - self.concentration0.reciprocal()
        H0 = digamma(self.concentration0 + 1) + euler_constant
        return t0 + t1 * H0 - self.concentration1.log() - self.concentration0.log()


class FisherSnedecor(Distribution):
    """Fisher-Snedecor (F) distribution with ``df1`` and ``df2`` degrees of freedom."""

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1: Any, df2: Any, validate_args: bool | None = None) -> None:
        self.df1, self.df2 = broadcast_all(df1, df2)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2)
        super().__init__(self.df1.shape, validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> FisherSnedecor:
        new = _new(self, FisherSnedecor, batch_shape, _instance, ("df1", "df2"))
        new._gamma1 = self._gamma1.expand(batch_shape)
        new._gamma2 = self._gamma2.expand(batch_shape)
        return new

    @property
    def mean(self) -> Any:
        df2 = ember.where(self.df2 <= 2, math.nan, self.df2)
        return df2 / (df2 - 2)

    @property
    def mode(self) -> Any:
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return ember.where(self.df1 <= 2, math.nan, mode)

    @property
    def variance(self) -> Any:
        df2 = ember.where(self.df2 <= 4, math.nan, self.df2)
        return 2 * df2.pow(2) * (self.df1 + df2 - 2) / (self.df1 * (df2 - 2).pow(2)
                                                         * (df2 - 4))

    def rsample(self, sample_shape: tuple = ()) -> Any:
        tiny = ember.finfo(self.df1.dtype).tiny
        X1 = self._gamma1.rsample(sample_shape)
        X2 = self._gamma2.rsample(sample_shape).clamp(min=tiny)
        return (X1 / X2).clamp(min=tiny)

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        ct1 = self.df1 * 0.5
        ct2 = self.df2 * 0.5
        ct3 = self.df1 / self.df2
        t1 = (ct1 + ct2).lgamma() - ct1.lgamma() - ct2.lgamma()
        t2 = ct1 * ct3.log() + (ct1 - 1) * value.log()
        t3 = (ct1 + ct2) * (ct3 * value).log1p()
        return t1 + t2 - t3
