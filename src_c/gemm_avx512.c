/* AVX-512 GEMM: the shared implementation compiled for 512-bit FMA (12x32 f32, 12x16 f64). */
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,fma,avx2")
#define EMBER_GEMM_ISA 2
#define EMBER_GEMM_SFX avx512
#include "gemm_impl.h"
