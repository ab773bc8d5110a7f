"""``ember.backends.mps``: Apple's Metal backend, which ember does not have."""

from __future__ import annotations

__all__ = ["is_available", "is_built"]


def is_available() -> bool:
    """False: ember has no Metal (MPS) kernels."""
    return False


def is_built() -> bool:
    """False: ember is not built with Metal (MPS) support."""
    return False
