/* Channel normalisations over (N, C, *) contiguous tensors: batch_norm (statistics
   per channel over N and the spatial extent HW) and group_norm (statistics per
   sample and group of C/G channels).  ember's C ABI for ember._C.chnorm.

   Each channel (batch_norm) or (sample, group) row (group_norm) is reduced by
   one thread in a fixed order (16-lane partial sums of blocks of at most 4096
   elements, combined in double), and group_norm's weight/bias gradients are
   summed over the samples in order, so results are bit-identical whatever the
   thread count.  dtype EM_F32/EM_F64 (the statistics take the input's dtype);
   -1 for other dtypes, -2 when out of memory. */
#ifndef EMBER_CHNORM_H
#define EMBER_CHNORM_H
#include <stdint.h>

/* training: mean/var of each channel, y = (x - mean) / sqrt(var + eps) * w + b,
   save_mean/save_invstd get mean and 1/sqrt(var + eps), and running_mean/var
   (when not NULL) move toward mean and the unbiased variance by `momentum`.
   Not training: running_mean/var normalise (both required) and save_* get them
   in the same form.  w, b may be NULL. */
int em_batch_norm_fwd(int dtype, const char *x, const char *w, const char *b, int64_t N,
                      int64_t C, int64_t HW, int training, double eps, double momentum,
                      char *running_mean, char *running_var, char *y, char *save_mean,
                      char *save_invstd, int nthreads);
/* gradients of batch_norm from save_mean/save_invstd; dx, dw, db may be NULL (not
   wanted), w may be NULL (weight 1).  training: the statistics depend on x. */
int em_batch_norm_bwd(int dtype, const char *dy, const char *x, const char *save_mean,
                      const char *save_invstd, const char *w, int64_t N, int64_t C, int64_t HW,
                      int training, char *dx, char *dw, char *db, int nthreads);
/* batch_norm of a channels-last (N, C, *) tensor, seen as M = N*HW rows of C
   channels: the same results as above (statistics summed over fixed slices of rows
   in double, the slices added in order). */
int em_batch_norm_fwd_cl(int dtype, const char *x, const char *w, const char *b, int64_t M,
                         int64_t C, int training, double eps, double momentum,
                         char *running_mean, char *running_var, char *y, char *save_mean,
                         char *save_invstd, int nthreads);
int em_batch_norm_bwd_cl(int dtype, const char *dy, const char *x, const char *save_mean,
                         const char *save_invstd, const char *w, int64_t M, int64_t C,
                         int training, char *dx, char *dw, char *db, int nthreads);
/* group_norm with G groups of C/G channels: mean and rstd ([N*G]) saved. */
int em_group_norm_fwd(int dtype, const char *x, const char *w, const char *b, int64_t N,
                      int64_t C, int64_t HW, int64_t G, double eps, char *y, char *mean,
                      char *rstd, int nthreads);
int em_group_norm_bwd(int dtype, const char *dy, const char *x, const char *mean,
                      const char *rstd, const char *w, int64_t N, int64_t C, int64_t HW,
                      int64_t G, char *dx, char *dw, char *db, int nthreads);
#endif
