"""Build configuration of this ember install (``ember.__config__.show()``).

Read from ``ember/_build_config.py``, which ``setup.py`` writes when it builds
the extensions.
"""

from __future__ import annotations

from typing import Any

__all__ = ["show", "config", "parallel_info"]

_FIELDS = ("compiler", "compiler_version", "cflags", "openmp", "debug", "cuda_built")


def config() -> dict[str, Any]:
    """The build options as a dict (values ``None`` when the build left no record)."""
    try:
        from ember import _build_config as bc
    except ImportError:
        return {k: None for k in _FIELDS}
    return {k: getattr(bc, k, None) for k in _FIELDS}


def show() -> str:
    """A human-readable summary of how ember was built (returned, as ``torch.__config__.show``).

    Examples
    --------
    >>> print(ember.__config__.show())  # doctest: +SKIP
    ember 0.1.0 built with:
      compiler: gcc ...
    """
    from ember._version import __version__

    cfg = config()
    if all(v is None for v in cfg.values()):
        return f"ember {__version__}: no build record (ember/_build_config.py is missing)\n"
    lines = [f"ember {__version__} built with:"]
    for k in _FIELDS:
        lines.append(f"  {k}: {cfg[k]}")
    return "\n".join(lines) + "\n"


def parallel_info() -> str:
    """Threading settings: the thread count ember uses and whether OpenMP is built in."""
    import ember

    get = getattr(ember, "get_num_threads", None)
    threads = get() if callable(get) else "unknown"
    return f"ember threads: {threads}\nOpenMP: {config().get('openmp')}\n"
