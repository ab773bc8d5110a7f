"""The legacy tensor type classes (``FloatTensor``, ``LongTensor``, ...): constructors
of CPU tensors of one dtype, and ``isinstance`` checks of a tensor's dtype and device, as
older PyTorch code uses them (``x.type(ember.LongTensor)`` too)."""
from __future__ import annotations

from ember._C import core

__all__ = ["BFloat16Tensor", "BoolTensor", "ByteTensor", "CharTensor", "DoubleTensor",
           "FloatTensor", "HalfTensor", "IntTensor", "LongTensor", "ShortTensor"]


class _LegacyTensorType(type):
    """``isinstance(t, FloatTensor)``: ``t`` is a CPU tensor of that dtype."""

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, core.TensorBase) and obj.dtype == cls.dtype and \
            obj.device.type == "cpu"

    def __call__(cls, *args, device=None):
        """``FloatTensor()`` empty, ``FloatTensor(2, 3)`` or ``FloatTensor(size)``
        uninitialised, ``FloatTensor(data)`` a copy of data."""
        if device is not None and str(device) != "cpu":
            raise RuntimeError(f"legacy constructor expects device type: cpu but device type: "
                               f"{device} was passed")
        if not args:
            return core.empty(0, dtype=cls.dtype)
        if len(args) == 1 and not isinstance(args[0], (int, core.Size)):
            return core.tensor(args[0], dtype=cls.dtype)
        return core.empty(*args, dtype=cls.dtype)

    def __repr__(cls) -> str:
        return f"<class 'ember.{cls.__name__}'>"


def _legacy(name, dtype):
    return _LegacyTensorType(name, (), {"dtype": dtype, "is_cuda": False, "__module__": "ember",
                                        "__doc__": f"CPU tensors of {dtype} (legacy type)."})


BoolTensor = _legacy("BoolTensor", core.bool_)
ByteTensor = _legacy("ByteTensor", core.uint8)
CharTensor = _legacy("CharTensor", core.int8)
ShortTensor = _legacy("ShortTensor", core.int16)
IntTensor = _legacy("IntTensor", core.int32)
LongTensor = _legacy("LongTensor", core.int64)
HalfTensor = _legacy("HalfTensor", core.float16)
BFloat16Tensor = _legacy("BFloat16Tensor", core.bfloat16)
FloatTensor = _legacy("FloatTensor", core.float32)
DoubleTensor = _legacy("DoubleTensor", core.float64)


def dtype_of(spec):
    """The dtype a ``Tensor.type`` argument names: a legacy class or its name
    (``"torch.LongTensor"``, ``"ember.FloatTensor"``); None when it names none."""
    if isinstance(spec, _LegacyTensorType):
        return spec.dtype
    if isinstance(spec, str):
        mod, _, name = spec.rpartition(".")
        cls = globals().get(name) if mod in ("torch", "ember") else None
        if isinstance(cls, _LegacyTensorType):
            return cls.dtype
        raise ValueError(f"invalid type: '{spec}'")
    return None
