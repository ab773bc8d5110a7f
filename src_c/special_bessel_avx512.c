/* special_bessel_impl.h's loops compiled for AVX-512 with 512-bit vectors and FMA
   in ember_math.h; special_bessel.c picks them at run time. */
#if defined(__x86_64__) || defined(__i386__)
#include <math.h>
#include <stdint.h>
#include <string.h>
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")
#define EM_FMA_OK 1
#include "ember.h"
#include "ember_special.h"
#include "ember_math.h"
#include "special_bessel_impl.h"
#include "special_zeta_impl.h"

SPB_ALL_LOOPS(__attribute__((target("prefer-vector-width=512"))), spb_a5)
SPZ_ALL_LOOPS(__attribute__((target("prefer-vector-width=512"))), spz_a5)

em_loop em_sp_bessel_avx512(int binary, int op, int dtype) {
    SPB_PICK(spb_a5, binary, op, dtype);
}
em_loop em_sp_zeta_avx512(int poly, int dtype) {
    SPZ_PICK(spz_a5, poly, dtype);
}
#endif
