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

   zeta: the powers from pow_f64_impl.h's vector pow (log and exp in two parts,
   within 0.52 ulp).  polygamma: the order is one per call, so the powers are
   products by repeated squaring, one exponent bit at a time over the whole block
   (the scalar POWI path's products), and the c_i are constants of the call.
   Lanes outside the fast range (x <= 1 or above SPZ_XMAX, q outside
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

SPZ_INLINE int spz_ok(double x, double q) {
    return (x > 1.0) & (x <= SPZ_XMAX) & (q >= SPZ_QMIN) & (q <= SPZ_QMAX);
}

/* b (1/2 + w/(x-1)) + b sum_i c_i w^-(2i+1): the part of zeta from q + 9 on */
SPZ_INLINE double spz_tail(double x, double w, double b, const double *c) {
    double iw = 1.0 / w, iw2 = iw * iw;
    double h = c[11];
    _Pragma("GCC unroll 12")
    for (int i = 10; i >= 0; i--) h = EM_MAD(h, iw2, c[i]);
    return b * (0.5 + w / (x - 1.0)) + (b * iw) * h;
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
    double w = q + 9.0;
    double s = spz_tail(x, w, em_pow_pos_d(w, -x), c);
    _Pragma("GCC unroll 9")
    for (int k = 8; k >= 0; k--) s += em_pow_pos_d(q + k, -x);
    return s;
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
   lanes: x = n + 1 is one integer, the powers are products by squaring (exact
   factors 1 skipped, as the scalar POWI path), c the call's constants */
SPZ_INLINE void spz_poly_block(const double *qb, double *rb, int64_t m, int x1,
                               const double *c, double fac) {
    double bs[SPZ_BLOCK], pr[SPZ_BLOCK];
    const double x = x1;
    for (int k = 9; k >= 0; k--) {
        int first = 1;
        for (int64_t i = 0; i < m; i++) bs[i] = qb[i] + k;
        for (int e = x1; e; e >>= 1) {
            if (e & 1) {
                if (first)
                    for (int64_t i = 0; i < m; i++) pr[i] = bs[i];
                else
                    for (int64_t i = 0; i < m; i++) pr[i] *= bs[i];
                first = 0;
            }
            if (e >> 1)
                for (int64_t i = 0; i < m; i++) bs[i] *= bs[i];
        }
        if (k == 9)
            for (int64_t i = 0; i < m; i++)
                rb[i] = spz_tail(x, qb[i] + 9.0, 1.0 / pr[i], c);
        else
            for (int64_t i = 0; i < m; i++) rb[i] += 1.0 / pr[i];
    }
    for (int64_t i = 0; i < m; i++) rb[i] *= fac;
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
