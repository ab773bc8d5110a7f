"""Automatic dynamic shapes: one captured graph for every size of a leading dimension.

Each captured graph is specialised to its argument sizes.  When captures of
one function differ only in the leading size ``s`` of their tensor arguments,
the graphs are compared node by node: every integer that differs between them
(a size in a ``reshape``, a shape or stride in the recorded metadata) is
fitted as ``a * s + b`` with integer ``a`` and ``b``.  The fit is trusted only
after a third capture at another size matches it exactly (so a size that is
not affine in ``s`` is caught rather than extrapolated).  From then on a call
with a new leading size ``s >= 2`` gets the graph resized to ``s`` without a
capture run, and since generated kernels take the leading size at run time
(``cgen``), its code is the shared object already built.  ``dynamic=False``
turns this off; ``dynamic=True`` behaves as the automatic mode.
"""
from __future__ import annotations

import weakref
from typing import Any

from ember.fx import Graph, GraphModule, Node

_MAX_SIZES = 64           # resized entries per function (each holds a small runtime)
_state: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class _Sym:
    """An integer ``a * s + b`` of the changing size ``s``."""

    __slots__ = ("a", "b")

    def __init__(self, a: int, b: int) -> None:
        self.a, self.b = a, b

    def at(self, s: int) -> int:
        return self.a * s + self.b


class _Mismatch(Exception):
    pass


def _leading(key: tuple) -> tuple | None:
    """``key`` with the leading size of every tensor leaf taken out, and those sizes."""
    spec, leaves, alias, sw = key
    rest, sizes = [], []
    for k in leaves:
        if isinstance(k, tuple) and len(k) == 5 and hasattr(k[0], "__len__"):
            shape, dtype, dev, rg, stride = k
            if not len(shape):
                rest.append(k)
                continue
            sizes.append(shape[0])
            rest.append((tuple(shape[1:]), dtype, dev, rg, len(shape)))
        else:
            rest.append(k)
    return (spec, tuple(rest), alias, sw), tuple(sizes)


def _fit(va: Any, vb: Any, sa: int, sb: int) -> Any:
    """The template value for ``va`` (at size sa) and ``vb`` (at sb)."""
    ta, tb = type(va), type(vb)
    if ta is not tb:
        raise _Mismatch
    if ta is int:
        if va == vb:
            return va
        a, r = divmod(vb - va, sb - sa)
        if r:
            raise _Mismatch
        return _Sym(a, va - a * sa)
    if ta in (tuple, list) or (isinstance(va, tuple) and hasattr(va, "_fields")):
        if len(va) != len(vb):
            raise _Mismatch
        items = [_fit(x, y, sa, sb) for x, y in zip(va, vb)]
        return ta(*items) if hasattr(va, "_fields") else ta(items)
    if ta is dict:
        if list(va) != list(vb):
            raise _Mismatch
        return {k: _fit(va[k], vb[k], sa, sb) for k in va}
    if ta is slice:
        return slice(_fit(va.start, vb.start, sa, sb), _fit(va.stop, vb.stop, sa, sb),
                     _fit(va.step, vb.step, sa, sb))
    if isinstance(va, Node):
        return ("node", va.name) if va.name == vb.name else _raise()
    if hasattr(va, "__len__") and type(va).__name__ == "Size":
        return ("size", _fit(tuple(va), tuple(vb), sa, sb))
    if va == vb or va is vb:
        return va
    raise _Mismatch


def _raise() -> Any:
    raise _Mismatch


def _at(t: Any, s: int, nodes: dict) -> Any:
    tt = type(t)
    if tt is _Sym:
        return t.at(s)
    if tt is tuple and len(t) == 2 and t[0] == "node":
        return nodes[t[1]]
    if tt is tuple and len(t) == 2 and t[0] == "size":
        import ember
        return ember.Size(_at(t[1], s, nodes))
    if tt in (tuple, list):
        return tt(_at(x, s, nodes) for x in t)
    if isinstance(t, tuple) and hasattr(t, "_fields"):
        return tt(*[_at(x, s, nodes) for x in t])
    if tt is dict:
        return {k: _at(v, s, nodes) for k, v in t.items()}
    if tt is slice:
        return slice(_at(t.start, s, nodes), _at(t.stop, s, nodes), _at(t.step, s, nodes))
    return t


def _records(graph: Graph) -> list:
    out = []
    for n in graph.nodes:
        meta = {k: n.meta[k] for k in ("tensor_meta", "op_name") if k in n.meta}
        out.append((n.op, n.name, n.target, n.args, n.kwargs, meta))
    return out


def _template(ea: Any, sa: int, eb: Any, sb: int) -> list:
    ra, rb = _records(ea.gm.graph), _records(eb.gm.graph)
    if len(ra) != len(rb) or ea.out_spec != eb.out_spec or ea.user_idx != eb.user_idx:
        raise _Mismatch
    if len(ea.consts) != len(eb.consts) or any(
            a is not b and a != b for a, b in zip(ea.consts, eb.consts)):
        raise _Mismatch
    tpl = []
    for a, b in zip(ra, rb):
        if a[:3] != b[:3]:
            raise _Mismatch
        tpl.append(a[:3] + tuple(_fit(x, y, sa, sb) for x, y in zip(a[3:], b[3:])))
    return tpl


def _graph(tpl: list, s: int) -> Graph:
    g = Graph()
    nodes: dict = {}
    for op, name, target, args, kwargs, meta in tpl:
        n = g.create_node(op, target, _at(args, s, nodes), _at(kwargs, s, nodes), name)
        n.meta.update(_at(meta, s, nodes))
        nodes[name] = n
    return g


def _same(tpl: list, s: int, entry: Any) -> bool:
    """Whether the template at size ``s`` is exactly ``entry``'s captured graph."""
    got = _records(_graph(tpl, s))
    want = _records(entry.gm.graph)
    return len(got) == len(want) and all(
        x[:3] == y[:3] and repr(x[3:]) == repr(y[3:]) for x, y in zip(got, want))


def observe(code: Any, entry: Any, key: tuple) -> None:
    """A capture of ``code`` finished: learn (or confirm) its shape-generic form."""
    if code.dynamic is False or entry.compiled is None or entry.gm is None:
        return
    base, sizes = _leading(key)
    if not sizes or len(set(sizes)) != 1:
        return
    st = _state.setdefault(code, {})
    slot = st.get(base)
    s = sizes[0]
    if slot is None:
        st[base] = {"seen": [(s, entry)], "tpl": None, "confirmed": False, "made": 0}
        return
    if slot["confirmed"] or any(s == t for t, _ in slot["seen"]):
        return
    slot["seen"].append((s, entry))
    try:
        if slot["tpl"] is None:
            (sa, ea), (sb, eb) = slot["seen"][:2]
            slot["tpl"] = _template(ea, sa, eb, sb)
        else:
            slot["confirmed"] = _same(slot["tpl"], s, entry)
            if not slot["confirmed"]:
                slot["tpl"] = None
                del slot["seen"][:-1]
    except (_Mismatch, TypeError, ValueError):
        # graphs that do not line up (or values that do not compare): no template yet
        slot["tpl"] = None
        del slot["seen"][:-1]


def resize(code: Any, key: tuple, leaves: list) -> Any:
    """An entry for ``key`` from the confirmed shape-generic graph, or None."""
    st = _state.get(code)
    if not st:
        return None
    base, sizes = _leading(key)
    slot = st.get(base)
    if slot is None or not slot["confirmed"] or not sizes or len(set(sizes)) != 1:
        return None
    s = sizes[0]
    if s < 2 or slot["made"] >= _MAX_SIZES:
        return None
    from ..capture import _Entry
    src = slot["seen"][-1][1]
    try:
        g = _graph(slot["tpl"], s)
    except (TypeError, ValueError):
        return None
    for n in g.nodes:
        tm = n.meta.get("tensor_meta")
        if hasattr(tm, "shape") and any(d < 0 for d in tm.shape):
            return None
    inputs = [leaves[i] for i in src.user_idx] + [f(leaves) for f in src.lifted]
    # the resized graph inputs must describe these very arguments (a transposed or
    # sliced input at a new size is a new layout, not a new size)
    phs = [n for n in g.nodes if n.op == "placeholder"]
    if len(phs) != len(inputs) or any(
            tuple(n.meta["tensor_meta"].shape) != tuple(t.shape) or
            tuple(n.meta["tensor_meta"].stride) != tuple(t.stride()) for n, t in zip(phs, inputs)):
        return None
    gm = GraphModule(src.gm, g, "GraphModule")
    compiled = code.backend.compile(gm, inputs, mode=code.mode, options=code.options)
    e = _Entry(key, src.guards, compiled, src.user_idx, src.lifted, src.lifted_keys,
               src.out_spec, src.consts, gm=gm, module_guards=src.module_guards,
               leaves=leaves)
    e.volatile = src.volatile
    e.stat = "graphs_resized"
    slot["made"] += 1
    return e

