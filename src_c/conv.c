/* Convolution kernels (NCHW, contiguous): im2col/col2im + ember GEMM, and a
   direct kernel for one input channel per group with few outputs per group
   (depthwise).  This file instantiates itself for float and double. */
#ifndef EMBER_CONV_BODY
#include <stdlib.h>
#include <string.h>
#include "ember_conv.h"
#include "ember_gemm.h"
#include "conv_wino.h"
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

/* Implicit im2col.  The im2col matrix of a chunk of nb images (Kg rows
   (c, i, j) by nb*P columns (image, oh, ow)) is element ro[row] + co[col] of
   the images themselves, or of zero-padded copies when the convolution pads.
   The GEMM takes it as an operand with those offset tables and packs its
   panels straight from the images, so the matrix is never built. */
typedef struct {
    int64_t *ro, *co;   /* Kg row offsets, nb*P column offsets */
    int64_t *dco;       /* nb*P offsets of the chunk's output positions in y / dy */
    int64_t img, plane; /* element strides of one source image and channel */
    int pad;            /* 1: the source is zero-padded copies of the images */
} cv_ig;

static int cv_ig_init(const ember_conv2d_params *p, int64_t nb, cv_ig *ig) {
    const int64_t Cg = p->C / p->groups, P = p->Ho * p->Wo;
    ig->pad = p->ph > 0 || p->pw > 0;
    const int64_t Wr = p->W + 2 * p->pw;
    ig->plane = (p->H + 2 * p->ph) * Wr;
    ig->img = p->C * ig->plane;
    ig->ro = (int64_t *)malloc((size_t)(Cg * p->kh * p->kw + 2 * nb * P) * sizeof(int64_t));
    if (!ig->ro) return -1;
    ig->co = ig->ro + Cg * p->kh * p->kw;
    ig->dco = ig->co + nb * P;
    for (int64_t n = 0; n < nb; n++)
        for (int64_t q = 0; q < P; q++) ig->dco[n * P + q] = n * p->OC * P + q;
    for (int64_t c = 0; c < Cg; c++)
        for (int64_t i = 0; i < p->kh; i++)
            for (int64_t j = 0; j < p->kw; j++)
                ig->ro[(c * p->kh + i) * p->kw + j] = c * ig->plane + i * p->dh * Wr + j * p->dw;
    for (int64_t n = 0; n < nb; n++)
        for (int64_t oh = 0; oh < p->Ho; oh++)
            for (int64_t ow = 0; ow < p->Wo; ow++)
                ig->co[n * P + oh * p->Wo + ow] = n * ig->img + oh * p->sh * Wr + ow * p->sw;
    return 0;
}

static void cv_ig_free(cv_ig *ig) { free(ig->ro); }

/* this thread's equal share [lo, hi) of n images (all of them outside a team) */
static inline void cv_share(int64_t n, int64_t *lo, int64_t *hi) {
#ifdef _OPENMP
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
#else
    const int t = 0, nt = 1;
#endif
    *lo = n * t / nt;
    *hi = n * (t + 1) / nt;
}

/* the weight gradient's fixed number of image slices (see its body) */
#define CV_WG_SLICES 8

/* Winograd F(4x4, 3x3) (float32) takes 3x3, stride-1, undilated, ungrouped
   convolutions whose GEMMs outweigh its transforms: >= 16 channels on both
   sides, outputs of 12x12 or more that the 4x4 tiles cover with little waste
   (a 10x10 output pays for 12x12), and for outputs under 16 wide (tile rows of
   3 tiles fill vectors badly) 64 channels.  Measured against the im2col path
   (tools/bench_models.py resnet and a sweep of sizes). */
static int cv_wino_on = 1;
int ember_conv_winograd(int on) {
    if (on >= 0) __atomic_store_n(&cv_wino_on, on ? 1 : 0, __ATOMIC_RELAXED);
    return __atomic_load_n(&cv_wino_on, __ATOMIC_RELAXED);
}
static inline int cv_wino_fits(const ember_conv2d_params *p) {
    return __atomic_load_n(&cv_wino_on, __ATOMIC_RELAXED) && p->kh == 3 && p->kw == 3 && p->sh == 1 && p->sw == 1 && p->dh == 1 && p->dw == 1 &&
           p->groups == 1;
}
/* a convolution with C inputs, K outputs and Ho x Wo outputs through Winograd */
static inline int cv_wino_pays(int64_t C, int64_t K, int64_t Ho, int64_t Wo, int wgrad) {
    const int64_t tiles = ((Ho + 3) / 4) * ((Wo + 3) / 4) * 16;
    if (C < 16 || K < 16 || Ho < 12 || Wo < 12 || 20 * tiles > 27 * Ho * Wo) return 0;
    if (Ho < 16 || Wo < 16) return !wgrad && C >= 64 && K >= 64;
    return 1;
}

/* The direct kernel beats the GEMM and Winograd paths when both channel counts
   are small: 16 -> 16 channels (the GEMM is 16 rows by 144 deep, Winograd's
   transforms cost more than its products), and the forward and weight
   gradient of 1 or 3 input channels (a GEMM over 9 or 27 rows spends its time
   packing).  The forward and the input gradient write K = OC (C) channels in
   blocks of 8, so they need 8 or more of those, and the input gradient 8 or
   more OC to sum over; at 32 -> 32 the GEMM is faster again.  Measured on
   images of 26x26 to 64x64 (tools/bench_conv.py). */
static inline int cv_dir_pays(int64_t C, int64_t K, int64_t Ho, int64_t Wo, int pass) {
    if (Ho * Wo < 64 || C * K > 512) return 0;
    return pass == 2 || (K >= 8 && (pass == 0 || C >= 8));
}

/* The direct 3x3 kernel (conv_dir_impl.h) for few channels: 3x3, stride 1,
   undilated, ungrouped, padding <= 1 (<= 2 for the input gradient's own
   padding of 2 - p).  Mode 0 off, 1 where it pays, 2 wherever it fits (tests). */
static int cv_dir_mode = 1;
int ember_conv_direct(int mode) {
    if (mode >= 0) __atomic_store_n(&cv_dir_mode, mode > 2 ? 2 : mode, __ATOMIC_RELAXED);
    return __atomic_load_n(&cv_dir_mode, __ATOMIC_RELAXED);
}
/* pass 0 forward, 1 input gradient, 2 weight gradient */
static inline int cv_dir_use(const ember_conv2d_params *p, int pass) {
    const int mode = __atomic_load_n(&cv_dir_mode, __ATOMIC_RELAXED);
    if (!mode || p->kh != 3 || p->kw != 3 || p->sh != 1 || p->sw != 1 || p->dh != 1 ||
        p->dw != 1 || p->groups != 1 || p->ph > 1 || p->pw > 1 || p->Ho < 1 || p->Wo < 1)
        return 0;
    if (mode == 2) return 1;
    return cv_dir_pays(p->C, p->OC, p->Ho, p->Wo, pass);
}

/* The weight gradient through channels-last copies (conv_wgn_impl.h) runs the
   FMA units at about 75% of their peak (float32, AVX-512).  Winograd does 4x
   fewer products but pays for its transforms per channel: it stays ahead with
   64+ channels on both sides (64 -> 64 at 32x32: 0.85x this kernel's time) or
   on large images (32 -> 32 at 64x64: 0.93x).  Below 64 channels on one side
   and up to 48x48 outputs this kernel takes 0.55-0.75x Winograd's time (32 ->
   32 at 28x28 and 40x40, 32 -> 64 at 26x26), and 0.85x the GEMM's where
   Winograd does not pay (10x10 outputs).  Measured at 1 thread, process CPU
   time, for 3x3 filters and 32+ channels.
   Mode 0 off, 1 where it pays, 2 wherever it fits (tests). */
static int cv_wgn_mode = 1;
int ember_conv_wgrad_cl(int mode) {
    if (mode >= 0) __atomic_store_n(&cv_wgn_mode, mode > 2 ? 2 : mode, __ATOMIC_RELAXED);
    return __atomic_load_n(&cv_wgn_mode, __ATOMIC_RELAXED);
}
/* channels-last operands (nhwc) need no copies but the padding: there the
   kernel also beats the GEMM over im2col tables from one input channel up (the
   digits CNN's 1 -> 32 channels: 0.64 -> 0.2 ms) */
static inline int cv_wgn_use(const ember_conv2d_params *p, int nhwc) {
    const int mode = __atomic_load_n(&cv_wgn_mode, __ATOMIC_RELAXED);
    if (!mode || p->groups != 1) return 0;
    if (mode == 2) return 1;
    if (p->kh != 3 || p->kw != 3 || p->sh != 1 || p->sw != 1 || p->dh != 1 || p->dw != 1 ||
        p->C < (nhwc ? 1 : 32) || p->OC < 32)
        return 0;
    return !(cv_wino_fits(p) && cv_wino_pays(p->C, p->OC, p->Ho, p->Wo, 1)) ||
           (p->Ho * p->Wo <= 2304 && (p->C < 64 || p->OC < 64));
}

/* forward (dir 0) or input gradient (dir 1, the convolution of dy with the
   flipped, transposed filters, padded by 2 - p) through Winograd, on NCHW or
   (nhwc) channels-last images */
static int cv_wino_conv(const ember_conv2d_params *p, int dir, int nhwc, const float *src,
                        const float *w, const float *bias, float *dst, int nthreads) {
    ember_wino_shape s;
    if (dir == 0) {
        const ember_wino_shape f = {p->N, p->C, p->H, p->W, p->OC, p->ph, p->pw, p->Ho, p->Wo};
        s = f;
    } else {
        const ember_wino_shape b = {p->N, p->OC, p->Ho, p->Wo, p->C, 2 - p->ph, 2 - p->pw,
                                    p->H, p->W};
        s = b;
    }
    float *U = (float *)ember_conv_scratch(1, (size_t)(36 * s.C * s.K) * sizeof(float), 0);
    if (!U) return -1;
    ember_wino_weights_f32(s.K, s.C, w, dir, U, nthreads);
    const int rc = nhwc ? ember_wino_fwd_nhwc_f32(&s, src, U, bias, dst, nthreads)
                        : ember_wino_fwd_f32(&s, src, U, bias, dst, nthreads);
    ember_conv_scratch_done(1, U);
    return rc;
}

static int cv_dir_conv(const ember_conv2d_params *p, int dir, const float *src, const float *w,
                       const float *bias, float *dst, int nthreads) {
    if (dir == 0) {
        const ember_wino_shape f = {p->N, p->C, p->H, p->W, p->OC, p->ph, p->pw, p->Ho, p->Wo};
        return ember_dconv3_fwd_f32(&f, src, w, 0, bias, dst, nthreads);
    }
    const ember_wino_shape b = {p->N, p->OC, p->Ho, p->Wo, p->C, 2 - p->ph, 2 - p->pw,
                                p->H, p->W};
    return ember_dconv3_fwd_f32(&b, src, w, 1, NULL, dst, nthreads);
}

int ember_conv2d_nhwc_wino(const ember_conv2d_params *p, int pass) {
    if (!cv_wino_fits(p)) return 0;
    if (pass == 0) return cv_wino_pays(p->C, p->OC, p->Ho, p->Wo, 0);
    if (pass == 1) return p->ph <= 2 && p->pw <= 2 && cv_wino_pays(p->OC, p->C, p->H, p->W, 0);
    return cv_wino_pays(p->C, p->OC, p->Ho, p->Wo, 1) && !cv_wgn_use(p, 1);
}

int ember_conv2d_bwd_weight_cl_f32(const ember_conv2d_params *p, const float *x,
                                   const float *dy, float *dw, int nthreads) {
    if (!cv_wgn_use(p, 1)) return 1;
    return ember_conv_wgrad_cl_f32(p, x, dy, dw, nthreads < 1 ? 1 : nthreads, 1);
}

int ember_conv2d_fwd_nhwc_f32(const ember_conv2d_params *p, const float *x, const float *w,
                              const float *bias, float *y, int nthreads) {
    return cv_wino_conv(p, 0, 1, x, w, bias, y, nthreads < 1 ? 1 : nthreads);
}

int ember_conv2d_bwd_input_nhwc_f32(const ember_conv2d_params *p, const float *dy,
                                    const float *w, float *dx, int nthreads) {
    return cv_wino_conv(p, 1, 1, dy, w, NULL, dx, nthreads < 1 ? 1 : nthreads);
}

int ember_conv2d_bwd_weight_nhwc_f32(const ember_conv2d_params *p, const float *x,
                                     const float *dy, float *dw, int nthreads) {
    const ember_wino_shape s = {p->N, p->C, p->H, p->W, p->OC, p->ph, p->pw, p->Ho, p->Wo};
    return ember_wino_wgrad_nhwc_f32(&s, x, dy, dw, nthreads < 1 ? 1 : nthreads);
}

#define EMBER_CONV_BODY 1
#define CV_F32 1
#define T float
#define SFX f32
#define GEMM ember_sgemm
#define GEMMX ember_sgemm_ex
#define MAT ember_smat
#include "conv.c"
#undef T
#undef SFX
#undef GEMM
#undef GEMMX
#undef MAT
#undef CV_F32
#define CV_F32 0
#define T double
#define SFX f64
#define GEMM ember_dgemm
#define GEMMX ember_dgemm_ex
#define MAT ember_dmat
#include "conv.c"
#undef T
#undef SFX
#undef GEMM
#undef GEMMX
#undef MAT

#else /* ------------------------------------------------------------ body */
#define CV_CAT2(a, b) a##_##b
#define CV_CAT(a, b) CV_CAT2(a, b)
#define F(name) CV_CAT(name, SFX)

/* im2col of one (C, H, W) image into col (C*kh*kw rows, row stride ld >= Ho*Wo) */
static void F(cv_im2col_ld)(const ember_conv2d_params *p, int64_t C, const T *x, T *col,
                            int64_t ld) {
    const int64_t H = p->H, W = p->W, Ho = p->Ho, Wo = p->Wo;
    for (int64_t c = 0; c < C; c++)
        for (int64_t i = 0; i < p->kh; i++)
            for (int64_t j = 0; j < p->kw; j++) {
                T *row = col + ((c * p->kh + i) * p->kw + j) * ld;
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

/* col2im for 3-wide kernels at stride 1 along W: each x row takes its three
   shifted contributions in one pass (a third of the read-modify-writes of x,
   and one long loop instead of three short ones) */
static void F(cv_col2im_k3)(const ember_conv2d_params *p, int64_t C, const T *col, T *x,
                            int64_t ld) {
    const int64_t H = p->H, W = p->W, Ho = p->Ho, Wo = p->Wo;
    /* x column t takes r_j[t - o_j], o_j = j*dw - pw, where 0 <= t - o_j < Wo */
    const int64_t o0 = -p->pw, o1 = p->dw - p->pw, o2 = 2 * p->dw - p->pw;
    const int64_t t0 = cv_max(0, o2), t1 = cv_min(W, Wo + o0);   /* all three valid */
    for (int64_t c = 0; c < C; c++)
        for (int64_t i = 0; i < p->kh; i++) {
            const T *rows = col + (c * p->kh + i) * 3 * ld;
            for (int64_t oh = 0; oh < Ho; oh++) {
                const int64_t ih = oh * p->sh - p->ph + i * p->dh;
                if (ih < 0 || ih >= H) continue;
                const T *restrict r0 = rows + oh * Wo - o0;
                const T *restrict r1 = rows + ld + oh * Wo - o1;
                const T *restrict r2 = rows + 2 * ld + oh * Wo - o2;
                T *restrict xr = x + (c * H + ih) * W;
                for (int64_t t = t0; t < t1; t++) xr[t] += r0[t] + r1[t] + r2[t];
                /* the edges [0, e0) and [e1, W), where some of the three fall outside */
                const int64_t e0 = t0 < t1 ? t0 : W, e1 = t0 < t1 ? t1 : W;
                for (int64_t t = 0; t < W; t = t + 1 == e0 ? e1 : t + 1) {
                    if (t >= e0 && t < e1) continue;   /* only when e0 == 0 */
                    T s = 0;
                    if (t - o0 >= 0 && t - o0 < Wo) s += r0[t];
                    if (t - o1 >= 0 && t - o1 < Wo) s += r1[t];
                    if (t - o2 >= 0 && t - o2 < Wo) s += r2[t];
                    xr[t] += s;
                }
            }
        }
}

/* col2im: x (C, H, W) += col (C*kh*kw rows, row stride ld) */
static void F(cv_col2im_ld)(const ember_conv2d_params *p, int64_t C, const T *col, T *x,
                            int64_t ld) {
    const int64_t H = p->H, W = p->W, Ho = p->Ho, Wo = p->Wo;
    if (p->kw == 3 && p->sw == 1) {
        F(cv_col2im_k3)(p, C, col, x, ld);
        return;
    }
    for (int64_t c = 0; c < C; c++)
        for (int64_t i = 0; i < p->kh; i++)
            for (int64_t j = 0; j < p->kw; j++) {
                const T *row = col + ((c * p->kh + i) * p->kw + j) * ld;
                const int64_t off = j * p->dw - p->pw;
                int64_t lo, hi;
                cv_range(off, p->sw, W, Wo, &lo, &hi);
                for (int64_t oh = 0; oh < Ho; oh++) {
                    const int64_t ih = oh * p->sh - p->ph + i * p->dh;
                    if (ih < 0 || ih >= H) continue;
                    const T *restrict r = row + oh * Wo;
                    T *restrict xr = x + (c * H + ih) * W + off;
                    if (p->sw == 1)
                        for (int64_t ow = lo; ow < hi; ow++) xr[ow] += r[ow];
                    else
                        for (int64_t ow = lo; ow < hi; ow++) xr[ow * p->sw] += r[ow];
                }
            }
}

void F(ember_im2col)(const ember_conv2d_params *p, int64_t C, const T *x, T *col) {
    F(cv_im2col_ld)(p, C, x, col, p->Ho * p->Wo);
}

void F(ember_col2im)(const ember_conv2d_params *p, int64_t C, const T *col, T *x) {
    F(cv_col2im_ld)(p, C, col, x, p->Ho * p->Wo);
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

/* The GEMM paths work on chunks of nb images side by side: im2col writes image
   i of the chunk at columns [i*P, (i+1)*P) of one (Kg x nb*P) matrix, so one
   wide GEMM per chunk and group replaces nb narrow ones (the weights are
   packed once per chunk, edge tiles appear once per chunk, not per image),
   and the weight gradient accumulates over the whole chunk inside the GEMM
   (K = nb*P).  When there are enough images, each thread takes an equal
   contiguous share of them (chunked, with its own workspace), else the GEMM
   itself is threaded. */
typedef struct {
    int64_t nb;
    int outer, inner;
} F(cv_plan);

static F(cv_plan) F(cv_make_plan)(const ember_conv2d_params *p, int64_t rows, int nthreads) {
    F(cv_plan) pl;
    const int64_t N = p->N, P = p->Ho * p->Wo;
    const double flops = 2.0 * (double)N * p->OC * P * (rows > 0 ? rows : 1);
    int nt = nthreads < 1 ? 1 : nthreads;
    /* about 256K elements of im2col per chunk (fits L2 with the packed panels) */
    int64_t nb = (int64_t)(262144 / ((rows > 0 ? rows : 1) * (P > 0 ? P : 1)));
    /* and at most ~16K columns, so the GEMM output of a chunk stays in cache */
    if (nb > 16384 / (P > 0 ? P : 1)) nb = 16384 / (P > 0 ? P : 1);
    /* wide chunks pay off for narrow per-image GEMMs with a deep K; for small K
       (few input channels) the extra pass over the output costs more */
    if (rows < 64 || P >= 1024) nb = 1;
    if (nb < 1) nb = 1;
    int outer = (nt > 1 && flops > 1e6 && N >= nt) ? nt : 1;
    const int64_t per = (N + outer - 1) / outer;   /* images per thread */
    if (nb > per) nb = per;
    if (outer > 1) {
        /* equal chunk counts per thread */
        int64_t per_t = (per + nb - 1) / nb;
        nb = (per + per_t - 1) / per_t;
    }
    pl.nb = nb < 1 ? 1 : nb;
    const int64_t nchunks = (N + pl.nb - 1) / pl.nb;
    if (outer > nchunks) outer = (int)nchunks;
    pl.outer = outer < 1 ? 1 : outer;
    pl.inner = pl.outer > 1 ? 1 : nt;
    return pl;
}

/* copy image (C, H, W) into the zero-bordered (C, H+2ph, W+2pw) buffer xp */
static void F(cv_pad_image)(const ember_conv2d_params *p, int64_t C, const T *x, T *xp) {
    const int64_t H = p->H, W = p->W, Hp = H + 2 * p->ph, Wp = W + 2 * p->pw;
    for (int64_t c = 0; c < C; c++) {
        T *dst = xp + c * Hp * Wp;
        memset(dst, 0, (size_t)(p->ph * Wp) * sizeof(T));
        for (int64_t h = 0; h < H; h++) {
            T *r = dst + (p->ph + h) * Wp;
            for (int64_t q = 0; q < p->pw; q++) r[q] = 0;
            memcpy(r + p->pw, x + (c * H + h) * W, (size_t)W * sizeof(T));
            for (int64_t q = p->pw + W; q < Wp; q++) r[q] = 0;
        }
        memset(dst + (p->ph + H) * Wp, 0, (size_t)(p->ph * Wp) * sizeof(T));
    }
}

/* the images of chunk [n0, n0+nb) as the implicit im2col source */
static const T *F(cv_ig_src)(const ember_conv2d_params *p, const cv_ig *ig, const T *x,
                             int64_t n0, int64_t nb, T *xp) {
    if (!ig->pad) return x + n0 * p->C * p->H * p->W;
    for (int64_t i = 0; i < nb; i++)
        F(cv_pad_image)(p, p->C, x + (n0 + i) * p->C * p->H * p->W, xp + i * ig->img);
    return xp;
}

int F(ember_conv2d_fwd)(const ember_conv2d_params *p, const T *x, const T *w, const T *bias,
                        T *y, int nthreads) {
    const int64_t N = p->N, C = p->C, OC = p->OC, G = p->groups;
    const int64_t Cg = C / G, OCg = OC / G, Kg = Cg * p->kh * p->kw, P = p->Ho * p->Wo;
    const int64_t HW = p->H * p->W;
    if (N == 0 || OC == 0 || P == 0) return 0;
    if (nthreads < 1) nthreads = 1;
#if CV_F32
    if (cv_dir_use(p, 0)) return cv_dir_conv(p, 0, x, w, bias, y, nthreads);
    if (cv_wino_fits(p) && cv_wino_pays(C, OC, p->Ho, p->Wo, 0))
        return cv_wino_conv(p, 0, 0, x, w, bias, y, nthreads);
#endif
    if (cv_direct(p)) {
        const int64_t planes = N * OC;
        int nt = planes * P * p->kh * p->kw < 32768 ? 1 : nthreads;
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
        for (int64_t q = 0; q < planes; q++) {
            const int64_t n = q / OC, oc = q % OC, g = oc / OCg;
            F(cv_direct_fwd_plane)(p, x + (n * C + g) * HW, w + oc * p->kh * p->kw,
                                   bias ? bias[oc] : (T)0, y + q * P);
        }
        return 0;
    }
    const int one = cv_is1x1(p);
    const F(cv_plan) pl = F(cv_make_plan)(p, one ? 0 : Kg, nthreads);
    cv_ig ig = {0};
    if (!one && cv_ig_init(p, pl.nb, &ig)) return -1;
    /* a shallow im2col (one input channel per group, Kg <= 16) is cheaper built
       than read implicitly: the packing set-up per panel would outweigh its
       few rows (64 x 1->32 channels on 28x28: 24 -> 14 us per image) */
    const int shallow = !one && pl.nb == 1 && Kg <= 16;
    int failed = 0;
#pragma omp parallel num_threads(pl.outer) if (pl.outer > 1)
    {
        const int64_t ld = pl.nb * P;
        /* GEMM output of a multi-image chunk, then the zero-padded images */
        const int64_t ntmp = pl.nb > 1 ? OCg * ld : shallow ? Kg * P : 0;
        T *tmp = (T *)ember_conv_scratch(
            0, (size_t)(ntmp + (ig.pad ? pl.nb * ig.img : 0) + 1) * sizeof(T), 0);
        T *xp = tmp ? tmp + ntmp : NULL;
        if (!tmp) {
#pragma omp atomic write
            failed = 1;
        }
        int64_t e0, e1;
        cv_share(N, &e0, &e1);
        for (int64_t n0 = e0; n0 < e1; n0 += pl.nb) {
            if (!tmp) break;
            const int64_t nb = cv_min(pl.nb, e1 - n0), ldc = nb * P;
            const T *src = one ? NULL : F(cv_ig_src)(p, &ig, x, n0, nb, xp);
            for (int64_t g = 0; g < G; g++) {
                const MAT a = {w + g * OCg * Kg, Kg, 1, NULL, NULL};
                if (one) {
                    /* 1x1: x itself is the im2col matrix of each image */
                    for (int64_t n = n0; n < n0 + nb; n++) {
                        T *yg = y + (n * OC + g * OCg) * P;
                        const MAT b = {x + (n * C + g * Cg) * HW, P, 1, NULL, NULL};
                        GEMMX(OCg, P, Kg, (T)1, &a, &b, (T)0, yg, P, 1,
                              bias ? bias + g * OCg : NULL, NULL, pl.inner);
                    }
                    continue;
                }
                MAT b = {src + g * Cg * ig.plane, 0, 0, ig.ro, ig.co};
                if (nb == 1) {
                    /* one image: the GEMM writes y directly, bias fused */
                    T *yg = y + (n0 * OC + g * OCg) * P;
                    if (shallow) {
                        F(cv_im2col_ld)(p, Cg, x + (n0 * C + g * Cg) * HW, tmp, P);
                        const MAT bc = {tmp, P, 1, NULL, NULL};
                        b = bc;
                    }
                    GEMMX(OCg, P, Kg, (T)1, &a, &b, (T)0, yg, P, 1,
                          bias ? bias + g * OCg : NULL, NULL, pl.inner);
                    continue;
                }
                /* the bias fused as in the one-image GEMM: the same bits whichever
                   chunking the thread count gives */
                GEMMX(OCg, ldc, Kg, (T)1, &a, &b, (T)0, tmp, ldc, 1,
                      bias ? bias + g * OCg : NULL, NULL, pl.inner);
                for (int64_t i = 0; i < nb; i++)
                    for (int64_t o = 0; o < OCg; o++)
                        memcpy(y + ((n0 + i) * OC + g * OCg + o) * P, tmp + o * ldc + i * P,
                               (size_t)P * sizeof(T));
            }
        }
        ember_conv_scratch_done(0, tmp);
    }
    cv_ig_free(&ig);
    return failed ? -1 : 0;
}

int F(ember_conv2d_bwd_input)(const ember_conv2d_params *p, const T *dy, const T *w, T *dx,
                              int nthreads) {
    const int64_t N = p->N, C = p->C, OC = p->OC, G = p->groups;
    const int64_t Cg = C / G, OCg = OC / G, Kg = Cg * p->kh * p->kw, P = p->Ho * p->Wo;
    const int64_t HW = p->H * p->W;
    if (N == 0 || C == 0 || HW == 0) return 0;
    if (nthreads < 1) nthreads = 1;
#if CV_F32
    if (cv_dir_use(p, 1)) return cv_dir_conv(p, 1, dy, w, NULL, dx, nthreads);
    /* Winograd also where the 4x4 tiles overhang the image (26 -> 28): with
       whole-vector stores in its input transform it beats the GEMM and col2im
       there (64 -> 32 channels at 26x26: 7.6 -> 7.0 ms; 32 -> 32 at 30x30: 3.7
       -> 2.4 ms, 1 thread) */
    if (cv_wino_fits(p) && p->ph <= 2 && p->pw <= 2 && cv_wino_pays(OC, C, p->H, p->W, 0))
        return cv_wino_conv(p, 1, 0, dy, w, NULL, dx, nthreads);
#endif
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
        return 0;
    }
    const int one = cv_is1x1(p);
    F(cv_plan) pl = F(cv_make_plan)(p, one ? 0 : Kg, nthreads);
    /* one image per GEMM: its dcol (Kg x P) then stays in L2 for the col2im */
    pl.nb = 1;
    cv_ig ig = {0};
    if (!one && cv_ig_init(p, pl.nb, &ig)) return -1;
    int failed = 0;
#pragma omp parallel num_threads(pl.outer) if (pl.outer > 1)
    {
        const int64_t ld = pl.nb * P;
        T *col = one ? NULL : (T *)ember_conv_scratch(0, (size_t)(Kg * ld) * sizeof(T), 0);
        if (!one && !col) {
#pragma omp atomic write
            failed = 1;
        }
        int64_t e0, e1;
        cv_share(N, &e0, &e1);
        for (int64_t n0 = e0; n0 < e1; n0 += pl.nb) {
            if (!one && !col) break;
            const int64_t nb = cv_min(pl.nb, e1 - n0), ldc = nb * P;
            for (int64_t g = 0; g < G; g++) {
                /* w_g^T (Kg x OCg) */
                const MAT a = {w + g * OCg * Kg, 1, Kg, NULL, NULL};
                if (one) {
                    for (int64_t n = n0; n < n0 + nb; n++) {
                        const MAT b = {dy + (n * OC + g * OCg) * P, P, 1, NULL, NULL};
                        GEMMX(Cg, P, OCg, (T)1, &a, &b, (T)0, dx + (n * C + g * Cg) * HW, P, 1,
                              NULL, NULL, pl.inner);
                    }
                    continue;
                }
                /* dcol (Kg x nb*P) = w_g^T @ dy of the chunk's images side by side */
                const MAT b = {dy + (n0 * OC + g * OCg) * P, P, 1, NULL, nb > 1 ? ig.dco : NULL};
                GEMMX(Kg, ldc, OCg, (T)1, &a, &b, (T)0, col, ldc, 1, NULL, NULL, pl.inner);
                for (int64_t i = 0; i < nb; i++) {
                    T *dxg = dx + ((n0 + i) * C + g * Cg) * HW;
                    memset(dxg, 0, (size_t)(Cg * HW) * sizeof(T));
                    F(cv_col2im_ld)(p, Cg, col + i * P, dxg, ldc);
                }
            }
        }
        ember_conv_scratch_done(0, col);
    }
    cv_ig_free(&ig);
    return failed ? -1 : 0;
}

int F(ember_conv2d_bwd_weight)(const ember_conv2d_params *p, const T *x, const T *dy, T *dw,
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
    if (N == 0 || P == 0 || WN == 0) {
        memset(dw, 0, (size_t)WN * sizeof(T));
        return 0;
    }
#if CV_F32
    if (cv_dir_use(p, 2)) {
        const ember_wino_shape s = {N, C, p->H, p->W, OC, p->ph, p->pw, p->Ho, p->Wo};
        const int rc = ember_dconv3_wgrad_f32(&s, x, dy, dw, nthreads);
        if (rc <= 0) return rc;   /* else an inf or NaN in x: the paths below */
    }
    if (cv_wgn_use(p, 0)) {
        const int rc = ember_conv_wgrad_cl_f32(p, x, dy, dw, nthreads, 0);
        if (rc <= 0) return rc;   /* else it does not take this shape or ISA */
    }
    if (cv_wino_fits(p) && cv_wino_pays(C, OC, p->Ho, p->Wo, 1)) {
        const ember_wino_shape s = {N, C, p->H, p->W, OC, p->ph, p->pw, p->Ho, p->Wo};
        return ember_wino_wgrad_f32(&s, x, dy, dw, nthreads);
    }
#endif
#if CV_F32
    if (p->sw == 1 && !cv_is1x1(p) && Kg <= EMBER_WGD_MAX_K && p->Wo >= 8)
        return ember_conv_wgrad_direct_f32(p, x, dy, dw, nthreads);
#endif
    /* The images are cut into a fixed number of slices, each accumulated in
       order into its own buffer (dw itself for slice 0) and the buffers added in
       slice order: the sums and their order do not depend on the thread count,
       nor does the chunking (a one-thread plan), so dw is bit-identical on any
       number of threads.  Threads take whole slices, or the GEMM has them all. */
    const int one = cv_is1x1(p);
    const int64_t S = cv_min(N, CV_WG_SLICES);
    F(cv_plan) pl = F(cv_make_plan)(p, Kg, 1);
    const int64_t per = (N + S - 1) / S;
    if (pl.nb > per) pl.nb = per;
    const double flops = 2.0 * (double)N * OC * P * Kg;
    const int outer = nthreads > 1 && flops > 1e6 ? (int)cv_min(nthreads, S) : 1;
    const int inner = outer > 1 ? 1 : nthreads;
    T *acc = S > 1 ? (T *)ember_conv_scratch(1, (size_t)(WN * (S - 1)) * sizeof(T), 0) : NULL;
    if (S > 1 && !acc) return -1;
    cv_ig ig = {0};
    if (cv_ig_init(p, pl.nb, &ig)) {
        ember_conv_scratch_done(1, acc);
        return -1;
    }
    int failed = 0;
#pragma omp parallel num_threads(outer) if (outer > 1)
    {
        /* zero-padded copies of the chunk's images, when the convolution pads */
        T *xp = ig.pad && !one ? (T *)ember_conv_scratch(0, (size_t)(pl.nb * ig.img) * sizeof(T), 0)
                               : NULL;
        if (ig.pad && !one && !xp) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(static)
        for (int64_t sl = 0; sl < S; sl++) {
            T *mydw = sl == 0 ? dw : acc + (sl - 1) * WN;
            memset(mydw, 0, (size_t)WN * sizeof(T));
            if (ig.pad && !one && !xp) continue;
            const int64_t e0 = N * sl / S, e1 = N * (sl + 1) / S;
            for (int64_t n0 = e0; n0 < e1; n0 += pl.nb) {
                const int64_t nb = cv_min(pl.nb, e1 - n0), ldc = nb * P;
                const T *src = one ? NULL : F(cv_ig_src)(p, &ig, x, n0, nb, xp);
                for (int64_t g = 0; g < G; g++) {
                    /* dy of the chunk's images side by side (OCg x nb*P) */
                    const MAT a = {dy + (n0 * OC + g * OCg) * P, P, 1, NULL,
                                   nb > 1 ? ig.dco : NULL};
                    T *dwg = mydw + g * OCg * Kg;
                    if (one) {
                        /* no im2col: the images are the columns, one GEMM per image */
                        for (int64_t i = 0; i < nb; i++) {
                            const MAT ai = {dy + ((n0 + i) * OC + g * OCg) * P, P, 1, NULL, NULL};
                            const MAT b = {x + ((n0 + i) * C + g * Cg) * HW, 1, P, NULL, NULL};
                            GEMMX(OCg, Kg, P, (T)1, &ai, &b, (T)1, dwg, Kg, 1, NULL, NULL, inner);
                        }
                        continue;
                    }
                    /* dw_g (OCg x Kg) += dy @ col^T, col^T read through the implicit im2col */
                    const MAT b = {src + g * Cg * ig.plane, 0, 0, ig.co, ig.ro};
                    GEMMX(OCg, Kg, ldc, (T)1, &a, &b, (T)1, dwg, Kg, 1, NULL, NULL, inner);
                }
            }
        }
        ember_conv_scratch_done(0, xp);
    }
    cv_ig_free(&ig);
    for (int64_t sl = 1; sl < S; sl++) {
        const T *a = acc + (sl - 1) * WN;
        for (int64_t q = 0; q < WN; q++) dw[q] += a[q];
    }
    ember_conv_scratch_done(1, acc);
    return failed ? -1 : 0;
}

#undef F
#undef CV_CAT
#undef CV_CAT2
#endif
