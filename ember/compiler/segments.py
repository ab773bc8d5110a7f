"""A captured call split at its graph breaks: compiled graphs with, between them,
Python values read from tensors (guarded) and ops run eagerly.

Capture records one linear graph.  A value read into Python (``t.item()``,
``float(t)``, ``if t.sum() > 0``, ``t.tolist()``, ``t.numpy()``) becomes a
*value step*: the graph before it computes the tensor, the step reads the
value and checks it equals the one seen while capturing (everything Python
did with it, branches taken and constants baked into later ops, is only valid
for that value).  An op whose output shape depends on data (``nonzero``,
boolean masks, ``unique``), a write through aliasing inputs, or a function
marked ``ember.compiler.disable`` becomes an *eager step*: it runs as written
between two graphs, and the shapes of its tensor outputs (values of its
scalars) are guarded the same way.

A failed check raises :class:`GuardMiss`.  The capture made sure nothing
before it changed state a fresh run would see twice (no in-place write to an
input, parameter or buffer; random numbers drawn are restored), so the call
can start over: another entry whose steps up to that check are the same
resumes from it, otherwise the function is captured again (or run eagerly);
``disable``d functions already run in this call are not run again
(:class:`CallMemo`).
"""

from __future__ import annotations

import operator
from typing import Any, Callable

from ember.fx.graph import Graph
from ember.fx.graph_module import GraphModule
from ember.fx.node import INPUT_OP, Node, map_aggregate, map_arg


class CallMemo:
    """The results of the ``disable``d functions one call has run, in order: when a
    failed check makes the call start over (another entry, a new capture, eager),
    those functions are not run again; their results are taken from here."""

    __slots__ = ("done", "pos")

    def __init__(self) -> None:
        # (function, result, generator state before and after it ran)
        self.done: list[tuple[Callable, Any, tuple, tuple]] = []
        self.pos = 0

    def call(self, fn: Callable, run: Callable[[], Any]) -> Any:
        from ember._C.random import default_generator as g
        now = (g.initial_seed(), g.get_offset())
        key = getattr(fn, "_ember_step_key", fn)
        if self.pos < len(self.done) and self.done[self.pos][0] == key:
            _, out, before, after = self.done[self.pos]
            if now == before and after != before:     # the random numbers it drew
                g.manual_seed(after[0])
                g.set_offset(after[1])
        else:
            out = run()
            del self.done[self.pos:]
            self.done.append((key, out, now, (g.initial_seed(), g.get_offset())))
        self.pos += 1
        return out


SKIP = object()


class FastForward:
    """Running a call again up to a failed check that cannot start it over (in-place
    writes to inputs came before it): the capture runs the function from the start,
    and the ops before the check, in the order recorded, return the values the call
    computed (``env``), skip the in-place writes to inputs (made already), or run
    again (pure ops of unchanged values); ``disable``d functions and training-loop
    steps come from the call's memo.  From the check on, the capture goes on as
    usual: the program it makes shares the steps before the check, so later calls
    resume there (:meth:`Program.resumable`)."""

    __slots__ = ("ops", "env", "i")

    def __init__(self, ops: list[tuple[str, str, bool]], env: dict) -> None:
        self.ops, self.env, self.i = ops, env, 0

    def take(self, op: str) -> Any:
        """What the next recorded op (``op``) does: None (run it), :data:`SKIP` or the
        value to return."""
        i = self.i
        if i >= len(self.ops):
            return None
        self.i = i + 1
        name, was, skip = self.ops[i]
        if was != op:
            raise RuntimeError(f"ember.compile: running the call again up to a failed check, "
                               f"op {i} is {op!r} where the capture recorded {was!r}; the "
                               f"function's ops depend on state the guards do not cover")
        if skip:
            return SKIP
        v = self.env.get(name, SKIP)
        return None if v is SKIP else _read(self.env, name)


class GuardMiss(Exception):
    """A value or shape read while replaying differs from the captured one; carries
    where (program, step, values computed so far, grad mode and generator state) so
    another program sharing the steps before it can go on from there."""

    program: Any = None
    step = 0
    env: dict = {}
    state: tuple = ()
    memo: CallMemo | None = None

    def at(self, program: Any, step: int, env: dict) -> None:
        from ember._C import core
        from ember._C.random import default_generator as g
        self.program, self.step, self.env = program, step, env
        self.state = (core.is_grad_enabled(), g.initial_seed(), g.get_offset())

    def restore_state(self) -> None:
        """Grad mode and the generator as they were at the failed check."""
        from ember._C import core
        from ember._C.random import default_generator as g
        grad, seed, offset = self.state
        core._set_grad_enabled(grad)
        if (g.initial_seed(), g.get_offset()) != (seed, offset):
            g.manual_seed(seed)
            g.set_offset(offset)


def read_value(t: Any, how: str, dtype: Any = None) -> Any:
    """The value ``Tensor.<how>()`` gives Python (``item``, ``tolist``; ``numpy`` and
    ``__array__`` as a copy: the check compares the values read at that point)."""
    if how == "item":
        return t.item()
    if how == "tolist":
        return t.tolist()
    import numpy as np
    return np.array(t.detach().numpy(), dtype=dtype, copy=True)


def same_value(a: Any, b: Any) -> bool:
    """Equal values of the same type (NaN equals NaN: it bakes the same constants)."""
    if type(a) is not type(b):
        return False
    if type(a) is list:
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if hasattr(a, "__array_interface__"):        # a NumPy array read from a tensor
        import numpy as np
        return a.shape == b.shape and a.dtype == b.dtype and bool(
            np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
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


class LateInput:
    """A graph input read when the first step that needs it runs: a parameter's
    ``.grad`` that a ``backward()`` earlier in the program sets (gradient clipping
    between backward and the optimizer step)."""

    __slots__ = ("fetch", "leaves", "key", "path")

    def __init__(self, fetch: Callable, leaves: list, key: tuple, path: str) -> None:
        self.fetch, self.leaves, self.key, self.path = fetch, leaves, key, path

    def get(self) -> Any:
        from .capture import tensor_key
        t = self.fetch(self.leaves)
        # the program's backward made it when captured; the same steps make it again
        if t is None or tensor_key(t) != self.key:
            raise RuntimeError(f"ember.compile: {self.path} is "
                               f"{'None' if t is None else 'another size or dtype'} where the "
                               f"compiled step reads it, unlike when it was captured")
        return t


def _peek(v: Any) -> Any:
    """``v``, or the tensor a late input stands for now (without keeping it)."""
    return v.fetch(v.leaves) if type(v) is LateInput else v


def _read(env: dict, name: str) -> Any:
    v = env[name]
    if type(v) is LateInput:
        v = env[name] = v.get()
    return v


class _GraphStep:
    __slots__ = ("fn", "ins", "outs", "gm", "fp")

    def __init__(self, fn: Callable, ins: list[str], outs: list[str], gm: GraphModule) -> None:
        self.fn, self.ins, self.outs, self.gm = fn, ins, outs, gm
        self.fp = ("graph", gm.code, tuple(ins), tuple(outs))

    def __call__(self, env: dict, memo: CallMemo | None) -> None:
        res = self.fn(*[_read(env, i) for i in self.ins])
        for i, v in zip(self.outs, res):
            env[i] = v


class _ValueStep:
    __slots__ = ("src", "how", "dtype", "expected", "label", "ins", "fp", "resume_at")

    def __init__(self, src: str, how: str, dtype: Any, expected: Any, label: str,
                 resume_at: int | None = None) -> None:
        self.src, self.how, self.dtype = src, how, dtype
        # the check's index among the recorded ops when in-place writes to inputs came
        # before it (a miss fast-forwards to it), else None (a miss starts over)
        self.resume_at = resume_at
        self.expected, self.label = expected, label
        self.ins = [src]
        self.fp = ("value", src, how, repr(dtype))

    def __call__(self, env: dict, memo: CallMemo | None) -> None:
        v = read_value(_read(env, self.src), self.how, self.dtype)
        if not same_value(v, self.expected):
            raise GuardMiss(f"{self.label} == {self.expected!r} (now {v!r})")


class _EagerStep:
    __slots__ = ("fn", "args", "kwargs", "slot", "items", "shapes", "label", "ins", "fp",
                 "opaque")

    def __init__(self, fn: Callable, args: tuple, kwargs: dict, slot: str,
                 items: list[tuple[str, int]], shapes: tuple, label: str,
                 opaque: bool = False) -> None:
        self.fn, self.args, self.kwargs, self.slot = fn, args, kwargs, slot
        self.items, self.shapes, self.label = items, shapes, label
        self.opaque = opaque      # a user function (disable): its effects are unknown
        refs: list = []
        map_aggregate((args, kwargs), lambda a: refs.append(a.name) if type(a) is _Ref else a)
        self.ins = refs
        self.fp = ("eager", getattr(fn, "_ember_step_key", id(fn)), repr(args), repr(kwargs),
                   slot, tuple(items))

    def __call__(self, env: dict, memo: CallMemo | None) -> None:
        def get(a: Any) -> Any:
            return _read(env, a.name) if type(a) is _Ref else a
        if self.opaque and memo is not None:
            out = memo.call(self.fn, lambda: self.fn(*map_aggregate(self.args, get),
                                                     **map_aggregate(self.kwargs, get)))
        else:
            out = self.fn(*map_aggregate(self.args, get), **map_aggregate(self.kwargs, get))
        env[self.slot] = out
        shapes = output_guard(out)
        if shapes != self.shapes:
            raise GuardMiss(f"output of {self.label}: shapes/values {_show(self.shapes)} "
                            f"(now {_show(shapes)})")
        for i, k in self.items:
            env[i] = out[k]


def _show(guard: tuple) -> str:
    return "[" + ", ".join(str(g[1]) if len(g) == 2 and type(g[0]) is type else str(g)
                           for g in guard) + "]"


class _Ref:
    """Stands for an environment entry (a node's value) inside an eager step's arguments."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"%{self.name}"


class Program:
    """The steps of a split capture; called with the graph inputs like one graph.

    The environment maps node names to values.  Programs captured from one
    function share their steps up to the check where they diverge (same code,
    same names): a call that fails a check in one program resumes the next
    from that check with the values already computed (``resume``), so each
    step before it runs once per call."""

    def __init__(self, steps: list, input_names: list[str], outs: list[str],
                 ops: list | None = None) -> None:
        self.steps = steps
        self.ops = ops or []        # (node name, op, writes an input), in recorded order
        self.input_names = input_names
        self.outs = outs
        self.graphs = [s.gm for s in steps if type(s) is _GraphStep]
        self.fps = [s.fp for s in steps]
        # how many disable'd functions run before step i (none: no memo needed)
        counts = [0]
        for st in steps:
            counts.append(counts[-1] + (type(st) is _EagerStep and st.opaque))
        self.opaque_before = counts if counts[-1] else []
        inputs = set(input_names)
        seen: list[str] = []
        self.reads: list[tuple[str, ...]] = []   # inputs read by steps[:i + 1]
        for st in steps:
            seen += [n for n in st.ins if n in inputs and n not in seen]
            self.reads.append(tuple(seen))

    def fast_forward(self, miss: GuardMiss) -> FastForward | None:
        """How to run the call again up to the check that failed, when it cannot start
        over (None: it can)."""
        st = self.steps[miss.step]
        at = getattr(st, "resume_at", None)
        return None if at is None else FastForward(self.ops[:at], miss.env)

    def describe_checks(self) -> list[str]:
        """The checks between the graphs, in words (for ``explain``'s guards)."""
        out = []
        for st in self.steps:
            if type(st) is _ValueStep:
                out.append(f"{st.label} == {st.expected!r}")
            elif type(st) is _EagerStep:
                out.append(f"output of {st.label}: shapes/values {_show(st.shapes)}")
        return out

    def resumable(self, miss: GuardMiss, env: dict) -> bool:
        """Whether this program's steps before ``miss.step`` are the ones run there."""
        k, other = miss.step, miss.program
        return (k < len(self.fps) and type(self.steps[k]) is not _GraphStep and
                self.fps[:k + 1] == other.fps[:k + 1] and
                all(_peek(miss.env.get(n)) is _peek(env[n]) for n in self.reads[k]))

    def __call__(self, *inputs: Any, resume: GuardMiss | None = None) -> tuple:
        env = dict(zip(self.input_names, inputs))
        start = 0
        memo = resume.memo if resume is not None else None
        if memo is None and self.opaque_before:
            memo = CallMemo()
        if resume is not None and self.resumable(resume, env):
            env.update(resume.env)
            start = resume.step
            resume.restore_state()
        if memo is not None:
            memo.pos = self.opaque_before[start] if start else 0
        steps = self.steps
        for i in range(start, len(steps)):
            try:
                steps[i](env, memo)
            except GuardMiss as e:
                e.at(self, i, env)
                e.memo = memo
                raise
        return tuple(_read(env, i) for i in self.outs)


def split_kind(node: Node) -> str | None:
    return node.meta.get("split")


def split_program(graph: Graph, root: Any, examples: dict,
                  compile_graph: Callable[[GraphModule, list], Callable],
                  ops: list | None = None) -> Program:
    """Cut ``graph`` at its split nodes into a :class:`Program`; each piece between
    them becomes a GraphModule (over ``root``'s attributes) handed to
    ``compile_graph(gm, example_inputs)``.  ``examples`` maps nodes to the values
    they had while capturing."""
    nodes = list(graph.nodes)
    graph_inputs = graph.find_nodes(op=INPUT_OP)
    output = nodes[-1]

    # pieces: ("graph", [nodes]) | ("value", node) | ("eager", node, [getitem nodes])
    pieces: list[list] = []
    current: list[Node] = []
    for n in nodes:
        if n.op in (INPUT_OP, "output"):
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
    # (values a fast-forward returns again are kept to the end of the call)
    later: set = set(output.all_input_nodes) | {n for n in nodes if n.meta.get("keep_ff")}
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
            steps.append(_GraphStep(fn, [a.name for a in ins], [o.name for o in outs], gm))
        elif p[0] == "value":
            n = p[1]
            src, how, *dtype = n.args
            at = None
            if n.meta.get("resume_only") and ops:
                at = next(i for i, o in enumerate(ops) if o[0] is n)
            steps.append(_ValueStep(src.name, how, dtype[0] if dtype else None,
                                    n.meta["guard_value"], n.meta["guard_label"], at))
        else:
            n, items = p[1], p[2]

            def ref(a: Node) -> Any:
                return _Ref(a.name)
            steps.append(_EagerStep(n.meta.get("eager_fn", n.target), map_arg(n.args, ref),
                                    map_arg(n.kwargs, ref), n.name,
                                    [(it.name, it.args[1]) for it in items],
                                    n.meta["guard_shapes"], n.meta["guard_label"],
                                    n.meta.get("opaque", False)))
    # the output node holds a flat tuple of nodes (capture's finish writes it so)
    return Program(steps, [p.name for p in graph_inputs], [n.name for n in output.args[0]],
                   [(n.name, op, skip) for n, op, skip in ops or ()])
