/* Rejection samplers on Philox4x32-10: Gamma (Marsaglia and Tsang), Poisson
   (CDF inversion below rate 10, Hoermann's PTRS above), Binomial (CDF inversion
   below n*min(p, 1-p) = 10, Hoermann's BTRS above), and the reparameterised
   gradient of Gamma draws.

   Element i owns the Philox blocks at counter (k << 40 | i, offset) under the key
   `seed`, k = 0, 1, ...: its draws depend only on (seed, offset, i), so any thread
   count gives the same numbers.  Elements go in chunks of EM_PHILOX_BATCH: one
   batched (SIMD) Philox call gives the chunk's first blocks, a branch-free lane
   pass (vectorised, compiled per ISA) runs the first attempt of every element,
   and the few elements that attempt does not settle (a rejection, an inversion
   walk, a special value) finish in scalar code on the rest of their stream.  No
   FMA anywhere, so every ISA gives the same bits.

   BTRS follows TensorFlow's random_binomial_op.cc (Copyright 2019 The TensorFlow
   Authors, Apache License 2.0) as adapted in PyTorch's ATen/native/Distributions.h. */
#ifndef EM_SAMPLERS_IMPL

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ember_random.h"
#include "ember_philox.h"
#include "ember_special.h"

#define CH EM_PHILOX_BATCH
/* block k of element i is counter k << KSHIFT | i: up to 2^40 elements per call */
#define KSHIFT 40
#define INL static inline __attribute__((always_inline))

typedef struct {
    uint64_t seed, off, i, k;
    uint32_t w[4];
    int pos;
} stream;

/* element i's stream from its block k on */
static void st_init(stream *s, uint64_t seed, uint64_t off, uint64_t i, uint64_t k) {
    s->seed = seed; s->off = off; s->i = i; s->k = k; s->pos = 4;
}

static uint32_t next_u32(stream *s) {
    if (s->pos == 4) {
        em_philox_words((s->k << KSHIFT) | s->i, s->off, s->seed, s->w);
        s->k++;
        s->pos = 0;
    }
    return s->w[s->pos++];
}

/* uniform in the open interval (0, 1) from 53 bits of two words */
INL double u_open(uint32_t hi, uint32_t lo) {
    return (em_w53(hi, lo) + 0.5) * 0x1p-53;
}

static double uniform(stream *s) {
    uint32_t hi = next_u32(s), lo = next_u32(s);
    return u_open(hi, lo);
}

/* standard normal from four words (Box-Muller, the cosine half) */
INL double box_muller(uint32_t w0, uint32_t w1, uint32_t w2, uint32_t w3) {
    double cs, sn;
    em_sincos2pi(em_w53(w2, w3) * 0x1p-53, &cs, &sn);
    return sqrt(-2.0 * em_log_posd(u_open(w0, w1))) * cs;
}

static double normal(stream *s) {
    uint32_t w0 = next_u32(s), w1 = next_u32(s), w2 = next_u32(s), w3 = next_u32(s);
    return box_muller(w0, w1, w2, w3);
}

/* 1/k for the inversion walks (a multiply, not a divide, on their critical path) */
static double inv_k[64];

INL double recip(int64_t k) {
    return k < 64 ? inv_k[k] : 1.0 / (double)k;
}

__attribute__((constructor)) static void init_inv_k(void) {
    inv_k[0] = 0.0;
    for (int k = 1; k < 64; k++) inv_k[k] = 1.0 / k;
}

/* ---- scalar continuations ------------------------------------------------ */

/* Gamma(alpha): the attempts after the lane pass's first one (blocks 2, 3, ...);
   `ub` is the boost uniform the lane pass drew for alpha < 1 */
static double gamma_rest(double alpha, double ub, stream *s) {
    if (!(alpha > 0)) return alpha == 0 ? 0.0 : NAN;
    if (isinf(alpha)) return INFINITY;
    double scale = 1.0;
    if (alpha < 1.0) {    /* Gamma(a) = Gamma(a + 1) * U^(1/a) */
        scale = em_exp_d(em_log_posd(ub) / alpha);
        alpha += 1.0;
    }
    const double d = alpha - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        const double x = normal(s), y = 1.0 + c * x;
        const double u = uniform(s);
        if (y <= 0) continue;
        const double v = y * y * y, xx = x * x;
        if (u < 1.0 - 0.0331 * xx * xx) return scale * d * v;
        if (em_log_posd(u) < 0.5 * xx + d * (1.0 - v + em_log_d(v))) return scale * d * v;
    }
}

/* log(k!) for k >= 0: Stirling's series at z = k + 1 (shifted up by 8 below 8,
   dividing the shift's product back out), truncation below 3e-15; branch-free */
INL double log_factorial(double k) {
    const int small = k < 8;
    const double x = k + 1, z = small ? x + 8 : x;
    const double prod = small ? x * (x + 1) * (x + 2) * (x + 3) * (x + 4) * (x + 5) * (x + 6) *
                                (x + 7) : 1.0;
    const double r = 1.0 / z, r2 = r * r;
    const double series = r * (1.0 / 12 - r2 * (1.0 / 360 - r2 * (1.0 / 1260 - r2 * (1.0 / 1680 -
                          r2 * (1.0 / 1188 - r2 * (691.0 / 360360))))));
    return (z - 0.5) * em_log_posd(z) - z + 0.91893853320467274 + series - em_log_posd(prod);
}

/* PTRS's constants for rate lambda >= 10 */
typedef struct { double b, a, invalpha, vr; } ptrs_c;

INL ptrs_c ptrs_consts(double lambda) {
    ptrs_c c;
    c.b = 0.931 + 2.53 * sqrt(lambda);
    c.a = -0.059 + 0.02483 * c.b;
    c.invalpha = 1.1239 + 1.1328 / (c.b - 3.4);
    c.vr = 0.9277 - 3.6224 / (c.b - 2);
    return c;
}

/* one PTRS attempt on (u, v): the draw, or -1 for a rejection (branch-free) */
INL double ptrs_try(double lambda, ptrs_c c, double u, double v) {
    const double uc = u - 0.5, us = 0.5 - fabs(uc);
    const double k = floor((2 * c.a / us + c.b) * uc + lambda + 0.43);
    const double kk = k >= 0 ? k : 0;
    const int fast = (us >= 0.07) & (v <= c.vr);
    const int slow = (k >= 0) & !((us < 0.013) & (v > us)) &
                     (em_log_posd(v) + em_log_posd(c.invalpha) -
                      em_log_posd(c.a / (us * us) + c.b) <=
                      -lambda + kk * em_log_posd(lambda) - log_factorial(kk));
    return fast | slow ? k : -1.0;
}

/* PTRS's attempts after the lane pass's first one (blocks 1, 2, ...) */
static double ptrs_rest(double lambda, stream *s) {
    const ptrs_c c = ptrs_consts(lambda);
    for (;;) {
        const double u = uniform(s), v = uniform(s);
        const double k = ptrs_try(lambda, c, u, v);
        if (k >= 0) return k;
    }
}

/* the smallest k with P(X <= k) >= u, walking the pmf from p0 = P(X = 0);
   the pmf ratio P(k) / P(k - 1) is num(k) * r / k */
static double poisson_walk(double lambda, double p0, double u) {
    double p = p0, f = p0;
    int64_t k = 0;
    while (u > f) {
        k++;
        p *= lambda * recip(k);
        if (p == 0) break;     /* the rest of the tail is below double precision */
        f += p;
    }
    return (double)k;
}

static double binomial_walk(double n, double r, double p0, double u) {
    double p = p0, f = p0;
    int64_t k = 0;
    while (u > f && (double)k < n) {
        p *= (n - (double)k) * r * recip(k + 1);
        k++;
        if (p == 0) break;
        f += p;
    }
    return (double)k;
}

static double stirling_tail(double k) {
    static const double tail[] = {0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                                  0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                                  0.0118967099458917, 0.0104112652619720, 0.00925546218271273,
                                  0.00833056343336287};
    if (k < 10) return tail[(int)k];
    double kp1sq = (k + 1) * (k + 1);
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1);
}

/* BTRS for p <= 1/2 and n p >= 10, from the element's first block on */
static double btrs(double n, double p, stream *s) {
    const double spq = sqrt(n * p * (1 - p));
    const double b = 1.15 + 2.53 * spq, a = -0.0873 + 0.0248 * b + 0.01 * p;
    const double c = n * p + 0.5, v_r = 0.92 - 4.2 / b, r = p / (1 - p);
    const double alpha = (2.83 + 5.1 / b) * spq, m = floor((n + 1) * p);
    for (;;) {
        const double u = uniform(s) - 0.5;
        double v = uniform(s);
        const double us = 0.5 - fabs(u);
        const double k = floor((2 * a / us + b) * u + c);
        if (k < 0 || k > n) continue;
        if (us >= 0.07 && v <= v_r) return k;
        v = em_log_d(v * alpha / (a / (us * us) + b));
        const double bound = (m + 0.5) * em_log_d((m + 1) / (r * (n - m + 1))) +
                             (n + 1) * em_log_d((n - m + 1) / (n - k + 1)) +
                             (k + 0.5) * em_log_d(r * (n - k + 1) / (k + 1)) +
                             stirling_tail(m) + stirling_tail(n - m) - stirling_tail(k) -
                             stirling_tail(n - k);
        if (v <= bound) return k;
    }
}

/* special parameters: NaN for NaN, 0 for n <= 0 or p <= 0, n for p >= 1 or n = inf;
   -1 when (n, p) is an ordinary pair */
INL double binomial_special(double n, double p) {
    if (isnan(n) || isnan(p)) return NAN;
    if (n <= 0 || p <= 0) return 0;
    if (p >= 1 || isinf(n)) return n;
    return -1;
}

/* log(1 - q) for 0 < q <= 1/2: the log of the rounded 1 - q plus its rounding error
   (em_log_posd vectorises where em_log1p_d does not) */
INL double log1m(double q) {
    const double u = 1.0 - q;
    return em_log_posd(u) + ((1.0 - u) - q) / u;
}

INL double load(int dtype, const void *p, int64_t i) {
    return dtype == EM_F32 ? (double)((const float *)p)[i] : ((const double *)p)[i];
}

INL void store(int dtype, void *p, int64_t i, double v) {
    if (dtype == EM_F32) ((float *)p)[i] = (float)v;
    else ((double *)p)[i] = v;
}

/* ---- the lane passes, compiled once per ISA ------------------------------- */

#define EM_SAMPLERS_IMPL
#define EM_CAT_(a, b) a##_##b
#define EM_CAT(a, b) EM_CAT_(a, b)
#define FN(name) EM_CAT(name, SFX)

#define SFX generic
#include "samplers.c"
#undef SFX

#if defined(__x86_64__)
#pragma GCC push_options
#pragma GCC target("avx2")
#define SFX avx2
#include "samplers.c"
#undef SFX
#pragma GCC pop_options
#define HAVE_AVX2 1
#else
#define HAVE_AVX2 0
#endif

typedef void (*chunk_fn)(const void *, const void *, void *, int, int64_t, int64_t, uint64_t,
                         uint64_t, double);

static chunk_fn pick(chunk_fn generic, chunk_fn avx2) {
    (void)avx2;
    return HAVE_AVX2 && em_random_isa() >= 1 ? avx2 : generic;
}

/* chunks of CH elements over threads; chunk boundaries are fixed, so the split
   does not change any number */
static void run_chunks(chunk_fn fn, const void *a, const void *b, void *out, int dtype, int64_t n,
                       uint64_t seed, uint64_t off, double extra, int nthreads) {
    int64_t nc = (n + CH - 1) / CH;
    if (nthreads > nc) nthreads = (int)(nc > 0 ? nc : 1);
    #pragma omp parallel for schedule(static, 64) num_threads(nthreads) if (nthreads > 1)
    for (int64_t c = 0; c < nc; c++) {
        int64_t e0 = c * CH, e1 = e0 + CH < n ? e0 + CH : n;
        fn(a, b, out, dtype, e0, e1, seed, off, extra);
    }
}

void em_sample_gamma(int dtype, const void *alpha, void *out, int64_t n, uint64_t seed,
                     uint64_t offset, double tiny, int nthreads) {
    run_chunks(pick(gamma_chunk_generic, gamma_chunk_avx2), alpha, NULL, out, dtype, n, seed,
               offset, tiny, nthreads);
}

int64_t em_sample_poisson(int dtype, const void *rate, void *out, int64_t n, uint64_t seed,
                          uint64_t offset, int nthreads) {
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) bad += !(load(dtype, rate, i) >= 0);
    if (bad) return bad;
    run_chunks(pick(poisson_chunk_generic, poisson_chunk_avx2), rate, NULL, out, dtype, n, seed,
               offset, 0.0, nthreads);
    return 0;
}

void em_sample_binomial(int dtype, const void *count, const void *prob, void *out, int64_t n,
                        uint64_t seed, uint64_t offset, int nthreads) {
    run_chunks(pick(binomial_chunk_generic, binomial_chunk_avx2), count, prob, out, dtype, n,
               seed, offset, 0.0, nthreads);
}

/* dx/dalpha of a Gamma(alpha, 1) draw x at a fixed CDF value:
   x * sum_n t_n (psi(alpha + n + 1) - log x), t_n = x^n / (alpha ... (alpha + n)),
   from the series of P(alpha, x).  Where that sum would cancel badly (x far in the
   upper tail) or need too many terms (alpha > 1e4), PyTorch's approximations take
   over: Rice's saddle-point expansion for alpha > 8, its bivariate rational fit below. */
static double gamma_grad_tail(double alpha, double x) {
    if (alpha > 8.0 && 0.9 * alpha <= x && x <= 1.1 * alpha) {
        const double numer_1 = 1 + 24 * alpha * (1 + 12 * alpha);
        const double numer_2 = 1440 * (alpha * alpha) + 6 * x * (53 - 120 * x) -
                               65 * x * x / alpha + alpha * (107 + 3600 * x);
        const double denom = 1244160 * (alpha * alpha) * (alpha * alpha);
        return numer_1 * numer_2 / denom;
    }
    if (alpha > 8.0) {
        const double denom = sqrt(8 * alpha);
        const double term2 = denom / (alpha - x);
        const double term3 = pow(x - alpha - alpha * log(x / alpha), -1.5);
        const double term23 = (x < alpha) ? term2 - term3 : term2 + term3;
        const double term1 = log(x / alpha) * term23 -
                             sqrt(2 / alpha) * (alpha + x) / ((alpha - x) * (alpha - x));
        const double stirling = 1 + 1 / (12 * alpha) * (1 + 1 / (24 * alpha));
        return -stirling * x * term1 / denom;
    }
    static const double coef_uv[3][8] = {
        {0.16009398, -0.094634809, 0.025146376, -0.0030648343, 1, 0.32668115, 0.10406089,
         0.0014179084},
        {0.53487893, 0.1298071, 0.065735949, -0.0015649758, 0.16639465, 0.020070113,
         -0.0035938915, -0.00058392623},
        {0.040121004, -0.0065914022, -0.0026286047, -0.0013441777, 0.017050642,
         -0.0021309326, 0.00085092367, -1.5247877e-07},
    };
    const double u = log(x / alpha), v = log(alpha);
    double cv[8];
    for (int i = 0; i < 8; i++) cv[i] = coef_uv[0][i] + u * (coef_uv[1][i] + u * coef_uv[2][i]);
    const double p = cv[0] + v * (cv[1] + v * (cv[2] + v * cv[3]));
    const double q = cv[4] + v * (cv[5] + v * (cv[6] + v * cv[7]));
    return exp(p / q);
}

static double gamma_grad_one(double alpha, double x) {
    if (!(x > 0) || !(alpha > 0) || isinf(x) || isinf(alpha)) return 0.0;
    /* the series needs about sqrt(80 alpha) terms near the mode: beyond alpha = 1e4
       the saddle-point expansion is both cheaper and accurate */
    if (x > alpha + 6 * sqrt(alpha) + 12 || alpha > 1e4) return gamma_grad_tail(alpha, x);
    const double logx = log(x);
    double t = 1.0 / alpha, psi = em_digamma(alpha + 1), total = t * (psi - logx);
    for (int k = 1; k < 100000; k++) {
        t *= x / (alpha + k);
        psi += 1.0 / (alpha + k);
        const double term = t * (psi - logx);
        total += term;
        if (fabs(term) <= 1e-17 * fabs(total) && x < alpha + k) break;
    }
    return x * total;
}

void em_standard_gamma_grad(const double *alpha, const double *x, double *out, int64_t n,
                            int nthreads) {
    #pragma omp parallel for schedule(dynamic, 4096) num_threads(nthreads) if (nthreads > 1)
    for (int64_t i = 0; i < n; i++) out[i] = gamma_grad_one(alpha[i], x[i]);
}

#else  /* EM_SAMPLERS_IMPL: one chunk of at most CH elements, [e0, e1) ------- */

/* Gamma: block 0 gives the normal, block 1 the acceptance uniform and the boost
   uniform (alpha < 1); draws below `tiny` (and NaN) become `tiny` */
static void FN(gamma_chunk)(const void *alpha, const void *unused, void *out, int dtype,
                            int64_t e0, int64_t e1, uint64_t seed, uint64_t off, double tiny) {
    (void)unused;
    uint32_t w0[4][CH], w1[4][CH];
    double al[CH], res[CH], ubs[CH];
    int more[CH];
    const int cnt = (int)(e1 - e0);
    em_philox_blocks(w0, (uint64_t)e0, off, seed);
    em_philox_blocks(w1, ((uint64_t)1 << KSHIFT) | (uint64_t)e0, off, seed);
    for (int j = 0; j < cnt; j++) al[j] = load(dtype, alpha, e0 + j);
    for (int j = cnt; j < CH; j++) al[j] = 1.0;
    for (int j = 0; j < CH; j++) {
        const double a = al[j];
        const int boost = a < 1.0;
        const double aa = boost ? a + 1.0 : a;
        const double d = aa - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * (d > 0 ? d : 1.0));
        const double x = box_muller(w0[0][j], w0[1][j], w0[2][j], w0[3][j]);
        const double y = 1.0 + c * x, v = y * y * y, xx = x * x;
        const double u = u_open(w1[0][j], w1[1][j]), ub = u_open(w1[2][j], w1[3][j]);
        const int ok = (y > 0) & ((u < 1.0 - 0.0331 * xx * xx) |
                                  (em_log_posd(u) < 0.5 * xx +
                                   d * (1.0 - v + em_log_posd(v > 1e-300 ? v : 1e-300))));
        const double scale = boost ? em_exp_d(em_log_posd(ub) / (a > 0 ? a : 1.0)) : 1.0;
        res[j] = scale * d * v;
        ubs[j] = ub;
        more[j] = !(ok & (a > 0) & (a < INFINITY));
    }
    for (int j = 0; j < cnt; j++) {
        double r = res[j];
        if (more[j]) {
            stream s;
            st_init(&s, seed, off, (uint64_t)(e0 + j), 2);
            r = gamma_rest(al[j], ubs[j], &s);
        }
        store(dtype, out, e0 + j, r >= tiny ? r : tiny);
    }
}

/* Poisson: block 0 gives PTRS's first (u, v) or the inversion's uniform; PTRS's
   later attempts take blocks 1, 2, ... */
static void FN(poisson_chunk)(const void *rate, const void *unused, void *out, int dtype,
                              int64_t e0, int64_t e1, uint64_t seed, uint64_t off, double unused2) {
    (void)unused; (void)unused2;
    uint32_t w[4][CH];
    double lam[CH], res[CH], p0[CH], uinv[CH];
    const int cnt = (int)(e1 - e0);
    em_philox_blocks(w, (uint64_t)e0, off, seed);
    for (int j = 0; j < cnt; j++) lam[j] = load(dtype, rate, e0 + j);
    for (int j = cnt; j < CH; j++) lam[j] = 0.0;
    for (int j = 0; j < CH; j++) {
        const double l = lam[j];
        const int big = l >= 10.0;
        const double lb = big & (l < INFINITY) ? l : 10.0;
        const double u = u_open(w[0][j], w[1][j]), v = u_open(w[2][j], w[3][j]);
        const double k = ptrs_try(lb, ptrs_consts(lb), u, v);
        res[j] = k;
        p0[j] = em_exp_d(-(big ? 0.0 : l));
        uinv[j] = u;
    }
    for (int j = 0; j < cnt; j++) {
        double r = res[j];
        if (lam[j] < 10.0) {                       /* the inversion walk */
            r = poisson_walk(lam[j], p0[j], uinv[j]);
        } else if (!(r >= 0) || isinf(lam[j])) {   /* a rejection, or rate inf */
            stream s;
            st_init(&s, seed, off, (uint64_t)(e0 + j), 1);
            r = isinf(lam[j]) ? INFINITY : ptrs_rest(lam[j], &s);
        }
        store(dtype, out, e0 + j, r);
    }
}

/* Binomial: with q = min(p, 1 - p), block 0 gives BTRS's first (u, v) when n q >= 10
   or the inversion's uniform below; the draw for q counts failures when p > 1/2 */
static void FN(binomial_chunk)(const void *count, const void *prob, void *out, int dtype,
                               int64_t e0, int64_t e1, uint64_t seed, uint64_t off,
                               double unused) {
    (void)unused;
    uint32_t w[4][CH];
    double nn[CH], pp[CH], res[CH], p0[CH], uinv[CH], rr[CH];
    int kind[CH];
    const int cnt = (int)(e1 - e0);
    em_philox_blocks(w, (uint64_t)e0, off, seed);
    for (int j = 0; j < cnt; j++) {
        nn[j] = load(dtype, count, e0 + j);
        pp[j] = load(dtype, prob, e0 + j);
    }
    for (int j = cnt; j < CH; j++) { nn[j] = 1.0; pp[j] = 0.5; }
    for (int j = 0; j < CH; j++) {
        const double n = nn[j], p = pp[j];
        const int ordinary = (n > 0) & (n < INFINITY) & (p > 0) & (p < 1);
        const int flip = p > 0.5;
        const double q = ordinary ? (flip ? 1 - p : p) : 0.5, nq = ordinary ? n : 20.0;
        const int big = nq * q >= 10;
        const double spq = sqrt(nq * q * (1 - q));
        const double b = 1.15 + 2.53 * spq, a = -0.0873 + 0.0248 * b + 0.01 * q;
        const double c = nq * q + 0.5, v_r = 0.92 - 4.2 / b;
        const double u = u_open(w[0][j], w[1][j]), v = u_open(w[2][j], w[3][j]);
        const double uc = u - 0.5, us = 0.5 - fabs(uc);
        const double k = floor((2 * a / us + b) * uc + c);
        res[j] = flip ? n - k : k;
        /* the inversion counts whole trials: floor(n) of them, as PyTorch's geometric
           inversion does for a fractional count */
        p0[j] = em_exp_d(big ? 0.0 : floor(nq) * log1m(q));
        rr[j] = q / (1 - q);
        uinv[j] = u;
        /* 0: settled by the squeeze, 1: inversion walk, 2: BTRS's full test, 3: special */
        kind[j] = !ordinary ? 3 : !big ? 1 :
                  ((k >= 0) & (k <= nq) & (us >= 0.07) & (v <= v_r)) ? 0 : 2;
    }
    for (int j = 0; j < cnt; j++) {
        double r = res[j];
        const double n = nn[j], p = pp[j];
        if (kind[j] == 3) {
            r = binomial_special(n, p);
        } else if (kind[j]) {
            const int flip = p > 0.5;
            const double q = flip ? 1 - p : p;
            double k;
            if (kind[j] == 1) {
                k = binomial_walk(floor(n), rr[j], p0[j], uinv[j]);
            } else {
                stream s;
                st_init(&s, seed, off, (uint64_t)(e0 + j), 0);
                k = btrs(n, q, &s);
            }
            r = flip ? n - k : k;
        }
        store(dtype, out, e0 + j, r);
    }
}

#endif  /* EM_SAMPLERS_IMPL */
