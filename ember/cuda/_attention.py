"""Fused scaled-dot-product attention on CUDA (src_cuda/attention.cu): one graph node
whose forward never forms the L x S scores and whose backward regenerates the dropout
mask.  ``F.scaled_dot_product_attention`` routes CUDA tensors here when they fit;
masks, other dtypes and head dims over 256 take the composed ops."""

from __future__ import annotations

import ctypes
from typing import Any

import ember
from ember.autograd import Function
from ember.cuda import _kernels as K
from ember.cuda._device_ops import _philox
from ember.cuda._dispatch import _empty, _lib, _ptr, _stream

_MAX_HEAD = 256


def fits(query: Any, key: Any, value: Any, attn_mask: Any, dropout_p: float) -> bool:
    """Whether the fused kernels compute this attention."""
    dt = query.dtype
    return (attn_mask is None and 0.0 <= dropout_p < 1.0
            and dt in (ember.float32, ember.float64) and key.dtype == dt and value.dtype == dt
            and key.device == query.device and value.device == query.device
            and query.dim() >= 2 and query.dim() == key.dim() == value.dim()
            and query.shape[:-2] == key.shape[:-2] == value.shape[:-2]
            and key.shape[-1] == query.shape[-1] and value.shape[-2] == key.shape[-2]
            and query.shape[-2] * key.shape[-2] > 0
            and query.shape[-1] <= _MAX_HEAD and value.shape[-1] <= _MAX_HEAD)


def _dims(q: Any, k: Any, v: Any) -> tuple:
    BH = 1
    for s in q.shape[:-2]:
        BH *= s
    return BH, q.shape[-2], k.shape[-2], q.shape[-1], v.shape[-1]


class _Attention(Function):
    @staticmethod
    def forward(ctx, query, key, value, scale, is_causal, dropout_p):
        q, k, v = (t.contiguous() for t in (query, key, value))
        BH, L, S, D, Dv = _dims(q, k, v)
        seed, off = _philox(None, q.device.index or 0) if dropout_p > 0.0 else (0, 0)
        out = _empty(tuple(q.shape[:-1]) + (Dv,), q.dtype, q)
        lse = _empty(tuple(q.shape[:-1]), q.dtype, q)
        if BH * L:
            K.check(_lib().emc_sdpa_fwd(q.dtype.code, _ptr(q), _ptr(k), _ptr(v), BH, L, S, D,
                                        Dv, ctypes.c_double(scale), int(is_causal),
                                        ctypes.c_double(dropout_p), ctypes.c_uint64(seed),
                                        ctypes.c_uint64(off), _ptr(out), _ptr(lse),
                                        _stream(q)), "scaled_dot_product_attention")
        ctx.save_for_backward(q, k, v, out, lse, query, key, value)
        ctx.args = (float(scale), bool(is_causal), float(dropout_p), seed, off)
        return out

    @staticmethod
    def backward(ctx, grad):
        q, k, v, out, lse, query, key, value = ctx.saved_tensors
        scale, causal, p, seed, off = ctx.args
        if ember.is_grad_enabled():
            return _composite_grads(ctx, grad, query, key, value, scale, causal, p, seed, off)
        BH, L, S, D, Dv = _dims(q, k, v)
        g = grad.to(q.dtype).contiguous()
        dq, dk, dv = (_empty(tuple(t.shape), t.dtype, t) for t in (q, k, v))
        if BH * (L + S):
            K.check(_lib().emc_sdpa_bwd(q.dtype.code, _ptr(g), _ptr(q), _ptr(k), _ptr(v),
                                        _ptr(out), _ptr(lse), BH, L, S, D, Dv,
                                        ctypes.c_double(scale), int(causal),
                                        ctypes.c_double(p), ctypes.c_uint64(seed),
                                        ctypes.c_uint64(off), _ptr(dq), _ptr(dk), _ptr(dv),
                                        _stream(q)), "scaled_dot_product_attention")
        needs = ctx.needs_input_grad
        return (dq if needs[0] else None, dk if needs[1] else None,
                dv if needs[2] else None, None, None, None)


def _composite_grads(ctx, grad, query, key, value, scale, causal, p, seed, off) -> tuple:
    """create_graph: the gradients of the composed forward with the same keep-mask
    (the CPU's formula), differentiable again."""
    from ember.autograd._formulas_reduce import _sdpa_keep
    from ember.nn.functional import _sdpa_composite
    needs = ctx.needs_input_grad[:3]
    keep = _sdpa_keep(query, key, p, seed, off).to(query.device) if p > 0.0 else None
    y = _sdpa_composite(query, key, value, None, 0.0, causal, scale, keep)
    wanted = [t for t, n in zip((query, key, value), needs) if n]
    got = iter(ember.autograd.grad(y, wanted, grad, create_graph=True, allow_unused=True))
    return tuple(next(got) if n else None for n in needs) + (None, None, None)


def sdpa(query: Any, key: Any, value: Any, scale: float, is_causal: bool,
         dropout_p: float) -> Any:
    """softmax(Q K^T scale [causal]) V with dropout on the fused CUDA kernels."""
    return _Attention.apply(query, key, value, scale, is_causal, dropout_p)
