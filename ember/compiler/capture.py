"""Graph capture for ``ember.compile``: run once under the dispatcher's Python key,
record every op into an ``ember.fx`` Graph, and reuse it while guards hold.

The first call with a new guard set runs the function for real with a
:class:`_Capture` mode installed; each op is executed and recorded.  User
tensor inputs become placeholders, and so do the parameters and buffers of
the modules involved (fetched by attribute path on every call, so optimizer
steps and reassigned parameters are seen).  A tensor value read into Python
(``item``, ``float(t)``, ``if t > 0``, small ``tolist``/``numpy``), an op with a
data-dependent output shape and a ``disable``d function *split* the graph:
the capture goes on, and replays check the value (or output shapes) between
the pieces (:mod:`ember.compiler.segments`).  When something cannot be
replayed faithfully (a view of the data escaping (DLPack, a returned array), a mutation the
dispatcher did not see, a Python side effect, a split after an in-place
update of an input) the capture *breaks*: that guard set runs eagerly from
then on.  Replaying a graph never bakes a value that a guard does not protect.
"""

from __future__ import annotations

import functools
import itertools
import linecache
import os
import sys
import threading
import time
import warnings
from typing import Any, Callable

from ember import _switches
from ember import compiler as _compiler
from ember._C import core as _core
from ember.autograd._hooks import _hook_writes
from ember.compiler import segments, symsize
from ember.fx.graph import Graph
from ember.fx.graph_module import GraphModule
from ember.fx.node import Node
from ember.fx.passes.shape_prop import _extract_tensor_metadata
from ember.library import DispatchMode
from ember.nn.modules.module import _state_writes

TensorBase = _core.TensorBase
_SCALARS = (int, float, bool, str, complex, type(None))
_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_MISSING = object()

# ops whose result shape (or Python value) depends on tensor data
_DATA_DEPENDENT = frozenset({"nonzero", "masked_select", "unique", "unique_consecutive",
                             "bincount", "argwhere", "masked_scatter", "masked_scatter_"})
_TO_PYTHON = frozenset({"item", "tolist", "numpy", "__array__", "__array_interface__",
                        "__dlpack__"})
# breaks the program is split at: values read into Python (guarded by value) and ops
# run eagerly between two graphs (their output shapes guarded)
_VALUE_READS = frozenset({"item", "tolist", "numpy", "__array__", "__array_interface__"})
_TOLIST_MAX = 1024        # values at most (tolist, numpy): each replay compares them
_EAGER_STEPS = _DATA_DEPENDENT | {"getitem", "repeat_interleave"}
# in-place ops whose first argument is written
_INPLACE_EXTRA = frozenset({"setitem", "copy_", "fill_"})


class GraphBreakError(RuntimeError):
    """``fullgraph=True`` and the function cannot be captured as one graph."""


# ---------------------------------------------------------------------------
# pytrees of args/outputs: tuples, lists, dicts (others are leaves)
# ---------------------------------------------------------------------------

def flatten(obj: Any, leaves: list) -> Any:
    """Append the leaves of ``obj`` to ``leaves`` and return a hashable spec."""
    t = type(obj)
    if t is tuple or t is list:
        return (t, tuple(flatten(x, leaves) for x in obj))
    if t is dict:
        return (dict, tuple(obj), tuple(flatten(v, leaves) for v in obj.values()))
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return (t, tuple(flatten(x, leaves) for x in obj))
    leaves.append(obj)
    return None


def unflatten(spec: Any, it: Any) -> Any:
    if spec is None:
        return next(it)
    t = spec[0]
    if t is dict:
        return {k: unflatten(s, it) for k, s in zip(spec[1], spec[2])}
    items = [unflatten(s, it) for s in spec[1]]
    if t is tuple:
        return tuple(items)
    if t is list:
        return items
    return t(*items)


_CONTAINERS = (tuple, list, dict)


def tensor_key(t: Any) -> tuple:
    return (t.shape, t.dtype, t.device, t.requires_grad, t.stride())


def leaf_key(x: Any) -> Any:
    if isinstance(x, TensorBase):
        return tensor_key(x)
    if type(x) in _SCALARS:
        return (type(x), x)
    if isinstance(x, (_core.DType, _core.Device)):
        return x
    return (type(x), id(x))


def _rng_state() -> tuple[int, int]:
    from ember._C.random import default_generator as g
    return (g.initial_seed(), g.get_offset())


_grad_on = _core.is_grad_enabled
_default_dtype = _core._get_default_dtype
_default_device = _core._get_default_device
_inference_on = _core.is_inference_mode_enabled


def switches() -> tuple:
    """The global switches that change what ops compute."""
    return (_grad_on(), _default_dtype(), _switches._deterministic, _default_device(),
            _inference_on())


def _module_writes() -> int:
    return _state_writes[0] + _hook_writes[0]


_rg_writes = _core._requires_grad_writes


def describe_key_change(old: tuple, new: tuple, names: list[str]) -> str:
    """Which guard of a cache entry a new call failed, in torch's words."""
    (ospec, oleaves, oalias, osw), (nspec, nleaves, nalias, nsw) = old, new
    if osw != nsw:
        labels = ("grad mode", "default dtype", "deterministic algorithms", "default device",
                  "inference mode")
        for lab, a, b in zip(labels, osw, nsw):
            if a != b:
                return f"global state changed: {lab} was {a}, now {b}"
    if ospec != nspec or len(oleaves) != len(nleaves):
        return "the structure of the arguments changed (number, nesting or keyword names)"
    for name, a, b in zip(names + ["input"] * len(nleaves), oleaves, nleaves):
        if a == b:
            continue
        if isinstance(a, tuple) and len(a) == 5 and isinstance(b, tuple) and len(b) == 5:
            fields = ("size", "dtype", "device", "requires_grad", "stride")
            for f, x, y in zip(fields, a, b):
                if x != y:
                    if f in ("size", "stride") and len(x) == len(y):
                        i = next(i for i in range(len(x)) if x[i] != y[i])
                        return (f"tensor '{name}' {f} mismatch at index {i}. expected {x[i]}, "
                                f"actual {y[i]}")
                    return f"tensor '{name}' {f} mismatch. expected {x}, actual {y}"
        if isinstance(a, tuple) and len(a) == 2 and type(a[0]) is type:
            return f"{name} == {a[1]!r} (got {b[1] if isinstance(b, tuple) else b!r})"
        return f"{name}: argument changed from {a!r} to {b!r}"
    if oalias != nalias:
        return "tensor inputs alias each other differently"
    return "guard failed"


def alias_pattern(leaves: list) -> tuple:
    seen: dict[int, int] = {}
    out = []
    for i, x in enumerate(leaves):
        if isinstance(x, TensorBase):
            out.append(seen.setdefault(x._storage_id(), i))
    return tuple(out)


def user_frame_summary() -> str:
    """``file:line in fn`` and the source line of the innermost frame outside ember."""
    f = sys._getframe(1)
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(_EMBER_DIR):
        f = f.f_back
    if f is None:
        return "<unknown location>"
    line = linecache.getline(f.f_code.co_filename, f.f_lineno).strip()
    return f'File "{f.f_code.co_filename}", line {f.f_lineno}, in {f.f_code.co_name}\n    {line}'


# ---------------------------------------------------------------------------
# Python state the replay depends on (guarded) and must not change (side effects)
# ---------------------------------------------------------------------------

class _KeySet(str):
    """A StateGuards key meaning "the dict's key set" (its text says whose)."""


class StateGuards:
    """Values of Python state read by the function: module flags and scalar attributes,
    scalar globals and closure variables.  A replay is valid only while they hold."""

    def __init__(self) -> None:
        self.items: list[tuple[dict, str, Any]] = []
        self._seen: set[tuple[int, str]] = set()

    def add_dict(self, d: dict, keys: Any = None) -> None:
        for k in (d if keys is None else keys):
            v = d.get(k, _MISSING)
            if (id(d), k) in self._seen or v is _MISSING:
                continue
            if type(v) in _SCALARS or _is_module(v) or callable(v):
                self._seen.add((id(d), k))
                self.items.append((d, k, v))
            elif _scalar_container(v):
                # a config list/dict/tuple of scalars: compared by value on every check
                self._seen.add((id(d), k))
                self.items.append((d, k, _Frozen(v)))

    def add_keys(self, d: dict, describe: str) -> None:
        """Guard the set of keys of ``d`` (children, parameters, attributes added or removed)."""
        self.items.append((d, _KeySet(describe), tuple(d)))

    def check(self) -> tuple[dict, str, Any] | None:
        """The first guard that no longer holds, or None."""
        for d, k, v in self.items:
            if type(k) is _KeySet:
                if tuple(d) != v:
                    return (d, k, v)
                continue
            cur = d.get(k, _MISSING)
            if type(v) is _Frozen:
                if type(cur) is not v.type or cur != v.value:
                    return (d, k, v.value)
            elif cur is not v and not (type(v) in _SCALARS and type(cur) is type(v)
                                       and cur == v):
                return (d, k, v)
        return None


class _Frozen:
    """A copy of a container of scalars, to compare a guarded global or attribute with."""

    __slots__ = ("type", "value")

    def __init__(self, v: Any) -> None:
        self.type = type(v)
        self.value = v.copy() if hasattr(v, "copy") else v


def _scalar_container(v: Any) -> bool:
    t = type(v)
    if t in (list, tuple, set, frozenset):
        return len(v) <= 64 and all(type(x) in _SCALARS for x in v)
    if t is dict:
        return len(v) <= 64 and all(type(x) in _SCALARS for x in v.values())
    return False


def _is_module(x: Any) -> bool:
    nn = sys.modules.get("ember.nn")
    return nn is not None and isinstance(x, nn.Module)


def code_names(code: Any, out: set | None = None) -> set:
    """Global names a code object (and the functions nested in it) may read."""
    out = set() if out is None else out
    out.update(code.co_names)
    for c in code.co_consts:
        if hasattr(c, "co_names"):
            code_names(c, out)
    return out


def _fetch_entry(d: Any, k: str, leaves: list) -> Any:
    return d.get(k)


def _fetch_leaf_grad(i: int, leaves: list) -> Any:
    return getattr(leaves[i], "grad", None)


class _Slot:
    """A one-entry, dict-like view of an attribute (a closure cell's contents, a
    parameter's ``.grad``), so guards and lifted inputs read it like a dict entry."""

    __slots__ = ("obj", "attr")

    def __init__(self, obj: Any, attr: str) -> None:
        self.obj = obj
        self.attr = attr

    def get(self, key: Any, default: Any = None) -> Any:
        try:
            return getattr(self.obj, self.attr)
        except (AttributeError, ValueError):   # an empty cell raises ValueError
            return default

    def __getitem__(self, key: Any) -> Any:
        return getattr(self.obj, self.attr)


def fn_state(fn: Any, guards: StateGuards, modules: list, cap: Any = None) -> None:
    """Guard the globals and closure variables ``fn`` reads; collect the modules found
    there, and register their tensors with the capture ``cap``."""
    fn = getattr(fn, "__func__", fn)
    code = getattr(fn, "__code__", None)
    if code is None:
        return
    g = getattr(fn, "__globals__", {})
    names = [n for n in code_names(code) if n in g]
    guards.add_dict(g, names)
    for n in names:
        if _is_module(g[n]):
            modules.append(g[n])
        elif cap is not None and isinstance(g[n], TensorBase):
            cap.add_source(g[n], g, n, n, "_global")
    for name, cell in zip(code.co_freevars, getattr(fn, "__closure__", None) or ()):
        slot = _Slot(cell, "cell_contents")
        v = slot.get(name, _MISSING)
        if v is _MISSING:
            continue
        if _is_module(v):
            modules.append(v)
        elif isinstance(v, TensorBase):
            if cap is not None:
                cap.add_source(v, slot, name, name, "_closure")
        elif hasattr(v, "__code__"):
            fn_state(v, guards, modules, cap)
        else:
            guards.add_dict(slot, [name])


def module_state(mods: list, guards: StateGuards) -> list:
    """Guard the structure, flags and scalar attributes of every module in ``mods``'
    trees (and the global module hooks); returns the ids of the modules walked."""
    seen: set[int] = set()
    for root in mods:
        for m in root.modules():
            if id(m) in seen:
                continue
            seen.add(id(m))
            # private containers are module machinery (hooks, registries), covered by
            # the key-set guards below; public ones are configuration
            guards.add_dict(m.__dict__, [k for k, v in m.__dict__.items()
                                         if type(v) in _SCALARS or
                                         (k[:1] != "_" and _scalar_container(v))])
            guards.add_dict(m._modules)
            name = type(m).__name__
            guards.add_keys(m.__dict__, f"the attributes of a {name}")
            for kind in ("_modules", "_parameters", "_buffers", "_forward_pre_hooks",
                         "_forward_hooks", "_backward_hooks", "_backward_pre_hooks"):
                guards.add_keys(m.__dict__[kind], f"the {kind.strip('_')} of a {name}")
    from ember.nn.modules import module as _m
    for g in ("_global_forward_pre_hooks", "_global_forward_hooks", "_global_backward_hooks",
              "_global_backward_pre_hooks"):
        guards.add_keys(getattr(_m, g), g.strip("_"))
    return list(seen)


def snapshot(mods: list, fn: Any, leaves: list = (), watched: list = ()) -> dict:
    """Python state a side effect would change: module attributes, the sizes of
    containers in module attributes and the function's globals, and the
    hyperparameters of optimizers the function reads or ``watched`` ones."""
    import ember
    # hooks registered while running (tensor hooks, retain_grad, module backward
    # hooks) would not be registered again by a replay
    snap: dict = {("switches", ""): switches(), ("seed", ""): ember.initial_seed(),
                  ("hooks", ""): _hook_writes[0]}
    for root in mods:
        for m in root.modules():
            for k, v in m.__dict__.items():
                if type(v) in _SCALARS:
                    snap[(id(m.__dict__), k)] = v
                elif type(v) in (list, dict, set):
                    snap[(id(v), "#len")] = len(v)
            snap[(id(m.__dict__), "#keys")] = tuple(m.__dict__)
            for p in m._parameters.values():
                if p is not None:     # backward() inside sets .grad: a replay would not
                    snap[(id(p), "grad")] = id(p.grad)
    for x in leaves:
        if isinstance(x, TensorBase) and x.requires_grad and x.is_leaf:
            snap[(id(x), "grad")] = id(x.grad)
    f = getattr(fn, "__func__", fn)
    g = getattr(f, "__globals__", None)
    if g is not None and hasattr(f, "__code__"):
        for n in code_names(f.__code__):
            v = g.get(n, _MISSING)
            snap[(id(g), n)] = v if type(v) in _SCALARS else id(v)
            if type(v) in (list, dict, set):
                snap[(id(v), "#len")] = len(v)
            _optimizer_state(v, snap)
        for c in getattr(f, "__closure__", None) or ():
            try:
                _optimizer_state(c.cell_contents, snap)
            except ValueError:          # an empty cell
                pass
    for opt in watched:
        _optimizer_state(opt, snap)
    return snap


def _optimizer_state(v: Any, snap: dict) -> None:
    """An optimizer's hyperparameters (``lr`` ...): Python values a training step may
    change and a replay would not, unless an eager step (a scheduler) changes them."""
    groups = getattr(v, "param_groups", None) if hasattr(v, "zero_grad") else None
    if type(groups) is list:
        for grp in groups:
            if type(grp) is dict:
                for k, x in grp.items():
                    if type(x) in _SCALARS or type(x) is tuple:
                        snap[(id(grp), k)] = x


def _changed(a: dict, b: dict) -> set:
    """The snapshot keys whose values differ between ``a`` and ``b``."""
    return {k for k in a.keys() | b.keys() if a.get(k, _MISSING) != b.get(k, _MISSING)}


# ---------------------------------------------------------------------------
# the capture mode
# ---------------------------------------------------------------------------

class _Capture(DispatchMode):
    """Records every op the dispatcher runs into ``self.graph``."""

    def __init__(self, fullgraph: bool, export: bool = False, split: bool = False) -> None:
        self.graph = Graph()
        self.export = export        # name lifted inputs p_<path> / b_<path> as torch.export
        self.fullgraph = fullgraph
        # go on past breaks that can split the program (see segments.py)
        self.split = split and not fullgraph and not export
        self.env: dict[int, tuple[Node, Any]] = {}   # id(tensor) -> (node, tensor)
        self.versions: dict[int, int] = {}           # storage id -> version last seen
        self.inputs: list[Any] = []                  # example inputs, placeholder order
        self.input_versions: list[int] = []          # their versions when first seen
        self.input_nodes: list[Node] = []
        self.lifted: list[Callable] = []             # fetch(leaves) -> tensor, per lifted
        self.sources: dict[int, tuple[dict, str, str, str]] = {}
        self.lifted_paths: list[tuple[str, str]] = []  # (kind, state-dict key) per lifted
        self.user_leaves: list[tuple[int, Any]] = []   # (leaf index, tensor) of arguments
        self.guards = StateGuards()                    # identities of modules found inside
        self.outer_frame: Any = None
        self.new_modules: list = []                    # modules found while capturing
        self.input_storages: dict[int, int] = {}     # storage id -> how many inputs share it
        self.constants: dict[str, Any] = {}
        self.break_reason: str | None = None
        self.break_op: str | None = None
        self.n_ops = 0
        self.suspended = 0
        self._last_placeholder: Node | None = None
        self._last_op: Node | None = None
        # the scopes of the modules being called, while a caller tracks them: the
        # innermost becomes each node's meta["nn_scope"] (TensorBoard groups by it)
        self.scope: list[str] | None = None
        self.report = True      # count and log splits (ember.compile's captures do)
        self.grad_start = self.grad_state = _core.is_grad_enabled()
        self.inference_start = _core.is_inference_mode_enabled()
        self.thread = threading.get_ident()
        # graph breaks the program is split at (it goes on compiled): reasons, in order
        self.split_reasons: list[str] = []
        self.values: dict[Node, Any] = {}              # node -> its value while capturing
        # why a replay could not be abandoned at a failed value/shape check and the
        # function run again from the start (it changed state a rerun would see)
        self.impure: str | None = None
        self.rng_start = _rng_state()
        self.rng_restore = False       # random numbers drawn before a check: replays restore
        # (modules, fn, leaves) of snapshot(): set by ember.compile's capture, so the
        # Python state eager steps change is told apart from the traced code's
        self.snap_args: tuple | None = None
        self.snap_last: dict = {}
        self.traced_changes: set = set()
        self.watched: list = []         # optimizers eager steps ran on
        # sizes read by the function's own code (symsize.py): comparisons on them, with
        # their outcomes; untracked_sizes: a size was read as a plain int (len())
        self.track_sizes = False
        self.in_op = 0
        self.size_guards: list = []
        self.untracked_sizes = False
        # resuming at a check after in-place writes to inputs (see FastForward): the
        # recorded ops in order, the nodes that read an input before a later in-place
        # write to it (their values are kept for a fast-forward), and whether every
        # write so far can be skipped by one (graph ops, not eager steps' writes)
        self.op_nodes: list[tuple[Node, str, bool]] = []   # (node, op, writes an input)
        self.readers: dict[int, list[Node]] = {}       # storage id -> nodes reading it
        self.ff_keep: set[Node] = set()
        self.ff_ok = True
        self.ff: segments.FastForward | None = None

    # ---- inputs ---------------------------------------------------------------------
    def add_input(self, t: Any, name: str) -> Node:
        if self._last_placeholder is None:
            nodes = list(self.graph.nodes)
            ctx = self.graph.inserting_before(nodes[0] if nodes else None)
        else:
            ctx = self.graph.inserting_after(self._last_placeholder)
        with ctx:
            node = self.graph.placeholder(name)
        self._last_placeholder = node
        node.meta["tensor_meta"] = _extract_tensor_metadata(t)
        self.env[id(t)] = (node, t)
        self.values[node] = t
        self.inputs.append(t)
        self.input_versions.append(t._version)
        self.input_nodes.append(node)
        sid = t._storage_id()
        self.input_storages[sid] = self.input_storages.get(sid, 0) + 1
        self.versions[sid] = t._version
        return node

    def add_modules(self, mods: list) -> None:
        """Make the parameters, buffers, tensor attributes and parameter gradients of
        ``mods`` liftable as inputs, re-read by path on every call."""
        for root in mods:
            for mname, m in root.named_modules():
                prefix = f"{mname}." if mname else ""
                for kind in ("_parameters", "_buffers"):
                    d = m.__dict__.get(kind, {})
                    for k, t in d.items():
                        if t is not None:
                            self.add_source(t, d, k, prefix + k, kind)
                            g = t.grad if kind == "_parameters" else None
                            if g is not None:
                                # found after a step ran eagerly (a backward may have set
                                # it): read when the step that uses it runs
                                self.add_source(g, _Slot(t, "grad"), "grad",
                                                f"{prefix}{k}.grad", "_late_grad"
                                                if self.split_reasons else "_grad")
                for k, t in list(m.__dict__.items()):
                    if isinstance(t, TensorBase):
                        self.add_source(t, m.__dict__, k, prefix + k, "_attr")

    def add_source(self, t: Any, container: Any, key: str, path: str, kind: str) -> None:
        """Where ``t`` lives outside the function (so a replay can read it again)."""
        if id(t) not in self.sources:
            self.sources[id(t)] = (container, key, path, kind)

    # ---- the dispatcher's Python key --------------------------------------------------
    def __ember_dispatch__(self, name: str, func: Callable, args: tuple, kwargs: dict) -> Any:
        if self.break_reason is not None or self.suspended or \
                threading.get_ident() != self.thread:
            # the dispatcher's Python key is process-wide: other threads' ops pass through
            return func(*args, **kwargs)
        # what an op does with sizes it redoes at run time: only the function's own
        # code reads tracked sizes
        self.in_op += 1
        try:
            return self._dispatch(name, func, args, kwargs)
        finally:
            self.in_op -= 1

    def _dispatch(self, name: str, func: Callable, args: tuple, kwargs: dict) -> Any:
        reason = self._check(name, args, kwargs)
        if reason is not None and self.split and self._check_inputs(args, kwargs) is None:
            # the op itself breaks the graph (not its inputs): split the program there
            dd = self._data_dependent(name, args, kwargs)
            if dd is not None:
                refusal = self.split_refusal(name, dd, args)
                if refusal is None:
                    return self._split(name, func, args, kwargs, dd)
                reason = refusal
            elif self.split_refusal(name, reason, args, opaque=True) is None:
                # a write through aliasing inputs: run it between two graphs
                return self._split(name, func, args, kwargs, reason)
        if reason is not None:
            self.graph_break(name, reason)
            return func(*args, **kwargs)
        ff = self.ff
        how = ff.take(name) if ff is not None else None
        if how is None:
            out = func(*args, **kwargs)
        elif how is segments.SKIP:
            out = args[0]         # an in-place write to an input the call already made
        else:
            out = how             # the value the call computed before the check
        self._record(name, func, args, kwargs, out)
        return out

    # ---- graph breaks that split the program -------------------------------------------
    def split_refusal(self, name: str, reason: str, args: tuple = (), opaque: bool = False,
                      checked: bool = True) -> str | None:
        """None when the capture can go on past a break at op ``name`` (or an
        ``opaque`` function run eagerly), see segments.py; otherwise the reason the
        whole guard set runs eagerly, as for other breaks.  A step that is not
        ``checked`` (it returns nothing later code could bake) can never make a
        replay start over, so state changed before it does not matter."""
        if not self.split:
            return reason
        if not opaque and name not in _VALUE_READS and name not in _EAGER_STEPS:
            return reason
        if name in _VALUE_READS and args[0].numel() > _TOLIST_MAX:
            return f"{reason} ({args[0].numel()} values; at most {_TOLIST_MAX} are checked)"
        if self.impure is not None and checked and not self.ff_ok:
            return f"{reason}; the graph cannot be split here because {self.impure} before it"
        if _rng_state() != self.rng_start:
            self.rng_restore = True
        return None

    def _split(self, name: str, func: Callable, args: tuple, kwargs: dict,
               reason: str, run: Callable[[], Any] | None = None) -> Any:
        where = user_frame_summary()
        if self.ff is not None:
            self.ff.take(name)        # runs for real: reads served values, memo'd steps
        self.split_reasons.append(f"{reason}\n  {where}")
        if self.report:
            _compiler.counters["graph_break"][reason] += 1
            _compiler._log("graph_breaks", f"Graph break at {name!r} (the graph is split "
                           f"there): {reason}\n  {where}")
        out = func(*args, **kwargs) if run is None else run()
        self._sync_grad_mode(_core.is_grad_enabled())
        line = where.splitlines()[-1].strip()
        if name in _VALUE_READS and not self.suspended:
            self.n_ops += 1
            src = self.env[id(args[0])][0]
            dtype = args[1] if name == "__array__" and len(args) > 1 else None
            node = self.graph.call_function(segments.read_value, (src, name) + (
                (dtype,) if dtype is not None else ()))
            # a NumPy result shares the tensor's memory: keep the values read now
            seen = out if name in ("item", "tolist") else \
                segments.read_value(args[0], name, dtype)
            node.meta.update(split="value", guard_value=seen,
                             guard_label=f"Tensor.{name}() of {src.name} at `{line}`")
            # a miss here cannot start the call over: it fast-forwards to this check
            node.meta["resume_only"] = self.impure is not None
            self.op_nodes.append((node, name, False))
        else:
            self._record(name, func, args, kwargs, out)
            node = self._last_op
            node.meta.update(split="eager", eager_fn=func, opaque=self.suspended > 0,
                             guard_shapes=segments.output_guard(out),
                             guard_label=f"{name} at `{line}`")
        node.meta["stack_trace"] = where
        return out

    def call_eagerly(self, name: str, fn: Callable, args: tuple, kwargs: dict,
                     run: Callable[[], Any] | None = None) -> Any:
        """Run ``fn`` (a function marked ``ember.compiler.disable``) as an eager step
        between two graphs, or break the graph where that is not possible.  ``run``
        produces the result instead of calling ``fn`` (it may take what ``fn``
        returned earlier in this call: a replay that failed a later check ran it)."""
        if run is None:
            def run() -> Any:
                return fn(*args, **kwargs)
        reason = getattr(fn, "_ember_step_reason", None) or \
            "call to a function marked ember.compiler.disable"
        leaves: list = []
        flatten((args, kwargs), leaves)
        bad = self._check_inputs(args, kwargs)
        if bad is None and not all(isinstance(x, TensorBase) or type(x) in _SCALARS or
                                   isinstance(x, (_core.DType, _core.Device))
                                   for x in leaves):
            bad = f"{reason} with an argument a replay could not pass again"
        bad = bad or self.split_refusal(name, reason, opaque=True,
                                        checked=not hasattr(fn, "_ember_step_reason"))
        if bad is not None:
            self.graph_break(name, bad)
            return run()
        seen = {id(t): t._version for _, t in self.env.values()}
        snap = self.snap_args is not None and hasattr(fn, "_ember_step_reason")
        if snap:
            # Python state a training-loop step (backward, optimizer, scheduler) changes
            # is changed again by every replay; what the traced code between steps
            # changes is not (checked after the capture).  Other disable'd functions'
            # changes count as the traced code's: later code may have baked them.
            owner = getattr(fn, "_ember_step_owner", None)
            if owner is not None and all(w is not owner for w in self.watched):
                # values not watched before count from here (those the function reads
                # were in the snapshot from the start)
                self.watched.append(owner)
                cur: dict = {}
                _optimizer_state(owner, cur)
                for k, v in cur.items():
                    self.snap_last.setdefault(k, v)
            now = snapshot(*self.snap_args, self.watched)
            self.traced_changes |= _changed(self.snap_last, now)
        self.suspended += 1
        try:
            out = self._split(name, fn, args, kwargs, reason, run)
        finally:
            self.suspended -= 1
        if snap:
            self.snap_last = snapshot(*self.snap_args, self.watched)
        outs: list = []
        flatten(out, outs)
        if not all(isinstance(x, TensorBase) or type(x) in _SCALARS for x in outs):
            self.graph_break(name, f"{reason} returning a {type(out).__name__}")
        for _, t in self.env.values():
            if seen.get(id(t), t._version) != t._version:   # it wrote a captured tensor
                self.versions[t._storage_id()] = t._version
                self.impure = f"{name} (run eagerly) modified a tensor in place"
                self.ff_ok = False
        return out

    def graph_break(self, op: str, reason: str) -> None:
        where = user_frame_summary()
        self.break_reason = f"{reason}\n  {where}"
        self.break_op = op
        if self.fullgraph:
            raise GraphBreakError(f"ember.compile(fullgraph=True): cannot capture op {op!r} in "
                                  f"one graph: {reason}\n  {where}")

    def _tensors(self, obj: Any, acc: list) -> list:
        if isinstance(obj, TensorBase):
            acc.append(obj)
        elif type(obj) in (tuple, list):
            for x in obj:
                self._tensors(x, acc)
        elif type(obj) is dict:
            for x in obj.values():
                self._tensors(x, acc)
        return acc

    def _check(self, name: str, args: tuple, kwargs: dict) -> str | None:
        """Why op ``name`` cannot be recorded into the graph (None: it can)."""
        return (self._check_inputs(args, kwargs) or self._data_dependent(name, args, kwargs)
                or self._check_inplace(name, args, kwargs))

    def _check_inputs(self, args: tuple, kwargs: dict) -> str | None:
        ts = self._tensors(args, [])
        self._tensors(kwargs, ts)
        for t in ts:
            e = self.env.get(id(t))
            if e is None or e[1] is not t:
                r = self._adopt(t)
                if r is not None:
                    return r
            elif self.versions.get(t._storage_id(), t._version) != t._version:
                return ("a tensor was modified in place by an operation the dispatcher did "
                        "not see")
            else:
                tm = e[0].meta.get("tensor_meta")
                if tm is not None and tm.requires_grad != t.requires_grad:
                    return "requires_grad was changed outside the dispatcher (requires_grad_)"
        if _core.is_inference_mode_enabled() != self.inference_start:
            return "inference_mode changed inside the function"
        return None

    def _data_dependent(self, name: str, args: tuple, kwargs: dict) -> str | None:
        if name in _TO_PYTHON:
            return (f"Tensor.{name}() reads a tensor's value into Python (data-dependent "
                    f"control flow or a Python scalar)")
        if name in _DATA_DEPENDENT:
            return f"{name} has a data-dependent output shape"
        if name == "getitem" and len(args) > 1 and any(
                isinstance(i, TensorBase) and i.dtype is _core.bool_
                for i in (args[1] if isinstance(args[1], tuple) else (args[1],))):
            return "boolean mask indexing has a data-dependent output shape"
        if name == "repeat_interleave" and len(self._tensors((args, kwargs), [])) > 1:
            return "repeat_interleave with tensor repeats has a data-dependent output shape"
        return None

    def _check_inplace(self, name: str, args: tuple, kwargs: dict) -> str | None:
        if (name.endswith("_") and not name.endswith("__")) or name in _INPLACE_EXTRA or \
                kwargs.get("out") is not None:
            target = kwargs.get("out") if kwargs.get("out") is not None else \
                (args[0] if args else None)
            if isinstance(target, TensorBase) and \
                    self.input_storages.get(target._storage_id(), 0) > 1:
                return (f"in-place {name} on an input that aliases another input")
        return None

    def _adopt(self, t: Any) -> str | None:
        """A tensor the graph has not seen: a module's parameter/buffer (lifted as an
        input), or a constant created outside the function (held by reference)."""
        sid = t._storage_id()
        for i, x in self.user_leaves:
            if x.grad is t and x._grad_fn is None:    # an argument's .grad: re-read from it
                owner = next(n for n, y in zip(self.input_nodes, self.inputs) if y is x)
                self.lifted.append(functools.partial(_fetch_leaf_grad, i))
                self.lifted_paths.append(("_grad", f"{owner.name}.grad"))
                self.add_input(t, f"{owner.name}_grad")
                return None
        info = self.sources.get(id(t))
        if info is None and not self.export:
            self._scan_frames_for_modules()
            info = self.sources.get(id(t)) or self._parameter_grad(t)
        if info is not None:
            d, k, path, kind = info
            self.lifted.append(functools.partial(_fetch_entry, d, k))
            self.lifted_paths.append((kind, path))
            name = path.replace(".", "_")
            if self.export:
                name = ("p_" if kind == "_parameters" else "b_") + name
            self.add_input(t, name if name[0].isalpha() else "p_" + name.lstrip("_"))
            return None
        for node, other in self.env.values():
            if other._storage_id() == sid:
                return ("a view of a captured tensor was made by an operation the dispatcher "
                        "did not see")
        if not self.export:
            # a later call might see another tensor there: baking this one could go stale
            return ("a tensor from outside the function that a replay could not read again "
                    "(not an argument, a module's parameter, buffer or tensor attribute, a "
                    "parameter's .grad, a global or a closure variable)")
        name = f"_tensor_constant{len(self.constants)}"
        self.constants[name] = t
        node = self.graph.get_attr(name)
        node.meta["tensor_meta"] = _extract_tensor_metadata(t)
        self.env[id(t)] = (node, t)
        self.versions[sid] = t._version
        return None

    def _parameter_grad(self, t: Any) -> tuple | None:
        """``t`` as the ``.grad`` of a parameter the graph lifts, when a ``backward()``
        earlier in this call set it (gradient clipping between backward and step): a
        replay reads it from the parameter when the step that uses it runs (the
        program's earlier steps set it), not at the start of the call."""
        if not self.split_reasons:
            return None      # one graph: nothing inside it can have set a .grad
        for container, key, path, kind in list(self.sources.values()):
            if kind == "_parameters":
                p = container.get(key)
                if p is not None and p.grad is t:
                    self.add_source(t, _Slot(p, "grad"), "grad", f"{path}.grad", "_late_grad")
                    return self.sources[id(t)]
        return None

    def _scan_frames_for_modules(self) -> None:
        """Modules visible from the user's frames (locals, globals they read): their
        tensors are lifted by path rather than baked."""
        f = sys._getframe(2)
        mods = []
        # only frames of functions called by the compiled one: what they read from
        # their globals is guarded (modules by identity) or re-read (tensors)
        while f is not None and f is not self.outer_frame:
            if not os.path.abspath(f.f_code.co_filename).startswith(_EMBER_DIR):
                for n in f.f_code.co_names:
                    v = f.f_globals.get(n)
                    if _is_module(v):
                        mods.append(v)
                        self.guards.add_dict(f.f_globals, [n])
                    elif isinstance(v, TensorBase):
                        self.add_source(v, f.f_globals, n, n, "_global")
            f = f.f_back
        self.add_modules(mods)
        self.new_modules.extend(mods)

    def _arg(self, a: Any) -> Any:
        if isinstance(a, TensorBase):
            return self.env[id(a)][0]
        t = type(a)
        if t is symsize.SymSize or t is _core.Size:
            return symsize.plain(a)
        if t is tuple or t is list:
            return t(self._arg(x) for x in a)
        if t is dict:
            return {k: self._arg(v) for k, v in a.items()}
        if t is slice:
            return slice(self._arg(a.start), self._arg(a.stop), self._arg(a.step))
        return a

    def _sync_grad_mode(self, enabled: bool) -> None:
        # a ``with no_grad():`` block inside the function: the graph switches grad
        # mode at the same points, as torch's captured graphs do
        if enabled != self.grad_state:
            self.graph.call_function(_core._set_grad_enabled, (enabled,))
            self.grad_state = enabled

    def _record(self, name: str, func: Callable, args: tuple, kwargs: dict, out: Any) -> None:
        import operator
        self.n_ops += 1
        self._sync_grad_mode(_core.is_grad_enabled())
        nargs, nkwargs = self._arg(args), self._arg(kwargs)
        if name == "getitem":
            node = self.graph.call_function(operator.getitem, nargs, nkwargs)
        elif name == "setitem":
            node = self.graph.call_function(operator.setitem, nargs, nkwargs)
        elif args and isinstance(args[0], TensorBase) and \
                getattr(type(args[0]), name, None) is func:
            node = self.graph.call_method(name, nargs, nkwargs)
        else:
            node = self.graph.call_function(func, nargs, nkwargs)
        node.meta["stack_trace"] = user_frame_summary()
        node.meta["op_name"] = name        # the dispatcher's name (for code generators)
        self._last_op = node
        if self.scope:
            node.meta["nn_scope"] = self.scope[-1]
        why = self._impurity(name, args, kwargs)
        self.op_nodes.append((node, name, why is not None))
        if self.impure is None:
            self.impure = why
        ts = self._tensors(args, []) + self._tensors(kwargs, [])
        if why is not None:
            if kwargs.get("generator") is not None:
                self.ff_ok = False        # a fast-forward would draw the numbers again
            # what read the written input before keeps its value for a fast-forward
            target = kwargs.get("out") if kwargs.get("out") is not None else \
                (args[0] if args else None)
            readers = self.readers.pop(target._storage_id(), ()) \
                if isinstance(target, TensorBase) else ()
            if any(not hasattr(r.meta.get("tensor_meta"), "shape") for r in readers):
                self.ff_ok = False        # a reader's value is not one tensor
            self.ff_keep.update(readers)
        else:
            for t in ts:
                self.readers.setdefault(t._storage_id(), []).append(node)
        for t in ts:
            self.versions[t._storage_id()] = t._version
        if isinstance(out, TensorBase):
            node.meta["tensor_meta"] = _extract_tensor_metadata(out)
            self._bind(out, node)
        elif type(out) in (tuple, list):
            metas = []
            for i, o in enumerate(out):
                if isinstance(o, TensorBase):
                    item = self.graph.call_function(operator.getitem, (node, i))
                    item.meta["tensor_meta"] = _extract_tensor_metadata(o)
                    metas.append(item.meta["tensor_meta"])
                    self._bind(o, item)
                else:
                    metas.append(o)
            node.meta["tensor_meta"] = tuple(metas)

    def _impurity(self, name: str, args: tuple, kwargs: dict) -> str | None:
        """Why running op ``name`` twice would differ from running it once (None: it
        would not): it writes an input, a parameter or a buffer, or draws from a
        generator passed to it."""
        if kwargs.get("generator") is not None:
            return f"{name} drew random numbers from a generator passed to it"
        target = kwargs.get("out") if kwargs.get("out") is not None else \
            (args[0] if args else None)
        if ((name.endswith("_") and not name.endswith("__")) or name in _INPLACE_EXTRA or
                kwargs.get("out") is not None) and isinstance(target, TensorBase) and \
                target._storage_id() in self.input_storages:
            return f"in-place {name} modified an input, a parameter or a buffer"
        return None

    def _bind(self, t: Any, node: Node) -> None:
        self.values[node] = t
        self.env[id(t)] = (node, t)
        self.versions[t._storage_id()] = t._version

    def wrote_inputs(self) -> bool:
        """Whether the function wrote an input, a parameter or a buffer (a kernel's
        own in-place update, such as batch norm's running statistics, included)."""
        return self.impure is not None or any(
            t._version != v for t, v in zip(self.inputs, self.input_versions))

    # ---- the end -------------------------------------------------------------------------
    def finish(self, result: Any) -> tuple[Any, list]:
        """Add the output node; returns (output spec, constant leaves or None per slot)."""
        leaves: list = []
        spec = flatten(result, leaves)
        leaves = [symsize.plain(x) for x in leaves]
        outs, consts = [], []
        for x in leaves:
            if isinstance(x, TensorBase):
                e = self.env.get(id(x))
                if e is None or e[1] is not x:
                    r = self._adopt(x)
                    if r is not None:
                        self.graph_break("output", r)
                        return spec, []
                    e = self.env[id(x)]
                if self.versions.get(x._storage_id(), x._version) != x._version:
                    self.graph_break("output", "an output was modified in place by an "
                                     "operation the dispatcher did not see")
                    return spec, []
                outs.append(e[0])
                consts.append(_MISSING)
            elif type(x) in _SCALARS or isinstance(x, (_core.DType, _core.Device)) or (
                    isinstance(x, tuple) and all(type(v) in _SCALARS for v in x)):
                consts.append(x)      # immutable: the same value on every replay
            else:
                self.graph_break("output", f"the result holds a {type(x).__name__}, which a "
                                 f"replay would return as the same object every call")
                return spec, []
        for node, t in list(self.env.values()):
            if self.versions.get(t._storage_id(), t._version) != t._version:
                self.graph_break("mutation", "a captured tensor was modified in place by an "
                                 "operation the dispatcher did not see")
                return spec, []
        self._sync_grad_mode(self.grad_start)
        self.graph.output(tuple(outs))
        return spec, consts


# ---------------------------------------------------------------------------
# cache entries and the compiled callable
# ---------------------------------------------------------------------------

GUARD_MISS = object()


def _set_rng_state(state: tuple[int, int]) -> None:
    from ember._C.random import default_generator as g
    g.manual_seed(state[0])
    g.set_offset(state[1])


class _Entry:
    """One guard set: the compiled graph (or ``None``: run eagerly) and how to feed it."""

    def __init__(self, key: tuple, guards: StateGuards, compiled: Callable | None,
                 user_idx: list[int], lifted: list, lifted_keys: list, out_spec: Any,
                 consts: list, reason: str | None = None, gm: GraphModule | None = None,
                 module_guards: StateGuards | None = None, leaves: list | None = None,
                 lifted_paths: list | None = None, rng_restore: bool = False) -> None:
        self.key = key
        self.guards = guards
        self.module_guards = module_guards or StateGuards()
        # module state is re-checked only after some module attribute was written
        self.checked_writes = _module_writes()
        self.lifted_last = [f(leaves) for f in lifted]
        self.checked_rg = _rg_writes()
        # lifted inputs that can change without a counted write: re-read every call
        self.volatile = [i for i, (kind, _) in enumerate(lifted_paths or ())
                         if kind not in ("_parameters", "_buffers", "_attr", "_late_grad")]
        # gradients an earlier step of the program sets: read when a step needs them
        self.late = [(i, path) for i, (kind, path) in enumerate(lifted_paths or ())
                     if kind == "_late_grad"]
        self.single = out_spec is None and len(consts) == 1 and consts[0] is _MISSING
        self.program = isinstance(compiled, segments.Program)
        self.rng_restore = rng_restore
        self.miss: str | None = None
        self.miss_at: Any = None
        self.split_reasons: list[str] = []      # breaks the program goes on past
        self.compiled = compiled
        self.user_idx = user_idx
        self.lifted = lifted
        self.lifted_keys = lifted_keys
        self.out_spec = out_spec
        self.consts = consts
        self.reason = reason
        self.gm = gm
        # writes no input, parameter or buffer: running it again on copies of the
        # arguments changes nothing outside (dynamic shapes probe other sizes so)
        self.pure = False
        # comparisons the function made on tracked sizes and their outcomes (symsize.py);
        # None: it read a size as a plain int, so no other size can reuse the graph
        self.size_guards: list | None = None

    def failed_guard(self, leaves: list) -> str | None:
        if self.compiled is None:
            return None      # running the function as written is right whatever the state
        bad = self.guards.check()
        writes, rg = _module_writes(), _rg_writes()
        # modules and requires_grad flags only change through counted writes: until one
        # happens, parameters and buffers are the objects (and flags) last checked; a
        # requires_grad write (any tensor's) calls for the lifted tensors' flags only
        moved = writes != self.checked_writes
        full = moved or rg != self.checked_rg
        if bad is None and moved:
            bad = self.module_guards.check()
        if bad is not None:
            d, k, v = bad
            if type(k) is _KeySet:
                return f"{k} changed: {list(v)} -> {list(d)}"
            return f"{k} == {v!r} (now {d.get(k, '<missing>')!r})" if type(v) in _SCALARS \
                else f"{k} is the same object as when captured"
        last, keys, lifted = self.lifted_last, self.lifted_keys, self.lifted
        for i in (range(len(lifted)) if full else self.volatile):
            t = lifted[i](leaves)
            # the same tensor object keeps its size, dtype and device; only
            # requires_grad can change in place
            if t is last[i] and t is not None and t.requires_grad == keys[i][3]:
                continue
            if t is None or tensor_key(t) != keys[i]:
                return (f"lifted input {i} (a parameter, buffer or outside tensor) changed "
                        f"(size, dtype, device or requires_grad)")
            last[i] = t
        if full:
            self.checked_writes, self.checked_rg = writes, rg
        return None

    def run(self, fn: Callable, args: tuple, kwargs: dict, leaves: list,
            resume: Any = None) -> Any:
        """The call's result, or ``GUARD_MISS`` when a value or shape read on the way
        differs from the captured one (``self.miss`` says which, ``self.miss_at``
        where: another entry sharing the steps before it goes on from there)."""
        if self.compiled is None:
            return fn(*args, **kwargs)
        inputs = [leaves[i] for i in self.user_idx] + [f(leaves) for f in self.lifted]
        if self.late:
            n = len(self.user_idx)
            for i, path in self.late:
                inputs[n + i] = segments.LateInput(self.lifted[i], leaves, self.lifted_keys[i],
                                                   path)
        if self.program:
            rng = _rng_state() if self.rng_restore else None
            try:
                res = self.compiled(*inputs, resume=resume)
            except segments.GuardMiss as e:
                # nothing before the check changed state (capture made sure), but
                # grad mode and the generator may have moved: a fresh run starts clean
                _core._set_grad_enabled(self.key[3][0])
                if rng is not None:
                    _set_rng_state(rng)
                self.miss, self.miss_at = str(e), e
                return GUARD_MISS
            outs = iter(res)
        elif self.single:
            return self.compiled(*inputs)[0]
        else:
            outs = iter(self.compiled(*inputs))
        return unflatten(self.out_spec, (next(outs) if c is _MISSING else c
                                         for c in self.consts))


_code_ids = itertools.count()


class CompiledCode:
    """The guarded cache of one compiled callable (``ember.compile``'s runtime)."""

    def __init__(self, fn: Callable, backend: Any, mode: Any, options: dict,
                 fullgraph: bool, dynamic: bool | None) -> None:
        from ember.compiler import _all_codes
        self.fn = fn
        self.backend = backend
        self.mode = mode
        self.options = options
        self.fullgraph = fullgraph
        self.dynamic = dynamic
        self.cache: dict[tuple, list[_Entry]] = {}
        self.n_entries = 0
        self.last_key: tuple | None = None
        self.over_limit = False
        self.id = next(_code_ids)
        _all_codes.add(self)

    def reset(self) -> None:
        self.cache.clear()
        self.n_entries = 0
        self.last_key = None
        self.over_limit = False

    def key_of(self, args: tuple, kwargs: dict) -> tuple[tuple, list]:
        if len(args) == 1 and not kwargs and isinstance(args[0], TensorBase):
            # the commonest call, one tensor: no containers, no aliasing to look for
            return (1, (tensor_key(args[0]),), (0,), switches()), list(args)
        if not kwargs and not any(isinstance(a, _CONTAINERS) for a in args):
            leaves = list(args)       # flat positional arguments
            spec: Any = len(args)
        else:
            leaves = []
            spec = flatten((args, kwargs), leaves)
        return (spec, tuple(map(leaf_key, leaves)), alias_pattern(leaves), switches()), leaves

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        compiler = _compiler
        if _core._mode_active() or compiler._disabled_depth() or compiler._rerunning():
            # inside ember.compiler.disable, or nested inside another capture/mode, or
            # inside a call starting over (its disable'd functions' results are reused
            # in order): run as written (an enclosing capture records these ops itself)
            return self.fn(*args, **kwargs)
        key, leaves = self.key_of(args, kwargs)
        if any([isinstance(x, TensorBase) and x._mbits for x in leaves]):
            # a lazily conjugated/negated argument: generated kernels read stored values,
            # so the call runs as written (each op reads the values through the bits)
            return self.fn(*args, **kwargs)
        entries = self.cache.get(key)
        miss = resume = None
        if entries:
            for e in entries:
                if e.failed_guard(leaves) is None:
                    r = e.run(self.fn, args, kwargs, leaves, resume)
                    if r is not GUARD_MISS:
                        return r
                    miss, resume = e.miss, e.miss_at
                    e.miss_at = None      # it holds this call's values: not past the call
        # in-place writes to inputs before the failed check: the call cannot start
        # over; it runs again up to the check without redoing them (segments.FastForward)
        ff = resume.program.fast_forward(resume) if resume is not None else None
        if resume is not None and resume.memo is not None:
            # functions marked disable that the failed replay ran: the rerun below
            # takes their results instead of running them again
            resume.memo.pos = 0
            compiler._state.replay_memo = resume.memo
            try:
                return self._miss(key, entries, leaves, args, kwargs, miss, ff)
            finally:
                compiler._state.replay_memo = None
        return self._miss(key, entries, leaves, args, kwargs, miss, ff)

    def _miss(self, key: tuple, entries: list | None, leaves: list, args: tuple,
              kwargs: dict, miss: str | None, ff: Any = None) -> Any:
        compiler = _compiler
        if ff is not None:
            # (captured, but kept only within the cache's limit)
            keep = self.n_entries < compiler.config.cache_size_limit and not self.over_limit
            if keep and self.n_entries:
                reason = miss or self._miss_reason(key, entries, leaves)
                compiler.counters["recompiles"][reason] += 1
            return self._capture(args, kwargs, key, leaves, ff, keep)
        if self.over_limit:
            return self.fn(*args, **kwargs)
        # a backend may supply the entry without a capture run: kept on disk by an
        # earlier process, or a shape-generic graph resized to these arguments
        restore = getattr(self.backend, "restore", None)
        entry = restore(self, key, leaves) if restore is not None else None
        if entry is not None and entry.failed_guard(leaves) is None:
            self.cache.setdefault(key, []).append(entry)
            stat = getattr(entry, "stat", "graphs_restored")
            self.n_entries += stat == "graphs_restored"   # resized graphs share one entry
            self.last_key = key
            compiler.counters["stats"][stat] += 1
            return entry.run(self.fn, args, kwargs, leaves)
        if self.n_entries >= compiler.config.cache_size_limit:
            self.over_limit = True
            reason = miss or self._miss_reason(key, entries, leaves)
            warnings.warn(f"ember.compile: {getattr(self.fn, '__qualname__', self.fn)} hit "
                          f"config.cache_size_limit ({compiler.config.cache_size_limit}); "
                          f"it runs eagerly from now on. Last guard that failed: {reason}",
                          RuntimeWarning, stacklevel=2)
            return self.fn(*args, **kwargs)
        if self.n_entries:
            reason = miss or self._miss_reason(key, entries, leaves)
            compiler.counters["recompiles"][reason] += 1
            compiler._log("recompiles", f"Recompiling {getattr(self.fn, '__qualname__', '')}: "
                          f"{reason}")
        return self._capture(args, kwargs, key, leaves)

    def _miss_reason(self, key: tuple, entries: list | None, leaves: list) -> str:
        if entries:
            for e in entries:
                r = e.failed_guard(leaves)
                if r is not None:
                    return r
        names = getattr(self, "_leaf_names", [])
        return describe_key_change(self.last_key, key, names) if self.last_key else "new input"

    def _leaf_labels(self, args: tuple, kwargs: dict) -> list[str]:
        import inspect
        fn = self.fn
        target = fn.forward if _is_module(fn) else fn
        try:
            bound = inspect.signature(target).bind(*args, **kwargs)
            pairs = list(bound.arguments.items())
        except (TypeError, ValueError):
            pairs = [(f"args[{i}]", a) for i, a in enumerate(args)] + list(kwargs.items())
        labels: list[str] = []

        def walk(name: str, v: Any) -> None:
            t = type(v)
            if t in (tuple, list) or (isinstance(v, tuple) and hasattr(v, "_fields")):
                for i, x in enumerate(v):
                    walk(f"{name}[{i}]", x)
            elif t is dict:
                for k, x in v.items():
                    walk(f"{name}[{k!r}]", x)
            else:
                labels.append(name)
        for n, v in pairs:
            walk(n, v)
        leaves: list = []
        flatten((args, kwargs), leaves)
        return labels if len(labels) == len(leaves) else [f"input{i}" for i in
                                                          range(len(leaves))]

    def _run_capture(self, cap: _Capture, args: tuple, kwargs: dict, leaves: list,
                     labels: list[str]) -> tuple:
        """Run the function once under ``cap``; returns (result, state guards, module
        guards, user input leaf indices, output spec, constant outputs)."""
        compiler = _compiler
        user_idx = []
        for i, (x, lab) in enumerate(zip(leaves, labels)):
            if isinstance(x, TensorBase):
                if id(x) in cap.env:
                    continue
                user_idx.append(i)
                cap.add_input(x, lab)
                cap.user_leaves.append((i, x))
        guards = StateGuards()
        mods: list = []
        if _is_module(self.fn):
            mods.append(self.fn)
            fn_state(type(self.fn).forward, guards, mods, cap)
        else:
            fn_state(self.fn, guards, mods, cap)
            owner = getattr(self.fn, "__self__", None)
            if _is_module(owner):
                mods.append(owner)
        for x in leaves:
            if _is_module(x):
                mods.append(x)
        cap.add_modules(mods)
        module_guards = StateGuards()
        module_state(mods, module_guards)
        before = snapshot(mods, self.fn, leaves)
        cap.snap_args, cap.snap_last = (mods, self.fn, leaves), before
        cap.outer_frame = sys._getframe()
        compiler._compiling.depth = getattr(compiler._compiling, "depth", 0) + 1
        stack = compiler._state.__dict__.setdefault("captures", [])
        stack.append(cap)
        cap.track_sizes = True
        symsize.install()
        try:
            try:
                with cap:
                    result = self.fn(*args, **kwargs)
            finally:
                cap.track_sizes = False
                symsize.uninstall()
            if cap.break_reason is None:
                out_spec, consts = cap.finish(result)
        finally:
            stack.pop()
            compiler._compiling.depth -= 1
        if cap.break_reason is None and (
                cap.traced_changes or
                _changed(cap.snap_last, snapshot(mods, self.fn, leaves, cap.watched))):
            cap.graph_break("side effect", "the function changed Python state (a module "
                            "attribute, a global, a container, a .grad, the RNG seed, a global "
                            "switch or registered hooks) that a replay would not change")
        if cap.break_reason is not None:
            out_spec, consts = None, []
        return result, guards, module_guards, user_idx, out_spec, consts

    def probe(self, args: tuple, kwargs: dict, leaves: list) -> Any:
        """Capture the function on ``args`` without compiling, caching or counting it
        (for :mod:`.codegen.dynamic`: the graph at a size no call asked for).  The
        caller passes arguments no write can matter for; the generator's state is
        restored and warnings are not shown twice.  Returns ``(graph, user_idx,
        out_spec, consts)``, or None when the capture breaks or is split."""
        cap = _Capture(False)
        cap.report = False
        rng = _rng_state()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _, _, _, user_idx, out_spec, consts = self._run_capture(
                    cap, args, kwargs, leaves, self._leaf_labels(args, kwargs))
        except Exception:     # the function fails at that size: it is not size-generic
            return None
        finally:
            _set_rng_state(rng)
        if cap.break_reason is not None or cap.split_reasons or not cap.n_ops:
            return None
        return cap.graph, user_idx, out_spec, consts

    def _capture(self, args: tuple, kwargs: dict, key: tuple, leaves: list,
                 ff: Any = None, keep: bool = True) -> Any:
        compiler = _compiler
        labels = self._leaf_labels(args, kwargs)
        self._leaf_names = labels
        cap = _Capture(self.fullgraph, split=True)
        cap.ff = ff
        if not keep:
            cap.report = False
        t0 = time.perf_counter()
        result, guards, module_guards, user_idx, out_spec, consts = self._run_capture(
            cap, args, kwargs, leaves, labels)
        guards.items += cap.guards.items
        if cap.new_modules:
            module_state(cap.new_modules, module_guards)
        # containers can change in place without a module write: check them every call
        guards.items += [it for it in module_guards.items
                         if type(it[2]) is _Frozen and it[2].type in (list, dict, set)]
        entry_guards = guards
        if cap.break_reason is not None:
            entry = _Entry(key, entry_guards, None, [], [], [], None, [], cap.break_reason,
                           module_guards=module_guards)
            compiler.counters["graph_break"][cap.break_reason.splitlines()[0]] += 1
            warnings.warn(f"ember.compile: graph break in "
                          f"{getattr(self.fn, '__qualname__', type(self.fn).__name__)} at op "
                          f"{cap.break_op!r}: {cap.break_reason}\nThis guard set runs "
                          f"eagerly.", UserWarning, stacklevel=3)
            compiler._log("graph_breaks", f"Graph break at {cap.break_op!r}: "
                          f"{cap.break_reason}")
        elif cap.n_ops == 0:
            # nothing to compile (no tensor ops): Python runs it as written
            entry = _Entry(key, entry_guards, None, [], [], [], None, [], "no tensor ops",
                           module_guards=module_guards)
        else:
            holder = _Holder(cap.constants)
            capture_time = time.perf_counter() - t0

            def compile_graph(gm: GraphModule, example_inputs: list) -> Callable:
                gm.meta["capture_time_s"] = capture_time
                if self.dynamic is True:
                    gm.meta["dynamic_sizes"] = True     # generated code reads every size
                compiler._log("graph", gm.print_readable(print_output=False))
                compiler._compiling.depth += 1
                try:
                    compiled = self.backend.compile(gm, example_inputs, mode=self.mode,
                                                    options=self.options)
                finally:
                    compiler._compiling.depth -= 1
                if not callable(compiled):
                    raise TypeError(f"ember.compile(): backend {self.backend.name!r} "
                                    f"returned {type(compiled).__name__}, not a callable")
                compiler.counters["stats"]["unique_graphs"] += 1
                return compiled
            if cap.split_reasons:
                for n in cap.ff_keep:
                    n.meta["keep_ff"] = True
                compiled = segments.split_program(cap.graph, holder, cap.values,
                                                  compile_graph, cap.op_nodes)
                gm = compiled.graphs[0] if compiled.graphs else None
            else:
                gm = GraphModule(holder, cap.graph, "GraphModule")
                compiled = compile_graph(gm, list(cap.inputs))
            lifted_keys = [tensor_key(f(leaves)) for f in cap.lifted]
            entry = _Entry(key, entry_guards, compiled, user_idx, cap.lifted, lifted_keys,
                           out_spec, consts, gm=gm, module_guards=module_guards,
                           leaves=leaves, lifted_paths=cap.lifted_paths,
                           rng_restore=cap.rng_restore)
            entry.split_reasons = cap.split_reasons
            entry.pure = not cap.wrote_inputs()
            entry.size_guards = None if cap.untracked_sizes else list(dict.fromkeys(
                cap.size_guards))
            persist = getattr(self.backend, "persist", None)
            if persist is not None and not entry.program:
                # (a split program is not one graph of the whole function)
                persist(self, entry, key, leaves)
            compiler._log("guards", f"Guards for {getattr(self.fn, '__qualname__', '')}: "
                          f"{len(leaves)} argument leaves, {len(guards.items)} Python state "
                          f"values, {len(cap.lifted)} parameters/buffers")
        if keep:
            self.cache.setdefault(key, []).append(entry)
            self.n_entries += 1
            self.last_key = key
            compiler.counters["stats"]["calls_captured"] += 1
            compiler._on_capture(self, entry)
        leaves = []
        spec = flatten(result, leaves)
        if any(type(x) is symsize.SymSize or type(x) is _core.Size for x in leaves):
            # the caller gets plain ints, as a replay returns them
            result = unflatten(spec, iter([symsize.plain(x) for x in leaves]))
        return result


class _Holder:
    """The root a captured GraphModule copies its constants from."""

    def __new__(cls, constants: dict) -> Any:
        from ember.nn import Module
        m = Module()
        for k, v in constants.items():
            object.__setattr__(m, k, v)
        return m
