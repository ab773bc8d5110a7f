/* dtype conversion loops for every (dst, src) pair, and fill. */
#include <string.h>
#include "ember.h"

typedef uint8_t em_bool;
typedef uint16_t em_half;
typedef uint16_t em_bf16;

/* load: storage type -> arithmetic value; store: value -> storage type */
#define LD_bool(x) (x)
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
#define ST_u8(v) ((uint8_t)(int64_t)(v))
#define ST_i8(v) ((int8_t)(int64_t)(v))
#define ST_i16(v) ((int16_t)(int64_t)(v))
#define ST_i32(v) ((int32_t)(int64_t)(v))
#define ST_i64(v) ((int64_t)(v))
#define ST_f16(v) em_f2h((float)(v))
#define ST_bf16(v) em_f2bf((float)(v))
#define ST_f32(v) ((float)(v))
#define ST_f64(v) ((double)(v))
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

/* float -> small int goes through int64 so out-of-range values wrap instead of UB */
#define CAST(d, s)                                                                    \
    static void cast_##d##_##s(char **p, const int64_t *st, int64_t n, const void *aux) { \
        (void)aux;                                                                    \
        char *o = p[0]; const char *i = p[1];                                         \
        int64_t so = st[0], si = st[1];                                               \
        if (so == sizeof(T_##d) && si == sizeof(T_##s)) {                             \
            T_##d *oo = (T_##d *)o; const T_##s *ii = (const T_##s *)i;               \
            for (int64_t k = 0; k < n; k++) oo[k] = ST_##d(LD_##s(ii[k]));            \
        } else {                                                                      \
            for (int64_t k = 0; k < n; k++, o += so, i += si)                         \
                *(T_##d *)o = ST_##d(LD_##s(*(const T_##s *)i));                      \
        }                                                                             \
    }

#define CAST_ROW(d) CAST(d, bool) CAST(d, u8) CAST(d, i8) CAST(d, i16) CAST(d, i32) \
    CAST(d, i64) CAST(d, f16) CAST(d, bf16) CAST(d, f32) CAST(d, f64)
CAST_ROW(bool) CAST_ROW(u8) CAST_ROW(i8) CAST_ROW(i16) CAST_ROW(i32)
CAST_ROW(i64) CAST_ROW(f16) CAST_ROW(bf16) CAST_ROW(f32) CAST_ROW(f64)

/* complex casts: a real source gets a zero imaginary part; a real destination
   takes the real part (torch drops the imaginary part, warning in Python). */
#define T_c64 float
#define T_c128 double
#define CAST_TO_C(d, s)                                                               \
    static void cast_##d##_##s(char **p, const int64_t *st, int64_t n, const void *aux) { \
        (void)aux;                                                                    \
        char *o = p[0]; const char *i = p[1];                                         \
        for (int64_t k = 0; k < n; k++, o += st[0], i += st[1]) {                     \
            ((T_##d *)o)[0] = (T_##d)LD_##s(*(const T_##s *)i);                       \
            ((T_##d *)o)[1] = 0;                                                      \
        }                                                                             \
    }
#define CAST_FROM_C(d, s)                                                             \
    static void cast_##d##_##s(char **p, const int64_t *st, int64_t n, const void *aux) { \
        (void)aux;                                                                    \
        char *o = p[0]; const char *i = p[1];                                         \
        for (int64_t k = 0; k < n; k++, o += st[0], i += st[1])                       \
            *(T_##d *)o = ST_##d(((const T_##s *)i)[0]);                              \
    }
#define CAST_C_C(d, s)                                                                \
    static void cast_##d##_##s(char **p, const int64_t *st, int64_t n, const void *aux) { \
        (void)aux;                                                                    \
        char *o = p[0]; const char *i = p[1];                                         \
        for (int64_t k = 0; k < n; k++, o += st[0], i += st[1]) {                     \
            ((T_##d *)o)[0] = (T_##d)((const T_##s *)i)[0];                           \
            ((T_##d *)o)[1] = (T_##d)((const T_##s *)i)[1];                           \
        }                                                                             \
    }
#define CAST_C_ROW(d) CAST_TO_C(d, bool) CAST_TO_C(d, u8) CAST_TO_C(d, i8) CAST_TO_C(d, i16) \
    CAST_TO_C(d, i32) CAST_TO_C(d, i64) CAST_TO_C(d, f16) CAST_TO_C(d, bf16) CAST_TO_C(d, f32) \
    CAST_TO_C(d, f64)
#define CAST_FROM_C_COL(s) CAST_FROM_C(bool, s) CAST_FROM_C(u8, s) CAST_FROM_C(i8, s)     \
    CAST_FROM_C(i16, s) CAST_FROM_C(i32, s) CAST_FROM_C(i64, s) CAST_FROM_C(f16, s)         \
    CAST_FROM_C(bf16, s) CAST_FROM_C(f32, s) CAST_FROM_C(f64, s)
CAST_C_ROW(c64) CAST_C_ROW(c128) CAST_FROM_C_COL(c64) CAST_FROM_C_COL(c128)
CAST_C_C(c64, c128) CAST_C_C(c128, c64)

#define ROW(d) { cast_##d##_bool, cast_##d##_u8, cast_##d##_i8, cast_##d##_i16, cast_##d##_i32, \
    cast_##d##_i64, cast_##d##_f16, cast_##d##_bf16, cast_##d##_f32, cast_##d##_f64,         \
    cast_##d##_c64, cast_##d##_c128 }
static void cast_c64_c64(char **p, const int64_t *st, int64_t n, const void *aux);
static void cast_c128_c128(char **p, const int64_t *st, int64_t n, const void *aux);
static const em_loop cast_table[EM_NDTYPES][EM_NDTYPES] = {
    ROW(bool), ROW(u8), ROW(i8), ROW(i16), ROW(i32), ROW(i64), ROW(f16), ROW(bf16), ROW(f32),
    ROW(f64), ROW(c64), ROW(c128)
};
CAST_C_C(c64, c64) CAST_C_C(c128, c128)

/* Same-size casts are plain copies: memcpy is faster for contiguous rows. */
static void copy_bytes(char **p, const int64_t *st, int64_t n, const void *aux) {
    int64_t isz = *(const int64_t *)aux;
    if (st[0] == isz && st[1] == isz) { memcpy(p[0], p[1], (size_t)(n * isz)); return; }
    char *o = p[0]; const char *i = p[1];
    switch (isz) {
    case 1: for (int64_t k = 0; k < n; k++, o += st[0], i += st[1]) *(uint8_t *)o = *(const uint8_t *)i; break;
    case 2: for (int64_t k = 0; k < n; k++, o += st[0], i += st[1]) *(uint16_t *)o = *(const uint16_t *)i; break;
    case 4: for (int64_t k = 0; k < n; k++, o += st[0], i += st[1]) *(uint32_t *)o = *(const uint32_t *)i; break;
    case 8: for (int64_t k = 0; k < n; k++, o += st[0], i += st[1]) *(uint64_t *)o = *(const uint64_t *)i; break;
    default: for (int64_t k = 0; k < n; k++, o += st[0], i += st[1]) *(em_b16 *)o = *(const em_b16 *)i; break;
    }
}

em_loop em_cast_loop(int d, int s) {
    if (d == s) return copy_bytes;
    return cast_table[d][s];
}

void em_fill(int dtype, char *dst, int64_t stride, int64_t n, const void *value, int nthreads) {
    int isz = em_itemsize[dtype];
    (void)nthreads;
    if (stride == isz) {
        int allzero = 1;
        for (int b = 0; b < isz; b++) allzero &= ((const uint8_t *)value)[b] == 0;
        if (allzero || isz == 1) {
            int64_t chunk = 1 << 20, nb = n * isz;
            #pragma omp parallel for num_threads(nthreads) schedule(static) if (nb > (1 << 22))
            for (int64_t s = 0; s < nb; s += chunk)
                memset(dst + s, isz == 1 ? *(const uint8_t *)value : 0,
                       (size_t)(s + chunk < nb ? chunk : nb - s));
            return;
        }
        /* contiguous: unit-stride stores, which the compiler vectorises */
        if (isz == 4 || isz == 8) {
            const int64_t chunk = 1 << 16;
            #pragma omp parallel for num_threads(nthreads) schedule(static) if (n > (1 << 20))
            for (int64_t s = 0; s < n; s += chunk) {
                const int64_t e = s + chunk < n ? s + chunk : n;
                if (isz == 4) {
                    uint32_t v = *(const uint32_t *)value, *d = (uint32_t *)dst;
                    for (int64_t k = s; k < e; k++) d[k] = v;
                } else {
                    uint64_t v = *(const uint64_t *)value, *d = (uint64_t *)dst;
                    for (int64_t k = s; k < e; k++) d[k] = v;
                }
            }
            return;
        }
    }
    switch (isz) {
    case 1: { uint8_t v = *(const uint8_t *)value; for (int64_t k = 0; k < n; k++) *(uint8_t *)(dst + k * stride) = v; } break;
    case 2: { uint16_t v = *(const uint16_t *)value; for (int64_t k = 0; k < n; k++) *(uint16_t *)(dst + k * stride) = v; } break;
    case 4: {
        uint32_t v = *(const uint32_t *)value;
        #pragma omp parallel for num_threads(nthreads) schedule(static) if (n > (1 << 20))
        for (int64_t k = 0; k < n; k++) *(uint32_t *)(dst + k * stride) = v;
    } break;
    case 8: {
        uint64_t v = *(const uint64_t *)value;
        #pragma omp parallel for num_threads(nthreads) schedule(static) if (n > (1 << 19))
        for (int64_t k = 0; k < n; k++) *(uint64_t *)(dst + k * stride) = v;
    } break;
    default: {
        em_b16 v = *(const em_b16 *)value;
        #pragma omp parallel for num_threads(nthreads) schedule(static) if (n > (1 << 19))
        for (int64_t k = 0; k < n; k++) *(em_b16 *)(dst + k * stride) = v;
    } break;
    }
}
