"""``ember.cuda``: the CUDA device module.

ember's Cython core never links against CUDA: ``libember_cuda.so`` and the
CUDA runtime are found and loaded on first use by ``ember._dll``.  When any
piece is missing, :func:`is_available` is False and
:func:`unavailable_reason` says which piece and how to fix it; functions that
need a device raise ``RuntimeError`` with that reason.
"""

from __future__ import annotations

import ctypes
from typing import Any

from ember import _dll

__all__ = ["is_available", "device_count", "current_device", "set_device", "synchronize",
           "get_device_name", "unavailable_reason", "is_initialized", "init"]


def is_available() -> bool:
    """Whether ember can run CUDA kernels here (library, runtime, driver and a device)."""
    return _dll.cuda_status().available


def unavailable_reason() -> str | None:
    """Why :func:`is_available` is False (``None`` when it is True)."""
    return _dll.cuda_status().reason


def device_count() -> int:
    """The number of CUDA devices ember can use (0 when CUDA is unavailable)."""
    st = _dll.cuda_status()
    return st.device_count if st.available else 0


def is_initialized() -> bool:
    """Whether CUDA has been probed and found usable."""
    st = _dll._status
    return st is not None and st.available


def init() -> None:
    """Probe CUDA now; raise ``RuntimeError`` with the reason if it is unavailable."""
    _require()


def _require() -> Any:
    st = _dll.cuda_status()
    if not st.available:
        raise RuntimeError(f"CUDA is not available: {st.reason}")
    return st


def _index(device: Any) -> int:
    if device is None:
        return current_device()
    if isinstance(device, int):
        idx = device
    elif isinstance(device, str):
        kind, _, num = device.partition(":")
        if kind != "cuda":
            raise ValueError(f"expected a cuda device, got {device!r}")
        idx = int(num) if num else current_device()
    else:
        if getattr(device, "type", None) != "cuda":
            raise ValueError(f"expected a cuda device, got {device!r}")
        idx = device.index if device.index is not None else current_device()
    n = device_count()
    if not 0 <= idx < n:
        raise RuntimeError(f"invalid CUDA device index {idx}: {n} device(s) available")
    return idx


def _rt_call(fn: str, *args: Any) -> int:
    rt = _dll._cuda_handle("cudart")
    rc = getattr(rt, fn)(*args)
    if rc != 0:
        raise RuntimeError(f"{fn} failed with CUDA error {rc}")
    return rc


def current_device() -> int:
    """The index of the current CUDA device."""
    _require()
    dev = ctypes.c_int(0)
    _rt_call("cudaGetDevice", ctypes.byref(dev))
    return dev.value


def set_device(device: Any) -> None:
    """Make ``device`` (an index, ``"cuda:1"`` or an ``ember.device``) current."""
    _require()
    _rt_call("cudaSetDevice", _index(device))


def synchronize(device: Any = None) -> None:
    """Wait for all kernels on ``device`` (default: the current one) to finish."""
    _require()
    idx = _index(device)
    prev = current_device()
    if idx != prev:
        _rt_call("cudaSetDevice", idx)
    try:
        _rt_call("cudaDeviceSynchronize")
    finally:
        if idx != prev:
            _rt_call("cudaSetDevice", prev)


def get_device_name(device: Any = None) -> str:
    """The name of ``device`` (default: the current one), e.g. ``"NVIDIA H100"``."""
    st = _require()
    return st.device_names[_index(device)]
