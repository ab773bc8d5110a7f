"""``ember.fx``: the graph IR shared by users and the compiler.

``symbolic_trace`` records a module or function into a :class:`Graph` of
:class:`Node` objects (opcodes ``placeholder``, ``get_attr``,
``call_function``, ``call_method``, ``call_module``, ``output``) and wraps it
in a :class:`GraphModule` whose ``forward`` is Python generated from the
graph.  :class:`Interpreter` runs a graph node by node, :class:`Transformer`
rebuilds one, :func:`replace_pattern` rewrites subgraphs, and
``passes.shape_prop.ShapeProp`` records shapes.  ``ember.compile`` captures
into the same IR, so its backends receive a GraphModule, as torch's do.
"""

from ember.fx.graph import Graph, PythonCode
from ember.fx.graph_module import GraphModule
from ember.fx.interpreter import Interpreter, Transformer
from ember.fx.node import Node, map_arg
from ember.fx.proxy import Attribute, Proxy, TraceError
from ember.fx.subgraph_rewriter import Match, replace_pattern
from ember.fx.tracer import PH, Tracer, symbolic_trace, wrap

__all__ = ["Graph", "GraphModule", "Node", "Proxy", "Attribute", "Tracer", "symbolic_trace",
           "wrap", "Interpreter", "Transformer", "replace_pattern", "Match", "TraceError",
           "PH", "PythonCode", "map_arg", "passes"]


def __getattr__(name: str):
    if name == "passes":
        import ember.fx.passes as passes
        return passes
    raise AttributeError(f"module 'ember.fx' has no attribute {name!r}")
