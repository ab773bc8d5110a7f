"""``autocast`` and the functions that read and set the autocast state."""
from __future__ import annotations

import functools
import warnings
import weakref
from typing import Any, Callable

import ember
from ember import _autocast as _ac
from ember._C import core
from ember.library import DispatchMode

__all__ = ["autocast", "is_autocast_available", "is_autocast_enabled", "set_autocast_enabled",
           "get_autocast_dtype", "set_autocast_dtype", "is_autocast_cache_enabled",
           "set_autocast_cache_enabled", "clear_autocast_cache"]


def _cast_one(t, dtype):
    if t.dtype is dtype or t.dtype == dtype:
        return t
    if _ac._cache_enabled[0] and t.requires_grad and t.is_leaf:
        e = _ac._cache.get(id(t))
        if e is not None and e[0]() is t and e[1] == t._version and e[2].dtype == dtype:
            return e[2]
        r = t.to(dtype)
        key = id(t)
        ref = weakref.ref(t, lambda _r, k=key: _ac._cache.pop(k, None))
        _ac._cache[key] = (ref, t._version, r)
        return r
    return t.to(dtype)


def _eligible(a, device_type):
    return isinstance(a, core.TensorBase) and a.is_floating_point() and \
        str(a.dtype) != "ember.float64" and a.device.type == device_type


def _device_type(args, kwargs):
    """The device type of an op's first tensor argument (None for none)."""
    for a in list(args) + list(kwargs.values()):
        for x in (a if isinstance(a, (list, tuple)) else (a,)):
            if isinstance(x, core.TensorBase):
                return x.device.type
    return None


def _cast_args(args, kwargs, dtype, device_type="cpu"):
    def cast(a):
        if isinstance(a, core.TensorBase):
            return _cast_one(a, dtype) if _eligible(a, device_type) else a
        if isinstance(a, (list, tuple)) and a and any(isinstance(x, core.TensorBase)
                                                      for x in a):
            return type(a)(cast(x) for x in a)
        return a
    return tuple(cast(a) for a in args), {k: cast(v) for k, v in kwargs.items()}


def _widest(args, kwargs):
    dt = None
    for a in list(args) + list(kwargs.values()):
        for x in (a if isinstance(a, (list, tuple)) else (a,)):
            if isinstance(x, core.TensorBase) and x.is_floating_point():
                dt = x.dtype if dt is None else ember.promote_types(dt, x.dtype)
    return dt


class AutocastMode(DispatchMode):
    """Casts the inputs of ops on ``device_type``'s autocast lists while autocast is
    enabled for that device type (ops on other devices pass through)."""

    def __init__(self, device_type: str = "cpu") -> None:
        self.device_type = device_type

    def __ember_dispatch__(self, name, func, args, kwargs):
        dev = self.device_type
        st = _ac._state[dev]
        if st[0] and _device_type(args, kwargs) == dev:
            lower, fp32, promote = _ac.LISTS[dev]
            if name in lower:
                args, kwargs = _cast_args(args, kwargs, getattr(ember, st[1]), dev)
            elif name in fp32:
                if not (name in _ac.CUDA_FP32_OPT_DTYPE and kwargs.get("dtype") is not None):
                    args, kwargs = _cast_args(args, kwargs, ember.float32, dev)
            elif name in promote:
                dt = _widest(args, kwargs)
                if dt is not None:
                    args, kwargs = _cast_args(args, kwargs, dt, dev)
            elif dev == "cuda" and name in _ac.CUDA_BANNED:
                raise RuntimeError(
                    f"torch.nn.functional.{name} and torch.nn.BCELoss are unsafe to autocast."
                    f"\nMany models use a sigmoid layer right before the binary cross entropy "
                    f"layer.\nIn this case, combine the two layers using "
                    f"torch.nn.functional.binary_cross_entropy_with_logits\nor "
                    f"torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and "
                    f"BCEWithLogits are\nsafe to autocast.")
        return func(*args, **kwargs)


# the modes installed by set_autocast_enabled(device_type, True) outside any context
# manager, per device type
_global_mode: dict = {}


def _cuda_usable() -> bool:
    """Whether CUDA kernels can run (the library and a device, or a stand-in for them)."""
    from ember.cuda import _kernels
    try:
        _kernels.backend()
    except RuntimeError:
        return False
    return True


def _check_device(device_type):
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if device_type not in _ac._state:
        raise RuntimeError(f"User specified an unsupported autocast device_type "
                           f"'{device_type}'")
    return device_type


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast supports ``device_type`` (``"cpu"`` and ``"cuda"``)."""
    return device_type in _ac._state


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether autocast is enabled for ``device_type`` (``"cuda"`` when omitted)."""
    return _ac._state[_check_device("cuda" if device_type is None else device_type)][0]


def set_autocast_enabled(*args: Any) -> None:
    """``set_autocast_enabled(device_type, enabled)`` (or ``(enabled)`` for CUDA): turn
    autocast on or off for ``device_type`` outside a context manager."""
    if len(args) == 1:
        device_type, enabled = "cuda", args[0]
    elif len(args) == 2:
        device_type, enabled = args
    else:
        raise TypeError(f"set_autocast_enabled() takes 1 or 2 arguments ({len(args)} given)")
    _ac._state[_check_device(device_type)][0] = bool(enabled)
    _ac._sync()
    if enabled and device_type not in _global_mode:
        _global_mode[device_type] = AutocastMode(device_type)
        core._push_mode(_global_mode[device_type])
    elif not enabled and device_type in _global_mode:
        _uninstall_global(device_type)


def _uninstall_global(device_type):
    # a mode can only come off the top of the stack; one left below others passes ops
    # through while autocast is off
    mode = _global_mode.pop(device_type)
    popped = []
    while core._mode_active():
        m = core._pop_mode()
        if m is mode:
            break
        popped.append(m)
    for m in reversed(popped):
        core._push_mode(m)


def get_autocast_dtype(device_type: str) -> ember.dtype:
    """The lower-precision dtype autocast uses on ``device_type``."""
    return getattr(ember, _ac._state[_check_device(device_type)][1])


def set_autocast_dtype(device_type: str, dtype: ember.dtype) -> None:
    """Set the lower-precision dtype autocast uses on ``device_type``."""
    _ac._state[_check_device(device_type)][1] = str(dtype).split(".")[-1]


def is_autocast_cache_enabled() -> bool:
    """Whether casts of parameters are cached inside autocast regions."""
    return _ac._cache_enabled[0]


def set_autocast_cache_enabled(enabled: bool) -> None:
    _ac._cache_enabled[0] = bool(enabled)


def clear_autocast_cache() -> None:
    """Drop the cached casts of parameters."""
    _ac.clear_cache()


def autocast_increment_nesting() -> int:
    """Enter one more autocast region; returns the new depth (``autocast`` does this)."""
    _ac._nesting[0] += 1
    return _ac._nesting[0]


def autocast_decrement_nesting() -> int:
    """Leave one autocast region; returns the new depth. The cached casts are for the
    caller to drop (``clear_autocast_cache``) when it reaches 0, as ``autocast`` does."""
    _ac._nesting[0] -= 1
    return _ac._nesting[0]


def _deprecated(name: str, device: str, kind: str):
    """torch's per-device forms of the autocast state functions (deprecated there in
    favour of the ones that take ``device_type``)."""
    if kind == "get":
        def fn():
            return get_autocast_dtype(device)
        call, new = "()", f"get_autocast_dtype('{device}')"
    elif kind == "is":
        def fn():
            return is_autocast_enabled(device)
        call, new = "()", f"is_autocast_enabled('{device}')"
    elif kind == "set_enabled":
        def fn(enabled):
            set_autocast_enabled(device, enabled)
        call, new = "(enabled)", f"set_autocast_enabled('{device}', enabled)"
    else:
        def fn(dtype):
            set_autocast_dtype(device, dtype)
        call, new = "(dtype)", f"set_autocast_dtype('{device}', dtype)"
    message = f"ember.{name}{call} is deprecated. Please use ember.{new} instead."

    def wrapper(*args):
        warnings.warn(message, DeprecationWarning, stacklevel=2)
        return fn(*args)

    wrapper.__name__ = wrapper.__qualname__ = name
    wrapper.__doc__ = f"``ember.{new}`` (deprecated spelling)."
    return wrapper


get_autocast_cpu_dtype = _deprecated("get_autocast_cpu_dtype", "cpu", "get")
get_autocast_gpu_dtype = _deprecated("get_autocast_gpu_dtype", "cuda", "get")
is_autocast_cpu_enabled = _deprecated("is_autocast_cpu_enabled", "cpu", "is")
set_autocast_cpu_enabled = _deprecated("set_autocast_cpu_enabled", "cpu", "set_enabled")
set_autocast_cpu_dtype = _deprecated("set_autocast_cpu_dtype", "cpu", "set_dtype")
set_autocast_gpu_dtype = _deprecated("set_autocast_gpu_dtype", "cuda", "set_dtype")


class autocast:
    """Run the ops of a region in mixed precision (PyTorch's ``torch.autocast``).

    Parameters
    ----------
    device_type : str
        ``"cpu"`` or ``"cuda"`` (disabled with a warning when CUDA is not available).
    dtype : ember.dtype, optional
        The lower-precision dtype: ``bfloat16`` (the CPU default) or ``float16`` (the
        CUDA default).
    enabled : bool
        ``False`` turns autocast off inside the region (also inside an enclosing one).
    cache_enabled : bool, optional
        Cache the casts of leaf tensors that require grad (parameters) in the region.

    Ops on torch's lower-precision list (matmul, linear, conv, bmm, addmm...) run in
    ``dtype``; ops on the float32 list (losses, ``prod``, ``cdist``, linear algebra on
    the CPU; also softmax, layer_norm, sums and the transcendental pointwise ops on CUDA)
    run in float32; ``cat``/``stack``/``index_copy`` run in the widest input dtype. The
    lists of the device type of an op's tensors apply. Also usable as a decorator.
    """

    def __init__(self, device_type: str, dtype: ember.dtype | None = None,
                 enabled: bool = True, cache_enabled: bool | None = None):
        _check_device(device_type)
        self.device = device_type
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self._enabled = bool(enabled)
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None \
            else bool(cache_enabled)
        if device_type == "cuda" and self._enabled and not _cuda_usable():
            warnings.warn("User provided device_type of 'cuda', but CUDA is not available. "
                          "Disabling", UserWarning, stacklevel=2)
            self._enabled = False
        name = str(self.fast_dtype).split(".")[-1]
        if self._enabled and name not in _ac._SUPPORTED[device_type]:
            supported = ", ".join(f"ember.{d}" for d in _ac._SUPPORTED[device_type])
            warnings.warn(f"In {device_type.upper()} autocast, but the target dtype is not "
                          f"supported. Disabling autocast.\n{device_type.upper()} Autocast "
                          f"only supports dtype of {supported} currently.", UserWarning,
                          stacklevel=2)
            self._enabled = False
        self._mode = None
        self._prev = None

    def __enter__(self):
        st = _ac._state[self.device]
        self._prev = (st[0], st[1], _ac._cache_enabled[0])
        st[0] = self._enabled
        st[1] = str(self.fast_dtype).split(".")[-1]
        _ac._cache_enabled[0] = self._cache_enabled
        _ac._sync()
        _ac._nesting[0] += 1
        if self._enabled:
            self._mode = AutocastMode(self.device)
            core._push_mode(self._mode)
        return self

    def __exit__(self, *exc):
        if self._mode is not None:
            core._pop_mode()
            self._mode = None
        _ac._nesting[0] -= 1
        if _ac._nesting[0] == 0:
            _ac.clear_cache()
        st = _ac._state[self.device]
        st[0], st[1], _ac._cache_enabled[0] = self._prev
        _ac._sync()
        return False

    def __call__(self, func: Callable) -> Callable:
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with autocast(self.device, self.fast_dtype, self._enabled, self._cache_enabled):
                return func(*args, **kwargs)
        return wrapper
