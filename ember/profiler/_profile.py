"""``profile``, ``record_function``, ``schedule`` and ``tensorboard_trace_handler``.

While a profiler records, it is installed as a Python dispatch mode, so every op that
goes through the dispatcher (functions, methods and the ops autograd's backward runs) is
timed with its input shapes and the memory of the tensors it returns; each backward node
and each DataLoader step is a range around the ops it runs. When no profiler is
recording nothing is installed: the dispatcher's fast path is untouched.
"""
from __future__ import annotations

import enum
import functools
import gzip
import json
import os
import socket
import threading
import time
import traceback
import warnings
from typing import Any, Callable, Iterable

from ember._C.core import TensorBase
from ember.library import DispatchMode
from ember.profiler._events import EventList, FunctionEvent

__all__ = ["profile", "record_function", "schedule", "tensorboard_trace_handler",
           "ProfilerActivity", "ProfilerAction"]


class ProfilerActivity(enum.Enum):
    CPU = 0
    CUDA = 1


class ProfilerAction(enum.Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Callable[[int], ProfilerAction]:
    """The profiler action at each step: skip ``skip_first`` steps, then cycles of ``wait``
    idle, ``warmup`` and ``active`` recorded steps (the last one saves), ``repeat`` times
    (0: forever). ``skip_first_wait`` skips the wait of the first cycle."""
    if warmup < 0 or active <= 0 or wait < 0 or repeat < 0 or skip_first < 0:
        raise ValueError("Invalid profiler schedule arguments")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results",
                      stacklevel=2)

    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise ValueError(f"Invalid step: {step}")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return ProfilerAction.NONE
        mod = step % num_steps
        if mod < wait:
            return ProfilerAction.NONE
        if mod < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod < num_steps - 1 else ProfilerAction.RECORD_AND_SAVE
    return schedule_fn


def _default_schedule(_: int) -> ProfilerAction:
    return ProfilerAction.RECORD


def _now_us() -> float:
    return time.perf_counter_ns() / 1000.0


def _shape_of(x):
    if isinstance(x, TensorBase):
        return list(x.shape)
    if isinstance(x, (list, tuple)) and x and all(isinstance(y, TensorBase) for y in x):
        return [list(y.shape) for y in x]
    return []


def _storages(x, acc):
    if isinstance(x, TensorBase):
        acc.append(x)
    elif isinstance(x, (list, tuple)):
        for y in x:
            _storages(y, acc)
    return acc


class _Collector(DispatchMode):
    """The recording state of one profiler: open ranges per thread and finished events."""

    def __init__(self, record_shapes: bool, profile_memory: bool, with_stack: bool):
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.events: list[FunctionEvent] = []
        self._open = threading.local()
        self._next_id = 0

    def _stack(self):
        s = getattr(self._open, "stack", None)
        if s is None:
            s = self._open.stack = []
        return s

    def begin(self, name, args=(), user=False) -> FunctionEvent:
        shapes = [_shape_of(a) for a in args] if self.record_shapes else []
        stack = None
        if self.with_stack:
            stack = [f"{f.filename}({f.lineno}): {f.name}"
                     for f in reversed(traceback.extract_stack()[:-3])
                     if f"{os.sep}ember{os.sep}" not in f.filename]
        self._next_id += 1
        evt = FunctionEvent(self._next_id, name, threading.get_ident(), _now_us(), 0.0,
                            input_shapes=shapes, stack=stack, is_user_annotation=user)
        opened = self._stack()
        if opened:
            evt.cpu_parent = opened[-1]
            opened[-1].cpu_children.append(evt)
        opened.append(evt)
        return evt

    def end(self, evt, out=None, args=()):
        evt.time_range = (evt.time_range[0], _now_us())
        if self.profile_memory and out is not None:
            inputs = {t.untyped_storage().data_ptr() for t in _storages(args, [])}
            seen = set()
            for t in _storages(out, []):
                ptr = t.untyped_storage().data_ptr()
                if ptr not in inputs and ptr not in seen:
                    seen.add(ptr)
                    evt.cpu_memory_usage += t.untyped_storage().nbytes()
        if evt.cpu_parent is not None:
            evt.cpu_parent.cpu_memory_usage += evt.cpu_memory_usage
        opened = self._stack()
        if opened and opened[-1] is evt:
            opened.pop()
        self.events.append(evt)

    def __ember_dispatch__(self, name, func, args, kwargs):
        evt = self.begin("ember::" + name, args)
        out = None
        try:
            out = func(*args, **kwargs)
            return out
        finally:
            self.end(evt, out, args)


_active: list = []      # the recording collectors (record_function reports to the last)


def _engine():
    from ember.autograd import _engine
    return _engine


def _observe_node(fn, buf, skip_pre, call):
    """Time one backward node as ``autograd::engine::evaluate_function: <Node>``."""
    if not _active:
        return call(fn, buf, skip_pre)
    c = _active[-1]
    evt = c.begin(f"autograd::engine::evaluate_function: {fn.name()}")
    try:
        return call(fn, buf, skip_pre)
    finally:
        c.end(evt)


class record_function:
    """Label a range of code in the profile (a context manager or a decorator).

    Parameters
    ----------
    name : str
        The label shown in the table and the trace.
    args : str, optional
        Extra information, kept in the trace event.
    """

    def __init__(self, name: str, args: str | None = None):
        self.name = name
        self.args = args
        self._evt = None
        self._collector = None

    def __enter__(self) -> record_function:
        if _active:
            self._collector = _active[-1]
            self._evt = self._collector.begin(self.name, user=True)
        return self

    def __exit__(self, *exc) -> None:
        if self._evt is not None:
            self._collector.end(self._evt)
            self._evt = self._collector = None

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with record_function(self.name, self.args):
                return fn(*args, **kwargs)
        return wrapper


class profile:
    """Record the ops a block of code runs (PyTorch's ``torch.profiler.profile``).

    Parameters
    ----------
    activities : iterable of ProfilerActivity, optional
        What to profile; ember profiles the CPU (CUDA is refused when unavailable).
    schedule : callable, optional
        ``step -> ProfilerAction`` (see ``schedule``); without one every step records.
    on_trace_ready : callable, optional
        Called with the profiler whenever a recorded cycle ends (``RECORD_AND_SAVE``) and
        at exit.
    record_shapes : bool
        Keep each op's input shapes (``key_averages(group_by_input_shape=True)``).
    profile_memory : bool
        Count the bytes of the tensors each op allocates (``CPU Mem`` columns).
    with_stack : bool
        Keep the Python stack of each op (``key_averages(group_by_stack_n=...)``).
    """

    def __init__(self, *, activities: Iterable[ProfilerActivity] | None = None,
                 schedule: Callable[[int], ProfilerAction] | None = None,
                 on_trace_ready: Callable | None = None, record_shapes: bool = False,
                 profile_memory: bool = False, with_stack: bool = False,
                 with_flops: bool = False, with_modules: bool = False,
                 experimental_config: Any = None, acc_events: bool = False) -> None:
        acts = set(activities) if activities is not None else {ProfilerActivity.CPU}
        for a in acts:
            if not isinstance(a, ProfilerActivity):
                raise TypeError(f"profile: activities must be ProfilerActivity values, got "
                                f"{a!r}")
        if ProfilerActivity.CUDA in acts:
            import ember
            if not ember.cuda.is_available():
                raise RuntimeError("profile: ProfilerActivity.CUDA was requested but CUDA is "
                                   "not available in this build of ember")
        self.activities = acts
        self.schedule = schedule or _default_schedule
        self.on_trace_ready = on_trace_ready
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.acc_events = acc_events
        self.step_num = 0
        self.current_action = self.schedule(0)
        self._collector = None
        self._events: list[FunctionEvent] = []

    # --- recording ---------------------------------------------------------------
    def _start_trace(self):
        if self._collector is None:
            self._collector = _Collector(self.record_shapes, self.profile_memory,
                                         self.with_stack)
            self._collector.__enter__()
            _active.append(self._collector)
            _engine()._node_observer[0] = _observe_node

    def _stop_trace(self):
        c = self._collector
        if c is None:
            return
        self._collector = None
        _active.remove(c)
        if not _active:
            _engine()._node_observer[0] = None
        c.__exit__(None, None, None)
        done = [e for e in c.events]
        self._events = (self._events + done) if self.acc_events else done

    def _transit(self, prev, cur):
        recording = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
        if prev == ProfilerAction.RECORD_AND_SAVE:
            self._stop_trace()
            if self.on_trace_ready:
                self.on_trace_ready(self)
        elif prev in recording and cur not in recording:
            warnings.warn("Incorrect schedule: RECORD followed by NONE/WARMUP", stacklevel=3)
            self._stop_trace()
        if cur in recording:
            self._start_trace()

    def start(self) -> None:
        self._transit(ProfilerAction.NONE, self.current_action)

    def stop(self) -> None:
        if self.current_action in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE):
            self._stop_trace()
            if self.on_trace_ready:
                self.on_trace_ready(self)
        self.current_action = ProfilerAction.NONE

    def step(self) -> None:
        """Mark the end of a training step: the schedule picks the next action."""
        prev = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit(prev, self.current_action)

    def __enter__(self) -> profile:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    # --- results -----------------------------------------------------------------
    def events(self) -> EventList:
        """The recorded events of the last saved cycle, in order of completion."""
        return EventList(sorted(self._events, key=lambda e: e.time_range[0]),
                         profile_memory=self.profile_memory)

    def key_averages(self, group_by_input_shape: bool = False,
                     group_by_stack_n: int = 0) -> EventList:
        """One row per op name (and input shapes / stack); ``.table(sort_by=...)``."""
        return self.events().key_averages(group_by_input_shape, group_by_stack_n)

    def export_chrome_trace(self, path: str) -> None:
        """Write the events as a Chrome trace (JSON; loads in Perfetto and
        chrome://tracing); a path ending in ``.gz`` is gzipped."""
        pid = os.getpid()
        trace = []
        for e in self.events():
            args = {}
            if e.input_shapes:
                args["Input Dims"] = e.input_shapes
            if self.profile_memory:
                args["Allocated Bytes"] = e.cpu_memory_usage
            trace.append({"ph": "X", "cat": "user_annotation" if e.is_user_annotation
                          else "cpu_op", "name": e.name, "pid": pid, "tid": e.thread,
                          "ts": e.time_range[0], "dur": e.cpu_time_total, "args": args})
        data = json.dumps({"schemaVersion": 1, "traceEvents": trace,
                           "displayTimeUnit": "ms"})
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "wt") as f:
            f.write(data)


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None,
                              use_gzip: bool = False) -> Callable[[profile], None]:
    """An ``on_trace_ready`` that writes each trace to ``dir_name`` as
    ``{worker_name}.{milliseconds}.pt.trace.json[.gz]`` (TensorBoard's profile plugin)."""
    def handler(prof: profile) -> None:
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        name = f"{worker}.{time.time_ns() // 1_000_000}.pt.trace.json"
        if use_gzip:
            name += ".gz"
        prof.export_chrome_trace(os.path.join(dir_name, name))
    return handler
