"""PyTorch's ``torch.save`` zip format, read and written without PyTorch.

A ``.pt``/``.pth`` zip holds ``archive/data.pkl`` (a protocol-2 pickle), one member
per storage, ``archive/data/<key>`` (raw little-endian bytes, 64-byte aligned in the
file), and ``version``, ``byteorder``, ``.format_version``, ``.storage_alignment``
and ``.data/serialization_id``.  The pickle names PyTorch globals
(``torch._utils._rebuild_tensor_v2``, ``torch.FloatStorage``, ``torch.Size``, ...)
and refers to storages through persistent ids ``('storage', storage_type, key,
location, numel)``.

Writing pickles only names ``torch.load(weights_only=True)`` accepts, so PyTorch
loads ember's files with its safe default.  Reading maps exactly those globals to
ember functions: through ember's restricted interpreter (``_unpickle``) when
``weights_only=True``; with ``weights_only=False`` any global outside ``torch.*`` is
imported (nothing under ``torch.*`` ever is)."""
from __future__ import annotations

import io
import pickle
import sys
from collections import OrderedDict

from ember._C import core
from ember._serialization import CheckpointError, _ember, _io, _unpickle

_STORAGE_DTYPES = {
    "FloatStorage": "float32", "DoubleStorage": "float64", "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16", "LongStorage": "int64", "IntStorage": "int32",
    "ShortStorage": "int16", "CharStorage": "int8", "ByteStorage": "uint8",
    "BoolStorage": "bool", "UntypedStorage": "uint8", "ComplexFloatStorage": "complex64",
    "ComplexDoubleStorage": "complex128",
}
_DTYPES = {
    "float32": "float32", "float": "float32", "float64": "float64", "double": "float64",
    "float16": "float16", "half": "float16", "bfloat16": "bfloat16", "int64": "int64",
    "long": "int64", "int32": "int32", "int": "int32", "int16": "int16", "short": "int16",
    "int8": "int8", "uint8": "uint8", "bool": "bool", "complex64": "complex64",
    "cfloat": "complex64", "complex128": "complex128", "cdouble": "complex128",
}


class _StorageType:
    """Stands for ``torch.FloatStorage`` & co. inside the unpickler."""
    __slots__ = ("name", "dtype")

    def __init__(self, name, dtype):
        self.name, self.dtype = name, dtype


_TENSOR = object()      # torch.Tensor
_PARAMETER = object()   # torch.nn.Parameter


def find_prefix(archive):
    """The record prefix of a PyTorch zip (``archive`` for recent torch), or None."""
    for name in archive.infos:
        if name.endswith("/data.pkl") and name.count("/") == 1:
            return name[:-len("/data.pkl")]
    return None


def _device(type, index=None):
    return core.Device(type, index)


def _size(x):
    if type(x) not in (tuple, list) or not all(type(v) is int for v in x):
        raise TypeError("torch.Size() takes a tuple of ints here")
    return core.Size(x)


class Rebuild:
    """PyTorch's rebuild functions, done with ember, for one load."""

    def __init__(self, loader):
        self.loader = loader

    def view(self, storage, offset, size, stride):
        dt = self.loader.dtypes.get(id(storage)) if type(storage) is core.Storage else None
        if dt is None:
            raise TypeError("tensor rebuilt from something that is not a storage")
        if type(size) not in (tuple, list) or type(stride) not in (tuple, list):
            raise TypeError("tensor size and stride must be tuples")
        size, stride = tuple(size), tuple(stride)
        s = storage
        _ember.check_view(s.nbytes(), dt.itemsize, size, stride, offset)
        return core._from_storage(s, size, stride, dt, offset)

    def tensor_v2(self, storage, storage_offset, size, stride, requires_grad=False,
                  backward_hooks=None, metadata=None):
        t = self.view(storage, storage_offset, size, stride)
        if metadata:
            # torch's math bits: the stored values are read conjugated / negated
            if not isinstance(metadata, dict):
                raise TypeError("tensor metadata must be a dict")
            _ember.set_math_bits(t, bool(metadata.get("conj")), bool(metadata.get("neg")))
        if requires_grad is True:
            t.requires_grad_(True)
        return t

    def tensor(self, storage, storage_offset, size, stride):
        return self.view(storage, storage_offset, size, stride)

    @staticmethod
    def parameter(data, requires_grad, backward_hooks=None, state=None):
        if not isinstance(data, core.TensorBase):
            raise TypeError("Parameter rebuilt from something that is not a tensor")
        return _ember.make_parameter(data, requires_grad is True)

    @staticmethod
    def meta(dtype, size, stride, requires_grad=False):
        if not isinstance(dtype, core.DType):
            raise TypeError("meta tensor without a dtype")
        if type(size) not in (tuple, list) or type(stride) not in (tuple, list):
            raise TypeError("tensor size and stride must be tuples")
        size, stride = tuple(size), tuple(stride)
        _ember.check_view(1 << 62, dtype.itemsize, size, stride, 0)
        n = 1 + sum((a - 1) * b for a, b in zip(size, stride)) if all(size) else 0
        s = core._new_storage(n * dtype.itemsize, "meta")
        t = core._from_storage(s, size, stride, dtype, 0)
        if requires_grad is True:
            t.requires_grad_(True)
        return t

    def from_type_v2(self, func, new_type, args, state):
        if func not in (self.tensor_v2, self.tensor, self.parameter, self.meta):
            raise TypeError("_rebuild_from_type_v2 with an unexpected function")
        if type(args) is not tuple:
            raise TypeError("_rebuild_from_type_v2 arguments are not a tuple")
        t = func(*args)
        if new_type is _PARAMETER and not _ember.is_parameter(t):
            t = _ember.make_parameter(t, t.requires_grad)
        elif new_type is not _TENSOR and new_type is not _PARAMETER:
            raise TypeError("_rebuild_from_type_v2 with an unexpected type")
        if isinstance(state, dict):
            cls = type(t)
            for k, v in state.items():     # plain attributes only, never a property or method
                if type(k) is str and not k.startswith("__") and not hasattr(cls, k):
                    setattr(t, k, v)
        return t


def _globals(rb):
    return {
        "torch._utils._rebuild_tensor_v2": rb.tensor_v2,
        "torch._utils._rebuild_tensor": rb.tensor,
        "torch._utils._rebuild_parameter": rb.parameter,
        "torch._utils._rebuild_parameter_with_state": rb.parameter,
        "torch._utils._rebuild_meta_tensor_no_storage": rb.meta,
        "torch._tensor._rebuild_from_type_v2": rb.from_type_v2,
        "torch.Size": core.Size, "torch.device": _device,
        "torch.Tensor": _TENSOR, "torch._tensor.Tensor": _TENSOR,
        "torch.nn.parameter.Parameter": _PARAMETER, "torch.nn.Parameter": _PARAMETER,
    }


class _TrustedUnpickler(pickle.Unpickler):
    """``weights_only=False``: any global outside ``torch.*`` is imported."""

    def __init__(self, file, loader):
        super().__init__(file)
        self.loader = loader

    def find_class(self, module, name):
        obj = self.loader.resolve(module, name, trusted=True)
        return super().find_class(module, name) if obj is None else obj

    def persistent_load(self, pid):
        return self.loader.persistent_load(pid)


class TorchLoader:
    def __init__(self, archive, prefix, map_location, weights_only, mapped):
        self.ar, self.prefix = archive, prefix
        self.label = archive.label
        self.restore = _ember.Restorer(map_location, archive.label)
        self.weights_only = weights_only
        self.mapped = mapped
        self.storages = {}
        self.dtypes = {}              # id(storage) -> dtype of the persistent id that made it
        self.globals = g = _globals(Rebuild(self))
        # REDUCE matches callables by identity: the very objects the globals resolve to
        self.calls = [(g[k], g[k]) for k in g if k.startswith(("torch._utils.", "torch._tensor."))]
        self.calls += [(core.Size, _size), (_device, _device)]

    def resolve(self, module, name, trusted=False):
        """A global's object; None (trusted) or a refusal for one outside the vocabulary."""
        module, name = _ember.py2_name(module, name)
        key = f"{module}.{name}"
        obj = self.globals.get(key)
        if obj is not None:
            return obj
        if module in ("torch", "torch.storage") and name in _STORAGE_DTYPES:
            return _StorageType(name, core._dtype_by_name(_STORAGE_DTYPES[name]))
        if module == "torch" and name in _DTYPES:
            return core._dtype_by_name(_DTYPES[name])
        obj = _ember.safe_global(module, name)
        if obj is not None:
            return obj
        label = self.label
        if module == "torch" or module.startswith("torch."):
            if module == "torch" and name.endswith("Storage"):
                raise _unpickle.Refused(f"{label}: holds a torch.{name} (a dtype ember does "
                                        f"not have)")
            raise _unpickle.Refused(
                f"{label}: holds the PyTorch object '{key}', which ember cannot rebuild (ember "
                f"never imports torch). Save plain tensors and state_dicts with torch.save "
                f"(e.g. torch.save(model.state_dict(), f)) to load them into ember.")
        if trusted:
            return None
        raise _ember.refuse(label, module, name)

    def persistent_load(self, pid):
        if not (type(pid) is tuple and len(pid) == 5 and pid[0] in ("storage", b"storage")
                and isinstance(pid[1], _StorageType)):
            raise CheckpointError(f"{self.label}: unexpected persistent id (a "
                                  f"{type(pid).__name__}) in the pickle")
        _, st, key, location, numel = pid
        if type(key) is not str or type(location) is not str or type(numel) is not int \
                or numel < 0:
            raise CheckpointError(f"{self.label}: bad storage record in the pickle")
        try:
            s = self.storage(key, location, numel * st.dtype.itemsize)
        except (CheckpointError, MemoryError):
            raise
        except Exception as e:            # a map_location callable's own error
            raise _unpickle.Passthrough(e) from None
        self.dtypes.setdefault(id(s), st.dtype)     # the dtype tensors over it take
        return s

    def storage(self, key, location, nbytes):
        s = self.storages.get(key)
        if s is not None:
            return s
        name = f"{self.prefix}/data/{key}"
        info = self.ar.info(name)                   # its declared sizes checked
        if info.file_size < nbytes:                 # before anything is allocated
            self.ar.fail(f"member {name!r} holds {info.file_size} bytes, the pickle expects "
                         f"{nbytes}: the file is corrupted")
        nbytes = info.file_size
        s = None
        if self.mapped is not None:
            off = self.ar.data_offset(name, info)
            if off >= 0 and off % 8 == 0:
                s = self.mapped.storage(off, nbytes)
        if s is None:
            s = core._new_storage(nbytes)
            self.ar.read_into(name, _io.buffer(s.data_ptr(), nbytes))
        s = self.restore(s, location)
        self.storages[key] = s
        return s

    def load(self):
        p = self.prefix
        if f"{p}/byteorder" in self.ar.infos:
            _io.check_byteorder(self.label, self.ar.read(f"{p}/byteorder").decode("ascii",
                                                                                   "replace"))
        raw = self.ar.read(f"{p}/data.pkl")
        if self.weights_only:
            policy = _unpickle.Policy(self.resolve, self.calls)
            obj = _unpickle.Unpickler(raw, self.label, policy, self.persistent_load,
                                      "PyTorch pickle").load()
        else:
            try:
                obj = _TrustedUnpickler(io.BytesIO(raw), self).load()
            except _unpickle.Passthrough as p:
                raise p.error from None
        return obj


def load(archive, prefix, map_location, weights_only, mapped):
    return TorchLoader(archive, prefix, map_location, weights_only, mapped).load()


# ----------------------------------------------------------------------------
# writing

PREFIX = "archive"
_TORCH_STORAGE = {"float32": "FloatStorage", "float64": "DoubleStorage",
                  "float16": "HalfStorage", "bfloat16": "BFloat16Storage",
                  "int64": "LongStorage", "int32": "IntStorage", "int16": "ShortStorage",
                  "int8": "CharStorage", "uint8": "ByteStorage", "bool": "BoolStorage",
                  "complex64": "ComplexFloatStorage", "complex128": "ComplexDoubleStorage"}
_NAMES = {}


class _Global:
    """A global the pickle names (``GLOBAL 'torch FloatStorage'``) without importing it."""
    __slots__ = ("module", "name")

    def __init__(self, module, name):
        self.module, self.name = module, name

    def __call__(self, *args):      # the pickler wants a callable as a REDUCE target
        raise TypeError(f"{self.module}.{self.name} is a name in a PyTorch pickle, not a "
                        f"function ember can call")


def _g(module: str, name: str) -> _Global:
    """One object per name, so the pickle's memo writes each name once."""
    k = (module, name)
    g = _NAMES.get(k)
    if g is None:
        g = _NAMES[k] = _Global(module, name)
    return g


class _StorageRef:
    """Stands for a storage in the pickle: written as its persistent id."""
    __slots__ = ("pid",)

    def __init__(self, pid):
        self.pid = pid


class _AsTensor:
    """A Parameter's data, pickled as a plain tensor (as ``Parameter.__reduce_ex__``)."""
    __slots__ = ("t",)

    def __init__(self, t):
        self.t = t


class _Pickler(pickle._Pickler):
    """The pure-Python pickler, taught torch's names: a C pickler can only name globals
    it can import, and ember never imports torch."""

    dispatch = dict(pickle._Pickler.dispatch)

    def __init__(self, file, protocol, writer):
        super().__init__(file, protocol=protocol)
        self.writer = writer

    def _save_name(self, obj):
        self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode("utf-8"))
        self.memoize(obj)

    def _save_dtype(self, obj):
        self.save(_g("torch", obj._name))

    dispatch[_Global] = _save_name
    dispatch[core.DType] = _save_dtype

    def persistent_id(self, obj):
        t = type(obj)
        if t is _StorageRef:
            return obj.pid
        if t is core.Storage:
            return self.writer.storage_pid(obj, None)
        typed = sys.modules.get("ember._storage")      # none made while it is not loaded
        if typed is not None and isinstance(obj, typed.TypedStorage):
            return self.writer.storage_pid(obj.untyped(), obj.dtype)
        return None

    def reducer_override(self, obj):
        w = self.writer
        if isinstance(obj, core.TensorBase):
            if _ember.is_parameter(obj):
                return (_g("torch._utils", "_rebuild_parameter"),
                        (_AsTensor(obj), obj.requires_grad, OrderedDict()))
            return w.reduce_tensor(obj, obj.requires_grad)
        t = type(obj)
        if t is _AsTensor:
            return w.reduce_tensor(obj.t, False)
        if t is core.Size:
            return (_g("torch", "Size"), (tuple(int(v) for v in obj),))
        if t is core.Device:
            args = (obj.type,) if obj.index is None else (obj.type, obj.index)
            return (_g("torch", "device"), args)
        return NotImplemented


class Writer:
    """``obj`` pickled as ``torch.save`` does, storages listed for writing.  Everything
    but the storage bytes is ready in memory, so a failure to pickle happens before
    any file is touched."""

    def __init__(self, obj, pickle_protocol=2):
        self.storages = []          # (key, Storage, nbytes to write)
        self.keys = {}              # id(storage) -> (key, dtype name)
        self._alive = []
        buf = io.BytesIO()
        try:
            _Pickler(buf, pickle_protocol or 2, self).dump(obj)
        except RecursionError:
            raise ValueError("ember.save: the object is nested too deeply") from None
        self.pickled = buf.getvalue()

    def storage_pid(self, s, dtype):
        """The persistent id of storage ``s`` seen as ``dtype`` (None: untyped bytes)."""
        name = dtype._name if dtype is not None else None
        k = self.keys.get(id(s))
        if k is not None and name is None and k[1] is not None:
            dtype = core._dtype_by_name(name := k[1])   # a bare storage tensors already typed
        if k is None:
            key = str(len(self.storages))
            k = self.keys[id(s)] = (key, name)
            self._alive.append(s)
            itemsize = dtype.itemsize if dtype is not None else 1
            if s.device.type != "meta":
                self.storages.append((key, s, s.nbytes() // itemsize * itemsize))
        elif k[1] != name:
            raise RuntimeError(
                "ember.save: cannot save multiple tensors or storages that view the same data "
                "as different types in PyTorch's format; save with format='ember', or "
                ".clone() one of them")
        key = k[0]
        loc = str(s.device)
        if dtype is None:
            return ("storage", _g("torch", "UntypedStorage"), key, loc, s.nbytes())
        return ("storage", _g("torch", _TORCH_STORAGE[name]), key, loc,
                s.nbytes() // dtype.itemsize)

    def reduce_tensor(self, t, requires_grad):
        size, stride = tuple(t.shape), tuple(t.stride())
        if t.device.type == "meta":
            return (_g("torch._utils", "_rebuild_meta_tensor_no_storage"),
                    (t.dtype, size, stride, requires_grad))
        pid = self.storage_pid(t.untyped_storage(), t.dtype)
        args = (_StorageRef(pid), t.storage_offset(), size, stride, requires_grad,
                OrderedDict())
        if t._mbits:        # torch's metadata dict carries the math bits
            args += ({k: True for k, b in (("conj", 1), ("neg", 2)) if t._mbits & b},)
        return (_g("torch._utils", "_rebuild_tensor_v2"), args)

    def write(self, f) -> None:
        import hashlib

        zw = _io.ZipWriter(f)
        p = PREFIX
        zw.add(f"{p}/data.pkl", self.pickled)
        zw.add(f"{p}/.format_version", b"1")
        zw.add(f"{p}/.storage_alignment", str(_io.ALIGN).encode())
        zw.add(f"{p}/byteorder", b"little")
        views = []
        for key, s, n in self.storages:
            view, owner = _io.storage_bytes(s)
            views.append((f"{p}/data/{key}", view[:n], owner))
        _ember.write_views(zw, views)
        zw.add(f"{p}/version", b"3\n")
        # torch writes a unique id here; ember's is derived from the content: saves repeat
        sid = int.from_bytes(hashlib.sha1(self.pickled).digest(), "big") % 10**40
        zw.add(f"{p}/.data/serialization_id", f"{sid:040d}".encode())
        zw.close()
