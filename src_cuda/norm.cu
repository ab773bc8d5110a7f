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

EMC_API int emc_softmax(int log, int dtype, const void *x, int64_t O, int64_t K, int64_t I,
                        void *out, void *stream) {
    if (O * I == 0 || K == 0) return 0;
    cudaStream_t s = emc_stream(stream);
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
