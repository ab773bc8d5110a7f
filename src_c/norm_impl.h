/* layer_norm (and rms_norm: rms = 1, no centering) forward and backward, written once and compiled per ISA by norm.c
   (NSFX() names the copy).  Row sums use NM_ACC partial sums combined in a
   fixed tree, so the loops vectorise and never depend on the thread count. */
#define NM_ACC 16
#define NM_RB 16      /* rows per block of the weight/bias gradient partials */

#define DEF_LAYER_NORM(S, T, SQRT)                                                        \
/* NM_ACC lanes as vectors of NM_VBYTES bytes (GCC/Clang vector extensions): lane j   \
   takes elements i + j, and the lanes are combined in a fixed tree; spelled out, the \
   lane sums never become a serial chain */                                          \
typedef T NSFX(v_##S) __attribute__((vector_size(NM_VBYTES)));                           \
enum { NSFX(VL_##S) = (int)(NM_VBYTES / sizeof(T)), NSFX(NV_##S) = NM_ACC / NSFX(VL_##S) }; \
static inline NSFX(v_##S) NSFX(ld_##S)(const T *p) {                                     \
    NSFX(v_##S) v;                                                                       \
    memcpy(&v, p, sizeof v);                                                             \
    return v;                                                                            \
}                                                                                        \
static inline void NSFX(st_##S)(T *p, NSFX(v_##S) v) { memcpy(p, &v, sizeof v); }        \
/* the NM_ACC lanes in s (after their tail elements were added) combined */             \
static inline T NSFX(fold_##S)(T *l) {                                                   \
    for (int w = NM_ACC / 2; w > 0; w /= 2)                                              \
        for (int j = 0; j < w; j++) l[j] += l[j + w];                                    \
    return l[0];                                                                         \
}                                                                                        \
static T NSFX(sum_##S)(const T *x, int64_t n) {                                          \
    NSFX(v_##S) s[NSFX(NV_##S)];                                                         \
    for (int q = 0; q < NSFX(NV_##S); q++) s[q] = (NSFX(v_##S)){0};                      \
    int64_t i = 0;                                                                       \
    for (; i + NM_ACC <= n; i += NM_ACC)                                                 \
        for (int q = 0; q < NSFX(NV_##S); q++) s[q] += NSFX(ld_##S)(x + i + q * NSFX(VL_##S)); \
    T l[NM_ACC];                                                                         \
    memcpy(l, s, sizeof l);                                                              \
    for (int j = 0; i < n; i++, j++) l[j] += x[i];                                       \
    return NSFX(fold_##S)(l);                                                            \
}                                                                                        \
static T NSFX(sqdev_##S)(const T *x, int64_t n, T m) {                                   \
    NSFX(v_##S) s[NSFX(NV_##S)];                                                         \
    const NSFX(v_##S) mv = (NSFX(v_##S)){0} + m;                                         \
    for (int q = 0; q < NSFX(NV_##S); q++) s[q] = (NSFX(v_##S)){0};                      \
    int64_t i = 0;                                                                       \
    for (; i + NM_ACC <= n; i += NM_ACC)                                                 \
        for (int q = 0; q < NSFX(NV_##S); q++) {                                         \
            const NSFX(v_##S) d = NSFX(ld_##S)(x + i + q * NSFX(VL_##S)) - mv;           \
            s[q] += d * d;                                                               \
        }                                                                                \
    T l[NM_ACC];                                                                         \
    memcpy(l, s, sizeof l);                                                              \
    for (int j = 0; i < n; i++, j++) { T d = x[i] - m; l[j] += d * d; }                  \
    return NSFX(fold_##S)(l);                                                            \
}                                                                                        \
static void NSFX(ln_fwd_##S)(const T *x, const T *w, const T *b, int64_t M, int64_t N,  \
                             T eps, T *y, T *mean, T *rstd, int rms, int nt) {           \
    _Pragma("omp parallel for num_threads(nt) schedule(static) if(nt > 1)")               \
    for (int64_t r = 0; r < M; r++) {                                                    \
        const T *xr = x + r * N; T *yr = y + r * N;                                      \
        T m = rms ? (T)0 : NSFX(sum_##S)(xr, N) / (T)N;                                  \
        T v = NSFX(sqdev_##S)(xr, N, m) / (T)N;                                          \
        T rs = (T)1 / SQRT(v + eps);                                                     \
        mean[r] = m; rstd[r] = rs;                                                       \
        if (w && b) for (int64_t i = 0; i < N; i++) yr[i] = (xr[i] - m) * rs * w[i] + b[i]; \
        else if (w) for (int64_t i = 0; i < N; i++) yr[i] = (xr[i] - m) * rs * w[i];     \
        else if (b) for (int64_t i = 0; i < N; i++) yr[i] = (xr[i] - m) * rs + b[i];     \
        else for (int64_t i = 0; i < N; i++) yr[i] = (xr[i] - m) * rs;                   \
    }                                                                                    \
}                                                                                        \
/* one block of NM_RB rows: dx rows, and this block's dw/db partial sums (row order).    \
   One pass per row forms xhat, g = dy * w, the partials and the lane sums of g and   \
   g * xhat; a second writes dx. */                                                    \
static void NSFX(ln_bwd_blk_##S)(const T *dy, const T *x, const T *mean, const T *rstd,  \
                                 const T *w, int64_t r0, int64_t r1, int64_t N, T *dx,   \
                                 T *pw, T *pb, T *tmp, int rms) {                        \
    enum { VL = NSFX(VL_##S), NV = NSFX(NV_##S) };                                       \
    for (int64_t r = r0; r < r1; r++) {                                                  \
        const T *xr = x + r * N, *gr = dy + r * N;                                       \
        const T m = mean[r], rs = rstd[r];                                               \
        const NSFX(v_##S) mv = (NSFX(v_##S)){0} + m, rv = (NSFX(v_##S)){0} + rs;         \
        T *xh = tmp, *g = tmp + N;                                                       \
        NSFX(v_##S) sa[NV], sc[NV];                                                      \
        for (int q = 0; q < NV; q++) sa[q] = sc[q] = (NSFX(v_##S)){0};                   \
        int64_t i = 0;                                                                   \
        for (; i + NM_ACC <= N; i += NM_ACC)                                             \
            for (int q = 0; q < NV; q++) {                                               \
                const int64_t o = i + q * VL;                                            \
                const NSFX(v_##S) h = (NSFX(ld_##S)(xr + o) - mv) * rv, gv = NSFX(ld_##S)(gr + o); \
                if (pw) NSFX(st_##S)(pw + o, NSFX(ld_##S)(pw + o) + gv * h);             \
                if (pb) NSFX(st_##S)(pb + o, NSFX(ld_##S)(pb + o) + gv);                 \
                const NSFX(v_##S) g2 = w ? gv * NSFX(ld_##S)(w + o) : gv;                \
                NSFX(st_##S)(xh + o, h);                                                 \
                NSFX(st_##S)(g + o, g2);                                                 \
                sa[q] += g2;                                                             \
                sc[q] += g2 * h;                                                         \
            }                                                                            \
        T la[NM_ACC], lc[NM_ACC];                                                        \
        memcpy(la, sa, sizeof la);                                                       \
        memcpy(lc, sc, sizeof lc);                                                       \
        for (int j = 0; i < N; i++, j++) {                                               \
            const T h = (xr[i] - m) * rs, gv = gr[i];                                    \
            if (pw) pw[i] += gv * h;                                                     \
            if (pb) pb[i] += gv;                                                         \
            const T g2 = w ? gv * w[i] : gv;                                             \
            xh[i] = h;                                                                   \
            g[i] = g2;                                                                   \
            la[j] += g2;                                                                 \
            lc[j] += g2 * h;                                                             \
        }                                                                                \
        if (!dx) continue;                                                               \
        const T a = rms ? (T)0 : NSFX(fold_##S)(la) / (T)N;                              \
        const T c = NSFX(fold_##S)(lc) / (T)N;                                           \
        T *dr = dx + r * N;                                                              \
        for (int64_t k = 0; k < N; k++) dr[k] = rs * ((g[k] - a) - xh[k] * c);           \
    }                                                                                    \
}                                                                                        \
static int NSFX(ln_bwd_##S)(const T *dy, const T *x, const T *mean, const T *rstd,       \
                            const T *w, int64_t M, int64_t N, T *dx, T *dw, T *db, int rms, \
                            int nt) {                                                    \
    int64_t nb = (M + NM_RB - 1) / NM_RB;                                                \
    T *part = (dw || db) ? (T *)calloc((size_t)(nb * 2 * N), sizeof(T)) : NULL;          \
    if ((dw || db) && nb > 0 && !part) return -2;                                        \
    int fail = 0;                                                                        \
    _Pragma("omp parallel num_threads(nt) if(nt > 1)")                                    \
    {                                                                                    \
        T *tmp = (T *)malloc((size_t)(3 * N + 1) * sizeof(T));                           \
        if (!tmp) { _Pragma("omp atomic write") fail = 1; }                              \
        else {                                                                           \
            _Pragma("omp for schedule(static)")                                          \
            for (int64_t k = 0; k < nb; k++) {                                           \
                int64_t r0 = k * NM_RB, r1 = r0 + NM_RB < M ? r0 + NM_RB : M;            \
                T *pw = dw ? part + k * 2 * N : NULL, *pb = db ? part + k * 2 * N + N : NULL; \
                NSFX(ln_bwd_blk_##S)(dy, x, mean, rstd, w, r0, r1, N, dx, pw, pb, tmp, rms); \
            }                                                                            \
            free(tmp);                                                                   \
        }                                                                                \
    }                                                                                    \
    if (fail) { free(part); return -2; }                                                 \
    if (part) {                                                                          \
        /* blocks summed in block order: the same sums for any thread count */           \
        if (dw) { for (int64_t i = 0; i < N; i++) dw[i] = 0;                             \
            for (int64_t k = 0; k < nb; k++) { const T *p = part + k * 2 * N;            \
                for (int64_t i = 0; i < N; i++) dw[i] += p[i]; } }                       \
        if (db) { for (int64_t i = 0; i < N; i++) db[i] = 0;                             \
            for (int64_t k = 0; k < nb; k++) { const T *p = part + k * 2 * N + N;        \
                for (int64_t i = 0; i < N; i++) db[i] += p[i]; } }                       \
        free(part);                                                                      \
    }                                                                                    \
    return 0;                                                                            \
}
DEF_LAYER_NORM(f32, float, sqrtf)
DEF_LAYER_NORM(f64, double, sqrt)

static int NSFX(layer_norm_fwd)(int dtype, const char *x, const char *w, const char *b,
                                int64_t M, int64_t N, double eps, char *y, char *mean,
                                char *rstd, int rms, int nt) {
    if (dtype == EM_F32)
        NSFX(ln_fwd_f32)((const float *)x, (const float *)w, (const float *)b, M, N,
                         (float)eps, (float *)y, (float *)mean, (float *)rstd, rms, nt);
    else if (dtype == EM_F64)
        NSFX(ln_fwd_f64)((const double *)x, (const double *)w, (const double *)b, M, N,
                         eps, (double *)y, (double *)mean, (double *)rstd, rms, nt);
    else return -1;
    return 0;
}

static int NSFX(layer_norm_bwd)(int dtype, const char *dy, const char *x, const char *mean,
                                const char *rstd, const char *w, int64_t M, int64_t N,
                                char *dx, char *dw, char *db, int rms, int nt) {
    if (dtype == EM_F32)
        return NSFX(ln_bwd_f32)((const float *)dy, (const float *)x, (const float *)mean,
                                (const float *)rstd, (const float *)w, M, N, (float *)dx,
                                (float *)dw, (float *)db, rms, nt);
    if (dtype == EM_F64)
        return NSFX(ln_bwd_f64)((const double *)dy, (const double *)x, (const double *)mean,
                                (const double *)rstd, (const double *)w, M, N, (double *)dx,
                                (double *)dw, (double *)db, rms, nt);
    return -1;
}
