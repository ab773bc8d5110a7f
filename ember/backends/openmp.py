"""``ember.backends.openmp``: whether ember's kernels were built with OpenMP."""

from __future__ import annotations

__all__ = ["is_available"]


def is_available() -> bool:
    """Whether this ember build splits kernels across threads with OpenMP."""
    from ember import __config__

    return bool(__config__.config().get("openmp"))
