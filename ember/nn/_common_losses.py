"""The common losses of ``ember.nn.functional`` (regression, classification,
ranking) and the reduction helpers every loss shares; the rarer losses are in
``ember.nn._losses``."""
from __future__ import annotations

import math
import warnings

import ember
from ember._C import elementwise as _C_ew
from ember._C import reduce as _C_reduce
from ember._check import _real_only
from ember.nn.functional import _LazyFn, logsigmoid, pairwise_distance

__all__ = ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "nll_loss", "cross_entropy",
           "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
           "cosine_embedding_loss", "margin_ranking_loss", "hinge_embedding_loss",
           "soft_margin_loss", "poisson_nll_loss", "gaussian_nll_loss", "triplet_margin_loss"]


def _legacy_reduction(size_average, reduce, reduction):
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _check_same_size(input, target, name):
    if tuple(input.shape) != tuple(target.shape):
        warnings.warn(f"Using a target size ({ember.Size(target.shape)}) that is different to "
                      f"the input size ({ember.Size(input.shape)}). This will likely lead to "
                      f"incorrect results due to broadcasting. Please ensure they have the "
                      f"same size.", stacklevel=3)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_same_size(input, target, "mse_loss")
    _real_only(input, "mse_cpu")
    if weight is None:
        r = _point_loss("mse_loss", input, target, 0.0, reduction)
        if r is not None:
            return r
    loss = _mse_terms(input, target, 0.0)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def _mse_terms(input, target, _):
    d = input - target
    return d * d


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_same_size(input, target, "l1_loss")
    loss = ember.abs(input - target)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    _check_same_size(input, target, "smooth_l1_loss")
    _real_only(input, "smooth_l1_cpu")
    if beta == 0.0:
        return _reduce(ember.abs(input - target), reduction)
    r = _point_loss("smooth_l1_loss", input, target, beta, reduction)
    return _reduce(_smooth_l1_terms(input, target, beta), reduction) if r is None else r


# the square of the signed difference keeps the second derivative right at 0
def _smooth_l1_terms(input, target, beta):
    d = input - target
    z = ember.abs(d)
    return ember.where(z < beta, (0.5 / beta) * d * d, z - 0.5 * beta)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    _check_same_size(input, target, "huber_loss")
    _real_only(input, "huber_cpu")
    if weight is None:
        r = _point_loss("huber_loss", input, target, delta, reduction)
        if r is not None:
            return r
    loss = _huber_terms(input, target, delta)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def _huber_terms(input, target, delta):
    d = input - target
    z = ember.abs(d)
    return ember.where(z < delta, 0.5 * d * d, delta * (z - 0.5 * delta))


def _bce_logits_terms(input, target, _):
    return (1 - target) * input - logsigmoid(input)


_TERMS = {"mse_loss": _mse_terms, "smooth_l1_loss": _smooth_l1_terms,
          "huber_loss": _huber_terms, "binary_cross_entropy_with_logits": _bce_logits_terms}


def _point_loss(name, input, target, param, reduction):
    """A regression loss through its one-pass kernels: the elementwise terms, and for
    a mean or sum under autograd one graph node whose backward is one pass too; None
    where the composed ops run (other devices and dtypes, broadcasting, ``none``
    under autograd)."""
    if not (isinstance(input, ember.Tensor) and isinstance(target, ember.Tensor)
            and input.device.type == "cpu" and target.device.type == "cpu"
            and input.dtype in (ember.float32, ember.float64) and target.dtype == input.dtype
            and tuple(input.shape) == tuple(target.shape)
            and reduction in ("mean", "sum", "none")):
        return None
    if ember.is_grad_enabled() and (input.requires_grad or target.requires_grad):
        if reduction == "none":
            return None
        return _PointLoss.apply(input, target, name, param, reduction)
    loss = _C_ew._point_loss(name, input, target, param)
    return None if loss is None else _reduce(loss, reduction)


def _point_loss_function():
    from ember.autograd import Function

    class _PointLossFn(Function):
        """mean or sum of mse / smooth_l1 / huber / bce-with-logits terms as one graph
        node: the input gradient under the uniform incoming gradient is one kernel
        pass, the target's its negation (bce: -s * input)."""

        @staticmethod
        def forward(ctx, input, target, name, param, reduction):
            loss = _C_ew._point_loss(name, input, target, param)
            if loss is None:                   # a Python mode sees the composed ops
                loss = _TERMS[name](input, target, param)
            ctx.save_for_backward(input, target)
            ctx.args = (name, param, reduction)
            return _reduce(loss, reduction)

        @staticmethod
        def backward(ctx, grad):
            input, target = ctx.saved_tensors
            name, param, reduction = ctx.args
            need_x, need_t = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
            gx = s = None
            if not ember.is_grad_enabled() and grad.device.type == "cpu":
                n = input.numel()
                s = float(grad) * (1.0 / n if reduction == "mean" and n else 1.0)
                gx = _C_ew._point_loss(name, input, target, param,
                                       2.0 * s if name == "mse_loss" else s)
            if gx is None:       # create_graph: differentiate the composed form
                wrt = tuple(t for t, need in ((input, need_x), (target, need_t)) if need)
                with ember.enable_grad():
                    loss = _reduce(_TERMS[name](input, target, param), reduction)
                    gs = iter(ember.autograd.grad(loss, wrt, grad, create_graph=True))
                return (next(gs) if need_x else None, next(gs) if need_t else None,
                        None, None, None)
            gt = None
            if need_t:
                gt = input * -s if name == "binary_cross_entropy_with_logits" else -gx
            return (gx if need_x else None, gt, None, None, None)

    return _PointLossFn


def _class_shape(input, C):
    return (1, C) + (1,) * (input.dim() - 2)


def _fused_loss(input, target, weight, reduction):
    """Whether a class-index loss of ``input`` runs the fused kernels (float32/float64
    CPU (N, C, ...) input, int64 target, a plain class-weight vector), and whether it
    must record a graph node then; None when it runs the composed ops."""
    if not (_FUSED_CE and input.dim() >= 2 and input.dtype in (ember.float32, ember.float64)
            and input.device.type == "cpu" and reduction in ("mean", "sum", "none")
            and isinstance(target, ember.Tensor) and target.dtype == ember.int64
            and (weight is None or (weight.dim() == 1 and weight.dtype == input.dtype
                                    and weight.device.type == "cpu"))):
        return None
    graph = ember.is_grad_enabled() and (input.requires_grad or (
        weight is not None and weight.requires_grad))
    if graph and weight is not None and weight.requires_grad:
        return None   # the weight's gradient comes from the composed ops
    return graph


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """Negative log-likelihood of class indices; ``input`` holds log-probabilities
    (N, C, ...) or (C,).  float32/float64 CPU input runs one fused kernel forward and
    one backward, others the composed ops."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if input.dim() == 1:  # one sample: its loss is 0-dim, as PyTorch's
        out = nll_loss(input.unsqueeze(0), target.unsqueeze(0), weight,
                       ignore_index=ignore_index, reduction=reduction)
        return out.squeeze(0) if reduction == "none" else out
    graph = _fused_loss(input, target, weight, reduction)
    if graph:
        return _NLLLoss.apply(input, target, weight, ignore_index, reduction)
    if graph is not None:
        return _C_reduce.nll_loss_fused(input, target, weight, ignore_index, reduction)[0]
    return _nll_loss_composite(input, target, weight, ignore_index, reduction)


def _nll_loss_composite(input, target, weight, ignore_index, reduction):
    if target.is_floating_point():
        raise RuntimeError("expected scalar type Long but found " + str(target.dtype))
    if input.dim() < 2 or tuple(target.shape) != (input.shape[0],) + tuple(input.shape[2:]):
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target "
                         f"batch_size ({target.shape[0] if target.dim() else 0}).")
    C = input.shape[1]
    valid = None
    if target.numel() and (ignore_index >= 0 or int(target.min().item()) < 0):
        valid = target != ignore_index
        tsafe = ember.where(valid, target, ember.zeros((), dtype=target.dtype))
    else:
        tsafe = target
    if target.numel() and valid is None and int(target.max().item()) >= C:
        raise IndexError(f"Target {int(target.max().item())} is out of bounds.")
    picked = -input.gather(1, tsafe.unsqueeze(1)).squeeze(1)
    if weight is None and valid is None:
        return _reduce(picked, reduction)
    w = None
    if weight is not None:
        w = weight.index_select(0, tsafe.reshape(-1)).reshape(tsafe.shape)
    if valid is not None:
        vf = valid.to(input.dtype)
        w = vf if w is None else w * vf
    loss = picked * w
    if reduction == "mean":
        return loss.sum() / w.sum()
    return _reduce(loss, reduction)


def _nll_loss_function():
    from ember.autograd import Function

    class _NLLLossIdx(Function):
        """nll_loss of (N, C, ...) log-probabilities as one graph node over the fused
        kernels: the backward scatters -w[t] * grad at each target."""

        @staticmethod
        def forward(ctx, input, target, weight, ignore_index, reduction):
            out, denom = _C_reduce.nll_loss_fused(input, target, weight, ignore_index,
                                                  reduction)
            ctx.save_for_backward(input, target, weight)
            ctx.args = (ignore_index, reduction, denom)
            return out

        @staticmethod
        def backward(ctx, grad):
            input, target, weight = ctx.saved_tensors
            ignore_index, reduction, denom = ctx.args
            if ember.is_grad_enabled():  # create_graph: differentiate the composed form
                (gx,) = ember.autograd.grad(
                    _nll_loss_composite(input, target, weight, ignore_index, reduction),
                    (input,), grad, create_graph=True)
                return gx, None, None, None, None
            gx = _C_reduce.nll_loss_fused_backward(grad, input.detach(), target, weight,
                                                   ignore_index, reduction, denom)
            return gx, None, None, None, None

    return _NLLLossIdx


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """Cross-entropy of logits (N, C, ...) against class indices or class probabilities.
    float32/float64 CPU logits run one fused kernel forward and one backward (no
    log_softmax tensor, no transpose of the classes), others the composed ops."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if input.device.type == "cuda":
        from ember.cuda import _nn_ops
        if _nn_ops.fits_cross_entropy(input, target, weight, reduction, label_smoothing):
            return _nn_ops.cross_entropy(input, target, ignore_index, label_smoothing, reduction)
    if 0.0 <= label_smoothing <= 1.0:
        graph = _fused_loss(input, target, weight, reduction)
        if graph:
            return _CrossEntropy.apply(input, target, weight, ignore_index, label_smoothing,
                                       reduction)
        if graph is not None:
            return _C_reduce.cross_entropy_fused(input, target, weight, ignore_index,
                                                 label_smoothing, reduction)[0]
        if (isinstance(target, ember.Tensor) and target.is_floating_point()
                and input.dim() >= 2 and input.device.type == "cpu"
                and input.dtype in (ember.float32, ember.float64) and target.dtype == input.dtype
                and tuple(target.shape) == tuple(input.shape) and not target.requires_grad
                and reduction in ("mean", "sum", "none") and _FUSED_CE
                and (weight is None or (weight.dim() == 1 and weight.dtype == input.dtype
                                        and not weight.requires_grad))):
            return _cross_entropy_prob(input, target, weight, label_smoothing, reduction)
    return _cross_entropy_composite(input, target, weight, ignore_index, reduction,
                                    label_smoothing)


def _cross_entropy_composite(input, target, weight, ignore_index, reduction, label_smoothing):
    cdim = 0 if input.dim() == 1 else 1
    C = input.shape[cdim]
    logp = ember.log_softmax(input, cdim)
    if target.is_floating_point():  # class probabilities
        if tuple(target.shape) != tuple(input.shape):
            raise RuntimeError(f"Expected target size {list(input.shape)}, got "
                               f"{list(target.shape)}")
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / C
        t = logp * target
        if weight is not None:
            t = t * (weight if cdim == 0 else weight.reshape(_class_shape(input, C)))
        loss = -t.sum(cdim)
        if reduction == "mean":
            return loss.sum() / (input.numel() // C) if input.dim() > 1 else loss
        return _reduce(loss, reduction)
    nll = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing <= 0:
        return nll
    if label_smoothing > 1:
        raise ValueError("label_smoothing must be between 0.0 and 1.0")
    if weight is not None:
        smooth = -(logp * (weight if cdim == 0 else weight.reshape(_class_shape(input, C)))
                   ).sum(cdim)
    else:
        smooth = -logp.sum(cdim)
    ignore = target == ignore_index
    smooth = smooth.masked_fill(ignore, 0.0)
    if reduction == "mean":
        keep = ignore.logical_not()
        if weight is not None:
            tk = target.masked_select(keep)
            ret = smooth.sum() / weight.index_select(0, tk).sum()
        else:
            ret = smooth.sum() / keep.sum()
    elif reduction == "sum":
        ret = smooth.sum()
    else:
        ret = smooth
    return (1 - label_smoothing) * nll + ret * (label_smoothing / C)


def _cross_entropy_function():
    from ember.autograd import Function

    class _CrossEntropyIdx(Function):
        """Cross-entropy of (N, C, ...) logits with class indices as one graph node over
        the fused kernels: forward saves each row's log-sum-exp, backward forms
        softmax - one_hot (with smoothing and class weights) in one pass."""

        # ctx is only given tensors to save and read back, and attributes: a caller
        # may run forward and backward directly with a stand-in ctx
        _plain_ctx = True

        @staticmethod
        def forward(ctx, input, target, weight, ignore_index, label_smoothing, reduction):
            out, lse, denom = _C_reduce.cross_entropy_fused(
                input, target, weight, ignore_index, label_smoothing, reduction)
            ctx.save_for_backward(input, target, weight, lse)
            ctx.args = (ignore_index, label_smoothing, reduction, denom)
            return out

        @staticmethod
        def backward(ctx, grad):
            input, target, weight, lse = ctx.saved_tensors
            ignore_index, eps, reduction, denom = ctx.args
            if ember.is_grad_enabled() and input.dim() == 2:  # create_graph
                return _cross_entropy_grad_composite(grad, input, target, weight,
                                                     ignore_index, eps, reduction,
                                                     denom), None, None, None, None, None
            if ember.is_grad_enabled():  # create_graph: differentiate the composed form
                (gx,) = ember.autograd.grad(_cross_entropy_composite(
                    input, target, weight, ignore_index, reduction, eps), (input,), grad,
                    create_graph=True)
                return gx, None, None, None, None, None
            gx = _C_reduce.cross_entropy_fused_backward(
                grad, input.detach(), target, weight, lse, ignore_index, eps, reduction, denom)
            return gx, None, None, None, None, None

    return _CrossEntropyIdx


def _cross_entropy_grad_composite(grad, input, target, weight, ignore_index, eps,
                                  reduction, denom):
    """The fused backward written in public ops, for graphs of the gradient."""
    N, C = input.shape
    keep = target != ignore_index
    tsafe = ember.where(keep, target, ember.zeros((), dtype=target.dtype, device=target.device))
    p = ember.softmax(input, 1)
    onehot = ember.nn.functional.one_hot(tsafe, C).to(input.dtype)
    if weight is None:
        wt = ember.ones(N, dtype=input.dtype, device=input.device)
        wsum, wrow = float(C), 1.0
    else:
        wt = weight.index_select(0, tsafe)
        wsum, wrow = weight.sum(), weight.unsqueeze(0)
    d = (1 - eps) * wt.unsqueeze(1) * (p - onehot) + (eps / C) * (wsum * p - wrow)
    g = (grad / denom if reduction == "mean" else grad) * keep.to(input.dtype)
    return d * g.unsqueeze(1)


def _cross_entropy_prob_function():
    from ember.autograd import Function

    class _CrossEntropyProb(Function):
        """Cross-entropy of (N, C, ...) logits against class probabilities as one graph
        node over the fused kernels (forward saves each row's log-sum-exp)."""

        # ctx is only given tensors to save and read back, and attributes: a caller
        # may run forward and backward directly with a stand-in ctx
        _plain_ctx = True

        @staticmethod
        def forward(ctx, input, target, weight, label_smoothing, reduction):
            out, lse = _C_reduce.cross_entropy_prob_fused(input, target, weight,
                                                          label_smoothing, reduction)
            ctx.save_for_backward(input, target, weight, lse)
            ctx.args = (label_smoothing, reduction)
            return out

        @staticmethod
        def backward(ctx, grad):
            input, target, weight, lse = ctx.saved_tensors
            eps, reduction = ctx.args
            if ember.is_grad_enabled():  # create_graph: a differentiable formula
                C = input.shape[1]
                q = target * (1 - eps) + eps / C
                wq = q if weight is None else q * weight.reshape(_class_shape(input, C))
                d = ember.softmax(input, 1) * wq.sum(1, keepdim=True) - wq
                g = grad / (input.numel() // C) if reduction == "mean" else grad
                return d * (g.unsqueeze(1) if reduction == "none" else g), None, None, None, None
            gx = _C_reduce.cross_entropy_prob_fused_backward(
                grad, input.detach(), target, weight, lse, eps, reduction)
            return gx, None, None, None, None

    return _CrossEntropyProb


def _cross_entropy_prob(input, target, weight, label_smoothing, reduction):
    """cross_entropy of (N, C, ...) logits against class probabilities on the fused
    kernels."""
    if input.requires_grad and ember.is_grad_enabled():
        return _CrossEntropyP.apply(input, target, weight, label_smoothing, reduction)
    return _C_reduce.cross_entropy_prob_fused(input, target, weight, label_smoothing,
                                              reduction)[0]


_CrossEntropy = _LazyFn(_cross_entropy_function)
_CrossEntropyP = _LazyFn(_cross_entropy_prob_function)
_NLLLoss = _LazyFn(_nll_loss_function)
_PointLoss = _LazyFn(_point_loss_function)
_FUSED_CE = True


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({ember.Size(target.shape)}) that is different "
                         f"to the input size ({ember.Size(input.shape)}) is deprecated. Please "
                         f"ensure they have the same size.")
    log_x = ember.clamp_min(ember.log(input), -100)
    log_1mx = ember.clamp_min(ember.log(1 - input), -100)
    loss = -(target * log_x + (1 - target) * log_1mx)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None,
                                     reduce=None, reduction="mean", pos_weight=None):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({ember.Size(target.shape)}) must be the same as input "
                         f"size ({ember.Size(input.shape)})")
    if weight is None and pos_weight is None:
        r = _point_loss("binary_cross_entropy_with_logits", input, target, 0.0, reduction)
        if r is not None:
            return r
    ls = logsigmoid(input)
    if pos_weight is not None:
        log_weight = (pos_weight - 1) * target + 1
        loss = (1 - target) * input - log_weight * ls
    else:
        loss = (1 - target) * input - ls
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce, reduction)
    if log_target:
        loss = ember.exp(target) * (target - input)
    else:
        loss = ember.xlogy(target, target) - target * input
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.dim() else loss.sum()
    return _reduce(loss, reduction)


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                          reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    d = input1.dim() - 1
    prod = (input1 * input2).sum(d)
    m1 = (input1 * input1).sum(d) + 1e-12
    m2 = (input2 * input2).sum(d) + 1e-12
    cos = prod / ember.sqrt(m1 * m2)
    zeros = ember.zeros_like(cos)
    pos = 1 - cos
    neg = ember.clamp_min(cos - margin, 0)
    out = ember.where(target == 1, pos, zeros) + ember.where(target == -1, neg, zeros)
    return _reduce(out, reduction)


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                        reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    loss = ember.clamp_min(-target * (input1 - input2) + margin, 0)
    return _reduce(loss, reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    zeros = ember.zeros_like(input)
    margin_clamp = ember.clamp_min(margin - input, 0)
    out = ember.where(target != 1, margin_clamp, zeros) + ember.where(target != -1, input, zeros)
    return _reduce(out, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _reduce(ember.log1p(ember.exp(-target * input)), reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if log_input:
        loss = ember.exp(input) - target * input
    else:
        loss = input - target * ember.log(input + eps)
    if full:
        st = target * ember.log(target) - target + 0.5 * ember.log(2 * math.pi * target)
        loss = loss + ember.where(target > 1, st, ember.zeros_like(st))
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    var = ember.clamp_min(var, eps)
    loss = 0.5 * (ember.log(var) + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    dp = pairwise_distance(anchor, positive, p, eps)
    dn = pairwise_distance(anchor, negative, p, eps)
    if swap:
        dn = ember.minimum(dn, pairwise_distance(positive, negative, p, eps))
    return _reduce(ember.clamp_min(margin + dp - dn, 0), reduction)
