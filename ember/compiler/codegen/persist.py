"""Captured graphs kept on disk beside their kernels, so a new process skips the
capture run: the first call with a warm cache loads the graph and the shared
object and runs generated code at once.

Only entries whose validity a new process can re-check are kept: a plain
function (not a module, no bound ``self``) whose arguments are tensors and
scalars, which lifts no outside tensors, whose guarded Python state is
scalars only (globals, closure variables), and whose ops were all called
from its own body (a helper function's code is not re-checked, so a graph
that ran through one is not kept).  The file name hashes the function's code
(bytecode, constants, names, file, line), the size and modification time of
its source file, of the files of the modules it reads as globals (a config
module edited between runs misses) and of ember's own files, the argument
guard key (structure, shapes, strides, dtypes, devices, requires_grad,
scalar values, aliasing, global switches), the mode and ember's version; the
guarded scalars are stored inside and compared with their current values
before an entry is used.  Files are written atomically; one that does not
load is ignored (and rewritten by the next capture).  Values the function
reads from outside Python's variables (environment variables, files) are as
unguarded here as in a replay within one process.
"""
from __future__ import annotations

import functools
import hashlib
import os
import pickle
import re
import types
from typing import Any

from ember.fx import Graph, GraphModule, Node
from ember.fx.node import map_arg

from . import cache

_FORMAT = 1
_SCALARS = (int, float, bool, str, complex, type(None))


class _Slot:
    """Stands for capture's "an output tensor goes here" marker in stored constants."""


class _Ref:
    """A reference to the ``i``-th node in a stored graph."""

    __slots__ = ("i",)

    def __init__(self, i: int) -> None:
        self.i = i

    def __getstate__(self) -> int:
        return self.i

    def __setstate__(self, i: int) -> None:
        self.i = i


def _code_hash(code: Any, h: Any) -> None:
    h.update(code.co_code)
    h.update(repr((code.co_names, code.co_varnames, code.co_freevars, code.co_filename,
                   code.co_firstlineno, code.co_qualname)).encode())
    for c in code.co_consts:
        if hasattr(c, "co_code"):
            _code_hash(c, h)
        else:
            h.update(repr(c).encode())


@functools.lru_cache(maxsize=1)
def _ember_files() -> str:
    """A fingerprint of ember's installed files (a checkout edited between runs misses)."""
    import ember
    root = os.path.dirname(os.path.abspath(ember.__file__))
    h = hashlib.sha256()
    for d, dirs, files in os.walk(root):
        dirs.sort()
        for f in sorted(files):
            if f.endswith((".py", ".so", ".pyd")):
                st = os.stat(os.path.join(d, f))
                h.update(f"{d}/{f}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()


def _file_stamp(path: Any) -> tuple:
    try:
        st = os.stat(path)
        return (path, st.st_size, st.st_mtime_ns)
    except (OSError, TypeError, ValueError):
        return (path, None)


def _path(code: Any, key: tuple, leaves: list) -> Any:
    """The entry's file, or None when this call cannot be kept on disk."""
    fn = code.fn
    f = getattr(fn, "__code__", None)
    if f is None or getattr(fn, "__self__", None) is not None:
        return None
    if not all(type(x) in _SCALARS or _is_tensor(x) for x in leaves):
        return None
    from ember._version import __version__

    from ..capture import code_names
    g = getattr(fn, "__globals__", {})
    files = [_file_stamp(f.co_filename)]
    for name in sorted(code_names(f)):
        v = g.get(name)
        if isinstance(v, types.ModuleType):
            files.append(_file_stamp(getattr(v, "__file__", None)))
    h = hashlib.sha256()
    h.update(repr((files, _ember_files())).encode())
    _code_hash(f, h)
    h.update(repr((_FORMAT, __version__, str(code.mode), sorted(code.options.items()),
                   key)).encode())
    return cache.cache_dir().parent / "graphs" / f"{h.hexdigest()}.pkl"


def _is_tensor(x: Any) -> bool:
    from ember._C.core import TensorBase
    return isinstance(x, TensorBase)


def _guard_values(guards: Any) -> list | None:
    """The guarded state as (key, value) pairs, or None if some value is not a scalar."""
    from ..capture import _Frozen, _KeySet
    out = []
    for d, k, v in guards.items:
        if type(k) is _KeySet:
            return None
        if type(v) is _Frozen:
            v = ("frozen", v.type.__name__, v.value)
        elif type(v) not in _SCALARS:
            return None
        out.append((k, v))
    return out


def _fresh_guards(fn: Any) -> tuple:
    """The guards a capture of ``fn`` would start from, read from the current state."""
    from ..capture import StateGuards, fn_state, module_state
    guards, mods = StateGuards(), []
    fn_state(fn, guards, mods, None)
    module_guards = StateGuards()
    module_state(mods, module_guards)
    return guards, mods, module_guards


def save(code: Any, entry: Any, key: tuple, leaves: list) -> bool:
    """Write ``entry`` (a captured, compiled guard set of ``code``) to disk if it qualifies."""
    from ..capture import _MISSING
    from .backend import CompiledGraph
    if not isinstance(entry.compiled, CompiledGraph) or entry.lifted or entry.gm is None:
        return False
    path = _path(code, key, leaves)
    values = _guard_values(entry.guards)
    if path is None or values is None:
        return False
    fresh, mods, _ = _fresh_guards(code.fn)
    if mods or _guard_values(fresh) != values:
        return False        # state found while running (modules, frames) is not re-checkable
    if not _own_ops(code.fn, entry.gm):
        return False
    nodes = list(entry.gm.graph.nodes)
    index = {n: i for i, n in enumerate(nodes)}
    recs = []
    for n in nodes:
        meta = {k: n.meta[k] for k in ("tensor_meta", "op_name") if k in n.meta}
        recs.append((n.op, n.name, n.target, map_arg(n.args, lambda a: _Ref(index[a])),
                     map_arg(n.kwargs, lambda a: _Ref(index[a])), meta))
    try:
        data = pickle.dumps({"nodes": recs, "user_idx": entry.user_idx,
                             "out_spec": entry.out_spec,
                             "consts": [_Slot if c is _MISSING else c for c in entry.consts],
                             "guards": values}, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - something in the graph has no stable name
        return False
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        cache._write_atomic(path, data)
    except OSError:
        return False        # a read-only or full cache: this process keeps it in memory
    return True


_FRAME = re.compile(r'File "(.*)", line (\d+), in (.*)')


def _own_ops(fn: Any, gm: Any) -> bool:
    """Whether every recorded op was called from ``fn``'s own body."""
    code = fn.__code__
    lines = [ln for _, _, ln in code.co_lines() if ln is not None] + [code.co_firstlineno]
    lo, hi = min(lines), max(lines)
    for n in gm.graph.nodes:
        st = n.meta.get("stack_trace")
        if n.op not in ("call_function", "call_method") or st is None:
            continue
        m = _FRAME.match(st)
        if m is None or m.group(1) != code.co_filename or m.group(3) != code.co_name or \
                not lo <= int(m.group(2)) <= hi:
            return False
    return True


def _refs(obj: Any, nodes: list) -> Any:
    t = type(obj)
    if t is _Ref:
        return nodes[obj.i]
    if t in (tuple, list):
        return t(_refs(x, nodes) for x in obj)
    if t is dict:
        return {k: _refs(v, nodes) for k, v in obj.items()}
    if t is slice:
        return slice(_refs(obj.start, nodes), _refs(obj.stop, nodes), _refs(obj.step, nodes))
    return obj


def restore(code: Any, key: tuple, leaves: list) -> Any:
    """The stored entry for this call of ``code`` (compiled, guards re-checked), or None."""
    path = _path(code, key, leaves)
    if path is None:
        return None
    try:
        data = pickle.loads(path.read_bytes())
        recs = data["nodes"]
    except Exception:  # noqa: BLE001 - absent, partial or from another format: capture
        return None
    guards, mods, module_guards = _fresh_guards(code.fn)
    if mods or _guard_values(guards) != data["guards"]:
        return None
    from ember.nn import Module

    from ..capture import _MISSING, _Entry
    g = Graph()
    nodes: list[Node] = []
    for op, name, target, args, kwargs, meta in recs:
        n = g.create_node(op, target, _refs(args, nodes), _refs(kwargs, nodes), name)
        n.meta.update(meta)
        nodes.append(n)
    gm = GraphModule(Module(), g, "GraphModule")
    user_idx = data["user_idx"]
    compiled = code.backend.compile(gm, [leaves[i] for i in user_idx], mode=code.mode,
                                    options=code.options)
    consts = [_MISSING if c is _Slot else c for c in data["consts"]]
    return _Entry(key, guards, compiled, user_idx, [], [], data["out_spec"], consts,
                  gm=gm, module_guards=module_guards, leaves=leaves, lifted_paths=[])
