/* Normalisation kernels (layer_norm) over the last N elements of M contiguous
   rows: ember's C ABI for ember._C.reduce.  Each row is reduced by one thread in
   a fixed order and the weight/bias gradients are summed over fixed blocks of
   rows, so results are bit-identical whatever the thread count. */
#ifndef EMBER_NORM_H
#define EMBER_NORM_H
#include <stdint.h>

/* y = (x - mean) * rstd * w + b; w, b may be NULL; mean and rstd ([M], the
   input's dtype) get each row's statistics.  dtype EM_F32/EM_F64; -1 otherwise. */
int em_layer_norm_fwd(int dtype, const char *x, const char *w, const char *b, int64_t M,
                      int64_t N, double eps, char *y, char *mean, char *rstd, int nthreads);
/* gradients of layer_norm from the saved mean/rstd; dx, dw, db may be NULL (not
   wanted); w may be NULL (no affine weight). */
int em_layer_norm_bwd(int dtype, const char *dy, const char *x, const char *mean,
                      const char *rstd, const char *w, int64_t M, int64_t N, char *dx,
                      char *dw, char *db, int nthreads);
/* rms_norm: y = x * rstd * w with rstd = 1 / sqrt(mean(x^2) + eps) per row; w may
   be NULL; rstd [M] saved for the backward (dx, dw may be NULL). */
int em_rms_norm_fwd(int dtype, const char *x, const char *w, int64_t M, int64_t N, double eps,
                    char *y, char *rstd, int nthreads);
int em_rms_norm_bwd(int dtype, const char *dy, const char *x, const char *rstd, const char *w,
                    int64_t M, int64_t N, char *dx, char *dw, int nthreads);
#endif
