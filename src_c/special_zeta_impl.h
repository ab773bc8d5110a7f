/* Vectorised Hurwitz zeta(x, q) and polygamma(n, x) for n >= 2 (= (-1)^(n+1) n!
   zeta(n + 1, x)), float32 (evaluated in double, rounded once) and float64: the
   Euler-Maclaurin form of special.c's scalar sp_zeta_impl (Cephes), with a fixed
   number of terms so that a block of lanes runs without branches:

     zeta(x, q) = sum_{k<9} (q+k)^-x + b (1/2 + w/(x-1)) + b sum_{i<12} c_i w^-(2i+1),
     w = q + 9, b = w^-x, c_i = x (x+1) ... (x+2i) B_2i+2 / (2i+2)!

   (the scalar form's term count for q > 0; it stops the sums early once a term is
   below an ulp, here the smaller terms are added too, smallest first).  For
   1 < x <= SPZ_XMAX and w >= 9 each Bernoulli term is below the one before (their
   ratio is at most (x+22)(x+23) / (39.5 w^2) < 1), so the twelve terms are never
   less accurate than the scalar form's stopping rule.

   The powers: pow_f64_impl.h's vector pow (log and exp in two parts, within 0.52
   ulp) with the rounding error of q + k added to the log; polygamma's order is one
   per call, so up to n + 1 = 8 its powers are products by squaring in two parts,
   one exponent bit at a time over the whole block, and the c_i are constants of
   the call.  The terms are summed with their rounding errors carried apart, so
   the result is within about an ulp.  Lanes outside the fast range (x <= 1 or above SPZ_XMAX, q outside
   [SPZ_QMIN, SPZ_QMAX], NaN, inf) are redone by special.c's scalar form.  Every
   stride gathers into the same block buffers, so strided rows and any thread
   split give the contiguous loop's bits.  Included once per ISA
   (special_bessel.c, special_bessel_avx2.c, special_bessel_avx512.c). */
#ifndef EMBER_SPECIAL_ZETA_IMPL_H
#define EMBER_SPECIAL_ZETA_IMPL_H
#include "pow_f64_impl.h"

#define SPZ_INLINE static inline __attribute__((always_inline))
#define SPZ_BLOCK 512
#define SPZ_XMAX 32.0
#define SPZ_QMIN 0x1p-20   /* q^-x stays below 2^640 */
#define SPZ_QMAX 1e6       /* w^-x stays above 1e-193 */

/* special.c's scalar forms, for the lanes outside the fast range */
void em_sp_binary_ref(int op, int dtype, char **p, const int64_t *s, int64_t n,
                      const void *aux);
double em_sp_polygamma_ref(int64_t n, double x, double fac);
double em_sp_polygamma_fac(int64_t n);

/* 1 / A[i] of the scalar form: B_2i+2 / (2i+2)! up to the rising product */
static const double spz_ia[12] = {
    1.0 / 12.0, -1.0 / 720.0, 1.0 / 30240.0, -1.0 / 1209600.0, 1.0 / 47900160.0,
    -1.0 / 1.8924375803183791606e9, 1.0 / 7.47242496e10, -1.0 / 2.950130727918164224e12,
    1.0 / 1.1646782814350067249e14, -1.0 / 4.5979787224074726105e15,
    1.0 / 1.8152105401943546773e17, -1.0 / 7.1661652561756670113e18,
};

/* (a + e)^b for a in [SPZ_QMIN, 2 SPZ_QMAX], |e| <= ulp(a), |b| <= SPZ_XMAX: pow's
   two-part log and exp (the exp's clamp keeps the lanes outside the fast range,
   redone by the scalar form, inside em_ldexp_d's exponents) */
SPZ_INLINE double spz_pow2(double a, double e, double b) {
    double ll, lh = em_pw_log_e(a, e, &ll);
    return em_pw_exp_mul(b, lh, ll);
}

/* q + k = a + e exactly (Knuth's two-sum) */
SPZ_INLINE double spz_add(double q, double k, double *e) {
    double a = q + k, bv = a - q;
    *e = (q - (a - bv)) + (k - bv);
    return a;
}

SPZ_INLINE int spz_ok(double x, double q) {
    return (x > 1.0) & (x <= SPZ_XMAX) & (q >= SPZ_QMIN) & (q <= SPZ_QMAX);
}

/* b (1/2 + w/(x-1)) + b sum_i c_i w^-(2i+1) = hi + *lo: the part of zeta from
   q + 9 = w + we on.  b w/(x-1) leads as x nears 1: w/(x-1) and its product by b are
   carried in two parts */
SPZ_INLINE double spz_tail(double x, double w, double we, double b, const double *c,
                           double *lo) {
    double iw = 1.0 / w, iw2 = iw * iw;
    double h = c[11];
    _Pragma("GCC unroll 12")
    for (int i = 10; i >= 0; i--) h = EM_MAD(h, iw2, c[i]);
    double xm = x - 1.0, v = w / xm, vl = (EM_MAD(-v, xm, w) + we) / xm;
    double d = b * v;
    *lo = em_prod_err_d(b, v, d) + EM_MAD(b, vl + 0.5, (b * iw) * h);
    return d;
}

/* s + t = s' + err exactly (Knuth's two-sum): the terms are summed with their
   rounding errors carried apart, so neither the tail (large as x nears 1) nor
   q^-x (large for small q) takes an error from the other nine terms */
SPZ_INLINE double spz_acc(double s, double t, double *c) {
    double r = s + t, bv = r - s;
    *c += (s - (r - bv)) + (t - bv);
    return r;
}

/* zeta(x, q) in the fast range */
SPZ_INLINE double spz_zeta(double x, double q) {
    double c[12], a = x;
    c[0] = a * spz_ia[0];
    _Pragma("GCC unroll 12")
    for (int i = 1; i < 12; i++) {
        a *= (x + (2 * i - 1)) * (x + 2 * i);
        c[i] = a * spz_ia[i];
    }
    /* q + k is rounded: its error e, raised to x, would cost x/2 ulps */
    double e, lo, w = spz_add(q, 9.0, &e);
    double s = spz_tail(x, w, e, spz_pow2(w, e, -x), c, &lo);
    _Pragma("GCC unroll 8")
    for (int k = 8; k >= 1; k--) {
        double a = spz_add(q, k, &e);
        s = spz_acc(s, spz_pow2(a, e, -x), &lo);
    }
    s = spz_acc(s, spz_pow2(q, 0.0, -x), &lo);
    return s + lo;
}

/* the block's zeta at lanes xb, qb into rb; 1 where a lane needs the scalar form */
SPZ_INLINE int spz_zeta_block(const double *xb, const double *qb, double *rb, int64_t m) {
    int bad = 0;
    for (int64_t i = 0; i < m; i++) {
        rb[i] = spz_zeta(xb[i], qb[i]);
        bad |= !spz_ok(xb[i], qb[i]);
    }
    return bad;
}

#define SPZ_ZETA_LOOP(ATTR, NAME, T, DT)                                               \
    ATTR static void NAME(char **p, const int64_t *s, int64_t n, const void *aux) {    \
        double xb[SPZ_BLOCK], qb[SPZ_BLOCK], rb[SPZ_BLOCK];                            \
        for (int64_t b0 = 0; b0 < n; b0 += SPZ_BLOCK) {                                \
            int64_t m = n - b0 < SPZ_BLOCK ? n - b0 : SPZ_BLOCK;                       \
            const char *pa = p[1] + b0 * s[1], *pq = p[2] + b0 * s[2];                 \
            char *po = p[0] + b0 * s[0];                                               \
            for (int64_t i = 0; i < m; i++) {                                          \
                xb[i] = *(const T *)(pa + i * s[1]);                                   \
                qb[i] = *(const T *)(pq + i * s[2]);                                   \
            }                                                                          \
            int bad = spz_zeta_block(xb, qb, rb, m);                                   \
            for (int64_t i = 0; i < m; i++) *(T *)(po + i * s[0]) = (T)rb[i];          \
            if (bad)                                                                   \
                for (int64_t i = 0; i < m; i++)                                        \
                    if (!spz_ok(xb[i], qb[i])) {                                       \
                        char *q1[3] = {po + i * s[0], (char *)pa + i * s[1],           \
                                       (char *)pq + i * s[2]};                         \
                        em_sp_binary_ref(EM_SP_ZETA, DT, q1, s, 1, aux);               \
                    }                                                                  \
        }                                                                              \
    }

/* polygamma(n, q) = fac zeta(n + 1, q) for 2 <= n <= SPZ_XMAX - 1 at the block's
   lanes, c the call's constants.  x = n + 1 is one integer: up to SPZ_SQMAX the
   powers are products by squaring over the whole block (as the scalar POWI path),
   here in two parts from a = q + k and its rounding error (exact products), then
   1 / (p + pl) = v + v ((1 - v p) - pl v), v = 1 / p; above, spz_pow2 */
#define SPZ_SQMAX 8
SPZ_INLINE void spz_poly_block(const double *qb, double *rb, int64_t m, int x1,
                               const double *c, double fac) {
    double bs[SPZ_BLOCK], bl[SPZ_BLOCK], pr[SPZ_BLOCK], pl[SPZ_BLOCK], lb[SPZ_BLOCK];
    const double x = x1;
    for (int k = 9; k >= 0; k--) {
        for (int64_t i = 0; i < m; i++) bs[i] = spz_add(qb[i], k, &bl[i]);
        if (x1 <= SPZ_SQMAX) {
            int first = 1;
            for (int e = x1; e; e >>= 1) {
                if (e & 1) {
                    if (first) {
                        for (int64_t i = 0; i < m; i++) {
                            pr[i] = bs[i];
                            pl[i] = bl[i];
                        }
                    } else {
                        for (int64_t i = 0; i < m; i++) {
                            double h = pr[i] * bs[i];
                            pl[i] = em_prod_err_d(pr[i], bs[i], h)
                                    + EM_MAD(pr[i], bl[i], pl[i] * bs[i]);
                            pr[i] = h;
                        }
                    }
                    first = 0;
                }
                if (e >> 1)
                    for (int64_t i = 0; i < m; i++) {
                        double h = bs[i] * bs[i];
                        bl[i] = em_prod_err_d(bs[i], bs[i], h) + 2.0 * bs[i] * bl[i];
                        bs[i] = h;
                    }
            }
            for (int64_t i = 0; i < m; i++) {
                double v = 1.0 / pr[i], ph = v * pr[i];
                double r = (1.0 - ph) - em_prod_err_d(v, pr[i], ph);
                pr[i] = v;
                pl[i] = v * (r - pl[i] * v);
            }
        } else {
            for (int64_t i = 0; i < m; i++) {
                pr[i] = spz_pow2(bs[i], bl[i], -x);
                pl[i] = 0.0;
            }
        }
        if (k == 9)
            for (int64_t i = 0; i < m; i++) {
                /* the tail is b times a factor: b's low part times the factor */
                double we, w = spz_add(qb[i], 9.0, &we);
                rb[i] = spz_tail(x, w, we, pr[i], c, &lb[i]);
                lb[i] += pl[i] * (rb[i] / pr[i]);
            }
        else
            for (int64_t i = 0; i < m; i++) {
                rb[i] = spz_acc(rb[i], pr[i], &lb[i]);
                lb[i] += pl[i];
            }
    }
    for (int64_t i = 0; i < m; i++) rb[i] = (rb[i] + lb[i]) * fac;
}

/* order n from aux; the caller takes this loop only for 2 <= n <= SPZ_XMAX - 1 */
#define SPZ_POLY_LOOP(ATTR, NAME, T)                                                   \
    ATTR static void NAME(char **p, const int64_t *s, int64_t n, const void *aux) {    \
        int64_t order = *(const int64_t *)aux;                                         \
        double fac = em_sp_polygamma_fac(order), x = (double)(order + 1);              \
        double c[12], a = x, qb[SPZ_BLOCK], rb[SPZ_BLOCK];                             \
        c[0] = a * spz_ia[0];                                                          \
        for (int i = 1; i < 12; i++) {                                                 \
            a *= (x + (2 * i - 1)) * (x + 2 * i);                                      \
            c[i] = a * spz_ia[i];                                                      \
        }                                                                              \
        for (int64_t b0 = 0; b0 < n; b0 += SPZ_BLOCK) {                                \
            int64_t m = n - b0 < SPZ_BLOCK ? n - b0 : SPZ_BLOCK;                       \
            const char *pa = p[1] + b0 * s[1];                                         \
            char *po = p[0] + b0 * s[0];                                               \
            int bad = 0;                                                               \
            for (int64_t i = 0; i < m; i++) {                                          \
                qb[i] = *(const T *)(pa + i * s[1]);                                   \
                bad |= !spz_ok(x, qb[i]);                                              \
            }                                                                          \
            spz_poly_block(qb, rb, m, (int)order + 1, c, fac);                         \
            for (int64_t i = 0; i < m; i++) *(T *)(po + i * s[0]) = (T)rb[i];          \
            if (bad)                                                                   \
                for (int64_t i = 0; i < m; i++)                                        \
                    if (!spz_ok(x, qb[i]))                                             \
                        *(T *)(po + i * s[0]) = (T)em_sp_polygamma_ref(order, qb[i], fac); \
        }                                                                              \
    }

#define SPZ_ALL_LOOPS(ATTR, PX)                                                        \
    SPZ_ZETA_LOOP(ATTR, PX##_zeta_f64, double, EM_F64)                                 \
    SPZ_ZETA_LOOP(ATTR, PX##_zeta_f32, float, EM_F32)                                  \
    SPZ_POLY_LOOP(ATTR, PX##_poly_f64, double)                                         \
    SPZ_POLY_LOOP(ATTR, PX##_poly_f32, float)

/* zeta's loop (poly = 0) or polygamma's for 2 <= n < SPZ_XMAX (poly = 1) */
#define SPZ_PICK(PX, poly, dtype)                                                      \
    do {                                                                               \
        if ((dtype) != EM_F32 && (dtype) != EM_F64) return NULL;                       \
        int f = (dtype) == EM_F64;                                                     \
        if (poly) return f ? PX##_poly_f64 : PX##_poly_f32;                            \
        return f ? PX##_zeta_f64 : PX##_zeta_f32;                                      \
    } while (0)
#endif
