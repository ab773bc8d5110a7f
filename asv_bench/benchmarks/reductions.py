"""Reductions: ember beside PyTorch and NumPy on the same float32 data.

Full and per-axis sums, a mean, max, argmax, var, and softmax over rows, on a
4096x4096 matrix.  Reductions are threaded (with a fixed blocking, so the
result does not depend on the thread count): wall-clock timer.
"""

import numpy as np

from ._lib import LIBRARIES, WALL, asarray, load, need_threads, randn, set_threads

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


class Sum16M:
    """16M float32 sum on 1 and 2 threads (issue 2's target: at least PyTorch's speed)."""

    params = [[1, 2], LIBRARIES]
    param_names = ["threads", "library"]
    timer = WALL

    def setup(self, threads, library):
        mod = load(library)
        if library == "numpy" and threads != 1:
            raise NotImplementedError("numpy's sum is single-threaded")
        need_threads(threads)
        set_threads(library, threads)
        self.x = asarray(library, randn(16 * 1024 * 1024))
        self.f = self.x.sum if library == "numpy" else (lambda: mod.sum(self.x))

    def time_sum(self, threads, library):
        self.f()


class SoftmaxThreads:
    """softmax over the last dim of 4096x4096 on 1 and 2 threads."""

    params = [[1, 2], ["ember", "torch"]]
    param_names = ["threads", "library"]
    timer = WALL

    def setup(self, threads, library):
        mod = load(library)
        need_threads(threads)
        set_threads(library, threads)
        x = asarray(library, randn(SHAPE))
        self.f = lambda: mod.softmax(x, dim=-1)

    def time_softmax(self, threads, library):
        self.f()


class Sort:
    """Row sort and top-k of 256 rows of 4096 float32."""

    params = [LIBRARIES]
    param_names = ["library"]
    timer = WALL

    def setup(self, library):
        load(library)
        self.x = asarray(library, randn((256, 4096)))
        self.np = library == "numpy"

    def time_sort(self, library):
        if self.np:
            np.sort(self.x, axis=-1, kind="stable")
        else:
            self.x.sort(-1)

    def time_topk(self, library):
        if self.np:
            np.partition(self.x, -8, axis=-1)
        else:
            self.x.topk(8, -1)
