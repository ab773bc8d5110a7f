/* One precision of the FFT family: included by fft.c with
   T (float | double), CT (T complex), SFX (f | d) and MKC (CMPLXF | CMPLX) defined.

   c2c: a mixed-radix Stockham transform (autosort, so no bit reversal) whose passes
   are radix 4, 2, 3, 5 butterflies or a generic odd radix; a length with a prime
   factor above BLUE_MIN goes through Bluestein's chirp-z convolution on a fast
   length instead. r2c / c2r of even length run a complex transform of half the
   length plus one pre/post-processing sweep. Plans (factors and twiddles) are
   built once per length and kept. */

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define F(name) CAT(name, SFX)

typedef struct F(plan_s) F(plan);
struct F(plan_s) {
    int64_t n;
    int nfct;
    int fct[64];
    CT *tw[64];          /* per pass: (ip-1) * (ido-1) twiddles e^{+2 pi i j l1 i / n} */
    CT *twc[64];         /* the same conjugated (forward transforms) */
    CT *roots;           /* generic radices: e^{+2 pi i k / ip}, k < ip, per pass */
    CT *groots[64];
    CT *grootsc[64];
    CT *twv[64];         /* vector passes (radix 2, 4): (ip-1) * ido twiddles, i == 0 included */
    CT *twvc[64];
    CT *rw;              /* e^{+2 pi i k / 2n}, k <= n: real transforms of length 2n */
    int allv;            /* every pass has full vector tables (multi-column transforms) */
    /* Bluestein: the chirp, the transformed kernel (/m) and the fast-length plan */
    int64_t m;
    CT *chirp;           /* e^{+pi i k^2 / n} */
    CT *bk_fwd;          /* FFT_m(conj chirp padded) / m, for sign -1 */
    CT *bk_bwd;          /* FFT_m(chirp padded) / m, for sign +1 */
    F(plan) *sub;
    F(plan) *next;       /* the cache's list */
};

static inline CT F(cmul)(CT a, CT b) {
    T ar = CREAL(a), ai = CIMAG(a), br = CREAL(b), bi = CIMAG(b);
    return MKC(ar * br - ai * bi, ar * bi + ai * br);
}
/* a * CONJ(b) */
static inline CT F(cmulc)(CT a, CT b) {
    T ar = CREAL(a), ai = CIMAG(a), br = CREAL(b), bi = CIMAG(b);
    return MKC(ar * br + ai * bi, ai * br - ar * bi);
}
/* a * (s i), s = +-1 */
static inline CT F(rot)(CT a, int s) {
    return s > 0 ? MKC(-CIMAG(a), CREAL(a)) : MKC(CIMAG(a), -CREAL(a));
}

#define CC(a, b, c) cc[(a) + ido * ((b) + cdim * (c))]
#define CH(a, b, c) ch[(a) + ido * ((b) + l1 * (c))]
/* out value m of butterfly (k, i): twiddled unless i == 0 (tw holds the twiddles of
   the transform's sign) */
#define TWOUT(m, val)                                                                 \
    do {                                                                              \
        CT v_ = (val);                                                                \
        CH(i, k, m) = i == 0 ? v_ : F(cmul)(v_, tw[((m) - 1) * (ido - 1) + i - 1]);   \
    } while (0)

static inline __attribute__((always_inline)) void F(pass2)(int64_t ido, int64_t l1, const CT *restrict cc, CT *restrict ch,
                     const CT *restrict tw, int s) {
    const int64_t cdim = 2;
    for (int64_t k = 0; k < l1; k++)
        for (int64_t i = 0; i < ido; i++) {
            CT t0 = CC(i, 0, k), t1 = CC(i, 1, k);
            CH(i, k, 0) = t0 + t1;
            TWOUT(1, t0 - t1);
        }
}

static inline __attribute__((always_inline)) void F(pass3)(int64_t ido, int64_t l1, const CT *restrict cc, CT *restrict ch,
                     const CT *restrict tw, int s) {
    const int64_t cdim = 3;
    const T h = (T)0.86602540378443864676;
    for (int64_t k = 0; k < l1; k++)
        for (int64_t i = 0; i < ido; i++) {
            CT t0 = CC(i, 0, k), t1 = CC(i, 1, k), t2 = CC(i, 2, k);
            CT ta = t1 + t2, tb = F(rot)(t1 - t2, s) * h;
            CT c = t0 - ta * (T)0.5;
            CH(i, k, 0) = t0 + ta;
            TWOUT(1, c + tb);
            TWOUT(2, c - tb);
        }
}

static inline __attribute__((always_inline)) void F(pass4)(int64_t ido, int64_t l1, const CT *restrict cc, CT *restrict ch,
                     const CT *restrict tw, int s) {
    const int64_t cdim = 4;
    for (int64_t k = 0; k < l1; k++)
        for (int64_t i = 0; i < ido; i++) {
            CT t0 = CC(i, 0, k), t1 = CC(i, 1, k), t2 = CC(i, 2, k), t3 = CC(i, 3, k);
            CT a0 = t0 + t2, a1 = t0 - t2, a2 = t1 + t3, a3 = F(rot)(t1 - t3, s);
            CH(i, k, 0) = a0 + a2;
            TWOUT(1, a1 + a3);
            TWOUT(2, a0 - a2);
            TWOUT(3, a1 - a3);
        }
}

static inline __attribute__((always_inline)) void F(pass5)(int64_t ido, int64_t l1, const CT *restrict cc, CT *restrict ch,
                     const CT *restrict tw, int s) {
    const int64_t cdim = 5;
    const T c1 = (T)0.30901699437494742410, c2 = (T)-0.80901699437494742410,
            s1 = (T)0.95105651629515357212, s2 = (T)0.58778525229247312917;
    for (int64_t k = 0; k < l1; k++)
        for (int64_t i = 0; i < ido; i++) {
            CT t0 = CC(i, 0, k), t1 = CC(i, 1, k), t2 = CC(i, 2, k), t3 = CC(i, 3, k),
               t4 = CC(i, 4, k);
            CT a1 = t1 + t4, b1 = t1 - t4, a2 = t2 + t3, b2 = t2 - t3;
            CT p1 = t0 + c1 * a1 + c2 * a2, q1 = F(rot)(s1 * b1 + s2 * b2, s);
            CT p2 = t0 + c2 * a1 + c1 * a2, q2 = F(rot)(s2 * b1 - s1 * b2, s);
            CH(i, k, 0) = t0 + a1 + a2;
            TWOUT(1, p1 + q1);
            TWOUT(2, p2 + q2);
            TWOUT(3, p2 - q2);
            TWOUT(4, p1 - q1);
        }
}

/* any radix: a direct DFT of size ip per butterfly (ip is a small odd prime here) */
static void F(passg)(int64_t ido, int64_t l1, int64_t ip, const CT *restrict cc,
                     CT *restrict ch, const CT *restrict tw, const CT *restrict roots, int s) {
    const int64_t cdim = ip;
    CT t[128];
    for (int64_t k = 0; k < l1; k++)
        for (int64_t i = 0; i < ido; i++) {
            for (int64_t q = 0; q < ip; q++) t[q] = CC(i, q, k);
            for (int64_t m = 0; m < ip; m++) {
                CT acc = t[0];
                int64_t e = 0;
                for (int64_t q = 1; q < ip; q++) {
                    e += m;
                    if (e >= ip) e -= ip;
                    acc += F(cmul)(t[q], roots[e]);
                }
                if (m == 0) CH(i, k, 0) = acc;
                else TWOUT(m, acc);
            }
        }
}
#undef CC
#undef CH
#undef TWOUT

static void F(twiddles)(CT *dst, int64_t count, int64_t step, int64_t n) {
    /* dst[j] = e^{+2 pi i (j * step mod n) / n}, computed in double */
    for (int64_t j = 0; j < count; j++) {
        int64_t e = (int64_t)(((__int128)j * step) % n);
        double a = 2.0 * 3.14159265358979323846 * (double)e / (double)n;
        dst[j] = MKC((T)cos(a), (T)sin(a));
    }
}

static F(plan) *F(plan_build)(int64_t n);
static void F(exec)(const F(plan) *p, CT *buf, CT *scratch, int s);

static void F(plan_factor)(F(plan) *p) {
    int64_t n = p->n;
    p->nfct = 0;
    /* a lone 2 goes first, so the last radix-4 pass has ido == 1 */
    if (__builtin_ctzll((unsigned long long)n) % 2) { p->fct[p->nfct++] = 2; n /= 2; }
    while (n % 4 == 0) { p->fct[p->nfct++] = 4; n /= 4; }
    for (int64_t d = 3; d * d <= n; d += 2)
        while (n % d == 0) { p->fct[p->nfct++] = (int)d; n /= d; }
    if (n > 1) p->fct[p->nfct++] = (int)(n > 0x7fffffff ? 0x7fffffff : n);
}

static int64_t F(largest_factor)(int64_t n) {
    int64_t big = 1;
    while (n % 2 == 0) { big = 2; n /= 2; }
    for (int64_t d = 3; d * d <= n; d += 2)
        while (n % d == 0) { big = d; n /= d; }
    return n > 1 ? n : big;
}

static int64_t F(good_size)(int64_t n) {
    /* the smallest 2^a 3^b 5^c >= n */
    int64_t best = 1;
    while (best < n) best *= 2;
    for (int64_t f5 = 1; f5 < best; f5 *= 5)
        for (int64_t f35 = f5; f35 < best; f35 *= 3) {
            int64_t x = f35;
            while (x < n) x *= 2;
            if (x < best) best = x;
        }
    return best;
}

static F(plan) *F(plan_build)(int64_t n) {
    F(plan) *p = (F(plan) *)calloc(1, sizeof(F(plan)));
    if (!p) return NULL;
    p->n = n;
    if (n > BLUE_MIN && F(largest_factor)(n) > BLUE_MIN) {
        int64_t m = F(good_size)(2 * n - 1);
        p->m = m;
        p->sub = F(plan_build)(m);
        p->chirp = (CT *)malloc(sizeof(CT) * n);
        p->bk_fwd = (CT *)calloc(m, sizeof(CT));
        p->bk_bwd = (CT *)calloc(m, sizeof(CT));
        CT *tmp = (CT *)malloc(sizeof(CT) * m);
        if (!p->sub || !p->chirp || !p->bk_fwd || !p->bk_bwd || !tmp) { free(tmp); return NULL; }
        for (int64_t k = 0; k < n; k++) {
            /* k^2 mod 2n keeps the angle exact for large k */
            int64_t e = (int64_t)(((__int128)k * k) % (2 * n));
            double a = 3.14159265358979323846 * (double)e / (double)n;
            p->chirp[k] = MKC((T)cos(a), (T)sin(a));
        }
        for (int dir = 0; dir < 2; dir++) {
            CT *bk = dir == 0 ? p->bk_fwd : p->bk_bwd;
            /* forward (sign -1) convolves with e^{+pi i l^2/n} = chirp; backward with conj */
            for (int64_t l = 0; l < n; l++) {
                CT c = dir == 0 ? p->chirp[l] : CONJ(p->chirp[l]);
                bk[l] = c;
                if (l) bk[m - l] = c;
            }
            F(exec)(p->sub, bk, tmp, -1);
            for (int64_t j = 0; j < m; j++) bk[j] *= (T)1 / (T)m;
        }
        free(tmp);
        return p;
    }
    F(plan_factor)(p);
    int64_t l1 = 1;
    for (int k = 0; k < p->nfct; k++) {
        int64_t ip = p->fct[k], ido = n / (l1 * ip);
        if (ip > 128) return NULL;   /* large primes always go through Bluestein */
        int64_t ntw = (ip - 1) * (ido - 1) + 1;
        p->tw[k] = (CT *)malloc(sizeof(CT) * ntw);
        p->twc[k] = (CT *)malloc(sizeof(CT) * ntw);
        if (!p->tw[k] || !p->twc[k]) return NULL;
        for (int64_t j = 1; j < ip; j++)
            for (int64_t i = 1; i < ido; i++) {
                int64_t e = (int64_t)(((__int128)j * l1 * i) % n);
                double a = 2.0 * 3.14159265358979323846 * (double)e / (double)n;
                p->tw[k][(j - 1) * (ido - 1) + i - 1] = MKC((T)cos(a), (T)sin(a));
                p->twc[k][(j - 1) * (ido - 1) + i - 1] = MKC((T)cos(a), -(T)sin(a));
            }
#ifdef FFT_SIMD
        if (F(use_simd)() && (ip == 2 || ip == 4)) {
            p->twv[k] = (CT *)malloc(sizeof(CT) * (ip - 1) * ido);
            p->twvc[k] = (CT *)malloc(sizeof(CT) * (ip - 1) * ido);
            if (!p->twv[k] || !p->twvc[k]) return NULL;
            for (int64_t j = 1; j < ip; j++)
                for (int64_t i = 0; i < ido; i++) {
                    int64_t e = (int64_t)(((__int128)j * l1 * i) % n);
                    double a = 2.0 * 3.14159265358979323846 * (double)e / (double)n;
                    p->twv[k][(j - 1) * ido + i] = MKC((T)cos(a), (T)sin(a));
                    p->twvc[k][(j - 1) * ido + i] = MKC((T)cos(a), -(T)sin(a));
                }
        }
#endif
        if (ip > 5) {
            p->groots[k] = (CT *)malloc(sizeof(CT) * ip);
            p->grootsc[k] = (CT *)malloc(sizeof(CT) * ip);
            if (!p->groots[k] || !p->grootsc[k]) return NULL;
            F(twiddles)(p->groots[k], ip, 1, ip);
            for (int64_t q = 0; q < ip; q++) p->grootsc[k][q] = CONJ(p->groots[k][q]);
        }
        l1 *= ip;
    }
    p->allv = p->nfct > 0;
    for (int k = 0; k < p->nfct; k++) p->allv &= p->twv[k] != NULL;
    return p;
}

/* In-place transform of buf (length p->n) with scratch of the same length.
   s = -1: forward (e^{-2 pi i jk/n}); s = +1: backward. Unnormalized. */
static void F(exec)(const F(plan) *p, CT *buf, CT *scratch, int s) {
    int64_t n = p->n;
    if (n <= 1) return;
    if (p->sub) {
        int64_t m = p->m;
        CT *a = scratch;                     /* m long: caller gives m + n of scratch */
        CT *sc = scratch + m;
        for (int64_t k = 0; k < n; k++)
            a[k] = s < 0 ? F(cmulc)(buf[k], p->chirp[k]) : F(cmul)(buf[k], p->chirp[k]);
        memset(a + n, 0, sizeof(CT) * (m - n));
        F(exec)(p->sub, a, sc, -1);
        const CT *bk = s < 0 ? p->bk_fwd : p->bk_bwd;
        for (int64_t j = 0; j < m; j++) a[j] = F(cmul)(a[j], bk[j]);
        F(exec)(p->sub, a, sc, +1);
        for (int64_t k = 0; k < n; k++)
            buf[k] = s < 0 ? F(cmulc)(a[k], p->chirp[k]) : F(cmul)(a[k], p->chirp[k]);
        return;
    }
    CT *p1 = buf, *p2 = scratch;
    int64_t l1 = 1;
    for (int k = 0; k < p->nfct; k++) {
        int64_t ip = p->fct[k], ido = n / (l1 * ip);
        const CT *tw = s > 0 ? p->tw[k] : p->twc[k];
#ifdef FFT_SIMD
        if (F(simd_pass)(ip, ido, l1, p1, p2, s > 0 ? p->twv[k] : p->twvc[k], s)) {
            CT *t = p1; p1 = p2; p2 = t;
            l1 *= ip;
            continue;
        }
#endif
        /* the sign as a literal: the inlined butterflies lose their sign branches */
        switch (ip) {
        case 4: if (s > 0) F(pass4)(ido, l1, p1, p2, tw, 1);
                else F(pass4)(ido, l1, p1, p2, tw, -1);
                break;
        case 2: F(pass2)(ido, l1, p1, p2, tw, s); break;
        case 3: if (s > 0) F(pass3)(ido, l1, p1, p2, tw, 1);
                else F(pass3)(ido, l1, p1, p2, tw, -1);
                break;
        case 5: if (s > 0) F(pass5)(ido, l1, p1, p2, tw, 1);
                else F(pass5)(ido, l1, p1, p2, tw, -1);
                break;
        default: F(passg)(ido, l1, ip, p1, p2, tw, s > 0 ? p->groots[k] : p->grootsc[k], s);
                 break;
        }
        CT *t = p1; p1 = p2; p2 = t;
        l1 *= ip;
    }
    if (p1 != buf) memcpy(buf, p1, sizeof(CT) * n);
}

#ifdef FFT_SIMD
/* V adjacent columns at once (p->allv): buf holds element e of column v at e * V + v;
   returns the buffer (buf or scratch, each n * V long) that holds the result */
static CT *F(exec_multi)(const F(plan) *p, CT *buf, CT *scratch, int64_t V, int s) {
    CT *p1 = buf, *p2 = scratch;
    int64_t l1 = 1, n = p->n;
    for (int k = 0; k < p->nfct; k++) {
        int64_t ip = p->fct[k], ido = n / (l1 * ip);
        F(simd_multi)((int)ip, ido, l1, V, p1, p2, s > 0 ? p->twv[k] : p->twvc[k], s);
        CT *t = p1; p1 = p2; p2 = t;
        l1 *= ip;
    }
    return p1;
}
#endif

/* scratch a transform of length n needs (in CT units) */
static int64_t F(scratch_len)(const F(plan) *p) {
    return p->sub ? p->m + p->m + F(scratch_len)(p->sub) : p->n;
}

static F(plan) *F(cache) = NULL;

static const F(plan) *F(get_plan)(int64_t n) {
    F(plan) *p;
    em_fft_lock();
    for (p = F(cache); p; p = p->next)
        if (p->n == n) break;
    if (!p) {
        p = F(plan_build)(n);
        if (p) { p->next = F(cache); F(cache) = p; }
    }
    em_fft_unlock();
    return p;
}

/* the post/pre-processing twiddles of the real transforms of length 2 p->n */
static const CT *F(real_twiddles)(const F(plan) *cp) {
    F(plan) *p = (F(plan) *)cp;
    em_fft_lock();
    if (!p->rw) {
        CT *w = (CT *)malloc(sizeof(CT) * (p->n + 1));
        if (w) F(twiddles)(w, p->n + 1, 1, 2 * p->n);
        p->rw = w;
    }
    em_fft_unlock();
    return p->rw;
}

/* c2c over `howmany` rows: row r of the input starts at in + r * idist (complex
   elements) with element stride istride; the same for the output. */
/* A thread's scratch for single transforms, kept between calls up to SCRATCH_KEEP
   elements: a fresh large buffer per call costs more in page faults than the passes */
#ifndef SCRATCH_KEEP
#define SCRATCH_KEEP ((int64_t)1 << 20)
#endif
static __thread CT *F(kept) = NULL;
static __thread int64_t F(kept_len) = 0;

static CT *F(scratch_get)(int64_t len) {
    if (len > SCRATCH_KEEP) return (CT *)malloc(sizeof(CT) * len);
    if (F(kept_len) < len) {
        free(F(kept));
        F(kept) = (CT *)malloc(sizeof(CT) * len);
        F(kept_len) = F(kept) ? len : 0;
    }
    return F(kept);
}

static void F(scratch_put)(CT *buf, int64_t len) {
    if (len > SCRATCH_KEEP) free(buf);
}

static int F(c2c)(const CT *in, int64_t istride, int64_t idist, CT *out, int64_t ostride,
                  int64_t odist, int64_t n, int64_t howmany, int s, T scale, int nthreads) {
    const F(plan) *p = F(get_plan)(n);
    if (!p) return 1;
    int64_t sl = F(scratch_len)(p);
    int fail = 0;
    if (howmany == 1 && ostride == 1 && (istride == 1 || in + n <= out || out + n <= in)) {
        /* one contiguous output: transform in place there */
        CT *scr = F(scratch_get)(sl);
        if (!scr) return 1;
        if (in != out)
            for (int64_t j = 0; j < n; j++) out[j] = in[j * istride];
        F(exec)(p, out, scr, s);
        if (scale != 1) for (int64_t j = 0; j < n; j++) out[j] *= scale;
        F(scratch_put)(scr, sl);
        return 0;
    }
    if (idist == 1 && odist == 1 && howmany > 1 && (istride > 1 || ostride > 1)) {
        /* rows are adjacent columns (a transform over a non-last dim): move FFT_BLOCK of
           them at a time, so each gather/scatter touches whole cache lines */
        int64_t nblk = (howmany + FFT_BLOCK - 1) / FFT_BLOCK;
#ifdef FFT_SIMD
        if (p->allv && n > 1 && howmany % 4 == 0) {
            /* whole blocks of columns through the vector passes, no transposes */
            #pragma omp parallel num_threads(nthreads) if (nthreads > 1 && nblk > 1)
            {
                CT *buf = (CT *)malloc(sizeof(CT) * 2 * FFT_BLOCK * n);
                if (!buf) {
                    #pragma omp atomic write
                    fail = 1;
                } else {
                    #pragma omp for schedule(static)
                    for (int64_t b = 0; b < nblk; b++) {
                        int64_t r0 = b * FFT_BLOCK;
                        int64_t nv = howmany - r0 < FFT_BLOCK ? howmany - r0 : FFT_BLOCK;
                        for (int64_t j = 0; j < n; j++)
                            memcpy(buf + j * nv, in + r0 + j * istride, sizeof(CT) * nv);
                        CT *res = F(exec_multi)(p, buf, buf + FFT_BLOCK * n, nv, s);
                        for (int64_t j = 0; j < n; j++) {
                            CT *y = out + r0 + j * ostride;
                            const CT *x = res + j * nv;
                            if (scale != 1) for (int64_t v = 0; v < nv; v++) y[v] = x[v] * scale;
                            else memcpy(y, x, sizeof(CT) * nv);
                        }
                    }
                    free(buf);
                }
            }
            return fail;
        }
#endif
        #pragma omp parallel num_threads(nthreads) if (nthreads > 1 && nblk > 1)
        {
            CT *buf = (CT *)malloc(sizeof(CT) * (FFT_BLOCK * n + sl));
            if (!buf) {
                #pragma omp atomic write
                fail = 1;
            } else {
                #pragma omp for schedule(static)
                for (int64_t b = 0; b < nblk; b++) {
                    int64_t r0 = b * FFT_BLOCK;
                    int64_t nv = howmany - r0 < FFT_BLOCK ? howmany - r0 : FFT_BLOCK;
                    for (int64_t j = 0; j < n; j++)
                        for (int64_t v = 0; v < nv; v++) buf[v * n + j] = in[r0 + v + j * istride];
                    for (int64_t v = 0; v < nv; v++) F(exec)(p, buf + v * n, buf + FFT_BLOCK * n, s);
                    for (int64_t j = 0; j < n; j++)
                        for (int64_t v = 0; v < nv; v++)
                            out[r0 + v + j * ostride] = buf[v * n + j] * scale;
                }
                free(buf);
            }
        }
        return fail;
    }
    #pragma omp parallel num_threads(nthreads) if (nthreads > 1 && howmany > 1)
    {
        CT *buf = (CT *)malloc(sizeof(CT) * (n + sl));
        if (!buf) {
            #pragma omp atomic write
            fail = 1;
        } else {
            #pragma omp for schedule(static)
            for (int64_t r = 0; r < howmany; r++) {
                const CT *x = in + r * idist;
                for (int64_t j = 0; j < n; j++) buf[j] = x[j * istride];
                F(exec)(p, buf, buf + n, s);
                CT *y = out + r * odist;
                if (scale != 1) for (int64_t j = 0; j < n; j++) y[j * ostride] = buf[j] * scale;
                else for (int64_t j = 0; j < n; j++) y[j * ostride] = buf[j];
            }
            free(buf);
        }
    }
    return fail;
}

/* r2c: n reals per row -> n/2 + 1 complex (forward transform) */
static int F(r2c)(const T *in, int64_t istride, int64_t idist, CT *out, int64_t ostride,
                  int64_t odist, int64_t n, int64_t howmany, T scale, int nthreads) {
    int even = n % 2 == 0 && n >= 2;
    int64_t h = even ? n / 2 : n, nh = n / 2 + 1;
    const F(plan) *p = F(get_plan)(h);
    if (!p) return 1;
    const CT *w = NULL;
    if (even && !(w = F(real_twiddles)(p))) return 1;
    int64_t sl = F(scratch_len)(p);
    int fail = 0;
    #pragma omp parallel num_threads(nthreads) if (nthreads > 1 && howmany > 1)
    {
        CT *buf = (CT *)malloc(sizeof(CT) * (h + sl));
        if (!buf) {
            #pragma omp atomic write
            fail = 1;
        } else {
            #pragma omp for schedule(static)
            for (int64_t r = 0; r < howmany; r++) {
                const T *x = in + r * idist;
                CT *y = out + r * odist;
                if (!even) {
                    for (int64_t j = 0; j < n; j++) buf[j] = MKC(x[j * istride], 0);
                    F(exec)(p, buf, buf + h, -1);
                    for (int64_t k = 0; k < nh; k++) y[k * ostride] = buf[k] * scale;
                    continue;
                }
                /* z_j = x_2j + i x_2j+1; X_k = E_k + w^-k O_k from Z = FFT_h(z) */
                for (int64_t j = 0; j < h; j++)
                    buf[j] = MKC(x[2 * j * istride], x[(2 * j + 1) * istride]);
                F(exec)(p, buf, buf + h, -1);
                T z0r = CREAL(buf[0]), z0i = CIMAG(buf[0]);
                y[0] = MKC((z0r + z0i) * scale, 0);
                y[h * ostride] = MKC((z0r - z0i) * scale, 0);
                for (int64_t k = 1; k < h; k++) {
                    CT a = buf[k], b = CONJ(buf[h - k]);
                    CT e = (a + b) * (T)0.5, o = F(rot)(a - b, -1) * (T)0.5;
                    y[k * ostride] = (e + F(cmulc)(o, w[k])) * scale;
                }
            }
            free(buf);
        }
    }
    return fail;
}

/* c2r: n/2 + 1 complex per row (Hermitian half) -> n reals (backward transform);
   the imaginary parts of the zero and Nyquist terms are ignored, as pocketfft's */
static int F(c2r)(const CT *in, int64_t istride, int64_t idist, T *out, int64_t ostride,
                  int64_t odist, int64_t n, int64_t howmany, T scale, int nthreads) {
    int even = n % 2 == 0 && n >= 2;
    int64_t h = even ? n / 2 : n, nh = n / 2 + 1;
    const F(plan) *p = F(get_plan)(h);
    if (!p) return 1;
    const CT *w = NULL;
    if (even && !(w = F(real_twiddles)(p))) return 1;
    int64_t sl = F(scratch_len)(p);
    int fail = 0;
    #pragma omp parallel num_threads(nthreads) if (nthreads > 1 && howmany > 1)
    {
        CT *buf = (CT *)malloc(sizeof(CT) * (h + sl));
        if (!buf) {
            #pragma omp atomic write
            fail = 1;
        } else {
            #pragma omp for schedule(static)
            for (int64_t r = 0; r < howmany; r++) {
                const CT *x = in + r * idist;
                T *y = out + r * odist;
                if (!even) {
                    buf[0] = MKC(CREAL(x[0]), 0);
                    for (int64_t k = 1; k < nh; k++) {
                        buf[k] = x[k * istride];
                        buf[n - k] = CONJ(x[k * istride]);
                    }
                    F(exec)(p, buf, buf + h, +1);
                    for (int64_t j = 0; j < n; j++) y[j * ostride] = CREAL(buf[j]) * scale;
                    continue;
                }
                CT X0 = MKC(CREAL(x[0]), 0), XN = MKC(CREAL(x[h * istride]), 0);
                for (int64_t k = 0; k < h; k++) {
                    CT a = k == 0 ? X0 : x[k * istride];
                    CT b = CONJ(k == 0 ? XN : x[(h - k) * istride]);
                    CT e = a + b, o = F(cmul)(a - b, w[k]);
                    buf[k] = e + F(rot)(o, +1);
                }
                F(exec)(p, buf, buf + h, +1);
                for (int64_t j = 0; j < h; j++) {
                    y[2 * j * ostride] = CREAL(buf[j]) * scale;
                    y[(2 * j + 1) * ostride] = CIMAG(buf[j]) * scale;
                }
            }
            free(buf);
        }
    }
    return fail;
}

#undef F
