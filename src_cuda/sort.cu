/* Stable sort along the last dim and topk: the twin of src_c/sort.c.  Every row
   is sorted by a stable LSD radix sort (8 bits a pass) of order-preserving
   unsigned keys: floats as sign-magnitude flipped, NaN (any sign) the largest,
   -0 equal to +0; integers with the sign bit flipped; descending inverts the
   key.  Equal keys keep their index order, so the result is the stable sort
   (ties by index) on every launch.  Rows are sorted as one array of
   (key, position) pairs, then stably by row (the position's row), so any
   number of rows costs the same passes.  The values are gathered from the input
   by the sorted indices, so every dtype keeps its bits.  topk of at most TK_MAX
   of a long row selects them by radix select (below); otherwise it takes each
   sorted row's first k. */
#include <type_traits>
#include "common.cuh"

/* --- stable LSD radix sort of (key, value) pairs ---------------------------------
   8 bits a pass.  A pass cuts the keys into tiles of RS_TILE: rs_hist counts each
   tile's digits into hist[digit * tiles + tile], one inclusive scan of hist gives
   every (digit, tile) its first output place, and rs_scatter ranks each tile's
   keys stably (warp w owns a contiguous run of the tile; __match_any_sync ranks
   the lanes of one digit, a per-warp counter carries the run), reorders them in
   shared memory and writes each digit's run contiguously.  Equal keys keep their
   input order, so the result is the stable sort whatever the launch. */
#define RS_BLOCK 256
#define RS_ITEMS 8
#define RS_TILE (RS_BLOCK * RS_ITEMS)
#define RS_BINS 256
#define RS_WARPS (RS_BLOCK / 32)

int emc_scan_i64_inplace(int64_t *x, int64_t n, cudaStream_t s);

template <typename KT> __device__ __forceinline__ int rs_digit(KT k, int shift) {
    return (int)((k >> shift) & (KT)(RS_BINS - 1));
}

/* hist[d] += 1 for this lane's digit d (valid lanes; every lane of the warp calls
   it): one shared atomic per distinct digit of the warp, since float keys crowd a
   few top digits */
__device__ __forceinline__ void warp_count(unsigned *hist, int d, bool valid) {
    const int lane = threadIdx.x & 31;
    const unsigned peers = __match_any_sync(0xffffffffu, valid ? d : RS_BINS + lane);
    if (valid && lane == __ffs(peers) - 1) atomicAdd(hist + d, (unsigned)__popc(peers));
}

template <typename KT>
__global__ void __launch_bounds__(RS_BLOCK)
rs_hist(const KT *keys, int64_t n, int64_t tiles, int shift, int64_t *hist) {
    __shared__ unsigned cnt[RS_BINS];
    for (int64_t b = blockIdx.x; b < tiles; b += gridDim.x) {
        for (int d = threadIdx.x; d < RS_BINS; d += RS_BLOCK) cnt[d] = 0;
        __syncthreads();
        const int64_t t0 = b * RS_TILE;
#pragma unroll
        for (int j = 0; j < RS_ITEMS; j++) {
            const int64_t p = t0 + j * RS_BLOCK + threadIdx.x;
            warp_count(cnt, p < n ? rs_digit(keys[p], shift) : 0, p < n);
        }
        __syncthreads();
        for (int d = threadIdx.x; d < RS_BINS; d += RS_BLOCK) hist[d * tiles + b] = cnt[d];
        __syncthreads();
    }
}

/* one pass: (kin, vin) -> (kout, vout) by the digit at `shift`; vin == NULL reads
   value p at position p; incl is the scanned hist */
template <typename KT, typename VT>
__global__ void __launch_bounds__(RS_BLOCK)
rs_scatter(const KT *kin, const VT *vin, int64_t n, int64_t tiles, int shift,
           const int64_t *incl, KT *kout, VT *vout) {
    static_assert(RS_BLOCK == RS_BINS, "one thread per digit");
    __shared__ uint64_t sbuf[RS_TILE];          /* the tile's keys, then its values */
    __shared__ uint8_t sdig[RS_TILE];
    __shared__ int wcnt[RS_WARPS][RS_BINS];
    __shared__ int tstart[RS_BINS];
    __shared__ int64_t gbase[RS_BINS];
    KT *skey = (KT *)sbuf;
    VT *sval = (VT *)sbuf;
    const int t = threadIdx.x, lane = t & 31, w = t >> 5;
    const unsigned lt = (1u << lane) - 1u;
    for (int64_t b = blockIdx.x; b < tiles; b += gridDim.x) {
        for (int i = t; i < RS_WARPS * RS_BINS; i += RS_BLOCK) (&wcnt[0][0])[i] = 0;
        __syncthreads();
        const int64_t t0 = b * RS_TILE, wb = t0 + (int64_t)w * 32 * RS_ITEMS;
        KT k[RS_ITEMS];
        int lp[RS_ITEMS];
#pragma unroll
        for (int it = 0; it < RS_ITEMS; it++) {
            const int64_t p = wb + it * 32 + lane;
            const bool valid = p < n;
            k[it] = valid ? kin[p] : (KT)0;
            /* an invalid lane matches no one */
            const int d = valid ? rs_digit(k[it], shift) : RS_BINS + lane;
            const unsigned peers = __match_any_sync(0xffffffffu, d);
            int c = 0;
            if (valid) c = wcnt[w][d];
            lp[it] = c + __popc(peers & lt);
            __syncwarp();
            if (valid && lane == __ffs(peers) - 1) wcnt[w][d] = c + __popc(peers);
            __syncwarp();
        }
        __syncthreads();
        /* thread t = digit t: the warps' runs of it in order, the tile's count */
        int run = 0;
        for (int v = 0; v < RS_WARPS; v++) {
            const int c = wcnt[v][t];
            wcnt[v][t] = run;
            run += c;
        }
        int tot;
        const int ex = block_excl_scan<RS_BLOCK>(run, &tot);
        tstart[t] = ex;
        const int64_t at = (int64_t)t * tiles + b;
        gbase[t] = (at ? incl[at - 1] : 0) - ex;
        __syncthreads();
        const int cnt = (int)(n - t0 < RS_TILE ? n - t0 : RS_TILE);
#pragma unroll
        for (int it = 0; it < RS_ITEMS; it++) {
            if (wb + it * 32 + lane < n) {
                const int d = rs_digit(k[it], shift);
                lp[it] += tstart[d] + wcnt[w][d];
                skey[lp[it]] = k[it];
                sdig[lp[it]] = (uint8_t)d;
            }
        }
        __syncthreads();
        for (int i = t; i < cnt; i += RS_BLOCK) kout[gbase[sdig[i]] + i] = skey[i];
        __syncthreads();
#pragma unroll
        for (int it = 0; it < RS_ITEMS; it++) {
            const int64_t p = wb + it * 32 + lane;
            if (p < n) sval[lp[it]] = vin ? vin[p] : (VT)p;
        }
        __syncthreads();
        for (int i = t; i < cnt; i += RS_BLOCK) vout[gbase[sdig[i]] + i] = sval[i];
        __syncthreads();
    }
}

static int rs_bits(uint64_t maxkey) {
    int b = 0;
    while (b < 64 && (maxkey >> b)) b++;
    return b;
}

/* buffer pieces start 16-byte aligned */
static size_t rs_align(size_t b) { return (b + 15) & ~(size_t)15; }

static unsigned rs_grid(int64_t tiles) {
    return (unsigned)(tiles < 65535LL * 16 ? (tiles < 1 ? 1 : tiles) : 65535LL * 16);
}

/* Stable sort of n pairs by the low `bits` bits of the keys (the rest must be 0):
   (keys, vals; vals NULL = 0..n-1) -> (kout, vout).  kout may be NULL (keys not
   wanted); the inputs are only read. */
template <typename KT, typename VT>
static int radix_sort_pairs(const KT *keys, const VT *vals, int64_t n, int bits, KT *kout,
                            VT *vout, cudaStream_t s) {
    if (n <= 0) return 0;
    const int passes = bits > 0 ? (bits + 7) / 8 : 1;
    const int64_t tiles = (n + RS_TILE - 1) / RS_TILE;
    char *buf = NULL;
    const size_t kb = rs_align(sizeof(KT) * (size_t)n), vb = rs_align(sizeof(VT) * (size_t)n);
    const size_t hb = sizeof(int64_t) * (size_t)(RS_BINS * tiles);
    int rc = emc_malloc((void **)&buf, kb * (kout ? 1 : 2) + vb + hb, s);
    if (rc) return rc;
    int64_t *hist = (int64_t *)buf;
    KT *kt = (KT *)(buf + hb);
    VT *vt = (VT *)(buf + hb + kb);
    KT *ko = kout ? kout : (KT *)(buf + hb + kb + vb);
    /* pass i writes (ko, vout) when passes - 1 - i is even: the last lands there */
    const KT *ki = keys;
    const VT *vi = vals;
    cudaError_t e = cudaSuccess;
    for (int i = 0; i < passes && !rc && e == cudaSuccess; i++) {
        const bool to_out = ((passes - 1 - i) & 1) == 0;
        KT *kd = to_out ? ko : kt;
        VT *vd = to_out ? vout : vt;
        rs_hist<KT><<<rs_grid(tiles), RS_BLOCK, 0, s>>>(ki, n, tiles, 8 * i, hist);
        e = cudaGetLastError();
        if (e == cudaSuccess) rc = emc_scan_i64_inplace(hist, RS_BINS * tiles, s);
        if (e == cudaSuccess && !rc) {
            rs_scatter<KT, VT><<<rs_grid(tiles), RS_BLOCK, 0, s>>>(ki, vi, n, tiles, 8 * i, hist,
                                                                   kd, vd);
            e = cudaGetLastError();
        }
        ki = kd;
        vi = vd;
    }
    emc_free(buf);
    if (rc) return rc;
    return e == cudaSuccess ? 0 : emc_set_error((int)e, "radix sort");
}

/* exported to index.cu and philox.cu (hidden from the library's ABI) */
int emc_radix_sort32(const uint32_t *keys, int64_t n, int bits, uint32_t *kout, uint32_t *vout,
                     cudaStream_t s) {
    return radix_sort_pairs<uint32_t, uint32_t>(keys, NULL, n, bits, kout, vout, s);
}
int emc_radix_sort64(const uint64_t *keys, int64_t n, int bits, uint64_t *kout, uint64_t *vout,
                     cudaStream_t s) {
    return radix_sort_pairs<uint64_t, uint64_t>(keys, NULL, n, bits, kout, vout, s);
}

/* --- sort keys ------------------------------------------------------------------ */
/* sign-magnitude bits u (a float format) as an unsigned key in the numbers' order */
template <typename U> __device__ __forceinline__ U sm_key(U u, bool nan) {
    const U top = (U)((U)1 << (sizeof(U) * 8 - 1));
    if (nan) u = (U)(top - 1);      /* the largest positive pattern: after +inf */
    else if (u == top) u = 0;       /* -0 ties with +0 */
    return (u & top) ? (U)~u : (U)(u | top);
}

/* the key of each dtype: its width in bits and the ascending key */
template <typename T> struct SortKey;
template <> struct SortKey<float> {
    typedef uint32_t K;
    static const int bits = 32;
    __device__ static K of(float v) { return sm_key<uint32_t>(__float_as_uint(v), v != v); }
};
template <> struct SortKey<double> {
    typedef uint64_t K;
    static const int bits = 64;
    __device__ static K of(double v) {
        return sm_key<uint64_t>((uint64_t)__double_as_longlong(v), v != v);
    }
};
template <> struct SortKey<__half> {
    typedef uint32_t K;
    static const int bits = 16;
    __device__ static K of(__half v) {
        const float f = __half2float(v);
        return sm_key<uint16_t>(__half_as_ushort(v), f != f);
    }
};
template <> struct SortKey<__nv_bfloat16> {
    typedef uint32_t K;
    static const int bits = 16;
    __device__ static K of(__nv_bfloat16 v) {
        const float f = __bfloat162float(v);
        return sm_key<uint16_t>(__bfloat16_as_ushort(v), f != f);
    }
};
template <> struct SortKey<int64_t> {
    typedef uint64_t K;
    static const int bits = 64;
    __device__ static K of(int64_t v) { return (uint64_t)v ^ ((uint64_t)1 << 63); }
};
template <> struct SortKey<int32_t> {
    typedef uint32_t K;
    static const int bits = 32;
    __device__ static K of(int32_t v) { return (uint32_t)v ^ 0x80000000u; }
};
template <> struct SortKey<int16_t> {
    typedef uint32_t K;
    static const int bits = 16;
    __device__ static K of(int16_t v) { return (uint32_t)(uint16_t)v ^ 0x8000u; }
};
template <> struct SortKey<int8_t> {
    typedef uint32_t K;
    static const int bits = 8;
    __device__ static K of(int8_t v) { return (uint32_t)(uint8_t)v ^ 0x80u; }
};
template <> struct SortKey<uint8_t> {
    typedef uint32_t K;
    static const int bits = 8;
    __device__ static K of(uint8_t v) { return v; }
};

/* the key of v: ascending, or inverted in its bits for descending */
template <typename T>
__device__ __forceinline__ typename SortKey<T>::K key_of(T v, bool desc) {
    typedef typename SortKey<T>::K K;
    const K k = SortKey<T>::of(v);
    return desc ? (K)(~k & (K)(~(uint64_t)0 >> (64 - SortKey<T>::bits))) : k;
}

template <typename T>
__global__ void sort_keys(const T *x, int64_t total, bool desc,
                          typename SortKey<T>::K *keys) {
    for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < total;
         p += (int64_t)gridDim.x * blockDim.x)
        keys[p] = key_of<T>(x[p], desc);
}

/* the row of each sorted position, as the second sort's key */
template <typename VT, typename RT>
__global__ void row_keys(const VT *pos, int64_t total, int64_t n, RT *rk) {
    for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < total;
         p += (int64_t)gridDim.x * blockDim.x)
        rk[p] = (RT)((int64_t)pos[p] / n);
}

/* idx[p] = the column of the position sorted to p (row p / n) */
template <typename VT>
__global__ void sorted_cols(const VT *pos, int64_t total, int64_t n, int64_t *idx) {
    for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < total;
         p += (int64_t)gridDim.x * blockDim.x)
        idx[p] = (int64_t)pos[p] - p / n * n;
}

/* the sorted indices (iout, rows x n) of the rows of x: keys with positions VT,
   then (rows > 1) a stable sort by row */
template <typename T, typename VT>
static int sort_rows_as(const T *x, int64_t rows, int64_t n, bool desc, int64_t *iout,
                        cudaStream_t s) {
    typedef typename SortKey<T>::K K;
    const int64_t total = rows * n;
    const bool rows32 = rows <= ((int64_t)1 << 32);
    const size_t kb = rs_align(sizeof(K) * (size_t)total);
    const size_t vb = rs_align(sizeof(VT) * (size_t)total);
    const size_t rb = rows > 1 ? (rows32 ? 4 : 8) * (size_t)total : 0;
    char *buf = NULL;
    int rc = emc_malloc((void **)&buf, kb + 2 * vb + rb, s);
    if (rc) return rc;
    K *keys = (K *)buf;
    VT *pos = (VT *)(buf + kb), *pos2 = (VT *)(buf + kb + vb);
    void *rk = buf + kb + 2 * vb;
    const unsigned g = emc_blocks(total);
    sort_keys<T><<<g, EMC_THREADS, 0, s>>>(x, total, desc, keys);
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess)
        rc = radix_sort_pairs<K, VT>(keys, NULL, total, SortKey<T>::bits, NULL, pos, s);
    VT *done = pos;
    if (!rc && e == cudaSuccess && rows > 1) {
        const int rbits = rs_bits((uint64_t)(rows - 1));
        if (rows32) {
            row_keys<VT, uint32_t><<<g, EMC_THREADS, 0, s>>>(pos, total, n, (uint32_t *)rk);
            e = cudaGetLastError();
            if (e == cudaSuccess)
                rc = radix_sort_pairs<uint32_t, VT>((const uint32_t *)rk, pos, total, rbits, NULL,
                                                    pos2, s);
        } else {
            row_keys<VT, uint64_t><<<g, EMC_THREADS, 0, s>>>(pos, total, n, (uint64_t *)rk);
            e = cudaGetLastError();
            if (e == cudaSuccess)
                rc = radix_sort_pairs<uint64_t, VT>((const uint64_t *)rk, pos, total, rbits, NULL,
                                                    pos2, s);
        }
        done = pos2;
    }
    if (!rc && e == cudaSuccess) {
        sorted_cols<VT><<<g, EMC_THREADS, 0, s>>>(done, total, n, iout);
        e = cudaGetLastError();
    }
    emc_free(buf);
    if (rc) return rc;
    return e == cudaSuccess ? 0 : emc_set_error((int)e, "sort");
}

template <typename T>
static int sort_rows(const T *x, int64_t rows, int64_t n, bool desc, int64_t *iout,
                     cudaStream_t s) {
    const int64_t total = rows * n;
    if (total == 0) return 0;
    if (total <= (int64_t)0xffffffffLL)
        return sort_rows_as<T, uint32_t>(x, rows, n, desc, iout, s);
    return sort_rows_as<T, uint64_t>(x, rows, n, desc, iout, s);
}

int emc_sort_f64_keys(const double *keys, int64_t rows, int64_t n, int desc, int64_t *iout,
                      cudaStream_t s) {
    return sort_rows<double>(keys, rows, n, desc != 0, iout, s);
}

/* the sorted indices of any dtype's rows */
static int sort_any(int dtype, const void *x, int64_t rows, int64_t n, bool desc, int64_t *idx,
                    cudaStream_t s) {
    switch (dtype) {
    case EM_F32: return sort_rows<float>((const float *)x, rows, n, desc, idx, s);
    case EM_F64: return sort_rows<double>((const double *)x, rows, n, desc, idx, s);
    case EM_F16: return sort_rows<__half>((const __half *)x, rows, n, desc, idx, s);
    case EM_BF16: return sort_rows<__nv_bfloat16>((const __nv_bfloat16 *)x, rows, n, desc, idx, s);
    case EM_I64: return sort_rows<int64_t>((const int64_t *)x, rows, n, desc, idx, s);
    case EM_I32: return sort_rows<int32_t>((const int32_t *)x, rows, n, desc, idx, s);
    case EM_I16: return sort_rows<int16_t>((const int16_t *)x, rows, n, desc, idx, s);
    case EM_I8: return sort_rows<int8_t>((const int8_t *)x, rows, n, desc, idx, s);
    case EM_U8: case EM_BOOL:
        return sort_rows<uint8_t>((const uint8_t *)x, rows, n, desc, idx, s);
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

/* --- topk of a few: radix select per row ----------------------------------------
   One block per row.  From the top digit down, a histogram of the keys that share
   the digits chosen so far finds the digit of the k-th key: after the last digit
   that key is known exactly, with `less` keys before it.  One ordered pass then
   gathers the keys before it and the first k - less keys equal to it (index
   order: block scans of the flags), and a bitonic sort of those k (key, index)
   pairs in shared memory gives the stable sort's first k. */
#define TK_THREADS 1024
#define TK_MAX 1024

template <typename T>
__global__ void __launch_bounds__(TK_THREADS)
topk_select(const T *x, int64_t rows, int64_t n, int k, bool desc, T *vals, int64_t *idx) {
    typedef typename SortKey<T>::K K;
    __shared__ unsigned hist[RS_BINS];
    __shared__ K ck[TK_MAX];
    __shared__ int64_t ci[TK_MAX];
    __shared__ K sel_prefix;
    __shared__ int64_t sel_less;
    const int t = threadIdx.x;
    int P = 1;
    while (P < k) P <<= 1;
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *xr = x + r * n;
        K prefix = 0, pmask = 0;
        int64_t kk = k, less = 0;      /* the rank sought among the keys matching prefix */
        for (int shift = SortKey<T>::bits - 8; shift >= 0; shift -= 8) {
            if (t < RS_BINS) hist[t] = 0;
            __syncthreads();
            for (int64_t i0 = 0; i0 < n; i0 += TK_THREADS) {   /* whole warps each step */
                const int64_t i = i0 + t;
                K key = 0;
                bool in = false;
                if (i < n) {
                    key = key_of<T>(xr[i], desc);
                    in = (key & pmask) == prefix;
                }
                warp_count(hist, (int)((key >> shift) & 255), in);
            }
            __syncthreads();
            if (t == 0) {
                int64_t cum = 0;
                int d = 0;
                for (; d < RS_BINS - 1; d++) {
                    if (cum + hist[d] >= kk) break;
                    cum += hist[d];
                }
                sel_prefix = prefix | ((K)d << shift);
                sel_less = cum;
            }
            __syncthreads();
            prefix = sel_prefix;
            pmask |= (K)255 << shift;
            kk -= sel_less;
            less += sel_less;
            __syncthreads();   /* sel_* are rewritten by the next digit */
        }
        /* prefix is the k-th key; take the `less` keys before it and kk equal ones */
        int64_t lrun = 0, erun = 0;
        for (int64_t c0 = 0; c0 < n && (lrun < less || erun < kk); c0 += TK_THREADS) {
            const int64_t i = c0 + t;
            K key = 0;
            int fl = 0, fe = 0;
            if (i < n) {
                key = key_of<T>(xr[i], desc);
                fl = key < prefix;
                fe = key == prefix;
            }
            int tot;
            /* both counts at once: at most TK_THREADS each, below 1 << 16 */
            const int ex = block_excl_scan<TK_THREADS>(fl | (fe << 16), &tot);
            if (fl) {
                const int64_t q = lrun + (ex & 0xffff);
                ck[q] = key;
                ci[q] = i;
            }
            if (fe) {
                const int64_t q = erun + (ex >> 16);
                if (q < kk) {
                    ck[less + q] = key;
                    ci[less + q] = i;
                }
            }
            lrun += tot & 0xffff;
            erun += tot >> 16;
        }
        for (int i = k + t; i < P; i += TK_THREADS) {   /* padding after every real pair */
            ck[i] = ~(K)0;
            ci[i] = INT64_MAX;
        }
        __syncthreads();
        for (int sz = 2; sz <= P; sz <<= 1)
            for (int j = sz >> 1; j > 0; j >>= 1) {
                for (int i = t; i < P; i += TK_THREADS) {
                    const int l = i ^ j;
                    if (l > i) {
                        const K a = ck[i], b = ck[l];
                        const int64_t ia = ci[i], ib = ci[l];
                        const bool after = a > b || (a == b && ia > ib);
                        if (after == ((i & sz) == 0)) {
                            ck[i] = b; ck[l] = a;
                            ci[i] = ib; ci[l] = ia;
                        }
                    }
                }
                __syncthreads();
            }
        for (int j = t; j < k; j += TK_THREADS) {
            const int64_t c = ci[j];
            if (idx) idx[r * k + j] = c;
            if (vals) vals[r * k + j] = xr[c];
        }
        __syncthreads();   /* ck and ci are rewritten by the block's next row */
    }
}

template <typename T>
static int topk_select_run(const void *x, int64_t rows, int64_t n, int64_t k, bool desc,
                           void *vals, int64_t *idx, cudaStream_t s) {
    topk_select<T><<<rs_grid(rows), TK_THREADS, 0, s>>>((const T *)x, rows, n, (int)k, desc,
                                                         (T *)vals, idx);
    EMC_LAUNCHED("emc_topk");
    return 0;
}

static int topk_select_any(int dtype, const void *x, int64_t rows, int64_t n, int64_t k,
                           bool desc, void *vals, int64_t *idx, cudaStream_t s) {
    switch (dtype) {
    case EM_F32: return topk_select_run<float>(x, rows, n, k, desc, vals, idx, s);
    case EM_F64: return topk_select_run<double>(x, rows, n, k, desc, vals, idx, s);
    case EM_F16: return topk_select_run<__half>(x, rows, n, k, desc, vals, idx, s);
    case EM_BF16: return topk_select_run<__nv_bfloat16>(x, rows, n, k, desc, vals, idx, s);
    case EM_I64: return topk_select_run<int64_t>(x, rows, n, k, desc, vals, idx, s);
    case EM_I32: return topk_select_run<int32_t>(x, rows, n, k, desc, vals, idx, s);
    case EM_I16: return topk_select_run<int16_t>(x, rows, n, k, desc, vals, idx, s);
    case EM_I8: return topk_select_run<int8_t>(x, rows, n, k, desc, vals, idx, s);
    case EM_U8: case EM_BOOL: return topk_select_run<uint8_t>(x, rows, n, k, desc, vals, idx, s);
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
    /* a few of many: select; else the first k of the sorted rows */
    if (k <= TK_MAX && n > 2 * TK_THREADS)
        return topk_select_any(dtype, x, rows, n, k, largest != 0, vals, idx, s);
    int64_t *full = NULL;
    int rc = emc_malloc((void **)&full, sizeof(int64_t) * (size_t)(rows * n), s);
    if (rc) return rc;
    rc = sort_any(dtype, x, rows, n, largest != 0, full, s);
    if (!rc) take(dtype, x, full, rows, n, n, k, vals, idx, s);
    cudaError_t e = cudaGetLastError();
    emc_free(full);
    if (rc) return rc;
    if (e != cudaSuccess) return emc_set_error((int)e, "emc_topk");
    return 0;
}
