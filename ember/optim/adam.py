"""Adam and AdamW (with AMSGrad)."""
from __future__ import annotations

import math

import ember
from ember.optim.optimizer import (
    Optimizer,
    _addcdiv_,
    _addcmul_,
    _check_adam_args,
    _check_capturable,
    _check_fused,
    _foreach,
    _grad_tracking,
    _lerp_,
    _multi_tensor,
    _use_grad,
    _value,
)

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    _decoupled = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        if isinstance(lr, ember.Tensor) and foreach and not capturable:
            raise ValueError("lr as a Tensor is not supported for capturable=False and "
                             "foreach=True")
        _check_adam_args(lr, betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay or self._decoupled)
        super().__init__(params, defaults)
        _check_fused(fused, foreach, differentiable, self.param_groups)

    @_use_grad
    def step(self):
        """One Adam update of every parameter that has a gradient."""
        scratch = self.__dict__.setdefault("_scratch", {})
        for group in self.param_groups:
            _check_capturable(group)
            lr = _value(group["lr"])
            beta1, beta2 = group["betas"]
            eps = group["eps"]
            wd = group["weight_decay"]
            amsgrad = group["amsgrad"]
            maximize = group["maximize"]
            decoupled = group.get("decoupled_weight_decay", False)
            if _multi_tensor(group) and self._multi_step(group, lr):
                continue
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = ember.zeros_like(p)
                    state["exp_avg_sq"] = ember.zeros_like(p)
                    if amsgrad:
                        state["max_exp_avg_sq"] = ember.zeros_like(p)
                if maximize:
                    grad = -grad
                step = state["step"] = _as_int(state["step"]) + 1
                if wd != 0:
                    if decoupled:
                        p.mul_(1 - lr * wd)
                    else:
                        grad = grad.add(p, alpha=wd)
                exp_avg = state["exp_avg"]
                exp_avg_sq = state["exp_avg_sq"]
                if _grad_tracking(p, grad, exp_avg, exp_avg_sq):
                    _differentiable_update(state, p, grad, step, lr, beta1, beta2, eps, amsgrad)
                    continue
                # m <- beta1 m + (1 - beta1) g ;  v <- beta2 v + (1 - beta2) g^2
                ember.lerp(exp_avg, grad, 1 - beta1, out=exp_avg)
                buf = scratch.get(p)  # reused every step (not part of the state)
                if buf is None or buf.shape != p.shape or buf.dtype != p.dtype:
                    buf = scratch[p] = ember.empty_like(p)
                ember.mul(grad, grad, out=buf)
                ember.lerp(exp_avg_sq, buf, 1 - beta2, out=exp_avg_sq)
                bc1 = 1 - beta1 ** step
                bc2_sqrt = math.sqrt(1 - beta2 ** step)
                if amsgrad:
                    mx = state["max_exp_avg_sq"]
                    ember.maximum(mx, exp_avg_sq, out=mx)
                    v = mx
                else:
                    v = exp_avg_sq
                # p -= lr/bc1 * m / (sqrt(v)/bc2_sqrt + eps)
                #    = (lr * bc2_sqrt / bc1) * m / (sqrt(v) + eps * bc2_sqrt)
                # in 4 passes over one scratch buffer
                ember.sqrt(v, out=buf)
                buf.add_(eps * bc2_sqrt)
                ember.div(exp_avg, buf, out=buf)
                p.add_(buf, alpha=-lr * bc2_sqrt / bc1)


    def _multi_step(self, group, lr):
        """The whole group in one C call (the per-tensor loop's arithmetic); False when
        the tensors don't fit the kernel."""
        params = [p for p in group["params"] if p.grad is not None]
        amsgrad = group["amsgrad"]
        exp_avgs, exp_avg_sqs, max_sqs, steps = [], [], [], []
        for p in params:
            state = self.state[p]
            if not state:
                state["step"] = 0
                state["exp_avg"] = ember.zeros_like(p)
                state["exp_avg_sq"] = ember.zeros_like(p)
                if amsgrad:
                    state["max_exp_avg_sq"] = ember.zeros_like(p)
            exp_avgs.append(state["exp_avg"])
            exp_avg_sqs.append(state["exp_avg_sq"])
            if amsgrad:
                max_sqs.append(state.get("max_exp_avg_sq"))
            steps.append(_as_int(state["step"]) + 1)
        if not params:
            return True
        beta1, beta2 = group["betas"]
        fe = _foreach(params)
        if not fe.adam_(params, [p.grad for p in params], exp_avgs, exp_avg_sqs, max_sqs,
                         steps, lr, beta1, beta2, group["eps"], group["weight_decay"], amsgrad,
                         group["maximize"], group.get("decoupled_weight_decay", False)):
            return False
        for p, step in zip(params, steps):
            self.state[p]["step"] = step
        return True


class AdamW(Adam):
    """Adam with decoupled weight decay (default ``weight_decay=1e-2``)."""
    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)


def _differentiable_update(state, p, grad, step, lr, beta1, beta2, eps, amsgrad):
    """The Adam update in ops autograd can follow (no out=, no reused buffers)."""
    exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
    _lerp_(exp_avg, grad, 1 - beta1)
    _addcmul_(exp_avg_sq.mul_(beta2), grad, grad, 1 - beta2)
    v = exp_avg_sq
    if amsgrad:
        mx = state["max_exp_avg_sq"]
        mx.copy_(ember.maximum(mx, exp_avg_sq))
        v = mx
    denom = (v.sqrt() / math.sqrt(1 - beta2 ** step)).add(eps)
    _addcdiv_(p, exp_avg, denom, -lr / (1 - beta1 ** step))


def _as_int(step):
    return int(step.item()) if isinstance(step, ember.Tensor) else int(step)
