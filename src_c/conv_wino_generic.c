/* Winograd F(4x4, 3x3) kernels, portable build (see conv_wino_impl.h). */
#define WI_SFX generic
#define WI_WV 4
#include "conv_wino_impl.h"
