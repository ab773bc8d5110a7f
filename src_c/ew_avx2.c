/* Elementwise kernels compiled for AVX2+FMA; chosen at run time. */
#include <math.h>
#include <stdint.h>
#include <string.h>
#pragma GCC target("avx2,fma")
#define EW_TABLE_FN em_ew_table_avx2
#include "ew_impl.h"
