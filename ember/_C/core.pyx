# cython: freethreading_compatible = False
"""ember's native core: dtypes, devices, Storage, TensorBase, views, copies,
broadcasting, type promotion, threads, grad mode and the dispatcher hooks.

Everything that other Cython modules need is declared in core.pxd."""
cimport cython
import math as _math
import os as _os

from cpython.buffer cimport PyBUF_FORMAT, PyBUF_STRIDES, PyBUF_WRITABLE, PyObject_GetBuffer, PyBuffer_Release
from cpython.pycapsule cimport (PyCapsule_GetPointer, PyCapsule_IsValid, PyCapsule_New,
                                PyCapsule_SetName)
from libc.math cimport isnan
from libc.stdint cimport (INT64_MAX, int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t,
                          uint32_t, uint64_t)
from cpython.ref cimport Py_DECREF, Py_INCREF
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset

cdef extern from *:
    """
    /* grad mode is thread-local, like PyTorch's */
    static __thread int em_grad_on = 1;
    static __thread int em_inference_on = 0;
    #ifdef _OPENMP
    #include <omp.h>
    static int em_omp_max(void) { return omp_get_max_threads(); }
    #else
    static int em_omp_max(void) { return 1; }
    #endif
    /* flip the sign bit of each item (*aux bytes) of ptrs[0]: negation of IEEE floats,
       how a lazy conjugate/negative bit is made physical */
    static void em_signflip(char **ptrs, const int64_t *strides, int64_t n, const void *aux) {
        int64_t isz = *(const int64_t *)aux, st = strides[0], i;
        char *p = ptrs[0];
        if (isz == 8) for (i = 0; i < n; i++) *(uint64_t *)(p + i * st) ^= (uint64_t)1 << 63;
        else if (isz == 4) for (i = 0; i < n; i++) *(uint32_t *)(p + i * st) ^= (uint32_t)1 << 31;
        else for (i = 0; i < n; i++) *(uint16_t *)(p + i * st) ^= (uint16_t)1 << 15;
    }
    /* dst = src with sign bits flipped by the masks (lo: the first 8 bytes of an item,
       hi: the next 8 of a 16-byte item): a copy between tensors of one dtype whose lazy
       bits differ, in one pass */
    typedef struct { int64_t isz; uint64_t lo, hi; } em_flip_aux;
    static void em_flipcopy(char **ptrs, const int64_t *strides, int64_t n, const void *aux) {
        const em_flip_aux *a = (const em_flip_aux *)aux;
        char *d = ptrs[0];
        const char *s = ptrs[1];
        int64_t sd = strides[0], ss = strides[1], i;
        if (a->isz == 16) {
            for (i = 0; i < n; i++) {
                const uint64_t *x = (const uint64_t *)(s + i * ss);
                uint64_t x0 = x[0], x1 = x[1];
                uint64_t *o = (uint64_t *)(d + i * sd);
                o[0] = x0 ^ a->lo;
                o[1] = x1 ^ a->hi;
            }
        } else if (a->isz == 8) {
            for (i = 0; i < n; i++)
                *(uint64_t *)(d + i * sd) = *(const uint64_t *)(s + i * ss) ^ a->lo;
        } else if (a->isz == 4) {
            for (i = 0; i < n; i++)
                *(uint32_t *)(d + i * sd) = *(const uint32_t *)(s + i * ss) ^ (uint32_t)a->lo;
        } else {
            for (i = 0; i < n; i++)
                *(uint16_t *)(d + i * sd) = *(const uint16_t *)(s + i * ss) ^ (uint16_t)a->lo;
        }
    }
    """
    int em_grad_on
    int em_inference_on
    int em_omp_max() nogil
    void em_signflip(char **ptrs, const int64_t *strides, int64_t n,
                     const void *aux) noexcept nogil
    ctypedef struct em_flip_aux:
        int64_t isz
        uint64_t lo
        uint64_t hi
    void em_flipcopy(char **ptrs, const int64_t *strides, int64_t n,
                     const void *aux) noexcept nogil

# DLPack export and import
include "dlpack.pxi"

# ----------------------------------------------------------------------------
# dtypes

_NAMES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
          "float32", "float64", "complex64", "complex128")
# the buffer-protocol / __array_interface__ type strings (bfloat16 has none)
_TYPESTR = ("|b1", "|u1", "|i1", "<i2", "<i4", "<i8", "<f2", None, "<f4", "<f8", "<c8", "<c16")
cdef list _dtypes = [None] * EM_NDTYPES


cdef class DType:
    """A tensor element type, e.g. ``ember.float32``."""

    def __repr__(self):
        return "ember." + self._name

    def __reduce__(self):
        return (_dtype_by_name, (self._name,))

    def to_real(self):
        return _dtypes[real_of(self.code)]

    def to_complex(self):
        if self.code in (EM_F16, EM_BF16) or not (self.is_floating_point or self.is_complex):
            raise RuntimeError(f"to_complex: no complex counterpart of {self!r}")
        return _dtypes[complex_of(self.code)]


def _dtype_by_name(str name):
    return _dtypes[_NAMES.index(name)]


cdef DType _make_dtype(int i):
    cdef DType d = DType.__new__(DType)
    d.code = i
    d.itemsize = em_itemsize[i]
    d._name = _NAMES[i]
    d.is_floating_point = EM_F16 <= i <= EM_F64
    d.is_complex = i == EM_C64 or i == EM_C128
    d.is_signed = i != EM_BOOL and i != EM_U8
    return d


for _i in range(EM_NDTYPES):
    _dtypes[_i] = _make_dtype(_i)

bool_ = _dtypes[EM_BOOL]
uint8 = _dtypes[EM_U8]
int8 = _dtypes[EM_I8]
int16 = _dtypes[EM_I16]
int32 = _dtypes[EM_I32]
int64 = _dtypes[EM_I64]
float16 = _dtypes[EM_F16]
bfloat16 = _dtypes[EM_BF16]
float32 = _dtypes[EM_F32]
float64 = _dtypes[EM_F64]
complex64 = _dtypes[EM_C64]
complex128 = _dtypes[EM_C128]

cdef int _default_dtype = EM_F32


cdef DType dtype_obj(int code):
    return <DType>_dtypes[code]


cdef int dtype_code(object d) except -2:
    if d is None:
        return -1
    if isinstance(d, DType):
        return (<DType>d).code
    if d is float:
        return EM_F64
    if d is int:
        return EM_I64
    if d is bool:
        return EM_BOOL
    if d is complex:
        return EM_C128
    if isinstance(d, str) and d in _NAMES:
        return _NAMES.index(d)
    npname = getattr(d, "name", None) if not isinstance(d, str) else None
    if isinstance(npname, str) and npname in _NAMES and type(d).__module__.startswith("numpy"):
        return _NAMES.index(npname)
    raise TypeError(f"dtype must be an ember.dtype (e.g. ember.float32), got {d!r}")


cdef int default_dtype() noexcept:
    return _default_dtype


def _get_default_dtype():
    return _dtypes[_default_dtype]


def _set_default_dtype(d):
    global _default_dtype
    cdef int c = dtype_code(d) if isinstance(d, DType) else -1
    if c not in (EM_F32, EM_F64):
        raise TypeError(f"set_default_dtype: only floating-point types float32 and float64 are "
                        f"supported as the default type, got {d!r}")
    _default_dtype = c


def _dtype_from_typestr(str ts):
    """Map an __array_interface__ type string to an ember dtype (or None)."""
    key = ts[1:]
    table = {"b1": EM_BOOL, "u1": EM_U8, "i1": EM_I8, "i2": EM_I16,
             "i4": EM_I32, "i8": EM_I64, "f2": EM_F16, "f4": EM_F32, "f8": EM_F64,
             "c8": EM_C64, "c16": EM_C128}
    if ts[0] == ">" and key not in ("b1", "u1", "i1"):
        return None
    c = table.get(key)
    return None if c is None else _dtypes[c]


cdef int category(int d) noexcept:
    return 0 if d == EM_BOOL else (1 if d < EM_F16 else (2 if d <= EM_F64 else 3))


cdef int real_of(int d) noexcept:
    """The real dtype of a complex one (others map to themselves)."""
    return EM_F32 if d == EM_C64 else (EM_F64 if d == EM_C128 else d)


cdef int complex_of(int d) noexcept:
    """The complex dtype holding a real one: float64 -> complex128, else complex64."""
    return EM_C128 if (d == EM_F64 or d == EM_C128) else EM_C64


cdef int promote(int a, int b) noexcept:
    """PyTorch's promoteTypes for the dtypes ember has."""
    if a == b:
        return a
    if a == EM_BOOL:
        return b
    if b == EM_BOOL:
        return a
    cdef int ca = category(a), cb = category(b)
    if ca == 3 or cb == 3:
        # complex wins; its width is the wider of the two (float64 widens complex64)
        return EM_C128 if (a == EM_C128 or b == EM_C128 or a == EM_F64 or b == EM_F64) \
            else EM_C64
    if ca == 2 and cb == 2:
        if (a == EM_F16 and b == EM_BF16) or (a == EM_BF16 and b == EM_F16):
            return EM_F32
        return a if a > b else b
    if ca == 2:
        return a
    if cb == 2:
        return b
    # both integer
    if a == EM_U8:
        return EM_I16 if b == EM_I8 else b
    if b == EM_U8:
        return EM_I16 if a == EM_I8 else a
    return a if a > b else b


cdef int scalar_category(object v) noexcept:
    cdef type t = type(v)
    if t is float:
        return 2
    if t is int:
        return 1
    if t is bool:
        return 0
    if t is complex:
        return 3
    if isinstance(v, bool):
        return 0
    if isinstance(v, int):
        return 1
    if isinstance(v, float):
        return 2
    if isinstance(v, complex):
        return 3
    if hasattr(v, "__index__") and not hasattr(v, "_ndim"):
        return 1
    if hasattr(v, "__float__") and not isinstance(v, TensorBase) and not isinstance(v, (str, bytes)):
        return 2
    if hasattr(v, "__complex__") and not isinstance(v, TensorBase) and not isinstance(v, (str, bytes)):
        return 3
    return -1


cdef int _wrapped_dtype(int cat) noexcept:
    if cat == 3:
        return complex_of(_default_dtype)
    return EM_BOOL if cat == 0 else (EM_I64 if cat == 1 else _default_dtype)


cdef int result_type2(object a, object b) except -1:
    """Promotion of two operands (tensors or Python scalars) exactly as PyTorch:
    dimensioned tensors win over 0-dim tensors, which win over Python scalars,
    unless the lower-priority operand is of a higher category."""
    cdef int dim_r = -1, zero_r = -1, wrap_r = -1, c, r
    for x in (a, b):
        if isinstance(x, TensorBase):
            c = (<TensorBase>x)._dtype
            if (<TensorBase>x)._ndim > 0:
                dim_r = c if dim_r < 0 else promote(dim_r, c)
            else:
                zero_r = c if zero_r < 0 else promote(zero_r, c)
        else:
            c = scalar_category(x)
            if c < 0:
                raise TypeError(f"unsupported operand type: {type(x).__name__}")
            c = _wrapped_dtype(c)
            wrap_r = c if wrap_r < 0 else promote(wrap_r, c)
    return _combine(dim_r, _combine(zero_r, wrap_r))


cdef int _combine(int higher, int lower) noexcept:
    """torch's combine_categories: a lower-priority operand only matters when it is
    of a higher category (complex beats floating beats integral beats bool)."""
    if higher < 0:
        return lower
    if lower < 0:
        return higher
    if category(higher) == 3:
        return higher
    if category(lower) == 3:
        return complex_of(higher) if category(higher) == 2 else lower
    if category(higher) == 2:
        return higher
    if higher == EM_BOOL or category(lower) == 2:
        return promote(higher, lower)
    return higher


def result_type(a, b):
    """Return the dtype PyTorch's type promotion gives for ``a op b``."""
    return _dtypes[result_type2(a, b)]


def promote_types(a, b):
    return _dtypes[promote(dtype_code(a), dtype_code(b))]


def can_cast(from_, to):
    cdef int f = dtype_code(from_), t = dtype_code(to)
    return castable(f, t)


# ----------------------------------------------------------------------------
# devices

cdef dict _device_kinds = {"cpu": DEV_CPU, "cuda": DEV_CUDA, "meta": DEV_META}
# every device type PyTorch parses: they parse here too and fail on use, naming the reason
_TORCH_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip",
                       "ve", "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu",
                       "mtia", "privateuseone")
cdef list _device_stack = []


cdef class Device:
    """A device, e.g. ``ember.device("cpu")`` or ``ember.device("cuda", 1)``.

    Used as a context manager it becomes the default device of factory
    functions inside the ``with`` block."""

    def __init__(self, type, index=None):
        if isinstance(type, Device):
            if index is not None:
                raise ValueError("device(): index must be None when a device is given")
            self.type = (<Device>type).type
            self.index = (<Device>type).index
            self.kind = (<Device>type).kind
            return
        if isinstance(type, int) and not isinstance(type, bool):
            self.type, self.index, self.kind = "cuda", type, DEV_CUDA
            return
        if not isinstance(type, str):
            raise TypeError(f"device(): expected a string or device, got {type!r}")
        s = <str>type
        if ":" in s:
            if index is not None:
                raise RuntimeError(f"device(): type (string) must not include an index because "
                                   f"index was passed explicitly: {s}")
            s, _, idx = s.partition(":")
            if not idx.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}'")
            index = int(idx)
        if s not in _device_kinds and s not in _TORCH_DEVICE_TYPES:
            known = list(_TORCH_DEVICE_TYPES) + [k for k in _device_kinds
                                                 if k not in _TORCH_DEVICE_TYPES]
            raise RuntimeError(f"Expected one of {', '.join(known)} device type at start of "
                               f"device string: {type}")
        if index is not None:
            if not isinstance(index, int) or index < 0:
                raise RuntimeError(f"Device index must not be negative, got {index}")
        self.type = s
        self.index = index
        self.kind = _device_kinds.get(s, DEV_ABSENT)

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other):
        if isinstance(other, str):
            try:
                other = Device(other)
            except RuntimeError:
                return False
        if not isinstance(other, Device):
            return NotImplemented
        return self.type == (<Device>other).type and self.index == (<Device>other).index

    def __hash__(self):
        return hash((self.type, self.index))

    def __reduce__(self):
        return (Device, (self.type, self.index))

    def __enter__(self):
        _device_stack.append(_default_device)
        _set_default_device(self)
        return self

    def __exit__(self, *exc):
        _set_default_device(_device_stack.pop())
        return False


cdef Device _cpu = Device("cpu")
cdef object _default_device = None


cdef Device cpu_device():
    return _cpu


cdef Device as_device(object d):
    if d is None:
        return _cpu if _default_device is None else <Device>_default_device
    if isinstance(d, Device):
        return _cpu if (<Device>d).kind == DEV_CPU else <Device>d
    if d == "cpu":
        return _cpu
    return Device(d)


cdef object default_device():
    return _default_device


def _set_default_device(d):
    global _default_device
    _default_device = None if d is None else as_device(d)
    if _default_device is _cpu:
        _default_device = None


def _get_default_device():
    return _cpu if _default_device is None else _default_device


def _register_device_type(str name):
    """Make ``name`` a valid device type (for out-of-tree backends)."""
    if name in _device_kinds:
        raise RuntimeError(f"device type '{name}' is already registered")
    _device_kinds[name] = DEV_PLUGIN


# ----------------------------------------------------------------------------
# threads, grad mode and the dispatcher's hooks

cdef int _num_threads = 1
_env_threads = _os.environ.get("EMBER_NUM_THREADS") or _os.environ.get("OMP_NUM_THREADS")
_num_threads = int(_env_threads) if (_env_threads or "").isdigit() and int(_env_threads) > 0 \
    else max(1, em_omp_max())
# Below this much work a kernel runs on the calling thread: waking a team costs µs.
cdef int64_t PAR_GRAIN = 32768


def set_num_threads(int n):
    """Set the number of threads used by ember's CPU kernels."""
    global _num_threads
    if n < 1:
        raise ValueError(f"set_num_threads: expected a positive number of threads, got {n}")
    _num_threads = n


def get_num_threads():
    """Number of threads ember's CPU kernels use."""
    return _num_threads


cdef int nthreads_for(int64_t work) noexcept nogil:
    return 1 if work < PAR_GRAIN else _num_threads


cdef bint grad_on() noexcept nogil:
    return em_grad_on != 0


def is_grad_enabled():
    """True when operations are being recorded for autograd (this thread)."""
    return em_grad_on != 0


def _set_grad_enabled(bint mode):
    global em_grad_on
    em_grad_on = 1 if mode else 0


def is_inference_mode_enabled():
    return em_inference_on != 0


def _set_inference_mode(bint mode):
    global em_inference_on
    em_inference_on = 1 if mode else 0


cdef object _autograd_hook = None
cdef list _modes = []
cdef bint _slow = False
cdef dict _backend_kernels = {}
# op name -> {"deterministic": {device_type: bool}, ...}: kernels declare here.
_op_info = {}


def _set_autograd_hook(fn):
    """Installed by ember.autograd: called as fn(op, inputs, output, attrs)."""
    global _autograd_hook
    _autograd_hook = fn


cdef object record(str name, tuple inputs, object out, object attrs):
    if _autograd_hook is not None:
        _autograd_hook(name, inputs, out, attrs)
    return out


cdef bint slow_path() noexcept:
    return _slow


def _push_mode(mode):
    """Install a Python dispatch mode (the Python key): mode.__ember_dispatch__(
    name, func, args, kwargs) then sees every op until popped."""
    global _slow
    _modes.append(mode)
    _slow = True


def _pop_mode():
    global _slow
    m = _modes.pop()
    _slow = len(_modes) > 0
    return m


cdef int64_t _rg_writes = 0


def _requires_grad_writes():
    """How many times a tensor's requires_grad was set (compiled code's guards re-check
    the flags of the tensors they lift only when this moved)."""
    return _rg_writes


def _mode_active():
    """Whether a Python dispatch mode is installed (Python-level ops check it)."""
    return _slow


def _dispatch(str name, fn, tuple args, kwargs=None):
    """Run ``fn(*args, **kwargs)`` as the op ``name`` through the Python key:
    for ops written in Python that an installed mode must see."""
    return redispatch(name, fn, args, {} if kwargs is None else kwargs)


def _register_kernel(str op, str device_type, fn):
    """Register a Python kernel for (op, device_type): the plugin-backend key."""
    if device_type in ("cpu", "cuda"):
        raise RuntimeError(f"register_kernel: '{device_type}' kernels are native; "
                           f"register kernels for a plugin device type")
    if device_type not in _device_kinds:
        _register_device_type(device_type)
    _backend_kernels.setdefault(device_type, {})[op] = fn


def _declare_op(str name, deterministic=("cpu",)):
    _op_info[name] = {"deterministic": tuple(deterministic)}


cdef object _first_device(tuple args, dict kwargs):
    """the device of the first tensor not on the CPU (else the CPU): a CPU tensor
    beside a device tensor goes to the device's backend, which names both devices"""
    cpu = None
    for a in args:
        if isinstance(a, TensorBase):
            if (<TensorBase>a)._device.kind != DEV_CPU:
                return (<TensorBase>a)._device
            cpu = (<TensorBase>a)._device
        elif isinstance(a, (list, tuple)):
            for b in a:
                if isinstance(b, TensorBase):
                    if (<TensorBase>b)._device.kind != DEV_CPU:
                        return (<TensorBase>b)._device
                    cpu = (<TensorBase>b)._device
    if cpu is not None:
        return cpu
    dev = kwargs.get("device") if kwargs else None
    return as_device(dev) if dev is not None else as_device(None)


cdef object factory_slow(str name, object fn, tuple args, dict kwargs, Device dev):
    """A factory's slow path: Python modes and non-CPU devices.  A plugin device
    without its own kernel for `name` gets the CPU result moved with its 'to'
    kernel (requires_grad and out= applied after the move)."""
    if slow_path() or dev.kind != DEV_PLUGIN or name in _backend_kernel_names(dev.type):
        return redispatch(name, fn, args, kwargs)
    kw = dict(kwargs)
    kw["device"] = "cpu"
    rg = kw.pop("requires_grad", False)
    out = kw.pop("out", None)
    r = fn(*args, **kw).to(dev)
    if out is not None:
        return out.copy_(r)
    if rg:
        r.requires_grad_(True)
    return r


cdef object redispatch(str name, object fn, tuple args, dict kwargs):
    """The slow path: a Python mode, or a tensor on a non-CPU device."""
    global _slow
    if kwargs is None:
        kwargs = {}
    if _modes:
        mode = _pop_mode()
        try:
            return mode.__ember_dispatch__(name, fn, args, kwargs)
        finally:
            _push_mode(mode)
    cdef Device dev = <Device>_first_device(args, kwargs)
    if _any_bits(args, kwargs) and not (dev.kind == DEV_CUDA and
                                        _cuda_backend().handles_bits(name)):
        return _call_resolved(name, fn, args, kwargs)
    if dev.kind == DEV_PLUGIN:
        kern = _backend_kernels.get(dev.type, {}).get(name)
        if kern is None:
            raise NotImplementedError(f"Could not run '{name}' with arguments from the "
                                      f"'{dev.type}' backend: no kernel registered")
        return kern(*args, **kwargs)
    if dev.kind == DEV_CUDA:
        return _cuda_backend().dispatch(name, fn, args, kwargs)
    if dev.kind == DEV_META:
        raise NotImplementedError(f"{name}: the meta device has no kernels")
    return fn(*args, **kwargs)


# Lazy math bits.  An op without its own handling of a conjugate/negative bit reaches
# redispatch (needs_slow sees the bit) and runs on resolved copies of such operands; a
# written operand (self of an in-place op, out=) gets the result copied back through its
# bits, so its base sees the logical values, as torch's math-bits fallback does.
cdef inline bint _has_bits(object a):
    return isinstance(a, TensorBase) and (<TensorBase>a)._mbits != 0


cdef bint _any_bits(tuple args, dict kwargs) except -1:
    for a in args:
        if _has_bits(a):
            return True
        if isinstance(a, (list, tuple)):
            for b in a:
                if _has_bits(b):
                    return True
    if kwargs:
        for a in kwargs.values():
            if _has_bits(a):
                return True
            if isinstance(a, (list, tuple)):
                for b in a:
                    if _has_bits(b):
                        return True
    return False


cdef object _resolved_arg(object a):
    """a with every tensor that has a math bit replaced by a resolved (differentiable) copy"""
    if _has_bits(a):
        return (<TensorBase>a).clone()
    if isinstance(a, (list, tuple)):
        return type(a)([_resolved_arg(b) for b in a])
    return a


cdef object _write_target(object a, list back):
    """a scratch tensor the op writes instead of `a` when `a` has a math bit"""
    if _has_bits(a):
        tmp = (<TensorBase>a).clone()
        back.append((a, tmp))
        return tmp
    if isinstance(a, (list, tuple)):
        return type(a)([_write_target(b, back) for b in a])
    return a


cdef object _call_resolved(str name, object fn, tuple args, dict kwargs):
    cdef list back = []
    cdef list al = list(args)
    if al and _has_bits(al[0]) and (name == "setitem" or name.endswith("_") and
                                    not name.endswith("__")):
        check_inplace(<TensorBase>al[0], name)
        al[0] = _write_target(al[0], back)
        start = 1
    else:
        start = 0
    for i in range(start, len(al)):
        al[i] = _resolved_arg(al[i])
    kw = {}
    for k, v in kwargs.items():
        kw[k] = _write_target(v, back) if k == "out" else _resolved_arg(v)
    r = fn(*al, **kw)
    if not back:
        return r
    for dst, tmp in back:
        dst.copy_(tmp)
    for dst, tmp in back:
        if r is tmp:
            return dst
    if isinstance(r, tuple):
        return type(r)(*[_swap_back(x, back) for x in r]) if hasattr(r, "_fields") else \
            tuple([_swap_back(x, back) for x in r])
    return r


cdef object _swap_back(object x, list back):
    for dst, tmp in back:
        if x is tmp:
            return dst
    return x


cdef int check_same_device(TensorBase a, TensorBase b, str op, str argname) except -1:
    if a._device is b._device or a._device == b._device:
        return 0
    raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two "
                       f"devices, {a._device} and {b._device}! (when checking argument for "
                       f"argument {argname} in method {op})")


cdef void bump_version(TensorBase t) noexcept:
    t._storage.version += 1


cdef int check_inplace(TensorBase t, str op) except -1:
    if em_grad_on and t._requires_grad and t._grad_fn is None:
        raise RuntimeError(f"{op}: a leaf Variable that requires grad is being used in an "
                           f"in-place operation.")
    if em_grad_on and _view_hook is not None and t._ag_base is not None:
        base = <TensorBase>t._ag_base
        if base._requires_grad and base._grad_fn is None:
            raise RuntimeError(f"{op}: a view of a leaf Variable that requires grad is being "
                               f"used in an in-place operation.")
    return 0


# Autograd's view tracking: every view keeps its base (`_ag_base`, set by make_view).
# An in-place write through a view under grad mode must become part of the base's
# graph (the engine's hook records it); a view whose base was written since its
# grad_fn was set gets a grad_fn rebuilt from the base's (torch's lazy regeneration).
cdef object _view_hook = None
cdef object _refresh_hook = None


def _set_view_hooks(written, refresh):
    global _view_hook, _refresh_hook
    _view_hook = written
    _refresh_hook = refresh


cdef int view_written(TensorBase t) except -1:
    """t was written in place with its new graph node set: rebase its view base"""
    if em_grad_on and _view_hook is not None and t._ag_base is not None:
        _view_hook(t)
    return 0


cdef int view_refresh(TensorBase t) except -1:
    """t is a view whose base's memory changed since t's grad_fn was set"""
    if _refresh_hook is not None:
        _refresh_hook(t)
    return 0


# The CUDA backend (ember.cuda._dispatch) is imported on the first CUDA tensor: it
# allocates device storage, copies and runs the CUDA kernels of ops that redispatch.
cdef object _cuda_mod = None


cdef object _cuda_backend():
    global _cuda_mod
    if _cuda_mod is None:
        import ember.cuda._dispatch as m
        _cuda_mod = m
    return _cuda_mod


def _record_op(str name, tuple inputs, out, attrs):
    """Record an op computed outside the core (device backends) for autograd."""
    return record(name, inputs, out, attrs)


def _check_inplace(TensorBase t, str op):
    check_inplace(t, op)


def _commit_inplace(TensorBase self, TensorBase r):
    """Write r into self in place; self becomes the output of r's graph node."""
    copy_into(self, r)
    bump_version(self)
    if r._grad_fn is not None:
        self._grad_fn = r._grad_fn
        self._requires_grad = self._requires_grad or r._requires_grad
        view_written(self)
    return self


# ----------------------------------------------------------------------------
# Storage

# The GC must not clear `owner` before __dealloc__ runs: a cleared owner reads as
# "ember owns this memory" and foreign memory (NumPy, DLPack, plugins) would be freed.
@cython.no_gc_clear
cdef class Storage:
    """A flat, 64-byte-aligned buffer (or foreign memory kept alive by `owner`)."""

    def __dealloc__(self):
        if self.owner is None and self.data != NULL:
            em_free(self.data, <size_t>self._nbytes)
            self.data = NULL

    def nbytes(self):
        return self._nbytes

    def size(self):
        return self._nbytes

    def data_ptr(self):
        return <size_t>self.data

    def __len__(self):
        return self._nbytes

    @property
    def _owner(self):
        return self.owner

    def _take(self, Storage other):
        """Move ``other``'s buffer (same size) into self, releasing self's own: every
        tensor viewing self then views that memory (``share_memory_``). Like torch,
        NumPy/DLPack views taken of the old buffer are left dangling."""
        if other is self or (self.data != NULL and other._nbytes != self._nbytes):
            raise RuntimeError("Storage._take: expected another storage of the same size")
        if self.owner is None and self.data != NULL:
            em_free(self.data, <size_t>self._nbytes)
        self.data, self.owner, self.device = other.data, other.owner, other.device
        self._nbytes = other._nbytes
        other.data, other.owner = NULL, False

    # torch's everyday storage API, written in Python in ember._storage
    def __init__(self, *args, device=None):
        _storage_api().init_untyped(self, args, device)

    def __getitem__(self, idx):
        return _storage_api().getitem(self, idx)

    def __setitem__(self, idx, value):
        _storage_api().setitem(self, idx, value)

    def __iter__(self):
        return iter(self.tolist())

    def __getattr__(self, name):
        return _storage_api().method(self, name)

    def __reduce__(self):       # a copy of the bytes (never the address)
        return _storage_api().reduce_untyped(self)

    def __repr__(self):
        return f"ember.UntypedStorage(nbytes={self._nbytes}, device={self.device})"


cdef object _storage_mod = None


cdef object _storage_api():
    global _storage_mod
    if _storage_mod is None:
        import ember._storage as m
        _storage_mod = m
    return _storage_mod


cdef Storage _alloc_storage(int64_t nbytes, Device device):
    cdef Storage s = Storage.__new__(Storage)
    s.device = device
    s._nbytes = nbytes
    if device.kind == DEV_ABSENT:
        raise RuntimeError(f"device '{device}': ember has no '{device.type}' backend (it runs "
                           f"on cpu, cuda when available, meta, and device types that a "
                           f"plugin registers)")
    if device.kind == DEV_CUDA:
        ptr, s.owner, s.device = _cuda_backend().alloc(nbytes, device)
        s.data = <char *><size_t>ptr
        return s
    if device.kind != DEV_CPU and device.kind != DEV_META:
        raise RuntimeError(f"cannot allocate native storage on device '{device}'")
    if device.kind == DEV_META:
        return s
    s.data = <char *>em_alloc(<size_t>nbytes)
    if s.data == NULL:
        raise RuntimeError(f"DefaultCPUAllocator: can't allocate memory: you tried to allocate "
                           f"{nbytes} bytes.")
    return s


def _wrap_memory(size_t ptr, int64_t nbytes, owner, device=None):
    """A Storage over foreign memory kept alive by `owner` (plugins, interop)."""
    cdef Storage s = Storage.__new__(Storage)
    s.data = <char *>ptr
    s._nbytes = nbytes
    s.owner = owner if owner is not None else False
    s.device = as_device(device) if device is not None else _cpu
    return s


_ALLOC_STAT_KEYS = ("allocated_bytes", "reserved_bytes", "peak_allocated_bytes",
                    "peak_reserved_bytes", "segments", "cached_blocks", "hits", "misses",
                    "splits", "released_segments")


def _alloc_stats():
    """The CPU caching allocator's counters (blocks from 64 KiB; smaller ones go to
    malloc): bytes handed out and held, their peaks, ``cached_bytes`` (held, not
    handed out), segments held, free blocks, requests served from the cache
    (``hits``) or by a new segment (``misses``), splits and segments released."""
    cdef int64_t v[EM_ALLOC_NSTATS]
    em_alloc_stats(v, EM_ALLOC_NSTATS)
    d = {k: v[i] for i, k in enumerate(_ALLOC_STAT_KEYS)}
    d["cached_bytes"] = d["reserved_bytes"] - d["allocated_bytes"]
    return d


def _reset_peak_alloc_stats():
    em_alloc_reset_peak()


def _empty_cache():
    """Release every wholly free cached segment."""
    em_alloc_empty_cache()


# ----------------------------------------------------------------------------
# TensorBase

cdef type TensorType = None


def _set_tensor_class(cls):
    global TensorType
    TensorType = cls


class Size(tuple):
    """The shape of a tensor: a tuple of ints."""

    def __repr__(self):
        return f"ember.Size([{', '.join(map(str, self))}])"

    def numel(self):
        n = 1
        for s in self:
            n *= s
        if n > INT64_MAX:
            raise RuntimeError(f"numel: integer multiplication overflow with sizes={list(self)}")
        return n

    def __getitem__(self, i):
        r = tuple.__getitem__(self, i)
        return Size(r) if isinstance(i, slice) else r

    def __add__(self, other):
        return Size(tuple.__add__(self, tuple(other)))

    def __reduce__(self):
        return (Size, (tuple(self),))


cdef int64_t numel_of(int ndim, const int64_t *shape) noexcept nogil:
    cdef int64_t n = 1
    cdef int i
    for i in range(ndim):
        n *= shape[i]
    return n


cdef object _to_plain(TensorBase self, dtype, device, bint copy, bint non_blocking=False):
    cdef Device dev = self._device if device is None else as_device(device)
    cdef int dt = self._dtype if dtype is None else dtype_code(dtype)
    if dev == self._device and dt == self._dtype:
        return self.clone() if copy else self
    if dev != self._device:
        if self._mbits:
            self = self.clone()         # another device gets the values, not the bits
        if dev.kind == DEV_PLUGIN or self._device.kind == DEV_PLUGIN:
            devtype = dev.type if dev.kind == DEV_PLUGIN else self._device.type
            kern = _backend_kernels.get(devtype, {}).get("to")
            if kern is None:
                raise NotImplementedError(f"to: no kernel registered for '{devtype}'")
            return kern(self, dev, _dtypes[dt])
        return _cuda_backend().to(self, dev, dt, non_blocking)
    return self._cast(dt)


cdef object _memfmt_mod = None


cdef object _memfmt():
    global _memfmt_mod
    if _memfmt_mod is None:
        import ember._memory_format as m
        _memfmt_mod = m
    return _memfmt_mod


cdef bint _maybe_channels_last(TensorBase t) noexcept:
    """Whether t is a non-contiguous 4-D or 5-D tensor whose strides run channels
    innermost, then the spatial dimensions, then the batch (torch's
    is_channels_last_strides_2d/3d): the layout ``preserve_format`` keeps."""
    cdef int64_t low = 0
    cdef int k, d, n = t._ndim
    if (n != 4 and n != 5) or is_contig(t) or t._strides[1] == 0:
        return False
    for k in range(n):
        d = 1 if k == 0 else (0 if k == n - 1 else n - k)
        if t._shape[d] == 0 or t._strides[d] < low:
            return False
        if d == 0 and low == t._strides[1]:
            return False        # N111-like: ambiguous, row-major wins
        low = t._strides[d] * (t._shape[d] if t._shape[d] > 1 else 1)
    return True


cdef bint is_contig(TensorBase t) noexcept nogil:
    cdef int64_t expected = 1
    cdef int i
    for i in range(t._ndim - 1, -1, -1):
        if t._shape[i] != 1:
            if t._strides[i] != expected:
                return False
            expected *= t._shape[i]
    return True


cdef list _dims_list(int ndim, const int64_t *shape):
    return [shape[i] for i in range(ndim)]


cdef inline str _prefix(str op):
    return f"{op}: " if op else ""


cdef int too_many_dims(Py_ssize_t ndim, str op) except -1:
    raise RuntimeError(f"{_prefix(op)}only tensors with up to {MAX_DIMS} dims are supported "
                       f"in ember, got {ndim}")


cdef int _bad_sizes(int ndim, const int64_t *shape, str op, bint storage) except -1:
    """The error for a shape with a negative size or a product past int64."""
    cdef int i
    for i in range(ndim):
        if shape[i] < 0:
            raise RuntimeError(f"{_prefix(op)}Trying to create tensor with negative dimension "
                               f"{shape[i]}: {_dims_list(ndim, shape)}")
    if storage:
        raise RuntimeError(f"{_prefix(op)}Storage size calculation overflowed with sizes="
                           f"{_dims_list(ndim, shape)}")
    raise RuntimeError(f"{_prefix(op)}numel: integer multiplication overflow with sizes="
                       f"{_dims_list(ndim, shape)}")


cdef int64_t shape_numel(int ndim, const int64_t *shape, str op) except -1:
    """numel of a shape a caller wants to create or view: RuntimeError for more
    than MAX_DIMS dims, a negative size, or a product that does not fit in int64."""
    cdef int64_t n = 1
    cdef int i
    check_ndim(ndim, op)
    for i in range(ndim):
        n = em_mul_size(n, shape[i])
        if n < 0:
            return _bad_sizes(ndim, shape, op, False)
    return n


cdef int64_t int64_arg(object v, str op, str name) except? -1:
    """An integer argument as int64: past int64 is torch's ValueError, not a bare
    OverflowError from the C conversion."""
    try:
        return v
    except OverflowError:
        raise ValueError(f"{op}(): argument '{name}': Overflow when unpacking long long "
                         f"({v})") from None


cdef int64_t mul_sizes(int64_t a, int64_t b, str op) except -1:
    """a * b for sizes an op computes from its arguments, checked."""
    cdef int64_t r = em_mul_size(a, b)
    if r < 0:
        if a < 0 or b < 0:
            raise RuntimeError(f"{op}: Trying to create tensor with negative dimension "
                               f"{a if a < 0 else b}")
        raise RuntimeError(f"{op}: integer multiplication overflow computing a size "
                           f"({a} * {b})")
    return r


cdef int64_t check_alloc(int ndim, const int64_t *shape, int dtype, str op) except -1:
    """Bytes a new tensor of `shape` needs; RuntimeError (naming op) when the
    shape is negative or its byte size does not fit in int64."""
    cdef int64_t n = em_itemsize[dtype]
    cdef int i
    check_ndim(ndim, op)
    for i in range(ndim):
        n = em_mul_size(n, shape[i])
    if n < 0:
        _bad_sizes(ndim, shape, op, True)
    return n


cdef TensorBase new_tensor(int ndim, const int64_t *shape, int dtype, Device device):
    cdef TensorBase t = TensorBase.__new__(TensorType)
    cdef int64_t n = check_alloc(ndim, shape, dtype, ""), st = 1
    cdef int i
    for i in range(ndim - 1, -1, -1):
        t._shape[i] = shape[i]
        t._strides[i] = st
        if shape[i] > 1:
            st *= shape[i]
    t._ndim = ndim
    t._dtype = dtype
    t._offset = 0
    t._storage = _alloc_storage(n, device)
    t._device = t._storage.device    # a CUDA device gets its index
    t._inference = em_inference_on != 0
    return t


cdef TensorBase new_like(TensorBase t, int dtype):
    return new_tensor(t._ndim, t._shape, t._dtype if dtype < 0 else dtype, t._device)


cdef TensorBase make_view(TensorBase base, int ndim, const int64_t *shape,
                          const int64_t *strides, int64_t offset):
    cdef TensorBase t = TensorBase.__new__(TensorType)
    cdef int i
    cdef int64_t n = 1
    check_ndim(ndim, "")
    for i in range(ndim):
        n = em_mul_size(n, shape[i])
        t._shape[i] = shape[i]
        t._strides[i] = strides[i]
    if n < 0:
        shape_numel(ndim, shape, "")
    t._ndim = ndim
    t._dtype = base._dtype
    t._offset = offset
    t._device = base._device
    t._storage = base._storage
    t._inference = base._inference
    t._mbits = base._mbits
    # every view knows its base (through views of views, the one that owns the memory),
    # so that an in-place write through it reaches the base's graph
    t._ag_base = base if base._ag_base is None else base._ag_base
    t._ag_ver = base._storage.version
    return t


cdef TensorBase wrap_scalar(object v, int dtype):
    cdef TensorBase t = new_tensor(0, NULL, dtype, _cpu)
    scalar_to_buf(v, dtype, t._storage.data)
    return t


cdef inline char *_ptr(TensorBase t) noexcept nogil:
    return t._storage.data + t._offset * em_itemsize[t._dtype]


cdef tuple shape_tuple(TensorBase t):
    return tuple([t._shape[i] for i in range(t._ndim)])


cdef int wrap_dim(int64_t d, int ndim, str op) except -100:
    cdef int n = ndim if ndim > 0 else 1
    if d < -n or d >= n:
        raise IndexError(f"{op}: Dimension out of range (expected to be in range of "
                         f"[{-n}, {n - 1}], but got {d})")
    return <int>(d + n if d < 0 else d)


cdef int parse_shape(object args, int64_t *out, str op) except -1:
    """Accept f(2, 3), f((2, 3)), f([2, 3]) and f(Size); return ndim."""
    if isinstance(args, tuple) and len(<tuple>args) == 1 and not isinstance(
            (<tuple>args)[0], (int, TensorBase)) and hasattr((<tuple>args)[0], "__len__"):
        args = (<tuple>args)[0]
    elif isinstance(args, TensorBase):
        args = (<TensorBase>args).tolist()
    return seq_to_dims(args, out, op)


cdef int seq_to_dims(object seq, int64_t *out, str op) except -1:
    """Copy a sequence of ints into a MAX_DIMS array (its length checked before each
    write); return its length."""
    cdef int n = 0
    for a in seq:
        if n >= MAX_DIMS:
            too_many_dims(len(seq) if hasattr(seq, "__len__") else n + 1, op)
        if isinstance(a, bool) or not (isinstance(a, int) or hasattr(a, "__index__")):
            raise TypeError(f"{op}(): argument 'size' must be a tuple of ints, but found element "
                            f"of type {type(a).__name__} at pos {n}")
        try:
            out[n] = a.__index__() if not isinstance(a, int) else a
        except OverflowError:
            raise RuntimeError(f"{op}: size {a} at position {n} does not fit in int64") from None
        n += 1
    return n


cdef int broadcast_shape(int nda, const int64_t *sa, int ndb, const int64_t *sb,
                         int64_t *out) except -1:
    # the result is built aside first: `out` may be one of the inputs
    cdef int nd = nda if nda > ndb else ndb, i
    cdef int64_t x, y
    cdef int64_t res[MAX_DIMS]
    for i in range(nd):
        x = sa[nda - nd + i] if nda - nd + i >= 0 else 1
        y = sb[ndb - nd + i] if ndb - nd + i >= 0 else 1
        if x == y or y == 1:
            res[i] = x
        elif x == 1:
            res[i] = y
        else:
            raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b "
                               f"({y}) at non-singleton dimension {i}")
    for i in range(nd):
        out[i] = res[i]
    return nd


def broadcast_shapes(*shapes):
    """Shape that the given shapes broadcast to (PyTorch's rules)."""
    cdef int64_t acc[MAX_DIMS]
    cdef int64_t cur[MAX_DIMS]
    cdef int nd = 0, n
    for s in shapes:
        if isinstance(s, int):
            s = (s,)
        n = parse_shape(tuple(s), cur, "broadcast_shapes")
        nd = broadcast_shape(nd, acc, n, cur, acc)
    return Size([acc[i] for i in range(nd)])


cdef int iter_init(NdIter *it, list ops, int ndim, const int64_t *shape) except -1:
    """Set up a broadcast iteration of ops (tensors) over `shape` (the output's)."""
    cdef int a, d, k
    cdef TensorBase t
    cdef int nargs = len(ops)
    it.nargs = nargs
    it.ndim = ndim
    it.numel = numel_of(ndim, shape)
    for d in range(ndim):
        it.shape[d] = shape[d]
    for a in range(nargs):
        t = <TensorBase>ops[a]
        it.ptrs[a] = _ptr(t)
        k = ndim - t._ndim
        for d in range(ndim):
            if d < k or t._shape[d - k] == 1:
                it.strides[a * MAX_DIMS + d] = 0
            else:
                it.strides[a * MAX_DIMS + d] = t._strides[d - k] * em_itemsize[t._dtype]
    iter_coalesce(it)
    return 0


cdef void iter_coalesce(NdIter *it) noexcept nogil:
    """Drop size-1 dims and merge dims that are contiguous for every operand;
    then repack strides to the [arg][ndim] layout em_run_nd expects."""
    cdef int nd = 0, d, a
    cdef bint ok
    cdef int64_t tmp[MAX_ARGS * MAX_DIMS]
    for d in range(it.ndim):
        if it.shape[d] == 1:
            continue
        if nd > 0:
            ok = True
            for a in range(it.nargs):
                if it.strides[a * MAX_DIMS + nd - 1] != it.shape[d] * it.strides[a * MAX_DIMS + d]:
                    ok = False
                    break
            if ok:
                it.shape[nd - 1] *= it.shape[d]
                for a in range(it.nargs):
                    it.strides[a * MAX_DIMS + nd - 1] = it.strides[a * MAX_DIMS + d]
                continue
        it.shape[nd] = it.shape[d]
        for a in range(it.nargs):
            it.strides[a * MAX_DIMS + nd] = it.strides[a * MAX_DIMS + d]
        nd += 1
    if it.numel == 0:
        nd = 1
        it.shape[0] = 0
    it.ndim = nd
    for a in range(it.nargs):
        for d in range(nd):
            tmp[a * nd + d] = it.strides[a * MAX_DIMS + d]
    memcpy(it.strides, tmp, sizeof(int64_t) * it.nargs * nd)


# ----------------------------------------------------------------------------
# scalars <-> raw buffers

cdef int scalar_to_buf(object v, int dtype, void *buf) except -1:
    cdef double d
    cdef int64_t i
    if isinstance(v, TensorBase):
        v = (<TensorBase>v).item()
    if dtype == EM_C64 or dtype == EM_C128:
        z = complex(v)
        if dtype == EM_C64:
            (<float *>buf)[0] = <float>z.real
            (<float *>buf)[1] = <float>z.imag
        else:
            (<double *>buf)[0] = z.real
            (<double *>buf)[1] = z.imag
        return 0
    if isinstance(v, complex):
        if v.imag != 0 or dtype < EM_F16:
            raise RuntimeError(f"value cannot be converted to type {_NAMES[dtype]} without "
                               f"overflow")
        v = v.real
    if dtype >= EM_F16:
        d = float(v)
        if dtype == EM_F32:
            (<float *>buf)[0] = <float>d
        elif dtype == EM_F64:
            (<double *>buf)[0] = d
        elif dtype == EM_F16:
            (<uint16_t *>buf)[0] = em_f2h(<float>d)
        else:
            (<uint16_t *>buf)[0] = em_f2bf(<float>d)
        return 0
    if dtype == EM_BOOL:
        (<uint8_t *>buf)[0] = 1 if v else 0
        return 0
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            raise RuntimeError(f"value cannot be converted to type {_NAMES[dtype]} without "
                               f"overflow: {v}")
        i = <int64_t>v
    else:
        try:
            i = v
        except OverflowError:
            raise RuntimeError(f"value cannot be converted to type {_NAMES[dtype]} without "
                               f"overflow: {v}") from None
    if dtype == EM_I64:
        (<int64_t *>buf)[0] = i
    elif dtype == EM_I32:
        (<int32_t *>buf)[0] = <int32_t>i
    elif dtype == EM_I16:
        (<int16_t *>buf)[0] = <int16_t>i
    elif dtype == EM_I8:
        (<int8_t *>buf)[0] = <int8_t>i
    else:
        (<uint8_t *>buf)[0] = <uint8_t>i
    return 0


cdef object buf_to_scalar(const void *buf, int dtype):
    if dtype == EM_C64:
        return complex((<const float *>buf)[0], (<const float *>buf)[1])
    if dtype == EM_C128:
        return complex((<const double *>buf)[0], (<const double *>buf)[1])
    if dtype == EM_F32:
        return <double>(<const float *>buf)[0]
    if dtype == EM_F64:
        return (<const double *>buf)[0]
    if dtype == EM_F16:
        return <double>em_h2f((<const uint16_t *>buf)[0])
    if dtype == EM_BF16:
        return <double>em_bf2f((<const uint16_t *>buf)[0])
    if dtype == EM_I64:
        return (<const int64_t *>buf)[0]
    if dtype == EM_I32:
        return (<const int32_t *>buf)[0]
    if dtype == EM_I16:
        return (<const int16_t *>buf)[0]
    if dtype == EM_I8:
        return (<const int8_t *>buf)[0]
    if dtype == EM_U8:
        return (<const uint8_t *>buf)[0]
    return (<const uint8_t *>buf)[0] != 0


# ----------------------------------------------------------------------------
# copies and casts

cdef int copy_into(TensorBase dst, TensorBase src) except -1:
    """dst[...] = src with broadcasting and dtype conversion (no autograd)."""
    cdef NdIter it
    cdef int64_t bshape[MAX_DIMS]
    cdef int nd = broadcast_shape(dst._ndim, dst._shape, src._ndim, src._shape, bshape)
    cdef int i
    if nd != dst._ndim or any([bshape[i] != dst._shape[i] for i in range(nd)]):
        raise RuntimeError(f"output with shape {list(shape_tuple(dst))} doesn't match the "
                           f"broadcast shape {[bshape[i] for i in range(nd)]}")
    # the values stored differ by the bits where dst's and src's differ: copy the stored
    # values, then flip those bits in dst (an integer dst takes src's resolved values)
    cdef int bits = dst._mbits ^ src._mbits
    cdef bint cuda = dst._device.kind == DEV_CUDA or src._device.kind == DEV_CUDA
    if bits and (category(dst._dtype) < 2 or not cuda and (dst._device.kind != DEV_CPU or
                                                           src._device.kind != DEV_CPU)):
        if dst._mbits:
            raise RuntimeError("copy_: a tensor with a conjugate or negative bit set can only "
                               "be written on the CPU")
        src = resolve_bits(src)
        bits = 0
    if cuda:                # the backend applies both tensors' bits
        _cuda_backend().copy_into(dst, src)
        return 0
    if dst._device.kind != DEV_CPU or src._device.kind != DEV_CPU:
        raise RuntimeError(f"copy_: cannot copy between {src._device} and {dst._device} natively")
    iter_init(&it, [dst, src], dst._ndim, dst._shape)
    cdef em_loop fn = em_cast_loop(dst._dtype, src._dtype)
    cdef int64_t isz = em_itemsize[dst._dtype]
    cdef int nt = nthreads_for(it.numel)
    cdef em_flip_aux flip
    if (not bits and dst._dtype == src._dtype and it.ndim == 1 and it.strides[0] == isz
            and it.strides[1] == 0):
        # one value broadcast over a contiguous dst (expand().contiguous(), the grad of
        # a sum): a fill, whose stores vectorise
        with nogil:
            em_fill(dst._dtype, it.ptrs[0], isz, it.numel, it.ptrs[1], nt)
        return 0
    if bits and dst._dtype == src._dtype:
        _flip_masks(dst._dtype, bits, &flip)
        with nogil:
            em_run_nd(em_flipcopy, 2, it.ptrs, it.ndim, it.shape, it.strides, &flip, nt)
        return 0
    with nogil:
        em_run_nd(fn, 2, it.ptrs, it.ndim, it.shape, it.strides, &isz, nt)
    if bits:
        apply_bits(dst, bits)
    return 0


cdef void _flip_masks(int dtype, int bits, em_flip_aux *a) noexcept:
    """the sign-bit masks that conjugate (MATH_CONJ) and/or negate (MATH_NEG) an item"""
    cdef uint64_t top = (<uint64_t>1) << 63
    cdef bint neg = (bits & MATH_NEG) != 0, im = neg != ((bits & MATH_CONJ) != 0)
    a.isz = em_itemsize[dtype]
    a.hi = 0
    if dtype == EM_C128:
        a.lo = top if neg else 0
        a.hi = top if im else 0
    elif dtype == EM_C64:           # (re, im) float32 pair: re in the low half
        a.lo = (top if im else 0) | ((<uint64_t>1) << 31 if neg else 0)
    else:                           # a real float: its sign bit
        a.lo = ((<uint64_t>1) << (8 * a.isz - 1)) if neg else 0


cdef int apply_bits(TensorBase t, int bits) except -1:
    """Conjugate (MATH_CONJ) and/or negate (MATH_NEG) t's stored values in place, by
    flipping sign bits; a dim of stride 0 is visited once (its elements share memory)."""
    cdef bint cplx = t._dtype == EM_C64 or t._dtype == EM_C128
    if not cplx:
        bits &= MATH_NEG
    if bits == 0 or numel_of(t._ndim, t._shape) == 0:
        return 0
    if category(t._dtype) < 2:
        raise RuntimeError(f"negative bit: not supported for {dtype_obj(t._dtype)} tensors")
    if t._device.kind == DEV_CUDA:
        _cuda_backend().apply_bits(t, bits)
        return 0
    if t._device.kind != DEV_CPU:
        raise RuntimeError(f"conjugate/negative bit: {t._device} tensors are not supported")
    cdef int64_t isz = em_itemsize[t._dtype] // (2 if cplx else 1)
    cdef int64_t shape[MAX_DIMS + 1]
    cdef int64_t strides[MAX_DIMS + 1]
    cdef int64_t n = 1
    cdef int nd = 0, i
    cdef char *p = _ptr(t)
    for i in range(t._ndim):
        if t._shape[i] == 1 or t._strides[i] == 0:
            continue
        shape[nd] = t._shape[i]
        strides[nd] = t._strides[i] * em_itemsize[t._dtype]
        n *= shape[nd]
        nd += 1
    if cplx:
        if bits == MATH_CONJ:          # the imaginary parts
            p += isz
        elif bits == MATH_NEG:         # both parts
            shape[nd] = 2
            strides[nd] = isz
            n *= 2
            nd += 1
        # both bits: -conj(z) negates the real parts only
    with nogil:
        em_run_nd(em_signflip, 1, &p, nd, shape, strides, &isz, nthreads_for(n))
    return 0


cdef TensorBase resolve_bits(TensorBase t):
    """t's values without lazy bits: t itself when it has none, else a new tensor (not
    recorded for autograd)"""
    if t._mbits == 0:
        return t
    cdef TensorBase r = new_like(t, -1)
    copy_into(r, t)
    return r


cdef TensorBase contig(TensorBase t):
    if is_contig(t):
        return t
    cdef TensorBase r = new_like(t, -1)
    copy_into(r, t)
    return r


cdef TensorBase cast(TensorBase t, int dtype):
    if t._dtype == dtype:
        return t
    cdef TensorBase r = new_like(t, dtype)
    copy_into(r, t)
    return r


cdef int fill_scalar(TensorBase dst, object v) except -1:
    cdef uint64_t buf[2]
    buf[0] = 0
    buf[1] = 0
    cdef NdIter it
    if dst._mbits:          # store the value that reads as v, through a plain view
        v = _math_value(v, dst._mbits)
        dst = make_view(dst, dst._ndim, dst._shape, dst._strides, dst._offset)
        dst._mbits = 0
    scalar_to_buf(v, dst._dtype, buf)
    if dst._device.kind == DEV_CUDA:
        _cuda_backend().fill(dst, (<char *>buf)[:em_itemsize[dst._dtype]])
        return 0
    if is_contig(dst) or dense_nonoverlap(dst):     # (channels-last: one flat fill too)
        with nogil:
            em_fill(dst._dtype, _ptr(dst), em_itemsize[dst._dtype], numel_of(dst._ndim, dst._shape),
                    buf, nthreads_for(numel_of(dst._ndim, dst._shape)))
        return 0
    cdef TensorBase s = wrap_scalar(v, dst._dtype)
    copy_into(dst, s)
    return 0


cdef object _math_value(object v, int bits):
    """the value to store so that a tensor with these bits reads v"""
    if bits & MATH_CONJ and isinstance(v, complex):
        v = v.conjugate()
    return -v if bits & MATH_NEG else v


cdef bint _compute_view_strides(TensorBase t, int nnd, const int64_t *nshape,
                                int64_t *nstrides) noexcept:
    """PyTorch's computeStride: strides for viewing t as nshape without a copy,
    or False when the memory layout does not allow it."""
    cdef int64_t numel = numel_of(t._ndim, t._shape)
    cdef int i, tensor_d, view_d
    cdef int64_t chunk_base_stride, tensor_numel, view_numel
    if numel == 0 or t._ndim == 0:
        chunk_base_stride = 1
        for i in range(nnd - 1, -1, -1):
            nstrides[i] = chunk_base_stride
            chunk_base_stride *= nshape[i] if nshape[i] > 1 else 1
        return True
    view_d = nnd - 1
    chunk_base_stride = t._strides[t._ndim - 1]
    tensor_numel = 1
    view_numel = 1
    for tensor_d in range(t._ndim - 1, -1, -1):
        tensor_numel *= t._shape[tensor_d]
        if tensor_d == 0 or (t._shape[tensor_d - 1] != 1 and
                             t._strides[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or nshape[view_d] == 1):
                nstrides[view_d] = view_numel * chunk_base_stride
                view_numel *= nshape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return False
            if tensor_d > 0:
                chunk_base_stride = t._strides[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    return view_d == -1


cdef int _infer_size(int64_t *shape, int nd, int64_t numel, str op) except -1:
    cdef int infer = -1, i
    cdef int64_t prod = 1
    for i in range(nd):
        if shape[i] == -1:
            if infer >= 0:
                raise RuntimeError(f"{op}: only one dimension can be inferred")
            infer = i
        elif shape[i] < 0:
            raise RuntimeError(f"{op}: invalid shape dimension {shape[i]} at index {i} of shape "
                               f"{_dims_list(nd, shape)}")
        else:
            prod = em_mul_size(prod, shape[i])
    if prod < 0:
        raise RuntimeError(f"shape '{_dims_list(nd, shape)}' is invalid for input of size "
                           f"{numel}")
    if infer >= 0:
        if prod == 0 or numel % prod != 0:
            raise RuntimeError(f"shape '[{', '.join(str(shape[j]) for j in range(nd))}]' is "
                               f"invalid for input of size {numel}")
        shape[infer] = numel // prod
    elif prod != numel:
        raise RuntimeError(f"shape '[{', '.join(str(shape[j]) for j in range(nd))}]' is "
                           f"invalid for input of size {numel}")
    return 0


cdef class TensorBase:
    """The C-level tensor: storage, offset, shape and strides in fixed arrays,
    dtype code, device and the autograd fields."""

    # ---- metadata -----------------------------------------------------------
    @property
    def shape(self):
        return Size(shape_tuple(self))

    def size(self, dim=None):
        if dim is None:
            return Size(shape_tuple(self))
        return self._shape[wrap_dim(dim, self._ndim, "size")] if self._ndim else \
            _raise_index("size", dim, 0)

    def stride(self, dim=None):
        if dim is None:
            return tuple([self._strides[i] for i in range(self._ndim)])
        return self._strides[wrap_dim(dim, self._ndim, "stride")]

    @property
    def ndim(self):
        return self._ndim

    def dim(self):
        return self._ndim

    def ndimension(self):
        return self._ndim

    @property
    def dtype(self):
        return _dtypes[self._dtype]

    @property
    def device(self):
        return self._device

    @property
    def is_cuda(self):
        return self._device.kind == DEV_CUDA

    @property
    def is_cpu(self):
        return self._device.kind == DEV_CPU

    @property
    def is_meta(self):
        return self._device.kind == DEV_META

    def numel(self):
        return numel_of(self._ndim, self._shape)

    def nelement(self):
        return numel_of(self._ndim, self._shape)

    def element_size(self):
        return em_itemsize[self._dtype]

    @property
    def itemsize(self):
        return em_itemsize[self._dtype]

    @property
    def nbytes(self):
        return numel_of(self._ndim, self._shape) * em_itemsize[self._dtype]

    def storage_offset(self):
        return self._offset

    def data_ptr(self):
        return <size_t>_ptr(self)

    def untyped_storage(self):
        return self._storage

    def _storage_id(self):
        return id(self._storage)

    def is_contiguous(self, memory_format=None):
        if memory_format is None:
            return is_contig(self)
        return _memfmt().is_contiguous(self, memory_format)

    def is_floating_point(self):
        return EM_F16 <= self._dtype <= EM_F64

    def is_complex(self):
        return self._dtype == EM_C64 or self._dtype == EM_C128

    def is_signed(self):
        return self._dtype not in (EM_BOOL, EM_U8)

    @property
    def _version(self):
        return self._storage.version

    def _bump_version(self):
        self._storage.version += 1

    def get_device(self):
        return -1 if self._device.kind == DEV_CPU else (self._device.index or 0)

    # ---- autograd fields ----------------------------------------------------
    @property
    def requires_grad(self):
        if self._ag_base is not None and self._ag_ver != self._storage.version:
            view_refresh(self)
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, bint value):
        if value and self._dtype < EM_F16:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        if not value and self._grad_fn is not None:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If "
                               "you want to use a computed variable in a subgraph that doesn't "
                               "require differentiation use var_no_grad = var.detach().")
        global _rg_writes
        _rg_writes += 1
        self._requires_grad = value

    def requires_grad_(self, bint requires_grad=True):
        self.requires_grad = requires_grad
        return self

    @property
    def grad_fn(self):
        if self._ag_base is not None and self._ag_ver != self._storage.version:
            view_refresh(self)
        return self._grad_fn

    @property
    def is_leaf(self):
        if self._ag_base is not None and self._ag_ver != self._storage.version:
            view_refresh(self)
        return self._grad_fn is None

    def detach(self):
        """A view of the same storage that is cut off from the autograd graph."""
        if _slow:
            return redispatch("detach", TensorBase.detach, (self,), None)
        cdef TensorBase r = make_view(self, self._ndim, self._shape, self._strides, self._offset)
        r._ag_base = None       # not a view for autograd: writes to it stay out of the graph
        return r

    def detach_(self):
        global _rg_writes
        _rg_writes += 1
        self._grad_fn = None
        self._requires_grad = False
        return self

    def is_inference(self):
        """True for a tensor made under ``inference_mode`` (and views of one)."""
        return self._inference

    def _adopt(self, TensorBase src not None):
        """Take ``src``'s storage, offset, shape and strides (same dtype and device): the
        metadata half of in-place view ops, ``set_`` and ``resize_``."""
        cdef int i
        if src._dtype != self._dtype or src._device is not self._device and \
                src._device != self._device:
            raise RuntimeError("_adopt: the source must have the tensor's dtype and device")
        if src._storage is not self._storage:
            self._ag_base = None      # other memory: no longer a view of its old base
        self._storage = src._storage
        self._offset = src._offset
        self._mbits = src._mbits
        self._ndim = src._ndim
        for i in range(src._ndim):
            self._shape[i] = src._shape[i]
            self._strides[i] = src._strides[i]
        return self

    # ---- views --------------------------------------------------------------
    def view(self, *shape):
        if _slow:
            return redispatch("view", TensorBase.view, (self,) + shape, None)
        cdef int64_t ns[MAX_DIMS]
        cdef int64_t nst[MAX_DIMS]
        if len(shape) == 1 and isinstance(shape[0], DType):
            return self._view_dtype(shape[0])
        cdef int nd = parse_shape(shape, ns, "view")
        _infer_size(ns, nd, numel_of(self._ndim, self._shape), "view")
        if not _compute_view_strides(self, nd, ns, nst):
            raise RuntimeError("view size is not compatible with input tensor's size and stride "
                               "(at least one dimension spans across two contiguous subspaces). "
                               "Use .reshape(...) instead.")
        return self._record_view("view", make_view(self, nd, ns, nst, self._offset),
                                 (shape_tuple(self),))

    def _view_dtype(self, d):
        cdef int c = dtype_code(d)
        if self._mbits and c != self._dtype:
            raise RuntimeError("view(dtype): not supported on a tensor with its conjugate or "
                               "negative bit set; call resolve_conj() / resolve_neg() first")
        if em_itemsize[c] != em_itemsize[self._dtype] or not is_contig(self):
            raise RuntimeError("view(dtype): only same-itemsize views of contiguous tensors are "
                               "supported")
        cdef TensorBase r = make_view(self, self._ndim, self._shape, self._strides, self._offset)
        r._dtype = c
        return r

    def reshape(self, *shape):
        if _slow:
            return redispatch("reshape", TensorBase.reshape, (self,) + shape, None)
        cdef int64_t ns[MAX_DIMS]
        cdef int64_t nst[MAX_DIMS]
        cdef int nd = parse_shape(shape, ns, "reshape")
        _infer_size(ns, nd, numel_of(self._ndim, self._shape), "reshape")
        if _compute_view_strides(self, nd, ns, nst):
            return self._record_view("view", make_view(self, nd, ns, nst, self._offset),
                                     (shape_tuple(self),))
        c = self.contiguous()
        return c.view(*[ns[i] for i in range(nd)])

    def _record_view(self, str name, TensorBase out not None, attrs):
        if em_grad_on and self._requires_grad:
            record(name, (self,), out, attrs)
        return out

    def as_strided(self, size, stride, storage_offset=None):
        if _slow:
            return redispatch("as_strided", TensorBase.as_strided, (self, size, stride, storage_offset), None)
        cdef int64_t ns[MAX_DIMS]
        cdef int64_t nst[MAX_DIMS]
        cdef int nd = parse_shape(tuple(size), ns, "as_strided")
        cdef int nd2 = parse_shape(tuple(stride), nst, "as_strided")
        if nd != nd2:
            raise RuntimeError(f"as_strided: mismatch in length of strides and shape")
        off = self._offset if storage_offset is None else int64_arg(
            storage_offset, "as_strided", "storage_offset")
        for i in range(nd):
            if ns[i] < 0 or nst[i] < 0:
                raise RuntimeError("as_strided: negative size or stride")
        if off < 0:
            raise RuntimeError(f"as_strided: Tensor: invalid storage offset {off}")
        if shape_numel(nd, ns, "as_strided") > 0 and mul_sizes(
                _span(nd, ns, nst, off, "as_strided"), em_itemsize[self._dtype],
                "as_strided") > self._storage._nbytes:
            raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)} out of "
                               f"bounds for storage of size {self._storage._nbytes}")
        return self._record_view("as_strided", make_view(self, nd, ns, nst, off),
                                 (shape_tuple(self), self.stride(), self._offset,
                                  tuple(size), tuple(stride), off))

    def permute(self, *dims):
        if _slow:
            return redispatch("permute", TensorBase.permute, (self,) + dims, None)
        cdef int64_t d[MAX_DIMS]
        cdef int64_t ns[MAX_DIMS]
        cdef int64_t nst[MAX_DIMS]
        cdef int nd = parse_shape(dims, d, "permute"), i, k
        cdef bint seen[MAX_DIMS]
        if nd != self._ndim:
            raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input "
                               f"does not match the length of the desired ordering of dimensions "
                               f"i.e. input.dim() = {self._ndim} is not equal to len(dims) = {nd}")
        memset(seen, 0, sizeof(seen))
        for i in range(nd):
            k = wrap_dim(d[i], nd, "permute")
            if seen[k]:
                raise RuntimeError("permute(): duplicate dims are not allowed.")
            seen[k] = True
            d[i] = k
            ns[i] = self._shape[k]
            nst[i] = self._strides[k]
        return self._record_view("permute", make_view(self, nd, ns, nst, self._offset),
                                 (tuple([d[i] for i in range(nd)]),))

    def transpose(self, dim0, dim1):
        if _slow:
            return redispatch("transpose", TensorBase.transpose, (self, dim0, dim1), None)
        cdef int a = wrap_dim(dim0, self._ndim, "transpose")
        cdef int b = wrap_dim(dim1, self._ndim, "transpose")
        cdef TensorBase r = make_view(self, self._ndim, self._shape, self._strides, self._offset)
        if self._ndim == 0:
            return self._record_view("transpose", r, (0, 0))
        r._shape[a], r._shape[b] = self._shape[b], self._shape[a]
        r._strides[a], r._strides[b] = self._strides[b], self._strides[a]
        return self._record_view("transpose", r, (a, b))

    swapaxes = transpose
    swapdims = transpose

    def t(self):
        if _slow:
            return redispatch("t", TensorBase.t, (self,), None)
        if self._ndim > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                               f"{self._ndim}D")
        return self.transpose(0, 1) if self._ndim == 2 else self._record_view(
            "view", make_view(self, self._ndim, self._shape, self._strides, self._offset),
            (shape_tuple(self),))

    @property
    def T(self):
        return self.permute(*range(self._ndim - 1, -1, -1))

    @property
    def mT(self):
        if self._ndim < 2:
            raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. "
                               f"Got {self._ndim}-D tensor.")
        return self.transpose(-2, -1)

    @property
    def H(self):
        return self.T.conj() if category(self._dtype) == 3 else self.T

    @property
    def mH(self):
        return self.mT.conj() if category(self._dtype) == 3 else self.mT

    def unsqueeze(self, dim):
        if _slow:
            return redispatch("unsqueeze", TensorBase.unsqueeze, (self, dim), None)
        cdef int d = wrap_dim(dim, self._ndim + 1, "unsqueeze"), i
        cdef int64_t ns[MAX_DIMS]
        cdef int64_t nst[MAX_DIMS]
        check_ndim(self._ndim + 1, "unsqueeze")
        for i in range(d):
            ns[i] = self._shape[i]
            nst[i] = self._strides[i]
        ns[d] = 1
        nst[d] = self._strides[d] * self._shape[d] if d < self._ndim else 1
        for i in range(d, self._ndim):
            ns[i + 1] = self._shape[i]
            nst[i + 1] = self._strides[i]
        return self._record_view("view", make_view(self, self._ndim + 1, ns, nst, self._offset),
                                 (shape_tuple(self),))

    def squeeze(self, dim=None):
        if _slow:
            return redispatch("squeeze", TensorBase.squeeze, (self, dim), None)
        cdef int64_t ns[MAX_DIMS]
        cdef int64_t nst[MAX_DIMS]
        cdef bint drop[MAX_DIMS]
        cdef int nd = 0, i
        for i in range(self._ndim):
            drop[i] = dim is None and self._shape[i] == 1
        if dim is not None:
            seen = set()
            for dd in (dim if isinstance(dim, (tuple, list)) else (dim,)):
                i = wrap_dim(dd, self._ndim, "squeeze")
                if i in seen:
                    raise RuntimeError(f"dim {i} appears multiple times in the list of dims")
                seen.add(i)
                drop[i] = self._shape[i] == 1 if self._ndim else False
        for i in range(self._ndim):
            if not drop[i]:
                ns[nd] = self._shape[i]
                nst[nd] = self._strides[i]
                nd += 1
        return self._record_view("view", make_view(self, nd, ns, nst, self._offset),
                                 (shape_tuple(self),))

    def expand(self, *sizes):
        if _slow:
            return redispatch("expand", TensorBase.expand, (self,) + sizes, None)
        cdef int64_t ns[MAX_DIMS]
        cdef int64_t nst[MAX_DIMS]
        cdef int nd = parse_shape(sizes, ns, "expand"), i, k
        if nd < self._ndim:
            raise RuntimeError(f"expand: the number of sizes provided ({nd}) must be greater or "
                               f"equal to the number of dimensions in the tensor ({self._ndim})")
        k = nd - self._ndim
        for i in range(nd):
            if i < k:
                if ns[i] < 0:
                    raise RuntimeError(f"expand: the expanded size of the tensor ({ns[i]}) isn't "
                                       f"allowed in a leading, non-existing dimension {i}")
                nst[i] = 0
            else:
                if ns[i] == -1:
                    ns[i] = self._shape[i - k]
                elif ns[i] < 0:
                    raise RuntimeError(f"expand: the expanded size of the tensor ({ns[i]}) "
                                       f"isn't allowed at dimension {i}: sizes must be "
                                       f"non-negative or -1. Target sizes: "
                                       f"{[ns[j] for j in range(nd)]}")
                if self._shape[i - k] == ns[i]:
                    nst[i] = self._strides[i - k]
                elif self._shape[i - k] == 1:
                    nst[i] = 0
                else:
                    raise RuntimeError(f"The expanded size of the tensor ({ns[i]}) must match the "
                                       f"existing size ({self._shape[i - k]}) at non-singleton "
                                       f"dimension {i}.  Target sizes: "
                                       f"{[ns[j] for j in range(nd)]}.  Tensor sizes: "
                                       f"{list(shape_tuple(self))}")
        shape_numel(nd, ns, "expand")
        return self._record_view("expand", make_view(self, nd, ns, nst, self._offset),
                                 (shape_tuple(self),))

    def expand_as(self, TensorBase other not None):
        return self.expand(*other.shape)

    def broadcast_to(self, *sizes):
        return self.expand(*sizes)

    def narrow(self, dim, start, length):
        if _slow:
            return redispatch("narrow", TensorBase.narrow, (self, dim, start, length), None)
        cdef int d = wrap_dim(dim, self._ndim, "narrow")
        cdef int64_t size = self._shape[d]
        if isinstance(start, TensorBase):
            start = start.item()
        if start < -size or start > size:
            raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], "
                             f"but got {start})")
        if start < 0:
            start += size
        if length < 0:
            raise RuntimeError("narrow(): length must be non-negative.")
        if start + length > size:
            raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size "
                               f"({size}).")
        cdef TensorBase r = make_view(self, self._ndim, self._shape, self._strides,
                                      self._offset + start * self._strides[d])
        r._shape[d] = length
        return self._record_view("narrow", r, (shape_tuple(self), d, start, length))

    def select(self, dim, index):
        if _slow:
            return redispatch("select", TensorBase.select, (self, dim, index), None)
        cdef int d = wrap_dim(dim, self._ndim, "select"), i
        cdef int64_t size = self._shape[d]
        cdef int64_t idx = int64_arg(index, "select", "index")
        if idx < -size or idx >= size:
            raise IndexError(f"index {index} is out of bounds for dimension {d} with size {size}")
        if idx < 0:
            idx += size
        cdef int64_t ns[MAX_DIMS]
        cdef int64_t nst[MAX_DIMS]
        for i in range(d):
            ns[i] = self._shape[i]
            nst[i] = self._strides[i]
        for i in range(d + 1, self._ndim):
            ns[i - 1] = self._shape[i]
            nst[i - 1] = self._strides[i]
        return self._record_view("select", make_view(
            self, self._ndim - 1, ns, nst, self._offset + idx * self._strides[d]),
            (shape_tuple(self), d, idx))

    def diagonal(self, offset=0, dim1=0, dim2=1):
        if _slow:
            return redispatch("diagonal", TensorBase.diagonal, (self, offset, dim1, dim2), None)
        cdef int a = wrap_dim(dim1, self._ndim, "diagonal")
        cdef int b = wrap_dim(dim2, self._ndim, "diagonal"), i, nd = 0
        if a == b:
            raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
        cdef int64_t off = self._offset, n
        # an offset past either edge gives the same empty diagonal as one at the edge
        offset = max(-self._shape[a], min(int64_arg(offset, "diagonal", "offset"),
                                          self._shape[b]))
        if offset >= 0:
            n = min(self._shape[a], self._shape[b] - offset)
            off += offset * self._strides[b]
        else:
            n = min(self._shape[a] + offset, self._shape[b])
            off -= offset * self._strides[a]
        if n <= 0:
            n = 0
            off = self._offset
        cdef int64_t ns[MAX_DIMS]
        cdef int64_t nst[MAX_DIMS]
        for i in range(self._ndim):
            if i != a and i != b:
                ns[nd] = self._shape[i]
                nst[nd] = self._strides[i]
                nd += 1
        ns[nd] = n
        nst[nd] = self._strides[a] + self._strides[b]
        return self._record_view("diagonal", make_view(self, nd + 1, ns, nst, off),
                                 (shape_tuple(self), offset, a, b))

    def unfold(self, dimension, size, step):
        if _slow:
            return redispatch("unfold", TensorBase.unfold, (self, dimension, size, step), None)
        cdef int d = wrap_dim(dimension, self._ndim, "unfold"), i
        if size > self._shape[d] or step <= 0:
            raise RuntimeError(f"unfold: maximum size for tensor at dimension {d} is "
                               f"{self._shape[d]} but size is {size}")
        shp = list(shape_tuple(self))
        st = list(self.stride())
        shp[d] = (self._shape[d] - size) // step + 1
        st[d] = self._strides[d] * step
        return self.as_strided(shp + [size], st + [self._strides[d]], self._offset)

    # ---- copies -------------------------------------------------------------
    def contiguous(self, memory_format=None):
        if _slow:
            return redispatch("contiguous", TensorBase.contiguous, (self,),
                              None if memory_format is None else {"memory_format": memory_format})
        if memory_format is not None and memory_format is not _memfmt().contiguous_format:
            return _memfmt().contiguous(self, memory_format)
        if is_contig(self):
            return self
        cdef TensorBase r = new_like(self, -1)
        copy_into(r, self)
        if em_grad_on and self._requires_grad:
            record("clone", (self,), r, None)
        return r

    def clone(self, memory_format=None):
        if _slow or self._device.kind != DEV_CPU:
            return redispatch("clone", TensorBase.clone, (self,),
                              None if memory_format is None else {"memory_format": memory_format})
        if memory_format is not None or _maybe_channels_last(self):
            f = _memfmt().clone(self, memory_format)
            if f is not None:
                return f
        cdef TensorBase r = new_like(self, -1)
        copy_into(r, self)
        if em_grad_on and self._requires_grad:
            record("clone", (self,), r, None)
        return r

    def copy_(self, src, non_blocking=False):
        if not isinstance(src, TensorBase):
            src = _tensor_from_data(src, -1, None)
        cdef TensorBase s = <TensorBase>src
        if _slow or self._device.kind != DEV_CPU or s._device.kind != DEV_CPU:
            if self._device.kind == DEV_PLUGIN or s._device.kind == DEV_PLUGIN:
                dev = self._device if self._device.kind == DEV_PLUGIN else s._device
                kern = _backend_kernels.get(dev.type, {}).get("copy_")
                if kern is None:
                    raise NotImplementedError(f"copy_: no kernel registered for '{dev.type}'")
                kern(self, s)
                self._storage.version += 1
                return self
            if _slow:
                return redispatch("copy_", TensorBase.copy_, (self, src), None)
        check_inplace(self, "copy_")
        check_written(self, s, "copy_")
        if em_grad_on and (s._requires_grad or self._requires_grad):
            old = make_view(self, self._ndim, self._shape, self._strides, self._offset)
            copy_into(self, s)
            self._storage.version += 1
            record("copy_", (old, s), self, None)
            view_written(self)
            return self
        copy_into(self, s)
        self._storage.version += 1
        return self

    def to(self, *args, **kwargs):
        """to(dtype) / to(device) / to(device, dtype) / to(other) with copy=."""
        if _slow:
            return redispatch("to", TensorBase.to, (self,) + args, kwargs)
        dtype = kwargs.get("dtype")
        device = kwargs.get("device")
        copy = kwargs.get("copy", False)
        for a in args:
            if isinstance(a, DType):
                dtype = a
            elif isinstance(a, TensorBase):
                dtype, device = a.dtype, a.device
            elif isinstance(a, (str, Device)):
                device = a
            elif isinstance(a, bool):
                copy = a
            elif a is not None:
                raise TypeError(f"to() received an invalid combination of arguments: {a!r}")
        nb = bool(kwargs.get("non_blocking", False))
        fmt = kwargs.get("memory_format")
        if fmt is not None or _maybe_channels_last(self):
            return _memfmt().to(self, _to_plain(self, dtype, device, copy, nb), fmt)
        return _to_plain(self, dtype, device, copy, nb)

    def _cast(self, int dt):
        if _slow and dt != self._dtype:
            return redispatch("to", TensorBase.to, (self, _dtypes[dt]), None)
        if dt == self._dtype:
            return self
        if category(self._dtype) == 3 and category(dt) < 3:
            import warnings
            warnings.warn("Casting complex values to real discards the imaginary part",
                          UserWarning, stacklevel=2)
        cdef TensorBase r = new_like(self, dt)
        cdef int i
        if _maybe_channels_last(self) and dense_nonoverlap(self):
            for i in range(self._ndim):     # torch's preserve_format: the same strides
                r._strides[i] = self._strides[i]
        copy_into(r, self)
        if em_grad_on and self._requires_grad and dt >= EM_F16:
            record("to_dtype", (self,), r, (self._dtype,))
        return r

    def type(self, dtype=None):
        if dtype is None:
            return {EM_F32: "ember.FloatTensor", EM_F64: "ember.DoubleTensor",
                    EM_I64: "ember.LongTensor", EM_I32: "ember.IntTensor",
                    EM_BOOL: "ember.BoolTensor", EM_U8: "ember.ByteTensor",
                    EM_I8: "ember.CharTensor", EM_I16: "ember.ShortTensor",
                    EM_F16: "ember.HalfTensor", EM_BF16: "ember.BFloat16Tensor",
                    EM_C64: "ember.ComplexFloatTensor",
                    EM_C128: "ember.ComplexDoubleTensor"}[self._dtype]
        return self._cast(dtype_code(dtype))

    def type_as(self, other):
        return self._cast((<TensorBase>other)._dtype)

    def float(self):
        return self._cast(EM_F32)

    def double(self):
        return self._cast(EM_F64)

    def half(self):
        return self._cast(EM_F16)

    def bfloat16(self):
        return self._cast(EM_BF16)

    def long(self):
        return self._cast(EM_I64)

    def int(self):
        return self._cast(EM_I32)

    def short(self):
        return self._cast(EM_I16)

    def char(self):
        return self._cast(EM_I8)

    def byte(self):
        return self._cast(EM_U8)

    def bool(self):
        return self._cast(EM_BOOL)

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None, non_blocking=False):
        if isinstance(device, int) and not isinstance(device, bool):
            device = Device("cuda", device)
        return self.to("cuda" if device is None else device, non_blocking=non_blocking)

    # ---- Python values ------------------------------------------------------
    def item(self):
        if _slow:
            return redispatch("item", TensorBase.item, (self,), None)
        if numel_of(self._ndim, self._shape) != 1:
            raise RuntimeError(f"a Tensor with {numel_of(self._ndim, self._shape)} elements "
                               f"cannot be converted to Scalar")
        if self._device.kind != DEV_CPU:
            return self.to("cpu").item()
        return buf_to_scalar(_ptr(resolve_bits(self)), self._dtype)

    def tolist(self):
        if _slow:
            return redispatch("tolist", TensorBase.tolist, (self,), None)
        if self._device.kind != DEV_CPU:
            return self.to("cpu").tolist()
        self = resolve_bits(self)
        if self._ndim == 0:
            return buf_to_scalar(_ptr(self), self._dtype)
        return _tolist(self, 0, _ptr(self))

    def __len__(self):
        if self._ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    def __bool__(self):
        if numel_of(self._ndim, self._shape) != 1:
            raise RuntimeError(f"Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __complex__(self):
        return complex(self.item())

    def __index__(self):
        if self._dtype >= EM_F16 or numel_of(self._ndim, self._shape) != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __hash__(self):
        return id(self)

    # ---- interop ------------------------------------------------------------
    @property
    def __array_interface__(self):
        if _slow:
            return redispatch("__array_interface__", _array_interface, (self,), None)
        if self._device.kind != DEV_CPU:
            raise TypeError(f"can't convert {self._device} device type tensor to numpy. Use "
                            f"Tensor.cpu() to copy the tensor to host memory first.")
        _check_no_bits(self, "numpy()")
        ts = _TYPESTR[self._dtype]
        if ts is None:
            raise TypeError("Got unsupported ScalarType BFloat16")
        isz = em_itemsize[self._dtype]
        return {"shape": shape_tuple(self), "typestr": ts, "version": 3,
                "data": (<size_t>_ptr(self), False),
                "strides": tuple([self._strides[i] * isz for i in range(self._ndim)])}

    def numpy(self, *, force=False):
        """A NumPy array sharing this tensor's memory."""
        if _slow:
            return redispatch("numpy", TensorBase.numpy, (self,), {"force": force})
        if self._requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        if force:
            self = resolve_bits(self)
        import numpy
        return numpy.asarray(_NumpyView(self))

    def __array__(self, dtype=None, copy=None):
        if _slow:
            return redispatch("__array__", TensorBase.__array__, (self, dtype, copy), None)
        import numpy
        a = numpy.asarray(_NumpyView(self))
        if dtype is not None:
            a = a.astype(dtype, copy=False)
        return a.copy() if copy else a

    def __dlpack_device__(self):
        if self._device.kind == DEV_CPU:
            return (kDLCPU, 0)
        if self._device.kind == DEV_CUDA:
            return (kDLCUDA, self._device.index or 0)
        raise BufferError(f"__dlpack_device__: device {self._device} has no DLPack code")

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        if _slow:
            return redispatch("__dlpack__", TensorBase.__dlpack__, (self,), {
                "stream": stream, "max_version": max_version, "dl_device": dl_device,
                "copy": copy})
        if self._requires_grad:
            raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")
        if copy:
            return self.clone().__dlpack__(max_version=max_version)
        if self._mbits:
            raise BufferError("Can't export tensors with the "
                              f"{'conjugate' if self._mbits & MATH_CONJ else 'negative'} bit set")
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError(f"__dlpack__: can't export to device {dl_device} without a copy")
        versioned = max_version is not None and max_version[0] >= 1
        return _to_dlpack(self, versioned)

    def __reduce_ex__(self, proto):
        import numpy
        # the stored values and the lazy bits, as torch pickles them
        cdef TensorBase p = make_view(self, self._ndim, self._shape, self._strides,
                                      self._offset)
        p._mbits = 0
        arr = numpy.array(_NumpyView(p)) if self._dtype != EM_BF16 else \
            numpy.array(_NumpyView(p._cast(EM_F32)))
        if self._mbits:
            return (_rebuild_from_numpy, (arr, self._dtype, self._requires_grad, self._mbits))
        return (_rebuild_from_numpy, (arr, self._dtype, self._requires_grad))


def _array_interface(TensorBase t):
    return TensorBase.__array_interface__.__get__(t)


def _rebuild_from_numpy(arr, int dt, rg, int mbits=0):
    t = _tensor_from_data(arr, dt, None)
    (<TensorBase>t)._mbits = mbits
    if rg:
        t.requires_grad_(True)
    return t


cdef int _check_no_bits(TensorBase t, str what) except -1:
    if t._mbits & MATH_CONJ:
        raise RuntimeError(f"Can't call {what} on Tensor that has conjugate bit set. Use "
                           f"tensor.resolve_conj().{what} instead.")
    if t._mbits & MATH_NEG:
        raise RuntimeError(f"Can't call {what} on Tensor that has negative bit set. Use "
                           f"tensor.resolve_neg().{what} instead.")
    return 0


cdef object _raise_index(str op, dim, int n):
    raise IndexError(f"{op}: Dimension specified as {dim} but tensor has no dimensions")


cdef object _tolist(TensorBase t, int d, char *p):
    cdef int64_t i, n = t._shape[d], st = t._strides[d] * em_itemsize[t._dtype]
    if d == t._ndim - 1:
        return [buf_to_scalar(p + i * st, t._dtype) for i in range(n)]
    return [_tolist(t, d + 1, p + i * st) for i in range(n)]


cdef class _NumpyView:
    """Carries a tensor's __array_interface__ and keeps the tensor alive."""
    cdef public object __array_interface__
    cdef object base

    def __cinit__(self, TensorBase t not None):
        self.base = t
        self.__array_interface__ = t.__array_interface__


# ----------------------------------------------------------------------------
# creation from data and the shape factories

include "factories.pxi"


# ----------------------------------------------------------------------------
# introspection

def _cpu_info():
    """CPU features seen at run time and the kernel ISA chosen."""
    feats = [f for f in ("sse4.2", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl",
                         "avx512dq") if ember_cpu_has(f.encode())]
    isa = ember_cpu_isa()
    return {"isa": ember_isa_name(isa).decode(), "features": feats}


def set_flush_denormal(bint mode):
    """Flush denormal floats to zero on the CPU (``mode=True``), in this thread and in the
    threads ember's kernels run on; returns whether the CPU supports it (x86 with SSE3).
    Like PyTorch's, the switch is per thread: other threads keep their own."""
    return ember_set_flush_denormal(mode, _num_threads) != 0


# ----------------------------------------------------------------------------
# basic indexing (ints, slices, None, Ellipsis); advanced indexing lives in index.pyx

def _basic_getitem(TensorBase self not None, idx):
    """Views for int / slice / None / Ellipsis indices; returns None when the
    index needs advanced indexing."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    cdef int64_t ns[MAX_DIMS]
    cdef int64_t nst[MAX_DIMS]
    cdef int64_t off = self._offset, size, start, stop, step, n, k
    cdef int nd = 0, d = 0, nspec = 0, nint = 0, nnone = 0
    for it in idx:
        if isinstance(it, int) and not isinstance(it, bool):
            nspec += 1
            nint += 1
        elif isinstance(it, slice):
            nspec += 1
        elif it is None:
            nnone += 1
        elif it is not Ellipsis:
            return None
    if nspec > self._ndim:
        raise IndexError(f"too many indices for tensor of dimension {self._ndim}")
    if nnone:
        check_ndim(self._ndim - nint + nnone, "index")
    cdef bint seen_ellipsis = False
    for it in idx:
        if it is Ellipsis:
            if seen_ellipsis:
                raise IndexError("an index can only have a single ellipsis ('...')")
            seen_ellipsis = True
            for k in range(self._ndim - nspec):
                ns[nd] = self._shape[d]
                nst[nd] = self._strides[d]
                nd += 1
                d += 1
        elif it is None:
            ns[nd] = 1
            nst[nd] = 1
            nd += 1
        elif isinstance(it, slice):
            size = self._shape[d]
            step = 1 if it.step is None else it.step
            if step <= 0:
                raise ValueError("step must be greater than zero")
            start = 0 if it.start is None else it.start
            stop = size if it.stop is None else it.stop
            if start < 0:
                start = max(0, start + size)
            if stop < 0:
                stop = max(0, stop + size)
            start = min(start, size)
            stop = min(stop, size)
            n = (stop - start + step - 1) // step if stop > start else 0
            ns[nd] = n
            nst[nd] = self._strides[d] * step
            off += start * self._strides[d]
            nd += 1
            d += 1
        else:
            size = self._shape[d]
            k = it
            if k < -size or k >= size:
                raise IndexError(f"index {k} is out of bounds for dimension {d} with size {size}")
            if k < 0:
                k += size
            off += k * self._strides[d]
            d += 1
    while d < self._ndim:
        ns[nd] = self._shape[d]
        nst[nd] = self._strides[d]
        nd += 1
        d += 1
    cdef TensorBase r = make_view(self, nd, ns, nst, off)
    if em_grad_on and self._requires_grad:
        record("as_strided", (self,), r,
               (shape_tuple(self), self.stride(), self._offset, shape_tuple(r), r.stride(), off))
    return r


def _scalar_like(x):
    """True when x is a Python/NumPy number that ops accept as a scalar operand."""
    return scalar_category(x) >= 0


def _backend_kernel_names(str device_type):
    return list(_backend_kernels.get(device_type, {}))


def _make_subclass(type cls, TensorBase data not None, bint requires_grad=False):
    """An instance of ``cls`` (a Tensor subclass such as nn.Parameter) sharing
    ``data``'s storage, shape and strides, cut off from any graph."""
    if not issubclass(cls, TensorBase):
        raise TypeError(f"_make_subclass: {cls.__name__} is not a Tensor subclass")
    cdef TensorBase t = TensorBase.__new__(cls)
    cdef int i
    t._storage = data._storage
    t._offset = data._offset
    t._ndim = data._ndim
    t._dtype = data._dtype
    t._device = data._device
    t._inference = data._inference
    t._mbits = data._mbits
    for i in range(data._ndim):
        t._shape[i] = data._shape[i]
        t._strides[i] = data._strides[i]
    if requires_grad:
        t.requires_grad_(True)
    return t


def _batched_alias(type cls, TensorBase phys not None, int bdim):
    """An instance of ``cls`` aliasing ``phys`` with dimension ``bdim`` left out (vmap's
    per-sample view): metadata only, no dispatch and no autograd record, so it also works
    for a batch of size 0 where ``select`` cannot."""
    cdef TensorBase t = TensorBase.__new__(cls)
    cdef int i, k = 0
    if not 0 <= bdim < phys._ndim:
        raise IndexError(f"_batched_alias: bdim {bdim} out of range for {phys._ndim} dims")
    t._storage = phys._storage
    t._offset = phys._offset
    t._ndim = phys._ndim - 1
    t._dtype = phys._dtype
    t._device = phys._device
    t._inference = phys._inference
    t._mbits = phys._mbits
    for i in range(phys._ndim):
        if i != bdim:
            t._shape[k] = phys._shape[i]
            t._strides[k] = phys._strides[i]
            k += 1
    return t


def _fill(TensorBase t not None, value):
    """t.fill_(value) without autograd: one kernel over t's elements (views too)."""
    if isinstance(value, TensorBase):
        if (<TensorBase>value)._ndim != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor "
                               f"with {(<TensorBase>value)._ndim} dimensions.")
        value = value.item()
    elif scalar_category(value) < 0:
        raise TypeError(f"fill_(): argument 'value' must be Number, not {type(value).__name__}")
    _fill_any(t, value)
    t._storage.version += 1
    return t


# ----------------------------------------------------------------------------
# Written-to tensors: every out= and in-place path checks here, before writing,
# what torch refuses: a result whose dtype cannot be cast to the destination,
# a destination with several elements at one address (an expanded tensor:
# "last writer wins"), and a destination that partially overlaps an input (the
# kernel would read values it has already overwritten).  Full overlap (a.add_(a),
# out=input) stays allowed, as in torch, except for ops flagged OUT_NOALIAS
# (gather, cat, index_add_, ...) whose kernels read inputs out of order.
# Each check is O(ndim) on the tensors' C fields.

_SCALAR_NAMES = ("Bool", "Byte", "Char", "Short", "Int", "Long", "Half", "BFloat16", "Float",
                 "Double", "ComplexFloat", "ComplexDouble")


cdef bint castable(int src, int dst) noexcept:
    """torch's canCast: no float -> integral or bool, no non-bool -> bool."""
    return category(src) <= category(dst)


cdef int check_cast(int src, int dst, str op) except -1:
    if not castable(src, dst):
        raise RuntimeError(f"{op}: result type {_SCALAR_NAMES[src]} can't be cast to the desired "
                           f"output type {_SCALAR_NAMES[dst]}")
    return 0


cdef int check_out_dtype(int result, int dst, int policy, str op) except -1:
    if policy & OUT_EXACT:
        if result != dst:
            raise RuntimeError(f"{op}: Expected out tensor to have dtype {dtype_obj(result)}, "
                               f"but got {dtype_obj(dst)} instead")
        return 0
    return check_cast(result, dst, op)


cdef bint dense_nonoverlap(TensorBase t) noexcept nogil:
    """torch's is_non_overlapping_and_dense: some permutation of t is contiguous."""
    cdef int perm[MAX_DIMS]
    cdef int n = 0, i, j, k
    cdef int64_t expected = 1
    if is_contig(t):
        return True
    for i in range(t._ndim):      # dims of size < 2 never matter; sort the rest by stride
        if t._shape[i] == 0:
            return True
        if t._shape[i] > 1:
            j = n
            while j > 0 and t._strides[perm[j - 1]] > t._strides[i]:
                perm[j] = perm[j - 1]
                j -= 1
            perm[j] = i
            n += 1
    for j in range(n):
        k = perm[j]
        if t._strides[k] != expected:
            return False
        expected *= t._shape[k]
    return True


cdef int check_no_internal_overlap(TensorBase t, str op) except -1:
    cdef int i
    if is_contig(t):
        return 0
    for i in range(t._ndim):
        if t._strides[i] == 0 and t._shape[i] > 1:
            raise RuntimeError(f"{op}: unsupported operation: more than one element of the "
                               f"written-to tensor refers to a single memory location. Please "
                               f"clone() the tensor before performing the operation.")
    return 0


cdef int overlap_status(TensorBase a, TensorBase b) noexcept:
    """torch's get_overlap_status: OVERLAP_NO, _FULL, _PARTIAL or _TOO_HARD (not dense)."""
    cdef int64_t na, nb
    cdef char *a0
    cdef char *b0
    cdef char *a1
    cdef char *b1
    cdef int i
    if a is b:
        return OVERLAP_FULL
    if a._storage is not b._storage and (
            a._storage.data + a._storage._nbytes <= b._storage.data or
            b._storage.data + b._storage._nbytes <= a._storage.data):
        return OVERLAP_NO     # the common case: unrelated buffers
    na = numel_of(a._ndim, a._shape)
    nb = numel_of(b._ndim, b._shape)
    if na == 0 or nb == 0:
        return OVERLAP_NO
    a0 = a._storage.data + a._offset * em_itemsize[a._dtype]
    b0 = b._storage.data + b._offset * em_itemsize[b._dtype]
    a1 = a0 + na * em_itemsize[a._dtype]
    b1 = b0 + nb * em_itemsize[b._dtype]
    if not dense_nonoverlap(a) or not dense_nonoverlap(b):
        return OVERLAP_TOO_HARD
    if a0 == b0 and a1 == b1:
        if a._ndim != b._ndim or a._dtype != b._dtype:
            return OVERLAP_PARTIAL
        for i in range(a._ndim):
            if a._strides[i] != b._strides[i] and a._shape[i] > 1:
                return OVERLAP_PARTIAL
        return OVERLAP_FULL
    if a0 < b1 and b0 < a1:
        return OVERLAP_PARTIAL
    return OVERLAP_NO


cdef int _check_input_overlap(TensorBase t, object x, bint noalias, str op) except -1:
    cdef int s
    if isinstance(x, TensorBase):
        s = overlap_status(t, <TensorBase>x)
        if s == OVERLAP_PARTIAL or (noalias and s == OVERLAP_FULL):
            raise RuntimeError(f"{op}: unsupported operation: some elements of the input tensor "
                               f"and the written-to tensor refer to a single memory location. "
                               f"Please clone() the tensor before performing the operation.")
    elif isinstance(x, (tuple, list)):
        for y in x:
            _check_input_overlap(t, y, noalias, op)
    return 0


cdef int check_written(TensorBase t, object inputs, str op, bint noalias=False) except -1:
    """t is about to be written with a result computed from `inputs` (a tensor, a
    tuple/list of them, or None; other entries are ignored)."""
    check_no_internal_overlap(t, op)
    if inputs is not None:
        _check_input_overlap(t, inputs, noalias, op)
    return 0


cdef TensorBase check_out(object out, TensorBase like, int policy, object inputs, str op):
    """Validate out= for a result shaped and typed like `like` (dtype rule `policy`)."""
    if not isinstance(out, TensorBase):
        raise TypeError(f"{op}(): argument 'out' must be Tensor, not {type(out).__name__}")
    cdef TensorBase o = <TensorBase>out
    cdef int i
    if o._ndim != like._ndim or any([o._shape[i] != like._shape[i] for i in range(o._ndim)]):
        raise RuntimeError(f"{op}: out= has shape {list(shape_tuple(o))} but the result has "
                           f"shape {list(shape_tuple(like))}")
    check_out_dtype(like._dtype, o._dtype, policy, op)
    check_written(o, inputs, op, policy & OUT_NOALIAS)
    return o


cdef object write_out(object out, TensorBase r, int policy, object inputs, str op):
    """The end of an op computed into a fresh tensor r: r itself, or r written into
    out= after check_out (the version counter of out is bumped)."""
    if out is None:
        return r
    cdef TensorBase o = check_out(out, r, policy, inputs, op)
    copy_into(o, r)
    o._storage.version += 1
    return o


def _check_written(TensorBase t not None, inputs, str op, bint noalias=False):
    """Python ops' entry to the written-to check: ``t`` is about to be overwritten with
    a result computed from ``inputs`` (internal and partial overlap, as torch refuses;
    with ``noalias`` even an input that is ``t`` itself)."""
    check_written(t, inputs, op, noalias)


def _check_cast(from_, to, str op):
    """Python ops' entry to torch's canCast rule for a result written into ``to``."""
    check_cast(dtype_code(from_), dtype_code(to), op)


def _write_out(out, TensorBase r not None, inputs, str op, bint exact=False):
    """Python ops' entry to the out= exit: ``r`` itself, or ``r`` written into ``out``
    after the shape, dtype (castable, or ``exact``) and overlap checks every native op
    makes."""
    return write_out(out, r, OUT_EXACT if exact else OUT_CAST, inputs, op)
