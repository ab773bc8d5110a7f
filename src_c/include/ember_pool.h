/* The window arithmetic of max / avg pooling, written once for the CPU kernels
   (src_c/pool.c) and the CUDA kernels (src_cuda/pool2d.cu). */
#ifndef EMBER_POOL_H
#define EMBER_POOL_H
#include <stdint.h>
#include "ember_math.h"

/* taps i in [lo, hi) with 0 <= o0 + i*d < n, clipped to [0, k) (d > 0) */
EM_HD_INLINE int64_t em_pool_tap_lo(int64_t o0, int64_t d) {
    return o0 >= 0 ? 0 : (-o0 + d - 1) / d;
}
EM_HD_INLINE int64_t em_pool_tap_hi(int64_t o0, int64_t d, int64_t n, int64_t k) {
    if (o0 >= n) return 0;
    const int64_t h = (n - 1 - o0) / d + 1;
    return h < k ? h : k;
}

/* PyTorch's avg_pool2d window of output (oh, ow): the pool size counts padding
   up to H + ph, then the window is clipped to the plane ([hs, he) x [ws, we)).
   Returns the divisor: the override, the padded pool size (count_include_pad)
   or the clipped count. */
EM_HD_INLINE int64_t em_avg_window(int64_t H, int64_t W, int64_t kh, int64_t kw, int64_t sh,
                                   int64_t sw, int64_t ph, int64_t pw, int64_t divisor,
                                   int include_pad, int64_t oh, int64_t ow, int64_t *hs,
                                   int64_t *he, int64_t *ws, int64_t *we) {
    int64_t h0 = oh * sh - ph, w0 = ow * sw - pw;
    int64_t h1 = h0 + kh < H + ph ? h0 + kh : H + ph;
    int64_t w1 = w0 + kw < W + pw ? w0 + kw : W + pw;
    const int64_t pool = (h1 - h0) * (w1 - w0);
    *hs = h0 > 0 ? h0 : 0;
    *ws = w0 > 0 ? w0 : 0;
    *he = h1 < H ? h1 : H;
    *we = w1 < W ? w1 : W;
    if (divisor) return divisor;
    if (include_pad) return pool;
    return (*he - *hs) * (*we - *ws);
}
#endif
