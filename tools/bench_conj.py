"""Lazy conjugation figures: ``x.conj()`` of 1M complex64 beside PyTorch (calls
alternating, medians), and conj-then-matmul with the lazy bit beside the materialised
conjugate (ember's behaviour before the bit); both libraries on the same thread count.

    .venv/bin/python tools/bench_conj.py [threads]
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench_numerics import _time  # noqa: E402  (tools/ is the script's own folder)

import ember  # noqa: E402


def _batched(fn, n):
    def run():
        for _ in range(n):
            fn()
    return run


def main(threads: int = 1, reps: int = 15) -> None:
    import torch

    torch.set_num_threads(threads)
    ember.set_num_threads(threads)
    rng = np.random.default_rng(0)

    def c64(*shape):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)

    a = c64(1 << 20)
    e, t = ember.tensor(a), torch.tensor(a)
    n = 2000
    me, mt = _time(_batched(e.conj, n), _batched(t.conj, n), reps)
    print(f"x.conj(), 1M complex64: ember {me / n * 1e9:.0f} ns, torch {mt / n * 1e9:.0f} ns")
    y, ty = e.conj(), t.conj()
    me, mt = _time(y.resolve_conj, ty.resolve_conj, reps)
    print(f"resolve_conj, 1M complex64: ember {me * 1e3:.2f} ms, torch {mt * 1e3:.2f} ms")
    for k in (64, 256):
        em = ember.tensor(c64(k, k))
        calls = max(1, (256 // k) ** 2)
        cases = [("x.conj() @ y", lambda: em.conj() @ em, lambda: em.conj_physical() @ em),
                 ("x @ y.mH", lambda: em @ em.mH, lambda: em @ em.mT.conj_physical())]
        for name, lazy, mat in cases:
            ml, mm = _time(_batched(lazy, calls), _batched(mat, calls), reps)
            print(f"{name}, {k}x{k} complex64: lazy {ml / calls * 1e6:.0f} us, materialised "
                  f"{mm / calls * 1e6:.0f} us")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
