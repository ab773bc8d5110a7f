"""Training through generated code: a joint forward+backward graph, split in two.

A captured forward graph whose inputs need gradients is run once more on
copies of its example inputs under a recording mode, and ``autograd.grad``
of its outputs is taken inside that mode: the backward formulas (public ember
ops) land in the same graph.  The joint graph is then partitioned: the
forward part computes the outputs plus the values the backward reads (only
those are kept alive between the passes), the backward part everything that
depends on the incoming gradients (and the cheap values only it needs, which
are recomputed there rather than saved).  Both parts go through the same
lowering and fusion, and an autograd ``Function`` joins them, so
``loss.backward()`` runs the generated backward.

Ops that are themselves custom ``autograd.Function`` s (cross-entropy) cannot
be traced through: their forward runs eagerly with grad on inside the
compiled forward, and the compiled backward calls their own backward (an
"island").
"""
from __future__ import annotations

import functools
import operator
from typing import Any, Callable

import ember
from ember._C import core as _core
from ember.autograd.function import Function
from ember.fx import Graph, GraphModule, Node
from ember.fx.node import INPUT_OP, map_arg
from ember.fx.passes.shape_prop import _extract_tensor_metadata

from ..capture import _DATA_DEPENDENT, _TO_PYTHON, _Capture

TensorBase = _core.TensorBase

# ops that write their first argument
_INPLACE_EXTRA = frozenset({"setitem", "copy_", "fill_"})


class JointTraceError(RuntimeError):
    """The backward of a graph could not be traced (the graph trains eagerly).

    ``op`` names the forward op whose backward formula failed, when known: the
    trace is retried with that op as an island."""

    op: str | None = None


def _failing_op() -> str | None:
    """The forward op of the autograd node whose backward the engine is running."""
    from ember._C import engine
    return getattr(engine.current_node(), "_op", None)


def _keeps_graph() -> bool:
    """Whether the autograd engine running this backward keeps the graph
    (``retain_graph``): read from its frame; True when not found."""
    import sys
    f = sys._getframe(1)
    for _ in range(12):
        if f is None:
            break
        if f.f_code.co_name in ("run_backward", "_run_all") and \
                f.f_code.co_filename.endswith("_engine.py"):
            return bool(f.f_locals.get("keep_graph", True))
        f = f.f_back
    return True


def _call_method(name: str, obj: Any, *args: Any, **kwargs: Any) -> Any:
    return getattr(obj, name)(*args, **kwargs)


def _function_class(n: Node) -> Any:
    owner = getattr(n.target, "__self__", None) if n.op == "call_function" else None
    return owner if isinstance(owner, type) and issubclass(owner, Function) else None


def _is_inplace(n: Node) -> bool:
    name = n.meta.get("op_name") or (n.target if isinstance(n.target, str) else "")
    return (name.endswith("_") and not name.endswith("__")) or name in _INPLACE_EXTRA


# ---------------------------------------------------------------------------
# islands: custom autograd Functions inside a compiled training graph
# ---------------------------------------------------------------------------

class _IslandSpec:
    """Which Function to run, its keyword arguments and which inputs need gradients."""

    __slots__ = ("target", "kwargs", "needs")

    def __init__(self, target: Callable, kwargs: dict, needs: tuple) -> None:
        self.target = target
        self.kwargs = kwargs
        self.needs = needs

    def __repr__(self) -> str:
        return f"island({getattr(self.target, '__self__', self.target).__name__})"


class _DirectCtx:
    """The ``ctx`` of a Function run outside autograd (its forward and backward
    called directly): what such Functions use of it."""

    def __init__(self, needs: tuple) -> None:
        self.needs_input_grad = needs
        self.saved_tensors: tuple = ()

    def save_for_backward(self, *tensors: Any) -> None:
        self.saved_tensors = tensors

    def mark_non_differentiable(self, *args: Any) -> None:
        pass

    def set_materialize_grads(self, value: bool) -> None:
        pass


def island_forward(spec: _IslandSpec, *args: Any) -> tuple:
    """Run the Function with grad on, on detached inputs: (output, state for the backward).

    A Function marked ``_plain_ctx`` (its forward only saves tensors and sets
    attributes on ``ctx``, its backward only reads them) has its forward and
    backward called directly, without an autograd graph of its own."""
    cls = getattr(spec.target, "__self__", None)
    if getattr(cls, "_plain_ctx", False) and not spec.kwargs:
        ctx = _DirectCtx(spec.needs)
        with ember.no_grad():
            out = cls.forward(ctx, *[a.detach() if isinstance(a, TensorBase) else a
                                     for a in args])
        if not isinstance(out, TensorBase):
            raise JointTraceError(f"{spec!r} returns {type(out).__name__}, not one tensor")
        return out, (cls, ctx)
    ins = []
    for a, need in zip(args, spec.needs):
        if isinstance(a, TensorBase):
            a = a.detach()
            if need:
                a.requires_grad_(True)
        ins.append(a)
    with ember.enable_grad():
        out = spec.target(*ins, **spec.kwargs)
    if not isinstance(out, TensorBase):
        raise JointTraceError(f"{spec!r} returns {type(out).__name__}, not one tensor")
    return out.detach(), (ins, spec.needs, out)


def island_backward(state: tuple, grad: Any) -> tuple:
    """The Function's own backward: gradients for the inputs that need them (else None)."""
    if len(state) == 2:           # a Function called directly
        cls, ctx = state
        with ember.no_grad():
            gs = cls.backward(ctx, grad)
        gs = gs if isinstance(gs, tuple) else (gs,)
        return tuple(g if nd else None for g, nd in zip(gs, ctx.needs_input_grad))
    ins, needs, out = state
    wanted = [x for x, nd in zip(ins, needs) if nd]
    # retain_graph: a second backward through the compiled graph (retain_graph=True
    # there) needs the island again; its state lives as long as the graph node
    gs = iter(ember.autograd.grad([out], wanted, [grad], allow_unused=True,
                                  retain_graph=True))
    return tuple(next(gs) if nd else None for nd in needs)


class _IslandTrace(Function):
    """Stands for an island while the joint graph is traced; records its two halves."""

    @staticmethod
    def forward(ctx: Any, tracer: Any, spec: _IslandSpec, *args: Any) -> Any:
        out, state = island_forward(spec, *args)
        ctx.tracer, ctx.state = tracer, state
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> tuple:
        tr = ctx.tracer
        r = tr._check("island_backward", (grad,), {})
        if r is not None:
            raise JointTraceError(r)
        tr.suspended += 1
        try:
            gs = island_backward(ctx.state, grad)
        finally:
            tr.suspended -= 1
        node = tr.graph.call_function(island_backward, (tr.states[id(ctx.state)],
                                                        tr._arg(grad)))
        for i, g in enumerate(gs):
            if g is not None:
                item = tr.graph.call_function(operator.getitem, (node, i))
                item.meta["tensor_meta"] = _extract_tensor_metadata(g)
                tr._bind(g, item)
        return (None, None) + gs


# ---------------------------------------------------------------------------
# tracing the joint graph
# ---------------------------------------------------------------------------

class _JointTracer(_Capture):
    """Records the forward replay and the backward formulas into one graph."""

    def __init__(self) -> None:
        super().__init__(False)
        self.states: dict[int, Node] = {}
        self.keep: list = []          # island states, alive while their ids are keys

    def _check(self, name: str, args: tuple, kwargs: dict) -> str | None:
        for t in self._tensors(kwargs, self._tensors(args, [])):
            e = self.env.get(id(t))
            if e is None or e[1] is not t:
                r = self._adopt(t)
                if r is not None:
                    return r
            elif self.versions.get(t._storage_id(), t._version) != t._version:
                return "a tensor was modified in place by an operation the dispatcher did not see"
        if name in _TO_PYTHON or name in _DATA_DEPENDENT:
            return f"{name} reads tensor data into Python or has a data-dependent shape"
        return None

    def _adopt(self, t: Any) -> str | None:
        # autograd keeps detached aliases of the results it saves: the same values
        sid, key = t._storage_id(), (tuple(t.shape), t.stride(), t.storage_offset(), t.dtype)
        for node, other in list(self.env.values()):
            if other._storage_id() == sid and key == (tuple(other.shape), other.stride(),
                                                      other.storage_offset(), other.dtype):
                self.env[id(t)] = (node, t)
                return None
        return "the backward reads a tensor that no recorded op produced"

    def _bind(self, t: Any, node: Node) -> None:
        super()._bind(t, node)
        # which buffer each value lives in: an in-place write through one view must
        # order (and keep) the later reads of its other aliases (partition_joint)
        node.meta["storage"] = t._storage_id()

    def add_input(self, t: Any, name: str) -> Node:
        node = super().add_input(t, name)
        node.meta["storage"] = t._storage_id()
        return node

    def graph_break(self, op: str, reason: str) -> None:
        e = JointTraceError(f"op {op!r}: {reason}")
        e.op = _failing_op()
        raise e

    def island(self, n: Node, args: tuple, kwargs: dict) -> Any:
        needs = tuple(isinstance(a, TensorBase) and a.requires_grad and a.is_floating_point()
                      for a in args)
        target = n.target if n.op == "call_function" else \
            functools.partial(_call_method, n.target)
        if not any(needs):
            return target(*args, **kwargs)      # recorded as one op, like any other
        spec = _IslandSpec(target, kwargs, needs)
        for a in args:
            if isinstance(a, TensorBase) and self._check(n.name, (a,), {}) is not None:
                raise JointTraceError(f"island {n.name}: unknown input")
        self.suspended += 1
        try:
            out = _IslandTrace.apply(self, spec, *args)
        finally:
            self.suspended -= 1
        node = self.graph.call_function(island_forward, (spec,) + tuple(self._arg(args)))
        item = self.graph.call_function(operator.getitem, (node, 0))
        item.meta["tensor_meta"] = _extract_tensor_metadata(out)
        st = self.graph.call_function(operator.getitem, (node, 1))
        self._bind(out, item)
        state = out.grad_fn.state
        self.states[id(state)] = st
        self.keep.append(state)
        return out


def _trace_copy(x: Any) -> Any:
    """A copy with ``x``'s strides (generated kernels bake them), so replaying the
    graph for tracing never writes the caller's tensors."""
    if not isinstance(x, TensorBase):
        return x
    y = ember.empty_strided(tuple(x.shape), tuple(x.stride()), dtype=x.dtype)
    with ember.no_grad():
        y.copy_(x)
    return y.requires_grad_(x.requires_grad) if x.is_floating_point() else y


def trace_joint(gm: GraphModule, example_inputs: list, islands: frozenset = frozenset()
                ) -> tuple:
    """The joint graph: (graph, primal inputs, tangent inputs, forward
    output nodes, gradient node per primal or None, differentiable-output mask,
    the forward's in-place writes)."""
    tr = _JointTracer()
    graph_inputs = gm.graph.find_nodes(op=INPUT_OP)
    primals = [_trace_copy(x) for x in example_inputs]
    p_nodes = [tr.add_input(p, ph.name) if isinstance(p, TensorBase) else None
               for p, ph in zip(primals, graph_inputs)]
    if any(p is None for p in p_nodes):
        raise JointTraceError("a graph input is not a tensor")
    env: dict = dict(zip(graph_inputs, primals))
    with ember.enable_grad(), tr:
        for n in gm.graph.nodes:
            if n.op == INPUT_OP:
                continue
            if n.op == "output":
                outs = map_arg(n.args[0], env.__getitem__)
                break
            args = map_arg(n.args, env.__getitem__)
            kwargs = map_arg(n.kwargs, env.__getitem__)
            if _function_class(n) is not None or n.meta.get("op_name") in islands:
                env[n] = tr.island(n, args, kwargs)
            elif n.op == "call_function":
                env[n] = n.target(*args, **kwargs)
            elif n.op == "call_method":
                env[n] = getattr(args[0], n.target)(*args[1:], **kwargs)
            else:
                raise JointTraceError(f"cannot trace a {n.op} node")
        _core._set_grad_enabled(True)
        # what the forward writes in place (running statistics) must stay in it
        effects = [n for n in tr.graph.nodes if _is_inplace(n)]
        outs = list(outs)
        diff = [isinstance(o, TensorBase) and o.requires_grad and o.is_floating_point()
                for o in outs]
        out_nodes = []
        for o in outs:
            if not isinstance(o, TensorBase) or tr._check("output", (o,), {}) is not None:
                raise JointTraceError("an output is not a recorded tensor")
            out_nodes.append(tr.env[id(o)][0])
        wanted = [p for p in primals if p.requires_grad]
        d_outs = [o for o, d in zip(outs, diff) if d]
        tangents = []
        for i, o in enumerate(d_outs):
            tr.suspended += 1
            try:
                t = ember.ones(tuple(o.shape), dtype=o.dtype)
            finally:
                tr.suspended -= 1
            tangents.append(t)
        t_nodes = [tr.add_input(t, f"tangent_{i}") for i, t in enumerate(tangents)]
        # create_graph: formulas take their composite, differentiable form (public ops
        # only) where their fast form calls kernels the dispatcher does not see
        grads = ember.autograd.grad(d_outs, wanted, tangents, allow_unused=True,
                                    create_graph=True) \
            if d_outs and wanted else [None] * len(wanted)
        it = iter(grads)
        g_nodes = []
        for p, pn in zip(primals, p_nodes):
            g = next(it) if p.requires_grad else None
            if g is None:
                g_nodes.append(None)
                continue
            if tr._check("grad", (g,), {}) is not None:
                raise JointTraceError("a gradient is not a recorded tensor")
            g_nodes.append(tr.env[id(g)][0])
    # without autograd recording a detach is the identity: drop it so it splits no kernel
    alias: dict = {}
    for n in list(tr.graph.nodes):
        if n.meta.get("op_name") == "detach" and n.op == "call_method":
            src = alias.get(n.args[0], n.args[0])
            n.replace_all_uses_with(src)
            tr.graph.erase_node(n)
            alias[n] = src
    out_nodes = [alias.get(n, n) for n in out_nodes]
    g_nodes = [alias.get(n, n) for n in g_nodes]
    return tr.graph, p_nodes, t_nodes, out_nodes, g_nodes, diff, effects


# ---------------------------------------------------------------------------
# partitioning
# ---------------------------------------------------------------------------

def _storage(n: Any) -> Any:
    return n.meta.get("storage") if isinstance(n, Node) else None


def _write_deps(graph: Graph) -> tuple[dict, dict]:
    """(node -> the in-place writes it must follow though no edge says so, storage ->
    its in-place writes).  A write through one view (``zeros(..).as_strided(..)
    .add_(g)``) changes every alias of its buffer, and the graph links only the view
    written to its later readers."""
    writes: dict = {}       # storage -> in-place nodes so far
    deps: dict = {}
    for n in graph.nodes:
        before = [w for a in n.all_input_nodes for w in writes.get(_storage(a), ())]
        if before:
            deps[n] = before
        if _is_inplace(n) and n.args and _storage(n.args[0]) is not None:
            writes.setdefault(_storage(n.args[0]), []).append(n)
    return deps, writes


def _with_writes(roots: list, writes: dict) -> list:
    """A graph's results are read when it ends: after every write to their buffers
    (``zeros(..)`` returned once ``.narrow(..).copy_(g)`` has filled it)."""
    return list(roots) + [w for r in roots for w in writes.get(_storage(r), ())]


def _ancestors(roots: list, stop: set, deps: dict | None = None) -> set:
    seen: set = set()
    stack = [r for r in roots if isinstance(r, Node)]
    while stack:
        n = stack.pop()
        if n in seen or n in stop:
            continue
        seen.add(n)
        stack.extend(n.all_input_nodes)
        if deps:
            stack.extend(deps.get(n, ()))
    return seen


def _relu_masks_from_outputs(graph: Graph) -> None:
    """``relu_backward(g, x)`` reads ``relu(x)`` instead where the graph has it: the
    output is positive exactly where the input is, and the next layer saves the
    output anyway, so the input need not be saved for the backward too."""
    written = {_storage(w.args[0]) for w in graph.nodes if _is_inplace(w) and w.args}
    relu_of: dict = {}
    for n in graph.nodes:
        if n.meta.get("op_name") == "relu" and len(n.args) == 1 and not n.kwargs and \
                isinstance(n.args[0], Node) and _storage(n) not in written:
            relu_of.setdefault(n.args[0], n)
    for n in graph.nodes:
        if n.meta.get("op_name") == "relu_backward" and len(n.args) == 2 and \
                n.args[1] in relu_of and relu_of[n.args[1]] is not n.args[0]:
            r = relu_of[n.args[1]]
            n.args = (n.args[0], r)


def _drop_noop_reshapes(graph: Graph) -> None:
    """A backward's ``reshape`` to the shape its input already has (linear's formula on
    2-D inputs) is dropped: its readers read the input.  Not where both would leave
    the graph (two gradients must not be one tensor)."""
    out = next(n for n in graph.nodes if n.op == "output")
    outs = set(out.all_input_nodes)
    for n in list(graph.nodes):
        if n.op != "call_method" or n.target not in ("reshape", "view") or \
                not isinstance(n.args[0], Node):
            continue
        a, m, ma = n.args[0], n.meta.get("tensor_meta"), n.args[0].meta.get("tensor_meta")
        if not hasattr(m, "shape") or not hasattr(ma, "shape") or \
                tuple(m.shape) != tuple(ma.shape) or \
                (n in outs and (a in outs or a.op == INPUT_OP)):
            continue
        n.replace_all_uses_with(a)
        graph.erase_node(n)
        if a in outs or n in outs:
            outs.add(a)


def partition_joint(graph: Graph, p_nodes: list, t_nodes: list, out_nodes: list,
                    g_nodes: list, effects: list = ()) -> tuple[GraphModule, GraphModule, list]:
    """Split the joint graph: (forward module, backward module, saved nodes).

    The forward module takes the primals and returns the outputs then the saved
    values; the backward module takes the saved values then the tangents and
    returns one gradient per primal that has one.  ``effects`` (the forward's
    in-place writes) run in the forward even though no output depends on them.
    """
    _relu_masks_from_outputs(graph)
    deps, writes = _write_deps(graph)
    fwd = _ancestors(_with_writes(out_nodes, writes) + list(effects), set(), deps) | \
        set(p_nodes)
    # getitems of forward nodes are computed with them (island state)
    for n in list(graph.nodes):
        if n.op == "call_function" and n.target is operator.getitem and \
                n.args[0] in fwd:
            fwd.add(n)
    bwd = _ancestors(_with_writes([g for g in g_nodes if g is not None], writes), fwd, deps)
    saved = [n for n in graph.nodes if n in fwd and any(u in bwd for u in n.users)]
    if any(t in fwd for t in t_nodes):
        raise JointTraceError("an output depends on a tangent")
    for n in fwd:
        if _is_inplace(n) and n.args and isinstance(n.args[0], Node) and \
                any(u in bwd for u in n.args[0].users):
            raise JointTraceError("the forward writes in place a value the backward reads")
    # the joint graph reads each buffer as it is at that point; split, the backward
    # runs after the whole forward, so a backward node that read a buffer before a
    # forward write to it would see the write, and a backward write to a saved buffer
    # would be seen by a second backward
    order = {n: i for i, n in enumerate(graph.nodes)}
    for w in graph.nodes:
        sid = _storage(w.args[0]) if _is_inplace(w) and w.args else None
        if sid is None:
            continue
        if w in fwd and any(order[n] < order[w] and any(_storage(a) == sid
                                                         for a in n.all_input_nodes)
                            for n in bwd):
            raise JointTraceError("the forward writes in place a value the backward reads")
        if w in bwd and any(_storage(s) == sid for s in saved):
            raise JointTraceError("the backward writes in place a value saved by the forward")
    fg = Graph()
    fmap: dict = {}
    for n in graph.nodes:
        if n in p_nodes:
            fmap[n] = fg.node_copy(n)
    for n in graph.nodes:
        if n in fwd and n not in fmap:
            fmap[n] = fg.node_copy(n, fmap.__getitem__)
    fg.output(tuple(fmap[n] for n in out_nodes) + tuple(fmap[n] for n in saved))
    bg = Graph()
    bmap: dict = {}
    for n in saved:
        bmap[n] = bg.placeholder(f"saved_{n.name}")
        bmap[n].meta = dict(n.meta)
    for n in t_nodes:
        bmap[n] = bg.node_copy(n)
    for n in graph.nodes:
        if n in bwd and n not in bmap:
            bmap[n] = bg.node_copy(n, bmap.__getitem__)
    bg.output(tuple(bmap[g] for g in g_nodes if g is not None))
    root = ember.nn.Module()
    return GraphModule(root, fg, "ForwardGraph"), GraphModule(root, bg, "BackwardGraph"), saved


# ---------------------------------------------------------------------------
# the runtime
# ---------------------------------------------------------------------------

class _Joint(Function):
    """One call of a compiled training graph: the generated forward now, the
    generated backward when the graph's gradient arrives."""

    @staticmethod
    def forward(ctx: Any, rt: TrainingGraph, *inputs: Any) -> tuple:
        res = rt.fwd(*inputs)
        n = rt.n_out
        outs = tuple(res[:n])
        # tensors through save_for_backward: freed after backward (unless retain_graph)
        # and version-checked like eager's; island states (objects) beside them
        saved = res[n:]
        ctx.save_for_backward(*[t for t in saved if isinstance(t, TensorBase)])
        ctx.rt = rt
        ctx.others = [(i, t) for i, t in enumerate(saved) if not isinstance(t, TensorBase)]
        nd = [o for o, d in zip(outs, rt.diff) if not d]
        if nd:
            ctx.mark_non_differentiable(*nd)
        return outs

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> tuple:
        if _core.is_grad_enabled():
            raise RuntimeError("ember.compile: double backward (create_graph=True) through a "
                               "compiled training graph is not supported; compile with "
                               "backend='eager' for higher-order gradients")
        rt = ctx.rt
        saved = list(ctx.saved_tensors)
        for i, obj in ctx.others:
            saved.insert(i, obj)
        saved += [g for g, d in zip(grads, rt.diff) if d]
        run_owned = getattr(rt.bwd, "run_owned", None)
        if run_owned is not None and not _keeps_graph():
            # the graph is freed after this backward: the generated backward takes the
            # only references to the saved values, and frees each after its last use
            ctx._release()
            ctx.others = ()
            gs = iter(run_owned(saved))
        else:
            gs = iter(rt.bwd(*saved))
        return (None,) + tuple(next(gs) if has else None for has in rt.has_grad)


class TrainingGraph:
    """The compiled forward and backward of a graph whose inputs need gradients."""

    def __init__(self, fwd: Callable, bwd: Callable, n_out: int, diff: list,
                 has_grad: list) -> None:
        self.fwd, self.bwd = fwd, bwd
        self.n_out, self.diff, self.has_grad = n_out, diff, has_grad

    def __call__(self, *inputs: Any) -> tuple:
        return _Joint.apply(self, *inputs)


def compile_training(gm: GraphModule, example_inputs: list,
                     compile_plain: Callable) -> TrainingGraph:
    """Trace, partition and compile ``gm`` for training; raises JointTraceError when
    its backward cannot be traced."""
    rng = ember.get_rng_state()
    islands: set = set()
    try:
        while True:
            try:
                graph, p_nodes, t_nodes, out_nodes, g_nodes, diff, effects = trace_joint(
                    gm, example_inputs, frozenset(islands))
                break
            except JointTraceError as e:
                # an op whose formula reads what its native forward kept (pooling
                # indices): run it as an island and trace again
                if e.op is None or e.op in islands or len(islands) >= 8:
                    raise
                islands.add(e.op)
    finally:
        # the trace replays random ops: the next call must draw what eager would
        ember.set_rng_state(rng)
    fgm, bgm, saved = partition_joint(graph, p_nodes, t_nodes, out_nodes, g_nodes, effects)
    gm.meta["joint"] = {"forward": fgm, "backward": bgm, "saved": len(saved),
                        "islands": sorted(islands)}
    _drop_noop_reshapes(bgm.graph)
    bgm.recompile()
    return TrainingGraph(compile_plain(fgm), compile_plain(bgm), len(out_nodes), diff,
                         [g is not None for g in g_nodes])
