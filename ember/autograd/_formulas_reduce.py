"""Backward formulas of the reductions, scans, softmax and sorting ops
(ember/_C/reduce.pyx).

Written with public ember ops so that ``create_graph=True`` records them again.
Attributes recorded by the forward: ``dim`` (a tuple of the reduced dims, already
wrapped; an int for single-dim ops), ``keepdim`` and op-specific extras.  Integer
outputs (indices) are never differentiable: their incoming grad is ignored."""
from __future__ import annotations

from ember._C import elementwise as E
from ember._C import reduce as R
from ember._C.core import is_grad_enabled, zeros_like
from ember.autograd._table import formula


def _unsq(g, dims, keepdim):
    """Give a reduced gradient back the reduced dims (as size 1)."""
    if keepdim:
        return g
    for d in sorted(dims):
        g = g.unsqueeze(d)
    return g


def _dims(ctx):
    d = ctx._attrs["dim"]
    return tuple(range(ctx.inputs[0].dim())) if d is None else (
        (d,) if isinstance(d, int) else tuple(d))


def _count(shape, dims):
    n = 1
    for d in dims:
        n *= shape[d]
    return n


def _bcast(ctx, g):
    """g (the output's shape) expanded to the input's shape."""
    x = ctx.inputs[0]
    return _unsq(g, _dims(ctx), ctx._attrs.get("keepdim", False)).expand(*x.shape)


def _single(g):
    return g[0] if isinstance(g, (tuple, list)) else g


# ---------------------------------------------------------------------------
# sums and means

@formula("sum", saves=False)
def _sum(ctx, g):
    return (_bcast(ctx, g),)


@formula("mean", saves=False)
def _mean(ctx, g):
    n = _count(ctx.inputs[0].shape, _dims(ctx))
    return (E.div(_bcast(ctx, g), n),)


@formula("nansum")
def _nansum(ctx, g):
    x = ctx.input(0)
    return (E.where(E.isnan(x), 0.0, _bcast(ctx, g)),)


@formula("nanmean")
def _nanmean(ctx, g):
    x = ctx.input(0)
    ok = E.logical_not(E.isnan(x))
    cnt = R.sum(ok, _dims(ctx), True)
    gi = _unsq(g, _dims(ctx), ctx._attrs["keepdim"])
    return (E.where(ok, E.div(gi, cnt), 0.0),)


@formula("prod", save_output=True)
def _prod(ctx, g):
    x = ctx.input(0)
    dims = _dims(ctx)
    kd = ctx._attrs["keepdim"]
    gi = _unsq(g, dims, kd)
    if not bool(R.any(E.eq(x, 0))):
        return (E.div(E.mul(gi, _unsq(ctx.output, dims, kd)), x),)
    # zeros present: the product of all the other elements, by exclusive scans
    nd = x.dim()
    if nd == 0:
        return (gi,)
    keep = [d for d in range(nd) if d not in dims]
    perm = keep + list(dims)
    xp = x.permute(*perm)
    kshape = [x.shape[d] for d in keep]
    flat = xp.reshape(*kshape, -1)
    others = _exclusive_prod(flat)
    rshape = [x.shape[d] for d in dims]
    others = others.reshape(*kshape, *rshape)
    inv = [0] * nd
    for i, d in enumerate(perm):
        inv[d] = i
    return (E.mul(gi, others.permute(*inv)),)


def _exclusive_prod(t):
    """For each position along the last dim: the product of every other element."""
    import ember
    one = ember.ones(*t.shape[:-1], 1, dtype=t.dtype)
    left = R.cumprod(ember.cat([one, t.narrow(-1, 0, t.shape[-1] - 1)], -1), -1)
    rev = t.flip(-1)
    right = R.cumprod(ember.cat([one, rev.narrow(-1, 0, t.shape[-1] - 1)], -1), -1).flip(-1)
    return E.mul(left, right)


# ---------------------------------------------------------------------------
# extremes

def _evenly(ctx, g, out):
    """The gradient of a max/min over dims, split evenly between tied elements."""
    x = ctx.input(0)
    dims = _dims(ctx)
    kd = ctx._attrs.get("keepdim", False)
    o = _unsq(out, dims, kd)
    mask = E.logical_or(E.eq(x, o), E.logical_and(E.isnan(x), E.isnan(o)))
    cnt = R.sum(mask, dims, True)
    return (E.where(mask, E.div(_unsq(g, dims, kd), cnt), 0.0),)


def _select_back(ctx, g, idx):
    """Gradient of a value-selecting reduction along one dim (scatter into zeros)."""
    x = ctx.inputs[0]
    d = ctx._attrs["dim"]
    if x.dim() == 0:
        return (g.reshape(()),)
    kd = ctx._attrs.get("keepdim", False)
    gi = g if kd else g.unsqueeze(d)
    ii = idx if kd else idx.unsqueeze(d)
    return (zeros_like(x, dtype=g.dtype).scatter(d, ii, gi),)


def _make_extreme(name):
    @formula(name, save_output=True)
    def _ext(ctx, g):
        if isinstance(g, (tuple, list)):                       # (values, indices) with dim
            return _select_back(ctx, g[0], ctx.output[1])
        return _evenly(ctx, g, ctx.output)
    return _ext


_make_extreme("max")
_make_extreme("min")


@formula("amax", save_output=True)
def _amax(ctx, g):
    return _evenly(ctx, g, ctx.output)


@formula("amin", save_output=True)
def _amin(ctx, g):
    return _evenly(ctx, g, ctx.output)


def _make_select(name):
    @formula(name, save_output=True)
    def _sel(ctx, g):
        if not isinstance(g, (tuple, list)):                   # median() of all elements
            x = ctx.inputs[0]
            i = ctx._attrs["index"]
            z = zeros_like(x, dtype=g.dtype).reshape(-1)
            return (z.scatter(0, i.reshape(1), g.reshape(1)).reshape(*x.shape),)
        return _select_back(ctx, g[0], ctx.output[1])
    return _sel


for _n in ("kthvalue", "median", "nanmedian", "mode"):
    _make_select(_n)


@formula("sort", save_output=True)
def _sort(ctx, g):
    x = ctx.inputs[0]
    d = ctx._attrs["dim"]
    if x.dim() == 0:
        return (g[0],)
    return (zeros_like(x, dtype=g[0].dtype).scatter(d, ctx.output[1], g[0]),)


@formula("topk", save_output=True)
def _topk(ctx, g):
    x = ctx.inputs[0]
    d = ctx._attrs["dim"]
    if x.dim() == 0:
        return (g[0],)
    return (zeros_like(x, dtype=g[0].dtype).scatter(d, ctx.output[1], g[0]),)


# ---------------------------------------------------------------------------
# var / std and their (.., mean) forms

def _var_like(ctx, g, want_std, with_mean):
    x = ctx.input(0)
    dims = _dims(ctx)
    kd = ctx._attrs["keepdim"]
    n = _count(x.shape, dims)
    dof = max(0.0, n - ctx._attrs["correction"])
    gv, gm = (g[0], g[1]) if with_mean else (g, None)
    res = None
    if gv is not None:
        mu = R.mean(x, dims, True)
        xc = E.sub(x, mu)
        if want_std:
            s = ctx.output[0] if with_mean else ctx.output
            res = E.div(E.mul(_unsq(gv, dims, kd), xc), E.mul(_unsq(s, dims, kd), dof))
        else:
            res = E.mul(_unsq(gv, dims, kd), E.mul(xc, 2.0 / dof if dof else float("inf")))
    if gm is not None:
        t = E.div(_unsq(gm, dims, kd), n).expand(*x.shape)
        res = t if res is None else E.add(res, t)
    return (res,)


@formula("var", save_output=True)
def _var(ctx, g):
    return _var_like(ctx, g, False, False)


@formula("std", save_output=True)
def _std(ctx, g):
    return _var_like(ctx, g, True, False)


@formula("var_mean", save_output=True)
def _var_mean(ctx, g):
    return _var_like(ctx, g, False, True)


@formula("std_mean", save_output=True)
def _std_mean(ctx, g):
    return _var_like(ctx, g, True, True)


# ---------------------------------------------------------------------------
# norms, logsumexp

@formula("vector_norm", save_output=True)
def _vector_norm(ctx, g):
    x = ctx.input(0)
    p = ctx._attrs["ord"]
    dims = _dims(ctx)
    kd = ctx._attrs["keepdim"]
    gi = _unsq(g, dims, kd)
    nrm = _unsq(ctx.output, dims, kd)
    if p == 0:
        return (zeros_like(x),)
    if p == 1:
        return (E.mul(gi, E.sign(x)),)
    if p == float("inf") or p == float("-inf"):
        ax = E.abs(x)
        mask = E.eq(ax, nrm)
        cnt = R.sum(mask, dims, True)
        return (E.where(mask, E.div(E.mul(gi, E.sign(x)), cnt), 0.0),)
    if p == 2:
        scale = E.where(E.eq(nrm, 0), 0.0, E.div(gi, nrm))
        return (E.mul(x, scale),)
    # general p: x |x|^(p-2) g / ||x||^(p-1)
    ax = E.abs(x)
    num = E.mul(E.mul(x, E.pow(ax, p - 2)), gi)
    return (E.where(E.eq(nrm, 0), 0.0, E.div(num, E.pow(nrm, p - 1))),)


@formula("logsumexp", save_output=True)
def _logsumexp(ctx, g):
    x = ctx.input(0)
    dims = _dims(ctx)
    kd = ctx._attrs["keepdim"]
    return (E.mul(_unsq(g, dims, kd), E.exp(E.sub(x, _unsq(ctx.output, dims, kd)))),)


# ---------------------------------------------------------------------------
# scans

def _rev_cumsum(g, d):
    """sum over j >= k of g[j] along d."""
    return E.add(E.sub(R.sum(g, d, True), R.cumsum(g, d)), g)


@formula("cumsum", saves=False)
def _cumsum(ctx, g):
    return (_rev_cumsum(g, ctx._attrs["dim"]),)


@formula("cumprod", save_output=True)
def _cumprod(ctx, g):
    x = ctx.input(0)
    d = ctx._attrs["dim"]
    out = ctx.output
    zero = E.eq(x, 0)
    if x.dim() == 0 or not bool(R.any(zero)):
        return (E.div(_rev_cumsum(E.mul(g, out), d), x),)
    # zeros (torch's formula): before a slice's first zero, sum_{j>=i} g_j out_j / x_i;
    # at the first zero, the same sum with that zero read as one; after it, nothing
    nz = R.cumsum(zero, d)
    before = E.eq(nz, 0)
    first = E.logical_and(zero, E.eq(nz, 1))
    at_first = _rev_cumsum(E.mul(g, R.cumprod(E.where(first, 1, x), d)), d)
    earlier = E.div(_rev_cumsum(E.mul(g, out), d), E.where(before, x, 1))
    return (E.where(before, earlier, E.where(first, at_first, 0)),)


@formula("logcumsumexp", save_output=True)
def _logcumsumexp(ctx, g):
    x = ctx.input(0)
    d = ctx._attrs["dim"]
    out = ctx.output
    # grad_k = sum_{j>=k} g_j exp(x_k - out_j), shifted by the row max for stability (of
    # the real parts for complex input, whose formula is wrapped as a holomorphic one)
    m = R.amax(out.real if out.is_complex() else out, d, True)
    w = E.mul(g, E.exp(E.sub(m, out)))
    return (E.mul(_rev_cumsum(w, d), E.exp(E.sub(x, m))),)


def _make_cumext(name):
    @formula(name, save_output=True)
    def _ce(ctx, g):
        x = ctx.inputs[0]
        gv = g[0] if isinstance(g, (tuple, list)) else g
        if x.dim() == 0:
            return (gv,)
        d = ctx._attrs["dim"]
        return (zeros_like(x, dtype=gv.dtype).scatter_add(d, ctx.output[1], gv),)
    return _ce


_make_cumext("cummax")
_make_cumext("cummin")


# ---------------------------------------------------------------------------
# softmax

@formula("softmax", save_output=True)
def _softmax(ctx, g):
    y = ctx.output
    d = ctx._attrs["dim"]
    return (E.mul(y, E.sub(g, R.sum(E.mul(g, y), d, True))),)


@formula("log_softmax", save_output=True)
def _log_softmax(ctx, g):
    y = ctx.output
    d = ctx._attrs["dim"]
    return (E.sub(g, E.mul(E.exp(y), R.sum(g, d, True))),)


# ---------------------------------------------------------------------------
# layer_norm

@formula("layer_norm", exact=True, node_name="NativeLayerNormBackward0")
def _layer_norm(ctx, g):
    x, w, b = ctx.inputs
    a = ctx._attrs
    need_w = w is not None and ctx.needs(1)
    need_b = b is not None and ctx.needs(2)
    if is_grad_enabled():
        # a graph of the backward is wanted (create_graph): differentiate the composed
        # forward, whose own formulas are recorded again
        from ember import autograd
        from ember.nn.functional import _layer_norm_composite
        wanted = [t for t, need in ((x, ctx.needs(0)), (w, need_w), (b, need_b)) if need]
        y = _layer_norm_composite(x, a["normalized_shape"], w, b, a["eps"])
        got = iter(autograd.grad(y, wanted, g, create_graph=True, allow_unused=True))
        return tuple(next(got) if need else None
                     for need in (ctx.needs(0), need_w, need_b))
    if x.numel() == 0:
        return (zeros_like(x) if ctx.needs(0) else None, zeros_like(w) if need_w else None,
                zeros_like(b) if need_b else None)
    dx, dw, db = R.layer_norm_backward(g, x, a["mean"], a["rstd"], w, ctx.needs(0),
                                       need_w, need_b)
    return (dx, dw.reshape(w.shape) if dw is not None else None,
            db.reshape(b.shape) if db is not None else None)


# ---------------------------------------------------------------------------
# fused scaled-dot-product attention

@formula("scaled_dot_product_attention", save_output=True, exact=True,
         node_name="ScaledDotProductFlashAttentionForCpuBackward0")
def _sdpa(ctx, g):
    q, k, v = ctx.inputs
    a = ctx._attrs
    if is_grad_enabled():
        # create_graph: differentiate the composed forward, whose formulas record again
        from ember import autograd
        from ember.nn.functional import _sdpa_composite
        needs = [ctx.needs(i) for i in range(3)]
        wanted = [t for t, n in zip((q, k, v), needs) if n]
        y = _sdpa_composite(q, k, v, a.get("attn_mask"), 0.0, a["is_causal"], a["scale"])
        got = iter(autograd.grad(y, wanted, g, create_graph=True, allow_unused=True))
        return tuple(next(got) if n else None for n in needs)
    dq, dk, dv = R.sdpa_fused_backward(g, q, k, v, ctx.output, a["lse"], a["scale"],
                                       a["is_causal"], a.get("attn_mask"))
    return (dq if ctx.needs(0) else None, dk if ctx.needs(1) else None,
            dv if ctx.needs(2) else None)
