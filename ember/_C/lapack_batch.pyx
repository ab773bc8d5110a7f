"""Batched LAPACK/BLAS loops in C (src_c/lapack_batch.c) for ``ember._lapack``: the
routine's address and the buffers' addresses come from the caller, which has checked
shapes and dtypes; each call releases the GIL and returns LAPACK's info per matrix."""
from libc.stdint cimport int64_t, uintptr_t

cdef extern from "ember_lapack_batch.h" nogil:
    void em_batch_getrf(void *fn, int kind, int m, int n, char *a, int64_t sa, int *piv, int64_t sp,
                        int64_t batch, int *infos)
    void em_batch_getrs(void *fn, int kind, char trans, int n, int nrhs, const char *a, int64_t sa,
                        const int *piv, int64_t sp, char *b, int64_t sb, int64_t batch,
                        int *infos)
    void em_batch_potrf(void *fn, int kind, char uplo, int n, char *a, int64_t sa, int64_t batch,
                        int *infos)
    void em_batch_trsm(void *fn, char side, char uplo, char trans, char diag, int m, int n,
                       const void *alpha, const char *a, int64_t sa, int lda, char *b,
                       int64_t sb, int ldb, int64_t batch)
    void em_batch_syevd(void *fn, int kind, char jobz, char uplo, int n, char *a, int64_t sa,
                        char *w, int64_t sw, void *work, int lwork, void *rwork, int lrwork,
                        int *iwork, int liwork, int64_t batch, int *infos)
    void em_batch_syev(void *fn, char jobz, char uplo, int n, char *a, int64_t sa, char *w,
                       int64_t sw, void *work, int lwork, int64_t batch, int *infos)
    void em_batch_gesdd(void *fn, int kind, char jobz, int m, int n, char *a, int64_t sa, char *s,
                        int64_t ss, char *u, int64_t su, int ldu, char *vt, int64_t svt,
                        int ldvt, void *work, int lwork, void *rwork, int *iwork,
                        int64_t batch, int *infos)
    int em_small_inv(int kind, int n, const void *a, void *out, int64_t batch, int *infos)
    int em_small_solve(int kind, int n, int k, const void *a, const void *b, void *out,
                       int64_t batch, int *infos)
    int em_small_det(int kind, int n, const void *a, void *r1, void *r2, int64_t batch,
                     int logabs)


cdef inline void *_p(object addr):
    return <void *><uintptr_t>addr


def getrf(fn, int kind, int m, int n, a, int64_t sa, piv, int64_t sp, int64_t batch, infos):
    """LU of ``batch`` m x n matrices at ``a`` (stride sa bytes), pivots at ``piv``."""
    cdef void *f = _p(fn)
    cdef char *pa = <char *>_p(a)
    cdef int *pp = <int *>_p(piv)
    cdef int *pi = <int *>_p(infos)
    with nogil:
        em_batch_getrf(f, kind, m, n, pa, sa, pp, sp, batch, pi)


def getrs(fn, int kind, str trans, int n, int nrhs, a, int64_t sa, piv, int64_t sp, b, int64_t sb,
          int64_t batch, infos):
    """Solve with LU factors: ``b`` (n x nrhs per matrix) is overwritten."""
    cdef void *f = _p(fn)
    cdef char t = ord(trans)
    cdef const char *pa = <const char *>_p(a)
    cdef const int *pp = <const int *>_p(piv)
    cdef char *pb = <char *>_p(b)
    cdef int *pi = <int *>_p(infos)
    with nogil:
        em_batch_getrs(f, kind, t, n, nrhs, pa, sa, pp, sp, pb, sb, batch, pi)


def potrf(fn, int kind, str uplo, int n, a, int64_t sa, int64_t batch, infos):
    """Cholesky factor of each n x n matrix at ``a`` in place."""
    cdef void *f = _p(fn)
    cdef char u = ord(uplo)
    cdef char *pa = <char *>_p(a)
    cdef int *pi = <int *>_p(infos)
    with nogil:
        em_batch_potrf(f, kind, u, n, pa, sa, batch, pi)


def trsm(fn, str side, str uplo, str trans, str diag, int m, int n, alpha, a, int64_t sa,
         int lda, b, int64_t sb, int ldb, int64_t batch):
    """Triangular solve per matrix; ``alpha`` is the address of the scalar."""
    cdef void *f = _p(fn)
    cdef char s = ord(side), u = ord(uplo), t = ord(trans), d = ord(diag)
    cdef const void *pal = <const void *>_p(alpha)
    cdef const char *pa = <const char *>_p(a)
    cdef char *pb = <char *>_p(b)
    with nogil:
        em_batch_trsm(f, s, u, t, d, m, n, pal, pa, sa, lda, pb, sb, ldb, batch)


def syevd(fn, int kind, str jobz, str uplo, int n, a, int64_t sa, w, int64_t sw, work, int lwork,
          rwork, int lrwork, iwork, int liwork, int64_t batch, infos):
    """Symmetric (Hermitian, kind -1) eigen-decomposition of each n x n matrix at ``a``."""
    cdef void *f = _p(fn)
    cdef char jz = ord(jobz), u = ord(uplo)
    cdef char *pa = <char *>_p(a)
    cdef char *pw = <char *>_p(w)
    cdef void *wk = _p(work)
    cdef void *rw = _p(rwork)
    cdef int *iw = <int *>_p(iwork)
    cdef int *pi = <int *>_p(infos)
    with nogil:
        em_batch_syevd(f, kind, jz, u, n, pa, sa, pw, sw, wk, lwork, rw, lrwork, iw, liwork,
                       batch, pi)


def gesdd(fn, int kind, str jobz, int m, int n, a, int64_t sa, s, int64_t ss, u, int64_t su,
          int ldu, vt, int64_t svt, int ldvt, work, int lwork, rwork, iwork, int64_t batch,
          infos):
    """SVD of each m x n matrix at ``a``; ``u``/``vt`` are 0 (no vectors) or addresses."""
    cdef void *f = _p(fn)
    cdef char jz = ord(jobz)
    cdef char *pa = <char *>_p(a)
    cdef char *ps = <char *>_p(s)
    cdef char *pu = <char *>_p(u)
    cdef char *pv = <char *>_p(vt)
    cdef void *wk = _p(work)
    cdef void *rw = _p(rwork)
    cdef int *iw = <int *>_p(iwork)
    cdef int *pi = <int *>_p(infos)
    with nogil:
        em_batch_gesdd(f, kind, jz, m, n, pa, sa, ps, ss, pu, su, ldu, pv, svt, ldvt, wk, lwork,
                       rw, iw, batch, pi)


def small_inv(int kind, int n, a, out, int64_t batch, infos):
    """Row-major inverses of ``batch`` n x n matrices (n <= 16, real); False if not taken."""
    cdef const void *pa = _p(a)
    cdef void *po = _p(out)
    cdef int *pi = <int *>_p(infos)
    cdef int r
    with nogil:
        r = em_small_inv(kind, n, pa, po, batch, pi)
    return r == 0


def small_solve(int kind, int n, int k, a, b, out, int64_t batch, infos):
    """Row-major A X = B for ``batch`` systems (n <= 16, real); False if not taken."""
    cdef const void *pa = _p(a)
    cdef const void *pb = _p(b)
    cdef void *po = _p(out)
    cdef int *pi = <int *>_p(infos)
    cdef int r
    with nogil:
        r = em_small_solve(kind, n, k, pa, pb, po, batch, pi)
    return r == 0


def small_det(int kind, int n, a, r1, r2, int64_t batch, bint logabs):
    """det (or sign and log|det|) of ``batch`` row-major n x n matrices (n <= 16, real)."""
    cdef const void *pa = _p(a)
    cdef void *p1 = _p(r1)
    cdef void *p2 = _p(r2)
    cdef int r
    with nogil:
        r = em_small_det(kind, n, pa, p1, p2, batch, logabs)
    return r == 0


def syev(fn, str jobz, str uplo, int n, a, int64_t sa, w, int64_t sw, work, int lwork,
         int64_t batch, infos):
    """Real symmetric eigen-decomposition (QR iteration) of each n x n matrix at ``a``."""
    cdef void *f = _p(fn)
    cdef char jz = ord(jobz), u = ord(uplo)
    cdef char *pa = <char *>_p(a)
    cdef char *pw = <char *>_p(w)
    cdef void *wk = _p(work)
    cdef int *pi = <int *>_p(infos)
    with nogil:
        em_batch_syev(f, jz, u, n, pa, sa, pw, sw, wk, lwork, batch, pi)
