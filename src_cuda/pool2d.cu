/* max / avg pooling over planes of H x W: the twin of src_c/pool.c (named
   pool2d.cu beside the allocator's pool.c).  Forwards take one thread per
   output; backwards one thread per input element, which gathers the outputs
   whose windows hold it in the CPU's order (output rows, then columns), so
   there are no atomics and float32/float64 results are the CPU's bits. */
#include "common.cuh"
#include "ember_pool.h"

struct PoolGeom {
    int64_t planes, H, W, kh, kw, sh, sw, ph, pw, dh, dw, Ho, Wo, divisor;
    int include_pad;
};

static PoolGeom pgeom(const ember_pool2d_params *p) {
    PoolGeom g = {p->planes, p->H, p->W, p->kh, p->kw, p->sh, p->sw, p->ph, p->pw, p->dh, p->dw,
                  p->Ho, p->Wo, p->divisor, p->count_include_pad};
    return g;
}

/* checked before the empty-problem return: an empty call with a bad dtype still fails */
static bool float_dtype(int dt) {
    return dt == EM_F32 || dt == EM_F64 || dt == EM_F16 || dt == EM_BF16;
}

static bool pool_ok(const ember_pool2d_params *p) {
    return p->planes >= 0 && p->H >= 0 && p->W >= 0 && p->kh > 0 && p->kw > 0 && p->sh > 0 &&
           p->sw > 0 && p->ph >= 0 && p->pw >= 0 && p->Ho >= 0 && p->Wo >= 0 && p->divisor >= 0;
}

/* NaN wins; among equals the first tap */
template <typename T>
__global__ void max_fwd(PoolGeom q, const T *x, T *y, int64_t *idx) {
    typedef typename Acc<T>::type A;
    const int64_t total = q.planes * q.Ho * q.Wo;
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < total;
         t += (int64_t)gridDim.x * blockDim.x) {
        const int64_t pl = t / (q.Ho * q.Wo), o = t - pl * q.Ho * q.Wo, oh = o / q.Wo,
                      ow = o - oh * q.Wo;
        const int64_t h0 = oh * q.sh - q.ph, w0 = ow * q.sw - q.pw;
        const T *xp = x + pl * q.H * q.W;
        A best = -(A)INFINITY;
        int64_t bi = -1;
        const int64_t i1 = em_pool_tap_hi(h0, q.dh, q.H, q.kh),
                      j1 = em_pool_tap_hi(w0, q.dw, q.W, q.kw);
        for (int64_t i = em_pool_tap_lo(h0, q.dh); i < i1; i++) {
            const int64_t ih = h0 + i * q.dh;
            for (int64_t j = em_pool_tap_lo(w0, q.dw); j < j1; j++) {
                const int64_t iw = w0 + j * q.dw;
                const A v = ld<T, A>(xp + ih * q.W + iw);
                if (bi < 0 || v > best || v != v) {
                    best = v;
                    bi = ih * q.W + iw;
                }
            }
        }
        st<T, A>(y + t, best);
        if (idx) idx[t] = bi;
    }
}

/* dx[h, w] = sum of dy[o] over the outputs o whose argmax is (h, w) */
template <typename T>
__global__ void max_bwd(PoolGeom q, const T *dy, const int64_t *idx, T *dx) {
    typedef typename Acc<T>::type A;
    const int64_t total = q.planes * q.H * q.W, P = q.Ho * q.Wo;
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < total;
         t += (int64_t)gridDim.x * blockDim.x) {
        const int64_t pl = t / (q.H * q.W), e = t - pl * q.H * q.W, h = e / q.W, w = e - h * q.W;
        const int64_t *ip = idx + pl * P;
        const T *gp = dy + pl * P;
        A acc = 0;
        /* taps from the last down: output rows (and columns) in increasing order */
        for (int64_t r = q.kh - 1; r >= 0; r--) {
            const int64_t th = h + q.ph - r * q.dh;
            if (th < 0 || th % q.sh) continue;
            const int64_t oh = th / q.sh;
            if (oh >= q.Ho) continue;
            for (int64_t s = q.kw - 1; s >= 0; s--) {
                const int64_t tw = w + q.pw - s * q.dw;
                if (tw < 0 || tw % q.sw) continue;
                const int64_t ow = tw / q.sw;
                if (ow >= q.Wo) continue;
                if (ip[oh * q.Wo + ow] == e) acc += ld<T, A>(gp + oh * q.Wo + ow);
            }
        }
        st<T, A>(dx + t, acc);
    }
}

/* adaptive windows: output o of n_out over n_in covers [o n_in / n_out,
   ceil((o + 1) n_in / n_out)); input i lies in the windows [i n_out / n_in,
   ceil((i + 1) n_out / n_in)) */
__device__ __forceinline__ int64_t ada_lo(int64_t o, int64_t n_in, int64_t n_out) {
    return (o * n_in) / n_out;
}
__device__ __forceinline__ int64_t ada_hi(int64_t o, int64_t n_in, int64_t n_out) {
    return ((o + 1) * n_in + n_out - 1) / n_out;
}

/* src_c's ember_adaptive_max_pool2d_fwd: best starts at -inf on the window's first
   element; a larger value or any NaN takes over */
template <typename T>
__global__ void amax_fwd(PoolGeom q, const T *x, T *y, int64_t *idx) {
    typedef typename Acc<T>::type A;
    const int64_t total = q.planes * q.Ho * q.Wo;
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < total;
         t += (int64_t)gridDim.x * blockDim.x) {
        const int64_t pl = t / (q.Ho * q.Wo), o = t - pl * q.Ho * q.Wo, oh = o / q.Wo,
                      ow = o - oh * q.Wo;
        const int64_t hs = ada_lo(oh, q.H, q.Ho), he = ada_hi(oh, q.H, q.Ho),
                      ws = ada_lo(ow, q.W, q.Wo), we = ada_hi(ow, q.W, q.Wo);
        const T *xp = x + pl * q.H * q.W;
        A best = -(A)INFINITY;
        int64_t bi = hs * q.W + ws;
        for (int64_t ih = hs; ih < he; ih++)
            for (int64_t iw = ws; iw < we; iw++) {
                const A v = ld<T, A>(xp + ih * q.W + iw);
                if (v > best || v != v) {
                    best = v;
                    bi = ih * q.W + iw;
                }
            }
        st<T, A>(y + t, best);
        if (idx) idx[t] = bi;
    }
}

/* dx[h, w] = sum of dy[o] over the outputs o (in increasing order, as the CPU's
   scatter adds them) whose windows hold (h, w) and whose argmax it is */
template <typename T>
__global__ void amax_bwd(PoolGeom q, const T *dy, const int64_t *idx, T *dx) {
    typedef typename Acc<T>::type A;
    const int64_t total = q.planes * q.H * q.W, P = q.Ho * q.Wo;
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < total;
         t += (int64_t)gridDim.x * blockDim.x) {
        const int64_t pl = t / (q.H * q.W), e = t - pl * q.H * q.W, h = e / q.W, w = e - h * q.W;
        const int64_t *ip = idx + pl * P;
        const T *gp = dy + pl * P;
        const int64_t oh0 = ada_lo(h, q.Ho, q.H), ow0 = ada_lo(w, q.Wo, q.W);
        int64_t oh1 = ada_hi(h, q.Ho, q.H), ow1 = ada_hi(w, q.Wo, q.W);
        if (oh1 > q.Ho) oh1 = q.Ho;
        if (ow1 > q.Wo) ow1 = q.Wo;
        A acc = 0;
        for (int64_t oh = oh0; oh < oh1; oh++)
            for (int64_t ow = ow0; ow < ow1; ow++)
                if (ip[oh * q.Wo + ow] == e) acc += ld<T, A>(gp + oh * q.Wo + ow);
        st<T, A>(dx + t, acc);
    }
}

/* the shared window (ember_pool.h); empty0: a window with no element and no
   divisor to count padding gives 0 */
template <typename A>
__device__ __forceinline__ A avg_window(const PoolGeom &q, int64_t oh, int64_t ow, int64_t &hs,
                                        int64_t &he, int64_t &ws, int64_t &we, bool &empty0) {
    const int64_t div = em_avg_window(q.H, q.W, q.kh, q.kw, q.sh, q.sw, q.ph, q.pw, q.divisor,
                                      q.include_pad, oh, ow, &hs, &he, &ws, &we);
    empty0 = !((he > hs && we > ws) || q.divisor || q.include_pad);
    return (A)div;
}

template <typename T>
__global__ void avg_fwd(PoolGeom q, const T *x, T *y) {
    typedef typename Acc<T>::type A;
    const int64_t total = q.planes * q.Ho * q.Wo;
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < total;
         t += (int64_t)gridDim.x * blockDim.x) {
        const int64_t pl = t / (q.Ho * q.Wo), o = t - pl * q.Ho * q.Wo, oh = o / q.Wo,
                      ow = o - oh * q.Wo;
        int64_t hs, he, ws, we;
        bool empty0;
        const A div = avg_window<A>(q, oh, ow, hs, he, ws, we, empty0);
        const T *xp = x + pl * q.H * q.W;
        A s = 0;
        for (int64_t ih = hs; ih < he; ih++)
            for (int64_t iw = ws; iw < we; iw++) s += ld<T, A>(xp + ih * q.W + iw);
        st<T, A>(y + t, empty0 ? (A)0 : s / div);
    }
}

/* dx[h, w] = sum of dy[o] / div(o) over the windows o holding (h, w) */
template <typename T>
__global__ void avg_bwd(PoolGeom q, const T *dy, T *dx) {
    typedef typename Acc<T>::type A;
    const int64_t total = q.planes * q.H * q.W, P = q.Ho * q.Wo;
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < total;
         t += (int64_t)gridDim.x * blockDim.x) {
        const int64_t pl = t / (q.H * q.W), e = t - pl * q.H * q.W, h = e / q.W, w = e - h * q.W;
        const T *gp = dy + pl * P;
        /* window oh holds h when oh sh - ph <= h < oh sh - ph + kh */
        const int64_t ah = h + q.ph - q.kh, aw = w + q.pw - q.kw;
        const int64_t oh0 = ah < 0 ? 0 : ah / q.sh + 1, ow0 = aw < 0 ? 0 : aw / q.sw + 1;
        int64_t oh1 = (h + q.ph) / q.sh, ow1 = (w + q.pw) / q.sw;
        if (oh1 > q.Ho - 1) oh1 = q.Ho - 1;
        if (ow1 > q.Wo - 1) ow1 = q.Wo - 1;
        A acc = 0;
        for (int64_t oh = oh0; oh <= oh1; oh++)
            for (int64_t ow = ow0; ow <= ow1; ow++) {
                int64_t hs, he, ws, we;
                bool empty0;
                const A div = avg_window<A>(q, oh, ow, hs, he, ws, we, empty0);
                if (h >= hs && h < he && w >= ws && w < we) acc += ld<T, A>(gp + oh * q.Wo + ow) / div;
            }
        st<T, A>(dx + t, acc);
    }
}

EMC_API int emc_max_pool2d_fwd(int dtype, const ember_pool2d_params *p, const void *x, void *y,
                               int64_t *idx, void *stream) {
    if (!float_dtype(dtype)) return emc_set_error(EMC_E_DTYPE, "emc_max_pool2d_fwd");
    if (!pool_ok(p) || p->dh <= 0 || p->dw <= 0) return emc_set_error(EMC_E_ARG, "emc_max_pool2d_fwd");
    const int64_t total = p->planes * p->Ho * p->Wo;
    if (total == 0) return 0;
    cudaStream_t s = emc_stream(stream);
    const PoolGeom q = pgeom(p);
    EMC_FLOAT_TYPES(dtype, max_fwd<T><<<emc_blocks(total), EMC_THREADS, 0, s>>>(
        q, (const T *)x, (T *)y, idx));
    EMC_LAUNCHED("emc_max_pool2d_fwd");
    return 0;
}

EMC_API int emc_max_pool2d_bwd(int dtype, const ember_pool2d_params *p, const void *dy,
                               const int64_t *idx, void *dx, void *stream) {
    if (!float_dtype(dtype)) return emc_set_error(EMC_E_DTYPE, "emc_max_pool2d_bwd");
    if (!pool_ok(p) || p->dh <= 0 || p->dw <= 0 || !idx)
        return emc_set_error(EMC_E_ARG, "emc_max_pool2d_bwd");
    const int64_t total = p->planes * p->H * p->W;
    if (total == 0) return 0;
    cudaStream_t s = emc_stream(stream);
    const PoolGeom q = pgeom(p);
    EMC_FLOAT_TYPES(dtype, max_bwd<T><<<emc_blocks(total), EMC_THREADS, 0, s>>>(
        q, (const T *)dy, idx, (T *)dx));
    EMC_LAUNCHED("emc_max_pool2d_bwd");
    return 0;
}

EMC_API int emc_avg_pool2d_fwd(int dtype, const ember_pool2d_params *p, const void *x, void *y,
                               void *stream) {
    if (!float_dtype(dtype)) return emc_set_error(EMC_E_DTYPE, "emc_avg_pool2d_fwd");
    if (!pool_ok(p)) return emc_set_error(EMC_E_ARG, "emc_avg_pool2d_fwd");
    const int64_t total = p->planes * p->Ho * p->Wo;
    if (total == 0) return 0;
    cudaStream_t s = emc_stream(stream);
    const PoolGeom q = pgeom(p);
    EMC_FLOAT_TYPES(dtype, avg_fwd<T><<<emc_blocks(total), EMC_THREADS, 0, s>>>(
        q, (const T *)x, (T *)y));
    EMC_LAUNCHED("emc_avg_pool2d_fwd");
    return 0;
}

EMC_API int emc_avg_pool2d_bwd(int dtype, const ember_pool2d_params *p, const void *dy, void *dx,
                               void *stream) {
    if (!float_dtype(dtype)) return emc_set_error(EMC_E_DTYPE, "emc_avg_pool2d_bwd");
    if (!pool_ok(p)) return emc_set_error(EMC_E_ARG, "emc_avg_pool2d_bwd");
    const int64_t total = p->planes * p->H * p->W;
    if (total == 0) return 0;
    cudaStream_t s = emc_stream(stream);
    const PoolGeom q = pgeom(p);
    EMC_FLOAT_TYPES(dtype, avg_bwd<T><<<emc_blocks(total), EMC_THREADS, 0, s>>>(
        q, (const T *)dy, (T *)dx));
    EMC_LAUNCHED("emc_avg_pool2d_bwd");
    return 0;
}

static bool ada_ok(const ember_pool2d_params *p) {
    return p->planes >= 0 && p->H > 0 && p->W > 0 && p->Ho >= 0 && p->Wo >= 0;
}

EMC_API int emc_adaptive_max_pool2d_fwd(int dtype, const ember_pool2d_params *p, const void *x,
                                        void *y, int64_t *idx, void *stream) {
    if (!float_dtype(dtype)) return emc_set_error(EMC_E_DTYPE, "emc_adaptive_max_pool2d_fwd");
    if (!ada_ok(p)) return emc_set_error(EMC_E_ARG, "emc_adaptive_max_pool2d_fwd");
    const int64_t total = p->planes * p->Ho * p->Wo;
    if (total == 0) return 0;
    cudaStream_t s = emc_stream(stream);
    const PoolGeom q = pgeom(p);
    EMC_FLOAT_TYPES(dtype, amax_fwd<T><<<emc_blocks(total), EMC_THREADS, 0, s>>>(
        q, (const T *)x, (T *)y, idx));
    EMC_LAUNCHED("emc_adaptive_max_pool2d_fwd");
    return 0;
}

EMC_API int emc_adaptive_max_pool2d_bwd(int dtype, const ember_pool2d_params *p,
                                        const void *dy, const int64_t *idx, void *dx,
                                        void *stream) {
    if (!float_dtype(dtype)) return emc_set_error(EMC_E_DTYPE, "emc_adaptive_max_pool2d_bwd");
    if (!ada_ok(p) || !idx) return emc_set_error(EMC_E_ARG, "emc_adaptive_max_pool2d_bwd");
    const int64_t total = p->planes * p->H * p->W;
    if (total == 0) return 0;
    cudaStream_t s = emc_stream(stream);
    const PoolGeom q = pgeom(p);
    EMC_FLOAT_TYPES(dtype, amax_bwd<T><<<emc_blocks(total), EMC_THREADS, 0, s>>>(
        q, (const T *)dy, idx, (T *)dx));
    EMC_LAUNCHED("emc_adaptive_max_pool2d_bwd");
    return 0;
}
