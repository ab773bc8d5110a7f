"""Backward formulas of the indexing, gather/scatter, join and reorder ops
(ember/_C/index.pyx).

Every formula uses public ember ops only, so it is recorded again under
``create_graph=True``.  Shapes the formulas need are kept in the op's attrs
(not read from the inputs), so modifying an input after indexing it does not
invalidate the graph, as in PyTorch.  The engine sums each gradient back to
its input's shape (broadcast values, leading 1s)."""
from __future__ import annotations

from ember._C import core as _core
from ember._C import index as _ix
from ember.autograd._table import formula


def _zeros(shape, g):
    return _core.zeros(tuple(shape), dtype=g.dtype, device=g.device)


def _as_getitem(ind):
    return tuple(slice(None) if i is None else i for i in ind)


def _is_tensor(x):
    return isinstance(x, _core.TensorBase)


# --- indexing -----------------------------------------------------------------

@formula("index")
def _index(ctx, g):
    ind, shape = ctx._attrs
    return (_ix.index_put(_zeros(shape, g), ind, g, accumulate=True),)


@formula("index_put")
def _index_put(ctx, g):
    ind, accumulate = ctx._attrs
    has_adv = any(i is not None for i in ind)
    if accumulate:
        gx = g
    elif has_adv:
        gx = _ix.index_put(g, ind, _core.zeros((), dtype=g.dtype))
    else:
        gx = None
    gv = None
    if ctx.needs(1):
        gv = g[_as_getitem(ind)] if has_adv else g
    return (gx, gv)


@formula("setitem", node_name="CopySlices")
def _setitem(ctx, g):
    (items,) = ctx._attrs
    gx = None
    if ctx.needs(0):
        gx = g.clone()
        gx[items] = 0
    gv = g[items] if ctx.needs(1) else None
    return (gx, gv)


@formula("index_select")
def _index_select(ctx, g):
    d, shape = ctx._attrs
    return (_ix.index_add(_zeros(shape, g), d, ctx.input(1), g), None)


@formula("index_add")
def _index_add(ctx, g):
    d, alpha = ctx._attrs
    gs = None
    if ctx.needs(2):
        src = ctx._inputs[2]
        gs = _ix.index_select(g, d, ctx.input(1))
        if alpha != 1:
            gs = gs * alpha
        if src.dim() == 0:
            gs = gs.reshape(())
    return (g, None, gs)


@formula("index_copy")
def _index_copy(ctx, g):
    (d,) = ctx._attrs
    index = ctx.input(1)
    gx = _ix.index_fill(g, d, index, 0) if ctx.needs(0) else None
    gs = _ix.index_select(g, d, index) if ctx.needs(2) else None
    return (gx, None, gs)


@formula("index_fill")
def _index_fill(ctx, g):
    (d,) = ctx._attrs
    index = ctx.input(1)
    gx = _ix.index_fill(g, d, index, 0) if ctx.needs(0) else None
    gv = None
    if ctx.needs(2):
        gv = _ix.index_select(g, d, index).sum()
    return (gx, None, gv)


# --- gather / scatter ---------------------------------------------------------------

@formula("gather")
def _gather(ctx, g):
    d, shape = ctx._attrs
    return (_ix.scatter_add(_zeros(shape, g), d, ctx.input(1), g), None)


@formula("scatter")
def _scatter(ctx, g):
    d, reduce = ctx._attrs
    index = ctx.input(1)
    if reduce not in (None, "add", "sum"):
        raise RuntimeError(f"scatter(): the derivative for reduce='{reduce}' is not implemented")
    gx = None
    if ctx.needs(0):
        gx = g if reduce is not None else _ix.scatter(g, d, index, 0)
    gs = _ix.gather(g, d, index) if ctx.needs(2) and _is_tensor(ctx._inputs[2]) else None
    return (gx, None, gs)


@formula("scatter_add")
def _scatter_add(ctx, g):
    (d,) = ctx._attrs
    gs = _ix.gather(g, d, ctx.input(1)) if ctx.needs(2) else None
    return (g, None, gs)


@formula("scatter_reduce", save_output=True)
def _scatter_reduce(ctx, g):
    d, reduce, include_self = ctx._attrs
    x, index, src = ctx.input(0), ctx.input(1), ctx.input(2)
    if reduce == "sum":
        gx = g if include_self else _ix.scatter(g, d, index, 0)
        return (gx, None, _ix.gather(g, d, index))
    if reduce == "mean":
        cnt = _core.full(tuple(x.shape), 1.0 if include_self else 0.0, dtype=g.dtype,
                         device=g.device)
        cnt = _ix.scatter_add(cnt, d, index, _core.ones(tuple(index.shape), dtype=g.dtype,
                                                        device=g.device))
        cnt = cnt.clamp(min=1)
        gx = g / cnt
        gs = _ix.gather(gx, d, index)
        if not include_self:
            gx = _ix.scatter(gx, d, index, 0)
        return (gx, None, gs)
    if reduce in ("amax", "amin"):
        out = ctx.output
        value = _ix.gather(out, d, index)
        self_is = (x == out).to(g.dtype)
        src_is = (src == value).to(g.dtype)
        n = _ix.scatter_add(self_is, d, index, src_is)
        dist = g / n
        gx = self_is * dist
        if not include_self:
            gx = _ix.scatter(gx, d, index, 0)
        gs = src_is * _ix.gather(dist, d, index)
        return (gx, None, gs)
    raise RuntimeError(f"scatter_reduce(): the derivative for reduce='{reduce}' is not "
                       f"implemented")


# --- masks ------------------------------------------------------------------------

@formula("masked_fill")
def _masked_fill(ctx, g):
    mask = ctx.input(1)
    gx = _ix.masked_fill(g, mask, 0) if ctx.needs(0) else None
    gv = None
    if ctx.needs(2):
        gv = _ix.masked_select(g, mask).sum()
    return (gx, None, gv)


@formula("masked_select")
def _masked_select(ctx, g):
    (shape,) = ctx._attrs
    return (_ix.masked_scatter(_zeros(shape, g), ctx.input(1), g), None)


@formula("masked_scatter")
def _masked_scatter(ctx, g):
    (src_shape,) = ctx._attrs
    mask = ctx.input(1)
    gx = _ix.masked_fill(g, mask, 0) if ctx.needs(0) else None
    gs = None
    if ctx.needs(2):
        sel = _ix.masked_select(g, mask)
        n = 1
        for s in src_shape:
            n *= s
        k = sel.numel()
        if k < n:
            sel = _ix.cat([sel, _core.zeros(n - k, dtype=g.dtype, device=g.device)])
        gs = sel.reshape(tuple(src_shape))
    return (gx, None, gs)


# --- joins and reorders ----------------------------------------------------------------

@formula("cat")
def _cat(ctx, g):
    d, sizes, skipped = ctx._attrs
    out, start = [], 0
    for size, skip in zip(sizes, skipped):
        if skip:
            out.append(None)
            continue
        out.append(g.narrow(d, start, size))
        start += size
    return tuple(out)


@formula("flip")
def _flip(ctx, g):
    (dims,) = ctx._attrs
    return (_ix.flip(g, dims),)


@formula("roll")
def _roll(ctx, g):
    shifts, dims = ctx._attrs
    return (_ix.roll(g, tuple(-s for s in shifts), dims),)


@formula("repeat")
def _repeat(ctx, g):
    in_shape, reps = ctx._attrs
    n = len(reps)
    padded = (1,) * (n - len(in_shape)) + tuple(in_shape)
    inter = []
    for r, s in zip(reps, padded):
        inter += [r, s]
    if not n:
        return (g,)
    return (g.reshape(tuple(inter)).sum(tuple(range(0, 2 * n, 2))),)


@formula("tril")
def _tril(ctx, g):
    return (_ix.tril(g, ctx._attrs[0]),)


@formula("triu")
def _triu(ctx, g):
    return (_ix.triu(g, ctx._attrs[0]),)


@formula("diag_embed")
def _diag_embed(ctx, g):
    offset, a, b = ctx._attrs
    r = g.diagonal(offset, a, b)
    return (r,)
