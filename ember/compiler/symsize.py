"""Sizes that remember where they came from, while ``ember.compile`` captures.

A capture runs the function on concrete tensors, so Python code that branches
on a size (``if x.shape[0] > 8:``) leaves no trace in the graph: a graph
resized to another size (:mod:`.codegen.dynamic`) could take the branch the
capture did not.  While the function runs, ``Tensor.shape``, ``size()`` and
``numel()`` of the tensors the graph holds return :class:`SymSize` values: ints
that carry an expression in the sizes of graph nodes.  Arithmetic on them keeps
the expression, and every comparison (and truth test) is recorded in the
capture's ``size_guards`` with its outcome, as torch's symbolic sizes record
guards.  A graph is resized only where all of them come out the same at the
new sizes.  ``len(tensor)`` must return a plain int, so a call from user code
marks the capture untracked (never resized).  Sizes read inside an op the
dispatcher runs stay plain (what an op does with them it redoes at run time),
and the graph records plain ints.
"""
from __future__ import annotations

import operator
import os
import sys
import threading
from typing import Any

from ember._C import core as _core

_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_base_shape = _core.TensorBase.shape
_base_size = _core.TensorBase.size
_base_numel = _core.TensorBase.numel
_base_len = _core.TensorBase.__len__
_installed = [0]
_install_lock = threading.Lock()
_OPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
        "floordiv": operator.floordiv, "mod": operator.mod, "lt": operator.lt,
        "le": operator.le, "gt": operator.gt, "ge": operator.ge, "eq": operator.eq,
        "ne": operator.ne, "min": min, "max": max}


def evaluate(expr: Any, shapes: dict) -> int:
    """``expr`` at the node shapes ``shapes`` (node name -> shape tuple)."""
    kind = expr[0]
    if kind == "c":
        return expr[1]
    if kind == "dim":
        return shapes[expr[1]][expr[2]]
    if kind == "numel":
        n = 1
        for s in shapes[expr[1]]:
            n *= s
        return n
    if kind == "neg":
        return -evaluate(expr[1], shapes)
    return _OPS[kind](evaluate(expr[1], shapes), evaluate(expr[2], shapes))


def guards_hold(guards: list, shapes: dict) -> bool:
    """Whether every recorded comparison comes out as it did when captured."""
    try:
        return all(bool(evaluate(e, shapes)) == r for e, r in guards)
    except (KeyError, IndexError, ZeroDivisionError, TypeError):
        return False


def _expr(v: Any) -> Any:
    if type(v) is SymSize:
        return v.expr
    if isinstance(v, int) and not isinstance(v, bool):
        return ("c", int(v))
    return None


def _record(expr: Any, result: bool) -> None:
    from ember import compiler
    cap = compiler._active_capture()
    if cap is not None and cap.break_reason is None:
        cap.size_guards.append((expr, result))


class SymSize(int):
    """An int read from a captured tensor's size, with the expression it came from."""

    def __new__(cls, value: int, expr: tuple) -> SymSize:
        self = int.__new__(cls, value)
        self.expr = expr
        return self

    def __repr__(self) -> str:
        return int.__repr__(self)

    __str__ = __repr__

    def __index__(self) -> int:
        return int(self)

    def __bool__(self) -> bool:
        r = int(self) != 0
        _record(("ne", self.expr, ("c", 0)), r)
        return r


def _arith(name: str, reflected: bool = False) -> Any:
    op = _OPS[name]

    def f(self: SymSize, other: Any) -> Any:
        oe = _expr(other)
        a, b = (other, int(self)) if reflected else (int(self), other)
        if oe is None:
            return op(a, b)      # a float or a tensor: a plain result
        r = op(int(a), int(b))
        return SymSize(r, (name, oe, self.expr) if reflected else (name, self.expr, oe))
    f.__name__ = f"__{'r' if reflected else ''}{name}__"
    return f


def _compare(name: str) -> Any:
    op = _OPS[name]

    def f(self: SymSize, other: Any) -> Any:
        oe = _expr(other)
        if oe is None:
            return op(int(self), other)
        r = op(int(self), int(other))
        _record((name, self.expr, oe), r)
        return r
    f.__name__ = f"__{name}__"
    return f


for _n in ("add", "sub", "mul", "floordiv", "mod"):
    setattr(SymSize, f"__{_n}__", _arith(_n))
    setattr(SymSize, f"__r{_n}__", _arith(_n, True))
for _n in ("lt", "le", "gt", "ge", "eq", "ne"):
    setattr(SymSize, f"__{_n}__", _compare(_n))
SymSize.__neg__ = lambda self: SymSize(-int(self), ("neg", self.expr))  # type: ignore
SymSize.__pos__ = lambda self: self  # type: ignore
SymSize.__hash__ = int.__hash__  # type: ignore


def plain(v: Any) -> Any:
    """``v`` with SymSize values made plain ints (what a graph records)."""
    t = type(v)
    if t is SymSize:
        return int(v)
    if t is _core.Size:
        return _core.Size(int(x) for x in v) if any(type(x) is SymSize for x in v) else v
    if t is tuple or t is list:
        return t(plain(x) for x in v) if any(type(x) in (SymSize, tuple, list, _core.Size)
                                             for x in v) else v
    return v


def _tracking(t: Any) -> Any:
    """The node name of ``t`` when sizes are tracked for it on this thread."""
    from ember import compiler
    cap = compiler._active_capture()
    if cap is None or not cap.track_sizes or cap.in_op or cap.break_reason is not None or \
            cap.suspended:
        return None
    e = cap.env.get(id(t))
    if e is None or e[1] is not t:
        return None
    return e[0].name


def _shape(self: Any) -> Any:
    s = _base_shape.__get__(self)
    name = _tracking(self)
    if name is None:
        return s
    return _core.Size(SymSize(v, ("dim", name, i)) for i, v in enumerate(s))


def _size(self: Any, dim: Any = None) -> Any:
    r = _base_size(self, dim)
    name = _tracking(self)
    if name is None:
        return r
    if dim is None:
        return _core.Size(SymSize(v, ("dim", name, i)) for i, v in enumerate(r))
    d = int(dim)
    return SymSize(r, ("dim", name, d + self.dim() if d < 0 else d))


def _numel(self: Any) -> Any:
    r = _base_numel(self)
    name = _tracking(self)
    return r if name is None else SymSize(r, ("numel", name))


def _len(self: Any) -> int:
    r = _base_len(self)
    from ember import compiler
    cap = compiler._active_capture()
    if cap is not None and _tracking(self) is not None:
        f = sys._getframe(1)
        if not os.path.abspath(f.f_code.co_filename).startswith(_EMBER_DIR):
            cap.untracked_sizes = True      # a plain int the function may branch on
    return r


def install() -> None:
    """Make captured tensors' sizes SymSize values (nested calls count)."""
    from ember import Tensor
    with _install_lock:
        if not _installed[0]:
            Tensor.shape = property(_shape)
            Tensor.size = _size
            Tensor.numel = _numel
            Tensor.nelement = _numel
            Tensor.__len__ = _len
        _installed[0] += 1


def uninstall() -> None:
    from ember import Tensor
    with _install_lock:
        _installed[0] -= 1
        if not _installed[0]:
            for k in ("shape", "size", "numel", "nelement", "__len__"):
                delattr(Tensor, k)
