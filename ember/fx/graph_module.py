"""``ember.fx.GraphModule``: an ``nn.Module`` whose ``forward`` is generated from a Graph."""

from __future__ import annotations

import copy
import itertools
import linecache
from typing import Any

from ember.fx.graph import _ILLEGAL, Graph
from ember.nn.modules.module import Module

__all__ = ["GraphModule"]

_counter = itertools.count()


def _exec_src(src: str, globals_: dict) -> Any:
    """Compile generated code under a unique file name kept in linecache, so
    tracebacks and inspect show the generated lines."""
    key = f"<eval_with_key>.{next(_counter)}"
    linecache.cache[key] = (len(src), None, src.splitlines(True), key)
    g = dict(globals_)
    exec(compile(src, key, "exec"), g)
    return g["forward"]


def _copy_attr(src: Module, dst: Module, target: str) -> None:
    """Copy ``src.<target>`` (a dotted path) to the same path under ``dst``."""
    *prefix, field = target.split(".")
    for atom in prefix:
        f = getattr(src, atom)
        t = getattr(dst, atom, None)
        if t is f:
            return
        if t is None:
            t = Module()
            setattr(dst, atom, t)
        src, dst = f, t
    orig = getattr(src, field)
    if isinstance(orig, Module) or field in getattr(src, "_parameters", {}):
        setattr(dst, field, orig)
    elif field in getattr(src, "_buffers", {}):
        dst.register_buffer(field, orig, persistent=field not in
                            getattr(src, "_non_persistent_buffers_set", ()))
    else:
        setattr(dst, field, orig)


def _assign_attr(obj: Any, dst: Module, target: str) -> None:
    *prefix, field = target.split(".")
    for atom in prefix:
        t = getattr(dst, atom, None)
        if t is None:
            t = Module()
            setattr(dst, atom, t)
        dst = t
    from ember._C.core import TensorBase
    from ember.nn.parameter import Parameter
    if isinstance(obj, TensorBase) and not isinstance(obj, Parameter):
        dst.register_buffer(field, obj)
    else:
        setattr(dst, field, obj)


class GraphModule(Module):
    """A module built from a root module (or dict of attributes) and a Graph.

    Parameters
    ----------
    root : nn.Module or dict
        Where ``get_attr`` and ``call_module`` targets are copied from
        (submodules, parameters and buffers keep their qualified names, so
        ``state_dict()`` keys match the traced module's).
    graph : Graph
        The graph to generate ``forward`` from.
    class_name : str
        The name shown by ``repr`` and ``print_readable``.

    Notes
    -----
    After editing ``gm.graph`` call :meth:`recompile` to regenerate ``forward``.
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> GraphModule:
        # Each instance gets its own class: forward is generated per graph and
        # set on the class, as Python looks special methods up on the type.
        class GraphModuleImpl(cls):  # type: ignore[valid-type, misc]
            pass
        GraphModuleImpl.__module__ = cls.__module__
        return super().__new__(GraphModuleImpl)

    def __init__(self, root: Module | dict, graph: Graph,
                 class_name: str = "GraphModule") -> None:
        super().__init__()
        self.__class__.__name__ = class_name
        self.__class__.__qualname__ = class_name
        if isinstance(root, Module):
            if hasattr(root, "training"):
                self.training = root.training
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise RuntimeError(f"Node {node} referenced target {node.target} but "
                                           f"that target was not provided in ``root``!")
                    _assign_attr(root[node.target], self, node.target)
        else:
            raise RuntimeError(f"Unsupported type {type(root).__name__} passed for root!")
        self.graph = graph
        self.meta: dict[str, Any] = {}

    @property
    def graph(self) -> Graph:
        """The graph ``forward`` is generated from (assigning recompiles)."""
        return self.__dict__["_graph"]

    @graph.setter
    def graph(self, g: Graph) -> None:
        if not isinstance(g, Graph):
            raise TypeError(f"GraphModule.graph must be an ember.fx.Graph, got "
                            f"{type(g).__name__}")
        self.__dict__["_graph"] = g
        g.owning_module = self
        self.recompile()

    @property
    def code(self) -> str:
        """The Python source of the generated ``forward``."""
        return self._code

    def recompile(self) -> Any:
        """Regenerate ``forward`` from ``self.graph`` (after editing the graph)."""
        pc = self._graph.python_code(root_module="self")
        self.__dict__["_code"] = pc.src
        cls = type(self)
        cls.forward = _exec_src(pc.src, pc.globals)
        return pc

    def print_readable(self, print_output: bool = True, include_stride: bool = False,
                       include_device: bool = False, colored: bool = False) -> str:
        """The module as a class definition (nested GraphModules included); printed
        unless ``print_output`` is False.  Placeholders carry ``"f32[2, 3]"``
        annotations where ShapeProp or capture recorded shapes."""
        return self._readable(type(self).__name__, print_output)

    def _readable(self, name: str, print_output: bool) -> str:
        src = self._graph.python_code(root_module="self", verbose=True).src
        body = [f"class {name}(ember.nn.Module):"]
        for sub_name, sub in self.named_children():
            if isinstance(sub, GraphModule):
                inner = sub._readable(_ILLEGAL.sub("_", sub_name), False)
                body += ["    " + line for line in inner.splitlines()]
        body += ["    " + line if line.strip() else "" for line in src.strip("\n").splitlines()]
        out = "\n".join(body).rstrip() + "\n"
        if print_output:
            print(out)
        return out

    def __deepcopy__(self, memo: dict) -> GraphModule:
        fake = Module()
        fake.__dict__ = copy.deepcopy(self.__dict__, memo)
        res = GraphModule(fake, fake.__dict__["_graph"], type(self).__name__)
        res.meta = copy.deepcopy(getattr(self, "meta", {}), memo)
        return res

    def __copy__(self) -> GraphModule:
        res = GraphModule(self, self.graph, type(self).__name__)
        res.meta = dict(getattr(self, "meta", {}))
        return res

    def __str__(self) -> str:
        return super().__str__() + "\n\n" + self._code

    def add_submodule(self, target: str, m: Module) -> bool:
        """Install ``m`` at the dotted path ``target``, creating parents as needed."""
        *prefix, field = target.split(".")
        mod: Module = self
        for item in prefix:
            sub = getattr(mod, item, None)
            if sub is None:
                sub = Module()
                setattr(mod, item, sub)
            if not isinstance(sub, Module):
                return False
            mod = sub
        setattr(mod, field, m)
        return True

    def delete_submodule(self, target: str) -> bool:
        """Remove the submodule at ``target``; False if there was none."""
        *path, field = target.split(".")
        mod: Any = self
        for item in path:
            mod = getattr(mod, item, None)
            if not isinstance(mod, Module):
                return False
        if field not in mod._modules:
            return False
        del mod._modules[field]
        return True
