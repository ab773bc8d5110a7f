"""``ember.accelerator``: the device-agnostic view of the current accelerator.

The current accelerator is CUDA when ember can use it, else the first
out-of-tree backend (``ember._register_device_module``) that is available;
the CPU is never an accelerator.  As in PyTorch, asking for a device index
when there is no accelerator is a ``RuntimeError``; asking whether there is
one, or how many devices it has, is not.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

from ember import _devices

__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index",
           "set_device_index", "synchronize", "device_index", "current_device_idx",
           "set_device_idx"]

_NONE = "Cannot access accelerator device when none is available."


def _module(check_available: bool = True) -> tuple[str, Any] | None:
    """``(device_type, runtime module)`` of the current accelerator, or None."""
    cuda = _devices._import("ember.cuda")
    if cuda.is_available():
        return "cuda", cuda
    for name, mod in _devices._registered.items():
        avail = getattr(mod, "is_available", None)
        if not check_available or (callable(avail) and avail()):
            return name, mod
    return None


def current_accelerator(check_available: bool = False) -> Any:
    """The current accelerator as an ``ember.device`` (no index), or None.

    Parameters
    ----------
    check_available : bool
        Also require the accelerator to be usable now.  ember's CUDA support
        is found at run time, so CUDA counts only when it is available.
    """
    found = _module(check_available)
    if found is None:
        return None
    from ember._C import core

    return core.Device(found[0])


def is_available() -> bool:
    """Whether an accelerator is present and usable (False on a CPU-only machine)."""
    found = _module(True)
    return found is not None and found[1].device_count() > 0


def device_count() -> int:
    """The number of devices of the current accelerator (0 when there is none)."""
    found = _module(True)
    return int(found[1].device_count()) if found is not None else 0


def _require() -> tuple[str, Any]:
    found = _module(True)
    if found is None:
        raise RuntimeError(_NONE)
    return found


def current_device_index() -> int:
    """The index of the current device of the current accelerator.

    Raises
    ------
    RuntimeError
        When there is no accelerator.
    """
    _, mod = _require()
    return int(mod.current_device())


def _index_of(device: Any, kind: str) -> int:
    if isinstance(device, int):
        return device
    if isinstance(device, str):
        dev_kind, _, num = device.partition(":")
        idx = int(num) if num else None
    else:
        dev_kind, idx = getattr(device, "type", None), getattr(device, "index", None)
    if dev_kind != kind:
        raise ValueError(f"{device} doesn't match the current accelerator {kind}.")
    return current_device_index() if idx is None else int(idx)


def set_device_index(device: Any, /) -> None:
    """Make ``device`` (an index, ``"cuda:1"`` or an ``ember.device``) current.

    Raises
    ------
    RuntimeError
        When there is no accelerator.
    """
    kind, mod = _require()
    mod.set_device(_index_of(device, kind))


def synchronize(device: Any = None, /) -> None:
    """Wait for all work on ``device`` (default: the current device) to finish.

    Raises
    ------
    RuntimeError
        When there is no accelerator.
    """
    kind, mod = _require()
    mod.synchronize(None if device is None else _index_of(device, kind))


@contextlib.contextmanager
def device_index(device: int | None, /) -> Iterator[None]:
    """Make ``device`` current inside the block and restore the previous one on exit.

    ``None`` does nothing (and needs no accelerator), as in PyTorch.
    """
    if device is None:
        yield
        return
    prev = current_device_index()
    set_device_index(device)
    try:
        yield
    finally:
        set_device_index(prev)


# PyTorch's older names.
current_device_idx = current_device_index
set_device_idx = set_device_index
