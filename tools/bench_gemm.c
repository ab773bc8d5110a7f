/* Standalone GEMM harness: correctness against a naive triple loop (odd sizes,
   transposed / sliced strides, alpha/beta, every ISA this CPU has, batched)
   and GFLOP/s for square float32 sizes at 1 and 2 threads.

   gcc -std=c11 -O3 -fopenmp -fno-math-errno -fno-trapping-math -Isrc_c/include \
       -DEMBER_GEMM_TUNE tools/bench_gemm.c src_c/gemm.c src_c/gemm_generic.c \
       src_c/gemm_avx2.c src_c/gemm_avx512.c src_c/cpu.c -lm -o /tmp/bench_gemm
   /tmp/bench_gemm check | bench [sizes...] | dbench [sizes...] | bmm
   /tmp/bench_gemm shape M N K ta tb [...]   (float32, one shape, 1 and 2 threads)
   env: EG_MC / EG_KC / EG_NC override the cache blocking (elements). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ember_gemm.h"

int eg_tune_mc, eg_tune_kc, eg_tune_nc;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}
static uint64_t rng = 88172645463325252ull;
static double urand(void) {
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

/* one check: layouts ta/tb/tc (0 row-major, 1 transposed), pad = extra leading dim */
static int check_one(int dbl, int64_t M, int64_t N, int64_t K, int ta, int tb, int tc, int pad,
                     double alpha, double beta, int nt) {
    int64_t lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = (tc ? M : N) + pad;
    int64_t rsa = ta ? 1 : lda, csa = ta ? lda : 1;
    int64_t rsb = tb ? 1 : ldb, csb = tb ? ldb : 1;
    int64_t rsc = tc ? 1 : ldc, csc = tc ? ldc : 1;
    int64_t na = (ta ? K : M) * lda + 1, nb = (tb ? N : K) * ldb + 1, nc = (tc ? N : M) * ldc + 1;
    double *a = malloc(na * 8), *b = malloc(nb * 8), *c = malloc(nc * 8), *ref = malloc(nc * 8);
    for (int64_t i = 0; i < na; i++) a[i] = urand();
    for (int64_t i = 0; i < nb; i++) b[i] = urand();
    for (int64_t i = 0; i < nc; i++) c[i] = beta == 0 ? NAN : urand();
    memcpy(ref, c, nc * 8);
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = 0;
            for (int64_t k = 0; k < K; k++) s += a[i * rsa + k * csa] * b[k * rsb + j * csb];
            double *r = ref + i * rsc + j * csc;
            *r = alpha * s + (beta == 0 ? 0 : beta * *r);
        }
    double err = 0;
    if (dbl) {
        ember_dgemm(M, N, K, alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc, csc, nt);
        for (int64_t i = 0; i < nc; i++) err = fmax(err, fabs(c[i] - ref[i]) / (1 + fabs(ref[i])));
        if (isnan(err)) err = 1e9;
        for (int64_t i = 0; i < nc; i++) if (isnan(c[i]) != isnan(ref[i])) err = 1e9;
    } else {
        float *af = malloc(na * 4), *bf = malloc(nb * 4), *cf = malloc(nc * 4);
        for (int64_t i = 0; i < na; i++) af[i] = (float)a[i];
        for (int64_t i = 0; i < nb; i++) bf[i] = (float)b[i];
        for (int64_t i = 0; i < nc; i++) cf[i] = (float)c[i];
        ember_sgemm(M, N, K, (float)alpha, af, rsa, csa, bf, rsb, csb, (float)beta, cf, rsc, csc, nt);
        for (int64_t i = 0; i < nc; i++) {
            if (isnan(cf[i]) != isnan(ref[i])) err = 1e9;
            else if (!isnan(ref[i])) err = fmax(err, fabs(cf[i] - ref[i]) / (1 + fabs(ref[i])));
        }
        free(af); free(bf); free(cf);
    }
    double tol = (dbl ? 1e-13 : 2e-6) * sqrt((double)K + 1) * 4;
    free(a); free(b); free(c); free(ref);
    if (!(err <= tol)) {
        printf("FAIL %s M=%ld N=%ld K=%ld ta=%d tb=%d tc=%d pad=%d alpha=%g beta=%g nt=%d err=%g\n",
               dbl ? "d" : "s", (long)M, (long)N, (long)K, ta, tb, tc, pad, alpha, beta, nt, err);
        return 1;
    }
    return 0;
}

static int check_batched(int dbl, int isa) {
    int64_t bt = 7, M = 13, N = 21, K = 17;
    int fails = 0;
    for (int bcast = 0; bcast < 2; bcast++) {
        double *a = malloc(bt * M * K * 8), *b = malloc(bt * K * N * 8), *c = malloc(bt * M * N * 8), *ref = malloc(bt * M * N * 8);
        for (int64_t i = 0; i < bt * M * K; i++) a[i] = urand();
        for (int64_t i = 0; i < bt * K * N; i++) b[i] = urand();
        int64_t bsb = bcast ? 0 : K * N;
        for (int64_t p = 0; p < bt; p++)
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++) {
                    double s = 0;
                    for (int64_t k = 0; k < K; k++) s += a[p * M * K + i * K + k] * b[p * bsb + k * N + j];
                    ref[p * M * N + i * N + j] = s;
                }
        double err = 0;
        for (int nt = 1; nt <= 2; nt++) {
            if (dbl) {
                ember_dgemm_batched(bt, M, N, K, 1.0, a, K, 1, b, N, 1, 0.0, c, N, 1, M * K, bsb, M * N, nt);
                for (int64_t i = 0; i < bt * M * N; i++) err = fmax(err, fabs(c[i] - ref[i]));
            } else {
                float *af = malloc(bt * M * K * 4), *bf = malloc(bt * K * N * 4), *cf = malloc(bt * M * N * 4);
                for (int64_t i = 0; i < bt * M * K; i++) af[i] = a[i];
                for (int64_t i = 0; i < bt * K * N; i++) bf[i] = b[i];
                ember_sgemm_batched(bt, M, N, K, 1.f, af, K, 1, bf, N, 1, 0.f, cf, N, 1, M * K, bsb, M * N, nt);
                for (int64_t i = 0; i < bt * M * N; i++) err = fmax(err, fabs(cf[i] - ref[i]));
                free(af); free(bf); free(cf);
            }
        }
        if (!(err < (dbl ? 1e-12 : 1e-4))) { printf("FAIL batched isa=%d dbl=%d bcast=%d err=%g\n", isa, dbl, bcast, err); fails++; }
        free(a); free(b); free(c); free(ref);
    }
    return fails;
}

/* offset t of a table made of runs of L consecutive elements separated by gaps of g */
static int64_t run_idx(int64_t t, int64_t L, int64_t g) { return t / L * (L + g) + t % L; }

/* descriptor operands (ember_?gemm_ex): each of A and B is read through a row
   and/or column offset table or plain strides, chosen by `mode` bits */
static int check_tables(int dbl, int64_t M, int64_t N, int64_t K, int mode, int tc, int nt) {
    int64_t L = 1 + (int64_t)((urand() + 1) * 8), g = (int64_t)((urand() + 1) * 3);
    int64_t *roa = malloc((M + 1) * 8), *coa = malloc((K + 1) * 8);
    int64_t *rob = malloc((K + 1) * 8), *cob = malloc((N + 1) * 8);
    int64_t ka = run_idx(K, L, g) + 1, nb_ = run_idx(N, L, g) + 1;
    for (int64_t r = 0; r < M; r++) roa[r] = r * ka;
    for (int64_t c = 0; c < K; c++) coa[c] = run_idx(c, L, g);
    for (int64_t r = 0; r < K; r++) rob[r] = r * nb_;
    for (int64_t c = 0; c < N; c++) cob[c] = run_idx(c, L, g);
    int64_t na = (M + 1) * ka, nbb = (K + 1) * nb_;
    if (mode & 64) {
        /* B transposed the implicit-im2col way: rows in runs, columns far apart */
        for (int64_t r = 0; r < K; r++) rob[r] = run_idx(r, L, g);
        for (int64_t c = 0; c < N; c++) cob[c] = c * ka;
        nbb = (N + 1) * ka;
    }
    double *a = malloc(na * 8), *b = malloc(nbb * 8), *ref = malloc((M * N + 1) * 8);
    for (int64_t i = 0; i < na; i++) a[i] = urand();
    for (int64_t i = 0; i < nbb; i++) b[i] = urand();
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = 0;
            for (int64_t k = 0; k < K; k++) s += a[roa[i] + coa[k]] * b[rob[k] + cob[j]];
            ref[i * N + j] = s;
        }
    /* mode bit 0: A row table, 1: A column table, 2: B row table, 3: B column table
       (bits 4, 5: biases, below);
       a table left out is replaced by the equivalent stride where one exists */
    const int64_t *ra = mode & 1 ? roa : NULL, *ca = mode & 2 ? coa : NULL;
    const int64_t *rb = mode & 4 ? rob : NULL, *cb = mode & 8 ? cob : NULL;
    if (!ca) for (int64_t c = 0; c < K; c++) coa[c] = c;
    if (!cb) for (int64_t c = 0; c < N; c++) cob[c] = mode & 64 ? c * ka : c;
    const int64_t rsb = mode & 64 ? 1 : nb_;
    if (!rb) for (int64_t r = 0; r < K; r++) rob[r] = r * rsb;
    if (!ca || !cb || !rb) {  /* recompute the reference with the dense columns */
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double s = 0;
                for (int64_t k = 0; k < K; k++) s += a[roa[i] + coa[k]] * b[rob[k] + cob[j]];
                ref[i * N + j] = s;
            }
    }
    /* fused biases: per row (mode bit 4) and per column (bit 5) */
    double *br = malloc((M + 1) * 8), *bc = malloc((N + 1) * 8);
    for (int64_t i = 0; i < M; i++) br[i] = mode & 16 ? urand() : 0;
    for (int64_t j = 0; j < N; j++) bc[j] = mode & 32 ? urand() : 0;
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) ref[i * N + j] += br[i] + bc[j];
    float *brf = malloc((M + 1) * 4), *bcf = malloc((N + 1) * 4);
    for (int64_t i = 0; i < M; i++) brf[i] = (float)br[i];
    for (int64_t j = 0; j < N; j++) bcf[j] = (float)bc[j];
    double err = 0;
    int64_t rsc = tc ? 1 : N, csc = tc ? M : 1;
    if (dbl) {
        double *c = malloc((M * N + 1) * 8);
        ember_dmat A = {a, ka, 1, ra, ca}, B = {b, rsb, mode & 64 ? ka : 1, rb, cb};
        ember_dgemm_ex(M, N, K, 1.0, &A, &B, 0.0, c, rsc, csc, mode & 16 ? br : NULL,
                       mode & 32 ? bc : NULL, nt);
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++)
                err = fmax(err, fabs(c[i * rsc + j * csc] - ref[i * N + j]));
        free(c);
    } else {
        float *af = malloc(na * 4), *bf = malloc(nbb * 4), *c = malloc((M * N + 1) * 4);
        for (int64_t i = 0; i < na; i++) af[i] = (float)a[i];
        for (int64_t i = 0; i < nbb; i++) bf[i] = (float)b[i];
        ember_smat A = {af, ka, 1, ra, ca}, B = {bf, rsb, mode & 64 ? ka : 1, rb, cb};
        ember_sgemm_ex(M, N, K, 1.f, &A, &B, 0.f, c, rsc, csc, mode & 16 ? brf : NULL,
                       mode & 32 ? bcf : NULL, nt);
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++)
                err = fmax(err, fabs(c[i * rsc + j * csc] - ref[i * N + j]));
        free(af); free(bf); free(c);
    }
    free(roa); free(coa); free(rob); free(cob); free(a); free(b); free(ref);
    free(br); free(bc); free(brf); free(bcf);
    double tol = (dbl ? 1e-12 : 1e-5) * sqrt((double)K + 1) * 4;
    if (!(err <= tol)) {
        printf("FAIL tables %s M=%ld N=%ld K=%ld mode=%d tc=%d L=%ld g=%ld err=%g\n",
               dbl ? "d" : "s", (long)M, (long)N, (long)K, mode, tc, (long)L, (long)g, err);
        return 1;
    }
    return 0;
}

/* ember_sgemm_epi: the epilogue sees every element of C exactly once, after the
   bias and the last K block (C transposed too: the whole-matrix path) */
typedef struct { float *c; int64_t rsc, csc; int *seen; } epi_ctx;
static void epi_count(float *c, int64_t rsc, int64_t csc, int64_t i0, int64_t j0, int64_t m,
                      int64_t n, void *ctx) {
    epi_ctx *e = ctx;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            float *p = c + i * rsc + j * csc;
            if (p != e->c + (i0 + i) * e->rsc + (j0 + j) * e->csc) __atomic_fetch_add(e->seen, 1 << 20, __ATOMIC_RELAXED);
            *p = *p * 2.0f + 1.0f;
            __atomic_fetch_add(e->seen + 1 + (i0 + i) * 1000 + (j0 + j), 1, __ATOMIC_RELAXED);
        }
}

static int check_epi(int64_t M, int64_t N, int64_t K, int tc, int nt) {
    float *a = malloc((M * K + 1) * 4), *b = malloc((K * N + 1) * 4), *bc = malloc((N + 1) * 4);
    float *c = malloc((M * N + 1) * 4), *ref = malloc((M * N + 1) * 4);
    int *seen = calloc(1 + 1000 * 1000, sizeof(int));
    for (int64_t i = 0; i < M * K; i++) a[i] = urand();
    for (int64_t i = 0; i < K * N; i++) b[i] = urand();
    for (int64_t i = 0; i < N; i++) bc[i] = urand();
    int64_t rsc = tc ? 1 : N, csc = tc ? M : 1;
    ember_smat A = {a, K, 1, NULL, NULL}, B = {b, N, 1, NULL, NULL};
    ember_sgemm_ex(M, N, K, 1.f, &A, &B, 0.f, ref, rsc, csc, NULL, bc, nt);
    epi_ctx e = {c, rsc, csc, seen};
    ember_sgemm_epi(M, N, K, 1.f, &A, &B, 0.f, c, rsc, csc, NULL, bc, epi_count, &e, nt);
    int bad = seen[0] != 0;
    for (int64_t i = 0; i < M && !bad; i++)
        for (int64_t j = 0; j < N && !bad; j++)
            bad = seen[1 + i * 1000 + j] != 1 ||
                  c[i * rsc + j * csc] != ref[i * rsc + j * csc] * 2.0f + 1.0f;
    if (bad) printf("FAIL epilogue M=%ld N=%ld K=%ld tc=%d nt=%d\n", (long)M, (long)N, (long)K,
                    tc, nt);
    free(a); free(b); free(bc); free(c); free(ref); free(seen);
    return bad;
}

/* 1 and 2 threads give the same bits (fixed blocking): float32, A / B / C each
   row-major or transposed */
static int check_threads(int64_t M, int64_t N, int64_t K, int ta, int tb, int tc, float beta) {
    int64_t rsa = ta ? 1 : K, csa = ta ? M : 1, rsb = tb ? 1 : N, csb = tb ? K : 1;
    int64_t rsc = tc ? 1 : N, csc = tc ? M : 1;
    float *a = malloc((M * K + 1) * 4), *b = malloc((K * N + 1) * 4);
    float *c1 = malloc((M * N + 1) * 4), *c2 = malloc((M * N + 1) * 4);
    for (int64_t i = 0; i < M * K; i++) a[i] = urand();
    for (int64_t i = 0; i < K * N; i++) b[i] = urand();
    for (int64_t i = 0; i < M * N; i++) c1[i] = c2[i] = urand();
    ember_sgemm(M, N, K, 1.f, a, rsa, csa, b, rsb, csb, beta, c1, rsc, csc, 1);
    ember_sgemm(M, N, K, 1.f, a, rsa, csa, b, rsb, csb, beta, c2, rsc, csc, 2);
    int bad = memcmp(c1, c2, M * N * 4) != 0;
    if (bad) printf("FAIL threads M=%ld N=%ld K=%ld ta=%d tb=%d tc=%d beta=%g: 1 and 2 threads "
                    "differ\n", (long)M, (long)N, (long)K, ta, tb, tc, beta);
    free(a); free(b); free(c1); free(c2);
    return bad;
}

static int run_checks(void) {
    int hw = ember_gemm_set_isa(-1), fails = 0, count = 0;
    int64_t sizes[] = {0, 1, 2, 3, 5, 7, 8, 13, 16, 17, 31, 33, 47, 64, 95, 130};
    int ns = sizeof sizes / sizeof *sizes;
    for (int isa = 0; isa <= hw; isa++) {
        ember_gemm_set_isa(isa);
        for (int dbl = 0; dbl < 2; dbl++) {
            for (int t = 0; t < 400; t++) {
                int64_t M = sizes[(rng >> 3) % ns]; urand();
                int64_t N = sizes[(rng >> 3) % ns]; urand();
                int64_t K = sizes[(rng >> 3) % ns]; urand();
                int ta = urand() > 0, tb = urand() > 0, tc = urand() > 0, pad = urand() > 0 ? 3 : 0;
                double alpha = t % 3 == 0 ? 1.0 : 0.7, beta = t % 4 == 0 ? 0.0 : t % 4 == 1 ? 1.0 : -0.5;
                fails += check_one(dbl, M, N, K, ta, tb, tc, pad, alpha, beta, 1 + (t & 1));
                count++;
            }
            /* larger: cross the cache blocks (K > KC, M > MC, N > NR*...) */
            int64_t big[][3] = {{333, 517, 701}, {1, 600, 900}, {600, 1, 900}, {700, 9, 1200}, {5, 900, 333}};
            for (int t = 0; t < 5; t++)
                for (int v = 0; v < 4; v++) {
                    fails += check_one(dbl, big[t][0], big[t][1], big[t][2], v & 1, v >> 1, t & 1, 1,
                                       1.0, v == 3 ? 0.5 : 0.0, 2);
                    count++;
                }
            fails += check_batched(dbl, isa);
            if (!dbl) {
                int64_t epi[][3] = {{0, 5, 3}, {3, 4, 0}, {2, 3, 4}, {1, 300, 70}, {300, 1, 70},
                                    {37, 53, 29}, {130, 97, 400}, {333, 517, 701},
                                    {100, 10, 64}, {7, 300, 50}};
                for (int t = 0; t < 10; t++)
                    for (int v = 0; v < 4; v++) {
                        fails += check_epi(epi[t][0], epi[t][1], epi[t][2], v & 1, 1 + (v >> 1));
                        count++;
                    }
            }
            if (!dbl) {
                /* the narrow kernel (N <= one vector; its rows split over threads when
                   large), the transposing packs, the blocked path across K blocks */
                int64_t thr[][3] = {{64, 10, 256}, {600, 10, 700}, {999, 16, 333},
                                    {513, 3, 1201}, {10, 777, 400}, {64, 256, 784},
                                    {333, 517, 701}, {130, 97, 400}, {257, 33, 1000}};
                for (int t = 0; t < 9; t++)
                    for (int v = 0; v < 8; v++) {
                        fails += check_threads(thr[t][0], thr[t][1], thr[t][2], v & 1,
                                               (v >> 1) & 1, v >> 2, v == 5 ? 0.5f : 0.f);
                        count++;
                    }
                /* narrow shapes against the reference: N up to one vector, odd M and
                   K, every layout, alpha / beta, 1 and 2 threads */
                int64_t nw[][3] = {{64, 10, 256}, {65, 16, 255}, {700, 9, 300}, {3, 5, 200},
                                   {17, 15, 7}, {1000, 2, 129}};
                for (int t = 0; t < 6; t++)
                    for (int v = 0; v < 16; v++) {
                        fails += check_one(0, nw[t][0], nw[t][1], nw[t][2], v & 1, (v >> 1) & 1,
                                           (v >> 2) & 1, (v >> 3) ? 3 : 0, v % 3 ? 1.0 : 0.7,
                                           v % 5 == 0 ? 0.5 : 0.0, 1 + (v & 1));
                        count++;
                    }
            }
            for (int t = 0; t < 512; t++) {
                int64_t M = sizes[(rng >> 3) % ns]; urand();
                int64_t N = t < 256 ? sizes[(rng >> 3) % ns] : 100 + (rng >> 5) % 300; urand();
                int64_t K = t < 256 ? sizes[(rng >> 3) % ns] : 300 + (rng >> 5) % 300; urand();
                fails += check_tables(dbl, M, N, K, t % 128, (t / 128) & 1, 1 + (t & 1));
                count++;
            }
        }
        printf("isa %d: checks done (%d cases so far, %d failures)\n", isa, count, fails);
    }
    ember_gemm_set_isa(-1);
    return fails;
}

static int cmpd(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

static double best_gflops;
static double time_gemm(int dbl, int64_t n, int nt) {
    void *a = aligned_alloc(64, n * n * 8), *b = aligned_alloc(64, n * n * 8), *c = aligned_alloc(64, n * n * 8);
    for (int64_t i = 0; i < n * n; i++) {
        if (dbl) { ((double *)a)[i] = urand(); ((double *)b)[i] = urand(); }
        else { ((float *)a)[i] = urand(); ((float *)b)[i] = urand(); }
    }
    double flop = 2.0 * n * n * n;
    int reps = (int)(3e10 / flop / (nt == 1 ? 2 : 1));
    if (reps < 3) reps = 3;
    if (reps > 41) reps = 41;
    double t[64];
    for (int r = -1; r < reps; r++) {
        double t0 = now();
        if (dbl) ember_dgemm(n, n, n, 1.0, a, n, 1, b, n, 1, 0.0, c, n, 1, nt);
        else ember_sgemm(n, n, n, 1.f, a, n, 1, b, n, 1, 0.f, c, n, 1, nt);
        if (r >= 0) t[r] = now() - t0;
    }
    qsort(t, reps, sizeof(double), cmpd);
    free(a); free(b); free(c);
    best_gflops = flop / t[0] * 1e-9;
    return flop / t[reps / 2] * 1e-9;
}

static void bench_bmm(void) {
    int64_t bt = 64, n = 128;
    float *a = aligned_alloc(64, bt * n * n * 4), *b = aligned_alloc(64, bt * n * n * 4), *c = aligned_alloc(64, bt * n * n * 4);
    for (int64_t i = 0; i < bt * n * n; i++) { a[i] = urand(); b[i] = urand(); }
    for (int nt = 1; nt <= 2; nt++) {
        double t[32];
        for (int r = -1; r < 21; r++) {
            double t0 = now();
            ember_sgemm_batched(bt, n, n, n, 1.f, a, n, 1, b, n, 1, 0.f, c, n, 1, n * n, n * n, n * n, nt);
            if (r >= 0) t[r] = now() - t0;
        }
        qsort(t, 21, sizeof(double), cmpd);
        printf("bmm 64x128^3 nt=%d: %.3f ms  %.1f GFLOP/s\n", nt, t[10] * 1e3, 2.0 * bt * n * n * n / t[10] * 1e-9);
    }
    free(a); free(b); free(c);
}

/* float32 C = A @ B for one shape, A and/or B transposed (ta / tb: stored as
   their transposes, as Linear's weight is), best and median of many calls (us) */
static void bench_shape(int64_t M, int64_t N, int64_t K, int ta, int tb) {
    float *a = aligned_alloc(64, (M * K + 16) * 4), *b = aligned_alloc(64, (K * N + 16) * 4);
    float *c = aligned_alloc(64, (M * N + 16) * 4);
    for (int64_t i = 0; i < M * K; i++) a[i] = urand();
    for (int64_t i = 0; i < K * N; i++) b[i] = urand();
    int64_t rsa = ta ? 1 : K, csa = ta ? M : 1, rsb = tb ? 1 : N, csb = tb ? K : 1;
    int reps = (int)(2e9 / (2.0 * M * N * K + 1e4));
    if (reps < 20) reps = 20;
    if (reps > 2001) reps = 2001;
    double *t = malloc(reps * sizeof(double));
    printf("%5ld x %5ld x %5ld  ta=%d tb=%d", (long)M, (long)N, (long)K, ta, tb);
    for (int nt = 1; nt <= 2; nt++) {
        for (int r = -3; r < reps; r++) {
            double t0 = now();
            ember_sgemm(M, N, K, 1.f, a, rsa, csa, b, rsb, csb, 0.f, c, N, 1, nt);
            if (r >= 0) t[r] = now() - t0;
        }
        qsort(t, reps, sizeof(double), cmpd);
        printf("   nt=%d best %8.2f us  median %8.2f us", nt, t[0] * 1e6, t[reps / 2] * 1e6);
    }
    printf("\n");
    fflush(stdout);
    free(a); free(b); free(c); free(t);
}

int main(int argc, char **argv) {
    if (getenv("EG_MC")) eg_tune_mc = atoi(getenv("EG_MC"));
    if (getenv("EG_KC")) eg_tune_kc = atoi(getenv("EG_KC"));
    if (getenv("EG_NC")) eg_tune_nc = atoi(getenv("EG_NC"));
    const char *mode = argc > 1 ? argv[1] : "all";
    printf("gemm isa: %d\n", ember_gemm_isa());
    if (!strcmp(mode, "check") || !strcmp(mode, "all")) {
        int f = run_checks();
        printf(f ? "CHECKS FAILED: %d\n" : "all checks passed\n", f);
        if (f) return 1;
    }
    if (!strcmp(mode, "bench") || !strcmp(mode, "dbench") || !strcmp(mode, "all")) {
        int dbl = !strcmp(mode, "dbench");
        int64_t def[] = {256, 512, 1024, 2048};
        int ns = argc > 2 ? argc - 2 : 4;
        printf("%s   size   1 thread GFLOP/s   2 threads GFLOP/s   (peak 116.5 / 233)\n", dbl ? "f64" : "f32");
        for (int i = 0; i < ns; i++) {
            int64_t n = argc > 2 ? atol(argv[i + 2]) : def[i];
            double g1 = time_gemm(dbl, n, 1), b1 = best_gflops;
            double g2 = time_gemm(dbl, n, 2), b2 = best_gflops;
            printf("      %5ld   %7.1f (%4.1f%%) best %6.1f   %7.1f (%4.1f%%) best %6.1f\n", (long)n, g1,
                   g1 / 116.5 * 100 * (dbl ? 2 : 1), b1, g2, g2 / 233 * 100 * (dbl ? 2 : 1), b2);
            fflush(stdout);
        }
    }
    if (!strcmp(mode, "bmm") || !strcmp(mode, "all")) bench_bmm();
    if (!strcmp(mode, "shape")) /* shape M N K ta tb [M N K ta tb ...] */
        for (int i = 2; i + 4 < argc; i += 5)
            bench_shape(atol(argv[i]), atol(argv[i + 1]), atol(argv[i + 2]), atoi(argv[i + 3]),
                        atoi(argv[i + 4]));
    return 0;
}
