"""``ember.backends``: the switches PyTorch scripts set on ``torch.backends``.

Each submodule answers for one library PyTorch can use.  Where a switch has a
meaning in ember it is tied to ember's own setting
(``cuda.matmul.allow_tf32`` is ``ember.set_float32_matmul_precision``;
``cpu.get_cpu_capability`` names the kernel variant ember picked at run
time); the switches of libraries ember does not use (cuDNN, oneDNN) are kept
and validated so that scripts which set them run unchanged, and change
nothing.
"""

from __future__ import annotations

import contextlib
import sys
import types
from typing import Any, Iterator

__all__ = ["cpu", "cuda", "cudnn", "mkldnn", "mps", "openmp", "opt_einsum"]


class _FlagModule(types.ModuleType):
    """A module whose boolean switches are checked on assignment, like torch's.

    Subclasses list their switches and defaults in ``_FLAGS``; a module adopts
    the class with :func:`_adopt`.
    """

    _FLAGS: dict[str, bool] = {}

    def __getattr__(self, name: str) -> Any:
        flags = type(self)._FLAGS
        if name in flags:
            return self.__dict__.setdefault("_values", dict(flags))[name]
        raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        if name in type(self)._FLAGS:
            if not isinstance(value, bool):
                raise RuntimeError(f"{self.__name__}.{name} expects a bool, but got "
                                   f"{type(value).__name__}")
            self.__dict__.setdefault("_values", dict(type(self)._FLAGS))[name] = value
            return
        super().__setattr__(name, value)

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(type(self)._FLAGS))

    @contextlib.contextmanager
    def flags(self, **values: bool | None) -> Iterator[None]:
        """Set switches inside the block (``None`` leaves one as it is) and restore them."""
        unknown = set(values) - set(type(self)._FLAGS)
        if unknown:
            raise TypeError(f"{self.__name__}.flags() got unexpected keyword argument(s) "
                            f"{sorted(unknown)}; its switches are {sorted(type(self)._FLAGS)}")
        saved = {k: getattr(self, k) for k in values}
        try:
            for k, v in values.items():
                if v is not None:
                    setattr(self, k, v)
            yield
        finally:
            for k, v in saved.items():
                setattr(self, k, v)


def _adopt(module_name: str, cls: type) -> None:
    sys.modules[module_name].__class__ = cls


from ember.backends import cpu, cuda, cudnn, mkldnn, mps, openmp, opt_einsum  # noqa: E402
