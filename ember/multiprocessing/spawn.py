"""``spawn`` / ``start_processes``: run ``fn(i, *args)`` in ``nprocs`` processes and
report the first failure in the parent (PyTorch's ``torch.multiprocessing.spawn``).

A child that raises writes its traceback to a file the parent reads back, so the
parent's exception carries the child's own traceback; the parent then stops the
other children."""
from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import sys
import tempfile
import traceback
import warnings
from typing import Any, Callable

__all__ = ["spawn", "start_processes", "ProcessContext", "SpawnContext", "ProcessException",
           "ProcessRaisedException", "ProcessExitedException"]


class ProcessException(Exception):
    """A process started by :func:`start_processes` failed."""

    def __init__(self, msg: str, error_index: int, error_pid: int):
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.error_pid = error_pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid)


class ProcessRaisedException(ProcessException):
    """The process's function raised; the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """The process exited with a non-zero code or was killed by a signal."""

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int,
                 signal_name: str | None = None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid, self.exit_code,
                            self.signal_name)


def _run(fn: Callable, index: int, args: tuple, error_file: str) -> None:
    try:
        fn(index, *args)
    except KeyboardInterrupt:
        pass        # the parent is stopping every child
    except Exception:
        with open(error_file, "wb") as f:
            pickle.dump(traceback.format_exc(), f)
        sys.exit(1)


class ProcessContext:
    """The processes of one :func:`start_processes` call; :meth:`join` waits for them."""

    def __init__(self, processes: list, error_files: list, error_dir: str | None = None):
        self.processes = processes
        self.error_files = error_files
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}
        self._error_dir = error_dir

    def _cleanup(self) -> None:
        # the failing children's traceback files, once read, and their folder
        for path in self.error_files:
            if os.path.exists(path):
                os.unlink(path)
        if self._error_dir is not None and os.path.isdir(self._error_dir):
            os.rmdir(self._error_dir)

    def pids(self) -> list:
        return [int(p.pid) for p in self.processes]

    def _join_all(self, timeout: float) -> None:
        for p in self.processes:
            p.join(timeout)

    def join(self, timeout: float | None = None, grace_period: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds for processes to exit.

        Returns
        -------
        bool
            True when every process has exited cleanly, False while some still run.

        Raises
        ------
        ProcessRaisedException
            A process's function raised (the message holds its traceback).
        ProcessExitedException
            A process exited with a non-zero code or by a signal.

        On a failure the other processes get ``grace_period`` seconds to exit, then
        SIGTERM, then SIGKILL.
        """
        if not self.sentinels:
            self._cleanup()
            return True
        failed = None
        for sentinel in multiprocessing.connection.wait(list(self.sentinels), timeout=timeout):
            index = self.sentinels.pop(sentinel)
            self.processes[index].join()
            if self.processes[index].exitcode != 0:
                failed = index
                break
        if failed is None:
            if not self.sentinels:
                self._cleanup()
            return not self.sentinels
        if grace_period is not None:
            self._join_all(grace_period)
        for p in self.processes:
            if p.is_alive():
                p.terminate()
        self._join_all(30 if grace_period is None else grace_period)
        for p in self.processes:
            if p.is_alive():
                p.kill()
            p.join()
        try:
            self._raise(failed)
        finally:
            self._cleanup()

    def _raise(self, index: int):
        proc, path = self.processes[index], self.error_files[index]
        if not os.access(path, os.R_OK):      # no traceback: it exited or was killed
            code = proc.exitcode
            if code < 0:
                try:
                    name = signal.Signals(-code).name
                except ValueError:
                    name = f"<Unknown signal {-code}>"
                raise ProcessExitedException(f"process {index} terminated with signal {name}",
                                             index, proc.pid, code, name)
            raise ProcessExitedException(f"process {index} terminated with exit code {code}",
                                         index, proc.pid, code)
        with open(path, "rb") as f:
            trace = pickle.load(f)
        raise ProcessRaisedException(
            f"\n\n-- Process {index} terminated with the following error:\n{trace}", index,
            proc.pid)


SpawnContext = ProcessContext       # torch's older name


def start_processes(fn: Callable, args: tuple = (), nprocs: int = 1, join: bool = True,
                    daemon: bool = False, start_method: str = "spawn") -> Any:
    """Start ``nprocs`` processes running ``fn(i, *args)`` (``i`` from 0) with the
    ``multiprocessing`` start method ``start_method``.

    Returns
    -------
    ProcessContext or None
        The context to :meth:`~ProcessContext.join` when ``join`` is False; else None,
        after every process has exited cleanly (the first failure is raised).
    """
    ctx = multiprocessing.get_context(start_method)
    error_dir = tempfile.mkdtemp(prefix="ember-spawn-")
    processes, error_files = [], []
    for i in range(nprocs):
        path = os.path.join(error_dir, f"{i}.pickle")   # written only by a failing child
        p = ctx.Process(target=_run, args=(fn, i, args, path), daemon=daemon)
        p.start()
        processes.append(p)
        error_files.append(path)
    context = ProcessContext(processes, error_files, error_dir)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn: Callable, args: tuple = (), nprocs: int = 1, join: bool = True,
          daemon: bool = False, start_method: str = "spawn") -> Any:
    """:func:`start_processes` with the ``spawn`` start method (the usual way to start
    one process per rank for ``ember.distributed``).

    Examples
    --------
    >>> import ember.multiprocessing as mp
    >>> def main(rank, world_size):                             # doctest: +SKIP
    ...     ...
    >>> mp.spawn(main, args=(2,), nprocs=2)                    # doctest: +SKIP
    """
    if start_method != "spawn":
        warnings.warn(f"This method only supports start_method=spawn (got: {start_method}).\n"
                      f"To use a different start_method use:\n\t\t "
                      f"ember.multiprocessing.start_processes(...)", FutureWarning,
                      stacklevel=2)
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")
