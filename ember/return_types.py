"""The named-tuple types of results made of several tensors (PyTorch's
``torch.return_types``): ``ember.max(x, 1)`` is an ``ember.return_types.max`` with fields
``values`` and ``indices``. Results pickle by these names."""
from __future__ import annotations

from ember._C import reduce as _reduce


def _linalg_fields() -> dict:
    from ember import _linalg
    return _linalg._RESULT_FIELDS


def __getattr__(name: str):
    cls = getattr(_reduce.return_types, name, None)
    if cls is None and not name.startswith("__") and name in _linalg_fields():
        # the linear-algebra types are made on first use (namedtuple is slow to build)
        cls = _reduce._rt(name, _linalg_fields()[name])
        setattr(_reduce.return_types, name, cls)
    if cls is None:
        raise AttributeError(f"module 'ember.return_types' has no attribute {name!r}")
    return cls


def __dir__() -> list:
    return sorted(set(vars(_reduce.return_types)) | set(_linalg_fields()))
