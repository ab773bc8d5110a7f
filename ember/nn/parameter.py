"""``ember.nn.Parameter``: a Tensor subclass that a Module registers as a parameter.

A Parameter shares its data's storage (``Parameter(t)`` is a view of ``t`` detached
from any graph); ops on it return plain ``ember.Tensor`` results, as in PyTorch."""
from __future__ import annotations

import ember
from ember._tensor import Tensor


def _as_subclass(data, cls, requires_grad=False):
    """A ``cls`` instance viewing ``data``'s storage (no copy), cut from the graph."""
    return Tensor._make_subclass(cls, data, requires_grad)


class Parameter(Tensor):
    """A tensor that is a module parameter (``requires_grad=True`` by default)."""

    __module__ = "ember.nn"

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = ember.empty(0)
        if not isinstance(data, ember.Tensor):
            raise TypeError(f"Parameter: expected data to be a Tensor, got "
                            f"{type(data).__name__}")
        return _as_subclass(data, cls, requires_grad)

    def __init__(self, data=None, requires_grad=True):
        pass

    def __repr__(self, *, tensor_contents=None):
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        with ember.autograd.no_grad():
            r = type(self)(self.detach().clone(), self.requires_grad)
        if self.grad is not None:
            r.grad = self.grad.clone()
        memo[id(self)] = r
        return r

    def __reduce_ex__(self, proto):
        return (_rebuild_parameter, (self.detach(), self.requires_grad))


def _rebuild_parameter(data, requires_grad):
    return Parameter(data, requires_grad)


class Buffer(Tensor):
    """Marks a tensor as a buffer when assigned to a Module attribute
    (``ember.nn.Buffer(t, persistent=True)``); stored as a plain tensor."""

    __module__ = "ember.nn"

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = ember.empty(0)
        t = _as_subclass(data, cls)
        t.persistent = persistent
        return t

    def __init__(self, data=None, *, persistent=True):
        pass


class UninitializedParameter(Parameter):
    """The weight of a lazy module (``LazyLinear``) before its shape is known: an empty
    parameter that ``materialize(shape)`` turns into a real ``Parameter`` on the first
    forward, and that ``load_state_dict`` replaces with the checkpoint's tensor."""

    __module__ = "ember.nn"

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        return Parameter.__new__(cls, ember.empty(0, dtype=dtype, device=device), requires_grad)

    def __init__(self, requires_grad=True, device=None, dtype=None):
        pass

    def __repr__(self, *, tensor_contents=None):
        return "<UninitializedParameter>"

    __str__ = __repr__

    def materialize(self, shape, device=None, dtype=None):
        """A ``Parameter`` of ``shape`` (uninitialised values; the module initialises it)."""
        return Parameter(ember.empty(*shape, dtype=dtype or self.dtype,
                                     device=device or self.device), self.requires_grad)


class UninitializedBuffer(Tensor):
    """A buffer of a lazy module (``LazyBatchNorm1d``'s running stats) before its shape is
    known; ``materialize(shape)`` gives the real tensor."""

    __module__ = "ember.nn"

    def __new__(cls, requires_grad=False, device=None, dtype=None, persistent=True):
        t = _as_subclass(ember.empty(0, dtype=dtype, device=device), cls, requires_grad)
        t.persistent = persistent
        return t

    def __init__(self, requires_grad=False, device=None, dtype=None, persistent=True):
        pass

    def __repr__(self, *, tensor_contents=None):
        return "<UninitializedBuffer>"

    __str__ = __repr__

    def materialize(self, shape, device=None, dtype=None):
        """A plain tensor of ``shape`` (uninitialised values; the module initialises it)."""
        return ember.empty(*shape, dtype=dtype or self.dtype, device=device or self.device)


def is_lazy(param):
    return isinstance(param, (UninitializedParameter, UninitializedBuffer))
