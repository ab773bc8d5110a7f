"""Time one training step on the GPU: ember beside PyTorch, same model, same device.

    python tools/bench_cuda_train.py [--model mlp|cnn|transformer]
                                     [--precision highest|high] [--amp] [--reps 20]
                                     [--profile]

mlp: Linear-GELU-Linear, cross-entropy, Adam at batch 4096, width 1024/4096.
cnn: three 3x3 convolutions with batch norm, ReLU and max pooling, a linear head,
SGD with momentum, batch 64 of 3x32x32.
transformer: token embedding, four encoder layers (width 512, 8 heads, feed-forward
2048, batch-first, no dropout), a vocabulary head, cross-entropy, AdamW; batch 32 of
256 tokens.  ``--amp`` runs the forward under bfloat16 autocast.
The two libraries alternate in one process; each row is the median step time in ms
after warm-up, synchronised.
``--profile`` then lists each library's GPU kernels by total time over five steps
(torch.profiler's CUDA activity sees every kernel of the process, ember's too) and
ember's Python functions by own time (cProfile): where the host time goes.
Needs a usable GPU and torch with CUDA for the torch column.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ember  # noqa: E402


def make_step(lib, precision, model_name="mlp", amp=False):
    lib.set_float32_matmul_precision(precision)
    lib.manual_seed(0)
    nn = lib.nn
    if model_name == "transformer":
        vocab, width = 1000, 512
        layer = nn.TransformerEncoderLayer(width, 8, 2048, dropout=0.0, batch_first=True)
        model = nn.Sequential(nn.Embedding(vocab, width), nn.TransformerEncoder(layer, 4),
                              nn.Linear(width, vocab)).to("cuda")
        opt = lib.optim.AdamW(model.parameters(), lr=1e-4)
        x = lib.randint(0, vocab, (32, 256), device="cuda")
        y = lib.randint(0, vocab, (32 * 256,), device="cuda")
    elif model_name == "cnn":
        model = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
            nn.Linear(64, 10)).to("cuda")
        opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        x = lib.randn(64, 3, 32, 32, device="cuda")
        y = lib.randint(0, 10, (64,), device="cuda")
    else:
        model = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(),
                              nn.Linear(4096, 1024)).to("cuda")
        opt = lib.optim.Adam(model.parameters(), lr=1e-3)
        x = lib.randn(4096, 1024, device="cuda")
        y = lib.randint(0, 1024, (4096,), device="cuda")

    def step():
        opt.zero_grad()
        with lib.autocast("cuda", dtype=lib.bfloat16, enabled=amp):
            out = model(x)
        loss = nn.functional.cross_entropy(out.float().reshape(-1, out.shape[-1]), y)
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
    ap.add_argument("--model", default="mlp", choices=["mlp", "cnn", "transformer"])
    ap.add_argument("--amp", action="store_true", help="bfloat16 autocast forward")
    ap.add_argument("--profile", action="store_true", help="list GPU kernels by time")
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
    steps = {name: make_step(lib, args.precision, args.model, args.amp)
             for name, lib in libs.items()}
    for name, lib in libs.items():
        for _ in range(3):
            timed(lib, steps[name])
    times = {name: [] for name in libs}
    for _ in range(args.reps):
        for name, lib in libs.items():
            times[name].append(timed(lib, steps[name]))
    med = {name: statistics.median(t) for name, t in times.items()}
    print(f"{args.model.upper()} training step, float32 matmul precision {args.precision!r}"
          f"{', bfloat16 autocast' if args.amp else ''}, {ember.cuda.get_device_name()}")
    for name, ms in med.items():
        print(f"  {name:6s} {ms:8.2f} ms")
    if "torch" in med:
        print(f"  ember/torch time: {med['ember'] / med['torch']:.2f}x")
        if args.profile:
            for name, lib in libs.items():
                profile(libs["torch"], lib, steps[name], name)
    if args.profile:
        host_profile(steps["ember"])
    return 0


def host_profile(step, steps=5):
    """Print the Python functions of `steps` ember steps by own time."""
    import cProfile
    import pstats

    ember.cuda.synchronize()
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(steps):
        step()
    ember.cuda.synchronize()
    pr.disable()
    print(f"\nember: host time over {steps} steps, by own time")
    pstats.Stats(pr).sort_stats("tottime").print_stats(25)


def profile(torch, lib, step, name, steps=5):
    """Print the GPU kernels of `steps` calls of step() by total time."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as prof

    lib.cuda.synchronize()
    with prof(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(steps):
            step()
        lib.cuda.synchronize()
    print(f"\n{name}: GPU kernels over {steps} steps")
    print(p.key_averages().table(sort_by="device_time_total", row_limit=15,
                                 max_name_column_width=60))


if __name__ == "__main__":
    sys.exit(main())
