/* GEMM: the twin of src_c/gemm.c.  Row-major operands, transposes by index,
   batches on grid z.
   - float32 ("highest" precision) and float64: tiled SIMT kernels (sgemm_tiles
     for whole 128x128x8 tiles, gemm_simt for the rest).
   - float16/bfloat16, and float32 when TF32 is allowed ("high"/"medium"): on
     Hopper (sm_90a) gemm_ws, TMA + wgmma with fp32 accumulation (TF32 for A @ B.T
     only, the layout wgmma reads for 32-bit operands); elsewhere gemm_tc,
     mma.sync tensor cores (the float inputs rounded to TF32); both for any shape
     whose operand rows are 16-byte aligned; gemm_wmma (WMMA, element-wise loads)
     for the rest. */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <mma.h>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include "common.cuh"
#include "gemm_tc.cuh"

using namespace nvcuda;

#define SB_M 64
#define SB_N 64
#define SB_K 16

template <typename T>
__device__ __forceinline__ T ld_op(const T *X, bool t, int64_t ld, int64_t r, int64_t c, int64_t R,
                                   int64_t C) {
    /* element (r, c) of op(X), an R x C matrix; zero outside */
    if (r >= R || c >= C) return (T)0;
    return t ? X[c * ld + r] : X[r * ld + c];
}

template <typename T>
__global__ void __launch_bounds__(256) gemm_simt(bool ta, bool tb, int64_t M, int64_t N, int64_t K,
                                                 T alpha, const T *A, int64_t lda, int64_t sA,
                                                 const T *B, int64_t ldb, int64_t sB, T beta, T *C,
                                                 int64_t ldc, int64_t sC, int64_t batch) {
    __shared__ T As[SB_K][SB_M + 1];
    __shared__ T Bs[SB_K][SB_N + 1];
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const int64_t m0 = (int64_t)blockIdx.y * SB_M, n0 = (int64_t)blockIdx.x * SB_N;
    for (int64_t z = blockIdx.z; z < batch; z += gridDim.z) {
        const T *Az = A + z * sA, *Bz = B + z * sB;
        T *Cz = C + z * sC;
        T acc[4][4];
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 4; j++) acc[i][j] = 0;
        for (int64_t k0 = 0; k0 < K; k0 += SB_K) {
            for (int e = threadIdx.x; e < SB_K * SB_M; e += 256) {
                int kk = e / SB_M, mm = e % SB_M;   /* consecutive threads: consecutive m */
                As[kk][mm] = ld_op(Az, ta, lda, m0 + mm, k0 + kk, M, K);
            }
            for (int e = threadIdx.x; e < SB_K * SB_N; e += 256) {
                int kk = e / SB_N, nn = e % SB_N;
                Bs[kk][nn] = ld_op(Bz, tb, ldb, k0 + kk, n0 + nn, K, N);
            }
            __syncthreads();
#pragma unroll
            for (int kk = 0; kk < SB_K; kk++) {
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
                int64_t m = m0 + ty + 16 * i, n = n0 + tx + 16 * j;
                if (m < M && n < N) {
                    T *c = Cz + m * ldc + n;
                    *c = beta == (T)0 ? alpha * acc[i][j] : alpha * acc[i][j] + beta * *c;
                }
            }
    }
}

/* float32 SIMT for whole tiles: 128x128x8 block tile, 8x8 outputs per thread as two
   4x4 quadrants (so the shared-memory reads are float4s), the next k-slab loaded
   into registers while the current one is multiplied (double-buffered shared
   memory, one barrier per slab).  Other shapes take gemm_simt. */
#define QM 128
#define QN 128
#define QK 8

template <bool TA, bool TB>
__global__ void __launch_bounds__(256) sgemm_tiles(int64_t K, float alpha, const float *A,
                                                   int64_t lda, int64_t sA, const float *B,
                                                   int64_t ldb, int64_t sB, float beta, float *C,
                                                   int64_t ldc, int64_t sC, int64_t batch) {
    __shared__ __align__(16) float As[2][QK][QM];
    __shared__ __align__(16) float Bs[2][QK][QN];
    const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    const int64_t m0 = (int64_t)blockIdx.y * QM, n0 = (int64_t)blockIdx.x * QN;
    /* each thread moves one float4 of each operand per slab */
    const int ar = TA ? tid / 32 : tid / 2, ac = TA ? (tid % 32) * 4 : (tid % 2) * 4;
    const int br = TB ? tid / 2 : tid / 32, bc = TB ? (tid % 2) * 4 : (tid % 32) * 4;
    for (int64_t z = blockIdx.z; z < batch; z += gridDim.z) {
        const float *Az = A + z * sA, *Bz = B + z * sB;
        float *Cz = C + z * sC;
        /* A: !TA rows m (ar) x k (ac..ac+3); TA rows k (ar) x m (ac..). B alike. */
        const float *ap = TA ? Az + ar * lda + m0 + ac : Az + (m0 + ar) * lda + ac;
        const float *bp = TB ? Bz + (n0 + br) * ldb + bc : Bz + br * ldb + n0 + bc;
        const int64_t astep = TA ? QK * lda : QK, bstep = TB ? QK : QK * ldb;
        auto stash = [&](int buf, float4 a, float4 b) {
            if (TA) {
                *reinterpret_cast<float4 *>(&As[buf][ar][ac]) = a;
            } else {
                As[buf][ac][ar] = a.x; As[buf][ac + 1][ar] = a.y;
                As[buf][ac + 2][ar] = a.z; As[buf][ac + 3][ar] = a.w;
            }
            if (TB) {
                Bs[buf][bc][br] = b.x; Bs[buf][bc + 1][br] = b.y;
                Bs[buf][bc + 2][br] = b.z; Bs[buf][bc + 3][br] = b.w;
            } else {
                *reinterpret_cast<float4 *>(&Bs[buf][br][bc]) = b;
            }
        };
        float acc[8][8];
#pragma unroll
        for (int i = 0; i < 8; i++)
#pragma unroll
            for (int j = 0; j < 8; j++) acc[i][j] = 0.0f;
        stash(0, *reinterpret_cast<const float4 *>(ap), *reinterpret_cast<const float4 *>(bp));
        __syncthreads();
        const int64_t slabs = K / QK;
        for (int64_t t = 0; t < slabs; t++) {
            const int cur = (int)(t & 1);
            float4 na, nb;
            if (t + 1 < slabs) {
                na = *reinterpret_cast<const float4 *>(ap + (t + 1) * astep);
                nb = *reinterpret_cast<const float4 *>(bp + (t + 1) * bstep);
            }
#pragma unroll
            for (int k = 0; k < QK; k++) {
                float a[8], b[8];
                *reinterpret_cast<float4 *>(a) = *reinterpret_cast<const float4 *>(&As[cur][k][ty * 4]);
                *reinterpret_cast<float4 *>(a + 4) =
                    *reinterpret_cast<const float4 *>(&As[cur][k][64 + ty * 4]);
                *reinterpret_cast<float4 *>(b) = *reinterpret_cast<const float4 *>(&Bs[cur][k][tx * 4]);
                *reinterpret_cast<float4 *>(b + 4) =
                    *reinterpret_cast<const float4 *>(&Bs[cur][k][64 + tx * 4]);
#pragma unroll
                for (int i = 0; i < 8; i++)
#pragma unroll
                    for (int j = 0; j < 8; j++) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
            }
            if (t + 1 < slabs) stash(cur ^ 1, na, nb);
            __syncthreads();
        }
#pragma unroll
        for (int i = 0; i < 8; i++) {
            const int64_t m = m0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + i - 4);
#pragma unroll
            for (int j = 0; j < 8; j++) {
                const int64_t n = n0 + (j < 4 ? tx * 4 + j : 64 + tx * 4 + j - 4);
                float *c = Cz + m * ldc + n;
                *c = beta == 0.0f ? alpha * acc[i][j] : alpha * acc[i][j] + beta * *c;
            }
        }
        __syncthreads();   /* the next batch reuses buffer 0 */
    }
}

#define TM 128
#define TN 128
#define TK 32

/* the WMMA fragment element type and k-extent for a storage type */
template <typename T> struct Frag { typedef T type; static const int K = 16, PAD = 8; };
template <> struct Frag<float> { typedef wmma::precision::tf32 type; static const int K = 8, PAD = 4; };

template <typename T>
__global__ void __launch_bounds__(256) gemm_wmma(bool ta, bool tb, int64_t M, int64_t N, int64_t K,
                                                 float alpha, const T *A, int64_t lda, int64_t sA,
                                                 const T *B, int64_t ldb, int64_t sB, float beta,
                                                 T *C, int64_t ldc, int64_t sC, int64_t batch) {
    typedef typename Frag<T>::type FT;
    constexpr int FK = Frag<T>::K, APAD = Frag<T>::PAD;
    __shared__ __align__(32) T As[TM][TK + APAD];
    __shared__ __align__(32) T Bs[TK][TN + APAD];
    __shared__ __align__(32) float Cs[8][16][16];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wm = warp / 4, wn = warp % 4;          /* 2 x 4 warps of 64 x 32 */
    const int64_t m0 = (int64_t)blockIdx.y * TM, n0 = (int64_t)blockIdx.x * TN;
    const T zero = from_f<T>(0.0f);
    for (int64_t z = blockIdx.z; z < batch; z += gridDim.z) {
        const T *Az = A + z * sA, *Bz = B + z * sB;
        T *Cz = C + z * sC;
        constexpr int V = 16 / sizeof(T);
        const bool fastA = !ta && lda % V == 0 && ((uintptr_t)Az & 15) == 0;
        const bool fastB = !tb && ldb % V == 0 && ((uintptr_t)Bz & 15) == 0;
        wmma::fragment<wmma::accumulator, 16, 16, FK, float> acc[4][2];
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 2; j++) wmma::fill_fragment(acc[i][j], 0.0f);
        for (int64_t k0 = 0; k0 < K; k0 += TK) {
            /* whole, aligned, untransposed tiles move in 16-byte vectors; the rest
               element by element with bounds checks */
            if (fastA && m0 + TM <= M && k0 + TK <= K) {
                for (int e = threadIdx.x; e < TM * TK / V; e += 256) {
                    int mm = e / (TK / V), kv = (e % (TK / V)) * V;
                    *reinterpret_cast<uint4 *>(&As[mm][kv]) =
                        *reinterpret_cast<const uint4 *>(Az + (m0 + mm) * lda + k0 + kv);
                }
            } else {
                for (int e = threadIdx.x; e < TM * TK; e += 256) {
                    int mm, kk;
                    if (ta) { mm = e % TM; kk = e / TM; } else { kk = e % TK; mm = e / TK; }
                    int64_t m = m0 + mm, k = k0 + kk;
                    As[mm][kk] = (m < M && k < K) ? (ta ? Az[k * lda + m] : Az[m * lda + k]) : zero;
                }
            }
            if (fastB && k0 + TK <= K && n0 + TN <= N) {
                for (int e = threadIdx.x; e < TK * TN / V; e += 256) {
                    int kk = e / (TN / V), nv = (e % (TN / V)) * V;
                    *reinterpret_cast<uint4 *>(&Bs[kk][nv]) =
                        *reinterpret_cast<const uint4 *>(Bz + (k0 + kk) * ldb + n0 + nv);
                }
            } else {
                for (int e = threadIdx.x; e < TK * TN; e += 256) {
                    int kk, nn;
                    if (tb) { kk = e % TK; nn = e / TK; } else { nn = e % TN; kk = e / TN; }
                    int64_t k = k0 + kk, n = n0 + nn;
                    Bs[kk][nn] = (k < K && n < N) ? (tb ? Bz[n * ldb + k] : Bz[k * ldb + n]) : zero;
                }
            }
            __syncthreads();
#pragma unroll
            for (int kk = 0; kk < TK; kk += FK) {
                wmma::fragment<wmma::matrix_a, 16, 16, FK, FT, wmma::row_major> fa[4];
                wmma::fragment<wmma::matrix_b, 16, 16, FK, FT, wmma::row_major> fb[2];
#pragma unroll
                for (int i = 0; i < 4; i++)
                    wmma::load_matrix_sync(fa[i], &As[wm * 64 + i * 16][kk], TK + APAD);
#pragma unroll
                for (int j = 0; j < 2; j++)
                    wmma::load_matrix_sync(fb[j], &Bs[kk][wn * 32 + j * 16], TN + APAD);
                if constexpr (sizeof(T) == 4) {   /* float -> TF32 rounding */
#pragma unroll
                    for (int i = 0; i < 4; i++)
                        for (int t = 0; t < fa[i].num_elements; t++)
                            fa[i].x[t] = wmma::__float_to_tf32(fa[i].x[t]);
#pragma unroll
                    for (int j = 0; j < 2; j++)
                        for (int t = 0; t < fb[j].num_elements; t++)
                            fb[j].x[t] = wmma::__float_to_tf32(fb[j].x[t]);
                }
#pragma unroll
                for (int i = 0; i < 4; i++)
#pragma unroll
                    for (int j = 0; j < 2; j++) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
            }
            __syncthreads();
        }
        /* epilogue: each warp stages one 16x16 tile at a time through shared memory */
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 2; j++) {
                wmma::store_matrix_sync(&Cs[warp][0][0], acc[i][j], 16, wmma::mem_row_major);
                __syncwarp();
                for (int e = lane; e < 256; e += 32) {
                    int r = e / 16, c = e % 16;
                    int64_t m = m0 + wm * 64 + i * 16 + r, n = n0 + wn * 32 + j * 16 + c;
                    if (m < M && n < N) {
                        T *cp = Cz + m * ldc + n;
                        float v = alpha * Cs[warp][r][c];
                        if (beta != 0.0f) v += beta * to_f(*cp);
                        *cp = from_f<T>(v);
                    }
                }
                __syncwarp();
            }
    }
}

/* --- the mma.sync tensor-core kernel ---------------------------------------------------
   TC_BM x TC_BN (128 x 256) block tiles, 8 warps of 64 x 64, K-tiles of 64 bytes
   (32 halves / 16 floats) streamed global->shared by cp.async through TC_STAGES
   buffers.  Fragments come from shared memory by ldmatrix (16-bit operands, .trans
   for the MN-contiguous ones) or scalar loads (TF32 MN-contiguous operands, which
   ldmatrix.trans cannot split), into mma.sync m16n8k16 (f16/bf16) or m16n8k8
   (tf32), fp32 accumulators.  Tiles past M, N or K are zero-filled by cp.async's
   source size, and the epilogue stores only in-range elements, so any M, N, K
   runs here; it needs 16-byte aligned operand rows (tc_eligible). */
__device__ __forceinline__ void cp_async16(uint32_t dst, const void *src, int bytes) {
    /* bytes < 16: the rest of the chunk is zero-filled; 0 reads nothing */
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
                 "r"(bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}
template <bool TRANS> __device__ __forceinline__ void ldsm_x4(uint32_t addr, uint32_t (&r)[4]) {
    if (TRANS)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(addr));
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(addr));
}
__device__ __forceinline__ uint32_t to_tf32(uint32_t bits) {
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(__uint_as_float(bits)));
    return r;
}

template <typename T> __device__ __forceinline__ void mma_tc(float (&c)[4], const uint32_t (&a)[4],
                                                            uint32_t b0, uint32_t b1);
template <> __device__ __forceinline__ void mma_tc<__half>(float (&c)[4], const uint32_t (&a)[4],
                                                          uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <> __device__ __forceinline__ void mma_tc<__nv_bfloat16>(float (&c)[4],
                                                                 const uint32_t (&a)[4],
                                                                 uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <> __device__ __forceinline__ void mma_tc<float>(float (&c)[4], const uint32_t (&a)[4],
                                                         uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* two adjacent outputs (n, n+1) of row p: alpha * acc (+ beta * C); `two` is false
   at the right edge, `vec` when the pair is aligned for one store */
template <typename T>
__device__ __forceinline__ void tc_store2(T *p, float v0, float v1, float alpha, float beta,
                                          bool two, bool vec) {
    v0 *= alpha;
    v1 *= alpha;
    if (two && vec) {
        if constexpr (sizeof(T) == 4) {
            float2 *q = reinterpret_cast<float2 *>(p);
            if (beta != 0.0f) {
                const float2 o = *q;
                v0 += beta * o.x;
                v1 += beta * o.y;
            }
            *q = make_float2(v0, v1);
        } else {
            typedef typename std::conditional<std::is_same<T, __half>::value, __half2,
                                              __nv_bfloat162>::type T2;
            T2 *q = reinterpret_cast<T2 *>(p);
            if (beta != 0.0f) {
                const T2 o = *q;
                v0 += beta * to_f(o.x);
                v1 += beta * to_f(o.y);
            }
            T2 w;
            w.x = from_f<T>(v0);
            w.y = from_f<T>(v1);
            *q = w;
        }
        return;
    }
    if (beta != 0.0f) v0 += beta * to_f(p[0]);
    p[0] = from_f<T>(v0);
    if (two) {
        if (beta != 0.0f) v1 += beta * to_f(p[1]);
        p[1] = from_f<T>(v1);
    }
}

template <typename T, bool TA, bool TB>
__global__ void __launch_bounds__(TC_THREADS, 1)
    gemm_tc(int64_t M, int64_t N, int64_t K, float alpha, const T *A, int64_t lda, int64_t sA,
            const T *B, int64_t ldb, int64_t sB, float beta, T *C, int64_t ldc, int64_t sC,
            int64_t batch, bool cvec) {
    constexpr int E = (int)sizeof(T), V = 16 / E, BK = 64 / E;
    constexpr bool F32 = E == 4;
    constexpr int WA = TC_BM * E / 16, WB = TC_BN * E / 16;   /* chunks per MN-contiguous row */
    constexpr int A_CH = TC_BM * TC_KCH, B_CH = TC_BN * TC_KCH, STAGE_CH = A_CH + B_CH;
    extern __shared__ __align__(128) unsigned char tc_smem[];
    const uint32_t sbase = (uint32_t)__cvta_generic_to_shared(tc_smem);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = warp >> 2, wn = warp & 3;   /* 2 x 4 warps of 64 x 64 */
    const int g = lane >> 2, t = lane & 3;      /* the MMA fragments' group and thread */

    /* block -> tile, in groups of 8 tile rows so that a wave's blocks share operands in L2 */
    const int64_t tiles_m = (M + TC_BM - 1) / TC_BM, tiles_n = (N + TC_BN - 1) / TC_BN;
    const int64_t pid = blockIdx.x, width = 8 * tiles_n, first = pid / width * 8;
    const int64_t gsize = tiles_m - first < 8 ? tiles_m - first : 8;
    const int64_t m0 = (first + pid % width % gsize) * TC_BM, n0 = pid % width / gsize * TC_BN;
    const int KT = (int)((K + BK - 1) / BK);

    for (int64_t z = blockIdx.z; z < batch; z += gridDim.z) {
        const T *Az = A + z * sA, *Bz = B + z * sB;
        T *Cz = C + z * sC;

        /* cp.async one K-tile into a stage; each source chunk carries the bytes
           that lie inside the matrix (V-aligned, so a chunk is whole or cut at the edge) */
        auto load = [&](int stage, int kt) {
            const int64_t k0 = (int64_t)kt * BK;
            const uint32_t sa = sbase + stage * STAGE_CH * 16, sb = sa + A_CH * 16;
#pragma unroll
            for (int i = 0; i < A_CH / TC_THREADS; i++) {
                const int e = tid + i * TC_THREADS;
                int64_t mm, kk;
                int slot;
                if (TA) {   /* rows k, chunks of m */
                    const int r = e / WA, c = e % WA;
                    slot = tc_mn(r, c, WA, F32);
                    kk = k0 + r;
                    mm = m0 + c * V;
                } else {    /* rows m, chunks of k */
                    const int r = e / TC_KCH, c = e % TC_KCH;
                    slot = tc_kc(r, c);
                    mm = m0 + r;
                    kk = k0 + c * V;
                }
                const int64_t rest = TA ? M - mm : K - kk;
                const bool in = TA ? kk < K : mm < M;
                const int bytes = !in || rest <= 0 ? 0 : rest >= V ? 16 : (int)rest * E;
                const T *src = bytes ? (TA ? Az + kk * lda + mm : Az + mm * lda + kk) : Az;
                cp_async16(sa + slot * 16, src, bytes);
            }
#pragma unroll
            for (int i = 0; i < B_CH / TC_THREADS; i++) {
                const int e = tid + i * TC_THREADS;
                int64_t nn, kk;
                int slot;
                if (TB) {   /* rows n, chunks of k */
                    const int r = e / TC_KCH, c = e % TC_KCH;
                    slot = tc_kc(r, c);
                    nn = n0 + r;
                    kk = k0 + c * V;
                } else {    /* rows k, chunks of n */
                    const int r = e / WB, c = e % WB;
                    slot = tc_mn(r, c, WB, F32);
                    kk = k0 + r;
                    nn = n0 + c * V;
                }
                const int64_t rest = TB ? K - kk : N - nn;
                const bool in = TB ? nn < N : kk < K;
                const int bytes = !in || rest <= 0 ? 0 : rest >= V ? 16 : (int)rest * E;
                const T *src = bytes ? (TB ? Bz + nn * ldb + kk : Bz + kk * ldb + nn) : Bz;
                cp_async16(sb + slot * 16, src, bytes);
            }
        };

        float acc[4][8][4];
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 8; j++)
#pragma unroll
                for (int q = 0; q < 4; q++) acc[i][j][q] = 0.0f;

#pragma unroll
        for (int st = 0; st < TC_STAGES - 1; st++) {
            if (st < KT) load(st, st);
            cp_async_commit();
        }
        for (int kt = 0; kt < KT; kt++) {
            cp_async_wait<TC_STAGES - 2>();
            __syncthreads();   /* tile kt landed, and every warp is done with tile kt-1's stage */
            const int next = kt + TC_STAGES - 1;
            if (next < KT) load(next % TC_STAGES, next);
            cp_async_commit();

            const int stage = kt % TC_STAGES;
            const uint32_t sa = sbase + stage * STAGE_CH * 16, sb = sa + A_CH * 16;
            const float *fa = reinterpret_cast<const float *>(tc_smem + stage * STAGE_CH * 16);
            const float *fb = fa + A_CH * 4;
#pragma unroll
            for (int s = 0; s < TC_KCH / 2; s++) {
                uint32_t a[4][4], b[8][2];
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    const int mb = wm * 64 + i * 16;
                    if (!TA) {
                        ldsm_x4<false>(sa + tc_a_kc(lane, mb, s) * 16, a[i]);
                    } else if (!F32) {
                        ldsm_x4<true>(sa + tc_a_mn(lane, mb, s, WA) * 16, a[i]);
                    } else {   /* a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4) as (m, k) */
                        const int k = 8 * s + t;
                        a[i][0] = __float_as_uint(fa[tc_mn_f32(k, mb + g, WA)]);
                        a[i][1] = __float_as_uint(fa[tc_mn_f32(k, mb + g + 8, WA)]);
                        a[i][2] = __float_as_uint(fa[tc_mn_f32(k + 4, mb + g, WA)]);
                        a[i][3] = __float_as_uint(fa[tc_mn_f32(k + 4, mb + g + 8, WA)]);
                    }
                }
#pragma unroll
                for (int jp = 0; jp < 4; jp++) {
                    const int nb = wn * 64 + jp * 16;
                    if (TB || !F32) {
                        uint32_t r[4];
                        if (TB)
                            ldsm_x4<false>(sb + tc_b_kc(lane, nb, s) * 16, r);
                        else
                            ldsm_x4<true>(sb + tc_b_mn(lane, nb, s, WB) * 16, r);
                        b[2 * jp][0] = r[0];
                        b[2 * jp][1] = r[1];
                        b[2 * jp + 1][0] = r[2];
                        b[2 * jp + 1][1] = r[3];
                    } else {   /* b0 (k t, n g), b1 (k t+4, n g) */
                        const int k = 8 * s + t;
#pragma unroll
                        for (int h = 0; h < 2; h++) {
                            b[2 * jp + h][0] = __float_as_uint(fb[tc_mn_f32(k, nb + 8 * h + g, WB)]);
                            b[2 * jp + h][1] =
                                __float_as_uint(fb[tc_mn_f32(k + 4, nb + 8 * h + g, WB)]);
                        }
                    }
                }
                if constexpr (F32) {   /* round to TF32 as torch's allow_tf32 does */
#pragma unroll
                    for (int i = 0; i < 4; i++)
#pragma unroll
                        for (int q = 0; q < 4; q++) a[i][q] = to_tf32(a[i][q]);
#pragma unroll
                    for (int j = 0; j < 8; j++) {
                        b[j][0] = to_tf32(b[j][0]);
                        b[j][1] = to_tf32(b[j][1]);
                    }
                }
#pragma unroll
                for (int i = 0; i < 4; i++)
#pragma unroll
                    for (int j = 0; j < 8; j++) mma_tc<T>(acc[i][j], a[i], b[j][0], b[j][1]);
            }
        }
        cp_async_wait<0>();

        /* epilogue straight from the accumulators: c0, c1 at (g, 2t..2t+1), c2, c3 at (g+8, ..) */
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int64_t m = m0 + wm * 64 + i * 16 + g + 8 * h;
                if (m >= M) continue;
#pragma unroll
                for (int j = 0; j < 8; j++) {
                    const int64_t n = n0 + wn * 64 + j * 8 + 2 * t;
                    if (n < N)
                        tc_store2(Cz + m * ldc + n, acc[i][j][2 * h], acc[i][j][2 * h + 1], alpha,
                                  beta, n + 1 < N, cvec);
                }
            }
        __syncthreads();   /* the next batch refills stage 0 */
    }
}

/* bytes of dynamic shared memory of gemm_tc */
#define TC_SMEM (TC_STAGES * (TC_BM + TC_BN) * TC_KCH * 16)

template <typename T, bool TA, bool TB>
static int launch_tc(cudaStream_t s, int64_t M, int64_t N, int64_t K, float alpha, const T *A,
                     int64_t lda, int64_t sA, const T *B, int64_t ldb, int64_t sB, float beta,
                     T *C, int64_t ldc, int64_t sC, int64_t batch, unsigned gz, bool cvec) {
    EMC_CHECK(cudaFuncSetAttribute(gemm_tc<T, TA, TB>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   TC_SMEM),
              "emc_gemm");
    const int64_t tiles = ((M + TC_BM - 1) / TC_BM) * ((N + TC_BN - 1) / TC_BN);
    gemm_tc<T, TA, TB><<<dim3((unsigned)tiles, 1, gz), TC_THREADS, TC_SMEM, s>>>(
        M, N, K, alpha, A, lda, sA, B, ldb, sB, beta, C, ldc, sC, batch, cvec);
    return 1;
}

/* --- Hopper (sm_90a): wgmma ---------------------------------------------------------------
   wgmma reads both operands straight from shared memory through descriptors
   (128-byte swizzle; transposed 16-bit operands through wgmma's own transpose, so
   no ldmatrix and no fragments in registers). */

__global__ void wgmma_probe(int *out) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    *out = 1;
#else
    *out = 0;
#endif
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
__device__ __forceinline__ uint64_t wg_desc(uint32_t addr, uint32_t lbo, uint32_t sbo) {
    return (uint64_t)((addr & 0x3FFFF) >> 4) | (uint64_t)((lbo & 0x3FFFF) >> 4) << 16 |
           (uint64_t)((sbo & 0x3FFFF) >> 4) << 32 | 1ull << 62;   /* 128-byte swizzle */
}
__device__ __forceinline__ void wg_fence_acc(float (&d)[128]) {
#pragma unroll
    for (int i = 0; i < 128; i++) asm volatile("" : "+f"(d[i])::"memory");
}
template <typename T, bool TA, bool TB>
__device__ __forceinline__ void wg_mma(float (&d)[128], uint64_t da, uint64_t db) {
#define WG_OPS(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), \
                  "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define WG_ASM(SHAPE, TY, TRANS)                                                                \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"                                 \
                 "wgmma.mma_async.sync.aligned." SHAPE ".f32." TY "." TY " {"                 \
    "%0, %1, %2, %3, %4, %5, %6, %7," \
    "%8, %9, %10, %11, %12, %13, %14, %15," \
    "%16, %17, %18, %19, %20, %21, %22, %23," \
    "%24, %25, %26, %27, %28, %29, %30, %31," \
    "%32, %33, %34, %35, %36, %37, %38, %39," \
    "%40, %41, %42, %43, %44, %45, %46, %47," \
    "%48, %49, %50, %51, %52, %53, %54, %55," \
    "%56, %57, %58, %59, %60, %61, %62, %63," \
    "%64, %65, %66, %67, %68, %69, %70, %71," \
    "%72, %73, %74, %75, %76, %77, %78, %79," \
    "%80, %81, %82, %83, %84, %85, %86, %87," \
    "%88, %89, %90, %91, %92, %93, %94, %95," \
    "%96, %97, %98, %99, %100, %101, %102, %103," \
    "%104, %105, %106, %107, %108, %109, %110, %111," \
    "%112, %113, %114, %115, %116, %117, %118, %119," \
    "%120, %121, %122, %123, %124, %125, %126, %127" \
                 "}, %128, %129, p, 1, 1" TRANS ";\n}\n"                                       \
                 : WG_OPS(0), WG_OPS(8), WG_OPS(16), WG_OPS(24), WG_OPS(32), WG_OPS(40),         \
                   WG_OPS(48), WG_OPS(56), WG_OPS(64), WG_OPS(72), WG_OPS(80), WG_OPS(88),       \
                   WG_OPS(96), WG_OPS(104), WG_OPS(112), WG_OPS(120)                             \
                 : "l"(da), "l"(db), "r"(1), "n"(TA ? 1 : 0), "n"(TB ? 0 : 1))
    /* TF32 takes both operands K-major only: no transpose immediates */
    if constexpr (std::is_same<T, __half>::value)
        WG_ASM("m64n256k16", "f16", ", %131, %132");
    else if constexpr (std::is_same<T, float>::value)
        WG_ASM("m64n256k8", "tf32", "");
    else
        WG_ASM("m64n256k16", "bf16", ", %131, %132");
#undef WG_ASM
#undef WG_OPS
}
#endif

/* --- the Hopper kernel: TMA, mbarriers and warp specialisation (sm_90a) -----------------
   128 x 256 block tiles; K-tiles of 128 bytes of K (64 halves or 32 floats) arrive by
   TMA (cp.async.bulk.tensor: the copy engine applies the 128-byte swizzle and fills
   zeros past the matrix, so any M, N, K runs) issued by one producer thread through
   WS_STAGES buffers guarded by mbarriers: `full` completes when a stage's bytes have
   landed, `empty` when all 8 consumer warps have finished reading it.  Two consumer
   warpgroups each own 64 rows, issue m64n256 wgmma on the stage through descriptors
   and keep one wgmma group in flight while the producer runs up to WS_STAGES tiles
   ahead; no block-wide barrier in the main loop.  The operands are described by
   3-D tensor maps made on the host (ws_make_map), batches being a coordinate.
   Shared-memory layouts (gemm_tc.cuh): a K-major tile is rows of 128 bytes, chunk c
   of row r at c ^ (r & 7) (wg_kmaj); an MN-major tile (16-bit only: wgmma transposes
   those alone) is 64-column boxes WG_MN_LBO bytes apart (wg_mnmaj). */
#define WS_THREADS 384
#define WS_STAGES 4
#define WG_TILE_A (TC_BM * 128)
#define WG_TILE_B (TC_BN * 128)
#define WS_STAGE_BYTES (WG_TILE_A + WG_TILE_B)
#define WS_SMEM (WS_STAGES * WS_STAGE_BYTES + 1024)

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
__device__ __forceinline__ void mbar_init(uint32_t bar, int count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar),
                 "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
    uint32_t done = 0;
    while (!done)
        asm volatile("{\n.reg .pred p;\n"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(bar), "r"(parity)
                     : "memory");
}
/* one box of a 3-D tensor map into shared memory, completing on `bar` */
__device__ __forceinline__ void tma_load(uint32_t dst, const CUtensorMap *map, uint32_t bar,
                                         int c0, int c1, int c2) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%3, %4, %5}], [%2];\n" ::"r"(dst),
                 "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1), "r"(c2)
                 : "memory");
}
#endif

template <typename T, bool TA, bool TB>
__global__ void __launch_bounds__(WS_THREADS, 1)
    gemm_ws(const __grid_constant__ CUtensorMap tma, const __grid_constant__ CUtensorMap tmb,
            int64_t M, int64_t N, int64_t K, float alpha, float beta, T *C, int64_t ldc,
            int64_t sC, int64_t batch, int bza, int bzb, bool cvec, float *part) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    constexpr int BK = 128 / (int)sizeof(T);   /* elements of K per tile */
    extern __shared__ unsigned char ws_smem[];
    __shared__ __align__(8) uint64_t bars[2 * WS_STAGES];
    /* the swizzle atoms need 1024-byte alignment (WS_SMEM has the slack) */
    const uint32_t sraw = (uint32_t)__cvta_generic_to_shared(ws_smem);
    const uint32_t sbase = (sraw + 1023u) & ~1023u;
    const uint32_t bar0 = (uint32_t)__cvta_generic_to_shared(bars);
    auto full = [&](int s) { return bar0 + 8u * s; };
    auto empty = [&](int s) { return bar0 + 8u * (WS_STAGES + s); };
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, wg = warp >> 2;

    /* block -> tile, in groups of 8 tile rows so that a wave's blocks share operands in L2 */
    const int64_t tiles_m = (M + TC_BM - 1) / TC_BM, tiles_n = (N + TC_BN - 1) / TC_BN;
    const int64_t pid = blockIdx.x, width = 8 * tiles_n, first = pid / width * 8;
    const int64_t gsize = tiles_m - first < 8 ? tiles_m - first : 8;
    const int m0 = (int)((first + pid % width % gsize) * TC_BM);
    const int n0 = (int)(pid % width / gsize * TC_BN);
    /* split K (part != NULL): slice blockIdx.y of gridDim.y takes k-tiles [kt0, kt1) */
    const int KT = (int)((K + BK - 1) / BK);
    const int kt0 = (int)((int64_t)KT * blockIdx.y / gridDim.y);
    const int kt1 = (int)((int64_t)KT * (blockIdx.y + 1) / gridDim.y);

    if (tid == 0) {
        for (int s = 0; s < WS_STAGES; s++) {
            mbar_init(full(s), 1);
            mbar_init(empty(s), 8);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();

    if (wg == 0) {   /* the producer: one thread issues every copy */
        if (tid != 0) return;
        uint32_t it = 0;   /* tiles issued, counted across batches as the consumers do */
        for (int64_t z = blockIdx.z; z < batch; z += gridDim.z) {
            const int za = (int)z * bza, zb = (int)z * bzb;
            for (int kt = kt0; kt < kt1; kt++, it++) {
                const int s = (int)(it % WS_STAGES);
                if (it >= WS_STAGES) mbar_wait(empty(s), ((it / WS_STAGES) - 1) & 1);
                mbar_expect_tx(full(s), WS_STAGE_BYTES);
                const uint32_t sa = sbase + s * WS_STAGE_BYTES, sb = sa + WG_TILE_A;
                const int k0 = kt * BK;
                if (TA) {   /* stored K x M: 64-column boxes of M */
                    for (int j = 0; j < TC_BM / 64; j++)
                        tma_load(sa + j * WG_MN_LBO, &tma, full(s), m0 + 64 * j, k0, za);
                } else {
                    tma_load(sa, &tma, full(s), k0, m0, za);
                }
                if (TB) {
                    tma_load(sb, &tmb, full(s), k0, n0, zb);
                } else {    /* stored K x N: 64-column boxes of N */
                    for (int j = 0; j < TC_BN / 64; j++)
                        tma_load(sb + j * WG_MN_LBO, &tmb, full(s), n0 + 64 * j, k0, zb);
                }
            }
        }
        return;
    }

    const int cw = wg - 1;   /* this consumer's 64-row half */
    const int g = lane >> 2, t = lane & 3;
    uint32_t it = 0;
    for (int64_t z = blockIdx.z; z < batch; z += gridDim.z) {
        T *Cz = C + z * sC;
        float d[128];
#pragma unroll
        for (int i = 0; i < 128; i++) d[i] = 0.0f;
        int prev = -1;
        for (int kt = kt0; kt < kt1; kt++, it++) {
            const int s = (int)(it % WS_STAGES);
            mbar_wait(full(s), (it / WS_STAGES) & 1);
            const uint32_t sa = sbase + s * WS_STAGE_BYTES, sb = sa + WG_TILE_A;
            wg_fence_acc(d);
            asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
            for (int ks = 0; ks < 4; ks++) {
                /* a k-step is 32 bytes into each K-major row; MN-major: two 8-row k groups
                   (2 x 1024 bytes) further */
                const uint64_t da = TA ? wg_desc(sa + cw * WG_MN_LBO + ks * 2048, WG_MN_LBO, 1024)
                                       : wg_desc(sa + cw * 64 * 128 + ks * 32, 16, 1024);
                const uint64_t db = TB ? wg_desc(sb + ks * 32, 16, 1024)
                                       : wg_desc(sb + ks * 2048, WG_MN_LBO, 1024);
                wg_mma<T, TA, TB>(d, da, db);
            }
            asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
            asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
            wg_fence_acc(d);
            /* the previous group is complete: its stage may be refilled */
            if (prev >= 0 && lane == 0) mbar_arrive(empty(prev));
            prev = s;
        }
        asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
        wg_fence_acc(d);
        if (prev >= 0 && lane == 0) mbar_arrive(empty(prev));

        /* d[4i..4i+3]: rows 16 * (warp % 4) + g (+8), columns 8i + 2t (+1) */
        const int64_t mrow = m0 + cw * 64 + (warp & 3) * 16 + g;
        /* a K slice's plain fp32 sums go to part[z][slice], M x N; ws_reduce finishes */
        float *pz = part ? part + (z * gridDim.y + blockIdx.y) * M * N : nullptr;
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int64_t m = mrow + 8 * h;
            if (m >= M) continue;
#pragma unroll
            for (int i = 0; i < 32; i++) {
                const int64_t n = n0 + 8 * i + 2 * t;
                if (n >= N) continue;
                if (pz)
                    tc_store2(pz + m * N + n, d[4 * i + 2 * h], d[4 * i + 2 * h + 1], 1.0f, 0.0f,
                              n + 1 < N, N % 2 == 0);
                else
                    tc_store2(Cz + m * ldc + n, d[4 * i + 2 * h], d[4 * i + 2 * h + 1], alpha, beta,
                              n + 1 < N, cvec);
            }
        }
    }
#endif
}

/* C = alpha * (the sum of a split-K GEMM's slices, in slice order) + beta * C */
template <typename T>
__global__ void ws_reduce(const float *part, int splits, int64_t M, int64_t N, int64_t batch,
                          float alpha, float beta, T *C, int64_t ldc, int64_t sC) {
    const int64_t mn = M * N, total = batch * mn;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
         e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t z = e / mn, r = e - z * mn, m = r / N, n = r - m * N;
        const float *p = part + z * splits * mn + r;
        float v = 0.0f;
        for (int k = 0; k < splits; k++) v += p[k * mn];
        T *c = C + z * sC + m * ldc + n;
        v *= alpha;
        if (beta != 0.0f) v += beta * to_f(*c);
        *c = from_f<T>(v);
    }
}

/* whether gemm_ws may run on the current device: compute capability 9.0 with the
   sm_90a code loaded (wgmma_probe) and the shared memory, unless EMBER_CUDA_WGMMA=0;
   the probe's answer is kept per device */
static int wgmma_usable() {
    const char *env = getenv("EMBER_CUDA_WGMMA");
    if (env && strcmp(env, "0") == 0) return 0;
    static int known[64];   /* 0 unknown, 1 yes, -1 no */
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) return 0;
    if (known[dev]) return known[dev] > 0;
    int major = 0, minor = 0, optin = 0, ok = 0;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
    cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
    if (major == 9 && minor == 0 && optin >= WS_SMEM + 128) {
        int *flag = nullptr;
        if (cudaMalloc(&flag, sizeof(int)) == cudaSuccess) {
            wgmma_probe<<<1, 1>>>(flag);
            if (cudaMemcpy(&ok, flag, sizeof(int), cudaMemcpyDeviceToHost) != cudaSuccess) ok = 0;
            cudaFree(flag);
        }
    }
    cudaGetLastError();   /* a failed probe only means no wgmma */
    known[dev] = ok == 1 ? 1 : -1;
    return ok == 1;
}

/* the driver's cuTensorMapEncodeTiled, found through the runtime (ember links no libcuda) */
static PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
    static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
    static int tried = 0;
    if (!tried) {
        void *p = nullptr;
        cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000,
                                             cudaEnableDefault, &q) == cudaSuccess &&
            q == cudaDriverEntryPointSuccess)
            fn = (PFN_cuTensorMapEncodeTiled_v12000)p;
        cudaGetLastError();
        tried = 1;
    }
    return fn;
}

/* a 3-D map of a row-major matrix: `inner` contiguous elements per row, `outer` rows
   ld apart, `nb` matrices sb apart (nb 1 for a broadcast operand); boxes of 128 bytes
   x box_rows, 128-byte swizzle, zeros past the edges.  false when the driver refuses
   it.  float stays FLOAT32: wgmma reads its TF32 part, as cuBLAS's TF32 kernels do. */
template <typename T>
static bool ws_make_map(CUtensorMap *map, const T *p, int64_t inner, int64_t outer, int64_t ld,
                        int64_t nb, int64_t sb, int box_rows) {
    PFN_cuTensorMapEncodeTiled_v12000 enc = tensor_map_encoder();
    if (!enc) return false;
    const CUtensorMapDataType dt = std::is_same<T, float>::value  ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                                   : std::is_same<T, __half>::value ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                                                   : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    const cuuint64_t E = sizeof(T);
    cuuint64_t dims[3] = {(cuuint64_t)inner, (cuuint64_t)outer, (cuuint64_t)nb};
    cuuint64_t strides[2] = {(cuuint64_t)ld * E, (cuuint64_t)(nb > 1 ? sb : ld * outer) * E};
    cuuint32_t box[3] = {(cuuint32_t)(128 / E), (cuuint32_t)box_rows, 1}, estr[3] = {1, 1, 1};
    return enc(map, dt, 3, (void *)p, dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
               CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

/* gemm_ws: 1 when it launched, 0 when a tensor map could not be made.  `stream` is
   the caller's handle (the allocator's key for the split-K workspace). */
template <typename T, bool TA, bool TB>
static int launch_ws(cudaStream_t s, int64_t M, int64_t N, int64_t K, float alpha, const T *A,
                     int64_t lda, int64_t sA, const T *B, int64_t ldb, int64_t sB, float beta,
                     T *C, int64_t ldc, int64_t sC, int64_t batch, unsigned gz, bool cvec,
                     void *stream) {
    if (M > 0x7fffff00 || N > 0x7fffff00 || K > 0x7fffff00 || batch > 0x7fffffff) return 0;
    const bool ba = batch > 1 && sA != 0, bb = batch > 1 && sB != 0;
    CUtensorMap ma, mb;
    const bool ok = (TA ? ws_make_map(&ma, A, M, K, lda, ba ? batch : 1, sA, 64)
                        : ws_make_map(&ma, A, K, M, lda, ba ? batch : 1, sA, TC_BM)) &&
                    (TB ? ws_make_map(&mb, B, K, N, ldb, bb ? batch : 1, sB, TC_BN)
                        : ws_make_map(&mb, B, N, K, ldb, bb ? batch : 1, sB, 64));
    if (!ok) return 0;
    EMC_CHECK(cudaFuncSetAttribute(gemm_ws<T, TA, TB>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   WS_SMEM),
              "emc_gemm");
    const int64_t tiles = ((M + TC_BM - 1) / TC_BM) * ((N + TC_BN - 1) / TC_BN);
    /* too few tiles to fill the GPU and a long K (weight gradients: a small output, K the
       batch): K is split into slices whose fp32 sums ws_reduce adds in a fixed order */
    int splits = 1, dev = 0, sms = 0;
    const int64_t KT = (K + 128 / (int)sizeof(T) - 1) / (128 / (int)sizeof(T));
    float *part = nullptr;
    EMC_CHECK(cudaGetDevice(&dev), "emc_gemm");
    EMC_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "emc_gemm");
    if (tiles * batch * 2 <= sms && KT >= 8) {
        int64_t n = sms / (tiles * batch);
        n = n < KT / 4 ? n : KT / 4;
        n = n < 16 ? n : 16;
        const int64_t cap = ((int64_t)64 << 20) / (batch * M * N * 4);   /* 64 MiB at most */
        n = n < cap ? n : cap;
        if (n >= 2 && emc_malloc((void **)&part, (size_t)(batch * n * M * N * 4), stream) == 0)
            splits = (int)n;
        else
            part = nullptr;
    }
    gemm_ws<T, TA, TB><<<dim3((unsigned)tiles, (unsigned)splits, gz), WS_THREADS, WS_SMEM, s>>>(
        ma, mb, M, N, K, alpha, beta, C, ldc, sC, batch, ba ? 1 : 0, bb ? 1 : 0, cvec, part);
    if (part) {
        ws_reduce<T><<<emc_blocks(batch * M * N), EMC_THREADS, 0, s>>>(part, splits, M, N, batch,
                                                                      alpha, beta, C, ldc, sC);
        /* the pool hands the block out again only to later work on this stream */
        emc_free(part);
    }
    return 1;
}

/* gemm_tc (gemm_ws where usable) when its 16-byte copies are aligned and the part
   has the shared memory: 1 when it launched, 0 when it did not (the caller runs
   gemm_wmma), negative on a runtime error */
template <typename T>
static int try_tc(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha, const T *A,
                  int64_t lda, int64_t sA, const T *B, int64_t ldb, int64_t sB, float beta, T *C,
                  int64_t ldc, int64_t sC, int64_t batch, unsigned gz, cudaStream_t s,
                  void *stream) {
    constexpr int64_t V = 16 / sizeof(T);
    if (K == 0) return 0;
    if (lda % V || ldb % V || (batch > 1 && (sA % V || sB % V))) return 0;
    if (((uintptr_t)A & 15) || ((uintptr_t)B & 15)) return 0;
    const int64_t tiles = ((M + TC_BM - 1) / TC_BM) * ((N + TC_BN - 1) / TC_BN);
    if (tiles > 0x7fffffff) return 0;
    int dev = 0, optin = 0;
    EMC_CHECK(cudaGetDevice(&dev), "emc_gemm");
    EMC_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev),
              "emc_gemm");
    if (optin < TC_SMEM) return 0;   /* a smaller part: the plain kernel */
    /* output pairs (n, n+1) with n even go as one store when C's rows keep them aligned */
    const bool cvec = ldc % 2 == 0 && (batch == 1 || sC % 2 == 0) &&
                      ((uintptr_t)C & (2 * sizeof(T) - 1)) == 0;
    if (wgmma_usable()) {
        int rc = 0;
        if constexpr (sizeof(T) == 4) {   /* TF32: both operands K-major only */
            if (!ta && tb)
                rc = launch_ws<T, false, true>(s, M, N, K, alpha, A, lda, sA, B, ldb, sB, beta, C,
                                               ldc, sC, batch, gz, cvec, stream);
        } else {
            if (!ta && !tb)
                rc = launch_ws<T, false, false>(s, M, N, K, alpha, A, lda, sA, B, ldb, sB, beta, C,
                                                ldc, sC, batch, gz, cvec, stream);
            else if (ta && !tb)
                rc = launch_ws<T, true, false>(s, M, N, K, alpha, A, lda, sA, B, ldb, sB, beta, C,
                                               ldc, sC, batch, gz, cvec, stream);
            else if (!ta && tb)
                rc = launch_ws<T, false, true>(s, M, N, K, alpha, A, lda, sA, B, ldb, sB, beta, C,
                                               ldc, sC, batch, gz, cvec, stream);
            else
                rc = launch_ws<T, true, true>(s, M, N, K, alpha, A, lda, sA, B, ldb, sB, beta, C,
                                              ldc, sC, batch, gz, cvec, stream);
        }
        if (rc != 0) return rc;   /* launched, or a runtime error */
    }
    if (!ta && !tb)
        return launch_tc<T, false, false>(s, M, N, K, alpha, A, lda, sA, B, ldb, sB, beta, C, ldc,
                                          sC, batch, gz, cvec);
    if (ta && !tb)
        return launch_tc<T, true, false>(s, M, N, K, alpha, A, lda, sA, B, ldb, sB, beta, C, ldc,
                                         sC, batch, gz, cvec);
    if (!ta && tb)
        return launch_tc<T, false, true>(s, M, N, K, alpha, A, lda, sA, B, ldb, sB, beta, C, ldc,
                                         sC, batch, gz, cvec);
    return launch_tc<T, true, true>(s, M, N, K, alpha, A, lda, sA, B, ldb, sB, beta, C, ldc, sC,
                                    batch, gz, cvec);
}


EMC_API int emc_gemm_wgmma(void) { return wgmma_usable(); }

EMC_API int emc_gemm(int dtype, int ta, int tb, int64_t M, int64_t N, int64_t K, double alpha,
                     const void *A, int64_t lda, int64_t sA, const void *B, int64_t ldb,
                     int64_t sB, double beta, void *C, int64_t ldc, int64_t sC, int64_t batch,
                     int allow_tf32, void *stream) {
    if (M < 0 || N < 0 || K < 0 || batch < 0) return emc_set_error(EMC_E_ARG, "emc_gemm");
    if (M == 0 || N == 0 || batch == 0) return 0;
    cudaStream_t s = emc_stream(stream);
    unsigned gz = (unsigned)(batch < 65535 ? batch : 65535);
    if (dtype == EM_F32 && allow_tf32) {
        int rc = try_tc(ta, tb, M, N, K, (float)alpha, (const float *)A, lda, sA,
                          (const float *)B, ldb, sB, (float)beta, (float *)C, ldc, sC, batch, gz, s,
                        stream);
        if (rc < 0) return rc;
        if (rc == 1) { EMC_LAUNCHED("emc_gemm"); return 0; }
        int64_t gx = (N + TN - 1) / TN, gy = (M + TM - 1) / TM;
        if (gy > 65535) return emc_set_error(EMC_E_ARG, "emc_gemm (M too large)");
        gemm_wmma<float><<<dim3((unsigned)gx, (unsigned)gy, gz), 256, 0, s>>>(
            ta, tb, M, N, K, (float)alpha, (const float *)A, lda, sA, (const float *)B, ldb, sB,
            (float)beta, (float *)C, ldc, sC, batch);
    } else if (dtype == EM_F32 && M % QM == 0 && N % QN == 0 && K % QK == 0 && K > 0 &&
               M / QM <= 65535 && lda % 4 == 0 && ldb % 4 == 0 &&
               (batch == 1 || (sA % 4 == 0 && sB % 4 == 0)) && ((uintptr_t)A & 15) == 0 &&
               ((uintptr_t)B & 15) == 0) {
        dim3 grid((unsigned)(N / QN), (unsigned)(M / QM), gz);
        const float *fa = (const float *)A, *fb = (const float *)B;
        float fal = (float)alpha, fbe = (float)beta, *fc = (float *)C;
        if (!ta && !tb)
            sgemm_tiles<false, false><<<grid, 256, 0, s>>>(K, fal, fa, lda, sA, fb, ldb, sB, fbe,
                                                           fc, ldc, sC, batch);
        else if (ta && !tb)
            sgemm_tiles<true, false><<<grid, 256, 0, s>>>(K, fal, fa, lda, sA, fb, ldb, sB, fbe,
                                                          fc, ldc, sC, batch);
        else if (!ta && tb)
            sgemm_tiles<false, true><<<grid, 256, 0, s>>>(K, fal, fa, lda, sA, fb, ldb, sB, fbe,
                                                          fc, ldc, sC, batch);
        else
            sgemm_tiles<true, true><<<grid, 256, 0, s>>>(K, fal, fa, lda, sA, fb, ldb, sB, fbe,
                                                         fc, ldc, sC, batch);
    } else if (dtype == EM_F32 || dtype == EM_F64) {
        int64_t gx = (N + SB_N - 1) / SB_N, gy = (M + SB_M - 1) / SB_M;
        if (gy > 65535) return emc_set_error(EMC_E_ARG, "emc_gemm (M too large)");
        dim3 grid((unsigned)gx, (unsigned)gy, gz);
        if (dtype == EM_F32)
            gemm_simt<float><<<grid, 256, 0, s>>>(ta, tb, M, N, K, (float)alpha, (const float *)A,
                                                  lda, sA, (const float *)B, ldb, sB, (float)beta,
                                                  (float *)C, ldc, sC, batch);
        else
            gemm_simt<double><<<grid, 256, 0, s>>>(ta, tb, M, N, K, alpha, (const double *)A, lda,
                                                   sA, (const double *)B, ldb, sB, beta,
                                                   (double *)C, ldc, sC, batch);
    } else if (dtype == EM_F16 || dtype == EM_BF16) {
        int rc = dtype == EM_F16
            ? try_tc(ta, tb, M, N, K, (float)alpha, (const __half *)A, lda, sA,
                       (const __half *)B, ldb, sB, (float)beta, (__half *)C, ldc, sC, batch, gz, s,
                     stream)
            : try_tc(ta, tb, M, N, K, (float)alpha, (const __nv_bfloat16 *)A, lda, sA,
                       (const __nv_bfloat16 *)B, ldb, sB, (float)beta, (__nv_bfloat16 *)C, ldc,
                       sC, batch, gz, s, stream);
        if (rc < 0) return rc;
        if (rc == 1) { EMC_LAUNCHED("emc_gemm"); return 0; }
        int64_t gx = (N + TN - 1) / TN, gy = (M + TM - 1) / TM;
        if (gy > 65535) return emc_set_error(EMC_E_ARG, "emc_gemm (M too large)");
        dim3 grid((unsigned)gx, (unsigned)gy, gz);
        if (dtype == EM_F16)
            gemm_wmma<__half><<<grid, 256, 0, s>>>(ta, tb, M, N, K, (float)alpha,
                                                   (const __half *)A, lda, sA, (const __half *)B,
                                                   ldb, sB, (float)beta, (__half *)C, ldc, sC,
                                                   batch);
        else
            gemm_wmma<__nv_bfloat16><<<grid, 256, 0, s>>>(
                ta, tb, M, N, K, (float)alpha, (const __nv_bfloat16 *)A, lda, sA,
                (const __nv_bfloat16 *)B, ldb, sB, (float)beta, (__nv_bfloat16 *)C, ldc, sC, batch);
    } else {
        return emc_set_error(EMC_E_DTYPE, "emc_gemm");
    }
    EMC_LAUNCHED("emc_gemm");
    return 0;
}
