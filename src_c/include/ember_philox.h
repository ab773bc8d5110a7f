/* Philox4x32-10 and the word -> value transforms of ember's random numbers,
   written once for the CPU kernels (src_c/philox.c) and the CUDA kernels
   (src_cuda/philox.cu), so a seed gives the same stream on both.

   The element layout (see ember_random.h): 32-bit consumers take lane L of
   block b of a batch for element L*EM_PHILOX_BATCH + b; 64-bit consumers take
   the word pair (2P, 2P+1) of block b for element P*EM_PHILOX_BATCH + b.
   em_philox_block_*() give the values one block feeds; the CPU computes the
   same values with its batched (SIMD) generator.  No FMA contraction may be
   applied to these formulas (gcc -std=c11 keeps it off; nvcc needs
   -fmad=false), so float results are the same bits on every target. */
#ifndef EMBER_PHILOX_H
#define EMBER_PHILOX_H
#include "ember_math.h"

#define EM_PHILOX_M0 0xD2511F53u
#define EM_PHILOX_M1 0xCD9E8D57u
#define EM_PHILOX_W0 0x9E3779B9u
#define EM_PHILOX_W1 0xBB67AE85u

/* one Philox4x32-10 block: counter (c0..c3) under key (k0, k1) */
EM_HD_INLINE void em_philox_round10(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3,
                                    uint32_t k0, uint32_t k1, uint32_t out[4]) {
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)EM_PHILOX_M0 * c0, p1 = (uint64_t)EM_PHILOX_M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
        k0 += EM_PHILOX_W0;
        k1 += EM_PHILOX_W1;
    }
    out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
}

/* the words of block `blk` of a call with (seed, offset) */
EM_HD_INLINE void em_philox_words(uint64_t blk, uint64_t off, uint64_t seed, uint32_t w[4]) {
    em_philox_round10((uint32_t)blk, (uint32_t)(blk >> 32), (uint32_t)off, (uint32_t)(off >> 32),
                      (uint32_t)seed, (uint32_t)(seed >> 32), w);
}

EM_HD_INLINE float em_ph_f32_bits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
EM_HD_INLINE uint32_t em_ph_bits_f32(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
EM_HD_INLINE double em_ph_f64_bits(uint64_t u) { double f; memcpy(&f, &u, 8); return f; }
EM_HD_INLINE uint64_t em_ph_bits_f64(double f) { uint64_t u; memcpy(&u, &f, 8); return u; }

/* natural log of a positive, normal float: ln x = e ln2 + 2 atanh((m-1)/(m+1)) */
EM_HD_INLINE float em_logf_pos(float x) {
    uint32_t u = em_ph_bits_f32(x);
    int32_t e = (int32_t)(u >> 23) - 127;
    float m = em_ph_f32_bits((u & 0x007fffffu) | 0x3f800000u);
    int big = m > 1.41421356f;
    m = big ? m * 0.5f : m;
    e = big ? e + 1 : e;
    float s = (m - 1.0f) / (m + 1.0f), s2 = s * s;
    float p = 1.0f + s2 * (0.33333333f + s2 * (0.2f + s2 * (0.14285714f + s2 * (0.11111111f +
              s2 * 0.09090909f))));
    float fe = (float)e;
    return fe * 0.693145751953125f + (fe * 1.428606765330187e-06f + 2.0f * s * p);
}

EM_HD_INLINE double em_log_pos(double x) {
    uint64_t u = em_ph_bits_f64(x);
    int32_t e = (int32_t)(u >> 52) - 1023;
    double m = em_ph_f64_bits((u & 0x000fffffffffffffull) | 0x3ff0000000000000ull);
    int big = m > 1.4142135623730951;
    m = big ? m * 0.5 : m;
    e = big ? e + 1 : e;
    double s = (m - 1.0) / (m + 1.0), s2 = s * s;
    double p = 1.0 / 23;
    p = 1.0 / 21 + s2 * p; p = 1.0 / 19 + s2 * p; p = 1.0 / 17 + s2 * p;
    p = 1.0 / 15 + s2 * p; p = 1.0 / 13 + s2 * p; p = 1.0 / 11 + s2 * p;
    p = 1.0 / 9 + s2 * p; p = 1.0 / 7 + s2 * p; p = 1.0 / 5 + s2 * p;
    p = 1.0 / 3 + s2 * p; p = 1.0 + s2 * p;
    double fe = (double)e;
    return fe * 6.93147180369123816490e-01 + (fe * 1.90821492927058770002e-10 + 2.0 * s * p);
}

/* cos and sin of 2*pi*u for u in [0, 1): quadrant from round(4u), then
   polynomials on [-pi/4, pi/4]. */
EM_HD_INLINE void em_sincos2pif(float u, float *c, float *s) {
    float t = 4.0f * u;
    int32_t q = (int32_t)(t + 0.5f);
    float th = (t - (float)q) * 1.57079632679f, t2 = th * th;
    float sn = th * (1.0f + t2 * (-1.6666667e-1f + t2 * (8.3333333e-3f + t2 * (-1.9841270e-4f +
               t2 * 2.7557319e-6f))));
    float cs = 1.0f + t2 * (-0.5f + t2 * (4.1666667e-2f + t2 * (-1.3888889e-3f + t2 *
               (2.4801587e-5f + t2 * -2.7557319e-7f))));
    float cc = (q & 1) ? sn : cs, ss = (q & 1) ? cs : sn;
    *c = ((q + 1) & 2) ? -cc : cc;
    *s = (q & 2) ? -ss : ss;
}

EM_HD_INLINE void em_sincos2pi(double u, double *c, double *s) {
    double t = 4.0 * u;
    int32_t q = (int32_t)(t + 0.5);
    double th = (t - (double)q) * 1.5707963267948966, t2 = th * th;
    double sp = 1.0 / 355687428096000.0;                     /* 1/17! */
    sp = -1.0 / 1307674368000.0 + t2 * sp;
    sp = 1.0 / 6227020800.0 + t2 * sp;
    sp = -1.0 / 39916800.0 + t2 * sp;
    sp = 1.0 / 362880.0 + t2 * sp;
    sp = -1.0 / 5040.0 + t2 * sp;
    sp = 1.0 / 120.0 + t2 * sp;
    sp = -1.0 / 6.0 + t2 * sp;
    sp = 1.0 + t2 * sp;
    double cp = -1.0 / 6402373705728000.0;                   /* -1/18! */
    cp = 1.0 / 20922789888000.0 + t2 * cp;
    cp = -1.0 / 87178291200.0 + t2 * cp;
    cp = 1.0 / 479001600.0 + t2 * cp;
    cp = -1.0 / 3628800.0 + t2 * cp;
    cp = 1.0 / 40320.0 + t2 * cp;
    cp = -1.0 / 720.0 + t2 * cp;
    cp = 1.0 / 24.0 + t2 * cp;
    cp = -0.5 + t2 * cp;
    cp = 1.0 + t2 * cp;
    double sn = th * sp;
    double cc = (q & 1) ? sn : cp, ss = (q & 1) ? cp : sn;
    *c = ((q + 1) & 2) ? -cc : cc;
    *s = (q & 2) ? -ss : ss;
}

/* 32-bit word -> float in [0, 1) with `bits` significant bits */
EM_HD_INLINE float em_u01f(uint32_t w, int bits, float scale) {
    return (float)(int32_t)(w >> (32 - bits)) * scale;
}
/* 32-bit word -> float in (0, 1) (never 0 or 1) */
EM_HD_INLINE float em_u01f_open(uint32_t w) {
    return ((float)(int32_t)(w >> 8) + 0.5f) * 0x1p-24f;
}
/* two words -> the 53-bit integer hi:lo, as an exact double */
EM_HD_INLINE double em_w53(uint32_t hi, uint32_t lo) {
    return (double)(int32_t)(hi >> 11) * 4294967296.0 +
           ((double)(int32_t)(lo ^ 0x80000000u) + 2147483648.0);
}

/* P(w < thresh) = thresh / 2^32 for a uniform 32-bit word w */
EM_HD_INLINE uint64_t em_prob_threshold(double p) {
    if (!(p > 0)) return 0;
    if (p >= 1) return (uint64_t)1 << 32;
    return (uint64_t)(p * 4294967296.0 + 0.5);
}

/* --- the values one block feeds (kind codes: EM_RD_* of ember_random.h) --- */

/* float32 source (uniform uses `bits` mantissa bits): out[l] feeds lane l.
   a, b are the distribution's parameters as the CPU passes them (double). */
EM_HD_INLINE void em_philox_block_f32(int kind, const uint32_t w[4], int bits, double a_d,
                                      double b_d, float out[4]) {
    const float a = (float)a_d, b = (float)b_d;
    if (kind == 0) {                                   /* uniform [a, b) */
        const float scale = ldexpf(1.0f, -bits), span = (float)(b_d - a_d);
        for (int l = 0; l < 4; l++) out[l] = em_u01f(w[l], bits, scale) * span + a;
    } else if (kind == 1 || kind == 2) {               /* normal, lognormal: Box-Muller */
        for (int h = 0; h < 2; h++) {
            float u1 = ((float)(int32_t)(w[2 * h] >> 8) + 1.0f) * 0x1p-24f;
            float r = sqrtf(-2.0f * em_logf_pos(u1));
            float cs, sn;
            em_sincos2pif((float)(int32_t)(w[2 * h + 1] >> 8) * 0x1p-24f, &cs, &sn);
            out[2 * h] = a + b * (r * cs);
            out[2 * h + 1] = a + b * (r * sn);
        }
        if (kind == 2)
            for (int l = 0; l < 4; l++) out[l] = expf(out[l]);
    } else if (kind == 3) {                            /* exponential, rate a */
        const float inv = (float)(-1.0 / a_d);
        for (int l = 0; l < 4; l++) out[l] = inv * em_logf_pos(em_u01f_open(w[l]));
    } else {                                           /* cauchy */
        for (int l = 0; l < 4; l++)
            out[l] = a + b * tanf(3.14159265358979f * (em_u01f_open(w[l]) - 0.5f));
    }
}

/* float64 source: out[h] feeds the element of word pair (2h, 2h+1). */
EM_HD_INLINE void em_philox_block_f64(int kind, const uint32_t w[4], double a, double b,
                                      double out[2]) {
    const double span = b - a;
    if (kind == 0) {
        for (int h = 0; h < 2; h++) out[h] = em_w53(w[2 * h], w[2 * h + 1]) * 0x1p-53 * span + a;
    } else if (kind == 1 || kind == 2) {
        double u1 = (em_w53(w[0], w[1]) + 1.0) * 0x1p-53;
        double r = sqrt(-2.0 * em_log_pos(u1));
        double cs, sn;
        em_sincos2pi(em_w53(w[2], w[3]) * 0x1p-53, &cs, &sn);
        out[0] = a + b * (r * cs);
        out[1] = a + b * (r * sn);
        if (kind == 2) { out[0] = exp(out[0]); out[1] = exp(out[1]); }
    } else if (kind == 3) {
        const double inv = -1.0 / a;
        for (int h = 0; h < 2; h++)
            out[h] = inv * em_log_pos((em_w53(w[2 * h], w[2 * h + 1]) + 0.5) * 0x1p-53);
    } else if (kind == 4) {
        for (int h = 0; h < 2; h++)
            out[h] = a + b * tan(3.141592653589793 *
                                 ((em_w53(w[2 * h], w[2 * h + 1]) + 0.5) * 0x1p-53 - 0.5));
    } else {                                           /* geometric, success probability a */
        const double lq = log1p(-a);
        for (int h = 0; h < 2; h++)
            out[h] = ceil(em_log_pos((em_w53(w[2 * h], w[2 * h + 1]) + 0.5) * 0x1p-53) / lq);
    }
}

/* integers lo + [0, range) with range <= 2^32: one word per element (lane l) */
EM_HD_INLINE void em_philox_block_i32(const uint32_t w[4], int64_t lo, uint64_t range,
                                      int64_t out[4]) {
    for (int l = 0; l < 4; l++) out[l] = lo + (int64_t)(((uint64_t)w[l] * range) >> 32);
}

/* integers over a range > 2^32 (0 means 2^64): two words per element */
EM_HD_INLINE void em_philox_block_i64(const uint32_t w[4], int64_t lo, uint64_t range,
                                      int64_t out[2]) {
    for (int h = 0; h < 2; h++) {
        uint64_t x = ((uint64_t)w[2 * h] << 32) | w[2 * h + 1];
        out[h] = (int64_t)((uint64_t)lo + (range ? x % range : x));
    }
}
#endif
