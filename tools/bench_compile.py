"""ember.compile (generated C) vs eager ember vs torch.compile / torch eager.

    .venv/bin/python tools/bench_compile.py            # steady state, medians
    .venv/bin/python tools/bench_compile.py --first    # first call in fresh processes
    .venv/bin/python tools/bench_compile.py --train    # training steps (MLP, transformer)
    .venv/bin/python tools/bench_compile.py --train-mem    # their peak memory (live, cached)
    .venv/bin/python tools/bench_compile.py --alternate --threads 1   # one process

``--alternate`` runs ember and torch in one process and alternates their calls
(one ember call, one torch call, ...), so both see the same machine load; it
reports medians of the steady state, the training steps and the per-call
overhead.

Each library runs in its own process (two OpenMP runtimes in one process slow
each other down).  ``--first`` times the
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


def _best(fn, reps):
    """The fastest of ``reps`` calls: on a shared machine the median mostly measures the
    other tenants, the minimum the code."""
    fn()
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _median(fn, reps):
    fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def _steady_lib(name: str, reps: int, threads: int, best: bool) -> None:
    """One library's eager and compiled times (ms) per case, printed one case a line."""
    lib = __import__(name)
    if threads:
        lib.set_num_threads(threads)
    _time = _best if best else _median
    for case, fn, shape in _CASES:
        x = lib.randn(*shape)
        f = fn or (lambda t: layer_norm(t, lib.nn.functional))
        comp = lib.compile(f)
        comp(x)
        comp(x)
        print(case.replace(" ", "_"), _time(lambda: f(x), reps) * 1e3,
              _time(lambda: comp(x), reps) * 1e3)
    if name == "ember":
        x = lib.randn(16)
        ec = lib.compile(chain)
        ro = lib.compile(chain, mode="reduce-overhead")
        ec(x)
        ro(x)
        print("overhead", _time(lambda: ec(x), 2000) * 1e6, _time(lambda: ro(x), 2000) * 1e6,
              _time(lambda: chain(x), 2000) * 1e6)


_CASES = [("chain 4M", chain, (4 * 1024 * 1024,)),
          ("softmax 4096x4096", softmax, (4096, 4096)),
          ("layer_norm 4096x4096", None, (4096, 4096))]


def steady(reps: int, threads: int = 0, best: bool = False) -> None:
    """Steady-state times, each library in its own process (two OpenMP runtimes in one
    process slow each other down)."""
    rows: dict = {}
    overhead = None
    for name in ("ember", "torch"):
        r = subprocess.run([sys.executable, __file__, "--steady-lib", name, "--reps", str(reps),
                            "--threads", str(threads)] + (["--best"] if best else []),
                           capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ROOT})
        if r.returncode != 0:
            print(f"  {name} failed: {r.stderr[-500:]}")
        for line in r.stdout.splitlines():
            parts = line.split()
            if parts[0] == "overhead":
                overhead = [float(v) for v in parts[1:]]
            else:
                rows.setdefault(parts[0].replace("_", " "), {})[name] = (float(parts[1]),
                                                                          float(parts[2]))
    print(f"{'case':24s} {'ember eager':>12s} {'ember comp':>12s} {'torch eager':>12s} "
          f"{'torch.comp':>12s} {'comp/torch.comp':>16s}")
    nan = (float("nan"), float("nan"))
    for case, r in rows.items():
        (ee, ec), (te, tc) = r.get("ember", nan), r.get("torch", nan)
        print(f"{case:24s} " + " ".join(f"{t:10.2f}ms" for t in (ee, ec, te, tc))
              + f" {ec / tc:16.2f}")
    if overhead:
        print(f"per-call overhead (chain on 16 floats): ember compiled {overhead[0]:.1f} us, "
              f"reduce-overhead {overhead[1]:.1f} us, eager {overhead[2]:.1f} us")


def _train_models(lib: object, kind: str) -> tuple:
    nn = lib.nn
    lib.manual_seed(0)
    if kind == "mlp":
        # the asv nn_training shape: 784-256-256-10, Adam, batch 64
        model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                              nn.Linear(256, 10))
        return model, lib.optim.Adam(model.parameters(), lr=1e-3), (64, 784)
    # a transformer block: embedding 128, 4 heads, sequence 64, batch 16
    model = nn.Sequential(nn.TransformerEncoderLayer(128, 4, dim_feedforward=512, dropout=0.0,
                                                     batch_first=True))
    model.head = nn.Linear(128, 10)
    return model, lib.optim.Adam(model.parameters(), lr=1e-3), (16, 64, 128)


def _train_step_fn(lib: object, model: object) -> object:
    F = lib.nn.functional
    if isinstance(model[0], lib.nn.Linear):
        return lambda x, y: F.cross_entropy(model(x), y)
    return lambda x, y: F.cross_entropy(model.head(model[0](x).mean(1)), y)


def _train_lib(name: str, reps: int, threads: int) -> None:
    """One library's eager and compiled step times (ms), printed as two numbers."""
    import numpy as np
    lib = __import__(name)
    if threads:
        lib.set_num_threads(threads)
    for kind in ("mlp", "transformer"):
        model, opt, shape = _train_models(lib, kind)
        rng = np.random.default_rng(0)
        x = lib.from_numpy(rng.standard_normal(shape, dtype=np.float32))
        y = lib.from_numpy(rng.integers(0, 10, size=(shape[0],)).astype(np.int64))
        loss_fn = _train_step_fn(lib, model)
        times = []
        for fn in (loss_fn, lib.compile(loss_fn)):
            def step(fn: object = fn) -> None:
                opt.zero_grad()
                fn(x, y).backward()
                opt.step()
            for _ in range(5):
                step()
            times.append(_best(step, reps) * 1e3)
        if name == "ember":
            # the whole step compiled (zero_grad, forward, backward and the update)
            whole = lib.compile(_whole_step(loss_fn, opt))
            for _ in range(5):
                whole(x, y)
            times.append(_best(lambda: whole(x, y), reps) * 1e3)
        print(kind, *times)


def _whole_step(loss_fn: object, opt: object) -> object:
    def step(x: object, y: object) -> object:
        opt.zero_grad()
        loss = loss_fn(x, y)
        loss.backward()
        opt.step()
        return loss
    return step


def _train_peak(kind: str, compiled: bool) -> None:
    """Peak resident memory a step adds above the steady state (MB), batch x4: the
    allocator cache is emptied and the kernel's high-water mark reset first."""
    import gc

    import ember
    from ember._C import core
    model, opt, shape = _train_models(ember, kind)
    shape = (shape[0] * 4,) + shape[1:]
    x = ember.randn(*shape)
    y = ember.randint(0, 10, (shape[0],))
    fn = _train_step_fn(ember, model)
    fn = ember.compile(fn) if compiled else fn

    def step() -> None:
        opt.zero_grad()
        fn(x, y).backward()
        opt.step()

    def status(field: str) -> float:
        with open("/proc/self/status") as f:
            return next(int(ln.split()[1]) for ln in f if ln.startswith(field)) / 1024

    for _ in range(4):
        step()
    gc.collect()
    core._empty_cache()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    base = status("VmRSS")
    for _ in range(3):
        step()
    print(f"{status('VmHWM') - base:.1f}")


# the peak of live tensors: ember's block cache off, and glibc giving freed blocks
# back at once, so the resident high-water mark follows what is allocated
_LIVE = {"EMBER_CACHE_MB": "0", "MALLOC_MMAP_THRESHOLD_": "65536", "MALLOC_TRIM_THRESHOLD_": "0"}


def train_memory() -> None:
    for label, extra in (("live tensors", _LIVE), ("with ember's block cache", {})):
        for kind in ("mlp", "transformer"):
            row = []
            for compiled in (False, True):
                r = subprocess.run([sys.executable, __file__, "--train-peak", kind,
                                    str(int(compiled))], capture_output=True, text=True,
                                   env={**os.environ, "PYTHONPATH": ROOT, **extra})
                row.append(r.stdout.strip() or "failed")
            print(f"{kind:12s} step peak above steady state (batch x4, {label}): eager "
                  f"{row[0]} MB, compiled {row[1]} MB")


def train(reps: int, threads: int) -> None:
    """Training steps (zero_grad, forward, loss, backward, Adam step), best of ``reps``,
    each library in its own process (two OpenMP runtimes in one process slow each other):
    the loss function compiled, and for ember the whole step compiled too ("whole
    step": its update is generated code)."""
    rows: dict = {}
    for name in ("ember", "torch"):
        r = subprocess.run([sys.executable, __file__, "--train-lib", name, "--reps", str(reps),
                            "--threads", str(threads)],
                           capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ROOT})
        if r.returncode != 0:
            print(f"  {name} failed: {r.stderr[-500:]}")
        for line in r.stdout.splitlines():
            kind, *ts = line.split()
            rows.setdefault(kind, {})[name] = tuple(float(t) for t in ts)
    print(f"{'training step':14s} {'ember eager':>12s} {'ember comp':>12s} {'torch eager':>12s} "
          f"{'torch.comp':>12s} {'comp/eager':>11s} {'comp/t.eager':>13s} {'comp/t.comp':>12s}")
    nan = (float("nan"),) * 3
    for kind, r in rows.items():
        (ee, ec, ew), (te, tc) = (r.get("ember", nan) + nan)[:3], r.get("torch", nan)[:2]
        print(f"{kind:14s} " + " ".join(f"{t:10.2f}ms" for t in (ee, ec, te, tc))
              + f" {ec / ee:11.2f} {ec / te:13.2f} {ec / tc:12.2f}")
        print(f"{'  whole step':14s} {'':12s} {ew:10.2f}ms {'':25s} {ew / ee:11.2f} "
              f"{ew / te:13.2f} {ew / tc:12.2f}")


_FIRST = {
    "ember": ("import time; t0 = time.perf_counter(); import ember\n"
              "x = ember.randn(4 * 1024 * 1024)\n"
              "f = ember.compile(lambda x: (x.sin() * 2 + x.cos()).relu() * x.sigmoid())\n"
              "t1 = time.perf_counter(); f(x); print(time.perf_counter() - t1)\n"),
    "torch": ("import time, torch\n"
              "x = torch.randn(4 * 1024 * 1024)\n"
              "f = torch.compile(lambda x: (x.sin() * 2 + x.cos()).relu() * x.sigmoid())\n"
              "t1 = time.perf_counter(); f(x); print(time.perf_counter() - t1)\n"),
}


def _alternating(fns: list, reps: int, best: bool = False) -> list:
    """Median (``best``: minimum) time of each callable, calling them in turn ``reps``
    times."""
    for f in fns:
        f()
        f()
    ts: list = [[] for _ in fns]
    for _ in range(reps):
        for i, f in enumerate(fns):
            t0 = time.perf_counter()
            f()
            ts[i].append(time.perf_counter() - t0)
    return [min(t) if best else statistics.median(t) for t in ts]


def alternate(reps: int, threads: int, best: bool = False) -> None:
    """Steady state, training steps and per-call overhead, ember and torch in one process,
    calls alternating, medians or (``best``) minima (ms; overhead in us)."""
    import numpy as np
    import torch

    import ember
    if threads:
        ember.set_num_threads(threads)
        torch.set_num_threads(threads)
    print(f"{'case':24s} {'ember comp':>11s} {'torch.comp':>11s} {'ratio':>7s}")
    for case, fn, shape in _CASES:
        fns = []
        for lib in (ember, torch):
            x = lib.from_numpy(np.random.default_rng(0).standard_normal(shape,
                                                                      dtype=np.float32))
            f = lib.compile(fn or (lambda t, F=lib.nn.functional: layer_norm(t, F)))
            fns.append(lambda f=f, x=x: f(x))
        e, t = _alternating(fns, reps, best)
        print(f"{case:24s} {e * 1e3:9.2f}ms {t * 1e3:9.2f}ms {e / t:7.2f}")
    print(f"{'training step':24s} {'ember comp':>11s} {'torch eager':>11s} {'ratio':>7s} "
          f"{'torch.comp':>11s} {'ratio':>7s}")
    for kind in ("mlp", "transformer"):
        fns = []
        for lib in (ember, torch):
            model, opt, shape = _train_models(lib, kind)
            rng = np.random.default_rng(0)
            x = lib.from_numpy(rng.standard_normal(shape, dtype=np.float32))
            y = lib.from_numpy(rng.integers(0, 10, size=(shape[0],)).astype(np.int64))
            loss_fn = _train_step_fn(lib, model)
            for fn in ((lib.compile(loss_fn),) if lib is ember else
                       (loss_fn, lib.compile(loss_fn))):
                def step(fn=fn, opt=opt, x=x, y=y) -> None:
                    opt.zero_grad()
                    fn(x, y).backward()
                    opt.step()
                for _ in range(3):
                    step()
                fns.append(step)
        e, te, tc = _alternating(fns, reps, best)
        print(f"{kind:24s} {e * 1e3:9.2f}ms {te * 1e3:9.2f}ms {e / te:7.2f} "
              f"{tc * 1e3:9.2f}ms {e / tc:7.2f}")
    fns = []
    for lib in (ember, torch):
        x = lib.randn(16)
        for mode in ("default", "reduce-overhead"):
            f = lib.compile(chain, mode=mode)
            fns.append(lambda f=f, x=x: f(x))
    r = _alternating(fns, max(reps, 2000), best)
    print("per-call overhead (chain on 16 floats, us): ember default %.2f, reduce-overhead "
          "%.2f; torch.compile default %.2f, reduce-overhead %.2f" % tuple(t * 1e6 for t in r))


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
    p.add_argument("--train", action="store_true", help="time training steps")
    p.add_argument("--alternate", action="store_true",
                   help="ember and torch in one process, calls alternating, medians")
    p.add_argument("--train-lib", help=argparse.SUPPRESS)
    p.add_argument("--steady-lib", help=argparse.SUPPRESS)
    p.add_argument("--train-mem", action="store_true",
                   help="peak memory of a training step, eager vs compiled (Linux)")
    p.add_argument("--train-peak", nargs=2, help=argparse.SUPPRESS)
    p.add_argument("--reps", type=int, default=15)
    p.add_argument("--best", action="store_true",
                   help="steady state and --alternate: best of the repetitions instead of "
                        "the median")
    p.add_argument("--threads", type=int, default=0,
                   help="thread count for both libraries (0: their default)")
    a = p.parse_args()
    if a.first:
        first_call()
    elif a.alternate:
        alternate(a.reps, a.threads, a.best)
    elif a.steady_lib:
        _steady_lib(a.steady_lib, a.reps, a.threads, a.best)
    elif a.train_peak:
        _train_peak(a.train_peak[0], a.train_peak[1] == "1")
    elif a.train_mem:
        train_memory()
    elif a.train_lib:
        _train_lib(a.train_lib, a.reps, a.threads)
    elif a.train:
        train(a.reps, a.threads)
    else:
        steady(a.reps, a.threads, a.best)


if __name__ == "__main__":
    main()
