"""Exhaustive float32 accuracy of ember's unary kernels.

Sweeps every float32 bit pattern (or every ``--stride``-th one) through each float32
kernel of ember's elementwise table (the ISA ember picks at run time, or
``--isa generic/avx2/avx512``) and the float32 special functions, against a float64
reference computed in C (libm; ember's float64 loop for special functions libm does
not have), and prints the maximum error in float32 ulps of the reference, how many
inputs exceed 1 ulp, and the inputs whose NaN / infinity / saturation disagrees with
the reference.  The harness (tools/accuracy_f32.c) is compiled on first use with the
system C compiler and OpenMP.

Usage::

    python tools/accuracy_f32.py                     # all 2^32 inputs, every function
    python tools/accuracy_f32.py --stride 4099 --only exp,tanh --threads 16
    python tools/accuracy_f32.py --check             # exit 1 if a bound in BOUNDS fails

The documented bounds (docs/accuracy.rst) are ``BOUNDS``; tests/test_accuracy_f32.py
runs a strided subset and the special values against them.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import struct
import subprocess
import sys
import sysconfig
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "tools", "accuracy_f32.c")
OUT_DIR = os.path.join(ROOT, "build", "accuracy_f32")

# Maximum error in float32 ulps over all 2^32 inputs, and whether NaN/inf/saturation
# must agree with the reference everywhere (the number of disagreeing inputs allowed).
BOUNDS = {
    "exp": 1.05, "exp2": 1.05, "expm1": 1.8, "log": 0.9, "log2": 1.8, "log10": 2.15,
    "log1p": 1.55, "sqrt": 0.51, "rsqrt": 1.6, "reciprocal": 0.51,
    # sin/cos/tan: reduced and evaluated in double below |x| = 2^20, Payne-Hanek above
    "sin": 1.0, "cos": 1.0, "tan": 1.5,
    "asin": 2.55, "acos": 1.35, "atan": 2.95, "sinh": 2.45, "cosh": 2.45, "tanh": 1.4,
    "asinh": 0.51, "acosh": 0.51, "atanh": 0.51, "sigmoid": 2.5,
    # gelu, gelu_tanh, silu and mish keep their bits in the negative tails; exact
    # gelu is evaluated in float (exp(-x^2/2) times a fitted rational)
    "gelu": 5.5, "gelu_tanh": 2.0, "silu": 3.45, "mish": 4.0, "softplus": 1.65,
    "erf": 2.65, "erfc": 4.9, "lgamma": 0.51,
    # the special functions evaluate float32 in double and round once: the bound is
    # against their own float64 algorithm (see docs/accuracy.rst)
    "special.digamma": 0.51, "special.erfinv": 0.51, "special.erfcx": 0.51,
    "special.ndtr": 0.51, "special.ndtri": 0.51, "special.log_ndtr": 0.51,
    "special.i0": 0.51, "special.i1e": 0.51, "special.bessel_j0": 0.51,
}


class Acc(ctypes.Structure):
    _fields_ = [("max_ulp", ctypes.c_double), ("max_ulp_sub", ctypes.c_double),
                ("worst_bits", ctypes.c_uint32),
                ("worst_got", ctypes.c_float), ("worst_ref", ctypes.c_double),
                ("tested", ctypes.c_uint64), ("over_1ulp", ctypes.c_uint64),
                ("special_bad", ctypes.c_uint64), ("special_bits", ctypes.c_uint32)]


def _compile() -> str:
    """Build the harness (once per source change) and return its path."""
    os.makedirs(OUT_DIR, exist_ok=True)
    lib = os.path.join(OUT_DIR, "libaccuracy_f32.so")
    inc = os.path.join(ROOT, "src_c", "include")
    # the kernel table's layout comes from ember's headers: rebuild when they change
    deps = [SRC] + [os.path.join(inc, h) for h in ("ember.h", "ember_ew.h", "ember_ew_ops.h",
                                                          "ember_special.h")]
    if os.path.exists(lib) and os.path.getmtime(lib) >= max(map(os.path.getmtime, deps)):
        return lib
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    cmd = [cc, "-std=c11", "-O2", "-fPIC", "-shared", "-fopenmp", "-fno-math-errno",
           "-I" + os.path.join(ROOT, "src_c", "include"), SRC, "-o", lib + ".tmp", "-lm"]
    subprocess.run(cmd, check=True)
    os.replace(lib + ".tmp", lib)
    return lib


class Harness:
    """The compiled harness bound to ember's loaded kernels."""

    def __init__(self, isa: str | None = None) -> None:
        from ember._C import elementwise, special

        h = ctypes.CDLL(_compile())
        h.em_acc_count.restype = ctypes.c_int
        h.em_acc_name.restype = ctypes.c_char_p
        h.em_acc_resolve.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                                     ctypes.POINTER(ctypes.c_void_p),
                                     ctypes.POINTER(ctypes.c_void_p),
                                     ctypes.POINTER(ctypes.c_int),
                                     ctypes.POINTER(ctypes.c_int)]
        h.em_acc_sweep.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int,
                                   ctypes.c_int, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64,
                                   ctypes.c_uint64, ctypes.c_void_p, ctypes.c_int,
                                   ctypes.POINTER(Acc)]
        ew = ctypes.CDLL(elementwise.__file__)
        getter = getattr(ew, "em_ew_get" if isa is None else f"em_ew_table_{isa}")
        getter.restype = ctypes.c_void_p
        self.table = getter()
        sp = ctypes.CDLL(special.__file__)
        self.special_unary = ctypes.cast(sp.em_special_unary, ctypes.c_void_p).value
        self.h = h
        self.names = [h.em_acc_name(i).decode() for i in range(h.em_acc_count())]

    def _resolve(self, name: str) -> tuple:
        f32, f64, ref, sat = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_int(), ctypes.c_int()
        if self.h.em_acc_resolve(self.names.index(name), self.table, self.special_unary,
                                 ctypes.byref(f32), ctypes.byref(f64), ctypes.byref(ref),
                                 ctypes.byref(sat)):
            raise RuntimeError(f"accuracy_f32: no float32/float64 kernel for {name}")
        return f32, f64, ref, sat

    def sweep(self, name: str, stride: int = 1, start: int = 0, stop: int = 1 << 32,
              bits: list | None = None, threads: int | None = None,
              reference: str | None = None) -> Acc:
        """Sweep function ``name`` over the float32 patterns start, start + stride, ...
        < stop, or over the patterns in ``bits``; ``reference`` judges it against
        another function's reference (the harness's self-test)."""
        f32, f64, ref, sat = self._resolve(name)
        if reference is not None:
            _, f64, ref, _ = self._resolve(reference)
        acc = Acc()
        arr = None
        if bits is not None:
            arr = (ctypes.c_uint32 * len(bits))(*bits)
            start, stop, stride = 0, len(bits), 1
        nt = threads or os.cpu_count() or 1
        rc = self.h.em_acc_sweep(f32, f64, ref, sat, None, start, stop, stride,
                                 ctypes.cast(arr, ctypes.c_void_p) if arr else None, nt,
                                 ctypes.byref(acc))
        if rc:
            raise MemoryError("accuracy_f32: out of memory")
        return acc


def special_bits() -> list:
    """Float32 patterns where saturation, overflow and special values live: zeros,
    infinities, NaN, the denormal and normal limits, and dense runs around them."""
    vals = [0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1.0, -1.0, 0.5, -0.5,
            2.0, -2.0, 9.0, 9.01, 10.0, 20.0, -20.0, 88.7, 89.0, -87.3, -104.0, 1e-45,
            1.17549435e-38, 3.4028235e38, -3.4028235e38]
    out = [struct.unpack("<I", struct.pack("<f", v))[0] for v in vals]
    for base in out[:]:
        out.extend((base + d) & 0xFFFFFFFF for d in range(-64, 65))
    return sorted(set(out))


def _fmt_bits(b: int) -> str:
    return f"{struct.unpack('<f', struct.pack('<I', b))[0]:.9g}"


def main(argv: list | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stride", type=int, default=1, help="test every N-th bit pattern")
    ap.add_argument("--only", default="", help="comma-separated function names")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--isa", choices=["generic", "avx2", "avx512"], default=None)
    ap.add_argument("--check", action="store_true", help="exit 1 when a bound fails")
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = ap.parse_args(argv)
    h = Harness(args.isa)
    names = [n for n in args.only.split(",") if n] or h.names
    ok = True
    if args.markdown:
        print("| function | inputs | max ulp | bound | > 1 ulp | worst input | subnormal max ulp "
              "| special |")
        print("|---|---|---|---|---|---|---|---|")
    for name in names:
        t0 = time.perf_counter()
        a = h.sweep(name, stride=args.stride, threads=args.threads)
        s = h.sweep(name, bits=special_bits(), threads=args.threads)
        bad = a.special_bad + s.special_bad
        worst = max(a.max_ulp, s.max_ulp)
        good = worst <= BOUNDS.get(name, float("inf")) and bad == 0
        ok &= good
        sb = s.special_bits if s.special_bad else a.special_bits
        special = "ok" if bad == 0 else f"{bad} (e.g. x={_fmt_bits(sb)})"
        if args.markdown:
            print(f"| {name} | {a.tested} | {worst:.3f} | {BOUNDS.get(name, '-')} | "
                  f"{a.over_1ulp} | {_fmt_bits(a.worst_bits)} | {a.max_ulp_sub:.3g} | "
                  f"{special} |")
        else:
            print(f"{name:20s} inputs={a.tested:<11d} max_ulp={worst:8.3f} "
                  f"(bound {BOUNDS.get(name, '-')}) >1ulp={a.over_1ulp:<9d} "
                  f"worst x={_fmt_bits(a.worst_bits)} got={a.worst_got:.9g} "
                  f"ref={a.worst_ref:.17g} subnormal={a.max_ulp_sub:.3g} special={special} "
                  f"[{time.perf_counter() - t0:.1f} s]{'' if good else '  FAIL'}", flush=True)
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    sys.exit(main())
