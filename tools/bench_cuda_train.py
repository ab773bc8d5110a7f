"""Time one training step on the GPU: ember beside PyTorch, same model, same device.

    python tools/bench_cuda_train.py [--precision highest|high] [--reps 20]

An MLP (Linear-GELU-Linear, cross-entropy, Adam) at batch 4096, width 1024/4096. The
two libraries alternate in one process; each row is the median step time in ms after
warm-up, synchronised. Needs a usable GPU and torch with CUDA for the torch column.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ember  # noqa: E402


def make_step(lib, precision):
    lib.set_float32_matmul_precision(precision)
    lib.manual_seed(0)
    nn = lib.nn
    model = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024)).to("cuda")
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    x = lib.randn(4096, 1024, device="cuda")
    y = lib.randint(0, 1024, (4096,), device="cuda")

    def step():
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return step


def timed(lib, step):
    lib.cuda.synchronize()
    t = time.perf_counter()
    step()
    lib.cuda.synchronize()
    return (time.perf_counter() - t) * 1e3


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--precision", default="highest", choices=["highest", "high"])
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args(argv)
    if not ember.cuda.is_available():
        print(f"CUDA unavailable: {ember.cuda.unavailable_reason()}")
        return 0
    libs = {"ember": ember}
    try:
        import torch
        if torch.cuda.is_available():
            libs["torch"] = torch
    except ImportError:
        pass
    steps = {name: make_step(lib, args.precision) for name, lib in libs.items()}
    for name, lib in libs.items():
        for _ in range(3):
            timed(lib, steps[name])
    times = {name: [] for name in libs}
    for _ in range(args.reps):
        for name, lib in libs.items():
            times[name].append(timed(lib, steps[name]))
    med = {name: statistics.median(t) for name, t in times.items()}
    print(f"MLP training step, float32 matmul precision {args.precision!r}, "
          f"{ember.cuda.get_device_name()}")
    for name, ms in med.items():
        print(f"  {name:6s} {ms:8.2f} ms")
    if "torch" in med:
        print(f"  ember/torch time: {med['ember'] / med['torch']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
