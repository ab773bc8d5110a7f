"""``ember.nn``: modules, parameters, initialisations and the functional API
(PyTorch's ``torch.nn``)."""
from ember.nn import functional, init, utils
from ember.nn.modules import *  # noqa: F403
from ember.nn.modules import __all__ as _modules_all
from ember.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
from ember.nn.parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter

__all__ = list(_modules_all) + ["Parameter", "Buffer", "UninitializedParameter",
                                "UninitializedBuffer", "functional", "init", "utils",
                                "register_module_forward_hook",
                                "register_module_forward_pre_hook",
                                "LinearCrossEntropyOptions"]  # noqa: F405 (lazy, below)


def __getattr__(name):
    # loaded on first use, not with nn: nn.parallel (and DataParallel in it) pulls in
    # ember.distributed, and LinearCrossEntropyOptions the dataclass machinery
    if name == "parallel":
        import ember.nn.parallel as parallel

        return parallel
    if name == "DataParallel":
        from ember.nn.parallel import DataParallel
        return DataParallel
    if name == "LinearCrossEntropyOptions":
        from ember.nn._lce_options import LinearCrossEntropyOptions
        return LinearCrossEntropyOptions
    raise AttributeError(f"module 'ember.nn' has no attribute {name!r}")
