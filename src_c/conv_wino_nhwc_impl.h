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
    const float *src[6][6];   /* each patch position's channels, NULL outside the image */
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++)
            src[i][j] = wn_in(h0 + i, w0 + j, H, W) ? x + ((h0 + i) * W + w0 + j) * C : NULL;
    for (int64_t c0 = 0; c0 < C; c0 += WI_NV) {
        const int64_t n = C - c0;
        wn t[6][6];
        for (int j = 0; j < 6; j++) {
            wn d[6];
            for (int i = 0; i < 6; i++) d[i] = src[i][j] ? wn_ld(src[i][j] + c0, n) : (wn){0};
            WI_BT(d[0], d[1], d[2], d[3], d[4], d[5], t[0][j], t[1][j], t[2][j], t[3][j],
                  t[4][j], t[5][j]);
        }
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

/* The forward's transform-domain products M[xi] (tiles x K) = V[xi] (tiles x C) @
   U[xi] (C x K), written out rather than handed to the GEMM: U stays as it is
   (the GEMM would pack it again for every block of tiles), so blocks can be small
   enough for V and M to stay in L2.  WN_TR tiles by WN_KV channel vectors of
   accumulators; each sum runs over c in order. */
#if WI_NV == 16
#define WN_TR 6
#define WN_KV 4
#elif WI_NV == 8
#define WN_TR 6
#define WN_KV 2
#else
#define WN_TR 4
#define WN_KV 2
#endif
/* tiles per block */
#define WN_FWD_TILES 24

/* m (NR rows, ldm) (+)= a (NR x C, element (r, c) at a[r*rsa + c*csa]) @ u (C x
   KVN*WI_NV, ldu); beta: add to m */
#define WN_MM(NR, KVN)                                                                    \
    static inline void wn_mm_##NR##_##KVN(const float *a, int64_t rsa, int64_t csa,       \
                                          const float *u, int64_t ldu, int64_t C, float *m, \
                                          int64_t ldm, int beta) {                        \
        wn acc[NR][KVN];                                                                  \
        for (int r = 0; r < NR; r++)                                                      \
            for (int q = 0; q < KVN; q++)                                                 \
                if (beta) memcpy(&acc[r][q], m + r * ldm + q * WI_NV, sizeof(wn));        \
                else acc[r][q] = (wn){0};                                                 \
        for (int64_t c = 0; c < C; c++) {                                                 \
            wn b[KVN];                                                                    \
            for (int q = 0; q < KVN; q++) memcpy(&b[q], u + c * ldu + q * WI_NV, sizeof(wn)); \
            for (int r = 0; r < NR; r++) {                                                \
                const float e = a[r * rsa + c * csa];                                     \
                for (int q = 0; q < KVN; q++) acc[r][q] += e * b[q];                      \
            }                                                                             \
        }                                                                                 \
        for (int r = 0; r < NR; r++)                                                      \
            for (int q = 0; q < KVN; q++) memcpy(m + r * ldm + q * WI_NV, &acc[r][q], sizeof(wn)); \
    }
#define WN_MM_OF(NR, KVN) WN_MM(NR, KVN)   /* the sizes expanded before the paste */
WN_MM_OF(WN_TR, WN_KV)
WN_MM_OF(1, WN_KV)
#if WN_KV > 1
WN_MM_OF(WN_TR, 1)
WN_MM_OF(1, 1)
#endif
#define WN_MMF(NR, KVN) WI_CAT(WI_CAT(wn_mm, NR), KVN)

/* m (nr x Kp, ldm) (+)= a (nr x C) @ u (C x Kp, ldu), Kp a multiple of WI_NV: whole
   WN_TR-row blocks, then single rows */
static void wn_matmul(const float *a, int64_t rsa, int64_t csa, const float *u, int64_t ldu,
                      int64_t C, int64_t nr, int64_t Kp, float *m, int64_t ldm, int beta) {
    for (int64_t r = 0; r < nr;) {
        const int full = r + WN_TR <= nr;
        int64_t k = 0;
        for (; k + WN_KV * WI_NV <= Kp; k += WN_KV * WI_NV)
            (full ? WN_MMF(WN_TR, WN_KV) : WN_MMF(1, WN_KV))(a + r * rsa, rsa, csa, u + k, ldu,
                                                             C, m + r * ldm + k, ldm, beta);
#if WN_KV > 1
        for (; k < Kp; k += WI_NV)
            (full ? WN_MMF(WN_TR, 1) : WN_MMF(1, 1))(a + r * rsa, rsa, csa, u + k, ldu, C,
                                                     m + r * ldm + k, ldm, beta);
#endif
        r += full ? WN_TR : 1;
    }
}

/* y (N, Ho, Wo, K) = conv(x (N, H, W, C), U) + bias */
int WI_PUB(ember_wino_fwd_nhwc_f32)(const ember_wino_shape *s, const float *x, const float *U,
                                    const float *bias, float *y, int nthreads) {
    const int64_t C = s->C, K = s->K, TH = wi_cdiv(s->Ho, 4), TW = wi_cdiv(s->Wo, 4);
    const int64_t T = s->N * TH * TW, TB = WN_FWD_TILES, nblk = wi_cdiv(T, TB);
    if (T == 0 || K == 0) return 0;
    /* U with its rows padded to whole vectors (zeros), when K needs it */
    const int64_t Kp = wi_cdiv(K, WI_NV) * WI_NV;
    float *Up = NULL;
    if (Kp != K) {
        Up = (float *)ember_conv_scratch(2, (size_t)(36 * C * Kp) * sizeof(float), 1);
        if (!Up) return -1;
        for (int64_t r = 0; r < 36 * C; r++) memcpy(Up + r * Kp, U + r * K, (size_t)K * sizeof(float));
    }
    const float *Uk = Up ? Up : U;
    /* V (36, TB, C) and M (36, TB, Kp), planes skewed as in the NCHW driver */
    const int64_t sv = TB * C + WI_SKEW, sm = TB * Kp + WI_SKEW;
    const int nt = (int)wi_min(nthreads < 1 ? 1 : nthreads, nblk);
    int failed = 0;
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        float *V = (float *)ember_conv_scratch(0, (size_t)(36 * (sv + sm)) * sizeof(float), 0);
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
            for (int xi = 0; xi < 36; xi++)
                wn_matmul(V + xi * sv, C, 1, Uk + xi * C * Kp, Kp, C, nb, Kp, M + xi * sm, Kp, 0);
            for (int64_t q = 0; q < nb; q++) {
                wn_tile(t0 + q, TH, TW, &n, &h0, &w0);
                wn_out_tile(M + q * Kp, sm, K, bias, y + n * s->Ho * s->Wo * K, s->Ho, s->Wo, h0,
                            w0);
            }
        }
        ember_conv_scratch_done(0, V);
    }
    ember_conv_scratch_done(2, Up);
    return failed ? -1 : 0;
}

/* dw (K, C, 3, 3) from x (N, H, W, C) and dy (N, Ho, Wo, K): the NCHW driver's
   slices and sums over blocks of tiles that run straight through the images */
int WI_PUB(ember_wino_wgrad_nhwc_f32)(const ember_wino_shape *s, const float *x,
                                      const float *dy, float *dw, int nthreads) {
    const int64_t C = s->C, K = s->K, TH = wi_cdiv(s->Ho, 4), TW = wi_cdiv(s->Wo, 4);
    const int64_t T = s->N * TH * TW, TB = WI_WG_TILES, nblk = wi_cdiv(T, TB);
    const int64_t UKC = 36 * K * C, S = wi_wg_slices(nblk, UKC);
    float *dU = (float *)ember_conv_scratch(1, (size_t)(UKC * S) * sizeof(float), 1);
    if (!dU) return -1;
    const int64_t sv = TB * C + WI_SKEW, sd = TB * K + WI_SKEW;
    const int nt = (int)wi_min(nthreads < 1 ? 1 : nthreads, S);
    const int gemm_nt = S == 1 ? (nthreads < 1 ? 1 : nthreads) : 1;
    int failed = 0;
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        float *V = (float *)ember_conv_scratch(0, (size_t)(36 * (sv + sd)) * sizeof(float), 0);
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
                /* dU[xi] (K x C) += D[xi]^T @ V[xi], the sums over the block's tiles
                   in order */
                for (int xi = 0; xi < 36; xi++)
                    if (C % WI_NV == 0 && S > 1)
                        wn_matmul(D + xi * sd, 1, K, V + xi * sv, C, nb, K, C, myU + xi * K * C,
                                  C, 1);
                    else
                        ember_sgemm(K, C, nb, 1.0f, D + xi * sd, 1, K, V + xi * sv, C, 1, 1.0f,
                                    myU + xi * K * C, C, 1, gemm_nt);
            }
        }
        ember_conv_scratch_done(0, V);
    }
    if (failed) {
        ember_conv_scratch_done(1, dU);
        return -1;
    }
    wi_wgrad_finish(dU, S, K, C, dw, nthreads);
    ember_conv_scratch_done(1, dU);
    return 0;
}
