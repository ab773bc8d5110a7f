"""Pooling functions beyond the 2-D kernels: 3-D max/avg pooling, adaptive pooling in 1 and
3 dims, power-average (LP) pooling, max unpooling and fractional max pooling.

3-D pooling runs the 2-D kernels over (H, W) and reduces strided depth taps; adaptive and
fractional windows are index gathers reduced with ``max(-1)``. Gradients and indices follow
PyTorch's first-maximum rule."""
from __future__ import annotations

import math

import ember
from ember import _memory_format
from ember._check import _check, _check_value, _real_only

__all__ = ["max_pool3d", "max_pool3d_with_indices", "max_pool1d_with_indices",
           "avg_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "adaptive_max_pool3d", "adaptive_max_pool3d_with_indices", "lp_pool1d", "lp_pool2d",
           "lp_pool3d", "max_unpool1d", "max_unpool2d", "max_unpool3d",
           "fractional_max_pool2d", "fractional_max_pool2d_with_indices",
           "fractional_max_pool3d", "fractional_max_pool3d_with_indices"]


def _F():
    return ember.nn.functional


def _tuple(v, n, name, op):
    if isinstance(v, (tuple, list)):
        _check(len(v) in (1, n), lambda: f"{op}: {name} must either be a single int, or a "
                                         f"tuple of {n} ints")
        return tuple(int(a) for a in v) * (n if len(v) == 1 else 1)
    return (int(v),) * n


def _batched(input, nsp, op):
    _check(input.dim() in (nsp + 1, nsp + 2),
           lambda: f"{op}: Expected {nsp + 1}D or {nsp + 2}D (batch mode) tensor for input, "
                   f"but got: {list(input.shape)}")
    _check(all(s > 0 for s in input.shape[-nsp:]),
           lambda: f"{op}: Expected input's non-batch dimensions to have positive length, "
                   f"but input has a shape of {list(input.shape)}")
    return input.dim() == nsp + 1


def _out_size(n, k, s, p, d, ceil_mode):
    eff = d * (k - 1) + 1
    num = n + 2 * p - eff + ((s - 1) if ceil_mode else 0)
    o = num // s + 1
    if ceil_mode and (o - 1) * s >= n + p:   # the last window must start inside the input
        o -= 1
    return o


def _flat_index(shape_sp, dtype=ember.int64):
    n = 1
    for v in shape_sp:
        n *= v
    return ember.arange(n, dtype=dtype).reshape(*shape_sp)


def _max_pool_nd(input, nsp, op, kernel_size, stride, padding, dilation, ceil_mode,
                 return_indices):
    _batched(input, nsp, op)
    k = _tuple(kernel_size, nsp, "kernel_size", op)
    s = k if stride is None or (isinstance(stride, (list, tuple)) and not stride) else \
        _tuple(stride, nsp, "stride", op)
    p = _tuple(padding, nsp, "padding", op)
    d = _tuple(dilation, nsp, "dilation", op)
    _check(min(k) > 0, lambda: f"{op}: kernel_size must be greater than zero, but got {k}")
    _check(min(s) > 0, lambda: f"{op}: stride must be greater than zero, but got {s}")
    _check(min(d) > 0, lambda: f"{op}: dilation must be greater than zero, but got {d}")
    _check(all(pp <= kk // 2 for pp, kk in zip(p, k)) and min(p) >= 0,
           lambda: f"{op}: pad should be at most half of effective kernel size, but got "
                   f"pad={p}, kernel_size={k} and dilation={d}")
    sizes = input.shape[-nsp:]
    outs = [_out_size(n, *a, ceil_mode) for n, *a in zip(sizes, k, s, p, d)]
    _check(min(outs) > 0, lambda: f"{op}: Given input size: {list(input.shape)}. Calculated "
                                  f"output size: {outs}. Output size is too small")
    fill = float("-inf") if input.is_floating_point() else ember.iinfo(input.dtype).min
    # a box maximum is the maximum over depth of the (H, W) maxima: the 2-D kernel does
    # (H, W) for every depth slice, then kD strided depth taps are compared element-wise.
    # Ties keep PyTorch's first-in-(d, h, w)-order rule (each stage keeps its first
    # maximum) and a NaN wins, as in PyTorch.
    *lead, dd, h, w = input.shape
    r = _F().max_pool2d(input.reshape(-1, dd, h, w), k[1:], s[1:], p[1:], d[1:], ceil_mode,
                        return_indices)
    vals, hw_idx = r if return_indices else (r, None)
    ho, wo = vals.shape[-2:]
    taps, do = _depth_taps(vals, k[0], s[0], p[0], d[0], ceil_mode, fill)
    best, pick = taps[0], None
    for j, cand in enumerate(taps[1:], 1):
        take = (cand > best) | ember.isnan(cand)
        best = ember.where(take, cand, best)
        if return_indices:
            pick = ember.where(take, ember.full_like(take, j, dtype=ember.int64),
                               ember.zeros_like(take, dtype=ember.int64) if pick is None
                               else pick)
    out = _memory_format.like_input(input, best.reshape(*lead, do, ho, wo))
    if not return_indices:
        return out
    if pick is None:
        pick = ember.zeros(best.shape, dtype=ember.int64)
    start = (ember.arange(do, dtype=ember.int64) * s[0] - p[0]).reshape(1, do, 1, 1)
    depth = (start + pick * d[0]).clamp(0, dd - 1)
    idx = depth * (h * w) + hw_idx.gather(1, depth)
    return out, _memory_format.like_input(input, idx.reshape(*lead, do, ho, wo))


def _depth_taps(x, k, s, p, d, ceil_mode, fill):
    """The ``k`` strided views of dim 1 of ``x`` (padded with ``fill``) whose element-wise
    reduction is a 1-D pooling along that dim, and the output length."""
    n = x.shape[1]
    do = _out_size(n, k, s, p, d, ceil_mode)
    right = max((do - 1) * s + d * (k - 1) + 1 - n - p, 0)
    if p or right:
        x = _F().pad(x, (0, 0, 0, 0, p, right), value=fill)
    span = (do - 1) * s + 1
    return [x[:, j * d:j * d + span:s] for j in range(k)], do


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """3-D max pooling over ``(N, C, D, H, W)`` (or ``(C, D, H, W)``); with
    ``return_indices`` also the flat ``D*H*W`` index of each maximum."""
    return _max_pool_nd(input, 3, "max_pool3d", kernel_size, stride, padding, dilation,
                        ceil_mode, return_indices)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    """:func:`max_pool3d` returning ``(values, indices)``."""
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    """``max_pool1d`` returning ``(values, indices)``."""
    return _F().max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """3-D average pooling over ``(N, C, D, H, W)`` (or ``(C, D, H, W)``)."""
    op = "avg_pool3d"
    _batched(input, 3, op)
    k = _tuple(kernel_size, 3, "kernel_size", op)
    s = k if stride is None or (isinstance(stride, (list, tuple)) and not stride) else \
        _tuple(stride, 3, "stride", op)
    p = _tuple(padding, 3, "padding", op)
    _check(min(k) > 0 and min(s) > 0, lambda: f"{op}: kernel_size and stride must be "
                                              f"greater than zero, got {k} and {s}")
    _check(all(0 <= pp <= kk // 2 for pp, kk in zip(p, k)),
           lambda: f"{op}: pad should be at most half of effective kernel size, but got "
                   f"pad={p}, kernel_size={k}")
    _check(divisor_override is None or divisor_override != 0, "divisor must be not zero")
    sizes = input.shape[-3:]
    outs = [_out_size(n, kk, ss, pp, 1, ceil_mode) for n, kk, ss, pp in zip(sizes, k, s, p)]
    _check(min(outs) > 0, lambda: f"{op}: Given input size: {list(input.shape)}. Calculated "
                                  f"output size: {outs}. Output size is too small")
    # box sums are (H, W) window sums (the 2-D kernel, divisor 1) summed over depth windows
    *lead, dd, h, w = input.shape
    sums = _F().avg_pool2d(input.reshape(-1, dd, h, w), k[1:], s[1:], p[1:], ceil_mode, True, 1)
    taps, _ = _depth_taps(sums, k[0], s[0], p[0], 1, ceil_mode, 0.0)
    total = taps[0]
    for t in taps[1:]:
        total = total + t
    total = total.reshape(*lead, *outs)
    if divisor_override is not None:
        return total / divisor_override
    # divisor per output position: a separable product of per-axis window lengths
    div = None
    for j, (n, o) in enumerate(zip(sizes, outs)):
        start = [i * s[j] - p[j] for i in range(o)]
        end = [min(a + k[j], n + p[j]) for a in start]
        if count_include_pad:
            cnt = [e - a for a, e in zip(start, end)]
        else:
            cnt = [min(e, n) - max(a, 0) for a, e in zip(start, end)]
        shape = [1, 1, 1]
        shape[j] = o
        t = ember.tensor(cnt, dtype=total.dtype).reshape(*shape)
        div = t if div is None else div * t
    return total / div


def _adaptive_ranges(n, o):
    """Start and end of PyTorch's adaptive windows, and the longest window."""
    starts = [(i * n) // o for i in range(o)]
    ends = [-((-(i + 1) * n) // o) for i in range(o)]
    return starts, ends, max(e - a for a, e in zip(starts, ends))


def _adaptive_sizes(input, nsp, output_size, op):
    out = list(output_size) if isinstance(output_size, (tuple, list)) else [output_size] * nsp
    _check(len(out) == nsp, lambda: f"{op}: internal error: output_size.size() must be {nsp}")
    sizes = input.shape[-nsp:]
    return [sizes[j] if o is None else int(o) for j, o in enumerate(out)]


def _adaptive_max(input, nsp, output_size, return_indices, op):
    _batched(input, nsp, op)
    outs = _adaptive_sizes(input, nsp, output_size, op)
    _check(min(outs) >= 0, lambda: f"{op}: elements of output_size must be greater than or "
                                   f"equal to 0 but received {outs}")
    sizes = input.shape[-nsp:]
    lead = input.dim() - nsp
    x, idx = input, _flat_index(sizes)
    for j, (n, o) in enumerate(zip(sizes, outs)):
        starts, ends, width = _adaptive_ranges(n, o)
        # windows shorter than ``width`` repeat their last element (harmless for a max)
        pick = [min(a + t, e - 1) for a, e in zip(starts, ends) for t in range(width)]
        pick = ember.tensor(pick, dtype=ember.int64)
        x = x.index_select(lead + 2 * j, pick)
        x = x.reshape(*x.shape[:lead + 2 * j], o, width, *x.shape[lead + 2 * j + 1:])
        idx = idx.index_select(2 * j, pick)
        idx = idx.reshape(*idx.shape[:2 * j], o, width, *idx.shape[2 * j + 1:])
    order = [2 * j for j in range(nsp)] + [2 * j + 1 for j in range(nsp)]
    x = x.permute(*range(lead), *[lead + a for a in order]).reshape(*x.shape[:lead], *outs, -1)
    out, arg = x.max(-1)
    if not return_indices:
        return out
    idx = idx.permute(*order).reshape(*outs, -1)
    idx = idx.expand(*out.shape, idx.shape[-1]).gather(-1, arg.unsqueeze(-1)).squeeze(-1)
    return out, idx


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Adaptive max pooling over the last dim of ``(N, C, L)`` (or ``(C, L)``)."""
    return _adaptive_max(input, 1, output_size, return_indices, "adaptive_max_pool1d")


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    """:func:`adaptive_max_pool1d` returning ``(values, indices)``."""
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    """``adaptive_max_pool2d`` returning ``(values, indices)``."""
    return _F().adaptive_max_pool2d(input, output_size, True)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """Adaptive max pooling over ``(N, C, D, H, W)`` (or ``(C, D, H, W)``)."""
    return _adaptive_max(input, 3, output_size, return_indices, "adaptive_max_pool3d")


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    """:func:`adaptive_max_pool3d` returning ``(values, indices)``."""
    return adaptive_max_pool3d(input, output_size, True)


def adaptive_avg_pool3d(input, output_size):
    """Adaptive average pooling over ``(N, C, D, H, W)`` (or ``(C, D, H, W)``).

    The mean over a box is the mean over each axis in turn, so this is a 2-D adaptive pool
    over (H, W) followed by a 1-D one over D."""
    op = "adaptive_avg_pool3d"
    _batched(input, 3, op)
    od, oh, ow = _adaptive_sizes(input, 3, output_size, op)
    _check(min(od, oh, ow) >= 0, lambda: f"{op}: elements of output_size must be greater "
                                         f"than or equal to 0 but received "
                                         f"{[od, oh, ow]}")
    if input.is_complex():      # torch's only complex case: the mean over (D, H, W)
        if (od, oh, ow) == (1, 1, 1):
            return input.mean((-3, -2, -1), keepdim=True)
        _real_only(input, "adaptive_avg_pool3d_cpu")
    *lead, d, h, w = input.shape
    x = _F().adaptive_avg_pool2d(input.reshape(-1, d, h, w), (oh, ow))     # (B, D, oh, ow)
    x = x.reshape(-1, d, oh * ow).transpose(1, 2)                          # (B, oh*ow, D)
    x = _F().adaptive_avg_pool1d(x, od)                                    # (B, oh*ow, od)
    return x.transpose(1, 2).reshape(*lead, od, oh, ow)


def _lp_pool(input, nsp, norm_type, kernel_size, stride, ceil_mode, avg):
    k = _tuple(kernel_size, nsp, "kernel_size", "lp_pool")
    out = avg(input.pow(norm_type), k, stride, 0, ceil_mode)
    n = math.prod(k)
    return (out.sign() * _F().relu(out.abs())).mul(n).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling ``(sum x^p)^(1/p)`` over 1-D windows."""
    return _lp_pool(input, 1, norm_type, kernel_size, stride, ceil_mode, _F().avg_pool1d)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling ``(sum x^p)^(1/p)`` over 2-D windows."""
    return _lp_pool(input, 2, norm_type, kernel_size, stride, ceil_mode, _F().avg_pool2d)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling ``(sum x^p)^(1/p)`` over 3-D windows."""
    return _lp_pool(input, 3, norm_type, kernel_size, stride, ceil_mode, avg_pool3d)


def _max_unpool(input, indices, nsp, kernel_size, stride, padding, output_size, op):
    k = _tuple(kernel_size, nsp, "kernel_size", op)
    s = k if stride is None else _tuple(stride, nsp, "stride", op)
    p = _tuple(padding, nsp, "padding", op)
    _check(indices.dtype == ember.int64, lambda: f"{op}(): elements in indices should be "
                                                 f"type int64 but got: {indices.dtype}")
    _check(tuple(indices.shape) == tuple(input.shape),
           lambda: f"Expected shape of indices to be same as that of the input tensor "
                   f"({list(input.shape)}) but got indices tensor with shape: "
                   f"{list(indices.shape)}")
    _check(input.dim() in (nsp + 1, nsp + 2), lambda: f"{op}(): Expected {nsp + 1}D or "
                                                      f"{nsp + 2}D tensor, but got "
                                                      f"{list(input.shape)}")
    default = [(n - 1) * ss - 2 * pp + kk
               for n, kk, ss, pp in zip(input.shape[-nsp:], k, s, p)]
    if output_size is None:
        out = default
    else:
        out = [int(v) for v in output_size]
        if len(out) == nsp + 2:
            out = out[2:]
        if len(out) == nsp + 1 and input.dim() == nsp + 1:
            out = out[1:]
        _check_value(len(out) == nsp, lambda: f"output_size should be a sequence containing "
                                              f"{nsp} or {nsp + 2} elements, but it has a "
                                              f"length of '{len(output_size)}'")
        for j, (o, dflt) in enumerate(zip(out, default)):
            lo, hi = dflt - s[j], dflt + s[j]
            _check_value(lo < o < hi, lambda: f"invalid output_size \"{out}\" (dim {j} must "
                                              f"be between {lo} and {hi})")
    lead = input.shape[:-nsp]
    total = math.prod(out)
    flat_idx = indices.reshape(*lead, -1)
    if flat_idx.numel():
        _check(int(flat_idx.min()) >= 0 and int(flat_idx.max()) < total,
               lambda: f"Found an invalid max index: {int(flat_idx.max())} (output volumes "
                       f"are of size {'x'.join(str(o) for o in out)})")
    res = ember.zeros(*lead, total, dtype=input.dtype)
    res = res.scatter(-1, flat_idx, input.reshape(*lead, -1))
    return res.reshape(*lead, *out)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Inverse of ``max_pool1d``: place each value at its index, zeros elsewhere."""
    return _max_unpool(input, indices, 1, kernel_size, stride, padding, output_size,
                       "max_unpool1d")


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Inverse of ``max_pool2d``: place each value at its index, zeros elsewhere."""
    return _max_unpool(input, indices, 2, kernel_size, stride, padding, output_size,
                       "max_unpool2d")


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Inverse of :func:`max_pool3d`: place each value at its index, zeros elsewhere."""
    return _max_unpool(input, indices, 3, kernel_size, stride, padding, output_size,
                       "max_unpool3d")


def _fractional(input, nsp, kernel_size, output_size, output_ratio, return_indices,
                _random_samples, op):
    unbatched = _batched(input, nsp, op)
    if unbatched:
        input = input.unsqueeze(0)
    k = _tuple(kernel_size, nsp, "kernel_size", op)
    sizes = list(input.shape[-nsp:])
    if output_size is None:
        _check_value(output_ratio is not None, f"{op} requires specifying either an "
                                               f"output_size or an output_ratio")
        ratio = tuple(output_ratio) if isinstance(output_ratio, (tuple, list)) else \
            (output_ratio,) * nsp
        _check_value(len(ratio) == nsp and all(0 < float(r) < 1 for r in ratio),
                     lambda: f"{op} requires output_ratio to either be a single Int or tuple "
                             f"of Ints in (0, 1), got {output_ratio}")
        outs = [int(n * float(r)) for n, r in zip(sizes, ratio)]
    else:
        outs = list(_tuple(output_size, nsp, "output_size", op))
    for n, o, kk in zip(sizes, outs, k):
        _check(o + kk - 1 <= n, lambda: f"{op}(): pool size {kk} too large relative to input "
                                        f"size {n} and output size {o}")
    nb, c = input.shape[0], input.shape[1]
    if _random_samples is None:
        _random_samples = ember.rand(nb, c, nsp, dtype=input.dtype)
    _check(tuple(_random_samples.shape) == (nb, c, nsp),
           lambda: f"{op}(): expected _random_samples of shape {[nb, c, nsp]}, got "
                   f"{list(_random_samples.shape)}")
    x, idx = input, _flat_index(sizes).expand(nb, c, *sizes)
    dt = input.dtype
    for j, (n, o, kk) in enumerate(zip(sizes, outs, k)):
        # ATen draws the 2-D sample pair as (w, h) but the 3-D triple as (t, h, w)
        u = _random_samples[:, :, 1 - j if nsp == 2 else j].to(dt).unsqueeze(-1)
        if o > 1:
            alpha = ember.tensor(float(n - kk), dtype=dt) / ember.tensor(float(o - 1), dtype=dt)
            i = ember.arange(o, dtype=dt)
            start = ((i + u) * alpha).long() - (u * alpha).long()
            start = ember.cat([start[..., :-1], ember.full((nb, c, 1), n - kk,
                                                           dtype=ember.int64)], -1)
        else:
            start = ember.full((nb, c, 1), n - kk, dtype=ember.int64)
        pos = (start.unsqueeze(-1) + ember.arange(kk)).reshape(nb, c, o * kk)  # (N, C, o*k)
        dim = 2 + j
        shape = [nb, c] + [1] * (x.dim() - 2)
        shape[dim] = o * kk
        pos = pos.reshape(*shape).expand(*x.shape[:dim], o * kk, *x.shape[dim + 1:])
        x = x.gather(dim, pos)
        idx = idx.gather(dim, pos)
        x = x.reshape(*x.shape[:dim], o, kk, *x.shape[dim + 1:])
        idx = idx.reshape(*idx.shape[:dim], o, kk, *idx.shape[dim + 1:])
        # keep the window axis at the end so the next spatial dim sits at 2 + j + 1
        x = x.movedim(dim + 1, -1)
        idx = idx.movedim(dim + 1, -1)
    out, arg = x.reshape(nb, c, *outs, -1).max(-1)
    if unbatched:
        out = out.squeeze(0)
    if not return_indices:
        return out
    idx = idx.reshape(nb, c, *outs, -1).gather(-1, arg.unsqueeze(-1)).squeeze(-1)
    return out, (idx.squeeze(0) if unbatched else idx)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """Fractional max pooling (Graham, 2014) over ``(N, C, H, W)``: pseudo-random window
    starts, one per output row/column, drawn from ``_random_samples`` in [0, 1)."""
    return _fractional(input, 2, kernel_size, output_size, output_ratio, return_indices,
                       _random_samples, "fractional_max_pool2d")


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None,
                                       output_ratio=None, return_indices=False,
                                       _random_samples=None):
    """:func:`fractional_max_pool2d` returning ``(values, indices)``."""
    return fractional_max_pool2d(input, kernel_size, output_size, output_ratio, True,
                                 _random_samples)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """Fractional max pooling over ``(N, C, D, H, W)``."""
    return _fractional(input, 3, kernel_size, output_size, output_ratio, return_indices,
                       _random_samples, "fractional_max_pool3d")


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None,
                                       output_ratio=None, return_indices=False,
                                       _random_samples=None):
    """:func:`fractional_max_pool3d` returning ``(values, indices)``."""
    return fractional_max_pool3d(input, kernel_size, output_size, output_ratio, True,
                                 _random_samples)
