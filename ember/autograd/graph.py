"""``ember.autograd.graph``: the graph node type and small helpers."""
from __future__ import annotations

from collections import namedtuple

from ember.autograd._engine import AccumulateGrad, Node, _edge_of

__all__ = ["Node", "GradientEdge", "get_gradient_edge", "increment_version",
           "AccumulateGrad"]

GradientEdge = namedtuple("GradientEdge", ("node", "output_nr"))


def get_gradient_edge(tensor):
    """The (node, output_nr) through which gradients reach ``tensor``."""
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that "
                           "does not require gradients")
    return GradientEdge(*_edge_of(tensor))


def increment_version(tensor):
    """Bump the version counter of ``tensor`` (as an in-place op would)."""
    for t in (tensor if isinstance(tensor, (list, tuple)) else (tensor,)):
        t._bump_version()
