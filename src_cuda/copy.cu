/* Copies, dtype casts, fills and cat: the twin of src_c/copy.c.  Casts follow
   em_cast_loop: a value is read as double (floating sources) or int64, then
   converted as C does (float -> small int through int64, -> bool is != 0). */
#include <stdlib.h>
#include <string.h>
#include "common.cuh"

struct Val {
    double f;
    int64_t i;
    bool isf;
};

__device__ __forceinline__ Val load_val(int dt, const char *p) {
    Val v;
    v.isf = true;
    v.i = 0;
    v.f = 0;
    switch (dt) {
    case EM_F32: v.f = *(const float *)p; break;
    case EM_F64: v.f = *(const double *)p; break;
    case EM_F16: v.f = __half2float(*(const __half *)p); break;
    case EM_BF16: v.f = __bfloat162float(*(const __nv_bfloat16 *)p); break;
    default:
        v.isf = false;
        switch (dt) {
        case EM_BOOL: case EM_U8: v.i = *(const uint8_t *)p; break;
        case EM_I8: v.i = *(const int8_t *)p; break;
        case EM_I16: v.i = *(const int16_t *)p; break;
        case EM_I32: v.i = *(const int32_t *)p; break;
        default: v.i = *(const int64_t *)p; break;
        }
    }
    return v;
}

__device__ __forceinline__ void store_val(int dt, char *p, Val v) {
    int64_t iv = v.isf ? (int64_t)v.f : v.i;
    switch (dt) {
    case EM_BOOL: *(uint8_t *)p = v.isf ? (v.f != 0) : (v.i != 0); break;
    case EM_U8: *(uint8_t *)p = (uint8_t)iv; break;
    case EM_I8: *(int8_t *)p = (int8_t)iv; break;
    case EM_I16: *(int16_t *)p = (int16_t)iv; break;
    case EM_I32: *(int32_t *)p = (int32_t)iv; break;
    case EM_I64: *(int64_t *)p = iv; break;
    case EM_F16: *(__half *)p = __float2half_rn(v.isf ? (float)v.f : (float)v.i); break;
    case EM_BF16:
        *(__nv_bfloat16 *)p = __float2bfloat16_rn(v.isf ? (float)v.f : (float)v.i);
        break;
    case EM_F32: *(float *)p = v.isf ? (float)v.f : (float)v.i; break;
    default: *(double *)p = v.isf ? v.f : (double)v.i; break;
    }
}

__constant__ int dsize[EM_NDTYPES] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8, 8, 16};

__global__ void cast_kernel(emc_nd nd, int64_t n, int dd, char *dst, int sd, const char *src) {
    const int zd = dsize[dd], zs = dsize[sd];
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[2];
        emc_offsets<2>(nd, i, off);
        store_val(dd, dst + off[0] * zd, load_val(sd, src + off[1] * zs));
    }
}

template <typename U>
__global__ void copy_kernel(emc_nd nd, int64_t n, U *dst, const U *src) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[2];
        emc_offsets<2>(nd, i, off);
        dst[off[0]] = src[off[1]];
    }
}

/* contiguous casts: no offset walk */
__global__ void cast_contig(int64_t n, int dd, char *dst, int sd, const char *src) {
    const int zd = dsize[dd], zs = dsize[sd];
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        store_val(dd, dst + i * zd, load_val(sd, src + i * zs));
}

/* a batched transpose, dst[b][r][c] = src[b][c][r] with dst rows contiguous and src
   columns contiguous: 32 x 32 tiles through shared memory, so that reads and writes
   both go along contiguous memory (copy_kernel would read with a stride) */
template <typename U>
__global__ void transpose_kernel(int64_t nb, int64_t R, int64_t C, U *dst, int64_t dsb,
                                 const U *src, int64_t ssb, int64_t ssc) {
    __shared__ U tile[32][33];
    const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;   /* 32 x 8 threads */
    const int64_t r0 = (int64_t)blockIdx.y * 32, c0 = (int64_t)blockIdx.x * 32;
    for (int64_t b = blockIdx.z; b < nb; b += gridDim.z) {
        for (int i = ty; i < 32; i += 8) {
            const int64_t r = r0 + tx, c = c0 + i;
            if (r < R && c < C) tile[i][tx] = src[b * ssb + c * ssc + r];
        }
        __syncthreads();
        for (int i = ty; i < 32; i += 8) {
            const int64_t r = r0 + i, c = c0 + tx;
            if (r < R && c < C) dst[b * dsb + r * C + c] = tile[tx][i];
        }
        __syncthreads();
    }
}

/* whether nd (dst contiguous) is a batched transpose [B,] R x C whose source has
   stride 1 along R: fills nb, R, C and the source's batch and C strides */
static bool as_transpose(const emc_nd *nd, int64_t *nb, int64_t *R, int64_t *C, int64_t *ssb,
                         int64_t *ssc) {
    if (!emc_contig(nd, 0)) return false;
    int d[EMC_MAX_DIMS], k = 0;
    for (int i = 0; i < nd->ndim; i++)
        if (nd->shape[i] != 1) d[k++] = i;
    if (k < 2 || k > 3) return false;
    const int rd = d[k - 2], cd = d[k - 1];
    if (nd->strides[1][rd] != 1 || nd->strides[1][cd] < 1) return false;
    *R = nd->shape[rd];
    *C = nd->shape[cd];
    *ssc = nd->strides[1][cd];
    *nb = k == 3 ? nd->shape[d[0]] : 1;
    *ssb = k == 3 ? nd->strides[1][d[0]] : 0;
    return (*R + 31) / 32 <= 65535;
}

/* nd with its innermost dim counted in 16-byte vectors, when that dim is contiguous
   in both operands and every row starts on a 16-byte boundary: copy_kernel then
   moves whole vectors (permutes that keep the last dim, such as splitting heads) */
static bool as_vectors(const emc_nd *nd, int isz, const void *dst, const void *src, emc_nd *out) {
    const int last = nd->ndim - 1;
    if (last < 0 || isz >= 16 || 16 % isz || ((uintptr_t)dst & 15) || ((uintptr_t)src & 15))
        return false;
    const int64_t v = 16 / isz;
    if (nd->shape[last] % v || nd->strides[0][last] != 1 || nd->strides[1][last] != 1) return false;
    *out = *nd;
    for (int d = 0; d < last; d++)
        for (int a = 0; a < 2; a++) {
            if (nd->shape[d] != 1 && nd->strides[a][d] % v) return false;
            out->strides[a][d] = nd->strides[a][d] / v;
        }
    out->shape[last] = nd->shape[last] / v;
    return true;
}

template <typename U>
static void launch_transpose(int64_t nb, int64_t R, int64_t C, void *dst, const void *src,
                             int64_t ssb, int64_t ssc, cudaStream_t s) {
    dim3 grid((unsigned)((C + 31) / 32), (unsigned)((R + 31) / 32),
              (unsigned)(nb < 65535 ? nb : 65535));
    transpose_kernel<U><<<grid, 256, 0, s>>>(nb, R, C, (U *)dst, R * C, (const U *)src, ssb, ssc);
}

EMC_API int emc_copy(int dd, void *dst, int sd, const void *src, const emc_nd *nd,
                     void *stream) {
    if (dd < 0 || dd >= EM_NDTYPES || sd < 0 || sd >= EM_NDTYPES)
        return emc_set_error(EMC_E_DTYPE, "emc_copy");
    /* complex values are copied, not converted */
    if (dd != sd && (dd >= EM_C64 || sd >= EM_C64)) return emc_set_error(EMC_E_DTYPE, "emc_copy");
    int64_t n = emc_numel(nd);
    if (n == 0) return 0;
    cudaStream_t s = emc_stream(stream);
    bool contig = emc_contig(nd, 0) && emc_contig(nd, 1);
    int64_t nb, R, C, ssb, ssc;
    emc_nd vec;
    if (dd == sd && contig) {
        EMC_CHECK(cudaMemcpyAsync(dst, src, (size_t)n * em_itemsize[dd], cudaMemcpyDeviceToDevice,
                                  s), "emc_copy");
        return 0;
    }
    if (contig) {
        cast_contig<<<emc_blocks(n), EMC_THREADS, 0, s>>>(n, dd, (char *)dst, sd,
                                                          (const char *)src);
    } else if (dd == sd && as_transpose(nd, &nb, &R, &C, &ssb, &ssc)) {
        switch (em_itemsize[dd]) {
        case 1: launch_transpose<uint8_t>(nb, R, C, dst, src, ssb, ssc, s); break;
        case 2: launch_transpose<uint16_t>(nb, R, C, dst, src, ssb, ssc, s); break;
        case 4: launch_transpose<uint32_t>(nb, R, C, dst, src, ssb, ssc, s); break;
        case 16: launch_transpose<uint4>(nb, R, C, dst, src, ssb, ssc, s); break;
        default: launch_transpose<uint64_t>(nb, R, C, dst, src, ssb, ssc, s); break;
        }
    } else if (dd == sd && as_vectors(nd, (int)em_itemsize[dd], dst, src, &vec)) {
        const int64_t nv = emc_numel(&vec);
        copy_kernel<<<emc_blocks(nv), EMC_THREADS, 0, s>>>(vec, nv, (uint4 *)dst, (const uint4 *)src);
    } else if (dd == sd) {
        switch (em_itemsize[dd]) {
        case 1: copy_kernel<<<emc_blocks(n), EMC_THREADS, 0, s>>>(*nd, n, (uint8_t *)dst, (const uint8_t *)src); break;
        case 2: copy_kernel<<<emc_blocks(n), EMC_THREADS, 0, s>>>(*nd, n, (uint16_t *)dst, (const uint16_t *)src); break;
        case 4: copy_kernel<<<emc_blocks(n), EMC_THREADS, 0, s>>>(*nd, n, (uint32_t *)dst, (const uint32_t *)src); break;
        case 16: copy_kernel<<<emc_blocks(n), EMC_THREADS, 0, s>>>(*nd, n, (uint4 *)dst, (const uint4 *)src); break;
        default: copy_kernel<<<emc_blocks(n), EMC_THREADS, 0, s>>>(*nd, n, (uint64_t *)dst, (const uint64_t *)src); break;
        }
    } else {
        cast_kernel<<<emc_blocks(n), EMC_THREADS, 0, s>>>(*nd, n, dd, (char *)dst, sd,
                                                          (const char *)src);
    }
    EMC_LAUNCHED("emc_copy");
    return 0;
}

template <typename U>
__global__ void fill_kernel(emc_nd nd, int64_t n, U *dst, U v, bool contig) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        if (contig) {
            dst[i] = v;
        } else {
            int64_t off[1];
            emc_offsets<1>(nd, i, off);
            dst[off[0]] = v;
        }
    }
}

EMC_API int emc_fill(int dtype, void *dst, const emc_nd *nd, const void *value, void *stream) {
    if (dtype < 0 || dtype >= EM_NDTYPES) return emc_set_error(EMC_E_DTYPE, "emc_fill");
    int64_t n = emc_numel(nd);
    if (n == 0) return 0;
    cudaStream_t s = emc_stream(stream);
    bool contig = emc_contig(nd, 0);
    unsigned g = emc_blocks(n);
    switch (em_itemsize[dtype]) {
    case 1: { uint8_t v; memcpy(&v, value, 1); fill_kernel<<<g, EMC_THREADS, 0, s>>>(*nd, n, (uint8_t *)dst, v, contig); break; }
    case 2: { uint16_t v; memcpy(&v, value, 2); fill_kernel<<<g, EMC_THREADS, 0, s>>>(*nd, n, (uint16_t *)dst, v, contig); break; }
    case 4: { uint32_t v; memcpy(&v, value, 4); fill_kernel<<<g, EMC_THREADS, 0, s>>>(*nd, n, (uint32_t *)dst, v, contig); break; }
    case 16: { uint4 v; memcpy(&v, value, 16); fill_kernel<<<g, EMC_THREADS, 0, s>>>(*nd, n, (uint4 *)dst, v, contig); break; }
    default: { uint64_t v; memcpy(&v, value, 8); fill_kernel<<<g, EMC_THREADS, 0, s>>>(*nd, n, (uint64_t *)dst, v, contig); break; }
    }
    EMC_LAUNCHED("emc_fill");
    return 0;
}

/* cat: up to CAT_MAX inputs per launch; each input's rows land at a column
   offset of the output's rows.  Moved in units of the dtype's size. */
#define CAT_MAX 32
struct CatArgs {
    const void *src[CAT_MAX];
    int64_t off[CAT_MAX + 1];   /* element offsets of each input's run within an output row */
    int n;
};

template <typename U>
__global__ void cat_kernel(CatArgs a, U *out, int64_t row, int64_t out_row, int64_t total) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = i / row, c = i - r * row + a.off[0];
        int k = 0;
        while (k + 1 < a.n && a.off[k + 1] <= c) k++;
        int64_t w = a.off[k + 1] - a.off[k];
        out[r * out_row + c] = ((const U *)a.src[k])[r * w + (c - a.off[k])];
    }
}

EMC_API int emc_cat(int dtype, void *out, int n, const void *const *srcs, const int64_t *sizes,
                    int64_t outer, int64_t inner, void *stream) {
    if (dtype < 0 || dtype >= EM_NDTYPES) return emc_set_error(EMC_E_DTYPE, "emc_cat");
    if (n < 0 || outer < 0 || inner < 0) return emc_set_error(EMC_E_ARG, "emc_cat");
    int64_t out_row = 0;
    for (int k = 0; k < n; k++) {
        if (sizes[k] < 0) return emc_set_error(EMC_E_ARG, "emc_cat");
        out_row += sizes[k] * inner;
    }
    cudaStream_t s = emc_stream(stream);
    int64_t col = 0;
    for (int k0 = 0; k0 < n; k0 += CAT_MAX) {
        CatArgs a;
        a.n = n - k0 < CAT_MAX ? n - k0 : CAT_MAX;
        a.off[0] = col;
        for (int k = 0; k < a.n; k++) {
            a.src[k] = srcs[k0 + k];
            col += sizes[k0 + k] * inner;
            a.off[k + 1] = col;
        }
        int64_t row = a.off[a.n] - a.off[0], total = outer * row;
        if (total == 0) continue;
        unsigned g = emc_blocks(total);
        switch (em_itemsize[dtype]) {
        case 1: cat_kernel<<<g, EMC_THREADS, 0, s>>>(a, (uint8_t *)out, row, out_row, total); break;
        case 2: cat_kernel<<<g, EMC_THREADS, 0, s>>>(a, (uint16_t *)out, row, out_row, total); break;
        case 4: cat_kernel<<<g, EMC_THREADS, 0, s>>>(a, (uint32_t *)out, row, out_row, total); break;
        case 16: cat_kernel<<<g, EMC_THREADS, 0, s>>>(a, (uint4 *)out, row, out_row, total); break;
        default: cat_kernel<<<g, EMC_THREADS, 0, s>>>(a, (uint64_t *)out, row, out_row, total); break;
        }
        EMC_LAUNCHED("emc_cat");
    }
    return 0;
}

EMC_API int emc_stack(int dtype, void *out, int n, const void *const *srcs, int64_t outer,
                      int64_t inner, void *stream) {
    if (n < 0) return emc_set_error(EMC_E_ARG, "emc_stack");
    if (n == 0) return 0;
    int64_t *ones = (int64_t *)malloc(sizeof(int64_t) * (size_t)n);
    if (!ones) return emc_set_error(EMC_E_NOMEM, "emc_stack");
    for (int k = 0; k < n; k++) ones[k] = 1;
    int rc = emc_cat(dtype, out, n, srcs, ones, outer, inner, stream);
    free(ones);
    return rc;
}
