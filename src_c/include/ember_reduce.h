/* Reductions, scans, softmax and sorting: ember's C ABI for ember._C.reduce.

   Every kernel works on a contiguous input laid out as [O, K, I]: O outer
   rows, K the reduced (or scanned / softmaxed) extent, I the inner extent.
   I == 1 is the row case (reduce a contiguous run, vectorised over it);
   I > 1 the column case (accumulate rows of I contiguous elements).
   Results are bit-identical whatever `nthreads` is: work is split in fixed
   blocks, and block partials are combined in a fixed (pairwise) order. */
#ifndef EMBER_REDUCE_H
#define EMBER_REDUCE_H
#include "ember.h"

enum { /* reductions: output type is the accumulator type (see em_reduce) */
    RD_SUM, RD_PROD, RD_MAX, RD_MIN, RD_NANSUM,
    RD_ASUM,   /* sum |x|                  */
    RD_SSQ,    /* sum (x - c)^2, c = center */
    RD_PSUM,   /* sum |x|^p                */
    RD_AMAX,   /* max |x|                  */
    RD_AMIN,   /* min |x|                  */
    RD_NZ,     /* count of x != 0          */
    RD_NNAN,   /* count of x == x          */
    RD_SUMEXP, /* sum exp(x - c)           */
    RD_NOPS
};
enum { /* post-processing of a reduction's output */
    RP_NONE, RP_DIV, RP_SQRT, RP_ROOT, RP_DIVSQRT, RP_LOGADD, RP_FINITE0, RP_NPOST
};
enum { SC_SUM, SC_PROD, SC_MAX, SC_MIN, SC_LOGSUMEXP, SC_NOPS };

/* dtype: EM_F32 (float accumulators, blocked), EM_F64, EM_I64, or EM_BOOL
   (RD_SUM only: uint8 input counted into int64).  center: per-output values
   in the output layout [O, I] (dtype of the input), or NULL for 0.  Returns 0,
   or -1 when (op, dtype) has no kernel. */
int em_reduce(int op, int dtype, const char *x, int64_t O, int64_t K, int64_t I, char *out,
              const void *center, double p, int nthreads);
/* out[i] for i < n (dtype EM_F32/EM_F64): RP_DIV out/a, RP_SQRT, RP_ROOT out^(1/a),
   RP_DIVSQRT sqrt(out/a), RP_LOGADD log(out) + center[i], RP_FINITE0 (inf -> 0). */
void em_reduce_post(int mode, int dtype, char *out, int64_t n, double a, const void *center);
/* values (may be NULL) and int64 indices of the max (op RD_MAX) or min (RD_MIN)
   over K; NaN wins, ties keep the first index.  dtype EM_F32, EM_F64, EM_I64. */
int em_argreduce(int op, int dtype, const char *x, int64_t O, int64_t K, int64_t I, char *vals,
                 int64_t *idx, int nthreads);
/* inclusive scan over K; out has the input's layout.  SC_MAX/SC_MIN also write
   indices (the last position of the running extreme, NaN propagating). */
int em_scan(int op, int dtype, const char *x, int64_t O, int64_t K, int64_t I, char *out,
            int64_t *idx, int nthreads);
/* softmax / log_softmax over K, fused (max, exp-sum, normalise), EM_F32/EM_F64. */
int em_softmax(int log, int dtype, const char *x, int64_t O, int64_t K, int64_t I, char *out,
               int nthreads);
/* stable sort of each row of a contiguous [rows, n] input; NaN sorts as the
   largest value.  dtype EM_F32, EM_F64, EM_I64. */
int em_sort(int dtype, const char *x, int64_t rows, int64_t n, char *vals, int64_t *idx,
            int descending, int nthreads);
#endif
