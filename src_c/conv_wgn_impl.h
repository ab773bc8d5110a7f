/* Float32 weight gradient through channels-last copies, for 32 or more output
   channels: dw[k, c, i, j] = sum over (n, oh, ow) of dy[n, k, oh, ow] *
   x[n, c, oh*sh + i*dh - ph, ow*sw + j*dw - pw].  Included after
   conv_wino_impl.h (its 8x8 register transpose) by the AVX2 and AVX-512 files.

   Each image is copied once to (H+2ph, W+2pw, C) with zero borders, and its dy
   to (Ho*Wo, K).  Then dy's row at one output position is already the packed A
   panel of a GEMM micro-kernel (MV vectors of output channels), and the input
   row at the shifted position gives NR broadcast channels: the register tile
   MV x NR of the tap's (K x C) gradient sums every position of the image with
   no packing and no im2col.  (The GEMM and Winograd paths spend a third of
   their time packing or transforming at these sizes.)

   The images are cut into a fixed number of slices, each summed in image
   order into its own buffer, and the buffers are added in slice order, so dw
   is the same on any number of threads. */
#include <immintrin.h>

#if defined(WI_NV) && WI_NV == 16
typedef __m512 wg_v;
#define WG_VL 16
#define WG_MV 4   /* up to 4 x 16 output channels by 6 input channels: 24 zmm sums */
#ifndef WG_NR
#define WG_NR 6
#endif
#define wg_ld _mm512_loadu_ps
#define wg_st _mm512_storeu_ps
#define wg_bc _mm512_set1_ps
#define wg_fma _mm512_fmadd_ps
#else
typedef __m256 wg_v;
#define WG_VL 8
#define WG_MV 2   /* 2 x 8 by 6: 12 ymm sums */
#define WG_NR 6
#define wg_ld _mm256_loadu_ps
#define wg_st _mm256_storeu_ps
#define wg_bc _mm256_set1_ps
#define wg_fma _mm256_fmadd_ps
#endif
#define WG_SLICES 8

/* the geometry one tile walks: Ho rows of Wo positions; dy rows K apart, x
   positions xs apart within a row and xr apart between rows */
typedef struct {
    int64_t Ho, Wo, K, xs, xr;
} wg_geo;

/* acc[r*K + m*VL ...] (NR rows of K) += the tile's sums over every position,
   d at the tile's first output channel of position 0, x at its first input
   channel of tap-shifted position 0.  Always inlined with constant MV, NR: the
   sums stay in registers. */
static inline __attribute__((always_inline)) void wg_tile(const wg_geo *g, const float *d,
                                                          const float *x, float *acc,
                                                          const int MV, const int NR) {
    wg_v a[32];
    for (int r = 0; r < NR; r++)
        for (int m = 0; m < MV; m++) a[r * MV + m] = wg_ld(acc + r * g->K + m * WG_VL);
    for (int64_t oh = 0; oh < g->Ho; oh++) {
        const float *dp = d + oh * g->Wo * g->K, *xp = x + oh * g->xr;
        for (int64_t ow = 0; ow < g->Wo; ow++) {
            wg_v dv[WG_MV];
            for (int m = 0; m < MV; m++) dv[m] = wg_ld(dp + m * WG_VL);
            for (int r = 0; r < NR; r++) {
                const wg_v b = wg_bc(xp[r]);
                for (int m = 0; m < MV; m++) a[r * MV + m] = wg_fma(dv[m], b, a[r * MV + m]);
            }
            dp += g->K;
            xp += g->xs;
        }
    }
    for (int r = 0; r < NR; r++)
        for (int m = 0; m < MV; m++) wg_st(acc + r * g->K + m * WG_VL, a[r * MV + m]);
}

/* One input channel, 3x3 taps at stride 1 (a first layer on channels-last
   images): the nine taps are the tile's broadcast values, read from three rows
   of the image (row stride xr), rather than one-channel tiles tap by tap. */
#define WG_MV9 (WG_VL == 16 ? 2 : 1)
static inline __attribute__((always_inline)) void wg_tile9(const wg_geo *g, const float *d,
                                                           const float *x, float *acc,
                                                           const int MV) {
    wg_v a[9 * WG_MV9];
    for (int t = 0; t < 9; t++)
        for (int m = 0; m < MV; m++) a[t * MV + m] = wg_ld(acc + t * g->K + m * WG_VL);
    for (int64_t oh = 0; oh < g->Ho; oh++) {
        const float *dp = d + oh * g->Wo * g->K, *xp = x + oh * g->xr;
        for (int64_t ow = 0; ow < g->Wo; ow++) {
            wg_v dv[WG_MV9];
            for (int m = 0; m < MV; m++) dv[m] = wg_ld(dp + m * WG_VL);
            for (int t = 0; t < 9; t++) {
                const wg_v b = wg_bc(xp[(t / 3) * g->xr + t % 3]);
                for (int m = 0; m < MV; m++) a[t * MV + m] = wg_fma(dv[m], b, a[t * MV + m]);
            }
            dp += g->K;
            xp++;
        }
    }
    for (int t = 0; t < 9; t++)
        for (int m = 0; m < MV; m++) wg_st(acc + t * g->K + m * WG_VL, a[t * MV + m]);
}

#define WG_T(MV, NR) \
    case MV * 16 + NR: wg_tile(g, d, x, acc, MV, NR); break;
static void wg_tile_any(const wg_geo *g, const float *d, const float *x, float *acc, int mv,
                        int nr) {
    switch (mv * 16 + nr) {
        WG_T(1, 1) WG_T(1, 2) WG_T(1, 3) WG_T(1, 4) WG_T(1, 5) WG_T(1, 6) WG_T(1, 7) WG_T(1, 8)
        WG_T(2, 1) WG_T(2, 2) WG_T(2, 3) WG_T(2, 4) WG_T(2, 5) WG_T(2, 6) WG_T(2, 7) WG_T(2, 8)
#if WG_MV == 4
        WG_T(3, 1) WG_T(3, 2) WG_T(3, 3) WG_T(3, 4) WG_T(3, 5) WG_T(3, 6) WG_T(3, 7) WG_T(3, 8)
        WG_T(4, 1) WG_T(4, 2) WG_T(4, 3) WG_T(4, 4) WG_T(4, 5) WG_T(4, 6) WG_T(4, 7) WG_T(4, 8)
#endif
    default: break;
    }
}
#undef WG_T

/* dst[q*drs + r] = src[r*srs + q] for r < R, q < Q: 8x8 blocks in registers, the
   last block of a side of 8 or more overlapping the one before it (the same
   values written twice) instead of a scalar remainder */
static void wg_tr(const float *src, int64_t R, int64_t Q, int64_t srs, float *dst, int64_t drs) {
    if (R < 8 || Q < 8) {
        for (int64_t r = 0; r < R; r++)
            for (int64_t q = 0; q < Q; q++) dst[q * drs + r] = src[r * srs + q];
        return;
    }
    for (int64_t r0 = 0; r0 < R; r0 += 8) {
        const int64_t r = wi_min(r0, R - 8);
        for (int64_t q0 = 0; q0 < Q; q0 += 8) {
            const int64_t q = wi_min(q0, Q - 8);
            wv v[8];
            for (int l = 0; l < 8; l++) v[l] = wi_ld(src + (r + l) * srs + q);
            wi_tr8(v);
            for (int l = 0; l < 8; l++) wi_st(dst + (q + l) * drs + r, v[l]);
        }
    }
}

int WI_PUB(ember_conv_wgrad_cl_f32)(const ember_conv2d_params *p, const float *x,
                                    const float *dy, float *dw, int nthreads, int nhwc) {
    const int64_t N = p->N, C = p->C, K = p->OC, H = p->H, W = p->W, Ho = p->Ho, Wo = p->Wo;
    const int64_t kh = p->kh, kw = p->kw, T = kh * kw, P = Ho * Wo;
    const int64_t Hp = H + 2 * p->ph, Wp = W + 2 * p->pw, TKC = T * K * C;
    if (K % WG_VL || p->groups != 1) return 1;
    const int64_t S = N < WG_SLICES ? N : WG_SLICES;
    /* the slices' sums (T, C, K) */
    float *acc = (float *)ember_conv_scratch(1, (size_t)(S * TKC) * sizeof(float), 0);
    if (!acc) return -1;
    const int nt = (int)wi_min(nthreads < 1 ? 1 : nthreads, S);
    const wg_geo geo = {Ho, Wo, K, p->sw * C, p->sh * Wp * C};
    const int tap9 = C == 1 && kh == 3 && kw == 3 && p->sh == 1 && p->sw == 1 && p->dh == 1 &&
                     p->dw == 1;
    int failed = 0;
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        /* this thread's channels-last image (borders zeroed once) and dy */
        float *xt = (float *)ember_conv_scratch(
            0, (size_t)(Hp * Wp * C + (nhwc ? 0 : P * K)) * sizeof(float), 1);
        float *dyt = xt + Hp * Wp * C;
        if (!xt) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(static)
        for (int64_t sl = 0; sl < S; sl++) {
            if (!xt) continue;
            float *sa = acc + sl * TKC;
            memset(sa, 0, (size_t)TKC * sizeof(float));
            for (int64_t n = N * sl / S; n < N * (sl + 1) / S; n++) {
                const float *xn = x + n * C * H * W, *xi = xt, *di = dyt;
                if (!nhwc) {
                    for (int64_t h = 0; h < H; h++)
                        wg_tr(xn + h * W, C, W, H * W, xt + ((h + p->ph) * Wp + p->pw) * C, C);
                    wg_tr(dy + n * K * P, K, P, P, dyt, K);
                } else {
                    /* channels-last already: dy as it is, x too unless padded */
                    di = dy + n * K * P;
                    if (p->ph || p->pw)
                        for (int64_t h = 0; h < H; h++)
                            memcpy(xt + ((h + p->ph) * Wp + p->pw) * C, xn + h * W * C,
                                   (size_t)(W * C) * sizeof(float));
                    else
                        xi = xn;
                }
                /* the next image's x and dy, fetched into L2 a share per tile pass:
                   the copies above then read cache, not memory */
                const char *nx = (const char *)(xn + C * H * W), *ny = (const char *)(dy + (n + 1) * K * P);
                const int64_t nlx = n + 1 < N ? C * H * W / 16 : 0, nly = n + 1 < N ? K * P / 16 : 0;
                const int64_t passes = T * wi_cdiv(C, WG_NR) * wi_cdiv(K, WG_MV * WG_VL);
                const int64_t per = wi_cdiv(nlx + nly, passes);
                int64_t pf = 0;
                if (tap9) {
                    for (int64_t k0 = 0; k0 < K; k0 += WG_MV9 * WG_VL) {
                        if (K - k0 >= WG_MV9 * WG_VL)
                            wg_tile9(&geo, di + k0, xi, sa + k0, WG_MV9);
                        else
                            wg_tile9(&geo, di + k0, xi, sa + k0, 1);
                    }
                    continue;
                }
                for (int64_t t = 0; t < T; t++) {
                    const float *xtap = xi + ((t / kw) * p->dh * Wp + (t % kw) * p->dw) * C;
                    for (int64_t c0 = 0; c0 < C; c0 += WG_NR) {
                        const int nr = (int)wi_min(WG_NR, C - c0);
                        for (int64_t k0 = 0; k0 < K; k0 += WG_MV * WG_VL) {
                            const int mv = (int)wi_min(WG_MV, (K - k0) / WG_VL);
                            wg_tile_any(&geo, di + k0, xtap + c0, sa + (t * C + c0) * K + k0,
                                        mv, nr);
                            for (const int64_t e = wi_min(pf + per, nlx + nly); pf < e; pf++)
                                _mm_prefetch(pf < nlx ? nx + 64 * pf : ny + 64 * (pf - nlx),
                                             _MM_HINT_T1);
                        }
                    }
                }
            }
        }
        ember_conv_scratch_done(0, xt);
        /* (after the slices' barrier) per (tap, input channel), the slices in
           order, then (T, C, K) -> dw (K, C, kh, kw), the threads sharing it */
        if (!failed) {
#pragma omp for schedule(static)
            for (int64_t tc = 0; tc < T * C; tc++) {
                const int64_t t = tc / C, c = tc % C;
                for (int64_t k = 0; k < K; k++) {
                    float v = acc[tc * K + k];
                    for (int64_t sl = 1; sl < S; sl++) v += acc[sl * TKC + tc * K + k];
                    dw[(k * C + c) * T + t] = v;
                }
            }
        }
    }
    ember_conv_scratch_done(1, acc);
    if (failed) return -1;
    return 0;
}
#undef wg_ld
#undef wg_st
#undef wg_bc
#undef wg_fma
