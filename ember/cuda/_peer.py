"""Copies between two CUDA devices that never pass through the host.

The bytes move with ``cudaMemcpyPeerAsync`` on the destination's current stream,
ordered after the source's current stream by an event (and the source's stream
after the copy, so the caching allocator may hand the source's memory out again
there at once).  Casts and strided layouts are done by ``emc_copy`` on the
device that holds the data: the source is made contiguous in the destination's
dtype on its own device, and lands in a contiguous buffer on the destination's
device when the destination itself is strided."""

from __future__ import annotations

import ctypes
from typing import Any

import ember
from ember.cuda import _kernels as K

_EVENT_DISABLE_TIMING = 2


def _event_after(stream: Any, index: int) -> ctypes.c_void_p:
    """An event recorded on ``stream`` of device ``index`` (destroy it after use)."""
    rt = K.backend().rt
    ev = ctypes.c_void_p()
    with K.on_device(index):
        rc = rt.cudaEventCreateWithFlags(ctypes.byref(ev), ctypes.c_uint(_EVENT_DISABLE_TIMING))
        if rc == 0:
            rc = rt.cudaEventRecord(ev, stream)
    if rc:
        raise RuntimeError(f"copy_ across devices: cudaEventRecord failed with CUDA error {rc}")
    return ev


def _wait(stream: Any, index: int, ev: ctypes.c_void_p) -> None:
    rt = K.backend().rt
    with K.on_device(index):
        rc = rt.cudaStreamWaitEvent(stream, ev, ctypes.c_uint(0))
    rt.cudaEventDestroy(ev)
    if rc:
        raise RuntimeError(f"copy_ across devices: cudaStreamWaitEvent failed with CUDA "
                           f"error {rc}")


def peer_bytes(dst: int, di: int, src: int, si: int, nbytes: int) -> None:
    """Move ``nbytes`` from device ``si`` to device ``di`` in stream order on both."""
    if nbytes == 0:
        return
    ss, ds = K.stream_of(si), K.stream_of(di)
    _wait(ds, di, _event_after(ss, si))
    with K.on_device(di):
        rc = K.backend().rt.cudaMemcpyPeerAsync(
            ctypes.c_void_p(dst), ctypes.c_int(di), ctypes.c_void_p(src), ctypes.c_int(si),
            ctypes.c_size_t(nbytes), ds)
    if rc:
        raise RuntimeError(f"cudaMemcpyPeerAsync of {nbytes} bytes from cuda:{si} to "
                           f"cuda:{di} failed with CUDA error {rc}")
    _wait(ss, si, _event_after(ds, di))


def copy_across(dst: Any, src: Any) -> None:
    """dst[...] = src (broadcast, cast) for CUDA tensors on two different devices."""
    from ember.cuda._dispatch import copy_into

    shape = tuple(dst.shape)
    s = src
    if s.dtype != dst.dtype or tuple(s.shape) != shape or not s.is_contiguous():
        s = ember.empty(shape, dtype=dst.dtype, device=src.device)
        copy_into(s, src)
    d = dst if dst.is_contiguous() else ember.empty(shape, dtype=dst.dtype, device=dst.device)
    peer_bytes(d.data_ptr(), d.device.index, s.data_ptr(), s.device.index,
               s.numel() * s.element_size())
    if d is not dst:
        copy_into(dst, d)
