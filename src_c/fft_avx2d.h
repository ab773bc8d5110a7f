/* AVX2+FMA radix-2 and radix-4 Stockham passes for double complex, the float64 twin of
   fft_avx2.h (included by fft.c on x86 and chosen at run time). A __m256d holds two
   interleaved complex numbers; otherwise the layout, the twiddle tables (i == 0
   entries included: tw[(m - 1) * ido + i]) and the three pass forms are those of the
   float passes: along ido (ido even), the last radix-4 pass (ido == 1) two
   butterflies at a time through a 2x2 transpose of 128-bit halves, and V adjacent
   columns at once (V even). The twiddle products use FMA, so the last bit may differ
   from the scalar butterflies of fft_impl.h. */
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx2,fma")

/* a * w for two complex pairs */
static inline __m256d sd_cmul(__m256d a, __m256d w) {
    __m256d wr = _mm256_movedup_pd(w), wi = _mm256_permute_pd(w, 0xF);
    return _mm256_fmaddsub_pd(a, wr, _mm256_mul_pd(_mm256_permute_pd(a, 0x5), wi));
}

/* a * (s i): swap re/im, then negate the re lanes (s > 0) or the im lanes (s < 0) */
static inline __m256d sd_rot(__m256d a, __m256d negmask) {
    return _mm256_xor_pd(_mm256_permute_pd(a, 0x5), negmask);
}

static inline __m256d sd_negmask(int s) {
    return s > 0 ? _mm256_setr_pd(-0.0, 0.0, -0.0, 0.0) : _mm256_setr_pd(0.0, -0.0, 0.0, -0.0);
}

/* one complex broadcast to both pairs */
static inline __m256d sd_bcast(const double *w) {
    return _mm256_broadcast_pd((const __m128d *)w);
}

/* double offsets of CC(i, b, c) and CH(i, k, m) */
#define SD_CC(i, b, c) (2 * ((i) + ido * ((b) + cdim * (c))))
#define SD_CH(i, k, m) (2 * ((i) + ido * ((k) + l1 * (m))))

static void sd_pass2(int64_t ido, int64_t l1, const double *restrict cc, double *restrict ch,
                     const double *restrict tw) {
    const int64_t cdim = 2;
    for (int64_t k = 0; k < l1; k++)
        for (int64_t i = 0; i < ido; i += 2) {
            __m256d t0 = _mm256_loadu_pd(cc + SD_CC(i, 0, k));
            __m256d t1 = _mm256_loadu_pd(cc + SD_CC(i, 1, k));
            _mm256_storeu_pd(ch + SD_CH(i, k, 0), _mm256_add_pd(t0, t1));
            _mm256_storeu_pd(ch + SD_CH(i, k, 1),
                             sd_cmul(_mm256_sub_pd(t0, t1), _mm256_loadu_pd(tw + 2 * i)));
        }
}

static void sd_pass4(int64_t ido, int64_t l1, const double *restrict cc, double *restrict ch,
                     const double *restrict tw, int s) {
    const int64_t cdim = 4;
    const __m256d nm = sd_negmask(s);
    for (int64_t k = 0; k < l1; k++)
        for (int64_t i = 0; i < ido; i += 2) {
            __m256d t0 = _mm256_loadu_pd(cc + SD_CC(i, 0, k));
            __m256d t1 = _mm256_loadu_pd(cc + SD_CC(i, 1, k));
            __m256d t2 = _mm256_loadu_pd(cc + SD_CC(i, 2, k));
            __m256d t3 = _mm256_loadu_pd(cc + SD_CC(i, 3, k));
            __m256d a0 = _mm256_add_pd(t0, t2), a1 = _mm256_sub_pd(t0, t2);
            __m256d a2 = _mm256_add_pd(t1, t3), a3 = sd_rot(_mm256_sub_pd(t1, t3), nm);
            _mm256_storeu_pd(ch + SD_CH(i, k, 0), _mm256_add_pd(a0, a2));
            _mm256_storeu_pd(ch + SD_CH(i, k, 1),
                             sd_cmul(_mm256_add_pd(a1, a3), _mm256_loadu_pd(tw + 2 * i)));
            _mm256_storeu_pd(ch + SD_CH(i, k, 2),
                             sd_cmul(_mm256_sub_pd(a0, a2), _mm256_loadu_pd(tw + 2 * (ido + i))));
            _mm256_storeu_pd(ch + SD_CH(i, k, 3), sd_cmul(_mm256_sub_pd(a1, a3),
                                                          _mm256_loadu_pd(tw + 2 * (2 * ido + i))));
        }
}

/* radix 4 with ido == 1 (no twiddles): butterfly k reads cc[4k .. 4k+3] and writes
   ch[k + l1 m]; two butterflies per step through a 2x2 transpose of 128-bit halves */
static void sd_pass4_last(int64_t l1, const double *restrict cc, double *restrict ch, int s) {
    const __m256d nm = sd_negmask(s);
    for (int64_t k = 0; k < l1; k += 2) {
        __m256d v0 = _mm256_loadu_pd(cc + 8 * k), v1 = _mm256_loadu_pd(cc + 8 * k + 4);
        __m256d v2 = _mm256_loadu_pd(cc + 8 * k + 8), v3 = _mm256_loadu_pd(cc + 8 * k + 12);
        __m256d t0 = _mm256_permute2f128_pd(v0, v2, 0x20);
        __m256d t1 = _mm256_permute2f128_pd(v0, v2, 0x31);
        __m256d t2 = _mm256_permute2f128_pd(v1, v3, 0x20);
        __m256d t3 = _mm256_permute2f128_pd(v1, v3, 0x31);
        __m256d a0 = _mm256_add_pd(t0, t2), a1 = _mm256_sub_pd(t0, t2);
        __m256d a2 = _mm256_add_pd(t1, t3), a3 = sd_rot(_mm256_sub_pd(t1, t3), nm);
        _mm256_storeu_pd(ch + 2 * k, _mm256_add_pd(a0, a2));
        _mm256_storeu_pd(ch + 2 * (k + l1), _mm256_add_pd(a1, a3));
        _mm256_storeu_pd(ch + 2 * (k + 2 * l1), _mm256_sub_pd(a0, a2));
        _mm256_storeu_pd(ch + 2 * (k + 3 * l1), _mm256_sub_pd(a1, a3));
    }
}

/* one pass of a single transform; 0 when this pass has no vector form */
static int simdd_pass(int ip, int64_t ido, int64_t l1, const double complex *cc,
                      double complex *ch, const double complex *tw, int s) {
    if (!tw) return 0;
    const double *c = (const double *)cc, *w = (const double *)tw;
    double *h = (double *)ch;
    if (ido % 2 == 0) {
        if (ip == 4) sd_pass4(ido, l1, c, h, w, s);
        else if (ip == 2) sd_pass2(ido, l1, c, h, w);
        else return 0;
        return 1;
    }
    if (ido == 1 && ip == 4 && l1 % 2 == 0) {
        sd_pass4_last(l1, c, h, s);
        return 1;
    }
    return 0;
}

/* one pass over V columns at once: element e of the transform is cc[e * V .. e * V + V) */
static void simdd_multi(int ip, int64_t ido, int64_t l1, int64_t V, const double complex *cc,
                        double complex *ch, const double complex *tw, int s) {
    const double *c = (const double *)cc, *w = (const double *)tw;
    double *h = (double *)ch;
    const __m256d nm = sd_negmask(s);
    if (ip == 2) {
        const int64_t cdim = 2;
        for (int64_t k = 0; k < l1; k++)
            for (int64_t i = 0; i < ido; i++) {
                const double *x0 = c + V * SD_CC(i, 0, k), *x1 = c + V * SD_CC(i, 1, k);
                double *y0 = h + V * SD_CH(i, k, 0), *y1 = h + V * SD_CH(i, k, 1);
                __m256d w1 = sd_bcast(w + 2 * i);
                for (int64_t v = 0; v < 2 * V; v += 4) {
                    __m256d t0 = _mm256_loadu_pd(x0 + v), t1 = _mm256_loadu_pd(x1 + v);
                    _mm256_storeu_pd(y0 + v, _mm256_add_pd(t0, t1));
                    _mm256_storeu_pd(y1 + v, sd_cmul(_mm256_sub_pd(t0, t1), w1));
                }
            }
        return;
    }
    const int64_t cdim = 4;
    for (int64_t k = 0; k < l1; k++)
        for (int64_t i = 0; i < ido; i++) {
            const double *x0 = c + V * SD_CC(i, 0, k), *x1 = c + V * SD_CC(i, 1, k),
                         *x2 = c + V * SD_CC(i, 2, k), *x3 = c + V * SD_CC(i, 3, k);
            double *y0 = h + V * SD_CH(i, k, 0), *y1 = h + V * SD_CH(i, k, 1),
                   *y2 = h + V * SD_CH(i, k, 2), *y3 = h + V * SD_CH(i, k, 3);
            __m256d w1 = sd_bcast(w + 2 * i), w2 = sd_bcast(w + 2 * (ido + i)),
                    w3 = sd_bcast(w + 2 * (2 * ido + i));
            for (int64_t v = 0; v < 2 * V; v += 4) {
                __m256d t0 = _mm256_loadu_pd(x0 + v), t1 = _mm256_loadu_pd(x1 + v);
                __m256d t2 = _mm256_loadu_pd(x2 + v), t3 = _mm256_loadu_pd(x3 + v);
                __m256d a0 = _mm256_add_pd(t0, t2), a1 = _mm256_sub_pd(t0, t2);
                __m256d a2 = _mm256_add_pd(t1, t3), a3 = sd_rot(_mm256_sub_pd(t1, t3), nm);
                _mm256_storeu_pd(y0 + v, _mm256_add_pd(a0, a2));
                _mm256_storeu_pd(y1 + v, sd_cmul(_mm256_add_pd(a1, a3), w1));
                _mm256_storeu_pd(y2 + v, sd_cmul(_mm256_sub_pd(a0, a2), w2));
                _mm256_storeu_pd(y3 + v, sd_cmul(_mm256_sub_pd(a1, a3), w3));
            }
        }
}

#undef SD_CC
#undef SD_CH
#pragma GCC pop_options
