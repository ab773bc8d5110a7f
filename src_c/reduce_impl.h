/* Reduction, scan and softmax kernels, written once and compiled per ISA:
   src_c/reduce.c includes this header twice, with RSFX() naming the generic
   and the AVX2+FMA copies.  Plain C that GCC vectorises for the target.

   Determinism: a row of K elements is cut into fixed blocks of RD_BLK; each
   block is summed with RD_NACC independent accumulators (combined pairwise),
   and block results are combined by a fixed pairwise tree.  Threads only
   decide who computes which block, so the result never depends on them. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "ember_reduce.h"

#ifndef RD_BLK
#define RD_BLK 4096
#define RD_NACC 64
#define RD_CW 256   /* column chunk width (elements of I) */
#define RD_CKB 128  /* rows of K accumulated before folding into the total */
#define RD_MIN_(a, b) ((a) < (b) ? (a) : (b))
#endif

#include "ember_math.h"
#define REXPF em_expf

/* ------------------------------------------------------------------------ */
/* reductions.  STEP(a, v) folds element v into accumulator a (c: the row's
   center, p: the power); COMB(a, b) merges two accumulators. */
#define DEF_RED(NM, T, A, INIT, STEP, COMB)                                              \
static A RSFX(NM##_blk)(const T *x, int64_t n, T c, double p) {                          \
    (void)c; (void)p;                                                                    \
    A acc[RD_NACC];                                                                      \
    int64_t i = 0;                                                                       \
    for (int j = 0; j < RD_NACC; j++) acc[j] = INIT;                                     \
    for (; i + RD_NACC <= n; i += RD_NACC)                                               \
        for (int j = 0; j < RD_NACC; j++) { T v = x[i + j]; A a = acc[j]; acc[j] = STEP; } \
    for (int j = 0; i < n; i++, j++) { T v = x[i]; A a = acc[j]; acc[j] = STEP; }        \
    for (int w = RD_NACC / 2; w > 0; w /= 2)                                             \
        for (int j = 0; j < w; j++) { A a = acc[j], b = acc[j + w]; acc[j] = COMB; }     \
    return acc[0];                                                                       \
}                                                                                        \
static A RSFX(NM##_tree)(const T *x, int64_t n, int64_t b0, int64_t b1, T c, double p) { \
    if (b1 - b0 == 1) {                                                                  \
        int64_t s = b0 * RD_BLK, e = RD_MIN_(s + RD_BLK, n);                              \
        return RSFX(NM##_blk)(x + s, e - s, c, p);                                       \
    }                                                                                    \
    int64_t m = b0 + (b1 - b0 + 1) / 2;                                                  \
    A a = RSFX(NM##_tree)(x, n, b0, m, c, p), b = RSFX(NM##_tree)(x, n, m, b1, c, p);    \
    return COMB;                                                                         \
}                                                                                        \
static A RSFX(NM##_ptree)(const A *part, int64_t b0, int64_t b1) {                       \
    if (b1 - b0 == 1) return part[b0];                                                   \
    int64_t m = b0 + (b1 - b0 + 1) / 2;                                                  \
    A a = RSFX(NM##_ptree)(part, b0, m), b = RSFX(NM##_ptree)(part, m, b1);              \
    return COMB;                                                                         \
}                                                                                        \
static void RSFX(NM##_col)(const T *x, int64_t K, int64_t I, int64_t i0, int64_t i1,     \
                           const T *cc, double p, A *res) {                              \
    (void)p;                                                                             \
    A tot[RD_CW], tmp[RD_CW];                                                            \
    T zc[RD_CW];                                                                         \
    int64_t w = i1 - i0;                                                                 \
    if (!cc) { for (int64_t j = 0; j < w; j++) zc[j] = 0; cc = zc; }                     \
    for (int64_t j = 0; j < w; j++) tot[j] = INIT;                                       \
    for (int64_t k0 = 0; k0 < K; k0 += RD_CKB) {                                         \
        int64_t k1 = RD_MIN_(K, k0 + RD_CKB);                                            \
        for (int64_t j = 0; j < w; j++) tmp[j] = INIT;                                   \
        for (int64_t k = k0; k < k1; k++) {                                              \
            const T *row = x + k * I + i0;                                               \
            for (int64_t j = 0; j < w; j++) {                                            \
                T v = row[j], c = cc[j]; A a = tmp[j]; (void)c; tmp[j] = STEP;           \
            }                                                                            \
        }                                                                                \
        for (int64_t j = 0; j < w; j++) { A a = tot[j], b = tmp[j]; tot[j] = COMB; }     \
    }                                                                                    \
    for (int64_t j = 0; j < w; j++) res[j] = tot[j];                                     \
}                                                                                        \
static void RSFX(NM##_run)(const char *xp, int64_t O, int64_t K, int64_t I, char *outp,  \
                           const void *center, double p, int nt) {                       \
    const T *x = (const T *)xp;                                                          \
    const T *cen = (const T *)center;                                                    \
    A *out = (A *)outp;                                                                  \
    if (O == 0 || I == 0) return;                                                        \
    if (I == 1) {                                                                        \
        int64_t nb = K > 0 ? (K + RD_BLK - 1) / RD_BLK : 1;                              \
        if (nt > 1 && O < nt && nb >= 2 * nt) {                                          \
            A *part = (A *)malloc(sizeof(A) * nb);                                       \
            for (int64_t o = 0; o < O; o++) {                                            \
                const T *r = x + o * K;                                                  \
                T c = cen ? cen[o] : 0;                                                  \
                _Pragma("omp parallel for num_threads(nt) schedule(static)")              \
                for (int64_t b = 0; b < nb; b++) {                                       \
                    int64_t s = b * RD_BLK, e = RD_MIN_(s + RD_BLK, K);                  \
                    part[b] = RSFX(NM##_blk)(r + s, e - s, c, p);                        \
                }                                                                        \
                out[o] = RSFX(NM##_ptree)(part, 0, nb);                                  \
            }                                                                            \
            free(part);                                                                  \
        } else {                                                                         \
            _Pragma("omp parallel for num_threads(nt) schedule(static) if(nt > 1)")       \
            for (int64_t o = 0; o < O; o++)                                              \
                out[o] = RSFX(NM##_tree)(x + o * K, K, 0, nb, cen ? cen[o] : 0, p);      \
        }                                                                                \
    } else {                                                                             \
        int64_t nch = (I + RD_CW - 1) / RD_CW, tasks = O * nch;                          \
        _Pragma("omp parallel for num_threads(nt) schedule(static) if(nt > 1)")           \
        for (int64_t t = 0; t < tasks; t++) {                                            \
            int64_t o = t / nch, i0 = (t % nch) * RD_CW, i1 = RD_MIN_(I, i0 + RD_CW);    \
            RSFX(NM##_col)(x + o * K * I, K, I, i0, i1, cen ? cen + o * I + i0 : NULL, p,\
                           out + o * I + i0);                                            \
        }                                                                                \
    }                                                                                    \
}

#define FMAXNAN(a, b) (((b) > (a) || (b) != (b)) ? (b) : (a))
#define FMINNAN(a, b) (((b) < (a) || (b) != (b)) ? (b) : (a))
#define IMAX(a, b) ((b) > (a) ? (b) : (a))
#define IMIN(a, b) ((b) < (a) ? (b) : (a))

#define DEF_FLOAT_REDS(S, T, EXPF, FABS, POW)                                                \
DEF_RED(sum_##S, T, T, 0, a + v, a + b)                                                      \
DEF_RED(prod_##S, T, T, 1, a * v, a * b)                                                     \
DEF_RED(max_##S, T, T, -INFINITY, FMAXNAN(a, v), FMAXNAN(a, b))                              \
DEF_RED(min_##S, T, T, INFINITY, FMINNAN(a, v), FMINNAN(a, b))                               \
DEF_RED(nansum_##S, T, T, 0, a + (v != v ? 0 : v), a + b)                                    \
DEF_RED(asum_##S, T, T, 0, a + FABS(v), a + b)                                               \
DEF_RED(ssq_##S, T, T, 0, a + (v - c) * (v - c), a + b)                                      \
DEF_RED(psum_##S, T, T, 0, a + (T)POW(FABS(v), (T)p), a + b)                                 \
DEF_RED(amax_##S, T, T, 0, FMAXNAN(a, FABS(v)), FMAXNAN(a, b))                               \
DEF_RED(amin_##S, T, T, INFINITY, FMINNAN(a, FABS(v)), FMINNAN(a, b))                        \
DEF_RED(nz_##S, T, T, 0, a + (T)(v != 0), a + b)                                             \
DEF_RED(nnan_##S, T, T, 0, a + (T)(v == v), a + b)                                           \
DEF_RED(sumexp_##S, T, T, 0, a + EXPF(v - c), a + b)

DEF_FLOAT_REDS(f32, float, REXPF, fabsf, powf)
DEF_FLOAT_REDS(f64, double, exp, fabs, pow)
DEF_RED(sum_i64, int64_t, int64_t, 0, (int64_t)((uint64_t)a + (uint64_t)v), (int64_t)((uint64_t)a + (uint64_t)b))
DEF_RED(prod_i64, int64_t, int64_t, 1, (int64_t)((uint64_t)a * (uint64_t)v), (int64_t)((uint64_t)a * (uint64_t)b))
DEF_RED(max_i64, int64_t, int64_t, INT64_MIN, IMAX(a, v), IMAX(a, b))
DEF_RED(min_i64, int64_t, int64_t, INT64_MAX, IMIN(a, v), IMIN(a, b))
DEF_RED(sum_u8, uint8_t, int64_t, 0, a + (int64_t)v, a + b)

typedef void (*rd_run_fn)(const char *, int64_t, int64_t, int64_t, char *, const void *, double, int);

static int RSFX(reduce)(int op, int dtype, const char *x, int64_t O, int64_t K, int64_t I,
                        char *out, const void *center, double p, int nt) {
    rd_run_fn fn = NULL;
#define RD_CASE_F(OPC, NM) case OPC: fn = dtype == EM_F32 ? RSFX(NM##_f32_run) : dtype == EM_F64 ? RSFX(NM##_f64_run) : NULL; break;
    switch (op) {
    case RD_SUM:
        fn = dtype == EM_F32 ? RSFX(sum_f32_run) : dtype == EM_F64 ? RSFX(sum_f64_run)
           : dtype == EM_I64 ? RSFX(sum_i64_run) : dtype == EM_BOOL ? RSFX(sum_u8_run) : NULL;
        break;
    case RD_PROD:
        fn = dtype == EM_F32 ? RSFX(prod_f32_run) : dtype == EM_F64 ? RSFX(prod_f64_run)
           : dtype == EM_I64 ? RSFX(prod_i64_run) : NULL;
        break;
    case RD_MAX:
        fn = dtype == EM_F32 ? RSFX(max_f32_run) : dtype == EM_F64 ? RSFX(max_f64_run)
           : dtype == EM_I64 ? RSFX(max_i64_run) : NULL;
        break;
    case RD_MIN:
        fn = dtype == EM_F32 ? RSFX(min_f32_run) : dtype == EM_F64 ? RSFX(min_f64_run)
           : dtype == EM_I64 ? RSFX(min_i64_run) : NULL;
        break;
    RD_CASE_F(RD_NANSUM, nansum)
    RD_CASE_F(RD_ASUM, asum)
    RD_CASE_F(RD_SSQ, ssq)
    RD_CASE_F(RD_PSUM, psum)
    RD_CASE_F(RD_AMAX, amax)
    RD_CASE_F(RD_AMIN, amin)
    RD_CASE_F(RD_NZ, nz)
    RD_CASE_F(RD_NNAN, nnan)
    RD_CASE_F(RD_SUMEXP, sumexp)
    default: break;
    }
#undef RD_CASE_F
    if (!fn) return -1;
    fn(x, O, K, I, out, center, p, nt);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* argmax / argmin (values and indices).  BETTER(v, b): v replaces the best b. */
#define DEF_ARG(NM, T, RED, BETTER)                                                      \
static void RSFX(NM##_run)(const char *xp, int64_t O, int64_t K, int64_t I, char *valp,  \
                           int64_t *idx, int nt) {                                       \
    const T *x = (const T *)xp;                                                          \
    T *vals = (T *)valp;                                                                 \
    if (O == 0 || I == 0 || K == 0) return;                                              \
    if (I == 1) {                                                                        \
        /* the extreme by the vectorised reduction, then its first position */           \
        int64_t nb = (K + RD_BLK - 1) / RD_BLK;                                          \
        _Pragma("omp parallel for num_threads(nt) schedule(static) if(nt > 1)")           \
        for (int64_t o = 0; o < O; o++) {                                                \
            const T *r = x + o * K;                                                      \
            T b = RSFX(RED##_tree)(r, K, 0, nb, 0, 0);                                   \
            int64_t bi = 0;                                                              \
            if (b != b) { while (bi < K - 1 && r[bi] == r[bi]) bi++; }                   \
            else { while (bi < K - 1 && r[bi] != b) bi++; }                              \
            if (vals) vals[o] = r[bi];                                                   \
            idx[o] = bi;                                                                 \
        }                                                                                \
    } else {                                                                             \
        int64_t nch = (I + RD_CW - 1) / RD_CW, tasks = O * nch;                          \
        _Pragma("omp parallel for num_threads(nt) schedule(static) if(nt > 1)")           \
        for (int64_t t = 0; t < tasks; t++) {                                            \
            int64_t o = t / nch, i0 = (t % nch) * RD_CW, i1 = RD_MIN_(I, i0 + RD_CW);    \
            int64_t w = i1 - i0;                                                         \
            T bv[RD_CW]; int64_t bix[RD_CW];                                             \
            const T *base = x + o * K * I + i0;                                          \
            for (int64_t j = 0; j < w; j++) { bv[j] = base[j]; bix[j] = 0; }             \
            for (int64_t k = 1; k < K; k++) {                                            \
                const T *row = base + k * I;                                             \
                for (int64_t j = 0; j < w; j++) {                                        \
                    T v = row[j], b = bv[j];                                             \
                    int take = (BETTER);                                                 \
                    bv[j] = take ? v : b;                                                \
                    bix[j] = take ? k : bix[j];                                          \
                }                                                                        \
            }                                                                            \
            for (int64_t j = 0; j < w; j++) {                                            \
                if (vals) vals[o * I + i0 + j] = bv[j];                                  \
                idx[o * I + i0 + j] = bix[j];                                            \
            }                                                                            \
        }                                                                                \
    }                                                                                    \
}
DEF_ARG(argmax_f32, float, max_f32, (v > b || (v != v && b == b)))
DEF_ARG(argmin_f32, float, min_f32, (v < b || (v != v && b == b)))
DEF_ARG(argmax_f64, double, max_f64, (v > b || (v != v && b == b)))
DEF_ARG(argmin_f64, double, min_f64, (v < b || (v != v && b == b)))
DEF_ARG(argmax_i64, int64_t, max_i64, (v > b))
DEF_ARG(argmin_i64, int64_t, min_i64, (v < b))

static int RSFX(argreduce)(int op, int dtype, const char *x, int64_t O, int64_t K, int64_t I,
                           char *vals, int64_t *idx, int nt) {
    int mx = op == RD_MAX;
    if (dtype == EM_F32) (mx ? RSFX(argmax_f32_run) : RSFX(argmin_f32_run))(x, O, K, I, vals, idx, nt);
    else if (dtype == EM_F64) (mx ? RSFX(argmax_f64_run) : RSFX(argmin_f64_run))(x, O, K, I, vals, idx, nt);
    else if (dtype == EM_I64) (mx ? RSFX(argmax_i64_run) : RSFX(argmin_i64_run))(x, O, K, I, vals, idx, nt);
    else return -1;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* inclusive scans; A is the accumulator type (double for float32, as PyTorch) */
static inline double RSFX(lae)(double a, double b) {
    if (a != a || b != b) return a + b;
    double m = a > b ? a : b, n = a > b ? b : a;
    if (m == -INFINITY || m == INFINITY) return m;
    return m + log1p(exp(n - m));
}

#define DEF_SCAN(NM, T, A, INIT, STEP)                                                   \
static void RSFX(NM##_run)(const char *xp, int64_t O, int64_t K, int64_t I, char *outp,  \
                           int nt) {                                                     \
    const T *x = (const T *)xp;                                                          \
    T *out = (T *)outp;                                                                  \
    if (O == 0 || I == 0 || K == 0) return;                                              \
    if (I == 1) {                                                                        \
        _Pragma("omp parallel for num_threads(nt) schedule(static) if(nt > 1)")           \
        for (int64_t o = 0; o < O; o++) {                                                \
            const T *r = x + o * K; T *y = out + o * K;                                  \
            A a = INIT;                                                                  \
            for (int64_t k = 0; k < K; k++) { T v = r[k]; a = STEP; y[k] = (T)a; }       \
        }                                                                                \
    } else {                                                                             \
        int64_t nch = (I + RD_CW - 1) / RD_CW, tasks = O * nch;                          \
        _Pragma("omp parallel for num_threads(nt) schedule(static) if(nt > 1)")           \
        for (int64_t t = 0; t < tasks; t++) {                                            \
            int64_t o = t / nch, i0 = (t % nch) * RD_CW, i1 = RD_MIN_(I, i0 + RD_CW);    \
            int64_t w = i1 - i0;                                                         \
            A acc[RD_CW];                                                                \
            for (int64_t j = 0; j < w; j++) acc[j] = INIT;                               \
            for (int64_t k = 0; k < K; k++) {                                            \
                const T *row = x + (o * K + k) * I + i0;                                 \
                T *y = out + (o * K + k) * I + i0;                                       \
                for (int64_t j = 0; j < w; j++) {                                        \
                    T v = row[j]; A a = acc[j]; a = STEP; acc[j] = a; y[j] = (T)a;       \
                }                                                                        \
            }                                                                            \
        }                                                                                \
    }                                                                                    \
}
DEF_SCAN(csum_f32, float, double, 0, a + v)
DEF_SCAN(csum_f64, double, double, 0, a + v)
DEF_SCAN(csum_i64, int64_t, int64_t, 0, (int64_t)((uint64_t)a + (uint64_t)v))
DEF_SCAN(cprod_f32, float, double, 1, a * v)
DEF_SCAN(cprod_f64, double, double, 1, a * v)
DEF_SCAN(cprod_i64, int64_t, int64_t, 1, (int64_t)((uint64_t)a * (uint64_t)v))
DEF_SCAN(clse_f32, float, double, -INFINITY, RSFX(lae)(a, v))
DEF_SCAN(clse_f64, double, double, -INFINITY, RSFX(lae)(a, v))

/* cummax / cummin: PyTorch's rule: take v when it is NaN, or when the running
   value is not NaN and v >= (<=) it, so ties move the index forward. */
#define DEF_CEXT(NM, T, TAKE)                                                            \
static void RSFX(NM##_run)(const char *xp, int64_t O, int64_t K, int64_t I, char *outp,  \
                           int64_t *idx, int nt) {                                       \
    const T *x = (const T *)xp;                                                          \
    T *out = (T *)outp;                                                                  \
    if (O == 0 || I == 0 || K == 0) return;                                              \
    int64_t nch = (I + RD_CW - 1) / RD_CW, tasks = O * nch;                              \
    _Pragma("omp parallel for num_threads(nt) schedule(static) if(nt > 1)")               \
    for (int64_t t = 0; t < tasks; t++) {                                                \
        int64_t o = t / nch, i0 = (t % nch) * RD_CW, i1 = RD_MIN_(I, i0 + RD_CW);        \
        int64_t w = i1 - i0;                                                             \
        T bv[RD_CW]; int64_t bix[RD_CW];                                                 \
        for (int64_t k = 0; k < K; k++) {                                                \
            int64_t off = (o * K + k) * I + i0;                                          \
            for (int64_t j = 0; j < w; j++) {                                            \
                T v = x[off + j];                                                        \
                if (k == 0) { bv[j] = v; bix[j] = 0; }                                   \
                else { T b = bv[j]; if (TAKE) { bv[j] = v; bix[j] = k; } }               \
                out[off + j] = bv[j];                                                    \
                idx[off + j] = bix[j];                                                   \
            }                                                                            \
        }                                                                                \
    }                                                                                    \
}
DEF_CEXT(cmax_f32, float, (v != v || (b == b && v >= b)))
DEF_CEXT(cmin_f32, float, (v != v || (b == b && v <= b)))
DEF_CEXT(cmax_f64, double, (v != v || (b == b && v >= b)))
DEF_CEXT(cmin_f64, double, (v != v || (b == b && v <= b)))
DEF_CEXT(cmax_i64, int64_t, (v >= b))
DEF_CEXT(cmin_i64, int64_t, (v <= b))

static int RSFX(scan)(int op, int dtype, const char *x, int64_t O, int64_t K, int64_t I,
                      char *out, int64_t *idx, int nt) {
    int f32 = dtype == EM_F32, f64 = dtype == EM_F64, i64 = dtype == EM_I64;
    switch (op) {
    case SC_SUM:
        if (f32) RSFX(csum_f32_run)(x, O, K, I, out, nt);
        else if (f64) RSFX(csum_f64_run)(x, O, K, I, out, nt);
        else if (i64) RSFX(csum_i64_run)(x, O, K, I, out, nt);
        else return -1;
        return 0;
    case SC_PROD:
        if (f32) RSFX(cprod_f32_run)(x, O, K, I, out, nt);
        else if (f64) RSFX(cprod_f64_run)(x, O, K, I, out, nt);
        else if (i64) RSFX(cprod_i64_run)(x, O, K, I, out, nt);
        else return -1;
        return 0;
    case SC_LOGSUMEXP:
        if (f32) RSFX(clse_f32_run)(x, O, K, I, out, nt);
        else if (f64) RSFX(clse_f64_run)(x, O, K, I, out, nt);
        else return -1;
        return 0;
    case SC_MAX:
        if (f32) RSFX(cmax_f32_run)(x, O, K, I, out, idx, nt);
        else if (f64) RSFX(cmax_f64_run)(x, O, K, I, out, idx, nt);
        else if (i64) RSFX(cmax_i64_run)(x, O, K, I, out, idx, nt);
        else return -1;
        return 0;
    case SC_MIN:
        if (f32) RSFX(cmin_f32_run)(x, O, K, I, out, idx, nt);
        else if (f64) RSFX(cmin_f64_run)(x, O, K, I, out, idx, nt);
        else if (i64) RSFX(cmin_i64_run)(x, O, K, I, out, idx, nt);
        else return -1;
        return 0;
    default:
        return -1;
    }
}

/* ------------------------------------------------------------------------ */
/* softmax / log_softmax: one fused kernel per row (max, exp-sum, normalise) */
#define SM_NACC 16
#define DEF_SOFTMAX(S, T, EXPF, LOGF)                                                    \
static void RSFX(smrow_##S)(const T *x, T *y, int64_t K, int lg) {                       \
    T m[SM_NACC], s[SM_NACC];                                                            \
    int64_t i = 0;                                                                       \
    for (int j = 0; j < SM_NACC; j++) { m[j] = -INFINITY; s[j] = 0; }                    \
    for (; i + SM_NACC <= K; i += SM_NACC)                                               \
        for (int j = 0; j < SM_NACC; j++) { T v = x[i + j]; m[j] = v > m[j] ? v : m[j]; } \
    for (int j = 0; i < K; i++, j++) { T v = x[i]; m[j] = v > m[j] ? v : m[j]; }         \
    T mx = m[0];                                                                         \
    for (int j = 1; j < SM_NACC; j++) mx = m[j] > mx ? m[j] : mx;                        \
    i = 0;                                                                               \
    if (lg) {                                                                            \
        for (; i + SM_NACC <= K; i += SM_NACC)                                           \
            for (int j = 0; j < SM_NACC; j++) s[j] += EXPF(x[i + j] - mx);               \
    } else {                                                                             \
        for (; i + SM_NACC <= K; i += SM_NACC)                                           \
            for (int j = 0; j < SM_NACC; j++) { T e = EXPF(x[i + j] - mx); y[i + j] = e; s[j] += e; } \
    }                                                                                    \
    for (int j = 0; i < K; i++, j++) { T e = EXPF(x[i] - mx); if (!lg) y[i] = e; s[j] += e; } \
    for (int w = SM_NACC / 2; w > 0; w /= 2)                                             \
        for (int j = 0; j < w; j++) s[j] += s[j + w];                                    \
    if (lg) {                                                                            \
        T ls = (T)LOGF(s[0]);                                                            \
        for (i = 0; i < K; i++) y[i] = (x[i] - mx) - ls;                                 \
    } else {                                                                             \
        T inv = (T)1 / s[0];                                                             \
        for (i = 0; i < K; i++) y[i] *= inv;                                             \
    }                                                                                    \
}                                                                                        \
static void RSFX(smcol_##S)(const T *x, T *y, int64_t K, int64_t I, int64_t i0,          \
                            int64_t i1, int lg) {                                        \
    T m[RD_CW], s[RD_CW];                                                                \
    int64_t w = i1 - i0;                                                                 \
    for (int64_t j = 0; j < w; j++) { m[j] = -INFINITY; s[j] = 0; }                      \
    for (int64_t k = 0; k < K; k++) {                                                    \
        const T *r = x + k * I + i0;                                                     \
        for (int64_t j = 0; j < w; j++) m[j] = r[j] > m[j] ? r[j] : m[j];                \
    }                                                                                    \
    for (int64_t k = 0; k < K; k++) {                                                    \
        const T *r = x + k * I + i0; T *q = y + k * I + i0;                              \
        for (int64_t j = 0; j < w; j++) { T e = EXPF(r[j] - m[j]); if (!lg) q[j] = e; s[j] += e; } \
    }                                                                                    \
    if (lg) for (int64_t j = 0; j < w; j++) s[j] = (T)LOGF(s[j]);                        \
    else for (int64_t j = 0; j < w; j++) s[j] = (T)1 / s[j];                             \
    for (int64_t k = 0; k < K; k++) {                                                    \
        const T *r = x + k * I + i0; T *q = y + k * I + i0;                              \
        if (lg) for (int64_t j = 0; j < w; j++) q[j] = (r[j] - m[j]) - s[j];             \
        else for (int64_t j = 0; j < w; j++) q[j] *= s[j];                               \
    }                                                                                    \
}                                                                                        \
static void RSFX(sm_##S)(int lg, const char *xp, int64_t O, int64_t K, int64_t I,        \
                         char *outp, int nt) {                                           \
    const T *x = (const T *)xp; T *y = (T *)outp;                                        \
    if (O == 0 || I == 0 || K == 0) return;                                              \
    if (I == 1) {                                                                        \
        _Pragma("omp parallel for num_threads(nt) schedule(static) if(nt > 1)")           \
        for (int64_t o = 0; o < O; o++) RSFX(smrow_##S)(x + o * K, y + o * K, K, lg);    \
    } else {                                                                             \
        int64_t nch = (I + RD_CW - 1) / RD_CW, tasks = O * nch;                          \
        _Pragma("omp parallel for num_threads(nt) schedule(static) if(nt > 1)")           \
        for (int64_t t = 0; t < tasks; t++) {                                            \
            int64_t o = t / nch, i0 = (t % nch) * RD_CW, i1 = RD_MIN_(I, i0 + RD_CW);    \
            RSFX(smcol_##S)(x + o * K * I, y + o * K * I, K, I, i0, i1, lg);             \
        }                                                                                \
    }                                                                                    \
}
DEF_SOFTMAX(f32, float, REXPF, logf)
DEF_SOFTMAX(f64, double, exp, log)

static int RSFX(softmax)(int lg, int dtype, const char *x, int64_t O, int64_t K, int64_t I,
                         char *out, int nt) {
    if (dtype == EM_F32) RSFX(sm_f32)(lg, x, O, K, I, out, nt);
    else if (dtype == EM_F64) RSFX(sm_f64)(lg, x, O, K, I, out, nt);
    else return -1;
    return 0;
}
