/* ember.special kernels: strided float32/float64 loops over the special functions
   (src_c/special.c).  Nothing here knows about Python. */
#ifndef EMBER_SPECIAL_H
#define EMBER_SPECIAL_H
#include <stdint.h>
#include "ember.h"

/* unary ops: ptrs = (out, x); EM_SP_POLYGAMMA reads its order n (int64_t) from aux */
enum {
    EM_SP_DIGAMMA = 0, EM_SP_POLYGAMMA, EM_SP_ERFINV, EM_SP_ERFCX, EM_SP_NDTR,
    EM_SP_NDTRI, EM_SP_LOG_NDTR, EM_SP_I0, EM_SP_I0E, EM_SP_I1, EM_SP_I1E, EM_SP_MI0,
    EM_SP_MI1, EM_SP_K0, EM_SP_K1, EM_SP_K0E, EM_SP_K1E, EM_SP_J0, EM_SP_J1, EM_SP_Y0,
    EM_SP_Y1, EM_SP_SPH_J0, EM_SP_AIRY_AI, EM_SP_ENTR,
    EM_SP_NUNARY
};

/* binary ops: ptrs = (out, x, y); the polynomials take (x, degree n) */
enum {
    EM_SP_ZETA = 0, EM_SP_IGAMMA, EM_SP_IGAMMAC, EM_SP_XLOG1PY, EM_SP_CHEB_T, EM_SP_CHEB_U,
    EM_SP_CHEB_V, EM_SP_CHEB_W, EM_SP_SCHEB_T, EM_SP_SCHEB_U, EM_SP_SCHEB_V, EM_SP_SCHEB_W,
    EM_SP_HERM_H, EM_SP_HERM_HE, EM_SP_LAGUERRE, EM_SP_LEGENDRE,
    EM_SP_NBINARY
};

/* The loop of an op for EM_F32 or EM_F64 (NULL for other dtypes). */
em_loop em_special_unary(int op, int dtype);
em_loop em_special_binary(int op, int dtype);

/* psi(x) in double precision (for the samplers' reparameterised gradients) */
double em_digamma(double x);
#endif
