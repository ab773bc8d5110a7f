"""Convolution and pooling training kernels on small images, ember beside torch
(float32 NCHW, 3x3 filters; ember and torch alternated in one process; prints
ember time / torch time, the minimum of the repeats).

    .venv/bin/python tools/bench_conv.py [THREADS] [pad0|pad1|pool|all] [--parts] [--cpu]
        [--no-direct] [--only=C1,C16,...]

Columns: the no-grad forward, forward + input gradient (autograd.grad on the
input), forward + weight gradient (autograd.grad on the weight).  --parts
times the three kernels alone instead (the input and weight gradients called
directly: ember's conv2d_input_grad / conv2d_weight_grad against torch's
aten.convolution_backward with one output selected).  --cpu times process
CPU time instead of wall time (steadier on a shared machine; one thread only).
--no-direct turns off the direct kernel for few channels (the paths before it).
--only=C3,C16 keeps the convolution rows of those input channel counts.
"""
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

SHAPES = [(64, 1, 28, 32), (64, 32, 26, 64), (32, 3, 32, 32), (32, 64, 32, 64),
          (32, 128, 16, 128), (128, 16, 28, 16), (32, 32, 64, 32), (32, 64, 56, 64)]
POOL = [(64, 32, 26), (64, 64, 24), (32, 32, 32), (32, 64, 32), (128, 16, 28), (32, 32, 64),
        (32, 64, 56)]


CLOCK = [time.perf_counter]


def pair(fe, ft, n=9):
    """min seconds of ember's and torch's fn over n alternated runs"""
    clock = CLOCK[0]
    fe(), ft()
    te, tt = [], []
    for _ in range(n):
        t = clock()
        fe()
        te.append(clock() - t)
        t = clock()
        ft()
        tt.append(clock() - t)
    return min(te), min(tt)


def conv_rows(pad, parts, n, only=None):
    import torch

    import ember
    from ember._C import conv as CV
    rng = np.random.default_rng(0)
    for N, C, H, K in SHAPES:
        if only and C not in only:
            continue
        x = rng.standard_normal((N, C, H, H)).astype(np.float32)
        w = (rng.standard_normal((K, C, 3, 3)) * 0.1).astype(np.float32)
        Ho = H - 2 + 2 * pad
        g = rng.standard_normal((N, K, Ho, Ho)).astype(np.float32)
        fns = []
        for lib in (ember, torch):
            X, W, G = lib.from_numpy(x), lib.from_numpy(w), lib.from_numpy(g)
            F = lib.nn.functional
            Xr, Wr = X.clone().requires_grad_(), W.clone().requires_grad_()

            def fw(lib=lib, F=F, X=X, W=W):
                with lib.no_grad():
                    F.conv2d(X, W, padding=pad)
            if parts and lib is ember:
                def gi(X=X, W=W, G=G):
                    CV.conv2d_input_grad(X.shape, W, G, padding=pad)

                def gw(X=X, W=W, G=G):
                    CV.conv2d_weight_grad(X, W.shape, G, padding=pad)
            elif parts:
                def gi(X=X, W=W, G=G):
                    torch.ops.aten.convolution_backward(G, X, W, None, [1, 1], [pad, pad],
                                                        [1, 1], False, [0, 0], 1,
                                                        [True, False, False])

                def gw(X=X, W=W, G=G):
                    torch.ops.aten.convolution_backward(G, X, W, None, [1, 1], [pad, pad],
                                                        [1, 1], False, [0, 0], 1,
                                                        [False, True, False])
            else:
                def gi(lib=lib, F=F, Xr=Xr, W=W, G=G):
                    lib.autograd.grad(F.conv2d(Xr, W, padding=pad), Xr, G)

                def gw(lib=lib, F=F, X=X, Wr=Wr, G=G):
                    lib.autograd.grad(F.conv2d(X, Wr, padding=pad), Wr, G)
            fns.append((fw, gi, gw))
        names = ("fwd", "dx", "dw") if parts else ("fwd", "fwd+dx", "fwd+dw")
        out = []
        for i, nm in enumerate(names):
            e, t = pair(fns[0][i], fns[1][i], n)
            out.append(f"{nm} {e / t:.2f}")
        print(f"pad{pad} N{N} C{C} {H}x{H} K{K}:", "  ".join(out), flush=True)


def pool_rows(n):
    import torch

    import ember
    rng = np.random.default_rng(0)
    for N, C, H in POOL:
        x = rng.standard_normal((N, C, H, H)).astype(np.float32)
        g = rng.standard_normal((N, C, H // 2, H // 2)).astype(np.float32)
        fns = []
        for lib in (ember, torch):
            Xr, G = lib.from_numpy(x).requires_grad_(), lib.from_numpy(g)
            F = lib.nn.functional

            def fw(lib=lib, F=F, X=lib.from_numpy(x)):
                with lib.no_grad():
                    F.max_pool2d(X, 2)

            def fb(lib=lib, F=F, Xr=Xr, G=G):
                lib.autograd.grad(F.max_pool2d(Xr, 2), Xr, G)
            fns.append((fw, fb))
        e0, t0 = pair(fns[0][0], fns[1][0], n)
        e1, t1 = pair(fns[0][1], fns[1][1], n)
        print(f"max_pool2d 2x2 N{N} C{C} {H}x{H}: fwd {e0 / t0:.2f}  fwd+bwd {e1 / t1:.2f}",
              flush=True)


def main():
    import torch

    import ember
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    parts = "--parts" in sys.argv
    thr = int(args[0]) if args else 1
    mode = args[1] if len(args) > 1 else "all"
    torch.set_num_threads(thr)
    ember.set_num_threads(thr)
    if "--cpu" in sys.argv:
        CLOCK[0] = time.process_time
    if "--no-direct" in sys.argv:
        from ember._C import conv as CV
        CV._direct3(0)
    clock = "CPU" if "--cpu" in sys.argv else "wall"
    print(f"threads {thr}; ember time / torch time ({clock}), min of 9")
    only = [int(c.lstrip("C")) for a in sys.argv if a.startswith("--only=")
            for c in a[len("--only="):].split(",")]
    if mode in ("pad0", "all"):
        conv_rows(0, parts, 9, only)
    if mode in ("pad1", "all"):
        conv_rows(1, parts, 9, only)
    if mode in ("pool", "all"):
        pool_rows(9)


if __name__ == "__main__":
    main()
