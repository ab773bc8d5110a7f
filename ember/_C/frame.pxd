# Helpers every op module shares, compiled inline into each module that cimports
# them (no cross-module call on the per-op path).
from libc.stdint cimport int64_t

from ember._C.core cimport (TensorBase, DEV_CPU, em_itemsize, make_view, nthreads_for,
                            grad_on, slow_path)


cdef inline char *data_ptr(TensorBase t) noexcept nogil:
    """address of t's first element"""
    return t._storage.data + t._offset * em_itemsize[t._dtype]


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


cdef inline TensorBase as_tensor(object x, str op, str arg):
    if not isinstance(x, TensorBase):
        raise TypeError(f"{op}(): argument '{arg}' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")
    return <TensorBase>x


cdef inline bint needs_slow(tuple ts):
    """the op must go through redispatch: a Python mode is active or an operand is
    not on the CPU"""
    if slow_path():
        return True
    for t in ts:
        # user objects: non-tensors are rejected later with a TypeError, never cast blindly
        if isinstance(t, TensorBase) and (<TensorBase>t)._device.kind != DEV_CPU:
            return True
    return False


cdef inline bint any_grad(tuple ts):
    """grad mode is on and some operand requires grad: the op records a graph node"""
    if not grad_on():
        return False
    for t in ts:
        if isinstance(t, TensorBase) and (<TensorBase>t)._requires_grad:
            return True
    return False


cdef inline TensorBase plain_view(TensorBase t, int nd, const int64_t *shape,
                                  const int64_t *strides, int64_t offset):
    """a view that records nothing (internal plumbing)"""
    return make_view(t, nd, shape, strides, offset)
