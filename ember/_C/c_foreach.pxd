# ember_foreach.h (src_c/include) declared to Cython: modules cimport it from here.
from libc.stdint cimport int64_t, uint8_t


cdef extern from "ember_foreach.h" nogil:
    ctypedef struct em_sgd_args:
        double lr, weight_decay, momentum, dampening
        int nesterov, maximize
    ctypedef struct em_adam_args:
        double lr, beta1, beta2, eps, weight_decay
        int amsgrad, maximize, decoupled
    int em_sgd_multi(int dtype, int64_t count, char **params, char **grads, char **bufs,
                     const uint8_t *init, const int64_t *numel, const em_sgd_args *a,
                     int nthreads)
    int em_adam_multi(int dtype, int64_t count, char **params, char **grads, char **exp_avgs,
                      char **exp_avg_sqs, char **max_sqs, const double *steps,
                      const int64_t *numel, const em_adam_args *a, int nthreads)
    int em_scale_multi(int dtype, int64_t count, char **xs, const int64_t *numel, double c,
                       int nthreads)
