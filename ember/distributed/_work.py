"""``Work``: a pending collective, and the timed wait every collective goes through.

Every operation is posted as a nonblocking MPI request and waited on here, so a
blocking call and ``async_op=True`` share one path and a wait can give up after
the group's ``timeout`` (MPI's own blocking calls cannot)."""
from __future__ import annotations

import os
import time
from typing import Any, Callable, Optional

_SPINS_BEFORE_YIELD = 2000

# Works not known to be complete: MPI may still read or write their buffers, so
# they stay alive here even when the caller drops them without waiting.
_pending: set = set()


def _mpi():
    from mpi4py import MPI

    return MPI


def wait_requests(reqs: list, secs: float, op: str, group: Any, status: Any = None) -> None:
    """Drive MPI progress until every request in ``reqs`` is complete.

    Spins on ``Test`` (MPI progresses nonblocking operations only inside MPI
    calls), then also yields the CPU so a rank still computing on a shared core
    is not starved, and raises ``RuntimeError`` naming ``op`` once ``secs``
    seconds have passed."""
    MPI = _mpi()
    if len(reqs) == 1:
        req = reqs[0]

        def done():
            return req.Test(status)
    else:
        def done():
            return MPI.Request.Testall(reqs)
    deadline = time.monotonic() + secs
    spins = 0
    try:
        while not done():
            spins += 1
            if spins > _SPINS_BEFORE_YIELD:
                os.sched_yield()
                if spins % 64 == 0 and time.monotonic() > deadline:
                    raise RuntimeError(group._timeout_message(op, secs))
    except MPI.Exception as e:
        raise RuntimeError(f"{op}(): MPI error: {e.Get_error_string()}") from None


class Work:
    """A collective or point-to-point operation in flight (``async_op=True``).

    ``wait()`` blocks until it is complete (and raises ``RuntimeError`` when the
    group's timeout passes first); ``is_completed()`` asks without blocking.
    Output tensors hold their results only after either reports completion."""

    def __init__(self, reqs: list, op: str, group: Any, finish: Optional[Callable[[], None]] = None,
                 keep: tuple = (), result: tuple = (), status: Any = None) -> None:
        self._reqs = reqs
        self._op = op
        self._group = group
        self._finish = finish
        self._keep = keep            # buffers MPI reads or writes until completion
        self._result = list(result)
        self._status = status
        self._done = not reqs
        if self._done:
            self._complete()
        else:
            for w in list(_pending):        # forget the ones that finished meanwhile
                w.is_completed()
            _pending.add(self)

    def _complete(self) -> None:
        self._done = True
        _pending.discard(self)
        self._keep = ()
        fin, self._finish = self._finish, None
        if fin is not None:
            fin()

    def is_completed(self) -> bool:
        """True once the operation has finished (results are in place)."""
        if not self._done:
            MPI = _mpi()
            try:
                ok = (self._reqs[0].Test(self._status) if len(self._reqs) == 1
                      else MPI.Request.Testall(self._reqs))
            except MPI.Exception as e:
                raise RuntimeError(f"{self._op}(): MPI error: {e.Get_error_string()}") from None
            if ok:
                self._complete()
        return self._done

    def is_success(self) -> bool:
        """True once the operation has finished without error."""
        return self.is_completed()

    def wait(self, timeout: Any = None) -> bool:
        """Block until the operation has finished.

        Parameters
        ----------
        timeout : datetime.timedelta or float, optional
            How long to wait (seconds when a number); the group's timeout when
            omitted.

        Returns
        -------
        bool
            True.

        Raises
        ------
        RuntimeError
            When the operation has not finished in time: another rank died,
            raised, or called a different operation.
        """
        if not self._done:
            g = self._group
            secs = g._timeout_s if timeout is None else _seconds(timeout)
            wait_requests(self._reqs, secs, self._op, g, self._status)
            self._complete()
        return True

    def result(self) -> list:
        """The output tensors of the operation (after ``wait()``)."""
        self.wait()
        return list(self._result)

    def _source_rank(self) -> int:
        """The global rank a finished ``irecv`` received from."""
        self.wait()
        if self._status is None:
            raise RuntimeError("_source_rank: only a receive knows its source rank")
        return self._group._global(self._status.Get_source())

    def __repr__(self) -> str:
        state = "completed" if self._done else "pending"
        return f"Work({self._op}, {state})"


def _seconds(timeout: Any) -> float:
    return timeout.total_seconds() if hasattr(timeout, "total_seconds") else float(timeout)
