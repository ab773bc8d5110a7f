# ember_reduce.h (src_c/include) declared to Cython: modules cimport it from here.
from libc.stdint cimport int64_t


cdef extern from "ember_reduce.h" nogil:
    enum:
        RD_SUM, RD_PROD, RD_MAX, RD_MIN, RD_NANSUM, RD_ASUM, RD_SSQ, RD_PSUM, RD_AMAX, RD_AMIN
        RD_NZ, RD_NNAN, RD_SUMEXP
        RP_NONE, RP_DIV, RP_SQRT, RP_ROOT, RP_DIVSQRT, RP_LOGADD, RP_FINITE0
        SC_SUM, SC_PROD, SC_MAX, SC_MIN, SC_LOGSUMEXP
    int em_reduce(int op, int dtype, const char *x, int64_t O, int64_t K, int64_t I, char *out,
                  const void *center, double p, int nthreads)
    void em_reduce_post(int mode, int dtype, char *out, int64_t n, double a, const void *center)
    int em_argreduce(int op, int dtype, const char *x, int64_t O, int64_t K, int64_t I,
                     char *vals, int64_t *idx, int nthreads)
    int em_scan(int op, int dtype, const char *x, int64_t O, int64_t K, int64_t I, char *out,
                int64_t *idx, int nthreads)
    int em_softmax(int log, int dtype, const char *x, int64_t O, int64_t K, int64_t I,
                   char *out, int nthreads)
    int em_sort(int dtype, const char *x, int64_t rows, int64_t n, char *vals, int64_t *idx,
                int descending, int nthreads)
