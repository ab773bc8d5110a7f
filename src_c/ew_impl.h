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
/* float64 pow's table-driven kernel (CPU only) */
#include "pow_f64_impl.h"

#define ew_sigmoidf em_sigmoidf
#define ew_sigmoidd em_sigmoidd
#define ew_tanhf em_tanhf

/* --- scalar math per type, shared between the loops ---------------------- */
#define F_EXP(T, x) (sizeof(T) == 4 ? (T)em_expf((float)(x)) : (T)exp((double)(x)))

/* --- loop templates ------------------------------------------------------ */
/* a binary loop whose EXPR reads parameters set up once from aux (prm: doubles) */
#define BINP_LOOP(name, TY, SETUP, EXPR)                                                \
    static void name(char **p, const int64_t *s, int64_t n, const void *aux) {          \
        typedef TY T; const double *prm = (const double *)aux; (void)prm; SETUP         \
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
#define BIN_LOOP(name, TY, EXPR) BINP_LOOP(name, TY, , EXPR)

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
        } else if (s[0] == sizeof(T) && s[1] == 1 && (s[2] == 0 || s[2] == sizeof(T)) &&    \
                   (s[3] == 0 || s[3] == sizeof(T))) {                                  \
            /* a scalar side (threshold, masked fills): the value is read once */      \
            T *oo = (T *)o; const em_bool *cc = (const em_bool *)c;                     \
            const T *xx = (const T *)x, *yy = (const T *)y;                             \
            const int64_t ix = s[2] != 0, iy = s[3] != 0;                               \
            if (!ix && !iy) { const T xv = xx[0], yv = yy[0];                           \
                for (int64_t i = 0; i < n; i++) oo[i] = cc[i] ? xv : yv; }              \
            else if (!iy) { const T yv = yy[0];                                         \
                for (int64_t i = 0; i < n; i++) oo[i] = cc[i] ? xx[i] : yv; }           \
            else { const T xv = xx[0];                                                  \
                for (int64_t i = 0; i < n; i++) oo[i] = cc[i] ? xv : yy[i]; }           \
        } else {                                                                        \
            for (int64_t i = 0; i < n; i++, o += s[0], c += s[1], x += s[2], y += s[3]) \
                *(T *)o = *(const em_bool *)c ? *(const T *)x : *(const T *)y;          \
        }                                                                               \
    }

/* lerp: where |t| < 0.5, x + t (y - x), else y - (y - x)(1 - t).  A scalar weight
   (the optimizers' moving averages) rounds each step as the multi-tensor optimizer
   loops (foreach_impl.h) and CUDA's do, so both paths give the same bits; a tensor
   weight computes as torch's vector kernel, y + (t - 1)(y - x) and one multiply-add
   (fused where the ISA has FMA) of the selected coefficient and base */
#define LERP_LOOP(name, TY, MAD)                                                         \
    static void name(char **p, const int64_t *s, int64_t n, const void *aux) { typedef TY T; \
        (void)aux;                                                                      \
        char *o = p[0]; const char *a = p[1], *b = p[2], *w = p[3];                     \
        if (s[3] == 0 && s[0] == sizeof(T) && s[1] == sizeof(T) && s[2] == sizeof(T)) { \
            /* scalar weight (optimizers' moving averages): one branch-free loop */     \
            const T t = *(const T *)w; T *oo = (T *)o;                                  \
            const T *xx = (const T *)a, *yy = (const T *)b;                             \
            if (fabs(t) < 0.5) { for (int64_t i = 0; i < n; i++) oo[i] = xx[i] + t * (yy[i] - xx[i]); } \
            else { for (int64_t i = 0; i < n; i++) oo[i] = yy[i] - (yy[i] - xx[i]) * (1 - t); } \
            return;                                                                     \
        }                                                                               \
        if (s[0] == sizeof(T) && s[1] == sizeof(T) && s[2] == sizeof(T) && s[3] == sizeof(T)) { \
            T *oo = (T *)o; const T *xx = (const T *)a, *yy = (const T *)b, *ww = (const T *)w; \
            for (int64_t i = 0; i < n; i++) {                                           \
                T x = xx[i], y = yy[i], t = ww[i];                                      \
                const int small = fabs(t) < 0.5;                                        \
                oo[i] = MAD(small ? t : t - 1, y - x, small ? x : y);                   \
            }                                                                           \
            return;                                                                     \
        }                                                                               \
        for (int64_t i = 0; i < n; i++, o += s[0], a += s[1], b += s[2], w += s[3]) {   \
            T x = *(const T *)a, y = *(const T *)b, t = *(const T *)w;                  \
            const int small = fabs(t) < 0.5;                                            \
            *(T *)o = s[3] == 0 ? (small ? x + t * (y - x) : y - (y - x) * (1 - t))     \
                                : MAD(small ? t : t - 1, y - x, small ? x : y);         \
        }                                                                               \
    }

/* addcmul / addcdiv: torch's operations and order, fma(v * b, c, a) (where the ISA
   has FMA) and a + v * b / c, v (aux) in the element type; contiguous operands in
   one loop that vectorises */
#define ADDC_LOOP(name, TY, EXPR)                                                        \
    static void name(char **p, const int64_t *s, int64_t n, const void *aux) { typedef TY T; \
        const T v = *(const T *)aux;                                                    \
        const int64_t z = sizeof(T);                                                    \
        if (s[0] == z && s[1] == z && s[2] == z && s[3] == z) {                         \
            T *o = (T *)p[0];                                                           \
            const T *xx = (const T *)p[1], *yy = (const T *)p[2], *ww = (const T *)p[3]; \
            for (int64_t i = 0; i < n; i++) { T a = xx[i], b = yy[i], c = ww[i]; o[i] = (EXPR); } \
            return;                                                                     \
        }                                                                               \
        char *o = p[0]; const char *x = p[1], *y = p[2], *w = p[3];                     \
        for (int64_t i = 0; i < n; i++, o += s[0], x += s[1], y += s[2], w += s[3]) {   \
            T a = *(const T *)x, b = *(const T *)y, c = *(const T *)w; *(T *)o = (EXPR); \
        }                                                                               \
    }

/* clamp with tensor bounds: maximum then minimum in one pass, each the binary op's
   expression (NaN in x or in a bound propagates; lo > hi gives hi, as torch) */
#define CLAMP3_LOOP(name, TY, MAXE, MINE)                                                \
    static void name(char **p, const int64_t *s, int64_t n, const void *aux) { typedef TY T; \
        (void)aux;                                                                      \
        const int64_t z = sizeof(T);                                                    \
        if (s[0] == z && s[1] == z && s[2] == z && s[3] == z) {                         \
            T *o = (T *)p[0];                                                           \
            const T *xx = (const T *)p[1], *ll = (const T *)p[2], *hh = (const T *)p[3]; \
            for (int64_t i = 0; i < n; i++) {                                           \
                T a = xx[i], b = ll[i]; T m = (MAXE); a = m; b = hh[i]; o[i] = (MINE);  \
            }                                                                           \
            return;                                                                     \
        }                                                                               \
        char *o = p[0]; const char *x = p[1], *l = p[2], *h = p[3];                     \
        for (int64_t i = 0; i < n; i++, o += s[0], x += s[1], l += s[2], h += s[3]) {   \
            T a = *(const T *)x, b = *(const T *)l; T m = (MAXE);                       \
            a = m; b = *(const T *)h; *(T *)o = (MINE);                                 \
        }                                                                               \
    }

/* --- type lists ---------------------------------------------------------- */
#define FOR_INTS(M, op, ...) M(op, uint8_t, u8, __VA_ARGS__) M(op, int8_t, i8, __VA_ARGS__) \
    M(op, int16_t, i16, __VA_ARGS__) M(op, int32_t, i32, __VA_ARGS__) M(op, int64_t, i64, __VA_ARGS__)
#define FOR_FLOATS(M, op, ...) M(op, float, f32, __VA_ARGS__) M(op, double, f64, __VA_ARGS__)
#define FOR_NUM(M, op, ...) FOR_INTS(M, op, __VA_ARGS__) FOR_FLOATS(M, op, __VA_ARGS__)
#define FOR_INTS_B(M, op, ...) FOR_INTS(M, op, __VA_ARGS__) M(op, em_bool, bool, __VA_ARGS__)
#define FOR_NUM_B(M, op, ...) FOR_NUM(M, op, __VA_ARGS__) M(op, em_bool, bool, __VA_ARGS__)

#define MK_BIN(op, T, sfx, EXPR) BIN_LOOP(bin_##op##_##sfx, T, EXPR)
#define MK_IDIV(op, T, sfx, EXPR) IDIV_LOOP(bin_##op##_##sfx, T, EXPR)
#define MK_CMP(op, T, sfx, EXPR) CMP_LOOP(cmp_##op##_##sfx, T, EXPR)
#define MK_UN(op, T, sfx, EXPR) UN_LOOP(un_##op##_##sfx, T, T, EXPR)
#define MK_PRED(op, T, sfx, EXPR) UN_LOOP(pred_##op##_##sfx, T, em_bool, EXPR)

/* --- the kernels of the op lists (ember_ew_ops.h); OWN ones follow ------- */
#define EW_BIN_ALL(k, dt, e1, e2) FOR_##dt(MK_BIN, k, e1)
#define EW_BIN_F2(k, dt, e1, e2) BIN_LOOP(bin_##k##_f32, float, e1) BIN_LOOP(bin_##k##_f64, double, e2)
#define EW_BIN_OWN(k, dt, e1, e2)
#define EW_UN_ALL(k, dt, e1, e2) FOR_##dt(MK_UN, k, e1)
#define EW_UN_F2(k, dt, e1, e2) \
    UN_LOOP(un_##k##_f32, float, float, e1) UN_LOOP(un_##k##_f64, double, double, e2)
#define EW_UN_OWN(k, dt, e1, e2)
#define EW_DEF_BIN_(C, k, pub, kind, dt, loop, e1, e2) EW_BIN_##loop(k, dt, e1, e2)
#define EW_DEF_UN_(C, k, pub, kind, dt, loop, e1, e2) EW_UN_##loop(k, dt, e1, e2)
#define EW_DEF_CMP_(C, k, pub, e) FOR_NUM_B(MK_CMP, k, e)
#define EW_DEF_PRED_(C, k, pub, ef, ei, eb) FOR_FLOATS(MK_PRED, k, ef) FOR_INTS(MK_PRED, k, ei) \
    UN_LOOP(pred_##k##_bool, em_bool, em_bool, eb)
EW_BINARY_OPS(EW_DEF_BIN_)
EW_COMPARE_OPS(EW_DEF_CMP_)
EW_UNARY_OPS(EW_DEF_UN_)
EW_PREDICATE_OPS(EW_DEF_PRED_)

/* --- binary ops (OWN) ---------------------------------------------------- */
FOR_NUM(MK_BIN, add, a + b)
BIN_LOOP(bin_add_bool, em_bool, a | b)
FOR_NUM(MK_BIN, mul, a * b)
BIN_LOOP(bin_mul_bool, em_bool, a & b)
/* float fmod, remainder and floor_divide: the exact branch-free fmod of
   ember_scalar.h, with libm's fmod per block for NaN, inf, zero divisors and
   quotients past 2^23 (float) / 2^52 (double) */
BINFIX_LOOP(bin_floordiv_f32, float, em_floordiv_vf(a, b), !EM_FMOD_FASTF(a, b), em_floordivf(a, b))
BINFIX_LOOP(bin_floordiv_f64, double, em_floordiv_vd(a, b), !EM_FMOD_FASTD(a, b), em_floordiv(a, b))
FOR_INTS(MK_IDIV, floordiv, (b == -1 ? (T)(0 - (uint64_t)a) :
                             (T)(a / b - ((a % b != 0) && ((a < 0) != (b < 0))))))
BINFIX_LOOP(bin_rem_f32, float, em_remainder_vf(a, b), !EM_FMOD_FASTF(a, b), em_remainderf(a, b))
BINFIX_LOOP(bin_rem_f64, double, em_remainder_vd(a, b), !EM_FMOD_FASTD(a, b), em_remainder(a, b))
FOR_INTS(MK_IDIV, rem, (b == -1 ? 0 : ({ T r_ = a % b; (T)((r_ != 0 && ((b < 0) != (r_ < 0))) ? r_ + b : r_); })))
BINFIX_LOOP(bin_fmod_f32, float, em_fmod_vf(a, b), !EM_FMOD_FASTF(a, b), fmodf(a, b))
BINFIX_LOOP(bin_fmod_f64, double, em_fmod_vd(a, b), !EM_FMOD_FASTD(a, b), fmod(a, b))
FOR_INTS(MK_IDIV, fmod, (b == -1 ? 0 : a % b))
/* float pow: a scalar exponent takes torch's special cases (x*x, x*x*x, sqrt,
   1/sqrt, 1/x, 1/(x*x)); otherwise exp(b log|a|) in double (em_pow_vf) with zero,
   subnormal and non-finite operands fixed up through libm per block */
#define POW_SCALAR_LOOP(EXPR) for (int64_t i = 0; i < n; i++) { float a = x[i]; (void)a; o[i] = (EXPR); }
BINFIX_LOOP(bin_powv_f32, float, em_pow_vf(a, b), EM_POW_BAD(a, b), powf(a, b))
static void bin_pow_f32(char **p, const int64_t *s, int64_t n, const void *aux) {
    if (s[0] == 4 && s[1] == 4 && s[2] == 0) {
        float *o = (float *)p[0];
        const float *x = (const float *)p[1];
        const float e = *(const float *)p[2];
        if (e == 2.0f) { POW_SCALAR_LOOP(a * a) return; }
        if (e == 3.0f) { POW_SCALAR_LOOP(a * a * a) return; }
        if (e == 0.5f) { POW_SCALAR_LOOP(sqrtf(a)) return; }
        if (e == -0.5f) { POW_SCALAR_LOOP(1.0f / sqrtf(a)) return; }
        if (e == -1.0f) { POW_SCALAR_LOOP(1.0f / a) return; }
        if (e == -2.0f) { POW_SCALAR_LOOP(1.0f / (a * a)) return; }
        if (e == 1.0f) { POW_SCALAR_LOOP(a) return; }
        if (e == 0.0f) { POW_SCALAR_LOOP(1.0f) return; }
        /* any other exponent: through the tensor-exponent loop, which GCC
           vectorises (with b loop-invariant it does not), a block at a time */
        float eb[512];
        for (int k = 0; k < 512; k++) eb[k] = e;
        const int64_t st[3] = {4, 4, 4};
        for (int64_t b0 = 0; b0 < n; b0 += 512) {
            char *q[3] = {(char *)(o + b0), (char *)(x + b0), (char *)eb};
            bin_powv_f32(q, st, n - b0 < 512 ? n - b0 : 512, aux);
        }
        return;
    }
    bin_powv_f32(p, s, n, aux);
}
/* float64 pow likewise: a > 0 finite and b finite through the table-driven
   kernel (pow_f64_impl.h), the rest through libm per block */
BINFIX_LOOP(bin_pow_f64, double, em_pow_sel_d(a, b),
            (b != 2.0) & ((!(a > 0.0)) | (!(a < INFINITY)) | (!(fabs(b) < INFINITY))), pow(a, b))
FOR_INTS(MK_BIN, pow, (T)em_ipow64((int64_t)a, (int64_t)b))
/* maximum/minimum propagate NaN (a NaN b fails the comparison, so b passes; a NaN a
   is selected first): one max/min and one select; fmax/fmin ignore NaN */
FOR_FLOATS(MK_BIN, max, ({ T m_ = a > b ? a : b; a != a ? a : m_; }))
FOR_FLOATS(MK_BIN, min, ({ T m_ = a < b ? a : b; a != a ? a : m_; }))
FOR_INTS(MK_BIN, max, a > b ? a : b)
FOR_INTS(MK_BIN, min, a < b ? a : b)
BIN_LOOP(bin_max_bool, em_bool, a | b)
BIN_LOOP(bin_min_bool, em_bool, a & b)

BIN_LOOP(bin_gelu_bw_f64, double, a * em_gelu_grad_vd(b))
BIN_LOOP(bin_atan2_f32, float, em_atan2_vf(a, b))
/* float64 atan2: its two stages (ember_math.h) as passes over blocks of 64 when
   both operands are contiguous (blocks of 512 leave the hardware prefetcher idle
   through the second pass: ~1.3x slower on 1M elements read from memory) */
static void bin_atan2_f64(char **p, const int64_t *s, int64_t n, const void *aux) {
    (void)aux;
    if (s[0] == 8 && s[1] == 8 && s[2] == 8) {
        double *o = (double *)p[0];
        const double *x = (const double *)p[1], *y = (const double *)p[2];
        double t[64], num[64], den[64], rng[64];
        for (int64_t b0 = 0; b0 < n; b0 += 64) {
            int64_t m = n - b0 < 64 ? n - b0 : 64;
            for (int64_t i = 0; i < m; i++) t[i] = em_atan2_s1_d(x[b0 + i], y[b0 + i], &num[i], &den[i], &rng[i]);
            for (int64_t i = 0; i < m; i++) o[b0 + i] = em_atan2_s2_d(x[b0 + i], y[b0 + i], t[i], num[i], den[i], rng[i]);
        }
    } else {
        char *o = p[0];
        const char *x = p[1], *y = p[2];
        for (int64_t i = 0; i < n; i++, o += s[0], x += s[1], y += s[2])
            *(double *)o = em_atan2_vd(*(const double *)x, *(const double *)y);
    }
}
BINA_LOOP(bin_adda_f32, float)
BINA_LOOP(bin_adda_f64, double)

/* --- unary ops (OWN) ----------------------------------------------------- */
FOR_INTS(MK_UN, abs, (T)(x < 0 ? 0 - x : x))
FOR_FLOATS(MK_UN, abs, (T)fabs(x))
UN_LOOP(un_abs_bool, em_bool, em_bool, x)
FOR_INTS(MK_UN, sign, (T)((x > 0) - (x < 0)))
/* float sign as torch: a select (NaN gives 0, -0 gives +0) */
FOR_FLOATS(MK_UN, sign, x > 0 ? (T)1 : (x < 0 ? (T)-1 : (T)0))
UN_LOOP(un_sign_bool, em_bool, em_bool, x)
UNFIX_LOOP(un_sin_f32, float, em_sinf(x), (!(fabsf(x) < EM_TRIG_MAX)) & (x == x), em_sinf_any(x))
UNFIX_LOOP(un_sin_f64, double, em_sin_vd(x), (!(fabs(x) < EM_TRIG_D_MAX)) & (x == x), sin(x))
UNFIX_LOOP(un_cos_f32, float, em_cosf(x), (!(fabsf(x) < EM_TRIG_MAX)) & (x == x), em_cosf_any(x))
UNFIX_LOOP(un_cos_f64, double, em_cos_vd(x), (!(fabs(x) < EM_TRIG_D_MAX)) & (x == x), cos(x))
UNFIX_LOOP(un_tan_f32, float, em_tanf(x), (!(fabsf(x) < EM_TRIG_MAX)) & (x == x), em_tanf_any(x))
UNFIX_LOOP(un_tan_f64, double, em_tan_vd(x), (!(fabs(x) < EM_TRIG_D_MAX)) & (x == x), tan(x))
UN_LOOP(un_gelu_f64, double, double, em_gelu_vd(x))
UN_LOOP(un_erfc_f32, float, float, em_erfcf(x))
/* sigmoid, silu and silu's derivative: float32 from ember_math.h's float forms;
   float64 on em_exp_fast_d below |x| = 708, the tail forms beyond (and NaN) */
UN_LOOP(un_sigmoid_f32, float, float, em_sigmoid_vf(x))
UNFIX_LOOP(un_sigmoid_f64, double, em_sigmoid_fast_d(x), !(fabs(x) <= EM_EXP_FAST_D_MAX), em_sigmoid_vd(x))
UN_LOOP(un_silu_f32, float, float, em_silu_vf(x))
UNFIX_LOOP(un_silu_f64, double, em_silu_fast_d(x), !(fabs(x) <= EM_EXP_FAST_D_MAX), em_silu_far_d(x))
BIN_LOOP(bin_silu_bw_f32, float, em_silu_bwf(a, b))
BINFIX_LOOP(bin_silu_bw_f64, double, em_silu_bw_fast_d(a, b), !(fabs(b) <= EM_EXP_FAST_D_MAX),
            em_silu_bw_far_d(a, b))
/* float64 erfc in one pass (ember_math.h) */
UN_LOOP(un_erfc_f64, double, double, em_erfc_vd(x))
/* exp2: float-only with the exponent added to the bits; x < -125 (subnormal
   results, -inf) takes em_exp2f */
UNFIX_LOOP(un_exp2_f32, float, em_exp2_vf(x), x < -125.0f, em_exp2f(x))
/* float64: the exponent added to the bits below abs(x) = 1020, em_exp2_vd per block beyond */
UNFIX_LOOP(un_exp2_f64, double, em_exp2_fast_d(x), !(fabs(x) <= EM_EXP2_FAST_MAX), em_exp2_vd(x))
FOR_INTS(MK_UN, bnot, (T)~x)
UN_LOOP(un_bnot_bool, em_bool, em_bool, (em_bool)!x)
/* float32 lgamma vectorised in double (ember_math.h); x <= 0, inf and NaN take libm.
   EW_WIDE: the ISA file's choice of vector width for such double-heavy loops */
#ifndef EW_WIDE
#define EW_WIDE
#endif
EW_WIDE UNFIX_LOOP(un_lgamma_f32, float, em_lgammaf_pos(x), (!(x > 0.0f)) | (x == INFINITY),
           (float)lgamma((double)x))
/* float64 lgamma vectorised on (0, 1e300) (ember_math.h); the rest through libm */
UNFIX_LOOP(un_lgamma_f64, double, em_lgamma_pos_d(x), (!(x > 0.0)) | (!(x < 1e300)), lgamma(x))
/* exact gelu and its backward in float at full width (ember_math.h) */
EW_WIDE UN_LOOP(un_gelu_f32, float, float, em_gelu_vf(x))
EW_WIDE BIN_LOOP(bin_gelu_bw_f32, float, a * em_gelu_grad_vf(b))
/* hardswish as torch, x * min(max(x + 3, 0), 6) / 6 in the element type.  The
   bounds are hidden from the optimiser (EW_OPAQUE): with the constants in sight GCC
   folds the two selects into a chain of compares and masks that costs more than
   the max and min it then avoids. */
#if defined(__GNUC__) && defined(__x86_64__)
#define EW_OPAQUE(v) __asm__("" : "+x"(v))
#else
#define EW_OPAQUE(v) (void)0
#endif
#define HARDSWISH_LOOP(name, TY)                                                        \
    static void name(char **p, const int64_t *s, int64_t n, const void *aux) {         \
        (void)aux;                                                                      \
        TY lo = 0, hi = 6;                                                              \
        EW_OPAQUE(lo); EW_OPAQUE(hi);                                                   \
        char *o = p[0]; const char *in = p[1];                                          \
        if (s[0] == sizeof(TY) && s[1] == sizeof(TY)) {                                 \
            TY *oo = (TY *)o; const TY *ii = (const TY *)in;                            \
            for (int64_t i = 0; i < n; i++) {                                           \
                TY x = ii[i], c = x + 3; c = c < lo ? lo : c; c = c > hi ? hi : c;      \
                oo[i] = x * c / 6;                                                      \
            }                                                                           \
        } else {                                                                        \
            for (int64_t i = 0; i < n; i++, o += s[0], in += s[1])                      \
                *(TY *)o = em_hardswish_t(*(const TY *)in);                             \
        }                                                                               \
    }
#define em_hardswish_t(x) (sizeof(x) == 4 ? (float)em_hardswishf((float)(x)) : em_hardswish(x))
HARDSWISH_LOOP(un_hardswish_f32, float)
HARDSWISH_LOOP(un_hardswish_f64, double)
/* softplus: prm = {beta, threshold}, read once so the float32 loop vectorises
   (read through prm in the loop, they might alias the output); beta = 1 skips
   the division */
static void un_softplus_f32(char **p, const int64_t *s, int64_t n, const void *aux) {
    const double *prm = (const double *)aux;
    const float beta = (float)prm[0], thr = (float)prm[1];
    if (s[0] == 4 && s[1] == 4) {
        float *o = (float *)p[0]; const float *in = (const float *)p[1];
        if (beta == 1.0f) {
            for (int64_t i = 0; i < n; i++) { float x = in[i]; o[i] = x > thr ? x : em_softplus1_vf(x); }
        } else {
            for (int64_t i = 0; i < n; i++) o[i] = em_softplusf(in[i], beta, thr);
        }
    } else {
        char *o = p[0]; const char *in = p[1];
        for (int64_t i = 0; i < n; i++, o += s[0], in += s[1])
            *(float *)o = em_softplusf(*(const float *)in, beta, thr);
    }
}
static void un_softplus_f64(char **p, const int64_t *s, int64_t n, const void *aux) {
    const double *prm = (const double *)aux;
    const double beta = prm[0], thr = prm[1];
    if (s[0] == 8 && s[1] == 8) {
        double *o = (double *)p[0]; const double *in = (const double *)p[1];
        if (beta == 1.0) {
            for (int64_t i = 0; i < n; i++) { double x = in[i]; o[i] = x > thr ? x : em_softplus1_vd(x); }
            return;
        }
        for (int64_t i = 0; i < n; i++) o[i] = em_softplus_vd(in[i], beta, thr);
    } else {
        char *o = p[0]; const char *in = p[1];
        for (int64_t i = 0; i < n; i++, o += s[0], in += s[1])
            *(double *)o = em_softplus_vd(*(const double *)in, beta, thr);
    }
}
/* leaky_relu: the slope in the element type, as torch, read once and applied by a
   select so the loop vectorises (a branch mispredicts on inputs of mixed sign) */
#define LEAKY_LOOP(name, TY)                                                            \
    static void name(char **p, const int64_t *s, int64_t n, const void *aux) {         \
        const TY k = (TY)((const double *)aux)[0];                                      \
        if (s[0] == sizeof(TY) && s[1] == sizeof(TY)) {                                 \
            TY *o = (TY *)p[0]; const TY *in = (const TY *)p[1];                        \
            for (int64_t i = 0; i < n; i++) { TY x = in[i]; o[i] = x > 0 ? x : x * k; } \
        } else {                                                                        \
            char *o = p[0]; const char *in = p[1];                                      \
            for (int64_t i = 0; i < n; i++, o += s[0], in += s[1]) {                    \
                TY x = *(const TY *)in; *(TY *)o = x > 0 ? x : x * k;                   \
            }                                                                           \
        }                                                                               \
    }
LEAKY_LOOP(un_leaky_relu_f32, float)
LEAKY_LOOP(un_leaky_relu_f64, double)
/* nan_to_num: prm = {nan, posinf, neginf}, cast to the element type (as torch) and
   read once.  Contiguous rows copy a block of 512 while testing it for NaN and
   infinities (x - x is NaN for those alone; a vectorised OR), and replace them only
   in blocks that have them. */
#define NAN_TO_NUM_(x) ((x) != (x) ? vn : ((x) == INFINITY ? vp : ((x) == -INFINITY ? vm : (x))))
#define NAN_TO_NUM_LOOP(name, TY)                                                       \
    static void name(char **p, const int64_t *s, int64_t n, const void *aux) {         \
        const double *prm = (const double *)aux;                                        \
        const TY vn = (TY)prm[0], vp = (TY)prm[1], vm = (TY)prm[2];                     \
        if (s[0] == sizeof(TY) && s[1] == sizeof(TY)) {                                 \
            TY *o = (TY *)p[0]; const TY *in = (const TY *)p[1];                        \
            for (int64_t b0 = 0; b0 < n; b0 += 512) {                                   \
                int64_t b1 = b0 + 512 < n ? b0 + 512 : n;                               \
                int bad = 0;                                                            \
                for (int64_t i = b0; i < b1; i++) { TY x = in[i]; o[i] = x; bad |= (x - x != 0); } \
                if (bad)                                                                \
                    for (int64_t i = b0; i < b1; i++) { TY x = in[i]; o[i] = NAN_TO_NUM_(x); } \
            }                                                                           \
        } else {                                                                        \
            char *o = p[0]; const char *in = p[1];                                      \
            for (int64_t i = 0; i < n; i++, o += s[0], in += s[1]) {                    \
                TY x = *(const TY *)in; *(TY *)o = NAN_TO_NUM_(x);                      \
            }                                                                           \
        }                                                                               \
    }
NAN_TO_NUM_LOOP(un_nan_to_num_f32, float)
NAN_TO_NUM_LOOP(un_nan_to_num_f64, double)
/* frexp on the bits, branch-free: subnormals are scaled up by 2^k first (their
   exponent then lowered by k); zero, inf and NaN keep themselves / exponent 0 */
#define FREXP_PARTS(TY, UT, MB, EMASK, BIAS, K, TINY)                                \
    int fin_ = (x - x == 0) & (x != 0);                                                 \
    int sub_ = fin_ & ((x < 0 ? -x : x) < TINY);                                        \
    TY xs_ = sub_ ? x * (TY)(K == 32 ? 0x1p32 : 0x1p64) : x;                            \
    UT b_; memcpy(&b_, &xs_, sizeof b_);                                                \
    int e_ = (int)((b_ >> MB) & EMASK) - BIAS - (sub_ ? K : 0);                         \
    UT mb_ = (b_ & ~((UT)EMASK << MB)) | ((UT)BIAS << MB);                              \
    TY m_; memcpy(&m_, &mb_, sizeof m_); (void)m_; (void)e_;
#define FREXP_LOOP(name, TY, UT, MB, EMASK, BIAS, K, TINY, RESULT)                            \
    static void name(char **p, const int64_t *s, int64_t n, const void *aux) {         \
        (void)aux;                                                                      \
        if (s[0] == sizeof(TY) && s[1] == sizeof(TY)) {                                 \
            TY *o = (TY *)p[0]; const TY *in = (const TY *)p[1];                        \
            for (int64_t i = 0; i < n; i++) { TY x = in[i]; FREXP_PARTS(TY, UT, MB, EMASK, BIAS, K, TINY) o[i] = RESULT; } \
        } else {                                                                        \
            char *o = p[0]; const char *in = p[1];                                      \
            for (int64_t i = 0; i < n; i++, o += s[0], in += s[1]) {                    \
                TY x = *(const TY *)in; FREXP_PARTS(TY, UT, MB, EMASK, BIAS, K, TINY) *(TY *)o = RESULT; \
            }                                                                           \
        }                                                                               \
    }
FREXP_LOOP(un_frexp_m_f32, float, uint32_t, 23, 0xFFu, 126, 32, 0x1p-126f, fin_ ? m_ : x)
FREXP_LOOP(un_frexp_m_f64, double, uint64_t, 52, 0x7FFu, 1022, 64, 0x1p-1022, fin_ ? m_ : x)
FREXP_LOOP(un_frexp_e_f32, float, uint32_t, 23, 0xFFu, 126, 32, 0x1p-126f, fin_ ? (float)e_ : 0.0f)
FREXP_LOOP(un_frexp_e_f64, double, uint64_t, 52, 0x7FFu, 1022, 64, 0x1p-1022, fin_ ? (double)e_ : 0.0)
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
/* float64: a positive input_scale (every elu, selu, celu with alpha > 0) keeps
   expm1's argument at or below 0, where em_expm1_neg_d serves */
static void un_elu_f64(char **p, const int64_t *s, int64_t n, const void *aux) {
    const double *prm = (const double *)aux;
    const double sc = prm[1], ns = prm[1] * prm[0], is = prm[2];
    if (s[0] == 8 && s[1] == 8) {
        double *o = (double *)p[0]; const double *in = (const double *)p[1];
        if (is > 0.0) {
            for (int64_t i = 0; i < n; i++) { double x = in[i]; o[i] = x > 0 ? x * sc : ns * em_expm1_neg_d(x * is); }
            return;
        }
        for (int64_t i = 0; i < n; i++) { double x = in[i]; o[i] = x > 0 ? x * sc : ns * em_expm1_vd(x * is); }
    } else {
        char *o = p[0]; const char *in = p[1];
        for (int64_t i = 0; i < n; i++, o += s[0], in += s[1]) {
            double x = *(const double *)in; *(double *)o = x > 0 ? x * sc : ns * em_expm1_vd(x * is);
        }
    }
}
/* backward helpers with parameters (a = incoming grad, b = saved input): SETUP
   reads them from aux once, so the loops vectorise; a broadcast grad (the
   backward of a sum) keeps its own loop */
/* elu: torch's order, grad * input_scale * (alpha scale) * exp(x input_scale) for
   x <= 0 and grad * scale otherwise (NaN included) */
#define ELU_BW_SETUP const T sc = (T)prm[1], ns = (T)prm[1] * (T)prm[0], is = (T)prm[2];
BINP_LOOP(bin_elu_bw_f32, float, ELU_BW_SETUP, b <= 0 ? a * is * ns * em_expf(b * is) : a * sc)
BINP_LOOP(bin_elu_bw_f64, double, ELU_BW_SETUP, b <= 0 ? a * is * ns * em_act_exp_d(b * is) : a * sc)
/* softplus: torch's grad * z / (z + 1), z = exp(beta x), and grad above the threshold */
#define SOFTPLUS_BW_SETUP const T beta = (T)prm[0], thr = (T)prm[1];
BINP_LOOP(bin_softplus_bw_f32, float, SOFTPLUS_BW_SETUP,
          ({ T u = b * beta, e = em_expf(u); u > thr ? a : a * e / (e + 1); }))
BINP_LOOP(bin_softplus_bw_f64, double, SOFTPLUS_BW_SETUP,
          ({ T u = b * beta, e = em_act_exp_d(u); u > thr ? a : a * e / (e + 1); }))
/* pointwise regression losses (torch's forms and operation order); the gradients
   take s = norm * grad (norm 1/N for a mean, 2/N for mse's) and select, so they
   vectorise; NaN differences give NaN */
#define LOSS_P_SETUP const T p_ = (T)prm[0];
#define LOSS_G_SETUP const T p_ = (T)prm[0], s_ = (T)prm[1];
#define LOSS_S_SETUP const T s_ = (T)prm[1];
BINP_LOOP(bin_smooth_l1_f32, float, LOSS_P_SETUP,
          ({ T z = fabsf(a - b); z < p_ ? (T)0.5 * z * z / p_ : z - (T)0.5 * p_; }))
BINP_LOOP(bin_smooth_l1_f64, double, LOSS_P_SETUP,
          ({ T z = fabs(a - b); z < p_ ? 0.5 * z * z / p_ : z - 0.5 * p_; }))
BINP_LOOP(bin_huber_f32, float, LOSS_P_SETUP,
          ({ T z = fabsf(a - b); z < p_ ? (T)0.5 * z * z : p_ * (z - (T)0.5 * p_); }))
BINP_LOOP(bin_huber_f64, double, LOSS_P_SETUP,
          ({ T z = fabs(a - b); z < p_ ? 0.5 * z * z : p_ * (z - 0.5 * p_); }))
BINP_LOOP(bin_mse_grad_f32, float, LOSS_S_SETUP, (a - b) * s_)
BINP_LOOP(bin_mse_grad_f64, double, LOSS_S_SETUP, (a - b) * s_)
#define SMOOTH_L1_GRAD_(T) \
    ({ T d = a - b; d <= -p_ ? -s_ : (d >= p_ ? s_ : s_ * d / p_); })
#define HUBER_GRAD_(T) \
    ({ T d = a - b; d <= -p_ ? -s_ * p_ : (d >= p_ ? s_ * p_ : s_ * d); })
BINP_LOOP(bin_smooth_l1_grad_f32, float, LOSS_G_SETUP, SMOOTH_L1_GRAD_(float))
BINP_LOOP(bin_smooth_l1_grad_f64, double, LOSS_G_SETUP, SMOOTH_L1_GRAD_(double))
BINP_LOOP(bin_huber_grad_f32, float, LOSS_G_SETUP, HUBER_GRAD_(float))
BINP_LOOP(bin_huber_grad_f64, double, LOSS_G_SETUP, HUBER_GRAD_(double))
BINP_LOOP(bin_bce_logits_grad_f32, float, LOSS_S_SETUP, (em_sigmoid_vf(a) - b) * s_)
BINP_LOOP(bin_bce_logits_grad_f64, double, LOSS_S_SETUP, (em_sigmoid_vd(a) - b) * s_)
CLAMP_LOOP(un_clamp_u8, uint8_t)
CLAMP_LOOP(un_clamp_i8, int8_t)
CLAMP_LOOP(un_clamp_i16, int16_t)
CLAMP_LOOP(un_clamp_i32, int32_t)
CLAMP_LOOP(un_clamp_i64, int64_t)
/* float clamp: a missing bound is an infinity, so the loop is one max and one min
   (a NaN input fails both comparisons and passes, as in CLAMP_LOOP) */
#define FCLAMP_LOOP(name, TY)                                                           \
    static void name(char **p, const int64_t *s, int64_t n, const void *aux) {         \
        const char *ab = (const char *)aux;                                             \
        int fl = *(const int *)(ab + 16);                                               \
        const TY lo = (fl & 1) ? *(const TY *)ab : -(TY)INFINITY;                       \
        const TY hi = (fl & 2) ? *(const TY *)(ab + 8) : (TY)INFINITY;                  \
        char *o = p[0]; const char *in = p[1];                                          \
        if (s[0] == sizeof(TY) && s[1] == sizeof(TY)) {                                 \
            TY *oo = (TY *)o; const TY *ii = (const TY *)in;                            \
            for (int64_t i = 0; i < n; i++) { TY r = ii[i]; r = r < lo ? lo : r; oo[i] = r > hi ? hi : r; } \
        } else {                                                                        \
            for (int64_t i = 0; i < n; i++, o += s[0], in += s[1]) {                    \
                TY r = *(const TY *)in; r = r < lo ? lo : r; *(TY *)o = r > hi ? hi : r; \
            }                                                                           \
        }                                                                               \
    }
FCLAMP_LOOP(un_clamp_f32, float)
FCLAMP_LOOP(un_clamp_f64, double)


WHERE_LOOP(where_1, uint8_t)
WHERE_LOOP(where_2, uint16_t)
WHERE_LOOP(where_4, uint32_t)
WHERE_LOOP(where_8, uint64_t)
WHERE_LOOP(where_16, em_b16)
LERP_LOOP(lerp_f32, float, EM_MADF)
LERP_LOOP(lerp_f64, double, EM_MAD)
#define MK_ADDCMUL(op, T, sfx, X_) ADDC_LOOP(addcmul_##sfx, T, (T)(a + v * b * c))
FOR_INTS(MK_ADDCMUL, addcmul, _)
ADDC_LOOP(addcmul_f32, float, EM_MADF(v * b, c, a))
ADDC_LOOP(addcmul_f64, double, EM_MAD(v * b, c, a))
ADDC_LOOP(addcdiv_f32, float, a + v * b / c)
ADDC_LOOP(addcdiv_f64, double, a + v * b / c)
#define FMAXE_ ({ T m_ = a > b ? a : b; a != a ? a : m_; })
#define FMINE_ ({ T m_ = a < b ? a : b; a != a ? a : m_; })
#define MK_CLAMP3(op, T, sfx, X_) CLAMP3_LOOP(clamp3_##sfx, T, a > b ? a : b, a < b ? a : b)
FOR_INTS(MK_CLAMP3, clamp3, _)
CLAMP3_LOOP(clamp3_f32, float, FMAXE_, FMINE_)
CLAMP3_LOOP(clamp3_f64, double, FMAXE_, FMINE_)

/* logaddexp2: float32 with double inside (ember_math.h); float64 with the exponent
   added to 2^-d's bits, libm-free em_logaddexp2_vd per block past |a - b| = 1020 */
BIN_LOOP(bin_logaddexp2_f32, float, em_logaddexp2f(a, b))
BINFIX_LOOP(bin_logaddexp2_f64, double, em_logaddexp2_fast_d(a, b),
            !(fabs(a - b) <= EM_EXP2_FAST_MAX), em_logaddexp2_vd(a, b))

/* threshold and the shrinks: selects on parameters read once, so the loops vectorise.
   torch's forms, NaN passing through: threshold x <= th ? value : x; hardshrink 0 on
   [-lambd, lambd]; softshrink x -+ lambd outside it and +0 inside (as torch's vectorised
   loop; its scalar tail gives x * 0) */
#define UNP_LOOP(name, TY, SETUP, EXPR)                                                 \
    static void name(char **p, const int64_t *s, int64_t n, const void *aux) {         \
        typedef TY T; SETUP                                                             \
        if (s[0] == sizeof(T) && s[1] == sizeof(T)) {                                   \
            T *o = (T *)p[0]; const T *in = (const T *)p[1];                            \
            for (int64_t i = 0; i < n; i++) { T x = in[i]; o[i] = (EXPR); }             \
        } else {                                                                        \
            char *o = p[0]; const char *in = p[1];                                      \
            for (int64_t i = 0; i < n; i++, o += s[0], in += s[1]) {                    \
                T x = *(const T *)in; *(T *)o = (EXPR);                                 \
            }                                                                           \
        }                                                                               \
    }
/* integer types get {threshold, value} as int64 (range-checked by the caller) */
#define THR_SETUP(PT) const T th = (T)((const PT *)aux)[0], tv = (T)((const PT *)aux)[1];
#define THR_EXPR (x <= th ? tv : x)
UNP_LOOP(un_threshold_u8, uint8_t, THR_SETUP(int64_t), THR_EXPR)
UNP_LOOP(un_threshold_i8, int8_t, THR_SETUP(int64_t), THR_EXPR)
UNP_LOOP(un_threshold_i16, int16_t, THR_SETUP(int64_t), THR_EXPR)
UNP_LOOP(un_threshold_i32, int32_t, THR_SETUP(int64_t), THR_EXPR)
UNP_LOOP(un_threshold_i64, int64_t, THR_SETUP(int64_t), THR_EXPR)
UNP_LOOP(un_threshold_f32, float, THR_SETUP(double), THR_EXPR)
UNP_LOOP(un_threshold_f64, double, THR_SETUP(double), THR_EXPR)
#define SHRINK_SETUP const T l = (T)((const double *)aux)[0], nl = -l;
#define HARDSHRINK_EXPR (((x >= nl) & (x <= l)) ? (T)0 : x)
#define SOFTSHRINK_EXPR ({ T r_ = x > l ? x - l : (x != x ? x : (T)0); x < nl ? x + l : r_; })
UNP_LOOP(un_hardshrink_f32, float, SHRINK_SETUP, HARDSHRINK_EXPR)
UNP_LOOP(un_hardshrink_f64, double, SHRINK_SETUP, HARDSHRINK_EXPR)
UNP_LOOP(un_softshrink_f32, float, SHRINK_SETUP, SOFTSHRINK_EXPR)
UNP_LOOP(un_softshrink_f64, double, SHRINK_SETUP, SOFTSHRINK_EXPR)
/* their backward (torch's threshold_backward / shrink backward): the grad, or 0 where
   the input is at or below the threshold (NaN passes) / not outside [-lambd, lambd]
   (NaN gives 0: torch's vectorised loop) */
#define THR_BW_SETUP const T th = (T)prm[0];
BINP_LOOP(bin_threshold_bw_f32, float, THR_BW_SETUP, b <= th ? 0 : a)
BINP_LOOP(bin_threshold_bw_f64, double, THR_BW_SETUP, b <= th ? 0 : a)
#define SHRINK_BW_SETUP const T l = (T)prm[0], nl = -l;
BINP_LOOP(bin_shrink_bw_f32, float, SHRINK_BW_SETUP, ((b < nl) | (b > l)) ? a : 0)
BINP_LOOP(bin_shrink_bw_f64, double, SHRINK_BW_SETUP, ((b < nl) | (b > l)) ? a : 0)
/* glu: a * sigmoid(b) with the sigmoid loops' functions (float64: the fast exponential,
   the tail form beyond |b| = 708 and for NaN), so it equals a * sigmoid(b) */
BIN_LOOP(bin_glu_f32, float, a * em_sigmoid_vf(b))
BINFIX_LOOP(bin_glu_f64, double, a * em_sigmoid_fast_d(b), !(fabs(b) <= EM_EXP_FAST_D_MAX),
            a * em_sigmoid_vd(b))
/* glu's backward in one pass, both halves' gradients: torch's s g and (1 - s) s a g,
   s = sigmoid(b); ptrs ga, gb, g, a, b; a broadcast g (the backward of a sum) keeps
   the contiguous loop */
#define GLU_BW_LOOP(name, TY, SIG_)                                                     \
    static void name(char **p, const int64_t *s, int64_t n, const void *aux) {         \
        typedef TY T; (void)aux;                                                        \
        const int64_t z = sizeof(T);                                                    \
        if (s[0] == z && s[1] == z && s[3] == z && s[4] == z && (s[2] == z || s[2] == 0)) { \
            T *ga = (T *)p[0], *gb = (T *)p[1];                                         \
            const T *a = (const T *)p[3], *b = (const T *)p[4];                         \
            if (s[2] == z) {                                                            \
                const T *g = (const T *)p[2];                                           \
                for (int64_t i = 0; i < n; i++) GLU_BW_1(SIG_, g[i])                    \
            } else {                                                                    \
                const T g0 = *(const T *)p[2];                                          \
                for (int64_t i = 0; i < n; i++) GLU_BW_1(SIG_, g0)                      \
            }                                                                           \
        } else {                                                                        \
            for (int64_t i = 0; i < n; i++) {                                           \
                T bb = *(const T *)(p[4] + i * s[4]), sg = SIG_(bb);                    \
                T g_ = *(const T *)(p[2] + i * s[2]), aa = *(const T *)(p[3] + i * s[3]); \
                *(T *)(p[0] + i * s[0]) = sg * g_;                                      \
                *(T *)(p[1] + i * s[1]) = (1 - sg) * sg * aa * g_;                      \
            }                                                                           \
        }                                                                               \
    }
#define GLU_BW_1(SIG_, G) { T s_ = SIG_(b[i]), g_ = (G); ga[i] = s_ * g_; gb[i] = (1 - s_) * s_ * a[i] * g_; }
GLU_BW_LOOP(glu_bw_f32, float, em_sigmoid_vf)
GLU_BW_LOOP(glu_bw_f64, double, em_sigmoid_vd)

/* --- the table ----------------------------------------------------------- */
static em_ew_table tab;
static int tab_ready = 0;

#define SET_INTS(arr, op, pre) arr[op][EM_U8] = pre##_u8; arr[op][EM_I8] = pre##_i8; \
    arr[op][EM_I16] = pre##_i16; arr[op][EM_I32] = pre##_i32; arr[op][EM_I64] = pre##_i64;
#define SET_FLOATS(arr, op, pre) arr[op][EM_F32] = pre##_f32; arr[op][EM_F64] = pre##_f64;
#define SET_NUM(arr, op, pre) SET_INTS(arr, op, pre) SET_FLOATS(arr, op, pre)

#define SET_INTS_B(arr, op, pre) SET_INTS(arr, op, pre) arr[op][EM_BOOL] = pre##_bool;
#define SET_NUM_B(arr, op, pre) SET_NUM(arr, op, pre) arr[op][EM_BOOL] = pre##_bool;
#define EW_SET_BIN_(C, k, pub, kind, dt, ...) SET_##dt(tab.bin, EW_##C, bin_##k)
#define EW_SET_CMP_(C, k, ...) SET_NUM_B(tab.cmp, EW_##C, cmp_##k)
#define EW_SET_UN_(C, k, pub, kind, dt, ...) SET_##dt(tab.un, EW_##C, un_##k)
#define EW_SET_PRED_(C, k, ...) SET_NUM_B(tab.pred, EW_##C, pred_##k)

const em_ew_table *EW_TABLE_FN(void) {
    if (tab_ready) return &tab;
    memset(&tab, 0, sizeof(tab));
    EW_BINARY_OPS(EW_SET_BIN_)
    EW_COMPARE_OPS(EW_SET_CMP_)
    EW_UNARY_OPS(EW_SET_UN_)
    EW_PREDICATE_OPS(EW_SET_PRED_)
    for (int d = 0; d < EM_NDTYPES; d++) {
        int sz = em_itemsize[d];
        tab.where[d] = sz == 1 ? where_1 : sz == 2 ? where_2 : sz == 4 ? where_4 : sz == 8 ? where_8 : where_16;
    }
    tab.lerp[EM_F32] = lerp_f32;
    tab.lerp[EM_F64] = lerp_f64;
    tab.glu_bw[EM_F32] = glu_bw_f32;
    tab.glu_bw[EM_F64] = glu_bw_f64;
    tab.addcmul[EM_U8] = addcmul_u8; tab.addcmul[EM_I8] = addcmul_i8;
    tab.addcmul[EM_I16] = addcmul_i16; tab.addcmul[EM_I32] = addcmul_i32;
    tab.addcmul[EM_I64] = addcmul_i64; tab.addcmul[EM_F32] = addcmul_f32;
    tab.addcmul[EM_F64] = addcmul_f64;
    tab.addcdiv[EM_F32] = addcdiv_f32;
    tab.addcdiv[EM_F64] = addcdiv_f64;
    tab.clamp3[EM_U8] = clamp3_u8; tab.clamp3[EM_I8] = clamp3_i8;
    tab.clamp3[EM_I16] = clamp3_i16; tab.clamp3[EM_I32] = clamp3_i32;
    tab.clamp3[EM_I64] = clamp3_i64; tab.clamp3[EM_F32] = clamp3_f32;
    tab.clamp3[EM_F64] = clamp3_f64;
    tab_ready = 1;
    return &tab;
}
