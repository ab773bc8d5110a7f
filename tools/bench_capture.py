"""ember.compile capture figures: capture time of a 2-layer transformer block and a
ResNet-style CNN, per-call guard-check cost, and the per-call overhead of a compiled
function over the eager one, and of a function split at a value check (medians,
backend="eager").

    .venv/bin/python tools/bench_capture.py
"""
import os
import statistics
import sys
import time
import timeit

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import ember  # noqa: E402
import ember.nn.functional as F  # noqa: E402
from ember import nn  # noqa: E402


def med(fn, number, repeat=7):
    fn()
    return statistics.median(timeit.repeat(fn, number=number, repeat=repeat)) / number


def transformer():
    layer = dict(dim_feedforward=128, dropout=0.0, batch_first=True)
    return nn.TransformerEncoder(nn.TransformerEncoderLayer(64, 4, **layer), 2).eval(), \
        ember.randn(2, 16, 64)


def resnet():
    def conv_bn(i, o, s=1):
        return nn.Sequential(nn.Conv2d(i, o, 3, s, 1, bias=False), nn.BatchNorm2d(o), nn.ReLU())

    class Res(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.a = conv_bn(c, c)
            self.b = nn.Sequential(nn.Conv2d(c, c, 3, 1, 1, bias=False), nn.BatchNorm2d(c))

        def forward(self, x):
            return F.relu(x + self.b(self.a(x)))
    net = nn.Sequential(conv_bn(3, 16), Res(16), Res(16), conv_bn(16, 32, 2), Res(32), Res(32),
                        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10)).eval()
    return net, ember.randn(2, 3, 32, 32)


def main():
    x = ember.randn(4)
    f = lambda t: t + 1  # noqa: E731
    cf = ember.compile(f, backend="eager")
    te, tc = med(lambda: f(x), 20000), med(lambda: cf(x), 20000)
    print(f"tiny function: eager {te * 1e6:.2f} us, compiled {tc * 1e6:.2f} us "
          f"(overhead {(tc - te) * 1e6:.2f} us per call)")
    for name, make in (("2-layer transformer block", transformer), ("ResNet-style CNN", resnet)):
        model, inp = make()
        caps = []
        for _ in range(5):
            ember.compiler.reset()
            cm = ember.compile(model, backend="eager")
            t0 = time.perf_counter()
            cm(inp)
            caps.append(time.perf_counter() - t0 - med(lambda: model(inp), 1, 3))
        code = cm._compiled
        entry = next(iter(code.cache.values()))[0]

        def guard():
            key, leaves = code.key_of((inp,), {})
            return code.cache.get(key) and entry.failed_guard(leaves)
        tg = med(guard, 5000)
        te, tc = med(lambda: model(inp), 20), med(lambda: cm(inp), 20)
        n = len(entry.gm.graph.nodes)
        print(f"{name}: capture {statistics.median(caps) * 1e3:.1f} ms beyond one eager call "
              f"({n} nodes); guard check {tg * 1e6:.2f} us per call; eager "
              f"{te * 1e3:.3f} ms, compiled {tc * 1e3:.3f} ms per call")

    # a graph split at a value read into Python: two graphs and a check between them
    def branchy(t):
        return (t * 2).relu() if t.sum() > 0 else (t - 1).relu()
    x = ember.randn(64)
    cb = ember.compile(branchy, backend="eager")
    pos, neg = x.abs(), -x.abs()
    cb(pos), cb(neg)
    te, tc = med(lambda: branchy(pos), 20000), med(lambda: cb(pos), 20000)
    tm = med(lambda: cb(neg), 20000)
    print(f"value-checked branch (graph, check, graph): eager {te * 1e6:.2f} us, compiled "
          f"{tc * 1e6:.2f} us (first entry's check holds), {tm * 1e6:.2f} us (second entry, "
          f"resumed after the first one's check failed)")


if __name__ == "__main__":
    main()
