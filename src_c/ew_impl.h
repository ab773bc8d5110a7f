/* Elementwise inner loops, included once per ISA (ew_generic.c, ew_avx2.c,
   ew_avx512.c) under a `#pragma GCC target`; EW_TABLE_FN names the table
   getter.  Loops are plain C that GCC auto-vectorises for the target ISA:
   contiguous and scalar-broadcast rows get their own loop, anything else the
   strided one. */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "ember_ew.h"

typedef uint8_t em_bool;

/* the formulas shared with the CUDA kernels (host/device functions) */
#include "ember_scalar.h"

#define ew_sigmoidf em_sigmoidf
#define ew_sigmoidd em_sigmoidd
#define ew_tanhf em_tanhf

/* --- scalar math per type, shared between the loops ---------------------- */
#define F_EXP(T, x) (sizeof(T) == 4 ? (T)em_expf((float)(x)) : (T)exp((double)(x)))

/* --- loop templates ------------------------------------------------------ */
#define BIN_LOOP(name, TY, EXPR)                                                         \
    static void name(char **p, const int64_t *s, int64_t n, const void *aux) { typedef TY T;          \
        (void)aux;                                                                      \
        const int64_t z = sizeof(T);                                                    \
        if (s[0] == z && s[1] == z && s[2] == z) {                                      \
            T *o = (T *)p[0]; const T *x = (const T *)p[1], *y = (const T *)p[2];       \
            for (int64_t i = 0; i < n; i++) { T a = x[i], b = y[i]; o[i] = (EXPR); }    \
        } else if (s[0] == z && s[1] == z && s[2] == 0) {                               \
            T *o = (T *)p[0]; const T *x = (const T *)p[1]; const T b = *(const T *)p[2]; \
            for (int64_t i = 0; i < n; i++) { T a = x[i]; o[i] = (EXPR); }              \
        } else if (s[0] == z && s[1] == 0 && s[2] == z) {                               \
            T *o = (T *)p[0]; const T a = *(const T *)p[1]; const T *y = (const T *)p[2]; \
            for (int64_t i = 0; i < n; i++) { T b = y[i]; o[i] = (EXPR); }              \
        } else {                                                                        \
            char *o = p[0]; const char *x = p[1], *y = p[2];                            \
            for (int64_t i = 0; i < n; i++, o += s[0], x += s[1], y += s[2]) {          \
                T a = *(const T *)x, b = *(const T *)y; *(T *)o = (EXPR);               \
            }                                                                           \
        }                                                                               \
    }

/* a + alpha * b with alpha read from aux: add/sub with alpha in one pass */
#define BINA_LOOP(name, TY)                                                             \
    static void name(char **p, const int64_t *s, int64_t n, const void *aux) {          \
        typedef TY T;                                                                   \
        const T al = (T)*(const double *)aux;                                           \
        const int64_t z = sizeof(T);                                                    \
        if (s[0] == z && s[1] == z && s[2] == z) {                                      \
            T *o = (T *)p[0]; const T *x = (const T *)p[1], *y = (const T *)p[2];       \
            for (int64_t i = 0; i < n; i++) o[i] = x[i] + al * y[i];                    \
        } else {                                                                        \
            char *o = p[0]; const char *x = p[1], *y = p[2];                            \
            for (int64_t i = 0; i < n; i++, o += s[0], x += s[1], y += s[2])            \
                *(T *)o = *(const T *)x + al * *(const T *)y;                           \
        }                                                                               \
    }

/* integer division: a zero divisor yields 0 and raises the aux flag */
#define IDIV_LOOP(name, TY, EXPR)                                                        \
    static void name(char **p, const int64_t *s, int64_t n, const void *aux) { typedef TY T;          \
        int bad = 0;                                                                    \
        char *o = p[0]; const char *x = p[1], *y = p[2];                                \
        for (int64_t i = 0; i < n; i++, o += s[0], x += s[1], y += s[2]) {              \
            T a = *(const T *)x, b = *(const T *)y;                                     \
            if (b == 0) { bad = 1; *(T *)o = 0; continue; }                             \
            *(T *)o = (EXPR);                                                           \
        }                                                                               \
        if (bad && aux) *(volatile int *)aux = 1;                                       \
    }

#define CMP_LOOP(name, TY, EXPR)                                                         \
    static void name(char **p, const int64_t *s, int64_t n, const void *aux) { typedef TY T;          \
        (void)aux;                                                                      \
        const int64_t z = sizeof(T);                                                    \
        if (s[0] == 1 && s[1] == z && s[2] == z) {                                      \
            em_bool *o = (em_bool *)p[0]; const T *x = (const T *)p[1], *y = (const T *)p[2]; \
            for (int64_t i = 0; i < n; i++) { T a = x[i], b = y[i]; o[i] = (EXPR); }    \
        } else if (s[0] == 1 && s[1] == z && s[2] == 0) {                               \
            em_bool *o = (em_bool *)p[0]; const T *x = (const T *)p[1]; const T b = *(const T *)p[2]; \
            for (int64_t i = 0; i < n; i++) { T a = x[i]; o[i] = (EXPR); }              \
        } else {                                                                        \
            char *o = p[0]; const char *x = p[1], *y = p[2];                            \
            for (int64_t i = 0; i < n; i++, o += s[0], x += s[1], y += s[2]) {          \
                T a = *(const T *)x, b = *(const T *)y; *(em_bool *)o = (EXPR);         \
            }                                                                           \
        }                                                                               \
    }

#define UN_LOOP(name, TY, OT, EXPR)                                                      \
    static void name(char **p, const int64_t *s, int64_t n, const void *aux) { typedef TY T;          \
        const double *prm = (const double *)aux; (void)prm;                             \
        if (s[0] == sizeof(OT) && s[1] == sizeof(T)) {                                  \
            OT *o = (OT *)p[0]; const T *in = (const T *)p[1];                          \
            for (int64_t i = 0; i < n; i++) { T x = in[i]; (void)x; o[i] = (EXPR); }             \
        } else {                                                                        \
            char *o = p[0]; const char *in = p[1];                                      \
            for (int64_t i = 0; i < n; i++, o += s[0], in += s[1]) {                    \
                T x = *(const T *)in; (void)x; *(OT *)o = (EXPR);                                \
            }                                                                           \
        }                                                                               \
    }

/* a vectorised kernel plus a scalar fix-up, per block, for the rare inputs it
   does not cover (BAD(x)): the block's check is an OR-reduction that also vectorises */
#define UNFIX_LOOP(name, TY, EXPR, BAD, SLOW)                                           \
    static void name(char **p, const int64_t *s, int64_t n, const void *aux) { typedef TY T; \
        (void)aux;                                                                      \
        if (s[0] == sizeof(T) && s[1] == sizeof(T)) {                                   \
            T *o = (T *)p[0]; const T *in = (const T *)p[1];                            \
            for (int64_t b0 = 0; b0 < n; b0 += 512) {                                   \
                int64_t b1 = b0 + 512 < n ? b0 + 512 : n;                               \
                int bad = 0;                                                            \
                for (int64_t i = b0; i < b1; i++) { T x = in[i]; o[i] = (EXPR); bad |= (BAD); } \
                if (bad)                                                                \
                    for (int64_t i = b0; i < b1; i++) { T x = in[i]; if (BAD) o[i] = (SLOW); } \
            }                                                                           \
        } else {                                                                        \
            char *o = p[0]; const char *in = p[1];                                      \
            for (int64_t i = 0; i < n; i++, o += s[0], in += s[1]) {                    \
                T x = *(const T *)in; *(T *)o = (BAD) ? (SLOW) : (EXPR);                \
            }                                                                           \
        }                                                                               \
    }

/* UNFIX_LOOP for binary ops (a, b): contiguous operands, or one of them a
   broadcast scalar, run the vectorised EXPR per block and SLOW where BAD */
#define BINFIX_BLOCKS(EXPR, BAD, SLOW, XA, YB)                                          \
            for (int64_t b0 = 0; b0 < n; b0 += 512) {                                   \
                int64_t b1 = b0 + 512 < n ? b0 + 512 : n;                               \
                int bad = 0;                                                            \
                for (int64_t i = b0; i < b1; i++) { T a = XA, b = YB; o[i] = (EXPR); bad |= (BAD); } \
                if (bad)                                                                \
                    for (int64_t i = b0; i < b1; i++) { T a = XA, b = YB; if (BAD) o[i] = (SLOW); } \
            }
#define BINFIX_LOOP(name, TY, EXPR, BAD, SLOW)                                          \
    static void name(char **p, const int64_t *s, int64_t n, const void *aux) { typedef TY T; \
        (void)aux;                                                                      \
        const int64_t z = sizeof(T);                                                    \
        if (s[0] == z && s[1] == z && s[2] == z) {                                      \
            T *o = (T *)p[0]; const T *x = (const T *)p[1], *y = (const T *)p[2];       \
            BINFIX_BLOCKS(EXPR, BAD, SLOW, x[i], y[i])                                  \
        } else if (s[0] == z && s[1] == z && s[2] == 0) {                               \
            T *o = (T *)p[0]; const T *x = (const T *)p[1]; const T yb = *(const T *)p[2]; \
            BINFIX_BLOCKS(EXPR, BAD, SLOW, x[i], yb)                                    \
        } else if (s[0] == z && s[1] == 0 && s[2] == z) {                               \
            T *o = (T *)p[0]; const T xa = *(const T *)p[1]; const T *y = (const T *)p[2]; \
            BINFIX_BLOCKS(EXPR, BAD, SLOW, xa, y[i])                                    \
        } else {                                                                        \
            char *o = p[0]; const char *x = p[1], *y = p[2];                            \
            for (int64_t i = 0; i < n; i++, o += s[0], x += s[1], y += s[2]) {          \
                T a = *(const T *)x, b = *(const T *)y; *(T *)o = (BAD) ? (SLOW) : (EXPR); \
            }                                                                           \
        }                                                                               \
    }

/* clamp: aux = {T lo (8-byte slot), T hi (8-byte slot), int flags}; NaN propagates */
#define CLAMP_LOOP(name, TY)                                                             \
    static void name(char **p, const int64_t *s, int64_t n, const void *aux) { typedef TY T;          \
        const char *ab = (const char *)aux;                                             \
        T lo = *(const T *)ab, hi = *(const T *)(ab + 8);                               \
        int fl = *(const int *)(ab + 16);                                               \
        if (!(fl & 1)) { lo = hi; } if (!(fl & 2)) { hi = lo; }                                 \
        int hl = fl & 1, hh = (fl & 2) >> 1;                                            \
        char *o = p[0]; const char *in = p[1];                                          \
        if (s[0] == sizeof(T) && s[1] == sizeof(T)) {                                   \
            T *oo = (T *)o; const T *ii = (const T *)in;                                \
            for (int64_t i = 0; i < n; i++) {                                           \
                T x = ii[i], r = x;                                                     \
                r = (hl && r < lo) ? lo : r; r = (hh && r > hi) ? hi : r;               \
                oo[i] = (x != x) ? x : r;                                               \
            }                                                                           \
        } else {                                                                        \
            for (int64_t i = 0; i < n; i++, o += s[0], in += s[1]) {                    \
                T x = *(const T *)in, r = x;                                            \
                r = (hl && r < lo) ? lo : r; r = (hh && r > hi) ? hi : r;               \
                *(T *)o = (x != x) ? x : r;                                             \
            }                                                                           \
        }                                                                               \
    }

#define WHERE_LOOP(name, TY)                                                             \
    static void name(char **p, const int64_t *s, int64_t n, const void *aux) { typedef TY T;          \
        (void)aux;                                                                      \
        char *o = p[0]; const char *c = p[1], *x = p[2], *y = p[3];                     \
        if (s[0] == sizeof(T) && s[1] == 1 && s[2] == sizeof(T) && s[3] == sizeof(T)) { \
            T *oo = (T *)o; const em_bool *cc = (const em_bool *)c;                     \
            const T *xx = (const T *)x, *yy = (const T *)y;                             \
            for (int64_t i = 0; i < n; i++) oo[i] = cc[i] ? xx[i] : yy[i];              \
        } else {                                                                        \
            for (int64_t i = 0; i < n; i++, o += s[0], c += s[1], x += s[2], y += s[3]) \
                *(T *)o = *(const em_bool *)c ? *(const T *)x : *(const T *)y;          \
        }                                                                               \
    }

#define LERP_LOOP(name, TY)                                                              \
    static void name(char **p, const int64_t *s, int64_t n, const void *aux) { typedef TY T;          \
        (void)aux;                                                                      \
        char *o = p[0]; const char *a = p[1], *b = p[2], *w = p[3];                     \
        if (s[3] == 0 && s[0] == sizeof(T) && s[1] == sizeof(T) && s[2] == sizeof(T)) { \
            /* scalar weight (optimizers' moving averages): one branch-free loop */     \
            const T t = *(const T *)w; T *oo = (T *)o;                                  \
            const T *xx = (const T *)a, *yy = (const T *)b;                             \
            if (t < 0.5) { for (int64_t i = 0; i < n; i++) oo[i] = xx[i] + t * (yy[i] - xx[i]); } \
            else { for (int64_t i = 0; i < n; i++) oo[i] = yy[i] - (yy[i] - xx[i]) * (1 - t); } \
            return;                                                                     \
        }                                                                               \
        for (int64_t i = 0; i < n; i++, o += s[0], a += s[1], b += s[2], w += s[3]) {   \
            T x = *(const T *)a, y = *(const T *)b, t = *(const T *)w;                  \
            *(T *)o = (t < 0.5) ? x + t * (y - x) : y - (y - x) * (1 - t);              \
        }                                                                               \
    }

/* --- type lists ---------------------------------------------------------- */
#define FOR_INTS(M, op, ...) M(op, uint8_t, u8, __VA_ARGS__) M(op, int8_t, i8, __VA_ARGS__) \
    M(op, int16_t, i16, __VA_ARGS__) M(op, int32_t, i32, __VA_ARGS__) M(op, int64_t, i64, __VA_ARGS__)
#define FOR_FLOATS(M, op, ...) M(op, float, f32, __VA_ARGS__) M(op, double, f64, __VA_ARGS__)
#define FOR_NUM(M, op, ...) FOR_INTS(M, op, __VA_ARGS__) FOR_FLOATS(M, op, __VA_ARGS__)

#define MK_BIN(op, T, sfx, EXPR) BIN_LOOP(bin_##op##_##sfx, T, EXPR)
#define MK_IDIV(op, T, sfx, EXPR) IDIV_LOOP(bin_##op##_##sfx, T, EXPR)
#define MK_CMP(op, T, sfx, EXPR) CMP_LOOP(cmp_##op##_##sfx, T, EXPR)
#define MK_UN(op, T, sfx, EXPR) UN_LOOP(un_##op##_##sfx, T, T, EXPR)
#define MK_PRED(op, T, sfx, EXPR) UN_LOOP(pred_##op##_##sfx, T, em_bool, EXPR)

/* --- binary ops ---------------------------------------------------------- */
FOR_NUM(MK_BIN, add, a + b)
BIN_LOOP(bin_add_bool, em_bool, a | b)
FOR_NUM(MK_BIN, sub, a - b)
FOR_NUM(MK_BIN, mul, a * b)
BIN_LOOP(bin_mul_bool, em_bool, a & b)
FOR_FLOATS(MK_BIN, div, a / b)
BIN_LOOP(bin_floordiv_f32, float, em_floordivf(a, b))
BIN_LOOP(bin_floordiv_f64, double, em_floordiv(a, b))
FOR_INTS(MK_IDIV, floordiv, (b == -1 ? (T)(0 - (uint64_t)a) :
                             (T)(a / b - ((a % b != 0) && ((a < 0) != (b < 0))))))
BIN_LOOP(bin_rem_f32, float, em_remainderf(a, b))
BIN_LOOP(bin_rem_f64, double, em_remainder(a, b))
FOR_INTS(MK_IDIV, rem, (b == -1 ? 0 : ({ T r_ = a % b; (T)((r_ != 0 && ((b < 0) != (r_ < 0))) ? r_ + b : r_); })))
FOR_FLOATS(MK_BIN, fmod, (T)fmod(a, b))
FOR_INTS(MK_IDIV, fmod, (b == -1 ? 0 : a % b))
/* float pow: exp(b log a) in double for a > 0 and finite b (one rounding);
   zero, negative and non-finite operands go to libm */
BINFIX_LOOP(bin_pow_f32, float, (b == 2.0f ? a * a : em_pow_posf(a, b)),
            (b != 2.0f) & ((!(a > 0.0f)) | (!(a < INFINITY)) | (!(fabsf(b) < INFINITY))), powf(a, b))
BIN_LOOP(bin_pow_f64, double, (b == 2.0 ? a * a : pow(a, b)))
FOR_INTS(MK_BIN, pow, (T)em_ipow64((int64_t)a, (int64_t)b))
/* maximum/minimum propagate NaN; fmax/fmin ignore it */
FOR_FLOATS(MK_BIN, max, (a != a || b != b) ? a + b : (a > b ? a : b))
FOR_FLOATS(MK_BIN, min, (a != a || b != b) ? a + b : (a < b ? a : b))
FOR_INTS(MK_BIN, max, a > b ? a : b)
FOR_INTS(MK_BIN, min, a < b ? a : b)
BIN_LOOP(bin_max_bool, em_bool, a | b)
BIN_LOOP(bin_min_bool, em_bool, a & b)
FOR_FLOATS(MK_BIN, fmax, (T)fmax(a, b))
FOR_FLOATS(MK_BIN, fmin, (T)fmin(a, b))
FOR_FLOATS(MK_BIN, atan2, (T)atan2(a, b))
FOR_FLOATS(MK_BIN, hypot, (T)hypot(a, b))
FOR_FLOATS(MK_BIN, copysign, (T)copysign(a, b))
FOR_INTS(MK_BIN, band, a & b)
FOR_INTS(MK_BIN, bor, a | b)
FOR_INTS(MK_BIN, bxor, a ^ b)
BIN_LOOP(bin_band_bool, em_bool, a & b)
BIN_LOOP(bin_bor_bool, em_bool, a | b)
BIN_LOOP(bin_bxor_bool, em_bool, a ^ b)
FOR_INTS(MK_BIN, lshift, (b < 0 || b >= (T)(8 * sizeof(T))) ? 0 : (T)((uint64_t)a << b))
FOR_INTS(MK_BIN, rshift, (b < 0 || b >= (T)(8 * sizeof(T))) ? (a < 0 ? -1 : 0) : (T)(a >> b))
BIN_LOOP(bin_xlogy_f32, float, em_xlogyf(a, b))
BIN_LOOP(bin_xlogy_f64, double, em_xlogy(a, b))
BIN_LOOP(bin_logaddexp_f32, float, em_logaddexpf(a, b))
BIN_LOOP(bin_logaddexp_f64, double, em_logaddexp(a, b))
/* backward helpers: a = incoming grad, b = saved input or output */
FOR_FLOATS(MK_BIN, relu_bw, b > 0 ? a : 0)
FOR_FLOATS(MK_BIN, sigmoid_bw, a * b * (1 - b))
FOR_FLOATS(MK_BIN, tanh_bw, a * (1 - b * b))
BINFIX_LOOP(bin_gelu_bw_f32, float, a * em_gelu_grad_fastf(b), b < EM_GELU_FAST_MIN,
            a * em_gelu_grad_slowf(b))
BIN_LOOP(bin_gelu_bw_f64, double, a * em_gelu_grad(b))
BIN_LOOP(bin_gelu_tanh_bw_f32, float, a * em_gelu_tanh_gradf(b))
BIN_LOOP(bin_gelu_tanh_bw_f64, double, a * em_gelu_tanh_grad(b))
BINA_LOOP(bin_adda_f32, float)
BINA_LOOP(bin_adda_f64, double)
BIN_LOOP(bin_silu_bw_f32, float, em_silu_bwf(a, b))
BIN_LOOP(bin_silu_bw_f64, double, em_silu_bw(a, b))

/* --- comparisons (bool out) ---------------------------------------------- */
#define MK_CMP_ALL(op, EXPR) FOR_NUM(MK_CMP, op, EXPR) CMP_LOOP(cmp_##op##_bool, em_bool, EXPR)
MK_CMP_ALL(eq, a == b)
MK_CMP_ALL(ne, a != b)
MK_CMP_ALL(lt, a < b)
MK_CMP_ALL(le, a <= b)
MK_CMP_ALL(gt, a > b)
MK_CMP_ALL(ge, a >= b)
MK_CMP_ALL(land, (a != 0) & (b != 0))
MK_CMP_ALL(lor, (a != 0) | (b != 0))
MK_CMP_ALL(lxor, (a != 0) ^ (b != 0))

/* --- unary ops ----------------------------------------------------------- */
FOR_NUM(MK_UN, neg, (T)(0 - x))
FOR_INTS(MK_UN, abs, (T)(x < 0 ? 0 - x : x))
FOR_FLOATS(MK_UN, abs, (T)fabs(x))
UN_LOOP(un_abs_bool, em_bool, em_bool, x)
FOR_INTS(MK_UN, sign, (T)((x > 0) - (x < 0)))
FOR_FLOATS(MK_UN, sign, x != x ? x : (T)((x > 0) - (x < 0)))
UN_LOOP(un_sign_bool, em_bool, em_bool, x)
UN_LOOP(un_exp_f32, float, float, em_expf(x))
UN_LOOP(un_exp2_f32, float, float, em_exp2f(x))
UN_LOOP(un_exp2_f64, double, double, exp2(x))
UN_LOOP(un_exp_f64, double, double, em_exp_d(x))
UN_LOOP(un_expm1_f32, float, float, em_expm1f(x))
UN_LOOP(un_expm1_f64, double, double, (T)expm1(x))
UN_LOOP(un_log_f32, float, float, em_logf(x))
UN_LOOP(un_log_f64, double, double, em_log_d(x))
UN_LOOP(un_log2_f32, float, float, em_logf(x) * 1.44269504088896341f)
UN_LOOP(un_log2_f64, double, double, em_log2_d(x))
UN_LOOP(un_log10_f32, float, float, em_logf(x) * 0.434294481903251828f)
UN_LOOP(un_log10_f64, double, double, (T)log10(x))
UN_LOOP(un_log1p_f32, float, float, em_log1pf(x))
UN_LOOP(un_log1p_f64, double, double, em_log1p_d(x))
UN_LOOP(un_sqrt_f32, float, float, sqrtf(x))
UN_LOOP(un_sqrt_f64, double, double, sqrt(x))
UN_LOOP(un_rsqrt_f32, float, float, 1.0f / sqrtf(x))
UN_LOOP(un_rsqrt_f64, double, double, 1.0 / sqrt(x))
UNFIX_LOOP(un_sin_f32, float, em_sinf(x), (!(fabsf(x) < EM_TRIG_MAX)) & (x == x), sinf(x))
UN_LOOP(un_sin_f64, double, double, sin(x))
UNFIX_LOOP(un_cos_f32, float, em_cosf(x), (!(fabsf(x) < EM_TRIG_MAX)) & (x == x), cosf(x))
UN_LOOP(un_cos_f64, double, double, cos(x))
UNFIX_LOOP(un_tan_f32, float, em_tanf(x), (!(fabsf(x) < EM_TRIG_MAX)) & (x == x), tanf(x))
UN_LOOP(un_tan_f64, double, double, tan(x))
UN_LOOP(un_asin_f32, float, float, em_asinf(x))
UN_LOOP(un_asin_f64, double, double, (T)asin(x))
UN_LOOP(un_acos_f32, float, float, em_acosf(x))
UN_LOOP(un_acos_f64, double, double, (T)acos(x))
UN_LOOP(un_atan_f32, float, float, em_atanf(x))
UN_LOOP(un_atan_f64, double, double, (T)atan(x))
UN_LOOP(un_sinh_f32, float, float, em_sinhf(x))
UN_LOOP(un_sinh_f64, double, double, (T)sinh(x))
UN_LOOP(un_cosh_f32, float, float, em_coshf(x))
UN_LOOP(un_cosh_f64, double, double, (T)cosh(x))
UN_LOOP(un_tanh_f32, float, float, ew_tanhf(x))
UN_LOOP(un_tanh_f64, double, double, tanh(x))
UN_LOOP(un_asinh_f32, float, float, em_asinhf(x))
UN_LOOP(un_asinh_f64, double, double, em_asinh_d(x))
UN_LOOP(un_acosh_f32, float, float, em_acoshf(x))
UN_LOOP(un_acosh_f64, double, double, em_acosh_d(x))
UN_LOOP(un_atanh_f32, float, float, em_atanhf(x))
UN_LOOP(un_atanh_f64, double, double, em_atanh_d(x))
UN_LOOP(un_sigmoid_f32, float, float, ew_sigmoidf(x))
UN_LOOP(un_sigmoid_f64, double, double, ew_sigmoidd(x))
FOR_NUM(MK_UN, relu, (x != x) ? x : (x > 0 ? x : 0))
UNFIX_LOOP(un_gelu_f32, float, em_gelu_fastf(x), x < EM_GELU_FAST_MIN, em_gelu_slowf(x))
UN_LOOP(un_gelu_f64, double, double, em_gelu(x))
UN_LOOP(un_gelu_tanh_f32, float, float, em_gelu_tanhf(x))
UN_LOOP(un_gelu_tanh_f64, double, double, em_gelu_tanh(x))
UN_LOOP(un_silu_f32, float, float, em_siluf(x))
UN_LOOP(un_silu_f64, double, double, x * ew_sigmoidd(x))
UN_LOOP(un_mish_f32, float, float, em_mishf(x))
UN_LOOP(un_mish_f64, double, double, em_mish(x))
UN_LOOP(un_erf_f32, float, float, em_erff(x))
UN_LOOP(un_erf_f64, double, double, (T)erf(x))
UN_LOOP(un_erfc_f32, float, float, em_erfcf(x))
UN_LOOP(un_erfc_f64, double, double, (T)erfc(x))
FOR_FLOATS(MK_UN, floor, (T)floor(x))
FOR_FLOATS(MK_UN, ceil, (T)ceil(x))
FOR_FLOATS(MK_UN, round, (T)nearbyint(x))
FOR_FLOATS(MK_UN, trunc, (T)trunc(x))
FOR_FLOATS(MK_UN, frac, (T)(x - trunc(x)))
FOR_FLOATS(MK_UN, recip, (T)(1 / x))
FOR_NUM(MK_UN, square, (T)(x * x))
FOR_INTS(MK_UN, bnot, (T)~x)
UN_LOOP(un_bnot_bool, em_bool, em_bool, (em_bool)!x)
FOR_FLOATS(MK_UN, lgamma, (T)lgamma(x))
/* softplus: prm = {beta, threshold} */
UN_LOOP(un_softplus_f32, float, float, em_softplusf(x, (float)prm[0], (float)prm[1]))
UN_LOOP(un_softplus_f64, double, double, em_softplus(x, prm[0], prm[1]))
/* leaky_relu: prm = {slope} */
FOR_FLOATS(MK_UN, leaky_relu, x > 0 ? x : (T)(x * prm[0]))
/* elu: prm = {alpha, scale, input_scale} */
/* float32 elu with its parameters read once, so the loop vectorises */
static void un_elu_f32(char **p, const int64_t *s, int64_t n, const void *aux) {
    const double *prm = (const double *)aux;
    const float sc = (float)prm[1], ns = (float)prm[1] * (float)prm[0], is = (float)prm[2];
    if (s[0] == 4 && s[1] == 4) {
        float *o = (float *)p[0]; const float *in = (const float *)p[1];
        for (int64_t i = 0; i < n; i++) { float x = in[i]; o[i] = x > 0 ? x * sc : ns * em_expm1f(x * is); }
    } else {
        char *o = p[0]; const char *in = p[1];
        for (int64_t i = 0; i < n; i++, o += s[0], in += s[1]) {
            float x = *(const float *)in; *(float *)o = x > 0 ? x * sc : ns * em_expm1f(x * is);
        }
    }
}
UN_LOOP(un_elu_f64, double, double, x > 0 ? (T)(x * prm[1]) : (T)(prm[1] * prm[0] * expm1(x * prm[2])))
FOR_FLOATS(MK_UN, hardsigmoid, (T)(x <= -3 ? 0 : (x >= 3 ? 1 : x / 6 + 0.5)))
FOR_FLOATS(MK_UN, hardswish, (T)(x <= -3 ? 0 : (x >= 3 ? x : x * (x + 3) / 6)))
CLAMP_LOOP(un_clamp_u8, uint8_t)
CLAMP_LOOP(un_clamp_i8, int8_t)
CLAMP_LOOP(un_clamp_i16, int16_t)
CLAMP_LOOP(un_clamp_i32, int32_t)
CLAMP_LOOP(un_clamp_i64, int64_t)
CLAMP_LOOP(un_clamp_f32, float)
CLAMP_LOOP(un_clamp_f64, double)

/* --- predicates (bool out) ----------------------------------------------- */
FOR_FLOATS(MK_PRED, isnan, x != x)
FOR_FLOATS(MK_PRED, isinf, (x == INFINITY) | (x == -INFINITY))
FOR_FLOATS(MK_PRED, isfinite, (x == x) & (x != INFINITY) & (x != -INFINITY))
FOR_FLOATS(MK_PRED, signbit, signbit(x) != 0)
FOR_INTS(MK_PRED, isnan, 0)
FOR_INTS(MK_PRED, isinf, 0)
FOR_INTS(MK_PRED, isfinite, 1)
FOR_INTS(MK_PRED, signbit, x < 0)
FOR_NUM(MK_PRED, lnot, x == 0)
UN_LOOP(pred_lnot_bool, em_bool, em_bool, x == 0)
UN_LOOP(pred_isnan_bool, em_bool, em_bool, 0)
UN_LOOP(pred_isinf_bool, em_bool, em_bool, 0)
UN_LOOP(pred_isfinite_bool, em_bool, em_bool, 1)
UN_LOOP(pred_signbit_bool, em_bool, em_bool, 0)

WHERE_LOOP(where_1, uint8_t)
WHERE_LOOP(where_2, uint16_t)
WHERE_LOOP(where_4, uint32_t)
WHERE_LOOP(where_8, uint64_t)
WHERE_LOOP(where_16, em_b16)
LERP_LOOP(lerp_f32, float)
LERP_LOOP(lerp_f64, double)

/* --- the table ----------------------------------------------------------- */
static em_ew_table tab;
static int tab_ready = 0;

#define SET_INTS(arr, op, pre) arr[op][EM_U8] = pre##_u8; arr[op][EM_I8] = pre##_i8; \
    arr[op][EM_I16] = pre##_i16; arr[op][EM_I32] = pre##_i32; arr[op][EM_I64] = pre##_i64;
#define SET_FLOATS(arr, op, pre) arr[op][EM_F32] = pre##_f32; arr[op][EM_F64] = pre##_f64;
#define SET_NUM(arr, op, pre) SET_INTS(arr, op, pre) SET_FLOATS(arr, op, pre)

const em_ew_table *EW_TABLE_FN(void) {
    if (tab_ready) return &tab;
    memset(&tab, 0, sizeof(tab));
    SET_NUM(tab.bin, EW_ADD, bin_add) tab.bin[EW_ADD][EM_BOOL] = bin_add_bool;
    SET_NUM(tab.bin, EW_SUB, bin_sub)
    SET_NUM(tab.bin, EW_MUL, bin_mul) tab.bin[EW_MUL][EM_BOOL] = bin_mul_bool;
    SET_FLOATS(tab.bin, EW_DIV, bin_div)
    SET_NUM(tab.bin, EW_FLOORDIV, bin_floordiv)
    SET_NUM(tab.bin, EW_REM, bin_rem)
    SET_NUM(tab.bin, EW_FMOD, bin_fmod)
    SET_NUM(tab.bin, EW_POW, bin_pow)
    SET_NUM(tab.bin, EW_MAX, bin_max) tab.bin[EW_MAX][EM_BOOL] = bin_max_bool;
    SET_NUM(tab.bin, EW_MIN, bin_min) tab.bin[EW_MIN][EM_BOOL] = bin_min_bool;
    SET_FLOATS(tab.bin, EW_FMAX, bin_fmax)
    SET_FLOATS(tab.bin, EW_FMIN, bin_fmin)
    SET_FLOATS(tab.bin, EW_ATAN2, bin_atan2)
    SET_FLOATS(tab.bin, EW_HYPOT, bin_hypot)
    SET_FLOATS(tab.bin, EW_COPYSIGN, bin_copysign)
    SET_INTS(tab.bin, EW_BAND, bin_band) tab.bin[EW_BAND][EM_BOOL] = bin_band_bool;
    SET_INTS(tab.bin, EW_BOR, bin_bor) tab.bin[EW_BOR][EM_BOOL] = bin_bor_bool;
    SET_INTS(tab.bin, EW_BXOR, bin_bxor) tab.bin[EW_BXOR][EM_BOOL] = bin_bxor_bool;
    SET_INTS(tab.bin, EW_LSHIFT, bin_lshift)
    SET_INTS(tab.bin, EW_RSHIFT, bin_rshift)
    SET_FLOATS(tab.bin, EW_XLOGY, bin_xlogy)
    SET_FLOATS(tab.bin, EW_LOGADDEXP, bin_logaddexp)
    SET_FLOATS(tab.bin, EW_RELU_BW, bin_relu_bw)
    SET_FLOATS(tab.bin, EW_SIGMOID_BW, bin_sigmoid_bw)
    SET_FLOATS(tab.bin, EW_TANH_BW, bin_tanh_bw)
    SET_FLOATS(tab.bin, EW_GELU_BW, bin_gelu_bw)
    SET_FLOATS(tab.bin, EW_GELU_TANH_BW, bin_gelu_tanh_bw)
    SET_FLOATS(tab.bin, EW_SILU_BW, bin_silu_bw)
    SET_FLOATS(tab.bin, EW_ADDA, bin_adda)

#define SET_CMP(op, pre) SET_NUM(tab.cmp, op, pre) tab.cmp[op][EM_BOOL] = pre##_bool;
    SET_CMP(EW_EQ, cmp_eq) SET_CMP(EW_NE, cmp_ne) SET_CMP(EW_LT, cmp_lt) SET_CMP(EW_LE, cmp_le)
    SET_CMP(EW_GT, cmp_gt) SET_CMP(EW_GE, cmp_ge) SET_CMP(EW_LAND, cmp_land)
    SET_CMP(EW_LOR, cmp_lor) SET_CMP(EW_LXOR, cmp_lxor)

    SET_NUM(tab.un, EW_NEG, un_neg)
    SET_NUM(tab.un, EW_ABS, un_abs) tab.un[EW_ABS][EM_BOOL] = un_abs_bool;
    SET_NUM(tab.un, EW_SIGN, un_sign) tab.un[EW_SIGN][EM_BOOL] = un_sign_bool;
    SET_FLOATS(tab.un, EW_EXP, un_exp) SET_FLOATS(tab.un, EW_EXP2, un_exp2)
    SET_FLOATS(tab.un, EW_EXPM1, un_expm1) SET_FLOATS(tab.un, EW_LOG, un_log)
    SET_FLOATS(tab.un, EW_LOG2, un_log2) SET_FLOATS(tab.un, EW_LOG10, un_log10)
    SET_FLOATS(tab.un, EW_LOG1P, un_log1p) SET_FLOATS(tab.un, EW_SQRT, un_sqrt)
    SET_FLOATS(tab.un, EW_RSQRT, un_rsqrt) SET_FLOATS(tab.un, EW_SIN, un_sin)
    SET_FLOATS(tab.un, EW_COS, un_cos) SET_FLOATS(tab.un, EW_TAN, un_tan)
    SET_FLOATS(tab.un, EW_ASIN, un_asin) SET_FLOATS(tab.un, EW_ACOS, un_acos)
    SET_FLOATS(tab.un, EW_ATAN, un_atan) SET_FLOATS(tab.un, EW_SINH, un_sinh)
    SET_FLOATS(tab.un, EW_COSH, un_cosh) SET_FLOATS(tab.un, EW_TANH, un_tanh)
    SET_FLOATS(tab.un, EW_ASINH, un_asinh) SET_FLOATS(tab.un, EW_ACOSH, un_acosh)
    SET_FLOATS(tab.un, EW_ATANH, un_atanh) SET_FLOATS(tab.un, EW_SIGMOID, un_sigmoid)
    SET_NUM(tab.un, EW_RELU, un_relu)
    SET_FLOATS(tab.un, EW_GELU, un_gelu) SET_FLOATS(tab.un, EW_GELU_TANH, un_gelu_tanh)
    SET_FLOATS(tab.un, EW_SILU, un_silu) SET_FLOATS(tab.un, EW_MISH, un_mish)
    SET_FLOATS(tab.un, EW_ERF, un_erf) SET_FLOATS(tab.un, EW_ERFC, un_erfc)
    SET_FLOATS(tab.un, EW_FLOOR, un_floor) SET_FLOATS(tab.un, EW_CEIL, un_ceil)
    SET_FLOATS(tab.un, EW_ROUND, un_round) SET_FLOATS(tab.un, EW_TRUNC, un_trunc)
    SET_FLOATS(tab.un, EW_FRAC, un_frac) SET_FLOATS(tab.un, EW_RECIP, un_recip)
    SET_NUM(tab.un, EW_SQUARE, un_square)
    SET_INTS(tab.un, EW_BNOT, un_bnot) tab.un[EW_BNOT][EM_BOOL] = un_bnot_bool;
    SET_FLOATS(tab.un, EW_LGAMMA, un_lgamma) SET_FLOATS(tab.un, EW_SOFTPLUS, un_softplus)
    SET_FLOATS(tab.un, EW_LEAKY_RELU, un_leaky_relu) SET_FLOATS(tab.un, EW_ELU, un_elu)
    SET_NUM(tab.un, EW_CLAMP, un_clamp)
    SET_FLOATS(tab.un, EW_HARDSIGMOID, un_hardsigmoid)
    SET_FLOATS(tab.un, EW_HARDSWISH, un_hardswish)

#define SET_PRED(op, pre) SET_NUM(tab.pred, op, pre) tab.pred[op][EM_BOOL] = pre##_bool;
    SET_PRED(EW_ISNAN, pred_isnan) SET_PRED(EW_ISINF, pred_isinf)
    SET_PRED(EW_ISFINITE, pred_isfinite) SET_PRED(EW_LNOT, pred_lnot)
    SET_PRED(EW_SIGNBIT, pred_signbit)

    for (int d = 0; d < EM_NDTYPES; d++) {
        int sz = em_itemsize[d];
        tab.where[d] = sz == 1 ? where_1 : sz == 2 ? where_2 : sz == 4 ? where_4 : sz == 8 ? where_8 : where_16;
    }
    tab.lerp[EM_F32] = lerp_f32;
    tab.lerp[EM_F64] = lerp_f64;
    tab_ready = 1;
    return &tab;
}
