/* The N-d driver under every elementwise kernel: split the iteration space
   into rows of the innermost dimension and hand each row to the inner loop. */
#include <string.h>
#include "ember.h"
#ifdef _OPENMP
#include <omp.h>
#endif

#define EM_MAXARGS 8
#define EM_MAXDIMS 16

static void run_rows(em_loop fn, int nargs, char **ptrs, int ndim, const int64_t *shape,
                     const int64_t *strides, const void *aux, int64_t r0, int64_t r1) {
    /* rows are indices over shape[0..ndim-2]; inner dim is shape[ndim-1] */
    int64_t idx[EM_MAXDIMS];
    char *p[EM_MAXARGS];
    int64_t is[EM_MAXARGS];
    int od = ndim - 1;
    int64_t inner = shape[od];
    for (int a = 0; a < nargs; a++) is[a] = strides[a * ndim + od];
    int64_t r = r0;
    for (int d = od - 1; d >= 0; d--) { idx[d] = r % shape[d]; r /= shape[d]; }
    for (int64_t row = r0; row < r1; row++) {
        for (int a = 0; a < nargs; a++) {
            char *q = ptrs[a];
            for (int d = 0; d < od; d++) q += idx[d] * strides[a * ndim + d];
            p[a] = q;
        }
        fn(p, is, inner, aux);
        for (int d = od - 1; d >= 0; d--) {
            if (++idx[d] < shape[d]) break;
            idx[d] = 0;
        }
    }
}

void em_run_nd(em_loop fn, int nargs, char **ptrs, int ndim, const int64_t *shape,
               const int64_t *strides, const void *aux, int nthreads) {
    if (ndim == 0) {
        int64_t z[EM_MAXARGS] = {0};
        fn(ptrs, z, 1, aux);
        return;
    }
    int64_t inner = shape[ndim - 1], rows = 1;
    for (int d = 0; d < ndim - 1; d++) rows *= shape[d];
    if (rows == 0 || inner == 0) return;
    if (nthreads <= 1) {
        run_rows(fn, nargs, ptrs, ndim, shape, strides, aux, 0, rows);
        return;
    }
    if (rows < nthreads) {
        /* few long rows: chunk each row across threads (cache-line multiples) */
        for (int64_t row = 0; row < rows; row++) {
            char *base[EM_MAXARGS];
            int64_t is[EM_MAXARGS];
            int64_t rr = row;
            for (int a = 0; a < nargs; a++) { base[a] = ptrs[a]; is[a] = strides[a * ndim + ndim - 1]; }
            for (int d = ndim - 2; d >= 0; d--) {
                int64_t i = rr % shape[d]; rr /= shape[d];
                for (int a = 0; a < nargs; a++) base[a] += i * strides[a * ndim + d];
            }
            int64_t chunk = ((inner + nthreads - 1) / nthreads + 63) & ~(int64_t)63;
            #pragma omp parallel for num_threads(nthreads) schedule(static)
            for (int t = 0; t < nthreads; t++) {
                int64_t s = t * chunk, e = s + chunk < inner ? s + chunk : inner;
                if (s >= e) continue;
                char *p[EM_MAXARGS];
                for (int a = 0; a < nargs; a++) p[a] = base[a] + s * is[a];
                fn(p, is, e - s, aux);
            }
        }
        return;
    }
    #pragma omp parallel num_threads(nthreads)
    {
#ifdef _OPENMP
        int t = omp_get_thread_num(), nt = omp_get_num_threads();
#else
        int t = 0, nt = 1;
#endif
        int64_t per = rows / nt, extra = rows % nt;
        int64_t r0 = t * per + (t < extra ? t : extra);
        int64_t r1 = r0 + per + (t < extra ? 1 : 0);
        if (r0 < r1) run_rows(fn, nargs, ptrs, ndim, shape, strides, aux, r0, r1);
    }
}
