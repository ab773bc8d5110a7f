"""ember.profiler: time the ops a program runs (PyTorch's ``torch.profiler``):
``profile``, ``record_function``, ``schedule``, ``tensorboard_trace_handler``,
``key_averages().table()`` in PyTorch's columns and ``export_chrome_trace``."""
from ember.profiler._events import EventList, FunctionEvent, FunctionEventAvg
from ember.profiler._profile import (
    ProfilerAction,
    ProfilerActivity,
    profile,
    record_function,
    schedule,
    tensorboard_trace_handler,
)

__all__ = ["profile", "record_function", "schedule", "tensorboard_trace_handler",
           "ProfilerActivity", "ProfilerAction", "EventList", "FunctionEvent",
           "FunctionEventAvg"]
