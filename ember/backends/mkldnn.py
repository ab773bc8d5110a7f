"""``ember.backends.mkldnn``: oneDNN's switches.

ember's CPU kernels are its own (it does not link oneDNN), so
:func:`is_available` is False and ``enabled`` changes nothing; it is kept
for scripts that set it.
"""

from __future__ import annotations

from ember.backends import _adopt, _FlagModule

__all__ = ["is_available"]


def is_available() -> bool:
    """False: ember is not built with oneDNN (MKL-DNN)."""
    return False


enabled: bool  # declared for type checkers (the value lives in the module's class)


class _MkldnnModule(_FlagModule):
    _FLAGS = {"enabled": True}


_adopt(__name__, _MkldnnModule)
