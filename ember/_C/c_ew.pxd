# ember_ew.h (src_c/include) declared to Cython: modules cimport it from here.
from ember._C.core cimport EM_NDTYPES, em_loop


cdef extern from "ember_ew.h" nogil:
    enum:
        EW_ADD, EW_SUB, EW_MUL, EW_DIV, EW_FLOORDIV, EW_REM, EW_FMOD, EW_POW, EW_MAX, EW_MIN
        EW_FMAX, EW_FMIN, EW_ATAN2, EW_HYPOT, EW_COPYSIGN, EW_BAND, EW_BOR, EW_BXOR, EW_LSHIFT
        EW_RSHIFT, EW_XLOGY, EW_LOGADDEXP
        EW_RELU_BW, EW_SIGMOID_BW, EW_TANH_BW, EW_GELU_BW, EW_GELU_TANH_BW, EW_SILU_BW, EW_ADDA
        EW_EQ, EW_NE, EW_LT, EW_LE, EW_GT, EW_GE, EW_LAND, EW_LOR, EW_LXOR
        EW_NEG, EW_ABS, EW_SIGN, EW_EXP, EW_EXP2, EW_EXPM1, EW_LOG, EW_LOG2, EW_LOG10, EW_LOG1P
        EW_SQRT, EW_RSQRT, EW_SIN, EW_COS, EW_TAN, EW_ASIN, EW_ACOS, EW_ATAN, EW_SINH, EW_COSH
        EW_TANH, EW_ASINH, EW_ACOSH, EW_ATANH, EW_SIGMOID, EW_RELU, EW_GELU, EW_GELU_TANH, EW_SILU
        EW_MISH, EW_ERF, EW_ERFC, EW_FLOOR, EW_CEIL, EW_ROUND, EW_TRUNC, EW_FRAC, EW_RECIP
        EW_SQUARE, EW_BNOT, EW_LGAMMA, EW_SOFTPLUS, EW_LEAKY_RELU, EW_ELU, EW_CLAMP
        EW_HARDSIGMOID, EW_HARDSWISH
        EW_ISNAN, EW_ISINF, EW_ISFINITE, EW_LNOT, EW_SIGNBIT
        EW_NBIN, EW_NCMP, EW_NUN, EW_NPRED
    ctypedef struct em_ew_table:
        em_loop bin[EW_NBIN][EM_NDTYPES]
        em_loop cmp[EW_NCMP][EM_NDTYPES]
        em_loop un[EW_NUN][EM_NDTYPES]
        em_loop pred[EW_NPRED][EM_NDTYPES]
        em_loop where[EM_NDTYPES]
        em_loop lerp[EM_NDTYPES]
    const em_ew_table *em_ew_get()
