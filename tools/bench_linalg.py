"""linalg figures: svd and eigh of 512x512 float64, ember beside PyTorch in one process,
calls alternating, medians; both libraries on the same thread count.

    .venv/bin/python tools/bench_linalg.py [threads]
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench_numerics import _time  # noqa: E402  (tools/ is the script's own folder)

import ember  # noqa: E402


def main(threads: int = 1, n: int = 512, reps: int = 11) -> None:
    import torch

    torch.set_num_threads(threads)
    ember.set_num_threads(threads)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n))
    s = a + a.T
    ea, es, ta, ts = ember.tensor(a), ember.tensor(s), torch.tensor(a), torch.tensor(s)
    cases = [("svd", lambda: ember.linalg.svd(ea), lambda: torch.linalg.svd(ta)),
             ("eigh", lambda: ember.linalg.eigh(es), lambda: torch.linalg.eigh(ts))]
    for name, fe, ft in cases:
        me, mt = _time(fe, ft, reps)
        print(f"{name} {n}x{n} float64, {threads} thread(s): ember {me * 1e3:.1f} ms, "
              f"torch {mt * 1e3:.1f} ms, ratio {me / mt:.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
