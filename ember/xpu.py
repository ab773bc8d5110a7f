"""``ember.xpu``: Intel GPU (XPU) devices, which ember has no kernels for.

Present so that the device checks PyTorch scripts make on every machine
(``ember.xpu.is_available()``) answer instead of failing.
"""

from __future__ import annotations

__all__ = ["is_available", "device_count"]


def is_available() -> bool:
    """False: ember has no Intel GPU (XPU) kernels."""
    return False


def device_count() -> int:
    """0: ember has no Intel GPU (XPU) kernels."""
    return 0
