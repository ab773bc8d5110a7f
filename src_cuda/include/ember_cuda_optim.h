/* Multi-tensor optimizer steps and gradient clipping on CUDA (optim.cu): the
   device twins of src_c/include/ember_foreach.h, with its argument structs.

   The pointer arrays are host arrays of device pointers; every tensor is
   contiguous and of one dtype (EM_F32 or EM_F64).  One launch per call covers
   every tensor (the host copies one table of pointers, sizes and per-tensor
   scalars to the device).  The arithmetic is the CPU's, op for op and without
   FMA contraction, so results are bit-identical to em_sgd_multi / em_adam_multi. */
#ifndef EMBER_CUDA_OPTIM_H
#define EMBER_CUDA_OPTIM_H
#include "ember_cuda.h"
#include "ember_foreach.h"

/* SGD: bufs may be NULL when momentum == 0; init[i] != 0 starts buffer i from the
   (decayed) gradient */
EMC_API int emc_sgd_multi(int dtype, int64_t count, void *const *params, void *const *grads,
                          void *const *bufs, const uint8_t *init, const int64_t *numel,
                          const em_sgd_args *a, void *stream);
/* Adam / AdamW: steps[i] is tensor i's step count after this step; max_sqs only
   with amsgrad */
EMC_API int emc_adam_multi(int dtype, int64_t count, void *const *params, void *const *grads,
                           void *const *exp_avgs, void *const *exp_avg_sqs, void *const *max_sqs,
                           const double *steps, const int64_t *numel, const em_adam_args *a,
                           void *stream);
/* out (a device scalar of dtype) = the p-norm (p > 0, finite or INFINITY) of every
   tensor together: double sums over fixed chunks, combined in order */
EMC_API int emc_total_norm(int dtype, int64_t count, void *const *xs, const int64_t *numel,
                           double p, void *out, void *stream);
/* x *= (T)(max_norm / (*norm + 1e-6)) for every tensor when that is below 1, the
   coefficient computed on the device from the norm there (no synchronisation) */
EMC_API int emc_clip_multi(int dtype, int64_t count, void *const *xs, const int64_t *numel,
                           const void *norm, double max_norm, void *stream);
#endif
