"""``ember.nn.init``: in-place weight initialisations with PyTorch's formulas."""
from __future__ import annotations

import math
import warnings

import ember

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_",
           "zeros_", "eye_", "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
           "kaiming_normal_", "orthogonal_", "sparse_"]


def _no_grad():
    return ember.autograd.no_grad()


def _rand_like(t, generator=None):
    return ember.rand(*t.shape, dtype=t.dtype, generator=generator) if generator is not None \
        else ember.rand(*t.shape, dtype=t.dtype)


def _randn_like(t, generator=None):
    return ember.randn(*t.shape, dtype=t.dtype, generator=generator) if generator is not None \
        else ember.randn(*t.shape, dtype=t.dtype)


def _uniform(t, a, b, generator=None):
    if hasattr(t, "uniform_"):
        return t.uniform_(a, b, generator=generator) if generator is not None \
            else t.uniform_(a, b)
    return t.copy_(_rand_like(t, generator) * (b - a) + a)


def _normal(t, mean, std, generator=None):
    if hasattr(t, "normal_"):
        return t.normal_(mean, std, generator=generator) if generator is not None \
            else t.normal_(mean, std)
    return t.copy_(_randn_like(t, generator) * std + mean)


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for a nonlinearity (PyTorch's table)."""
    linear_fns = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                  "conv_transpose2d", "conv_transpose3d"]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    dim = tensor.dim()
    if dim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         "dimensions")
    num_input_fmaps = tensor.shape[1]
    num_output_fmaps = tensor.shape[0]
    receptive = 1
    for s in tensor.shape[2:]:
        receptive *= s
    return num_input_fmaps * receptive, num_output_fmaps * receptive


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    with _no_grad():
        return _uniform(tensor, a, b, generator)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    with _no_grad():
        return _normal(tensor, mean, std, generator)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Normal(mean, std) truncated to [a, b] (inverse-CDF method, as PyTorch)."""
    def norm_cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The "
                      "distribution of values may be incorrect.", stacklevel=2)
    with _no_grad():
        lo = norm_cdf((a - mean) / std)
        hi = norm_cdf((b - mean) / std)
        u = _rand_like(tensor, generator) * (2 * hi - 2 * lo) + (2 * lo - 1)
        u = ember.clamp(u, -1 + 1e-7, 1 - 1e-7)
        x = ember.erfinv(u)
        x = x * (std * math.sqrt(2.0)) + mean
        return tensor.copy_(ember.clamp(x, a, b))


def constant_(tensor, val):
    with _no_grad():
        return tensor.fill_(val)


def ones_(tensor):
    return constant_(tensor, 1.0)


def zeros_(tensor):
    return constant_(tensor, 0.0)


def eye_(tensor):
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with _no_grad():
        return tensor.copy_(ember.eye(*tensor.shape, dtype=tensor.dtype))


def dirac_(tensor, groups=1):
    d = tensor.dim()
    if d not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.shape
    out_per = sizes[0] // groups
    min_dim = min(out_per, sizes[1])
    import numpy as np
    a = np.zeros(tuple(sizes), dtype=np.float64)
    for g in range(groups):
        for i in range(min_dim):
            idx = (g * out_per + i, i) + tuple(s // 2 for s in sizes[2:])
            a[idx] = 1
    with _no_grad():
        return tensor.copy_(ember.tensor(a, dtype=tensor.dtype))


def xavier_uniform_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    bound = math.sqrt(3.0) * gain / math.sqrt(fan)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return normal_(tensor, 0.0, std, generator)


def orthogonal_(tensor, gain=1, generator=None):
    """A (semi-)orthogonal matrix from the QR decomposition of a normal sample."""
    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    import numpy as np
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = _randn_like(ember.empty(rows, cols, dtype=ember.float64), generator).numpy()
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    with _no_grad():
        return tensor.copy_(ember.tensor(q * gain, dtype=tensor.dtype).reshape(tensor.shape))


def sparse_(tensor, sparsity, std=0.01, generator=None):
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    num_zeros = int(math.ceil(sparsity * rows))
    with _no_grad():
        _normal(tensor, 0, std, generator)
        if num_zeros:
            # a random set of num_zeros rows per column: the first rows of a random order
            order = _rand_like(ember.empty(rows, cols), generator).argsort(0)[:num_zeros]
            mask = ember.ones(rows, cols, dtype=tensor.dtype).scatter(0, order, 0.0)
            tensor.mul_(mask)
    return tensor


# deprecated aliases kept by PyTorch
uniform = uniform_
normal = normal_
constant = constant_
xavier_uniform = xavier_uniform_
xavier_normal = xavier_normal_
kaiming_uniform = kaiming_uniform_
kaiming_normal = kaiming_normal_
orthogonal = orthogonal_
sparse = sparse_
dirac = dirac_
eye = eye_
