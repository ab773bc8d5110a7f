"""A model's captured graph as the GraphDef TensorBoard's Graphs tab reads.

The model runs once (in eval mode, as torch's ``add_graph`` runs it) under the
compile capture; module calls are tracked with global forward hooks so every
node is grouped under its module's scope, named the way torch's graphs name
them (``Net/Linear[fc1]/linear``, ``input/x``, ``output/output.1``).
"""

from __future__ import annotations

import inspect
import sys
from typing import Any

from tensorboard.compat.proto.attr_value_pb2 import AttrValue
from tensorboard.compat.proto.config_pb2 import RunMetadata
from tensorboard.compat.proto.graph_pb2 import GraphDef
from tensorboard.compat.proto.node_def_pb2 import NodeDef
from tensorboard.compat.proto.step_stats_pb2 import DeviceStepStats, StepStats
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.compat.proto.versions_pb2 import VersionDef


def _node(name: str, op: str, inputs: list[str], shapes: list, attr: str = "") -> NodeDef:
    a = {"attr": AttrValue(s=attr.encode())}
    if shapes:
        a["_output_shapes"] = AttrValue(list=AttrValue.ListValue(shape=[
            TensorShapeProto(dim=[TensorShapeProto.Dim(size=int(d)) for d in s])
            for s in shapes]))
    return NodeDef(name=name, op=op, input=inputs, attr=a, device="/device:CPU:0")


def _shapes(meta: Any) -> list:
    if hasattr(meta, "shape"):
        return [tuple(meta.shape)]
    if isinstance(meta, tuple):       # an op with several outputs
        return [tuple(m.shape) for m in meta if hasattr(m, "shape")]
    return []


def _input_names(model: Any, n: int) -> list[str]:
    try:
        params = [p.name for p in inspect.signature(model.forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    return [params[i] if i < len(params) else f"input.{i + 1}" for i in range(n)]


def capture(model: Any, inputs: tuple) -> tuple:
    """Run ``model(*inputs)`` once under the capture; returns (capture, scopes of
    module paths).  Raises RuntimeError where the model cannot be captured."""
    from ember.compiler.capture import _Capture, flatten
    from ember.nn.modules import module as _m

    leaves: list = []
    flatten(inputs, leaves)
    cap = _Capture(fullgraph=False, split=True)
    cap.report = False            # not a compile: leave ember.compiler's counters alone
    from ember._C.core import TensorBase
    names = _input_names(model, len(leaves))
    for x, name in zip(leaves, names):
        if isinstance(x, TensorBase) and id(x) not in cap.env:
            cap.add_input(x, name.replace(".", "_"))
            cap.user_leaves.append((len(cap.user_leaves), x))
    cap.add_modules([model])
    cap.outer_frame = sys._getframe()
    root = type(model).__name__
    paths = {id(m): p for p, m in model.named_modules()}
    scopes: dict[str, str] = {"": root}
    for p, m in model.named_modules():
        if p:
            parent, _, leaf = p.rpartition(".")
            scopes[p] = f"{scopes[parent]}/{type(m).__name__}[{leaf}]"
    cap.scope = []

    def enter(mod: Any, args: Any) -> None:
        p = paths.get(id(mod))
        cap.scope.append(scopes[p] if p is not None else type(mod).__name__)

    def leave(mod: Any, args: Any, out: Any) -> None:
        cap.scope.pop()
    training = {id(m): m.training for m in model.modules()}
    h1 = _m.register_module_forward_pre_hook(enter)
    h2 = _m.register_module_forward_hook(leave)
    model.eval()
    try:
        with cap:
            out = model(*inputs)
    finally:
        h1.remove()
        h2.remove()
        for m in model.modules():
            m.training = training[id(m)]
    if cap.break_reason is None:
        cap.finish(out)
    if cap.break_reason is not None:
        raise RuntimeError(f"add_graph(): the model's graph cannot be captured at op "
                           f"{cap.break_op!r}: {cap.break_reason}")
    return cap, scopes


def graph_def(model: Any, input_to_model: Any, verbose: bool = False
              ) -> tuple[GraphDef, RunMetadata]:
    """The GraphDef of ``model`` run on ``input_to_model`` and empty step stats."""
    inputs = input_to_model if isinstance(input_to_model, (tuple, list)) else (input_to_model,)
    cap, scopes = capture(model, tuple(inputs))
    root = scopes[""]
    n_user = len(cap.input_nodes) - len(cap.lifted_paths)
    names: dict = {}
    nodes: list[NodeDef] = []
    for i, n in enumerate(cap.input_nodes):
        shape = _shapes(n.meta.get("tensor_meta"))
        if i < n_user:
            names[n] = f"input/{n.target}"
            nodes.append(_node(names[n], "IO Node", [], shape))
        else:
            path = cap.lifted_paths[i - n_user][1]
            owner, _, leaf = path.rpartition(".")
            names[n] = f"{scopes.get(owner, root)}/{leaf}/{n.name}"
            nodes.append(_node(names[n], "prim::GetAttr", [], shape, f"{{ name :  {leaf} }}"))
    for n in cap.graph.nodes:
        if n.op in ("placeholder", "output"):
            continue
        names[n] = f"{n.meta.get('nn_scope') or root}/{n.name}"
        op = n.meta.get("op_name") or getattr(n.target, "__name__", str(n.target))
        if n.meta.get("split") == "value":     # a value read into Python: item / tolist
            op = n.args[1]
        consts = [repr(a) for a in n.args if not hasattr(a, "all_input_nodes")]
        consts += [f"{k}={v!r}" for k, v in n.kwargs.items() if not hasattr(v, "op")]
        nodes.append(_node(names[n], f"aten::{op.strip('_') or op}",
                           [names[a] for a in n.all_input_nodes],
                           _shapes(n.meta.get("tensor_meta")),
                           "{" + ", ".join(consts) + "}"))
    out = next(n for n in cap.graph.nodes if n.op == "output")
    for i, a in enumerate(out.args[0]):
        nodes.append(_node(f"output/output.{i + 1}", "IO Node", [names[a]],
                           _shapes(a.meta.get("tensor_meta"))))
    if verbose:
        print(cap.graph)
    stats = RunMetadata(step_stats=StepStats(dev_stats=[DeviceStepStats(
        device="/device:CPU:0")]))
    return GraphDef(node=nodes, versions=VersionDef(producer=22)), stats
