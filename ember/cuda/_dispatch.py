"""The CUDA key of ember's dispatcher.

The core calls into this module for every tensor on a ``cuda`` device: to
allocate its storage (:func:`alloc`), copy into it (:func:`copy_into`), fill it
(:func:`fill`), move it between devices (:func:`to`), and to run an op that
re-dispatched (:func:`dispatch`).  Each op here launches the kernels of
``libember_cuda.so`` and records the same autograd node (name, inputs,
attributes) as the CPU path, so the device-agnostic formula table computes the
backward on the device too.  An op without a CUDA kernel raises a RuntimeError
naming it; nothing is computed on the host behind the caller's back (only
factories that build their values on the host, such as ``arange`` and
``tensor``, copy them over, as ``torch.tensor`` does).
"""

from __future__ import annotations

import ctypes
import inspect
from typing import Any

import ember
from ember._C import core as _core
from ember.cuda import _kernels as K

_DTYPES = {d.code: d for d in (ember.bool, ember.uint8, ember.int8, ember.int16, ember.int32,
                               ember.int64, ember.float16, ember.bfloat16, ember.float32,
                               ember.float64, ember.complex64, ember.complex128)}
_FLOATS = (ember.float16, ember.bfloat16, ember.float32, ember.float64)
_TORCH_NAMES = {ember.bool: "Bool", ember.uint8: "Byte", ember.int8: "Char", ember.int16: "Short",
                ember.int32: "Int", ember.int64: "Long", ember.float16: "Half",
                ember.bfloat16: "BFloat16", ember.float32: "Float", ember.float64: "Double",
                ember.complex64: "ComplexFloat", ember.complex128: "ComplexDouble"}
_devices: dict = {}


# ---------------------------------------------------------------------------
# storage, copies, fills, moves (called by the core)

def _device(index: int) -> Any:
    d = _devices.get(index)
    if d is None:
        d = _devices[index] = ember.device("cuda", index)
    return d


def _index_of(device: Any) -> int:
    if device.index is None:
        return K.current_device()
    n = K.device_count()
    if device.index >= n:
        raise RuntimeError(f"CUDA error: invalid device ordinal (cuda:{device.index}, "
                           f"{n} device(s) available)")
    return device.index


def alloc(nbytes: int, device: Any) -> tuple:
    """(pointer, owner, device with its index) of ``nbytes`` on a CUDA device."""
    idx = _index_of(device)
    blk = K.malloc(nbytes, idx)
    return blk.ptr, blk, _device(idx)


def _stream(t: Any) -> ctypes.c_void_p:
    return K.stream_of(t.device.index or 0)


def _ptr(t: Any) -> ctypes.c_void_p:
    return ctypes.c_void_p(t.data_ptr() or None)


def _bstrides(t: Any, shape: tuple) -> tuple:
    """t's element strides broadcast to ``shape`` (0 along broadcast dims)."""
    n, tn = len(shape), t.dim()
    st = [0] * n
    ts, tst = tuple(t.shape), t.stride()
    for i in range(tn):
        j = n - tn + i
        st[j] = 0 if ts[i] == 1 and shape[j] != 1 else tst[i]
    return tuple(st)


def _nd(shape: tuple, *ts: Any) -> Any:
    return ctypes.byref(K.make_nd(shape, *[t.stride() if t.shape == shape else
                                           _bstrides(t, shape) for t in ts]))


def _is_pinned(t: Any) -> bool:
    return isinstance(t.untyped_storage()._owner, K.PinnedBlock)


def _numel(shape: tuple) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def copy_into(dst: Any, src: Any, non_blocking: bool = False) -> None:
    """dst[...] = src (src broadcast to dst's shape, converted to dst's dtype) where
    either is on a CUDA device; no autograd."""
    shape = tuple(dst.shape)
    if _numel(shape) == 0:
        return
    lib = K.backend().lib
    if _complex_ops.needs_copy_math(dst, src):    # lazy bits, complex casts
        return _complex_ops.copy_into(dst, src, non_blocking)
    if dst.is_cuda and src.is_cuda and dst.device != src.device:
        from ember.cuda._peer import copy_across
        return copy_across(dst, src)            # device to device, never via the host
    if dst.is_cuda and src.is_cuda:
        with K.on_device(dst.device.index):
            K.check(lib.emc_copy(dst.dtype.code, _ptr(dst), src.dtype.code, _ptr(src),
                                 _nd(shape, dst, src), _stream(dst)), "copy_")
        return
    if dst.is_cuda:                             # host -> device
        if src.device.type != "cpu":
            raise RuntimeError(f"copy_: cannot copy from {src.device} to {dst.device}")
        h = src.detach()
        if h.dtype != dst.dtype:
            h = h.to(dst.dtype)
        h = h.expand(shape).contiguous() if tuple(h.shape) != shape else h.contiguous()
        d = dst if dst.is_contiguous() else ember.empty(shape, dtype=dst.dtype,
                                                        device=dst.device)
        is_async = non_blocking and _is_pinned(h)
        with K.on_device(d.device.index):
            K.memcpy(d.data_ptr(), h.data_ptr(), h.numel() * h.element_size(), K.H2D,
                     _stream(d), not is_async)
        if is_async:      # the pinned source must outlive the copy
            d.untyped_storage()._owner.keep = h
        if d is not dst:
            copy_into(dst, d)
        return
    if dst.device.type != "cpu":                # device -> host
        raise RuntimeError(f"copy_: cannot copy from {src.device} to {dst.device}")
    s = src
    if s.dtype != dst.dtype or tuple(s.shape) != shape or not s.is_contiguous():
        s = ember.empty(shape, dtype=dst.dtype, device=src.device)
        copy_into(s, src)
    h = dst if dst.is_contiguous() else ember.empty(shape, dtype=dst.dtype)
    with K.on_device(s.device.index):
        K.memcpy(h.data_ptr(), s.data_ptr(), s.numel() * s.element_size(), K.D2H, _stream(s),
                 not (non_blocking and _is_pinned(h)))
    if h is not dst:
        with ember.no_grad():
            dst.copy_(h)


def fill(dst: Any, value: bytes) -> None:
    """Fill a CUDA tensor (any strides) with one value given as its bytes."""
    shape = tuple(dst.shape)
    if _numel(shape) == 0:
        return
    buf = ctypes.create_string_buffer(value, len(value))
    with K.on_device(dst.device.index):
        K.check(K.backend().lib.emc_fill(dst.dtype.code, _ptr(dst), _nd(shape, dst), buf,
                                         _stream(dst)), "fill_")


def pinned_empty(shape: tuple, dtype: Any) -> Any:
    """An uninitialised CPU tensor in page-locked memory."""
    n = _numel(shape) * dtype.itemsize
    blk = K.PinnedBlock(n)
    st, acc = [], 1
    for s in reversed(shape):
        st.append(acc)
        acc *= max(s, 1)
    return _core._make_tensor(blk.ptr, tuple(shape), tuple(reversed(st)), dtype, "cpu", blk)


def pin_memory(t: Any) -> Any:
    """A copy of the CPU tensor ``t`` in page-locked memory."""
    K.backend()
    if t.device.type != "cpu":
        raise RuntimeError(f"cannot pin '{t.device}' memory: only CPU tensors can be pinned")
    r = pinned_empty(tuple(t.shape), t.dtype)
    with ember.no_grad():
        r.copy_(t)
    return r


def to(t: Any, dev: Any, dt: int, non_blocking: bool = False) -> Any:
    """``t.to(dev, dtype)`` where t or dev is a CUDA device (the graph records the move)."""
    dtype = _DTYPES[dt]
    shape = tuple(t.shape)
    if dev.type == "cpu":
        r = pinned_empty(shape, dtype) if non_blocking else ember.empty(shape, dtype=dtype)
    elif dev.type == "cuda":
        idx = _index_of(dev)
        if t.is_cuda and t.device.index == idx:
            return t if dt == t.dtype.code else t._cast(dt)
        r = ember.empty(shape, dtype=dtype, device=_device(idx))
    else:
        raise RuntimeError(f"to: cannot move a tensor from {t.device} to {dev}")
    copy_into(r, t, non_blocking)
    if t.requires_grad and ember.is_grad_enabled():
        _core._record_op("to_device", (t,), r, None)
    return r


# ---------------------------------------------------------------------------
# the dispatcher's entry point

_KERNELS: dict = {}
_params: dict = {}


def _param_names(fn: Any) -> list:
    names = _params.get(fn)
    if names is None:
        try:
            names = [p for p in inspect.signature(fn).parameters]
        except (TypeError, ValueError):
            names = []
        _params[fn] = names
    return names


def _tensors(args: tuple, kwargs: dict):
    for i, a in enumerate(args):
        if isinstance(a, ember.Tensor):
            yield i, a
        elif isinstance(a, (list, tuple)):
            for b in a:
                if isinstance(b, ember.Tensor):
                    yield i, b
    for k, v in kwargs.items():
        if isinstance(v, ember.Tensor):
            yield k, v


def _check_devices(name: str, fn: Any, args: tuple, kwargs: dict) -> Any:
    first = None
    for where, t in _tensors(args, kwargs):
        if first is None:
            first = t.device
        elif t.device != first:
            if isinstance(where, int):
                names = _param_names(fn)
                where = names[where] if where < len(names) else f"#{where}"
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at "
                               f"least two devices, {first} and {t.device}! (when checking "
                               f"argument for argument {where} in method {name})")
    return first


_OWN_DEVICE_CHECK: set = set()


def own_device_check(*names: str) -> None:
    """Ops that check their operands' devices themselves (indexing: index tensors on
    the CPU are moved to the device, as PyTorch allows)."""
    _OWN_DEVICE_CHECK.update(names)


def _host_indexed(name: str, args: tuple) -> None:
    """The error of a CPU tensor indexed by (or assigned) device tensors."""
    idx = args[1] if len(args) > 1 else None
    items = idx if isinstance(idx, (tuple, list)) else (idx,)
    if any(isinstance(t, ember.Tensor) and t.device.type != "cpu" for t in items):
        raise RuntimeError(f"indices should be either on cpu or on the same device as the "
                           f"indexed tensor ({args[0].device})")
    other = next(t.device for _, t in _tensors(args[2:], {}) if t.device != args[0].device)
    raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two "
                       f"devices, {args[0].device} and {other}! (when checking argument for "
                       f"argument values in method {name})")


_BITS_NATIVE: set = set()


def bits_native(*names: str) -> None:
    """Ops whose CUDA kernels read lazy conjugate / negative bits themselves: the core
    hands them their operands unresolved."""
    _BITS_NATIVE.update(names)


def handles_bits(name: str) -> bool:
    return name in _BITS_NATIVE


def apply_bits(t: Any, bits: int) -> None:
    """Conjugate (1) and / or negate (2) a CUDA tensor's stored values in place."""
    _complex_ops.apply_bits(t, bits)


def dispatch(name: str, fn: Any, args: tuple, kwargs: dict) -> Any:
    """Run op ``name`` on CUDA tensors (or a factory asked for a CUDA device)."""
    K.backend()
    if name in _OWN_DEVICE_CHECK and args and isinstance(args[0], ember.Tensor):
        dev = args[0].device
        if dev.type != "cuda":                  # a host tensor indexed by device tensors
            _host_indexed(name, args)
    else:
        dev = _check_devices(name, fn, args, kwargs)
    if dev is None or dev.type != "cuda":
        dev = ember.device(kwargs.get("device", "cuda"))
    kern = _KERNELS.get(name)
    if kern is None:
        raise no_kernel(name, dev)
    with K.on_device(_index_of(dev)):
        return kern(*args, **kwargs)


def no_kernel(name: str, dev: Any) -> RuntimeError:
    """The error of an op that has no CUDA kernel."""
    return RuntimeError(f"Could not run '{name}' with arguments from the 'CUDA' backend: "
                        f"ember has no CUDA kernel for '{name}' (tensors on {dev}); move the "
                        f"tensors to the CPU with .cpu() to run it there")


def kernel(*names: str):
    """Register a function as the CUDA kernel of ops ``names``."""
    def deco(fn):
        for n in names:
            _KERNELS[n] = fn
        return fn
    return deco


def supported_ops() -> list:
    """The names of the ops with a CUDA kernel."""
    return sorted(_KERNELS)


# ---------------------------------------------------------------------------
# shared pieces of the ops

def _lib() -> Any:
    return K.backend().lib


def _grad_on(*xs: Any) -> bool:
    if not ember.is_grad_enabled():
        return False
    return any(isinstance(x, ember.Tensor) and x.requires_grad for x in xs)


def _record(name: str, inputs: tuple, out: Any, attrs: Any = None) -> None:
    if _grad_on(*inputs):
        _core._record_op(name, inputs, out, attrs)


def _empty(shape: tuple, dtype: Any, like: Any) -> Any:
    return ember.empty(tuple(shape), dtype=dtype, device=like.device)


def _operand(v: Any, dtype: Any, like: Any) -> Any:
    """A tensor operand in ``dtype`` (scalars become 0-dim device tensors); detached."""
    if isinstance(v, ember.Tensor):
        v = v.detach()
        return v if v.dtype == dtype else v._cast(dtype.code)
    return ember.full((), v, dtype=dtype, device=like.device)


def _write_out(out: Any, r: Any, name: str) -> Any:
    if not isinstance(out, ember.Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if out.device != r.device:
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least "
                           f"two devices, {r.device} and {out.device}! (when checking argument "
                           f"for argument out in method {name})")
    if tuple(out.shape) != tuple(r.shape):
        if out.numel() != 0:
            raise RuntimeError(f"{name}: output with shape {list(out.shape)} doesn't match the "
                               f"broadcast shape {list(r.shape)}")
        out.resize_(tuple(r.shape))
    if not ember.can_cast(r.dtype, out.dtype):
        raise RuntimeError(f"result type {_TORCH_NAMES[r.dtype]} can't be cast to the desired "
                           f"output type {_TORCH_NAMES[out.dtype]}")
    if out.requires_grad and ember.is_grad_enabled():
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic "
                           f"differentiation, but one of the arguments requires grad.")
    _core._commit_inplace(out, r)
    return out


def _float_or_default(dt: Any) -> Any:
    return dt if dt.is_floating_point else ember.get_default_dtype()


def _not_implemented(name: str, dt: Any) -> RuntimeError:
    return RuntimeError(f"\"{name}_cuda\" not implemented for '{_TORCH_NAMES[dt]}'")


def _inplace(name: str, compute: Any) -> Any:
    """The in-place form of an out-of-place kernel: under autograd, self's old value
    becomes a graph node and self takes the result's (the CPU's rule)."""
    def run(self, *args, **kwargs):
        if _grad_on(self, *args):
            _core._check_inplace(self, name)
            old = self.clone() if self.requires_grad else self.detach().clone()
            r = compute(old, *args, **kwargs)
        else:
            r = compute(self, *args, **kwargs)
        if not ember.can_cast(r.dtype, self.dtype):
            raise RuntimeError(f"result type {_TORCH_NAMES[r.dtype]} can't be cast to the "
                               f"desired output type {_TORCH_NAMES[self.dtype]}")
        return _core._commit_inplace(self, r)
    return run


# ---------------------------------------------------------------------------
# elementwise

_ARITH, _FLOAT, _INT, _CMP = 0, 1, 2, 3
_BINARY = {
    "add": ("ADD", _ARITH), "sub": ("SUB", _ARITH), "mul": ("MUL", _ARITH),
    "div": ("DIV", _FLOAT), "floor_divide": ("FLOORDIV", _ARITH),
    "remainder": ("REM", _ARITH), "fmod": ("FMOD", _ARITH), "pow": ("POW", _ARITH),
    "maximum": ("MAX", _ARITH), "minimum": ("MIN", _ARITH), "fmax": ("FMAX", _FLOAT),
    "fmin": ("FMIN", _FLOAT), "atan2": ("ATAN2", _FLOAT), "hypot": ("HYPOT", _FLOAT),
    "copysign": ("COPYSIGN", _FLOAT), "xlogy": ("XLOGY", _FLOAT),
    "logaddexp": ("LOGADDEXP", _FLOAT), "bitwise_and": ("BAND", _INT),
    "bitwise_or": ("BOR", _INT), "bitwise_xor": ("BXOR", _INT),
    "bitwise_left_shift": ("LSHIFT", _INT), "bitwise_right_shift": ("RSHIFT", _INT),
    "relu_backward": ("RELU_BW", _FLOAT), "sigmoid_backward": ("SIGMOID_BW", _FLOAT),
    "tanh_backward": ("TANH_BW", _FLOAT), "silu_backward": ("SILU_BW", _FLOAT),
}
_COMPARE = {"eq": "EQ", "ne": "NE", "lt": "LT", "le": "LE", "gt": "GT", "ge": "GE",
            "logical_and": "LAND", "logical_or": "LOR", "logical_xor": "LXOR"}


def _binary(name: str, a: Any, b: Any, out: Any = None, alpha: float | None = None) -> Any:
    cmp = name in _COMPARE
    code, kind = (_COMPARE[name], _CMP) if cmp else _BINARY[name]
    if _complex_ops.is_complex_binary(a, b):
        return _complex_ops.binary(name, a, b, out, alpha)
    like = a if isinstance(a, ember.Tensor) else b
    rd = ember.result_type(a, b)
    if kind == _FLOAT:
        rd = _float_or_default(rd)
    elif kind == _INT and rd.is_floating_point:
        raise _not_implemented(name, rd)
    if name == "sub" and rd == ember.bool:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    x, y = _operand(a, rd, like), _operand(b, rd, like)
    shape = ember.broadcast_shapes(tuple(x.shape), tuple(y.shape))
    r = _empty(shape, ember.bool if cmp else rd, like)
    if r.numel():
        lib = _lib()
        if cmp:
            rc = lib.emc_ew_compare(K.EW_CMP[code], rd.code, _ptr(r), _ptr(x), _ptr(y),
                                    _nd(shape, r, x, y), _stream(r))
        else:
            aux = None
            if alpha is not None:
                code = "ADDA"
                aux = (ctypes.c_double * 1)(alpha)
            rc = lib.emc_ew_binary(K.EW_BIN[code], rd.code, _ptr(r), _ptr(x), _ptr(y),
                                   _nd(shape, r, x, y), aux, _stream(r))
        if rc == 10001:
            raise _not_implemented(name, rd)
        K.check(rc, name)
    if out is not None:
        return _write_out(out, r, name)
    if kind not in (_CMP, _INT):
        _record(name, (a, b), r)
    return r


def _make_binary(name: str) -> None:
    def op(input, other, *, out=None):
        return _binary(name, input, other, out)

    _KERNELS[name] = op
    _KERNELS[name + "_"] = _inplace(name + "_", lambda s, o: _binary(name, s, o))


for _n in list(_BINARY) + list(_COMPARE):
    _make_binary(_n)


@kernel("gelu_backward")
def _gelu_backward(grad, input, approximate="none"):
    code = "GELU_TANH_BW" if approximate == "tanh" else "GELU_BW"
    rd = _float_or_default(ember.result_type(grad, input))
    g, x = _operand(grad, rd, input), _operand(input, rd, input)
    shape = ember.broadcast_shapes(tuple(g.shape), tuple(x.shape))
    r = _empty(shape, rd, input)
    if r.numel():
        K.check(_lib().emc_ew_binary(K.EW_BIN[code], rd.code, _ptr(r), _ptr(g), _ptr(x),
                                     _nd(shape, r, g, x), None, _stream(r)), "gelu_backward")
    _record("gelu_backward", (grad, input), r, (approximate,))
    return r


_UNARY = {
    "neg": ("NEG", _ARITH), "abs": ("ABS", _ARITH), "sign": ("SIGN", _ARITH),
    "sgn": ("SIGN", _ARITH), "exp": ("EXP", _FLOAT), "exp2": ("EXP2", _FLOAT),
    "expm1": ("EXPM1", _FLOAT), "log": ("LOG", _FLOAT), "log2": ("LOG2", _FLOAT),
    "log10": ("LOG10", _FLOAT), "log1p": ("LOG1P", _FLOAT), "sqrt": ("SQRT", _FLOAT),
    "rsqrt": ("RSQRT", _FLOAT), "sin": ("SIN", _FLOAT), "cos": ("COS", _FLOAT),
    "tan": ("TAN", _FLOAT), "asin": ("ASIN", _FLOAT), "acos": ("ACOS", _FLOAT),
    "atan": ("ATAN", _FLOAT), "sinh": ("SINH", _FLOAT), "cosh": ("COSH", _FLOAT),
    "tanh": ("TANH", _FLOAT), "asinh": ("ASINH", _FLOAT), "acosh": ("ACOSH", _FLOAT),
    "atanh": ("ATANH", _FLOAT), "sigmoid": ("SIGMOID", _FLOAT), "relu": ("RELU", _ARITH),
    "silu": ("SILU", _FLOAT), "mish": ("MISH", _FLOAT), "erf": ("ERF", _FLOAT),
    "erfc": ("ERFC", _FLOAT), "frac": ("FRAC", _FLOAT), "reciprocal": ("RECIP", _FLOAT),
    "square": ("SQUARE", _ARITH), "lgamma": ("LGAMMA", _FLOAT),
    "hardsigmoid": ("HARDSIGMOID", _FLOAT), "hardswish": ("HARDSWISH", _FLOAT),
    "logsigmoid": ("LOGSIGMOID", _FLOAT),
    "floor": ("FLOOR", _ARITH), "ceil": ("CEIL", _ARITH), "round": ("ROUND", _ARITH),
    "trunc": ("TRUNC", _ARITH), "bitwise_not": ("BNOT", _ARITH),
}
_PRED = {"isnan": "ISNAN", "isinf": "ISINF", "isfinite": "ISFINITE",
         "logical_not": "LNOT", "signbit": "SIGNBIT"}


_NO_PARAMS = (ctypes.c_double * 3)()     # read-only: the kernels take const double *


def _unary(name: str, code: str, kind: int, x: Any, out: Any = None, params: tuple = (),
           attrs: Any = None) -> Any:
    pred = name in _PRED
    if not isinstance(x, ember.Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")
    if x.dtype in (ember.complex64, ember.complex128):
        return _complex_ops.unary(name, code, x, out)
    rd = _float_or_default(x.dtype) if kind == _FLOAT else x.dtype
    if name == "neg" and rd == ember.bool:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If "
                           "you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")
    xx = _operand(x, rd, x)
    shape = tuple(x.shape)
    r = _empty(shape, ember.bool if pred else rd, x)
    if r.numel():
        lib = _lib()
        if pred:
            rc = lib.emc_ew_predicate(K.EW_PRED[code], rd.code, _ptr(r), _ptr(xx),
                                      _nd(shape, r, xx), _stream(r))
        else:
            aux = (ctypes.c_double * 3)(*(tuple(params) + (0.0, 0.0, 0.0))[:3]) if params \
                else _NO_PARAMS
            rc = lib.emc_ew_unary(K.EW_UN[code], rd.code, _ptr(r), _ptr(xx), _nd(shape, r, xx),
                                  aux, _stream(r))
        if rc == 10001:
            raise _not_implemented(name, rd)
        K.check(rc, name)
    if out is not None:
        return _write_out(out, r, name)
    if not pred:
        _record(name, (x,), r, attrs)
    return r


def _make_unary(name: str, code: str, kind: int) -> None:
    def op(input, *, out=None, decimals=0):
        if decimals:
            raise RuntimeError(f"{name}: decimals= has no CUDA kernel")
        return _unary(name, code, kind, input, out)

    _KERNELS[name] = op
    _KERNELS[name + "_"] = _inplace(name + "_", lambda s: _unary(name, code, kind, s))


for _n, (_c, _k) in _UNARY.items():
    _make_unary(_n, _c, _k)
for _n, _c in _PRED.items():
    _KERNELS[_n] = (lambda n, c: lambda input, *, out=None: _unary(n, c, _ARITH, input, out))(
        _n, _c)
_KERNELS["logical_not_"] = _inplace("logical_not_", lambda s: _unary("logical_not", "LNOT",
                                                                     _ARITH, s))


@kernel("gelu")
def _gelu(input, approximate="none", *, out=None):
    code = "GELU_TANH" if approximate == "tanh" else "GELU"
    return _unary("gelu", code, _FLOAT, input, out, attrs=(approximate,))


@kernel("leaky_relu")
def _leaky_relu(input, negative_slope=0.01, inplace=False):
    f = (lambda s: _unary("leaky_relu", "LEAKY_RELU", _FLOAT, s, None, (negative_slope,),
                          (negative_slope,)))
    return _inplace("leaky_relu_", f)(input) if inplace else f(input)


@kernel("elu")
def _elu(input, alpha=1.0, scale=1.0, input_scale=1.0):
    prm = (float(alpha), float(scale), float(input_scale))
    return _unary("elu", "ELU", _FLOAT, input, None, prm, prm)


@kernel("softplus")
def _softplus(input, beta=1.0, threshold=20.0):
    return _unary("softplus", "SOFTPLUS", _FLOAT, input, None, (beta, threshold),
                  (beta, threshold))


@kernel("clamp", "clip")
def _clamp(input, min=None, max=None, *, out=None):
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    with ember.no_grad():
        r = input.detach()
        if min is not None:
            r = _binary("maximum", r, min)
        if max is not None:
            r = _binary("minimum", r, max)
    if out is not None:
        return _write_out(out, r, "clamp")
    if not isinstance(min, ember.Tensor) and not isinstance(max, ember.Tensor):
        _record("clamp", (input,), r, (min, max))
    elif _grad_on(input, min, max):
        raise RuntimeError("clamp: tensor bounds on CUDA tensors have no derivative in ember")
    return r


_KERNELS["clamp_"] = _inplace("clamp_", _clamp)
_KERNELS["clip_"] = _KERNELS["clamp_"]


@kernel("where")
def _where(condition, input, other, *, out=None):
    like = condition
    rd = ember.result_type(input, other)
    c = condition
    if c.dtype != ember.bool:
        if c.dtype != ember.uint8:
            raise RuntimeError(f"where expected condition to be a boolean tensor, but got a "
                               f"tensor with dtype {_TORCH_NAMES[c.dtype]}")
        c = c._cast(ember.bool.code)
    x, y = _operand(input, rd, like), _operand(other, rd, like)
    shape = ember.broadcast_shapes(tuple(c.shape), tuple(x.shape), tuple(y.shape))
    r = _empty(shape, rd, like)
    if r.numel():
        K.check(_lib().emc_ew_where(rd.code, _ptr(r), _ptr(c), _ptr(x), _ptr(y),
                                    _nd(shape, r, c, x, y), _stream(r)), "where")
    if out is not None:
        return _write_out(out, r, "where")
    _record("where", (input, other), r, (c,))
    return r


def _masked_fill(input, mask, value):
    if isinstance(value, ember.Tensor):
        if value.dim() != 0:
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but "
                               f"got tensor with {value.dim()} dimension(s).")
        if value.device != input.device:
            value = value.item()
    if mask.dtype != ember.bool:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{_TORCH_NAMES[mask.dtype]}")
    with ember.no_grad():
        r = _where(mask, _operand(value, input.dtype, input), input)
    if tuple(r.shape) != tuple(input.shape):
        raise RuntimeError(f"masked_fill: the mask of shape {list(mask.shape)} does not "
                           f"broadcast to the input's shape {list(input.shape)}")
    _record("masked_fill", (input, mask, value), r, None)
    return r


_KERNELS["masked_fill"] = _masked_fill
_KERNELS["masked_fill_"] = _inplace("masked_fill_", _masked_fill)


@kernel("lerp")
def _lerp(input, end, weight, *, out=None):
    rd = ember.result_type(input, end)
    if not rd.is_floating_point:
        raise _not_implemented("lerp", rd)
    with ember.no_grad():
        d = _binary("sub", _operand(end, rd, input), _operand(input, rd, input))
        if isinstance(weight, ember.Tensor):
            r = _binary("add", input, _binary("mul", weight, d))
        else:
            r = _binary("add", _operand(input, rd, input), d, alpha=float(weight))
    if out is not None:
        return _write_out(out, r, "lerp")
    _record("lerp", (input, end, weight), r, None)
    return r


_KERNELS["lerp_"] = _inplace("lerp_", _lerp)


@kernel("clone")
def _clone(input, *, memory_format=None):
    r = _empty(tuple(input.shape), input.dtype, input)
    copy_into(r, input)
    _record("clone", (input,), r, None)
    return r


# the other kernel modules register themselves
from ember.cuda import (  # noqa: E402,F401
    _blas_ops,
    _cnn_ops,
    _complex_ops,
    _device_ops,
    _index_ops,
    _nn_ops,
    _scan_ops,
)

_complex_ops.install()      # wraps registered kernels: after every module above
