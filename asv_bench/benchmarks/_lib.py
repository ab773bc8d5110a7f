"""Helpers shared by ember's asv benchmarks.

Conventions (see docs/performance.rst):

* A benchmark that compares libraries takes a ``library`` parameter, last in
  ``params``, with the values of :data:`LIBRARIES`.  ``setup`` calls
  :func:`load` (or :func:`need`), which raises ``NotImplementedError`` when the
  library is not installed or cannot do the job: asv then *skips* that row
  instead of failing it.
* Kernels that run on several threads are timed by wall clock:
  ``timer = timeit.default_timer`` (asv's default timer counts process CPU
  time, which adds up every thread's time).
* Data is made with NumPy from a fixed seed and handed to each library with
  :func:`asarray`, so every row sees the same numbers.
"""

import os
import sys
import timeit

import numpy as np

LIBRARIES = ["ember", "torch", "numpy"]

#: the wall-clock timer for threaded kernels (``timer = WALL`` in a class)
WALL = timeit.default_timer


def _ensure_ember_path():
    # `asv run --python=same` from a source checkout: make the in-place build
    # importable even when PYTHONPATH was not set (the Makefile sets it).
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if os.path.isdir(os.path.join(root, "ember")) and root not in sys.path:
        sys.path.append(root)


def load(library):
    """Import ``library`` ("ember", "torch" or "numpy"); skip the benchmark when it is missing."""
    if library not in LIBRARIES:
        raise ValueError(f"unknown library {library!r}; expected one of {LIBRARIES}")
    if library == "numpy":
        return np
    if library == "ember":
        _ensure_ember_path()
    try:
        return __import__(library)
    except ImportError as e:
        raise NotImplementedError(f"{library} is not installed: {e}") from None


def need(library, *unsupported, reason="not supported"):
    """Skip (``NotImplementedError``) when ``library`` is one of ``unsupported``; else load it."""
    if library in unsupported:
        raise NotImplementedError(f"{library}: {reason}")
    return load(library)


def asarray(library, array):
    """``array`` (a NumPy array) as the library's tensor type, sharing memory where possible."""
    mod = load(library)
    if library == "numpy":
        return array
    return mod.from_numpy(np.ascontiguousarray(array))


def randn(shape, dtype=np.float32, seed=0):
    """Standard-normal NumPy data from a fixed seed."""
    return np.random.default_rng(seed).standard_normal(shape, dtype=dtype)


def set_threads(library, n):
    """Use ``n`` threads for ``library``'s kernels; returns the previous count.

    NumPy's own loops are single-threaded and its BLAS thread count cannot be
    changed after import, so asking NumPy for more than one thread skips.
    """
    mod = load(library)
    if library == "numpy":
        if n != 1:
            raise NotImplementedError("numpy's elementwise loops are single-threaded")
        return 1
    old = mod.get_num_threads()
    mod.set_num_threads(n)
    return old


def cpu_count():
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def need_threads(n):
    """Skip a threads=n row on a machine with fewer than n CPUs."""
    if n > cpu_count():
        raise NotImplementedError(f"{n} threads requested, {cpu_count()} CPUs available")
