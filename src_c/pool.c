/* Pooling kernels (planes of H x W, contiguous), parallel over planes.
   This file instantiates itself for float and double. */
#ifndef EMBER_POOL_BODY
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ember_conv.h"
#include "ember_pool.h"

#if defined(__SSE2__)
#include <emmintrin.h>
/* 2x2 stride-2 max pooling of four outputs per step (float, SSE2 is baseline
   x86-64): on real data each comparison is a coin toss, so masks and blends
   instead of branches.  Returns the outputs done (a multiple of 4). */
static int64_t pl_max22_sse_f32(const float *r0, const float *r1, int64_t W, int64_t base,
                                int64_t Wo, float *yr, int64_t *ir) {
    int64_t ow = 0;
    const __m128i four = _mm_set1_epi32(8), one = _mm_set1_epi32(1), wv = _mm_set1_epi32((int)W);
    __m128i c = _mm_add_epi32(_mm_set1_epi32((int)base), _mm_setr_epi32(0, 2, 4, 6));
    const __m128i zero = _mm_setzero_si128();
    for (; ow + 4 <= Wo; ow += 4, c = _mm_add_epi32(c, four)) {
        const __m128 u0 = _mm_loadu_ps(r0 + 2 * ow), u1 = _mm_loadu_ps(r0 + 2 * ow + 4);
        const __m128 v0 = _mm_loadu_ps(r1 + 2 * ow), v1 = _mm_loadu_ps(r1 + 2 * ow + 4);
        const __m128 a = _mm_shuffle_ps(u0, u1, _MM_SHUFFLE(2, 0, 2, 0));
        const __m128 b = _mm_shuffle_ps(u0, u1, _MM_SHUFFLE(3, 1, 3, 1));
        const __m128 d = _mm_shuffle_ps(v0, v1, _MM_SHUFFLE(2, 0, 2, 0));
        const __m128 e = _mm_shuffle_ps(v0, v1, _MM_SHUFFLE(3, 1, 3, 1));
        __m128 best = a;
        __m128i bi = c;
#define PL_TAKE(v, iv)                                                                   \
        do {                                                                             \
            const __m128 t = _mm_or_ps(_mm_cmpgt_ps(v, best), _mm_cmpunord_ps(v, v));     \
            best = _mm_or_ps(_mm_and_ps(t, v), _mm_andnot_ps(t, best));                   \
            const __m128i ti = _mm_castps_si128(t);                                       \
            bi = _mm_or_si128(_mm_and_si128(ti, iv), _mm_andnot_si128(ti, bi));           \
        } while (0)
        PL_TAKE(b, _mm_add_epi32(c, one));
        PL_TAKE(d, _mm_add_epi32(c, wv));
        PL_TAKE(e, _mm_add_epi32(_mm_add_epi32(c, wv), one));
#undef PL_TAKE
        _mm_storeu_ps(yr + ow, best);
        if (ir) {
            _mm_storeu_si128((__m128i *)(ir + ow), _mm_unpacklo_epi32(bi, zero));
            _mm_storeu_si128((__m128i *)(ir + ow + 2), _mm_unpackhi_epi32(bi, zero));
        }
    }
    return ow;
}
#endif

static inline int pl_threads(const ember_pool2d_params *p, int64_t work, int nthreads) {
    return (p->planes < 2 || work < 32768 || nthreads < 1) ? 1 : nthreads;
}

#define EMBER_POOL_BODY 1
#define T float
#define SFX f32
#define PL_IS_F32 1
#include "pool.c"
#undef PL_IS_F32
#undef T
#undef SFX
#define T double
#define SFX f64
#define PL_IS_F32 0
#include "pool.c"
#undef PL_IS_F32
#undef T
#undef SFX

#else /* ------------------------------------------------------------ body */
#define PL_CAT2(a, b) a##_##b
#define PL_CAT(a, b) PL_CAT2(a, b)
#define F(name) PL_CAT(name, SFX)

/* max pooling of one plane whose windows all lie inside it (no padding, no
   overhang): no per-tap bounds, and the common 2x2 window unrolled.  The scan
   order and the tie/NaN rule are those of the general loop below. */
static void F(pl_max_inside)(const ember_pool2d_params *p, const T *restrict xp, T *restrict yp,
                             int64_t *restrict ip) {
    const int64_t W = p->W, Ho = p->Ho, Wo = p->Wo, sh = p->sh, sw = p->sw;
    if (p->kh == 2 && p->kw == 2 && p->dh == 1 && p->dw == 1) {
        for (int64_t oh = 0; oh < Ho; oh++) {
            const T *r0 = xp + oh * sh * W, *r1 = r0 + W;
            const int64_t base = oh * sh * W;
            T *yr = yp + oh * Wo;
            int64_t *ir = ip ? ip + oh * Wo : NULL;
            int64_t ow = 0;
#if defined(__SSE2__) && PL_IS_F32
            /* int32 lane indices: a plane this small (the usual case) fits them */
            if (sw == 2 && (p->H * W) < ((int64_t)1 << 30))
                ow = pl_max22_sse_f32(r0, r1, W, base, Wo, yr, ir);
#endif
            /* selects, not branches: on real data each comparison is a coin toss */
            for (; ow < Wo; ow++) {
                const int64_t c = ow * sw;
                const T a = r0[c], b = r0[c + 1], d = r1[c], e = r1[c + 1];
                T best = a;
                int64_t bi = c;
                int t = (b > best) | (b != b);
                best = t ? b : best;
                bi = t ? c + 1 : bi;
                t = (d > best) | (d != d);
                best = t ? d : best;
                bi = t ? W + c : bi;
                t = (e > best) | (e != e);
                best = t ? e : best;
                bi = t ? W + c + 1 : bi;
                yr[ow] = best;
                if (ir) ir[ow] = base + bi;
            }
        }
        return;
    }
    for (int64_t oh = 0; oh < Ho; oh++)
        for (int64_t ow = 0; ow < Wo; ow++) {
            const int64_t h0 = oh * sh, w0 = ow * sw;
            T best = xp[h0 * W + w0];
            int64_t bi = h0 * W + w0;
            for (int64_t i = 0; i < p->kh; i++) {
                const int64_t ih = h0 + i * p->dh;
                const T *xr = xp + ih * W;
                for (int64_t j = 0; j < p->kw; j++) {
                    const int64_t iw = w0 + j * p->dw;
                    const T v = xr[iw];
                    const int t = (v > best) | (v != v);
                    best = t ? v : best;
                    bi = t ? ih * W + iw : bi;
                }
            }
            yp[oh * Wo + ow] = best;
            if (ip) ip[oh * Wo + ow] = bi;
        }
}

void F(ember_max_pool2d_fwd)(const ember_pool2d_params *p, const T *x, T *y, int64_t *idx,
                             int nthreads) {
    const int64_t H = p->H, W = p->W, Ho = p->Ho, Wo = p->Wo;
    int nt = pl_threads(p, p->planes * Ho * Wo * p->kh * p->kw, nthreads);
    const int inside = p->ph == 0 && p->pw == 0 &&
                       (Ho - 1) * p->sh + (p->kh - 1) * p->dh < H &&
                       (Wo - 1) * p->sw + (p->kw - 1) * p->dw < W;
    if (inside) {
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
        for (int64_t q = 0; q < p->planes; q++)
            F(pl_max_inside)(p, x + q * H * W, y + q * Ho * Wo, idx ? idx + q * Ho * Wo : NULL);
        return;
    }
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

/* Adaptive average pooling of channels-last images: x (N, H, W, C), y (N, Ho, Wo,
   C), N = planes / C.  Each window sums row by row (a row's sum, then the rows in
   order), the channels as the vector lanes; threads take whole images. */
void F(ember_adaptive_avg_pool2d_nhwc_fwd)(const ember_pool2d_params *p, int64_t C, const T *x,
                                           T *y, int nthreads) {
    const int64_t H = p->H, W = p->W, Ho = p->Ho, Wo = p->Wo, N = C > 0 ? p->planes / C : 0;
    int nt = pl_threads(p, p->planes * (H * W + Ho * Wo), nthreads);
    if (nt > N) nt = (int)(N > 0 ? N : 1);
    int failed = 0;
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        T *r = (T *)malloc((size_t)(2 * C + 1) * sizeof(T)), *s = r + C;
        if (!r) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(static)
        for (int64_t n = 0; n < N; n++) {
            if (!r) continue;
            const T *xn = x + n * H * W * C;
            for (int64_t oh = 0; oh < Ho; oh++) {
                const int64_t hs = F(pl_astart)(oh, H, Ho), he = F(pl_aend)(oh, H, Ho);
                for (int64_t ow = 0; ow < Wo; ow++) {
                    const int64_t ws = F(pl_astart)(ow, W, Wo), we = F(pl_aend)(ow, W, Wo);
                    for (int64_t c = 0; c < C; c++) s[c] = 0;
                    for (int64_t ih = hs; ih < he; ih++) {
                        for (int64_t c = 0; c < C; c++) r[c] = 0;
                        for (int64_t iw = ws; iw < we; iw++) {
                            const T *restrict xr = xn + (ih * W + iw) * C;
                            for (int64_t c = 0; c < C; c++) r[c] += xr[c];
                        }
                        for (int64_t c = 0; c < C; c++) s[c] += r[c];
                    }
                    const T cnt = (T)((he - hs) * (we - ws));
                    T *restrict yr = y + ((n * Ho + oh) * Wo + ow) * C;
                    for (int64_t c = 0; c < C; c++) yr[c] = s[c] / cnt;
                }
            }
        }
        free(r);
    }
    if (failed) /* no scratch: the plain order */
        for (int64_t n = 0; n < N; n++)
            for (int64_t oh = 0; oh < Ho; oh++)
                for (int64_t ow = 0; ow < Wo; ow++) {
                    const int64_t hs = F(pl_astart)(oh, H, Ho), he = F(pl_aend)(oh, H, Ho);
                    const int64_t ws = F(pl_astart)(ow, W, Wo), we = F(pl_aend)(ow, W, Wo);
                    for (int64_t c = 0; c < C; c++) {
                        T acc = 0;
                        for (int64_t ih = hs; ih < he; ih++)
                            for (int64_t iw = ws; iw < we; iw++)
                                acc += x[((n * H + ih) * W + iw) * C + c];
                        y[((n * Ho + oh) * Wo + ow) * C + c] = acc / (T)((he - hs) * (we - ws));
                    }
                }
}

/* its input gradient: dx (N, H, W, C) overwritten from dy (N, Ho, Wo, C) */
void F(ember_adaptive_avg_pool2d_nhwc_bwd)(const ember_pool2d_params *p, int64_t C, const T *dy,
                                           T *dx, int nthreads) {
    const int64_t H = p->H, W = p->W, Ho = p->Ho, Wo = p->Wo, N = C > 0 ? p->planes / C : 0;
    int nt = pl_threads(p, p->planes * (H * W + Ho * Wo), nthreads);
    if (nt > N) nt = (int)(N > 0 ? N : 1);
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
    for (int64_t n = 0; n < N; n++) {
        T *dxn = dx + n * H * W * C;
        memset(dxn, 0, (size_t)(H * W * C) * sizeof(T));
        for (int64_t oh = 0; oh < Ho; oh++) {
            const int64_t hs = F(pl_astart)(oh, H, Ho), he = F(pl_aend)(oh, H, Ho);
            for (int64_t ow = 0; ow < Wo; ow++) {
                const int64_t ws = F(pl_astart)(ow, W, Wo), we = F(pl_aend)(ow, W, Wo);
                const T cnt = (T)((he - hs) * (we - ws));
                const T *restrict g = dy + ((n * Ho + oh) * Wo + ow) * C;
                for (int64_t ih = hs; ih < he; ih++)
                    for (int64_t iw = ws; iw < we; iw++) {
                        T *restrict d = dxn + (ih * W + iw) * C;
                        for (int64_t c = 0; c < C; c++) d[c] += g[c] / cnt;
                    }
            }
        }
    }
}

#undef F
#undef PL_CAT
#undef PL_CAT2
#endif
