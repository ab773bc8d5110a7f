"""``ember.distributed``: multi-process training is not implemented yet.

The module exists so that code written for PyTorch can ask, as it usually
does, ``ember.distributed.is_available()`` (False) before using it.
"""

from __future__ import annotations

__all__ = ["is_available", "is_initialized"]


def is_available() -> bool:
    """False: ember has no distributed backend yet."""
    return False


def is_initialized() -> bool:
    """False: no process group can be initialised."""
    return False
