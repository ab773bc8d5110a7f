"""Deprecated top-level names: they keep working, with a ``DeprecationWarning``
naming the replacement.  ``ember.__getattr__`` consults :data:`_deprecated_attrs`.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any, Callable

__all__ = ["_deprecated_attrs", "_get_deprecated"]

_TENSOR_TYPES = {
    "FloatTensor": "float32",
    "DoubleTensor": "float64",
}


def _set_default_tensor_type(t: Any) -> None:
    """``ember.set_default_tensor_type(ember.DoubleTensor)`` or ``("torch.DoubleTensor")``."""
    ember = sys.modules["ember"]
    name = t if isinstance(t, str) else getattr(t, "__name__", repr(t))
    base = name.rsplit(".", 1)[-1]
    if ".cuda." in name:
        ember.set_default_device("cuda")
    elif isinstance(t, str) and not name.startswith(("ember.", "torch.")):
        raise TypeError(f"set_default_tensor_type(): invalid type string {name!r}")
    dtype_name = _TENSOR_TYPES.get(base)
    if dtype_name is None:
        raise TypeError(f"set_default_tensor_type(): only FloatTensor and DoubleTensor are "
                        f"supported, got {name!r}")
    ember.set_default_dtype(getattr(ember, dtype_name))


def _set_deterministic(d: bool) -> None:
    sys.modules["ember"].use_deterministic_algorithms(d)


# old name -> (replacement, shown in the warning; implementation)
_deprecated_attrs: dict[str, tuple[str, Callable[..., Any]]] = {
    "set_default_tensor_type": ("ember.set_default_dtype() and ember.set_default_device()",
                                _set_default_tensor_type),
    "set_deterministic": ("ember.use_deterministic_algorithms()", _set_deterministic),
}


def _get_deprecated(name: str) -> Callable[..., Any]:
    """Warn that ``ember.<name>`` is deprecated and return its implementation."""
    replacement, impl = _deprecated_attrs[name]
    warnings.warn(f"ember.{name} is deprecated and will be removed in a future release; "
                  f"use {replacement} instead.", DeprecationWarning, stacklevel=3)
    return impl
