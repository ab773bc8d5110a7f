/* igamma / igammac (the regularised incomplete gamma functions) over blocks of up
   to 512 elements, so the common regimes run as vector loops.  special.c's scalar
   sp_igamma_e / sp_igammac_e (SciPy's Cephes igam/igamc) choose per element among
   the power series (DLMF 8.11.4), the continued fraction (8.9.2), the igamc series
   (8.7.3) and Temme's expansion (8.12.3/4); here a scalar pass sorts the block's
   lanes into the first three (taken as in the scalar form, so each lane runs the
   same formula with the same stopping test), each group then iterates as a
   structure of arrays whose inner loop over lanes vectorises, and a lane stops
   updating once its own test passes, so its result does not depend on the other
   lanes of its block (threads and strides give the same bits).  Converged lanes
   leave the arrays as the group shrinks.  Special values, Temme's regime, the
   large-a form of the prefactor and lanes past SPIG_CAP terms take the scalar form.

   Compiled for AVX2 and AVX-512 with FMA (special_isa_avx2.c / _avx512.c); the
   generic table keeps special.c's scalar loops (with SSE2's two lanes and no FMA
   these blocks ran 2.5x slower than them).  special.c provides em_sp_igam_ref, the
   scalar form. */
#ifndef EMBER_SPECIAL_IGAM_IMPL_H
#define EMBER_SPECIAL_IGAM_IMPL_H

#define SPIG_BLOCK 512
#define SPIG_CAP 400         /* terms in the vector loops; slower lanes go scalar */
#define SPIG_EPS64 1.11022302462515654042E-16
#define SPIG_EPS32 1.4551915228366852e-11

double em_sp_igam_ref(int upper, double a, double x, double eps);

/* Boost's Lanczos sum (special.c's lanczos_sum_expg_scaled): ratevl's choice of
   x or 1/x per lane, the coefficient order selected with it */
static inline __attribute__((always_inline)) double spig_lanczos(double x) {
    static const double num[13] = {
        0.006061842346248906525783753964555936883222, 0.5098416655656676188125178644804694509993,
        19.51992788247617482847860966235652136208, 449.9445569063168119446858607650988409623,
        6955.999602515376140356310115515198987526, 75999.29304014542649875303443598909137092,
        601859.6171681098786670226533699352302507, 3481712.15498064590882071018964774556468,
        14605578.08768506808414169982791359218571, 43338889.32467613834773723740590533316085,
        86363131.28813859145546927288977868422342, 103794043.1163445451906271053616070238554,
        56906521.91347156388090791033559122686859};
    static const double den[13] = {1., 66., 1925., 32670., 357423., 2637558., 13339535.,
                                   45995730., 105258076., 150917976., 120543840., 39916800.,
                                   0.};
    int big = fabs(x) > 1;
    double y = big ? 1 / x : x;
    double pn = big ? num[12] : num[0], pd = big ? den[12] : den[0];
    for (int i = 1; i <= 12; i++) {
        pn = pn * y + (big ? num[12 - i] : num[i]);
        pd = pd * y + (big ? den[12 - i] : den[i]);
    }
    return pn / pd;
}

/* x^a e^-x / Gamma(a) as special.c's _igam_helper_fac: for |a - x| > 0.4 a,
   exp(a log x - x - lgamma(a)); otherwise the Lanczos form with a < 200, x < 200
   (the caller sends the rest to the scalar form), where exp(a - x) (x/fac)^a is
   taken as one exp of a - x + a log(x/fac) with the log and the product carried
   in two parts, so only the rounding of x/fac remains, as in pow */
static inline __attribute__((always_inline)) double spig_fac(double a, double x) {
    double ax = a * em_log_d(x) - x - em_lgamma_pos_d(a);
    double far = ax < -7.09782712893383996843E2 ? 0.0 : em_exp_d(ax);
    double fac = a + 6.024680040776729583740234375 - 0.5;
    double res = sqrt(fac / 2.718281828459045) / spig_lanczos(a);
    double q = x / fac;
    double fe, hf, sr, f = em_log_core_d(q, &fe, &hf, &sr);
    /* log q = fe ln2 + f - f^2/2 + sr, with f^2/2 exact in two parts */
    double hfl = 0.5 * em_prod_err_d(f, f, 2.0 * hf);
    double l1 = fe * 6.93147180369123816490e-01;
    double s1 = l1 + f, e1 = em_twosum_err(l1, f, s1);
    double s2 = s1 - hf, e2 = em_twosum_err(s1, -hf, s2);
    double lh = s2, ll = ((e1 + e2) + (sr - hfl)) + fe * 1.90821492927058770002e-10;
    double ph = a * lh, pl = em_prod_err_d(a, lh, ph) + a * ll;
    double d = a - x;                                   /* exact where it is used */
    double h = d + ph, hl = em_twosum_err(d, ph, h) + pl;
    h = h > 700.0 ? 700.0 : (h < -700.0 ? -700.0 : h);
    int64_t n;
    double el, e = em_exp_q_d(h, hl, &n, &el);
    double near = res * em_ldexp_d(1.0 + (e + el), n);
    return fabs(a - x) > 0.4 * fabs(a) ? far : near;
}

/* lane kinds: the formula, and (bit 2) whether the result is 1 minus it */
enum { SPIG_SCALAR, SPIG_SER, SPIG_CF, SPIG_CSER };

/* the scalar forms' choice (sp_igamma_e / sp_igammac_e) for one lane, branch-free
   (the regimes interleave at random in typical inputs) */
static inline __attribute__((always_inline)) double spig_kind(double a, double x, int upper) {
    double r = fabs(x - a) / a;
    /* igamma: 1 - igammac for x > 1, x > a, where igammac takes the continued
       fraction past 1.1 and the igamc series below (x < a and 1.1 x < a fail) */
    double big = x > 1.0 ? (x > a ? 4.0 : 0.0) : 0.0;
    double kl = big != 0.0 ? (x > 1.1 ? SPIG_CF : SPIG_CSER) : SPIG_SER;
    /* igammac: 1 - the igam series where x < a past 1.1, and below it where
       a > -0.4 / log x (x <= 1/2) or a > 1.1 x */
    double lo = x <= 0.5 ? -0.4 / em_log_d(x) : x * 1.1;
    double s1 = x < a ? 4.0 : 0.0, s2 = lo < a ? 4.0 : 0.0;
    double ser = x > 1.1 ? s1 : s2;
    double ku = ser != 0.0 ? SPIG_SER : (x > 1.1 ? SPIG_CF : SPIG_CSER);
    double k = upper ? ku + ser : kl + big;
    /* the prefactor's large-argument Lanczos form is left to the scalar code (the
       flags are doubles multiplied, so the loop vectorises) */
    double cser = k == SPIG_CSER ? 1.0 : (k == SPIG_CSER + 4 ? 1.0 : 0.0);
    double lanc = fabs(a - x) > 0.4 * a ? 0.0 : 1.0;
    double large = a >= 200.0 ? 1.0 : (x >= 200.0 ? 1.0 : 0.0);
    double lz = (1.0 - cser) * lanc * large;
    double tm1 = (a > 20.0 ? 1.0 : 0.0) * (a < 200.0 ? 1.0 : 0.0) * (r < 0.3 ? 1.0 : 0.0);
    double tm2 = (a > 200.0 ? 1.0 : 0.0) * (r < 4.5 / sqrt(a) ? 1.0 : 0.0);
    double ok = (x > 0 ? 1.0 : 0.0) * (a > 0 ? 1.0 : 0.0) * (x < INFINITY ? 1.0 : 0.0) *
                (a < INFINITY ? 1.0 : 0.0);
    return ok * (1.0 - tm1) * (1.0 - tm2) * (1.0 - lz) != 0.0 ? k : SPIG_SCALAR;
}

/* one group's state, structure of arrays */
typedef struct {
    double a[SPIG_BLOCK], x[SPIG_BLOCK], p[SPIG_BLOCK], s0[SPIG_BLOCK], s1[SPIG_BLOCK],
        s2[SPIG_BLOCK], s3[SPIG_BLOCK], s4[SPIG_BLOCK], s5[SPIG_BLOCK], s6[SPIG_BLOCK],
        s7[SPIG_BLOCK], act[SPIG_BLOCK];
    int id[SPIG_BLOCK], flip[SPIG_BLOCK];
} spig_group;

/* past SPIG_CAP terms: lanes still running go to the scalar form, the others
   keep their value (DONE) */
#define SPIG_CAPPED(G, M, OUT, UPPER, EPS, DONE)                                       \
    for (int j = 0; j < (M); j++) {                                                    \
        if ((G)->act[j] != 0.0)                                                        \
            (OUT)[(G)->id[j]] = em_sp_igam_ref(UPPER, (G)->a[j], (G)->x[j], EPS);      \
        else                                                                           \
            DONE(j);                                                                   \
    }

/* once fewer than two thirds of the M lanes still run: keep lanes with act != 0
   (first NS state arrays), handing the others to DONE; branch-free (lanes finish at
   random): every lane is written at the next free place and DONE runs on all, the
   running lanes' results being overwritten later */
#define SPIG_SQUEEZE(G, M, NS, DONE)                                                   \
    do {                                                                               \
        int left_ = 0;                                                                 \
        for (int j = 0; j < (M); j++) left_ += (G)->act[j] != 0.0;                     \
        if (left_ * 3 >= (M) * 2) break;                                               \
        double *st_[8] = {(G)->s0, (G)->s1, (G)->s2, (G)->s3, (G)->s4, (G)->s5, (G)->s6, \
                          (G)->s7};                                                    \
        int k_ = 0;                                                                    \
        for (int j = 0; j < (M); j++) {                                                \
            DONE(j);                                                                   \
            (G)->a[k_] = (G)->a[j]; (G)->x[k_] = (G)->x[j]; (G)->p[k_] = (G)->p[j];     \
            (G)->id[k_] = (G)->id[j]; (G)->flip[k_] = (G)->flip[j];                     \
            (G)->act[k_] = (G)->act[j];                                                \
            for (int q_ = 0; q_ < (NS); q_++) st_[q_][k_] = st_[q_][j];                \
            k_ += (G)->act[j] != 0.0;                                                  \
        }                                                                              \
        (M) = k_;                                                                      \
    } while (0)

static inline double spig_out(double v, int flip) { return flip ? 1.0 - v : v; }

/* DLMF 8.11.4: ans = sum x^k / ((a+1)...(a+k)), result ans p / a; state r, c, ans */
static void spig_run_ser(spig_group *g, int m, double eps, double *out, int upper) {
    for (int i = 0; i < m; i++) {
        g->p[i] = spig_fac(g->a[i], g->x[i]);
        g->s0[i] = g->a[i];
        g->s1[i] = 1.0;
        g->s2[i] = 1.0;
        g->act[i] = 1.0;
    }
#define SPIG_SER_DONE(j) out[g->id[j]] = spig_out(g->s2[j] * g->p[j] / g->a[j], g->flip[j])
    for (int it = 0; m > 0; it += 8) {
        if (it >= SPIG_CAP) {
            SPIG_CAPPED(g, m, out, upper, eps, SPIG_SER_DONE);
            return;
        }
        {
            /* eight terms per pass with the state in registers */
            double *restrict r = g->s0, *restrict c = g->s1, *restrict ans = g->s2,
                   *restrict act = g->act;
            const double *restrict x = g->x;
            for (int i = 0; i < m; i++) {
                double ri = r[i], ci = c[i], ai = ans[i], w = act[i], xi = x[i];
#pragma GCC unroll 4
                for (int k = 0; k < 4; k++) {
                    /* two terms per division: 1 / ((r + 1)(r + 2)); each term keeps
                       its own stopping test */
                    double r1 = ri + 1.0, r2 = ri + 2.0, d = 1.0 / (r1 * r2);
                    double t1 = ci * xi * (r2 * d), a1 = ai + t1;
                    double t2 = t1 * xi * (r1 * d), a2 = a1 + t2;
                    int on = w != 0.0, one = t1 <= eps * a1;
                    double go = t2 <= eps * a2 ? 0.0 : 1.0;
                    ri = on ? (one ? r1 : r2) : ri;
                    ci = on ? (one ? t1 : t2) : ci;
                    ai = on ? (one ? a1 : a2) : ai;
                    w = on ? (one ? 0.0 : go) : 0.0;
                }
                r[i] = ri;
                c[i] = ci;
                ans[i] = ai;
                act[i] = w;
            }
        }
        SPIG_SQUEEZE(g, m, 3, SPIG_SER_DONE);
    }
#undef SPIG_SER_DONE
}

/* DLMF 8.9.2, Cephes' recurrence with its rescaling; result pkm1 / qkm1 p at the
   step whose quotient passes the test.  State: y, z, c, pkm1, pkm2, qkm1, qkm2 */
static void spig_run_cf(spig_group *g, int m, double eps, double *out, int upper) {
    for (int i = 0; i < m; i++) {
        double x = g->x[i], y = 1.0 - g->a[i], z = x + y + 1.0;
        g->p[i] = spig_fac(g->a[i], x);
        g->s0[i] = y;
        g->s1[i] = z;
        g->s2[i] = 0.0;
        g->s3[i] = x + 1.0;
        g->s4[i] = 1.0;
        g->s5[i] = z * x;
        g->s6[i] = x;
        g->act[i] = 1.0;
    }
#define SPIG_CF_DONE(j) out[g->id[j]] = spig_out(g->s3[j] / g->s5[j] * g->p[j], g->flip[j])
    for (int it = 0; m > 0; it += 8) {
        if (it >= SPIG_CAP) {
            SPIG_CAPPED(g, m, out, upper, eps, SPIG_CF_DONE);
            return;
        }
        {
            double *restrict y = g->s0, *restrict z = g->s1, *restrict c = g->s2,
                   *restrict pkm1 = g->s3, *restrict pkm2 = g->s4, *restrict qkm1 = g->s5,
                   *restrict qkm2 = g->s6, *restrict act = g->act;
            for (int i = 0; i < m; i++) {
                double w = act[i], c0 = c[i], y0 = y[i], z0 = z[i];
                double p1 = pkm1[i], p2 = pkm2[i], q1 = qkm1[i], q2 = qkm2[i];
#pragma GCC unroll 8
                for (int k = 0; k < 8; k++) {
                    double cn = c0 + 1.0, yn = y0 + 1.0, zn = z0 + 2.0, yc = yn * cn;
                    /* fused: the recurrence cancels, and over tens of steps the
                       unfused roundings cost tens of ulps */
                    double pk = EM_MAD(p1, zn, -(p2 * yc));
                    double qk = EM_MAD(q1, zn, -(q2 * yc));
                    /* the scalar form's test |pk/qk - ans| <= eps |pk/qk|, ans being
                       the last quotient, without divisions: multiplied through by
                       |qk qkm1| (the last quotient is pkm1 / qkm1, qk = 0 runs on) */
                    double u = pk * q1, v = p1 * qk;
                    double go = qk != 0.0 ? (fabs(u - v) <= eps * fabs(u) ? 0.0 : 1.0) : 1.0;
                    double f = fabs(pk) > 4.503599627370496e15 ? 2.22044604925031308085e-16 : 1.0;
                    int on = w != 0.0;
                    c0 = on ? cn : c0;
                    y0 = on ? yn : y0;
                    z0 = on ? zn : z0;
                    double np2 = p1 * f, np1 = pk * f, nq2 = q1 * f, nq1 = qk * f;
                    p2 = on ? np2 : p2;
                    p1 = on ? np1 : p1;
                    q2 = on ? nq2 : q2;
                    q1 = on ? nq1 : q1;
                    w = on ? go : 0.0;
                }
                c[i] = c0;
                y[i] = y0;
                z[i] = z0;
                pkm1[i] = p1;
                pkm2[i] = p2;
                qkm1[i] = q1;
                qkm2[i] = q2;
                act[i] = w;
            }
        }
        SPIG_SQUEEZE(g, m, 7, SPIG_CF_DONE);
    }
#undef SPIG_CF_DONE
}

/* DLMF 8.7.3: sum (-x)^n / (n! (a + n)), then -expm1(a log x - lgamma(1 + a))
   - exp(a log x - lgamma(a)) sum; state n, fac, sum, term */
static void spig_run_cser(spig_group *g, int m, double eps, double *out, int upper) {
    for (int i = 0; i < m; i++) {
        double a = g->a[i], lx = em_log_d(g->x[i]);
        g->s3[i] = -em_expm1_vd(a * lx - em_lgamma_pos_d(1 + a));
        g->p[i] = em_exp_d(a * lx - em_lgamma_pos_d(a));
        g->s0[i] = 0.0;
        g->s1[i] = 1.0;
        g->s2[i] = 0.0;
        g->act[i] = 1.0;
    }
#define SPIG_CSER_DONE(j) out[g->id[j]] = spig_out(g->s3[j] - g->p[j] * g->s2[j], g->flip[j])
    for (int it = 0; m > 0; it += 8) {
        if (it >= SPIG_CAP) {
            SPIG_CAPPED(g, m, out, upper, eps, SPIG_CSER_DONE);
            return;
        }
        {
            double *restrict nn = g->s0, *restrict fac = g->s1, *restrict sum = g->s2,
                   *restrict act = g->act;
            const double *restrict x = g->x, *restrict a = g->a;
            for (int i = 0; i < m; i++) {
                double w = act[i], n0 = nn[i], f0 = fac[i], s0 = sum[i], xi = x[i], ai = a[i];
#pragma GCC unroll 8
                for (int k = 0; k < 8; k++) {
                    /* one division for both quotients: 1 / (n (a + n)) */
                    double n1 = n0 + 1.0, an1 = ai + n1, v = f0 * -xi, d = 1.0 / (n1 * an1);
                    double f = v * an1 * d, t = v * d;
                    double sn = s0 + t;
                    int on = w != 0.0;
                    n0 = on ? n1 : n0;
                    f0 = on ? f : f0;
                    s0 = on ? sn : s0;
                    double go = fabs(t) <= eps * fabs(sn) ? 0.0 : 1.0;
                    w = on ? go : 0.0;
                }
                nn[i] = n0;
                fac[i] = f0;
                sum[i] = s0;
                act[i] = w;
            }
        }
        SPIG_SQUEEZE(g, m, 4, SPIG_CSER_DONE);
    }
#undef SPIG_CSER_DONE
}

/* out[i] = igamma (upper = 0) or igammac (1) of a[i], x[i] for n <= SPIG_BLOCK */
static __attribute__((noinline)) void spig_block(const double *a, const double *x, double *out, int n, int upper,
                       double eps) {
    spig_group g;
    double code[SPIG_BLOCK];
    int ids[4][SPIG_BLOCK], cnt[4] = {0, 0, 0, 0};
    for (int i = 0; i < n; i++) code[i] = spig_kind(a[i], x[i], upper);
    /* lists per kind without branches: every list is written, one count moves */
    for (int i = 0; i < n; i++) {
        int c = (int)code[i], k = c & 3;
        ids[0][cnt[0]] = i;
        ids[1][cnt[1]] = i;
        ids[2][cnt[2]] = i;
        ids[3][cnt[3]] = i;
        cnt[0] += k == 0;
        cnt[1] += k == 1;
        cnt[2] += k == 2;
        cnt[3] += k == 3;
    }
    for (int j = 0; j < cnt[0]; j++)
        out[ids[0][j]] = em_sp_igam_ref(upper, a[ids[0][j]], x[ids[0][j]], eps);
    for (int k = 1; k < 4; k++) {
        int m = cnt[k];
        if (!m) continue;
        for (int j = 0; j < m; j++) {
            int i = ids[k][j];
            g.id[j] = i;
            g.flip[j] = (int)code[i] >> 2;
            g.a[j] = a[i];
            g.x[j] = x[i];
        }
        if (k == SPIG_SER) spig_run_ser(&g, m, eps, out, upper);
        else if (k == SPIG_CF) spig_run_cf(&g, m, eps, out, upper);
        else spig_run_cser(&g, m, eps, out, upper);
    }
}

/* the loops: elements gathered into blocks (strided rows too, so they give the
   contiguous loop's bits), float32 evaluated in double with the shorter series */
#define SPIG_LOOP(ATTR, NAME, T, UPPER, EPS)                                           \
    ATTR void NAME(char **p, const int64_t *s, int64_t n, const void *aux) {            \
        double A[SPIG_BLOCK], X[SPIG_BLOCK], R[SPIG_BLOCK];                            \
        (void)aux;                                                                     \
        for (int64_t b0 = 0; b0 < n; b0 += SPIG_BLOCK) {                               \
            int m = (int)(n - b0 < SPIG_BLOCK ? n - b0 : SPIG_BLOCK);                  \
            const char *pa = p[1] + b0 * s[1], *px = p[2] + b0 * s[2];                 \
            for (int i = 0; i < m; i++) {                                              \
                A[i] = *(const T *)(pa + i * s[1]);                                    \
                X[i] = *(const T *)(px + i * s[2]);                                    \
            }                                                                          \
            spig_block(A, X, R, m, UPPER, EPS);                                        \
            char *po = p[0] + b0 * s[0];                                               \
            for (int i = 0; i < m; i++) *(T *)(po + i * s[0]) = (T)R[i];               \
        }                                                                              \
    }
#define SPIG_LOOPS(ATTR, SFX)                                                          \
    SPIG_LOOP(ATTR, em_spig_igamma_f64##SFX, double, 0, SPIG_EPS64)                    \
    SPIG_LOOP(ATTR, em_spig_igamma_f32##SFX, float, 0, SPIG_EPS32)                     \
    SPIG_LOOP(ATTR, em_spig_igammac_f64##SFX, double, 1, SPIG_EPS64)                   \
    SPIG_LOOP(ATTR, em_spig_igammac_f32##SFX, float, 1, SPIG_EPS32)

#endif
