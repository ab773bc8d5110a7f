/* layer_norm (and rms_norm: rms = 1, no centering) forward and backward, written once and compiled per ISA by norm.c
   (NSFX() names the copy).  Row sums use NM_ACC partial sums combined in a
   fixed tree, so the loops vectorise and never depend on the thread count. */
#define NM_ACC 16
#define NM_RB 16      /* rows per block of the weight/bias gradient partials */

#define DEF_LAYER_NORM(S, T, SQRT)                                                        \
static T NSFX(sum_##S)(const T *x, int64_t n) {                                          \
    T s[NM_ACC] = {0};                                                                   \
    int64_t i = 0;                                                                       \
    for (; i + NM_ACC <= n; i += NM_ACC)                                                 \
        for (int j = 0; j < NM_ACC; j++) s[j] += x[i + j];                               \
    for (int j = 0; i < n; i++, j++) s[j] += x[i];                                       \
    for (int w = NM_ACC / 2; w > 0; w /= 2)                                              \
        for (int j = 0; j < w; j++) s[j] += s[j + w];                                    \
    return s[0];                                                                         \
}                                                                                        \
static T NSFX(sqdev_##S)(const T *x, int64_t n, T m) {                                   \
    T s[NM_ACC] = {0};                                                                   \
    int64_t i = 0;                                                                       \
    for (; i + NM_ACC <= n; i += NM_ACC)                                                 \
        for (int j = 0; j < NM_ACC; j++) { T d = x[i + j] - m; s[j] += d * d; }          \
    for (int j = 0; i < n; i++, j++) { T d = x[i] - m; s[j] += d * d; }                  \
    for (int w = NM_ACC / 2; w > 0; w /= 2)                                              \
        for (int j = 0; j < w; j++) s[j] += s[j + w];                                    \
    return s[0];                                                                         \
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
/* one block of NM_RB rows: dx rows, and this block's dw/db partial sums (row order) */ \
static void NSFX(ln_bwd_blk_##S)(const T *dy, const T *x, const T *mean, const T *rstd,  \
                                 const T *w, int64_t r0, int64_t r1, int64_t N, T *dx,   \
                                 T *pw, T *pb, T *tmp, int rms) {                        \
    for (int64_t r = r0; r < r1; r++) {                                                  \
        const T *xr = x + r * N, *gr = dy + r * N;                                       \
        T m = mean[r], rs = rstd[r];                                                     \
        T *xh = tmp, *g = tmp + N;                                                       \
        for (int64_t i = 0; i < N; i++) xh[i] = (xr[i] - m) * rs;                        \
        if (pw) for (int64_t i = 0; i < N; i++) pw[i] += gr[i] * xh[i];                  \
        if (pb) for (int64_t i = 0; i < N; i++) pb[i] += gr[i];                          \
        if (!dx) continue;                                                               \
        if (w) for (int64_t i = 0; i < N; i++) g[i] = gr[i] * w[i];                      \
        else for (int64_t i = 0; i < N; i++) g[i] = gr[i];                               \
        T a = rms ? (T)0 : NSFX(sum_##S)(g, N) / (T)N;                                   \
        for (int64_t i = 0; i < N; i++) xh[i + 2 * N] = g[i] * xh[i];                    \
        T c = NSFX(sum_##S)(xh + 2 * N, N) / (T)N;                                       \
        T *dr = dx + r * N;                                                              \
        for (int64_t i = 0; i < N; i++) dr[i] = rs * ((g[i] - a) - xh[i] * c);           \
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
