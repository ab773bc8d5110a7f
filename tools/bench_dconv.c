/* Standalone harness for the direct 3x3 convolution for few channels
   (src_c/conv_dir_impl.h): checks each ISA's forward, input gradient (the
   flipped form) and weight gradient against a double-precision loop, then
   times them (best and median of many runs, 1 and 2 threads, GFLOP/s).

   gcc -std=c11 -O3 -fopenmp -fno-math-errno -fno-trapping-math -Isrc_c -Isrc_c/include \
       tools/bench_dconv.c src_c/conv_wino.c src_c/conv_isa_generic.c \
       src_c/conv_isa_avx2.c src_c/conv_isa_avx512.c src_c/gemm.c src_c/gemm_generic.c \
       src_c/gemm_avx2.c src_c/gemm_avx512.c src_c/cpu.c -lm -o /tmp/bench_dconv
   /tmp/bench_dconv [N C H K pad]...   (default: the bench_conv.py few-channel rows)
   One thread is timed in thread CPU time, two in wall time. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "conv_wino.h"

/* one thread: this thread's CPU time (steady on a shared machine); two: wall */
static int cpu_clock;
static double now(void) {
    struct timespec ts;
    clock_gettime(cpu_clock ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}
static uint64_t rng = 88172645463325252ull;
static float urand(void) {
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}
static int cmpd(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef int (*fwd_fn)(const ember_wino_shape *, const float *, const float *, int, const float *,
                      float *, int);
typedef int (*wg_fn)(const ember_wino_shape *, const float *, const float *, float *, int);
static const char *isa_name[3] = {"generic", "avx2", "avx512"};
static fwd_fn fwds[3] = {ember_dconv3_fwd_f32_generic, ember_dconv3_fwd_f32_avx2,
                         ember_dconv3_fwd_f32_avx512};
static wg_fn wgs[3] = {ember_dconv3_wgrad_f32_generic, ember_dconv3_wgrad_f32_avx2,
                       ember_dconv3_wgrad_f32_avx512};

/* y (N, K, Ho, Wo) in double: the forward of x (N, C, H, W) padded by p */
static void ref_fwd(int64_t N, int64_t C, int64_t H, int64_t K, int64_t p, const float *x,
                    const float *w, double *y) {
    const int64_t Ho = H + 2 * p - 2;
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++)
            for (int64_t oh = 0; oh < Ho; oh++)
                for (int64_t ow = 0; ow < Ho; ow++) {
                    double s = 0;
                    for (int64_t c = 0; c < C; c++)
                        for (int i = 0; i < 3; i++)
                            for (int j = 0; j < 3; j++) {
                                const int64_t ih = oh + i - p, iw = ow + j - p;
                                if (ih < 0 || iw < 0 || ih >= H || iw >= H) continue;
                                s += (double)x[((n * C + c) * H + ih) * H + iw] *
                                     w[((k * C + c) * 3 + i) * 3 + j];
                            }
                    y[((n * K + k) * Ho + oh) * Ho + ow] = s;
                }
}

static double time_it(void (*f)(void *), void *arg, int reps, double *med) {
    double t[64];
    if (reps > 64) reps = 64;
    f(arg);
    for (int r = 0; r < reps; r++) {
        const double t0 = now();
        f(arg);
        t[r] = now() - t0;
    }
    qsort(t, reps, sizeof(double), cmpd);
    *med = t[reps / 2];
    return t[0];
}

typedef struct {
    int isa, nt, pass;
    ember_wino_shape s;
    const float *x, *w, *dy;
    float *y, *dx, *dw;
} job;
static void run(void *a) {
    job *j = a;
    if (j->pass == 0) fwds[j->isa](&j->s, j->x, j->w, 0, NULL, j->y, j->nt);
    else if (j->pass == 1) fwds[j->isa](&j->s, j->dy, j->w, 1, NULL, j->dx, j->nt);
    else wgs[j->isa](&j->s, j->x, j->dy, j->dw, j->nt);
}

static void shape(int64_t N, int64_t C, int64_t H, int64_t K, int64_t p, int isa_lo) {
    const int64_t Ho = H + 2 * p - 2;
    const int64_t nx = N * C * H * H, ny = N * K * Ho * Ho, nw = K * C * 9;
    float *x = malloc(nx * 4), *w = malloc(nw * 4), *dy = malloc(ny * 4);
    float *y = malloc(ny * 4), *dx = malloc(nx * 4), *dw = malloc(nw * 4);
    double *yr = malloc(ny * 8);
    for (int64_t i = 0; i < nx; i++) x[i] = urand();
    for (int64_t i = 0; i < nw; i++) w[i] = urand() * 0.3f;
    for (int64_t i = 0; i < ny; i++) dy[i] = urand();
    const double flops = 2.0 * N * K * C * 9 * Ho * Ho;
    /* reference forward once (a few images checked for the gradients) */
    ref_fwd(N, C, H, K, p, x, w, yr);
    for (int isa = isa_lo; isa < 3; isa++) {
        job j = {isa, 1, 0, {N, C, H, H, K, p, p, Ho, Ho}, x, w, dy, y, dx, dw};
        run(&j);
        double err = 0;
        for (int64_t i = 0; i < ny; i++) err = fmax(err, fabs(y[i] - yr[i]));
        /* the input gradient against a double loop over one image's pixels */
        job b = {isa, 1, 1, {N, K, Ho, Ho, C, 2 - p, 2 - p, H, H}, x, w, dy, y, dx, dw};
        run(&b);
        double errb = 0;
        for (int64_t n = 0; n < N; n += N - 1 > 0 ? N - 1 : 1)
            for (int64_t c = 0; c < C; c++)
                for (int64_t ih = 0; ih < H; ih++)
                    for (int64_t iw = 0; iw < H; iw++) {
                        double s = 0;
                        for (int64_t k = 0; k < K; k++)
                            for (int i = 0; i < 3; i++)
                                for (int jj = 0; jj < 3; jj++) {
                                    const int64_t oh = ih + p - i, ow = iw + p - jj;
                                    if (oh < 0 || ow < 0 || oh >= Ho || ow >= Ho) continue;
                                    s += (double)dy[((n * K + k) * Ho + oh) * Ho + ow] *
                                         w[((k * C + c) * 3 + i) * 3 + jj];
                                }
                        errb = fmax(errb, fabs(dx[((n * C + c) * H + ih) * H + iw] - s));
                    }
        job g = {isa, 1, 2, {N, C, H, H, K, p, p, Ho, Ho}, x, w, dy, y, dx, dw};
        run(&g);
        double errg = 0;
        for (int64_t k = 0; k < K; k++)
            for (int64_t c = 0; c < C; c++)
                for (int i = 0; i < 3; i++)
                    for (int jj = 0; jj < 3; jj++) {
                        double s = 0;
                        for (int64_t n = 0; n < N; n++)
                            for (int64_t oh = 0; oh < Ho; oh++)
                                for (int64_t ow = 0; ow < Ho; ow++) {
                                    const int64_t ih = oh + i - p, iw = ow + jj - p;
                                    if (ih < 0 || iw < 0 || ih >= H || iw >= H) continue;
                                    s += (double)dy[((n * K + k) * Ho + oh) * Ho + ow] *
                                         x[((n * C + c) * H + ih) * H + iw];
                                }
                        errg = fmax(errg, fabs(dw[((k * C + c) * 3 + i) * 3 + jj] - s) /
                                              (1 + fabs(s)));
                    }
        /* two threads give the same bits */
        float *y2 = malloc(ny * 4), *dx2 = malloc(nx * 4), *dw2 = malloc(nw * 4);
        job j2 = j, b2 = b, g2 = g;
        j2.nt = b2.nt = g2.nt = 2;
        j2.y = y2, b2.dx = dx2, g2.dw = dw2;
        run(&j2), run(&b2), run(&g2);
        const int same = !memcmp(y, y2, ny * 4) && !memcmp(dx, dx2, nx * 4) &&
                         !memcmp(dw, dw2, nw * 4);
        free(y2), free(dx2), free(dw2);
        printf("N%lld C%lld %lldx%lld K%lld pad%lld %-7s err fwd %.1e dx %.1e dw %.1e%s\n",
               (long long)N, (long long)C, (long long)H, (long long)H, (long long)K,
               (long long)p, isa_name[isa], err, errb, errg,
               same ? "" : "  (2 threads differ!)");
        if (isa < 2) continue;
        for (int nt = 1; nt <= 2; nt++) {
            printf("   %d thr:", nt);
            for (int pass = 0; pass < 3; pass++) {
                job t = pass == 1 ? b : pass == 2 ? g : j;
                t.nt = nt;
                cpu_clock = nt == 1;
                double med, best = time_it(run, &t, 31, &med);
                printf("  %s %7.1f us (med %7.1f) %5.1f GF/s", pass == 0 ? "fwd" : pass == 1 ? "dx" : "dw",
                       best * 1e6, med * 1e6, flops / best * 1e-9);
            }
            printf("\n");
        }
    }
    free(x); free(w); free(dy); free(y); free(dx); free(dw); free(yr);
}

int main(int argc, char **argv) {
    if (argc >= 6) {
        for (int a = 1; a + 4 < argc; a += 5)
            shape(atoll(argv[a]), atoll(argv[a + 1]), atoll(argv[a + 2]), atoll(argv[a + 3]),
                  atoll(argv[a + 4]), 0);
        return 0;
    }
    shape(128, 16, 28, 16, 0, 0);
    shape(128, 16, 28, 16, 1, 0);
    shape(32, 3, 32, 32, 0, 2);
    shape(32, 3, 32, 32, 1, 2);
    return 0;
}
