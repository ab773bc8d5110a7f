"""Tensor creation: factories, random numbers, and conversion from Python and NumPy.

ember beside PyTorch and NumPy: the per-call cost at 1e3 elements and the
throughput at 1e7 (page faults and fills dominate the plain factories; the
generator dominates the random ones: Philox4x32-10 in ember, MT19937 in PyTorch,
PCG64 in NumPy).
"""

import numpy as np

from ._lib import LIBRARIES, WALL, load

LARGE = 16 * 1024 * 1024


class Factory:
    """Plain and random factories at 1e3 elements (per-call cost) and 1e7 (throughput)."""

    params = [["zeros", "ones", "empty", "full", "arange", "linspace", "rand", "randn",
               "randint", "bernoulli", "normal"], [1000, 10_000_000], LIBRARIES]
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
                   "linspace": lambda: np.linspace(0, 1, n, dtype=f32),
                   "randn": lambda: rng.standard_normal(n, dtype=f32),
                   "rand": lambda: rng.random(n, dtype=f32),
                   "randint": lambda: rng.integers(0, 100, n),
                   "bernoulli": lambda: (rng.random(n, dtype=f32) < 0.5).astype(f32),
                   "normal": lambda: rng.normal(2.0, 3.0, n).astype(f32)}
        else:
            mod.manual_seed(0)
            buf = mod.empty(n)
            fns = {"zeros": lambda: mod.zeros(n), "ones": lambda: mod.ones(n),
                   "empty": lambda: mod.empty(n), "full": lambda: mod.full((n,), 2.5),
                   "arange": lambda: mod.arange(n, dtype=mod.float32),
                   "linspace": lambda: mod.linspace(0, 1, n),
                   "randn": lambda: mod.randn(n), "rand": lambda: mod.rand(n),
                   "randint": lambda: mod.randint(0, 100, (n,)),
                   "bernoulli": lambda: buf.bernoulli_(0.5),
                   "normal": lambda: mod.normal(2.0, 3.0, (n,))}
        self.f = fns[factory]

    def time_factory(self, factory, n, library):
        self.f()


class RandomOps:
    """Samplers without a cheap NumPy twin: float64 normals, permutations, multinomial."""

    params = [["randn_f64_1e7", "randperm_1e6", "multinomial_64x1000", "dropout_1e7"],
              LIBRARIES]
    param_names = ["op", "library"]
    timer = WALL

    def setup(self, op, library):
        mod = load(library)
        if library == "numpy":
            rng = np.random.default_rng(0)
            p = rng.random((64, 1000))
            x = np.ones(10_000_000, np.float32)
            fns = {"randn_f64_1e7": lambda: rng.standard_normal(10_000_000),
                   "randperm_1e6": lambda: rng.permutation(1_000_000),
                   "multinomial_64x1000": lambda: [rng.choice(1000, 100, p=r / r.sum())
                                                   for r in p],
                   "dropout_1e7": lambda: x * (rng.random(x.size, dtype=np.float32) >= 0.5) * 2}
        else:
            mod.manual_seed(0)
            p = mod.rand(64, 1000)
            x = mod.ones(10_000_000)
            if library == "ember":
                from ember._C.random import dropout

                drop = lambda: dropout(x, 0.5, True)  # noqa: E731 - (out, mask) in one pass
            else:
                drop = lambda: mod.native_dropout(x, 0.5, True)  # noqa: E731
            fns = {"randn_f64_1e7": lambda: mod.randn(10_000_000, dtype=mod.float64),
                   "randperm_1e6": lambda: mod.randperm(1_000_000),
                   "multinomial_64x1000": lambda: mod.multinomial(p, 100, replacement=True),
                   "dropout_1e7": drop}
        self.f = fns[op]

    def time_op(self, op, library):
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
