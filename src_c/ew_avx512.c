/* Elementwise kernels compiled for AVX-512 (F/BW/VL/DQ); chosen at run time. */
#include <math.h>
#include <stdint.h>
#include <string.h>
/* 512-bit vectors for every loop (GCC's default tuning stops at 256): the
   transcendental loops run ~1.2x faster, and results do not depend on the width */
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,prefer-vector-width=512")
#define EM_FMA_OK 1   /* the target has FMA: the math header uses it */
#define EW_TABLE_FN em_ew_table_avx512
/* the double-precision float32 kernels (lgamma): 512-bit vectors (~1.5x faster) and
   FMA contraction, which -std=c11 turns off (~1.3x) */
#define EW_WIDE __attribute__((target("prefer-vector-width=512"), optimize("fp-contract=fast")))
#include "ew_impl.h"
