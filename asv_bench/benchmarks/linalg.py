"""float64 factorizations (``linalg.svd``, ``eigh``, ``cholesky``, ``solve``): ember's
LAPACK calls beside PyTorch and NumPy on the same data and thread count."""

import numpy as np

from ._lib import WALL, asarray, load, need_threads, randn, set_threads


class Decompositions:
    params = [[128, 512], ["svd", "eigh", "cholesky", "solve"], ["ember", "torch", "numpy"],
              [1, 2]]
    param_names = ["n", "op", "library", "threads"]
    timer = WALL

    def setup(self, n, op, library, threads):
        need_threads(threads)
        mod = load(library)
        set_threads(library, threads)
        a = randn((n, n), dtype=np.float64)
        s = a @ a.T + n * np.eye(n)
        self.a, self.s = asarray(library, a), asarray(library, s)
        la = mod.linalg
        self.fn = {"svd": lambda: la.svd(self.a), "eigh": lambda: la.eigh(self.s),
                   "cholesky": lambda: la.cholesky(self.s),
                   "solve": lambda: la.solve(self.s, self.a)}[op]
        self.fn()      # LAPACK is loaded on first use

    def time_op(self, n, op, library, threads):
        self.fn()
