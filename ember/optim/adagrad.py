"""Adagrad."""
from __future__ import annotations

import ember
from ember.optim.adam import _as_int
from ember.optim.optimizer import (
    Optimizer,
    _add_eps,
    _addcdiv_,
    _addcmul_,
    _check_fused,
    _check_lr,
    _use_grad,
    _value,
)

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0,
                 initial_accumulator_value=0, eps=1e-10, foreach=None, *, maximize=False,
                 differentiable=False, fused=None):
        _check_lr(lr)
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: "
                             f"{initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        _check_fused(fused, foreach, differentiable, self.param_groups)
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = 0
                state["sum"] = ember.full_like(p, group["initial_accumulator_value"])

    def share_memory(self):
        pass

    @_use_grad
    def step(self):
        for group in self.param_groups:
            lr, lr_decay, wd, eps = (_value(group["lr"]), group["lr_decay"], group["weight_decay"],
                                     group["eps"])
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                if group["maximize"]:
                    grad = -grad
                state = self.state[p]
                step = state["step"] = _as_int(state["step"]) + 1
                if wd != 0:
                    grad = grad.add(p, alpha=wd)
                clr = lr / (1 + (step - 1) * lr_decay)
                _addcmul_(state["sum"], grad, grad, 1.0)
                std = _add_eps(state["sum"].sqrt(), eps)
                _addcdiv_(p, grad, std, -clr)
