/* Direct float32 weight gradient for convolutions with few taps per output
   channel (Cg*kh*kw <= EMBER_WGD_MAX_K, stride 1 along W): a GEMM over so few
   rows (the digits CNN's 1 -> 32 channels: 9) spends its time packing, while
   here each output channel keeps one vector accumulator per tap and streams its
   grad_output rows against the shifted input rows.  Included after
   conv_wino_impl.h (its vector type and loads).

   Output channels are split over threads; each one's sums run over the images
   and positions in one fixed order, so the result is the same on any number of
   threads. */

/* dw of output channel oc (Kg = Cg*kh*kw taps).  Always inlined, so that the
   common shapes, called with constant Cg, kh, kw, keep the accumulators in
   registers. */
static inline __attribute__((always_inline)) void wgd_channel(
    const ember_conv2d_params *p, const float *src, const float *dy, float *dw, int64_t oc,
    const int64_t Cg, const int64_t kh, const int64_t kw) {
    const int64_t N = p->N, C = p->C, OC = p->OC, OCg = OC / p->groups, Kg = Cg * kh * kw;
    const int64_t Ho = p->Ho, Wo = p->Wo, Wp = p->W + 2 * p->pw;
    const int64_t plane = (p->H + 2 * p->ph) * Wp, nv = Wo / WV, g = oc / OCg;
    wv acc[EMBER_WGD_MAX_K];
    float sacc[EMBER_WGD_MAX_K];
    for (int64_t k = 0; k < Kg; k++) {
        acc[k] = (wv){0};
        sacc[k] = 0.0f;
    }
    for (int64_t n = 0; n < N; n++)
        for (int64_t oh = 0; oh < Ho; oh++) {
            const float *dyr = dy + ((n * OC + oc) * Ho + oh) * Wo;
            /* padded input row of tap (c, i, j) for this output row: xb + c*plane +
               i*dh*Wp, read from column ow + j*dw */
            const float *xb = src + (n * C + g * Cg) * plane + oh * p->sh * Wp;
            for (int64_t v = 0; v < nv; v++) {
                const wv d = wi_ld(dyr + v * WV);
                for (int64_t c = 0; c < Cg; c++)
                    for (int64_t i = 0; i < kh; i++) {
                        const float *xr = xb + c * plane + i * p->dh * Wp + v * WV;
                        for (int64_t j = 0; j < kw; j++)
                            acc[(c * kh + i) * kw + j] += d * wi_ld(xr + j * p->dw);
                    }
            }
            for (int64_t ow = nv * WV; ow < Wo; ow++) {
                const float d = dyr[ow];
                for (int64_t c = 0; c < Cg; c++)
                    for (int64_t i = 0; i < kh; i++) {
                        const float *xr = xb + c * plane + i * p->dh * Wp + ow;
                        for (int64_t j = 0; j < kw; j++)
                            sacc[(c * kh + i) * kw + j] += d * xr[j * p->dw];
                    }
            }
        }
    for (int64_t k = 0; k < Kg; k++) {
        float lanes[WV], s = 0.0f;
        memcpy(lanes, &acc[k], sizeof lanes);
        for (int l = 0; l < WV; l++) s += lanes[l];
        dw[oc * Kg + k] = s + sacc[k];
    }
}

int WI_PUB(ember_conv_wgrad_direct_f32)(const ember_conv2d_params *p, const float *x,
                                        const float *dy, float *dw, int nthreads) {
    const int64_t N = p->N, C = p->C, OC = p->OC, Cg = C / p->groups;
    const int64_t Kg = Cg * p->kh * p->kw, Ho = p->Ho, Wo = p->Wo;
    const int64_t Wp = p->W + 2 * p->pw, plane = (p->H + 2 * p->ph) * Wp, HW = p->H * p->W;
    /* zero-padded copies of the images when the convolution pads */
    float *xp = NULL;
    const float *src = x;
    if (p->ph > 0 || p->pw > 0) {
        xp = (float *)ember_conv_scratch(1, (size_t)(N * C * plane) * sizeof(float), 0);
        if (!xp) return -1;
        const int ntp = N * C * plane < 65536 ? 1 : nthreads;
#pragma omp parallel for num_threads(ntp) schedule(static) if (ntp > 1)
        for (int64_t q = 0; q < N * C; q++) {
            float *d = xp + q * plane;
            memset(d, 0, (size_t)plane * sizeof(float));
            for (int64_t h = 0; h < p->H; h++)
                memcpy(d + (h + p->ph) * Wp + p->pw, x + q * HW + h * p->W,
                       (size_t)p->W * sizeof(float));
        }
        src = xp;
    }
    const int nt = (double)N * OC * Ho * Wo * Kg < 4e5 ? 1 : (int)wi_min(nthreads, OC);
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
    for (int64_t oc = 0; oc < OC; oc++) {
        if (Cg == 1 && p->kh == 3 && p->kw == 3)
            wgd_channel(p, src, dy, dw, oc, 1, 3, 3);
        else if (Cg == 3 && p->kh == 3 && p->kw == 3)
            wgd_channel(p, src, dy, dw, oc, 3, 3, 3);
        else
            wgd_channel(p, src, dy, dw, oc, Cg, p->kh, p->kw);
    }
    ember_conv_scratch_done(1, xp);
    return 0;
}
