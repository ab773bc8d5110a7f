"""Issue-3 and issue-6 figures, ember beside torch in one run (medians; the
linalg figures time ember and torch in alternation).

    .venv/bin/python tools/bench_models.py linalg      # matmul, bmm, conv2d
    .venv/bin/python tools/bench_models.py train       # MLP+Adam, CNN+SGD steps
    .venv/bin/python tools/bench_models.py memory LIB MODEL   # peak RSS, one process
"""
import os
import resource
import statistics
import subprocess
import sys
import timeit

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def med(fn, number, repeat=7):
    fn()
    return statistics.median(timeit.repeat(fn, number=number, repeat=repeat)) / number


def pair(fe, ft, number, repeat=11):
    """Medians (seconds per call) of ember's and torch's fn, timed in alternation
    so that a drift in the machine's speed hits both alike."""
    fe(), ft()
    te, tt = [], []
    for _ in range(repeat):
        te.append(timeit.timeit(fe, number=number) / number)
        tt.append(timeit.timeit(ft, number=number) / number)
    return statistics.median(te), statistics.median(tt)


def linalg():
    import torch

    import ember
    F, TF = ember.nn.functional, torch.nn.functional
    for th in (1, 2):
        ember.set_num_threads(th)
        torch.set_num_threads(th)
        for s in (256, 512, 1024, 2048):
            a, b = ember.randn(s, s), ember.randn(s, s)
            ta, tb = torch.randn(s, s), torch.randn(s, s)
            n = 3 if s <= 1024 else 1
            te, tt = pair(lambda: a @ b, lambda: ta @ tb, n)
            gf = 2 * s ** 3 / 1e9
            print(f"matmul {s} thr{th}: ember {gf / te:.0f} GF/s, torch {gf / tt:.0f} GF/s")
        a, b = ember.randn(64, 128, 128), ember.randn(64, 128, 128)
        ta, tb = torch.randn(64, 128, 128), torch.randn(64, 128, 128)
        te, tt = pair(lambda: ember.bmm(a, b), lambda: torch.bmm(ta, tb), 5)
        print(f"bmm 64x128x128 thr{th}: ember {te * 1e3:.2f} ms, torch {tt * 1e3:.2f} ms")
        for ci, co, hw in ((1, 32, 28), (32, 64, 14)):
            x, w = ember.randn(64, ci, hw, hw), ember.randn(co, ci, 3, 3, requires_grad=True)
            tx, tw = torch.randn(64, ci, hw, hw), torch.randn(co, ci, 3, 3, requires_grad=True)
            xg, txg = x.detach().requires_grad_(True), tx.detach().requires_grad_(True)
            fe, ft = pair(lambda: F.conv2d(x, w.detach()), lambda: TF.conv2d(tx, tw.detach()), 5)
            be, bt = pair(lambda: F.conv2d(xg, w).sum().backward(),
                          lambda: TF.conv2d(txg, tw).sum().backward(), 3)
            print(f"conv {ci}->{co} {hw}x{hw} thr{th}: fwd {fe / ft:.2f}x torch, "
                  f"fwd+bwd {be / bt:.2f}x torch ({be * 1e3:.1f} vs {bt * 1e3:.1f} ms)")


def _model(T, model):
    nn = T.nn
    if model == "mlp":
        m = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                          nn.Linear(256, 10))
        return m, T.optim.Adam(m.parameters(), lr=1e-3), T.randn(64, 784)
    m = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3),
                      nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(1600, 128), nn.ReLU(),
                      nn.Linear(128, 10))
    # 26x26 input so that the flattened features are exactly 64*5*5 = 1600
    return m, T.optim.SGD(m.parameters(), lr=0.01, momentum=0.9), T.randn(64, 1, 26, 26)


def _step_fn(T, model):
    m, opt, x = _model(T, model)
    y, loss = T.randint(0, 10, (64,)), T.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss(m(x), y).backward()
        opt.step()
    return step


def train():
    import torch

    import ember
    for th in (1, 2):
        for model in ("mlp", "cnn"):
            times = {}
            for name, T in (("ember", ember), ("torch", torch)):
                T.set_num_threads(th)
                step = _step_fn(T, model)
                times[name] = med(step, 50 if model == "mlp" else 10)
            e, t = times["ember"], times["torch"]
            print(f"{model} step thr{th}: ember {e * 1e3:.2f} ms, torch {t * 1e3:.2f} ms "
                  f"({e / t:.2f}x)")
    for name in ("ember", "torch"):
        for model in ("mlp", "cnn"):
            subprocess.run([sys.executable, __file__, "memory", name, model], check=True)


def _hwm_kb():
    """This process's peak RSS (VmHWM, kB).  Unlike getrusage's ru_maxrss it
    starts afresh at exec, so a child started from a big parent reads its own."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def memory(lib, model):
    T = __import__(lib)
    T.set_num_threads(1)
    base = _hwm_kb()
    step = _step_fn(T, model)
    for _ in range(30):
        step()
    peak = _hwm_kb()
    print(f"{lib} {model}: peak RSS {peak / 1024:.0f} MB, of which training "
          f"{(peak - base) / 1024:.1f} MB")


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "train"
    {"linalg": linalg, "train": train}.get(what, lambda: memory(*sys.argv[2:4]))()
