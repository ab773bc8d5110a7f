/* Multi-tensor ("foreach"/"fused") optimizer steps and norms: one call works on a
   whole list of tensors.  Every tensor is contiguous and of one dtype (EM_F32 or
   EM_F64).  The arithmetic is the per-tensor path's, op by op and in its precision
   (scalars rounded to the tensor dtype the way the elementwise kernels round them),
   so results are bit-identical to it and independent of the thread count. */
#ifndef EMBER_FOREACH_H
#define EMBER_FOREACH_H
#include "ember.h"

typedef struct {
    double lr, weight_decay, momentum, dampening;
    int nesterov, maximize;
} em_sgd_args;

typedef struct {
    double lr, beta1, beta2, eps, weight_decay;
    int amsgrad, maximize, decoupled;
} em_adam_args;

/* SGD: bufs may be NULL when momentum == 0; init[i] != 0 starts buffer i from the
   (decayed) gradient.  Returns 0, or -1 for an unsupported dtype. */
int em_sgd_multi(int dtype, int64_t count, char *const *params, char *const *grads,
                 char *const *bufs, const uint8_t *init, const int64_t *numel,
                 const em_sgd_args *a, int nthreads);

/* Adam / AdamW: steps[i] is tensor i's step count after this step; max_sqs is used
   only with amsgrad. */
int em_adam_multi(int dtype, int64_t count, char *const *params, char *const *grads,
                  char *const *exp_avgs, char *const *exp_avg_sqs, char *const *max_sqs,
                  const double *steps, const int64_t *numel, const em_adam_args *a,
                  int nthreads);

/* x[i] *= (T)c for every tensor. */
int em_scale_multi(int dtype, int64_t count, char *const *xs, const int64_t *numel, double c,
                   int nthreads);
#endif
