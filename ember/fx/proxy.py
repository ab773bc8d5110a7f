"""``ember.fx.Proxy``: the stand-in value that records operations during symbolic tracing."""

from __future__ import annotations

import dis
import inspect
import operator
import sys
from bisect import bisect_left
from typing import Any, Iterator

from ember.fx.node import Node

__all__ = ["Proxy", "Attribute", "TraceError"]


class TraceError(ValueError):
    """Symbolic tracing met something it cannot record (control flow on a Proxy...)."""


class Proxy:
    """A value flowing through symbolic tracing: every operation on it (operators,
    method calls, ``ember`` functions, leaf modules) becomes a :class:`Node`.

    Control flow that depends on a Proxy (``if x.sum() > 0:``, ``for v in x``)
    cannot be recorded and raises :class:`TraceError`; pass such inputs as
    ``concrete_args`` or move the logic into a ``wrap``-ped function.
    """

    def __init__(self, node: Node, tracer: Any = None) -> None:
        self.tracer = tracer if tracer is not None else node.graph._tracer_cls
        self.node = node

    def __repr__(self) -> str:
        return f"Proxy({self.node.name})"

    def __getattr__(self, k: str) -> Attribute:
        if k.startswith("__") and k.endswith("__"):
            raise AttributeError(k)
        return Attribute(self, k)

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        return self.tracer.create_proxy("call_method", "__call__", (self,) + args, kwargs)

    def __iter__(self) -> Iterator[Proxy]:
        # ``a, b = proxy`` is fine: the caller's bytecode says how many values it unpacks
        frame = inspect.currentframe()
        caller = frame.f_back if frame is not None else None
        if caller is not None:
            insts = list(dis.get_instructions(caller.f_code))
            if sys.version_info >= (3, 11):
                idx = bisect_left(insts, caller.f_lasti, key=lambda x: x.offset)
            else:
                idx = caller.f_lasti // 2
            if idx < len(insts) and insts[idx].opname == "UNPACK_SEQUENCE":
                return (self[i] for i in range(insts[idx].argval))
        return self.tracer.iter(self)

    def __bool__(self) -> bool:
        return self.tracer.to_bool(self)

    def __len__(self) -> int:
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want "
                           "this call to be recorded, please call ember.fx.wrap('len') at "
                           "module scope")

    def keys(self) -> Proxy:
        return self.tracer.keys(self)

    def __deepcopy__(self, memo: dict) -> Proxy:
        return self


class Attribute(Proxy):
    """``proxy.name``: a method call when called, a ``getattr`` node when used as a value."""

    def __init__(self, root: Proxy, attr: str) -> None:
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node: Node | None = None

    @property
    def node(self) -> Node:  # type: ignore[override]
        # created lazily: most attributes are method calls, which need no getattr node
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr,
                                                  (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        return self.tracer.create_proxy("call_method", self.attr, (self.root,) + args, kwargs)


_MAGIC = ("add", "sub", "mul", "floordiv", "truediv", "mod", "pow", "lshift", "rshift", "and_",
          "or_", "xor", "getitem", "matmul", "eq", "ne", "lt", "gt", "le", "ge", "pos", "neg",
          "invert", "abs")
_REFLECTABLE = ("add", "sub", "mul", "floordiv", "truediv", "mod", "pow", "lshift", "rshift",
                "and_", "or_", "xor", "matmul")


def _magic_name(m: str) -> str:
    return f"__{m.strip('_')}__"


def _install_magic() -> None:
    for m in _MAGIC:
        fn = getattr(operator, m)

        def impl(*args: Any, _fn: Any = fn) -> Proxy:
            tracer = args[0].tracer
            return tracer.create_proxy("call_function", _fn, args, {})
        impl.__name__ = _magic_name(m)
        setattr(Proxy, impl.__name__, impl)
    for m in _REFLECTABLE:
        fn = getattr(operator, m)

        def rimpl(self: Proxy, rhs: Any, _fn: Any = fn) -> Proxy:
            return self.tracer.create_proxy("call_function", _fn, (rhs, self), {})
        rimpl.__name__ = "__r" + m.strip("_") + "__"
        setattr(Proxy, rimpl.__name__, rimpl)


_install_magic()
