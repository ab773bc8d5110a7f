"""LAPACK calls on ember tensor memory (the ``scipy-openblas32`` library, loaded lazily).

Every routine here takes *Fortran buffers*: contiguous float32/float64 ember
tensors of shape ``(batch, cols, rows)`` whose memory holds one column-major
``rows x cols`` matrix per batch element (see :func:`fortran`).  A routine
overwrites its buffers in place and returns LAPACK's ``info`` per batch element
as a Python list.  Nothing here validates user input: ``ember._linalg`` does.
"""
from __future__ import annotations

import ctypes

from ember import _dll
from ember._C import core
from ember._C import lapack_batch as _batch

_c_int = ctypes.c_int
_byref = ctypes.byref
_vp = ctypes.c_void_p
_funcs: dict = {}
_threads = [0]


def _fn(dtype, name: str):
    """The LAPACK/BLAS routine ``name`` (without the s/d prefix) for ``dtype``.

    OpenBLAS follows ``ember.set_num_threads`` (checked on every call, as torch's
    thread setting governs its LAPACK too)."""
    n = core.get_num_threads()
    if n != _threads[0]:
        _dll.lapack().scipy_openblas_set_num_threads(n)
        _threads[0] = n
    key = (dtype, name)
    f = _funcs.get(key)
    if f is None:
        prefix = {core.float64: "d", core.complex64: "c", core.complex128: "z"}.get(dtype, "s")
        f = getattr(_dll.lapack(), f"scipy_{prefix}{name}_")
        f.restype = None
        _funcs[key] = f
    return f


def _i(v: int):
    return _byref(_c_int(v))


def _double(dtype) -> bool:
    return dtype in (core.float64, core.complex128)


def _real(dtype, v: float):
    return _byref(ctypes.c_double(v) if _double(dtype) else ctypes.c_float(v))


def _rwork(dtype, n: int):
    """A real workspace of ``n`` items for the complex routines (which take one more)."""
    return core.empty(max(1, n), dtype=dtype.to_real())


def _ch(c: str):
    return ctypes.c_char_p(c.encode())


_ONE = ctypes.c_size_t(1)   # the hidden length of each Fortran CHARACTER argument


def fortran(a):
    """A fresh Fortran buffer holding ``a`` (``(..., rows, cols)``), shape ``(B, cols, rows)``."""
    rows, cols = a.shape[-2], a.shape[-1]
    buf = core.empty(*a.shape[:-2], cols, rows, dtype=a.dtype)
    buf.copy_(a.transpose(-2, -1))
    batch = 1
    for d in a.shape[:-2]:
        batch *= d
    return buf.reshape(batch, cols, rows)


def rowmajor(a):
    """A fresh ``(B, rows, cols)`` copy of ``a`` (``(..., rows, cols)``) in its own layout: read
    column-major, its memory is ``a``'s transpose (a plain copy, no transposition)."""
    rows, cols = a.shape[-2], a.shape[-1]
    buf = core.empty(*a.shape, dtype=a.dtype)
    buf.copy_(a)
    batch = 1
    for d in a.shape[:-2]:
        batch *= d
    return buf.reshape(batch, rows, cols)


def small(a) -> bool:
    """Whether the row-major kernels (real, n <= 16) take square ``a``.  They are ember's
    own, but the library is still required (loaded here), as for every factorization."""
    if a.shape[-1] <= 16 and a.dtype in (core.float32, core.float64) and a.device.type == "cpu":
        _fn(a.dtype, "getrf")
        return True
    return False


def _count(a) -> int:
    n = 1
    for d in a.shape[:-2]:
        n *= d
    return n


def small_inv(a) -> tuple:
    """(inverse, infos) of real square ``a`` (..., n, n), n <= 16, in ``a``'s layout."""
    c, batch = a.contiguous(), _count(a)
    out = core.empty(*a.shape, dtype=a.dtype)
    infos = _infos(batch)
    _batch.small_inv(_kind(a), a.shape[-1], c.data_ptr(), out.data_ptr(), batch,
                     infos.data_ptr())
    return out, infos.tolist()[:batch]


def small_solve(a, b) -> tuple:
    """(X, infos) for ``a X = b``: real ``a`` (..., n, n), n <= 16, ``b`` (..., n, k) of the
    same batch shape."""
    ca, cb, batch = a.contiguous(), b.contiguous(), _count(a)
    out = core.empty(*b.shape, dtype=b.dtype)
    infos = _infos(batch)
    _batch.small_solve(_kind(a), a.shape[-1], b.shape[-1], ca.data_ptr(), cb.data_ptr(),
                       out.data_ptr(), batch, infos.data_ptr())
    return out, infos.tolist()[:batch]


def small_det(a, logabs: bool):
    """det of real square ``a`` (..., n, n), n <= 16, or (sign, log|det|) with ``logabs``."""
    c, batch = a.contiguous(), _count(a)
    r1 = core.empty(*a.shape[:-2], dtype=a.dtype)
    r2 = core.empty(*a.shape[:-2], dtype=a.dtype) if logabs else r1
    _batch.small_det(_kind(a), a.shape[-1], c.data_ptr(), r1.data_ptr(), r2.data_ptr(), batch,
                     logabs)
    return (r1, r2) if logabs else r1


def matrix(buf, batch_shape):
    """The logical ``(..., rows, cols)`` view of a Fortran buffer."""
    return buf.reshape(*batch_shape, buf.shape[-2], buf.shape[-1]).transpose(-2, -1)


def _ptrs(t):
    """Pointers to each batch element of a contiguous ``(B, ...)`` tensor."""
    base = t.data_ptr()
    step = (t.numel() // t.shape[0] if t.shape[0] else 0) * t.element_size()
    return [_vp(base + b * step) for b in range(t.shape[0])]


def _work(dtype, query) -> tuple:
    """Run a workspace query ``query(work_ptr)``; return an ember work buffer and its size."""
    w = core.empty(1, dtype=dtype)
    query(_vp(w.data_ptr()))
    v = w.item()
    n = max(1, int(v.real if isinstance(v, complex) else v))
    return core.empty(n, dtype=dtype), n


def _addr(f) -> int:
    return ctypes.cast(f, _vp).value


def _stride(t) -> int:
    """Bytes from one batch element of a contiguous ``(B, ...)`` tensor to the next."""
    return (t.numel() // t.shape[0] if t.shape[0] else 0) * t.element_size()


def _kind(a) -> int:
    """The batch loops' element kind: 0 float32, 1 float64, -1 complex (library only)."""
    return -1 if a.dtype.is_complex else int(a.dtype == core.float64)


def _infos(batch: int):
    return core.zeros(max(batch, 1), dtype=core.int32)


def getrf(a, piv) -> list:
    """LU with partial pivoting of each ``a`` (B, n, m) in place; ``piv`` int32 (B, min(m, n))."""
    f = _fn(a.dtype, "getrf")
    n, m, batch = a.shape[1], a.shape[2], a.shape[0]
    info = _infos(batch)
    _batch.getrf(_addr(f), _kind(a), m, n, a.data_ptr(), _stride(a),
                 piv.data_ptr(), piv.shape[1], batch, info.data_ptr())
    return info.tolist()[:batch]


def getrs(a, piv, b, trans: str = "N") -> list:
    """Solve with the LU factors in ``a`` (B, n, n); ``b`` (B, k, n) is overwritten."""
    f = _fn(a.dtype, "getrs")
    n, k, batch = a.shape[1], b.shape[1], a.shape[0]
    info = _infos(batch)
    _batch.getrs(_addr(f), _kind(a), trans, n, k, a.data_ptr(), _stride(a),
                 piv.data_ptr(), piv.shape[1], b.data_ptr(), _stride(b), batch,
                 info.data_ptr())
    return info.tolist()[:batch]


def potrf(a, uplo: str = "L") -> list:
    f = _fn(a.dtype, "potrf")
    batch = a.shape[0]
    info = _infos(batch)
    _batch.potrf(_addr(f), _kind(a), uplo, a.shape[1], a.data_ptr(),
                 _stride(a), batch, info.data_ptr())
    return info.tolist()[:batch]


def trsm(a, b, side: str, uplo: str, trans: str, diag: str) -> None:
    """BLAS triangular solve ``op(A) X = B`` (side "L") or ``X op(A) = B`` in place of b."""
    f = _fn(a.dtype, "trsm")
    m, n = b.shape[2], b.shape[1]
    k = a.shape[1]
    real = ctypes.c_double if a.dtype in (core.float64, core.complex128) else ctypes.c_float
    one = (real * 2)(1.0, 0.0)          # a complex 1 reads both, a real 1 the first
    _batch.trsm(_addr(f), side, uplo, trans, diag, m, n, ctypes.addressof(one), a.data_ptr(),
                _stride(a), max(1, k), b.data_ptr(), _stride(b), max(1, m),
                min(a.shape[0], b.shape[0]))


def geqrf(a, tau) -> None:
    f = _fn(a.dtype, "geqrf")
    n, m = a.shape[1], a.shape[2]
    lda = max(1, m)
    info = _c_int(0)
    pa = _ptrs(a)
    if not pa:
        return
    work, lw = _work(a.dtype, lambda w: f(_i(m), _i(n), pa[0], _i(lda), _vp(tau.data_ptr()),
                                          w, _i(-1), _byref(info)))
    for p, pt in zip(pa, _ptrs(tau)):
        f(_i(m), _i(n), p, _i(lda), pt, _vp(work.data_ptr()), _i(lw), _byref(info))


def orgqr(a, tau) -> None:
    """Form Q (m x n, the first n columns) from the reflectors in ``a`` and ``tau`` (B, k)."""
    f = _fn(a.dtype, "ungqr" if a.dtype.is_complex else "orgqr")
    n, m, k = a.shape[1], a.shape[2], tau.shape[1]
    lda = max(1, m)
    info = _c_int(0)
    pa = _ptrs(a)
    if not pa:
        return
    work, lw = _work(a.dtype, lambda w: f(_i(m), _i(n), _i(k), pa[0], _i(lda),
                                          _vp(tau.data_ptr()), w, _i(-1), _byref(info)))
    for p, pt in zip(pa, _ptrs(tau)):
        f(_i(m), _i(n), _i(k), p, _i(lda), pt, _vp(work.data_ptr()), _i(lw), _byref(info))


def ormqr(a, tau, c, side: str, trans: str) -> None:
    """``c <- op(Q) c`` (side "L") or ``c op(Q)``; Q from the reflectors in ``a``, ``tau``;
    ``trans`` "T" is the conjugate transpose for complex ``a``."""
    f = _fn(a.dtype, "unmqr" if a.dtype.is_complex else "ormqr")
    if a.dtype.is_complex and trans == "T":
        trans = "C"
    mc, nc = c.shape[2], c.shape[1]
    k = tau.shape[1]
    lda = max(1, a.shape[2])
    info = _c_int(0)
    pa, pc = _ptrs(a), _ptrs(c)
    if not pa:
        return
    work, lw = _work(a.dtype, lambda w: f(_ch(side), _ch(trans), _i(mc), _i(nc), _i(k), pa[0],
                                          _i(lda), _vp(tau.data_ptr()), pc[0], _i(max(1, mc)),
                                          w, _i(-1), _byref(info), _ONE, _ONE))
    for p, pt, q in zip(pa, _ptrs(tau), pc):
        f(_ch(side), _ch(trans), _i(mc), _i(nc), _i(k), p, _i(lda), pt, q, _i(max(1, mc)),
          _vp(work.data_ptr()), _i(lw), _byref(info), _ONE, _ONE)


def syevd(a, w, vectors: bool, uplo: str = "L") -> list:
    """Eigen-decomposition of symmetric ``a`` (B, n, n): values into ``w``, vectors into ``a``
    (heevd for Hermitian complex ``a``; ``w`` is real)."""
    cplx = a.dtype.is_complex
    n, batch = a.shape[1], a.shape[0]
    if not batch:
        return []
    if not cplx and n <= 32:
        infos = _infos(batch)
        if _batch.small_syev(_kind(a), vectors, uplo, n, a.data_ptr(), w.data_ptr(), batch,
                             core.get_num_threads(), infos.data_ptr()):
            return infos.tolist()[:batch]
        return _syev_small(a, w, vectors, uplo)
    f = _fn(a.dtype, "heevd" if cplx else "syevd")
    jobz = "V" if vectors else "N"
    info = _c_int(0)
    iw = _c_int(0)
    ld = _i(max(1, n))
    if cplx:
        rw = core.empty(1, dtype=w.dtype)
        work, lw = _work(a.dtype, lambda wk: f(_ch(jobz), _ch(uplo), _i(n), _vp(a.data_ptr()),
                                               ld, _vp(w.data_ptr()), wk, _i(-1),
                                               _vp(rw.data_ptr()), _i(-1), _byref(iw), _i(-1),
                                               _byref(info), _ONE, _ONE))
        lrw = max(1, int(rw.item()))
        rwork = _rwork(a.dtype, lrw)
    else:
        work, lw = _work(a.dtype, lambda wk: f(_ch(jobz), _ch(uplo), _i(n), _vp(a.data_ptr()),
                                               ld, _vp(w.data_ptr()), wk, _i(-1), _byref(iw),
                                               _i(-1), _byref(info), _ONE, _ONE))
        lrw, rwork = 0, work
    liw = max(1, iw.value)
    iwork = core.empty(liw, dtype=core.int32)
    infos = _infos(batch)
    _batch.syevd(_addr(f), _kind(a), jobz, uplo, n, a.data_ptr(), _stride(a), w.data_ptr(),
                 _stride(w), work.data_ptr(), lw, rwork.data_ptr(), lrw, iwork.data_ptr(), liw,
                 batch, infos.data_ptr())
    return infos.tolist()[:batch]


def _syev_small(a, w, vectors: bool, uplo: str) -> list:
    """?syev for small real matrices: its QR iteration costs less than syevd's setup."""
    f = _fn(a.dtype, "syev")
    n, batch = a.shape[1], a.shape[0]
    jobz = "V" if vectors else "N"
    info = _c_int(0)
    work, lw = _work(a.dtype, lambda wk: f(_ch(jobz), _ch(uplo), _i(n), _vp(a.data_ptr()),
                                           _i(max(1, n)), _vp(w.data_ptr()), wk, _i(-1),
                                           _byref(info), _ONE, _ONE))
    infos = _infos(batch)
    _batch.syev(_addr(f), jobz, uplo, n, a.data_ptr(), _stride(a), w.data_ptr(), _stride(w),
                work.data_ptr(), lw, batch, infos.data_ptr())
    return infos.tolist()[:batch]


def gesdd(a, s, u, vt, jobz: str) -> list:
    """SVD of ``a`` (B, n, m) (destroyed): ``s`` (B, k); ``u``/``vt`` Fortran buffers or None."""
    f = _fn(a.dtype, "gesdd")
    n, m, batch = a.shape[1], a.shape[2], a.shape[0]
    if not batch:
        return []
    k = min(m, n)
    ldu = max(1, m)
    ldvt = max(1, n if jobz == "A" else k)
    info = _c_int(0)
    pu = _vp(u.data_ptr()) if u is not None else None
    pv = _vp(vt.data_ptr()) if vt is not None else None
    iwork = core.empty(max(1, 8 * k), dtype=core.int32)
    rw = ()
    rwork = iwork
    if a.dtype.is_complex:
        # LAPACK's bound on the real workspace of ?gesdd (7 k for jobz "N")
        big = max(m, n)
        rwork = _rwork(a.dtype, 7 * k if jobz == "N" else
                       k * max(5 * k + 7, 2 * big + 2 * k + 1))
        rw = (_vp(rwork.data_ptr()),)
    work, lw = _work(a.dtype, lambda w: f(_ch(jobz), _i(m), _i(n), _vp(a.data_ptr()),
                                          _i(max(1, m)), _vp(s.data_ptr()), pu, _i(ldu), pv,
                                          _i(ldvt), w, _i(-1), *rw, _vp(iwork.data_ptr()),
                                          _byref(info), _ONE))
    infos = _infos(batch)
    _batch.gesdd(_addr(f), _kind(a), jobz, m, n, a.data_ptr(), _stride(a), s.data_ptr(),
                 _stride(s), u.data_ptr() if u is not None else 0,
                 _stride(u) if u is not None else 0, ldu,
                 vt.data_ptr() if vt is not None else 0, _stride(vt) if vt is not None else 0,
                 ldvt, work.data_ptr(), lw, rwork.data_ptr(), iwork.data_ptr(), batch,
                 infos.data_ptr())
    return infos.tolist()[:batch]


def gels(a, b) -> list:
    """Least squares by QR/LQ for full-rank ``a`` (B, n, m); ``b`` (B, k, max(m, n))."""
    f = _fn(a.dtype, "gels")
    n, m = a.shape[1], a.shape[2]
    k, ldb = b.shape[1], max(1, b.shape[2])
    info = _c_int(0)
    pa, pb = _ptrs(a), _ptrs(b)
    if not pa:
        return []
    work, lw = _work(a.dtype, lambda w: f(_ch("N"), _i(m), _i(n), _i(k), pa[0], _i(max(1, m)),
                                          pb[0], _i(ldb), w, _i(-1), _byref(info), _ONE))
    infos = []
    for p, q in zip(pa, pb):
        f(_ch("N"), _i(m), _i(n), _i(k), p, _i(max(1, m)), q, _i(ldb), _vp(work.data_ptr()),
          _i(lw), _byref(info), _ONE)
        infos.append(info.value)
    return infos


def gelsy(a, b, rcond: float, rank) -> list:
    """Least squares by complete orthogonal factorisation; ``rank`` int64 (B,) is filled."""
    f = _fn(a.dtype, "gelsy")
    n, m = a.shape[1], a.shape[2]
    k, ldb = b.shape[1], max(1, b.shape[2])
    info = _c_int(0)
    r = _c_int(0)
    pa, pb = _ptrs(a), _ptrs(b)
    if not pa:
        return []
    jpvt = core.zeros(max(1, n), dtype=core.int32)
    rwork = _rwork(a.dtype, 2 * n) if a.dtype.is_complex else None
    rw = (_vp(rwork.data_ptr()),) if rwork is not None else ()
    work, lw = _work(a.dtype, lambda w: f(_i(m), _i(n), _i(k), pa[0], _i(max(1, m)), pb[0],
                                          _i(ldb), _vp(jpvt.data_ptr()), _real(a.dtype, rcond),
                                          _byref(r), w, _i(-1), *rw, _byref(info)))
    infos = []
    for i, (p, q) in enumerate(zip(pa, pb)):
        jpvt.zero_()
        f(_i(m), _i(n), _i(k), p, _i(max(1, m)), q, _i(ldb), _vp(jpvt.data_ptr()),
          _real(a.dtype, rcond), _byref(r), _vp(work.data_ptr()), _i(lw), *rw, _byref(info))
        rank[i] = r.value
        infos.append(info.value)
    return infos


def gelsd(a, b, rcond: float, rank, s, driver: str = "gelsd") -> list:
    """Least squares by SVD (``gelsd`` divide and conquer or ``gelss``); fills rank and s."""
    f = _fn(a.dtype, driver)
    n, m = a.shape[1], a.shape[2]
    k, ldb = b.shape[1], max(1, b.shape[2])
    info = _c_int(0)
    r = _c_int(0)
    pa, pb = _ptrs(a), _ptrs(b)
    if not pa:
        return []
    iw = _c_int(0)
    cplx = a.dtype.is_complex
    rq = core.empty(1, dtype=s.dtype)
    extra = ((_vp(rq.data_ptr()),) if cplx else ()) + ((_byref(iw),) if driver == "gelsd"
                                                       else ())
    work, lw = _work(a.dtype, lambda w: f(_i(m), _i(n), _i(k), pa[0], _i(max(1, m)), pb[0],
                                          _i(ldb), _vp(s.data_ptr()), _real(a.dtype, rcond),
                                          _byref(r), w, _i(-1), *extra, _byref(info)))
    iwork = core.empty(max(1, iw.value), dtype=core.int32)
    rwork = None
    if cplx:      # gelss needs 5 min(m, n); gelsd reports its size on the query
        rwork = _rwork(a.dtype, max(int(rq.item()), 5 * min(m, n)) if driver == "gelsd"
                       else 5 * min(m, n))
    extra = ((_vp(rwork.data_ptr()),) if cplx else ()) + (
        (_vp(iwork.data_ptr()),) if driver == "gelsd" else ())
    infos = []
    for i, (p, q, ps) in enumerate(zip(pa, pb, _ptrs(s))):
        f(_i(m), _i(n), _i(k), p, _i(max(1, m)), q, _i(ldb), ps, _real(a.dtype, rcond),
          _byref(r), _vp(work.data_ptr()), _i(lw), *extra, _byref(info))
        rank[i] = r.value
        infos.append(info.value)
    return infos


def sytrf(a, piv, uplo: str = "L", hermitian: bool = False) -> list:
    """Bunch-Kaufman LDL^T of symmetric ``a`` (B, n, n) in place; ``piv`` int32 (B, n);
    LDL^H (hetrf) for ``hermitian`` complex ``a``."""
    f = _fn(a.dtype, "hetrf" if hermitian and a.dtype.is_complex else "sytrf")
    n = a.shape[1]
    info = _c_int(0)
    pa = _ptrs(a)
    if not pa:
        return []
    work, lw = _work(a.dtype, lambda w: f(_ch(uplo), _i(n), pa[0], _i(max(1, n)),
                                          _vp(piv.data_ptr()), w, _i(-1), _byref(info), _ONE))
    infos = []
    for p, pp in zip(pa, _ptrs(piv)):
        f(_ch(uplo), _i(n), p, _i(max(1, n)), pp, _vp(work.data_ptr()), _i(lw), _byref(info),
          _ONE)
        infos.append(info.value)
    return infos


def sytrs(a, piv, b, uplo: str = "L", hermitian: bool = False) -> list:
    f = _fn(a.dtype, "hetrs" if hermitian and a.dtype.is_complex else "sytrs")
    n, k = a.shape[1], b.shape[1]
    infos = []
    for p, pp, q in zip(_ptrs(a), _ptrs(piv), _ptrs(b)):
        info = _c_int(0)
        f(_ch(uplo), _i(n), _i(k), p, _i(max(1, n)), pp, q, _i(max(1, n)), _byref(info), _ONE)
        infos.append(info.value)
    return infos


def geev(a, w, v) -> list:
    """Eigenvalues of a general ``a`` (B, n, n) (destroyed) into complex ``w`` (B, n) and,
    when ``v`` is a Fortran buffer, the right eigenvectors: complex ``v`` for complex ``a``;
    for real ``a``, LAPACK's real packing of conjugate pairs (the caller unpacks)."""
    f = _fn(a.dtype, "geev")
    n = a.shape[1]
    jobvr = "V" if v is not None else "N"
    info = _c_int(0)
    pa = _ptrs(a)
    if not pa:
        return []
    ldv = max(1, n)
    pv = _ptrs(v) if v is not None else [_vp(0)] * len(pa)
    one = core.empty(1, dtype=a.dtype)
    null = _vp(one.data_ptr())
    cplx = a.dtype.is_complex
    if cplx:
        rwork = core.empty(max(1, 2 * n), dtype=a.dtype.to_real())
        pw = _ptrs(w)

        def call(p, wp, vp, work, lw):
            f(_ch("N"), _ch(jobvr), _i(n), p, _i(max(1, n)), wp, null, _i(1), vp, _i(ldv),
              work, _i(lw), _vp(rwork.data_ptr()), _byref(info), _ONE, _ONE)
        work, lw = _work(a.dtype, lambda wk: call(pa[0], pw[0], pv[0], wk, -1))
        infos = []
        for p, wp, vp in zip(pa, pw, pv):
            call(p, wp, vp, _vp(work.data_ptr()), lw)
            infos.append(info.value)
        return infos
    # real: wr and wi in a (B, 2, n) buffer, copied into w by the caller
    wri = w
    pw = _ptrs(wri)
    step = n * wri.element_size()

    def rcall(p, wp, vp, work, lw):
        f(_ch("N"), _ch(jobvr), _i(n), p, _i(max(1, n)), wp, _vp(wp.value + step), null, _i(1),
          vp, _i(ldv), work, _i(lw), _byref(info), _ONE, _ONE)
    work, lw = _work(a.dtype, lambda wk: rcall(pa[0], pw[0], pv[0], wk, -1))
    infos = []
    for p, wp, vp in zip(pa, pw, pv):
        rcall(p, wp, vp, _vp(work.data_ptr()), lw)
        infos.append(info.value)
    return infos
