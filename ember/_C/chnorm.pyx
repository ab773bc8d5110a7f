# cython: freethreading_compatible = False
"""batch_norm and group_norm over ember's fused kernels (src_c/chnorm.c).

Each forward is one kernel call (statistics, normalisation and affine in one
pass per channel or group, running statistics updated in place) and each
backward another.  The entry points return None when the fused path does not
apply (a Python mode or non-CPU tensors, dtypes other than float32/float64,
parameters that are not plain tensors of the input's dtype and size): the
caller then runs the composed form, which also gives PyTorch's error messages.
Results do not depend on the number of threads."""
from libc.stdint cimport int64_t

from ember._C.core cimport *
from ember._C.frame cimport *
from ember._C.c_chnorm cimport *
from ember._C.layout cimport cl_order, dense_cl, from_cl, new_cl, to_cl


cdef bint _param_ok(object p, TensorBase x, int64_t C, bint write):
    """p is None or a CPU tensor of x's dtype with C elements (contiguous when the
    kernel writes it)"""
    if p is None:
        return True
    if not isinstance(p, TensorBase):
        return False
    cdef TensorBase q = <TensorBase>p
    if q._dtype != x._dtype or q._device.kind != DEV_CPU or q._ndim != 1 or q._shape[0] != C:
        return False
    return not write or is_contig(q)


cdef inline const char *_cptr(object p):
    return data_ptr(<TensorBase>p) if p is not None else NULL


cdef int64_t _hw(TensorBase x) noexcept:
    cdef int64_t hw = 1
    cdef int i
    for i in range(2, x._ndim):
        hw *= x._shape[i]
    return hw


cdef TensorBase _vec(int64_t n, TensorBase like):
    cdef int64_t sh[1]
    sh[0] = n
    return new_tensor(1, sh, like._dtype, like._device)


def batch_norm(input, running_mean, running_var, weight, bias, bint training, double momentum,
               double eps):
    """Fused batch normalisation of an (N, C, *) float32/float64 CPU tensor, or None
    when the fused path does not apply (see the module docstring).  In training the
    running statistics (when given) are updated in place."""
    if slow_path() or not isinstance(input, TensorBase):
        return None
    cdef TensorBase t = <TensorBase>input
    if (t._device.kind != DEV_CPU or (t._dtype != EM_F32 and t._dtype != EM_F64)
            or t._ndim < 2):
        return None
    cdef int64_t N = t._shape[0], C = t._shape[1], HW = _hw(t)
    if not (_param_ok(weight, t, C, False) and _param_ok(bias, t, C, False)
            and _param_ok(running_mean, t, C, True) and _param_ok(running_var, t, C, True)):
        return None
    if not training and (running_mean is None or running_var is None):
        return None
    if training and N * HW <= 1:
        return None
    # a dense channels-last input is normalised in place as (N*HW, C) rows
    cdef bint cl = dense_cl(t._ndim, t._shape, t._strides) and not is_contig(t)
    cdef TensorBase x = t if cl else from_cl(t)
    cdef TensorBase w = contig(<TensorBase>weight) if weight is not None else None
    cdef TensorBase b = contig(<TensorBase>bias) if bias is not None else None
    cdef TensorBase y = new_cl(t._ndim, t._shape, t._dtype, t._device) if cl else new_like(x, -1)
    cdef TensorBase smean = _vec(C, x)
    cdef TensorBase sinv = _vec(C, x)
    cdef const char *wp = _cptr(w)
    cdef const char *bp = _cptr(b)
    cdef char *rmp = data_ptr(<TensorBase>running_mean) if running_mean is not None else NULL
    cdef char *rvp = data_ptr(<TensorBase>running_var) if running_var is not None else NULL
    cdef int nt = nthreads_for(N * C * HW * 4)
    cdef int rc
    with nogil:
        if cl:
            rc = em_batch_norm_fwd_cl(x._dtype, data_ptr(x), wp, bp, N * HW, C, training, eps,
                                      momentum, rmp, rvp, data_ptr(y), data_ptr(smean),
                                      data_ptr(sinv), nt)
        else:
            rc = em_batch_norm_fwd(x._dtype, data_ptr(x), wp, bp, N, C, HW, training, eps,
                                   momentum, rmp, rvp, data_ptr(y), data_ptr(smean),
                                   data_ptr(sinv), nt)
    if rc == -2:
        raise MemoryError("batch_norm: out of memory")
    if rc != 0:
        raise RuntimeError("batch_norm: kernel failed")
    if training:
        if running_mean is not None:
            bump_version(<TensorBase>running_mean)
        if running_var is not None:
            bump_version(<TensorBase>running_var)
    if not cl and cl_order(t):      # torch keeps the input's memory format
        y = to_cl(y)
    if any_grad((t, weight, bias)):
        record("batch_norm", (input, weight, bias), y,
               {"training": training, "eps": eps, "save_mean": smean, "save_invstd": sinv})
    return y


cdef tuple _bwd_operands(str op, grad, input, stat1, str name1, stat2, str name2, weight,
                         bint need_input, bint need_weight, bint need_bias):
    """The contiguous operands of a norm backward and its outputs (None where not
    needed): (x, g, stat1, stat2, w, dx, dw, db)."""
    cdef TensorBase x = from_cl(as_tensor(input, op, "input"))
    cdef int64_t C = x._shape[1]
    return (x, from_cl(cast(as_tensor(grad, op, "grad"), x._dtype)),
            contig(as_tensor(stat1, op, name1)), contig(as_tensor(stat2, op, name2)),
            contig(<TensorBase>weight) if weight is not None else None,
            new_like(x, -1) if need_input else None,
            _vec(C, x) if need_weight else None, _vec(C, x) if need_bias else None)


cdef object _like_input(TensorBase dx, object input):
    """a row-major input gradient in the input's channels-last layout when it has one"""
    if dx is not None and cl_order(<TensorBase>input):
        return to_cl(dx)
    return dx


def batch_norm_backward(grad, input, save_mean, save_invstd, weight, bint training,
                        bint need_input, bint need_weight, bint need_bias):
    """(grad_input, grad_weight, grad_bias) of batch_norm from the saved mean and
    1/std (flat [C] parameter gradients); None for each one not needed.  Not
    recorded: the formula composes public ops when a graph of the backward is wanted."""
    cdef TensorBase x, g, sm, si, w, dx, dw, db
    cdef TensorBase t = as_tensor(input, "batch_norm_backward", "input")
    if dense_cl(t._ndim, t._shape, t._strides) and not is_contig(t):
        return _batch_norm_backward_cl(grad, t, save_mean, save_invstd, weight, training,
                                       need_input, need_weight, need_bias)
    x, g, sm, si, w, dx, dw, db = _bwd_operands(
        "batch_norm_backward", grad, input, save_mean, "save_mean", save_invstd, "save_invstd",
        weight, need_input, need_weight, need_bias)
    cdef int64_t N = x._shape[0], C = x._shape[1], HW = _hw(x)
    cdef const char *wp = _cptr(w)
    cdef char *dxp = data_ptr(dx) if dx is not None else NULL
    cdef char *dwp = data_ptr(dw) if dw is not None else NULL
    cdef char *dbp = data_ptr(db) if db is not None else NULL
    cdef int nt = nthreads_for(N * C * HW * 8)
    cdef int rc
    with nogil:
        rc = em_batch_norm_bwd(x._dtype, data_ptr(g), data_ptr(x), data_ptr(sm), data_ptr(si), wp,
                               N, C, HW, training, dxp, dwp, dbp, nt)
    if rc != 0:
        raise RuntimeError("batch_norm_backward: kernel failed")
    return _like_input(dx, input), dw, db


cdef tuple _batch_norm_backward_cl(grad, TensorBase x, save_mean, save_invstd, weight,
                                   bint training, bint need_input, bint need_weight,
                                   bint need_bias):
    """batch_norm_backward of a dense channels-last input, in its layout (a channels-last
    grad_input)"""
    op = "batch_norm_backward"
    cdef int64_t C = x._shape[1], M = x._shape[0] * _hw(x)
    cdef TensorBase g = to_cl(cast(as_tensor(grad, op, "grad"), x._dtype))
    cdef TensorBase sm = contig(as_tensor(save_mean, op, "save_mean"))
    cdef TensorBase si = contig(as_tensor(save_invstd, op, "save_invstd"))
    cdef TensorBase w = contig(<TensorBase>weight) if weight is not None else None
    cdef TensorBase dx = new_cl(x._ndim, x._shape, x._dtype, x._device) if need_input else None
    cdef TensorBase dw = _vec(C, x) if need_weight else None
    cdef TensorBase db = _vec(C, x) if need_bias else None
    cdef const char *wp = _cptr(w)
    cdef char *dxp = data_ptr(dx) if dx is not None else NULL
    cdef char *dwp = data_ptr(dw) if dw is not None else NULL
    cdef char *dbp = data_ptr(db) if db is not None else NULL
    cdef int nt = nthreads_for(M * C * 8)
    cdef int rc
    with nogil:
        rc = em_batch_norm_bwd_cl(x._dtype, data_ptr(g), data_ptr(x), data_ptr(sm), data_ptr(si),
                                  wp, M, C, training, dxp, dwp, dbp, nt)
    if rc == -2:
        raise MemoryError("batch_norm_backward: out of memory")
    if rc != 0:
        raise RuntimeError("batch_norm_backward: kernel failed")
    return dx, dw, db


def group_norm(input, int64_t num_groups, weight, bias, double eps):
    """Fused group normalisation of an (N, C, *) float32/float64 CPU tensor (C a
    multiple of num_groups, checked by the caller), or None when the fused path
    does not apply."""
    if slow_path() or not isinstance(input, TensorBase):
        return None
    cdef TensorBase t = <TensorBase>input
    if (t._device.kind != DEV_CPU or (t._dtype != EM_F32 and t._dtype != EM_F64)
            or t._ndim < 2 or num_groups < 1 or t._shape[1] % num_groups != 0):
        return None
    cdef int64_t N = t._shape[0], C = t._shape[1], HW = _hw(t)
    if not (_param_ok(weight, t, C, False) and _param_ok(bias, t, C, False)):
        return None
    cdef TensorBase x = from_cl(t)
    cdef TensorBase w = contig(<TensorBase>weight) if weight is not None else None
    cdef TensorBase b = contig(<TensorBase>bias) if bias is not None else None
    cdef TensorBase y = new_like(x, -1)
    cdef TensorBase mean = _vec(N * num_groups, x)
    cdef TensorBase rstd = _vec(N * num_groups, x)
    cdef const char *wp = _cptr(w)
    cdef const char *bp = _cptr(b)
    cdef int nt = nthreads_for(N * C * HW * 4)
    cdef int rc
    with nogil:
        rc = em_group_norm_fwd(x._dtype, data_ptr(x), wp, bp, N, C, HW, num_groups, eps,
                               data_ptr(y), data_ptr(mean), data_ptr(rstd), nt)
    if rc != 0:
        raise RuntimeError("group_norm: kernel failed")
    if cl_order(t):
        y = to_cl(y)
    if any_grad((t, weight, bias)):
        record("group_norm", (input, weight, bias), y,
               {"num_groups": num_groups, "eps": eps, "mean": mean, "rstd": rstd})
    return y


def group_norm_backward(grad, input, mean, rstd, weight, int64_t num_groups, bint need_input,
                        bint need_weight, bint need_bias):
    """(grad_input, grad_weight, grad_bias) of group_norm from the saved per-(sample,
    group) mean and 1/std; None for each one not needed.  Not recorded."""
    cdef TensorBase x, g, mu, rs, w, dx, dw, db
    x, g, mu, rs, w, dx, dw, db = _bwd_operands(
        "group_norm_backward", grad, input, mean, "mean", rstd, "rstd", weight, need_input,
        need_weight, need_bias)
    cdef int64_t N = x._shape[0], C = x._shape[1], HW = _hw(x)
    cdef const char *wp = _cptr(w)
    cdef char *dxp = data_ptr(dx) if dx is not None else NULL
    cdef char *dwp = data_ptr(dw) if dw is not None else NULL
    cdef char *dbp = data_ptr(db) if db is not None else NULL
    cdef int nt = nthreads_for(N * C * HW * 8)
    cdef int rc
    with nogil:
        rc = em_group_norm_bwd(x._dtype, data_ptr(g), data_ptr(x), data_ptr(mu), data_ptr(rs), wp,
                               N, C, HW, num_groups, dxp, dwp, dbp, nt)
    if rc == -2:
        raise MemoryError("group_norm_backward: out of memory")
    if rc != 0:
        raise RuntimeError("group_norm_backward: kernel failed")
    return _like_input(dx, input), dw, db
