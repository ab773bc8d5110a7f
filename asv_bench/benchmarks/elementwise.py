"""Elementwise ops: ember beside PyTorch and NumPy on the same float32 data.

* ``Add``: ``a + b`` on a tiny (100) and a large (16M) vector, into a fresh
  output and into a preallocated one (``out=``).
* ``Unary``: ``exp`` and ``relu`` on 16M elements at 1 and 2 threads.
* ``Overhead``: per-op cost on one element, where the Python -> kernel path
  is all there is to time.

Large kernels are split across threads, so every class times wall clock.
"""

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
