/* Convolution kernels (NCHW, contiguous): im2col/col2im + ember GEMM, and a
   direct kernel for one input channel per group with few outputs per group
   (depthwise).  This file instantiates itself for float and double. */
#ifndef EMBER_CONV_BODY
#include <stdlib.h>
#include <string.h>
#include "ember_conv.h"
#include "ember_gemm.h"
#ifdef _OPENMP
#include <omp.h>
#endif

static inline int64_t cv_min(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t cv_max(int64_t a, int64_t b) { return a > b ? a : b; }
/* ceil(a / b) for b > 0, any sign of a */
static inline int64_t cv_cdiv(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

/* output columns ow with 0 <= ow*s + off < W, off = j*d - pad: [lo, hi) */
static inline void cv_range(int64_t off, int64_t s, int64_t W, int64_t Wo, int64_t *lo, int64_t *hi) {
    int64_t l = cv_max(0, cv_cdiv(-off, s));
    int64_t h = cv_min(Wo, cv_cdiv(W - off, s));
    if (h < l) h = l;
    *lo = l; *hi = h;
}

static inline int cv_is1x1(const ember_conv2d_params *p) {
    return p->kh == 1 && p->kw == 1 && p->sh == 1 && p->sw == 1 && p->ph == 0 && p->pw == 0;
}
/* direct kernel: one input channel per group and at most 4 outputs per group */
static inline int cv_direct(const ember_conv2d_params *p) {
    return p->C / p->groups == 1 && p->OC / p->groups <= 4 && !cv_is1x1(p);
}

#define EMBER_CONV_BODY 1
#define T float
#define SFX f32
#define GEMM ember_sgemm
#include "conv.c"
#undef T
#undef SFX
#undef GEMM
#define T double
#define SFX f64
#define GEMM ember_dgemm
#include "conv.c"
#undef T
#undef SFX
#undef GEMM

#else /* ------------------------------------------------------------ body */
#define CV_CAT2(a, b) a##_##b
#define CV_CAT(a, b) CV_CAT2(a, b)
#define F(name) CV_CAT(name, SFX)

void F(ember_im2col)(const ember_conv2d_params *p, int64_t C, const T *x, T *col) {
    const int64_t H = p->H, W = p->W, Ho = p->Ho, Wo = p->Wo, P = Ho * Wo;
    for (int64_t c = 0; c < C; c++)
        for (int64_t i = 0; i < p->kh; i++)
            for (int64_t j = 0; j < p->kw; j++) {
                T *row = col + ((c * p->kh + i) * p->kw + j) * P;
                const int64_t off = j * p->dw - p->pw;
                int64_t lo, hi;
                cv_range(off, p->sw, W, Wo, &lo, &hi);
                for (int64_t oh = 0; oh < Ho; oh++) {
                    T *r = row + oh * Wo;
                    const int64_t ih = oh * p->sh - p->ph + i * p->dh;
                    if (ih < 0 || ih >= H) {
                        memset(r, 0, (size_t)Wo * sizeof(T));
                        continue;
                    }
                    const T *xr = x + (c * H + ih) * W + off;
                    for (int64_t ow = 0; ow < lo; ow++) r[ow] = 0;
                    if (p->sw == 1) memcpy(r + lo, xr + lo, (size_t)(hi - lo) * sizeof(T));
                    else
                        for (int64_t ow = lo; ow < hi; ow++) r[ow] = xr[ow * p->sw];
                    for (int64_t ow = hi; ow < Wo; ow++) r[ow] = 0;
                }
            }
}

void F(ember_col2im)(const ember_conv2d_params *p, int64_t C, const T *col, T *x) {
    const int64_t H = p->H, W = p->W, Ho = p->Ho, Wo = p->Wo, P = Ho * Wo;
    for (int64_t c = 0; c < C; c++)
        for (int64_t i = 0; i < p->kh; i++)
            for (int64_t j = 0; j < p->kw; j++) {
                const T *row = col + ((c * p->kh + i) * p->kw + j) * P;
                const int64_t off = j * p->dw - p->pw;
                int64_t lo, hi;
                cv_range(off, p->sw, W, Wo, &lo, &hi);
                for (int64_t oh = 0; oh < Ho; oh++) {
                    const int64_t ih = oh * p->sh - p->ph + i * p->dh;
                    if (ih < 0 || ih >= H) continue;
                    const T *r = row + oh * Wo;
                    T *xr = x + (c * H + ih) * W + off;
                    if (p->sw == 1)
                        for (int64_t ow = lo; ow < hi; ow++) xr[ow] += r[ow];
                    else
                        for (int64_t ow = lo; ow < hi; ow++) xr[ow * p->sw] += r[ow];
                }
            }
}

/* direct forward of one output plane from one input plane */
static void F(cv_direct_fwd_plane)(const ember_conv2d_params *p, const T *xp, const T *wp, T b,
                                   T *yp) {
    const int64_t H = p->H, W = p->W, Ho = p->Ho, Wo = p->Wo;
    for (int64_t q = 0; q < Ho * Wo; q++) yp[q] = b;
    for (int64_t i = 0; i < p->kh; i++)
        for (int64_t j = 0; j < p->kw; j++) {
            const T wv = wp[i * p->kw + j];
            const int64_t off = j * p->dw - p->pw;
            int64_t lo, hi;
            cv_range(off, p->sw, W, Wo, &lo, &hi);
            for (int64_t oh = 0; oh < Ho; oh++) {
                const int64_t ih = oh * p->sh - p->ph + i * p->dh;
                if (ih < 0 || ih >= H) continue;
                T *restrict yr = yp + oh * Wo;
                const T *restrict xr = xp + ih * W + off;
                if (p->sw == 1)
                    for (int64_t ow = lo; ow < hi; ow++) yr[ow] += wv * xr[ow];
                else
                    for (int64_t ow = lo; ow < hi; ow++) yr[ow] += wv * xr[ow * p->sw];
            }
        }
}

/* direct input-grad: dx plane += correlation^T of dy plane with w */
static void F(cv_direct_bwd_plane)(const ember_conv2d_params *p, const T *dyp, const T *wp, T *dxp) {
    const int64_t H = p->H, W = p->W, Ho = p->Ho, Wo = p->Wo;
    for (int64_t i = 0; i < p->kh; i++)
        for (int64_t j = 0; j < p->kw; j++) {
            const T wv = wp[i * p->kw + j];
            const int64_t off = j * p->dw - p->pw;
            int64_t lo, hi;
            cv_range(off, p->sw, W, Wo, &lo, &hi);
            for (int64_t oh = 0; oh < Ho; oh++) {
                const int64_t ih = oh * p->sh - p->ph + i * p->dh;
                if (ih < 0 || ih >= H) continue;
                const T *restrict dyr = dyp + oh * Wo;
                T *restrict xr = dxp + ih * W + off;
                if (p->sw == 1)
                    for (int64_t ow = lo; ow < hi; ow++) xr[ow] += wv * dyr[ow];
                else
                    for (int64_t ow = lo; ow < hi; ow++) xr[ow * p->sw] += wv * dyr[ow];
            }
        }
}

void F(ember_conv2d_fwd)(const ember_conv2d_params *p, const T *x, const T *w, const T *bias,
                         T *y, int nthreads) {
    const int64_t N = p->N, C = p->C, OC = p->OC, G = p->groups;
    const int64_t Cg = C / G, OCg = OC / G, Kg = Cg * p->kh * p->kw, P = p->Ho * p->Wo;
    const int64_t HW = p->H * p->W;
    if (N == 0 || OC == 0 || P == 0) return;
    if (nthreads < 1) nthreads = 1;
    if (cv_direct(p)) {
        const int64_t planes = N * OC;
        int nt = planes * P * p->kh * p->kw < 32768 ? 1 : nthreads;
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
        for (int64_t q = 0; q < planes; q++) {
            const int64_t n = q / OC, oc = q % OC, g = oc / OCg;
            F(cv_direct_fwd_plane)(p, x + (n * C + g) * HW, w + oc * p->kh * p->kw,
                                   bias ? bias[oc] : (T)0, y + q * P);
        }
        return;
    }
    const int one = cv_is1x1(p);
    const double flops = 2.0 * (double)N * OC * P * Kg;
    int outer = (N >= nthreads && nthreads > 1 && flops > 1e6) ? nthreads : 1;
    int inner = outer > 1 ? 1 : nthreads;
#pragma omp parallel num_threads(outer) if (outer > 1)
    {
        T *col = one ? NULL : (T *)malloc((size_t)(Kg * P) * sizeof(T));
#pragma omp for schedule(static)
        for (int64_t n = 0; n < N; n++) {
            for (int64_t g = 0; g < G; g++) {
                T *yg = y + (n * OC + g * OCg) * P;
                T beta = 0;
                if (bias) {
                    for (int64_t o = 0; o < OCg; o++) {
                        const T b = bias[g * OCg + o];
                        for (int64_t q = 0; q < P; q++) yg[o * P + q] = b;
                    }
                    beta = 1;
                }
                const T *xg = x + (n * C + g * Cg) * HW;
                const T *B = xg;
                if (!one) {
                    F(ember_im2col)(p, Cg, xg, col);
                    B = col;
                }
                GEMM(OCg, P, Kg, (T)1, w + g * OCg * Kg, Kg, 1, B, P, 1, beta, yg, P, 1, inner);
            }
        }
        free(col);
    }
}

void F(ember_conv2d_bwd_input)(const ember_conv2d_params *p, const T *dy, const T *w, T *dx,
                               int nthreads) {
    const int64_t N = p->N, C = p->C, OC = p->OC, G = p->groups;
    const int64_t Cg = C / G, OCg = OC / G, Kg = Cg * p->kh * p->kw, P = p->Ho * p->Wo;
    const int64_t HW = p->H * p->W;
    if (N == 0 || C == 0 || HW == 0) return;
    if (nthreads < 1) nthreads = 1;
    if (cv_direct(p)) {
        const int64_t planes = N * C;
        int nt = planes * P * p->kh * p->kw < 32768 ? 1 : nthreads;
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
        for (int64_t q = 0; q < planes; q++) {
            const int64_t n = q / C, c = q % C; /* c == group */
            T *dxp = dx + q * HW;
            memset(dxp, 0, (size_t)HW * sizeof(T));
            for (int64_t o = 0; o < OCg; o++) {
                const int64_t oc = c * OCg + o;
                F(cv_direct_bwd_plane)(p, dy + (n * OC + oc) * P, w + oc * p->kh * p->kw, dxp);
            }
        }
        return;
    }
    const int one = cv_is1x1(p);
    const double flops = 2.0 * (double)N * OC * P * Kg;
    int outer = (N >= nthreads && nthreads > 1 && flops > 1e6) ? nthreads : 1;
    int inner = outer > 1 ? 1 : nthreads;
#pragma omp parallel num_threads(outer) if (outer > 1)
    {
        T *col = one ? NULL : (T *)malloc((size_t)(Kg * P) * sizeof(T));
#pragma omp for schedule(static)
        for (int64_t n = 0; n < N; n++) {
            for (int64_t g = 0; g < G; g++) {
                const T *dyg = dy + (n * OC + g * OCg) * P;
                T *dxg = dx + (n * C + g * Cg) * HW;
                const T *wg = w + g * OCg * Kg;
                if (one) {
                    GEMM(Cg, P, OCg, (T)1, wg, 1, Kg, dyg, P, 1, (T)0, dxg, P, 1, inner);
                } else {
                    GEMM(Kg, P, OCg, (T)1, wg, 1, Kg, dyg, P, 1, (T)0, col, P, 1, inner);
                    memset(dxg, 0, (size_t)(Cg * HW) * sizeof(T));
                    F(ember_col2im)(p, Cg, col, dxg);
                }
            }
        }
        free(col);
    }
}

void F(ember_conv2d_bwd_weight)(const ember_conv2d_params *p, const T *x, const T *dy, T *dw,
                                T *dbias, int nthreads) {
    const int64_t N = p->N, C = p->C, OC = p->OC, G = p->groups;
    const int64_t Cg = C / G, OCg = OC / G, Kg = Cg * p->kh * p->kw, P = p->Ho * p->Wo;
    const int64_t HW = p->H * p->W, WN = OC * Kg;
    if (nthreads < 1) nthreads = 1;
    if (dbias) {
        int nt = N * OC * P < 65536 ? 1 : nthreads;
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
        for (int64_t oc = 0; oc < OC; oc++) {
            T s = 0;
            for (int64_t n = 0; n < N; n++) {
                const T *r = dy + (n * OC + oc) * P;
                T acc[16] = {0};
                int64_t q = 0;
                for (; q + 16 <= P; q += 16)
                    for (int l = 0; l < 16; l++) acc[l] += r[q + l];
                for (; q < P; q++) s += r[q];
                for (int l = 0; l < 16; l++) s += acc[l];
            }
            dbias[oc] = s;
        }
    }
    memset(dw, 0, (size_t)WN * sizeof(T));
    if (N == 0 || P == 0 || WN == 0) return;
    const int one = cv_is1x1(p);
    const double flops = 2.0 * (double)N * OC * P * Kg;
    int outer = (N >= nthreads && nthreads > 1 && flops > 1e6) ? nthreads : 1;
    int inner = outer > 1 ? 1 : nthreads;
    T *acc = outer > 1 ? (T *)calloc((size_t)(WN * (outer - 1)), sizeof(T)) : NULL;
#pragma omp parallel num_threads(outer) if (outer > 1)
    {
        int tid = 0;
#ifdef _OPENMP
        tid = omp_get_thread_num();
#endif
        T *mydw = tid == 0 ? dw : acc + (tid - 1) * WN;
        T *col = one ? NULL : (T *)malloc((size_t)(Kg * P) * sizeof(T));
#pragma omp for schedule(static)
        for (int64_t n = 0; n < N; n++) {
            for (int64_t g = 0; g < G; g++) {
                const T *dyg = dy + (n * OC + g * OCg) * P;
                const T *xg = x + (n * C + g * Cg) * HW;
                const T *B = xg;
                if (!one) {
                    F(ember_im2col)(p, Cg, xg, col);
                    B = col;
                }
                /* dw_g (OCg x Kg) += dy_g (OCg x P) @ col^T (P x Kg) */
                GEMM(OCg, Kg, P, (T)1, dyg, P, 1, B, 1, P, (T)1, mydw + g * OCg * Kg, Kg, 1, inner);
            }
        }
        free(col);
    }
    if (acc) {
        for (int t = 1; t < outer; t++)
            for (int64_t q = 0; q < WN; q++) dw[q] += acc[(t - 1) * WN + q];
        free(acc);
    }
}

#undef F
#undef CV_CAT
#undef CV_CAT2
#endif
