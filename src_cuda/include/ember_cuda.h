/* ember's CUDA kernels: the plain C ABI of libember_cuda.so.

   Mirrors src_c/include: dtype codes (EM_F32, ...) and op codes (EW_ADD,
   RD_SUM, EM_RD_NORMAL, ...) are the CPU's.  Every entry point returns 0 or an
   error code (a cudaError_t value, or one of EMC_E_* below); emc_error_string()
   names it and emc_last_error() gives the message of the last failure on the
   calling thread.  Pointers named like data are device pointers; `stream` is a
   cudaStream_t (NULL: the legacy default stream).  Nothing here knows about
   Python or C++. */
#ifndef EMBER_CUDA_H
#define EMBER_CUDA_H
#include <stddef.h>
#include <stdint.h>
#include "ember.h"
#include "ember_conv.h"

#ifdef __cplusplus
#define EMC_API extern "C" __attribute__((visibility("default")))
#else
#define EMC_API __attribute__((visibility("default")))
#endif

/* errors of our own, above every cudaError_t value */
enum {
    EMC_OK = 0,
    EMC_E_DTYPE = 10001,    /* (op, dtype) has no kernel */
    EMC_E_OP = 10002,       /* unknown op code */
    EMC_E_ARG = 10003,      /* bad size, rank or argument */
    EMC_E_INDEX = 10004,    /* an index out of range (index kernels) */
    EMC_E_NOMEM = 10005     /* host allocation failed */
};

#define EMC_MAX_DIMS 16
#define EMC_MAX_ARGS 4

/* The iteration space of an elementwise kernel: `ndim` dims (innermost last),
   and per operand (0 = output, then the inputs) its strides in ELEMENTS.  A
   broadcast operand has stride 0 along the broadcast dims.  Callers coalesce
   dims first; ndim == 0 is a single element. */
typedef struct {
    int32_t ndim;
    int32_t nargs;
    int64_t shape[EMC_MAX_DIMS];
    int64_t strides[EMC_MAX_ARGS][EMC_MAX_DIMS];
} emc_nd;

/* --- library ---------------------------------------------------------------- */
EMC_API int emc_abi_version(void);
/* CUDA_VERSION the library was compiled with (e.g. 13000) */
EMC_API int emc_built_cuda_version(void);
EMC_API const char *emc_error_string(int code);
EMC_API const char *emc_last_error(void);

/* --- caching allocator (alloc.cu over pool.c) ------------------------------- */
EMC_API int emc_malloc(void **ptr, size_t nbytes, void *stream);
EMC_API int emc_free(void *ptr);
/* stats[8]: allocated, max allocated, reserved, max reserved, segments, blocks,
   alloc calls, cache hits (bytes or counts) */
EMC_API void emc_memory_stats(int64_t stats[8]);
EMC_API void emc_reset_peak_memory_stats(void);
EMC_API int emc_empty_cache(void);

/* --- copies, casts, fills (copy.cu) ----------------------------------------- */
/* out (dst dtype, strides[0]) = (dst dtype) in (src dtype, strides[1]); C conversion
   semantics as em_cast_loop (float -> int truncates, -> bool is != 0). */
EMC_API int emc_copy(int dst_dtype, void *dst, int src_dtype, const void *src, const emc_nd *nd,
                     void *stream);
/* fill (strides[0]) with the value at `value` (host memory, dst dtype) */
EMC_API int emc_fill(int dtype, void *dst, const emc_nd *nd, const void *value, void *stream);
/* cat of `n` contiguous inputs along a dim: input i is [outer, sizes[i] * inner],
   out is [outer, sum(sizes) * inner]; srcs is a host array of device pointers. */
EMC_API int emc_cat(int dtype, void *out, int n, const void *const *srcs, const int64_t *sizes,
                    int64_t outer, int64_t inner, void *stream);

/* stack of `n` contiguous inputs of [outer, inner] into out [outer, n, inner]
   (cat with every size 1) */
EMC_API int emc_stack(int dtype, void *out, int n, const void *const *srcs, int64_t outer,
                      int64_t inner, void *stream);

/* --- elementwise (elementwise.cu); op codes of ember_ew.h ------------------- */
/* out = op(a, b): EW_* binary (out dtype == dtype) */
EMC_API int emc_ew_binary(int op, int dtype, void *out, const void *a, const void *b,
                          const emc_nd *nd, const double *aux, void *stream);
/* bool out = op(a, b): EW_EQ ... EW_LXOR */
EMC_API int emc_ew_compare(int op, int dtype, void *out, const void *a, const void *b,
                           const emc_nd *nd, void *stream);
/* out = op(x): EW_* unary; aux = the op's parameters (softplus, elu, leaky_relu,
   clamp: {lo, hi, flags}) as doubles */
EMC_API int emc_ew_unary(int op, int dtype, void *out, const void *x, const emc_nd *nd,
                         const double *aux, void *stream);
/* bool out = pred(x): EW_ISNAN ... EW_SIGNBIT */
EMC_API int emc_ew_predicate(int op, int dtype, void *out, const void *x, const emc_nd *nd,
                             void *stream);
/* out = cond ? a : b (4 operands: out, cond (bool), a, b) */
EMC_API int emc_ew_where(int dtype, void *out, const void *cond, const void *a, const void *b,
                         const emc_nd *nd, void *stream);

/* the kernels' element functions on the host (contiguous host arrays, not
   float16/bfloat16): family 0 unary, 1 binary, 2 compare, 3 predicate.  For
   the CPU tests of the op table. */
EMC_API int emc_ew_host(int family, int op, int dtype, void *out, const void *a, const void *b,
                        int64_t n, const double *aux);

/* --- reductions (reduce.cu): contiguous [O, K, I] reduced over K ------------- */
/* op RD_SUM, RD_PROD, RD_MAX, RD_MIN, RD_ASUM, RD_SSQ (about the mean: variance
   numerator, see emc_var), RD_AMAX; out [O, I] of dtype (float accumulators for
   f16/bf16, written back in dtype).  mean = RD_SUM then scale 1/K: `scale` is
   applied to every output (1.0 for none). */
EMC_API int emc_reduce(int op, int dtype, const void *x, int64_t O, int64_t K, int64_t I,
                       void *out, double scale, void *stream);
/* variance over K with `correction` (Bessel), Welford per thread and Chan's
   combination in a fixed order; mean may be NULL. */
EMC_API int emc_var(int dtype, const void *x, int64_t O, int64_t K, int64_t I, double correction,
                    void *var, void *mean, void *stream);
/* standard deviation: sqrt of emc_var's variance (same blocking) */
EMC_API int emc_std(int dtype, const void *x, int64_t O, int64_t K, int64_t I, double correction,
                    void *std, void *mean, void *stream);
/* vector p-norm over K (float dtypes): ord = INFINITY (max |x|), -INFINITY (min |x|;
   both need K > 0), 0 (count of nonzeros), 1, 2 (sqrt of the sum of squares) or
   any other p ((sum |x|^p)^(1/p)); the fixed blocking of emc_reduce. */
EMC_API int emc_norm(int dtype, const void *x, int64_t O, int64_t K, int64_t I, double ord,
                     void *out, void *stream);
/* values (may be NULL) and int64 indices of the max (RD_MAX) / min (RD_MIN) over
   K; NaN wins, ties keep the first index. */
EMC_API int emc_argreduce(int op, int dtype, const void *x, int64_t O, int64_t K, int64_t I,
                          void *vals, int64_t *idx, void *stream);

/* --- softmax, cross-entropy, layer_norm (norm.cu) --------------------------- */
EMC_API int emc_softmax(int log, int dtype, const void *x, int64_t O, int64_t K, int64_t I,
                        void *out, void *stream);
/* gin = softmax' (log = 0: y * (g - sum(g y))) or log_softmax' (g - exp(y) sum(g)),
   y the forward output */
EMC_API int emc_softmax_bwd(int log, int dtype, const void *g, const void *y, int64_t O,
                            int64_t K, int64_t I, void *gin, void *stream);
/* per-row loss[r] = -log_softmax(x[r])[t[r]] (0 where t[r] == ignore_index);
   x [R, C] contiguous, t int64 [R]; lse (float [R], may be NULL) keeps
   logsumexp for the backward.  Bad targets raise EMC_E_INDEX at the next
   emc_check_index_error. */
EMC_API int emc_cross_entropy_fwd(int dtype, const void *x, const int64_t *t, int64_t R,
                                  int64_t C, int64_t ignore_index, double label_smoothing,
                                  void *loss, float *lse, void *stream);
/* gx[r] = gloss[r] * (softmax(x[r]) - target distribution) */
EMC_API int emc_cross_entropy_bwd(int dtype, const void *x, const int64_t *t, const float *lse,
                                  const void *gloss, int64_t R, int64_t C, int64_t ignore_index,
                                  double label_smoothing, void *gx, void *stream);
/* layer_norm over the last N elements of M contiguous rows (src_c/norm.c):
   y = (x - mean) * rstd * w + b (w, b may be NULL); mean and rstd [M] are
   float (double for EM_F64).  The backward gives dx per row and dw, db (may be
   NULL) summed over fixed chunks of rows, then over the chunks in order. */
EMC_API int emc_layer_norm_fwd(int dtype, const void *x, const void *w, const void *b, int64_t M,
                               int64_t N, double eps, void *y, void *mean, void *rstd,
                               void *stream);
EMC_API int emc_layer_norm_bwd(int dtype, const void *dy, const void *x, const void *mean,
                               const void *rstd, const void *w, int64_t M, int64_t N, void *dx,
                               void *dw, void *db, void *stream);

/* batch_norm of x [N, C, HW] contiguous per channel (w, b, running_* [C] of
   dtype, may be NULL).  training: batch statistics (biased variance for the
   normalisation), save_mean / save_invstd [C] (float; double for EM_F64; may be
   NULL) and, when given, running = (1 - momentum) running + momentum * batch
   (unbiased variance).  eval: the running statistics normalise. */
EMC_API int emc_batch_norm_fwd(int dtype, const void *x, const void *w, const void *b,
                               void *running_mean, void *running_var, int64_t N, int64_t C,
                               int64_t HW, int training, double momentum, double eps, void *y,
                               void *save_mean, void *save_invstd, void *stream);
/* gradients of emc_batch_norm_fwd: training reads save_mean / save_invstd, eval
   the running statistics (and eps); dx, dw, db may be NULL (not wanted). */
EMC_API int emc_batch_norm_bwd(int dtype, const void *dy, const void *x, const void *w,
                               const void *running_mean, const void *running_var,
                               const void *save_mean, const void *save_invstd, int64_t N,
                               int64_t C, int64_t HW, int training, double eps, void *dx,
                               void *dw, void *db, void *stream);

/* --- convolution and pooling (conv.cu, pool2d.cu): NCHW contiguous operands,
   the host parameter structs of src_c's ember_conv.h --------------------------- */
/* y = conv2d(x, w) + bias (bias may be NULL), as implicit GEMMs per group (no
   im2col buffer); float32 and float64 */
EMC_API int emc_conv2d_fwd(int dtype, const ember_conv2d_params *p, const void *x, const void *w,
                           const void *bias, void *y, void *stream);
/* dx (overwritten) = the gradient of conv2d with respect to its input */
EMC_API int emc_conv2d_bwd_input(int dtype, const ember_conv2d_params *p, const void *dy,
                                 const void *w, void *dx, void *stream);
/* dw (overwritten) and dbias (may be NULL): K = N*Ho*Wo is cut into fixed chunks
   whose partial products are summed in order (deterministic) */
EMC_API int emc_conv2d_bwd_weight(int dtype, const ember_conv2d_params *p, const void *x,
                                  const void *dy, void *dw, void *dbias, void *stream);
/* max pooling: idx (may be NULL for the forward) is h * W + w within the plane;
   NaN wins; the backward gathers per input element (no atomics) */
EMC_API int emc_max_pool2d_fwd(int dtype, const ember_pool2d_params *p, const void *x, void *y,
                               int64_t *idx, void *stream);
EMC_API int emc_max_pool2d_bwd(int dtype, const ember_pool2d_params *p, const void *dy,
                               const int64_t *idx, void *dx, void *stream);
/* adaptive max pooling (planes, H, W, Ho, Wo of p; the rest unused): output (oh, ow)
   takes rows [oh H / Ho, ceil((oh + 1) H / Ho)) and the columns alike; NaN wins
   (the last one), ties the first; the backward gathers as emc_max_pool2d_bwd */
EMC_API int emc_adaptive_max_pool2d_fwd(int dtype, const ember_pool2d_params *p, const void *x,
                                        void *y, int64_t *idx, void *stream);
EMC_API int emc_adaptive_max_pool2d_bwd(int dtype, const ember_pool2d_params *p,
                                        const void *dy, const int64_t *idx, void *dx,
                                        void *stream);
/* average pooling with count_include_pad / divisor as PyTorch (dilation unused) */
EMC_API int emc_avg_pool2d_fwd(int dtype, const ember_pool2d_params *p, const void *x, void *y,
                               void *stream);
EMC_API int emc_avg_pool2d_bwd(int dtype, const ember_pool2d_params *p, const void *dy, void *dx,
                               void *stream);

/* --- fused attention (attention.cu): q [BH, L, D], k [BH, S, D], v [BH, S, Dv],
   out [BH, L, Dv], lse [BH, L] contiguous, float32 / float64, D and Dv <= 256;
   softmax(q k^T scale [causal: key j <= query i]) v, dropout p (0 <= p < 1) keeping
   score (bh, i, j) when the Philox word of flat index (bh L + i) S + j at
   (seed, offset) is at least p 2^32 (native_dropout's draw); the backward
   regenerates that mask and overwrites dq, dk, dv ---------------------------- */
EMC_API int emc_sdpa_fwd(int dtype, const void *q, const void *k, const void *v, int64_t BH,
                         int64_t L, int64_t S, int64_t D, int64_t Dv, double scale, int causal,
                         double p, uint64_t seed, uint64_t offset, void *out, void *lse,
                         void *stream);
EMC_API int emc_sdpa_bwd(int dtype, const void *dout, const void *q, const void *k, const void *v,
                         const void *out, const void *lse, int64_t BH, int64_t L, int64_t S,
                         int64_t D, int64_t Dv, double scale, int causal, double p, uint64_t seed,
                         uint64_t offset, void *dq, void *dk, void *dv, void *stream);

/* --- sort (sort.cu) ------------------------------------------------------------ */
/* stable sort of each contiguous row of n (real dtypes; a radix sort): vals (may
   be NULL) and int64 idx [rows, n]; NaN is the largest value, -0 ties with +0 */
EMC_API int emc_sort(int dtype, const void *x, int64_t rows, int64_t n, int descending,
                     void *vals, int64_t *idx, void *stream);
/* the k largest (largest = 1) or smallest of each row, in sorted order, ties by
   index; vals / idx [rows, k] (either may be NULL); k <= 1024 of a row longer
   than 2048 is found by radix select, else from the sorted rows */
EMC_API int emc_topk(int dtype, const void *x, int64_t rows, int64_t n, int64_t k, int largest,
                     void *vals, int64_t *idx, void *stream);

/* --- GEMM (gemm.cu) ----------------------------------------------------------- */
/* C[b] = alpha * op(A[b]) @ op(B[b]) + beta * C[b] for b < batch, row-major with
   leading dims (elements) and batch strides (elements; 0 broadcasts).  op = A^T
   when ta.  f32 (exact SIMT, or TF32 tensor cores when allow_tf32), f64 (SIMT),
   f16/bf16 (tensor cores, fp32 accumulation). */
EMC_API int emc_gemm(int dtype, int ta, int tb, int64_t M, int64_t N, int64_t K, double alpha,
                     const void *A, int64_t lda, int64_t sA, const void *B, int64_t ldb,
                     int64_t sB, double beta, void *C, int64_t ldc, int64_t sC, int64_t batch,
                     int allow_tf32, void *stream);
/* 1 when f16/bf16 GEMMs on the current device run on the Hopper wgmma kernel:
   asked for with EMBER_CUDA_WGMMA=1, compute capability 9.0 and the library's
   sm_90a code loaded; else 0 (the mma.sync kernel) */
EMC_API int emc_gemm_wgmma(void);

/* --- random numbers (philox.cu): the CPU's streams (ember_random.h) --------- */
EMC_API int emc_rand_float(int kind, int dtype, void *out, int64_t n, uint64_t seed,
                           uint64_t offset, double a, double b, void *stream);
EMC_API int emc_rand_int(int dtype, void *out, int64_t n, uint64_t seed, uint64_t offset,
                         int64_t lo, uint64_t range, void *stream);
EMC_API int emc_rand_bernoulli(int dtype, void *out, int64_t n, uint64_t seed, uint64_t offset,
                               double p, void *stream);
EMC_API int emc_dropout(int dtype, const void *x, void *out, uint8_t *mask, int64_t n, double p,
                        uint64_t seed, uint64_t offset, void *stream);
/* randperm(n) into int64 out: the CPU's Fisher-Yates with the same words (one
   per swap), run as rounds of non-conflicting swaps (synchronises the stream) */
EMC_API int emc_randperm(int64_t *out, int64_t n, uint64_t seed, uint64_t offset, void *stream);
/* multinomial over rows of p [rows, ncat] (float dtypes): the CPU's draws (a
   sequential CDF per row with replacement, the exponential race without).
   status (device int, may be NULL) gets the CPU's code of the first bad row: 0
   fine, 1 inf/nan/negative, 2 zero sum, 3 too few nonzero for no replacement. */
EMC_API int emc_multinomial(int dtype, const void *p, int64_t rows, int64_t ncat, int64_t nsamp,
                            int replacement, int64_t *out, uint64_t seed, uint64_t offset,
                            int *status, void *stream);
/* randperm and multinomial (float64 p, status a host int) computed on the host
   by the kernels' own per-element functions: for the CPU tests */
EMC_API int emc_randperm_host(int64_t *out, int64_t n, uint64_t seed, uint64_t offset);
EMC_API int emc_multinomial_host(const double *p, int64_t rows, int64_t ncat, int64_t nsamp,
                                 int replacement, int64_t *out, uint64_t seed, uint64_t offset,
                                 int *status);
/* the same streams computed on the host by the kernels' own per-block code
   (host memory out): what the CPU tests compare with ember's CPU generator */
EMC_API int emc_rand_float_host(int kind, int dtype, void *out, int64_t n, uint64_t seed,
                                uint64_t offset, double a, double b);
EMC_API int emc_rand_int_host(int dtype, void *out, int64_t n, uint64_t seed, uint64_t offset,
                              int64_t lo, uint64_t range);

/* --- indexing (index.cu) ------------------------------------------------------ */
/* out [O, n_idx, I] = src [O, S, I] at idx (int64, negative wraps) along the middle
   dim: index_select, embedding (O = 1). */
EMC_API int emc_index_select(int dtype, const void *src, int64_t O, int64_t S, int64_t I,
                             const int64_t *idx, int64_t n_idx, void *out, void *stream);
/* out [O, S, I] += src [O, n_idx, I] at idx: index_add, embedding backward.
   deterministic = 1 sums in index order (indices sorted stably by target, one
   thread per target run and column; no atomics); float dtypes. */
EMC_API int emc_index_add(int dtype, void *out, int64_t O, int64_t S, int64_t I,
                          const int64_t *idx, int64_t n_idx, const void *src, int deterministic,
                          void *stream);
/* gather along a dim: out [O, J, I] = src [O, S, I][o, idx[o, j, i], i] */
EMC_API int emc_gather(int dtype, const void *src, int64_t O, int64_t S, int64_t I,
                       const int64_t *idx, int64_t J, void *out, void *stream);
/* scatter (reduce EMC_PUT_SET) / scatter_add (EMC_PUT_ADD) / scatter with a
   product, max or min (EMC_PUT_MUL/MAX/MIN: the codes of EM_RED_*; max and min
   propagate NaN) along a dim.  nd spans the index's shape with three operands:
   out (the dim's stride 0), index, src (stride 0 broadcasts a value); dim_size /
   dim_stride are out's along the dim.  deterministic = 1 sorts by target and
   applies each target's writes in index order (the last write wins, sums add in
   order), no atomics; MUL/MAX/MIN always run so.  Reductions take f32, f64,
   f16, bf16, i32 and i64. */
enum { EMC_PUT_SET = 0, EMC_PUT_ADD = 1, EMC_PUT_MUL = 2, EMC_PUT_MAX = 3, EMC_PUT_MIN = 4 };
EMC_API int emc_scatter(int reduce, int dtype, void *out, int64_t dim_size, int64_t dim_stride,
                        const int64_t *idx, const void *src, const emc_nd *nd, int deterministic,
                        void *stream);
/* index_put: out[idx_0[p], ..., idx_{k-1}[p]][slice] (= or +=) values[p * vstride]
   [slice] for p < n.  idx: host array of k device int64 arrays of n (broadcast
   already); sizes / strides: out's along the indexed dims; slice: the rest (two
   operands: out, values; ndim 0 for none). */
EMC_API int emc_index_put(int dtype, void *out, int k, const int64_t *const *idx,
                          const int64_t *sizes, const int64_t *strides, int64_t n,
                          const void *values, int64_t vstride, const emc_nd *slice,
                          int accumulate, int deterministic, void *stream);
/* EMC_E_INDEX when an index kernel launched on `stream` since the last call saw an
   out-of-range index (synchronises the stream), else 0; resets the flag. */
EMC_API int emc_check_index_error(void *stream);
/* --- scans and stream compaction (scan.cu) ------------------------------------ */
/* inclusive scan over K of a contiguous [O, K, I]: SC_SUM, SC_PROD (f32 with a
   double accumulator, f64, i64 wrapping), SC_LOGSUMEXP (f32, f64); fixed tiles,
   independent of the launch (many columns are the CPU's serial order exactly; at
   most 4096 columns of 2048+ elements take the tiles, like rows) */
EMC_API int emc_scan(int op, int dtype, const void *x, int64_t O, int64_t K, int64_t I,
                     void *out, void *stream);
/* cummax (SC_MAX) / cummin (SC_MIN) over K of a contiguous [O, K, I] (f32, f64, i64):
   values and int64 indices in the input's layout; the CPU's serial walk and rule (NaN
   propagates, ties take the later index) */
EMC_API int emc_cumext(int op, int dtype, const void *x, int64_t O, int64_t K, int64_t I,
                       void *vals, int64_t *idx, void *stream);
/* stream compaction: the mask (n bytes, nonzero = selected) is cut into
   emc_mask_tiles(n) fixed tiles; emc_mask_count writes offs (tiles + 1 int64s):
   offs[b] the count of nonzero bytes before tile b, offs[tiles] the total (the
   caller reads it back to size its output).  The kernels below take that offs. */
EMC_API int64_t emc_mask_tiles(int64_t n);
EMC_API int emc_mask_count(const uint8_t *mask, int64_t n, int64_t *offs, void *stream);
/* out [count, ndim] int64: the row-major multi-index (shape a host array) of each
   nonzero mask element, in order */
EMC_API int emc_nonzero(const uint8_t *mask, int ndim, const int64_t *shape, int64_t n,
                        const int64_t *offs, int64_t *out, void *stream);
/* out[j] = x[i] for the j-th nonzero mask[i] (contiguous, itemsize 1, 2, 4, 8 or 16 bytes) */
EMC_API int emc_masked_select(int itemsize, const void *x, const uint8_t *mask,
                              const int64_t *offs, int64_t n, void *out, void *stream);
/* out[i] = src[j] for the j-th nonzero mask[i] */
EMC_API int emc_masked_scatter(int itemsize, void *out, const uint8_t *mask, const int64_t *offs,
                               int64_t n, const void *src, void *stream);
/* --- complex64 / complex128 (complex.cu; formulas of ember_complex.h) ----------- */
/* out = op(x) for the ops of em_cun_ok (EW_ABS writes the real dtype of the
   precision); EMC_E_DTYPE for any other op or a real dtype */
EMC_API int emc_cew_unary(int op, int dtype, void *out, const void *x, const emc_nd *nd,
                          void *stream);
/* bool out = pred(x): EW_ISNAN, EW_ISINF, EW_ISFINITE, EW_LNOT */
EMC_API int emc_cew_predicate(int op, int dtype, void *out, const void *x, const emc_nd *nd,
                              void *stream);
/* out = op(a, b): EW_ADD, EW_SUB, EW_MUL, EW_DIV, EW_POW, EW_ADDA (aux[0]: real alpha) */
EMC_API int emc_cew_binary(int op, int dtype, void *out, const void *a, const void *b,
                           const emc_nd *nd, const double *aux, void *stream);
/* bool out = op(a, b): EW_EQ, EW_NE, EW_LAND, EW_LOR, EW_LXOR */
EMC_API int emc_cew_compare(int op, int dtype, void *out, const void *a, const void *b,
                            const emc_nd *nd, void *stream);
/* the element functions above on the host (contiguous host arrays of n): family
   0 unary, 1 binary, 2 compare, 3 predicate; for the CPU tests */
EMC_API int emc_cew_host(int family, int op, int dtype, void *out, const void *a, const void *b,
                         int64_t n, const double *aux);
/* dst (dst dtype, strides[0]) = src (src dtype, strides[1]) for any pair of dtypes
   (complex ones included: src/copy.c's casts), where each side may carry lazy math
   bits (1 conjugate, 2 negative): dst stores what reads, through its bits, as the
   value src reads as through its own. */
EMC_API int emc_copy_math(int dst_dtype, void *dst, int dst_bits, int src_dtype,
                          const void *src, int src_bits, const emc_nd *nd, void *stream);
/* complex product over K of a contiguous [O, K, I] into out [O, I] (double
   accumulator, K in order) */
EMC_API int emc_cprod(int dtype, const void *x, int64_t O, int64_t K, int64_t I, void *out,
                      void *stream);
#endif
