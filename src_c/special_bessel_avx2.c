/* special_bessel_impl.h's loops compiled for AVX2 with FMA in ember_math.h;
   special_bessel.c picks them at run time. */
#if defined(__x86_64__) || defined(__i386__)
#include <math.h>
#include <stdint.h>
#include <string.h>
#pragma GCC target("avx2,fma")
#define EM_FMA_OK 1
#include "ember.h"
#include "ember_special.h"
#include "ember_math.h"
#include "special_bessel_impl.h"
#include "special_zeta_impl.h"

SPB_ALL_LOOPS(, spb_a2)
SPZ_ALL_LOOPS(, spz_a2)

em_loop em_sp_bessel_avx2(int binary, int op, int dtype) {
    SPB_PICK(spb_a2, binary, op, dtype);
}
em_loop em_sp_zeta_avx2(int poly, int dtype) {
    SPZ_PICK(spz_a2, poly, dtype);
}
#endif
