"""Gradient clipping."""
from __future__ import annotations

import math

import ember
from ember._C import foreach as _fe

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm",
           "clip_grads_with_norm_"]


def _foreach(tensors):
    from ember.optim.optimizer import _foreach
    return _foreach(tensors)


def _grads(parameters):
    if isinstance(parameters, ember.Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The ``norm_type`` norm of all ``tensors`` together (as if concatenated)."""
    if isinstance(tensors, ember.Tensor):
        tensors = [tensors]
    tensors = [t for t in tensors if t is not None]
    norm_type = float(norm_type)
    if not tensors:
        return ember.tensor(0.0)
    fused = foreach is not False
    with ember.autograd.no_grad():
        # one C call over every tensor when they fit the kernel (same value, bit for bit)
        total = _foreach(tensors).total_norm(tensors, norm_type) \
            if fused and norm_type > 0 else None
        if total is None and norm_type == math.inf:
            norms = [t.detach().abs().max() for t in tensors]
            total = norms[0] if len(norms) == 1 else ember.stack(norms).max()
        elif total is None:
            norms = [t.detach().norm(norm_type) for t in tensors]
            total = norms[0] if len(norms) == 1 else ember.stack(norms).norm(norm_type)
    if error_if_nonfinite:
        tv = float(total.item())
        if math.isnan(tv) or math.isinf(tv):
            raise RuntimeError(f"The total norm of order {norm_type} for gradients from "
                               f"`parameters` is non-finite, so it cannot be clipped. To "
                               f"disable this error and scale the gradients by the non-finite "
                               f"norm anyway, set `error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale the gradients in place by ``max_norm / (total_norm + 1e-6)`` when that is
    below 1 (``total_norm`` from :func:`get_total_norm`)."""
    grads = _grads(parameters)
    if not grads:
        return
    if foreach is not False and grads[0].is_cuda and isinstance(total_norm, ember.Tensor):
        with ember.autograd.no_grad():     # the coefficient stays on the device: no sync
            if _foreach(grads).clip_(grads, float(max_norm), total_norm):
                return
    coef = float(max_norm) / (float(total_norm) + 1e-6)
    if coef < 1.0:
        with ember.autograd.no_grad():
            if not (foreach is not False and _fe.scale_(grads, coef)):
                for g in grads:
                    g.mul_(coef)


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                    foreach=None):
    """Scale the gradients in place so that their joint ``norm_type`` norm is at most
    ``max_norm``; returns the total norm (before clipping)."""
    if isinstance(parameters, ember.Tensor):
        parameters = [parameters]
    parameters = list(parameters)
    total = get_total_norm(_grads(parameters), norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                   foreach=None):
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient in place to ``[-clip_value, clip_value]``."""
    clip_value = float(clip_value)
    with ember.autograd.no_grad():
        for g in _grads(parameters):
            g.clamp_(-clip_value, clip_value)
