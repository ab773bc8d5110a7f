/* Random numbers: the twin of src_c/philox.c, producing the same streams.
   One thread per Philox block: it computes the block's four words with the
   shared em_philox_words() and feeds the elements the CPU layout gives them
   (ember_random.h) through the shared em_philox_block_*() transforms.  The
   host entry points emc_rand_*_host run the very same per-block function on
   the CPU, which is how the CPU tests prove the streams equal.  Compiled with
   -fmad=false: float results are the same bits as the CPU's (lognormal and
   cauchy call expf/tanf, whose last bit may differ from glibc's). */
#include <stdlib.h>
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

/* --- serial streams: randperm and multinomial ---------------------------------
   The CPU draws these words one after another from block 0 (ember_random.h's
   layout: word m is lane (m % 4PB) / PB of block (m / 4PB) PB + m % PB). */
EMBER_HD static inline uint32_t stream_word(uint64_t m, uint64_t blk0, uint64_t seed,
                                            uint64_t off) {
    uint32_t w[4];
    const uint64_t r = m % (4 * PB);
    em_philox_words(blk0 + m / (4 * PB) * PB + r % PB, off, seed, w);
    return w[r / PB];
}

/* randperm: the CPU's Fisher-Yates for i = n-1 .. 1 swaps out[i] with out[H[i]],
   H[i] = (word (n-1-i) * (i+1)) >> 32.  Steps touching distinct places commute,
   so each round runs every step that no earlier pending step touches (the
   pending steps reserve their two places with atomicMax of (round, i)); the
   result is the sequential one, in O(log n) rounds with high probability. */
/* the place step i (>= 1) of randperm(n) swaps out[i] with */
EMBER_HD static inline int64_t perm_partner(int64_t i, int64_t n, uint64_t seed, uint64_t off) {
    return (int64_t)(((uint64_t)stream_word((uint64_t)(n - 1 - i), 0, seed, off) *
                      (uint64_t)(i + 1)) >> 32);
}

__global__ void perm_init(int64_t *out, int64_t *H, unsigned long long *R, int64_t n,
                          uint64_t seed, uint64_t off) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        out[i] = i;
        R[i] = 0;
        H[i] = i == 0 ? -1 : perm_partner(i, n, seed, off);
    }
}

/* the pending steps are items t < m: step list[t], or step t without a list */
__device__ __forceinline__ int64_t perm_step(const int64_t *list, int64_t t) {
    return list ? list[t] : t;
}

__global__ void perm_reserve(const int64_t *H, const int64_t *list, int64_t m,
                             unsigned long long *R, unsigned long long round) {
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < m;
         t += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = perm_step(list, t), j = H[i];
        if (j < 0) continue;
        const unsigned long long stamp = (round << 33) | (unsigned long long)i;
        atomicMax(R + i, stamp);
        atomicMax(R + j, stamp);
    }
}

/* pending (when given) counts the steps left pending */
__global__ void perm_commit(int64_t *out, int64_t *H, const unsigned long long *R,
                            const int64_t *list, int64_t m, unsigned long long round,
                            unsigned long long *pending) {
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < m;
         t += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = perm_step(list, t), j = H[i];
        if (j < 0) continue;
        const unsigned long long stamp = (round << 33) | (unsigned long long)i;
        if (R[i] == stamp && R[j] == stamp) {
            const int64_t v = out[i];
            out[i] = out[j];
            out[j] = v;
            H[i] = -1;
        } else if (pending) {
            atomicAdd(pending, 1ULL);
        }
    }
}

/* next = the pending steps among the items (any order: a round's outcome does
   not depend on the order its steps run in); *cnt counts them */
__global__ void perm_gather(const int64_t *H, const int64_t *list, int64_t m, int64_t *next,
                            unsigned long long *cnt) {
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < m;
         t += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = perm_step(list, t);
        if (H[i] >= 0) next[atomicAdd(cnt, 1ULL)] = i;
    }
}

EMC_API int emc_randperm(int64_t *out, int64_t n, uint64_t seed, uint64_t offset, void *stream) {
    /* beyond 2^32 the CPU draws two words per step in a compiler-defined order */
    if (n < 0 || n > ((int64_t)1 << 32)) return emc_set_error(EMC_E_ARG, "emc_randperm");
    if (n == 0) return 0;
    cudaStream_t s = emc_stream(stream);
    char *buf = NULL;
    int rc = emc_malloc((void **)&buf, (size_t)n * 16 + 16, s);
    if (rc) return rc;
    int64_t *H = (int64_t *)buf;
    unsigned long long *R = (unsigned long long *)(buf + (size_t)n * 8);
    unsigned long long *pending = (unsigned long long *)(buf + (size_t)n * 16);
    perm_init<<<emc_blocks(n), EMC_THREADS, 0, s>>>(out, H, R, n, seed, offset);
    unsigned long long left = 1;
    cudaError_t e = cudaGetLastError();
    /* rounds in batches over the items (all steps, then a list of the pending
       ones once it is much shorter), then a look at how many steps are left */
    int64_t *list = NULL, m = n;
    for (unsigned long long round = 1; left > 0 && e == cudaSuccess;) {
        const unsigned g = emc_blocks(m);
        for (int b = 0; b < 8; b++, round++) {
            /* only the batch's last round counts the steps left */
            if (b == 7) cudaMemsetAsync(pending, 0, sizeof(*pending), s);
            perm_reserve<<<g, EMC_THREADS, 0, s>>>(H, list, m, R, round);
            perm_commit<<<g, EMC_THREADS, 0, s>>>(out, H, R, list, m, round,
                                                  b == 7 ? pending : NULL);
        }
        e = cudaMemcpyAsync(&left, pending, sizeof(left), cudaMemcpyDeviceToHost, s);
        if (e == cudaSuccess) e = cudaStreamSynchronize(s);
        if (e == cudaSuccess) e = cudaGetLastError();
        int64_t *next = NULL;
        if (e == cudaSuccess && left > 0 && (int64_t)left <= m / 4 &&
            emc_malloc((void **)&next, sizeof(int64_t) * (size_t)left, s) == 0) {
            cudaMemsetAsync(pending, 0, sizeof(*pending), s);
            perm_gather<<<g, EMC_THREADS, 0, s>>>(H, list, m, next, pending);
            emc_free(list);
            list = next;
            m = (int64_t)left;
        }
    }
    emc_free(list);
    emc_free(buf);
    if (e != cudaSuccess) return emc_set_error((int)e, "emc_randperm");
    return 0;
}

template <typename T> EMBER_HD static inline double mn_val(const T *p) {
    if constexpr (sizeof(T) == 2) return (double)to_f(*p); else return (double)*p;
}

/* one row: the CPU's checks (0 fine, 1 inf/nan/negative, 2 zero sum, 3 too few
   nonzero without replacement), and with replacement the running CDF and the
   last category with p > 0 */
template <typename T>
EMBER_HD static inline int mn_scan_row(const T *p, int64_t ncat, int64_t nsamp, bool repl,
                                       double *cdf, int64_t *last) {
    double acc = 0;
    int64_t nz = 0, lp = 0;
    for (int64_t i = 0; i < ncat; i++) {
        const double v = mn_val(p + i);
        if (!(v >= 0) || isinf(v)) return 1;
        acc += v;
        if (v > 0) { nz++; lp = i; }
        if (repl) cdf[i] = acc;
    }
    if (repl) *last = lp;
    if (!(acc > 0)) return 2;
    if (!repl && nz < nsamp) return 3;
    return 0;
}

/* with replacement: sample k of a row takes words 2k (high) and 2k + 1 */
EMBER_HD static inline int64_t mn_draw_one(const double *c, int64_t ncat, int64_t last, int64_t k,
                                           uint64_t b0, uint64_t seed, uint64_t off) {
    const uint32_t hi = stream_word(2 * (uint64_t)k, b0, seed, off);
    const uint32_t lo = stream_word(2 * (uint64_t)k + 1, b0, seed, off);
    const double u = em_w53(hi, lo) * 0x1p-53 * c[ncat - 1];
    int64_t a = 0, b = ncat;   /* the first i with cdf[i] > u */
    while (a < b) {
        const int64_t m = a + (b - a) / 2;
        if (c[m] > u) b = m; else a = m + 1;
    }
    return a < ncat ? a : last;
}

/* without replacement: category i's key E_i / p_i of the exponential race; the
   CPU builds u from words (2i + 1, 2i) as (high, low) */
EMBER_HD static inline double mn_key(double v, int64_t i, uint64_t b0, uint64_t seed,
                                     uint64_t off) {
    const uint32_t lo = stream_word(2 * (uint64_t)i, b0, seed, off);
    const uint32_t hi = stream_word(2 * (uint64_t)i + 1, b0, seed, off);
    const double u = (em_w53(hi, lo) + 0.5) * 0x1p-53;
    return v > 0 ? -em_log_pos(u) / v : (double)INFINITY;
}

/* per row: mn_scan_row; the code of the first bad row goes to *key as
   row * 4 + code (atomicMin) */
template <typename T>
__global__ void mn_scan(const T *p, int64_t rows, int64_t ncat, int64_t nsamp, bool repl,
                        double *cdf, int64_t *last, unsigned long long *key) {
    for (int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r < rows;
         r += (int64_t)gridDim.x * blockDim.x) {
        const int code = mn_scan_row(p + r * ncat, ncat, nsamp, repl, repl ? cdf + r * ncat : NULL,
                                     last + r);
        if (code) atomicMin(key, (unsigned long long)r * 4 + (unsigned long long)code);
    }
}

__global__ void mn_status(const unsigned long long *key, int *status) {
    *status = *key == ~0ULL ? 0 : (int)(*key % 4);
}

__global__ void mn_draw(const double *cdf, const int64_t *last, int64_t rows, int64_t ncat,
                        int64_t nsamp, uint64_t row_blocks, uint64_t seed, uint64_t off,
                        int64_t *out) {
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < rows * nsamp;
         t += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = t / nsamp, k = t - r * nsamp;
        out[t] = mn_draw_one(cdf + r * ncat, ncat, last[r], k, (uint64_t)r * row_blocks, seed,
                             off);
    }
}

template <typename T>
__global__ void mn_keys(const T *p, int64_t rows, int64_t ncat, uint64_t row_blocks,
                        uint64_t seed, uint64_t off, double *keys) {
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < rows * ncat;
         t += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = t / ncat, i = t - r * ncat;
        keys[t] = mn_key(mn_val(p + t), i, (uint64_t)r * row_blocks, seed, off);
    }
}

__global__ void mn_take(const int64_t *order, int64_t rows, int64_t ncat, int64_t nsamp,
                        int64_t *out) {
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < rows * nsamp;
         t += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = t / nsamp, k = t - r * nsamp;
        out[t] = order[r * ncat + k];
    }
}

int emc_sort_f64_keys(const double *keys, int64_t rows, int64_t n, int desc, int64_t *iout,
                      cudaStream_t s);

EMC_API int emc_multinomial(int dtype, const void *p, int64_t rows, int64_t ncat, int64_t nsamp,
                            int replacement, int64_t *out, uint64_t seed, uint64_t offset,
                            int *status, void *stream) {
    if (!(dtype == EM_F32 || dtype == EM_F64 || dtype == EM_F16 || dtype == EM_BF16))
        return emc_set_error(EMC_E_DTYPE, "emc_multinomial");
    if (rows < 0 || ncat <= 0 || nsamp <= 0 || (!replacement && nsamp > ncat))
        return emc_set_error(EMC_E_ARG, "emc_multinomial");
    cudaStream_t s = emc_stream(stream);
    if (rows == 0) {
        if (status) EMC_CHECK(cudaMemsetAsync(status, 0, sizeof(int), s), "emc_multinomial");
        return 0;
    }
    const int64_t words = 2 * (replacement ? nsamp : ncat);
    const uint64_t row_blocks = (uint64_t)((words + 4 * PB - 1) / (4 * PB)) * PB;
    /* scratch: the status key, last [rows], then cdf or keys [rows, ncat] and
       the sort order [rows, ncat] */
    const size_t head = 16 + (size_t)rows * 8;
    const size_t body = (size_t)(rows * ncat) * (replacement ? 8 : 16);
    char *buf = NULL;
    int rc = emc_malloc((void **)&buf, head + body, s);
    if (rc) return rc;
    unsigned long long *key = (unsigned long long *)buf;
    int64_t *last = (int64_t *)(buf + 16);
    double *dbl = (double *)(buf + head);
    int64_t *order = (int64_t *)(buf + head + (size_t)(rows * ncat) * 8);
    cudaMemsetAsync(key, 0xff, sizeof(unsigned long long), s);
    EMC_FLOAT_TYPES(dtype, {
        mn_scan<T><<<emc_blocks(rows), EMC_THREADS, 0, s>>>((const T *)p, rows, ncat, nsamp,
                                                            replacement != 0, dbl, last, key);
        if (!replacement)
            mn_keys<T><<<emc_blocks(rows * ncat), EMC_THREADS, 0, s>>>(
                (const T *)p, rows, ncat, row_blocks, seed, offset, dbl);
    })
    if (status) mn_status<<<1, 1, 0, s>>>(key, status);
    if (replacement) {
        mn_draw<<<emc_blocks(rows * nsamp), EMC_THREADS, 0, s>>>(dbl, last, rows, ncat, nsamp,
                                                                 row_blocks, seed, offset, out);
    } else {
        rc = emc_sort_f64_keys(dbl, rows, ncat, 0, order, s);
        if (!rc)
            mn_take<<<emc_blocks(rows * nsamp), EMC_THREADS, 0, s>>>(order, rows, ncat, nsamp,
                                                                     out);
    }
    cudaError_t e = cudaGetLastError();
    emc_free(buf);
    if (rc) return rc;
    if (e != cudaSuccess) return emc_set_error((int)e, "emc_multinomial");
    return 0;
}

/* the same draws on the host (host memory; p float64), for the CPU tests: the
   per-element functions above with a sequential Fisher-Yates and a host sort */
EMC_API int emc_randperm_host(int64_t *out, int64_t n, uint64_t seed, uint64_t offset) {
    if (n < 0 || n > ((int64_t)1 << 32)) return emc_set_error(EMC_E_ARG, "emc_randperm_host");
    for (int64_t i = 0; i < n; i++) out[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        const int64_t j = perm_partner(i, n, seed, offset), t = out[i];
        out[i] = out[j];
        out[j] = t;
    }
    return 0;
}

struct KeyIdx { double key; int64_t idx; };

static int key_idx_cmp(const void *a, const void *b) {
    const KeyIdx *x = (const KeyIdx *)a, *y = (const KeyIdx *)b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

EMC_API int emc_multinomial_host(const double *p, int64_t rows, int64_t ncat, int64_t nsamp,
                                 int replacement, int64_t *out, uint64_t seed, uint64_t offset,
                                 int *status) {
    if (rows < 0 || ncat <= 0 || nsamp <= 0 || (!replacement && nsamp > ncat))
        return emc_set_error(EMC_E_ARG, "emc_multinomial_host");
    const int64_t words = 2 * (replacement ? nsamp : ncat);
    const uint64_t row_blocks = (uint64_t)((words + 4 * PB - 1) / (4 * PB)) * PB;
    double *cdf = (double *)malloc(sizeof(double) * (size_t)ncat);
    KeyIdx *keys = (KeyIdx *)malloc(sizeof(KeyIdx) * (size_t)ncat);
    if (!cdf || !keys) {
        free(cdf);
        free(keys);
        return emc_set_error(EMC_E_NOMEM, "emc_multinomial_host");
    }
    *status = 0;
    for (int64_t r = 0; r < rows; r++) {
        int64_t last = 0;
        const int code = mn_scan_row(p + r * ncat, ncat, nsamp, replacement != 0, cdf, &last);
        if (code && !*status) *status = code;
        const uint64_t b0 = (uint64_t)r * row_blocks;
        if (replacement) {
            for (int64_t k = 0; k < nsamp; k++)
                out[r * nsamp + k] = mn_draw_one(cdf, ncat, last, k, b0, seed, offset);
        } else {
            for (int64_t i = 0; i < ncat; i++) {
                keys[i].key = mn_key(p[r * ncat + i], i, b0, seed, offset);
                keys[i].idx = i;
            }
            qsort(keys, (size_t)ncat, sizeof(KeyIdx), key_idx_cmp);
            for (int64_t k = 0; k < nsamp; k++) out[r * nsamp + k] = keys[k].idx;
        }
    }
    free(cdf);
    free(keys);
    return 0;
}
