/* Elementwise kernels compiled for AVX2+FMA; chosen at run time. */
#include <math.h>
#include <stdint.h>
#include <string.h>
#pragma GCC target("avx2,fma")
#define EM_FMA_OK 1   /* the target has FMA: the math header uses it */
#define EW_TABLE_FN em_ew_table_avx2
/* the double-precision float32 kernels (lgamma): FMA contraction, off under -std=c11 */
#define EW_WIDE __attribute__((optimize("fp-contract=fast")))
#include "ew_impl.h"
