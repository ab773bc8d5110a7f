/* complex64 / complex128 kernels: elementwise ops with the formulas of
   ember_complex.h (shared with src_c/complex.c; computed in double, complex64
   rounded back), copies and casts where either side is complex or a lazy
   conjugate / negative bit is to be applied, and the product reduction.
   Storage is interleaved (re, im), as on the CPU. */
#include "common.cuh"
#include "ember_complex.h"

struct alignas(8) C64 { float re, im; };
struct alignas(16) C128 { double re, im; };

__host__ __device__ __forceinline__ em_cd ldc(C64 v) { return em_cmk(v.re, v.im); }
__host__ __device__ __forceinline__ em_cd ldc(C128 v) { return em_cmk(v.re, v.im); }
template <typename S> __host__ __device__ __forceinline__ S stc(em_cd v);
template <> __host__ __device__ __forceinline__ C64 stc<C64>(em_cd v) {
    C64 r;
    r.re = (float)v.re;
    r.im = (float)v.im;
    return r;
}
template <> __host__ __device__ __forceinline__ C128 stc<C128>(em_cd v) {
    C128 r;
    r.re = v.re;
    r.im = v.im;
    return r;
}
/* the real type of a complex storage type (|z|) */
template <typename S> struct RealOf { typedef double type; };
template <> struct RealOf<C64> { typedef float type; };

/* --- element functors (host and device) ------------------------------------ */
template <typename S> struct CUn {
    int op;
    __host__ __device__ S operator()(S x) const { return stc<S>(em_cun(op, ldc(x))); }
};
template <typename S> struct CAbs {
    __host__ __device__ typename RealOf<S>::type operator()(S x) const {
        return (typename RealOf<S>::type)em_cabs(ldc(x));
    }
};
template <typename S> struct CPred {
    int op;
    __host__ __device__ em_bool operator()(S x) const { return (em_bool)em_cpred(op, ldc(x)); }
};
template <typename S> struct CBin {
    int op; double alpha;
    __host__ __device__ S operator()(S a, S b) const {
        return stc<S>(em_cbin(op, ldc(a), ldc(b), alpha));
    }
};
template <typename S> struct CCmp {
    int op;
    __host__ __device__ em_bool operator()(S a, S b) const {
        return (em_bool)em_ccmp(op, ldc(a), ldc(b));
    }
};

/* --- kernels: contiguous operands index directly, others walk emc_nd -------- */
template <typename S, typename O, typename F>
__global__ void cx_un(emc_nd nd, int64_t n, O *out, const S *x, F f, bool contig) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        if (contig) {
            out[i] = f(x[i]);
        } else {
            int64_t off[2];
            emc_offsets<2>(nd, i, off);
            out[off[0]] = f(x[off[1]]);
        }
    }
}

template <typename S, typename O, typename F>
__global__ void cx_bin(emc_nd nd, int64_t n, O *out, const S *a, const S *b, F f, bool contig) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        if (contig) {
            out[i] = f(a[i], b[i]);
        } else {
            int64_t off[3];
            emc_offsets<3>(nd, i, off);
            out[off[0]] = f(a[off[1]], b[off[2]]);
        }
    }
}

static bool all_contig(const emc_nd *nd, int k) {
    for (int a = 0; a < k; a++)
        if (!emc_contig(nd, a)) return false;
    return true;
}

template <typename S, typename O, typename F>
static int launch_un(const emc_nd *nd, O *out, const S *x, F f, void *stream, const char *w) {
    int64_t n = emc_numel(nd);
    if (n == 0) return 0;
    cx_un<<<emc_blocks(n), EMC_THREADS, 0, emc_stream(stream)>>>(*nd, n, out, x, f,
                                                                 all_contig(nd, 2));
    EMC_LAUNCHED(w);
    return 0;
}

template <typename S, typename O, typename F>
static int launch_bin(const emc_nd *nd, O *out, const S *a, const S *b, F f, void *stream,
                      const char *w) {
    int64_t n = emc_numel(nd);
    if (n == 0) return 0;
    cx_bin<<<emc_blocks(n), EMC_THREADS, 0, emc_stream(stream)>>>(*nd, n, out, a, b, f,
                                                                  all_contig(nd, 3));
    EMC_LAUNCHED(w);
    return 0;
}

#define EMC_CX_TYPES(dtype, where, ...)                                         \
    switch (dtype) {                                                             \
    case EM_C64: { typedef C64 S; __VA_ARGS__; } break;                          \
    case EM_C128: { typedef C128 S; __VA_ARGS__; } break;                        \
    default: return emc_set_error(EMC_E_DTYPE, where);                           \
    }

EMC_API int emc_cew_unary(int op, int dtype, void *out, const void *x, const emc_nd *nd,
                          void *stream) {
    const char *w = "emc_cew_unary";
    if (!em_cun_ok(op)) return emc_set_error(EMC_E_DTYPE, w);
    if (nd->nargs < 2) return emc_set_error(EMC_E_ARG, w);
    EMC_CX_TYPES(dtype, w, {
        if (op == EW_ABS)
            return launch_un(nd, (typename RealOf<S>::type *)out, (const S *)x, CAbs<S>{}, stream, w);
        return launch_un(nd, (S *)out, (const S *)x, CUn<S>{op}, stream, w);
    })
    return 0;
}

EMC_API int emc_cew_predicate(int op, int dtype, void *out, const void *x, const emc_nd *nd,
                              void *stream) {
    const char *w = "emc_cew_predicate";
    if (!em_cpred_ok(op)) return emc_set_error(EMC_E_DTYPE, w);
    if (nd->nargs < 2) return emc_set_error(EMC_E_ARG, w);
    EMC_CX_TYPES(dtype, w, return launch_un(nd, (em_bool *)out, (const S *)x, CPred<S>{op},
                                            stream, w))
    return 0;
}

EMC_API int emc_cew_binary(int op, int dtype, void *out, const void *a, const void *b,
                           const emc_nd *nd, const double *aux, void *stream) {
    const char *w = "emc_cew_binary";
    if (!em_cbin_ok(op)) return emc_set_error(EMC_E_DTYPE, w);
    if (nd->nargs < 3) return emc_set_error(EMC_E_ARG, w);
    double alpha = aux ? aux[0] : 0.0;
    EMC_CX_TYPES(dtype, w, return launch_bin(nd, (S *)out, (const S *)a, (const S *)b,
                                             CBin<S>{op, alpha}, stream, w))
    return 0;
}

EMC_API int emc_cew_compare(int op, int dtype, void *out, const void *a, const void *b,
                            const emc_nd *nd, void *stream) {
    const char *w = "emc_cew_compare";
    if (!em_ccmp_ok(op)) return emc_set_error(EMC_E_DTYPE, w);
    if (nd->nargs < 3) return emc_set_error(EMC_E_ARG, w);
    EMC_CX_TYPES(dtype, w, return launch_bin(nd, (em_bool *)out, (const S *)a, (const S *)b,
                                             CCmp<S>{op}, stream, w))
    return 0;
}

/* the element functions above on the host, over contiguous host arrays: for the
   CPU tests.  family 0 unary (EW_ABS writes reals), 1 binary, 2 compare, 3
   predicate; aux[0] is EW_ADDA's alpha. */
EMC_API int emc_cew_host(int family, int op, int dtype, void *out, const void *a, const void *b,
                         int64_t n, const double *aux) {
    const char *w = "emc_cew_host";
    bool ok = family == 0 ? em_cun_ok(op) : family == 1 ? em_cbin_ok(op)
              : family == 2 ? em_ccmp_ok(op) : family == 3 ? em_cpred_ok(op) : false;
    if (!ok) return emc_set_error(EMC_E_DTYPE, w);
    double alpha = aux ? aux[0] : 0.0;
    EMC_CX_TYPES(dtype, w, {
        const S *x = (const S *)a, *y = (const S *)b;
        for (int64_t i = 0; i < n; i++) {
            if (family == 0 && op == EW_ABS)
                ((typename RealOf<S>::type *)out)[i] = CAbs<S>{}(x[i]);
            else if (family == 0)
                ((S *)out)[i] = CUn<S>{op}(x[i]);
            else if (family == 1)
                ((S *)out)[i] = CBin<S>{op, alpha}(x[i], y[i]);
            else if (family == 2)
                ((em_bool *)out)[i] = CCmp<S>{op}(x[i], y[i]);
            else
                ((em_bool *)out)[i] = CPred<S>{op}(x[i]);
        }
    })
    return 0;
}

/* --- copies with casts and math bits ----------------------------------------- */
/* a value of any dtype as (re, im) in double; integers keep their int64 value in
   `i` so an integer destination gets it exactly */
struct CVal {
    double re, im;
    int64_t i;
    bool isint;
};

__device__ __forceinline__ CVal load_any(int dt, const char *p) {
    CVal v;
    v.re = v.im = 0;
    v.i = 0;
    v.isint = false;
    switch (dt) {
    case EM_C64: v.re = ((const float *)p)[0]; v.im = ((const float *)p)[1]; break;
    case EM_C128: v.re = ((const double *)p)[0]; v.im = ((const double *)p)[1]; break;
    case EM_F32: v.re = *(const float *)p; break;
    case EM_F64: v.re = *(const double *)p; break;
    case EM_F16: v.re = __half2float(*(const __half *)p); break;
    case EM_BF16: v.re = __bfloat162float(*(const __nv_bfloat16 *)p); break;
    default:
        v.isint = true;
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

/* src/copy.c's rules: a real destination takes the real part (through int64 for
   the small integer types, != 0 for bool); a complex one a zero imaginary part
   from a real source, an integer converted directly to the part's type */
__device__ __forceinline__ void store_any(int dt, char *p, CVal v) {
    int64_t iv = v.isint ? v.i : (int64_t)v.re;
    switch (dt) {
    case EM_C64:
        ((float *)p)[0] = v.isint ? (float)v.i : (float)v.re;
        ((float *)p)[1] = (float)v.im;
        break;
    case EM_C128:
        ((double *)p)[0] = v.isint ? (double)v.i : v.re;
        ((double *)p)[1] = v.im;
        break;
    case EM_BOOL: *(uint8_t *)p = v.isint ? (v.i != 0) : (v.re != 0); break;
    case EM_U8: *(uint8_t *)p = (uint8_t)iv; break;
    case EM_I8: *(int8_t *)p = (int8_t)iv; break;
    case EM_I16: *(int16_t *)p = (int16_t)iv; break;
    case EM_I32: *(int32_t *)p = (int32_t)iv; break;
    case EM_I64: *(int64_t *)p = iv; break;
    case EM_F16: *(__half *)p = __float2half_rn(v.isint ? (float)v.i : (float)v.re); break;
    case EM_BF16:
        *(__nv_bfloat16 *)p = __float2bfloat16_rn(v.isint ? (float)v.i : (float)v.re);
        break;
    case EM_F32: *(float *)p = v.isint ? (float)v.i : (float)v.re; break;
    default: *(double *)p = v.isint ? (double)v.i : v.re; break;
    }
}

/* conjugate (EM bit 1) and / or negate (bit 2) a value in place; a negated
   integer stays exact */
__device__ __forceinline__ void flip(CVal &v, int bits) {
    if (bits & 1) v.im = -v.im;
    if (bits & 2) {
        v.re = -v.re;
        v.im = -v.im;
        v.i = 0 - v.i;
    }
}

__constant__ int cx_dsize[EM_NDTYPES] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8, 8, 16};

__global__ void copy_math_kernel(emc_nd nd, int64_t n, int dd, char *dst, int dbits, int sd,
                                 const char *src, int sbits, bool contig) {
    const int zd = cx_dsize[dd], zs = cx_dsize[sd];
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[2] = {i, i};
        if (!contig) emc_offsets<2>(nd, i, off);
        CVal v = load_any(sd, src + off[1] * zs);
        flip(v, sbits);          /* the value src reads as */
        flip(v, dbits);          /* what dst stores to read as it */
        store_any(dd, dst + off[0] * zd, v);
    }
}

EMC_API int emc_copy_math(int dd, void *dst, int dbits, int sd, const void *src, int sbits,
                          const emc_nd *nd, void *stream) {
    const char *w = "emc_copy_math";
    if (dd < 0 || dd >= EM_NDTYPES || sd < 0 || sd >= EM_NDTYPES)
        return emc_set_error(EMC_E_DTYPE, w);
    if ((dbits | sbits) & ~3 || nd->nargs < 2) return emc_set_error(EMC_E_ARG, w);
    int64_t n = emc_numel(nd);
    if (n == 0) return 0;
    copy_math_kernel<<<emc_blocks(n), EMC_THREADS, 0, emc_stream(stream)>>>(
        *nd, n, dd, (char *)dst, dbits, sd, (const char *)src, sbits, all_contig(nd, 2));
    EMC_LAUNCHED(w);
    return 0;
}

/* --- product over K of a contiguous [O, K, I]: one thread per output walks K in
   order with a double accumulator (the CPU's serial product, bit for bit up to
   the rounding of each multiply) ------------------------------------------- */
template <typename S>
__global__ void cprod_kernel(const S *x, int64_t O, int64_t K, int64_t I, S *out) {
    for (int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r < O * I;
         r += (int64_t)gridDim.x * blockDim.x) {
        int64_t o = r / I, i = r - o * I;
        const S *p = x + o * K * I + i;
        em_cd acc = em_cmk(1, 0);
        for (int64_t k = 0; k < K; k++) acc = em_cmul(acc, ldc(p[k * I]));
        out[r] = stc<S>(acc);
    }
}

EMC_API int emc_cprod(int dtype, const void *x, int64_t O, int64_t K, int64_t I, void *out,
                      void *stream) {
    const char *w = "emc_cprod";
    if (O < 0 || K < 0 || I < 0) return emc_set_error(EMC_E_ARG, w);
    if (O * I == 0) return 0;
    EMC_CX_TYPES(dtype, w, {
        cprod_kernel<<<emc_blocks(O * I), EMC_THREADS, 0, emc_stream(stream)>>>(
            (const S *)x, O, K, I, (S *)out);
    })
    EMC_LAUNCHED(w);
    return 0;
}
