/* Stable row sort (values + int64 indices): insertion-sorted runs, then
   bottom-up merging.  NaN sorts as the largest value, as in PyTorch. */
#include <stdint.h>
#include <stdlib.h>
#include "ember_reduce.h"

#define SORT_RUN 32

#define DEF_SORT(NM, T, LESS)                                                            \
typedef struct { T k; int64_t i; } NM##_kv;                                              \
static void NM##_row(const T *x, int64_t n, T *vals, int64_t *idx, NM##_kv *a,           \
                     NM##_kv *b) {                                                       \
    for (int64_t i = 0; i < n; i++) { a[i].k = x[i]; a[i].i = i; }                       \
    for (int64_t s = 0; s < n; s += SORT_RUN) {                                          \
        int64_t e = s + SORT_RUN < n ? s + SORT_RUN : n;                                 \
        for (int64_t i = s + 1; i < e; i++) {                                            \
            NM##_kv t = a[i]; int64_t j = i;                                             \
            while (j > s) { T u = t.k, v = a[j - 1].k; if (!(LESS)) break; a[j] = a[j - 1]; j--; } \
            a[j] = t;                                                                    \
        }                                                                                \
    }                                                                                    \
    for (int64_t w = SORT_RUN; w < n; w *= 2) {                                          \
        for (int64_t s = 0; s < n; s += 2 * w) {                                         \
            int64_t m = s + w < n ? s + w : n, e = s + 2 * w < n ? s + 2 * w : n;        \
            int64_t i = s, j = m, k = s;                                                 \
            while (i < m && j < e) {                                                     \
                T u = a[j].k, v = a[i].k;                                                \
                if (LESS) b[k++] = a[j++]; else b[k++] = a[i++];                         \
            }                                                                            \
            while (i < m) b[k++] = a[i++];                                               \
            while (j < e) b[k++] = a[j++];                                               \
        }                                                                                \
        NM##_kv *t = a; a = b; b = t;                                                    \
    }                                                                                    \
    for (int64_t i = 0; i < n; i++) { if (vals) vals[i] = a[i].k; idx[i] = a[i].i; }     \
}                                                                                        \
static void NM##_run(const char *xp, int64_t rows, int64_t n, char *vp, int64_t *idx,    \
                     int nt) {                                                           \
    const T *x = (const T *)xp; T *vals = (T *)vp;                                       \
    if (rows == 0 || n == 0) return;                                                     \
    _Pragma("omp parallel num_threads(nt) if(nt > 1)")                                   \
    {                                                                                    \
        NM##_kv *a = (NM##_kv *)malloc(sizeof(NM##_kv) * n * 2);                         \
        _Pragma("omp for schedule(static)")                                              \
        for (int64_t r = 0; r < rows; r++)                                               \
            NM##_row(x + r * n, n, vals ? vals + r * n : NULL, idx + r * n, a, a + n);   \
        free(a);                                                                         \
    }                                                                                    \
}

/* u comes before v */
#define ASC_F (u < v || (v != v && u == u))
#define DESC_F (u > v || (u != u && v == v))
DEF_SORT(sa_f32, float, ASC_F)
DEF_SORT(sd_f32, float, DESC_F)
DEF_SORT(sa_f64, double, ASC_F)
DEF_SORT(sd_f64, double, DESC_F)
DEF_SORT(sa_i64, int64_t, (u < v))
DEF_SORT(sd_i64, int64_t, (u > v))

int em_sort(int dtype, const char *x, int64_t rows, int64_t n, char *vals, int64_t *idx,
            int descending, int nthreads) {
    if (dtype == EM_F32) (descending ? sd_f32_run : sa_f32_run)(x, rows, n, vals, idx, nthreads);
    else if (dtype == EM_F64) (descending ? sd_f64_run : sa_f64_run)(x, rows, n, vals, idx, nthreads);
    else if (dtype == EM_I64) (descending ? sd_i64_run : sa_i64_run)(x, rows, n, vals, idx, nthreads);
    else return -1;
    return 0;
}
