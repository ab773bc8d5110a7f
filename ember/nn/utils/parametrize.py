"""Parametrizations: a module's tensor computed from other tensors on each access
(PyTorch's ``torch.nn.utils.parametrize``).

``register_parametrization(module, "weight", P)`` moves ``module.weight`` to
``module.parametrizations.weight.original`` and makes ``module.weight`` a property that
returns ``P(original)``. The module's class is swapped for a subclass that holds the
property, so other instances of the class are untouched; ``remove_parametrizations``
swaps it back. State-dict keys follow PyTorch (``parametrizations.weight.original``)."""
from __future__ import annotations

import collections.abc
import copy
from contextlib import contextmanager

import ember
from ember.nn.modules.container import ModuleDict, ModuleList
from ember.nn.modules.module import Module
from ember.nn.parameter import Parameter

__all__ = ["cached", "ParametrizationList", "register_parametrization", "is_parametrized",
           "remove_parametrizations", "type_before_parametrizations",
           "transfer_parametrizations_and_params"]

_cache_enabled = 0
_cache: dict = {}


@contextmanager
def cached():
    """Compute each parametrized tensor at most once inside the block (useful when a
    parametrized weight is read several times, as in a recurrent loop)."""
    global _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache.clear()


def _register_parameter_or_buffer(module, name, x):
    if isinstance(x, Parameter):
        module.register_parameter(name, x)
    else:
        module.register_buffer(name, x)


def _maybe_set(dest, src):
    """Give ``dest`` the value of ``src``, keeping ``dest`` the same object."""
    if tuple(dest.shape) != tuple(src.shape) or dest.dtype != src.dtype:
        raise RuntimeError(f"parametrization: right_inverse returned a tensor of shape "
                           f"{tuple(src.shape)} and dtype {src.dtype} for an original tensor "
                           f"of shape {tuple(dest.shape)} and dtype {dest.dtype}")
    dest.copy_(src)


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order, and the original tensor(s)
    they are computed from (``original``, or ``original0``, ``original1``, ... when the
    first parametrization's ``right_inverse`` returns several tensors)."""

    def __init__(self, modules, original, unsafe=False):
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        shape, dtype = tuple(original.shape), original.dtype
        with ember.no_grad():
            new = original
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass    # no inverse: the original tensor is kept as it is
        if not isinstance(new, ember.Tensor) and not isinstance(new, collections.abc.Sequence):
            raise ValueError(f"'right_inverse' must return a Tensor or a Sequence of tensors "
                             f"(list, tuple...). Got {type(new).__name__}")
        self.is_tensor = isinstance(new, ember.Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError(f"When `right_inverse` outputs one tensor, it may not change "
                                 f"the dtype.\noriginal.dtype: {original.dtype}\n"
                                 f"right_inverse(original).dtype: {new.dtype}")
            if new is not original:
                with ember.no_grad():
                    if tuple(new.shape) == shape:
                        original.copy_(new)
                    elif isinstance(original, Parameter):
                        original = Parameter(new.detach().clone(), original.requires_grad)
                    else:
                        original = new.detach().clone()
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, t in enumerate(new):
                if not isinstance(t, ember.Tensor):
                    raise ValueError(f"'right_inverse' must return a Tensor or a Sequence of "
                                     f"tensors (list, tuple...). Got element {i} of the "
                                     f"sequence with type {type(t).__name__}.")
                t = t.detach().clone()
                if isinstance(original, Parameter):
                    t = Parameter(t, original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", t)
        if not self.unsafe:
            z = self()
            if not isinstance(z, ember.Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got "
                                 f"{type(z).__name__}.")
            if z.dtype != dtype:
                raise ValueError(f"Registering a parametrization may not change the dtype of "
                                 f"the tensor, unless `unsafe` flag is enabled.\n"
                                 f"unparametrized dtype: {dtype}\n"
                                 f"parametrized dtype: {z.dtype}")
            if tuple(z.shape) != shape:
                raise ValueError(f"Registering a parametrization may not change the shape of "
                                 f"the tensor, unless `unsafe` flag is enabled.\n"
                                 f"unparametrized shape: {shape}\n"
                                 f"parametrized shape: {tuple(z.shape)}")

    def right_inverse(self, value):
        """Set the original tensor(s) so that the parametrization returns ``value``."""
        with ember.no_grad():
            for module in reversed(self):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(module).__name__} does not "
                                       f"implement right_inverse.")
                value = module.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, ember.Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got "
                                     f"{type(value).__name__}")
                _maybe_set(self.original, value)
            else:
                if not isinstance(value, collections.abc.Sequence) or \
                        len(value) != self.ntensors:
                    raise ValueError(f"'right_inverse' must return a sequence of "
                                     f"{self.ntensors} tensors")
                for i, t in enumerate(value):
                    _maybe_set(getattr(self, f"original{i}"), t)

    def forward(self):
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _deepcopy(self, memo):
    replica = self.__new__(self.__class__)
    memo[id(self)] = replica
    replica.__dict__ = copy.deepcopy(self.__dict__, memo)
    return replica


def _getstate(self):
    raise RuntimeError("Serialization of parametrized modules is only supported through "
                       "state_dict().")


def _inject_new_class(module):
    cls = module.__class__
    attrs = {"__getstate__": _getstate}
    if not hasattr(cls, "__deepcopy__"):
        attrs["__deepcopy__"] = _deepcopy
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), attrs)


def _inject_property(module, tensor_name):
    def get_parametrized(self):
        p = self.parametrizations[tensor_name]
        if _cache_enabled:
            key = (id(self), tensor_name)
            t = _cache.get(key)
            if t is None:
                t = p()
                _cache[key] = t
            return t
        return p()

    def set_original(self, value):
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has a parametrization (on ``tensor_name``, when given)."""
    p = module.__dict__.get("_modules", {}).get("parametrizations")
    if not isinstance(p, ModuleDict):
        return False
    return len(p) > 0 if tensor_name is None else tensor_name in p


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Make ``module.<tensor_name>`` the output of ``parametrization`` applied to the
    original tensor (a second registration on the same name chains them)."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        plist = module.parametrizations[tensor_name]
        if not unsafe:
            y = getattr(module, tensor_name)
            x = parametrization(y)
            if not isinstance(x, ember.Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got "
                                 f"{type(x).__name__}.")
            if x.dtype != y.dtype or tuple(x.shape) != tuple(y.shape):
                raise ValueError(f"Registering a parametrization may not change the shape or "
                                 f"dtype of the tensor, unless the `unsafe` flag is enabled.\n"
                                 f"module.{tensor_name}: {tuple(y.shape)} {y.dtype}\n"
                                 f"parametrization(module.{tensor_name}): "
                                 f"{tuple(x.shape)} {x.dtype}")
        plist.append(parametrization)
        plist.unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        plist = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = plist
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a "
                         f"parametrized element with name '{tensor_name}'")
    return module


def remove_parametrizations(module: Module, tensor_name: str,
                            leave_parametrized: bool = True) -> Module:
    """Undo :func:`register_parametrization` on ``tensor_name``: the tensor becomes a plain
    parameter (or buffer) holding the parametrized value (``leave_parametrized``) or the
    original one."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    plist = module.parametrizations[tensor_name]
    if plist.is_tensor:
        original = plist.original
        if leave_parametrized:
            with ember.no_grad():
                t = getattr(module, tensor_name)
                _maybe_set(original, t)
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a "
                             "tensor that is parametrized in terms of a sequence of tensors.")
        with ember.no_grad():
            t = getattr(module, tensor_name)
        first = plist.original0
        original = Parameter(t.detach().clone(), first.requires_grad) \
            if isinstance(first, Parameter) else t.detach().clone()
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module: Module) -> type:
    """The class of ``module`` before any parametrization was registered."""
    if is_parametrized(module):
        return module.__class__.__bases__[0]
    return type(module)


def transfer_parametrizations_and_params(from_module: Module, to_module: Module,
                                         tensor_name: str | None = None) -> Module:
    """Copy the parametrizations of ``from_module`` (all, or those of ``tensor_name``) and
    their original tensors onto ``to_module``."""
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        if not hasattr(to_module, name):
            setattr(to_module, name,
                    Parameter(ember.empty_like(getattr(from_module, name).detach())))
        for p in from_module.parametrizations[name]:
            if not is_parametrized(to_module, name) or p not in list(
                    to_module.parametrizations[name]):
                register_parametrization(to_module, name, p, unsafe=True)
        src, dst = from_module.parametrizations[name], to_module.parametrizations[name]
        with ember.no_grad():
            if src.is_tensor:
                if tuple(dst.original.shape) == tuple(src.original.shape):
                    dst.original.copy_(src.original)
            else:
                for i in range(src.ntensors):
                    getattr(dst, f"original{i}").copy_(getattr(src, f"original{i}"))
    return to_module
