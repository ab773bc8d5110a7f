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
    from harness import EM, Dev, c_enums, nd

    try:
        import torch
        has_torch = torch.cuda.is_available()
    except ImportError:
        torch, has_torch = None, False
    ew, rd = c_enums("ember_ew.h"), c_enums("ember_reduce.h")
    dev = Dev()
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
    dev.close()
    print("\nember/torch is the time ratio: below 1 means ember is faster")
    print(f"{'kernel':24s} {'ember ms':>10s} {'torch ms':>10s} {'ember/torch':>12s}  note")
    for name, e, t, note in rows:
        ratio = f"{e / t:.2f}x" if t else "-"
        print(f"{name:24s} {e:10.3f} {t if t else float('nan'):10.3f} {ratio:>12s}  {note}")
    if not has_torch:
        print("(torch with CUDA is not installed: no torch column)")


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
    speed_table()
    return rc


if __name__ == "__main__":
    sys.exit(main())
