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
