"""``TaskSpec`` and ``Measurement``: what was timed and the statistics of its times."""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import math
import textwrap
from collections.abc import Iterable, Iterator
from typing import Any

import ember

__all__ = ["TaskSpec", "Measurement", "select_unit", "unit_to_english", "trim_sigfig",
           "ordered_unique", "set_torch_threads"]

_MAX_SIGNIFICANT_FIGURES = 4
_MIN_CONFIDENCE_INTERVAL = 25e-9      # 25 ns: finer than this a timer cannot resolve
# Every run varies a little; beyond these IQR/median ratios the measurement is suspect.
_IQR_WARN_THRESHOLD = 0.1
_IQR_GROSS_WARN_THRESHOLD = 0.25


@dataclasses.dataclass(init=True, repr=False, eq=True, frozen=True)
class TaskSpec:
    """What a ``Timer`` measures (everything but its globals)."""

    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        """A best-effort one-line name for the measurement."""
        if self.label is not None:
            return self.label + (f": {self.sub_label}" if self.sub_label else "")
        if "\n" not in self.stmt:
            return self.stmt + (f": {self.sub_label}" if self.sub_label else "")
        return (f"stmt:{f' ({self.sub_label})' if self.sub_label else ''}\n"
                f"{textwrap.indent(self.stmt, '  ')}")

    def setup_str(self) -> str:
        if self.setup == "pass" or not self.setup:
            return ""
        if "\n" in self.setup:
            return f"setup:\n{textwrap.indent(self.setup, '  ')}"
        return f"setup: {self.setup}"

    def summarize(self) -> str:
        sections = [self.title, self.description or "", self.setup_str()]
        return "\n".join([f"{i}\n" if "\n" in i else i for i in sections if i])


_TASKSPEC_FIELDS = tuple(f.name for f in dataclasses.fields(TaskSpec))


def _quantile(sorted_values, q: float) -> float:
    """Linear interpolation between closest ranks (PyTorch's and NumPy's default)."""
    pos = q * (len(sorted_values) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


@dataclasses.dataclass(init=True, repr=False)
class Measurement:
    """The times of one statement: ``number_per_run`` executions per entry of ``raw_times``.

    ``times`` are per execution; ``median``, ``mean``, ``iqr`` summarise them, and the repr
    prints them with a warning when the spread suggests a noisy machine.
    """

    number_per_run: int
    raw_times: list[float]
    task_spec: TaskSpec
    metadata: dict[Any, Any] | None = None      # free for the user

    def __post_init__(self) -> None:
        self._sorted_times: tuple[float, ...] = ()
        self._warnings: tuple[str, ...] = ()
        self._median = self._mean = self._p25 = self._p75 = -1.0

    def __getattr__(self, name: str) -> Any:
        if name in _TASKSPEC_FIELDS:        # forward the TaskSpec's fields
            return getattr(self.task_spec, name)
        return super().__getattribute__(name)

    @property
    def times(self) -> list[float]:
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def median(self) -> float:
        self._lazy_init()
        return self._median

    @property
    def mean(self) -> float:
        self._lazy_init()
        return self._mean

    @property
    def iqr(self) -> float:
        self._lazy_init()
        return self._p75 - self._p25

    @property
    def significant_figures(self) -> int:
        """How many digits of the median the spread of the middle half supports."""
        self._lazy_init()
        n = len(self._sorted_times)
        middle = self._sorted_times[n // 4:math.ceil(3 * n / 4)]
        mean = sum(middle) / len(middle)
        std = math.sqrt(sum((t - mean) ** 2 for t in middle) / len(middle))
        ci = max(1.645 * std / math.sqrt(len(middle)), _MIN_CONFIDENCE_INTERVAL)
        figures = math.floor(math.log10(self._median / ci))
        return min(max(figures, 1), _MAX_SIGNIFICANT_FIGURES)

    @property
    def has_warnings(self) -> bool:
        self._lazy_init()
        return bool(self._warnings)

    def _lazy_init(self) -> None:
        if self.raw_times and not self._sorted_times:
            s = self._sorted_times = tuple(sorted(self.times))
            self._median = _quantile(s, 0.5)
            self._mean = sum(s) / len(s)
            self._p25 = _quantile(s, 0.25)
            self._p75 = _quantile(s, 0.75)

            def add_warning(msg: str) -> None:
                rel_iqr = self.iqr / self.median * 100
                self._warnings += (f"  WARNING: Interquartile range is {rel_iqr:.1f}% "
                                   f"of the median measurement.\n           {msg}",)

            if not self.meets_confidence(_IQR_GROSS_WARN_THRESHOLD):
                add_warning("This suggests significant environmental influence.")
            elif not self.meets_confidence(_IQR_WARN_THRESHOLD):
                add_warning("This could indicate system fluctuation.")

    def meets_confidence(self, threshold: float = _IQR_WARN_THRESHOLD) -> bool:
        """Whether IQR / median is below ``threshold``."""
        return self.iqr / self.median < threshold

    @property
    def title(self) -> str:
        return self.task_spec.title

    @property
    def env(self) -> str:
        return "Unspecified env" if self.task_spec.env is None else self.task_spec.env

    @property
    def as_row_name(self) -> str:
        return self.sub_label or self.stmt or "[Unknown]"

    def __repr__(self) -> str:
        self._lazy_init()
        n = len(self._sorted_times)
        unit, scale = select_unit(self._median)
        lines = [object.__repr__(self), self.task_spec.summarize(),
                 f"  {'Median: ' if n > 1 else ''}{self._median / scale:.2f} {unit}"]
        if n >= 4:
            lines.append(f"  IQR:    {self.iqr / scale:.2f} {unit} "
                         f"({self._p25 / scale:.2f} to {self._p75 / scale:.2f})")
        lines.append(f"  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs "
                     f"{'per measurement,' if n > 1 else ','} {self.num_threads} "
                     f"thread{'s' if self.num_threads > 1 else ''}")
        lines.extend(self._warnings)
        return "\n".join(lines).strip()

    @staticmethod
    def merge(measurements: Iterable[Measurement]) -> list[Measurement]:
        """Pool the per-execution times of measurements of the same TaskSpec."""
        grouped: dict[TaskSpec, list[Measurement]] = collections.defaultdict(list)
        for m in measurements:
            grouped[m.task_spec].append(m)
        return [Measurement(number_per_run=1, raw_times=[t for m in group for t in m.times],
                            task_spec=spec) for spec, group in grouped.items()]


def select_unit(t: float) -> tuple[str, float]:
    """The unit (ns, us, ms, s) that prints ``t`` seconds with 1 to 3 leading digits."""
    unit = {-3: "ns", -2: "us", -1: "ms"}.get(int(math.log10(t) // 3), "s")
    return unit, {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1}[unit]


def unit_to_english(u: str) -> str:
    return {"ns": "nanosecond", "us": "microsecond", "ms": "millisecond", "s": "second"}[u]


def trim_sigfig(x: float, n: int) -> float:
    """Round ``x`` to ``n`` significant figures (3.14159, 2 -> 3.1)."""
    if n != int(n):
        raise ValueError(f"trim_sigfig: n must be an integer, got {n}")
    scale = 10 ** (math.ceil(math.log10(abs(x))) - n)
    return float(round(x / scale) * scale)


def ordered_unique(elements: Iterable[Any]) -> list[Any]:
    return list(dict.fromkeys(elements))


@contextlib.contextmanager
def set_torch_threads(n: int) -> Iterator[None]:
    """Run the block with ``ember.set_num_threads(n)``, restoring the prior count."""
    prior = ember.get_num_threads()
    try:
        ember.set_num_threads(n)
        yield
    finally:
        ember.set_num_threads(prior)
