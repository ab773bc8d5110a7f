/* The FFT family (see fft_impl.h for the algorithms), instantiated for float and
   double, with one process-wide plan cache per precision. */
#include <complex.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "ember.h"
#include "ember_fft.h"

/* lengths with a prime factor above this (and above it themselves) use Bluestein */
#define BLUE_MIN 61
/* rows moved together when a transform runs over a strided (non-last) dim */
#define FFT_BLOCK 16

static pthread_mutex_t em_fft_mutex = PTHREAD_MUTEX_INITIALIZER;
static void em_fft_lock(void) { pthread_mutex_lock(&em_fft_mutex); }
static void em_fft_unlock(void) { pthread_mutex_unlock(&em_fft_mutex); }

#if defined(__x86_64__) || defined(__i386__)
/* the radix-2/4 passes have AVX2 forms (fft_avx2.h for float, fft_avx2d.h for double),
   used when the CPU has AVX2+FMA */
#include "fft_avx2.h"
#include "fft_avx2d.h"
#define FFT_SIMD 1
static int use_simd(void) {
    static int v = -1;
    if (v < 0) v = ember_cpu_isa() >= 1;
    return v;
}
#define use_simd_f use_simd
#define use_simd_d use_simd
#define simd_pass_f simdf_pass
#define simd_multi_f simdf_multi
#define simd_pass_d simdd_pass
#define simd_multi_d simdd_multi
#endif

#define T float
#define CT float complex
#define SFX _f
#define MKC CMPLXF
#define CREAL crealf
#define CIMAG cimagf
#define CONJ conjf
#include "fft_impl.h"
#undef T
#undef CT
#undef SFX
#undef MKC
#undef CREAL
#undef CIMAG
#undef CONJ

#define T double
#define CT double complex
#define SFX _d
#define MKC CMPLX
#define CREAL creal
#define CIMAG cimag
#define CONJ conj
#include "fft_impl.h"

int em_fft_c2c(int dtype, const void *in, int64_t istride, int64_t idist, void *out,
               int64_t ostride, int64_t odist, int64_t n, int64_t howmany, int sign,
               double scale, int nthreads) {
    if (n <= 0 || howmany <= 0) return 0;
    if (dtype == EM_C64)
        return c2c_f((const float complex *)in, istride, idist, (float complex *)out, ostride,
                     odist, n, howmany, sign, (float)scale, nthreads);
    return c2c_d((const double complex *)in, istride, idist, (double complex *)out, ostride,
                 odist, n, howmany, sign, scale, nthreads);
}

int em_fft_r2c(int dtype, const void *in, int64_t istride, int64_t idist, void *out,
               int64_t ostride, int64_t odist, int64_t n, int64_t howmany, double scale,
               int nthreads) {
    if (n <= 0 || howmany <= 0) return 0;
    if (dtype == EM_F32)
        return r2c_f((const float *)in, istride, idist, (float complex *)out, ostride, odist, n,
                     howmany, (float)scale, nthreads);
    return r2c_d((const double *)in, istride, idist, (double complex *)out, ostride, odist, n,
                 howmany, scale, nthreads);
}

int em_fft_c2r(int dtype, const void *in, int64_t istride, int64_t idist, void *out,
               int64_t ostride, int64_t odist, int64_t n, int64_t howmany, double scale,
               int nthreads) {
    if (n <= 0 || howmany <= 0) return 0;
    if (dtype == EM_F32)
        return c2r_f((const float complex *)in, istride, idist, (float *)out, ostride, odist, n,
                     howmany, (float)scale, nthreads);
    return c2r_d((const double complex *)in, istride, idist, (double *)out, ostride, odist, n,
                 howmany, scale, nthreads);
}
