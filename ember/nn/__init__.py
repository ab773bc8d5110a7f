"""``ember.nn``: modules, parameters, initialisations and the functional API
(PyTorch's ``torch.nn``)."""
from ember.nn import functional, init, utils
from ember.nn._losses import LinearCrossEntropyOptions
from ember.nn.modules import *  # noqa: F403
from ember.nn.modules import __all__ as _modules_all
from ember.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
from ember.nn.parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter

__all__ = list(_modules_all) + ["Parameter", "Buffer", "UninitializedParameter",
                                "UninitializedBuffer", "LinearCrossEntropyOptions", "functional",
                                "init", "utils", "register_module_forward_hook",
                                "register_module_forward_pre_hook"]
