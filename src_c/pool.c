/* Pooling kernels (planes of H x W, contiguous), parallel over planes.
   This file instantiates itself for float and double. */
#ifndef EMBER_POOL_BODY
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ember_conv.h"
#include "ember_pool.h"

static inline int pl_threads(const ember_pool2d_params *p, int64_t work, int nthreads) {
    return (p->planes < 2 || work < 32768 || nthreads < 1) ? 1 : nthreads;
}

#define EMBER_POOL_BODY 1
#define T float
#define SFX f32
#include "pool.c"
#undef T
#undef SFX
#define T double
#define SFX f64
#include "pool.c"
#undef T
#undef SFX

#else /* ------------------------------------------------------------ body */
#define PL_CAT2(a, b) a##_##b
#define PL_CAT(a, b) PL_CAT2(a, b)
#define F(name) PL_CAT(name, SFX)

void F(ember_max_pool2d_fwd)(const ember_pool2d_params *p, const T *x, T *y, int64_t *idx,
                             int nthreads) {
    const int64_t H = p->H, W = p->W, Ho = p->Ho, Wo = p->Wo;
    int nt = pl_threads(p, p->planes * Ho * Wo * p->kh * p->kw, nthreads);
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
    for (int64_t q = 0; q < p->planes; q++) {
        const T *xp = x + q * H * W;
        T *yp = y + q * Ho * Wo;
        int64_t *ip = idx ? idx + q * Ho * Wo : NULL;
        for (int64_t oh = 0; oh < Ho; oh++)
            for (int64_t ow = 0; ow < Wo; ow++) {
                const int64_t h0 = oh * p->sh - p->ph, w0 = ow * p->sw - p->pw;
                T best = -INFINITY;
                int64_t bi = -1;
                /* only the taps inside the plane: a window far larger than the
                   input (huge kernel_size with padding) costs O(H*W), not O(kh*kw) */
                const int64_t i0 = em_pool_tap_lo(h0, p->dh);
                const int64_t i1 = em_pool_tap_hi(h0, p->dh, H, p->kh);
                const int64_t j0 = em_pool_tap_lo(w0, p->dw);
                const int64_t j1 = em_pool_tap_hi(w0, p->dw, W, p->kw);
                for (int64_t i = i0; i < i1; i++) {
                    const int64_t ih = h0 + i * p->dh;
                    for (int64_t j = j0; j < j1; j++) {
                        const int64_t iw = w0 + j * p->dw;
                        const T v = xp[ih * W + iw];
                        if (bi < 0 || v > best || isnan(v)) {
                            best = v;
                            bi = ih * W + iw;
                        }
                    }
                }
                yp[oh * Wo + ow] = best;
                if (ip) ip[oh * Wo + ow] = bi;
            }
    }
}

void F(ember_max_pool2d_bwd)(const ember_pool2d_params *p, const T *dy, const int64_t *idx,
                             T *dx, int nthreads) {
    const int64_t HW = p->H * p->W, P = p->Ho * p->Wo;
    int nt = pl_threads(p, p->planes * (HW + P), nthreads);
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
    for (int64_t q = 0; q < p->planes; q++) {
        T *dxp = dx + q * HW;
        memset(dxp, 0, (size_t)HW * sizeof(T));
        const T *dyp = dy + q * P;
        const int64_t *ip = idx + q * P;
        for (int64_t o = 0; o < P; o++)
            if (ip[o] >= 0) dxp[ip[o]] += dyp[o];
    }
}

/* the shared window arithmetic (ember_pool.h), the divisor in T */
static inline T F(pl_avg_div)(const ember_pool2d_params *p, int64_t oh, int64_t ow, int64_t *hs,
                              int64_t *he, int64_t *ws, int64_t *we) {
    return (T)em_avg_window(p->H, p->W, p->kh, p->kw, p->sh, p->sw, p->ph, p->pw, p->divisor,
                            p->count_include_pad, oh, ow, hs, he, ws, we);
}

void F(ember_avg_pool2d_fwd)(const ember_pool2d_params *p, const T *x, T *y, int nthreads) {
    const int64_t H = p->H, W = p->W, Ho = p->Ho, Wo = p->Wo;
    int nt = pl_threads(p, p->planes * Ho * Wo * p->kh * p->kw, nthreads);
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
    for (int64_t q = 0; q < p->planes; q++) {
        const T *xp = x + q * H * W;
        T *yp = y + q * Ho * Wo;
        for (int64_t oh = 0; oh < Ho; oh++)
            for (int64_t ow = 0; ow < Wo; ow++) {
                int64_t hs, he, ws, we;
                const T div = F(pl_avg_div)(p, oh, ow, &hs, &he, &ws, &we);
                T s = 0;
                for (int64_t ih = hs; ih < he; ih++)
                    for (int64_t iw = ws; iw < we; iw++) s += xp[ih * W + iw];
                yp[oh * Wo + ow] = (he > hs && we > ws) || p->divisor || p->count_include_pad
                                       ? s / div : (T)0;
            }
    }
}

void F(ember_avg_pool2d_bwd)(const ember_pool2d_params *p, const T *dy, T *dx, int nthreads) {
    const int64_t H = p->H, W = p->W, Ho = p->Ho, Wo = p->Wo;
    int nt = pl_threads(p, p->planes * Ho * Wo * p->kh * p->kw, nthreads);
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
    for (int64_t q = 0; q < p->planes; q++) {
        T *dxp = dx + q * H * W;
        const T *dyp = dy + q * Ho * Wo;
        memset(dxp, 0, (size_t)(H * W) * sizeof(T));
        for (int64_t oh = 0; oh < Ho; oh++)
            for (int64_t ow = 0; ow < Wo; ow++) {
                int64_t hs, he, ws, we;
                const T div = F(pl_avg_div)(p, oh, ow, &hs, &he, &ws, &we);
                const T g = dyp[oh * Wo + ow] / div;
                for (int64_t ih = hs; ih < he; ih++)
                    for (int64_t iw = ws; iw < we; iw++) dxp[ih * W + iw] += g;
            }
    }
}

static inline int64_t F(pl_astart)(int64_t o, int64_t in, int64_t out) { return (o * in) / out; }

/* sum of n consecutive values in 16 independent lanes (vectorised, and not one
   serial chain of adds: global average pooling sums whole planes) */
static inline T F(pl_rowsum)(const T *restrict r, int64_t n) {
    T acc[16] = {0};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int l = 0; l < 16; l++) acc[l] += r[i + l];
    T s = 0;
    for (int l = 0; l < 16; l++) s += acc[l];
    for (; i < n; i++) s += r[i];
    return s;
}
static inline int64_t F(pl_aend)(int64_t o, int64_t in, int64_t out) {
    return ((o + 1) * in + out - 1) / out;
}

void F(ember_adaptive_avg_pool2d_fwd)(const ember_pool2d_params *p, const T *x, T *y,
                                      int nthreads) {
    const int64_t H = p->H, W = p->W, Ho = p->Ho, Wo = p->Wo;
    int nt = pl_threads(p, p->planes * (H * W + Ho * Wo), nthreads);
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
    for (int64_t q = 0; q < p->planes; q++) {
        const T *xp = x + q * H * W;
        T *yp = y + q * Ho * Wo;
        for (int64_t oh = 0; oh < Ho; oh++) {
            const int64_t hs = F(pl_astart)(oh, H, Ho), he = F(pl_aend)(oh, H, Ho);
            for (int64_t ow = 0; ow < Wo; ow++) {
                const int64_t ws = F(pl_astart)(ow, W, Wo), we = F(pl_aend)(ow, W, Wo);
                T s = 0;
                for (int64_t ih = hs; ih < he; ih++) s += F(pl_rowsum)(xp + ih * W + ws, we - ws);
                yp[oh * Wo + ow] = s / (T)((he - hs) * (we - ws));
            }
        }
    }
}

void F(ember_adaptive_avg_pool2d_bwd)(const ember_pool2d_params *p, const T *dy, T *dx,
                                      int nthreads) {
    const int64_t H = p->H, W = p->W, Ho = p->Ho, Wo = p->Wo;
    int nt = pl_threads(p, p->planes * (H * W + Ho * Wo), nthreads);
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
    for (int64_t q = 0; q < p->planes; q++) {
        T *dxp = dx + q * H * W;
        const T *dyp = dy + q * Ho * Wo;
        memset(dxp, 0, (size_t)(H * W) * sizeof(T));
        for (int64_t oh = 0; oh < Ho; oh++) {
            const int64_t hs = F(pl_astart)(oh, H, Ho), he = F(pl_aend)(oh, H, Ho);
            for (int64_t ow = 0; ow < Wo; ow++) {
                const int64_t ws = F(pl_astart)(ow, W, Wo), we = F(pl_aend)(ow, W, Wo);
                const T g = dyp[oh * Wo + ow] / (T)((he - hs) * (we - ws));
                for (int64_t ih = hs; ih < he; ih++)
                    for (int64_t iw = ws; iw < we; iw++) dxp[ih * W + iw] += g;
            }
        }
    }
}

void F(ember_adaptive_max_pool2d_fwd)(const ember_pool2d_params *p, const T *x, T *y,
                                      int64_t *idx, int nthreads) {
    const int64_t H = p->H, W = p->W, Ho = p->Ho, Wo = p->Wo;
    int nt = pl_threads(p, p->planes * (H * W + Ho * Wo), nthreads);
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
    for (int64_t q = 0; q < p->planes; q++) {
        const T *xp = x + q * H * W;
        T *yp = y + q * Ho * Wo;
        int64_t *ip = idx ? idx + q * Ho * Wo : NULL;
        for (int64_t oh = 0; oh < Ho; oh++) {
            const int64_t hs = F(pl_astart)(oh, H, Ho), he = F(pl_aend)(oh, H, Ho);
            for (int64_t ow = 0; ow < Wo; ow++) {
                const int64_t ws = F(pl_astart)(ow, W, Wo), we = F(pl_aend)(ow, W, Wo);
                T best = -INFINITY;
                int64_t bi = hs * W + ws;
                for (int64_t ih = hs; ih < he; ih++)
                    for (int64_t iw = ws; iw < we; iw++) {
                        const T v = xp[ih * W + iw];
                        if (v > best || isnan(v)) {
                            best = v;
                            bi = ih * W + iw;
                        }
                    }
                yp[oh * Wo + ow] = best;
                if (ip) ip[oh * Wo + ow] = bi;
            }
        }
    }
}

#undef F
#undef PL_CAT
#undef PL_CAT2
#endif
