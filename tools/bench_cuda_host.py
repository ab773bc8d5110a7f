"""Host-side cost of ember's CUDA ops, measurable without a GPU: the CUDA backend
is replaced by one whose entry points return at once (memory is never touched),
so what is timed is ember's Python dispatch, descriptor building and allocator
calls per op -- the part that bounds small-op training on a real GPU.

    .venv/bin/python tools/bench_cuda_host.py            # per-op table + MLP step

Real ctypes calls cost somewhat more than these Python no-ops (argument
conversion), so on a device the figures are lower bounds of the host time.
"""
from __future__ import annotations

import os
import sys
import timeit
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import ember  # noqa: E402
from ember.cuda import _kernels  # noqa: E402


def _obj(x: Any) -> Any:
    return x._obj if hasattr(x, "_obj") else x


class _NoOpLib:
    """Every ``emc_*`` / ``cuda*`` entry point succeeds without doing anything;
    malloc hands out fresh addresses that nothing dereferences."""

    def __init__(self) -> None:
        self.top = 1 << 40

    def emc_malloc(self, p: Any, n: Any, stream: Any) -> int:
        n = _obj(n)
        n = int(n.value if hasattr(n, "value") else n)
        _obj(p).value = self.top
        self.top += (max(n, 1) + 511) // 512 * 512
        return 0

    def emc_last_error(self) -> bytes:
        return b""

    def cudaGetDeviceCount(self, p: Any) -> int:
        _obj(p).value = 1
        return 0

    def __getattr__(self, name: str) -> Any:
        if name.startswith(("emc_", "cuda")):
            return _ok
        raise AttributeError(name)


def _ok(*args: Any) -> int:
    return 0


def _best_us(fn: Any, number: int) -> float:
    """Best of 9 batches: host cost, with a busy machine's interruptions left out."""
    fn()
    return min(timeit.repeat(fn, number=number, repeat=9)) / number * 1e6


def main() -> None:
    _kernels.install(_NoOpLib(), _NoOpLib())
    dev = "cuda"
    a, b = ember.empty(64, 256, device=dev), ember.empty(64, 256, device=dev)
    w = ember.empty(256, 256, device=dev)
    col = ember.empty(64, 1, device=dev)
    rows = [("a + b", lambda: a + b), ("a * 2.0", lambda: a * 2.0),
            ("a + col (broadcast)", lambda: a + col), ("a.relu()", lambda: a.relu()),
            ("a.exp()", lambda: a.exp()), ("a @ w", lambda: a @ w),
            ("a.sum(1)", lambda: a.sum(1)), ("a.t().contiguous()", lambda: a.t().contiguous()),
            ("ember.empty", lambda: ember.empty(64, 256, device=dev))]
    print("host time per CUDA op, no-op backend (best of 9 batches, us)")
    for name, fn in rows:
        print(f"  {name:22s} {_best_us(fn, 2000):7.2f}")
    model = ember.nn.Sequential(ember.nn.Linear(256, 256), ember.nn.ReLU(),
                                ember.nn.Linear(256, 10)).to(dev)
    opt = ember.optim.Adam(model.parameters(), lr=1e-3)
    x = ember.empty(64, 256, device=dev)
    y = ember.zeros(64, dtype=ember.int64, device=dev)
    lossf = ember.nn.CrossEntropyLoss()

    def step() -> None:
        opt.zero_grad()
        lossf(model(x), y).backward()
        opt.step()

    print(f"  {'MLP step (fwd+bwd+Adam)':22s} {_best_us(step, 200):7.2f}")


if __name__ == "__main__":
    main()
