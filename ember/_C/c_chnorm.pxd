# ember_chnorm.h (src_c/include) declared to Cython: modules cimport it from here.
from libc.stdint cimport int64_t


cdef extern from "ember_chnorm.h" nogil:
    int em_batch_norm_fwd(int dtype, const char *x, const char *w, const char *b, int64_t N,
                          int64_t C, int64_t HW, int training, double eps, double momentum,
                          char *running_mean, char *running_var, char *y, char *save_mean,
                          char *save_invstd, int nthreads)
    int em_batch_norm_bwd(int dtype, const char *dy, const char *x, const char *save_mean,
                          const char *save_invstd, const char *w, int64_t N, int64_t C,
                          int64_t HW, int training, char *dx, char *dw, char *db, int nthreads)
    int em_batch_norm_fwd_cl(int dtype, const char *x, const char *w, const char *b, int64_t M,
                             int64_t C, int training, double eps, double momentum,
                             char *running_mean, char *running_var, char *y, char *save_mean,
                             char *save_invstd, int nthreads)
    int em_batch_norm_bwd_cl(int dtype, const char *dy, const char *x, const char *save_mean,
                             const char *save_invstd, const char *w, int64_t M, int64_t C,
                             int training, char *dx, char *dw, char *db, int nthreads)
    int em_group_norm_fwd(int dtype, const char *x, const char *w, const char *b, int64_t N,
                          int64_t C, int64_t HW, int64_t G, double eps, char *y, char *mean,
                          char *rstd, int nthreads)
    int em_group_norm_bwd(int dtype, const char *dy, const char *x, const char *mean,
                          const char *rstd, const char *w, int64_t N, int64_t C, int64_t HW,
                          int64_t G, char *dx, char *dw, char *db, int nthreads)
