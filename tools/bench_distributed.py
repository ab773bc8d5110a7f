"""All-reduce latency of ember.distributed (MPI) beside torch.distributed (gloo), and
DistributedDataParallel step time.

    mpiexec -n 2 python tools/bench_distributed.py allreduce
    mpiexec -n 1 python tools/bench_distributed.py ddp   # one rank, plain training
    mpiexec -n 2 python tools/bench_distributed.py ddp   # DDP, overlapped and not

allreduce: for each size, ember and torch calls alternate in one run (a barrier
before each); rank 0 prints the median. torch is optional (skipped if missing).
ddp: median step time of an MLP (same per-rank batch)."""
from __future__ import annotations

import statistics
import sys
import time

import numpy as np

import ember
import ember.distributed as dist


def _median_ms(ts):
    return statistics.median(ts) * 1e3


def allreduce(reps: int = 30) -> None:
    dist.init_process_group("mpi")
    r, n = dist.get_rank(), dist.get_world_size()
    try:
        import torch
        import torch.distributed as tdist

        tdist.init_process_group("gloo", init_method="tcp://127.0.0.1:29533", rank=r,
                                 world_size=n)
    except ImportError:
        torch = None
    for numel in (1, 1 << 20, 1 << 24):
        e = ember.ones(numel)
        t = torch.ones(numel) if torch is not None else None
        te, tt = [], []
        for i in range(reps + 3):
            dist.barrier()
            t0 = time.perf_counter()
            dist.all_reduce(e)
            dt = time.perf_counter() - t0
            if i >= 3:
                te.append(dt)
            if t is not None:
                tdist.barrier()
                t0 = time.perf_counter()
                tdist.all_reduce(t)
                dt = time.perf_counter() - t0
                if i >= 3:
                    tt.append(dt)
        if r == 0:
            mb = numel * 4 / 2**20
            line = f"all_reduce {numel} float32 ({mb:g} MiB), {n} ranks: ember/MPI " \
                   f"{_median_ms(te):.2f} ms ({mb / 1024 / statistics.median(te):.2f} GiB/s)"
            if tt:
                line += f", torch/gloo {_median_ms(tt):.2f} ms " \
                        f"({mb / 1024 / statistics.median(tt):.2f} GiB/s)"
            print(line, flush=True)
    if torch is not None:
        tdist.destroy_process_group()
    dist.destroy_process_group()


def ddp(steps: int = 30) -> None:
    from ember import nn
    from ember.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("mpi")
    r, n = dist.get_rank(), dist.get_world_size()
    rng = np.random.default_rng(r)
    x = ember.tensor(rng.standard_normal((64, 512)).astype(np.float32))
    y = ember.tensor(rng.standard_normal((64, 10)).astype(np.float32))

    def net():
        ember.manual_seed(0)
        return nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                             nn.Linear(1024, 512), nn.ReLU(), nn.Linear(512, 10))

    def sync_after_backward(model):
        # the no-overlap baseline: all gradients in one all_reduce after backward
        grads = [p.grad for p in model.parameters()]
        flat = ember.cat([g.reshape(-1) for g in grads]).div_(n)
        dist.all_reduce(flat)
        off = 0
        for g in grads:
            g.copy_(flat[off:off + g.numel()].view(g.shape))
            off += g.numel()

    configs = [("plain", False)] if n == 1 else [("DDP (bucketed, overlapped)", True),
                                                 ("backward, then one all_reduce", False)]
    for name, use_ddp in configs:
        model = DDP(net()) if use_ddp else net()
        opt = ember.optim.SGD(model.parameters(), lr=0.01)
        ts = []
        for i in range(steps + 3):
            dist.barrier()
            t0 = time.perf_counter()
            opt.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            if n > 1 and not use_ddp:
                sync_after_backward(model)
            opt.step()
            if i >= 3:
                ts.append(time.perf_counter() - t0)
        if r == 0:
            nparams = sum(p.numel() for p in model.parameters())
            print(f"{name}: {n} rank(s), batch 64 per rank, {nparams} parameters: step "
                  f"{_median_ms(ts):.1f} ms (median of {steps})", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    {"allreduce": allreduce, "ddp": ddp}[sys.argv[1]]()
