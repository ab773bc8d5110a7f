/* Elementwise loops for complex64 / complex128, added to every ISA's table.
   Storage is interleaved (re, im), the layout of C99 `_Complex`, so each loop
   works on `float complex` / `double complex` values through libm's c* functions. */
#include <complex.h>
#include <math.h>
#include "ember_ew.h"

typedef float complex cf;
typedef double complex cd;
typedef uint8_t em_bool;

#define BIN(name, T, expr)                                                               \
    static void name(char **p, const int64_t *st, int64_t n, const void *aux) {          \
        (void)aux;                                                                       \
        char *o = p[0]; const char *a = p[1], *b = p[2];                                 \
        for (int64_t i = 0; i < n; i++, o += st[0], a += st[1], b += st[2]) {            \
            T x = *(const T *)a, y = *(const T *)b;                                      \
            *(T *)o = (expr);                                                            \
        }                                                                                \
    }
#define CMP(name, T, expr)                                                               \
    static void name(char **p, const int64_t *st, int64_t n, const void *aux) {          \
        (void)aux;                                                                       \
        char *o = p[0]; const char *a = p[1], *b = p[2];                                 \
        for (int64_t i = 0; i < n; i++, o += st[0], a += st[1], b += st[2]) {            \
            T x = *(const T *)a, y = *(const T *)b;                                      \
            *(em_bool *)o = (em_bool)(expr);                                             \
        }                                                                                \
    }
#define UN(name, T, R, expr)                                                             \
    static void name(char **p, const int64_t *st, int64_t n, const void *aux) {          \
        (void)aux;                                                                       \
        char *o = p[0]; const char *a = p[1];                                            \
        for (int64_t i = 0; i < n; i++, o += st[0], a += st[1]) {                        \
            T x = *(const T *)a;                                                         \
            *(R *)o = (expr);                                                            \
        }                                                                                \
    }

/* Smith's division: no overflow for large |y| (numpy and torch do the same) */
static inline cd hdiv_cd(cd x, cd y) {
    double a = creal(x), b = cimag(x), c = creal(y), d = cimag(y);
    if (fabs(c) >= fabs(d)) {
        if (c == 0 && d == 0) return CMPLX(a / fabs(c), b / fabs(d));
        double r = d / c, den = c + d * r;
        return CMPLX((a + b * r) / den, (b - a * r) / den);
    }
    double r = c / d, den = c * r + d;
    return CMPLX((a * r + b) / den, (b * r - a) / den);
}
static inline cf hdiv_cf(cf x, cf y) { return (cf)hdiv_cd((cd)x, (cd)y); }

/* torch's complex pow: 0 ** 0 is 1, 0 ** y (Re y > 0) is 0, x ** 2 is x * x */
static inline cd hpow_cd(cd x, cd y) {
    if (cimag(y) == 0) {
        double e = creal(y);
        if (e == 0) return 1;
        if (e == 1) return x;
        if (e == 2) return x * x;
        if (x == 0 && e > 0) return 0;
    }
    return cpow(x, y);
}
static inline cf hpow_cf(cf x, cf y) { return (cf)hpow_cd((cd)x, (cd)y); }

static inline cd hsigmoid_cd(cd x) { return 1.0 / (1.0 + cexp(-x)); }
static inline cf hsigmoid_cf(cf x) { return 1.0f / (1.0f + cexpf(-x)); }
static inline cd hsgn_cd(cd x) { double a = cabs(x); return a == 0 ? 0 : x / a; }
static inline cf hsgn_cf(cf x) { float a = cabsf(x); return a == 0 ? 0 : x / a; }
static inline cd hrsqrt_cd(cd x) { return hdiv_cd(1.0, csqrt(x)); }
static inline cf hrsqrt_cf(cf x) { return hdiv_cf(1.0f, csqrtf(x)); }

#define DEF_ALL(s, T, R, F, SFX)                                                         \
    BIN(add_##s, T, x + y) BIN(sub_##s, T, x - y) BIN(mul_##s, T, x * y)                 \
    BIN(div_##s, T, hdiv_##s(x, y)) BIN(pow_##s, T, hpow_##s(x, y))                        \
    static void adda_##s(char **p, const int64_t *st, int64_t n, const void *aux) {      \
        R al = (R)*(const double *)aux;                                                  \
        char *o = p[0]; const char *a = p[1], *b = p[2];                                 \
        for (int64_t i = 0; i < n; i++, o += st[0], a += st[1], b += st[2])              \
            *(T *)o = *(const T *)a + al * *(const T *)b;                                \
    }                                                                                    \
    CMP(eq_##s, T, x == y) CMP(ne_##s, T, x != y)                                        \
    CMP(land_##s, T, x != 0 && y != 0) CMP(lor_##s, T, x != 0 || y != 0)                 \
    CMP(lxor_##s, T, (x != 0) != (y != 0))                                               \
    UN(neg_##s, T, T, -x) UN(abs_##s, T, R, cabs##SFX(x)) UN(sgn_##s, T, T, hsgn_##s(x))   \
    UN(exp_##s, T, T, cexp##SFX(x)) UN(exp2_##s, T, T, cexp##SFX(x * (R)0.69314718055994530942)) \
    UN(expm1_##s, T, T, cexp##SFX(x) - 1) UN(log_##s, T, T, clog##SFX(x))               \
    UN(log2_##s, T, T, clog##SFX(x) / (R)0.69314718055994530942)                        \
    UN(log10_##s, T, T, clog##SFX(x) / (R)2.30258509299404568402)                       \
    UN(log1p_##s, T, T, clog##SFX(1 + x)) UN(sqrt_##s, T, T, csqrt##SFX(x))             \
    UN(rsqrt_##s, T, T, hrsqrt_##s(x)) UN(sin_##s, T, T, csin##SFX(x))                    \
    UN(cos_##s, T, T, ccos##SFX(x)) UN(tan_##s, T, T, ctan##SFX(x))                      \
    UN(asin_##s, T, T, casin##SFX(x)) UN(acos_##s, T, T, cacos##SFX(x))                  \
    UN(atan_##s, T, T, catan##SFX(x)) UN(sinh_##s, T, T, csinh##SFX(x))                  \
    UN(cosh_##s, T, T, ccosh##SFX(x)) UN(tanh_##s, T, T, ctanh##SFX(x))                  \
    UN(asinh_##s, T, T, casinh##SFX(x)) UN(acosh_##s, T, T, cacosh##SFX(x))              \
    UN(atanh_##s, T, T, catanh##SFX(x)) UN(sigmoid_##s, T, T, hsigmoid_##s(x))            \
    UN(recip_##s, T, T, hdiv_##s(1, x)) UN(square_##s, T, T, x * x)                       \
    UN(isnan_##s, T, em_bool, isnan(creal##SFX(x)) || isnan(cimag##SFX(x)))              \
    UN(isinf_##s, T, em_bool, isinf(creal##SFX(x)) || isinf(cimag##SFX(x)))              \
    UN(isfinite_##s, T, em_bool, isfinite(creal##SFX(x)) && isfinite(cimag##SFX(x)))     \
    UN(lnot_##s, T, em_bool, x == 0)

DEF_ALL(cf, cf, float, f, f)
DEF_ALL(cd, cd, double, , )

#define SET(tabv, op, fn) (tabv)[op][EM_C64] = fn##_cf; (tabv)[op][EM_C128] = fn##_cd;

void em_ew_add_complex(em_ew_table *t) {
    SET(t->bin, EW_ADD, add) SET(t->bin, EW_SUB, sub) SET(t->bin, EW_MUL, mul)
    SET(t->bin, EW_DIV, div) SET(t->bin, EW_POW, pow) SET(t->bin, EW_ADDA, adda)
    SET(t->cmp, EW_EQ, eq) SET(t->cmp, EW_NE, ne) SET(t->cmp, EW_LAND, land)
    SET(t->cmp, EW_LOR, lor) SET(t->cmp, EW_LXOR, lxor)
    SET(t->un, EW_NEG, neg) SET(t->un, EW_ABS, abs) SET(t->un, EW_SIGN, sgn)
    SET(t->un, EW_EXP, exp) SET(t->un, EW_EXP2, exp2) SET(t->un, EW_EXPM1, expm1)
    SET(t->un, EW_LOG, log) SET(t->un, EW_LOG2, log2) SET(t->un, EW_LOG10, log10)
    SET(t->un, EW_LOG1P, log1p) SET(t->un, EW_SQRT, sqrt) SET(t->un, EW_RSQRT, rsqrt)
    SET(t->un, EW_SIN, sin) SET(t->un, EW_COS, cos) SET(t->un, EW_TAN, tan)
    SET(t->un, EW_ASIN, asin) SET(t->un, EW_ACOS, acos) SET(t->un, EW_ATAN, atan)
    SET(t->un, EW_SINH, sinh) SET(t->un, EW_COSH, cosh) SET(t->un, EW_TANH, tanh)
    SET(t->un, EW_ASINH, asinh) SET(t->un, EW_ACOSH, acosh) SET(t->un, EW_ATANH, atanh)
    SET(t->un, EW_SIGMOID, sigmoid) SET(t->un, EW_RECIP, recip) SET(t->un, EW_SQUARE, square)
    SET(t->pred, EW_ISNAN, isnan) SET(t->pred, EW_ISINF, isinf)
    SET(t->pred, EW_ISFINITE, isfinite) SET(t->pred, EW_LNOT, lnot)
}
