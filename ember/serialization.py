"""Saving and loading: ``ember.save`` / ``ember.load``, safe by construction.

An ember checkpoint is a zip archive: the object's structure as JSON (dicts, lists,
tuples, ``OrderedDict``, None, bools, ints, floats incl. nan/inf, strings, bytes,
sets, complex, dtypes, devices, ``ember.Size``, tensors and their views,
``nn.Parameter``, optimizer state_dicts) and each storage once as raw
little-endian bytes, stored uncompressed and 64-byte aligned, so ``mmap=True``
maps tensors straight from the file.  Views of one storage stay views of one
storage; ``requires_grad`` and Parameter-ness survive.

Loading such a file never runs code: JSON cannot.  Only an object outside the
vocabulary is pickled (into a separate member), and ``load`` refuses to unpickle
it unless its class is allowed with :func:`add_safe_globals` or the caller passes
``weights_only=False`` for a file it trusts.

``ember.load`` also reads PyTorch ``torch.save`` zip files (tensors, state_dicts,
nested containers) through a restricted unpickler, without importing torch, and
:func:`save_safetensors` / :func:`load_safetensors` read and write safetensors.

Saving to a path is atomic (temporary file in the same folder, flush, fsync,
rename).  Every member carries a CRC-32 that ``load`` checks (``mmap=True`` skips
the storage CRCs, which would mean reading every byte); the header carries a format
version.  A damaged, truncated or foreign file raises :class:`CheckpointError`
(a ``RuntimeError``) naming the file and the problem."""
from __future__ import annotations

import os as _os

from ember._serialization import CheckpointError

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals",
           "safe_globals", "save_safetensors", "load_safetensors", "safetensors_metadata",
           "CheckpointError", "FORMAT_VERSION"]

FORMAT_VERSION = 1          # the newest checkpoint format this ember writes and reads

_SAFE_GLOBALS = {}          # "module.qualname" -> object


def _name_of(obj) -> str:
    mod = getattr(obj, "__module__", None)
    qn = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if not mod or not qn:
        raise TypeError(f"add_safe_globals: {obj!r} has no __module__/__qualname__; pass "
                        f"(obj, 'module.name') instead")
    return f"{mod}.{qn}"


def add_safe_globals(safe_globals) -> None:
    """Allow these classes/functions in pickled members when ``weights_only=True``.

    Each entry is an object (named by its ``__module__`` and ``__qualname__``) or an
    ``(object, "module.name")`` pair.  Only allow what you trust: unpickling an
    allowed class calls it (or its ``__reduce__`` target) with data from the file."""
    for g in safe_globals:
        if isinstance(g, tuple):
            obj, name = g
            if not isinstance(name, str):
                raise TypeError("add_safe_globals: (obj, name) needs a str name")
        else:
            obj, name = g, _name_of(g)
        _SAFE_GLOBALS[name] = obj


def get_safe_globals() -> list:
    """The objects allowed by :func:`add_safe_globals`."""
    return list(_SAFE_GLOBALS.values())


def clear_safe_globals() -> None:
    _SAFE_GLOBALS.clear()


class safe_globals:
    """``with ember.serialization.safe_globals([Foo]): ember.load(f)``: allowed inside
    the block only."""

    def __init__(self, safe_globals):
        self.globals = list(safe_globals)

    def __enter__(self):
        self._saved = dict(_SAFE_GLOBALS)
        add_safe_globals(self.globals)
        return self

    def __exit__(self, *exc):
        _SAFE_GLOBALS.clear()
        _SAFE_GLOBALS.update(self._saved)
        return False


def _safe_global_lookup(key: str):
    return _SAFE_GLOBALS.get(key)


def save(obj, f, pickle_module=None, pickle_protocol=2, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False) -> None:
    """Save ``obj`` (a tensor, state_dict, optimizer state, nested containers, ...) to
    ``f``: a path (``str``/``bytes``/``os.PathLike``; written atomically) or a binary
    file object (``io.BytesIO`` too).  ``pickle_protocol`` applies to the pickled
    member that only objects outside the vocabulary need; the other PyTorch
    arguments are accepted for compatibility."""
    from ember._serialization import _ember, _io

    if not (_io.is_path(f) or hasattr(f, "write")):
        raise TypeError(f"ember.save: expected a path or a writable binary file object, got "
                        f"{type(f).__name__}")
    payload = _ember.Payload(obj, pickle_protocol)
    if _io.is_path(f):
        _io.atomic_write(f, payload.write)
    else:
        payload.write(f)


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None,
         **pickle_load_args):
    """Load what :func:`save` (or ``torch.save``) wrote.

    Parameters
    ----------
    f : path or binary file object
    map_location : None, str, ember.device, dict or callable
        Where storages go, as in ``torch.load``: None restores the saved device; a
        device (or its name) sends every storage there; a dict maps saved locations
        (``"cpu"``, ``"cuda:0"``) to new ones; a callable ``(storage, location)``
        returns the storage to use (or None for the default).
    weights_only : bool
        True (the default, also for None): never unpickle anything outside ember's
        vocabulary and :func:`add_safe_globals`.  False: unpickle anything -- only for
        files you trust.
    mmap : bool
        Map storages from the file (copy-on-write) instead of reading them; needs a
        path or a real file.  Storage CRCs are not checked in this mode.
    """
    from ember._serialization import _ember, _io, _torch

    weights_only = True if weights_only is None else bool(weights_only)
    label = _io.describe(f)
    fobj, close = _io.open_for_read(f, label)
    try:
        ar = _io.Archive(fobj, label)
        mapped = None
        if mmap:
            try:
                fobj.fileno()
            except (AttributeError, OSError, ValueError) as e:
                raise ValueError(f"ember.load(mmap=True) needs a file path or a file object "
                                 f"with a fileno(), got {type(f).__name__}") from e
            mapped = _io.MappedFile(fobj)
        try:
            if _ember.HEADER in ar.infos:
                obj = _ember.load(ar, map_location, weights_only, mapped)
            elif _torch.find_prefix(ar) is not None:
                obj = _torch.load(ar, _torch.find_prefix(ar), map_location, weights_only,
                                  mapped)
            else:
                names = ", ".join(sorted(ar.infos)[:5]) or "none"
                ar.fail(f"a zip archive that is neither an ember checkpoint nor a PyTorch "
                        f"file (members: {names})")
            ar.finish()                         # the background CRC checks
            return obj
        finally:
            ar.close()
    finally:
        if close:
            fobj.close()


def save_safetensors(tensors, f, metadata=None) -> None:
    """Write a dict of name -> tensor in the safetensors format (to a path, atomically,
    or a binary file object).  ``metadata`` is an optional str -> str dict.  Tensors
    are written contiguously (views are copied; shared storage is not kept)."""
    from ember._serialization import _safetensors

    _safetensors.save(tensors, f, metadata)


def load_safetensors(f, device="cpu", *, mmap=False):
    """Read a safetensors file (path, binary file object or bytes) into a dict of
    name -> tensor on ``device``; ``mmap=True`` maps the data (copy-on-write)."""
    from ember._serialization import _safetensors

    return _safetensors.load(f, device, mmap)


def safetensors_metadata(f) -> dict:
    """The ``__metadata__`` dict of a safetensors file ({} when it has none)."""
    from ember._serialization import _safetensors

    return _safetensors.metadata(f)


del _os
