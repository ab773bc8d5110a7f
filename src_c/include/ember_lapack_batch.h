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
#endif
