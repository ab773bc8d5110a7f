/* conv2d and its two gradients as implicit GEMMs: the twin of src_c/conv.c,
   without its im2col buffer.  One tiled SIMT kernel (64 x 64 block tile, 4 x 4
   outputs per thread, as gemm.cu's) reads its A and B tiles through a problem
   struct that maps (row, k) and (k, column) to tensor elements, zero outside
   the input (padding, dilation and stride live in those maps).  Groups run on
   grid z.  The weight gradient, whose K (N * Ho * Wo) is long, is cut into
   fixed K chunks whose partial products are summed in chunk order, so results
   do not depend on the launch configuration.  Problems whose indices all fit in
   31 bits index in int32 with multiply-shift divisions.  float32 and float64. */
#include "common.cuh"

#define CT_M 64
#define CT_N 64
#define CT_K 16

/* index arithmetic: 64-bit division, or (when every index of the problem fits in
   31 bits) 32-bit indices whose divisions by the fixed sizes are a multiply-high
   and a shift (Granlund-Montgomery, as PyTorch's IntDivider): conv's tile loads
   divide several times per element, and 64-bit division is many instructions */
template <typename I> struct Divider;
template <> struct Divider<int64_t> {
    int64_t d;
    __host__ explicit Divider(int64_t v = 1) : d(v) {}
    __device__ __forceinline__ int64_t div(int64_t n) const { return n / d; }
};
template <> struct Divider<int32_t> {
    uint32_t d, mul, shift;
    __host__ explicit Divider(int64_t v = 1) : d((uint32_t)v) {
        for (shift = 0; shift < 32; shift++)
            if ((1ULL << shift) >= (uint64_t)d) break;
        const uint64_t one = 1;
        mul = (uint32_t)(((one << 32) * ((one << shift) - d)) / d + 1);
    }
    /* n in [0, 2^31) */
    __device__ __forceinline__ int32_t div(int32_t n) const {
        const uint32_t t = __umulhi((uint32_t)n, mul);
        return (int32_t)((t + (uint32_t)n) >> shift);
    }
};

template <typename I> struct ConvGeom {
    I N, C, H, W, OC, kh, kw, sh, sw, ph, pw, dh, dw, G, Ho, Wo;
    I Cg, OCg, khw;
    Divider<I> by_khw, by_kw, by_P, by_Wo, by_HW, by_W, by_sh, by_sw;
};

template <typename I> static ConvGeom<I> geom(const ember_conv2d_params *p) {
    ConvGeom<I> g;
    g.N = (I)p->N; g.C = (I)p->C; g.H = (I)p->H; g.W = (I)p->W; g.OC = (I)p->OC;
    g.kh = (I)p->kh; g.kw = (I)p->kw; g.sh = (I)p->sh; g.sw = (I)p->sw; g.ph = (I)p->ph;
    g.pw = (I)p->pw; g.dh = (I)p->dh; g.dw = (I)p->dw; g.G = (I)p->groups; g.Ho = (I)p->Ho;
    g.Wo = (I)p->Wo;
    g.Cg = (I)(p->C / p->groups);
    g.OCg = (I)(p->OC / p->groups);
    g.khw = (I)(p->kh * p->kw);
    g.by_khw = Divider<I>(g.khw > 0 ? g.khw : 1);
    g.by_kw = Divider<I>(p->kw);
    g.by_P = Divider<I>(p->Ho * p->Wo > 0 ? p->Ho * p->Wo : 1);
    g.by_Wo = Divider<I>(p->Wo > 0 ? p->Wo : 1);
    g.by_HW = Divider<I>(p->H * p->W > 0 ? p->H * p->W : 1);
    g.by_W = Divider<I>(p->W > 0 ? p->W : 1);
    g.by_sh = Divider<I>(p->sh);
    g.by_sw = Divider<I>(p->sw);
    return g;
}

/* whether every element index, tap coordinate and GEMM index of the problem (and
   `extra`, the weight gradient's workspace) is below 2^31 */
static bool fits32(const ember_conv2d_params *p, int64_t extra) {
    const int64_t lim = 2147483647LL - 65536;   /* room for a tile past the end */
    const int64_t Cg = p->C / p->groups;
    const int64_t v[] = {p->N * p->C * p->H * p->W, p->N * p->OC * p->Ho * p->Wo,
                         p->OC * Cg * p->kh * p->kw, p->N * p->Ho * p->Wo * Cg * p->kh * p->kw,
                         p->Ho * p->sh + p->kh * p->dh + p->H + 2 * p->ph,
                         p->Wo * p->sw + p->kw * p->dw + p->W + 2 * p->pw, extra};
    for (int64_t x : v)
        if (x < 0 || x >= lim) return false;
    return true;
}

/* y[n, g OCg + m, oh, ow]: rows m, k = (c, r, s), columns (n, oh, ow) */
template <typename T, typename I> struct FwdProb {
    typedef I Index;
    ConvGeom<I> q;
    const T *x, *w, *bias;
    T *y;
    __device__ T a(I g, I m, I k) const {
        return w[(g * q.OCg + m) * (q.Cg * q.khw) + k];
    }
    __device__ T b(I g, I k, I col) const {
        const I c = q.by_khw.div(k), rs = k - c * q.khw, r = q.by_kw.div(rs), s = rs - r * q.kw;
        const I P = q.Ho * q.Wo, n = q.by_P.div(col), pix = col - n * P, oh = q.by_Wo.div(pix),
                ow = pix - oh * q.Wo;
        const I h = oh * q.sh - q.ph + r * q.dh, ww = ow * q.sw - q.pw + s * q.dw;
        if (h < 0 || h >= q.H || ww < 0 || ww >= q.W) return (T)0;
        return x[((n * q.C + g * q.Cg + c) * q.H + h) * q.W + ww];
    }
    __device__ void store(I g, I, I m, I col, T v) const {
        const I P = q.Ho * q.Wo, n = q.by_P.div(col), pix = col - n * P, oc = g * q.OCg + m;
        y[(n * q.OC + oc) * P + pix] = bias ? v + bias[oc] : v;
    }
};

/* dx[n, g Cg + c, h, w]: rows c, k = (oc, r, s), columns (n, h, w); the output
   position of a tap must fall on the stride grid */
template <typename T, typename I> struct BwdInputProb {
    typedef I Index;
    ConvGeom<I> q;
    const T *dy, *w;
    T *dx;
    __device__ T a(I g, I c, I k) const {
        const I oc = q.by_khw.div(k), rs = k - oc * q.khw;
        return w[((g * q.OCg + oc) * q.Cg + c) * q.khw + rs];
    }
    __device__ T b(I g, I k, I col) const {
        const I oc = q.by_khw.div(k), rs = k - oc * q.khw, r = q.by_kw.div(rs),
                s = rs - r * q.kw;
        const I P = q.H * q.W, n = q.by_HW.div(col), pix = col - n * P, h = q.by_W.div(pix),
                ww = pix - h * q.W;
        const I th = h + q.ph - r * q.dh, tw = ww + q.pw - s * q.dw;
        if (th < 0 || tw < 0) return (T)0;
        const I oh = q.by_sh.div(th), ow = q.by_sw.div(tw);
        if (oh * q.sh != th || ow * q.sw != tw || oh >= q.Ho || ow >= q.Wo) return (T)0;
        return dy[((n * q.OC + g * q.OCg + oc) * q.Ho + oh) * q.Wo + ow];
    }
    __device__ void store(I g, I, I c, I col, T v) const {
        const I P = q.H * q.W, n = q.by_HW.div(col), pix = col - n * P;
        dx[(n * q.C + g * q.Cg + c) * P + pix] = v;
    }
};

/* dw[g OCg + m, c, r, s]: rows m, k = (n, oh, ow), columns (c, r, s); chunk sp
   of K goes to ws[sp] (or straight to dw when there is one chunk) */
template <typename T, typename I> struct BwdWeightProb {
    typedef I Index;
    ConvGeom<I> q;
    const T *x, *dy;
    T *dw, *ws;
    I splits;
    __device__ T a(I g, I m, I k) const {
        const I P = q.Ho * q.Wo, n = q.by_P.div(k), pix = k - n * P;
        return dy[(n * q.OC + g * q.OCg + m) * P + pix];
    }
    __device__ T b(I g, I k, I col) const {
        const I c = q.by_khw.div(col), rs = col - c * q.khw, r = q.by_kw.div(rs),
                s = rs - r * q.kw;
        const I P = q.Ho * q.Wo, n = q.by_P.div(k), pix = k - n * P, oh = q.by_Wo.div(pix),
                ow = pix - oh * q.Wo;
        const I h = oh * q.sh - q.ph + r * q.dh, ww = ow * q.sw - q.pw + s * q.dw;
        if (h < 0 || h >= q.H || ww < 0 || ww >= q.W) return (T)0;
        return x[((n * q.C + g * q.Cg + c) * q.H + h) * q.W + ww];
    }
    __device__ void store(I g, I sp, I m, I col, T v) const {
        const I i = (g * q.OCg + m) * (q.Cg * q.khw) + col;
        if (splits == 1) dw[i] = v;
        else ws[sp * (q.OC * q.Cg * q.khw) + i] = v;
    }
};

/* C[g][m, n] = sum_k A[g][m, k] B[g][k, n] over the K chunk of z's split */
template <typename T, typename P>
__global__ void __launch_bounds__(256) igemm(P pr, int64_t M_, int64_t NC_, int64_t K_,
                                             int64_t kchunk_, int64_t splits_, int64_t nz) {
    typedef typename P::Index I;
    __shared__ T As[CT_K][CT_M + 1];
    __shared__ T Bs[CT_K][CT_N + 1];
    const I M = (I)M_, NC = (I)NC_, K = (I)K_, kchunk = (I)kchunk_, splits = (I)splits_;
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const I m0 = (I)blockIdx.y * CT_M, n0 = (I)blockIdx.x * CT_N;
    for (int64_t z = blockIdx.z; z < nz; z += gridDim.z) {
        const I g = (I)(z / splits_), sp = (I)z - g * splits;
        const I kb = sp * kchunk, ke = kb + kchunk < K ? kb + kchunk : K;
        T acc[4][4];
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 4; j++) acc[i][j] = 0;
        for (I k0 = kb; k0 < ke; k0 += CT_K) {
            for (int e = threadIdx.x; e < CT_K * CT_M; e += 256) {
                const int kk = e % CT_K, mm = e / CT_K;
                const I m = m0 + mm, k = k0 + kk;
                As[kk][mm] = (m < M && k < ke) ? pr.a(g, m, k) : (T)0;
            }
            for (int e = threadIdx.x; e < CT_K * CT_N; e += 256) {
                const int nn = e % CT_N, kk = e / CT_N;
                const I n = n0 + nn, k = k0 + kk;
                Bs[kk][nn] = (n < NC && k < ke) ? pr.b(g, k, n) : (T)0;
            }
            __syncthreads();
#pragma unroll
            for (int kk = 0; kk < CT_K; kk++) {
                T a[4], b[4];
#pragma unroll
                for (int i = 0; i < 4; i++) a[i] = As[kk][ty + 16 * i];
#pragma unroll
                for (int j = 0; j < 4; j++) b[j] = Bs[kk][tx + 16 * j];
#pragma unroll
                for (int i = 0; i < 4; i++)
#pragma unroll
                    for (int j = 0; j < 4; j++) acc[i][j] = fma(a[i], b[j], acc[i][j]);
            }
            __syncthreads();
        }
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const I m = m0 + ty + 16 * i, n = n0 + tx + 16 * j;
                if (m < M && n < NC) pr.store(g, sp, m, n, acc[i][j]);
            }
    }
}

template <typename T, typename P>
static int run_igemm(const P &pr, int64_t M, int64_t NC, int64_t K, int64_t kchunk,
                     int64_t splits, int64_t groups, cudaStream_t s) {
    const int64_t gx = (NC + CT_N - 1) / CT_N, gy = (M + CT_M - 1) / CT_M, nz = groups * splits;
    if (gy > 65535 || gx > 2147483647LL) return emc_set_error(EMC_E_ARG, "conv2d (too large)");
    dim3 grid((unsigned)gx, (unsigned)gy, (unsigned)(nz < 65535 ? nz : 65535));
    igemm<T, P><<<grid, 256, 0, s>>>(pr, M, NC, K, kchunk, splits, nz);
    return 0;
}

static bool conv_ok(const ember_conv2d_params *p) {
    return p->N >= 0 && p->C >= 0 && p->OC >= 0 && p->groups > 0 && p->C % p->groups == 0 &&
           p->OC % p->groups == 0 && p->kh > 0 && p->kw > 0 && p->sh > 0 && p->sw > 0 &&
           p->dh > 0 && p->dw > 0 && p->ph >= 0 && p->pw >= 0 && p->Ho >= 0 && p->Wo >= 0;
}

/* every output of a zero-sized reduction is zero (C/groups == 0, or no rows) */
static int zero_fill(void *dst, size_t bytes, cudaStream_t s) {
    if (bytes) EMC_CHECK(cudaMemsetAsync(dst, 0, bytes, s), "conv2d");
    return 0;
}

/* the forward with index type I */
template <typename T, typename I>
static int fwd_t(const ember_conv2d_params *p, const T *x, const T *w, const T *bias, T *y,
                 cudaStream_t s) {
    const ConvGeom<I> q = geom<I>(p);
    const int64_t M = p->OC / p->groups, NC = p->N * p->Ho * p->Wo,
                  K = p->C / p->groups * p->kh * p->kw;
    FwdProb<T, I> pr{q, x, w, bias, y};
    return run_igemm<T>(pr, M, NC, K, K > 0 ? K : 1, 1, p->groups, s);
}

EMC_API int emc_conv2d_fwd(int dtype, const ember_conv2d_params *p, const void *x, const void *w,
                           const void *bias, void *y, void *stream) {
    if (!conv_ok(p)) return emc_set_error(EMC_E_ARG, "emc_conv2d_fwd");
    const int64_t M = p->OC / p->groups, NC = p->N * p->Ho * p->Wo,
                  K = p->C / p->groups * p->kh * p->kw;
    if (M * NC == 0) return 0;
    cudaStream_t s = emc_stream(stream);
    const size_t elems = (size_t)(p->N * p->OC * p->Ho * p->Wo);
    const bool small = fits32(p, 0);
    int rc;
    switch (dtype) {
    case EM_F32:
        if (K == 0 && !bias) return zero_fill(y, sizeof(float) * elems, s);
        rc = small ? fwd_t<float, int32_t>(p, (const float *)x, (const float *)w,
                                           (const float *)bias, (float *)y, s)
                   : fwd_t<float, int64_t>(p, (const float *)x, (const float *)w,
                                           (const float *)bias, (float *)y, s);
        break;
    case EM_F64:
        if (K == 0 && !bias) return zero_fill(y, sizeof(double) * elems, s);
        rc = small ? fwd_t<double, int32_t>(p, (const double *)x, (const double *)w,
                                            (const double *)bias, (double *)y, s)
                   : fwd_t<double, int64_t>(p, (const double *)x, (const double *)w,
                                            (const double *)bias, (double *)y, s);
        break;
    default: return emc_set_error(EMC_E_DTYPE, "emc_conv2d_fwd");
    }
    if (rc) return rc;
    EMC_LAUNCHED("emc_conv2d_fwd");
    return 0;
}

template <typename T, typename I>
static int bwd_input_t(const ember_conv2d_params *p, const T *dy, const T *w, T *dx,
                       cudaStream_t s) {
    const ConvGeom<I> q = geom<I>(p);
    const int64_t M = p->C / p->groups, NC = p->N * p->H * p->W,
                  K = p->OC / p->groups * p->kh * p->kw;
    BwdInputProb<T, I> pr{q, dy, w, dx};
    return run_igemm<T>(pr, M, NC, K, K, 1, p->groups, s);
}

EMC_API int emc_conv2d_bwd_input(int dtype, const ember_conv2d_params *p, const void *dy,
                                 const void *w, void *dx, void *stream) {
    if (!conv_ok(p)) return emc_set_error(EMC_E_ARG, "emc_conv2d_bwd_input");
    const int64_t M = p->C / p->groups, NC = p->N * p->H * p->W,
                  K = p->OC / p->groups * p->kh * p->kw;
    if (M * NC == 0) return 0;
    cudaStream_t s = emc_stream(stream);
    const size_t elems = (size_t)(p->N * p->C * p->H * p->W);
    const bool small = fits32(p, 0);
    int rc;
    switch (dtype) {
    case EM_F32:
        if (K == 0) return zero_fill(dx, sizeof(float) * elems, s);
        rc = small ? bwd_input_t<float, int32_t>(p, (const float *)dy, (const float *)w,
                                                 (float *)dx, s)
                   : bwd_input_t<float, int64_t>(p, (const float *)dy, (const float *)w,
                                                 (float *)dx, s);
        break;
    case EM_F64:
        if (K == 0) return zero_fill(dx, sizeof(double) * elems, s);
        rc = small ? bwd_input_t<double, int32_t>(p, (const double *)dy, (const double *)w,
                                                  (double *)dx, s)
                   : bwd_input_t<double, int64_t>(p, (const double *)dy, (const double *)w,
                                                  (double *)dx, s);
        break;
    default: return emc_set_error(EMC_E_DTYPE, "emc_conv2d_bwd_input");
    }
    if (rc) return rc;
    EMC_LAUNCHED("emc_conv2d_bwd_input");
    return 0;
}

/* dw[i] = sum of the chunk partials in chunk order */
template <typename T>
__global__ void sum_splits(const T *ws, int64_t splits, int64_t n, T *dw) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        T acc = ws[i];
        for (int64_t sp = 1; sp < splits; sp++) acc += ws[sp * n + i];
        dw[i] = acc;
    }
}

/* dbias[oc] = sum over n and the output plane of dy, one block per channel */
template <typename T>
__global__ void bias_grad(const T *dy, int64_t N, int64_t OC, int64_t P, T *db) {
    for (int64_t oc = blockIdx.x; oc < OC; oc += gridDim.x) {
        T acc = 0;
        for (int64_t e = threadIdx.x; e < N * P; e += 256) {
            const int64_t n = e / P;
            acc += dy[(n * OC + oc) * P + (e - n * P)];
        }
        acc = block_sum(acc);
        if (threadIdx.x == 0) db[oc] = acc;
    }
}

/* the K chunk of the weight gradient, a function of the shape only: small layers have
   few output tiles, so K is split until there are about CONV_BLOCKS blocks (at most
   CONV_MAX_SPLITS chunks, each at least CONV_MIN_KCHUNK long) */
#define CONV_BLOCKS 1024
#define CONV_MAX_SPLITS 256
#define CONV_MIN_KCHUNK 64

static int64_t conv_kchunk(int64_t K, int64_t tiles) {
    int64_t splits = (CONV_BLOCKS + tiles - 1) / tiles;
    if (splits > CONV_MAX_SPLITS) splits = CONV_MAX_SPLITS;
    int64_t kchunk = (K + splits - 1) / splits;
    kchunk = (kchunk + CT_K - 1) / CT_K * CT_K;
    return kchunk < CONV_MIN_KCHUNK ? CONV_MIN_KCHUNK : kchunk;
}

template <typename T>
static int bwd_weight_t(const ember_conv2d_params *p, const T *x, const T *dy, T *dw, T *db,
                        cudaStream_t s) {
    const int64_t OC = p->OC, Cg = p->C / p->groups, khw = p->kh * p->kw;
    const int64_t M = OC / p->groups, NC = Cg * khw, K = p->N * p->Ho * p->Wo;
    const int64_t nw = OC * Cg * khw;
    if (db && OC > 0) {
        bias_grad<T><<<(unsigned)(OC < 65535 ? OC : 65535), 256, 0, s>>>(dy, p->N, OC,
                                                                        p->Ho * p->Wo, db);
        EMC_LAUNCHED("emc_conv2d_bwd_weight");
    }
    if (nw == 0) return 0;
    if (K == 0) return zero_fill(dw, sizeof(T) * (size_t)nw, s);
    const int64_t kchunk = conv_kchunk(K, ((NC + CT_N - 1) / CT_N) * ((M + CT_M - 1) / CT_M) *
                                              p->groups);
    const int64_t splits = (K + kchunk - 1) / kchunk;
    T *ws = NULL;
    if (splits > 1) {
        int rc = emc_malloc((void **)&ws, sizeof(T) * (size_t)(splits * nw), s);
        if (rc) return rc;
    }
    int rc;
    if (fits32(p, splits * nw)) {
        BwdWeightProb<T, int32_t> pr{geom<int32_t>(p), x, dy, dw, ws, (int32_t)splits};
        rc = run_igemm<T>(pr, M, NC, K, kchunk, splits, p->groups, s);
    } else {
        BwdWeightProb<T, int64_t> pr{geom<int64_t>(p), x, dy, dw, ws, splits};
        rc = run_igemm<T>(pr, M, NC, K, kchunk, splits, p->groups, s);
    }
    if (!rc && splits > 1)
        sum_splits<T><<<emc_blocks(nw), EMC_THREADS, 0, s>>>(ws, splits, nw, dw);
    cudaError_t e = cudaGetLastError();
    if (ws) emc_free(ws);
    if (rc) return rc;
    if (e != cudaSuccess) return emc_set_error((int)e, "emc_conv2d_bwd_weight");
    return 0;
}

EMC_API int emc_conv2d_bwd_weight(int dtype, const ember_conv2d_params *p, const void *x,
                                  const void *dy, void *dw, void *dbias, void *stream) {
    if (!conv_ok(p)) return emc_set_error(EMC_E_ARG, "emc_conv2d_bwd_weight");
    cudaStream_t s = emc_stream(stream);
    switch (dtype) {
    case EM_F32:
        return bwd_weight_t<float>(p, (const float *)x, (const float *)dy, (float *)dw,
                                   (float *)dbias, s);
    case EM_F64:
        return bwd_weight_t<double>(p, (const double *)x, (const double *)dy, (double *)dw,
                                    (double *)dbias, s);
    default: return emc_set_error(EMC_E_DTYPE, "emc_conv2d_bwd_weight");
    }
}
