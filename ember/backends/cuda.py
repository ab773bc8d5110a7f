"""``ember.backends.cuda``: CUDA matmul switches and build facts.

``matmul.allow_tf32`` is the same setting as
``ember.set_float32_matmul_precision``: ``True`` means ``"high"``, ``False``
means ``"highest"``, and setting the precision to ``"high"`` or
``"medium"`` reads back as ``True``, as in PyTorch.  The reduced-precision
reduction switches are kept for scripts that set them.
"""

from __future__ import annotations

from typing import Any

from ember import _switches

__all__ = ["is_built", "matmul"]


def is_built() -> bool:
    """Whether this ember was built with its CUDA library (whether or not a GPU is present)."""
    from ember import __config__

    return bool(__config__.config().get("cuda_built"))


class _Matmul:
    """``ember.backends.cuda.matmul``: ``allow_tf32`` and the reduced-precision switches."""

    _PLAIN = ("allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction")

    def __init__(self) -> None:
        object.__setattr__(self, "_values", {k: True for k in self._PLAIN})

    def __getattr__(self, name: str) -> Any:
        if name == "allow_tf32":
            return _switches.get_float32_matmul_precision() != "highest"
        if name in self._PLAIN:
            return self._values[name]
        raise AttributeError(f"ember.backends.cuda.matmul has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self._PLAIN and name != "allow_tf32":
            raise AttributeError(f"ember.backends.cuda.matmul has no attribute {name!r}")
        if not isinstance(value, bool):
            raise RuntimeError(f"ember.backends.cuda.matmul.{name} expects a bool, but got "
                               f"{type(value).__name__}")
        if name == "allow_tf32":
            _switches.set_float32_matmul_precision("high" if value else "highest")
        else:
            self._values[name] = value

    def __dir__(self) -> list[str]:
        return ["allow_tf32", *self._PLAIN]


matmul = _Matmul()
