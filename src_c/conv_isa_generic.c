/* Convolution kernels written once per ISA, portable build: Winograd F(4x4, 3x3)
   (conv_wino_impl.h) and the direct weight gradient (conv_wgd_impl.h). */
#define WI_SFX generic
#define WI_WV 4
#include "conv_wino_impl.h"
#include "conv_wgd_impl.h"
