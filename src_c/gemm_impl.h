/* BLIS-style GEMM, written once and compiled per ISA.
 *
 * The including file defines EMBER_GEMM_ISA (0 generic, 1 AVX2+FMA, 2 AVX-512)
 * and EMBER_GEMM_SFX (a token: generic / avx2 / avx512) *after* its
 * `#pragma GCC target` line, then includes this header.  The header includes
 * itself twice more to instantiate the float and double versions; every
 * function it defines is `static` except the ISA-suffixed entry points
 *     ember_{s,d}gemm_<sfx>(...)   and   ember_{s,d}gemm_batched_<sfx>(...)
 * declared in gemm.c.
 *
 * Structure (BLIS): jc (NC columns of B) -> pc (KC of K, pack B panel,
 * shared by all threads) -> ic (MC rows of A, pack A block, private per
 * thread) -> jr (NR columns) -> ir (MR rows) -> micro-kernel MR x NR.
 * Threads form a tm x tn grid over (rows of C, NR-panels of each NC block).
 * Packing reads arbitrary element strides, so transposed / sliced operands
 * are never copied first.  Edge tiles go through a small stack tile.
 */
#ifndef EMBER_GEMM_IMPL_BODY
/* ------------------------------------------------------------------ outer */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ember_gemm.h"
#ifdef _OPENMP
#include <omp.h>
#endif
#if EMBER_GEMM_ISA >= 1
#include <immintrin.h>
#endif

#define EG_CAT2(a, b) a##_##b
#define EG_CAT(a, b) EG_CAT2(a, b)
#define EG_FN(name) EG_CAT(name, EMBER_GEMM_SFX)

#ifndef EMBER_GEMM_IMPL_COMMON
#define EMBER_GEMM_IMPL_COMMON
static inline int64_t eg_min(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t eg_max(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t eg_cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
static inline int eg_tid(void) {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}
static inline int eg_nthr(void) {
#ifdef _OPENMP
    return omp_get_num_threads();
#else
    return 1;
#endif
}

/* Per-thread packing buffers, kept for the life of the thread (no malloc per call). */
static _Thread_local void *eg_tl_buf[2];
static _Thread_local size_t eg_tl_cap[2];
static void *eg_buf(int which, size_t bytes) {
    if (bytes > eg_tl_cap[which]) {
        free(eg_tl_buf[which]);
        size_t cap = (bytes + 4095) & ~(size_t)4095;
        eg_tl_buf[which] = aligned_alloc(64, cap);
        eg_tl_cap[which] = eg_tl_buf[which] ? cap : 0;
    }
    return eg_tl_buf[which];
}

/* Tunables (elements); env overrides exist only in the standalone harness. */
#ifdef EMBER_GEMM_TUNE
extern int eg_tune_mc, eg_tune_kc, eg_tune_nc; /* defined by the harness */
#define EG_TUNE(v, d) ((v) > 0 ? (v) : (d))
#else
#define eg_tune_mc 0
#define eg_tune_kc 0
#define eg_tune_nc 0
#define EG_TUNE(v, d) (d)
#endif
#endif /* EMBER_GEMM_IMPL_COMMON */

#define EMBER_GEMM_IMPL_BODY 1
/* float */
#define T float
#define TS s
#define EG_F32 1
#include "gemm_impl.h"
#undef T
#undef TS
#undef EG_F32
/* double */
#define T double
#define TS d
#define EG_F32 0
#include "gemm_impl.h"
#undef T
#undef TS
#undef EG_F32
#undef EMBER_GEMM_IMPL_BODY

#else
/* ------------------------------------------------------------------- body */
#define EGT_CAT3(a, b, c) a##b##c
#define EGT_CAT(a, b, c) EGT_CAT3(a, b, c)
#define EGT(name) EG_FN(EGT_CAT(eg_, TS, name))       /* static helpers */
#define EGPUB(name) EG_FN(EGT_CAT(ember_, TS, name))  /* public entry points */
#define MAT EGT_CAT(ember_, TS, mat)                  /* ember_smat / ember_dmat */
#define EPI EGT_CAT(ember_, TS, gemm_epilogue)        /* per-panel epilogue hook */

/* ---- vector abstraction: VT (W lanes), MR x (NV*W) register tile ---- */
#if EMBER_GEMM_ISA == 2
#  if EG_F32
#    define VT __m512
#    define W 16
#    define VLOAD(p) _mm512_loadu_ps(p)
#    define VSTORE(p, v) _mm512_storeu_ps(p, v)
#    define VSET1(x) _mm512_set1_ps(x)
#    define VZERO() _mm512_setzero_ps()
#    define VFMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#    define VMUL(a, b) _mm512_mul_ps(a, b)
#    define VMASK __mmask16
#    define VMASKR(lo, hi) ((__mmask16)(((1u << (hi)) - 1) & ~((1u << (lo)) - 1)))
#    define VMERGE(acc, p, m) _mm512_mask_loadu_ps(acc, m, p)
#    define VBLEND VMERGE
#  else
#    define VT __m512d
#    define W 8
#    define VLOAD(p) _mm512_loadu_pd(p)
#    define VSTORE(p, v) _mm512_storeu_pd(p, v)
#    define VSET1(x) _mm512_set1_pd(x)
#    define VZERO() _mm512_setzero_pd()
#    define VFMA(a, b, c) _mm512_fmadd_pd(a, b, c)
#    define VMUL(a, b) _mm512_mul_pd(a, b)
#    define VMASK __mmask8
#    define VMASKR(lo, hi) ((__mmask8)(((1u << (hi)) - 1) & ~((1u << (lo)) - 1)))
#    define VMERGE(acc, p, m) _mm512_mask_loadu_pd(acc, m, p)
#    define VBLEND VMERGE
#  endif
#  define MR 12
#  define NV 2
#elif EMBER_GEMM_ISA == 1
#  if EG_F32
#    define VT __m256
#    define W 8
#    define VLOAD(p) _mm256_loadu_ps(p)
#    define VSTORE(p, v) _mm256_storeu_ps(p, v)
#    define VSET1(x) _mm256_set1_ps(x)
#    define VZERO() _mm256_setzero_ps()
#    define VFMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#    define VMUL(a, b) _mm256_mul_ps(a, b)
#    define VMASK __m256i
#    define VMASKR(lo, hi) _mm256_andnot_si256(                                           \
        _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(lo)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)), \
        _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(hi)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)))
#    define VMERGE(acc, p, m) \
        _mm256_blendv_ps(acc, _mm256_maskload_ps(p, m), _mm256_castsi256_ps(m))
#    define VBLEND(acc, p, m) _mm256_blendv_ps(acc, _mm256_loadu_ps(p), _mm256_castsi256_ps(m))
#  else
#    define VT __m256d
#    define W 4
#    define VLOAD(p) _mm256_loadu_pd(p)
#    define VSTORE(p, v) _mm256_storeu_pd(p, v)
#    define VSET1(x) _mm256_set1_pd(x)
#    define VZERO() _mm256_setzero_pd()
#    define VFMA(a, b, c) _mm256_fmadd_pd(a, b, c)
#    define VMUL(a, b) _mm256_mul_pd(a, b)
#    define VMASK __m256i
#    define VMASKR(lo, hi) _mm256_andnot_si256(                                           \
        _mm256_cmpgt_epi64(_mm256_set1_epi64x(lo), _mm256_setr_epi64x(0, 1, 2, 3)),        \
        _mm256_cmpgt_epi64(_mm256_set1_epi64x(hi), _mm256_setr_epi64x(0, 1, 2, 3)))
#    define VMERGE(acc, p, m) \
        _mm256_blendv_pd(acc, _mm256_maskload_pd(p, m), _mm256_castsi256_pd(m))
#    define VBLEND(acc, p, m) _mm256_blendv_pd(acc, _mm256_loadu_pd(p), _mm256_castsi256_pd(m))
#  endif
#  define MR 6
#  define NV 2
#else
   /* portable: GCC vector extensions (SSE2 registers on x86-64, NEON elsewhere) */
#  if EG_F32
typedef float EGT(_v) __attribute__((vector_size(16)));
#    define W 4
#  else
typedef double EGT(_v) __attribute__((vector_size(16)));
#    define W 2
#  endif
#  define VT EGT(_v)
#  define VLOAD(p) EGT(_vload)(p)
#  define VSTORE(p, v) EGT(_vstore)(p, v)
#  define VSET1(x) ((VT){0} + (T)(x))
#  define VZERO() ((VT){0})
#  define VFMA(a, b, c) ((a) * (b) + (c))
#  define VMUL(a, b) ((a) * (b))
static inline VT EGT(_vload)(const T *p) { VT v; memcpy(&v, p, sizeof v); return v; }
static inline void EGT(_vstore)(T *p, VT v) { memcpy(p, &v, sizeof v); }

#  define MR 4
#  define NV 2
#endif
#define NR (NV * W)

/* cache blocking (elements).  KC*NR*sizeof(T) of B stays in L1, MC*KC of A in
   L2, KC*NC of B in L3. */
#if EG_F32
#  define KC_DEF 384
#  define MC_DEF (MR * 16)
#else
#  define KC_DEF 256
#  define MC_DEF (MR * 16)
#endif
#define NC_DEF (NR * 256)

/* ------------------------------------------------------------ micro-kernel */
/* acc = sum_k a[k*MR + i] * b[k*NR + j]; then
   C[i*rsc + j] = alpha*acc + beta*C (beta == 0: C not read).
   Direct stores when the tile is full and C rows are contiguous; otherwise
   through a stack tile with element strides.  Only the first R rows of the
   panel are computed (R = MR, or MR/2 for an edge tile of at most that many
   rows); each row's arithmetic is the same either way. */
static inline __attribute__((always_inline)) void EGT(_ukr_r)(
        const int R, int64_t kc, const T *restrict a, const T *restrict b, T alpha, T beta,
        T *restrict c, int64_t rsc, int64_t csc, int64_t mr, int64_t nr) {
    VT acc[MR][NV];
#pragma GCC unroll 16
    for (int i = 0; i < R; i++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) acc[i][v] = VZERO();

    int64_t k = 0;
    for (; k + 4 <= kc; k += 4) {
#pragma GCC unroll 4
        for (int kk = 0; kk < 4; kk++) {
            VT b0 = VLOAD(b + kk * NR);
            VT b1 = VLOAD(b + kk * NR + W);
#pragma GCC unroll 16
            for (int i = 0; i < R; i++) {
                VT ai = VSET1(a[kk * MR + i]);
                acc[i][0] = VFMA(ai, b0, acc[i][0]);
                acc[i][1] = VFMA(ai, b1, acc[i][1]);
            }
        }
        a += 4 * MR;
        b += 4 * NR;
    }
    for (; k < kc; k++) {
        VT b0 = VLOAD(b);
        VT b1 = VLOAD(b + W);
#pragma GCC unroll 16
        for (int i = 0; i < R; i++) {
            VT ai = VSET1(a[i]);
            acc[i][0] = VFMA(ai, b0, acc[i][0]);
            acc[i][1] = VFMA(ai, b1, acc[i][1]);
        }
        a += MR;
        b += NR;
    }

    VT va = VSET1(alpha);
    if (mr == R && nr == NR && csc == 1) {
        if (beta == (T)0) {
#pragma GCC unroll 16
            for (int i = 0; i < R; i++) {
                VSTORE(c + i * rsc, VMUL(va, acc[i][0]));
                VSTORE(c + i * rsc + W, VMUL(va, acc[i][1]));
            }
        } else if (beta == (T)1) {
#pragma GCC unroll 16
            for (int i = 0; i < R; i++) {
                VSTORE(c + i * rsc, VFMA(va, acc[i][0], VLOAD(c + i * rsc)));
                VSTORE(c + i * rsc + W, VFMA(va, acc[i][1], VLOAD(c + i * rsc + W)));
            }
        } else {
            VT vb = VSET1(beta);
#pragma GCC unroll 16
            for (int i = 0; i < R; i++) {
                VSTORE(c + i * rsc, VFMA(va, acc[i][0], VMUL(vb, VLOAD(c + i * rsc))));
                VSTORE(c + i * rsc + W, VFMA(va, acc[i][1], VMUL(vb, VLOAD(c + i * rsc + W))));
            }
        }
        return;
    }
    T tile[MR * NR] __attribute__((aligned(64)));
    mr = mr < R ? mr : R;      /* always so; said, the compiler sees every row read is written */
#pragma GCC unroll 16
    for (int i = 0; i < R; i++) {
        VSTORE(tile + i * NR, VMUL(va, acc[i][0]));
        VSTORE(tile + i * NR + W, VMUL(va, acc[i][1]));
    }
    if (beta == (T)0) {
        for (int64_t i = 0; i < mr; i++)
            for (int64_t j = 0; j < nr; j++) c[i * rsc + j * csc] = tile[i * NR + j];
    } else {
        for (int64_t i = 0; i < mr; i++)
            for (int64_t j = 0; j < nr; j++)
                c[i * rsc + j * csc] = tile[i * NR + j] + beta * c[i * rsc + j * csc];
    }
}

static void EGT(_ukr)(int64_t kc, const T *restrict a, const T *restrict b, T alpha, T beta,
                      T *restrict c, int64_t rsc, int64_t csc, int64_t mr, int64_t nr) {
    EGT(_ukr_r)(MR, kc, a, b, alpha, beta, c, rsc, csc, mr, nr);
}
static void EGT(_ukr_half)(int64_t kc, const T *restrict a, const T *restrict b, T alpha,
                           T beta, T *restrict c, int64_t rsc, int64_t csc, int64_t mr,
                           int64_t nr) {
    EGT(_ukr_r)(MR / 2, kc, a, b, alpha, beta, c, rsc, csc, mr, nr);
}

/* C tile += br[i] + bc[j] (either may be NULL), right after the micro-kernel
   wrote it: a separate pass over a tile in L1, which keeps the micro-kernel's
   register allocation as it is */
static void EGT(_tile_bias)(T *restrict c, int64_t rsc, int64_t csc, int64_t mr, int64_t nr,
                            const T *br, const T *bc) {
    for (int64_t i = 0; i < mr; i++) {
        const T r = br ? br[i] : (T)0;
        T *ci = c + i * rsc;
        if (bc && csc == 1)
            for (int64_t j = 0; j < nr; j++) ci[j] += r + bc[j];
        else if (csc == 1)
            for (int64_t j = 0; j < nr; j++) ci[j] += r;
        else
            for (int64_t j = 0; j < nr; j++) ci[j * csc] += r + (bc ? bc[j] : (T)0);
    }
}

/* ---------------------------------------------------------------- packing */
#if EMBER_GEMM_ISA >= 1 && EG_F32
/* AVX2 / AVX-512 float: transposing packs move 8x8 blocks through registers */
#define EG_TR8 1
static inline void EGT(_tr8)(__m256 r[8]) {
    const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xee);
    const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xee);
    const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xee);
    const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xee);
    r[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
    r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
    r[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
    r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
    r[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
    r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
    r[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
    r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

/* bp[(k+t)*NR + j] = cols[j][off + t] for t, j < 8 (one 8x8 block of a panel) */
static inline void EGT(_tr8_block)(const T *const *cols, int64_t off, T *bp) {
    __m256 r[8];
#pragma GCC unroll 8
    for (int t = 0; t < 8; t++) r[t] = _mm256_loadu_ps(cols[t] + off);
    EGT(_tr8)(r);
#pragma GCC unroll 8
    for (int t = 0; t < 8; t++) _mm256_storeu_ps(bp + t * NR, r[t]);
}
#endif

/* Operands are MAT descriptors: element (r, c) = p[ro(r) + co(c)] (see ember_gemm.h). */
static inline int64_t EGT(_ro)(const MAT *m, int64_t r) { return m->ro ? m->ro[r] : r * m->rs; }
static inline int64_t EGT(_co)(const MAT *m, int64_t c) { return m->co ? m->co[c] : c * m->cs; }

/* A rows [i0, i0+mc) x k [k0, k0+kc) -> panels of MR rows: ap[p*MR*kc + k*MR + i] */
static void EGT(_pack_a)(int64_t mc, int64_t kc, const MAT *A, int64_t i0, int64_t k0,
                         T *restrict ap) {
    const int rows_contig = !A->co && A->cs == 1;   /* each row contiguous in k */
    const int cols_contig = !A->ro && A->rs == 1;   /* each column contiguous in i */
    for (int64_t ib = 0; ib < mc; ib += MR) {
        const int64_t mr = eg_min(MR, mc - ib);
        if (mr == MR && rows_contig) {
            const T *rows[MR];
            for (int i = 0; i < MR; i++) rows[i] = A->p + EGT(_ro)(A, i0 + ib + i) + k0;
            int64_t k = 0;
#ifdef EG_TR8
            /* groups of 8 rows (the last padded with zeros), transposed; a group
               of 5-7 rows stores 8 lanes, spilling into the next k's slots, which
               the next store overwrites (the buffer has slack for the very last
               one); a group of 4 or fewer stores 4 */
            _Static_assert(MR <= 8 || MR % 8 == 0 || MR % 8 <= 4,
                           "a spilling store would overwrite an earlier group");
            for (; k + 8 <= kc; k += 8) {
#pragma GCC unroll 2
                for (int g = 0; g < MR; g += 8) {
                    const int n = MR - g < 8 ? MR - g : 8;
                    __m256 r[8];
#pragma GCC unroll 8
                    for (int i = 0; i < 8; i++)
                        r[i] = i < n ? _mm256_loadu_ps(rows[g + i] + k) : _mm256_setzero_ps();
                    EGT(_tr8)(r);
                    if (n <= 4) {
#pragma GCC unroll 8
                        for (int t = 0; t < 8; t++)
                            _mm_storeu_ps(ap + (k + t) * MR + g, _mm256_castps256_ps128(r[t]));
                    } else {
#pragma GCC unroll 8
                        for (int t = 0; t < 8; t++) _mm256_storeu_ps(ap + (k + t) * MR + g, r[t]);
                    }
                }
            }
#endif
            for (; k < kc; k++) {
#pragma GCC unroll 16
                for (int i = 0; i < MR; i++) ap[k * MR + i] = rows[i][k];
            }
        } else if (mr == MR && cols_contig) {
            for (int64_t k = 0; k < kc; k++) {
                const T *src = A->p + i0 + ib + EGT(_co)(A, k0 + k);
#pragma GCC unroll 16
                for (int i = 0; i < MR; i++) ap[k * MR + i] = src[i];
            }
        } else {
            int64_t ro[MR];
            for (int64_t i = 0; i < mr; i++) ro[i] = EGT(_ro)(A, i0 + ib + i);
            for (int64_t k = 0; k < kc; k++) {
                const T *src = A->p + EGT(_co)(A, k0 + k);
                int64_t i = 0;
                for (; i < mr; i++) ap[k * MR + i] = src[ro[i]];
                for (; i < MR; i++) ap[k * MR + i] = 0;
            }
        }
        ap += MR * kc;
    }
}

#ifdef VMASK
/* acc with lanes [lo, hi) replaced by s[lo..hi) (mask m).  A plain load also
   reads the other lanes; it is used when they lie on the same pages as the
   wanted ones, so it cannot fault, else a masked load. */
static inline VT EGT(_vrun)(VT acc, const T *s, VMASK m, int64_t lo, int64_t hi) {
    const uintptr_t diff = ((uintptr_t)s ^ (uintptr_t)(s + lo)) |
                           ((uintptr_t)(s + W - 1) ^ (uintptr_t)(s + hi - 1));
    return diff < 4096 ? VBLEND(acc, s, m) : VMERGE(acc, s, m);
}
#endif

/* B k [k0, k0+kc) x cols [j0, j0+nr) -> one panel: bp[k*NR + j], zero past nr */
static void EGT(_pack_b_panel)(int64_t nr, int64_t kc, const MAT *B, int64_t k0, int64_t j0,
                               T *restrict bp) {
    if (nr == NR && !B->co && B->cs == 1) {
        /* rows contiguous: NR consecutive elements of each row */
        for (int64_t k = 0; k < kc; k++) {
            const T *src = B->p + EGT(_ro)(B, k0 + k) + j0;
#pragma GCC unroll 2
            for (int v = 0; v < NV; v++) VSTORE(bp + k * NR + v * W, VLOAD(src + v * W));
        }
    } else if (nr == NR && !B->ro && B->rs == 1) {
        /* columns contiguous: read 4 k at a time from each column */
        const T *cols[NR];
        for (int j = 0; j < NR; j++) cols[j] = B->p + EGT(_co)(B, j0 + j) + k0;
        int64_t k = 0;
#ifdef EG_TR8
        for (; k + 8 <= kc; k += 8)
            for (int jg = 0; jg < NR; jg += 8) EGT(_tr8_block)(cols + jg, k, bp + k * NR + jg);
#endif
        for (; k + 4 <= kc; k += 4) {
#pragma GCC unroll 4
            for (int j = 0; j < NR; j++) {
                const T *src = cols[j] + k;
                bp[(k + 0) * NR + j] = src[0];
                bp[(k + 1) * NR + j] = src[1];
                bp[(k + 2) * NR + j] = src[2];
                bp[(k + 3) * NR + j] = src[3];
            }
        }
        for (; k < kc; k++)
            for (int j = 0; j < NR; j++) bp[k * NR + j] = cols[j][k];
    } else {
        int64_t co[NR];
        for (int64_t j = 0; j < nr; j++) co[j] = EGT(_co)(B, j0 + j);
#ifdef VMASK
        /* runs of consecutive offsets (an implicit im2col row: output positions
           along one image row) */
        int64_t pd[NR], ps[NR], pl[NR];
        int np = 0;
        for (int64_t j = 0; j < nr; j++) {
            if (np && co[j] == ps[np - 1] + pl[np - 1]) {
                pl[np - 1]++;
            } else {
                pd[np] = j; ps[np] = co[j]; pl[np] = 1; np++;
            }
        }
        if (np * 4 <= nr && kc <= KC_DEF) {
            /* Each output vector v is merged from masked loads, one per run that
               overlaps it, each read at the address that puts every lane in
               place.  Masked-out lanes read nothing, so no slack is needed. */
            int64_t sd[NR + NV], sl[NR + NV], sh[NR + NV];
            VMASK sm[NR + NV];
            int vs[NV + 1], ns = 0;
            for (int v = 0; v < NV; v++) {
                vs[v] = ns;
                for (int q = 0; q < np; q++) {
                    const int64_t lo = eg_max(pd[q], v * W), hi = eg_min(pd[q] + pl[q], (v + 1) * W);
                    if (lo >= hi) continue;
                    sd[ns] = ps[q] - pd[q] + v * W;
                    sm[ns] = VMASKR(lo - v * W, hi - v * W);
                    sl[ns] = lo - v * W;
                    sh[ns] = hi - v * W;
                    ns++;
                }
            }
            vs[NV] = ns;
            /* The runs are the same for every row, so loop over them outside.
               A full-width load reads lanes beyond its run; that is safe when
               they lie on the pages of the run's own lanes, which is checked
               per row (masked loads are slow on AVX2, and only needed there). */
            int64_t off[KC_DEF];
            for (int64_t k = 0; k < kc; k++) off[k] = EGT(_ro)(B, k0 + k);
            for (int v = 0; v < NV; v++) {
                T *dst = bp + v * W;
                if (vs[v] == vs[v + 1])
                    for (int64_t k = 0; k < kc; k++) VSTORE(dst + k * NR, VZERO());
                for (int q = vs[v]; q < vs[v + 1]; q++) {
                    const T *src = B->p + sd[q];
                    const VMASK m = sm[q];
                    const int64_t lo = sl[q], hi = sh[q];
                    if (q == vs[v])
                        for (int64_t k = 0; k < kc; k++)
                            VSTORE(dst + k * NR, EGT(_vrun)(VZERO(), src + off[k], m, lo, hi));
                    else
                        for (int64_t k = 0; k < kc; k++)
                            VSTORE(dst + k * NR,
                                   EGT(_vrun)(VLOAD(dst + k * NR), src + off[k], m, lo, hi));
                }
            }
            return;
        }
#endif
        int64_t k = 0;
#ifdef EG_TR8
        if (nr == NR) {
            /* blocks of 8 rows whose offsets run on (an implicit im2col read
               transposed: output positions along an image row) go through
               8x8 transposes; the others row by row */
            const T *cols[NR];
            for (int j = 0; j < NR; j++) cols[j] = B->p + co[j];
            while (k < kc) {
                const int64_t r0 = EGT(_ro)(B, k0 + k);
                int run = k + 8 <= kc;
                for (int t = 1; run && t < 8; t++) run = EGT(_ro)(B, k0 + k + t) == r0 + t;
                if (run) {
                    for (int jg = 0; jg < NR; jg += 8)
                        EGT(_tr8_block)(cols + jg, r0, bp + k * NR + jg);
                    k += 8;
                } else {
                    for (int j = 0; j < NR; j++) bp[k * NR + j] = cols[j][r0];
                    k++;
                }
            }
        }
#endif
        for (; k < kc; k++) {
            const T *src = B->p + EGT(_ro)(B, k0 + k);
            int64_t j = 0;
            for (; j < nr; j++) bp[k * NR + j] = src[co[j]];
            for (; j < NR; j++) bp[k * NR + j] = 0;
        }
    }
}

/* ------------------------------------------------------------ small paths */
/* C = alpha*A@B + beta*C with plain loops: tiny problems, no packing. */
static void EGT(_naive)(int64_t M, int64_t N, int64_t K, T alpha, const T *A, int64_t rsa,
                        int64_t csa, const T *B, int64_t rsb, int64_t csb, T beta, T *C,
                        int64_t rsc, int64_t csc) {
    for (int64_t i = 0; i < M; i++) {
        for (int64_t j = 0; j < N; j++) {
            T s = 0;
            for (int64_t k = 0; k < K; k++) s += A[i * rsa + k * csa] * B[k * rsb + j * csb];
            T *c = C + i * rsc + j * csc;
            *c = beta == (T)0 ? alpha * s : alpha * s + beta * *c;
        }
    }
}

#define EG_LANES (4 * W)
/* dot of contiguous x with y at stride incy, lane-parallel accumulators */
static inline T EGT(_dot_c)(int64_t n, const T *restrict x, const T *restrict y) {
    T acc[EG_LANES] = {0};
    int64_t k = 0;
    for (; k + EG_LANES <= n; k += EG_LANES)
#pragma GCC unroll 64
        for (int l = 0; l < EG_LANES; l++) acc[l] += x[k + l] * y[k + l];
    T s = 0;
    for (int l = 0; l < EG_LANES; l++) s += acc[l];
    for (; k < n; k++) s += x[k] * y[k];
    return s;
}

/* row i of the gemv below, rows (or neither) contiguous */
static inline void EGT(_gemv_row)(int64_t i, int64_t K, T alpha, const T *A, int64_t rsa,
                                  int64_t csa, const T *xv, T beta, T *y, int64_t incy) {
    const T *a = A + i * rsa;
    T s;
    if (csa == 1) s = EGT(_dot_c)(K, a, xv);
    else {
        s = 0;
        for (int64_t k = 0; k < K; k++) s += a[k * csa] * xv[k];
    }
    T *yi = y + i * incy;
    *yi = beta == (T)0 ? alpha * s : alpha * s + beta * *yi;
}

/* rows [i0, i0 + m) (m <= 1024) of the gemv below, columns contiguous */
static inline void EGT(_gemv_cols)(int64_t i0, int64_t m, int64_t K, T alpha, const T *A,
                                   int64_t csa, const T *xv, T beta, T *y, int64_t incy) {
    T acc[1024];
    for (int64_t i = 0; i < m; i++) acc[i] = 0;
    for (int64_t k = 0; k < K; k++) {
        const T *a = A + i0 + k * csa;
        T xk = xv[k];
        for (int64_t i = 0; i < m; i++) acc[i] += a[i] * xk;
    }
    for (int64_t i = 0; i < m; i++) {
        T *yi = y + (i0 + i) * incy;
        *yi = beta == (T)0 ? alpha * acc[i] : alpha * acc[i] + beta * *yi;
    }
}

/* y[i*incy] = alpha * sum_k A[i*rsa + k*csa] x[k*incx] + beta*y  (i < M) */
static void EGT(_gemv)(int64_t M, int64_t K, T alpha, const T *A, int64_t rsa, int64_t csa,
                       const T *x, int64_t incx, T beta, T *y, int64_t incy, int nthreads) {
    T *xc = NULL;
    const T *xv = x;
    if (incx != 1) {
        xc = (T *)malloc((size_t)K * sizeof(T));
        for (int64_t k = 0; k < K; k++) xc[k] = x[k * incx];
        xv = xc;
    }
    int nt = (M * K < 65536) ? 1 : nthreads;
    if (csa == 1 || (rsa != 1)) {
        /* rows (or neither) contiguous: one dot per row; no region for one
           thread (inside a team it would be a nested one) */
        if (nt > 1) {
#pragma omp parallel for num_threads(nt) schedule(static)
            for (int64_t i = 0; i < M; i++)
                EGT(_gemv_row)(i, K, alpha, A, rsa, csa, xv, beta, y, incy);
        } else {
            for (int64_t i = 0; i < M; i++)
                EGT(_gemv_row)(i, K, alpha, A, rsa, csa, xv, beta, y, incy);
        }
    } else {
        /* columns contiguous: y += A[:,k] * x[k], split rows over threads */
        const int64_t nch = eg_cdiv(M, 1024);
        if (nt > 1) {
#pragma omp parallel for num_threads(nt) schedule(static)
            for (int64_t c = 0; c < nch; c++)
                EGT(_gemv_cols)(c * 1024, eg_min(1024, M - c * 1024), K, alpha, A, csa, xv,
                                beta, y, incy);
        } else {
            for (int64_t c = 0; c < nch; c++)
                EGT(_gemv_cols)(c * 1024, eg_min(1024, M - c * 1024), K, alpha, A, csa, xv,
                                beta, y, incy);
        }
    }
    free(xc);
}

static inline int EGT(_threads)(double flops, int nthreads);

/* ---------------------------------------------------------- narrow GEMM */
/* N <= W (a classifier's output layer): each row of C is one vector.  A is
   read in place, one broadcast per element (packing it would cost as much as
   the product), B is packed once into K x W (zeros past N), and a tile of MRN
   rows keeps its accumulators over the whole of K: every element of C is one
   dot product in k order, the same bits on any thread count. */
#if EMBER_GEMM_ISA == 2
#  define MRN 16
#elif EMBER_GEMM_ISA == 1
#  define MRN 12
#else
#  define MRN 8
#endif

/* C rows [0, mr) x cols [0, n) = alpha * A rows @ bp (+ beta*C) (+ br[i] + bc[j]) */
static inline void EGT(_narrow_tile)(int64_t K, const T *restrict a, int64_t rsa, int64_t csa,
                                     int64_t mr, const T *restrict bp, T alpha, T beta,
                                     T *restrict c, int64_t rsc, int64_t csc, int64_t n,
                                     const T *br, const T *bc) {
    VT acc[MRN];
    const T *rows[MRN];
#pragma GCC unroll 16
    for (int i = 0; i < MRN; i++) {
        rows[i] = a + (i < mr ? i : 0) * rsa;  /* rows past the edge recompute row 0 */
        acc[i] = VZERO();
    }
    if (csa == 1) {
        int64_t k = 0;
        for (; k + 4 <= K; k += 4) {   /* 4 k a step: the row pointers stay put */
#pragma GCC unroll 4
            for (int kk = 0; kk < 4; kk++) {
                const VT b = VLOAD(bp + (k + kk) * W);
#pragma GCC unroll 16
                for (int i = 0; i < MRN; i++)
                    acc[i] = VFMA(VSET1(rows[i][k + kk]), b, acc[i]);
            }
        }
        for (; k < K; k++) {
            const VT b = VLOAD(bp + k * W);
#pragma GCC unroll 16
            for (int i = 0; i < MRN; i++) acc[i] = VFMA(VSET1(rows[i][k]), b, acc[i]);
        }
    } else {
        for (int64_t k = 0; k < K; k++) {
            const VT b = VLOAD(bp + k * W);
#pragma GCC unroll 16
            for (int i = 0; i < MRN; i++) acc[i] = VFMA(VSET1(rows[i][k * csa]), b, acc[i]);
        }
    }
    T tile[MRN * W] __attribute__((aligned(64)));
    const VT va = VSET1(alpha);
#pragma GCC unroll 16
    for (int i = 0; i < MRN; i++) VSTORE(tile + i * W, VMUL(va, acc[i]));
    for (int64_t i = 0; i < mr; i++) {
        T *ci = c + i * rsc;
        const T *ti = tile + i * W;
        const T r = br ? br[i] : (T)0;
        for (int64_t j = 0; j < n; j++) {
            T v = beta == (T)0 ? ti[j] : ti[j] + beta * ci[j * csc];
            if (br || bc) v += r + (bc ? bc[j] : (T)0);
            ci[j * csc] = v;
        }
    }
}

/* C = alpha*A@B + beta*C (+ biases) for N <= W; 0 when the B buffer cannot be had */
static int EGT(_narrow)(int64_t M, int64_t N, int64_t K, T alpha, const T *A, int64_t rsa,
                        int64_t csa, const T *B, int64_t rsb, int64_t csb, T beta, T *C,
                        int64_t rsc, int64_t csc, const T *br, const T *bc, int nthreads) {
    T *bp = (T *)eg_buf(1, (size_t)K * W * sizeof(T));
    if (!bp) return 0;
    if (N < W) memset(bp, 0, (size_t)K * W * sizeof(T));
    if (rsb == 1 && csb != 1) {          /* B^T stored (Linear's weight): by columns */
        for (int64_t j = 0; j < N; j++) {
            const T *src = B + j * csb;
            for (int64_t k = 0; k < K; k++) bp[k * W + j] = src[k];
        }
    } else {
        for (int64_t k = 0; k < K; k++) {
            const T *src = B + k * rsb;
            for (int64_t j = 0; j < N; j++) bp[k * W + j] = src[j * csb];
        }
    }
    const int64_t tiles = eg_cdiv(M, MRN);
    int nt = EGT(_threads)(2.0 * (double)M * (double)W * (double)K, nthreads);
    if (nt > tiles) nt = (int)tiles;
#define EG_NARROW_TILE(t)                                                                 \
    EGT(_narrow_tile)(K, A + (t) * MRN * rsa, rsa, csa, eg_min(MRN, M - (t) * MRN), bp, alpha, \
                      beta, C + (t) * MRN * rsc, rsc, csc, N, br ? br + (t) * MRN : NULL, bc)
    /* no region for one thread: inside a team it would be a nested one */
    if (nt > 1) {
#pragma omp parallel for num_threads(nt) schedule(static)
        for (int64_t t = 0; t < tiles; t++) EG_NARROW_TILE(t);
    } else {
        for (int64_t t = 0; t < tiles; t++) EG_NARROW_TILE(t);
    }
#undef EG_NARROW_TILE
    return 1;
}

/* ---------------------------------------------------------- blocked GEMM */
/* the body of the blocked GEMM for thread grid tm x tn: run by each thread of
   a team of nt (team), or alone (no OpenMP construct is met) */
static void EGT(_blocked_run)(int64_t M, int64_t N, int64_t K, T alpha, const MAT *A,
                              const MAT *B, T beta, T *C, int64_t rsc, int64_t csc, const T *br,
                              const T *bc, EPI epi, void *ctx, T *bp, int tm, int tn, int nt,
                              int team) {
    const int64_t MC = EG_TUNE(eg_tune_mc, MC_DEF) / MR * MR;
    const int64_t KC = EG_TUNE(eg_tune_kc, KC_DEF);
    const int64_t NC = EG_TUNE(eg_tune_nc, NC_DEF) / NR * NR;
    const int64_t kc_max = eg_min(KC, K);
    const int64_t tiles_m = eg_cdiv(M, MR);
    const int tid = team ? eg_tid() : 0;
    int gtm = tm, gtn = tn;
    if (team && eg_nthr() != nt) { gtm = eg_nthr(); gtn = 1; } /* runtime gave fewer threads */
    int ti = tid / gtn, tj = tid % gtn;
    int64_t t0 = tiles_m * ti / gtm, t1 = tiles_m * (ti + 1) / gtm;
    int64_t m0 = eg_min(M, t0 * MR), m1 = eg_min(M, t1 * MR);
    /* + 2*W: slack for the spilling stores of the transposing A pack */
    T *ap = (T *)eg_buf(0, (size_t)(eg_min(MC, eg_cdiv(M, MR) * MR) * kc_max + 2 * W) *
                               sizeof(T));

    for (int64_t jc = 0; jc < N; jc += NC) {
        const int64_t nc = eg_min(NC, N - jc);
        const int64_t np = eg_cdiv(nc, NR);
        const int64_t p0 = np * tj / gtn, p1 = np * (tj + 1) / gtn;
        for (int64_t pc = 0; pc < K; pc += KC) {
            const int64_t kc = eg_min(KC, K - pc);
            const T beta_eff = pc == 0 ? beta : (T)1;
            if (team) {
#pragma omp for schedule(static)
                for (int64_t p = 0; p < np; p++)
                    EGT(_pack_b_panel)(eg_min(NR, nc - p * NR), kc, B, pc, jc + p * NR,
                                       bp + p * NR * kc);
            } else {
                for (int64_t p = 0; p < np; p++)
                    EGT(_pack_b_panel)(eg_min(NR, nc - p * NR), kc, B, pc, jc + p * NR,
                                       bp + p * NR * kc);
            }
            for (int64_t ic = m0; ic < m1; ic += MC) {
                const int64_t mc = eg_min(MC, m1 - ic);
                EGT(_pack_a)(mc, kc, A, ic, pc, ap);
                for (int64_t p = p0; p < p1; p++) {
                    const int64_t nr = eg_min(NR, nc - p * NR);
                    const T *bpp = bp + p * NR * kc;
                    T *cc = C + ic * rsc + (jc + p * NR) * csc;
                    /* the bias goes in with the first K block */
                    const T *bcp = bc && pc == 0 ? bc + jc + p * NR : NULL;
                    for (int64_t ir = 0; ir < mc; ir += MR) {
                        const int64_t mr = eg_min(MR, mc - ir);
                        if (mr <= MR / 2)
                            EGT(_ukr_half)(kc, ap + ir * kc, bpp, alpha, beta_eff,
                                           cc + ir * rsc, rsc, csc, mr, nr);
                        else
                            EGT(_ukr)(kc, ap + ir * kc, bpp, alpha, beta_eff,
                                      cc + ir * rsc, rsc, csc, mr, nr);
                        if (pc == 0 && (br || bc))
                            EGT(_tile_bias)(cc + ir * rsc, rsc, csc, mr, nr,
                                            br ? br + ic + ir : NULL, bcp);
                    }
                    /* the panel is final after the last K block and still in
                       L1: the caller's epilogue runs on it now */
                    if (epi && pc + kc >= K)
                        epi(cc, rsc, csc, ic, jc + p * NR, mc, nr, ctx);
                }
            }
            if (team) {
#pragma omp barrier
            }
        }
    }
}

static void EGT(_blocked)(int64_t M, int64_t N, int64_t K, T alpha, const MAT *A, const MAT *B,
                          T beta, T *C, int64_t rsc, int64_t csc, const T *br, const T *bc,
                          EPI epi, void *ctx, int nt) {
    const int64_t KC = EG_TUNE(eg_tune_kc, KC_DEF);
    const int64_t NC = EG_TUNE(eg_tune_nc, NC_DEF) / NR * NR;
    const int64_t kc_max = eg_min(KC, K);
    const int64_t nc_max = eg_min(NC, eg_cdiv(N, NR) * NR);
    T *bp = (T *)eg_buf(1, (size_t)(kc_max * nc_max) * sizeof(T));

    /* thread grid: tm x tn minimising the largest per-thread work, in half tiles (a
       last row tile of at most MR/2 rows runs the half-height micro-kernel) */
    const int64_t tiles_m = eg_cdiv(M, MR), tiles_n = eg_cdiv(eg_min(N, NC), NR);
    const int half_edge = M % MR != 0 && M % MR <= MR / 2;
    int tm = 1, tn = 1;
    if (nt > 1) {
        int64_t best = -1;
        for (int a = 1; a <= nt; a++) {
            if (nt % a) continue;
            int b = nt / a;
            int64_t rows = 0;    /* the busiest row range, as the loop below splits rows */
            for (int ti = 0; ti < a; ti++) {
                const int64_t t0 = tiles_m * ti / a, t1 = tiles_m * (ti + 1) / a;
                rows = eg_max(rows, 2 * (t1 - t0) - (t1 == tiles_m && t1 > t0 && half_edge));
            }
            int64_t w = rows * eg_cdiv(tiles_n, b);
            /* prefer splitting rows (no duplicated A packing) on ties */
            if (best < 0 || w < best || (w == best && a > tm)) { best = w; tm = a; tn = b; }
        }
    }

    if (nt > 1) {
#pragma omp parallel num_threads(nt)
        EGT(_blocked_run)(M, N, K, alpha, A, B, beta, C, rsc, csc, br, bc, epi, ctx, bp, tm, tn,
                          nt, 1);
    } else {
        /* no team: inside another one a one-thread region is still a real
           nested team, whose set-up and futex wake-up cost more than a small
           product (the Winograd and im2col convolutions call thousands) */
        EGT(_blocked_run)(M, N, K, alpha, A, B, beta, C, rsc, csc, br, bc, epi, ctx, bp, 1, 1,
                          1, 0);
    }
}

/* C = beta*C (+ bias) over an M x N strided matrix (K == 0 or alpha == 0) */
static void EGT(_scale)(int64_t M, int64_t N, T beta, T *C, int64_t rsc, int64_t csc,
                        const T *br, const T *bc) {
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            T *c = C + i * rsc + j * csc;
            *c = (beta == (T)0 ? (T)0 : beta * *c) + (br ? br[i] : (T)0) + (bc ? bc[j] : (T)0);
        }
}

/* threads worth using for a blocked product of this many flops */
static inline int EGT(_threads)(double flops, int nthreads) {
    if (flops < 4.0e5) return 1;
    if (flops < 4.0e5 * nthreads) return (int)(flops / 4.0e5);
    return nthreads;
}

/* C = alpha*A@B + beta*C (+ br[i] + bc[j]) for descriptor operands (offset
   tables allowed); br / bc are per-row / per-column biases or NULL. */
static void EGT(_gemm_mat)(int64_t M, int64_t N, int64_t K, T alpha, MAT A, MAT B, T beta, T *C,
                           int64_t rsc, int64_t csc, const T *br, const T *bc, EPI epi,
                           void *ctx, int nthreads) {
    if (M <= 0 || N <= 0) return;
    /* paths that do not go through panels run the epilogue once, on all of C */
    const int64_t M0 = M, N0 = N, rsc0 = rsc, csc0 = csc;
    if (K <= 0 || alpha == (T)0) {
        EGT(_scale)(M, N, beta, C, rsc, csc, br, bc);
        if (epi) epi(C, rsc, csc, 0, 0, M, N, ctx);
        return;
    }
    EPI tile_epi = epi;
    if (csc != 1 && rsc == 1) {
        tile_epi = NULL;  /* panels of the transposed problem: run it on the whole */
        /* work on the orientation whose C rows are contiguous: C^T = B^T A^T */
        const MAT at = {B.p, B.cs, B.rs, B.co, B.ro}, bt = {A.p, A.cs, A.rs, A.co, A.ro};
        const T *tb = br;
        int64_t t = M; M = N; N = t;
        A = at; B = bt;
        t = rsc; rsc = csc; csc = t;
        br = bc; bc = tb;
    }
    if (nthreads < 1) nthreads = 1;
    if (!A.ro && !A.co && !B.ro && !B.co) {
        int small = 1;
        if (M * N * K <= 512)
            EGT(_naive)(M, N, K, alpha, A.p, A.rs, A.cs, B.p, B.rs, B.cs, beta, C, rsc, csc);
        else if (N == 1)
            EGT(_gemv)(M, K, alpha, A.p, A.rs, A.cs, B.p, B.rs, beta, C, rsc, nthreads);
        else if (M == 1) /* y^T = x^T B: a gemv with B^T */
            EGT(_gemv)(N, K, alpha, B.p, B.cs, B.rs, A.p, A.cs, beta, C, csc, nthreads);
        else if (N <= W && EGT(_narrow)(M, N, K, alpha, A.p, A.rs, A.cs, B.p, B.rs, B.cs, beta,
                                        C, rsc, csc, br, bc, nthreads))
            br = bc = NULL;     /* added there */
        else
            small = 0;
        if (small) {
            if (br || bc) EGT(_tile_bias)(C, rsc, csc, M, N, br, bc);
            if (epi) epi(C, rsc0, csc0, 0, 0, M0, N0, ctx);
            return;
        }
    }
    const int nt = EGT(_threads)(2.0 * (double)M * (double)N * (double)K, nthreads);
    EGT(_blocked)(M, N, K, alpha, &A, &B, beta, C, rsc, csc, br, bc, tile_epi, ctx, nt);
    if (epi && !tile_epi) epi(C, rsc0, csc0, 0, 0, M0, N0, ctx);
}

static void EGT(_gemm)(int64_t M, int64_t N, int64_t K, T alpha, const T *A, int64_t rsa,
                       int64_t csa, const T *B, int64_t rsb, int64_t csb, T beta, T *C,
                       int64_t rsc, int64_t csc, int nthreads) {
    const MAT a = {A, rsa, csa, NULL, NULL}, b = {B, rsb, csb, NULL, NULL};
    EGT(_gemm_mat)(M, N, K, alpha, a, b, beta, C, rsc, csc, NULL, NULL, NULL, NULL, nthreads);
}

void EGPUB(gemm)(int64_t M, int64_t N, int64_t K, T alpha, const T *A, int64_t rsa,
                 int64_t csa, const T *B, int64_t rsb, int64_t csb, T beta, T *C, int64_t rsc,
                 int64_t csc, int nthreads) {
    EGT(_gemm)(M, N, K, alpha, A, rsa, csa, B, rsb, csb, beta, C, rsc, csc, nthreads);
}

void EGPUB(gemm_ex)(int64_t M, int64_t N, int64_t K, T alpha, const MAT *A, const MAT *B,
                    T beta, T *C, int64_t rsc, int64_t csc, const T *br, const T *bc,
                    int nthreads) {
    EGT(_gemm_mat)(M, N, K, alpha, *A, *B, beta, C, rsc, csc, br, bc, NULL, NULL, nthreads);
}

void EGPUB(gemm_epi)(int64_t M, int64_t N, int64_t K, T alpha, const MAT *A, const MAT *B,
                     T beta, T *C, int64_t rsc, int64_t csc, const T *br, const T *bc, EPI epi,
                     void *ctx, int nthreads) {
    EGT(_gemm_mat)(M, N, K, alpha, *A, *B, beta, C, rsc, csc, br, bc, epi, ctx, nthreads);
}

void EGPUB(gemm_batched)(int64_t batch, int64_t M, int64_t N, int64_t K, T alpha, const T *A,
                         int64_t rsa, int64_t csa, const T *B, int64_t rsb, int64_t csb, T beta,
                         T *C, int64_t rsc, int64_t csc, int64_t bsa, int64_t bsb, int64_t bsc,
                         int nthreads) {
    if (batch <= 0 || M <= 0 || N <= 0) return;
    if (nthreads < 1) nthreads = 1;
    double flops = 2.0 * (double)M * (double)N * (double)K;
    int over_batch = nthreads > 1 && batch > 1 &&
                     (batch % nthreads == 0 || batch >= 4 * nthreads || flops < 4.0e6);
    if (!over_batch) {
        for (int64_t b = 0; b < batch; b++)
            EGT(_gemm)(M, N, K, alpha, A + b * bsa, rsa, csa, B + b * bsb, rsb, csb, beta,
                       C + b * bsc, rsc, csc, nthreads);
        return;
    }
    int nt = (int)eg_min(nthreads, batch);
    if (flops * (double)batch < 4.0e5) nt = 1;
    if (nt > 1) {
#pragma omp parallel for num_threads(nt) schedule(static)
        for (int64_t b = 0; b < batch; b++)
            EGT(_gemm)(M, N, K, alpha, A + b * bsa, rsa, csa, B + b * bsb, rsb, csb, beta,
                       C + b * bsc, rsc, csc, 1);
    } else {
        for (int64_t b = 0; b < batch; b++)
            EGT(_gemm)(M, N, K, alpha, A + b * bsa, rsa, csa, B + b * bsb, rsb, csb, beta,
                       C + b * bsc, rsc, csc, 1);
    }
}

#undef VT
#undef W
#undef VLOAD
#undef VSTORE
#undef VSET1
#undef VZERO
#undef VFMA
#undef VMUL
#undef VMASK
#undef VMASKR
#undef VMERGE
#undef VBLEND
#undef MR
#undef NV
#undef NR
#undef KC_DEF
#undef MC_DEF
#undef NC_DEF
#undef EG_LANES
#undef MRN
#undef EGT
#undef EGPUB
#undef EG_TR8
#undef MAT
#undef EPI
#undef EGT_CAT
#undef EGT_CAT3
#endif
