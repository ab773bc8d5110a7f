"""The stand-in's complex kernels (src_cuda/complex.cu), added to
tests/cuda/fake_device.py's FakeLib: the elementwise ones run the kernels' own
element functions on the host (``emc_cew_host`` of the built library, the formulas of
ember_complex.h), copies and the product are NumPy references."""

from __future__ import annotations

import numpy as np

from tests.cuda.fake_device import _NP, _guarded, _nd, _store, _v, _vals, view

_C = (10, 11)


def _flip(v, bits):
    if bits & 1:
        v = np.conj(v)
    if bits & 2:
        v = -v
    return v


@_guarded
class ComplexFakes:
    def _cx(self, family, op, dt, out_dt, shape, strides, ptrs, aux):
        ins = [np.ascontiguousarray(view(p, dt, shape, st)) for p, st in zip(ptrs[1:],
                                                                            strides[1:])]
        res = np.empty(shape, _NP[out_dt])
        n = res.size
        if n:
            a = ins[0]
            b = ins[1] if len(ins) > 1 else a
            rc = self.host.emc_cew_host(family, op, dt, res.ctypes.data, a.ctypes.data,
                                        b.ctypes.data, n, aux)
            if rc:
                return self._fail(rc, "fake: complex op")
        view(ptrs[0], out_dt, shape, strides[0])[...] = res
        return 0

    def emc_cew_unary(self, op, dt, out, x, nd, stream):
        self.calls.append(("cunary", op, dt))
        shape, st = _nd(nd)
        real = {10: 8, 11: 9}.get(dt, dt) if op == 1 else dt      # EW_ABS: a real out
        return self._cx(0, op, dt, real, shape, st, [_v(out), _v(x)], None)

    def emc_cew_binary(self, op, dt, out, a, b, nd, aux, stream):
        self.calls.append(("cbinary", op, dt))
        shape, st = _nd(nd)
        return self._cx(1, op, dt, dt, shape, st, [_v(out), _v(a), _v(b)], aux)

    def emc_cew_compare(self, op, dt, out, a, b, nd, stream):
        self.calls.append(("ccompare", op, dt))
        shape, st = _nd(nd)
        return self._cx(2, op, dt, 0, shape, st, [_v(out), _v(a), _v(b)], None)

    def emc_cew_predicate(self, op, dt, out, x, nd, stream):
        self.calls.append(("cpredicate", op, dt))
        shape, st = _nd(nd)
        return self._cx(3, op, dt, 0, shape, st, [_v(out), _v(x)], None)

    def emc_copy_math(self, dd, dst, dbits, sd, src, sbits, nd, stream):
        self.calls.append(("copy_math", dd, _v(dbits), sd, _v(sbits)))
        shape, (s0, s1) = _nd(nd)
        v = _vals(view(_v(src), sd, shape, s1), sd)
        v = _flip(_flip(v.astype(np.complex128) if sd in _C else v, _v(sbits)), _v(dbits))
        if dd not in _C and sd in _C:
            v = v.real                       # a real destination takes the real part
        if 0 < dd < 6 and v.dtype.kind == "f":
            v = v.astype(np.int64)           # through int64, as the C casts
        _store(view(_v(dst), dd, shape, s0), v, dd)
        return 0

    def emc_cprod(self, dt, x, O, Kn, In, out, stream):
        self.calls.append(("cprod", dt))
        if dt not in _C:
            return self._fail(10001, "fake cprod dtype")
        v = view(_v(x), dt, (O, Kn, In)).astype(np.complex128)
        acc = np.ones((O, In), np.complex128)
        for k in range(Kn):                  # in order, as the kernel
            acc = acc * v[:, k]
        view(_v(out), dt, (O, In))[...] = acc
        return 0


def extend(lib):
    """Give the stand-in library the fakes above."""
    for name, fn in list(vars(ComplexFakes).items()):
        if name.startswith(("emc_", "_cx")):
            setattr(lib, name, fn)
