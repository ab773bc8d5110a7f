"""``ember.Tensor``: the Python subclass of the native TensorBase.

TensorBase (Cython) holds the data and the hot methods; this class binds the
op functions of the ``ember._C`` modules as methods and operators, and adds
what needs no speed (printing, pickling helpers, autograd entry points)."""
from __future__ import annotations

from ember._C import core
from ember._C import elementwise as _ew
from ember._tensor_str import tensor_str


class Tensor(core.TensorBase):
    """A multi-dimensional array of one dtype on one device (PyTorch's ``torch.Tensor``)."""

    __module__ = "ember"

    def __new__(cls, *args, device=None):
        # the legacy constructor: Tensor(2, 3) -> uninitialised float32, Tensor(data) -> copy
        if not args:
            data = core.empty(0, device=device)
        elif len(args) == 1 and not isinstance(args[0], int):
            data = core.tensor(args[0], dtype=core.float32, device=device)
        else:
            data = core.empty(*args, dtype=core.float32, device=device)
        return core._make_subclass(cls, data, False)

    def __repr__(self, *, tensor_contents=None) -> str:
        return tensor_str(self)

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        if self.dim() == 0:
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    def __iter__(self):
        if self.dim() == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __contains__(self, element) -> bool:
        return bool((self == element).any().item())

    def __reversed__(self):
        return self.flip(0)

    def __array_wrap__(self, array, context=None, return_scalar=False):
        return core.from_numpy(array)

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        with _no_grad():
            r = self.clone()
        r.requires_grad_(self.requires_grad)
        if self.grad is not None:
            r.grad = self.grad.clone()
        r.__dict__.update({k: v for k, v in self.__dict__.items()})
        memo[id(self)] = r
        return r

    @property
    def data(self):
        return self.detach()

    @data.setter
    def data(self, value):
        self.copy_(value) if tuple(value.shape) == tuple(self.shape) and \
            value.dtype == self.dtype else self._set_data(value)

    def _set_data(self, value):
        raise RuntimeError("Tensor.data assignment with a different shape or dtype is not "
                           "supported; use copy_() or create a new tensor")

    @property
    def grad(self):
        g = self._grad
        if g is None and self._grad_fn is not None and not self.__dict__.get("_retains_grad"):
            import warnings
            warnings.warn("The .grad attribute of a Tensor that is not a leaf Tensor is being "
                          "accessed. Its .grad attribute won't be populated during "
                          "autograd.backward(). If you indeed want the .grad field to be "
                          "populated for a non-leaf Tensor, use .retain_grad() on the non-leaf "
                          "Tensor. If you access the non-leaf Tensor by mistake, make sure you "
                          "access the leaf Tensor instead.", UserWarning, stacklevel=2)
        return g

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, core.TensorBase):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad "
                                f"of type {type(value).__name__}")
            if tuple(value.shape) != tuple(self.shape):
                raise RuntimeError("assigned grad has data of a different size")
            if value.dtype != self.dtype:
                raise RuntimeError("assigned grad has data of a different type")
        self._grad = value

    @staticmethod
    def _make_subclass(cls, data, require_grad=False):
        """An instance of the Tensor subclass ``cls`` sharing ``data``'s memory (as PyTorch's)."""
        return core._make_subclass(cls, data, require_grad)

    def as_subclass(self, cls):
        return core._make_subclass(cls, self, False)

    def dim_order(self):
        st = self.stride()
        return tuple(sorted(range(self.dim()), key=lambda i: -st[i]))

    def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
        return core.tensor(data, dtype=dtype or self.dtype, device=device or self.device,
                           requires_grad=requires_grad)

    def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
        return core.empty(*size, dtype=dtype or self.dtype, device=device or self.device,
                          requires_grad=requires_grad)

    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
        return core.zeros(*size, dtype=dtype or self.dtype, device=device or self.device,
                          requires_grad=requires_grad)

    def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
        return core.ones(*size, dtype=dtype or self.dtype, device=device or self.device,
                         requires_grad=requires_grad)

    def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
        return core.full(size, fill_value, dtype=dtype or self.dtype,
                         device=device or self.device, requires_grad=requires_grad)

    def fill_(self, value):
        if core._mode_active():
            return core._dispatch("fill_", Tensor.fill_, (self, value))
        if self.requires_grad and self.grad_fn is None and core.is_grad_enabled():
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                               "operation.")
        if self.requires_grad and core.is_grad_enabled():
            self.copy_(core.full((), value, dtype=self.dtype) if not isinstance(
                value, core.TensorBase) else value)
            return self
        return core._fill(self, value)

    def zero_(self):
        return self.fill_(0)

    def flatten(self, start_dim=0, end_dim=-1):
        nd = self.dim()
        if nd == 0:
            return self.reshape(1)
        s = start_dim + nd if start_dim < 0 else start_dim
        e = end_dim + nd if end_dim < 0 else end_dim
        if not (0 <= s < nd and 0 <= e < nd):
            raise IndexError(f"flatten: Dimension out of range (expected to be in range of "
                             f"[{-nd}, {nd - 1}], but got "
                             f"{start_dim if not 0 <= s < nd else end_dim})")
        if s > e:
            raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
        if s == e:
            return self
        shape = list(self.shape)
        n = 1
        for d in shape[s:e + 1]:
            n *= d
        return self.reshape(*shape[:s], n, *shape[e + 1:])

    def ravel(self):
        return self.reshape(-1)

    def unflatten(self, dim, sizes):
        nd = self.dim()
        d = dim + nd if dim < 0 else dim
        if not 0 <= d < max(nd, 1):
            raise IndexError(f"unflatten: Dimension out of range (got {dim})")
        shape = list(self.shape)
        return self.view(*shape[:d], *sizes, *shape[d + 1:])

    def view_as(self, other):
        return self.view(*_shape_of(other, "view_as"))

    def reshape_as(self, other):
        return self.reshape(*_shape_of(other, "reshape_as"))

    def unbind(self, dim=0):
        n = self.size(dim)
        return tuple(self.select(dim, i) for i in range(n))

    def split(self, split_size, dim=0):
        size = self.size(dim)
        if isinstance(split_size, int):
            if split_size <= 0 and size > 0:
                raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got "
                                   f"dimension size of {size}")
            sizes = [min(split_size, size - i) for i in range(0, size, max(split_size, 1))] \
                or [0]
        else:
            sizes = list(split_size)
            if sum(sizes) != size:
                raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to "
                                   f"{size} (input tensor's size at dimension {dim}), but got "
                                   f"split_sizes={sizes}")
        out, start = [], 0
        for s in sizes:
            out.append(self.narrow(dim, start, s))
            start += s
        return tuple(out)

    def split_with_sizes(self, split_sizes, dim=0):
        return self.split(list(split_sizes), dim)

    def chunk(self, chunks, dim=0):
        if chunks <= 0:
            raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
        size = self.size(dim)
        step = -(-size // chunks) if size else 0
        if step == 0:
            return tuple(self.narrow(dim, 0, 0) for _ in range(min(chunks, 1) if size else chunks))
        return self.split(step, dim)

    def tensor_split(self, indices_or_sections, dim=0):
        size = self.size(dim)
        if isinstance(indices_or_sections, int):
            n = indices_or_sections
            if n <= 0:
                raise RuntimeError(f"number of sections must be larger than 0, got {n}")
            q, r = divmod(size, n)
            sizes = [q + 1] * r + [q] * (n - r)
            return self.split(sizes, dim)
        idx = [0] + [min(max(i, 0), size) for i in indices_or_sections] + [size]
        return tuple(self.narrow(dim, a, max(b - a, 0)) for a, b in zip(idx[:-1], idx[1:]))

    def movedim(self, source, destination):
        nd = self.dim()
        src = [source] if isinstance(source, int) else list(source)
        dst = [destination] if isinstance(destination, int) else list(destination)
        src = [s % nd if nd else 0 for s in src]
        dst = [d % nd if nd else 0 for d in dst]
        order = [None] * nd
        for s, d in zip(src, dst):
            order[d] = s
        rest = iter([i for i in range(nd) if i not in src])
        order = [o if o is not None else next(rest) for o in order]
        return self.permute(*order)

    moveaxis = movedim

    def __getitem__(self, idx):
        if core._mode_active():
            # one "getitem" op for a mode, whichever path (view or gather) runs it
            return core._dispatch("getitem", _getitem, (self, idx))
        return _getitem(self, idx)

    def __setitem__(self, idx, value):
        if core._mode_active():
            core._dispatch("setitem", _setitem, (self, idx, value))
            return
        _setitem(self, idx, value)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate the gradient of this tensor w.r.t. the graph leaves into their
        ``.grad`` (see ``ember.autograd.backward``)."""
        if gradient is None and inputs is None and _fast_backward[0] is not None:
            _fast_backward[0](self, retain_graph, create_graph)
        else:
            _autograd().backward(self, gradient, retain_graph, create_graph, None, inputs)

    def register_hook(self, hook):
        from ember.autograd import _hooks
        return _hooks.register_tensor_hook(self, hook)

    def register_post_accumulate_grad_hook(self, hook):
        from ember.autograd import _hooks
        return _hooks.register_post_accumulate_grad_hook(self, hook)

    def retain_grad(self):
        from ember.autograd import _hooks
        _hooks.retain_grad(self)

    @property
    def retains_grad(self):
        return bool(self.__dict__.get("_retains_grad", False))


def _shape_of(other, op):
    if not isinstance(other, core.TensorBase):
        raise TypeError(f"{op}(): argument 'other' must be Tensor, not {type(other).__name__}")
    return other.shape


def _no_grad():
    from ember.autograd.grad_mode import no_grad
    return no_grad()


_fast_backward = [None]   # set by ember.autograd: loss.backward() without arguments


def _autograd():
    import sys
    return sys.modules.get("ember.autograd") or __import__("ember.autograd",
                                                           fromlist=["_"])


def _getitem(self, idx):
    r = core._basic_getitem(self, idx)
    if r is None:
        return _index_getitem(self, idx)
    return r


def _setitem(self, idx, value):
    # plain views (ints, slices, None, ...) are written in place here when
    # autograd has nothing to record; everything else goes to ember._C.index
    if not (core.is_grad_enabled() and (self.requires_grad or getattr(
            value, "requires_grad", False))):
        v = core._basic_getitem(self, idx)
        if v is not None:
            if isinstance(value, core.TensorBase):
                # like PyTorch, leading size-1 dims of the value are dropped
                while value.dim() > v.dim() and value.shape[0] == 1:
                    value = value[0]
                v.copy_(value)
            else:
                v.fill_(value)
            return
    _index_setitem(self, idx, value)


def _index_getitem(t, idx):
    from ember._C import index
    return index.getitem(t, idx)


def _index_setitem(t, idx, value):
    from ember._C import index
    return index.setitem(t, idx, value)


# ---- methods and operators bound from the native op modules -----------------

_ALIASES = {"multiply": "mul", "subtract": "sub", "divide": "div", "negative": "neg",
            "absolute": "abs", "arccos": "acos", "arcsin": "asin", "arctan": "atan",
            "arctan2": "atan2", "greater": "gt", "greater_equal": "ge", "less": "lt",
            "less_equal": "le", "not_equal": "ne", "multiply_": "mul_", "subtract_": "sub_",
            "divide_": "div_", "negative_": "neg_", "absolute_": "abs_", "fix": "trunc",
            "arccosh": "acosh", "arcsinh": "asinh", "arctanh": "atanh"}
_OPS = {
    "__add__": _ew.add, "__radd__": _ew.add, "__sub__": _ew.sub, "__rsub__": _ew.rsub,
    "__mul__": _ew.mul, "__rmul__": _ew.mul, "__truediv__": _ew.div,
    "__floordiv__": _ew.floor_divide, "__mod__": _ew.remainder, "__pow__": _ew.pow,
    "__and__": _ew.bitwise_and, "__rand__": _ew.bitwise_and, "__or__": _ew.bitwise_or,
    "__ror__": _ew.bitwise_or, "__xor__": _ew.bitwise_xor, "__rxor__": _ew.bitwise_xor,
    "__lshift__": _ew.bitwise_left_shift, "__rshift__": _ew.bitwise_right_shift,
    "__lt__": _ew.lt, "__le__": _ew.le, "__gt__": _ew.gt, "__ge__": _ew.ge,
    "__iadd__": _ew.add_, "__isub__": _ew.sub_, "__imul__": _ew.mul_, "__itruediv__": _ew.div_,
    "__ifloordiv__": _ew.floor_divide_, "__imod__": _ew.remainder_, "__ipow__": _ew.pow_,
    "__iand__": _ew.bitwise_and_, "__ior__": _ew.bitwise_or_, "__ixor__": _ew.bitwise_xor_,
    "__ilshift__": _ew.bitwise_left_shift_, "__irshift__": _ew.bitwise_right_shift_,
    "__neg__": _ew.neg, "__abs__": _ew.abs, "__pos__": _ew.positive,
}


def _bind(cls, module, names):
    for n in names:
        setattr(cls, n, getattr(module, n))


# Each native op module lists the names it binds as Tensor methods in
# __ember_methods__; adding a module here is the only edit a new module needs.
_OP_MODULES = ("elementwise", "linalg", "index", "reduce", "random", "creation")
for _m in _OP_MODULES:
    _mod = __import__(f"ember._C.{_m}", fromlist=["_"])
    _bind(Tensor, _mod, _mod.__ember_methods__)
for _a, _n in _ALIASES.items():
    setattr(Tensor, _a, getattr(Tensor, _n))
for _k, _f in _OPS.items():
    setattr(Tensor, _k, _f)


def _rtruediv(self, other):
    return _ew.div(other, self)


def _rfloordiv(self, other):
    return _ew.floor_divide(other, self)


def _rmod(self, other):
    return _ew.remainder(other, self)


def _rpow(self, other):
    return _ew.pow(other, self)


def _rlshift(self, other):
    return _ew.bitwise_left_shift(other, self)


def _rrshift(self, other):
    return _ew.bitwise_right_shift(other, self)


def _eq(self, other):
    if not isinstance(other, core.TensorBase) and core._scalar_like(other) is False:
        return NotImplemented
    return _ew.eq(self, other)


def _ne(self, other):
    if not isinstance(other, core.TensorBase) and core._scalar_like(other) is False:
        return NotImplemented
    return _ew.ne(self, other)


def _invert(self):
    return _ew.logical_not(self) if self.dtype is core.bool_ else _ew.bitwise_not(self)


Tensor.__rtruediv__ = _rtruediv
Tensor.__rfloordiv__ = _rfloordiv
Tensor.__rmod__ = _rmod
Tensor.__rpow__ = _rpow
Tensor.__rlshift__ = _rlshift
Tensor.__rrshift__ = _rrshift
Tensor.__eq__ = _eq
Tensor.__ne__ = _ne
Tensor.__invert__ = _invert
Tensor.__hash__ = core.TensorBase.__hash__
Tensor.gelu = _ew.gelu

core._set_tensor_class(Tensor)
