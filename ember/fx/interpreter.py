"""``ember.fx.Interpreter`` (run a GraphModule node by node) and ``Transformer``
(rebuild it node by node into a new GraphModule)."""

from __future__ import annotations

from typing import Any, Iterator

from ember.fx.graph import Graph
from ember.fx.graph_module import GraphModule
from ember.fx.node import Argument, Node, Target, map_aggregate, map_arg
from ember.fx.proxy import Proxy

__all__ = ["Interpreter", "Transformer"]


class Interpreter:
    """Execute a GraphModule one node at a time.

    Each opcode has a method (``placeholder``, ``get_attr``, ``call_function``,
    ``call_method``, ``call_module``, ``output``) that subclasses override to
    change what running a node means (profiling, shape propagation, ...).

    Parameters
    ----------
    module : GraphModule
        The module to run.
    garbage_collect_values : bool
        Drop each value after its last use (keeps peak memory down).
    graph : Graph, optional
        Run this graph instead of ``module.graph`` (attributes still come from
        ``module``).
    """

    def __init__(self, module: Any, garbage_collect_values: bool = True,
                 graph: Graph | None = None) -> None:
        self.module = module
        self.submodules = dict(module.named_modules())
        self.graph = graph if graph is not None else module.graph
        self.env: dict[Node, Any] = {}
        self.garbage_collect_values = garbage_collect_values
        self.extra_traceback = True
        if garbage_collect_values:
            last: dict[Node, Node] = {}
            for node in self.graph.nodes:
                for inp in node.all_input_nodes:
                    last[inp] = node
            self.user_to_last_uses: dict[Node, list[Node]] = {}
            for v, user in last.items():
                self.user_to_last_uses.setdefault(user, []).append(v)

    def run(self, *args: Any, initial_env: dict | None = None,
            enable_io_processing: bool = True) -> Any:
        """Run the graph on ``args`` and return the output node's value."""
        self.env = dict(initial_env) if initial_env is not None else {}
        self.args_iter: Iterator[Any] = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            try:
                self.env[node] = self.run_node(node)
            except Exception as e:
                if self.extra_traceback and not getattr(e, "_fx_noted", False):
                    msg = f"While executing {node.format_node()}"
                    if hasattr(e, "add_note"):
                        e.add_note(msg)
                    e._fx_noted = True  # type: ignore[attr-defined]
                raise
            if self.garbage_collect_values:
                for v in self.user_to_last_uses.get(node, ()):
                    del self.env[v]
            if node.op == "output":
                return self.env[node]
        return None

    def boxed_run(self, args_list: list) -> Any:
        """Run with a list of inputs that is cleared (so inputs can be freed early)."""
        args = list(args_list)
        args_list.clear()
        return self.run(*args)

    def run_node(self, n: Node) -> Any:
        """Run one node: fetch its arguments from the environment and dispatch on ``n.op``."""
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(n.target, args, kwargs)

    # ---- one method per opcode ---------------------------------------------------------
    def placeholder(self, target: Target, args: tuple, kwargs: dict) -> Any:
        if target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration:
            if args:
                return args[0]
            raise RuntimeError(f"Expected positional argument for parameter {target}, but one "
                               f"was not passed in!") from None

    def get_attr(self, target: Target, args: tuple, kwargs: dict) -> Any:
        return self.fetch_attr(target)

    def call_function(self, target: Target, args: tuple, kwargs: dict) -> Any:
        return target(*args, **kwargs)

    def call_method(self, target: Target, args: tuple, kwargs: dict) -> Any:
        self_obj, *rest = args
        return getattr(self_obj, target)(*rest, **kwargs)

    def call_module(self, target: Target, args: tuple, kwargs: dict) -> Any:
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target: Target, args: tuple, kwargs: dict) -> Any:
        return args[0]

    # ---- helpers -------------------------------------------------------------------------------
    def fetch_attr(self, target: str) -> Any:
        """``module.<target>`` for a dotted path."""
        obj = self.module
        for i, atom in enumerate(target.split(".")):
            if not hasattr(obj, atom):
                raise RuntimeError(f"Node referenced nonexistent target "
                                   f"{'.'.join(target.split('.')[:i + 1])}")
            obj = getattr(obj, atom)
        return obj

    def fetch_args_kwargs_from_env(self, n: Node) -> tuple[tuple, dict]:
        return self.map_nodes_to_values(n.args, n), self.map_nodes_to_values(n.kwargs, n)

    def map_nodes_to_values(self, args: Argument, n: Node) -> Argument:
        def load(a: Node) -> Any:
            if a not in self.env:
                raise RuntimeError(f"Node {n} referenced nonexistent value {a}! Run "
                                   f"Graph.lint() to diagnose such issues")
            return self.env[a]
        return map_arg(args, load)


class Transformer(Interpreter):
    """Rebuild a GraphModule node by node: override the opcode methods to return
    new Proxies and :meth:`transform` returns the rewritten GraphModule."""

    def __init__(self, module: GraphModule) -> None:
        super().__init__(module, garbage_collect_values=False)
        self.new_graph = Graph()
        from ember.fx.tracer import Tracer

        class _TransformerTracer(Tracer):
            def __init__(self, graph: Graph) -> None:
                super().__init__()
                self.graph = graph
                self._tensor_paths = {}

            def is_leaf_module(self, _: Any, __: str) -> bool:
                return True
        self.tracer = _TransformerTracer(self.new_graph)
        self.tracer.root = module

    def placeholder(self, target: Target, args: tuple, kwargs: dict) -> Proxy:
        default = args[0] if args else __import__("inspect").Signature.empty
        return Proxy(self.new_graph.placeholder(target, default_value=default), self.tracer)

    def get_attr(self, target: Target, args: tuple, kwargs: dict) -> Proxy:
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_function(self, target: Target, args: tuple, kwargs: dict) -> Any:
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def call_method(self, target: Target, args: tuple, kwargs: dict) -> Any:
        return self.tracer.create_proxy("call_method", target, args, kwargs)

    def call_module(self, target: Target, args: tuple, kwargs: dict) -> Any:
        return self.tracer.create_proxy("call_module", target, args, kwargs)

    def run_node(self, n: Node) -> Any:
        result = super().run_node(n)
        if isinstance(result, Proxy) and n.op != "output":
            result.node.meta = dict(n.meta)
        return result

    def transform(self) -> GraphModule:
        """Run the transformation and return the new GraphModule."""
        result = self.run(enable_io_processing=False)
        if result is not None:
            def strip(a: Any) -> Any:
                return a.node if isinstance(a, Proxy) else a
            self.new_graph.output(map_aggregate(result, strip))
        return GraphModule(self.module, self.new_graph)
