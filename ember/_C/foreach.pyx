# cython: language_level=3, boundscheck=False, wraparound=False
"""Multi-tensor kernels: one call runs an optimizer step (SGD, Adam/AdamW) or a norm over a
whole list of tensors, for the optimizers' ``foreach``/``fused`` paths and
``clip_grad_norm_``.  Each entry returns False (or None) without touching anything when
the tensors do not fit the kernel (not CPU, not contiguous, mixed or non-float dtypes,
Python mode active), so the caller falls back to its per-tensor path."""
from libc.stdint cimport int64_t, uint8_t
from libc.stdlib cimport free, malloc

from ember._C.core cimport *
from ember._C.frame cimport *

from ember._C.c_foreach cimport *

from ember._C.c_reduce cimport (RD_MAX, RD_ASUM, RD_SSQ, RD_PSUM, RD_AMAX, RP_NONE, RP_SQRT,
                                RP_ROOT, em_reduce, em_reduce_post)


cdef class _Lists:
    """C arrays of data pointers (one row per tensor list) and element counts."""
    cdef char **ptrs
    cdef int64_t *numel
    cdef int64_t count
    cdef int rows
    cdef int dtype

    def __cinit__(self, int rows, int64_t count):
        self.rows, self.count = rows, count
        self.ptrs = <char **>malloc(sizeof(char *) * rows * (count if count else 1))
        self.numel = <int64_t *>malloc(sizeof(int64_t) * (count if count else 1))
        if self.ptrs == NULL or self.numel == NULL:
            raise MemoryError()

    def __dealloc__(self):
        free(self.ptrs)
        free(self.numel)

    cdef char **row(self, int r) noexcept nogil:
        return self.ptrs + r * self.count


cdef bint _fits(object x, int dtype, int64_t n) noexcept:
    cdef TensorBase t
    if not isinstance(x, TensorBase):
        return False
    t = <TensorBase>x
    return (t._dtype == dtype and t._device.kind == DEV_CPU and t._mbits == 0
            and is_contig(t) and numel_of(t._ndim, t._shape) == n)


cdef _Lists _gather(list rows, bint check_params=True):
    """Pointers of every list in ``rows`` (rows[0] sets dtype and sizes), or None."""
    cdef int64_t count = len(rows[0]), k
    cdef int r, r2, dtype
    cdef TensorBase p
    if count == 0 or slow_path():
        return None
    if not isinstance(rows[0][0], TensorBase):
        return None
    dtype = (<TensorBase>rows[0][0])._dtype
    if dtype != EM_F32 and dtype != EM_F64:
        return None
    cdef _Lists L = _Lists(len(rows), count)
    L.dtype = dtype
    for r in range(len(rows)):
        if len(rows[r]) != count:
            return None
    for k in range(count):
        x = rows[0][k]
        if not isinstance(x, TensorBase):
            return None
        p = <TensorBase>x
        L.numel[k] = numel_of(p._ndim, p._shape)
        for r in range(len(rows)):
            if not _fits(rows[r][k], dtype, L.numel[k]):
                return None
            L.row(r)[k] = data_ptr(<TensorBase>rows[r][k])
            for r2 in range(r):  # the kernels assume distinct buffers (C restrict)
                if L.row(r2)[k] == L.row(r)[k] and L.numel[k]:
                    return None
    return L


cdef int64_t _total(_Lists L) noexcept:
    cdef int64_t s = 0, k
    for k in range(L.count):
        s += L.numel[k]
    return s


cdef void _bump(list ts):
    for t in ts:
        bump_version(<TensorBase>t)


def sgd_(list params, list grads, list bufs, list init, double lr, double weight_decay,
         double momentum, double dampening, bint nesterov, bint maximize):
    """One SGD step over every (param, grad[, momentum buffer]); ``init[i]`` starts
    buffer i from the gradient.  Returns False (nothing done) when the tensors do not fit."""
    cdef bint mo = momentum != 0
    cdef _Lists L = _gather([params, grads, bufs] if mo else [params, grads])
    if L is None:
        return False
    cdef uint8_t *ini = <uint8_t *>malloc(L.count if L.count else 1)
    if ini == NULL:
        raise MemoryError()
    cdef int64_t k
    for k in range(L.count):
        ini[k] = 1 if (mo and init[k]) else 0
    cdef em_sgd_args a
    a.lr, a.weight_decay, a.momentum, a.dampening = lr, weight_decay, momentum, dampening
    a.nesterov, a.maximize = nesterov, maximize
    cdef int nt = nthreads_for(_total(L)), rc
    with nogil:
        rc = em_sgd_multi(L.dtype, L.count, L.row(0), L.row(1), L.row(2) if mo else NULL,
                          ini, L.numel, &a, nt)
    free(ini)
    if rc:
        raise MemoryError()
    _bump(params)
    if mo:
        _bump(bufs)
    return True


def adam_(list params, list grads, list exp_avgs, list exp_avg_sqs, list max_exp_avg_sqs,
          list steps, double lr, double beta1, double beta2, double eps, double weight_decay,
          bint amsgrad, bint maximize, bint decoupled):
    """One Adam (``decoupled``: AdamW) step over every parameter; ``steps[i]`` is the
    step count of parameter i after this step.  Returns False when the tensors do not fit."""
    rows = [params, grads, exp_avgs, exp_avg_sqs]
    if amsgrad:
        rows.append(max_exp_avg_sqs)
    cdef _Lists L = _gather(rows)
    if L is None:
        return False
    cdef double *st = <double *>malloc(sizeof(double) * L.count)
    if st == NULL:
        raise MemoryError()
    cdef int64_t k
    for k in range(L.count):
        st[k] = steps[k]
    cdef em_adam_args a
    a.lr, a.beta1, a.beta2, a.eps, a.weight_decay = lr, beta1, beta2, eps, weight_decay
    a.amsgrad, a.maximize, a.decoupled = amsgrad, maximize, decoupled
    cdef int nt = nthreads_for(_total(L)), rc
    with nogil:
        rc = em_adam_multi(L.dtype, L.count, L.row(0), L.row(1), L.row(2), L.row(3),
                           L.row(4) if amsgrad else NULL, st, L.numel, &a, nt)
    free(st)
    if rc:
        raise MemoryError()
    for r in rows[:1] + rows[2:]:
        _bump(r)
    return True


def scale_(list tensors, double c):
    """Multiply every tensor in place by ``c`` (rounded to its dtype). False if unfit."""
    cdef _Lists L = _gather([tensors])
    if L is None:
        return False
    cdef int nt = nthreads_for(_total(L)), rc
    with nogil:
        rc = em_scale_multi(L.dtype, L.count, L.row(0), L.numel, c, nt)
    if rc:
        raise MemoryError()
    _bump(tensors)
    return True


def total_norm(list tensors, double p):
    """The ``p``-norm of the per-tensor ``p``-norms (p > 0, finite or inf) as a 0-dim
    tensor, computed with the same blocked reductions as ``vector_norm`` (so the value is
    the per-tensor path's, bit for bit), or None when the tensors do not fit."""
    cdef _Lists L = _gather([tensors])
    if L is None or p <= 0:
        return None
    cdef int op, post
    if p == 2:
        op, post = RD_SSQ, RP_SQRT
    elif p == 1:
        op, post = RD_ASUM, RP_NONE
    elif p == float("inf"):
        op, post = RD_AMAX, RP_NONE
    else:
        op, post = RD_PSUM, RP_ROOT
    cdef int64_t k, n0
    for k in range(L.count):
        if L.numel[k] == 0 and op == RD_AMAX:
            return None
    cdef int64_t one = 1
    cdef TensorBase parts = new_tensor(1, &L.count, L.dtype, cpu_device())
    cdef TensorBase res = new_tensor(0, &one, L.dtype, cpu_device())
    cdef int isz = em_itemsize[L.dtype], rc = 0
    cdef char *pp = data_ptr(parts)
    with nogil:
        for k in range(L.count):
            rc |= em_reduce(op, L.dtype, L.row(0)[k], 1, L.numel[k], 1, pp + k * isz, NULL, p,
                            nthreads_for(L.numel[k]))
        if post != RP_NONE:
            em_reduce_post(post, L.dtype, pp, L.count, p, NULL)
        if L.count == 1:
            n0 = 0
        else:
            rc |= em_reduce(op, L.dtype, pp, 1, L.count, 1, data_ptr(res), NULL, p, 1)
            if post != RP_NONE:
                em_reduce_post(post, L.dtype, data_ptr(res), 1, p, NULL)
    if rc:
        return None
    return parts[0].clone() if L.count == 1 else res
