"""Losses of ``ember.nn.functional`` beyond the common ones: multi-class and multi-label
margin losses, the triplet loss with a custom distance, CTC and the fused linear +
cross-entropy."""
from __future__ import annotations

import math
import warnings

import ember
from ember._check import _check, _check_value

__all__ = ["multi_margin_loss", "multilabel_margin_loss", "multilabel_soft_margin_loss",
           "triplet_margin_with_distance_loss", "ctc_loss", "linear_cross_entropy"]


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


# ---- linear + cross-entropy ---------------------------------------------------------------
def _lce_chunk(x, w, b, t, cls_weight, ignore_index, want_grad):
    """Loss terms (and d(sum of weighted terms)/d logits) of one chunk of rows."""
    logits = _F().linear(x, w, b)
    valid = t != ignore_index
    tt = ember.where(valid, t, ember.zeros_like(t))
    wt = valid.to(logits.dtype)
    if cls_weight is not None:
        wt = wt * cls_weight.index_select(0, tt).to(logits.dtype)
    picked = logits.gather(1, tt.unsqueeze(1)).squeeze(1)
    loss = (ember.logsumexp(logits, 1) - picked) * wt
    g = None
    if want_grad:
        g = ember.softmax(logits, 1) - _F().one_hot(tt, logits.shape[1]).to(logits.dtype)
        g = g * wt.unsqueeze(1)
    return loss, wt, g


def _chunked_lce_function():
    from ember.autograd import Function

    class _ChunkedLinearCE(Function):
        @staticmethod
        def forward(ctx, x, w, b, t, cls_weight, reduction, ignore_index, chunk, acc_dtype):
            n = x.shape[0]
            want = reduction != "none"
            losses, wts = [], []
            gx, gw, gb = [], None, None
            for s in range(0, n, chunk):
                loss, wt, g = _lce_chunk(x[s:s + chunk], w, b, t[s:s + chunk], cls_weight,
                                         ignore_index, want)
                losses.append(loss)
                wts.append(wt)
                if want:
                    gx.append(ember.matmul(g, w))
                    step = ember.matmul(g.t(), x[s:s + chunk]).to(acc_dtype)
                    gw = step if gw is None else gw + step
                    if b is not None:
                        gb = g.sum(0) if gb is None else gb + g.sum(0)
            loss = ember.cat(losses) if losses else ember.zeros(0, dtype=x.dtype)
            ctx.reduction, ctx.chunk, ctx.ignore_index = reduction, chunk, ignore_index
            ctx.cls_weight, ctx.has_bias = cls_weight, b is not None
            if reduction == "none":
                ctx.save_for_backward(x, w, b if b is not None else ember.empty(0), t)
                return loss
            scale = 1.0
            if reduction == "mean":
                scale = ember.cat(wts).sum() if wts else ember.zeros(())
            ctx.grads = (ember.cat(gx) if gx else ember.zeros_like(x), gw, gb, scale)
            return loss.sum() / scale if reduction == "mean" else loss.sum()

        @staticmethod
        def backward(ctx, go):
            if ctx.reduction != "none":
                gx, gw, gb, scale = ctx.grads
                k = go / scale if ctx.reduction == "mean" else go
                return (gx * k, (gw * k).to(go.dtype) if gw is not None else None,
                        gb * k if gb is not None else None, None, None, None, None, None,
                        None)
            x, w, b, t = ctx.saved_tensors
            b = b if ctx.has_bias else None
            gx, gw, gb = [], ember.zeros_like(w), ember.zeros_like(b) if b is not None else None
            for s in range(0, x.shape[0], ctx.chunk):
                _, _, g = _lce_chunk(x[s:s + ctx.chunk], w, b, t[s:s + ctx.chunk],
                                     ctx.cls_weight, ctx.ignore_index, True)
                g = g * go[s:s + ctx.chunk].unsqueeze(1)
                gx.append(ember.matmul(g, w))
                gw = gw + ember.matmul(g.t(), x[s:s + ctx.chunk])
                if gb is not None:
                    gb = gb + g.sum(0)
            return ember.cat(gx), gw, gb, None, None, None, None, None, None

    return _ChunkedLinearCE


_CHUNKED_LCE = None


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None,
                         reduction="mean", ignore_index=None, label_smoothing=0.0,
                         options=None):
    """``cross_entropy(linear(input, linear_weight, linear_bias), target, ...)``.

    ``linear_weight`` is ``(C, *out_features, in_features)``: with ``out_features`` the
    logits are ``(N, C, *out_features)`` (a K-dimensional loss). With ``options`` (a
    :class:`LinearCrossEntropyOptions`) and class-index targets, no out_features, no label
    smoothing and a mean/sum/none reduction, the loss and its gradients are computed a
    chunk of rows at a time so the full logits are never stored; other cases warn and take
    the direct path."""
    global _CHUNKED_LCE
    F = _F()
    if input.dim() < 1 or input.dim() > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.dim()}")
    if linear_weight.dim() < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got "
                           f"{linear_weight.dim()}")
    batch = tuple(input.shape[:-1])
    in_features = input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError(f"expected equal input and linear_weight last dimensions "
                           f"(in_features), got {in_features} and {linear_weight.shape[-1]}, "
                           f"respectively")
    num_classes = linear_weight.shape[0]
    out_features = tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (num_classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(num_classes, *out_features)}, got "
                           f"{tuple(linear_bias.shape)}")
    if out_features and not batch:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape "
                           f"{tuple(linear_weight.shape)} requires batched input, (N, "
                           f"{in_features}), got unbatched input with shape "
                           f"{tuple(input.shape)}")
    logits_shape = (*batch, num_classes, *out_features)
    probs = tuple(target.shape) == logits_shape
    if probs and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains "
                           "probabilities")
    ignore_index = -100 if ignore_index is None else ignore_index
    chunkable = (reduction in ("mean", "sum", "none") and label_smoothing == 0.0
                 and target.dtype == ember.int64 and not out_features and not probs)
    if options is not None and not chunkable:
        warnings.warn(f"linear_cross_entropy: ``options`` ignored; chunked path needs "
                      f"reduction in {{'mean','sum','none'}}, label_smoothing == 0, "
                      f"target.dtype == int64, out_features == (). Got reduction="
                      f"{reduction!r}, label_smoothing={label_smoothing}, target.dtype="
                      f"{target.dtype}, out_features={out_features}.", stacklevel=2)
    if options is not None and chunkable:
        x = input.reshape(-1, in_features)
        t = target.reshape(-1)
        chunk = options.batch_chunk_size or max(1, (1 << 22) // max(num_classes, 1))
        acc = options.acc_dtype or linear_weight.dtype
        if _CHUNKED_LCE is None:
            _CHUNKED_LCE = _chunked_lce_function()
        out = _CHUNKED_LCE.apply(x, linear_weight, linear_bias, t, weight, reduction,
                                 ignore_index, chunk, acc)
        return out.reshape(batch) if reduction == "none" else out
    w2 = linear_weight.reshape(num_classes * math.prod(out_features), in_features)
    b2 = linear_bias.reshape(-1) if linear_bias is not None else None
    logits = F.linear(input, w2, b2).reshape(logits_shape)
    return F.cross_entropy(logits, target, weight, ignore_index=ignore_index,
                           reduction=reduction, label_smoothing=label_smoothing)
