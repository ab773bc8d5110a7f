"""ember.compile (generated C) vs eager ember vs torch.compile / torch eager.

    .venv/bin/python tools/bench_compile.py            # steady state, medians
    .venv/bin/python tools/bench_compile.py --first    # first call in fresh processes

Steady state alternates the contenders in one process.  ``--first`` times the
first compiled call in a new process, with an empty and then a warm cache
(EMBER_CACHE_DIR / TORCHINDUCTOR_CACHE_DIR in a temporary directory).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def chain(x):
    return (x.sin() * 2 + x.cos()).relu() * x.sigmoid()


def softmax(x):
    return x.softmax(-1)


def layer_norm(x, F):
    return F.layer_norm(x, (x.shape[-1],))


def _median(fn, reps):
    fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def steady(reps: int) -> None:
    import ember
    try:
        import torch
    except ImportError:
        torch = None
    cases = [("chain 4M", chain, (4 * 1024 * 1024,)),
             ("softmax 4096x4096", softmax, (4096, 4096)),
             ("layer_norm 4096x4096", None, (4096, 4096))]
    print(f"{'case':24s} {'ember eager':>12s} {'ember comp':>12s} {'torch eager':>12s} "
          f"{'torch.comp':>12s} {'comp/torch.comp':>16s}")
    for name, fn, shape in cases:
        ex = ember.randn(*shape)
        efn = fn or (lambda x: layer_norm(x, ember.nn.functional))
        ec = ember.compile(efn)
        ec(ex)
        ec(ex)
        row = [_median(lambda: efn(ex), reps), _median(lambda: ec(ex), reps)]
        if torch is not None:
            tx = torch.from_numpy(ex.numpy())
            tfn = fn or (lambda x: layer_norm(x, torch.nn.functional))
            row.append(_median(lambda: tfn(tx), reps))
            try:
                tc = torch.compile(tfn)
                tc(tx)
                row.append(_median(lambda: tc(tx), reps))
            except Exception as e:  # noqa: BLE001 - report and go on
                print(f"  torch.compile failed: {type(e).__name__}: {e}")
                row.append(float("nan"))
        else:
            row += [float("nan")] * 2
        ratio = row[1] / row[3] if row[3] == row[3] else float("nan")
        print(f"{name:24s} " + " ".join(f"{t * 1e3:10.2f}ms" for t in row) + f" {ratio:16.2f}")
    ex = ember.randn(16)
    ec = ember.compile(chain)
    ec(ex)
    print(f"per-call overhead (chain on 16 floats): ember compiled "
          f"{_median(lambda: ec(ex), 2000) * 1e6:.1f} us, eager "
          f"{_median(lambda: chain(ex), 2000) * 1e6:.1f} us")


_FIRST = {
    "ember": ("import time; t0 = time.perf_counter(); import ember\n"
              "x = ember.randn(4 * 1024 * 1024)\n"
              "f = ember.compile(lambda x: (x.sin() * 2 + x.cos()).relu() * x.sigmoid())\n"
              "t1 = time.perf_counter(); f(x); f(x); print(time.perf_counter() - t1)\n"),
    "torch": ("import time, torch\n"
              "x = torch.randn(4 * 1024 * 1024)\n"
              "f = torch.compile(lambda x: (x.sin() * 2 + x.cos()).relu() * x.sigmoid())\n"
              "t1 = time.perf_counter(); f(x); print(time.perf_counter() - t1)\n"),
}


def first_call() -> None:
    for lib, code in _FIRST.items():
        with tempfile.TemporaryDirectory() as d:
            env = {**os.environ, "EMBER_CACHE_DIR": d, "TORCHINDUCTOR_CACHE_DIR": d,
                   "PYTHONPATH": ROOT}
            for label in ("empty cache", "warm cache"):
                r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                                   text=True)
                t = r.stdout.strip().splitlines()[-1] if r.returncode == 0 else "failed"
                print(f"{lib:6s} first call ({label}): {t} s"
                      + ("" if r.returncode == 0 else f"  {r.stderr[-300:]}"))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--first", action="store_true", help="time first calls in fresh processes")
    p.add_argument("--reps", type=int, default=15)
    a = p.parse_args()
    if a.first:
        first_call()
    else:
        steady(a.reps)


if __name__ == "__main__":
    main()
