# ember_random.h (src_c/include) declared to Cython: modules cimport it from here.
from libc.stdint cimport int64_t, uint64_t, uint8_t
from ember._C.core cimport em_loop


cdef extern from "ember_random.h" nogil:
    enum:
        EM_RD_UNIFORM
        EM_RD_NORMAL
        EM_RD_LOGNORMAL
        EM_RD_EXPONENTIAL
        EM_RD_CAUCHY
        EM_RD_GEOMETRIC
    void em_philox4x32_10(const unsigned int *ctr, const unsigned int *key, unsigned int *out)
    void em_rand_float(int kind, int dtype, void *out, int64_t n, uint64_t seed, uint64_t offset,
                       double a, double b, int nthreads)
    void em_rand_int(int dtype, void *out, int64_t n, uint64_t seed, uint64_t offset, int64_t lo,
                     uint64_t range, int nthreads)
    void em_rand_bernoulli(int dtype, void *out, int64_t n, uint64_t seed, uint64_t offset,
                           double p, int nthreads)
    int64_t em_rand_bernoulli_p(double *p, int64_t n, uint64_t seed, uint64_t offset,
                                int nthreads)
    void em_dropout(int dtype, const void *x, void *out, uint8_t *mask, int64_t n, double p,
                    uint64_t seed, uint64_t offset, int nthreads)
    void em_randperm(int64_t *out, int64_t n, uint64_t seed, uint64_t offset)
    int em_multinomial(const double *p, int64_t rows, int64_t ncat, int64_t nsamp,
                       int replacement, int64_t *out, uint64_t seed, uint64_t offset,
                       int nthreads)
    em_loop em_normal_affine_loop(int dtype)
    int em_random_isa()
    void em_sample_gamma(int dtype, const void *alpha, void *out, int64_t n, uint64_t seed,
                         uint64_t offset, double tiny, int nthreads)
    int64_t em_sample_poisson(int dtype, const void *rate, void *out, int64_t n,
                              uint64_t seed, uint64_t offset, int nthreads)
    void em_sample_binomial(int dtype, const void *count, const void *prob, void *out,
                            int64_t n, uint64_t seed, uint64_t offset, int nthreads)
    void em_standard_gamma_grad(const double *alpha, const double *x, double *out, int64_t n,
                                int nthreads)
