"""ember's checkpoint format: a zip archive of

- ``ember/header.json``   format name, format version, the writer's ember version
                          and the oldest ember that reads it, byte order;
- ``ember/data.json``     the object's structure as JSON (see ``Encoder``), a table of
                          storages and a table of tensors (views into storages);
- ``ember/objects.pkl``   only when the object holds something outside the vocabulary:
                          those objects, pickled (tensors inside them are persistent ids
                          into the same tables);
- ``ember/storages/<i>``  each storage once, raw little-endian bytes, stored
                          uncompressed and 64-byte aligned in the file (so ``mmap=True``
                          maps them).

Structure nodes: None, bools, ints, strings and finite floats are themselves; a
list is a JSON array; everything else is ``{"T": tag, "v": ...}``: float (nan,
inf), tuple, dict, odict (+ attrs), set, frozenset, bytes, bytearray, complex,
size, dtype, device, tensor (index into the tensor table), storage, ref (a list
or dict seen before: shared containers and cycles survive), pickle (index into
the pickled objects)."""
from __future__ import annotations

import base64
import json
import math
import pickle
import reprlib
from collections import OrderedDict

from ember import _version
from ember._C import core
from ember._serialization import CheckpointError, _io, _unpickle

FORMAT = "ember.checkpoint"
FORMAT_VERSION = 1
HEADER = "ember/header.json"
DATA = "ember/data.json"
OBJECTS = "ember/objects.pkl"


def storage_member(i: int) -> str:
    return f"ember/storages/{i}"


_TensorBase, _Storage, _DType, _Device, _Size = (core.TensorBase, core.Storage, core.DType,
                                                 core.Device, core.Size)
_INF = math.inf


def is_parameter(t) -> bool:
    """``ember.nn.Parameter`` (or a subclass), found without importing ember.nn."""
    for c in type(t).__mro__:
        if c.__name__ == "Parameter" and c.__module__.startswith("ember.nn"):
            return True
    return False


def set_math_bits(t, conj: bool, neg: bool) -> None:
    """Give a loaded tensor the conjugate/negative bits it was saved with."""
    if conj and not t.is_complex():
        raise ValueError("a conjugate bit on a non-complex tensor")
    if neg and not (t.is_complex() or t.is_floating_point()):
        raise ValueError("a negative bit on a non-floating-point tensor")
    t._mbits = (1 if conj else 0) | (2 if neg else 0)


def make_parameter(t, requires_grad: bool):
    try:
        from ember.nn import Parameter
    except ImportError:               # ember.nn not in this build: a leaf tensor instead
        if requires_grad:
            t.requires_grad_(True)
        return t
    return Parameter(t, requires_grad=requires_grad)


def _r(x) -> str:
    """A short repr of data from a file (bounded depth and length: never recurses far)."""
    return reprlib.repr(x)


def _qualname(x) -> str:
    t = type(x)
    return f"{t.__module__}.{t.__qualname__}"


# ----------------------------------------------------------------------------
# saving

class Encoder:
    def __init__(self):
        self.memo = {}             # id(list/dict) -> memo index
        self.alive = []            # keeps memoized objects alive (ids stay unique)
        self.storage_ids = {}
        self.storages = []         # Storage objects, in table order
        self.tensor_ids = {}
        self.tensors = []          # tensor descriptors
        self.tensor_objs = []
        self.object_ids = {}
        self.objects = []          # non-vocabulary objects (pickled)

    def _memo(self, x):
        k = id(x)
        m = self.memo.get(k)
        if m is not None:
            return {"T": "ref", "v": m}
        self.memo[k] = len(self.memo)
        self.alive.append(x)
        return None

    def encode(self, x):
        t = type(x)
        if x is None or t is bool or t is int or t is str:
            return x
        if t is float:
            if x != x:
                return {"T": "float", "v": "nan"}
            if x == _INF or x == -_INF:
                return {"T": "float", "v": "inf" if x > 0 else "-inf"}
            return x
        if t is list:
            return self._memo(x) or [self.encode(v) for v in x]
        if t is dict or t is OrderedDict:
            ref = self._memo(x)
            if ref:
                return ref
            enc = self.encode
            node = {"T": "dict" if t is dict else "odict",
                    "v": [[enc(k), enc(v)] for k, v in x.items()]}
            attrs = getattr(x, "__dict__", None) if t is OrderedDict else None
            if attrs:
                node["attrs"] = enc(dict(attrs))
            return node
        if isinstance(x, _TensorBase):
            return {"T": "tensor", "v": self.tensor(x)}
        if t is _Storage:
            return {"T": "storage", "v": self.storage(x)}
        if t is tuple:
            return {"T": "tuple", "v": [self.encode(v) for v in x]}
        if t is _Size:
            return {"T": "size", "v": [int(v) for v in x]}
        if t is _DType:
            return {"T": "dtype", "v": x._name}
        if t is _Device:
            return {"T": "device", "v": str(x)}
        if t is set or t is frozenset:
            return {"T": t.__name__, "v": [self.encode(v) for v in x]}
        if t is bytes or t is bytearray:
            return {"T": t.__name__, "v": base64.b64encode(x).decode("ascii")}
        if t is complex:
            return {"T": "complex", "v": [self.encode(x.real), self.encode(x.imag)]}
        k = self.object_ids.get(id(x))
        if k is None:
            k = self.object_ids[id(x)] = len(self.objects)
            self.objects.append(x)
        return {"T": "pickle", "v": k, "type": _qualname(x)}

    def storage(self, s) -> int:
        k = self.storage_ids.get(id(s))
        if k is None:
            k = self.storage_ids[id(s)] = len(self.storages)
            self.storages.append(s)
        return k

    def tensor(self, x) -> int:
        k = self.tensor_ids.get(id(x))
        if k is None:
            d = {"s": self.storage(x.untyped_storage()), "dtype": x.dtype._name,
                 "shape": list(x.shape), "stride": list(x.stride()),
                 "offset": x.storage_offset()}
            if x.requires_grad:
                d["rg"] = True
            if x._mbits:
                d["mb"] = x._mbits      # the stored values are read through these bits
            if is_parameter(x):
                d["param"] = True
            k = self.tensor_ids[id(x)] = len(self.tensors)
            self.tensors.append(d)
            self.tensor_objs.append(x)
        return k

    def persistent_id(self, x):
        t = type(x)
        if isinstance(x, _TensorBase):
            return ("tensor", self.tensor(x))
        if t is _Storage:
            return ("storage", self.storage(x))
        if t is _DType:
            return ("dtype", x._name)
        if t is _Device:
            return ("device", str(x))
        if t is _Size:
            return ("size", tuple(int(v) for v in x))
        return None


class Payload:
    """An encoded object: everything but the storage bytes is ready in memory, so a
    failure to encode happens before any file is touched."""

    def __init__(self, obj, pickle_protocol=2):
        enc = Encoder()
        try:
            root = enc.encode(obj)
        except RecursionError:
            raise ValueError("ember.save: the object is nested too deeply") from None
        self.pickled = None
        if enc.objects:
            import io

            buf = io.BytesIO()
            p = pickle.Pickler(buf, protocol=max(2, pickle_protocol or 2))
            p.persistent_id = enc.persistent_id
            p.dump(enc.objects)
            self.pickled = buf.getvalue()
        data = {"storages": [{"nbytes": s.nbytes(), "device": str(s.device)}
                             for s in enc.storages],
                "tensors": enc.tensors, "root": root}
        if enc.objects:
            data["objects"] = [_qualname(o) for o in enc.objects]
        self.header = json.dumps({"format": FORMAT, "format_version": FORMAT_VERSION,
                                  "ember_version": _version.__version__,
                                  "requires_ember": _version.__version__,
                                  "byteorder": "little", "alignment": _io.ALIGN},
                                 separators=(",", ":")).encode()
        self.data = json.dumps(data, separators=(",", ":"), allow_nan=False).encode()
        self.storages = enc.storages
        self._keep = enc.tensor_objs

    def write(self, f) -> None:
        zw = _io.ZipWriter(f)
        zw.add(HEADER, self.header)
        zw.add(DATA, self.data)
        if self.pickled is not None:
            zw.add(OBJECTS, self.pickled)
        write_storages(zw, [(storage_member(i), s) for i, s in enumerate(self.storages)
                            if s.device.type != "meta"])
        zw.close()


def write_storages(zw, items) -> None:
    """Write (member name, Storage) pairs."""
    write_views(zw, [(name, *_io.storage_bytes(s)) for name, s in items])


def write_views(zw, items) -> None:
    """Write (member name, bytes view, owner) triples.  Their CRCs (needed before each
    local header) are computed ahead on worker threads, overlapping the writes."""
    from ember._serialization import _crc

    if sum(v.nbytes for _, v, _ in items) < 2 * _crc.SMALL:
        for name, view, _ in items:
            zw.add(name, view)
        return
    with _crc.Pool() as pool:
        crcs = [pool.submit(v) for _, v, _ in items]
        for (name, view, _), crc in zip(items, crcs):
            zw.add(name, view, crc())


# ----------------------------------------------------------------------------
# loading: map_location

class Restorer:
    """Moves loaded (CPU or mapped) storages where ``map_location`` says, like torch.load.
    A location the file names that this ember cannot restore is a CheckpointError; what
    a ``map_location`` callable raises reaches the caller unchanged."""

    def __init__(self, map_location, label: str = "the file"):
        ml = map_location
        if not (ml is None or isinstance(ml, (dict, str, _Device)) or callable(ml)):
            raise TypeError(f"map_location must be None, a str, an ember.device, a dict or a "
                            f"callable, got {type(ml).__name__}")
        self.ml, self.label = ml, label

    def __call__(self, storage, location: str):
        ml = self.ml
        target = location
        if isinstance(ml, dict):
            target = ml.get(location, location)
        elif isinstance(ml, (str, _Device)):
            target = ml
        elif ml is not None:
            r = ml(storage, location)
            if r is not None:
                if not isinstance(r, _Storage):
                    raise TypeError(f"map_location callable must return a storage or None, "
                                    f"got {type(r).__name__}")
                return r
        try:
            return move_storage(storage, target)
        except (RuntimeError, ValueError, TypeError) as e:
            raise CheckpointError(f"{self.label}: cannot restore a storage saved on "
                                  f"{_r(location)} to {_r(str(target))}: {e}") from None


def move_storage(storage, target):
    dev = target if isinstance(target, _Device) else core.Device(target)
    if dev.type == storage.device.type and (dev.index is None or dev == storage.device):
        return storage
    if dev.type == "meta":
        return core._new_storage(storage.nbytes(), "meta")
    if dev.type == "cuda":
        import ember.cuda

        if not ember.cuda.is_available():
            raise RuntimeError("Attempting to deserialize object on a CUDA device but "
                               "ember.cuda.is_available() is False. If you are running on a "
                               "CPU-only machine, please use ember.load with "
                               "map_location=ember.device('cpu') to map your storages to the "
                               "CPU.")
    t = core._from_storage(storage, (storage.nbytes(),), (1,), core.uint8, 0)
    return t.to(dev).untyped_storage()


def check_view(nbytes: int, itemsize: int, shape, stride, offset) -> None:
    """Reject tensor geometry that would reach outside its storage (crafted files)."""
    if not (isinstance(shape, (list, tuple)) and isinstance(stride, (list, tuple))
            and len(shape) == len(stride) and len(shape) <= 16):
        raise ValueError(f"bad shape {_r(shape)} / stride {_r(stride)}")
    for v in (*shape, *stride, offset):
        if type(v) is not int or v < 0:
            raise ValueError(f"bad shape {_r(shape)} / stride {_r(stride)} / offset {_r(offset)}")
    hi = offset
    for n, s in zip(shape, stride):
        if n == 0:
            hi = -1
            break
        hi += (n - 1) * s
    if hi >= 0 and (hi + 1) * itemsize > nbytes:
        raise ValueError(f"a view (shape {list(shape)}, stride {list(stride)}, offset "
                         f"{offset}) reaches past its storage of {nbytes} bytes")
    if hi < 0 and offset * itemsize > nbytes:
        raise ValueError(f"storage offset {offset} lies past its storage of {nbytes} bytes")


def dtype_named(name):
    if type(name) is not str or name not in core._NAMES:
        raise ValueError(f"unknown dtype {_r(name)}")
    return core._dtype_by_name(name)


# ----------------------------------------------------------------------------
# loading: restricted unpickling (shared with the PyTorch reader)

def py2_name(module: str, name: str):
    """Protocol-2 pickles name Python 2 modules (``__builtin__.set``): map them as pickle does."""
    import _compat_pickle

    if (module, name) in _compat_pickle.NAME_MAPPING:
        return _compat_pickle.NAME_MAPPING[(module, name)]
    return _compat_pickle.IMPORT_MAPPING.get(module, module), name


def safe_global(module: str, name: str):
    """The object for an allowed global, or None."""
    module, name = py2_name(module, name)
    key = f"{module}.{name}"
    obj = _unpickle.BASE_GLOBALS.get(key)
    if obj is not None:
        return obj
    from ember import serialization

    return serialization._safe_global_lookup(key)


def refuse(label: str, module: str, name: str, types=()):
    held = (f"objects of type {', '.join(sorted(set(types)))} outside ember's safe vocabulary"
            if types else "objects outside ember's safe vocabulary")
    return pickle.UnpicklingError(
        f"Weights only load failed: {label} holds {held}; unpickling them needs the global "
        f"'{module}.{name}', which weights_only=True does not allow (it could run code). "
        f"If you trust that class or function, allow it with "
        f"ember.serialization.add_safe_globals([{name}]) (or the "
        f"ember.serialization.safe_globals([...]) context manager); if you trust the whole "
        f"file, load it with weights_only=False (only for files from a trusted source: "
        f"unpickling can run arbitrary code).")


def _persistent(loader, pid):
    """The objects member's persistent ids: entries of the checkpoint's tables."""
    if not (type(pid) is tuple and len(pid) == 2):
        raise CheckpointError(f"{loader.label}: bad persistent id in the objects member")
    tag, v = pid
    if tag in ("tensor", "storage"):
        if type(v) is not int or v < 0:
            raise CheckpointError(f"{loader.label}: bad {tag} index in the objects member")
        return (loader.tensors if tag == "tensor" else loader.storages)[v]
    if tag == "dtype":
        return dtype_named(v)
    if tag == "device":
        return core.Device(v)
    if tag == "size":
        return core.Size(_size_ints(v))
    raise CheckpointError(f"{loader.label}: bad persistent id in the objects member")


def _size_ints(v):
    if type(v) not in (tuple, list) or not all(type(x) is int for x in v):
        raise TypeError("a size must be a tuple of ints")
    return v


class _TrustedUnpickler(pickle.Unpickler):
    """``weights_only=False``: the objects member as plain pickle (the file is trusted)."""

    def __init__(self, file, loader):
        super().__init__(file)
        self.loader = loader

    def persistent_load(self, pid):
        return _persistent(self.loader, pid)

    def find_class(self, module, name):
        return super().find_class(*py2_name(module, name))


# ----------------------------------------------------------------------------
# loading

class Loader:
    def __init__(self, archive, map_location, weights_only, mapped):
        self.ar = archive
        self.label = archive.label
        self.restore = Restorer(map_location, archive.label)
        self.weights_only = weights_only
        self.mapped = mapped
        self.memo = []
        self.storages = []
        self.tensors = []
        self.objects = None

    def bad(self, what):
        return CheckpointError(f"{self.label}: malformed checkpoint structure ({what}): the file "
                               f"is corrupted or was not written by ember")

    def load(self):
        ar = self.ar
        try:
            header = json.loads(ar.read(HEADER))
            fmt, ver = header["format"], header["format_version"]
        except (ValueError, TypeError, KeyError, RecursionError) as e:
            raise self.bad(f"header: {e}") from None
        if fmt != FORMAT:
            ar.fail(f"not an ember checkpoint (format {_r(fmt)})")
        if type(ver) is not int or ver < 1:
            raise self.bad(f"format version {_r(ver)}")
        if ver > FORMAT_VERSION:
            ar.fail(f"written by ember {header.get('ember_version', '?')} in checkpoint format "
                    f"version {ver}; this ember ({_version.__version__}) reads format versions "
                    f"up to {FORMAT_VERSION}: upgrade to ember >= "
                    f"{header.get('requires_ember', header.get('ember_version', '?'))} to load it")
        _io.check_byteorder(self.label, header.get("byteorder", "little"))
        try:
            data = json.loads(ar.read(DATA))
            storages, tensors, root = data["storages"], data["tensors"], data["root"]
            if not (isinstance(storages, list) and isinstance(tensors, list)):
                raise TypeError("tables must be lists")
        except (ValueError, TypeError, KeyError, RecursionError) as e:
            raise self.bad(f"data: {e}") from None
        for i, e in enumerate(storages):
            self.storages.append(self._storage(i, e))
        for d in tensors:
            self.tensors.append(self._tensor(d))
        if data.get("objects"):
            self._unpickle(data["objects"])
        try:
            return self.decode(root)
        except (KeyError, TypeError, ValueError, IndexError, AttributeError, RecursionError,
                OverflowError, RuntimeError) as e:
            raise self.bad(f"{type(e).__name__}: {e}") from None

    def _storage(self, i, e):
        try:
            nbytes, location = e["nbytes"], e["device"]
            if type(nbytes) is not int or not 0 <= nbytes < 1 << 62 or type(location) is not str:
                raise ValueError(f"storage entry {_r(e)}")
        except (KeyError, TypeError, ValueError) as err:
            raise self.bad(f"storage {i}: {err}") from None
        if location.partition(":")[0] == "meta":
            return core._new_storage(nbytes, "meta")
        name = storage_member(i)
        info = self.ar.info(name)
        if info.file_size != nbytes:                 # checked before allocating anything
            self.ar.fail(f"member {name!r} holds {info.file_size} bytes, the structure "
                         f"expects {nbytes}: the file is corrupted")
        s = None
        if self.mapped is not None:
            off = self.ar.data_offset(name, info)
            if off >= 0:
                s = self.mapped.storage(off, nbytes)
        if s is None:
            s = core._new_storage(nbytes)
            self.ar.read_into(name, _io.buffer(s.data_ptr(), nbytes))
        return self.restore(s, location)

    def _tensor(self, d):
        try:
            k = d["s"]
            if type(k) is not int or k < 0:
                raise IndexError(f"storage index {_r(k)}")
            s = self.storages[k]
            dt = dtype_named(d["dtype"])
            shape, stride, offset = d["shape"], d["stride"], d["offset"]
            check_view(s.nbytes(), dt.itemsize, shape, stride, offset)
            t = core._from_storage(s, shape, stride, dt, offset)
            mb = d.get("mb", 0)
            if type(mb) is not int or mb < 0 or mb > 3:
                raise ValueError(f"math bits {_r(mb)}")
            if mb:
                set_math_bits(t, bool(mb & 1), bool(mb & 2))
            rg = d.get("rg", False) is True
            if d.get("param", False) is True:
                return make_parameter(t, rg)
            if rg:
                t.requires_grad_(True)
            return t
        except (KeyError, TypeError, ValueError, IndexError, RuntimeError) as e:
            raise self.bad(f"tensor {_r(d)}: {e}") from None

    def _unpickle(self, types):
        import io

        if not isinstance(types, list):
            raise self.bad("objects")
        raw = self.ar.read(OBJECTS)
        if self.weights_only:
            held = [str(t) for t in types]

            def resolve(module, name):
                obj = safe_global(module, name)
                if obj is None:
                    raise refuse(self.label, *py2_name(module, name), held)
                return obj

            objs = _unpickle.Unpickler(raw, self.label, _unpickle.Policy(resolve),
                                       lambda pid: _persistent(self, pid),
                                       "objects member").load()
        else:
            objs = _TrustedUnpickler(io.BytesIO(raw), self).load()
        if not isinstance(objs, list):
            raise self.bad("objects member is not a list")
        self.objects = objs

    # -- structure nodes --------------------------------------------------------
    def decode(self, x):
        t = type(x)
        if t is list:
            out = []
            self.memo.append(out)
            dec = self.decode
            for v in x:
                out.append(dec(v))
            return out
        if t is not dict:
            return x
        return _DECODERS[x["T"]](self, x)

    def _dict(self, x, cls):
        out = cls()
        self.memo.append(out)
        dec = self.decode
        for k, v in x["v"]:
            out[dec(k)] = dec(v)
        if "attrs" in x:
            attrs = dec(x["attrs"])
            if cls is OrderedDict and isinstance(attrs, dict):
                for k, v in attrs.items():
                    if type(k) is not str:
                        raise TypeError("attribute names must be strings")
                    setattr(out, k, v)
        return out

    def _float(self, x):
        v = x["v"]
        if v not in ("nan", "inf", "-inf"):
            raise ValueError(f"float {_r(v)}")
        return float(v)

    def _bytes(self, x):
        return base64.b64decode(x["v"].encode("ascii"), validate=True)

    def _ref(self, x):
        i = x["v"]
        if type(i) is not int or i < 0:
            raise IndexError(f"ref {_r(i)}")
        return self.memo[i]

    def _pickle(self, x):
        i = x["v"]
        if self.objects is None or type(i) is not int:
            raise ValueError("a pickled object without an objects member")
        return self.objects[i]


def _index(table):
    def get(self, x):
        i = x["v"]
        if type(i) is not int or i < 0:
            raise IndexError(f"index {_r(i)}")
        return getattr(self, table)[i]
    return get


_DECODERS = {
    "float": Loader._float,
    "tuple": lambda self, x: tuple([self.decode(v) for v in x["v"]]),
    "dict": lambda self, x: self._dict(x, dict),
    "odict": lambda self, x: self._dict(x, OrderedDict),
    "set": lambda self, x: {self.decode(v) for v in x["v"]},
    "frozenset": lambda self, x: frozenset([self.decode(v) for v in x["v"]]),
    "bytes": Loader._bytes,
    "bytearray": lambda self, x: bytearray(self._bytes(x)),
    "complex": lambda self, x: complex(self.decode(x["v"][0]), self.decode(x["v"][1])),
    "size": lambda self, x: core.Size([int(v) for v in x["v"]]),
    "dtype": lambda self, x: dtype_named(x["v"]),
    "device": lambda self, x: core.Device(x["v"]),
    "tensor": _index("tensors"),
    "storage": _index("storages"),
    "ref": Loader._ref,
    "pickle": Loader._pickle,
}


def load(archive, map_location, weights_only, mapped):
    return Loader(archive, map_location, weights_only, mapped).load()
