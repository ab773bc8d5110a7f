/* batch_norm and group_norm (ember_chnorm.h): the generic and AVX2+FMA copies of
   chnorm_impl.h for float and double, and the run-time choice between them. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ember.h"
#include "ember_chnorm.h"

#define CN_VBYTES 16
#define T float
#define CN(name) cn_gen_f32_##name
#include "chnorm_impl.h"
#undef CN
#undef T
#define T double
#define CN(name) cn_gen_f64_##name
#include "chnorm_impl.h"
#undef CN
#undef T

#if defined(__x86_64__) || defined(__i386__)
#define CN_HAVE_AVX2 1
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#undef CN_VBYTES
#define CN_VBYTES 32
#define T float
#define CN(name) cn_avx2_f32_##name
#include "chnorm_impl.h"
#undef CN
#undef T
#define T double
#define CN(name) cn_avx2_f64_##name
#include "chnorm_impl.h"
#undef CN
#undef T
#pragma GCC pop_options
#else
#define CN_HAVE_AVX2 0
#endif

static int cn_avx2(void) {
    static int v = -1;
    if (v < 0) v = CN_HAVE_AVX2 && ember_cpu_isa() >= 1;
    return v;
}

/* call copy `name` for the dtype and the ISA: float and double cast their args */
#if CN_HAVE_AVX2
#define CN_CALL(name, F32ARGS, F64ARGS)                                          \
    do {                                                                         \
        if (dtype == EM_F32) {                                                   \
            if (cn_avx2()) cn_avx2_f32_##name F32ARGS; else cn_gen_f32_##name F32ARGS; \
        } else if (dtype == EM_F64) {                                            \
            if (cn_avx2()) cn_avx2_f64_##name F64ARGS; else cn_gen_f64_##name F64ARGS; \
        } else return -1;                                                        \
    } while (0)
/* the same for the copies that return a status, into rc */
#define CN_CALL_RC(rc, name, F32ARGS, F64ARGS)                                   \
    do {                                                                         \
        if (dtype == EM_F32)                                                     \
            rc = cn_avx2() ? cn_avx2_f32_##name F32ARGS : cn_gen_f32_##name F32ARGS; \
        else if (dtype == EM_F64)                                                \
            rc = cn_avx2() ? cn_avx2_f64_##name F64ARGS : cn_gen_f64_##name F64ARGS; \
        else rc = -1;                                                            \
    } while (0)
#else
#define CN_CALL(name, F32ARGS, F64ARGS)                                          \
    do {                                                                         \
        if (dtype == EM_F32) cn_gen_f32_##name F32ARGS;                          \
        else if (dtype == EM_F64) cn_gen_f64_##name F64ARGS;                     \
        else return -1;                                                          \
    } while (0)
#define CN_CALL_RC(rc, name, F32ARGS, F64ARGS)                                   \
    do {                                                                         \
        if (dtype == EM_F32) rc = cn_gen_f32_##name F32ARGS;                     \
        else if (dtype == EM_F64) rc = cn_gen_f64_##name F64ARGS;                \
        else rc = -1;                                                            \
    } while (0)
#endif

#define F32(p) ((float *)(p))
#define F64(p) ((double *)(p))
#define CF32(p) ((const float *)(p))
#define CF64(p) ((const double *)(p))

int em_batch_norm_fwd(int dtype, const char *x, const char *w, const char *b, int64_t N,
                      int64_t C, int64_t HW, int training, double eps, double momentum,
                      char *running_mean, char *running_var, char *y, char *save_mean,
                      char *save_invstd, int nthreads) {
    if (!training && (!running_mean || !running_var)) return -1;
    CN_CALL(bn_fwd,
            (CF32(x), CF32(w), CF32(b), N, C, HW, training, eps, momentum, F32(running_mean),
             F32(running_var), F32(y), F32(save_mean), F32(save_invstd), nthreads),
            (CF64(x), CF64(w), CF64(b), N, C, HW, training, eps, momentum, F64(running_mean),
             F64(running_var), F64(y), F64(save_mean), F64(save_invstd), nthreads));
    return 0;
}

int em_batch_norm_bwd(int dtype, const char *dy, const char *x, const char *save_mean,
                      const char *save_invstd, const char *w, int64_t N, int64_t C, int64_t HW,
                      int training, char *dx, char *dw, char *db, int nthreads) {
    CN_CALL(bn_bwd,
            (CF32(dy), CF32(x), CF32(save_mean), CF32(save_invstd), CF32(w), N, C, HW, training,
             F32(dx), F32(dw), F32(db), nthreads),
            (CF64(dy), CF64(x), CF64(save_mean), CF64(save_invstd), CF64(w), N, C, HW, training,
             F64(dx), F64(dw), F64(db), nthreads));
    return 0;
}

int em_batch_norm_fwd_cl(int dtype, const char *x, const char *w, const char *b, int64_t M,
                         int64_t C, int training, double eps, double momentum,
                         char *running_mean, char *running_var, char *y, char *save_mean,
                         char *save_invstd, int nthreads) {
    int rc;
    if (!training && (!running_mean || !running_var)) return -1;
    CN_CALL_RC(rc, bn_fwd_cl,
               (CF32(x), CF32(w), CF32(b), M, C, training, eps, momentum, F32(running_mean),
                F32(running_var), F32(y), F32(save_mean), F32(save_invstd), nthreads),
               (CF64(x), CF64(w), CF64(b), M, C, training, eps, momentum, F64(running_mean),
                F64(running_var), F64(y), F64(save_mean), F64(save_invstd), nthreads));
    return rc;
}

int em_batch_norm_bwd_cl(int dtype, const char *dy, const char *x, const char *save_mean,
                         const char *save_invstd, const char *w, int64_t M, int64_t C,
                         int training, char *dx, char *dw, char *db, int nthreads) {
    int rc;
    CN_CALL_RC(rc, bn_bwd_cl,
               (CF32(dy), CF32(x), CF32(save_mean), CF32(save_invstd), CF32(w), M, C, training,
                F32(dx), F32(dw), F32(db), nthreads),
               (CF64(dy), CF64(x), CF64(save_mean), CF64(save_invstd), CF64(w), M, C, training,
                F64(dx), F64(dw), F64(db), nthreads));
    return rc;
}

int em_group_norm_fwd(int dtype, const char *x, const char *w, const char *b, int64_t N,
                      int64_t C, int64_t HW, int64_t G, double eps, char *y, char *mean,
                      char *rstd, int nthreads) {
    if (G < 1 || C % G) return -1;
    CN_CALL(gn_fwd,
            (CF32(x), CF32(w), CF32(b), N, C, HW, G, eps, F32(y), F32(mean), F32(rstd), nthreads),
            (CF64(x), CF64(w), CF64(b), N, C, HW, G, eps, F64(y), F64(mean), F64(rstd), nthreads));
    return 0;
}

int em_group_norm_bwd(int dtype, const char *dy, const char *x, const char *mean,
                      const char *rstd, const char *w, int64_t N, int64_t C, int64_t HW,
                      int64_t G, char *dx, char *dw, char *db, int nthreads) {
    if (G < 1 || C % G || (dtype != EM_F32 && dtype != EM_F64)) return -1;
    double *part = (double *)malloc((size_t)(2 * N * C + 1) * sizeof(double));
    if (!part) return -2;
    double *sdy = part, *sdx = part + N * C;
    do {
        CN_CALL(gn_bwd,
                (CF32(dy), CF32(x), CF32(mean), CF32(rstd), CF32(w), N, C, HW, G, F32(dx),
                 F32(dw), F32(db), sdy, sdx, nthreads),
                (CF64(dy), CF64(x), CF64(mean), CF64(rstd), CF64(w), N, C, HW, G, F64(dx),
                 F64(dw), F64(db), sdy, sdx, nthreads));
    } while (0);
    free(part);
    return 0;
}
