/* Fused scaled-dot-product attention (optionally causal, with dropout): the twin
   of src_c/attention.c for float32 / float64.  One warp per query row walks the
   keys with an online softmax and never forms the L x S scores; the keep bit of
   score (bh, i, j) is the Philox word native_dropout draws for its flat index
   (bh L + i) S + j at (seed, offset), so the backward regenerates the mask and
   a seed gives the CPU's mask.  The backward runs one warp per query row (dQ and
   each row's Di = dO . O) and then one warp per key row (dK, dV): every sum has
   one owner and a fixed order, so results are run-to-run identical. */
#include "common.cuh"
#include "ember_philox.h"
#include "ember_random.h"

#define AT_WARPS 4
#define AT_MAX_NPL 8 /* head dims up to 32 * AT_MAX_NPL */

/* keep bit of flat score index e (ember_random.h's layout, as at_keep) */
__device__ __forceinline__ bool at_keep(int64_t e, uint64_t seed, uint64_t off, uint64_t th) {
    const int64_t per = 4 * EM_PHILOX_BATCH, r = e % per;
    uint32_t w[4];
    em_philox_words((uint64_t)(e / per * EM_PHILOX_BATCH + r % EM_PHILOX_BATCH), off, seed, w);
    return (uint64_t)w[r / EM_PHILOX_BATCH] >= th;
}

/* the keep bits of the 32 scores e0 + lane * step (lanes past n: 0), one per lane */
__device__ __forceinline__ unsigned at_keep_bits(bool drop, int64_t e0, int64_t step, int64_t n,
                                                 uint64_t seed, uint64_t off, uint64_t th) {
    const int lane = threadIdx.x & 31;
    const bool k = !drop || (lane < n && at_keep(e0 + lane * step, seed, off, th));
    return __ballot_sync(0xffffffffu, k);
}

struct AtArgs {
    int64_t BH, L, S;
    int D, Dv, causal, drop;
    double scale, zs;
    uint64_t seed, off, th;
};

/* the warp's dot product of a register row (lane + 32 c) with a global row */
template <typename T, int NPL>
__device__ __forceinline__ T at_dot(const T (&r)[NPL], const T *g, int n) {
    const int lane = threadIdx.x & 31;
    T s = 0;
#pragma unroll
    for (int c = 0; c < NPL; c++) {
        const int d = lane + 32 * c;
        if (d < n) s += r[c] * g[d];
    }
    return warp_sum(s);
}

template <typename T, int NPL>
__device__ __forceinline__ void at_load(T (&r)[NPL], const T *g, int n) {
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int c = 0; c < NPL; c++) {
        const int d = lane + 32 * c;
        r[c] = d < n ? g[d] : (T)0;
    }
}

template <typename T, int NPL>
__global__ void __launch_bounds__(32 * AT_WARPS)
at_fwd(AtArgs a, const T *q, const T *k, const T *v, T *out, T *lse) {
    const int lane = threadIdx.x & 31;
    const T scale = (T)a.scale, zs = (T)a.zs;
    const int64_t rows = a.BH * a.L, nw = (int64_t)gridDim.x * AT_WARPS;
    for (int64_t row = (int64_t)blockIdx.x * AT_WARPS + (threadIdx.x >> 5); row < rows;
         row += nw) {
        const int64_t bh = row / a.L, i = row - bh * a.L;
        T qr[NPL], acc[NPL];
        at_load<T, NPL>(qr, q + row * a.D, a.D);
#pragma unroll
        for (int c = 0; c < NPL; c++) acc[c] = 0;
        T m = -(T)INFINITY, l = 0;
        const int64_t jend = a.causal && i + 1 < a.S ? i + 1 : a.S;
        for (int64_t j0 = 0; j0 < jend; j0 += 32) {
            const int64_t nj = jend - j0 < 32 ? jend - j0 : 32;
            const unsigned keep = at_keep_bits(a.drop, row * a.S + j0, 1, nj, a.seed, a.off, a.th);
            for (int jj = 0; jj < nj; jj++) {
                const int64_t j = j0 + jj;
                const T s = at_dot<T, NPL>(qr, k + (bh * a.S + j) * a.D, a.D) * scale;
                const T mn = s > m ? s : m;
                if (mn == -(T)INFINITY) continue;           /* nothing finite yet */
                const T corr = exp(m - mn), p = exp(s - mn);
                l = l * corr + p;
                const T pz = (keep >> jj) & 1u ? p * (a.drop ? zs : (T)1) : (T)0;
                const T *vr = v + (bh * a.S + j) * a.Dv;
#pragma unroll
                for (int c = 0; c < NPL; c++) {
                    const int d = lane + 32 * c;
                    if (d < a.Dv) acc[c] = acc[c] * corr + pz * vr[d];
                }
                m = mn;
            }
        }
#pragma unroll
        for (int c = 0; c < NPL; c++) {
            const int d = lane + 32 * c;
            if (d < a.Dv) out[row * a.Dv + d] = acc[c] / l;
        }
        if (lane == 0) lse[row] = m + log(l);
    }
}

/* per query row: Di = dO . O, then dQ = scale sum_j dS_ij k_j with
   dS_ij = P_ij (Z_ij dO_i . v_j - Di) */
template <typename T, int NPL>
__global__ void __launch_bounds__(32 * AT_WARPS)
at_bwd_q(AtArgs a, const T *dout, const T *q, const T *k, const T *v, const T *out, const T *lse,
         T *di, T *dq) {
    const int lane = threadIdx.x & 31;
    const T scale = (T)a.scale, zs = (T)a.zs;
    const int64_t rows = a.BH * a.L, nw = (int64_t)gridDim.x * AT_WARPS;
    for (int64_t row = (int64_t)blockIdx.x * AT_WARPS + (threadIdx.x >> 5); row < rows;
         row += nw) {
        const int64_t bh = row / a.L, i = row - bh * a.L;
        T qr[NPL], gr[NPL], acc[NPL];
        at_load<T, NPL>(qr, q + row * a.D, a.D);
        at_load<T, NPL>(gr, dout + row * a.Dv, a.Dv);
        const T Di = at_dot<T, NPL>(gr, out + row * a.Dv, a.Dv), li = lse[row];
        if (lane == 0) di[row] = Di;
#pragma unroll
        for (int c = 0; c < NPL; c++) acc[c] = 0;
        const int64_t jend = a.causal && i + 1 < a.S ? i + 1 : a.S;
        for (int64_t j0 = 0; j0 < jend; j0 += 32) {
            const int64_t nj = jend - j0 < 32 ? jend - j0 : 32;
            const unsigned keep = at_keep_bits(a.drop, row * a.S + j0, 1, nj, a.seed, a.off, a.th);
            for (int jj = 0; jj < nj; jj++) {
                const int64_t j = j0 + jj;
                const T *kr = k + (bh * a.S + j) * a.D;
                const T p = exp(at_dot<T, NPL>(qr, kr, a.D) * scale - li);
                const T z = (keep >> jj) & 1u ? (a.drop ? zs : (T)1) : (T)0;
                const T ds = p * (at_dot<T, NPL>(gr, v + (bh * a.S + j) * a.Dv, a.Dv) * z - Di);
#pragma unroll
                for (int c = 0; c < NPL; c++) {
                    const int d = lane + 32 * c;
                    if (d < a.D) acc[c] += ds * kr[d];
                }
            }
        }
#pragma unroll
        for (int c = 0; c < NPL; c++) {
            const int d = lane + 32 * c;
            if (d < a.D) dq[row * a.D + d] = acc[c] * scale;
        }
    }
}

/* per key row j: dV = sum_i P_ij Z_ij dO_i, dK = scale sum_i dS_ij q_i */
template <typename T, int NPL>
__global__ void __launch_bounds__(32 * AT_WARPS)
at_bwd_kv(AtArgs a, const T *dout, const T *q, const T *k, const T *v, const T *lse,
          const T *di, T *dk, T *dv) {
    const int lane = threadIdx.x & 31;
    const T scale = (T)a.scale, zs = (T)a.zs;
    const int64_t rows = a.BH * a.S, nw = (int64_t)gridDim.x * AT_WARPS;
    for (int64_t row = (int64_t)blockIdx.x * AT_WARPS + (threadIdx.x >> 5); row < rows;
         row += nw) {
        const int64_t bh = row / a.S, j = row - bh * a.S;
        T kr[NPL], vr[NPL], ak[NPL], av[NPL];
        at_load<T, NPL>(kr, k + row * a.D, a.D);
        at_load<T, NPL>(vr, v + row * a.Dv, a.Dv);
#pragma unroll
        for (int c = 0; c < NPL; c++) ak[c] = av[c] = 0;
        const int64_t ibeg = a.causal ? j : 0;
        for (int64_t i0 = ibeg; i0 < a.L; i0 += 32) {
            const int64_t ni = a.L - i0 < 32 ? a.L - i0 : 32;
            const unsigned keep = at_keep_bits(a.drop, (bh * a.L + i0) * a.S + j, a.S, ni,
                                               a.seed, a.off, a.th);
            for (int ii = 0; ii < ni; ii++) {
                const int64_t r = bh * a.L + i0 + ii;
                const T *qr = q + r * a.D, *gr = dout + r * a.Dv;
                const T p = exp(at_dot<T, NPL>(kr, qr, a.D) * scale - lse[r]);
                const T z = (keep >> ii) & 1u ? (a.drop ? zs : (T)1) : (T)0;
                const T ds = p * (at_dot<T, NPL>(vr, gr, a.Dv) * z - di[r]);
#pragma unroll
                for (int c = 0; c < NPL; c++) {
                    const int d = lane + 32 * c;
                    if (d < a.Dv) av[c] += p * z * gr[d];
                    if (d < a.D) ak[c] += ds * qr[d];
                }
            }
        }
#pragma unroll
        for (int c = 0; c < NPL; c++) {
            const int d = lane + 32 * c;
            if (d < a.D) dk[row * a.D + d] = ak[c] * scale;
            if (d < a.Dv) dv[row * a.Dv + d] = av[c];
        }
    }
}

static unsigned at_grid(int64_t rows) {
    const int64_t b = (rows + AT_WARPS - 1) / AT_WARPS;
    return (unsigned)(b < 1 ? 1 : b > 65535LL * 16 ? 65535LL * 16 : b);
}

static int at_npl(int64_t D, int64_t Dv) {
    const int64_t m = D > Dv ? D : Dv;
    return m <= 32 ? 1 : m <= 64 ? 2 : m <= 128 ? 4 : m <= 256 ? 8 : 0;
}

static bool at_setup(AtArgs &a, int64_t BH, int64_t L, int64_t S, int64_t D, int64_t Dv,
                     double scale, int causal, double p, uint64_t seed, uint64_t offset) {
    if (BH < 0 || L < 0 || S < 0 || D < 0 || Dv < 0 || !at_npl(D, Dv) || !(p >= 0 && p < 1))
        return false;
    a.BH = BH; a.L = L; a.S = S; a.D = (int)D; a.Dv = (int)Dv;
    a.causal = causal != 0; a.drop = p > 0;
    a.scale = scale; a.zs = p > 0 ? 1.0 / (1.0 - p) : 1.0;
    a.seed = seed; a.off = offset; a.th = em_prob_threshold(p);
    return true;
}

#define AT_NPL_CASES(npl, T, KERNEL, ...)                                           \
    switch (npl) {                                                                  \
    case 1: KERNEL<T, 1><<<__VA_ARGS__; break;                                     \
    case 2: KERNEL<T, 2><<<__VA_ARGS__; break;                                     \
    case 4: KERNEL<T, 4><<<__VA_ARGS__; break;                                     \
    default: KERNEL<T, 8><<<__VA_ARGS__; break;                                    \
    }

template <typename T>
static void at_fwd_run(const AtArgs &a, int npl, const T *q, const T *k, const T *v, T *out,
                       T *lse, cudaStream_t s) {
    const unsigned g = at_grid(a.BH * a.L);
    AT_NPL_CASES(npl, T, at_fwd, g, 32 * AT_WARPS, 0, s>>>(a, q, k, v, out, lse))
}

EMC_API int emc_sdpa_fwd(int dtype, const void *q, const void *k, const void *v, int64_t BH,
                         int64_t L, int64_t S, int64_t D, int64_t Dv, double scale, int causal,
                         double p, uint64_t seed, uint64_t offset, void *out, void *lse,
                         void *stream) {
    if (dtype != EM_F32 && dtype != EM_F64) return emc_set_error(EMC_E_DTYPE, "emc_sdpa_fwd");
    AtArgs a;
    if (!at_setup(a, BH, L, S, D, Dv, scale, causal, p, seed, offset))
        return emc_set_error(EMC_E_ARG, "emc_sdpa_fwd");
    if (BH * L == 0) return 0;
    if (S == 0) return emc_set_error(EMC_E_ARG, "emc_sdpa_fwd (no keys)");
    cudaStream_t s = emc_stream(stream);
    const int npl = at_npl(D, Dv);
    if (dtype == EM_F32)
        at_fwd_run<float>(a, npl, (const float *)q, (const float *)k, (const float *)v,
                          (float *)out, (float *)lse, s);
    else
        at_fwd_run<double>(a, npl, (const double *)q, (const double *)k, (const double *)v,
                           (double *)out, (double *)lse, s);
    EMC_LAUNCHED("emc_sdpa_fwd");
    return 0;
}

template <typename T>
static int at_bwd_run(const AtArgs &a, int npl, const T *g, const T *q, const T *k, const T *v,
                      const T *out, const T *lse, T *dq, T *dk, T *dv, cudaStream_t s) {
    T *di = NULL;
    int rc = emc_malloc((void **)&di, sizeof(T) * (size_t)(a.BH * a.L > 0 ? a.BH * a.L : 1), s);
    if (rc) return rc;
    if (a.BH * a.L) {
        const unsigned gq = at_grid(a.BH * a.L);
        AT_NPL_CASES(npl, T, at_bwd_q, gq, 32 * AT_WARPS, 0, s>>>(a, g, q, k, v, out, lse, di, dq))
    }
    if (a.BH * a.S) {
        const unsigned gk = at_grid(a.BH * a.S);
        AT_NPL_CASES(npl, T, at_bwd_kv, gk, 32 * AT_WARPS, 0, s>>>(a, g, q, k, v, lse, di, dk, dv))
    }
    cudaError_t e = cudaGetLastError();
    emc_free(di);
    return e == cudaSuccess ? 0 : emc_set_error((int)e, "emc_sdpa_bwd");
}

EMC_API int emc_sdpa_bwd(int dtype, const void *dout, const void *q, const void *k, const void *v,
                         const void *out, const void *lse, int64_t BH, int64_t L, int64_t S,
                         int64_t D, int64_t Dv, double scale, int causal, double p, uint64_t seed,
                         uint64_t offset, void *dq, void *dk, void *dv, void *stream) {
    if (dtype != EM_F32 && dtype != EM_F64) return emc_set_error(EMC_E_DTYPE, "emc_sdpa_bwd");
    AtArgs a;
    if (!at_setup(a, BH, L, S, D, Dv, scale, causal, p, seed, offset))
        return emc_set_error(EMC_E_ARG, "emc_sdpa_bwd");
    if (BH * (L + S) == 0) return 0;
    cudaStream_t s = emc_stream(stream);
    const int npl = at_npl(D, Dv);
    if (dtype == EM_F32)
        return at_bwd_run<float>(a, npl, (const float *)dout, (const float *)q, (const float *)k,
                                 (const float *)v, (const float *)out, (const float *)lse,
                                 (float *)dq, (float *)dk, (float *)dv, s);
    return at_bwd_run<double>(a, npl, (const double *)dout, (const double *)q, (const double *)k,
                              (const double *)v, (const double *)out, (const double *)lse,
                              (double *)dq, (double *)dk, (double *)dv, s);
}
