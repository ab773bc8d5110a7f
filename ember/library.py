"""Public dispatcher API: plugin backends and Python dispatch modes.

The native dispatcher routes an op by (op name, dispatch key, dtype).  CPU
kernels are C; a *plugin backend* is a device type named by an out-of-tree
package whose kernels are Python callables registered here; a *dispatch mode*
(the Python key) sees every op while it is active, which is how a tracer
observes a program.

Examples
--------
>>> import ember
>>> from ember import library
>>> class CountOps(library.DispatchMode):
...     def __init__(self):
...         self.ops = []
...     def __ember_dispatch__(self, name, func, args, kwargs):
...         self.ops.append(name)
...         return func(*args, **kwargs)
>>> with CountOps() as mode:
...     _ = ember.ones(2) * 3 + 1
>>> mode.ops
['ones', 'mul', 'add']
"""
from __future__ import annotations

from typing import Any, Callable

from ember._C import core as _core

__all__ = ["register_backend", "impl", "register_kernel", "wrap_memory", "registered_kernels",
           "DispatchMode"]


def register_backend(device_type: str) -> None:
    """Make ``device_type`` (e.g. ``"foo"``) a valid device for ``ember.device``.

    Raises
    ------
    RuntimeError
        If the name is already a device type.
    """
    if not isinstance(device_type, str) or not device_type.isidentifier():
        raise ValueError(f"register_backend: device_type must be an identifier, got "
                         f"{device_type!r}")
    _core._register_device_type(device_type)


def register_kernel(op: str, device_type: str, fn: Callable) -> None:
    """Register the Python kernel ``fn`` for ``op`` on a plugin ``device_type``.

    The kernel receives the op's arguments exactly as the user passed them.
    Factory kernels are named ``"empty"`` (``fn(shape, dtype, device)``) and
    ``"fill_"`` (``fn(tensor, value)``); moves are ``"to"`` (``fn(tensor, device,
    dtype)``) and ``"copy_"`` (``fn(dst, src)``).
    """
    if not callable(fn):
        raise TypeError(f"register_kernel: fn must be callable, got {type(fn).__name__}")
    _core._register_kernel(op, device_type, fn)


def impl(op: str, device_type: str) -> Callable[[Callable], Callable]:
    """Decorator form of :func:`register_kernel`."""
    def deco(fn: Callable) -> Callable:
        register_kernel(op, device_type, fn)
        return fn
    return deco


def registered_kernels(device_type: str) -> list[str]:
    """Names of the ops with a kernel registered for ``device_type``."""
    return sorted(_core._backend_kernel_names(device_type))


def wrap_memory(ptr: int, shape, dtype, device, owner: Any, strides=None,
                offset: int = 0, nbytes: int = -1):
    """A tensor over memory that a backend allocated and ``owner`` keeps alive.

    ``strides`` and ``offset`` are in elements; ``nbytes`` is the size of the
    whole allocation (defaults to what ``shape`` needs).
    """
    return _core._make_tensor(ptr, tuple(shape), None if strides is None else tuple(strides),
                              dtype, device, owner, offset, nbytes)


class DispatchMode:
    """Base class of a Python dispatch mode: ``__ember_dispatch__(name, func, args,
    kwargs)`` is called for every op run inside ``with mode:``.  Calling
    ``func(*args, **kwargs)`` inside it runs the op below the mode."""

    def __ember_dispatch__(self, name: str, func: Callable, args: tuple, kwargs: dict):
        return func(*args, **kwargs)

    def __enter__(self):
        _core._push_mode(self)
        return self

    def __exit__(self, *exc):
        _core._pop_mode()
        return False
