"""``ember.fx.Node``: one operation in a :class:`~ember.fx.Graph`.

A node has an opcode (``op``), a ``target`` and ``args``/``kwargs`` that may
hold other nodes; the graph keeps the def-use edges (``users``) up to date
whenever arguments change, so passes can rewrite graphs safely.
"""

from __future__ import annotations

import builtins
import operator
from typing import Any, Callable

__all__ = ["Node", "map_arg", "map_aggregate", "Argument", "Target"]

Argument = Any
Target = Any

# torch.fx's opcode for a graph input (the name is part of fx's public API)
INPUT_OP = "placeholder"
OPCODES = (INPUT_OP, "get_attr", "call_function", "call_method", "call_module", "output")

# Magic methods a Proxy records as ``operator`` calls; codegen prints them back as syntax.
BINARY_MAGIC = {
    "add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%",
    "pow": "**", "matmul": "@", "and_": "&", "or_": "|", "xor": "^", "lshift": "<<",
    "rshift": ">>", "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
}
UNARY_MAGIC = {"neg": "-", "pos": "+", "invert": "~"}


def map_aggregate(a: Argument, fn: Callable[[Argument], Argument]) -> Argument:
    """Apply ``fn`` to every leaf of ``a`` (nested tuples, lists, dicts and slices)."""
    if isinstance(a, tuple):
        t = tuple(map_aggregate(e, fn) for e in a)
        return t if not hasattr(a, "_fields") else type(a)(*t)
    if isinstance(a, list):
        return [map_aggregate(e, fn) for e in a]
    if isinstance(a, dict):
        return {k: map_aggregate(v, fn) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn),
                     map_aggregate(a.step, fn))
    return fn(a)


def map_arg(a: Argument, fn: Callable[[Node], Argument]) -> Argument:
    """Apply ``fn`` to every :class:`Node` inside ``a``."""
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


def _qualified_name(fn: Any) -> str:
    """How a call_function target prints: ``ember.relu``, ``operator.add``, ``getattr``."""
    if getattr(builtins, getattr(fn, "__name__", ""), None) is fn:
        return fn.__name__
    name = getattr(fn, "__name__", None)
    if name is None:
        return repr(fn)
    if getattr(operator, name, None) is fn:
        return f"operator.{name}"
    import sys
    ember = sys.modules.get("ember")
    if ember is not None:
        if getattr(ember, name, None) is fn:
            return f"ember.{name}"
        nnf = sys.modules.get("ember.nn.functional")
        if nnf is not None and getattr(nnf, name, None) is fn:
            return f"ember.nn.functional.{name}"
        if getattr(ember.Tensor, name, None) is fn:
            return f"ember.Tensor.{name}"
    mod = getattr(fn, "__module__", None)
    return f"{mod}.{fn.__qualname__}" if mod else name


class Node:
    """One operation of a Graph.

    Attributes
    ----------
    graph : Graph
        The owning graph.
    name : str
        Unique name in the graph (also the variable name in generated code).
    op : str
        ``placeholder``, ``get_attr``, ``call_function``, ``call_method``,
        ``call_module`` or ``output``.
    target
        The callable (``call_function``), method name, module path, attribute
        path, or argument name (``placeholder``).
    args, kwargs
        Arguments; nodes inside them are this node's inputs.
    users : dict
        Nodes that use this one (keys; values are ``None``).
    meta : dict
        Free-form metadata (``tensor_meta``, ``val``, ``stack_trace``...).
    """

    def __init__(self, graph: Any, name: str, op: str, target: Target, args: tuple,
                 kwargs: dict, return_type: Any = None) -> None:
        if op not in OPCODES:
            raise ValueError(f"Node: invalid opcode {op!r}; expected one of {OPCODES}")
        if op == "call_function" and not callable(target):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has "
                             f"type {type(target)} but a Callable is expected")
        if op in ("placeholder", "get_attr", "call_method", "call_module") and \
                not isinstance(target, str):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has "
                             f"type {type(target)} but a str is expected")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self._input_nodes: dict[Node, None] = {}
        self._args: tuple = ()
        self._kwargs: dict = {}
        self.users: dict[Node, None] = {}
        self.type = return_type
        self.meta: dict[str, Any] = {}
        self._prev = self
        self._next = self
        self._erased = False
        self.__update_args_kwargs(args, kwargs)

    # ---- arguments ------------------------------------------------------------
    @property
    def args(self) -> tuple:
        return self._args

    @args.setter
    def args(self, a: tuple) -> None:
        self.__update_args_kwargs(a, self._kwargs)

    @property
    def kwargs(self) -> dict:
        return self._kwargs

    @kwargs.setter
    def kwargs(self, k: dict) -> None:
        self.__update_args_kwargs(self._args, k)

    @property
    def all_input_nodes(self) -> list[Node]:
        """The nodes among this node's args and kwargs, in order of appearance."""
        return list(self._input_nodes)

    def __update_args_kwargs(self, new_args: tuple, new_kwargs: dict) -> None:
        for old in self._input_nodes:
            old.users.pop(self, None)
        self._input_nodes = {}

        def collect(n: Node) -> Node:
            if n.graph is not self.graph:
                raise RuntimeError(f"Argument '{n}' of Node '{self}' was used before it has "
                                   f"been defined in this graph")
            self._input_nodes.setdefault(n)
            return n
        self._args = tuple(map_arg(tuple(new_args), collect))
        self._kwargs = dict(map_arg(dict(new_kwargs), collect))
        for n in self._input_nodes:
            n.users.setdefault(self)

    def update_arg(self, idx: int, arg: Argument) -> None:
        """Set ``args[idx]`` (keeping use lists consistent)."""
        args = list(self.args)
        args[idx] = arg
        self.args = tuple(args)

    def update_kwarg(self, key: str, arg: Argument) -> None:
        """Set ``kwargs[key]``."""
        self.kwargs = {**self.kwargs, key: arg}

    def replace_input_with(self, old_input: Node, new_input: Node) -> None:
        """Replace every use of ``old_input`` among this node's arguments."""
        def swap(n: Node) -> Node:
            return new_input if n is old_input else n
        self.__update_args_kwargs(map_arg(self.args, swap), map_arg(self.kwargs, swap))

    def replace_all_uses_with(self, replace_with: Node,
                              delete_user_cb: Callable[[Node], bool] = lambda user: True,
                              *, propagate_meta: bool = False) -> list[Node]:
        """Make every user of this node use ``replace_with``; returns the changed users."""
        if propagate_meta:
            if replace_with.meta:
                raise RuntimeError("Called node.replace_all_uses_with(replace_with, "
                                   "propagate_meta=True), but replace_with already has .meta "
                                   "keys")
            replace_with.meta.update(self.meta)
        changed = []
        for user in list(self.users):
            if user is replace_with or not delete_user_cb(user):
                continue
            user.replace_input_with(self, replace_with)
            changed.append(user)
        return changed

    # ---- list links -------------------------------------------------------------
    @property
    def next(self) -> Node:
        return self._next

    @property
    def prev(self) -> Node:
        return self._prev

    def prepend(self, x: Node) -> None:
        """Move ``x`` just before this node."""
        if x is self:
            return
        x._remove_from_list()
        p = self._prev
        p._next, x._prev, x._next, self._prev = x, p, self, x

    def append(self, x: Node) -> None:
        """Move ``x`` just after this node."""
        self._next.prepend(x)

    def _remove_from_list(self) -> None:
        p, n = self._prev, self._next
        p._next, n._prev = n, p
        self._prev = self._next = self

    # ---- queries -------------------------------------------------------------------
    def is_impure(self) -> bool:
        """Whether dead-code elimination must keep this node (I/O, in-place or random ops)."""
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_function":
            name = getattr(self.target, "__name__", "")
            return name.endswith("_") and not name.endswith("__") or \
                name in _IMPURE_FUNCTIONS or getattr(self.target, "_is_impure", False)
        if self.op == "call_method":
            return self.target.endswith("_") and not self.target.endswith("__") or \
                self.target in _IMPURE_FUNCTIONS
        if self.op == "call_module":
            mod = self.graph.owning_module
            if mod is None:
                return False
            sub = mod.get_submodule(self.target)
            return getattr(sub, "_is_impure", False)
        return False

    @property
    def stack_trace(self) -> str | None:
        return self.meta.get("stack_trace")

    @stack_trace.setter
    def stack_trace(self, trace: str | None) -> None:
        self.meta["stack_trace"] = trace

    def format_node(self, placeholder_names: list | None = None,
                    maybe_return_typename: list | None = None) -> str | None:
        """The node as one line of ``str(graph)``, in torch.fx's format."""
        if self.op == "placeholder":
            arg = self.target
            if placeholder_names is not None:
                placeholder_names.append(arg)
                return None
            default = f"(default={self.args[0]})" if self.args else ""
            return (f"%{self.name} : [num_users={len(self.users)}] = "
                    f"placeholder[target={self.target}]{default}")
        if self.op == "get_attr":
            return (f"%{self.name} : [num_users={len(self.users)}] = "
                    f"get_attr[target={self.target}]")
        if self.op == "output":
            return f"return {self.args[0]}"
        target = _qualified_name(self.target) if callable(self.target) else self.target
        return (f"%{self.name} : [num_users={len(self.users)}] = {self.op}[target={target}]"
                f"(args = {_format_arg(self.args)}, kwargs = {_format_arg(self.kwargs)})")

    def __repr__(self) -> str:
        return self.name


_IMPURE_FUNCTIONS = frozenset({
    "rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "dropout",
    "bernoulli", "multinomial", "normal", "randperm", "setitem", "_assert", "print",
    "_assert_specialized", "_set_grad_enabled",
})


def _format_arg(arg: Any) -> str:
    if isinstance(arg, Node):
        return "%" + arg.name
    if isinstance(arg, tuple):
        items = ", ".join(_format_arg(a) for a in arg)
        return f"({items},)" if len(arg) == 1 else f"({items})"
    if isinstance(arg, list):
        return "[" + ", ".join(_format_arg(a) for a in arg) + "]"
    if isinstance(arg, dict):
        return "{" + ", ".join(f"{k}: {_format_arg(v)}" for k, v in arg.items()) + "}"
    return str(arg)
