/* bfloat16 GEMM with float32 accumulation: C (float32) = A @ B.

   Where the CPU has AVX512_BF16, a BLIS-style kernel runs on packed bf16 panels with
   vdpbf16ps (each instruction multiplies 16 pairs of bf16 along K and adds them to 16
   float32 accumulators). Elsewhere the operands widen to float32 (exact: a bf16 is the
   top half of a float32) and the float32 GEMM runs. The choice is made at run time. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ember.h"
#include "ember_gemm.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define EMBER_X86 1
#endif

#define MR 8
#define NR 32
#define KC 512          /* K elements per packed block (even) */
#define MC 128          /* rows per A block (multiple of MR) */

static int bf16_isa = -1;

static int detect(void) {
#ifdef EMBER_X86
    unsigned a, b, c, d;
    if (ember_cpu_isa() < 2) return 0;
    if (!__get_cpuid_count(7, 1, &a, &b, &c, &d)) return 0;
    return (a >> 5) & 1;            /* CPUID.(EAX=7,ECX=1):EAX[5] = AVX512_BF16 */
#else
    return 0;
#endif
}

int ember_bf16gemm_isa(void) {
    if (bf16_isa < 0) bf16_isa = detect();
    return bf16_isa;
}

int ember_bf16gemm_set_isa(int isa) {
    int hw = detect();
    bf16_isa = isa < 0 ? hw : (isa && hw);
    return bf16_isa;
}

static float widen(uint16_t v) {
    uint32_t u = (uint32_t)v << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void gemm_generic(int64_t M, int64_t N, int64_t K, const uint16_t *A, int64_t rsa,
                         int64_t csa, const uint16_t *B, int64_t rsb, int64_t csb, float *C,
                         int64_t ldc, int nthreads) {
    float *a = malloc(sizeof(float) * (size_t)(M * K + 1));
    float *b = malloc(sizeof(float) * (size_t)(K * N + 1));
    if (!a || !b) {
        free(a);
        free(b);
        return;
    }
    for (int64_t i = 0; i < M; i++)
        for (int64_t k = 0; k < K; k++) a[i * K + k] = widen(A[i * rsa + k * csa]);
    for (int64_t k = 0; k < K; k++)
        for (int64_t j = 0; j < N; j++) b[k * N + j] = widen(B[k * rsb + j * csb]);
    ember_sgemm(M, N, K, 1.0f, a, K, 1, b, N, 1, 0.0f, C, ldc, 1, nthreads);
    free(a);
    free(b);
}

#ifdef EMBER_X86
/* B block (kc x N from row k0) as NR-column panels, K in pairs: per pair 2*NR values
   (b[k][j], b[k+1][j]) for j in the panel; zero-padded past N and past kc. */
static void pack_b(const uint16_t *B, int64_t rsb, int64_t csb, int64_t k0, int64_t kc,
                   int64_t N, uint16_t *Bp, int nthreads) {
    int64_t kcp = (kc + 1) / 2, np = (N + NR - 1) / NR;
    #pragma omp parallel for num_threads(nthreads) schedule(static) if (nthreads > 1)
    for (int64_t p = 0; p < np; p++) {
        uint16_t *dst = Bp + p * kcp * 2 * NR;
        for (int64_t kp = 0; kp < kcp; kp++) {
            int64_t k = k0 + 2 * kp;
            int has1 = 2 * kp + 1 < kc;
            for (int j = 0; j < NR; j++) {
                int64_t col = p * NR + j;
                uint16_t v0 = 0, v1 = 0;
                if (col < N) {
                    v0 = B[k * rsb + col * csb];
                    if (has1) v1 = B[(k + 1) * rsb + col * csb];
                }
                dst[(kp * NR + j) * 2] = v0;
                dst[(kp * NR + j) * 2 + 1] = v1;
            }
        }
    }
}

/* A block (mc x kc at (i0, k0)) as MR-row slivers: per K pair, MR (a[i][k], a[i][k+1]). */
static void pack_a(const uint16_t *A, int64_t rsa, int64_t csa, int64_t i0, int64_t mc,
                   int64_t k0, int64_t kc, uint16_t *Ap) {
    int64_t kcp = (kc + 1) / 2;
    for (int64_t rb = 0; rb < (mc + MR - 1) / MR; rb++) {
        uint16_t *dst = Ap + rb * kcp * 2 * MR;
        for (int64_t kp = 0; kp < kcp; kp++) {
            int64_t k = k0 + 2 * kp;
            int has1 = 2 * kp + 1 < kc;
            for (int r = 0; r < MR; r++) {
                int64_t row = rb * MR + r;
                uint16_t v0 = 0, v1 = 0;
                if (row < mc) {
                    v0 = A[(i0 + row) * rsa + k * csa];
                    if (has1) v1 = A[(i0 + row) * rsa + (k + 1) * csa];
                }
                dst[(kp * MR + r) * 2] = v0;
                dst[(kp * MR + r) * 2 + 1] = v1;
            }
        }
    }
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")))
static void kernel(int64_t kcp, const uint16_t *a, const uint16_t *b, float *C, int64_t ldc,
                   int mr, int nr, int accumulate) {
    __m512 c0[MR], c1[MR];
    for (int r = 0; r < MR; r++) {
        c0[r] = _mm512_setzero_ps();
        c1[r] = _mm512_setzero_ps();
    }
    const int32_t *ap = (const int32_t *)a;
    for (int64_t kp = 0; kp < kcp; kp++) {
        __m512bh b0 = (__m512bh)_mm512_loadu_si512(b + kp * 2 * NR);
        __m512bh b1 = (__m512bh)_mm512_loadu_si512(b + kp * 2 * NR + NR);
        for (int r = 0; r < MR; r++) {
            __m512bh av = (__m512bh)_mm512_set1_epi32(ap[kp * MR + r]);
            c0[r] = _mm512_dpbf16_ps(c0[r], av, b0);
            c1[r] = _mm512_dpbf16_ps(c1[r], av, b1);
        }
    }
    if (mr == MR && nr == NR) {
        for (int r = 0; r < MR; r++) {
            float *row = C + r * ldc;
            if (accumulate) {
                c0[r] = _mm512_add_ps(c0[r], _mm512_loadu_ps(row));
                c1[r] = _mm512_add_ps(c1[r], _mm512_loadu_ps(row + 16));
            }
            _mm512_storeu_ps(row, c0[r]);
            _mm512_storeu_ps(row + 16, c1[r]);
        }
        return;
    }
    float tile[MR][NR];
    for (int r = 0; r < MR; r++) {
        _mm512_storeu_ps(tile[r], c0[r]);
        _mm512_storeu_ps(tile[r] + 16, c1[r]);
    }
    for (int r = 0; r < mr; r++)
        for (int j = 0; j < nr; j++)
            C[r * ldc + j] = accumulate ? C[r * ldc + j] + tile[r][j] : tile[r][j];
}

static int gemm_bf16dp(int64_t M, int64_t N, int64_t K, const uint16_t *A, int64_t rsa,
                        int64_t csa, const uint16_t *B, int64_t rsb, int64_t csb, float *C,
                        int64_t ldc, int nthreads) {
    int64_t np = (N + NR - 1) / NR;
    uint16_t *Bp = malloc(sizeof(uint16_t) * (size_t)(np * NR * (KC + 1)));
    if (!Bp) return -1;
    for (int64_t k0 = 0; k0 < K; k0 += KC) {
        int64_t kc = K - k0 < KC ? K - k0 : KC, kcp = (kc + 1) / 2;
        int acc = k0 > 0;
        pack_b(B, rsb, csb, k0, kc, N, Bp, nthreads);
        int64_t nblk = (M + MC - 1) / MC;
        #pragma omp parallel num_threads(nthreads) if (nthreads > 1 && nblk * np > 1)
        {
            uint16_t *Ap = malloc(sizeof(uint16_t) * (size_t)(MC * (KC + 1)));
            #pragma omp for schedule(dynamic)
            for (int64_t ib = 0; ib < nblk; ib++) {
                if (!Ap) continue;
                int64_t i0 = ib * MC, mc = M - i0 < MC ? M - i0 : MC;
                pack_a(A, rsa, csa, i0, mc, k0, kc, Ap);
                for (int64_t p = 0; p < np; p++) {
                    int nr = (int)(N - p * NR < NR ? N - p * NR : NR);
                    for (int64_t rb = 0; rb * MR < mc; rb++) {
                        int mr = (int)(mc - rb * MR < MR ? mc - rb * MR : MR);
                        kernel(kcp, Ap + rb * kcp * 2 * MR, Bp + p * kcp * 2 * NR,
                               C + (i0 + rb * MR) * ldc + p * NR, ldc, mr, nr, acc);
                    }
                }
            }
            free(Ap);
        }
    }
    free(Bp);
    return 0;
}
#endif

void ember_bf16gemm(int64_t M, int64_t N, int64_t K, const uint16_t *A, int64_t rsa,
                    int64_t csa, const uint16_t *B, int64_t rsb, int64_t csb, float *C,
                    int64_t ldc, int nthreads) {
    if (M <= 0 || N <= 0) return;
    if (K <= 0) {
        for (int64_t i = 0; i < M; i++) memset(C + i * ldc, 0, sizeof(float) * (size_t)N);
        return;
    }
#ifdef EMBER_X86
    if (ember_bf16gemm_isa() && gemm_bf16dp(M, N, K, A, rsa, csa, B, rsb, csb, C, ldc,
                                            nthreads) == 0)
        return;
#endif
    gemm_generic(M, N, K, A, rsa, csa, B, rsb, csb, C, ldc, nthreads);
}
