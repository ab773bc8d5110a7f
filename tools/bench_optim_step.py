"""Time one optimizer step on a GPT-sized parameter set, ember beside torch, alternating
the two in one process (medians of interleaved repeats).

    python tools/bench_optim_step.py [--threads 1] [--repeats 30]
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def shapes(total=1_000_000, n=30):
    """n tensors summing to about ``total`` elements: matrices, and vectors like biases
    and norm weights."""
    out = []
    for i in range(n):
        out.append((128,) if i % 3 == 2 else (128, 384))
    scale = total / sum(int(np.prod(s)) for s in out)
    return [(int(s[0] * scale), s[1]) if len(s) == 2 else s for s in out]


def make(lib, opt_name, kwargs, arrays, grads):
    params = [lib.nn.Parameter(lib.tensor(a)) for a in arrays]
    for p, g in zip(params, grads):
        p.grad = lib.tensor(g)
    return getattr(lib.optim, opt_name)(params, **kwargs)


def time_steps(opt, k=5):
    t0 = time.perf_counter()
    for _ in range(k):
        opt.step()
    return (time.perf_counter() - t0) / k


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=30)
    args = ap.parse_args()
    import torch

    import ember
    torch.set_num_threads(args.threads)
    ember.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    shp = shapes()
    arrays = [rng.standard_normal(s).astype(np.float32) * 0.02 for s in shp]
    grads = [rng.standard_normal(s).astype(np.float32) * 1e-3 for s in shp]
    print(f"{len(shp)} tensors, {sum(a.size for a in arrays)} parameters, "
          f"{args.threads} thread(s)")
    rows = [("AdamW", dict(lr=1e-3), {}), ("AdamW", dict(lr=1e-3), dict(foreach=True)),
            ("AdamW", dict(lr=1e-3), dict(fused=True)),
            ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True), {}),
            ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True), dict(foreach=True))]
    for name, kw, torch_flags in rows:
        e = make(ember, name, kw, arrays, grads)
        t = make(torch, name, dict(kw, **torch_flags), arrays, grads)
        te, tt = [], []
        for _ in range(args.repeats):
            te.append(time_steps(e))
            tt.append(time_steps(t))
        me, mt = statistics.median(te), statistics.median(tt)
        flags = ", ".join(f"{k}={v}" for k, v in torch_flags.items()) or "default"
        print(f"{name:6s} torch {flags:13s} ember {me * 1e3:7.3f} ms  torch {mt * 1e3:7.3f} ms"
              f"  ratio {me / mt:.2f}")
    # clip_grad_norm_ over the same gradients
    ep = [ember.nn.Parameter(ember.tensor(a)) for a in arrays]
    tp = [torch.nn.Parameter(torch.tensor(a)) for a in arrays]
    for p, g in zip(ep, grads):
        p.grad = ember.tensor(g)
    for p, g in zip(tp, grads):
        p.grad = torch.tensor(g)
    te, tt = [], []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        ember.nn.utils.clip_grad_norm_(ep, 1e9)
        te.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        torch.nn.utils.clip_grad_norm_(tp, 1e9)
        tt.append(time.perf_counter() - t0)
    me, mt = statistics.median(te), statistics.median(tt)
    print(f"clip_grad_norm_ (no clipping)  ember {me * 1e3:7.3f} ms  torch {mt * 1e3:7.3f} ms"
          f"  ratio {me / mt:.2f}")


if __name__ == "__main__":
    main()
