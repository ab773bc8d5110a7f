/* Elementwise op codes and the per-ISA kernel table.  One op = one enum entry
   here + one line in ew_impl.h + one entry in elementwise.pyx's name table. */
#ifndef EMBER_EW_H
#define EMBER_EW_H
#include "ember.h"

enum { /* binary, out dtype == in dtype */
    EW_ADD, EW_SUB, EW_MUL, EW_DIV, EW_FLOORDIV, EW_REM, EW_FMOD, EW_POW, EW_MAX, EW_MIN,
    EW_FMAX, EW_FMIN, EW_ATAN2, EW_HYPOT, EW_COPYSIGN, EW_BAND, EW_BOR, EW_BXOR, EW_LSHIFT,
    EW_RSHIFT, EW_XLOGY, EW_LOGADDEXP,
    EW_RELU_BW, EW_SIGMOID_BW, EW_TANH_BW, EW_GELU_BW, EW_GELU_TANH_BW, EW_SILU_BW,
    EW_ADDA, /* a + alpha * b, alpha a double in aux (float types) */
    EW_NBIN
};
enum { /* binary, bool out */
    EW_EQ, EW_NE, EW_LT, EW_LE, EW_GT, EW_GE, EW_LAND, EW_LOR, EW_LXOR, EW_NCMP
};
enum { /* unary, out dtype == in dtype */
    EW_NEG, EW_ABS, EW_SIGN, EW_EXP, EW_EXP2, EW_EXPM1, EW_LOG, EW_LOG2, EW_LOG10, EW_LOG1P,
    EW_SQRT, EW_RSQRT, EW_SIN, EW_COS, EW_TAN, EW_ASIN, EW_ACOS, EW_ATAN, EW_SINH, EW_COSH,
    EW_TANH, EW_ASINH, EW_ACOSH, EW_ATANH, EW_SIGMOID, EW_RELU, EW_GELU, EW_GELU_TANH, EW_SILU,
    EW_MISH, EW_ERF, EW_ERFC, EW_FLOOR, EW_CEIL, EW_ROUND, EW_TRUNC, EW_FRAC, EW_RECIP,
    EW_SQUARE, EW_BNOT, EW_LGAMMA, EW_SOFTPLUS, EW_LEAKY_RELU, EW_ELU, EW_CLAMP,
    EW_HARDSIGMOID, EW_HARDSWISH,
    EW_NUN
};
enum { /* unary, bool out */
    EW_ISNAN, EW_ISINF, EW_ISFINITE, EW_LNOT, EW_SIGNBIT, EW_NPRED
};

typedef struct {
    em_loop bin[EW_NBIN][EM_NDTYPES];
    em_loop cmp[EW_NCMP][EM_NDTYPES];
    em_loop un[EW_NUN][EM_NDTYPES];
    em_loop pred[EW_NPRED][EM_NDTYPES];
    em_loop where[EM_NDTYPES]; /* ptrs: out, cond(bool), a, b */
    em_loop lerp[EM_NDTYPES];  /* ptrs: out, a, b, w */
} em_ew_table;

/* aux blocks: integer division writes 1 to *(int *)aux on a zero divisor;
   clamp reads {T lo; pad; T hi; pad; int flags} as 8-byte slots; parametric
   float ops read doubles. */
const em_ew_table *em_ew_get(void);
const em_ew_table *em_ew_table_generic(void);
const em_ew_table *em_ew_table_avx2(void);
const em_ew_table *em_ew_table_avx512(void);
/* fill the complex64/complex128 slots of a table (src_c/complex.c) */
void em_ew_add_complex(em_ew_table *t);
#endif
