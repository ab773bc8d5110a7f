/* Winograd F(4x4, 3x3): the filter transform and the run-time choice of the
   ISA variant (the GEMM's, so that forcing one ISA for tests forces both). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "conv_wino.h"
#include "ember_gemm.h"

/* per-thread scratch: the slots live in a block that a pthread key frees when
   the thread ends (OpenMP pools replace their threads when the team grows) */
typedef struct {
    void *p[EMBER_CONV_NSCRATCH];
    size_t cap[EMBER_CONV_NSCRATCH];
} cv_scratch;
static pthread_key_t cv_scratch_key;
static pthread_once_t cv_scratch_once = PTHREAD_ONCE_INIT;
static _Thread_local cv_scratch *cv_scratch_tl;

static void cv_scratch_free(void *v) {
    cv_scratch *s = (cv_scratch *)v;
    for (int i = 0; i < EMBER_CONV_NSCRATCH; i++) free(s->p[i]);
    free(s);
}
static void cv_scratch_key_init(void) { pthread_key_create(&cv_scratch_key, cv_scratch_free); }

void *ember_conv_scratch(int slot, size_t bytes, int zero) {
    bytes = (bytes + 63) & ~(size_t)63;
    if (bytes == 0) bytes = 64;
    if (bytes > EMBER_CONV_SCRATCH_KEEP) {
        void *p = aligned_alloc(64, bytes);
        if (p && zero) memset(p, 0, bytes);
        return p;
    }
    cv_scratch *s = cv_scratch_tl;
    if (!s) {
        pthread_once(&cv_scratch_once, cv_scratch_key_init);
        s = (cv_scratch *)calloc(1, sizeof *s);
        if (!s) return NULL;
        if (pthread_setspecific(cv_scratch_key, s)) {
            free(s);
            return NULL;
        }
        cv_scratch_tl = s;
    }
    if (bytes > s->cap[slot]) {
        free(s->p[slot]);
        s->p[slot] = aligned_alloc(64, bytes);
        s->cap[slot] = s->p[slot] ? bytes : 0;
        if (!s->p[slot]) return NULL;
    }
    if (zero) memset(s->p[slot], 0, bytes);
    return s->p[slot];
}

void ember_conv_scratch_done(int slot, void *p) {
    const cv_scratch *s = cv_scratch_tl;
    if (p && (!s || p != s->p[slot])) free(p);
}

void ember_wino_weights_f32(int64_t K, int64_t C, const float *w, int flip, float *U,
                            int nthreads) {
    /* u = G g G^T in double, rounded once */
    static const double G[6][3] = {{0.25, 0, 0},
                                   {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                   {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                   {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                   {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                   {0, 0, 1}};
    /* 8 filters at a time, so that each of the 36 planes of U takes 8
       consecutive floats per store; threads over the input channels (each U
       value is its own filter's), as the convolution after it would sit
       waiting for a serial transform (2048 filters: 1-2% of its time) */
    const int nt = C * K < 1024 || C < 2 ? 1 : nthreads;
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
    for (int64_t c = 0; c < C; c++)
        for (int64_t k0 = 0; k0 < K; k0 += 8) {
            const int64_t nk = K - k0 < 8 ? K - k0 : 8;
            float u[36][8];
            for (int64_t kk = 0; kk < nk; kk++) {
                const int64_t k = k0 + kk;
                double g[3][3], t[6][3];
                const float *src = flip ? w + (c * K + k) * 9 : w + (k * C + c) * 9;
                for (int i = 0; i < 3; i++)
                    for (int j = 0; j < 3; j++)
                        g[i][j] = flip ? src[(2 - i) * 3 + 2 - j] : src[i * 3 + j];
                for (int a = 0; a < 6; a++)
                    for (int j = 0; j < 3; j++)
                        t[a][j] = G[a][0] * g[0][j] + G[a][1] * g[1][j] + G[a][2] * g[2][j];
                for (int a = 0; a < 6; a++)
                    for (int b = 0; b < 6; b++)
                        u[a * 6 + b][kk] =
                            (float)(t[a][0] * G[b][0] + t[a][1] * G[b][1] + t[a][2] * G[b][2]);
            }
            for (int q = 0; q < 36; q++)
                memcpy(U + (q * C + c) * K + k0, u[q], (size_t)nk * sizeof(float));
        }
}

int ember_wino_fwd_f32(const ember_wino_shape *s, const float *x, const float *U,
                       const float *bias, float *y, int nthreads) {
    switch (ember_gemm_isa()) {
    case 2: return ember_wino_fwd_f32_avx512(s, x, U, bias, y, nthreads);
    case 1: return ember_wino_fwd_f32_avx2(s, x, U, bias, y, nthreads);
    default: return ember_wino_fwd_f32_generic(s, x, U, bias, y, nthreads);
    }
}

int ember_wino_wgrad_f32(const ember_wino_shape *s, const float *x, const float *dy,
                         float *dw, int nthreads) {
    switch (ember_gemm_isa()) {
    case 2: return ember_wino_wgrad_f32_avx512(s, x, dy, dw, nthreads);
    case 1: return ember_wino_wgrad_f32_avx2(s, x, dy, dw, nthreads);
    default: return ember_wino_wgrad_f32_generic(s, x, dy, dw, nthreads);
    }
}

int ember_wino_fwd_nhwc_f32(const ember_wino_shape *s, const float *x, const float *U,
                            const float *bias, float *y, int nthreads) {
    switch (ember_gemm_isa()) {
    case 2: return ember_wino_fwd_nhwc_f32_avx512(s, x, U, bias, y, nthreads);
    case 1: return ember_wino_fwd_nhwc_f32_avx2(s, x, U, bias, y, nthreads);
    default: return ember_wino_fwd_nhwc_f32_generic(s, x, U, bias, y, nthreads);
    }
}

int ember_wino_wgrad_nhwc_f32(const ember_wino_shape *s, const float *x, const float *dy,
                              float *dw, int nthreads) {
    switch (ember_gemm_isa()) {
    case 2: return ember_wino_wgrad_nhwc_f32_avx512(s, x, dy, dw, nthreads);
    case 1: return ember_wino_wgrad_nhwc_f32_avx2(s, x, dy, dw, nthreads);
    default: return ember_wino_wgrad_nhwc_f32_generic(s, x, dy, dw, nthreads);
    }
}

int ember_conv_wgrad_direct_f32(const ember_conv2d_params *p, const float *x, const float *dy,
                                float *dw, int nthreads) {
    switch (ember_gemm_isa()) {
    case 2: return ember_conv_wgrad_direct_f32_avx512(p, x, dy, dw, nthreads);
    case 1: return ember_conv_wgrad_direct_f32_avx2(p, x, dy, dw, nthreads);
    default: return ember_conv_wgrad_direct_f32_generic(p, x, dy, dw, nthreads);
    }
}

int ember_dconv3_fwd_f32(const ember_wino_shape *s, const float *x, const float *w, int flip,
                         const float *bias, float *y, int nthreads) {
    switch (ember_gemm_isa()) {
    case 2: return ember_dconv3_fwd_f32_avx512(s, x, w, flip, bias, y, nthreads);
    case 1: return ember_dconv3_fwd_f32_avx2(s, x, w, flip, bias, y, nthreads);
    default: return ember_dconv3_fwd_f32_generic(s, x, w, flip, bias, y, nthreads);
    }
}

int ember_dconv3_wgrad_f32(const ember_wino_shape *s, const float *x, const float *dy,
                           float *dw, int nthreads) {
    switch (ember_gemm_isa()) {
    case 2: return ember_dconv3_wgrad_f32_avx512(s, x, dy, dw, nthreads);
    case 1: return ember_dconv3_wgrad_f32_avx2(s, x, dy, dw, nthreads);
    default: return ember_dconv3_wgrad_f32_generic(s, x, dy, dw, nthreads);
    }
}

int ember_conv_wgrad_cl_f32(const ember_conv2d_params *p, const float *x, const float *dy,
                            float *dw, int nthreads, int nhwc) {
    switch (ember_gemm_isa()) {
    case 2: return ember_conv_wgrad_cl_f32_avx512(p, x, dy, dw, nthreads, nhwc);
    case 1: return ember_conv_wgrad_cl_f32_avx2(p, x, dy, dw, nthreads, nhwc);
    default: return 1;
    }
}

int ember_max_pool2d_nhwc_fwd_f32(const ember_pool2d_params *p, int64_t C, const float *x,
                                  float *y, int64_t *idx, int nthreads) {
    switch (ember_gemm_isa()) {
    case 2: return ember_max_pool2d_nhwc_fwd_f32_avx512(p, C, x, y, idx, nthreads);
    case 1: return ember_max_pool2d_nhwc_fwd_f32_avx2(p, C, x, y, idx, nthreads);
    default: return ember_max_pool2d_nhwc_fwd_f32_generic(p, C, x, y, idx, nthreads);
    }
}
