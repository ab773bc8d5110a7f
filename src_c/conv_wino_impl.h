/* Winograd F(4x4, 3x3) float32 kernels, written once and compiled per ISA: the
   including file sets its `#pragma GCC target` and defines WI_SFX (generic /
   avx2 / avx512).  The transforms are loops over the tiles of one tile row (or
   the columns of its input strip) that the compiler vectorises; the 36
   transform-domain products are ember's GEMM.

   Matrices (Lavin & Gray): y = A^T [(G g G^T) . (B^T d B)] A for a 6x6 input
   patch d and a 3x3 filter g; the weight gradient is G^T [(A dy A^T) . (B^T d B)] G
   summed over tiles.  Work is split into fixed blocks of tile rows, so every
   result is the same whatever the thread count. */
#include <stdlib.h>
#include <string.h>
#include "conv_wino.h"
#include "ember_gemm.h"
#ifdef _OPENMP
#include <omp.h>
#endif

#define WI_CAT2(a, b) a##_##b
#define WI_CAT(a, b) WI_CAT2(a, b)
#define WI_PUB(name) WI_CAT(name, WI_SFX)

/* tiles per block of the forward: WI_FWD_TILES, or up to WI_FWD_TILES_MAX
   while the block's V and M (36 (C + K) floats a tile) take at most
   WI_FWD_BYTES.  Few channels make short GEMMs (32 -> 64 channels: 36 of 64 x
   63 x 32 a block), whose set-up and packing of the filters a wider block
   spreads over more tiles: 256 tiles instead of 64 took 0.8-0.85x the time of
   the forward at 32 -> 64 channels on 26x26 and 64 -> 64 on 56x56, and 0.9x
   at 32 -> 32 on 64x64 (1 thread, process CPU time), though V and M then
   leave L2; 128 -> 128 stays near 64 tiles, where the bound takes it. */
#ifndef WI_FWD_TILES
#define WI_FWD_TILES 64
#endif
#define WI_FWD_TILES_MAX 256
#define WI_FWD_BYTES ((int64_t)4 << 20)
#define WI_WG_TILES 128
/* the weight gradient's fixed slices of blocks, and the memory their partial
   sums may take */
#define WI_WG_SLICES 4
#define WI_WG_SLICE_BYTES (32.0 * 1024 * 1024)
/* floats between the transform planes beyond their size (see the drivers) */
#define WI_SKEW 16

static inline int64_t wi_min(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t wi_max(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t wi_cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Vectors of WI_WV tiles (or strip columns): GCC vector extensions, so the
   same code serves every ISA.  256-bit under AVX-512 too: a 32-wide image has
   8 tiles per row. */
typedef float wv __attribute__((vector_size(WI_WV * 4)));
typedef int wi_iv __attribute__((vector_size(WI_WV * 4)));
#define WV WI_WV
#if WI_WV == 8
#define WI_EVEN ((wi_iv){0, 2, 4, 6, 8, 10, 12, 14})
#define WI_ODD ((wi_iv){1, 3, 5, 7, 9, 11, 13, 15})
#define WI_ZLO ((wi_iv){0, 8, 1, 9, 2, 10, 3, 11})
#define WI_ZHI ((wi_iv){4, 12, 5, 13, 6, 14, 7, 15})
#define WI_PLO ((wi_iv){0, 1, 8, 9, 2, 3, 10, 11})
#define WI_PHI ((wi_iv){4, 5, 12, 13, 6, 7, 14, 15})
#define WI_NEXT ((wi_iv){1, 2, 3, 4, 5, 6, 7, 8})
#elif WI_WV == 4
#define WI_EVEN ((wi_iv){0, 2, 4, 6})
#define WI_ODD ((wi_iv){1, 3, 5, 7})
#define WI_ZLO ((wi_iv){0, 4, 1, 5})
#define WI_ZHI ((wi_iv){2, 6, 3, 7})
#define WI_PLO ((wi_iv){0, 1, 4, 5})
#define WI_PHI ((wi_iv){2, 3, 6, 7})
#define WI_NEXT ((wi_iv){1, 2, 3, 4})
#else
#error "WI_WV must be 4 or 8"
#endif
static inline wv wi_ld(const float *p) {
    wv v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline void wi_st(float *p, wv v) { memcpy(p, &v, sizeof v); }

/* p0..p3 = phases 0-3 of the 4*WV floats at r: p_m[l] = r[4l + m] */
static inline void wi_deal(const float *r, wv *p0, wv *p1, wv *p2, wv *p3) {
    const wv v0 = wi_ld(r), v1 = wi_ld(r + WV), v2 = wi_ld(r + 2 * WV), v3 = wi_ld(r + 3 * WV);
    const wv e01 = __builtin_shuffle(v0, v1, WI_EVEN), o01 = __builtin_shuffle(v0, v1, WI_ODD);
    const wv e23 = __builtin_shuffle(v2, v3, WI_EVEN), o23 = __builtin_shuffle(v2, v3, WI_ODD);
    *p0 = __builtin_shuffle(e01, e23, WI_EVEN);
    *p2 = __builtin_shuffle(e01, e23, WI_ODD);
    *p1 = __builtin_shuffle(o01, o23, WI_EVEN);
    *p3 = __builtin_shuffle(o01, o23, WI_ODD);
}

/* the inverse: r[4l + m] = s_m[l] */
static inline void wi_zip(float *r, wv s0, wv s1, wv s2, wv s3) {
    const wv a = __builtin_shuffle(s0, s1, WI_ZLO), b = __builtin_shuffle(s0, s1, WI_ZHI);
    const wv c = __builtin_shuffle(s2, s3, WI_ZLO), d = __builtin_shuffle(s2, s3, WI_ZHI);
    wi_st(r, __builtin_shuffle(a, c, WI_PLO));
    wi_st(r + WV, __builtin_shuffle(a, c, WI_PHI));
    wi_st(r + 2 * WV, __builtin_shuffle(b, d, WI_PLO));
    wi_st(r + 3 * WV, __builtin_shuffle(b, d, WI_PHI));
}

#if WI_WV == 8
/* r[i][j] -> r[j][i] for an 8x8 block in registers */
static inline void wi_tr8(wv r[8]) {
    const wi_iv lo = {0, 8, 1, 9, 4, 12, 5, 13}, hi = {2, 10, 3, 11, 6, 14, 7, 15};
    const wi_iv plo = {0, 1, 8, 9, 4, 5, 12, 13}, phi = {2, 3, 10, 11, 6, 7, 14, 15};
    const wi_iv qlo = {0, 1, 2, 3, 8, 9, 10, 11}, qhi = {4, 5, 6, 7, 12, 13, 14, 15};
    wv t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = __builtin_shuffle(r[i], r[i + 1], lo);
        t[i + 1] = __builtin_shuffle(r[i], r[i + 1], hi);
    }
    for (int i = 0; i < 8; i += 4) {
        u[i] = __builtin_shuffle(t[i], t[i + 2], plo);
        u[i + 1] = __builtin_shuffle(t[i], t[i + 2], phi);
        u[i + 2] = __builtin_shuffle(t[i + 1], t[i + 3], plo);
        u[i + 3] = __builtin_shuffle(t[i + 1], t[i + 3], phi);
    }
    for (int i = 0; i < 4; i++) {
        r[i] = __builtin_shuffle(u[i], u[i + 4], qlo);
        r[i + 4] = __builtin_shuffle(u[i], u[i + 4], qhi);
    }
}
#endif

/* o = B^T d (6 values; any vector type of float: the tile-row vectors here, the
   channel vectors of conv_wino_nhwc_impl.h) */
#define WI_BT(d0, d1, d2, d3, d4, d5, o0, o1, o2, o3, o4, o5) \
    do {                                                      \
        const __typeof__(d0) _a = (d4) - 4.0f * (d2);         \
        const __typeof__(d0) _b = (d3) - 4.0f * (d1);         \
        const __typeof__(d0) _c = (d4) - (d2);                \
        const __typeof__(d0) _e = 2.0f * ((d3) - (d1));       \
        o0 = 4.0f * (d0) - 5.0f * (d2) + (d4);                \
        o1 = _a + _b;                                         \
        o2 = _a - _b;                                         \
        o3 = _c + _e;                                         \
        o4 = _c - _e;                                         \
        o5 = 4.0f * (d1) - 5.0f * (d3) + (d5);                \
    } while (0)

/* o = A^T m (4 values from 6) */
#define WI_AT(m0, m1, m2, m3, m4, m5, o0, o1, o2, o3)   \
    do {                                                \
        const __typeof__(m0) _p = (m1) + (m2), _q = (m1) - (m2); \
        const __typeof__(m0) _r = (m3) + (m4), _s = (m3) - (m4); \
        o0 = (m0) + _p + _r;                            \
        o1 = _q + 2.0f * _s;                            \
        o2 = _p + 4.0f * _r;                            \
        o3 = _q + 8.0f * _s + (m5);                     \
    } while (0)

/* o = A e (6 values from 4) */
#define WI_A(e0, e1, e2, e3, o0, o1, o2, o3, o4, o5)                        \
    do {                                                                    \
        const __typeof__(e0) _p = (e0) + (e2), _q = (e1) + (e3);            \
        const __typeof__(e0) _r = (e0) + 4.0f * (e2), _s = 2.0f * (e1) + 8.0f * (e3); \
        o0 = (e0);                                                          \
        o1 = _p + _q;                                                       \
        o2 = _p - _q;                                                       \
        o3 = _r + _s;                                                       \
        o4 = _r - _s;                                                       \
        o5 = (e3);                                                          \
    } while (0)

/* strip columns for a row of TW tiles: whole vectors, one more than the
   tiles' for the neighbour phases (zeros past the computed ones) */
static inline int64_t wi_strip(int64_t TW) { return 4 * (wi_cdiv(TW, WV) + 1) * WV; }
/* scratch floats for one tile row of TW tiles (zeroed once) */
static inline int64_t wi_ws_size(int64_t TW) { return 6 * wi_strip(TW) + 8 * WV; }

/* rows [r0, r0 + nrows) of plane src (H x W) into buf (row stride ld), shifted
   right by pw columns, zero rows outside the plane.  buf's columns outside
   [pw, pw + W) are zero from its allocation and never written (W + pw <= ld).
   The transforms read whole vectors of these rows: no edge cases.  Inline
   copies: the rows are short, a libc call per row costs as much as the copy. */
static void wi_pad(const float *src, int64_t H, int64_t W, int64_t r0, int64_t nrows, int64_t pw,
                   int64_t ld, float *buf) {
    for (int64_t r = 0; r < nrows; r++) {
        float *row = buf + r * ld + pw;
        const int64_t ih = r0 + r;
        int64_t j = 0;
        if (ih < 0 || ih >= H) {
            for (; j + WV <= W; j += WV) wi_st(row + j, (wv){0});
            for (; j < W; j++) row[j] = 0.0f;
            continue;
        }
        const float *sr = src + ih * W;
        for (; j + WV <= W; j += WV) wi_st(row + j, wi_ld(sr + j));
        for (; j < W; j++) row[j] = sr[j];
    }
}

/* padded columns the input transform reads for TW tiles (the dy transform
   reads fewer) */
static inline int64_t wi_ld_cols(int64_t TW) { return wi_cdiv(4 * TW + 2, WV) * WV; }

/* lanes [0, n) of the 6 vectors v to out[j*sxi + l*st] */
static inline void wi_put6(const wv *v, int64_t n, float *out, int64_t sxi, int64_t st) {
    if (st == 1 && n == WV) {
        for (int j = 0; j < 6; j++) wi_st(out + j * sxi, v[j]);
        return;
    }
    float tmp[6][WV];
    memcpy(tmp, v, sizeof tmp);
    for (int64_t l = 0; l < n; l++) {
        float *q = out + l * st;
        for (int j = 0; j < 6; j++) q[j * sxi] = tmp[j][l];
    }
}

/* The 36 transform-domain values of a row of TW input patches: the strip's 6
   padded rows start at d (row stride ld); value xi of tile tw goes to
   out[xi*sxi + tw*st].  With over (st == 1), the last vector is stored whole,
   up to WV - 1 floats past the row's last tile: a row of 6 or 7 tiles (24-28
   wide images) then takes 6 vector stores per plane row instead of 42 scalar
   ones (the caller leaves room, or writes those floats later). */
static void wi_in_row(const float *d, int64_t ld, int64_t TW, float *ws, float *out, int64_t sxi,
                      int64_t st, int over) {
    const int64_t L = wi_strip(TW), Lc = wi_ld_cols(TW);
    float *t = ws;
    /* B^T down the columns of the strip */
    for (int64_t j = 0; j < Lc; j += WV) {
        wv o[6];
        WI_BT(wi_ld(d + j), wi_ld(d + ld + j), wi_ld(d + 2 * ld + j), wi_ld(d + 3 * ld + j),
              wi_ld(d + 4 * ld + j), wi_ld(d + 5 * ld + j), o[0], o[1], o[2], o[3], o[4], o[5]);
        for (int i = 0; i < 6; i++) wi_st(t + i * L + j, o[i]);
    }
    /* then across each row: patch columns 4tw..4tw+5 are phases 0-3 of tile tw
       and phases 0-1 of tile tw+1 (taken from the next vector in registers) */
    for (int i = 0; i < 6; i++) {
        const float *row = t + i * L;
        float *o = out + (int64_t)(6 * i) * sxi;
        wv a, b, c, e;
        wi_deal(row, &a, &b, &c, &e);
        for (int64_t k = 0; k < TW; k += WV) {
            wv a2, b2, c2, e2, v[6];
            wi_deal(row + 4 * (k + WV), &a2, &b2, &c2, &e2);
            WI_BT(a, b, c, e, __builtin_shuffle(a, a2, WI_NEXT), __builtin_shuffle(b, b2, WI_NEXT),
                  v[0], v[1], v[2], v[3], v[4], v[5]);
            wi_put6(v, over ? WV : wi_min(WV, TW - k), o + k * st, sxi, st);
            a = a2, b = b2, c = c2, e = e2;
        }
    }
}

/* The transform-domain values of a row of TW grad_output tiles: their 4 padded
   rows start at e (row stride ld); value xi of tile tw goes to out[xi*sxi + tw*st]. */
static void wi_dy_row(const float *e, int64_t ld, int64_t TW, float *ws, float *out, int64_t sxi,
                      int64_t st) {
    const int64_t L = wi_strip(TW), Lc = wi_cdiv(4 * TW, WV) * WV;
    float *t = ws;
    for (int64_t j = 0; j < Lc; j += WV) {
        wv o[6];
        WI_A(wi_ld(e + j), wi_ld(e + ld + j), wi_ld(e + 2 * ld + j), wi_ld(e + 3 * ld + j), o[0],
             o[1], o[2], o[3], o[4], o[5]);
        for (int i = 0; i < 6; i++) wi_st(t + i * L + j, o[i]);
    }
    for (int i = 0; i < 6; i++) {
        const float *row = t + i * L;
        float *o = out + (int64_t)(6 * i) * sxi;
        for (int64_t k = 0; k < TW; k += WV) {
            wv a, b, c, e, v[6];
            wi_deal(row + 4 * k, &a, &b, &c, &e);
            WI_A(a, b, c, e, v[0], v[1], v[2], v[3], v[4], v[5]);
            wi_put6(v, wi_min(WV, TW - k), o + k * st, sxi, st);
        }
    }
}

/* Output tiles of tile row th of one output plane yp (Ho x Wo) from their
   transform-domain products m[xi*sxi + tw], plus bias.  Reads up to a vector
   past the row's last tile (the caller leaves slack). */
static void wi_out_row(const float *m, int64_t sxi, int64_t TW, float bias, float *yp,
                       const ember_wino_shape *s, int64_t th, float *ws) {
    const int64_t L = wi_strip(TW);
    float *r = ws, *tail = ws + 6 * L;
    for (int i = 0; i < 6; i++) {
        const float *m0 = m + (int64_t)(6 * i) * sxi;
        for (int64_t k = 0; k < TW; k += WV) {
            wv o0, o1, o2, o3;
            WI_AT(wi_ld(m0 + k), wi_ld(m0 + sxi + k), wi_ld(m0 + 2 * sxi + k),
                  wi_ld(m0 + 3 * sxi + k), wi_ld(m0 + 4 * sxi + k), wi_ld(m0 + 5 * sxi + k), o0,
                  o1, o2, o3);
            wi_zip(r + i * L + 4 * k, o0, o1, o2, o3);
        }
    }
    const int64_t rows = wi_min(4, s->Ho - 4 * th), Wo = s->Wo;
    float *y0 = yp + 4 * th * Wo;
    const wv vb = (wv){0} + bias;
    for (int64_t j = 0; j < Wo; j += WV) {
        wv o[4];
        WI_AT(wi_ld(r + j), wi_ld(r + L + j), wi_ld(r + 2 * L + j), wi_ld(r + 3 * L + j),
              wi_ld(r + 4 * L + j), wi_ld(r + 5 * L + j), o[0], o[1], o[2], o[3]);
        if (j + WV <= Wo) {
            for (int a = 0; a < rows; a++) wi_st(y0 + a * Wo + j, o[a] + vb);
        } else {
            for (int a = 0; a < rows; a++) {
                wi_st(tail, o[a] + vb);
                memcpy(y0 + a * Wo + j, tail, (size_t)(Wo - j) * sizeof(float));
            }
        }
    }
}

static inline int wi_tid(void) {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}
static inline int wi_nth(void) {
#ifdef _OPENMP
    return omp_get_num_threads();
#else
    return 1;
#endif
}

/* channels per transposed group of the weight gradient's transforms */
#define WI_CG WI_WV

/* out[xi*sxi + t*C + c] = tmp[(c*36 + xi)*TS + t] for c < nc, t < nt: the
   transforms of nc channels, tile-major to channel-minor */
static void wi_to_cmin(const float *tmp, int64_t TS, int64_t nc, int64_t nt, float *out,
                       int64_t sxi, int64_t C) {
    for (int xi = 0; xi < 36; xi++) {
        const float *src = tmp + xi * TS;
        float *dst = out + xi * sxi;
        int64_t t = 0;
#if WI_WV == 8
        if (nc == 8)
            for (; t + 8 <= nt; t += 8) {
                wv r[8];
                for (int c = 0; c < 8; c++) r[c] = wi_ld(src + c * 36 * TS + t);
                wi_tr8(r);
                for (int l = 0; l < 8; l++) wi_st(dst + (t + l) * C, r[l]);
            }
#endif
        for (; t < nt; t++)
            for (int64_t c = 0; c < nc; c++) dst[t * C + c] = src[c * 36 * TS + t];
    }
}

/* padded rows of tile rows [th0, th1) of a plane */
static inline int64_t wi_pad_rows(int64_t th0, int64_t th1) { return 4 * (th1 - th0) + 2; }

int WI_PUB(ember_wino_fwd_f32)(const ember_wino_shape *s, const float *x, const float *U,
                               const float *bias, float *y, int nthreads) {
    const int64_t N = s->N, C = s->C, K = s->K, HW = s->H * s->W, P = s->Ho * s->Wo;
    const int64_t TH = wi_cdiv(s->Ho, 4), TW = wi_cdiv(s->Wo, 4), rows = N * TH;
    if (rows == 0 || K == 0) return 0;
    /* TB: a block's tiles and a vector of room for wi_in_row's whole-vector
       stores (each tile row's overhang lands on the next row, written after it) */
    const int64_t tiles = wi_min(WI_FWD_TILES_MAX, wi_max(WI_FWD_TILES,
                                 WI_FWD_BYTES / (36 * (C + K) * (int64_t)sizeof(float))));
    const int64_t RB = wi_max(1, tiles / TW), TB = RB * TW + WV;
    /* threads as for blocks of WI_FWD_TILES: the shares are of tile rows */
    const int64_t nblk = wi_cdiv(rows, wi_max(1, WI_FWD_TILES / TW));
    const int64_t ld = wi_ld_cols(TW), npad = wi_pad_rows(0, wi_min(RB, TH)) * ld;
    /* V (36, C, TB) and M (36, K, TB), each of the 36 planes a cache line further
       than a multiple of the block (planes 2^k bytes apart share L1 sets) */
    const int64_t sv = C * TB + WI_SKEW, sm = K * TB + WI_SKEW;
    int nt = (int)wi_min(nthreads < 1 ? 1 : nthreads, nblk);
    int failed = 0;
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        /* V (36, C, tiles), M (36, K, tiles) + a vector of slack, the padded rows, scratch */
        float *V = (float *)ember_conv_scratch(
            0, (size_t)(36 * (sv + sm) + WV + npad + wi_ws_size(TW)) * sizeof(float), 1);
        float *M = V + 36 * sv, *pad = M + 36 * sm + WV, *ws = pad + npad;
        if (!V) {
#pragma omp atomic write
            failed = 1;
        }
        /* each thread an equal share of the tile rows, in blocks of RB: a
           block's results do not depend on where it starts (every tile's
           transforms and products are its own), and equal shares balance two
           threads where whole blocks would not (39 blocks of 10 rows) */
        const int tid = wi_tid(), nth = wi_nth();
        const int64_t e0 = rows * tid / nth, e1 = rows * (tid + 1) / nth;
        for (int64_t r0 = e0; r0 < e1; r0 += RB) {
            if (!V) break;
            const int64_t nr = wi_min(RB, e1 - r0);
            /* the block's tile rows, one image at a time */
            for (int64_t q0 = 0; q0 < nr;) {
                const int64_t n = (r0 + q0) / TH, th0 = (r0 + q0) % TH;
                const int64_t th1 = wi_min(TH, th0 + nr - q0);
                for (int64_t c = 0; c < C; c++) {
                    wi_pad(x + (n * C + c) * HW, s->H, s->W, 4 * th0 - s->ph,
                           wi_pad_rows(th0, th1), s->pw, ld, pad);
                    for (int64_t th = th0; th < th1; th++)
                        wi_in_row(pad + 4 * (th - th0) * ld, ld, TW, ws,
                                  V + c * TB + (q0 + th - th0) * TW, sv, 1, 1);
                }
                q0 += th1 - th0;
            }
            ember_sgemm_batched(36, K, nr * TW, C, 1.0f, U, 1, K, V, TB, 1, 0.0f, M, TB, 1,
                                C * K, sv, sm, 1);
            for (int64_t q = 0; q < nr; q++) {
                const int64_t n = (r0 + q) / TH, th = (r0 + q) % TH;
                for (int64_t k = 0; k < K; k++)
                    wi_out_row(M + k * TB + q * TW, sm, TW, bias ? bias[k] : 0.0f,
                               y + (n * K + k) * P, s, th, ws);
            }
        }
        ember_conv_scratch_done(0, V);
    }
    return failed ? -1 : 0;
}

/* the weight gradient's fixed number of slices of nblk blocks: fewer when their
   transform-domain partial sums (UKC floats each) would take too much memory */
static int64_t wi_wg_slices(int64_t nblk, int64_t UKC) {
    int64_t S = wi_min(nblk, WI_WG_SLICES);
    while (S > 1 && (double)S * (double)UKC * sizeof(float) > WI_WG_SLICE_BYTES) S--;
    return S < 1 ? 1 : S;
}

/* dw (K, C, 3, 3) from the S slices' transform-domain sums dU (S, 36, K, C): per
   (k, c), the slices added in slice order, then dw = G^T dU G; threads over
   (k, c) (a serial pass would hold the second thread idle) */
static void wi_wgrad_finish(const float *dU, int64_t S, int64_t K, int64_t C, float *dw,
                            int nthreads) {
    const int64_t KC = K * C, UKC = 36 * KC;
    static const double G[6][3] = {{0.25, 0, 0},
                                   {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                   {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                   {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                   {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                   {0, 0, 1}};
    int nt2 = KC < 256 ? 1 : (nthreads < 1 ? 1 : nthreads);
#pragma omp parallel for num_threads(nt2) schedule(static) if (nt2 > 1)
    for (int64_t q = 0; q < KC; q++) {
        float u[36];
        for (int xi = 0; xi < 36; xi++) {
            float v = dU[xi * KC + q];
            for (int64_t sl = 1; sl < S; sl++) v += dU[sl * UKC + xi * KC + q];
            u[xi] = v;
        }
        double t[6][3];
        for (int a = 0; a < 6; a++)
            for (int j = 0; j < 3; j++) {
                double acc = 0;
                for (int b = 0; b < 6; b++) acc += (double)u[a * 6 + b] * G[b][j];
                t[a][j] = acc;
            }
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) {
                double acc = 0;
                for (int a = 0; a < 6; a++) acc += G[a][i] * t[a][j];
                dw[q * 9 + i * 3 + j] = (float)acc;
            }
    }
}

int WI_PUB(ember_wino_wgrad_f32)(const ember_wino_shape *s, const float *x, const float *dy,
                                 float *dw, int nthreads) {
    const int64_t N = s->N, C = s->C, K = s->K, HW = s->H * s->W, P = s->Ho * s->Wo;
    const int64_t TH = wi_cdiv(s->Ho, 4), TW = wi_cdiv(s->Wo, 4), rows = N * TH;
    const int64_t RB = wi_max(1, WI_WG_TILES / TW), TB = RB * TW, nblk = wi_cdiv(rows, RB);
    const int64_t ld = wi_ld_cols(TW), npad = wi_pad_rows(0, wi_min(RB, TH)) * ld;
    const int64_t TS = wi_cdiv(wi_min(RB, TH) * TW, WV) * WV + WV + WI_SKEW;   /* tmp rows */
    /* The blocks are cut into a fixed number of slices (fewer when the
       transform-domain gradient is large); each slice sums its blocks in order
       into its own dU (36, K, C), and the slices' dU are added in slice order:
       nothing depends on the thread count, and threads meet no barrier until the
       end (barriers per block cost a scheduling slice each on a busy machine). */
    const int64_t UKC = 36 * K * C, S = wi_wg_slices(nblk, UKC);
    float *dU = (float *)ember_conv_scratch(1, (size_t)(UKC * S) * sizeof(float), 1);
    if (!dU) return -1;
    /* each thread's V (36, tiles, C) and D (36, tiles, K): channel-minor, the
       layouts the GEMM packs fastest for dU += D^T V */
    const int64_t sv = TB * C + WI_SKEW, sd = TB * K + WI_SKEW;
    const int nt = (int)wi_min(nthreads < 1 ? 1 : nthreads, S);
    /* one slice: its GEMMs take the threads instead */
    const int gemm_nt = S == 1 ? (nthreads < 1 ? 1 : nthreads) : 1;
    const int64_t gx = wi_cdiv(C, WI_CG), gy = wi_cdiv(K, WI_CG);
    int failed = 0;
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        /* V, D, the padded rows of x and of dy (their zero columns differ), scratch */
        float *V = (float *)ember_conv_scratch(
            0,
            (size_t)(36 * (sv + sd) + 2 * npad + wi_ws_size(TW) + WI_CG * 36 * TS) * sizeof(float),
            1);
        float *D = V + 36 * sv, *pad = D + 36 * sd, *pady = pad + npad, *ws = pady + npad;
        float *tmp = ws + wi_ws_size(TW);
        if (!V) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(static)
        for (int64_t sl = 0; sl < S; sl++) {
            if (!V) continue;
            float *myU = dU + sl * UKC;
            for (int64_t b = nblk * sl / S; b < nblk * (sl + 1) / S; b++) {
                const int64_t r0 = b * RB, nr = wi_min(RB, rows - r0);
                /* the block's image segments, WI_CG channels of x or of dy at a time */
                for (int64_t n = r0 / TH; n <= (r0 + nr - 1) / TH; n++)
                    for (int64_t g = 0; g < gx + gy; g++) {
                        const int64_t th0 = wi_max(r0, n * TH) - n * TH;
                        const int64_t th1 = wi_min(r0 + nr, (n + 1) * TH) - n * TH;
                        const int64_t q0 = n * TH + th0 - r0;
                        const int is_x = g < gx;
                        const int64_t CH = is_x ? C : K, c0 = (is_x ? g : g - gx) * WI_CG;
                        const int64_t ncg = wi_min(WI_CG, CH - c0);
                        /* each channel's tiles to tmp (WI_CG, 36, TS), then to the
                           channel-minor layout, WI_CG channels at a time */
                        for (int64_t cl = 0; cl < ncg; cl++) {
                            if (is_x)
                                wi_pad(x + (n * C + c0 + cl) * HW, s->H, s->W, 4 * th0 - s->ph,
                                       wi_pad_rows(th0, th1), s->pw, ld, pad);
                            else
                                wi_pad(dy + (n * K + c0 + cl) * P, s->Ho, s->Wo, 4 * th0,
                                       4 * (th1 - th0), 0, ld, pady);
                            for (int64_t th = th0; th < th1; th++) {
                                float *o = tmp + cl * 36 * TS + (th - th0) * TW;
                                if (is_x)
                                    wi_in_row(pad + 4 * (th - th0) * ld, ld, TW, ws, o, TS, 1, 0);
                                else
                                    wi_dy_row(pady + 4 * (th - th0) * ld, ld, TW, ws, o, TS, 1);
                            }
                        }
                        wi_to_cmin(tmp, TS, ncg, (th1 - th0) * TW,
                                   (is_x ? V : D) + q0 * TW * CH + c0, is_x ? sv : sd, CH);
                    }
                for (int xi = 0; xi < 36; xi++)
                    ember_sgemm(K, C, nr * TW, 1.0f, D + xi * sd, 1, K, V + xi * sv, C, 1, 1.0f,
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

#include "conv_wino_nhwc_impl.h"
