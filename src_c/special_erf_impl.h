/* ember.special's error-function family (ndtr, log_ndtr, erfcx, ndtri, entr) as
   branch-free double functions, so their loops vectorise: every range is computed
   and one selected.  float32 evaluates in double and rounds once.  Compiled once per
   ISA: special.c (generic) and special_isa_avx2.c / special_isa_avx512.c (FMA in
   ember_math.h); the loops give a strided row the contiguous loop's bits (the same
   function per element, no FMA contraction beyond ember_math.h's explicit fma).

   Building blocks from ember_math.h: em_erfc_s1_d (erfcx(a) = w + wl, a <= 27.3),
   em_gelu_s1_d (erfcx(|x| / sqrt 2) / 2, the rounding of |x| / sqrt 2 compensated)
   and em_gelu_gauss_d (exp(-x^2 / 2) from x^2 taken exactly). */
#ifndef EMBER_SPECIAL_ERF_IMPL_H
#define EMBER_SPECIAL_ERF_IMPL_H
#include "special_loop.h"

#define SPE_ISPI 0.56418958354775628694807945156      /* 1 / sqrt(pi) */

/* erfcx(a) for a >= 27: the asymptotic series 1/(a sqrt(pi)) sum (-1)^k (2k-1)!! t^k,
   t = 1 / (2 a^2), to k = 8 (the next term is below 1e-19 there); inf gives 0 */
static inline __attribute__((always_inline)) double spe_erfcx_big(double a) {
    double ih = 1.0 / (a < 27.0 ? 27.0 : a), t = 0.5 * ih * ih;
    double p = 2027025.0;
    p = EM_MAD(p, t, -135135.0);
    p = EM_MAD(p, t, 10395.0);
    p = EM_MAD(p, t, -945.0);
    p = EM_MAD(p, t, 105.0);
    p = EM_MAD(p, t, -15.0);
    p = EM_MAD(p, t, 3.0);
    p = EM_MAD(p, t, -1.0);
    return EM_MAD(p, t, 1.0) * (SPE_ISPI * ih);
}

/* erfcx(x) = exp(x^2) erfc(x): for x >= 0 erfcx(a) = w + wl to 27.3, the asymptotic
   series beyond; for x < 0, 2 exp(x^2) - erfcx(-x) with x^2 exact, exp(x^2) =
   2^n (1 + e + el) and the difference summed in two parts (overflow past -26.63) */
static inline __attribute__((always_inline)) double spe_erfcx_d(double x) {
    double a = fabs(x);
    double wl, w = em_erfc_s1_d(a, &wl);
    double pos = a <= EM_ERFC_D_MAX ? w + wl : spe_erfcx_big(a);
    double ac = a > 27.0 ? 27.0 : a;                  /* 2 exp(729) overflows as it should */
    double h = ac * ac, hl = em_prod_err_d(ac, ac, h);
    int64_t n;
    double el, e = em_exp_q_d(h, hl, &n, &el);
    double s = 1.0 + e, sl = ((1.0 - s) + e) + el;    /* Fast2Sum: |e| < 1/2 */
    int64_t nn = n + 1;
    double sc = em_f64_from_bits((1023 - nn) << 52);  /* 2^-nn, 1 <= nn <= 1041 */
    double u = w * sc;
    double r = s - u, rl = em_twosum_err(s, -u, r) + (sl - wl * sc);
    double neg = em_ldexp_d(r + rl, nn);
    double res = x < 0.0 ? neg : pos;
    return x != x ? x : res;
}

/* Phi(-|x|) = erfcx(|x| / sqrt 2) / 2 exp(-x^2 / 2) as 2^n v (w the first factor) */
static inline __attribute__((always_inline)) double spe_phi_neg_d(double x, double w) {
    int64_t n;
    double q = em_gelu_gauss_d(x, &n);
    return em_ldexp_d(EM_MAD(w, q, w), n);
}

/* ndtr(x) = Phi(x): Phi(-|x|) keeps its relative precision through the lower tail
   (to the subnormals; 0 below -38.6), 1 - Phi(-x) above 0 */
static inline __attribute__((always_inline)) double spe_ndtr_d(double x) {
    double v = spe_phi_neg_d(x, em_gelu_s1_d(x));
    double r = x < 0.0 ? v : 1.0 - v;
    r = x < -EM_GELU_D_MAX ? 0.0 : r;
    return x != x ? x : r;
}

/* log_ndtr(x): below 0, log(erfcx(|x| / sqrt 2) / 2) - x^2 / 2 with x^2 exact (the
   asymptotic series past |x| = 38.6); from 0 on, log1p(-c) with c = Phi(-x) as
   log(u) + ul / u, u = 1 - c and ul its rounding error (exact by Fast2Sum) */
static inline __attribute__((always_inline)) double spe_log_ndtr_d(double x) {
    double w = em_gelu_s1_d(x), ax = fabs(x);
    double wn = ax <= EM_GELU_D_MAX ? w : 0.5 * spe_erfcx_big(ax * 0.7071067811865476);
    double c = spe_phi_neg_d(x, w);
    double u = 1.0 - c, ul = (1.0 - u) - c;
    double l = em_log_d(x < 0.0 ? wn : u);
    double h = x * x, hl = em_prod_err_d(x, x, h);
    hl = h < 1e300 ? hl : 0.0;
    double neg = (l - 0.5 * h) - 0.5 * hl;
    double pos = c == 0.0 ? -0.0 : l + ul / u;
    double res = x < 0.0 ? neg : pos;
    return x != x ? x : res;
}

/* ndtri: Cephes' ndtri (as torch), its ranges as two branch-free functions: the
   central rational for exp(-2) < y < 1 - exp(-2) (most inputs), and the rest:
   x = sqrt(-2 log y') and x - (log(x) + R(1/x)) / x on y' = min(y, 1 - y), R's
   coefficients picked per step for x < 8 or beyond, with 0, 1, NaN and y outside
   [0, 1].  The loop runs the central one over a block and the other over the
   block's remaining inputs, gathered. */
#define SPE_NDTRI_CENTRAL(y) (((y) > 0.13533528323661269189) & ((y) <= 0.8646647167633873))
static inline __attribute__((always_inline)) double spe_ndtri_central_d(double y0) {
    double yc = y0 - 0.5, y2 = yc * yc;
    double pc = -5.99633501014107895267E1;
    pc = EM_MAD(pc, y2, 9.80010754185999661536E1);
    pc = EM_MAD(pc, y2, -5.66762857469070293439E1);
    pc = EM_MAD(pc, y2, 1.39312609387279679503E1);
    pc = EM_MAD(pc, y2, -1.23916583867381258016E0);
    double qc = 1.0;
    qc = EM_MAD(qc, y2, 1.95448858338141759834E0);
    qc = EM_MAD(qc, y2, 4.67627912898881538453E0);
    qc = EM_MAD(qc, y2, 8.63602421390890590575E1);
    qc = EM_MAD(qc, y2, -2.25462687854119370527E2);
    qc = EM_MAD(qc, y2, 2.00260212380060660359E2);
    qc = EM_MAD(qc, y2, -8.20372256168333339912E1);
    qc = EM_MAD(qc, y2, 1.59056225126211695515E1);
    qc = EM_MAD(qc, y2, -1.18331621121330003142E0);
    return EM_MAD(yc, y2 * pc / qc, yc) * 2.50662827463100050242E0;
}
static inline __attribute__((always_inline)) double spe_ndtri_tail_d(double y0) {
    int flip = y0 > 0.8646647167633873;               /* 1 - exp(-2) */
    double y = flip ? 1.0 - y0 : y0;
    double yt = (y > 0.0) & (y <= 0.13533528323661269189) ? y : 0.1;
    /* x^2 = -2 log y' in two parts (em_log_d's sum with its first rounding kept),
       x = sqrt of the high part corrected to first order: x's error would grow by
       x / result where x - (...) / x cancels */
    double fe, hf, sr, f = em_log_core_d(yt, &fe, &hf, &sr);
    double lh = fe * 6.93147180369123816490e-01;            /* exact */
    double lr = f - (hf - (sr + fe * 1.90821492927058770002e-10));
    double l = lh + lr, ll = em_twosum_err(lh, lr, l);
    double xt = sqrt(-2.0 * l);
    double z = 1.0 / xt;
    double xl = (em_rem_d(-2.0 * l, xt, xt) - 2.0 * ll) * 0.5 * z;
#define SPE_C(c1, c2) (xt < 8.0 ? (c1) : (c2))
    double pt = SPE_C(4.05544892305962419923E0, 3.23774891776946035970E0);
    pt = EM_MAD(pt, z, SPE_C(3.15251094599893866154E1, 6.91522889068984211695E0));
    pt = EM_MAD(pt, z, SPE_C(5.71628192246421288162E1, 3.93881025292474443415E0));
    pt = EM_MAD(pt, z, SPE_C(4.40805073893200834700E1, 1.33303460815807542389E0));
    pt = EM_MAD(pt, z, SPE_C(1.46849561928858024014E1, 2.01485389549179081538E-1));
    pt = EM_MAD(pt, z, SPE_C(2.18663306850790267539E0, 1.23716634817820021358E-2));
    pt = EM_MAD(pt, z, SPE_C(-1.40256079171354495875E-1, 3.01581553508235416007E-4));
    pt = EM_MAD(pt, z, SPE_C(-3.50424626827848203418E-2, 2.65806974686737550832E-6));
    pt = EM_MAD(pt, z, SPE_C(-8.57456785154685413611E-4, 6.23974539184983293730E-9));
    double qt = 1.0;
    qt = EM_MAD(qt, z, SPE_C(1.57799883256466749731E1, 6.02427039364742014255E0));
    qt = EM_MAD(qt, z, SPE_C(4.53907635128879210584E1, 3.67983563856160859403E0));
    qt = EM_MAD(qt, z, SPE_C(4.13172038254672030440E1, 1.37702099489081330271E0));
    qt = EM_MAD(qt, z, SPE_C(1.50425385692907503408E1, 2.16236993594496635890E-1));
    qt = EM_MAD(qt, z, SPE_C(2.50464946208309415979E0, 1.34204006088543189037E-2));
    qt = EM_MAD(qt, z, SPE_C(-1.42182922854787788574E-1, 3.28014464682127739104E-4));
    qt = EM_MAD(qt, z, SPE_C(-3.80806407691578277194E-2, 2.89247864745380683936E-6));
    qt = EM_MAD(qt, z, SPE_C(-9.33259480895457427372E-4, 6.79019408009981274425E-9));
#undef SPE_C
    double rt = (xt - z * (em_log_d(xt) + pt / qt)) + xl;
    double r = flip ? rt : -rt;
    r = y0 == 0.0 ? -INFINITY : r;
    r = y0 == 1.0 ? INFINITY : r;
    return (y0 >= 0.0) & (y0 <= 1.0) ? r : NAN;       /* NaN too */
}

/* entr = -x log x with log x = l + ll (em_log_d's sum with its last rounding kept)
   and the product's rounding carried: within one ulp; 0 at 0, -inf below and at
   +inf, NaN passes */
static inline __attribute__((always_inline)) double spe_entr_d(double x) {
    int ok = (x > 0.0) & (x < INFINITY);
    double fe, hf, sr, f = em_log_core_d(ok ? x : 1.0, &fe, &hf, &sr);
    double lh = fe * 6.93147180369123816490e-01;            /* exact */
    double lr = f - (hf - (sr + fe * 1.90821492927058770002e-10));
    double l = lh + lr, ll = em_twosum_err(lh, lr, l);
    double p = x * l;
    double r = -(p + (em_prod_err_d(x, l, p) + x * ll));
    r = fabs(r) < INFINITY ? r : -p;      /* overflow past 1e306 (and Dekker's split past 1e300) */
    r = x == 0.0 ? 0.0 : r;
    r = (x < 0.0) | (x == INFINITY) ? -INFINITY : r;
    return x != x ? x : r;
}
/* float32: log in double to 2^-35 relative (em_log_f32d, no division), one rounding */
static inline __attribute__((always_inline)) float spe_entr_f(float xf) {
    double x = xf;
    int ok = (x > 0.0) & (x < INFINITY);
    double r = -x * em_log_f32d(ok ? x : 1.0);
    r = x == 0.0 ? 0.0 : r;
    r = (x < 0.0) | (x == INFINITY) ? -INFINITY : r;
    return x != x ? xf : (float)r;
}

/* float32 ndtr in double to about 1e-10 (one float rounding): Phi(-|x|) =
   t Q(t) exp(-x^2 / 2) / 2 with a = |x| / sqrt 2, t = 3.5 / (3.5 + a), Q(t) =
   erfcx(a) / t a degree-14 fit in u = (t - 0.62) / 0.38 on t in [0.24, 1] (relative
   error 1.5e-12; a is clamped at 10.5, past where Phi(-|x|) rounds to 0), x^2 / 2
   exact and em_exp_f32d's exp (2^-34.5) */
static inline __attribute__((always_inline)) float spe_ndtr_f(float xf) {
    double x = xf, a = fabs(x) * 0.7071067811865476;
    a = a > 10.5 ? 10.5 : a;
    double t = 3.5 / (3.5 + a);
    double u = EM_MAD(t, 2.6315789473684212, -1.631578947368421);
    double q = 6.743175617884847e-09;
    q = EM_MAD(q, u, -6.697992489534957e-08);
    q = EM_MAD(q, u, -1.4630541045335114e-07);
    q = EM_MAD(q, u, 1.1430260954625736e-06);
    q = EM_MAD(q, u, 3.4669425190259073e-06);
    q = EM_MAD(q, u, -1.311258284388828e-05);
    q = EM_MAD(q, u, -8.79487061638429e-05);
    q = EM_MAD(q, u, -3.305965384221566e-05);
    q = EM_MAD(q, u, 0.001592355566949522);
    q = EM_MAD(q, u, 0.009637748682385584);
    q = EM_MAD(q, u, 0.034372098961198375);
    q = EM_MAD(q, u, 0.08939704928969017);
    q = EM_MAD(q, u, 0.18147203131591425);
    q = EM_MAD(q, u, 0.2953861187763256);
    q = EM_MAD(q, u, 0.3882723149236593);
    double v = 0.5 * t * q * em_exp_f32d(-0.5 * (x * x));
    double r = x < 0.0 ? v : 1.0 - v;
    return x != x ? xf : (float)r;
}
static inline __attribute__((always_inline)) float spe_log_ndtr_f(float x) { return (float)spe_log_ndtr_d(x); }
static inline __attribute__((always_inline)) float spe_erfcx_f(float x) { return (float)spe_erfcx_d(x); }
static inline __attribute__((always_inline)) float spe_ndtri_central_f(float x) {
    return (float)spe_ndtri_central_d(x);
}
static inline __attribute__((always_inline)) float spe_ndtri_tail_f(float x) { return (float)spe_ndtri_tail_d(x); }

/* one loop: contiguous rows vectorise, strided rows call the same function */
#define SPE_LOOP(ATTR, NAME, T, FN)                                                    \
    ATTR void NAME(char **p, const int64_t *s, int64_t n, const void *aux) {            \
        (void)aux;                                                                     \
        if (s[0] == sizeof(T) && s[1] == sizeof(T)) {                                  \
            T *o = (T *)p[0];                                                          \
            const T *a = (const T *)p[1];                                              \
            for (int64_t i = 0; i < n; i++) o[i] = FN(a[i]);                           \
        } else {                                                                       \
            char *o = p[0];                                                            \
            const char *a = p[1];                                                      \
            for (int64_t i = 0; i < n; i++, o += s[0], a += s[1])                      \
                *(T *)o = FN(*(const T *)a);                                           \
        }                                                                              \
    }
/* FAST over a block of 512, then the block's inputs outside OK gathered, SLOW over
   them (vectorised too) and scattered back; strided rows choose per element */
#define SPE_SPLIT_LOOP(ATTR, NAME, T, OK, FAST, SLOW)                                  \
    ATTR void NAME(char **p, const int64_t *s, int64_t n, const void *aux) {            \
        (void)aux;                                                                     \
        if (s[0] == sizeof(T) && s[1] == sizeof(T)) {                                  \
            T *o = (T *)p[0];                                                          \
            const T *a = (const T *)p[1];                                              \
            T xs[512], rs[512];                                                        \
            int32_t at[512];                                                           \
            for (int64_t b0 = 0; b0 < n; b0 += 512) {                                  \
                int64_t b1 = b0 + 512 < n ? b0 + 512 : n;                              \
                int m = 0;                                                             \
                for (int64_t i = b0; i < b1; i++) o[i] = FAST(a[i]);                   \
                for (int64_t i = b0; i < b1; i++) {                                    \
                    xs[m] = a[i];                                                      \
                    at[m] = (int32_t)i;                                                \
                    m += !OK(a[i]);                                                    \
                }                                                                      \
                for (int j = 0; j < m; j++) rs[j] = SLOW(xs[j]);                       \
                for (int j = 0; j < m; j++) o[at[j]] = rs[j];                          \
            }                                                                          \
        } else {                                                                       \
            SP_STRIDED_UNARY(T, OK(x) ? FAST(x) : SLOW(x));                            \
        }                                                                              \
    }
/* every loop of the family, names ending in SFX */
#define SPE_LOOPS(ATTR, SFX)                                             \
    SPE_LOOP(ATTR, em_spe_ndtr_f32##SFX, float, spe_ndtr_f)              \
    SPE_LOOP(ATTR, em_spe_ndtr_f64##SFX, double, spe_ndtr_d)             \
    SPE_LOOP(ATTR, em_spe_log_ndtr_f32##SFX, float, spe_log_ndtr_f)      \
    SPE_LOOP(ATTR, em_spe_log_ndtr_f64##SFX, double, spe_log_ndtr_d)     \
    SPE_LOOP(ATTR, em_spe_erfcx_f32##SFX, float, spe_erfcx_f)            \
    SPE_LOOP(ATTR, em_spe_erfcx_f64##SFX, double, spe_erfcx_d)           \
    SPE_SPLIT_LOOP(ATTR, em_spe_ndtri_f32##SFX, float, SPE_NDTRI_CENTRAL,             \
                   spe_ndtri_central_f, spe_ndtri_tail_f)                              \
    SPE_SPLIT_LOOP(ATTR, em_spe_ndtri_f64##SFX, double, SPE_NDTRI_CENTRAL,            \
                   spe_ndtri_central_d, spe_ndtri_tail_d)                              \
    SPE_LOOP(ATTR, em_spe_entr_f32##SFX, float, spe_entr_f)              \
    SPE_LOOP(ATTR, em_spe_entr_f64##SFX, double, spe_entr_d)

#endif
