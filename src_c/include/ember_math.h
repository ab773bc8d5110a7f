/* Scalar math shared by the kernel families, written once.  Functions are
   always_inline so each ISA copy of a loop (compiled under its own
   `#pragma GCC target`) vectorises them with its own instructions. */
#ifndef EMBER_MATH_H
#define EMBER_MATH_H
#include <math.h>
#include <stdint.h>
#include <string.h>

/* exp for float32 that vectorises (Cephes-style range reduction + degree-6
   polynomial, ~1 ulp); glibc's expf is a scalar call. */
static inline __attribute__((always_inline)) float em_expf(float x) {
    float xc = x > 88.72283935546875f ? 88.72283935546875f : (x < -103.972077f ? -103.972077f : x);
    float fx = floorf(xc * 1.44269504088896341f + 0.5f);
    float r = xc - fx * 0.693359375f + fx * 2.12194440e-4f;
    float y = 1.9875691500E-4f;
    y = y * r + 1.3981999507E-3f;
    y = y * r + 8.3334519073E-3f;
    y = y * r + 4.1665795894E-2f;
    y = y * r + 1.6666665459E-1f;
    y = y * r + 5.0000001201E-1f;
    y = y * r * r + r + 1.0f;
    /* 2^n as two factors so n in [-150, 128] never leaves the exponent range */
    int32_t n = (int32_t)fx, n1 = n >> 1, n2 = n - n1;
    int32_t e1 = (n1 + 127) << 23, e2 = (n2 + 127) << 23;
    float s1, s2;
    memcpy(&s1, &e1, 4);
    memcpy(&s2, &e2, 4);
    float res = y * s1 * s2;
    res = x > 88.72283935546875f ? INFINITY : res;
    res = x < -103.972077083991796f ? 0.0f : res;
    return x != x ? x : res;
}

#endif
