/* Stable sort along the last dim and topk: the twin of src_c/sort.c.  Keys are
   compared as float (float32/16/bf16), double or int64 (integers, bool) with
   NaN the largest value, and ties broken by the original index, which makes
   the order total: any correct sorting network gives the stable result.
   Tiles of SORT_TILE keys are sorted in shared memory by a bitonic network,
   then runs are merged pairwise in global memory, each element finding its
   place with one binary search in the other run.  The values are gathered
   from the input by the sorted indices, so every dtype keeps its bits.  topk
   of a few (k <= TOPK_SMALL) merges only each tile's first k. */
#include <type_traits>
#include "common.cuh"

#define SORT_TILE 1024
#define SORT_THREADS 512

/* key u comes strictly before key v */
template <typename K> __device__ __forceinline__ bool key_before(K u, K v, bool desc) {
    return desc ? (u > v || (u != u && v == v)) : (u < v || (v != v && u == u));
}
/* (key, index) a before b; padding (index < 0) goes last */
template <typename K>
__device__ __forceinline__ bool kv_before(K ka, int64_t ia, K kb, int64_t ib, bool desc) {
    if (ia < 0) return false;
    if (ib < 0) return true;
    if (key_before(ka, kb, desc)) return true;
    if (key_before(kb, ka, desc)) return false;
    return ia < ib;
}

template <typename T, typename K> __device__ __forceinline__ K key_of(const T *p) {
    if constexpr (sizeof(T) == 2 && !std::is_integral<T>::value) return (K)to_f(*p);
    else return (K)*p;
}

/* sort each tile of each row: block b = row * tiles + t */
template <typename T, typename K>
__global__ void __launch_bounds__(SORT_THREADS)
tile_sort(const T *x, const int64_t *xi, int64_t n, int64_t tiles, bool desc, K *ko,
          int64_t *io) {
    __shared__ K sk[SORT_TILE];
    __shared__ int64_t si[SORT_TILE];
    const int64_t row = blockIdx.x / tiles, t0 = (blockIdx.x % tiles) * SORT_TILE;
    const int64_t base = row * n;
    for (int i = threadIdx.x; i < SORT_TILE; i += SORT_THREADS) {
        int64_t p = t0 + i;
        if (p < n) {
            sk[i] = key_of<T, K>(x + base + p);
            si[i] = xi ? xi[base + p] : p;
        } else {
            sk[i] = (K)0;
            si[i] = -1;
        }
    }
    __syncthreads();
    for (int k = 2; k <= SORT_TILE; k <<= 1)
        for (int j = k >> 1; j > 0; j >>= 1) {
            for (int i = threadIdx.x; i < SORT_TILE; i += SORT_THREADS) {
                int l = i ^ j;
                if (l > i) {
                    bool up = (i & k) == 0;
                    K a = sk[i], b = sk[l];
                    int64_t ia = si[i], ib = si[l];
                    if (up ? kv_before(b, ib, a, ia, desc) : kv_before(a, ia, b, ib, desc)) {
                        sk[i] = b; sk[l] = a;
                        si[i] = ib; si[l] = ia;
                    }
                }
            }
            __syncthreads();
        }
    for (int i = threadIdx.x; i < SORT_TILE; i += SORT_THREADS) {
        int64_t p = t0 + i;
        if (p < n) {
            ko[base + p] = sk[i];
            io[base + p] = si[i];
        }
    }
}

/* the key after every real one (NaN is the largest; ties go by index, and
   padding indices exceed every real one) */
template <typename K> __device__ __forceinline__ K worst_key(bool desc) {
    if constexpr (std::is_integral<K>::value) return desc ? (K)INT64_MIN : (K)INT64_MAX;
    else return desc ? -(K)INFINITY : (K)NAN;
}

/* topk's first pass: tile_sort, keeping the first kk of each tile as candidates
   (row r's at ko + r * tiles * kk); a tile shorter than kk is padded with worst
   keys whose indices n + position are unique and after every real index */
template <typename T, typename K>
__global__ void __launch_bounds__(SORT_THREADS)
tile_topk(const T *x, int64_t n, int64_t tiles, int64_t kk, bool desc, K *ko, int64_t *io) {
    __shared__ K sk[SORT_TILE];
    __shared__ int64_t si[SORT_TILE];
    const int64_t row = blockIdx.x / tiles, tile = blockIdx.x % tiles, t0 = tile * SORT_TILE;
    const int64_t base = row * n;
    for (int i = threadIdx.x; i < SORT_TILE; i += SORT_THREADS) {
        int64_t p = t0 + i;
        if (p < n) {
            sk[i] = key_of<T, K>(x + base + p);
            si[i] = p;
        } else {
            sk[i] = (K)0;
            si[i] = -1;
        }
    }
    __syncthreads();
    for (int k = 2; k <= SORT_TILE; k <<= 1)
        for (int j = k >> 1; j > 0; j >>= 1) {
            for (int i = threadIdx.x; i < SORT_TILE; i += SORT_THREADS) {
                int l = i ^ j;
                if (l > i) {
                    bool up = (i & k) == 0;
                    K a = sk[i], b = sk[l];
                    int64_t ia = si[i], ib = si[l];
                    if (up ? kv_before(b, ib, a, ia, desc) : kv_before(a, ia, b, ib, desc)) {
                        sk[i] = b; sk[l] = a;
                        si[i] = ib; si[l] = ia;
                    }
                }
            }
            __syncthreads();
        }
    const int64_t ob = row * tiles * kk + tile * kk;
    for (int i = threadIdx.x; i < kk; i += SORT_THREADS) {
        const bool real = si[i] >= 0;
        ko[ob + i] = real ? sk[i] : worst_key<K>(desc);
        io[ob + i] = real ? si[i] : n + tile * kk + i;
    }
}

/* merge runs of width w into runs of 2w: each element's new place is its rank in
   its own run plus the number of elements of the other run before it */
template <typename K>
__global__ void merge_pass(const K *ki, const int64_t *ii, int64_t rows, int64_t n, int64_t w,
                           bool desc, K *ko, int64_t *io) {
    const int64_t total = rows * n;
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < total;
         t += (int64_t)gridDim.x * blockDim.x) {
        const int64_t row = t / n, p = t - row * n, base = row * n;
        const int64_t s = p / (2 * w) * (2 * w);
        const int64_t mid = s + w < n ? s + w : n, e = s + 2 * w < n ? s + 2 * w : n;
        const K k = ki[t];
        const int64_t id = ii[t];
        int64_t lo, hi;
        if (p < mid) { lo = mid; hi = e; } else { lo = s; hi = mid; }
        const int64_t first = lo;
        while (lo < hi) {   /* first element of the other run not before (k, id) */
            int64_t m = lo + (hi - lo) / 2;
            if (kv_before(ki[base + m], ii[base + m], k, id, desc)) lo = m + 1; else hi = m;
        }
        const int64_t q = (p < mid ? p - s : p - mid) + (lo - first) + s;
        ko[base + q] = k;
        io[base + q] = id;
    }
}

static int merge_passes(int64_t n) {
    int p = 0;
    for (int64_t w = SORT_TILE; w < n; w *= 2) p++;
    return p;
}

/* sort rows x (dtype T, [rows, n] contiguous; xi optional initial indices) into
   sorted keys (kout, may be NULL) and indices (iout) */
template <typename T, typename K>
static int sort_rows(const T *x, const int64_t *xi, int64_t rows, int64_t n, bool desc, K *kout,
                     int64_t *iout, cudaStream_t s) {
    const int64_t total = rows * n;
    if (total == 0) return 0;
    const int64_t tiles = (n + SORT_TILE - 1) / SORT_TILE;
    if (rows * tiles > 2147483647LL) return emc_set_error(EMC_E_ARG, "sort (too many rows)");
    K *kb = NULL;
    int64_t *ib = NULL;
    int rc = emc_malloc((void **)&kb, sizeof(K) * (size_t)total * (kout ? 1 : 2), s);
    if (rc) return rc;
    rc = emc_malloc((void **)&ib, sizeof(int64_t) * (size_t)total, s);
    if (rc) { emc_free(kb); return rc; }
    K *keys[2] = {kout ? kout : kb + total, kb};
    int64_t *idx[2] = {iout, ib};
    const int passes = merge_passes(n);
    int cur = passes & 1;   /* so that the last pass lands in the outputs */
    tile_sort<T, K><<<(unsigned)(rows * tiles), SORT_THREADS, 0, s>>>(x, xi, n, tiles, desc,
                                                                       keys[cur], idx[cur]);
    for (int64_t w = SORT_TILE; w < n; w *= 2) {
        merge_pass<K><<<emc_blocks(total), EMC_THREADS, 0, s>>>(keys[cur], idx[cur], rows, n, w,
                                                                desc, keys[cur ^ 1],
                                                                idx[cur ^ 1]);
        cur ^= 1;
    }
    cudaError_t e = cudaGetLastError();
    emc_free(kb);
    emc_free(ib);
    if (e != cudaSuccess) return emc_set_error((int)e, "sort");
    return 0;
}

int emc_sort_i64_keys(const int64_t *keys, const int64_t *xi, int64_t rows, int64_t n, int desc,
                      int64_t *kout, int64_t *iout, cudaStream_t s) {
    return sort_rows<int64_t, int64_t>(keys, xi, rows, n, desc != 0, kout, iout, s);
}
int emc_sort_f64_keys(const double *keys, int64_t rows, int64_t n, int desc, int64_t *iout,
                      cudaStream_t s) {
    return sort_rows<double, double>(keys, NULL, rows, n, desc != 0, NULL, iout, s);
}

/* the sorted indices of any dtype's rows */
static int sort_any(int dtype, const void *x, int64_t rows, int64_t n, bool desc, int64_t *idx,
                    cudaStream_t s) {
    switch (dtype) {
    case EM_F32: return sort_rows<float, float>((const float *)x, NULL, rows, n, desc, NULL, idx, s);
    case EM_F64: return sort_rows<double, double>((const double *)x, NULL, rows, n, desc, NULL, idx, s);
    case EM_F16: return sort_rows<__half, float>((const __half *)x, NULL, rows, n, desc, NULL, idx, s);
    case EM_BF16: return sort_rows<__nv_bfloat16, float>((const __nv_bfloat16 *)x, NULL, rows, n, desc, NULL, idx, s);
    case EM_I64: return sort_rows<int64_t, int64_t>((const int64_t *)x, NULL, rows, n, desc, NULL, idx, s);
    case EM_I32: return sort_rows<int32_t, int64_t>((const int32_t *)x, NULL, rows, n, desc, NULL, idx, s);
    case EM_I16: return sort_rows<int16_t, int64_t>((const int16_t *)x, NULL, rows, n, desc, NULL, idx, s);
    case EM_I8: return sort_rows<int8_t, int64_t>((const int8_t *)x, NULL, rows, n, desc, NULL, idx, s);
    case EM_U8: case EM_BOOL:
        return sort_rows<uint8_t, int64_t>((const uint8_t *)x, NULL, rows, n, desc, NULL, idx, s);
    default: return emc_set_error(EMC_E_DTYPE, "emc_sort");
    }
}

/* vals[r, j] = x[r, idx[r, j]], idx[r, j] = full[r, j] for j < k (rows of n in x,
   of nf in full) */
template <typename U>
__global__ void take_sorted(const U *x, const int64_t *full, int64_t rows, int64_t n,
                            int64_t nf, int64_t k, U *vals, int64_t *idx) {
    const int64_t total = rows * k;
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < total;
         t += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = t / k, j = t - r * k;
        const int64_t i = full[r * nf + j];
        if (vals) vals[t] = x[r * n + i];
        if (idx) idx[t] = i;
    }
}

static int take(int dtype, const void *x, const int64_t *full, int64_t rows, int64_t n,
                int64_t nf, int64_t k, void *vals, int64_t *idx, cudaStream_t s) {
    const int64_t total = rows * k;
    if (total == 0) return 0;
    unsigned g = emc_blocks(total);
    switch (em_itemsize[dtype]) {
    case 1: take_sorted<<<g, EMC_THREADS, 0, s>>>((const uint8_t *)x, full, rows, n, nf, k, (uint8_t *)vals, idx); break;
    case 2: take_sorted<<<g, EMC_THREADS, 0, s>>>((const uint16_t *)x, full, rows, n, nf, k, (uint16_t *)vals, idx); break;
    case 4: take_sorted<<<g, EMC_THREADS, 0, s>>>((const uint32_t *)x, full, rows, n, nf, k, (uint32_t *)vals, idx); break;
    default: take_sorted<<<g, EMC_THREADS, 0, s>>>((const uint64_t *)x, full, rows, n, nf, k, (uint64_t *)vals, idx); break;
    }
    return 0;
}

/* topk for k <= TOPK_SMALL over rows of several tiles: each tile's bitonic sort
   keeps its first k (tile_topk), and only those runs are merged; the order is
   total, so the first k are the full sort's.  full: rows * tiles * k indices. */
#define TOPK_SMALL 256
template <typename T, typename K>
static int topk_small(const T *x, int64_t rows, int64_t n, int64_t k, bool desc, int64_t *full,
                      cudaStream_t s) {
    const int64_t tiles = (n + SORT_TILE - 1) / SORT_TILE, nc = tiles * k, total = rows * nc;
    if (rows * tiles > 2147483647LL) return emc_set_error(EMC_E_ARG, "topk (too many rows)");
    K *kb = NULL;
    int64_t *ib = NULL;
    int rc = emc_malloc((void **)&kb, sizeof(K) * (size_t)total * 2, s);
    if (rc) return rc;
    rc = emc_malloc((void **)&ib, sizeof(int64_t) * (size_t)total, s);
    if (rc) { emc_free(kb); return rc; }
    K *keys[2] = {kb + total, kb};
    int64_t *idx[2] = {full, ib};
    int passes = 0;
    for (int64_t w = k; w < nc; w *= 2) passes++;
    int cur = passes & 1;
    tile_topk<T, K><<<(unsigned)(rows * tiles), SORT_THREADS, 0, s>>>(x, n, tiles, k, desc,
                                                                       keys[cur], idx[cur]);
    for (int64_t w = k; w < nc; w *= 2) {
        merge_pass<K><<<emc_blocks(total), EMC_THREADS, 0, s>>>(keys[cur], idx[cur], rows, nc, w,
                                                                desc, keys[cur ^ 1],
                                                                idx[cur ^ 1]);
        cur ^= 1;
    }
    cudaError_t e = cudaGetLastError();
    emc_free(kb);
    emc_free(ib);
    if (e != cudaSuccess) return emc_set_error((int)e, "topk");
    return 0;
}

static int topk_small_any(int dtype, const void *x, int64_t rows, int64_t n, int64_t k,
                          bool desc, int64_t *full, cudaStream_t s) {
    switch (dtype) {
    case EM_F32: return topk_small<float, float>((const float *)x, rows, n, k, desc, full, s);
    case EM_F64: return topk_small<double, double>((const double *)x, rows, n, k, desc, full, s);
    case EM_F16: return topk_small<__half, float>((const __half *)x, rows, n, k, desc, full, s);
    case EM_BF16: return topk_small<__nv_bfloat16, float>((const __nv_bfloat16 *)x, rows, n, k, desc, full, s);
    case EM_I64: return topk_small<int64_t, int64_t>((const int64_t *)x, rows, n, k, desc, full, s);
    case EM_I32: return topk_small<int32_t, int64_t>((const int32_t *)x, rows, n, k, desc, full, s);
    case EM_I16: return topk_small<int16_t, int64_t>((const int16_t *)x, rows, n, k, desc, full, s);
    case EM_I8: return topk_small<int8_t, int64_t>((const int8_t *)x, rows, n, k, desc, full, s);
    case EM_U8: case EM_BOOL:
        return topk_small<uint8_t, int64_t>((const uint8_t *)x, rows, n, k, desc, full, s);
    default: return emc_set_error(EMC_E_DTYPE, "emc_topk");
    }
}

static bool sortable(int dtype) { return dtype >= 0 && dtype <= EM_F64; }

EMC_API int emc_sort(int dtype, const void *x, int64_t rows, int64_t n, int descending,
                     void *vals, int64_t *idx, void *stream) {
    if (!sortable(dtype)) return emc_set_error(EMC_E_DTYPE, "emc_sort");
    if (rows < 0 || n < 0 || !idx) return emc_set_error(EMC_E_ARG, "emc_sort");
    if (rows * n == 0) return 0;
    cudaStream_t s = emc_stream(stream);
    int rc = sort_any(dtype, x, rows, n, descending != 0, idx, s);
    if (rc) return rc;
    if (vals) {
        take(dtype, x, idx, rows, n, n, n, vals, NULL, s);
        EMC_LAUNCHED("emc_sort");
    }
    return 0;
}

EMC_API int emc_topk(int dtype, const void *x, int64_t rows, int64_t n, int64_t k, int largest,
                     void *vals, int64_t *idx, void *stream) {
    if (!sortable(dtype)) return emc_set_error(EMC_E_DTYPE, "emc_topk");
    if (rows < 0 || n < 0 || k < 0 || k > n) return emc_set_error(EMC_E_ARG, "emc_topk");
    if (rows * k == 0) return 0;
    cudaStream_t s = emc_stream(stream);
    /* few of many: merge only each tile's first k; else sort whole rows */
    const bool small = n > SORT_TILE && k <= TOPK_SMALL;
    const int64_t nf = small ? (n + SORT_TILE - 1) / SORT_TILE * k : n;
    int64_t *full = NULL;
    int rc = emc_malloc((void **)&full, sizeof(int64_t) * (size_t)(rows * nf), s);
    if (rc) return rc;
    rc = small ? topk_small_any(dtype, x, rows, n, k, largest != 0, full, s)
               : sort_any(dtype, x, rows, n, largest != 0, full, s);
    if (!rc) take(dtype, x, full, rows, n, nf, k, vals, idx, s);
    cudaError_t e = cudaGetLastError();
    emc_free(full);
    if (rc) return rc;
    if (e != cudaSuccess) return emc_set_error((int)e, "emc_topk");
    return 0;
}
