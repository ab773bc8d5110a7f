/* Fused attention (flash-attention style), written once and compiled per ISA by
   attention.c (ASFX() names the copy).

   Forward: a work item is one (batch-head, block of AT_BQ queries).  It walks
   the keys in blocks of AT_BK: S = scale Q K^T for the block (a GEMM), an online
   softmax update of the row maxima m and sums l, O = O * exp(m_old - m) + P V
   (a GEMM).  Only O and lse = m + log l per row are written; no L x S matrix.

   Backward: P is recomputed blockwise from lse.  A work item is one
   (batch-head, chunk of key blocks); for each key block it walks the query
   blocks and accumulates dV += P^T dO, dK += dS^T Q (rows the item owns) and
   dQ += dS K, with dS = P (dO V^T - rowsum(dO o O)) scale.  When a batch-head
   has several chunks (few batch-heads), each chunk writes its own dQ partial
   and the partials are summed in chunk order.

   The causal mask (key j <= query i) skips whole blocks above the diagonal and
   trims the GEMMs of the diagonal ones.  The GEMMs are ember's single-threaded
   micro-kernel GEMM; threads take whole work items and the chunking depends
   on the shapes only, so results are bit-identical whatever the thread count. */
#ifndef AT_DEFS
#define AT_DEFS
#ifndef AT_BQ
#define AT_BQ 192
#endif
#ifndef AT_BK
#define AT_BK 256
#endif
#define AT_ACC 16
static inline int64_t at_min(int64_t a, int64_t b) { return a < b ? a : b; }
/* key chunks per batch-head in the backward: enough items for the threads of
   a big machine, with their dQ partials held to 2^24 elements; from the shapes
   alone */
static inline int64_t at_chunks(int64_t BH, int64_t L, int64_t S, int64_t D) {
    int64_t nkb = (S + AT_BK - 1) / AT_BK, want = (32 + BH - 1) / BH;
    int64_t room = ((int64_t)1 << 24) / (BH * L * D + 1);
    if (want > room) want = room;
    return want < 1 ? 1 : want > nkb ? nkb : want;
}
#endif

#define DEF_SDPA(S_, T, EXPF, LOGF, GEMM)                                                 \
/* max of x[0..n), n >= 1, in fixed lanes so that it vectorises */                        \
static inline T ASFX(rmax_##S_)(const T *x, int64_t n) {                                 \
    T mx[AT_ACC];                                                                        \
    for (int j = 0; j < AT_ACC; j++) mx[j] = -INFINITY;                                  \
    int64_t c = 0;                                                                       \
    for (; c + AT_ACC <= n; c += AT_ACC)                                                 \
        for (int j = 0; j < AT_ACC; j++) mx[j] = x[c + j] > mx[j] ? x[c + j] : mx[j];    \
    for (int j = 0; c < n; c++, j++) mx[j] = x[c] > mx[j] ? x[c] : mx[j];                \
    T m = mx[0];                                                                         \
    for (int j = 1; j < AT_ACC; j++) m = mx[j] > m ? mx[j] : m;                          \
    return m;                                                                            \
}                                                                                        \
/* x[c] = exp(x[c] - m) for c < n (a plain loop: the vectoriser takes the exp);     \
   returns their sum, added in fixed lanes */                                            \
static inline T ASFX(expsum_##S_)(T *restrict x, int64_t n, T m) {                       \
    for (int64_t c = 0; c < n; c++) x[c] = EXPF(x[c] - m);                               \
    T sm[AT_ACC];                                                                        \
    for (int j = 0; j < AT_ACC; j++) sm[j] = 0;                                          \
    int64_t c = 0;                                                                       \
    for (; c + AT_ACC <= n; c += AT_ACC)                                                 \
        for (int j = 0; j < AT_ACC; j++) sm[j] += x[c + j];                              \
    for (int j = 0; c < n; c++, j++) sm[j] += x[c];                                      \
    for (int w = AT_ACC / 2; w > 0; w /= 2)                                              \
        for (int j = 0; j < w; j++) sm[j] += sm[j + w];                                  \
    return sm[0];                                                                        \
}                                                                                        \
/* s[r, c] = M[(i0 + r) mrs + (j0 + c) mcs]: the additive mask's tile, to which the       \
   score GEMM then adds (beta 1) */                                                      \
static void ASFX(mask_tile_##S_)(const T *M, int64_t mrs, int64_t mcs, int64_t i0,        \
                                 int64_t j0, int64_t bq, int64_t bk, T *s) {             \
    for (int64_t r = 0; r < bq; r++) {                                                   \
        const T *mr = M + (i0 + r) * mrs + j0 * mcs;                                     \
        T *sr = s + r * bk;                                                              \
        if (mcs == 1) memcpy(sr, mr, (size_t)bk * sizeof(T));                            \
        else for (int64_t c = 0; c < bk; c++) sr[c] = mr[c * mcs];                       \
    }                                                                                    \
}                                                                                        \
/* rows [i0, i0 + bq) of one batch-head; s: AT_BQ * AT_BK scratch, m, l: AT_BQ;          \
   M: the batch-head's additive mask (or NULL), element (i, j) at M[i mrs + j mcs] */    \
static void ASFX(fwd_blk_##S_)(const T *Q, const T *K, const T *V, const T *M,          \
                               int64_t mrs, int64_t mcs, int64_t i0, int64_t bq,         \
                               int64_t S, int64_t D, int64_t Dv, T scale, int causal,    \
                               T *O, T *lse, T *s, T *m, T *l) {                         \
    for (int64_t r = 0; r < bq; r++) { m[r] = -INFINITY; l[r] = 0; }                     \
    memset(O, 0, (size_t)(bq * Dv) * sizeof(T));                                         \
    const int64_t send = causal ? at_min(S, i0 + bq) : S;                                \
    for (int64_t j0 = 0; j0 < send; j0 += AT_BK) {                                       \
        const int64_t bk = at_min(AT_BK, send - j0);                                     \
        if (M) ASFX(mask_tile_##S_)(M, mrs, mcs, i0, j0, bq, bk, s);                     \
        GEMM(bq, bk, D, scale, Q, D, 1, K + j0 * D, 1, D, M ? 1 : 0, s, bk, 1, 1);       \
        for (int64_t r = 0; r < bq; r++) {                                               \
            T *sr = s + r * bk;                                                          \
            const int64_t nv = causal ? at_min(bk, i0 + r + 1 - j0) : bk;                \
            if (nv <= 0) { memset(sr, 0, (size_t)bk * sizeof(T)); continue; }            \
            const T mx = ASFX(rmax_##S_)(sr, nv);                                        \
            const T mn = mx > m[r] ? mx : m[r];                                          \
            /* all -inf so far (only -inf scores): nothing to add yet */                 \
            if (mn == -INFINITY) { memset(sr, 0, (size_t)bk * sizeof(T)); continue; }    \
            const T corr = EXPF(m[r] - mn);                                              \
            const T sum = ASFX(expsum_##S_)(sr, nv, mn);                                 \
            for (int64_t c = nv; c < bk; c++) sr[c] = 0;                                 \
            l[r] = l[r] * corr + sum;                                                    \
            m[r] = mn;                                                                   \
            if (corr != (T)1) {                                                          \
                T *orow = O + r * Dv;                                                    \
                for (int64_t e = 0; e < Dv; e++) orow[e] *= corr;                        \
            }                                                                            \
        }                                                                                \
        GEMM(bq, Dv, bk, 1, s, bk, 1, V + j0 * Dv, Dv, 1, 1, O, Dv, 1, 1);               \
    }                                                                                    \
    for (int64_t r = 0; r < bq; r++) {                                                   \
        /* a row the mask hides entirely: output 0 (as torch), lse -inf */               \
        const T inv = l[r] > 0 ? (T)1 / l[r] : (T)0;                                     \
        T *orow = O + r * Dv;                                                            \
        for (int64_t e = 0; e < Dv; e++) orow[e] *= inv;                                 \
        lse[r] = l[r] > 0 ? m[r] + (T)LOGF(l[r]) : -INFINITY;                            \
    }                                                                                    \
}                                                                                        \
static int ASFX(fwd_##S_)(const T *q, const T *k, const T *v, const T *mask,             \
                          const int64_t *moff, int64_t mrs, int64_t mcs, int64_t BH,     \
                          int64_t L, int64_t S, int64_t D, int64_t Dv, T scale,          \
                          int causal, T *out, T *lse, int nt) {                          \
    const int64_t nqb = (L + AT_BQ - 1) / AT_BQ;                                         \
    int fail = 0;                                                                        \
    _Pragma("omp parallel num_threads(nt) if(nt > 1)")                                    \
    {                                                                                    \
        T *s = (T *)malloc((size_t)(AT_BQ * AT_BK + 2 * AT_BQ) * sizeof(T));             \
        if (!s) { _Pragma("omp atomic write") fail = 1; }                                \
        _Pragma("omp for schedule(dynamic, 1)")                                           \
        for (int64_t it = 0; it < BH * nqb; it++) {                                      \
            if (!s) continue;                                                            \
            /* the longest (causal: last) query blocks first */                          \
            const int64_t bh = it % BH, qb = nqb - 1 - it / BH, i0 = qb * AT_BQ;         \
            ASFX(fwd_blk_##S_)(q + (bh * L + i0) * D, k + bh * S * D, v + bh * S * Dv,   \
                               mask ? mask + moff[bh] : NULL, mrs, mcs,                  \
                               i0, at_min(AT_BQ, L - i0), S, D, Dv, scale, causal,       \
                               out + (bh * L + i0) * Dv, lse + bh * L + i0, s,           \
                               s + AT_BQ * AT_BK, s + AT_BQ * AT_BK + AT_BQ);            \
        }                                                                                \
        free(s);                                                                         \
    }                                                                                    \
    return fail ? -2 : 0;                                                                \
}                                                                                        \
/* key blocks [kb0, kb1) of one batch-head; dQ (zeroed here) gets this chunk's part */    \
static void ASFX(bwd_chunk_##S_)(const T *Q, const T *K, const T *V, const T *G,         \
                                 const T *M, int64_t mrs, int64_t mcs,                   \
                                 const T *LSE, const T *Di, int64_t L, int64_t S,        \
                                 int64_t D, int64_t Dv, T scale, int causal, int64_t kb0, \
                                 int64_t kb1, T *dQ, T *dK, T *dV, T *p, T *dp) {        \
    memset(dQ, 0, (size_t)(L * D) * sizeof(T));                                          \
    for (int64_t kb = kb0; kb < kb1; kb++) {                                             \
        const int64_t j0 = kb * AT_BK, bk = at_min(AT_BK, S - j0);                       \
        const T *Kb = K + j0 * D, *Vb = V + j0 * Dv;                                     \
        T *dKb = dK + j0 * D, *dVb = dV + j0 * Dv;                                       \
        memset(dKb, 0, (size_t)(bk * D) * sizeof(T));                                    \
        memset(dVb, 0, (size_t)(bk * Dv) * sizeof(T));                                   \
        /* causal: query rows below j0 see none of these keys */                         \
        for (int64_t i0 = causal ? j0 / AT_BQ * AT_BQ : 0; i0 < L; i0 += AT_BQ) {        \
            const int64_t bq = at_min(AT_BQ, L - i0);                                    \
            /* causal: keys past the block's last query are masked for all its rows */   \
            const int64_t nk = causal ? at_min(bk, i0 + bq - j0) : bk;                   \
            if (nk <= 0) continue;                                                       \
            const T *Qb = Q + i0 * D, *Gb = G + i0 * Dv;                                 \
            if (M) ASFX(mask_tile_##S_)(M, mrs, mcs, i0, j0, bq, nk, p);                 \
            GEMM(bq, nk, D, scale, Qb, D, 1, Kb, 1, D, M ? 1 : 0, p, nk, 1, 1);          \
            GEMM(bq, nk, Dv, 1, Gb, Dv, 1, Vb, 1, Dv, 0, dp, nk, 1, 1);                  \
            for (int64_t r = 0; r < bq; r++) {                                           \
                T *pr = p + r * nk, *dpr = dp + r * nk;                                  \
                const T lr = LSE[i0 + r], dr = Di[i0 + r];                               \
                /* a row the mask hid entirely (lse -inf) gets no gradient */            \
                const int64_t nv = lr == -INFINITY ? 0                                   \
                                   : causal ? at_min(nk, i0 + r + 1 - j0) : nk;          \
                int64_t c = 0;                                                           \
                for (; c < nv; c++) {                                                    \
                    T pv = EXPF(pr[c] - lr);                                             \
                    pr[c] = pv;                                                          \
                    dpr[c] = pv * (dpr[c] - dr) * scale;                                 \
                }                                                                        \
                for (; c < nk; c++) { pr[c] = 0; dpr[c] = 0; }                           \
            }                                                                            \
            GEMM(nk, Dv, bq, 1, p, 1, nk, Gb, Dv, 1, 1, dVb, Dv, 1, 1);                  \
            GEMM(nk, D, bq, 1, dp, 1, nk, Qb, D, 1, 1, dKb, D, 1, 1);                    \
            GEMM(bq, D, nk, 1, dp, nk, 1, Kb, D, 1, 1, dQ + i0 * D, D, 1, 1);            \
        }                                                                                \
    }                                                                                    \
}                                                                                        \
static int ASFX(bwd_##S_)(const T *dout, const T *q, const T *k, const T *v, const T *out, \
                          const T *lse, const T *mask, const int64_t *moff, int64_t mrs, \
                          int64_t mcs, int64_t BH, int64_t L, int64_t S, int64_t D,      \
                          int64_t Dv, T scale, int causal, T *dq, T *dk, T *dv, int nt) {  \
    const int64_t nkb = (S + AT_BK - 1) / AT_BK, C = at_chunks(BH, L, S, D);                   \
    /* Di = rowsum(dO o O); the chunks' dQ partials when a batch-head has several */     \
    T *di = (T *)malloc((size_t)(BH * L + (C > 1 ? BH * C * L * D : 0)) * sizeof(T));    \
    if (!di) return -2;                                                                  \
    T *part = di + BH * L;                                                               \
    int fail = 0;                                                                        \
    _Pragma("omp parallel num_threads(nt) if(nt > 1)")                                    \
    {                                                                                    \
        _Pragma("omp for schedule(static)")                                              \
        for (int64_t r = 0; r < BH * L; r++) {                                           \
            const T *g = dout + r * Dv, *o = out + r * Dv;                               \
            T acc = 0;                                                                   \
            for (int64_t e = 0; e < Dv; e++) acc += g[e] * o[e];                         \
            di[r] = acc;                                                                 \
        }                                                                                \
        T *p = (T *)malloc((size_t)(2 * AT_BQ * AT_BK) * sizeof(T));                     \
        if (!p) { _Pragma("omp atomic write") fail = 1; }                                \
        _Pragma("omp for schedule(dynamic, 1)")                                           \
        for (int64_t it = 0; it < BH * C; it++) {                                        \
            if (!p) continue;                                                            \
            const int64_t bh = it / C, c = it % C;                                       \
            T *dQ = C > 1 ? part + (bh * C + c) * L * D : dq + bh * L * D;               \
            ASFX(bwd_chunk_##S_)(q + bh * L * D, k + bh * S * D, v + bh * S * Dv,        \
                                 dout + bh * L * Dv, mask ? mask + moff[bh] : NULL, mrs, \
                                 mcs, lse + bh * L, di + bh * L, L, S, D,                \
                                 Dv, scale, causal, nkb * c / C, nkb * (c + 1) / C, dQ,  \
                                 dk + bh * S * D, dv + bh * S * Dv, p, p + AT_BQ * AT_BK); \
        }                                                                                \
        free(p);                                                                         \
        if (C > 1) {                                                                     \
            _Pragma("omp for schedule(static)")                                          \
            for (int64_t bh = 0; bh < BH; bh++) {                                        \
                T *dQ = dq + bh * L * D;                                                 \
                const T *p0 = part + bh * C * L * D;                                     \
                memcpy(dQ, p0, (size_t)(L * D) * sizeof(T));                             \
                for (int64_t c = 1; c < C; c++) {                                        \
                    const T *pc = p0 + c * L * D;                                        \
                    for (int64_t e = 0; e < L * D; e++) dQ[e] += pc[e];                  \
                }                                                                        \
            }                                                                            \
        }                                                                                \
    }                                                                                    \
    free(di);                                                                            \
    return fail ? -2 : 0;                                                                \
}
DEF_SDPA(f32, float, em_expf, logf, ember_sgemm)
DEF_SDPA(f64, double, exp, log, ember_dgemm)

static int ASFX(sdpa_fwd)(int dtype, const char *q, const char *k, const char *v,
                          const char *mask, const int64_t *moff, int64_t mrs, int64_t mcs,
                          int64_t BH, int64_t L, int64_t S, int64_t D, int64_t Dv,
                          double scale, int causal, char *out, char *lse, int nt) {
    if (dtype == EM_F32)
        return ASFX(fwd_f32)((const float *)q, (const float *)k, (const float *)v,
                             (const float *)mask, moff, mrs, mcs, BH, L, S, D, Dv,
                             (float)scale, causal, (float *)out, (float *)lse, nt);
    if (dtype == EM_F64)
        return ASFX(fwd_f64)((const double *)q, (const double *)k, (const double *)v,
                             (const double *)mask, moff, mrs, mcs, BH, L, S, D, Dv, scale,
                             causal, (double *)out, (double *)lse, nt);
    return -1;
}

static int ASFX(sdpa_bwd)(int dtype, const char *dout, const char *q, const char *k,
                          const char *v, const char *out, const char *lse, const char *mask,
                          const int64_t *moff, int64_t mrs, int64_t mcs, int64_t BH,
                          int64_t L, int64_t S, int64_t D, int64_t Dv, double scale, int causal,
                          char *dq, char *dk, char *dv, int nt) {
    if (dtype == EM_F32)
        return ASFX(bwd_f32)((const float *)dout, (const float *)q, (const float *)k,
                             (const float *)v, (const float *)out, (const float *)lse,
                             (const float *)mask, moff, mrs, mcs, BH, L, S, D, Dv,
                             (float)scale, causal, (float *)dq, (float *)dk, (float *)dv, nt);
    if (dtype == EM_F64)
        return ASFX(bwd_f64)((const double *)dout, (const double *)q, (const double *)k,
                             (const double *)v, (const double *)out, (const double *)lse,
                             (const double *)mask, moff, mrs, mcs, BH, L, S, D, Dv, scale,
                             causal, (double *)dq, (double *)dk, (double *)dv, nt);
    return -1;
}
