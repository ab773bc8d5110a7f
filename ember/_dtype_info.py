"""``ember.finfo`` / ``ember.iinfo``: numeric limits of the dtypes."""
from __future__ import annotations

from ember._C import core as _core

# bits, eps, max, smallest normal, resolution
_FLOAT = {
    "float16": (16, 2.0 ** -10, 65504.0, 2.0 ** -14, 1e-3),
    "bfloat16": (16, 2.0 ** -7, 3.3895313892515355e38, 2.0 ** -126, 1e-2),
    "float32": (32, 2.0 ** -23, 3.4028234663852886e38, 2.0 ** -126, 1e-6),
    "float64": (64, 2.0 ** -52, 1.7976931348623157e308, 2.0 ** -1022, 1e-15),
}
_INT = {"uint8": (8, 0, 255), "int8": (8, -128, 127), "int16": (16, -32768, 32767),
        "int32": (32, -2 ** 31, 2 ** 31 - 1), "int64": (64, -2 ** 63, 2 ** 63 - 1)}


class finfo:
    """Machine limits of a floating-point dtype (default: the default dtype)."""

    def __init__(self, type=None):
        d = _core._get_default_dtype() if type is None else type
        name = getattr(d, "_name", None)
        # a complex dtype reports the limits of its real part, as torch does
        name = {"complex64": "float32", "complex128": "float64"}.get(name, name)
        if name not in _FLOAT:
            raise TypeError("ember.finfo() requires a floating point input type. Use "
                            "ember.iinfo to handle 'ember.finfo'")
        self.bits, self.eps, self.max, self.smallest_normal, self.resolution = _FLOAT[name]
        self.min = -self.max
        self.tiny = self.smallest_normal
        self.dtype = name

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, "
                f"tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """Machine limits of an integer dtype."""

    def __init__(self, type):
        name = getattr(type, "_name", None)
        if name not in _INT:
            raise TypeError("ember.iinfo() requires an integer input type. Use ember.finfo "
                            "to handle 'ember.iinfo'")
        self.bits, self.min, self.max = _INT[name]
        self.dtype = name

    def __repr__(self) -> str:
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"
