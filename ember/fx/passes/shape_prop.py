"""``ShapeProp``: run a GraphModule and record each node's shape/dtype in ``node.meta``."""

from __future__ import annotations

from typing import Any, NamedTuple

from ember.fx.interpreter import Interpreter
from ember.fx.node import Node, map_aggregate

__all__ = ["TensorMetadata", "ShapeProp"]


class TensorMetadata(NamedTuple):
    """What ShapeProp records for a tensor value (torch.fx's fields)."""

    shape: Any
    dtype: Any
    requires_grad: bool
    stride: tuple
    memory_format: Any
    is_quantized: bool
    qparams: dict


def _extract_tensor_metadata(t: Any) -> TensorMetadata:
    import ember
    # the first format t is dense in; None, as torch reports, for other strides
    fmt = next((f for f in (ember.contiguous_format, ember.channels_last,
                            ember.channels_last_3d) if t.is_contiguous(memory_format=f)), None)
    return TensorMetadata(t.shape, t.dtype, t.requires_grad, tuple(t.stride()), fmt, False, {})


class ShapeProp(Interpreter):
    """Execute a GraphModule on example inputs, storing ``node.meta["tensor_meta"]``
    (a :class:`TensorMetadata`, or a structure of them for tuple results) and
    ``node.meta["type"]`` for every node.

    Examples
    --------
    >>> import ember
    >>> gm = ember.fx.symbolic_trace(ember.nn.Linear(3, 2))
    >>> _ = ShapeProp(gm).propagate(ember.randn(4, 3))
    >>> [tuple(n.meta["tensor_meta"].shape) for n in gm.graph.nodes if n.op != "output"]
    [(4, 3), (2, 3), (2,), (4, 2)]
    """

    def __init__(self, gm: Any, fake_mode: Any = None) -> None:
        super().__init__(gm)
        self.fake_mode = fake_mode

    def run_node(self, n: Node) -> Any:
        from ember._C.core import TensorBase
        result = super().run_node(n)
        found = []

        def extract(v: Any) -> Any:
            if isinstance(v, TensorBase):
                found.append(True)
                return _extract_tensor_metadata(v)
            return v
        meta = map_aggregate(result, extract)
        if found:
            n.meta["tensor_meta"] = meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args: Any) -> Any:
        """Run the module on ``args`` (recording metadata) and return its output."""
        return self.run(*args)
