"""Backward formulas of the elementwise ops (ember/_C/elementwise.pyx).

Written with public ember ops so that ``create_graph=True`` records them again.
Inputs may be Python scalars; the engine sums gradients back to input shapes and
casts them to input dtypes."""
from __future__ import annotations

import math

from ember._C import elementwise as E
from ember._C.core import TensorBase, is_grad_enabled, zeros_like
from ember.autograd._table import formula

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_2_SQRTPI = 2.0 / math.sqrt(math.pi)
_SQRT_2PI_INV = 1.0 / math.sqrt(2.0 * math.pi)


def _is_t(x):
    return isinstance(x, TensorBase)


def _zeros(g):
    return zeros_like(g)


def _isnan(x):
    return E.isnan(x) if _is_t(x) else math.isnan(x)


# ---------------------------------------------------------------------------
# binary arithmetic

@formula("add", saves=False)
def _add(ctx, g):
    return g, g


@formula("sub", saves=False)
def _sub(ctx, g):
    return g, (E.neg(g) if ctx._next[1] is not None else None)


@formula("mul")
def _mul(ctx, g):
    n = ctx._next
    return (E.mul(g, ctx.input(1)) if n[0] is not None else None,
            E.mul(g, ctx.input(0)) if n[1] is not None else None)


@formula("div")
def _div(ctx, g):
    n = ctx._next
    b = ctx.input(1)
    ga = E.div(g, b) if n[0] is not None else None
    gb = None
    if n[1] is not None:
        a = ctx.input(0)
        gb = E.neg(E.div(E.mul(g, a), E.mul(b, b)))
    return ga, gb


@formula("floor_divide")
def _floor_divide(ctx, g):
    # the result is piecewise constant: zero gradient (PyTorch's div(rounding_mode=...))
    return (_zeros(g) if ctx.needs(0) else None), (_zeros(g) if ctx.needs(1) else None)


@formula("remainder")
def _remainder(ctx, g):
    gb = None
    if ctx.needs(1):
        a, b = ctx.inputs
        gb = E.neg(E.mul(g, E.div(a, b, rounding_mode="floor")))
    return g, gb


@formula("fmod")
def _fmod(ctx, g):
    gb = None
    if ctx.needs(1):
        a, b = ctx.inputs
        gb = E.neg(E.mul(g, E.trunc(E.div(a, b))))
    return g, gb


@formula("pow")
def _pow(ctx, g):
    a, b = ctx.inputs
    ga = gb = None
    if ctx.needs(0):
        if _is_t(b):
            ga = E.where(E.eq(b, 0), 0.0, E.mul(E.mul(g, b), E.pow(a, E.sub(b, 1))))
        elif b == 0:
            ga = _zeros(g)
        else:
            ga = E.mul(E.mul(g, b), E.pow(a, b - 1))
    if ctx.needs(1):
        out = E.pow(a, b)
        if _is_t(a):
            lg = E.mul(out, E.log(a))
            cond = E.logical_and(E.eq(a, 0), E.ge(b, 0))
            gb = E.mul(g, E.where(cond, 0.0, lg))
        elif a == 0:
            gb = E.mul(g, E.where(E.ge(b, 0), 0.0, E.mul(out, -math.inf)))
        else:
            gb = E.mul(g, E.mul(out, math.log(a) if a > 0 else math.nan))
    return ga, gb


def _max_min(ctx, g, lose_a, lose_b):
    a, b = ctx.inputs
    half = E.mul(g, 0.5)
    eq = E.eq(a, b)
    ga = E.where(lose_a(a, b), 0.0, E.where(eq, half, g)) if ctx.needs(0) else None
    gb = E.where(lose_b(a, b), 0.0, E.where(eq, half, g)) if ctx.needs(1) else None
    return ga, gb


@formula("maximum")
def _maximum(ctx, g):
    return _max_min(ctx, g, E.lt, E.gt)


@formula("minimum")
def _minimum(ctx, g):
    return _max_min(ctx, g, E.gt, E.lt)


def _fmax_fmin(ctx, g, cmp):
    a, b = ctx.inputs
    if not _is_t(b) and math.isnan(b):
        return g, None
    keep = cmp(a, b)
    if _is_t(b):
        keep = E.logical_or(keep, E.isnan(b))
    ga = E.where(keep, g, 0.0) if ctx.needs(0) else None
    gb = E.where(keep, 0.0, g) if ctx.needs(1) else None
    return ga, gb


def _sq(x):
    return E.mul(x, x) if _is_t(x) else x * x


@formula("fmax")
def _fmax(ctx, g):
    return _fmax_fmin(ctx, g, E.ge)


@formula("fmin")
def _fmin(ctx, g):
    return _fmax_fmin(ctx, g, E.le)


@formula("atan2")
def _atan2(ctx, g):
    a, b = ctx.inputs
    r = E.div(g, E.add(_sq(a), _sq(b)))
    return (E.mul(r, b) if ctx.needs(0) else None), (E.neg(E.mul(r, a)) if ctx.needs(1)
                                                      else None)


@formula("hypot")
def _hypot(ctx, g):
    a, b = ctx.inputs
    r = E.div(g, E.hypot(a, b))
    return (E.mul(r, a) if ctx.needs(0) else None), (E.mul(r, b) if ctx.needs(1) else None)


@formula("copysign")
def _copysign(ctx, g):
    a, b = ctx.inputs
    ga = None
    if ctx.needs(0):
        ratio = E.div(E.copysign(a, b), a)
        ga = E.mul(g, E.where(E.eq(a, 0), 0.0, ratio))
    return ga, (_zeros(g) if ctx.needs(1) else None)


@formula("xlogy")
def _xlogy(ctx, g):
    a, b = ctx.inputs
    ga = gb = None
    if ctx.needs(0):
        ga = E.xlogy(g, b)
        if _is_t(b):
            ga = E.where(E.logical_and(E.eq(a, 0), E.le(b, 0)), 0.0, ga)
        elif b <= 0:
            ga = E.where(E.eq(a, 0), 0.0, ga)
    if ctx.needs(1):
        gb = E.div(E.mul(g, a), b)
    return ga, gb


@formula("logaddexp")
def _logaddexp(ctx, g):
    a, b = ctx.inputs
    ga = E.div(g, E.add(E.exp(E.sub(b, a)), 1)) if ctx.needs(0) else None
    gb = E.div(g, E.add(E.exp(E.sub(a, b)), 1)) if ctx.needs(1) else None
    return ga, gb


# ---------------------------------------------------------------------------
# fused backward helpers: their own derivatives (for double backward)

@formula("relu_backward")
def _relu_backward(ctx, g):
    grad, x = ctx.inputs
    return (E.relu_backward(g, x) if ctx.needs(0) else None,
            _zeros(x) if ctx.needs(1) else None)


@formula("sigmoid_backward")
def _sigmoid_backward(ctx, g):
    grad, y = ctx.inputs
    ga = E.sigmoid_backward(g, y) if ctx.needs(0) else None
    gb = E.mul(E.mul(g, grad), E.sub(1, E.mul(y, 2))) if ctx.needs(1) else None
    return ga, gb


@formula("tanh_backward")
def _tanh_backward(ctx, g):
    grad, y = ctx.inputs
    ga = E.tanh_backward(g, y) if ctx.needs(0) else None
    gb = E.mul(E.mul(E.mul(g, grad), y), -2.0) if ctx.needs(1) else None
    return ga, gb


def _gelu_second(x):
    # d2/dx2 gelu(x) = phi(x) * (2 - x^2) for the exact (erf) form
    phi = E.mul(E.exp(E.mul(E.mul(x, x), -0.5)), _SQRT_2PI_INV)
    return E.mul(phi, E.sub(2.0, E.mul(x, x)))


@formula("gelu_backward")
def _gelu_backward(ctx, g):
    # the native op records exact and tanh forms under one name; ember's gelu formula
    # only records the fused helper for the exact form (see _gelu below)
    grad, x = ctx.inputs
    ga = E.gelu_backward(g, x) if ctx.needs(0) else None
    gb = E.mul(E.mul(g, grad), _gelu_second(x)) if ctx.needs(1) else None
    return ga, gb


@formula("silu_backward")
def _silu_backward(ctx, g):
    grad, x = ctx.inputs
    ga = E.silu_backward(g, x) if ctx.needs(0) else None
    gb = None
    if ctx.needs(1):
        s = E.sigmoid(x)
        d2 = E.mul(E.mul(s, E.sub(1, s)), E.add(E.mul(x, E.sub(1, E.mul(s, 2))), 2))
        gb = E.mul(E.mul(g, grad), d2)
    return ga, gb


# ---------------------------------------------------------------------------
# unary ops

def _unary(name, save_output=False, saves=True):
    # one input, gradient of the input's shape and dtype: the engine skips its fix-up
    def deco(fn):
        return formula(name, save_output=save_output, exact=True, saves=saves)(fn)
    return deco


@_unary("neg", saves=False)
def _neg(ctx, g):
    return (E.neg(g),)


@_unary("abs")
def _abs(ctx, g):
    return (E.mul(g, E.sign(ctx.input(0))),)


def _zero_grad(ctx, g):
    return (_zeros(g),)


for _n in ("sign", "sgn", "floor", "ceil", "round", "trunc"):
    formula(_n, exact=True, saves=False)(_zero_grad)


@_unary("frac", saves=False)
def _frac(ctx, g):
    return (g,)


@_unary("exp", save_output=True)
def _exp(ctx, g):
    return (E.mul(g, ctx.output),)


@_unary("exp2", save_output=True)
def _exp2(ctx, g):
    return (E.mul(E.mul(g, ctx.output), _LN2),)


@_unary("expm1", save_output=True)
def _expm1(ctx, g):
    return (E.mul(g, E.add(ctx.output, 1)),)


@_unary("log")
def _log(ctx, g):
    return (E.div(g, ctx.input(0)),)


@_unary("log2")
def _log2(ctx, g):
    return (E.div(g, E.mul(ctx.input(0), _LN2)),)


@_unary("log10")
def _log10(ctx, g):
    return (E.div(g, E.mul(ctx.input(0), _LN10)),)


@_unary("log1p")
def _log1p(ctx, g):
    return (E.div(g, E.add(ctx.input(0), 1)),)


@_unary("sqrt", save_output=True)
def _sqrt(ctx, g):
    return (E.div(g, E.mul(ctx.output, 2)),)


@_unary("rsqrt", save_output=True)
def _rsqrt(ctx, g):
    y = ctx.output
    return (E.mul(E.mul(g, E.mul(E.mul(y, y), y)), -0.5),)


@_unary("sin")
def _sin(ctx, g):
    return (E.mul(g, E.cos(ctx.input(0))),)


@_unary("cos")
def _cos(ctx, g):
    return (E.neg(E.mul(g, E.sin(ctx.input(0)))),)


@_unary("tan", save_output=True)
def _tan(ctx, g):
    y = ctx.output
    return (E.mul(g, E.add(E.mul(y, y), 1)),)


@_unary("asin")
def _asin(ctx, g):
    x = ctx.input(0)
    return (E.mul(g, E.rsqrt(E.sub(1, E.mul(x, x)))),)


@_unary("acos")
def _acos(ctx, g):
    x = ctx.input(0)
    return (E.neg(E.mul(g, E.rsqrt(E.sub(1, E.mul(x, x))))),)


@_unary("atan")
def _atan(ctx, g):
    x = ctx.input(0)
    return (E.div(g, E.add(E.mul(x, x), 1)),)


@_unary("sinh")
def _sinh(ctx, g):
    return (E.mul(g, E.cosh(ctx.input(0))),)


@_unary("cosh")
def _cosh(ctx, g):
    return (E.mul(g, E.sinh(ctx.input(0))),)


@_unary("tanh", save_output=True)
def _tanh(ctx, g):
    return (E.tanh_backward(g, ctx.output),)


@_unary("asinh")
def _asinh(ctx, g):
    x = ctx.input(0)
    return (E.mul(g, E.rsqrt(E.add(E.mul(x, x), 1))),)


@_unary("acosh")
def _acosh(ctx, g):
    x = ctx.input(0)
    return (E.mul(g, E.rsqrt(E.sub(E.mul(x, x), 1))),)


@_unary("atanh")
def _atanh(ctx, g):
    x = ctx.input(0)
    return (E.div(g, E.sub(1, E.mul(x, x))),)


@_unary("sigmoid", save_output=True)
def _sigmoid(ctx, g):
    return (E.sigmoid_backward(g, ctx.output),)


@_unary("relu")
def _relu(ctx, g):
    return (E.relu_backward(g, ctx.input(0)),)


@_unary("silu")
def _silu(ctx, g):
    return (E.silu_backward(g, ctx.input(0)),)


@_unary("mish")
def _mish(ctx, g):
    x = ctx.input(0)
    r = E._mish_backward(g, x)
    if r is not None:
        return (r,)
    t = E.tanh(E.softplus(x))
    return (E.mul(g, E.add(t, E.mul(E.mul(x, E.sigmoid(x)), E.sub(1, E.mul(t, t))))),)


@_unary("erf")
def _erf(ctx, g):
    x = ctx.input(0)
    return (E.mul(g, E.mul(E.exp(E.neg(E.mul(x, x))), _2_SQRTPI)),)


@_unary("erfc")
def _erfc(ctx, g):
    x = ctx.input(0)
    return (E.mul(g, E.mul(E.exp(E.neg(E.mul(x, x))), -_2_SQRTPI)),)


@_unary("reciprocal", save_output=True)
def _reciprocal(ctx, g):
    y = ctx.output
    return (E.neg(E.mul(g, E.mul(y, y))),)


@_unary("square")
def _square(ctx, g):
    return (E.mul(E.mul(g, ctx.input(0)), 2),)


@_unary("lgamma")
def _lgamma(ctx, g):
    from ember._C import special

    return (E.mul(g, special.digamma(ctx.input(0))),)


# torch's 1/6 is a float32 constant for every dtype
_SIXTH = 0.16666667163372040


@_unary("hardsigmoid")
def _hardsigmoid(ctx, g):
    x = ctx.input(0)
    inside = E.logical_and(E.gt(x, -3.0), E.lt(x, 3.0))
    return (E.where(inside, E.mul(g, _SIXTH), 0.0),)


@_unary("logsigmoid")
def _logsigmoid(ctx, g):
    return (E.mul(g, E.sigmoid(E.neg(ctx.input(0)))),)


@_unary("hardswish")
def _hardswish(ctx, g):
    x = ctx.input(0)
    mid = E.mul(g, E.add(E.div(x, 3.0), 0.5))
    # torch's breakpoints: 0 from x <= -3, the incoming gradient from x >= 3
    return (E.where(E.le(x, -3.0), 0.0, E.where(E.lt(x, 3.0), mid, g)),)


def _gelu_tanh_grad(x):
    k = math.sqrt(2.0 / math.pi)
    x2 = E.mul(x, x)
    inner = E.mul(E.add(E.mul(E.mul(x2, x), 0.044715), x), k)
    t = E.tanh(inner)
    dinner = E.mul(E.add(E.mul(x2, 3 * 0.044715), 1), k)
    return E.add(E.mul(E.add(t, 1), 0.5), E.mul(E.mul(E.mul(x, 0.5), E.sub(1, E.mul(t, t))),
                                                dinner))


@_unary("gelu")
def _gelu(ctx, g):
    x = ctx.input(0)
    approximate = ctx._attrs[0] if ctx._attrs else "none"
    if approximate == "tanh":
        if is_grad_enabled():   # recording (create_graph): the composite form
            return (E.mul(g, _gelu_tanh_grad(x)),)
        return (E.gelu_backward(g, x, approximate="tanh"),)
    return (E.gelu_backward(g, x),)


@_unary("softplus")
def _softplus(ctx, g):
    x = ctx.input(0)
    beta, threshold = ctx._attrs
    r = E._softplus_backward(g, x, beta, threshold)
    if r is not None:
        return (r,)
    z = x if beta == 1 else E.mul(x, beta)      # x * 1 is x: one pass fewer
    return (E.where(E.gt(z, threshold), g, E.mul(g, E.sigmoid(z))),)


@_unary("leaky_relu")
def _leaky_relu(ctx, g):
    x = ctx.input(0)
    return (E.where(E.gt(x, 0), g, E.mul(g, ctx._attrs[0])),)


@_unary("elu")
def _elu(ctx, g):
    x = ctx.input(0)
    alpha, scale, input_scale = ctx._attrs
    r = E._elu_backward(g, x, alpha, scale, input_scale)
    if r is not None:
        return (r,)
    # x * 1 is x: skipped (elu's default input_scale); g * scale stays, as it also
    # makes a broadcast incoming gradient contiguous before the select
    xs = x if input_scale == 1 else E.mul(x, input_scale)
    neg = E.mul(E.mul(g, E.exp(xs)), input_scale * scale * alpha)
    return (E.where(E.gt(x, 0), E.mul(g, scale), neg),)


@formula("clamp", exact=True)
def _clamp(ctx, g):
    x = ctx.input(0)
    lo, hi = ctx._attrs
    if lo is not None and hi is not None:
        m = E.logical_and(E.ge(x, lo), E.le(x, hi))
    elif lo is not None:
        m = E.ge(x, lo)
    else:
        m = E.le(x, hi)
    return (E.where(m, g, 0.0),)


@formula("where")
def _where(ctx, g):
    c = ctx._attrs[0]
    return (E.where(c, g, 0.0) if ctx.needs(0) else None,
            E.where(c, 0.0, g) if ctx.needs(1) else None)


@formula("lerp")
def _lerp(ctx, g):
    a, b, w = ctx.inputs
    ga = E.mul(g, E.rsub(w, 1) if _is_t(w) else 1 - w) if ctx.needs(0) else None
    gb = E.mul(g, w) if ctx.needs(1) else None
    gw = E.mul(g, E.sub(b, a)) if ctx.needs(2) else None
    return ga, gb, gw


# ---------------------------------------------------------------------------
# threshold, hardshrink, softshrink, prelu, glu: the fused backward kernels, with the
# same selects from public ops where they cannot run (other devices, Python modes)

def _threshold_grad(g, x, threshold):
    r = E._threshold_backward(g, x, threshold)
    return E.where(E.le(x, threshold), 0.0, g) if r is None else r


def _shrink_grad(g, x, lambd, name):
    r = E._shrink_backward(g, x, lambd, name)
    if r is None:
        r = E.where(E.logical_or(E.lt(x, -lambd), E.gt(x, lambd)), g, 0.0)
    return r


@_unary("threshold")
def _threshold(ctx, g):
    return (_threshold_grad(g, ctx.input(0), ctx._attrs[0]),)


@_unary("hardshrink")
def _hardshrink(ctx, g):
    return (_shrink_grad(g, ctx.input(0), ctx._attrs[0], "hardshrink_backward"),)


@_unary("softshrink")
def _softshrink(ctx, g):
    return (_shrink_grad(g, ctx.input(0), ctx._attrs[0], "softshrink_backward"),)


@formula("threshold_backward")
def _threshold_backward(ctx, g):
    grad, x = ctx.inputs
    return (_threshold_grad(g, x, ctx._attrs[0]) if ctx.needs(0) else None,
            _zeros(x) if ctx.needs(1) else None)


def _shrink_backward_backward(name):
    def fn(ctx, g):
        grad, x = ctx.inputs
        return (_shrink_grad(g, x, ctx._attrs[0], name) if ctx.needs(0) else None,
                _zeros(x) if ctx.needs(1) else None)
    return formula(name)(fn)


_shrink_backward_backward("hardshrink_backward")
_shrink_backward_backward("softshrink_backward")


@formula("prelu", node_name="PreluKernelBackward0")
def _prelu(ctx, g):
    # torch's: grad where x > 0, else weight * grad; the weight's x * grad where x <= 0
    # (summed to the weight's shape by the engine)
    x, w = ctx.inputs
    pos = E.gt(x, 0)
    return (E.where(pos, g, E.mul(w, g)) if ctx.needs(0) else None,
            E.where(pos, 0.0, E.mul(x, g)) if ctx.needs(1) else None)


@_unary("glu")
def _glu(ctx, g):
    x = ctx.input(0)
    d = ctx._attrs[0]
    r = E._glu_backward(g, x, d)
    if r is not None:
        return (r,)
    import ember

    a, b = x.chunk(2, d)
    s = E.sigmoid(b)
    return (ember.cat([E.mul(s, g), E.mul(E.mul(E.mul(E.rsub(s, 1), s), a), g)], d),)


@formula("logaddexp2")
def _logaddexp2(ctx, g):
    a, b = ctx.inputs
    ga = E.div(g, E.add(E.exp2(E.sub(b, a)), 1)) if ctx.needs(0) else None
    gb = E.div(g, E.add(E.exp2(E.sub(a, b)), 1)) if ctx.needs(1) else None
    return ga, gb


@formula("nextafter")
def _nextafter(ctx, g):
    raise RuntimeError("the derivative for 'nextafter' is not implemented.")
