/* Softmax / log_softmax, cross-entropy and layer_norm: the twins of the
   softmax in src_c/reduce.c and of src_c/norm.c.  Rows (I == 1) take one
   256-thread block each with fixed-order block reductions; columns (I > 1)
   one thread each.  float16/bfloat16 compute in float32. */
#include "common.cuh"

#define NB 256

__device__ __forceinline__ float a_exp(float x) { return expf(x); }
__device__ __forceinline__ double a_exp(double x) { return exp(x); }
__device__ __forceinline__ float a_log(float x) { return logf(x); }
__device__ __forceinline__ double a_log(double x) { return log(x); }

template <typename T>
__global__ void softmax_kernel(bool lg, const T *x, int64_t O, int64_t K, int64_t I, T *out) {
    typedef typename Acc<T>::type A;
    if (I == 1) {
        const T *row = x + blockIdx.x * K;
        T *orow = out + blockIdx.x * K;
        A m = -(A)INFINITY;
        for (int64_t k = threadIdx.x; k < K; k += NB) {
            A v = ld<T, A>(row + k);
            m = (v != v || v > m) ? v : m;
        }
        m = block_max(m);
        A s = 0;
        for (int64_t k = threadIdx.x; k < K; k += NB) s += a_exp(ld<T, A>(row + k) - m);
        s = block_sum(s);
        A ls = a_log(s);
        for (int64_t k = threadIdx.x; k < K; k += NB) {
            A v = ld<T, A>(row + k) - m;
            st<T, A>(orow + k, lg ? v - ls : a_exp(v) / s);
        }
        return;
    }
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < O * I;
         t += (int64_t)gridDim.x * blockDim.x) {
        int64_t o = t / I, i = t - o * I;
        const T *p = x + o * K * I + i;
        T *q = out + o * K * I + i;
        A m = -(A)INFINITY, s = 0;
        for (int64_t k = 0; k < K; k++) {
            A v = ld<T, A>(p + k * I);
            m = (v != v || v > m) ? v : m;
        }
        for (int64_t k = 0; k < K; k++) s += a_exp(ld<T, A>(p + k * I) - m);
        A ls = a_log(s);
        for (int64_t k = 0; k < K; k++) {
            A v = ld<T, A>(p + k * I) - m;
            st<T, A>(q + k * I, lg ? v - ls : a_exp(v) / s);
        }
    }
}

/* rows of at most WARP_K elements (attention scores, small vocabularies): a warp per
   row, the row held in registers so that x is read once, shuffles instead of block
   barriers */
#define WARP_K 1024
template <typename T>
__global__ void softmax_warp(bool lg, const T *x, int64_t O, int K, T *out) {
    typedef typename Acc<T>::type A;
    const int lane = threadIdx.x & 31;
    const int64_t row = blockIdx.x * (int64_t)(blockDim.x / 32) + threadIdx.x / 32;
    if (row >= O) return;
    const T *p = x + row * K;
    T *q = out + row * K;
    A v[WARP_K / 32];
    A m = -(A)INFINITY;
#pragma unroll
    for (int j = 0; j < WARP_K / 32; j++) {
        const int k = lane + 32 * j;
        v[j] = k < K ? ld<T, A>(p + k) : -(A)INFINITY;
        m = (v[j] != v[j] || v[j] > m) ? v[j] : m;
    }
    m = warp_max(m);
    A sum = 0;
#pragma unroll
    for (int j = 0; j < WARP_K / 32; j++)
        if (lane + 32 * j < K) {
            v[j] -= m;
            sum += a_exp(v[j]);
        }
    sum = warp_sum(sum);
    const A ls = a_log(sum);
#pragma unroll
    for (int j = 0; j < WARP_K / 32; j++) {
        const int k = lane + 32 * j;
        if (k < K) st<T, A>(q + k, lg ? v[j] - ls : a_exp(v[j]) / sum);
    }
}

template <typename T>
__global__ void softmax_bwd_warp(bool lg, const T *g, const T *y, int64_t O, int K, T *gin) {
    typedef typename Acc<T>::type A;
    const int lane = threadIdx.x & 31;
    const int64_t row = blockIdx.x * (int64_t)(blockDim.x / 32) + threadIdx.x / 32;
    if (row >= O) return;
    const int64_t base = row * K;
    A gv[WARP_K / 32], yv[WARP_K / 32];
    A sum = 0;
#pragma unroll
    for (int j = 0; j < WARP_K / 32; j++) {
        const int k = lane + 32 * j;
        gv[j] = k < K ? ld<T, A>(g + base + k) : (A)0;
        yv[j] = k < K ? ld<T, A>(y + base + k) : (A)0;
        sum += lg ? gv[j] : gv[j] * yv[j];
    }
    sum = warp_sum(sum);
#pragma unroll
    for (int j = 0; j < WARP_K / 32; j++) {
        const int k = lane + 32 * j;
        if (k < K) st<T, A>(gin + base + k, lg ? gv[j] - a_exp(yv[j]) * sum : yv[j] * (gv[j] - sum));
    }
}

EMC_API int emc_softmax(int log, int dtype, const void *x, int64_t O, int64_t K, int64_t I,
                        void *out, void *stream) {
    if (O * I == 0 || K == 0) return 0;
    cudaStream_t s = emc_stream(stream);
    if (I == 1 && K <= WARP_K && (O + 7) / 8 <= 0x7fffffff) {
        EMC_FLOAT_TYPES(dtype, softmax_warp<T><<<(unsigned)((O + 7) / 8), 256, 0, s>>>(
                                   log != 0, (const T *)x, O, (int)K, (T *)out));
        EMC_LAUNCHED("emc_softmax");
        return 0;
    }
    bool row = I == 1;
    unsigned g = row ? (unsigned)O : emc_blocks(O * I), b = row ? NB : EMC_THREADS;
    EMC_FLOAT_TYPES(dtype, softmax_kernel<T><<<g, b, 0, s>>>(log != 0, (const T *)x, O, K, I, (T *)out));
    EMC_LAUNCHED("emc_softmax");
    return 0;
}

/* softmax: gin = y (g - sum g y); log_softmax: gin = g - exp(y) sum g */
template <typename T>
__global__ void softmax_bwd_kernel(bool lg, const T *g, const T *y, int64_t O, int64_t K,
                                   int64_t I, T *gin) {
    typedef typename Acc<T>::type A;
    if (I == 1) {
        const int64_t base = blockIdx.x * K;
        A s = 0;
        for (int64_t k = threadIdx.x; k < K; k += NB) {
            A gv = ld<T, A>(g + base + k);
            s += lg ? gv : gv * ld<T, A>(y + base + k);
        }
        s = block_sum(s);
        for (int64_t k = threadIdx.x; k < K; k += NB) {
            A gv = ld<T, A>(g + base + k), yv = ld<T, A>(y + base + k);
            st<T, A>(gin + base + k, lg ? gv - a_exp(yv) * s : yv * (gv - s));
        }
        return;
    }
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < O * I;
         t += (int64_t)gridDim.x * blockDim.x) {
        int64_t o = t / I, i = t - o * I, base = o * K * I + i;
        A s = 0;
        for (int64_t k = 0; k < K; k++) {
            A gv = ld<T, A>(g + base + k * I);
            s += lg ? gv : gv * ld<T, A>(y + base + k * I);
        }
        for (int64_t k = 0; k < K; k++) {
            A gv = ld<T, A>(g + base + k * I), yv = ld<T, A>(y + base + k * I);
            st<T, A>(gin + base + k * I, lg ? gv - a_exp(yv) * s : yv * (gv - s));
        }
    }
}

EMC_API int emc_softmax_bwd(int log, int dtype, const void *g, const void *y, int64_t O,
                            int64_t K, int64_t I, void *gin, void *stream) {
    if (O * I == 0 || K == 0) return 0;
    cudaStream_t s = emc_stream(stream);
    if (I == 1 && K <= WARP_K && (O + 7) / 8 <= 0x7fffffff) {
        EMC_FLOAT_TYPES(dtype, softmax_bwd_warp<T><<<(unsigned)((O + 7) / 8), 256, 0, s>>>(
                                   log != 0, (const T *)g, (const T *)y, O, (int)K, (T *)gin));
        EMC_LAUNCHED("emc_softmax_bwd");
        return 0;
    }
    bool row = I == 1;
    unsigned gr = row ? (unsigned)O : emc_blocks(O * I), b = row ? NB : EMC_THREADS;
    EMC_FLOAT_TYPES(dtype, softmax_bwd_kernel<T><<<gr, b, 0, s>>>(log != 0, (const T *)g,
                                                                  (const T *)y, O, K, I, (T *)gin));
    EMC_LAUNCHED("emc_softmax_bwd");
    return 0;
}

/* --- cross-entropy from logits -------------------------------------------------- */
template <typename T>
__global__ void ce_fwd_kernel(const T *x, const int64_t *t, int64_t C, int64_t ignore, double eps,
                              T *loss, float *lse_out, int *flag) {
    typedef typename Acc<T>::type A;
    const T *row = x + blockIdx.x * C;
    const int64_t tgt = t[blockIdx.x];
    A m = -(A)INFINITY;
    for (int64_t c = threadIdx.x; c < C; c += NB) {
        A v = ld<T, A>(row + c);
        m = (v != v || v > m) ? v : m;
    }
    m = block_max(m);
    A s = 0, sx = 0;
    for (int64_t c = threadIdx.x; c < C; c += NB) {
        A v = ld<T, A>(row + c);
        s += a_exp(v - m);
        sx += v;
    }
    s = block_sum(s);
    sx = block_sum(sx);
    if (threadIdx.x != 0) return;
    A lse = m + a_log(s);
    if (lse_out) lse_out[blockIdx.x] = (float)lse;
    if (tgt == ignore) { st<T, A>(loss + blockIdx.x, (A)0); return; }
    if (tgt < 0 || tgt >= C) {
        if (flag) atomicExch(flag, 1);
        st<T, A>(loss + blockIdx.x, (A)NAN);
        return;
    }
    A nll = lse - ld<T, A>(row + tgt);
    A smooth = lse - sx / (A)C;
    st<T, A>(loss + blockIdx.x, (A)((1 - eps) * nll + eps * smooth));
}

EMC_API int emc_cross_entropy_fwd(int dtype, const void *x, const int64_t *t, int64_t R,
                                  int64_t C, int64_t ignore_index, double label_smoothing,
                                  void *loss, float *lse, void *stream) {
    if (R == 0) return 0;
    if (C <= 0) return emc_set_error(EMC_E_ARG, "emc_cross_entropy_fwd");
    cudaStream_t s = emc_stream(stream);
    int *flag = emc_error_flag();
    EMC_FLOAT_TYPES(dtype, ce_fwd_kernel<T><<<(unsigned)R, NB, 0, s>>>(
        (const T *)x, t, C, ignore_index, label_smoothing, (T *)loss, lse, flag));
    EMC_LAUNCHED("emc_cross_entropy_fwd");
    return 0;
}

template <typename T>
__global__ void ce_bwd_kernel(const T *x, const int64_t *t, const float *lse, const T *gl,
                              int64_t C, int64_t ignore, double eps, T *gx) {
    typedef typename Acc<T>::type A;
    const int64_t r = blockIdx.x, tgt = t[r];
    const T *row = x + r * C;
    T *grow = gx + r * C;
    const bool skip = tgt == ignore || tgt < 0 || tgt >= C;
    const A g = skip ? (A)0 : ld<T, A>(gl + r), l = (A)lse[r];
    for (int64_t c = threadIdx.x; c < C; c += NB) {
        A p = a_exp(ld<T, A>(row + c) - l);
        A q = (A)(eps / (double)C) + (c == tgt ? (A)(1 - eps) : (A)0);
        st<T, A>(grow + c, skip ? (A)0 : g * (p - q));
    }
}

EMC_API int emc_cross_entropy_bwd(int dtype, const void *x, const int64_t *t, const float *lse,
                                  const void *gloss, int64_t R, int64_t C, int64_t ignore_index,
                                  double label_smoothing, void *gx, void *stream) {
    if (R == 0) return 0;
    if (C <= 0 || !lse) return emc_set_error(EMC_E_ARG, "emc_cross_entropy_bwd");
    cudaStream_t s = emc_stream(stream);
    EMC_FLOAT_TYPES(dtype, ce_bwd_kernel<T><<<(unsigned)R, NB, 0, s>>>(
        (const T *)x, t, lse, (const T *)gloss, C, ignore_index, label_smoothing, (T *)gx));
    EMC_LAUNCHED("emc_cross_entropy_bwd");
    return 0;
}

/* --- layer_norm --------------------------------------------------------------- */
template <typename T>
__global__ void ln_fwd_kernel(const T *x, const T *w, const T *b, int64_t N, double eps, T *y,
                              typename Acc<T>::type *mean, typename Acc<T>::type *rstd) {
    typedef typename Acc<T>::type A;
    const T *row = x + blockIdx.x * N;
    T *yrow = y + blockIdx.x * N;
    A s = 0;
    for (int64_t n = threadIdx.x; n < N; n += NB) s += ld<T, A>(row + n);
    A mu = block_sum(s) / (A)N;
    A q = 0;
    for (int64_t n = threadIdx.x; n < N; n += NB) {
        A d = ld<T, A>(row + n) - mu;
        q += d * d;
    }
    A rs = (A)1 / sqrt(block_sum(q) / (A)N + (A)eps);
    for (int64_t n = threadIdx.x; n < N; n += NB) {
        A v = (ld<T, A>(row + n) - mu) * rs;
        if (w) v = v * ld<T, A>(w + n);
        if (b) v = v + ld<T, A>(b + n);
        st<T, A>(yrow + n, v);
    }
    if (threadIdx.x == 0) {
        if (mean) mean[blockIdx.x] = mu;
        if (rstd) rstd[blockIdx.x] = rs;
    }
}

EMC_API int emc_layer_norm_fwd(int dtype, const void *x, const void *w, const void *b, int64_t M,
                               int64_t N, double eps, void *y, void *mean, void *rstd,
                               void *stream) {
    if (M == 0) return 0;
    if (N <= 0) return emc_set_error(EMC_E_ARG, "emc_layer_norm_fwd");
    cudaStream_t s = emc_stream(stream);
    EMC_FLOAT_TYPES(dtype, {
        typedef typename Acc<T>::type A;
        ln_fwd_kernel<T><<<(unsigned)M, NB, 0, s>>>((const T *)x, (const T *)w, (const T *)b, N,
                                                    eps, (T *)y, (A *)mean, (A *)rstd);
    })
    EMC_LAUNCHED("emc_layer_norm_fwd");
    return 0;
}

/* dx = rstd * (dy w - mean(dy w) - xhat * mean(dy w xhat)) */
template <typename T>
__global__ void ln_bwd_dx(const T *dy, const T *x, const typename Acc<T>::type *mean,
                          const typename Acc<T>::type *rstd, const T *w, int64_t N, T *dx) {
    typedef typename Acc<T>::type A;
    const int64_t base = blockIdx.x * N;
    const A mu = mean[blockIdx.x], rs = rstd[blockIdx.x];
    A s1 = 0, s2 = 0;
    for (int64_t n = threadIdx.x; n < N; n += NB) {
        A g = ld<T, A>(dy + base + n) * (w ? ld<T, A>(w + n) : (A)1);
        A xh = (ld<T, A>(x + base + n) - mu) * rs;
        s1 += g;
        s2 += g * xh;
    }
    s1 = block_sum(s1) / (A)N;
    s2 = block_sum(s2) / (A)N;
    for (int64_t n = threadIdx.x; n < N; n += NB) {
        A g = ld<T, A>(dy + base + n) * (w ? ld<T, A>(w + n) : (A)1);
        A xh = (ld<T, A>(x + base + n) - mu) * rs;
        st<T, A>(dx + base + n, rs * (g - s1 - xh * s2));
    }
}

/* dw[n] = sum_m dy xhat, db[n] = sum_m dy.  Rows are cut in fixed chunks of
   LN_ROWS: one thread per (column, chunk) sums its chunk in row order into a
   partial, then one thread per column sums the partials in chunk order, so the
   result does not depend on the launch configuration. */
#define LN_ROWS 256

template <typename T>
__global__ void ln_bwd_partial(const T *dy, const T *x, const typename Acc<T>::type *mean,
                               const typename Acc<T>::type *rstd, int64_t M, int64_t N,
                               typename Acc<T>::type *pw, typename Acc<T>::type *pb) {
    typedef typename Acc<T>::type A;
    const int64_t n = blockIdx.x * (int64_t)blockDim.x + threadIdx.x, c = blockIdx.y;
    if (n >= N) return;
    const int64_t m0 = c * LN_ROWS, m1 = m0 + LN_ROWS < M ? m0 + LN_ROWS : M;
    A sw = 0, sb = 0;
    for (int64_t m = m0; m < m1; m++) {
        A g = ld<T, A>(dy + m * N + n);
        sw += g * (ld<T, A>(x + m * N + n) - mean[m]) * rstd[m];
        sb += g;
    }
    pw[c * N + n] = sw;
    pb[c * N + n] = sb;
}

template <typename T>
__global__ void ln_bwd_combine(const typename Acc<T>::type *pw, const typename Acc<T>::type *pb,
                               int64_t chunks, int64_t N, T *dw, T *db) {
    typedef typename Acc<T>::type A;
    for (int64_t n = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; n < N;
         n += (int64_t)gridDim.x * blockDim.x) {
        A sw = 0, sb = 0;
        for (int64_t c = 0; c < chunks; c++) {
            sw += pw[c * N + n];
            sb += pb[c * N + n];
        }
        if (dw) st<T, A>(dw + n, sw);
        if (db) st<T, A>(db + n, sb);
    }
}

EMC_API int emc_layer_norm_bwd(int dtype, const void *dy, const void *x, const void *mean,
                               const void *rstd, const void *w, int64_t M, int64_t N, void *dx,
                               void *dw, void *db, void *stream) {
    if (N <= 0) return emc_set_error(EMC_E_ARG, "emc_layer_norm_bwd");
    cudaStream_t s = emc_stream(stream);
    EMC_FLOAT_TYPES(dtype, {
        typedef typename Acc<T>::type A;
        if (dx && M > 0)
            ln_bwd_dx<T><<<(unsigned)M, NB, 0, s>>>((const T *)dy, (const T *)x, (const A *)mean,
                                                    (const A *)rstd, (const T *)w, N, (T *)dx);
        if (dw || db) {
            int64_t chunks = M > 0 ? (M + LN_ROWS - 1) / LN_ROWS : 1;
            if (chunks > 65535) return emc_set_error(EMC_E_ARG, "emc_layer_norm_bwd (rows)");
            A *part = NULL;
            int rc = emc_malloc((void **)&part, sizeof(A) * (size_t)(2 * chunks * N), s);
            if (rc) return rc;
            if (M > 0) {
                dim3 grid((unsigned)((N + EMC_THREADS - 1) / EMC_THREADS), (unsigned)chunks);
                ln_bwd_partial<T><<<grid, EMC_THREADS, 0, s>>>(
                    (const T *)dy, (const T *)x, (const A *)mean, (const A *)rstd, M, N, part,
                    part + chunks * N);
            } else {
                cudaMemsetAsync(part, 0, sizeof(A) * (size_t)(2 * chunks * N), s);
            }
            ln_bwd_combine<T><<<emc_blocks(N), EMC_THREADS, 0, s>>>(
                part, part + chunks * N, chunks, N, (T *)dw, (T *)db);
            cudaError_t e = cudaGetLastError();
            emc_free(part);
            if (e != cudaSuccess) return emc_set_error((int)e, "emc_layer_norm_bwd");
        }
    })
    EMC_LAUNCHED("emc_layer_norm_bwd");
    return 0;
}

/* --- batch_norm over [N, C, HW] per channel ----------------------------------
   Statistics in fixed blocking: channel c's M = N * HW elements are cut into
   chunks of BN_CHUNK (element e is x[e / HW, c, e % HW]); a block folds a chunk
   with per-thread Welford in double and a fixed-order merge, and one thread per
   channel merges the chunks in order.  The backward sums dy and dy * (x - mean)
   the same way.  mean / invstd are kept in the accumulator type (float for
   float32/16/bf16, double for float64), as torch saves them. */
#define BN_CHUNK 8192

/* element e of channel c */
__device__ __forceinline__ int64_t bn_at(int64_t e, int64_t c, int64_t C, int64_t HW) {
    const int64_t n = e / HW;
    return (n * C + c) * HW + (e - n * HW);
}

template <typename T>
__global__ void bn_stats_partial(const T *x, int64_t c0, int64_t C, int64_t HW, int64_t M,
                                 int64_t chunks, Wf *part) {
    const int64_t c = c0 + blockIdx.y, ch = blockIdx.x;
    const int64_t e0 = ch * BN_CHUNK, e1 = e0 + BN_CHUNK < M ? e0 + BN_CHUNK : M;
    Wf w = {0, 0, 0};
    for (int64_t e = e0 + threadIdx.x; e < e1; e += NB) w = wf_add(w, ld<T, double>(x + bn_at(e, c, C, HW)));
    w = block_welford(w);
    if (threadIdx.x == 0) part[c * chunks + ch] = w;
}

/* per channel: merge the chunks; mean / invstd for the normalisation (st),
   the saved statistics and the running-statistics update */
template <typename T>
__global__ void bn_stats_final(const Wf *part, int64_t C, int64_t chunks, double eps,
                               double momentum, typename Acc<T>::type *sv, typename Acc<T>::type *smean,
                               typename Acc<T>::type *sinv, T *rmean, T *rvar) {
    typedef typename Acc<T>::type A;
    for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < C;
         c += (int64_t)gridDim.x * blockDim.x) {
        Wf w = part[c * chunks];
        for (int64_t k = 1; k < chunks; k++) w = wf_merge(w, part[c * chunks + k]);
        const A mean = (A)w.mean, inv = (A)(1.0 / sqrt(w.m2 / w.n + eps));
        sv[c] = mean;
        sv[C + c] = inv;
        if (smean) smean[c] = mean;
        if (sinv) sinv[c] = inv;
        if (rmean) st<T, double>(rmean + c, (1 - momentum) * ld<T, double>(rmean + c) + momentum * w.mean);
        if (rvar) st<T, double>(rvar + c, (1 - momentum) * ld<T, double>(rvar + c) +
                                              momentum * (w.m2 / (w.n - 1)));
    }
}

/* eval mode: mean / invstd from the running statistics */
template <typename T>
__global__ void bn_running_stats(const T *rmean, const T *rvar, int64_t C, double eps,
                                 typename Acc<T>::type *sv) {
    typedef typename Acc<T>::type A;
    for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < C;
         c += (int64_t)gridDim.x * blockDim.x) {
        sv[c] = ld<T, A>(rmean + c);
        sv[C + c] = (A)1 / sqrt(ld<T, A>(rvar + c) + (A)eps);
    }
}

template <typename T>
__global__ void bn_apply(const T *x, const T *w, const T *b, const typename Acc<T>::type *sv,
                         int64_t C, int64_t HW, int64_t total, T *y) {
    typedef typename Acc<T>::type A;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
         e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t c = (e / HW) % C;
        A v = (ld<T, A>(x + e) - sv[c]) * sv[C + c];
        if (w) v = v * ld<T, A>(w + c);
        if (b) v = v + ld<T, A>(b + c);
        st<T, A>(y + e, v);
    }
}

EMC_API int emc_batch_norm_fwd(int dtype, const void *x, const void *w, const void *b,
                               void *running_mean, void *running_var, int64_t N, int64_t C,
                               int64_t HW, int training, double momentum, double eps, void *y,
                               void *save_mean, void *save_invstd, void *stream) {
    if (N < 0 || C < 0 || HW < 0) return emc_set_error(EMC_E_ARG, "emc_batch_norm_fwd");
    const int64_t M = N * HW, total = M * C;
    if (C == 0) return 0;
    if (training && M == 0) return emc_set_error(EMC_E_ARG, "emc_batch_norm_fwd (no values per channel)");
    if (!training && (!running_mean || !running_var))
        return emc_set_error(EMC_E_ARG, "emc_batch_norm_fwd (eval needs running statistics)");
    cudaStream_t s = emc_stream(stream);
    const int64_t chunks = training ? (M + BN_CHUNK - 1) / BN_CHUNK : 0;
    if (chunks > 2147483647LL) return emc_set_error(EMC_E_ARG, "emc_batch_norm_fwd");
    EMC_FLOAT_TYPES(dtype, {
        typedef typename Acc<T>::type A;
        A *stats = NULL;
        int rc = emc_malloc((void **)&stats, sizeof(A) * (size_t)(2 * C), s);
        if (rc) return rc;
        Wf *part = NULL;
        if (training) {
            rc = emc_malloc((void **)&part, sizeof(Wf) * (size_t)(chunks * C), s);
            if (rc) { emc_free(stats); return rc; }
            for (int64_t c0 = 0; c0 < C; c0 += 65535)   /* channels on grid y */
                bn_stats_partial<T><<<dim3((unsigned)chunks, (unsigned)(C - c0 < 65535 ? C - c0 : 65535)),
                                      NB, 0, s>>>((const T *)x, c0, C, HW, M, chunks, part);
            bn_stats_final<T><<<emc_blocks(C), EMC_THREADS, 0, s>>>(
                part, C, chunks, eps, momentum, stats, (A *)save_mean, (A *)save_invstd,
                (T *)running_mean, (T *)running_var);
        } else {
            bn_running_stats<T><<<emc_blocks(C), EMC_THREADS, 0, s>>>(
                (const T *)running_mean, (const T *)running_var, C, eps, stats);
        }
        if (total > 0)
            bn_apply<T><<<emc_blocks(total), EMC_THREADS, 0, s>>>((const T *)x, (const T *)w,
                                                                  (const T *)b, stats, C, HW,
                                                                  total, (T *)y);
        cudaError_t e = cudaGetLastError();
        emc_free(stats);
        if (part) emc_free(part);
        if (e != cudaSuccess) return emc_set_error((int)e, "emc_batch_norm_fwd");
    })
    return 0;
}

/* per (channel, chunk): sum dy and sum dy * (x - mean), in a fixed order */
template <typename T>
__global__ void bn_bwd_partial(const T *dy, const T *x, const typename Acc<T>::type *sv,
                               int64_t c0, int64_t C, int64_t HW, int64_t M, int64_t chunks,
                               double *part) {
    const int64_t c = c0 + blockIdx.y, ch = blockIdx.x;
    const int64_t e0 = ch * BN_CHUNK, e1 = e0 + BN_CHUNK < M ? e0 + BN_CHUNK : M;
    const double mean = (double)sv[c];
    double s1 = 0, s2 = 0;
    for (int64_t e = e0 + threadIdx.x; e < e1; e += NB) {
        const int64_t a = bn_at(e, c, C, HW);
        const double g = ld<T, double>(dy + a);
        s1 += g;
        s2 += g * (ld<T, double>(x + a) - mean);
    }
    s1 = block_sum(s1);
    s2 = block_sum(s2);
    if (threadIdx.x == 0) {
        part[2 * (c * chunks + ch)] = s1;
        part[2 * (c * chunks + ch) + 1] = s2;
    }
}

/* per channel: the sums (sums[c] = sum dy, sums[C + c] = sum dy * xhat), dw, db */
template <typename T>
__global__ void bn_bwd_final(const double *part, const typename Acc<T>::type *sv, int64_t C,
                             int64_t chunks, double *sums, T *dw, T *db) {
    for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < C;
         c += (int64_t)gridDim.x * blockDim.x) {
        double s1 = 0, s2 = 0;
        for (int64_t k = 0; k < chunks; k++) {
            s1 += part[2 * (c * chunks + k)];
            s2 += part[2 * (c * chunks + k) + 1];
        }
        s2 *= (double)sv[C + c];
        sums[c] = s1;
        sums[C + c] = s2;
        if (dw) st<T, double>(dw + c, s2);
        if (db) st<T, double>(db + c, s1);
    }
}

/* training: dx = w invstd (dy - sum(dy) / M - xhat sum(dy xhat) / M); eval: dx = w invstd dy */
template <typename T>
__global__ void bn_bwd_dx(const T *dy, const T *x, const T *w, const typename Acc<T>::type *sv,
                          const double *sums, int64_t C, int64_t HW, int64_t M, int64_t total,
                          bool training, T *dx) {
    typedef typename Acc<T>::type A;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
         e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t c = (e / HW) % C;
        const A inv = sv[C + c], scale = w ? inv * ld<T, A>(w + c) : inv;
        A g = ld<T, A>(dy + e);
        if (training) {
            const A xh = (ld<T, A>(x + e) - sv[c]) * inv;
            g = g - (A)(sums[c] / (double)M) - xh * (A)(sums[C + c] / (double)M);
        }
        st<T, A>(dx + e, g * scale);
    }
}

EMC_API int emc_batch_norm_bwd(int dtype, const void *dy, const void *x, const void *w,
                               const void *running_mean, const void *running_var,
                               const void *save_mean, const void *save_invstd, int64_t N,
                               int64_t C, int64_t HW, int training, double eps, void *dx,
                               void *dw, void *db, void *stream) {
    if (N < 0 || C < 0 || HW < 0) return emc_set_error(EMC_E_ARG, "emc_batch_norm_bwd");
    const int64_t M = N * HW, total = M * C;
    if (C == 0) return 0;
    if (training ? (!save_mean || !save_invstd) : (!running_mean || !running_var))
        return emc_set_error(EMC_E_ARG, "emc_batch_norm_bwd (statistics missing)");
    cudaStream_t s = emc_stream(stream);
    const int64_t chunks = M > 0 ? (M + BN_CHUNK - 1) / BN_CHUNK : 1;
    if (chunks > 2147483647LL) return emc_set_error(EMC_E_ARG, "emc_batch_norm_bwd");
    EMC_FLOAT_TYPES(dtype, {
        typedef typename Acc<T>::type A;
        /* scratch: eval-mode stats [2C] (A), sums [2C] and partials [2 chunks C] (double) */
        char *buf = NULL;
        const size_t stats_bytes = (sizeof(A) * (size_t)(2 * C) + 15) / 16 * 16;
        int rc = emc_malloc((void **)&buf, stats_bytes + sizeof(double) * (size_t)(2 * C + 2 * chunks * C), s);
        if (rc) return rc;
        A *sv = (A *)buf;
        double *sums = (double *)(buf + stats_bytes), *part = sums + 2 * C;
        if (training) {
            cudaMemcpyAsync(sv, save_mean, sizeof(A) * (size_t)C, cudaMemcpyDeviceToDevice, s);
            cudaMemcpyAsync(sv + C, save_invstd, sizeof(A) * (size_t)C, cudaMemcpyDeviceToDevice, s);
        } else {
            bn_running_stats<T><<<emc_blocks(C), EMC_THREADS, 0, s>>>(
                (const T *)running_mean, (const T *)running_var, C, eps, sv);
        }
        if (dw || db || training) {
            if (M > 0)
                for (int64_t c0 = 0; c0 < C; c0 += 65535)
                    bn_bwd_partial<T><<<dim3((unsigned)chunks, (unsigned)(C - c0 < 65535 ? C - c0 : 65535)),
                                        NB, 0, s>>>((const T *)dy, (const T *)x, sv, c0, C, HW, M,
                                                    chunks, part);
            else
                cudaMemsetAsync(part, 0, sizeof(double) * (size_t)(2 * chunks * C), s);
            bn_bwd_final<T><<<emc_blocks(C), EMC_THREADS, 0, s>>>(part, sv, C, chunks, sums,
                                                                  (T *)dw, (T *)db);
        }
        if (dx && total > 0)
            bn_bwd_dx<T><<<emc_blocks(total), EMC_THREADS, 0, s>>>(
                (const T *)dy, (const T *)x, (const T *)w, sv, sums, C, HW, M, total,
                training != 0, (T *)dx);
        cudaError_t e = cudaGetLastError();
        emc_free(buf);
        if (e != cudaSuccess) return emc_set_error((int)e, "emc_batch_norm_bwd");
    })
    return 0;
}
