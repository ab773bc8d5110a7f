"""``ember.nn.functional``: the functional form of every layer, activation and loss.

Written over ember's public tensor API (plus the nn kernels of ``ember._C.conv``:
``linear``, convolution and pooling); autograd comes from the ops themselves."""
from __future__ import annotations

import math

import ember
from ember import _memory_format
from ember._C import chnorm as _C_chnorm
from ember._C import conv as _conv
from ember._C import core as _core
from ember._C import elementwise as _ew
from ember._C import matmul as _mm
from ember._C import reduce as _C_reduce
from ember._check import _check, _check_index, _real_only

__all__ = [
    "linear", "bilinear", "conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d",
    "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d",
    "adaptive_avg_pool2d", "adaptive_max_pool2d", "relu", "relu_", "relu6", "leaky_relu",
    "elu", "selu", "celu", "gelu", "silu", "mish", "tanh", "sigmoid", "softplus", "hardtanh",
    "hardsigmoid", "hardswish", "logsigmoid", "softsign", "tanhshrink", "threshold", "glu",
    "softmax", "log_softmax", "softmin", "dropout", "dropout1d", "dropout2d", "batch_norm",
    "layer_norm", "group_norm", "instance_norm", "local_response_norm", "embedding", "one_hot",
    "pad", "interpolate", "unfold", "fold",
    "normalize", "cosine_similarity", "pairwise_distance", "scaled_dot_product_attention",
    "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "cross_entropy", "nll_loss",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
    "cosine_embedding_loss", "margin_ranking_loss", "multi_head_attention_forward",
]


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def _single(v):
    return v[0] if isinstance(v, (tuple, list)) else v


# ---- linear and convolution ---------------------------------------------------
linear = _mm.linear


def bilinear(input1, input2, weight, bias=None):
    """y_k = x1^T W_k x2 + b_k over the last dimension."""
    lead = input1.shape[:-1]
    x1 = input1.reshape(-1, input1.shape[-1])
    x2 = input2.reshape(-1, input2.shape[-1])
    o, i1, i2 = weight.shape
    # (B, i1) @ (i1, o*i2) -> (B, o, i2); then contract with x2
    t = ember.matmul(x1, weight.permute(1, 0, 2).reshape(i1, o * i2)).reshape(-1, o, i2)
    y = ember.matmul(t, x2.unsqueeze(2)).squeeze(2)
    if bias is not None:
        y = y + bias
    return y.reshape(*lead, o)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv.conv1d(input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv.conv2d(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    return _conv.conv_transpose1d(input, weight, bias, stride, padding, output_padding, groups,
                                 dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    return _conv.conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups,
                                 dilation)


# ---- pooling ----------------------------------------------------------------
def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    _real_only(input, "max_pool2d")
    if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0):
        stride = kernel_size
    return _conv.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode,
                           return_indices)


max_pool2d_with_indices = max_pool2d


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    _real_only(input, "max_pool1d_impl")
    stride = kernel_size if stride is None else stride
    r = _conv.max_pool2d(input.unsqueeze(-2), (1, _single(kernel_size)), (1, _single(stride)),
                        (0, _single(padding)), (1, _single(dilation)), ceil_mode,
                        return_indices)
    if return_indices:
        return r[0].squeeze(-2), r[1].squeeze(-2)
    return r.squeeze(-2)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0):
        stride = kernel_size
    return _conv.avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                           divisor_override)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    stride = kernel_size if stride is None else stride
    return _conv.avg_pool2d(input.unsqueeze(-2), (1, _single(kernel_size)),
                           (1, _single(stride)), (0, _single(padding)), ceil_mode,
                           count_include_pad).squeeze(-2)


def _global_avg(input, nsp, output_size, kernel):
    """A 1 x ... x 1 adaptive average is torch's mean over the pooled dims, for any input
    rank and for complex input (which torch pools no other way); None where the pooling
    kernel runs (None in output_size keeps that input size)."""
    if not isinstance(input, _core.TensorBase):
        return None
    cplx = input.is_complex()
    if not cplx and input.is_floating_point() and input.dim() in (nsp + 1, nsp + 2):
        return None
    out = list(output_size) if isinstance(output_size, (tuple, list)) else [output_size] * nsp
    sizes = input.shape[-nsp:] if input.dim() >= nsp else [1] * nsp
    if len(out) == nsp and all((sizes[j] if o is None else o) == 1 for j, o in enumerate(out)):
        return input.mean(tuple(range(-nsp, 0)), keepdim=True)
    if cplx:
        _real_only(input, kernel)
    return None


def adaptive_avg_pool2d(input, output_size):
    r = _global_avg(input, 2, output_size, "adaptive_avg_pool2d")
    return _conv.adaptive_avg_pool2d(input, output_size) if r is None else r


def adaptive_avg_pool1d(input, output_size):
    if isinstance(input, _core.TensorBase) and input.dim() not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional "
                           f"tensor for argument #1 'self' (while checking arguments for "
                           f"adaptive_avg_pool1d)")
    return adaptive_avg_pool2d(input.unsqueeze(-2), (1, _single(output_size))).squeeze(-2)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    _real_only(input, "adaptive_max_pool2d")
    return _conv.adaptive_max_pool2d(input, output_size, return_indices)


# ---- activations --------------------------------------------------------------
def relu(input, inplace=False):
    return ember.relu_(input) if inplace else ember.relu(input)


def relu_(input):
    return ember.relu_(input)


def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0, inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return _ew.leaky_relu(input, negative_slope, inplace)


def elu(input, alpha=1.0, inplace=False):
    r = _ew.elu(input, alpha)
    return input.copy_(r) if inplace else r


def selu(input, inplace=False):
    r = _ew.elu(input, 1.6732632423543772848170429916717, 1.0507009873554804934193349852946)
    return input.copy_(r) if inplace else r


def celu(input, alpha=1.0, inplace=False):
    r = _ew.elu(input, alpha, 1.0, 1.0 / alpha)
    return input.copy_(r) if inplace else r


def gelu(input, approximate="none"):
    return ember.gelu(input, approximate=approximate)


def silu(input, inplace=False):
    # complex: x / (1 + exp(-x)), as torch (ember's fused kernel is real)
    r = input * ember.sigmoid(input) if isinstance(input, ember.Tensor) and \
        input.is_complex() else ember.silu(input)
    return input.copy_(r) if inplace else r


def mish(input, inplace=False):
    r = ember.mish(input)
    return input.copy_(r) if inplace else r


def tanh(input):
    return ember.tanh(input)


def sigmoid(input):
    return ember.sigmoid(input)


def softplus(input, beta=1.0, threshold=20.0):
    return ember.softplus(input, beta, threshold)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    return _ew.hardtanh(input, min_val, max_val, inplace)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return _ew.hardtanh(input, min_val, max_val, True)


def hardsigmoid(input, inplace=False):
    # torch's min(max(x + 3, 0), 6) / 6 in the element type, one kernel
    return _ew.hardsigmoid_(input) if inplace else _ew.hardsigmoid(input)


def hardswish(input, inplace=False):
    # torch's x * min(max(x + 3, 0), 6) / 6 in the element type, one kernel
    return _ew.hardswish_(input) if inplace else _ew.hardswish(input)


def logsigmoid(input):
    return _ew.logsigmoid(input)


def softsign(input):
    return input / (ember.abs(input) + 1)


def tanhshrink(input):
    return input - ember.tanh(input)


def threshold(input, threshold, value, inplace=False):
    r = _ew._threshold(input, threshold, value, inplace)
    if r is not None:
        return r
    # other devices and Python modes: torch's x <= threshold ? value : x from public ops
    r = ember.where(input <= threshold, ember.full((), value, dtype=input.dtype), input)
    return input.copy_(r) if inplace else r


def glu(input, dim=-1):
    _real_only(input, "glu_cpu")
    _check(input.dim() > 0, "glu does not support scalars because halving size must be even")
    nd = input.dim()
    _check_index(-nd <= dim < nd, lambda: f"Dimension out of range (expected to be in range "
                                          f"of [{-nd}, {nd - 1}], but got {dim})")
    d = dim % nd
    n = input.shape[d]
    _check(n % 2 == 0, lambda: f"Halving dimension must be even, but dimension {d} is size {n}")
    if not input.is_floating_point():
        raise NotImplementedError(f"\"glu_cpu\" not implemented for '{_ew._type_name(input)}'")
    r = _ew._glu(input, d)
    if r is not None:
        return r
    a, b = input.chunk(2, d)
    return a * ember.sigmoid(b)


def _softmax_dim(ndim):
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim(input.dim())
    if dtype is not None:
        input = input.to(dtype)
    return ember.softmax(input, dim)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim(input.dim())
    if dtype is not None:
        input = input.to(dtype)
    return ember.log_softmax(input, dim)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    return softmax(-input, dim, dtype=dtype)


# ---- dropout ----------------------------------------------------------------
def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout(input, p=0.5, training=True, inplace=False):
    _check_p(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input.mul_(0) if inplace else input * 0
    mask = (ember.rand(*input.shape, dtype=input.dtype, device=input.device) >= p
            ).to(input.dtype)
    mask = mask.mul_(1.0 / (1.0 - p))
    return input.mul_(mask) if inplace else input * mask


def _feature_dropout(input, p, training, inplace, nbatch_dims):
    _check_p(p)
    if not training or p == 0.0:
        return input
    shape = list(input.shape[:nbatch_dims]) + [1] * (input.dim() - nbatch_dims)
    if p == 1.0:
        return input.mul_(0) if inplace else input * 0
    mask = (ember.rand(*shape, dtype=input.dtype) >= p).to(input.dtype).mul_(1.0 / (1.0 - p))
    return input.mul_(mask) if inplace else input * mask


def dropout1d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout(input, p, training, inplace, 2 if input.dim() == 3 else 1)


def dropout2d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout(input, p, training, inplace, 2 if input.dim() == 4 else 1)


def dropout3d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout(input, p, training, inplace, 2 if input.dim() == 5 else 1)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    _check_p(p)
    if not training or p == 0.0:
        return input
    alpha = -1.7580993408473766
    keep = (ember.rand(*input.shape, dtype=input.dtype) >= p).to(input.dtype)
    a = ((1 - p) * (1 + p * alpha ** 2)) ** -0.5
    b = -a * alpha * p
    r = (input * keep + alpha * (1 - keep)) * a + b
    return input.copy_(r) if inplace else r


# ---- normalisation ------------------------------------------------------------
def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """Batch normalisation over all dims but 1; in training, updates the running stats
    (unbiased variance) in place.  float32/float64 CPU tensors run one fused kernel
    (forward and backward), others the composed ops."""
    _real_only(input, "batch_norm")
    nd = input.dim()
    if nd < 2:
        raise ValueError(f"expected 2D or more input (got {nd}D input)")
    if input.device.type == "cuda":
        from ember.cuda import _cnn_ops
        if _cnn_ops.fits_batch_norm(input, running_mean, running_var, weight, bias):
            return _cnn_ops.batch_norm(input, running_mean, running_var, weight, bias,
                                       training, momentum, eps)
    y = _C_chnorm.batch_norm(input, running_mean, running_var, weight, bias, bool(training),
                             float(momentum), float(eps))
    if y is not None:
        return y
    return _batch_norm_composite(input, running_mean, running_var, weight, bias, training,
                                 momentum, eps)


def _batch_norm_composite(input, running_mean, running_var, weight=None, bias=None,
                          training=False, momentum=0.1, eps=1e-5):
    nd = input.dim()
    C = input.shape[1]
    dims = (0,) + tuple(range(2, nd))
    shape = (1, C) + (1,) * (nd - 2)
    if training:
        n = input.numel() // C
        if n <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input "
                             f"size {list(input.shape)}")
        mean = input.mean(dims, keepdim=True)
        xc = input - mean
        var = (xc * xc).mean(dims, keepdim=True)
        if running_mean is not None or running_var is not None:
            with ember.autograd.no_grad():
                if running_mean is not None:
                    running_mean.mul_(1 - momentum).add_(mean.detach().reshape(C),
                                                         alpha=momentum)
                if running_var is not None:
                    running_var.mul_(1 - momentum).add_(var.detach().reshape(C),
                                                        alpha=momentum * n / (n - 1))
        y = xc * ember.rsqrt(var + eps)
    else:
        y = (input - running_mean.reshape(shape)) * ember.rsqrt(running_var.reshape(shape) + eps)
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """Instance normalisation of an (N, C, *) input: each (sample, channel) plane by its
    own statistics.  As in PyTorch it is batch_norm over the (1, N*C, *) view with the
    per-channel tensors repeated N times, so it runs the fused batch_norm kernel
    (forward and backward); the running statistics (when given) take the average of
    the repeated ones."""
    _real_only(input, "batch_norm")
    nd = input.dim()
    if use_input_stats and nd >= 2 and math.prod(input.shape[2:]) <= 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input "
                         f"size {ember.Size(input.shape)}")
    if not use_input_stats:  # the running statistics are the same for every sample
        return batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    N, C = input.shape[0], input.shape[1]

    def rep(t):
        return None if t is None else t.repeat(N)
    rm, rv = rep(running_mean), rep(running_var)
    y = batch_norm(input.reshape((1, N * C) + tuple(input.shape[2:])), rm, rv, rep(weight),
                   rep(bias), True, momentum, eps)
    with ember.autograd.no_grad():
        if running_mean is not None:
            running_mean.copy_(rm.reshape(N, C).mean(0))
        if running_var is not None:
            running_var.copy_(rv.reshape(N, C).mean(0))
    return y.reshape(input.shape)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Layer normalisation over the trailing ``normalized_shape`` dims: float32/float64
    CPU tensors run one fused kernel (forward and backward), others the composed ops."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    dt = input.dtype
    if input.device.type == "cuda":
        from ember.cuda._nn_ops import layer_norm as _cuda_layer_norm
        return _cuda_layer_norm(input, tuple(normalized_shape), weight, bias, eps)
    if (dt in (ember.float32, ember.float64) and input.device.type == "cpu"
            and all(p is None or (isinstance(p, ember.Tensor) and p.dtype == dt
                                  and p.device.type == "cpu") for p in (weight, bias))):
        return _C_reduce.layer_norm(input, normalized_shape, weight, bias, eps)
    return _layer_norm_composite(input, normalized_shape, weight, bias, eps)


def _layer_norm_composite(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    k = len(normalized_shape)
    if tuple(input.shape[input.dim() - k:]) != tuple(normalized_shape):
        raise RuntimeError(f"Given normalized_shape={list(normalized_shape)}, expected input "
                           f"with shape [*, {', '.join(map(str, normalized_shape))}], but got "
                           f"input of size{list(input.shape)}")
    dims = tuple(range(input.dim() - k, input.dim()))
    mean = input.mean(dims, keepdim=True)
    xc = input - mean
    var = (xc * xc).mean(dims, keepdim=True)
    y = xc * ember.rsqrt(var + eps)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """RMS normalisation over the trailing ``normalized_shape`` dims: float32/float64
    CPU tensors run one fused kernel (forward and backward), others the composed ops."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    if eps is None:
        eps = ember.finfo(input.dtype).eps if hasattr(ember, "finfo") else 1.1920929e-07
    dt = input.dtype
    if (isinstance(input, ember.Tensor) and dt in (ember.float32, ember.float64)
            and input.device.type == "cpu"
            and (weight is None or (isinstance(weight, ember.Tensor) and weight.dtype == dt
                                    and weight.device.type == "cpu"))):
        if ember.is_grad_enabled() and (input.requires_grad or (
                weight is not None and weight.requires_grad)):
            return _RMSNorm.apply(input, weight, tuple(normalized_shape), float(eps))
        return _C_reduce.rms_norm_fused(input, tuple(normalized_shape), weight, float(eps))[0]
    return _rms_norm_composite(input, normalized_shape, weight, eps)


def _rms_norm_composite(input, normalized_shape, weight, eps):
    dims = tuple(range(input.dim() - len(normalized_shape), input.dim()))
    y = input * ember.rsqrt((input * input).mean(dims, keepdim=True) + eps)
    return y * weight if weight is not None else y


def _rms_norm_function():
    from ember.autograd import Function

    class _RMSNormFn(Function):
        """rms_norm as one graph node over the fused kernels (saves each row's rstd)."""

        @staticmethod
        def forward(ctx, input, weight, shape, eps):
            y, rstd = _C_reduce.rms_norm_fused(input, shape, weight, eps)
            ctx.save_for_backward(input, weight, rstd)
            ctx.args = (shape, eps)
            return y

        @staticmethod
        def backward(ctx, grad):
            x, w, rstd = ctx.saved_tensors
            shape, eps = ctx.args
            need_w = w is not None and ctx.needs_input_grad[1]
            if ember.is_grad_enabled():  # create_graph: differentiate the composed form
                ins = [t for t in (x, w) if t is not None and t.requires_grad]
                y = _rms_norm_composite(x, shape, w, eps)
                got = dict(zip(map(id, ins), ember.autograd.grad(y, ins, grad,
                                                                 create_graph=True)))
                return got.get(id(x)), (got.get(id(w)) if w is not None else None), None, None
            dx, dw = _C_reduce.rms_norm_fused_backward(grad, x.detach(), rstd,
                                                       None if w is None else w.detach(),
                                                       ctx.needs_input_grad[0], need_w)
            return dx, (dw.reshape(w.shape) if dw is not None else None), None, None

    return _RMSNormFn


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Group normalisation over groups of channels of an (N, C, *) input.
    float32/float64 CPU tensors run one fused kernel (forward and backward), others
    the composed ops."""
    _real_only(input, "GroupNormKernelImpl")
    C = input.shape[1]
    if C % num_groups != 0:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    y = _C_chnorm.group_norm(input, num_groups, weight, bias, float(eps))
    if y is not None:
        return y
    return _group_norm_composite(input, num_groups, weight, bias, eps)


def _group_norm_composite(input, num_groups, weight=None, bias=None, eps=1e-5):
    N, C = input.shape[0], input.shape[1]
    x = input.reshape(N, num_groups, -1)
    mean = x.mean(2, keepdim=True)
    xc = x - mean
    var = (xc * xc).mean(2, keepdim=True)
    y = (xc * ember.rsqrt(var + eps)).reshape(input.shape)
    shape = (1, C) + (1,) * (input.dim() - 2)
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y


def local_response_norm(input: ember.Tensor, size: int, alpha: float = 1e-4,
                        beta: float = 0.75, k: float = 1.0) -> ember.Tensor:
    """Local response normalisation across channels (dim 1).

    ``out = x / (k + alpha / size * sum_{c' in window(c)} x[:, c']**2) ** beta`` where
    the window holds ``size`` channels, ``size // 2`` before ``c`` and
    ``(size - 1) // 2`` after it (zero outside the input), as in PyTorch.

    Parameters
    ----------
    input : Tensor
        Shape ``(N, C, *)`` with at least 3 dimensions.
    size : int
        Number of neighbouring channels in the window.
    alpha, beta, k : float, optional
        Multiplicative factor, exponent and additive factor.

    Returns
    -------
    Tensor
        Same shape as ``input``.

    Raises
    ------
    ValueError
        If ``input`` has fewer than 3 dimensions.
    """
    dim = input.dim()
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    # mean of x^2 over a channel window: one (size, 1) average pool over (N, 1, C, rest)
    div = (input * input).reshape(input.shape[0], 1, input.shape[1], -1)
    div = pad(div, (0, 0, size // 2, (size - 1) // 2))
    div = avg_pool2d(div, (size, 1), stride=1).reshape(input.shape)
    div = (div * alpha + k) ** beta
    return input / div


# ---- embedding, one-hot -------------------------------------------------------
def _embedding_renorm(weight, idx, max_norm, norm_type):
    with ember.autograd.no_grad():
        uniq = ember.unique(idx.reshape(-1))
        rows = weight.index_select(0, uniq)
        norms = rows.norm(norm_type, 1, keepdim=True)
        scale = ember.where(norms > max_norm, max_norm / (norms + 1e-7),
                            ember.ones_like(norms))
        weight.index_copy_(0, uniq, rows * scale) if hasattr(weight, "index_copy_") else \
            weight.__setitem__(uniq, rows * scale)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Rows of ``weight`` picked by the integer ``input``; the row ``padding_idx`` gets
    no gradient, and with ``scale_grad_by_freq`` each row's gradient is divided by how
    often ``input`` picks it."""
    if input.is_floating_point():
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the "
                           "following scalar types: Long, Int; but got a floating tensor")
    if padding_idx is not None and padding_idx < 0:
        padding_idx += weight.shape[0]
    if max_norm is not None:
        _embedding_renorm(weight, input, max_norm, norm_type)
    flat = input.reshape(-1)
    if (padding_idx is not None or scale_grad_by_freq) and weight.requires_grad and \
            ember.is_grad_enabled():
        out = _Embedding.apply(weight, flat, padding_idx, bool(scale_grad_by_freq))
    else:
        out = weight.index_select(0, flat)
    return out.reshape(*input.shape, weight.shape[1])


def _embedding_function():
    from ember.autograd import Function

    class _EmbeddingGrad(Function):
        """Rows of weight whose gradient leaves out ``padding_idx`` and, with
        ``scale_grad_by_freq``, is divided by how often each row was picked."""

        @staticmethod
        def forward(ctx, weight, flat, padding_idx, scale_grad_by_freq):
            ctx.save_for_backward(flat)
            ctx.num_weights = weight.shape[0]
            ctx.padding_idx = padding_idx
            ctx.scale = scale_grad_by_freq
            return weight.detach().index_select(0, flat)

        @staticmethod
        def backward(ctx, grad):
            (flat,) = ctx.saved_tensors
            if ctx.padding_idx is not None:
                grad = grad * (flat != ctx.padding_idx).to(grad.dtype).unsqueeze(1)
            if ctx.scale:
                counts = ember.bincount(flat, minlength=ctx.num_weights).to(grad.dtype)
                grad = grad / counts.index_select(0, flat).unsqueeze(1)
            gw = ember.zeros(ctx.num_weights, grad.shape[1], dtype=grad.dtype,
                             device=grad.device)
            gw.index_add_(0, flat, grad)
            return gw, None, None, None

    return _EmbeddingGrad


class _LazyFn:
    def __init__(self, make):
        self._make = make
        self._fn = None

    def apply(self, *args):
        if self._fn is None:
            self._fn = self._make()
        return self._fn.apply(*args)


_Embedding = _LazyFn(_embedding_function)
_RMSNorm = _LazyFn(_rms_norm_function)


def one_hot(tensor, num_classes=-1):
    if tensor.dtype != ember.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        num_classes = int(tensor.max().item()) + 1 if tensor.numel() else 0
    if tensor.numel():
        if int(tensor.min().item()) < 0:
            raise RuntimeError("Class values must be non-negative.")
        if int(tensor.max().item()) >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    classes = ember.arange(num_classes, device=tensor.device)
    return ember.eq(tensor.unsqueeze(-1), classes).to(ember.int64)


# ---- padding and resizing -----------------------------------------------------
def _pad_index(n, before, after, mode):
    """Source indices of ATen's reflection / replication / periodic padding of a
    length-``n`` axis (negative pads crop), as one int64 tensor."""
    k = ember.arange(-before, n + after, dtype=ember.int64)   # input coordinate of each output
    if mode == "replicate":
        return k.clamp(0, n - 1)
    if mode == "reflect":
        return (n - 1) - ((n - 1) - k.abs()).abs()
    return k.remainder(n)


_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def pad(input: ember.Tensor, pad, mode: str = "constant",
        value: float | None = None) -> ember.Tensor:
    """Pad the last ``len(pad) // 2`` dims: ``pad = (left, right, top, bottom, ...)``.

    Parameters
    ----------
    input : Tensor
        The tensor to pad.
    pad : sequence of int
        Pairs of (before, after) amounts, last dimension first; negative values crop.
    mode : str, optional
        ``'constant'`` (any rank), or ``'reflect'`` / ``'replicate'`` / ``'circular'``
        for the last 1, 2 or 3 dims of a batched or unbatched input.
    value : float, optional
        Fill value for ``'constant'`` (default 0).

    Returns
    -------
    Tensor
        The padded tensor; differentiable in ``input``.

    Raises
    ------
    NotImplementedError
        An unknown mode, or a non-constant mode on an unsupported rank (as PyTorch).
    RuntimeError
        Odd or too long ``pad``, a ``value`` with a non-constant mode, a reflect pad as
        large as the input, or a circular pad wrapping more than once.
    """
    pad = [int(p) for p in pad]
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    npad = len(pad) // 2
    if npad > input.dim():
        raise RuntimeError(f"Padding length should be less than or equal to two times the "
                           f"input dimension but got padding length {len(pad)} and input of "
                           f"dimension {input.dim()}")
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if mode != "constant":
        if value is not None and value != 0:
            raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
        if npad not in (1, 2, 3) or input.dim() not in (npad + 1, npad + 2):
            raise NotImplementedError(
                f"Padding size {len(pad)} is not supported for {input.dim()}D input tensor.\n"
                f"Supported combinations for non-constant padding:\n"
                f"  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
                f"  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
                f"  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    size = list(input.shape)
    for k in range(npad):
        size[-1 - k] += pad[2 * k] + pad[2 * k + 1]
    if min(size, default=0) >= 0:       # negative sizes get the per-mode errors below
        _core._check_size(size, input.dtype, "pad")
    out = input
    for k in range(npad):
        before, after = pad[2 * k], pad[2 * k + 1]
        dim = out.dim() - 1 - k
        n = out.shape[dim]
        new_n = n + before + after
        if mode in ("reflect", "replicate"):
            if mode == "reflect" and (before >= n or after >= n):
                raise RuntimeError(f"Argument #4: Padding size should be less than the "
                                   f"corresponding input dimension, but got: padding "
                                   f"({before}, {after}) at dimension {dim} of input "
                                   f"{list(input.shape)}")
            if new_n < (1 if npad == 1 else 0):   # ATen's 1-D kernels refuse empty output
                raise RuntimeError(f"input ({'DHW'[2 - k]}: {n}) is too small. Calculated "
                                   f"output {'DHW'[2 - k]}: {new_n}")
            if before or after:
                out = out.index_select(dim, _pad_index(n, before, after, mode))
            continue
        if new_n < 0:
            raise RuntimeError("narrow(): length must be non-negative.")
        if mode == "circular" and (before > n or after > n):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if before < 0:
            out = out.narrow(dim, -before, n + before)
            n += before
            before = 0
        if after < 0:
            out = out.narrow(dim, 0, n + after)
            n += after
            after = 0
        if before == 0 and after == 0:
            continue
        if mode == "circular":
            if n == 0:
                raise RuntimeError("Padding value causes wrapping around more than once.")
            if before > n or after > n:   # a cropped axis shorter than the pad: periodic
                out = out.index_select(dim, _pad_index(n, before, after, mode))
                continue
            parts = []
            if before:
                parts.append(out.narrow(dim, n - before, before))
            parts.append(out)
            if after:
                parts.append(out.narrow(dim, 0, after))
            out = ember.cat(parts, dim)
            continue
        parts = []
        v = 0 if value is None else value
        if before:
            s = list(out.shape)
            s[dim] = before
            parts.append(ember.full(s, v, dtype=out.dtype, device=out.device))
        parts.append(out)
        if after:
            s = list(out.shape)
            s[dim] = after
            parts.append(ember.full(s, v, dtype=out.dtype, device=out.device))
        out = ember.cat(parts, dim)
    return out if out is input else _memory_format.like_input(input, out)


# ---- distances ----------------------------------------------------------------
def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    denom = input.norm(p, dim, keepdim=True).clamp_min(eps)
    if out is not None:
        return ember.div(input, denom, out=out)
    return input / denom


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    n1 = x1.norm(2, dim, keepdim=True).clamp_min(eps)
    n2 = x2.norm(2, dim, keepdim=True).clamp_min(eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    return (x1 - x2 + eps).norm(p, -1, keepdim=keepdim)


# ---- attention ----------------------------------------------------------------
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """softmax(Q K^T * scale + mask) V over the last two dims.

    Float32/float64 CPU inputs of equal batch dims run one fused
    kernel (forward and backward, flash-attention style) that never forms the L x S
    score matrix; it is faster than the composed path at every size measured, down
    to 8 x 8.  The causal mask skips whole blocks; a boolean or float ``attn_mask``
    (broadcast to the scores, needing no gradient) is added to each block of scores.
    Dropout (applied whenever ``dropout_p > 0``, as torch) runs inside the kernel: the
    keep-mask is drawn from the default generator exactly as ``dropout`` would draw
    it for the batch + (L, S) probabilities, and the backward regenerates it.
    CUDA tensors without a mask (head dims up to 256) run the device's fused kernels,
    which draw the same mask from the CUDA generator.
    Other cases compose matmul and softmax."""
    L, S = query.shape[-2], key.shape[-2]
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    if enable_gqa and query.dim() >= 3 and key.shape[-3] != query.shape[-3]:
        rep = query.shape[-3] // key.shape[-3]
        key = key.repeat_interleave(rep, -3)
        value = value.repeat_interleave(rep, -3)
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not "
                           "be set when is_causal=True")
    dt = query.dtype
    # under a dispatch mode (tracing) dropout stays a traced draw of its own
    if ((dropout_p == 0.0 or (0.0 < dropout_p < 1.0 and not _core._mode_active()))
            and L * S > 0
            and dt in (ember.float32, ember.float64) and key.dtype == dt and value.dtype == dt
            and query.device.type == "cpu" and key.device.type == "cpu"
            and value.device.type == "cpu" and query.dim() >= 2
            and query.dim() == key.dim() == value.dim()
            and query.shape[:-2] == key.shape[:-2] == value.shape[:-2]
            and key.shape[-1] == query.shape[-1] and value.shape[-2] == S):
        mask = None if attn_mask is None else _sdpa_fused_mask(attn_mask, query, S)
        if attn_mask is None or mask is not None:
            drop = ()
            if dropout_p > 0.0:
                # one draw of the default generator, as dropout takes
                gen = ember.default_generator
                off = gen.get_offset()
                gen.set_offset(off + 1)
                drop = (float(dropout_p), gen.initial_seed(), off)
            return _C_reduce.sdpa_fused(query, key, value, float(scale),
                                        bool(is_causal) and mask is None, mask, *drop)
    if query.device.type == "cuda" and not _core._mode_active():
        from ember.cuda import _attention
        if _attention.fits(query, key, value, attn_mask, dropout_p):
            return _attention.sdpa(query, key, value, float(scale), bool(is_causal),
                                   float(dropout_p))
    return _sdpa_composite(query, key, value, attn_mask, dropout_p, is_causal, scale)


def _sdpa_fused_mask(attn_mask, query, S):
    """``attn_mask`` as the fused kernel's additive mask (the query's dtype, expanded to
    batch + (L, S)), or None where the composed path must take it (a mask that needs a
    gradient, another device, a shape that does not broadcast)."""
    if (not isinstance(attn_mask, ember.Tensor) or attn_mask.requires_grad
            or attn_mask.device.type != "cpu" or attn_mask.dim() > query.dim()
            or not (attn_mask.dtype == ember.bool or attn_mask.is_floating_point())):
        return None
    shape = tuple(query.shape[:-1]) + (S,)
    for m, want in zip(reversed(attn_mask.shape), reversed(shape)):
        if m != want and m != 1:
            return None
    if attn_mask.dtype == ember.bool:
        mask = ember.zeros(attn_mask.shape, dtype=query.dtype).masked_fill(
            attn_mask.logical_not(), float("-inf"))
    else:
        mask = attn_mask.to(query.dtype)
    return mask.expand(shape)


def _sdpa_composite(query, key, value, attn_mask, dropout_p, is_causal, scale, keep=None):
    """The composed attention; keep (optional) multiplies the probabilities: a given,
    already scaled dropout mask."""
    L, S = query.shape[-2], key.shape[-2]
    scores = ember.matmul(query, key.transpose(-2, -1)) * scale
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not "
                               "be set when is_causal=True")
        causal = ember.ones(L, S, dtype=ember.bool).tril().to(query.device)
        scores = scores.masked_fill(causal.logical_not(), float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == ember.bool:
            scores = scores.masked_fill(attn_mask.logical_not(), float("-inf"))
        else:
            scores = scores + attn_mask
    attn = ember.softmax(scores, -1)
    if dropout_p > 0.0:
        attn = dropout(attn, dropout_p, True)
    if keep is not None:
        attn = attn * keep
    return ember.matmul(attn, value)


def _in_projection_packed(q, k, v, w, b):
    if k is v and q is k:
        proj = linear(q, w, b)
        return proj.chunk(3, -1)
    wq, wk, wv = w.chunk(3)
    bq, bk, bv = (None, None, None) if b is None else b.chunk(3)
    return linear(q, wq, bq), linear(k, wk, bk), linear(v, wv, bv)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads,
                                 in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn,
                                 dropout_p, out_proj_weight, out_proj_bias, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights=True, is_causal=False):
    """PyTorch's multi-head attention over (L, N, E) inputs (unbatched (L, E) accepted)."""
    unbatched = query.dim() == 2
    if unbatched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {embed_dim}")
    head_dim = embed_dim // num_heads
    if not use_separate_proj_weight:
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
    else:
        bq, bk, bv = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)
        q = linear(query, q_proj_weight, bq)
        k = linear(key, k_proj_weight, bk)
        v = linear(value, v_proj_weight, bv)
    if bias_k is not None and bias_v is not None:
        k = ember.cat([k, bias_k.repeat(1, bsz, 1)])
        v = ember.cat([v, bias_v.repeat(1, bsz, 1)])
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    # (L, N, E) -> (N, H, L, hd)
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = k.reshape(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    v = v.reshape(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    if add_zero_attn:
        z = ember.zeros(bsz * num_heads, 1, head_dim, dtype=k.dtype)
        k = ember.cat([k, z], 1)
        v = ember.cat([v, z], 1)
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    src_len = k.shape[1]
    # one additive float mask of shape (N*H, L, S) or (L, S)
    mask = None
    if attn_mask is not None:
        if attn_mask.dtype == ember.bool:
            mask = ember.zeros(attn_mask.shape, dtype=q.dtype).masked_fill(attn_mask,
                                                                          float("-inf"))
        else:
            mask = attn_mask.to(q.dtype)
        if mask.dim() == 2:
            mask = mask.unsqueeze(0)
    elif is_causal:
        causal = ember.ones(tgt_len, src_len, dtype=ember.bool).triu(1)
        mask = ember.zeros(tgt_len, src_len, dtype=q.dtype).masked_fill(
            causal, float("-inf")).unsqueeze(0)
    if key_padding_mask is not None:
        if key_padding_mask.dtype == ember.bool:
            kpm = ember.zeros(key_padding_mask.shape, dtype=q.dtype).masked_fill(
                key_padding_mask, float("-inf"))
        else:
            kpm = key_padding_mask.to(q.dtype)
        kpm = kpm.reshape(bsz, 1, 1, src_len).expand(bsz, num_heads, 1, src_len) \
            .reshape(bsz * num_heads, 1, src_len)
        mask = kpm if mask is None else mask + kpm
    if not need_weights:
        # no weights to return: the fused kernel (dropout included), with the causal
        # mask alone or the combined additive mask
        p = dropout_p if training else 0.0
        if attn_mask is None and key_padding_mask is None:
            out = scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=bool(is_causal),
                                               scale=1.0 / math.sqrt(head_dim))
        else:
            out = scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p,
                                               scale=1.0 / math.sqrt(head_dim))
    else:
        scores = ember.matmul(q * (1.0 / math.sqrt(head_dim)), k.transpose(1, 2))
        if mask is not None:
            scores = scores + mask
        attn = ember.softmax(scores, -1)
        if dropout_p > 0.0 and training:
            attn = dropout(attn, dropout_p, True)
        out = ember.matmul(attn, v)  # (N*H, L, hd)
    out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, embed_dim)
    weights = None
    if need_weights:
        weights = attn.reshape(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(1)
        if unbatched:
            weights = weights.squeeze(0)
    if unbatched:
        out = out.squeeze(1)
    return out, weights



def unfold(input: ember.Tensor, kernel_size: int | tuple[int, int],
           dilation: int | tuple[int, int] = 1, padding: int | tuple[int, int] = 0,
           stride: int | tuple[int, int] = 1) -> ember.Tensor:
    """Extract sliding local blocks from an image-like tensor (im2col).

    Each ``kernel_size`` block of every channel, taken at ``stride`` steps over the
    zero-padded input, becomes one column of the output, as in PyTorch.

    Parameters
    ----------
    input : Tensor
        Shape ``(N, C, H, W)`` or unbatched ``(C, H, W)``; float32, float64,
        float16, bfloat16 or bool. ``N`` may be 0, the other sizes may not.
    kernel_size : int or tuple of 2 ints
        Size ``(kh, kw)`` of the blocks.
    dilation : int or tuple of 2 ints, optional
        Spacing between the elements of a block.
    padding : int or tuple of 2 ints, optional
        Implicit zero padding added on both sides of each spatial dimension.
    stride : int or tuple of 2 ints, optional
        Step between the blocks.

    Returns
    -------
    Tensor
        Shape ``(N, C * kh * kw, L)`` (``(C * kh * kw, L)`` unbatched), where
        ``L = Ho * Wo`` and ``Ho = (H + 2 * padding - dilation * (kh - 1) - 1) // stride + 1``
        (``Wo`` likewise). Its gradient is :func:`fold` with the same parameters.

    Raises
    ------
    TypeError
        If a size argument is not an int or a sequence of ints.
    IndexError
        If ``input`` has fewer than 3 dimensions.
    RuntimeError
        If a size argument has not 2 values, a kernel size, dilation or stride is not
        positive, a padding is negative, ``input`` is not 3-D or 4-D with non-zero
        ``C, H, W``, or no block fits.
    NotImplementedError
        If ``input`` has an integer dtype.
    """
    if isinstance(input, ember.Tensor) and input.is_complex():
        return _by_parts(unfold, input, kernel_size, dilation, padding, stride)
    return _conv.unfold(input, kernel_size, dilation, padding, stride)


def fold(input: ember.Tensor, output_size: int | tuple[int, int],
         kernel_size: int | tuple[int, int], dilation: int | tuple[int, int] = 1,
         padding: int | tuple[int, int] = 0, stride: int | tuple[int, int] = 1) -> ember.Tensor:
    """Combine an array of sliding local blocks into a tensor (col2im).

    The inverse layout of :func:`unfold`: every column is one block and blocks that
    overlap are summed, as in PyTorch.

    Parameters
    ----------
    input : Tensor
        Shape ``(N, C * kh * kw, L)`` or unbatched ``(C * kh * kw, L)``; float32,
        float64, float16, bfloat16 or bool. ``N`` may be 0, the other sizes may not.
    output_size : int or tuple of 2 ints
        Spatial size ``(H, W)`` of the output.
    kernel_size : int or tuple of 2 ints
        Size ``(kh, kw)`` of the blocks.
    dilation : int or tuple of 2 ints, optional
        Spacing between the elements of a block.
    padding : int or tuple of 2 ints, optional
        Implicit zero padding on both sides of each spatial dimension (dropped).
    stride : int or tuple of 2 ints, optional
        Step between the blocks.

    Returns
    -------
    Tensor
        Shape ``(N, C, H, W)`` (``(C, H, W)`` unbatched). Its gradient is
        :func:`unfold` with the same parameters.

    Raises
    ------
    TypeError
        If a size argument is not an int or a sequence of ints.
    RuntimeError
        If a size argument has not 2 values, a kernel size, dilation or stride is not
        positive, a padding is negative, ``input`` is not 2-D or 3-D with non-zero
        trailing sizes, its dimension -2 is not divisible by ``kh * kw``, or ``L`` is
        not the number of blocks that fit in ``output_size``.
    NotImplementedError
        If ``input`` has an integer dtype.
    """
    if isinstance(input, ember.Tensor) and input.is_complex():
        return _by_parts(fold, input, output_size, kernel_size, dilation, padding, stride)
    return _conv.fold(input, output_size, kernel_size, dilation, padding, stride)


def _by_parts(fn, x, *args):
    """A real-linear op on a complex tensor: the op on its real and imaginary parts."""
    return ember.complex(fn(x.real.contiguous(), *args), fn(x.imag.contiguous(), *args))


# interpolation and the common losses live in their own modules (imported last:
# they use the definitions above)
from ember.nn._common_losses import (  # noqa: E402, F401
    _legacy_reduction,
    _reduce,
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cosine_embedding_loss,
    cross_entropy,
    gaussian_nll_loss,
    hinge_embedding_loss,
    huber_loss,
    kl_div,
    l1_loss,
    margin_ranking_loss,
    mse_loss,
    nll_loss,
    poisson_nll_loss,
    smooth_l1_loss,
    soft_margin_loss,
    triplet_margin_loss,
)
from ember.nn._interpolation import interpolate, upsample  # noqa: E402, F401

# ---- the rest of the functional API, one module per family ----------------------
from ember.nn._vision import (  # noqa: E402
    affine_grid,
    channel_shuffle,
    grid_sample,
    native_channel_shuffle,
    pixel_shuffle,
    pixel_unshuffle,
    upsample_bilinear,
    upsample_nearest,
)

__all__ += ["affine_grid", "channel_shuffle", "grid_sample", "native_channel_shuffle",
            "pixel_shuffle", "pixel_unshuffle", "upsample_bilinear", "upsample_nearest"]
from ember.nn import _pooling  # noqa: E402
from ember.nn._conv import conv3d, conv_tbc, conv_transpose3d  # noqa: E402
from ember.nn._pooling import *  # noqa: E402, F403

__all__ += ["conv3d", "conv_tbc", "conv_transpose3d", *_pooling.__all__]
from ember.nn import _activations, _losses  # noqa: E402
from ember.nn._activations import *  # noqa: E402, F403
from ember.nn._losses import *  # noqa: E402, F403

__all__ += [*_activations.__all__, *_losses.__all__]
from ember.nn._grouped_mm import grouped_mm  # noqa: E402
from ember.nn._sparse import embedding_bag  # noqa: E402

__all__ += ["embedding_bag", "grouped_mm"]
from ember.nn._script_helpers import assert_int_or_pair, boolean_dispatch  # noqa: E402

__all__ += ["assert_int_or_pair", "boolean_dispatch"]

# Autocast sees these composites (on torch's autocast lists) as one op each, so their
# inputs are cast before they decompose.
from ember._autocast import autocast_entry as _autocast_entry  # noqa: E402

for _name in ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "nll_loss",
              "cross_entropy", "binary_cross_entropy", "binary_cross_entropy_with_logits",
              "kl_div", "cosine_embedding_loss", "margin_ranking_loss", "hinge_embedding_loss",
              "soft_margin_loss", "poisson_nll_loss", "triplet_margin_loss",
              "multi_margin_loss", "multilabel_margin_loss", "ctc_loss", "prelu",
              "layer_norm", "group_norm", "scaled_dot_product_attention"):
    globals()[_name] = _autocast_entry(_name)(globals()[_name])
del _name
