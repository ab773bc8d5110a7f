"""``Timer``: time a Python statement the way ``torch.utils.benchmark.Timer`` does."""
from __future__ import annotations

import textwrap
import timeit
from typing import Any, Callable

import ember
from ember.utils.benchmark._common import Measurement, TaskSpec, set_torch_threads

__all__ = ["Timer", "timer"]


def timer() -> float:
    """The default clock: ``timeit.default_timer`` (ember's CPU ops are synchronous)."""
    return timeit.default_timer()


def _clean(src: str) -> str:
    src = textwrap.dedent(src)
    return (src[1:] if src and src[0] == "\n" else src).rstrip()


class Timer:
    """Time ``stmt`` after ``setup``, with ``num_threads`` ember threads.

    Parameters
    ----------
    stmt, setup : str
        Python code; ``setup`` runs once per timing block and is not timed.
    timer : callable
        The clock, seconds as a float.
    globals : dict, optional
        The namespace the code runs in (``ember`` and ``torch`` name ember by default).
    label, sub_label, description, env : str, optional
        How ``Compare`` groups the measurement: ``label`` names the table, ``sub_label``
        (else ``stmt``) the row, ``description`` the column, ``env`` the environment.
    num_threads : int
        ``ember.set_num_threads`` during the measurement.
    """

    def __init__(self, stmt: str = "pass", setup: str = "pass", global_setup: str = "",
                 timer: Callable[[], float] = timer, globals: dict[str, Any] | None = None,
                 label: str | None = None, sub_label: str | None = None,
                 description: str | None = None, env: str | None = None,
                 num_threads: int = 1) -> None:
        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")
        if global_setup:
            raise ValueError(f"global_setup is C++ only, got `{global_setup}`. Most likely this "
                             f"code can simply be moved to `setup`.")
        self._globals = dict(globals or {})
        self._globals.setdefault("ember", ember)
        self._globals.setdefault("torch", ember)
        stmt, setup = _clean(stmt), _clean(setup)
        self._timer = timeit.Timer(stmt=stmt, setup=setup, timer=timer, globals=self._globals)
        self._task_spec = TaskSpec(stmt=stmt, setup=setup, global_setup=global_setup,
                                   label=label, sub_label=sub_label, description=description,
                                   env=env, num_threads=num_threads)

    def _timeit(self, number: int) -> float:
        # A zero time would break the statistics (division, log).
        return max(self._timer.timeit(number), 1e-9)

    def timeit(self, number: int = 1000000) -> Measurement:
        """One block of ``number`` executions, after a warm-up of ``number // 100``."""
        with set_torch_threads(self._task_spec.num_threads):
            self._timeit(number=max(int(number // 100), 2))
            return Measurement(number_per_run=number, raw_times=[self._timeit(number=number)],
                               task_spec=self._task_spec)

    def _loop(self, number, stop_hook, min_run_time, max_run_time=None, callback=None):
        total, can_stop, times = 0.0, False, []
        with set_torch_threads(self._task_spec.num_threads):
            while total < min_run_time or not can_stop:
                spent = self._timeit(number)
                times.append(spent)
                total += spent
                if callback:
                    callback(number, spent)
                can_stop = stop_hook(times)
                if max_run_time and total > max_run_time:
                    break
        return times

    def _estimate_block_size(self, min_run_time: float) -> int:
        """The smallest power of ten of executions whose time dwarfs the timer's overhead."""
        with set_torch_threads(self._task_spec.num_threads):
            overhead = sorted(self._timeit(0) for _ in range(5))[2]
            number = 1
            while True:
                taken = self._timeit(number)
                if overhead / taken <= 1e-4 and taken >= min_run_time / 1000:
                    break
                if taken > min_run_time or number * 10 > 2147483647:
                    break
                number *= 10
        return number

    def blocked_autorange(self, callback: Callable[[int, float], None] | None = None,
                          min_run_time: float = 0.2) -> Measurement:
        """Blocks of executions (the block sized so timer overhead is negligible) until
        ``min_run_time`` seconds were spent; ``callback(number, seconds)`` after each."""
        number = self._estimate_block_size(min_run_time)
        times = self._loop(number, lambda times: True, min_run_time, callback=callback)
        return Measurement(number_per_run=number, raw_times=times, task_spec=self._task_spec)

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01,
                           max_run_time: float = 10.0,
                           callback: Callable[[int, float], None] | None = None
                           ) -> Measurement:
        """Blocks until IQR / median falls below ``threshold`` (at least 4 blocks and
        ``min_run_time`` seconds, at most ``max_run_time`` seconds)."""
        number = self._estimate_block_size(min_run_time=0.05)

        def stop_hook(times):
            return len(times) > 3 and Measurement(
                number_per_run=number, raw_times=times,
                task_spec=self._task_spec).meets_confidence(threshold=threshold)

        times = self._loop(number, stop_hook, min_run_time, max_run_time, callback=callback)
        return Measurement(number_per_run=number, raw_times=times, task_spec=self._task_spec)
