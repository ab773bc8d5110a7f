"""ember.utils: helpers (``checkpoint``, ``data``, ...). Submodules load on first
attribute access, so ``import ember.utils`` stays cheap."""
import importlib as _importlib

_SUBMODULES = ("checkpoint", "data", "hooks", "benchmark", "dlpack", "cpp_extension",
               "tensorboard", "model_zoo", "flop_counter", "_pytree")


def __getattr__(name):
    if name in _SUBMODULES:
        try:
            return _importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{name}":
                raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_SUBMODULES))
