/* The scalar formulas of the elementwise ops, written once for the CPU loops
   (src_c/ew_impl.h) and the CUDA kernels (src_cuda/elementwise.cu): both
   compile this header, so the CPU tests check the formulas the GPU runs.
   float32 versions use ember_math.h's polynomials; float64 ones use libm (on
   the device, CUDA's libm). */
#ifndef EMBER_SCALAR_H
#define EMBER_SCALAR_H
#include "ember_math.h"

EM_HD_INLINE double em_sigmoidd(double x) { return 1.0 / (1.0 + em_exp_d(-x)); }

/* Cephes tanhf: an odd polynomial for |x| < 0.625, 1 - 2/(e^2x + 1) beyond;
   both computed and selected so the CPU loop vectorises */
EM_HD_INLINE float em_tanhf(float x) {
    float ax = fabsf(x), z = x * x;
    float p = ((((-5.70498872745E-3f * z + 2.06390887954E-2f) * z - 5.37397155531E-2f) * z
                + 1.33314422036E-1f) * z - 3.33332819422E-1f) * z * x + x;
    float e = em_expf(2.0f * (ax > 10.0f ? 10.0f : ax));   /* |x| > 9.01 gives +-1 */
    float q = copysignf(1.0f - 2.0f / (e + 1.0f), x);
    return ax < 0.625f ? p : q;
}

/* integer power; negative exponents give 0 except for bases 1 and -1 */
EM_HD_INLINE int64_t em_ipow64(int64_t a, int64_t b) {
    if (b < 0) return a == 1 ? 1 : (a == -1 ? ((b & 1) ? -1 : 1) : 0);
    uint64_t r = 1, base = (uint64_t)a;
    while (b) { if (b & 1) r *= base; base *= base; b >>= 1; }
    return (int64_t)r;
}

/* Python's floor division and remainder (sign of the divisor) */
EM_HD_INLINE double em_floordiv(double a, double b) {
    double m = fmod(a, b), d = (a - m) / b;
    if (m != 0 && ((b < 0) != (m < 0))) d -= 1;
    double f = floor(d);
    if (d - f > 0.5) f += 1;
    return (b == 0) ? a / b : (d == 0 ? copysign(0.0, a / b) : f);
}
EM_HD_INLINE float em_floordivf(float a, float b) {
    float m = (float)fmod(a, b), d = (a - m) / b;
    if (m != 0 && ((b < 0) != (m < 0))) d -= 1;
    float f = (float)floor(d);
    if (d - f > 0.5) f += 1;
    return (b == 0) ? a / b : (d == 0 ? copysignf(0.0f, a / b) : f);
}
EM_HD_INLINE double em_remainder(double a, double b) {
    double r = fmod(a, b);
    return (r != 0 && ((b < 0) != (r < 0))) ? r + b : r;
}
EM_HD_INLINE float em_remainderf(float a, float b) {
    float r = (float)fmod(a, b);
    return (r != 0 && ((b < 0) != (r < 0))) ? r + b : r;
}

/* The same three, branch-free so the CPU loops vectorise, for the operands where
   EM_FMOD_FASTF / EM_FMOD_FASTD hold (finite a, b != 0, |a| / |b| < 2^23 (float)
   or 2^52 (double)); the loops send the others to the forms above.  fmod is exact:
   q = trunc(|a| / |b|) is the integer quotient or one above it there (the division
   rounds monotonically and those integers are representable), so |a| - q |b|, a
   multiple of the smaller operand's ulp below |b| in magnitude, is representable
   and one FMA (without FMA, float's product in double; em_rem_d) gives it exactly;
   below zero it is one |b| short.  b = +-inf: |a|. */
#define EM_FMOD_FASTF(a, b) (fabsf(a) < 8388608.0f * fabsf(b))
/* without FMA, em_rem_d's Dekker product needs |b| clear of overflow and underflow */
#define EM_FMOD_FASTD(a, b) ((fabs(a) < 4503599627370496.0 * fabs(b)) & \
    (EM_FMA_OK | ((fabs(b) > 1e-270) & (fabs(b) < 1e270))))
EM_HD_INLINE float em_fmod_vf(float a, float b) {
    float ax = fabsf(a), ab = fabsf(b);
    float q = truncf(ax / ab);
    float r = EM_FMA_OK ? fmaf(-q, ab, ax) : (float)((double)ax - (double)q * (double)ab);
    r = r < 0.0f ? r + ab : r;
    r = ab == INFINITY ? ax : r;
    return copysignf(r, a);
}
EM_HD_INLINE double em_fmod_vd(double a, double b) {
    double ax = fabs(a), ab = fabs(b);
    double q = trunc(ax / ab);
    double r = em_rem_d(ax, q, ab);
    r = r < 0.0 ? r + ab : r;
    r = ab == INFINITY ? ax : r;
    return copysign(r, a);
}
/* a non-zero remainder m whose sign differs from the divisor's */
#define EM_MOD_FIX(b, m) (((m) != 0) & (((b) < 0) != ((m) < 0)))
EM_HD_INLINE float em_remainder_vf(float a, float b) {
    float m = em_fmod_vf(a, b);
    return EM_MOD_FIX(b, m) ? m + b : m;
}
EM_HD_INLINE double em_remainder_vd(double a, double b) {
    double m = em_fmod_vd(a, b);
    return EM_MOD_FIX(b, m) ? m + b : m;
}
EM_HD_INLINE float em_floordiv_vf(float a, float b) {
    float m = em_fmod_vf(a, b), d = (a - m) / b;
    d = EM_MOD_FIX(b, m) ? d - 1.0f : d;
    float f = floorf(d);
    f = d - f > 0.5f ? f + 1.0f : f;
    return d == 0.0f ? copysignf(0.0f, a / b) : f;
}
EM_HD_INLINE double em_floordiv_vd(double a, double b) {
    double m = em_fmod_vd(a, b), d = (a - m) / b;
    d = EM_MOD_FIX(b, m) ? d - 1.0 : d;
    double f = floor(d);
    f = d - f > 0.5 ? f + 1.0 : f;
    return d == 0.0 ? copysign(0.0, a / b) : f;
}

/* float32 log in double (rounded once: as libm's logf), and logaddexp in float as
   torch, m + log1p(exp(-|a - b|)), on softplus's kernels (ember_math.h) */
EM_HD_INLINE double em_xlogy(double a, double b) { return (b != b) ? b : (a == 0 ? 0 : a * log(b)); }
EM_HD_INLINE float em_xlogyf(float a, float b) {
    float r = a * (float)em_log_d((double)b);
    r = a == 0 ? 0.0f : r;
    return b != b ? b : r;
}
EM_HD_INLINE float em_logaddexpf(float a, float b) {
    float m = a > b ? a : b;
    float d = fabsf(a - b);
    float e = em_exp_neg_scaled_vf(d > 108.0f ? 108.0f : d) * 2.3283064365386963e-10f;
    float r = m + em_log1p_unitf(e);
    r = (a != a) | (b != b) ? a + b : r;
    return ((m == INFINITY) | (m == -INFINITY)) & (a == b) ? a : r;
}

/* gelu with the tanh approximation as x * sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3)
   (equal to x/2 (1 + tanh u), without its cancellation for x < 0): 2u in double,
   handed to the float exponential as hi + lo, and sigmoid finished in double, so
   the tail keeps full precision.  Returns sigmoid(2u). */
EM_HD_INLINE double em_gelu_tanh_sig(float x) {
    double xd = x;
    double v = xd * EM_MAD(xd * xd, 0.07135481627260025, 1.5957691216057308);
    double a = fabs(v);
    a = a > 150.0 ? 150.0 : a;
    float ah = (float)a;
    /* 2^32 exp(-|v|): no float underflow before the double product */
    double e = (double)em_exp_reduced(-ah, 32) * (2.3283064365386963e-10 * (1.0 - (a - (double)ah)));
    return (v < 0.0 ? e : 1.0) / (1.0 + e);
}
EM_HD_INLINE float em_gelu_tanhf(float x) {
    return (float)((double)x * em_gelu_tanh_sig(x));
}
EM_HD_INLINE double em_gelu_tanh(double x) {
    return 0.5 * x * (1 + tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
}
/* d/dx x s(v) = s (1 + x (1 - s) v'), s = sigmoid(v), v = 2u */
EM_HD_INLINE float em_gelu_tanh_gradf(float b) {
    double sd = em_gelu_tanh_sig(b), bd = b;
    double vp = EM_MAD(bd * bd, 0.21406444881780075, 1.5957691216057308);
    return (float)(sd * (1.0 + bd * (1.0 - sd) * vp));
}
EM_HD_INLINE double em_gelu_tanh_grad(double x) {
    double u = 0.79788456080286535588 * (x + 0.044715 * x * x * x);
    double t = tanh(u);
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * 0.79788456080286535588 *
           (1 + 3 * 0.044715 * x * x);
}
EM_HD_INLINE double em_gelu(double x) { return 0.5 * x * erfc(-x * 0.70710678118654752440); }
EM_HD_INLINE double em_gelu_grad(double b) {
    return 0.5 * erfc(-b * 0.70710678118654752440) + b * 0.3989422804014327 * exp(-0.5 * b * b);
}
/* grad * silu'(x) */
EM_HD_INLINE float em_silu_bwf(float g, float x) { float s = em_sigmoidf(x); return g * s * (1 + x * (1 - s)); }
EM_HD_INLINE double em_silu_bw(double g, double x) { double s = em_sigmoidd(x); return g * s * (1 + x * (1 - s)); }
/* mish = x tanh(log1p(n)), n = e^x, = x q / (q + 2) with q = n (n + 2) = n^2 + 2n
   (one rounding): one exponential and one division.  Above x = 20 the ratio
   rounds to 1; below -20 q = 2n to float precision, with n scaled by 2^64 so the
   tail stays normal until the last product; -inf gives NaN (-inf * 0, as torch) */
EM_HD_INLINE float em_mishf(float x) {
    float xc = x > 20.0f ? 20.0f : (x < -120.0f ? -120.0f : x);   /* x e^x is 0 below -104 */
    int tail = x < -20.0f;
    float n = em_exp_reduced(xc, tail ? 64 : 0);
    float q = tail ? n + n : EM_MADF(n, n, n + n);
    float den = tail ? 2.0f : q + 2.0f;
    float r = (tail ? xc : x) * (q / den);
    r = tail ? r * 5.421010862427522e-20f : r;
    return x == -INFINITY ? NAN : r;
}
EM_HD_INLINE double em_mish(double x) { return x * tanh(x > 20 ? x : log1p(exp(x))); }
/* hardsigmoid and hardswish as torch: min(max(x + 3, 0), 6) / 6, times x first
   for hardswish, in the element type (NaN passes; -inf gives NaN in hardswish) */
EM_HD_INLINE float em_hardsigmoidf(float x) {
    float c = x + 3.0f;
    c = c < 0.0f ? 0.0f : c;
    return (c > 6.0f ? 6.0f : c) / 6.0f;
}
EM_HD_INLINE double em_hardsigmoid(double x) {
    double c = x + 3.0;
    c = c < 0.0 ? 0.0 : c;
    return (c > 6.0 ? 6.0 : c) / 6.0;
}
EM_HD_INLINE float em_hardswishf(float x) {
    float c = x + 3.0f;
    c = c < 0.0f ? 0.0f : c;
    return x * (c > 6.0f ? 6.0f : c) / 6.0f;
}
EM_HD_INLINE double em_hardswish(double x) {
    double c = x + 3.0;
    c = c < 0.0 ? 0.0 : c;
    return x * (c > 6.0 ? 6.0 : c) / 6.0;
}
/* softplus(x) = log(1 + exp(beta x)) / beta, linear above the threshold */
EM_HD_INLINE float em_softplusf(float x, float beta, float thr) {
    float t = x * beta;
    return t > thr ? x : em_softplus1_vf(t) / beta;
}
EM_HD_INLINE double em_softplus(double x, double beta, double thr) {
    return (x * beta > thr) ? x : log1p(exp(x * beta)) / beta;
}
#endif
