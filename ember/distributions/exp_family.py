"""``ExponentialFamily``: distributions of the form ``exp(<t(x), theta> - F(theta) + k(x))``."""
from __future__ import annotations

from typing import Any

import ember
from ember.distributions.distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Base of exponential-family distributions.

    Subclasses give ``_natural_params`` (a tuple of tensors), ``_log_normalizer(*params)``
    and ``_mean_carrier_measure``; entropy and same-family KL then follow from Bregman
    divergences of the log-normaliser (Nielsen and Nock 2010).
    """

    @property
    def _natural_params(self) -> tuple:
        raise NotImplementedError

    def _log_normalizer(self, *natural_params: Any) -> Any:
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self) -> float:
        raise NotImplementedError

    def entropy(self) -> Any:
        """Entropy from the Bregman divergence of the log-normaliser."""
        result = -self._mean_carrier_measure
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        with ember.enable_grad():
            lg_normal = self._log_normalizer(*nparams)
            gradients = ember.autograd.grad(lg_normal.sum(), nparams, create_graph=True)
        result = result + lg_normal
        for npar, g in zip(nparams, gradients):
            result = result - (npar * g).reshape(*self._batch_shape, -1).sum(-1)
        return result
