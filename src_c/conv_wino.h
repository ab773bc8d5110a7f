/* Winograd F(4x4, 3x3) convolution, float32 (private to conv.c and its ISA
   variants conv_wino_{generic,avx2,avx512}.c, which share conv_wino_impl.h).

   A 3x3, stride-1, undilated, ungrouped convolution of x (N, C, H, W), padded by
   ph rows / pw columns at the top / left (zeros past every edge), giving y (N, K,
   Ho, Wo): the output is cut into 4x4 tiles, each tile's 6x6 input patch and
   the 3x3 filters are taken to the 36-point transform domain, where the
   convolution is 36 independent GEMMs (K x C times C x tiles), and the products
   come back through the output transform.  4x fewer multiplications than the
   direct form; the transforms cost a little precision (see docs). */
#ifndef EMBER_CONV_WINO_H
#define EMBER_CONV_WINO_H
#include <stdint.h>
#include "ember_conv.h"

typedef struct {
    int64_t N, C, H, W;   /* input */
    int64_t K;            /* output channels */
    int64_t ph, pw;       /* zero rows / columns before the input */
    int64_t Ho, Wo;       /* output */
} ember_wino_shape;

/* U (36, C, K): the filters in the transform domain.  w is (K, C, 3, 3); with
   flip, w is (C, K, 3, 3) and filter (k, c) is w[c, k] rotated by 180 degrees
   (the input gradient of a convolution is this convolution of its grad_output). */
void ember_wino_weights_f32(int64_t K, int64_t C, const float *w, int flip, float *U,
                            int nthreads);
/* y = conv(x, U) + bias (bias may be NULL).  Returns 0, or -1 when the
   workspace could not be allocated. */
int ember_wino_fwd_f32(const ember_wino_shape *s, const float *x, const float *U,
                       const float *bias, float *y, int nthreads);
/* dw (K, C, 3, 3) = the weight gradient given x and dy (N, K, Ho, Wo). */
int ember_wino_wgrad_f32(const ember_wino_shape *s, const float *x, const float *dy,
                         float *dw, int nthreads);

/* The same on channels-last images: x (N, H, W, C), y (N, Ho, Wo, K), dy (N, Ho,
   Wo, K); U and dw as above (conv_wino_nhwc_impl.h). */
int ember_wino_fwd_nhwc_f32(const ember_wino_shape *s, const float *x, const float *U,
                            const float *bias, float *y, int nthreads);
int ember_wino_wgrad_nhwc_f32(const ember_wino_shape *s, const float *x, const float *dy,
                              float *dw, int nthreads);

/* Direct weight gradient (float32) for Cg*kh*kw <= EMBER_WGD_MAX_K taps per
   output channel at stride 1 along W (conv_wgd_impl.h); dw overwritten.
   Returns 0, or -1 when its padded copy of x could not be allocated. */
#define EMBER_WGD_MAX_K 27
int ember_conv_wgrad_direct_f32(const ember_conv2d_params *p, const float *x, const float *dy,
                                float *dw, int nthreads);

/* Direct 3x3 stride-1 convolution for few channels (conv_dir_impl.h), on the
   shape s describes (ph, pw may be up to 2; Ho = H + 2ph - 2, Wo likewise).
   fwd: y = conv(x, w) + bias, w (K, C, 3, 3), or with flip (C, K, 3, 3) taken
   as in ember_wino_weights_f32; returns 0 or -1 (out of memory).  wgrad: dw
   (K, C, 3, 3); returns 0, -1, or 1 when x holds an inf or NaN (dw then
   unspecified: the caller takes another path). */
int ember_dconv3_fwd_f32(const ember_wino_shape *s, const float *x, const float *w, int flip,
                         const float *bias, float *y, int nthreads);
int ember_dconv3_wgrad_f32(const ember_wino_shape *s, const float *x, const float *dy,
                           float *dw, int nthreads);

/* Weight gradient through channels-last copies of each image (conv_wgn_impl.h),
   ungrouped, any kernel size, stride and dilation; dw overwritten.  With nhwc,
   x and dy are channels-last already (dense NHWC).  Returns 0,
   -1 when out of memory, or 1 when it does not take the convolution (OC not a
   multiple of the vector width, or no AVX2): the caller takes another path. */
int ember_conv_wgrad_cl_f32(const ember_conv2d_params *p, const float *x, const float *dy,
                            float *dw, int nthreads, int nhwc);

/* Scratch kept by the calling thread across calls, one buffer per slot
   (EMBER_CONV_NSCRATCH): the kernels' per-thread workspaces.  A fresh
   calloc / free per call and per thread costs page faults (glibc hands large
   freed blocks back to the kernel) and a heap consolidation each time, which
   at two threads took a fifth of a small convolution's time.  Returns at least
   bytes, 64-byte aligned, zeroed when zero is set (as calloc), or NULL; blocks
   over EMBER_CONV_SCRATCH_KEEP bytes are not kept.  Pair each call with
   ember_conv_scratch_done on the same thread and slot. */
#define EMBER_CONV_NSCRATCH 4
#define EMBER_CONV_SCRATCH_KEEP ((size_t)16 << 20)
void *ember_conv_scratch(int slot, size_t bytes, int zero);
void ember_conv_scratch_done(int slot, void *p);

#define EMBER_WINO_DECL(sfx)                                                               \
    int ember_wino_fwd_f32_##sfx(const ember_wino_shape *s, const float *x, const float *U, \
                                 const float *bias, float *y, int nthreads);               \
    int ember_wino_wgrad_f32_##sfx(const ember_wino_shape *s, const float *x,              \
                                   const float *dy, float *dw, int nthreads);              \
    int ember_wino_fwd_nhwc_f32_##sfx(const ember_wino_shape *s, const float *x,           \
                                      const float *U, const float *bias, float *y,         \
                                      int nthreads);                                       \
    int ember_wino_wgrad_nhwc_f32_##sfx(const ember_wino_shape *s, const float *x,         \
                                        const float *dy, float *dw, int nthreads);         \
    int ember_conv_wgrad_direct_f32_##sfx(const ember_conv2d_params *p, const float *x,    \
                                          const float *dy, float *dw, int nthreads);       \
    int ember_dconv3_fwd_f32_##sfx(const ember_wino_shape *s, const float *x,             \
                                   const float *w, int flip, const float *bias, float *y, \
                                   int nthreads);                                         \
    int ember_dconv3_wgrad_f32_##sfx(const ember_wino_shape *s, const float *x,           \
                                     const float *dy, float *dw, int nthreads);
#define EMBER_POOL_NHWC_DECL(sfx)                                                          \
    int ember_max_pool2d_nhwc_fwd_f32_##sfx(const ember_pool2d_params *p, int64_t C,       \
                                            const float *x, float *y, int64_t *idx,       \
                                            int nthreads);
EMBER_POOL_NHWC_DECL(generic)
EMBER_POOL_NHWC_DECL(avx2)
EMBER_POOL_NHWC_DECL(avx512)
EMBER_WINO_DECL(generic)
int ember_conv_wgrad_cl_f32_avx2(const ember_conv2d_params *p, const float *x, const float *dy,
                                 float *dw, int nthreads, int nhwc);
int ember_conv_wgrad_cl_f32_avx512(const ember_conv2d_params *p, const float *x,
                                   const float *dy, float *dw, int nthreads, int nhwc);
EMBER_WINO_DECL(avx2)
EMBER_WINO_DECL(avx512)
#endif
