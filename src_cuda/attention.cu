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

/* ---- float32, head dims up to 128: 64 x 64 tiles in shared memory ---------------
   256 threads as 16 x 16; thread (ty, tx) owns tile rows ty + 16 i and columns
   tx + 16 j (i, j < 4) of each 64 x 64 score tile, and output columns tx + 16 k.
   Score tiles read four head-dim elements per load: a row stride of a multiple
   of 8 plus 4 (at_ld) keeps those 16-byte loads free of bank conflicts.  Every
   output element still has one owner and a fixed summation order, so results
   do not depend on the launch. */
#define AT_T 64
#define AT_TP (AT_T + 4) /* score tiles: rows 16-byte aligned */

/* the shared-memory row stride of a tile with n columns */
__host__ __device__ __forceinline__ int at_ld(int n) { return (n + 7) / 8 * 8 + 4; }

/* rows r0.. of a (rows x n) global matrix into a (64 x at_ld(n)) tile; zeros past
   `rows` and in the columns up to the next multiple of 4 */
__device__ __forceinline__ void at_tile_load(float *t, const float *g, int64_t r0,
                                             int64_t rows, int n) {
    const int n4 = (n + 3) & ~3, ld = at_ld(n);
    for (int e = threadIdx.x; e < AT_T * n4; e += blockDim.x) {
        const int r = e / n4, d = e - r * n4;
        t[r * ld + d] = r0 + r < rows && d < n ? g[(r0 + r) * n + d] : 0.f;
    }
}

/* s[i][j] = sum_d A[ty + 16 i][d] B[tx + 16 j][d] over two row-major tiles of n columns */
__device__ __forceinline__ void at_mm_abt(float (&s)[4][4], const float *A, const float *B,
                                          int n) {
    const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4, ld = at_ld(n);
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) s[i][j] = 0.f;
    for (int d = 0; d < n; d += 4) {
        float4 a[4], b[4];
#pragma unroll
        for (int i = 0; i < 4; i++) a[i] = *(const float4 *)&A[(ty + 16 * i) * ld + d];
#pragma unroll
        for (int j = 0; j < 4; j++) b[j] = *(const float4 *)&B[(tx + 16 * j) * ld + d];
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 4; j++)
                s[i][j] += a[i].x * b[j].x + a[i].y * b[j].y + a[i].z * b[j].z + a[i].w * b[j].w;
    }
}

/* the tile column of a thread's k-th output column: groups of four adjacent
   columns (read as one 16-byte load) when each thread has four or more */
template <int NC> __device__ __forceinline__ int at_col(int k) {
    const int tx = threadIdx.x & 15;
    return NC >= 4 ? (k >> 2) * 64 + 4 * tx + (k & 3) : tx + 16 * k;
}

/* acc[i][k] += sum_c P(ty + 16 i, c) M[c][at_col(k)] over a score tile P, stored
   row-major (TP false) or transposed, and a tile M of n columns */
template <int NC, bool TP>
__device__ __forceinline__ void at_mm_acc(float (&acc)[4][NC], const float *P, const float *M,
                                          int n) {
    const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4, ldm = at_ld(n);
    const int n4 = (n + 3) & ~3;
    for (int c = 0; c < AT_T; c += 4) {
        float p[4][4], m[4][NC];
#pragma unroll
        for (int i = 0; i < 4; i++) {
            if (!TP) {
                const float4 v = *(const float4 *)&P[(ty + 16 * i) * AT_TP + c];
                p[i][0] = v.x; p[i][1] = v.y; p[i][2] = v.z; p[i][3] = v.w;
            } else {
#pragma unroll
                for (int u = 0; u < 4; u++) p[i][u] = P[(c + u) * AT_TP + ty + 16 * i];
            }
        }
#pragma unroll
        for (int u = 0; u < 4; u++) {
            if (NC >= 4) {
#pragma unroll
                for (int g = 0; g < NC / 4; g++) {
                    const int col = g * 64 + 4 * tx;
                    const float4 v = col < n4 ? *(const float4 *)&M[(c + u) * ldm + col]
                                              : make_float4(0.f, 0.f, 0.f, 0.f);
                    m[u][4 * g] = v.x; m[u][4 * g + 1] = v.y;
                    m[u][4 * g + 2] = v.z; m[u][4 * g + 3] = v.w;
                }
            } else {
#pragma unroll
                for (int k = 0; k < NC; k++)
                    m[u][k] = tx + 16 * k < n ? M[(c + u) * ldm + tx + 16 * k] : 0.f;
            }
        }
#pragma unroll
        for (int u = 0; u < 4; u++)
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int k = 0; k < NC; k++) acc[i][k] += p[i][u] * m[u][k];
    }
}

/* whether query row i may see key j, both inside the matrices */
__device__ __forceinline__ bool at_visible(const AtArgs &a, int64_t i, int64_t j) {
    return i < a.L && j < a.S && (!a.causal || j <= i);
}

/* the dropout factor of score (row, j): 1 without dropout, else 0 or 1 / (1 - p) */
__device__ __forceinline__ float at_z(const AtArgs &a, int64_t row, int64_t j) {
    return !a.drop ? 1.f : at_keep(row * a.S + j, a.seed, a.off, a.th) ? (float)a.zs : 0.f;
}

/* one block per (bh, 64 query rows); online softmax over 64-key tiles */
template <int NC>
__global__ void __launch_bounds__(256)
at_fwd_tiled(AtArgs a, const float *q, const float *k, const float *v, float *out, float *lse) {
    extern __shared__ float sm[];
    const int D = a.D, Dv = a.Dv, ld = at_ld(D), ldv = at_ld(Dv);
    float *Qs = sm, *Ks = Qs + AT_T * ld, *Vs = Ks + AT_T * ld, *Ps = Vs + AT_T * ldv;
    const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
    const int64_t nqb = (a.L + AT_T - 1) / AT_T, bh = blockIdx.x / nqb;
    const int64_t i0 = (blockIdx.x - bh * nqb) * AT_T;
    const float scale = (float)a.scale;
    at_tile_load(Qs, q + bh * a.L * D, i0, a.L, D);
    float m[4], l[4], acc[4][NC];
#pragma unroll
    for (int i = 0; i < 4; i++) {
        m[i] = -INFINITY;
        l[i] = 0.f;
#pragma unroll
        for (int c = 0; c < NC; c++) acc[i][c] = 0.f;
    }
    const int64_t rlast = i0 + AT_T < a.L ? i0 + AT_T : a.L;
    const int64_t jend = a.causal && rlast < a.S ? rlast : a.S;
    for (int64_t j0 = 0; j0 < jend; j0 += AT_T) {
        __syncthreads();                      /* the last tile's readers are done */
        at_tile_load(Ks, k + bh * a.S * D, j0, a.S, D);
        at_tile_load(Vs, v + bh * a.S * Dv, j0, a.S, Dv);
        __syncthreads();
        float s[4][4];
        at_mm_abt(s, Qs, Ks, D);
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int64_t r = i0 + ty + 16 * i;
            float mx = -INFINITY;
#pragma unroll
            for (int j = 0; j < 4; j++) {
                s[i][j] = at_visible(a, r, j0 + tx + 16 * j) ? s[i][j] * scale : -INFINITY;
                mx = fmaxf(mx, s[i][j]);
            }
#pragma unroll
            for (int o = 8; o; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
            const float mn = fmaxf(m[i], mx);
            const float corr = mn == -INFINITY ? 1.f : expf(m[i] - mn);
            float ps = 0.f;
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const float p = s[i][j] == -INFINITY ? 0.f : expf(s[i][j] - mn);
                ps += p;
                Ps[(ty + 16 * i) * AT_TP + tx + 16 * j] =
                    p == 0.f ? 0.f : p * at_z(a, bh * a.L + r, j0 + tx + 16 * j);
            }
#pragma unroll
            for (int o = 8; o; o >>= 1) ps += __shfl_xor_sync(0xffffffffu, ps, o);
            l[i] = l[i] * corr + ps;
            m[i] = mn;
#pragma unroll
            for (int c = 0; c < NC; c++) acc[i][c] *= corr;
        }
        __syncthreads();
        at_mm_acc<NC, false>(acc, Ps, Vs, Dv);
    }
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const int64_t r = i0 + ty + 16 * i;
        if (r >= a.L) continue;
        const int64_t row = bh * a.L + r;
#pragma unroll
        for (int c = 0; c < NC; c++)
            if (at_col<NC>(c) < Dv) out[row * Dv + at_col<NC>(c)] = acc[i][c] / l[i];
        if (tx == 0) lse[row] = m[i] + logf(l[i]);
    }
}

/* P and dS of one (query tile, key tile) pair, from the tiles in shared memory:
   P = exp(scale Q K^T - lse), dS = P (Z dO V^T - Di); pz = P Z */
__device__ __forceinline__ void at_bwd_scores(const AtArgs &a, int64_t bh, int64_t i0, int64_t j0,
                                              const float *Qs, const float *Ks, const float *Gs,
                                              const float *Vs, const float *lse, const float *di,
                                              float (&pz)[4][4], float (&ds)[4][4]) {
    const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
    float s[4][4], dp[4][4];
    at_mm_abt(s, Qs, Ks, a.D);
    at_mm_abt(dp, Gs, Vs, a.Dv);
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const int64_t r = i0 + ty + 16 * i, row = bh * a.L + r;
        const float li = r < a.L ? lse[row] : 0.f, dii = r < a.L ? di[row] : 0.f;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int64_t c = j0 + tx + 16 * j;
            if (!at_visible(a, r, c)) {
                pz[i][j] = ds[i][j] = 0.f;
                continue;
            }
            const float p = expf(s[i][j] * (float)a.scale - li), z = at_z(a, row, c);
            pz[i][j] = p * z;
            ds[i][j] = p * (dp[i][j] * z - dii);
        }
    }
}

/* one block per (bh, 64 query rows): Di = dO . O for its rows, then dQ */
template <int NC>
__global__ void __launch_bounds__(256)
at_bwd_q_tiled(AtArgs a, const float *g, const float *q, const float *k, const float *v,
               const float *out, const float *lse, float *di, float *dq) {
    extern __shared__ float sm[];
    const int D = a.D, Dv = a.Dv, ld = at_ld(D), ldv = at_ld(Dv);
    float *Qs = sm, *Gs = Qs + AT_T * ld, *Ks = Gs + AT_T * ldv, *Vs = Ks + AT_T * ld;
    float *Ss = Vs + AT_T * ldv;
    const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4, lane = threadIdx.x & 31;
    const int64_t nqb = (a.L + AT_T - 1) / AT_T, bh = blockIdx.x / nqb;
    const int64_t i0 = (blockIdx.x - bh * nqb) * AT_T;
    at_tile_load(Qs, q + bh * a.L * D, i0, a.L, D);
    at_tile_load(Gs, g + bh * a.L * Dv, i0, a.L, Dv);
    /* Di: a warp per row, lanes over the columns in a fixed order */
    for (int r = threadIdx.x >> 5; r < AT_T; r += blockDim.x >> 5) {
        if (i0 + r >= a.L) break;
        const int64_t row = bh * a.L + i0 + r;
        float t = 0.f;
        for (int d = lane; d < Dv; d += 32) t += g[row * Dv + d] * out[row * Dv + d];
        t = warp_sum(t);
        if (lane == 0) di[row] = t;
    }
    float acc[4][NC];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int c = 0; c < NC; c++) acc[i][c] = 0.f;
    const int64_t rlast = i0 + AT_T < a.L ? i0 + AT_T : a.L;
    const int64_t jend = a.causal && rlast < a.S ? rlast : a.S;
    for (int64_t j0 = 0; j0 < jend; j0 += AT_T) {
        __syncthreads();      /* Di written; the last tile's readers are done */
        at_tile_load(Ks, k + bh * a.S * D, j0, a.S, D);
        at_tile_load(Vs, v + bh * a.S * Dv, j0, a.S, Dv);
        __syncthreads();
        float pz[4][4], ds[4][4];
        at_bwd_scores(a, bh, i0, j0, Qs, Ks, Gs, Vs, lse, di, pz, ds);
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 4; j++) Ss[(ty + 16 * i) * AT_TP + tx + 16 * j] = ds[i][j];
        __syncthreads();
        at_mm_acc<NC, false>(acc, Ss, Ks, D);
    }
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const int64_t r = i0 + ty + 16 * i;
        if (r >= a.L) continue;
#pragma unroll
        for (int c = 0; c < NC; c++)
            if (at_col<NC>(c) < D)
                dq[(bh * a.L + r) * D + at_col<NC>(c)] = acc[i][c] * (float)a.scale;
    }
}

/* one block per (bh, 64 key rows): dV = (P Z)^T dO and dK = scale dS^T Q */
template <int NC>
__global__ void __launch_bounds__(256)
at_bwd_kv_tiled(AtArgs a, const float *g, const float *q, const float *k, const float *v,
                const float *lse, const float *di, float *dk, float *dv) {
    extern __shared__ float sm[];
    const int D = a.D, Dv = a.Dv, ld = at_ld(D), ldv = at_ld(Dv);
    float *Ks = sm, *Vs = Ks + AT_T * ld, *Qs = Vs + AT_T * ldv, *Gs = Qs + AT_T * ld;
    float *Ps = Gs + AT_T * ldv, *Ss = Ps + AT_T * AT_TP;
    const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
    const int64_t nkb = (a.S + AT_T - 1) / AT_T, bh = blockIdx.x / nkb;
    const int64_t j0 = (blockIdx.x - bh * nkb) * AT_T;
    at_tile_load(Ks, k + bh * a.S * D, j0, a.S, D);
    at_tile_load(Vs, v + bh * a.S * Dv, j0, a.S, Dv);
    float ak[4][NC], av[4][NC];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int c = 0; c < NC; c++) ak[i][c] = av[i][c] = 0.f;
    /* causal: query rows before j0 see none of these keys */
    for (int64_t i0 = a.causal ? j0 / AT_T * AT_T : 0; i0 < a.L; i0 += AT_T) {
        __syncthreads();
        at_tile_load(Qs, q + bh * a.L * D, i0, a.L, D);
        at_tile_load(Gs, g + bh * a.L * Dv, i0, a.L, Dv);
        __syncthreads();
        float pz[4][4], ds[4][4];
        at_bwd_scores(a, bh, i0, j0, Qs, Ks, Gs, Vs, lse, di, pz, ds);
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 4; j++) {
                Ps[(ty + 16 * i) * AT_TP + tx + 16 * j] = pz[i][j];
                Ss[(ty + 16 * i) * AT_TP + tx + 16 * j] = ds[i][j];
            }
        __syncthreads();
        /* key rows are the tiles' columns: read P and dS transposed */
        at_mm_acc<NC, true>(av, Ps, Gs, Dv);
        at_mm_acc<NC, true>(ak, Ss, Qs, D);
    }
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const int64_t c = j0 + ty + 16 * i;
        if (c >= a.S) continue;
        const int64_t row = bh * a.S + c;
#pragma unroll
        for (int n = 0; n < NC; n++) {
            const int d = at_col<NC>(n);
            if (d < D) dk[row * D + d] = ak[i][n] * (float)a.scale;
            if (d < Dv) dv[row * Dv + d] = av[i][n];
        }
    }
}

/* bytes of shared memory for nd tiles of D columns, ndv of Dv and np score tiles */
static size_t at_smem(const AtArgs &a, int nd, int ndv, int np) {
    return sizeof(float) * AT_T * (nd * at_ld(a.D) + ndv * at_ld(a.Dv) + np * AT_TP);
}

/* output columns per thread of the tiled kernels, or 0 where they do not apply: they
   take both head dims <= 128 and `smem` bytes within the device's shared memory */
static int at_tiled_nc(const AtArgs &a, size_t smem) {
    int dev = 0, optin = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) !=
            cudaSuccess || smem > (size_t)optin)
        return 0;
    const int m = a.D > a.Dv ? a.D : a.Dv;
    return m <= 16 ? 1 : m <= 32 ? 2 : m <= 64 ? 4 : m <= 128 ? 8 : 0;
}

/* launch KERNEL<NC> on `blocks` blocks with `smem` bytes of shared memory */
#define AT_TILED_LAUNCH(nc, KERNEL, blocks, smem, s, ...)                                  \
    switch (nc) {                                                                          \
    case 1: at_tiled_go(KERNEL<1>, blocks, smem, s, __VA_ARGS__); break;                   \
    case 2: at_tiled_go(KERNEL<2>, blocks, smem, s, __VA_ARGS__); break;                   \
    case 4: at_tiled_go(KERNEL<4>, blocks, smem, s, __VA_ARGS__); break;                   \
    default: at_tiled_go(KERNEL<8>, blocks, smem, s, __VA_ARGS__); break;                  \
    }

template <typename K, typename... Args>
static void at_tiled_go(K kernel, int64_t blocks, size_t smem, cudaStream_t s, Args... args) {
    if (smem > 48 * 1024)
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    kernel<<<(unsigned)blocks, 256, smem, s>>>(args...);
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

/* float32 with a query tile's worth of rows: the tiled kernel */
static void at_fwd_run(const AtArgs &a, int npl, const float *q, const float *k, const float *v,
                       float *out, float *lse, cudaStream_t s) {
    const size_t smem = at_smem(a, 2, 1, 1);
    const int nc = a.L < AT_T / 2 ? 0 : at_tiled_nc(a, smem);
    if (!nc) {
        const unsigned g = at_grid(a.BH * a.L);
        AT_NPL_CASES(npl, float, at_fwd, g, 32 * AT_WARPS, 0, s>>>(a, q, k, v, out, lse))
        return;
    }
    AT_TILED_LAUNCH(nc, at_fwd_tiled, a.BH * ((a.L + AT_T - 1) / AT_T), smem, s, a, q, k, v,
                    out, lse)
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
        at_fwd_run(a, npl, (const float *)q, (const float *)k, (const float *)v, (float *)out,
                   (float *)lse, s);
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
    const size_t tq = at_smem(a, 2, 2, 1), tk = at_smem(a, 2, 2, 2);
    const int nc = sizeof(T) == sizeof(float) ? at_tiled_nc(a, tk) : 0;
    if (nc) {
        const float *gf = (const float *)g, *qf = (const float *)q, *kf = (const float *)k,
                    *vf = (const float *)v;
        if (a.BH * a.L)
            AT_TILED_LAUNCH(nc, at_bwd_q_tiled, a.BH * ((a.L + AT_T - 1) / AT_T), tq, s, a, gf,
                            qf, kf, vf, (const float *)out, (const float *)lse, (float *)di,
                            (float *)dq)
        if (a.BH * a.S)
            AT_TILED_LAUNCH(nc, at_bwd_kv_tiled, a.BH * ((a.S + AT_T - 1) / AT_T), tk, s, a, gf,
                            qf, kf, vf, (const float *)lse, (const float *)di, (float *)dk,
                            (float *)dv)
    } else if (a.BH * a.L) {
        const unsigned gq = at_grid(a.BH * a.L);
        AT_NPL_CASES(npl, T, at_bwd_q, gq, 32 * AT_WARPS, 0, s>>>(a, g, q, k, v, out, lse, di, dq))
    }
    if (!nc && a.BH * a.S) {
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
