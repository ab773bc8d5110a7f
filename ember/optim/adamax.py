"""Adamax: Adam with the infinity norm (Kingma & Ba, 2014)."""
from __future__ import annotations

import ember
from ember.optim.optimizer import (
    Optimizer,
    _addcdiv_,
    _check_adam_args,
    _check_capturable,
    _grad_tracking,
    _incr_step,
    _lerp_,
    _new_step,
    _use_grad,
    _value,
)

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """Adam whose second moment is an exponentially weighted infinity norm.

    Parameters
    ----------
    params : iterable
    lr : float or Tensor, default 2e-3
    betas : (float, float), default (0.9, 0.999)
    eps : float, default 1e-8
    weight_decay : float, default 0
    """

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 foreach=None, *, maximize=False, differentiable=False, capturable=False):
        _check_adam_args(lr, betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize, differentiable=differentiable,
                        capturable=capturable)
        super().__init__(params, defaults)

    @_use_grad
    def step(self):
        """One Adamax update of every parameter that has a gradient."""
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            _check_capturable(group)
            lr = _value(group["lr"])
            beta1, beta2 = group["betas"]
            eps, wd = group["eps"], group["weight_decay"]
            for p in params:
                grad = -p.grad if group["maximize"] else p.grad
                state = self.state[p]
                if not state:
                    state["step"] = _new_step()
                    state["exp_avg"] = ember.zeros_like(p)
                    state["exp_inf"] = ember.zeros_like(p)
                exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
                step = _incr_step(state)
                if wd != 0:
                    grad = grad.add(p, alpha=wd)
                _lerp_(exp_avg, grad, 1 - beta1)
                norm = grad.abs().add_(eps)
                if _grad_tracking(exp_inf, norm):
                    exp_inf.copy_(ember.maximum(exp_inf.mul(beta2), norm))
                else:
                    ember.maximum(exp_inf.mul_(beta2), norm, out=exp_inf)
                _addcdiv_(p, exp_avg, exp_inf, -lr / (1 - beta1 ** step))
