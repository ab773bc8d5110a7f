"""Memory statistics of ember's CUDA caching allocator (src_cuda/pool.c).

Without CUDA the statistics are 0 (and :func:`memory_stats` is empty), as in
PyTorch; functions that change state raise ``RuntimeError("CUDA unavailable:
...")`` there, except :func:`empty_cache`, which has nothing to do.
"""

from __future__ import annotations

import ctypes
from typing import Any

from ember import cuda as _cuda

__all__ = ["memory_allocated", "max_memory_allocated", "memory_reserved",
           "max_memory_reserved", "reset_peak_memory_stats", "empty_cache", "memory_stats",
           "memory_summary", "mem_get_info"]

_FIELDS = ("allocated_bytes.all.current", "allocated_bytes.all.peak",
           "reserved_bytes.all.current", "reserved_bytes.all.peak", "segment.all.current",
           "active.all.current", "num_alloc_retries_or_calls", "num_cache_hits")


def _raw(device: Any) -> list | None:
    if not _cuda.is_available():
        return None
    lib = _cuda._dll._cuda_handle("ember_cuda")
    idx = _cuda._index(device)
    prev = _cuda.current_device()
    out = (ctypes.c_int64 * 8)()
    if idx != prev:
        _cuda._rt_call("cudaSetDevice", idx)
    try:
        lib.emc_memory_stats(out)
    finally:
        if idx != prev:
            _cuda._rt_call("cudaSetDevice", prev)
    return list(out)


def memory_stats(device: Any = None) -> dict:
    """The allocator's counters for ``device`` ({} without CUDA, as in PyTorch)."""
    raw = _raw(device)
    return {} if raw is None else dict(zip(_FIELDS, raw))


def memory_allocated(device: Any = None) -> int:
    """Bytes of device memory held by tensors (blocks handed out by the allocator)."""
    raw = _raw(device)
    return 0 if raw is None else raw[0]


def max_memory_allocated(device: Any = None) -> int:
    """The peak of :func:`memory_allocated` since the start or the last reset."""
    raw = _raw(device)
    return 0 if raw is None else raw[1]


def memory_reserved(device: Any = None) -> int:
    """Bytes of device memory the allocator holds (in use or cached)."""
    raw = _raw(device)
    return 0 if raw is None else raw[2]


def max_memory_reserved(device: Any = None) -> int:
    """The peak of :func:`memory_reserved` since the start or the last reset."""
    raw = _raw(device)
    return 0 if raw is None else raw[3]


def reset_peak_memory_stats(device: Any = None) -> None:
    """Restart the peaks of allocated and reserved memory from their current values."""
    _cuda._require()
    idx = _cuda._index(device)
    prev = _cuda.current_device()
    if idx != prev:
        _cuda._rt_call("cudaSetDevice", idx)
    try:
        _cuda._dll._cuda_handle("ember_cuda").emc_reset_peak_memory_stats()
    finally:
        if idx != prev:
            _cuda._rt_call("cudaSetDevice", prev)


def empty_cache() -> None:
    """Give cached, unused device memory back to the driver (nothing to do without CUDA)."""
    if not _cuda.is_available():
        return
    rc = _cuda._dll._cuda_handle("ember_cuda").emc_empty_cache()
    if rc:
        raise RuntimeError(f"empty_cache failed with CUDA error {rc}")


def mem_get_info(device: Any = None) -> tuple[int, int]:
    """(free, total) bytes of ``device`` as the driver reports them."""
    _cuda._require()
    idx = _cuda._index(device)
    free, total = ctypes.c_size_t(0), ctypes.c_size_t(0)
    prev = _cuda.current_device()
    if idx != prev:
        _cuda._rt_call("cudaSetDevice", idx)
    try:
        _cuda._rt_call("cudaMemGetInfo", ctypes.byref(free), ctypes.byref(total))
    finally:
        if idx != prev:
            _cuda._rt_call("cudaSetDevice", prev)
    return free.value, total.value


def memory_summary(device: Any = None, abbreviated: bool = False) -> str:
    """A short table of the allocator's counters for ``device``."""
    _cuda._require()
    st = memory_stats(device)
    idx = _cuda._index(device)
    mib = 1 << 20
    lines = [f"ember CUDA memory summary, device {idx} ({_cuda.get_device_name(idx)})",
             f"  allocated: {st[_FIELDS[0]] / mib:10.1f} MiB   "
             f"peak {st[_FIELDS[1]] / mib:10.1f} MiB",
             f"  reserved:  {st[_FIELDS[2]] / mib:10.1f} MiB   "
             f"peak {st[_FIELDS[3]] / mib:10.1f} MiB",
             f"  segments:  {st[_FIELDS[4]]:10d}   blocks {st[_FIELDS[5]]}"]
    if not abbreviated:
        lines.append(f"  allocations: {st[_FIELDS[6]]}   served from the cache: {st[_FIELDS[7]]}")
    return "\n".join(lines) + "\n"
