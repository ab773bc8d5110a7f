/* The float64 erfinv loop, compiled once per ISA: special.c (generic) and
   special_isa_avx2.c / special_isa_avx512.c, where ember_math.h uses FMA.  Blocks
   of 512 run em_erfinv_vd (every |y| < 1) as three passes, the first guess, the
   Newton step's quotient (with 1/x) and the rest of the step: each pass is bound
   by its dependency chains, shorter ones keep more iterations in flight (three
   passes about 1.1x faster than two).  The block's other inputs (+-1, |y| > 1,
   NaN) are set after it, the per-block check an OR-reduction that vectorises too. */
#ifndef EMBER_ERFINV_F64_IMPL_H
#define EMBER_ERFINV_F64_IMPL_H
#include "special_loop.h"

static inline double em_erfinv_edge_d(double y) {
    return fabs(y) == 1.0 ? copysign((double)INFINITY, y) : (double)NAN;
}

#define ERFINV_F64_LOOP(ATTR, NAME)                                                    \
    ATTR void NAME(char **p, const int64_t *s, int64_t n, const void *aux) {            \
        (void)aux;                                                                     \
        if (s[0] == 8 && s[1] == 8) {                                                  \
            double *o = (double *)p[0];                                                \
            const double *a = (const double *)p[1];                                    \
            double g[512], q[512], h[512];                                             \
            for (int64_t b0 = 0; b0 < n; b0 += 512) {                                  \
                int64_t b1 = b0 + 512 < n ? b0 + 512 : n;                              \
                int bad = 0;                                                           \
                for (int64_t i = b0; i < b1; i++) g[i - b0] = em_erfinv_guess_d(a[i]); \
                for (int64_t i = 0; i < b1 - b0; i++) q[i] = em_erfinv_quo_d(g[i], &h[i]); \
                for (int64_t i = b0; i < b1; i++) {                                    \
                    o[i] = em_erfinv_step_d(a[i], g[i - b0], q[i - b0], h[i - b0]);    \
                    bad |= !(fabs(a[i]) < 1.0);                                        \
                }                                                                      \
                if (bad)                                                               \
                    for (int64_t i = b0; i < b1; i++)                                  \
                        if (!(fabs(a[i]) < 1.0)) o[i] = em_erfinv_edge_d(a[i]);        \
            }                                                                          \
        } else {                                                                       \
            SP_STRIDED_UNARY(double, fabs(x) < 1.0 ? em_erfinv_vd(x) : em_erfinv_edge_d(x)); \
        }                                                                              \
    }

#endif
