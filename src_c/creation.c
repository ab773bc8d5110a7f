/* Range creation kernels: arange, linspace, logspace.

   Each value is computed from its index alone, in the arithmetic PyTorch's
   CPU kernels use for the dtype (int64 for integers and double for
   float32/float64 in arange; the dtype itself for linspace, with float16 and
   bfloat16 rounding after every operation), so the results match torch's
   scalar path bit for bit and do not depend on the thread count.
   Nothing here knows about Python. */
#include <math.h>
#include <stdint.h>
#include "ember.h"
#ifdef _OPENMP
#include <omp.h>
#endif

/* declared for ember/_C/creation.pyx */
void em_arange(int dtype, void *out, int64_t n, double start, double step, int64_t istart,
               int64_t istep, int nthreads);
void em_linspace(int dtype, void *out, int64_t n, double start, double end, int nthreads);
void em_logspace(int dtype, void *out, int64_t n, double start, double end, double base,
                 int nthreads);

static inline float rh(float x) { return em_h2f(em_f2h(x)); }   /* round to float16 */
static inline float rb(float x) { return em_bf2f(em_f2bf(x)); }  /* round to bfloat16 */

static inline void store_int(int dtype, void *out, int64_t i, int64_t v) {
    switch (dtype) {
    case EM_I64: ((int64_t *)out)[i] = v; break;
    case EM_I32: ((int32_t *)out)[i] = (int32_t)v; break;
    case EM_I16: ((int16_t *)out)[i] = (int16_t)v; break;
    case EM_I8: ((int8_t *)out)[i] = (int8_t)v; break;
    case EM_U8: ((uint8_t *)out)[i] = (uint8_t)v; break;
    case EM_BOOL: ((uint8_t *)out)[i] = v != 0; break;
    default: break;
    }
}

static inline void store_float(int dtype, void *out, int64_t i, double v) {
    switch (dtype) {
    case EM_F64: ((double *)out)[i] = v; break;
    case EM_F32: ((float *)out)[i] = (float)v; break;
    case EM_F16: ((uint16_t *)out)[i] = em_f2h((float)v); break;
    case EM_BF16: ((uint16_t *)out)[i] = em_f2bf((float)v); break;
    default: store_int(dtype, out, i, (int64_t)v); break;
    }
}

static int pick_threads(int64_t n, int nthreads) {
    return n < 32768 ? 1 : nthreads;
}

void em_arange(int dtype, void *out, int64_t n, double start, double step, int64_t istart,
               int64_t istep, int nthreads) {
    int nt = pick_threads(n, nthreads);
    int64_t i;
    if (dtype == EM_F32) {
        float *o = (float *)out;
        #pragma omp parallel for num_threads(nt) schedule(static)
        for (i = 0; i < n; i++) o[i] = (float)(start + step * (double)i);
    } else if (dtype == EM_F64) {
        double *o = (double *)out;
        #pragma omp parallel for num_threads(nt) schedule(static)
        for (i = 0; i < n; i++) o[i] = start + step * (double)i;
    } else if (dtype == EM_F16 || dtype == EM_BF16) {
        /* accumulate type float */
        float fs = (float)start, fst = (float)step;
        #pragma omp parallel for num_threads(nt) schedule(static)
        for (i = 0; i < n; i++) store_float(dtype, out, i, (double)(fs + fst * (float)i));
    } else if (dtype == EM_I64) {
        int64_t *o = (int64_t *)out;
        #pragma omp parallel for num_threads(nt) schedule(static)
        for (i = 0; i < n; i++) o[i] = (int64_t)((uint64_t)istart + (uint64_t)istep * (uint64_t)i);
    } else {
        #pragma omp parallel for num_threads(nt) schedule(static)
        for (i = 0; i < n; i++)
            store_int(dtype, out, i, (int64_t)((uint64_t)istart + (uint64_t)istep * (uint64_t)i));
    }
}

void em_linspace(int dtype, void *out, int64_t n, double start, double end, int nthreads) {
    int nt = pick_threads(n, nthreads);
    int64_t half = n / 2, i;
    if (n == 1) {
        store_float(dtype, out, 0, start);
        return;
    }
    if (dtype == EM_F64) {
        double step = (end - start) / (double)(n - 1), *o = (double *)out;
        #pragma omp parallel for num_threads(nt) schedule(static)
        for (i = 0; i < n; i++)
            o[i] = i < half ? start + step * (double)i : end - step * (double)(n - i - 1);
    } else if (dtype == EM_F32) {
        float s = (float)start, e = (float)end, step = (e - s) / (float)(n - 1), *o = (float *)out;
        #pragma omp parallel for num_threads(nt) schedule(static)
        for (i = 0; i < n; i++)
            o[i] = i < half ? s + step * (float)i : e - step * (float)(n - i - 1);
    } else if (dtype == EM_F16) {
        float s = rh((float)start), e = rh((float)end);
        float step = rh(rh(e - s) / rh((float)(n - 1)));
        #pragma omp parallel for num_threads(nt) schedule(static)
        for (i = 0; i < n; i++) {
            float v = i < half ? rh(s + rh(step * rh((float)i)))
                               : rh(e - rh(step * rh((float)(n - i - 1))));
            ((uint16_t *)out)[i] = em_f2h(v);
        }
    } else if (dtype == EM_BF16) {
        float s = rb((float)start), e = rb((float)end);
        float step = rb(rb(e - s) / rb((float)(n - 1)));
        #pragma omp parallel for num_threads(nt) schedule(static)
        for (i = 0; i < n; i++) {
            float v = i < half ? rb(s + rb(step * rb((float)i)))
                               : rb(e - rb(step * rb((float)(n - i - 1))));
            ((uint16_t *)out)[i] = em_f2bf(v);
        }
    } else {
        /* integers: start and end were truncated to the dtype by the caller;
           step and the values in double, truncated on store */
        double step = (end - start) / (double)(n - 1);
        #pragma omp parallel for num_threads(nt) schedule(static)
        for (i = 0; i < n; i++)
            store_int(dtype, out, i, (int64_t)(i < half ? start + step * (double)i
                                                        : end - step * (double)(n - i - 1)));
    }
}

/* The loop lives in its own function: with the converted start/end computed in
   the caller's branches, GCC 12's SLP vectorizer (-O3 -fopenmp) merged the pair
   into the OpenMP data block without the float rounding. */
__attribute__((noinline))
static void logspace_run(int dtype, void *out, int64_t n, double s, double e, double step,
                         double base, int nt) {
    int64_t half = n / 2, i;
    #pragma omp parallel for num_threads(nt) schedule(static)
    for (i = 0; i < n; i++)
        store_float(dtype, out, i, pow(base, i < half ? s + step * (double)i
                                                      : e - step * (double)(n - i - 1)));
}

void em_logspace(int dtype, void *out, int64_t n, double start, double end, double base,
                 int nthreads) {
    /* PyTorch: start and end in the dtype (integers truncated by the caller),
       step = double(end - start) / (n - 1), exponents and pow in double */
    int nt = pick_threads(n, nthreads);
    if (n == 1) {
        store_float(dtype, out, 0, pow(base, start));
        return;
    }
    double d = (double)(n - 1);
    if (dtype == EM_F32) {
        float fs = (float)start, fe = (float)end;
        logspace_run(dtype, out, n, fs, fe, (double)(fe - fs) / d, base, nt);
    } else if (dtype == EM_F16) {
        float fs = rh((float)start), fe = rh((float)end);
        logspace_run(dtype, out, n, fs, fe, (double)rh(fe - fs) / d, base, nt);
    } else if (dtype == EM_BF16) {
        float fs = rb((float)start), fe = rb((float)end);
        logspace_run(dtype, out, n, fs, fe, (double)rb(fe - fs) / d, base, nt);
    } else {
        logspace_run(dtype, out, n, start, end, (end - start) / d, base, nt);
    }
}
