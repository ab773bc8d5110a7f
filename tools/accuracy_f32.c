/* Exhaustive float32 accuracy harness (driven by tools/accuracy_f32.py).

   sweep() runs one of ember's float32 unary loops (a function pointer taken from
   a loaded ember extension) over the float32 bit patterns start, start + stride,
   ... < stop, computes a float64 reference for each input (libm, or ember's own
   float64 loop for the special functions that libm lacks), and reports the
   largest error in float32 ulps of the reference, plus the inputs where NaN/inf
   disagree.  OpenMP splits the range in chunks; the result does not depend on
   the thread count. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ember_ew.h"
#include "ember_special.h"


typedef struct {
    double max_ulp;          /* over inputs whose reference is a normal float32 */
    double max_ulp_sub;      /* over inputs whose reference is below the normal range */
    uint32_t worst_bits;     /* the input reaching it */
    float worst_got;
    double worst_ref;
    uint64_t tested;
    uint64_t over_1ulp;      /* how many inputs err above 1 ulp */
    uint64_t special_bad;    /* NaN / infinity / saturation disagreements */
    uint32_t special_bits;   /* one such input */
} em_acc;

enum {
    R_F64LOOP = 0, R_EXP, R_EXP2, R_EXPM1, R_LOG, R_LOG2, R_LOG10, R_LOG1P, R_SQRT, R_RSQRT,
    R_SIN, R_COS, R_TAN, R_ASIN, R_ACOS, R_ATAN, R_SINH, R_COSH, R_TANH, R_ASINH, R_ACOSH,
    R_ATANH, R_SIGMOID, R_GELU, R_GELU_TANH, R_SILU, R_MISH, R_ERF, R_ERFC, R_LGAMMA, R_RECIP,
    R_SOFTPLUS
};

static double softplus(double x) { return x > 30 ? x : log1p(exp(x)); }

static double ref_of(int id, double x) {
    switch (id) {
    case R_EXP: return exp(x);
    case R_EXP2: return exp2(x);
    case R_EXPM1: return expm1(x);
    case R_LOG: return log(x);
    case R_LOG2: return log2(x);
    case R_LOG10: return log10(x);
    case R_LOG1P: return log1p(x);
    case R_SQRT: return sqrt(x);
    case R_RSQRT: return 1.0 / sqrt(x);
    case R_SIN: return sin(x);
    case R_COS: return cos(x);
    case R_TAN: return tan(x);
    case R_ASIN: return asin(x);
    case R_ACOS: return acos(x);
    case R_ATAN: return atan(x);
    case R_SINH: return sinh(x);
    case R_COSH: return cosh(x);
    case R_TANH: return tanh(x);
    case R_ASINH: return asinh(x);
    case R_ACOSH: return acosh(x);
    case R_ATANH: return atanh(x);
    case R_SIGMOID: return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
    case R_GELU: return 0.5 * x * erfc(-x * 0.70710678118654752440);
    case R_GELU_TANH: {
        /* x/2 (1 + tanh u) as x sigmoid(2u): 1 + tanh u cancels in double too */
        double v = 2.0 * 0.79788456080286535588 * (x + 0.044715 * x * x * x);
        return v >= 0 ? x / (1.0 + exp(-v)) : x * exp(v) / (1.0 + exp(v));
    }
    case R_SILU: return x >= 0 ? x / (1.0 + exp(-x)) : x * exp(x) / (1.0 + exp(x));
    case R_MISH: return x * tanh(softplus(x));
    case R_ERF: return erf(x);
    case R_ERFC: return erfc(x);
    case R_LGAMMA: return lgamma(x);
    case R_RECIP: return 1.0 / x;
    case R_SOFTPLUS: return x > 20 ? x : log1p(exp(x));   /* torch's defaults: beta 1, threshold 20 */
    default: return NAN;
    }
}

/* one float32 ulp at the magnitude of r (r finite, in double) */
static double ulp32(double r) {
    int e;
    double a = fabs(r);
    if (a < 1.1754943508222875e-38) return ldexp(1.0, -149);
    frexp(a, &e);                    /* a = m 2^e, m in [0.5, 1) */
    return ldexp(1.0, e - 1 - 23);
}

#define CHUNK 65536

static void merge(em_acc *into, const em_acc *r) {
    if (r->max_ulp_sub > into->max_ulp_sub) into->max_ulp_sub = r->max_ulp_sub;
    if (r->max_ulp > into->max_ulp) {
        into->max_ulp = r->max_ulp;
        into->worst_bits = r->worst_bits;
        into->worst_got = r->worst_got;
        into->worst_ref = r->worst_ref;
    }
    if (r->special_bad && !into->special_bad) into->special_bits = r->special_bits;
    into->tested += r->tested;
    into->over_1ulp += r->over_1ulp;
    into->special_bad += r->special_bad;
}

/* check n inputs x (float32) into loc: y, xd, yd are scratch of n entries */
static void check(em_loop f32, em_loop f64, int ref_id, int sat, const void *aux,
                  const float *x, int64_t n, float *y, double *xd, double *yd, em_acc *loc) {
    for (int64_t k = 0; k < n; k++) xd[k] = x[k];
    static const double softplus_prm[2] = {1.0, 20.0};   /* {beta, threshold} */
    if (ref_id == R_SOFTPLUS && aux == NULL) aux = softplus_prm;
    char *p32[2] = {(char *)y, (char *)x};
    int64_t s32[2] = {4, 4};
    f32(p32, s32, n, aux);
    if (ref_id == R_F64LOOP) {
        char *p64[2] = {(char *)yd, (char *)xd};
        int64_t s64[2] = {8, 8};
        f64(p64, s64, n, aux);
    } else {
        for (int64_t k = 0; k < n; k++) yd[k] = ref_of(ref_id, xd[k]);
    }
    for (int64_t k = 0; k < n; k++) {
        double r = yd[k], g = y[k];
        float rf = (float)r;
        int bad = 0;
        loc->tested++;
        if (isnan(r) || isnan(g)) {
            bad = isnan(r) != isnan(g);
        } else if (isinf(rf) || isinf(g)) {
            bad = (float)g != rf;    /* overflow exactly */
        } else if (fabs(r) < 1.1754943508222875e-38) {
            /* subnormal results: kept apart (flush-to-zero counts in ulps of 2^-149) */
            double e = fabs(g - r) / ulp32(r);
            if (e > loc->max_ulp_sub) loc->max_ulp_sub = e;
        } else {
            double e = fabs(g - r) / ulp32(r);
            /* saturation: where the rounded reference is +-1, the result must be too */
            bad = sat && (rf == 1.0f || rf == -1.0f) && (float)g != rf;
            if (e > 1.0) loc->over_1ulp++;
            if (e > loc->max_ulp) {
                loc->max_ulp = e;
                memcpy(&loc->worst_bits, &x[k], 4);
                loc->worst_got = y[k];
                loc->worst_ref = r;
            }
        }
        if (bad) {
            if (!loc->special_bad) memcpy(&loc->special_bits, &x[k], 4);
            loc->special_bad++;
        }
    }
}

/* The inputs start, start + stride, ... < stop (as float32 bit patterns), or, when
   `bits` is not NULL, the `stop` patterns bits[0..stop).  The maximum and the counts
   do not depend on the thread count (the reported worst input may, among ties). */
int em_acc_sweep(em_loop f32, em_loop f64, int ref_id, int sat, const void *aux, uint64_t start,
                 uint64_t stop, uint64_t stride, const uint32_t *bits, int nthreads,
                 em_acc *out) {
    uint64_t count = bits ? stop : (stride && stop > start ? (stop - start + stride - 1) / stride
                                                          : 0);
    int64_t nchunks = (int64_t)((count + CHUNK - 1) / CHUNK);
    memset(out, 0, sizeof *out);
    int failed = 0;
    #pragma omp parallel num_threads(nthreads)
    {
        float *x = malloc(CHUNK * sizeof(float)), *y = malloc(CHUNK * sizeof(float));
        double *xd = malloc(CHUNK * sizeof(double)), *yd = malloc(CHUNK * sizeof(double));
        em_acc loc;
        memset(&loc, 0, sizeof loc);
        if (!x || !y || !xd || !yd) {
            #pragma omp atomic write
            failed = 1;
        } else {
            #pragma omp for schedule(dynamic, 1)
            for (int64_t c = 0; c < nchunks; c++) {
                uint64_t first = (uint64_t)c * CHUNK;
                int64_t n = (int64_t)((count - first) < CHUNK ? count - first : CHUNK);
                for (int64_t k = 0; k < n; k++) {
                    uint32_t b = bits ? bits[first + (uint64_t)k]
                                      : (uint32_t)(start + (first + (uint64_t)k) * stride);
                    memcpy(&x[k], &b, 4);
                }
                check(f32, f64, ref_id, sat, aux, x, n, y, xd, yd, &loc);
            }
        }
        #pragma omp critical
        merge(out, &loc);
        free(x); free(y); free(xd); free(yd);
    }
    return failed ? -2 : 0;
}

/* ---- the functions swept: ember's float32 unary kernels by name ------------ */

typedef struct {
    const char *name;
    int special;     /* 0: elementwise table op, 1: ember_special op */
    int op;
    int ref;         /* R_* (R_F64LOOP: ember's float64 loop of the same op) */
    int saturates;   /* tends to +-1: where the rounded reference is +-1, so must the result */
} em_acc_fn;

static const em_acc_fn FUNCS[] = {
    {"exp", 0, EW_EXP, R_EXP}, {"exp2", 0, EW_EXP2, R_EXP2}, {"expm1", 0, EW_EXPM1, R_EXPM1},
    {"log", 0, EW_LOG, R_LOG}, {"log2", 0, EW_LOG2, R_LOG2}, {"log10", 0, EW_LOG10, R_LOG10},
    {"log1p", 0, EW_LOG1P, R_LOG1P}, {"sqrt", 0, EW_SQRT, R_SQRT},
    {"rsqrt", 0, EW_RSQRT, R_RSQRT}, {"reciprocal", 0, EW_RECIP, R_RECIP},
    {"sin", 0, EW_SIN, R_SIN}, {"cos", 0, EW_COS, R_COS}, {"tan", 0, EW_TAN, R_TAN},
    {"asin", 0, EW_ASIN, R_ASIN}, {"acos", 0, EW_ACOS, R_ACOS}, {"atan", 0, EW_ATAN, R_ATAN},
    {"sinh", 0, EW_SINH, R_SINH}, {"cosh", 0, EW_COSH, R_COSH}, {"tanh", 0, EW_TANH, R_TANH, 1},
    {"asinh", 0, EW_ASINH, R_ASINH}, {"acosh", 0, EW_ACOSH, R_ACOSH},
    {"atanh", 0, EW_ATANH, R_ATANH}, {"sigmoid", 0, EW_SIGMOID, R_SIGMOID, 1},
    {"gelu", 0, EW_GELU, R_GELU}, {"gelu_tanh", 0, EW_GELU_TANH, R_GELU_TANH},
    {"silu", 0, EW_SILU, R_SILU}, {"mish", 0, EW_MISH, R_MISH}, {"erf", 0, EW_ERF, R_ERF, 1},
    {"erfc", 0, EW_ERFC, R_ERFC}, {"lgamma", 0, EW_LGAMMA, R_LGAMMA},
    {"softplus", 0, EW_SOFTPLUS, R_SOFTPLUS},
    {"special.digamma", 1, EM_SP_DIGAMMA, R_F64LOOP},
    {"special.erfinv", 1, EM_SP_ERFINV, R_F64LOOP},
    {"special.erfcx", 1, EM_SP_ERFCX, R_F64LOOP}, {"special.ndtr", 1, EM_SP_NDTR, R_F64LOOP, 1},
    {"special.ndtri", 1, EM_SP_NDTRI, R_F64LOOP},
    {"special.log_ndtr", 1, EM_SP_LOG_NDTR, R_F64LOOP},
    {"special.i0", 1, EM_SP_I0, R_F64LOOP}, {"special.i1e", 1, EM_SP_I1E, R_F64LOOP},
    {"special.bessel_j0", 1, EM_SP_J0, R_F64LOOP},
};

int em_acc_count(void) { return (int)(sizeof FUNCS / sizeof FUNCS[0]); }

const char *em_acc_name(int i) { return FUNCS[i].name; }

/* the float32 and float64 loops of function i and its reference kind */
int em_acc_resolve(int i, const em_ew_table *ew, em_loop (*special_unary)(int, int),
                   em_loop *f32, em_loop *f64, int *ref, int *sat) {
    const em_acc_fn *f = &FUNCS[i];
    if (f->special) {
        *f32 = special_unary(f->op, EM_F32);
        *f64 = special_unary(f->op, EM_F64);
    } else {
        *f32 = ew->un[f->op][EM_F32];
        *f64 = ew->un[f->op][EM_F64];
    }
    *ref = f->ref;
    *sat = f->saturates;
    return *f32 != NULL && *f64 != NULL ? 0 : -1;
}
