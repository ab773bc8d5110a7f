"""``ember.nn.utils``: gradient clipping, parameter/vector conversion, variable-length
sequences (``rnn``), parametrizations, pruning, ``stateless.functional_call``, batch-norm
fusion and the hook-based weight and spectral norms.

Only what the layers need is imported with ``ember.nn``; the other submodules load on
first attribute access."""
import importlib

from ember.nn.utils import rnn
from ember.nn.utils.clip_grad import (
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
)
from ember.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "clip_grads_with_norm_",
           "get_total_norm", "parameters_to_vector", "vector_to_parameters", "rnn",
           "parametrize", "parametrizations", "prune", "stateless", "fuse_conv_bn_eval",
           "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights",
           "spectral_norm", "remove_spectral_norm", "weight_norm", "remove_weight_norm"]

_SUBMODULES = {"parametrize", "parametrizations", "prune", "stateless", "fusion"}
_FUNCTIONS = {"fuse_conv_bn_eval": "fusion", "fuse_conv_bn_weights": "fusion",
              "fuse_linear_bn_eval": "fusion", "fuse_linear_bn_weights": "fusion",
              "spectral_norm": "spectral_norm", "remove_spectral_norm": "spectral_norm",
              "weight_norm": "weight_norm", "remove_weight_norm": "weight_norm"}


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module(f"ember.nn.utils.{name}")
    if name in _FUNCTIONS:
        value = getattr(importlib.import_module(f"ember.nn.utils.{_FUNCTIONS[name]}"), name)
        globals()[name] = value    # the submodule import bound the module under this name
        return value
    raise AttributeError(f"module 'ember.nn.utils' has no attribute {name!r}")
