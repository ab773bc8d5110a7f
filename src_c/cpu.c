/* Run-time CPU feature detection: one binary, the kernel ISA picked here. */
#include <stdlib.h>
#include <string.h>
#include "ember.h"
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

static int detected = -1;

int ember_cpu_has(const char *f) {
    __builtin_cpu_init();
    if (!strcmp(f, "avx2")) return __builtin_cpu_supports("avx2");
    if (!strcmp(f, "fma")) return __builtin_cpu_supports("fma");
    if (!strcmp(f, "avx512f")) return __builtin_cpu_supports("avx512f");
    if (!strcmp(f, "avx512bw")) return __builtin_cpu_supports("avx512bw");
    if (!strcmp(f, "avx512vl")) return __builtin_cpu_supports("avx512vl");
    if (!strcmp(f, "avx512dq")) return __builtin_cpu_supports("avx512dq");
    if (!strcmp(f, "f16c")) return __builtin_cpu_supports("f16c");
    if (!strcmp(f, "sse4.2")) return __builtin_cpu_supports("sse4.2");
    return 0;
}

int ember_cpu_isa(void) {
    if (detected >= 0) return detected;
    int isa = 0;
    if (ember_cpu_has("avx2") && ember_cpu_has("fma")) isa = 1;
    if (isa == 1 && ember_cpu_has("avx512f") && ember_cpu_has("avx512bw") &&
        ember_cpu_has("avx512vl") && ember_cpu_has("avx512dq")) isa = 2;
    const char *cap = getenv("EMBER_ISA");
    if (cap) {
        int want = !strcmp(cap, "generic") ? 0 : !strcmp(cap, "avx2") ? 1 : 2;
        if (want < isa) isa = want;
    }
    detected = isa;
    return isa;
}

const char *ember_isa_name(int isa) {
    return isa == 2 ? "avx512" : isa == 1 ? "avx2" : "generic";
}

int ember_set_flush_denormal(int on, int nthreads) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("sse3")) return 0;
    const unsigned bits = 0x8040; /* FTZ (bit 15) | DAZ (bit 6) */
    if (nthreads < 1) nthreads = 1;
    /* MXCSR is per thread: set it in each thread of the pool the kernels run on (the
       calling thread is the team's first) */
#pragma omp parallel num_threads(nthreads)
    {
        unsigned csr = _mm_getcsr();
        _mm_setcsr(on ? (csr | bits) : (csr & ~bits));
    }
    return 1;
#else
    (void)on;
    (void)nthreads;
    return 0;
#endif
}
