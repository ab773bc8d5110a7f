"""``ember.export``: capture a module into one graph with its parameters, like ``torch.export``.

``export(module, args)`` runs ``module`` once under the dispatcher's Python
key with ``fullgraph`` semantics (a graph break is an error) and returns an
:class:`ExportedProgram`: a GraphModule whose inputs are the parameters and
buffers (``p_<name>``, ``b_<name>``) followed by the user inputs, its
signature, and the state dict.  ``save``/``load`` write it as one
safetensors file (tensors as tensors, the graph as JSON metadata): never
pickle, and loading resolves op targets only inside ember and ``operator``.
"""

from __future__ import annotations

import builtins
import importlib
import json
from typing import Any, Callable, NamedTuple

__all__ = ["export", "ExportedProgram", "ExportGraphSignature", "InputSpec", "OutputSpec",
           "save", "load"]

_FORMAT = "ember.export/1"


class InputSpec(NamedTuple):
    """One graph input: ``kind`` is ``"PARAMETER"``, ``"BUFFER"`` or ``"USER_INPUT"``;
    ``target`` is the state-dict key (None for user inputs)."""

    kind: str
    name: str
    target: str | None


class OutputSpec(NamedTuple):
    """One graph output (``kind`` ``"USER_OUTPUT"``)."""

    kind: str
    name: str
    target: str | None


class ExportGraphSignature:
    """Which graph inputs are parameters, buffers and user inputs."""

    def __init__(self, input_specs: list[InputSpec], output_specs: list[OutputSpec]) -> None:
        self.input_specs = list(input_specs)
        self.output_specs = list(output_specs)

    @property
    def parameters(self) -> list[str]:
        return [s.target for s in self.input_specs if s.kind == "PARAMETER"]

    @property
    def buffers(self) -> list[str]:
        return [s.target for s in self.input_specs if s.kind == "BUFFER"]

    @property
    def user_inputs(self) -> list[str]:
        return [s.name for s in self.input_specs if s.kind == "USER_INPUT"]

    @property
    def user_outputs(self) -> list[str]:
        return [s.name for s in self.output_specs]

    def __repr__(self) -> str:
        return (f"ExportGraphSignature(input_specs={self.input_specs}, "
                f"output_specs={self.output_specs})")


class ExportedProgram:
    """A module captured as one graph: ``graph_module``, ``graph_signature``,
    ``state_dict`` and ``constants``; :meth:`module` makes it callable again."""

    def __init__(self, graph_module: Any, graph_signature: ExportGraphSignature,
                 state_dict: dict, out_spec: Any, out_consts: list,
                 constants: dict | None = None) -> None:
        self.graph_module = graph_module
        self.graph_signature = graph_signature
        self.state_dict = dict(state_dict)
        self.constants = dict(constants or {})
        self._out_spec = out_spec
        self._out_consts = list(out_consts)

    @property
    def graph(self) -> Any:
        return self.graph_module.graph

    def __str__(self) -> str:
        return ("ExportedProgram:\n" + self.graph_module.print_readable(print_output=False) +
                f"\nGraph signature: {self.graph_signature}\n")

    def module(self) -> Any:
        """An ``nn.Module`` taking the user inputs (parameters and buffers are its own,
        registered under their original names)."""
        from ember.compiler.capture import _MISSING, unflatten
        from ember.fx.graph_module import _assign_attr
        from ember.nn import Module, Parameter

        ep = self

        class ExportedModule(Module):
            def __init__(self) -> None:
                super().__init__()
                self.graph_module = ep.graph_module
                for spec in ep.graph_signature.input_specs:
                    if spec.kind == "PARAMETER":
                        t = ep.state_dict[spec.target]
                        p = t if isinstance(t, Parameter) else Parameter(t.detach())
                        _assign_attr(p, self, "_state." + spec.target)
                    elif spec.kind == "BUFFER":
                        _assign_attr(ep.state_dict[spec.target], self,
                                     "_state." + spec.target)

            def forward(self, *args: Any) -> Any:
                n_user = len(ep.graph_signature.user_inputs)
                if len(args) != n_user:
                    raise TypeError(f"ExportedModule.forward(): expected {n_user} inputs, "
                                    f"got {len(args)}")
                state = []
                for spec in ep.graph_signature.input_specs:
                    if spec.kind != "USER_INPUT":
                        obj: Any = self._state
                        for atom in spec.target.split("."):
                            obj = getattr(obj, atom)
                        state.append(obj)
                outs = iter(self.graph_module(*state, *args))
                return unflatten(ep._out_spec, (next(outs) if c is _MISSING else c
                                                for c in ep._out_consts))
        return ExportedModule()

    def run_decompositions(self, decomp_table: dict[Callable, Callable] | None = None
                           ) -> ExportedProgram:
        """A new program with each op in ``decomp_table`` replaced by the ops its
        decomposition runs (re-captured through the dispatcher).

        ember's captured ops are already the dispatcher's own ops, so with no
        table (``None`` or ``{}``) the result is an equivalent copy.
        """
        import copy

        import ember
        from ember.fx.interpreter import Interpreter
        table = dict(decomp_table or {})
        if not table:
            return ExportedProgram(copy.deepcopy(self.graph_module), self.graph_signature,
                                   self.state_dict, self._out_spec, self._out_consts,
                                   self.constants)
        gm = self.graph_module

        class Decompose(Interpreter):
            def call_function(self, target: Any, args: tuple, kwargs: dict) -> Any:
                return table.get(target, target)(*args, **kwargs)

            def call_method(self, target: Any, args: tuple, kwargs: dict) -> Any:
                fn = getattr(type(args[0]), target, None)
                if fn in table:
                    return table[fn](*args, **kwargs)
                return super().call_method(target, args, kwargs)

        sig = self.graph_signature
        n_state = len(sig.input_specs) - len(sig.user_inputs)
        state_specs = sig.input_specs[:n_state]
        state = [self.state_dict[s.target] for s in state_specs]

        class Replay(ember.nn.Module):
            def forward(self, *args: Any) -> Any:
                return Decompose(gm).run(*state, *args)

        examples = []
        for node in gm.graph.nodes:
            if node.op == "placeholder":
                tm = node.meta["tensor_meta"]
                examples.append(ember.zeros(*tm.shape, dtype=tm.dtype))
        ep = _capture(Replay(), tuple(examples[n_state:]), {},
                      fixed_state=(state_specs, state))
        ep._out_spec, ep._out_consts = self._out_spec, self._out_consts
        ep.state_dict = dict(self.state_dict)
        return ep


def _capture(mod: Any, args: tuple, kwargs: dict, fixed_state: Any = None) -> ExportedProgram:
    import ember
    from ember.compiler.capture import _Capture, flatten
    from ember.fx.graph_module import GraphModule
    cap = _Capture(fullgraph=True, export=True)
    leaves: list = []
    flatten((args, kwargs), leaves)
    user_nodes = []
    for i, x in enumerate(leaves):
        if isinstance(x, ember.Tensor) and id(x) not in cap.env:
            user_nodes.append(cap.add_input(x, f"arg{i}" if i >= len(args) else
                                            _arg_name(mod, i)))
    if fixed_state is not None:
        specs, tensors = fixed_state
        for spec, t in zip(specs, tensors):
            cap.lifted_paths.append(("_parameters" if spec.kind == "PARAMETER" else "_buffers",
                                     spec.target))
            cap.add_input(t, spec.name)
    else:
        cap.add_modules([mod])
    buffers = {id(b) for b in mod.buffers()}
    saved = {k: b.clone() for k, b in mod.named_buffers()}
    try:
        with cap:
            result = mod(*args, **kwargs)
        out_spec, consts = cap.finish(result)
    finally:
        with ember.no_grad():       # exporting must not change the module's state
            for k, b in mod.named_buffers():
                if k in saved:
                    b.copy_(saved[k])
    placeholders = [n for n in cap.graph.nodes if n.op == "placeholder"]
    first_user = placeholders[0] if user_nodes else None
    lifted = [n for n in placeholders if n not in user_nodes]
    if first_user is not None:
        for n in lifted:
            first_user.prepend(n)
    specs: list[InputSpec] = []
    state_dict = {}
    tensor_of = {id(n): t for n, t in zip(cap.input_nodes, cap.inputs)}
    for n, (kind, path) in zip(lifted, cap.lifted_paths):
        t = tensor_of[id(n)]
        kind_name = "BUFFER" if kind == "_buffers" or id(t) in buffers else "PARAMETER"
        specs.append(InputSpec(kind_name, n.name, path))
        state_dict[path] = t
    specs += [InputSpec("USER_INPUT", n.name, None) for n in user_nodes]
    out_node = next(n for n in cap.graph.nodes if n.op == "output")
    outs = [OutputSpec("USER_OUTPUT", a.name, None) for a in out_node.args[0]]
    gm = GraphModule(_holder(cap.constants), cap.graph, "GraphModule")
    return ExportedProgram(gm, ExportGraphSignature(specs, outs), state_dict, out_spec, consts,
                           cap.constants)


def _holder(constants: dict) -> Any:
    from ember.compiler.capture import _Holder
    return _Holder(constants)


def _arg_name(mod: Any, i: int) -> str:
    import inspect
    try:
        params = [p.name for p in inspect.signature(mod.forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    return params[i] if i < len(params) else f"arg{i}"


def export(mod: Any, args: tuple, kwargs: dict | None = None, *,
           dynamic_shapes: Any = None, strict: bool = False) -> ExportedProgram:
    """Capture ``mod(*args, **kwargs)`` as one graph (like ``torch.export.export``).

    Parameters
    ----------
    mod : nn.Module
        The module to export.
    args : tuple
        Example positional inputs (shapes are specialised to them).
    kwargs : dict, optional
        Example keyword inputs.
    dynamic_shapes
        Only ``None``: ember specialises shapes.

    Raises
    ------
    ember.compiler.GraphBreakError
        When the module cannot be captured as one graph (data-dependent control
        flow or shapes, values read into Python...).
    """
    from ember.nn import Module
    if not isinstance(mod, Module):
        raise TypeError(f"export(): expected an ember.nn.Module, got {type(mod).__name__}")
    if not isinstance(args, tuple):
        raise TypeError(f"export(): args must be a tuple, got {type(args).__name__}")
    if dynamic_shapes is not None:
        raise ValueError("export(): dynamic_shapes is not supported: ember specialises "
                         "shapes to the example inputs")
    return _capture(mod, args, dict(kwargs or {}))


# ---------------------------------------------------------------------------
# save / load: safetensors + JSON graph
# ---------------------------------------------------------------------------

def _target_name(fn: Any) -> str:
    from ember.fx.node import _qualified_name
    name = _qualified_name(fn)
    head = name.split(".", 1)[0]
    if head not in ("ember", "operator") and getattr(builtins, name, None) is not fn:
        raise TypeError(f"ember.export.save(): cannot save a graph calling {name}: only "
                        f"ember ops, operator and builtins are saved")
    if _resolve(name) is not fn:
        raise TypeError(f"ember.export.save(): {name} does not name the op it calls")
    return name


def _resolve(name: str) -> Any:
    parts = name.split(".")
    if len(parts) == 1:
        obj = getattr(builtins, name, None)
        if obj is None or name in ("eval", "exec", "compile", "open", "__import__"):
            raise ValueError(f"ember.export.load(): unknown target {name!r}")
        return obj
    if parts[0] not in ("ember", "operator"):
        raise ValueError(f"ember.export.load(): refusing target {name!r} outside ember")
    for i in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for atom in parts[i:]:
            obj = getattr(obj, atom)
        return obj
    raise ValueError(f"ember.export.load(): cannot resolve {name!r}")


def _enc(a: Any) -> Any:
    import ember
    from ember.fx.node import Node
    if isinstance(a, Node):
        return {"node": a.name}
    if isinstance(a, bool) or a is None or isinstance(a, (int, str)):
        return a
    if isinstance(a, float):
        return {"float": repr(a)}
    if isinstance(a, tuple):
        return {"tuple": [_enc(x) for x in a]}
    if isinstance(a, list):
        return [_enc(x) for x in a]
    if isinstance(a, dict):
        return {"dict": [[k, _enc(v)] for k, v in a.items()]}
    if isinstance(a, slice):
        return {"slice": [_enc(a.start), _enc(a.stop), _enc(a.step)]}
    if a is Ellipsis:
        return {"ellipsis": True}
    if isinstance(a, ember.dtype):
        return {"dtype": str(a).split(".")[-1]}
    if isinstance(a, ember.device):
        return {"device": str(a)}
    raise TypeError(f"ember.export.save(): cannot save an argument of type {type(a).__name__}")


def _dec(a: Any, nodes: dict) -> Any:
    import ember
    if isinstance(a, list):
        return [_dec(x, nodes) for x in a]
    if not isinstance(a, dict):
        return a
    (k, v), = a.items()
    if k == "node":
        return nodes[v]
    if k == "float":
        return float(v)
    if k == "tuple":
        return tuple(_dec(x, nodes) for x in v)
    if k == "dict":
        return {kk: _dec(vv, nodes) for kk, vv in v}
    if k == "slice":
        return slice(*(_dec(x, nodes) for x in v))
    if k == "ellipsis":
        return Ellipsis
    if k == "dtype":
        return getattr(ember, v)
    if k == "device":
        return ember.device(v)
    raise ValueError(f"ember.export.load(): unknown encoded value {a!r}")


def _enc_spec(spec: Any) -> Any:
    if spec is None:
        return None
    t = spec[0]
    if t is dict:
        return {"dict": list(spec[1]), "children": [_enc_spec(s) for s in spec[2]]}
    if t in (tuple, list):
        return {t.__name__: [_enc_spec(s) for s in spec[1]]}
    raise TypeError(f"ember.export.save(): cannot save an output of type {t.__name__}")


def _dec_spec(d: Any) -> Any:
    if d is None:
        return None
    if "dict" in d:
        return (dict, tuple(d["dict"]), tuple(_dec_spec(s) for s in d["children"]))
    (k, v), = d.items()
    return ({"tuple": tuple, "list": list}[k], tuple(_dec_spec(s) for s in v))


def save(ep: ExportedProgram, f: Any) -> None:
    """Write ``ep`` to ``f`` (a path or binary file) as one safetensors file."""
    from ember.compiler.capture import _MISSING
    from ember.serialization import save_safetensors
    if not isinstance(ep, ExportedProgram):
        raise TypeError(f"ember.export.save(): expected an ExportedProgram, got "
                        f"{type(ep).__name__}")
    nodes = []
    for n in ep.graph.nodes:
        target = _target_name(n.target) if n.op == "call_function" else n.target
        entry = {"name": n.name, "op": n.op, "target": target, "args": _enc(n.args),
                 "kwargs": _enc(n.kwargs)}
        tm = n.meta.get("tensor_meta")
        if tm is not None and hasattr(tm, "shape"):
            entry["meta"] = [list(tm.shape), str(tm.dtype).split(".")[-1]]
        nodes.append(entry)
    doc = {
        "format": _FORMAT, "nodes": nodes,
        "inputs": [list(s) for s in ep.graph_signature.input_specs],
        "outputs": [list(s) for s in ep.graph_signature.output_specs],
        "out_spec": _enc_spec(ep._out_spec),
        "out_consts": [{"tensor_slot": True} if c is _MISSING else {"value": _enc(c)}
                       for c in ep._out_consts],
    }
    tensors = {f"state_dict/{k}": v.detach() for k, v in ep.state_dict.items()}
    tensors.update({f"constants/{k}": v.detach() for k, v in ep.constants.items()})
    save_safetensors(tensors, f, metadata={"ember_export": json.dumps(doc)})


def load(f: Any) -> ExportedProgram:
    """Read a program written by :func:`save` (no pickle; op targets are resolved
    only inside ember, ``operator`` and safe builtins)."""
    import ember
    from ember.compiler.capture import _MISSING
    from ember.fx.graph import Graph
    from ember.fx.graph_module import GraphModule
    from ember.fx.passes.shape_prop import TensorMetadata
    from ember.nn import Parameter
    from ember.serialization import load_safetensors, safetensors_metadata
    meta = safetensors_metadata(f)
    if hasattr(f, "seek"):
        f.seek(0)
    if "ember_export" not in meta:
        raise ValueError("ember.export.load(): not an ember.export file (no graph metadata)")
    doc = json.loads(meta["ember_export"])
    if doc.get("format") != _FORMAT:
        raise ValueError(f"ember.export.load(): unsupported format {doc.get('format')!r}")
    tensors = load_safetensors(f)
    g = Graph()
    nodes: dict[str, Any] = {}
    for e in doc["nodes"]:
        target = _resolve(e["target"]) if e["op"] == "call_function" else e["target"]
        n = g.create_node(e["op"], target, _dec(e["args"], nodes), _dec(e["kwargs"], nodes),
                          name=e["name"])
        if n.name != e["name"]:
            raise ValueError(f"ember.export.load(): duplicate node name {e['name']!r}")
        if "meta" in e:
            shape, dt = e["meta"]
            n.meta["tensor_meta"] = TensorMetadata(ember.Size(shape), getattr(ember, dt),
                                                   False, (), None, False, {})
        nodes[e["name"]] = n
    g.lint()
    specs = [InputSpec(*s) for s in doc["inputs"]]
    consts = {k[len("constants/"):]: v for k, v in tensors.items()
              if k.startswith("constants/")}
    state = {}
    for s in specs:
        if s.kind == "PARAMETER":
            state[s.target] = Parameter(tensors[f"state_dict/{s.target}"])
        elif s.kind == "BUFFER":
            state[s.target] = tensors[f"state_dict/{s.target}"]
    gm = GraphModule(_holder(consts), g, "GraphModule")
    out_consts = [_MISSING if "tensor_slot" in c else _dec(c["value"], {})
                  for c in doc["out_consts"]]
    return ExportedProgram(gm, ExportGraphSignature(specs, [OutputSpec(*s) for s in
                                                           doc["outputs"]]),
                           state, _dec_spec(doc["out_spec"]), out_consts, consts)

