"""Numerics figures: FFT, special functions, samplers and small batched linalg, ember
beside PyTorch in one process, calls alternating, medians; both libraries on the same
thread count.

    .venv/bin/python tools/bench_numerics.py [--threads N] [--only fft,special,...]
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ember  # noqa: E402
from ember._C import random as _erandom  # noqa: E402


def _time(fe, ft, reps):
    fe()
    ft()
    te, tt = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        fe()
        t1 = time.perf_counter()
        ft()
        t2 = time.perf_counter()
        te.append(t1 - t0)
        tt.append(t2 - t1)
    return statistics.median(te), statistics.median(tt)


def _cases(torch, rng, want):
    def pair(x):
        return ember.tensor(x), torch.tensor(x)

    def c64(shape):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)

    if want("fft"):
        yield from _fft(torch, pair, c64, rng)
    if want("special"):
        yield from _special(torch, pair, rng)
    if want("samplers"):
        yield from _samplers(torch, pair, rng)
    if want("linalg"):
        yield from _linalg(torch, pair, rng)


def _fft(torch, pair, c64, rng):
    e, t = pair(rng.standard_normal(1 << 20).astype(np.float32))
    yield "fft", "rfft 2^20 float32", lambda: ember.fft.rfft(e), lambda: torch.fft.rfft(t), 15
    e2, t2 = pair(c64((1024, 1024)))
    yield "fft", "fft2 1024x1024 complex64", lambda: ember.fft.fft2(e2), \
        lambda: torch.fft.fft2(t2), 15
    e3, t3 = pair(c64((512, 512)))
    yield "fft", "fft2 512x512 complex64", lambda: ember.fft.fft2(e3), \
        lambda: torch.fft.fft2(t3), 31
    e4, t4 = pair(c64((256, 4096)))
    yield "fft", "fft 4096 x batch 256 complex64", lambda: ember.fft.fft(e4), \
        lambda: torch.fft.fft(t4), 15
    e5, t5 = pair(c64(1 << 20).astype(np.complex128))
    yield "fft", "fft 2^20 complex128", lambda: ember.fft.fft(e5), lambda: torch.fft.fft(t5), 15
    e6, t6 = pair(rng.standard_normal(1 << 20))
    yield "fft", "rfft 2^20 float64", lambda: ember.fft.rfft(e6), lambda: torch.fft.rfft(t6), 15
    e7, t7 = pair(c64((512, 512)).astype(np.complex128))
    yield "fft", "fft2 512x512 complex128", lambda: ember.fft.fft2(e7), \
        lambda: torch.fft.fft2(t7), 15


def _special(torch, pair, rng):
    n = 1 << 24
    e5, t5 = pair(rng.uniform(-1, 1, n).astype(np.float32))
    yield "special", "special.erfinv 16M float32", lambda: ember.special.erfinv(e5), \
        lambda: torch.special.erfinv(t5), 7
    e6, t6 = pair(rng.uniform(0, 50, n).astype(np.float32))
    yield "special", "special.gammaln 16M float32", lambda: ember.special.gammaln(e6), \
        lambda: torch.special.gammaln(t6), 7


def _samplers(torch, pair, rng):
    m = 1 << 20
    for name, lo, hi in (("gamma", 0.2, 10.0), ("poisson", 0.5, 40.0)):
        e7, t7 = pair(rng.uniform(lo, hi, m).astype(np.float32))
        if name == "gamma":
            fe = lambda a=e7: _erandom._standard_gamma(a)  # noqa: E731
            ft = lambda a=t7: torch._standard_gamma(a)  # noqa: E731
        else:
            fe, ft = (lambda a=e7: ember.poisson(a)), (lambda a=t7: torch.poisson(a))
        yield "samplers", f"{name} 2^20 float32", fe, ft, 9
    ec, tc = pair(rng.integers(1, 100, m).astype(np.float32))
    ep, tp = pair(rng.uniform(0, 1, m).astype(np.float32))
    yield "samplers", "binomial 2^20 float32", lambda: ember.binomial(ec, ep), \
        lambda: torch.binomial(tc, tp), 9
    E, T = ember.distributions, torch.distributions
    c, r = pair(rng.uniform(0.2, 10, m).astype(np.float32)), pair(rng.uniform(0.5, 2, m)
                                                                   .astype(np.float32))
    c8 = pair(rng.uniform(0.2, 10, (m // 8, 8)).astype(np.float32))
    lam = pair(rng.uniform(0.5, 40.0, m).astype(np.float32))
    dists = [("Gamma", lambda M, i: M.Gamma(c[i], r[i])),
             ("Beta", lambda M, i: M.Beta(c[i], r[i])),
             ("Chi2", lambda M, i: M.Chi2(c[i])),
             ("Dirichlet 2^17x8", lambda M, i: M.Dirichlet(c8[i])),
             ("Poisson", lambda M, i: M.Poisson(lam[i])),
             ("Binomial", lambda M, i: M.Binomial((ec, tc)[i], probs=(ep, tp)[i]))]
    for name, make in dists:
        de, dt = make(E, 0), make(T, 1)
        yield "samplers", f"distributions.{name}.sample 2^20", de.sample, dt.sample, 9
    en, tn = ember.empty(m), torch.empty(m)
    yield "samplers", "normal_ 2^20 float32", lambda: en.normal_(), lambda: tn.normal_(), 15
    yield "samplers", "exponential_ 2^20 float32", lambda: en.exponential_(), \
        lambda: tn.exponential_(), 15


def _linalg(torch, pair, rng):
    a = rng.standard_normal((10000, 3, 3)) + 3 * np.eye(3)
    spd = a @ a.transpose(0, 2, 1) + np.eye(3)
    b = rng.standard_normal((10000, 3, 1))
    ea, ta = pair(a)
    es, ts = pair(spd)
    eb, tb = pair(b)
    yield "linalg", "inv 10000 x 3x3 float64", lambda: ember.linalg.inv(ea), \
        lambda: torch.linalg.inv(ta), 15
    yield "linalg", "solve 10000 x 3x3 float64", lambda: ember.linalg.solve(ea, eb), \
        lambda: torch.linalg.solve(ta, tb), 15
    yield "linalg", "det 10000 x 3x3 float64", lambda: ember.linalg.det(ea), \
        lambda: torch.linalg.det(ta), 15
    yield "linalg", "cholesky 10000 x 3x3 float64", lambda: ember.linalg.cholesky(es), \
        lambda: torch.linalg.cholesky(ts), 15
    # small batches: (1000, 4, 4) and (100, 16, 16) in both real dtypes
    for batch, n in ((1000, 4), (100, 16)):
        for dt in (np.float32, np.float64):
            m = (rng.standard_normal((batch, n, n)) + 3 * np.eye(n)).astype(dt)
            ea, ta = pair(m)
            es, ts = pair((m @ m.transpose(0, 2, 1) + np.eye(n, dtype=dt)).astype(dt))
            eb, tb = pair(rng.standard_normal((batch, n, 1)).astype(dt))
            tag = f"({batch},{n},{n}) {np.dtype(dt).name}"
            for op in ("inv", "det", "cholesky", "eigh", "svd"):
                x, tx = (es, ts) if op in ("cholesky", "eigh") else (ea, ta)
                yield "linalg", f"{op} {tag}", \
                    (lambda f=getattr(ember.linalg, op), x=x: f(x)), \
                    (lambda f=getattr(torch.linalg, op), x=tx: f(x)), 31
            yield "linalg", f"solve {tag}", (lambda a=ea, b=eb: ember.linalg.solve(a, b)), \
                (lambda a=ta, b=tb: torch.linalg.solve(a, b)), 31


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--only", default="", help="comma-separated groups: fft,special,"
                    "samplers,linalg")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    ember.set_num_threads(args.threads)
    only = {g for g in args.only.split(",") if g}
    rng = np.random.default_rng(0)
    print(f"{args.threads} thread(s), medians; ratio = ember / torch")
    for group, name, fe, ft, reps in _cases(torch, rng, lambda g: not only or g in only):
        me, mt = _time(fe, ft, reps)
        print(f"{name:34s} ember {me * 1e3:9.3f} ms  torch {mt * 1e3:9.3f} ms  "
              f"ratio {me / mt:5.2f}", flush=True)


if __name__ == "__main__":
    main()
