/* Vectorised loops of the Bessel family (J0 J1 Y0 Y1, modified I0 I1 K0 K1 and the
   scaled K0 K1, spherical j0) and of the Hermite / Laguerre polynomials at one
   degree: the algorithms of special.c's scalar forms (Cephes' rational and
   Chebyshev pieces, the same order of operations), written branch-free so the loops
   vectorise in double for float32 and float64.  Compiled once per ISA
   (special_bessel.c, special_bessel_avx2.c, special_bessel_avx512.c; the last two
   with FMA in EM_MAD).

   Functions with two ranges (J, Y, K: a small-x form and the asymptotic one) run in
   blocks of 512: the small form over the block when any input is small, the large
   form when any is large, a per-element select when both occur.  Inputs outside the
   forms' domain (NaN, +-inf, |x| beyond the vector sin/cos reduction, x <= 0 for Y
   and K) are redone by special.c's scalar form.  Strided rows make the same choice
   per element, so every row gives the contiguous loop's bits, on any thread count. */
#ifndef EMBER_SPECIAL_BESSEL_IMPL_H
#define EMBER_SPECIAL_BESSEL_IMPL_H
#include <float.h>
#include "special_bessel_tables.h"
#include "special_loop.h"

#define SPB_INLINE static inline __attribute__((always_inline))
#define SPB_TRIG_MAX 1.6e6            /* em_trig_red_d's exact range */

/* special.c's scalar form of a unary op (torch's algorithm), and its strided loop
   of a binary op: the rare-input fix-up and the general case */
double em_sp_unary_ref(int op, double x);
void em_sp_binary_ref(int op, int dtype, char **p, const int64_t *s, int64_t n,
                      const void *aux);

/* Horner's rule, leading coefficient first (Cephes polevl) */
SPB_INLINE double spb_polevl(double x, const double *c, int n) {
    double v = c[0];
    _Pragma("GCC unroll 32")
    for (int i = 1; i < n; i++) v = EM_MAD(v, x, c[i]);
    return v;
}

/* Horner's rule with an implied leading coefficient 1 (Cephes p1evl): the
   denominators RQ, QQ, YQ, AFD and AGD are stored without it */
SPB_INLINE double spb_p1evl(double x, const double *c, int n) {
    double v = x + c[0];
    _Pragma("GCC unroll 32")
    for (int i = 1; i < n; i++) v = EM_MAD(v, x, c[i]);
    return v;
}

/* t q - p of Clenshaw's step in one rounding with FMA; without it (the generic
   table) t q's rounding error is added back (Dekker's product): a plain product
   costs a few ulps over the series' 25-30 steps */
#if EM_FMA_OK
#define SPB_CLENSHAW(t, q, p) fma((t), (q), -(p))
#else
SPB_INLINE double spb_clenshaw_nofma(double t, double q, double p) {
    double tq = t * q;
    return (tq - p) + em_prod_err_d(t, q, tq);
}
#define SPB_CLENSHAW(t, q, p) spb_clenshaw_nofma((t), (q), (p))
#endif

/* Clenshaw's sum of a Chebyshev series, 0.5 (b0 - b2) as Cephes' chbevl */
SPB_INLINE double spb_cheb(double t, const double *c, int n) {
    double a = c[0], p = 0.0, q = 0.0;
    _Pragma("GCC unroll 32")
    for (int i = 1; i < n; i++) {
        p = q;
        q = a;
        a = SPB_CLENSHAW(t, q, p) + c[i];
    }
    return 0.5 * (a - p);
}

/* two Chebyshev series chosen per lane (A where sm, else B; nb <= na): B runs with
   na - nb leading zeros, which leave its sum unchanged */
SPB_INLINE double spb_cheb2(double t, int sm, const double *A, int na, const double *B,
                            int nb) {
    double a = sm ? A[0] : (na == nb ? B[0] : 0.0), p = 0.0, q = 0.0;
    _Pragma("GCC unroll 32")
    for (int i = 1; i < na; i++) {
        p = q;
        q = a;
        double cb = i >= na - nb ? B[i - (na - nb)] : 0.0;
        a = SPB_CLENSHAW(t, q, p) + (sm ? A[i] : cb);
    }
    return 0.5 * (a - p);
}

/* sin and cos of |x| < SPB_TRIG_MAX from one reduction (ember_math.h's kernels) */
SPB_INLINE void spb_sincos(double x, double *s, double *c) {
    double h, l;
    int64_t q;
    em_trig_red_d(x, &h, &l, &q);
    double ks = em_ksin_d(h, l), kc = em_kcos_d(h, l);
    double sv = (q & 1) ? kc : ks, cv = (q & 1) ? -ks : kc;
    *s = (q & 2) ? -sv : sv;
    *c = (q & 2) ? -cv : cv;
}

/* ---- Bessel J0 J1 Y0 Y1: the rational fit on |x| <= 5, the modulus / phase form
   P cos(x - phi) - (5/x) Q sin(x - phi) above (phase rounded as the scalar form) */
#define SPB_RSQPI2 0.797884560802865355879892119868763737      /* sqrt(2/pi) */
#define SPB_2_PI 0.636619772367581343075535053490057448

SPB_INLINE double spb_j0_small(double x) {
    double z = x * x;
    double rp = spb_polevl(z, SPB_J0_RP, 4), rq = spb_p1evl(z, SPB_J0_RQ, 8);
    double r = (z - 5.78318596294678452118e+00) * (z - 3.04712623436620863991e+01) * rp / rq;
    return fabs(x) < 0.00001 ? 1.0 - z / 4.0 : r;
}

/* the large-x form of J (y = 0) or Y (y = 1): w is (5/x)^2 as the scalar form rounds it */
SPB_INLINE double spb_jy_large(double x, double w, double phase, const double *PP,
                               const double *PQ, const double *QP, const double *QQ, int y) {
    double pp = spb_polevl(w, PP, 7), pq = spb_polevl(w, PQ, 7);
    double qp = spb_polevl(w, QP, 8), qq = spb_p1evl(w, QQ, 7);
    double s, c;
    spb_sincos(x - phase, &s, &c);
    double a = pp / pq, b = 5.0 / x * (qp / qq);
    double v = y ? a * s + b * c : a * c - b * s;
    return v * SPB_RSQPI2 / sqrt(x);
}

SPB_INLINE double spb_j0_large(double x) {
    double ax = fabs(x);
    return spb_jy_large(ax, 25.0 / (ax * ax), 0.785398163397448309615660845819875721,
                        SPB_J0_PP, SPB_J0_PQ, SPB_J0_QP, SPB_J0_QQ, 0);
}

/* odd: the rational form keeps x's sign (as -J1(-x) rounds) */
SPB_INLINE double spb_j1_small(double x) {
    double z = x * x;
    double rp = spb_polevl(z, SPB_J1_RP, 4), rq = spb_p1evl(z, SPB_J1_RQ, 8);
    return rp / rq * x * (z - 1.46819706421238932572e+01) * (z - 4.92184563216946036703e+01);
}

SPB_INLINE double spb_j1_large(double x) {
    double ax = fabs(x), u = 5.0 / ax;
    double r = spb_jy_large(ax, u * u, 2.356194490192344928846982537459627163, SPB_J1_PP,
                            SPB_J1_PQ, SPB_J1_QP, SPB_J1_QQ, 0);
    return x < 0.0 ? -r : r;
}

/* 0 < x <= 5 */
SPB_INLINE double spb_y0_small(double x) {
    double z = x * x;
    double yp = spb_polevl(z, SPB_Y0_YP, 8), yq = spb_p1evl(z, SPB_Y0_YQ, 7);
    return yp / yq + (SPB_2_PI * em_log_d(x) * spb_j0_small(x));
}

SPB_INLINE double spb_y0_large(double x) {
    return spb_jy_large(x, 25.0 / (x * x), 0.785398163397448309615660845819875721,
                        SPB_J0_PP, SPB_J0_PQ, SPB_J0_QP, SPB_J0_QQ, 1);
}

SPB_INLINE double spb_y1_small(double x) {
    double z = x * x;
    double yp = spb_polevl(z, SPB_Y1_YP, 6), yq = spb_p1evl(z, SPB_Y1_YQ, 8);
    return x * (yp / yq) + (SPB_2_PI * (spb_j1_small(x) * em_log_d(x) - 1.0 / x));
}

SPB_INLINE double spb_y1_large(double x) {
    double u = 5.0 / x;
    return spb_jy_large(x, u * u, 2.356194490192344928846982537459627163, SPB_J1_PP,
                        SPB_J1_PQ, SPB_J1_QP, SPB_J1_QQ, 1);
}

#define SPB_JY_SMALL(x) (fabs(x) <= 5.0)
#define SPB_J_OK(x) (fabs(x) < SPB_TRIG_MAX)
#define SPB_Y_OK(x) (((x) > 0.0) & ((x) < SPB_TRIG_MAX))

/* ---- modified Bessel I0 I1 (one form: the series chosen per lane) -------------- */
SPB_INLINE double spb_i0(double x) {
    double ax = fabs(x);
    int sm = ax <= 8.0;
    double t = sm ? ax / 2.0 - 2.0 : 32.0 / ax - 2.0;
    double h = spb_cheb2(t, sm, SPB_I0_A, 30, SPB_I0_B, 25);
    double r = em_exp_d(ax) * h;
    return sm ? r : r / sqrt(ax);
}

SPB_INLINE double spb_i1(double x) {
    double ax = fabs(x);
    int sm = ax <= 8.0;
    double t = sm ? ax / 2.0 - 2.0 : 32.0 / ax - 2.0;
    double h = spb_cheb2(t, sm, SPB_I1_A, 29, SPB_I1_B, 25);
    double e = em_exp_d(ax);
    double r = sm ? h * ax * e : e * h / sqrt(ax);
    return x < 0.0 ? -r : r;
}
#define SPB_I_OK(x) (fabs(x) < INFINITY)

/* ---- K0 K1 and the scaled forms: on 0 < x <= 2 a series in x^2 - 2 with log(x/2)
   I(x) (I's small-x series), above a series in 8/x - 2 --------------------------- */
SPB_INLINE double spb_i0_small(double x) {
    return em_exp_d(x) * spb_cheb(x / 2.0 - 2.0, SPB_I0_A, 30);
}
SPB_INLINE double spb_i1_small(double x) {
    return spb_cheb(x / 2.0 - 2.0, SPB_I1_A, 29) * x * em_exp_d(x);
}
SPB_INLINE double spb_k0_small(double x) {
    return spb_cheb(x * x - 2.0, SPB_K0_A, 10) - em_log_d(0.5 * x) * spb_i0_small(x);
}
SPB_INLINE double spb_k1_small(double x) {
    return em_log_d(0.5 * x) * spb_i1_small(x) + spb_cheb(x * x - 2.0, SPB_K1_A, 11) / x;
}
SPB_INLINE double spb_k0_large(double x) {
    return em_exp_d(-x) * spb_cheb(8.0 / x - 2.0, SPB_K0_B, 25) / sqrt(x);
}
SPB_INLINE double spb_k1_large(double x) {
    return em_exp_d(-x) * spb_cheb(8.0 / x - 2.0, SPB_K1_B, 25) / sqrt(x);
}
SPB_INLINE double spb_k0e_small(double x) { return spb_k0_small(x) * em_exp_d(x); }
SPB_INLINE double spb_k1e_small(double x) { return spb_k1_small(x) * em_exp_d(x); }
SPB_INLINE double spb_k0e_large(double x) {
    return spb_cheb(8.0 / x - 2.0, SPB_K0_B, 25) / sqrt(x);
}
SPB_INLINE double spb_k1e_large(double x) {
    return spb_cheb(8.0 / x - 2.0, SPB_K1_B, 25) / sqrt(x);
}
#define SPB_K_SMALL(x) ((x) <= 2.0)
#define SPB_K_OK(x) (((x) > 0.0) & ((x) < INFINITY))

/* ---- spherical j0: the Taylor series below 1/2, sin(x) / x above --------------- */
SPB_INLINE double spb_sph_j0(double x) {
    double z = x * x;
    double t = 1.0 + z * (-1.0 / 6.0 + z * (1.0 / 120.0 + z * (-1.0 / 5040.0 + z * (1.0 / 362880.0
               + z * (-1.0 / 39916800.0 + z * (1.0 / 6227020800.0))))));
    double s, c;
    spb_sincos(x, &s, &c);
    return fabs(x) < 0.5 ? t : s / x;
}

/* ---- Airy Ai: x < -2.09 the modulus / phase form, 2.09 <= x <= 103.892 the
   rational form of exp(-zeta) x^(-1/4) Ai, between them the power series run as the
   scalar form runs it (a lane stops adding terms once its last term is below
   DBL_EPSILON relative): a lane the series has not finished in SPB_AIRY_ITERS terms,
   or whose phase is beyond the sin/cos reduction, returns NaN and the loop redoes it
   (with inf and NaN inputs) by the scalar form. */
#define SPB_AIRY_ITERS 16
SPB_INLINE double spb_airy_neg(double x) {
    double r3 = -2.0 * x * sqrt(-x) / 3.0;
    double z = 1.0 / r3, zz = z * z;
    double afn = spb_polevl(zz, SPB_AI_AFN, 9), afd = spb_p1evl(zz, SPB_AI_AFD, 9);
    double agn = spb_polevl(zz, SPB_AI_AGN, 11), agd = spb_p1evl(zz, SPB_AI_AGD, 10);
    double t = r3 + 0.25 * 3.14159265358979323846;
    double s, c;
    spb_sincos(t, &s, &c);
    double v = 5.64189583547756286948e-01 / sqrt(sqrt(-x))
               * (s * (1.0 + z * z * afn / afd) - c * (z * agn / agd));
    return t < SPB_TRIG_MAX ? v : NAN;
}
SPB_INLINE double spb_airy_pos(double x) {
    double zeta = 2.0 * x * sqrt(x) / 3.0;
    double iz = 1.0 / zeta;
    double an = spb_polevl(iz, SPB_AI_AN, 8), ad = spb_polevl(iz, SPB_AI_AD, 8);
    return 5.64189583547756286948e-01 * (an / ad) / (2.0 * sqrt(sqrt(x)) * em_exp_d(zeta));
}
SPB_INLINE double spb_airy_series(double x) {
    double f = 1.0, g = x, k = 1.0, m = 1.0, n = x, t = 1.0, z = x * x * x;
    _Pragma("GCC unroll 16")
    for (int it = 0; it < SPB_AIRY_ITERS; it++) {
        int act = t > DBL_EPSILON;
        double k1 = k + 1.0, k2 = k1 + 1.0, k3 = k2 + 1.0;
        double m1 = m * z / k1, n1 = n * z / k2;
        m1 /= k2;
        double f1 = f + m1;
        n1 /= k3;
        double g1 = g + n1, t1 = fabs(m1 / f1);
        m = act ? m1 : m;
        n = act ? n1 : n;
        f = act ? f1 : f;
        g = act ? g1 : g;
        k = act ? k3 : k;
        t = act ? t1 : t;
    }
    double r = 0.355028053887817239260 * f - 0.258819403792806798405 * g;
    return t > DBL_EPSILON ? NAN : r;
}
/* the region of x: 0 phase form, 1 series, 2 rational form, 3 zero (x > 103.892) */
SPB_INLINE int spb_airy_region(double x) {
    return x < -2.09 ? 0 : x < 2.09 ? 1 : x <= 103.892 ? 2 : 3;
}
SPB_INLINE double spb_airy_pick(double x, double rn, double rs, double rp) {
    int g = spb_airy_region(x);
    double r = g == 0 ? rn : g == 1 ? rs : g == 2 ? rp : 0.0;
    return fabs(x) < INFINITY ? r : NAN;
}
SPB_INLINE double spb_airy(double x) {
    double rn = spb_airy_neg(x < -2.09 ? x : -3.0);
    double rs = spb_airy_series((x >= -2.09) & (x < 2.09) ? x : 0.0);
    double rp = spb_airy_pos((x >= 2.09) & (x <= 103.892) ? x : 3.0);
    return spb_airy_pick(x, rn, rs, rp);
}

/* Airy's loop: each region's form over the block where the block has inputs in it */
SPB_INLINE void spb_airy_neg_v(const double *x, double *r, int64_t m) {
    for (int64_t i = 0; i < m; i++) r[i] = spb_airy_neg(x[i] < -2.09 ? x[i] : -3.0);
}
SPB_INLINE void spb_airy_series_v(const double *x, double *r, int64_t m) {
    for (int64_t i = 0; i < m; i++)
        r[i] = spb_airy_series((x[i] >= -2.09) & (x[i] < 2.09) ? x[i] : 0.0);
}
SPB_INLINE void spb_airy_pos_v(const double *x, double *r, int64_t m) {
    for (int64_t i = 0; i < m; i++)
        r[i] = spb_airy_pos((x[i] >= 2.09) & (x[i] <= 103.892) ? x[i] : 3.0);
}
SPB_INLINE void spb_zero_v(double *r, int64_t m) {
    for (int64_t i = 0; i < m; i++) r[i] = 0.0;
}
#define SPB_AIRY_LOOP(ATTR, NAME, T)                                                   \
    ATTR static void NAME(char **p, const int64_t *s, int64_t n, const void *aux) {            \
        (void)aux;                                                                     \
        if (s[0] == sizeof(T) && s[1] == sizeof(T)) {                                  \
            double xb[SPB_BLOCK], rn[SPB_BLOCK], rs[SPB_BLOCK], rp[SPB_BLOCK];         \
            for (int64_t b0 = 0; b0 < n; b0 += SPB_BLOCK) {                            \
                int64_t m = n - b0 < SPB_BLOCK ? n - b0 : SPB_BLOCK;                   \
                T *y = (T *)p[0] + b0;                                                 \
                const T *a = (const T *)p[1] + b0;                                     \
                int c0 = 0, c1 = 0, c2 = 0, bad = 0;                                   \
                for (int64_t i = 0; i < m; i++) xb[i] = a[i];                          \
                for (int64_t i = 0; i < m; i++) {                                      \
                    c0 += xb[i] < -2.09;                                               \
                    c1 += (xb[i] >= -2.09) & (xb[i] < 2.09);                                        \
                    c2 += (xb[i] >= 2.09) & (xb[i] <= 103.892);                        \
                }                                                                      \
                if (c0) spb_airy_neg_v(xb, rn, m); else spb_zero_v(rn, m);             \
                if (c1) spb_airy_series_v(xb, rs, m); else spb_zero_v(rs, m);          \
                if (c2) spb_airy_pos_v(xb, rp, m); else spb_zero_v(rp, m);             \
                for (int64_t i = 0; i < m; i++) {                                      \
                    double r = spb_airy_pick(xb[i], rn[i], rs[i], rp[i]);              \
                    y[i] = (T)r;                                                       \
                    bad |= r != r;                                                     \
                }                                                                      \
                if (bad)                                                               \
                    for (int64_t i = 0; i < m; i++)                                    \
                        if (y[i] != y[i]) y[i] = (T)em_sp_unary_ref(EM_SP_AIRY_AI, xb[i]); \
            }                                                                          \
        } else {                                                                       \
            char *o = p[0];                                                            \
            const char *a = p[1];                                                      \
            for (int64_t i = 0; i < n; i++, o += s[0], a += s[1]) {                    \
                double x = *(const T *)a, r = spb_airy(x);                             \
                *(T *)o = (T)(r == r ? r : em_sp_unary_ref(EM_SP_AIRY_AI, x));         \
            }                                                                          \
        }                                                                              \
    }

/* ---- the loops ---------------------------------------------------------------- */
#define SPB_BLOCK 512

/* two forms: SMALL where IS_SMALL(x), LARGE elsewhere, FULL where !OK(x) */
#define SPB_LOOP2(ATTR, NAME, T, SMALL, LARGE, IS_SMALL, OK, FULL)                     \
    ATTR static void NAME(char **p, const int64_t *s, int64_t n, const void *aux) {            \
        (void)aux;                                                                     \
        if (s[0] == sizeof(T) && s[1] == sizeof(T)) {                                  \
            T xb[SPB_BLOCK], tb[SPB_BLOCK];                                            \
            for (int64_t b0 = 0; b0 < n; b0 += SPB_BLOCK) {                            \
                int64_t m = n - b0 < SPB_BLOCK ? n - b0 : SPB_BLOCK;                   \
                T *y = (T *)p[0] + b0;                                                 \
                int bad = 0, ns = 0;                                                   \
                for (int64_t i = 0; i < m; i++) xb[i] = ((const T *)p[1])[b0 + i];     \
                for (int64_t i = 0; i < m; i++) {                                      \
                    ns += IS_SMALL(xb[i]);                                             \
                    bad |= !OK(xb[i]);                                                 \
                }                                                                      \
                if (ns == m) {                                                         \
                    for (int64_t i = 0; i < m; i++) y[i] = SMALL(xb[i]);               \
                } else if (ns == 0) {                                                  \
                    for (int64_t i = 0; i < m; i++) y[i] = LARGE(xb[i]);               \
                } else {                                                               \
                    for (int64_t i = 0; i < m; i++) tb[i] = SMALL(xb[i]);              \
                    for (int64_t i = 0; i < m; i++) y[i] = LARGE(xb[i]);               \
                    for (int64_t i = 0; i < m; i++)                                    \
                        y[i] = IS_SMALL(xb[i]) ? tb[i] : y[i];                         \
                }                                                                      \
                if (bad)                                                               \
                    for (int64_t i = 0; i < m; i++)                                    \
                        if (!OK(xb[i])) y[i] = FULL(xb[i]);                            \
            }                                                                          \
        } else {                                                                       \
            SP_STRIDED_UNARY(T, !OK(x) ? FULL(x) : IS_SMALL(x) ? SMALL(x) : LARGE(x));  \
        }                                                                              \
    }

/* ---- Hermite H / He and Laguerre L at one degree (a 0-stride degree operand):
   the scalar forms' recurrences run over a block of x at a time, in the same order
   of operations (no FMA), so they give the scalar loop's bits.  Other strides go
   to special.c's loop. */
SPB_INLINE int64_t spb_degree(double n) {
    if (!(fabs(n) < 9.2e18)) return INT64_MIN;
    return (int64_t)n;
}

/* kind 0: H, 1: He, 2: L; returns the result in r[0..m) */
SPB_INLINE void spb_poly_block(int kind, const double *x, double *r, int64_t m, int64_t deg,
                               int64_t limit) {
    double pb[SPB_BLOCK];
    if (deg < 0) {
        for (int64_t i = 0; i < m; i++) r[i] = 0.0;
        return;
    }
    if (deg == 0) {
        for (int64_t i = 0; i < m; i++) r[i] = 1.0;
        return;
    }
    if (kind == 2) {
        if (deg == 1) {
            for (int64_t i = 0; i < m; i++) r[i] = x[i] == 0.0 ? 1.0 : 1.0 - x[i];
            return;
        }
        for (int64_t i = 0; i < m; i++) {
            pb[i] = 1.0;
            r[i] = 1.0 - x[i];
        }
        for (int64_t k = 1; k < deg; k++) {
            double kd = (double)k, k2 = (double)(k + k), k1 = (double)(k + 1);
            for (int64_t i = 0; i < m; i++) {
                double v = ((k2 + (1.0 - x[i])) * r[i] - kd * pb[i]) / k1;
                pb[i] = r[i];
                r[i] = v;
            }
        }
        /* L(0) = 1; a NaN x never enters the scalar form's loop, which returns 0 */
        for (int64_t i = 0; i < m; i++)
            r[i] = x[i] == 0.0 ? 1.0 : x[i] != x[i] ? 0.0 : r[i];
        return;
    }
    if (deg == 1) {
        for (int64_t i = 0; i < m; i++) r[i] = kind == 0 ? x[i] + x[i] : x[i];
        return;
    }
    if (deg > limit) {
        for (int64_t i = 0; i < m; i++) r[i] = NAN;
        return;
    }
    for (int64_t i = 0; i < m; i++) {
        pb[i] = 1.0;
        r[i] = kind == 0 ? x[i] + x[i] : x[i];
    }
    if (kind == 0) {
        for (int64_t k = 2; k < deg + deg; k += 2) {
            double kd = (double)k;
            for (int64_t i = 0; i < m; i++) {
                double v = (x[i] + x[i]) * r[i] - kd * pb[i];
                pb[i] = r[i];
                r[i] = v;
            }
        }
    } else {
        for (int64_t k = 1; k < deg; k++) {
            double kd = (double)k;
            for (int64_t i = 0; i < m; i++) {
                double v = x[i] * r[i] - kd * pb[i];
                pb[i] = r[i];
                r[i] = v;
            }
        }
    }
}

#define SPB_POLY_LOOP(ATTR, NAME, T, DT, OP, KIND, LIMIT)                              \
    ATTR static void NAME(char **p, const int64_t *s, int64_t n, const void *aux) {            \
        if (!(s[0] == sizeof(T) && s[1] == sizeof(T) && s[2] == 0)) {                  \
            em_sp_binary_ref(OP, DT, p, s, n, aux);                                    \
            return;                                                                    \
        }                                                                              \
        int64_t deg = spb_degree((double)*(const T *)p[2]);                            \
        double xb[SPB_BLOCK], rb[SPB_BLOCK];                                           \
        for (int64_t b0 = 0; b0 < n; b0 += SPB_BLOCK) {                                \
            int64_t m = n - b0 < SPB_BLOCK ? n - b0 : SPB_BLOCK;                       \
            for (int64_t i = 0; i < m; i++) xb[i] = ((const T *)p[1])[b0 + i];         \
            spb_poly_block(KIND, xb, rb, m, deg, LIMIT);                               \
            for (int64_t i = 0; i < m; i++) ((T *)p[0])[b0 + i] = (T)rb[i];            \
        }                                                                              \
    }

/* xlog1py(x, y) = x log1p(y) (0 where x == 0, NaN where y is NaN) with ember_math.h's
   log1p: one form for every stride, so strided rows give the contiguous bits */
SPB_INLINE double spb_xlog1py(double x, double y) {
    double r = x * em_log1p_d(y);
    r = x == 0.0 ? 0.0 : r;
    return y != y ? y : r;
}
#define SPB_XLOG1PY_LOOP(ATTR, NAME, T)                                                \
    ATTR static void NAME(char **p, const int64_t *s, int64_t n, const void *aux) {            \
        (void)aux;                                                                     \
        if (s[0] == sizeof(T) && s[1] == sizeof(T) && s[2] == sizeof(T)) {             \
            T *o = (T *)p[0];                                                          \
            const T *a = (const T *)p[1], *b = (const T *)p[2];                        \
            for (int64_t i = 0; i < n; i++) o[i] = (T)spb_xlog1py(a[i], b[i]);         \
        } else if (s[0] == sizeof(T) && s[1] == sizeof(T) && s[2] == 0) {              \
            T *o = (T *)p[0];                                                          \
            const T *a = (const T *)p[1];                                              \
            double l = *(const T *)p[2];                                               \
            for (int64_t i = 0; i < n; i++) o[i] = (T)spb_xlog1py(a[i], l);            \
        } else {                                                                       \
            char *o = p[0];                                                            \
            const char *a = p[1], *b = p[2];                                           \
            for (int64_t i = 0; i < n; i++, o += s[0], a += s[1], b += s[2])           \
                *(T *)o = (T)spb_xlog1py(*(const T *)a, *(const T *)b);                \
        }                                                                              \
    }

/* float32 forms: evaluated in double, rounded once */
#define SPB_F(FN) spb_f32_##FN
#define SPB_DEF_F32(FN) \
    SPB_INLINE float SPB_F(FN)(float x) { return (float)FN((double)x); }
SPB_DEF_F32(spb_j0_small) SPB_DEF_F32(spb_j0_large) SPB_DEF_F32(spb_j1_small)
SPB_DEF_F32(spb_j1_large) SPB_DEF_F32(spb_y0_small) SPB_DEF_F32(spb_y0_large)
SPB_DEF_F32(spb_y1_small) SPB_DEF_F32(spb_y1_large) SPB_DEF_F32(spb_i0)
SPB_DEF_F32(spb_i1) SPB_DEF_F32(spb_k0_small) SPB_DEF_F32(spb_k0_large)
SPB_DEF_F32(spb_k1_small) SPB_DEF_F32(spb_k1_large) SPB_DEF_F32(spb_k0e_small)
SPB_DEF_F32(spb_k0e_large) SPB_DEF_F32(spb_k1e_small) SPB_DEF_F32(spb_k1e_large)
SPB_DEF_F32(spb_sph_j0)

#define SPB_FULL64(OP) spb_full64_##OP
#define SPB_FULL32(OP) spb_full32_##OP
#define SPB_DEF_FULL(OP)                                                               \
    static double SPB_FULL64(OP)(double x) { return em_sp_unary_ref(OP, x); }          \
    static float SPB_FULL32(OP)(float x) { return (float)em_sp_unary_ref(OP, x); }
SPB_DEF_FULL(EM_SP_J0) SPB_DEF_FULL(EM_SP_J1) SPB_DEF_FULL(EM_SP_Y0) SPB_DEF_FULL(EM_SP_Y1)
SPB_DEF_FULL(EM_SP_MI0) SPB_DEF_FULL(EM_SP_MI1) SPB_DEF_FULL(EM_SP_K0)
SPB_DEF_FULL(EM_SP_K1) SPB_DEF_FULL(EM_SP_K0E) SPB_DEF_FULL(EM_SP_K1E)
SPB_DEF_FULL(EM_SP_SPH_J0)

/* every loop of the family, named PREFIX_op_f32 / PREFIX_op_f64 */
#define SPB_LOOPS2(ATTR, PX, OPN, OP, SM, LG, IS, OK)                                  \
    SPB_LOOP2(ATTR, PX##_##OPN##_f64, double, SM, LG, IS, OK, SPB_FULL64(OP))          \
    SPB_LOOP2(ATTR, PX##_##OPN##_f32, float, SPB_F(SM), SPB_F(LG), IS, OK, SPB_FULL32(OP))
#define SPB_LOOPS1(ATTR, PX, OPN, OP, FN, OK)                                          \
    FIXUP_LOOP(ATTR, PX##_##OPN##_f64, double, FN, OK, SPB_FULL64(OP))                  \
    FIXUP_LOOP(ATTR, PX##_##OPN##_f32, float, SPB_F(FN), OK, SPB_FULL32(OP))
#define SPB_ALL_LOOPS(ATTR, PX)                                                        \
    SPB_LOOPS2(ATTR, PX, j0, EM_SP_J0, spb_j0_small, spb_j0_large, SPB_JY_SMALL, SPB_J_OK) \
    SPB_LOOPS2(ATTR, PX, j1, EM_SP_J1, spb_j1_small, spb_j1_large, SPB_JY_SMALL, SPB_J_OK) \
    SPB_LOOPS2(ATTR, PX, y0, EM_SP_Y0, spb_y0_small, spb_y0_large, SPB_JY_SMALL, SPB_Y_OK) \
    SPB_LOOPS2(ATTR, PX, y1, EM_SP_Y1, spb_y1_small, spb_y1_large, SPB_JY_SMALL, SPB_Y_OK) \
    SPB_LOOPS1(ATTR, PX, mi0, EM_SP_MI0, spb_i0, SPB_I_OK)                                 \
    SPB_LOOPS1(ATTR, PX, mi1, EM_SP_MI1, spb_i1, SPB_I_OK)                                 \
    SPB_LOOPS2(ATTR, PX, k0, EM_SP_K0, spb_k0_small, spb_k0_large, SPB_K_SMALL, SPB_K_OK)  \
    SPB_LOOPS2(ATTR, PX, k1, EM_SP_K1, spb_k1_small, spb_k1_large, SPB_K_SMALL, SPB_K_OK)  \
    SPB_LOOPS2(ATTR, PX, k0e, EM_SP_K0E, spb_k0e_small, spb_k0e_large, SPB_K_SMALL,        \
               SPB_K_OK)                                                                   \
    SPB_LOOPS2(ATTR, PX, k1e, EM_SP_K1E, spb_k1e_small, spb_k1e_large, SPB_K_SMALL,        \
               SPB_K_OK)                                                                   \
    SPB_LOOPS1(ATTR, PX, sph_j0, EM_SP_SPH_J0, spb_sph_j0, SPB_J_OK)                       \
    SPB_AIRY_LOOP(ATTR, PX##_airy_f64, double)                                             \
    SPB_AIRY_LOOP(ATTR, PX##_airy_f32, float)                                              \
    SPB_POLY_LOOP(ATTR, PX##_herm_h_f64, double, EM_F64, EM_SP_HERM_H, 0, 512)             \
    SPB_POLY_LOOP(ATTR, PX##_herm_h_f32, float, EM_F32, EM_SP_HERM_H, 0, 128)              \
    SPB_POLY_LOOP(ATTR, PX##_herm_he_f64, double, EM_F64, EM_SP_HERM_HE, 1, 512)           \
    SPB_POLY_LOOP(ATTR, PX##_herm_he_f32, float, EM_F32, EM_SP_HERM_HE, 1, 128)            \
    SPB_POLY_LOOP(ATTR, PX##_laguerre_f64, double, EM_F64, EM_SP_LAGUERRE, 2, 0)           \
    SPB_POLY_LOOP(ATTR, PX##_laguerre_f32, float, EM_F32, EM_SP_LAGUERRE, 2, 0)            \
    SPB_XLOG1PY_LOOP(ATTR, PX##_xlog1py_f64, double)                                       \
    SPB_XLOG1PY_LOOP(ATTR, PX##_xlog1py_f32, float)

/* the loop of op for dtype among PX's, NULL where the family has none */
#define SPB_PICK(PX, binary, op, dtype)                                                \
    do {                                                                               \
        int f = (dtype) == EM_F32 ? 0 : (dtype) == EM_F64 ? 1 : -1;                    \
        if (f < 0) return NULL;                                                        \
        if (!(binary)) switch (op) {                                                   \
            case EM_SP_J0: return f ? PX##_j0_f64 : PX##_j0_f32;                       \
            case EM_SP_J1: return f ? PX##_j1_f64 : PX##_j1_f32;                       \
            case EM_SP_Y0: return f ? PX##_y0_f64 : PX##_y0_f32;                       \
            case EM_SP_Y1: return f ? PX##_y1_f64 : PX##_y1_f32;                       \
            case EM_SP_MI0: return f ? PX##_mi0_f64 : PX##_mi0_f32;                    \
            case EM_SP_MI1: return f ? PX##_mi1_f64 : PX##_mi1_f32;                    \
            case EM_SP_K0: return f ? PX##_k0_f64 : PX##_k0_f32;                       \
            case EM_SP_K1: return f ? PX##_k1_f64 : PX##_k1_f32;                       \
            case EM_SP_K0E: return f ? PX##_k0e_f64 : PX##_k0e_f32;                    \
            case EM_SP_K1E: return f ? PX##_k1e_f64 : PX##_k1e_f32;                    \
            case EM_SP_SPH_J0: return f ? PX##_sph_j0_f64 : PX##_sph_j0_f32;           \
            case EM_SP_AIRY_AI: return f ? PX##_airy_f64 : PX##_airy_f32;              \
            default: return NULL;                                                      \
        }                                                                              \
        switch (op) {                                                                  \
            case EM_SP_HERM_H: return f ? PX##_herm_h_f64 : PX##_herm_h_f32;           \
            case EM_SP_HERM_HE: return f ? PX##_herm_he_f64 : PX##_herm_he_f32;        \
            case EM_SP_LAGUERRE: return f ? PX##_laguerre_f64 : PX##_laguerre_f32;     \
            case EM_SP_XLOG1PY: return f ? PX##_xlog1py_f64 : PX##_xlog1py_f32;        \
            default: return NULL;                                                      \
        }                                                                              \
    } while (0)
#endif
