"""Adadelta (Zeiler, 2012)."""
from __future__ import annotations

import ember
from ember.optim.optimizer import (
    _CAPTURABLE_DEVICES,
    Optimizer,
    _addcmul_,
    _check_capturable,
    _check_lr,
    _incr_step,
    _new_step,
    _use_grad,
    _value,
)

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """Adadelta: steps scaled by the ratio of running RMS of updates and of gradients.

    Parameters
    ----------
    params : iterable
    lr : float or Tensor, default 1.0
    rho : float, default 0.9
    eps : float, default 1e-6
    weight_decay : float, default 0
    """

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    @_use_grad
    def step(self):
        """One Adadelta update of every parameter that has a gradient."""
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            _check_capturable(group, devices=_CAPTURABLE_DEVICES[:4])
            lr, rho, eps = _value(group["lr"]), group["rho"], group["eps"]
            wd = group["weight_decay"]
            for p in params:
                state = self.state[p]
                if not state:
                    state["step"] = _new_step()
                    state["square_avg"] = ember.zeros_like(p)
                    state["acc_delta"] = ember.zeros_like(p)
                square_avg, acc_delta = state["square_avg"], state["acc_delta"]
                _incr_step(state)
                grad = -p.grad if group["maximize"] else p.grad
                if wd != 0:
                    grad = grad.add(p, alpha=wd)
                _addcmul_(square_avg.mul_(rho), grad, grad, 1 - rho)
                std = square_avg.add(eps).sqrt()
                delta = acc_delta.add(eps).sqrt().div(std).mul_(grad)
                _addcmul_(acc_delta.mul_(rho), delta, delta, 1 - rho)
                p.add_(delta, alpha=-lr)
