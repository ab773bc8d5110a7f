/* Multi-tensor optimizer steps: the generic, AVX2 and AVX-512 copies of foreach_impl.h
   and the run-time choice between them.  Every copy does the same IEEE operations (the build
   does not contract a * b + c into FMA), so the choice never changes a result. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include "ember_foreach.h"

#define FSFX(name) fe_gen_##name
#include "foreach_impl.h"
#undef FSFX

#if defined(__x86_64__) || defined(__i386__)
#define EM_FE_AVX2 1
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#define FSFX(name) fe_avx2_##name
#include "foreach_impl.h"
#undef FSFX
#pragma GCC pop_options
/* AVX-512: twice the lanes for Adam's square root and division, which bound it */
#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx512dq,avx512bw,avx2,fma")
#define FSFX(name) fe_avx512_##name
#include "foreach_impl.h"
#undef FSFX
#pragma GCC pop_options
#else
#define EM_FE_AVX2 0
#endif

/* 0 generic, 1 AVX2, 2 AVX-512 */
static int fe_isa(void) {
    static int v = -1;
    if (v < 0) v = EM_FE_AVX2 ? (ember_cpu_isa() >= 2 ? 2 : ember_cpu_isa() >= 1) : 0;
    return v;
}

int em_sgd_multi(int dtype, int64_t count, char *const *params, char *const *grads,
                 char *const *bufs, const uint8_t *init, const int64_t *numel,
                 const em_sgd_args *a, int nthreads) {
#if EM_FE_AVX2
    if (fe_isa() == 2)
        return fe_avx512_sgd(dtype, count, params, grads, bufs, init, numel, a, nthreads);
    if (fe_isa() == 1)
        return fe_avx2_sgd(dtype, count, params, grads, bufs, init, numel, a, nthreads);
#endif
    return fe_gen_sgd(dtype, count, params, grads, bufs, init, numel, a, nthreads);
}

int em_adam_multi(int dtype, int64_t count, char *const *params, char *const *grads,
                  char *const *exp_avgs, char *const *exp_avg_sqs, char *const *max_sqs,
                  const double *steps, const int64_t *numel, const em_adam_args *a,
                  int nthreads) {
#if EM_FE_AVX2
    if (fe_isa() == 2)
        return fe_avx512_adam(dtype, count, params, grads, exp_avgs, exp_avg_sqs, max_sqs,
                              steps, numel, a, nthreads);
    if (fe_isa() == 1)
        return fe_avx2_adam(dtype, count, params, grads, exp_avgs, exp_avg_sqs, max_sqs, steps,
                            numel, a, nthreads);
#endif
    return fe_gen_adam(dtype, count, params, grads, exp_avgs, exp_avg_sqs, max_sqs, steps,
                       numel, a, nthreads);
}

int em_scale_multi(int dtype, int64_t count, char *const *xs, const int64_t *numel, double c,
                   int nthreads) {
#if EM_FE_AVX2
    if (fe_isa() == 2) return fe_avx512_scale(dtype, count, xs, numel, c, nthreads);
    if (fe_isa() == 1) return fe_avx2_scale(dtype, count, xs, numel, c, nthreads);
#endif
    return fe_gen_scale(dtype, count, xs, numel, c, nthreads);
}
