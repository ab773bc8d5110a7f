"""The safetensors format: ``<u64 little-endian header length N><N bytes of JSON header>
<data>``.  The header maps each tensor name to ``{"dtype", "shape", "data_offsets":
[begin, end]}`` (offsets into the data, which the tensors tile without gaps) and may hold
``"__metadata__"``: a str -> str dict.  The header is padded with spaces to 8 bytes."""
from __future__ import annotations

import json
import reprlib
import struct

from ember._C import core
from ember._serialization import CheckpointError, _ember, _io

_TO_ST = {"float64": "F64", "float32": "F32", "float16": "F16", "bfloat16": "BF16",
          "int64": "I64", "int32": "I32", "int16": "I16", "int8": "I8", "uint8": "U8",
          "bool": "BOOL", "complex64": "C64"}
_FROM_ST = {v: k for k, v in _TO_ST.items()}
MAX_HEADER = 100 * 1024 * 1024


def _contiguous_bytes(t):
    """(bytes view, owner) of a tensor's elements in row-major order."""
    if t.device.type != "cpu":
        t = t.cpu()
    t = t.resolve_conj().resolve_neg()      # the values, never lazy bits
    if not t.is_contiguous():
        t = t.contiguous()
    n = t.numel() * t.element_size()
    return _io.buffer(t.data_ptr(), n), t


class _Writer:
    def __init__(self, tensors, metadata):
        if not isinstance(tensors, dict):
            raise TypeError(f"save_safetensors expects a dict of name -> tensor, got "
                            f"{type(tensors).__name__}")
        items = []
        for k, t in tensors.items():
            if type(k) is not str:
                raise TypeError(f"save_safetensors: tensor names must be str, got {k!r}")
            if k == "__metadata__":
                raise ValueError("save_safetensors: '__metadata__' is a reserved name")
            if not isinstance(t, core.TensorBase):
                raise TypeError(f"save_safetensors: {k!r} is a {type(t).__name__}, not a tensor")
            if t.device.type == "meta":
                raise ValueError(f"save_safetensors: {k!r} is a meta tensor (it has no data)")
            if t.dtype._name not in _TO_ST:
                # the format has no code for it (complex128, complex32): safetensors' KeyError
                raise KeyError(f"save_safetensors: {k!r} has dtype {t.dtype._name}, which the "
                               f"safetensors format cannot store")
            items.append((k, t))
        # Biggest elements first, then by name: every tensor stays aligned to its itemsize.
        items.sort(key=lambda kv: (-kv[1].element_size(), kv[0]))
        header = {}
        if metadata is not None:
            if not isinstance(metadata, dict) or not all(
                    type(k) is str and type(v) is str for k, v in metadata.items()):
                raise TypeError("save_safetensors: metadata must be a dict of str -> str")
            header["__metadata__"] = dict(metadata)
        self.views = []
        off = 0
        for k, t in items:
            view, owner = _contiguous_bytes(t)
            header[k] = {"dtype": _TO_ST[t.dtype._name], "shape": list(t.shape),
                         "data_offsets": [off, off + view.nbytes]}
            off += view.nbytes
            self.views.append((view, owner))
        h = json.dumps(header, separators=(",", ":")).encode()
        h += b" " * (-len(h) % 8)
        self.head = struct.pack("<Q", len(h)) + h

    def write(self, f):
        f.write(self.head)
        for view, _owner in self.views:
            if view.nbytes:
                f.write(view)


def save(tensors, f, metadata=None):
    w = _Writer(tensors, metadata)
    if _io.is_path(f):
        _io.atomic_write(f, w.write)
    else:
        w.write(f)


def _read_header(f, label, size):
    def fail(why):
        raise CheckpointError(f"{label}: {why}")

    f.seek(0)
    raw = f.read(8)
    if len(raw) < 8:
        fail("the file is empty" if not raw else "the file is truncated (no safetensors header)")
    (n,) = struct.unpack("<Q", raw)
    if n > MAX_HEADER or n + 8 > size:
        if raw.startswith(b"PK\x03\x04"):
            fail("it is a zip archive, not a safetensors file: load it with ember.load")
        fail(f"bad safetensors header length {n} (file of {size} bytes): the file is truncated, "
             f"corrupted or not a safetensors file")
    h = f.read(n)
    try:
        header = json.loads(h)
        if not isinstance(header, dict):
            raise ValueError("the header is not a JSON object")
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        fail(f"the safetensors header is not valid JSON ({e}): the file is corrupted or not a "
             f"safetensors file")
    return header, 8 + n


def _parse(header, data_len, fail):
    meta = header.pop("__metadata__", None)
    if meta is not None and not (isinstance(meta, dict) and all(
            type(k) is str and type(v) is str for k, v in meta.items())):
        fail("__metadata__ must be a str -> str dict")
    entries = []
    for name, e in header.items():
        try:
            dtype_s, shape, (b, end) = e["dtype"], e["shape"], e["data_offsets"]
        except (TypeError, KeyError, ValueError):
            fail(f"bad header entry for {name!r}: {reprlib.repr(e)}")
        if type(dtype_s) is not str or dtype_s not in _FROM_ST:
            fail(f"tensor {name!r} has dtype {reprlib.repr(dtype_s)}, which ember does not support "
                 f"(supported: {', '.join(_FROM_ST)})")
        dt = core._dtype_by_name(_FROM_ST[dtype_s])
        if not (isinstance(shape, list) and len(shape) <= 16
                and all(type(v) is int and v >= 0 for v in shape)):
            fail(f"tensor {name!r} has a bad shape {reprlib.repr(shape)}")
        if not (type(b) is int and type(end) is int and 0 <= b <= end <= data_len):
            fail(f"tensor {name!r} has data offsets [{b}, {end}] outside the data "
                 f"({data_len} bytes): the file is truncated or corrupted")
        numel = 1
        for v in shape:
            numel *= v
        if end - b != numel * dt.itemsize:
            fail(f"tensor {name!r}: data offsets [{b}, {end}] do not match shape {shape} "
                 f"and dtype {dtype_s}")
        entries.append((name, dt, shape, b, end))
    return entries, meta


def load(f, device="cpu", mmap=False):
    label = _io.describe(f) if not isinstance(f, (bytes, bytearray, memoryview)) else "<bytes>"
    if isinstance(f, (bytes, bytearray, memoryview)):
        import io

        f = io.BytesIO(f)
    fobj, close = _io.open_for_read(f, label)
    try:
        fobj.seek(0, 2)
        size = fobj.tell()
        header, start = _read_header(fobj, label, size)

        def fail(why):
            raise CheckpointError(f"{label}: {why}")

        entries, _meta = _parse(header, size - start, fail)
        mapped = _io.MappedFile(fobj) if mmap else None
        restore = _ember.Restorer(device, label)
        out = {}
        for name, dt, shape, b, end in entries:
            nbytes = end - b
            pos = start + b
            if mapped is not None and pos % dt.itemsize == 0:
                s = mapped.storage(pos, nbytes)
            else:
                s = core._new_storage(nbytes)
                if nbytes:
                    fobj.seek(pos)
                    view = _io.buffer(s.data_ptr(), nbytes)
                    got = 0
                    while got < nbytes:
                        k = fobj.readinto(view[got:])
                        if not k:
                            fail(f"tensor {name!r} is cut short: the file is truncated")
                        got += k
            s = restore(s, "cpu")
            st, acc = [0] * len(shape), 1
            for i in range(len(shape) - 1, -1, -1):
                st[i] = acc
                acc *= shape[i]
            out[name] = core._from_storage(s, shape, st, dt, 0)
        return out
    finally:
        if close:
            fobj.close()


def metadata(f):
    label = _io.describe(f)
    fobj, close = _io.open_for_read(f, label)
    try:
        fobj.seek(0, 2)
        header, _ = _read_header(fobj, label, fobj.tell())
        meta = header.get("__metadata__")
        return dict(meta) if isinstance(meta, dict) else {}
    finally:
        if close:
            fobj.close()
