/* The loop shape of the vectorised special functions (special.c and
   special_bessel_impl.h); nothing here knows about Python. */
#ifndef EMBER_SPECIAL_LOOP_H
#define EMBER_SPECIAL_LOOP_H
#include <stdint.h>

/* the strided form of a unary loop: out = EXPR of the element x, one at a time
   (p, s, n are the loop's arguments) */
#define SP_STRIDED_UNARY(T, EXPR)                                                      \
    do {                                                                               \
        char *o_ = p[0];                                                               \
        const char *a_ = p[1];                                                         \
        for (int64_t i_ = 0; i_ < n; i_++, o_ += s[0], a_ += s[1]) {                   \
            T x = *(const T *)a_;                                                      \
            *(T *)o_ = (EXPR);                                                         \
        }                                                                              \
    } while (0)

/* loops of T = float (vectorised in double) or double, one copy per ISA: blocks of
   512 run FAST(x), then the block's rare inputs outside OK(x) are redone with
   FULL(x); the per-block check is an OR-reduction that vectorises too.  Strided rows
   make the same choice per element, so they give the contiguous loop's bits. */
#define FIXUP_LOOP(ATTR, NAME, T, FAST, OK, FULL)                                      \
    ATTR static void NAME(char **p, const int64_t *s, int64_t n, const void *aux) {     \
        (void)aux;                                                                     \
        if (s[0] == sizeof(T) && s[1] == sizeof(T)) {                                  \
            T *o = (T *)p[0];                                                          \
            const T *a = (const T *)p[1];                                              \
            for (int64_t b0 = 0; b0 < n; b0 += 512) {                                  \
                int64_t b1 = b0 + 512 < n ? b0 + 512 : n;                              \
                int bad = 0;                                                           \
                for (int64_t i = b0; i < b1; i++) {                                    \
                    o[i] = FAST(a[i]);                                                 \
                    bad |= !OK(a[i]);                                                  \
                }                                                                      \
                if (bad)                                                               \
                    for (int64_t i = b0; i < b1; i++)                                  \
                        if (!OK(a[i])) o[i] = FULL(a[i]);                              \
            }                                                                          \
        } else {                                                                       \
            SP_STRIDED_UNARY(T, OK(x) ? FAST(x) : FULL(x));                            \
        }                                                                              \
    }

#endif
