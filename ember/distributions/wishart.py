"""``Wishart``: distribution over positive-definite matrices."""
from __future__ import annotations

import math
from typing import Any

import ember
from ember.distributions import constraints
from ember.distributions.distribution import Distribution
from ember.distributions.gamma import Chi2
from ember.distributions.multivariate import _precision_to_scale_tril
from ember.distributions.utils import lazy_property, mvdigamma, mvlgamma

__all__ = ["Wishart"]


class Wishart(Distribution):
    """Wishart distribution with ``df`` degrees of freedom and one of ``covariance_matrix``,
    ``precision_matrix`` or ``scale_tril``; ``rsample`` uses the Bartlett decomposition."""

    support = constraints.positive_definite
    has_rsample = True

    def __init__(self, df: Any, covariance_matrix: Any = None, precision_matrix: Any = None,
                 scale_tril: Any = None, validate_args: bool | None = None) -> None:
        if (covariance_matrix is not None) + (scale_tril is not None) + (
                precision_matrix is not None) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or "
                             "scale_tril may be specified.")
        param = next(p for p in (covariance_matrix, precision_matrix, scale_tril)
                     if p is not None)
        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if isinstance(df, (int, float)):
            batch_shape = tuple(param.shape[:-2])
            self.df = ember.tensor(float(df), dtype=param.dtype)
        else:
            batch_shape = tuple(ember.broadcast_shapes(tuple(param.shape[:-2]),
                                                       tuple(df.shape)))
            self.df = df.expand(*batch_shape)
        p = param.shape[-1]
        if bool((self.df <= p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        name = ("scale_tril" if scale_tril is not None else "covariance_matrix"
                if covariance_matrix is not None else "precision_matrix")
        setattr(self, name, param.expand(*batch_shape, p, p))
        self._p = p
        super().__init__(batch_shape, (p, p), validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = ember.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)
        steps = ember.arange(p, dtype=param.dtype)
        self._dist_chi2 = Chi2(df=self.df.unsqueeze(-1) - steps.expand(*batch_shape, p))

    @property
    def arg_constraints(self) -> dict:
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(self._p - 1)}

    def expand(self, batch_shape: tuple, _instance: Any = None) -> Wishart:
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = tuple(batch_shape)
        p = self._p
        new._p = p
        new.df = self.df.expand(*batch_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, getattr(self, name).expand(*batch_shape, p, p))
        new._dist_chi2 = Chi2(df=new.df.unsqueeze(-1) - ember.arange(
            p, dtype=new.df.dtype).expand(*batch_shape, p))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def scale_tril(self) -> Any:
        return self._unbroadcasted_scale_tril.expand(*self._batch_shape, self._p, self._p)

    @lazy_property
    def covariance_matrix(self) -> Any:
        L = self._unbroadcasted_scale_tril
        return (L @ L.mT).expand(*self._batch_shape, self._p, self._p)

    @lazy_property
    def precision_matrix(self) -> Any:
        return ember.cholesky_inverse(self._unbroadcasted_scale_tril).expand(
            *self._batch_shape, self._p, self._p)

    def _df(self) -> Any:
        return self.df.reshape(*self._batch_shape, 1, 1)

    @property
    def mean(self) -> Any:
        return self._df() * self.covariance_matrix

    @property
    def mode(self) -> Any:
        factor = self.df - self._p - 1
        factor = ember.where(factor <= 0, math.nan, factor)
        return factor.reshape(*self._batch_shape, 1, 1) * self.covariance_matrix

    @property
    def variance(self) -> Any:
        V = self.covariance_matrix
        d = V.diagonal(0, -2, -1)
        return self._df() * (V.pow(2) + d.unsqueeze(-1) * d.unsqueeze(-2))

    def rsample(self, sample_shape: tuple = ()) -> Any:
        sample_shape = tuple(sample_shape)
        p = self._p
        eps = ember.finfo(self.df.dtype).eps
        diag = self._dist_chi2.rsample(sample_shape).sqrt().clamp(min=eps)
        lower = ember.randn(*sample_shape, *self._batch_shape, p, p, dtype=diag.dtype).tril(-1)
        noise = ember.diag_embed(diag) + lower
        chol = self._unbroadcasted_scale_tril @ noise
        return chol @ chol.mT

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        nu = self.df
        p = self._p
        half_logdet = self._unbroadcasted_scale_tril.diagonal(0, -2, -1).log().sum(-1)
        return (-nu * (p * math.log(2) / 2 + half_logdet) - mvlgamma(nu / 2, p)
                + (nu - p - 1) / 2 * ember.linalg.slogdet(value).logabsdet
                - ember.cholesky_solve(value, self._unbroadcasted_scale_tril)
                .diagonal(0, -2, -1).sum(-1) / 2)

    def entropy(self) -> Any:
        nu = self.df
        p = self._p
        half_logdet = self._unbroadcasted_scale_tril.diagonal(0, -2, -1).log().sum(-1)
        return ((p + 1) * (p * math.log(2) / 2 + half_logdet) + mvlgamma(nu / 2, p)
                - (nu - p - 1) / 2 * mvdigamma(nu / 2, p) + nu * p / 2)
