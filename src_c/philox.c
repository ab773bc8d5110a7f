/* Random-number kernels over Philox4x32-10 (see ember_random.h for the
   counter layout).  The batch kernels are written once (the EM_PHILOX_IMPL
   half of this file) and compiled three times, for generic x86-64, AVX2 and
   AVX-512, by including this file into itself under `#pragma GCC target`;
   ember_cpu_isa() picks one at run time.  No FMA: the float results are the
   same bits whatever ISA runs them. */
#ifndef EM_PHILOX_IMPL

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ember_random.h"
#include "ember_philox.h"
#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#define PB EM_PHILOX_BATCH
#define PHILOX_M0 EM_PHILOX_M0
#define PHILOX_M1 EM_PHILOX_M1
#define PHILOX_W0 EM_PHILOX_W0
#define PHILOX_W1 EM_PHILOX_W1

#define EM_INLINE static inline __attribute__((always_inline))

/* everything one kernel call needs */
typedef struct {
    int kind, dtype, bits;
    char *out;
    const char *x;
    uint8_t *mask;
    uint64_t seed, off, range, thresh;
    int64_t lo;
    double a, b, scale;
} rctx;

void em_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
    em_philox_round10(ctr[0], ctr[1], ctr[2], ctr[3], key[0], key[1], out);
}

/* the scalar transforms live in ember_philox.h, shared with the CUDA kernels */
#define u01f em_u01f
#define u01f_open em_u01f_open
#define w53 em_w53

/* ---- stores: a batch of values into any dtype ---------------------------- */

static void store_f32(int dtype, char *dst, const float *v, int64_t n) {
    int64_t i;
    switch (dtype) {
    case EM_F32: memcpy(dst, v, (size_t)n * 4); break;
    case EM_F64: for (i = 0; i < n; i++) ((double *)dst)[i] = v[i]; break;
    case EM_F16: for (i = 0; i < n; i++) ((uint16_t *)dst)[i] = em_f2h(v[i]); break;
    case EM_BF16: for (i = 0; i < n; i++) ((uint16_t *)dst)[i] = em_f2bf(v[i]); break;
    default: break;
    }
}

static void store_f64(int dtype, char *dst, const double *v, int64_t n) {
    int64_t i;
    switch (dtype) {
    case EM_F64: memcpy(dst, v, (size_t)n * 8); break;
    case EM_F32: for (i = 0; i < n; i++) ((float *)dst)[i] = (float)v[i]; break;
    case EM_F16: for (i = 0; i < n; i++) ((uint16_t *)dst)[i] = em_f2h((float)v[i]); break;
    case EM_BF16: for (i = 0; i < n; i++) ((uint16_t *)dst)[i] = em_f2bf((float)v[i]); break;
    case EM_I64: for (i = 0; i < n; i++) ((int64_t *)dst)[i] = (int64_t)v[i]; break;
    case EM_I32: for (i = 0; i < n; i++) ((int32_t *)dst)[i] = (int32_t)(int64_t)v[i]; break;
    case EM_I16: for (i = 0; i < n; i++) ((int16_t *)dst)[i] = (int16_t)(int64_t)v[i]; break;
    case EM_I8: for (i = 0; i < n; i++) ((int8_t *)dst)[i] = (int8_t)(int64_t)v[i]; break;
    case EM_U8: for (i = 0; i < n; i++) ((uint8_t *)dst)[i] = (uint8_t)(int64_t)v[i]; break;
    case EM_BOOL: for (i = 0; i < n; i++) ((uint8_t *)dst)[i] = v[i] != 0; break;
    default: break;
    }
}

static void store_i64(int dtype, char *dst, const int64_t *v, int64_t n) {
    int64_t i;
    switch (dtype) {
    case EM_I64: memcpy(dst, v, (size_t)n * 8); break;
    case EM_I32: for (i = 0; i < n; i++) ((int32_t *)dst)[i] = (int32_t)v[i]; break;
    case EM_I16: for (i = 0; i < n; i++) ((int16_t *)dst)[i] = (int16_t)v[i]; break;
    case EM_I8: for (i = 0; i < n; i++) ((int8_t *)dst)[i] = (int8_t)v[i]; break;
    case EM_U8: for (i = 0; i < n; i++) ((uint8_t *)dst)[i] = (uint8_t)v[i]; break;
    case EM_BOOL: for (i = 0; i < n; i++) ((uint8_t *)dst)[i] = v[i] != 0; break;
    case EM_F32: for (i = 0; i < n; i++) ((float *)dst)[i] = (float)v[i]; break;
    case EM_F64: for (i = 0; i < n; i++) ((double *)dst)[i] = (double)v[i]; break;
    case EM_F16: for (i = 0; i < n; i++) ((uint16_t *)dst)[i] = em_f2h((float)v[i]); break;
    case EM_BF16: for (i = 0; i < n; i++) ((uint16_t *)dst)[i] = em_f2bf((float)v[i]); break;
    default: break;
    }
}

/* ---- the per-ISA batch kernels ------------------------------------------- */

#define EM_PHILOX_IMPL
#define EM_CAT_(a, b) a##_##b
#define EM_CAT(a, b) EM_CAT_(a, b)
#define FN(name) EM_CAT(name, SFX)

#define SFX generic
#define EM_ISA 0
#include "philox.c"
#undef SFX
#undef EM_ISA

#pragma GCC push_options
#pragma GCC target("avx2")
#define SFX avx2
#define EM_ISA 1
#include "philox.c"
#undef SFX
#undef EM_ISA
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2")
#define SFX avx512
#define EM_ISA 2
#include "philox.c"
#undef SFX
#undef EM_ISA
#pragma GCC pop_options

/* ---- dispatch and threading ---------------------------------------------- */

typedef void (*batch_fn)(const rctx *c, int64_t e0, int64_t e1);
typedef void (*philox_fn)(uint32_t w[4][PB], uint64_t blk0, uint64_t off, uint64_t seed);

typedef struct {
    batch_fn f32, f64, i32, i64, bern, dropout;
    philox_fn batch;
} rtable;

static const rtable TABLES[3] = {
    {fill_f32_generic, fill_f64_generic, fill_i32_generic, fill_i64_generic, fill_bern_generic,
     dropout_generic, philox_batch_generic},
    {fill_f32_avx2, fill_f64_avx2, fill_i32_avx2, fill_i64_avx2, fill_bern_avx2, dropout_avx2,
     philox_batch_avx2},
    {fill_f32_avx512, fill_f64_avx512, fill_i32_avx512, fill_i64_avx512, fill_bern_avx512,
     dropout_avx512, philox_batch_avx512},
};

int em_random_isa(void) {
    int isa = ember_cpu_isa();
    return isa < 0 ? 0 : (isa > 2 ? 2 : isa);
}

static const rtable *table(void) { return &TABLES[em_random_isa()]; }

void em_philox_blocks(uint32_t w[4][EM_PHILOX_BATCH], uint64_t blk0, uint64_t offset,
                      uint64_t seed) {
    table()->batch(w, blk0, offset, seed);
}

/* Split n elements over threads in whole batches of per_batch elements. */
static void run_batches(batch_fn fn, const rctx *c, int64_t n, int64_t per_batch, int nthreads) {
    if (n <= 0) return;
    int64_t nb = (n + per_batch - 1) / per_batch;
    if (nthreads > nb) nthreads = (int)nb;
    if (nthreads <= 1) {
        fn(c, 0, n);
        return;
    }
    #pragma omp parallel for num_threads(nthreads) schedule(static)
    for (int t = 0; t < nthreads; t++) {
        int64_t b0 = nb * t / nthreads, b1 = nb * (t + 1) / nthreads;
        int64_t e0 = b0 * per_batch, e1 = b1 * per_batch < n ? b1 * per_batch : n;
        if (e0 < e1) fn(c, e0, e1);
    }
}

void em_rand_float(int kind, int dtype, void *out, int64_t n, uint64_t seed, uint64_t offset,
                   double a, double b, int nthreads) {
    rctx c;
    memset(&c, 0, sizeof c);
    c.kind = kind; c.dtype = dtype; c.out = (char *)out; c.seed = seed; c.off = offset;
    c.a = a; c.b = b;
    const rtable *t = table();
    int single = (dtype == EM_F32 || dtype == EM_F16 || dtype == EM_BF16) &&
                 kind != EM_RD_GEOMETRIC;
    if (single) {
        c.bits = dtype == EM_F32 ? 24 : dtype == EM_F16 ? 11 : 8;
        run_batches(t->f32, &c, n, 4 * PB, nthreads);
    } else {
        run_batches(t->f64, &c, n, 2 * PB, nthreads);
    }
}

void em_rand_int(int dtype, void *out, int64_t n, uint64_t seed, uint64_t offset, int64_t lo,
                 uint64_t range, int nthreads) {
    rctx c;
    memset(&c, 0, sizeof c);
    c.dtype = dtype; c.out = (char *)out; c.seed = seed; c.off = offset; c.lo = lo;
    c.range = range;
    const rtable *t = table();
    if (range != 0 && range <= ((uint64_t)1 << 32))
        run_batches(t->i32, &c, n, 4 * PB, nthreads);
    else
        run_batches(t->i64, &c, n, 2 * PB, nthreads);
}

#define prob_threshold em_prob_threshold

void em_rand_bernoulli(int dtype, void *out, int64_t n, uint64_t seed, uint64_t offset, double p,
                       int nthreads) {
    rctx c;
    memset(&c, 0, sizeof c);
    c.dtype = dtype; c.out = (char *)out; c.seed = seed; c.off = offset;
    c.thresh = prob_threshold(p);
    run_batches(table()->bern, &c, n, 4 * PB, nthreads);
}

static void bern_p_batch(const rctx *c, int64_t e0, int64_t e1) {
    /* 64 bits per element, the f64 layout */
    double *p = (double *)c->out;
    uint32_t w[4][PB];
    philox_fn batch = table()->batch;
    for (int64_t pos = e0; pos < e1; pos += 2 * PB) {
        batch(w, (uint64_t)(pos / (2 * PB)) * PB, c->off, c->seed);
        int64_t cnt = e1 - pos < 2 * PB ? e1 - pos : 2 * PB;
        for (int64_t j = 0; j < cnt; j++) {
            int h = (int)(j / PB), b = (int)(j % PB);
            double u = w53(w[2 * h][b], w[2 * h + 1][b]) * 0x1p-53;
            p[pos + j] = u < p[pos + j] ? 1.0 : 0.0;
        }
    }
}

int64_t em_rand_bernoulli_p(double *p, int64_t n, uint64_t seed, uint64_t offset, int nthreads) {
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) bad += !(p[i] >= 0.0 && p[i] <= 1.0);
    if (bad) return bad;
    rctx c;
    memset(&c, 0, sizeof c);
    c.out = (char *)p; c.seed = seed; c.off = offset;
    run_batches(bern_p_batch, &c, n, 2 * PB, nthreads);
    return 0;
}

void em_dropout(int dtype, const void *x, void *out, uint8_t *mask, int64_t n, double p,
                uint64_t seed, uint64_t offset, int nthreads) {
    rctx c;
    memset(&c, 0, sizeof c);
    c.dtype = dtype; c.x = (const char *)x; c.out = (char *)out; c.mask = mask;
    c.seed = seed; c.off = offset;
    c.thresh = prob_threshold(p);
    c.scale = p >= 1 ? 0.0 : 1.0 / (1.0 - p);
    run_batches(table()->dropout, &c, n, 4 * PB, nthreads);
}

/* ---- serial streams: randperm and multinomial ---------------------------- */

typedef struct {
    uint64_t seed, off, blk;
    int idx;
    philox_fn batch;
    uint32_t w[4][PB];
} pstream;

static void ps_init(pstream *s, uint64_t seed, uint64_t off, uint64_t blk) {
    s->seed = seed; s->off = off; s->blk = blk; s->idx = 4 * PB;
    s->batch = table()->batch;
}

static inline uint32_t ps_next(pstream *s) {
    if (s->idx == 4 * PB) {
        s->batch(s->w, s->blk, s->off, s->seed);
        s->blk += PB;
        s->idx = 0;
    }
    uint32_t v = s->w[s->idx / PB][s->idx % PB];
    s->idx++;
    return v;
}

/* uniform double in [0, 1) from 53 bits */
static inline double ps_u01(pstream *s) {
    uint32_t hi = ps_next(s), lo = ps_next(s);
    return w53(hi, lo) * 0x1p-53;
}

/* uniform integer in [0, bound) */
static inline uint64_t ps_below(pstream *s, uint64_t bound) {
    if (bound <= ((uint64_t)1 << 32)) return ((uint64_t)ps_next(s) * bound) >> 32;
    uint64_t x = ((uint64_t)ps_next(s) << 32) | ps_next(s);
    return x % bound;
}

void em_randperm(int64_t *out, int64_t n, uint64_t seed, uint64_t offset) {
    for (int64_t i = 0; i < n; i++) out[i] = i;
    pstream s;
    ps_init(&s, seed, offset, 0);
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)ps_below(&s, (uint64_t)i + 1);
        int64_t t = out[i];
        out[i] = out[j];
        out[j] = t;
    }
}

typedef struct { double key; int64_t idx; } keyed;

static int keyed_cmp(const void *a, const void *b) {
    const keyed *x = (const keyed *)a, *y = (const keyed *)b;
    if (x->key < y->key) return -1;
    if (x->key > y->key) return 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static void multinomial_row(const double *p, int64_t ncat, int64_t nsamp, int replacement,
                            int64_t *out, pstream *s, double *cdf, keyed *keys) {
    if (replacement) {
        double acc = 0;
        int64_t last = 0;
        for (int64_t i = 0; i < ncat; i++) {
            acc += p[i];
            cdf[i] = acc;
            if (p[i] > 0) last = i;
        }
        for (int64_t k = 0; k < nsamp; k++) {
            double u = ps_u01(s) * acc;
            int64_t lo = 0, hi = ncat;      /* first i with cdf[i] > u */
            while (lo < hi) {
                int64_t mid = lo + (hi - lo) / 2;
                if (cdf[mid] > u) hi = mid; else lo = mid + 1;
            }
            out[k] = lo < ncat ? lo : last;
        }
        return;
    }
    /* without replacement: the k smallest of E_i / p_i (exponential race) */
    for (int64_t i = 0; i < ncat; i++) {
        /* low word first (the order gcc gave the old unsequenced call; the CUDA
           twin in src_cuda/philox.cu draws the same) */
        uint32_t lo = ps_next(s), hi = ps_next(s);
        double u = (w53(hi, lo) + 0.5) * 0x1p-53;
        keys[i].key = p[i] > 0 ? -em_log_pos(u) / p[i] : INFINITY;
        keys[i].idx = i;
    }
    qsort(keys, (size_t)ncat, sizeof(keyed), keyed_cmp);
    for (int64_t k = 0; k < nsamp; k++) out[k] = keys[k].idx;
}

int em_multinomial(const double *p, int64_t rows, int64_t ncat, int64_t nsamp, int replacement,
                   int64_t *out, uint64_t seed, uint64_t offset, int nthreads) {
    for (int64_t r = 0; r < rows; r++) {
        const double *q = p + r * ncat;
        double sum = 0;
        int64_t nz = 0;
        for (int64_t i = 0; i < ncat; i++) {
            if (!(q[i] >= 0) || isinf(q[i])) return 1;
            sum += q[i];
            nz += q[i] > 0;
        }
        if (!(sum > 0)) return 2;
        if (!replacement && nz < nsamp) return 3;
    }
    int64_t words = 2 * (replacement ? nsamp : ncat);
    uint64_t row_blocks = (uint64_t)((words + 4 * PB - 1) / (4 * PB)) * PB;
    if (nthreads > rows) nthreads = (int)(rows > 0 ? rows : 1);
    int failed = 0;
    #pragma omp parallel num_threads(nthreads) reduction(|:failed)
    {
        double *cdf = replacement ? (double *)malloc(sizeof(double) * (size_t)ncat) : NULL;
        keyed *keys = replacement ? NULL : (keyed *)malloc(sizeof(keyed) * (size_t)ncat);
        if ((replacement && !cdf) || (!replacement && !keys)) {
            failed = 1;
        } else {
            #pragma omp for schedule(static)
            for (int64_t r = 0; r < rows; r++) {
                pstream s;
                ps_init(&s, seed, offset, (uint64_t)r * row_blocks);
                multinomial_row(p + r * ncat, ncat, nsamp, replacement, out + r * nsamp, &s,
                                cdf, keys);
            }
        }
        free(cdf);
        free(keys);
    }
    return failed ? 4 : 0;
}

/* ---- normal(mean_tensor, std_tensor): out = mean + std * z ---------------- */

static void affine_f32(char **p, const int64_t *st, int64_t n, const void *aux) {
    (void)aux;
    char *o = p[0], *z = p[1], *m = p[2], *s = p[3];
    for (int64_t i = 0; i < n; i++)
        *(float *)(o + i * st[0]) = *(float *)(m + i * st[2]) +
                                    *(float *)(s + i * st[3]) * *(float *)(z + i * st[1]);
}

static void affine_f64(char **p, const int64_t *st, int64_t n, const void *aux) {
    (void)aux;
    char *o = p[0], *z = p[1], *m = p[2], *s = p[3];
    for (int64_t i = 0; i < n; i++)
        *(double *)(o + i * st[0]) = *(double *)(m + i * st[2]) +
                                     *(double *)(s + i * st[3]) * *(double *)(z + i * st[1]);
}

em_loop em_normal_affine_loop(int dtype) {
    return dtype == EM_F32 ? affine_f32 : dtype == EM_F64 ? affine_f64 : NULL;
}

#else  /* EM_PHILOX_IMPL: the batch kernels, compiled once per ISA ----------- */

/* PB consecutive blocks: counters (blk0 + b, off) under key seed.  blk0 is a
   multiple of PB, so the low counter word never carries within a batch. */
static void FN(philox_batch)(uint32_t w[4][PB], uint64_t blk0, uint64_t off, uint64_t seed) {
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    const uint32_t lo = (uint32_t)blk0, hi = (uint32_t)(blk0 >> 32);
#if EM_ISA == 2
    __m512i c0 = _mm512_add_epi32(_mm512_set1_epi32((int)lo), _mm512_setr_epi32(
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
    __m512i c1 = _mm512_set1_epi32((int)hi), c2 = _mm512_set1_epi32((int)(uint32_t)off);
    __m512i c3 = _mm512_set1_epi32((int)(uint32_t)(off >> 32));
    const __m512i M0 = _mm512_set1_epi32((int)PHILOX_M0), M1 = _mm512_set1_epi32((int)PHILOX_M1);
    for (int r = 0; r < 10; r++) {
        __m512i pe0 = _mm512_mul_epu32(c0, M0), po0 = _mm512_mul_epu32(_mm512_srli_epi64(c0, 32), M0);
        __m512i pe1 = _mm512_mul_epu32(c2, M1), po1 = _mm512_mul_epu32(_mm512_srli_epi64(c2, 32), M1);
        __m512i lo0 = _mm512_mask_blend_epi32(0xAAAA, pe0, _mm512_slli_epi64(po0, 32));
        __m512i hi0 = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(pe0, 32), po0);
        __m512i lo1 = _mm512_mask_blend_epi32(0xAAAA, pe1, _mm512_slli_epi64(po1, 32));
        __m512i hi1 = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(pe1, 32), po1);
        c0 = _mm512_xor_si512(_mm512_xor_si512(hi1, c1), _mm512_set1_epi32((int)k0));
        c2 = _mm512_xor_si512(_mm512_xor_si512(hi0, c3), _mm512_set1_epi32((int)k1));
        c1 = lo1;
        c3 = lo0;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    _mm512_storeu_si512((void *)w[0], c0);
    _mm512_storeu_si512((void *)w[1], c1);
    _mm512_storeu_si512((void *)w[2], c2);
    _mm512_storeu_si512((void *)w[3], c3);
#elif EM_ISA == 1
    /* two interleaved vectors of 8 blocks hide the multiply latency */
    __m256i c0[2], c1[2], c2[2], c3[2];
    const __m256i M0 = _mm256_set1_epi32((int)PHILOX_M0), M1 = _mm256_set1_epi32((int)PHILOX_M1);
    for (int v = 0; v < 2; v++) {
        c0[v] = _mm256_add_epi32(_mm256_set1_epi32((int)(lo + 8u * (uint32_t)v)),
                                 _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        c1[v] = _mm256_set1_epi32((int)hi);
        c2[v] = _mm256_set1_epi32((int)(uint32_t)off);
        c3[v] = _mm256_set1_epi32((int)(uint32_t)(off >> 32));
    }
    for (int r = 0; r < 10; r++) {
        __m256i K0 = _mm256_set1_epi32((int)k0), K1 = _mm256_set1_epi32((int)k1);
        for (int v = 0; v < 2; v++) {
            __m256i pe0 = _mm256_mul_epu32(c0[v], M0);
            __m256i po0 = _mm256_mul_epu32(_mm256_srli_epi64(c0[v], 32), M0);
            __m256i pe1 = _mm256_mul_epu32(c2[v], M1);
            __m256i po1 = _mm256_mul_epu32(_mm256_srli_epi64(c2[v], 32), M1);
            __m256i lo0 = _mm256_blend_epi32(pe0, _mm256_slli_epi64(po0, 32), 0xAA);
            __m256i hi0 = _mm256_blend_epi32(_mm256_srli_epi64(pe0, 32), po0, 0xAA);
            __m256i lo1 = _mm256_blend_epi32(pe1, _mm256_slli_epi64(po1, 32), 0xAA);
            __m256i hi1 = _mm256_blend_epi32(_mm256_srli_epi64(pe1, 32), po1, 0xAA);
            c0[v] = _mm256_xor_si256(_mm256_xor_si256(hi1, c1[v]), K0);
            c2[v] = _mm256_xor_si256(_mm256_xor_si256(hi0, c3[v]), K1);
            c1[v] = lo1;
            c3[v] = lo0;
        }
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    for (int v = 0; v < 2; v++) {
        _mm256_storeu_si256((__m256i *)(w[0] + 8 * v), c0[v]);
        _mm256_storeu_si256((__m256i *)(w[1] + 8 * v), c1[v]);
        _mm256_storeu_si256((__m256i *)(w[2] + 8 * v), c2[v]);
        _mm256_storeu_si256((__m256i *)(w[3] + 8 * v), c3[v]);
    }
#elif defined(__x86_64__)
    /* SSE2: four interleaved vectors of 4 blocks */
    __m128i c0[4], c1[4], c2[4], c3[4];
    const __m128i M0 = _mm_set1_epi32((int)PHILOX_M0), M1 = _mm_set1_epi32((int)PHILOX_M1);
    const __m128i LO = _mm_set_epi32(0, -1, 0, -1), HI = _mm_set_epi32(-1, 0, -1, 0);
    for (int v = 0; v < 4; v++) {
        c0[v] = _mm_add_epi32(_mm_set1_epi32((int)(lo + 4u * (uint32_t)v)), _mm_setr_epi32(0, 1, 2, 3));
        c1[v] = _mm_set1_epi32((int)hi);
        c2[v] = _mm_set1_epi32((int)(uint32_t)off);
        c3[v] = _mm_set1_epi32((int)(uint32_t)(off >> 32));
    }
    for (int r = 0; r < 10; r++) {
        __m128i K0 = _mm_set1_epi32((int)k0), K1 = _mm_set1_epi32((int)k1);
        for (int v = 0; v < 4; v++) {
            __m128i pe0 = _mm_mul_epu32(c0[v], M0), po0 = _mm_mul_epu32(_mm_srli_epi64(c0[v], 32), M0);
            __m128i pe1 = _mm_mul_epu32(c2[v], M1), po1 = _mm_mul_epu32(_mm_srli_epi64(c2[v], 32), M1);
            __m128i lo0 = _mm_or_si128(_mm_and_si128(pe0, LO), _mm_slli_epi64(po0, 32));
            __m128i hi0 = _mm_or_si128(_mm_srli_epi64(pe0, 32), _mm_and_si128(po0, HI));
            __m128i lo1 = _mm_or_si128(_mm_and_si128(pe1, LO), _mm_slli_epi64(po1, 32));
            __m128i hi1 = _mm_or_si128(_mm_srli_epi64(pe1, 32), _mm_and_si128(po1, HI));
            c0[v] = _mm_xor_si128(_mm_xor_si128(hi1, c1[v]), K0);
            c2[v] = _mm_xor_si128(_mm_xor_si128(hi0, c3[v]), K1);
            c1[v] = lo1;
            c3[v] = lo0;
        }
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    for (int v = 0; v < 4; v++) {
        _mm_storeu_si128((__m128i *)(w[0] + 4 * v), c0[v]);
        _mm_storeu_si128((__m128i *)(w[1] + 4 * v), c1[v]);
        _mm_storeu_si128((__m128i *)(w[2] + 4 * v), c2[v]);
        _mm_storeu_si128((__m128i *)(w[3] + 4 * v), c3[v]);
    }
#else
    for (int b = 0; b < PB; b++) {
        uint32_t ctr[4] = {lo + (uint32_t)b, hi, (uint32_t)off, (uint32_t)(off >> 32)}, key[2] = {k0, k1};
        uint32_t o[4];
        em_philox4x32_10(ctr, key, o);
        w[0][b] = o[0]; w[1][b] = o[1]; w[2][b] = o[2]; w[3][b] = o[3];
    }
#endif
}

/* float32 source: one word per element, 4*PB elements per batch */
static void FN(fill_f32)(const rctx *c, int64_t e0, int64_t e1) {
    uint32_t w[4][PB];
    float tmp[4 * PB];
    const int isz = em_itemsize[c->dtype], bits = c->bits;
    const float a = (float)c->a, b = (float)c->b, scale = ldexpf(1.0f, -bits);
    const float span = (float)(c->b - c->a);
    for (int64_t pos = e0; pos < e1; pos += 4 * PB) {
        FN(philox_batch)(w, (uint64_t)(pos / (4 * PB)) * PB, c->off, c->seed);
        int64_t cnt = e1 - pos < 4 * PB ? e1 - pos : 4 * PB;
        float *d = (c->dtype == EM_F32 && cnt == 4 * PB) ? (float *)c->out + pos : tmp;
        switch (c->kind) {
        case EM_RD_UNIFORM:
            for (int l = 0; l < 4; l++)
                for (int j = 0; j < PB; j++) d[l * PB + j] = u01f(w[l][j], bits, scale) * span + a;
            break;
        case EM_RD_NORMAL:
        case EM_RD_LOGNORMAL:
            for (int h = 0; h < 2; h++) {
                const uint32_t *wa = w[2 * h], *wb = w[2 * h + 1];
                float *dc = d + 2 * h * PB, *ds = d + (2 * h + 1) * PB;
                for (int j = 0; j < PB; j++) {
                    float u1 = ((float)(int32_t)(wa[j] >> 8) + 1.0f) * 0x1p-24f;
                    float r = sqrtf(-2.0f * em_logf_pos(u1));
                    float cs, sn;
                    em_sincos2pif((float)(int32_t)(wb[j] >> 8) * 0x1p-24f, &cs, &sn);
                    dc[j] = a + b * (r * cs);
                    ds[j] = a + b * (r * sn);
                }
            }
            if (c->kind == EM_RD_LOGNORMAL)
                for (int j = 0; j < 4 * PB; j++) d[j] = expf(d[j]);
            break;
        case EM_RD_EXPONENTIAL: {
            const float inv = (float)(-1.0 / c->a);
            for (int l = 0; l < 4; l++)
                for (int j = 0; j < PB; j++) d[l * PB + j] = inv * em_logf_pos(u01f_open(w[l][j]));
            break;
        }
        case EM_RD_CAUCHY:
            for (int l = 0; l < 4; l++)
                for (int j = 0; j < PB; j++)
                    d[l * PB + j] = a + b * tanf(3.14159265358979f * (u01f_open(w[l][j]) - 0.5f));
            break;
        default:
            break;
        }
        if (d == tmp) store_f32(c->dtype, c->out + pos * isz, tmp, cnt);
    }
}

/* float64 source: two words per element, 2*PB elements per batch */
static void FN(fill_f64)(const rctx *c, int64_t e0, int64_t e1) {
    uint32_t w[4][PB];
    double tmp[2 * PB];
    const int isz = em_itemsize[c->dtype];
    const double a = c->a, b = c->b, span = c->b - c->a;
    for (int64_t pos = e0; pos < e1; pos += 2 * PB) {
        FN(philox_batch)(w, (uint64_t)(pos / (2 * PB)) * PB, c->off, c->seed);
        int64_t cnt = e1 - pos < 2 * PB ? e1 - pos : 2 * PB;
        double *d = (c->dtype == EM_F64 && cnt == 2 * PB) ? (double *)c->out + pos : tmp;
        switch (c->kind) {
        case EM_RD_UNIFORM:
            for (int h = 0; h < 2; h++)
                for (int j = 0; j < PB; j++)
                    d[h * PB + j] = w53(w[2 * h][j], w[2 * h + 1][j]) * 0x1p-53 * span + a;
            break;
        case EM_RD_NORMAL:
        case EM_RD_LOGNORMAL:
            for (int j = 0; j < PB; j++) {
                double u1 = (w53(w[0][j], w[1][j]) + 1.0) * 0x1p-53;
                double r = sqrt(-2.0 * em_log_pos(u1));
                double cs, sn;
                em_sincos2pi(w53(w[2][j], w[3][j]) * 0x1p-53, &cs, &sn);
                d[j] = a + b * (r * cs);
                d[PB + j] = a + b * (r * sn);
            }
            if (c->kind == EM_RD_LOGNORMAL)
                for (int j = 0; j < 2 * PB; j++) d[j] = exp(d[j]);
            break;
        case EM_RD_EXPONENTIAL: {
            const double inv = -1.0 / a;
            for (int h = 0; h < 2; h++)
                for (int j = 0; j < PB; j++)
                    d[h * PB + j] = inv * em_log_pos((w53(w[2 * h][j], w[2 * h + 1][j]) + 0.5) *
                                                     0x1p-53);
            break;
        }
        case EM_RD_CAUCHY:
            for (int h = 0; h < 2; h++)
                for (int j = 0; j < PB; j++)
                    d[h * PB + j] = a + b * tan(3.141592653589793 *
                                     ((w53(w[2 * h][j], w[2 * h + 1][j]) + 0.5) * 0x1p-53 - 0.5));
            break;
        case EM_RD_GEOMETRIC: {
            const double lq = log1p(-a);
            for (int h = 0; h < 2; h++)
                for (int j = 0; j < PB; j++)
                    d[h * PB + j] = ceil(em_log_pos((w53(w[2 * h][j], w[2 * h + 1][j]) + 0.5) *
                                                    0x1p-53) / lq);
            break;
        }
        default:
            break;
        }
        if (d == tmp) store_f64(c->dtype, c->out + pos * isz, tmp, cnt);
    }
}

/* integers in [lo, lo + range), range <= 2^32: one word per element */
static void FN(fill_i32)(const rctx *c, int64_t e0, int64_t e1) {
    uint32_t w[4][PB];
    int64_t tmp[4 * PB];
    const int isz = em_itemsize[c->dtype];
    const uint64_t range = c->range;
    const int64_t lo = c->lo;
    for (int64_t pos = e0; pos < e1; pos += 4 * PB) {
        FN(philox_batch)(w, (uint64_t)(pos / (4 * PB)) * PB, c->off, c->seed);
        int64_t cnt = e1 - pos < 4 * PB ? e1 - pos : 4 * PB;
        if (c->dtype == EM_I32 && cnt == 4 * PB) {
            int32_t *d = (int32_t *)c->out + pos;
            for (int l = 0; l < 4; l++)
                for (int j = 0; j < PB; j++)
                    d[l * PB + j] = (int32_t)(lo + (int64_t)(((uint64_t)w[l][j] * range) >> 32));
            continue;
        }
        int64_t *d = (c->dtype == EM_I64 && cnt == 4 * PB) ? (int64_t *)c->out + pos : tmp;
        for (int l = 0; l < 4; l++)
            for (int j = 0; j < PB; j++)
                d[l * PB + j] = lo + (int64_t)(((uint64_t)w[l][j] * range) >> 32);
        if (d == tmp) store_i64(c->dtype, c->out + pos * isz, tmp, cnt);
    }
}

/* integers over a range > 2^32 (or 2^64 when range == 0): two words per element */
static void FN(fill_i64)(const rctx *c, int64_t e0, int64_t e1) {
    uint32_t w[4][PB];
    int64_t tmp[2 * PB];
    const int isz = em_itemsize[c->dtype];
    const uint64_t range = c->range;
    const uint64_t lo = (uint64_t)c->lo;
    for (int64_t pos = e0; pos < e1; pos += 2 * PB) {
        FN(philox_batch)(w, (uint64_t)(pos / (2 * PB)) * PB, c->off, c->seed);
        int64_t cnt = e1 - pos < 2 * PB ? e1 - pos : 2 * PB;
        int64_t *d = (c->dtype == EM_I64 && cnt == 2 * PB) ? (int64_t *)c->out + pos : tmp;
        for (int h = 0; h < 2; h++)
            for (int j = 0; j < PB; j++) {
                uint64_t x = ((uint64_t)w[2 * h][j] << 32) | w[2 * h + 1][j];
                d[h * PB + j] = (int64_t)(lo + (range ? x % range : x));
            }
        if (d == tmp) store_i64(c->dtype, c->out + pos * isz, tmp, cnt);
    }
}

static void FN(fill_bern)(const rctx *c, int64_t e0, int64_t e1) {
    uint32_t w[4][PB];
    int64_t tmp[4 * PB];
    uint8_t tb[4 * PB];
    const int isz = em_itemsize[c->dtype];
    const uint64_t th = c->thresh;
    const int bytes = c->dtype == EM_BOOL || c->dtype == EM_U8 || c->dtype == EM_I8;
    for (int64_t pos = e0; pos < e1; pos += 4 * PB) {
        FN(philox_batch)(w, (uint64_t)(pos / (4 * PB)) * PB, c->off, c->seed);
        int64_t cnt = e1 - pos < 4 * PB ? e1 - pos : 4 * PB;
        if (bytes) {
            uint8_t *d = cnt == 4 * PB ? (uint8_t *)c->out + pos : tb;
            for (int l = 0; l < 4; l++)
                for (int j = 0; j < PB; j++) d[l * PB + j] = (uint64_t)w[l][j] < th;
            if (d == tb) memcpy(c->out + pos, tb, (size_t)cnt);
            continue;
        }
        if (c->dtype == EM_F32 && cnt == 4 * PB) {
            float *d = (float *)c->out + pos;
            for (int l = 0; l < 4; l++)
                for (int j = 0; j < PB; j++) d[l * PB + j] = (uint64_t)w[l][j] < th ? 1.0f : 0.0f;
            continue;
        }
        for (int l = 0; l < 4; l++)
            for (int j = 0; j < PB; j++) tmp[l * PB + j] = (uint64_t)w[l][j] < th;
        store_i64(c->dtype, c->out + pos * isz, tmp, cnt);
    }
}

static void FN(dropout)(const rctx *c, int64_t e0, int64_t e1) {
    uint32_t w[4][PB];
    uint8_t keep[4 * PB];
    const uint64_t th = c->thresh;
    const int dt = c->dtype;
    const float sf = (float)c->scale;
    const double sd = c->scale;
    for (int64_t pos = e0; pos < e1; pos += 4 * PB) {
        FN(philox_batch)(w, (uint64_t)(pos / (4 * PB)) * PB, c->off, c->seed);
        int cnt = (int)(e1 - pos < 4 * PB ? e1 - pos : 4 * PB);
        for (int l = 0; l < 4; l++)
            for (int j = 0; j < PB; j++) keep[l * PB + j] = (uint64_t)w[l][j] >= th;
        memcpy(c->mask + pos, keep, (size_t)cnt);
        if (dt == EM_F32) {
            const float *x = (const float *)c->x + pos;
            float *o = (float *)c->out + pos;
            for (int j = 0; j < cnt; j++) o[j] = keep[j] ? x[j] * sf : 0.0f;
        } else if (dt == EM_F64) {
            const double *x = (const double *)c->x + pos;
            double *o = (double *)c->out + pos;
            for (int j = 0; j < cnt; j++) o[j] = keep[j] ? x[j] * sd : 0.0;
        } else if (dt == EM_F16) {
            const uint16_t *x = (const uint16_t *)c->x + pos;
            uint16_t *o = (uint16_t *)c->out + pos;
            for (int j = 0; j < cnt; j++) o[j] = em_f2h(keep[j] ? em_h2f(x[j]) * sf : 0.0f);
        } else if (dt == EM_BF16) {
            const uint16_t *x = (const uint16_t *)c->x + pos;
            uint16_t *o = (uint16_t *)c->out + pos;
            for (int j = 0; j < cnt; j++) o[j] = em_f2bf(keep[j] ? em_bf2f(x[j]) * sf : 0.0f);
        }
    }
}

#endif /* EM_PHILOX_IMPL */
