/* Fused attention: the generic, AVX2+FMA and AVX-512 copies of attention_impl.h
   (the softmax loops; the block products go through ember's GEMM, which picks
   its own micro-kernel) and the run-time choice between them. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ember.h"
#include "ember_attention.h"
#include "ember_gemm.h"
#include "ember_math.h"

#define ASFX(name) at_gen_##name
#include "attention_impl.h"
#undef ASFX

#if defined(__x86_64__) || defined(__i386__)
#define EM_HAVE_AVX2 1
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#define ASFX(name) at_avx2_##name
#include "attention_impl.h"
#undef ASFX
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,prefer-vector-width=512")
#define ASFX(name) at_avx512_##name
#include "attention_impl.h"
#undef ASFX
#pragma GCC pop_options
#else
#define EM_HAVE_AVX2 0
#endif

/* 0 generic, 1 AVX2+FMA, 2 AVX-512 */
static int isa(void) {
    static int v = -1;
    if (v < 0) v = EM_HAVE_AVX2 ? (ember_cpu_isa() >= 2 ? 2 : ember_cpu_isa() >= 1) : 0;
    return v;
}

int em_sdpa_fwd(int dtype, const char *q, const char *k, const char *v, const char *mask,
                const int64_t *moff, int64_t mrs, int64_t mcs, int64_t BH, int64_t L,
                int64_t S, int64_t D, int64_t Dv, double scale, int causal, char *out, char *lse,
                int nthreads) {
#define FWD_ARGS dtype, q, k, v, mask, moff, mrs, mcs, BH, L, S, D, Dv, scale, causal, out, \
                 lse, nthreads
#if EM_HAVE_AVX2
    if (isa() == 2) return at_avx512_sdpa_fwd(FWD_ARGS);
    if (isa() == 1) return at_avx2_sdpa_fwd(FWD_ARGS);
#endif
    return at_gen_sdpa_fwd(FWD_ARGS);
#undef FWD_ARGS
}

int em_sdpa_bwd(int dtype, const char *dout, const char *q, const char *k, const char *v,
                const char *out, const char *lse, const char *mask, const int64_t *moff,
                int64_t mrs, int64_t mcs, int64_t BH, int64_t L, int64_t S, int64_t D,
                int64_t Dv, double scale, int causal, char *dq, char *dk, char *dv,
                int nthreads) {
#define BWD_ARGS dtype, dout, q, k, v, out, lse, mask, moff, mrs, mcs, BH, L, S, D, Dv, scale, \
                 causal, dq, dk, dv, nthreads
#if EM_HAVE_AVX2
    if (isa() == 2) return at_avx512_sdpa_bwd(BWD_ARGS);
    if (isa() == 1) return at_avx2_sdpa_bwd(BWD_ARGS);
#endif
    return at_gen_sdpa_bwd(BWD_ARGS);
#undef BWD_ARGS
}
