"""Pruning (PyTorch's ``torch.nn.utils.prune``).

Pruning ``module.<name>`` moves the parameter to ``<name>_orig``, adds a ``<name>_mask``
buffer and a forward pre-hook that recomputes ``<name> = <name>_orig * <name>_mask``
before each forward; pruning the same tensor again combines the masks through a
:class:`PruningContainer`. :func:`remove` makes the pruning permanent."""
from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable

import ember
from ember.nn.utils.convert_parameters import parameters_to_vector

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured",
           "L1Unstructured", "RandomStructured", "LnStructured", "CustomFromMask", "identity",
           "random_unstructured", "l1_unstructured", "random_structured", "ln_structured",
           "global_unstructured", "custom_from_mask", "remove", "is_pruned"]


class BasePruningMethod(ABC):
    """A way of computing a pruning mask; subclasses define ``compute_mask`` and
    ``PRUNING_TYPE`` (``'unstructured'``, ``'structured'`` or ``'global'``)."""

    _tensor_name: str

    def __call__(self, module, inputs):
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t, default_mask):
        """The new mask for tensor ``t`` given the mask so far, ``default_mask``."""

    def apply_mask(self, module):
        """``<name>_orig * <name>_mask`` of ``module``."""
        orig = getattr(module, self._tensor_name + "_orig")
        mask = getattr(module, self._tensor_name + "_mask")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        """Prune ``module.<name>`` with ``cls(*args, **kwargs)``, combined with any earlier
        pruning of the same tensor."""
        old = None
        for k, hook in list(module._forward_pre_hooks.items()):
            if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
                old = hook
                del module._forward_pre_hooks[k]
        method = cls(*args, **kwargs)
        method._tensor_name = name
        if old is not None:
            if isinstance(old, PruningContainer):
                old.add_pruning_method(method)
                method = old
            else:
                container = PruningContainer(old)
                container.add_pruning_method(method)
                method = container
        orig = getattr(module, name)
        if importance_scores is not None:
            if tuple(importance_scores.shape) != tuple(orig.shape):
                raise ValueError(f"importance_scores should have the same shape as parameter "
                                 f"{name} of {module}")
        else:
            importance_scores = orig
        if not isinstance(method, PruningContainer):
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = ember.ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        try:
            mask = method.compute_mask(importance_scores, default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if not isinstance(method, PruningContainer):
                orig = getattr(module, name + "_orig")
                module.register_parameter(name, orig)
                del module._parameters[name + "_orig"]
            raise
        return method

    def prune(self, t, default_mask=None, importance_scores=None):
        """``t`` times the mask this method computes (from ``importance_scores``)."""
        if importance_scores is not None and tuple(importance_scores.shape) != tuple(t.shape):
            raise ValueError("importance_scores should have the same shape as tensor t")
        scores = importance_scores if importance_scores is not None else t
        default_mask = default_mask if default_mask is not None else ember.ones_like(t)
        return t * self.compute_mask(scores, default_mask=default_mask)

    def remove(self, module):
        """Make the pruning permanent: ``<name>`` becomes a plain parameter again."""
        weight = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        with ember.no_grad():
            orig.copy_(weight)
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


class PruningContainer(BasePruningMethod):
    """The sequence of pruning methods applied to one tensor; each new one prunes only
    what the earlier ones left."""

    def __init__(self, *args):
        self._pruning_methods = ()
        if len(args) == 1 and not isinstance(args[0], Iterable):
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        elif len(args) == 1 and isinstance(args[0], Iterable):
            for method in args[0]:
                self.add_pruning_method(method)
        else:
            for method in args:
                self.add_pruning_method(method)

    def add_pruning_method(self, method):
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and getattr(self, "_tensor_name", method._tensor_name) != \
                method._tensor_name:
            raise ValueError(f"Can only add pruning methods acting on the parameter named "
                             f"'{self._tensor_name}' to PruningContainer {self}. Found "
                             f"'{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self):
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t, default_mask):
        method = self._pruning_methods[-1]
        mask = default_mask.to(dtype=t.dtype)
        if method.PRUNING_TYPE == "unstructured":
            slc = default_mask == 1
        elif method.PRUNING_TYPE == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError("Pruning methods of PRUNING_TYPE 'structured' need to "
                                     "have the attribute `dim` defined.")
            n = t.dim()
            dim = method.dim if method.dim >= 0 else n + method.dim
            if dim < 0:
                raise IndexError(f"Index is out of bounds for tensor of size {n}")
            keep = default_mask.sum([d for d in range(n) if d != dim]) != 0
            slc = tuple(keep if d == dim else slice(None) for d in range(n))
        elif method.PRUNING_TYPE == "global":
            slc = tuple(slice(None) for _ in range(t.dim()))
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {method.PRUNING_TYPE}")
        partial = method.compute_mask(t[slc], default_mask=default_mask[slc])
        mask[slc] = partial.to(dtype=mask.dtype)
        return mask


class Identity(BasePruningMethod):
    """Prunes nothing (a mask of ones)."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):
        return super().apply(module, name)


def _validate_amount_init(amount):
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or \
            (not isinstance(amount, numbers.Integral) and not 0.0 <= float(amount) <= 1.0):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a "
                         f"non-negative integer")


def _validate_amount(amount, size):
    if isinstance(amount, numbers.Integral) and amount > size:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters to "
                         f"prune={size}")


def _nparams(amount, size):
    return amount if isinstance(amount, numbers.Integral) else round(amount * size)


def _validate_structured(t):
    if t.dim() <= 1:
        raise ValueError(f"Structured pruning can only be applied to multidimensional "
                         f"tensors. Found tensor of shape {tuple(t.shape)} with {t.dim()} "
                         f"dims")


def _zero_at(mask, flat_indices):
    flat = mask.reshape(-1).clone()
    flat[flat_indices] = 0
    return flat.reshape(mask.shape)


class RandomUnstructured(BasePruningMethod):
    """Prune ``amount`` (a count or a fraction) of the entries, chosen at random."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _validate_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        size = t.numel()
        n = _nparams(self.amount, size)
        _validate_amount(n, size)
        mask = default_mask.clone()
        if n:
            idx = ember.rand(size).topk(n).indices
            mask = _zero_at(mask, idx)
        return mask

    @classmethod
    def apply(cls, module, name, amount):
        return super().apply(module, name, amount=amount)


class L1Unstructured(BasePruningMethod):
    """Prune the ``amount`` entries of smallest absolute value."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _validate_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        size = t.numel()
        n = _nparams(self.amount, size)
        _validate_amount(n, size)
        mask = default_mask.clone()
        if n:
            idx = t.detach().abs().reshape(-1).topk(n, largest=False).indices
            mask = _zero_at(mask, idx)
        return mask

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


def _channel_mask(t, dim, keep):
    """Zeros like ``t`` with ones on the channels ``keep`` (bool or indices) of ``dim``."""
    mask = ember.zeros_like(t)
    slc = tuple(keep if d == dim else slice(None) for d in range(t.dim()))
    mask[slc] = 1
    return mask


class RandomStructured(BasePruningMethod):
    """Prune ``amount`` whole channels along ``dim``, chosen at random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim=-1):
        _validate_amount_init(amount)
        self.amount = amount
        self.dim = dim

    def compute_mask(self, t, default_mask):
        _validate_structured(t)
        size = t.shape[self.dim]
        n = _nparams(self.amount, size)
        _validate_amount(n, size)
        if n == 0:
            return default_mask
        prob = ember.rand(size)
        threshold = prob.kthvalue(n).values
        mask = _channel_mask(t, self.dim % t.dim(), prob > threshold)
        return mask * default_mask.to(dtype=mask.dtype)

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prune the ``amount`` channels along ``dim`` of smallest ``n``-norm."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim=-1):
        _validate_amount_init(amount)
        self.amount = amount
        self.n = n
        self.dim = dim

    def compute_mask(self, t, default_mask):
        _validate_structured(t)
        if not -t.dim() <= self.dim < t.dim():
            raise IndexError(f"Invalid index {self.dim} for tensor of size {tuple(t.shape)}")
        dim = self.dim % t.dim()
        size = t.shape[dim]
        nprune = _nparams(self.amount, size)
        _validate_amount(nprune, size)
        if nprune == 0:
            return default_mask
        dims = [d for d in range(t.dim()) if d != dim]
        norm = t.detach().norm(self.n, dims)
        keep = norm.topk(size - nprune, largest=True).indices
        mask = _channel_mask(t, dim, keep)
        return mask * default_mask.to(dtype=mask.dtype)

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        return super().apply(module, name, amount=amount, n=n, dim=dim,
                             importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prune with a given mask."""

    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = mask

    def compute_mask(self, t, default_mask):
        if tuple(default_mask.shape) != tuple(self.mask.shape):
            raise ValueError(f"mask of shape {tuple(self.mask.shape)} does not match the "
                             f"tensor of shape {tuple(default_mask.shape)}")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module, name, mask):
        return super().apply(module, name, mask=mask)


def identity(module, name):
    """Attach the pruning machinery to ``module.<name>`` without pruning anything."""
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    """Prune ``amount`` random entries of ``module.<name>``."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    """Prune the ``amount`` entries of ``module.<name>`` of smallest magnitude."""
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    """Prune ``amount`` random channels of ``module.<name>`` along ``dim``."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    """Prune the ``amount`` channels along ``dim`` of smallest ``n``-norm."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs):
    """Prune the (module, name) ``parameters`` together, as one vector: e.g. the 20% of
    smallest weights across all of them."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    parameters = list(parameters)
    scores = importance_scores if importance_scores is not None else {}
    with ember.no_grad():
        relevant = parameters_to_vector([scores.get((m, n), getattr(m, n)).detach()
                                         for m, n in parameters])
        default_mask = parameters_to_vector(
            [getattr(m, n + "_mask", ember.ones_like(getattr(m, n))).detach()
             for m, n in parameters])
    container = PruningContainer()
    container._tensor_name = "temp"
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError(f'Only "unstructured" PRUNING_TYPE supported for the '
                        f'`pruning_method`. Found method {pruning_method} of type '
                        f'{method.PRUNING_TYPE}')
    container.add_pruning_method(method)
    final = container.compute_mask(relevant, default_mask)
    pointer = 0
    for m, n in parameters:
        p = getattr(m, n)
        k = p.numel()
        custom_from_mask(m, n, mask=final[pointer:pointer + k].reshape(p.shape))
        pointer += k


def custom_from_mask(module, name, mask):
    """Prune ``module.<name>`` with ``mask`` (zeros are pruned)."""
    CustomFromMask.apply(module, name, mask)
    return module


def remove(module, name):
    """Make the pruning of ``module.<name>`` permanent and drop its ``_orig``/``_mask``."""
    for k, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning "
                     f"can be removed")


def is_pruned(module) -> bool:
    """Whether ``module`` or any submodule has a pruned tensor."""
    for _, sub in module.named_modules():
        for hook in sub._forward_pre_hooks.values():
            if isinstance(hook, BasePruningMethod):
                return True
    return False
