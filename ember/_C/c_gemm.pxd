# ember_gemm.h (src_c/include) declared to Cython: modules cimport it from here.
from libc.stdint cimport int64_t


cdef extern from "ember_gemm.h" nogil:
    void ember_sgemm_batched(int64_t batch, int64_t M, int64_t N, int64_t K, float alpha,
                             const float *A, int64_t rsa, int64_t csa,
                             const float *B, int64_t rsb, int64_t csb,
                             float beta, float *C, int64_t rsc, int64_t csc,
                             int64_t bsa, int64_t bsb, int64_t bsc, int nthreads)
    void ember_dgemm_batched(int64_t batch, int64_t M, int64_t N, int64_t K, double alpha,
                             const double *A, int64_t rsa, int64_t csa,
                             const double *B, int64_t rsb, int64_t csb,
                             double beta, double *C, int64_t rsc, int64_t csc,
                             int64_t bsa, int64_t bsb, int64_t bsc, int nthreads)
    int ember_gemm_isa()
    int ember_gemm_set_isa(int isa)
    void ember_bf16gemm(int64_t M, int64_t N, int64_t K, const unsigned short *A, int64_t rsa,
                        int64_t csa, const unsigned short *B, int64_t rsb, int64_t csb,
                        float *C, int64_t ldc, int nthreads)
    int ember_bf16gemm_isa()
    int ember_bf16gemm_set_isa(int isa)
    ctypedef struct ember_smat:
        const float *p
        int64_t rs
        int64_t cs
        const int64_t *ro
        const int64_t *co
    ctypedef struct ember_dmat:
        const double *p
        int64_t rs
        int64_t cs
        const int64_t *ro
        const int64_t *co
    void ember_sgemm_ex(int64_t M, int64_t N, int64_t K, float alpha, const ember_smat *A,
                        const ember_smat *B, float beta, float *C, int64_t rsc, int64_t csc,
                        const float *br, const float *bc, int nthreads)
    void ember_dgemm_ex(int64_t M, int64_t N, int64_t K, double alpha, const ember_dmat *A,
                        const ember_dmat *B, double beta, double *C, int64_t rsc, int64_t csc,
                        const double *br, const double *bc, int nthreads)
    ctypedef void (*ember_sgemm_epilogue)(float *C, int64_t rsc, int64_t csc, int64_t i0,
                                          int64_t j0, int64_t m, int64_t n, void *ctx)
    void ember_sgemm_epi(int64_t M, int64_t N, int64_t K, float alpha, const ember_smat *A,
                         const ember_smat *B, float beta, float *C, int64_t rsc, int64_t csc,
                         const float *br, const float *bc, ember_sgemm_epilogue epi,
                         void *ctx, int nthreads)
