/* Channels-last float32 max pooling, forward with indices, written once per ISA
   (included after conv_wino_impl.h: its vector width WV).  Each output pixel
   takes its window's taps whole pixels at a time, WV channels per vector: the
   first tap inside the input, then any larger value or NaN (src_c/pool.c's
   rule), with the flat h*W+w position of the tap taken as its index. */
#include <math.h>
#include "ember_pool.h"

typedef int wp_iv __attribute__((vector_size(WV * 4)));
typedef long long wp_lv __attribute__((vector_size(WV * 8)));

int WI_PUB(ember_max_pool2d_nhwc_fwd_f32)(const ember_pool2d_params *p, int64_t C,
                                          const float *x, float *y, int64_t *idx,
                                          int nthreads) {
    const int64_t H = p->H, W = p->W, Ho = p->Ho, Wo = p->Wo, N = p->planes / (C > 0 ? C : 1);
    if (H * W >= ((int64_t)1 << 31)) return 1;   /* positions held in 32-bit lanes */
    const int64_t rows = N * Ho;
    const int nt = rows * Wo * C * p->kh * p->kw < 65536 ? 1 : (nthreads < 1 ? 1 : nthreads);
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
    for (int64_t r = 0; r < rows; r++) {
        const int64_t n = r / Ho, oh = r % Ho, h0 = oh * p->sh - p->ph;
        const int64_t i0 = em_pool_tap_lo(h0, p->dh), i1 = em_pool_tap_hi(h0, p->dh, H, p->kh);
        const float *xn = x + n * H * W * C;
        for (int64_t ow = 0; ow < Wo; ow++) {
            const int64_t w0 = ow * p->sw - p->pw;
            const int64_t j0 = em_pool_tap_lo(w0, p->dw), j1 = em_pool_tap_hi(w0, p->dw, W, p->kw);
            float *yp = y + (r * Wo + ow) * C;
            int64_t *ip = idx + (r * Wo + ow) * C;
            if (i0 >= i1 || j0 >= j1) {   /* no tap inside the input */
                for (int64_t c = 0; c < C; c++) {
                    yp[c] = -INFINITY;
                    ip[c] = -1;
                }
                continue;
            }
            const int64_t first = (h0 + i0 * p->dh) * W + w0 + j0 * p->dw;
            int64_t c = 0;
            for (; c + WV <= C; c += WV) {
                wv m = wi_ld(xn + first * C + c);
                wp_iv pos = (wp_iv){0} + (int)first;
                for (int64_t i = i0; i < i1; i++)
                    for (int64_t j = j0; j < j1; j++) {
                        const int64_t q = (h0 + i * p->dh) * W + w0 + j * p->dw;
                        const wv v = wi_ld(xn + q * C + c);
                        const wp_iv take = (v > m) | (v != v);
                        m = (wv)(((wp_iv)v & take) | ((wp_iv)m & ~take));
                        pos = (((wp_iv){0} + (int)q) & take) | (pos & ~take);
                    }
                wi_st(yp + c, m);
                const wp_lv pl = __builtin_convertvector(pos, wp_lv);
                memcpy(ip + c, &pl, sizeof pl);
            }
            for (; c < C; c++) {
                float m = xn[first * C + c];
                int64_t pos = first;
                for (int64_t i = i0; i < i1; i++)
                    for (int64_t j = j0; j < j1; j++) {
                        const int64_t q = (h0 + i * p->dh) * W + w0 + j * p->dw;
                        const float v = xn[q * C + c];
                        if (v > m || v != v) {
                            m = v;
                            pos = q;
                        }
                    }
                yp[c] = m;
                ip[c] = pos;
            }
        }
    }
    return 0;
}
