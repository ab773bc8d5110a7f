"""Normalisation layers: BatchNorm1d/2d, LayerNorm, GroupNorm, InstanceNorm, RMSNorm,
LocalResponseNorm."""
from __future__ import annotations

import ember
from ember.nn import functional as F
from ember.nn import init
from ember.nn.modules.linear import _factory_kwargs
from ember.nn.modules.module import Module
from ember.nn.parameter import Parameter

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LayerNorm", "GroupNorm",
           "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "RMSNorm", "LocalResponseNorm",
           "CrossMapLRN2d"]


def _affine_params(mod, shape, affine, bias, kw):
    """The learnable scale (and shift) of a norm layer, or None for both."""
    mod.register_parameter("weight", Parameter(ember.empty(*shape, **kw)) if affine else None)
    mod.register_parameter("bias", Parameter(ember.empty(*shape, **kw)) if affine and bias
                           else None)


def _reset_affine(mod):
    """PyTorch's default: scale 1, shift 0."""
    if mod.weight is not None:
        init.ones_(mod.weight)
    if mod.bias is not None:
        init.zeros_(mod.bias)


class _NormBase(Module):
    _version = 2

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        kw = _factory_kwargs(device, dtype)
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        _affine_params(self, (num_features,), affine, bias, kw)
        if track_running_stats:
            self.register_buffer("running_mean", ember.zeros(num_features, **kw))
            self.register_buffer("running_var", ember.ones(num_features, **kw))
            self.register_buffer("num_batches_tracked", ember.tensor(0, dtype=ember.int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self):
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        _reset_affine(self)

    def _check_input_dim(self, input):
        raise NotImplementedError

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        version = local_metadata.get("version", None)
        if (version is None or version < 2) and self.track_running_stats:
            key = prefix + "num_batches_tracked"
            if key not in state_dict:
                state_dict[key] = ember.tensor(0, dtype=ember.int64)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)


class _BatchNorm(_NormBase):
    def forward(self, input):
        self._check_input_dim(input)
        eaf = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                eaf = 1.0 / float(self.num_batches_tracked.item())
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        return F.batch_norm(
            input,
            self.running_mean if not self.training or self.track_running_stats else None,
            self.running_var if not self.training or self.track_running_stats else None,
            self.weight, self.bias, bn_training, eaf, self.eps)


class BatchNorm1d(_BatchNorm):
    def _check_input_dim(self, input):
        if input.dim() not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    def _check_input_dim(self, input):
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class BatchNorm3d(_BatchNorm):
    def _check_input_dim(self, input):
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")


class _InstanceNorm(_NormBase):
    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False,
                 track_running_stats=False, device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)

    def forward(self, input):
        if input.dim() not in (self._ndim, self._ndim + 1):
            raise ValueError(f"expected {self._ndim}D or {self._ndim + 1}D input (got "
                             f"{input.dim()}D input)")
        unbatched = input.dim() == self._ndim
        if unbatched:
            input = input.unsqueeze(0)
        if input.shape[1] != self.num_features and self.affine:
            raise ValueError(f"expected input's size at dim=1 to match num_features "
                             f"({self.num_features}), but got: {input.shape[1]}.")
        y = F.instance_norm(input, self.running_mean, self.running_var, self.weight,
                            self.bias, self.training or not self.track_running_stats,
                            self.momentum if self.momentum is not None else 0.0, self.eps)
        return y.squeeze(0) if unbatched else y


class InstanceNorm1d(_InstanceNorm):
    _ndim = 2


class InstanceNorm2d(_InstanceNorm):
    _ndim = 3


class InstanceNorm3d(_InstanceNorm):
    _ndim = 4


class LayerNorm(Module):
    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True,
                 device=None, dtype=None):
        super().__init__()
        kw = _factory_kwargs(device, dtype)
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _affine_params(self, self.normalized_shape, elementwise_affine, bias, kw)
        self.reset_parameters()

    def reset_parameters(self):
        _reset_affine(self)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


class RMSNorm(Module):
    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None,
                 dtype=None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(ember.ones(*self.normalized_shape,
                                               **_factory_kwargs(device, dtype)))
        else:
            self.register_parameter("weight", None)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class GroupNorm(Module):
    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None,
                 dtype=None, *, bias=True):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError("num_channels must be divisible by num_groups")
        kw = _factory_kwargs(device, dtype)
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        _affine_params(self, (num_channels,), affine, bias, kw)
        self.reset_parameters()

    def reset_parameters(self):
        _reset_affine(self)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class LocalResponseNorm(Module):
    """Local response normalisation over channels (see
    :func:`ember.nn.functional.local_response_norm`).

    Parameters
    ----------
    size : int
        Number of neighbouring channels used for normalisation.
    alpha : float, optional
        Multiplicative factor. Default: 0.0001.
    beta : float, optional
        Exponent. Default: 0.75.
    k : float, optional
        Additive factor. Default: 1.

    Shape: input ``(N, C, *)``, output the same.
    """

    __constants__ = ["size", "alpha", "beta", "k"]

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75,
                 k: float = 1.0) -> None:
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input: ember.Tensor) -> ember.Tensor:
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return "{size}, alpha={alpha}, beta={beta}, k={k}".format(**self.__dict__)


class CrossMapLRN2d(Module):
    """The Lua-Torch local response normalisation over the channels of 4-D input: each
    value divided by ``(k + alpha / size * sum of squares in its channel window) ** beta``.

    The window follows PyTorch's running-sum exactly, including its quirk that channel 0
    stays in the sum of channels ``pre_pad`` and above (``pre_pad = (size - 1) // 2 + 1``),
    so outputs equal PyTorch's. Gradients are the exact derivative of that forward (PyTorch's
    hand-written backward of this legacy module fails ``gradcheck``)."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1):
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input):
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D "
                             f"instead.")
        c = input.shape[1]
        sq = input * input
        pre = (self.size - 1) // 2 + 1
        s = sq.narrow(1, 0, min(pre, c)).sum(1)
        sums = [s]
        for ch in range(1, c):
            if ch < c - pre + 1:
                s = s + sq[:, ch + pre - 1]
            if ch > pre:
                s = s - sq[:, ch - pre]
            sums.append(s)
        scale = ember.stack(sums, 1) * (self.alpha / self.size) + self.k
        return input * scale.pow(-self.beta)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
