/* The float64 erfinv loop and the erf family (special_erf_impl.h) compiled for
   AVX2+FMA, with FMA
   in ember_math.h; special.c picks it at run time. */
#if defined(__x86_64__) || defined(__i386__)
#include <math.h>
#include <stdint.h>
#include <string.h>
#pragma GCC target("avx2,fma")
#define EM_FMA_OK 1
#include "ember_math.h"
#include "erfinv_f64_impl.h"
#include "special_erf_impl.h"
#include "special_igam_impl.h"

ERFINV_F64_LOOP(, em_erfinv_f64_avx2)
SPE_LOOPS(, _avx2)
SPIG_LOOPS(, _avx2)
#endif
