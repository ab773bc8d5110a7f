/* Symmetric eigen-decomposition of small real matrices (n <= EIGH_SMALL_N), batched
   and threaded over the batch: Householder tridiagonalisation and implicit QL with
   Wilkinson shifts (EISPACK's tred2/tql2).  For these sizes a LAPACK call's fixed
   cost (blocking logic, workspace queries, machine-constant look-ups) dominates, so
   a direct kernel is faster.  float32 input is computed in double and rounded once,
   so each matrix's result depends only on that matrix (identical on any thread
   count).  Layout matches ?syev: column-major in and out, eigenvectors in columns,
   eigenvalues ascending. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "ember_lapack_batch.h"

#define EIGH_SMALL_N 32
#define MAX_QL_ITER 60

/* Reduce the symmetric V (row-major n x n, lower triangle read) to tridiagonal form:
   d the diagonal, e the subdiagonal (e[i] couples i-1 and i, e[0] = 0); with `vec`,
   V becomes the orthogonal transform. */
static void tred2(int n, double *V, double *d, double *e, int vec) {
#define A(i, j) V[(i) * n + (j)]
    for (int j = 0; j < n; j++) d[j] = A(n - 1, j);
    for (int i = n - 1; i > 0; i--) {
        double scale = 0.0, h = 0.0;
        for (int k = 0; k < i; k++) scale += fabs(d[k]);
        if (scale == 0.0) {
            e[i] = d[i - 1];
            for (int j = 0; j < i; j++) {
                d[j] = A(i - 1, j);
                A(i, j) = 0.0;
                A(j, i) = 0.0;
            }
        } else {
            for (int k = 0; k < i; k++) {
                d[k] /= scale;
                h += d[k] * d[k];
            }
            double f = d[i - 1];
            double g = sqrt(h);
            if (f > 0) g = -g;
            e[i] = scale * g;
            h -= f * g;
            d[i - 1] = f - g;
            for (int j = 0; j < i; j++) e[j] = 0.0;
            for (int j = 0; j < i; j++) {
                f = d[j];
                A(j, i) = f;
                g = e[j] + A(j, j) * f;
                for (int k = j + 1; k <= i - 1; k++) {
                    g += A(k, j) * d[k];
                    e[k] += A(k, j) * f;
                }
                e[j] = g;
            }
            f = 0.0;
            for (int j = 0; j < i; j++) {
                e[j] /= h;
                f += e[j] * d[j];
            }
            double hh = f / (h + h);
            for (int j = 0; j < i; j++) e[j] -= hh * d[j];
            for (int j = 0; j < i; j++) {
                f = d[j];
                g = e[j];
                for (int k = j; k <= i - 1; k++) A(k, j) -= (f * e[k] + g * d[k]);
                d[j] = A(i - 1, j);
                A(i, j) = 0.0;
            }
        }
        d[i] = h;
    }
    if (!vec) {
        for (int j = 0; j < n; j++) d[j] = A(j, j);
        e[0] = 0.0;
        return;
    }
    /* accumulate the Householder reflections */
    for (int i = 0; i < n - 1; i++) {
        A(n - 1, i) = A(i, i);
        A(i, i) = 1.0;
        double h = d[i + 1];
        if (h != 0.0) {
            for (int k = 0; k <= i; k++) d[k] = A(k, i + 1) / h;
            for (int j = 0; j <= i; j++) {
                double g = 0.0;
                for (int k = 0; k <= i; k++) g += A(k, i + 1) * A(k, j);
                for (int k = 0; k <= i; k++) A(k, j) -= g * d[k];
            }
        }
        for (int k = 0; k <= i; k++) A(k, i + 1) = 0.0;
    }
    for (int j = 0; j < n; j++) {
        d[j] = A(n - 1, j);
        A(n - 1, j) = 0.0;
    }
    A(n - 1, n - 1) = 1.0;
    e[0] = 0.0;
}

/* Implicit QL on the tridiagonal (d, e); with `vec`, rotations are applied to the
   rows of Z (tred2's V transposed, so each rotation touches two contiguous rows).
   Ends with d ascending (and Z's rows in the same order).  Returns 0,
   or l + 1 when eigenvalue l does not converge. */
static int tql2(int n, double *Z, double *d, double *e, int vec) {
    for (int i = 1; i < n; i++) e[i - 1] = e[i];
    e[n - 1] = 0.0;
    double f = 0.0, tst1 = 0.0;
    const double eps = 0x1p-52;
    for (int l = 0; l < n; l++) {
        double t = fabs(d[l]) + fabs(e[l]);
        if (t > tst1) tst1 = t;
        int m = l;
        while (m < n - 1 && fabs(e[m]) > eps * tst1) m++;
        if (m > l) {
            int iter = 0;
            do {
                if (++iter > MAX_QL_ITER) return l + 1;
                double g = d[l];
                double p = (d[l + 1] - g) / (2.0 * e[l]);
                double r = hypot(p, 1.0);
                if (p < 0) r = -r;
                d[l] = e[l] / (p + r);
                d[l + 1] = e[l] * (p + r);
                double dl1 = d[l + 1];
                double h = g - d[l];
                for (int i = l + 2; i < n; i++) d[i] -= h;
                f += h;
                p = d[m];
                double c = 1.0, c2 = 1.0, c3 = 1.0, el1 = e[l + 1], s = 0.0, s2 = 0.0;
                for (int i = m - 1; i >= l; i--) {
                    c3 = c2;
                    c2 = c;
                    s2 = s;
                    g = c * e[i];
                    h = c * p;
                    r = sqrt(p * p + e[i] * e[i]);   /* |p|, |e| <= ~n after scaling */
                    e[i + 1] = s * r;
                    s = e[i] / r;
                    c = p / r;
                    p = c * d[i] - s * g;
                    d[i + 1] = h + s * (c * g + s * d[i]);
                    if (vec) {
                        double *zi = Z + (size_t)i * n, *zj = zi + n;
                        for (int k = 0; k < n; k++) {
                            double hk = zj[k];
                            zj[k] = s * zi[k] + c * hk;
                            zi[k] = c * zi[k] - s * hk;
                        }
                    }
                }
                p = -s * s2 * c3 * el1 * e[l] / dl1;
                e[l] = s * p;
                d[l] = c * p;
            } while (fabs(e[l]) > eps * tst1);
        }
        d[l] += f;
        e[l] = 0.0;
    }
    /* selection sort keeps the vectors' columns with their values */
    for (int i = 0; i < n - 1; i++) {
        int k = i;
        double p = d[i];
        for (int j = i + 1; j < n; j++)
            if (d[j] < p) { k = j; p = d[j]; }
        if (k != i) {
            d[k] = d[i];
            d[i] = p;
            if (vec)
                for (int j = 0; j < n; j++) {
                    double t = Z[i * n + j]; Z[i * n + j] = Z[k * n + j]; Z[k * n + j] = t;
                }
        }
    }
    return 0;
}

#define DEFINE_EIGH(T, SFX)                                                                 \
static int finite_tri_##SFX(int n, const T *a, int lower) {                                 \
    for (int c = 0; c < n; c++)                                                              \
        for (int r = lower ? c : 0; r < (lower ? n : c + 1); r++)                            \
            if (!isfinite(a[r + c * n])) return 0;                                          \
    return 1;                                                                                \
}                                                                                            \
static int eigh_one_##SFX(int n, T *a, T *w, int vec, int lower) {                          \
    double V[EIGH_SMALL_N * EIGH_SMALL_N], Z[EIGH_SMALL_N * EIGH_SMALL_N];                 \
    double d[EIGH_SMALL_N], e[EIGH_SMALL_N];                                                 \
    /* A(i, j), i >= j, from the chosen triangle of the column-major a, scaled by a power  \
       of two (exact) to max |A| in [1, 2) so the QL rotations need no overflow guard */    \
    double amax = 0.0;                                                                       \
    for (int i = 0; i < n; i++)                                                              \
        for (int j = 0; j <= i; j++) {                                                       \
            double x = (double)(lower ? a[i + j * n] : a[j + i * n]);                        \
            V[i * n + j] = V[j * n + i] = x;                                                 \
            if (fabs(x) > amax) amax = fabs(x);                                              \
        }                                                                                    \
    int ex = 0;                                                                              \
    if (amax > 0.0) {                                                                        \
        frexp(amax, &ex);                                                                    \
        ex -= 1;                                                                             \
        for (int i = 0; i < n * n; i++) V[i] = ldexp(V[i], -ex);                             \
    }                                                                                        \
    tred2(n, V, d, e, vec);                                                                  \
    if (vec)                                                                                 \
        for (int r = 0; r < n; r++)                                                          \
            for (int c = 0; c < n; c++) Z[c * n + r] = V[r * n + c];                         \
    int info = tql2(n, Z, d, e, vec);                                                        \
    for (int i = 0; i < n; i++) w[i] = (T)ldexp(d[i], ex);                                   \
    if (vec)                                                                                 \
        for (int i = 0; i < n * n; i++) a[i] = (T)Z[i];                                      \
    return info;                                                                             \
}                                                                                            \
static int small_syev_##SFX(int vec, int lower, int n, T *a, T *w, int64_t batch,           \
                            int nt, int *infos) {                                            \
    for (int64_t k = 0; k < batch; k++)                                                      \
        if (!finite_tri_##SFX(n, a + k * n * n, lower)) return -1;                          \
    _Pragma("omp parallel for num_threads(nt) schedule(static) if (nt > 1 && batch > 1)")   \
    for (int64_t k = 0; k < batch; k++)                                                      \
        infos[k] = eigh_one_##SFX(n, a + k * n * n, w + k * n, vec, lower);                 \
    return 0;                                                                                \
}

DEFINE_EIGH(float, s)
DEFINE_EIGH(double, d)

int em_small_syev(int kind, int vec, char uplo, int n, void *a, void *w, int64_t batch,
                  int nthreads, int *infos) {
    if (kind < 0 || n < 1 || n > EIGH_SMALL_N) return -1;
    int lower = uplo == 'L' || uplo == 'l';
    int nt = nthreads < 1 ? 1 : (int64_t)nthreads > batch ? (int)batch : nthreads;
    if (kind) return small_syev_d(vec, lower, n, (double *)a, (double *)w, batch, nt, infos);
    return small_syev_s(vec, lower, n, (float *)a, (float *)w, batch, nt, infos);
}
