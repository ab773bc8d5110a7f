/* AVX2+FMA radix-2 and radix-4 Stockham passes for float complex, included by fft.c
   (x86 only) and chosen at run time. Complex numbers stay interleaved (re, im): a
   __m256 holds four. The passes compute exactly the scalar butterflies of
   fft_impl.h (the twiddle products use FMA, so the last bit may differ).

   Single transform (simdf_pass): the butterflies are vectorised along the ido index
   (ido a multiple of 4); a radix-4 pass with ido == 1 (the last pass) loads four
   butterflies, transposes their 4x4 block and stores four consecutive outputs.
   Several columns at once (simdf_multi): every element of the transform is a
   vector of V adjacent columns (V a multiple of 4), so all passes vectorise over
   the columns with one broadcast twiddle per butterfly output.

   Twiddle tables here hold the i == 0 entries too (value 1): tw[(m - 1) * ido + i]. */
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx2,fma")

/* a * w for four complex pairs */
static inline __m256 sv_cmul(__m256 a, __m256 w) {
    __m256 wr = _mm256_moveldup_ps(w), wi = _mm256_movehdup_ps(w);
    return _mm256_fmaddsub_ps(a, wr, _mm256_mul_ps(_mm256_permute_ps(a, 0xB1), wi));
}

/* a * (s i): swap re/im, then negate the re lanes (s > 0) or the im lanes (s < 0) */
static inline __m256 sv_rot(__m256 a, __m256 negmask) {
    return _mm256_xor_ps(_mm256_permute_ps(a, 0xB1), negmask);
}

static inline __m256 sv_negmask(int s) {
    return s > 0 ? _mm256_setr_ps(-0.f, 0.f, -0.f, 0.f, -0.f, 0.f, -0.f, 0.f)
                 : _mm256_setr_ps(0.f, -0.f, 0.f, -0.f, 0.f, -0.f, 0.f, -0.f);
}

/* one complex (8 bytes) broadcast to the four pairs */
static inline __m256 sv_bcast(const float *w) {
    return _mm256_castpd_ps(_mm256_broadcast_sd((const double *)w));
}

/* float offsets of CC(i, b, c) and CH(i, k, m) */
#define SV_CC(i, b, c) (2 * ((i) + ido * ((b) + cdim * (c))))
#define SV_CH(i, k, m) (2 * ((i) + ido * ((k) + l1 * (m))))

static void sv_pass2(int64_t ido, int64_t l1, const float *restrict cc, float *restrict ch,
                     const float *restrict tw) {
    const int64_t cdim = 2;
    for (int64_t k = 0; k < l1; k++)
        for (int64_t i = 0; i < ido; i += 4) {
            __m256 t0 = _mm256_loadu_ps(cc + SV_CC(i, 0, k));
            __m256 t1 = _mm256_loadu_ps(cc + SV_CC(i, 1, k));
            _mm256_storeu_ps(ch + SV_CH(i, k, 0), _mm256_add_ps(t0, t1));
            _mm256_storeu_ps(ch + SV_CH(i, k, 1),
                             sv_cmul(_mm256_sub_ps(t0, t1), _mm256_loadu_ps(tw + 2 * i)));
        }
}

static void sv_pass4(int64_t ido, int64_t l1, const float *restrict cc, float *restrict ch,
                     const float *restrict tw, int s) {
    const int64_t cdim = 4;
    const __m256 nm = sv_negmask(s);
    for (int64_t k = 0; k < l1; k++)
        for (int64_t i = 0; i < ido; i += 4) {
            __m256 t0 = _mm256_loadu_ps(cc + SV_CC(i, 0, k));
            __m256 t1 = _mm256_loadu_ps(cc + SV_CC(i, 1, k));
            __m256 t2 = _mm256_loadu_ps(cc + SV_CC(i, 2, k));
            __m256 t3 = _mm256_loadu_ps(cc + SV_CC(i, 3, k));
            __m256 a0 = _mm256_add_ps(t0, t2), a1 = _mm256_sub_ps(t0, t2);
            __m256 a2 = _mm256_add_ps(t1, t3), a3 = sv_rot(_mm256_sub_ps(t1, t3), nm);
            _mm256_storeu_ps(ch + SV_CH(i, k, 0), _mm256_add_ps(a0, a2));
            _mm256_storeu_ps(ch + SV_CH(i, k, 1),
                             sv_cmul(_mm256_add_ps(a1, a3), _mm256_loadu_ps(tw + 2 * i)));
            _mm256_storeu_ps(ch + SV_CH(i, k, 2),
                             sv_cmul(_mm256_sub_ps(a0, a2), _mm256_loadu_ps(tw + 2 * (ido + i))));
            _mm256_storeu_ps(ch + SV_CH(i, k, 3), sv_cmul(_mm256_sub_ps(a1, a3),
                                                          _mm256_loadu_ps(tw + 2 * (2 * ido + i))));
        }
}

/* radix 4 with ido == 1 (no twiddles): butterfly k reads cc[4k .. 4k+3] and writes
   ch[k + l1 m]; four butterflies per step through a 4x4 transpose of 64-bit pairs */
static void sv_pass4_last(int64_t l1, const float *restrict cc, float *restrict ch, int s) {
    const __m256 nm = sv_negmask(s);
    for (int64_t k = 0; k < l1; k += 4) {
        __m256d v0 = _mm256_loadu_pd((const double *)(cc + 8 * k));
        __m256d v1 = _mm256_loadu_pd((const double *)(cc + 8 * k + 8));
        __m256d v2 = _mm256_loadu_pd((const double *)(cc + 8 * k + 16));
        __m256d v3 = _mm256_loadu_pd((const double *)(cc + 8 * k + 24));
        __m256d u0 = _mm256_unpacklo_pd(v0, v1), u1 = _mm256_unpackhi_pd(v0, v1);
        __m256d u2 = _mm256_unpacklo_pd(v2, v3), u3 = _mm256_unpackhi_pd(v2, v3);
        __m256 t0 = _mm256_castpd_ps(_mm256_permute2f128_pd(u0, u2, 0x20));
        __m256 t1 = _mm256_castpd_ps(_mm256_permute2f128_pd(u1, u3, 0x20));
        __m256 t2 = _mm256_castpd_ps(_mm256_permute2f128_pd(u0, u2, 0x31));
        __m256 t3 = _mm256_castpd_ps(_mm256_permute2f128_pd(u1, u3, 0x31));
        __m256 a0 = _mm256_add_ps(t0, t2), a1 = _mm256_sub_ps(t0, t2);
        __m256 a2 = _mm256_add_ps(t1, t3), a3 = sv_rot(_mm256_sub_ps(t1, t3), nm);
        _mm256_storeu_ps(ch + 2 * k, _mm256_add_ps(a0, a2));
        _mm256_storeu_ps(ch + 2 * (k + l1), _mm256_add_ps(a1, a3));
        _mm256_storeu_ps(ch + 2 * (k + 2 * l1), _mm256_sub_ps(a0, a2));
        _mm256_storeu_ps(ch + 2 * (k + 3 * l1), _mm256_sub_ps(a1, a3));
    }
}

/* one pass of a single transform; 0 when this pass has no vector form */
static int simdf_pass(int ip, int64_t ido, int64_t l1, const float complex *cc,
                      float complex *ch, const float complex *tw, int s) {
    if (!tw) return 0;
    const float *c = (const float *)cc, *w = (const float *)tw;
    float *h = (float *)ch;
    if (ido % 4 == 0) {
        if (ip == 4) sv_pass4(ido, l1, c, h, w, s);
        else if (ip == 2) sv_pass2(ido, l1, c, h, w);
        else return 0;
        return 1;
    }
    if (ido == 1 && ip == 4 && l1 % 4 == 0) {
        sv_pass4_last(l1, c, h, s);
        return 1;
    }
    return 0;
}

/* one pass over V columns at once: element e of the transform is cc[e * V .. e * V + V) */
static void simdf_multi(int ip, int64_t ido, int64_t l1, int64_t V, const float complex *cc,
                        float complex *ch, const float complex *tw, int s) {
    const float *c = (const float *)cc, *w = (const float *)tw;
    float *h = (float *)ch;
    const __m256 nm = sv_negmask(s);
    if (ip == 2) {
        const int64_t cdim = 2;
        for (int64_t k = 0; k < l1; k++)
            for (int64_t i = 0; i < ido; i++) {
                const float *x0 = c + V * SV_CC(i, 0, k), *x1 = c + V * SV_CC(i, 1, k);
                float *y0 = h + V * SV_CH(i, k, 0), *y1 = h + V * SV_CH(i, k, 1);
                __m256 w1 = sv_bcast(w + 2 * i);
                for (int64_t v = 0; v < 2 * V; v += 8) {
                    __m256 t0 = _mm256_loadu_ps(x0 + v), t1 = _mm256_loadu_ps(x1 + v);
                    _mm256_storeu_ps(y0 + v, _mm256_add_ps(t0, t1));
                    _mm256_storeu_ps(y1 + v, sv_cmul(_mm256_sub_ps(t0, t1), w1));
                }
            }
        return;
    }
    const int64_t cdim = 4;
    for (int64_t k = 0; k < l1; k++)
        for (int64_t i = 0; i < ido; i++) {
            const float *x0 = c + V * SV_CC(i, 0, k), *x1 = c + V * SV_CC(i, 1, k),
                        *x2 = c + V * SV_CC(i, 2, k), *x3 = c + V * SV_CC(i, 3, k);
            float *y0 = h + V * SV_CH(i, k, 0), *y1 = h + V * SV_CH(i, k, 1),
                  *y2 = h + V * SV_CH(i, k, 2), *y3 = h + V * SV_CH(i, k, 3);
            __m256 w1 = sv_bcast(w + 2 * i), w2 = sv_bcast(w + 2 * (ido + i)),
                   w3 = sv_bcast(w + 2 * (2 * ido + i));
            for (int64_t v = 0; v < 2 * V; v += 8) {
                __m256 t0 = _mm256_loadu_ps(x0 + v), t1 = _mm256_loadu_ps(x1 + v);
                __m256 t2 = _mm256_loadu_ps(x2 + v), t3 = _mm256_loadu_ps(x3 + v);
                __m256 a0 = _mm256_add_ps(t0, t2), a1 = _mm256_sub_ps(t0, t2);
                __m256 a2 = _mm256_add_ps(t1, t3), a3 = sv_rot(_mm256_sub_ps(t1, t3), nm);
                _mm256_storeu_ps(y0 + v, _mm256_add_ps(a0, a2));
                _mm256_storeu_ps(y1 + v, sv_cmul(_mm256_add_ps(a1, a3), w1));
                _mm256_storeu_ps(y2 + v, sv_cmul(_mm256_sub_ps(a0, a2), w2));
                _mm256_storeu_ps(y3 + v, sv_cmul(_mm256_sub_ps(a1, a3), w3));
            }
        }
}

#undef SV_CC
#undef SV_CH
#pragma GCC pop_options
