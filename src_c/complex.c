/* Elementwise loops for complex64 / complex128, added to every ISA's table.
   Storage is interleaved (re, im), the layout of C99 `_Complex`.  The formulas
   are ember_complex.h's, shared with the CUDA kernels. */
#include <complex.h>
#include <math.h>
#include "ember_ew.h"
#include "ember_complex.h"

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

/* the shared formulas (ember_complex.h) in double, through (re, im) pairs */
static inline em_cd to_cd_cd(cd x) { return em_cmk(creal(x), cimag(x)); }
static inline em_cd to_cd_cf(cf x) { return em_cmk(crealf(x), cimagf(x)); }
static inline cd of_cd_cd(em_cd v) { return CMPLX(v.re, v.im); }
static inline cf of_cd_cf(em_cd v) { return CMPLXF((float)v.re, (float)v.im); }
#define CU(s, op, x) of_cd_##s(em_cun(op, to_cd_##s(x)))
#define CB(s, op, x, y) of_cd_##s(em_cbin(op, to_cd_##s(x), to_cd_##s(y), 0))

#define DEF_ALL(s, T, R, F, SFX)                                                         \
    BIN(add_##s, T, CB(s, EW_ADD, x, y)) BIN(sub_##s, T, CB(s, EW_SUB, x, y))            \
    BIN(mul_##s, T, CB(s, EW_MUL, x, y))                                                 \
    BIN(div_##s, T, CB(s, EW_DIV, x, y)) BIN(pow_##s, T, CB(s, EW_POW, x, y))            \
    static void adda_##s(char **p, const int64_t *st, int64_t n, const void *aux) {      \
        double al = *(const double *)aux;                                                \
        char *o = p[0]; const char *a = p[1], *b = p[2];                                 \
        for (int64_t i = 0; i < n; i++, o += st[0], a += st[1], b += st[2])              \
            *(T *)o = of_cd_##s(em_cbin(EW_ADDA, to_cd_##s(*(const T *)a),               \
                                        to_cd_##s(*(const T *)b), al));                  \
    }                                                                                    \
    CMP(eq_##s, T, em_ccmp(EW_EQ, to_cd_##s(x), to_cd_##s(y)))                           \
    CMP(ne_##s, T, em_ccmp(EW_NE, to_cd_##s(x), to_cd_##s(y)))                           \
    CMP(land_##s, T, em_ccmp(EW_LAND, to_cd_##s(x), to_cd_##s(y)))                       \
    CMP(lor_##s, T, em_ccmp(EW_LOR, to_cd_##s(x), to_cd_##s(y)))                         \
    CMP(lxor_##s, T, em_ccmp(EW_LXOR, to_cd_##s(x), to_cd_##s(y)))                       \
    UN(neg_##s, T, T, CU(s, EW_NEG, x)) UN(abs_##s, T, R, (R)em_cabs(to_cd_##s(x)))      \
    UN(sgn_##s, T, T, CU(s, EW_SIGN, x))                                                 \
    UN(exp_##s, T, T, CU(s, EW_EXP, x)) UN(exp2_##s, T, T, CU(s, EW_EXP2, x))            \
    UN(expm1_##s, T, T, CU(s, EW_EXPM1, x)) UN(log_##s, T, T, CU(s, EW_LOG, x))          \
    UN(log2_##s, T, T, CU(s, EW_LOG2, x)) UN(log10_##s, T, T, CU(s, EW_LOG10, x))        \
    UN(log1p_##s, T, T, CU(s, EW_LOG1P, x)) UN(sqrt_##s, T, T, CU(s, EW_SQRT, x))        \
    UN(rsqrt_##s, T, T, CU(s, EW_RSQRT, x)) UN(sin_##s, T, T, CU(s, EW_SIN, x))          \
    UN(cos_##s, T, T, CU(s, EW_COS, x)) UN(tan_##s, T, T, CU(s, EW_TAN, x))              \
    UN(asin_##s, T, T, CU(s, EW_ASIN, x)) UN(acos_##s, T, T, CU(s, EW_ACOS, x))                  \
    UN(atan_##s, T, T, CU(s, EW_ATAN, x)) UN(sinh_##s, T, T, CU(s, EW_SINH, x))              \
    UN(cosh_##s, T, T, CU(s, EW_COSH, x)) UN(tanh_##s, T, T, CU(s, EW_TANH, x))          \
    UN(asinh_##s, T, T, CU(s, EW_ASINH, x)) UN(acosh_##s, T, T, CU(s, EW_ACOSH, x))              \
    UN(atanh_##s, T, T, CU(s, EW_ATANH, x)) UN(sigmoid_##s, T, T, CU(s, EW_SIGMOID, x))      \
    UN(recip_##s, T, T, CU(s, EW_RECIP, x)) UN(square_##s, T, T, CU(s, EW_SQUARE, x))    \
    UN(isnan_##s, T, em_bool, em_cpred(EW_ISNAN, to_cd_##s(x)))                          \
    UN(isinf_##s, T, em_bool, em_cpred(EW_ISINF, to_cd_##s(x)))                          \
    UN(isfinite_##s, T, em_bool, em_cpred(EW_ISFINITE, to_cd_##s(x)))                    \
    UN(lnot_##s, T, em_bool, em_cpred(EW_LNOT, to_cd_##s(x)))

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
