/* Winograd F(4x4, 3x3) kernels compiled for AVX2+FMA (see conv_wino_impl.h). */
#pragma GCC target("avx2,fma")
#define WI_SFX avx2
#define WI_WV 8
#include "conv_wino_impl.h"
