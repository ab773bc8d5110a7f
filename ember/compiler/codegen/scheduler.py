"""Scheduling: partition a captured graph into fused kernels and eager steps.

Nodes are visited in graph order.  Consecutive nodes that the lowering table
covers join one *row kernel* when they share its geometry: every value is
either a full tensor of the kernel's shape (``V``, computed inside loops over
the last dimension and never stored unless something outside the kernel reads
it) or one value per row (``S``: reductions over the last dimension and math
on them).  Pointwise chains thus become one loop, and pointwise producers,
softmax, log_softmax and layer_norm's mean/variance become one pass per row.
Anything else is an eager step, which also closes the open kernel so the
graph's order of effects is kept.

A float32 ``linear`` opens a *GEMM kernel*: the product runs through ember's
GEMM and the pointwise nodes that follow it (activation, residual add ...)
become its epilogue, applied to each block of the result as the GEMM finishes
it, while the block is still in cache.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ember.fx import Node
from ember.fx.node import INPUT_OP

from . import lowering as L

_FLOAT, _BOOL = "float32", "bool"


def _meta(n: Any) -> Any:
    m = n.meta.get("tensor_meta") if isinstance(n, Node) else None
    return m if m is not None and hasattr(m, "shape") else None


def _dtype(m: Any) -> str:
    return str(m.dtype).replace("ember.", "")


def _op_name(n: Node) -> str | None:
    if n.op not in ("call_method", "call_function"):
        return None
    return n.meta.get("op_name") or (n.target if isinstance(n.target, str) else None)


def _broadcasts(shape: tuple, to: tuple) -> bool:
    if len(shape) > len(to):
        return False
    return all(s == t or s == 1 for s, t in zip(reversed(shape), reversed(to)))


@dataclass
class Kernel:
    """A fused row kernel: ``nodes`` in order, ``cls`` V/S per node, the
    external tensors it reads and the nodes it must store."""
    vshape: tuple
    nodes: list = field(default_factory=list)
    # node -> "V" (full tensor), "S" (one per row), "T" (whole-tensor total) or "K"
    # (one per column: a sum/mean over every dimension but the last)
    cls: dict = field(default_factory=dict)
    prim: dict = field(default_factory=dict)     # node -> (primitive, operands)
    inputs: list = field(default_factory=list)   # external nodes, in first-use order
    outputs: list = field(default_factory=list)  # nodes read outside the kernel
    gemm: Node | None = None     # the linear whose epilogue this kernel is
    sizes: list | None = None    # code for every size: the sizes it reads (cgen)

    def start_gemm(self, n: Node) -> None:
        """Open the kernel with the GEMM ``n`` (see :func:`gemm_operands`): its value is
        the one every epilogue node reads first."""
        self.vshape = tuple(_meta(n).shape)
        self.gemm = n
        for a in gemm_operands(n):
            if a is not None and a not in self.inputs:
                self.inputs.append(a)
        self.nodes.append(n)
        self.cls[n] = "V"
        self.prim[n] = (None, [])

    @property
    def rows(self) -> int:
        return math.prod(self.vshape[:-1]) if self.vshape else 1

    @property
    def cols(self) -> int:
        return self.vshape[-1] if self.vshape else 1

    def _operand(self, a: Any, as_v: bool) -> bool:
        """Whether ``a`` can be read by a node of class V (``as_v``) or S."""
        if isinstance(a, bool) or isinstance(a, (int, float)):
            return math.isfinite(a) if isinstance(a, float) else True
        if not isinstance(a, Node):
            return False
        if a in self.cls:
            if self.cls[a] in ("T", "K"):
                return False      # totals over rows are final: stored, never reread
            if self.cls[a] == "V":
                return as_v
            # a per-row value broadcast along the last dim only in keepdim form
            m = _meta(a)
            return (not as_v) or tuple(m.shape) == tuple(self.vshape[:-1]) + (1,)
        m = _meta(a)
        if m is None or _dtype(m) not in (_FLOAT, _BOOL) or not as_v:
            return False
        return _broadcasts(tuple(m.shape), self.vshape)

    def _last_dim(self, n: Node, x: Any, pos: int, default: Any) -> Any:
        dim = n.kwargs.get("dim", n.args[pos] if len(n.args) > pos else default)
        if isinstance(dim, (tuple, list)):
            if len(dim) != 1:
                return None
            dim = dim[0]
        m = _meta(x)
        nd = len(m.shape)
        if dim is None:
            return -1 if nd == 1 else None
        return -1 if isinstance(dim, int) and nd and dim % nd == nd - 1 else None

    def _total(self, n: Node, x: Any) -> bool:
        """A sum/mean over every dimension of a tensor of two or more dimensions (its
        rows' values are summed in order after the parallel loop)."""
        nd = len(_meta(x).shape)
        dim = n.kwargs.get("dim", n.args[1] if len(n.args) > 1 else None)
        if nd < 2 or n.kwargs.get("keepdim", n.args[2] if len(n.args) > 2 else False):
            return False
        if isinstance(dim, (tuple, list)):
            return sorted(d % nd for d in dim if isinstance(d, int)) == list(range(nd))
        return dim is None and self.prim_kind(n) in ("sum", "mean")

    def _columns(self, n: Node, x: Any) -> bool:
        """A sum/mean over every dimension but the last (bias and norm-weight gradients)."""
        nd = len(_meta(x).shape)
        dim = n.kwargs.get("dim", n.args[1] if len(n.args) > 1 else None)
        if nd < 2 or self.prim_kind(n) not in ("sum", "mean"):
            return False
        dims = dim if isinstance(dim, (tuple, list)) else (dim,)
        if not all(isinstance(d, int) and not isinstance(d, bool) for d in dims):
            return False
        return sorted(d % nd for d in dims) == list(range(nd - 1))

    @staticmethod
    def prim_kind(n: Node) -> str | None:
        p = L.REDUCTIONS.get(_op_name(n) or "")
        return p.kind if p else None

    def try_add(self, n: Node, prim: Any) -> bool:
        m = _meta(n)
        if m is None:
            return False
        shape = tuple(m.shape)
        if self.gemm is not None and not isinstance(prim, L.Pointwise):
            return False      # an epilogue is elementwise: blocks finish in any order
        if isinstance(prim, L.Pointwise):
            ops = list(n.args[:prim.arity])
            if len(ops) != prim.arity or len(n.args) > prim.arity:
                return False
            if _dtype(m) != (_BOOL if prim.out_bool else _FLOAT):
                return False
            if not self.nodes:
                self.vshape = shape
            if shape == self.vshape and all(self._operand(a, True) for a in ops):
                kind = "V"
            elif (self.nodes and all(self._operand(a, False) for a in ops)
                  and all(tuple(_meta(a).shape) == shape for a in ops if isinstance(a, Node))
                  and any(isinstance(a, Node) for a in ops)):
                kind = "S"
            else:
                return False
            if self.gemm is not None and kind != "V":
                return False
        else:
            if not n.args or not isinstance(n.args[0], Node) or _dtype(m) != _FLOAT:
                return False
            x = n.args[0]
            xm = _meta(x)
            if xm is None or not xm.shape or xm.shape[-1] < 2:
                return False
            if not self.nodes:
                self.vshape = tuple(xm.shape)
            if tuple(xm.shape) != self.vshape or not self._operand(x, True):
                return False
            if isinstance(prim, L.Row):
                if len(n.args) > 2 or self._last_dim(n, x, 1, None) is None:
                    return False
                ops, kind = [x], "V"
            else:
                if len(n.args) > 3:
                    return False
                if self._total(n, x):
                    ops, kind = [x], "T"
                elif self._columns(n, x):
                    ops, kind = [x], "K"
                elif self._last_dim(n, x, 1, None) is None:
                    return False
                else:
                    ops, kind = [x], "S"
        for a in ops:
            if isinstance(a, Node) and a not in self.cls and a not in self.inputs:
                self.inputs.append(a)
        self.nodes.append(n)
        self.cls[n] = kind
        self.prim[n] = (prim, ops)
        return True

    def finish(self) -> None:
        inside = set(self.nodes)
        self.outputs = [n for n in self.nodes if any(u not in inside for u in n.users)]
        if self.gemm is not None and self.gemm not in self.outputs and (
                not any(_dtype(_meta(n)) == _FLOAT for n in self.outputs) or
                any(_op_name(n) in L.FAST_RANGE for n in self.nodes)):
            # the GEMM needs float memory to write, and an epilogue that may compute
            # a row again must find the product unchanged
            self.outputs.insert(0, self.gemm)

    def worth_it(self) -> bool:
        """A lone pointwise op or reduction (or a GEMM with no epilogue) gains nothing
        over its eager kernel."""
        return len(self.nodes) > 1 or (self.gemm is None and
                                       isinstance(self.prim[self.nodes[0]][0], L.Row))


def _contiguous(m: Any) -> bool:
    expect = 1
    for s, st in zip(reversed(tuple(m.shape)), reversed(tuple(m.stride))):
        if s != 1 and st != expect:
            return False
        expect *= s
    return True


def gemm_operands(n: Node) -> tuple | None:
    """``(x, weight, bias or None)`` when ``n`` is a linear the GEMM kernel takes:
    float32, an input of two or more dimensions laid out contiguously (its rows are
    the GEMM's), a 2-D weight of any strides and a contiguous 1-D bias, the case the
    eager linear runs as one GEMM with the bias fused."""
    if _op_name(n) != "linear" or set(n.kwargs) - {"bias"} or not 2 <= len(n.args) <= 3:
        return None
    x, w = n.args[0], n.args[1]
    b = n.args[2] if len(n.args) > 2 else n.kwargs.get("bias")
    if not isinstance(x, Node) or not isinstance(w, Node) or not (b is None or isinstance(b, Node)):
        return None
    xm, wm, om = _meta(x), _meta(w), _meta(n)
    if xm is None or wm is None or om is None:
        return None
    if any(_dtype(m) != _FLOAT for m in (xm, wm, om)) or len(xm.shape) < 2 or \
            len(wm.shape) != 2 or not _contiguous(xm):
        return None
    N, K = wm.shape
    if xm.shape[-1] != K or K < 1 or N < 1 or tuple(om.shape) != tuple(xm.shape[:-1]) + (N,):
        return None
    if b is not None:
        bm = _meta(b)
        if bm is None or _dtype(bm) != _FLOAT or tuple(bm.shape) != (N,) or not _contiguous(bm):
            return None
    return x, w, b


def partition(graph: Any) -> list:
    """The graph as steps: ``("eager", node)`` or ``("kernel", Kernel)``; placeholders
    and the output node are left to the runtime."""
    steps: list = []
    open_k: Kernel | None = None

    def close() -> None:
        nonlocal open_k
        if open_k is not None and open_k.nodes:
            open_k.finish()
            if open_k.worth_it():
                steps.append(("kernel", open_k))
            else:
                steps.extend(("eager", n) for n in open_k.nodes)
        open_k = None

    for n in graph.nodes:
        if n.op in (INPUT_OP, "output"):
            continue
        name = _op_name(n)
        if name == "linear" and gemm_operands(n) is not None:
            close()
            open_k = Kernel(())
            open_k.start_gemm(n)
            continue
        prim = L.lookup(name, dict(n.kwargs)) if name else None
        if prim is not None:
            if open_k is not None and open_k.try_add(n, prim):
                continue
            close()
            open_k = Kernel(())
            if open_k.try_add(n, prim):
                continue
            open_k = None
        close()
        steps.append(("eager", n))
    close()
    return steps
