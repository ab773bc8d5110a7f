/* Multi-tensor optimizer steps and the fused gradient norm: the twin of
   src_c/foreach.c.  One launch covers a whole parameter group: the host builds a
   table of the tensors (device pointers, sizes, per-tensor scalars) and of fixed
   chunks of FE_CHUNK elements, copies it to the device once, and block b works
   on chunks b, b + gridDim.x, ...

   The arithmetic is the CPU's op for op, in the tensor's precision, with every
   product, sum, quotient and square root explicitly rounded (__fmul_rn, ...) so
   nvcc never contracts a * b + c into an FMA: results are bit-identical to the
   CPU's multi-tensor step (which the build also keeps FMA-free).  The norm sums
   in double per chunk in a fixed order, then the chunks in order. */
#include "common.cuh"
#include "ember_cuda_optim.h"

#define FE_CHUNK 8192
#define FE_BLOCK 256

/* rounded ops per precision (no contraction) */
__device__ __forceinline__ float rmul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double rmul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float radd(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double radd(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float rsub(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ double rsub(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ float rdiv(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ double rdiv(double a, double b) { return __ddiv_rn(a, b); }
__device__ __forceinline__ float rsqrt_(float a) { return __fsqrt_rn(a); }
__device__ __forceinline__ double rsqrt_(double a) { return __dsqrt_rn(a); }

/* the CPU's lerp: x + t (y - x) below t = 0.5, y - (y - x)(1 - t) above */
template <typename T> __device__ __forceinline__ T lerp_(T x, T y, T t) {
    return t < (T)0.5 ? radd(x, rmul(t, rsub(y, x))) : rsub(y, rmul(rsub(y, x), rsub((T)1, t)));
}
template <typename T> __device__ __forceinline__ T maxnan(T a, T b) {
    return (a != a || b != b) ? radd(a, b) : (a > b ? a : b);
}

/* one tensor of a group: up to 5 operands, its size, two per-tensor scalars, a flag */
struct FeTensor {
    void *p[5];
    int64_t n;
    double s0, s1;
    int64_t flag;
};
struct FeChunk { int64_t k, lo; };

/* a group's table on the device: tensors then chunks (freed by the caller) */
struct FeTable {
    FeTensor *t;
    FeChunk *c;
    int64_t nchunks;
    void *mem;
};

static int fe_table(FeTable *tb, const FeTensor *ts, int64_t count, cudaStream_t s,
                    const char *where) {
    int64_t nc = 0;
    for (int64_t k = 0; k < count; k++) nc += (ts[k].n + FE_CHUNK - 1) / FE_CHUNK;
    tb->nchunks = nc;
    tb->mem = NULL;
    if (nc == 0) return 0;
    size_t bytes = sizeof(FeTensor) * (size_t)count + sizeof(FeChunk) * (size_t)nc;
    char *host = (char *)malloc(bytes);
    if (!host) return emc_set_error(EMC_E_NOMEM, where);
    memcpy(host, ts, sizeof(FeTensor) * (size_t)count);
    FeChunk *hc = (FeChunk *)(host + sizeof(FeTensor) * (size_t)count);
    int64_t j = 0;
    for (int64_t k = 0; k < count; k++)
        for (int64_t lo = 0; lo < ts[k].n; lo += FE_CHUNK) hc[j++] = FeChunk{k, lo};
    int rc = emc_malloc(&tb->mem, bytes, s);
    if (!rc) {
        /* from pageable memory: the call returns once the bytes are staged */
        cudaError_t e = cudaMemcpyAsync(tb->mem, host, bytes, cudaMemcpyHostToDevice, s);
        if (e != cudaSuccess) {
            emc_free(tb->mem);
            tb->mem = NULL;
            rc = emc_set_error((int)e, where);
        }
    }
    free(host);
    tb->t = (FeTensor *)tb->mem;
    tb->c = (FeChunk *)((char *)tb->mem + sizeof(FeTensor) * (size_t)count);
    return rc;
}

static unsigned fe_grid(int64_t nchunks) {
    return (unsigned)(nchunks < 65535LL * 16 ? nchunks : 65535LL * 16);
}

static int fe_done(FeTable *tb, const char *where) {
    cudaError_t e = cudaGetLastError();
    if (tb->mem) emc_free(tb->mem);
    return e == cudaSuccess ? 0 : emc_set_error((int)e, where);
}

#define FE_FOR_CHUNKS(...)                                                            \
    for (int64_t b = blockIdx.x; b < nchunks; b += gridDim.x) {                       \
        const FeChunk ch = chunks[b];                                                 \
        const FeTensor &tt = ts[ch.k];                                                \
        const int64_t hi = ch.lo + FE_CHUNK < tt.n ? ch.lo + FE_CHUNK : tt.n;         \
        for (int64_t i = ch.lo + threadIdx.x; i < hi; i += blockDim.x) { __VA_ARGS__ } \
    }

/* --- SGD ------------------------------------------------------------------------------ */
template <typename T>
__global__ void sgd_k(const FeTensor *ts, const FeChunk *chunks, int64_t nchunks, T wd, T mo,
                      T damp, T nlr, int use_wd, int use_mo, int neg, int nest) {
    FE_FOR_CHUNKS({
        T *P = (T *)tt.p[0];
        const T *G = (const T *)tt.p[1];
        T *B = (T *)tt.p[2];
        T g = G[i];
        if (neg) g = -g;
        if (use_wd) g = radd(g, rmul(wd, P[i]));
        if (use_mo) {
            T bb = tt.flag ? g : radd(rmul(B[i], mo), rmul(damp, g));
            B[i] = bb;
            g = nest ? radd(g, rmul(mo, bb)) : bb;
        }
        P[i] = radd(P[i], rmul(nlr, g));
    })
}

template <typename T>
static void sgd_launch(const FeTable &tb, const em_sgd_args *a, cudaStream_t s) {
    sgd_k<T><<<fe_grid(tb.nchunks), FE_BLOCK, 0, s>>>(
        tb.t, tb.c, tb.nchunks, (T)a->weight_decay, (T)a->momentum, (T)(1 - a->dampening),
        (T)(-a->lr), a->weight_decay != 0, a->momentum != 0, a->maximize, a->nesterov);
}

EMC_API int emc_sgd_multi(int dtype, int64_t count, void *const *params, void *const *grads,
                          void *const *bufs, const uint8_t *init, const int64_t *numel,
                          const em_sgd_args *a, void *stream) {
    if (dtype != EM_F32 && dtype != EM_F64) return emc_set_error(EMC_E_DTYPE, "emc_sgd_multi");
    if (count <= 0) return count < 0 ? emc_set_error(EMC_E_ARG, "emc_sgd_multi") : 0;
    FeTensor *ts = (FeTensor *)calloc((size_t)count, sizeof(FeTensor));
    if (!ts) return emc_set_error(EMC_E_NOMEM, "emc_sgd_multi");
    for (int64_t k = 0; k < count; k++) {
        ts[k].p[0] = params[k];
        ts[k].p[1] = grads[k];
        ts[k].p[2] = bufs ? bufs[k] : NULL;
        ts[k].n = numel[k];
        ts[k].flag = init ? init[k] != 0 : 0;
    }
    cudaStream_t s = emc_stream(stream);
    FeTable tb;
    int rc = fe_table(&tb, ts, count, s, "emc_sgd_multi");
    free(ts);
    if (rc || tb.nchunks == 0) return rc;
    if (dtype == EM_F32) sgd_launch<float>(tb, a, s);
    else sgd_launch<double>(tb, a, s);
    return fe_done(&tb, "emc_sgd_multi");
}

/* --- Adam / AdamW (amsgrad) ----------------------------------------------------------------- */
template <typename T, bool AMS>
__global__ void adam_k(const FeTensor *ts, const FeChunk *chunks, int64_t nchunks, T w1, T w2,
                       T wd, T decay, int l2, int dec, int neg) {
    FE_FOR_CHUNKS({
        T *P = (T *)tt.p[0];
        const T *G = (const T *)tt.p[1];
        T *M = (T *)tt.p[2], *V = (T *)tt.p[3], *MX = (T *)tt.p[4];
        const T alpha = (T)tt.s0, epsh = (T)tt.s1;
        T g = G[i], p = P[i];
        if (neg) g = -g;
        if (l2) g = radd(g, rmul(wd, p));
        if (dec) p = rmul(p, decay);
        T m = lerp_(M[i], g, w1);
        T gg = rmul(g, g);
        T v = lerp_(V[i], gg, w2);
        M[i] = m;
        V[i] = v;
        if (AMS) {
            v = maxnan(MX[i], v);
            MX[i] = v;
        }
        T d = rsqrt_(v);
        d = radd(d, epsh);
        d = rdiv(m, d);
        P[i] = radd(p, rmul(alpha, d));
    })
}

template <typename T>
static void adam_launch(const FeTable &tb, const em_adam_args *a, cudaStream_t s) {
    const T w1 = (T)(1 - a->beta1), w2 = (T)(1 - a->beta2), wd = (T)a->weight_decay;
    const T decay = (T)(1 - a->lr * a->weight_decay);
    const int l2 = a->weight_decay != 0 && !a->decoupled;
    const int dec = a->weight_decay != 0 && a->decoupled;
    if (a->amsgrad)
        adam_k<T, true><<<fe_grid(tb.nchunks), FE_BLOCK, 0, s>>>(tb.t, tb.c, tb.nchunks, w1, w2,
                                                                 wd, decay, l2, dec, a->maximize);
    else
        adam_k<T, false><<<fe_grid(tb.nchunks), FE_BLOCK, 0, s>>>(tb.t, tb.c, tb.nchunks, w1, w2,
                                                                  wd, decay, l2, dec, a->maximize);
}

EMC_API int emc_adam_multi(int dtype, int64_t count, void *const *params, void *const *grads,
                           void *const *exp_avgs, void *const *exp_avg_sqs, void *const *max_sqs,
                           const double *steps, const int64_t *numel, const em_adam_args *a,
                           void *stream) {
    if (dtype != EM_F32 && dtype != EM_F64) return emc_set_error(EMC_E_DTYPE, "emc_adam_multi");
    if (count <= 0) return count < 0 ? emc_set_error(EMC_E_ARG, "emc_adam_multi") : 0;
    if (a->amsgrad && !max_sqs) return emc_set_error(EMC_E_ARG, "emc_adam_multi");
    FeTensor *ts = (FeTensor *)calloc((size_t)count, sizeof(FeTensor));
    if (!ts) return emc_set_error(EMC_E_NOMEM, "emc_adam_multi");
    for (int64_t k = 0; k < count; k++) {
        ts[k].p[0] = params[k];
        ts[k].p[1] = grads[k];
        ts[k].p[2] = exp_avgs[k];
        ts[k].p[3] = exp_avg_sqs[k];
        ts[k].p[4] = a->amsgrad ? max_sqs[k] : NULL;
        ts[k].n = numel[k];
        /* the CPU's per-tensor scalars, computed the same way on the host */
        const double bc1 = 1 - pow(a->beta1, steps[k]);
        const double bc2_sqrt = sqrt(1 - pow(a->beta2, steps[k]));
        ts[k].s0 = -a->lr * bc2_sqrt / bc1;
        ts[k].s1 = a->eps * bc2_sqrt;
    }
    cudaStream_t s = emc_stream(stream);
    FeTable tb;
    int rc = fe_table(&tb, ts, count, s, "emc_adam_multi");
    free(ts);
    if (rc || tb.nchunks == 0) return rc;
    if (dtype == EM_F32) adam_launch<float>(tb, a, s);
    else adam_launch<double>(tb, a, s);
    return fe_done(&tb, "emc_adam_multi");
}

/* --- gradient clipping ---------------------------------------------------------------------- */
/* p: 2 (sum of squares), 1 (sum |x|), INFINITY (max |x|, NaN wins), else sum |x|^p */
struct NormOp {
    double p;
    __device__ double map(double x) const {
        double a = fabs(x);
        if (p == 2) return a * a;
        if (p == 1 || isinf(p)) return a;
        return pow(a, p);
    }
    __device__ double combine(double a, double b) const {
        if (isinf(p)) return (a != a || b != b) ? a + b : (a > b ? a : b);
        return a + b;
    }
};

template <typename T>
__global__ void norm_parts_k(const FeTensor *ts, const FeChunk *chunks, int64_t nchunks,
                             NormOp op, double *parts) {
    __shared__ double sh[FE_BLOCK];
    for (int64_t b = blockIdx.x; b < nchunks; b += gridDim.x) {
        const FeChunk ch = chunks[b];
        const FeTensor &tt = ts[ch.k];
        const T *X = (const T *)tt.p[0];
        const int64_t hi = ch.lo + FE_CHUNK < tt.n ? ch.lo + FE_CHUNK : tt.n;
        double acc = 0;
        for (int64_t i = ch.lo + threadIdx.x; i < hi; i += blockDim.x)
            acc = op.combine(acc, op.map((double)X[i]));
        sh[threadIdx.x] = acc;
        __syncthreads();
        for (int w = FE_BLOCK / 2; w > 0; w >>= 1) {    /* a fixed pairwise tree */
            if ((int)threadIdx.x < w) sh[threadIdx.x] = op.combine(sh[threadIdx.x],
                                                                   sh[threadIdx.x + w]);
            __syncthreads();
        }
        if (threadIdx.x == 0) parts[b] = sh[0];
        __syncthreads();
    }
}

template <typename T>
__global__ void norm_final_k(const double *parts, int64_t n, NormOp op, T *out) {
    double acc = 0;
    for (int64_t j = 0; j < n; j++) acc = op.combine(acc, parts[j]);
    if (op.p == 2) acc = sqrt(acc);
    else if (op.p != 1 && !isinf(op.p)) acc = pow(acc, 1 / op.p);
    *out = (T)acc;
}

EMC_API int emc_total_norm(int dtype, int64_t count, void *const *xs, const int64_t *numel,
                           double p, void *out, void *stream) {
    if (dtype != EM_F32 && dtype != EM_F64) return emc_set_error(EMC_E_DTYPE, "emc_total_norm");
    if (count < 0 || !(p > 0)) return emc_set_error(EMC_E_ARG, "emc_total_norm");
    FeTensor *ts = (FeTensor *)calloc((size_t)(count ? count : 1), sizeof(FeTensor));
    if (!ts) return emc_set_error(EMC_E_NOMEM, "emc_total_norm");
    for (int64_t k = 0; k < count; k++) {
        ts[k].p[0] = xs[k];
        ts[k].n = numel[k];
    }
    cudaStream_t s = emc_stream(stream);
    FeTable tb;
    int rc = fe_table(&tb, ts, count, s, "emc_total_norm");
    free(ts);
    if (rc) return rc;
    double *parts = NULL;
    if (tb.nchunks) {
        rc = emc_malloc((void **)&parts, sizeof(double) * (size_t)tb.nchunks, s);
        if (rc) {
            fe_done(&tb, "emc_total_norm");
            return rc;
        }
    }
    NormOp op{p};
    if (dtype == EM_F32) {
        if (tb.nchunks)
            norm_parts_k<float><<<fe_grid(tb.nchunks), FE_BLOCK, 0, s>>>(tb.t, tb.c, tb.nchunks,
                                                                         op, parts);
        norm_final_k<float><<<1, 1, 0, s>>>(parts, tb.nchunks, op, (float *)out);
    } else {
        if (tb.nchunks)
            norm_parts_k<double><<<fe_grid(tb.nchunks), FE_BLOCK, 0, s>>>(tb.t, tb.c, tb.nchunks,
                                                                          op, parts);
        norm_final_k<double><<<1, 1, 0, s>>>(parts, tb.nchunks, op, (double *)out);
    }
    if (parts) emc_free(parts);
    return fe_done(&tb, "emc_total_norm");
}

/* the host's coefficient max_norm / (norm + 1e-6) in double, applied below 1 as the
   CPU does (x * (T)coef) */
template <typename T>
__global__ void clip_k(const FeTensor *ts, const FeChunk *chunks, int64_t nchunks,
                       const T *norm, double max_norm) {
    const double coef = __ddiv_rn(max_norm, __dadd_rn((double)*norm, 1e-6));
    if (!(coef < 1.0)) return;
    const T c = (T)coef;
    FE_FOR_CHUNKS({
        T *X = (T *)tt.p[0];
        X[i] = rmul(X[i], c);
    })
}

EMC_API int emc_clip_multi(int dtype, int64_t count, void *const *xs, const int64_t *numel,
                           const void *norm, double max_norm, void *stream) {
    if (dtype != EM_F32 && dtype != EM_F64) return emc_set_error(EMC_E_DTYPE, "emc_clip_multi");
    if (count <= 0) return count < 0 ? emc_set_error(EMC_E_ARG, "emc_clip_multi") : 0;
    FeTensor *ts = (FeTensor *)calloc((size_t)count, sizeof(FeTensor));
    if (!ts) return emc_set_error(EMC_E_NOMEM, "emc_clip_multi");
    for (int64_t k = 0; k < count; k++) {
        ts[k].p[0] = xs[k];
        ts[k].n = numel[k];
    }
    cudaStream_t s = emc_stream(stream);
    FeTable tb;
    int rc = fe_table(&tb, ts, count, s, "emc_clip_multi");
    free(ts);
    if (rc || tb.nchunks == 0) return rc;
    if (dtype == EM_F32)
        clip_k<float><<<fe_grid(tb.nchunks), FE_BLOCK, 0, s>>>(tb.t, tb.c, tb.nchunks,
                                                               (const float *)norm, max_norm);
    else
        clip_k<double><<<fe_grid(tb.nchunks), FE_BLOCK, 0, s>>>(tb.t, tb.c, tb.nchunks,
                                                                (const double *)norm, max_norm);
    return fe_done(&tb, "emc_clip_multi");
}
