"""Stochastic gradient descent (momentum, dampening, Nesterov, weight decay)."""
from __future__ import annotations

import ember
from ember.optim.optimizer import (
    Optimizer,
    _check_fused,
    _check_lr,
    _foreach,
    _multi_tensor,
    _use_grad,
    _value,
    required,
)

__all__ = ["SGD"]


class SGD(Optimizer):
    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0,
                 nesterov=False, *, maximize=False, foreach=None, differentiable=False,
                 fused=None):
        if lr is not required:
            _check_lr(lr)
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening,
                        weight_decay=weight_decay, nesterov=nesterov, maximize=maximize,
                        foreach=foreach, differentiable=differentiable, fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)
        _check_fused(fused, foreach, differentiable, self.param_groups)

    @_use_grad
    def step(self):
        """One SGD update of every parameter that has a gradient."""
        for group in self.param_groups:
            lr = _value(group["lr"])
            momentum = group["momentum"]
            dampening = group["dampening"]
            wd = _value(group["weight_decay"])
            nesterov = group["nesterov"]
            maximize = group["maximize"]
            if _multi_tensor(group) and self._multi_step(group, lr):
                continue
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                if maximize:
                    grad = -grad
                if wd != 0:
                    grad = grad.add(p, alpha=wd)
                if momentum != 0:
                    state = self.state[p]
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        buf = grad.detach().clone()
                        state["momentum_buffer"] = buf
                    else:
                        buf.mul_(momentum).add_(grad, alpha=1 - dampening)
                    grad = grad.add(buf, alpha=momentum) if nesterov else buf
                p.add_(grad, alpha=-lr)

    def _multi_step(self, group, lr):
        """The whole group in one C call (the per-tensor loop's arithmetic); False when
        the tensors don't fit the kernel."""
        params = [p for p in group["params"] if p.grad is not None]
        if not params:
            return True
        momentum = group["momentum"]
        bufs, init, fresh = [], [], []
        if momentum != 0:
            for p in params:
                buf = self.state[p].get("momentum_buffer")
                init.append(buf is None)
                if buf is None:
                    buf = ember.empty_like(p)  # the kernel starts it from the gradient
                    fresh.append((p, buf))
                bufs.append(buf)
        fe = _foreach(params)
        if not fe.sgd_(params, [p.grad for p in params], bufs, init, lr,
                       _value(group["weight_decay"]), momentum, group["dampening"],
                       group["nesterov"], group["maximize"]):
            return False
        for p, buf in fresh:
            self.state[p]["momentum_buffer"] = buf
        return True
