/* ember's C ABI: dtype codes, the inner-loop signature and the shared helpers.
   Nothing here knows about Python. */
#ifndef EMBER_H
#define EMBER_H
#include <stddef.h>
#include <stdint.h>

enum {
    EM_BOOL = 0, EM_U8, EM_I8, EM_I16, EM_I32, EM_I64, EM_F16, EM_BF16, EM_F32, EM_F64,
    EM_C64, EM_C128, /* complex: interleaved (re, im) pairs of float32 / float64 */
    EM_NDTYPES
};

static const int em_itemsize[EM_NDTYPES] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8, 8, 16};

/* a 16-byte element moved as one unit (complex128) */
typedef struct { uint64_t lo, hi; } em_b16;

/* NumPy-ufunc-style inner loop: ptrs[0] is the output, ptrs[1..] the inputs,
   strides in bytes, n elements, aux an op-specific constant block. */
typedef void (*em_loop)(char **ptrs, const int64_t *strides, int64_t n, const void *aux);

/* Walk an N-d iteration space calling `fn` on the innermost dimension.
   strides is [nargs][ndim] in bytes.  Work is split over nthreads by outer
   index (or by chunks of the inner dimension when there is only one row). */
void em_run_nd(em_loop fn, int nargs, char **ptrs, int ndim, const int64_t *shape,
               const int64_t *strides, const void *aux, int nthreads);

/* CPU features, detected once: 0 generic, 1 AVX2+FMA, 2 AVX-512. EMBER_ISA
   (generic|avx2|avx512) caps the choice. */
int ember_cpu_isa(void);
const char *ember_isa_name(int isa);
int ember_cpu_has(const char *feature);
/* Flush denormals to zero (MXCSR FTZ and DAZ) in the calling thread and every thread of
   an OpenMP team of nthreads; returns 0 where the CPU cannot (not x86 with SSE3). */
int ember_set_flush_denormal(int on, int nthreads);

/* Caching allocator: 64-byte aligned; blocks from 64 KiB are kept for reuse
   (split and merged, see alloc.c) so a fresh output does not fault in new pages.
   em_free takes the size em_alloc was given. */
void *em_alloc(size_t nbytes);
void em_free(void *p, size_t nbytes);
/* em_alloc_stats slots, over the cached blocks (from 64 KiB): bytes handed out
   and held (segments), their peaks, segments, free blocks, requests served
   from the cache (hits) or by a new segment (misses), splits, segments released */
enum { EM_ST_ALLOCATED, EM_ST_RESERVED, EM_ST_PEAK_ALLOCATED, EM_ST_PEAK_RESERVED,
       EM_ST_SEGMENTS, EM_ST_CACHED_BLOCKS, EM_ST_HITS, EM_ST_MISSES, EM_ST_SPLITS,
       EM_ST_RELEASED, EM_ALLOC_NSTATS };
void em_alloc_stats(int64_t *out, int n);
void em_alloc_reset_peak(void);
/* releases every wholly free segment */
void em_alloc_empty_cache(void);

/* dtype conversion: copy n elements src(dtype s) -> dst(dtype d), strided (bytes). */
em_loop em_cast_loop(int dst_dtype, int src_dtype);
/* fill n elements of dtype at stride with the value stored in *value (same dtype) */
void em_fill(int dtype, char *dst, int64_t stride, int64_t n, const void *value, int nthreads);

/* a * b for tensor sizes (a, b >= 0), or -1 when either is negative or the
   product does not fit in int64: every size product goes through this. */
static inline int64_t em_mul_size(int64_t a, int64_t b) {
    int64_t r;
    if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r)) return -1;
    return r;
}

/* half <-> float helpers */
static inline float em_h2f(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0) {
        if (man == 0) bits = sign;
        else { /* subnormal */
            int e = -1; do { e++; man <<= 1; } while (!(man & 0x400));
            bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ff) << 13);
        }
    } else if (exp == 31) bits = sign | 0x7f800000u | (man << 13);
    else bits = sign | ((exp + 112) << 23) | (man << 13);
    union { uint32_t u; float f; } v; v.u = bits; return v.f;
}
static inline uint16_t em_f2h(float f) {
    union { float f; uint32_t u; } v; v.f = f;
    uint32_t x = v.u, sign = (x >> 16) & 0x8000, absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u) return (uint16_t)(sign | 0x7c00 | (absx > 0x7f800000u ? 0x200 : 0));
    if (absx >= 0x477ff000u) return (uint16_t)(sign | 0x7c00); /* overflow -> inf */
    if (absx < 0x38800000u) { /* subnormal or zero: round to nearest even */
        if (absx < 0x33000000u) return (uint16_t)sign;
        uint32_t e = absx >> 23, m = (absx & 0x7fffff) | 0x800000;
        int shift = 126 - (int)e;
        uint32_t r = m >> (shift); uint32_t rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1))) r++;
        return (uint16_t)(sign | r);
    }
    uint32_t r = absx + 0xc8000fffu + ((absx >> 13) & 1); /* rebias and round to nearest even */
    return (uint16_t)(sign | (r >> 13));
}
static inline float em_bf2f(uint16_t h) { union { uint32_t u; float f; } v; v.u = (uint32_t)h << 16; return v.f; }
static inline uint16_t em_f2bf(float f) {
    union { float f; uint32_t u; } v; v.f = f;
    if ((v.u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((v.u >> 16) | 0x40);
    return (uint16_t)((v.u + 0x7fffu + ((v.u >> 16) & 1)) >> 16);
}
#endif
