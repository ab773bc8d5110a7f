"""The stand-in's scans, stream compaction and optimizer steps (NumPy references of
src_cuda/scan.cu and optim.cu), added to tests/cuda/fake_device.py's FakeLib."""

from __future__ import annotations

import numpy as np

from tests.cuda.fake_device import _E_DTYPE, _guarded, _store, _v, view


@_guarded
class ScanFakes:
    def emc_scan(self, op, dt, x, O, Kn, In, out, stream):
        self.calls.append(("scan", op, dt))
        if dt not in (5, 8, 9) or (dt == 5 and op == 4):
            return self._fail(_E_DTYPE, "fake scan dtype")
        v = view(_v(x), dt, (O, Kn, In)).astype(np.int64 if dt == 5 else np.float64)
        with np.errstate(all="ignore"):
            r = {0: np.cumsum, 1: np.cumprod, 4: np.logaddexp.accumulate}[op](v, axis=1)
        _store(view(_v(out), dt, (O, Kn, In)), r, dt)
        return 0

    def emc_mask_positions(self, mask, n, pos, stream):
        self.calls.append("mask_positions")
        p = view(_v(pos), 5, (_v(n) + 1,))
        p[0] = 0
        p[1:] = np.cumsum(view(_v(mask), 0, (_v(n),)) != 0)
        return 0

    def emc_nonzero(self, mask, ndim, shape, n, pos, out, stream):
        self.calls.append("nonzero")
        shp = tuple(shape[i] for i in range(ndim))
        m = view(_v(mask), 0, shp)
        p = view(_v(pos), 5, (_v(n) + 1,))
        cnt = int(p[-1])
        view(_v(out), 5, (cnt, ndim))[...] = np.argwhere(m)
        return 0

    def _rows(self, isz, ptr, n):
        return view(_v(ptr), 1, (n, isz))

    def emc_masked_select(self, isz, x, mask, pos, n, out, stream):
        self.calls.append("masked_select")
        m = view(_v(mask), 0, (_v(n),)).astype(bool)
        p = view(_v(pos), 5, (_v(n) + 1,))
        self._rows(isz, out, int(p[-1]))[p[:-1][m]] = self._rows(isz, x, _v(n))[m]
        return 0

    def emc_masked_scatter(self, isz, out, mask, pos, n, src, stream):
        self.calls.append("masked_scatter")
        m = view(_v(mask), 0, (_v(n),)).astype(bool)
        p = view(_v(pos), 5, (_v(n) + 1,))
        self._rows(isz, out, _v(n))[m] = self._rows(isz, src, int(p[-1]))[p[:-1][m]]
        return 0


def extend(cls):
    """Give the stand-in library ``cls`` the fakes above."""
    for name, fn in list(vars(ScanFakes).items()):
        if name.startswith("emc_") or name.startswith("_rows"):
            setattr(cls, name, fn)
    return cls
