/* Normalisation kernels: the generic and AVX2+FMA copies of norm_impl.h and the
   run-time choice between them. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ember.h"
#include "ember_norm.h"

#define NM_VBYTES 16
#define NSFX(name) nm_gen_##name
#include "norm_impl.h"
#undef NSFX
#undef NM_ACC
#undef NM_RB
#undef DEF_LAYER_NORM
#undef NM_VBYTES

#if defined(__x86_64__) || defined(__i386__)
#define EM_HAVE_AVX2 1
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#define NM_VBYTES 32
#define NSFX(name) nm_avx2_##name
#include "norm_impl.h"
#undef NSFX
#pragma GCC pop_options
#else
#define EM_HAVE_AVX2 0
#endif

static int use_avx2(void) {
    static int v = -1;
    if (v < 0) v = EM_HAVE_AVX2 && ember_cpu_isa() >= 1;
    return v;
}

int em_layer_norm_fwd(int dtype, const char *x, const char *w, const char *b, int64_t M,
                      int64_t N, double eps, char *y, char *mean, char *rstd, int nthreads) {
#if EM_HAVE_AVX2
    if (use_avx2()) return nm_avx2_layer_norm_fwd(dtype, x, w, b, M, N, eps, y, mean, rstd, 0, nthreads);
#endif
    return nm_gen_layer_norm_fwd(dtype, x, w, b, M, N, eps, y, mean, rstd, 0, nthreads);
}

int em_layer_norm_bwd(int dtype, const char *dy, const char *x, const char *mean,
                      const char *rstd, const char *w, int64_t M, int64_t N, char *dx,
                      char *dw, char *db, int nthreads) {
#if EM_HAVE_AVX2
    if (use_avx2()) return nm_avx2_layer_norm_bwd(dtype, dy, x, mean, rstd, w, M, N, dx, dw, db, 0, nthreads);
#endif
    return nm_gen_layer_norm_bwd(dtype, dy, x, mean, rstd, w, M, N, dx, dw, db, 0, nthreads);
}

int em_rms_norm_fwd(int dtype, const char *x, const char *w, int64_t M, int64_t N, double eps,
                    char *y, char *rstd, int nthreads) {
    /* the layer_norm kernel without centering; its mean output is all zeros */
    char *mean = (char *)calloc((size_t)(M > 0 ? M : 1), 8);
    if (!mean) return -2;
    int rc;
#if EM_HAVE_AVX2
    if (use_avx2()) rc = nm_avx2_layer_norm_fwd(dtype, x, w, NULL, M, N, eps, y, mean, rstd, 1, nthreads);
    else
#endif
    rc = nm_gen_layer_norm_fwd(dtype, x, w, NULL, M, N, eps, y, mean, rstd, 1, nthreads);
    free(mean);
    return rc;
}

int em_rms_norm_bwd(int dtype, const char *dy, const char *x, const char *rstd, const char *w,
                    int64_t M, int64_t N, char *dx, char *dw, int nthreads) {
    char *mean = (char *)calloc((size_t)(M > 0 ? M : 1), 8);
    if (!mean) return -2;
    int rc;
#if EM_HAVE_AVX2
    if (use_avx2()) rc = nm_avx2_layer_norm_bwd(dtype, dy, x, mean, rstd, w, M, N, dx, dw, NULL, 1, nthreads);
    else
#endif
    rc = nm_gen_layer_norm_bwd(dtype, dy, x, mean, rstd, w, M, N, dx, dw, NULL, 1, nthreads);
    free(mean);
    return rc;
}
