"""Backward formulas for complex tensors (torch's convention: the gradient of a real
loss L with respect to z = x + iy is dL/dx + i dL/dy, the conjugate Wirtinger
derivative times two), and for the FFT kernels.

A holomorphic op's real formula ``g * f'(z)`` becomes ``g * conj(f'(z))``; as every
formula is linear in ``g`` that is ``conj(formula(conj(g)))``, so the real formulas of
those ops are wrapped here rather than written twice."""
from __future__ import annotations

from ember._C import cplx as C
from ember._C import elementwise as E
from ember._C import fft as K
from ember._C.core import TensorBase
from ember.autograd import _engine
from ember.autograd._table import _FLAGS, _OPTIONS, FORMULAS, formula

# ops whose derivative is holomorphic in every tensor input
_HOLOMORPHIC = ("add", "sub", "mul", "div", "pow", "neg", "exp", "exp2", "expm1", "log",
                "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan", "sinh",
                "cosh", "tanh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "sigmoid",
                "reciprocal", "square", "cumprod", "logcumsumexp")


def _is_c(x):
    return isinstance(x, TensorBase) and x.is_complex()


def _conj(x):
    return C.conj_physical(x) if _is_c(x) else x


def _wrap(fn):
    def backward(ctx, g):
        if not _is_c(g):
            return fn(ctx, g)
        return tuple(_conj(r) for r in fn(ctx, _conj(g)))
    backward.__name__ = getattr(fn, "__name__", "backward")
    return backward


for _n in _HOLOMORPHIC:
    if _n in FORMULAS:
        FORMULAS[_n] = _wrap(FORMULAS[_n])
        _engine._CLASSES.pop(_n, None)


@formula("abs")
def _abs(ctx, g):
    return (E.mul(g, E.sgn(ctx.input(0))),)


_FLAGS["abs"] = (True, True)


@formula("sgn")
def _sgn(ctx, g):
    x = ctx.input(0)
    if not _is_c(x):
        return (E.mul(g, 0),)
    # (g - sgn^2 conj(g)) / (2 |z|), zero where z == 0
    s = E.sgn(x)
    a = E.abs(x)
    r = E.div(E.sub(g, E.mul(E.mul(s, s), _conj(g))), E.mul(a, 2))
    return (E.where(E.eq(a, 0), 0, r),)


# --- views between layouts and construction ---------------------------------

@formula("view_as_real", saves=False)
def _view_as_real(ctx, g):
    return (C.view_as_complex(g.contiguous()),)


@formula("view_as_complex", saves=False)
def _view_as_complex(ctx, g):
    return (C.view_as_real(g),)


@formula("real", saves=False)
def _real(ctx, g):
    return (C.complex(g, E.mul(g, 0)),)


@formula("imag", saves=False)
def _imag(ctx, g):
    return (C.complex(E.mul(g, 0), g),)


@formula("complex", saves=False)
def _complex(ctx, g):
    return C.real(g), C.imag(g)


@formula("conj_physical", saves=False)
def _conj_physical(ctx, g):
    return (_conj(g),)


@formula("conj", exact=True, saves=False)
def _conj_view(ctx, g):
    return (_conj(g),)


@formula("angle")
def _angle(ctx, g):
    z = ctx.input(0)
    if not _is_c(z):
        return (E.mul(g, 0),)
    # g * i z / |z|^2, zero at z == 0
    a2 = E.square(E.abs(z))
    r = E.mul(E.div(E.mul(g, z), a2), 1j)
    return (E.where(E.eq(a2, 0), 0, r),)


@formula("cprod")
def _cprod(ctx, g):
    x = ctx.input(0)
    dims, keepdim = ctx.attrs["dims"], ctx.attrs["keepdim"]
    out = C.reduce("prod", x, dims, True, None, None)
    if not keepdim:
        for d in sorted(dims):
            g = g.unsqueeze(d)
    if not bool(E.eq(x, 0).any()):
        return (E.mul(g, _conj(E.div(out, x))),)
    # zeros present: d prod / d x_i is the product of all the other elements
    from ember.autograd._formulas_reduce import _exclusive_prod
    nd = x.dim()
    if nd == 0:
        return (g,)
    keep = [d for d in range(nd) if d not in dims]
    perm = keep + list(dims)
    kshape = [x.shape[d] for d in keep]
    others = _exclusive_prod(x.permute(*perm).reshape(*kshape, -1))
    others = others.reshape(*kshape, *[x.shape[d] for d in dims])
    inv = [perm.index(d) for d in range(nd)]
    return (E.mul(g, _conj(others.permute(*inv))),)


# --- FFT kernels (torch's fft_c2c / fft_r2c / fft_c2r backward) ----------------

@formula("_fft_c2c", saves=False)
def _fft_c2c(ctx, g):
    dim, forward, scale = ctx.attrs
    return (K._fft_c2c(g, dim, not forward, scale),)


@formula("_fft_r2c", saves=False)
def _fft_r2c(ctx, g):
    dim, scale, n = ctx.attrs
    import ember
    # adjoint of "keep the first n // 2 + 1 terms of the full transform": zero-pad, then
    # the opposite-sign transform; the input is real, so keep the real part
    pad = n - g.shape[dim]
    if pad:
        shape = list(g.shape)
        shape[dim] = pad
        g = ember.cat([g, ember.zeros(shape, dtype=g.dtype)], dim)
    return (C.real(K._fft_c2c(g, dim, False, scale)),)


@formula("_fft_c2r", saves=False)
def _fft_c2r(ctx, g):
    dim, n, scale = ctx.attrs
    gi = K._fft_r2c(g, dim, scale)
    extra = n - gi.shape[dim]      # the terms the Hermitian half stands for twice
    if extra > 0:
        import ember
        idx = ember.ones(gi.shape[dim], dtype=gi.dtype.to_real())
        idx[1:1 + extra] = 2
        shape = [1] * gi.dim()
        shape[dim] = gi.shape[dim]
        gi = E.mul(gi, idx.reshape(shape))
    return (gi,)


_OPTIONS["_fft_c2c"] = (False, "FftC2CBackward0")
_OPTIONS["_fft_r2c"] = (False, "FftR2CBackward0")
_OPTIONS["_fft_c2r"] = (False, "FftC2RBackward0")
