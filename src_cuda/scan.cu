/* Inclusive scans (cumsum, cumprod, logcumsumexp, cummax, cummin) and stream compaction
   (nonzero, masked_select, masked_scatter): the twin of src_c's em_scan.

   The accumulator is the CPU's: double for float32 and float64, int64 (wrapping)
   for int64.  Many columns (I > 1) are scanned serially by one thread each,
   exactly as the CPU does (bit-identical); few long columns (SC_FEW_COLS) and
   rows (I == 1) are cut into fixed tiles of SC_TILE elements and scanned in
   three passes (reduce, scan the tiles' totals, scan each tile after its
   carry): the totals are scanned by the same three passes recursively (by one
   thread a row where rows have few tiles), so every pass runs on many blocks.  In a tile, thread t scans elements
   [t * SC_PER, (t + 1) * SC_PER) serially, the threads' totals are combined by
   a Kogge-Stone warp scan and the warps' totals in order; a tile's total (pass
   one) is a fixed tree over the tile.  Nothing depends on the grid size, so
   results are the same on every launch and device; float rows differ from the
   CPU's serial sums only by rounding (the association differs). */
#include "common.cuh"
#include "ember_reduce.h"

#define SC_BLOCK 256
#define SC_PER 8
#define SC_TILE (SC_BLOCK * SC_PER)
/* a gap every 16 slots: thread t's run of SC_PER 8-byte slots starts in another
   bank than its neighbours' */
#define SC_PAD(k) ((k) + ((k) >> 4))
#define SC_SHARED (SC_TILE + SC_TILE / 16)
/* at most this many columns of at least SC_TILE elements take the tiled scan: one
   thread per column would leave most of the device idle */
#define SC_FEW_COLS 4096
/* rows of at most this many tiles have their totals scanned by one thread a row */
#define SC_FEW_TILES 32

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

template <typename T, typename A> __device__ __forceinline__ A sc_load(const T *p) {
    return (A)*p;
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

/* The total of one tile x[k * st] (k < len): thread t combines k = t, t + SC_BLOCK,
   ... in order, then a fixed tree in each warp and the warps in order.  Every
   thread of the block calls it; thread 0 gets the total. */
template <typename T, typename A>
__device__ A reduce_tile(const T *x, int len, int64_t st, ScanOp<A> op) {
    __shared__ A warp_tot[SC_BLOCK / 32];
    const int t = threadIdx.x, lane = t & 31, w = t >> 5;
    A a = op.id();
#pragma unroll
    for (int j = 0; j < SC_PER; j++) {
        const int k = t + j * SC_BLOCK;
        if (k < len) a = op.combine(a, sc_load<T, A>(x + k * st));
    }
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) {
        A v = __shfl_down_sync(0xffffffffu, a, d);
        if (lane + d < 32) a = op.combine(a, v);
    }
    if (lane == 0) warp_tot[w] = a;
    __syncthreads();
    A r = warp_tot[0];
    if (t == 0)
        for (int v = 1; v < SC_BLOCK / 32; v++) r = op.combine(r, warp_tot[v]);
    __syncthreads();   /* warp_tot is rewritten by the block's next tile */
    return r;
}

/* One tile of a row: the inclusive scan of x[k * st] (k < len) combined after
   `carry`, written to out[k * st].  Every thread of the block calls it. */
template <typename T, typename A, typename R>
__device__ void scan_tile(const T *x, int len, int64_t st, A carry, R *out, ScanOp<A> op) {
    __shared__ A sh[SC_SHARED];
    __shared__ A warp_tot[SC_BLOCK / 32];
    const int t = threadIdx.x, lane = t & 31, w = t >> 5;
    for (int k = t; k < SC_TILE; k += SC_BLOCK)
        sh[SC_PAD(k)] = k < len ? sc_load<T, A>(x + k * st) : op.id();
    __syncthreads();
    A loc[SC_PER];
    A a = op.id();
#pragma unroll
    for (int j = 0; j < SC_PER; j++) {
        const A v = sh[SC_PAD(t * SC_PER + j)];
        a = j ? op.combine(a, v) : v;
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
    const A excl = __shfl_up_sync(0xffffffffu, incl, 1);
    __syncthreads();
    /* the prefix before this thread: carry, the warps before, the lanes before */
    A pre = carry;
    for (int v = 0; v < w; v++) pre = op.combine(pre, warp_tot[v]);
    if (lane) pre = op.combine(pre, excl);
    /* each thread rewrites only the slots it alone read */
#pragma unroll
    for (int j = 0; j < SC_PER; j++) sh[SC_PAD(t * SC_PER + j)] = op.combine(pre, loc[j]);
    __syncthreads();
    for (int k = t; k < len; k += SC_BLOCK) out[k * st] = (R)sh[SC_PAD(k)];
    __syncthreads();   /* sh and warp_tot are rewritten by the block's next tile */
}

/* tile b = (row r, tile j) of the rows r = (o, i) of [O, K, I] (x[o, :, i], stride I) */
struct TileAt {
    int64_t base, row, j;
    int len;
};
__device__ __forceinline__ TileAt tile_at(int64_t b, int64_t nt, int64_t K, int64_t I) {
    TileAt a;
    a.row = b / nt;
    a.j = b - a.row * nt;
    const int64_t o = a.row / I, i = a.row - o * I;
    a.base = o * K * I + i + a.j * SC_TILE * I;
    const int64_t left = K - a.j * SC_TILE;
    a.len = (int)(left < SC_TILE ? left : SC_TILE);
    return a;
}

/* pass one: tot[b] = the total of tile b; block b takes tiles b, b + gridDim.x, ... */
template <typename T, typename A>
__global__ void __launch_bounds__(SC_BLOCK)
scan_totals(const T *x, int64_t O, int64_t K, int64_t I, A *tot, ScanOp<A> op) {
    const int64_t nt = (K + SC_TILE - 1) / SC_TILE;
    for (int64_t b = blockIdx.x; b < O * I * nt; b += gridDim.x) {
        const TileAt a = tile_at(b, nt, K, I);
        const A r = reduce_tile<T, A>(x + a.base, a.len, I, op);
        if (threadIdx.x == 0) tot[b] = r;
    }
}

/* pass three: scan each tile after its carry, the inclusive scan of the row's
   totals up to the tile before (incl == NULL: one tile per row) */
template <typename T, typename A, typename R>
__global__ void __launch_bounds__(SC_BLOCK)
scan_rows(const T *x, int64_t O, int64_t K, int64_t I, R *out, const A *incl, ScanOp<A> op) {
    const int64_t nt = (K + SC_TILE - 1) / SC_TILE;
    for (int64_t b = blockIdx.x; b < O * I * nt; b += gridDim.x) {
        const TileAt a = tile_at(b, nt, K, I);
        const A c = incl && a.j > 0 ? incl[b - 1] : op.id();
        scan_tile<T, A, R>(x + a.base, a.len, I, c, out + a.base, op);
    }
}

static unsigned sc_grid(int64_t tiles) {
    return (unsigned)(tiles < 65535LL * 16 ? (tiles < 1 ? 1 : tiles) : 65535LL * 16);
}

/* a tiled scan of the rows x[o, :, i] of [O, K, I] into out (R; may be x itself):
   the tiles' totals, their own scan (recursively, rows of nt), the tiles */
template <typename T, typename A, typename R>
static int scan_rows_run(const T *x, int64_t O, int64_t K, int64_t I, R *out, ScanOp<A> op,
                         cudaStream_t s, const char *where) {
    const int64_t nt = (K + SC_TILE - 1) / SC_TILE, rows = O * I;
    if (nt == 1) {
        scan_rows<T, A, R><<<sc_grid(rows), SC_BLOCK, 0, s>>>(x, O, K, I, out, (const A *)NULL,
                                                              op);
        EMC_LAUNCHED(where);
        return 0;
    }
    A *tc = NULL;
    int rc = emc_malloc((void **)&tc, sizeof(A) * (size_t)(rows * nt), s);
    if (rc) return rc;
    scan_totals<T, A><<<sc_grid(rows * nt), SC_BLOCK, 0, s>>>(x, O, K, I, tc, op);
    cudaError_t e = cudaGetLastError();
    /* a few tiles a row: one thread scans each row's totals (in place) */
    if (e == cudaSuccess && nt <= SC_FEW_TILES) {
        scan_cols<A, A><<<emc_blocks(rows), EMC_THREADS, 0, s>>>(tc, rows, nt, 1, tc, op);
        e = cudaGetLastError();
    } else if (e == cudaSuccess) {
        rc = scan_rows_run<A, A, A>(tc, rows, nt, 1, tc, op, s, where);
    }
    if (e == cudaSuccess && !rc) {
        scan_rows<T, A, R><<<sc_grid(rows * nt), SC_BLOCK, 0, s>>>(x, O, K, I, out, tc, op);
        e = cudaGetLastError();
    }
    emc_free(tc);
    if (rc) return rc;
    return e == cudaSuccess ? 0 : emc_set_error((int)e, where);
}

template <typename T, typename A>
static int scan_typed(int op, const void *x, int64_t O, int64_t K, int64_t I, void *out,
                      cudaStream_t s) {
    ScanOp<A> so{op};
    if (I == 1 || (O * I <= SC_FEW_COLS && K >= SC_TILE))
        return scan_rows_run<T, A, T>((const T *)x, O, K, I, (T *)out, so, s, "emc_scan");
    scan_cols<T, A><<<emc_blocks(O * I), EMC_THREADS, 0, s>>>((const T *)x, O, K, I, (T *)out,
                                                               so);
    EMC_LAUNCHED("emc_scan");
    return 0;
}

/* x[i] = x[0] + ... + x[i], in place (sort.cu's radix offsets) */
int emc_scan_i64_inplace(int64_t *x, int64_t n, cudaStream_t s) {
    if (n <= 0) return 0;
    return scan_rows_run<int64_t, int64_t, int64_t>(x, 1, n, 1, x, ScanOp<int64_t>{SC_SUM}, s,
                                                    "radix sort offsets");
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

/* --- stream compaction ----------------------------------------------------------
   The mask is cut into tiles of CP_TILE bytes; thread t of a tile's block owns
   bytes [t * CP_PER, (t + 1) * CP_PER).  emc_mask_count writes each tile's count
   of nonzero bytes and scans them (offs[b] = the count before tile b, offs[tiles]
   the total); the compaction kernels then rank each thread's bytes in its tile by
   a block scan of the threads' counts and move only the selected elements. */
#define CP_BLOCK 256
#define CP_PER 16
#define CP_TILE (CP_BLOCK * CP_PER)

EMC_API int64_t emc_mask_tiles(int64_t n) { return n > 0 ? (n + CP_TILE - 1) / CP_TILE : 0; }

/* bit 7 of each byte of the result: that byte of w is nonzero */
__device__ __forceinline__ uint32_t nz_bytes(uint32_t w) {
    return (((w & 0x7f7f7f7fu) + 0x7f7f7f7fu) | w) & 0x80808080u;
}

/* the CP_PER mask bytes of this thread at mask + base (zero past n): a 16-byte load
   where the mask is 16-byte aligned (vec) and the bytes are all inside */
__device__ __forceinline__ void cp_load(const uint8_t *mask, int64_t base, int64_t n, bool vec,
                                        uint32_t w[4]) {
    if (vec && base + CP_PER <= n) {
        const uint4 v = *(const uint4 *)(mask + base);
        w[0] = v.x; w[1] = v.y; w[2] = v.z; w[3] = v.w;
        return;
    }
#pragma unroll
    for (int q = 0; q < 4; q++) {
        uint32_t u = 0;
#pragma unroll
        for (int b = 0; b < 4; b++) {
            const int64_t i = base + q * 4 + b;
            if (i < n) u |= (uint32_t)mask[i] << (8 * b);
        }
        w[q] = u;
    }
}

__device__ __forceinline__ int cp_count(const uint32_t w[4]) {
    return __popc(nz_bytes(w[0])) + __popc(nz_bytes(w[1])) + __popc(nz_bytes(w[2])) +
           __popc(nz_bytes(w[3]));
}

/* counts[b] = the nonzero bytes of tile b */
__global__ void __launch_bounds__(CP_BLOCK)
mask_counts(const uint8_t *mask, int64_t n, int64_t tiles, bool vec, int64_t *counts) {
    for (int64_t b = blockIdx.x; b < tiles; b += gridDim.x) {
        uint32_t w[4];
        cp_load(mask, b * CP_TILE + threadIdx.x * CP_PER, n, vec, w);
        int tot;
        block_excl_scan<CP_BLOCK>(cp_count(w), &tot);
        if (threadIdx.x == 0) counts[b] = tot;
    }
}

static bool aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

EMC_API int emc_mask_count(const uint8_t *mask, int64_t n, int64_t *offs, void *stream) {
    if (n < 0) return emc_set_error(EMC_E_ARG, "emc_mask_count");
    cudaStream_t s = emc_stream(stream);
    EMC_CHECK(cudaMemsetAsync(offs, 0, sizeof(int64_t), s), "emc_mask_count");
    if (n == 0) return 0;
    const int64_t tiles = emc_mask_tiles(n);
    mask_counts<<<sc_grid(tiles), CP_BLOCK, 0, s>>>(mask, n, tiles, aligned16(mask), offs + 1);
    EMC_LAUNCHED("emc_mask_count");
    /* offs[1 + b] = the count of tiles 0..b: an exact integer scan, in place */
    return scan_rows_run<int64_t, int64_t, int64_t>(offs + 1, 1, tiles, 1, offs + 1,
                                                    ScanOp<int64_t>{SC_SUM}, s,
                                                    "emc_mask_count");
}

/* for each nonzero byte i of the mask, in order, act(i, its rank p among them) */
template <typename Act>
__global__ void __launch_bounds__(CP_BLOCK)
compact_k(const uint8_t *mask, int64_t n, int64_t tiles, const int64_t *offs, bool vec,
          Act act) {
    for (int64_t b = blockIdx.x; b < tiles; b += gridDim.x) {
        const int64_t base = b * CP_TILE + threadIdx.x * CP_PER;
        uint32_t w[4];
        cp_load(mask, base, n, vec, w);
        const int c = cp_count(w);
        int tot;
        int64_t p = offs[b] + block_excl_scan<CP_BLOCK>(c, &tot);
        if (c) {
#pragma unroll
            for (int j = 0; j < CP_PER; j++)
                if ((w[j >> 2] >> (8 * (j & 3))) & 0xffu) act(base + j, p++);
        }
    }
}

struct ShapeArg { int64_t s[EMC_MAX_DIMS]; };

/* out[p] = the row-major multi-index of element i */
struct NonzeroAct {
    int64_t *out;
    ShapeArg sh;
    int ndim;
    __device__ __forceinline__ void operator()(int64_t i, int64_t p) const {
        int64_t *row = out + p * ndim, r = i;
        for (int d = ndim - 1; d >= 0; d--) {
            const int64_t q = r / sh.s[d];
            row[d] = r - q * sh.s[d];
            r = q;
        }
    }
};

/* masked_select: out[p] = src[i]; masked_scatter: out[i] = src[p] */
template <typename U, bool SELECT> struct MoveAct {
    U *out;
    const U *src;
    __device__ __forceinline__ void operator()(int64_t i, int64_t p) const {
        if (SELECT) out[p] = src[i];
        else out[i] = src[p];
    }
};

template <typename Act>
static int compact_run(const uint8_t *mask, int64_t n, const int64_t *offs, Act act,
                       cudaStream_t s, const char *where) {
    const int64_t tiles = emc_mask_tiles(n);
    compact_k<Act><<<sc_grid(tiles), CP_BLOCK, 0, s>>>(mask, n, tiles, offs, aligned16(mask),
                                                       act);
    EMC_LAUNCHED(where);
    return 0;
}

EMC_API int emc_nonzero(const uint8_t *mask, int ndim, const int64_t *shape, int64_t n,
                        const int64_t *offs, int64_t *out, void *stream) {
    if (ndim < 0 || ndim > EMC_MAX_DIMS || n < 0) return emc_set_error(EMC_E_ARG, "emc_nonzero");
    if (n == 0 || ndim == 0) return 0;
    NonzeroAct act;
    act.out = out;
    act.ndim = ndim;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] <= 0) return emc_set_error(EMC_E_ARG, "emc_nonzero");
        act.sh.s[d] = shape[d];
    }
    return compact_run(mask, n, offs, act, emc_stream(stream), "emc_nonzero");
}

/* element moves by size: the bits only */
struct Bytes16 { uint64_t a, b; };

template <typename U, bool SELECT>
static int move_run(void *out, const void *src, const uint8_t *mask, const int64_t *offs,
                    int64_t n, cudaStream_t s, const char *where) {
    MoveAct<U, SELECT> act;
    act.out = (U *)out;
    act.src = (const U *)src;
    return compact_run(mask, n, offs, act, s, where);
}

template <bool SELECT>
static int compact(int itemsize, void *out, const void *src, const uint8_t *mask,
                   const int64_t *offs, int64_t n, void *stream, const char *where) {
    if (n < 0) return emc_set_error(EMC_E_ARG, where);
    if (n == 0) return 0;
    cudaStream_t s = emc_stream(stream);
    switch (itemsize) {
    case 1: return move_run<uint8_t, SELECT>(out, src, mask, offs, n, s, where);
    case 2: return move_run<uint16_t, SELECT>(out, src, mask, offs, n, s, where);
    case 4: return move_run<uint32_t, SELECT>(out, src, mask, offs, n, s, where);
    case 8: return move_run<uint64_t, SELECT>(out, src, mask, offs, n, s, where);
    case 16: return move_run<Bytes16, SELECT>(out, src, mask, offs, n, s, where);
    default: return emc_set_error(EMC_E_ARG, where);
    }
}

EMC_API int emc_masked_select(int itemsize, const void *x, const uint8_t *mask,
                              const int64_t *offs, int64_t n, void *out, void *stream) {
    return compact<true>(itemsize, out, x, mask, offs, n, stream, "emc_masked_select");
}

EMC_API int emc_masked_scatter(int itemsize, void *out, const uint8_t *mask, const int64_t *offs,
                               int64_t n, const void *src, void *stream) {
    return compact<false>(itemsize, out, src, mask, offs, n, stream, "emc_masked_scatter");
}
