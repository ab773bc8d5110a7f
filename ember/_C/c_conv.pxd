# ember_conv.h (src_c/include) declared to Cython: modules cimport it from here.
from libc.stdint cimport int64_t


cdef extern from "ember_conv.h" nogil:
    ctypedef struct ember_conv2d_params:
        int64_t N, C, H, W, OC, kh, kw, sh, sw, ph, pw, dh, dw, groups, Ho, Wo
    ctypedef struct ember_pool2d_params:
        int64_t planes, H, W, kh, kw, sh, sw, ph, pw, dh, dw, Ho, Wo
        int count_include_pad
        int64_t divisor
    int ember_conv2d_fwd_f32(const ember_conv2d_params *p, const float *x, const float *w,
                              const float *bias, float *y, int nthreads)
    int ember_conv2d_fwd_f64(const ember_conv2d_params *p, const double *x, const double *w,
                              const double *bias, double *y, int nthreads)
    int ember_conv2d_bwd_input_f32(const ember_conv2d_params *p, const float *dy,
                                    const float *w, float *dx, int nthreads)
    int ember_conv2d_bwd_input_f64(const ember_conv2d_params *p, const double *dy,
                                    const double *w, double *dx, int nthreads)
    int ember_conv2d_bwd_weight_f32(const ember_conv2d_params *p, const float *x,
                                     const float *dy, float *dw, float *dbias, int nthreads)
    int ember_conv2d_bwd_weight_f64(const ember_conv2d_params *p, const double *x,
                                     const double *dy, double *dw, double *dbias, int nthreads)
    void ember_max_pool2d_fwd_f32(const ember_pool2d_params *p, const float *x, float *y,
                                  int64_t *idx, int nthreads)
    int ember_max_pool2d_nhwc_fwd_f32(const ember_pool2d_params *p, int64_t C,
                                      const float *x, float *y, int64_t *idx, int nthreads)
    void ember_max_pool2d_fwd_f64(const ember_pool2d_params *p, const double *x, double *y,
                                  int64_t *idx, int nthreads)
    void ember_max_pool2d_bwd_f32(const ember_pool2d_params *p, const float *dy,
                                  const int64_t *idx, float *dx, int nthreads)
    void ember_max_pool2d_bwd_f64(const ember_pool2d_params *p, const double *dy,
                                  const int64_t *idx, double *dx, int nthreads)
    void ember_avg_pool2d_fwd_f32(const ember_pool2d_params *p, const float *x, float *y,
                                  int nthreads)
    void ember_avg_pool2d_fwd_f64(const ember_pool2d_params *p, const double *x, double *y,
                                  int nthreads)
    void ember_avg_pool2d_bwd_f32(const ember_pool2d_params *p, const float *dy, float *dx,
                                  int nthreads)
    void ember_avg_pool2d_bwd_f64(const ember_pool2d_params *p, const double *dy, double *dx,
                                  int nthreads)
    void ember_adaptive_avg_pool2d_fwd_f32(const ember_pool2d_params *p, const float *x,
                                           float *y, int nthreads)
    void ember_adaptive_avg_pool2d_fwd_f64(const ember_pool2d_params *p, const double *x,
                                           double *y, int nthreads)
    void ember_adaptive_avg_pool2d_bwd_f32(const ember_pool2d_params *p, const float *dy,
                                           float *dx, int nthreads)
    void ember_adaptive_avg_pool2d_bwd_f64(const ember_pool2d_params *p, const double *dy,
                                           double *dx, int nthreads)
    void ember_adaptive_max_pool2d_fwd_f32(const ember_pool2d_params *p, const float *x,
                                           float *y, int64_t *idx, int nthreads)
    void ember_adaptive_max_pool2d_fwd_f64(const ember_pool2d_params *p, const double *x,
                                           double *y, int64_t *idx, int nthreads)
    void ember_adaptive_avg_pool2d_nhwc_fwd_f32(const ember_pool2d_params *p, int64_t C,
                                                const float *x, float *y, int nthreads)
    void ember_adaptive_avg_pool2d_nhwc_fwd_f64(const ember_pool2d_params *p, int64_t C,
                                                const double *x, double *y, int nthreads)
    void ember_adaptive_avg_pool2d_nhwc_bwd_f32(const ember_pool2d_params *p, int64_t C,
                                                const float *dy, float *dx, int nthreads)
    void ember_adaptive_avg_pool2d_nhwc_bwd_f64(const ember_pool2d_params *p, int64_t C,
                                                const double *dy, double *dx, int nthreads)
    int ember_conv_winograd(int on)
    int ember_conv_direct(int mode)
    int ember_conv_wgrad_cl(int mode)
    int ember_conv2d_nhwc_wino(const ember_conv2d_params *p, int pass_)
    int ember_conv2d_fwd_nhwc_f32(const ember_conv2d_params *p, const float *x, const float *w,
                                  const float *bias, float *y, int nthreads)
    int ember_conv2d_bwd_input_nhwc_f32(const ember_conv2d_params *p, const float *dy,
                                        const float *w, float *dx, int nthreads)
    int ember_conv2d_bwd_weight_nhwc_f32(const ember_conv2d_params *p, const float *x,
                                         const float *dy, float *dw, int nthreads)
    int ember_conv2d_bwd_weight_cl_f32(const ember_conv2d_params *p, const float *x,
                                       const float *dy, float *dw, int nthreads)
    void ember_im2col_f32(const ember_conv2d_params *p, int64_t C, const float *x,
                          float *col)
    void ember_im2col_f64(const ember_conv2d_params *p, int64_t C, const double *x,
                          double *col)
    void ember_col2im_f32(const ember_conv2d_params *p, int64_t C, const float *col,
                          float *x)
    void ember_col2im_f64(const ember_conv2d_params *p, int64_t C, const double *col,
                          double *x)
