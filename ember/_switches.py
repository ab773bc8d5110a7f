"""ember's global switches, in one place, each setter with its getter.

=================================  ===========================================
setter                             getter
=================================  ===========================================
``set_default_dtype``              ``get_default_dtype``
``set_default_device``             ``get_default_device`` (``with ember.device``)
``use_deterministic_algorithms``   ``are_deterministic_algorithms_enabled``,
                                   ``is_deterministic_algorithms_warn_only_enabled``
``set_deterministic_debug_mode``   ``get_deterministic_debug_mode``
``set_float32_matmul_precision``   ``get_float32_matmul_precision``
``set_warn_always``                ``is_warn_always_enabled``
``set_num_interop_threads``        ``get_num_interop_threads``
=================================  ===========================================

:func:`current_defaults` returns a read-only snapshot of all of them (for
logging and tests).  The default dtype and device live in the native core
(factory functions read them from C); this module validates and delegates.
Grad mode is owned by the core and ``ember.autograd``; the snapshot reports it.

Determinism is declared by the kernels, not discovered at run time: each op
lists the devices on which its implementation is deterministic, in one
registry (the core's ``_op_info`` plus :func:`declare_op`), so
:func:`is_deterministic` answers before anything runs, and
:func:`_alert_not_deterministic` raises or warns according to the mode.
"""

from __future__ import annotations

from ember._dll import _record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterable

__all__ = [
    "set_default_dtype",
    "get_default_dtype",
    "set_default_device",
    "get_default_device",
    "current_defaults",
    "Defaults",
    "use_deterministic_algorithms",
    "are_deterministic_algorithms_enabled",
    "is_deterministic_algorithms_warn_only_enabled",
    "set_deterministic_debug_mode",
    "get_deterministic_debug_mode",
    "is_deterministic",
    "declare_op",
    "set_float32_matmul_precision",
    "get_float32_matmul_precision",
    "set_warn_always",
    "is_warn_always_enabled",
    "set_num_interop_threads",
    "get_num_interop_threads",
    "typename",
    "is_tensor",
    "is_storage",
    "is_floating_point",
    "numel",
]


def _core():
    from ember._C import core

    return core


# ---------------------------------------------------------------------------
# Default dtype
# ---------------------------------------------------------------------------


def set_default_dtype(d: Any) -> None:
    """Set the dtype of floating-point tensors created without an explicit dtype.

    Parameters
    ----------
    d : ember.dtype
        ``ember.float32`` (the initial default) or ``ember.float64``.

    Raises
    ------
    TypeError
        For any other dtype, or for something that is not a dtype.

    Notes
    -----
    Python floats, ``ember.tensor([1.5])`` and floating factories
    (``zeros``, ``rand``, ...) follow it; a complex default is not supported.
    """
    core = _core()
    if not isinstance(d, core.DType):
        raise TypeError(
            f"set_default_dtype(): expected an ember.dtype (ember.float32 or ember.float64), "
            f"got {type(d).__name__}")
    if d not in (core.float32, core.float64):
        raise TypeError(
            f"set_default_dtype(): only ember.float32 and ember.float64 are supported as the "
            f"default dtype, got {d}")
    core._set_default_dtype(d)


def get_default_dtype() -> Any:
    """The current default floating-point dtype (``ember.float32`` initially)."""
    return _core()._get_default_dtype()


# ---------------------------------------------------------------------------
# Default device and the ``with ember.device(...)`` scope
# ---------------------------------------------------------------------------

def set_default_device(device: Any) -> None:
    """Set the device on which factory functions allocate when given no ``device``.

    Parameters
    ----------
    device : ember.device, str or None
        ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ...; ``None`` restores the CPU.

    Notes
    -----
    It does not move existing tensors, nor affect functions that wrap
    existing memory (``from_numpy``).  For a temporary change use
    ``with ember.device("..."):``, which restores the previous default when
    the block exits.  The state lives in the native core, which factory
    functions read without calling back into Python.
    """
    core = _core()
    if device is not None and not isinstance(device, (str, int, core.Device)):
        raise TypeError(f"set_default_device(): expected a device, a str or None, got "
                        f"{type(device).__name__}")
    core._set_default_device(device)


def get_default_device() -> Any:
    """The device factory functions use now (inside ``with ember.device(...)`` that one),
    ``device(type='cpu')`` unless changed."""
    return _core()._get_default_device()


# ---------------------------------------------------------------------------
# Determinism
# ---------------------------------------------------------------------------

_deterministic = False
_warn_only = False
_DEBUG_MODES = ("default", "warn", "error")



def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Make ops use deterministic implementations, or fail (warn) where none exists.

    Parameters
    ----------
    mode : bool
        ``True`` to require determinism.
    warn_only : bool, optional
        With ``mode=True``, an op with no deterministic implementation warns
        instead of raising ``RuntimeError``.

    See Also
    --------
    is_deterministic : ask, per op and device, before running anything.
    """
    global _deterministic, _warn_only
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms(): mode must be a bool, got "
                        f"{type(mode).__name__}")
    if not isinstance(warn_only, bool):
        raise TypeError(f"use_deterministic_algorithms(): warn_only must be a bool, got "
                        f"{type(warn_only).__name__}")
    _deterministic = mode
    _warn_only = warn_only


def are_deterministic_algorithms_enabled() -> bool:
    """Whether :func:`use_deterministic_algorithms` is on."""
    return _deterministic


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """Whether determinism is on in warn-only mode."""
    return _warn_only


def set_deterministic_debug_mode(debug_mode: str | int) -> None:
    """Set determinism by level: ``"default"``/0 off, ``"warn"``/1, ``"error"``/2.

    Raises
    ------
    RuntimeError
        For an unknown string or int level (as PyTorch).
    TypeError
        When ``debug_mode`` is neither a str nor an int.
    """
    if isinstance(debug_mode, bool) or not isinstance(debug_mode, (str, int)):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(
                "invalid value of debug_mode, expected one of `default`, `warn`, `error`, "
                f"but got {debug_mode}")
        debug_mode = _DEBUG_MODES.index(debug_mode)
    if debug_mode == 0:
        use_deterministic_algorithms(False)
    elif debug_mode == 1:
        use_deterministic_algorithms(True, warn_only=True)
    elif debug_mode == 2:
        use_deterministic_algorithms(True)
    else:
        raise RuntimeError(
            f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")


def get_deterministic_debug_mode() -> int:
    """The determinism level: 0 (off), 1 (warn) or 2 (error)."""
    if not _deterministic:
        return 0
    return 1 if _warn_only else 2


def declare_op(name: str, deterministic_on: Iterable[str] = ("cpu",)) -> None:
    """Declare the devices on which op ``name`` has a deterministic implementation.

    The one registry is the core's ``ember._C.core._op_info`` (native kernels
    declare there directly); kernels written in Python (plugins, ``nn``
    helpers) declare through this function.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"declare_op(): name must be a non-empty str, got {name!r}")
    if isinstance(deterministic_on, str):
        deterministic_on = (deterministic_on,)
    _core()._declare_op(name, tuple(deterministic_on))


def _core_op_info() -> dict:
    info = getattr(_core(), "_op_info", None)
    return info if isinstance(info, dict) else {}


def _deterministic_devices(name: str) -> frozenset | None:
    info = _core_op_info().get(name)
    if info is None:
        return None
    det = info.get("deterministic", True) if isinstance(info, dict) else info
    if isinstance(det, bool):
        return frozenset(("cpu", "cuda")) if det else frozenset()
    if isinstance(det, dict):
        return frozenset(dev for dev, ok in det.items() if ok)
    return frozenset((det,)) if isinstance(det, str) else frozenset(det)


def _known_ops() -> list[str]:
    return sorted(_core_op_info())


def is_deterministic(op_name: str, device: Any = "cpu") -> bool:
    """Whether op ``op_name`` runs deterministically on ``device``.

    Read from the registry the kernels declare, so it can be asked before
    training starts rather than learnt from a failure.

    Parameters
    ----------
    op_name : str
        An op name such as ``"index_add"`` or ``"matmul"``.
    device : str or ember.device
        ``"cpu"``, ``"cuda"``, ``"cuda:0"``, ...

    Raises
    ------
    ValueError
        When no kernel declared ``op_name`` (the message suggests close names).
    """
    dev = device if isinstance(device, str) else getattr(device, "type", str(device))
    dev = dev.split(":", 1)[0]
    devices = _deterministic_devices(op_name)
    if devices is None:
        import difflib

        close = difflib.get_close_matches(op_name, _known_ops(), n=3)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise ValueError(f"is_deterministic(): no kernel declared op {op_name!r} (kernels "
                         f"declare with ember._C.core._declare_op / declare_op){hint}")
    return dev in devices


def _alert_not_deterministic(op_name: str) -> None:
    """Called by an op about to run a non-deterministic implementation.

    Raises ``RuntimeError`` when determinism is required, warns in warn-only
    mode, does nothing otherwise.
    """
    if not _deterministic:
        return
    msg = (f"{op_name} does not have a deterministic implementation, but you set "
           f"'ember.use_deterministic_algorithms(True)'. You can turn off determinism just "
           f"for this operation, or you can use the 'warn_only=True' option, if that's "
           f"acceptable for your application. Check up front with "
           f"ember.is_deterministic({op_name!r}, device).")
    if _warn_only:
        import warnings

        warnings.warn(msg, UserWarning, stacklevel=3)
    else:
        raise RuntimeError(msg)


def _check_deterministic(op_name: str, device: str = "cpu") -> None:
    """Alert (per the mode) if ``op_name`` is declared non-deterministic on ``device``."""
    if _deterministic:
        devices = _deterministic_devices(op_name)
        if devices is not None and device not in devices:
            _alert_not_deterministic(op_name)


# ---------------------------------------------------------------------------
# float32 matmul precision
# ---------------------------------------------------------------------------

_MATMUL_PRECISIONS = ("highest", "high", "medium")
_matmul_precision = "highest"


def set_float32_matmul_precision(precision: str) -> None:
    """Set the internal precision of float32 matrix multiplications.

    Parameters
    ----------
    precision : {"highest", "high", "medium"}
        ``"highest"`` (default) computes in full float32; ``"high"`` and
        ``"medium"`` allow faster reduced-precision paths (TF32 / bfloat16)
        where a kernel has one.

    Notes
    -----
    As in PyTorch, an unknown value is not an error: it warns (listing the
    valid values) and leaves the setting unchanged.
    """
    global _matmul_precision
    if precision not in _MATMUL_PRECISIONS:
        import warnings

        warnings.warn(
            f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
            f"set_float32_matmul_precision call has no effect.", UserWarning, stacklevel=2)
        return
    _matmul_precision = precision


def get_float32_matmul_precision() -> str:
    """The float32 matmul precision: ``"highest"``, ``"high"`` or ``"medium"``."""
    return _matmul_precision


# ---------------------------------------------------------------------------
# warn-always
# ---------------------------------------------------------------------------

_warn_always = False
_warned_once: set = set()


def set_warn_always(b: bool) -> None:
    """Make warnings that ember issues once per process appear every time.

    Useful in tests that assert a warning is raised.
    """
    global _warn_always
    _warn_always = bool(b)


def is_warn_always_enabled() -> bool:
    """Whether :func:`set_warn_always` is on."""
    return _warn_always


def _warn_once(message: str, category: type = UserWarning, *, key: Any = None,
               stacklevel: int = 3) -> None:
    """Warn once per process per ``key`` (default: the message), or always when
    :func:`set_warn_always` is on."""
    k = message if key is None else key
    if not _warn_always:
        if k in _warned_once:
            return
        _warned_once.add(k)
    import warnings

    warnings.warn(message, category, stacklevel=stacklevel)


# ---------------------------------------------------------------------------
# Inter-op threads
# ---------------------------------------------------------------------------

_interop_threads: int | None = None


def set_num_interop_threads(n: int) -> None:
    """Set the number of threads for running independent ops in parallel.

    ember runs ops one after another on the calling thread and parallelises
    inside each kernel (:func:`ember.set_num_threads`), so this count is
    recorded for :func:`get_num_interop_threads` and changes no schedule.

    Raises
    ------
    RuntimeError
        When ``n`` is not a positive int (as PyTorch).
    """
    global _interop_threads
    if isinstance(n, bool) or not isinstance(n, int):
        raise RuntimeError(f"set_num_interop_threads expects an int, but got "
                           f"{type(n).__name__}")
    if n <= 0:
        raise RuntimeError("set_num_interop_threads expects a positive integer")
    _interop_threads = n


def get_num_interop_threads() -> int:
    """The inter-op thread count: the last :func:`set_num_interop_threads`, else the CPU count."""
    if _interop_threads is None:
        import os

        return os.cpu_count() or 1
    return _interop_threads


# ---------------------------------------------------------------------------
# Snapshot
# ---------------------------------------------------------------------------


Defaults = _record(
    "Defaults",
    ("dtype", "device", "deterministic", "deterministic_warn_only", "deterministic_debug_mode",
     "float32_matmul_precision", "warn_always", "grad_enabled"),
    "A read-only snapshot of ember's global switches (see :func:`current_defaults`).",
    module="ember")


def current_defaults() -> Defaults:
    """A read-only snapshot of every global switch, for logging and tests.

    Returns
    -------
    Defaults
        An immutable named tuple; ``._asdict()`` gives a plain dict.
        ``grad_enabled`` is ``None`` if the core has no grad mode.
    """
    grad = getattr(_core(), "is_grad_enabled", None)
    return Defaults(
        dtype=get_default_dtype(),
        device=get_default_device(),
        deterministic=_deterministic,
        deterministic_warn_only=_warn_only,
        deterministic_debug_mode=get_deterministic_debug_mode(),
        float32_matmul_precision=_matmul_precision,
        warn_always=_warn_always,
        grad_enabled=bool(grad()) if callable(grad) else None,
    )


# ---------------------------------------------------------------------------
# Type predicates
# ---------------------------------------------------------------------------

_TENSOR_TYPE_NAMES = {
    "float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
    "bfloat16": "BFloat16Tensor", "int64": "LongTensor", "int32": "IntTensor",
    "int16": "ShortTensor", "int8": "CharTensor", "uint8": "ByteTensor", "bool": "BoolTensor",
    "complex64": "ComplexFloatTensor", "complex128": "ComplexDoubleTensor",
}


def is_tensor(obj: Any) -> bool:
    """Whether ``obj`` is an ember tensor (``isinstance(obj, ember.Tensor)``)."""
    return isinstance(obj, _core().TensorBase)


def is_storage(obj: Any) -> bool:
    """Whether ``obj`` is an ember storage object."""
    core = _core()
    storage_types = tuple(t for t in (getattr(core, "Storage", None),
                                      getattr(core, "UntypedStorage", None))
                          if isinstance(t, type))
    return bool(storage_types) and isinstance(obj, storage_types)


def _require_tensor(fn: str, obj: Any) -> None:
    if not is_tensor(obj):
        raise TypeError(f"{fn}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(obj).__name__}")


def is_floating_point(input: Any) -> bool:
    """Whether ``input``'s dtype is a floating-point type."""
    _require_tensor("is_floating_point", input)
    return bool(input.dtype.is_floating_point)


def numel(input: Any) -> int:
    """The number of elements of ``input``."""
    _require_tensor("numel", input)
    return input.numel()


def typename(obj: Any) -> str:
    """A string naming the type of ``obj``.

    Tensors give their legacy type name (``"ember.FloatTensor"``,
    ``"ember.cuda.DoubleTensor"``), other objects their qualified class
    name (``"int"``, ``"ember.nn.modules.linear.Linear"``).
    """
    if is_tensor(obj):
        name = str(obj.dtype).rsplit(".", 1)[-1]
        legacy = "ember." + _TENSOR_TYPE_NAMES.get(name, name + "Tensor")
        if getattr(obj.device, "type", "cpu") != "cpu":
            legacy = legacy.replace("ember.", f"ember.{obj.device.type}.", 1)
        return legacy
    module = getattr(obj, "__module__", "") or ""
    qualname = ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    if module in ("", "builtins"):
        return qualname
    return f"{module}.{qualname}"
