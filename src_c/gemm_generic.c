/* Portable GEMM: the shared implementation with GCC vector extensions. */
#define EMBER_GEMM_ISA 0
#define EMBER_GEMM_SFX generic
#include "gemm_impl.h"
