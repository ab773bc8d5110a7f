"""Fused CUDA kernels behind ``nn.functional``: cross-entropy of (N, C) logits with
class indices and layer_norm, each one graph node whose backward is the fused
backward kernel (``F.cross_entropy`` / ``F.layer_norm`` route CUDA tensors here)."""

from __future__ import annotations

from typing import Any

import ember
from ember.autograd import Function
from ember.cuda import _kernels as K
from ember.cuda._dispatch import _FLOATS, _TORCH_NAMES, _empty, _lib, _ptr, _stream

_REDUCTIONS = ("mean", "sum", "none")


def _same_device(a: Any, b: Any, op: str, arg: str) -> None:
    if a.device != b.device:
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least "
                           f"two devices, {a.device} and {b.device}! (when checking argument "
                           f"for argument {arg} in method {op})")


def fits_cross_entropy(input: Any, target: Any, weight: Any, reduction: str,
                       label_smoothing: float) -> bool:
    """Whether the fused kernels compute this cross-entropy (else the composed ops do)."""
    return (input.dim() == 2 and input.dtype in _FLOATS and target.dtype == ember.int64 and
            target.dim() == 1 and weight is None and reduction in _REDUCTIONS and
            0.0 <= label_smoothing <= 1.0)


class _CrossEntropy(Function):
    @staticmethod
    def forward(ctx, input, target, ignore_index, label_smoothing, reduction):
        x, t = input.contiguous(), target.contiguous()
        R, C = x.shape
        if t.shape[0] != R:
            raise ValueError(f"Expected input batch_size ({R}) to match target batch_size "
                             f"({t.shape[0]}).")
        loss = _empty((R,), x.dtype, x)
        lse = _empty((R,), ember.float32, x)
        if R:
            s = _stream(x)
            K.check(_lib().emc_cross_entropy_fwd(x.dtype.code, _ptr(x), _ptr(t), R, C,
                                                 int(ignore_index), float(label_smoothing),
                                                 _ptr(loss), _ptr(lse), s), "cross_entropy")
            K.check_index("cross_entropy", s)
        n = None
        if reduction == "none":
            out = loss
        elif reduction == "sum":
            out = loss.sum()
        else:
            n = (t != ignore_index).sum().to(x.dtype)
            out = loss.sum() / n
        ctx.save_for_backward(x, t, lse, input)
        ctx.args = (int(ignore_index), float(label_smoothing), reduction, n)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, t, lse, input = ctx.saved_tensors
        ignore_index, smoothing, reduction, n = ctx.args
        if ember.is_grad_enabled():       # create_graph: the CPU's differentiable formula
            from ember.nn._common_losses import _cross_entropy_grad_composite
            return (_cross_entropy_grad_composite(grad, input, t, None, ignore_index, smoothing,
                                                  reduction, n), None, None, None, None)
        R, C = x.shape
        g = grad.to(x.dtype)
        if reduction == "mean":
            g = g / n
        gl = g.expand(R).contiguous() if reduction != "none" else g.contiguous()
        gx = _empty((R, C), x.dtype, x)
        if R:
            K.check(_lib().emc_cross_entropy_bwd(x.dtype.code, _ptr(x), _ptr(t), _ptr(lse),
                                                 _ptr(gl), R, C, ignore_index, smoothing,
                                                 _ptr(gx), _stream(x)), "cross_entropy")
        return gx, None, None, None, None


def cross_entropy(input: Any, target: Any, ignore_index: int = -100,
                  label_smoothing: float = 0.0, reduction: str = "mean") -> Any:
    """Cross-entropy of CUDA logits (N, C) against int64 class indices (N,)."""
    _same_device(input, target, "cross_entropy", "target")
    return _CrossEntropy.apply(input, target, ignore_index, label_smoothing, reduction)


class _LayerNorm(Function):
    @staticmethod
    def forward(ctx, input, normalized_shape, weight, bias, eps):
        x = input.contiguous()
        N = 1
        for s in normalized_shape:
            N *= s
        M = x.numel() // N if N else 0
        sd = ember.float64 if x.dtype == ember.float64 else ember.float32
        y = _empty(tuple(x.shape), x.dtype, x)
        mean, rstd = _empty((M,), sd, x), _empty((M,), sd, x)
        w = None if weight is None else weight.contiguous()
        b = None if bias is None else bias.contiguous()
        if M * N:
            K.check(_lib().emc_layer_norm_fwd(x.dtype.code, _ptr(x), _ptr(w) if w is not None
                                              else None, _ptr(b) if b is not None else None,
                                              M, N, float(eps), _ptr(y), _ptr(mean), _ptr(rstd),
                                              _stream(x)), "layer_norm")
        ctx.save_for_backward(x, w, mean, rstd, input, weight, bias)
        ctx.dims = (M, N, tuple(normalized_shape), weight is not None, bias is not None, eps)
        return y

    @staticmethod
    def backward(ctx, grad):
        x, w, mean, rstd, input, weight, bias = ctx.saved_tensors
        M, N, nshape, has_w, has_b, eps = ctx.dims
        if ember.is_grad_enabled():
            return _layer_norm_grad_composite(ctx, grad, input, nshape, weight, bias, eps)
        dy = grad.contiguous()
        dx = _empty(tuple(x.shape), x.dtype, x)
        dw = _empty((N,), x.dtype, x) if has_w else None
        db = _empty((N,), x.dtype, x) if has_b else None
        if M * N:
            K.check(_lib().emc_layer_norm_bwd(x.dtype.code, _ptr(dy), _ptr(x), _ptr(mean),
                                              _ptr(rstd), _ptr(w) if has_w else None, M, N,
                                              _ptr(dx), _ptr(dw) if has_w else None,
                                              _ptr(db) if has_b else None, _stream(x)),
                    "layer_norm")
        elif has_w:
            dw.zero_()
            if has_b:
                db.zero_()
        return (dx, None, None if dw is None else dw.view(nshape),
                None if db is None else db.view(nshape), None)


def _layer_norm_grad_composite(ctx: Any, grad: Any, input: Any, nshape: tuple, weight: Any,
                               bias: Any, eps: float) -> tuple:
    """create_graph: the gradients of the composed forward (the CPU's formula), whose
    own formulas record again, so they can be differentiated once more."""
    from ember.nn.functional import _layer_norm_composite
    needs = ctx.needs_input_grad
    want = [(t, need and t is not None) for t, need in ((input, needs[0]),
                                                        (weight, needs[2]), (bias, needs[3]))]
    wanted = [t for t, need in want if need]
    y = _layer_norm_composite(input, nshape, weight, bias, eps)
    got = iter(ember.autograd.grad(y, wanted, grad, create_graph=True, allow_unused=True))
    dx, dw, db = (next(got) if need else None for _, need in want)
    return dx, None, dw, db, None


def layer_norm(input: Any, normalized_shape: tuple, weight: Any = None, bias: Any = None,
               eps: float = 1e-5) -> Any:
    """Layer normalisation of a CUDA tensor over its trailing ``normalized_shape`` dims."""
    k = len(normalized_shape)
    if tuple(input.shape[input.dim() - k:]) != tuple(normalized_shape) or k > input.dim():
        raise RuntimeError(f"Given normalized_shape={list(normalized_shape)}, expected input "
                           f"with shape [*, {', '.join(map(str, normalized_shape))}], but got "
                           f"input of size{list(input.shape)}")
    if input.dtype not in _FLOATS:
        raise RuntimeError(f"\"layer_norm_cuda\" not implemented for "
                           f"'{_TORCH_NAMES[input.dtype]}'")
    for p, nm in ((weight, "weight"), (bias, "bias")):
        if p is not None:
            _same_device(input, p, "layer_norm", nm)
        if p is not None and (p.dtype != input.dtype or tuple(p.shape) != tuple(normalized_shape)):
            raise RuntimeError(f"layer_norm: {nm} must have the input's dtype and shape "
                               f"{list(normalized_shape)}, got {p.dtype} {list(p.shape)}")
    return _LayerNorm.apply(input, tuple(normalized_shape), weight, bias, eps)
