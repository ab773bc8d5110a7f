/* GEMM: the twin of src_c/gemm.c.  float32/float64 run a tiled SIMT kernel
   (64x64 block tile, 4x4 outputs per thread); float16/bfloat16 run on tensor
   cores through WMMA (128x128 block tile, 8 warps of 64x32, fp32
   accumulation), and so does float32 when TF32 is allowed (inputs rounded to
   TF32, as torch.backends.cuda.matmul.allow_tf32 / "high" matmul precision).
   Row-major operands, transposes by index, batches on grid z. */
#include <mma.h>
#include "common.cuh"

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

EMC_API int emc_gemm(int dtype, int ta, int tb, int64_t M, int64_t N, int64_t K, double alpha,
                     const void *A, int64_t lda, int64_t sA, const void *B, int64_t ldb,
                     int64_t sB, double beta, void *C, int64_t ldc, int64_t sC, int64_t batch,
                     int allow_tf32, void *stream) {
    if (M < 0 || N < 0 || K < 0 || batch < 0) return emc_set_error(EMC_E_ARG, "emc_gemm");
    if (M == 0 || N == 0 || batch == 0) return 0;
    cudaStream_t s = emc_stream(stream);
    unsigned gz = (unsigned)(batch < 65535 ? batch : 65535);
    if (dtype == EM_F32 && allow_tf32) {
        int64_t gx = (N + TN - 1) / TN, gy = (M + TM - 1) / TM;
        if (gy > 65535) return emc_set_error(EMC_E_ARG, "emc_gemm (M too large)");
        gemm_wmma<float><<<dim3((unsigned)gx, (unsigned)gy, gz), 256, 0, s>>>(
            ta, tb, M, N, K, (float)alpha, (const float *)A, lda, sA, (const float *)B, ldb, sB,
            (float)beta, (float *)C, ldc, sC, batch);
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
