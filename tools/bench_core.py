"""Issue-2 speed figures: ember beside PyTorch and NumPy in one run (medians).

    .venv/bin/python tools/bench_core.py
"""
import os
import statistics
import sys
import timeit

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ember  # noqa: E402

try:
    import torch
except ImportError:  # the torch columns are left empty
    torch = None


def med(fn, number, repeat=7):
    fn()
    return statistics.median(timeit.repeat(fn, number=number, repeat=repeat)) / number


def row(name, e, t, n):
    ts = f"{t * 1e6:10.1f}" if t else "         -"
    ns = f"{n * 1e6:10.1f}" if n else "         -"
    ratio = f"{e / t:6.2f}" if t else "     -"
    print(f"| {name:34s} | {e * 1e6:10.1f} | {ts} | {ns} | {ratio} |")


def main():
    print("| benchmark (µs, median) | ember | torch | numpy | ember/torch |")
    print("|---|---|---|---|---|")
    a, b = ember.ones(100), ember.ones(100)
    na, nb = np.ones(100, np.float32), np.ones(100, np.float32)
    ta, tb = (torch.ones(100), torch.ones(100)) if torch else (None, None)
    row("a + b, 100 float32", med(lambda: a + b, 20000),
        torch and med(lambda: ta + tb, 20000), med(lambda: na + nb, 20000))
    n = 16_000_000
    A, B, O = ember.ones(n), ember.ones(n), ember.empty(n)
    NA, NB, NO = np.ones(n, np.float32), np.ones(n, np.float32), np.empty(n, np.float32)
    TA, TB, TO = (torch.ones(n), torch.ones(n), torch.empty(n)) if torch else (None,) * 3
    for threads in (1, 2):
        ember.set_num_threads(threads)
        if torch:
            torch.set_num_threads(threads)
        sfx = f", {threads} thr"
        row("a + b, 16M, fresh output" + sfx, med(lambda: A + B, 5),
            torch and med(lambda: TA + TB, 5), med(lambda: NA + NB, 5))
        row("a + b, 16M, out=" + sfx, med(lambda: ember.add(A, B, out=O), 5),
            torch and med(lambda: torch.add(TA, TB, out=TO), 5),
            med(lambda: np.add(NA, NB, out=NO), 5))
        if hasattr(ember, "sum"):
            row("sum 16M" + sfx, med(lambda: A.sum(), 10), torch and med(lambda: TA.sum(), 10),
                med(lambda: NA.sum(), 10))
        row("exp 16M" + sfx, med(lambda: A.exp(), 5), torch and med(lambda: TA.exp(), 5),
            med(lambda: np.exp(NA), 5))
        row("relu 16M" + sfx, med(lambda: ember.relu(A), 5),
            torch and med(lambda: torch.relu(TA), 5), med(lambda: np.maximum(NA, 0), 5))
        if hasattr(ember, "softmax"):
            S = ember.ones(4096, 4096)
            TS = torch.ones(4096, 4096) if torch else None
            row("softmax 4096x4096 last dim" + sfx, med(lambda: S.softmax(-1), 3),
                torch and med(lambda: TS.softmax(-1), 3), None)
    gbs = 3 * n * 4 / med(lambda: ember.add(A, B, out=O), 5) / 1e9
    print(f"\nadd out= effective bandwidth at 2 threads: {gbs:.1f} GB/s", file=sys.stderr)


if __name__ == "__main__":
    main()
