"""Profiler events, their per-name averages and the summary table in PyTorch's layout."""
from __future__ import annotations

from collections import defaultdict


def _format_time(time_us: float) -> str:
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _format_time_share(time_us: float, total_us: float) -> str:
    if total_us == 0:
        return "NaN"
    return f"{time_us * 100.0 / total_us:.2f}%"


def _format_memory(nbytes: int) -> str:
    kb, mb, gb = 1024, 1024 ** 2, 1024 ** 3
    if abs(nbytes) >= gb:
        return f"{nbytes * 1.0 / gb:.2f} GB"
    if abs(nbytes) >= mb:
        return f"{nbytes * 1.0 / mb:.2f} MB"
    if abs(nbytes) >= kb:
        return f"{nbytes * 1.0 / kb:.2f} KB"
    return f"{nbytes} B"


class FunctionEvent:
    """One recorded call: an op of the dispatcher or a ``record_function`` range."""

    def __init__(self, id, name, thread, start_us, end_us, input_shapes=None, stack=None,
                 cpu_memory_usage=0, is_user_annotation=False):
        self.id = id
        self.name = name
        self.thread = thread
        self.time_range = (start_us, end_us)
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.stack = stack or []
        self.cpu_memory_usage = cpu_memory_usage
        self.is_user_annotation = is_user_annotation
        self.cpu_children: list[FunctionEvent] = []
        self.cpu_parent: FunctionEvent | None = None
        self.count = 1

    @property
    def key(self) -> str:
        return self.name

    @property
    def cpu_time_total(self) -> float:
        return self.time_range[1] - self.time_range[0]

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total

    @property
    def self_cpu_time_total(self) -> float:
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def self_cpu_memory_usage(self) -> int:
        return self.cpu_memory_usage - sum(c.cpu_memory_usage for c in self.cpu_children)

    def __repr__(self) -> str:
        return (f"<FunctionEvent id={self.id} name={self.name} thread={self.thread} "
                f"cpu_time={_format_time(self.cpu_time_total)} "
                f"input_shapes={self.input_shapes}>")


class FunctionEventAvg:
    """The events of one key (name, and input shapes / stack when grouped by them)."""

    def __init__(self, key):
        self.key = key
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.input_shapes = None
        self.stack = None
        self.is_user_annotation = False

    def add(self, evt) -> FunctionEventAvg:
        if self.count == 0:
            self.input_shapes = evt.input_shapes
            self.stack = evt.stack
            self.is_user_annotation = evt.is_user_annotation
        self.count += evt.count
        self.cpu_time_total += evt.cpu_time_total
        self.self_cpu_time_total += evt.self_cpu_time_total
        self.cpu_memory_usage += evt.cpu_memory_usage
        self.self_cpu_memory_usage += evt.self_cpu_memory_usage
        return self

    @property
    def cpu_time(self) -> float:
        return 0.0 if self.count == 0 else self.cpu_time_total / self.count

    def __repr__(self) -> str:
        return (f"<FunctionEventAvg key={self.key} self_cpu_time="
                f"{_format_time(self.self_cpu_time_total)} cpu_time="
                f"{_format_time(self.cpu_time)} input_shapes={self.input_shapes}>")


class EventList(list):
    """A list of events with ``key_averages``, ``table`` and ``total_average``."""

    def __init__(self, *args, profile_memory=False, **kwargs):
        super().__init__(*args, **kwargs)
        self._profile_memory = profile_memory

    @property
    def self_cpu_time_total(self) -> float:
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shape: bool = False,
                     group_by_stack_n: int = 0) -> EventList:
        """One ``FunctionEventAvg`` per name (and input shapes / top stack frames)."""
        stats: dict = defaultdict(lambda: None)
        for evt in self:
            key = (evt.key,)
            if group_by_input_shape:
                key += (str(evt.input_shapes),)
            if group_by_stack_n > 0:
                key += tuple(evt.stack[:group_by_stack_n])
            if stats[key] is None:
                stats[key] = FunctionEventAvg(evt.key)
            stats[key].add(evt)
        avgs = list(stats.values())
        for a in avgs:
            if not group_by_input_shape:
                a.input_shapes = None
            if group_by_stack_n == 0:
                a.stack = None
            else:
                a.stack = a.stack[:group_by_stack_n]
        return EventList(avgs, profile_memory=self._profile_memory)

    def total_average(self) -> FunctionEventAvg:
        total = FunctionEventAvg("Total")
        for e in self:
            total.add(e)
        total.input_shapes = None
        return total

    def table(self, sort_by: str | None = None, row_limit: int = 100,
              max_src_column_width: int = 75, max_name_column_width: int = 55,
              max_shapes_column_width: int = 80, header: str | None = None,
              top_level_events_only: bool = False, time_unit: str | None = None) -> str:
        """The summary table (PyTorch's columns: Self CPU %, Self CPU, CPU total %,
        CPU total, CPU time avg, [CPU Mem, Self CPU Mem,] # of Calls[, Input Shapes]).

        ``sort_by`` names an attribute: ``cpu_time_total``, ``self_cpu_time_total``,
        ``cpu_time``, ``count``, ``cpu_memory_usage``, ``self_cpu_memory_usage``.
        """
        return build_table(self, sort_by=sort_by, header=header, row_limit=row_limit,
                           max_src_column_width=max_src_column_width,
                           max_name_column_width=max_name_column_width,
                           max_shapes_column_width=max_shapes_column_width,
                           profile_memory=self._profile_memory,
                           top_level_events_only=top_level_events_only, time_unit=time_unit)


_SORT_KEYS = ("cpu_time_total", "self_cpu_time_total", "cpu_time", "count",
              "cpu_memory_usage", "self_cpu_memory_usage")


def _in_unit(time_us, time_unit):
    if time_unit == "s":
        return f"{time_us / 1e6:.3f}s"
    if time_unit == "ms":
        return f"{time_us / 1e3:.3f}ms"
    if time_unit == "us":
        return f"{time_us:.3f}us"
    return _format_time(time_us)


def build_table(events, sort_by=None, header=None, row_limit=100, max_src_column_width=75,
                max_name_column_width=55, max_shapes_column_width=80, profile_memory=False,
                top_level_events_only=False, time_unit=None) -> str:
    if len(events) == 0:
        return ""
    if sort_by is not None:
        if sort_by not in _SORT_KEYS:
            raise ValueError(f"table: sort_by must be one of {list(_SORT_KEYS)} (the CPU "
                             f"profiler's keys), got {sort_by!r}")
        events = sorted(events, key=lambda e: getattr(e, sort_by), reverse=True)
    has_shapes = any(e.input_shapes is not None and len(e.input_shapes) > 0 for e in events)
    name_w = min(max(len(e.key) for e in events) + 4, max_name_column_width)
    shapes_w = min(max(len(str(e.input_shapes)) for e in events) + 4, max_shapes_column_width)
    stacks = [e.stack for e in events if e.stack]
    src_w = None
    if stacks:
        src_w = min(max(max(len(s) for s in st) for st in stacks) + 4, max_src_column_width)
    width = 12
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
    headers.append("# of Calls")
    columns = [(name_w, ">")] + [(width, ">")] * (len(headers) - 1)
    if has_shapes:
        headers.append("Input Shapes")
        columns.append((shapes_w, ">"))
    if stacks:
        headers.append("Source Location")
        columns.append((src_w, "<"))
    row_format = "".join("{: " + d + str(w) + "}  " for w, d in columns)
    sep = "".join("-" * w + "  " for w, _ in columns)
    line_length = sum(w + 2 for w, _ in columns) - 2

    def trim_path(path):
        if len(path) > src_w:
            path = path[len(path) - src_w:]
            if len(path) > 3:
                path = "..." + path[3:]
        return path

    total = sum(e.self_cpu_time_total for e in events)
    out = []
    if header is not None:
        out += ["=" * line_length, header]
    if top_level_events_only:
        out += ["=" * line_length, "This report only display top-level ops statistics"]
    out += [sep, row_format.format(*headers), sep]
    shown = 0
    for e in events:
        if shown == row_limit:
            break
        if top_level_events_only and getattr(e, "cpu_parent", None) is not None:
            continue
        shown += 1
        name = e.key
        if len(name) >= max_name_column_width - 3:
            name = name[:max_name_column_width - 3] + "..."
        row = [name, _format_time_share(e.self_cpu_time_total, total),
               _in_unit(e.self_cpu_time_total, time_unit),
               _format_time_share(e.cpu_time_total, total),
               _in_unit(e.cpu_time_total, time_unit), _in_unit(e.cpu_time, time_unit)]
        if profile_memory:
            row += [_format_memory(e.cpu_memory_usage), _format_memory(e.self_cpu_memory_usage)]
        row.append(e.count)
        if has_shapes:
            row.append(str(e.input_shapes)[:shapes_w])
        if stacks:
            row.append(trim_path(e.stack[0]) if e.stack else "")
        out.append(row_format.format(*row))
        if stacks:
            blank = [""] * (len(headers) - 1)
            for entry in (e.stack or [])[1:]:
                out.append(row_format.format(*(blank + [trim_path(entry)])))
            out.append(row_format.format(*(blank + [""])))
    out += [sep, f"Self CPU time total: {_in_unit(total, time_unit)}"]
    return "\n".join(out) + "\n"
