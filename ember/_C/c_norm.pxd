# ember_norm.h (src_c/include) declared to Cython: modules cimport it from here.
from libc.stdint cimport int64_t


cdef extern from "ember_norm.h" nogil:
    int em_layer_norm_fwd(int dtype, const char *x, const char *w, const char *b, int64_t M,
                          int64_t N, double eps, char *y, char *mean, char *rstd, int nthreads)
    int em_layer_norm_bwd(int dtype, const char *dy, const char *x, const char *mean,
                          const char *rstd, const char *w, int64_t M, int64_t N, char *dx,
                          char *dw, char *db, int nthreads)
    int em_rms_norm_fwd(int dtype, const char *x, const char *w, int64_t M, int64_t N,
                        double eps, char *y, char *rstd, int nthreads)
    int em_rms_norm_bwd(int dtype, const char *dy, const char *x, const char *rstd,
                        const char *w, int64_t M, int64_t N, char *dx, char *dw, int nthreads)
