"""Padding layers: constant, zero, reflection, replication and circular, in 1 to 3 dims."""
from __future__ import annotations

from ember.nn import functional as F
from ember.nn.modules.module import Module

__all__ = ["ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ZeroPad1d", "ZeroPad2d",
           "ZeroPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
           "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d",
           "CircularPad2d", "CircularPad3d"]


def _pads(padding, n):
    """``padding`` as the 2n-tuple (left, right, top, bottom, front, back) F.pad takes."""
    if isinstance(padding, (tuple, list)):
        if len(padding) != 2 * n:
            raise ValueError(f"expected padding of length {2 * n}, got {len(padding)}")
        return tuple(padding)
    return (padding,) * (2 * n)


class _PadNd(Module):
    """Pads the last ``_n`` dims of its input with ``F.pad(..., mode)``."""
    _n = 1
    _mode = "constant"

    def __init__(self, padding):
        super().__init__()
        self.padding = _pads(padding, self._n)

    def forward(self, input):
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pad the last dim with ``value``: ``padding`` is an int or (left, right)."""
    _n = 1


class ConstantPad2d(_ConstantPadNd):
    """Pad the last 2 dims with ``value``: (left, right, top, bottom)."""
    _n = 2


class ConstantPad3d(_ConstantPadNd):
    """Pad the last 3 dims with ``value``: (left, right, top, bottom, front, back)."""
    _n = 3


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad1d(_ZeroPadNd):
    """Pad the last dim with zeros."""
    _n = 1


class ZeroPad2d(_ZeroPadNd):
    """Pad the last 2 dims with zeros."""
    _n = 2


class ZeroPad3d(_ZeroPadNd):
    """Pad the last 3 dims with zeros."""
    _n = 3


class ReflectionPad1d(_PadNd):
    """Pad the last dim with its reflection (the edge not repeated)."""
    _n, _mode = 1, "reflect"


class ReflectionPad2d(_PadNd):
    """Pad the last 2 dims with their reflection."""
    _n, _mode = 2, "reflect"


class ReflectionPad3d(_PadNd):
    """Pad the last 3 dims with their reflection."""
    _n, _mode = 3, "reflect"


class ReplicationPad1d(_PadNd):
    """Pad the last dim by repeating its edge values."""
    _n, _mode = 1, "replicate"


class ReplicationPad2d(_PadNd):
    """Pad the last 2 dims by repeating their edge values."""
    _n, _mode = 2, "replicate"


class ReplicationPad3d(_PadNd):
    """Pad the last 3 dims by repeating their edge values."""
    _n, _mode = 3, "replicate"


class _CircularPadNd(_PadNd):
    _mode = "circular"

    def forward(self, input):
        if input.dim() not in (self._n + 1, self._n + 2):
            raise ValueError(f"expected {self._n + 1}D or {self._n + 2}D input (got "
                             f"{input.dim()}D input)")
        return F.pad(input, self.padding, "circular")


class CircularPad1d(_CircularPadNd):
    """Pad the last dim periodically (wrapping around)."""
    _n = 1


class CircularPad2d(_CircularPadNd):
    """Pad the last 2 dims periodically."""
    _n = 2


class CircularPad3d(_CircularPadNd):
    """Pad the last 3 dims periodically."""
    _n = 3
