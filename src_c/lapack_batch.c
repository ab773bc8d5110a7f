/* Batched LAPACK calls: one C loop over a batch of column-major matrices.  Square
   matrices up to SMALL_N use the direct kernels below (LAPACK's unblocked
   algorithms: getf2's partial pivoting, getrs's two triangular solves, potf2) for
   real dtypes (kind 0 float32, 1 float64; complex, kind -1, always calls the library),
   where a library call's fixed cost would dominate; larger ones call the routine
   (a function pointer from the LAPACK library ember loaded) once per matrix.
   Serial: the library may thread inside a call, and the results do not depend on
   the loop order. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "ember_lapack_batch.h"

#define SMALL_N 16

typedef void (*getrf_t)(const int *m, const int *n, void *a, const int *lda, int *ipiv,
                        int *info);
typedef void (*getrs_t)(const char *trans, const int *n, const int *nrhs, const void *a,
                        const int *lda, const int *ipiv, void *b, const int *ldb, int *info,
                        size_t ltrans);
typedef void (*potrf_t)(const char *uplo, const int *n, void *a, const int *lda, int *info,
                        size_t luplo);
typedef void (*trsm_t)(const char *side, const char *uplo, const char *transa,
                       const char *diag, const int *m, const int *n, const void *alpha,
                       const void *a, const int *lda, void *b, const int *ldb, size_t l1,
                       size_t l2, size_t l3, size_t l4);

/* ---- direct kernels for small square matrices, T = float or double ----------- */

#define DEFINE_SMALL(T, SFX, SFMIN)                                                     \
/* LU with partial pivoting (getf2); a is n x n column-major, ipiv 1-based */          \
static int getf2_##SFX(int n, T *a, int *ipiv) {                                        \
    int info = 0;                                                                        \
    for (int j = 0; j < n; j++) {                                                        \
        int p = j;                                                                       \
        T big = fabs(a[j + j * n]);                                                      \
        for (int i = j + 1; i < n; i++)                                                  \
            if (fabs(a[i + j * n]) > big) { big = fabs(a[i + j * n]); p = i; }           \
        ipiv[j] = p + 1;                                                                 \
        if (a[p + j * n] != 0) {                                                         \
            if (p != j)                                                                  \
                for (int c = 0; c < n; c++) {                                            \
                    T t = a[j + c * n]; a[j + c * n] = a[p + c * n]; a[p + c * n] = t;   \
                }                                                                        \
            T piv = a[j + j * n];                                                        \
            if (fabs(piv) >= SFMIN) {                                                    \
                T r = 1 / piv;                                                           \
                for (int i = j + 1; i < n; i++) a[i + j * n] *= r;                      \
            } else {                                                                     \
                for (int i = j + 1; i < n; i++) a[i + j * n] /= piv;                    \
            }                                                                            \
        } else if (info == 0) {                                                          \
            info = j + 1;                                                                \
        }                                                                                \
        for (int c = j + 1; c < n; c++) {                                                \
            T u = a[j + c * n];                                                          \
            for (int i = j + 1; i < n; i++) a[i + c * n] -= a[i + j * n] * u;           \
        }                                                                                \
    }                                                                                    \
    return info;                                                                         \
}                                                                                        \
/* solve A X = B (trans 'N') or A^T X = B from getf2's factors; b is n x nrhs */       \
static void getrs_##SFX(char trans, int n, int nrhs, const T *a, const int *ipiv, T *b) { \
    for (int c = 0; c < nrhs; c++) {                                                     \
        T *x = b + (int64_t)c * n;                                                       \
        if (trans == 'N' || trans == 'n') {                                              \
            for (int i = 0; i < n; i++) {                                                \
                int p = ipiv[i] - 1;                                                     \
                if (p != i) { T t = x[i]; x[i] = x[p]; x[p] = t; }                      \
            }                                                                            \
            for (int j = 0; j < n; j++)                                                  \
                for (int i = j + 1; i < n; i++) x[i] -= a[i + j * n] * x[j];            \
            for (int j = n - 1; j >= 0; j--) {                                           \
                x[j] /= a[j + j * n];                                                    \
                for (int i = 0; i < j; i++) x[i] -= a[i + j * n] * x[j];                \
            }                                                                            \
        } else {                                                                         \
            for (int j = 0; j < n; j++) {                                                \
                T s = x[j];                                                              \
                for (int i = 0; i < j; i++) s -= a[i + j * n] * x[i];                   \
                x[j] = s / a[j + j * n];                                                 \
            }                                                                            \
            for (int j = n - 1; j >= 0; j--) {                                           \
                T s = x[j];                                                              \
                for (int i = j + 1; i < n; i++) s -= a[i + j * n] * x[i];               \
                x[j] = s;                                                                \
            }                                                                            \
            for (int i = n - 1; i >= 0; i--) {                                           \
                int p = ipiv[i] - 1;                                                     \
                if (p != i) { T t = x[i]; x[i] = x[p]; x[p] = t; }                      \
            }                                                                            \
        }                                                                                \
    }                                                                                    \
}                                                                                        \
/* Cholesky (potf2): the 'L' or 'U' triangle of a is overwritten with the factor */    \
static int potf2_##SFX(char uplo, int n, T *a) {                                        \
    int lower = uplo == 'L' || uplo == 'l';                                              \
    for (int j = 0; j < n; j++) {                                                        \
        T d = a[j + j * n];                                                              \
        for (int k = 0; k < j; k++) {                                                    \
            T v = lower ? a[j + k * n] : a[k + j * n];                                   \
            d -= v * v;                                                                  \
        }                                                                                \
        if (!(d > 0)) { a[j + j * n] = d; return j + 1; }                                \
        d = sqrt(d);                                                                     \
        a[j + j * n] = d;                                                                \
        for (int i = j + 1; i < n; i++) {                                                \
            T s = lower ? a[i + j * n] : a[j + i * n];                                   \
            for (int k = 0; k < j; k++)                                                  \
                s -= lower ? a[i + k * n] * a[j + k * n] : a[k + i * n] * a[k + j * n];  \
            if (lower) a[i + j * n] = s / d; else a[j + i * n] = s / d;                  \
        }                                                                                \
    }                                                                                    \
    return 0;                                                                            \
}

DEFINE_SMALL(double, d, 2.2250738585072014e-308)
DEFINE_SMALL(float, s, 1.17549435e-38f)

/* ---- batch loops ------------------------------------------------------------ */

void em_batch_getrf(void *fn, int kind, int m, int n, char *a, int64_t sa, int *piv,
                    int64_t sp, int64_t batch, int *infos) {
    if (kind >= 0 && m == n && n <= SMALL_N) {
        for (int64_t b = 0; b < batch; b++)
            infos[b] = kind ? getf2_d(n, (double *)(a + b * sa), piv + b * sp)
                           : getf2_s(n, (float *)(a + b * sa), piv + b * sp);
        return;
    }
    getrf_t f = (getrf_t)fn;
    int lda = m > 1 ? m : 1;
    for (int64_t b = 0; b < batch; b++) f(&m, &n, a + b * sa, &lda, piv + b * sp, &infos[b]);
}

void em_batch_getrs(void *fn, int kind, char trans, int n, int nrhs, const char *a, int64_t sa,
                    const int *piv, int64_t sp, char *b, int64_t sb, int64_t batch,
                    int *infos) {
    if (kind >= 0 && n <= SMALL_N) {
        for (int64_t k = 0; k < batch; k++) {
            if (kind) getrs_d(trans, n, nrhs, (const double *)(a + k * sa), piv + k * sp,
                             (double *)(b + k * sb));
            else getrs_s(trans, n, nrhs, (const float *)(a + k * sa), piv + k * sp,
                         (float *)(b + k * sb));
            infos[k] = 0;
        }
        return;
    }
    getrs_t f = (getrs_t)fn;
    int ld = n > 1 ? n : 1;
    for (int64_t k = 0; k < batch; k++)
        f(&trans, &n, &nrhs, a + k * sa, &ld, piv + k * sp, b + k * sb, &ld, &infos[k], 1);
}

void em_batch_potrf(void *fn, int kind, char uplo, int n, char *a, int64_t sa, int64_t batch,
                    int *infos) {
    if (kind >= 0 && n <= SMALL_N) {
        for (int64_t k = 0; k < batch; k++)
            infos[k] = kind ? potf2_d(uplo, n, (double *)(a + k * sa))
                           : potf2_s(uplo, n, (float *)(a + k * sa));
        return;
    }
    potrf_t f = (potrf_t)fn;
    int lda = n > 1 ? n : 1;
    for (int64_t k = 0; k < batch; k++) f(&uplo, &n, a + k * sa, &lda, &infos[k], 1);
}

void em_batch_trsm(void *fn, char side, char uplo, char trans, char diag, int m, int n,
                   const void *alpha, const char *a, int64_t sa, int lda, char *b, int64_t sb,
                   int ldb, int64_t batch) {
    trsm_t f = (trsm_t)fn;
    for (int64_t k = 0; k < batch; k++)
        f(&side, &uplo, &trans, &diag, &m, &n, alpha, a + k * sa, &lda, b + k * sb, &ldb, 1, 1,
          1, 1);
}
