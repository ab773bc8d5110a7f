/* Batched LAPACK/BLAS loops (src_c/lapack_batch.c).  `fn` is the Fortran routine
   (scipy-openblas's s/d/c/z variant; kind: 0 float32, 1 float64, -1 complex), matrices are column-major, batch element k of a
   buffer starts k * stride bytes (ints for pivots) after the first; one info per
   matrix is written to infos.  Real square matrices up to 16 x 16 take direct kernels
   (LAPACK's unblocked algorithms) instead of a library call each. */
#ifndef EMBER_LAPACK_BATCH_H
#define EMBER_LAPACK_BATCH_H
#include <stdint.h>

void em_batch_getrf(void *fn, int kind, int m, int n, char *a, int64_t sa, int *piv, int64_t sp,
                    int64_t batch, int *infos);
void em_batch_getrs(void *fn, int kind, char trans, int n, int nrhs, const char *a, int64_t sa,
                    const int *piv, int64_t sp, char *b, int64_t sb, int64_t batch,
                    int *infos);
void em_batch_potrf(void *fn, int kind, char uplo, int n, char *a, int64_t sa, int64_t batch,
                    int *infos);
void em_batch_trsm(void *fn, char side, char uplo, char trans, char diag, int m, int n,
                   const void *alpha, const char *a, int64_t sa, int lda, char *b, int64_t sb,
                   int ldb, int64_t batch);
/* ?syevd (?heevd for complex, kind -1, with the real workspace rwork): eigenvalues
   into w (stride sw bytes), eigenvectors over a when jobz is 'V'; one shared workspace */
void em_batch_syevd(void *fn, int kind, char jobz, char uplo, int n, char *a, int64_t sa, char *w,
                    int64_t sw, void *work, int lwork, void *rwork, int lrwork, int *iwork,
                    int liwork, int64_t batch, int *infos);
/* ?syev (QR iteration; real kinds): for small matrices, where it beats syevd's setup */
void em_batch_syev(void *fn, char jobz, char uplo, int n, char *a, int64_t sa, char *w,
                   int64_t sw, void *work, int lwork, int64_t batch, int *infos);
/* ?gesdd of m x n matrices (a destroyed): s, and u/vt unless NULL (jobz 'N') */
void em_batch_gesdd(void *fn, int kind, char jobz, int m, int n, char *a, int64_t sa, char *s,
                    int64_t ss, char *u, int64_t su, int ldu, char *vt, int64_t svt, int ldvt,
                    void *work, int lwork, void *rwork, int *iwork, int64_t batch, int *infos);
/* Row-major kernels for real (kind 0/1) square matrices up to 16 x 16, reading
   contiguous batches of ember memory (return -1, doing nothing, otherwise): inverse
   (Gauss-Jordan) and solve A X = B (B n x k) with partial pivoting, infos the first
   zero pivot (1-based, as getrf's) or 0; det (logabs 0: r1 = det) or slogdet
   (logabs 1: r1 = sign, r2 = log|det|) by LU. */
int em_small_inv(int kind, int n, const void *a, void *out, int64_t batch, int *infos);
int em_small_solve(int kind, int n, int k, const void *a, const void *b, void *out,
                   int64_t batch, int *infos);
int em_small_det(int kind, int n, const void *a, void *r1, void *r2, int64_t batch,
                 int logabs);
#endif
