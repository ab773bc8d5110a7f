"""Elementwise ops: ember beside PyTorch and NumPy on the same float32 data.

* ``Add``: ``a + b`` on a tiny (100) and a large (16M) vector, into a fresh
  output and into a preallocated one (``out=``).
* ``Unary``: ``exp`` and ``relu`` on 16M elements at 1 and 2 threads.
* ``Math``: the vectorised math and activations (forward, and forward + backward
  for the activations) on 1M float32 and float64 elements at 1 and 2 threads.
* ``Overhead``: per-op cost on one element, where the Python -> kernel path
  is all there is to time.

Large kernels are split across threads, so every class times wall clock.
"""

import numpy as np

from ._lib import LIBRARIES, WALL, asarray, load, need_threads, randn, set_threads

SMALL, LARGE = 100, 16 * 1024 * 1024


class Add:
    params = [[SMALL, LARGE], ["fresh", "out"], LIBRARIES]
    param_names = ["n", "output", "library"]
    timer = WALL

    def setup(self, n, output, library):
        mod = load(library)
        self.a = asarray(library, randn(n, seed=0))
        self.b = asarray(library, randn(n, seed=1))
        self.out = asarray(library, randn(n, seed=2))
        self.add = mod.add

    def time_add(self, n, output, library):
        if output == "out":
            self.add(self.a, self.b, out=self.out)
        else:
            self.a + self.b


class AddMemory:
    """Peak memory of ``a + b`` on 16M elements: the fresh output is the only allocation."""

    params = [["fresh", "out"], LIBRARIES]
    param_names = ["output", "library"]

    def setup(self, output, library):
        Add.setup(self, LARGE, output, library)

    def peakmem_add(self, output, library):
        Add.time_add(self, LARGE, output, library)


def _relu(library, mod):
    if library == "numpy":
        return lambda x: mod.maximum(x, mod.float32(0))
    return mod.relu


class Unary:
    params = [["exp", "relu"], [1, 2], LIBRARIES]
    param_names = ["op", "threads", "library"]
    timer = WALL

    def setup(self, op, threads, library):
        mod = load(library)
        need_threads(threads)
        self.old_threads = set_threads(library, threads)
        self.x = asarray(library, randn(LARGE))
        self.f = mod.exp if op == "exp" else _relu(library, mod)

    def teardown(self, op, threads, library):
        # asv calls teardown after a skipped setup too
        if hasattr(self, "old_threads"):
            set_threads(library, self.old_threads)

    def time_unary(self, op, threads, library):
        self.f(self.x)


#: name -> (function of (module, x), has a backward worth timing)
_MATH = {
    "sin": (lambda m, x: m.sin(x), False),
    "log1p": (lambda m, x: m.log1p(x.abs()), False),
    "erf": (lambda m, x: m.erf(x), False),
    "sinh": (lambda m, x: m.sinh(x), False),
    "pow": (lambda m, x: m.pow(x.abs(), 1.7), False),
    "lgamma": (lambda m, x: m.lgamma(x), False),
    "gelu": (lambda m, x: m.nn.functional.gelu(x), True),
    "silu": (lambda m, x: m.nn.functional.silu(x), True),
    "softplus": (lambda m, x: m.nn.functional.softplus(x), True),
    "elu": (lambda m, x: m.nn.functional.elu(x), True),
}


class Math:
    """1M elements; ``fwd+bwd`` backpropagates a fixed gradient through the activations."""

    params = [list(_MATH), ["float32", "float64"], ["fwd", "fwd+bwd"], [1, 2],
              ["ember", "torch"]]
    param_names = ["op", "dtype", "pass", "threads", "library"]
    timer = WALL

    def setup(self, op, dtype, pass_, threads, library):
        fn, has_bwd = _MATH[op]
        if pass_ == "fwd+bwd" and not has_bwd:
            raise NotImplementedError(f"{op}: forward only")
        mod = load(library)
        need_threads(threads)
        self.old_threads = set_threads(library, threads)
        x = asarray(library, randn(1 << 20, dtype=getattr(np, dtype)))
        if pass_ == "fwd":
            self.run = lambda: fn(mod, x)
            return
        x.requires_grad_(True)
        g = asarray(library, randn(1 << 20, dtype=getattr(np, dtype), seed=1))
        self.run = lambda: mod.autograd.grad(fn(mod, x), x, g)

    def teardown(self, op, dtype, pass_, threads, library):
        if hasattr(self, "old_threads"):
            set_threads(library, self.old_threads)

    def time_math(self, op, dtype, pass_, threads, library):
        self.run()


class Overhead:
    """Python-call-to-kernel overhead: one-element float32 operands."""

    params = [LIBRARIES]
    param_names = ["library"]

    def setup(self, library):
        mod = load(library)
        self.a = asarray(library, randn(1, seed=0))
        self.b = asarray(library, randn(1, seed=1))
        self.out = asarray(library, randn(1, seed=2))
        self.mod = mod

    def time_binary_operator(self, library):
        self.a + self.b

    def time_function_call(self, library):
        self.mod.multiply(self.a, self.b)

    def time_out(self, library):
        self.mod.add(self.a, self.b, out=self.out)

    def time_unary_method(self, library):
        self.a.__neg__()
