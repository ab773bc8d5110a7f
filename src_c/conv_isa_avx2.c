/* Convolution kernels written once per ISA, compiled for AVX2+FMA: Winograd F(4x4, 3x3)
   (conv_wino_impl.h), the direct weight gradient (conv_wgd_impl.h), the direct
   3x3 convolution for few channels (conv_dir_impl.h) the channels-last weight
   gradient (conv_wgn_impl.h) and channels-last max pooling (pool_nhwc_impl.h). */
#pragma GCC target("avx2,fma")
#define WI_SFX avx2
#define WI_WV 8
#include "conv_wino_impl.h"
#include "conv_wgd_impl.h"
#include "conv_dir_impl.h"
#include "conv_wgn_impl.h"
#include "pool_nhwc_impl.h"
