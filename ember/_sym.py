"""Symbolic scalars: ``SymInt``, ``SymFloat``, ``SymBool`` and the ``ShapeEnv``.

A symbolic scalar behaves like the Python number it stands for (arithmetic,
comparisons, ``__index__``, ``__bool__``, hashing as PyTorch does it) but
forwards every operation to a :class:`SymNode`, which records a sympy
expression.  A :class:`ShapeEnv` creates the symbols (``s0``, ``s1``, ... for
sizes seen with a concrete value, ``u0``, ... for data-dependent values with
none) and records a *guard* each time Python forces a symbolic value into a
concrete one (``bool(s0 == 3)``, ``int(s0 + 1)``, ``range(s0)``): the compiler
re-uses a trace as long as the guards hold for new inputs.

sympy is imported the first time a node builds an expression, never when this
module is imported, so ``import ember`` stays cheap.

The helpers :func:`sym_int`, :func:`sym_float`, :func:`sym_max`,
:func:`sym_min`, :func:`sym_sum`, :func:`sym_not` and :func:`sym_ite` accept
symbolic and plain values alike and fall back to plain Python for plain ones.
"""

from __future__ import annotations

import builtins
import math
from typing import Any, Iterable, Mapping, Union

__all__ = [
    "SymNode",
    "SymInt",
    "SymFloat",
    "SymBool",
    "ShapeEnv",
    "GuardOnDataDependentSymNode",
    "sym_int",
    "sym_float",
    "sym_max",
    "sym_min",
    "sym_sum",
    "sym_not",
    "sym_ite",
]

_sympy = None


def _sp():
    """Import sympy on first use (it costs ~100 ms; ``import ember`` must not pay it)."""
    global _sympy
    if _sympy is None:
        import sympy

        _sympy = sympy
    return _sympy


class GuardOnDataDependentSymNode(RuntimeError):
    """Python needed a concrete value for an expression that has no hint."""


_NO_HINT = object()


class SymNode:
    """One node of a symbolic expression: a sympy ``expr`` and its Python type.

    Parameters
    ----------
    expr : sympy.Basic
        The expression (an integer/real expression, or a sympy boolean).
    shape_env : ShapeEnv or None
        The environment owning the symbols; guards are recorded there.
    pytype : type
        ``int``, ``float`` or ``bool``: what the scalar pretends to be.
    """

    __slots__ = ("expr", "shape_env", "pytype")

    def __init__(self, expr: Any, shape_env: ShapeEnv | None, pytype: type) -> None:
        self.expr = expr
        self.shape_env = shape_env
        self.pytype = pytype

    # -- queries -----------------------------------------------------------
    def is_int(self) -> bool:
        return self.pytype is int

    def is_float(self) -> bool:
        return self.pytype is float

    def is_bool(self) -> bool:
        return self.pytype is bool

    def is_constant(self) -> bool:
        """True when the expression has no free symbols."""
        return not self.expr.free_symbols

    def is_symbolic(self) -> bool:
        return not self.is_constant()

    def is_nested_int(self) -> bool:
        return False

    @property
    def hint(self) -> Any:
        """The concrete value under the symbols' hints, or ``None`` if unknown."""
        v = self._eval_hint()
        return None if v is _NO_HINT else v

    def has_hint(self) -> bool:
        return self._eval_hint() is not _NO_HINT

    def _eval_hint(self) -> Any:
        expr = self.expr
        if expr.free_symbols:
            if self.shape_env is None:
                return _NO_HINT
            expr = expr.xreplace(self.shape_env.var_to_val)
            if expr.free_symbols:
                return _NO_HINT
        return _to_python(expr, self.pytype)

    def require_hint(self) -> Any:
        v = self._eval_hint()
        if v is _NO_HINT:
            raise GuardOnDataDependentSymNode(
                f"Could not guard on data-dependent expression {self.expr} "
                f"(it has no hint: its value depends on data). Avoid branching on it, "
                f"or constrain it with ember._check(...).")
        return v

    # -- building ----------------------------------------------------------
    def wrap(self, expr: Any, pytype: type) -> SymNode:
        """A new node in the same environment."""
        return SymNode(expr, self.shape_env, pytype)

    def wrap_const(self, value: Any) -> SymNode:
        """A constant node for a plain Python number or bool."""
        sp = _sp()
        if isinstance(value, bool):
            return SymNode(sp.true if value else sp.false, self.shape_env, bool)
        if isinstance(value, int):
            return SymNode(sp.Integer(value), self.shape_env, int)
        return SymNode(sp.Float(value), self.shape_env, float)

    def binary(self, op: str, other: SymNode, pytype: type) -> SymNode:
        """Apply binary ``op`` (a key of the op table) to ``self`` and ``other``."""
        return self.wrap(_binary_ops()[op](self.expr, other.expr), pytype)

    def neg(self) -> SymNode:
        return self.wrap(-self.expr, self.pytype)

    def abs(self) -> SymNode:
        return self.wrap(_sp().Abs(self.expr), self.pytype)

    def sym_float(self) -> SymNode:
        sp = _sp()
        if self.pytype is bool:
            return self.wrap(sp.Piecewise((sp.Float(1.0), self.expr), (sp.Float(0.0), True)),
                             float)
        return self.wrap(self.expr, float)

    def floor(self) -> SymNode:
        return self.wrap(_sp().floor(self.expr), int)

    def ceil(self) -> SymNode:
        return self.wrap(_sp().ceiling(self.expr), int)

    def trunc(self) -> SymNode:
        sp = _sp()
        e = self.expr
        return self.wrap(sp.Piecewise((sp.floor(e), e >= 0), (sp.ceiling(e), True)), int)

    def sym_not(self) -> SymNode:
        return self.wrap(_sp().Not(self.expr), bool)

    def sym_ite(self, then: SymNode, other: SymNode) -> SymNode:
        sp = _sp()
        return self.wrap(sp.Piecewise((then.expr, self.expr), (other.expr, True)), then.pytype)

    def sym_sum(self, nodes: Iterable[SymNode]) -> SymNode:
        """One n-ary ``Add`` node over ``nodes`` (not a chain of binary adds)."""
        nodes = list(nodes)
        pytype = float if any(n.pytype is float for n in nodes) else int
        return self.wrap(_sp().Add(*(n.expr for n in nodes)), pytype)

    # -- forcing concrete values (guards) ---------------------------------
    def bool_(self) -> bool:
        static = _static_truth(self.expr, self.shape_env)
        if static is not None:
            return static
        value = bool(self.require_hint())
        if self.shape_env is not None:
            self.shape_env._record_guard(self.expr if value else _sp().Not(self.expr))
        return value

    def int_(self) -> int:
        if self.expr.is_Integer:
            return int(self.expr)
        value = int(self.require_hint())
        if self.shape_env is not None:
            self.shape_env._record_guard(_sp().Eq(self.expr, value))
        return value

    def float_(self) -> float:
        if self.expr.is_number:
            return float(self.expr)
        value = float(self.require_hint())
        if self.shape_env is not None:
            self.shape_env._record_guard(_sp().Eq(self.expr, self.wrap_const(value).expr))
        return value

    def __str__(self) -> str:
        return str(self.expr)

    def __repr__(self) -> str:
        return f"SymNode({self.expr}, pytype={self.pytype.__name__})"

    _graph_repr = __str__


def _to_python(value: Any, pytype: type) -> Any:
    sp = _sp()
    if value is sp.true or value is sp.false:
        return bool(value) if pytype is bool else pytype(bool(value))
    if value.has(sp.zoo, sp.nan) or value is sp.zoo or value is sp.nan:
        raise ZeroDivisionError(f"division by zero in symbolic expression {value}")
    if pytype is bool:
        return bool(value)
    if pytype is int:
        return int(value)
    return float(value)


_BINARY = None


def _binary_ops() -> dict:
    global _BINARY
    if _BINARY is None:
        sp = _sp()
        _BINARY = {
            "add": lambda a, b: a + b,
            "sub": lambda a, b: a - b,
            "mul": lambda a, b: a * b,
            "truediv": lambda a, b: a / b,
            "floordiv": lambda a, b: sp.floor(a / b),
            "mod": sp.Mod,
            "pow": lambda a, b: a ** b,
            "eq": sp.Eq,
            "ne": sp.Ne,
            "lt": sp.Lt,
            "le": sp.Le,
            "gt": sp.Gt,
            "ge": sp.Ge,
            "max": sp.Max,
            "min": sp.Min,
            "and": sp.And,
            "or": sp.Or,
        }
    return _BINARY


def _static_truth(expr: Any, env: ShapeEnv | None) -> bool | None:
    """Decide a boolean expression from the symbols' assumptions alone, if possible."""
    sp = _sp()
    if expr is sp.true or expr is sp.false:
        return bool(expr)
    if env is None or not env._shift:
        return None
    decided = expr.xreplace(env._shift)
    if decided is sp.true or decided is sp.false:
        return bool(decided)
    return None


# ---------------------------------------------------------------------------
# The user-facing scalar types
# ---------------------------------------------------------------------------

_IntLike = (int, )  # bool is an int subclass, as in Python


def _node_of(self_node: SymNode, other: Any) -> SymNode | None:
    if isinstance(other, (SymInt, SymFloat, SymBool)):
        return other.node
    if isinstance(other, (int, float)):
        return self_node.wrap_const(int(other) if isinstance(other, bool) else other)
    return None


def _wrap_node(node: SymNode) -> SymInt | SymFloat | SymBool:
    if node.pytype is int:
        return SymInt(node)
    if node.pytype is float:
        return SymFloat(node)
    return SymBool(node)


def _arith(op: str, reflected: bool = False):
    """Binary arithmetic with Python's int/float promotion."""

    def method(self, other):
        if isinstance(other, (SymFloat, float)) or isinstance(self, SymFloat):
            if not isinstance(other, (int, float, SymInt, SymFloat)):
                return NotImplemented
            a = self.node if isinstance(self, SymFloat) else self.node.sym_float()
            b = _node_of(a, other)
            if b.pytype is not float:
                b = b.sym_float()
            pytype = float
        else:
            if not isinstance(other, (int, SymInt)):
                return NotImplemented
            a, b = self.node, _node_of(self.node, other)
            pytype = float if op == "truediv" else int
        if reflected:
            a, b = b, a
        return _wrap_node(a.binary(op, b, pytype))

    method.__name__ = f"__{'r' if reflected else ''}{op}__"
    return method


def _compare(op: str):
    def method(self, other):
        if not isinstance(other, (int, float, SymInt, SymFloat)):
            return NotImplemented
        return SymBool(self.node.binary(op, _node_of(self.node, other), bool))

    method.__name__ = f"__{op}__"
    return method


class _SymNumber:
    """Shared behaviour of SymInt and SymFloat."""

    __slots__ = ("node",)

    def __init__(self, node: SymNode) -> None:
        self.node = node

    __add__ = _arith("add")
    __radd__ = _arith("add", True)
    __sub__ = _arith("sub")
    __rsub__ = _arith("sub", True)
    __mul__ = _arith("mul")
    __rmul__ = _arith("mul", True)
    __truediv__ = _arith("truediv")
    __rtruediv__ = _arith("truediv", True)
    __floordiv__ = _arith("floordiv")
    __rfloordiv__ = _arith("floordiv", True)
    __mod__ = _arith("mod")
    __rmod__ = _arith("mod", True)

    __eq__ = _compare("eq")
    __ne__ = _compare("ne")
    __lt__ = _compare("lt")
    __le__ = _compare("le")
    __gt__ = _compare("gt")
    __ge__ = _compare("ge")

    def __neg__(self):
        return _wrap_node(self.node.neg())

    def __pos__(self):
        return self

    def __abs__(self):
        return _wrap_node(self.node.abs())

    def __bool__(self) -> bool:
        return builtins.bool(self != 0)

    def __sym_max__(self, other):
        return _minmax("max", self, other)

    def __sym_min__(self, other):
        return _minmax("min", self, other)

    def _sympy_(self):
        return self.node.expr

    def __repr__(self) -> str:
        return self.node._graph_repr()

    def __format__(self, spec: str) -> str:
        if not spec:
            return repr(self)
        return format(self.node.pytype(self), spec)


class SymInt(_SymNumber):
    """Like an ``int``, but every operation is recorded on its :class:`SymNode`.

    ``/`` gives a :class:`SymFloat`, comparisons give a :class:`SymBool`;
    ``int()``, ``operator.index()`` and ``bool()`` force a concrete value and
    record a guard.  Symbolic ints are unhashable, as in PyTorch.
    """

    __slots__ = ()

    def __pow__(self, other):
        if isinstance(other, (float, SymFloat)):
            return sym_float(self).__pow__(other)
        if not isinstance(other, (int, SymInt)):
            return NotImplemented
        if other >= 0:  # a guard: the result type depends on it
            return SymInt(self.node.binary("pow", _node_of(self.node, other), int))
        return sym_float(self).__pow__(sym_float(other))

    def __rpow__(self, other):
        if isinstance(other, (float, SymFloat)):
            return sym_float(self).__rpow__(other)
        if not isinstance(other, (int, SymInt)):
            return NotImplemented
        if self >= 0:
            return SymInt(_node_of(self.node, other).binary("pow", self.node, int))
        return sym_float(self).__rpow__(sym_float(other))

    def __divmod__(self, other):
        q = self.__floordiv__(other)
        return q if q is NotImplemented else (q, self.__mod__(other))

    def __rdivmod__(self, other):
        q = self.__rfloordiv__(other)
        return q if q is NotImplemented else (q, self.__rmod__(other))

    def __lshift__(self, other):
        if not isinstance(other, (int, SymInt)):
            return NotImplemented
        if other < 0:  # a guard, as Python raises for negative shift counts
            raise ValueError("negative shift count")
        return self * (2 ** other)

    def __rshift__(self, other):
        if not isinstance(other, (int, SymInt)):
            return NotImplemented
        if other < 0:
            raise ValueError("negative shift count")
        return self // (2 ** other)  # Python's >> floors, also for negative numbers

    def __invert__(self):
        return -self - 1

    def __int__(self) -> int:
        return self.node.int_()

    def __index__(self) -> int:
        return self.node.int_()

    def __float__(self) -> float:
        return float(self.node.int_())

    def __sym_float__(self) -> SymFloat:
        return SymFloat(self.node.sym_float())

    def __round__(self, ndigits=None):
        return self

    def __trunc__(self):
        return self

    def __floor__(self):
        return self

    def __ceil__(self):
        return self

    def __hash__(self) -> int:
        raise TypeError("unhashable type: non-nested SymInt")

    def as_integer_ratio(self):
        return self, 1

    def bit_length(self) -> int:
        return int(self).bit_length()

    def conjugate(self) -> SymInt:
        return self


class SymFloat(_SymNumber):
    """Like a ``float``, but every operation is recorded on its :class:`SymNode`.

    Hashing forces a concrete value (and records a guard), as in PyTorch.
    """

    __slots__ = ()

    def __pow__(self, other):
        if not isinstance(other, (int, float, SymInt, SymFloat)):
            return NotImplemented
        return SymFloat(self.node.binary("pow", _float_node(self.node, other), float))

    def __rpow__(self, other):
        if not isinstance(other, (int, float, SymInt, SymFloat)):
            return NotImplemented
        return SymFloat(_float_node(self.node, other).binary("pow", self.node, float))

    def __float__(self) -> float:
        return self.node.float_()

    def __int__(self) -> int:
        return int(self.node.float_())

    def __sym_float__(self) -> SymFloat:
        return self

    def __trunc__(self) -> SymInt:
        return SymInt(self.node.trunc())

    def __floor__(self) -> SymInt:
        return SymInt(self.node.floor())

    def __ceil__(self) -> SymInt:
        return SymInt(self.node.ceil())

    def __round__(self, ndigits=None):
        return round(float(self), ndigits)

    def __hash__(self) -> int:
        return hash(float(self))

    def is_integer(self) -> bool:
        return float(self).is_integer()

    def as_integer_ratio(self):
        return float(self).as_integer_ratio()

    def conjugate(self) -> SymFloat:
        return self


def _float_node(like: SymNode, value: Any) -> SymNode:
    node = _node_of(like, value)
    return node if node.pytype is float else node.sym_float()


class SymBool:
    """Like a ``bool``, but recorded on its :class:`SymNode`.

    ``&`` and ``|`` stay symbolic; ``not`` and ``if`` force a value (and record
    a guard) -- use :func:`sym_not` and :func:`sym_ite` to stay symbolic.
    ``~`` is deliberately unsupported (``~True == -2`` in Python).
    """

    __slots__ = ("node",)

    def __init__(self, node: SymNode) -> None:
        self.node = node

    def __bool__(self) -> bool:
        return self.node.bool_()

    def __int__(self) -> int:
        return int(self.node.bool_())

    def _logic(op: str, reflected: bool = False):  # class-body helper, deleted below
        def method(self, other):
            if not isinstance(other, (bool, SymBool)):
                return NotImplemented
            b = other.node if isinstance(other, SymBool) else self.node.wrap_const(other)
            a, b = (b, self.node) if reflected else (self.node, b)
            return SymBool(a.binary(op, b, bool))

        return method

    __and__ = _logic("and")
    __rand__ = _logic("and", True)
    __or__ = _logic("or")
    __ror__ = _logic("or", True)
    del _logic

    def __eq__(self, other):
        if not isinstance(other, (bool, SymBool)):
            return NotImplemented
        b = other.node if isinstance(other, SymBool) else self.node.wrap_const(other)
        sp = _sp()
        return SymBool(self.node.wrap(sp.Equivalent(self.node.expr, b.expr), bool))

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else sym_not(eq)

    def __sym_not__(self) -> SymBool:
        return SymBool(self.node.sym_not())

    def __sym_ite__(self, then_val: Any, else_val: Any) -> Any:
        t = _node_of(self.node, then_val)
        f = _node_of(self.node, else_val)
        if t is None or f is None:
            raise TypeError(f"sym_ite() needs numbers or bools, got {type(then_val).__name__}")
        return _wrap_node(self.node.sym_ite(t, f))

    def __sym_float__(self) -> SymFloat:
        return SymFloat(self.node.sym_float())

    def __hash__(self) -> int:
        if self.node.is_constant():
            return hash(bool(self.node.expr))
        return hash(builtins.bool(self))  # forces specialisation

    def _sympy_(self):
        return self.node.expr

    def __repr__(self) -> str:
        return self.node._graph_repr()


# ---------------------------------------------------------------------------
# Helpers that accept symbolic and plain values
# ---------------------------------------------------------------------------

_SYM_NUMBERS = (SymInt, SymFloat)


def _minmax(op: str, a: Any, b: Any):
    node = a.node
    pytype = float if (isinstance(a, (float, SymFloat)) or isinstance(b, (float, SymFloat))) \
        else int
    if not isinstance(b, (int, float, SymInt, SymFloat)):
        raise TypeError(f"sym_{op}() expects int or float arguments, got {type(b).__name__}")
    x, y = node, _node_of(node, b)
    if pytype is float:
        x = x if x.pytype is float else x.sym_float()
        y = y if y.pytype is float else y.sym_float()
    return _wrap_node(x.binary(op, y, pytype))


def _plain_number(x: Any, fn: str) -> None:
    if not isinstance(x, (int, float)):
        raise TypeError(f"{fn}() expects int, float or a symbolic number, got {type(x).__name__}")


def sym_int(a: Any) -> Union[int, SymInt]:
    """``int(a)`` that keeps a symbolic value symbolic (a SymFloat truncates)."""
    if isinstance(a, SymInt):
        return a
    if isinstance(a, SymFloat):
        return math.trunc(a)
    return int(a)


def sym_float(a: Any) -> Union[float, SymFloat]:
    """``float(a)`` that keeps a symbolic value symbolic."""
    if isinstance(a, SymFloat):
        return a
    if hasattr(a, "__sym_float__"):
        return a.__sym_float__()
    return float(a)


def sym_max(a: Any, b: Any) -> Any:
    """``max(a, b)`` without branching on ``a < b``; a float argument makes the result float."""
    if isinstance(a, _SYM_NUMBERS):
        return a.__sym_max__(b)
    if isinstance(b, _SYM_NUMBERS):
        return b.__sym_max__(a)  # max is commutative under promotion
    _plain_number(a, "sym_max")
    _plain_number(b, "sym_max")
    if isinstance(a, float) or isinstance(b, float):
        return float(max(a, b))
    return max(a, b)


def sym_min(a: Any, b: Any) -> Any:
    """``min(a, b)`` without branching on ``a < b``; a float argument makes the result float."""
    if isinstance(a, _SYM_NUMBERS):
        return a.__sym_min__(b)
    if isinstance(b, _SYM_NUMBERS):
        return b.__sym_min__(a)
    _plain_number(a, "sym_min")
    _plain_number(b, "sym_min")
    if isinstance(a, float) or isinstance(b, float):
        return float(min(a, b))
    return min(a, b)


def sym_sum(*args: Any) -> Any:
    """N-ary sum: one ``Add`` node for symbolic ints instead of a chain of ``+``.

    Accepts ``sym_sum([a, b, c])`` and ``sym_sum(a, b, c)``; plain values (or
    any float) fall back to :func:`builtins.sum`.
    """
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = tuple(args[0])
    found = None
    for a in args:
        if not isinstance(a, (int, SymInt)):
            return builtins.sum(args)
        if isinstance(a, SymInt):
            found = a.node
    if found is None:
        return builtins.sum(args)
    return SymInt(found.sym_sum(_node_of(found, a) for a in args))


def sym_not(a: Any) -> Union[bool, SymBool]:
    """Logical not that keeps a :class:`SymBool` symbolic (``not`` would guard)."""
    if hasattr(a, "__sym_not__"):
        return a.__sym_not__()
    return not a


def sym_ite(b: Any, t: Any, f: Any) -> Any:
    """``t if b else f`` that keeps a symbolic condition symbolic."""
    if not isinstance(b, (bool, SymBool)):
        raise TypeError(f"sym_ite() condition must be a bool or SymBool, got {type(b).__name__}")
    if isinstance(b, SymBool):
        return b.__sym_ite__(t, f)
    return t if b else f


# ---------------------------------------------------------------------------
# ShapeEnv
# ---------------------------------------------------------------------------


class ShapeEnv:
    """Creates symbols for dynamic values and records the guards taken on them.

    Parameters
    ----------
    specialize_zero_one : bool
        Sizes 0 and 1 stay plain ints (they change broadcasting and
        contiguity), so every size symbol is known to be >= 2.
    duck_shape : bool
        Sizes with the same value share one symbol.

    Examples
    --------
    >>> env = ShapeEnv()
    >>> n = env.create_symint(8)
    >>> n * 2 + 1
    2*s0 + 1
    >>> bool(n > 4)
    True
    >>> env.format_guards()
    ['s0 > 4']
    >>> env.check_guards({"s0": 16}), env.check_guards({"s0": 3})
    (True, False)
    """

    def __init__(self, *, specialize_zero_one: bool = True, duck_shape: bool = True) -> None:
        self.specialize_zero_one = specialize_zero_one
        self.duck_shape = duck_shape
        self.var_to_val: dict = {}
        self.guards: list = []
        self._val_to_var: dict = {}
        self._shift: dict = {}
        self._counters = {"s": 0, "u": 0, "f": 0}

    def _new_name(self, prefix: str) -> str:
        n = self._counters[prefix]
        self._counters[prefix] = n + 1
        return f"{prefix}{n}"

    def create_symbol(self, val: int, *, name: str | None = None) -> Any:
        """A sympy symbol for a size whose current value is ``val`` (an int >= 0)."""
        sp = _sp()
        if not isinstance(val, int) or isinstance(val, bool) or val < 0:
            raise ValueError(f"create_symbol() expects a non-negative int size, got {val!r}")
        if self.duck_shape and name is None and val in self._val_to_var:
            return self._val_to_var[val]
        sym = sp.Symbol(name or self._new_name("s"), integer=True, nonnegative=True)
        self.var_to_val[sym] = sp.Integer(val)
        if name is None:
            self._val_to_var.setdefault(val, sym)
        low = 2 if self.specialize_zero_one else 0
        shifted = sp.Dummy(f"{sym.name}_off", integer=True, nonnegative=True)
        self._shift[sym] = shifted + low
        return sym

    def create_symint(self, val: int, *, name: str | None = None) -> Union[int, SymInt]:
        """A :class:`SymInt` for a size ``val`` (or ``val`` itself for 0/1 when specialising)."""
        if self.specialize_zero_one and val in (0, 1) and not isinstance(val, bool):
            return val
        return SymInt(SymNode(self.create_symbol(val, name=name), self, int))

    def create_symfloat(self, val: float, *, name: str | None = None) -> SymFloat:
        """A :class:`SymFloat` backed by ``val``."""
        sp = _sp()
        sym = sp.Symbol(name or self._new_name("f"), real=True)
        self.var_to_val[sym] = sp.Float(float(val))
        return SymFloat(SymNode(sym, self, float))

    def create_unbacked_symint(self, *, size_like: bool = False) -> SymInt:
        """A :class:`SymInt` with no known value (e.g. the size of ``nonzero()``'s output).

        Guarding on it raises :class:`GuardOnDataDependentSymNode`.
        """
        sp = _sp()
        sym = sp.Symbol(self._new_name("u"), integer=True, nonnegative=size_like or None)
        if size_like:
            self._shift[sym] = sp.Dummy(f"{sym.name}_off", integer=True, nonnegative=True)
        return SymInt(SymNode(sym, self, int))

    def create_symbolic_sizes(self, sizes: Iterable[int]) -> tuple:
        """Symbolic versions of a tensor shape (0/1 kept concrete when specialising)."""
        return tuple(self.create_symint(int(s)) for s in sizes)

    def _record_guard(self, expr: Any) -> None:
        if expr not in self.guards:
            self.guards.append(expr)

    def format_guards(self) -> list[str]:
        """The recorded guards as strings, in the order they were taken."""
        return [str(g) for g in self.guards]

    def check_guards(self, bindings: Mapping[Any, Any]) -> bool:
        """Whether every recorded guard holds when the symbols take ``bindings``.

        ``bindings`` maps symbols (or their names) to concrete values; symbols
        not mentioned keep their current hint.
        """
        sp = _sp()
        by_name = {s.name: s for s in self.var_to_val}
        subs = dict(self.var_to_val)
        for k, v in bindings.items():
            sym = by_name.get(k, k) if isinstance(k, str) else k
            subs[sym] = sp.sympify(v)
        return all(_guard_holds(g, subs) for g in self.guards)

    def __repr__(self) -> str:
        return f"ShapeEnv(symbols={len(self.var_to_val)}, guards={len(self.guards)})"


def _guard_holds(guard: Any, subs: dict) -> bool:
    sp = _sp()
    if isinstance(guard, sp.Eq) and any(isinstance(a, sp.Float) for a in guard.args):
        # A float specialisation: compare as Python floats (a Rational is never
        # exactly equal to the binary Float that was recorded).
        lhs, rhs = (a.xreplace(subs) for a in guard.args)
        if lhs.free_symbols or rhs.free_symbols:
            return False
        return float(lhs) == float(rhs)
    value = guard.xreplace(subs)
    if value is sp.true or value is sp.false:
        return bool(value)
    if value.free_symbols:
        return False
    return bool(value)
