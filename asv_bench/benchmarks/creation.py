"""Tensor creation: factories, random numbers, and conversion from Python and NumPy.

ember beside PyTorch and NumPy; 16M float32 elements for the large factories
(page faults and fills dominate), and the per-call cost on a tiny shape.
"""

import numpy as np

from ._lib import LIBRARIES, WALL, load

LARGE = 16 * 1024 * 1024


class Factory:
    params = [["zeros", "ones", "empty", "full", "arange", "randn", "rand"], [100, LARGE],
              LIBRARIES]
    param_names = ["factory", "n", "library"]
    timer = WALL

    def setup(self, factory, n, library):
        mod = load(library)
        if library == "numpy":
            rng = np.random.default_rng(0)
            f32 = np.float32
            fns = {"zeros": lambda: np.zeros(n, f32), "ones": lambda: np.ones(n, f32),
                   "empty": lambda: np.empty(n, f32), "full": lambda: np.full(n, 2.5, f32),
                   "arange": lambda: np.arange(n, dtype=f32),
                   "randn": lambda: rng.standard_normal(n, dtype=f32),
                   "rand": lambda: rng.random(n, dtype=f32)}
        else:
            mod.manual_seed(0)
            fns = {"zeros": lambda: mod.zeros(n), "ones": lambda: mod.ones(n),
                   "empty": lambda: mod.empty(n), "full": lambda: mod.full((n,), 2.5),
                   "arange": lambda: mod.arange(n, dtype=mod.float32),
                   "randn": lambda: mod.randn(n), "rand": lambda: mod.rand(n)}
        self.f = fns[factory]

    def time_factory(self, factory, n, library):
        self.f()


class FromData:
    """``tensor(list)`` copies; ``from_numpy`` shares memory (NumPy: ``asarray``)."""

    params = [["list_1k", "from_numpy_16M"], LIBRARIES]
    param_names = ["source", "library"]

    def setup(self, source, library):
        mod = load(library)
        if source == "list_1k":
            data = np.random.default_rng(0).standard_normal(1000).tolist()
            self.f = (lambda: np.array(data, dtype=np.float32)) if library == "numpy" else \
                (lambda: mod.tensor(data, dtype=mod.float32))
        else:
            arr = np.zeros(LARGE, np.float32)
            self.f = (lambda: np.asarray(arr)) if library == "numpy" else \
                (lambda: mod.from_numpy(arr))

    def time_from_data(self, source, library):
        self.f()
