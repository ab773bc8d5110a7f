/* Inclusive scans (cumsum, cumprod, logcumsumexp, cummax, cummin) and stream compaction
   (nonzero, masked_select, masked_scatter): the twin of src_c's em_scan.

   The accumulator is the CPU's: double for float32 and float64, int64 (wrapping)
   for int64.  Many columns (I > 1) are scanned serially by one thread each,
   exactly as the CPU does (bit-identical); few long columns (SC_FEW_COLS) and
   rows (I == 1) are cut into fixed tiles of
   SC_TILE elements: thread t of a SC_BLOCK-thread block scans elements
   [t * SC_PER, (t + 1) * SC_PER) of its tile serially, the threads' totals are
   combined by a Kogge-Stone warp scan and the warps' totals in order, and a
   tile's carry is the serial combination of the totals of the tiles before it
   (a column is a row read at stride I).
   Nothing depends on the grid size, so results are the same on every launch
   and device; float rows differ from the CPU's serial sums only by rounding
   (the association differs). */
#include "common.cuh"
#include "ember_reduce.h"

#define SC_BLOCK 256
#define SC_PER 4
#define SC_TILE (SC_BLOCK * SC_PER)
/* at most this many columns of at least SC_TILE elements take the tiled scan: one
   thread per column would leave most of the device idle */
#define SC_FEW_COLS 4096

template <typename A> struct ScanOp {
    int op;
    __device__ __forceinline__ A id() const {
        return op == SC_PROD ? (A)1 : op == SC_LOGSUMEXP ? -(A)INFINITY : (A)0;
    }
    __device__ __forceinline__ A combine(A a, A b) const {
        if (op == SC_PROD) return a * b;
        if (op == SC_LOGSUMEXP) {       /* the CPU's log-add-exp */
            if (a != a || b != b) return a + b;
            A m = a > b ? a : b, n = a > b ? b : a;
            if (m == -(A)INFINITY || m == (A)INFINITY) return m;
            return m + log1p(exp(n - m));
        }
        return a + b;
    }
};

/* int64 wraps as the CPU's (computed in uint64) */
template <> struct ScanOp<int64_t> {
    int op;
    __device__ __forceinline__ int64_t id() const { return op == SC_PROD ? 1 : 0; }
    __device__ __forceinline__ int64_t combine(int64_t a, int64_t b) const {
        return op == SC_PROD ? (int64_t)((uint64_t)a * (uint64_t)b)
                             : (int64_t)((uint64_t)a + (uint64_t)b);
    }
};

/* input loads: a mask byte counts as 0 / 1 */
template <typename T, typename A> __device__ __forceinline__ A sc_load(const T *p) {
    return (A)*p;
}
template <> __device__ __forceinline__ int64_t sc_load<uint8_t, int64_t>(const uint8_t *p) {
    return *p != 0;
}

/* columns: thread (o, i) scans x[o, :, i] serially (the CPU's order) */
template <typename T, typename A>
__global__ void scan_cols(const T *x, int64_t O, int64_t K, int64_t I, T *out, ScanOp<A> op) {
    const int64_t n = O * I;
    for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < n;
         c += (int64_t)gridDim.x * blockDim.x) {
        const int64_t o = c / I, i = c - o * I;
        const T *xr = x + o * K * I + i;
        T *yr = out + o * K * I + i;
        A a = op.id();
        for (int64_t k = 0; k < K; k++) {
            a = op.combine(a, sc_load<T, A>(xr + k * I));
            yr[k * I] = (T)a;
        }
    }
}

/* One tile of a row: the inclusive scan of x[k * st] (k < len) combined after
   `carry`; written to out[k * st] (when out != NULL), and the tile's total to
   *total (when total != NULL).  Every thread of the block calls it. */
template <typename T, typename A, typename R>
__device__ void scan_tile(const T *x, int64_t len, int64_t st, A carry, R *out, A *total,
                          ScanOp<A> op) {
    __shared__ A sh[SC_TILE];
    __shared__ A warp_tot[SC_BLOCK / 32];
    const int t = threadIdx.x, lane = t & 31, w = t >> 5;
    for (int k = t; k < SC_TILE; k += SC_BLOCK)
        sh[k] = k < len ? sc_load<T, A>(x + k * st) : op.id();
    __syncthreads();
    A loc[SC_PER];
    A a = op.id();
#pragma unroll
    for (int j = 0; j < SC_PER; j++) {
        a = j ? op.combine(a, sh[t * SC_PER + j]) : sh[t * SC_PER];
        loc[j] = a;
    }
    /* inclusive scan of the threads' totals in the warp (Kogge-Stone) */
    A incl = a;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        A v = __shfl_up_sync(0xffffffffu, incl, d);
        if (lane >= d) incl = op.combine(v, incl);
    }
    if (lane == 31) warp_tot[w] = incl;
    A excl = __shfl_up_sync(0xffffffffu, incl, 1);
    __syncthreads();
    /* the prefix before this thread: carry, the warps before, the lanes before */
    A pre = carry;
    for (int v = 0; v < w; v++) pre = op.combine(pre, warp_tot[v]);
    if (lane) pre = op.combine(pre, excl);
    __syncthreads();
#pragma unroll
    for (int j = 0; j < SC_PER; j++) sh[t * SC_PER + j] = op.combine(pre, loc[j]);
    __syncthreads();
    if (out)
        for (int k = t; k < len; k += SC_BLOCK) out[k * st] = (R)sh[k];
    if (total && t == 0) *total = sh[len - 1];
    __syncthreads();
}

/* rows r = (o, i) of [O, K, I] (x[o, :, i], stride I): block b takes tiles b,
   b + gridDim.x, ... of the O * I * ntiles tiles; the first pass (out == NULL)
   writes each tile's total, the second scans again after the tile's carry
   (carry == NULL: a single tile per row).  out_shift (I == 1 only) moves row r's
   results by out_shift * (r + 1). */
template <typename T, typename A, typename R>
__global__ void scan_rows(const T *x, int64_t O, int64_t K, int64_t I, R *out,
                          int64_t out_shift, A *tot, const A *carry, ScanOp<A> op) {
    const int64_t nt = (K + SC_TILE - 1) / SC_TILE;
    for (int64_t b = blockIdx.x; b < O * I * nt; b += gridDim.x) {
        const int64_t r = b / nt, j = b - r * nt, o = r / I, i = r - o * I;
        const int64_t base = o * K * I + i + j * SC_TILE * I;
        const int64_t len = K - j * SC_TILE < SC_TILE ? K - j * SC_TILE : SC_TILE;
        A c = carry ? carry[b] : op.id();
        scan_tile<T, A, R>(x + base, len, I, c,
                           out ? out + base + out_shift * (r + 1) : (R *)NULL,
                           tot ? tot + b : (A *)NULL, op);
    }
}

/* carry[o, j] = the totals of tiles 0..j-1 of row o, combined in order */
template <typename A>
__global__ void scan_carries(A *tc, int64_t O, int64_t nt, ScanOp<A> op) {
    for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < O;
         o += (int64_t)gridDim.x * blockDim.x) {
        A a = op.id();
        for (int64_t j = 0; j < nt; j++) {
            A v = tc[o * nt + j];
            tc[o * nt + j] = a;
            a = j ? op.combine(a, v) : v;
        }
    }
}

static unsigned sc_grid(int64_t tiles) {
    return (unsigned)(tiles < 65535LL * 16 ? (tiles < 1 ? 1 : tiles) : 65535LL * 16);
}

/* a tiled scan of the rows x[o, :, i] of [O, K, I] into out (R); with I == 1, row
   o's results at out + o * K + shift * (o + 1) */
template <typename T, typename A, typename R>
static int scan_rows_run(const T *x, int64_t O, int64_t K, int64_t I, R *out, int64_t shift,
                         ScanOp<A> op, cudaStream_t s, const char *where) {
    const int64_t nt = (K + SC_TILE - 1) / SC_TILE, rows = O * I;
    if (nt == 1) {
        scan_rows<T, A, R><<<sc_grid(rows), SC_BLOCK, 0, s>>>(x, O, K, I, out, shift, NULL, NULL,
                                                              op);
        EMC_LAUNCHED(where);
        return 0;
    }
    A *tc = NULL;
    int rc = emc_malloc((void **)&tc, sizeof(A) * (size_t)(rows * nt), s);
    if (rc) return rc;
    scan_rows<T, A, R><<<sc_grid(rows * nt), SC_BLOCK, 0, s>>>(x, O, K, I, (R *)NULL, 0, tc,
                                                               NULL, op);
    scan_carries<A><<<emc_blocks(rows), EMC_THREADS, 0, s>>>(tc, rows, nt, op);
    scan_rows<T, A, R><<<sc_grid(rows * nt), SC_BLOCK, 0, s>>>(x, O, K, I, out, shift, NULL, tc,
                                                               op);
    cudaError_t e = cudaGetLastError();
    emc_free(tc);
    return e == cudaSuccess ? 0 : emc_set_error((int)e, where);
}

template <typename T, typename A>
static int scan_typed(int op, const void *x, int64_t O, int64_t K, int64_t I, void *out,
                      cudaStream_t s) {
    ScanOp<A> so{op};
    if (I == 1 || (O * I <= SC_FEW_COLS && K >= SC_TILE))
        return scan_rows_run<T, A, T>((const T *)x, O, K, I, (T *)out, 0, so, s, "emc_scan");
    scan_cols<T, A><<<emc_blocks(O * I), EMC_THREADS, 0, s>>>((const T *)x, O, K, I, (T *)out,
                                                               so);
    EMC_LAUNCHED("emc_scan");
    return 0;
}

EMC_API int emc_scan(int op, int dtype, const void *x, int64_t O, int64_t K, int64_t I,
                     void *out, void *stream) {
    if (op != SC_SUM && op != SC_PROD && op != SC_LOGSUMEXP)
        return emc_set_error(EMC_E_OP, "emc_scan");
    if (O < 0 || K < 0 || I < 0) return emc_set_error(EMC_E_ARG, "emc_scan");
    if (O * K * I == 0) return 0;
    cudaStream_t s = emc_stream(stream);
    switch (dtype) {
    case EM_F32: return scan_typed<float, double>(op, x, O, K, I, out, s);
    case EM_F64: return scan_typed<double, double>(op, x, O, K, I, out, s);
    case EM_I64:
        if (op == SC_LOGSUMEXP) break;
        return scan_typed<int64_t, int64_t>(op, x, O, K, I, out, s);
    default: break;
    }
    return emc_set_error(EMC_E_DTYPE, "emc_scan");
}

/* cummax / cummin: thread (o, i) walks x[o, :, i] in order with the CPU's rule: take v
   when it is NaN, or when the running value is not NaN and v >= (<=) it, so ties and
   NaNs move the index forward */
template <typename T, bool MAX>
__global__ void cumext_k(const T *x, int64_t O, int64_t K, int64_t I, T *vals, int64_t *idx) {
    const int64_t n = O * I;
    for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < n;
         c += (int64_t)gridDim.x * blockDim.x) {
        const int64_t o = c / I, i = c - o * I, base = o * K * I + i;
        T b = x[base];
        int64_t bi = 0;
        vals[base] = b;
        idx[base] = 0;
        for (int64_t k = 1; k < K; k++) {
            const T v = x[base + k * I];
            if (v != v || (b == b && (MAX ? v >= b : v <= b))) {
                b = v;
                bi = k;
            }
            vals[base + k * I] = b;
            idx[base + k * I] = bi;
        }
    }
}

template <typename T>
static int cumext_typed(int op, const void *x, int64_t O, int64_t K, int64_t I, void *vals,
                        int64_t *idx, cudaStream_t s) {
    if (op == SC_MAX)
        cumext_k<T, true><<<emc_blocks(O * I), EMC_THREADS, 0, s>>>((const T *)x, O, K, I,
                                                                    (T *)vals, idx);
    else
        cumext_k<T, false><<<emc_blocks(O * I), EMC_THREADS, 0, s>>>((const T *)x, O, K, I,
                                                                     (T *)vals, idx);
    EMC_LAUNCHED("emc_cumext");
    return 0;
}

EMC_API int emc_cumext(int op, int dtype, const void *x, int64_t O, int64_t K, int64_t I,
                       void *vals, int64_t *idx, void *stream) {
    if (op != SC_MAX && op != SC_MIN) return emc_set_error(EMC_E_OP, "emc_cumext");
    if (O < 0 || K < 0 || I < 0) return emc_set_error(EMC_E_ARG, "emc_cumext");
    if (O * K * I == 0) return 0;
    cudaStream_t s = emc_stream(stream);
    switch (dtype) {
    case EM_F32: return cumext_typed<float>(op, x, O, K, I, vals, idx, s);
    case EM_F64: return cumext_typed<double>(op, x, O, K, I, vals, idx, s);
    case EM_I64: return cumext_typed<int64_t>(op, x, O, K, I, vals, idx, s);
    default: return emc_set_error(EMC_E_DTYPE, "emc_cumext");
    }
}

/* --- stream compaction ---------------------------------------------------------- */

EMC_API int emc_mask_positions(const uint8_t *mask, int64_t n, int64_t *pos, void *stream) {
    if (n < 0) return emc_set_error(EMC_E_ARG, "emc_mask_positions");
    cudaStream_t s = emc_stream(stream);
    EMC_CHECK(cudaMemsetAsync(pos, 0, sizeof(int64_t), s), "emc_mask_positions");
    if (n == 0) return 0;
    /* the inclusive counts land one place on: pos[i + 1] = count of mask[0..i] */
    return scan_rows_run<uint8_t, int64_t, int64_t>(mask, 1, n, 1, pos, 1, ScanOp<int64_t>{SC_SUM},
                                                    s, "emc_mask_positions");
}

struct ShapeArg { int64_t s[EMC_MAX_DIMS]; };

__global__ void nonzero_k(const uint8_t *mask, int ndim, ShapeArg sh, int64_t n,
                          const int64_t *pos, int64_t *out) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        if (!mask[i]) continue;
        int64_t *row = out + pos[i] * ndim, r = i;
        for (int d = ndim - 1; d >= 0; d--) {
            const int64_t q = r / sh.s[d];
            row[d] = r - q * sh.s[d];
            r = q;
        }
    }
}

EMC_API int emc_nonzero(const uint8_t *mask, int ndim, const int64_t *shape, int64_t n,
                        const int64_t *pos, int64_t *out, void *stream) {
    if (ndim < 0 || ndim > EMC_MAX_DIMS || n < 0) return emc_set_error(EMC_E_ARG, "emc_nonzero");
    if (n == 0 || ndim == 0) return 0;
    ShapeArg sh;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] <= 0) return emc_set_error(EMC_E_ARG, "emc_nonzero");
        sh.s[d] = shape[d];
    }
    cudaStream_t s = emc_stream(stream);
    nonzero_k<<<emc_blocks(n), EMC_THREADS, 0, s>>>(mask, ndim, sh, n, pos, out);
    EMC_LAUNCHED("emc_nonzero");
    return 0;
}

/* element moves by size: the bits only */
struct Bytes16 { uint64_t a, b; };

template <typename U, bool SELECT>
__global__ void compact_k(U *out, const U *src, const uint8_t *mask, const int64_t *pos,
                          int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        if (!mask[i]) continue;
        if (SELECT) out[pos[i]] = src[i];
        else out[i] = src[pos[i]];
    }
}

template <bool SELECT>
static int compact(int itemsize, void *out, const void *src, const uint8_t *mask,
                   const int64_t *pos, int64_t n, void *stream, const char *where) {
    if (n < 0) return emc_set_error(EMC_E_ARG, where);
    if (n == 0) return 0;
    cudaStream_t s = emc_stream(stream);
    const unsigned g = emc_blocks(n);
    switch (itemsize) {
    case 1: compact_k<uint8_t, SELECT><<<g, EMC_THREADS, 0, s>>>((uint8_t *)out, (const uint8_t *)src, mask, pos, n); break;
    case 2: compact_k<uint16_t, SELECT><<<g, EMC_THREADS, 0, s>>>((uint16_t *)out, (const uint16_t *)src, mask, pos, n); break;
    case 4: compact_k<uint32_t, SELECT><<<g, EMC_THREADS, 0, s>>>((uint32_t *)out, (const uint32_t *)src, mask, pos, n); break;
    case 8: compact_k<uint64_t, SELECT><<<g, EMC_THREADS, 0, s>>>((uint64_t *)out, (const uint64_t *)src, mask, pos, n); break;
    case 16: compact_k<Bytes16, SELECT><<<g, EMC_THREADS, 0, s>>>((Bytes16 *)out, (const Bytes16 *)src, mask, pos, n); break;
    default: return emc_set_error(EMC_E_ARG, where);
    }
    EMC_LAUNCHED(where);
    return 0;
}

EMC_API int emc_masked_select(int itemsize, const void *x, const uint8_t *mask,
                              const int64_t *pos, int64_t n, void *out, void *stream) {
    return compact<true>(itemsize, out, x, mask, pos, n, stream, "emc_masked_select");
}

EMC_API int emc_masked_scatter(int itemsize, void *out, const uint8_t *mask, const int64_t *pos,
                               int64_t n, const void *src, void *stream) {
    return compact<false>(itemsize, out, src, mask, pos, n, stream, "emc_masked_scatter");
}
