"""``kl_divergence`` and ``register_kl``: KL(p || q) dispatched on the two types."""
from __future__ import annotations

import math
from functools import total_ordering
from typing import Any, Callable

import ember
from ember.distributions.utils import _sum_rightmost, digamma

__all__ = ["kl_divergence", "register_kl"]

_KL_REGISTRY: dict = {}
_KL_MEMOIZE: dict = {}


def register_kl(type_p: type, type_q: type) -> Callable:
    """Decorator registering ``fn(p, q)`` as KL(p || q) for ``type_p`` and ``type_q``.

    The most specific registration (by method resolution order) wins; ties are
    an error to resolve by registering the more specific pair.
    """
    from ember.distributions.distribution import Distribution

    if not isinstance(type_p, type) or not issubclass(type_p, Distribution):
        raise TypeError(f"Expected type_p to be a Distribution subclass but got {type_p}")
    if not isinstance(type_q, type) or not issubclass(type_q, Distribution):
        raise TypeError(f"Expected type_q to be a Distribution subclass but got {type_q}")

    def decorator(fun: Callable) -> Callable:
        _KL_REGISTRY[type_p, type_q] = fun
        _KL_MEMOIZE.clear()
        return fun

    return decorator


@total_ordering
class _Match:
    __slots__ = ["types"]

    def __init__(self, *types: type) -> None:
        self.types = types

    def __eq__(self, other: object) -> bool:
        return self.types == other.types

    def __le__(self, other: Any) -> bool:
        for x, y in zip(self.types, other.types):
            if not issubclass(x, y):
                return False
            if x is not y:
                break
        return True


def _dispatch_kl(type_p: type, type_q: type) -> Any:
    matches = [(super_p, super_q) for super_p, super_q in _KL_REGISTRY
               if issubclass(type_p, super_p) and issubclass(type_q, super_q)]
    if not matches:
        return NotImplemented
    left_p, left_q = min(_Match(*m) for m in matches).types
    right_q, right_p = min(_Match(*reversed(m)) for m in matches).types
    left_fun = _KL_REGISTRY[left_p, left_q]
    right_fun = _KL_REGISTRY[right_p, right_q]
    if left_fun is not right_fun:
        import warnings
        warnings.warn(f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). Please "
                      f"register_kl({left_p.__name__}, {right_q.__name__})", RuntimeWarning,
                      stacklevel=3)
    return left_fun


def kl_divergence(p: Any, q: Any) -> Any:
    """KL(p || q), batched over the distributions' batch shape.

    Raises
    ------
    NotImplementedError
        When no formula is registered for ``(type(p), type(q))``.
    """
    try:
        fun = _KL_MEMOIZE[type(p), type(q)]
    except KeyError:
        fun = _dispatch_kl(type(p), type(q))
        _KL_MEMOIZE[type(p), type(q)] = fun
    if fun is NotImplemented:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type "
                                  f"{p.__class__.__name__} and q type {q.__class__.__name__}")
    return fun(p, q)


def _infinite_like(t: Any) -> Any:
    return ember.full_like(t, math.inf)


def _x_log_x(t: Any) -> Any:
    return ember.where(t == 0, 0.0, t * t.log())


def _register_all() -> None:
    """The formulas (imported here so that each distribution module stays self-contained)."""
    from ember.distributions import (
        Bernoulli,
        Beta,
        Binomial,
        Categorical,
        Cauchy,
        Dirichlet,
        Exponential,
        Gamma,
        Geometric,
        Gumbel,
        HalfNormal,
        Independent,
        Laplace,
        LogNormal,
        MultivariateNormal,
        Normal,
        OneHotCategorical,
        Pareto,
        Poisson,
        TransformedDistribution,
        Uniform,
    )

    @register_kl(Normal, Normal)
    def _kl_normal_normal(p, q):
        var_ratio = (p.scale / q.scale).pow(2)
        t1 = ((p.loc - q.loc) / q.scale).pow(2)
        return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())

    @register_kl(Bernoulli, Bernoulli)
    def _kl_bernoulli_bernoulli(p, q):
        sp = ember.nn.functional.softplus
        t1 = p.probs * (sp(-q.logits) - sp(-p.logits))
        t1 = ember.where(q.probs == 0, math.inf, t1)
        t1 = ember.where(p.probs == 0, 0.0, t1)
        t2 = (1 - p.probs) * (sp(q.logits) - sp(p.logits))
        t2 = ember.where(q.probs == 1, math.inf, t2)
        t2 = ember.where(p.probs == 1, 0.0, t2)
        return t1 + t2

    @register_kl(Binomial, Binomial)
    def _kl_binomial_binomial(p, q):
        if bool((p.total_count < q.total_count).any()):
            raise NotImplementedError("KL between Binomials where q.total_count > "
                                      "p.total_count is not implemented")
        kl = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs).log1p()
                              - (-q.probs).log1p())
        inf_idxs = p.total_count > q.total_count
        return ember.where(inf_idxs, math.inf, kl)

    @register_kl(Categorical, Categorical)
    def _kl_categorical_categorical(p, q):
        t = p.probs * (p.logits - q.logits)
        t = ember.where(q.probs == 0, math.inf, t)
        t = ember.where(p.probs == 0, 0.0, t)
        return t.sum(-1)

    @register_kl(OneHotCategorical, OneHotCategorical)
    def _kl_onehot(p, q):
        return _kl_categorical_categorical(p._categorical, q._categorical)

    @register_kl(Uniform, Uniform)
    def _kl_uniform_uniform(p, q):
        result = ((q.high - q.low) / (p.high - p.low)).log()
        return ember.where((q.low > p.low) | (q.high < p.high), math.inf, result)

    @register_kl(Exponential, Exponential)
    def _kl_exponential_exponential(p, q):
        rate_ratio = q.rate / p.rate
        return rate_ratio - 1 - rate_ratio.log()

    @register_kl(Laplace, Laplace)
    def _kl_laplace_laplace(p, q):
        scale_ratio = p.scale / q.scale
        loc_abs_diff = (p.loc - q.loc).abs()
        t1 = -scale_ratio.log()
        t2 = loc_abs_diff / q.scale
        t3 = scale_ratio * (-loc_abs_diff / p.scale).exp()
        return t1 + t2 + t3 - 1

    @register_kl(Cauchy, Cauchy)
    def _kl_cauchy_cauchy(p, q):
        t1 = ((p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)).log()
        t2 = (4 * p.scale * q.scale).log()
        return t1 - t2

    @register_kl(Gumbel, Gumbel)
    def _kl_gumbel_gumbel(p, q):
        ct1 = p.scale / q.scale
        ct2 = q.loc / q.scale
        ct3 = p.loc / q.scale
        t1 = -ct1.log() - ct2 + ct3
        t2 = ct1 * 0.57721566490153286060
        t3 = (ct2 + (1 + ct1).lgamma() - ct3).exp()
        return t1 + t2 + t3 - (1 + 0.57721566490153286060)

    @register_kl(Geometric, Geometric)
    def _kl_geometric_geometric(p, q):
        return -p.entropy() - (-q.probs).log1p() / p.probs - q.logits

    @register_kl(Poisson, Poisson)
    def _kl_poisson_poisson(p, q):
        return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)

    @register_kl(HalfNormal, HalfNormal)
    def _kl_halfnormal_halfnormal(p, q):
        return _kl_normal_normal(p.base_dist, q.base_dist)

    @register_kl(LogNormal, LogNormal)
    def _kl_lognormal_lognormal(p, q):
        return _kl_normal_normal(p.base_dist, q.base_dist)

    @register_kl(Pareto, Pareto)
    def _kl_pareto_pareto(p, q):
        scale_ratio = p.scale / q.scale
        alpha_ratio = q.alpha / p.alpha
        t1 = q.alpha * scale_ratio.log()
        t2 = -alpha_ratio.log()
        result = t1 + t2 + alpha_ratio - 1
        return ember.where(p.support.lower_bound < q.support.lower_bound, math.inf, result)

    @register_kl(Gamma, Gamma)
    def _kl_gamma_gamma(p, q):
        t1 = q.concentration * (p.rate / q.rate).log()
        t2 = q.concentration.lgamma() - p.concentration.lgamma()
        t3 = (p.concentration - q.concentration) * digamma(p.concentration)
        t4 = (q.rate - p.rate) * (p.concentration / p.rate)
        return t1 + t2 + t3 + t4

    @register_kl(Beta, Beta)
    def _kl_beta_beta(p, q):
        sum_params_p = p.concentration1 + p.concentration0
        sum_params_q = q.concentration1 + q.concentration0
        t1 = q.concentration1.lgamma() + q.concentration0.lgamma() + sum_params_p.lgamma()
        t2 = p.concentration1.lgamma() + p.concentration0.lgamma() + sum_params_q.lgamma()
        t3 = (p.concentration1 - q.concentration1) * digamma(p.concentration1)
        t4 = (p.concentration0 - q.concentration0) * digamma(p.concentration0)
        t5 = (sum_params_q - sum_params_p) * digamma(sum_params_p)
        return t1 - t2 + t3 + t4 + t5

    @register_kl(Dirichlet, Dirichlet)
    def _kl_dirichlet_dirichlet(p, q):
        sum_p_concentration = p.concentration.sum(-1)
        sum_q_concentration = q.concentration.sum(-1)
        t1 = sum_p_concentration.lgamma() - sum_q_concentration.lgamma()
        t2 = (p.concentration.lgamma() - q.concentration.lgamma()).sum(-1)
        t3 = p.concentration - q.concentration
        t4 = digamma(p.concentration) - digamma(sum_p_concentration).unsqueeze(-1)
        return t1 - t2 + (t3 * t4).sum(-1)

    @register_kl(MultivariateNormal, MultivariateNormal)
    def _kl_mvn_mvn(p, q):
        if tuple(p.event_shape) != tuple(q.event_shape):
            raise ValueError("KL-divergence between two Multivariate Normals with different "
                             "event shapes cannot be computed")
        half_term1 = (q._unbroadcasted_scale_tril.diagonal(0, -2, -1).log().sum(-1)
                      - p._unbroadcasted_scale_tril.diagonal(0, -2, -1).log().sum(-1))
        combined = tuple(ember.broadcast_shapes(tuple(q._unbroadcasted_scale_tril.shape[:-2]),
                                                tuple(p._unbroadcasted_scale_tril.shape[:-2])))
        n = p.event_shape[0]
        q_scale_tril = q._unbroadcasted_scale_tril.expand(*combined, n, n)
        p_scale_tril = p._unbroadcasted_scale_tril.expand(*combined, n, n)
        term2 = ember.linalg.solve_triangular(q_scale_tril, p_scale_tril, upper=False) \
            .pow(2).sum((-2, -1))
        term3 = ember.linalg.solve_triangular(
            q._unbroadcasted_scale_tril, (q.loc - p.loc).unsqueeze(-1), upper=False) \
            .squeeze(-1).pow(2).sum(-1)
        return half_term1 + 0.5 * (term2 + term3 - n)

    @register_kl(Independent, Independent)
    def _kl_independent_independent(p, q):
        if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
            raise NotImplementedError("KL between Independents with different "
                                      "reinterpreted_batch_ndims is not implemented")
        result = kl_divergence(p.base_dist, q.base_dist)
        return _sum_rightmost(result, p.reinterpreted_batch_ndims)

    @register_kl(TransformedDistribution, TransformedDistribution)
    def _kl_transformed_transformed(p, q):
        if p.transforms != q.transforms:
            raise NotImplementedError("KL between TransformedDistributions with different "
                                      "transforms is not implemented")
        if tuple(p.event_shape) != tuple(q.event_shape):
            raise NotImplementedError("KL between TransformedDistributions with different "
                                      "event shapes is not implemented")
        return kl_divergence(p.base_dist, q.base_dist)

    @register_kl(Normal, Uniform)
    @register_kl(Normal, Exponential)
    def _kl_normal_infinity(p, q):
        return _infinite_like(p.loc)

    @register_kl(Uniform, Normal)
    def _kl_uniform_normal(p, q):
        common_term = p.high - p.low
        t1 = (math.sqrt(math.pi * 2) * q.scale / common_term).log()
        t2 = common_term.pow(2) / 12
        t3 = ((p.high + p.low - 2 * q.loc) / 2).pow(2)
        return t1 + 0.5 * (t2 + t3) / q.scale.pow(2)

    @register_kl(Exponential, Normal)
    def _kl_exponential_normal(p, q):
        var_normal = q.scale.pow(2)
        rate_sqr = p.rate.pow(2)
        t1 = 0.5 * (rate_sqr * var_normal * 2 * math.pi).log()
        t2 = rate_sqr.reciprocal()
        t3 = q.loc / p.rate
        t4 = q.loc.pow(2) * 0.5
        return t1 - 1 + (t2 - t3 + t4) / var_normal

    @register_kl(Exponential, Gamma)
    def _kl_exponential_gamma(p, q):
        ratio = q.rate / p.rate
        t1 = -q.concentration * ratio.log()
        return t1 + ratio + q.concentration.lgamma() + q.concentration * 0.57721566490153286060 \
            - (1 + 0.57721566490153286060)
