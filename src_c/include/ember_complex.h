/* The scalar formulas of the complex elementwise ops, written once for the CPU
   loops (src_c/complex.c) and the CUDA kernels (src_cuda/complex.cu): both
   compile this header (host/device functions under nvcc), so the CPU tests
   check the formulas the GPU runs.  Values are (re, im) pairs computed in
   double; complex64 rounds the result to float.  Built from real libm
   functions only, which both sides have (CUDA has no C99 complex library). */
#ifndef EMBER_COMPLEX_H
#define EMBER_COMPLEX_H
#include "ember_math.h"
#include "ember_ew.h"

typedef struct { double re, im; } em_cd;

EM_HD_INLINE em_cd em_cmk(double re, double im) { em_cd r; r.re = re; r.im = im; return r; }
EM_HD_INLINE em_cd em_cadd(em_cd a, em_cd b) { return em_cmk(a.re + b.re, a.im + b.im); }
EM_HD_INLINE em_cd em_csub(em_cd a, em_cd b) { return em_cmk(a.re - b.re, a.im - b.im); }
EM_HD_INLINE em_cd em_cscale(em_cd a, double s) { return em_cmk(a.re * s, a.im * s); }
/* the textbook product, as torch's c10::complex (no C99 Annex G NaN recovery) */
EM_HD_INLINE em_cd em_cmul(em_cd a, em_cd b) {
    return em_cmk(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re);
}
/* Smith's division: no overflow for large |b| (numpy and torch do the same);
   division by 0 divides each part by a signed zero, as torch does */
EM_HD_INLINE em_cd em_cdiv(em_cd x, em_cd y) {
    double a = x.re, b = x.im, c = y.re, d = y.im;
    if (fabs(c) >= fabs(d)) {
        if (c == 0 && d == 0) return em_cmk(a / fabs(c), b / fabs(d));
        double r = d / c, den = c + d * r;
        return em_cmk((a + b * r) / den, (b - a * r) / den);
    }
    double r = c / d, den = c * r + d;
    return em_cmk((a * r + b) / den, (b * r - a) / den);
}
EM_HD_INLINE double em_cabs(em_cd z) { return hypot(z.re, z.im); }

/* exp(x) (cos y + i sin y); a real argument stays real (its zero imaginary part kept) */
EM_HD_INLINE em_cd em_cexp(em_cd z) {
    double e = exp(z.re);
    if (z.im == 0) return em_cmk(e, z.im);
    return em_cmk(e * cos(z.im), e * sin(z.im));
}
EM_HD_INLINE em_cd em_clog(em_cd z) { return em_cmk(log(em_cabs(z)), atan2(z.im, z.re)); }
/* the principal root without cancellation: t = sqrt((|x| + |z|) / 2) is the part of
   larger magnitude; branch cut on the negative real axis follows the sign of y */
EM_HD_INLINE em_cd em_csqrt(em_cd z) {
    double x = z.re, y = z.im;
    if (isinf(y)) return em_cmk(INFINITY, y);
    if (isnan(x) || isnan(y)) return em_cmk(NAN, NAN);
    if (isinf(x)) return x > 0 ? em_cmk(x, copysign(0.0, y)) : em_cmk(0.0, copysign(INFINITY, y));
    if (x == 0 && y == 0) return em_cmk(0.0, y);
    double ax = fabs(x), ay = fabs(y), t;
    /* halves first: the sum never overflows */
    t = sqrt(0.5 * ax + 0.5 * hypot(x, y));
    if (x >= 0) return em_cmk(t, y / (2 * t));
    return em_cmk(ay / (2 * t), copysign(t, y));
}
EM_HD_INLINE em_cd em_csin(em_cd z) {
    return em_cmk(sin(z.re) * cosh(z.im), cos(z.re) * sinh(z.im));
}
EM_HD_INLINE em_cd em_ccos(em_cd z) {
    return em_cmk(cos(z.re) * cosh(z.im), -(sin(z.re) * sinh(z.im)));
}
EM_HD_INLINE em_cd em_csinh(em_cd z) {
    return em_cmk(sinh(z.re) * cos(z.im), cosh(z.re) * sin(z.im));
}
EM_HD_INLINE em_cd em_ccosh(em_cd z) {
    return em_cmk(cosh(z.re) * cos(z.im), sinh(z.re) * sin(z.im));
}
/* Kahan's tanh: t = tan y, s = sinh x, no cancellation near the poles; for |x| > 22
   tanh x is +-1 to double precision and the imaginary part decays as exp(-2|x|) */
EM_HD_INLINE em_cd em_ctanh(em_cd z) {
    double x = z.re, y = z.im;
    if (y == 0) return em_cmk(tanh(x), y);
    if (fabs(x) > 22) return em_cmk(copysign(1.0, x), 4 * sin(y) * cos(y) * exp(-2 * fabs(x)));
    double t = tan(y), b = 1 + t * t, s = sinh(x), rho = sqrt(1 + s * s), den = 1 + b * s * s;
    return em_cmk(b * rho * s / den, t / den);
}
/* tan z = -i tanh(i z) */
EM_HD_INLINE em_cd em_ctan(em_cd z) {
    em_cd w = em_ctanh(em_cmk(-z.im, z.re));
    return em_cmk(w.im, -w.re);
}
EM_HD_INLINE em_cd em_csigmoid(em_cd z) {
    return em_cdiv(em_cmk(1, 0), em_cadd(em_cmk(1, 0), em_cexp(em_cmk(-z.re, -z.im))));
}
/* z / |z|, 0 for 0 */
EM_HD_INLINE em_cd em_csgn(em_cd z) {
    double a = em_cabs(z);
    return a == 0 ? em_cmk(0, 0) : em_cmk(z.re / a, z.im / a);
}
EM_HD_INLINE em_cd em_crecip(em_cd z) { return em_cdiv(em_cmk(1, 0), z); }
EM_HD_INLINE em_cd em_crsqrt(em_cd z) { return em_crecip(em_csqrt(z)); }
/* torch's complex pow: x ** 0 is 1, x ** 1 is x, x ** 2 is x * x, 0 ** y (y real
   and positive) is 0; otherwise exp(y log x) */
EM_HD_INLINE em_cd em_cpow(em_cd x, em_cd y) {
    if (y.im == 0) {
        double e = y.re;
        if (e == 0) return em_cmk(1, 0);
        if (e == 1) return x;
        if (e == 2) return em_cmul(x, x);
        if (x.re == 0 && x.im == 0 && e > 0) return em_cmk(0, 0);
    }
    return em_cexp(em_cmul(y, em_clog(x)));
}

/* the inverse functions by Kahan's formulas ("Branch Cuts for Complex Elementary
   Functions", 1987): square roots of 1 -+ z and z -+ 1 put the branch cuts' signed
   zeros on the right side, and real asinh / atan2 give each part without
   cancellation */
EM_HD_INLINE em_cd em_casin(em_cd z) {
    em_cd a = em_csqrt(em_cmk(1 - z.re, -z.im)), b = em_csqrt(em_cmk(1 + z.re, z.im));
    return em_cmk(atan2(z.re, a.re * b.re - a.im * b.im), asinh(a.re * b.im - a.im * b.re));
}
EM_HD_INLINE em_cd em_cacos(em_cd z) {
    em_cd a = em_csqrt(em_cmk(1 - z.re, -z.im)), b = em_csqrt(em_cmk(1 + z.re, z.im));
    return em_cmk(2 * atan2(a.re, b.re), asinh(b.re * a.im - b.im * a.re));
}
EM_HD_INLINE em_cd em_cacosh(em_cd z) {
    em_cd c = em_csqrt(em_cmk(z.re - 1, z.im)), d = em_csqrt(em_cmk(z.re + 1, z.im));
    return em_cmk(asinh(c.re * d.re + c.im * d.im), 2 * atan2(c.im, d.re));
}
/* asinh z = -i asin(i z) */
EM_HD_INLINE em_cd em_casinh(em_cd z) {
    em_cd w = em_casin(em_cmk(-z.im, z.re));
    return em_cmk(w.im, -w.re);
}
/* Re = log(|1 + z|^2 / |1 - z|^2) / 4 through log1p (accurate near 0), Im = half the
   argument of (1 + z)(1 - conj z) */
EM_HD_INLINE em_cd em_catanh(em_cd z) {
    double x = z.re, y = z.im, d = (1 - x) * (1 - x) + y * y;
    return em_cmk(0.25 * log1p(4 * x / d), 0.5 * atan2(2 * y, (1 - x) * (1 + x) - y * y));
}
/* atan z = -i atanh(i z) */
EM_HD_INLINE em_cd em_catan(em_cd z) {
    em_cd w = em_catanh(em_cmk(-z.im, z.re));
    return em_cmk(w.im, -w.re);
}

#define EM_LN2 0.69314718055994530942
#define EM_LN10 2.30258509299404568402

/* the complex unary ops by their ember_ew.h code; returns 0 for an op without a
   complex formula (the callers check em_cun_ok first) */
EM_HD_INLINE int em_cun_ok(int op) {
    return op == EW_NEG || op == EW_ABS || op == EW_SIGN || op == EW_EXP || op == EW_EXP2 ||
           op == EW_EXPM1 || op == EW_LOG || op == EW_LOG2 || op == EW_LOG10 ||
           op == EW_LOG1P || op == EW_SQRT || op == EW_RSQRT || op == EW_SIN || op == EW_COS ||
           op == EW_TAN || op == EW_SINH || op == EW_COSH || op == EW_TANH ||
           op == EW_SIGMOID || op == EW_RECIP || op == EW_SQUARE || op == EW_ASIN ||
           op == EW_ACOS || op == EW_ATAN || op == EW_ASINH || op == EW_ACOSH ||
           op == EW_ATANH;
}
/* EW_ABS gives |z| in .re (the callers store a real) */
EM_HD_INLINE em_cd em_cun(int op, em_cd z) {
    switch (op) {
    case EW_NEG: return em_cmk(-z.re, -z.im);
    case EW_ABS: return em_cmk(em_cabs(z), 0);
    case EW_SIGN: return em_csgn(z);
    case EW_EXP: return em_cexp(z);
    case EW_EXP2: return em_cexp(em_cscale(z, EM_LN2));
    case EW_EXPM1: { em_cd e = em_cexp(z); return em_cmk(e.re - 1, e.im); }
    case EW_LOG: return em_clog(z);
    case EW_LOG2: return em_cscale(em_clog(z), 1 / EM_LN2);
    case EW_LOG10: return em_cscale(em_clog(z), 1 / EM_LN10);
    case EW_LOG1P: return em_clog(em_cmk(1 + z.re, z.im));
    case EW_SQRT: return em_csqrt(z);
    case EW_RSQRT: return em_crsqrt(z);
    case EW_SIN: return em_csin(z);
    case EW_COS: return em_ccos(z);
    case EW_TAN: return em_ctan(z);
    case EW_SINH: return em_csinh(z);
    case EW_COSH: return em_ccosh(z);
    case EW_TANH: return em_ctanh(z);
    case EW_SIGMOID: return em_csigmoid(z);
    case EW_RECIP: return em_crecip(z);
    case EW_SQUARE: return em_cmul(z, z);
    case EW_ASIN: return em_casin(z);
    case EW_ACOS: return em_cacos(z);
    case EW_ATAN: return em_catan(z);
    case EW_ASINH: return em_casinh(z);
    case EW_ACOSH: return em_cacosh(z);
    case EW_ATANH: return em_catanh(z);
    default: return z;
    }
}
EM_HD_INLINE int em_cbin_ok(int op) {
    return op == EW_ADD || op == EW_SUB || op == EW_MUL || op == EW_DIV || op == EW_POW ||
           op == EW_ADDA;
}
/* alpha: EW_ADDA's real multiplier of b */
EM_HD_INLINE em_cd em_cbin(int op, em_cd a, em_cd b, double alpha) {
    switch (op) {
    case EW_ADD: return em_cadd(a, b);
    case EW_SUB: return em_csub(a, b);
    case EW_MUL: return em_cmul(a, b);
    case EW_DIV: return em_cdiv(a, b);
    case EW_POW: return em_cpow(a, b);
    case EW_ADDA: return em_cmk(a.re + alpha * b.re, a.im + alpha * b.im);
    default: return a;
    }
}
EM_HD_INLINE int em_ccmp_ok(int op) {
    return op == EW_EQ || op == EW_NE || op == EW_LAND || op == EW_LOR || op == EW_LXOR;
}
EM_HD_INLINE int em_ccmp(int op, em_cd a, em_cd b) {
    int za = a.re != 0 || a.im != 0, zb = b.re != 0 || b.im != 0;
    switch (op) {
    case EW_EQ: return a.re == b.re && a.im == b.im;
    case EW_NE: return !(a.re == b.re && a.im == b.im);
    case EW_LAND: return za && zb;
    case EW_LOR: return za || zb;
    default: return za != zb;
    }
}
EM_HD_INLINE int em_cpred_ok(int op) {
    return op == EW_ISNAN || op == EW_ISINF || op == EW_ISFINITE || op == EW_LNOT;
}
EM_HD_INLINE int em_cpred(int op, em_cd z) {
    switch (op) {
    case EW_ISNAN: return isnan(z.re) || isnan(z.im);
    case EW_ISINF: return isinf(z.re) || isinf(z.im);
    case EW_ISFINITE: return isfinite(z.re) && isfinite(z.im);
    default: return z.re == 0 && z.im == 0;
    }
}
#endif
