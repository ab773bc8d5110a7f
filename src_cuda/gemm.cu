/* GEMM: the twin of src_c/gemm.c.  float32/float64 run a tiled SIMT kernel
   (64x64 block tile, 4x4 outputs per thread); float16/bfloat16 run on tensor
   cores through WMMA (128x128 block tile, 8 warps of 64x32, fp32
   accumulation), and so does float32 when TF32 is allowed (inputs rounded to
   TF32, as torch.backends.cuda.matmul.allow_tf32 / "high" matmul precision).
   Row-major operands, transposes by index, batches on grid z. */
#include <mma.h>
#include <type_traits>
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

/* --- the pipelined tensor-core kernel for whole tiles -------------------------------
   128x256x32 block tile, 8 warps of 64x64, operands streamed global->shared with
   cp.async through PIPE_STAGES buffers so loads overlap the MMAs.  Transposed
   operands stay transposed in shared memory and load as column-major fragments.
   Used when the tile divides the problem and the 16-byte copies are aligned;
   everything else runs gemm_wmma above. */
#define PM 128
#define PN 256
#define PK 32
#define PIPE_STAGES 3

__device__ __forceinline__ void cp_async16(void *dst, const void *src) {
    unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(src));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

template <typename T, bool TA, bool TB> struct PipeShape {
    static const int PAD = Frag<T>::PAD;
    static const int A_ROWS = TA ? PK : PM, A_LD = (TA ? PM : PK) + PAD;
    static const int B_ROWS = TB ? PN : PK, B_LD = (TB ? PK : PN) + PAD;
    static const int STAGE = A_ROWS * A_LD + B_ROWS * B_LD;   /* elements */
    static const size_t BYTES = (size_t)PIPE_STAGES * STAGE * sizeof(T);
};

template <typename T, bool TA, bool TB>
__global__ void __launch_bounds__(256) gemm_pipe(int64_t K, float alpha, const T *A, int64_t lda,
                                                 int64_t sA, const T *B, int64_t ldb, int64_t sB,
                                                 float beta, T *C, int64_t ldc, int64_t sC,
                                                 int64_t batch) {
    typedef PipeShape<T, TA, TB> S;
    typedef typename Frag<T>::type FT;
    typedef typename std::conditional<TA, wmma::col_major, wmma::row_major>::type LA;
    typedef typename std::conditional<TB, wmma::col_major, wmma::row_major>::type LB;
    constexpr int FK = Frag<T>::K, V = 16 / sizeof(T);
    extern __shared__ __align__(128) unsigned char pipe_smem[];
    T *smem = reinterpret_cast<T *>(pipe_smem);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wm = warp / 4, wn = warp % 4;          /* 2 x 4 warps of 64 x 64 */
    const int64_t m0 = (int64_t)blockIdx.y * PM, n0 = (int64_t)blockIdx.x * PN;
    const int KT = (int)(K / PK);
    for (int64_t z = blockIdx.z; z < batch; z += gridDim.z) {
        const T *Az = A + z * sA, *Bz = B + z * sB;
        T *Cz = C + z * sC;
        auto load = [&](int stage, int kt) {
            T *as = smem + stage * S::STAGE, *bs = as + S::A_ROWS * S::A_LD;
            const int64_t k0 = (int64_t)kt * PK;
            constexpr int ACOLS = (S::A_LD - S::PAD) / V, BCOLS = (S::B_LD - S::PAD) / V;
            for (int e = threadIdx.x; e < S::A_ROWS * ACOLS; e += 256) {
                const int r = e / ACOLS, c = (e % ACOLS) * V;
                cp_async16(as + r * S::A_LD + c,
                           TA ? Az + (k0 + r) * lda + m0 + c : Az + (m0 + r) * lda + k0 + c);
            }
            for (int e = threadIdx.x; e < S::B_ROWS * BCOLS; e += 256) {
                const int r = e / BCOLS, c = (e % BCOLS) * V;
                cp_async16(bs + r * S::B_LD + c,
                           TB ? Bz + (n0 + r) * ldb + k0 + c : Bz + (k0 + r) * ldb + n0 + c);
            }
        };
        wmma::fragment<wmma::accumulator, 16, 16, FK, float> acc[4][4];
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 4; j++) wmma::fill_fragment(acc[i][j], 0.0f);
#pragma unroll
        for (int st = 0; st < PIPE_STAGES - 1; st++) {
            if (st < KT) load(st, st);
            cp_async_commit();
        }
        for (int kt = 0; kt < KT; kt++) {
            cp_async_wait<PIPE_STAGES - 2>();
            __syncthreads();   /* tile kt landed; everyone is done with tile kt-1's buffer */
            const int next = kt + PIPE_STAGES - 1;
            if (next < KT) load(next % PIPE_STAGES, next);
            cp_async_commit();
            const T *as = smem + (kt % PIPE_STAGES) * S::STAGE, *bs = as + S::A_ROWS * S::A_LD;
#pragma unroll
            for (int kk = 0; kk < PK; kk += FK) {
                wmma::fragment<wmma::matrix_a, 16, 16, FK, FT, LA> fa[4];
                wmma::fragment<wmma::matrix_b, 16, 16, FK, FT, LB> fb[4];
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    const int m = wm * 64 + i * 16;
                    wmma::load_matrix_sync(fa[i], TA ? as + kk * S::A_LD + m : as + m * S::A_LD + kk,
                                           S::A_LD);
                }
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    const int n = wn * 64 + j * 16;
                    wmma::load_matrix_sync(fb[j], TB ? bs + n * S::B_LD + kk : bs + kk * S::B_LD + n,
                                           S::B_LD);
                }
                if constexpr (sizeof(T) == 4) {   /* float -> TF32 rounding */
#pragma unroll
                    for (int i = 0; i < 4; i++)
#pragma unroll
                        for (int t = 0; t < fa[i].num_elements; t++)
                            fa[i].x[t] = wmma::__float_to_tf32(fa[i].x[t]);
#pragma unroll
                    for (int j = 0; j < 4; j++)
#pragma unroll
                        for (int t = 0; t < fb[j].num_elements; t++)
                            fb[j].x[t] = wmma::__float_to_tf32(fb[j].x[t]);
                }
#pragma unroll
                for (int i = 0; i < 4; i++)
#pragma unroll
                    for (int j = 0; j < 4; j++) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
            }
        }
        cp_async_wait<0>();
        __syncthreads();
        /* epilogue: each warp stages one 16x16 tile at a time through the (now free)
           pipeline buffers; consecutive lanes write consecutive columns */
        float *cs = reinterpret_cast<float *>(pipe_smem) + warp * 256;
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 4; j++) {
                wmma::store_matrix_sync(cs, acc[i][j], 16, wmma::mem_row_major);
                __syncwarp();
                for (int e = lane; e < 256; e += 32) {
                    const int r = e / 16, c = e % 16;
                    T *cp = Cz + (m0 + wm * 64 + i * 16 + r) * ldc + n0 + wn * 64 + j * 16 + c;
                    float v = alpha * cs[e];
                    if (beta != 0.0f) v += beta * to_f(*cp);
                    *cp = from_f<T>(v);
                }
                __syncwarp();
            }
        __syncthreads();   /* the staging area is the next batch's first buffer */
    }
}

template <typename T, bool TA, bool TB>
static int launch_pipe(dim3 grid, cudaStream_t s, int64_t K, float alpha, const T *A, int64_t lda,
                       int64_t sA, const T *B, int64_t ldb, int64_t sB, float beta, T *C,
                       int64_t ldc, int64_t sC, int64_t batch) {
    const size_t bytes = PipeShape<T, TA, TB>::BYTES;
    int dev = 0, optin = 0;
    EMC_CHECK(cudaGetDevice(&dev), "emc_gemm");
    EMC_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev),
              "emc_gemm");
    if ((size_t)optin < bytes) return 0;   /* a smaller part: the plain kernel */
    EMC_CHECK(cudaFuncSetAttribute(gemm_pipe<T, TA, TB>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   (int)bytes),
              "emc_gemm");
    gemm_pipe<T, TA, TB><<<grid, 256, bytes, s>>>(K, alpha, A, lda, sA, B, ldb, sB, beta, C, ldc,
                                                 sC, batch);
    return 1;
}

/* the pipelined kernel when whole tiles cover the problem, every 16-byte copy is
   aligned and the part has the shared memory: 1 when it launched, 0 when it did not,
   negative on a runtime error */
template <typename T>
static int try_pipe(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha, const T *A,
                    int64_t lda, int64_t sA, const T *B, int64_t ldb, int64_t sB, float beta,
                    T *C, int64_t ldc, int64_t sC, int64_t batch, unsigned gz, cudaStream_t s) {
    constexpr int64_t V = 16 / sizeof(T);
    if (M % PM || N % PN || K % PK || K == 0 || M / PM > 65535) return 0;
    if (lda % V || ldb % V || (batch > 1 && (sA % V || sB % V))) return 0;
    if (((uintptr_t)A & 15) || ((uintptr_t)B & 15)) return 0;
    dim3 grid((unsigned)(N / PN), (unsigned)(M / PM), gz);
    if (!ta && !tb)
        return launch_pipe<T, false, false>(grid, s, K, alpha, A, lda, sA, B, ldb, sB, beta, C,
            ldc, sC, batch);
    if (ta && !tb)
        return launch_pipe<T, true, false>(grid, s, K, alpha, A, lda, sA, B, ldb, sB, beta, C,
            ldc, sC, batch);
    if (!ta && tb)
        return launch_pipe<T, false, true>(grid, s, K, alpha, A, lda, sA, B, ldb, sB, beta, C,
            ldc, sC, batch);
    return launch_pipe<T, true, true>(grid, s, K, alpha, A, lda, sA, B, ldb, sB, beta, C, ldc,
                                      sC, batch);
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
        int rc = try_pipe(ta, tb, M, N, K, (float)alpha, (const float *)A, lda, sA,
                          (const float *)B, ldb, sB, (float)beta, (float *)C, ldc, sC, batch, gz, s);
        if (rc < 0) return rc;
        if (rc == 1) { EMC_LAUNCHED("emc_gemm"); return 0; }
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
        int rc = dtype == EM_F16
            ? try_pipe(ta, tb, M, N, K, (float)alpha, (const __half *)A, lda, sA,
                       (const __half *)B, ldb, sB, (float)beta, (__half *)C, ldc, sC, batch, gz, s)
            : try_pipe(ta, tb, M, N, K, (float)alpha, (const __nv_bfloat16 *)A, lda, sA,
                       (const __nv_bfloat16 *)B, ldb, sB, (float)beta, (__nv_bfloat16 *)C, ldc,
                       sC, batch, gz, s);
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
