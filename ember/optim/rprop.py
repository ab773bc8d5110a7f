"""Rprop: resilient backpropagation (Riedmiller & Braun, 1993)."""
from __future__ import annotations

import ember
from ember.optim.optimizer import (
    Optimizer,
    _addcmul_,
    _check_capturable,
    _check_lr,
    _incr_step,
    _new_step,
    _use_grad,
)

__all__ = ["Rprop"]


class Rprop(Optimizer):
    """Per-element step sizes that grow while the gradient keeps its sign and shrink
    when it flips; only the gradient's sign is used.

    Parameters
    ----------
    params : iterable
    lr : float or Tensor, default 1e-2
        Initial step size.
    etas : (float, float), default (0.5, 1.2)
        Multiplicative decrease and increase factors.
    step_sizes : (float, float), default (1e-6, 50)
        Minimal and maximal step size.
    """

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach,
                        maximize=maximize, differentiable=differentiable,
                        capturable=capturable)
        super().__init__(params, defaults)

    @_use_grad
    def step(self):
        """One Rprop update of every parameter that has a gradient."""
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            _check_capturable(group)
            etaminus, etaplus = group["etas"]
            step_size_min, step_size_max = group["step_sizes"]
            for p in params:
                state = self.state[p]
                if not state:
                    state["step"] = _new_step()
                    state["prev"] = ember.zeros_like(p)
                    state["step_size"] = ember.full_like(p.grad, float(group["lr"]))
                prev, step_size = state["prev"], state["step_size"]
                _incr_step(state)
                grad = -p.grad if group["maximize"] else p.grad
                prod = grad.mul(prev.clone() if group["differentiable"] else prev)
                flipped = prod.lt(0)
                factor = ember.where(prod.gt(0), etaplus, ember.where(flipped, etaminus, 1.0))
                step_size.mul_(factor.to(step_size.dtype)).clamp_(step_size_min, step_size_max)
                # after a sign flip the step is skipped and the flip forgotten
                grad = ember.where(flipped, ember.zeros_like(grad), grad)
                _addcmul_(p, grad.sign(), step_size, -1)
                prev.copy_(grad)
