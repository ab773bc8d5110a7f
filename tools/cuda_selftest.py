"""One command for a machine with a GPU: run the CUDA device tests, then time
ember's CUDA kernels beside PyTorch on the same GPU (when torch with CUDA is
installed).

    python tools/cuda_selftest.py            # tests + speed table
    python tools/cuda_selftest.py --no-tests # speed table only

Without a usable device it says why (ember.cuda.unavailable_reason()) and the
tests report themselves skipped.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests", "cuda"))

import numpy as np  # noqa: E402

import ember  # noqa: E402


def _timer(fn, iters=20):
    """Median milliseconds of fn() over iters runs, timed with CUDA events."""
    fn()
    ember.cuda.synchronize()
    times = []
    for _ in range(iters):
        a, b = ember.cuda.Event(enable_timing=True), ember.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return float(np.median(times))


def _torch_timer(torch, fn, iters=20):
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return float(np.median(times))


def _peak_bandwidth():
    """Bytes/s from the memory clock and bus width (None when the driver hides them)."""
    from ember.cuda import _rt_call

    clock, bus = ctypes.c_int(0), ctypes.c_int(0)
    try:
        _rt_call("cudaDeviceGetAttribute", ctypes.byref(clock), 36, 0)
        _rt_call("cudaDeviceGetAttribute", ctypes.byref(bus), 37, 0)
    except RuntimeError:
        return None
    return 2.0 * clock.value * 1e3 * bus.value / 8 if clock.value and bus.value else None


def speed_table():
    """Print one row per kernel as it is measured; a section that fails prints its
    error and the table goes on with the next one."""
    import traceback

    from harness import Dev

    try:
        import torch
        has_torch = torch.cuda.is_available()
    except ImportError:
        torch, has_torch = None, False
    torch = torch if has_torch else None
    dev = Dev()
    print("\nember/torch is the time ratio: below 1 means ember is faster")
    print(f"{'kernel':24s} {'ember ms':>10s} {'torch ms':>10s} {'ember/torch':>12s}  note")
    sections = [lambda: _core_rows(dev, torch), lambda: _nn_and_data_rows(dev, torch),
                lambda: _training_rows(torch), lambda: _scan_optim_rows(torch),
                lambda: _extra_rows(torch)]
    failed = 0
    for section in sections:
        try:
            for name, e, t, note in section():
                ratio = f"{e / t:.2f}x" if t else "-"
                print(f"{name:24s} {e:10.3f} {t if t else float('nan'):10.3f} {ratio:>12s}  "
                      f"{note}", flush=True)
        except Exception:       # noqa: BLE001 - report and go on with the next section
            failed += 1
            traceback.print_exc()
    dev.close()
    if not has_torch:
        print("(torch with CUDA is not installed: no torch column)")
    return failed


def _core_rows(dev, torch):
    """add bandwidth, GEMM (fp16, tf32, fp32), softmax, row sums and layer_norm."""
    from harness import EM, c_enums, nd

    has_torch = torch is not None
    ew, rd = c_enums("ember_ew.h"), c_enums("ember_reduce.h")
    lib = dev.lib

    def P(o):
        return ctypes.cast(ctypes.pointer(o), ctypes.c_void_p)

    rows = []
    n = 1 << 26
    a, b, out = (dev.put(np.ones(n, np.float32)), dev.put(np.ones(n, np.float32)),
                 dev.alloc((n,), np.float32))
    d = nd((n,), (1,), (1,), (1,))
    ms = _timer(lambda: lib.emc_ew_binary(ew["EW_ADD"], EM["float32"], out, a, b, P(d), None,
                                          None))
    gbs = 3 * 4 * n / ms / 1e6
    peak = _peak_bandwidth()
    tms = None
    if has_torch:
        ta, tb = torch.ones(n, device="cuda"), torch.ones(n, device="cuda")
        tms = _torch_timer(torch, lambda: torch.add(ta, tb))
    rows.append(("add f32 2^26", ms, tms,
                 f"{gbs:.0f} GB/s" + (f" = {100 * gbs * 1e9 / peak:.0f}% of peak" if peak else "")))
    M = 8192
    ha = dev.put(np.ones((M, M), np.float16) * np.float16(0.01))
    hc = dev.alloc((M, M), np.float16)
    ms = _timer(lambda: lib.emc_gemm(EM["float16"], 0, 0, M, M, M, 1.0, ha, M, 0, ha, M, 0, 0.0,
                                     hc, M, 0, 1, 0, None), iters=5)
    tms = None
    if has_torch:
        th = torch.full((M, M), 0.01, device="cuda", dtype=torch.float16)
        tms = _torch_timer(torch, lambda: th @ th, iters=5)
    rows.append(("gemm f16 8192^3", ms, tms, f"{2 * M ** 3 / ms / 1e9:.0f} TFLOP/s"))
    ms = _timer(lambda: lib.emc_gemm(EM["float16"], 0, 1, M, M, M, 1.0, ha, M, 0, ha, M, 0, 0.0,
                                     hc, M, 0, 1, 0, None), iters=5)
    tms = _torch_timer(torch, lambda: th @ th.t(), iters=5) if has_torch else None
    rows.append(("gemm f16 8192^3 a@b.T", ms, tms, f"{2 * M ** 3 / ms / 1e9:.0f} TFLOP/s"))
    # the mma.sync kernel where the Hopper one is the default (EMBER_CUDA_WGMMA=0)
    if lib.emc_gemm_wgmma():
        os.environ["EMBER_CUDA_WGMMA"] = "0"
        try:
            for tb, name in [(0, "gemm f16 8192^3 mma.sync"), (1, "gemm f16 8192^3 a@b.T mma")]:
                ms = _timer(lambda: lib.emc_gemm(EM["float16"], 0, tb, M, M, M, 1.0, ha, M, 0, ha,
                                                 M, 0, 0.0, hc, M, 0, 1, 0, None), iters=5)
                tms = (_torch_timer(torch, lambda: th @ (th.t() if tb else th), iters=5)
                       if has_torch else None)
                rows.append((name, ms, tms, f"{2 * M ** 3 / ms / 1e9:.0f} TFLOP/s"))
        finally:
            del os.environ["EMBER_CUDA_WGMMA"]
    M = 4096
    fa = dev.put(np.full((M, M), 0.01, np.float32))
    fc = dev.alloc((M, M), np.float32)
    ms = _timer(lambda: lib.emc_gemm(EM["float32"], 0, 0, M, M, M, 1.0, fa, M, 0, fa, M, 0, 0.0,
                                     fc, M, 0, 1, 1, None), iters=5)
    tms = None
    if has_torch:
        torch.backends.cuda.matmul.allow_tf32 = True
        tf = torch.full((M, M), 0.01, device="cuda")
        tms = _torch_timer(torch, lambda: tf @ tf, iters=5)
    rows.append(("gemm tf32 4096^3", ms, tms, f"{2 * M ** 3 / ms / 1e9:.0f} TFLOP/s"))
    ms = _timer(lambda: lib.emc_gemm(EM["float32"], 0, 1, M, M, M, 1.0, fa, M, 0, fa, M, 0, 0.0,
                                     fc, M, 0, 1, 1, None), iters=5)
    tms = _torch_timer(torch, lambda: tf @ tf.t(), iters=5) if has_torch else None
    rows.append(("gemm tf32 4096^3 a@b.T", ms, tms, f"{2 * M ** 3 / ms / 1e9:.0f} TFLOP/s"))
    ms = _timer(lambda: lib.emc_gemm(EM["float32"], 0, 0, M, M, M, 1.0, fa, M, 0, fa, M, 0, 0.0,
                                     fc, M, 0, 1, 0, None), iters=5)
    tms = None
    if has_torch:
        torch.backends.cuda.matmul.allow_tf32 = False
        tms = _torch_timer(torch, lambda: tf @ tf, iters=5)
    rows.append(("gemm f32 4096^3", ms, tms, f"{2 * M ** 3 / ms / 1e9:.0f} TFLOP/s"))
    R, C = 4096, 4096
    x = dev.put(np.random.default_rng(0).standard_normal((R, C)).astype(np.float32))
    y = dev.alloc((R, C), np.float32)
    ms = _timer(lambda: lib.emc_softmax(0, EM["float32"], x, R, C, 1, y, None))
    tms = None
    if has_torch:
        tx = torch.randn(R, C, device="cuda")
        tms = _torch_timer(torch, lambda: torch.softmax(tx, 1))
    rows.append(("softmax 4096x4096", ms, tms, ""))
    s = dev.alloc((R,), np.float32)
    ms = _timer(lambda: lib.emc_reduce(rd["RD_SUM"], EM["float32"], x, R, C, 1, s, 1.0, None))
    tms = _torch_timer(torch, lambda: tx.sum(1)) if has_torch else None
    rows.append(("sum rows 4096x4096", ms, tms, ""))
    mean, rstd = dev.alloc((R,), np.float32), dev.alloc((R,), np.float32)
    ms = _timer(lambda: lib.emc_layer_norm_fwd(EM["float32"], x, None, None, R, C, 1e-5, y, mean,
                                               rstd, None))
    tms = _torch_timer(torch, lambda: torch.nn.functional.layer_norm(tx, (C,))) \
        if has_torch else None
    rows.append(("layer_norm 4096x4096", ms, tms, ""))
    return rows


def _nn_and_data_rows(dev, torch):
    """conv2d, batch_norm, pooling, sort/topk, scatter_add, norms and randperm rows."""
    from harness import EM, Conv2dParams, Pool2dParams, nd

    lib, rows = dev.lib, []
    rng = np.random.default_rng(0)

    def P(o):
        return ctypes.cast(ctypes.pointer(o), ctypes.c_void_p)

    def row(name, fn, tfn, note="", iters=20):
        ms = _timer(fn, iters)
        tms = _torch_timer(torch, tfn, iters) if torch is not None else None
        rows.append((name, ms, tms, note))

    N, C, H, W, OC = 32, 64, 56, 56, 64
    x_np = rng.standard_normal((N, C, H, W)).astype(np.float32)
    w_np = rng.standard_normal((OC, C, 3, 3)).astype(np.float32)
    x, w = dev.put(x_np), dev.put(w_np)
    y = dev.alloc((N, OC, H, W), np.float32)
    cp = Conv2dParams(N, C, H, W, OC, 3, 3, 1, 1, 1, 1, 1, 1, 1, H, W)
    flop = 2.0 * N * OC * H * W * C * 9
    tx = tw = None
    if torch is not None:
        tx, tw = torch.from_numpy(x_np).cuda(), torch.from_numpy(w_np).cuda()
        torch.backends.cudnn.allow_tf32 = False
    ms = _timer(lambda: lib.emc_conv2d_fwd(EM["float32"], P(cp), x, w, None, y, None), 5)
    tms = _torch_timer(torch, lambda: torch.nn.functional.conv2d(tx, tw, padding=1), 5) \
        if torch is not None else None
    rows.append(("conv2d 32x64x56² 3x3 f32", ms, tms, f"{flop / ms / 1e9:.1f} TFLOP/s"))
    dx = dev.alloc((N, C, H, W), np.float32)
    dw = dev.alloc((OC, C, 3, 3), np.float32)
    row("conv2d bwd input", lambda: lib.emc_conv2d_bwd_input(EM["float32"], P(cp), y, w, dx, None),
        lambda: torch.nn.grad.conv2d_input(tx.shape, tw, tx, padding=1), iters=5)
    row("conv2d bwd weight", lambda: lib.emc_conv2d_bwd_weight(EM["float32"], P(cp), x, y, dw,
                                                                None, None),
        lambda: torch.nn.grad.conv2d_weight(tx, tw.shape, tx, padding=1), iters=5)
    gamma, beta = dev.put(np.ones(C, np.float32)), dev.put(np.zeros(C, np.float32))
    rm, rv = dev.put(np.zeros(C, np.float32)), dev.put(np.ones(C, np.float32))
    sm, si = dev.alloc((C,), np.float32), dev.alloc((C,), np.float32)
    yb = dev.alloc((N, C, H, W), np.float32)
    tg = trm = trv = None
    if torch is not None:
        tg, trm, trv = (torch.ones(C, device="cuda"), torch.zeros(C, device="cuda"),
                        torch.ones(C, device="cuda"))
    row("batch_norm train fwd", lambda: lib.emc_batch_norm_fwd(
        EM["float32"], x, gamma, beta, rm, rv, N, C, H * W, 1, 0.1, 1e-5, yb, sm, si, None),
        lambda: torch.nn.functional.batch_norm(tx, trm, trv, tg, tg, True))
    pp = Pool2dParams(N * C, H, W, 3, 3, 2, 2, 1, 1, 1, 1, 28, 28, 1, 0)
    yp, ip = dev.alloc((N, C, 28, 28), np.float32), dev.alloc((N, C, 28, 28), np.int64)
    row("max_pool2d 3x3/2 fwd", lambda: lib.emc_max_pool2d_fwd(EM["float32"], P(pp), x, yp, ip,
                                                                None),
        lambda: torch.nn.functional.max_pool2d(tx, 3, 2, 1, return_indices=True))
    R, L = 256, 32768
    s_np = rng.standard_normal((R, L)).astype(np.float32)
    sx = dev.put(s_np)
    sv, si2 = dev.alloc((R, L), np.float32), dev.alloc((R, L), np.int64)
    ts = torch.from_numpy(s_np).cuda() if torch is not None else None
    row("sort 256x32768 f32", lambda: lib.emc_sort(EM["float32"], sx, R, L, 0, sv, si2, None),
        lambda: torch.sort(ts, dim=-1, stable=True), iters=5)
    kv, ki = dev.alloc((R, 50), np.float32), dev.alloc((R, 50), np.int64)
    row("topk 256x32768 k=50", lambda: lib.emc_topk(EM["float32"], sx, R, L, 50, 1, kv, ki,
                                                     None),
        lambda: torch.topk(ts, 50, dim=-1), iters=5)
    n = 1 << 24
    idx_np = rng.integers(0, 1 << 16, n)
    src_np = rng.standard_normal(n).astype(np.float32)
    pidx, psrc = dev.put(idx_np), dev.put(src_np)
    acc = dev.alloc((1 << 16,), np.float32)
    dsc = nd((n,), (0,), (1,), (1,))
    tacc = tidx = tsrc = None
    if torch is not None:
        tacc = torch.zeros(1 << 16, device="cuda")
        tidx, tsrc = torch.from_numpy(idx_np).cuda(), torch.from_numpy(src_np).cuda()
    for det in (0, 1):
        row(f"scatter_add 2^24{' det' if det else ''}",
            lambda det=det: lib.emc_scatter(1, EM["float32"], acc, 1 << 16, 1, pidx, psrc, P(dsc),
                                            det, None),
            lambda: tacc.scatter_add_(0, tidx, tsrc), iters=5)
    nout = dev.alloc((R,), np.float32)
    row("vector_norm p=2 rows", lambda: lib.emc_norm(EM["float32"], sx, R, L, 1, 2.0, nout, None),
        lambda: torch.linalg.vector_norm(ts, 2, dim=-1))
    perm = dev.alloc((1 << 20,), np.int64)
    row("randperm 2^20", lambda: lib.emc_randperm(perm, 1 << 20, 1, 0, None),
        lambda: torch.randperm(1 << 20, device="cuda"), iters=5)
    return rows


def _training_rows(torch):
    """One SGD step (forward, backward, update) of a small CNN on device tensors,
    ember against the same architecture in torch (timing only: separate weights)."""
    def build(nn):
        return nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
            nn.Linear(64, 10))

    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 3, 32, 32)).astype(np.float32)
    y = rng.integers(0, 10, 64)
    model = build(ember.nn).cuda()
    opt = ember.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    ex, ey = ember.tensor(x).cuda(), ember.tensor(y).cuda()

    def step():
        opt.zero_grad()
        ember.nn.functional.cross_entropy(model(ex), ey).backward()
        opt.step()

    ms = _timer(step, 10)
    tms = None
    if torch is not None:
        tm = build(torch.nn).cuda()
        topt = torch.optim.SGD(tm.parameters(), lr=0.01, momentum=0.9)
        tx, ty = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()

        def tstep():
            topt.zero_grad()
            torch.nn.functional.cross_entropy(tm(tx), ty).backward()
            topt.step()

        tms = _torch_timer(torch, tstep, 10)
    return [("CNN train step 64x3x32²", ms, tms, "SGD, conv+bn+pool")]


def _scan_optim_rows(torch):
    """cumsum, nonzero, an Adam step and clip_grad_norm_ through ember's tensor API."""
    rows = []

    def row(name, fn, tfn, iters=20):
        ms = _timer(fn, iters)
        tms = _torch_timer(torch, tfn, iters) if torch is not None else None
        rows.append((name, ms, tms, ""))

    n = 1 << 24
    x = ember.randn(n, device="cuda")
    m = x > 1.0
    tx = torch.randn(n, device="cuda") if torch is not None else None
    tm = tx > 1.0 if torch is not None else None
    row("cumsum f32 2^24", lambda: ember.cumsum(x, 0), lambda: torch.cumsum(tx, 0))
    row("cumsum 4096 rows x 4096", lambda: ember.cumsum(x.view(4096, 4096), 1),
        lambda: torch.cumsum(tx.view(4096, 4096), 1))
    row("nonzero 2^24 (16%)", lambda: ember.nonzero(m), lambda: torch.nonzero(tm))
    row("masked_select 2^24", lambda: ember.masked_select(x, m),
        lambda: torch.masked_select(tx, tm))
    shapes = [(1024, 1024)] * 16            # 16 M parameters in 16 tensors
    ps = [ember.zeros(s, device="cuda", requires_grad=True) for s in shapes]
    for p in ps:
        p.grad = ember.randn(p.shape, device="cuda")
    opt = ember.optim.AdamW(ps, lr=1e-3)
    tps, topt = [], None
    if torch is not None:
        tps = [torch.zeros(s, device="cuda", requires_grad=True) for s in shapes]
        for p in tps:
            p.grad = torch.randn(p.shape, device="cuda")
        topt = torch.optim.AdamW(tps, lr=1e-3)
    row("AdamW step 16x1M", opt.step, lambda: topt.step())
    row("clip_grad_norm_ 16x1M", lambda: ember.nn.utils.clip_grad_norm_(ps, 1.0),
        lambda: torch.nn.utils.clip_grad_norm_(tps, 1.0))
    return rows


def _extra_rows(torch):
    """addmm, adaptive max pooling, max pooling's gather backward, deterministic
    index_add, a scan down few long columns, topk of a few and fused attention
    (tensor API)."""
    import ember.nn.functional as F
    from ember._C import conv as _conv

    rows = []

    def row(name, fn, tfn, iters=20):
        ms = _timer(fn, iters)
        tms = _torch_timer(torch, tfn, iters) if torch is not None else None
        rows.append((name, ms, tms, ""))

    def both(shape, seed):
        a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
        return ember.tensor(a).cuda(), (torch.from_numpy(a).cuda() if torch is not None
                                        else None)

    (c, tc), (a, ta), (b, tb) = both((4096, 4096), 1), both((4096, 4096), 2), \
        both((4096, 4096), 3)
    row("addmm f32 4096^3", lambda: ember.addmm(c, a, b, beta=0.5),
        lambda: torch.addmm(tc, ta, tb, beta=0.5), iters=5)
    x, tx = both((32, 64, 56, 56), 4)
    row("adaptive_max_pool2d ->7", lambda: F.adaptive_max_pool2d(x, 7, True),
        lambda: torch.nn.functional.adaptive_max_pool2d(tx, 7, True))
    y, idx = F.max_pool2d(x, 3, 2, 1, return_indices=True)
    g = ember.ones(y.shape, device="cuda")
    tidx = tg = None
    if torch is not None:
        _, tidx = torch.nn.functional.max_pool2d(tx, 3, 2, 1, return_indices=True)
        tg = torch.ones(_.shape, device="cuda")
    row("max_pool2d 3x3/2 bwd", lambda: _conv.max_pool2d_backward(g, x, idx, 3, 2, 1),
        lambda: torch.ops.aten.max_pool2d_with_indices_backward(
            tg, tx, [3, 3], [2, 2], [1, 1], [1, 1], False, tidx))
    src, tsrc = both((1 << 20, 64), 5)
    ii = np.random.default_rng(6).integers(0, 4096, 1 << 20)
    ei, ti = ember.tensor(ii).cuda(), (torch.from_numpy(ii).cuda() if torch is not None
                                       else None)
    acc = ember.zeros(4096, 64, device="cuda")
    tacc = torch.zeros(4096, 64, device="cuda") if torch is not None else None
    prev = ember.are_deterministic_algorithms_enabled()
    ember.use_deterministic_algorithms(True)
    tprev = torch.are_deterministic_algorithms_enabled() if torch is not None else False
    if torch is not None:
        torch.use_deterministic_algorithms(True)
    try:
        row("index_add det 2^20x64", lambda: acc.index_add_(0, ei, src),
            lambda: tacc.index_add_(0, ti, tsrc), iters=5)
    finally:
        ember.use_deterministic_algorithms(prev)
        if torch is not None:
            torch.use_deterministic_algorithms(tprev)
    col, tcol = both((1 << 22, 4), 7)
    row("cumsum 2^22 x 4 cols", lambda: ember.cumsum(col, 0), lambda: torch.cumsum(tcol, 0))
    r, tr = both((64, 1 << 17), 8)
    row("topk 64x2^17 k=8", lambda: ember.topk(r, 8), lambda: torch.topk(tr, 8))
    (aq, taq), (ak, tak), (av, tav) = (both((8, 16, 1024, 64), s) for s in (9, 10, 11))
    sdpa, tsdpa = F.scaled_dot_product_attention, (
        torch.nn.functional.scaled_dot_product_attention if torch is not None else None)
    row("sdpa causal 8x16x1024x64", lambda: sdpa(aq, ak, av, is_causal=True),
        lambda: tsdpa(taq, tak, tav, is_causal=True), iters=5)
    aq.requires_grad_()
    if torch is not None:
        taq.requires_grad_()
    row("sdpa causal fwd+bwd p=0.1", lambda: sdpa(aq, ak, av, dropout_p=0.1,
                                                  is_causal=True).sum().backward(),
        lambda: tsdpa(taq, tak, tav, dropout_p=0.1, is_causal=True).sum().backward(), iters=5)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-tests", action="store_true", help="skip the device tests")
    args = ap.parse_args(argv)
    rc = 0
    if not args.no_tests:
        rc = subprocess.call([sys.executable, "-m", "pytest", os.path.join(ROOT, "tests", "cuda"),
                              "-m", "cuda", "-q", "-rs", "-p", "no:cacheprovider"], cwd=ROOT)
    if not ember.cuda.is_available():
        print(f"no CUDA device: {ember.cuda.unavailable_reason()}")
        return rc
    print(f"device: {ember.cuda.get_device_name()}")
    return rc or (1 if speed_table() else 0)


if __name__ == "__main__":
    sys.exit(main())
