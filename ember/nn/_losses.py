"""Losses of ``ember.nn.functional`` beyond the common ones: multi-class and multi-label
margin losses, the triplet loss with a custom distance, and CTC."""
from __future__ import annotations

import ember
from ember._check import _check, _check_value

__all__ = ["multi_margin_loss", "multilabel_margin_loss", "multilabel_soft_margin_loss",
           "triplet_margin_with_distance_loss", "ctc_loss"]


def _F():
    return ember.nn.functional


def _reduce(loss, size_average, reduce, reduction):
    F = _F()
    return F._reduce(loss, F._legacy_reduction(size_average, reduce, reduction))


def _as_2d(input, target, op):
    _check(input.dim() in (1, 2) and input.shape[-1] > 0,
           lambda: f"{op}: Expected non-empty vector or matrix with optional 0-dim batch size, "
                   f"but got: {list(input.shape)}")
    if input.dim() == 1:
        # a multi-label target is a row of class lists; a multi-class one is one index
        t = target.reshape(1, -1) if op == "multilabel_margin_loss" else target.reshape(1)
        return input.unsqueeze(0), t, True
    return input, target, False


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    """Multi-class hinge loss: ``sum_{i != y} max(0, margin - x[y] + x[i])^p / C``."""
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    x, t, unbatched = _as_2d(input, target, "multi_margin_loss")
    n, c = x.shape
    _check(t.dim() == 1 and t.shape[0] == n, lambda: f"inconsistent target size, expected "
                                                     f"{n} but got {list(target.shape)}")
    _check(t.numel() == 0 or (int(t.min()) >= 0 and int(t.max()) < c),
           "target out of range")
    xy = x.gather(1, t.unsqueeze(1))
    z = (x - xy + margin).clamp_min(0)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * weight.index_select(0, t).unsqueeze(1)
    other = 1 - _F().one_hot(t, c).to(x.dtype)
    loss = (z * other).sum(1) / c
    if unbatched:
        loss = loss.squeeze(0)
    return _reduce(loss, size_average, reduce, reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Multi-label hinge loss: ``target`` lists each sample's classes, ended by -1;
    every (target class, non-target class) pair adds ``max(0, 1 - (x[y] - x[i])) / C``."""
    x, t, unbatched = _as_2d(input, target, "multilabel_margin_loss")
    _check(tuple(t.shape) == tuple(x.shape), lambda: f"inconsistent target size: "
                                                     f"{list(target.shape)} for input of size: "
                                                     f"{list(input.shape)}")
    n, c = x.shape
    valid = ember.cumprod((t >= 0).to(ember.int64), 1).to(x.dtype)     # up to the first -1
    ti = ember.where(t >= 0, t, ember.zeros_like(t))
    _check(t.numel() == 0 or int(ti.max()) < c, "target out of range")
    is_target = ember.zeros(n, c, dtype=x.dtype).scatter_add(1, ti, valid).clamp_max(1)
    xy = x.gather(1, ti)                                                 # (N, C): x[y_j]
    hinge = (1 - xy.unsqueeze(2) + x.unsqueeze(1)).clamp_min(0)          # (N, j, i)
    loss = (hinge * valid.unsqueeze(2) * (1 - is_target).unsqueeze(1)).sum((1, 2)) / c
    if unbatched:
        loss = loss.squeeze(0)
    return _reduce(loss, size_average, reduce, reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    """One-versus-all logistic loss averaged over the ``C`` classes."""
    F = _F()
    loss = -(target * F.logsigmoid(input) + (1 - target) * F.logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    loss = loss.sum(class_dim) / input.shape[class_dim]
    return _reduce(loss, size_average, reduce, reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    """``max(d(a, p) - d(a, n) + margin, 0)`` for any distance ``d`` (default: the
    pairwise L2 distance)."""
    if margin <= 0:
        raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than "
                         f"0, got {margin} instead")
    a, p, n = anchor.dim(), positive.dim(), negative.dim()
    if not (a == p == n):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have "
                           f"the same number of dimensions, but got: anchor {a}D, positive "
                           f"{p}D, and negative {n}D inputs")
    dist = distance_function if distance_function is not None else _F().pairwise_distance
    dist_pos = dist(anchor, positive)
    dist_neg = dist(anchor, negative)
    if swap:
        dist_neg = ember.minimum(dist_neg, dist(positive, negative))
    loss = (margin + dist_pos - dist_neg).clamp_min(0)
    return _F()._reduce(loss, reduction)


# ---- CTC --------------------------------------------------------------------------------
def _lse(*xs):
    """Log-sum-exp of same-shape tensors that may hold -inf (all -inf gives -inf)."""
    m = xs[0]
    for x in xs[1:]:
        m = ember.maximum(m, x)
    safe = ember.where(ember.isinf(m), ember.zeros_like(m), m)
    s = None
    for x in xs:
        e = ember.exp(x - safe)
        s = e if s is None else s + e
    return ember.log(s) + safe


def _shift(x, k, fill):
    """``x`` moved ``k`` places right along the last dim, ``fill`` entering on the left."""
    if k == 0:
        return x
    pad = ember.full((*x.shape[:-1], k), fill, dtype=x.dtype)
    return ember.cat([pad, x[..., :x.shape[-1] - k]], -1)


def _ctc_tables(log_probs, targets, input_lengths, target_lengths, blank):
    """Extended labels, the skip mask and the per-step emission log-probabilities."""
    n = log_probs.shape[1]
    smax = max(target_lengths) if target_lengths else 0
    length = 2 * smax + 1
    if targets.dim() == 1:           # concatenated targets
        rows, off = [], 0
        for s in target_lengths:
            rows.append(targets[off:off + s])
            off += s
    else:
        rows = [targets[b, :target_lengths[b]] for b in range(n)]
    ext = ember.full((n, length), blank, dtype=ember.int64)
    for b, r in enumerate(rows):
        if r.numel():
            ext[b, 1:2 * r.numel():2] = r.to(ember.int64)
    prev2 = _shift(ext, 2, -1)
    skip = (ext != blank) & (ext != prev2)
    skip[:, :2] = False
    emit = log_probs.gather(2, ext.unsqueeze(0).expand(log_probs.shape[0], n, length))
    return ext, skip, emit, length


def _ctc_alpha(emit, skip, input_lengths, length):
    ninf = float("-inf")
    t_max, n = emit.shape[0], emit.shape[1]
    pos = ember.arange(length).unsqueeze(0)
    a = ember.where(pos < 2, emit[0], ember.full((n, length), ninf, dtype=emit.dtype))
    alphas = [a]
    lens = ember.tensor(input_lengths, dtype=ember.int64).unsqueeze(1)
    for t in range(1, t_max):
        s2 = ember.where(skip, _shift(a, 2, ninf), ember.full_like(a, ninf))
        nxt = _lse(a, _shift(a, 1, ninf), s2) + emit[t]
        a = ember.where(t < lens, nxt, a)
        alphas.append(a)
    return ember.stack(alphas), a


def _ctc_beta(emit, skip, input_lengths, target_lengths, length):
    ninf = float("-inf")
    t_max, n = emit.shape[0], emit.shape[1]
    pos = ember.arange(length).unsqueeze(0)
    last = ember.tensor([2 * s for s in target_lengths], dtype=ember.int64).unsqueeze(1)
    lens = ember.tensor(input_lengths, dtype=ember.int64).unsqueeze(1)
    skip_next = ember.cat([skip[:, 2:], ember.zeros(n, 2, dtype=ember.bool)], 1)
    betas = [None] * t_max
    b = ember.full((n, length), ninf, dtype=emit.dtype)
    for t in range(t_max - 1, -1, -1):
        start = ((pos == last) | (pos == last - 1)) & (t == lens - 1)
        e = emit[t]
        init = ember.where(start, e, ember.full_like(e, ninf))
        b1 = ember.cat([b[:, 1:], ember.full((n, 1), ninf, dtype=b.dtype)], 1)
        b2 = ember.cat([b[:, 2:], ember.full((n, 2), ninf, dtype=b.dtype)], 1)
        b2 = ember.where(skip_next, b2, ember.full_like(b2, ninf))
        rec = _lse(b, b1, b2) + e
        b = ember.where(t < lens - 1, rec, init)
        betas[t] = b
    return ember.stack(betas)


def _ctc_function():
    from ember.autograd import Function

    class _CTC(Function):
        @staticmethod
        def forward(ctx, log_probs, targets, input_lengths, target_lengths, blank):
            ext, skip, emit, length = _ctc_tables(log_probs, targets, input_lengths,
                                                  target_lengths, blank)
            alphas, a = _ctc_alpha(emit, skip, input_lengths, length)
            last = ember.tensor([2 * s for s in target_lengths], dtype=ember.int64)
            end1 = a.gather(1, last.unsqueeze(1)).squeeze(1)
            end2 = a.gather(1, (last - 1).clamp_min(0).unsqueeze(1)).squeeze(1)
            end2 = ember.where(last > 0, end2, ember.full_like(end2, float("-inf")))
            nll = -_lse(end1, end2)
            ctx.save_for_backward(log_probs)
            ctx.tables = (ext, skip, emit, length, alphas, nll, input_lengths, target_lengths)
            return nll

        @staticmethod
        def backward(ctx, grad_nll):
            (log_probs,) = ctx.saved_tensors
            ext, skip, emit, length, alphas, nll, in_lens, tgt_lens = ctx.tables
            betas = _ctc_beta(emit, skip, in_lens, tgt_lens, length)
            t_max, n, c = log_probs.shape
            ab = alphas + betas                                          # (T, N, L)
            # log of sum over positions s with label c of alpha*beta, per (t, n, c)
            m = ab.amax(-1, keepdim=True)
            safe = ember.where(ember.isinf(m), ember.zeros_like(m), m)
            idx = ext.unsqueeze(0).expand(t_max, n, length)
            acc = ember.zeros(t_max, n, c, dtype=ab.dtype)
            acc = acc.scatter_add(2, idx, ember.exp(ab - safe))
            lcab = ember.log(acc) + safe
            grad = ember.exp(log_probs) - ember.exp(lcab + nll.reshape(1, n, 1) - log_probs)
            steps = ember.arange(t_max).reshape(t_max, 1, 1)
            live = steps < ember.tensor(in_lens, dtype=ember.int64).reshape(1, n, 1)
            finite = ~ember.isinf(nll).reshape(1, n, 1)
            grad = ember.where(live & finite, grad, ember.zeros_like(grad))
            return grad * grad_nll.reshape(1, n, 1), None, None, None, None

    return _CTC


_CTC_FN = None


def _lengths(v, n, name):
    if isinstance(v, ember.Tensor):
        v = v.tolist()
    v = [int(a) for a in (v if isinstance(v, (list, tuple)) else [v])]
    _check(len(v) == n, lambda: f"{name} must be of size batch_size")
    return v


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    """Connectionist Temporal Classification loss.

    Parameters
    ----------
    log_probs : Tensor
        ``(T, N, C)`` (or unbatched ``(T, C)``) log-probabilities, e.g. ``log_softmax``.
    targets : Tensor
        ``(N, S)`` padded or 1-D concatenated target labels (never ``blank``).
    input_lengths, target_lengths : Tensor or sequence of int
        Length of each input and target.
    blank : int
        The blank label.
    reduction : {'mean', 'sum', 'none'}
        ``'mean'`` divides each loss by its target length, then averages the batch.
    zero_infinity : bool
        Replace infinite losses (impossible alignments) and their gradients by zero.

    Returns
    -------
    Tensor
        The loss; its gradient with respect to ``log_probs`` is PyTorch's.
    """
    global _CTC_FN
    unbatched = log_probs.dim() == 2
    if unbatched:
        log_probs = log_probs.unsqueeze(1)
        targets = targets.unsqueeze(0) if targets.dim() == 1 else targets
    _check(log_probs.dim() == 3, lambda: f"ctc_loss: expected log_probs to be 2-D or 3-D, "
                                         f"got {log_probs.dim()}-D")
    t_max, n, c = log_probs.shape
    _check(0 <= blank < c, "blank must be in label range")
    in_lens = _lengths(input_lengths, n, "input_lengths")
    tgt_lens = _lengths(target_lengths, n, "target_lengths")
    for b in range(n):
        _check(in_lens[b] <= t_max, lambda: f"Expected input_lengths to have value at most "
                                             f"{t_max}, but got value {in_lens[b]} (while "
                                             f"checking arguments for ctc_loss_cpu)")
        if targets.dim() == 2:
            _check(tgt_lens[b] <= targets.shape[1],
                   lambda: f"Expected tensor to have size at least {tgt_lens[b]} at dimension "
                           f"1, but got size {targets.shape[1]} for argument #2 'targets' "
                           f"(while checking arguments for ctc_loss_cpu)")
    if _CTC_FN is None:
        _CTC_FN = _ctc_function()
    loss = _CTC_FN.apply(log_probs, targets, in_lens, tgt_lens, blank)
    if zero_infinity:
        loss = ember.where(ember.isinf(loss), ember.zeros_like(loss), loss)
    if reduction == "mean":
        div = ember.tensor([max(s, 1) for s in tgt_lens], dtype=loss.dtype)
        return (loss / div).mean()
    if reduction == "sum":
        return loss.sum()
    _check_value(reduction == "none", lambda: f"{reduction} is not a valid value for "
                                              f"reduction")
    return loss.squeeze(0) if unbatched else loss
