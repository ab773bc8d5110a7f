/* Fused scaled-dot-product attention over contiguous [BH, L, D] queries,
   [BH, S, D] keys and [BH, S, Dv] values: ember's C ABI for ember._C.reduce.
   Flash-attention style: blocks of queries against blocks of keys with an
   online softmax (never an L x S matrix); the causal mask (key j <= query i)
   skips the masked blocks.  The split of the work depends on the shapes only,
   so results are bit-identical whatever the thread count (see
   attention_impl.h). */
#ifndef EMBER_ATTENTION_H
#define EMBER_ATTENTION_H
#include <stdint.h>

/* out [BH, L, Dv]; lse [BH, L] gets each row's log-sum-exp of its scaled
   scores (for the backward).  mask (NULL: none) is an additive mask of q's dtype
   added to the scaled scores: batch-head b's element (i, j) is at
   mask[moff[b] + i * mrs + j * mcs] (element offsets and strides, 0 to
   broadcast).  A row whose scores are all -inf gets output 0 and lse -inf.
   dtype EM_F32/EM_F64; -1 otherwise, -2 no memory. */
int em_sdpa_fwd(int dtype, const char *q, const char *k, const char *v, const char *mask,
                const int64_t *moff, int64_t mrs, int64_t mcs, int64_t BH, int64_t L,
                int64_t S, int64_t D, int64_t Dv, double scale, int causal, char *out, char *lse,
                int nthreads);
/* dq, dk, dv (the inputs' layouts) from the incoming gradient, the forward's out and
   lse, and the forward's mask */
int em_sdpa_bwd(int dtype, const char *dout, const char *q, const char *k, const char *v,
                const char *out, const char *lse, const char *mask, const int64_t *moff,
                int64_t mrs, int64_t mcs, int64_t BH, int64_t L, int64_t S, int64_t D,
                int64_t Dv, double scale, int causal, char *dq, char *dk, char *dv,
                int nthreads);
#endif
