/* Random numbers: the twin of src_c/philox.c, producing the same streams.
   One thread per Philox block: it computes the block's four words with the
   shared em_philox_words() and feeds the elements the CPU layout gives them
   (ember_random.h) through the shared em_philox_block_*() transforms.  The
   host entry points emc_rand_*_host run the very same per-block function on
   the CPU, which is how the CPU tests prove the streams equal.  Compiled with
   -fmad=false: float results are the same bits as the CPU's (lognormal and
   cauchy call expf/tanf, whose last bit may differ from glibc's). */
#include "common.cuh"
#include "ember_philox.h"
#include "ember_random.h"

#define PB EM_PHILOX_BATCH

/* store one value into element e of any dtype, as the CPU's store_f32/f64/i64 do */
EMBER_HD static inline void put_f32(int dt, void *out, int64_t e, float v) {
    switch (dt) {
    case EM_F32: ((float *)out)[e] = v; break;
    case EM_F64: ((double *)out)[e] = v; break;
#ifdef __CUDA_ARCH__
    case EM_F16: ((__half *)out)[e] = __float2half_rn(v); break;
    case EM_BF16: ((__nv_bfloat16 *)out)[e] = __float2bfloat16_rn(v); break;
#else
    case EM_F16: ((uint16_t *)out)[e] = em_f2h(v); break;
    case EM_BF16: ((uint16_t *)out)[e] = em_f2bf(v); break;
#endif
    default: break;
    }
}

EMBER_HD static inline void put_i64(int dt, void *out, int64_t e, int64_t v) {
    switch (dt) {
    case EM_I64: ((int64_t *)out)[e] = v; break;
    case EM_I32: ((int32_t *)out)[e] = (int32_t)v; break;
    case EM_I16: ((int16_t *)out)[e] = (int16_t)v; break;
    case EM_I8: ((int8_t *)out)[e] = (int8_t)v; break;
    case EM_U8: ((uint8_t *)out)[e] = (uint8_t)v; break;
    case EM_BOOL: ((uint8_t *)out)[e] = v != 0; break;
    case EM_F64: ((double *)out)[e] = (double)v; break;
    default: put_f32(dt, out, e, (float)v); break;
    }
}

EMBER_HD static inline void put_f64(int dt, void *out, int64_t e, double v) {
    switch (dt) {
    case EM_F64: ((double *)out)[e] = v; break;
    case EM_F32: case EM_F16: case EM_BF16: put_f32(dt, out, e, (float)v); break;
    default: put_i64(dt, out, e, (int64_t)v); break;
    }
}

/* the elements of block b (global block index), for each source width */
EMBER_HD static inline void float_block(int kind, int dt, void *out, int64_t n, uint64_t b,
                                        uint64_t seed, uint64_t off, double a, double bb,
                                        bool single, int bits) {
    uint32_t w[4];
    em_philox_words(b, off, seed, w);
    const int64_t batch = (int64_t)(b / PB), j = (int64_t)(b % PB);
    if (single) {
        float v[4];
        em_philox_block_f32(kind, w, bits, a, bb, v);
        for (int l = 0; l < 4; l++) {
            int64_t e = batch * 4 * PB + l * PB + j;
            if (e < n) put_f32(dt, out, e, v[l]);
        }
    } else {
        double v[2];
        em_philox_block_f64(kind, w, a, bb, v);
        for (int h = 0; h < 2; h++) {
            int64_t e = batch * 2 * PB + h * PB + j;
            if (e < n) put_f64(dt, out, e, v[h]);
        }
    }
}

EMBER_HD static inline void int_block(int dt, void *out, int64_t n, uint64_t b, uint64_t seed,
                                      uint64_t off, int64_t lo, uint64_t range, bool narrow) {
    uint32_t w[4];
    em_philox_words(b, off, seed, w);
    const int64_t batch = (int64_t)(b / PB), j = (int64_t)(b % PB);
    if (narrow) {
        int64_t v[4];
        em_philox_block_i32(w, lo, range, v);
        for (int l = 0; l < 4; l++) {
            int64_t e = batch * 4 * PB + l * PB + j;
            if (e < n) put_i64(dt, out, e, v[l]);
        }
    } else {
        int64_t v[2];
        em_philox_block_i64(w, lo, range, v);
        for (int h = 0; h < 2; h++) {
            int64_t e = batch * 2 * PB + h * PB + j;
            if (e < n) put_i64(dt, out, e, v[h]);
        }
    }
}

/* the CPU's choices: one word per element for float32/16/bf16 outputs (not
   geometric), two for the rest; uniform keeps the destination's mantissa bits */
static bool single_word(int kind, int dt) {
    return (dt == EM_F32 || dt == EM_F16 || dt == EM_BF16) && kind != EM_RD_GEOMETRIC;
}
static int mant_bits(int dt) { return dt == EM_F32 ? 24 : dt == EM_F16 ? 11 : 8; }
static int64_t nblocks(int64_t n, bool single) {
    int64_t per = single ? 4 * PB : 2 * PB;
    return (n + per - 1) / per * PB;
}

__global__ void rand_float_kernel(int kind, int dt, void *out, int64_t n, int64_t nb,
                                  uint64_t seed, uint64_t off, double a, double b, bool single,
                                  int bits) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < nb;
         i += (int64_t)gridDim.x * blockDim.x)
        float_block(kind, dt, out, n, (uint64_t)i, seed, off, a, b, single, bits);
}

__global__ void rand_int_kernel(int dt, void *out, int64_t n, int64_t nb, uint64_t seed,
                                uint64_t off, int64_t lo, uint64_t range, bool narrow) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < nb;
         i += (int64_t)gridDim.x * blockDim.x)
        int_block(dt, out, n, (uint64_t)i, seed, off, lo, range, narrow);
}

static bool valid_kind(int kind) { return kind >= EM_RD_UNIFORM && kind <= EM_RD_GEOMETRIC; }
/* real dtypes only (the CPU generator has no complex sampler) */
static bool real_dtype(int dt) { return dt >= 0 && dt < EM_C64; }

EMC_API int emc_rand_float(int kind, int dtype, void *out, int64_t n, uint64_t seed,
                           uint64_t offset, double a, double b, void *stream) {
    if (!valid_kind(kind)) return emc_set_error(EMC_E_OP, "emc_rand_float");
    if (!real_dtype(dtype)) return emc_set_error(EMC_E_DTYPE, "emc_rand_float");
    if (n <= 0) return 0;
    bool single = single_word(kind, dtype);
    int64_t nb = nblocks(n, single);
    rand_float_kernel<<<emc_blocks(nb), EMC_THREADS, 0, emc_stream(stream)>>>(
        kind, dtype, out, n, nb, seed, offset, a, b, single, mant_bits(dtype));
    EMC_LAUNCHED("emc_rand_float");
    return 0;
}

EMC_API int emc_rand_int(int dtype, void *out, int64_t n, uint64_t seed, uint64_t offset,
                         int64_t lo, uint64_t range, void *stream) {
    if (!real_dtype(dtype)) return emc_set_error(EMC_E_DTYPE, "emc_rand_int");
    if (n <= 0) return 0;
    bool narrow = range != 0 && range <= ((uint64_t)1 << 32);
    int64_t nb = nblocks(n, narrow);
    rand_int_kernel<<<emc_blocks(nb), EMC_THREADS, 0, emc_stream(stream)>>>(
        dtype, out, n, nb, seed, offset, lo, range, narrow);
    EMC_LAUNCHED("emc_rand_int");
    return 0;
}

EMC_API int emc_rand_float_host(int kind, int dtype, void *out, int64_t n, uint64_t seed,
                                uint64_t offset, double a, double b) {
    if (!valid_kind(kind)) return emc_set_error(EMC_E_OP, "emc_rand_float_host");
    if (!real_dtype(dtype)) return emc_set_error(EMC_E_DTYPE, "emc_rand_float_host");
    bool single = single_word(kind, dtype);
    int64_t nb = n > 0 ? nblocks(n, single) : 0;
    for (int64_t i = 0; i < nb; i++)
        float_block(kind, dtype, out, n, (uint64_t)i, seed, offset, a, b, single,
                    mant_bits(dtype));
    return 0;
}

EMC_API int emc_rand_int_host(int dtype, void *out, int64_t n, uint64_t seed, uint64_t offset,
                              int64_t lo, uint64_t range) {
    if (!real_dtype(dtype)) return emc_set_error(EMC_E_DTYPE, "emc_rand_int_host");
    bool narrow = range != 0 && range <= ((uint64_t)1 << 32);
    int64_t nb = n > 0 ? nblocks(n, narrow) : 0;
    for (int64_t i = 0; i < nb; i++)
        int_block(dtype, out, n, (uint64_t)i, seed, offset, lo, range, narrow);
    return 0;
}

/* bernoulli(p) and dropout: one word per element, keep/one when w < thresh */
__global__ void bern_kernel(int dt, void *out, int64_t n, int64_t nb, uint64_t seed,
                            uint64_t off, uint64_t th) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < nb;
         i += (int64_t)gridDim.x * blockDim.x) {
        uint32_t w[4];
        em_philox_words((uint64_t)i, off, seed, w);
        const int64_t batch = i / PB, j = i % PB;
        for (int l = 0; l < 4; l++) {
            int64_t e = batch * 4 * PB + l * PB + j;
            if (e < n) put_i64(dt, out, e, (uint64_t)w[l] < th ? 1 : 0);
        }
    }
}

template <typename T>
__global__ void dropout_kernel(const T *x, T *out, uint8_t *mask, int64_t n, int64_t nb,
                               uint64_t seed, uint64_t off, uint64_t th, double scale) {
    typedef typename Acc<T>::type A;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < nb;
         i += (int64_t)gridDim.x * blockDim.x) {
        uint32_t w[4];
        em_philox_words((uint64_t)i, off, seed, w);
        const int64_t batch = i / PB, j = i % PB;
        for (int l = 0; l < 4; l++) {
            int64_t e = batch * 4 * PB + l * PB + j;
            if (e >= n) continue;
            bool keep = (uint64_t)w[l] >= th;
            mask[e] = keep;
            st<T, A>(out + e, keep ? ld<T, A>(x + e) * (A)scale : (A)0);
        }
    }
}

EMC_API int emc_rand_bernoulli(int dtype, void *out, int64_t n, uint64_t seed, uint64_t offset,
                               double p, void *stream) {
    if (!real_dtype(dtype)) return emc_set_error(EMC_E_DTYPE, "emc_rand_bernoulli");
    if (n <= 0) return 0;
    int64_t nb = nblocks(n, true);
    bern_kernel<<<emc_blocks(nb), EMC_THREADS, 0, emc_stream(stream)>>>(
        dtype, out, n, nb, seed, offset, em_prob_threshold(p));
    EMC_LAUNCHED("emc_rand_bernoulli");
    return 0;
}

EMC_API int emc_dropout(int dtype, const void *x, void *out, uint8_t *mask, int64_t n, double p,
                        uint64_t seed, uint64_t offset, void *stream) {
    if (n <= 0) return 0;
    int64_t nb = nblocks(n, true);
    double scale = p >= 1 ? 0.0 : 1.0 / (1.0 - p);
    uint64_t th = em_prob_threshold(p);
    cudaStream_t s = emc_stream(stream);
    EMC_FLOAT_TYPES(dtype, dropout_kernel<T><<<emc_blocks(nb), EMC_THREADS, 0, s>>>(
        (const T *)x, (T *)out, mask, n, nb, seed, offset, th, scale));
    EMC_LAUNCHED("emc_dropout");
    return 0;
}
