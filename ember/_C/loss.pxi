# Fused cross-entropy of (N, C) or (N, C, d1, ...) logits against int64 class
# indices or class probabilities, and nll_loss of log-probabilities, included by
# reduce.pyx: one pass per row (or block of positions) forward (log-sum-exp,
# picked logit, smoothing term), one backward (softmax - one_hot, scaled); no
# log_softmax tensor and no transpose of the classes.

cdef extern from "ember_loss.h" nogil:
    int em_cross_entropy_fwd(int dtype, const char *x, const int64_t *t, const char *w,
                             int64_t N, int64_t C, int64_t P, int64_t ignore_index, double eps,
                             char *loss, char *lse, double *red, int nthreads)
    int em_cross_entropy_bwd(int dtype, const char *x, const int64_t *t, const char *w,
                             const char *lse, int64_t N, int64_t C, int64_t P,
                             int64_t ignore_index, double eps, const char *g, int64_t gstride,
                             double gscale, char *dx, int nthreads)
    int em_cross_entropy_prob_fwd(int dtype, const char *x, const char *p, const char *w,
                                  int64_t N, int64_t C, int64_t P, double eps, char *loss,
                                  char *lse, double *red, int nthreads)
    int em_cross_entropy_prob_bwd(int dtype, const char *x, const char *p, const char *w,
                                  const char *lse, int64_t N, int64_t C, int64_t P, double eps,
                                  const char *g, int64_t gstride, double gscale, char *dx,
                                  int nthreads)
    int em_nll_loss_fwd(int dtype, const char *x, const int64_t *t, const char *w, int64_t N,
                        int64_t C, int64_t P, int64_t ignore_index, char *loss, double *red,
                        int nthreads)
    int em_nll_loss_bwd(int dtype, const int64_t *t, const char *w, int64_t N, int64_t C,
                        int64_t P, int64_t ignore_index, const char *g, int64_t gstride,
                        double gscale, char *dx, int nthreads)


cdef TensorBase _loss_input(object input, str op, int64_t *N, int64_t *C, int64_t *P):
    """input as a contiguous float32/float64 (N, C, d1, ...) tensor: N samples of C
    classes at P = d1 * ... positions."""
    cdef TensorBase x = contig(_as_t(input, op))
    if x._ndim < 2 or (x._dtype != EM_F32 and x._dtype != EM_F64):
        raise RuntimeError(f"{op}: the fused kernel takes float32/float64 (N, C, ...) input")
    cdef int i
    N[0] = x._shape[0]
    C[0] = x._shape[1]
    P[0] = 1
    for i in range(2, x._ndim):
        P[0] *= x._shape[i]
    return x


cdef TensorBase _ce_target(object target, TensorBase x, int64_t ignore_index, str op):
    """target as a contiguous int64 tensor of x's shape without the class dim, its
    entries in [0, C) or ignore_index."""
    cdef TensorBase t = contig(_as_t(target, op))
    if t._dtype != EM_I64:
        raise RuntimeError(f"{op}: expected scalar type Long but found "
                           f"{torch_type_name(t._dtype)}")
    cdef int64_t N = x._shape[0], C = x._shape[1]
    if t._ndim == 0 or t._shape[0] != N:
        raise ValueError(f"Expected input batch_size ({N}) to match target batch_size "
                         f"({t._shape[0] if t._ndim else 0}).")
    cdef tuple want = (N,) + shape_tuple(x)[2:]
    if shape_tuple(t) != want:  # PyTorch's message for each input rank
        if x._ndim == 2:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        if x._ndim == 4 and t._ndim != 3:
            raise RuntimeError(f"only batches of spatial targets supported (3D tensors) but "
                               f"got targets of dimension: {t._ndim}")
        if x._ndim == 4:
            raise RuntimeError(f"size mismatch (got input: {list(shape_tuple(x))} , target: "
                               f"{list(shape_tuple(t))}")
        raise RuntimeError(f"Expected target size {list(want)}, got {list(shape_tuple(t))}")
    cdef const int64_t *tp = <const int64_t *>data_ptr(t)
    cdef int64_t i, v, n = numel_of(t._ndim, t._shape)
    for i in range(n):
        v = tp[i]
        if v != ignore_index and (v < 0 or v >= C):
            raise IndexError(f"Target {v} is out of bounds.")
    return t


cdef TensorBase _ce_weight(object weight, TensorBase x, int64_t C, str op):
    if weight is None:
        return None
    cdef TensorBase w = contig(cast(_as_t(weight, op), x._dtype))
    if w._ndim != 1 or w._shape[0] != C:
        raise RuntimeError(f"weight tensor should be defined either for all {C} classes "
                           f"or no classes but got weight tensor of shape: "
                           f"{list(shape_tuple(w))}")
    return w


cdef TensorBase _per_row(TensorBase x):
    """an empty tensor of x's shape without the class dim (dim 1)"""
    cdef int64_t sh[MAX_DIMS]
    cdef int i
    sh[0] = x._shape[0]
    for i in range(2, x._ndim):
        sh[i - 1] = x._shape[i]
    return new_tensor(x._ndim - 1, sh, x._dtype, x._device)


cdef TensorBase _reduced(TensorBase x, double s, double d, str reduction):
    """the 0-dim loss: the sum s, or s / d for the mean (nan for 0/0, +-inf for s/0)"""
    cdef int64_t sshape[1]
    cdef TensorBase out = new_tensor(0, sshape, x._dtype, x._device)
    cdef double v = s
    if reduction == "mean":
        v = s / d if d != 0 else (_math.nan if s == 0 else _math.copysign(_math.inf, s))
    if x._dtype == EM_F32:
        (<float *>data_ptr(out))[0] = <float>v
    else:
        (<double *>data_ptr(out))[0] = v
    return out


cdef inline int64_t _gstride(str reduction) noexcept:
    return 1 if reduction == "none" else 0


def cross_entropy_fused(input, target, weight, int64_t ignore_index, double label_smoothing,
                        str reduction):
    """(loss, lse, denom) of cross_entropy on float32/float64 (N, C, d1, ...) logits:
    lse is each row's log-sum-exp (for the backward), denom the mean's divisor (sum
    of the kept rows' class weights).  Not recorded for autograd."""
    cdef int64_t N, C, P
    cdef TensorBase x = _loss_input(input, "cross_entropy", &N, &C, &P)
    cdef TensorBase t = _ce_target(target, x, ignore_index, "cross_entropy")
    cdef TensorBase w = _ce_weight(weight, x, C, "cross_entropy")
    cdef TensorBase loss = _per_row(x)
    cdef TensorBase lse = _per_row(x)
    cdef double red[2]
    cdef const char *wp = data_ptr(w) if w is not None else NULL
    cdef int nt = nthreads_for(N * C * P * 8)
    cdef int rc
    with nogil:
        rc = em_cross_entropy_fwd(x._dtype, data_ptr(x), <const int64_t *>data_ptr(t), wp, N, C,
                                  P, ignore_index, label_smoothing, data_ptr(loss),
                                  data_ptr(lse), red, nt)
    if rc != 0:
        raise RuntimeError("cross_entropy: kernel failed")
    if reduction == "none":
        return loss, lse, red[1]
    return _reduced(x, red[0], red[1], reduction), lse, red[1]


def cross_entropy_fused_backward(grad, input, target, weight, lse, int64_t ignore_index,
                                 double label_smoothing, str reduction, double denom):
    """Gradient of cross_entropy_fused with respect to the logits; not recorded."""
    cdef int64_t N, C, P
    cdef TensorBase x = _loss_input(input, "cross_entropy", &N, &C, &P)
    cdef TensorBase t = contig(_as_t(target, "cross_entropy"))
    cdef TensorBase g = contig(cast(_as_t(grad, "cross_entropy"), x._dtype))
    cdef TensorBase ls = contig(_as_t(lse, "cross_entropy"))
    cdef TensorBase w = _ce_weight(weight, x, C, "cross_entropy")
    cdef double gscale = 1.0 / denom if reduction == "mean" else 1.0
    cdef TensorBase dx = new_like(x, -1)
    cdef const char *wp = data_ptr(w) if w is not None else NULL
    cdef int64_t gs = _gstride(reduction)
    cdef int nt = nthreads_for(N * C * P * 8)
    cdef int rc
    with nogil:
        rc = em_cross_entropy_bwd(x._dtype, data_ptr(x), <const int64_t *>data_ptr(t), wp,
                                  data_ptr(ls), N, C, P, ignore_index, label_smoothing,
                                  data_ptr(g), gs, gscale, data_ptr(dx), nt)
    if rc != 0:
        raise RuntimeError("cross_entropy: kernel failed")
    return dx


def cross_entropy_prob_fused(input, target, weight, double label_smoothing, str reduction):
    """(loss, lse) of cross_entropy on float32/float64 (N, C, d1, ...) logits against
    class probabilities of the same shape and dtype; lse is each row's log-sum-exp.
    Not recorded for autograd."""
    cdef int64_t N, C, P
    cdef TensorBase x = _loss_input(input, "cross_entropy", &N, &C, &P)
    cdef TensorBase p = contig(cast(_as_t(target, "cross_entropy"), x._dtype))
    if shape_tuple(p) != shape_tuple(x):
        raise RuntimeError(f"Expected target size {list(shape_tuple(x))}, got "
                           f"{list(shape_tuple(p))}")
    cdef TensorBase w = _ce_weight(weight, x, C, "cross_entropy")
    cdef TensorBase loss = _per_row(x)
    cdef TensorBase lse = _per_row(x)
    cdef double red[2]
    cdef const char *wp = data_ptr(w) if w is not None else NULL
    cdef int nt = nthreads_for(N * C * P * 8)
    cdef int rc
    with nogil:
        rc = em_cross_entropy_prob_fwd(x._dtype, data_ptr(x), data_ptr(p), wp, N, C, P,
                                       label_smoothing, data_ptr(loss), data_ptr(lse), red, nt)
    if rc != 0:
        raise RuntimeError("cross_entropy: kernel failed")
    if reduction == "none":
        return loss, lse
    return _reduced(x, red[0], red[1], reduction), lse


def cross_entropy_prob_fused_backward(grad, input, target, weight, lse,
                                      double label_smoothing, str reduction):
    """Gradient of cross_entropy_prob_fused with respect to the logits; not recorded."""
    cdef int64_t N, C, P
    cdef TensorBase x = _loss_input(input, "cross_entropy", &N, &C, &P)
    cdef TensorBase p = contig(cast(_as_t(target, "cross_entropy"), x._dtype))
    cdef TensorBase g = contig(cast(_as_t(grad, "cross_entropy"), x._dtype))
    cdef TensorBase ls = contig(_as_t(lse, "cross_entropy"))
    cdef TensorBase w = _ce_weight(weight, x, C, "cross_entropy")
    cdef double gscale = 1.0 / (N * P) if (reduction == "mean" and N * P != 0) else 1.0
    cdef TensorBase dx = new_like(x, -1)
    cdef const char *wp = data_ptr(w) if w is not None else NULL
    cdef int64_t gs = _gstride(reduction)
    cdef int nt = nthreads_for(N * C * P * 8)
    cdef int rc
    with nogil:
        rc = em_cross_entropy_prob_bwd(x._dtype, data_ptr(x), data_ptr(p), wp, data_ptr(ls),
                                       N, C, P, label_smoothing, data_ptr(g), gs, gscale,
                                       data_ptr(dx), nt)
    if rc != 0:
        raise RuntimeError("cross_entropy: kernel failed")
    return dx


def nll_loss_fused(input, target, weight, int64_t ignore_index, str reduction):
    """(loss, denom) of nll_loss on float32/float64 (N, C, d1, ...) log-probabilities:
    denom is the mean's divisor (sum of the kept rows' class weights).  Not recorded
    for autograd."""
    cdef int64_t N, C, P
    cdef TensorBase x = _loss_input(input, "nll_loss", &N, &C, &P)
    cdef TensorBase t = _ce_target(target, x, ignore_index, "nll_loss")
    cdef TensorBase w = _ce_weight(weight, x, C, "nll_loss")
    cdef TensorBase loss = _per_row(x)
    cdef double red[2]
    cdef const char *wp = data_ptr(w) if w is not None else NULL
    cdef int nt = nthreads_for(N * P * 64)
    cdef int rc
    with nogil:
        rc = em_nll_loss_fwd(x._dtype, data_ptr(x), <const int64_t *>data_ptr(t), wp, N, C, P,
                             ignore_index, data_ptr(loss), red, nt)
    if rc != 0:
        raise RuntimeError("nll_loss: kernel failed")
    if reduction == "none":
        return loss, red[1]
    return _reduced(x, red[0], red[1], reduction), red[1]


def nll_loss_fused_backward(grad, input, target, weight, int64_t ignore_index, str reduction,
                            double denom):
    """Gradient of nll_loss_fused with respect to the log-probabilities; not recorded."""
    cdef int64_t N, C, P
    cdef TensorBase x = _loss_input(input, "nll_loss", &N, &C, &P)
    cdef TensorBase t = contig(_as_t(target, "nll_loss"))
    cdef TensorBase g = contig(cast(_as_t(grad, "nll_loss"), x._dtype))
    cdef TensorBase w = _ce_weight(weight, x, C, "nll_loss")
    cdef double gscale = 1.0 / denom if reduction == "mean" else 1.0
    cdef TensorBase dx = new_like(x, -1)
    cdef const char *wp = data_ptr(w) if w is not None else NULL
    cdef int64_t gs = _gstride(reduction)
    cdef int nt = nthreads_for(N * C * P * 2)
    cdef int rc
    with nogil:
        rc = em_nll_loss_bwd(x._dtype, <const int64_t *>data_ptr(t), wp, N, C, P, ignore_index,
                             data_ptr(g), gs, gscale, data_ptr(dx), nt)
    if rc != 0:
        raise RuntimeError("nll_loss: kernel failed")
    return dx
