"""Storages as PyTorch users see them: ``UntypedStorage`` (the native byte buffer every
tensor views), ``TypedStorage`` and the legacy ``FloatStorage`` & co. that
``Tensor.storage()`` returns, shared memory (``share_memory_``) and ``from_file``.

Shared memory is an anonymous memory file mapped ``MAP_SHARED``: forked processes
(DataLoader workers) see one another's writes, and a shared tensor sent through a
``multiprocessing`` queue travels as its file descriptor, not as a copy of its bytes
(PyTorch's ``file_descriptor`` strategy)."""
from __future__ import annotations

import mmap
import os
import warnings

from ember._C import core

__all__ = ["UntypedStorage", "TypedStorage", "from_file", "BoolStorage", "ByteStorage",
           "CharStorage", "ShortStorage", "IntStorage", "LongStorage", "HalfStorage",
           "BFloat16Storage", "FloatStorage", "DoubleStorage"]

UntypedStorage = core.Storage     # the native class; its Python API is below


def _bytes(s):
    """A uint8 tensor over every byte of the storage ``s``."""
    return core._from_storage(s, (s.nbytes(),), (1,), core.uint8, 0)


def _elements(s, dtype):
    n = s.nbytes() // dtype.itemsize
    return core._from_storage(s, (n,), (1,), dtype, 0)


def _new_untyped(nbytes: int, device=None):
    import ember
    return ember.empty(int(nbytes), dtype=core.uint8, device=device).untyped_storage()


# ---- UntypedStorage's Python API (the native class forwards here) ---------------------
def init_untyped(s, args, device):
    """``UntypedStorage(nbytes)`` (uninitialised) or ``UntypedStorage(sequence of byte
    values)``."""
    if len(args) > 1:
        raise TypeError(f"UntypedStorage(): expected at most one argument, got {len(args)}")
    arg = args[0] if args else 0
    if isinstance(arg, int) and not isinstance(arg, bool):
        if arg < 0:
            raise RuntimeError(f"UntypedStorage(): size must be non-negative, got {arg}")
        s._take(_new_untyped(arg, device))
        return
    import ember
    data = ember.tensor(list(arg), dtype=core.uint8, device=device)
    s._take(data.untyped_storage())


def _index(n, idx, what):
    if idx < -n or idx >= n:
        raise IndexError(f"{what}: index {idx} out of range for storage of size {n}")
    return idx % n


def getitem(s, idx):
    if isinstance(idx, slice):
        start, stop, step = idx.indices(s.nbytes())
        if step != 1:
            raise RuntimeError("slices with steps are not supported by storages")
        n = max(stop - start, 0)
        return core._wrap_memory(s.data_ptr() + start, n, s, s.device)
    return _bytes(s)[_index(s.nbytes(), idx, "UntypedStorage")].item()


def setitem(s, idx, value):
    b = _bytes(s)
    if not isinstance(idx, slice):
        idx = _index(s.nbytes(), idx, "UntypedStorage")
    b[idx] = value


def _is_shared(s) -> bool:
    return isinstance(s._owner, _ShmBlock) or (isinstance(s._owner, core.Storage)
                                               and _is_shared(s._owner))


def _share_memory_(s):
    """Move the storage's bytes into shared memory, in place (every view follows)."""
    if _is_shared(s) or s.device.type != "cpu":
        return s
    block = _ShmBlock.create(s.nbytes())
    new = block.storage()
    _bytes(new).copy_(_bytes(s))
    s._take(new)
    return s


def _untyped_method(s, name):
    methods = {
        "tolist": lambda: _bytes(s).tolist(),
        "element_size": lambda: 1,
        "is_shared": lambda: _is_shared(s),
        "share_memory_": lambda: _share_memory_(s),
        "fill_": lambda value: (_bytes(s).fill_(value), s)[1],
        "copy_": lambda src, non_blocking=False: (_bytes(s).copy_(_bytes(src)), s)[1],
        "clone": lambda: _bytes(s).clone().untyped_storage(),
        "cpu": lambda: s if s.device.type == "cpu" else _bytes(s).cpu().untyped_storage(),
        "type": lambda dtype=None, non_blocking=False: "ember.UntypedStorage",
        "untyped": lambda: s,
        "is_pinned": lambda device="cuda": False,
        "byteswap": lambda dtype: _byteswap(s, dtype),
    }
    values = {"dtype": core.uint8, "is_cuda": s.device.type == "cuda", "is_sparse": False,
              "filename": s._owner.filename if isinstance(s._owner, _ShmBlock) else None}
    if name in methods:
        return methods[name]
    if name in values:
        return values[name]
    raise AttributeError(f"'ember.UntypedStorage' object has no attribute {name!r}")


method = _untyped_method


def reduce_untyped(s):
    """Pickle an UntypedStorage as a copy of its bytes (and its device)."""
    data = bytes(_bytes(s).cpu().numpy()) if s.nbytes() else b""
    return (_untyped_from_bytes, (data, str(s.device)))


def _untyped_from_bytes(data, device="cpu"):
    if not data:
        return _new_untyped(0, device)
    import ember
    t = ember.frombuffer(bytearray(data), dtype=core.uint8)
    return (t if device == "cpu" else t.to(device)).untyped_storage()


def _byteswap(s, dtype):
    n = dtype.itemsize
    if n > 1:
        b = _bytes(s).reshape(-1, n)
        b.copy_(b.flip(1))
    return None


# ---- shared memory --------------------------------------------------------------
class _ShmBlock:
    """One mapping of a shared memory file (kept open so it can be sent to other
    processes); the storages over it keep it alive."""

    __slots__ = ("fd", "mm", "nbytes", "filename", "_export", "__weakref__")

    def __init__(self, fd: int, nbytes: int, filename=None, shared=True):
        import ctypes
        self.fd, self.nbytes, self.filename = fd, nbytes, filename
        flags = mmap.MAP_SHARED if shared else mmap.MAP_PRIVATE
        self.mm = mmap.mmap(fd, max(nbytes, 1), flags, mmap.PROT_READ | mmap.PROT_WRITE)
        self._export = ctypes.c_char.from_buffer(self.mm)   # pins the mapping's address

    @classmethod
    def create(cls, nbytes: int) -> _ShmBlock:
        if hasattr(os, "memfd_create"):
            fd = os.memfd_create("ember_shm", os.MFD_CLOEXEC)
        else:   # an unlinked file in shared memory: no name survives the process
            import tempfile
            fd, path = tempfile.mkstemp(prefix="ember_shm_",
                                        dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
            os.unlink(path)
        os.ftruncate(fd, max(nbytes, 1))
        return cls(fd, nbytes)

    def storage(self):
        import ctypes
        return core._wrap_memory(ctypes.addressof(self._export), self.nbytes, self)

    def __del__(self):
        try:
            self._export = None
            self.mm.close()
        except (BufferError, AttributeError):
            pass
        if getattr(self, "fd", -1) >= 0:
            os.close(self.fd)


def _rebuild_shared_storage(df, nbytes):
    return _ShmBlock(df.detach(), nbytes).storage()


def _shared_root(s):
    while not isinstance(s._owner, _ShmBlock):
        s = s._owner
    return s


def _reduce_storage(s):
    if not _is_shared(s):
        return s.__reduce_ex__(2)
    from multiprocessing.reduction import DupFd
    root = _shared_root(s)
    block = root._owner
    if root is not s:   # a slice of a shared storage: rebuild the block, then slice
        start = s.data_ptr() - root.data_ptr()
        return (_slice_storage, (_reduce_storage(root), start, s.nbytes()))
    return (_rebuild_shared_storage, (DupFd(block.fd), block.nbytes))


def _slice_storage(reduced, start, n):
    fn, args = reduced
    return fn(*args)[start:start + n]


def _rebuild_shared_tensor(storage_reduced, dtype, shape, stride, offset, requires_grad):
    fn, args = storage_reduced
    t = core._from_storage(fn(*args), shape, stride, dtype, offset)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _reduce_tensor(t):
    s = t.untyped_storage()
    if not _is_shared(s) or t.grad_fn is not None:
        return t.__reduce_ex__(2)
    return (_rebuild_shared_tensor, (_reduce_storage(s), t.dtype, tuple(t.shape), t.stride(),
                                     t.storage_offset(), t.requires_grad))


def _register_reducers():
    """Shared tensors and storages cross ``multiprocessing`` queues as file descriptors."""
    from multiprocessing.reduction import ForkingPickler

    import ember
    ForkingPickler.register(ember.Tensor, _reduce_tensor)
    ForkingPickler.register(core.Storage, _reduce_storage)
    try:
        from ember.nn.parameter import Parameter
    except ImportError:     # a build without nn
        return
    ForkingPickler.register(Parameter, _reduce_tensor)


_register_reducers()


# ---- TypedStorage and the legacy typed classes -------------------------------------
_warned = [False]


def _warn_typed_storage_removal():
    if not _warned[0]:
        _warned[0] = True
        warnings.warn("TypedStorage is deprecated. It will be removed in the future and "
                      "UntypedStorage will be the only storage class. This should only matter "
                      "to you if you are using storages directly.  To access UntypedStorage "
                      "directly, use tensor.untyped_storage() instead of tensor.storage()",
                      UserWarning, stacklevel=3)


class TypedStorage:
    """A storage of ``dtype`` elements: a typed window onto an :class:`UntypedStorage`
    (what ``Tensor.storage()`` returns; deprecated in PyTorch in favour of
    ``Tensor.untyped_storage()``)."""

    __module__ = "ember"
    is_sparse = False

    def __init__(self, *args, wrap_storage=None, dtype=None, device=None, _internal=False):
        if not _internal:
            _warn_typed_storage_removal()
        dtype = dtype or getattr(type(self), "_legacy_dtype", None) or _default_dtype()
        self._dtype = dtype
        if wrap_storage is not None:
            if args:
                raise RuntimeError("TypedStorage(): no positional arguments are allowed with "
                                   "wrap_storage")
            if not isinstance(wrap_storage, core.Storage):
                raise TypeError(f"TypedStorage(): argument 'wrap_storage' must be "
                                f"UntypedStorage, not {type(wrap_storage).__name__}")
            self._untyped_storage = wrap_storage
            return
        if len(args) > 1:
            raise TypeError(f"TypedStorage(): expected at most one positional argument, got "
                            f"{len(args)}")
        arg = args[0] if args else 0
        import ember
        if isinstance(arg, int) and not isinstance(arg, bool):
            t = ember.empty(arg, dtype=dtype, device=device)
        else:
            t = ember.tensor(list(arg), dtype=dtype, device=device)
        self._untyped_storage = t.untyped_storage()

    @property
    def dtype(self):
        return self._dtype

    @property
    def device(self):
        return self._untyped_storage.device

    @property
    def is_cuda(self):
        return self.device.type == "cuda"

    @property
    def filename(self):
        return self._untyped_storage.filename

    def _tensor(self):
        return _elements(self._untyped_storage, self._dtype)

    def size(self) -> int:
        return self._untyped_storage.nbytes() // self._dtype.itemsize

    __len__ = size

    def nbytes(self) -> int:
        return self._untyped_storage.nbytes()

    def element_size(self) -> int:
        return self._dtype.itemsize

    def data_ptr(self) -> int:
        return self._untyped_storage.data_ptr()

    def untyped(self):
        return self._untyped_storage

    def _new_wrapped_storage(self, untyped):
        return type(self)(wrap_storage=untyped, dtype=self._dtype, _internal=True) \
            if type(self) is TypedStorage else \
            TypedStorage(wrap_storage=untyped, dtype=self._dtype, _internal=True)

    def __getitem__(self, idx):
        n = self.size()
        if isinstance(idx, slice):
            start, stop, step = idx.indices(n)
            if step != 1:
                raise RuntimeError("slices with steps are not supported by storages")
            k = self._dtype.itemsize
            return self._new_wrapped_storage(self._untyped_storage[start * k:max(stop, start)
                                                                   * k])
        return self._tensor()[_index(n, idx, "TypedStorage")].item()

    def __setitem__(self, idx, value):
        if not isinstance(idx, slice):
            idx = _index(self.size(), idx, "TypedStorage")
        self._tensor()[idx] = value

    def __iter__(self):
        return iter(self.tolist())

    def tolist(self):
        return self._tensor().tolist()

    def fill_(self, value):
        self._tensor().fill_(value)
        return self

    def copy_(self, source, non_blocking=False):
        src = source._tensor() if isinstance(source, TypedStorage) else \
            _elements(source, self._dtype)
        self._tensor().copy_(src)
        return self

    def clone(self):
        return self._new_wrapped_storage(self._tensor().clone().untyped_storage())

    def cpu(self):
        return self if self.device.type == "cpu" else \
            self._new_wrapped_storage(self._tensor().cpu().untyped_storage())

    def is_shared(self) -> bool:
        return _is_shared(self._untyped_storage)

    def share_memory_(self):
        _share_memory_(self._untyped_storage)
        return self

    def is_pinned(self, device="cuda") -> bool:
        return False

    def type(self, dtype=None, non_blocking=False):
        if dtype is None:
            return f"ember.{_LEGACY_NAMES.get(self._dtype, 'TypedStorage')}"
        raise RuntimeError("TypedStorage.type(dtype): convert the tensor instead "
                           "(tensor.to(dtype).storage())")

    def pickle_storage_type(self) -> str:
        return _LEGACY_NAMES[self._dtype]

    def __reduce__(self):
        return (_rebuild_typed, (self._tensor().clone(), ))

    def __repr__(self):
        body = "\n".join(f" {v}" for v in self.tolist())
        return (f"{body}\n[{type(self).__module__}.{type(self).__name__}(dtype={self._dtype}, "
                f"device={self.device}) of size {self.size()}]").lstrip("\n")

    @classmethod
    def _new_shared(cls, size, *, device=None):
        s = cls(size, device=device) if cls is not TypedStorage else \
            TypedStorage(size, dtype=_default_dtype(), device=device, _internal=True)
        return s.share_memory_()

    @classmethod
    def from_file(cls, filename, shared=False, size=0):
        dtype = getattr(cls, "_legacy_dtype", None) or _default_dtype()
        return TypedStorage(wrap_storage=_map_file(filename, shared, size * dtype.itemsize,
                                                   "from_file"), dtype=dtype, _internal=True)


def _rebuild_typed(t):
    return TypedStorage(wrap_storage=t.untyped_storage(), dtype=t.dtype, _internal=True)


def _default_dtype():
    import ember
    return ember.get_default_dtype()


class _LegacyStorage(TypedStorage):
    """``FloatStorage(size)`` / ``FloatStorage(sequence)``: a TypedStorage of one dtype."""

    def __init__(self, *args, wrap_storage=None, dtype=None, device=None, _internal=False):
        super().__init__(*args, wrap_storage=wrap_storage, dtype=type(self)._legacy_dtype,
                         device=device, _internal=_internal)


_LEGACY_NAMES = {}


def _legacy(name, dtype):
    cls = type(name, (_LegacyStorage,), {"_legacy_dtype": dtype, "__module__": "ember",
                                          "__doc__": f"A TypedStorage of {dtype}."})
    _LEGACY_NAMES[dtype] = name
    return cls


BoolStorage = _legacy("BoolStorage", core.bool_)
ByteStorage = _legacy("ByteStorage", core.uint8)
CharStorage = _legacy("CharStorage", core.int8)
ShortStorage = _legacy("ShortStorage", core.int16)
IntStorage = _legacy("IntStorage", core.int32)
LongStorage = _legacy("LongStorage", core.int64)
HalfStorage = _legacy("HalfStorage", core.float16)
BFloat16Storage = _legacy("BFloat16Storage", core.bfloat16)
FloatStorage = _legacy("FloatStorage", core.float32)
DoubleStorage = _legacy("DoubleStorage", core.float64)


def storage_class(dtype):
    """The legacy typed storage class of ``dtype`` (``Tensor.storage_type()``)."""
    name = _LEGACY_NAMES.get(dtype)
    if name is None:
        raise RuntimeError(f"storage_type: no typed storage class for {dtype}")
    return globals()[name]


# ---- files ----------------------------------------------------------------------
def _map_file(filename, shared, nbytes, op):
    """An UntypedStorage of ``nbytes`` over ``filename``: shared, writes reach the file
    (which grows to ``nbytes`` if shorter); private, a copy-on-write mapping."""
    filename = os.fspath(filename)
    flags = os.O_RDWR | (os.O_CREAT if shared else 0) if shared else os.O_RDONLY
    try:
        fd = os.open(filename, flags, 0o600)
    except OSError as e:
        raise RuntimeError(f"{op}: unable to open file <{filename}>: {e.strerror}") from None
    try:
        size = os.fstat(fd).st_size
        if size < nbytes:
            if not shared:
                raise RuntimeError(f"{op}: trying to read {nbytes} bytes from file "
                                   f"<{filename}> of {size} bytes")
            os.ftruncate(fd, nbytes)
        if nbytes == 0:
            return _new_untyped(0)
        block = _ShmBlock(fd, nbytes, filename if shared else None, shared)
    except BaseException:
        os.close(fd)
        raise
    if not shared:      # the private mapping does not need the file open
        os.close(block.fd)
        block.fd = -1
    return block.storage()


def from_file(filename, shared=None, size=0, *, dtype=None, layout=None, device=None,
              pin_memory=False):
    """A 1-D tensor of ``size`` elements of ``dtype`` read from ``filename``.

    With ``shared=True`` the tensor maps the file: writes reach it, and the file grows to
    ``size`` elements if it is shorter. Otherwise the tensor is a private copy-on-write
    mapping of the file's first ``size`` elements.
    """
    dtype = dtype or _default_dtype()
    s = _map_file(filename, bool(shared), size * dtype.itemsize, "from_file")
    t = core._from_storage(s, (size,), (1,), dtype, 0)
    return t if device is None or str(device) == "cpu" else t.to(device)
