/* Scalar math shared by the kernel families, written once.  Functions are
   always_inline so each ISA copy of a loop (compiled under its own
   `#pragma GCC target`) vectorises them with its own instructions; they are
   host/device functions under nvcc (EMBER_HD below), so src_cuda runs the same
   formulas. */
#ifndef EMBER_MATH_H
#define EMBER_MATH_H
#include <math.h>
#include <stdint.h>
#include <string.h>

/* Host/device qualifiers: under nvcc these functions compile for both sides;
   under a plain C compiler they are what the CPU kernels always used.  Kept in
   this header (not a separate one) because ember.compile's generated C
   includes this file on its own. */
#ifndef EMBER_HD
#if defined(__CUDACC__)
#define EMBER_HD __host__ __device__
#define EM_HD_INLINE static __forceinline__ __host__ __device__
#else
#define EMBER_HD
#define EM_HD_INLINE static inline __attribute__((always_inline))
#endif
#endif

/* a * b + c in one rounding where the target has FMA: the ISA copies of the
   CPU loops define EM_FMA_OK (GCC's `#pragma GCC target` does not define
   __FMA__), nvcc always has it; elsewhere two roundings, as plain C. */
#ifndef EM_FMA_OK
#if defined(__CUDACC__) || defined(__FMA__)
#define EM_FMA_OK 1
#else
#define EM_FMA_OK 0
#endif
#endif
#define EM_MADF(a, b, c) (EM_FMA_OK ? fmaf((a), (b), (c)) : (a) * (b) + (c))
#define EM_MAD(a, b, c) (EM_FMA_OK ? fma((a), (b), (c)) : (a) * (b) + (c))

/* exp(r) * 2^n for |r| <= ln2/2 after the reduction below: the Cephes
   polynomial, and 2^n as two factors so n in [-150, 129] never leaves the
   exponent range */
EM_HD_INLINE float em_exp_reduced(float xc, int32_t k) {
    float fx = floorf(xc * 1.44269504088896341f + 0.5f);
    float r = xc - fx * 0.693359375f + fx * 2.12194440e-4f;
    float y = 1.9875691500E-4f;
    y = EM_MADF(y, r, 1.3981999507E-3f);
    y = EM_MADF(y, r, 8.3334519073E-3f);
    y = EM_MADF(y, r, 4.1665795894E-2f);
    y = EM_MADF(y, r, 1.6666665459E-1f);
    y = EM_MADF(y, r, 5.0000001201E-1f);
    y = EM_MADF(y, r * r, r) + 1.0f;
    int32_t n = (int32_t)fx + k, n1 = n >> 1, n2 = n - n1;
    int32_t e1 = (n1 + 127) << 23, e2 = (n2 + 127) << 23;
    float s1, s2;
    memcpy(&s1, &e1, 4);
    memcpy(&s2, &e2, 4);
    return y * s1 * s2;
}

/* 2^x for float32: n = round(x) and f = x - n (exact), 2^f = exp(f ln 2) by the
   exp polynomial; 2^n exact for integer x */
EM_HD_INLINE float em_exp2f(float x) {
    float xc = x > 129.0f ? 129.0f : (x < -151.0f ? -151.0f : x);
    float n = floorf(xc + 0.5f);
    float r = (xc - n) * 0.693147180559945309f;
    float y = 1.9875691500E-4f;
    y = EM_MADF(y, r, 1.3981999507E-3f);
    y = EM_MADF(y, r, 8.3334519073E-3f);
    y = EM_MADF(y, r, 4.1665795894E-2f);
    y = EM_MADF(y, r, 1.6666665459E-1f);
    y = EM_MADF(y, r, 5.0000001201E-1f);
    y = EM_MADF(y, r * r, r) + 1.0f;
    int32_t ni = (int32_t)n, n1 = ni >> 1, n2 = ni - n1;
    float s1, s2;
    int32_t e1 = (n1 + 127) << 23, e2 = (n2 + 127) << 23;
    memcpy(&s1, &e1, 4);
    memcpy(&s2, &e2, 4);
    float res = y * s1 * s2;
    res = x > 128.0f ? INFINITY : res;
    res = x < -150.0f ? 0.0f : res;
    return x != x ? x : res;
}

/* exp for float32 that vectorises (Cephes-style range reduction + degree-6
   polynomial, ~1 ulp); glibc's expf is a scalar call. */
EM_HD_INLINE float em_expf(float x) {
    float xc = x > 88.72283935546875f ? 88.72283935546875f : (x < -103.972077f ? -103.972077f : x);
    float res = em_exp_reduced(xc, 0);
    res = x > 88.72283935546875f ? INFINITY : res;
    res = x < -103.972077083991796f ? 0.0f : res;
    return x != x ? x : res;
}

/* sigmoid(v) = num / (1 + e) with e = exp(-|v|), num = 1 (v >= 0) or e (v < 0):
   no overflow, and no flush to 0 below v = -88, because e is formed as
   2^32 exp(-|v|) (em_exp_reduced's scale) and the 2^-32 is applied last.
   Returns num / (1 + e) with its *scale; a_lo is a correction to |v| (the part
   of |v| below float precision, for callers that compute v in double). */
EM_HD_INLINE float em_sigmoid_parts(float a, float a_lo, int neg, float *scale) {
    float ac = a > 150.0f ? 150.0f : a;
    float es = em_exp_reduced(-ac, 32) * (1.0f - a_lo);
    float d = EM_MADF(es, 2.3283064365386963e-10f, 1.0f);
    *scale = neg ? 2.3283064365386963e-10f : 1.0f;
    return (neg ? es : 1.0f) / d;
}
EM_HD_INLINE float em_sigmoidf(float x) {
    float sc, r = em_sigmoid_parts(fabsf(x), 0.0f, x < 0.0f, &sc);
    return r * sc;
}
/* x * sigmoid(x), full precision down to the subnormal range */
EM_HD_INLINE float em_siluf(float x) {
    float sc, r = em_sigmoid_parts(fabsf(x), 0.0f, x < 0.0f, &sc);
    return (x * r) * sc;
}

EM_HD_INLINE float em_f32_from_bits(int32_t i) {
    float f;
    memcpy(&f, &i, 4);
    return f;
}
EM_HD_INLINE int32_t em_f32_bits(float f) {
    int32_t i;
    memcpy(&i, &f, 4);
    return i;
}

/* The float32 functions below are branch-free (every range computed, one
   selected) so the loops that call them vectorise; coefficients are Chebyshev
   fits (mpmath) of the smooth part each range leaves over. */

/* log: x = 2^e * m with m in [sqrt(1/2), sqrt(2)), log(m) = f - f^2/2 + f^3 g(f) */
EM_HD_INLINE float em_logf(float x) {
    int tiny = x < 1.17549435e-38f;
    float xs = tiny ? x * 8388608.0f : x;           /* subnormals: scale by 2^23 */
    int32_t ix = em_f32_bits(xs);
    int32_t e = ((ix >> 23) & 0xff) - 126;
    float m = em_f32_from_bits((ix & 0x007fffff) | 0x3f000000);   /* [0.5, 1) */
    int lo = m < 0.70710678118654752f;
    e = lo ? e - 1 : e;
    float f = (lo ? m + m : m) - 1.0f;
    float z = f * f;
    float g = -0.062015001190183347f;
    g = g * f + 0.10530864738938345f;
    g = g * f - 0.10646191638199634f;
    g = g * f + 0.1103778335905502f;
    g = g * f - 0.12450743320911726f;
    g = g * f + 0.14286524547786642f;
    g = g * f - 0.16668001523071928f;
    g = g * f + 0.20000010039684972f;
    g = g * f - 0.24999990275042185f;
    g = g * f + 0.33333333281199244f;
    float fe = (float)(tiny ? e - 23 : e);
    /* ln2 split in two so fe * hi is exact */
    float r = (f * z * g - fe * 2.12194440e-4f - 0.5f * z) + f + fe * 0.693359375f;
    /* special inputs told apart by their bits (float compares here stop GCC
       vectorising loops where x comes from another inlined kernel, e.g. exp) */
    int32_t bx = em_f32_bits(x);
    r = bx >= 0x7f800000 ? x : r;                    /* +inf, NaN */
    r = bx < 0 ? NAN : r;                            /* negative (and -NaN) */
    return (bx & 0x7fffffff) == 0 ? -INFINITY : r;   /* +-0 */
}

/* log1p without a division: 1 + x = 2^e m, m in [sqrt(1/2), sqrt(2)).  For e = 0
   (x in [-0.29, 0.41]) f = x exactly; otherwise f = m - 1 and the rounding error
   of 1 + x (nonzero only for x > 0.41, where the result is above 0.34) enters as
   c 2^-e (1 - f) ~ c 2^-e / (1 + f).  log1p(f) = f - f^2/2 + f^3 g(f) with
   em_logf's g; specials told apart by their bits (em_logf's reason) */
EM_HD_INLINE float em_log1pf(float x) {
    float u = 1.0f + x;
    int32_t iu = em_f32_bits(u);
    int32_t e = ((iu >> 23) & 0xff) - 126;
    float m = em_f32_from_bits((iu & 0x007fffff) | 0x3f000000);   /* [0.5, 1) */
    int lo = m < 0.70710678118654752f;
    e = lo ? e - 1 : e;
    m = lo ? m + m : m;
    int32_t ec = e > 126 ? 126 : e;
    float c = (x - (u - 1.0f)) * em_f32_from_bits((127 - ec) << 23);
    float f = e == 0 ? x : m - 1.0f;
    c = e == 0 ? 0.0f : c;
    float z = f * f;
    float g = -0.062015001190183347f;
    g = EM_MADF(g, f, 0.10530864738938345f);
    g = EM_MADF(g, f, -0.10646191638199634f);
    g = EM_MADF(g, f, 0.1103778335905502f);
    g = EM_MADF(g, f, -0.12450743320911726f);
    g = EM_MADF(g, f, 0.14286524547786642f);
    g = EM_MADF(g, f, -0.16668001523071928f);
    g = EM_MADF(g, f, 0.20000010039684972f);
    g = EM_MADF(g, f, -0.24999990275042185f);
    g = EM_MADF(g, f, 0.33333333281199244f);
    float fe = (float)e;
    float t = EM_MADF(f * z, g, EM_MADF(-0.5f, z, EM_MADF(-c, f, c)));
    float r = (EM_MADF(fe, -2.12194440e-4f, t) + f) + fe * 0.693359375f;   /* ln2 in two parts */
    int32_t bx = em_f32_bits(x);
    r = (bx & 0x7fffffff) < 0x33000000 ? x : r;      /* |x| < 2^-25: x (keeps -0) */
    r = bx >= 0x7f800000 ? x : r;                    /* +inf, NaN */
    r = bx == (int32_t)0xbf800000 ? -INFINITY : r;   /* -1 */
    return x < -1.0f ? NAN : r;     /* a float compare: the bit tests' form stops GCC vectorising */
}

/* expm1: a polynomial for |x| < 1/2 (no cancellation), exp(x) - 1 beyond */
EM_HD_INLINE float em_expm1f(float x) {
    float h = 2.4905147741588965e-5f;
    h = h * x + 0.0001994487444158959f;
    h = h * x + 0.0013888791742246793f;
    h = h * x + 0.0083332361335218625f;
    h = h * x + 0.041666666801606746f;
    h = h * x + 0.16666666801683435f;
    float z = x * x;
    float p = x + x * (0.5f * x + z * h);           /* x + ... keeps -0 */
    float q = em_expf(x) - 1.0f;
    return fabsf(x) < 0.5f ? p : q;
}

/* erfc on a >= 1/2 (NaN passes through); *ex gets exp(-a^2) for the callers that
   need the Gaussian too. exp(-a^2) is formed from a^2 split
   in hi + lo so its error does not grow with a. */
EM_HD_INLINE float em_erfc_big(float a, float *ex) {
    float ac = a > 10.1f ? 10.1f : (a < 0.5f ? 0.5f : a);
    float hi = ac * ac, lo = fmaf(ac, ac, -hi);
    float e = em_expf(-hi) * (1.0f - lo);
    float s = ac - 1.5f;
    float rm = 2.7010295544227966e-6f;
    rm = rm * s - 9.2478184547559137e-6f;
    rm = rm * s + 2.203342270875705e-5f;
    rm = rm * s - 6.9673943913779427e-5f;
    rm = rm * s + 0.00022381970601530186f;
    rm = rm * s - 0.00066376328675481143f;
    rm = rm * s + 0.0018859843957089371f;
    rm = rm * s - 0.0051454160800347957f;
    rm = rm * s + 0.013377359884968337f;
    rm = rm * s - 0.032930973441478432f;
    rm = rm * s + 0.076151039177593186f;
    rm = rm * s - 0.16362291529234865f;
    rm = rm * s + 0.3215854164543175f;
    float inv = 1.0f / ac, t = inv * inv;            /* the tail in t = 1 / a^2 */
    float rt = -25.099417023319997f;
    rt = rt * t + 22.589238035063871f;
    rt = rt * t - 10.016113139993674f;
    rt = rt * t + 3.2548176229571109f;
    rt = rt * t - 1.0385418065373914f;
    rt = rt * t + 0.42265506514062485f;
    rt = rt * t - 0.28208854254708145f;
    rt = rt * t + 0.56418955349969228f;
    float r = ac < 2.5f ? rm : rt * inv;
    *ex = a > 10.1f ? 0.0f : e;
    r = a > 10.1f ? 0.0f : e * r;
    return a != a ? a : r;
}

/* erf(x) / x on |x| < 1 as a polynomial in x^2 */
EM_HD_INLINE float em_erf_small(float x) {
    float u = x * x;
    float p = 7.8758750626854883e-5f;
    p = p * u - 0.00080168642871658695f;
    p = p * u + 0.005189087423433974f;
    p = p * u - 0.026854212010626412f;
    p = p * u + 0.11283594715160218f;
    p = p * u - 0.37612626666720331f;
    p = p * u + 1.1283791658483509f;
    return x * p;
}

EM_HD_INLINE float em_erff(float x) {
    float ax = fabsf(x), ex;
    float big = copysignf(1.0f - em_erfc_big(ax, &ex), x);
    return ax < 1.0f ? em_erf_small(x) : big;
}

/* erfc(x); *ex = exp(-x^2) when |x| >= 1/2 */
EM_HD_INLINE float em_erfc2f(float x, float *ex) {
    float ax = fabsf(x);
    float c = em_erfc_big(ax, ex);
    float big = x < 0.0f ? 2.0f - c : c;
    return ax < 0.5f ? 1.0f - em_erf_small(x) : big;
}

EM_HD_INLINE float em_erfcf(float x) {
    float ex;
    return em_erfc2f(x, &ex);
}


/* sin and cos share one reduction, in double: n = round(x * 2/pi) and
   r = x - n pi/2 with pi/2 in two parts, the first of 33 bits so n * part1 is
   exact for |x| < EM_TRIG_MAX (callers use libm above it).  r keeps about 70
   bits however close x lies to a multiple of pi/2, and the double polynomials
   (fdlibm's __kernel_sindf/cosdf: |error| < 2^-34 on |r| <= pi/4) leave one
   float rounding: under 0.6 ulp for sin, cos and tan. */
#define EM_TRIG_MAX 1048576.0f
EM_HD_INLINE void em_sincosf_red(float x, double *sr, double *cr, int32_t *q) {
    double xd = x;
    /* round to nearest through the 1.5 * 2^52 shifter: no rint call, vectorises on any ISA */
    double n = xd * 0.63661977236758134308 + 6755399441055744.0;
    n = n - 6755399441055744.0;
    double r = (xd - n * 1.5707963267341256) - n * 6.077100506506192e-11;
    double z = r * r, w = z * z;
    double s = (r + r * z * EM_MAD(z, 0.008333329385889463, -0.16666666641626524))
               + r * z * w * EM_MAD(z, 2.718311493989822e-06, -0.00019839334836096632);
    double c = (EM_MAD(z, -0.499999997251031, 1.0) + w * 0.04166662332373906)
               + w * z * EM_MAD(z, 2.439044879627741e-05, -0.001388676377460993);
    *sr = s;
    *cr = c;
    *q = (int32_t)n;
}

EM_HD_INLINE float em_sinf(float x) {
    double s, c;
    int32_t q;
    em_sincosf_red(x, &s, &c, &q);
    double r = (q & 1) ? c : s;
    r = (q & 2) ? -r : r;
    return x == 0.0f ? x : (float)r;
}

EM_HD_INLINE float em_cosf(float x) {
    double s, c;
    int32_t q;
    em_sincosf_red(x, &s, &c, &q);
    double r = (q & 1) ? -s : c;
    return (float)((q & 2) ? -r : r);
}

EM_HD_INLINE float em_tanf(float x) {
    double s, c;
    int32_t q;
    em_sincosf_red(x, &s, &c, &q);
    double num = (q & 1) ? -c : s, den = (q & 1) ? s : c;   /* one division */
    return x == 0.0f ? x : (float)(num / den);
}

/* atan: reduce to |x| <= tan(pi/8) with atan(x) = pi/2 - atan(1/x) and
   pi/4 + atan((x-1)/(x+1)) */
EM_HD_INLINE float em_atanf(float x) {
    float a = fabsf(x);
    int big = a > 2.414213562373095f, mid = a > 0.4142135623730950f;
    float y0 = big ? 1.5707963267948966f : (mid ? 0.7853981633974483f : 0.0f);
    float t = big ? -1.0f / a : (mid ? (a - 1.0f) / (a + 1.0f) : a);
    float z = t * t;
    float p = 8.05374449538e-2f;
    p = p * z - 1.38776856032e-1f;
    p = p * z + 1.99777106478e-1f;
    p = p * z - 3.33329491539e-1f;
    float r = y0 + (p * z * t + t);
    return x != x ? x : copysignf(r, x);
}

/* asin on |x| <= 1/2 */
EM_HD_INLINE float em_asin_small(float x) {
    float z = x * x;
    float p = 4.2163199048e-2f;
    p = p * z + 2.4181311049e-2f;
    p = p * z + 4.5470025998e-2f;
    p = p * z + 7.4953002686e-2f;
    p = p * z + 1.6666752422e-1f;
    return p * z * x + x;
}

EM_HD_INLINE float em_asinf(float x) {
    float a = fabsf(x);
    float w = sqrtf(0.5f * (1.0f - (a > 1.0f ? 1.0f : a)));
    float big = 1.5707963267948966f - 2.0f * em_asin_small(w);
    float r = a > 0.5f ? copysignf(big, x) : em_asin_small(x);
    return (a > 1.0f || x != x) ? NAN : r;
}

EM_HD_INLINE float em_acosf(float x) {
    float a = fabsf(x);
    float w = sqrtf(0.5f * (1.0f - (a > 1.0f ? 1.0f : a)));
    float sw = 2.0f * em_asin_small(w);
    float big = x > 0.0f ? sw : 3.14159265358979323f - sw;
    float r = a > 0.5f ? big : 1.5707963267948966f - em_asin_small(x);
    return (a > 1.0f || x != x) ? NAN : r;
}

/* exp(a)/2 for a >= 0 with one exp: the halving goes into the exponent, so it
   stays finite up to where cosh itself overflows */
EM_HD_INLINE float em_half_expf(float a) {
    float r = em_exp_reduced(a > 89.41598f ? 89.41598f : a, -1);
    return a > 89.41598f ? INFINITY : r;
}

EM_HD_INLINE float em_coshf(float x) {
    float h = em_half_expf(fabsf(x));
    float r = h + 0.25f / h;
    return x != x ? x : r;
}

EM_HD_INLINE float em_sinhf(float x) {
    float a = fabsf(x), z = x * x;
    float p = 2.03721912945e-4f;
    p = p * z + 8.33028376239e-3f;
    p = p * z + 1.66667160211e-1f;
    float small = p * z * x + x;
    float h = em_half_expf(a);
    float big = h - 0.25f / h;
    return a < 1.0f ? small : (x != x ? x : copysignf(big, x));
}

/* ---- float32 special functions evaluated in double, rounded once ------------
   Branch-free so their loops vectorise in double; the error before the final
   rounding is ~1e-15 relative, so the float32 result is the correctly rounded
   one except in near-ties. */

EM_HD_INLINE double em_f64_from_bits(int64_t i) {
    double d;
    memcpy(&d, &i, 8);
    return d;
}
EM_HD_INLINE int64_t em_f64_bits(double d) {
    int64_t i;
    memcpy(&i, &d, 8);
    return i;
}

/* log of a positive, finite, normal double (callers guarantee it): x = 2^e m with
   m in [sqrt(1/2), sqrt(2)) and fdlibm's log(1 + f) polynomial in s = f / (2 + f).
   e becomes a double through the 2^52 bias, which needs no int64 conversion. */
EM_HD_INLINE double em_log_posd(double x) {
    const int64_t c = 0x3fe6a09e667f3bcdLL;                 /* bits of sqrt(1/2) */
    int64_t ix = em_f64_bits(x) + (0x3ff0000000000000LL - c);
    double e = em_f64_from_bits(0x4330000000000000LL | (int64_t)((uint64_t)ix >> 52)) -
               (4503599627370496.0 + 1023.0);
    double f = em_f64_from_bits((ix & 0x000fffffffffffffLL) + c) - 1.0;
    double s = f / (2.0 + f), z = s * s, w = z * z;
    double t1 = w * (3.999999999940941908e-01 +
                     w * (2.222219843214978396e-01 + w * 1.531383769920937332e-01));
    double t2 = z * (6.666666666666735130e-01 +
                     w * (2.857142874366239149e-01 +
                          w * (1.818357216161805012e-01 + w * 1.479819860511658591e-01)));
    double hfsq = 0.5 * f * f;
    return e * 6.93147180369123816490e-01 -
           ((hfsq - (s * (hfsq + t1 + t2) + e * 1.90821492927058770002e-10)) - f);
}

/* erfinv of a float32: M. Giles' double-precision approximation ("Approximating
   the erfinv function", GPU Computing Gems Jade, 2011).  For float32 input
   w = -log(1 - y^2) < 16, so his first two ranges cover every y with |y| < 1:
   w < 6.25 (|y| < 0.99903) and the tail. */
EM_HD_INLINE double em_erfinv_w(double y) {
    double t = (1.0 - y) * (1.0 + y);                       /* exact for float y */
    return -em_log_posd(t > 0.0 ? t : 1.0);
}
EM_HD_INLINE double em_erfinv_mid(double w) {
    double a = w - 3.125, p = -3.6444120640178196996e-21;
    p = EM_MAD(p, a, -1.685059138182016589e-19);
    p = EM_MAD(p, a, 1.2858480715256400167e-18);
    p = EM_MAD(p, a, 1.115787767802518096e-17);
    p = EM_MAD(p, a, -1.333171662854620906e-16);
    p = EM_MAD(p, a, 2.0972767875968561637e-17);
    p = EM_MAD(p, a, 6.6376381343583238325e-15);
    p = EM_MAD(p, a, -4.0545662729752068639e-14);
    p = EM_MAD(p, a, -8.1519341976054721522e-14);
    p = EM_MAD(p, a, 2.6335093153082322977e-12);
    p = EM_MAD(p, a, -1.2975133253453532498e-11);
    p = EM_MAD(p, a, -5.4154120542946279317e-11);
    p = EM_MAD(p, a, 1.051212273321532285e-09);
    p = EM_MAD(p, a, -4.1126339803469836976e-09);
    p = EM_MAD(p, a, -2.9070369957882005086e-08);
    p = EM_MAD(p, a, 4.2347877827932403518e-07);
    p = EM_MAD(p, a, -1.3654692000834678645e-06);
    p = EM_MAD(p, a, -1.3882523362786468719e-05);
    p = EM_MAD(p, a, 0.0001867342080340571352);
    p = EM_MAD(p, a, -0.00074070253416626697512);
    p = EM_MAD(p, a, -0.0060336708714301490533);
    p = EM_MAD(p, a, 0.24015818242558961693);
    p = EM_MAD(p, a, 1.6536545626831027356);
    return p;
}
EM_HD_INLINE double em_erfinv_tail(double w) {
    double b = sqrt(w) - 3.25, q = 2.2137376921775787049e-09;
    q = EM_MAD(q, b, 9.0756561938885390979e-08);
    q = EM_MAD(q, b, -2.7517406297064545428e-07);
    q = EM_MAD(q, b, 1.8239629214389227755e-08);
    q = EM_MAD(q, b, 1.5027403968909827627e-06);
    q = EM_MAD(q, b, -4.013867526981545969e-06);
    q = EM_MAD(q, b, 2.9234449089955446044e-06);
    q = EM_MAD(q, b, 1.2475304481671778723e-05);
    q = EM_MAD(q, b, -4.7318229009055733981e-05);
    q = EM_MAD(q, b, 6.8284851459573175448e-05);
    q = EM_MAD(q, b, 2.4031110387097893999e-05);
    q = EM_MAD(q, b, -0.0003550375203628474796);
    q = EM_MAD(q, b, 0.00095328937973738049703);
    q = EM_MAD(q, b, -0.0016882755560235047313);
    q = EM_MAD(q, b, 0.0024914420961078508066);
    q = EM_MAD(q, b, -0.0037512085075692412107);
    q = EM_MAD(q, b, 0.005370914553590063617);
    q = EM_MAD(q, b, 1.0052589676941592334);
    q = EM_MAD(q, b, 3.0838856104922207635);
    return q;
}
/* |y| <= 0.999 only (a vector loop's common case; em_erfinvf covers the rest) */
EM_HD_INLINE float em_erfinvf_mid(float yf) {
    double y = yf;
    return (float)(em_erfinv_mid(em_erfinv_w(y)) * y);
}
EM_HD_INLINE float em_erfinvf(float yf) {
    double y = yf, w = em_erfinv_w(y);
    double r = (w < 6.25 ? em_erfinv_mid(w) : em_erfinv_tail(w)) * y;
    double ay = fabs(y);
    r = ay == 1.0 ? copysign((double)INFINITY, y) : r;
    return (float)(ay > 1.0 || y != y ? (double)NAN : r);
}

/* lgamma of a float32 in (0, inf) (other inputs: the caller's slow path).
   Near the zeros at 1 and 2 the Taylor series of lgamma(2 + z), |z| <= 0.3
   (coefficients (-1)^k (zeta(k) - 1) / k), with lgamma(x) = lgamma(x + 1) - log(x)
   near 1; elsewhere an argument below 10 is raised by 10 through the recurrence
   (one product, one log) and Stirling's series takes over. */
EM_HD_INLINE float em_lgammaf_pos(float xf) {
    double x = xf, lo = x < 10.0;
    double pr = x * (x + 1.0) * (x + 2.0) * (x + 3.0) * (x + 4.0) * (x + 5.0) * (x + 6.0) *
                (x + 7.0) * (x + 8.0) * (x + 9.0);
    double xs = lo ? x + 10.0 : x;
    pr = lo ? pr : 1.0;
    double r = 1.0 / xs, r2 = r * r;
    double st = r * (1.0 / 12 + r2 * (-1.0 / 360 + r2 * (1.0 / 1260 + r2 * (-1.0 / 1680 +
                r2 * (1.0 / 1188 + r2 * (-691.0 / 360360 + r2 * (1.0 / 156)))))));
    /* one log serves both ranges: of the product, or of x near 1 */
    int near1 = fabs(x - 1.0) <= 0.3;
    double lp = em_log_posd(near1 ? x : pr);
    double big = (xs - 0.5) * em_log_posd(xs) - xs + 0.91893853320467274178 + st - lp;
    double z = near1 ? x - 1.0 : x - 2.0, c = 4.76981016936398056576e-8;
    c = c * z - 1.00432248239680996087e-7;
    c = c * z + 2.12071848055546658692e-7;
    c = c * z - 4.49246919876456604329e-7;
    c = c * z + 9.55141213040741983286e-7;
    c = c * z - 2.03921575380136623678e-6;
    c = c * z + 4.37486678990748780418e-6;
    c = c * z - 9.43948827526839590399e-6;
    c = c * z + 2.05072127756706915532e-5;
    c = c * z - 4.49262367381331417002e-5;
    c = c * z + 9.94575127818085337146e-5;
    c = c * z - 2.23154758453579379761e-4;
    c = c * z + 5.09669524743042422336e-4;
    c = c * z - 1.19275391170326097711e-3;
    c = c * z + 2.89051033074152328575e-3;
    c = c * z - 7.38555102867398526627e-3;
    c = c * z + 2.0580808427784547879e-2;
    c = c * z - 6.73523010531980951332e-2;
    c = c * z + 3.22467033424113218236e-1;
    c = c * z + 4.22784335098467139393e-1;
    double ser = c * z - (near1 ? lp : 0.0);
    return (float)(near1 || fabs(x - 2.0) <= 0.3 ? ser : big);
}

/* ---- double exp/log that vectorise (float64 loops, and float32 functions
   evaluated in double to leave one rounding) ---- */

/* (e^r - 1 - r) / r^2, the degree-13 Taylor polynomial of e^r less its first two
   terms, for |r| <= ln2/2 */
EM_HD_INLINE double em_exp_taylor_d(double r) {
    double p = 1.6059043836821613e-10;
    p = EM_MAD(p, r, 2.08767569878681e-09);
    p = EM_MAD(p, r, 2.505210838544172e-08);
    p = EM_MAD(p, r, 2.755731922398589e-07);
    p = EM_MAD(p, r, 2.7557319223985893e-06);
    p = EM_MAD(p, r, 2.48015873015873e-05);
    p = EM_MAD(p, r, 0.0001984126984126984);
    p = EM_MAD(p, r, 0.001388888888888889);
    p = EM_MAD(p, r, 0.008333333333333333);
    p = EM_MAD(p, r, 0.041666666666666664);
    p = EM_MAD(p, r, 0.16666666666666666);
    p = EM_MAD(p, r, 0.5);
    return p;
}

/* exp(x) 2^k: n = round(x / ln2) through the 1.5 * 2^52 shifter (n read from its
   low bits), r = x - n ln2 in two parts (the first of 32 bits, so n * hi is
   exact), a degree-13 Taylor polynomial on |r| <= ln2/2 (truncation 4e-18), and
   2^n as two factors so gradual underflow and overflow come out right */
EM_HD_INLINE double em_exp_reduced_d(double xc, int64_t k) {
    double kd = xc * 1.4426950408889634 + 6755399441055744.0;
    int64_t n = em_f64_bits(kd) - 0x4338000000000000LL + k;
    double fn = kd - 6755399441055744.0;
    double r = (xc - fn * 6.93147180369123816490e-01) - fn * 1.90821492927058770002e-10;
    double p = em_exp_taylor_d(r);
    p = EM_MAD(p, r * r, r) + 1.0;
    int64_t n1 = n >> 1, n2 = n - n1;
    return p * em_f64_from_bits((n1 + 1023) << 52) * em_f64_from_bits((n2 + 1023) << 52);
}

/* exp(x) for -708 <= x <= 709 (normal results; callers guarantee the range):
   em_exp_reduced_d's polynomial with 2^n added to the exponent bits */
EM_HD_INLINE double em_exp_normal_d(double x) {
    double kd = x * 1.4426950408889634 + 6755399441055744.0;
    int64_t n = em_f64_bits(kd) - 0x4338000000000000LL;
    double fn = kd - 6755399441055744.0;
    double r = (x - fn * 6.93147180369123816490e-01) - fn * 1.90821492927058770002e-10;
    double p = EM_MAD(em_exp_taylor_d(r), r * r, r) + 1.0;
    return em_f64_from_bits(em_f64_bits(p) + (int64_t)((uint64_t)n << 52));
}

EM_HD_INLINE double em_exp_d(double x) {
    double xc = x > 710.0 ? 710.0 : (x < -746.0 ? -746.0 : x);
    double r = em_exp_reduced_d(xc, 0);
    return x != x ? x : r;
}

/* log: x = 2^e m, m in [sqrt(1/2), sqrt(2)), f = m - 1, s = f / (2 + f) and
   log(m) = f - f^2/2 + s (f^2/2 + R(s^2)) with fdlibm's e_log.c polynomial
   (|error| < 2^-58.45).  The core returns f, with e, f^2/2 and s (f^2/2 + R)
   (finite x > 0 only), so callers combine them in fdlibm's order. */
EM_HD_INLINE double em_log_core_d(double x, double *fe, double *hf, double *sr) {
    int tiny = x < 2.2250738585072014e-308;
    double xs = tiny ? x * 18014398509481984.0 : x;          /* subnormals: 2^54 */
    int64_t ix = em_f64_bits(xs);
    int64_t e = ((ix >> 52) & 0x7ff) - 1023;
    double m = em_f64_from_bits((ix & 0x000fffffffffffffLL) | 0x3ff0000000000000LL);   /* [1, 2) */
    int hi = m > 1.4142135623730951;
    m = hi ? 0.5 * m : m;
    e = hi ? e + 1 : e;
    /* e as a double through the 2^52 bias (exact; AVX2 has no int64 -> double) */
    *fe = em_f64_from_bits(0x4330000000000000LL + ((tiny ? e - 54 : e) + 2048)) -
          (4503599627370496.0 + 2048.0);
    double f = m - 1.0;
    double s = f / (2.0 + f), z = s * s, w = z * z;
    double t1 = w * EM_MAD(w, EM_MAD(w, 1.531383769920937332e-01, 2.222219843214978396e-01), 3.999999999940941908e-01);
    double t2 = z * EM_MAD(w, EM_MAD(w, EM_MAD(w, 1.479819860511658591e-01, 1.818357216161805012e-01), 2.857142874366239149e-01), 6.666666666666735130e-01);
    double hfsq = 0.5 * f * f;
    *hf = hfsq;
    *sr = s * (hfsq + t1 + t2);
    return f;
}
/* +inf and NaN pass, negative gives NaN, +-0 gives -inf */
EM_HD_INLINE double em_log_special_d(double x, double r) {
    int64_t bx = em_f64_bits(x);
    r = bx >= 0x7ff0000000000000LL ? x : r;
    r = bx < 0 ? NAN : r;
    return (bx & 0x7fffffffffffffffLL) == 0 ? -INFINITY : r;
}
EM_HD_INLINE double em_log_d(double x) {
    double fe, hf, sr, f = em_log_core_d(x, &fe, &hf, &sr);
    /* ln2 in two parts, the first of 32 bits so fe * hi is exact */
    double r = fe * 6.93147180369123816490e-01 - ((hf - (sr + fe * 1.90821492927058770002e-10)) - f);
    return em_log_special_d(x, r);
}
/* the exponent enters exactly: log2 of a power of two is exact */
EM_HD_INLINE double em_log2_d(double x) {
    double fe, hf, sr, f = em_log_core_d(x, &fe, &hf, &sr);
    return em_log_special_d(x, fe + (f - (hf - sr)) * 1.4426950408889634);
}

/* log1p via log(1 + x) plus the rounding error of 1 + x, divided by 1 + x */
EM_HD_INLINE double em_log1p_d(double x) {
    double u = 1.0 + x, d = u - 1.0;
    double c = (x - d) / (u == 0.0 ? 1.0 : u);
    double r = em_log_d(u) + c;
    r = d == 0.0 ? x : r;
    return x == INFINITY ? x : r;
}

/* float asinh / acosh / atanh through double log1p: one float rounding left */
EM_HD_INLINE float em_asinhf(float x) {
    double a = fabs((double)x), a2 = a * a;
    /* above 2^60 the 1 under the root is below double precision (and inf stays inf) */
    double r = em_log1p_d(a > 1.152921504606847e18 ? a + a : a + a2 / (1.0 + sqrt(1.0 + a2)));
    return (float)copysign(r, (double)x);
}
EM_HD_INLINE float em_acoshf(float x) {
    double xd = x;
    double r = em_log1p_d((xd - 1.0) + sqrt((xd - 1.0) * (xd + 1.0)));
    return xd < 1.0 ? NAN : (float)r;               /* (x - 1)(x + 1) > 0 for x < -1 too */
}
EM_HD_INLINE float em_atanhf(float x) {
    double xd = x;
    return (float)(0.5 * em_log1p_d(2.0 * xd / (1.0 - xd)));
}
/* float64 asinh / acosh / atanh from log1p (a few ulps; libm-free so they vectorise) */
EM_HD_INLINE double em_asinh_d(double x) {
    double a = fabs(x), a2 = a * a;
    double r = a > 268435456.0 ? em_log_d(a) + 0.6931471805599453
                               : em_log1p_d(a + a2 / (1.0 + sqrt(1.0 + a2)));
    return copysign(r, x);
}
EM_HD_INLINE double em_acosh_d(double x) {
    double r = x > 268435456.0 ? em_log_d(x) + 0.6931471805599453
                               : em_log1p_d((x - 1.0) + sqrt((x - 1.0) * (x + 1.0)));
    return x < 1.0 ? NAN : r;
}
/* ==== vectorised float32 math, float-only ====================================
   Kept apart from the functions above: these evaluate in float at full vector
   width (no double steps), for the CPU loops of ew_impl.h. */

/* exp(-w/2) for w = u^2, u = |x| <= 6.5, as 2^n (1 + s2/2): returns s2 (|s2| < 0.84)
   and *nb = n << 23 (to add to a float's bits).  w's rounding error
   l = u^2 - w (exact through FMA) enters the reduced argument r2 = 2r, so the
   result keeps float precision however large w is; expm1 is a degree-6 fit on
   |r| <= ln2/2 (absolute error 3e-9), which the callers multiply in with one FMA:
   y exp(-w/2) = 2^n fma(y/2, s2, y). */
EM_HD_INLINE float em_gauss_expm1_vf(float u, float w, int32_t *nb) {
    float l = fmaf(u, u, -w);
    float kf = EM_MADF(w, -0.72134752044448170f, 12582912.0f);   /* 1.5 * 2^23 + n */
    float nf = kf - 12582912.0f;
    float r2 = EM_MADF(nf, -1.38671875f, -w);                      /* exact */
    r2 = r2 + EM_MADF(nf, 4.24388880e-4f, -l);                     /* one rounding */
    float q = 4.354925113148056e-05f;
    q = EM_MADF(q, r2, 0.0005230681854300201f);
    q = EM_MADF(q, r2, 0.005208306945860386f);
    q = EM_MADF(q, r2, 0.041666291654109955f);
    q = EM_MADF(q, r2, 0.25f);
    *nb = em_f32_bits(kf) << 23;
    return EM_MADF(q, r2 * r2, r2);
}

/* Exact gelu over all x, in one branch-free form: with u = |x| and Q = Phi(-u),
   gelu(x) = x - u Q for x > 0 and -u Q otherwise (no cancellation: the result is
   at least x/2 for x > 0).  Q = exp(-u^2/2) H(u) with H(u) = erfcx(u/sqrt 2)/2;
   H/2 is a (4,5) rational in u, P/Q with float coefficients (mpmath, Lawson;
   relative error 2^-25.8 on [0, 14.6]), evaluated in Estrin order over w = u^2 with
   the last step in u, so small u keeps few roundings.  The Gaussian is
   2^n (1 + s2/2): -u^2 - 2n ln2 in one FMA rounding (u^2 exact inside it), expm1's
   degree-6 fit of em_gauss_expm1_vf.  The magic constant leaves n + 447 in kf's
   low bits, so one shift gives -2^(n+64), sign included; u is clamped to
   16.265625, where n = -191 and that factor is -0.  The result -u Q 2^64 then
   rounds once in fma(y, 2^-64, x or x*0): the far tail rounds once into the
   subnormals (-0 past them, as torch), zeros keep their sign, +inf stays +inf
   and -inf gives NaN (inf * 0, as torch); NaN passes. */
/* without FMA (the generic table) the multiply-adds run in double, which rounds
   each as FMA does but for a rare double rounding: the last one must round once */
#define EM_GELU_MAD(a, b, c) \
    (EM_FMA_OK ? fmaf((a), (b), (c)) : (float)((double)(a) * (double)(b) + (double)(c)))
EM_HD_INLINE float em_gelu_vf(float x) {
    float u = fabsf(x);
    int32_t ub = em_f32_bits(u);
    float uc = em_f32_from_bits(ub < 0x41822000 ? ub : 0x41822000);   /* min(u, 16.265625) */
    float w = uc * uc;
    float p34 = EM_GELU_MAD(0.0020465117f, uc, 0.020245956f);
    float p12 = EM_GELU_MAD(0.09141945f, uc, 0.218898f);
    float p = EM_GELU_MAD(EM_GELU_MAD(p34, w, p12), uc, 0.25f);
    float q12 = EM_GELU_MAD(1.2009152f, uc, 1.6734768f);
    float q34 = EM_GELU_MAD(0.101504676f, uc, 0.46841764f);
    float q = EM_GELU_MAD(EM_GELU_MAD(EM_GELU_MAD(0.010259568f, w, q34), w, q12), uc, 1.0f);
    float hh = p / q;
    float kf = EM_GELU_MAD(w, -0.72134752044448170f, 12583359.0f);    /* 1.5 2^23 + 447 + n */
    float nf = kf - 12583359.0f;
    float r2 = EM_GELU_MAD(-uc, uc, nf * -1.38671875f);                 /* exact product inside */
    r2 = EM_GELU_MAD(nf, 4.24388880e-4f, r2);
    float rr = r2 * r2;
    float e01 = EM_GELU_MAD(0.041666291654109955f, r2, 0.25f);
    float e23 = EM_GELU_MAD(0.0005230681854300201f, r2, 0.005208306945860386f);
    float s2 = EM_GELU_MAD(EM_GELU_MAD(EM_GELU_MAD(4.354925113148056e-05f, rr, e23), rr, e01), rr, r2);
    float sc = em_f32_from_bits((int32_t)((uint32_t)em_f32_bits(kf) << 23));   /* -2^(n+64) */
    float y = uc * (EM_GELU_MAD(hh, s2, hh + hh) * sc);
    float xp = x > 0.0f ? x : x * 0.0f;                         /* x > 0, else -0 or NaN */
    return EM_GELU_MAD(y, 5.421010862427522e-20f, xp);
}

#define EM_GELU_A 0.4939231872558594f
/* d gelu / dx = Phi(x) + x phi(x) over all x.  |x| < A: 1/2 + x P2(x^2).
   Beyond: Phi(-u) - u phi(u) = exp(-u^2/2) D(u) and Phi(u) + u phi(u) = 1 - that,
   with D(u) = R(u) - u / sqrt(2 pi), R(u) = erfcx(u/sqrt 2)/2; R/2 is a degree-8
   polynomial in t = (u - A)/(u + 4), fitted (mpmath, Lawson) to u = 14.6, past which
   the result rounds to zero, weighted by 1/(|D| + R): D keeps float precision in the
   tail and the terms' size where they cancel (x near -0.75).  The Gaussian's 2^n is
   applied as 2^(n+64) 2^-64, so the tail rounds once into the subnormals.  +-inf give NaN (inf * phi(inf), as torch); NaN passes. */
EM_HD_INLINE float em_gelu_grad_vf(float x) {
    float u = fabsf(x), z = x * x;
    float p = EM_MADF(z, 0.00126621313393116f, -0.009583023376762867f);
    p = EM_MADF(p, z, 0.05985824018716812f);
    p = EM_MADF(p, z, -0.26596271991729736f);
    p = EM_MADF(p, z, 0.7978845834732056f);
    float small = EM_MADF(x, p, 0.5f);
    float uc = u > 14.6f ? 14.6f : u;
    float t = (uc - EM_GELU_A) / (uc + 4.0f), s = t - 0.37919560074806213f;
    float v = -0.003926887642592192f;
    v = EM_MADF(v, s, 0.02026447467505932f);
    v = EM_MADF(v, s, -0.000814133498352021f);
    v = EM_MADF(v, s, -0.07720469683408737f);
    v = EM_MADF(v, s, 0.17773130536079407f);
    v = EM_MADF(v, s, -0.24156145751476288f);
    v = EM_MADF(v, s, 0.23632270097732544f);
    v = EM_MADF(v, s, -0.1771995723247528f);
    v = EM_MADF(v, s, 0.05689467489719391f);
    float d = EM_MADF(uc, -0.19947114020071635f, v);
    int32_t nb;
    float s2 = em_gauss_expm1_vf(uc, uc * uc, &nb);
    float ed = (EM_MADF(d, s2, d + d) * em_f32_from_bits(nb + 0x5f800000)) * 5.421010862427522e-20f;
    float big = x > 0.0f ? 1.0f - ed : ed;
    big = u == INFINITY ? NAN : big;
    big = x != x ? x : big;
    return u < EM_GELU_A ? small : big;
}

/* exact gelu and its derivative over all x (CUDA and generated code call these) */
EM_HD_INLINE float em_geluf(float x) { return em_gelu_vf(x); }
EM_HD_INLINE float em_gelu_gradf(float x) { return em_gelu_grad_vf(x); }

/* float32 hypot in double: the squares are exact there and their sum rounds once,
   so the root rounds to float within 0.5 ulp (plus double rounding's 2^-29); no
   overflow or underflow to guard against.  An infinity wins over NaN, as C. */
EM_HD_INLINE float em_hypotf(float a, float b) {
    double ad = a, bd = b;
    float r = (float)sqrt(ad * ad + bd * bd);
    return (fabsf(a) == INFINITY) | (fabsf(b) == INFINITY) ? INFINITY : r;
}

/* float64 sin / cos / tan that vectorise (|x| < EM_TRIG_D_MAX; the loops call
   libm above it): Cody-Waite reduction by pi/2 in three
   33-bit parts (every product n * part exact for |n| < 2^20) with the remainder
   carried as hi + lo (TwoSum), and fdlibm's __kernel_sin / __kernel_cos
   polynomials on |r| <= pi/4 (error < 2^-58), which take the lo part. */
#define EM_TRIG_D_MAX 1.6e6      /* n = round(x 2/pi) < 2^20 */
EM_HD_INLINE double em_twosum_err(double a, double b, double s) {
    double bb = s - a;
    return (a - (s - bb)) + (b - bb);
}
EM_HD_INLINE void em_trig_red_d(double x, double *rh, double *rl, int64_t *q) {
    double kd = x * 0.63661977236758134308 + 6755399441055744.0;
    double n = kd - 6755399441055744.0;
    *q = em_f64_bits(kd);
    double r0 = x - n * 1.57079632673412561417e+00;          /* exact */
    double p2 = -n * 6.07710050630396597660e-11;              /* exact */
    double r1 = r0 + p2, e1 = em_twosum_err(r0, p2, r1);
    double p3 = -n * 2.02226624871116645580e-21;              /* exact */
    double r2 = r1 + p3, e2 = em_twosum_err(r1, p3, r2);
    double lo = (e1 + e2) - n * 8.47842766036889956997e-32;
    double h = r2 + lo;
    *rh = h;
    *rl = lo - (h - r2);
}
EM_HD_INLINE double em_ksin_d(double x, double y) {
    double z = x * x, v = z * x;
    double r = EM_MAD(z, EM_MAD(z, EM_MAD(z, EM_MAD(z, 1.58969099521155010221e-10, -2.50507602534068634195e-08),
                      2.75573137070700676789e-06), -1.98412698298579493134e-04), 8.33333333332248946124e-03);
    return x - ((z * (0.5 * y - v * r) - y) - v * -1.66666666666666324348e-01);
}
EM_HD_INLINE double em_kcos_d(double x, double y) {
    double z = x * x;
    double r = z * EM_MAD(z, EM_MAD(z, EM_MAD(z, EM_MAD(z, EM_MAD(z, -1.13596475577881948265e-11, 2.08757232129817482790e-09),
                      -2.75573143513906633035e-07), 2.48015872894767294178e-05), -1.38888888888741095749e-03), 4.16666666666666019037e-02);
    double hz = 0.5 * z, w = 1.0 - hz;
    return w + (((1.0 - w) - hz) + (z * r - x * y));
}
EM_HD_INLINE double em_sin_vd(double x) {
    double h, l; int64_t q;
    em_trig_red_d(x, &h, &l, &q);
    double s = em_ksin_d(h, l), c = em_kcos_d(h, l);
    double r = (q & 1) ? c : s;
    r = (q & 2) ? -r : r;
    return x == 0.0 ? x : r;
}
EM_HD_INLINE double em_cos_vd(double x) {
    double h, l; int64_t q;
    em_trig_red_d(x, &h, &l, &q);
    double s = em_ksin_d(h, l), c = em_kcos_d(h, l);
    double r = (q & 1) ? -s : c;
    return (q & 2) ? -r : r;
}
/* tan(x + y) on |x + y| <= pi/4 (k = +1) or -1/tan (k = -1): fdlibm's __kernel_tan,
   branch-free: above 0.6744 it works on pi/4 - x, and -1/tan is formed with a
   split divisor so the division's rounding does not reach the result */
EM_HD_INLINE double em_ktan_d(double x, double y, int odd) {
    int big = fabs(x) >= 0.6743316650390625;
    double sg = x < 0.0 ? -1.0 : 1.0;
    double xa = big ? sg * x : x, ya = big ? sg * y : y;
    double z0 = 7.85398163397448278999e-01 - xa, w0 = 3.06161699786838301793e-17 - ya;
    x = big ? z0 + w0 : x;
    y = big ? 0.0 : y;
    double z = x * x, w = z * z;
    double r = EM_MAD(w, EM_MAD(w, EM_MAD(w, EM_MAD(w, EM_MAD(w, -1.85586374855275456654e-05, 7.81794442939557092300e-05),
                      5.88041240820264096874e-04), 3.59207910759131235356e-03), 2.18694882948595424599e-02), 1.33333333333201242699e-01);
    double v = z * EM_MAD(w, EM_MAD(w, EM_MAD(w, EM_MAD(w, EM_MAD(w, 2.59073051863633712884e-05, 7.14072491382608190305e-05),
                      2.46463134818469906812e-04), 1.45620945432529025516e-03), 8.86323982359930005737e-03), 5.39682539762260521377e-02);
    double s = z * x;
    r = y + z * (s * (r + v) + y);
    r += 3.33333333333334091986e-01 * s;
    w = x + r;
    double vk = odd ? -1.0 : 1.0;
    double bigr = sg * (vk - 2.0 * (x - (w * w / (w + vk) - r)));
    /* -1/(x + r) accurately: w split in two, the remainder carried */
    double zz = em_f64_from_bits(em_f64_bits(w) & (int64_t)0xffffffff00000000ULL);
    double vv = r - (zz - x);
    double a = -1.0 / w;
    double t = em_f64_from_bits(em_f64_bits(a) & (int64_t)0xffffffff00000000ULL);
    double ss = 1.0 + t * zz;
    double inv = t + a * (ss + t * vv);
    return big ? bigr : (odd ? inv : w);
}
EM_HD_INLINE double em_tan_vd(double x) {
    double h, l; int64_t q;
    em_trig_red_d(x, &h, &l, &q);
    double r = em_ktan_d(h, l, (int)(q & 1));
    return x == 0.0 ? x : r;
}

/* a b - p exactly for p = fl(a b) (FMA; without it Dekker's product), and
   n - q d exactly for q = fl(n / d) */
EM_HD_INLINE double em_prod_err_d(double a, double b, double p) {
#if EM_FMA_OK
    return fma(a, b, -p);
#else
    const double sp = 134217729.0;                         /* 2^27 + 1 */
    double ta = a * sp, ah = ta - (ta - a), al = a - ah;
    double tb = b * sp, bh = tb - (tb - b), bl = b - bh;
    return ((ah * bh - p) + ah * bl + al * bh) + al * bl;
#endif
}
EM_HD_INLINE double em_rem_d(double n, double q, double d) {
#if EM_FMA_OK
    return fma(-q, d, n);
#else
    double p = q * d;
    return (n - p) - em_prod_err_d(q, d, p);                /* n - p exact: p ~ n */
#endif
}

/* ---- float64 functions built on exp and log carried in two parts ------------
   Each result is formed from an unevaluated sum hi + lo (TwoSum / FMA products)
   up to its last operation, so the error stays below one ulp; every branch is
   computed and one selected, so the float64 loops vectorise. */

/* exp(hi + lo) = 2^n (1 + qh + ql) for |hi + lo| <= 746 (callers clamp):
   r = hi - n ln2_hi is exact, the rest of the argument is added with its
   rounding error carried, and the degree-13 Taylor polynomial of em_exp_reduced_d
   gives q = r + r^2 p with the rounding of r^2 p carried in ql */
EM_HD_INLINE double em_exp_q_d(double hi, double lo, int64_t *n, double *ql) {
    double kd = (hi + lo) * 1.4426950408889634 + 6755399441055744.0;
    *n = em_f64_bits(kd) - 0x4338000000000000LL;
    double fn = kd - 6755399441055744.0;
    double r0 = hi - fn * 6.93147180369123816490e-01;              /* exact */
    double t = lo - fn * 1.90821492927058770002e-10;
    double r = r0 + t, rl = em_twosum_err(r0, t, r);
    double p = em_exp_taylor_d(r);
    double r2 = r * r, r2l = em_prod_err_d(r, r, r2);
    double t2 = p * r2;
    double q = r + t2;
    /* (1 + q) e^rl - 1 - q, to first order, and the roundings of r^2 and r + t2 */
    *ql = em_twosum_err(r, t2, q) + em_prod_err_d(p, r2, t2) + p * r2l + EM_MAD(rl, q, rl);
    return q;
}
/* v 2^n for |n| <= 2100, in two exact factors (one rounding if the result is subnormal) */
EM_HD_INLINE double em_ldexp_d(double v, int64_t n) {
    int64_t n1 = n >> 1, n2 = n - n1;
    return v * em_f64_from_bits((n1 + 1023) << 52) * em_f64_from_bits((n2 + 1023) << 52);
}

/* expm1(x) = 2^n ((1 - 2^-n) + q), 1 - 2^-n exact: returned as hi with *lo, for
   -40 <= x <= 709 (hi + lo exact to ~2^-60 relative) */
EM_HD_INLINE double em_expm1_dd(double x, double *lo) {
    int64_t n;
    double ql, q = em_exp_q_d(x, 0.0, &n, &ql);
    int64_t nc = n > 60 ? 60 : n;
    double tn = em_f64_from_bits((1023 - nc) << 52);
    double c = n > 53 ? 1.0 : 1.0 - tn;                        /* exact */
    double s = c + q, sl = em_twosum_err(c, q, s) + (ql - (n > 53 ? tn : 0.0));
    double h = s + sl;
    sl = sl - (h - s);
    double sc = em_f64_from_bits((nc + 1023) << 52);          /* n <= 60 here */
    *lo = sl * sc;
    return h * sc;
}
/* expm1(x) = 2^n ((1 - 2^-n) + q), q = e^r - 1 = r + r^2 p(r): 1 - 2^-n + r
   by Fast2Sum (|1 - 2^-n| >= |r| for n != 0, exact for n = 0), the rest added
   once, and n added to the exponent bits (the sum is normal unless n = 0, and
   the result stays normal: x is clamped to [-45, 709.79]) */
EM_HD_INLINE double em_expm1_vd(double x) {
    double xc = x > 709.79 ? 709.79 : (x < -45.0 ? -45.0 : x);
    double kd = xc * 1.4426950408889634 + 6755399441055744.0;
    int64_t n = em_f64_bits(kd) - 0x4338000000000000LL;
    double fn = kd - 6755399441055744.0;
    double r0 = xc - fn * 6.93147180369123816490e-01;              /* exact */
    double t = -fn * 1.90821492927058770002e-10;
    double r = r0 + t, rl = em_twosum_err(r0, t, r);
    /* q - r = r^2/2 (its rounding carried) + r^3 (1/6 + r/24 + ... + r^12/15!): the
       terms past exp's r^13 count where 1 - 2^-n + q cancels (n = 1, r < 0) */
    double p = 7.647163731819816e-13;
    p = EM_MAD(p, r, 1.1470745597729725e-11);
    p = EM_MAD(p, r, 1.6059043836821613e-10);
    p = EM_MAD(p, r, 2.08767569878681e-09);
    p = EM_MAD(p, r, 2.505210838544172e-08);
    p = EM_MAD(p, r, 2.755731922398589e-07);
    p = EM_MAD(p, r, 2.7557319223985893e-06);
    p = EM_MAD(p, r, 2.48015873015873e-05);
    p = EM_MAD(p, r, 0.0001984126984126984);
    p = EM_MAD(p, r, 0.001388888888888889);
    p = EM_MAD(p, r, 0.008333333333333333);
    p = EM_MAD(p, r, 0.041666666666666664);
    p = EM_MAD(p, r, 0.16666666666666666);
    double hr = 0.5 * r, h2 = hr * r, h2l = em_prod_err_d(hr, r, h2);
    int64_t nc = n > 1000 ? 1000 : n;
    double tn = em_f64_from_bits((1023 - nc) << 52);
    double c = 1.0 - tn, cl = (1.0 - c) - tn;                     /* 1 - 2^-n in two parts */
    double s = c + r, sl = (c - s) + r;
    double v = s + ((h2 + sl) + (EM_MAD(r * h2, 2.0 * p, h2l) + (cl + rl)));
    double res = em_f64_from_bits(em_f64_bits(v) + (int64_t)((uint64_t)n << 52));
    res = x > 709.782712893384 ? INFINITY : res;
    return (x == 0.0) | (x != x) ? x : res;
}

/* tanh: below 0.625 Cephes' x + x^3 P(x^2)/Q(x^2); above, u / (u + 2) with
   u = expm1(2|x|) and the division carried in two parts (+-1 from |x| = 19.1) */
EM_HD_INLINE double em_tanh_vd(double x) {
    double a = fabs(x), z = x * x;
    double p = EM_MAD(EM_MAD(-9.64399179425052238628e-1, z, -9.92877231001918586564e1), z,
                      -1.61468768441708447952e3);
    double q = EM_MAD(EM_MAD(z + 1.12811678491632931402e2, z, 2.23548839060100448583e3), z,
                      4.84406305325125486048e3);
    double small = EM_MAD(x * z, p / q, x);
    double ul, uh = em_expm1_dd(2.0 * (a > 20.0 ? 20.0 : a), &ul);
    double dh = uh + 2.0, dl = em_twosum_err(uh, 2.0, dh) + ul;
    double zh = uh / dh;
    double rem = em_rem_d(uh, zh, dh) + (ul - zh * dl);
    double big = copysign(zh + rem / dh, x);
    return x == 0.0 ? x : (a < 0.625 ? small : big);
}

/* sinh and cosh from one reduction and no division: |x| = n ln2 + r (r in two
   parts, |r| <= ln2/2) and e^(+-r) = C(r) +- S(r), C and S the even and odd halves of
   one Taylor series, so e^|x| = 2^n (C + S) and e^-|x| = 2^-n (C - S) share a single
   polynomial evaluation.  sinh = A e^r - B e^-r, cosh = A e^r + B e^-r with
   A = 2^(n-1), B = 2^(-n-1): from n = 1 on B e^-r is at most a third of the result,
   so e^r carried in two parts leaves one rounding.  For n = 0 the results are
   S(r) (sinh, with n forced to 0 below ln2 and S's series taken to r^17, so sinh
   never cancels) and 1 + (C - 1) (cosh).  Past n = 1000 A is halved and the
   result doubled, so finite results up to 710.47 do not overflow early. */
EM_HD_INLINE double em_sinhcosh_d(double x, int want_sinh) {
    double a = fabs(x);
    double ac = a > 710.5 ? 710.5 : a;
    double kd = ac * 1.4426950408889634 + 6755399441055744.0;
    int64_t n = em_f64_bits(kd) - 0x4338000000000000LL;
    double fn = kd - 6755399441055744.0;
    if (want_sinh) {
        int sm = ac < 0.6931471805599453;
        n = sm ? 0 : n;
        fn = sm ? 0.0 : fn;
    }
    double r0 = ac - fn * 6.93147180369123816490e-01;                 /* exact */
    double t = -fn * 1.90821492927058770002e-10;
    double r = r0 + t, rl = em_twosum_err(r0, t, r);
    double z = r * r;
    /* (S(r) - r) / r^3 to r^17 (|r| < ln2 for sinh), (C(r) - 1) / r^2 to r^12 */
    double po = 2.8114572543455206e-15;
    po = EM_MAD(po, z, 7.647163731819816e-13);
    po = EM_MAD(po, z, 1.6059043836821613e-10);
    po = EM_MAD(po, z, 2.505210838544172e-08);
    po = EM_MAD(po, z, 2.7557319223985893e-06);
    po = EM_MAD(po, z, 0.0001984126984126984);
    po = EM_MAD(po, z, 0.008333333333333333);
    po = EM_MAD(po, z, 0.16666666666666666);
    double pe = 2.08767569878681e-09;
    pe = EM_MAD(pe, z, 2.755731922398589e-07);
    pe = EM_MAD(pe, z, 2.48015873015873e-05);
    pe = EM_MAD(pe, z, 0.001388888888888889);
    pe = EM_MAD(pe, z, 0.041666666666666664);
    pe = EM_MAD(pe, z, 0.5);
    double we = z * pe, wo = r * z * po;                      /* C - 1, S - r */
    /* e^r = 1 + q in two parts (|we + wo| < |r| < 1: Fast2Sum both times) */
    double w = we + wo;
    double q = r + w, ql = (r - q) + w + rl;
    double eh = 1.0 + q, el = ((1.0 - eh) + q) + ql;
    double em = ((1.0 - r) + (we - wo)) - rl;                /* e^-r */
    int big = n > 1000;
    int64_t nb = n > 60 ? 60 : n;
    double sa = em_f64_from_bits((n + 1022 - big) << 52);
    double sb = em_f64_from_bits((1022 - nb - big) << 52);
    double res;
    if (want_sinh) {
        double v = sa * eh - (sb * em - sa * el);
        res = n == 0 ? r + (wo + rl) : v;
    } else {
        double v = sa * eh + (sb * em + sa * el);
        res = n == 0 ? 1.0 + we : v;
    }
    res = big ? 2.0 * res : res;
    return (x != x) ? x : (want_sinh ? copysign(res, x) : res);
}
EM_HD_INLINE double em_sinh_vd(double x) { return em_sinhcosh_d(x, 1); }
EM_HD_INLINE double em_cosh_vd(double x) { return em_sinhcosh_d(x, 0); }

/* atanh(a) = s + s^3 P(s^2), the series to s^23, with s = a below (sqrt 2 - 1)/(sqrt 2 + 1);
   above, (1 + a)/(1 - a) = 2^e m, m in [sqrt 1/2, sqrt 2], and
   atanh(a) = e ln2 / 2 + atanh(s), s = (m - 1)/(m + 1) = (p - 2^e q)/(p + 2^e q)
   with p = 1 + a, q = 1 - a in two parts (the numerator exact by Sterbenz) and one
   reciprocal, the quotient corrected by its FMA residual; e >= 1 there, so
   e ln2/2 leads the sum.  One polynomial and one division per element. */
EM_HD_INLINE double em_atanh_d(double x) {
    double a = fabs(x);
    int sm = a < 0.17157287525380990;
    double ph = 1.0 + a, pl = (1.0 - ph) + a;
    double qh = 1.0 - a, ql = (1.0 - qh) - a;
    double qs = sm ? 1.0 : qh;                                /* keep the bits sane */
    int64_t iq = em_f64_bits(qs);
    int64_t k = 1023 - ((iq >> 52) & 0x7ff);                  /* q = 2^-k mq, mq in [1, 2) */
    double mq = em_f64_from_bits((iq & 0x000fffffffffffffLL) | 0x3ff0000000000000LL);
    int64_t e = k + (ph > 1.4142135623730951 * mq) - (ph < 0.70710678118654752 * mq);
    e = sm ? 0 : e;
    double sc = em_f64_from_bits((1023 + e) << 52);
    double nh = ph - sc * qh, nl = pl - sc * ql;              /* nh exact */
    double dh = ph + sc * qh, dl = ((ph - dh) + sc * qh) + (pl + sc * ql);
    double num = nh + nl;
    double inv = 1.0 / (sm ? 1.0 : dh);
    double sb = num * inv;
    double sbl = (em_rem_d(nh, sb, dh) + (nl - sb * dl)) * inv;
    double sv = sm ? a : sb, svl = sm ? 0.0 : sbl;
    double z = sv * sv;
    double p = 0.043478260869565216;
    p = EM_MAD(p, z, 0.047619047619047616);
    p = EM_MAD(p, z, 0.05263157894736842);
    p = EM_MAD(p, z, 0.058823529411764705);
    p = EM_MAD(p, z, 0.06666666666666667);
    p = EM_MAD(p, z, 0.07692307692307693);
    p = EM_MAD(p, z, 0.09090909090909091);
    p = EM_MAD(p, z, 0.1111111111111111);
    p = EM_MAD(p, z, 0.14285714285714285);
    p = EM_MAD(p, z, 0.2);
    p = EM_MAD(p, z, 0.3333333333333333);
    double fe = (double)e;
    double h = fe * 3.46573590184561908245e-01;               /* e ln2/2, exact */
    double r = h + sv;
    double rl = ((h - r) + sv) + (EM_MAD(sv * z, p, svl) + fe * 9.54107464635293850010e-11);
    double res = r + rl;
    res = a == 1.0 ? INFINITY : res;
    res = a > 1.0 ? NAN : res;
    return (x != x) ? x : copysign(res, x);
}

/* lgamma of a float64 in (0, 1e300) (other inputs: the loop's libm fix-up).
   lgamma(2 + y) = y (c1 + y Q(y)), c1 = 1 - Euler's gamma and Q a degree-20
   Chebyshev fit on [-3/4, 1/2] (relative error 2^-54.5 on [-1/2, 1/2]); the other
   arguments are moved there, x < 1/4: lgamma(x + 2) - log(x (x + 1)); to 5/4:
   lgamma(x + 1) - log x; 5/4 to 7/4, where lgamma has its minimum and these
   forms cancel, a second fit about the minimum; past 5/2: lgamma(x - k) + log((x - 1)...(x - k)),
   k <= 8; from 10 on Stirling's series (8 terms) on (x - 1/2) log x - x with the
   log in two parts.  The log's pieces (e ln2, f, f^2/2, s (f^2/2 + R)) enter
   separately, so near 1, where lgamma(x + 1) and log x cancel, the leading
   terms combine as one FMA: y c1 - f = -gamma (x - 1) rounded once. */
EM_HD_INLINE double em_lgamma_q_d(double y) {
    double q = 6.918089214735233e-08;
    q = EM_MAD(q, y, 3.732236885170391e-08);
    q = EM_MAD(q, y, 7.85165058158358e-09);
    q = EM_MAD(q, y, -1.7461125792201517e-07);
    q = EM_MAD(q, y, 2.1323780060312942e-07);
    q = EM_MAD(q, y, -4.122967031376519e-07);
    q = EM_MAD(q, y, 9.619013594026037e-07);
    q = EM_MAD(q, y, -2.049183202162451e-06);
    q = EM_MAD(q, y, 4.372100397999367e-06);
    q = EM_MAD(q, y, -9.437889212948125e-06);
    q = EM_MAD(q, y, 2.05077347503934e-05);
    q = EM_MAD(q, y, -4.492639344809151e-05);
    q = EM_MAD(q, y, 9.945745909419076e-05);
    q = EM_MAD(q, y, -0.00022315474920905716);
    q = EM_MAD(q, y, 0.0005096695277448327);
    q = EM_MAD(q, y, -0.001192753912011645);
    q = EM_MAD(q, y, 0.002890510330658988);
    q = EM_MAD(q, y, -0.007385551028669005);
    q = EM_MAD(q, y, 0.020580808427785407);
    q = EM_MAD(q, y, -0.06735230105319812);
    q = EM_MAD(q, y, 0.3224670334241132);
    return q;
}
/* (lgamma(x0 + t) - lgamma(x0)) / t^2 around the minimum x0 = 1.46163..., a
   degree-14 fit on 1.25 <= x0 + t < 1.75 (2^-55 of lgamma there) */
EM_HD_INLINE double em_lgamma_t_d(double t) {
    double q = 0.0001097322648691034;
    q = EM_MAD(q, t, -0.00023439149206975858);
    q = EM_MAD(q, t, 0.00035826827189652387);
    q = EM_MAD(q, t, -0.0005540655841519189);
    q = EM_MAD(q, t, 0.0008778157119471035);
    q = EM_MAD(q, t, -0.0014022330682010812);
    q = EM_MAD(q, t, 0.0022597782161759674);
    q = EM_MAD(q, t, -0.003684570474943475);
    q = EM_MAD(q, t, 0.006100535797768682);
    q = EM_MAD(q, t, -0.010314223022147004);
    q = EM_MAD(q, t, 0.01797067511701079);
    q = EM_MAD(q, t, -0.03278854108857479);
    q = EM_MAD(q, t, 0.06462494023890715);
    q = EM_MAD(q, t, -0.14758772299453057);
    q = EM_MAD(q, t, 0.48383612272381066);
    return q;
}
EM_HD_INLINE double em_lgamma_pos_d(double x) {
    int k2 = x < 0.25, k1 = (x >= 0.25) & (x < 1.25), dn = x > 2.5, st = x >= 10.0;
    int mid = (x >= 1.25) & (x < 1.75);
    /* down-shift count k = floor(x - 3/2) for 5/2 < x < 10, and its product */
    double kk = floor(x - 1.5);
    kk = dn & !st ? kk : 0.0;
    double prod = 1.0;
    for (int j = 1; j <= 8; j++) prod *= (double)j <= kk ? x - (double)j : 1.0;
    double y = k2 ? x : (k1 ? x - 1.0 : x - kk - 2.0);
    double la = k2 ? x * (x + 1.0) : (k1 | st ? x : prod);
    la = (dn & !st) | k2 | k1 | st ? la : 1.0;
    double sg = k2 | k1 ? -1.0 : (dn ? 1.0 : 0.0);
    double fe, hf, sr, f = em_log_core_d(la, &fe, &hf, &sr);
    double g = (sr - hf) + fe * 1.90821492927058770002e-10;   /* log = fe L1 + f + g */
    double a = sg * fe * 6.93147180369123816490e-01;
    double b = EM_MAD(y, 0.42278433509846713, sg * f);
    double c = EM_MAD(y * y, em_lgamma_q_d(y), EM_MAD(sg, g, y * 4.942915152430645e-18));
    double small = a + (b + c);
    double t = x - 1.4616321449683622;
    /* lgamma(x0) in two parts and psi at the double x0 (-9.2e-17) times t */
    double tv = -0.12148629053584961 + EM_MAD(t * t, em_lgamma_t_d(t),
                                              EM_MAD(t, -9.241265521729427e-17, 3.3649914684731424e-18));
    small = mid ? tv : small;
    /* Stirling: (x - 1/2)(lh + ll) - x + log(2 pi)/2 + S(1/x) */
    double lh = fe * 6.93147180369123816490e-01 + f;
    double ll = ((fe * 6.93147180369123816490e-01 - lh) + f) + g;
    double xm = x - 0.5;
    double ph = xm * lh, pl = em_prod_err_d(xm, lh, ph) + xm * ll;
    double rh = ph - x, rl = ((ph - rh) - x) + pl;
    double z = 1.0 / x, z2 = z * z;
    double sp = -0.029550653594771242;
    sp = EM_MAD(sp, z2, 0.00641025641025641);
    sp = EM_MAD(sp, z2, -0.0019175269175269176);
    sp = EM_MAD(sp, z2, 0.0008417508417508417);
    sp = EM_MAD(sp, z2, -0.0005952380952380953);
    sp = EM_MAD(sp, z2, 0.0007936507936507937);
    sp = EM_MAD(sp, z2, -0.002777777777777778);
    sp = EM_MAD(sp, z2, 0.08333333333333333);
    double big = rh + (EM_MAD(sp, z, -3.8782941580672414e-17) + rl + 0.9189385332046728);
    return st ? big : small;
}

/* erf (and erfinv's Newton step): fdlibm's s_erf.c rational fits (|x| < 0.84375:
   x + x P/Q in x^2; to 1.25: erx + P1/Q1 in |x| - 1; beyond: erfc = exp(-x^2 - 0.5625
   + R/S) / |x| with R/S in 1/x^2, one pair of fits to 1/0.35 and one past it).  Every
   range is evaluated (branch-free, so the loops vectorise) but the three quotients
   share one division of selected operands: divisions dominate these kernels' cost.
   The parts helpers return numerator and denominator. */
EM_HD_INLINE double em_erf_pq_num_d(double z) {
    return EM_MAD(z, EM_MAD(z, EM_MAD(z, EM_MAD(z, -2.37630166566501626084e-05, -5.77027029648944159157e-03),
                  -2.84817495755985104766e-02), -3.25042107247001499370e-01), 1.28379167095512558561e-01);
}
EM_HD_INLINE double em_erf_pq_den_d(double z) {
    return EM_MAD(z, EM_MAD(z, EM_MAD(z, EM_MAD(z, EM_MAD(z, -3.96022827877536812320e-06, 1.32494738004321644526e-04),
                  5.08130628187576562776e-03), 6.50222499887672944485e-02), 3.97917223959155352819e-01), 1.0);
}
EM_HD_INLINE double em_erf_pq_d(double x) {
    double z = x * x;
    return em_erf_pq_num_d(z) / em_erf_pq_den_d(z);
}
/* (h + l)(s + sl) + c as hi with *lo (a Horner step carried in two parts) */
EM_HD_INLINE double em_mad_dd(double h, double l, double s, double sl, double c, double *lo) {
    double p = h * s, r = p + c;
    *lo = em_prod_err_d(h, s, p) + em_twosum_err(p, c, r) + EM_MAD(l, s, h * sl);
    return r;
}
/* P1 and Q1 of 0.84375 <= a < 1.25 in s = a - 1 */
EM_HD_INLINE double em_erf_mid_num_d(double s) {
    return EM_MAD(s, EM_MAD(s, EM_MAD(s, EM_MAD(s, -2.16637559486879084300e-03,
                  3.54783043256182359371e-02), -1.10894694282396677476e-01), 3.18346619901161753674e-01),
                  -3.72207876035701323847e-01);
}
EM_HD_INLINE double em_erf_mid_den_d(double s) {
    return EM_MAD(s, EM_MAD(s, EM_MAD(s, EM_MAD(s, 1.19844998467991074170e-02,
                  1.36370839120290507362e-02), 1.26171219808761642112e-01), 7.18286544141962662868e-02),
                  5.40397917702171048937e-01);
}
EM_HD_INLINE double em_erf_mid_p_d(double s) {
    return EM_MAD(EM_MAD(em_erf_mid_num_d(s), s, 4.14856118683748331666e-01), s, -2.36211856075265944077e-03);
}
EM_HD_INLINE double em_erf_mid_q_d(double s) {
    return EM_MAD(EM_MAD(em_erf_mid_den_d(s), s, 1.06420880400844228286e-01), s, 1.0);
}
/* R and S of the tail (1.25 <= a, s = 1/a^2 = s + sl), the last two Horner steps
   in two parts (the callers take the high parts) */
EM_HD_INLINE void em_erfc_rs_dd(double a, double s, double sl, double *rh, double *rl,
                                double *qh, double *ql) {
#define EM_ERF_C(ra, rb) (a >= 2.857142857142857 ? (rb) : (ra))
    double r = EM_ERF_C(-9.81432934416914548592e+00, 0.0);
    r = EM_MAD(r, s, EM_ERF_C(-8.12874355063065934246e+01, -4.83519191608651397019e+02));
    r = EM_MAD(r, s, EM_ERF_C(-1.84605092906711035994e+02, -1.02509513161107724954e+03));
    r = EM_MAD(r, s, EM_ERF_C(-1.62396669462573470355e+02, -6.37566443368389627722e+02));
    r = EM_MAD(r, s, EM_ERF_C(-6.23753324503260060396e+01, -1.60636384855821916062e+02));
    r = EM_MAD(r, s, EM_ERF_C(-1.05586262253232909814e+01, -1.77579549177547519889e+01));
    double l;
    r = em_mad_dd(r, 0.0, s, sl, EM_ERF_C(-6.93858572707181764372e-01, -7.99283237680523006574e-01), &l);
    *rh = em_mad_dd(r, l, s, sl, EM_ERF_C(-9.86494403484714822705e-03, -9.86494292470009928597e-03), rl);
    double q = EM_ERF_C(-6.04244152148580987438e-02, 0.0);
    q = EM_MAD(q, s, EM_ERF_C(6.57024977031928170135e+00, -2.24409524465858183362e+01));
    q = EM_MAD(q, s, EM_ERF_C(1.08635005541779435134e+02, 4.74528541206955367215e+02));
    q = EM_MAD(q, s, EM_ERF_C(4.29008140027567833386e+02, 2.55305040643316442583e+03));
    q = EM_MAD(q, s, EM_ERF_C(6.45387271733267880336e+02, 3.19985821950859553908e+03));
    q = EM_MAD(q, s, EM_ERF_C(4.34565877475229228821e+02, 1.53672958608443695994e+03));
    q = EM_MAD(q, s, EM_ERF_C(1.37657754143519042600e+02, 3.25792512996573918826e+02));
    q = em_mad_dd(q, 0.0, s, sl, EM_ERF_C(1.96512716674392571292e+01, 3.03380607434824582924e+01), &l);
    *qh = em_mad_dd(q, l, s, sl, 1.0, ql);
#undef EM_ERF_C
}
/* 1/a = ih + *il and 1/a^2 = s + *sl from one division */
EM_HD_INLINE double em_recip_sq_d(double a, double *il, double *s, double *sl) {
    double ih = 1.0 / a;
    *il = em_rem_d(1.0, ih, a) * ih;
    *s = ih * ih;
    *sl = em_prod_err_d(ih, ih, *s) + 2.0 * ih * *il;
    return ih;
}
/* erf in stages, the quotient (and 1/|x|) first; em_erf_vd chains them */
EM_HD_INLINE double em_erf_s1_d(double x, double *ih, double *u1, double *u2) {
    double a = fabs(x), z = x * x;
    double ac = a < 1.25 ? 1.25 : a;
    ac = ac > 6.0 ? 6.0 : ac;
    double il, s, sl;
    *ih = em_recip_sq_d(ac, &il, &s, &sl);
    *u1 = 0.0;
    *u2 = 0.0;
    double rh, rl, qh, ql;
    em_erfc_rs_dd(ac, s, 0.0, &rh, &rl, &qh, &ql);
    double num = a < 0.84375 ? em_erf_pq_num_d(z) : em_erf_mid_p_d(a - 1.0);
    double den = a < 0.84375 ? em_erf_pq_den_d(z) : em_erf_mid_q_d(a - 1.0);
    num = a < 1.25 ? num : rh;
    den = a < 1.25 ? den : qh;
    return num / den;
}
EM_HD_INLINE double em_erf_s2_d(double x, double quo, double ih, double u1, double u2) {
    (void)u1;
    (void)u2;
    double a = fabs(x);
    double ac = a < 1.25 ? 1.25 : a;
    ac = ac > 6.0 ? 6.0 : ac;
    double small = EM_MAD(x, quo, x);
    double mid = 8.45062911510467529297e-01 + quo;
    double a2 = ac * ac, a2l = em_prod_err_d(ac, ac, a2);
    double m = (-0.5625 - a2l) + quo;
    double e = m - a2, el = em_twosum_err(m, -a2, e);
    double ex = em_exp_normal_d(e);                  /* -37 < e < -1.5 */
    double big = 1.0 - EM_MAD(ex, el, ex) * ih;
    big = a >= 6.0 ? 1.0 : big;
    double r = copysign(a < 1.25 ? mid : big, x);
    return a < 0.84375 ? small : r;                  /* keeps -0 and NaN */
}
EM_HD_INLINE double em_erf_vd(double x) {
    double ih, u1, u2, q = em_erf_s1_d(x, &ih, &u1, &u2);
    return em_erf_s2_d(x, q, ih, u1, u2);
}
/* log10: fdlibm's e_log10.c assembly of the log core (f - f^2/2 taken in two
   parts, the high one of 32 bits, so each product with the split 1/ln10 is exact) */
EM_HD_INLINE double em_log10_vd(double x) {
    double fe, hf, sr, f = em_log_core_d(x, &fe, &hf, &sr);
    double hi = em_f64_from_bits(em_f64_bits(f - hf) & (int64_t)0xffffffff00000000ULL);
    double lo = (f - hi) - hf + sr;
    double vh = hi * 4.34294481878168880939e-01;
    double y2 = fe * 3.01029995663611771306e-01;
    double vl = fe * 3.69423907715893078616e-13 + (lo + hi) * 2.50829467116452752298e-11
                + lo * 4.34294481878168880939e-01;
    double w = y2 + vh;
    vl += (y2 - w) + vh;
    return em_log_special_d(x, vl + w);
}
/* 2^x: k = round(x), f = x - k exact (|f| <= 1/2), 2^f = 1 + f ln2 + f^2 q(f) with
   q the Taylor polynomial of degree 11 (terms ln2^j f^j / j!, j = 2..13; truncation
   4e-18) and ln2 in two parts: with FMA one rounding of ln2 + f q and one of
   1 + f (ln2 + f q); without it f ln2_hi exact (Dekker) and 1 + f ln2_hi in two parts.
   Then k is added to the exponent.  Integers are exact. */
EM_HD_INLINE double em_exp2_core_d(double xc, int64_t *k) {
    double kd = xc + 6755399441055744.0;
    *k = em_f64_bits(kd) - 0x4338000000000000LL;
    double f = xc - (kd - 6755399441055744.0);
    double q = 1.3691488853904128e-12;
    q = EM_MAD(q, f, 2.5678435993488206e-11);
    q = EM_MAD(q, f, 4.4455382718708116e-10);
    q = EM_MAD(q, f, 7.054911620801123e-09);
    q = EM_MAD(q, f, 1.01780860092397e-07);
    q = EM_MAD(q, f, 1.321548679014431e-06);
    q = EM_MAD(q, f, 1.5252733804059841e-05);
    q = EM_MAD(q, f, 0.0001540353039338161);
    q = EM_MAD(q, f, 0.0013333558146428443);
    q = EM_MAD(q, f, 0.009618129107628477);
    q = EM_MAD(q, f, 0.05550410866482158);
    q = EM_MAD(q, f, 0.24022650695910072);
#if EM_FMA_OK
    /* (ln2_hi + (ln2_lo + f q)) rounded once more (2^-55 after the product with f),
       then 1 + f Q in one rounding */
    return EM_MAD(f, 0.6931471805599453 + EM_MAD(f, q, 2.3190468138462996e-17), 1.0);
#else
    double ph = f * 0.6931471805599453, pl = em_prod_err_d(f, 0.6931471805599453, ph);
    double s = 1.0 + ph, e = em_twosum_err(1.0, ph, s);
    return s + (EM_MAD(f * f, q, EM_MAD(f, 2.3190468138462996e-17, pl)) + e);
#endif
}
EM_HD_INLINE double em_exp2_vd(double x) {
    double xc = x > 1025.0 ? 1025.0 : (x < -1080.0 ? -1080.0 : x);
    int64_t k;
    double v = em_exp2_core_d(xc, &k);
    double r = em_ldexp_d(v, k);
    r = x >= 1024.0 ? INFINITY : r;
    r = x < -1075.0 ? 0.0 : r;
    return x != x ? x : r;
}
/* em_exp2_vd for abs(x) <= 1020 (normal results): k added to the exponent bits */
#define EM_EXP2_FAST_MAX 1020.0
EM_HD_INLINE double em_exp2_fast_d(double x) {
    int64_t k;
    double v = em_exp2_core_d(x, &k);
    return em_f64_from_bits(em_f64_bits(v) + (int64_t)((uint64_t)k << 52));
}

/* asin / acos: fdlibm's e_asin.c rational R(t) for (asin(v) - v) / v^3 (|v| <= 1/2),
   and asin(x) = pi/2 - 2 asin(sqrt((1 - |x|)/2)) above 1/2 with the square root
   carried in two parts */
EM_HD_INLINE double em_asin_r_d(double t) {
    double p = t * EM_MAD(t, EM_MAD(t, EM_MAD(t, EM_MAD(t, EM_MAD(t, 3.47933107596021167570e-05,
               7.91534994289814532176e-04), -4.00555345006794114027e-02), 2.01212532134862925881e-01),
               -3.25565818622400915405e-01), 1.66666666666666657415e-01);
    double q = EM_MAD(t, EM_MAD(t, EM_MAD(t, EM_MAD(t, 7.70381505559019352791e-02,
               -6.88283971605453293030e-01), 2.02094576023350569471e+00), -2.40339491173441421878e+00), 1.0);
    return p / q;
}
/* 2 asin(sqrt(t)) = 2 (s + s R(t)) for t = (1 - |x|)/2 (|x| >= 1/2) as hi + *lo */
EM_HD_INLINE double em_asin_big_d(double a, double *lo) {
    double t = 0.5 * (1.0 - a);                                    /* exact */
    double sh = sqrt(t), sl = em_rem_d(t, sh, sh) / (sh + sh);
    sl = t == 0.0 ? 0.0 : sl;
    *lo = 2.0 * EM_MAD(sh, em_asin_r_d(t), sl);
    return 2.0 * sh;
}
EM_HD_INLINE double em_asin_vd(double x) {
    double a = fabs(x);
    double small = EM_MAD(x, em_asin_r_d(x * x), x);
    double bl, bh = em_asin_big_d(a, &bl);
    double d = 1.57079632679489655800e+00 - bh;
    double dl = em_twosum_err(1.57079632679489655800e+00, -bh, d) + (6.12323399573676603587e-17 - bl);
    double big = copysign(d + dl, x);
    double r = a < 0.5 ? small : big;
    return a > 1.0 ? NAN : r;
}
EM_HD_INLINE double em_acos_vd(double x) {
    double a = fabs(x);
    double small = 1.57079632679489655800e+00 - (x - (6.12323399573676603587e-17 - x * em_asin_r_d(x * x)));
    double bl, bh = em_asin_big_d(a, &bl);
    double pos = bh + bl;
    double d = 3.14159265358979311600e+00 - bh;
    double neg = d + (em_twosum_err(3.14159265358979311600e+00, -bh, d) + (1.22464679914735317723e-16 - bl));
    double r = a < 0.5 ? small : (x > 0.0 ? pos : neg);
    return a > 1.0 ? NAN : r;
}

/* fdlibm's s_atan.c polynomial: atan(t) = t - t S(t^2) for |t| <= 7/16 */
EM_HD_INLINE double em_atan_s_d(double z) {
    double w = z * z;
    double s1 = z * EM_MAD(w, EM_MAD(w, EM_MAD(w, EM_MAD(w, EM_MAD(w, 1.62858201153657823623e-02,
                4.97687799461593236017e-02), 6.66107313738753120669e-02), 9.09088713343650656196e-02),
                1.42857142725034663711e-01), 3.33333333333329318027e-01);
    double s2 = w * EM_MAD(w, EM_MAD(w, EM_MAD(w, EM_MAD(w, -3.65315727442169155270e-02,
                -5.83357013379057348645e-02), -7.69187620504482999495e-02), -1.11111104054623557880e-01),
                -1.99999999998764832476e-01);
    return s1 + s2;
}
/* atan: fdlibm's s_atan.c reduction to |t| <= 7/16 about atan(1/2), atan(1),
   atan(3/2) or atan(inf), t = num / den with num exact (Sterbenz) and one
   division, and its degree-22 odd polynomial.  em_atan_red_d takes the selected
   num, den and atan(c) = hi + hl and returns atan = hi + *lo, the division's
   rounding carried to first order.  The ranges are chosen by one select each in
   sequence: GCC does not if-convert nested ?: chains (the loop would not vectorise).
   t = num / den is the caller's. */
EM_HD_INLINE double em_atan_red_d(double num, double den, double t, double hi, double hl, double *lo) {
    t = t == t ? t : 0.0;                       /* atan2's 0/0 and inf/inf */
    double z = t * t;
    /* (num - t den) / (den (1 + t^2)); 0 where den is 0 or infinite */
    double c = em_rem_d(num, t, den) / (den * (1.0 + z));
    c = c == c ? c : 0.0;
    double u = t - ((t * em_atan_s_d(z) - hl) - c);
    double r = hi + u;
    *lo = em_twosum_err(hi, u, r);
    return r;
}
EM_HD_INLINE double em_atan_vd(double x) {
    double a = fabs(x);
    double num = a, den = 1.0, hi = 0.0, hl = 0.0;
    num = a >= 0.4375 ? 2.0 * a - 1.0 : num;
    den = a >= 0.4375 ? 2.0 + a : den;
    hi = a >= 0.4375 ? 4.63647609000806093515e-01 : hi;
    hl = a >= 0.4375 ? 2.26987774529616870924e-17 : hl;
    num = a >= 0.6875 ? a - 1.0 : num;
    den = a >= 0.6875 ? a + 1.0 : den;
    hi = a >= 0.6875 ? 7.85398163397448278999e-01 : hi;
    hl = a >= 0.6875 ? 3.06161699786838301793e-17 : hl;
    num = a >= 1.1875 ? a - 1.5 : num;
    den = a >= 1.1875 ? EM_MAD(1.5, a, 1.0) : den;
    hi = a >= 1.1875 ? 9.82793723247329054082e-01 : hi;
    hl = a >= 1.1875 ? 1.39033110312309984516e-17 : hl;
    num = a >= 2.4375 ? -1.0 : num;
    den = a >= 2.4375 ? a : den;
    hi = a >= 2.4375 ? 1.57079632679489655800e+00 : hi;
    hl = a >= 2.4375 ? 6.12323399573676603587e-17 : hl;
    double l, h = em_atan_red_d(num, den, num / den, hi, hl, &l);
    return (x != x) ? x : copysign(h + l, x);
}
/* atan2: with p = min(|x|, |y|), q = max, atan(p/q) reduced straight from p and q
   (2p - q and p - q are exact where selected, one division), then pi/2 - v and
   pi - v in two parts.  Scaled by a power of two first so that 2q + p cannot
   overflow and subnormal operands keep their bits.  Two stages, the reduction
   (with the division, range 0, 1, 2 in *rng) and the rest: the loop runs them as
   passes over a block (shorter dependency chains, about 1.2x faster). */
EM_HD_INLINE double em_atan2_s1_d(double y, double x, double *num, double *den, double *rng) {
    double ax = fabs(x), ay = fabs(y);
    double p = ay > ax ? ax : ay, q = ay > ax ? ay : ax;
    /* 2^-100 above 2^960, 2^600 below 2^-600 (and for p < 2^-900 while q < 2^100):
       Dekker's split (no FMA) stays finite and exact, its low products normal */
    int up = (q < 2.409919865102884e-181) | ((p < 1.1830521861667747e-271) & (q < 1.2676506002282294e+30));
    double sc = q > 9.7453140114e+288 ? 7.888609052210118e-31 : (up ? 4.149515568880993e+180 : 1.0);
    p = p * sc;
    q = q == 0.0 ? 1.0 : q * sc;                 /* atan2(+-0, +-0): atan(0/1) */
    double n = p, d = q, r = 0.0;
    n = p >= 0.4375 * q ? 2.0 * p - q : n;
    d = p >= 0.4375 * q ? EM_MAD(2.0, q, p) : d;
    r = p >= 0.4375 * q ? 1.0 : r;
    n = p >= 0.6875 * q ? p - q : n;
    d = p >= 0.6875 * q ? p + q : d;
    r = p >= 0.6875 * q ? 2.0 : r;
    *num = n;
    *den = d;
    *rng = r;
    return n / d;
}
EM_HD_INLINE double em_atan2_s2_d(double y, double x, double t, double num, double den, double rng) {
    double ax = fabs(x), ay = fabs(y);
    double hi = rng == 1.0 ? 4.63647609000806093515e-01 : 0.0;
    double hl = rng == 1.0 ? 2.26987774529616870924e-17 : 0.0;
    hi = rng == 2.0 ? 7.85398163397448278999e-01 : hi;
    hl = rng == 2.0 ? 3.06161699786838301793e-17 : hl;
    double l, h = em_atan_red_d(num, den, t, hi, hl, &l);
    double d1 = 1.57079632679489655800e+00 - h;
    double l1 = em_twosum_err(1.57079632679489655800e+00, -h, d1) + (6.12323399573676603587e-17 - l);
    h = ay > ax ? d1 : h;
    l = ay > ax ? l1 : l;
    double d2 = 3.14159265358979311600e+00 - h;
    double l2 = em_twosum_err(3.14159265358979311600e+00, -h, d2) + (1.22464679914735317723e-16 - l);
    double r = copysign(1.0, x) < 0.0 ? d2 + l2 : h + l;
    r = copysign(r, y);
    return (x != x) | (y != y) ? x + y : r;
}
EM_HD_INLINE double em_atan2_vd(double y, double x) {
    double num, den, rng, t = em_atan2_s1_d(y, x, &num, &den, &rng);
    return em_atan2_s2_d(y, x, t, num, den, rng);
}
/* atan2 of float32 operands in double, rounded once: t = min/max of |y|, |x|, or
   (min - max)/(min + max) above tan(pi/8) (then atan(t) + pi/4), exact operands
   and one division, so t carries double precision into fdlibm's polynomial; then
   pi/2 - v, pi - v and y's sign as em_atan2_vd.  0/0 -> 0, inf/inf -> pi/4. */
EM_HD_INLINE float em_atan2_vf(float yf, float xf) {
    double x = xf, y = yf;
    double ax = fabs(x), ay = fabs(y);
    int swap = ay > ax;
    double num = swap ? ax : ay, den = swap ? ay : ax;
    int mid = num > 0.41421356237309503 * den;
    int binf = num == INFINITY;
    double t = (mid ? num - den : num) / (mid ? num + den : den);
    t = t == t ? t : 0.0;
    double v = t - t * em_atan_s_d(t * t);
    v = mid | binf ? v + 7.85398163397448309616e-01 : v;
    v = swap ? 1.57079632679489661923e+00 - v : v;
    v = em_f32_bits(xf) < 0 ? 3.14159265358979323846e+00 - v : v;
    double r = copysign(v, y);
    return (float)((x != x) | (y != y) ? x + y : r);
}
/* hypot: scaled by a power of two when the squares would leave the exponent
   range, the sum of squares in two parts and one Newton correction of its root */
EM_HD_INLINE double em_hypot_vd(double x, double y) {
    double ax = fabs(x), ay = fabs(y);
    double m = ax > ay ? ax : ay;
    double sc = m > 1e150 ? 2.409919865102884e-181 : (m < 1e-150 ? 4.149515568880993e+180 : 1.0);
    double us = m > 1e150 ? 4.149515568880993e+180 : (m < 1e-150 ? 2.409919865102884e-181 : 1.0);
    double a = ax * sc, b = ay * sc;
    double a2 = a * a, b2 = b * b;
    double s = a2 + b2;
    double sl = em_twosum_err(a2, b2, s) + (em_prod_err_d(a, a, a2) + em_prod_err_d(b, b, b2));
    double h = sqrt(s);
    double r = (h + (em_rem_d(s, h, h) + sl) / (h + h)) * us;
    r = m == 0.0 ? 0.0 : r;
    r = (x != x) | (y != y) ? x + y : r;
    return (ax == INFINITY) | (ay == INFINITY) ? INFINITY : r;
}

/* the float64 activations on the functions above (the CPU loops; ember_scalar.h
   keeps the libm forms for CUDA) */
/* (e^r - 1 - r) / r^2 on |r| <= ln2/2, em_exp_taylor_d's polynomial in Estrin's
   order: the activations' loops are bound by its dependency chain */
EM_HD_INLINE double em_exp_taylor_estrin_d(double r) {
    double r2 = r * r, r4 = r2 * r2;
    double a0 = EM_MAD(0.16666666666666666, r, 0.5), a1 = EM_MAD(0.008333333333333333, r, 0.041666666666666664);
    double a2 = EM_MAD(0.0001984126984126984, r, 0.001388888888888889);
    double a3 = EM_MAD(2.7557319223985893e-06, r, 2.48015873015873e-05);
    double a4 = EM_MAD(2.505210838544172e-08, r, 2.755731922398589e-07);
    double a5 = EM_MAD(1.6059043836821613e-10, r, 2.08767569878681e-09);
    double b0 = EM_MAD(a1, r2, a0), b1 = EM_MAD(a3, r2, a2), b2 = EM_MAD(a5, r2, a4);
    return EM_MAD(EM_MAD(b2, r4, b1), r4, b0);
}
/* e^y = 2^n (1 + q), y clamped to [-746, 710] (0 and inf beyond, through
   em_ldexp_d): returns q and n, r = y - n ln2 in two parts, q = r + r^2 p(r) in one
   rounding */
EM_HD_INLINE double em_act_expq_d(double y, int64_t *n) {
    double yc = y < -746.0 ? -746.0 : (y > 710.0 ? 710.0 : y);
    double kd = yc * 1.4426950408889634 + 6755399441055744.0;
    *n = em_f64_bits(kd) - 0x4338000000000000LL;
    double fn = kd - 6755399441055744.0;
    double r = (yc - fn * 6.93147180369123816490e-01) - fn * 1.90821492927058770002e-10;
    return EM_MAD(em_exp_taylor_estrin_d(r), r * r, r);
}
EM_HD_INLINE double em_act_exp_d(double y) {
    int64_t n;
    double q = em_act_expq_d(y, &n);
    return em_ldexp_d(1.0 + q, n);
}
/* sigmoid from e = exp(-|x|) in (0, 1]: 1 / (1 + e) or e / (1 + e), no overflow;
   silu and its derivative s (1 + x (1 - s)) take 1 - s = e / (1 + e) or 1 / (1 + e),
   so it does not cancel */
EM_HD_INLINE double em_sigmoid_vd(double x) {
    double e = em_act_exp_d(-fabs(x));
    return (x < 0.0 ? e : 1.0) / (1.0 + e);
}
EM_HD_INLINE double em_silu_vd(double x) {
    double e = em_act_exp_d(-fabs(x));
    return x * (x < 0.0 ? e : 1.0) / (1.0 + e);
}
EM_HD_INLINE double em_silu_bw_vd(double g, double x) {
    double e = em_act_exp_d(-fabs(x)), inv = 1.0 / (1.0 + e);
    double s = (x < 0.0 ? e : 1.0) * inv, oms = (x < 0.0 ? 1.0 : e) * inv;
    return g * s * EM_MAD(x, oms, 1.0);
}
/* e^y for |y| <= EM_EXP_FAST_D_MAX (normal results): em_act_expq_d's polynomial with
   the reduction in FMAs and 2^n added to the exponent bits.  On it the loops' sigmoid
   is 1 / (1 + e^-x) as torch's (for x < 0 the error of e^-x passes to the result as
   that of e^x does to e / (1 + e) above; no select), silu x / (1 + e^-x) and the
   derivative's 1 - s = e^-x s; the loops send |x| beyond it (and NaN) to the forms
   above. */
#define EM_EXP_FAST_D_MAX 708.0
EM_HD_INLINE double em_exp_fast_d(double y) {
    double kd = EM_MAD(y, 1.4426950408889634, 6755399441055744.0);
    int64_t n = em_f64_bits(kd) - 0x4338000000000000LL;
    double fn = kd - 6755399441055744.0;
    double r = EM_MAD(fn, -1.90821492927058770002e-10, EM_MAD(fn, -6.93147180369123816490e-01, y));
    double q = EM_MAD(em_exp_taylor_estrin_d(r), r * r, r);
    return em_f64_from_bits(em_f64_bits(1.0 + q) + (int64_t)((uint64_t)n << 52));
}
EM_HD_INLINE double em_sigmoid_fast_d(double x) { return 1.0 / (1.0 + em_exp_fast_d(-x)); }
EM_HD_INLINE double em_silu_fast_d(double x) { return x / (1.0 + em_exp_fast_d(-x)); }
EM_HD_INLINE double em_silu_bw_fast_d(double g, double x) {
    double e = em_exp_fast_d(-x), s = 1.0 / (1.0 + e);
    return g * s * EM_MAD(x, e * s, 1.0);
}
/* the loops' silu and derivative for the rest (|x| > 708, NaN): below -708 x e^x and
   g e^x (1 + x) (1 + e^x rounds to 1), e^x = 2^n (1 + q) with 2^n applied last, so a
   subnormal e^x costs no precision (x e^x is normal to x = -709.1); zero where e^x
   itself rounds to 0 (x < log 2^-1075), as the exp(-|x|) forms and torch */
#define EM_EXP_ZERO_D (-745.1332191019412)
EM_HD_INLINE double em_exp_tail_q_d(double x, int64_t *n) {
    double xc = x < EM_EXP_ZERO_D ? EM_EXP_ZERO_D : x;
    double kd = EM_MAD(xc, 1.4426950408889634, 6755399441055744.0);
    *n = em_f64_bits(kd) - 0x4338000000000000LL;
    double fn = kd - 6755399441055744.0;
    double r = EM_MAD(fn, -1.90821492927058770002e-10, EM_MAD(fn, -6.93147180369123816490e-01, xc));
    return 1.0 + EM_MAD(em_exp_taylor_estrin_d(r), r * r, r);
}
EM_HD_INLINE double em_silu_far_d(double x) {
    int64_t n;
    double p = em_exp_tail_q_d(x, &n);
    double t = x < EM_EXP_ZERO_D ? -0.0 : em_ldexp_d(x * p, n);
    return (x < -EM_EXP_FAST_D_MAX) & (x > -INFINITY) ? t : em_silu_vd(x);
}
EM_HD_INLINE double em_silu_bw_far_d(double g, double x) {
    int64_t n;
    double p = em_exp_tail_q_d(x, &n);
    double t = x < EM_EXP_ZERO_D ? g * -0.0 : em_ldexp_d(g * p * (1.0 + x), n);
    return (x < -EM_EXP_FAST_D_MAX) & (x > -INFINITY) ? t : em_silu_bw_vd(g, x);
}
/* float64 exact gelu = x Phi(x).  With a = |x|/sqrt2 and t = 3.5 / (3.5 + a),
   Phi(-|x|) = erfc(a) / 2 = t Q(t) exp(-x^2/2) / 2, where Q = erfcx(a) / t is smooth
   on a in [0, 27.35] (to where gelu underflows) and a degree-21 polynomial in
   s = A t + B in [-1, 1] fits it to 5e-18 (its head in even and odd halves, which
   shortens the dependency chain; the last three Horner steps carried in two parts).  The rounding of a and of t moves the argument Q sees by da, corrected
   to first order with L = d log erfcx / da (a cubic in s to 0.5%); exp(-x^2/2)
   takes x^2 exactly and comes back as 2^n (1 + q), so the negative tail keeps its
   relative precision down to the subnormals (within 4 ulps throughout).  Stage 1
   (the division and the polynomials) returns w = t Q / 2, stage 2 the result. */
#define EM_GELU_D_MAX 38.6            /* exp(-x^2/2) >= 2^-1075 up to here */
EM_HD_INLINE void em_gelu_2step_d(double h, double l, double s, double c, double *rh, double *rl) {
    double p = h * s, r = p + c;
    *rl = em_prod_err_d(h, s, p) + em_twosum_err(p, c, r) + l * s;
    *rh = r;
}
EM_HD_INLINE double em_gelu_s1_d(double x) {
    double ax = fabs(x);
    ax = ax > EM_GELU_D_MAX ? EM_GELU_D_MAX : ax;
    double a = ax * 0.7071067811865476;
    double ae = em_prod_err_d(ax, 0.7071067811865476, a) + ax * -4.833646656726457e-17;
    double d = 3.5 + a, dl = em_twosum_err(3.5, a, d);
    double t = 3.5 / d;
    double rem = em_rem_d(3.5, t, d) - t * dl;         /* 3.5 - t (d + dl) */
    double s = EM_MAD(t, 2.2559414990859232, -1.2559414990859232);
    double s2 = s * s;
    double pe = -7.507574283126262e-11, po = 3.047312187818914e-11;
    pe = EM_MAD(pe, s2, 9.673638832848157e-10);
    po = EM_MAD(po, s2, -6.826186248919903e-10);
    pe = EM_MAD(pe, s2, -8.374423669711944e-09);
    po = EM_MAD(po, s2, 8.270104617011117e-09);
    pe = EM_MAD(pe, s2, 7.082546192406947e-08);
    po = EM_MAD(po, s2, -7.0861898836714e-08);
    pe = EM_MAD(pe, s2, -6.665696976667076e-07);
    po = EM_MAD(po, s2, 3.1443467954205807e-07);
    pe = EM_MAD(pe, s2, 6.937004210776672e-06);
    po = EM_MAD(po, s2, 5.447130522475839e-06);
    pe = EM_MAD(pe, s2, -6.807841853171419e-05);
    po = EM_MAD(po, s2, -0.00022241776283382408);
    pe = EM_MAD(pe, s2, 0.00020392651620531599);
    po = EM_MAD(po, s2, 0.003951193650105367);
    pe = EM_MAD(pe, s2, 0.01738541902973444);
    po = EM_MAD(po, s2, 0.050014849439870585);
    pe = EM_MAD(pe, s2, 0.10957084768681939);
    double p = EM_MAD(po, s, pe);
    double l = 0.0;
    em_gelu_2step_d(p, 0.0, s, 0.19337135750665205, &p, &l);
    em_gelu_2step_d(p, l, s, 0.2820494347709027, &p, &l);
    em_gelu_2step_d(p, l, s, 0.3437314354819738, &p, &l);
    /* Q saw a' = 3.5 / t - 3.5 = a + rem / t: erfcx(a + ae) = erfcx(a') (1 - (a' - a - ae) L) */
    double da = rem * d * 0.2857142857142857 - ae;
    double lg = EM_MAD(EM_MAD(EM_MAD(-0.06764097539585139, s, -0.26003908609296356), s, -0.4806597413089167), s, -0.3246499421539499);
    double q = p + EM_MAD(-da * lg, p, l);
    return 0.5 * t * q;
}
/* exp(-x^2/2) = 2^n (1 + q) for |x| <= EM_GELU_D_MAX: x^2 = h + hl exactly, n = round(-h/2 / ln2),
   r = -h/2 - n ln2_hi exact, the rest of the argument added in one rounding, and
   q = r + r^2 p(r) with em_exp_reduced_d's polynomial (q within 0.6 ulp of 1 + q) */
EM_HD_INLINE double em_gelu_gauss_d(double x, int64_t *n) {
    double ax = fabs(x);
    ax = ax > EM_GELU_D_MAX ? EM_GELU_D_MAX : ax;
    double h = -0.5 * (ax * ax), hl = -0.5 * em_prod_err_d(ax, ax, -2.0 * h);
    double kd = h * 1.4426950408889634 + 6755399441055744.0;
    *n = em_f64_bits(kd) - 0x4338000000000000LL;
    double fn = kd - 6755399441055744.0;
    double r = (h - fn * 6.93147180369123816490e-01) + (hl - fn * 1.90821492927058770002e-10);
    return EM_MAD(em_exp_taylor_estrin_d(r), r * r, r);
}
/* stage 2 of gelu: x Phi(-|x|) = x w (1 + q) 2^n for x < 0, x (1 - Phi(-x)) above */
EM_HD_INLINE double em_gelu_s2_d(double x, double w) {
    int64_t n;
    double q = em_gelu_gauss_d(x, &n);
    double v = EM_MAD(w, q, w);
    double r = x < 0.0 ? em_ldexp_d(x * v, n) : x * (1.0 - em_ldexp_d(v, n));
    r = x < -EM_GELU_D_MAX ? x * 0.0 : r;         /* -0, and NaN at -inf (as torch) */
    return x != x ? x : r;
}
/* stage 2 of gelu's derivative Phi(x) + x phi(x): 2^n D (1 + q) with
   D = +-w + x / sqrt(2 pi), plus 1 for x >= 0; NaN at +-inf (as torch) */
EM_HD_INLINE double em_gelu_grad_s2_d(double x, double w) {
    int64_t n;
    double q = em_gelu_gauss_d(x, &n);
    double dd = (x < 0.0 ? w : -w) + x * 0.3989422804014327;
    double v = em_ldexp_d(EM_MAD(dd, q, dd), n);
    double r = x < 0.0 ? v : 1.0 + v;
    r = fabs(x) > EM_GELU_D_MAX ? (x < 0.0 ? 0.0 : 1.0) : r;
    return (x != x) | (fabs(x) == INFINITY) ? NAN : r;
}
EM_HD_INLINE double em_gelu_vd(double x) { return em_gelu_s2_d(x, em_gelu_s1_d(x)); }
EM_HD_INLINE double em_gelu_grad_vd(double x) { return em_gelu_grad_s2_d(x, em_gelu_s1_d(x)); }
/* float64 erfc(x) = erfcx(a) exp(-a^2), a = |x| (exact here), 2 - that for x < 0:
   erfcx(a) = t Q(t) with gelu's Q above, carried in two parts (w + *wl); exp(-a^2)
   takes a^2 exactly as 2^n (1 + e + el), and the product is summed in two parts to
   the last rounding (below one ulp; erfc underflows to 0 past a = 27.3).  Stage 1
   (the division and the polynomial) and stage 2 (the exponential and the sums) run
   as two passes over a block in the loop. */
#define EM_ERFC_D_MAX 27.3
/* d log erfcx(a) / da on gelu's s (a cubic, to 0.5%) */
EM_HD_INLINE double em_erfcx_dlog_d(double s) {
    return EM_MAD(EM_MAD(EM_MAD(-0.06764097539585139, s, -0.26003908609296356), s, -0.4806597413089167), s,
                  -0.3246499421539499);
}
/* erfcx(a) / t = c0 + c1 s + ... + c23 s^23 on s = A t + B as in gelu (A, B the
   doubles below), fit to 3e-18 relative with each coefficient from c23 down to c3
   rounded and the lower ones refit; c2..c0 in two parts.  The head (c5..c23) in
   even and odd halves, the last five Horner steps carried in two parts: p + *lo
   (the sums exact by Fast2Sum but the last, where |c0| < |p s| for s near 1). */
EM_HD_INLINE void em_erfc_2step_d(double h, double l, double s, double c, double *rh, double *rl) {
    double p = h * s, r = c + p;           /* Fast2Sum: c's exponent is at least p's here */
    *rl = em_prod_err_d(h, s, p) + ((c - r) + p) + l * s;
    *rh = r;
}
EM_HD_INLINE double em_erfc_q_d(double s, double *lo) {
    double s2 = s * s;
    double pe = 2.9988005489945947e-12, po = 9.695789781510092e-12;
    pe = EM_MAD(pe, s2, 1.3889350271311242e-11);
    po = EM_MAD(po, s2, -1.285161079681736e-10);
    pe = EM_MAD(pe, s2, -6.429938517207201e-10);
    po = EM_MAD(po, s2, 1.0945949990118802e-09);
    pe = EM_MAD(pe, s2, 8.216566663513153e-09);
    po = EM_MAD(po, s2, -8.54566746270868e-09);
    pe = EM_MAD(pe, s2, -7.081694889417868e-08);
    po = EM_MAD(po, s2, 7.09686471801888e-08);
    pe = EM_MAD(pe, s2, 3.144104148188695e-07);
    po = EM_MAD(po, s2, -6.66646658534969e-07);
    pe = EM_MAD(pe, s2, 5.447138943394742e-06);
    po = EM_MAD(po, s2, 6.937030802439046e-06);
    pe = EM_MAD(pe, s2, -0.0002224177646580923);
    po = EM_MAD(po, s2, -6.807842426859318e-05);
    pe = EM_MAD(pe, s2, 0.0039511936503362904);
    po = EM_MAD(po, s2, 0.00020392651692931833);
    po = EM_MAD(po, s2, 0.017385419029687314);
    double p = EM_MAD(pe, s, po), l;
    em_erfc_2step_d(p, 0.0, s, 0.05001484943985556, &p, &l);
    em_erfc_2step_d(p, l, s, 0.10957084768682061, &p, &l);
    em_erfc_2step_d(p, l, s, 0.19337135750665244, &p, &l);
    em_erfc_2step_d(p, l - 8.818123982562573e-18, s, 0.2820494347709027, &p, &l);
    em_gelu_2step_d(p, l + 1.6795737761451686e-17, s, 0.3437314354819738, &p, &l);
    *lo = l + 1.8275468848680337e-17;
    return p;
}
/* stage 1: erfcx(a) = w + *wl.  t = 3.5 / (3.5 + a) and s = A t + B are rounded: Q(s)
   is erfcx(a_s) / t_s at t_s = t - sl / A, a_s = 3.5 / t_s - 3.5; with
   t = t* (1 - rem / 3.5) (t* exact) and g = sl / (A t), erfcx(a) = t Q(s)
   (1 - g + (3.5 + a) L eps), eps = -rem / 3.5 - g, L = d log erfcx / da (first order) */
EM_HD_INLINE double em_erfc_s1_d(double x, double *wl) {
    double a = fabs(x);
    a = a > EM_ERFC_D_MAX ? EM_ERFC_D_MAX : a;
    double d = 3.5 + a, dl = em_twosum_err(3.5, a, d);
    double t = 3.5 / d;
    double rem = em_rem_d(3.5, t, d) - t * dl;
    double ph = t * 2.2559414990859232, s = ph - 1.2559414990859232;
    double sl = em_twosum_err(ph, -1.2559414990859232, s) + em_prod_err_d(t, 2.2559414990859232, ph);
    double l, p = em_erfc_q_d(s, &l);
    double g = sl * d * 0.1266496874276453;            /* 1 / (3.5 A) */
    double eps = EM_MAD(rem, -0.2857142857142857, -g);
    double corr = EM_MAD(d * em_erfcx_dlog_d(s), eps, -g);
    double ql = EM_MAD(corr, p, l);
    double w = t * p;
    *wl = EM_MAD(t, ql, em_prod_err_d(t, p, w));
    return w;
}
EM_HD_INLINE double em_erfc_s2_d(double x, double w, double wl) {
    double a = fabs(x);
    a = a > EM_ERFC_D_MAX ? EM_ERFC_D_MAX : a;
    double h = -(a * a), hl = em_prod_err_d(-a, a, h);
    int64_t n;
    double el, e = em_exp_q_d(h, hl, &n, &el);
    double pm = w * e, sm = w + pm;
    double tm = (em_twosum_err(w, pm, sm) + em_prod_err_d(w, e, pm)) + EM_MAD(w, el, EM_MAD(wl, e, wl));
    double pos = em_ldexp_d(sm + tm, n);
    pos = a >= EM_ERFC_D_MAX ? 0.0 : pos;
    /* x < 0: 2 - 2^n (sm + tm); 2^n is a normal factor wherever the sum matters */
    double sc = em_f64_from_bits(((n < -1000 ? -1000 : n) + 1023) << 52);
    double u = sm * sc, r = 2.0 - u;
    double neg = r + (em_twosum_err(2.0, -u, r) - tm * sc);
    double res = x < 0.0 ? neg : pos;
    return x != x ? x : res;
}
EM_HD_INLINE double em_erfc_vd(double x) {
    double wl, w = em_erfc_s1_d(x, &wl);
    return em_erfc_s2_d(x, w, wl);
}
/* gelu with the tanh approximation: 0.5 x (1 + tanh(u)) = x sigmoid(v), v = 2u =
   2 sqrt(2/pi) (x + 0.044715 x^3); the derivative s (1 + x (1 - s) v') as silu's */
EM_HD_INLINE double em_gelu_tanh_vd(double x) {
    double v = 1.5957691216057308 * (x + 0.044715 * x * x * x);
    double e = em_act_exp_d(-fabs(v));
    return x * (v < 0.0 ? e : 1.0) / (1.0 + e);
}
EM_HD_INLINE double em_gelu_tanh_grad_vd(double x) {
    double x2 = x * x;
    double v = 1.5957691216057308 * (x + 0.044715 * x2 * x);
    double dv = 1.5957691216057308 * EM_MAD(3.0 * 0.044715, x2, 1.0);
    double e = em_act_exp_d(-fabs(v)), inv = 1.0 / (1.0 + e);
    double s = (v < 0.0 ? e : 1.0) * inv, oms = (v < 0.0 ? 1.0 : e) * inv;
    return s * EM_MAD(x * oms, dv, 1.0);
}
/* expm1(y) for y <= 0 (elu): 2^n (1 + q) - 1 = 2^n q + (2^n - 1) in one rounding,
   2^n - 1 exact (n = 0 below |y| = ln2/2 leaves q itself); -1 from y = -40 on */
EM_HD_INLINE double em_expm1_neg_d(double y) {
    int64_t n;
    double q = em_act_expq_d(y < -40.0 ? -40.0 : y, &n);
    double tn = em_f64_from_bits((n + 1023) << 52);
    double r = EM_MAD(tn, q, tn - 1.0);
    return y == 0.0 ? y : r;
}
/* log1p(e) for e in [0, 1]: fdlibm's log1p with u = 1 + e in [1, 2], so its
   correction c / u (c = e - (u - 1), below 2^-53) takes 1 / u as 1 - f + f^2 / 2,
   f = u - 1 (enough where c / u matters), and its one division is s = f / (2 + f) */
EM_HD_INLINE double em_log1p_unit_d(double e) {
    double u = 1.0 + e, f = u - 1.0, c = e - f;
    int hi = u > 1.4142135623730951;
    double fm = hi ? 0.5 * u - 1.0 : f, k = hi ? 1.0 : 0.0;
    double s = fm / (2.0 + fm), z = s * s, w = z * z;
    double t1 = w * EM_MAD(w, EM_MAD(w, 1.531383769920937332e-01, 2.222219843214978396e-01), 3.999999999940941908e-01);
    double t2 = z * EM_MAD(w, EM_MAD(w, EM_MAD(w, 1.479819860511658591e-01, 1.818357216161805012e-01), 2.857142874366239149e-01), 6.666666666666735130e-01);
    double hfsq = 0.5 * fm * fm;
    double cu = c * EM_MAD(0.5 * f, f, 1.0 - f);
    return k * 6.93147180369123816490e-01 - ((hfsq - (s * (hfsq + t1 + t2) + (k * 1.90821492927058770002e-10 + cu))) - fm);
}
/* softplus(z) = max(z, 0) + log1p(exp(-|z|)), z = beta x: no overflow */
EM_HD_INLINE double em_softplus1_vd(double z) {
    double m = z > 0.0 ? z : 0.0;
    return m + em_log1p_unit_d(em_act_exp_d(-fabs(z)));
}
EM_HD_INLINE double em_softplus_vd(double x, double beta, double thr) {
    double z = x * beta;
    return z > thr ? x : em_softplus1_vd(z) / beta;
}
/* mish = x tanh(log1p(n)), n = e^x, = x q / (q + 2) with q = n (n + 2): one
   exponential and one division; x beyond 20 is its own mish (as torch's tanh) */
EM_HD_INLINE double em_mish_vd(double x) {
    double n = em_act_exp_d(x > 20.0 ? 20.0 : x), q = n * (n + 2.0);
    return x > 20.0 ? x : x * q / (q + 2.0);
}
/* mish' = tanh(sp) + x sigmoid(x) (1 - tanh(sp)^2) = (q D + 4 x n (n + 1)) / D^2
   with D = q + 2 (1 - tanh^2 = 4 (q + 1) / D^2, q + 1 = (n + 1)^2); 1 beyond 40,
   NaN at +inf (inf * 0, as torch) */
EM_HD_INLINE double em_mish_grad_vd(double x) {
    double n = em_act_exp_d(x > 40.0 ? 40.0 : x), q = n * (n + 2.0), d = q + 2.0;
    double r = EM_MAD(q, d, 4.0 * x * n * (n + 1.0)) / (d * d);
    return x > 40.0 ? (x == INFINITY ? NAN : 1.0) : r;
}
/* log1p(t) for t in (0, 1]: 1 + t = 2^e (1 + f) with f = t (e = 0) or (t - 1)/2 (e = 1,
   1 + t > sqrt 2), so f is known without rounding 1 + t, and log1p(t) = e ln2 +
   2 atanh(s), s = f / (2 + f), |s| < 0.172, the series to s^23 (one division).
   Returns s rounded; *e gets e, *tail the rest of atanh(s) - s with s's own
   rounding error, for the callers to scale and sum in two parts. */
EM_HD_INLINE double em_log1p_unit_atanh_d(double t, int *e, double *tail) {
    int e1 = t > 0.41421356237309503;
    double f = e1 ? 0.5 * (t - 1.0) : t;
    double dh = 2.0 + f, dl = (2.0 - dh) + f;
    double inv = 1.0 / dh;
    double sh = f * inv, sl = (em_rem_d(f, sh, dh) - sh * dl) * inv;
    double z = sh * sh;
    double p = 0.043478260869565216;
    p = EM_MAD(p, z, 0.047619047619047616);
    p = EM_MAD(p, z, 0.05263157894736842);
    p = EM_MAD(p, z, 0.058823529411764705);
    p = EM_MAD(p, z, 0.06666666666666667);
    p = EM_MAD(p, z, 0.07692307692307693);
    p = EM_MAD(p, z, 0.09090909090909091);
    p = EM_MAD(p, z, 0.1111111111111111);
    p = EM_MAD(p, z, 0.14285714285714285);
    p = EM_MAD(p, z, 0.2);
    p = EM_MAD(p, z, 0.3333333333333333);
    *e = e1;
    *tail = EM_MAD(sh * z, p, sl);
    return sh;
}
/* logaddexp = m + log1p(t), m = max(a, b), t = exp(-|a - b|) in (0, 1]; m + that
   summed in two parts */
EM_HD_INLINE double em_logaddexp_vd(double a, double b) {
    double m = a > b ? a : b;
    int e1;
    double q, sh = em_log1p_unit_atanh_d(em_exp_d(-fabs(a - b)), &e1, &q);
    double c0 = e1 ? 6.93147180369123816490e-01 : 0.0;
    double lh = c0 + 2.0 * sh;
    double ll = ((c0 - lh) + 2.0 * sh) + (2.0 * q + (e1 ? 1.90821492927058770002e-10 : 0.0));
    double v = m + lh, vl = em_twosum_err(m, lh, v) + ll;
    double r = v + vl;
    r = fabs(m) == INFINITY ? m : r;
    return (a != a) | (b != b) ? a + b : r;
}

/* 2^x for float32 x >= -125 (the loops send smaller x to em_exp2f): n = round(x)
   through the 1.5 * 2^23 shifter, f = x - n exact, 2^f = 1 + f q(f) a degree-6 fit
   on |f| <= 1/2 (relative error 3.6e-9, float coefficients), and n added to the
   exponent bits; integers are exact, x >= 128 gives inf */
EM_HD_INLINE float em_exp2_vf(float x) {
    float xc = x > 128.0f ? 128.0f : x;
    float kf = xc + 12582912.0f;
    float f = xc - (kf - 12582912.0f);
    float p = 0.00015238006017170846f;
    p = EM_MADF(p, f, 0.0013391136890277267f);
    p = EM_MADF(p, f, 0.009618841111660004f);
    p = EM_MADF(p, f, 0.055503591895103455f);
    p = EM_MADF(p, f, 0.24022644758224487f);
    p = EM_MADF(p, f, 0.6931471824645996f);
    p = EM_MADF(p, f, 1.0f);
    float r = em_f32_from_bits(em_f32_bits(p) + (em_f32_bits(kf) << 23));
    return x != x ? x : r;
}

/* exp(-a) 2^32 for 0 <= a <= 108 (normal throughout): the 1.5 * 2^23 shifter
   rounds a / ln2 (its low bits carry n + 32 for the exponent), r = -a + n ln2 in
   two FMAs, expm1(r) a degree-7 fit (absolute error 1e-10), n + 32 added to the
   exponent bits */
EM_HD_INLINE float em_exp_neg_scaled_vf(float a) {
    float kf = EM_MADF(a, -1.44269504088896341f, 12582944.0f);     /* 1.5 * 2^23 + 32 + n */
    float nf = kf - 12582944.0f;
    float r = EM_MADF(nf, -0.693359375f, -a);
    r = EM_MADF(nf, 2.12194440e-4f, r);
    float q = 0.00019953405717387795f;
    q = EM_MADF(q, r, 0.001393576036207378f);
    q = EM_MADF(q, r, 0.008333197794854641f);
    q = EM_MADF(q, r, 0.04166645556688309f);
    q = EM_MADF(q, r, 0.1666666716337204f);
    q = EM_MADF(q, r, 0.5f);
    float y = EM_MADF(q, r * r, r) + 1.0f;
    return em_f32_from_bits(em_f32_bits(y) + (em_f32_bits(kf) << 23));
}
/* sigmoid and silu as em_sigmoidf / em_siluf (num / (1 + e), e = exp(-|x|) formed
   times 2^32 so the tail reaches the subnormal range) with the exponential above */
EM_HD_INLINE float em_sigmoid_vf(float x) {
    float a = fabsf(x);
    float es = em_exp_neg_scaled_vf(a > 108.0f ? 108.0f : a);
    float d = EM_MADF(es, 2.3283064365386963e-10f, 1.0f);
    float r = (x < 0.0f ? es * 2.3283064365386963e-10f : 1.0f) / d;
    return x != x ? x : r;
}
EM_HD_INLINE float em_silu_vf(float x) {
    float a = fabsf(x);
    int32_t ab = em_f32_bits(a);
    float es = em_exp_neg_scaled_vf(em_f32_from_bits(ab < 0x42d80000 ? ab : 0x42d80000));   /* min(a, 108) */
    es = a > 108.0f ? 0.0f : es;                    /* x e^x is 0 there (-inf gives NaN) */
    float d = EM_MADF(es, 2.3283064365386963e-10f, 1.0f);
    float r = (x * (x < 0.0f ? es : 1.0f)) / d;     /* NaN passes through the product */
    return x < 0.0f ? r * 2.3283064365386963e-10f : r;
}

/* sin, cos and tan of float32 for every finite x.  Below EM_TRIG_MAX the
   reduction of em_sincosf_red; above it Payne-Hanek: |x| = M 2^(E-23) with a
   24-bit integer M, and x 2/pi mod 4 from M times the first 224 bits of 2/pi
   (0.A2F9836E 4E441529 ...) in 32-bit words.  The window kept holds the
   quadrant, 62 fraction bits and 32 more, so r = x - n pi/2 keeps more than
   50 good bits even for the float closest to a multiple of pi/2 (about
   2^-30 of it); the polynomials of em_sincosf_red follow (under 0.6 ulp). */
EM_HD_INLINE uint64_t em_bits64_at(const uint32_t b[8], int r) {
    int j = r >> 5, sh = r & 31;
    uint64_t lo = ((uint64_t)b[j + 1] << 32) | b[j];
    return sh ? (lo >> sh) | ((uint64_t)b[j + 2] << (64 - sh)) : lo;
}
EM_HD_INLINE void em_sincosf_any_red(float x, double *sr, double *cr, int32_t *q) {
    if (fabsf(x) < EM_TRIG_MAX) {
        em_sincosf_red(x, sr, cr, q);
        return;
    }
    uint32_t ix;
    memcpy(&ix, &x, 4);
    const uint64_t m = (ix & 0x7fffffu) | 0x800000u;
    const int s = (int)((ix >> 23) & 0xff) - 127 - 23;     /* |x| = m 2^s, s >= -3 */
    /* b = m * (2/pi) * 2^224, little-endian words */
    uint32_t b[8];
    uint64_t u = m * 0xfe5163abu;
    b[0] = (uint32_t)u;
    u = m * 0x3c439041u + (u >> 32); b[1] = (uint32_t)u;
    u = m * 0xdb629599u + (u >> 32); b[2] = (uint32_t)u;
    u = m * 0xf534ddc0u + (u >> 32); b[3] = (uint32_t)u;
    u = m * 0xfc2757d1u + (u >> 32); b[4] = (uint32_t)u;
    u = m * 0x4e441529u + (u >> 32); b[5] = (uint32_t)u;
    u = m * 0xa2f9836eu + (u >> 32); b[6] = (uint32_t)u;
    b[7] = (uint32_t)(u >> 32);
    /* bit 162 - s of b is 2^-62 of |x| 2/pi: the top two bits of w are the
       quadrant, the rest the fraction; f (units of 2^-64) is it rounded to the
       nearest quadrant, as a signed number */
    const int r0 = 162 - s;
    const uint64_t w = em_bits64_at(b, r0);
    const uint32_t low = (uint32_t)em_bits64_at(b, r0 - 32);
    const int64_t f = (int64_t)(w << 2);
    int32_t n = (int32_t)(w >> 62) + (f < 0);
    double r = ((double)f + (double)low * 9.313225746154785e-10)       /* 2^-30 */
               * 8.515303950216386e-20;                                 /* pi/2 2^-64 */
    if (x < 0.0f) {
        n = -n;
        r = -r;
    }
    double z = r * r, v = z * z;
    *sr = (r + r * z * EM_MAD(z, 0.008333329385889463, -0.16666666641626524))
          + r * z * v * EM_MAD(z, 2.718311493989822e-06, -0.00019839334836096632);
    *cr = (EM_MAD(z, -0.499999997251031, 1.0) + v * 0.04166662332373906)
          + v * z * EM_MAD(z, 2.439044879627741e-05, -0.001388676377460993);
    *q = n;
}
EM_HD_INLINE float em_sinf_any(float x) {
    double s, c;
    int32_t q;
    if (!(fabsf(x) <= 3.4028234663852886e38f)) return x - x;   /* NaN for inf and NaN */
    em_sincosf_any_red(x, &s, &c, &q);
    double r = (q & 1) ? c : s;
    r = (q & 2) ? -r : r;
    return x == 0.0f ? x : (float)r;
}
EM_HD_INLINE float em_cosf_any(float x) {
    double s, c;
    int32_t q;
    if (!(fabsf(x) <= 3.4028234663852886e38f)) return x - x;
    em_sincosf_any_red(x, &s, &c, &q);
    double r = (q & 1) ? -s : c;
    return (float)((q & 2) ? -r : r);
}
EM_HD_INLINE float em_tanf_any(float x) {
    double s, c;
    int32_t q;
    if (!(fabsf(x) <= 3.4028234663852886e38f)) return x - x;
    em_sincosf_any_red(x, &s, &c, &q);
    double num = (q & 1) ? -c : s, den = (q & 1) ? s : c;
    return x == 0.0f ? x : (float)(num / den);
}

/* ==== float32 pow, atanh and softplus without divisions in their logs =========
   pow and atanh work in double with a log and an exp accurate to about 2^-35
   (enough for one float rounding: under 0.51 ulp), softplus in float. */

/* log of a positive normal double: t = 2^e m, m in [sqrt(1/2), sqrt(2)) by
   integer arithmetic on the bits, f = m - 1 exact, log1p(f) = f P(f) with P a
   degree-12 fit (relative error 2^-35.8) */
EM_HD_INLINE double em_log_f32d(double t) {
    int64_t it = em_f64_bits(t);
    int64_t e = (it - 0x3fe6a09e667f3bccLL) >> 52;
    double f = em_f64_from_bits(it - (e << 52)) - 1.0;
    double p = 0.053487393441579156;
    p = EM_MAD(p, f, -0.09890402611609031);
    p = EM_MAD(p, f, 0.10034966291793324);
    p = EM_MAD(p, f, -0.0992539718340875);
    p = EM_MAD(p, f, 0.11005144898226121);
    p = EM_MAD(p, f, -0.12497255798497793);
    p = EM_MAD(p, f, 0.14290970957554383);
    p = EM_MAD(p, f, -0.16666952653928147);
    p = EM_MAD(p, f, 0.19999881808054076);
    p = EM_MAD(p, f, -0.24999993923046218);
    p = EM_MAD(p, f, 0.3333333432568133);
    p = EM_MAD(p, f, -0.5000000003018834);
    p = EM_MAD(p, f, 0.9999999999860991);
    return EM_MAD((double)e, 0.6931471805599453, f * p);
}
/* exp(y) in double for a float result: y clamped to [-110, 100] (0 and inf once
   rounded to float), n = round(y / ln2) through the 1.5 * 2^52 shifter, a degree-7
   fit on |r| <= ln2/2 (relative error 2^-34.5), 2^n added to the exponent bits */
EM_HD_INLINE double em_exp_f32d(double y) {
    y = y > 100.0 ? 100.0 : (y < -110.0 ? -110.0 : y);
    double kd = EM_MAD(y, 1.4426950408889634, 6755399441055744.0);
    double n = kd - 6755399441055744.0;
    double r = EM_MAD(n, -6.93147180369123816490e-01, y);
    r = EM_MAD(n, -1.90821492927058770002e-10, r);
    double p = 0.0001977433876575453;
    p = EM_MAD(p, r, 0.001394817854652562);
    p = EM_MAD(p, r, 0.008333562823072812);
    p = EM_MAD(p, r, 0.04166622551128062);
    p = EM_MAD(p, r, 0.1666666511587862);
    p = EM_MAD(p, r, 0.5000000104497799);
    p = EM_MAD(p, r, 1.0000000002446057);
    p = EM_MAD(p, r, 0.9999999999617074);
    return p * em_f64_from_bits((em_f64_bits(kd) + 1023) << 52);
}
/* pow for a normal (nonzero, finite, not subnormal) and b finite: |a|^b from
   exp(b log |a|), its error in y = b log|a| below 2^-29 wherever the result is a
   normal float; a < 0 takes the sign of odd integer b, NaN for non-integer b.  The
   loops send the other inputs to libm's powf. */
EM_HD_INLINE float em_pow_vf(float a, float b) {
    float r = (float)em_exp_f32d((double)b * em_log_f32d((double)fabsf(a)));
    float bt = truncf(b), ht = 0.5f * bt;
    int odd = truncf(ht) != ht;                      /* |b| >= 2^24: every float is even */
    float neg = bt == b ? (odd ? -r : r) : NAN;
    return a < 0.0f ? neg : r;
}
#define EM_POW_BAD(a, b) ((!(fabsf(a) >= 1.17549435e-38f)) | (!(fabsf(a) < INFINITY)) | \
                          (!(fabsf(b) < INFINITY)))

/* atanh of a float32 in double, rounded once: 1 +- x are exact, so
   log((1 + x)/(1 - x)) / 2 has one division and one log; below 2^-10 the series
   x + x^3/3 (the quotient's rounding would dominate there).  +-1 give +-inf,
   abs(x) > 1 and NaN give NaN. */
EM_HD_INLINE float em_atanh_vf(float x) {
    double xd = x;
    double q = (1.0 + xd) / (1.0 - xd);
    q = q > 0.0 && q < 1e300 ? q : 1.0;              /* abs(x) >= 1 and NaN: fixed below */
    double big = 0.5 * em_log_f32d(q);
    double small = EM_MAD(xd * xd, xd * 0.33333333333333333, xd);
    float r = (float)(fabs(xd) < 0.0009765625 ? small : big);
    float ax = fabsf(x);
    r = ax == 1.0f ? copysignf(INFINITY, x) : r;
    return (ax > 1.0f) | (x != x) ? NAN : r;
}

/* log1p(e) for e in [0, 1] in float, no division: 1 + e = 2^k (1 + f) with f = e
   (k = 0) or (e - 1)/2 (k = 1, e >= sqrt(2) - 1) and the rounding error of e - 1
   carried as c; log1p(f) = f - f^2/2 + f^3 g(f) with em_logf's g */
EM_HD_INLINE float em_log1p_unit_partf(float e, int big) {
    float d = e - 1.0f;                              /* exact for e >= 1/2 */
    float lo = e - (d + 1.0f);                       /* its rounding error below 1/2 */
    float f = big ? 0.5f * d : e;
    float c = big ? 0.5f * lo : 0.0f;
    float z = f * f;
    float g = -0.062015001190183347f;
    g = EM_MADF(g, f, 0.10530864738938345f);
    g = EM_MADF(g, f, -0.10646191638199634f);
    g = EM_MADF(g, f, 0.1103778335905502f);
    g = EM_MADF(g, f, -0.12450743320911726f);
    g = EM_MADF(g, f, 0.14286524547786642f);
    g = EM_MADF(g, f, -0.16668001523071928f);
    g = EM_MADF(g, f, 0.20000010039684972f);
    g = EM_MADF(g, f, -0.24999990275042185f);
    g = EM_MADF(g, f, 0.33333333281199244f);
    return EM_MADF(f * z, g, EM_MADF(-0.5f, z, EM_MADF(-c, f, c))) + f;   /* c / (1 + f) */
}
/* (em_log1p_unit_partf is log1p(e) less k ln2, k = big: logaddexp2 scales it first) */
EM_HD_INLINE float em_log1p_unitf(float e) {
    int big = e >= 0.41421356237309515f;
    float r = em_log1p_unit_partf(e, big);
    return r + (big ? 0.693147180559945309f : 0.0f);
}
/* logaddexp2 = m + log2(1 + 2^-d), m = max(a, b), in float with TwoSums: d = |a - b| as
   dh + dl, 2^-d = 2^-dh (1 - dl ln2) with 2^-dh formed times 2^32 past d = 100 (normal
   down to d = 157); log2(1 + e) = k + log1p(f) / ln2 with em_log1p_unit_partf's f, 1/ln2 as
   hi + lo, and m + that summed in two parts and rounded once (m close to
   -log2(1 + e) keeps its digits); NaN in, NaN out; equal infinities give themselves */
EM_HD_INLINE float em_logaddexp2f(float a, float b) {
    float m = a > b ? a : b;
    float d = a - b, bb = d - a;
    float de = (a - (d - bb)) + (-b - bb);
    float dh = fabsf(d), dl = d < 0.0f ? -de : de;
    dl = dh < 157.0f ? dl : 0.0f;
    dh = dh < 157.0f ? dh : 157.0f;
    int far = dh > 100.0f;                           /* 32 - dh exact there */
    float e = em_exp2_vf((far ? 32.0f : 0.0f) - dh) * (far ? 2.3283064365386963e-10f : 1.0f);
    e = EM_MADF(e, -0.693147180559945309f * dl, e);
    int big = e >= 0.41421356237309515f;
    float q = em_log1p_unit_partf(e, big), k = big ? 1.0f : 0.0f;
    float l = EM_MADF(q, 1.44269502162933349609f, k);
    float le = EM_MADF(q, 1.44269502162933349609f, k - l) + q * 1.925963033500011e-08f;
    float r = m + l, rb = r - m;
    float re = ((m - (r - rb)) + (l - rb)) + le;
    r = r + re;
    r = (a != a) | (b != b) ? a + b : r;
    return (m == INFINITY) | (m == -INFINITY) ? m : r;
}
/* float64 logaddexp2 as em_logaddexp_vd with base 2: t = 2^-d, 1 + t = 2^k (1 + f),
   log2(1 + t) = k + (2/ln2) atanh(f / (2 + f)), the product with 2/ln2 (hi + lo)
   carried in two parts and m + that summed in two parts */
EM_HD_INLINE double em_logaddexp2_t_d(double a, double b, double m, double t) {
    int e1;
    double q, sh = em_log1p_unit_atanh_d(t, &e1, &q);
    const double kh = 2.8853900817779268, kl = 4.0710547481862066e-17;   /* 2 / ln2 */
    double uh = kh * sh;
    double ul = em_prod_err_d(kh, sh, uh) + EM_MAD(kl, sh, kh * q);
    double c0 = e1 ? 1.0 : 0.0;
    double lh = c0 + uh, ll = ((c0 - lh) + uh) + ul;
    double v = m + lh, vl = em_twosum_err(m, lh, v) + ll;
    double r = v + vl;
    r = fabs(m) == INFINITY ? m : r;
    return (a != a) | (b != b) ? a + b : r;
}
/* d = |a - b| as dh + dl (TwoSum): 2^-d = 2^-dh (1 - dl ln2) */
#define EM_LAE2_D_SPLIT(a, b, dh, dl)                                                  \
    double d_ = (a) - (b), bb_ = d_ - (a);                                          \
    double de_ = ((a) - (d_ - bb_)) + (-(b) - bb_);                                 \
    double dh = fabs(d_), dl = d_ < 0.0 ? -de_ : de_;                               \
    dl = dl == dl ? dl : 0.0;
EM_HD_INLINE double em_logaddexp2_vd(double a, double b) {
    double m = a > b ? a : b;
    EM_LAE2_D_SPLIT(a, b, dh, dl)
    double t = em_exp2_vd(-dh);
    return em_logaddexp2_t_d(a, b, m, EM_MAD(t, -0.6931471805599453 * dl, t));
}
/* for |a - b| <= EM_EXP2_FAST_MAX (2^-d normal): the loops send the rest to em_logaddexp2_vd */
EM_HD_INLINE double em_logaddexp2_fast_d(double a, double b) {
    double m = a > b ? a : b;
    EM_LAE2_D_SPLIT(a, b, dh, dl)
    double t = em_exp2_fast_d(-dh);
    return em_logaddexp2_t_d(a, b, m, EM_MAD(t, -0.6931471805599453 * dl, t));
}
/* nextafter as a select on the bits (vectorises): one step away from or towards zero
   on the magnitude, the smallest subnormal of y's sign from a zero, y itself when
   equal (so nextafter(0.0, -0.0) is -0.0), NaN when either is */
EM_HD_INLINE float em_nextafterf(float x, float y) {
    int32_t away = (y > x) == (x > 0.0f);
    float r = em_f32_from_bits(em_f32_bits(x) + (away ? 1 : -1));
    r = x == 0.0f ? em_f32_from_bits(y > 0.0f ? 1 : (int32_t)0x80000001u) : r;
    r = x == y ? y : r;
    return (x != x) | (y != y) ? x + y : r;
}
EM_HD_INLINE double em_nextafter_d(double x, double y) {
    int64_t away = (y > x) == (x > 0.0);
    double r = em_f64_from_bits(em_f64_bits(x) + (away ? 1 : -1));
    r = x == 0.0 ? em_f64_from_bits(y > 0.0 ? 1 : (int64_t)0x8000000000000001ull) : r;
    r = x == y ? y : r;
    return (x != x) | (y != y) ? x + y : r;
}
/* softplus(t) = max(t, 0) + log1p(exp(-|t|)): no overflow, and e^t's tail
   (subnormal below t = -87.3, 0 below -103.9) rounds once */
EM_HD_INLINE float em_softplus1_vf(float t) {
    float a = fabsf(t);
    float e = em_exp_neg_scaled_vf(a > 108.0f ? 108.0f : a) * 2.3283064365386963e-10f;
    return (!(t <= 0.0f) ? t : 0.0f) + em_log1p_unitf(e);   /* NaN passes */
}

/* erfinv of a float64 with |y| < 1 (the loops send the rest to the scalar code):
   a first guess good to 1e-9 and one Newton step, which squares that error, on
   erf(x) - |y| (below x = 1.25; x - |y| and erx - |y| exact) or erfc(x) - (1 - |y|)
   (above; 1 - |y| exact, erfc to about an ulp moves x by 2^-53 / (2 x^2) of
   itself).  The guess: w = -log(1 - y^2) (a float-accurate log suffices) and
   Chebyshev fits of erfinv(y)/y, degree 12 in w below w = 6.25 and degree 16 in
   sqrt(w) beyond (the ranges of M. Giles, "Approximating the erfinv function",
   GPU Computing Gems Jade, 2011); the Newton step's derivative to float accuracy. */
#define EM_ERFINV_D_MAX 0.9999999999999999
/* The guess pass is bound by the latency of its polynomial chains, not by its
   arithmetic: each polynomial runs as three Horner chains combined in u^k. */
/* log(t) to about 2^-35: em_log_f32d's reduction and polynomial */
EM_HD_INLINE double em_erfinv_log_d(double t) {
    int64_t it = em_f64_bits(t);
    int64_t e = (it - 0x3fe6a09e667f3bccLL) >> 52;
    double f = em_f64_from_bits(it - (e << 52)) - 1.0;
    double p0 = 0.19999881808054076, p1 = -0.0992539718340875, p2 = 0.053487393441579156;
    p0 = EM_MAD(p0, f, -0.24999993923046218);
    p1 = EM_MAD(p1, f, 0.11005144898226121);
    p2 = EM_MAD(p2, f, -0.09890402611609031);
    p0 = EM_MAD(p0, f, 0.3333333432568133);
    p1 = EM_MAD(p1, f, -0.12497255798497793);
    p2 = EM_MAD(p2, f, 0.10034966291793324);
    p0 = EM_MAD(p0, f, -0.5000000003018834);
    p1 = EM_MAD(p1, f, 0.14290970957554383);
    p0 = EM_MAD(p0, f, 0.9999999999860991);
    p1 = EM_MAD(p1, f, -0.16666952653928147);
    double f2 = f * f, f5 = f2 * f2 * f;
    return EM_MAD((double)e, 0.6931471805599453, f * EM_MAD(EM_MAD(p2, f5, p1), f5, p0));
}
EM_HD_INLINE double em_erfinv_guess_tail(double w) {
    double u = sqrt(w) - 4.35;
    double p0 = -5.2806396916781874e-05, p1 = -6.401513538129171e-07, p2 = 1.7166730326082437e-09;
    p0 = EM_MAD(p0, u, 0.00018296625515219558);
    p1 = EM_MAD(p1, u, 8.226874748305026e-07);
    p2 = EM_MAD(p2, u, 7.675581883248291e-10);
    p0 = EM_MAD(p0, u, -0.000529127141408308);
    p1 = EM_MAD(p1, u, -1.507799801025371e-06);
    p2 = EM_MAD(p2, u, -4.273599373298776e-08);
    p0 = EM_MAD(p0, u, 0.0005424975546582219);
    p1 = EM_MAD(p1, u, 3.6778199572637106e-06);
    p2 = EM_MAD(p2, u, 6.450214920209804e-08);
    p0 = EM_MAD(p0, u, 1.010103413003324);
    p1 = EM_MAD(p1, u, -7.0479598914404025e-06);
    p2 = EM_MAD(p2, u, 1.9752357132213102e-07);
    p0 = EM_MAD(p0, u, 4.193227791584444);
    p1 = EM_MAD(p1, u, 1.6134999142691493e-05);
    double u2 = u * u, u6 = u2 * u2 * u2;
    return EM_MAD(EM_MAD(p2, u6, p1), u6, p0);
}
EM_HD_INLINE double em_erfinv_guess_mid(double w) {
    double u = w - 3.125;
    double p0 = 0.00018673466051691629, p1 = -4.752745619151995e-09, p2 = -1.2570814414523687e-11;
    p0 = EM_MAD(p0, u, -0.0007406910325430195);
    p1 = EM_MAD(p1, u, -2.895896037948332e-08);
    p2 = EM_MAD(p2, u, 5.688216479117087e-12);
    p0 = EM_MAD(p0, u, -0.006033671032285515);
    p1 = EM_MAD(p1, u, 4.2698513895053384e-07);
    p2 = EM_MAD(p2, u, 1.0363882341451174e-09);
    p0 = EM_MAD(p0, u, 0.24015817844735166);
    p1 = EM_MAD(p1, u, -1.3658217507589212e-06);
    p0 = EM_MAD(p0, u, 1.6536545626831027);
    p1 = EM_MAD(p1, u, -1.389214124592301e-05);
    double u2 = u * u, u5 = u2 * u2 * u;
    return EM_MAD(EM_MAD(p2, u5, p1), u5, p0);
}
/* The Newton step's exp and R/S as em_exp_normal_d and em_erfc_rs_dd (in plain
   double), their polynomials as several Horner chains for the same reason */
EM_HD_INLINE double em_erfinv_exp_d(double x) {
    double kd = x * 1.4426950408889634 + 6755399441055744.0;
    int64_t n = em_f64_bits(kd) - 0x4338000000000000LL;
    double fn = kd - 6755399441055744.0;
    double r = (x - fn * 6.93147180369123816490e-01) - fn * 1.90821492927058770002e-10;
    double p0 = 0.008333333333333333, p1 = 2.7557319223985893e-06, p2 = 1.6059043836821613e-10;
    p0 = EM_MAD(p0, r, 0.041666666666666664);
    p1 = EM_MAD(p1, r, 2.48015873015873e-05);
    p2 = EM_MAD(p2, r, 2.08767569878681e-09);
    p0 = EM_MAD(p0, r, 0.16666666666666666);
    p1 = EM_MAD(p1, r, 0.0001984126984126984);
    p2 = EM_MAD(p2, r, 2.505210838544172e-08);
    p0 = EM_MAD(p0, r, 0.5);
    p1 = EM_MAD(p1, r, 0.001388888888888889);
    p2 = EM_MAD(p2, r, 2.755731922398589e-07);
    double r2 = r * r, r4 = r2 * r2;
    double p = EM_MAD(EM_MAD(EM_MAD(p2, r4, p1), r4, p0), r2, r) + 1.0;
    return em_f64_from_bits(em_f64_bits(p) + (int64_t)((uint64_t)n << 52));
}
EM_HD_INLINE void em_erfinv_rs_d(double a, double s, double *rn, double *rd) {
#define C(ra, rb) (a >= 2.857142857142857 ? (rb) : (ra))
    double r0 = C(-6.23753324503260060396e+01, -1.60636384855821916062e+02);
    double r1 = C(-9.81432934416914548592e+00, 0.0);
    r0 = EM_MAD(r0, s, C(-1.05586262253232909814e+01, -1.77579549177547519889e+01));
    r1 = EM_MAD(r1, s, C(-8.12874355063065934246e+01, -4.83519191608651397019e+02));
    r0 = EM_MAD(r0, s, C(-6.93858572707181764372e-01, -7.99283237680523006574e-01));
    r1 = EM_MAD(r1, s, C(-1.84605092906711035994e+02, -1.02509513161107724954e+03));
    r0 = EM_MAD(r0, s, C(-9.86494403484714822705e-03, -9.86494292470009928597e-03));
    r1 = EM_MAD(r1, s, C(-1.62396669462573470355e+02, -6.37566443368389627722e+02));
    double q0 = C(6.45387271733267880336e+02, 3.19985821950859553908e+03);
    double q1 = C(-6.04244152148580987438e-02, 0.0);
    q0 = EM_MAD(q0, s, C(4.34565877475229228821e+02, 1.53672958608443695994e+03));
    q1 = EM_MAD(q1, s, C(6.57024977031928170135e+00, -2.24409524465858183362e+01));
    q0 = EM_MAD(q0, s, C(1.37657754143519042600e+02, 3.25792512996573918826e+02));
    q1 = EM_MAD(q1, s, C(1.08635005541779435134e+02, 4.74528541206955367215e+02));
    q0 = EM_MAD(q0, s, C(1.96512716674392571292e+01, 3.03380607434824582924e+01));
    q1 = EM_MAD(q1, s, C(4.29008140027567833386e+02, 2.55305040643316442583e+03));
    q0 = EM_MAD(q0, s, 1.0);
#undef C
    double s2 = s * s, s4 = s2 * s2, s5 = s4 * s;
    *rn = EM_MAD(r1, s4, r0);
    *rd = EM_MAD(q1, s5, q0);
}
/* the first guess, erfinv(|y|) to about 1e-9 */
EM_HD_INLINE double em_erfinv_guess_d(double y) {
    double a = fabs(y);
    double t = (1.0 - a) * (1.0 + a);
    double w = -em_erfinv_log_d(t > 0.0 ? t : 1.0);
    double x0 = w < 6.25 ? em_erfinv_guess_mid(w) : em_erfinv_guess_tail(w);
    return x0 * a;
}
/* the Newton step from x = em_erfinv_guess_d(y) (the loops run the two in separate
   passes over a block: shorter dependency chains per pass, about 1.6x faster) */
EM_HD_INLINE double em_erfinv_quo_d(double x, double *ih) {
    /* erf(x) - a: x + x P/Q below 0.84375, erx + P1/Q1 to 1.25 (x - a, erx - a exact);
       (1 - a) - erfc(x) beyond, erfc = exp(-x^2 - 0.5625 + R/S) / x with -x^2 exact
       and the exponent's rounding carried to first order.  One division for the
       three quotients, one for 1/x. */
    double xc = x < 1.25 ? 1.25 : x;
    *ih = 1.0 / xc;
    double z = x * x;
    double num = x < 0.84375 ? em_erf_pq_num_d(z) : em_erf_mid_p_d(x - 1.0);
    double den = x < 0.84375 ? em_erf_pq_den_d(z) : em_erf_mid_q_d(x - 1.0);
    double rn, rd;
    em_erfinv_rs_d(xc, *ih * *ih, &rn, &rd);
    num = x < 1.25 ? num : rn;
    den = x < 1.25 ? den : rd;
    return num / den;
}
/* the rest of the step from the quotient and 1/max(x, 1.25) */
EM_HD_INLINE double em_erfinv_step_d(double y, double x, double quo, double ih) {
    double a = fabs(y), xc = x < 1.25 ? 1.25 : x;
#if EM_FMA_OK
    double r1 = fma(x, quo, x - a);
#else
    /* x quo in two parts: its rounding would move x by up to 0.2 ulp */
    double xq = x * quo, r1 = (xq + (x - a)) + em_prod_err_d(x, quo, xq);
#endif
    double r2 = (8.45062911510467529297e-01 - a) + quo;
    double a2 = xc * xc, a2l = em_prod_err_d(xc, xc, a2);
    double m = (-0.5625 - a2l) + quo;
    double e = m - a2, el = em_twosum_err(m, -a2, e);
    double ex = em_erfinv_exp_d(e);                  /* -40 < e < -1.5 */
    /* erfc = ex (1 + el) (ih + il), its leading product split off exactly: (1 - a)
       less it is exact (Sterbenz), so erfc keeps about the exponential's error */
    double il = em_rem_d(1.0, ih, xc) * ih, eh = ex * ih;
    double r3 = ((1.0 - a) - eh) - (em_prod_err_d(ex, ih, eh) + ex * EM_MAD(el, ih, il));
    double res = x < 0.84375 ? r1 : r2;
    res = x < 1.25 ? res : r3;
    x = x - res * (0.88622692545275801365 * em_exp_f32d(x * x));
    return copysign(x, y);
}
EM_HD_INLINE double em_erfinv_newton_d(double y, double x) {
    double ih, quo = em_erfinv_quo_d(x, &ih);
    return em_erfinv_step_d(y, x, quo, ih);
}
EM_HD_INLINE double em_erfinv_vd(double y) {
    return em_erfinv_newton_d(y, em_erfinv_guess_d(y));
}
/* log sigmoid(x) = min(x, 0) - log1p(exp(-|x|)), torch's formula (no cancellation:
   both terms are <= 0), the exponential's tail rounded once as in softplus */
EM_HD_INLINE float em_logsigmoid_vf(float x) {
    float a = fabsf(x);
    float e = em_exp_neg_scaled_vf(a > 108.0f ? 108.0f : a) * 2.3283064365386963e-10f;
    float r = (x < 0.0f ? x : 0.0f) - em_log1p_unitf(e);
    return x != x ? x : r;
}
EM_HD_INLINE double em_logsigmoid_vd(double x) {
    double r = (x < 0.0 ? x : 0.0) - em_log1p_d(em_exp_d(-fabs(x)));
    return x != x ? x : r;
}

#endif
