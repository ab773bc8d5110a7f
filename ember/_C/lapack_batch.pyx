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
