"""Backward formulas of the core's views and copies (ember/_C/core.pyx).

Backward passes that write into a fresh zero tensor (select, narrow, diagonal,
as_strided) run as one recorded op each (``*_backward``), whose own formula is
the forward view again, so they stay differentiable under ``create_graph``."""
from __future__ import annotations

from ember._C.core import ones, zeros
from ember.autograd._engine import _record_composite
from ember.autograd._table import formula


@formula("view", exact=True, saves=False)
def _view(ctx, g):
    return (g.reshape(ctx._attrs[0]),)


@formula("permute", exact=True, saves=False)
def _permute(ctx, g):
    dims = ctx._attrs[0]
    inv = [0] * len(dims)
    for i, d in enumerate(dims):
        inv[d] = i
    return (g.permute(*inv),)


@formula("transpose", exact=True, saves=False)
def _transpose(ctx, g):
    a, b = ctx._attrs
    return (g.transpose(a, b),)


@formula("expand", saves=False)
def _expand(ctx, g):
    return (g,)       # the engine sums the gradient back to the input's shape


@formula("view_write", node_name="CopySlices", saves=False)
def _view_write(ctx, g):
    # the base outside the written view keeps its old gradient path; the view's
    # elements (at flat positions pos of the base) take the view's
    # (through the view's conjugate/negative bits where they differ from the base's)
    pos, rel = ctx._attrs
    idx = pos.reshape(-1)
    flat = g.reshape(-1)
    gb = flat.index_fill(0, idx, 0).reshape(g.shape) if ctx.needs(0) else None
    gv = flat.index_select(0, idx).reshape(pos.shape) if ctx.needs(1) else None
    if gv is not None and rel & 1 and gv.is_complex():
        gv = gv.conj_physical()
    if gv is not None and rel & 2:
        gv = gv.neg()
    return (gb, gv)


@formula("clone", exact=True, saves=False)
def _clone(ctx, g):
    return (g,)


@formula("copy_", saves=False)
def _copy(ctx, g):
    # the old value of self is overwritten: no gradient flows to it
    return (None, g)


@formula("to_device", saves=False, node_name="ToCopyBackward0")
def _to_device(ctx, g):
    return (g.to(ctx.inputs[0].device),)    # back to the input's device


@formula("to_dtype", saves=False)
def _to_dtype(ctx, g):
    return (g,)       # the engine casts to the input's dtype


# --- narrow / select / diagonal: scatter into zeros --------------------------

def _narrow_bw(g, old_shape, dim, start, length):
    r = zeros(tuple(old_shape), dtype=g.dtype, device=g.device)
    r.narrow(dim, start, length).copy_(g)
    return r


def _select_bw(g, old_shape, dim, index):
    r = zeros(tuple(old_shape), dtype=g.dtype, device=g.device)
    r.select(dim, index).copy_(g)
    return r


def _diagonal_bw(g, old_shape, offset, d1, d2):
    r = zeros(tuple(old_shape), dtype=g.dtype, device=g.device)
    r.diagonal(offset, d1, d2).copy_(g)
    return r


@formula("narrow", exact=True, saves=False)
def _narrow(ctx, g):
    a = ctx._attrs
    return (_record_composite("narrow_backward", lambda t: _narrow_bw(t, *a), (g,), a),)


@formula("narrow_backward", node_name="SliceBackwardBackward0", exact=True, saves=False)
def _narrow_backward(ctx, g):
    _, dim, start, length = ctx._attrs
    return (g.narrow(dim, start, length),)


@formula("select", exact=True, saves=False)
def _select(ctx, g):
    a = ctx._attrs
    return (_record_composite("select_backward", lambda t: _select_bw(t, *a), (g,), a),)


@formula("select_backward", exact=True, saves=False)
def _select_backward(ctx, g):
    _, dim, index = ctx._attrs
    return (g.select(dim, index),)


@formula("diagonal", exact=True, saves=False)
def _diagonal(ctx, g):
    a = ctx._attrs
    return (_record_composite("diagonal_backward", lambda t: _diagonal_bw(t, *a), (g,), a),)


@formula("diagonal_backward", exact=True, saves=False)
def _diagonal_backward(ctx, g):
    _, offset, d1, d2 = ctx._attrs
    return (g.diagonal(offset, d1, d2),)


# --- as_strided: scatter-add through the output geometry, gather through the input's

def _extent(size, stride, off):
    hi = off
    for s, st in zip(size, stride):
        if s == 0:
            return off
        hi += (s - 1) * st
    return hi + 1


def _overlaps(size, stride):
    dims = sorted((st, s) for s, st in zip(size, stride) if s > 1)
    reach = 0
    for st, s in dims:
        if st <= reach:
            return True
        reach += (s - 1) * st
    return False


def _scatter_add(buf, size, stride, off, g):
    if not _overlaps(size, stride):
        buf.as_strided(size, stride, off).add_(g)
        return
    # overlapping windows (e.g. unfold with step < size): split on the first dimension
    for i in range(size[0]):
        _scatter_add(buf, size[1:], stride[1:], off + i * stride[0], g.select(0, i))


def _alias_count(geom, n, dtype, device=None):
    """How many elements of ``geom`` address each of ``n`` storage locations."""
    size, stride, off = geom
    cnt = zeros(n, dtype=dtype, device=device)
    _scatter_add(cnt, tuple(size), tuple(stride), off, ones(tuple(size), dtype=dtype,
                                                              device=device))
    return cnt


def _as_strided_bw(g, in_geom, out_geom, share=True):
    """Scatter-add ``g`` through ``out_geom``, gather through ``in_geom``.  With ``share``,
    an ``in_geom`` that aliases memory (stride 0 after expand) splits each location's
    gradient among its aliases, so that summing them back (expand's backward) counts it
    once."""
    (isz, ist, ioff), (osz, ost, ooff) = in_geom, out_geom
    lo = min(ioff, ooff)
    hi = max(_extent(isz, ist, ioff), _extent(osz, ost, ooff))
    buf = zeros(max(hi - lo, 0), dtype=g.dtype, device=g.device)
    _scatter_add(buf, tuple(osz), tuple(ost), ooff - lo, g)
    r = buf.as_strided(tuple(isz), tuple(ist), ioff - lo)
    if not _overlaps(isz, ist):
        return r
    if not share:
        return r.clone()
    cnt = _alias_count((isz, ist, ioff - lo), buf.shape[0], g.dtype, g.device)
    return r / cnt.as_strided(tuple(isz), tuple(ist), ioff - lo).clamp(min=1)


def _as_strided_bw_t(h, in_geom, out_geom):
    """The adjoint of :func:`_as_strided_bw`: share over ``in_geom``'s aliases, scatter
    through ``in_geom``, gather through ``out_geom``."""
    (isz, ist, ioff), (osz, ost, ooff) = in_geom, out_geom
    if _overlaps(isz, ist):
        lo = min(ioff, ooff)
        hi = max(_extent(isz, ist, ioff), _extent(osz, ost, ooff))
        cnt = _alias_count((isz, ist, ioff - lo), max(hi - lo, 0), h.dtype)
        h = h / cnt.as_strided(tuple(isz), tuple(ist), ioff - lo).clamp(min=1)
    return _as_strided_bw(h, out_geom, in_geom, share=False)


@formula("as_strided", exact=True, saves=False)
def _as_strided(ctx, g):
    old_shape, old_stride, old_off, size, stride, off = ctx._attrs
    geoms = ((tuple(old_shape), tuple(old_stride), old_off), (tuple(size), tuple(stride), off))
    return (_record_composite("as_strided_backward",
                              lambda t: _as_strided_bw(t, geoms[0], geoms[1]), (g,), geoms),)


@formula("as_strided_backward", exact=True, saves=False)
def _as_strided_backward(ctx, g):
    geoms = ctx._attrs
    return (_record_composite("as_strided_backward_t",
                              lambda t: _as_strided_bw_t(t, geoms[0], geoms[1]), (g,), geoms),)


@formula("as_strided_backward_t", exact=True, saves=False)
def _as_strided_backward_t(ctx, g):
    geoms = ctx._attrs
    return (_record_composite("as_strided_backward",
                              lambda t: _as_strided_bw(t, geoms[0], geoms[1]), (g,), geoms),)
