/* FFT kernels: batched complex-to-complex, real-to-complex and complex-to-real
   transforms along one contiguous-or-strided axis, float32 and float64.
   Rows: row r starts at base + r * dist (in elements of the row's type), its
   elements are `stride` apart. sign -1 is the forward transform. Results are
   multiplied by `scale`. Return 0, or nonzero when memory ran out. */
#ifndef EMBER_FFT_H
#define EMBER_FFT_H
#include <stdint.h>

int em_fft_c2c(int dtype, const void *in, int64_t istride, int64_t idist, void *out,
               int64_t ostride, int64_t odist, int64_t n, int64_t howmany, int sign,
               double scale, int nthreads);
/* dtype: the real dtype (EM_F32 / EM_F64); out has n / 2 + 1 complex per row */
int em_fft_r2c(int dtype, const void *in, int64_t istride, int64_t idist, void *out,
               int64_t ostride, int64_t odist, int64_t n, int64_t howmany, double scale,
               int nthreads);
/* dtype: the real dtype of the output; in has n / 2 + 1 complex per row */
int em_fft_c2r(int dtype, const void *in, int64_t istride, int64_t idist, void *out,
               int64_t ostride, int64_t odist, int64_t n, int64_t howmany, double scale,
               int nthreads);
#endif
