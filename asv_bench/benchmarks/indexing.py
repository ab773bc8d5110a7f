"""Indexing: basic slicing (views), integer-array gather/scatter, boolean masks.

ember beside PyTorch and NumPy on the same data; gathers and masks over a
4096x1024 float32 matrix.  Wall-clock timer (large copies are threaded).
"""

import numpy as np

from ._lib import LIBRARIES, WALL, asarray, load, randn

ROWS, COLS = 4096, 1024


class Index:
    params = [["slice_view", "int_rows", "index_select", "gather", "bool_mask", "setitem_rows"],
              LIBRARIES]
    param_names = ["kind", "library"]
    timer = WALL

    def setup(self, kind, library):
        mod = load(library)
        rng = np.random.default_rng(0)
        x = asarray(library, randn((ROWS, COLS)))
        rows_np = rng.integers(0, ROWS, size=ROWS // 2).astype(np.int64)
        rows = asarray(library, rows_np)
        cols = asarray(library, rng.integers(0, COLS, size=(ROWS, 8)).astype(np.int64))
        mask = x > 0
        self.x = x
        if kind == "slice_view":
            self.f = lambda: x[::2, 10:-10]
        elif kind == "int_rows":
            self.f = lambda: x[rows]
        elif kind == "index_select":
            self.f = (lambda: np.take(x, rows_np, axis=0)) if library == "numpy" else \
                (lambda: mod.index_select(x, 0, rows))
        elif kind == "gather":
            self.f = (lambda: np.take_along_axis(x, cols, axis=1)) if library == "numpy" else \
                (lambda: mod.gather(x, 1, cols))
        elif kind == "bool_mask":
            self.f = lambda: x[mask]
        else:
            def setitem():
                x[rows] = 0.0
            self.f = setitem

    def time_index(self, kind, library):
        self.f()


class ScalarIndex:
    """Per-call overhead: ``x[i, j]`` and ``x[i]`` on a small tensor."""

    params = [LIBRARIES]
    param_names = ["library"]

    def setup(self, library):
        load(library)
        self.x = asarray(library, randn((16, 16)))

    def time_getitem_row(self, library):
        self.x[3]

    def time_getitem_element(self, library):
        self.x[3, 4]


class Scatter:
    """Accumulating writes: index_put with accumulate, scatter_add, index_add, masked_fill."""

    params = [["index_put_acc", "scatter_add", "index_add", "masked_fill"], LIBRARIES]
    param_names = ["kind", "library"]
    timer = WALL

    def setup(self, kind, library):
        load(library)
        rng = np.random.default_rng(0)
        x = asarray(library, randn((ROWS, COLS)))
        src = asarray(library, randn((ROWS, COLS), seed=1))
        rows_np = rng.integers(0, ROWS // 4, size=ROWS).astype(np.int64)
        rows = asarray(library, rows_np)
        cols_np = rng.integers(0, COLS, size=(ROWS, COLS)).astype(np.int64)
        cols = asarray(library, cols_np)
        mask = x > 0
        if kind == "index_put_acc":
            if library == "numpy":
                self.f = lambda: np.add.at(x, rows_np, src)
            else:
                self.f = lambda: x.index_put_((rows,), src, accumulate=True)
        elif kind == "scatter_add":
            if library == "numpy":
                raise NotImplementedError("numpy has no scatter_add along an axis")
            self.f = lambda: x.scatter_add_(1, cols, src)
        elif kind == "index_add":
            if library == "numpy":
                raise NotImplementedError("numpy's add.at is index_put_acc")
            self.f = lambda: x.index_add_(0, rows, src)
        else:
            if library == "numpy":
                self.f = lambda: np.putmask(x, mask, 0.5)
            else:
                self.f = lambda: x.masked_fill_(mask, 0.5)

    def time_scatter(self, kind, library):
        self.f()


class Joins:
    """cat / stack / flip / roll / repeat / tril over 4096x1024 float32 pieces."""

    params = [["cat0", "cat1", "stack", "flip", "roll", "repeat", "tril"], LIBRARIES]
    param_names = ["kind", "library"]
    timer = WALL

    def setup(self, kind, library):
        mod = load(library)
        a = asarray(library, randn((ROWS, COLS)))
        b = asarray(library, randn((ROWS, COLS), seed=1))
        small = asarray(library, randn((256, 256)))
        np_names = {"cat0": lambda: np.concatenate([a, b], 0),
                    "cat1": lambda: np.concatenate([a, b], 1),
                    "stack": lambda: np.stack([a, b], 0),
                    "flip": lambda: np.flip(a, 0).copy(),
                    "roll": lambda: np.roll(a, 7, 1),
                    "repeat": lambda: np.tile(small, (8, 8)),
                    "tril": lambda: np.tril(a)}
        if library == "numpy":
            self.f = np_names[kind]
            return
        self.f = {"cat0": lambda: mod.cat([a, b], 0),
                  "cat1": lambda: mod.cat([a, b], 1),
                  "stack": lambda: mod.stack([a, b], 0),
                  "flip": lambda: mod.flip(a, (0,)),
                  "roll": lambda: mod.roll(a, 7, 1),
                  "repeat": lambda: small.repeat(8, 8),
                  "tril": lambda: mod.tril(a)}[kind]

    def time_join(self, kind, library):
        self.f()
