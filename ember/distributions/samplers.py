"""Samplers for Gamma and Poisson draws, vectorised over ember ops and its Philox generator.

Both are rejection samplers run in rounds: every round draws fresh uniforms or
normals for the elements still pending, so the result for a seed does not
depend on the thread count.
"""
from __future__ import annotations

from typing import Any

import ember


def standard_gamma(alpha: Any) -> Any:
    """One ``Gamma(alpha, 1)`` draw per element (Marsaglia and Tsang 2000).

    For ``alpha < 1`` the draw for ``alpha + 1`` is scaled by ``U**(1/alpha)``.
    """
    with ember.no_grad():
        boost = alpha < 1
        a = ember.where(boost, alpha + 1, alpha)
        d = a - 1.0 / 3.0
        c = 1.0 / (9.0 * d).sqrt()
        out = ember.zeros_like(alpha)
        pending = ember.ones_like(alpha, dtype=ember.bool)
        while bool(pending.any()):
            x = ember.randn(*alpha.shape, dtype=alpha.dtype)
            u = ember.rand(*alpha.shape, dtype=alpha.dtype)
            v = (1 + c * x) ** 3
            ok = (v > 0) & (u.log() < 0.5 * x * x + d - d * v
                            + d * ember.where(v > 0, v, 1.0).log())
            take = pending & ok
            out = ember.where(take, d * v, out)
            pending = pending & ~ok
        u = ember.rand(*alpha.shape, dtype=alpha.dtype)
        scale = ember.where(boost, u.clamp(min=ember.finfo(alpha.dtype).tiny)
                            .pow(1.0 / alpha), 1.0)
        return (out * scale).clamp(min=ember.finfo(alpha.dtype).tiny)


def poisson(rate: Any) -> Any:
    """One Poisson draw per element: multiplication of uniforms for ``rate < 10``,
    Hoermann's transformed rejection (PTRS) above."""
    with ember.no_grad():
        dt = rate.dtype
        out = ember.zeros_like(rate)
        small = rate < 10
        # small rates: count uniforms until their product drops below exp(-rate)
        limit = (-ember.where(small, rate, 0.0)).exp()
        prod = ember.ones_like(rate)
        pending = small & (rate > 0)
        while bool(pending.any()):
            prod = prod * ember.rand(*rate.shape, dtype=dt)
            more = pending & (prod > limit)
            out = out + more.to(dt)
            pending = more
        # large rates: PTRS
        lam = ember.where(small, 10.0, rate)
        slam = lam.sqrt()
        loglam = lam.log()
        b = 0.931 + 2.53 * slam
        a = -0.059 + 0.02483 * b
        invalpha = 1.1239 + 1.1328 / (b - 3.4)
        vr = 0.9277 - 3.6224 / (b - 2)
        pending = ~small
        while bool(pending.any()):
            u = ember.rand(*rate.shape, dtype=dt) - 0.5
            v = ember.rand(*rate.shape, dtype=dt)
            us = 0.5 - u.abs()
            k = ((2 * a / us + b) * u + lam + 0.43).floor()
            quick = (us >= 0.07) & (v <= vr)
            valid = (k >= 0) & ~((us < 0.013) & (v > us))
            log_accept = (v.log() + invalpha.log() - (a / (us * us) + b).log()
                          <= -lam + k * loglam - (k + 1).lgamma())
            ok = quick | (valid & log_accept)
            take = pending & ok
            out = ember.where(take, k, out)
            pending = pending & ~ok
        return out


def binomial(count: Any, probs: Any) -> Any:
    """One Binomial draw per element as a sum of Bernoulli trials, in chunks of trials."""
    with ember.no_grad():
        n_max = int(count.max().item()) if count.numel() else 0
        out = ember.zeros_like(probs)
        chunk = 256
        for start in range(0, n_max, chunk):
            m = min(chunk, n_max - start)
            trials = ember.arange(start, start + m, dtype=probs.dtype).reshape(
                m, *([1] * probs.dim()))
            u = ember.rand(m, *probs.shape, dtype=probs.dtype)
            hit = (u < probs) & (trials < count)
            out = out + hit.to(probs.dtype).sum(0)
        return out


def log_factorial(x: Any) -> Any:
    return (x + 1).lgamma()




def standard_gamma_grad(alpha: Any, x: Any) -> Any:
    """``dx/dalpha`` of a ``Gamma(alpha, 1)`` draw ``x`` at fixed CDF value (implicit
    reparameterisation): ``-(d/dalpha P(alpha, x)) / pdf(x; alpha)``.

    From the series ``P(alpha, x) = x^alpha e^-x sum_n x^n / Gamma(alpha + n + 1)``:
    ``dx/dalpha = x * sum_n t_n (psi(alpha + n + 1) - log x)`` with
    ``t_n = x^n / (alpha (alpha + 1) ... (alpha + n))``, summed in float64 until the
    terms no longer change the sum.
    """
    from ember.distributions.utils import digamma

    with ember.no_grad():
        a = alpha.to(ember.float64)
        xx = x.to(ember.float64).clamp(min=1e-300)
        logx = xx.log()
        t = 1.0 / a
        psi = digamma(a + 1)
        total = t * (psi - logx)
        n = 0
        while True:
            n += 1
            t = t * xx / (a + n)
            psi = psi + 1.0 / (a + n)
            term = t * (psi - logx)
            total = total + term
            if n % 16 == 0 or n > 4000:
                done = (term.abs() <= 1e-16 * total.abs()) & (xx < a + n)
                if bool(done.all()) or n > 4000:
                    break
        return (xx * total).to(alpha.dtype)


def rgamma(alpha: Any) -> Any:
    """``Gamma(alpha, 1)`` draws, differentiable in ``alpha`` (op ``_standard_gamma``)."""
    from ember.autograd._engine import _record_composite
    return _record_composite("_standard_gamma", standard_gamma, (alpha,), None)
