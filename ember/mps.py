"""``ember.mps``: Apple's Metal (MPS) devices, which ember has no kernels for.

Present so that the device checks PyTorch scripts make on every machine
(``ember.mps.is_available()``) answer instead of failing.
"""

from __future__ import annotations

__all__ = ["is_available", "device_count"]


def is_available() -> bool:
    """False: ember has no Metal (MPS) kernels."""
    return False


def device_count() -> int:
    """0: ember has no Metal (MPS) kernels."""
    return 0
