"""The device-module registry: ``ember.cpu``, ``ember.cuda`` and plugin backends.

Every device type has one Python module with the same small interface
(``is_available``, ``device_count``, ``current_device``, ``synchronize``,
``get_device_name``, ``unavailable_reason``).  The built-in ones load lazily
on first access; out-of-tree backends call :func:`_register_device_module`,
usually from their ``ember.backends`` entry point.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any

__all__ = ["_register_device_module", "get_device_module"]

_BUILTIN = ("cpu", "cuda")
_registered: dict[str, ModuleType] = {}


def _register_device_module(device_type: str, module: ModuleType) -> None:
    """Attach ``module`` as ``ember.<device_type>`` and ``sys.modules["ember.<device_type>"]``.

    Parameters
    ----------
    device_type : str
        The device type the module serves, e.g. ``"mydev"``; a Python identifier.
    module : module
        The runtime module (``is_available()``, ``device_count()``, ...).

    Raises
    ------
    RuntimeError
        When ``device_type`` is built in or already registered.
    TypeError
        When ``device_type`` is not an identifier string.
    """
    if not isinstance(device_type, str) or not device_type.isidentifier():
        raise TypeError(f"_register_device_module(): device_type must be an identifier str, "
                        f"got {device_type!r}")
    device_type = device_type.split(":", 1)[0]
    ember = sys.modules["ember"]
    if device_type in _BUILTIN or device_type in _registered:
        existing = _registered.get(device_type) or f"ember.{device_type} (built in)"
        raise RuntimeError(f"The runtime module of '{device_type}' has already been registered "
                           f"with '{existing}'")
    if device_type in vars(ember):
        raise RuntimeError(f"_register_device_module(): 'ember.{device_type}' already exists "
                           f"and is not a device module; pick another device type name")
    _ensure_core_device_type(device_type)
    _registered[device_type] = module
    setattr(ember, device_type, module)
    sys.modules[f"ember.{device_type}"] = module


def _import(name: str) -> ModuleType:
    __import__(name)  # not importlib: importing importlib costs more than this module
    return sys.modules[name]


def _ensure_core_device_type(device_type: str) -> None:
    """Make ``ember.device("<device_type>")`` valid in the core (plugin dispatch key)."""
    core = sys.modules.get("ember._C.core")
    if core is None or not hasattr(core, "_register_device_type"):
        return
    try:
        core.Device(device_type)
    except RuntimeError:
        core._register_device_type(device_type)


def _device_type_of(device: Any) -> str:
    if isinstance(device, str):
        return device.split(":", 1)[0]
    t = getattr(device, "type", None)
    if isinstance(t, str):
        return t
    raise TypeError(f"get_device_module(): expected a device or str, got {type(device).__name__}")


def registered_device_types() -> list[str]:
    """Built-in device types followed by the registered plugin ones."""
    return list(_BUILTIN) + list(_registered)


def get_device_module(device: Any = None) -> ModuleType:
    """The runtime module for ``device`` (``ember.cuda`` for ``"cuda:0"``, ...).

    Parameters
    ----------
    device : ember.device, str or None
        ``None`` gives the current accelerator: CUDA when available, else the
        first registered plugin backend that is available, else ``ember.cpu``.

    Raises
    ------
    RuntimeError
        When no module is registered for the device type.
    """
    if device is None:
        cuda = _import("ember.cuda")
        if cuda.is_available():
            return cuda
        for mod in _registered.values():
            avail = getattr(mod, "is_available", None)
            if callable(avail) and avail():
                return mod
        return _import("ember.cpu")
    name = _device_type_of(device)
    if name in _BUILTIN:
        return _import(f"ember.{name}")
    if name in _registered:
        return _registered[name]
    raise RuntimeError(f"Device '{name}' does not have a corresponding module registered as "
                       f"'ember.{name}'.")
