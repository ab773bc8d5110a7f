/* Reductions over K of a contiguous [O, K, I] input: the twin of
   src_c/reduce.c.  Fixed blocking makes results independent of the launch
   configuration and the device: a row (I == 1) is cut into chunks of
   RD_CHUNK elements, thread t of a 256-thread block accumulates elements
   t, t + 256, ... of its chunk in order, and the block combines its threads
   with warp shuffles in a fixed butterfly, then its 8 warps in order; the chunk
   partials are combined by the same kernel.  Columns (I > 1) are accumulated
   serially by one thread each (coalesced across threads); when there are too few
   columns to fill the device, K is cut into runs whose length depends on the
   shape alone (col_chunks), and the runs' partials are combined in order. */
#include "common.cuh"
#include "ember_reduce.h"

#define RD_BLOCK 256
#define RD_CHUNK 32768

__device__ __forceinline__ float a_pow(float x, float p) { return powf(x, p); }
__device__ __forceinline__ double a_pow(double x, double p) { return pow(x, p); }
__device__ __forceinline__ int64_t a_pow(int64_t x, int64_t) { return x; }

/* op: RD_* (norms: RD_ASUM, RD_SSQ about 0, RD_PSUM, RD_AMAX, RD_AMIN, RD_NZ);
   post: 0 none, 1 sqrt, 2 the 1/p-th power, applied to the final value */
template <typename A> struct ScalarOp {
    int op;
    A p;
    int post;
    __device__ A init() const {
        switch (op) {
        case RD_PROD: return (A)1;
        case RD_MAX: return -(A)INFINITY;
        case RD_MIN: case RD_AMIN: return (A)INFINITY;
        default: return (A)0;
        }
    }
    /* NaN propagates through max/min; amax / amin of |x| likewise */
    __device__ A combine(A a, A b) const {
        switch (op) {
        case RD_PROD: return a * b;
        case RD_MAX: case RD_AMAX: return a != a ? a : (b != b || b > a) ? b : a;
        case RD_MIN: case RD_AMIN: return a != a ? a : (b != b || b < a) ? b : a;
        default: return a + b;
        }
    }
    __device__ A map(A x) const {
        switch (op) {
        case RD_ASUM: case RD_AMAX: case RD_AMIN: return x < 0 ? -x : x;
        case RD_SSQ: return x * x;
        case RD_PSUM: return a_pow(x < 0 ? -x : x, p);
        case RD_NZ: return x != 0 ? (A)1 : (A)0;
        default: return x;
        }
    }
    __device__ A fin(A x) const {
        if (post == 1) return (A)sqrt((double)x);
        if (post == 2) return a_pow(x, (A)1 / p);
        return x;
    }
};

template <> __device__ int64_t ScalarOp<int64_t>::init() const {
    switch (op) {
    case RD_PROD: return 1;
    case RD_MAX: return INT64_MIN;
    case RD_MIN: return INT64_MAX;
    default: return 0;
    }
}

template <typename A, typename R>
__device__ A block_combine(A v, const R &r) {
    __shared__ A warp_part[RD_BLOCK / 32];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = r.combine(v, __shfl_xor_sync(0xffffffffu, v, o));
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    if (lane == 0) warp_part[wid] = v;
    __syncthreads();
    A acc = warp_part[0];
    for (int w = 1; w < RD_BLOCK / 32; w++) acc = r.combine(acc, warp_part[w]);
    return acc;
}

/* grid (chunks, O): chunk c of row o -> part[o * chunks + c] (or out when final) */
template <typename T, typename A, typename OT>
__global__ void row_reduce(ScalarOp<A> r, const T *x, int64_t K, int64_t chunks, OT *dst,
                           bool map, double scale, bool fin) {
    const int64_t o = blockIdx.y, c = blockIdx.x;
    const int64_t k0 = c * RD_CHUNK, k1 = k0 + RD_CHUNK < K ? k0 + RD_CHUNK : K;
    const T *row = x + o * K;
    A acc = r.init();
    for (int64_t k = k0 + threadIdx.x; k < k1; k += RD_BLOCK) {
        A v = ld<T, A>(row + k);
        acc = r.combine(acc, map ? r.map(v) : v);
    }
    acc = block_combine(acc, r);
    if (threadIdx.x == 0) {
        if (fin) acc = r.fin(acc);
        if (scale != 1.0) acc = (A)(acc * scale);
        st<OT, A>(dst + o * chunks + c, acc);
    }
}

template <typename T, typename A>
__global__ void col_reduce(ScalarOp<A> r, const T *x, int64_t O, int64_t K, int64_t I, T *out,
                           double scale) {
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < O * I;
         t += (int64_t)gridDim.x * blockDim.x) {
        int64_t o = t / I, i = t - o * I;
        const T *p = x + o * K * I + i;
        A acc = r.init();
        for (int64_t k = 0; k < K; k++) acc = r.combine(acc, r.map(ld<T, A>(p + k * I)));
        acc = r.fin(acc);
        if (scale != 1.0) acc = (A)(acc * scale);
        st<T, A>(out + t, acc);
    }
}

/* runs of K for n columns: none (1) when the columns alone fill the device or K is
   short, else runs of about 64 rows, with at most 2^24 partials and 65535 runs */
static int64_t col_chunks(int64_t K, int64_t n) {
    if (n >= ((int64_t)1 << 17) || K <= 128) return 1;
    int64_t c = (K + 63) / 64;
    const int64_t cap = ((int64_t)1 << 24) / n;
    if (c > cap) c = cap;
    if (c > 65535) c = 65535;
    return c < 1 ? 1 : c;
}

/* thread (column t, run c): rows c * rows .. of column t in order, eight loads in
   flight at a time */
template <typename T, typename A>
__global__ void col_partial(ScalarOp<A> r, const T *x, int64_t O, int64_t K, int64_t I,
                            int64_t rows, A *part) {
    const int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x, c = blockIdx.y;
    if (t >= O * I) return;
    const int64_t o = t / I, i = t - o * I;
    const int64_t k0 = c * rows, k1 = k0 + rows < K ? k0 + rows : K;
    const T *p = x + o * K * I + i;
    A acc = r.init();
    int64_t k = k0;
    for (; k + 8 <= k1; k += 8) {
        A v[8];
#pragma unroll
        for (int u = 0; u < 8; u++) v[u] = ld<T, A>(p + (k + u) * I);
#pragma unroll
        for (int u = 0; u < 8; u++) acc = r.combine(acc, r.map(v[u]));
    }
    for (; k < k1; k++) acc = r.combine(acc, r.map(ld<T, A>(p + k * I)));
    part[c * O * I + t] = acc;
}

template <typename T, typename A>
__global__ void col_combine(ScalarOp<A> r, const A *part, int64_t chunks, int64_t n, T *out,
                            double scale) {
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < n;
         t += (int64_t)gridDim.x * blockDim.x) {
        A acc = part[t];
        for (int64_t c = 1; c < chunks; c++) acc = r.combine(acc, part[c * n + t]);
        acc = r.fin(acc);
        if (scale != 1.0) acc = (A)(acc * scale);
        st<T, A>(out + t, acc);
    }
}

template <typename T, typename A>
static int reduce_t(int op, const T *x, int64_t O, int64_t K, int64_t I, T *out, double scale,
                    cudaStream_t s, double p = 0, int post = 0) {
    ScalarOp<A> r{op, (A)p, post};
    if (O * I == 0) return 0;
    const int64_t rows = I > 1 ? (K + col_chunks(K, O * I) - 1) / col_chunks(K, O * I) : K;
    if (I > 1 && rows < K) {
        const int64_t chunks = (K + rows - 1) / rows;
        A *part = NULL;
        int rc = emc_malloc((void **)&part, sizeof(A) * (size_t)(chunks * O * I), s);
        if (rc) return rc;
        dim3 grid((unsigned)((O * I + EMC_THREADS - 1) / EMC_THREADS), (unsigned)chunks);
        col_partial<T, A><<<grid, EMC_THREADS, 0, s>>>(r, x, O, K, I, rows, part);
        col_combine<T, A><<<emc_blocks(O * I), EMC_THREADS, 0, s>>>(r, part, chunks, O * I, out,
                                                                     scale);
        cudaError_t e = cudaGetLastError();
        emc_free(part);
        if (e != cudaSuccess) return emc_set_error((int)e, "emc_reduce");
        return 0;
    }
    if (I > 1 || K == 0) {
        col_reduce<T, A><<<emc_blocks(O * I), EMC_THREADS, 0, s>>>(r, x, O, K, I, out, scale);
        EMC_LAUNCHED("emc_reduce");
        return 0;
    }
    /* rows on grid y, in batches of 65535 */
    int64_t chunks = (K + RD_CHUNK - 1) / RD_CHUNK;
    A *part = NULL;
    if (chunks > 1) {
        int rc = emc_malloc((void **)&part, sizeof(A) * (size_t)((O < 65535 ? O : 65535) * chunks), s);
        if (rc) return rc;
    }
    for (int64_t o0 = 0; o0 < O; o0 += 65535) {
        const unsigned rows = (unsigned)(O - o0 < 65535 ? O - o0 : 65535);
        if (chunks == 1) {
            row_reduce<T, A, T><<<dim3(1, rows), RD_BLOCK, 0, s>>>(r, x + o0 * K, K, 1, out + o0,
                                                                   true, scale, true);
            continue;
        }
        row_reduce<T, A, A><<<dim3((unsigned)chunks, rows), RD_BLOCK, 0, s>>>(
            r, x + o0 * K, K, chunks, part, true, 1.0, false);
        /* partials are already mapped (|x|): combine them as they are */
        row_reduce<A, A, T><<<dim3(1, rows), RD_BLOCK, 0, s>>>(r, part, chunks, 1, out + o0, false,
                                                               scale, true);
    }
    cudaError_t e = cudaGetLastError();
    if (part) emc_free(part);
    if (e != cudaSuccess) return emc_set_error((int)e, "emc_reduce");
    return 0;
}

EMC_API int emc_norm(int dtype, const void *x, int64_t O, int64_t K, int64_t I, double ord,
                     void *out, void *stream) {
    int op, post = 0;
    if (ord == INFINITY) op = RD_AMAX;
    else if (ord == -INFINITY) op = RD_AMIN;
    else if (ord == 0) op = RD_NZ;
    else if (ord == 1) op = RD_ASUM;
    else if (ord == 2) { op = RD_SSQ; post = 1; }
    else if (ord == ord) { op = RD_PSUM; post = 2; }
    else return emc_set_error(EMC_E_ARG, "emc_norm (ord is NaN)");
    if ((op == RD_AMAX || op == RD_AMIN) && K == 0)
        return emc_set_error(EMC_E_ARG, "emc_norm (inf-norm of an empty extent)");
    cudaStream_t s = emc_stream(stream);
    switch (dtype) {
    case EM_F32: return reduce_t<float, float>(op, (const float *)x, O, K, I, (float *)out, 1.0, s, ord, post);
    case EM_F64: return reduce_t<double, double>(op, (const double *)x, O, K, I, (double *)out, 1.0, s, ord, post);
    case EM_F16: return reduce_t<__half, float>(op, (const __half *)x, O, K, I, (__half *)out, 1.0, s, ord, post);
    case EM_BF16:
        return reduce_t<__nv_bfloat16, float>(op, (const __nv_bfloat16 *)x, O, K, I,
                                              (__nv_bfloat16 *)out, 1.0, s, ord, post);
    default: return emc_set_error(EMC_E_DTYPE, "emc_norm");
    }
}

EMC_API int emc_reduce(int op, int dtype, const void *x, int64_t O, int64_t K, int64_t I,
                       void *out, double scale, void *stream) {
    if (!(op == RD_SUM || op == RD_PROD || op == RD_MAX || op == RD_MIN || op == RD_ASUM ||
          op == RD_AMAX))
        return emc_set_error(EMC_E_OP, "emc_reduce");
    if ((op == RD_MAX || op == RD_MIN) && K == 0)
        return emc_set_error(EMC_E_ARG, "emc_reduce (max/min of an empty extent)");
    cudaStream_t s = emc_stream(stream);
    switch (dtype) {
    case EM_F32: return reduce_t<float, float>(op, (const float *)x, O, K, I, (float *)out, scale, s);
    case EM_F64: return reduce_t<double, double>(op, (const double *)x, O, K, I, (double *)out, scale, s);
    case EM_F16: return reduce_t<__half, float>(op, (const __half *)x, O, K, I, (__half *)out, scale, s);
    case EM_BF16:
        return reduce_t<__nv_bfloat16, float>(op, (const __nv_bfloat16 *)x, O, K, I,
                                              (__nv_bfloat16 *)out, scale, s);
    case EM_I64:
        if (op == RD_ASUM || op == RD_AMAX || scale != 1.0) break;
        return reduce_t<int64_t, int64_t>(op, (const int64_t *)x, O, K, I, (int64_t *)out, 1.0, s);
    default: break;
    }
    return emc_set_error(EMC_E_DTYPE, "emc_reduce");
}

/* --- variance: Welford per thread, Chan's combination in a fixed order ------ */
/* var (root: std) over K; rows (I == 1) take one block each */
template <typename T>
__global__ void var_kernel(const T *x, int64_t O, int64_t K, int64_t I, double corr, bool root,
                           T *var, T *mean) {
    if (I == 1) {
        const int64_t o = blockIdx.x;
        Wf w = {0, 0, 0};
        for (int64_t k = threadIdx.x; k < K; k += RD_BLOCK) w = wf_add(w, ld<T, double>(x + o * K + k));
        w = block_welford(w);
        if (threadIdx.x == 0) {
            double d = w.n - corr, v = d > 0 ? w.m2 / d : (double)NAN;
            st<T, double>(var + o, root ? sqrt(v) : v);
            if (mean) st<T, double>(mean + o, w.n > 0 ? w.mean : (double)NAN);
        }
        return;
    }
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < O * I;
         t += (int64_t)gridDim.x * blockDim.x) {
        int64_t o = t / I, i = t - o * I;
        Wf w = {0, 0, 0};
        for (int64_t k = 0; k < K; k++) w = wf_add(w, ld<T, double>(x + (o * K + k) * I + i));
        double d = w.n - corr, v = d > 0 ? w.m2 / d : (double)NAN;
        st<T, double>(var + t, root ? sqrt(v) : v);
        if (mean) st<T, double>(mean + t, w.n > 0 ? w.mean : (double)NAN);
    }
}

static int var_run(int dtype, const void *x, int64_t O, int64_t K, int64_t I, double correction,
                   bool root, void *var, void *mean, void *stream, const char *where) {
    if (O * I == 0) return 0;
    cudaStream_t s = emc_stream(stream);
    bool row = I == 1;
    if (row && O > 2147483647LL) return emc_set_error(EMC_E_ARG, where);
    unsigned g = row ? (unsigned)O : emc_blocks(O * I);
    unsigned b = row ? RD_BLOCK : EMC_THREADS;
    EMC_FLOAT_TYPES(dtype, var_kernel<T><<<g, b, 0, s>>>((const T *)x, O, K, I, correction, root,
                                                         (T *)var, (T *)mean));
    EMC_LAUNCHED(where);
    return 0;
}

EMC_API int emc_var(int dtype, const void *x, int64_t O, int64_t K, int64_t I, double correction,
                    void *var, void *mean, void *stream) {
    return var_run(dtype, x, O, K, I, correction, false, var, mean, stream, "emc_var");
}

EMC_API int emc_std(int dtype, const void *x, int64_t O, int64_t K, int64_t I, double correction,
                    void *std, void *mean, void *stream) {
    return var_run(dtype, x, O, K, I, correction, true, std, mean, stream, "emc_std");
}

/* --- argmax / argmin: NaN wins, ties keep the first index ------------------ */
template <typename A>
__device__ __forceinline__ bool arg_better(bool is_max, A v, int64_t i, A bv, int64_t bi) {
    if (bi < 0) return true;
    bool vn = v != v, bn = bv != bv;
    if (vn || bn) return vn && (!bn || i < bi);
    if (v == bv) return i < bi;
    return is_max ? v > bv : v < bv;
}

template <typename T>
__global__ void arg_kernel(bool is_max, const T *x, int64_t O, int64_t K, int64_t I, T *vals,
                           int64_t *idx) {
    typedef typename Acc<T>::type A;
    if (I == 1) {
        const int64_t o = blockIdx.x;
        A bv = 0;
        int64_t bi = -1;
        for (int64_t k = threadIdx.x; k < K; k += RD_BLOCK) {
            A v = ld<T, A>(x + o * K + k);
            if (arg_better(is_max, v, k, bv, bi)) { bv = v; bi = k; }
        }
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) {
            A v = __shfl_xor_sync(0xffffffffu, bv, off);
            int64_t i = __shfl_xor_sync(0xffffffffu, bi, off);
            if (i >= 0 && arg_better(is_max, v, i, bv, bi)) { bv = v; bi = i; }
        }
        __shared__ A pv[RD_BLOCK / 32];
        __shared__ int64_t pi[RD_BLOCK / 32];
        if ((threadIdx.x & 31) == 0) { pv[threadIdx.x >> 5] = bv; pi[threadIdx.x >> 5] = bi; }
        __syncthreads();
        if (threadIdx.x == 0) {
            for (int w = 0; w < RD_BLOCK / 32; w++)
                if (pi[w] >= 0 && arg_better(is_max, pv[w], pi[w], bv, bi)) { bv = pv[w]; bi = pi[w]; }
            idx[o] = bi;
            if (vals) st<T, A>(vals + o, bv);
        }
        return;
    }
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < O * I;
         t += (int64_t)gridDim.x * blockDim.x) {
        int64_t o = t / I, i = t - o * I;
        A bv = 0;
        int64_t bi = -1;
        for (int64_t k = 0; k < K; k++) {
            A v = ld<T, A>(x + (o * K + k) * I + i);
            if (arg_better(is_max, v, k, bv, bi)) { bv = v; bi = k; }
        }
        idx[t] = bi;
        if (vals) st<T, A>(vals + t, bv);
    }
}

EMC_API int emc_argreduce(int op, int dtype, const void *x, int64_t O, int64_t K, int64_t I,
                          void *vals, int64_t *idx, void *stream) {
    if (op != RD_MAX && op != RD_MIN) return emc_set_error(EMC_E_OP, "emc_argreduce");
    if (K == 0) return emc_set_error(EMC_E_ARG, "emc_argreduce (empty extent)");
    if (O * I == 0) return 0;
    cudaStream_t s = emc_stream(stream);
    bool row = I == 1;
    unsigned g = row ? (unsigned)O : emc_blocks(O * I);
    unsigned b = row ? RD_BLOCK : EMC_THREADS;
    bool mx = op == RD_MAX;
    if (dtype == EM_I64) {
        arg_kernel<int64_t><<<g, b, 0, s>>>(mx, (const int64_t *)x, O, K, I, (int64_t *)vals, idx);
    } else {
        EMC_FLOAT_TYPES(dtype, arg_kernel<T><<<g, b, 0, s>>>(mx, (const T *)x, O, K, I, (T *)vals, idx));
    }
    EMC_LAUNCHED("emc_argreduce");
    return 0;
}
