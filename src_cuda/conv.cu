/* conv2d and its two gradients as implicit GEMMs: the twin of src_c/conv.c,
   without its im2col buffer.  One tiled SIMT kernel (64 x 64 block tile, 4 x 4
   outputs per thread, as gemm.cu's) reads its A and B tiles through a problem
   struct that maps (row, k) and (k, column) to tensor elements, zero outside
   the input (padding, dilation and stride live in those maps).  Groups run on
   grid z.  The weight gradient, whose K (N * Ho * Wo) is long, is cut into
   fixed K chunks whose partial products are summed in chunk order, so results
   do not depend on the launch configuration.  float32 and float64. */
#include "common.cuh"

#define CT_M 64
#define CT_N 64
#define CT_K 16

struct ConvGeom {
    int64_t N, C, H, W, OC, kh, kw, sh, sw, ph, pw, dh, dw, G, Ho, Wo;
    int64_t Cg, OCg, khw;
};

static ConvGeom geom(const ember_conv2d_params *p) {
    ConvGeom g = {p->N, p->C, p->H, p->W, p->OC, p->kh, p->kw, p->sh, p->sw, p->ph, p->pw,
                  p->dh, p->dw, p->groups, p->Ho, p->Wo, 0, 0, 0};
    g.Cg = p->C / p->groups;
    g.OCg = p->OC / p->groups;
    g.khw = p->kh * p->kw;
    return g;
}

/* y[n, g OCg + m, oh, ow]: rows m, k = (c, r, s), columns (n, oh, ow) */
template <typename T> struct FwdProb {
    ConvGeom q;
    const T *x, *w, *bias;
    T *y;
    __device__ T a(int64_t g, int64_t m, int64_t k) const {
        return w[(g * q.OCg + m) * (q.Cg * q.khw) + k];
    }
    __device__ T b(int64_t g, int64_t k, int64_t col) const {
        const int64_t c = k / q.khw, rs = k - c * q.khw, r = rs / q.kw, s = rs - r * q.kw;
        const int64_t P = q.Ho * q.Wo, n = col / P, pix = col - n * P, oh = pix / q.Wo,
                      ow = pix - oh * q.Wo;
        const int64_t h = oh * q.sh - q.ph + r * q.dh, ww = ow * q.sw - q.pw + s * q.dw;
        if (h < 0 || h >= q.H || ww < 0 || ww >= q.W) return (T)0;
        return x[((n * q.C + g * q.Cg + c) * q.H + h) * q.W + ww];
    }
    __device__ void store(int64_t g, int64_t, int64_t m, int64_t col, T v) const {
        const int64_t P = q.Ho * q.Wo, n = col / P, pix = col - n * P, oc = g * q.OCg + m;
        y[(n * q.OC + oc) * P + pix] = bias ? v + bias[oc] : v;
    }
};

/* dx[n, g Cg + c, h, w]: rows c, k = (oc, r, s), columns (n, h, w); the output
   position of a tap must fall on the stride grid */
template <typename T> struct BwdInputProb {
    ConvGeom q;
    const T *dy, *w;
    T *dx;
    __device__ T a(int64_t g, int64_t c, int64_t k) const {
        const int64_t oc = k / q.khw, rs = k - oc * q.khw;
        return w[((g * q.OCg + oc) * q.Cg + c) * q.khw + rs];
    }
    __device__ T b(int64_t g, int64_t k, int64_t col) const {
        const int64_t oc = k / q.khw, rs = k - oc * q.khw, r = rs / q.kw, s = rs - r * q.kw;
        const int64_t P = q.H * q.W, n = col / P, pix = col - n * P, h = pix / q.W,
                      ww = pix - h * q.W;
        const int64_t th = h + q.ph - r * q.dh, tw = ww + q.pw - s * q.dw;
        if (th < 0 || tw < 0 || th % q.sh || tw % q.sw) return (T)0;
        const int64_t oh = th / q.sh, ow = tw / q.sw;
        if (oh >= q.Ho || ow >= q.Wo) return (T)0;
        return dy[((n * q.OC + g * q.OCg + oc) * q.Ho + oh) * q.Wo + ow];
    }
    __device__ void store(int64_t g, int64_t, int64_t c, int64_t col, T v) const {
        const int64_t P = q.H * q.W, n = col / P, pix = col - n * P;
        dx[(n * q.C + g * q.Cg + c) * P + pix] = v;
    }
};

/* dw[g OCg + m, c, r, s]: rows m, k = (n, oh, ow), columns (c, r, s); chunk sp
   of K goes to ws[sp] (or straight to dw when there is one chunk) */
template <typename T> struct BwdWeightProb {
    ConvGeom q;
    const T *x, *dy;
    T *dw, *ws;
    int64_t splits;
    __device__ T a(int64_t g, int64_t m, int64_t k) const {
        const int64_t P = q.Ho * q.Wo, n = k / P, pix = k - n * P;
        return dy[(n * q.OC + g * q.OCg + m) * P + pix];
    }
    __device__ T b(int64_t g, int64_t k, int64_t col) const {
        const int64_t c = col / q.khw, rs = col - c * q.khw, r = rs / q.kw, s = rs - r * q.kw;
        const int64_t P = q.Ho * q.Wo, n = k / P, pix = k - n * P, oh = pix / q.Wo,
                      ow = pix - oh * q.Wo;
        const int64_t h = oh * q.sh - q.ph + r * q.dh, ww = ow * q.sw - q.pw + s * q.dw;
        if (h < 0 || h >= q.H || ww < 0 || ww >= q.W) return (T)0;
        return x[((n * q.C + g * q.Cg + c) * q.H + h) * q.W + ww];
    }
    __device__ void store(int64_t g, int64_t sp, int64_t m, int64_t col, T v) const {
        const int64_t i = (g * q.OCg + m) * (q.Cg * q.khw) + col;
        if (splits == 1) dw[i] = v;
        else ws[sp * (q.OC * q.Cg * q.khw) + i] = v;
    }
};

/* C[g][m, n] = sum_k A[g][m, k] B[g][k, n] over the K chunk of z's split */
template <typename T, typename P>
__global__ void __launch_bounds__(256) igemm(P pr, int64_t M, int64_t NC, int64_t K,
                                             int64_t kchunk, int64_t splits, int64_t nz) {
    __shared__ T As[CT_K][CT_M + 1];
    __shared__ T Bs[CT_K][CT_N + 1];
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const int64_t m0 = (int64_t)blockIdx.y * CT_M, n0 = (int64_t)blockIdx.x * CT_N;
    for (int64_t z = blockIdx.z; z < nz; z += gridDim.z) {
        const int64_t g = z / splits, sp = z - g * splits;
        const int64_t kb = sp * kchunk, ke = kb + kchunk < K ? kb + kchunk : K;
        T acc[4][4];
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 4; j++) acc[i][j] = 0;
        for (int64_t k0 = kb; k0 < ke; k0 += CT_K) {
            for (int e = threadIdx.x; e < CT_K * CT_M; e += 256) {
                const int kk = e % CT_K, mm = e / CT_K;
                const int64_t m = m0 + mm, k = k0 + kk;
                As[kk][mm] = (m < M && k < ke) ? pr.a(g, m, k) : (T)0;
            }
            for (int e = threadIdx.x; e < CT_K * CT_N; e += 256) {
                const int nn = e % CT_N, kk = e / CT_N;
                const int64_t n = n0 + nn, k = k0 + kk;
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
                const int64_t m = m0 + ty + 16 * i, n = n0 + tx + 16 * j;
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

EMC_API int emc_conv2d_fwd(int dtype, const ember_conv2d_params *p, const void *x, const void *w,
                           const void *bias, void *y, void *stream) {
    if (!conv_ok(p)) return emc_set_error(EMC_E_ARG, "emc_conv2d_fwd");
    const ConvGeom q = geom(p);
    const int64_t M = q.OCg, NC = q.N * q.Ho * q.Wo, K = q.Cg * q.khw;
    if (M * NC == 0) return 0;
    cudaStream_t s = emc_stream(stream);
    int rc;
    switch (dtype) {
    case EM_F32: {
        if (K == 0 && !bias) return zero_fill(y, sizeof(float) * (size_t)(q.N * q.OC * q.Ho * q.Wo), s);
        FwdProb<float> pr{q, (const float *)x, (const float *)w, (const float *)bias, (float *)y};
        rc = run_igemm<float>(pr, M, NC, K, K > 0 ? K : 1, 1, q.G, s);
        break;
    }
    case EM_F64: {
        if (K == 0 && !bias) return zero_fill(y, sizeof(double) * (size_t)(q.N * q.OC * q.Ho * q.Wo), s);
        FwdProb<double> pr{q, (const double *)x, (const double *)w, (const double *)bias, (double *)y};
        rc = run_igemm<double>(pr, M, NC, K, K > 0 ? K : 1, 1, q.G, s);
        break;
    }
    default: return emc_set_error(EMC_E_DTYPE, "emc_conv2d_fwd");
    }
    if (rc) return rc;
    EMC_LAUNCHED("emc_conv2d_fwd");
    return 0;
}

EMC_API int emc_conv2d_bwd_input(int dtype, const ember_conv2d_params *p, const void *dy,
                                 const void *w, void *dx, void *stream) {
    if (!conv_ok(p)) return emc_set_error(EMC_E_ARG, "emc_conv2d_bwd_input");
    const ConvGeom q = geom(p);
    const int64_t M = q.Cg, NC = q.N * q.H * q.W, K = q.OCg * q.khw;
    if (M * NC == 0) return 0;
    cudaStream_t s = emc_stream(stream);
    const size_t elems = (size_t)(q.N * q.C * q.H * q.W);
    int rc;
    switch (dtype) {
    case EM_F32: {
        if (K == 0) return zero_fill(dx, sizeof(float) * elems, s);
        BwdInputProb<float> pr{q, (const float *)dy, (const float *)w, (float *)dx};
        rc = run_igemm<float>(pr, M, NC, K, K, 1, q.G, s);
        break;
    }
    case EM_F64: {
        if (K == 0) return zero_fill(dx, sizeof(double) * elems, s);
        BwdInputProb<double> pr{q, (const double *)dy, (const double *)w, (double *)dx};
        rc = run_igemm<double>(pr, M, NC, K, K, 1, q.G, s);
        break;
    }
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

/* the fixed K chunk of the weight gradient: a function of the shape only */
#define CONV_KCHUNK 2048
#define CONV_MAX_SPLITS 256

template <typename T>
static int bwd_weight_t(const ConvGeom &q, const T *x, const T *dy, T *dw, T *db, cudaStream_t s) {
    const int64_t M = q.OCg, NC = q.Cg * q.khw, K = q.N * q.Ho * q.Wo;
    const int64_t nw = q.OC * q.Cg * q.khw;
    if (db && q.OC > 0) {
        bias_grad<T><<<(unsigned)(q.OC < 65535 ? q.OC : 65535), 256, 0, s>>>(dy, q.N, q.OC,
                                                                            q.Ho * q.Wo, db);
        EMC_LAUNCHED("emc_conv2d_bwd_weight");
    }
    if (nw == 0) return 0;
    if (K == 0) return zero_fill(dw, sizeof(T) * (size_t)nw, s);
    int64_t kchunk = CONV_KCHUNK;
    if ((K + kchunk - 1) / kchunk > CONV_MAX_SPLITS) kchunk = (K + CONV_MAX_SPLITS - 1) / CONV_MAX_SPLITS;
    const int64_t splits = (K + kchunk - 1) / kchunk;
    T *ws = NULL;
    if (splits > 1) {
        int rc = emc_malloc((void **)&ws, sizeof(T) * (size_t)(splits * nw), s);
        if (rc) return rc;
    }
    BwdWeightProb<T> pr{q, x, dy, dw, ws, splits};
    int rc = run_igemm<T>(pr, M, NC, K, kchunk, splits, q.G, s);
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
    const ConvGeom q = geom(p);
    cudaStream_t s = emc_stream(stream);
    switch (dtype) {
    case EM_F32:
        return bwd_weight_t<float>(q, (const float *)x, (const float *)dy, (float *)dw,
                                   (float *)dbias, s);
    case EM_F64:
        return bwd_weight_t<double>(q, (const double *)x, (const double *)dy, (double *)dw,
                                    (double *)dbias, s);
    default: return emc_set_error(EMC_E_DTYPE, "emc_conv2d_bwd_weight");
    }
}
