# Channels-last (NHWC) max pooling: the window loops run over whole pixels, the inner
# loop over the channels, contiguous in memory, so a channels-last input is pooled in
# place of a conversion to NCHW and back.  Same rule as src_c/pool.c (the first tap
# in the window, then any larger value or NaN) and the same flat h*W+w indices.
# Included by conv.pyx.
from libc.math cimport INFINITY
from libc.stdint cimport uint32_t, uint64_t


ctypedef fused _real:
    float
    double


# one tap of the window for every channel: y, i = x, pos where x > y or x is NaN, with
# bit masks rather than jumps (a data-dependent jump mispredicts on about every other
# element)
cdef inline void _take32(const float *x, float *y, int64_t *ix, int64_t pos,
                         int64_t C) noexcept nogil:
    cdef const uint32_t *xb = <const uint32_t *>x
    cdef uint32_t *yb = <uint32_t *>y
    cdef int64_t c, mk
    cdef float v
    for c in range(C):
        v = x[c]
        mk = -<int64_t>((v > y[c]) | (v != v))
        yb[c] = (xb[c] & <uint32_t>mk) | (yb[c] & ~<uint32_t>mk)
        ix[c] = (pos & mk) | (ix[c] & ~mk)


cdef inline void _take64(const double *x, double *y, int64_t *ix, int64_t pos,
                         int64_t C) noexcept nogil:
    cdef const uint64_t *xb = <const uint64_t *>x
    cdef uint64_t *yb = <uint64_t *>y
    cdef int64_t c, mk
    cdef double v
    for c in range(C):
        v = x[c]
        mk = -<int64_t>((v > y[c]) | (v != v))
        yb[c] = (xb[c] & <uint64_t>mk) | (yb[c] & ~<uint64_t>mk)
        ix[c] = (pos & mk) | (ix[c] & ~mk)


cdef void _max_pool_nhwc_fwd(const ember_pool2d_params *p, int64_t N, int64_t C,
                             const _real *x, _real *y, int64_t *idx) noexcept nogil:
    cdef int64_t n, oh, ow, i, j, c, h0, w0, i0, i1, j0, j1, ih, iw, first, pos
    cdef int64_t W = p.W
    cdef const _real *xp
    cdef _real *yp
    cdef int64_t *ip
    for n in range(N):
        for oh in range(p.Ho):
            h0 = oh * p.sh - p.ph
            i0 = (-h0 + p.dh - 1) // p.dh if h0 < 0 else 0
            i1 = p.kh
            while i1 > i0 and h0 + (i1 - 1) * p.dh >= p.H:
                i1 -= 1
            for ow in range(p.Wo):
                w0 = ow * p.sw - p.pw
                j0 = (-w0 + p.dw - 1) // p.dw if w0 < 0 else 0
                j1 = p.kw
                while j1 > j0 and w0 + (j1 - 1) * p.dw >= p.W:
                    j1 -= 1
                yp = y + ((n * p.Ho + oh) * p.Wo + ow) * C
                ip = idx + ((n * p.Ho + oh) * p.Wo + ow) * C
                first = 1
                for i in range(i0, i1):
                    ih = h0 + i * p.dh
                    for j in range(j0, j1):
                        iw = w0 + j * p.dw
                        xp = x + ((n * p.H + ih) * p.W + iw) * C
                        pos = ih * W + iw
                        if first:
                            for c in range(C):
                                yp[c] = xp[c]
                                ip[c] = pos
                            first = 0
                            continue
                        if _real is float:
                            _take32(<const float *>xp, <float *>yp, ip, pos, C)
                        else:
                            _take64(<const double *>xp, <double *>yp, ip, pos, C)
                if first:       # a window with no tap inside the input
                    for c in range(C):
                        yp[c] = -INFINITY
                        ip[c] = -1


cdef void _max_pool_nhwc_bwd(int64_t N, int64_t C, int64_t HW, int64_t P, const _real *dy,
                             const int64_t *idx, _real *dx) noexcept nogil:
    """dx (zeroed, N x HW x C) += dy (N x P x C) at the pixels idx names"""
    cdef int64_t n, q, c
    cdef const _real *g
    cdef const int64_t *ip
    cdef _real *d
    for n in range(N):
        d = dx + n * HW * C
        for q in range(P):
            g = dy + (n * P + q) * C
            ip = idx + (n * P + q) * C
            for c in range(C):
                d[ip[c] * C + c] += g[c]


cdef bint _pool_nhwc_ok(TensorBase x):
    """a batched channels-last float32/float64 input: pooled without conversion"""
    return x._ndim == 4 and (x._dtype == EM_F32 or x._dtype == EM_F64) and cl_order(x)


cdef tuple _max_pool_nhwc(TensorBase x, _PoolArgs a):
    """(values, indices) of a 2-D max pooling of x, both channels-last"""
    cdef TensorBase xc = to_cl(x)
    cdef int64_t N = x._shape[0], C = x._shape[1]
    cdef int64_t sh[4]
    sh[0] = N
    sh[1] = C
    sh[2] = a.p.Ho
    sh[3] = a.p.Wo
    cdef TensorBase y = new_cl(4, sh, x._dtype, x._device)
    cdef TensorBase idx = new_cl(4, sh, EM_I64, x._device)
    cdef int64_t *ip = <int64_t *>data_ptr(idx)
    cdef int nt = max_threads()
    with nogil:
        if x._dtype == EM_F32 and ember_max_pool2d_nhwc_fwd_f32(
                &a.p, C, <const float *>data_ptr(xc), <float *>data_ptr(y), ip, nt) == 0:
            pass        # the vectorised C kernel (float32)
        elif x._dtype == EM_F32:
            _max_pool_nhwc_fwd(&a.p, N, C, <const float *>data_ptr(xc), <float *>data_ptr(y), ip)
        else:
            _max_pool_nhwc_fwd(&a.p, N, C, <const double *>data_ptr(xc),
                               <double *>data_ptr(y), ip)
    return y, idx


cdef TensorBase _max_pool_nhwc_backward(TensorBase dy, TensorBase x, TensorBase idx):
    """the input gradient of a channels-last max pooling, channels-last"""
    cdef TensorBase g = to_cl(cast(dy, x._dtype))
    cdef TensorBase ic = to_cl(idx)
    cdef TensorBase dx = new_cl(4, x._shape, x._dtype, x._device)
    cdef int64_t N = x._shape[0], C = x._shape[1]
    cdef int64_t HW = x._shape[2] * x._shape[3], P = dy._shape[2] * dy._shape[3]
    fill_scalar(dx, 0)
    with nogil:
        if x._dtype == EM_F32:
            _max_pool_nhwc_bwd(N, C, HW, P, <const float *>data_ptr(g),
                               <const int64_t *>data_ptr(ic), <float *>data_ptr(dx))
        else:
            _max_pool_nhwc_bwd(N, C, HW, P, <const double *>data_ptr(g),
                               <const int64_t *>data_ptr(ic), <double *>data_ptr(dx))
    return dx


cdef TensorBase _adaptive_avg_pool_nhwc(TensorBase t, _PoolArgs a, bint backward):
    """adaptive average pooling of a channels-last input t (backward: its input gradient
    from grad_output t), channels-last"""
    cdef TensorBase tc = to_cl(t)
    cdef int64_t C = t._shape[1]
    cdef int64_t sh[4]
    sh[0] = t._shape[0]
    sh[1] = C
    sh[2] = a.p.H if backward else a.p.Ho
    sh[3] = a.p.W if backward else a.p.Wo
    cdef TensorBase r = new_cl(4, sh, t._dtype, t._device)
    cdef int nt = max_threads()
    with nogil:
        if t._dtype == EM_F32 and backward:
            ember_adaptive_avg_pool2d_nhwc_bwd_f32(&a.p, C, <const float *>data_ptr(tc),
                                                   <float *>data_ptr(r), nt)
        elif t._dtype == EM_F32:
            ember_adaptive_avg_pool2d_nhwc_fwd_f32(&a.p, C, <const float *>data_ptr(tc),
                                                   <float *>data_ptr(r), nt)
        elif backward:
            ember_adaptive_avg_pool2d_nhwc_bwd_f64(&a.p, C, <const double *>data_ptr(tc),
                                                   <double *>data_ptr(r), nt)
        else:
            ember_adaptive_avg_pool2d_nhwc_fwd_f64(&a.p, C, <const double *>data_ptr(tc),
                                                   <double *>data_ptr(r), nt)
    return r
