/* Direct float32 3x3 stride-1 convolution for few channels (NCHW), written once
   and compiled per ISA (included after conv_wino_impl.h: WI_PUB, wi_min).

   With few channels the GEMM of im2col is thin (16 -> 16 channels: 16 rows,
   144 deep) and Winograd's transforms outweigh its products, so these kernels
   keep a register block of outputs and stream the image past it.  A padded
   image is first copied, zero-padded, into a staging buffer of Hp x Wp planes
   (an unpadded one already is such planes, read in place); an output row is
   then computed over the whole padded width Wp ("extended" positions q =
   oh*Wp + ow, the last Wp - Wo of each row thrown away), so every tap (i, j)
   reads the plane at q + i*Wp + j: one contiguous vector load per tap
   whatever the row length.  Outputs go from the registers to y in masked
   stores, one per output row a vector covers.

   The forward (and, on the padded grad_output with the flipped filters, the
   input gradient) splits images over threads, or rows of them when there are
   fewer images than threads; the weight gradient sums fixed slices of images
   in order, so every result is the same on any number of threads. */

/* DV lanes per vector.  A forward block is DC_OCB output channels by DC_QB
   vectors of positions; a weight-gradient block DC_WOB output channels by the
   3 taps of one filter row of one input channel (accumulators in registers).
   AVX-512 (32 registers): 8 x 2 vectors and 8 x 3 taps; AVX2 and the generic
   build (16 registers): 4 x 3 and 4 x 3. */
#ifdef WI_NV
#define DV WI_NV
#else
#define DV WI_WV
#endif
#ifndef DC_OCB
#if DV >= 16
#define DC_OCB 8
#define DC_QB 2
#define DC_WOB 8
#else
#define DC_OCB 4
#define DC_QB 3
#define DC_WOB 4
#endif
#endif
#define DC_SLICES 8

#if DV >= 8
#include <immintrin.h>
#endif
/* the sums are written as a*b + c: contracted to FMAs where the ISA has them
   (ISO C mode leaves them apart, two roundings and twice the instructions) */
#pragma GCC push_options
#pragma GCC optimize("fp-contract=fast")

typedef float dv __attribute__((vector_size(DV * 4)));
typedef int dc_iv __attribute__((vector_size(DV * 4)));
static inline dv dc_ld(const float *p) {
    dv v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline void dc_st(float *p, dv v) { memcpy(p, &v, sizeof v); }

/* p[l] = v[l] for lanes lo <= l < hi (the others untouched: masked stores,
   which neither read nor fault on the lanes they leave) */
static inline void dc_mst(float *p, dv v, int lo, int hi) {
#if DV == 16
    _mm512_mask_storeu_ps(p, (__mmask16)(((1u << hi) - 1) & ~((1u << lo) - 1)), (__m512)v);
#elif DV == 8
    const dc_iv l = {0, 1, 2, 3, 4, 5, 6, 7};
    const dc_iv m = (l >= lo) & (l < hi);
    _mm256_maskstore_ps(p, (__m256i)m, (__m256)v);
#else
    for (int l = lo; l < hi; l++) p[l] = v[l];
#endif
}

/* lanes [0, n) loaded from p, zeros past them (masked loads, which read and
   fault on no lane they leave) */
static inline dv dc_mld(const float *p, int n) {
#if DV == 16
    return (dv)_mm512_maskz_loadu_ps((__mmask16)((1u << n) - 1), p);
#elif DV == 8
    const dc_iv l = {0, 1, 2, 3, 4, 5, 6, 7};
    return (dv)_mm256_maskload_ps(p, (__m256i)(l < n));
#else
    dv v = (dv){0};
    for (int l = 0; l < n; l++) v[l] = p[l];
    return v;
#endif
}

/* d[0, n) = s[0, n): the rows the kernels stage are short, so an inline loop
   of vectors, not a call to memcpy */
static inline void dc_cpy(float *d, const float *s, int64_t n) {
    int64_t q = 0;
    for (; q + DV <= n; q += DV) dc_st(d + q, dc_ld(s + q));
    if (q < n) dc_mst(d + q, dc_mld(s + q, (int)(n - q)), 0, (int)(n - q));
}

/* this thread's 64-byte aligned scratch, slot 0 (whole vectors of a staged
   plane or grad_output row stay within one cache line where their start allows) */
static float *dc_alloc(int64_t n) {
    return (float *)ember_conv_scratch(0, ((size_t)n * sizeof(float) + 127) / 64 * 64, 0);
}

/* staged planes: Hp = Ho + 2 rows of Wp = Wo + 2 floats; the buffer has DC_SLACK
   floats past its last plane, read (and thrown away) by the last vectors */
#define DC_SLACK(Wp) (DC_QB * DV + 2 * (Wp) + 8)

/* stage rows [ra, rb) of image src (C planes of H x W) into xs (C planes of Hp
   x Wp), shifted by (ph, pw) with zeros around; the zeros are written on the
   first call only (*zeroed), the images after it overwrite the same interior */
static void dc_stage(const float *src, int64_t C, int64_t H, int64_t W, int64_t ph, int64_t pw,
                     int64_t Hp, int64_t Wp, float *xs, int *zeroed, int64_t ra, int64_t rb) {
    const int64_t plane = Hp * Wp;
    if (!*zeroed) memset(xs, 0, (size_t)(C * plane + DC_SLACK(Wp)) * sizeof(float));
    *zeroed = 1;
    const int64_t r0 = wi_max(wi_max(0, -ph), ra - ph), r1 = wi_min(wi_min(H, Hp - ph), rb - ph);
    const int64_t c0 = wi_max(0, -pw), c1 = wi_min(W, Wp - pw);
    if (c1 <= c0) return;
    for (int64_t c = 0; c < C; c++)
        for (int64_t r = r0; r < r1; r++)
            dc_cpy(xs + c * plane + (r + ph) * Wp + c0 + pw, src + (c * H + r) * W + c0, c1 - c0);
}

/* the planes of image n (rows [ra, rb) of them valid): x's own when it is
   unpadded (they are Hp x Wp already) and the images after it hold the
   DC_SLACK floats the last vectors read past its end (landing only in
   thrown-away positions), else its copy staged in xs */
static const float *dc_image(const ember_wino_shape *s, const float *x, int64_t n, int64_t Hp,
                             int64_t Wp, float *xs, int *zeroed, int64_t ra, int64_t rb) {
    const int64_t img = s->C * s->H * s->W;
    if (s->ph == 0 && s->pw == 0 && s->H == Hp && s->W == Wp &&
        (s->N - 1 - n) * img >= DC_SLACK(Wp))
        return x + n * img;
    dc_stage(x + n * img, s->C, s->H, s->W, s->ph, s->pw, Hp, Wp, xs, zeroed, ra, rb);
    return xs;
}

/* whether the n floats at p are all finite: exponent bits all ones marks an
   inf or NaN (integer tests, no chain of dependent additions) */
static int dc_finite(const float *p, int64_t n) {
    const dc_iv e = (dc_iv){0} + 0x7f800000;
    dc_iv bad = (dc_iv){0};
    int64_t q = 0;
    for (; q + DV <= n; q += DV) {
        dc_iv v;
        memcpy(&v, p + q, sizeof v);
        bad |= (v & e) == e;
    }
    int any = 0;
    for (int u = 0; u < DV; u++) any |= bad[u];
    for (; q < n; q++) {
        uint32_t v;
        memcpy(&v, p + q, sizeof v);
        any |= (v & 0x7f800000u) == 0x7f800000u;
    }
    return !any;
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

/* y planes yk (channel stride P, rows of Wo) at the extended positions [q0,
   q0 + DC_QB*DV) of DC_OCB output channels (the first nk of them written):
   plus bias (may be NULL), the sum over C input channels of the 9 taps.  Each
   vector of positions is stored straight from its register, masked to each
   output row it covers. */
static inline void dc_fwd_block(const float *xs, int64_t plane, int64_t Wp, int64_t C,
                                const float *wt, int64_t KP, int64_t q0, int64_t Qe, int64_t Wo,
                                const float *bias, int64_t nk, float *yk, int64_t P) {
    dv acc[DC_OCB][DC_QB];
#pragma GCC unroll 16
    for (int o = 0; o < DC_OCB; o++) {
        const float b0 = bias && o < nk ? bias[o] : 0.0f;
#pragma GCC unroll 4
        for (int b = 0; b < DC_QB; b++) acc[o][b] = (dv){0} + b0;
    }
    for (int64_t c = 0; c < C; c++) {
        const float *xc = xs + c * plane + q0;
        const float *wc = wt + c * 9 * KP;
#pragma GCC unroll 3
        for (int i = 0; i < 3; i++)
#pragma GCC unroll 3
            for (int j = 0; j < 3; j++) {
                const float *wr = wc + (i * 3 + j) * KP;
                dv xv[DC_QB];
#pragma GCC unroll 4
                for (int b = 0; b < DC_QB; b++) xv[b] = dc_ld(xc + i * Wp + j + b * DV);
#pragma GCC unroll 16
                for (int o = 0; o < DC_OCB; o++) {
                    const float wo = wr[o];
#pragma GCC unroll 4
                    for (int b = 0; b < DC_QB; b++) acc[o][b] += xv[b] * wo;
                }
            }
    }
#pragma GCC unroll 4
    for (int b = 0; b < DC_QB; b++) {
        const int64_t qv = q0 + b * DV, qe = wi_min(qv + DV, Qe);
        /* the output rows r that lanes [lo, hi) of this vector fall in */
        for (int64_t r = qv / Wp; r * Wp < qe; r++) {
            const int lo = (int)wi_max(0, r * Wp - qv);
            const int hi = (int)(wi_min(qe, r * Wp + Wo) - qv);
            if (hi <= lo) continue;
            float *p = yk + r * Wo + (qv - r * Wp);
#pragma GCC unroll 16
            for (int o = 0; o < DC_OCB; o++)
                if (o < nk) dc_mst(p + o * P, acc[o][b], lo, hi);
        }
    }
}

/* y (N, K, Ho, Wo) = the 3x3 convolution of x (N, C, H, W) padded by (ph, pw),
   plus bias (may be NULL); w as dc_pack takes it */
int WI_PUB(ember_dconv3_fwd_f32)(const ember_wino_shape *s, const float *x, const float *w,
                                 int flip, const float *bias, float *y, int nthreads) {
    const int64_t N = s->N, C = s->C, K = s->K, Ho = s->Ho, Wo = s->Wo;
    const int64_t Hp = Ho + 2, Wp = Wo + 2, plane = Hp * Wp, P = Ho * Wo;
    const int64_t KP = (K + DC_OCB - 1) / DC_OCB * DC_OCB, QBL = DC_QB * DV;
    const int64_t Qe = (Ho - 1) * Wp + Wo;
    float *wt = (float *)ember_conv_scratch(1, (size_t)(C * 9 * KP) * sizeof(float), 0);
    if (!wt) return -1;
    dc_pack(K, C, KP, w, flip, wt);
    /* threads take whole images, or with fewer images than threads, G parts
       of each (ranges of position blocks; each output is one thread's sum
       either way, so the bits do not depend on the split) */
    const int64_t nqb = (Qe + QBL - 1) / QBL, T = nthreads < 1 ? 1 : nthreads;
    const int64_t G = N >= T ? 1 : wi_min(nqb, (T + N - 1) / N);
    const int nt = (int)wi_min(T, N * G);
    int failed = 0;
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        float *xs = dc_alloc(C * plane + DC_SLACK(Wp));
        int zeroed = 0;
        if (!xs) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(static)
        for (int64_t it = 0; it < N * G; it++) {
            if (!xs) continue;
            const int64_t n = it / G, g = it % G;
            const int64_t qa = nqb * g / G * QBL, qb = wi_min(Qe, nqb * (g + 1) / G * QBL);
            /* the rows the part reads: from its first position's to 2 below
               its last vector's end */
            const float *xn = dc_image(s, x, n, Hp, Wp, xs, &zeroed, qa / Wp,
                                       (qb + QBL + 2 * Wp + 2) / Wp + 1);
            /* blocks of positions outside, of channels inside: the rows of a
               block stay in L1 while every output channel reads them */
            for (int64_t q0 = qa; q0 < qb; q0 += QBL)
                for (int64_t k0 = 0; k0 < K; k0 += DC_OCB)
                    dc_fwd_block(xn, plane, Wp, C, wt + k0, KP, q0, Qe, Wo,
                                 bias ? bias + k0 : NULL, wi_min(DC_OCB, K - k0),
                                 y + (n * K + k0) * P, P);
        }
        ember_conv_scratch_done(0, xs);
    }
    ember_conv_scratch_done(1, wt);
    return failed ? -1 : 0;
}

/* accp[i][o][j] += the products over extended positions [0, QV) of grad_output
   rows dye (DC_WOB rows, row stride QV) and the staged plane xc shifted by
   i*Wp + j: per filter row i, DC_WOB x 3 accumulators in registers */
static inline void dc_wg_block(const float *dye, int64_t QV, const float *xc, int64_t Wp,
                               float *accp) {
#if DV == 16
    /* taps j = 1, 2 shifted out of this step's and the next step's vectors (a
       load that straddles two cache lines costs more here than a shuffle) */
    const dc_iv sh1 = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    const dc_iv sh2 = {2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17};
#endif
    for (int i = 0; i < 3; i++) {
        const float *xr = xc + i * Wp;
        float *ap = accp + i * DC_WOB * 3 * DV;
        dv acc[DC_WOB][3];
#pragma GCC unroll 8
        for (int o = 0; o < DC_WOB; o++)
#pragma GCC unroll 3
            for (int j = 0; j < 3; j++) acc[o][j] = dc_ld(ap + (o * 3 + j) * DV);
#if DV == 16
        dv cur = dc_ld(xr);
#endif
        int64_t q = 0;
        do {   /* QV >= DV */
#if DV == 16
            const dv nxt = dc_ld(xr + q + DV);
            const dv xv[3] = {cur, __builtin_shuffle(cur, nxt, sh1),
                              __builtin_shuffle(cur, nxt, sh2)};
            cur = nxt;
#else
            dv xv[3];
#pragma GCC unroll 3
            for (int j = 0; j < 3; j++) xv[j] = dc_ld(xr + q + j);
#endif
#pragma GCC unroll 8
            for (int o = 0; o < DC_WOB; o++) {
                dv d = dc_ld(dye + o * QV + q);
#if DV == 16
                /* one load into a register for its three products: left to
                   itself GCC folds it into each FMA, three loads for one */
                __asm__("" : "+v"(d));
#endif
#pragma GCC unroll 3
                for (int j = 0; j < 3; j++) acc[o][j] += d * xv[j];
            }
            q += DV;
        } while (q < QV);
#pragma GCC unroll 8
        for (int o = 0; o < DC_WOB; o++)
#pragma GCC unroll 3
            for (int j = 0; j < 3; j++) dc_st(ap + (o * 3 + j) * DV, acc[o][j]);
    }
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
    float *part = (float *)ember_conv_scratch(1, (size_t)(S * per) * sizeof(float), 0);
    if (!part) return -1;
    const int nt = (int)wi_min(nthreads < 1 ? 1 : nthreads, S);
    int failed = 0, nonfinite = 0;
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        const int64_t nxs = (C * plane + DC_SLACK(Wp) + 15) / 16 * 16;
        float *xs = dc_alloc(nxs + KP * QV);
        if (!xs) {
#pragma omp atomic write
            failed = 1;
        }
        float *dye = xs ? xs + nxs : NULL;
        int zeroed = 0;
        /* grad_output rows at the extended positions: zero in the thrown-away
           columns, past the last row and for k >= K, which no image overwrites */
        if (dye) memset(dye, 0, (size_t)(KP * QV) * sizeof(float));
#pragma omp for schedule(static)
        for (int64_t sl = 0; sl < S; sl++) {
            float *acc = part + sl * per;
            memset(acc, 0, (size_t)per * sizeof(float));
            if (!xs) continue;
            for (int64_t n = N * sl / S; n < N * (sl + 1) / S; n++) {
                const float *xn = dc_image(s, x, n, Hp, Wp, xs, &zeroed, 0, Hp);
                /* (x's own planes: with the floats read past them) */
                if (!dc_finite(xn, C * plane + (xn == xs ? 0 : 2 * DV))) {
#pragma omp atomic write
                    nonfinite = 1;
                }
                for (int64_t k = 0; k < K; k++)
                    for (int64_t r = 0; r < Ho; r++)
                        dc_cpy(dye + k * QV + r * Wp, dy + (n * K + k) * P + r * Wo, Wo);
                for (int64_t k0 = 0; k0 < KP; k0 += DC_WOB)
                    for (int64_t c = 0; c < C; c++)
                        dc_wg_block(dye + k0 * QV, QV, xn + c * plane, Wp,
                                    acc + ((k0 / DC_WOB) * C + c) * 3 * DC_WOB * 3 * DV);
            }
        }
        ember_conv_scratch_done(0, xs);
    }
    /* slices, then lanes, summed in a fixed order (whole vectors first: the
       lanes of one vector are a serial chain of additions) */
    for (int64_t k = 0; k < K; k++)
        for (int64_t c = 0; c < C; c++)
            for (int t = 0; t < 9; t++) {
                const int64_t off = (((k / DC_WOB) * C + c) * 3 + t / 3) * DC_WOB * 3 * DV +
                                    ((k % DC_WOB) * 3 + t % 3) * DV;
                dv v = dc_ld(part + off);
                for (int64_t sl = 1; sl < S; sl++) v += dc_ld(part + sl * per + off);
                float tot = 0.0f;
                for (int u = 0; u < DV; u++) tot += v[u];
                dw[(k * C + c) * 9 + t] = tot;
            }
    ember_conv_scratch_done(1, part);
    return failed ? -1 : nonfinite;
}

#pragma GCC pop_options

#undef DV
#undef DC_OCB
#undef DC_WOB
#undef DC_QB
#undef DC_SLICES
#undef DC_SLACK
