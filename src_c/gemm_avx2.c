/* AVX2+FMA GEMM: the shared implementation compiled for 256-bit FMA (6x16 f32, 6x8 f64). */
#pragma GCC target("avx2,fma")
#define EMBER_GEMM_ISA 1
#define EMBER_GEMM_SFX avx2
#include "gemm_impl.h"
