"""``Compare``: many measurements as tables (one per label; rows by sub_label and thread
count, columns by description), in ``torch.utils.benchmark.Compare``'s layout."""
from __future__ import annotations

import collections
import enum
import itertools
import math
import operator

from ember.utils.benchmark._common import (
    Measurement,
    ordered_unique,
    select_unit,
    trim_sigfig,
    unit_to_english,
)

__all__ = ["Colorize", "Compare"]

BEST = "\033[92m"
GOOD = "\033[34m"
BAD = "\033[2m\033[91m"
VERY_BAD = "\033[31m"
BOLD = "\033[1m"
TERMINATE = "\033[0m"


class Colorize(enum.Enum):
    NONE = "none"
    COLUMNWISE = "columnwise"
    ROWWISE = "rowwise"


def _leading_digits(x: float) -> int:
    return int(math.ceil(math.log10(x)))


class _Column:
    def __init__(self, grouped_results, time_scale, trim, highlight_warnings):
        self._grouped_results = grouped_results
        flat = [*itertools.chain.from_iterable(grouped_results)]
        self._trim = trim
        self._highlight = highlight_warnings and any(r.has_warnings for r in flat if r)
        leading = [_leading_digits(r.median / time_scale) if r else None for r in flat]
        unit_digits = max(d for d in leading if d is not None)
        decimals = min(max(m.significant_figures - d, 0) for d, m in zip(leading, flat)
                       if m is not None and d is not None) if trim else 1
        length = unit_digits + decimals + (1 if decimals else 0)
        self._template = f"{{:>{length}.{decimals}f}}{{:>{7 if self._highlight else 0}}}"

    def get_results_for(self, group):
        return self._grouped_results[group]

    def num_to_str(self, value, sigfigs, spread):
        if value is None:
            return " " * len(self.num_to_str(1, sigfigs, None))
        if self._trim:
            value = trim_sigfig(value, sigfigs)
        return self._template.format(
            value, f" (! {spread * 100:.0f}%)" if self._highlight and spread is not None else "")


class _Row:
    def __init__(self, results, row_group, render_env, env_str_len, time_scale, colorize,
                 num_threads=None):
        self._results = results
        self._row_group = row_group
        self._render_env = render_env
        self._env_str_len = env_str_len
        self._time_scale = time_scale
        self._colorize = colorize
        self._columns = ()
        self._num_threads = num_threads

    def as_column_strings(self):
        concrete = [r for r in self._results if r is not None]
        env = (f"({concrete[0].env})" if self._render_env else "").ljust(self._env_str_len + 4)
        out = ["  " + env + concrete[0].as_row_name]
        for m, col in zip(self._results, self._columns):
            if m is None:
                out.append(col.num_to_str(None, 1, None))
            else:
                out.append(col.num_to_str(m.median / self._time_scale, m.significant_figures,
                                          m.iqr / m.median if m.has_warnings else None))
        return out

    @staticmethod
    def color_segment(segment, value, best):
        if value <= best * 1.01 or value <= best + 100e-9:
            return BEST + BOLD + segment + TERMINATE * 2
        if value <= best * 1.1:
            return GOOD + BOLD + segment + TERMINATE * 2
        if value >= best * 5:
            return VERY_BAD + BOLD + segment + TERMINATE * 2
        if value >= best * 2:
            return BAD + segment + TERMINATE * 2
        return segment

    def row_separator(self, width):
        return ([f"{self._num_threads} threads: ".ljust(width, "-")]
                if self._num_threads is not None else [])

    def finalize_column_strings(self, column_strings, widths):
        best = [-1 for _ in column_strings]
        if self._colorize == Colorize.ROWWISE:
            row_min = min(r.median for r in self._results if r is not None)
            best = [row_min for _ in column_strings]
        elif self._colorize == Colorize.COLUMNWISE:
            best = [min((r.median for r in c.get_results_for(self._row_group) if r is not None),
                        default=None) for c in self._columns]
        contents = [column_strings[0].ljust(widths[0])]
        for s, w, r, b in zip(column_strings[1:], widths[1:], self._results, best):
            s = s.center(w)
            if self._colorize != Colorize.NONE and r is not None and b is not None:
                s = self.color_segment(s, r.median, b)
            contents.append(s)
        return contents


class _Table:
    def __init__(self, results, colorize, trim, highlight_warnings):
        self.results = results
        self._colorize = colorize
        self._trim = trim
        self._highlight = highlight_warnings
        self.label = results[0].label
        self.time_unit, self.time_scale = select_unit(min(r.median for r in results))
        self.row_keys = ordered_unique([self.row_fn(r) for r in results])
        self.row_keys.sort(key=operator.itemgetter(slice(2)))   # keep stmt order in a group
        self.column_keys = ordered_unique([r.description for r in results])
        self.rows = self._populate()

    @staticmethod
    def row_fn(m):
        return m.num_threads, m.env, m.as_row_name

    def _populate(self):
        ordered = [[None for _ in self.column_keys] for _ in self.row_keys]
        row_pos = {k: i for i, k in enumerate(self.row_keys)}
        col_pos = {k: i for i, k in enumerate(self.column_keys)}
        for r in self.results:
            ordered[row_pos[self.row_fn(r)]][col_pos[r.description]] = r
        envs = {r.env for r in self.results}
        render_env = len(envs) > 1
        env_len = max(len(e) for e in envs) if render_env else 0
        rows, by_group = [], []
        prior_threads, prior_env, group = -1, "", -1
        for (threads, env, _), row in zip(self.row_keys, ordered):
            transition = threads != prior_threads
            if transition:
                prior_threads, prior_env = threads, ""
                group += 1
                by_group.append([])
            rows.append(_Row(row, group, render_env and env != prior_env, env_len,
                             self.time_scale, self._colorize,
                             num_threads=threads if transition else None))
            by_group[-1].append(row)
            prior_env = env
        columns = tuple(_Column([tuple(row[i] for row in g) for g in by_group], self.time_scale,
                                self._trim, self._highlight)
                        for i in range(len(self.column_keys)))
        for r in rows:
            r._columns = columns
        return rows

    def render(self) -> str:
        string_rows = [[""] + self.column_keys]
        string_rows.extend(r.as_column_strings() for r in self.rows)
        n = max(len(r) for r in string_rows)
        for r in string_rows:
            r.extend("" for _ in range(n - len(r)))
        widths = [max(len(s) for s in col) for col in zip(*string_rows)]
        lines = ["  |  ".join(s.center(w) for s, w in zip(string_rows[0], widths))]
        width = len(lines[0])
        for srow, row in zip(string_rows[1:], self.rows):
            lines.extend(row.row_separator(width))
            lines.append("  |  ".join(row.finalize_column_strings(srow, widths)))
        warn = self._highlight and any(r.has_warnings for r in self.results)
        return (f"[{(' ' + (self.label or '') + ' ').center(width - 2, '-')}]\n"
                + "\n".join(lines) + "\n\n"
                + f"Times are in {unit_to_english(self.time_unit)}s ({self.time_unit}).\n"
                + ("(! XX%) Measurement has high variance, where XX is the IQR / median * 100.\n"
                   if warn else ""))


class Compare:
    """Tables of many ``Measurement``s: one per ``label``, a row per ``sub_label`` (or
    ``stmt``) and thread count, a column per ``description``; ``str()`` or ``print()``."""

    def __init__(self, results: list[Measurement]) -> None:
        self._results: list[Measurement] = []
        self.extend_results(results)
        self._trim_significant_figures = False
        self._colorize = Colorize.NONE
        self._highlight_warnings = False

    def __str__(self) -> str:
        return "\n".join(self._render())

    def extend_results(self, results) -> None:
        """Add measurements to the ones already held."""
        for r in results:
            if not isinstance(r, Measurement):
                raise ValueError(f"Expected an instance of `Measurement`, got {type(r)} instead.")
        self._results.extend(results)

    def trim_significant_figures(self) -> None:
        """Print only the digits each measurement's spread supports."""
        self._trim_significant_figures = True

    def colorize(self, rowwise: bool = False) -> None:
        """Colour each time relative to the best of its column (or row)."""
        self._colorize = Colorize.ROWWISE if rowwise else Colorize.COLUMNWISE

    def highlight_warnings(self) -> None:
        """Mark measurements with a high IQR / median."""
        self._highlight_warnings = True

    def print(self) -> None:
        print(str(self))

    def _render(self):
        grouped = collections.defaultdict(list)
        for r in Measurement.merge(self._results):
            grouped[r.label].append(r)
        return [_Table(g, self._colorize, self._trim_significant_figures,
                       self._highlight_warnings).render() for g in grouped.values()]
