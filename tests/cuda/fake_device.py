"""A stand-in for libember_cuda.so and the CUDA runtime whose "device memory" is host
memory, so that the CUDA dispatcher (ember/cuda/_dispatch.py: descriptors, strides,
argument order, dtype codes, autograd records) runs in the CPU tests.

Every entry point follows the contract of src_cuda/include/ember_cuda.h.  The
elementwise ones call the real kernels' element functions on the host
(``emc_ew_host`` of the built library) when it loads; the rest are NumPy
references.  Random numbers come from ember's CPU generator: the device
kernels' documented stream."""

from __future__ import annotations

import ctypes

import numpy as np

import ember
from ember import _dll

_NP = {0: np.bool_, 1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64,
       6: np.float16, 7: np.uint16, 8: np.float32, 9: np.float64, 10: np.complex64,
       11: np.complex128}
_E_DTYPE, _E_INDEX = 10001, 10004
BF16 = 7


def _v(x):
    """The plain value of a ctypes argument."""
    if x is None:
        return 0
    if isinstance(x, (int, float)):
        return x
    if hasattr(x, "_obj"):                        # byref(...)
        return x._obj
    if isinstance(x, ctypes.Array):
        return x
    return x.value if x.value is not None else 0


def _bf_to_f(u):
    return (np.asarray(u, np.uint16).astype(np.uint32) << 16).view(np.float32)


def _f_to_bf(f):
    u = np.asarray(f, np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def view(ptr, dtype, shape, strides=None):
    """A NumPy view of fake device memory (element strides)."""
    shape = tuple(int(s) for s in shape)
    it = np.dtype(_NP[dtype]).itemsize
    if strides is None:
        strides, acc = [], 1
        for s in reversed(shape):
            strides.append(acc)
            acc *= s
        strides = tuple(reversed(strides))
    if any(s == 0 for s in shape):
        return np.empty(shape, _NP[dtype])
    extent = 1 + sum((s - 1) * st for s, st in zip(shape, strides))
    base = np.ctypeslib.as_array((ctypes.c_char * (extent * it)).from_address(ptr)).view(
        _NP[dtype])
    return np.lib.stride_tricks.as_strided(base, shape, tuple(st * it for st in strides))


def _vals(a, dtype):
    """values as a computable array (bf16 bits -> float32)."""
    return _bf_to_f(a) if dtype == BF16 else a


def _store(dst, vals, dtype):
    if dtype == BF16:
        dst[...] = _f_to_bf(vals)
    else:
        with np.errstate(all="ignore"):
            dst[...] = np.asarray(vals).astype(_NP[dtype], copy=False) if dtype != 0 else \
                (np.asarray(vals) != 0)


def _nd(p):
    nd = _v(p)
    shape = tuple(nd.shape[i] for i in range(nd.ndim))
    strides = [tuple(nd.strides[a][i] for i in range(nd.ndim)) for a in range(nd.nargs)]
    return shape, strides


class _Arena:
    """Fake device memory: one reserved range that the CPU cannot read or write
    (PROT_NONE) except while a fake kernel or copy runs, so that a CPU kernel
    handed a device pointer crashes the test instead of passing."""

    SIZE = 1 << 32

    def __init__(self):
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.libc.mmap.restype = ctypes.c_void_p
        self.libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                                   ctypes.c_int, ctypes.c_long]
        self.libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        self.libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        # PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE
        self.base = self.libc.mmap(None, self.SIZE, 0, 0x02 | 0x20 | 0x4000, -1, 0)
        assert self.base not in (None, ctypes.c_void_p(-1).value)
        self.top = 0
        self.open_depth = 0

    def alloc(self, n):
        n = (max(n, 1) + 511) // 512 * 512
        if self.top + n > self.SIZE:
            raise MemoryError("fake device arena exhausted")
        p = self.base + self.top
        self.top += n
        return p

    def contains(self, p):
        return self.base <= p < self.base + self.SIZE

    def unlock(self):
        if self.open_depth == 0 and self.top:
            self.libc.mprotect(self.base, self.top, 3)
        self.open_depth += 1

    def lock(self):
        self.open_depth -= 1
        if self.open_depth == 0 and self.top:
            self.libc.mprotect(self.base, self.top, 0)



_ARENA = None


_CODES = {"i": ctypes.c_int, "q": ctypes.c_int64, "Q": ctypes.c_uint64, "z": ctypes.c_size_t,
          "d": ctypes.c_double, "p": ctypes.c_void_p}


def _check_abi(name, args):
    """The arguments convert to the prototypes ember/_dll.py binds on the real library
    (count and types), as ctypes would check them there."""
    _, codes = _dll.CUDA_SYMBOLS[name]
    assert len(args) == len(codes), f"{name}: {len(args)} arguments, the ABI has {len(codes)}"
    for i, (a, c) in enumerate(zip(args, codes)):
        try:
            _CODES[c].from_param(a)
        except TypeError as e:
            raise AssertionError(f"{name}: argument {i} ({a!r}) does not convert to {c}: {e}")


def _guarded(cls):
    """Open the arena around every method of a fake library/runtime (and check the
    library's arguments against its C prototypes)."""
    for name, fn in list(vars(cls).items()):
        if name.startswith(("emc_", "cuda")):
            def wrap(self, *args, _fn=fn, _name=name):
                if _name in _dll.CUDA_SYMBOLS:
                    _check_abi(_name, args)
                self.arena.unlock()
                try:
                    return _fn(self, *args)
                finally:
                    self.arena.lock()
            setattr(cls, name, wrap)
    return cls


@_guarded
class FakeRuntime:
    """cudaMemcpyAsync and friends over host memory."""

    def __init__(self, arena, ndev=1):
        self.arena = arena
        self.pinned = {}
        self.ndev, self.cur = ndev, 0

    def cudaGetDevice(self, p):
        _v(p).value = self.cur
        return 0

    def cudaGetDeviceCount(self, p):
        _v(p).value = self.ndev
        return 0

    def cudaSetDevice(self, i):
        if not 0 <= _v(i) < self.ndev:
            return 101
        self.cur = _v(i)
        return 0

    def cudaMemcpyAsync(self, dst, src, n, kind, stream):
        # a copy is the kind it claims: device memory lives in the arena, host memory not
        on_dev = (self.arena.contains(_v(src)), self.arena.contains(_v(dst)))
        assert _v(n) == 0 or on_dev == {1: (False, True), 2: (True, False),
                                        3: (True, True)}[_v(kind)], (_v(kind), on_dev)
        ctypes.memmove(_v(dst), _v(src), _v(n))
        return 0

    def cudaStreamSynchronize(self, s):
        return 0

    def cudaHostAlloc(self, p, n, flags):
        buf = ctypes.create_string_buffer(_v(n))
        addr = ctypes.addressof(buf)
        self.pinned[addr] = buf
        _v(p).value = addr
        return 0

    def cudaFreeHost(self, p):
        self.pinned.pop(_v(p), None)
        return 0


@_guarded
class FakeLib:
    """The C ABI of libember_cuda.so, on host memory."""

    def __init__(self, arena):
        self.arena = arena
        self.live = {}
        self.calls = []
        self.err = b""
        self.index_error = False
        try:
            self.host = _dll.cuda_library_host_only()
        except RuntimeError:
            self.host = None

    def _fail(self, rc, msg):
        self.err = msg.encode()
        return rc

    # -- library and allocator
    def emc_last_error(self):
        return self.err

    def emc_malloc(self, p, n, stream):
        addr = self.arena.alloc(_v(n))
        self.live[addr] = _v(n)
        _v(p).value = addr
        return 0

    def emc_free(self, p):
        return 0 if self.live.pop(_v(p), None) is not None else 10003

    def emc_check_index_error(self, stream):
        bad, self.index_error = self.index_error, False
        return _E_INDEX if bad else 0

    # -- copies
    def emc_copy(self, ddt, dst, sdt, src, nd, stream):
        self.calls.append("copy")
        shape, (sd, ss) = _nd(nd)
        _store(view(_v(dst), ddt, shape, sd), _vals(view(_v(src), sdt, shape, ss), sdt), ddt)
        return 0

    def emc_fill(self, dt, dst, nd, value, stream):
        self.calls.append("fill")
        shape, (sd,) = _nd(nd)
        raw = bytes(_v(value))[:np.dtype(_NP[dt]).itemsize]
        val = np.frombuffer(raw, _NP[dt])[0]
        view(_v(dst), dt, shape, sd)[...] = val
        return 0

    def emc_cat(self, dt, out, n, srcs, sizes, outer, inner, stream):
        self.calls.append("cat")
        parts = [view(srcs[i] or 0, dt, (outer, sizes[i] * inner)) for i in range(n)]
        view(_v(out), dt, (outer, sum(sizes[i] for i in range(n)) * inner))[...] = \
            np.concatenate(parts, axis=1)
        return 0

    # -- elementwise: the kernels' own element functions, on the host
    def _host(self, family, op, dt, out_dt, shape, strides, ptrs, aux):
        ins = [np.ascontiguousarray(_vals(view(p, dt, shape, st), dt))
               for p, st in zip(ptrs[1:], strides[1:])]
        cdt = 8 if dt in (6, BF16) else dt
        ins = [a.astype(_NP[cdt]) for a in ins]
        n = int(np.prod(shape, dtype=np.int64)) if shape else 1
        res = np.empty(shape, _NP[0 if family in (2, 3) else cdt])
        if n:
            a = ins[0]
            b = ins[1] if len(ins) > 1 else a
            rc = self.host.emc_ew_host(family, op, cdt, res.ctypes.data, a.ctypes.data,
                                       b.ctypes.data, n, aux)
            if rc:
                return self._fail(rc, "fake: dtype")
        _store(view(ptrs[0], out_dt, shape, strides[0]), res, out_dt)
        return 0

    def emc_ew_binary(self, op, dt, out, a, b, nd, aux, stream):
        self.calls.append(("binary", op, dt))
        shape, st = _nd(nd)
        return self._host(1, op, dt, dt, shape, st, [_v(out), _v(a), _v(b)], aux)

    def emc_ew_compare(self, op, dt, out, a, b, nd, stream):
        self.calls.append(("compare", op, dt))
        shape, st = _nd(nd)
        return self._host(2, op, dt, 0, shape, st, [_v(out), _v(a), _v(b)], None)

    def emc_ew_unary(self, op, dt, out, x, nd, aux, stream):
        self.calls.append(("unary", op, dt))
        shape, st = _nd(nd)
        return self._host(0, op, dt, dt, shape, st, [_v(out), _v(x)], aux)

    def emc_ew_predicate(self, op, dt, out, x, nd, stream):
        self.calls.append(("predicate", op, dt))
        shape, st = _nd(nd)
        return self._host(3, op, dt, 0, shape, st, [_v(out), _v(x)], None)

    def emc_ew_where(self, dt, out, cond, a, b, nd, stream):
        self.calls.append("where")
        shape, (so, sc, sa, sb) = _nd(nd)
        c = view(_v(cond), 0, shape, sc)
        _store(view(_v(out), dt, shape, so), np.where(c, _vals(view(_v(a), dt, shape, sa), dt),
                                                     _vals(view(_v(b), dt, shape, sb), dt)), dt)
        return 0

    # -- reductions
    def emc_reduce(self, op, dt, x, O, Kn, In, out, scale, stream):
        self.calls.append(("reduce", op, dt))
        if dt not in (5, 6, BF16, 8, 9):
            return self._fail(_E_DTYPE, "fake reduce dtype")
        v = _vals(view(_v(x), dt, (O, Kn, In)), dt).astype(np.float64 if dt != 5 else np.int64)
        fn = {0: np.sum, 1: np.prod, 2: np.max, 3: np.min}[op]
        r = fn(v, axis=1)
        if _v(scale) != 1.0:
            r = r * _v(scale)
        _store(view(_v(out), dt, (O, In)), r, dt)
        return 0

    def emc_var(self, dt, x, O, Kn, In, corr, var, mean, stream):
        self.calls.append("var")
        v = _vals(view(_v(x), dt, (O, Kn, In)), dt).astype(np.float64)
        with np.errstate(all="ignore"):
            _store(view(_v(var), dt, (O, In)), v.var(axis=1) * Kn / (Kn - _v(corr)), dt)
        if _v(mean):
            _store(view(_v(mean), dt, (O, In)), v.mean(axis=1), dt)
        return 0

    def emc_argreduce(self, op, dt, x, O, Kn, In, vals, idx, stream):
        self.calls.append(("argreduce", op, dt))
        v = _vals(view(_v(x), dt, (O, Kn, In)), dt).astype(np.float64)
        nan = np.isnan(v)
        i = np.where(nan.any(axis=1), nan.argmax(axis=1),
                     (np.argmax if op == 2 else np.argmin)(v, axis=1))
        view(_v(idx), 5, (O, In))[...] = i
        if _v(vals):
            _store(view(_v(vals), dt, (O, In)), np.take_along_axis(v, i[:, None, :], 1)[:, 0],
                   dt)
        return 0

    # -- sort
    def _order(self, dt, x, rows, n, descending):
        v = _vals(view(_v(x), dt, (rows, n)), dt).astype(np.float64)
        nan = np.isnan(v)                     # NaN is the largest; ties by index
        key = np.where(nan, 0.0, -v if descending else v)
        first = ~nan if descending else nan
        return np.lexsort((key, first), axis=-1), v

    def emc_sort(self, dt, x, rows, n, descending, vals, idx, stream):
        self.calls.append("sort")
        o, v = self._order(dt, x, rows, n, descending)
        view(_v(idx), 5, (rows, n))[...] = o
        if _v(vals):
            _store(view(_v(vals), dt, (rows, n)), np.take_along_axis(v, o, 1), dt)
        return 0

    def emc_topk(self, dt, x, rows, n, k, largest, vals, idx, stream):
        self.calls.append("topk")
        o, v = self._order(dt, x, rows, n, largest)
        o = o[:, :k]
        if _v(idx):
            view(_v(idx), 5, (rows, k))[...] = o
        if _v(vals):
            _store(view(_v(vals), dt, (rows, k)), np.take_along_axis(v, o, 1), dt)
        return 0

    # -- softmax, cross-entropy, layer_norm
    def emc_softmax(self, log, dt, x, O, Kn, In, out, stream):
        self.calls.append("softmax")
        v = _vals(view(_v(x), dt, (O, Kn, In)), dt).astype(np.float64)
        with np.errstate(invalid="ignore"):   # an all -inf row gives NaN, as the kernel does
            m = v.max(axis=1, keepdims=True)
            lse = m + np.log(np.exp(v - m).sum(axis=1, keepdims=True))
            r = v - lse if log else np.exp(v - lse)
        _store(view(_v(out), dt, (O, Kn, In)), r, dt)
        return 0

    def _ce_rows(self, dt, x, t, R, C, ignore):
        v = _vals(view(_v(x), dt, (R, C)), dt).astype(np.float64)
        tg = view(_v(t), 5, (R,)).copy()
        bad = (tg != ignore) & ((tg < 0) | (tg >= C))
        if bad.any():
            self.index_error = True
        m = v.max(axis=1, keepdims=True)
        lse = (m + np.log(np.exp(v - m).sum(axis=1, keepdims=True)))[:, 0]
        return v, np.where(bad, 0, tg), lse

    def emc_cross_entropy_fwd(self, dt, x, t, R, C, ignore, smoothing, loss, lse, stream):
        self.calls.append("cross_entropy_fwd")
        v, tg, l_ = self._ce_rows(dt, x, t, R, C, ignore)
        logp = v - l_[:, None]
        eps = _v(smoothing)
        nll = -logp[np.arange(R), np.where(tg == ignore, 0, tg)]
        row = (1 - eps) * nll - eps / C * logp.sum(axis=1)
        _store(view(_v(loss), dt, (R,)), np.where(tg == ignore, 0, row), dt)
        if _v(lse):
            view(_v(lse), 8, (R,))[...] = l_
        return 0

    def emc_cross_entropy_bwd(self, dt, x, t, lse, gloss, R, C, ignore, smoothing, gx, stream):
        self.calls.append("cross_entropy_bwd")
        v, tg, l_ = self._ce_rows(dt, x, t, R, C, ignore)
        l_ = view(_v(lse), 8, (R,)).astype(np.float64)
        eps = _v(smoothing)
        p = np.exp(v - l_[:, None])
        target = np.full((R, C), eps / C)
        target[np.arange(R), np.where(tg == ignore, 0, tg)] += 1 - eps
        g = _vals(view(_v(gloss), dt, (R,)), dt).astype(np.float64)
        r = g[:, None] * (p - target)
        r[tg == ignore] = 0
        _store(view(_v(gx), dt, (R, C)), r, dt)
        return 0

    def emc_layer_norm_fwd(self, dt, x, w, b, M, N, eps, y, mean, rstd, stream):
        self.calls.append("layer_norm_fwd")
        sd = 9 if dt == 9 else 8
        v = _vals(view(_v(x), dt, (M, N)), dt).astype(np.float64)
        mu = v.mean(axis=1)
        rs = 1 / np.sqrt(v.var(axis=1) + _v(eps))
        r = (v - mu[:, None]) * rs[:, None]
        if _v(w):
            r = r * _vals(view(_v(w), dt, (N,)), dt)
        if _v(b):
            r = r + _vals(view(_v(b), dt, (N,)), dt)
        _store(view(_v(y), dt, (M, N)), r, dt)
        view(_v(mean), sd, (M,))[...] = mu
        view(_v(rstd), sd, (M,))[...] = rs
        return 0

    def emc_layer_norm_bwd(self, dt, dy, x, mean, rstd, w, M, N, dx, dw, db, stream):
        self.calls.append("layer_norm_bwd")
        sd = 9 if dt == 9 else 8
        g = _vals(view(_v(dy), dt, (M, N)), dt).astype(np.float64)
        v = _vals(view(_v(x), dt, (M, N)), dt).astype(np.float64)
        mu = view(_v(mean), sd, (M,)).astype(np.float64)[:, None]
        rs = view(_v(rstd), sd, (M,)).astype(np.float64)[:, None]
        xh = (v - mu) * rs
        gw = g * (_vals(view(_v(w), dt, (N,)), dt) if _v(w) else 1.0)
        r = rs * (gw - gw.mean(axis=1, keepdims=True) - xh * (gw * xh).mean(axis=1,
                                                                        keepdims=True))
        _store(view(_v(dx), dt, (M, N)), r, dt)
        if _v(dw):
            _store(view(_v(dw), dt, (N,)), (g * xh).sum(axis=0), dt)
        if _v(db):
            _store(view(_v(db), dt, (N,)), g.sum(axis=0), dt)
        return 0

    # -- GEMM
    hopper = 0   # what emc_gemm_wgmma answers: a test sets 1 to take the Hopper paths

    def emc_gemm_wgmma(self):
        return self.hopper

    def emc_gemm(self, dt, ta, tb, M, N, Kd, alpha, A, lda, sA, B, ldb, sB, beta, C, ldc, sC,
                 batch, tf32, stream):
        self.calls.append(("gemm", ta, tb))
        a = _vals(view(_v(A), dt, (batch, Kd, M) if ta else (batch, M, Kd),
                       (sA, lda, 1)), dt).astype(np.float64)
        b = _vals(view(_v(B), dt, (batch, N, Kd) if tb else (batch, Kd, N),
                       (sB, ldb, 1)), dt).astype(np.float64)
        a = a.transpose(0, 2, 1) if ta else a
        b = b.transpose(0, 2, 1) if tb else b
        c = view(_v(C), dt, (batch, M, N), (sC, ldc, 1))
        r = _v(alpha) * (a @ b)
        if _v(beta) != 0.0:
            r = r + _v(beta) * _vals(c, dt).astype(np.float64)
        _store(c, r, dt)
        return 0

    # -- random numbers: ember's CPU generator is the kernels' stream
    def emc_rand_float(self, kind, dt, out, n, seed, offset, a, b, stream):
        self.calls.append(("rand", kind))
        g = ember.Generator().manual_seed(_v(seed)).set_offset(_v(offset))
        t = ember.empty(_v(n), dtype={6: ember.float16, 7: ember.bfloat16, 8: ember.float32,
                                      9: ember.float64}[dt])
        (t.uniform_ if kind == 0 else t.normal_)(_v(a), _v(b), generator=g)
        ctypes.memmove(_v(out), t.data_ptr(), t.numel() * t.element_size())
        return 0

    def emc_rand_int(self, dt, out, n, seed, offset, lo, rng, stream):
        self.calls.append("rand_int")
        g = ember.Generator().manual_seed(_v(seed)).set_offset(_v(offset))
        t = ember.randint(_v(lo), _v(lo) + _v(rng), (_v(n),), generator=g,
                          dtype={1: ember.uint8, 2: ember.int8, 3: ember.int16, 4: ember.int32,
                                 5: ember.int64, 8: ember.float32, 9: ember.float64}[dt])
        ctypes.memmove(_v(out), t.data_ptr(), t.numel() * t.element_size())
        return 0

    # -- indexing
    def _idx(self, idx, n, S):
        i = view(_v(idx), 5, (n,)).copy()
        if ((i < -S) | (i >= S)).any():
            self.index_error = True
            i = np.clip(i, -S, S - 1) if S else i * 0
        return i % S if S else i

    def emc_index_select(self, dt, src, O, S, In, idx, n, out, stream):
        self.calls.append("index_select")
        i = self._idx(idx, n, S)
        view(_v(out), dt, (O, n, In))[...] = view(_v(src), dt, (O, S, In))[:, i, :]
        return 0

    def emc_index_add(self, dt, out, O, S, In, idx, n, src, det, stream):
        self.calls.append(("index_add", det))
        i = self._idx(idx, n, S)
        o = view(_v(out), dt, (O, S, In))
        # in index order, rounding to the dtype after each add (the kernels' sum)
        acc = _vals(o, dt).astype({6: np.float16, 9: np.float64}.get(dt, np.float32)
                                  if dt >= 6 else np.int64)
        np.add.at(acc, (slice(None), i, slice(None)),
                  _vals(view(_v(src), dt, (O, n, In)), dt))
        _store(o, acc, dt)
        return 0

    def emc_scatter(self, reduce, dt, out, dim_size, dim_stride, idx, src, nd, det, stream):
        self.calls.append(("scatter", reduce))
        shape, (so, si, ss) = _nd(nd)
        pos = np.indices(shape).reshape(len(shape), -1) if shape else np.zeros((0, 1), int)
        off = [np.asarray(st, np.int64) @ pos if shape else np.zeros(1, np.int64)
               for st in (so, si, ss)]
        j = view(_v(idx), 5, (int(off[1].max()) + 1,))[off[1]]
        if ((j < -dim_size) | (j >= dim_size)).any():
            self.index_error = True
            return 0
        j = j % dim_size
        tgt = off[0] + j * dim_stride
        n_out = int(tgt.max()) + 1
        o = view(_v(out), dt, (n_out,))
        vals = _vals(view(_v(src), dt, (int(off[2].max()) + 1,)), dt)[off[2]]
        acc = _vals(o, dt).copy()
        if reduce == 1:
            np.add.at(acc, tgt, vals)
        elif reduce == 0:
            acc[tgt] = vals
        else:                                  # in index order; max / min propagate NaN
            if dt not in (4, 5, 6, BF16, 8, 9):
                return self._fail(_E_DTYPE, "fake scatter reduce dtype")
            for t, v in zip(tgt, vals):
                a = acc[t]
                if reduce == 2:
                    acc[t] = a * v
                elif v != v:
                    acc[t] = v
                elif not (a != a or (a > v if reduce == 3 else a < v)):
                    acc[t] = v
        _store(o, acc, dt)
        return 0

    def emc_gather(self, dt, src, O, S, In, idx, J, out, stream):
        self.calls.append("gather")
        i = view(_v(idx), 5, (O, J, In)).copy()
        if ((i < 0) | (i >= S)).any():
            self.index_error = True
            i = np.clip(i, 0, max(S - 1, 0))
        view(_v(out), dt, (O, J, In))[...] = np.take_along_axis(
            view(_v(src), dt, (O, S, In)), i, 1)
        return 0

    # -- convolution, pooling, batch_norm (the kernels' contracts, tap by tap)
    @staticmethod
    def _conv_geom(p):
        q = _v(p)
        return {n: getattr(q, n) for n, _ in q._fields_}

    def _conv_taps(self, q, xp):
        """(i, j, the input patch (N, C, Ho, Wo) tap (i, j) reads) over padded xp"""
        for i in range(q["kh"]):
            for j in range(q["kw"]):
                h0, w0 = i * q["dh"], j * q["dw"]
                yield i, j, (slice(None), slice(None),
                             slice(h0, h0 + q["sh"] * (q["Ho"] - 1) + 1, q["sh"]),
                             slice(w0, w0 + q["sw"] * (q["Wo"] - 1) + 1, q["sw"]))

    def _conv_shapes(self, q):
        G = q["groups"]
        return G, q["C"] // G, q["OC"] // G

    def emc_conv2d_fwd(self, dt, p, x, w, bias, y, stream):
        self.calls.append("conv2d_fwd")
        q = self._conv_geom(p)
        if dt not in (8, 9):
            return self._fail(_E_DTYPE, "fake conv dtype")
        G, Cg, OCg = self._conv_shapes(q)
        N, ph, pw = q["N"], q["ph"], q["pw"]
        xv = view(_v(x), dt, (N, q["C"], q["H"], q["W"])).astype(np.float64)
        xp = np.pad(xv, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
        wv = view(_v(w), dt, (G, OCg, Cg, q["kh"], q["kw"])).astype(np.float64)
        out = np.zeros((N, G, OCg, q["Ho"], q["Wo"]))
        for i, j, sl in self._conv_taps(q, xp):
            patch = xp[sl].reshape(N, G, Cg, q["Ho"], q["Wo"])
            out += np.einsum("ngchw,goc->ngohw", patch, wv[..., i, j])
        out = out.reshape(N, q["OC"], q["Ho"], q["Wo"])
        if _v(bias):
            out += view(_v(bias), dt, (q["OC"],))[None, :, None, None]
        _store(view(_v(y), dt, out.shape), out, dt)
        return 0

    def emc_conv2d_bwd_input(self, dt, p, dy, w, dx, stream):
        self.calls.append("conv2d_bwd_input")
        q = self._conv_geom(p)
        G, Cg, OCg = self._conv_shapes(q)
        N, ph, pw, H, W = q["N"], q["ph"], q["pw"], q["H"], q["W"]
        g = view(_v(dy), dt, (N, G, OCg, q["Ho"], q["Wo"])).astype(np.float64)
        wv = view(_v(w), dt, (G, OCg, Cg, q["kh"], q["kw"])).astype(np.float64)
        dxp = np.zeros((N, q["C"], H + 2 * ph, W + 2 * pw))
        for i, j, sl in self._conv_taps(q, dxp):
            dxp[sl] += np.einsum("ngohw,goc->ngchw", g, wv[..., i, j]).reshape(
                N, q["C"], q["Ho"], q["Wo"])
        _store(view(_v(dx), dt, (N, q["C"], H, W)), dxp[:, :, ph:ph + H, pw:pw + W], dt)
        return 0

    def emc_conv2d_bwd_weight(self, dt, p, x, dy, dw, dbias, stream):
        self.calls.append("conv2d_bwd_weight")
        q = self._conv_geom(p)
        G, Cg, OCg = self._conv_shapes(q)
        N, ph, pw = q["N"], q["ph"], q["pw"]
        xv = view(_v(x), dt, (N, q["C"], q["H"], q["W"])).astype(np.float64)
        xp = np.pad(xv, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
        g = view(_v(dy), dt, (N, G, OCg, q["Ho"], q["Wo"])).astype(np.float64)
        gw = np.zeros((G, OCg, Cg, q["kh"], q["kw"]))
        for i, j, sl in self._conv_taps(q, xp):
            patch = xp[sl].reshape(N, G, Cg, q["Ho"], q["Wo"])
            gw[..., i, j] = np.einsum("ngohw,ngchw->goc", g, patch)
        _store(view(_v(dw), dt, gw.shape), gw, dt)
        if _v(dbias):
            _store(view(_v(dbias), dt, (q["OC"],)), g.sum(axis=(0, 3, 4)).reshape(-1), dt)
        return 0

    @staticmethod
    def _taps_1d(o, s, pd, d, k, n):
        """input positions (Out, k) of each output's taps, and whether they are inside"""
        pos = np.arange(o)[:, None] * s - pd + np.arange(k)[None, :] * d
        return np.clip(pos, 0, max(n - 1, 0)), (pos >= 0) & (pos < n)

    def emc_max_pool2d_fwd(self, dt, p, x, y, idx, stream):
        self.calls.append("max_pool2d_fwd")
        q = self._conv_geom(p)
        P, H, W, Ho, Wo = q["planes"], q["H"], q["W"], q["Ho"], q["Wo"]
        xv = _vals(view(_v(x), dt, (P, H * W)), dt).astype(np.float64)
        hs, hok = self._taps_1d(Ho, q["sh"], q["ph"], q["dh"], q["kh"], H)
        ws, wok = self._taps_1d(Wo, q["sw"], q["pw"], q["dw"], q["kw"], W)
        best = np.full((P, Ho, Wo), -np.inf)
        bi = np.full((P, Ho, Wo), -1, np.int64)
        for i in range(q["kh"]):               # taps in the kernel's order: rows, then columns
            for j in range(q["kw"]):
                flat = hs[:, i][:, None] * W + ws[:, j][None, :]
                ok = hok[:, i][:, None] & wok[:, j][None, :]
                v = xv[:, flat]
                take = ok[None] & ((bi < 0) | (v > best) | np.isnan(v))
                best = np.where(take, v, best)
                bi = np.where(take, flat[None], bi)
        _store(view(_v(y), dt, (P, Ho, Wo)), best, dt)
        if _v(idx):
            view(_v(idx), 5, (P, Ho, Wo))[...] = bi
        return 0

    @staticmethod
    def _avg_windows(q):
        """per output (oh, ow): the clipped window and its divisor (PyTorch's rules)"""
        for oh in range(q["Ho"]):
            for ow in range(q["Wo"]):
                hs, ws = oh * q["sh"] - q["ph"], ow * q["sw"] - q["pw"]
                he, we = min(hs + q["kh"], q["H"] + q["ph"]), min(ws + q["kw"], q["W"] + q["pw"])
                size = (he - hs) * (we - ws)
                hs, ws, he, we = max(hs, 0), max(ws, 0), min(he, q["H"]), min(we, q["W"])
                if q["divisor"]:
                    div = q["divisor"]
                elif q["count_include_pad"]:
                    div = size
                else:
                    div = (he - hs) * (we - ws)
                yield oh, ow, slice(hs, max(he, hs)), slice(ws, max(we, ws)), div

    def emc_avg_pool2d_fwd(self, dt, p, x, y, stream):
        self.calls.append("avg_pool2d_fwd")
        q = self._conv_geom(p)
        xv = _vals(view(_v(x), dt, (q["planes"], q["H"], q["W"])), dt).astype(np.float64)
        out = np.zeros((q["planes"], q["Ho"], q["Wo"]))
        for oh, ow, hsl, wsl, div in self._avg_windows(q):
            win = xv[:, hsl, wsl]
            out[:, oh, ow] = win.sum(axis=(1, 2)) / div if win.size or div else 0.0
        _store(view(_v(y), dt, out.shape), out, dt)
        return 0

    def emc_avg_pool2d_bwd(self, dt, p, dy, dx, stream):
        self.calls.append("avg_pool2d_bwd")
        q = self._conv_geom(p)
        g = _vals(view(_v(dy), dt, (q["planes"], q["Ho"], q["Wo"])), dt).astype(np.float64)
        out = np.zeros((q["planes"], q["H"], q["W"]))
        for oh, ow, hsl, wsl, div in self._avg_windows(q):
            if div:
                out[:, hsl, wsl] += (g[:, oh, ow] / div)[:, None, None]
        _store(view(_v(dx), dt, out.shape), out, dt)
        return 0

    def emc_batch_norm_fwd(self, dt, x, w, b, rm, rv, N, C, HW, training, momentum, eps, y,
                           smean, sinv, stream):
        self.calls.append(("batch_norm_fwd", training))
        sd = 9 if dt == 9 else 8
        momentum, eps = _v(momentum), _v(eps)
        v = _vals(view(_v(x), dt, (N, C, HW)), dt).astype(np.float64)
        if training:
            mu = v.mean(axis=(0, 2))
            var = v.var(axis=(0, 2))
            m = N * HW
            if _v(rm):
                r = view(_v(rm), dt, (C,))
                _store(r, (1 - momentum) * _vals(r, dt) + momentum * mu, dt)
            if _v(rv):
                r = view(_v(rv), dt, (C,))
                _store(r, (1 - momentum) * _vals(r, dt) + momentum * var * m / (m - 1), dt)
            if _v(smean):
                view(_v(smean), sd, (C,))[...] = mu
            if _v(sinv):
                view(_v(sinv), sd, (C,))[...] = 1 / np.sqrt(var + eps)
        else:
            mu = _vals(view(_v(rm), dt, (C,)), dt).astype(np.float64)
            var = _vals(view(_v(rv), dt, (C,)), dt).astype(np.float64)
        out = (v - mu[None, :, None]) / np.sqrt(var + eps)[None, :, None]
        if _v(w):
            out = out * _vals(view(_v(w), dt, (C,)), dt)[None, :, None]
        if _v(b):
            out = out + _vals(view(_v(b), dt, (C,)), dt)[None, :, None]
        _store(view(_v(y), dt, (N, C, HW)), out, dt)
        return 0

    def emc_batch_norm_bwd(self, dt, dy, x, w, rm, rv, smean, sinv, N, C, HW, training, eps,
                           dx, dw, db, stream):
        self.calls.append(("batch_norm_bwd", training))
        sd = 9 if dt == 9 else 8
        eps = _v(eps)
        g = _vals(view(_v(dy), dt, (N, C, HW)), dt).astype(np.float64)
        v = _vals(view(_v(x), dt, (N, C, HW)), dt).astype(np.float64)
        if training:
            mu = view(_v(smean), sd, (C,)).astype(np.float64)
            inv = view(_v(sinv), sd, (C,)).astype(np.float64)
        else:
            mu = _vals(view(_v(rm), dt, (C,)), dt).astype(np.float64)
            inv = 1 / np.sqrt(_vals(view(_v(rv), dt, (C,)), dt).astype(np.float64) + eps)
        xh = (v - mu[None, :, None]) * inv[None, :, None]
        wv = _vals(view(_v(w), dt, (C,)), dt).astype(np.float64) if _v(w) else np.ones(C)
        s1, s2 = g.sum(axis=(0, 2)), (g * xh).sum(axis=(0, 2))
        if _v(dx):
            if training:
                m = N * HW
                r = (g - s1[None, :, None] / m - xh * s2[None, :, None] / m)
            else:
                r = g
            _store(view(_v(dx), dt, (N, C, HW)), r * (wv * inv)[None, :, None], dt)
        if _v(dw):
            _store(view(_v(dw), dt, (C,)), s2, dt)
        if _v(db):
            _store(view(_v(db), dt, (C,)), s1, dt)
        return 0

    # -- index_put, randperm, multinomial
    def emc_index_put(self, dt, out, k, idx, sizes, strides, n, values, vstride, slice_, acc,
                      det, stream):
        self.calls.append(("index_put", acc, det))
        if acc and dt not in (4, 5, 6, BF16, 8, 9):
            return self._fail(_E_DTYPE, "fake index_put dtype")
        shape, (so, sv) = _nd(slice_)
        pos = np.indices(shape).reshape(len(shape), -1) if shape else np.zeros((0, 1), int)
        oo = np.asarray(so, np.int64) @ pos if shape else np.zeros(1, np.int64)
        ov = np.asarray(sv, np.int64) @ pos if shape else np.zeros(1, np.int64)
        tgt = np.zeros(n, np.int64)
        ok = np.ones(n, bool)
        for d in range(k):
            j = view(idx[d], 5, (n,)).copy()
            bad = (j < -sizes[d]) | (j >= sizes[d])
            if bad.any():
                self.index_error = True
            ok &= ~bad
            tgt += np.where(bad, 0, j % max(sizes[d], 1)) * strides[d]
        tgt, vp = tgt[ok], np.arange(n)[ok] * vstride
        if tgt.size == 0:
            return 0
        dst = (tgt[:, None] + oo[None, :]).reshape(-1)
        src = (vp[:, None] + ov[None, :]).reshape(-1)
        o = view(_v(out), dt, (int(dst.max()) + 1,))
        vals = _vals(view(_v(values), dt, (int(src.max()) + 1,)), dt)[src]
        res = _vals(o, dt).copy()
        if acc:
            res = res.astype(np.float64 if dt >= 6 else np.int64)
            np.add.at(res, dst, vals)
        else:
            for a, b in zip(dst, vals):            # in index order: the last write wins
                res[a] = b
        _store(o, res, dt)
        return 0

    def emc_randperm(self, out, n, seed, offset, stream):
        self.calls.append("randperm")
        g = ember.Generator().manual_seed(_v(seed)).set_offset(_v(offset))
        t = ember.randperm(_v(n), generator=g)
        ctypes.memmove(_v(out), t.data_ptr(), t.numel() * t.element_size())
        return 0

    def emc_multinomial(self, dt, p, rows, ncat, nsamp, repl, out, seed, offset, status,
                        stream):
        self.calls.append("multinomial")
        pv = _vals(view(_v(p), dt, (rows, ncat)), dt).astype(np.float64)
        g = ember.Generator().manual_seed(_v(seed)).set_offset(_v(offset))
        code = 0
        try:
            t = ember.multinomial(ember.tensor(pv), nsamp, bool(repl), generator=g)
            ctypes.memmove(_v(out), t.data_ptr(), t.numel() * t.element_size())
        except RuntimeError as e:
            msg = str(e)
            code = 1 if "inf" in msg else 2 if "sum" in msg else 3
        if _v(status):
            view(_v(status), 4, ())[...] = code
        return 0


class FakeDevice:
    """Install the stand-in as ember's CUDA backend for a block."""

    def __init__(self, ndev=1):
        self.ndev = ndev

    def __enter__(self):
        from ember.cuda import _kernels
        global _ARENA
        if _ARENA is None:     # one for the process: tensors cached across tests stay valid
            _ARENA = _Arena()
        self.arena = _ARENA
        self.lib, self.rt = FakeLib(self.arena), FakeRuntime(self.arena, self.ndev)
        self.prev = _kernels.install(self.lib, self.rt)
        return self

    def __exit__(self, *exc):
        from ember.cuda import _kernels
        _kernels._backend = self.prev
        return False


from tests.cuda.fake_ops import extend as _extend  # noqa: E402

_extend(FakeLib, FakeRuntime)
from tests.cuda.fake_complex import extend as _extend_complex  # noqa: E402

_extend_complex(FakeLib)
