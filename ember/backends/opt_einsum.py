"""``ember.backends.opt_einsum``: contraction-order switches of ``einsum``.

ember's ``einsum`` contracts operands left to right with batched GEMM and
does not use the ``opt_einsum`` package, so :func:`is_available` is False
and ``enabled``/``strategy`` are kept only for scripts that set them.
"""

from __future__ import annotations

__all__ = ["is_available", "get_opt_einsum", "enabled", "strategy"]

enabled = False
strategy = None


def is_available() -> bool:
    """False: ember's ``einsum`` does not call ``opt_einsum``."""
    return False


def get_opt_einsum() -> None:
    """``None``: the ``opt_einsum`` module is not used by ember."""
    return None
