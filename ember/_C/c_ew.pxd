# ember_ew.h (src_c/include) declared to Cython: modules cimport it from here.
# The op codes come from the op lists of ember_ew_ops.h; only the codes that Cython
# code names (ops bound by hand) are declared here: the generated bindings read the
# lists' public names and kinds at import (em_ew_op_name / em_ew_op_kind).
from ember._C.core cimport EM_NDTYPES, em_loop


cdef extern from "ember_ew.h" nogil:
    enum:
        EW_ADD, EW_SUB, EW_MUL, EW_DIV, EW_FLOORDIV, EW_FMOD, EW_POW, EW_ADDA
        EW_RELU_BW, EW_SIGMOID_BW, EW_TANH_BW, EW_GELU_BW, EW_GELU_TANH_BW, EW_SILU_BW
        EW_ELU_BW, EW_SOFTPLUS_BW, EW_MISH_BW
        EW_MSE, EW_SMOOTH_L1, EW_HUBER, EW_MSE_GRAD, EW_SMOOTH_L1_GRAD, EW_HUBER_GRAD
        EW_BCE_LOGITS, EW_BCE_LOGITS_GRAD
        EW_NEG, EW_ABS, EW_SIGN, EW_FRAC, EW_RELU, EW_GELU, EW_GELU_TANH
        EW_FLOOR, EW_CEIL, EW_ROUND, EW_TRUNC, EW_SOFTPLUS, EW_LEAKY_RELU, EW_ELU, EW_CLAMP
        EW_LOGSIGMOID
        EW_NAN_TO_NUM, EW_ANGLE, EW_FREXP_M, EW_FREXP_E
        EW_THRESHOLD_BW, EW_SHRINK_BW, EW_PRELU, EW_GLU
        EW_THRESHOLD, EW_HARDSHRINK, EW_SOFTSHRINK
        EW_LOGADDEXP2, EW_NEXTAFTER
        EW_NBIN, EW_NCMP, EW_NUN, EW_NPRED
    # the four lists, and the result-dtype kinds of their `kind` column
    enum:
        EW_G_BIN, EW_G_CMP, EW_G_UN, EW_G_PRED
    enum:
        K_ARITH "EW_K_ARITH"     # the promoted dtype
        K_DIV "EW_K_DIV"         # integers go to the default float dtype
        K_CMP "EW_K_CMP"         # bool result, compare in the promoted dtype
        K_INT "EW_K_INT"         # integers / bool only
        K_FLOAT "EW_K_FLOAT"     # float math (integers promoted to the default float dtype)
    const char *em_ew_op_name(int group, int op)
    int em_ew_op_kind(int group, int op)
    ctypedef struct em_ew_table:
        em_loop bin[EW_NBIN][EM_NDTYPES]
        em_loop cmp[EW_NCMP][EM_NDTYPES]
        em_loop un[EW_NUN][EM_NDTYPES]
        em_loop pred[EW_NPRED][EM_NDTYPES]
        em_loop where[EM_NDTYPES]
        em_loop lerp[EM_NDTYPES]
        em_loop glu_bw[EM_NDTYPES]
        em_loop addcmul[EM_NDTYPES]
        em_loop addcdiv[EM_NDTYPES]
        em_loop clamp3[EM_NDTYPES]
    const em_ew_table *em_ew_get()
