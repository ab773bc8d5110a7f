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

/* (N, C, P) logits, P > 1 positions per sample (the spatial dims of an
   (N, C, d1, ...) input, no transpose): blocks of up to LS_SB positions of one
   sample, the loops over the classes outside and over the block's positions
   inside, so they run along memory and vectorise.  Each position's sums over the
   classes go in class order: the result does not depend on the blocking or the
   thread count. */
#define LS_SB 64

/* exp(v) for v <= 0 or NaN (x - max, x - lse): only the bottom of the range needs
   a clamp, which keeps the loops short (exp(-103.97) is float's smallest
   subnormal, so the clamp changes no sum) */
static inline float LSFX(expn_f32)(float v) {
    return em_exp_reduced(v < -103.972077f ? -103.972077f : v, 0);
}
static inline double LSFX(expn_f64)(double v) { return em_exp_d(v); }

#define DEF_CE_SPATIAL(S, T, LOG)                                                    \
/* l[j] = m[j] + log sum_c exp(x[c, j] - m[j]), m[j] = max_c x[c, j], over nb <= LS_SB    \
   positions.  The helpers below are inlined twice, with nb = LS_SB (full blocks,     \
   loops of a known length that the compiler vectorises best) and with nb. */          \
static inline __attribute__((always_inline)) void LSFX(sp_lse_w_##S)(                     \
        const T *xb, int64_t C, int64_t P, int64_t nb, T *l) {                           \
    T m[LS_SB], se[LS_SB];                                                               \
    for (int64_t j = 0; j < nb; j++) { m[j] = -INFINITY; se[j] = 0; }                    \
    for (int64_t c = 0; c < C; c++) {                                                    \
        const T *xc = xb + c * P;                                                        \
        for (int64_t j = 0; j < nb; j++) m[j] = xc[j] > m[j] ? xc[j] : m[j];             \
    }                                                                                    \
    for (int64_t c = 0; c < C; c++) {                                                    \
        const T *xc = xb + c * P;                                                        \
        for (int64_t j = 0; j < nb; j++) se[j] += LSFX(expn_##S)(xc[j] - m[j]);          \
    }                                                                                    \
    for (int64_t j = 0; j < nb; j++) l[j] = m[j] + LOG(se[j]);                           \
}                                                                                        \
static void LSFX(sp_lse_##S)(const T *xb, int64_t C, int64_t P, int64_t nb, T *l) {      \
    if (nb == LS_SB) LSFX(sp_lse_w_##S)(xb, C, P, LS_SB, l);                             \
    else LSFX(sp_lse_w_##S)(xb, C, P, nb, l);                                            \
}                                                                                        \
/* dx[c, j] = cp[j] softmax(x)[c, j] - cw[j] w[c] */                                     \
static inline __attribute__((always_inline)) void LSFX(sp_ce_grad_w_##S)(                 \
        const T *xb, T *db, const T *w, int64_t C, int64_t P, int64_t nb, const T *l,     \
        const T *cp, const T *cw) {                                                      \
    for (int64_t c = 0; c < C; c++) {                                                    \
        const T *xc = xb + c * P, wc = w ? w[c] : (T)1;                                  \
        T *dc = db + c * P;                                                              \
        for (int64_t j = 0; j < nb; j++)                                                 \
            dc[j] = cp[j] * LSFX(expn_##S)(xc[j] - l[j]) - cw[j] * wc;                   \
    }                                                                                    \
}                                                                                        \
/* dx[c, j] = gi[j] (sq[j] softmax(x)[c, j] - w[c] (a p[c, j] + b)) */                   \
static inline __attribute__((always_inline)) void LSFX(sp_cep_grad_w_##S)(                \
        const T *xb, const T *pb, T *db, const T *w, int64_t C, int64_t P, int64_t nb,    \
        const T *l, const T *gi, const T *sq, T a, T b) {                                \
    for (int64_t c = 0; c < C; c++) {                                                    \
        const T *xc = xb + c * P, *pc = pb + c * P, wc = w ? w[c] : (T)1;                \
        T *dc = db + c * P;                                                              \
        for (int64_t j = 0; j < nb; j++)                                                 \
            dc[j] = gi[j] * (sq[j] * LSFX(expn_##S)(xc[j] - l[j]) - wc * (a * pc[j] + b)); \
    }                                                                                    \
}                                                                                        \
static void LSFX(ce_sp_fwd_##S)(const T *x, const int64_t *t, const T *w, int64_t N,     \
                                int64_t C, int64_t P, int64_t ig, T eps, T *loss,        \
                                T *lse, int nt) {                                        \
    T W = (T)C;                                                                          \
    if (w) { W = 0; for (int64_t c = 0; c < C; c++) W += w[c]; }                         \
    const T a = (T)1 - eps, b = eps / (T)C;                                              \
    const int64_t nbk = (P + LS_SB - 1) / LS_SB;                                         \
    _Pragma("omp parallel for num_threads(nt) schedule(static) if(nt > 1)")               \
    for (int64_t q = 0; q < N * nbk; q++) {                                              \
        const int64_t n = q / nbk, s0 = q % nbk * LS_SB;                                 \
        const int64_t nb = P - s0 < LS_SB ? P - s0 : LS_SB, o = n * P + s0;              \
        const T *xb = x + n * C * P + s0;                                                \
        T d[LS_SB];                                                                      \
        LSFX(sp_lse_##S)(xb, C, P, nb, lse + o);                                         \
        if (eps > 0) {                                                                   \
            for (int64_t j = 0; j < nb; j++) d[j] = 0;                                   \
            for (int64_t c = 0; c < C; c++) {                                            \
                const T *xc = xb + c * P, wc = w ? w[c] : (T)1;                          \
                for (int64_t j = 0; j < nb; j++) d[j] += wc * xc[j];                     \
            }                                                                            \
        }                                                                                \
        for (int64_t j = 0; j < nb; j++) {                                               \
            const int64_t tj = t[o + j];                                                 \
            if (tj == ig) { loss[o + j] = 0; continue; }                                 \
            const T l = lse[o + j], wt = w ? w[tj] : (T)1;                               \
            T v = a * wt * (l - xb[tj * P + j]);                                         \
            if (eps > 0) v += b * (W * l - d[j]);                                        \
            loss[o + j] = v;                                                             \
        }                                                                                \
    }                                                                                    \
}                                                                                        \
static void LSFX(ce_sp_bwd_##S)(const T *x, const int64_t *t, const T *w, const T *lse,  \
                                int64_t N, int64_t C, int64_t P, int64_t ig, T eps,      \
                                const T *g, int64_t gs, T gscale, T *dx, int nt) {       \
    T W = (T)C;                                                                          \
    if (w) { W = 0; for (int64_t c = 0; c < C; c++) W += w[c]; }                         \
    const T a = (T)1 - eps, b = eps / (T)C;                                              \
    const int64_t nbk = (P + LS_SB - 1) / LS_SB;                                         \
    _Pragma("omp parallel for num_threads(nt) schedule(static) if(nt > 1)")               \
    for (int64_t q = 0; q < N * nbk; q++) {                                              \
        const int64_t n = q / nbk, s0 = q % nbk * LS_SB;                                 \
        const int64_t nb = P - s0 < LS_SB ? P - s0 : LS_SB, o = n * P + s0;              \
        const T *xb = x + n * C * P + s0;                                                \
        T *db = dx + n * C * P + s0;                                                     \
        T cp[LS_SB], cw[LS_SB], pk[LS_SB];                                               \
        const T *l = lse + o;                                                            \
        for (int64_t j = 0; j < nb; j++) {                                               \
            const int64_t tj = t[o + j];                                                 \
            const T gi = tj == ig ? (T)0 : g[(o + j) * gs] * gscale;                     \
            const T wt = w && tj != ig ? w[tj] : (T)1;                                   \
            cp[j] = gi * (a * wt + b * W);                                               \
            cw[j] = gi * b;                                                              \
            pk[j] = gi * a * wt;                                                         \
        }                                                                                \
        if (nb == LS_SB) LSFX(sp_ce_grad_w_##S)(xb, db, w, C, P, LS_SB, l, cp, cw);         \
        else LSFX(sp_ce_grad_w_##S)(xb, db, w, C, P, nb, l, cp, cw);                     \
        for (int64_t j = 0; j < nb; j++) {                                               \
            const int64_t tj = t[o + j];                                                 \
            if (tj != ig) { db[tj * P + j] -= pk[j]; continue; }                         \
            for (int64_t c = 0; c < C; c++) db[c * P + j] = 0;                           \
        }                                                                                \
    }                                                                                    \
}                                                                                        \
/* probability targets p[N, C, P]: as DEF_CE_PROB, per position */                      \
static void LSFX(cep_sp_fwd_##S)(const T *x, const T *p, const T *w, int64_t N,          \
                                 int64_t C, int64_t P, T eps, T *loss, T *lse, int nt) { \
    const T a = (T)1 - eps, b = eps / (T)C;                                              \
    const int64_t nbk = (P + LS_SB - 1) / LS_SB;                                         \
    _Pragma("omp parallel for num_threads(nt) schedule(static) if(nt > 1)")               \
    for (int64_t q = 0; q < N * nbk; q++) {                                              \
        const int64_t n = q / nbk, s0 = q % nbk * LS_SB;                                 \
        const int64_t nb = P - s0 < LS_SB ? P - s0 : LS_SB, o = n * P + s0;              \
        const T *xb = x + n * C * P + s0, *pb = p + n * C * P + s0;                      \
        const T *l = lse + o;                                                            \
        T acc[LS_SB];                                                                    \
        LSFX(sp_lse_##S)(xb, C, P, nb, lse + o);                                         \
        for (int64_t j = 0; j < nb; j++) acc[j] = 0;                                     \
        for (int64_t c = 0; c < C; c++) {                                                \
            const T *xc = xb + c * P, *pc = pb + c * P, wc = w ? w[c] : (T)1;            \
            for (int64_t j = 0; j < nb; j++) acc[j] += wc * (a * pc[j] + b) * (l[j] - xc[j]); \
        }                                                                                \
        for (int64_t j = 0; j < nb; j++) loss[o + j] = acc[j];                           \
    }                                                                                    \
}                                                                                        \
static void LSFX(cep_sp_bwd_##S)(const T *x, const T *p, const T *w, const T *lse,       \
                                 int64_t N, int64_t C, int64_t P, T eps, const T *g,     \
                                 int64_t gs, T gscale, T *dx, int nt) {                  \
    const T a = (T)1 - eps, b = eps / (T)C;                                              \
    const int64_t nbk = (P + LS_SB - 1) / LS_SB;                                         \
    _Pragma("omp parallel for num_threads(nt) schedule(static) if(nt > 1)")               \
    for (int64_t q = 0; q < N * nbk; q++) {                                              \
        const int64_t n = q / nbk, s0 = q % nbk * LS_SB;                                 \
        const int64_t nb = P - s0 < LS_SB ? P - s0 : LS_SB, o = n * P + s0;              \
        const T *xb = x + n * C * P + s0, *pb = p + n * C * P + s0;                      \
        T *db = dx + n * C * P + s0;                                                     \
        const T *l = lse + o;                                                            \
        T gi[LS_SB], sq[LS_SB];                                                          \
        for (int64_t j = 0; j < nb; j++) { gi[j] = g[(o + j) * gs] * gscale; sq[j] = 0; } \
        for (int64_t c = 0; c < C; c++) {                                                \
            const T *pc = pb + c * P, wc = w ? w[c] : (T)1;                              \
            for (int64_t j = 0; j < nb; j++) sq[j] += wc * (a * pc[j] + b);              \
        }                                                                                \
        if (nb == LS_SB) LSFX(sp_cep_grad_w_##S)(xb, pb, db, w, C, P, LS_SB, l, gi, sq, a, b); \
        else LSFX(sp_cep_grad_w_##S)(xb, pb, db, w, C, P, nb, l, gi, sq, a, b);          \
    }                                                                                    \
}

/* nll_loss of log-probabilities x[N, C, P] (any P >= 1): per position
   -w[t] x[t] (0 where t is ignore_index); the backward writes -g_i w[t] at the
   target and zeros elsewhere */
#define DEF_NLL(S, T)                                                                     \
/* red[0], red[1]: the in-order sums of loss[0, n) and of w[t] over the kept           \
   positions (t NULL: red[1] = n) */                                                     \
static void LSFX(red_##S)(const T *loss, const int64_t *t, const T *w, int64_t n,        \
                          int64_t ig, double *red) {                                     \
    double s = 0, d = 0;                                                                 \
    for (int64_t r = 0; r < n; r++) {                                                    \
        s += (double)loss[r];                                                            \
        if (t && t[r] != ig) d += w ? (double)w[t[r]] : 1.0;                             \
    }                                                                                    \
    red[0] = s; red[1] = t ? d : (double)n;                                              \
}                                                                                        \
static void LSFX(nll_fwd_##S)(const T *x, const int64_t *t, const T *w, int64_t N,       \
                              int64_t C, int64_t P, int64_t ig, T *loss, int nt) {       \
    _Pragma("omp parallel for num_threads(nt) schedule(static) if(nt > 1)")               \
    for (int64_t r = 0; r < N * P; r++) {                                                \
        const int64_t tr = t[r];                                                         \
        loss[r] = tr == ig ? (T)0 : -(w ? w[tr] : (T)1) * x[(r / P * C + tr) * P + r % P]; \
    }                                                                                    \
}                                                                                        \
static void LSFX(nll_bwd_##S)(const int64_t *t, const T *w, int64_t N, int64_t C,        \
                              int64_t P, int64_t ig, const T *g, int64_t gs, T gscale,   \
                              T *dx, int nt) {                                           \
    _Pragma("omp parallel for num_threads(nt) schedule(static) if(nt > 1)")               \
    for (int64_t n = 0; n < N; n++) {                                                    \
        T *dn = dx + n * C * P;                                                          \
        for (int64_t i = 0; i < C * P; i++) dn[i] = 0;                                   \
        for (int64_t s = 0; s < P; s++) {                                                \
            const int64_t r = n * P + s, tr = t[r];                                      \
            if (tr != ig) dn[tr * P + s] = -(w ? w[tr] : (T)1) * (g[r * gs] * gscale);   \
        }                                                                                \
    }                                                                                    \
}

DEF_CROSS_ENTROPY(f32, float, LSFX(expn_f32), logf)
DEF_CROSS_ENTROPY(f64, double, em_exp_d, log)
DEF_CE_PROB(f32, float, LSFX(expn_f32), logf)
DEF_CE_PROB(f64, double, em_exp_d, log)
DEF_CE_SPATIAL(f32, float, logf)
DEF_CE_SPATIAL(f64, double, log)
DEF_NLL(f32, float)
DEF_NLL(f64, double)

#define LS_F32(p) ((float *)(p))
#define LS_F64(p) ((double *)(p))
#define LS_CF32(p) ((const float *)(p))
#define LS_CF64(p) ((const double *)(p))

static int LSFX(cross_entropy_fwd)(int dtype, const char *x, const int64_t *t, const char *w,
                                   int64_t N, int64_t C, int64_t P, int64_t ig, double eps,
                                   char *loss, char *lse, double *red, int nt) {
    if (dtype == EM_F32 && P == 1)
        LSFX(ce_fwd_f32)(LS_CF32(x), t, LS_CF32(w), N, C, ig, (float)eps, LS_F32(loss),
                         LS_F32(lse), red, nt);
    else if (dtype == EM_F64 && P == 1)
        LSFX(ce_fwd_f64)(LS_CF64(x), t, LS_CF64(w), N, C, ig, eps, LS_F64(loss), LS_F64(lse),
                         red, nt);
    else if (dtype == EM_F32) {
        LSFX(ce_sp_fwd_f32)(LS_CF32(x), t, LS_CF32(w), N, C, P, ig, (float)eps, LS_F32(loss),
                            LS_F32(lse), nt);
        LSFX(red_f32)(LS_CF32(loss), t, LS_CF32(w), N * P, ig, red);
    } else if (dtype == EM_F64) {
        LSFX(ce_sp_fwd_f64)(LS_CF64(x), t, LS_CF64(w), N, C, P, ig, eps, LS_F64(loss),
                            LS_F64(lse), nt);
        LSFX(red_f64)(LS_CF64(loss), t, LS_CF64(w), N * P, ig, red);
    } else return -1;
    return 0;
}

static int LSFX(cross_entropy_bwd)(int dtype, const char *x, const int64_t *t, const char *w,
                                   const char *lse, int64_t N, int64_t C, int64_t P,
                                   int64_t ig, double eps, const char *g, int64_t gs,
                                   double gscale, char *dx, int nt) {
    if (dtype == EM_F32 && P == 1)
        LSFX(ce_bwd_f32)(LS_CF32(x), t, LS_CF32(w), LS_CF32(lse), N, C, ig, (float)eps,
                         LS_CF32(g), gs, (float)gscale, LS_F32(dx), nt);
    else if (dtype == EM_F64 && P == 1)
        LSFX(ce_bwd_f64)(LS_CF64(x), t, LS_CF64(w), LS_CF64(lse), N, C, ig, eps, LS_CF64(g),
                         gs, gscale, LS_F64(dx), nt);
    else if (dtype == EM_F32)
        LSFX(ce_sp_bwd_f32)(LS_CF32(x), t, LS_CF32(w), LS_CF32(lse), N, C, P, ig, (float)eps,
                            LS_CF32(g), gs, (float)gscale, LS_F32(dx), nt);
    else if (dtype == EM_F64)
        LSFX(ce_sp_bwd_f64)(LS_CF64(x), t, LS_CF64(w), LS_CF64(lse), N, C, P, ig, eps,
                            LS_CF64(g), gs, gscale, LS_F64(dx), nt);
    else return -1;
    return 0;
}

static int LSFX(cross_entropy_prob_fwd)(int dtype, const char *x, const char *p, const char *w,
                                        int64_t N, int64_t C, int64_t P, double eps,
                                        char *loss, char *lse, double *red, int nt) {
    if (dtype == EM_F32 && P == 1)
        LSFX(cep_fwd_f32)(LS_CF32(x), LS_CF32(p), LS_CF32(w), N, C, (float)eps, LS_F32(loss),
                          LS_F32(lse), red, nt);
    else if (dtype == EM_F64 && P == 1)
        LSFX(cep_fwd_f64)(LS_CF64(x), LS_CF64(p), LS_CF64(w), N, C, eps, LS_F64(loss),
                          LS_F64(lse), red, nt);
    else if (dtype == EM_F32) {
        LSFX(cep_sp_fwd_f32)(LS_CF32(x), LS_CF32(p), LS_CF32(w), N, C, P, (float)eps,
                             LS_F32(loss), LS_F32(lse), nt);
        LSFX(red_f32)(LS_CF32(loss), NULL, NULL, N * P, 0, red);
    } else if (dtype == EM_F64) {
        LSFX(cep_sp_fwd_f64)(LS_CF64(x), LS_CF64(p), LS_CF64(w), N, C, P, eps, LS_F64(loss),
                             LS_F64(lse), nt);
        LSFX(red_f64)(LS_CF64(loss), NULL, NULL, N * P, 0, red);
    } else return -1;
    return 0;
}

static int LSFX(cross_entropy_prob_bwd)(int dtype, const char *x, const char *p, const char *w,
                                        const char *lse, int64_t N, int64_t C, int64_t P,
                                        double eps, const char *g, int64_t gs, double gscale,
                                        char *dx, int nt) {
    if (dtype == EM_F32 && P == 1)
        LSFX(cep_bwd_f32)(LS_CF32(x), LS_CF32(p), LS_CF32(w), LS_CF32(lse), N, C, (float)eps,
                          LS_CF32(g), gs, (float)gscale, LS_F32(dx), nt);
    else if (dtype == EM_F64 && P == 1)
        LSFX(cep_bwd_f64)(LS_CF64(x), LS_CF64(p), LS_CF64(w), LS_CF64(lse), N, C, eps,
                          LS_CF64(g), gs, gscale, LS_F64(dx), nt);
    else if (dtype == EM_F32)
        LSFX(cep_sp_bwd_f32)(LS_CF32(x), LS_CF32(p), LS_CF32(w), LS_CF32(lse), N, C, P,
                             (float)eps, LS_CF32(g), gs, (float)gscale, LS_F32(dx), nt);
    else if (dtype == EM_F64)
        LSFX(cep_sp_bwd_f64)(LS_CF64(x), LS_CF64(p), LS_CF64(w), LS_CF64(lse), N, C, P, eps,
                             LS_CF64(g), gs, gscale, LS_F64(dx), nt);
    else return -1;
    return 0;
}

static int LSFX(nll_loss_fwd)(int dtype, const char *x, const int64_t *t, const char *w,
                              int64_t N, int64_t C, int64_t P, int64_t ig, char *loss,
                              double *red, int nt) {
    if (dtype == EM_F32) {
        LSFX(nll_fwd_f32)(LS_CF32(x), t, LS_CF32(w), N, C, P, ig, LS_F32(loss), nt);
        LSFX(red_f32)(LS_CF32(loss), t, LS_CF32(w), N * P, ig, red);
    } else if (dtype == EM_F64) {
        LSFX(nll_fwd_f64)(LS_CF64(x), t, LS_CF64(w), N, C, P, ig, LS_F64(loss), nt);
        LSFX(red_f64)(LS_CF64(loss), t, LS_CF64(w), N * P, ig, red);
    } else return -1;
    return 0;
}

static int LSFX(nll_loss_bwd)(int dtype, const int64_t *t, const char *w, int64_t N, int64_t C,
                              int64_t P, int64_t ig, const char *g, int64_t gs, double gscale,
                              char *dx, int nt) {
    if (dtype == EM_F32)
        LSFX(nll_bwd_f32)(t, LS_CF32(w), N, C, P, ig, LS_CF32(g), gs, (float)gscale,
                          LS_F32(dx), nt);
    else if (dtype == EM_F64)
        LSFX(nll_bwd_f64)(t, LS_CF64(w), N, C, P, ig, LS_CF64(g), gs, gscale, LS_F64(dx), nt);
    else return -1;
    return 0;
}
