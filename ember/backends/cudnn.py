"""``ember.backends.cudnn``: cuDNN's switches.

ember does not use cuDNN (its CUDA convolutions are its own), so
:func:`is_available` is False and the switches change nothing; they are
kept, checked and restorable (``flags(...)``) so that scripts setting them
run unchanged.  As in PyTorch, ``deterministic`` is independent of
``ember.use_deterministic_algorithms``: neither sets the other.
"""

from __future__ import annotations

from ember.backends import _adopt, _FlagModule

__all__ = ["is_available", "version", "benchmark_limit"]


def is_available() -> bool:
    """False: ember is not built with cuDNN."""
    return False


def version() -> None:
    """``None``: no cuDNN library is loaded (as PyTorch without cuDNN)."""
    return None


class _CudnnModule(_FlagModule):
    _FLAGS = {"enabled": True, "benchmark": False, "deterministic": False, "allow_tf32": True}


benchmark_limit = 10
# the switches, declared for type checkers (values live in the module's class)
enabled: bool
benchmark: bool
deterministic: bool
allow_tf32: bool
_adopt(__name__, _CudnnModule)
