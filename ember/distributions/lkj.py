"""``LKJCholesky``: Cholesky factors of LKJ-distributed correlation matrices."""
from __future__ import annotations

import math
from typing import Any

import ember
from ember.distributions import constraints
from ember.distributions.distribution import Distribution
from ember.distributions.gamma import Beta
from ember.distributions.utils import broadcast_all, mvlgamma

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """LKJ distribution over the lower Cholesky factors of ``dim x dim`` correlation matrices
    (Lewandowski, Kurowicka and Joe 2009), sampled by the onion method."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim: int, concentration: Any = 1.0,
                 validate_args: bool | None = None) -> None:
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. "
                             f"Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        batch_shape = tuple(self.concentration.shape)
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        offset = ember.cat([ember.zeros(1, dtype=self.concentration.dtype),
                            ember.arange(self.dim - 1, dtype=self.concentration.dtype)])
        beta_conc1 = offset + 0.5
        beta_conc0 = marginal_conc.unsqueeze(-1) - 0.5 * offset
        self._beta = Beta(beta_conc1, beta_conc0)
        super().__init__(batch_shape, (dim, dim), validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> LKJCholesky:
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = tuple(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(*batch_shape)
        new._beta = self._beta.expand(batch_shape + (self.dim,))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape: tuple = ()) -> Any:
        with ember.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            shape = tuple(self._extended_shape(sample_shape))
            u_normal = ember.randn(*shape, dtype=y.dtype).tril(-1)
            norm = ember.linalg.vector_norm(u_normal, dim=-1, keepdim=True)
            u_hypersphere = u_normal / ember.where(norm > 0, norm, 1.0)
            w = y.sqrt() * u_hypersphere
            tiny = ember.finfo(w.dtype).tiny
            diag = (1 - (w ** 2).sum(-1)).clamp(min=tiny).sqrt()
            return w + ember.diag_embed(diag)

    def log_prob(self, value: Any) -> Any:
        if self._validate_args:
            self._validate_sample(value)
        diag_elems = value.diagonal(0, -1, -2)[..., 1:]
        order = ember.arange(2, self.dim + 1, dtype=self.concentration.dtype)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized = (order * diag_elems.log()).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = alpha.lgamma() * dm1
        numerator = mvlgamma(alpha - 0.5, dm1)
        pi_constant = 0.5 * dm1 * math.log(math.pi)
        return unnormalized - (pi_constant + numerator - denominator)
