/* Direct float32 3x3 stride-1 convolution for few channels (NCHW), written once
   and compiled per ISA (included after conv_wino_impl.h: WI_PUB, wi_min).

   With few channels the GEMM of im2col is thin (16 -> 16 channels: 16 rows,
   144 deep) and Winograd's transforms outweigh its products, so these kernels
   keep a register block of outputs and stream the image past it.  Each image
   is first copied, zero-padded, into a staging buffer of Hp x Wp planes; an
   output row is then computed over the whole padded width Wp ("extended"
   positions q = oh*Wp + ow, the last Wp - Wo of each row thrown away), so
   every tap (i, j) reads the staged plane at q + i*Wp + j: one contiguous
   vector load per tap whatever the row length.

   The forward (and, on the padded grad_output with the flipped filters, the
   input gradient) splits images over threads; the weight gradient sums fixed
   slices of images in order, so every result is the same on any number of
   threads. */

/* DV lanes per vector; a forward block is DC_OCB output channels by DC_QB
   vectors of positions, a weight-gradient block DC_WOB output channels by the
   9 taps of one input channel (accumulators in registers) */
#ifdef WI_NV
#define DV WI_NV
#else
#define DV WI_WV
#endif
#ifndef DC_OCB
#if DV >= 16
#define DC_OCB 8
#define DC_QB 2
#define DC_WOB 2
#else
#define DC_OCB 4
#define DC_QB 3
#define DC_WOB 1
#endif
#endif
#define DC_SLICES 8

typedef float dv __attribute__((vector_size(DV * 4)));
typedef int dc_iv __attribute__((vector_size(DV * 4)));
static inline dv dc_ld(const float *p) {
    dv v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline void dc_st(float *p, dv v) { memcpy(p, &v, sizeof v); }

/* staged planes: Hp = Ho + 2 rows of Wp = Wo + 2 floats; the buffer has DC_SLACK
   floats past its last plane, read (and thrown away) by the last vectors */
#define DC_SLACK(Wp) (DC_QB * DV + 2 * (Wp) + 8)

/* stage image src (C planes of H x W) into xs (C planes of Hp x Wp), shifted by
   (ph, pw) with zeros around */
static void dc_stage(const float *src, int64_t C, int64_t H, int64_t W, int64_t ph, int64_t pw,
                     int64_t Hp, int64_t Wp, float *xs) {
    const int64_t plane = Hp * Wp;
    memset(xs, 0, (size_t)(C * plane + DC_SLACK(Wp)) * sizeof(float));
    const int64_t r0 = wi_max(0, -ph), r1 = wi_min(H, Hp - ph);
    const int64_t c0 = wi_max(0, -pw), c1 = wi_min(W, Wp - pw);
    if (c1 <= c0) return;
    for (int64_t c = 0; c < C; c++)
        for (int64_t r = r0; r < r1; r++)
            memcpy(xs + c * plane + (r + ph) * Wp + c0 + pw, src + (c * H + r) * W + c0,
                   (size_t)(c1 - c0) * sizeof(float));
}

/* whether the n floats at p are all finite (x*0 is NaN for an inf or NaN) */
static int dc_finite(const float *p, int64_t n) {
    dv z = (dv){0};
    int64_t q = 0;
    for (; q + DV <= n; q += DV) z += dc_ld(p + q) * 0.0f;
    float s = 0.0f;
    for (; q < n; q++) s += p[q] * 0.0f;
    for (int u = 0; u < DV; u++) s += z[u];
    return s == 0.0f;
}

/* filters packed tap-major: wt[(c*9 + t)*KP + k] = filter (k, c) tap t, zero for
   k >= K; flip: w is (C, K, 3, 3) and filter (k, c) is w[c, k] rotated by 180
   degrees (the input gradient's filters) */
static void dc_pack(int64_t K, int64_t C, int64_t KP, const float *w, int flip, float *wt) {
    memset(wt, 0, (size_t)(C * 9 * KP) * sizeof(float));
    for (int64_t k = 0; k < K; k++)
        for (int64_t c = 0; c < C; c++)
            for (int t = 0; t < 9; t++)
                wt[(c * 9 + t) * KP + k] = flip ? w[(c * K + k) * 9 + 8 - t] : w[(k * C + c) * 9 + t];
}

/* out[o][q] (o < DC_OCB, q < DC_QB*DV) = the block of DC_OCB output channels
   at extended positions [q0, q0 + DC_QB*DV) */
static inline void dc_fwd_block(const float *xs, int64_t plane, int64_t Wp, int64_t C,
                                const float *wt, int64_t KP, int64_t q0, float *out) {
    dv acc[DC_OCB][DC_QB];
#pragma GCC unroll 8
    for (int o = 0; o < DC_OCB; o++)
#pragma GCC unroll 4
        for (int b = 0; b < DC_QB; b++) acc[o][b] = (dv){0};
    for (int64_t c = 0; c < C; c++) {
        const float *xc = xs + c * plane + q0;
        const float *wc = wt + c * 9 * KP;
        for (int i = 0; i < 3; i++) {
#if DV == 16
            /* taps j = 1, 2 shifted out of the row's DC_QB + 1 vectors */
            const dc_iv sh[3] = {{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
                                 {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
                                 {2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}};
            dv row[DC_QB + 1];
#pragma GCC unroll 4
            for (int b = 0; b <= DC_QB; b++) row[b] = dc_ld(xc + i * Wp + b * DV);
#endif
#pragma GCC unroll 3
            for (int j = 0; j < 3; j++) {
                const float *wr = wc + (i * 3 + j) * KP;
                dv xv[DC_QB];
#pragma GCC unroll 4
                for (int b = 0; b < DC_QB; b++)
#if DV == 16
                    xv[b] = j == 0 ? row[b] : __builtin_shuffle(row[b], row[b + 1], sh[j]);
#else
                    xv[b] = dc_ld(xc + i * Wp + j + b * DV);
#endif
#pragma GCC unroll 8
                for (int o = 0; o < DC_OCB; o++) {
                    const float wo = wr[o];
#pragma GCC unroll 4
                    for (int b = 0; b < DC_QB; b++) acc[o][b] += xv[b] * wo;
                }
            }
        }
    }
#pragma GCC unroll 8
    for (int o = 0; o < DC_OCB; o++)
#pragma GCC unroll 4
        for (int b = 0; b < DC_QB; b++) dc_st(out + o * DC_QB * DV + b * DV, acc[o][b]);
}

/* y (N, K, Ho, Wo) = the 3x3 convolution of x (N, C, H, W) padded by (ph, pw),
   plus bias (may be NULL); w as dc_pack takes it */
int WI_PUB(ember_dconv3_fwd_f32)(const ember_wino_shape *s, const float *x, const float *w,
                                 int flip, const float *bias, float *y, int nthreads) {
    const int64_t N = s->N, C = s->C, K = s->K, Ho = s->Ho, Wo = s->Wo;
    const int64_t Hp = Ho + 2, Wp = Wo + 2, plane = Hp * Wp, P = Ho * Wo;
    const int64_t KP = (K + DC_OCB - 1) / DC_OCB * DC_OCB, QBL = DC_QB * DV;
    const int64_t Qe = (Ho - 1) * Wp + Wo;
    float *wt = (float *)malloc((size_t)(C * 9 * KP) * sizeof(float));
    if (!wt) return -1;
    dc_pack(K, C, KP, w, flip, wt);
    const int nt = (int)wi_min(nthreads < 1 ? 1 : nthreads, N);
    int failed = 0;
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        float *xs = (float *)malloc((size_t)(C * plane + DC_SLACK(Wp) + DC_OCB * QBL) *
                                    sizeof(float));
        if (!xs) {
#pragma omp atomic write
            failed = 1;
        }
        float *out = xs ? xs + C * plane + DC_SLACK(Wp) : NULL;
#pragma omp for schedule(static)
        for (int64_t n = 0; n < N; n++) {
            if (!xs) continue;
            dc_stage(x + n * C * s->H * s->W, C, s->H, s->W, s->ph, s->pw, Hp, Wp, xs);
            /* blocks of positions outside, of channels inside: the staged rows
               of a block stay in L1 while every output channel reads them */
            for (int64_t q0 = 0; q0 < Qe; q0 += QBL)
                for (int64_t k0 = 0; k0 < K; k0 += DC_OCB) {
                    const int64_t nk = wi_min(DC_OCB, K - k0);
                    dc_fwd_block(xs, plane, Wp, C, wt + k0, KP, q0, out);
                    /* the block's rows: extended [q0, q1) -> y row segments */
                    const int64_t q1 = wi_min(Qe, q0 + QBL);
                    for (int64_t q = q0; q < q1;) {
                        const int64_t r = q / Wp, ow = q - r * Wp;
                        const int64_t e = wi_min(q1, r * Wp + Wp);
                        const int64_t len = wi_min(e, r * Wp + Wo) - q;
                        if (len > 0)
                            for (int64_t o = 0; o < nk; o++) {
                                const float *src = out + o * QBL + (q - q0);
                                float *dst = y + (n * K + k0 + o) * P + r * Wo + ow;
                                const float b = bias ? bias[k0 + o] : 0.0f;
                                for (int64_t l = 0; l < len; l++) dst[l] = src[l] + b;
                            }
                        q = e;
                    }
                }
        }
        free(xs);
    }
    free(wt);
    return failed ? -1 : 0;
}

/* acc[o][t] += the products over extended positions [0, QV) of grad_output
   rows dye (DC_WOB rows, row stride QV) and the staged plane xc at tap t */
static inline void dc_wg_block(const float *dye, int64_t QV, const float *xc, int64_t Wp,
                               float *accp) {
    dv acc[DC_WOB][9];
#pragma GCC unroll 4
    for (int o = 0; o < DC_WOB; o++)
#pragma GCC unroll 9
        for (int t = 0; t < 9; t++) acc[o][t] = dc_ld(accp + (o * 9 + t) * DV);
#if DV == 16
    /* taps j = 1, 2 shifted out of this step's and the next step's vectors of
       each row (one load per row and step instead of three) */
    const dc_iv sh1 = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    const dc_iv sh2 = {2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17};
    dv cur[3];
#pragma GCC unroll 3
    for (int i = 0; i < 3; i++) cur[i] = dc_ld(xc + i * Wp);
#endif
    for (int64_t q = 0; q < QV; q += DV) {
        dv d[DC_WOB];
#pragma GCC unroll 4
        for (int o = 0; o < DC_WOB; o++) d[o] = dc_ld(dye + o * QV + q);
#pragma GCC unroll 3
        for (int i = 0; i < 3; i++) {
#if DV == 16
            const dv nxt = dc_ld(xc + q + DV + i * Wp);
            const dv xv[3] = {cur[i], __builtin_shuffle(cur[i], nxt, sh1),
                              __builtin_shuffle(cur[i], nxt, sh2)};
            cur[i] = nxt;
#else
            dv xv[3];
#pragma GCC unroll 3
            for (int j = 0; j < 3; j++) xv[j] = dc_ld(xc + q + i * Wp + j);
#endif
#pragma GCC unroll 3
            for (int j = 0; j < 3; j++)
#pragma GCC unroll 4
                for (int o = 0; o < DC_WOB; o++) acc[o][i * 3 + j] += d[o] * xv[j];
        }
    }
#pragma GCC unroll 4
    for (int o = 0; o < DC_WOB; o++)
#pragma GCC unroll 9
        for (int t = 0; t < 9; t++) dc_st(accp + (o * 9 + t) * DV, acc[o][t]);
}

/* dw (K, C, 3, 3) = the weight gradient of the 3x3 convolution of x (N, C, H, W)
   padded by (ph, pw) with grad_output dy (N, K, Ho, Wo).  The thrown-away
   positions multiply zeros of grad_output by real inputs, which is only exact
   for finite inputs: returns 1 (dw unspecified) when x holds an inf or NaN,
   for the caller to take another path, -1 when out of memory, else 0. */
int WI_PUB(ember_dconv3_wgrad_f32)(const ember_wino_shape *s, const float *x, const float *dy,
                                   float *dw, int nthreads) {
    const int64_t N = s->N, C = s->C, K = s->K, Ho = s->Ho, Wo = s->Wo;
    const int64_t Hp = Ho + 2, Wp = Wo + 2, plane = Hp * Wp, P = Ho * Wo;
    const int64_t KP = (K + DC_WOB - 1) / DC_WOB * DC_WOB;
    /* extended positions rounded up to whole vectors; grad_output is zero at
       the thrown-away ones, so they add nothing */
    const int64_t QV = ((Ho - 1) * Wp + Wo + DV - 1) / DV * DV;
    const int64_t S = wi_min(N, DC_SLICES), per = KP * C * 9 * DV;
    float *part = (float *)malloc((size_t)(S * per) * sizeof(float));
    if (!part) return -1;
    const int nt = (int)wi_min(nthreads < 1 ? 1 : nthreads, S);
    int failed = 0, nonfinite = 0;
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        const int64_t nxs = C * plane + DC_SLACK(Wp);
        float *xs = (float *)malloc((size_t)(nxs + KP * QV) * sizeof(float));
        if (!xs) {
#pragma omp atomic write
            failed = 1;
        }
        float *dye = xs ? xs + nxs : NULL;
#pragma omp for schedule(static)
        for (int64_t sl = 0; sl < S; sl++) {
            float *acc = part + sl * per;
            memset(acc, 0, (size_t)per * sizeof(float));
            if (!xs) continue;
            for (int64_t n = N * sl / S; n < N * (sl + 1) / S; n++) {
                dc_stage(x + n * C * s->H * s->W, C, s->H, s->W, s->ph, s->pw, Hp, Wp, xs);
                if (!dc_finite(xs, C * plane)) {
#pragma omp atomic write
                    nonfinite = 1;
                }
                for (int64_t k = 0; k < KP; k++) {
                    float *d = dye + k * QV;
                    if (k >= K) {
                        memset(d, 0, (size_t)QV * sizeof(float));
                        continue;
                    }
                    for (int64_t r = 0; r < Ho; r++) {
                        memcpy(d + r * Wp, dy + (n * K + k) * P + r * Wo,
                               (size_t)Wo * sizeof(float));
                        if (r + 1 < Ho) d[r * Wp + Wo] = d[r * Wp + Wo + 1] = 0.0f;
                    }
                    /* (Wp = Wo + 2 thrown-away columns a row; the last row's to QV) */
                    for (int64_t q = (Ho - 1) * Wp + Wo; q < QV; q++) d[q] = 0.0f;
                }
                for (int64_t k0 = 0; k0 < KP; k0 += DC_WOB)
                    for (int64_t c = 0; c < C; c++)
                        dc_wg_block(dye + k0 * QV, QV, xs + c * plane, Wp,
                                    acc + ((k0 / DC_WOB) * C + c) * DC_WOB * 9 * DV);
            }
        }
        free(xs);
    }
    /* lanes, then slices, summed in a fixed order */
    for (int64_t k = 0; k < K; k++)
        for (int64_t c = 0; c < C; c++)
            for (int t = 0; t < 9; t++) {
                const int64_t off =
                    (((k / DC_WOB) * C + c) * DC_WOB + k % DC_WOB) * 9 * DV + t * DV;
                float tot = 0.0f;
                for (int64_t sl = 0; sl < S; sl++) {
                    const float *a = part + sl * per + off;
                    float l = 0.0f;
                    for (int u = 0; u < DV; u++) l += a[u];
                    tot += l;
                }
                dw[(k * C + c) * 9 + t] = tot;
            }
    free(part);
    return failed ? -1 : nonfinite;
}

#undef DV
#undef DC_OCB
#undef DC_WOB
#undef DC_QB
#undef DC_SLICES
#undef DC_SLACK
