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

/* deterministic variant: the wrapped indices (-1 when out of range) are sorted
   stably, so each target's positions form a run in index order; thread
   (o, run start, i) adds its run's source rows in that order, rounding to T after
   every add (the serial sum out[j] += src[k] over k) */
__global__ void index_keys(const int64_t *idx, int64_t n, int64_t S, int64_t *keys, int *flag) {
    for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < n;
         p += (int64_t)gridDim.x * blockDim.x) {
        int64_t j = idx[p];
        keys[p] = fix_index(j, S, flag) ? j : -1;
    }
}

template <typename T>
__global__ void index_add_runs(T *out, int64_t O, int64_t S, int64_t I, const int64_t *kt,
                               const int64_t *order, int64_t n_idx, const T *src) {
    typedef typename Acc<T>::type A;
    const int64_t total = O * n_idx * I;
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < total;
         t += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = t % I, r = t / I, q = r % n_idx, o = r / n_idx;
        const int64_t key = kt[q];
        if (key < 0 || (q > 0 && kt[q - 1] == key)) continue;
        T *d = out + (o * S + key) * I + i;
        A acc = ld<T, A>(d);
        for (int64_t p = q; p < n_idx && kt[p] == key; p++) {
            T sum;
            st<T, A>(&sum, acc + ld<T, A>(src + (o * n_idx + order[p]) * I + i));
            acc = ld<T, A>(&sum);
        }
        st<T, A>(d, acc);
    }
}

int emc_sort_i64_keys(const int64_t *keys, const int64_t *xi, int64_t rows, int64_t n, int desc,
                      int64_t *kout, int64_t *iout, cudaStream_t s);

static int index_add_sorted(int dtype, void *out, int64_t O, int64_t S, int64_t I,
                            const int64_t *idx, int64_t n_idx, const void *src, int *flag,
                            cudaStream_t s) {
    if (dtype != EM_F32 && dtype != EM_F64 && dtype != EM_F16 && dtype != EM_BF16)
        return emc_set_error(EMC_E_DTYPE, "emc_index_add");
    int64_t *buf = NULL;
    int rc = emc_malloc((void **)&buf, sizeof(int64_t) * (size_t)(3 * n_idx), s);
    if (rc) return rc;
    index_keys<<<emc_blocks(n_idx), EMC_THREADS, 0, s>>>(idx, n_idx, S, buf, flag);
    rc = emc_sort_i64_keys(buf, NULL, 1, n_idx, 0, buf + n_idx, buf + 2 * n_idx, s);
    if (!rc) {
        const unsigned g = emc_blocks(O * n_idx * I);
        const int64_t *kt = buf + n_idx, *order = buf + 2 * n_idx;
        switch (dtype) {
        case EM_F32: index_add_runs<float><<<g, EMC_THREADS, 0, s>>>((float *)out, O, S, I, kt, order, n_idx, (const float *)src); break;
        case EM_F64: index_add_runs<double><<<g, EMC_THREADS, 0, s>>>((double *)out, O, S, I, kt, order, n_idx, (const double *)src); break;
        case EM_F16: index_add_runs<__half><<<g, EMC_THREADS, 0, s>>>((__half *)out, O, S, I, kt, order, n_idx, (const __half *)src); break;
        default: index_add_runs<__nv_bfloat16><<<g, EMC_THREADS, 0, s>>>((__nv_bfloat16 *)out, O, S, I, kt, order, n_idx, (const __nv_bfloat16 *)src); break;
        }
    }
    cudaError_t e = cudaGetLastError();
    emc_free(buf);
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

/* one thread per (run of equal targets in sorted order, slice element) */
template <typename T, typename A, int RED>
__global__ void put_ordered(T *out, const T *vals, const int64_t *kt, const int64_t *order,
                            const int64_t *vof, int64_t n, emc_nd slice, int64_t S) {
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < n * S;
         t += (int64_t)gridDim.x * blockDim.x) {
        const int64_t q = t / S, e = t - q * S;
        const int64_t key = kt[q];
        if (key < 0 || (q > 0 && kt[q - 1] == key)) continue;
        int64_t so[2];
        emc_offsets<2>(slice, e, so);
        T *d = out + key + so[0];
        int64_t r = q;
        if constexpr (RED != EMC_PUT_SET) {
            A acc = ld<T, A>(d);
            for (; r < n && kt[r] == key; r++)
                acc = put_combine<RED, A>(acc, ld<T, A>(vals + vof[order[r]] + so[1]));
            st<T, A>(d, acc);
        } else {
            while (r + 1 < n && kt[r + 1] == key) r++;
            *d = vals[vof[order[r]] + so[1]];
        }
    }
}

template <typename T, typename A, int RED>
static int put_typed(T *out, const T *vals, int64_t *tgt, int64_t *vof, int64_t n,
                     const emc_nd *slice, int64_t S, bool det, cudaStream_t s) {
    /* products, max and min always run in index order (no atomics for them) */
    if constexpr (RED == EMC_PUT_SET || RED == EMC_PUT_ADD) {
        if (!det) {
            put_direct<T, RED == EMC_PUT_ADD><<<emc_blocks(n * S), EMC_THREADS, 0, s>>>(
                out, vals, tgt, vof, n, *slice, S);
            return 0;
        }
    }
    int64_t *kt = NULL;
    int rc = emc_malloc((void **)&kt, sizeof(int64_t) * (size_t)(2 * n), s);
    if (rc) return rc;
    rc = emc_sort_i64_keys(tgt, NULL, 1, n, 0, kt, kt + n, s);
    if (!rc)
        put_ordered<T, A, RED><<<emc_blocks(n * S), EMC_THREADS, 0, s>>>(out, vals, kt, kt + n,
                                                                         vof, n, *slice, S);
    emc_free(kt);
    return rc;
}

/* one numeric type, every reduction */
template <typename T, typename A>
static int put_numeric(int red, T *out, const T *vals, int64_t *tgt, int64_t *vof, int64_t n,
                       const emc_nd *slice, int64_t S, bool det, cudaStream_t s) {
    switch (red) {
    case EMC_PUT_ADD: return put_typed<T, A, EMC_PUT_ADD>(out, vals, tgt, vof, n, slice, S, det, s);
    case EMC_PUT_MUL: return put_typed<T, A, EMC_PUT_MUL>(out, vals, tgt, vof, n, slice, S, det, s);
    case EMC_PUT_MAX: return put_typed<T, A, EMC_PUT_MAX>(out, vals, tgt, vof, n, slice, S, det, s);
    default: return put_typed<T, A, EMC_PUT_MIN>(out, vals, tgt, vof, n, slice, S, det, s);
    }
}

/* dispatch on dtype: plain writes move bits, reductions need a numeric type */
static int put_run(int dtype, void *out, const void *vals, int64_t *tgt, int64_t *vof, int64_t n,
                   const emc_nd *slice, int red, bool det, cudaStream_t s) {
    const int64_t S = emc_numel(slice);
    if (S == 0) return 0;
    if (red == EMC_PUT_SET) {
        switch (em_itemsize[dtype]) {
        case 1: return put_typed<uint8_t, uint8_t, EMC_PUT_SET>((uint8_t *)out, (const uint8_t *)vals, tgt, vof, n, slice, S, det, s);
        case 2: return put_typed<uint16_t, uint16_t, EMC_PUT_SET>((uint16_t *)out, (const uint16_t *)vals, tgt, vof, n, slice, S, det, s);
        case 4: return put_typed<uint32_t, uint32_t, EMC_PUT_SET>((uint32_t *)out, (const uint32_t *)vals, tgt, vof, n, slice, S, det, s);
        case 16: return put_typed<uint4, uint4, EMC_PUT_SET>((uint4 *)out, (const uint4 *)vals, tgt, vof, n, slice, S, det, s);
        default: return put_typed<uint64_t, uint64_t, EMC_PUT_SET>((uint64_t *)out, (const uint64_t *)vals, tgt, vof, n, slice, S, det, s);
        }
    }
    switch (dtype) {
    case EM_F32: return put_numeric<float, float>(red, (float *)out, (const float *)vals, tgt, vof, n, slice, S, det, s);
    case EM_F64: return put_numeric<double, double>(red, (double *)out, (const double *)vals, tgt, vof, n, slice, S, det, s);
    case EM_F16: return put_numeric<__half, float>(red, (__half *)out, (const __half *)vals, tgt, vof, n, slice, S, det, s);
    case EM_BF16: return put_numeric<__nv_bfloat16, float>(red, (__nv_bfloat16 *)out, (const __nv_bfloat16 *)vals, tgt, vof, n, slice, S, det, s);
    case EM_I32: return put_numeric<int, int>(red, (int *)out, (const int *)vals, tgt, vof, n, slice, S, det, s);
    case EM_I64: return put_numeric<int64_t, int64_t>(red, (int64_t *)out, (const int64_t *)vals, tgt, vof, n, slice, S, det, s);
    default: return emc_set_error(EMC_E_DTYPE, "scatter (reduce) / index_put (accumulate)");
    }
}

static bool addable(int dtype) {
    return dtype == EM_F32 || dtype == EM_F64 || dtype == EM_F16 || dtype == EM_BF16 ||
           dtype == EM_I32 || dtype == EM_I64;
}

/* the common tail: targets computed, run the writes, free the buffer */
static int put_finish(int rc0, int dtype, void *out, const void *vals, int64_t *buf, int64_t n,
                      const emc_nd *slice, int red, bool det, cudaStream_t s, const char *where) {
    int rc = rc0 ? rc0 : put_run(dtype, out, vals, buf, buf + n, n, slice, red, det, s);
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
    return put_finish(0, dtype, out, src, buf, n, &one, reduce, deterministic != 0, s,
                      "emc_scatter");
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
    return put_finish(0, dtype, out, values, buf, n, slice,
                      accumulate ? EMC_PUT_ADD : EMC_PUT_SET, deterministic != 0, s,
                      "emc_index_put");
}
