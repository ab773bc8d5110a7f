"""Function transforms and tools: ``vmap(grad(...))`` per-sample gradients of a small MLP
(batch 64) beside ``torch.func``, and the cost of ``a + b`` with the profiler module
imported but not recording (it must not change)."""

from ._lib import load, randn

LIBS = ["ember", "torch"]


class PerSampleGrads:
    """``vmap(grad(loss), in_dims=(None, 0, 0))`` of a 32-64-10 MLP, batch 64."""

    params = [LIBS]
    param_names = ["library"]

    def setup(self, library):
        mod = load(library)
        self.params = {"w1": mod.from_numpy(randn((64, 32), seed=1)),
                       "w2": mod.from_numpy(randn((10, 64), seed=2))}
        self.x = mod.from_numpy(randn((64, 32), seed=3))
        self.y = mod.from_numpy(randn((64, 10), seed=4))
        F = mod.nn.functional

        def loss(p, x, y):
            h = F.relu(F.linear(x, p["w1"]))
            return ((F.linear(h, p["w2"]) - y) ** 2).mean()
        self.fn = mod.func.vmap(mod.func.grad(loss), in_dims=(None, 0, 0))

    def time_vmap_grad(self, library):
        self.fn(self.params, self.x, self.y)


class ProfilerOff:
    """``a + b`` (10 elements) with ``<library>.profiler`` imported and idle."""

    params = [LIBS, ["imported", "not_imported"]]
    param_names = ["library", "profiler"]

    def setup(self, library, profiler):
        mod = load(library)
        if profiler == "imported":
            mod.profiler.profile        # noqa: B018 - loads the module
        self.a, self.b = mod.ones(10), mod.ones(10)

    def time_add(self, library, profiler):
        self.a + self.b


class Bf16MatMul:
    """2048x2048 GEMM in float32 and bfloat16 (ember's bf16 GEMM accumulates in float32 and
    runs vdpbf16ps where the CPU has AVX512_BF16), one thread."""

    params = [LIBS, ["float32", "bfloat16"]]
    param_names = ["library", "dtype"]
    timeout = 120

    def setup(self, library, dtype):
        mod = load(library)
        mod.set_num_threads(1)
        self.a = mod.from_numpy(randn((2048, 2048), seed=1)).to(getattr(mod, dtype))
        self.b = mod.from_numpy(randn((2048, 2048), seed=2)).to(getattr(mod, dtype))

    def time_matmul(self, library, dtype):
        self.a @ self.b
