"""``replace_pattern``: find a subgraph by example and replace every match."""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

from ember.fx.graph import Graph
from ember.fx.graph_module import GraphModule
from ember.fx.node import Node, map_arg

__all__ = ["Match", "replace_pattern"]


class Match(NamedTuple):
    """One replaced occurrence: the node that produced the pattern's output, and the
    pattern node -> graph node map."""

    anchor: Node
    nodes_map: dict[Node, Node]


def _as_graph(x: Callable | GraphModule | Graph) -> Graph:
    if isinstance(x, Graph):
        return x
    if isinstance(x, GraphModule):
        return x.graph
    from ember.fx.tracer import symbolic_trace
    return symbolic_trace(x).graph


class _Matcher:
    def __init__(self, pattern: Graph) -> None:
        self.placeholders = [n for n in pattern.nodes if n.op == "placeholder"]
        out = [n for n in pattern.nodes if n.op == "output"]
        if len(out) != 1 or not isinstance(out[0].args[0], Node):
            raise ValueError("replace_pattern: the pattern must return exactly one value "
                             "computed from its inputs")
        self.anchor = out[0].args[0]
        if self.anchor.op == "placeholder":
            raise ValueError("replace_pattern: the pattern must compute something (it returns "
                             "one of its inputs)")

    def match(self, gn: Node, taken: set[Node]) -> dict[Node, Node] | None:
        m: dict[Node, Node] = {}
        if not self._match(self.anchor, gn, m, taken):
            return None
        inner = {v for k, v in m.items() if k.op != "placeholder"}
        # a matched node other than the anchor must not be used outside the match
        for pn, node in m.items():
            if pn.op == "placeholder" or pn is self.anchor:
                continue
            if any(u not in inner for u in node.users):
                return None
        return m

    def _match(self, pn: Node, gn: Node, m: dict[Node, Node], taken: set[Node]) -> bool:
        if pn in m:
            return m[pn] is gn
        if pn.op == "placeholder":
            m[pn] = gn
            return True
        if gn in taken or gn in m.values() or pn.op != gn.op or gn.op == "output":
            return False
        if pn.op == "get_attr":
            if pn.target.split(".")[-1] != gn.target.split(".")[-1]:
                return False
        elif pn.target != gn.target:
            return False
        if len(pn.args) != len(gn.args) or set(pn.kwargs) != set(gn.kwargs):
            return False
        m[pn] = gn
        pairs = list(zip(pn.args, gn.args)) + [(pn.kwargs[k], gn.kwargs[k]) for k in pn.kwargs]
        for pa, ga in pairs:
            if not self._match_arg(pa, ga, m, taken):
                del m[pn]
                return False
        return True

    def _match_arg(self, pa: Any, ga: Any, m: dict, taken: set) -> bool:
        if isinstance(pa, Node):
            return isinstance(ga, Node) and self._match(pa, ga, m, taken)
        if isinstance(pa, (tuple, list)):
            return type(pa) is type(ga) and len(pa) == len(ga) and \
                all(self._match_arg(a, b, m, taken) for a, b in zip(pa, ga))
        return not isinstance(ga, Node) and pa == ga


def replace_pattern(gm: GraphModule, pattern: Callable | GraphModule | Graph,
                    replacement: Callable | GraphModule | Graph) -> list[Match]:
    """Replace every non-overlapping occurrence of ``pattern`` in ``gm`` with ``replacement``.

    Parameters
    ----------
    gm : GraphModule
        Rewritten in place (and recompiled).
    pattern, replacement : callable, GraphModule or Graph
        Functions are traced with ``symbolic_trace``.  The pattern's inputs
        match any value; its body must match op for op (same targets and
        constant arguments).  Replacement inputs take the values the
        pattern's inputs matched, in order.

    Returns
    -------
    list of Match
        One per replaced occurrence.
    """
    pg, rg = _as_graph(pattern), _as_graph(replacement)
    matcher = _Matcher(pg)
    r_placeholders = [n for n in rg.nodes if n.op == "placeholder"]
    if len(r_placeholders) != len(matcher.placeholders):
        raise ValueError(f"replace_pattern: the pattern takes {len(matcher.placeholders)} "
                         f"inputs but the replacement takes {len(r_placeholders)}")
    graph = gm.graph
    matches: list[Match] = []
    taken: set[Node] = set()
    for gn in list(graph.nodes):
        if gn.op != matcher.anchor.op or gn in taken:
            continue
        m = matcher.match(gn, taken)
        if m is None:
            continue
        taken.update(v for k, v in m.items() if k.op != "placeholder")
        matches.append(Match(gn, m))
    for match in matches:
        anchor = match.anchor
        val_map: dict[Node, Any] = {rp: match.nodes_map[pp]
                                    for rp, pp in zip(r_placeholders, matcher.placeholders)}
        with graph.inserting_before(anchor):
            for rn in rg.nodes:
                if rn.op == "placeholder":
                    continue
                if rn.op == "output":
                    new_out = map_arg(rn.args[0], lambda n: val_map[n])
                    break
                if rn.op in ("get_attr", "call_module"):
                    _copy_target(gm, replacement, rn.target)
                val_map[rn] = graph.node_copy(rn, lambda n: val_map[n])
        if not isinstance(new_out, Node):
            raise ValueError("replace_pattern: the replacement must return one value")
        anchor.replace_all_uses_with(new_out)
        inner = [v for k, v in match.nodes_map.items() if k.op != "placeholder"]
        for node in reversed(list(graph.nodes)):
            if node in inner and not node.users:
                graph.erase_node(node)
    graph.lint()
    gm.recompile()
    return matches


def _copy_target(gm: GraphModule, replacement: Any, target: str) -> None:
    from ember.fx.graph_module import _copy_attr
    obj = gm
    try:
        for atom in target.split("."):
            obj = getattr(obj, atom)
    except AttributeError:
        if isinstance(replacement, GraphModule):
            _copy_attr(replacement, gm, target)
