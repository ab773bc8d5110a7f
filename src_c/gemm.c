/* Run-time ISA dispatch for the GEMM kernels (see gemm_impl.h). */
#include "ember_gemm.h"
#include "ember.h"

#define DECL(sfx)                                                                         \
    void ember_sgemm_##sfx(int64_t, int64_t, int64_t, float, const float *, int64_t,      \
                           int64_t, const float *, int64_t, int64_t, float, float *,      \
                           int64_t, int64_t, int);                                        \
    void ember_dgemm_##sfx(int64_t, int64_t, int64_t, double, const double *, int64_t,    \
                           int64_t, const double *, int64_t, int64_t, double, double *,   \
                           int64_t, int64_t, int);                                        \
    void ember_sgemm_batched_##sfx(int64_t, int64_t, int64_t, int64_t, float,             \
                                   const float *, int64_t, int64_t, const float *,        \
                                   int64_t, int64_t, float, float *, int64_t, int64_t,    \
                                   int64_t, int64_t, int64_t, int);                       \
    void ember_dgemm_batched_##sfx(int64_t, int64_t, int64_t, int64_t, double,            \
                                   const double *, int64_t, int64_t, const double *,      \
                                   int64_t, int64_t, double, double *, int64_t, int64_t,  \
                                   int64_t, int64_t, int64_t, int);                       \
    void ember_sgemm_ex_##sfx(int64_t, int64_t, int64_t, float, const ember_smat *,       \
                              const ember_smat *, float, float *, int64_t, int64_t,       \
                              const float *, const float *, int);                         \
    void ember_dgemm_ex_##sfx(int64_t, int64_t, int64_t, double, const ember_dmat *,      \
                              const ember_dmat *, double, double *, int64_t, int64_t,     \
                              const double *, const double *, int);                       \
    void ember_sgemm_epi_##sfx(int64_t, int64_t, int64_t, float, const ember_smat *,      \
                               const ember_smat *, float, float *, int64_t, int64_t,      \
                               const float *, const float *, ember_sgemm_epilogue, void *, \
                               int);                                                      \
    void ember_dgemm_epi_##sfx(int64_t, int64_t, int64_t, double, const ember_dmat *,     \
                               const ember_dmat *, double, double *, int64_t, int64_t,    \
                               const double *, const double *, ember_dgemm_epilogue,      \
                               void *, int);
DECL(generic)
DECL(avx2)
DECL(avx512)

static int g_isa = -1;

static int detect(void) {
    int isa = ember_cpu_isa();
    return isa < 0 ? 0 : isa > 2 ? 2 : isa;
}

int ember_gemm_isa(void) {
    int isa = __atomic_load_n(&g_isa, __ATOMIC_RELAXED);
    if (isa < 0) {
        isa = detect();
        __atomic_store_n(&g_isa, isa, __ATOMIC_RELAXED);
    }
    return isa;
}

int ember_gemm_set_isa(int isa) {
    int hw = detect();
    if (isa < 0 || isa > hw) isa = hw;
    __atomic_store_n(&g_isa, isa, __ATOMIC_RELAXED);
    return isa;
}

#define DISPATCH(fn, ...)                                        \
    switch (ember_gemm_isa()) {                                  \
    case 2: fn##_avx512(__VA_ARGS__); break;                     \
    case 1: fn##_avx2(__VA_ARGS__); break;                       \
    default: fn##_generic(__VA_ARGS__); break;                   \
    }

void ember_sgemm(int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t rsa,
                 int64_t csa, const float *B, int64_t rsb, int64_t csb, float beta, float *C,
                 int64_t rsc, int64_t csc, int nthreads) {
    DISPATCH(ember_sgemm, M, N, K, alpha, A, rsa, csa, B, rsb, csb, beta, C, rsc, csc, nthreads)
}

void ember_dgemm(int64_t M, int64_t N, int64_t K, double alpha, const double *A, int64_t rsa,
                 int64_t csa, const double *B, int64_t rsb, int64_t csb, double beta,
                 double *C, int64_t rsc, int64_t csc, int nthreads) {
    DISPATCH(ember_dgemm, M, N, K, alpha, A, rsa, csa, B, rsb, csb, beta, C, rsc, csc, nthreads)
}

void ember_sgemm_batched(int64_t batch, int64_t M, int64_t N, int64_t K, float alpha,
                         const float *A, int64_t rsa, int64_t csa, const float *B, int64_t rsb,
                         int64_t csb, float beta, float *C, int64_t rsc, int64_t csc,
                         int64_t bsa, int64_t bsb, int64_t bsc, int nthreads) {
    DISPATCH(ember_sgemm_batched, batch, M, N, K, alpha, A, rsa, csa, B, rsb, csb, beta, C, rsc,
             csc, bsa, bsb, bsc, nthreads)
}

void ember_dgemm_batched(int64_t batch, int64_t M, int64_t N, int64_t K, double alpha,
                         const double *A, int64_t rsa, int64_t csa, const double *B,
                         int64_t rsb, int64_t csb, double beta, double *C, int64_t rsc,
                         int64_t csc, int64_t bsa, int64_t bsb, int64_t bsc, int nthreads) {
    DISPATCH(ember_dgemm_batched, batch, M, N, K, alpha, A, rsa, csa, B, rsb, csb, beta, C, rsc,
             csc, bsa, bsb, bsc, nthreads)
}

void ember_sgemm_ex(int64_t M, int64_t N, int64_t K, float alpha, const ember_smat *A,
                    const ember_smat *B, float beta, float *C, int64_t rsc, int64_t csc,
                    const float *br, const float *bc, int nthreads) {
    DISPATCH(ember_sgemm_ex, M, N, K, alpha, A, B, beta, C, rsc, csc, br, bc, nthreads)
}

void ember_dgemm_ex(int64_t M, int64_t N, int64_t K, double alpha, const ember_dmat *A,
                    const ember_dmat *B, double beta, double *C, int64_t rsc, int64_t csc,
                    const double *br, const double *bc, int nthreads) {
    DISPATCH(ember_dgemm_ex, M, N, K, alpha, A, B, beta, C, rsc, csc, br, bc, nthreads)
}

void ember_sgemm_epi(int64_t M, int64_t N, int64_t K, float alpha, const ember_smat *A,
                     const ember_smat *B, float beta, float *C, int64_t rsc, int64_t csc,
                     const float *br, const float *bc, ember_sgemm_epilogue epi, void *ctx,
                     int nthreads) {
    DISPATCH(ember_sgemm_epi, M, N, K, alpha, A, B, beta, C, rsc, csc, br, bc, epi, ctx,
             nthreads)
}

void ember_dgemm_epi(int64_t M, int64_t N, int64_t K, double alpha, const ember_dmat *A,
                     const ember_dmat *B, double beta, double *C, int64_t rsc, int64_t csc,
                     const double *br, const double *bc, ember_dgemm_epilogue epi, void *ctx,
                     int nthreads) {
    DISPATCH(ember_dgemm_epi, M, N, K, alpha, A, B, beta, C, rsc, csc, br, bc, epi, ctx,
             nthreads)
}
