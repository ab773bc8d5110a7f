/* Fused attention, written once and compiled per ISA by attention.c (ASFX()
   names the copy).  Keys (and, for the backward, values) of a batch-head are
   transposed once into scratch so the score row of a query is a sum of
   contiguous axpy's over the keys, which vectorises; the value side runs over
   contiguous rows of V. */
#define AT_ACC 16

#define DEF_SDPA(S_, T, EXPF, LOGF)                                                       \
static void ASFX(transpose_##S_)(const T *a, int64_t R, int64_t C, T *at) {             \
    for (int64_t r = 0; r < R; r++)                                                      \
        for (int64_t c = 0; c < C; c++) at[c * R + r] = a[r * C + c];                    \
}                                                                                        \
/* s[0..n) = scale * q . K[j] from the transposed keys kT [D, S] */                      \
static void ASFX(scores_##S_)(const T *q, const T *kT, int64_t S, int64_t D, int64_t n,  \
                              T scale, T *s) {                                           \
    for (int64_t j = 0; j < n; j++) s[j] = 0;                                            \
    for (int64_t d = 0; d < D; d++) {                                                    \
        T qd = q[d] * scale; const T *kr = kT + d * S;                                   \
        for (int64_t j = 0; j < n; j++) s[j] += qd * kr[j];                              \
    }                                                                                    \
}                                                                                        \
static int ASFX(fwd_##S_)(const T *q, const T *k, const T *v, int64_t BH, int64_t L,     \
                          int64_t S, int64_t D, int64_t Dv, T scale, int causal, T *out, \
                          T *lse, int nt) {                                              \
    int fail = 0;                                                                        \
    _Pragma("omp parallel num_threads(nt) if(nt > 1)")                                    \
    {                                                                                    \
        T *kT = (T *)malloc((size_t)(D * S + S + Dv + 1) * sizeof(T));                   \
        if (!kT) { _Pragma("omp atomic write") fail = 1; }                               \
        else {                                                                           \
            T *s = kT + D * S, *o = s + S;                                               \
            _Pragma("omp for schedule(static)")                                          \
            for (int64_t bh = 0; bh < BH; bh++) {                                        \
                const T *Q = q + bh * L * D, *K = k + bh * S * D, *V = v + bh * S * Dv;  \
                ASFX(transpose_##S_)(K, S, D, kT);                                       \
                for (int64_t i = 0; i < L; i++) {                                        \
                    int64_t n = causal ? (i + 1 < S ? i + 1 : S) : S;                    \
                    ASFX(scores_##S_)(Q + i * D, kT, S, D, n, scale, s);                 \
                    T mx[AT_ACC], sm[AT_ACC];                                            \
                    for (int j = 0; j < AT_ACC; j++) { mx[j] = -INFINITY; sm[j] = 0; }   \
                    int64_t j0 = 0;                                                      \
                    for (; j0 + AT_ACC <= n; j0 += AT_ACC)                               \
                        for (int j = 0; j < AT_ACC; j++) mx[j] = s[j0 + j] > mx[j] ? s[j0 + j] : mx[j]; \
                    for (int j = 0; j0 < n; j0++, j++) mx[j] = s[j0] > mx[j] ? s[j0] : mx[j]; \
                    T m = mx[0];                                                         \
                    for (int j = 1; j < AT_ACC; j++) m = mx[j] > m ? mx[j] : m;          \
                    j0 = 0;                                                              \
                    for (; j0 + AT_ACC <= n; j0 += AT_ACC)                               \
                        for (int j = 0; j < AT_ACC; j++) { T p = EXPF(s[j0 + j] - m); s[j0 + j] = p; sm[j] += p; } \
                    for (int j = 0; j0 < n; j0++, j++) { T p = EXPF(s[j0] - m); s[j0] = p; sm[j] += p; } \
                    for (int w = AT_ACC / 2; w > 0; w /= 2)                              \
                        for (int j = 0; j < w; j++) sm[j] += sm[j + w];                  \
                    for (int64_t e = 0; e < Dv; e++) o[e] = 0;                           \
                    for (int64_t j = 0; j < n; j++) {                                    \
                        T p = s[j]; const T *vr = V + j * Dv;                            \
                        for (int64_t e = 0; e < Dv; e++) o[e] += p * vr[e];              \
                    }                                                                    \
                    T inv = (T)1 / sm[0], *orow = out + (bh * L + i) * Dv;               \
                    for (int64_t e = 0; e < Dv; e++) orow[e] = o[e] * inv;               \
                    lse[bh * L + i] = m + (T)LOGF(sm[0]);                                \
                }                                                                        \
            }                                                                            \
            free(kT);                                                                    \
        }                                                                                \
    }                                                                                    \
    return fail ? -2 : 0;                                                                \
}                                                                                        \
static int ASFX(bwd_##S_)(const T *dout, const T *q, const T *k, const T *v, const T *out, \
                          const T *lse, int64_t BH, int64_t L, int64_t S, int64_t D,     \
                          int64_t Dv, T scale, int causal, T *dq, T *dk, T *dv, int nt) {  \
    int fail = 0;                                                                        \
    _Pragma("omp parallel num_threads(nt) if(nt > 1)")                                    \
    {                                                                                    \
        T *kT = (T *)malloc((size_t)(D * S + Dv * S + 2 * S + D + 1) * sizeof(T));       \
        if (!kT) { _Pragma("omp atomic write") fail = 1; }                               \
        else {                                                                           \
            T *vT = kT + D * S, *p = vT + Dv * S, *dp = p + S, *acc = dp + S;            \
            _Pragma("omp for schedule(static)")                                          \
            for (int64_t bh = 0; bh < BH; bh++) {                                        \
                const T *Q = q + bh * L * D, *K = k + bh * S * D, *V = v + bh * S * Dv;  \
                const T *G = dout + bh * L * Dv, *O = out + bh * L * Dv;                 \
                T *dQ = dq + bh * L * D, *dK = dk + bh * S * D, *dV = dv + bh * S * Dv;  \
                ASFX(transpose_##S_)(K, S, D, kT);                                       \
                ASFX(transpose_##S_)(V, S, Dv, vT);                                      \
                for (int64_t j = 0; j < S * D; j++) dK[j] = 0;                           \
                for (int64_t j = 0; j < S * Dv; j++) dV[j] = 0;                          \
                for (int64_t i = 0; i < L; i++) {                                        \
                    int64_t n = causal ? (i + 1 < S ? i + 1 : S) : S;                    \
                    const T *qi = Q + i * D, *gi = G + i * Dv, *oi = O + i * Dv;         \
                    ASFX(scores_##S_)(qi, kT, S, D, n, scale, p);                        \
                    T l = lse[bh * L + i];                                               \
                    for (int64_t j = 0; j < n; j++) p[j] = EXPF(p[j] - l);               \
                    for (int64_t j = 0; j < n; j++) dp[j] = 0;                           \
                    T di = 0;                                                            \
                    for (int64_t e = 0; e < Dv; e++) {                                   \
                        T ge = gi[e]; const T *vr = vT + e * S; di += ge * oi[e];        \
                        for (int64_t j = 0; j < n; j++) dp[j] += ge * vr[j];             \
                    }                                                                    \
                    for (int64_t j = 0; j < n; j++) dp[j] = p[j] * (dp[j] - di) * scale; \
                    for (int64_t d = 0; d < D; d++) acc[d] = 0;                          \
                    for (int64_t j = 0; j < n; j++) {                                    \
                        T ds = dp[j], pj = p[j];                                         \
                        const T *kr = K + j * D; T *dkr = dK + j * D, *dvr = dV + j * Dv; \
                        for (int64_t d = 0; d < D; d++) { acc[d] += ds * kr[d]; dkr[d] += ds * qi[d]; } \
                        for (int64_t e = 0; e < Dv; e++) dvr[e] += pj * gi[e];           \
                    }                                                                    \
                    for (int64_t d = 0; d < D; d++) dQ[i * D + d] = acc[d];              \
                }                                                                        \
            }                                                                            \
            free(kT);                                                                    \
        }                                                                                \
    }                                                                                    \
    return fail ? -2 : 0;                                                                \
}
DEF_SDPA(f32, float, em_expf, logf)
DEF_SDPA(f64, double, exp, log)

static int ASFX(sdpa_fwd)(int dtype, const char *q, const char *k, const char *v, int64_t BH,
                          int64_t L, int64_t S, int64_t D, int64_t Dv, double scale,
                          int causal, char *out, char *lse, int nt) {
    if (dtype == EM_F32)
        return ASFX(fwd_f32)((const float *)q, (const float *)k, (const float *)v, BH, L, S, D,
                             Dv, (float)scale, causal, (float *)out, (float *)lse, nt);
    if (dtype == EM_F64)
        return ASFX(fwd_f64)((const double *)q, (const double *)k, (const double *)v, BH, L,
                             S, D, Dv, scale, causal, (double *)out, (double *)lse, nt);
    return -1;
}

static int ASFX(sdpa_bwd)(int dtype, const char *dout, const char *q, const char *k,
                          const char *v, const char *out, const char *lse, int64_t BH,
                          int64_t L, int64_t S, int64_t D, int64_t Dv, double scale, int causal,
                          char *dq, char *dk, char *dv, int nt) {
    if (dtype == EM_F32)
        return ASFX(bwd_f32)((const float *)dout, (const float *)q, (const float *)k,
                             (const float *)v, (const float *)out, (const float *)lse, BH, L,
                             S, D, Dv, (float)scale, causal, (float *)dq, (float *)dk,
                             (float *)dv, nt);
    if (dtype == EM_F64)
        return ASFX(bwd_f64)((const double *)dout, (const double *)q, (const double *)k,
                             (const double *)v, (const double *)out, (const double *)lse, BH,
                             L, S, D, Dv, scale, causal, (double *)dq, (double *)dk,
                             (double *)dv, nt);
    return -1;
}
