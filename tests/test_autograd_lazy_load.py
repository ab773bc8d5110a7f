"""The backward formulas load lazily on the first backward: threads whose first
backward starts at the same moment must all find every formula."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_SCRIPT = r"""
import sys
import threading
import time
import types

sys.setswitchinterval(1e-6)   # switch threads often
import ember
from ember.autograd import _table

assert not _table._loaded[0]  # the table is still cold here
_import = _table.importlib.import_module


def slow_import(name, *args):
    time.sleep(0.01)          # a slow (cold-cache) import widens the race window
    return _import(name, *args)


_table.importlib = types.SimpleNamespace(import_module=slow_import)
N = 16
barrier = threading.Barrier(N)
errors = []
grads = [None] * N


def work(i):
    x = ember.arange(1.0, 5.0, requires_grad=True)
    barrier.wait()
    try:
        y = [x.mean(), (x * x).sum(), x.exp().sum(), x.sin().mean()][i % 4]
        y.backward()
        grads[i] = x.grad.tolist()
    except Exception as e:
        errors.append(f"{type(e).__name__}: {e}")


ts = [threading.Thread(target=work, args=(i,)) for i in range(N)]
for t in ts:
    t.start()
for t in ts:
    t.join()
assert not errors, errors
print(grads)
"""


def test_first_backward_in_many_threads_at_once():
    import math

    expect = [
        [0.25] * 4,
        [2.0, 4.0, 6.0, 8.0],
        [math.exp(v) for v in (1.0, 2.0, 3.0, 4.0)],
        [math.cos(v) / 4 for v in (1.0, 2.0, 3.0, 4.0)],
    ]
    # each run is a fresh interpreter (the table starts unloaded); run them side by side
    procs = [subprocess.Popen([sys.executable, "-c", _SCRIPT], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=ROOT) for _ in range(3)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-2000:]
        grads = eval(out.strip().splitlines()[-1])
        for i, g in enumerate(grads):
            assert all(abs(a - b) < 1e-5 for a, b in zip(g, expect[i % 4])), (i, g)
