"""The stand-in's scans, stream compaction and optimizer steps (references of
src_cuda/scan.cu and optim.cu), added to tests/cuda/fake_device.py's FakeLib."""

from __future__ import annotations

import ctypes

import numpy as np

import ember
from ember._C import foreach as _fe
from ember._C import random as _rnd
from tests.cuda.fake_device import _E_DTYPE, _guarded, _store, _v, _vals, view


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

    def emc_cumext(self, op, dt, x, O, Kn, In, vals, idx, stream):
        self.calls.append(("cumext", op, dt))
        if dt not in (5, 8, 9):
            return self._fail(_E_DTYPE, "fake cumext dtype")
        v = view(_v(x), dt, (O, Kn, In))
        out, ix = view(_v(vals), dt, (O, Kn, In)), view(_v(idx), 5, (O, Kn, In))
        b, bi = v[:, 0].copy(), np.zeros((O, In), np.int64)
        for k in range(Kn):
            c = v[:, k]
            take = np.isnan(c) | (~np.isnan(b) & ((c >= b) if op == 2 else (c <= b))) \
                if dt != 5 else ((c >= b) if op == 2 else (c <= b))
            b, bi = np.where(take, c, b), np.where(take, k, bi)
            out[:, k], ix[:, k] = b, bi
        return 0

    # the same tiles as scan.cu's (CP_TILE)
    _mask_tile = 4096

    def _mask_tiles_of(self, n):
        return -(-n // self._mask_tile) if n > 0 else 0

    def emc_mask_tiles(self, n):
        return self._mask_tiles_of(_v(n))

    def emc_mask_count(self, mask, n, offs, stream):
        self.calls.append("mask_count")
        n = _v(n)
        tiles = self._mask_tiles_of(n)
        o = view(_v(offs), 5, (tiles + 1,))
        o[0] = 0
        if tiles:
            m = np.zeros(tiles * self._mask_tile, np.int64)
            m[:n] = view(_v(mask), 0, (n,)) != 0
            o[1:] = np.cumsum(m.reshape(tiles, -1).sum(1))
        return 0

    def _mask_ranks(self, mask, n, offs):
        """(selected, count): the mask's nonzero flags and the total from offs."""
        n = _v(n)
        m = view(_v(mask), 0, (n,)) != 0
        cnt = int(view(_v(offs), 5, (self._mask_tiles_of(n) + 1,))[-1])
        assert cnt == int(m.sum()), "offs does not match the mask"
        return m, cnt

    def emc_nonzero(self, mask, ndim, shape, n, offs, out, stream):
        self.calls.append("nonzero")
        shp = tuple(shape[i] for i in range(ndim))
        _, cnt = self._mask_ranks(mask, n, offs)
        view(_v(out), 5, (cnt, ndim))[...] = np.argwhere(view(_v(mask), 0, shp))
        return 0

    def _rows(self, isz, ptr, n):
        return view(_v(ptr), 1, (n, isz))

    def emc_masked_select(self, isz, x, mask, offs, n, out, stream):
        self.calls.append("masked_select")
        m, cnt = self._mask_ranks(mask, n, offs)
        self._rows(isz, out, cnt)[...] = self._rows(isz, x, _v(n))[m]
        return 0

    def emc_masked_scatter(self, isz, out, mask, offs, n, src, stream):
        self.calls.append("masked_scatter")
        m, cnt = self._mask_ranks(mask, n, offs)
        self._rows(isz, out, _v(n))[m] = self._rows(isz, src, cnt)
        return 0


@_guarded
class OptimFakes:
    """The CPU's multi-tensor kernels run on the fake device memory (the CUDA kernels
    promise the CPU's bits)."""

    def _host_tensors(self, ptrs, numel, n, dt):
        return [ember.from_numpy(view(ptrs[k] or 0, dt, (numel[k],))) for k in range(n)]

    def emc_sgd_multi(self, dt, n, params, grads, bufs, init, numel, a, stream):
        self.calls.append(("sgd_multi", dt, n))
        a = _v(a)
        P, G = (self._host_tensors(x, numel, n, dt) for x in (params, grads))
        B = self._host_tensors(bufs, numel, n, dt) if _v(bufs) else []
        ini = [bool(init[k]) for k in range(n)]
        assert _fe.sgd_(P, G, B, ini, a.lr, a.weight_decay, a.momentum, a.dampening,
                        bool(a.nesterov), bool(a.maximize))
        return 0

    def emc_adam_multi(self, dt, n, params, grads, ms, vs, mxs, steps, numel, a, stream):
        self.calls.append(("adam_multi", dt, n))
        a = _v(a)
        rows = [self._host_tensors(x, numel, n, dt) for x in (params, grads, ms, vs)]
        mx = self._host_tensors(mxs, numel, n, dt) if a.amsgrad else []
        assert _fe.adam_(*rows, mx, [steps[k] for k in range(n)], a.lr, a.beta1, a.beta2,
                         a.eps, a.weight_decay, bool(a.amsgrad), bool(a.maximize),
                         bool(a.decoupled))
        return 0

    def emc_total_norm(self, dt, n, xs, numel, p, out, stream):
        self.calls.append(("total_norm", dt, n))
        p = _v(p)
        v = np.concatenate([view(xs[k] or 0, dt, (numel[k],)).astype(np.float64)
                            for k in range(n)] or [np.zeros(0)])
        a = np.abs(v)
        r = a.max(initial=0.0) if np.isinf(p) else a.sum() if p == 1 else \
            np.sqrt((a * a).sum()) if p == 2 else (a ** p).sum() ** (1 / p)
        _store(view(_v(out), dt, ()), r, dt)
        return 0

    def emc_clip_multi(self, dt, n, xs, numel, norm, max_norm, stream):
        self.calls.append(("clip_multi", dt, n))
        coef = _v(max_norm) / (float(view(_v(norm), dt, ())) + 1e-6)
        if coef < 1.0:
            for k in range(n):
                x = view(xs[k] or 0, dt, (numel[k],))
                x *= x.dtype.type(coef)
        return 0


@_guarded
class PeerFakes:
    """Copies between devices and the events that order them (the runtime's)."""

    def cudaMemcpyPeerAsync(self, dst, ddev, src, sdev, n, stream):
        assert self.arena.contains(_v(dst)) and self.arena.contains(_v(src))
        assert _v(ddev) != _v(sdev) and max(_v(ddev), _v(sdev)) < self.ndev
        self.peer_copies = getattr(self, "peer_copies", 0) + 1
        ctypes.memmove(_v(dst), _v(src), _v(n))
        return 0

    def cudaEventCreateWithFlags(self, p, flags):
        _v(p).value = 0x1000
        return 0

    def cudaEventRecord(self, ev, stream):
        return 0

    def cudaStreamWaitEvent(self, stream, ev, flags):
        return 0

    def cudaEventDestroy(self, ev):
        return 0


@_guarded
class PoolFakes:
    """Max pooling's gather backwards and the adaptive forward (src_cuda/pool2d.cu)."""

    def _gather_bwd(self, dt, q, dy, idx, dx, windows):
        """dx[e] = the sum of dy[o] over the outputs o (in order) whose windows hold e
        and whose index is e."""
        P, H, W, Ho, Wo = q["planes"], q["H"], q["W"], q["Ho"], q["Wo"]
        acc = np.float64 if dt == 9 else np.float32          # the kernels' accumulator
        g = _vals(view(_v(dy), dt, (P, Ho * Wo)), dt).astype(acc)
        ix = view(_v(idx), 5, (P, Ho * Wo))
        out = np.zeros((P, H * W), acc)
        for o in range(Ho * Wo):
            rows, cols = windows(o // Wo, o % Wo)
            inside = np.isin(ix[:, o] // max(W, 1), rows) & np.isin(ix[:, o] % max(W, 1), cols)
            p = np.nonzero(inside & (ix[:, o] >= 0))[0]
            out[p, ix[p, o]] += g[p, o]
        _store(view(_v(dx), dt, (P, H * W)), out, dt)
        return 0

    def emc_max_pool2d_bwd(self, dt, p, dy, idx, dx, stream):
        self.calls.append("max_pool2d_bwd")
        q = self._conv_geom(p)

        def windows(oh, ow):
            return (oh * q["sh"] - q["ph"] + np.arange(q["kh"]) * q["dh"],
                    ow * q["sw"] - q["pw"] + np.arange(q["kw"]) * q["dw"])
        return self._gather_bwd(dt, q, dy, idx, dx, windows)

    @staticmethod
    def _ada(o, n_in, n_out):
        return np.arange(o * n_in // n_out, -(-(o + 1) * n_in // n_out))

    def emc_adaptive_max_pool2d_bwd(self, dt, p, dy, idx, dx, stream):
        self.calls.append("adaptive_max_pool2d_bwd")
        q = self._conv_geom(p)
        return self._gather_bwd(dt, q, dy, idx, dx, lambda oh, ow: (
            self._ada(oh, q["H"], q["Ho"]), self._ada(ow, q["W"], q["Wo"])))

    def emc_adaptive_max_pool2d_fwd(self, dt, p, x, y, idx, stream):
        self.calls.append("adaptive_max_pool2d_fwd")
        q = self._conv_geom(p)
        P, H, W, Ho, Wo = q["planes"], q["H"], q["W"], q["Ho"], q["Wo"]
        xv = _vals(view(_v(x), dt, (P, H, W)), dt).astype(np.float64)
        best = np.full((P, Ho, Wo), -np.inf)
        bi = np.zeros((P, Ho, Wo), np.int64)
        for oh in range(Ho):
            for ow in range(Wo):
                rows, cols = self._ada(oh, H, Ho), self._ada(ow, W, Wo)
                b, i = np.full(P, -np.inf), np.full(P, rows[0] * W + cols[0])
                for r in rows:                  # a larger value or any NaN takes over
                    for c in cols:
                        v = xv[:, r, c]
                        take = (v > b) | np.isnan(v)
                        b, i = np.where(take, v, b), np.where(take, r * W + c, i)
                best[:, oh, ow], bi[:, oh, ow] = b, i
        _store(view(_v(y), dt, (P, Ho, Wo)), best, dt)
        if _v(idx):
            view(_v(idx), 5, (P, Ho, Wo))[...] = bi
        return 0


@_guarded
class AttentionFakes:
    """The fused attention (src_cuda/attention.cu) in float64 NumPy, with the keep-mask
    of ember's CPU dropout at the same (seed, offset)."""

    def _att_probs(self, dt, q, k, BH, L, S, D, scale, causal, lse=None):
        Q = view(_v(q), dt, (BH, L, D)).astype(np.float64)
        Kt = view(_v(k), dt, (BH, S, D)).astype(np.float64)
        s = Q @ Kt.transpose(0, 2, 1) * _v(scale)
        if _v(causal):
            s = np.where(np.tril(np.ones((L, S), bool)), s, -np.inf)
        if lse is None:
            m = s.max(-1, keepdims=True)
            lse = (m + np.log(np.exp(s - m).sum(-1, keepdims=True)))[..., 0]
        return Q, Kt, np.exp(s - lse[..., None]), lse

    @staticmethod
    def _att_keep(BH, L, S, p, seed, off):
        if _v(p) == 0:
            return 1.0
        g = ember.Generator().manual_seed(_v(seed)).set_offset(_v(off))
        ones = ember.ones(BH * L * S, dtype=ember.float64)
        return _rnd.dropout(ones, _v(p), True, generator=g)[0].numpy().reshape(BH, L, S)

    def emc_sdpa_fwd(self, dt, q, k, v, BH, L, S, D, Dv, scale, causal, p, seed, off, out,
                     lse, stream):
        self.calls.append(("sdpa_fwd", _v(causal), _v(p) > 0))
        if dt not in (8, 9):
            return self._fail(_E_DTYPE, "fake sdpa dtype")
        _, _, P, ls = self._att_probs(dt, q, k, BH, L, S, D, scale, causal)
        V = view(_v(v), dt, (BH, S, Dv)).astype(np.float64)
        _store(view(_v(out), dt, (BH, L, Dv)), (P * self._att_keep(BH, L, S, p, seed, off)) @ V,
               dt)
        _store(view(_v(lse), dt, (BH, L)), ls, dt)
        return 0

    def emc_sdpa_bwd(self, dt, dout, q, k, v, out, lse, BH, L, S, D, Dv, scale, causal, p,
                     seed, off, dq, dk, dv, stream):
        self.calls.append(("sdpa_bwd", _v(causal), _v(p) > 0))
        ls = view(_v(lse), dt, (BH, L)).astype(np.float64)
        Q, Kt, P, _ = self._att_probs(dt, q, k, BH, L, S, D, scale, causal, ls)
        V = view(_v(v), dt, (BH, S, Dv)).astype(np.float64)
        G = view(_v(dout), dt, (BH, L, Dv)).astype(np.float64)
        O = view(_v(out), dt, (BH, L, Dv)).astype(np.float64)
        Z = self._att_keep(BH, L, S, p, seed, off)
        di = (G * O).sum(-1, keepdims=True)
        dS = P * ((G @ V.transpose(0, 2, 1)) * Z - di)
        _store(view(_v(dq), dt, (BH, L, D)), dS @ Kt * _v(scale), dt)
        _store(view(_v(dk), dt, (BH, S, D)), dS.transpose(0, 2, 1) @ Q * _v(scale), dt)
        _store(view(_v(dv), dt, (BH, S, Dv)), (P * Z).transpose(0, 2, 1) @ G, dt)
        return 0


def extend(lib, runtime):
    """Give the stand-in library and runtime the fakes above."""
    for cls, fakes in ((lib, (ScanFakes, OptimFakes, PoolFakes, AttentionFakes)),
                       (runtime, (PeerFakes,))):
        for fk in fakes:
            for name, fn in list(vars(fk).items()):
                if name.startswith(("emc_", "cuda", "_rows", "_host_tensors", "_gather_bwd",
                                    "_ada", "_att_", "_mask_")):
                    setattr(cls, name, fn)
