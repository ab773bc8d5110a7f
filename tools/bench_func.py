"""Function-transform and mixed-precision figures, ember beside PyTorch in one process,
calls alternating, medians, both libraries on the same thread count:

- ``vmap(grad(loss), in_dims=(None, 0, 0))``: per-sample gradients of a 32-64-10 MLP,
  batch 64 (the asv ``func_tools.PerSampleGrads`` program);
- bf16 GEMM 2048 beside fp32 GEMM 2048 (ember only), saying which bf16 path ran;
- the cost of ``a + b`` and ``x.view(...)`` on small tensors with no mode installed.

    .venv/bin/python tools/bench_func.py [threads]
"""
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ember  # noqa: E402
from ember._C import matmul as _la  # noqa: E402


def _pair(fe, ft, reps, number):
    fe()
    ft()
    te, tt = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(number):
            fe()
        t1 = time.perf_counter()
        for _ in range(number):
            ft()
        t2 = time.perf_counter()
        te.append((t1 - t0) / number)
        tt.append((t2 - t1) / number)
    return statistics.median(te), statistics.median(tt)


def per_sample_grads(torch, reps):
    rng = np.random.default_rng(0)
    data = {"w1": rng.standard_normal((64, 32), dtype=np.float32),
            "w2": rng.standard_normal((10, 64), dtype=np.float32),
            "x": rng.standard_normal((64, 32), dtype=np.float32),
            "y": rng.standard_normal((64, 10), dtype=np.float32)}
    fns = []
    for lib in (ember, torch):
        F = lib.nn.functional
        p = {k: lib.from_numpy(data[k]) for k in ("w1", "w2")}
        x, y = lib.from_numpy(data["x"]), lib.from_numpy(data["y"])

        def loss(p, x, y, F=F):
            h = F.relu(F.linear(x, p["w1"]))
            return ((F.linear(h, p["w2"]) - y) ** 2).mean()
        fn = lib.func.vmap(lib.func.grad(loss), in_dims=(None, 0, 0))
        fns.append(lambda fn=fn, p=p, x=x, y=y: fn(p, x, y))
    te, tt = _pair(fns[0], fns[1], reps, 20)
    print(f"vmap(grad) MLP 32-64-10 batch 64: ember {te * 1e3:.3f} ms, torch.func "
          f"{tt * 1e3:.3f} ms, ratio {te / tt:.2f}x")


def bf16_gemm(reps, n=2048):
    a, b = ember.randn(n, n), ember.randn(n, n)
    ab, bb = a.bfloat16(), b.bfloat16()
    times = {}
    for name, isa in (("fp32", None), ("bf16", -1), ("bf16-widening", 0)):
        if isa is not None:
            _la._set_bf16_gemm_isa(isa)
        f = (lambda: a @ b) if isa is None else (lambda: ab @ bb)
        f()
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            f()
            ts.append(time.perf_counter() - t0)
        times[name] = statistics.median(ts)
    path = "vdpbf16ps (AVX512_BF16)" if _la._set_bf16_gemm_isa(-1) else "widening to fp32"
    print(f"GEMM {n}: fp32 {times['fp32'] * 1e3:.0f} ms, bf16 [{path}] "
          f"{times['bf16'] * 1e3:.0f} ms ({times['fp32'] / times['bf16']:.2f}x faster), "
          f"bf16 forced widening {times['bf16-widening'] * 1e3:.0f} ms")


def fast_path(torch, reps):
    a, b = ember.ones(10), ember.ones(10)
    ta, tb = torch.ones(10), torch.ones(10)
    te, tt = _pair(lambda: a + b, lambda: ta + tb, reps, 2000)
    print(f"a + b (10 elements): ember {te * 1e6:.2f} us, torch {tt * 1e6:.2f} us")
    te, tt = _pair(lambda: a.view(2, 5), lambda: ta.view(2, 5), reps, 2000)
    print(f"x.view(2, 5): ember {te * 1e6:.2f} us, torch {tt * 1e6:.2f} us")


def main(threads: int = 1, reps: int = 15) -> None:
    import torch

    torch.set_num_threads(threads)
    ember.set_num_threads(threads)
    print(f"threads={threads}")
    per_sample_grads(torch, reps)
    fast_path(torch, reps)
    bf16_gemm(5)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
