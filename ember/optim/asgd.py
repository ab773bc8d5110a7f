"""ASGD: averaged stochastic gradient descent (Polyak & Juditsky, 1992)."""
from __future__ import annotations

import ember
from ember.optim.optimizer import (
    Optimizer,
    _check_capturable,
    _check_lr,
    _incr_step,
    _new_step,
    _use_grad,
    _value,
)

__all__ = ["ASGD"]


class ASGD(Optimizer):
    """SGD with a decaying step size whose iterates are averaged into ``state['ax']``
    from step ``t0`` on.

    Parameters
    ----------
    params : iterable
    lr : float or Tensor, default 1e-2
    lambd : float, default 1e-4
        Decay term.
    alpha : float, default 0.75
        Power of the step-size decay.
    t0 : float, default 1e6
        Step at which averaging starts.
    weight_decay : float, default 0
    """

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0,
                 foreach=None, maximize=False, differentiable=False, capturable=False):
        _check_lr(lr)
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize, differentiable=differentiable,
                        capturable=capturable)
        super().__init__(params, defaults)

    @_use_grad
    def step(self):
        """One ASGD update of every parameter that has a gradient."""
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            _check_capturable(group, "params, mus, etas, and state_steps")
            lr, lambd, alpha = _value(group["lr"]), group["lambd"], group["alpha"]
            t0, wd = group["t0"], group["weight_decay"]
            for p in params:
                state = self.state[p]
                if not state:
                    state["step"] = _new_step()
                    state["eta"] = _new_step(lr)
                    state["mu"] = _new_step(1.0)
                    state["ax"] = ember.zeros_like(p)
                grad = -p.grad if group["maximize"] else p.grad
                step = _incr_step(state)
                if wd != 0:
                    grad = grad.add(p, alpha=wd)
                eta = state["eta"].item()
                p.mul_(1 - lambd * eta)
                p.add_(grad, alpha=-eta)
                ax, mu = state["ax"], state["mu"].item()
                if mu != 1:
                    ax.add_(p.sub(ax).mul_(mu))
                else:
                    ax.copy_(p)
                state["eta"].fill_(lr / ((1 + lambd * lr * step) ** alpha))
                state["mu"].fill_(1 / max(1, step - t0))
