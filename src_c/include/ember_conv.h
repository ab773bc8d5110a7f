/* ember's convolution and pooling C ABI (NCHW, contiguous operands).
   Kernels check nothing: the Cython layer validates shapes once.  conv1d is
   conv2d with H = 1; conv_transpose2d is conv2d's input gradient. */
#ifndef EMBER_CONV_H
#define EMBER_CONV_H
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int64_t N, C, H, W;        /* input */
    int64_t OC, kh, kw;        /* weight (OC, C/groups, kh, kw) */
    int64_t sh, sw, ph, pw, dh, dw, groups;
    int64_t Ho, Wo;            /* output (caller computes) */
} ember_conv2d_params;

/* y (N, OC, Ho, Wo) = conv(x, w) + bias (bias may be NULL).
   The three conv entry points return 0, or -1 when their workspace could not
   be allocated (the output is then unspecified). */
int ember_conv2d_fwd_f32(const ember_conv2d_params *p, const float *x, const float *w,
                          const float *bias, float *y, int nthreads);
int ember_conv2d_fwd_f64(const ember_conv2d_params *p, const double *x, const double *w,
                          const double *bias, double *y, int nthreads);
/* dx (N, C, H, W) = grad of conv wrt its input (overwritten, not accumulated). */
int ember_conv2d_bwd_input_f32(const ember_conv2d_params *p, const float *dy, const float *w,
                                float *dx, int nthreads);
int ember_conv2d_bwd_input_f64(const ember_conv2d_params *p, const double *dy, const double *w,
                                double *dx, int nthreads);
/* dw (OC, C/groups, kh, kw) overwritten; dbias (OC) too when not NULL. */
int ember_conv2d_bwd_weight_f32(const ember_conv2d_params *p, const float *x, const float *dy,
                                 float *dw, float *dbias, int nthreads);
int ember_conv2d_bwd_weight_f64(const ember_conv2d_params *p, const double *x, const double *dy,
                                 double *dw, double *dbias, int nthreads);

/* float32 3x3 stride-1 convolutions run Winograd F(4x4, 3x3) where it pays
   (see conv.c); on = 0 turns it off (tests, benchmarks), 1 on, -1 only asks.
   Returns the setting in force. */
int ember_conv_winograd(int on);
/* float32 3x3 stride-1 convolutions with few channels run a direct kernel
   where it pays (see conv.c); mode 0 turns it off, 1 picks it where it pays,
   2 wherever it fits (tests), -1 only asks.  Returns the mode in force. */
int ember_conv_direct(int mode);
/* float32 weight gradients with many channels run through channels-last copies
   of the images where it pays (see conv.c); modes as ember_conv_direct's. */
int ember_conv_wgrad_cl(int mode);

/* Channels-last float32 3x3 convolutions (x, y, dy, dx dense NHWC; w and dw
   contiguous (OC, C, 3, 3)) through Winograd on NHWC tiles.  ember_conv2d_nhwc_wino
   says whether they take this convolution: pass 0 the forward, 1 the input
   gradient, 2 the weight gradient.  The others return 0, or -1 when their
   workspace could not be allocated. */
int ember_conv2d_nhwc_wino(const ember_conv2d_params *p, int pass);
int ember_conv2d_fwd_nhwc_f32(const ember_conv2d_params *p, const float *x, const float *w,
                              const float *bias, float *y, int nthreads);
int ember_conv2d_bwd_input_nhwc_f32(const ember_conv2d_params *p, const float *dy,
                                    const float *w, float *dx, int nthreads);
int ember_conv2d_bwd_weight_nhwc_f32(const ember_conv2d_params *p, const float *x,
                                     const float *dy, float *dw, int nthreads);

/* Channels-last float32 weight gradient (x, dy dense NHWC; dw contiguous (OC, C,
   kh, kw)) through the register-tiled kernel of conv.c where it pays: returns 1
   when it does not take this convolution, else 0 or -1 (out of memory). */
int ember_conv2d_bwd_weight_cl_f32(const ember_conv2d_params *p, const float *x,
                                   const float *dy, float *dw, int nthreads);

/* im2col of one (C, H, W) image -> col (C*kh*kw, Ho*Wo); col2im adds back into x. */
void ember_im2col_f32(const ember_conv2d_params *p, int64_t C, const float *x, float *col);
void ember_im2col_f64(const ember_conv2d_params *p, int64_t C, const double *x, double *col);
void ember_col2im_f32(const ember_conv2d_params *p, int64_t C, const float *col, float *x);
void ember_col2im_f64(const ember_conv2d_params *p, int64_t C, const double *col, double *x);

/* ------------------------------------------------------------- pooling */
typedef struct {
    int64_t planes, H, W;      /* N*C planes of H x W */
    int64_t kh, kw, sh, sw, ph, pw, dh, dw;
    int64_t Ho, Wo;
    int count_include_pad;     /* avg only */
    int64_t divisor;           /* avg only: 0 = none */
} ember_pool2d_params;

/* max: idx is flat h*W+w within the plane (PyTorch's convention); NaN wins. */
void ember_max_pool2d_fwd_f32(const ember_pool2d_params *p, const float *x, float *y, int64_t *idx, int nthreads);
void ember_max_pool2d_fwd_f64(const ember_pool2d_params *p, const double *x, double *y, int64_t *idx, int nthreads);
/* dx (planes, H, W) overwritten: zero then scatter-add dy at idx.  Works for
   adaptive max pooling too (only planes/H/W/Ho/Wo are read). */
void ember_max_pool2d_bwd_f32(const ember_pool2d_params *p, const float *dy, const int64_t *idx, float *dx, int nthreads);
void ember_max_pool2d_bwd_f64(const ember_pool2d_params *p, const double *dy, const int64_t *idx, double *dx, int nthreads);
void ember_avg_pool2d_fwd_f32(const ember_pool2d_params *p, const float *x, float *y, int nthreads);
void ember_avg_pool2d_fwd_f64(const ember_pool2d_params *p, const double *x, double *y, int nthreads);
void ember_avg_pool2d_bwd_f32(const ember_pool2d_params *p, const float *dy, float *dx, int nthreads);
void ember_avg_pool2d_bwd_f64(const ember_pool2d_params *p, const double *dy, double *dx, int nthreads);
/* adaptive: window [floor(o*In/Out), ceil((o+1)*In/Out)); only planes/H/W/Ho/Wo read */
void ember_adaptive_avg_pool2d_fwd_f32(const ember_pool2d_params *p, const float *x, float *y, int nthreads);
void ember_adaptive_avg_pool2d_fwd_f64(const ember_pool2d_params *p, const double *x, double *y, int nthreads);
void ember_adaptive_avg_pool2d_bwd_f32(const ember_pool2d_params *p, const float *dy, float *dx, int nthreads);
void ember_adaptive_avg_pool2d_bwd_f64(const ember_pool2d_params *p, const double *dy, double *dx, int nthreads);
void ember_adaptive_max_pool2d_fwd_f32(const ember_pool2d_params *p, const float *x, float *y, int64_t *idx, int nthreads);
void ember_adaptive_max_pool2d_fwd_f64(const ember_pool2d_params *p, const double *x, double *y, int64_t *idx, int nthreads);
/* the same over channels-last images: x (N, H, W, C), y (N, Ho, Wo, C), N = planes / C.
   The max pooling returns 0, or 1 when it does not take the input (a plane of
   2^31 or more pixels): the caller takes another path. */
int ember_max_pool2d_nhwc_fwd_f32(const ember_pool2d_params *p, int64_t C, const float *x,
                                  float *y, int64_t *idx, int nthreads);
void ember_adaptive_avg_pool2d_nhwc_fwd_f32(const ember_pool2d_params *p, int64_t C,
                                            const float *x, float *y, int nthreads);
void ember_adaptive_avg_pool2d_nhwc_fwd_f64(const ember_pool2d_params *p, int64_t C,
                                            const double *x, double *y, int nthreads);
void ember_adaptive_avg_pool2d_nhwc_bwd_f32(const ember_pool2d_params *p, int64_t C,
                                            const float *dy, float *dx, int nthreads);
void ember_adaptive_avg_pool2d_nhwc_bwd_f64(const ember_pool2d_params *p, int64_t C,
                                            const double *dy, double *dx, int nthreads);

#ifdef __cplusplus
}
#endif
#endif
