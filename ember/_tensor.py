"""``ember.Tensor``: the Python subclass of the native TensorBase.

TensorBase (Cython) holds the data and the hot methods; this class binds the
op functions of the ``ember._C`` modules as methods and operators, and adds
what needs no speed (printing, pickling helpers, autograd entry points)."""
from __future__ import annotations

from ember import _ops
from ember._C import core
from ember._C import elementwise as _ew
from ember._C import matmul as _la
from ember._C import special as _sp
from ember._check import _check, _check_index
from ember._memory_format import preserve_format, strided
from ember._tensor_str import tensor_str

# Tensor.polygamma_(n): the function's argument order is (n, input)
_POLYGAMMA_ = _ops._composed_inplace(lambda t, n: _sp.polygamma(n, t), "polygamma")


def _check_tensor(v, op: str, arg: str) -> None:
    if not isinstance(v, core.TensorBase):
        raise TypeError(f"{op}(): argument '{arg}' must be Tensor, not {type(v).__name__}")


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

    @property
    def real(self):
        """The real part (a view for a complex tensor; ``self`` for a real one)."""
        from ember._C import cplx
        return cplx.real(self)

    @real.setter
    def real(self, value):
        from ember._C import cplx
        cplx.real(self).copy_(value)

    @property
    def imag(self):
        """The imaginary part of a complex tensor (a view)."""
        from ember._C import cplx
        return cplx.imag(self)

    @imag.setter
    def imag(self, value):
        from ember._C import cplx
        cplx.imag(self).copy_(value)

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

    # ---- in-place metadata: views of self adopted by self ----------------------
    def _view_(self, view, op):
        if self.requires_grad and core.is_grad_enabled():
            if self.grad_fn is None:
                raise RuntimeError(f"{op}: a leaf Variable that requires grad is being used "
                                   f"in an in-place operation.")
            self._grad_fn = view.grad_fn     # self now is the view; its node leads back
        return self._adopt(view)

    def squeeze_(self, dim=None):
        return self._view_(self.squeeze(dim) if dim is not None else self.squeeze(), "squeeze_")

    def unsqueeze_(self, dim):
        return self._view_(self.unsqueeze(dim), "unsqueeze_")

    def transpose_(self, dim0, dim1):
        return self._view_(self.transpose(dim0, dim1), "transpose_")

    swapaxes_ = swapdims_ = transpose_

    def t_(self):
        return self._view_(self.t(), "t_")

    def as_strided_(self, size, stride, storage_offset=None):
        return self._view_(self.as_strided(size, stride, storage_offset), "as_strided_")

    def resize_(self, *sizes, memory_format=None):
        """Give self the shape ``sizes``, dense in ``memory_format`` (row-major by default),
        keeping its storage when it is large enough and otherwise moving its elements to a
        larger one (new elements are uninitialised)."""
        if self.requires_grad:
            raise RuntimeError("cannot resize variables that require grad")
        if memory_format is preserve_format:
            raise RuntimeError("Unsupported memory format Preserve")
        new = core.empty(*sizes, dtype=self.dtype, device=self.device,
                         memory_format=memory_format)
        n, off = new.numel(), self.storage_offset()
        avail = self.untyped_storage().nbytes() // self.element_size() - off
        if n <= avail:      # the storage is large enough: a dense window of it
            return self._adopt(self.as_strided(tuple(new.shape), new.stride(), off))
        if avail > 0:       # move every element the storage held from the offset on
            new.as_strided((avail,), (1,), 0).copy_(self.as_strided((avail,), (1,), off))
        return self._adopt(new)

    def resize_as_(self, the_template, memory_format=None):
        if memory_format is preserve_format:
            from ember._memory_format import suggest
            memory_format = suggest(the_template)
        return self.resize_(*the_template.shape, memory_format=memory_format)

    @property
    def layout(self):
        """``ember.strided``: every ember tensor is strided."""
        return strided

    def cfloat(self):
        """``self.to(ember.cfloat)``."""
        return self.to(core.complex64)

    def cdouble(self):
        """``self.to(ember.cdouble)``."""
        return self.to(core.complex128)

    def set_(self, source=None, storage_offset=0, size=None, stride=None):
        """Make self share ``source``'s memory (all of it, or the strided window
        ``storage_offset``/``size``/``stride`` of it); no source: an empty tensor."""
        if source is None:
            return self._adopt(core.empty(0, dtype=self.dtype, device=self.device))
        if not isinstance(source, core.TensorBase):
            raise TypeError(f"set_(): argument 'source' must be Tensor, not "
                            f"{type(source).__name__}")
        if source.dtype != self.dtype:
            raise RuntimeError(f"Could not set tensor of type {self.dtype} to a tensor of type "
                               f"{source.dtype}")
        if size is not None:
            stride = stride if stride is not None else core.empty(*size).stride()
            source = source.as_strided(size, stride, storage_offset)
        return self._adopt(source)

    def is_set_to(self, tensor):
        """Whether self and ``tensor`` view the same memory with the same geometry."""
        if not isinstance(tensor, core.TensorBase):
            raise TypeError(f"is_set_to(): argument 'tensor' (position 1) must be Tensor, not "
                            f"{type(tensor).__name__}")
        return (self.untyped_storage().data_ptr() == tensor.untyped_storage().data_ptr()
                and self.storage_offset() == tensor.storage_offset()
                and tuple(self.shape) == tuple(tensor.shape)
                and self.stride() == tensor.stride())

    def fill_diagonal_(self, fill_value, wrap=False):
        """Fill the main diagonal (all dims equal for more than 2 dims; a tall matrix's
        diagonal restarts every ``cols + 1`` rows when ``wrap``)."""
        nd = self.dim()
        if nd < 2:
            raise RuntimeError("dimensions must larger than 1")
        if nd > 2 and len(set(self.shape)) != 1:
            raise RuntimeError("all dimensions of input must be of equal length")
        n = min(self.shape)
        if nd == 2 and wrap and self.shape[0] > self.shape[1] + 1:
            # the flat positions k * (cols + 1) that fall inside the matrix
            n = (self.numel() + self.shape[1]) // (self.shape[1] + 1)
        if self.requires_grad and core.is_grad_enabled():
            mask = core.zeros(self.shape, dtype=core.bool_)
            mask.as_strided((n,), (sum(mask.stride()),), 0).fill_(True)
            return self.copy_(_ew.where(mask, fill_value, self))
        with _no_grad():
            self.as_strided((n,), (sum(self.stride()),), self.storage_offset()).fill_(
                fill_value)
        return self

    def sum_to_size(self, *size):
        """Sum self down to ``size`` (to which self must be broadcastable)."""
        size = tuple(size[0]) if len(size) == 1 and not isinstance(size[0], int) else size
        if len(size) > self.dim() or any(
                s != 1 and s != d for s, d in zip(size[::-1], self.shape[::-1])):
            raise RuntimeError(f"size {{{', '.join(map(str, size))}}} is not expandable to "
                               f"size {{{', '.join(map(str, self.shape))}}}.")
        lead = self.dim() - len(size)
        r = self.sum(tuple(range(lead))) if lead else self
        dims = tuple(i for i, s in enumerate(size) if s == 1 and r.shape[i] != 1)
        return r.sum(dims, keepdim=True) if dims else r

    def new_empty_strided(self, size, stride, *, dtype=None, device=None,
                          requires_grad=False):
        from ember._C.creation import empty_strided
        return empty_strided(size, stride, dtype=dtype or self.dtype,
                             device=device or self.device, requires_grad=requires_grad)

    def new(self, *args, **kwargs):
        """The legacy constructor with self's dtype: ``new(2, 3)`` uninitialised,
        ``new(data)`` a copy of data, ``new()`` empty."""
        if len(args) == 1 and not isinstance(args[0], int):
            return core.tensor(args[0], dtype=self.dtype, device=self.device)
        return core.empty(*args, dtype=self.dtype, device=self.device)

    def apply_(self, callable):
        """Apply a Python function to every element, in place (slow, as torch's)."""
        vals = self.reshape(-1).tolist()
        with _no_grad():
            self.copy_(core.tensor([callable(v) for v in vals], dtype=self.dtype)
                       .reshape(self.shape))
        return self

    def map_(self, tensor, callable):
        """``self[i] = callable(self[i], tensor[i])`` with ``tensor`` broadcast, in place."""
        if tensor.dtype != self.dtype:
            raise TypeError(f"map_: expected {self.type()} for 'other' (got {tensor.type()})")
        core._check_written(self, (tensor,), "map_")
        other = tensor.expand_as(self).reshape(-1).tolist()
        vals = self.reshape(-1).tolist()
        with _no_grad():
            self.copy_(core.tensor([callable(a, b) for a, b in zip(vals, other)],
                                   dtype=self.dtype).reshape(self.shape))
        return self

    def map2_(self, x, y, callable):
        """``self[i] = callable(self[i], x[i], y[i])`` with ``x``, ``y`` broadcast, in place."""
        for name, o in (("x", x), ("y", y)):
            _check_tensor(o, "map2_", name)
            if o.dtype != self.dtype:
                raise TypeError(f"map2_: expected {self.type()} for '{name}' (got {o.type()})")
        core._check_written(self, (x, y), "map2_")
        xs, ys = (o.expand_as(self).reshape(-1).tolist() for o in (x, y))
        with _no_grad():
            self.copy_(core.tensor([callable(a, b, c) for a, b, c in
                                    zip(self.reshape(-1).tolist(), xs, ys)],
                                   dtype=self.dtype).reshape(self.shape))
        return self

    def resize(self, *sizes):
        """Deprecated out-of-place resize: self's elements in the shape ``sizes`` (same
        number of elements; a view when self is contiguous)."""
        import warnings
        warnings.warn("non-inplace resize is deprecated", stacklevel=2)
        sizes = tuple(sizes[0]) if len(sizes) == 1 and not isinstance(sizes[0], int) else sizes
        n = 1
        for s in sizes:
            n *= s
        if n != self.numel():
            raise RuntimeError(f"requested resize to {'x'.join(map(str, sizes))} ({n} elements "
                               f"in total), but the given tensor has a size of "
                               f"{'x'.join(map(str, self.shape))} ({self.numel()} elements). "
                               f"autograd's resize can only change the shape of a given tensor, "
                               f"while preserving the number of elements. ")
        return self.reshape(sizes)

    def resize_as(self, tensor):
        """Deprecated out-of-place ``resize`` to ``tensor``'s shape."""
        import warnings
        warnings.warn("non-inplace resize_as is deprecated", stacklevel=2)
        _check_tensor(tensor, "resize_as", "the_template")
        return self.reshape(tuple(tensor.shape)) if tensor.numel() == self.numel() else \
            self.resize(*tensor.shape)

    # ---- storages and shared memory (ember._storage) -------------------------------
    def storage(self):
        """self's memory as a ``TypedStorage`` of self's dtype (deprecated in PyTorch:
        ``untyped_storage()`` is the byte buffer itself)."""
        from ember import _storage
        _storage._warn_typed_storage_removal()
        return _storage.TypedStorage(wrap_storage=self.untyped_storage(), dtype=self.dtype,
                                     _internal=True)

    def storage_type(self):
        """The legacy typed storage class of self's dtype (``ember.FloatStorage`` & co.)."""
        from ember import _storage
        return _storage.storage_class(self.dtype)

    def is_shared(self):
        """Whether self's storage lives in shared memory (``share_memory_``)."""
        from ember import _storage
        return _storage._is_shared(self.untyped_storage())

    def share_memory_(self):
        """Move self's storage to shared memory, in place: forked processes (DataLoader
        workers) then write to the same memory, and ``multiprocessing`` queues send it
        without copying. No-op when already shared or not on the CPU."""
        from ember import _storage
        _storage._share_memory_(self.untyped_storage())
        return self

    def type(self, dtype=None, non_blocking=False, **kwargs):
        """self's type name (``"ember.FloatTensor"``) without ``dtype``; else self cast to
        ``dtype``: an ember dtype, a legacy class (``ember.LongTensor``) or its name."""
        if dtype is None:
            return core.TensorBase.type(self)
        from ember._legacy_tensors import dtype_of
        named = dtype_of(dtype)
        return core.TensorBase.type(self, named if named is not None else dtype)

    def const_data_ptr(self):
        """The address of self's first element (``data_ptr`` for read-only use)."""
        return self.data_ptr()

    def is_distributed(self):
        """False: ember tensors are never distributed (sharded) objects."""
        return False

    def hardshrink(self, lambd=0.5):
        from ember.nn.functional import hardshrink
        return hardshrink(self, lambd)

    def prelu(self, weight):
        from ember.nn.functional import prelu
        return prelu(self, weight)

    def is_pinned(self, device=None):
        """Whether this CPU tensor lives in page-locked memory (from :meth:`pin_memory`)."""
        owner = self.untyped_storage()._owner
        return type(owner).__name__ == "PinnedBlock" and owner.__module__ == "ember.cuda._kernels"

    def pin_memory(self, device=None):
        """A copy in page-locked host memory, which CUDA copies read asynchronously
        (``.to("cuda", non_blocking=True)``).  Without a usable GPU it refuses, as torch."""
        from ember.cuda import _kernels
        try:
            _kernels.backend()
        except RuntimeError:
            raise RuntimeError("Cannot access accelerator device when none is available.") \
                from None
        if self.is_pinned():
            return self
        from ember.cuda._dispatch import pin_memory
        return pin_memory(self)

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

    def where(self, condition, other):
        """``self`` where ``condition`` holds, else ``other`` (torch's argument order:
        the tensor is the values, unlike ``ember.where(condition, input, other)``)."""
        return _ew.where(condition, self, other)

    def polygamma(self, n):
        """The n-th derivative of digamma of ``self`` (torch's method order: ``n`` only)."""
        return _sp.polygamma(n, self)

    def polygamma_(self, n):
        return _POLYGAMMA_(self, n)

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
        _check(len(src) == len(dst), lambda: (
            f"movedim: Invalid source or destination dims: source ({src} dims) should contain "
            f"the same number of dims as destination ({dst} dims)"))
        src = [_wrap_dim(s, nd) for s in src]
        dst = [_wrap_dim(d, nd) for d in dst]
        for name, ds in (("source", src), ("destination", dst)):
            _check(len(set(ds)) == len(ds), lambda: f"movedim: repeated dim in `{name}` ({ds})")
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
        if core._mode_active() and _capturing():
            # inside ember.compile: an eager step between the graphs (tensor args only)
            from ember.compiler import _eager_step
            kw = {k: v for k, v in (("gradient", gradient), ("retain_graph", retain_graph),
                                    ("create_graph", create_graph), ("inputs", inputs))
                  if v is not None and v is not False}
            _eager_step("backward", Tensor.backward, self, **kw)
            return
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


def _wrap_dim(d, ndim):
    """d in [-ndim, ndim) (a 0-d tensor takes 0 and -1) as a non-negative dim."""
    n = max(ndim, 1)
    _check_index(-n <= d < n, lambda: (
        f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})"))
    return d % n


def _shape_of(other, op):
    if not isinstance(other, core.TensorBase):
        raise TypeError(f"{op}(): argument 'other' must be Tensor, not {type(other).__name__}")
    return other.shape


def _no_grad():
    from ember.autograd.grad_mode import no_grad
    return no_grad()


def _capturing():
    """Whether ember.compile is capturing on this thread (never imports the compiler)."""
    import sys
    comp = sys.modules.get("ember.compiler")
    return comp is not None and comp._capturing_here()


_fast_backward = [None]   # set by ember.autograd: loss.backward() without arguments


def _autograd():
    # imported on first use: ember.autograd imports this module
    from ember import autograd
    return autograd


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
    "__matmul__": _la.matmul, "__rmatmul__": _la.__rmatmul__,
}


# every declared op variant (function, method, in-place, aliases): ember/_ops.py
FUNCTIONS = _ops.bind(Tensor)
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

core._set_tensor_class(Tensor)
