/* Standalone timing of ember's float64 pow, atan2 and reciprocal loops (the
   AVX-512 and AVX2 kernel tables, one thread) against the SLEEF kernels that
   torch calls (Sleef_powd8_u10, Sleef_atan2d8_u10, from libtorch_cpu.so when its
   path is given).  Cycles per element from rdtsc, the minimum of many runs: far
   steadier on a loaded machine than Python wall time.  Sizes: 4096 elements
   (cache-resident) and 1M (the ops64 rows: memory traffic counts).

   gcc -std=c11 -O3 -fopenmp -fno-math-errno -fno-trapping-math -Isrc_c/include \
       tools/bench_math_f64.c src_c/ew_generic.c src_c/ew_avx2.c src_c/ew_avx512.c \
       src_c/complex.c src_c/cpu.c -lm -ldl -o /tmp/bench_math_f64
   /tmp/bench_math_f64 [path/to/libtorch_cpu.so] */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <immintrin.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <x86intrin.h>
#include "ember_ew.h"

typedef __m512d (*sleef2)(__m512d, __m512d);
static double *X, *Y, *O;
static sleef2 sl_fn;

__attribute__((target("avx512f"))) static void sleef_loop(int64_t n) {
    for (int64_t i = 0; i < n; i += 8)
        _mm512_storeu_pd(O + i, sl_fn(_mm512_loadu_pd(X + i), _mm512_loadu_pd(Y + i)));
}

/* cycles per element of one call on n elements, the best of reps */
static double cycles(em_loop f, int64_t n, int reps) {
    char *p[3] = {(char *)O, (char *)X, (char *)Y};
    const int64_t s[3] = {8, 8, 8};
    uint64_t best = ~0ULL;
    for (int r = 0; r < reps; r++) {
        uint64_t t0 = __rdtsc();
        if (f) f(p, s, n, NULL); else sleef_loop(n);
        uint64_t t = __rdtsc() - t0;
        best = t < best ? t : best;
    }
    return (double)best / (double)n;
}

int main(int argc, char **argv) {
    void *lib = argc > 1 ? dlopen(argv[1], RTLD_NOW | RTLD_LOCAL) : NULL;
    if (argc > 1 && !lib) fprintf(stderr, "%s\n", dlerror());
    const int64_t big = 1 << 20;
    X = aligned_alloc(64, big * 8);
    Y = aligned_alloc(64, big * 8);
    O = aligned_alloc(64, big * 8);
    const em_ew_table *t512 = em_ew_table_avx512(), *t2 = em_ew_table_avx2();
    struct { const char *name, *sleef; em_loop f512, f2; } ops[] = {
        {"pow(x, y)", "Sleef_powd8_u10", t512->bin[EW_POW][EM_F64], t2->bin[EW_POW][EM_F64]},
        {"atan2", "Sleef_atan2d8_u10", t512->bin[EW_ATAN2][EM_F64], t2->bin[EW_ATAN2][EM_F64]},
        {"reciprocal", NULL, t512->un[EW_RECIP][EM_F64], t2->un[EW_RECIP][EM_F64]},
    };
    printf("cycles/element (rdtsc), min of runs, 1 thread\n");
    printf("%-12s %8s %10s %10s %10s\n", "op", "n", "avx512", "avx2", "sleef8");
    for (int k = 0; k < 3; k++) {
        /* ops64's inputs: x ~ N(0, 9) (atan2's y), |N(0, 9)| + 0.01 (pow's base, atan2's x) */
        srand(1);
        for (int64_t i = 0; i < big; i++) {
            double u = (rand() + 0.5) / ((double)RAND_MAX + 1), v = (rand() + 0.5) / ((double)RAND_MAX + 1);
            double g = sqrt(-2 * log(u)) * cos(6.283185307179586 * v) * 3;
            X[i] = k == 1 ? g : fabs(g) + 0.01;
            Y[i] = k == 1 ? fabs(g) + 0.01 : g;
        }
        sl_fn = lib && ops[k].sleef ? (sleef2)dlsym(lib, ops[k].sleef) : NULL;
        for (int64_t n = 4096; n <= big; n *= 256) {
            int reps = n == big ? 40 : 4000;
            printf("%-12s %8lld %10.2f %10.2f", ops[k].name, (long long)n, cycles(ops[k].f512, n, reps),
                   cycles(ops[k].f2, n, reps));
            if (sl_fn) printf(" %10.2f", cycles(NULL, n, reps));
            printf("\n");
        }
    }
    return 0;
}
