"""Automatic dynamic shapes: one captured graph for every size of a leading dimension.

Each captured graph is specialised to its argument sizes.  When captures of
one function differ only in the leading size ``s`` of their tensor arguments,
the graphs are compared node by node: every integer that differs between them
(a size in a ``reshape``, a shape or stride in the recorded metadata) is
fitted as ``a * s + b`` with integer ``a`` and ``b``.  The fit is trusted only
after a capture at a third size matches it exactly (so a size that is not
affine in ``s`` is caught rather than extrapolated): on the second size, the
function is captured once more on copies of its arguments resized to the sum
of the two sizes (:func:`_probe`), so like torch it goes dynamic on the second
distinct size; where that run could change state, a third call confirms it.  From then on a call
with a new leading size ``s >= 2`` gets the graph resized to ``s`` without a
capture run, and since generated kernels take the leading size at run time
(``cgen``), its code is the shared object already built.  ``dynamic=False``
turns this off.

``dynamic=True`` goes further: every size of every tensor argument may change.
The sizes that differ between three captures become symbols (sizes that move
together are one symbol), and every integer of the graphs is fitted as
``c * m + d`` where ``m`` is one symbol or the product of two (``batch *
seq``, ``seq * seq`` in strides); a value that no such form fits, or that two
forms fit, leaves the function without a template, so nothing is
extrapolated on a guess.  Later calls at new sizes get the graph rebuilt
without a capture, and its generated code reads every size at run time
(``cgen``), so they share one shared object.
"""
from __future__ import annotations

import weakref
from typing import Any

from ember.fx import Graph, GraphModule, Node
from ember.fx.node import INPUT_OP

from .. import symsize

_MAX_SIZES = 64           # resized entries per function (each holds a small runtime)
_state: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class _Sym:
    """An integer ``a * s + b`` of the changing size ``s``."""

    __slots__ = ("a", "b")

    def __init__(self, a: int, b: int) -> None:
        self.a, self.b = a, b

    def at(self, s: int) -> int:
        return self.a * s + self.b


class _Mono:
    """An integer ``c * prod(symbols[i] for i in m) + d`` of the symbols' values."""

    __slots__ = ("c", "m", "d")

    def __init__(self, c: int, m: tuple, d: int) -> None:
        self.c, self.m, self.d = c, m, d

    def at(self, s: tuple) -> int:
        v = self.c
        for i in self.m:
            v *= s[i]
        return v + self.d


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


def _at(t: Any, s: Any, nodes: dict) -> Any:
    tt = type(t)
    if tt is _Sym or tt is _Mono:
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


def _same(tpl: list, s: int, graph: Graph) -> bool:
    """Whether the template at size ``s`` is exactly the captured ``graph``."""
    got = _records(_graph(tpl, s))
    want = _records(graph)
    return len(got) == len(want) and all(
        x[:3] == y[:3] and repr(x[3:]) == repr(y[3:]) for x, y in zip(got, want))


# ---------------------------------------------------------------- dynamic=True
def _all_sizes(key: tuple) -> tuple:
    """``key`` without any tensor leaf's sizes or strides, and all those sizes in order."""
    spec, leaves, alias, sw = key
    rest, sizes = [], []
    for k in leaves:
        if isinstance(k, tuple) and len(k) == 5 and hasattr(k[0], "__len__"):
            shape, dtype, dev, rg, _ = k
            sizes.extend(shape)
            rest.append((len(shape), dtype, dev, rg))
        else:
            rest.append(k)
    return ("every size", spec, tuple(rest), alias, sw), tuple(sizes)


def _symbols(vectors: list) -> tuple:
    """Per size position: None (the same in every capture) or its symbol's index, and
    each capture's symbol values; positions whose sizes move together share a symbol."""
    groups: dict = {}
    pos = []
    for p in range(len(vectors[0])):
        vals = tuple(v[p] for v in vectors)
        pos.append(None if len(set(vals)) == 1 else groups.setdefault(vals, len(groups)))
    order = sorted(groups, key=groups.get)
    return pos, [tuple(vals[i] for vals in order) for i in range(len(vectors))]


def _fit_int(vs: tuple, S: list) -> Any:
    if all(v == vs[0] for v in vs):
        return vs[0]
    n = len(S[0])
    found = []
    for m in [(j,) for j in range(n)] + [(j, k) for j in range(n) for k in range(j, n)]:
        ms = []
        for sv in S:
            x = 1
            for j in m:
                x *= sv[j]
            ms.append(x)
        if ms[0] == ms[1]:
            continue
        c, r = divmod(vs[1] - vs[0], ms[1] - ms[0])
        d = vs[0] - c * ms[0]
        if not r and c and all(c * x + d == v for x, v in zip(ms, vs)):
            found.append(_Mono(c, m, d))
    if len(found) != 1:
        raise _Mismatch      # no form, or two that the captures cannot tell apart
    return found[0]


def _fit_all(vs: tuple, S: list) -> Any:
    """The template value for the captures' values ``vs`` at symbol values ``S``."""
    t = type(vs[0])
    if any(type(v) is not t for v in vs):
        raise _Mismatch
    if t is int:
        return _fit_int(vs, S)
    if t in (tuple, list) or (isinstance(vs[0], tuple) and hasattr(vs[0], "_fields")):
        if any(len(v) != len(vs[0]) for v in vs):
            raise _Mismatch
        items = [_fit_all(x, S) for x in zip(*vs)]
        return t(*items) if hasattr(vs[0], "_fields") else t(items)
    if t is dict:
        if any(list(v) != list(vs[0]) for v in vs):
            raise _Mismatch
        return {k: _fit_all(tuple(v[k] for v in vs), S) for k in vs[0]}
    if t is slice:
        return slice(_fit_all(tuple(v.start for v in vs), S),
                     _fit_all(tuple(v.stop for v in vs), S),
                     _fit_all(tuple(v.step for v in vs), S))
    if isinstance(vs[0], Node):
        return ("node", vs[0].name) if all(v.name == vs[0].name for v in vs) else _raise()
    if hasattr(vs[0], "__len__") and t.__name__ == "Size":
        return ("size", _fit_all(tuple(tuple(v) for v in vs), S))
    if all(v == vs[0] or v is vs[0] for v in vs):
        return vs[0]
    raise _Mismatch


def _template_all(entries: list, S: list) -> list:
    recs = [_records(e.gm.graph) for e in entries]
    e0 = entries[0]
    for e, r in zip(entries[1:], recs[1:]):
        if len(r) != len(recs[0]) or e.out_spec != e0.out_spec or \
                e.user_idx != e0.user_idx or len(e.consts) != len(e0.consts) or any(
                    a is not b and a != b for a, b in zip(e.consts, e0.consts)):
            raise _Mismatch
    tpl = []
    for rs in zip(*recs):
        if any(r[:3] != rs[0][:3] for r in rs):
            raise _Mismatch
        tpl.append(rs[0][:3] + tuple(_fit_all(tuple(r[i] for r in rs), S)
                                     for i in range(3, 6)))
    return tpl


def _observe_all(code: Any, entry: Any, key: tuple) -> None:
    base, sizes = _all_sizes(key)
    if not sizes:
        return
    st = _state.setdefault(code, {})
    slot = st.setdefault(base, {"seen": [], "tpl": None, "pos": None, "made": 0})
    if slot["tpl"] is not None or any(sizes == t for t, _ in slot["seen"]):
        return
    slot["seen"] = (slot["seen"] + [(sizes, entry)])[-3:]
    if len(slot["seen"]) < 3:
        return
    pos, S = _symbols([t for t, _ in slot["seen"]])
    try:
        slot["tpl"] = _template_all([e for _, e in slot["seen"]], S)
        slot["pos"] = pos
    except (_Mismatch, TypeError, ValueError):
        slot["tpl"] = None


def _resize_all(code: Any, key: tuple, leaves: list) -> Any:
    base, sizes = _all_sizes(key)
    slot = (_state.get(code) or {}).get(base)
    if slot is None or slot["tpl"] is None or slot["made"] >= _MAX_SIZES:
        return None
    ref = slot["seen"][-1][0]
    n = 1 + max((i for i in slot["pos"] if i is not None), default=-1)
    S: list = [None] * n
    for p, i in enumerate(slot["pos"]):
        if i is None:
            if sizes[p] != ref[p]:
                return None      # a size no capture varied
        elif S[i] is None:
            S[i] = sizes[p]
        elif S[i] != sizes[p]:
            return None          # sizes that moved together in the captures part ways
    if any(v is None or v < 2 for v in S):
        return None
    return _resized(code, key, leaves, slot, tuple(S))


def _probe(code: Any, entry: Any, key: tuple, leaves: list, tpl: list, s: int) -> Any:
    """Whether ``tpl`` at leading size ``s`` is the graph a capture at that size
    records, or None when no such capture can be run safely.

    The capture runs on copies of this call's tensor arguments resized to ``s``
    (rows repeated), so the function's writes to its arguments touch nothing of
    the caller's; it is run only when the capture just made wrote no argument,
    parameter or buffer (so another run changes no state outside) and changed no
    Python state (it would have broken), and its random numbers are given back."""
    import ember

    from ..capture import TensorBase, alias_pattern, unflatten
    if not entry.pure:
        return None
    made: dict = {}
    new = []
    for x in leaves:
        if isinstance(x, TensorBase) and x.dim():
            if not x.is_contiguous() or not x.shape[0]:
                return None       # the probe's layout would differ from the call's
            if id(x) not in made:
                with ember.no_grad():
                    reps = -(-s // x.shape[0])
                    y = ember.cat([x.detach()] * reps)[:s].clone()
                made[id(x)] = y.requires_grad_(x.requires_grad)
            x = made[id(x)]
        new.append(x)
    if alias_pattern(new) != key[2]:
        return None
    spec = key[0]
    if type(spec) is int:
        args, kwargs = tuple(new), {}
    else:
        args, kwargs = unflatten(spec, iter(new))
    got = code.probe(args, kwargs, new)
    if got is None:
        return None
    graph, user_idx, out_spec, consts = got
    if user_idx != entry.user_idx or out_spec != entry.out_spec or \
            len(consts) != len(entry.consts) or \
            any(a is not b and a != b for a, b in zip(consts, entry.consts)):
        return False
    return _same(tpl, s, graph)


def observe(code: Any, entry: Any, key: tuple, leaves: list | None = None) -> None:
    """A capture of ``code`` finished: learn (or confirm) its shape-generic form; on
    the second size seen, a capture at a third size (:func:`_probe`) confirms it."""
    if code.dynamic is False or entry.compiled is None or entry.gm is None:
        return
    if code.dynamic is True:
        _observe_all(code, entry, key)
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
            if leaves is not None:
                # confirm the fit at a third size now, on copies of these arguments,
                # rather than on a third call's capture
                slot["confirmed"] = _probe(code, entry, key, leaves, slot["tpl"], sa + sb)
                if slot["confirmed"] is None:
                    slot["confirmed"] = False    # (a third capture confirms it)
                elif not slot["confirmed"]:
                    raise _Mismatch
        else:
            slot["confirmed"] = _same(slot["tpl"], s, entry.gm.graph)
            if not slot["confirmed"]:
                slot["tpl"] = None
                del slot["seen"][:-1]
    except (_Mismatch, TypeError, ValueError):
        # graphs that do not line up (or values that do not compare): no template yet
        slot["tpl"] = None
        del slot["seen"][:-1]


def resize(code: Any, key: tuple, leaves: list) -> Any:
    """An entry for ``key`` from the confirmed shape-generic graph, or None."""
    if code.dynamic is True:
        return _resize_all(code, key, leaves)
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
    return _resized(code, key, leaves, slot, s)


def _resized(code: Any, key: tuple, leaves: list, slot: dict, s: Any) -> Any:
    """The entry running ``slot``'s template at sizes ``s``, or None."""
    from ..capture import _Entry
    src = slot["seen"][-1][1]
    try:
        g = _graph(slot["tpl"], s)
    except (TypeError, ValueError):
        return None
    if src.size_guards is None:
        return None       # the function read a size as a plain int (len())
    shapes = {}
    for n in g.nodes:
        tm = n.meta.get("tensor_meta")
        if hasattr(tm, "shape"):
            if any(d < 0 for d in tm.shape):
                return None
            shapes[n.name] = tuple(tm.shape)
    if not symsize.guards_hold(src.size_guards, shapes):
        return None       # the function's code compared a size the other way
    inputs = [leaves[i] for i in src.user_idx] + [f(leaves) for f in src.lifted]
    # the resized graph inputs must describe these very arguments (a transposed or
    # sliced input at a new size is a new layout, not a new size)
    phs = g.find_nodes(op=INPUT_OP)
    if len(phs) != len(inputs) or any(
            tuple(n.meta["tensor_meta"].shape) != tuple(t.shape) or
            tuple(n.meta["tensor_meta"].stride) != tuple(t.stride()) for n, t in zip(phs, inputs)):
        return None
    gm = GraphModule(src.gm, g, "GraphModule")
    if src.gm.meta.get("dynamic_sizes"):
        gm.meta["dynamic_sizes"] = True
    compiled = code.backend.compile(gm, inputs, mode=code.mode, options=code.options)
    e = _Entry(key, src.guards, compiled, src.user_idx, src.lifted, src.lifted_keys,
               src.out_spec, src.consts, gm=gm, module_guards=src.module_guards,
               leaves=leaves)
    e.volatile = src.volatile
    e.stat = "graphs_resized"
    slot["made"] += 1
    return e

