"""PyTorch's deprecated per-device spellings of ``ember.amp.autocast`` and
``ember.amp.GradScaler`` (``ember.cpu.amp``, ``ember.cuda.amp``): they warn, as
PyTorch's do."""
from __future__ import annotations

import warnings
from typing import Any

import ember
from ember.amp.autocast_mode import autocast as _autocast
from ember.amp.grad_scaler import GradScaler as _GradScaler


def spellings(device: str, default_dtype: ember.dtype, module: str) -> tuple[type, type]:
    """The ``autocast`` and ``GradScaler`` classes of ``ember.<device>.amp``."""

    class autocast(_autocast):
        def __init__(self, enabled: bool = True, dtype: ember.dtype = default_dtype,
                     cache_enabled: bool = True):
            warnings.warn(f"`torch.{device}.amp.autocast(args...)` is deprecated. Please use "
                          f"`torch.amp.autocast('{device}', args...)` instead.", FutureWarning,
                          stacklevel=2)
            super().__init__(device, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    class GradScaler(_GradScaler):
        def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                     backoff_factor: float = 0.5, growth_interval: int = 2000,
                     enabled: bool = True) -> None:
            warnings.warn(f"`torch.{device}.amp.GradScaler(args...)` is deprecated. Please use "
                          f"`torch.amp.GradScaler('{device}', args...)` instead.",
                          FutureWarning, stacklevel=2)
            super().__init__(device, init_scale, growth_factor, backoff_factor,
                             growth_interval, enabled)

    cls: Any
    for cls, what in ((autocast, "autocast"), (GradScaler, "GradScaler")):
        cls.__module__ = module
        cls.__qualname__ = what
        cls.__doc__ = f'``ember.amp.{what}("{device}", ...)`` under its deprecated name.'
    return autocast, GradScaler
