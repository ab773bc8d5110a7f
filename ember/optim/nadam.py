"""NAdam: Adam with Nesterov momentum (Dozat, 2016)."""
from __future__ import annotations

import ember
from ember.optim.optimizer import (
    Optimizer,
    _add_eps,
    _addcdiv_,
    _addcmul_,
    _check_adam_args,
    _check_capturable,
    _incr_step,
    _lerp_,
    _new_step,
    _use_grad,
    _value,
)

__all__ = ["NAdam"]


class NAdam(Optimizer):
    """Adam with Nesterov momentum and a momentum schedule (``momentum_decay``).

    Parameters
    ----------
    params : iterable
        Parameters or parameter-group dicts.
    lr : float or Tensor, default 2e-3
    betas : (float, float), default (0.9, 0.999)
    eps : float, default 1e-8
    weight_decay : float, default 0
    momentum_decay : float, default 4e-3
    decoupled_weight_decay : bool, default False
        Decay the parameter directly (NAdamW) instead of adding it to the gradient.
    """

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False):
        _check_adam_args(lr, betas, eps, weight_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    @_use_grad
    def step(self):
        """One NAdam update of every parameter that has a gradient."""
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            _check_capturable(group, "params, mu_products and state_steps")
            lr = _value(group["lr"])
            beta1, beta2 = group["betas"]
            eps, wd = group["eps"], group["weight_decay"]
            for p in params:
                grad = -p.grad if group["maximize"] else p.grad
                state = self.state[p]
                if not state:
                    state["step"] = _new_step()
                    state["mu_product"] = _new_step(1.0)
                    state["exp_avg"] = ember.zeros_like(p)
                    state["exp_avg_sq"] = ember.zeros_like(p)
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                step = _incr_step(state)
                bias_correction2 = 1 - beta2 ** step
                if wd != 0:
                    if group["decoupled_weight_decay"]:
                        p.mul_(1 - lr * wd)
                    else:
                        grad = grad.add(p, alpha=wd)
                md = group["momentum_decay"]
                mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * md)))
                mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * md)))
                mu_product = state["mu_product"].mul_(mu).item()
                mu_product_next = mu_product * mu_next
                _lerp_(exp_avg, grad, 1 - beta1)
                _addcmul_(exp_avg_sq.mul_(beta2), grad, grad, 1 - beta2)
                denom = _add_eps(exp_avg_sq.div(bias_correction2).sqrt(), eps)
                _addcdiv_(p, grad, denom, -lr * (1.0 - mu) / (1.0 - mu_product))
                _addcdiv_(p, exp_avg, denom, -lr * mu_next / (1.0 - mu_product_next))
