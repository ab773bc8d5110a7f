"""Reading PyTorch ``torch.save`` zip files without PyTorch.

A ``.pt``/``.pth`` zip holds ``<prefix>/data.pkl`` (a pickle) and one member per
storage, ``<prefix>/data/<key>``.  The pickle names PyTorch globals
(``torch._utils._rebuild_tensor_v2``, ``torch.FloatStorage``, ``torch.Size``, ...)
and refers to storages through persistent ids ``('storage', storage_type, key,
location, numel)``.  A restricted unpickler maps exactly those globals to ember
functions and refuses every other one (unless ``weights_only=False``, and even
then nothing under ``torch.*`` is imported)."""
from __future__ import annotations

import io
import pickle

from ember._C import core
from ember._serialization import _ember, _io

_STORAGE_DTYPES = {
    "FloatStorage": "float32", "DoubleStorage": "float64", "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16", "LongStorage": "int64", "IntStorage": "int32",
    "ShortStorage": "int16", "CharStorage": "int8", "ByteStorage": "uint8",
    "BoolStorage": "bool", "UntypedStorage": "uint8",
}
_DTYPES = {
    "float32": "float32", "float": "float32", "float64": "float64", "double": "float64",
    "float16": "float16", "half": "float16", "bfloat16": "bfloat16", "int64": "int64",
    "long": "int64", "int32": "int32", "int": "int32", "int16": "int16", "short": "int16",
    "int8": "int8", "uint8": "uint8", "bool": "bool",
}


class _StorageType:
    """Stands for ``torch.FloatStorage`` & co. inside the unpickler."""
    __slots__ = ("name", "dtype")

    def __init__(self, name, dtype):
        self.name, self.dtype = name, dtype


class _TypedStorage:
    """A loaded storage and the dtype PyTorch viewed it as."""
    __slots__ = ("storage", "dtype")

    def __init__(self, storage, dtype):
        self.storage, self.dtype = storage, dtype


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


class TorchUnpickler(pickle.Unpickler):
    def __init__(self, file, loader):
        super().__init__(file)
        self.loader = loader

    # -- PyTorch's rebuild functions, done with ember ---------------------------
    def _view(self, storage, offset, size, stride):
        if not isinstance(storage, _TypedStorage):
            raise pickle.UnpicklingError("tensor rebuilt from something that is not a storage")
        size, stride = tuple(size), tuple(stride)
        s, dt = storage.storage, storage.dtype
        _ember.check_view(s.nbytes(), dt.itemsize, size, stride, offset)
        return core._from_storage(s, size, stride, dt, offset)

    def rebuild_tensor_v2(self, storage, storage_offset, size, stride, requires_grad=False,
                          backward_hooks=None, metadata=None):
        t = self._view(storage, storage_offset, size, stride)
        if requires_grad:
            t.requires_grad_(True)
        return t

    def rebuild_tensor(self, storage, storage_offset, size, stride):
        return self._view(storage, storage_offset, size, stride)

    @staticmethod
    def rebuild_parameter(data, requires_grad, backward_hooks=None, state=None):
        if not isinstance(data, core.TensorBase):
            raise pickle.UnpicklingError("Parameter rebuilt from something that is not a tensor")
        return _ember.make_parameter(data, bool(requires_grad))

    @staticmethod
    def rebuild_meta(dtype, size, stride, requires_grad=False):
        if not isinstance(dtype, core.DType):
            raise pickle.UnpicklingError("meta tensor without a dtype")
        size, stride = tuple(size), tuple(stride)
        n = 1 + sum((a - 1) * b for a, b in zip(size, stride)) if all(size) else 0
        s = core._new_storage(n * dtype.itemsize, "meta")
        _ember.check_view(s.nbytes(), dtype.itemsize, size, stride, 0)
        t = core._from_storage(s, size, stride, dtype, 0)
        if requires_grad:
            t.requires_grad_(True)
        return t

    def rebuild_from_type_v2(self, func, new_type, args, state):
        if func not in (self.rebuild_tensor_v2, self.rebuild_tensor, self.rebuild_parameter,
                        self.rebuild_meta):
            raise pickle.UnpicklingError("_rebuild_from_type_v2 with an unexpected function")
        t = func(*args)
        if new_type is _PARAMETER and not _ember.is_parameter(t):
            t = _ember.make_parameter(t, t.requires_grad)
        elif new_type is not _TENSOR and new_type is not _PARAMETER:
            raise pickle.UnpicklingError("_rebuild_from_type_v2 with an unexpected type")
        if isinstance(state, dict):
            for k, v in state.items():
                if type(k) is str and not k.startswith("__"):
                    setattr(t, k, v)
        return t

    # -- pickle hooks --------------------------------------------------------------
    def find_class(self, module, name):
        module, name = _ember.py2_name(module, name)
        key = f"{module}.{name}"
        obj = {
            "torch._utils._rebuild_tensor_v2": self.rebuild_tensor_v2,
            "torch._utils._rebuild_tensor": self.rebuild_tensor,
            "torch._utils._rebuild_parameter": self.rebuild_parameter,
            "torch._utils._rebuild_parameter_with_state": self.rebuild_parameter,
            "torch._utils._rebuild_meta_tensor_no_storage": self.rebuild_meta,
            "torch._tensor._rebuild_from_type_v2": self.rebuild_from_type_v2,
            "torch.Size": core.Size, "torch.device": _device,
            "torch.Tensor": _TENSOR, "torch._tensor.Tensor": _TENSOR,
            "torch.nn.parameter.Parameter": _PARAMETER, "torch.nn.Parameter": _PARAMETER,
        }.get(key)
        if obj is not None:
            return obj
        if module in ("torch", "torch.storage") and name in _STORAGE_DTYPES:
            return _StorageType(name, core._dtype_by_name(_STORAGE_DTYPES[name]))
        if module == "torch" and name in _DTYPES:
            return core._dtype_by_name(_DTYPES[name])
        obj = _ember.safe_global(module, name)
        if obj is not None:
            return obj
        label = self.loader.label
        if module == "torch" or module.startswith("torch."):
            if module == "torch" and name.endswith("Storage"):
                raise pickle.UnpicklingError(f"{label}: holds a torch.{name} (a dtype ember "
                                             f"does not have)")
            raise pickle.UnpicklingError(
                f"{label}: holds the PyTorch object '{key}', which ember cannot rebuild (ember "
                f"never imports torch). Save plain tensors and state_dicts with torch.save "
                f"(e.g. torch.save(model.state_dict(), f)) to load them into ember.")
        if not self.loader.weights_only:
            return super().find_class(module, name)
        raise _ember.refuse(label, module, name)

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"
                and isinstance(pid[1], _StorageType)):
            raise pickle.UnpicklingError(f"{self.loader.label}: unexpected persistent id "
                                         f"{pid!r:.100}")
        _, st, key, location, numel = pid
        if type(key) is not str or type(location) is not str or type(numel) is not int \
                or numel < 0:
            raise pickle.UnpicklingError(f"{self.loader.label}: bad storage record {pid!r:.100}")
        s = self.loader.storage(key, location, numel * st.dtype.itemsize)
        return _TypedStorage(s, st.dtype)


class TorchLoader:
    def __init__(self, archive, prefix, map_location, weights_only, mapped):
        self.ar, self.prefix = archive, prefix
        self.label = archive.label
        self.restore = _ember.Restorer(map_location)
        self.weights_only = weights_only
        self.mapped = mapped
        self.storages = {}

    def storage(self, key, location, nbytes):
        s = self.storages.get(key)
        if s is not None:
            return s
        name = f"{self.prefix}/data/{key}"
        info = self.ar.info(name)
        if info.file_size < nbytes:
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
        up = TorchUnpickler(io.BytesIO(raw), self)
        try:
            obj = up.load()
        except pickle.UnpicklingError:
            raise
        except (RuntimeError, OSError):
            raise
        except Exception as e:
            if self.weights_only:
                raise pickle.UnpicklingError(f"{self.label}: cannot unpickle the PyTorch data "
                                             f"({type(e).__name__}: {e})") from None
            raise
        if isinstance(obj, _TypedStorage):
            return obj.storage
        return obj


def load(archive, prefix, map_location, weights_only, mapped):
    return TorchLoader(archive, prefix, map_location, weights_only, mapped).load()
