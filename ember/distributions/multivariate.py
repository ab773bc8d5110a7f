"""``MultivariateNormal`` and ``MixtureSameFamily``."""
from __future__ import annotations

import math
from typing import Any

import ember
from ember.distributions import constraints
from ember.distributions.discrete import Categorical
from ember.distributions.distribution import Distribution
from ember.distributions.utils import lazy_property

__all__ = ["LowRankMultivariateNormal", "MixtureSameFamily", "MultivariateNormal"]


def _batch_mv(bmat: Any, bvec: Any) -> Any:
    return (bmat @ bvec.unsqueeze(-1)).squeeze(-1)


def _batch_mahalanobis(bL: Any, bx: Any) -> Any:
    """``x^T (L L^T)^{-1} x`` for lower-triangular ``L``, batched."""
    sol = ember.linalg.solve_triangular(
        bL.expand(*bx.shape[:-1], bL.shape[-1], bL.shape[-1]), bx.unsqueeze(-1), upper=False)
    return sol.squeeze(-1).pow(2).sum(-1)


def _precision_to_scale_tril(P: Any) -> Any:
    Lf = ember.linalg.cholesky(P.flip((-2, -1)))
    L_inv = Lf.flip((-2, -1)).mT
    eye = ember.eye(P.shape[-1], dtype=P.dtype)
    return ember.linalg.solve_triangular(L_inv, eye, upper=False)


class MultivariateNormal(Distribution):
    """Multivariate normal given by exactly one of ``covariance_matrix``,
    ``precision_matrix`` or ``scale_tril`` (lower-triangular, positive diagonal)."""

    arg_constraints = {"loc": constraints.real_vector,
                       "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc: Any, covariance_matrix: Any = None, precision_matrix: Any = None,
                 scale_tril: Any = None, validate_args: bool | None = None) -> None:
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        if (covariance_matrix is not None) + (scale_tril is not None) + (
                precision_matrix is not None) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or "
                             "scale_tril may be specified.")
        mat = next(m for m in (scale_tril, covariance_matrix, precision_matrix) if m is not None)
        name = ("scale_tril" if scale_tril is not None else "covariance_matrix"
                if covariance_matrix is not None else "precision_matrix")
        if mat.dim() < 2:
            raise ValueError(f"{name} matrix must be at least two-dimensional, with optional "
                             f"leading batch dimensions")
        batch_shape = tuple(ember.broadcast_shapes(tuple(mat.shape[:-2]),
                                                   tuple(loc.shape[:-1])))
        n = loc.shape[-1]
        expanded = mat.expand(*batch_shape, n, n) if tuple(mat.shape[-2:]) == (n, n) else mat
        if tuple(mat.shape[-2:]) != (n, n):
            raise ValueError(f"{name} must have shape (..., {n}, {n}), got {tuple(mat.shape)}")
        setattr(self, name, expanded)
        self.loc = loc.expand(*batch_shape, n)
        super().__init__(batch_shape, (n,), validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = ember.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> MultivariateNormal:
        new = self._get_checked_instance(MultivariateNormal, _instance)
        batch_shape = tuple(batch_shape)
        loc_shape = batch_shape + tuple(self.event_shape)
        cov_shape = batch_shape + tuple(self.event_shape) + tuple(self.event_shape)
        new.loc = self.loc.expand(*loc_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, getattr(self, name).expand(*cov_shape))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def scale_tril(self) -> Any:
        n = self.event_shape[0]
        return self._unbroadcasted_scale_tril.expand(*self._batch_shape, n, n)

    @lazy_property
    def covariance_matrix(self) -> Any:
        L = self._unbroadcasted_scale_tril
        n = self.event_shape[0]
        return (L @ L.mT).expand(*self._batch_shape, n, n)

    @lazy_property
    def precision_matrix(self) -> Any:
        n = self.event_shape[0]
        return ember.cholesky_inverse(self._unbroadcasted_scale_tril).expand(
            *self._batch_shape, n, n)

    @property
    def mean(self) -> Any:
        return self.loc

    @property
    def mode(self) -> Any:
        return self.loc

    @property
    def variance(self) -> Any:
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(
            *self._batch_shape, *self._event_shape)

    def rsample(self, sample_shape: tuple = ()) -> Any:
        shape = tuple(self._extended_shape(sample_shape))
        eps = ember.randn(*shape, dtype=self.loc.dtype)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        M = _batch_mahalanobis(self._unbroadcasted_scale_tril, diff)
        half_log_det = self._unbroadcasted_scale_tril.diagonal(0, -2, -1).log().sum(-1)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + M) - half_log_det

    def entropy(self) -> Any:
        half_log_det = self._unbroadcasted_scale_tril.diagonal(0, -2, -1).log().sum(-1)
        H = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + half_log_det
        if len(self._batch_shape) == 0:
            return H
        return H.expand(*self._batch_shape)


class MixtureSameFamily(Distribution):
    """A mixture whose components share one family: ``mixture_distribution`` (a
    Categorical over the rightmost batch dim of ``component_distribution``)."""

    arg_constraints: dict = {}
    has_rsample = False

    def __init__(self, mixture_distribution: Any, component_distribution: Any,
                 validate_args: bool | None = None) -> None:
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        if not isinstance(self._mixture_distribution, Categorical):
            raise ValueError(" The Mixture distribution needs to be an  instance of "
                             "torch.distributions.Categorical")
        if not isinstance(self._component_distribution, Distribution):
            raise ValueError("The Component distribution need to be an instance of "
                             "torch.distributions.Distribution")
        mdbs = tuple(self._mixture_distribution.batch_shape)
        cdbs = tuple(self._component_distribution.batch_shape)[:-1]
        for size1, size2 in zip(reversed(mdbs), reversed(cdbs)):
            if size1 != 1 and size2 != 1 and size1 != size2:
                raise ValueError(f"`mixture_distribution.batch_shape` ({mdbs}) is not "
                                 f"compatible with `component_distribution.batch_shape`"
                                 f"({cdbs})")
        km = self._mixture_distribution.logits.shape[-1]
        kc = self._component_distribution.batch_shape[-1]
        if km is not None and kc is not None and km != kc:
            raise ValueError(f"`mixture_distribution component` ({km}) does not equal "
                             f"`component_distribution.batch_shape[-1]` ({kc})")
        self._num_component = km
        event_shape = self._component_distribution.event_shape
        self._event_ndims = len(event_shape)
        super().__init__(cdbs, event_shape, validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> MixtureSameFamily:
        batch_shape = tuple(batch_shape)
        new = self._get_checked_instance(MixtureSameFamily, _instance)
        new._component_distribution = self._component_distribution.expand(
            batch_shape + (self._num_component,))
        new._mixture_distribution = self._mixture_distribution.expand(batch_shape)
        new._num_component = self._num_component
        new._event_ndims = self._event_ndims
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property
    def support(self) -> Any:
        return self._component_distribution.support

    @property
    def mixture_distribution(self) -> Any:
        return self._mixture_distribution

    @property
    def component_distribution(self) -> Any:
        return self._component_distribution

    @property
    def mean(self) -> Any:
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        return (probs * self.component_distribution.mean).sum(-1 - self._event_ndims)

    @property
    def variance(self) -> Any:
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        mean_cond_var = (probs * self.component_distribution.variance).sum(
            -1 - self._event_ndims)
        var_cond_mean = (probs * (self.component_distribution.mean
                                  - self._pad(self.mean)).pow(2.0)).sum(-1 - self._event_ndims)
        return mean_cond_var + var_cond_mean

    def cdf(self, x: Any) -> Any:
        x = self._pad(x)
        cdf_x = self.component_distribution.cdf(x)
        mix_prob = self.mixture_distribution.probs
        return (cdf_x * mix_prob).sum(-1)

    def log_prob(self, x: Any) -> Any:
        if self._validate_args:
            self._validate_sample(x)
        x = self._pad(x)
        log_prob_x = self.component_distribution.log_prob(x)
        log_mix_prob = ember.log_softmax(self.mixture_distribution.logits, -1)
        return (log_prob_x + log_mix_prob).logsumexp(-1)

    def sample(self, sample_shape: tuple = ()) -> Any:
        sample_shape = tuple(sample_shape)
        with ember.no_grad():
            sample_len = len(sample_shape)
            batch_len = len(self.batch_shape)
            gather_dim = sample_len + batch_len
            es = tuple(self.event_shape)
            mix_sample = self.mixture_distribution.sample(sample_shape)
            mix_shape = tuple(mix_sample.shape)
            comp_samples = self.component_distribution.sample(sample_shape)
            mix_sample_r = mix_sample.reshape(*mix_shape, 1, *([1] * len(es)))
            mix_sample_r = mix_sample_r.expand(*mix_shape, 1, *es)
            samples = comp_samples.gather(gather_dim, mix_sample_r)
            return samples.squeeze(gather_dim)

    def _pad(self, x: Any) -> Any:
        return x.unsqueeze(-1 - self._event_ndims)

    def _pad_mixture_dimensions(self, x: Any) -> Any:
        dist_batch_ndims = len(self.batch_shape)
        cat_batch_ndims = len(self.mixture_distribution.batch_shape)
        pad_ndims = 0 if cat_batch_ndims == 1 else dist_batch_ndims - cat_batch_ndims
        xs = tuple(x.shape)
        x = x.reshape(*xs[:-1], *([1] * pad_ndims), xs[-1], *([1] * self._event_ndims))
        return x

    def __repr__(self) -> str:
        return (f"MixtureSameFamily(\n  {self.mixture_distribution},\n  "
                f"{self.component_distribution})")


def _capacitance_tril(W: Any, D: Any) -> Any:
    """Cholesky of ``I + W^T D^{-1} W`` (the capacitance matrix), batched."""
    m = W.shape[-1]
    Wt_Dinv = W.mT / D.unsqueeze(-2)
    K = Wt_Dinv @ W + ember.eye(m, dtype=W.dtype)
    return ember.linalg.cholesky(K)


def _lowrank_logdet(W: Any, D: Any, capacitance_tril: Any) -> Any:
    return 2 * capacitance_tril.diagonal(0, -2, -1).log().sum(-1) + D.log().sum(-1)


def _lowrank_mahalanobis(W: Any, D: Any, x: Any, capacitance_tril: Any) -> Any:
    Wt_Dinv = W.mT / D.unsqueeze(-2)
    Wt_Dinv_x = _batch_mv(Wt_Dinv, x)
    term1 = (x.pow(2) / D).sum(-1)
    term2 = _batch_mahalanobis(capacitance_tril, Wt_Dinv_x)
    return term1 - term2


class LowRankMultivariateNormal(Distribution):
    """Multivariate normal with covariance ``cov_factor @ cov_factor.T + diag(cov_diag)``;
    log_prob and entropy cost ``O(n m^2)`` through the capacitance matrix."""

    arg_constraints = {"loc": constraints.real_vector,
                       "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc: Any, cov_factor: Any, cov_diag: Any,
                 validate_args: bool | None = None) -> None:
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        n = loc.shape[-1]
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if cov_factor.shape[-2] != n:
            raise ValueError(f"cov_factor must be a batch of matrices with shape {n} x m")
        if cov_diag.shape[-1] != n:
            raise ValueError(f"cov_diag must be a batch of vectors with shape ({n},)")
        try:
            loc_, self.cov_factor, cov_diag_ = ember.broadcast_tensors(
                loc.unsqueeze(-1), cov_factor, cov_diag.unsqueeze(-1))
        except RuntimeError as e:
            raise ValueError(f"Incompatible batch shapes: loc {loc.shape}, cov_factor "
                             f"{cov_factor.shape}, cov_diag {cov_diag.shape}") from e
        self.loc = loc_[..., 0]
        self.cov_diag = cov_diag_[..., 0]
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = _capacitance_tril(cov_factor, cov_diag)
        super().__init__(tuple(self.loc.shape[:-1]), (n,), validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> LowRankMultivariateNormal:
        new = self._get_checked_instance(LowRankMultivariateNormal, _instance)
        batch_shape = tuple(batch_shape)
        n = self.event_shape[0]
        new.loc = self.loc.expand(*batch_shape, n)
        new.cov_diag = self.cov_diag.expand(*batch_shape, n)
        new.cov_factor = self.cov_factor.expand(*batch_shape, *self.cov_factor.shape[-2:])
        new._unbroadcasted_cov_factor = self._unbroadcasted_cov_factor
        new._unbroadcasted_cov_diag = self._unbroadcasted_cov_diag
        new._capacitance_tril = self._capacitance_tril
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Any:
        return self.loc

    @property
    def mode(self) -> Any:
        return self.loc

    @lazy_property
    def variance(self) -> Any:
        return (self._unbroadcasted_cov_factor.pow(2).sum(-1)
                + self._unbroadcasted_cov_diag).expand(*self._batch_shape, *self._event_shape)

    @lazy_property
    def scale_tril(self) -> Any:
        n = self._event_shape[0]
        d_sqrt = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        Dinvsqrt_W = self._unbroadcasted_cov_factor / d_sqrt
        K = Dinvsqrt_W @ Dinvsqrt_W.mT + ember.eye(n, dtype=d_sqrt.dtype)
        return (d_sqrt * ember.linalg.cholesky(K)).expand(*self._batch_shape, n, n)

    @lazy_property
    def covariance_matrix(self) -> Any:
        n = self._event_shape[0]
        W = self._unbroadcasted_cov_factor
        cov = W @ W.mT + ember.diag_embed(self._unbroadcasted_cov_diag)
        return cov.expand(*self._batch_shape, n, n)

    @lazy_property
    def precision_matrix(self) -> Any:
        n = self._event_shape[0]
        Wt_Dinv = self._unbroadcasted_cov_factor.mT / self._unbroadcasted_cov_diag.unsqueeze(-2)
        A = ember.linalg.solve_triangular(self._capacitance_tril, Wt_Dinv, upper=False)
        P = ember.diag_embed(self._unbroadcasted_cov_diag.reciprocal()) - A.mT @ A
        return P.expand(*self._batch_shape, n, n)

    def rsample(self, sample_shape: tuple = ()) -> Any:
        shape = tuple(self._extended_shape(sample_shape))
        W_shape = shape[:-1] + (self.cov_factor.shape[-1],)
        eps_W = ember.randn(*W_shape, dtype=self.loc.dtype)
        eps_D = ember.randn(*shape, dtype=self.loc.dtype)
        return (self.loc + _batch_mv(self._unbroadcasted_cov_factor, eps_W)
                + self._unbroadcasted_cov_diag.sqrt() * eps_D)

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        M = _lowrank_mahalanobis(self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag,
                                 diff, self._capacitance_tril)
        log_det = _lowrank_logdet(self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag,
                                  self._capacitance_tril)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + log_det + M)

    def entropy(self) -> Any:
        log_det = _lowrank_logdet(self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag,
                                  self._capacitance_tril)
        H = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + log_det)
        if len(self._batch_shape) == 0:
            return H
        return H.expand(*self._batch_shape)
