/* Shared by the .cu files: error reporting, launch geometry, the N-d offset
   walk of emc_nd, dtype loads/stores and warp reductions. */
#ifndef EMC_COMMON_CUH
#define EMC_COMMON_CUH
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <stdint.h>
#include "ember_cuda.h"
#include "ember_math.h"

/* remember a failure's message for emc_last_error() (runtime.cu) */
int emc_set_error(int code, const char *where);

/* after a launch: the launch error (bad configuration, no device) or 0 */
#define EMC_LAUNCHED(where)                                              \
    do {                                                                 \
        cudaError_t e_ = cudaGetLastError();                             \
        if (e_ != cudaSuccess) return emc_set_error((int)e_, where);     \
    } while (0)
#define EMC_CHECK(call, where)                                           \
    do {                                                                 \
        cudaError_t e_ = (call);                                         \
        if (e_ != cudaSuccess) return emc_set_error((int)e_, where);     \
    } while (0)

#define EMC_THREADS 256

static inline cudaStream_t emc_stream(void *s) { return (cudaStream_t)s; }

/* blocks for n work items at `per` items per thread, capped for grid-stride loops */
static inline unsigned emc_blocks(int64_t n, int per = 1) {
    int64_t b = (n + (int64_t)EMC_THREADS * per - 1) / ((int64_t)EMC_THREADS * per);
    if (b < 1) b = 1;
    if (b > 65535LL * 16) b = 65535LL * 16;
    return (unsigned)b;
}

static inline int64_t emc_numel(const emc_nd *nd) {
    int64_t n = 1;
    for (int d = 0; d < nd->ndim; d++) n *= nd->shape[d];
    return n;
}

/* whether operand a is contiguous over the whole space (then offsets == i) */
static inline bool emc_contig(const emc_nd *nd, int a) {
    int64_t expect = 1;
    for (int d = nd->ndim - 1; d >= 0; d--) {
        if (nd->shape[d] != 1 && nd->strides[a][d] != expect) return false;
        expect *= nd->shape[d];
    }
    return true;
}

/* element offsets of linear index i for NA operands */
template <int NA>
__device__ __forceinline__ void emc_offsets(const emc_nd &nd, int64_t i, int64_t off[NA]) {
#pragma unroll
    for (int a = 0; a < NA; a++) off[a] = 0;
    for (int d = nd.ndim - 1; d >= 0; d--) {
        int64_t sz = nd.shape[d], q = i / sz, r = i - q * sz;
        i = q;
#pragma unroll
        for (int a = 0; a < NA; a++) off[a] += r * nd.strides[a][d];
    }
}

/* --- scalar types ----------------------------------------------------------- */
typedef uint8_t em_bool;

template <typename T> struct Acc { typedef T type; };
template <> struct Acc<__half> { typedef float type; };
template <> struct Acc<__nv_bfloat16> { typedef float type; };

template <typename T> __host__ __device__ __forceinline__ float to_f(T v) { return (float)v; }
template <> __host__ __device__ __forceinline__ float to_f<__half>(__half v) { return __half2float(v); }
template <> __host__ __device__ __forceinline__ float to_f<__nv_bfloat16>(__nv_bfloat16 v) {
    return __bfloat162float(v);
}
template <typename T> __host__ __device__ __forceinline__ T from_f(float v) { return (T)v; }
template <> __host__ __device__ __forceinline__ __half from_f<__half>(float v) { return __float2half_rn(v); }
template <> __host__ __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float v) {
    return __float2bfloat16_rn(v);
}
template <typename A, typename T> __device__ __forceinline__ A load_acc(const T *p) {
    return (A)to_f(*p);
}
template <> __device__ __forceinline__ double load_acc<double, double>(const double *p) {
    return *p;
}
template <typename T, typename A> __device__ __forceinline__ void store_acc(T *p, A v) {
    *p = from_f<T>((float)v);
}
template <> __device__ __forceinline__ void store_acc<double, double>(double *p, double v) {
    *p = v;
}

/* --- warp / block reductions in a fixed order --------------------------------- */
template <typename A> __device__ __forceinline__ A warp_sum(A v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
template <typename A> __device__ __forceinline__ A warp_max(A v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        A w = __shfl_xor_sync(0xffffffffu, v, o);
        v = (w != w || w > v) ? w : v;   /* NaN wins */
    }
    return v;
}

/* the sum / max of one value per thread of a block of `nthreads` (a multiple of
   32, at most 1024) in a fixed order; every thread gets the result */
template <typename A> __device__ A block_sum(A v) {
    __shared__ A part[32];
    __shared__ A total;
    v = warp_sum(v);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
        A t = part[0];
        for (unsigned w = 1; w < blockDim.x / 32; w++) t += part[w];
        total = t;
    }
    __syncthreads();
    A r = total;
    __syncthreads();
    return r;
}
template <typename A> __device__ A block_max(A v) {
    __shared__ A part[32];
    __shared__ A total;
    v = warp_max(v);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
        A t = part[0];
        for (unsigned w = 1; w < blockDim.x / 32; w++) t = (part[w] != part[w] || part[w] > t) ? part[w] : t;
        total = t;
    }
    __syncthreads();
    A r = total;
    __syncthreads();
    return r;
}

/* the exclusive prefix of one int per thread over a block of NT threads (a
   multiple of 32) in thread order, and the block's total; every thread of the
   block calls it */
template <int NT> __device__ __forceinline__ int block_excl_scan(int v, int *total) {
    __shared__ int wt[NT / 32];
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    int incl = v;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        const int y = __shfl_up_sync(0xffffffffu, incl, d);
        if (lane >= d) incl += y;
    }
    if (lane == 31) wt[w] = incl;
    __syncthreads();
    int pre = 0, tot = 0;
#pragma unroll
    for (int i = 0; i < NT / 32; i++) {
        if (i < w) pre += wt[i];
        tot += wt[i];
    }
    __syncthreads();   /* wt is rewritten by the next call */
    *total = tot;
    return pre + incl - v;
}

/* --- Welford accumulators: per thread, Chan's combination in a fixed order --- */
struct Wf { double n, mean, m2; };

__device__ __forceinline__ Wf wf_add(Wf a, double x) {
    a.n += 1;
    double d = x - a.mean;
    a.mean += d / a.n;
    a.m2 += d * (x - a.mean);
    return a;
}
__device__ __forceinline__ Wf wf_merge(Wf a, Wf b) {
    if (b.n == 0) return a;
    if (a.n == 0) return b;
    double n = a.n + b.n, d = b.mean - a.mean;
    Wf r;
    r.n = n;
    r.mean = a.mean + d * (b.n / n);
    r.m2 = a.m2 + b.m2 + d * d * (a.n * b.n / n);
    return r;
}

/* merge one Welford state per thread over a block of `nthreads` (multiple of 32):
   butterfly in the warp (each pair merged in lane order), then warps in order;
   thread 0 gets the result */
__device__ __forceinline__ Wf block_welford(Wf w) {
    __shared__ Wf part[32];
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        Wf v;
        v.n = __shfl_xor_sync(0xffffffffu, w.n, off);
        v.mean = __shfl_xor_sync(0xffffffffu, w.mean, off);
        v.m2 = __shfl_xor_sync(0xffffffffu, w.m2, off);
        w = (threadIdx.x & off) ? wf_merge(v, w) : wf_merge(w, v);
    }
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = w;
    __syncthreads();
    if (threadIdx.x == 0)
        for (unsigned i = 1; i < blockDim.x / 32; i++) w = wf_merge(w, part[i]);
    return w;
}

/* a device int that index kernels set on a bad index (runtime.cu) */
int *emc_error_flag(void);

template <typename T, typename A> __device__ __forceinline__ A ld(const T *p) {
    if constexpr (sizeof(T) == 2) return (A)to_f(*p); else return (A)*p;
}
template <typename T, typename A> __device__ __forceinline__ void st(T *p, A v) {
    if constexpr (sizeof(T) == 2) *p = from_f<T>((float)v); else *p = (T)v;
}

/* dispatch a dtype to a typed body: DT(T) expands once per supported type */
#define EMC_FLOAT_TYPES(dtype, ...)                                             \
    switch (dtype) {                                                             \
    case EM_F32: { typedef float T; __VA_ARGS__; } break;                               \
    case EM_F64: { typedef double T; __VA_ARGS__; } break;                              \
    case EM_F16: { typedef __half T; __VA_ARGS__; } break;                              \
    case EM_BF16: { typedef __nv_bfloat16 T; __VA_ARGS__; } break;                      \
    default: return emc_set_error(EMC_E_DTYPE, __func__);                        \
    }
#endif
