"""RMSprop (centered, momentum)."""
from __future__ import annotations

import ember
from ember.optim.adam import _as_int
from ember.optim.optimizer import (
    Optimizer,
    _add_eps,
    _addcdiv_,
    _addcmul_,
    _check_capturable,
    _check_lr,
    _use_grad,
    _value,
)

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        _check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                        maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    @_use_grad
    def step(self):
        for group in self.param_groups:
            _check_capturable(group)
            lr, alpha, eps = _value(group["lr"]), group["alpha"], group["eps"]
            wd, momentum, centered = group["weight_decay"], group["momentum"], group["centered"]
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                if group["maximize"]:
                    grad = -grad
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["square_avg"] = ember.zeros_like(p)
                    if momentum > 0:
                        state["momentum_buffer"] = ember.zeros_like(p)
                    if centered:
                        state["grad_avg"] = ember.zeros_like(p)
                state["step"] = _as_int(state["step"]) + 1
                if wd != 0:
                    grad = grad.add(p, alpha=wd)
                square_avg = state["square_avg"]
                _addcmul_(square_avg.mul_(alpha), grad, grad, 1 - alpha)
                if centered:
                    grad_avg = state["grad_avg"]
                    grad_avg.mul_(alpha).add_(grad, alpha=1 - alpha)
                    avg = (square_avg - grad_avg * grad_avg).sqrt()
                else:
                    avg = square_avg.sqrt()
                avg = _add_eps(avg, eps)
                if momentum > 0:
                    buf = state["momentum_buffer"]
                    _addcdiv_(buf.mul_(momentum), grad, avg, 1.0)
                    p.add_(buf, alpha=-lr)
                else:
                    _addcdiv_(p, grad, avg, -lr)
