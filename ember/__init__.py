"""ember: a lean deep-learning library with PyTorch's public API.

``import ember as torch`` runs everyday PyTorch scripts on ember's own
hand-written C kernels."""
# -- front door (issue 5): native loading flags, before any extension loads --
from ember import _dll
from ember._version import __version__

_dll._before_extensions()
# -- end front door ------------------------------------------------------------

from ember._tensor_api import *
from ember._tensor_api import __all__ as _tensor_all

__all__ = ["__version__"] + list(_tensor_all)

# -- front door (issue 5) ----------------------------------------------------
# Everything below is cheap: no submodule that needs nn, sympy, ctypes or CUDA
# is imported here; those load on first attribute access (``__getattr__``).
_dll._after_extensions()

import math as _math
import sys as _sys

from ember import _ops, _plugins
from ember._check import (
    _check,
    _check_index,
    _check_not_implemented,
    _check_type,
    _check_value,
    _check_with,
)
from ember._devices import _register_device_module, get_device_module
from ember._switches import (
    Defaults,
    are_deterministic_algorithms_enabled,
    current_defaults,
    get_default_device,
    get_default_dtype,
    get_deterministic_debug_mode,
    get_float32_matmul_precision,
    get_num_interop_threads,
    init_num_threads,
    is_deterministic,
    is_deterministic_algorithms_warn_only_enabled,
    is_floating_point,
    is_storage,
    is_tensor,
    is_warn_always_enabled,
    numel,
    set_default_device,
    set_default_dtype,
    set_deterministic_debug_mode,
    set_float32_matmul_precision,
    set_num_interop_threads,
    set_warn_always,
    typename,
    use_deterministic_algorithms,
)

# torch's numeric constants
e, pi, inf, nan, newaxis = _math.e, _math.pi, _math.inf, _math.nan, None


def compile(model=None, *, fullgraph=False, dynamic=None, backend="default", mode=None,
            options=None, disable=False):
    """Compile ``model`` (a function or ``nn.Module``) with a compile backend.

    The first call with new guards (shapes, dtypes, scalars, module state,
    global switches) runs ``model`` under the dispatcher's Python key and
    records its ops into an ``ember.fx`` graph, which the backend compiles;
    later calls whose guards hold run the backend's callable.  What cannot be
    replayed faithfully (a tensor value read into Python, data-dependent
    shapes, side effects) runs eagerly with a warning (see ``docs/compile``).

    Parameters
    ----------
    model : callable, optional
        What to compile.  Omitted, ``ember.compile(...)`` returns a decorator.
    fullgraph : bool
        Require the whole function to be captured as one graph (a graph break
        raises ``ember.compiler.GraphBreakError``).
    dynamic : bool or None
        ``None`` or ``True``: with the default backend, once captures at three
        leading (batch) sizes agree on a size-generic graph, later leading sizes
        reuse it without a capture or a recompile; ``False`` specialises every
        shape.  Other backends specialise every shape.
    backend : str, ember.compiler.Backend or callable
        A registered backend name (``ember.compiler.list_backends()``) or a
        callable ``backend(gm, example_inputs) -> callable`` as for
        ``torch.compile``; ``"default"`` resolves to ``"eager"`` until an
        optimising backend lands.
    mode : str or ember.CompileMode, optional
        ``"default"``, ``"reduce-overhead"``, ``"max-autotune"`` or
        ``"max-autotune-no-cudagraphs"``.  A bad mode is a ``ValueError``
        suggesting the nearest; ``ember.compiler.list_modes()`` says what each
        changes for a backend.
    options : dict, optional
        Backend options; not together with ``mode``.
    disable : bool
        Return ``model`` itself, uncompiled.

    Returns
    -------
    callable
        The compiled callable (an ``OptimizedModule`` for a module), or a
        decorator when ``model`` is omitted.
    """
    from ember.compiler import compile as _compile

    return _compile(model, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                    options=options, disable=disable)


# Submodules and names that load on first access (and are listed by dir()).
_LAZY_SUBMODULES = frozenset(("nn", "optim", "utils", "compiler", "fx", "export", "distributed",
                              "cuda", "cpu", "autograd", "__config__", "library", "datasets",
                              "linalg", "distributions", "accelerator", "backends", "mps",
                              "xpu", "testing", "func", "profiler", "onnx", "fft", "amp",
                              "special", "random", "multiprocessing", "signal",
                              "return_types", "hub"))
_LAZY_ATTRS = {
    "SymInt": "ember._sym", "SymFloat": "ember._sym", "SymBool": "ember._sym",
    "sym_int": "ember._sym", "sym_float": "ember._sym", "sym_max": "ember._sym",
    "sym_min": "ember._sym", "sym_sum": "ember._sym", "sym_not": "ember._sym",
    "sym_ite": "ember._sym", "CompileMode": "ember.compiler", "vmap": "ember.func",
}
_AUTOCAST_NAMES = ("autocast", "is_autocast_enabled", "set_autocast_enabled",
                   "get_autocast_dtype", "set_autocast_dtype", "is_autocast_cache_enabled",
                   "set_autocast_cache_enabled", "clear_autocast_cache")
_LAZY_ATTRS.update(dict.fromkeys(_AUTOCAST_NAMES, "ember.amp"))
_LAZY_ATTRS.update(dict.fromkeys((  # torch's per-device spellings, at ember.* only
    "autocast_increment_nesting", "autocast_decrement_nesting", "get_autocast_cpu_dtype",
    "get_autocast_gpu_dtype", "is_autocast_cpu_enabled", "set_autocast_cpu_enabled",
    "set_autocast_cpu_dtype", "set_autocast_gpu_dtype"), "ember.amp.autocast_mode"))
_LAZY_ATTRS.update(dict.fromkeys(_ops.FUNCTIONAL_AT_TOP, "ember.nn.functional"))
_LAZY_ATTRS.update(dict.fromkeys(_ops.ATEN_NN_AT_TOP, "ember._nn_ops"))
_LAZY_ATTRS.update(dict.fromkeys((
    "UntypedStorage", "TypedStorage", "from_file", "BoolStorage", "ByteStorage", "CharStorage",
    "ShortStorage", "IntStorage", "LongStorage", "HalfStorage", "BFloat16Storage",
    "FloatStorage", "DoubleStorage"), "ember._storage"))
_LAZY_ATTRS.update(dict.fromkeys((
    "BFloat16Tensor", "BoolTensor", "ByteTensor", "CharTensor", "DoubleTensor", "FloatTensor",
    "HalfTensor", "IntTensor", "LongTensor", "ShortTensor"), "ember._legacy_tensors"))
_LAZY_ATTRS.update(cond="ember._control_flow", while_loop="ember._control_flow",
                   svd_lowrank="ember._lowrank", pca_lowrank="ember._lowrank",
                   lobpcg="ember._lobpcg", set_flush_denormal="ember._C.core",
                   is_anomaly_enabled="ember.autograd.anomaly_mode",
                   is_anomaly_check_nan_enabled="ember.autograd.anomaly_mode",
                   set_anomaly_enabled="ember.autograd.anomaly_mode")


def __getattr__(name):
    module = _LAZY_ATTRS.get(name)
    if module is not None:
        __import__(module)
        value = getattr(_sys.modules[module], name)
        globals()[name] = value
        return value
    if name in _LAZY_SUBMODULES:
        try:
            __import__("ember." + name)
            return _sys.modules["ember." + name]
        except ModuleNotFoundError as e:
            if e.name != "ember." + name:
                raise
            raise AttributeError(f"module 'ember' has no attribute {name!r} (ember.{name} is "
                                 f"not part of this build)") from e
    from ember._deprecated import _deprecated_attrs, _get_deprecated

    if name in _deprecated_attrs:
        return _get_deprecated(name)
    raise AttributeError(f"module 'ember' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | _LAZY_SUBMODULES | set(_LAZY_ATTRS))


__all__ = list(dict.fromkeys(__all__ + [
    "compile", "CompileMode", "Defaults", "current_defaults",
    "set_default_dtype", "get_default_dtype", "set_default_device", "get_default_device",
    "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
    "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode",
    "get_deterministic_debug_mode", "is_deterministic", "set_float32_matmul_precision",
    "get_float32_matmul_precision", "set_warn_always", "is_warn_always_enabled",
    "get_num_interop_threads", "set_num_interop_threads", "init_num_threads", "typename",
    "is_tensor", "is_storage", "is_floating_point", "numel", "get_device_module",
    "e", "pi", "inf", "nan", "newaxis", "SymInt", "SymFloat", "SymBool", "sym_int", "sym_float",
    "sym_max", "sym_min", "sym_sum", "sym_not", "sym_ite", *_AUTOCAST_NAMES,
]))

# Out-of-tree backends ("ember.backends" entry points): keep this the last line.
_plugins._autoload()
