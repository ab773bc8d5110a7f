/* Fused cross-entropy and nll_loss with int64 class-index targets (and
   cross-entropy with class probabilities): ember's C ABI for ember._C.reduce.
   The inputs are [N, C, P] contiguous: N samples, C classes, P positions per
   sample (the spatial dims of an (N, C, d1, ...) input; P = 1 for (N, C)), and
   each of the N * P positions is one "row" below.  Each row is handled by one
   thread in a fixed order and the reductions over rows run in row order, so
   results are bit-identical whatever the thread count. */
#ifndef EMBER_LOSS_H
#define EMBER_LOSS_H
#include <stdint.h>

/* Per-row loss (1-eps) * w[t] * (lse - x[t]) + eps/C * (W * lse - sum_c w[c] x[c])
   (W = sum_c w[c]; w NULL means all ones; 0 for rows whose target is
   ignore_index) into loss[N*P], each row's log-sum-exp into lse[N*P], and in
   red[0], red[1] the row-order sums of the losses and of w[t] over the kept rows.
   Targets must already be checked to lie in [0, C) or equal ignore_index.
   dtype EM_F32/EM_F64; -1 otherwise. */
int em_cross_entropy_fwd(int dtype, const char *x, const int64_t *t, const char *w, int64_t N,
                         int64_t C, int64_t P, int64_t ignore_index, double eps, char *loss,
                         char *lse, double *red, int nthreads);
/* dx = g_i * ((1-eps) w[t] (softmax - onehot(t)) + eps/C (W softmax - w)) with
   g_i = g[i * gstride] * gscale (gstride 0: one scalar gradient); ignored rows 0. */
int em_cross_entropy_bwd(int dtype, const char *x, const int64_t *t, const char *w,
                         const char *lse, int64_t N, int64_t C, int64_t P, int64_t ignore_index,
                         double eps, const char *g, int64_t gstride, double gscale, char *dx,
                         int nthreads);
/* Probability targets p[N, C, P] (same dtype as x): per-row loss
   sum_c w[c] q[c] (lse - x[c]) with q = (1-eps) p + eps/C into loss[N*P], lse into
   lse[N*P], red[0] = row-order sum of the losses, red[1] = N * P. */
int em_cross_entropy_prob_fwd(int dtype, const char *x, const char *p, const char *w, int64_t N,
                              int64_t C, int64_t P, double eps, char *loss, char *lse,
                              double *red, int nthreads);
/* dx = g_i (softmax sum_c w[c] q[c] - w q), g_i = g[i * gstride] * gscale. */
int em_cross_entropy_prob_bwd(int dtype, const char *x, const char *p, const char *w,
                              const char *lse, int64_t N, int64_t C, int64_t P, double eps,
                              const char *g, int64_t gstride, double gscale, char *dx,
                              int nthreads);
/* nll_loss of log-probabilities: per-row loss -w[t] x[t] (0 for ignored rows)
   into loss[N*P]; red as em_cross_entropy_fwd's. */
int em_nll_loss_fwd(int dtype, const char *x, const int64_t *t, const char *w, int64_t N,
                    int64_t C, int64_t P, int64_t ignore_index, char *loss, double *red,
                    int nthreads);
/* dx = -g_i w[t] at each kept row's target, 0 elsewhere. */
int em_nll_loss_bwd(int dtype, const int64_t *t, const char *w, int64_t N, int64_t C, int64_t P,
                    int64_t ignore_index, const char *g, int64_t gstride, double gscale,
                    char *dx, int nthreads);
#endif
