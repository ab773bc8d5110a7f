"""Backward formulas of the fused channel normalisations (batch_norm, group_norm).

Each runs one C kernel from the statistics its forward saved.  Under
create_graph the composed forward is differentiated instead, so its own
formulas record a graph of the backward."""
from __future__ import annotations

from ember._C import chnorm as CN
from ember._C.core import is_grad_enabled, zeros_like
from ember.autograd._table import formula


def _composed_grads(ctx, g, forward):
    """the gradients of forward(x, w, b) at the node's inputs, with a graph"""
    from ember import autograd
    x, w, b = ctx.inputs
    needs = (ctx.needs(0), w is not None and ctx.needs(1), b is not None and ctx.needs(2))
    wanted = [t for t, n in zip((x, w, b), needs) if n]
    got = iter(autograd.grad(forward(x, w, b), wanted, g, create_graph=True,
                             allow_unused=True))
    return tuple(next(got) if n else None for n in needs)


def _finish(ctx, dx, dw, db):
    _, w, b = ctx.inputs
    return (dx, dw.reshape(w.shape) if dw is not None else None,
            db.reshape(b.shape) if db is not None else None)


@formula("batch_norm", exact=True, node_name="NativeBatchNormBackward0")
def _batch_norm(ctx, g):
    x, w, b = ctx.inputs
    a = ctx._attrs
    if is_grad_enabled():
        from ember.nn.functional import _batch_norm_composite
        if a["training"]:
            def fwd(x, w, b):
                return _batch_norm_composite(x, None, None, w, b, True, 0.0, a["eps"])
        else:
            # eval: the saved running statistics are constants of the graph
            shape = (1, -1) + (1,) * (x.dim() - 2)

            def fwd(x, w, b):
                y = (x - a["save_mean"].reshape(shape)) * a["save_invstd"].reshape(shape)
                y = y * w.reshape(shape) if w is not None else y
                return y + b.reshape(shape) if b is not None else y
        return _composed_grads(ctx, g, fwd)
    need_w, need_b = w is not None and ctx.needs(1), b is not None and ctx.needs(2)
    if x.numel() == 0:
        return (zeros_like(x) if ctx.needs(0) else None, zeros_like(w) if need_w else None,
                zeros_like(b) if need_b else None)
    return _finish(ctx, *CN.batch_norm_backward(g, x, a["save_mean"], a["save_invstd"], w,
                                                a["training"], ctx.needs(0), need_w, need_b))


@formula("group_norm", exact=True, node_name="NativeGroupNormBackward0")
def _group_norm(ctx, g):
    x, w, b = ctx.inputs
    a = ctx._attrs
    if is_grad_enabled():
        from ember.nn.functional import _group_norm_composite
        return _composed_grads(ctx, g, lambda x, w, b: _group_norm_composite(
            x, a["num_groups"], w, b, a["eps"]))
    need_w, need_b = w is not None and ctx.needs(1), b is not None and ctx.needs(2)
    if x.numel() == 0:
        return (zeros_like(x) if ctx.needs(0) else None, zeros_like(w) if need_w else None,
                zeros_like(b) if need_b else None)
    return _finish(ctx, *CN.group_norm_backward(g, x, a["mean"], a["rstd"], w, a["num_groups"],
                                                ctx.needs(0), need_w, need_b))
