"""float64 accuracy of ember's vectorised kernels against 80-bit long double.

Runs each float64 function on millions of random inputs (uniform over its working
range, uniform on [-3, 3], and log-uniform magnitudes down to 1e-300) plus edge
values, through the ISA ember picks at run time (``EMBER_ISA=generic/avx2/avx512``
picks another), and prints the largest error in float64 ulps of the long double
reference.  NumPy's long double ufuncs are the references; erf and erfc are
summed here in long double (series and continued fraction), erfinv refined from
ember's value by Newton steps on them.

Usage::

    python tools/accuracy_f64.py                 # 4M inputs per function
    python tools/accuracy_f64.py --n 400000 --only erf,pow
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ember  # noqa: E402

LD = np.longdouble
PI = LD("3.14159265358979323846264338327950288")
TWO_OVER_SQRTPI = 2 / np.sqrt(PI)


def _erf_series(a):
    # e^-a^2 sum 2^n a^(2n+1)/(2n+1)!!: positive terms, for 0 <= a <= 2
    term, s, a2 = a.copy(), a.copy(), 2 * a * a
    for n in range(1, 160):
        term = term * a2 / (2 * n + 1)
        s = s + term
    return TWO_OVER_SQRTPI * np.exp(-a * a) * s


def _erfc_cf(a):
    # Laplace's continued fraction, 200 terms: converged for a >= 1.5
    t = np.zeros_like(a)
    for k in range(200, 0, -1):
        t = (LD(k) / 2) / (a + t)
    return np.exp(-a * a) / np.sqrt(PI) / (a + t)


def erf_ld(x):
    """erf in long double: a positive series below 2, 1 - erfc (continued fraction) above."""
    x = np.asarray(x, dtype=LD)
    a = np.abs(x)
    r = np.where(a < 2, _erf_series(np.minimum(a, LD(2))), 1 - _erfc_cf(np.maximum(a, LD(2))))
    return np.copysign(r, x)


def erfc_ld(x):
    """erfc in long double: the continued fraction from 1.5 on, 1 - erf below,
    2 - erfc(-x) for negative x."""
    x = np.asarray(x, dtype=LD)
    a = np.abs(x)
    pos = np.where(a >= 1.5, _erfc_cf(np.maximum(a, LD(1.5))),
                   1 - _erf_series(np.minimum(a, LD(1.5))))
    return np.where(x < 0, 2 - pos, pos)


def erfinv_ref(y, x):
    """erfinv(y) in long double by two Newton steps from x (ember's value)."""
    a = np.abs(y).astype(LD)
    x = np.abs(x).astype(LD)
    for _ in range(2):
        f = np.where(a < 0.5, erf_ld(x) - a, -(erfc_ld(x) - (1 - a)))
        x = x - f / (TWO_OVER_SQRTPI * np.exp(-x * x))
    return np.copysign(x, y.astype(LD))


def _erfinv_ref(y):
    return erfinv_ref(y, ember.erfinv(ember.from_numpy(y.astype(np.float64))).numpy())


def _inputs(rng, n, lo, hi, pos=False, near_one=False):
    k = n // 3
    mag = np.exp(rng.uniform(-690, np.log(max(abs(lo), abs(hi))), k))
    x = np.concatenate([rng.uniform(lo, hi, k), rng.uniform(max(lo, -3), min(hi, 3), k),
                        mag, -mag])
    if near_one:    # 1 - y log-uniform down to 2^-53 (erfinv's tail), both signs
        t = 1 - np.exp(-rng.uniform(0, 36.7, k))
        x = np.concatenate([x, t, -t])
    x = x[(x >= lo) & (x <= hi)]
    return np.abs(x) if pos else x


UNARY = {   # name: (lo, hi, reference)
    "expm1": (-40, 709.7, np.expm1), "tanh": (-25, 25, np.tanh),
    "sinh": (-710.4, 710.4, np.sinh), "cosh": (-710.4, 710.4, np.cosh),
    "erf": (-7, 7, erf_ld), "erfc": (-7, 27.2, erfc_ld), "log10": (5e-324, 1.7e308, np.log10),
    "exp2": (-1074, 1023.9, np.exp2), "asin": (-1, 1, np.arcsin), "acos": (-1, 1, np.arccos),
    "atan": (-1e300, 1e300, np.arctan), "erfinv": (-1 + 2.0 ** -53, 1 - 2.0 ** -53, _erfinv_ref),
    "sin": (-1.6e6, 1.6e6, np.sin), "cos": (-1.6e6, 1.6e6, np.cos), "tan": (-1.6e6, 1.6e6, np.tan),
    "atanh": (-1, 1, np.arctanh),
}
SLOW = ("erf", "erfc", "erfinv")     # summed references: a tenth of the inputs


def _ulps(got, ref):
    r64 = ref.astype(np.float64)
    fin = np.isfinite(r64) & (r64 != 0)
    spacing = np.maximum(np.spacing(np.abs(r64[fin])), 5e-324)
    return np.abs((got[fin].astype(LD) - ref[fin]) / spacing)


def _binary(rng, n):
    k = n // 4
    a = np.concatenate([np.exp(rng.uniform(-700, 700, k)), rng.uniform(0.5, 2, k),
                        1 + rng.uniform(-1e-6, 1e-6, k), np.exp(rng.uniform(-700, 700, k))])
    b = np.concatenate([rng.uniform(-1, 1, k), rng.uniform(-2000, 2000, k),
                        rng.uniform(-5e8, 5e8, k), rng.uniform(-3, 3, k)])
    y = rng.standard_normal(n) * np.exp(rng.uniform(-50, 50, n))
    x = rng.standard_normal(n) * np.exp(rng.uniform(-50, 50, n))
    E = ember.from_numpy
    for name, u, v in (("pow", a, b), ("atan2", y, x), ("hypot", y, x)):
        ref = {"pow": np.power, "atan2": np.arctan2, "hypot": np.hypot}[name]
        with np.errstate(all="ignore"):
            yield name, _ulps(getattr(ember, name)(E(u), E(v)).numpy(),
                              ref(u.astype(LD), v.astype(LD)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=4_000_000)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    if np.finfo(LD).nmant < 60:
        sys.exit("needs an 80-bit long double")
    only = {w for w in args.only.split(",") if w}
    rng = np.random.default_rng(2026)
    print(f"{'function':10s} {'inputs':>10s} {'max ulp':>8s} {'> 1 ulp':>8s}")
    for name, (lo, hi, ref) in UNARY.items():
        if only and name not in only:
            continue
        t0 = time.time()
        x = _inputs(rng, args.n // 10 if name in SLOW else args.n, lo, hi, pos=lo > 0,
                    near_one=name == "erfinv")
        fn = getattr(ember.special, name) if name == "erfinv" else getattr(ember, name)
        got = fn(ember.from_numpy(x)).numpy()
        with np.errstate(all="ignore"):
            err = _ulps(got, np.asarray(ref(x.astype(LD)), dtype=LD))
        print(f"{name:10s} {x.size:10d} {float(err.max()):8.3f} {int((err > 1).sum()):8d}"
              f"   ({time.time() - t0:.0f} s)", flush=True)
    for name, err in _binary(rng, args.n):
        if not only or name in only:
            print(f"{name:10s} {err.size:10d} {float(err.max()):8.3f} {int((err > 1).sum()):8d}")


if __name__ == "__main__":
    main()
