"""Muon: momentum SGD whose 2-D updates are orthogonalised by a Newton-Schulz
iteration (Jordan et al., 2024), in torch's form and defaults."""
from __future__ import annotations

import math

import ember
from ember.optim.optimizer import Optimizer, _lerp_, _use_grad, _value

__all__ = ["Muon"]

_NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)


def _zeropower_via_newtonschulz(grad, ns_coefficients, ns_steps, eps):
    """Approximately orthogonalise ``grad`` (in bfloat16, like torch)."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if len(grad.shape) != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    x = grad.bfloat16()
    tall = grad.shape[0] > grad.shape[1]
    if tall:
        x = x.T
    x = x.div(x.norm().clamp(min=eps))
    for _ in range(ns_steps):
        gram = x @ x.T
        gram_update = ember.addmm(gram, gram, gram, beta=b, alpha=c)
        x = ember.addmm(x, gram_update, x, beta=a)
    return x.T if tall else x


def _adjust_lr(lr, adjust_lr_fn, shape):
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        return lr * math.sqrt(max(1, rows / cols))
    if adjust_lr_fn == "match_rms_adamw":
        return lr * 0.2 * math.sqrt(max(rows, cols))
    return lr


class Muon(Optimizer):
    """Muon for 2-D parameters (optimize biases and embeddings with e.g. AdamW).

    Parameters
    ----------
    params : iterable
        2-D parameters only.
    lr : float, default 1e-3
    weight_decay : float, default 0.1
        Decoupled weight decay.
    momentum : float, default 0.95
    nesterov : bool, default True
    ns_coefficients : (float, float, float), default (3.4445, -4.775, 2.0315)
    eps : float, default 1e-7
    ns_steps : int, default 5
    adjust_lr_fn : {None, "original", "match_rms_adamw"}, default None
    """

    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=_NS_COEFFICIENTS, eps=1e-7, ns_steps=5, adjust_lr_fn=None):
        if isinstance(lr, ember.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ("original", "match_rms_adamw"):
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum,
                        nesterov=nesterov, ns_coefficients=ns_coefficients, eps=eps,
                        ns_steps=ns_steps, adjust_lr_fn=adjust_lr_fn)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(f"Muon only supports 2D parameters whereas we found a "
                                     f"parameter with size: {p.size()}")

    @_use_grad
    def step(self):
        """One Muon update of every parameter that has a gradient."""
        for group in self.param_groups:
            lr, momentum = _value(group["lr"]), group["momentum"]
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                if grad.ndim != 2:
                    raise ValueError("Param gradient must be a 2D matrix")
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = ember.zeros_like(grad)
                buf = _lerp_(state["momentum_buffer"], grad, 1 - momentum)
                update = ember.lerp(grad, buf, momentum) if group["nesterov"] else buf
                update = _zeropower_via_newtonschulz(update, group["ns_coefficients"],
                                                     group["ns_steps"], group["eps"])
                p.mul_(1 - lr * group["weight_decay"])
                p.add_(update.to(p.dtype), alpha=-_adjust_lr(lr, group["adjust_lr_fn"],
                                                              p.shape))
