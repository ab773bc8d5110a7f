"""Sizes a model computes from its inputs' dynamic axes, found by capturing it again.

A captured graph holds the example's sizes as plain ints (``x.view(x.size(0), -1)``
records ``view(4, -1)``).  To learn which ints are sizes, the model is captured
once more per dynamic axis at twice and three times the example's size (the
inputs tiled along that axis).  Every int and every output dim that changes is
fitted to ``const + coef * product(axes)``; the ONNX graph then computes it at
run time from ``Shape`` of the inputs.  A graph whose structure changes with a
size, a float computed from one, or a size that fits no such form is refused.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from ember.fx.node import Node

SCALES = (2, 3)       # sizes tried for a dynamic axis, times the example's


class SymExpr:
    """``const + coef * prod(syms)``: a size computed from dynamic axes."""

    __slots__ = ("const", "coef", "syms")

    def __init__(self, const: int, coef: Fraction, syms: tuple[str, ...]) -> None:
        self.const, self.coef, self.syms = const, coef, syms

    def is_symbol(self) -> bool:
        return self.const == 0 and self.coef == 1 and len(self.syms) == 1

    def __str__(self) -> str:
        term = "*".join(self.syms)
        if self.coef != 1:
            term = f"{self.coef}*{term}"
        return term if self.const == 0 else f"{term}+{self.const}"

    __repr__ = __str__

    def emit(self, b: Any) -> str:
        """A 1-element int64 tensor holding the value at run time."""
        out = b.sym_dim(self.syms[0])
        for s in self.syms[1:]:
            out = b.op("Mul", [out, b.sym_dim(s)], "dim")
        if self.coef.numerator != 1:
            out = b.op("Mul", [out, b.ints([self.coef.numerator])], "dim")
        if self.coef.denominator != 1:
            out = b.op("Div", [out, b.ints([self.coef.denominator])], "dim")
        if self.const:
            out = b.op("Add", [out, b.ints([self.const])], "dim")
        return out


def fit(v0: int, samples: dict[str, list[tuple[int, int]]], base: dict[str, int],
        what: str) -> int | SymExpr:
    """The int ``v0`` (at the example's sizes ``base``) as a function of the axes:
    ``samples[sym]`` are (size of that axis, value) from the other captures.  The
    form comes from the first sample; every sample must then agree with it (a
    floor division or a nonlinear use of a size shows up there)."""
    slopes: dict[str, Fraction] = {}
    for sym, pts in samples.items():
        if all(v == v0 for _, v in pts):
            continue
        size, v = pts[0]
        slopes[sym] = Fraction(v - v0, size - base[sym])
    if not slopes:
        expr: int | SymExpr = v0
    elif len(slopes) == 1:
        (sym, a), = slopes.items()
        c = v0 - a * base[sym]
        if c.denominator != 1:
            raise RuntimeError(f"ember.onnx.export(): {what} is not a whole function of "
                               f"dynamic axis '{sym}'")
        expr = SymExpr(int(c), a, (sym,))
    else:
        prod = 1
        for sym, a in slopes.items():
            if v0 - a * base[sym] != 0:      # a product of axes has no constant part
                raise RuntimeError(f"ember.onnx.export(): {what} depends on dynamic axes "
                                   f"{sorted(slopes)} in a form ONNX export does not follow")
            prod *= base[sym]
        expr = SymExpr(0, Fraction(v0, prod), tuple(sorted(slopes)))
    for sym, pts in samples.items():
        for size, v in pts:
            got = evaluate(expr, {**base, sym: size})
            if got != v:
                raise RuntimeError(f"ember.onnx.export(): {what} is not a whole linear "
                                   f"function of dynamic axis '{sym}' (at size {size} it is "
                                   f"{v}, not {got}; a rounding division or a nonlinear use "
                                   f"of a size?)")
    return expr


def evaluate(expr: int | SymExpr, sizes: dict[str, int]) -> int:
    """``expr`` at ``sizes``, with the integer arithmetic the ONNX graph does."""
    if isinstance(expr, int):
        return expr
    prod = 1
    for s in expr.syms:
        prod *= sizes[s]
    return expr.const + prod * expr.coef.numerator // expr.coef.denominator


def _walk(a: Any, others: list, path: str, fit_int: Any) -> Any:
    """``a`` with each int that differs in ``others`` replaced by its SymExpr."""
    if isinstance(a, Node):
        return a
    if isinstance(a, (tuple, list)):
        if any(type(o) is not type(a) or len(o) != len(a) for o in others):
            raise _Mismatch(path)
        items = [_walk(x, [o[i] for o in others], f"{path}[{i}]", fit_int)
                 for i, x in enumerate(a)]
        return type(a)(items) if not hasattr(a, "_fields") else type(a)(*items)
    if isinstance(a, dict):
        if any(type(o) is not dict or list(o) != list(a) for o in others):
            raise _Mismatch(path)
        return {k: _walk(v, [o[k] for o in others], f"{path}[{k!r}]", fit_int)
                for k, v in a.items()}
    if isinstance(a, slice):
        parts = [(a.start, [o.start for o in others]), (a.stop, [o.stop for o in others]),
                 (a.step, [o.step for o in others])]
        return slice(*[_walk(x, xs, path, fit_int) for x, xs in parts])
    if all(type(o) is type(a) and o == a for o in others):
        return a
    if type(a) is int and all(type(o) is int for o in others):
        return fit_int(a, others, path)
    raise _Mismatch(path)


class _Mismatch(Exception):
    pass


def annotate(ep: Any, variants: dict[str, list], base: dict[str, int]
             ) -> tuple[dict, dict]:
    """For each node of ``ep``'s graph: its args/kwargs with sizes as SymExprs (only
    nodes where some int varies) and its output shape as ints and SymExprs.
    ``variants[sym]`` are (size of that axis, ExportedProgram captured with it)."""
    nodes = list(ep.graph.nodes)
    runs: list[tuple[str, int, list]] = []    # (sym, size, nodes) per captured variant
    for s, eps in variants.items():
        for size, v in eps:
            vn = list(v.graph.nodes)
            if vn is not None and (len(vn) != len(nodes) or any(
                    (a.op, _target(a)) != (b.op, _target(b)) for a, b in zip(nodes, vn))):
                raise RuntimeError(f"ember.onnx.export(): the model's graph changes with the "
                                   f"size of dynamic axis '{s}' (Python code branches on "
                                   f"it): it cannot be exported with that axis dynamic")
            runs.append((s, size, vn))

    def samples_of(values: list) -> dict:
        out: dict = {}
        for (s, size, _), v in zip(runs, values):
            out.setdefault(s, []).append((size, v))
        return out
    args: dict = {}
    shapes: dict = {}
    for i, node in enumerate(nodes):
        flat = [vn[i] for _, _, vn in runs]

        def fit_int(v0: int, vs: list, path: str, node: Node = node) -> Any:
            return fit(v0, samples_of(vs), base, f"argument {path} of node {node.name}")
        try:
            a = _walk((node.args, node.kwargs), [(o.args, o.kwargs) for o in flat], "",
                      fit_int)
        except _Mismatch as e:
            raise RuntimeError(f"ember.onnx.export(): argument {e} of node {node.name} "
                               f"({_target(node)}) depends on a dynamic axis but is not an "
                               f"int size (a float or flag computed from a shape)") from None
        if _has_sym(a):
            args[node] = a
        tm = node.meta.get("tensor_meta")
        if hasattr(tm, "shape"):
            dims = []
            for d, v0 in enumerate(tm.shape):
                values = [int(o.meta["tensor_meta"].shape[d]) for o in flat]
                dims.append(fit(int(v0), samples_of(values), base,
                                f"dim {d} of node {node.name}"))
            shapes[node] = dims
    return args, shapes


def _has_sym(a: Any) -> bool:
    if isinstance(a, SymExpr):
        return True
    if isinstance(a, (tuple, list)):
        return any(_has_sym(x) for x in a)
    if isinstance(a, dict):
        return any(_has_sym(x) for x in a.values())
    if isinstance(a, slice):
        return any(_has_sym(x) for x in (a.start, a.stop, a.step))
    return False


def _target(n: Node) -> Any:
    return n.target if isinstance(n.target, str) else getattr(n.target, "__name__", n.target)


def resized(x: Any, axis: int, n: int) -> Any:
    """``x`` with ``n`` entries along ``axis``: tiled to grow, cut to shrink (its
    values stay valid indices, masks and tokens)."""
    import ember
    size = x.shape[axis]
    if n <= size:
        return x.narrow(axis, 0, n)
    return ember.cat([x] * (-(-n // size)), dim=axis).narrow(axis, 0, n)
