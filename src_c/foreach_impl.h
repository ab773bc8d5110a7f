/* The multi-tensor loops, included once per ISA by foreach.c with FSFX() naming the
   copy.  Work is cut into fixed blocks across all tensors so threads share it evenly
   and every element sees the same operations whatever the thread count. */
#define FE_BLOCK 16384

#define LERP(T, x, y, t) ((t) < 0.5 ? (x) + (t) * ((y) - (x)) : (y) - ((y) - (x)) * (1 - (t)))
#define MAXNAN(a, b) (((a) != (a) || (b) != (b)) ? (a) + (b) : ((a) > (b) ? (a) : (b)))

#define SGD_BODY(T)                                                                      \
    {                                                                                    \
        T *restrict P = (T *)params[k]; const T *restrict G = (const T *)grads[k];       \
        T *restrict B = bufs ? (T *)bufs[k] : NULL;                                               \
        const T wd = (T)a->weight_decay, mo = (T)a->momentum, damp = (T)(1 - a->dampening); \
        const T nlr = (T)(-a->lr);                                                       \
        const int use_wd = a->weight_decay != 0, use_mo = a->momentum != 0;              \
        const int first = init ? init[k] : 0, neg = a->maximize, nest = a->nesterov;     \
        for (int64_t i = lo; i < hi; i++) {                                              \
            T g = G[i];                                                                  \
            if (neg) g = -g;                                                             \
            if (use_wd) g = g + wd * P[i];                                               \
            if (use_mo) {                                                                \
                T b = first ? g : B[i] * mo + damp * g;                                  \
                B[i] = b;                                                                \
                g = nest ? g + mo * b : b;                                               \
            }                                                                            \
            P[i] = P[i] + nlr * g;                                                       \
        }                                                                                \
    }

/* AMS: 1 keeps the running maximum of v (amsgrad); a separate loop for each value so
   both vectorise */
#define ADAM_LOOP(T, AMS)                                                                \
    for (int64_t i = lo; i < hi; i++) {                                                  \
        T g = G[i], p = P[i];                                                            \
        if (neg) g = -g;                                                                 \
        if (l2) g = g + wd * p;                                                          \
        if (dec) p = p * decay;                                                          \
        T m = LERP(T, M[i], g, w1);                                                      \
        T gg = g * g;                                                                    \
        T v = LERP(T, V[i], gg, w2);                                                     \
        M[i] = m; V[i] = v;                                                              \
        if (AMS) { v = MAXNAN(MX[i], v); MX[i] = v; }                                    \
        T d = SQRT(v);                                                                   \
        d = d + epsh;                                                                    \
        d = m / d;                                                                       \
        P[i] = p + alpha * d;                                                            \
    }

#define ADAM_BODY(T)                                                                     \
    {                                                                                    \
        T *restrict P = (T *)params[k]; const T *restrict G = (const T *)grads[k];       \
        T *restrict M = (T *)exp_avgs[k], *restrict V = (T *)exp_avg_sqs[k];             \
        T *restrict MX = a->amsgrad ? (T *)max_sqs[k] : NULL;                            \
        const double step = steps[k];                                                    \
        const double bc1 = 1 - pow(a->beta1, step);                                      \
        const double bc2_sqrt = sqrt(1 - pow(a->beta2, step));                           \
        const T w1 = (T)(1 - a->beta1), w2 = (T)(1 - a->beta2);                          \
        const T epsh = (T)(a->eps * bc2_sqrt), alpha = (T)(-a->lr * bc2_sqrt / bc1);     \
        const T wd = (T)a->weight_decay, decay = (T)(1 - a->lr * a->weight_decay);       \
        const int l2 = a->weight_decay != 0 && !a->decoupled;                            \
        const int dec = a->weight_decay != 0 && a->decoupled, neg = a->maximize;         \
        if (MX) ADAM_LOOP(T, 1) else ADAM_LOOP(T, 0)                                     \
    }

/* run BODY over every block [lo, hi) of every tensor k */
#define FOR_BLOCKS(BODY)                                                                 \
    {                                                                                    \
        int64_t nb = 0;                                                                  \
        for (int64_t k = 0; k < count; k++) nb += (numel[k] + FE_BLOCK - 1) / FE_BLOCK;  \
        int64_t *bk = (int64_t *)malloc((size_t)(nb > 0 ? nb : 1) * 2 * sizeof(int64_t)); \
        if (!bk) return -2;                                                              \
        int64_t j = 0;                                                                   \
        for (int64_t k = 0; k < count; k++)                                              \
            for (int64_t s = 0; s < numel[k]; s += FE_BLOCK) { bk[2 * j] = k; bk[2 * j + 1] = s; j++; } \
        _Pragma("omp parallel for num_threads(nthreads) schedule(static) if(nthreads > 1)") \
        for (int64_t b = 0; b < nb; b++) {                                               \
            const int64_t k = bk[2 * b], lo = bk[2 * b + 1];                             \
            const int64_t hi = lo + FE_BLOCK < numel[k] ? lo + FE_BLOCK : numel[k];      \
            BODY                                                                         \
        }                                                                                \
        free(bk);                                                                        \
    }

static int FSFX(sgd)(int dtype, int64_t count, char *const *params, char *const *grads,
                     char *const *bufs, const uint8_t *init, const int64_t *numel,
                     const em_sgd_args *a, int nthreads) {
    if (dtype == EM_F32) FOR_BLOCKS(SGD_BODY(float))
    else if (dtype == EM_F64) FOR_BLOCKS(SGD_BODY(double))
    else return -1;
    return 0;
}

static int FSFX(adam)(int dtype, int64_t count, char *const *params, char *const *grads,
                      char *const *exp_avgs, char *const *exp_avg_sqs, char *const *max_sqs,
                      const double *steps, const int64_t *numel, const em_adam_args *a,
                      int nthreads) {
#define SQRT sqrtf
    if (dtype == EM_F32) FOR_BLOCKS(ADAM_BODY(float))
#undef SQRT
#define SQRT sqrt
    else if (dtype == EM_F64) FOR_BLOCKS(ADAM_BODY(double))
#undef SQRT
    else return -1;
    return 0;
}

#define SCALE_BODY(T)                                                                    \
    { T *X = (T *)xs[k]; const T cc = (T)c; for (int64_t i = lo; i < hi; i++) X[i] = X[i] * cc; }

static int FSFX(scale)(int dtype, int64_t count, char *const *xs, const int64_t *numel,
                       double c, int nthreads) {
    if (dtype == EM_F32) FOR_BLOCKS(SCALE_BODY(float))
    else if (dtype == EM_F64) FOR_BLOCKS(SCALE_BODY(double))
    else return -1;
    return 0;
}

#undef FE_BLOCK
#undef LERP
#undef MAXNAN
#undef SGD_BODY
#undef ADAM_BODY
#undef ADAM_LOOP
#undef SCALE_BODY
#undef FOR_BLOCKS
