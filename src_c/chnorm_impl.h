/* batch_norm and group_norm for one element type T, written once and compiled per
   ISA and type by chnorm.c (CN() names the copy).  Sums take blocks of at most
   CN_BLK elements in CN_ACC lanes of T (the loops vectorise), each block's lanes
   combined in a fixed tree and the blocks added in order in double. */
#ifndef CN_ACC
#define CN_ACC 16
#define CN_BLK 4096
#endif

/* CN_ACC lanes as vectors of CN_VBYTES bytes (GCC/Clang vector extensions, as the
   GEMM's generic kernel uses): the lane sums are spelled out, so no compiler turns
   them into a serial chain */
typedef T CN(vec) __attribute__((vector_size(CN_VBYTES)));
#define CN_VL ((int)(CN_VBYTES / sizeof(T)))
#define CN_NV (CN_ACC / CN_VL)

static inline CN(vec) CN(ld)(const T *p) {
    CN(vec) v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* the CN_ACC lanes of s plus the tail [i, e) (lane j takes element i + j), combined
   in a fixed tree */
static inline T CN(fold)(const CN(vec) *s, const T *x, const T *dy, int64_t i, int64_t e, T m,
                         int kind) {
    T l[CN_ACC];
    memcpy(l, s, sizeof l);
    for (int j = 0; i < e; i++, j++) {
        const T d = x[i] - m;
        l[j] += kind == 0 ? x[i] : kind == 1 ? d * d : dy[i] * d;
    }
    for (int w = CN_ACC / 2; w > 0; w /= 2)
        for (int j = 0; j < w; j++) l[j] += l[j + w];
    return l[0];
}

/* sum of x[i] (kind 0), of (x[i] - m)^2 (1) or of dy[i] * (x[i] - m) (2) over [0, n) */
static double CN(sum)(const T *restrict x, const T *restrict dy, int64_t n, T m, int kind) {
    double tot = 0;
    const CN(vec) mv = (CN(vec)){0} + m;
    for (int64_t b0 = 0; b0 < n; b0 += CN_BLK) {
        const int64_t e = b0 + CN_BLK < n ? b0 + CN_BLK : n;
        CN(vec) s[CN_NV];
        for (int q = 0; q < CN_NV; q++) s[q] = (CN(vec)){0};
        int64_t i = b0;
        if (kind == 0)
            for (; i + CN_ACC <= e; i += CN_ACC)
                for (int q = 0; q < CN_NV; q++) s[q] += CN(ld)(x + i + q * CN_VL);
        else if (kind == 1)
            for (; i + CN_ACC <= e; i += CN_ACC)
                for (int q = 0; q < CN_NV; q++) {
                    const CN(vec) d = CN(ld)(x + i + q * CN_VL) - mv;
                    s[q] += d * d;
                }
        else
            for (; i + CN_ACC <= e; i += CN_ACC)
                for (int q = 0; q < CN_NV; q++)
                    s[q] += CN(ld)(dy + i + q * CN_VL) * (CN(ld)(x + i + q * CN_VL) - mv);
        tot += (double)CN(fold)(s, x, dy, i, e, m, kind);
    }
    return tot;
}

/* sum of dy[i] and of dy[i] * (x[i] - m) over [0, n) in one pass, blocked as CN(sum) */
static void CN(sum2)(const T *restrict x, const T *restrict dy, int64_t n, T m, double *sdy,
                     double *sdx) {
    double t1 = 0, t2 = 0;
    const CN(vec) mv = (CN(vec)){0} + m;
    for (int64_t b0 = 0; b0 < n; b0 += CN_BLK) {
        const int64_t e = b0 + CN_BLK < n ? b0 + CN_BLK : n;
        CN(vec) s[CN_NV], u[CN_NV];
        for (int q = 0; q < CN_NV; q++) s[q] = u[q] = (CN(vec)){0};
        int64_t i = b0;
        for (; i + CN_ACC <= e; i += CN_ACC)
            for (int q = 0; q < CN_NV; q++) {
                const CN(vec) g = CN(ld)(dy + i + q * CN_VL);
                s[q] += g;
                u[q] += g * (CN(ld)(x + i + q * CN_VL) - mv);
            }
        t1 += (double)CN(fold)(s, dy, NULL, i, e, 0, 0);
        t2 += (double)CN(fold)(u, x, dy, i, e, m, 2);
    }
    *sdy = t1;
    *sdx = t2;
}

/* CN(sum) over the N planes (stride apart) of one channel; planes smaller than a
   lane row go element by element in double */
static double CN(chan)(const T *x, const T *dy, int64_t N, int64_t stride, int64_t HW, T m,
                       int kind) {
    double s = 0;
    if (HW < CN_ACC) {
        for (int64_t n = 0; n < N; n++)
            for (int64_t i = 0; i < HW; i++) {
                const double xv = x[n * stride + i], d = xv - (double)m;
                s += kind == 0 ? xv : kind == 1 ? d * d : (double)dy[n * stride + i] * d;
            }
        return s;
    }
    for (int64_t n = 0; n < N; n++)
        s += CN(sum)(x + n * stride, dy ? dy + n * stride : NULL, HW, m, kind);
    return s;
}

/* y = x * a + c over n elements */
static inline void CN(affine)(const T *restrict x, T *restrict y, int64_t n, T a, T c) {
    for (int64_t i = 0; i < n; i++) y[i] = x[i] * a + c;
}

static void CN(bn_fwd)(const T *x, const T *w, const T *b, int64_t N, int64_t C, int64_t HW,
                       int training, double eps, double momentum, T *rm, T *rv, T *y,
                       T *smean, T *sinv, int nt) {
    const int64_t M = N * HW, st = C * HW;
    if (!training) {
        /* the running statistics are known: one affine pass in memory order, which
           streams (a channel at a time jumps a sample's stride per plane) */
        for (int64_t c = 0; c < C; c++) {
            smean[c] = rm[c];
            sinv[c] = (T)(1.0 / sqrt((double)rv[c] + eps));
        }
        _Pragma("omp parallel for num_threads(nt) schedule(static) if (nt > 1)")
        for (int64_t r = 0; r < N * C; r++) {
            const int64_t c = r % C;
            const T a = sinv[c] * (w ? w[c] : (T)1), off = (b ? b[c] : (T)0) - smean[c] * a;
            CN(affine)(x + r * HW, y + r * HW, HW, a, off);
        }
        return;
    }
    _Pragma("omp parallel for num_threads(nt) schedule(static) if (nt > 1)")
    for (int64_t c = 0; c < C; c++) {
        const T *xc = x + c * HW;
        const T mean = (T)(CN(chan)(xc, NULL, N, st, HW, 0, 0) / (double)M);
        const double var = CN(chan)(xc, NULL, N, st, HW, mean, 1) / (double)M;
        const T inv = (T)(1.0 / sqrt(var + eps));
        if (rm) rm[c] = (T)(momentum * (double)mean + (1.0 - momentum) * (double)rm[c]);
        if (rv)
            rv[c] = (T)(momentum * var * (double)M / (double)(M > 1 ? M - 1 : 1) +
                        (1.0 - momentum) * (double)rv[c]);
        smean[c] = mean;
        sinv[c] = inv;
        const T a = inv * (w ? w[c] : (T)1), off = (b ? b[c] : (T)0) - mean * a;
        for (int64_t n = 0; n < N; n++) CN(affine)(xc + n * st, y + c * HW + n * st, HW, a, off);
    }
}

static void CN(bn_bwd)(const T *dy, const T *x, const T *smean, const T *sinv, const T *w,
                       int64_t N, int64_t C, int64_t HW, int training, T *dx, T *dw, T *db,
                       int nt) {
    const int64_t M = N * HW, st = C * HW;
    const int sums = training || dw || db;
    _Pragma("omp parallel for num_threads(nt) schedule(static) if (nt > 1)")
    for (int64_t c = 0; c < C; c++) {
        const T *xc = x + c * HW, *gc = dy + c * HW;
        const T m = smean[c], inv = sinv[c], wc = w ? w[c] : (T)1;
        double sdy = 0, sdx = 0;
        if (sums && HW < CN_ACC) {
            sdy = CN(chan)(gc, NULL, N, st, HW, 0, 0);
            sdx = CN(chan)(xc, gc, N, st, HW, m, 2);
        } else if (sums) {
            for (int64_t n = 0; n < N; n++) {
                double a, b;
                CN(sum2)(xc + n * st, gc + n * st, HW, m, &a, &b);
                sdy += a;
                sdx += b;
            }
        }
        if (dw) dw[c] = (T)(sdx * (double)inv);
        if (db) db[c] = (T)sdy;
        if (!dx) continue;
        const T k = inv * wc;
        if (training) {
            /* dx = (dy - mean(dy) - (x - m) * inv^2 * mean(dy * (x - m))) * inv * w */
            const T gm = (T)(sdy / (double)M);
            const T pr = (T)(sdx / (double)M * (double)inv * (double)inv);
            for (int64_t n = 0; n < N; n++) {
                const T *restrict xr = xc + n * st, *restrict gr = gc + n * st;
                T *restrict dr = dx + c * HW + n * st;
                for (int64_t i = 0; i < HW; i++) dr[i] = (gr[i] - gm - (xr[i] - m) * pr) * k;
            }
        } else {
            for (int64_t n = 0; n < N; n++) {
                const T *restrict gr = gc + n * st;
                T *restrict dr = dx + c * HW + n * st;
                for (int64_t i = 0; i < HW; i++) dr[i] = gr[i] * k;
            }
        }
    }
}

static void CN(gn_fwd)(const T *x, const T *w, const T *b, int64_t N, int64_t C, int64_t HW,
                       int64_t G, double eps, T *y, T *mean, T *rstd, int nt) {
    const int64_t Cg = C / G, D = Cg * HW;
    _Pragma("omp parallel for num_threads(nt) schedule(static) if (nt > 1)")
    for (int64_t r = 0; r < N * G; r++) {
        const T *xr = x + r * D;
        const T m = (T)(CN(sum)(xr, NULL, D, 0, 0) / (double)D);
        const double var = CN(sum)(xr, NULL, D, m, 1) / (double)D;
        const T rs = (T)(1.0 / sqrt(var + eps));
        mean[r] = m;
        rstd[r] = rs;
        const int64_t c0 = (r % G) * Cg;
        for (int64_t c = 0; c < Cg; c++) {
            const T a = rs * (w ? w[c0 + c] : (T)1), off = (b ? b[c0 + c] : (T)0) - m * a;
            CN(affine)(xr + c * HW, y + r * D + c * HW, HW, a, off);
        }
    }
}

/* sdy, sdx: [N*C] scratch, each channel's sum of dy and of dy * (x - mean) */
static void CN(gn_bwd)(const T *dy, const T *x, const T *mean, const T *rstd, const T *w,
                       int64_t N, int64_t C, int64_t HW, int64_t G, T *dx, T *dw, T *db,
                       double *sdy, double *sdx, int nt) {
    const int64_t Cg = C / G, D = Cg * HW;
    _Pragma("omp parallel num_threads(nt) if (nt > 1)")
    {
        _Pragma("omp for schedule(static)")
        for (int64_t r = 0; r < N * G; r++) {
            const T m = mean[r], rs = rstd[r];
            const int64_t c0 = (r % G) * Cg;
            double A = 0, B = 0;
            for (int64_t c = 0; c < Cg; c++) {
                const int64_t q = r * D + c * HW;
                double s1, s2;
                CN(sum2)(x + q, dy + q, HW, m, &s1, &s2);
                sdy[r * Cg + c] = s1;
                sdx[r * Cg + c] = s2;
                const double wc = w ? (double)w[c0 + c] : 1.0;
                A += wc * s1;
                B += wc * s2;
            }
            if (!dx) continue;
            /* dx = rs * (dy*w - mean(dy*w) - xhat * mean(dy*w*xhat)), xhat = (x-m)*rs */
            const T a = (T)(A / (double)D * (double)rs);
            const T bq = (T)(B / (double)D * (double)rs * (double)rs * (double)rs);
            for (int64_t c = 0; c < Cg; c++) {
                const T k = rs * (w ? w[c0 + c] : (T)1);
                const T *restrict xr = x + r * D + c * HW, *restrict gr = dy + r * D + c * HW;
                T *restrict dr = dx + r * D + c * HW;
                for (int64_t i = 0; i < HW; i++) dr[i] = gr[i] * k - (xr[i] - m) * bq - a;
            }
        }
        if (dw || db) {
            _Pragma("omp for schedule(static)")
            for (int64_t c = 0; c < C; c++) {
                const int64_t g = c / Cg;
                double sw = 0, sb = 0;
                for (int64_t n = 0; n < N; n++) {
                    sw += sdx[n * C + c] * (double)rstd[n * G + g];
                    sb += sdy[n * C + c];
                }
                if (dw) dw[c] = (T)sw;
                if (db) db[c] = (T)sb;
            }
        }
    }
}

/* ---- batch_norm on channels-last tensors: M = N*HW rows of C channels, channel c
   of row r at x[r*C + c].  A channel's statistics are sums down a column, so they
   run over rows with the channels as the vector lanes: each fixed slice of
   CN_ROWS rows sums into its own [C] doubles and the slices are added in order
   (no dependence on the thread count). */
#ifndef CN_ROWS
#define CN_ROWS 128
#endif

/* kind 0: s1 = sum of x; 1: s1 = sum of (x - m)^2; 2: s1 = sum of dy and s2 = sum of
   dy * (x - m), per channel.  part: 2*C*ceil(M/CN_ROWS) doubles of scratch */
static void CN(cl_sums)(const T *x, const T *dy, int64_t M, int64_t C, const T *m, int kind,
                        double *part, double *s1, double *s2, int nt) {
    const int64_t ns = (M + CN_ROWS - 1) / CN_ROWS;
    _Pragma("omp parallel for num_threads(nt) schedule(static) if (nt > 1)")
    for (int64_t sl = 0; sl < ns; sl++) {
        double *restrict p1 = part + sl * 2 * C, *restrict p2 = p1 + C;
        const int64_t r0 = sl * CN_ROWS, r1 = r0 + CN_ROWS < M ? r0 + CN_ROWS : M;
        for (int64_t c = 0; c < C; c++) p1[c] = p2[c] = 0;
        if (kind == 0) {
            for (int64_t r = r0; r < r1; r++) {
                const T *restrict xr = x + r * C;
                for (int64_t c = 0; c < C; c++) p1[c] += (double)xr[c];
            }
        } else if (kind == 1) {
            for (int64_t r = r0; r < r1; r++) {
                const T *restrict xr = x + r * C;
                for (int64_t c = 0; c < C; c++) {
                    const T d = xr[c] - m[c];
                    p1[c] += (double)(d * d);
                }
            }
        } else {
            for (int64_t r = r0; r < r1; r++) {
                const T *restrict xr = x + r * C, *restrict gr = dy + r * C;
                for (int64_t c = 0; c < C; c++) {
                    p1[c] += (double)gr[c];
                    p2[c] += (double)(gr[c] * (xr[c] - m[c]));
                }
            }
        }
    }
    for (int64_t c = 0; c < C; c++) s1[c] = s2[c] = 0;
    for (int64_t sl = 0; sl < ns; sl++) {
        const double *p1 = part + sl * 2 * C, *p2 = p1 + C;
        for (int64_t c = 0; c < C; c++) {
            s1[c] += p1[c];
            s2[c] += p2[c];
        }
    }
}

/* y[r, c] = x[r, c] * a[c] + o[c] over M rows */
static void CN(cl_affine)(const T *x, T *y, int64_t M, int64_t C, const T *a, const T *o,
                          int nt) {
    _Pragma("omp parallel for num_threads(nt) schedule(static) if (nt > 1)")
    for (int64_t r = 0; r < M; r++) {
        const T *restrict xr = x + r * C;
        T *restrict yr = y + r * C;
        for (int64_t c = 0; c < C; c++) yr[c] = xr[c] * a[c] + o[c];
    }
}

static int CN(bn_fwd_cl)(const T *x, const T *w, const T *b, int64_t M, int64_t C,
                         int training, double eps, double momentum, T *rm, T *rv, T *y,
                         T *smean, T *sinv, int nt) {
    const int64_t ns = (M + CN_ROWS - 1) / CN_ROWS;
    double *buf = (double *)malloc((size_t)((training ? 2 * ns * C : 0) + 2 * C) * sizeof(double));
    T *ao = (T *)malloc((size_t)(2 * C) * sizeof(T));
    if (!buf || !ao) {
        free(buf);
        free(ao);
        return -2;
    }
    double *s1 = buf + (training ? 2 * ns * C : 0), *s2 = s1 + C;
    if (training) {
        CN(cl_sums)(x, NULL, M, C, NULL, 0, buf, s1, s2, nt);
        for (int64_t c = 0; c < C; c++) smean[c] = (T)(s1[c] / (double)M);
        CN(cl_sums)(x, NULL, M, C, smean, 1, buf, s1, s2, nt);
        for (int64_t c = 0; c < C; c++) {
            const double var = s1[c] / (double)M;
            sinv[c] = (T)(1.0 / sqrt(var + eps));
            if (rm) rm[c] = (T)(momentum * (double)smean[c] + (1.0 - momentum) * (double)rm[c]);
            if (rv)
                rv[c] = (T)(momentum * var * (double)M / (double)(M > 1 ? M - 1 : 1) +
                            (1.0 - momentum) * (double)rv[c]);
        }
    } else {
        for (int64_t c = 0; c < C; c++) {
            smean[c] = rm[c];
            sinv[c] = (T)(1.0 / sqrt((double)rv[c] + eps));
        }
    }
    for (int64_t c = 0; c < C; c++) {
        ao[c] = sinv[c] * (w ? w[c] : (T)1);
        ao[C + c] = (b ? b[c] : (T)0) - smean[c] * ao[c];
    }
    CN(cl_affine)(x, y, M, C, ao, ao + C, nt);
    free(buf);
    free(ao);
    return 0;
}

static int CN(bn_bwd_cl)(const T *dy, const T *x, const T *smean, const T *sinv, const T *w,
                         int64_t M, int64_t C, int training, T *dx, T *dw, T *db, int nt) {
    const int64_t ns = (M + CN_ROWS - 1) / CN_ROWS;
    double *buf = (double *)malloc((size_t)(2 * ns * C + 2 * C) * sizeof(double));
    T *kq = (T *)malloc((size_t)(3 * C) * sizeof(T));
    if (!buf || !kq) {
        free(buf);
        free(kq);
        return -2;
    }
    double *sdy = buf + 2 * ns * C, *sdx = sdy + C;
    if (training || dw || db) CN(cl_sums)(x, dy, M, C, smean, 2, buf, sdy, sdx, nt);
    for (int64_t c = 0; c < C; c++) {
        if (dw) dw[c] = (T)(sdx[c] * (double)sinv[c]);
        if (db) db[c] = (T)sdy[c];
    }
    if (dx) {
        /* dx = (dy - mean(dy) - (x - m) * inv^2 * mean(dy * (x - m))) * inv * w, as the
           NCHW kernel; without training, dy * inv * w */
        T *k = kq, *gm = kq + C, *pr = kq + 2 * C;
        for (int64_t c = 0; c < C; c++) {
            k[c] = sinv[c] * (w ? w[c] : (T)1);
            gm[c] = training ? (T)(sdy[c] / (double)M) : (T)0;
            pr[c] = training ? (T)(sdx[c] / (double)M * (double)sinv[c] * (double)sinv[c]) : (T)0;
        }
        _Pragma("omp parallel for num_threads(nt) schedule(static) if (nt > 1)")
        for (int64_t r = 0; r < M; r++) {
            const T *restrict xr = x + r * C, *restrict gr = dy + r * C;
            T *restrict dr = dx + r * C;
            if (training)
                for (int64_t c = 0; c < C; c++)
                    dr[c] = (gr[c] - gm[c] - (xr[c] - smean[c]) * pr[c]) * k[c];
            else
                for (int64_t c = 0; c < C; c++) dr[c] = gr[c] * k[c];
        }
    }
    free(buf);
    free(kq);
    return 0;
}
