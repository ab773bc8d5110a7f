/* Fused scaled-dot-product attention over contiguous [BH, L, D] queries,
   [BH, S, D] keys and [BH, S, Dv] values: ember's C ABI for ember._C.reduce.
   Each query row is one online pass over its keys (scores of one row at a
   time, never an L x S matrix); the causal mask (key j <= query i) skips the
   masked keys.  One thread owns each batch-head, so results are bit-identical
   whatever the thread count. */
#ifndef EMBER_ATTENTION_H
#define EMBER_ATTENTION_H
#include <stdint.h>

/* out [BH, L, Dv]; lse [BH, L] gets each row's log-sum-exp of its scaled
   scores (for the backward).  dtype EM_F32/EM_F64; -1 otherwise, -2 no memory. */
int em_sdpa_fwd(int dtype, const char *q, const char *k, const char *v, int64_t BH, int64_t L,
                int64_t S, int64_t D, int64_t Dv, double scale, int causal, char *out, char *lse,
                int nthreads);
/* dq, dk, dv (the inputs' layouts) from the incoming gradient, the forward's out and lse */
int em_sdpa_bwd(int dtype, const char *dout, const char *q, const char *k, const char *v,
                const char *out, const char *lse, int64_t BH, int64_t L, int64_t S, int64_t D,
                int64_t Dv, double scale, int causal, char *dq, char *dk, char *dv,
                int nthreads);
#endif
