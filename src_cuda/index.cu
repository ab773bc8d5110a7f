/* index_select / embedding, index_add (embedding backward) and gather: the
   twins of src_c/index.c.  Indices are int64; negative ones wrap once; an index
   still out of range sets the device error flag (emc_check_index_error) and its
   output is left as zero. */
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

/* deterministic variant: one thread per (o, i) column adds the rows in index order */
template <typename T>
__global__ void index_add_ordered(T *out, int64_t O, int64_t S, int64_t I, const int64_t *idx,
                                  int64_t n_idx, const T *src, int *flag) {
    typedef typename Acc<T>::type A;
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < O * I;
         t += (int64_t)gridDim.x * blockDim.x) {
        int64_t o = t / I, i = t - o * I;
        for (int64_t k = 0; k < n_idx; k++) {
            int64_t j = idx[k];
            if (!fix_index(j, S, flag)) continue;
            T *d = out + (o * S + j) * I + i;
            st<T, A>(d, ld<T, A>(d) + ld<T, A>(src + (o * n_idx + k) * I + i));
        }
    }
}

EMC_API int emc_index_add(int dtype, void *out, int64_t O, int64_t S, int64_t I,
                          const int64_t *idx, int64_t n_idx, const void *src, int deterministic,
                          void *stream) {
    if (O * n_idx * I == 0) return 0;
    int *flag = emc_error_flag();
    cudaStream_t s = emc_stream(stream);
    if (deterministic) {
        unsigned g = emc_blocks(O * I);
        EMC_FLOAT_TYPES(dtype, index_add_ordered<T><<<g, EMC_THREADS, 0, s>>>(
            (T *)out, O, S, I, idx, n_idx, (const T *)src, flag));
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
