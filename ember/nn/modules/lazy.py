"""Lazy modules: layers whose input size is inferred from the first input.

``LazyModuleMixin`` holds the protocol (as PyTorch's): parameters start as
``UninitializedParameter`` / ``UninitializedBuffer``; a forward pre-hook calls
``initialize_parameters(input)`` once, then the module becomes ``cls_to_become``.
Loading a state dict into a lazy module materializes its parameters with the
checkpoint's shapes."""
from __future__ import annotations

import ember
from ember.nn.modules.conv import (
    Conv1d,
    Conv2d,
    Conv3d,
    ConvTranspose1d,
    ConvTranspose2d,
    ConvTranspose3d,
)
from ember.nn.modules.normalization import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
)
from ember.nn.parameter import UninitializedBuffer, UninitializedParameter, is_lazy

__all__ = ["LazyModuleMixin", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
           "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d",
           "LazyBatchNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d",
           "LazyInstanceNorm3d"]


class LazyModuleMixin:
    """Mix in before a module class to infer its parameter shapes from the first input."""

    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._load_hook = self._register_load_state_dict_pre_hook(self._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters)

    def has_uninitialized_params(self) -> bool:
        """Whether any parameter or buffer still waits for its shape."""
        return any(is_lazy(v) for v in (*self._parameters.values(), *self._buffers.values()))

    def initialize_parameters(self, *args, **kwargs):
        """Materialize the parameters for the given input; each lazy class overrides this
        (left as is, the first forward reports the module as not fully initialized)."""

    def _lazy_load_hook(self, state_dict, prefix, local_metadata, strict, missing_keys,
                        unexpected_keys, error_msgs):
        for name, p in list(self._parameters.items()):
            key = prefix + name
            if is_lazy(p) and key in state_dict:
                self._parameters[name] = p.materialize(tuple(state_dict[key].shape))
        for name, b in list(self._buffers.items()):
            key = prefix + name
            if is_lazy(b) and key in state_dict:
                self._buffers[name] = b.materialize(tuple(state_dict[key].shape))

    def _infer_parameters(self, module, args):
        self.initialize_parameters(*args)
        if self.has_uninitialized_params():
            raise RuntimeError(f"module {type(self).__name__} has not been fully initialized")
        self._initialize_hook.remove()
        self._load_hook.remove()
        del self._initialize_hook
        del self._load_hook
        if self.cls_to_become is not None:
            self.__class__ = self.cls_to_become


class _LazyConvXdMixin(LazyModuleMixin):
    _nsp = 2

    def __init__(self, out_channels, kernel_size, *args, device=None, dtype=None, **kwargs):
        super().__init__(0, out_channels, kernel_size, *args, device=device, dtype=dtype,
                         **kwargs)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        if self.bias is not None:
            self.bias = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def _get_in_channels(self, input):
        nb = self._nsp + 1
        if input.dim() not in (nb, nb + 1):
            raise RuntimeError(f"Expected {nb}D (unbatched) or {nb + 1}D (batched) input to "
                               f"{type(self).__name__}, but got input of size: "
                               f"{list(input.shape)}")
        return input.shape[1] if input.dim() == nb + 1 else input.shape[0]

    def initialize_parameters(self, input, *args, **kwargs):
        if not self.has_uninitialized_params():
            if self.in_channels == 0:     # loaded from a checkpoint: read it off the weight
                w = self.weight.shape
                self.in_channels = w[0] if self.transposed else w[1] * self.groups
            return
        self.in_channels = self._get_in_channels(input)
        if self.in_channels % self.groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if self.transposed:
            shape = (self.in_channels, self.out_channels // self.groups)
        else:
            shape = (self.out_channels, self.in_channels // self.groups)
        with ember.autograd.no_grad():
            self.weight = self.weight.materialize(shape + tuple(self.kernel_size))
            if self.bias is not None:
                self.bias = self.bias.materialize((self.out_channels,))
            self.reset_parameters()


def _lazy_conv(name, base, nsp, transposed):
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, *args, device=None,
                 dtype=None, **kwargs):
        _LazyConvXdMixin.__init__(self, out_channels, kernel_size, stride, padding, *args,
                                  device=device, dtype=dtype, **kwargs)
    kind = "transposed convolution" if transposed else "convolution"
    doc = (f"A ``{base.__name__}`` whose ``in_channels`` is inferred from the first input "
           f"({nsp}-D {kind}).")
    return type(name, (_LazyConvXdMixin, base), {"__init__": __init__, "cls_to_become": base,
                                                 "_nsp": nsp, "__doc__": doc,
                                                 "__module__": __name__})


LazyConv1d = _lazy_conv("LazyConv1d", Conv1d, 1, False)
LazyConv2d = _lazy_conv("LazyConv2d", Conv2d, 2, False)
LazyConv3d = _lazy_conv("LazyConv3d", Conv3d, 3, False)
LazyConvTranspose1d = _lazy_conv("LazyConvTranspose1d", ConvTranspose1d, 1, True)
LazyConvTranspose2d = _lazy_conv("LazyConvTranspose2d", ConvTranspose2d, 2, True)
LazyConvTranspose3d = _lazy_conv("LazyConvTranspose3d", ConvTranspose3d, 3, True)


class _LazyNormBase(LazyModuleMixin):
    _unbatched_dim = None   # instance norms take an unbatched input of this rank

    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 device=None, dtype=None):
        super().__init__(0, eps, momentum, False, False, device=device, dtype=dtype)
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = ember.tensor(0, dtype=ember.int64)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs):
        if not self.has_uninitialized_params():
            if self.num_features == 0:    # loaded from a checkpoint
                stats = self.weight if self.affine else self.running_mean
                self.num_features = stats.shape[0] if stats is not None else 0
            return
        unbatched = self._unbatched_dim is not None and input.dim() == self._unbatched_dim
        self.num_features = input.shape[0 if unbatched else 1]
        shape = (self.num_features,)
        with ember.autograd.no_grad():
            if self.affine:
                self.weight = self.weight.materialize(shape)
                self.bias = self.bias.materialize(shape)
            if self.track_running_stats:
                self.running_mean = self.running_mean.materialize(shape)
                self.running_var = self.running_var.materialize(shape)
            self.reset_parameters()


def _lazy_norm(name, base, unbatched_dim):
    doc = f"A ``{base.__name__}`` whose ``num_features`` is inferred from the first input."
    attrs = {"cls_to_become": base, "_unbatched_dim": unbatched_dim, "__doc__": doc,
             "__module__": __name__}
    return type(name, (_LazyNormBase, base), attrs)


LazyBatchNorm1d = _lazy_norm("LazyBatchNorm1d", BatchNorm1d, None)
LazyBatchNorm2d = _lazy_norm("LazyBatchNorm2d", BatchNorm2d, None)
LazyBatchNorm3d = _lazy_norm("LazyBatchNorm3d", BatchNorm3d, None)
LazyInstanceNorm1d = _lazy_norm("LazyInstanceNorm1d", InstanceNorm1d, 2)
LazyInstanceNorm2d = _lazy_norm("LazyInstanceNorm2d", InstanceNorm2d, 3)
LazyInstanceNorm3d = _lazy_norm("LazyInstanceNorm3d", InstanceNorm3d, 4)
