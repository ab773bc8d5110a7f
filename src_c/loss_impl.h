/* cross-entropy forward and backward, written once and compiled per ISA by
   loss.c (LSFX() names the copy).  Row sums use LS_ACC partial sums combined in
   a fixed tree, so the loops vectorise and never depend on the thread count. */
#define LS_ACC 16

#define DEF_CROSS_ENTROPY(S, T, EXP, LOG)                                                 \
static T LSFX(rowmax_##S)(const T *x, int64_t n) {                                       \
    T s[LS_ACC];                                                                         \
    for (int j = 0; j < LS_ACC; j++) s[j] = -INFINITY;                                   \
    int64_t i = 0;                                                                       \
    for (; i + LS_ACC <= n; i += LS_ACC)                                                 \
        for (int j = 0; j < LS_ACC; j++) s[j] = x[i + j] > s[j] ? x[i + j] : s[j];       \
    for (int j = 0; i < n; i++, j++) s[j] = x[i] > s[j] ? x[i] : s[j];                   \
    for (int w = LS_ACC / 2; w > 0; w /= 2)                                              \
        for (int j = 0; j < w; j++) s[j] = s[j + w] > s[j] ? s[j + w] : s[j];            \
    return s[0];                                                                         \
}                                                                                        \
static T LSFX(sumexp_##S)(const T *x, int64_t n, T m) {                                  \
    T s[LS_ACC] = {0};                                                                   \
    int64_t i = 0;                                                                       \
    for (; i + LS_ACC <= n; i += LS_ACC)                                                 \
        for (int j = 0; j < LS_ACC; j++) s[j] += EXP(x[i + j] - m);                      \
    for (int j = 0; i < n; i++, j++) s[j] += EXP(x[i] - m);                              \
    for (int w = LS_ACC / 2; w > 0; w /= 2)                                              \
        for (int j = 0; j < w; j++) s[j] += s[j + w];                                    \
    return s[0];                                                                         \
}                                                                                        \
/* sum_c w[c] x[c] (w NULL: sum_c x[c]) */                                               \
static T LSFX(dot_##S)(const T *x, const T *w, int64_t n) {                              \
    T s[LS_ACC] = {0};                                                                   \
    int64_t i = 0;                                                                       \
    if (w) {                                                                             \
        for (; i + LS_ACC <= n; i += LS_ACC)                                             \
            for (int j = 0; j < LS_ACC; j++) s[j] += w[i + j] * x[i + j];                \
        for (int j = 0; i < n; i++, j++) s[j] += w[i] * x[i];                            \
    } else {                                                                             \
        for (; i + LS_ACC <= n; i += LS_ACC)                                             \
            for (int j = 0; j < LS_ACC; j++) s[j] += x[i + j];                           \
        for (int j = 0; i < n; i++, j++) s[j] += x[i];                                   \
    }                                                                                    \
    for (int w_ = LS_ACC / 2; w_ > 0; w_ /= 2)                                           \
        for (int j = 0; j < w_; j++) s[j] += s[j + w_];                                  \
    return s[0];                                                                         \
}                                                                                        \
static void LSFX(ce_fwd_##S)(const T *x, const int64_t *t, const T *w, int64_t N,        \
                             int64_t C, int64_t ig, T eps, T *loss, T *lse, double *red, \
                             int nt) {                                                   \
    T W = (T)C;                                                                          \
    if (w) { W = 0; for (int64_t c = 0; c < C; c++) W += w[c]; }                         \
    T a = (T)1 - eps, b = eps / (T)C;                                                    \
    _Pragma("omp parallel for num_threads(nt) schedule(static) if(nt > 1)")               \
    for (int64_t r = 0; r < N; r++) {                                                    \
        const T *xr = x + r * C;                                                         \
        T m = LSFX(rowmax_##S)(xr, C);                                                   \
        T l = m + LOG(LSFX(sumexp_##S)(xr, C, m));                                       \
        lse[r] = l;                                                                      \
        if (t[r] == ig) { loss[r] = 0; continue; }                                       \
        T wt = w ? w[t[r]] : (T)1;                                                       \
        T v = a * wt * (l - xr[t[r]]);                                                   \
        if (eps > 0) v += b * (W * l - LSFX(dot_##S)(xr, w, C));                         \
        loss[r] = v;                                                                     \
    }                                                                                    \
    double s = 0, d = 0;                                                                 \
    for (int64_t r = 0; r < N; r++) {                                                    \
        s += (double)loss[r];                                                            \
        if (t[r] != ig) d += w ? (double)w[t[r]] : 1.0;                                  \
    }                                                                                    \
    red[0] = s; red[1] = d;                                                              \
}                                                                                        \
static void LSFX(ce_bwd_##S)(const T *x, const int64_t *t, const T *w, const T *lse,     \
                             int64_t N, int64_t C, int64_t ig, T eps, const T *g,        \
                             int64_t gs, T gscale, T *dx, int nt) {                      \
    T W = (T)C;                                                                          \
    if (w) { W = 0; for (int64_t c = 0; c < C; c++) W += w[c]; }                         \
    T a = (T)1 - eps, b = eps / (T)C;                                                    \
    _Pragma("omp parallel for num_threads(nt) schedule(static) if(nt > 1)")               \
    for (int64_t r = 0; r < N; r++) {                                                    \
        const T *xr = x + r * C; T *dr = dx + r * C;                                     \
        if (t[r] == ig) { for (int64_t c = 0; c < C; c++) dr[c] = 0; continue; }         \
        T gi = g[r * gs] * gscale, l = lse[r];                                           \
        T wt = w ? w[t[r]] : (T)1;                                                       \
        T cp = gi * (a * wt + b * W);                                                    \
        if (eps > 0 && w) {                                                              \
            T cw = gi * b;                                                               \
            for (int64_t c = 0; c < C; c++) dr[c] = cp * EXP(xr[c] - l) - cw * w[c];     \
        } else {                                                                         \
            T cw = gi * b;                                                               \
            for (int64_t c = 0; c < C; c++) dr[c] = cp * EXP(xr[c] - l) - cw;            \
        }                                                                                \
        dr[t[r]] -= gi * a * wt;                                                         \
    }                                                                                    \
}

/* probability targets: q = (1-eps) p + eps/C, loss_r = sum_c w_c q_c (lse - x_c),
   d loss_r / dx_c = softmax_c sum_k w_k q_k - w_c q_c */
#define DEF_CE_PROB(S, T, EXP, LOG)                                                       \
static T LSFX(wq_dot_##S)(const T *x, const T *p, const T *w, int64_t n, T a, T b, T l) { \
    T s[LS_ACC] = {0};                                                                   \
    int64_t i = 0;                                                                       \
    for (; i + LS_ACC <= n; i += LS_ACC)                                                 \
        for (int j = 0; j < LS_ACC; j++) {                                               \
            T q = a * p[i + j] + b;                                                      \
            s[j] += (w ? w[i + j] * q : q) * (x ? l - x[i + j] : (T)1);                  \
        }                                                                                \
    for (int j = 0; i < n; i++, j++) {                                                   \
        T q = a * p[i] + b;                                                              \
        s[j] += (w ? w[i] * q : q) * (x ? l - x[i] : (T)1);                              \
    }                                                                                    \
    for (int w_ = LS_ACC / 2; w_ > 0; w_ /= 2)                                           \
        for (int j = 0; j < w_; j++) s[j] += s[j + w_];                                  \
    return s[0];                                                                         \
}                                                                                        \
static void LSFX(cep_fwd_##S)(const T *x, const T *p, const T *w, int64_t N, int64_t C,  \
                              T eps, T *loss, T *lse, double *red, int nt) {             \
    T a = (T)1 - eps, b = eps / (T)C;                                                    \
    _Pragma("omp parallel for num_threads(nt) schedule(static) if(nt > 1)")               \
    for (int64_t r = 0; r < N; r++) {                                                    \
        const T *xr = x + r * C;                                                         \
        T m = LSFX(rowmax_##S)(xr, C);                                                   \
        T l = m + LOG(LSFX(sumexp_##S)(xr, C, m));                                       \
        lse[r] = l;                                                                      \
        loss[r] = LSFX(wq_dot_##S)(xr, p + r * C, w, C, a, b, l);                        \
    }                                                                                    \
    double s = 0;                                                                        \
    for (int64_t r = 0; r < N; r++) s += (double)loss[r];                                \
    red[0] = s; red[1] = (double)N;                                                      \
}                                                                                        \
static void LSFX(cep_bwd_##S)(const T *x, const T *p, const T *w, const T *lse, int64_t N, \
                              int64_t C, T eps, const T *g, int64_t gs, T gscale, T *dx,  \
                              int nt) {                                                  \
    T a = (T)1 - eps, b = eps / (T)C;                                                    \
    _Pragma("omp parallel for num_threads(nt) schedule(static) if(nt > 1)")               \
    for (int64_t r = 0; r < N; r++) {                                                    \
        const T *xr = x + r * C, *pr = p + r * C; T *dr = dx + r * C;                    \
        T gi = g[r * gs] * gscale, l = lse[r];                                           \
        T ga = gi * LSFX(wq_dot_##S)(NULL, pr, w, C, a, b, l);                           \
        if (w) { for (int64_t c = 0; c < C; c++) dr[c] = ga * EXP(xr[c] - l) - gi * w[c] * (a * pr[c] + b); } \
        else { for (int64_t c = 0; c < C; c++) dr[c] = ga * EXP(xr[c] - l) - gi * (a * pr[c] + b); } \
    }                                                                                    \
}

DEF_CROSS_ENTROPY(f32, float, em_expf, logf)
DEF_CROSS_ENTROPY(f64, double, em_exp_d, log)
DEF_CE_PROB(f32, float, em_expf, logf)
DEF_CE_PROB(f64, double, em_exp_d, log)

static int LSFX(cross_entropy_fwd)(int dtype, const char *x, const int64_t *t, const char *w,
                                   int64_t N, int64_t C, int64_t ig, double eps, char *loss,
                                   char *lse, double *red, int nt) {
    if (dtype == EM_F32)
        LSFX(ce_fwd_f32)((const float *)x, t, (const float *)w, N, C, ig, (float)eps,
                         (float *)loss, (float *)lse, red, nt);
    else if (dtype == EM_F64)
        LSFX(ce_fwd_f64)((const double *)x, t, (const double *)w, N, C, ig, eps,
                         (double *)loss, (double *)lse, red, nt);
    else return -1;
    return 0;
}

static int LSFX(cross_entropy_bwd)(int dtype, const char *x, const int64_t *t, const char *w,
                                   const char *lse, int64_t N, int64_t C, int64_t ig,
                                   double eps, const char *g, int64_t gs, double gscale,
                                   char *dx, int nt) {
    if (dtype == EM_F32)
        LSFX(ce_bwd_f32)((const float *)x, t, (const float *)w, (const float *)lse, N, C, ig,
                         (float)eps, (const float *)g, gs, (float)gscale, (float *)dx, nt);
    else if (dtype == EM_F64)
        LSFX(ce_bwd_f64)((const double *)x, t, (const double *)w, (const double *)lse, N, C,
                         ig, eps, (const double *)g, gs, gscale, (double *)dx, nt);
    else return -1;
    return 0;
}

static int LSFX(cross_entropy_prob_fwd)(int dtype, const char *x, const char *p, const char *w,
                                        int64_t N, int64_t C, double eps, char *loss, char *lse,
                                        double *red, int nt) {
    if (dtype == EM_F32)
        LSFX(cep_fwd_f32)((const float *)x, (const float *)p, (const float *)w, N, C,
                          (float)eps, (float *)loss, (float *)lse, red, nt);
    else if (dtype == EM_F64)
        LSFX(cep_fwd_f64)((const double *)x, (const double *)p, (const double *)w, N, C, eps,
                          (double *)loss, (double *)lse, red, nt);
    else return -1;
    return 0;
}

static int LSFX(cross_entropy_prob_bwd)(int dtype, const char *x, const char *p, const char *w,
                                        const char *lse, int64_t N, int64_t C, double eps,
                                        const char *g, int64_t gs, double gscale, char *dx,
                                        int nt) {
    if (dtype == EM_F32)
        LSFX(cep_bwd_f32)((const float *)x, (const float *)p, (const float *)w,
                          (const float *)lse, N, C, (float)eps, (const float *)g, gs,
                          (float)gscale, (float *)dx, nt);
    else if (dtype == EM_F64)
        LSFX(cep_bwd_f64)((const double *)x, (const double *)p, (const double *)w,
                          (const double *)lse, N, C, eps, (const double *)g, gs, gscale,
                          (double *)dx, nt);
    else return -1;
    return 0;
}
