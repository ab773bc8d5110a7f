"""A captured call split at its graph breaks: compiled graphs with, between them,
Python values read from tensors (guarded) and ops run eagerly.

Capture records one linear graph.  A value read into Python (``t.item()``,
``float(t)``, ``if t.sum() > 0``, ``t.tolist()``) becomes a *value step*: the
graph before it computes the tensor, the step reads the value and checks it
equals the one seen while capturing (everything Python did with it, branches
taken and constants baked into later ops, is only valid for that value).  An op
whose output shape depends on data (``nonzero``, boolean masks, ``unique``)
or a function marked ``ember.compiler.disable`` becomes an *eager step*: it runs
as written between two graphs, and the shapes of its tensor outputs are
guarded the same way.  A failed check raises :class:`GuardMiss`; the capture
made sure nothing before it changed state a fresh run would see twice.
"""

from __future__ import annotations

import operator
from typing import Any, Callable

from ember.fx.graph import Graph
from ember.fx.graph_module import GraphModule
from ember.fx.node import Node, map_aggregate, map_arg


class GuardMiss(Exception):
    """A value or shape read while replaying differs from the captured one."""


def read_value(t: Any, how: str) -> Any:
    """What ``Tensor.<how>()`` gave Python while capturing (the graph's record of it)."""
    return t.item() if how == "item" else t.tolist()


def same_value(a: Any, b: Any) -> bool:
    """Equal values of the same type (NaN equals NaN: it bakes the same constants)."""
    if type(a) is not type(b):
        return False
    if type(a) is list:
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    return a == b or (a != a and b != b)


def output_guard(out: Any) -> tuple:
    """What later code may have baked from an eager step's result: the shapes of its
    tensors and the values of its Python scalars."""
    from ember._C.core import TensorBase
    if isinstance(out, TensorBase):
        return (tuple(out.shape),)
    if type(out) in (tuple, list):
        return tuple(s for o in out for s in output_guard(o))
    return ((type(out), out),)


class _GraphStep:
    __slots__ = ("fn", "ins", "outs", "gm")

    def __init__(self, fn: Callable, ins: list[int], outs: list[int], gm: GraphModule) -> None:
        self.fn, self.ins, self.outs, self.gm = fn, ins, outs, gm

    def __call__(self, env: list) -> None:
        res = self.fn(*[env[i] for i in self.ins])
        for i, v in zip(self.outs, res):
            env[i] = v


class _ValueStep:
    __slots__ = ("src", "how", "expected", "label")

    def __init__(self, src: int, how: str, expected: Any, label: str) -> None:
        self.src, self.how, self.expected, self.label = src, how, expected, label

    def __call__(self, env: list) -> None:
        v = read_value(env[self.src], self.how)
        if not same_value(v, self.expected):
            raise GuardMiss(f"{self.label} == {self.expected!r} (now {v!r})")


class _EagerStep:
    __slots__ = ("fn", "args", "kwargs", "slot", "items", "shapes", "label")

    def __init__(self, fn: Callable, args: tuple, kwargs: dict, slot: int,
                 items: list[tuple[int, int]], shapes: tuple, label: str) -> None:
        self.fn, self.args, self.kwargs, self.slot = fn, args, kwargs, slot
        self.items, self.shapes, self.label = items, shapes, label

    def __call__(self, env: list) -> None:
        def get(a: Any) -> Any:
            return env[a.i] if type(a) is _SlotRef else a
        out = self.fn(*map_aggregate(self.args, get), **map_aggregate(self.kwargs, get))
        shapes = output_guard(out)
        if shapes != self.shapes:
            raise GuardMiss(f"output of {self.label}: shapes/values {_show(self.shapes)} "
                            f"(now {_show(shapes)})")
        env[self.slot] = out
        for i, k in self.items:
            env[i] = out[k]


def _show(guard: tuple) -> str:
    return "[" + ", ".join(str(g[1]) if len(g) == 2 and type(g[0]) is type else str(g)
                           for g in guard) + "]"


class _SlotRef:
    """Stands for an environment slot inside an eager step's arguments."""

    __slots__ = ("i",)

    def __init__(self, i: int) -> None:
        self.i = i


class Program:
    """The steps of a split capture; called with the graph inputs like one graph."""

    def __init__(self, steps: list, n_inputs: int, n_slots: int, outs: list[int]) -> None:
        self.steps = steps
        self.n_inputs = n_inputs
        self.n_slots = n_slots
        self.outs = outs
        self.graphs = [s.gm for s in steps if type(s) is _GraphStep]

    def __call__(self, *inputs: Any) -> tuple:
        env = list(inputs) + [None] * (self.n_slots - self.n_inputs)
        for step in self.steps:
            step(env)
        return tuple(env[i] for i in self.outs)


def split_kind(node: Node) -> str | None:
    return node.meta.get("split")


def split_program(graph: Graph, root: Any, examples: dict,
                  compile_graph: Callable[[GraphModule, list], Callable]) -> Program:
    """Cut ``graph`` at its split nodes into a :class:`Program`; each piece between
    them becomes a GraphModule (over ``root``'s attributes) handed to
    ``compile_graph(gm, example_inputs)``.  ``examples`` maps nodes to the values
    they had while capturing."""
    nodes = list(graph.nodes)
    placeholders = [n for n in nodes if n.op == "placeholder"]
    output = nodes[-1]
    slots: dict[Node, int] = {n: i for i, n in enumerate(placeholders)}

    def slot(n: Node) -> int:
        if n not in slots:
            slots[n] = len(slots)
        return slots[n]

    # pieces: ("graph", [nodes]) | ("value", node) | ("eager", node, [getitem nodes])
    pieces: list[list] = []
    current: list[Node] = []
    for n in nodes:
        if n.op in ("placeholder", "output"):
            continue
        kind = split_kind(n)
        if kind is not None:
            if current:
                pieces.append(["graph", current])
                current = []
            pieces.append([kind, n, []])
        elif (n.op == "call_function" and n.target is operator.getitem and
              isinstance(n.args[0], Node) and split_kind(n.args[0]) == "eager"):
            next(p for p in reversed(pieces) if p[1] is n.args[0])[2].append(n)
        else:
            current.append(n)
    if current:
        pieces.append(["graph", current])

    # what each piece reads, to know which graph values must leave their graph
    needed_after: list[set] = [set() for _ in pieces]
    later: set = set(output.all_input_nodes)
    for i in range(len(pieces) - 1, -1, -1):
        needed_after[i] = set(later)
        p = pieces[i]
        members = p[1] if p[0] == "graph" else [p[1]] + p[2]
        for n in members:
            later.update(n.all_input_nodes)
    steps: list = []
    for p, after in zip(pieces, needed_after):
        if p[0] == "graph":
            members = p[1]
            inside = set(members)
            ins: list[Node] = []
            for n in members:
                for a in n.all_input_nodes:
                    if a not in inside and a not in ins:
                        ins.append(a)
            outs = [n for n in members if n in after]
            g = Graph()
            val: dict[Node, Node] = {}
            for a in ins:
                ph = g.placeholder(a.name)
                ph.meta = dict(a.meta)
                val[a] = ph
            for n in members:
                val[n] = g.node_copy(n, val.__getitem__)
            g.output(tuple(val[o] for o in outs))
            gm = GraphModule(root, g, "GraphModule")
            fn = compile_graph(gm, [examples.get(a) for a in ins])
            steps.append(_GraphStep(fn, [slot(a) for a in ins], [slot(o) for o in outs], gm))
        elif p[0] == "value":
            n = p[1]
            src, how = n.args
            steps.append(_ValueStep(slot(src), how, n.meta["guard_value"],
                                    n.meta["guard_label"]))
        else:
            n, items = p[1], p[2]

            def ref(a: Node) -> Any:
                return _SlotRef(slot(a))
            steps.append(_EagerStep(n.meta.get("eager_fn", n.target), map_arg(n.args, ref),
                                    map_arg(n.kwargs, ref), slot(n),
                                    [(slot(it), it.args[1]) for it in items],
                                    n.meta["guard_shapes"], n.meta["guard_label"]))
    # the output node holds a flat tuple of nodes (capture's finish writes it so)
    outs = [slot(n) for n in output.args[0]]
    return Program(steps, len(placeholders), len(slots), outs)
