/* The Bessel-family and one-degree polynomial loops of special_bessel_impl.h, the
   generic copy, and the choice among it and the AVX2 / AVX-512 copies
   (special_bessel_avx2.c, special_bessel_avx512.c) for the running CPU. */
#include <math.h>
#include <stdint.h>
#include "ember.h"
#include "ember_special.h"
#include "ember_math.h"
#include "special_bessel_impl.h"
#include "special_zeta_impl.h"

SPB_ALL_LOOPS(, spb_gen)
SPZ_ALL_LOOPS(, spz_gen)

em_loop em_sp_bessel_avx2(int binary, int op, int dtype);
em_loop em_sp_bessel_avx512(int binary, int op, int dtype);
em_loop em_sp_zeta_avx2(int poly, int dtype);
em_loop em_sp_zeta_avx512(int poly, int dtype);

/* the family's loop of a unary (binary = 0) or binary op, NULL for the others */
em_loop em_sp_bessel_loop(int binary, int op, int dtype) {
#if defined(__x86_64__) || defined(__i386__)
    int isa = ember_cpu_isa();
    if (isa >= 2) return em_sp_bessel_avx512(binary, op, dtype);
    if (isa == 1) return em_sp_bessel_avx2(binary, op, dtype);
#endif
    SPB_PICK(spb_gen, binary, op, dtype);
}

/* special_zeta_impl.h's loop of zeta (poly = 0) or of polygamma for 2 <= n < 32
   (poly = 1) */
em_loop em_sp_zeta_loop(int poly, int dtype) {
#if defined(__x86_64__) || defined(__i386__)
    int isa = ember_cpu_isa();
    if (isa >= 2) return em_sp_zeta_avx512(poly, dtype);
    if (isa == 1) return em_sp_zeta_avx2(poly, dtype);
#endif
    SPZ_PICK(spz_gen, poly, dtype);
}
