/* index_select / embedding, index_add (embedding backward) and gather: the
   twins of src_c/index.c.  Indices are int64; negative ones wrap once; an index
   still out of range sets the device error flag (emc_check_index_error) and its
   output is left as zero. */
#include <string.h>
#include <type_traits>
#include "common.cuh"

__device__ __forceinline__ bool fix_index(int64_t &j, int64_t S, int *flag) {
    if (j < 0) j += S;
    if (j < 0 || j >= S) {
        if (flag) atomicExch(flag, 1);
        return false;
    }
    return true;
}

template <typename U>
__global__ void select_kernel(const U *src, int64_t O, int64_t S, int64_t I, const int64_t *idx,
                              int64_t n_idx, U *out, int *flag) {
    const int64_t total = O * n_idx * I;
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < total;
         t += (int64_t)gridDim.x * blockDim.x) {
        int64_t i = t % I, r = t / I, k = r % n_idx, o = r / n_idx;
        int64_t j = idx[k];
        out[t] = fix_index(j, S, flag) ? src[(o * S + j) * I + i] : U{};
    }
}


EMC_API int emc_index_select(int dtype, const void *src, int64_t O, int64_t S, int64_t I,
                             const int64_t *idx, int64_t n_idx, void *out, void *stream) {
    if (dtype < 0 || dtype >= EM_NDTYPES) return emc_set_error(EMC_E_DTYPE, "emc_index_select");
    int64_t total = O * n_idx * I;
    if (total == 0) return 0;
    int *flag = emc_error_flag();
    cudaStream_t s = emc_stream(stream);
    unsigned g = emc_blocks(total);
    switch (em_itemsize[dtype]) {
    case 1: select_kernel<<<g, EMC_THREADS, 0, s>>>((const uint8_t *)src, O, S, I, idx, n_idx, (uint8_t *)out, flag); break;
    case 2: select_kernel<<<g, EMC_THREADS, 0, s>>>((const uint16_t *)src, O, S, I, idx, n_idx, (uint16_t *)out, flag); break;
    case 4: select_kernel<<<g, EMC_THREADS, 0, s>>>((const uint32_t *)src, O, S, I, idx, n_idx, (uint32_t *)out, flag); break;
    case 16: select_kernel<<<g, EMC_THREADS, 0, s>>>((const uint4 *)src, O, S, I, idx, n_idx, (uint4 *)out, flag); break;
    default: select_kernel<<<g, EMC_THREADS, 0, s>>>((const uint64_t *)src, O, S, I, idx, n_idx, (uint64_t *)out, flag); break;
    }
    EMC_LAUNCHED("emc_index_select");
    return 0;
}

/* atomic variant: one thread per source element */
template <typename T>
__global__ void index_add_atomic(T *out, int64_t O, int64_t S, int64_t I, const int64_t *idx,
                                 int64_t n_idx, const T *src, int *flag) {
    const int64_t total = O * n_idx * I;
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < total;
         t += (int64_t)gridDim.x * blockDim.x) {
        int64_t i = t % I, r = t / I, k = r % n_idx, o = r / n_idx;
        int64_t j = idx[k];
        if (fix_index(j, S, flag)) atomicAdd(out + (o * S + j) * I + i, src[t]);
    }
}

/* --- deterministic sums: sort by target -----------------------------------------
   Each index position gets its target (-1 when out of range); the positions are
   sorted stably by target (radix sort of (target + 1, position) pairs, 32-bit
   when the targets and positions fit), so each target's positions form a run in
   index order, and one thread per (run, slice element) applies its run in that
   order: the serial result, the same on every launch. */
int emc_radix_sort32(const uint32_t *keys, int64_t n, int bits, uint32_t *kout, uint32_t *vout,
                     cudaStream_t s);
int emc_radix_sort64(const uint64_t *keys, int64_t n, int bits, uint64_t *kout, uint64_t *vout,
                     cudaStream_t s);

/* the sorted runs: keys (target + 1; 0 = out of range) and positions, 32 or 64 bits */
struct SortedRuns {
    const void *key, *pos;
    int wide;
    __device__ __forceinline__ int64_t tgt(int64_t q) const {
        return wide ? (int64_t)((const uint64_t *)key)[q] - 1
                    : (int64_t)((const uint32_t *)key)[q] - 1;
    }
    __device__ __forceinline__ int64_t at(int64_t q) const {
        return wide ? (int64_t)((const uint64_t *)pos)[q] : (int64_t)((const uint32_t *)pos)[q];
    }
    /* q starts a run of a real target: its target, else -1 */
    __device__ __forceinline__ int64_t run_start(int64_t q) const {
        const int64_t key = tgt(q);
        return key >= 0 && (q == 0 || tgt(q - 1) != key) ? key : -1;
    }
    /* the end of the run starting at q */
    __device__ __forceinline__ int64_t run_end(int64_t q, int64_t n, int64_t key) const {
        int64_t e = q + 1;
        while (e < n && tgt(e) == key) e++;
        return e;
    }
};

template <typename KT>
__global__ void target_keys(const int64_t *tgt, int64_t n, KT *keys) {
    for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < n;
         p += (int64_t)gridDim.x * blockDim.x)
        keys[p] = (KT)(tgt[p] + 1);
}

static int bit_length(uint64_t v) {
    int b = 0;
    while (b < 64 && (v >> b)) b++;
    return b;
}

/* sort the positions 0..n-1 of tgt (int64 in [-1, maxt]) stably by target into
   *r; *mem holds them until emc_free */
static int sort_targets(const int64_t *tgt, int64_t n, uint64_t maxt, SortedRuns *r, void **mem,
                        cudaStream_t s) {
    const int bits = bit_length(maxt == UINT64_MAX ? maxt : maxt + 1);
    const bool wide = bits > 32 || n > (int64_t)0xffffffffLL;
    const size_t w = wide ? 8 : 4;
    char *buf = NULL;
    int rc = emc_malloc((void **)&buf, 3 * w * (size_t)n, s);
    if (rc) return rc;
    void *keys = buf, *skeys = buf + w * n, *pos = buf + 2 * w * n;
    const unsigned g = emc_blocks(n);
    if (wide) {
        target_keys<uint64_t><<<g, EMC_THREADS, 0, s>>>(tgt, n, (uint64_t *)keys);
        rc = emc_radix_sort64((const uint64_t *)keys, n, bits, (uint64_t *)skeys,
                              (uint64_t *)pos, s);
    } else {
        target_keys<uint32_t><<<g, EMC_THREADS, 0, s>>>(tgt, n, (uint32_t *)keys);
        rc = emc_radix_sort32((const uint32_t *)keys, n, bits, (uint32_t *)skeys,
                              (uint32_t *)pos, s);
    }
    if (rc) {
        emc_free(buf);
        return rc;
    }
    r->key = skeys;
    r->pos = pos;
    r->wide = wide;
    *mem = buf;
    return 0;
}

__global__ void index_keys(const int64_t *idx, int64_t n, int64_t S, int64_t *keys, int *flag) {
    for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < n;
         p += (int64_t)gridDim.x * blockDim.x) {
        int64_t j = idx[p];
        keys[p] = fix_index(j, S, flag) ? j : -1;
    }
}

/* thread (o, run start, i) adds its run's source rows in index order, rounding to
   T after every add (the serial sum out[j] += src[k] over k) */
template <typename T>
__global__ void index_add_runs(T *out, int64_t O, int64_t S, int64_t I, SortedRuns sr,
                               int64_t n_idx, const T *src) {
    typedef typename Acc<T>::type A;
    const int64_t total = O * n_idx * I;
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < total;
         t += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = t % I, r = t / I, q = r % n_idx, o = r / n_idx;
        const int64_t key = sr.run_start(q);
        if (key < 0) continue;
        const int64_t e = sr.run_end(q, n_idx, key);
        T *d = out + (o * S + key) * I + i;
        const T *sb = src + o * n_idx * I + i;
        A acc = ld<T, A>(d);
#pragma unroll 4
        for (int64_t p = q; p < e; p++) {
            T sum;
            st<T, A>(&sum, acc + ld<T, A>(sb + sr.at(p) * I));
            acc = ld<T, A>(&sum);
        }
        st<T, A>(d, acc);
    }
}

static int index_add_sorted(int dtype, void *out, int64_t O, int64_t S, int64_t I,
                            const int64_t *idx, int64_t n_idx, const void *src, int *flag,
                            cudaStream_t s) {
    if (dtype != EM_F32 && dtype != EM_F64 && dtype != EM_F16 && dtype != EM_BF16)
        return emc_set_error(EMC_E_DTYPE, "emc_index_add");
    int64_t *keys = NULL;
    int rc = emc_malloc((void **)&keys, sizeof(int64_t) * (size_t)n_idx, s);
    if (rc) return rc;
    index_keys<<<emc_blocks(n_idx), EMC_THREADS, 0, s>>>(idx, n_idx, S, keys, flag);
    SortedRuns sr;
    void *mem = NULL;
    rc = sort_targets(keys, n_idx, (uint64_t)(S > 0 ? S - 1 : 0), &sr, &mem, s);
    if (!rc) {
        const unsigned g = emc_blocks(O * n_idx * I);
        switch (dtype) {
        case EM_F32: index_add_runs<float><<<g, EMC_THREADS, 0, s>>>((float *)out, O, S, I, sr, n_idx, (const float *)src); break;
        case EM_F64: index_add_runs<double><<<g, EMC_THREADS, 0, s>>>((double *)out, O, S, I, sr, n_idx, (const double *)src); break;
        case EM_F16: index_add_runs<__half><<<g, EMC_THREADS, 0, s>>>((__half *)out, O, S, I, sr, n_idx, (const __half *)src); break;
        default: index_add_runs<__nv_bfloat16><<<g, EMC_THREADS, 0, s>>>((__nv_bfloat16 *)out, O, S, I, sr, n_idx, (const __nv_bfloat16 *)src); break;
        }
        emc_free(mem);
    }
    cudaError_t e = cudaGetLastError();
    emc_free(keys);
    if (rc) return rc;
    if (e != cudaSuccess) return emc_set_error((int)e, "emc_index_add");
    return 0;
}

EMC_API int emc_index_add(int dtype, void *out, int64_t O, int64_t S, int64_t I,
                          const int64_t *idx, int64_t n_idx, const void *src, int deterministic,
                          void *stream) {
    if (O * n_idx * I == 0) return 0;
    int *flag = emc_error_flag();
    cudaStream_t s = emc_stream(stream);
    if (deterministic) {
        return index_add_sorted(dtype, out, O, S, I, idx, n_idx, src, flag, s);
    } else {
        unsigned g = emc_blocks(O * n_idx * I);
        switch (dtype) {
        case EM_F32: index_add_atomic<float><<<g, EMC_THREADS, 0, s>>>((float *)out, O, S, I, idx, n_idx, (const float *)src, flag); break;
        case EM_F64: index_add_atomic<double><<<g, EMC_THREADS, 0, s>>>((double *)out, O, S, I, idx, n_idx, (const double *)src, flag); break;
        case EM_F16: index_add_atomic<__half><<<g, EMC_THREADS, 0, s>>>((__half *)out, O, S, I, idx, n_idx, (const __half *)src, flag); break;
        case EM_BF16: index_add_atomic<__nv_bfloat16><<<g, EMC_THREADS, 0, s>>>((__nv_bfloat16 *)out, O, S, I, idx, n_idx, (const __nv_bfloat16 *)src, flag); break;
        default: return emc_set_error(EMC_E_DTYPE, "emc_index_add");
        }
    }
    EMC_LAUNCHED("emc_index_add");
    return 0;
}

template <typename U>
__global__ void gather_kernel(const U *src, int64_t O, int64_t S, int64_t I, const int64_t *idx,
                              int64_t J, U *out, int *flag) {
    const int64_t total = O * J * I;
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < total;
         t += (int64_t)gridDim.x * blockDim.x) {
        int64_t i = t % I, o = t / (J * I);
        int64_t j = idx[t];
        out[t] = fix_index(j, S, flag) ? src[(o * S + j) * I + i] : U{};
    }
}

EMC_API int emc_gather(int dtype, const void *src, int64_t O, int64_t S, int64_t I,
                       const int64_t *idx, int64_t J, void *out, void *stream) {
    if (dtype < 0 || dtype >= EM_NDTYPES) return emc_set_error(EMC_E_DTYPE, "emc_gather");
    int64_t total = O * J * I;
    if (total == 0) return 0;
    int *flag = emc_error_flag();
    cudaStream_t s = emc_stream(stream);
    unsigned g = emc_blocks(total);
    switch (em_itemsize[dtype]) {
    case 1: gather_kernel<<<g, EMC_THREADS, 0, s>>>((const uint8_t *)src, O, S, I, idx, J, (uint8_t *)out, flag); break;
    case 2: gather_kernel<<<g, EMC_THREADS, 0, s>>>((const uint16_t *)src, O, S, I, idx, J, (uint16_t *)out, flag); break;
    case 4: gather_kernel<<<g, EMC_THREADS, 0, s>>>((const uint32_t *)src, O, S, I, idx, J, (uint32_t *)out, flag); break;
    case 16: gather_kernel<<<g, EMC_THREADS, 0, s>>>((const uint4 *)src, O, S, I, idx, J, (uint4 *)out, flag); break;
    default: gather_kernel<<<g, EMC_THREADS, 0, s>>>((const uint64_t *)src, O, S, I, idx, J, (uint64_t *)out, flag); break;
    }
    EMC_LAUNCHED("emc_gather");
    return 0;
}

/* --- scatter, scatter_add, index_put ------------------------------------------
   Both resolve every index position p to a target offset in out (tgt[p], -1
   when out of range) and an offset in the values (vof[p]), then write a slice
   of S elements per position.  The atomic variant writes directly; the
   deterministic one sorts the positions by target (stable: index order within
   a target) and lets one thread per (target, slice element) apply its run in
   order: the sum in index order, or the last value for plain writes. */
struct PutIdx {
    const int64_t *idx[EMC_MAX_DIMS];
    int64_t size[EMC_MAX_DIMS], stride[EMC_MAX_DIMS];
    int k;
};

__global__ void scatter_targets(emc_nd nd, int64_t n, int64_t dim_size, int64_t dim_stride,
                                const int64_t *idx, int64_t *tgt, int64_t *vof, int *flag) {
    for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < n;
         p += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[3];
        emc_offsets<3>(nd, p, off);
        int64_t j = idx[off[1]];
        tgt[p] = fix_index(j, dim_size, flag) ? off[0] + j * dim_stride : -1;
        vof[p] = off[2];
    }
}

__global__ void put_targets(PutIdx ix, int64_t n, int64_t vstride, int64_t *tgt, int64_t *vof,
                            int *flag) {
    for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < n;
         p += (int64_t)gridDim.x * blockDim.x) {
        int64_t t = 0;
        for (int d = 0; d < ix.k; d++) {
            int64_t j = ix.idx[d][p];
            if (!fix_index(j, ix.size[d], flag)) { t = -1; break; }
            t += j * ix.stride[d];
        }
        tgt[p] = t;
        vof[p] = p * vstride;
    }
}

template <typename T> __device__ __forceinline__ void atomic_add(T *p, T v) { atomicAdd(p, v); }
template <> __device__ __forceinline__ void atomic_add<int64_t>(int64_t *p, int64_t v) {
    atomicAdd((unsigned long long *)p, (unsigned long long)v);
}

/* one thread per (position, slice element): plain writes or atomic sums */
template <typename T, bool ADD>
__global__ void put_direct(T *out, const T *vals, const int64_t *tgt, const int64_t *vof,
                           int64_t n, emc_nd slice, int64_t S) {
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < n * S;
         t += (int64_t)gridDim.x * blockDim.x) {
        const int64_t p = t / S, e = t - p * S;
        if (tgt[p] < 0) continue;
        int64_t so[2];
        emc_offsets<2>(slice, e, so);
        T *d = out + tgt[p] + so[0];
        const T v = vals[vof[p] + so[1]];
        if constexpr (ADD) atomic_add(d, v); else *d = v;
    }
}

/* acc `op` v for the reductions (EMC_PUT_*); max/min propagate NaN as the CPU's
   scatter does (v != v is false for integers) */
template <int RED, typename A> __device__ __forceinline__ A put_combine(A acc, A v) {
    if constexpr (RED == EMC_PUT_ADD) return acc + v;
    else if constexpr (RED == EMC_PUT_MUL) return acc * v;
    else if (v != v) return v;
    else if constexpr (RED == EMC_PUT_MAX) return (acc != acc || acc > v) ? acc : v;
    else return (acc != acc || acc < v) ? acc : v;
}

/* one thread per (run of equal targets in sorted order, slice element); G: the
   values were gathered into sorted order (vals[q], a slice of one element) */
template <typename T, typename A, int RED, bool G>
__global__ void put_ordered(T *out, const T *vals, SortedRuns sr, const int64_t *vof, int64_t n,
                            emc_nd slice, int64_t S) {
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < n * S;
         t += (int64_t)gridDim.x * blockDim.x) {
        const int64_t q = t / S, e = t - q * S;
        const int64_t key = sr.run_start(q);
        if (key < 0) continue;
        const int64_t end = sr.run_end(q, n, key);
        int64_t so[2];
        emc_offsets<2>(slice, e, so);
        T *d = out + key + so[0];
        if constexpr (RED != EMC_PUT_SET) {
            A acc = ld<T, A>(d);
#pragma unroll 4
            for (int64_t r = q; r < end; r++)
                acc = put_combine<RED, A>(acc, ld<T, A>(G ? vals + r
                                                          : vals + vof[sr.at(r)] + so[1]));
            st<T, A>(d, acc);
        } else {
            *d = G ? vals[end - 1] : vals[vof[sr.at(end - 1)] + so[1]];
        }
    }
}

/* g[q] = the value of the position sorted to q (slices of one element) */
template <typename T>
__global__ void gather_sorted(const T *vals, SortedRuns sr, const int64_t *vof, int64_t n, T *g) {
    for (int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; q < n;
         q += (int64_t)gridDim.x * blockDim.x)
        if (sr.tgt(q) >= 0) g[q] = vals[vof[sr.at(q)]];
}

template <typename T, typename A, int RED>
static int put_typed(T *out, const T *vals, int64_t *tgt, int64_t *vof, int64_t n,
                     const emc_nd *slice, int64_t S, uint64_t maxt, bool det, cudaStream_t s) {
    /* products, max and min always run in index order (no atomics for them) */
    if constexpr (RED == EMC_PUT_SET || RED == EMC_PUT_ADD) {
        if (!det) {
            put_direct<T, RED == EMC_PUT_ADD><<<emc_blocks(n * S), EMC_THREADS, 0, s>>>(
                out, vals, tgt, vof, n, *slice, S);
            return 0;
        }
    }
    SortedRuns sr;
    void *mem = NULL;
    int rc = sort_targets(tgt, n, maxt, &sr, &mem, s);
    if (rc) return rc;
    T *g = NULL;
    /* one-element slices: gather the values in sorted order first, so that the runs
       read contiguous memory (without that buffer the runs gather themselves) */
    if (S == 1 && emc_malloc((void **)&g, sizeof(T) * (size_t)n, s) == 0) {
        gather_sorted<T><<<emc_blocks(n), EMC_THREADS, 0, s>>>(vals, sr, vof, n, g);
        put_ordered<T, A, RED, true><<<emc_blocks(n), EMC_THREADS, 0, s>>>(out, g, sr, vof, n,
                                                                            *slice, S);
        emc_free(g);
    } else {
        put_ordered<T, A, RED, false><<<emc_blocks(n * S), EMC_THREADS, 0, s>>>(
            out, vals, sr, vof, n, *slice, S);
    }
    emc_free(mem);
    return 0;
}

/* one numeric type, every reduction */
template <typename T, typename A>
static int put_numeric(int red, T *out, const T *vals, int64_t *tgt, int64_t *vof, int64_t n,
                       const emc_nd *slice, int64_t S, uint64_t maxt, bool det,
                       cudaStream_t s) {
    switch (red) {
    case EMC_PUT_ADD: return put_typed<T, A, EMC_PUT_ADD>(out, vals, tgt, vof, n, slice, S, maxt, det, s);
    case EMC_PUT_MUL: return put_typed<T, A, EMC_PUT_MUL>(out, vals, tgt, vof, n, slice, S, maxt, det, s);
    case EMC_PUT_MAX: return put_typed<T, A, EMC_PUT_MAX>(out, vals, tgt, vof, n, slice, S, maxt, det, s);
    default: return put_typed<T, A, EMC_PUT_MIN>(out, vals, tgt, vof, n, slice, S, maxt, det, s);
    }
}

/* dispatch on dtype: plain writes move bits, reductions need a numeric type */
static int put_run(int dtype, void *out, const void *vals, int64_t *tgt, int64_t *vof, int64_t n,
                   const emc_nd *slice, int red, uint64_t maxt, bool det, cudaStream_t s) {
    const int64_t S = emc_numel(slice);
    if (S == 0) return 0;
    if (red == EMC_PUT_SET) {
        switch (em_itemsize[dtype]) {
        case 1: return put_typed<uint8_t, uint8_t, EMC_PUT_SET>((uint8_t *)out, (const uint8_t *)vals, tgt, vof, n, slice, S, maxt, det, s);
        case 2: return put_typed<uint16_t, uint16_t, EMC_PUT_SET>((uint16_t *)out, (const uint16_t *)vals, tgt, vof, n, slice, S, maxt, det, s);
        case 4: return put_typed<uint32_t, uint32_t, EMC_PUT_SET>((uint32_t *)out, (const uint32_t *)vals, tgt, vof, n, slice, S, maxt, det, s);
        case 16: return put_typed<uint4, uint4, EMC_PUT_SET>((uint4 *)out, (const uint4 *)vals, tgt, vof, n, slice, S, maxt, det, s);
        default: return put_typed<uint64_t, uint64_t, EMC_PUT_SET>((uint64_t *)out, (const uint64_t *)vals, tgt, vof, n, slice, S, maxt, det, s);
        }
    }
    switch (dtype) {
    case EM_F32: return put_numeric<float, float>(red, (float *)out, (const float *)vals, tgt, vof, n, slice, S, maxt, det, s);
    case EM_F64: return put_numeric<double, double>(red, (double *)out, (const double *)vals, tgt, vof, n, slice, S, maxt, det, s);
    case EM_F16: return put_numeric<__half, float>(red, (__half *)out, (const __half *)vals, tgt, vof, n, slice, S, maxt, det, s);
    case EM_BF16: return put_numeric<__nv_bfloat16, float>(red, (__nv_bfloat16 *)out, (const __nv_bfloat16 *)vals, tgt, vof, n, slice, S, maxt, det, s);
    case EM_I32: return put_numeric<int, int>(red, (int *)out, (const int *)vals, tgt, vof, n, slice, S, maxt, det, s);
    case EM_I64: return put_numeric<int64_t, int64_t>(red, (int64_t *)out, (const int64_t *)vals, tgt, vof, n, slice, S, maxt, det, s);
    default: return emc_set_error(EMC_E_DTYPE, "scatter (reduce) / index_put (accumulate)");
    }
}

static bool addable(int dtype) {
    return dtype == EM_F32 || dtype == EM_F64 || dtype == EM_F16 || dtype == EM_BF16 ||
           dtype == EM_I32 || dtype == EM_I64;
}

/* the common tail: targets computed, run the writes, free the buffer */
static int put_finish(int rc0, int dtype, void *out, const void *vals, int64_t *buf, int64_t n,
                      const emc_nd *slice, int red, uint64_t maxt, bool det, cudaStream_t s,
                      const char *where) {
    int rc = rc0 ? rc0 : put_run(dtype, out, vals, buf, buf + n, n, slice, red, maxt, det, s);
    cudaError_t e = cudaGetLastError();
    emc_free(buf);
    if (rc) return rc;
    if (e != cudaSuccess) return emc_set_error((int)e, where);
    return 0;
}

EMC_API int emc_scatter(int reduce, int dtype, void *out, int64_t dim_size, int64_t dim_stride,
                        const int64_t *idx, const void *src, const emc_nd *nd, int deterministic,
                        void *stream) {
    if (dtype < 0 || dtype >= EM_NDTYPES) return emc_set_error(EMC_E_DTYPE, "emc_scatter");
    if (reduce < EMC_PUT_SET || reduce > EMC_PUT_MIN) return emc_set_error(EMC_E_OP, "emc_scatter");
    if (reduce != EMC_PUT_SET && !addable(dtype)) return emc_set_error(EMC_E_DTYPE, "emc_scatter");
    if (nd->nargs < 3 || nd->ndim > EMC_MAX_DIMS) return emc_set_error(EMC_E_ARG, "emc_scatter");
    const int64_t n = emc_numel(nd);
    if (n == 0) return 0;
    cudaStream_t s = emc_stream(stream);
    int64_t *buf = NULL;
    int rc = emc_malloc((void **)&buf, sizeof(int64_t) * (size_t)(2 * n), s);
    if (rc) return rc;
    scatter_targets<<<emc_blocks(n), EMC_THREADS, 0, s>>>(*nd, n, dim_size, dim_stride, idx, buf,
                                                          buf + n, emc_error_flag());
    emc_nd one;
    memset(&one, 0, sizeof one);
    one.nargs = 2;
    /* the largest target: out's offsets over the space plus the dim's */
    uint64_t maxt = dim_size > 0 ? (uint64_t)(dim_size - 1) * (uint64_t)dim_stride : 0;
    bool known = dim_stride >= 0;
    for (int d = 0; d < nd->ndim; d++) {
        if (nd->strides[0][d] < 0) known = false;
        maxt += (uint64_t)(nd->shape[d] - 1) * (uint64_t)nd->strides[0][d];
    }
    return put_finish(0, dtype, out, src, buf, n, &one, reduce, known ? maxt : UINT64_MAX,
                      deterministic != 0, s, "emc_scatter");
}

EMC_API int emc_index_put(int dtype, void *out, int k, const int64_t *const *idx,
                          const int64_t *sizes, const int64_t *strides, int64_t n,
                          const void *values, int64_t vstride, const emc_nd *slice,
                          int accumulate, int deterministic, void *stream) {
    if (dtype < 0 || dtype >= EM_NDTYPES || (accumulate && !addable(dtype)))
        return emc_set_error(EMC_E_DTYPE, "emc_index_put");
    if (k < 1 || k > EMC_MAX_DIMS || n < 0 || slice->ndim > EMC_MAX_DIMS)
        return emc_set_error(EMC_E_ARG, "emc_index_put");
    if (n == 0) return 0;
    PutIdx ix;
    ix.k = k;
    for (int d = 0; d < k; d++) {
        ix.idx[d] = idx[d];
        ix.size[d] = sizes[d];
        ix.stride[d] = strides[d];
    }
    cudaStream_t s = emc_stream(stream);
    int64_t *buf = NULL;
    int rc = emc_malloc((void **)&buf, sizeof(int64_t) * (size_t)(2 * n), s);
    if (rc) return rc;
    put_targets<<<emc_blocks(n), EMC_THREADS, 0, s>>>(ix, n, vstride, buf, buf + n,
                                                      emc_error_flag());
    uint64_t maxt = 0;
    bool known = true;
    for (int d = 0; d < k; d++) {
        if (strides[d] < 0) known = false;
        if (sizes[d] > 0) maxt += (uint64_t)(sizes[d] - 1) * (uint64_t)strides[d];
    }
    return put_finish(0, dtype, out, values, buf, n, slice,
                      accumulate ? EMC_PUT_ADD : EMC_PUT_SET, known ? maxt : UINT64_MAX,
                      deterministic != 0, s, "emc_index_put");
}
