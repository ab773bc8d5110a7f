"""CUDA streams and events over the CUDA runtime (ctypes), like ``torch.cuda``'s.

A :class:`Stream` owns a ``cudaStream_t`` (``cuda_stream`` is its address; 0 is
the legacy default stream); the current stream is kept per thread and device
and is what ember's kernels are launched on.  An :class:`Event` owns a
``cudaEvent_t``.  Everything raises ``RuntimeError("CUDA unavailable: ...")``
where :func:`ember.cuda.is_available` is False.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

from ember import cuda as _cuda

__all__ = ["Stream", "Event", "StreamContext", "stream", "current_stream", "default_stream",
           "set_stream"]

_local = threading.local()

# cudaEventCreateWithFlags / cudaStreamCreateWithPriority flags
_EVENT_BLOCKING_SYNC = 0x1
_EVENT_DISABLE_TIMING = 0x2
_EVENT_INTERPROCESS = 0x4
_STREAM_NON_BLOCKING = 0x1
_NOT_READY = 600


def _rt() -> Any:
    _cuda._require()
    return _cuda._dll._cuda_handle("cudart")


class _OnDevice:
    """Make `idx` current for a block, then restore the previous device."""

    def __init__(self, idx: int) -> None:
        self.idx = idx

    def __enter__(self) -> None:
        self.prev = _cuda.current_device()
        if self.prev != self.idx:
            _cuda._rt_call("cudaSetDevice", self.idx)

    def __exit__(self, *exc: Any) -> None:
        if self.prev != self.idx:
            _cuda._rt_call("cudaSetDevice", self.prev)


class Stream:
    """A CUDA stream on ``device`` (default: the current one).

    Parameters
    ----------
    device : int, str or ember.device, optional
    priority : int
        Lower is higher priority (0 is the default), as in ``torch.cuda.Stream``.
    """

    def __init__(self, device: Any = None, priority: int = 0, *, _handle: int | None = None
                 ) -> None:
        _rt()
        self.device_index = _cuda._index(device)
        self._owned = _handle is None
        if _handle is None:
            h = ctypes.c_void_p()
            with _OnDevice(self.device_index):
                _cuda._rt_call("cudaStreamCreateWithPriority", ctypes.byref(h),
                               _STREAM_NON_BLOCKING, int(priority))
            _handle = h.value or 0
        self.cuda_stream = int(_handle)

    @property
    def device(self) -> Any:
        import ember

        return ember.device("cuda", self.device_index)

    @property
    def _as_parameter_(self) -> ctypes.c_void_p:
        return ctypes.c_void_p(self.cuda_stream or None)

    def query(self) -> bool:
        """Whether all work queued on this stream has finished."""
        rc = _rt().cudaStreamQuery(self._as_parameter_)
        if rc not in (0, _NOT_READY):
            raise RuntimeError(f"cudaStreamQuery failed with CUDA error {rc}")
        return rc == 0

    def synchronize(self) -> None:
        """Wait until all work queued on this stream has finished."""
        _cuda._rt_call("cudaStreamSynchronize", self._as_parameter_)

    def wait_event(self, event: Event) -> None:
        """Make future work on this stream wait for ``event``."""
        _cuda._rt_call("cudaStreamWaitEvent", self._as_parameter_, event._as_parameter_, 0)

    def wait_stream(self, stream: Stream) -> None:
        """Make future work on this stream wait for all work queued on ``stream`` so far."""
        self.wait_event(stream.record_event())

    def record_event(self, event: Event | None = None) -> Event:
        """Record ``event`` (a new one when None) on this stream and return it."""
        event = Event() if event is None else event
        event.record(self)
        return event

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stream) and (self.cuda_stream, self.device_index) == \
            (other.cuda_stream, other.device_index)

    def __hash__(self) -> int:
        return hash((self.cuda_stream, self.device_index))

    def __repr__(self) -> str:
        return (f"<ember.cuda.Stream device=cuda:{self.device_index} "
                f"cuda_stream={self.cuda_stream:#x}>")

    def __del__(self) -> None:
        if getattr(self, "_owned", False) and self.cuda_stream:
            rt = _cuda._dll._handles.get("cudart")
            if rt is not None:
                rt.cudaStreamDestroy(ctypes.c_void_p(self.cuda_stream))


class Event:
    """A CUDA event: a marker in a stream to wait on or to time with.

    Parameters
    ----------
    enable_timing : bool
        Needed for :meth:`elapsed_time`.
    blocking : bool
        :meth:`synchronize` blocks the thread instead of spinning.
    interprocess : bool
        Shareable between processes (implies no timing).
    """

    def __init__(self, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False) -> None:
        _rt()
        flags = (0 if enable_timing else _EVENT_DISABLE_TIMING) | \
            (_EVENT_BLOCKING_SYNC if blocking else 0) | \
            (_EVENT_INTERPROCESS | _EVENT_DISABLE_TIMING if interprocess else 0)
        h = ctypes.c_void_p()
        _cuda._rt_call("cudaEventCreateWithFlags", ctypes.byref(h), flags)
        self._handle = h.value
        self.enable_timing = bool(enable_timing) and not interprocess
        self._recorded = False

    @property
    def _as_parameter_(self) -> ctypes.c_void_p:
        return ctypes.c_void_p(self._handle)

    def record(self, stream: Stream | None = None) -> None:
        """Record the event on ``stream`` (default: the current stream)."""
        stream = current_stream() if stream is None else stream
        _cuda._rt_call("cudaEventRecord", self._as_parameter_, stream._as_parameter_)
        self._recorded = True

    def wait(self, stream: Stream | None = None) -> None:
        """Make future work on ``stream`` (default: the current one) wait for this event."""
        (current_stream() if stream is None else stream).wait_event(self)

    def query(self) -> bool:
        """Whether the work before the recorded point has finished."""
        rc = _rt().cudaEventQuery(self._as_parameter_)
        if rc not in (0, _NOT_READY):
            raise RuntimeError(f"cudaEventQuery failed with CUDA error {rc}")
        return rc == 0

    def synchronize(self) -> None:
        """Wait until the work before the recorded point has finished."""
        _cuda._rt_call("cudaEventSynchronize", self._as_parameter_)

    def elapsed_time(self, end_event: Event) -> float:
        """Milliseconds between this event and ``end_event`` (both recorded, with timing)."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("elapsed_time: both events must be created with "
                               "enable_timing=True")
        if not (self._recorded and end_event._recorded):
            raise RuntimeError("elapsed_time: both events must be recorded first")
        ms = ctypes.c_float(0.0)
        _cuda._rt_call("cudaEventElapsedTime", ctypes.byref(ms), self._as_parameter_,
                       end_event._as_parameter_)
        return float(ms.value)

    def __repr__(self) -> str:
        return f"<ember.cuda.Event {self._handle or 0:#x}>"

    def __del__(self) -> None:
        h = getattr(self, "_handle", None)
        rt = _cuda._dll._handles.get("cudart")
        if h and rt is not None:
            rt.cudaEventDestroy(ctypes.c_void_p(h))


def _streams() -> dict:
    d = getattr(_local, "streams", None)
    if d is None:
        d = _local.streams = {}
    return d


def default_stream(device: Any = None) -> Stream:
    """The legacy default stream of ``device`` (handle 0)."""
    _rt()
    return Stream(device, _handle=0)


def current_stream(device: Any = None) -> Stream:
    """The stream ember launches on for ``device`` in this thread (default: the default
    stream)."""
    _rt()
    idx = _cuda._index(device)
    s = _streams().get(idx)
    return s if s is not None else Stream(idx, _handle=0)


def set_stream(stream: Stream) -> None:
    """Make ``stream`` the current stream of its device in this thread."""
    _streams()[stream.device_index] = stream


class StreamContext:
    """Within the block, ``stream`` is the current stream of its device (and that
    device is current); ``None`` does nothing."""

    def __init__(self, stream: Stream | None) -> None:
        self.stream = stream

    def __enter__(self) -> Stream | None:
        s = self.stream
        if s is None:
            return None
        self._prev_stream = _streams().get(s.device_index)
        self._dev = _OnDevice(s.device_index)
        self._dev.__enter__()
        set_stream(s)
        return s

    def __exit__(self, *exc: Any) -> None:
        s = self.stream
        if s is None:
            return
        if self._prev_stream is None:
            _streams().pop(s.device_index, None)
        else:
            set_stream(self._prev_stream)
        self._dev.__exit__(*exc)


def stream(stream: Stream | None) -> StreamContext:
    """A context manager that makes ``stream`` current, as ``torch.cuda.stream``."""
    return StreamContext(stream)
