/* The elementwise op lists: one line per op.  Every other registry is generated
   from these lines: the op-code enums and the kernel-name lookup (ember_ew.h),
   the kernels and each ISA's table (src_c/ew_impl.h), and the Cython bindings
   (ember/_C/elementwise.pyx reads the public names and kinds at import).

   Binary and unary lines: X(CODE, kernel, "public", kind, dtypes, loop, e1, e2)
     CODE     the op code is EW_<CODE>; the order is the ABI (src_cuda switches on it)
     kernel   the loops are named bin_<kernel>_<dtype> / un_<kernel>_<dtype>
     public   the ember function generated from the line (with its in-place form);
              "" when elementwise.pyx binds the op by hand (extra arguments)
     kind     the result dtype: ARITH keeps the promoted dtype, FLOAT and DIV promote
              integers to the default float dtype, INT takes integers and bool only
     dtypes   the table slots filled: FLOATS, INTS, NUM (both), INTS_B / NUM_B (+ bool)
     loop     how ew_impl.h builds the kernels: ALL (e1 for every dtype of `dtypes`),
              F2 (e1 for float32, e2 for float64), OWN (written by hand in ew_impl.h)
     e1, e2   expressions of the element(s): `x` for unary ops, `a`, `b` for binary;
              `T` is the element type, `prm` the unary op's double parameters
   Comparison lines: X(CODE, kernel, "public", expr), bool out, every dtype.
   Predicate lines: X(CODE, kernel, "public", float expr, int expr, bool expr), bool out. */
#ifndef EMBER_EW_OPS_H
#define EMBER_EW_OPS_H

#define EW_BINARY_OPS(X) \
    X(ADD, add, "", ARITH, NUM_B, OWN, _, _) \
    X(SUB, sub, "", ARITH, NUM, ALL, a - b, _) \
    X(MUL, mul, "", ARITH, NUM_B, OWN, _, _) \
    X(DIV, div, "", DIV, FLOATS, ALL, a / b, _) \
    X(FLOORDIV, floordiv, "floor_divide", ARITH, NUM, OWN, _, _) \
    X(REM, rem, "remainder", ARITH, NUM, OWN, _, _) \
    X(FMOD, fmod, "fmod", ARITH, NUM, OWN, _, _) \
    X(POW, pow, "", ARITH, NUM, OWN, _, _) \
    X(MAX, max, "maximum", ARITH, NUM_B, OWN, _, _) \
    X(MIN, min, "minimum", ARITH, NUM_B, OWN, _, _) \
    /* fmax/fmin as a max/min and a select (libm's call does not vectorise), with \
       libm's answers: NaN only when both are, the first operand on ties \
       (fmax(-0.0, 0.0) is -0.0) */ \
    X(FMAX, fmax, "fmax", FLOAT, FLOATS, ALL, ({ T m_ = b > a ? b : a; a != a ? b : m_; }), _) \
    X(FMIN, fmin, "fmin", FLOAT, FLOATS, ALL, ({ T m_ = b < a ? b : a; a != a ? b : m_; }), _) \
    X(ATAN2, atan2, "atan2", FLOAT, FLOATS, OWN, _, _) \
    X(HYPOT, hypot, "hypot", FLOAT, FLOATS, F2, em_hypotf(a, b), em_hypot_vd(a, b)) \
    X(COPYSIGN, copysign, "copysign", FLOAT, FLOATS, ALL, (T)copysign(a, b), _) \
    X(BAND, band, "bitwise_and", INT, INTS_B, ALL, a & b, _) \
    X(BOR, bor, "bitwise_or", INT, INTS_B, ALL, a | b, _) \
    X(BXOR, bxor, "bitwise_xor", INT, INTS_B, ALL, a ^ b, _) \
    X(LSHIFT, lshift, "bitwise_left_shift", INT, INTS, ALL, \
      (b < 0 || b >= (T)(8 * sizeof(T))) ? 0 : (T)((uint64_t)a << b), _) \
    X(RSHIFT, rshift, "bitwise_right_shift", INT, INTS, ALL, \
      (b < 0 || b >= (T)(8 * sizeof(T))) ? (a < 0 ? -1 : 0) : (T)(a >> b), _) \
    X(XLOGY, xlogy, "xlogy", FLOAT, FLOATS, F2, em_xlogyf(a, b), em_xlogy(a, b)) \
    X(LOGADDEXP, logaddexp, "logaddexp", FLOAT, FLOATS, F2, em_logaddexpf(a, b), em_logaddexp_vd(a, b)) \
    /* backward helpers: a = incoming grad, b = saved input or output */ \
    X(RELU_BW, relu_bw, "", FLOAT, FLOATS, ALL, b > 0 ? a : 0, _) \
    X(SIGMOID_BW, sigmoid_bw, "", FLOAT, FLOATS, ALL, a * b * (1 - b), _) \
    X(TANH_BW, tanh_bw, "", FLOAT, FLOATS, ALL, a * (1 - b * b), _) \
    X(GELU_BW, gelu_bw, "", FLOAT, FLOATS, OWN, _, _) \
    X(GELU_TANH_BW, gelu_tanh_bw, "", FLOAT, FLOATS, F2, \
      a * em_gelu_tanh_gradf(b), a * em_gelu_tanh_grad_vd(b)) \
    X(SILU_BW, silu_bw, "", FLOAT, FLOATS, OWN, _, _) \
    /* a + alpha * b, alpha a double in aux (float types) */ \
    X(ADDA, adda, "", ARITH, FLOATS, OWN, _, _) \
    /* more backward helpers; elu's and softplus's read the forward's double \
       parameters in aux: {alpha, scale, input_scale}, {beta, threshold} */ \
    X(ELU_BW, elu_bw, "", FLOAT, FLOATS, OWN, _, _) \
    X(SOFTPLUS_BW, softplus_bw, "", FLOAT, FLOATS, OWN, _, _) \
    X(MISH_BW, mish_bw, "", FLOAT, FLOATS, F2, a * (float)em_mish_grad_vd((double)b), a * em_mish_grad_vd(b)) \
    /* pointwise regression losses of a = input, b = target (smooth_l1 prm {beta}, \
       huber {delta}), and their input gradients under one uniform incoming grad s \
       (the backward of a mean or sum): prm {beta or delta, s} */ \
    X(MSE, mse, "", FLOAT, FLOATS, ALL, (a - b) * (a - b), _) \
    X(SMOOTH_L1, smooth_l1, "", FLOAT, FLOATS, OWN, _, _) \
    X(HUBER, huber, "", FLOAT, FLOATS, OWN, _, _) \
    X(MSE_GRAD, mse_grad, "", FLOAT, FLOATS, OWN, _, _) \
    X(SMOOTH_L1_GRAD, smooth_l1_grad, "", FLOAT, FLOATS, OWN, _, _) \
    X(HUBER_GRAD, huber_grad, "", FLOAT, FLOATS, OWN, _, _) \
    /* binary cross-entropy of logits a and targets b, (1 - b) a - logsigmoid(a), and its \
       input gradient s (sigmoid(a) - b) under one uniform grad: prm {unused, s} */ \
    X(BCE_LOGITS, bce_logits, "", FLOAT, FLOATS, F2, (1 - b) * a - em_logsigmoid_vf(a), \
      (1 - b) * a - em_logsigmoid_vd(a)) \
    X(BCE_LOGITS_GRAD, bce_logits_grad, "", FLOAT, FLOATS, OWN, _, _)

#define EW_COMPARE_OPS(X) \
    X(EQ, eq, "eq", a == b) \
    X(NE, ne, "ne", a != b) \
    X(LT, lt, "lt", a < b) \
    X(LE, le, "le", a <= b) \
    X(GT, gt, "gt", a > b) \
    X(GE, ge, "ge", a >= b) \
    X(LAND, land, "logical_and", (a != 0) & (b != 0)) \
    X(LOR, lor, "logical_or", (a != 0) | (b != 0)) \
    X(LXOR, lxor, "logical_xor", (a != 0) ^ (b != 0))

#define EW_UNARY_OPS(X) \
    X(NEG, neg, "neg", ARITH, NUM, ALL, (T)(0 - x), _) \
    X(ABS, abs, "abs", ARITH, NUM_B, OWN, _, _) \
    X(SIGN, sign, "sign", ARITH, NUM_B, OWN, _, _) \
    X(EXP, exp, "exp", FLOAT, FLOATS, F2, em_expf(x), em_exp_d(x)) \
    X(EXP2, exp2, "exp2", FLOAT, FLOATS, OWN, _, _) \
    X(EXPM1, expm1, "expm1", FLOAT, FLOATS, F2, em_expm1f(x), em_expm1_vd(x)) \
    X(LOG, log, "log", FLOAT, FLOATS, F2, em_logf(x), em_log_d(x)) \
    X(LOG2, log2, "log2", FLOAT, FLOATS, F2, em_logf(x) * 1.44269504088896341f, em_log2_d(x)) \
    X(LOG10, log10, "log10", FLOAT, FLOATS, F2, em_logf(x) * 0.434294481903251828f, em_log10_vd(x)) \
    X(LOG1P, log1p, "log1p", FLOAT, FLOATS, F2, em_log1pf(x), em_log1p_d(x)) \
    X(SQRT, sqrt, "sqrt", FLOAT, FLOATS, F2, sqrtf(x), sqrt(x)) \
    X(RSQRT, rsqrt, "rsqrt", FLOAT, FLOATS, F2, 1.0f / sqrtf(x), 1.0 / sqrt(x)) \
    X(SIN, sin, "sin", FLOAT, FLOATS, OWN, _, _) \
    X(COS, cos, "cos", FLOAT, FLOATS, OWN, _, _) \
    X(TAN, tan, "tan", FLOAT, FLOATS, OWN, _, _) \
    X(ASIN, asin, "asin", FLOAT, FLOATS, F2, em_asinf(x), em_asin_vd(x)) \
    X(ACOS, acos, "acos", FLOAT, FLOATS, F2, em_acosf(x), em_acos_vd(x)) \
    X(ATAN, atan, "atan", FLOAT, FLOATS, F2, em_atanf(x), em_atan_vd(x)) \
    X(SINH, sinh, "sinh", FLOAT, FLOATS, F2, em_sinhf(x), em_sinh_vd(x)) \
    X(COSH, cosh, "cosh", FLOAT, FLOATS, F2, em_coshf(x), em_cosh_vd(x)) \
    X(TANH, tanh, "tanh", FLOAT, FLOATS, F2, ew_tanhf(x), em_tanh_vd(x)) \
    X(ASINH, asinh, "asinh", FLOAT, FLOATS, F2, em_asinhf(x), em_asinh_d(x)) \
    X(ACOSH, acosh, "acosh", FLOAT, FLOATS, F2, em_acoshf(x), em_acosh_d(x)) \
    X(ATANH, atanh, "atanh", FLOAT, FLOATS, F2, em_atanh_vf(x), em_atanh_d(x)) \
    X(SIGMOID, sigmoid, "sigmoid", FLOAT, FLOATS, OWN, _, _) \
    X(RELU, relu, "relu", ARITH, NUM, ALL, (x != x) ? x : (x > 0 ? x : 0), _) \
    X(GELU, gelu, "", FLOAT, FLOATS, OWN, _, _) \
    X(GELU_TANH, gelu_tanh, "", FLOAT, FLOATS, F2, em_gelu_tanhf(x), em_gelu_tanh_vd(x)) \
    X(SILU, silu, "silu", FLOAT, FLOATS, OWN, _, _) \
    X(MISH, mish, "mish", FLOAT, FLOATS, F2, em_mishf(x), em_mish_vd(x)) \
    X(ERF, erf, "erf", FLOAT, FLOATS, F2, em_erff(x), em_erf_vd(x)) \
    X(ERFC, erfc, "erfc", FLOAT, FLOATS, OWN, _, _) \
    /* rounding: bound by hand (decimals=, the identity on integers) */ \
    X(FLOOR, floor, "", ARITH, FLOATS, ALL, (T)floor(x), _) \
    X(CEIL, ceil, "", ARITH, FLOATS, ALL, (T)ceil(x), _) \
    X(ROUND, round, "", ARITH, FLOATS, ALL, (T)nearbyint(x), _) \
    X(TRUNC, trunc, "", ARITH, FLOATS, ALL, (T)trunc(x), _) \
    X(FRAC, frac, "frac", FLOAT, FLOATS, F2, x - truncf(x), x - trunc(x)) \
    X(RECIP, recip, "reciprocal", FLOAT, FLOATS, ALL, (T)(1 / x), _) \
    X(SQUARE, square, "square", ARITH, NUM, ALL, (T)(x * x), _) \
    X(BNOT, bnot, "bitwise_not", ARITH, INTS_B, OWN, _, _) \
    X(LGAMMA, lgamma, "lgamma", FLOAT, FLOATS, OWN, _, _) \
    /* parametric (prm): softplus {beta, threshold}, leaky_relu {slope}, \
       elu {alpha, scale, input_scale}; clamp reads its own aux block */ \
    X(SOFTPLUS, softplus, "", FLOAT, FLOATS, OWN, _, _) \
    X(LEAKY_RELU, leaky_relu, "", FLOAT, FLOATS, OWN, _, _) \
    X(ELU, elu, "", FLOAT, FLOATS, OWN, _, _) \
    X(CLAMP, clamp, "", ARITH, NUM, OWN, _, _) \
    X(HARDSIGMOID, hardsigmoid, "hardsigmoid", FLOAT, FLOATS, F2, \
      em_hardsigmoidf(x), em_hardsigmoid(x)) \
    X(HARDSWISH, hardswish, "hardswish", FLOAT, FLOATS, OWN, _, _) \
    X(LOGSIGMOID, logsigmoid, "", FLOAT, FLOATS, F2, em_logsigmoid_vf(x), em_logsigmoid_vd(x)) \
    /* nan_to_num: prm {nan, posinf, neginf} (bound by hand; integers are copied) */ \
    X(NAN_TO_NUM, nan_to_num, "", ARITH, FLOATS, OWN, _, _)

#define EW_PREDICATE_OPS(X) \
    X(ISNAN, isnan, "isnan", x != x, 0, 0) \
    X(ISINF, isinf, "isinf", (x == INFINITY) | (x == -INFINITY), 0, 0) \
    X(ISFINITE, isfinite, "isfinite", (x == x) & (x != INFINITY) & (x != -INFINITY), 1, 1) \
    X(LNOT, lnot, "logical_not", x == 0, x == 0, x == 0) \
    X(SIGNBIT, signbit, "signbit", signbit(x) != 0, x < 0, 0)

#endif
