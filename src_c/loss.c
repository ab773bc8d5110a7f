/* Loss kernels (fused cross-entropy and nll_loss): the generic, AVX2+FMA and AVX-512
   copies of loss_impl.h and the run-time choice between them. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include "ember.h"
#include "ember_math.h"
#include "ember_loss.h"

#define LSFX(name) ls_gen_##name
#include "loss_impl.h"
#undef LSFX
#undef DEF_CROSS_ENTROPY
#undef DEF_CE_PROB
#undef DEF_CE_SPATIAL
#undef DEF_NLL
#undef LS_ACC
#undef LS_SB
#undef LS_F32
#undef LS_F64
#undef LS_CF32
#undef LS_CF64

#if defined(__x86_64__) || defined(__i386__)
#define EM_HAVE_AVX2 1
/* fp-contract: the exp polynomial's multiply-adds (ember_math.h, included once for
   every copy) become FMAs where the target has them */
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#pragma GCC optimize("fp-contract=fast")
#define LSFX(name) ls_avx2_##name
#include "loss_impl.h"
#undef LSFX
#pragma GCC pop_options
#undef DEF_CROSS_ENTROPY
#undef DEF_CE_PROB
#undef DEF_CE_SPATIAL
#undef DEF_NLL
#undef LS_ACC
#undef LS_SB
#undef LS_F32
#undef LS_F64
#undef LS_CF32
#undef LS_CF64
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,prefer-vector-width=512")
#pragma GCC optimize("fp-contract=fast")
#define LSFX(name) ls_avx512_##name
#include "loss_impl.h"
#undef LSFX
#pragma GCC pop_options
#else
#define EM_HAVE_AVX2 0
#endif

/* the widest copy the CPU runs: 0 generic, 1 AVX2+FMA, 2 AVX-512 */
static int ls_isa(void) {
    static int v = -1;
    if (v < 0) v = EM_HAVE_AVX2 ? ember_cpu_isa() : 0;
    return v;
}

#if EM_HAVE_AVX2
#define LS_PICK(name, ARGS)                                                              \
    return ls_isa() >= 2 ? ls_avx512_##name ARGS                                         \
           : ls_isa() == 1 ? ls_avx2_##name ARGS : ls_gen_##name ARGS
#else
#define LS_PICK(name, ARGS) return ls_gen_##name ARGS
#endif

int em_cross_entropy_fwd(int dtype, const char *x, const int64_t *t, const char *w, int64_t N,
                         int64_t C, int64_t P, int64_t ignore_index, double eps, char *loss,
                         char *lse, double *red, int nthreads) {
    LS_PICK(cross_entropy_fwd,
            (dtype, x, t, w, N, C, P, ignore_index, eps, loss, lse, red, nthreads));
}

int em_cross_entropy_bwd(int dtype, const char *x, const int64_t *t, const char *w,
                         const char *lse, int64_t N, int64_t C, int64_t P, int64_t ignore_index,
                         double eps, const char *g, int64_t gstride, double gscale, char *dx,
                         int nthreads) {
    LS_PICK(cross_entropy_bwd, (dtype, x, t, w, lse, N, C, P, ignore_index, eps, g, gstride,
                                gscale, dx, nthreads));
}

int em_cross_entropy_prob_fwd(int dtype, const char *x, const char *p, const char *w, int64_t N,
                              int64_t C, int64_t P, double eps, char *loss, char *lse,
                              double *red, int nthreads) {
    LS_PICK(cross_entropy_prob_fwd, (dtype, x, p, w, N, C, P, eps, loss, lse, red, nthreads));
}

int em_cross_entropy_prob_bwd(int dtype, const char *x, const char *p, const char *w,
                              const char *lse, int64_t N, int64_t C, int64_t P, double eps,
                              const char *g, int64_t gstride, double gscale, char *dx,
                              int nthreads) {
    LS_PICK(cross_entropy_prob_bwd,
            (dtype, x, p, w, lse, N, C, P, eps, g, gstride, gscale, dx, nthreads));
}

int em_nll_loss_fwd(int dtype, const char *x, const int64_t *t, const char *w, int64_t N,
                    int64_t C, int64_t P, int64_t ignore_index, char *loss, double *red,
                    int nthreads) {
    LS_PICK(nll_loss_fwd, (dtype, x, t, w, N, C, P, ignore_index, loss, red, nthreads));
}

int em_nll_loss_bwd(int dtype, const int64_t *t, const char *w, int64_t N, int64_t C, int64_t P,
                    int64_t ignore_index, const char *g, int64_t gstride, double gscale,
                    char *dx, int nthreads) {
    LS_PICK(nll_loss_bwd, (dtype, t, w, N, C, P, ignore_index, g, gstride, gscale, dx,
                           nthreads));
}
