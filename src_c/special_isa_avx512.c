/* The float64 erfinv loop and the erf family (special_erf_impl.h) compiled for
   AVX-512 with 512-bit vectors and FMA in
   ember_math.h; special.c picks it at run time. */
#if defined(__x86_64__) || defined(__i386__)
#include <math.h>
#include <stdint.h>
#include <string.h>
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")
#define EM_FMA_OK 1
#include "ember_math.h"
#include "erfinv_f64_impl.h"
#include "special_erf_impl.h"
#include "special_igam_impl.h"

ERFINV_F64_LOOP(__attribute__((target("prefer-vector-width=512"))), em_erfinv_f64_avx512)
SPE_LOOPS(__attribute__((target("prefer-vector-width=512"))), _avx512)
SPIG_LOOPS(__attribute__((target("prefer-vector-width=512"))), _avx512)
#endif
