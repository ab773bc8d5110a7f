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
typedef void (*syevd_t)(const char *jobz, const char *uplo, const int *n, void *a,
                        const int *lda, void *w, void *work, const int *lwork, int *iwork,
                        const int *liwork, int *info, size_t l1, size_t l2);
typedef void (*syev_t)(const char *jobz, const char *uplo, const int *n, void *a,
                       const int *lda, void *w, void *work, const int *lwork, int *info,
                       size_t l1, size_t l2);
typedef void (*heevd_t)(const char *jobz, const char *uplo, const int *n, void *a,
                        const int *lda, void *w, void *work, const int *lwork, void *rwork,
                        const int *lrwork, int *iwork, const int *liwork, int *info, size_t l1,
                        size_t l2);
typedef void (*gesdd_t)(const char *jobz, const int *m, const int *n, void *a, const int *lda,
                        void *s, void *u, const int *ldu, void *vt, const int *ldvt, void *work,
                        const int *lwork, int *iwork, int *info, size_t l1);
typedef void (*cgesdd_t)(const char *jobz, const int *m, const int *n, void *a, const int *lda,
                         void *s, void *u, const int *ldu, void *vt, const int *ldvt, void *work,
                         const int *lwork, void *rwork, int *iwork, int *info, size_t l1);

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

/* ---- row-major kernels for inv / solve / det of small square matrices -----------
   They read ember's row-major memory directly (no transposing copies) and work on a
   local copy of each matrix.  Partial pivoting picks the same pivots as getf2 on the
   matrix, so the first zero pivot (the info they return) is LAPACK's. */

#define SMALL_INL static inline __attribute__((always_inline))

#define DEFINE_ROWMAJOR(T, SFX)                                                         \
/* in-place Gauss-Jordan inverse of the row-major a; 0, or the first zero pivot */      \
SMALL_INL int inv_gj_##SFX(int n, T *a) {                                                \
    int perm[SMALL_N];                                                                   \
    for (int k = 0; k < n; k++) {                                                        \
        int p = k;                                                                       \
        T big = fabs(a[k * n + k]);                                                      \
        for (int i = k + 1; i < n; i++)                                                  \
            if (fabs(a[i * n + k]) > big) { big = fabs(a[i * n + k]); p = i; }           \
        if (big == 0) return k + 1;                                                      \
        perm[k] = p;                                                                     \
        if (p != k)                                                                      \
            for (int c = 0; c < n; c++) {                                                \
                T t = a[k * n + c]; a[k * n + c] = a[p * n + c]; a[p * n + c] = t;       \
            }                                                                            \
        /* whole-row selects, not a scalar store into the row the vector loop reads */  \
        const T r = 1 / a[k * n + k];                                                    \
        T rk[SMALL_N];                                                                   \
        for (int c = 0; c < n; c++) rk[c] = (c == k ? (T)1 : a[k * n + c]) * r;          \
        for (int c = 0; c < n; c++) a[k * n + c] = rk[c];                                \
        for (int i = 0; i < n; i++) {                                                    \
            if (i == k) continue;                                                        \
            T *ri = a + i * n;                                                           \
            const T f = ri[k];                                                           \
            for (int c = 0; c < n; c++) ri[c] = (c == k ? (T)0 : ri[c]) - f * rk[c];     \
        }                                                                                \
    }                                                                                    \
    for (int k = n - 1; k >= 0; k--)                                                     \
        if (perm[k] != k)                                                                \
            for (int i = 0; i < n; i++) {                                                \
                T t = a[i * n + k]; a[i * n + k] = a[i * n + perm[k]];                   \
                a[i * n + perm[k]] = t;                                                  \
            }                                                                            \
    return 0;                                                                            \
}                                                                                        \
/* A X = B by elimination with partial pivoting on [A | B] (row-major; B is n x k,     \
   overwritten with X); 0, or the first zero pivot */                                   \
SMALL_INL int solve_ge_##SFX(int n, int k, T *a, T *b) {                                 \
    for (int j = 0; j < n; j++) {                                                        \
        int p = j;                                                                       \
        T big = fabs(a[j * n + j]);                                                      \
        for (int i = j + 1; i < n; i++)                                                  \
            if (fabs(a[i * n + j]) > big) { big = fabs(a[i * n + j]); p = i; }           \
        if (big == 0) return j + 1;                                                      \
        if (p != j) {                                                                    \
            for (int c = j; c < n; c++) {                                                \
                T t = a[j * n + c]; a[j * n + c] = a[p * n + c]; a[p * n + c] = t;       \
            }                                                                            \
            for (int c = 0; c < k; c++) {                                                \
                T t = b[j * k + c]; b[j * k + c] = b[p * k + c]; b[p * k + c] = t;       \
            }                                                                            \
        }                                                                                \
        const T r = 1 / a[j * n + j];                                                    \
        for (int i = j + 1; i < n; i++) {                                                \
            const T f = a[i * n + j] * r;                                                \
            for (int c = j + 1; c < n; c++) a[i * n + c] -= f * a[j * n + c];            \
            for (int c = 0; c < k; c++) b[i * k + c] -= f * b[j * k + c];                \
        }                                                                                \
    }                                                                                    \
    for (int j = n - 1; j >= 0; j--) {                                                   \
        const T d = a[j * n + j];                                                        \
        for (int c = 0; c < k; c++) b[j * k + c] /= d;                                   \
        for (int i = 0; i < j; i++) {                                                    \
            const T f = a[i * n + j];                                                    \
            for (int c = 0; c < k; c++) b[i * k + c] -= f * b[j * k + c];                \
        }                                                                                \
    }                                                                                    \
    return 0;                                                                            \
}                                                                                        \
/* LU with partial pivoting of the row-major a (getf2 on its transpose has the same    \
   determinant); sign of the permutation and the diagonal of U, in place */            \
SMALL_INL T lu_det_##SFX(int n, T *a, T *diag) {                                         \
    T sign = 1;                                                                          \
    for (int j = 0; j < n; j++) {                                                        \
        int p = j;                                                                       \
        T big = fabs(a[j * n + j]);                                                      \
        for (int i = j + 1; i < n; i++)                                                  \
            if (fabs(a[i * n + j]) > big) { big = fabs(a[i * n + j]); p = i; }           \
        if (p != j) {                                                                    \
            sign = -sign;                                                                \
            for (int c = j; c < n; c++) {                                                \
                T t = a[j * n + c]; a[j * n + c] = a[p * n + c]; a[p * n + c] = t;       \
            }                                                                            \
        }                                                                                \
        diag[j] = a[j * n + j];                                                          \
        if (diag[j] == 0) continue;                                                      \
        const T r = 1 / diag[j];                                                         \
        for (int i = j + 1; i < n; i++) {                                                \
            const T f = a[i * n + j] * r;                                                \
            for (int c = j + 1; c < n; c++) a[i * n + c] -= f * a[j * n + c];            \
        }                                                                                \
    }                                                                                    \
    return sign;                                                                         \
}                                                                                        \
static void small_inv_##SFX(int n, const T *a, T *out, int64_t batch, int *infos) {     \
    const int64_t nn = (int64_t)n * n;                                                   \
    for (int64_t b = 0; b < batch; b++) {                                                \
        T *o = out + b * nn;                                                             \
        for (int64_t i = 0; i < nn; i++) o[i] = a[b * nn + i];                           \
        /* constant sizes unroll completely */                                           \
        infos[b] = n == 2 ? inv_gj_##SFX(2, o) : n == 3 ? inv_gj_##SFX(3, o) :           \
                   n == 4 ? inv_gj_##SFX(4, o) : inv_gj_##SFX(n, o);                     \
    }                                                                                    \
}                                                                                        \
static void small_solve_##SFX(int n, int k, const T *a, const T *bm, T *out,            \
                              int64_t batch, int *infos) {                               \
    const int64_t nn = (int64_t)n * n, nk = (int64_t)n * k;                              \
    T loc[SMALL_N * SMALL_N];                                                            \
    for (int64_t b = 0; b < batch; b++) {                                                \
        for (int64_t i = 0; i < nn; i++) loc[i] = a[b * nn + i];                         \
        T *o = out + b * nk;                                                             \
        for (int64_t i = 0; i < nk; i++) o[i] = bm[b * nk + i];                          \
        infos[b] = n == 2 ? solve_ge_##SFX(2, k, loc, o) : n == 3 ? solve_ge_##SFX(3, k, loc, o) : \
                   n == 4 ? solve_ge_##SFX(4, k, loc, o) : solve_ge_##SFX(n, k, loc, o); \
    }                                                                                    \
}                                                                                        \
static void small_det_##SFX(int n, const T *a, T *r1, T *r2, int64_t batch, int logabs) { \
    const int64_t nn = (int64_t)n * n;                                                   \
    T loc[SMALL_N * SMALL_N], diag[SMALL_N];                                             \
    for (int64_t b = 0; b < batch; b++) {                                                \
        for (int64_t i = 0; i < nn; i++) loc[i] = a[b * nn + i];                         \
        T sign = n == 2 ? lu_det_##SFX(2, loc, diag) : n == 3 ? lu_det_##SFX(3, loc, diag) : \
                 n == 4 ? lu_det_##SFX(4, loc, diag) : lu_det_##SFX(n, loc, diag);       \
        if (!logabs) {                                                                   \
            T d = sign;                                                                  \
            for (int j = 0; j < n; j++) d *= diag[j];                                    \
            r1[b] = d;                                                                   \
        } else {                                                                         \
            T la = 0;                                                                    \
            for (int j = 0; j < n; j++) {                                                \
                sign = diag[j] > 0 ? sign : diag[j] < 0 ? -sign : diag[j] == 0 ? 0 : diag[j]; \
                la += log(fabs(diag[j]));                                                \
            }                                                                            \
            r1[b] = sign;                                                                \
            r2[b] = la;                                                                  \
        }                                                                                \
    }                                                                                    \
}

DEFINE_ROWMAJOR(double, d)
DEFINE_ROWMAJOR(float, s)

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

void em_batch_syevd(void *fn, int kind, char jobz, char uplo, int n, char *a, int64_t sa, char *w,
                    int64_t sw, void *work, int lwork, void *rwork, int lrwork, int *iwork,
                    int liwork, int64_t batch, int *infos) {
    int lda = n > 1 ? n : 1;
    for (int64_t k = 0; k < batch; k++) {
        if (kind < 0)
            ((heevd_t)fn)(&jobz, &uplo, &n, a + k * sa, &lda, w + k * sw, work, &lwork, rwork,
                          &lrwork, iwork, &liwork, &infos[k], 1, 1);
        else
            ((syevd_t)fn)(&jobz, &uplo, &n, a + k * sa, &lda, w + k * sw, work, &lwork, iwork,
                          &liwork, &infos[k], 1, 1);
    }
}

void em_batch_gesdd(void *fn, int kind, char jobz, int m, int n, char *a, int64_t sa, char *s,
                    int64_t ss, char *u, int64_t su, int ldu, char *vt, int64_t svt, int ldvt,
                    void *work, int lwork, void *rwork, int *iwork, int64_t batch, int *infos) {
    int lda = m > 1 ? m : 1;
    for (int64_t k = 0; k < batch; k++) {
        char *pu = u ? u + k * su : NULL, *pv = vt ? vt + k * svt : NULL;
        if (kind < 0)
            ((cgesdd_t)fn)(&jobz, &m, &n, a + k * sa, &lda, s + k * ss, pu, &ldu, pv, &ldvt,
                           work, &lwork, rwork, iwork, &infos[k], 1);
        else
            ((gesdd_t)fn)(&jobz, &m, &n, a + k * sa, &lda, s + k * ss, pu, &ldu, pv, &ldvt, work,
                          &lwork, iwork, &infos[k], 1);
    }
}

int em_small_inv(int kind, int n, const void *a, void *out, int64_t batch, int *infos) {
    if (kind < 0 || n > SMALL_N) return -1;
    if (kind) small_inv_d(n, (const double *)a, (double *)out, batch, infos);
    else small_inv_s(n, (const float *)a, (float *)out, batch, infos);
    return 0;
}

int em_small_solve(int kind, int n, int k, const void *a, const void *b, void *out,
                   int64_t batch, int *infos) {
    if (kind < 0 || n > SMALL_N) return -1;
    if (kind) small_solve_d(n, k, (const double *)a, (const double *)b, (double *)out, batch,
                            infos);
    else small_solve_s(n, k, (const float *)a, (const float *)b, (float *)out, batch, infos);
    return 0;
}

int em_small_det(int kind, int n, const void *a, void *r1, void *r2, int64_t batch,
                 int logabs) {
    if (kind < 0 || n > SMALL_N) return -1;
    if (kind) small_det_d(n, (const double *)a, (double *)r1, (double *)r2, batch, logabs);
    else small_det_s(n, (const float *)a, (float *)r1, (float *)r2, batch, logabs);
    return 0;
}

void em_batch_syev(void *fn, char jobz, char uplo, int n, char *a, int64_t sa, char *w,
                   int64_t sw, void *work, int lwork, int64_t batch, int *infos) {
    int lda = n > 1 ? n : 1;
    for (int64_t k = 0; k < batch; k++)
        ((syev_t)fn)(&jobz, &uplo, &n, a + k * sa, &lda, w + k * sw, work, &lwork, &infos[k], 1,
                     1);
}
