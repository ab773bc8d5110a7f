"""The lowering table: dispatcher op name -> primitive.

Each entry says how a captured op becomes code.  ``Pointwise`` ops carry a C
expression over float32 operands (``{0}``, ``{1}`` ...) that mirrors the eager
kernel's formula in ``src_c/ew_impl.h`` so fused and eager results agree;
``Reduction`` ops reduce the last dimension; ``Row`` ops (softmax, log_softmax)
expand to reductions plus pointwise math.  An op absent from the table, or one
whose arguments its entry refuses, runs through the eager kernels (an
``extern`` call into the existing C code: matmul, linear, convolution, views).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Pointwise:
    """An elementwise op: ``expr`` is C over the operands; ``arity`` tensor/scalar
    operands are taken from the positional args; ``out_bool`` for comparisons."""
    expr: str
    arity: int
    out_bool: bool = False


@dataclass(frozen=True)
class Reduction:
    """A reduction over the last dimension: ``kind`` is sum, mean or amax."""
    kind: str


@dataclass(frozen=True)
class Row:
    """A row-wise composite over the last dimension (softmax, log_softmax)."""
    kind: str


def _f(name: str) -> str:
    # the eager float32 kernels of these functions compute in double and round
    return f"(float){name}((double){{0}})"


_SIGMOID = "em_cg_sigmoid({0})"

POINTWISE: dict[str, Pointwise] = {
    "add": Pointwise("({0} + {1})", 2),
    "sub": Pointwise("({0} - {1})", 2),
    "rsub": Pointwise("({1} - {0})", 2),
    "mul": Pointwise("({0} * {1})", 2),
    "div": Pointwise("({0} / {1})", 2),
    "true_divide": Pointwise("({0} / {1})", 2),
    "maximum": Pointwise("em_cg_max({0}, {1})", 2),
    "minimum": Pointwise("em_cg_min({0}, {1})", 2),
    "pow": Pointwise("em_cg_pow({0}, {1})", 2),
    "neg": Pointwise("(0.0f - {0})", 1),
    "abs": Pointwise("fabsf({0})", 1),
    "exp": Pointwise("em_expf({0})", 1),
    "log": Pointwise(_f("log"), 1),
    "log1p": Pointwise("em_log1pf({0})", 1),
    "expm1": Pointwise(_f("expm1"), 1),
    "sqrt": Pointwise("sqrtf({0})", 1),
    "rsqrt": Pointwise("(1.0f / sqrtf({0}))", 1),
    "reciprocal": Pointwise("(1.0f / {0})", 1),
    "square": Pointwise("({0} * {0})", 1),
    "sin": Pointwise("em_cg_sin({0})", 1),
    "cos": Pointwise("em_cg_cos({0})", 1),
    "tan": Pointwise(_f("tan"), 1),
    "tanh": Pointwise(_f("tanh"), 1),
    "sigmoid": Pointwise(_SIGMOID, 1),
    "relu": Pointwise("em_cg_relu({0})", 1),
    "silu": Pointwise("em_siluf({0})", 1),
    "gelu": Pointwise("em_gelu_vf({0})", 1),
    # the backward formulas' own kernels (training graphs): (grad, input or output)
    "relu_backward": Pointwise("({1} > 0 ? {0} : 0.0f)", 2),
    "sigmoid_backward": Pointwise("({0} * {1} * (1.0f - {1}))", 2),
    "tanh_backward": Pointwise("({0} * (1.0f - {1} * {1}))", 2),
    "gelu_backward": Pointwise("({0} * em_cg_gelu_grad({1}))", 2),
    "gt": Pointwise("({0} > {1})", 2, True),
    "lt": Pointwise("({0} < {1})", 2, True),
    "ge": Pointwise("({0} >= {1})", 2, True),
    "le": Pointwise("({0} <= {1})", 2, True),
    "eq": Pointwise("({0} == {1})", 2, True),
    "ne": Pointwise("({0} != {1})", 2, True),
    "logical_not": Pointwise("(!({0}))", 1, True),
    "where": Pointwise("(({0}) ? ({1}) : ({2}))", 3),
}
# functions generated code takes in a fast, vectorising form over part of their
# range: op name -> (the operand whose range matters, C for how far past that range it
# is, scaled so that > EM_CG_TRIG_MAX means past).  A kernel that meets such a value
# runs again with the full-range forms (cgen).
FAST_RANGE: dict[str, tuple[int, str]] = {
    "sin": (0, "fabsf({})"),
    "cos": (0, "fabsf({})"),
    "sigmoid": (0, "(-({}) * (EM_CG_TRIG_MAX / EM_CG_SIGMOID_MIN))"),
    "gelu_backward": (1, "(-({}) * (EM_CG_TRIG_MAX / EM_CG_GELU_MIN))"),
}
# the C functions with a _fast and an _exact form
FAST_FNS = ("em_cg_sin", "em_cg_cos", "em_cg_sigmoid", "em_cg_gelu_grad")

POINTWISE["greater"] = POINTWISE["gt"]
POINTWISE["less"] = POINTWISE["lt"]
POINTWISE["multiply"] = POINTWISE["mul"]
POINTWISE["subtract"] = POINTWISE["sub"]
POINTWISE["divide"] = POINTWISE["div"]
POINTWISE["negative"] = POINTWISE["neg"]

REDUCTIONS: dict[str, Reduction] = {
    "sum": Reduction("sum"),
    "mean": Reduction("mean"),
    "amax": Reduction("amax"),
}

ROWS: dict[str, Row] = {
    "softmax": Row("softmax"),
    "log_softmax": Row("log_softmax"),
}

# keyword arguments an entry accepts, with the only values code generation honours
_OK_KWARGS: dict[str, Callable[[dict], bool]] = {
    "add": lambda kw: kw.get("alpha", 1) == 1,
    "sub": lambda kw: kw.get("alpha", 1) == 1,
    "div": lambda kw: kw.get("rounding_mode") is None,
    "gelu": lambda kw: kw.get("approximate", "none") == "none",
    "gelu_backward": lambda kw: kw.get("approximate", "none") == "none",
    "softmax": lambda kw: kw.get("dtype") is None,
    "log_softmax": lambda kw: kw.get("dtype") is None,
    "sum": lambda kw: kw.get("dtype") is None,
    "mean": lambda kw: kw.get("dtype") is None,
}


def lookup(op_name: str, kwargs: dict) -> Pointwise | Reduction | Row | None:
    """The primitive for ``op_name`` called with ``kwargs``, or None (run eagerly)."""
    entry = POINTWISE.get(op_name) or REDUCTIONS.get(op_name) or ROWS.get(op_name)
    if entry is None:
        return None
    ok = _OK_KWARGS.get(op_name)
    extra = set(kwargs) - {"alpha", "rounding_mode", "approximate", "dtype", "dim", "keepdim"}
    if extra or (ok is not None and not ok(kwargs)):
        return None
    return entry


def covered_ops() -> list[str]:
    """Every op name the table lowers to generated code."""
    return sorted(set(POINTWISE) | set(REDUCTIONS) | set(ROWS))
