"""Saving and loading: ``ember.save`` / ``ember.load``, safe by construction.

``ember.save`` writes PyTorch's own checkpoint layout (a zip with ``archive/data.pkl``,
one ``archive/data/<key>`` member per storage, 64-byte aligned, ``version``,
``byteorder``, ``.data/serialization_id``), pickling only the names
``torch.load(weights_only=True)`` accepts (``torch._utils._rebuild_tensor_v2``,
``torch.FloatStorage``-style storage ids, ``collections.OrderedDict``,
``torch._utils._rebuild_parameter``, ``torch.Size``, ``torch.device``, dtypes), so
PyTorch loads ember's files with its safe default and ember loads PyTorch's.  Views
of one storage stay views of one storage; ``requires_grad`` and Parameter-ness
survive.  ``format="ember"`` writes ember's own format instead (below).

``ember.load`` never runs code from a file unless ``weights_only=False``: pickles
go through ember's restricted interpreter, which builds only the vocabulary above,
plain containers and numbers, and what :func:`add_safe_globals` allows; BUILD and
REDUCE cannot reach anything else, declared sizes are checked against the archive
before anything is allocated, and containers nested deeper than 1000 are refused.

ember's own format (``format="ember"``, read by every ``ember.load``): the object's
structure as JSON (dicts, lists, tuples, ``OrderedDict``, None, bools, ints, floats
incl. nan/inf, strings, bytes, sets, complex, dtypes, devices, ``ember.Size``,
tensors and their views, ``nn.Parameter``) and each storage once as raw
little-endian bytes; its header carries a format version, and a view of one storage
as two dtypes is kept (PyTorch's format cannot hold that).  Only an object outside
the vocabulary is pickled, into a separate member.

:func:`save_safetensors` / :func:`load_safetensors` read and write safetensors.

Saving to a path is atomic (temporary file in the same folder, flush, fsync,
rename); the temporaries of saves that were killed are removed by the next save to
the same path.  Every member carries a CRC-32 that ``load`` checks (``mmap=True``
skips the storage CRCs, which would mean reading every byte).  A damaged, truncated
or foreign file raises :class:`CheckpointError` (a ``RuntimeError``) naming the file
and the problem; a file that needs more than ``weights_only=True`` allows raises
``pickle.UnpicklingError``."""
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
         _disable_byteorder_record=False, *, format: str = "torch") -> None:
    """Save ``obj`` (a tensor, state_dict, optimizer state, nested containers, ...).

    Parameters
    ----------
    obj : object
    f : path or binary file object
        A path (``str``/``bytes``/``os.PathLike``; written atomically) or a writable
        binary file object (``io.BytesIO`` too).
    pickle_protocol : int
        The pickle protocol (2, PyTorch's default, unless you need another).
    format : {"torch", "ember"}
        ``"torch"`` (the default): PyTorch's archive layout, which
        ``torch.load(weights_only=True)`` reads.  ``"ember"``: ember's own format
        (JSON structure, read by ember only), which can also keep one storage viewed
        as two dtypes.

    ``pickle_module`` and the underscore arguments are accepted for compatibility
    with ``torch.save``.
    """
    from ember._serialization import _ember, _io, _torch

    if not (_io.is_path(f) or hasattr(f, "write")):
        raise TypeError(f"ember.save: expected a path or a writable binary file object, got "
                        f"{type(f).__name__}")
    if format == "torch":
        payload = _torch.Writer(obj, pickle_protocol)
    elif format == "ember":
        payload = _ember.Payload(obj, pickle_protocol)
    else:
        raise ValueError(f"ember.save: format must be 'torch' or 'ember', got {format!r}")
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
