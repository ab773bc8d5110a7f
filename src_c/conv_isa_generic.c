/* Convolution kernels written once per ISA, portable build: Winograd F(4x4, 3x3)
   (conv_wino_impl.h), the direct weight gradient (conv_wgd_impl.h), the direct
   3x3 convolution for few channels (conv_dir_impl.h) and channels-last max pooling
   (pool_nhwc_impl.h). */
#define WI_SFX generic
#define WI_WV 4
#include "conv_wino_impl.h"
#include "conv_wgd_impl.h"
#include "conv_dir_impl.h"
#include "pool_nhwc_impl.h"
