"""``ember.nn``: modules, parameters, initialisations and the functional API
(PyTorch's ``torch.nn``)."""
from ember.nn import functional, init, utils
from ember.nn.modules import *  # noqa: F403
from ember.nn.modules import __all__ as _modules_all
from ember.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
from ember.nn.parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter

__all__ = list(_modules_all) + ["Parameter", "Buffer", "UninitializedParameter",
                                "UninitializedBuffer", "functional",
                                "init", "utils", "register_module_forward_hook",
                                "register_module_forward_pre_hook"]


def __getattr__(name):
    # nn.parallel pulls in ember.distributed: loaded on first use, not with nn
    if name == "parallel":
        import ember.nn.parallel as parallel

        return parallel
    raise AttributeError(f"module 'ember.nn' has no attribute {name!r}")
