/* Reductions, scans and softmax: the generic and AVX2+FMA copies of
   reduce_impl.h, the run-time choice between them, and post-processing. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ember_reduce.h"

#define RSFX(name) rd_gen_##name
#include "reduce_impl.h"
#undef RSFX
#undef REXPF

#if defined(__x86_64__) || defined(__i386__)
#define EM_HAVE_AVX2 1
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#define RSFX(name) rd_avx2_##name
#include "reduce_impl.h"
#undef RSFX
#undef REXPF
#pragma GCC pop_options
#else
#define EM_HAVE_AVX2 0
#endif

static int use_avx2(void) {
    static int v = -1;
    if (v < 0) v = EM_HAVE_AVX2 && ember_cpu_isa() >= 1;
    return v;
}

int em_reduce(int op, int dtype, const char *x, int64_t O, int64_t K, int64_t I, char *out,
              const void *center, double p, int nthreads) {
#if EM_HAVE_AVX2
    if (use_avx2()) return rd_avx2_reduce(op, dtype, x, O, K, I, out, center, p, nthreads);
#endif
    return rd_gen_reduce(op, dtype, x, O, K, I, out, center, p, nthreads);
}

int em_argreduce(int op, int dtype, const char *x, int64_t O, int64_t K, int64_t I, char *vals,
                 int64_t *idx, int nthreads) {
#if EM_HAVE_AVX2
    if (use_avx2()) return rd_avx2_argreduce(op, dtype, x, O, K, I, vals, idx, nthreads);
#endif
    return rd_gen_argreduce(op, dtype, x, O, K, I, vals, idx, nthreads);
}

int em_scan(int op, int dtype, const char *x, int64_t O, int64_t K, int64_t I, char *out,
            int64_t *idx, int nthreads) {
#if EM_HAVE_AVX2
    if (use_avx2()) return rd_avx2_scan(op, dtype, x, O, K, I, out, idx, nthreads);
#endif
    return rd_gen_scan(op, dtype, x, O, K, I, out, idx, nthreads);
}

int em_softmax(int log, int dtype, const char *x, int64_t O, int64_t K, int64_t I, char *out,
               int nthreads) {
#if EM_HAVE_AVX2
    if (use_avx2()) return rd_avx2_softmax(log, dtype, x, O, K, I, out, nthreads);
#endif
    return rd_gen_softmax(log, dtype, x, O, K, I, out, nthreads);
}

#define POST(T, SQRT, POW, LOG)                                                          \
    {                                                                                    \
        T *o = (T *)out; const T *c = (const T *)center; T av = (T)a;                    \
        switch (mode) {                                                                  \
        case RP_DIV: for (int64_t i = 0; i < n; i++) o[i] = o[i] / av; break;            \
        case RP_SQRT: for (int64_t i = 0; i < n; i++) o[i] = SQRT(o[i]); break;          \
        case RP_ROOT: for (int64_t i = 0; i < n; i++) o[i] = (T)POW(o[i], (T)(1.0 / a)); break; \
        case RP_DIVSQRT: for (int64_t i = 0; i < n; i++) o[i] = SQRT(o[i] / av); break;  \
        case RP_LOGADD: for (int64_t i = 0; i < n; i++) o[i] = (T)LOG(o[i]) + c[i]; break; \
        case RP_FINITE0: for (int64_t i = 0; i < n; i++) if (isinf(o[i])) o[i] = 0; break; \
        default: break;                                                                  \
        }                                                                                \
    }

void em_reduce_post(int mode, int dtype, char *out, int64_t n, double a, const void *center) {
    if (dtype == EM_F32) POST(float, sqrtf, powf, logf)
    else if (dtype == EM_F64) POST(double, sqrt, pow, log)
}
