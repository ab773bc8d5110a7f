# The call frame every op module shares: argument checks, the slow-path test,
# the grad test, the out=/autograd epilogue and the in-place-through-graph rule,
# written once.  Everything is `inline`: it compiles into each module that
# cimports it, so the per-op path makes no cross-module call.
#
# An op reads:
#     x = as_tensor(input, "op", "input", 1)
#     if needs_slow1(x):                       # or needs_slow((x, y, ...))
#         return redispatch("op", op, (input, ...), kwargs)
#     ... checks, kernel into r ...
#     return epilogue("op", (x, ...), r, attrs, out, OUT_CAST)
from libc.stdint cimport int64_t

from ember._C.core cimport (TensorBase, DEV_CPU, em_itemsize, make_view, nthreads_for,
                            grad_on, slow_path, record, write_out, copy_into, bump_version,
                            check_inplace, view_written, OUT_CAST)


cdef inline char *data_ptr(TensorBase t) noexcept nogil:
    """address of t's first element"""
    return t._storage.data + t._offset * em_itemsize[t._dtype]


cdef inline bint off_fast(TensorBase t) noexcept:
    """t cannot take a CPU kernel's fast path: another device or a lazy math bit"""
    return t._device.kind != DEV_CPU or t._mbits != 0


cdef inline bint lazy_out(object out):
    """out= has a lazy math bit: a kernel that writes out= directly would store the values
    unconjugated, so the op redispatches (the result is copied in through the bits)"""
    return isinstance(out, TensorBase) and (<TensorBase>out)._mbits != 0


cdef inline int max_threads() noexcept nogil:
    """the thread count for work large enough to use every thread"""
    return nthreads_for(<int64_t>1 << 40)


cdef inline str torch_type_name(int dt):
    """torch's scalar-type name of an ember dtype code ('Float', 'Long', ...)"""
    return ("Bool", "Byte", "Char", "Short", "Int", "Long", "Half", "BFloat16", "Float",
            "Double", "ComplexFloat", "ComplexDouble")[dt]


cdef inline str c_type_name(int dt):
    """the C++ type name torch prints for an ember dtype code ('float', 'long int', ...)"""
    return ("bool", "unsigned char", "signed char", "short int", "int", "long int",
            "c10::Half", "c10::BFloat16", "float", "double", "c10::complex<float>",
            "c10::complex<double>")[dt]


cdef inline str shape_list(TensorBase t):
    return "[" + ", ".join([str(t._shape[i]) for i in range(t._ndim)]) + "]"


# ---------------------------------------------------------------------------
# prologue

cdef inline TensorBase as_tensor(object x, str op, str arg, int pos=0):
    """x as a TensorBase, else torch's TypeError (with the argument's position when
    the caller knows it)"""
    if isinstance(x, TensorBase):
        return <TensorBase>x
    where = f" (position {pos})" if pos > 0 else ""
    raise TypeError(f"{op}(): argument '{arg}'{where} must be Tensor, not "
                    f"{type(x).__name__}")


cdef inline int check_out_arg(object out, str op) except -1:
    """out= is None or a tensor"""
    if out is not None and not isinstance(out, TensorBase):
        raise TypeError(f"{op}(): argument 'out' must be Tensor, not {type(out).__name__}")
    return 0


cdef inline bint needs_slow1(TensorBase t):
    """the op must go through redispatch: a Python mode is active, t is not on the CPU or
    t carries a lazy conjugate/negative bit (redispatch resolves it)"""
    return slow_path() or t._device.kind != DEV_CPU or t._mbits != 0


cdef inline bint needs_slow_arg(object x):
    """needs_slow1 for an argument that may not be a tensor (non-tensors are rejected
    later with a TypeError, never cast blindly)"""
    return slow_path() or (isinstance(x, TensorBase) and
                           ((<TensorBase>x)._device.kind != DEV_CPU or
                            (<TensorBase>x)._mbits != 0))


cdef inline bint needs_slow(tuple ts):
    """needs_slow_arg over several operands"""
    if slow_path():
        return True
    for t in ts:
        if isinstance(t, TensorBase) and ((<TensorBase>t)._device.kind != DEV_CPU or
                                          (<TensorBase>t)._mbits != 0):
            return True
    return False


cdef inline bint wants_grad1(TensorBase t):
    """grad mode is on and t requires grad: the op records a graph node"""
    return grad_on() and t._requires_grad


cdef inline bint any_grad(tuple ts):
    """wants_grad1 over several operands"""
    if not grad_on():
        return False
    for t in ts:
        if isinstance(t, TensorBase) and (<TensorBase>t)._requires_grad:
            return True
    return False


# ---------------------------------------------------------------------------
# epilogue

cdef inline object epilogue(str op, tuple inputs, TensorBase r, object attrs=None,
                            object out=None, int policy=OUT_CAST):
    """the end of an op that computed r: copy into out= (checked with `policy`), then
    record the graph node (with the attributes its backward formula reads) when an
    input requires grad"""
    if out is not None:
        r = <TensorBase>write_out(out, r, policy, inputs, op)
    if any_grad(inputs):
        record(op, inputs, r, attrs)
    return r


# ---------------------------------------------------------------------------
# the in-place-through-graph rule: self.op_(...) on a tensor the graph sees is
# computed out of place from a recorded copy of self's old value, then copied in;
# self takes the result's graph node.

cdef inline TensorBase graph_old(TensorBase self, str name):
    """self's old value as a graph node (a leaf copy when self needs no grad)"""
    check_inplace(self, name)
    return self.clone() if self._requires_grad else self.detach().clone()


cdef inline TensorBase commit_inplace(TensorBase self, TensorBase r):
    """write r into self and make self the output of r's graph node"""
    copy_into(self, r)
    bump_version(self)
    self._grad_fn = r._grad_fn
    self._requires_grad = self._requires_grad or r._requires_grad
    view_written(self)
    return self


cdef inline TensorBase plain_view(TensorBase t, int nd, const int64_t *shape,
                                  const int64_t *strides, int64_t offset):
    """a view that records nothing (internal plumbing)"""
    return make_view(t, nd, shape, strides, offset)
