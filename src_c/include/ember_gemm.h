/* ember's GEMM C ABI.  C = alpha*A@B + beta*C where A is M x K, B is K x N and
   C is M x N, each with arbitrary element strides (rs = row stride, cs =
   column stride, in elements; op(A) = A^T is just swapped strides).
   beta == 0 means C is not read (NaN/garbage in C is overwritten).
   K == 0 gives C = beta*C.  Kernels check nothing; nthreads >= 1. */
#ifndef EMBER_GEMM_H
#define EMBER_GEMM_H
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

void ember_sgemm(int64_t M, int64_t N, int64_t K, float alpha,
                 const float *A, int64_t rsa, int64_t csa,
                 const float *B, int64_t rsb, int64_t csb,
                 float beta, float *C, int64_t rsc, int64_t csc, int nthreads);
void ember_dgemm(int64_t M, int64_t N, int64_t K, double alpha,
                 const double *A, int64_t rsa, int64_t csa,
                 const double *B, int64_t rsb, int64_t csb,
                 double beta, double *C, int64_t rsc, int64_t csc, int nthreads);

/* batched: batch b uses A + b*bsa, B + b*bsb, C + b*bsc (element strides;
   bsa/bsb may be 0 to broadcast one operand). */
void ember_sgemm_batched(int64_t batch, int64_t M, int64_t N, int64_t K, float alpha,
                         const float *A, int64_t rsa, int64_t csa,
                         const float *B, int64_t rsb, int64_t csb,
                         float beta, float *C, int64_t rsc, int64_t csc,
                         int64_t bsa, int64_t bsb, int64_t bsc, int nthreads);
void ember_dgemm_batched(int64_t batch, int64_t M, int64_t N, int64_t K, double alpha,
                         const double *A, int64_t rsa, int64_t csa,
                         const double *B, int64_t rsb, int64_t csb,
                         double beta, double *C, int64_t rsc, int64_t csc,
                         int64_t bsa, int64_t bsb, int64_t bsc, int nthreads);

/* Descriptor operands: element (r, c) is p[ro(r) + co(c)] with
   ro(r) = ro ? ro[r] : r*rs and co(c) = co ? co[c] : c*cs.  The offset tables
   let convolution hand the GEMM its im2col matrix as row pointers into the
   image instead of building it; the packing routines read them directly. */
typedef struct { const float *p; int64_t rs, cs; const int64_t *ro, *co; } ember_smat;
typedef struct { const double *p; int64_t rs, cs; const int64_t *ro, *co; } ember_dmat;

/* C = alpha*A@B + beta*C + br[i] + bc[j]: br (length M) / bc (length N) are
   fused row / column biases, either may be NULL. */
void ember_sgemm_ex(int64_t M, int64_t N, int64_t K, float alpha, const ember_smat *A,
                    const ember_smat *B, float beta, float *C, int64_t rsc, int64_t csc,
                    const float *br, const float *bc, int nthreads);
void ember_dgemm_ex(int64_t M, int64_t N, int64_t K, double alpha, const ember_dmat *A,
                    const ember_dmat *B, double beta, double *C, int64_t rsc, int64_t csc,
                    const double *br, const double *bc, int nthreads);

/* ember_?gemm_ex with an epilogue: epi(C + i0*rsc + j0*csc, rsc, csc, i0, j0, m, n, ctx)
   runs once for every m x n block of C that is final (bias included), while the
   block is still in cache, on the thread that computed it; blocks do not overlap
   and cover C.  The block split depends on the ISA, the sizes and the thread
   count, so an epilogue must treat each element on its own (elementwise math,
   reading other operands at (i0 + i, j0 + j)).  epi == NULL is ember_?gemm_ex. */
typedef void (*ember_sgemm_epilogue)(float *C, int64_t rsc, int64_t csc, int64_t i0,
                                     int64_t j0, int64_t m, int64_t n, void *ctx);
typedef void (*ember_dgemm_epilogue)(double *C, int64_t rsc, int64_t csc, int64_t i0,
                                     int64_t j0, int64_t m, int64_t n, void *ctx);
void ember_sgemm_epi(int64_t M, int64_t N, int64_t K, float alpha, const ember_smat *A,
                     const ember_smat *B, float beta, float *C, int64_t rsc, int64_t csc,
                     const float *br, const float *bc, ember_sgemm_epilogue epi, void *ctx,
                     int nthreads);
void ember_dgemm_epi(int64_t M, int64_t N, int64_t K, double alpha, const ember_dmat *A,
                     const ember_dmat *B, double beta, double *C, int64_t rsc, int64_t csc,
                     const double *br, const double *bc, ember_dgemm_epilogue epi, void *ctx,
                     int nthreads);

/* The ISA the GEMM kernels run with (0 generic, 1 AVX2+FMA, 2 AVX-512), and a
   way to force a lower one (tests; -1 = back to detection).  Returns the ISA
   now in use. */
int ember_gemm_isa(void);
int ember_gemm_set_isa(int isa);

/* bfloat16 operands (raw uint16 bits, any strides), float32 result: C = A@B with C
   row-major (row stride ldc, C not read).  Runs vdpbf16ps where the CPU has
   AVX512_BF16, else widens to float32 and runs ember_sgemm.  ember_bf16gemm_isa():
   1 = AVX512_BF16 kernel, 0 = widening path; set_isa(0) forces the latter (tests),
   set_isa(-1) goes back to detection. */
void ember_bf16gemm(int64_t M, int64_t N, int64_t K, const uint16_t *A, int64_t rsa,
                    int64_t csa, const uint16_t *B, int64_t rsb, int64_t csb, float *C,
                    int64_t ldc, int nthreads);
int ember_bf16gemm_isa(void);
int ember_bf16gemm_set_isa(int isa);

#ifdef __cplusplus
}
#endif
#endif
