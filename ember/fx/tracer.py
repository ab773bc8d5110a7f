"""``ember.fx.Tracer`` and ``symbolic_trace``: record a module or function into a Graph by
running it on :class:`~ember.fx.Proxy` values.

While tracing, ``nn.Module.__call__`` and ``__getattr__`` are patched (so
library modules become ``call_module`` nodes and parameters ``get_attr``
nodes), and the public functions of ``ember`` and ``ember.nn.functional``
are wrapped so a call with a Proxy argument records a ``call_function`` node
(ember has no ``__torch_function__`` protocol; patching is how torch.fx
handles ``math`` and ``wrap``-ped functions too).
"""

from __future__ import annotations

import builtins
import functools
import inspect
import sys
import types
from typing import Any, Callable

from ember.fx.graph import Graph
from ember.fx.graph_module import GraphModule
from ember.fx.node import Argument, Node, map_aggregate
from ember.fx.proxy import Proxy, TraceError

__all__ = ["Tracer", "symbolic_trace", "wrap", "PH"]

# (id(globals), name) -> globals: functions ``wrap`` asked to record as leaves
_wrapped: dict[tuple[int, str], dict] = {}
_FUNCTION_MODULES = ("ember", "ember.nn.functional", "ember.special", "ember.linalg",
                     "ember.fft")


class _PH:
    """A placeholder marker for ``concrete_args``: that input stays symbolic."""

    def __repr__(self) -> str:
        return "PH"


PH = _PH()


def _assert_specialized(value: Any, expected: Any, name: str) -> None:
    """Guard of a ``concrete_args`` input: the traced graph is only valid for that value."""
    if value is not expected and value != expected:
        raise AssertionError(f"{name} has been specialized to have value {expected!r} but got "
                             f"another value {value!r}")


_assert_specialized._is_impure = True  # type: ignore[attr-defined]


def wrap(fn_or_name: str | Callable) -> str | Callable:
    """Record calls of a module-level function as ``call_function`` nodes instead of
    tracing through it (call at module scope: ``ember.fx.wrap("my_fn")``).

    Parameters
    ----------
    fn_or_name : str or callable
        The function, or its name in the calling module's globals (a builtin
        such as ``"len"`` works too).
    """
    if callable(fn_or_name):
        name = fn_or_name.__name__
    elif isinstance(fn_or_name, str):
        name = fn_or_name
    else:
        raise RuntimeError("Unsupported type for global function! Must be either a callable "
                           "or string name")
    frame = inspect.currentframe()
    caller = frame.f_back if frame is not None else None
    if caller is None or caller.f_code.co_name != "<module>":
        raise RuntimeError("wrap must be called at the top level of a module")
    g = caller.f_globals
    _wrapped[(id(g), name)] = g
    return fn_or_name


def _find_proxy(args: tuple, kwargs: dict) -> Proxy | None:
    found: list[Proxy] = []

    def look(a: Any) -> Any:
        if isinstance(a, Proxy) and not found:
            found.append(a)
        return a
    map_aggregate(args, look)
    map_aggregate(kwargs, look)
    return found[0] if found else None


def _recording(orig: Callable) -> Callable:
    @functools.wraps(orig)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        proxy = _find_proxy(args, kwargs)
        if proxy is not None:
            return proxy.tracer.create_proxy("call_function", orig, args, kwargs)
        return orig(*args, **kwargs)
    wrapper.__fx_orig__ = orig  # type: ignore[attr-defined]
    return wrapper


class _Patcher:
    def __init__(self) -> None:
        self.undo: list[tuple[Any, str, Any, bool]] = []
        self.seen_globals: set[int] = set()

    def setattr(self, obj: Any, name: str, value: Any) -> None:
        self.undo.append((obj, name, getattr(obj, name), True))
        setattr(obj, name, value)

    def setitem(self, d: dict, name: str, value: Any) -> None:
        self.undo.append((d, name, d.get(name, _MISSING), False))
        d[name] = value

    def restore(self) -> None:
        for obj, name, old, is_attr in reversed(self.undo):
            if is_attr:
                setattr(obj, name, old)
            elif old is _MISSING:
                obj.pop(name, None)
            else:
                obj[name] = old
        self.undo.clear()


_MISSING = object()


class Tracer:
    """Turns a module or function into a :class:`Graph` by running it on Proxies.

    Parameters
    ----------
    autowrap_modules : tuple of modules
        Modules whose public functions are recorded as leaves when called with
        a Proxy (default: ``math``).
    autowrap_functions : tuple of callables
        More functions to record as leaves.

    Override :meth:`is_leaf_module` to choose which submodules stay opaque
    (``call_module``) and which are traced through.
    """

    def __init__(self, autowrap_modules: tuple = (), autowrap_functions: tuple = ()) -> None:
        import math
        self._autowrap_modules = tuple(autowrap_modules) or (math,)
        self._autowrap_functions = tuple(autowrap_functions)
        self.graph: Graph | None = None
        self.root: Any = None
        self.tensor_constants: dict[str, Any] = {}

    # ---- hooks users override -----------------------------------------------------
    def is_leaf_module(self, m: Any, module_qualified_name: str) -> bool:
        """Library modules (``ember.nn``) are leaves, except ``Sequential``."""
        from ember.nn import Sequential
        return type(m).__module__.startswith("ember.nn") and not isinstance(m, Sequential)

    def path_of_module(self, mod: Any) -> str:
        """The qualified name of ``mod`` inside the root module."""
        path = self._module_paths.get(id(mod))
        if path is None:
            raise NameError("module is not installed as a submodule")
        return path

    def call_module(self, m: Any, forward: Callable, args: tuple, kwargs: dict) -> Any:
        """A leaf module becomes one ``call_module`` node; others are traced through."""
        name = self.path_of_module(m)
        if not self.is_leaf_module(m, name):
            self._patch_globals(getattr(type(m).forward, "__globals__", None))
            return forward(*args, **kwargs)
        return self.create_proxy("call_module", name, args, kwargs)

    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: dict) -> Any:
        """Module attribute access: parameters of the root become ``get_attr`` proxies."""
        from ember.nn.parameter import Parameter
        if isinstance(attr_val, Parameter):
            name = self._tensor_paths.get(id(attr_val))
            if name is not None:
                if name not in parameter_proxy_cache:
                    parameter_proxy_cache[name] = self.create_proxy("get_attr", name, (), {})
                return parameter_proxy_cache[name]
        return attr_val

    def to_bool(self, obj: Proxy) -> bool:
        raise TraceError("symbolically traced variables cannot be used as inputs to control "
                         "flow")

    def iter(self, obj: Proxy) -> Any:
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the "
                         "Proxy is used in a loop or as a *args or **kwargs function argument. "
                         "See the ember.fx docs for a more detailed explanation of what types "
                         "of control flow can be traced, and check out the Proxy docstring for "
                         "help troubleshooting Proxy iteration errors")

    def keys(self, obj: Proxy) -> Any:
        return self.create_proxy("call_method", "keys", (obj,), {})

    # ---- graph building ----------------------------------------------------------------
    def create_node(self, kind: str, target: Any, args: tuple, kwargs: dict,
                    name: str | None = None, type_expr: Any = None) -> Node:
        return self.graph.create_node(kind, target, args, kwargs, name, type_expr)

    def proxy(self, node: Node) -> Proxy:
        return Proxy(node, self)

    def create_proxy(self, kind: str, target: Any, args: tuple, kwargs: dict,
                     name: str | None = None, type_expr: Any = None) -> Proxy:
        """Record one operation and return the Proxy of its result."""
        a = self.create_arg(tuple(args))
        k = self.create_arg(dict(kwargs))
        return self.proxy(self.create_node(kind, target, a, k, name, type_expr))

    def create_arg(self, a: Any) -> Argument:
        """An argument as a graph value: Proxies become their nodes, parameters and
        buffers ``get_attr`` nodes, other tensors ``_tensor_constant`` attributes."""
        from ember._C.core import TensorBase
        from ember.nn import Module

        def conv(x: Any) -> Any:
            if isinstance(x, Proxy):
                return x.node
            if isinstance(x, TensorBase):
                name = self._tensor_paths.get(id(x))
                if name is None:
                    name = f"_tensor_constant{len(self.tensor_constants)}"
                    self.tensor_constants[name] = x
                    self._tensor_paths[id(x)] = name
                return self.create_node("get_attr", name, (), {})
            if isinstance(x, Module):
                raise TraceError(f"symbolic_trace: a module ({type(x).__name__}) cannot be an "
                                 f"argument of an operation")
            return x
        return map_aggregate(a, conv)

    # ---- tracing -------------------------------------------------------------------------
    def trace(self, root: Any, concrete_args: dict | None = None) -> Graph:
        """Trace ``root`` (an ``nn.Module`` or a function) and return the Graph."""
        from ember.nn import Module
        if isinstance(root, Module):
            self.root = root
            fn = type(root).forward
        elif callable(root):
            self.root = Module()
            fn = root
        else:
            raise TypeError(f"symbolic_trace: expected an nn.Module or a function, got "
                            f"{type(root).__name__}")
        self.graph = Graph(tracer_cls=type(self))
        self.tensor_constants = {}
        self._module_paths = {id(m): n for n, m in self.root.named_modules()}
        self._tensor_paths = {id(b): n for n, b in self.root.named_buffers()}
        self._tensor_paths.update({id(p): n for n, p in self.root.named_parameters()})
        args = self._create_args_for_root(fn, isinstance(root, Module), concrete_args or {})
        patcher = _Patcher()
        self._patcher = patcher
        try:
            self._patch_all(patcher, getattr(fn, "__globals__", None))
            result = fn(*args)
        finally:
            patcher.restore()
        ret = getattr(fn, "__annotations__", {}).get("return")
        self.create_node("output", "output", (self.create_arg(result),), {}, type_expr=ret)
        return self.graph

    def _create_args_for_root(self, fn: Callable, is_module: bool, concrete: dict) -> list:
        sig = inspect.signature(fn)
        params = list(sig.parameters.values())
        if is_module:
            params = params[1:]
        unknown = set(concrete) - {p.name for p in params}
        if unknown:
            raise TraceError(f"concrete_args names {sorted(unknown)} are not parameters of "
                             f"{getattr(fn, '__qualname__', fn)}")
        args: list[Any] = [self.root] if is_module else []
        for p in params:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise TraceError(f"symbolic_trace: {p} (variadic arguments) cannot be traced; "
                                 f"give the function fixed parameters")
            if p.kind == p.KEYWORD_ONLY:
                raise TraceError(f"symbolic_trace: keyword-only parameter {p.name!r} cannot be "
                                 f"traced; make it positional or pass it in concrete_args")
            if p.name in concrete and concrete[p.name] is not PH:
                value = concrete[p.name]
                node = self.graph.placeholder(p.name, default_value=value)
                if isinstance(value, (bool, int, float, str, type(None))):
                    self.graph.call_function(_assert_specialized, (node, value, p.name))
                args.append(value)
                continue
            default = p.default
            node = self.graph.placeholder(p.name, default_value=default)
            args.append(self.proxy(node))
        return args

    def _patch_all(self, patcher: _Patcher, fn_globals: dict | None) -> None:
        from ember.nn import Module
        tracer = self
        orig_call = Module.__call__
        orig_getattr = Module.__getattr__
        cache: dict[str, Proxy] = {}

        def module_call(mod: Any, *args: Any, **kwargs: Any) -> Any:
            def forward(*a: Any, **k: Any) -> Any:
                return orig_call(mod, *a, **k)
            return tracer.call_module(mod, forward, args, kwargs)

        def module_getattr(mod: Any, attr: str) -> Any:
            return tracer.getattr(attr, orig_getattr(mod, attr), cache)

        patcher.setattr(Module, "__call__", module_call)
        patcher.setattr(Module, "__getattr__", module_getattr)
        self._originals: dict[int, Callable] = {}
        for modname in _FUNCTION_MODULES:
            mod = sys.modules.get(modname)
            if mod is None:
                continue
            for name, fn in list(vars(mod).items()):
                if name.startswith("_") or isinstance(fn, type) or not callable(fn) or \
                        isinstance(fn, types.ModuleType):
                    continue
                w = self._originals.get(id(fn))
                if w is None:
                    w = _recording(fn)
                    self._originals[id(fn)] = w
                patcher.setattr(mod, name, w)
        for m in self._autowrap_modules:
            for name, fn in list(vars(m).items()):
                if not name.startswith("_") and callable(fn) and not isinstance(fn, type):
                    self._originals.setdefault(id(fn), _recording(fn))
        for fn in self._autowrap_functions:
            self._originals.setdefault(id(fn), _recording(fn))
        for (_, name), g in list(_wrapped.items()):
            orig = g.get(name, getattr(builtins, name, None))
            if orig is not None:
                patcher.setitem(g, name, _recording(orig))
        self._patch_globals(fn_globals)

    def _patch_globals(self, g: dict | None) -> None:
        """Wrap the ember functions a traced function's module imported by name."""
        if g is None or id(g) in self._patcher.seen_globals:
            return
        self._patcher.seen_globals.add(id(g))
        for name, value in list(g.items()):
            w = self._originals.get(id(value)) if callable(value) else None
            if w is not None and value is not w:
                self._patcher.setitem(g, name, w)


def symbolic_trace(root: Any, concrete_args: dict | None = None) -> GraphModule:
    """Trace ``root`` (an ``nn.Module`` or function) into a :class:`GraphModule`.

    Parameters
    ----------
    root : nn.Module or callable
        What to trace.
    concrete_args : dict, optional
        Inputs to specialise on (their values are fixed in the graph: the
        way to trace through Python control flow on them).

    Returns
    -------
    GraphModule
        ``gm(*args)`` computes what ``root(*args)`` does; ``gm.graph`` is the
        recorded graph and ``gm.code`` its Python source.

    Raises
    ------
    TraceError
        On control flow or iteration that depends on a traced input.
    """
    from ember.nn import Module
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = type(root).__name__ if isinstance(root, Module) else root.__name__
    holder = tracer.root
    for k, v in tracer.tensor_constants.items():
        object.__setattr__(holder, k, v)
    try:
        return GraphModule(holder, graph, name)
    finally:
        for k in tracer.tensor_constants:
            object.__delattr__(holder, k)
