"""Adafactor (Shazeer & Stern, 2018), in torch's form: factored second moments for
matrices, relative step sizes and update clipping."""
from __future__ import annotations

import ember
from ember.optim.optimizer import (
    Optimizer,
    _incr_step,
    _lerp_,
    _new_step,
    _use_grad,
    _value,
)

__all__ = ["Adafactor"]


class Adafactor(Optimizer):
    """Adafactor: row and column second-moment statistics instead of a full matrix.

    Parameters
    ----------
    params : iterable
    lr : float or Tensor, default 1e-2
        Upper bound of the relative step size.
    beta2_decay : float, default -0.8
        Exponent of the second-moment decay schedule (``1 - beta2_t = t ** beta2_decay``).
    eps : (float or None, float), default (None, 1e-3)
        Floor of the second moment (None: the dtype's machine epsilon) and of the
        parameter scale.
    d : float, default 1.0
        Update clipping threshold.
    weight_decay : float, default 0.0
    """

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0,
                 weight_decay=0.0, *, foreach=None, maximize=False):
        if isinstance(lr, ember.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d,
                        weight_decay=weight_decay, foreach=foreach, maximize=maximize)
        super().__init__(params, defaults)

    @_use_grad
    def step(self):
        """One Adafactor update of every parameter that has a gradient."""
        for group in self.param_groups:
            lr, d = _value(group["lr"]), group["d"]
            eps1, eps2 = group["eps"]
            wd = group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = -p.grad if group["maximize"] else p.grad
                state = self.state[p]
                if not state:
                    state["step"] = _new_step()
                    if grad.dim() > 1:
                        state["row_var"] = grad.new_zeros(list(grad.shape[:-1]) + [1])
                        state["col_var"] = grad.new_zeros(
                            list(grad.shape[:-2]) + [1, grad.shape[-1]])
                    else:
                        state["variance"] = ember.zeros_like(grad)
                e1 = ember.finfo(p.dtype).eps if eps1 is None else eps1
                step = _incr_step(state)
                one_minus_beta2_t = step ** group["beta2_decay"]
                rho_t = min(lr, 1 / (step ** 0.5))
                alpha = max(eps2, p.norm(2).item() / (p.numel() ** 0.5)) * rho_t
                if wd != 0:
                    p.mul_(1 - lr * wd)
                if grad.dim() > 1:
                    row_var, col_var = state["row_var"], state["col_var"]
                    row_mean = ember.norm(grad, dim=-1, keepdim=True).square_().div_(
                        grad.shape[-1])
                    _lerp_(row_var, row_mean, one_minus_beta2_t)
                    col_mean = ember.norm(grad, dim=-2, keepdim=True).square_().div_(
                        grad.shape[-2])
                    _lerp_(col_var, col_mean, one_minus_beta2_t)
                    var_estimate = row_var @ col_var
                    var_estimate.div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=e1))
                else:
                    variance = state["variance"]
                    _lerp_(variance, grad * grad, one_minus_beta2_t)
                    var_estimate = variance.clone()
                update = var_estimate.clamp_(min=e1 * e1).rsqrt_().mul_(grad)
                denom = max(1.0, update.norm(2).item() / ((update.numel() ** 0.5) * d))
                p.add_(update, alpha=-alpha / denom)
