"""Reductions: ember beside PyTorch and NumPy on the same float32 data.

Full and per-axis sums, a mean, max, argmax, var, and softmax over rows, on a
4096x4096 matrix.  Reductions are threaded (with a fixed blocking, so the
result does not depend on the thread count): wall-clock timer.
"""

import numpy as np

from ._lib import LIBRARIES, WALL, asarray, load, randn

SHAPE = (4096, 4096)


def _np_softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


class Reduce:
    params = [["sum", "sum_dim0", "sum_dim1", "mean", "amax", "argmax", "var"], LIBRARIES]
    param_names = ["op", "library"]
    timer = WALL

    def setup(self, op, library):
        mod = load(library)
        x = asarray(library, randn(SHAPE))
        if library == "numpy":
            fns = {"sum": lambda: x.sum(), "sum_dim0": lambda: x.sum(axis=0),
                   "sum_dim1": lambda: x.sum(axis=1), "mean": lambda: x.mean(),
                   "amax": lambda: x.max(axis=1), "argmax": lambda: x.argmax(axis=1),
                   "var": lambda: x.var(axis=1, ddof=1)}
        else:
            fns = {"sum": lambda: mod.sum(x), "sum_dim0": lambda: mod.sum(x, dim=0),
                   "sum_dim1": lambda: mod.sum(x, dim=1), "mean": lambda: mod.mean(x),
                   "amax": lambda: mod.amax(x, dim=1), "argmax": lambda: mod.argmax(x, dim=1),
                   "var": lambda: mod.var(x, dim=1)}
        self.f = fns[op]

    def time_reduce(self, op, library):
        self.f()


class Softmax:
    params = [LIBRARIES]
    param_names = ["library"]
    timer = WALL

    def setup(self, library):
        mod = load(library)
        x = asarray(library, randn(SHAPE))
        self.f = (lambda: _np_softmax(x, 1)) if library == "numpy" else \
            (lambda: mod.softmax(x, dim=1))

    def time_softmax(self, library):
        self.f()


class SmallSum:
    """Per-call overhead of a reduction on 100 elements."""

    params = [LIBRARIES]
    param_names = ["library"]

    def setup(self, library):
        load(library)
        self.x = asarray(library, randn(100))

    def time_sum(self, library):
        self.x.sum()
