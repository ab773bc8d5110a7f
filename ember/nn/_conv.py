"""3-D convolutions composed from the 2-D kernels, and ``conv_tbc``.

``conv3d`` stacks the ``kD`` depth taps of every output depth into the channel axis and runs
one ``conv2d`` (one GEMM) over ``N * D_out`` images; ``conv_transpose3d`` runs one
``conv_transpose2d`` over ``N * D_in`` images with the depth taps as extra output channels
and adds each tap at its output depth with one ``index_add``. Autograd comes from the
composing ops."""
from __future__ import annotations

import ember
from ember import _memory_format
from ember._check import _check

__all__ = ["conv3d", "conv_transpose3d", "conv_tbc"]


def _one_op(fn):
    """Under a dispatch mode (graph capture, export), ``fn`` is one op named after it
    rather than the 2-D ops it is composed of (ONNX has Conv/ConvTranspose for 3-D)."""
    from functools import wraps

    from ember._C import core

    @wraps(fn)
    def op(*args, **kwargs):
        if core._mode_active():
            return core._dispatch(fn.__name__, fn, args, kwargs)
        return fn(*args, **kwargs)
    return op


def _triple(v, name, op):
    if isinstance(v, (tuple, list)):
        _check(len(v) in (1, 3), lambda: f"{op}: expected {name} to be a single integer or a "
                                         f"list of 3 integers, but got {list(v)}")
        return tuple(int(a) for a in v) * (3 if len(v) == 1 else 1)
    return (int(v),) * 3


def _check_input(op, input, weight, cin, groups):
    _check(input.dim() in (4, 5), lambda: f"Expected 4D (unbatched) or 5D (batched) input to "
                                          f"{op}, but got input of size: {list(input.shape)}")
    _check(weight.dim() == 5, lambda: f"{op}: expected a 5-D weight, but got weight of size "
                                      f"{list(weight.shape)}")
    _check(input.shape[1] == cin, lambda: f"Given groups={groups}, weight of size "
                                          f"{list(weight.shape)}, expected input"
                                          f"{list(input.shape)} to have {cin} channels, but got "
                                          f"{input.shape[1]} channels instead")


@_one_op
def conv3d(input: ember.Tensor, weight: ember.Tensor, bias: ember.Tensor | None = None,
           stride=1, padding=0, dilation=1, groups: int = 1) -> ember.Tensor:
    """3-D convolution of ``(N, C, D, H, W)`` (or unbatched ``(C, D, H, W)``) input with a
    ``(O, C / groups, kD, kH, kW)`` weight.

    Parameters
    ----------
    stride, dilation : int or tuple of 3 ints
    padding : int, tuple of 3 ints, ``'valid'`` or ``'same'``
    groups : int
        Blocked connections from input to output channels.

    Returns
    -------
    Tensor
        ``(N, O, D_out, H_out, W_out)``; differentiable in input, weight and bias.
    """
    unbatched = input.dim() == 4
    input0 = input
    if unbatched:
        input = input.unsqueeze(0)
    _check(groups > 0, "non-positive groups is not supported")
    _check_input("conv3d", input, weight, weight.shape[1] * groups if weight.dim() == 5 else -1,
                 groups)
    _check(weight.shape[0] % groups == 0, lambda: f"Given groups={groups}, expected weight to "
                                                  f"be divisible by {groups} at dimension 0, "
                                                  f"but got weight of size "
                                                  f"{list(weight.shape)} instead")
    s = _triple(stride, "stride", "conv3d")
    d = _triple(dilation, "dilation", "conv3d")
    _check(min(s) > 0, "non-positive stride is not supported")
    _check(min(d) > 0, "dilation should be greater than zero")
    k = tuple(weight.shape[2:])
    if isinstance(padding, str):
        _check(padding in ("same", "valid"), lambda: f"Invalid padding string: '{padding}'")
        if padding == "same":
            _check(s == (1, 1, 1), "padding='same' is not supported for strided convolutions")
            total = [di * (ki - 1) for di, ki in zip(d, k)]
            pads = []
            for t in reversed(total):
                pads += [t // 2, t - t // 2]
            input = ember.nn.functional.pad(input, pads)
        p = (0, 0, 0)
    else:
        p = _triple(padding, "padding", "conv3d")
        _check(min(p) >= 0, "negative padding is not supported")
    n, dd = input.shape[0], input.shape[2]
    o, cg, kd = weight.shape[0], weight.shape[1], k[0]
    if p[0]:
        input = ember.nn.functional.pad(input, (0, 0, 0, 0, p[0], p[0]))
        dd += 2 * p[0]
    eff = d[0] * (kd - 1) + 1
    do = (dd - eff) // s[0] + 1
    _check(do > 0 and input.shape[3] + 2 * p[1] >= d[1] * (k[1] - 1) + 1
           and input.shape[4] + 2 * p[2] >= d[2] * (k[2] - 1) + 1,
           lambda: f"Calculated padded input size per channel: "
                   f"({dd} x {input.shape[3] + 2 * p[1]} x {input.shape[4] + 2 * p[2]}). "
                   f"Kernel size: ({eff} x {d[1] * (k[1] - 1) + 1} x "
                   f"{d[2] * (k[2] - 1) + 1}). Kernel size can't be greater than actual input "
                   f"size")
    h, w = input.shape[3], input.shape[4]
    # (N, kD, C, Do, H, W): tap j of output depth t reads input depth t*s + j*d
    taps = [input[:, :, j * d[0]: j * d[0] + (do - 1) * s[0] + 1: s[0]] for j in range(kd)]
    cols = ember.stack(taps, 1).reshape(n, kd, groups, cg, do, h, w)
    cols = cols.permute(0, 4, 2, 1, 3, 5, 6).reshape(n * do, groups * kd * cg, h, w)
    w2 = weight.permute(0, 2, 1, 3, 4).reshape(o, kd * cg, k[1], k[2])
    out = ember.nn.functional.conv2d(cols, w2, bias, s[1:], p[1:], d[1:], groups)
    out = out.reshape(n, do, o, out.shape[2], out.shape[3]).permute(0, 2, 1, 3, 4)
    if unbatched:
        return out.squeeze(0)
    # torch's layout: channels-last-3d when the input or the weight is (its float64
    # kernel is row-major only), else row-major
    if input.dtype is ember.float64:
        return out.contiguous()
    return _memory_format.like_input(input0, out.contiguous(), weight)


@_one_op
def conv_transpose3d(input: ember.Tensor, weight: ember.Tensor,
                     bias: ember.Tensor | None = None, stride=1, padding=0, output_padding=0,
                     groups: int = 1, dilation=1) -> ember.Tensor:
    """Transposed 3-D convolution (the gradient of :func:`conv3d` with respect to its input)
    of ``(N, C_in, D, H, W)`` input with a ``(C_in, C_out / groups, kD, kH, kW)`` weight.

    Returns
    -------
    Tensor
        ``(N, C_out, D_out, H_out, W_out)`` with
        ``D_out = (D - 1) * stride - 2 * padding + dilation * (kD - 1) + output_padding + 1``.
    """
    unbatched = input.dim() == 4
    if unbatched:
        input = input.unsqueeze(0)
    _check(groups > 0, "non-positive groups is not supported")
    _check_input("conv_transpose3d", input, weight,
                 weight.shape[0] if weight.dim() == 5 else -1, groups)
    s = _triple(stride, "stride", "conv_transpose3d")
    p = _triple(padding, "padding", "conv_transpose3d")
    op = _triple(output_padding, "output_padding", "conv_transpose3d")
    d = _triple(dilation, "dilation", "conv_transpose3d")
    _check(min(s) > 0, "non-positive stride is not supported")
    _check(min(d) > 0, "dilation should be greater than zero")
    _check(min(p) >= 0, "negative padding is not supported")
    for a, b, c in zip(op, s, d):
        _check(a < b or a < c, lambda: f"output padding must be smaller than either stride or "
                                       f"dilation, but got output_padding={list(op)}, "
                                       f"stride={list(s)}, dilation={list(d)}")
    n, cin, di, h, w = input.shape
    cog, kd = weight.shape[1], weight.shape[2]
    cout = cog * groups
    full = (di - 1) * s[0] + d[0] * (kd - 1) + 1
    do = full - 2 * p[0] + op[0]
    _check(do > 0, lambda: f"conv_transpose3d: the output depth {do} is not positive")
    x2 = input.permute(0, 2, 1, 3, 4).reshape(n * di, cin, h, w)
    w2 = weight.reshape(cin, cog * kd, weight.shape[3], weight.shape[4])
    y = ember.nn.functional.conv_transpose2d(x2, w2, None, s[1:], p[1:], op[1:], groups, d[1:])
    ho, wo = y.shape[2], y.shape[3]
    # (N, D, C_out, kD, Ho, Wo) -> (N, kD * D, C_out, Ho, Wo); tap j of input depth i lands
    # at output depth i*s + j*d (before cropping the padding)
    y = y.reshape(n, di, cout, kd, ho, wo).permute(0, 3, 1, 2, 4, 5)
    y = y.reshape(n, kd * di, cout, ho, wo)
    pos = [i * s[0] + j * d[0] for j in range(kd) for i in range(di)]
    out = ember.zeros(n, max(full + op[0], p[0] + do), cout, ho, wo, dtype=y.dtype)
    out = out.index_add(1, ember.tensor(pos, dtype=ember.int64), y)
    out = out.narrow(1, p[0], do).permute(0, 2, 1, 3, 4)
    if bias is not None:
        out = out + bias.reshape(1, cout, 1, 1, 1)
    return out.squeeze(0) if unbatched else out


def conv_tbc(input: ember.Tensor, weight: ember.Tensor, bias: ember.Tensor,
             pad: int = 0) -> ember.Tensor:
    """1-D convolution in time-batch-channel layout: ``(T, B, C_in)`` input, ``(K, C_in,
    C_out)`` weight, ``(C_out,)`` bias; returns ``(T + 2 * pad - K + 1, B, C_out)``."""
    _check(input.dim() == 3, "Input must have 3 dims: time, batch, in_channel")
    _check(weight.dim() == 3, "Weight tensor must have 3 dims: kernel_width, in_channels, "
                              "out_channels.")
    _check(bias.dim() == 1, "Bias must be 1-D")
    _check(input.shape[2] == weight.shape[1], "Input dim 2 (input channels) is not == dim 1 "
                                              "in the weight tensor")
    _check(weight.shape[2] == bias.shape[0], "Bias size must equal dim 2 in the weight "
                                             "tensor (output channels).")
    out = ember.nn.functional.conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias,
                                     1, pad)
    return out.permute(2, 0, 1)
