"""``ember.amp``: automatic mixed precision (PyTorch's ``torch.amp``): ``autocast`` runs
the ops on torch's lists in a lower-precision dtype or in float32, and ``GradScaler``
scales the loss so small float16 gradients do not flush to zero."""
from ember.amp.autocast_mode import (
    autocast,
    clear_autocast_cache,
    get_autocast_dtype,
    is_autocast_available,
    is_autocast_cache_enabled,
    is_autocast_enabled,
    set_autocast_cache_enabled,
    set_autocast_dtype,
    set_autocast_enabled,
)
from ember.amp.grad_scaler import GradScaler

__all__ = ["autocast", "GradScaler", "is_autocast_available", "is_autocast_enabled",
           "set_autocast_enabled", "get_autocast_dtype", "set_autocast_dtype",
           "is_autocast_cache_enabled", "set_autocast_cache_enabled", "clear_autocast_cache"]
