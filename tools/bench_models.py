"""Issue-3 and issue-6 figures, ember beside torch in one run (medians; the
linalg figures time ember and torch in alternation).

    .venv/bin/python tools/bench_models.py linalg      # matmul, bmm, conv2d
    .venv/bin/python tools/bench_models.py train       # MLP+Adam, CNN+SGD steps
    .venv/bin/python tools/bench_models.py resnet      # ResNet block step, per-op profile
    .venv/bin/python tools/bench_models.py memory LIB MODEL   # peak RSS, one process
    .venv/bin/python tools/bench_models.py ops         # fused/vectorised ops vs torch
    .venv/bin/python tools/bench_models.py sweep [N]   # every float elementwise op, N threads
    .venv/bin/python tools/bench_models.py ops64 [NAME,...]   # every float64 elementwise op
    .venv/bin/python tools/bench_models.py gpt         # GPT-style training step vs torch
    .venv/bin/python tools/bench_models.py losses      # cross-entropy variants, rms_norm
    .venv/bin/python tools/bench_models.py norms       # every normalisation, end to end
    .venv/bin/python tools/bench_models.py sdpa        # attention at L=1024: time, peak memory
    .venv/bin/python tools/bench_models.py engine      # autograd bookkeeping share of a GPT step
    .venv/bin/python tools/bench_models.py channels-last   # CNN/ResNet steps in channels_last
"""
import os
import resource
import statistics
import subprocess
import sys
import time
import timeit

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def med(fn, number, repeat=7):
    fn()
    return statistics.median(timeit.repeat(fn, number=number, repeat=repeat)) / number


def pair(fe, ft, number, repeat=11, timer=timeit.default_timer, stat=statistics.median):
    """Medians (seconds per call) of ember's and torch's fn, timed in alternation
    so that a drift in the machine's speed hits both alike."""
    fe(), ft()
    te, tt = [], []
    for _ in range(repeat):
        te.append(timeit.timeit(fe, number=number, timer=timer) / number)
        tt.append(timeit.timeit(ft, number=number, timer=timer) / number)
    return stat(te), stat(tt)


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
    if model == "resnet":
        sys.path.insert(0, os.path.join(ROOT, "asv_bench", "benchmarks"))
        from nn_training import _resnet_block
        m = _resnet_block(T)
        return m, T.optim.SGD(m.parameters(), lr=0.01, momentum=0.9), T.randn(32, 64, 32, 32)
    m = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3),
                      nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(1600, 128), nn.ReLU(),
                      nn.Linear(128, 10))
    # 26x26 input so that the flattened features are exactly 64*5*5 = 1600
    return m, T.optim.SGD(m.parameters(), lr=0.01, momentum=0.9), T.randn(64, 1, 26, 26)


def _step_fn(T, model, channels_last=False):
    m, opt, x = _model(T, model)
    if channels_last:
        m = m.to(memory_format=T.channels_last)
        x = x.contiguous(memory_format=T.channels_last)
    y, loss = T.randint(0, 10, (x.shape[0],)), T.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss(m(x), y).backward()
        opt.step()
    step.opt = opt
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


def resnet():
    """The ResNet-block training step (asv's ResNetBlockSGD), then its ops one by one at
    the block's shapes (forward, and forward+backward where the op trains)."""
    import torch

    import ember
    steps = {}
    for name, T in (("ember", ember), ("torch", torch)):
        T.manual_seed(0)
        steps[name] = _step_fn(T, "resnet")
    from ember._C import conv as CV
    grads = ((CV.conv2d_input_grad, CV.conv2d_weight_grad),
             (torch.nn.grad.conv2d_input, torch.nn.grad.conv2d_weight))
    ops = []
    for T, (dx_fn, dw_fn) in zip((ember, torch), grads):
        F = T.nn.functional
        x = T.randn(32, 64, 32, 32, requires_grad=True)
        w = T.randn(64, 64, 3, 3, requires_grad=True)
        g = T.randn(32, 64, 32, 32)
        bn = T.nn.BatchNorm2d(64)
        xd, wd = x.detach(), w.detach()
        xp = T.randn(64, 32, 24, 24, requires_grad=True)   # the digits CNN's first pooling
        gp = T.randn(64, 32, 12, 12)
        ops.append({
            "conv fwd": lambda F=F, xd=xd, wd=wd: F.conv2d(xd, wd, padding=1),
            "conv input-grad": lambda f=dx_fn, xd=xd, wd=wd, g=g: f(xd.shape, wd, g, padding=1),
            "conv weight-grad": lambda f=dw_fn, xd=xd, wd=wd, g=g: f(xd, wd.shape, g,
                                                                     padding=1),
            "batch_norm fwd": lambda bn=bn, xd=xd: bn(xd),
            "batch_norm fwd+bwd": lambda bn=bn, x=x, g=g: bn(x).backward(g),
            "relu fwd+bwd": lambda x=x, g=g: x.relu().backward(g),
            "max_pool2d 2x2 fwd+bwd (64x32x24x24)": lambda F=F, xp=xp, gp=gp: F.max_pool2d(
                xp, 2).backward(gp),
            "SGD momentum step": steps["ember" if T is ember else "torch"].opt.step,
        })
    for th in (1, 2):
        ember.set_num_threads(th)
        torch.set_num_threads(th)
        e, t = pair(steps["ember"], steps["torch"], 2, 7)
        print(f"resnet step thr{th}: ember {e * 1e3:.1f} ms, torch {t * 1e3:.1f} ms "
              f"({e / t:.2f}x)")
        row = []
        for name in ops[0]:
            e, t = pair(ops[0][name], ops[1][name], 2, 5)
            row.append(f"{name} {e / t:.2f}x ({e * 1e3:.1f} vs {t * 1e3:.1f} ms)")
        print(f"  ops thr{th}: " + ", ".join(row))


def channels_last():
    """The digits CNN and ResNet-block training steps with the model and the input in
    channels_last, ember beside torch (also channels_last), and ember's row-major step."""
    import torch

    import ember
    for model in ("cnn", "resnet"):
        steps = {}
        for name, T, cl in (("ember", ember, True), ("torch", torch, True),
                            ("ember-nchw", ember, False)):
            T.manual_seed(0)
            steps[name] = _step_fn(T, model, cl)
        for th in (1, 2):
            ember.set_num_threads(th)
            torch.set_num_threads(th)
            n = 3 if model == "cnn" else 2
            e, t = pair(steps["ember"], steps["torch"], n, 7)
            c = med(steps["ember-nchw"], n, 5)
            print(f"{model} step channels_last thr{th}: ember {e * 1e3:.1f} ms, torch "
                  f"{t * 1e3:.1f} ms ({e / t:.2f}x); ember row-major {c * 1e3:.1f} ms")


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


def ops():
    """ember time / torch time of the vectorised math and fused kernels, alternated."""
    import torch

    import ember
    F, TF = ember.nn.functional, torch.nn.functional
    xs = (ember.randn(1 << 20), torch.randn(1 << 20))
    pos = (xs[0].abs() + 0.01, xs[1].abs() + 0.01)
    unit = (xs[0].tanh(), xs[1].tanh())
    big = (pos[0] + 1, pos[1] + 1)
    x64 = (xs[0].double(), xs[1].double())
    act = (ember.randn(16, 64, 512), torch.randn(16, 64, 512))
    ln_in = (ember.randn(16, 64, 128), torch.randn(16, 64, 128))
    ln_p = [(T.ones(128, requires_grad=True), T.zeros(128, requires_grad=True))
            for T in (ember, torch)]
    for th in (1, 2):
        ember.set_num_threads(th)
        torch.set_num_threads(th)
        row = []
        for name in ("erf", "erfc", "sin", "cos", "tan", "log", "log1p", "log2", "log10",
                     "expm1", "atan", "asin", "acos", "sinh", "cosh", "asinh", "acosh", "atanh",
                     "exp2", "sigmoid"):
            a = (pos if name.startswith("log") else unit if name in ("asin", "acos", "atanh")
                 else big if name == "acosh" else xs)
            fe, ft = getattr(ember, name), getattr(torch, name)
            te, tt = pair(lambda: fe(a[0]), lambda: ft(a[1]), 5)
            row.append(f"{name} {te / tt:.2f}x")
        print(f"1M float32 thr{th}: " + ", ".join(row))
        row = []
        for name in ("exp", "log", "log1p", "sigmoid", "asinh"):
            a = (x64[0].abs() + 0.01, x64[1].abs() + 0.01) if name.startswith("log") else x64
            fe, ft = getattr(ember, name), getattr(torch, name)
            te, tt = pair(lambda: fe(a[0]), lambda: ft(a[1]), 5)
            row.append(f"{name} {te / tt:.2f}x")
        te, tt = pair(lambda: pos[0] ** 1.7, lambda: pos[1] ** 1.7, 5)
        row.append(f"pow(f32, 1.7) {te / tt:.2f}x")
        print(f"1M float64 thr{th}: " + ", ".join(row))
        row = []
        for name, kw in (("gelu", {}), ("gelu", {"approximate": "tanh"}), ("silu", {}),
                         ("mish", {}), ("softplus", {}), ("elu", {})):
            fe, ft = getattr(F, name), getattr(TF, name)
            te, tt = pair(lambda: fe(act[0], **kw), lambda: ft(act[1], **kw), 5)
            ge, gt = act[0].clone().requires_grad_(), act[1].clone().requires_grad_()
            be, bt = pair(lambda: fe(ge, **kw).sum().backward(),
                          lambda: ft(gt, **kw).sum().backward(), 3)
            row.append(f"{name}{'-tanh' if kw else ''} {te / tt:.2f}x (fwd+bwd {be / bt:.2f}x)")
        print(f"16x64x512 thr{th}: " + ", ".join(row))
        te, tt = pair(lambda: F.layer_norm(ln_in[0], (128,), *ln_p[0]),
                      lambda: TF.layer_norm(ln_in[1], (128,), *ln_p[1]), 20)
        ge, gt = ln_in[0].clone().requires_grad_(), ln_in[1].clone().requires_grad_()
        be, bt = pair(lambda: F.layer_norm(ge, (128,), *ln_p[0]).sum().backward(),
                      lambda: TF.layer_norm(gt, (128,), *ln_p[1]).sum().backward(), 10)
        print(f"layer_norm 16x64x128 thr{th}: fwd {te / tt:.2f}x ({te * 1e6:.0f} vs "
              f"{tt * 1e6:.0f} us), fwd+bwd {be / bt:.2f}x")
        for shape, n in (((16, 4, 64, 32), 10), ((1, 8, 1024, 64), 1)):
            qs = [[T.randn(*shape, requires_grad=True) for _ in range(3)] for T in (ember, torch)]
            te, tt = pair(lambda: F.scaled_dot_product_attention(*qs[0], is_causal=True),
                          lambda: TF.scaled_dot_product_attention(*qs[1], is_causal=True), n)
            be, bt = pair(
                lambda: F.scaled_dot_product_attention(*qs[0], is_causal=True).sum().backward(),
                lambda: TF.scaled_dot_product_attention(*qs[1], is_causal=True).sum().backward(),
                n)
            print(f"sdpa causal {'x'.join(map(str, shape))} thr{th}: fwd {te / tt:.2f}x "
                  f"({te * 1e3:.2f} vs {tt * 1e3:.2f} ms), fwd+bwd {be / bt:.2f}x")


# the float elementwise ops of the sweep: unary (torch.<name>(x) unless given), their
# input domain, and binary ops (x op y)
_SWEEP_UNARY = {
    "abs": "any", "neg": "any", "sign": "any", "exp": "any", "exp2": "any", "expm1": "any",
    "log": "pos", "log2": "pos", "log10": "pos", "log1p": "pos", "sqrt": "pos", "rsqrt": "pos",
    "sin": "any", "cos": "any", "tan": "any", "asin": "unit", "acos": "unit", "atan": "any",
    "sinh": "any", "cosh": "any", "tanh": "any", "asinh": "any", "acosh": "big",
    "atanh": "unit", "sigmoid": "any", "relu": "any", "erf": "any", "erfc": "any",
    "erfinv": "unit", "lgamma": "pos", "digamma": "pos", "floor": "any", "ceil": "any",
    "round": "any", "trunc": "any", "frac": "any", "reciprocal": "pos", "square": "any",
    "isnan": "any", "isfinite": "any", "signbit": "any", "nan_to_num": "any",
    "F.gelu": "any", "F.gelu-tanh": "any", "F.silu": "any", "F.mish": "any",
    "F.softplus": "any", "F.elu": "any", "F.selu": "any", "F.celu": "any",
    "F.leaky_relu": "any", "F.hardsigmoid": "any", "F.hardswish": "any",
    "F.hardtanh": "any", "F.relu6": "any", "F.logsigmoid": "any", "F.softsign": "any",
    "F.tanhshrink": "any", "clamp": "any", "deg2rad": "any", "sgn": "any", "i0": "any",
    "F.threshold": "any", "F.softshrink": "any", "F.hardshrink": "any", "F.prelu": "any",
    "F.glu": "any", "special.ndtr": "any", "special.ndtri": "prob", "special.log_ndtr": "any",
    "special.erfcx": "any", "special.i0e": "any", "special.i1": "any", "special.entr": "pos",
    "polygamma-1": "pos", "special.i1e": "any",
    "special.bessel_j0": "any", "special.bessel_j1": "any", "special.bessel_y0": "pos",
    "special.bessel_y1": "pos", "special.modified_bessel_i0": "any",
    "special.modified_bessel_i1": "any", "special.modified_bessel_k0": "pos",
    "special.modified_bessel_k1": "pos", "special.scaled_modified_bessel_k0": "pos",
    "special.scaled_modified_bessel_k1": "pos", "special.airy_ai": "any",
    "special.spherical_bessel_j0": "any", "special.hermite_h-5": "any",
    "special.laguerre-5": "any", "special.xlog1py-2": "pos", "angle": "any", "frexp": "any",
    "isposinf": "any", "isneginf": "any", "nan_to_num_": "any", "polygamma-2": "pos",
    "polygamma-3": "pos",
}
_SWEEP_BINARY = ("add", "sub", "mul", "div", "pow", "pow-scalar", "maximum", "minimum", "fmax",
                 "fmin", "atan2", "hypot", "copysign", "fmod", "remainder", "floor_divide",
                 "xlogy", "logaddexp", "lerp", "where", "eq", "lt", "lerp-tensor", "addcmul",
                 "addcdiv", "clamp-tensor", "nextafter", "logaddexp2", "igamma", "igammac", "zeta")
_SWEEP_BACKWARD = ("gelu", "gelu-tanh", "silu", "mish", "softplus", "elu", "sigmoid", "tanh",
                   "relu", "threshold", "hardshrink", "softshrink", "prelu", "glu")
# the sweep's rows from i0 on (the ops composed or scalar until late) also run in float64
_SWEEP_LATE = list(_SWEEP_UNARY)[list(_SWEEP_UNARY).index("i0"):]


def _sweep_fn(T, name):
    F = T.nn.functional
    if name == "F.gelu-tanh":
        return lambda x: F.gelu(x, approximate="tanh")
    if name == "F.threshold":
        return lambda x: F.threshold(x, 0.1, 2.0)
    if name == "F.prelu":
        return lambda x: F.prelu(x, T.tensor([0.25], dtype=x.dtype))
    if name.startswith("F."):
        return getattr(F, name[2:])
    if name == "clamp":
        return lambda x: T.clamp(x, -0.5, 0.5)
    if name.startswith("polygamma-"):
        return lambda x, n=int(name[10:]): T.polygamma(n, x)
    if name in ("special.hermite_h-5", "special.laguerre-5"):
        fn = {"special.hermite_h-5": T.special.hermite_polynomial_h,
              "special.laguerre-5": T.special.laguerre_polynomial_l}[name]
        return lambda x: fn(x, 5)
    if name == "special.xlog1py-2":
        return lambda x: T.special.xlog1py(x, x - 0.5)
    if name.startswith("special."):
        return getattr(T.special, name[8:])
    if name in ("erfinv", "digamma"):
        return getattr(T.special, name)
    return getattr(T, name)


def _sweep_binary_fn(T, name):
    if name == "pow-scalar":
        return lambda x, y: x.abs() ** 1.7
    if name == "lerp":
        return lambda x, y: T.lerp(x, y, 0.3)
    if name == "where":
        return lambda x, y: T.where(x > 0, x, y)
    if name == "lerp-tensor":
        return lambda x, y: T.lerp(x, y, y)
    if name in ("addcmul", "addcdiv"):
        return lambda x, y: getattr(T, name)(x, x, y, value=0.5)
    if name == "clamp-tensor":
        return lambda x, y: T.clamp(x, max=y)
    if name == "zeta":          # x: q, y: the exponent (1.5 + |normal|)
        return lambda x, y: T.special.zeta(y, x)
    return getattr(T, name)


def sweep(threads=2):
    """ember time / torch time of every float elementwise op on 1M float32, forward,
    then the activations' forward + backward; ops above 1.0x are marked."""
    import torch

    import ember
    ember.set_num_threads(threads)
    torch.set_num_threads(threads)
    g = torch.Generator().manual_seed(0)
    base = torch.randn(1 << 20, generator=g)
    doms = {"any": base * 3, "pos": base.abs() * 3 + 0.01, "unit": base.tanh() * 0.999,
            "big": base.abs() * 3 + 1.01, "prob": base.sigmoid()}
    y = torch.randn(1 << 20, generator=g).abs() + 0.1
    # each library's operands in its own (64-byte aligned) memory: NumPy's buffers are
    # 16-byte aligned, and split cache lines cost memory-bound rows 10-30%
    own = lambda v: ember.tensor(v.numpy())                      # noqa: E731
    pairs = {k: (own(v), v) for k, v in doms.items()}
    ys = (own(y), y)
    zs = (own(y + 1.4), y + 1.4)                                 # zeta's exponent 1.5 + |n|
    rows = []
    for name, dom in _SWEEP_UNARY.items():
        fe, ft = _sweep_fn(ember, name), _sweep_fn(torch, name)
        a = pairs[dom]
        te, tt = pair(lambda: fe(a[0]), lambda: ft(a[1]), 5)
        rows.append((name, te, tt))
    for name in _SWEEP_BINARY:
        fe, ft = _sweep_binary_fn(ember, name), _sweep_binary_fn(torch, name)
        a = pairs["pos"] if name in ("pow", "xlogy", "igamma", "igammac", "zeta") else pairs["any"]
        b = zs if name == "zeta" else ys
        te, tt = pair(lambda: fe(a[0], b[0]), lambda: ft(a[1], b[1]), 5)
        rows.append((name, te, tt))
    for name in _SWEEP_BACKWARD:
        fe = _sweep_fn(ember, "F." + name if name not in ("sigmoid", "tanh") else name)
        ft = _sweep_fn(torch, "F." + name if name not in ("sigmoid", "tanh") else name)
        ge = pairs["any"][0].clone().requires_grad_()
        gt = pairs["any"][1].clone().requires_grad_()
        te, tt = pair(lambda: fe(ge).sum().backward(), lambda: ft(gt).sum().backward(), 3)
        rows.append((name + " fwd+bwd", te, tt))
    print(f"1M float32, {threads} thread(s), ember / torch (medians, alternated):")
    for name, te, tt in rows:
        mark = "  <-- above 1.0x" if te > tt else ""
        print(f"  {name:18s} {te / tt:5.2f}x  ({te * 1e6:7.0f} vs {tt * 1e6:7.0f} us){mark}")
def _ops64_cases(E, T, n):
    """(name, ember call, torch call) for every floating elementwise op on n float64
    elements; activations also as forward+backward ("name fwd+bwd")."""
    import numpy as np
    rng = np.random.default_rng(0)
    norm = rng.standard_normal(n) * 3
    arrays = {"x": norm, "pos": np.abs(norm) + 0.01, "unit": np.tanh(norm), "big": np.abs(norm) + 1,
              "y": rng.standard_normal(n) * 3, "gam": rng.uniform(0.01, 50, n),
              "prob": 1 / (1 + np.exp(-norm))}
    arrays["zs"] = np.abs(arrays["y"]) / 3 + 1.5          # zeta's exponent 1.5 + |normal|
    ts = {k: (E.tensor(v), T.tensor(v)) for k, v in arrays.items()}   # own, aligned memory
    unary = {"exp": "x", "exp2": "x", "expm1": "x", "log": "pos", "log2": "pos", "log10": "pos",
             "log1p": "pos", "sqrt": "pos", "rsqrt": "pos", "sin": "x", "cos": "x", "tan": "x",
             "asin": "unit", "acos": "unit", "atan": "x", "sinh": "x", "cosh": "x", "tanh": "x",
             "asinh": "x", "acosh": "big", "atanh": "unit", "sigmoid": "x", "erf": "x",
             "erfc": "x", "erfinv": "unit", "lgamma": "gam", "digamma": "gam",
             "reciprocal": "x"}
    for name, a in unary.items():
        e, t = ts[a]
        yield name, (lambda f=getattr(E, name), e=e: f(e)), (lambda f=getattr(T, name), t=t: f(t))
    (ex, tx), (ey, ty), (ep, tp) = ts["x"], ts["y"], ts["pos"]
    yield "pow(x, 1.7)", lambda: ep ** 1.7, lambda: tp ** 1.7
    yield "pow(x, y)", lambda: E.pow(ep, ey), lambda: T.pow(tp, ty)
    for name in ("atan2", "hypot", "logaddexp", "xlogy"):
        yield name, (lambda f=getattr(E, name): f(ex, ep)), (lambda f=getattr(T, name): f(tx, tp))
    doms = {"any": "x", "pos": "pos", "prob": "prob"}
    for name in _SWEEP_LATE:
        (e, t), fe, ft = ts[doms[_SWEEP_UNARY[name]]], _sweep_fn(E, name), _sweep_fn(T, name)
        yield name, (lambda fe=fe, e=e: fe(e)), (lambda ft=ft, t=t: ft(t))
    for name in _SWEEP_BINARY[_SWEEP_BINARY.index("lerp-tensor"):]:
        (e, t) = ts["pos"] if name in ("igamma", "igammac", "zeta") else ts["x"]
        (eb, tb) = ts["zs"] if name == "zeta" else (ep, tp)
        fe, ft = _sweep_binary_fn(E, name), _sweep_binary_fn(T, name)
        yield name, (lambda fe=fe, e=e, eb=eb: fe(e, eb)), (lambda ft=ft, t=t, tb=tb: ft(t, tb))
    F, TF = E.nn.functional, T.nn.functional
    acts = [("gelu", {}), ("gelu", {"approximate": "tanh"}), ("silu", {}), ("mish", {}),
            ("softplus", {}), ("elu", {}), ("selu", {}), ("celu", {}), ("sigmoid", {}),
            ("tanh", {})]
    gx = (ex.clone().requires_grad_(), tx.clone().requires_grad_())
    for name, kw in acts:
        tag = name + ("-tanh" if kw else "")
        fe, ft = getattr(F, name), getattr(TF, name)
        if name not in ("sigmoid", "tanh"):
            yield tag, (lambda fe=fe, kw=kw: fe(ex, **kw)), (lambda ft=ft, kw=kw: ft(tx, **kw))
        yield tag + " fwd+bwd", (lambda fe=fe, kw=kw: fe(gx[0], **kw).sum().backward()), \
            (lambda ft=ft, kw=kw: ft(gx[1], **kw).sum().backward())


def ops64():
    """ember time / torch time of every floating elementwise op on 1M float64 values
    (activations also forward+backward), at 1 and 2 threads, alternated; an optional
    comma-separated list of names picks rows."""
    import torch

    import ember
    want = {w for w in (sys.argv[2] if len(sys.argv) > 2 else "").split(",") if w}
    cases = [c for c in _ops64_cases(ember, torch, 1 << 20)
             if not want or c[0] in want or c[0].split(" ")[0].split("(")[0] in want]
    print(f"{'1M float64':22s} {'thr1':>6s} {'thr2':>6s}   (ember / torch; ember ms at thr1)")
    for name, fe, ft in cases:
        ratios, ms = [], 0.0
        for th in (1, 2):
            ember.set_num_threads(th)
            torch.set_num_threads(th)
            te, tt = pair(fe, ft, 2, 5)
            ratios.append(te / tt)
            ms = ms or te * 1e3
        print(f"{name:22s} {ratios[0]:5.2f}x {ratios[1]:5.2f}x   {ms:7.2f}", flush=True)


def losses():
    """Fused cross-entropy on (N, C, d...) logits and on class probabilities, nll_loss,
    and rms_norm: forward+backward, ember time / torch time, alternated."""
    import torch

    import ember
    cases = []
    for T in (ember, torch):
        T.manual_seed(0)
        x = T.randn(32, 100, 256, requires_grad=True)
        t = T.randint(0, 100, (32, 256))
        xp = T.randn(4096, 1000, requires_grad=True)
        p = T.softmax(T.randn(4096, 1000), 1)
        xr = T.randn(16, 64, 512, requires_grad=True)
        wr = T.ones(512, requires_grad=True)
        xc = T.randn(64, 10, requires_grad=True)           # few classes: per-call cost
        tc = T.randint(0, 10, (64,))
        xs = T.randn(8, 21, 64, 64, requires_grad=True)    # segmentation logits
        ts = T.randint(0, 21, (8, 64, 64))
        ts[:, :4] = 255
        cases.append({
            "ce (8,21,64,64) idx ignore+smooth": lambda T=T, x=xs, t=ts: T.nn.functional.
            cross_entropy(x, t, ignore_index=255, label_smoothing=0.1).backward(),
            "nll (8,21,64,64)": lambda T=T, x=xs, t=ts: T.nn.functional.nll_loss(
                x, t, ignore_index=255).backward(),
            "ce (64,10) idx": lambda T=T, x=xc, t=tc: T.nn.functional.cross_entropy(
                x, t).backward(),
            "ce (32,100,256) idx": lambda T=T, x=x, t=t: T.nn.functional.cross_entropy(
                x, t).backward(),
            "ce (4096,1000) probs": lambda T=T, x=xp, p=p: T.nn.functional.cross_entropy(
                x, p).backward(),
            "rms_norm 16x64x512": lambda T=T, x=xr, w=wr: T.nn.functional.rms_norm(
                x, (512,), w).sum().backward(),
        })
        xg = T.randn(1 << 20, requires_grad=True)   # regression losses on 1M values
        yg = T.randn(1 << 20)
        for name in ("mse_loss", "smooth_l1_loss", "huber_loss",
                     "binary_cross_entropy_with_logits"):
            cases[-1][name + " 1M"] = lambda T=T, f=name, x=xg, y=yg: getattr(
                T.nn.functional, f)(x, y.sigmoid() if "logits" in f else y).backward()
    for th in (1, 2):
        ember.set_num_threads(th)
        torch.set_num_threads(th)
        row = []
        for name in cases[0]:
            small = name.startswith("ce (64,10)")
            te, tt = pair(cases[0][name], cases[1][name], 300 if small else 3)
            row.append(f"{name} {te / tt:.2f}x ({te * 1e3:.{3 if small else 1}f} vs "
                       f"{tt * 1e3:.{3 if small else 1}f} ms)")
        print(f"fwd+bwd thr{th}: " + ", ".join(row))


def _norm_cases(T):
    """name -> (forward, forward+backward) of each normalisation at a typical shape:
    GPT activations (16x64x128) for layer/rms norm, a ResNet feature map
    (32x64x32x32) for the channel norms; the backward takes a fixed random grad,
    as a training step's would, or the expanded one of .sum()."""
    nn, F = T.nn, T.nn.functional
    T.manual_seed(0)
    cases = {}

    def add(name, fn, x, *params):
        xg = x.detach().clone().requires_grad_()
        g = T.randn(*fn(x).shape)
        cases[name] = (lambda: fn(x), lambda: fn(xg).backward(g), lambda: fn(xg).sum().backward())

    seq, img = T.randn(16, 64, 128), T.randn(32, 64, 32, 32)
    w, b = T.ones(128, requires_grad=True), T.zeros(128, requires_grad=True)
    wc, bc = T.ones(64, requires_grad=True), T.zeros(64, requires_grad=True)
    add("layer_norm", lambda x: F.layer_norm(x, (128,), w, b), seq)
    add("LayerNorm", nn.LayerNorm(128), seq)
    add("rms_norm", lambda x: F.rms_norm(x, (128,), w), seq)
    add("group_norm", lambda x: F.group_norm(x, 8, wc, bc), img)
    add("GroupNorm", nn.GroupNorm(8, 64), img)
    add("batch_norm train", lambda x: F.batch_norm(x, T.zeros(64), T.ones(64), wc, bc, True),
        img)
    bn = nn.BatchNorm2d(64)
    add("BatchNorm2d train", bn, img)
    bne = nn.BatchNorm2d(64).eval()
    add("BatchNorm2d eval", bne, img)
    add("instance_norm", lambda x: F.instance_norm(x, weight=wc, bias=bc), img)
    add("InstanceNorm2d", nn.InstanceNorm2d(64, affine=True), img)
    return cases


def norms():
    """ember time / torch time of each normalisation: forward (no grad), forward+backward
    with a random grad, and forward+.sum().backward(), alternated; the best of 11
    (one thread: process CPU time, which other processes on a shared machine leave
    alone; two threads: wall time)."""
    import torch

    import ember
    ce, ct = _norm_cases(ember), _norm_cases(torch)
    for th in (1, 2):
        ember.set_num_threads(th)
        torch.set_num_threads(th)
        kw = dict(timer=time.process_time if th == 1 else timeit.default_timer, stat=min)
        for name in ce:
            r = []
            for i, what in enumerate(("fwd", "fwd+bwd", "fwd+sum.bwd")):
                if i == 0:
                    with ember.no_grad(), torch.no_grad():
                        e, t = pair(ce[name][0], ct[name][0], 5, **kw)
                else:
                    e, t = pair(ce[name][i], ct[name][i], 3, **kw)
                r.append(f"{what} {e / t:.2f}x ({e * 1e3:.2f} vs {t * 1e3:.2f} ms)")
            print(f"{name} thr{th}: " + ", ".join(r))


def _gpt(T, **cfg):
    """The GPT-style model of the asv row ``nn_training.GPTAdamW`` (one definition)."""
    sys.path.insert(0, os.path.join(ROOT, "asv_bench"))
    from benchmarks.nn_training import _gpt as model
    return model(T, **cfg)


def gpt():
    """The GPT-style training step (4 blocks, emb 128, 4 heads, seq 64, batch 16, AdamW)."""
    import torch

    import ember
    steps = {}
    for name, T in (("ember", ember), ("torch", torch)):
        T.manual_seed(0)
        m = _gpt(T)
        opt = T.optim.AdamW(m.parameters(), lr=1e-3)
        idx, tgt = T.randint(0, 256, (16, 64)), T.randint(0, 256, (16, 64))

        def step(m=m, opt=opt, idx=idx, tgt=tgt, T=T):
            opt.zero_grad()
            T.nn.functional.cross_entropy(m(idx).reshape(-1, 256), tgt.reshape(-1)).backward()
            opt.step()
        steps[name] = step
    for th in (1, 2):
        ember.set_num_threads(th)
        torch.set_num_threads(th)
        e, t = pair(steps["ember"], steps["torch"], 3)
        print(f"gpt step thr{th}: ember {e * 1e3:.1f} ms, torch {t * 1e3:.1f} ms ({e / t:.2f}x)")


def engine():
    """Share of ember's GPT step (1 thread) spent in autograd bookkeeping: recording
    nodes in the forward (the record hook) and the backward engine's own work (graph
    walk, gradient buffers and accumulation into .grad), i.e. the backward's time less
    the time inside the nodes' formulas and kernels.  Two models: the `gpt` mode's,
    and a deep one with small tensors (16 blocks, emb 64, sequence 16, batch 2) where
    the engine weighs the most."""
    for cfg, batch in (({}, 16), ({"emb": 64, "seq": 16, "layers": 16}, 2)):
        _engine_share(cfg, batch)


def _clock_cost(clock):
    """Seconds one reading of ``clock`` adds to a span it closes (median of batches)."""
    def batch():
        t = clock()
        for _ in range(2000):
            clock()
        return (clock() - t) / 2001
    return statistics.median(batch() for _ in range(9))


def _engine_share(cfg, batch):
    import time

    import ember
    from ember.autograd import _engine as E
    ember.set_num_threads(1)
    ember.manual_seed(0)
    m = _gpt(ember, **cfg)
    opt = ember.optim.AdamW(m.parameters(), lr=1e-3)
    seq = cfg.get("seq", 64)
    idx, tgt = ember.randint(0, 256, (batch, seq)), ember.randint(0, 256, (batch, seq))
    # the thread's CPU time: on a loaded machine the step's wall time counts the time
    # other processes run; each span is corrected by the cost of one clock reading
    clock = time.thread_time
    tick = _clock_cost(clock)
    acc = {"record": 0.0, "nodes": 0.0, "n_nodes": 0, "n_rec": 0}

    def record(name, inputs, output, attrs, _rec=E._record):
        t = clock()
        r = _rec(name, inputs, output, attrs)
        acc["record"] += clock() - t
        acc["n_rec"] += 1
        return r

    def observe(fn, buf, skip_pre, call):
        t = clock()
        r = fn._apply(buf) if fn._extra is None and fn._vers is not None else \
            call(fn, buf, skip_pre)
        acc["nodes"] += clock() - t
        acc["n_nodes"] += 1
        return r

    def step(timed):
        opt.zero_grad()
        t0 = clock()
        if timed:
            E.push_record_hook(record)
        try:
            loss = ember.nn.functional.cross_entropy(m(idx).reshape(-1, 256), tgt.reshape(-1))
        finally:
            if timed:
                E.pop_record_hook(record)
        t1 = clock()
        if timed:
            E._node_observer[0] = observe
        try:
            loss.backward()
        finally:
            E._node_observer[0] = None
        t2 = clock()
        opt.step()
        return t2 - t0 + (clock() - t2), t1 - t0, t2 - t1

    for _ in range(3):
        step(False)
    # plain and instrumented steps alternate; the engine's share is the plain backward
    # less the time inside the formulas (the observer's own cost stays out of it)
    plains, rows = [], []
    for _ in range(15):
        plains.append(step(False))
        acc.update(record=0.0, nodes=0.0, n_nodes=0, n_rec=0)
        total, fwd, bwd = step(True)
        rows.append((total, fwd, bwd, acc["record"] - acc["n_rec"] * tick,
                     acc["nodes"] - acc["n_nodes"] * tick, acc["n_nodes"]))
    plain, _, plain_bwd = (statistics.median(c) for c in zip(*plains))
    total, fwd, bwd, rec, nodes, n = (statistics.median(c) for c in zip(*rows))
    eng = plain_bwd - nodes
    print(f"gpt {cfg or 'default'} batch {batch} step thr1 (CPU time): {plain * 1e3:.1f} ms "
          f"untimed; "
          f"instrumented {total * 1e3:.1f} ms "
          f"(forward {fwd * 1e3:.1f}, backward {bwd * 1e3:.1f} over {n:.0f} nodes)")
    print(f"  recording {rec * 1e3:.2f} ms ({rec / plain:.1%} of the step), backward engine "
          f"{eng * 1e3:.2f} ms ({eng / plain:.1%}); bookkeeping {(rec + eng) / plain:.1%} "
          f"of the step")


SDPA_SHAPE = (4, 8, 1024, 64)  # batch, heads, sequence, head dim


def _sdpa_case(T, causal, shape=SDPA_SHAPE):
    T.manual_seed(0)
    q, k, v = (T.randn(*shape, requires_grad=True) for _ in range(3))
    g = T.randn(*shape)
    F = T.nn.functional

    def fwd():
        with T.no_grad():
            F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    def fwd_bwd():
        F.scaled_dot_product_attention(q, k, v, is_causal=causal).backward(g)
        q.grad = k.grad = v.grad = None
    return fwd, fwd_bwd


def sdpa():
    """scaled_dot_product_attention at (4, 8, 1024, 64) float32: forward and
    forward+backward, ember and torch alternated; then the peak memory of one
    forward+backward, each library in its own process."""
    import torch

    import ember
    for th in (1, 2):
        ember.set_num_threads(th)
        torch.set_num_threads(th)
        for causal in (False, True):
            fe, be = _sdpa_case(ember, causal)
            ft, bt = _sdpa_case(torch, causal)
            te, tt = pair(fe, ft, 1, repeat=5)
            ue, ut = pair(be, bt, 1, repeat=5)
            print(f"sdpa {'x'.join(map(str, SDPA_SHAPE))} {'causal' if causal else 'full'} "
                  f"thr{th}: fwd {te / tt:.2f}x ({te * 1e3:.1f} vs {tt * 1e3:.1f} ms), "
                  f"fwd+bwd {ue / ut:.2f}x ({ue * 1e3:.1f} vs {ut * 1e3:.1f} ms)")
    for causal in ("full", "causal"):
        for name in ("ember", "torch"):
            subprocess.run([sys.executable, __file__, "sdpa-memory", name, causal], check=True)


def sdpa_memory(lib, causal):
    """Peak RSS that one forward+backward adds over its inputs, in this process."""
    T = __import__(lib)
    T.set_num_threads(1)
    _, fwd_bwd = _sdpa_case(T, causal == "causal")
    base = _hwm_kb()
    fwd_bwd()
    fwd_bwd()
    peak = _hwm_kb()
    print(f"sdpa {causal} {lib}: peak RSS over the inputs {(peak - base) / 1024:.1f} MB")


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "train"
    modes = {"linalg": linalg, "train": train, "ops": ops, "gpt": gpt, "losses": losses,
             "norms": norms, "resnet": resnet, "sdpa": sdpa, "engine": engine,
             "channels-last": channels_last,
             "sweep": lambda: sweep(int(sys.argv[2]) if len(sys.argv) > 2 else 2),
             "ops64": ops64,
             "sdpa-memory": lambda: sdpa_memory(*sys.argv[2:4])}
    modes.get(what, lambda: memory(*sys.argv[2:4]))()
