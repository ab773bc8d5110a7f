/* Indexing kernels (see ember_index.h).  No bounds checks inside the kernels:
   the Cython layer validated every index once.  Accumulating kernels split
   work only over the non-indexed dimensions, so results are deterministic. */
#include <string.h>
#include "ember_index.h"
#ifdef _OPENMP
#include <omp.h>
#endif

typedef uint8_t em_bool;
typedef uint16_t em_half;
typedef uint16_t em_bf16;

#define LD_bool(x) ((int)(x))
#define LD_u8(x) (x)
#define LD_i8(x) (x)
#define LD_i16(x) (x)
#define LD_i32(x) (x)
#define LD_i64(x) (x)
#define LD_f16(x) em_h2f(x)
#define LD_bf16(x) em_bf2f(x)
#define LD_f32(x) (x)
#define LD_f64(x) (x)
#define ST_bool(v) ((em_bool)((v) != 0))
#define ST_u8(v) ((uint8_t)(v))
#define ST_i8(v) ((int8_t)(v))
#define ST_i16(v) ((int16_t)(v))
#define ST_i32(v) ((int32_t)(v))
#define ST_i64(v) ((int64_t)(v))
#define ST_f16(v) em_f2h((float)(v))
#define ST_bf16(v) em_f2bf((float)(v))
#define ST_f32(v) ((float)(v))
#define ST_f64(v) ((double)(v))
#define C_bool int
#define C_u8 uint8_t
#define C_i8 int8_t
#define C_i16 int16_t
#define C_i32 int32_t
#define C_i64 int64_t
#define C_f16 float
#define C_bf16 float
#define C_f32 float
#define C_f64 double
#define T_bool em_bool
#define T_u8 uint8_t
#define T_i8 int8_t
#define T_i16 int16_t
#define T_i32 int32_t
#define T_i64 int64_t
#define T_f16 em_half
#define T_bf16 em_bf16
#define T_f32 float
#define T_f64 double

/* max/min that propagate NaN (x != x is false for integers) */
#define RMAX(x, y) (((x) != (x) || (x) > (y)) ? (x) : (y))
#define RMIN(x, y) (((x) != (x) || (x) < (y)) ? (x) : (y))

#define APPLY(op, T, C, LD, ST, dst, srcv)                                  \
    do {                                                                    \
        C x_ = LD(*(T *)(dst)), y_ = LD(srcv);                              \
        C r_;                                                               \
        switch (op) {                                                       \
        case EM_RED_ADD: r_ = (C)(x_ + y_); break;                          \
        case EM_RED_MUL: r_ = (C)(x_ * y_); break;                          \
        case EM_RED_MAX: r_ = (y_ != y_) ? y_ : RMAX(x_, y_); break;        \
        case EM_RED_MIN: r_ = (y_ != y_) ? y_ : RMIN(x_, y_); break;        \
        default: r_ = y_; break;                                            \
        }                                                                   \
        *(T *)(dst) = ST(r_);                                               \
    } while (0)

/* a[i] op= b[i] over a strided run; scatter: dst[idx[i] * ds] op= src[i] */
#define DEF_TYPED(s)                                                                      \
    static void acc_##s(int op, char *a, int64_t sa, const char *b, int64_t sb, int64_t n) { \
        if (op == EM_RED_ADD) {                                                           \
            if (sa == (int64_t)sizeof(T_##s) && sb == (int64_t)sizeof(T_##s)) {          \
                T_##s *restrict x_ = (T_##s *)a;                                          \
                const T_##s *restrict y_ = (const T_##s *)b;                              \
                for (int64_t i = 0; i < n; i++)                                           \
                    x_[i] = ST_##s(LD_##s(x_[i]) + LD_##s(y_[i]));                        \
                return;                                                                   \
            }                                                                             \
            for (int64_t i = 0; i < n; i++, a += sa, b += sb)                             \
                *(T_##s *)a = ST_##s(LD_##s(*(T_##s *)a) + LD_##s(*(const T_##s *)b));   \
            return;                                                                       \
        }                                                                                 \
        for (int64_t i = 0; i < n; i++, a += sa, b += sb)                                 \
            APPLY(op, T_##s, C_##s, LD_##s, ST_##s, a, *(const T_##s *)b);                \
    }                                                                                     \
    static void scat_##s(int op, char *d, int64_t sd, const char *src, int64_t ss,        \
                         const char *idx, int64_t si, int64_t ds, int64_t n) {            \
        for (int64_t i = 0; i < n; i++, d += sd, src += ss, idx += si) {                  \
            char *q = d + *(const int64_t *)idx * ds;                                     \
            APPLY(op, T_##s, C_##s, LD_##s, ST_##s, q, *(const T_##s *)src);              \
        }                                                                                 \
    }
DEF_TYPED(bool) DEF_TYPED(u8) DEF_TYPED(i8) DEF_TYPED(i16) DEF_TYPED(i32) DEF_TYPED(i64)
DEF_TYPED(f16) DEF_TYPED(bf16) DEF_TYPED(f32) DEF_TYPED(f64)

/* complex: sum, product and plain set (torch has no max/min for complex) */
#define CAPPLY(op, R, dst, src)                                                           \
    do {                                                                                  \
        R *x_ = (R *)(dst); const R *y_ = (const R *)(src);                               \
        if (op == EM_RED_ADD) { x_[0] += y_[0]; x_[1] += y_[1]; }                         \
        else if (op == EM_RED_MUL) {                                                      \
            R re = x_[0] * y_[0] - x_[1] * y_[1], im = x_[0] * y_[1] + x_[1] * y_[0];     \
            x_[0] = re; x_[1] = im;                                                       \
        } else { x_[0] = y_[0]; x_[1] = y_[1]; }                                          \
    } while (0)
#define DEF_CPLX(s, R)                                                                    \
    static void acc_##s(int op, char *a, int64_t sa, const char *b, int64_t sb, int64_t n) { \
        for (int64_t i = 0; i < n; i++, a += sa, b += sb) CAPPLY(op, R, a, b);            \
    }                                                                                     \
    static void scat_##s(int op, char *d, int64_t sd, const char *src, int64_t ss,        \
                         const char *idx, int64_t si, int64_t ds, int64_t n) {            \
        for (int64_t i = 0; i < n; i++, d += sd, src += ss, idx += si)                    \
            CAPPLY(op, R, d + *(const int64_t *)idx * ds, src);                           \
    }
DEF_CPLX(c64, float) DEF_CPLX(c128, double)

typedef void (*acc_fn)(int, char *, int64_t, const char *, int64_t, int64_t);
typedef void (*scat_fn)(int, char *, int64_t, const char *, int64_t, const char *, int64_t,
                        int64_t, int64_t);
static const acc_fn ACC[EM_NDTYPES] = {acc_bool, acc_u8, acc_i8, acc_i16, acc_i32, acc_i64,
                                       acc_f16, acc_bf16, acc_f32, acc_f64, acc_c64, acc_c128};
static const scat_fn SCAT[EM_NDTYPES] = {scat_bool, scat_u8, scat_i8, scat_i16, scat_i32,
                                         scat_i64, scat_f16, scat_bf16, scat_f32, scat_f64,
                                         scat_c64, scat_c128};

/* dst[i] = src[i] for a strided run of n elements of itemsize isz */
static inline void copy_run(char *d, int64_t sd, const char *s, int64_t ss, int64_t n, int isz) {
    if (sd == isz && ss == isz) { memcpy(d, s, (size_t)(n * isz)); return; }
    if (ss == 0) {  /* broadcast value: load once (lets the compiler vectorise the fill) */
        switch (isz) {
        case 1: { uint8_t v = *(const uint8_t *)s; if (sd == 1) { memset(d, v, (size_t)n); return; }
                  for (int64_t i = 0; i < n; i++, d += sd) *(uint8_t *)d = v; } return;
        case 2: { uint16_t v = *(const uint16_t *)s;
                  if (sd == 2) { uint16_t *q = (uint16_t *)d; for (int64_t i = 0; i < n; i++) q[i] = v; return; }
                  for (int64_t i = 0; i < n; i++, d += sd) *(uint16_t *)d = v; } return;
        case 4: { uint32_t v = *(const uint32_t *)s;
                  if (sd == 4) { uint32_t *q = (uint32_t *)d; for (int64_t i = 0; i < n; i++) q[i] = v; return; }
                  for (int64_t i = 0; i < n; i++, d += sd) *(uint32_t *)d = v; } return;
        case 8: { uint64_t v = *(const uint64_t *)s;
                  if (sd == 8) { uint64_t *q = (uint64_t *)d; for (int64_t i = 0; i < n; i++) q[i] = v; return; }
                  for (int64_t i = 0; i < n; i++, d += sd) *(uint64_t *)d = v; } return;
        default: { em_b16 v = *(const em_b16 *)s;
                   for (int64_t i = 0; i < n; i++, d += sd) *(em_b16 *)d = v; } return;
        }
    }
    switch (isz) {
    case 1: for (int64_t i = 0; i < n; i++, d += sd, s += ss) *(uint8_t *)d = *(const uint8_t *)s; break;
    case 2: for (int64_t i = 0; i < n; i++, d += sd, s += ss) *(uint16_t *)d = *(const uint16_t *)s; break;
    case 4: for (int64_t i = 0; i < n; i++, d += sd, s += ss) *(uint32_t *)d = *(const uint32_t *)s; break;
    case 8: for (int64_t i = 0; i < n; i++, d += sd, s += ss) *(uint64_t *)d = *(const uint64_t *)s; break;
    default: for (int64_t i = 0; i < n; i++, d += sd, s += ss) *(em_b16 *)d = *(const em_b16 *)s; break;
    }
}

/* ---------------------------------------------------------------------------
   advanced indexing */

int em_ix_offsets(int k, const int64_t *const *idx, const int64_t *sizes,
                  const int64_t *strides, int64_t n, int64_t *off, int64_t *bad) {
    if (k == 1) {
        const int64_t *ix = idx[0];
        int64_t sz = sizes[0], st = strides[0];
        for (int64_t j = 0; j < n; j++) {
            int64_t v = ix[j];
            if (v < 0) v += sz;
            if ((uint64_t)v >= (uint64_t)sz) { *bad = ix[j]; return 0; }
            off[j] = v * st;
        }
        return -1;
    }
    for (int64_t j = 0; j < n; j++) {
        int64_t o = 0;
        for (int q = 0; q < k; q++) {
            int64_t v = idx[q][j];
            if (v < 0) v += sizes[q];
            if ((uint64_t)v >= (uint64_t)sizes[q]) { *bad = idx[q][j]; return q; }
            o += v * strides[q];
        }
        off[j] = o;
    }
    return -1;
}

int64_t em_check_bounds(const int64_t *idx, int64_t n, int64_t lo, int64_t size) {
    for (int64_t i = 0; i < n; i++)
        if (idx[i] < lo || idx[i] >= size) return i;
    return -1;
}

/* the op on one run of the innermost post dim */
static inline void ix_inner(const em_ix_plan *p, char *a, int64_t sa, char *b, int64_t sb,
                            int64_t n) {
    int isz = em_itemsize[p->dtype];
    if (p->op == EM_IX_GET) copy_run(b, sb, a, sa, n, isz);
    else if (p->op == EM_IX_PUT) copy_run(a, sa, b, sb, n, isz);
    else ACC[p->dtype](EM_RED_ADD, a, sa, b, sb, n);
}

/* walk post dims d.. (dim `d` restricted to [lo, hi)) */
static void ix_post(const em_ix_plan *p, char *a, char *b, int d, int64_t lo, int64_t hi) {
    if (d == p->npost - 1) {
        ix_inner(p, a + lo * p->post_sa[d], p->post_sa[d], b + lo * p->post_sb[d],
                 p->post_sb[d], hi - lo);
        return;
    }
    for (int64_t i = lo; i < hi; i++)
        ix_post(p, a + i * p->post_sa[d], b + i * p->post_sb[d], d + 1, 0,
                p->post_shape[d + 1]);
}

static inline void ix_row(const em_ix_plan *p, char *a, char *b, int64_t lo, int64_t hi) {
    if (p->npost == 0) ix_inner(p, a, 0, b, 0, 1);
    else ix_post(p, a, b, 0, lo, hi);
}

/* rows r0..r1 of the (pre x B) space, every post element of each */
static void ix_rows(const em_ix_plan *p, int64_t r0, int64_t r1) {
    int64_t ci[EM_IX_MAXDIMS];
    int64_t pre = r0 / p->nb, j = r0 % p->nb;
    char *a = p->a, *b = p->b;
    for (int d = p->npre - 1; d >= 0; d--) {
        ci[d] = pre % p->pre_shape[d];
        pre /= p->pre_shape[d];
        a += ci[d] * p->pre_sa[d];
        b += ci[d] * p->pre_sb[d];
    }
    int64_t hi = p->npost ? p->post_shape[0] : 1;
    int fast = p->npost == 0 && p->op != EM_IX_ACC;
    int isz = em_itemsize[p->dtype];
    for (int64_t r = r0; r < r1; r++) {
        if (fast) {
            char *x = a + p->off[j], *y = b + j * p->sb_b;
            if (p->op == EM_IX_GET) { char *t = x; x = y; y = t; }
            switch (isz) {  /* x <- y */
            case 1: *(uint8_t *)x = *(const uint8_t *)y; break;
            case 2: *(uint16_t *)x = *(const uint16_t *)y; break;
            case 4: *(uint32_t *)x = *(const uint32_t *)y; break;
            case 8: *(uint64_t *)x = *(const uint64_t *)y; break;
            default: *(em_b16 *)x = *(const em_b16 *)y; break;
            }
        } else {
            ix_row(p, a + p->off[j], b + j * p->sb_b, 0, hi);
        }
        if (++j == p->nb) {
            j = 0;
            for (int d = p->npre - 1; d >= 0; d--) {
                a += p->pre_sa[d];
                b += p->pre_sb[d];
                if (++ci[d] < p->pre_shape[d]) break;
                a -= ci[d] * p->pre_sa[d];
                b -= ci[d] * p->pre_sb[d];
                ci[d] = 0;
            }
        }
    }
}

void em_ix_run(const em_ix_plan *p, int nthreads) {
    int64_t npre = 1;
    for (int d = 0; d < p->npre; d++) npre *= p->pre_shape[d];
    for (int d = 0; d < p->npost; d++) if (p->post_shape[d] == 0) return;
    int64_t rows = npre * p->nb;
    if (rows == 0) return;
    if (p->op != EM_IX_ACC) {
        if (nthreads <= 1 || rows < 2) { ix_rows(p, 0, rows); return; }
        #pragma omp parallel num_threads(nthreads)
        {
#ifdef _OPENMP
            int t = omp_get_thread_num(), nt = omp_get_num_threads();
#else
            int t = 0, nt = 1;
#endif
            int64_t per = rows / nt, extra = rows % nt;
            int64_t r0 = t * per + (t < extra ? t : extra);
            int64_t r1 = r0 + per + (t < extra ? 1 : 0);
            if (r0 < r1) ix_rows(p, r0, r1);
        }
        return;
    }
    /* accumulate: every B position of one (pre, post) coordinate stays on one
       thread, in order -> deterministic sums */
    if (nthreads > 1 && npre >= nthreads) {
        #pragma omp parallel num_threads(nthreads)
        {
#ifdef _OPENMP
            int t = omp_get_thread_num(), nt = omp_get_num_threads();
#else
            int t = 0, nt = 1;
#endif
            int64_t per = npre / nt, extra = npre % nt;
            int64_t q0 = t * per + (t < extra ? t : extra);
            int64_t q1 = q0 + per + (t < extra ? 1 : 0);
            if (q0 < q1) ix_rows(p, q0 * p->nb, q1 * p->nb);
        }
        return;
    }
    if (nthreads > 1 && p->npost > 0 && p->post_shape[0] >= nthreads) {
        int64_t n0 = p->post_shape[0];
        #pragma omp parallel num_threads(nthreads)
        {
#ifdef _OPENMP
            int t = omp_get_thread_num(), nt = omp_get_num_threads();
#else
            int t = 0, nt = 1;
#endif
            int64_t per = n0 / nt, extra = n0 % nt;
            int64_t lo = t * per + (t < extra ? t : extra);
            int64_t hi = lo + per + (t < extra ? 1 : 0);
            int64_t ci[EM_IX_MAXDIMS];
            for (int64_t q = 0; q < npre && lo < hi; q++) {
                char *a = p->a, *b = p->b;
                int64_t r = q;
                for (int d = p->npre - 1; d >= 0; d--) {
                    ci[d] = r % p->pre_shape[d];
                    r /= p->pre_shape[d];
                    a += ci[d] * p->pre_sa[d];
                    b += ci[d] * p->pre_sb[d];
                }
                for (int64_t j = 0; j < p->nb; j++)
                    ix_post(p, a + p->off[j], b + j * p->sb_b, 0, lo, hi);
            }
        }
        return;
    }
    ix_rows(p, 0, rows);
}

/* ---------------------------------------------------------------------------
   gather / scatter along a dim, masked fill */

void em_gather_loop(char **p, const int64_t *st, int64_t n, const void *aux) {
    const em_dim_aux *x = (const em_dim_aux *)aux;
    char *o = p[0];
    const char *s = p[1], *ix = p[2];
    int64_t so = st[0], ss = st[1], si = st[2], ds = x->dim_stride;
    switch (em_itemsize[x->dtype]) {
    case 1: for (int64_t i = 0; i < n; i++, o += so, s += ss, ix += si) *(uint8_t *)o = *(const uint8_t *)(s + *(const int64_t *)ix * ds); break;
    case 2: for (int64_t i = 0; i < n; i++, o += so, s += ss, ix += si) *(uint16_t *)o = *(const uint16_t *)(s + *(const int64_t *)ix * ds); break;
    case 4: for (int64_t i = 0; i < n; i++, o += so, s += ss, ix += si) *(uint32_t *)o = *(const uint32_t *)(s + *(const int64_t *)ix * ds); break;
    case 8: for (int64_t i = 0; i < n; i++, o += so, s += ss, ix += si) *(uint64_t *)o = *(const uint64_t *)(s + *(const int64_t *)ix * ds); break;
    default: for (int64_t i = 0; i < n; i++, o += so, s += ss, ix += si) *(em_b16 *)o = *(const em_b16 *)(s + *(const int64_t *)ix * ds); break;
    }
}

void em_scatter_loop(char **p, const int64_t *st, int64_t n, const void *aux) {
    const em_dim_aux *x = (const em_dim_aux *)aux;
    if (x->op == EM_RED_SET) {
        char *d = p[0];
        const char *s = p[1], *ix = p[2];
        int64_t ds = x->dim_stride;
        int isz = em_itemsize[x->dtype];
        for (int64_t i = 0; i < n; i++, d += st[0], s += st[1], ix += st[2])
            copy_run(d + *(const int64_t *)ix * ds, 0, s, 0, 1, isz);
        return;
    }
    SCAT[x->dtype](x->op, p[0], st[0], p[1], st[1], p[2], st[2], x->dim_stride, n);
}

void em_masked_fill_loop(char **p, const int64_t *st, int64_t n, const void *aux) {
    const em_fill_aux *x = (const em_fill_aux *)aux;
    char *d = p[0];
    const char *m = p[1];
    int64_t sd = st[0], sm = st[1];
    switch (x->itemsize) {
    case 1: { uint8_t v = (uint8_t)x->value; for (int64_t i = 0; i < n; i++, d += sd, m += sm) if (*m) *(uint8_t *)d = v; } break;
    case 2: { uint16_t v = (uint16_t)x->value; for (int64_t i = 0; i < n; i++, d += sd, m += sm) if (*m) *(uint16_t *)d = v; } break;
    case 4: { uint32_t v = (uint32_t)x->value; for (int64_t i = 0; i < n; i++, d += sd, m += sm) if (*m) *(uint32_t *)d = v; } break;
    case 8: { uint64_t v = x->value; for (int64_t i = 0; i < n; i++, d += sd, m += sm) if (*m) *(uint64_t *)d = v; } break;
    default: { em_b16 v = {x->value, x->value_hi}; for (int64_t i = 0; i < n; i++, d += sd, m += sm) if (*m) *(em_b16 *)d = v; } break;
    }
}

/* ---------------------------------------------------------------------------
   masks and nonzero */

int64_t em_count_nonzero(const uint8_t *m, int64_t n, int nthreads) {
    int64_t c = 0;
    #pragma omp parallel for num_threads(nthreads) reduction(+ : c) schedule(static) if (nthreads > 1)
    for (int64_t i = 0; i < n; i++) c += m[i] != 0;
    return c;
}

void em_nonzero(const uint8_t *m, int ndim, const int64_t *shape, int64_t n, int64_t *out) {
    int64_t ci[EM_IX_MAXDIMS] = {0};
    for (int64_t i = 0; i < n; i++) {
        if (m[i]) {
            for (int d = 0; d < ndim; d++) out[d] = ci[d];
            out += ndim;
        }
        for (int d = ndim - 1; d >= 0; d--) {
            if (++ci[d] < shape[d]) break;
            ci[d] = 0;
        }
    }
}

void em_masked_select(char *out, const char *src, const uint8_t *m, int64_t n, int isz) {
    switch (isz) {
    case 1: for (int64_t i = 0; i < n; i++) if (m[i]) { *(uint8_t *)out = ((const uint8_t *)src)[i]; out += 1; } break;
    case 2: for (int64_t i = 0; i < n; i++) if (m[i]) { *(uint16_t *)out = ((const uint16_t *)src)[i]; out += 2; } break;
    case 4: for (int64_t i = 0; i < n; i++) if (m[i]) { *(uint32_t *)out = ((const uint32_t *)src)[i]; out += 4; } break;
    case 8: for (int64_t i = 0; i < n; i++) if (m[i]) { *(uint64_t *)out = ((const uint64_t *)src)[i]; out += 8; } break;
    default: for (int64_t i = 0; i < n; i++) if (m[i]) { *(em_b16 *)out = ((const em_b16 *)src)[i]; out += 16; } break;
    }
}

void em_masked_scatter(char *dst, const char *src, const uint8_t *m, int64_t n, int isz) {
    switch (isz) {
    case 1: for (int64_t i = 0; i < n; i++) if (m[i]) { ((uint8_t *)dst)[i] = *(const uint8_t *)src; src += 1; } break;
    case 2: for (int64_t i = 0; i < n; i++) if (m[i]) { ((uint16_t *)dst)[i] = *(const uint16_t *)src; src += 2; } break;
    case 4: for (int64_t i = 0; i < n; i++) if (m[i]) { ((uint32_t *)dst)[i] = *(const uint32_t *)src; src += 4; } break;
    case 8: for (int64_t i = 0; i < n; i++) if (m[i]) { ((uint64_t *)dst)[i] = *(const uint64_t *)src; src += 8; } break;
    default: for (int64_t i = 0; i < n; i++) if (m[i]) { ((em_b16 *)dst)[i] = *(const em_b16 *)src; src += 16; } break;
    }
}

/* ---------------------------------------------------------------------------
   joins and triangles */

void em_cat_rows(char *out, int64_t outer, int64_t out_row, int npieces, char *const *src,
                 const int64_t *row_bytes, const int64_t *col_bytes, int nthreads) {
    int64_t tasks = outer * npieces;
    if (nthreads <= 1 || tasks < 2) {
        for (int64_t o = 0; o < outer; o++)
            for (int q = 0; q < npieces; q++)
                if (row_bytes[q])
                    memcpy(out + o * out_row + col_bytes[q], src[q] + o * row_bytes[q],
                           (size_t)row_bytes[q]);
        return;
    }
    #pragma omp parallel for num_threads(nthreads) schedule(static)
    for (int64_t t = 0; t < tasks; t++) {
        int64_t o = t / npieces;
        int q = (int)(t % npieces);
        if (row_bytes[q])
            memcpy(out + o * out_row + col_bytes[q], src[q] + o * row_bytes[q],
                   (size_t)row_bytes[q]);
    }
}

void em_tri(char *data, int64_t batch, int64_t rows, int64_t cols, int64_t k, int upper,
            int isz, int nthreads) {
    int64_t total = batch * rows;
    #pragma omp parallel for num_threads(nthreads) schedule(static) if (nthreads > 1)
    for (int64_t t = 0; t < total; t++) {
        int64_t i = t % rows;
        char *row = data + t * cols * isz;
        int64_t lo, hi;  /* zero [lo, hi) */
        if (upper) { lo = 0; hi = i + k; }
        else { lo = i + k + 1; hi = cols; }
        if (lo < 0) lo = 0;
        if (hi > cols) hi = cols;
        if (lo < hi) memset(row + lo * isz, 0, (size_t)((hi - lo) * isz));
    }
}
