"""DataParallel: PyTorch's single-process data parallelism, as it behaves where ember
runs: without an accelerator the wrapped module is simply called (as torch does on a
machine with no GPU), and on one GPU inputs are moved to it before the call."""
from __future__ import annotations

from typing import Any

import ember
from ember.nn.modules.module import Module

__all__ = ["DataParallel", "data_parallel"]


def _to_device(obj, device):
    if isinstance(obj, ember.Tensor):
        return obj.to(device)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):      # namedtuple
        return type(obj)(*(_to_device(o, device) for o in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_device(o, device) for o in obj)
    if isinstance(obj, dict):
        return {k: _to_device(v, device) for k, v in obj.items()}
    return obj


def _device_ids(device_ids, output_device):
    if not ember.cuda.is_available():
        return [], None
    ids = [0] if device_ids is None else \
        [d.index if isinstance(d, ember.device) else int(d) for d in device_ids]
    if len(ids) > 1:
        raise RuntimeError(f"DataParallel: replicating a module over {len(ids)} GPUs in one "
                           f"process is not supported by ember; use "
                           f"DistributedDataParallel with one process per GPU")
    out = ids[0] if output_device is None else (
        output_device.index if isinstance(output_device, ember.device) else int(output_device))
    return ids, out


class DataParallel(Module):
    """Wrap ``module`` for data-parallel use (PyTorch's ``torch.nn.DataParallel``).

    The wrapped module is ``self.module`` (so state dict keys gain a ``module.``
    prefix). Without a GPU, ``device_ids`` is ``[]`` and the forward calls the module
    as it is; with one, the module moves to ``device_ids[0]`` and so do the inputs.

    Parameters
    ----------
    module : Module
        The module to run.
    device_ids : list of int or device, optional
        The GPU to use (ember runs one GPU per process: at most one id).
    output_device : int or device, optional
        Where outputs go (``device_ids[0]``).
    dim : int
        The batch dim inputs would be scattered along.
    """

    def __init__(self, module: Module, device_ids=None, output_device=None,
                 dim: int = 0) -> None:
        super().__init__()
        self.module = module
        self.dim = dim
        self.device_ids, self.output_device = _device_ids(device_ids, output_device)
        if self.device_ids:
            self.src_device_obj = ember.device("cuda", self.device_ids[0])
            self.module.to(self.src_device_obj)

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        for t in list(self.module.parameters()) + list(self.module.buffers()):
            if t.device != self.src_device_obj:
                raise RuntimeError(f"module must have its parameters and buffers on device "
                                   f"{self.src_device_obj} (device_ids[0]) but found one of "
                                   f"them on device: {t.device}")
        out = self.module(*_to_device(inputs, self.src_device_obj),
                          **_to_device(kwargs, self.src_device_obj))
        return _to_device(out, ember.device("cuda", self.output_device))


def data_parallel(module: Module, inputs, device_ids=None, output_device=None, dim: int = 0,
                  module_kwargs=None):
    """Run ``module(*inputs, **module_kwargs)`` as a :class:`DataParallel` would."""
    inputs = inputs if isinstance(inputs, tuple) else (inputs,)
    ids, out = _device_ids(device_ids, output_device)
    if not ids:
        return module(*inputs, **(module_kwargs or {}))
    dev = ember.device("cuda", ids[0])
    r = module(*_to_device(inputs, dev), **_to_device(module_kwargs or {}, dev))
    return _to_device(r, ember.device("cuda", out))
