/* Winograd F(4x4, 3x3) float32 on channels-last (NHWC) images, included by
   conv_wino_impl.h (same ISA copies, same transforms and GEMMs).

   In NHWC a tile's 6x6 input patch is 36 channel vectors, so the transforms run
   across channels (WI_NV lanes, no shuffles), their results land channel-minor,
   (36, tiles, C), the layout the transform-domain GEMMs take as they are, and the
   output transform writes each output pixel's channel vector in place.  Blocks
   are fixed runs of tiles, so results do not depend on the thread count. */

#ifndef WI_NV
#define WI_NV WI_WV
#endif
typedef float wn __attribute__((vector_size(WI_NV * 4)));

/* lanes [0, n) of p (zeros past them) / to p; n >= WI_NV takes whole vectors */
static inline wn wn_ld(const float *p, int64_t n) {
    wn v = {0};
    if (n >= WI_NV) memcpy(&v, p, sizeof v);
    else memcpy(&v, p, (size_t)n * sizeof(float));
    return v;
}
static inline void wn_st(float *p, wn v, int64_t n) {
    if (n >= WI_NV) memcpy(p, &v, sizeof v);
    else memcpy(p, &v, (size_t)n * sizeof(float));
}

/* position (h, w) of a plane H x W is inside it */
static inline int wn_in(int64_t h, int64_t w, int64_t H, int64_t W) {
    return h >= 0 && h < H && w >= 0 && w < W;
}

/* B^T d B of the 6x6 patch at (h0, w0) of image x (H, W, C), zeros outside:
   value xi of channel c to out[xi*sxi + c] */
static void wn_in_tile(const float *x, int64_t H, int64_t W, int64_t C, int64_t h0, int64_t w0,
                       float *out, int64_t sxi) {
    for (int64_t c0 = 0; c0 < C; c0 += WI_NV) {
        const int64_t n = C - c0;
        wn d[6][6], t[6][6];
        for (int i = 0; i < 6; i++)
            for (int j = 0; j < 6; j++)
                d[i][j] = wn_in(h0 + i, w0 + j, H, W)
                              ? wn_ld(x + ((h0 + i) * W + w0 + j) * C + c0, n)
                              : (wn){0};
        for (int j = 0; j < 6; j++)
            WI_BT(d[0][j], d[1][j], d[2][j], d[3][j], d[4][j], d[5][j], t[0][j], t[1][j],
                  t[2][j], t[3][j], t[4][j], t[5][j]);
        for (int a = 0; a < 6; a++) {
            wn v[6];
            WI_BT(t[a][0], t[a][1], t[a][2], t[a][3], t[a][4], t[a][5], v[0], v[1], v[2], v[3],
                  v[4], v[5]);
            for (int b = 0; b < 6; b++) wn_st(out + (a * 6 + b) * sxi + c0, v[b], n);
        }
    }
}

/* A dy A^T of the 4x4 tile at (h0, w0) of grad_output dy (Ho, Wo, K), zeros
   outside: value xi of channel k to out[xi*sxi + k] */
static void wn_dy_tile(const float *dy, int64_t Ho, int64_t Wo, int64_t K, int64_t h0,
                       int64_t w0, float *out, int64_t sxi) {
    for (int64_t k0 = 0; k0 < K; k0 += WI_NV) {
        const int64_t n = K - k0;
        wn e[4][4], t[6][4];
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++)
                e[i][j] = wn_in(h0 + i, w0 + j, Ho, Wo)
                              ? wn_ld(dy + ((h0 + i) * Wo + w0 + j) * K + k0, n)
                              : (wn){0};
        for (int j = 0; j < 4; j++)
            WI_A(e[0][j], e[1][j], e[2][j], e[3][j], t[0][j], t[1][j], t[2][j], t[3][j], t[4][j],
                 t[5][j]);
        for (int a = 0; a < 6; a++) {
            wn v[6];
            WI_A(t[a][0], t[a][1], t[a][2], t[a][3], v[0], v[1], v[2], v[3], v[4], v[5]);
            for (int b = 0; b < 6; b++) wn_st(out + (a * 6 + b) * sxi + k0, v[b], n);
        }
    }
}

/* y's 4x4 tile at (h0, w0) (clipped to Ho x Wo) = A^T m A + bias, from the
   transform-domain products m[xi*sxi + k]; y is one image (Ho, Wo, K) */
static void wn_out_tile(const float *m, int64_t sxi, int64_t K, const float *bias, float *y,
                        int64_t Ho, int64_t Wo, int64_t h0, int64_t w0) {
    const int64_t rows = wi_min(4, Ho - h0), cols = wi_min(4, Wo - w0);
    for (int64_t k0 = 0; k0 < K; k0 += WI_NV) {
        const int64_t n = K - k0;
        wn t[4][6];
        for (int b = 0; b < 6; b++)
            WI_AT(wn_ld(m + b * sxi + k0, n), wn_ld(m + (6 + b) * sxi + k0, n),
                  wn_ld(m + (12 + b) * sxi + k0, n), wn_ld(m + (18 + b) * sxi + k0, n),
                  wn_ld(m + (24 + b) * sxi + k0, n), wn_ld(m + (30 + b) * sxi + k0, n), t[0][b],
                  t[1][b], t[2][b], t[3][b]);
        const wn bv = bias ? wn_ld(bias + k0, n) : (wn){0};
        for (int64_t a = 0; a < rows; a++) {
            wn o[4];
            WI_AT(t[a][0], t[a][1], t[a][2], t[a][3], t[a][4], t[a][5], o[0], o[1], o[2], o[3]);
            for (int64_t b = 0; b < cols; b++)
                wn_st(y + ((h0 + a) * Wo + w0 + b) * K + k0, o[b] + bv, n);
        }
    }
}

/* tile t of the N x TH x TW tiles: its image and its top-left output position */
static inline void wn_tile(int64_t t, int64_t TH, int64_t TW, int64_t *n, int64_t *h0,
                           int64_t *w0) {
    const int64_t r = t % (TH * TW);
    *n = t / (TH * TW);
    *h0 = 4 * (r / TW);
    *w0 = 4 * (r % TW);
}

/* y (N, Ho, Wo, K) = conv(x (N, H, W, C), U) + bias */
int WI_PUB(ember_wino_fwd_nhwc_f32)(const ember_wino_shape *s, const float *x, const float *U,
                                    const float *bias, float *y, int nthreads) {
    const int64_t C = s->C, K = s->K, TH = wi_cdiv(s->Ho, 4), TW = wi_cdiv(s->Wo, 4);
    const int64_t T = s->N * TH * TW, TB = WI_FWD_TILES, nblk = wi_cdiv(T, TB);
    if (T == 0 || K == 0) return 0;
    /* V (36, TB, C) and M (36, TB, K), planes skewed as in the NCHW driver */
    const int64_t sv = TB * C + WI_SKEW, sm = TB * K + WI_SKEW;
    const int nt = (int)wi_min(nthreads < 1 ? 1 : nthreads, nblk);
    int failed = 0;
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        float *V = (float *)malloc((size_t)(36 * (sv + sm)) * sizeof(float));
        float *M = V + 36 * sv;
        if (!V) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(static)
        for (int64_t b = 0; b < nblk; b++) {
            if (!V) continue;
            const int64_t t0 = b * TB, nb = wi_min(TB, T - t0);
            int64_t n, h0, w0;
            for (int64_t q = 0; q < nb; q++) {
                wn_tile(t0 + q, TH, TW, &n, &h0, &w0);
                wn_in_tile(x + n * s->H * s->W * C, s->H, s->W, C, h0 - s->ph, w0 - s->pw,
                           V + q * C, sv);
            }
            ember_sgemm_batched(36, nb, K, C, 1.0f, V, C, 1, U, K, 1, 0.0f, M, K, 1, sv, C * K,
                                sm, 1);
            for (int64_t q = 0; q < nb; q++) {
                wn_tile(t0 + q, TH, TW, &n, &h0, &w0);
                wn_out_tile(M + q * K, sm, K, bias, y + n * s->Ho * s->Wo * K, s->Ho, s->Wo, h0,
                            w0);
            }
        }
        free(V);
    }
    return failed ? -1 : 0;
}

/* dw (K, C, 3, 3) from x (N, H, W, C) and dy (N, Ho, Wo, K): the NCHW driver's
   slices and sums over blocks of tiles that run straight through the images */
int WI_PUB(ember_wino_wgrad_nhwc_f32)(const ember_wino_shape *s, const float *x,
                                      const float *dy, float *dw, int nthreads) {
    const int64_t C = s->C, K = s->K, TH = wi_cdiv(s->Ho, 4), TW = wi_cdiv(s->Wo, 4);
    const int64_t T = s->N * TH * TW, TB = WI_WG_TILES, nblk = wi_cdiv(T, TB);
    const int64_t UKC = 36 * K * C, S = wi_wg_slices(nblk, UKC);
    float *dU = (float *)calloc((size_t)(UKC * S), sizeof(float));
    if (!dU) return -1;
    const int64_t sv = TB * C + WI_SKEW, sd = TB * K + WI_SKEW;
    const int nt = (int)wi_min(nthreads < 1 ? 1 : nthreads, S);
    const int gemm_nt = S == 1 ? (nthreads < 1 ? 1 : nthreads) : 1;
    int failed = 0;
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        float *V = (float *)malloc((size_t)(36 * (sv + sd)) * sizeof(float));
        float *D = V + 36 * sv;
        if (!V) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(static)
        for (int64_t sl = 0; sl < S; sl++) {
            if (!V) continue;
            float *myU = dU + sl * UKC;
            for (int64_t b = nblk * sl / S; b < nblk * (sl + 1) / S; b++) {
                const int64_t t0 = b * TB, nb = wi_min(TB, T - t0);
                for (int64_t q = 0; q < nb; q++) {
                    int64_t n, h0, w0;
                    wn_tile(t0 + q, TH, TW, &n, &h0, &w0);
                    wn_in_tile(x + n * s->H * s->W * C, s->H, s->W, C, h0 - s->ph, w0 - s->pw,
                               V + q * C, sv);
                    wn_dy_tile(dy + n * s->Ho * s->Wo * K, s->Ho, s->Wo, K, h0, w0, D + q * K,
                               sd);
                }
                for (int xi = 0; xi < 36; xi++)
                    ember_sgemm(K, C, nb, 1.0f, D + xi * sd, 1, K, V + xi * sv, C, 1, 1.0f,
                                myU + xi * K * C, C, 1, gemm_nt);
            }
        }
        free(V);
    }
    if (failed) {
        free(dU);
        return -1;
    }
    wi_wgrad_finish(dU, S, K, C, dw, nthreads);
    free(dU);
    return 0;
}
