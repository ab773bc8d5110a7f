# Channels-last (NHWC) convolution.  float32 3x3 stride-1 convolutions that Winograd
# takes (src_c/conv.c decides, as for NCHW) run it on NHWC tiles in all three
# passes.  Otherwise each pass is one GEMM over descriptor operands
# (src_c/include/ember_gemm.h), whose row/column offset tables address the image in
# place: the im2col matrix of an NHWC image is rows of (n, ho, wo) and columns of
# (i, j, c), with c innermost, so no column buffer is built and the result lands in
# NHWC order directly.  Included by conv.pyx; used for the forward pass and the
# weight gradient of ungrouped float32/float64 2-D convolutions whose input or
# weight is channels-last (torch's rule for a channels-last result); the other cases
# (and the other input gradients: a GEMM with C columns, narrow for the first layer)
# run the NCHW kernels between layout conversions.
from ember._C.c_gemm cimport ember_smat, ember_dmat, ember_sgemm_ex, ember_dgemm_ex


cdef TensorBase _offsets(int64_t n):
    cdef int64_t sh[1]
    sh[0] = n if n > 0 else 1
    return new_tensor(1, sh, EM_I64, cpu_device())


cdef void _grid(int64_t *o, int64_t n0, int64_t n1, int64_t n2, int64_t s0, int64_t s1,
                int64_t s2) noexcept nogil:
    """o[(a*n1 + b)*n2 + c] = a*s0 + b*s1 + c*s2"""
    cdef int64_t a, b, c, q = 0
    for a in range(n0):
        for b in range(n1):
            for c in range(n2):
                o[q] = a * s0 + b * s1 + c * s2
                q += 1


cdef int _gemm(int cdt, int64_t M, int64_t N, int64_t K,
               TensorBase a, int64_t rsa, int64_t csa, TensorBase roa, TensorBase coa,
               TensorBase b, int64_t rsb, int64_t csb, TensorBase rob, TensorBase cob,
               TensorBase c, int64_t rsc, int64_t csc, TensorBase bias,
               bint row_bias=False) except -1:
    """c = a @ b (+ bias per column, or per row) over descriptor operands (None: no
    offset table)"""
    cdef ember_smat sa, sb
    cdef ember_dmat da, db
    cdef const int64_t *ra = <const int64_t *>data_ptr(roa) if roa is not None else NULL
    cdef const int64_t *ca = <const int64_t *>data_ptr(coa) if coa is not None else NULL
    cdef const int64_t *rb = <const int64_t *>data_ptr(rob) if rob is not None else NULL
    cdef const int64_t *cb = <const int64_t *>data_ptr(cob) if cob is not None else NULL
    cdef char *bp = data_ptr(bias) if bias is not None else NULL
    cdef int nt = max_threads()
    if cdt == EM_F32:
        sa.p = <const float *>data_ptr(a)
        sa.rs = rsa
        sa.cs = csa
        sa.ro = ra
        sa.co = ca
        sb.p = <const float *>data_ptr(b)
        sb.rs = rsb
        sb.cs = csb
        sb.ro = rb
        sb.co = cb
        with nogil:
            ember_sgemm_ex(M, N, K, 1.0, &sa, &sb, 0.0, <float *>data_ptr(c), rsc, csc,
                           <const float *>bp if row_bias else NULL,
                           NULL if row_bias else <const float *>bp, nt)
    else:
        da.p = <const double *>data_ptr(a)
        da.rs = rsa
        da.cs = csa
        da.ro = ra
        da.co = ca
        db.p = <const double *>data_ptr(b)
        db.rs = rsb
        db.cs = csb
        db.ro = rb
        db.co = cb
        with nogil:
            ember_dgemm_ex(M, N, K, 1.0, &da, &db, 0.0, <double *>data_ptr(c), rsc, csc,
                           <const double *>bp if row_bias else NULL,
                           NULL if row_bias else <const double *>bp, nt)
    return 0


cdef bint _nhwc_ok(_ConvArgs a, TensorBase x, TensorBase w, int cdt):
    """the NHWC GEMM path applies and pays: an ungrouped, batched float32/float64 2-D
    conv with a channels-last operand, no empty dimension and a short reduction (past
    about 512 taps per output the gathered GEMM operand costs more than converting to
    NCHW and back)"""
    cdef int d
    if not (a.batched and a.nd == 2 and a.p.groups == 1 and x._dtype == cdt and
            w._dtype == cdt and (cl_order(x) or cl_order(w))):
        return False
    if a.p.N * a.p.C * a.p.OC * a.p.kh * a.p.kw * a.p.Ho * a.p.Wo == 0 or \
            a.p.C * a.p.kh * a.p.kw > 512:
        return False
    for d in range(4):
        if x._strides[d] < 0 or w._strides[d] < 0:
            return False
    return True


cdef TensorBase _padded_nhwc(TensorBase x, int64_t pt, int64_t pb, int64_t pl, int64_t pr):
    """x (N, C, H, W) zero-padded into a channels-last copy; x itself without padding"""
    if pt == 0 and pb == 0 and pl == 0 and pr == 0:
        return x
    cdef int64_t sh[4]
    sh[0] = x._shape[0]
    sh[1] = x._shape[1]
    sh[2] = x._shape[2] + pt + pb
    sh[3] = x._shape[3] + pl + pr
    cdef TensorBase xp = new_cl(4, sh, x._dtype, x._device)
    fill_scalar(xp, 0)
    copy_into(plain_view(xp, 4, x._shape, xp._strides, pt * xp._strides[2] + pl * xp._strides[3]),
              x)
    return xp


cdef tuple _im2col_tables(_ConvArgs a, TensorBase xp):
    """row (n, ho, wo) and column (i, j, c) offsets of the im2col matrix of xp (the input
    with its padding applied)"""
    cdef TensorBase ro = _offsets(a.p.N * a.p.Ho * a.p.Wo)
    cdef TensorBase co = _offsets(a.p.kh * a.p.kw * a.p.C)
    cdef int64_t *r = <int64_t *>data_ptr(ro)
    cdef int64_t *c = <int64_t *>data_ptr(co)
    cdef int64_t *st = xp._strides
    with nogil:
        _grid(r, a.p.N, a.p.Ho, a.p.Wo, st[0], a.p.sh * st[2], a.p.sw * st[3])
        _grid(c, a.p.kh, a.p.kw, a.p.C, a.p.dh * st[2], a.p.dw * st[3], st[1])
    return ro, co


cdef TensorBase _conv_fwd_nhwc(_ConvArgs a, TensorBase x, TensorBase w, TensorBase b):
    """y (N, OC, Ho, Wo) channels-last = im2col(x) @ w^T (+ b)"""
    cdef int64_t K = a.p.kh * a.p.kw * a.p.C
    cdef TensorBase xp = _padded_nhwc(x, a.pt, a.pb, a.pl, a.pr)
    ro, co = _im2col_tables(a, xp)
    # w[oc, c, i, j] as the (K x OC) operand: rows (i, j, c) through a table
    cdef TensorBase rb = _offsets(K)
    with nogil:
        _grid(<int64_t *>data_ptr(rb), a.p.kh, a.p.kw, a.p.C, w._strides[2], w._strides[3],
              w._strides[1])
    cdef int64_t sh[4]
    sh[0] = a.p.N
    sh[1] = a.p.OC
    sh[2] = a.p.Ho
    sh[3] = a.p.Wo
    cdef TensorBase y = new_cl(4, sh, x._dtype, x._device)
    _gemm(x._dtype, a.p.N * a.p.Ho * a.p.Wo, a.p.OC, K, xp, 0, 0, ro, co,
          w, 0, w._strides[0], rb, None, y, a.p.OC, 1, contig(b) if b is not None else None)
    return y



cdef TensorBase _conv_weight_grad_nhwc(_ConvArgs a, TensorBase x, TensorBase dy):
    """dw[oc, c, i, j] = sum over (n, ho, wo) of dy * im2col(x), channels-last"""
    cdef int64_t K = a.p.kh * a.p.kw * a.p.C
    cdef TensorBase xp = _padded_nhwc(x, a.pt, a.pb, a.pl, a.pr)
    ro, co = _im2col_tables(a, xp)
    # dy as the (OC x N*Ho*Wo) operand: columns (n, ho, wo) through a table
    cdef TensorBase cy = _offsets(a.p.N * a.p.Ho * a.p.Wo)
    with nogil:
        _grid(<int64_t *>data_ptr(cy), a.p.N, a.p.Ho, a.p.Wo, dy._strides[0], dy._strides[2],
              dy._strides[3])
    cdef int64_t sh[4]
    sh[0] = a.p.OC
    sh[1] = a.p.C
    sh[2] = a.p.kh
    sh[3] = a.p.kw
    cdef TensorBase dw = new_cl(4, sh, x._dtype, x._device)
    _gemm(x._dtype, a.p.OC, K, a.p.N * a.p.Ho * a.p.Wo, dy, dy._strides[1], 0, None, cy,
          xp, 0, 0, ro, co, dw, K, 1, None)
    return dw


cdef bint _wino_nhwc(_ConvArgs a, TensorBase x, TensorBase w, int pass_):
    """the channels-last Winograd kernels take this pass (0 forward, 1 input gradient,
    2 weight gradient) of a conv over x and w (x and dy for pass 2): batched 2-D
    float32 with symmetric padding, a channels-last operand and no empty dimension"""
    if not (a.batched and a.nd == 2 and x._dtype == EM_F32 and w._dtype == EM_F32 and
            not _asym(a) and (cl_order(x) or cl_order(w))):
        return False
    if a.p.N * a.p.C * a.p.OC * a.p.H * a.p.W * a.p.Ho * a.p.Wo == 0:
        return False
    return ember_conv2d_nhwc_wino(&a.p, pass_) != 0


cdef TensorBase _cl_result(_ConvArgs a, int64_t C, int64_t H, int64_t W):
    cdef int64_t sh[4]
    sh[0] = a.p.N
    sh[1] = C
    sh[2] = H
    sh[3] = W
    return new_cl(4, sh, EM_F32, cpu_device())


cdef TensorBase _conv_fwd_wino_nhwc(_ConvArgs a, TensorBase x, TensorBase w, TensorBase b):
    """y (N, OC, Ho, Wo) channels-last = conv(x, w) (+ b) through Winograd on NHWC"""
    cdef TensorBase xc = to_cl(x), wc = from_cl(w)
    cdef TensorBase bc = contig(b) if b is not None else None
    cdef TensorBase y = _cl_result(a, a.p.OC, a.p.Ho, a.p.Wo)
    cdef const float *bp = <const float *>data_ptr(bc) if bc is not None else NULL
    cdef int nt = max_threads(), rc
    with nogil:
        rc = ember_conv2d_fwd_nhwc_f32(&a.p, <const float *>data_ptr(xc),
                                       <const float *>data_ptr(wc), bp, <float *>data_ptr(y),
                                       nt)
    _conv_rc(rc, "conv2d")
    return y


cdef TensorBase _conv_input_grad_wino_nhwc(_ConvArgs a, TensorBase dy, TensorBase w):
    """dx (N, C, H, W) channels-last through Winograd on NHWC"""
    cdef TensorBase dyc = to_cl(dy), wc = from_cl(w)
    cdef TensorBase dx = _cl_result(a, a.p.C, a.p.H, a.p.W)
    cdef int nt = max_threads(), rc
    with nogil:
        rc = ember_conv2d_bwd_input_nhwc_f32(&a.p, <const float *>data_ptr(dyc),
                                             <const float *>data_ptr(wc),
                                             <float *>data_ptr(dx), nt)
    _conv_rc(rc, "conv2d_input_grad")
    return dx


cdef TensorBase _conv_weight_grad_wino_nhwc(_ConvArgs a, TensorBase x, TensorBase dy):
    """dw (OC, C, 3, 3) channels-last, as torch's, through Winograd on NHWC"""
    cdef TensorBase xc = to_cl(x), dyc = to_cl(dy)
    cdef int64_t sh[4]
    sh[0] = a.p.OC
    sh[1] = a.p.C
    sh[2] = a.p.kh
    sh[3] = a.p.kw
    cdef TensorBase dw = new_tensor(4, sh, EM_F32, x._device)
    cdef int nt = max_threads(), rc
    with nogil:
        rc = ember_conv2d_bwd_weight_nhwc_f32(&a.p, <const float *>data_ptr(xc),
                                              <const float *>data_ptr(dyc),
                                              <float *>data_ptr(dw), nt)
    _conv_rc(rc, "conv2d_weight_grad")
    return to_cl(dw)


cdef object _conv_weight_grad_cl(_ConvArgs a, TensorBase x, TensorBase dy):
    """dw (OC, C, kh, kw) channels-last, as torch's, through the register-tiled
    kernel on NHWC copies (src_c/conv.c decides where it pays); None when it does
    not take this convolution"""
    if not (a.batched and a.nd == 2 and x._dtype == EM_F32 and dy._dtype == EM_F32 and
            not _asym(a) and (cl_order(x) or cl_order(dy))):
        return None
    if a.p.N * a.p.C * a.p.OC * a.p.H * a.p.W * a.p.Ho * a.p.Wo == 0:
        return None
    cdef TensorBase xc = to_cl(x), dyc = to_cl(dy)
    cdef int64_t sh[4]
    sh[0] = a.p.OC
    sh[1] = a.p.C
    sh[2] = a.p.kh
    sh[3] = a.p.kw
    cdef TensorBase dw = new_tensor(4, sh, EM_F32, x._device)
    cdef int nt = max_threads(), rc
    with nogil:
        rc = ember_conv2d_bwd_weight_cl_f32(&a.p, <const float *>data_ptr(xc),
                                            <const float *>data_ptr(dyc),
                                            <float *>data_ptr(dw), nt)
    if rc == 1:
        return None
    _conv_rc(rc, "conv2d_weight_grad")
    return to_cl(dw)
