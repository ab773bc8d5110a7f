/* Rejection samplers on Philox4x32-10: Gamma (Marsaglia and Tsang), Poisson
   (multiplication below rate 10, Hoermann's PTRS above), Binomial (geometric
   inversion below n*min(p, 1-p) = 10, Hoermann's BTRS above), as PyTorch's
   CPU samplers choose them, and the reparameterised gradient of Gamma draws.

   Each element draws from its own stream: block k of element i is the Philox
   block at counter {k, i_lo, i_hi, offset_lo} under the key
   {seed_lo ^ DOMAIN, seed_hi ^ offset_hi}.  However many uniforms an element's
   rejection loop consumes, the numbers depend only on (seed, offset, i), so any
   thread count gives the same result; the DOMAIN constant keeps these streams
   apart from the batch kernels of philox.c (which use the seed as key).

   BTRS and the binomial inversion follow TensorFlow's random_binomial_op.cc
   (Copyright 2019 The TensorFlow Authors, Apache License 2.0) as adapted in
   PyTorch's ATen/native/Distributions.h. */
#include <float.h>
#include <math.h>
#include <stdint.h>

#include "ember_random.h"
#include "ember_special.h"

#define DOMAIN 0x5851F42Du

typedef struct {
    uint32_t ctr[4], key[2], buf[4];
    int pos;
    int has_spare;
    double spare_r, spare_t;
} stream;

static void stream_init(stream *s, uint64_t seed, uint64_t offset, int64_t i) {
    s->ctr[0] = 0;
    s->ctr[1] = (uint32_t)(uint64_t)i;
    s->ctr[2] = (uint32_t)((uint64_t)i >> 32);
    s->ctr[3] = (uint32_t)offset;
    s->key[0] = (uint32_t)seed ^ DOMAIN;
    s->key[1] = (uint32_t)(seed >> 32) ^ (uint32_t)(offset >> 32);
    s->pos = 4;
    s->has_spare = 0;
}

static uint32_t next_u32(stream *s) {
    if (s->pos == 4) {
        em_philox4x32_10(s->ctr, s->key, s->buf);
        s->ctr[0]++;
        s->pos = 0;
    }
    return s->buf[s->pos++];
}

/* uniform double in the open interval (0, 1), 53 random bits */
static double uniform(stream *s) {
    uint64_t a = next_u32(s) >> 5, b = next_u32(s) >> 6;
    return ((double)(a * 67108864u + b) + 0.5) * (1.0 / 9007199254740992.0);
}

/* standard normal (Box-Muller; the second value of a pair is kept for the next call,
   its sine computed only if that call comes: most draws need one normal) */
static double normal(stream *s) {
    if (s->has_spare) {
        s->has_spare = 0;
        return s->spare_r * sin(s->spare_t);
    }
    double r = sqrt(-2.0 * log(uniform(s))), t = 6.283185307179586 * uniform(s);
    s->spare_r = r;
    s->spare_t = t;
    s->has_spare = 1;
    return r * cos(t);
}

static double sample_gamma(double alpha, stream *s) {
    double scale = 1.0;
    if (!(alpha > 0)) return alpha == 0 ? 0.0 : NAN;
    if (isinf(alpha)) return INFINITY;
    if (alpha < 1.0) {    /* boost: Gamma(a) = Gamma(a + 1) * U^(1/a) */
        scale = pow(uniform(s), 1.0 / alpha);
        alpha += 1.0;
    }
    const double d = alpha - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        double x, y;
        do {
            x = normal(s);
            y = 1.0 + c * x;
        } while (y <= 0);
        const double v = y * y * y, u = uniform(s), xx = x * x;
        if (u < 1.0 - 0.0331 * xx * xx) return scale * d * v;
        if (log(u) < 0.5 * xx + d * (1.0 - v + log(v))) return scale * d * v;
    }
}

static double sample_poisson(double lambda, stream *s) {
    if (!(lambda >= 0)) return NAN;
    if (isinf(lambda)) return INFINITY;
    if (lambda >= 10) {   /* PTRS: transformed rejection with squeeze */
        const double slam = sqrt(lambda), loglam = log(lambda);
        const double b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b;
        const double invalpha = 1.1239 + 1.1328 / (b - 3.4), vr = 0.9277 - 3.6224 / (b - 2);
        for (;;) {
            const double u = uniform(s) - 0.5, v = uniform(s), us = 0.5 - fabs(u);
            const double k = floor((2 * a / us + b) * u + lambda + 0.43);
            if (us >= 0.07 && v <= vr) return k;
            if (k < 0 || (us < 0.013 && v > us)) continue;
            if (log(v) + log(invalpha) - log(a / (us * us) + b) <=
                -lambda + k * loglam - lgamma(k + 1))
                return k;
        }
    }
    if (lambda == 0) return 0;
    /* multiply uniforms until the product drops below exp(-lambda) */
    const double enlam = exp(-lambda);
    double x = 0, prod = 1.0;
    for (;;) {
        prod *= uniform(s);
        if (prod > enlam) x += 1;
        else return x;
    }
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

static double binomial_inversion(double n, double p, stream *s) {
    const double logq = log1p(-p);
    double geom_sum = 0, num = 0;
    for (;;) {
        geom_sum += ceil(log(uniform(s)) / logq);
        if (geom_sum > n) return num;
        num += 1;
    }
}

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
        v = log(v * alpha / (a / (us * us) + b));
        const double bound = (m + 0.5) * log((m + 1) / (r * (n - m + 1))) +
                             (n + 1) * log((n - m + 1) / (n - k + 1)) +
                             (k + 0.5) * log(r * (n - k + 1) / (k + 1)) + stirling_tail(m) +
                             stirling_tail(n - m) - stirling_tail(k) - stirling_tail(n - k);
        if (v <= bound) return k;
    }
}

static double sample_binomial(double n, double p, stream *s) {
    if (isnan(n) || isnan(p)) return NAN;
    if (n <= 0 || p <= 0) return 0;
    if (p >= 1 || isinf(n)) return n;
    if (p <= 0.5) return n * p >= 10 ? btrs(n, p, s) : binomial_inversion(n, p, s);
    const double q = 1 - p;
    return n - (n * q >= 10 ? btrs(n, q, s) : binomial_inversion(n, q, s));
}

void em_sample_gamma(const double *alpha, double *out, int64_t n, uint64_t seed,
                     uint64_t offset, int nthreads) {
    #pragma omp parallel for schedule(dynamic, 4096) num_threads(nthreads) if (nthreads > 1)
    for (int64_t i = 0; i < n; i++) {
        stream s;
        stream_init(&s, seed, offset, i);
        out[i] = sample_gamma(alpha[i], &s);
    }
}

void em_sample_poisson(const double *rate, double *out, int64_t n, uint64_t seed,
                       uint64_t offset, int nthreads) {
    #pragma omp parallel for schedule(dynamic, 4096) num_threads(nthreads) if (nthreads > 1)
    for (int64_t i = 0; i < n; i++) {
        stream s;
        stream_init(&s, seed, offset, i);
        out[i] = sample_poisson(rate[i], &s);
    }
}

void em_sample_binomial(const double *count, const double *prob, double *out, int64_t n,
                        uint64_t seed, uint64_t offset, int nthreads) {
    #pragma omp parallel for schedule(dynamic, 4096) num_threads(nthreads) if (nthreads > 1)
    for (int64_t i = 0; i < n; i++) {
        stream s;
        stream_init(&s, seed, offset, i);
        out[i] = sample_binomial(count[i], prob[i], &s);
    }
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
