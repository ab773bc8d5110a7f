# Fused cross-entropy of (N, C) logits and int64 class indices or class
# probabilities, included by
# reduce.pyx: one pass per row forward (log-sum-exp, picked logit, smoothing
# term), one per row backward (softmax - one_hot, scaled); no log_softmax tensor.

cdef extern from "ember_loss.h" nogil:
    int em_cross_entropy_fwd(int dtype, const char *x, const int64_t *t, const char *w,
                             int64_t N, int64_t C, int64_t ignore_index, double eps,
                             char *loss, char *lse, double *red, int nthreads)
    int em_cross_entropy_bwd(int dtype, const char *x, const int64_t *t, const char *w,
                             const char *lse, int64_t N, int64_t C, int64_t ignore_index,
                             double eps, const char *g, int64_t gstride, double gscale,
                             char *dx, int nthreads)
    int em_cross_entropy_prob_fwd(int dtype, const char *x, const char *p, const char *w,
                                  int64_t N, int64_t C, double eps, char *loss, char *lse,
                                  double *red, int nthreads)
    int em_cross_entropy_prob_bwd(int dtype, const char *x, const char *p, const char *w,
                                  const char *lse, int64_t N, int64_t C, double eps,
                                  const char *g, int64_t gstride, double gscale, char *dx,
                                  int nthreads)


cdef TensorBase _ce_target(object target, int64_t N, int64_t C, int64_t ignore_index):
    """target as a contiguous int64 [N] tensor whose entries are in [0, C) or ignore_index."""
    cdef TensorBase t = contig(_as_t(target, "cross_entropy"))
    if t._dtype != EM_I64:
        raise RuntimeError(f"cross_entropy: expected scalar type Long but found "
                           f"{torch_type_name(t._dtype)}")
    if t._ndim != 1 or t._shape[0] != N:
        raise ValueError(f"Expected input batch_size ({N}) to match target batch_size "
                         f"({t._shape[0] if t._ndim else 0}).")
    cdef const int64_t *tp = <const int64_t *>data_ptr(t)
    cdef int64_t i, v
    for i in range(N):
        v = tp[i]
        if v != ignore_index and (v < 0 or v >= C):
            raise IndexError(f"Target {v} is out of bounds.")
    return t


def cross_entropy_fused(input, target, weight, int64_t ignore_index, double label_smoothing,
                        str reduction):
    """(loss, lse, denom) of cross_entropy on float32/float64 (N, C) logits: lse is each
    row's log-sum-exp (for the backward), denom the mean's divisor (sum of the kept
    rows' class weights).  Not recorded for autograd."""
    cdef TensorBase x = contig(_as_t(input, "cross_entropy"))
    if x._ndim != 2 or (x._dtype != EM_F32 and x._dtype != EM_F64):
        raise RuntimeError("cross_entropy: the fused kernel takes float32/float64 (N, C) "
                           "logits")
    cdef int64_t N = x._shape[0], C = x._shape[1]
    cdef TensorBase t = _ce_target(target, N, C, ignore_index)
    cdef TensorBase w = None
    if weight is not None:
        w = contig(cast(_as_t(weight, "cross_entropy"), x._dtype))
        if w._ndim != 1 or w._shape[0] != C:
            raise RuntimeError(f"weight tensor should be defined either for all {C} classes "
                               f"or no classes but got weight tensor of shape: "
                               f"{list(shape_tuple(w))}")
    cdef TensorBase loss = new_tensor(1, x._shape, x._dtype, x._device)
    cdef TensorBase lse = new_tensor(1, x._shape, x._dtype, x._device)
    cdef double red[2]
    cdef const char *wp = data_ptr(w) if w is not None else NULL
    cdef int nt = nthreads_for(N * C * 8)
    cdef int rc
    with nogil:
        rc = em_cross_entropy_fwd(x._dtype, data_ptr(x), <const int64_t *>data_ptr(t), wp, N, C,
                                  ignore_index, label_smoothing, data_ptr(loss), data_ptr(lse), red, nt)
    if rc != 0:
        raise RuntimeError("cross_entropy: kernel failed")
    cdef int64_t sshape[1]
    cdef TensorBase out
    if reduction == "none":
        return loss, lse, red[1]
    out = new_tensor(0, sshape, x._dtype, x._device)
    cdef double v = red[0]
    if reduction == "mean":
        v = red[0] / red[1] if red[1] != 0 else (_math.nan if red[0] == 0 else
                                                 _math.copysign(_math.inf, red[0]))
    if x._dtype == EM_F32:
        (<float *>data_ptr(out))[0] = <float>v
    else:
        (<double *>data_ptr(out))[0] = v
    return out, lse, red[1]


def cross_entropy_fused_backward(grad, input, target, weight, lse, int64_t ignore_index,
                                 double label_smoothing, str reduction, double denom):
    """Gradient of cross_entropy_fused with respect to the logits; not recorded."""
    cdef TensorBase x = contig(_as_t(input, "cross_entropy"))
    cdef int64_t N = x._shape[0], C = x._shape[1]
    cdef TensorBase t = contig(_as_t(target, "cross_entropy"))
    cdef TensorBase g = contig(cast(_as_t(grad, "cross_entropy"), x._dtype))
    cdef TensorBase ls = contig(_as_t(lse, "cross_entropy"))
    cdef TensorBase w = contig(cast(_as_t(weight, "cross_entropy"), x._dtype)) \
        if weight is not None else None
    cdef int64_t gs = 1 if reduction == "none" else 0
    cdef double gscale = 1.0 / denom if reduction == "mean" else 1.0
    cdef TensorBase dx = new_like(x, -1)
    cdef const char *wp = data_ptr(w) if w is not None else NULL
    cdef int nt = nthreads_for(N * C * 8)
    cdef int rc
    with nogil:
        rc = em_cross_entropy_bwd(x._dtype, data_ptr(x), <const int64_t *>data_ptr(t), wp, data_ptr(ls), N,
                                  C, ignore_index, label_smoothing, data_ptr(g), gs, gscale,
                                  data_ptr(dx), nt)
    if rc != 0:
        raise RuntimeError("cross_entropy: kernel failed")
    return dx


cdef TensorBase _ce_weight(object weight, TensorBase x, int64_t C):
    if weight is None:
        return None
    cdef TensorBase w = contig(cast(_as_t(weight, "cross_entropy"), x._dtype))
    if w._ndim != 1 or w._shape[0] != C:
        raise RuntimeError(f"weight tensor should be defined either for all {C} classes "
                           f"or no classes but got weight tensor of shape: "
                           f"{list(shape_tuple(w))}")
    return w


def cross_entropy_prob_fused(input, target, weight, double label_smoothing, str reduction):
    """(loss, lse) of cross_entropy on float32/float64 (N, C) logits against class
    probabilities of the same shape and dtype; lse is each row's log-sum-exp.
    Not recorded for autograd."""
    cdef TensorBase x = contig(_as_t(input, "cross_entropy"))
    if x._ndim != 2 or (x._dtype != EM_F32 and x._dtype != EM_F64):
        raise RuntimeError("cross_entropy: the fused kernel takes float32/float64 (N, C) "
                           "logits")
    cdef int64_t N = x._shape[0], C = x._shape[1]
    cdef TensorBase p = contig(cast(_as_t(target, "cross_entropy"), x._dtype))
    if p._ndim != 2 or p._shape[0] != N or p._shape[1] != C:
        raise RuntimeError(f"Expected target size {list(shape_tuple(x))}, got "
                           f"{list(shape_tuple(p))}")
    cdef TensorBase w = _ce_weight(weight, x, C)
    cdef TensorBase loss = new_tensor(1, x._shape, x._dtype, x._device)
    cdef TensorBase lse = new_tensor(1, x._shape, x._dtype, x._device)
    cdef double red[2]
    cdef const char *wp = data_ptr(w) if w is not None else NULL
    cdef int nt = nthreads_for(N * C * 8)
    cdef int rc
    with nogil:
        rc = em_cross_entropy_prob_fwd(x._dtype, data_ptr(x), data_ptr(p), wp, N, C,
                                       label_smoothing, data_ptr(loss), data_ptr(lse), red, nt)
    if rc != 0:
        raise RuntimeError("cross_entropy: kernel failed")
    if reduction == "none":
        return loss, lse
    cdef int64_t sshape[1]
    cdef TensorBase out = new_tensor(0, sshape, x._dtype, x._device)
    cdef double v = red[0]
    if reduction == "mean":
        v = red[0] / N if N != 0 else _math.nan
    if x._dtype == EM_F32:
        (<float *>data_ptr(out))[0] = <float>v
    else:
        (<double *>data_ptr(out))[0] = v
    return out, lse


def cross_entropy_prob_fused_backward(grad, input, target, weight, lse,
                                      double label_smoothing, str reduction):
    """Gradient of cross_entropy_prob_fused with respect to the logits; not recorded."""
    cdef TensorBase x = contig(_as_t(input, "cross_entropy"))
    cdef int64_t N = x._shape[0], C = x._shape[1]
    cdef TensorBase p = contig(cast(_as_t(target, "cross_entropy"), x._dtype))
    cdef TensorBase g = contig(cast(_as_t(grad, "cross_entropy"), x._dtype))
    cdef TensorBase ls = contig(_as_t(lse, "cross_entropy"))
    cdef TensorBase w = _ce_weight(weight, x, C)
    cdef int64_t gs = 1 if reduction == "none" else 0
    cdef double gscale = 1.0 / N if (reduction == "mean" and N != 0) else 1.0
    cdef TensorBase dx = new_like(x, -1)
    cdef const char *wp = data_ptr(w) if w is not None else NULL
    cdef int nt = nthreads_for(N * C * 8)
    cdef int rc
    with nogil:
        rc = em_cross_entropy_prob_bwd(x._dtype, data_ptr(x), data_ptr(p), wp, data_ptr(ls),
                                       N, C, label_smoothing, data_ptr(g), gs, gscale,
                                       data_ptr(dx), nt)
    if rc != 0:
        raise RuntimeError("cross_entropy: kernel failed")
    return dx
