/* Standalone timing of ember's float32 elementwise loops, per ISA table.

   The loops are taken from the built extension (its exported table getters), so
   this times exactly what ember runs, without Python, allocation or threads:
   each op is timed over n contiguous elements (a cache-resident 32K and 1M) on a
   preallocated, already-touched output, many times, and the minimum and median
   TSC cycles per element are printed.  Stable under load, unlike wall time.

   gcc -std=c11 -O2 -fopenmp -Isrc_c/include tools/bench_ew.c -ldl -lm -o /tmp/bench_ew
   PYLIB=$(.venv/bin/python -c "import sysconfig as s; print(s.get_config_var('LIBDIR') + '/' +
                                s.get_config_var('LDLIBRARY'))")
   /tmp/bench_ew $PYLIB ember/_C/elementwise.*.so [-isa generic|avx2|avx512] [-t threads] op ...
   (the extension needs libpython's symbols: the harness loads it first, globally)
   ops: a kernel name of the op lists (src_c/include/ember_ew_ops.h): unary (gelu,
   exp, nan_to_num, ...) or binary (add, div, max, fmax, ...); inputs are randn * 3 (unary), |randn| + 0.1 (divisor).
   With -t 2 the range is split in two 64-element-aligned halves, as src_c/nd.c does. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <x86intrin.h>
#include "ember_ew.h"

typedef const em_ew_table *(*getter)(void);
/* the kernels' names (the op lists' second column: gelu, max, fmax, nan_to_num, ...) */
#define KNAME_(C, k, ...) #k,
static const char *const un_names[] = {EW_UNARY_OPS(KNAME_) ""};
static const char *const bin_names[] = {EW_BINARY_OPS(KNAME_) ""};

static uint64_t rng = 88172645463325252ull;
static double urand(void) {
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return ((double)(rng >> 11) + 0.5) / 9007199254740992.0;
}
static double gauss(void) { return sqrt(-2 * log(urand())) * cos(6.283185307179586 * urand()); }
static int cmpd(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* one call of the loop over n elements, split over nt threads */
static void run(em_loop fn, int nargs, char **p, int64_t n, const void *aux, int nt) {
    int64_t s[3] = {4, 4, 4};
    int64_t chunk = ((n + nt - 1) / nt + 63) & ~(int64_t)63;
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int t = 0; t < nt; t++) {
        int64_t a = t * chunk, e = a + chunk < n ? a + chunk : n;
        if (a >= e) continue;
        char *q[3];
        for (int k = 0; k < nargs; k++) q[k] = p[k] + a * 4;
        fn(q, s, e - a, aux);
    }
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s libpython.so elementwise.so [-isa I] [-t N] op ...\n", argv[0]);
        return 2;
    }
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
    h = h ? dlopen(argv[2], RTLD_NOW | RTLD_LOCAL) : NULL;
    if (!h) { fprintf(stderr, "%s\n", dlerror()); return 1; }
    const char *isa = "avx512";
    int nt = 1, a = 3;
    for (; a < argc && argv[a][0] == '-'; a += 2) {
        if (!strcmp(argv[a], "-isa")) isa = argv[a + 1];
        else if (!strcmp(argv[a], "-t")) nt = atoi(argv[a + 1]);
    }
    char sym[64];
    snprintf(sym, sizeof sym, "em_ew_table_%s", isa);
    getter g = (getter)dlsym(h, sym);
    if (!g) { fprintf(stderr, "no %s\n", sym); return 1; }
    const em_ew_table *tab = g();
    const int64_t N = 1 << 20;
    float *x = aligned_alloc(64, N * 4), *y = aligned_alloc(64, N * 4), *o = aligned_alloc(64, N * 4);
    for (int64_t i = 0; i < N; i++) {
        x[i] = (float)(gauss() * 3);
        y[i] = (float)(fabs(gauss()) + 0.1);
        o[i] = 0;
    }
    /* parameters of the parametric unary loops: nan_to_num {0, max, lowest}, softplus
       {beta 1, threshold 20}, elu {alpha 1, scale 1, input scale 1}, leaky_relu slope */
    double aux[4] = {1.0, 20.0, 1.0, 0.01};
    printf("%s, %d thread(s); TSC cycles per element, min / median\n", isa, nt);
    for (; a < argc; a++) {
        em_loop fn = NULL;
        int nargs = 0;
        for (int op = 0; op < EW_NUN && !fn; op++)
            if (!strcmp(un_names[op], argv[a])) fn = tab->un[op][EM_F32], nargs = 2;
        for (int op = 0; op < EW_NBIN && !fn; op++)
            if (!strcmp(bin_names[op], argv[a])) fn = tab->bin[op][EM_F32], nargs = 3;
        if (!fn) { printf("  %-12s not found\n", argv[a]); continue; }
        if (!strcmp(argv[a], "nan_to_num")) { aux[0] = 0.0; aux[1] = 3.4028234663852886e38; aux[2] = -aux[1]; }
        char *p[3] = {(char *)o, (char *)x, (char *)y};
        printf("  %-12s", argv[a]);
        for (int sz = 0; sz < 2; sz++) {
            int64_t n = sz ? N : 32768;
            int reps = sz ? 101 : 501;
            double t[501];
            for (int r = 0; r < 3; r++) run(fn, nargs, p, n, aux, nt);
            for (int r = 0; r < reps; r++) {
                uint64_t c0 = __rdtsc();
                run(fn, nargs, p, n, aux, nt);
                t[r] = (double)(__rdtsc() - c0) / n;
            }
            qsort(t, reps, sizeof(double), cmpd);
            printf("  n=%-7ld %.3f / %.3f", (long)n, t[0], t[reps / 2]);
        }
        printf("\n");
    }
    return 0;
}
