"""``ember.cpu``: the CPU device module (same interface as ``ember.cuda``)."""

from __future__ import annotations

import os
import platform
from typing import Any

__all__ = ["is_available", "device_count", "current_device", "synchronize",
           "get_device_name", "unavailable_reason", "is_initialized", "init"]


def is_available() -> bool:
    """Always True: ember always runs on the CPU."""
    return True


def unavailable_reason() -> None:
    """``None``: the CPU is always available."""
    return None


def device_count() -> int:
    """1: ember treats the host as one CPU device (threads split the work)."""
    return 1


def current_device() -> str:
    """``"cpu"``."""
    return "cpu"


def synchronize(device: Any = None) -> None:
    """No-op: CPU kernels are synchronous."""


def is_initialized() -> bool:
    return True


def init() -> None:
    """No-op, for interface parity with ``ember.cuda.init``."""


_name: str | None = None


def get_device_name(device: Any = None) -> str:
    """The CPU model name (from ``/proc/cpuinfo`` on Linux, read on first call)."""
    global _name
    if _name is None:
        name = ""
        if os.path.exists("/proc/cpuinfo"):
            try:
                with open("/proc/cpuinfo") as f:
                    for line in f:
                        if line.startswith("model name"):
                            name = line.split(":", 1)[1].strip()
                            break
            except OSError:
                pass
        _name = name or platform.processor() or platform.machine() or "cpu"
    return _name


def __getattr__(name: str) -> Any:
    # ``ember.cpu.amp``: PyTorch's deprecated spelling of ``ember.amp`` for the CPU
    if name == "amp":
        import sys

        from ember.amp import _cpu

        sys.modules.setdefault(__name__ + ".amp", _cpu)
        return _cpu
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
