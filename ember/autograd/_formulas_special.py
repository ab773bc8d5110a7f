"""Backward formulas of the special functions (ember/_C/special.pyx), as PyTorch
defines them; the Bessel/Airy functions and orthogonal polynomials have none (their
results do not require grad), and neither has the derivative of the incomplete gamma
functions or zeta in their first argument."""
from __future__ import annotations

import math

from ember._C import elementwise as E
from ember._C import special as S
from ember.autograd._table import formula

_SQRT_PI_2 = math.sqrt(math.pi) / 2
_2_SQRTPI = 2 / math.sqrt(math.pi)
_SQRT_2PI = math.sqrt(2 * math.pi)


def _not_implemented(what):
    raise RuntimeError(f"the derivative for '{what}' is not implemented.")


@formula("digamma", exact=True)
def _digamma(ctx, g):
    return (E.mul(g, S.polygamma(1, ctx.input(0))),)


@formula("polygamma", exact=True)
def _polygamma(ctx, g):
    return (E.mul(g, S.polygamma(ctx.attrs[0] + 1, ctx.input(0))),)


@formula("erfinv", save_output=True, exact=True)
def _erfinv(ctx, g):
    y = ctx.output
    return (E.mul(g, E.mul(E.exp(E.mul(y, y)), _SQRT_PI_2)),)


@formula("erfcx", save_output=True, exact=True)
def _erfcx(ctx, g):
    x = ctx.input(0)
    return (E.mul(g, E.sub(E.mul(E.mul(x, ctx.output), 2), _2_SQRTPI)),)


@formula("ndtr", exact=True)
def _ndtr(ctx, g):
    x = ctx.input(0)
    return (E.mul(g, E.div(E.exp(E.mul(E.mul(x, x), -0.5)), _SQRT_2PI)),)


@formula("ndtri", save_output=True, exact=True)
def _ndtri(ctx, g):
    y = ctx.output
    return (E.mul(g, E.mul(E.exp(E.mul(E.mul(y, y), 0.5)), _SQRT_2PI)),)


@formula("log_ndtr", save_output=True, exact=True)
def _log_ndtr(ctx, g):
    x = ctx.input(0)
    e = E.exp(E.neg(E.add(ctx.output, E.mul(E.mul(x, x), 0.5))))
    return (E.mul(E.div(g, _SQRT_2PI), e),)


@formula("i0", exact=True)
def _i0(ctx, g):
    return (E.mul(g, S.i1(ctx.input(0))),)


@formula("i0e", save_output=True, exact=True)
def _i0e(ctx, g):
    x = ctx.input(0)
    return (E.mul(g, E.sub(S.i1e(x), E.mul(E.sign(x), ctx.output))),)


@formula("i1", save_output=True, exact=True)
def _i1(ctx, g):
    x = ctx.input(0)
    zero = E.eq(x, 0)
    safe = E.where(zero, 1.0, x)
    d = E.sub(S.i0(x), E.div(ctx.output, safe))
    return (E.mul(g, E.where(zero, 0.5, d)),)


@formula("i1e", save_output=True, exact=True)
def _i1e(ctx, g):
    x = ctx.input(0)
    zero = E.eq(x, 0)
    safe = E.where(zero, 1.0, x)
    d = E.sub(S.i0e(x), E.mul(ctx.output, E.add(E.sign(x), E.reciprocal(safe))))
    return (E.mul(g, E.where(zero, 0.5, d)),)


@formula("entr", exact=True)
def _entr(ctx, g):
    return (E.mul(g, E.neg(E.add(E.log(ctx.input(0)), 1))),)


@formula("xlog1py")
def _xlog1py(ctx, g):
    a, b = ctx.inputs
    ga = gb = None
    if ctx.needs(0):
        ga = S.xlog1py(g, b)
        ga = E.where(E.logical_and(E.eq(a, 0), E.le(b, -1)), 0.0, ga)
    if ctx.needs(1):
        gb = E.div(E.mul(g, a), E.add(b, 1))
    return ga, gb


def _igamma_grad(a, x):
    """d/dx P(a, x) = x^(a - 1) e^-x / Gamma(a)."""
    return E.exp(E.sub(E.sub(E.mul(E.sub(a, 1), E.log(x)), x), E.lgamma(a)))


@formula("igamma")
def _igamma(ctx, g):
    if ctx.needs(0):
        _not_implemented("igamma: input")
    a, x = ctx.inputs
    return None, E.mul(g, _igamma_grad(a, x))


@formula("igammac")
def _igammac(ctx, g):
    if ctx.needs(0):
        _not_implemented("igammac: input")
    a, x = ctx.inputs
    return None, E.neg(E.mul(g, _igamma_grad(a, x)))


@formula("zeta")
def _zeta(ctx, g):
    if ctx.needs(0):
        _not_implemented("zeta")
    s, q = ctx.inputs
    s1 = s + 1 if isinstance(s, (int, float)) else E.add(s, 1)
    return None, E.mul(g, E.neg(E.mul(s, S.zeta(s1, q))))
