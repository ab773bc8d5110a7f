"""Discrete distributions: Bernoulli, Categorical, OneHotCategorical, Binomial, Multinomial,
Poisson, Geometric, NegativeBinomial."""
from __future__ import annotations

from typing import Any

import ember
from ember.distributions import constraints
from ember.distributions.continuous import _shape
from ember.distributions.distribution import Distribution
from ember.distributions.exp_family import ExponentialFamily
from ember.distributions.samplers import binomial, poisson, standard_gamma
from ember.distributions.utils import (
    BinaryParams,
    broadcast_all,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
)

__all__ = ["Bernoulli", "Binomial", "Categorical", "Geometric", "Multinomial",
           "NegativeBinomial", "OneHotCategorical", "OneHotCategoricalStraightThrough", "Poisson"]


def _one_of(probs: Any, logits: Any) -> None:
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")


def _bce_with_logits(logits: Any, target: Any) -> Any:
    return ember.nn.functional.softplus(logits) - target * logits


def _expand_params(d: Distribution, cls: type, batch_shape: tuple, _instance: Any,
                   event: tuple = (), extra: tuple = ()) -> Any:
    new = d._get_checked_instance(cls, _instance)
    batch_shape = tuple(batch_shape)
    for name in extra:
        setattr(new, name, getattr(d, name).expand(*batch_shape))
    if "probs" in d.__dict__:
        new.probs = d.probs.expand(*batch_shape, *event)
        new._param = new.probs
    if "logits" in d.__dict__:
        new.logits = d.logits.expand(*batch_shape, *event)
        new._param = new.logits
    return new


class Bernoulli(BinaryParams, ExponentialFamily):
    """Bernoulli distribution given by ``probs`` or ``logits`` (exactly one)."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        _one_of(probs, logits)
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
            self._param = self.probs
        else:
            (self.logits,) = broadcast_all(logits)
            self._param = self.logits
        super().__init__(self._param.shape, validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> Bernoulli:
        new = _expand_params(self, Bernoulli, batch_shape, _instance)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def param_shape(self) -> Any:
        return self._param.shape

    @property
    def mean(self) -> Any:
        return self.probs

    @property
    def mode(self) -> Any:
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return ember.where(self.probs == 0.5, float("nan"), mode)

    @property
    def variance(self) -> Any:
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape: tuple = ()) -> Any:
        with ember.no_grad():
            return ember.bernoulli(self.probs.expand(*_shape(self, sample_shape)))

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -_bce_with_logits(logits, value)

    def entropy(self) -> Any:
        return _bce_with_logits(self.logits, self.probs)

    _mean_carrier_measure = 0

    @property
    def _natural_params(self) -> tuple:
        return (self.logits,)

    def _log_normalizer(self, x: Any) -> Any:
        return ember.nn.functional.softplus(x)

    def enumerate_support(self, expand: bool = True) -> Any:
        values = ember.arange(2, dtype=self._param.dtype)
        values = values.reshape(-1, *([1] * len(self._batch_shape)))
        if expand:
            values = values.expand(-1, *self._batch_shape)
        return values


class Categorical(Distribution):
    """Categorical distribution over ``{0, ..., K-1}`` given by ``probs`` or ``logits``
    (the last dimension indexes the categories)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(
        constraints.real, 1)}
    has_enumerate_support = True

    def __init__(self, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        _one_of(probs, logits)
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.shape[-1]
        batch_shape = tuple(self._param.shape[:-1]) if self._param.dim() > 1 else ()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> Categorical:
        new = _expand_params(self, Categorical, batch_shape, _instance,
                             event=(self._num_events,))
        new._num_events = self._num_events
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> Any:
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self) -> Any:
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self) -> Any:
        return logits_to_probs(self.logits)

    @property
    def param_shape(self) -> Any:
        return self._param.shape

    @property
    def mean(self) -> Any:
        return ember.full(tuple(self._extended_shape()), float("nan"), dtype=self.probs.dtype)

    @property
    def mode(self) -> Any:
        return self.probs.argmax(-1)

    @property
    def variance(self) -> Any:
        return ember.full(tuple(self._extended_shape()), float("nan"), dtype=self.probs.dtype)

    def sample(self, sample_shape: tuple = ()) -> Any:
        sample_shape = tuple(sample_shape)
        n = 1
        for s in sample_shape:
            n *= s
        with ember.no_grad():
            probs_2d = self.probs.reshape(-1, self._num_events)
            samples_2d = ember.multinomial(probs_2d, n, True).t()
            return samples_2d.reshape(*sample_shape, *self._batch_shape)

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = ember.broadcast_tensors(value, self.logits)
        value = value[..., :1]
        return log_pmf.gather(-1, value).squeeze(-1)

    def entropy(self) -> Any:
        min_real = ember.finfo(self.logits.dtype).min
        logits = self.logits.clamp(min=min_real)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True) -> Any:
        values = ember.arange(self._num_events, dtype=ember.int64)
        values = values.reshape(-1, *([1] * len(self._batch_shape)))
        if expand:
            values = values.expand(-1, *self._batch_shape)
        return values


class OneHotCategorical(Distribution):
    """Categorical with one-hot samples (event shape ``(K,)``)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        self._categorical = Categorical(probs, logits)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> OneHotCategorical:
        new = self._get_checked_instance(OneHotCategorical, _instance)
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def _param(self) -> Any:
        return self._categorical._param

    @property
    def probs(self) -> Any:
        return self._categorical.probs

    @property
    def logits(self) -> Any:
        return self._categorical.logits

    @property
    def mean(self) -> Any:
        return self._categorical.probs

    @property
    def mode(self) -> Any:
        probs = self._categorical.probs
        mode = probs.argmax(-1)
        return ember.nn.functional.one_hot(mode, probs.shape[-1]).to(probs.dtype)

    @property
    def variance(self) -> Any:
        return self._categorical.probs * (1 - self._categorical.probs)

    @property
    def param_shape(self) -> Any:
        return self._categorical.param_shape

    def sample(self, sample_shape: tuple = ()) -> Any:
        probs = self._categorical.probs
        num_events = self._categorical._num_events
        indices = self._categorical.sample(sample_shape)
        return ember.nn.functional.one_hot(indices, num_events).to(probs.dtype)

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        indices = value.argmax(-1)
        return self._categorical.log_prob(indices)

    def entropy(self) -> Any:
        return self._categorical.entropy()

    def enumerate_support(self, expand: bool = True) -> Any:
        n = self.event_shape[0]
        values = ember.eye(n, dtype=self._param.dtype)
        values = values.reshape(n, *([1] * len(self.batch_shape)), n)
        if expand:
            values = values.expand(n, *self.batch_shape, n)
        return values


def _clamp_by_zero(x: Any) -> Any:
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


class Binomial(BinaryParams, Distribution):
    """Binomial distribution: ``total_count`` trials with success ``probs`` (or ``logits``)."""

    arg_constraints = {"total_count": constraints.nonnegative_integer,
                       "probs": constraints.unit_interval, "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count: Any = 1, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        _one_of(probs, logits)
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.to(self.probs.dtype)
            self._param = self.probs
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.to(self.logits.dtype)
            self._param = self.logits
        super().__init__(self._param.shape, validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> Binomial:
        new = _expand_params(self, Binomial, batch_shape, _instance, extra=("total_count",))
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> Any:
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self) -> Any:
        return self.total_count * self.probs

    @property
    def mode(self) -> Any:
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self) -> Any:
        return self.total_count * self.probs * (1 - self.probs)

    @property
    def param_shape(self) -> Any:
        return self._param.shape

    def sample(self, sample_shape: tuple = ()) -> Any:
        shape = _shape(self, sample_shape)
        with ember.no_grad():
            return binomial(self.total_count.expand(*shape), self.probs.expand(*shape))

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        log_factorial_n = (self.total_count + 1).lgamma()
        log_factorial_k = (value + 1).lgamma()
        log_factorial_nmk = (self.total_count - value + 1).lgamma()
        normalize_term = (self.total_count * _clamp_by_zero(self.logits)
                          + self.total_count * (-self.logits.abs()).exp().log1p()
                          - log_factorial_n)
        return value * self.logits - log_factorial_k - log_factorial_nmk - normalize_term

    def entropy(self) -> Any:
        total_count = int(self.total_count.max().item())
        if not int(self.total_count.min().item()) == total_count:
            raise NotImplementedError("Inhomogeneous total count not supported by `entropy`.")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(log_prob.exp() * log_prob).sum(0)

    def enumerate_support(self, expand: bool = True) -> Any:
        total_count = int(self.total_count.max().item())
        if not int(self.total_count.min().item()) == total_count:
            raise NotImplementedError("Inhomogeneous total count not supported by "
                                      "`enumerate_support`.")
        values = ember.arange(1 + total_count, dtype=self._param.dtype)
        values = values.reshape(-1, *([1] * len(self._batch_shape)))
        if expand:
            values = values.expand(-1, *self._batch_shape)
        return values


class Multinomial(Distribution):
    """Counts of ``total_count`` draws from a Categorical (event shape ``(K,)``)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count: int = 1, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> Multinomial:
        new = self._get_checked_instance(Multinomial, _instance)
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        new._binomial = Binomial(total_count=self.total_count, probs=new.probs)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self) -> Any:
        return constraints.multinomial(self.total_count)

    @property
    def mean(self) -> Any:
        return self.probs * self.total_count

    @property
    def variance(self) -> Any:
        return self.total_count * self.probs * (1 - self.probs)

    @property
    def logits(self) -> Any:
        return self._categorical.logits

    @property
    def probs(self) -> Any:
        return self._categorical.probs

    @property
    def param_shape(self) -> Any:
        return self._categorical.param_shape

    def sample(self, sample_shape: tuple = ()) -> Any:
        sample_shape = tuple(sample_shape)
        with ember.no_grad():
            samples = self._categorical.sample((self.total_count,) + sample_shape)
            k = self._categorical._num_events
            counts = ember.nn.functional.one_hot(samples, k).to(self.probs.dtype).sum(0)
            return counts

    def entropy(self) -> Any:
        n = ember.tensor(float(self.total_count), dtype=self.probs.dtype)
        cat_entropy = self._categorical.entropy()
        term1 = n * cat_entropy - (n + 1).lgamma()
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = self._binomial.log_prob(support).exp()
        weights = (support + 1).lgamma()
        return term1 + (binomial_probs * weights).sum((0, -1))

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        log_factorial_n = (value.sum(-1) + 1).lgamma()
        log_factorial_xs = (value + 1).lgamma().sum(-1)
        min_real = ember.finfo(logits.dtype).min
        logits = ember.where((value == 0) & (logits == -float("inf")), 0.0,
                             logits.clamp(min=min_real))
        log_powers = (logits * value).sum(-1)
        return log_factorial_n - log_factorial_xs + log_powers


class Poisson(ExponentialFamily):
    """Poisson distribution with ``rate``."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate: Any, validate_args: bool | None = None) -> None:
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> Poisson:
        new = self._get_checked_instance(Poisson, _instance)
        new.rate = self.rate.expand(*batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Any:
        return self.rate

    @property
    def mode(self) -> Any:
        return self.rate.floor()

    @property
    def variance(self) -> Any:
        return self.rate

    def sample(self, sample_shape: tuple = ()) -> Any:
        shape = _shape(self, sample_shape)
        with ember.no_grad():
            return poisson(self.rate.expand(*shape))

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return ember.xlogy(value, rate) - rate - (value + 1).lgamma()

    @property
    def _natural_params(self) -> tuple:
        return (self.rate.log(),)

    def _log_normalizer(self, x: Any) -> Any:
        return x.exp()


class Geometric(BinaryParams, Distribution):
    """Number of failures before the first success with probability ``probs``."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        _one_of(probs, logits)
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
        else:
            (self.logits,) = broadcast_all(logits)
        probs_or_logits = probs if probs is not None else logits
        batch_shape = tuple(self.probs.shape if probs is not None else self.logits.shape) \
            if isinstance(probs_or_logits, ember.Tensor) else ()
        super().__init__(batch_shape, validate_args=validate_args)
        if self._validate_args and probs is not None:
            if not bool((self.probs > 0).all()):
                raise ValueError(f"Expected parameter probs ({type(self.probs).__name__} of "
                                 f"shape {tuple(self.probs.shape)}) of distribution {self!r} "
                                 f"to satisfy the constraint Interval(lower_bound=0.0, "
                                 f"upper_bound=1.0), but found invalid values:\n{self.probs}")

    def expand(self, batch_shape: tuple, _instance: Any = None) -> Geometric:
        new = self._get_checked_instance(Geometric, _instance)
        batch_shape = tuple(batch_shape)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(*batch_shape)
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(*batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Any:
        return 1.0 / self.probs - 1.0

    @property
    def mode(self) -> Any:
        return ember.zeros_like(self.probs)

    @property
    def variance(self) -> Any:
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape: tuple = ()) -> Any:
        shape = _shape(self, sample_shape)
        tiny = ember.finfo(self.probs.dtype).tiny
        with ember.no_grad():
            u = ember.rand(*shape, dtype=self.probs.dtype).clamp(min=tiny)
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        probs = probs.clone()
        probs = ember.where((probs == 1) & (value == 0), 0.0, probs)
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self) -> Any:
        return _bce_with_logits(self.logits, self.probs) / self.probs


class NegativeBinomial(BinaryParams, Distribution):
    """Number of successes before ``total_count`` failures, success probability ``probs``."""

    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count: Any, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        _one_of(probs, logits)
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.to(self.probs.dtype)
            self._param = self.probs
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.to(self.logits.dtype)
            self._param = self.logits
        super().__init__(self._param.shape, validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> NegativeBinomial:
        new = _expand_params(self, NegativeBinomial, batch_shape, _instance,
                             extra=("total_count",))
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Any:
        return self.total_count * self.logits.exp()

    @property
    def mode(self) -> Any:
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self) -> Any:
        return self.mean / ember.sigmoid(-self.logits)

    @property
    def param_shape(self) -> Any:
        return self._param.shape

    def sample(self, sample_shape: tuple = ()) -> Any:
        shape = _shape(self, sample_shape)
        with ember.no_grad():
            rate = standard_gamma(self.total_count.expand(*shape)) * \
                self.logits.exp().expand(*shape)
            return poisson(rate)

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        log_unnormalized_prob = (self.total_count * ember.nn.functional.logsigmoid(-self.logits)
                                 + value * ember.nn.functional.logsigmoid(self.logits))
        log_normalization = (-(self.total_count + value).lgamma() + (1.0 + value).lgamma()
                             + self.total_count.lgamma())
        log_normalization = ember.where(self.total_count + value == 0.0, 0.0,
                                        log_normalization)
        return log_unnormalized_prob - log_normalization



class OneHotCategoricalStraightThrough(OneHotCategorical):
    """``OneHotCategorical`` whose ``rsample`` passes gradients straight through to ``probs``
    (Bengio et al. 2013)."""

    has_rsample = True

    def rsample(self, sample_shape: tuple = ()) -> Any:
        samples = self.sample(sample_shape)
        probs = self._categorical.probs
        return samples + (probs - probs.detach())
