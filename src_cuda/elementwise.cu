/* Elementwise kernels: the twin of src_c/ew_impl.h, with the same op codes
   (ember_ew.h) and, for float32, the same formulas (ember_scalar.h and
   ember_math.h are host/device code; this file is compiled with -fmad=false so
   no FMA contraction changes their rounding).  float16/bfloat16 compute in
   float32.  Contiguous operands take a vectorised path (16-byte loads when
   aligned); anything else walks the emc_nd descriptor.  The op is a kernel
   argument (one kernel per dtype and family, a uniform switch per element):
   that keeps the library's build time in seconds. */
#include "common.cuh"
#include "ember_ew.h"
#include "ember_scalar.h"

/* --- float math: float32 uses ember's polynomials, float64 CUDA's libm ---- */
__host__ __device__ __forceinline__ float f_exp(float x) { return em_expf(x); }
__host__ __device__ __forceinline__ double f_exp(double x) { return exp(x); }
__host__ __device__ __forceinline__ float f_sigmoid(float x) { return em_sigmoidf(x); }
__host__ __device__ __forceinline__ double f_sigmoid(double x) { return em_sigmoidd(x); }
__host__ __device__ __forceinline__ float f_tanh(float x) { return em_tanhf(x); }
__host__ __device__ __forceinline__ double f_tanh(double x) { return tanh(x); }

template <typename A>
__host__ __device__ __forceinline__ A un_float(int op, A x, const double *prm) {
    const bool f32 = sizeof(A) == 4;
    switch (op) {
    case EW_NEG: return -x;
    case EW_ABS: return fabs(x);
    case EW_SIGN: return x > 0 ? (A)1 : (x < 0 ? (A)-1 : (A)0);
    case EW_EXP: return f_exp(x);
    case EW_EXP2: return exp2(x);
    case EW_EXPM1: if (f32) return (A)em_expm1f((float)x); return expm1(x);
    case EW_LOG: if (f32) return (A)em_logf((float)x); return log(x);
    case EW_LOG2: if (f32) return (A)(em_logf((float)x) * 1.44269504088896341f); return log2(x);
    case EW_LOG10: if (f32) return (A)(em_logf((float)x) * 0.434294481903251828f); return log10(x);
    case EW_LOG1P: if (f32) return (A)em_log1pf((float)x); return log1p(x);
    case EW_SQRT: return sqrt(x);
    case EW_RSQRT: return (A)1 / sqrt(x);
    case EW_SIN:
        if (f32) return (A)em_sinf_any((float)x);
        return sin(x);
    case EW_COS:
        if (f32) return (A)em_cosf_any((float)x);
        return cos(x);
    case EW_TAN:
        if (f32) return (A)em_tanf_any((float)x);
        return tan(x);
    case EW_ASIN: if (f32) return (A)em_asinf((float)x); return asin(x);
    case EW_ACOS: if (f32) return (A)em_acosf((float)x); return acos(x);
    case EW_ATAN: if (f32) return (A)em_atanf((float)x); return atan(x);
    case EW_SINH: if (f32) return (A)em_sinhf((float)x); return sinh(x);
    case EW_COSH: if (f32) return (A)em_coshf((float)x); return cosh(x);
    case EW_TANH: return f_tanh(x);
    case EW_ASINH: return asinh(x);
    case EW_ACOSH: return acosh(x);
    case EW_ATANH: return atanh(x);
    case EW_SIGMOID: return f_sigmoid(x);
    case EW_RELU: return (x != x) ? x : (x > 0 ? x : (A)0);
    case EW_GELU: if (f32) return (A)em_geluf((float)x); return em_gelu(x);
    case EW_GELU_TANH: if (f32) return (A)em_gelu_tanhf((float)x); return em_gelu_tanh(x);
    case EW_SILU: return x * f_sigmoid(x);
    case EW_MISH: if (f32) return (A)em_mishf((float)x); return em_mish(x);
    case EW_ERF: if (f32) return (A)em_erff((float)x); return erf(x);
    case EW_ERFC: if (f32) return (A)em_erfcf((float)x); return erfc(x);
    case EW_FLOOR: return floor(x);
    case EW_CEIL: return ceil(x);
    case EW_ROUND: return rint(x);
    case EW_TRUNC: return trunc(x);
    case EW_FRAC: return x - trunc(x);
    case EW_RECIP: return (A)1 / x;
    case EW_SQUARE: return x * x;
    case EW_LGAMMA: return lgamma(x);
    case EW_SOFTPLUS:
        if (f32) return (A)em_softplusf((float)x, (float)prm[0], (float)prm[1]);
        return em_softplus(x, prm[0], prm[1]);
    case EW_LEAKY_RELU: return x > 0 ? x : x * (A)prm[0];
    case EW_ELU:
        if (f32) {
            const float sc = (float)prm[1], ns = (float)prm[1] * (float)prm[0], is = (float)prm[2];
            float xf = (float)x;
            return (A)(xf > 0 ? xf * sc : ns * em_expm1f(xf * is));
        }
        return x > 0 ? (A)(x * prm[1]) : (A)(prm[1] * prm[0] * expm1(x * prm[2]));
    case EW_CLAMP: {
        int fl = (int)prm[2];
        A lo = (A)prm[0], hi = (A)prm[1], r = x;
        if (!(fl & 1)) lo = hi;
        if (!(fl & 2)) hi = lo;
        r = ((fl & 1) && r < lo) ? lo : r;
        r = ((fl & 2) && r > hi) ? hi : r;
        return (x != x) ? x : r;
    }
    case EW_HARDSIGMOID: if (f32) return (A)em_hardsigmoidf((float)x); return em_hardsigmoid(x);
    case EW_HARDSWISH: if (f32) return (A)em_hardswishf((float)x); return em_hardswish(x);
    case EW_LOGSIGMOID: if (f32) return (A)em_logsigmoid_vf((float)x); return em_logsigmoid_vd(x);
    case EW_NAN_TO_NUM:
        return x != x ? (A)prm[0] : (x == (A)INFINITY ? (A)prm[1] : (x == -(A)INFINITY ? (A)prm[2] : x));
    default: return x;
    }
}

static bool un_float_ok(int op) { return op >= 0 && op < EW_NUN && op != EW_BNOT; }
static bool un_int_ok(int op) {
    return op == EW_NEG || op == EW_ABS || op == EW_SIGN || op == EW_RELU || op == EW_SQUARE ||
           op == EW_BNOT || op == EW_CLAMP;
}
static bool un_bool_ok(int op) { return op == EW_ABS || op == EW_SIGN || op == EW_BNOT; }

template <typename T>
__host__ __device__ __forceinline__ T un_int(int op, T x_, const double *prm) {
    const int64_t x = (int64_t)x_;
    switch (op) {
    case EW_NEG: return (T)(0 - x);
    case EW_ABS: return (T)(x < 0 ? 0 - x : x);
    case EW_SIGN: return (T)((x > 0) - (x < 0));
    case EW_RELU: return x > 0 ? x_ : (T)0;
    case EW_SQUARE: return (T)((uint64_t)x * (uint64_t)x);
    case EW_BNOT: return (T)~x;
    case EW_CLAMP: {
        /* integer bounds are int64 bit patterns in the double slots */
        int fl = (int)prm[2];
        int64_t lo, hi;
        memcpy(&lo, &prm[0], 8);
        memcpy(&hi, &prm[1], 8);
        int64_t r = x;
        if ((fl & 1) && r < lo) r = lo;
        if ((fl & 2) && r > hi) r = hi;
        return (T)r;
    }
    default: return x_;
    }
}

template <typename A>
__host__ __device__ __forceinline__ A bin_float(int op, A a, A b, const double *prm) {
    const bool f32 = sizeof(A) == 4;
    switch (op) {
    case EW_ADD: return a + b;
    case EW_SUB: return a - b;
    case EW_MUL: return a * b;
    case EW_DIV: return a / b;
    case EW_FLOORDIV: if (f32) return (A)em_floordivf((float)a, (float)b); return em_floordiv(a, b);
    case EW_REM: if (f32) return (A)em_remainderf((float)a, (float)b); return em_remainder(a, b);
    case EW_FMOD: return fmod(a, b);
    case EW_POW: return b == (A)2 ? a * a : pow(a, b);
    case EW_MAX: return (a != a || b != b) ? a + b : (a > b ? a : b);
    case EW_MIN: return (a != a || b != b) ? a + b : (a < b ? a : b);
    case EW_FMAX: return fmax(a, b);
    case EW_FMIN: return fmin(a, b);
    case EW_ATAN2: return atan2(a, b);
    case EW_HYPOT: return hypot(a, b);
    case EW_COPYSIGN: return copysign(a, b);
    case EW_XLOGY: if (f32) return (A)em_xlogyf((float)a, (float)b); return em_xlogy(a, b);
    case EW_LOGADDEXP: if (f32) return (A)em_logaddexpf((float)a, (float)b); return em_logaddexp_vd(a, b);
    case EW_RELU_BW: return b > 0 ? a : (A)0;
    case EW_SIGMOID_BW: return a * b * (1 - b);
    case EW_TANH_BW: return a * (1 - b * b);
    case EW_GELU_BW: if (f32) return (A)((float)a * em_gelu_gradf((float)b)); return a * em_gelu_grad(b);
    case EW_GELU_TANH_BW:
        if (f32) return (A)((float)a * em_gelu_tanh_gradf((float)b));
        return a * em_gelu_tanh_grad(b);
    case EW_SILU_BW: if (f32) return (A)em_silu_bwf((float)a, (float)b); return em_silu_bw(a, b);
    case EW_ADDA: return a + (A)prm[0] * b;
    default: return a;
    }
}

static bool bin_float_ok(int op) {
    return op >= 0 && op < EW_NBIN && op != EW_BAND && op != EW_BOR && op != EW_BXOR &&
           op != EW_LSHIFT && op != EW_RSHIFT;
}
static bool bin_int_ok(int op) {
    return op == EW_ADD || op == EW_SUB || op == EW_MUL || op == EW_FLOORDIV || op == EW_REM ||
           op == EW_FMOD || op == EW_POW || op == EW_MAX || op == EW_MIN || op == EW_BAND ||
           op == EW_BOR || op == EW_BXOR || op == EW_LSHIFT || op == EW_RSHIFT;
}
static bool bin_bool_ok(int op) {
    return op == EW_ADD || op == EW_MUL || op == EW_MAX || op == EW_MIN || op == EW_BAND ||
           op == EW_BOR || op == EW_BXOR;
}

/* integer division by zero gives 0, as the CPU kernels do.  Arithmetic runs
   in int64 (what C's promotions give for every type here but uint64, which
   ember does not have), so one body serves signed and unsigned types. */
template <typename T>
__host__ __device__ __forceinline__ T bin_int(int op, T a_, T b_) {
    const int64_t a = (int64_t)a_, b = (int64_t)b_, bits = 8 * (int64_t)sizeof(T);
    switch (op) {
    case EW_ADD: return (T)(a + b);
    case EW_SUB: return (T)(a - b);
    case EW_MUL: return (T)((uint64_t)a * (uint64_t)b);
    case EW_FLOORDIV:
        if (b == 0) return 0;
        return b == -1 ? (T)(0 - (uint64_t)a) : (T)(a / b - ((a % b != 0) && ((a < 0) != (b < 0))));
    case EW_REM: {
        if (b == 0 || b == -1) return 0;
        int64_t r = a % b;
        return (T)((r != 0 && ((b < 0) != (r < 0))) ? r + b : r);
    }
    case EW_FMOD: return (b == 0 || b == -1) ? (T)0 : (T)(a % b);
    case EW_POW: return (T)em_ipow64(a, b);
    case EW_MAX: return a > b ? a_ : b_;
    case EW_MIN: return a < b ? a_ : b_;
    case EW_BAND: return (T)(a & b);
    case EW_BOR: return (T)(a | b);
    case EW_BXOR: return (T)(a ^ b);
    case EW_LSHIFT: return (b < 0 || b >= bits) ? (T)0 : (T)((uint64_t)a << b);
    case EW_RSHIFT: return (b < 0 || b >= bits) ? (T)(a < 0 ? -1 : 0) : (T)(a >> b);
    default: return a_;
    }
}

__host__ __device__ __forceinline__ em_bool bin_bool(int op, em_bool a, em_bool b) {
    switch (op) {
    case EW_ADD: case EW_MAX: case EW_BOR: return a | b;
    case EW_MUL: case EW_MIN: case EW_BAND: return a & b;
    default: return a ^ b;
    }
}

template <typename A>
__host__ __device__ __forceinline__ em_bool cmp_op(int op, A a, A b) {
    switch (op) {
    case EW_EQ: return a == b;
    case EW_NE: return a != b;
    case EW_LT: return a < b;
    case EW_LE: return a <= b;
    case EW_GT: return a > b;
    case EW_GE: return a >= b;
    case EW_LAND: return (a != 0) & (b != 0);
    case EW_LOR: return (a != 0) | (b != 0);
    default: return (a != 0) ^ (b != 0);
    }
}

template <typename A>
__host__ __device__ __forceinline__ em_bool pred_op(int op, A x) {
    switch (op) {
    case EW_ISNAN: return x != x;
    case EW_ISINF: return x == (A)INFINITY || x == -(A)INFINITY;
    case EW_ISFINITE: return (x == x) & (x != (A)INFINITY) & (x != -(A)INFINITY);
    case EW_LNOT: return x == 0;
    default: return signbit((double)x) != 0;
    }
}
template <> __host__ __device__ __forceinline__ em_bool pred_op<int64_t>(int op, int64_t x) {
    switch (op) {
    case EW_ISNAN: case EW_ISINF: return 0;
    case EW_ISFINITE: return 1;
    case EW_LNOT: return x == 0;
    default: return x < 0;
    }
}

/* --- per-dtype functors ----------------------------------------------------- */
template <typename T> struct IsFloat { static const bool value = false; };
template <> struct IsFloat<float> { static const bool value = true; };
template <> struct IsFloat<double> { static const bool value = true; };
template <> struct IsFloat<__half> { static const bool value = true; };
template <> struct IsFloat<__nv_bfloat16> { static const bool value = true; };

template <typename T> __host__ __device__ __forceinline__ typename Acc<T>::type acc_of(T v) {
    if constexpr (sizeof(T) == 2 && IsFloat<T>::value) return to_f(v); else return v;
}
template <typename T> __host__ __device__ __forceinline__ T of_acc(typename Acc<T>::type v) {
    if constexpr (sizeof(T) == 2 && IsFloat<T>::value) return from_f<T>(v); else return (T)v;
}

/* The hot arithmetic ops with the op fixed at compile time: the vector loop then
   unrolls fully and the vectors stay in registers (a run-time op switch keeps the
   loop rolled, which puts them in local memory and costs a third of the bandwidth). */
template <typename T, int OP> struct BinFast {
    double prm;
    __host__ __device__ __forceinline__ T operator()(T a, T b) const {
        typedef typename Acc<T>::type A;
        const A x = acc_of(a), y = acc_of(b);
        if constexpr (OP == EW_ADD) return of_acc<T>(x + y);
        else if constexpr (OP == EW_SUB) return of_acc<T>(x - y);
        else if constexpr (OP == EW_MUL) return of_acc<T>(x * y);
        else if constexpr (OP == EW_DIV) return of_acc<T>(x / y);
        else return of_acc<T>(x + (A)prm * y);   /* EW_ADDA */
    }
};
/* the common activations likewise: a constant op folds the switch away */
template <typename T, int OP> struct UnFast {
    double prm[3];
    __host__ __device__ __forceinline__ T operator()(T x) const {
        typedef typename Acc<T>::type A;
        return of_acc<T>(un_float<A>(OP, acc_of(x), prm));
    }
};
template <typename F> struct Unrolled { static const bool value = false; };
template <typename T, int OP> struct Unrolled<BinFast<T, OP>> { static const bool value = true; };
template <typename T, int OP> struct Unrolled<UnFast<T, OP>> { static const bool value = true; };

template <typename T> struct BinF {
    int op; double prm;
    __host__ __device__ T operator()(T a, T b) const {
        if constexpr (IsFloat<T>::value) {
            typedef typename Acc<T>::type A;
            return of_acc<T>(bin_float<A>(op, acc_of(a), acc_of(b), &prm));
        } else {
            return bin_int<T>(op, a, b);
        }
    }
};

struct BinBool {
    int op; double prm;
    __host__ __device__ em_bool operator()(em_bool a, em_bool b) const { return bin_bool(op, a, b); }
};

template <typename T> struct UnF {
    int op; double prm[3];
    __host__ __device__ T operator()(T x) const {
        if constexpr (IsFloat<T>::value) {
            typedef typename Acc<T>::type A;
            return of_acc<T>(un_float<A>(op, acc_of(x), prm));
        } else {
            if (bool_mode) return op == EW_BNOT ? (T)!x : x;   /* abs, sign of bool: x */
            return un_int<T>(op, x, prm);
        }
    }
    bool bool_mode;
};

template <typename T> struct CmpF {
    int op;
    __host__ __device__ em_bool operator()(T a, T b) const {
        if constexpr (IsFloat<T>::value) {
            typedef typename Acc<T>::type A;
            return cmp_op<A>(op, acc_of(a), acc_of(b));
        } else {
            return cmp_op<T>(op, a, b);
        }
    }
};

template <typename T> struct PredF {
    int op;
    __host__ __device__ em_bool operator()(T x) const {
        if constexpr (IsFloat<T>::value) {
            typedef typename Acc<T>::type A;
            return pred_op<A>(op, acc_of(x));
        } else {
            return pred_op<int64_t>(op, (int64_t)x);
        }
    }
};

/* --- kernels ------------------------------------------------------------------ */
template <typename T> struct alignas(16) Vec { T v[16 / sizeof(T)]; };

/* contiguous unary: V elements per 16-byte load when aligned */
template <typename T, typename O, typename F>
__global__ void un_contig(int64_t n, O *out, const T *x, F f, bool vec) {
    const int64_t tid = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    constexpr int V = 16 / sizeof(T);
    int64_t start = 0;
    if (vec && sizeof(O) == sizeof(T)) {
        const int64_t nv = n / V;
        for (int64_t i = tid; i < nv; i += step) {
            Vec<T> a = reinterpret_cast<const Vec<T> *>(x)[i];
            Vec<O> r;
            if constexpr (Unrolled<F>::value) {
#pragma unroll
                for (int k = 0; k < V; k++) r.v[k] = f(a.v[k]);
            } else {
#pragma unroll 1
                for (int k = 0; k < V; k++) r.v[k] = f(a.v[k]);
            }
            reinterpret_cast<Vec<O> *>(out)[i] = r;
        }
        start = nv * V;
    }
    for (int64_t i = start + tid; i < n; i += step) out[i] = f(x[i]);
}

template <typename T, typename O, typename F>
__global__ void un_nd(emc_nd nd, int64_t n, O *out, const T *x, F f) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[2];
        emc_offsets<2>(nd, i, off);
        out[off[0]] = f(x[off[1]]);
    }
}

/* contiguous binary; b_scalar: b is one element broadcast */
template <typename T, typename O, typename F>
__global__ void bin_contig(int64_t n, O *out, const T *a, const T *b, F f, bool vec,
                           bool b_scalar) {
    const int64_t tid = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    constexpr int V = 16 / sizeof(T);
    int64_t start = 0;
    if (vec && sizeof(O) == sizeof(T)) {
        const int64_t nv = n / V;
        const T bs = b_scalar ? b[0] : T();
        for (int64_t i = tid; i < nv; i += step) {
            Vec<T> x = reinterpret_cast<const Vec<T> *>(a)[i];
            Vec<T> y;
            if (!b_scalar) y = reinterpret_cast<const Vec<T> *>(b)[i];
            Vec<O> r;
            if constexpr (Unrolled<F>::value) {
#pragma unroll
                for (int k = 0; k < V; k++) r.v[k] = f(x.v[k], b_scalar ? bs : y.v[k]);
            } else {
#pragma unroll 1
                for (int k = 0; k < V; k++) r.v[k] = f(x.v[k], b_scalar ? bs : y.v[k]);
            }
            reinterpret_cast<Vec<O> *>(out)[i] = r;
        }
        start = nv * V;
    }
    for (int64_t i = start + tid; i < n; i += step) out[i] = f(a[i], b[b_scalar ? 0 : i]);
}

template <typename T, typename O, typename F>
__global__ void bin_nd(emc_nd nd, int64_t n, O *out, const T *a, const T *b, F f) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[3];
        emc_offsets<3>(nd, i, off);
        out[off[0]] = f(a[off[1]], b[off[2]]);
    }
}

static bool aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

static bool all_zero_strides(const emc_nd *nd, int a) {
    for (int d = 0; d < nd->ndim; d++)
        if (nd->shape[d] != 1 && nd->strides[a][d] != 0) return false;
    return true;
}

template <typename T, typename O, typename F>
static int launch_un(const emc_nd *nd, O *out, const T *x, F f, cudaStream_t s,
                     const char *where) {
    int64_t n = emc_numel(nd);
    if (n == 0) return 0;
    if (emc_contig(nd, 0) && emc_contig(nd, 1)) {
        bool vec = aligned16(out) && aligned16(x);
        un_contig<T, O, F><<<emc_blocks(n, vec ? 16 / sizeof(T) : 1), EMC_THREADS, 0, s>>>(
            n, out, x, f, vec);
    } else {
        un_nd<T, O, F><<<emc_blocks(n), EMC_THREADS, 0, s>>>(*nd, n, out, x, f);
    }
    EMC_LAUNCHED(where);
    return 0;
}

template <typename T, typename O, typename F>
static int launch_bin(const emc_nd *nd, O *out, const T *a, const T *b, F f, cudaStream_t s,
                      const char *where) {
    int64_t n = emc_numel(nd);
    if (n == 0) return 0;
    bool ca = emc_contig(nd, 0) && emc_contig(nd, 1);
    bool cb = emc_contig(nd, 2), sb = all_zero_strides(nd, 2);
    if (ca && (cb || sb)) {
        bool vec = aligned16(out) && aligned16(a) && (sb || aligned16(b));
        bin_contig<T, O, F><<<emc_blocks(n, vec ? 16 / sizeof(T) : 1), EMC_THREADS, 0, s>>>(
            n, out, a, b, f, vec, sb && !cb);
    } else {
        bin_nd<T, O, F><<<emc_blocks(n), EMC_THREADS, 0, s>>>(*nd, n, out, a, b, f);
    }
    EMC_LAUNCHED(where);
    return 0;
}

#define EMC_ALL_TYPES(dtype, ...)                                               \
    switch (dtype) {                                                             \
    case EM_BOOL: { typedef em_bool T; __VA_ARGS__; } break;                            \
    case EM_U8: { typedef uint8_t T; __VA_ARGS__; } break;                              \
    case EM_I8: { typedef int8_t T; __VA_ARGS__; } break;                               \
    case EM_I16: { typedef int16_t T; __VA_ARGS__; } break;                             \
    case EM_I32: { typedef int32_t T; __VA_ARGS__; } break;                             \
    case EM_I64: { typedef int64_t T; __VA_ARGS__; } break;                             \
    case EM_F16: { typedef __half T; __VA_ARGS__; } break;                              \
    case EM_BF16: { typedef __nv_bfloat16 T; __VA_ARGS__; } break;                      \
    case EM_F32: { typedef float T; __VA_ARGS__; } break;                               \
    case EM_F64: { typedef double T; __VA_ARGS__; } break;                              \
    default: return emc_set_error(EMC_E_DTYPE, __func__);                        \
    }

static bool is_float_dt(int dt) { return dt == EM_F16 || dt == EM_BF16 || dt == EM_F32 || dt == EM_F64; }

template <typename T>
static int launch_bin_float(int op, double prm, const emc_nd *nd, T *out, const T *a,
                            const T *b, cudaStream_t s) {
    const char *w = "emc_ew_binary";
    switch (op) {
    case EW_ADD: return launch_bin(nd, out, a, b, BinFast<T, EW_ADD>{prm}, s, w);
    case EW_SUB: return launch_bin(nd, out, a, b, BinFast<T, EW_SUB>{prm}, s, w);
    case EW_MUL: return launch_bin(nd, out, a, b, BinFast<T, EW_MUL>{prm}, s, w);
    case EW_DIV: return launch_bin(nd, out, a, b, BinFast<T, EW_DIV>{prm}, s, w);
    case EW_ADDA: return launch_bin(nd, out, a, b, BinFast<T, EW_ADDA>{prm}, s, w);
    default: return launch_bin(nd, out, a, b, BinF<T>{op, prm}, s, w);
    }
}

EMC_API int emc_ew_binary(int op, int dtype, void *out, const void *a, const void *b,
                          const emc_nd *nd, const double *aux, void *stream) {
    bool ok = dtype == EM_BOOL ? bin_bool_ok(op) : is_float_dt(dtype) ? bin_float_ok(op)
                                                                        : bin_int_ok(op);
    if (dtype < 0 || dtype >= EM_NDTYPES || !ok) return emc_set_error(EMC_E_DTYPE, "emc_ew_binary");
    if (nd->nargs < 3) return emc_set_error(EMC_E_ARG, "emc_ew_binary");
    cudaStream_t s = emc_stream(stream);
    double prm = aux ? aux[0] : 0.0;
    if (dtype == EM_BOOL) {
        BinBool f{op, prm};
        return launch_bin(nd, (em_bool *)out, (const em_bool *)a, (const em_bool *)b, f, s,
                          "emc_ew_binary");
    }
    EMC_ALL_TYPES(dtype, {
        if constexpr (IsFloat<T>::value)
            return launch_bin_float(op, prm, nd, (T *)out, (const T *)a, (const T *)b, s);
        BinF<T> f{op, prm};
        return launch_bin(nd, (T *)out, (const T *)a, (const T *)b, f, s, "emc_ew_binary");
    })
    return 0;
}

EMC_API int emc_ew_compare(int op, int dtype, void *out, const void *a, const void *b,
                           const emc_nd *nd, void *stream) {
    if (op < 0 || op >= EW_NCMP) return emc_set_error(EMC_E_OP, "emc_ew_compare");
    if (nd->nargs < 3) return emc_set_error(EMC_E_ARG, "emc_ew_compare");
    cudaStream_t s = emc_stream(stream);
    EMC_ALL_TYPES(dtype, {
        CmpF<T> f{op};
        return launch_bin(nd, (em_bool *)out, (const T *)a, (const T *)b, f, s, "emc_ew_compare");
    })
    return 0;
}

template <typename T>
static int launch_un_float(int op, const double *prm, const emc_nd *nd, T *out, const T *x,
                           cudaStream_t s) {
    const char *w = "emc_ew_unary";
#define EMC_UN_FAST(OP) \
    case OP: return launch_un(nd, out, x, UnFast<T, OP>{{prm[0], prm[1], prm[2]}}, s, w);
    switch (op) {
    EMC_UN_FAST(EW_NEG) EMC_UN_FAST(EW_ABS) EMC_UN_FAST(EW_RELU) EMC_UN_FAST(EW_SQUARE)
    EMC_UN_FAST(EW_EXP) EMC_UN_FAST(EW_SIGMOID) EMC_UN_FAST(EW_TANH)
    default: return launch_un(nd, out, x, UnF<T>{op, {prm[0], prm[1], prm[2]}, false}, s, w);
    }
#undef EMC_UN_FAST
}

EMC_API int emc_ew_unary(int op, int dtype, void *out, const void *x, const emc_nd *nd,
                         const double *aux, void *stream) {
    bool ok = dtype == EM_BOOL ? un_bool_ok(op) : is_float_dt(dtype) ? un_float_ok(op)
                                                                       : un_int_ok(op);
    if (dtype < 0 || dtype >= EM_NDTYPES || !ok) return emc_set_error(EMC_E_DTYPE, "emc_ew_unary");
    if (nd->nargs < 2) return emc_set_error(EMC_E_ARG, "emc_ew_unary");
    cudaStream_t s = emc_stream(stream);
    double prm[3] = {0, 0, 0};
    if (aux) {
        int np = op == EW_CLAMP || op == EW_ELU || op == EW_NAN_TO_NUM ? 3 : op == EW_SOFTPLUS ? 2
                 : op == EW_LEAKY_RELU;
        for (int i = 0; i < np; i++) prm[i] = aux[i];
    }
    EMC_ALL_TYPES(dtype, {
        if constexpr (IsFloat<T>::value)
            return launch_un_float(op, prm, nd, (T *)out, (const T *)x, s);
        UnF<T> f{op, {prm[0], prm[1], prm[2]}, dtype == EM_BOOL};
        return launch_un(nd, (T *)out, (const T *)x, f, s, "emc_ew_unary");
    })
    return 0;
}

EMC_API int emc_ew_predicate(int op, int dtype, void *out, const void *x, const emc_nd *nd,
                             void *stream) {
    if (op < 0 || op >= EW_NPRED) return emc_set_error(EMC_E_OP, "emc_ew_predicate");
    if (nd->nargs < 2) return emc_set_error(EMC_E_ARG, "emc_ew_predicate");
    cudaStream_t s = emc_stream(stream);
    EMC_ALL_TYPES(dtype, {
        PredF<T> f{op};
        return launch_un(nd, (em_bool *)out, (const T *)x, f, s, "emc_ew_predicate");
    })
    return 0;
}

template <typename U>
__global__ void where_nd(emc_nd nd, int64_t n, U *out, const em_bool *c, const U *a, const U *b) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[4];
        emc_offsets<4>(nd, i, off);
        out[off[0]] = c[off[1]] ? a[off[2]] : b[off[3]];
    }
}

EMC_API int emc_ew_where(int dtype, void *out, const void *cond, const void *a, const void *b,
                         const emc_nd *nd, void *stream) {
    if (dtype < 0 || dtype >= EM_NDTYPES) return emc_set_error(EMC_E_DTYPE, "emc_ew_where");
    if (nd->nargs < 4) return emc_set_error(EMC_E_ARG, "emc_ew_where");
    int64_t n = emc_numel(nd);
    if (n == 0) return 0;
    cudaStream_t s = emc_stream(stream);
    const em_bool *c = (const em_bool *)cond;
    unsigned g = emc_blocks(n);
    switch (em_itemsize[dtype]) {
    case 1: where_nd<<<g, EMC_THREADS, 0, s>>>(*nd, n, (uint8_t *)out, c, (const uint8_t *)a, (const uint8_t *)b); break;
    case 2: where_nd<<<g, EMC_THREADS, 0, s>>>(*nd, n, (uint16_t *)out, c, (const uint16_t *)a, (const uint16_t *)b); break;
    case 4: where_nd<<<g, EMC_THREADS, 0, s>>>(*nd, n, (uint32_t *)out, c, (const uint32_t *)a, (const uint32_t *)b); break;
    case 16: where_nd<<<g, EMC_THREADS, 0, s>>>(*nd, n, (uint4 *)out, c, (const uint4 *)a, (const uint4 *)b); break;
    default: where_nd<<<g, EMC_THREADS, 0, s>>>(*nd, n, (uint64_t *)out, c, (const uint64_t *)a, (const uint64_t *)b); break;
    }
    EMC_LAUNCHED("emc_ew_where");
    return 0;
}

/* The kernels' element functions run on the host, over contiguous host
   arrays: the CPU tests compare them with ember's CPU ops, which checks the op
   table (codes, parameters, dtypes) of this file without a GPU.  family: 0
   unary, 1 binary, 2 compare, 3 predicate. */
template <typename T, typename O, typename F>
static void host_un(int64_t n, O *out, const T *x, F f) { for (int64_t i = 0; i < n; i++) out[i] = f(x[i]); }
template <typename T, typename O, typename F>
static void host_bin(int64_t n, O *out, const T *a, const T *b, F f) {
    for (int64_t i = 0; i < n; i++) out[i] = f(a[i], b[i]);
}

EMC_API int emc_ew_host(int family, int op, int dtype, void *out, const void *a, const void *b,
                        int64_t n, const double *aux) {
    if (dtype < 0 || dtype >= EM_NDTYPES || dtype == EM_F16 || dtype == EM_BF16)
        return emc_set_error(EMC_E_DTYPE, "emc_ew_host");
    double prm[3] = {0, 0, 0};
    if (aux)
        for (int i = 0; i < 3; i++) prm[i] = aux[i];
    if (family == 0) {
        bool ok = dtype == EM_BOOL ? un_bool_ok(op) : is_float_dt(dtype) ? un_float_ok(op)
                                                                           : un_int_ok(op);
        if (!ok) return emc_set_error(EMC_E_DTYPE, "emc_ew_host");
        EMC_ALL_TYPES(dtype, host_un(n, (T *)out, (const T *)a,
                                     UnF<T>{op, {prm[0], prm[1], prm[2]}, dtype == EM_BOOL}))
    } else if (family == 1) {
        bool ok = dtype == EM_BOOL ? bin_bool_ok(op) : is_float_dt(dtype) ? bin_float_ok(op)
                                                                            : bin_int_ok(op);
        if (!ok) return emc_set_error(EMC_E_DTYPE, "emc_ew_host");
        if (dtype == EM_BOOL) {
            host_bin(n, (em_bool *)out, (const em_bool *)a, (const em_bool *)b, BinBool{op, prm[0]});
            return 0;
        }
        EMC_ALL_TYPES(dtype, host_bin(n, (T *)out, (const T *)a, (const T *)b, BinF<T>{op, prm[0]}))
    } else if (family == 2) {
        if (op < 0 || op >= EW_NCMP) return emc_set_error(EMC_E_OP, "emc_ew_host");
        EMC_ALL_TYPES(dtype, host_bin(n, (em_bool *)out, (const T *)a, (const T *)b, CmpF<T>{op}))
    } else if (family == 3) {
        if (op < 0 || op >= EW_NPRED) return emc_set_error(EMC_E_OP, "emc_ew_host");
        EMC_ALL_TYPES(dtype, host_un(n, (em_bool *)out, (const T *)a, PredF<T>{op}))
    } else {
        return emc_set_error(EMC_E_OP, "emc_ew_host");
    }
    return 0;
}
