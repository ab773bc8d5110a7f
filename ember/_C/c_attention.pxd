# ember_attention.h (src_c/include) declared to Cython: modules cimport it from here.
from libc.stdint cimport int64_t


cdef extern from "ember_attention.h" nogil:
    int em_sdpa_fwd(int dtype, const char *q, const char *k, const char *v, const char *mask,
                    const int64_t *moff, int64_t mrs, int64_t mcs, int64_t BH, int64_t L,
                    int64_t S, int64_t D, int64_t Dv, double scale, int causal, char *out,
                    char *lse, int nthreads)
    int em_sdpa_bwd(int dtype, const char *dout, const char *q, const char *k, const char *v,
                    const char *out, const char *lse, const char *mask, const int64_t *moff,
                    int64_t mrs, int64_t mcs, int64_t BH, int64_t L, int64_t S, int64_t D,
                    int64_t Dv, double scale, int causal, char *dq, char *dk, char *dv,
                    int nthreads)
