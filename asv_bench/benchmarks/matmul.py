"""float32 matrix products: ember beside PyTorch and NumPy (same sizes, same data).

Kernels are threaded, so wall-clock time is what counts (timer below)."""

import timeit

import numpy as np


def _lib(name):
    if name == "ember":
        import ember
        from ember._C import matmul as linalg

        return ember, linalg
    if name == "torch":
        try:
            import torch
        except ImportError:
            raise NotImplementedError("torch is not installed")
        return torch, torch
    return np, np


def _wrap(lib, name, a):
    if name == "ember":
        return lib.from_numpy(a)
    if name == "torch":
        return lib.from_numpy(a)
    return a


class MatMul:
    params = [[256, 512, 1024, 2048], ["ember", "torch", "numpy"], [1, 2]]
    param_names = ["n", "library", "threads"]
    timer = timeit.default_timer

    def setup(self, n, library, threads):
        lib, ops = _lib(library)
        if library == "numpy" and threads != 1:
            raise NotImplementedError("numpy's BLAS thread count is not settable here")
        if library != "numpy":
            lib.set_num_threads(threads)
        rng = np.random.default_rng(0)
        self.a = _wrap(lib, library, rng.standard_normal((n, n), dtype=np.float32))
        self.b = _wrap(lib, library, rng.standard_normal((n, n), dtype=np.float32))
        self.bt = _wrap(
            lib, library, np.ascontiguousarray(rng.standard_normal((n, n), dtype=np.float32))
        )
        self.mm = ops.matmul
        self.library = library

    def time_matmul(self, n, library, threads):
        self.mm(self.a, self.b)

    def time_matmul_transposed_b(self, n, library, threads):
        self.mm(self.a, self.bt.T)


class BatchedMatMul:
    params = [[(64, 128), (256, 64), (8, 512)], ["ember", "torch", "numpy"]]
    param_names = ["batch_x_n", "library"]
    timer = timeit.default_timer

    def setup(self, bn, library):
        lib, ops = _lib(library)
        batch, n = bn
        rng = np.random.default_rng(0)
        self.a = _wrap(lib, library, rng.standard_normal((batch, n, n), dtype=np.float32))
        self.b = _wrap(lib, library, rng.standard_normal((batch, n, n), dtype=np.float32))
        self.mm = ops.matmul

    def time_bmm(self, bn, library):
        self.mm(self.a, self.b)


class Linear:
    """x @ w.T + b for a (batch*seq, in) activation: the nn.Linear forward."""

    params = [[(4096, 512, 512), (64, 1024, 4096), (1, 4096, 4096)], ["ember", "torch", "numpy"]]
    param_names = ["rows_in_out", "library"]
    timer = timeit.default_timer

    def setup(self, shape, library):
        lib, ops = _lib(library)
        m, k, n = shape
        rng = np.random.default_rng(0)
        x = rng.standard_normal((m, k), dtype=np.float32)
        w = rng.standard_normal((n, k), dtype=np.float32)
        b = rng.standard_normal((n,), dtype=np.float32)
        if library == "numpy":
            self.f = lambda: x @ w.T + b
        elif library == "torch":
            import torch

            tx, tw, tb = torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b)
            self.f = lambda: torch.nn.functional.linear(tx, tw, tb)
        else:
            ex, ew, eb = lib.from_numpy(x), lib.from_numpy(w), lib.from_numpy(b)
            self.f = lambda: ops.linear(ex, ew, eb)

    def time_linear(self, shape, library):
        self.f()
