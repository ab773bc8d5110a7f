"""``ember.fx.Graph``: an ordered list of :class:`~ember.fx.Node` and its Python codegen.

The graph is a doubly linked list (so passes can insert and erase in O(1))
with a name space that keeps node names unique and valid Python, and
:meth:`Graph.python_code` turns it into the source of a ``forward`` method
in the style torch.fx prints.
"""

from __future__ import annotations

import builtins
import inspect
import keyword
import math
import operator
import re
from collections import defaultdict
from typing import Any, Callable, Iterator, NamedTuple

from ember.fx.node import (
    BINARY_MAGIC,
    UNARY_MAGIC,
    Argument,
    Node,
    Target,
    _qualified_name,
    map_arg,
)

__all__ = ["Graph", "PythonCode"]

_ILLEGAL = re.compile(r"[^0-9a-zA-Z_]+")
_SUFFIX = re.compile(r"(.*)_(\d+)$")


def _snake_case(s: str) -> str:
    """``MyModule`` -> ``my_module`` (how torch.fx names module calls)."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", s).lower()


class _Namespace:
    """Unique, legal Python identifiers for nodes."""

    def __init__(self) -> None:
        self._used: set[str] = set()
        self._base_count: dict[str, int] = defaultdict(int)

    def create_name(self, candidate: str, obj: Any = None) -> str:
        candidate = _ILLEGAL.sub("_", candidate) or "_unnamed"
        if candidate[0].isdigit():
            candidate = f"_{candidate}"
        m = _SUFFIX.match(candidate)
        if m is None:
            base, num = candidate, None
        else:
            base, num = m.group(1), int(m.group(2))
        candidate = base if num is None else f"{base}_{num}"
        if not num:
            num = self._base_count[base]
        while candidate in self._used or self._illegal(candidate, obj):
            num += 1
            candidate = f"{base}_{num}"
        self._used.add(candidate)
        self._base_count[base] = num
        return candidate

    def associate(self, name: str) -> None:
        self._used.add(name)

    @staticmethod
    def _illegal(name: str, obj: Any) -> bool:
        if keyword.iskeyword(name) or name in ("self", "ember", "operator"):
            return True
        if name in builtins.__dict__:
            return obj is not builtins.__dict__[name]
        return False


class PythonCode(NamedTuple):
    """The generated source of ``forward`` and the globals it needs."""

    src: str
    globals: dict[str, Any]


class _InsertPoint:
    def __init__(self, graph: Graph, fn: Callable[[Node], None]) -> None:
        self.graph = graph
        self.orig, graph._insert = graph._insert, fn

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: Any) -> None:
        self.graph._insert = self.orig


class _NodeList:
    def __init__(self, graph: Graph, reverse: bool = False) -> None:
        self.graph = graph
        self.reverse = reverse

    def __len__(self) -> int:
        return self.graph._len

    def __iter__(self) -> Iterator[Node]:
        root = self.graph._root
        cur = root._prev if self.reverse else root._next
        while cur is not root:
            nxt = cur._prev if self.reverse else cur._next
            if not cur._erased:
                yield cur
            cur = nxt

    def __reversed__(self) -> Iterator[Node]:
        return iter(_NodeList(self.graph, not self.reverse))


class Graph:
    """The IR of ``ember.fx``: placeholders, operations, one output.

    Parameters
    ----------
    owning_module : GraphModule, optional
        The module whose ``forward`` this graph is (set by GraphModule).

    Examples
    --------
    >>> import operator
    >>> g = Graph()
    >>> x = g.placeholder("x")
    >>> y = g.call_function(operator.add, (x, 1))
    >>> _ = g.output(y)
    >>> print(g)
    graph(x):
        %add : [num_users=1] = call_function[target=operator.add](args = (%x, 1), kwargs = {})
        return add
    """

    def __init__(self, owning_module: Any = None, tracer_cls: type | None = None) -> None:
        self._root = Node.__new__(Node)
        self._root._prev = self._root._next = self._root
        self._root._erased = False
        self._root.name = "_root"
        self._root.graph = self
        self._len = 0
        self._ns = _Namespace()
        self._insert = self._root.prepend
        self.owning_module = owning_module
        self._tracer_cls = tracer_cls

    # ---- building -------------------------------------------------------------
    @property
    def nodes(self) -> _NodeList:
        """The nodes in order (a live view; iterate it, reverse it, take its len)."""
        return _NodeList(self)

    def find_nodes(self, *, op: str, target: Target = None) -> list[Node]:
        """The nodes with opcode ``op`` (and ``target``, when given)."""
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    def create_node(self, op: str, target: Target, args: tuple | None = None,
                    kwargs: dict | None = None, name: str | None = None,
                    type_expr: Any = None) -> Node:
        """Create a node and insert it at the current insertion point."""
        candidate = name if name is not None else self._target_to_str(target)
        name = self._ns.create_name(candidate, None)
        n = Node(self, name, op, target, tuple(args or ()), dict(kwargs or {}), type_expr)
        self._insert(n)
        self._len += 1
        return n

    @staticmethod
    def _target_to_str(target: Target) -> str:
        if callable(target):
            op = getattr(target, "__name__", type(target).__name__)
        else:
            op = str(target)
            if op.startswith("__") and op.endswith("__"):
                op = op[2:-2]
        return _snake_case(op)

    def placeholder(self, name: str, type_expr: Any = None,
                    default_value: Any = inspect.Signature.empty) -> Node:
        """An input of the graph (``default_value``: the argument's default)."""
        args = () if default_value is inspect.Signature.empty else (default_value,)
        return self.create_node("placeholder", name, args, type_expr=type_expr)

    def get_attr(self, qualified_name: str, type_expr: Any = None) -> Node:
        """Read a parameter, buffer or attribute of the owning module."""
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name: str, args: tuple | None = None,
                    kwargs: dict | None = None, type_expr: Any = None) -> Node:
        """Call the submodule at ``module_name``."""
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name: str, args: tuple | None = None,
                    kwargs: dict | None = None, type_expr: Any = None) -> Node:
        """Call ``args[0].method_name(*args[1:], **kwargs)``."""
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function: Callable, args: tuple | None = None,
                      kwargs: dict | None = None, type_expr: Any = None) -> Node:
        """Call a free function."""
        return self.create_node("call_function", the_function, args, kwargs,
                                type_expr=type_expr)

    def output(self, result: Argument, type_expr: Any = None) -> Node:
        """The graph's return value."""
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    def inserting_before(self, n: Node | None = None) -> _InsertPoint:
        """``with graph.inserting_before(n):`` new nodes go before ``n`` (None: the start)."""
        if n is None:
            return self.inserting_after(self._root)
        return _InsertPoint(self, n.prepend)

    def inserting_after(self, n: Node | None = None) -> _InsertPoint:
        """``with graph.inserting_after(n):`` new nodes go after ``n`` (None: the end)."""
        if n is None:
            return self.inserting_before(self._root)
        return _InsertPoint(self, n.append)

    def erase_node(self, to_erase: Node) -> None:
        """Remove a node that has no users."""
        if to_erase.users:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had "
                               f"{len(to_erase.users)} users in the graph: {to_erase.users}!")
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            return
        to_erase._remove_from_list()
        to_erase._erased = True
        self._len -= 1
        to_erase.args, to_erase.kwargs = (), {}

    def node_copy(self, node: Node, arg_transform: Callable[[Node], Argument] = lambda x: x
                  ) -> Node:
        """Copy ``node`` (from any graph) into this one, mapping its inputs."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        name = node.target if node.op == "placeholder" and not node.target.startswith("*") \
            else node.name
        result = self.create_node(node.op, node.target, args, kwargs, name, node.type)
        result.meta = dict(node.meta)
        return result

    def graph_copy(self, g: Graph, val_map: dict, return_output_node: bool = False) -> Any:
        """Copy every node of ``g`` (but its output) in; ``val_map`` maps old to new nodes.
        Returns the mapped output value."""
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                out = map_arg(node.args[0], lambda n: val_map[n])
                return (out, node) if return_output_node else out
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def __deepcopy__(self, memo: dict | None = None) -> Graph:
        # a copy of the nodes only: the owning module is not part of a graph's value
        g = Graph(tracer_cls=self._tracer_cls)
        val_map: dict[Node, Node] = {}
        res = g.graph_copy(self, val_map, return_output_node=True)
        if res is not None:
            out, node = res
            g.output(out, node.type).meta = dict(node.meta)
        return g

    def eliminate_dead_code(self) -> bool:
        """Erase nodes without users that have no side effects; True if any went."""
        changed = False
        for node in reversed(self.nodes):
            if not node.users and not node.is_impure():
                self.erase_node(node)
                changed = True
        return changed

    def lint(self) -> None:
        """Check the graph is well formed: inputs defined before use, one output, valid
        targets (raise RuntimeError otherwise)."""
        seen: set[Node] = set()
        names: set[str] = set()
        outputs = 0
        for node in self.nodes:
            if node.graph is not self:
                raise RuntimeError(f"Node {node} does not belong to this Graph!")
            if node.name in names:
                raise RuntimeError(f"Node redefined name {node.name}!")
            names.add(node.name)
            for inp in node.all_input_nodes:
                if inp not in seen:
                    raise RuntimeError(f"Argument '{inp}' of Node '{node}' was used before it "
                                       f"has been defined! Please check that Nodes in the graph "
                                       f"are topologically ordered\n{self}")
            for user in node.users:
                if user._erased or user.graph is not self:
                    raise RuntimeError(f"Node {node} has a stale user {user}")
            if node.op == "output":
                outputs += 1
            seen.add(node)
            mod = self.owning_module
            if mod is not None and node.op in ("get_attr", "call_module"):
                obj = mod
                for atom in node.target.split("."):
                    if not hasattr(obj, atom):
                        raise RuntimeError(f"Node {node} target {node.target} references "
                                           f"nonexistent attribute {atom} of {obj}")
                    obj = getattr(obj, atom)
        if outputs > 1:
            raise RuntimeError("Graph has more than one output node")

    # ---- printing ---------------------------------------------------------------
    def __str__(self) -> str:
        placeholder_names: list[str] = []
        lines = []
        for node in self.nodes:
            s = node.format_node(placeholder_names)
            if s is not None:
                lines.append("    " + s)
        return f"graph({', '.join(placeholder_names)}):\n" + "\n".join(lines)

    def print_tabular(self) -> None:
        """Print opcode, name, target, args and kwargs of every node as a table."""
        rows = [["opcode", "name", "target", "args", "kwargs"]]
        for n in self.nodes:
            target = _qualified_name(n.target) if callable(n.target) else n.target
            rows.append([n.op, n.name, str(target), str(n.args), str(n.kwargs)])
        widths = [max(len(r[i]) for r in rows) for i in range(5)]
        for k, r in enumerate(rows):
            print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
            if k == 0:
                print("  ".join("-" * w for w in widths))

    # ---- codegen ------------------------------------------------------------------
    def python_code(self, root_module: str = "self", *, verbose: bool = False) -> PythonCode:
        """Generate the source of ``def forward(self, ...)`` and its globals.

        With ``verbose`` placeholders carry shape/dtype annotations from
        ``node.meta["tensor_meta"]`` (as ``print_readable`` shows them).
        """
        return _CodeGen(self, root_module, verbose).generate()


def _resolves_to(qualname: str, fn: Any) -> bool:
    """Whether the dotted name, looked up from its top module, gives ``fn`` back."""
    import sys
    parts = qualname.split(".")
    obj = sys.modules.get(parts[0])
    try:
        for atom in parts[1:]:
            obj = getattr(obj, atom)
    except AttributeError:
        return False
    return obj is fn or (callable(obj) and obj == fn)


_DTYPE_ABBR = {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16",
               "int64": "i64", "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8",
               "bool": "b8", "complex64": "c64", "complex128": "c128"}


def _annotation(node: Node) -> str:
    tm = node.meta.get("tensor_meta")
    if tm is None or not hasattr(tm, "shape"):
        return ""
    dt = str(tm.dtype).rsplit(".", 1)[-1]
    return f': "{_DTYPE_ABBR.get(dt, dt)}{list(tm.shape)}"'


class _CodeGen:
    def __init__(self, graph: Graph, root: str, verbose: bool) -> None:
        self.graph = graph
        self.root = root
        self.verbose = verbose
        self.globals: dict[str, Any] = {"inf": math.inf, "nan": math.nan}
        self.names = {n.name for n in graph.nodes}
        self._ids: dict[int, str] = {}

    def add_global(self, hint: str, obj: Any) -> str:
        if id(obj) in self._ids:
            return self._ids[id(obj)]
        name = _ILLEGAL.sub("_", hint) or "_global"
        base, i = name, 0
        while name in self.names or name in self.globals or keyword.iskeyword(name) or \
                (name in builtins.__dict__ and builtins.__dict__[name] is not obj):
            i += 1
            name = f"{base}_{i}"
        self.globals[name] = obj
        self._ids[id(obj)] = name
        return name

    def module_ref(self, modname: str) -> str:
        import importlib
        return self.add_global(modname, importlib.import_module(modname))

    def fn_ref(self, fn: Callable) -> str:
        q = _qualified_name(fn)
        head, _, rest = q.partition(".")
        if not rest:
            if getattr(builtins, q, None) is fn:
                return q
            return self.add_global(q, fn)
        if head in ("ember", "operator") and _resolves_to(q, fn):
            return f"{self.module_ref(head)}.{rest}"
        return self.add_global(getattr(fn, "__name__", "fn"), fn)

    def fmt(self, a: Any) -> str:
        if isinstance(a, Node):
            return a.name
        if isinstance(a, tuple):
            if hasattr(a, "_fields"):
                return self.add_global(type(a).__name__, type(a)) + \
                    "(" + ", ".join(self.fmt(x) for x in a) + ")"
            items = ", ".join(self.fmt(x) for x in a)
            return f"({items},)" if len(a) == 1 else f"({items})"
        if isinstance(a, list):
            return "[" + ", ".join(self.fmt(x) for x in a) + "]"
        if isinstance(a, dict):
            return "{" + ", ".join(f"{k!r}: {self.fmt(v)}" for k, v in a.items()) + "}"
        if isinstance(a, slice):
            return f"slice({self.fmt(a.start)}, {self.fmt(a.stop)}, {self.fmt(a.step)})"
        if a is None or a is Ellipsis or isinstance(a, (bool, int, str)):
            return repr(a)
        if isinstance(a, float):
            return repr(a)     # inf / nan resolve through the globals
        if type(a).__name__ in ("dtype", "DType") and str(a).startswith("ember."):
            return f"{self.module_ref('ember')}.{str(a)[6:]}"
        if type(a).__name__ in ("device", "Device"):
            return f"{self.module_ref('ember')}.device({str(a)!r})"
        return self.add_global(f"_{_snake_case(type(a).__name__)}_constant", a)

    def args_str(self, args: tuple, kwargs: dict) -> str:
        parts = [self.fmt(a) for a in args]
        parts += [f"{k} = {self.fmt(v)}" for k, v in kwargs.items()]
        return ", ".join(parts)

    def target_ref(self, target: str) -> str:
        ref = self.root
        for atom in target.split("."):
            ref = f"{ref}.{atom}" if atom.isidentifier() and not keyword.iskeyword(atom) \
                else f'getattr({ref}, "{atom}")'
        return ref

    def generate(self) -> PythonCode:
        nodes = list(self.graph.nodes)
        # the last line that uses each value: free it there (like torch.fx does)
        last_use: dict[Node, Node] = {}
        for n in nodes:
            for inp in n.all_input_nodes:
                last_use[inp] = n
        frees: dict[Node, list[Node]] = defaultdict(list)
        for v, user in last_use.items():
            frees[user].append(v)
        params, body = [], []
        last_trace = None
        for n in nodes:
            if n.op == "placeholder":
                ann = _annotation(n) if self.verbose else ""
                p = n.target if n.target.startswith("*") else n.name
                p += ann
                if n.args:
                    p += f" = {self.fmt(n.args[0])}"
                params.append(p)
                continue
            line = self.emit(n)
            if n.op != "output":
                free = [v.name for v in frees.get(n, ()) if v.op != "output"]
                if not n.users and n.op != "output":
                    free.append(n.name)
                if free:
                    line += ";  " + " = ".join(free) + " = None"
            trace = n.meta.get("stack_trace") if self.verbose else None
            if trace and trace != last_trace:   # one comment per source line, as torch does
                body.append(f"# {trace.strip().splitlines()[-1].strip()}")
            last_trace = trace or last_trace
            body.append(line)
        if not any(n.op == "output" for n in nodes):
            body.append("return None")
        src = f"\n\n\ndef forward({', '.join([self.root] + params)}):\n" + \
            "\n".join("    " + b for b in body) + "\n    "
        return PythonCode(src, self.globals)

    def emit(self, n: Node) -> str:
        a, k = n.args, n.kwargs
        if n.op == "get_attr":
            return f"{n.name} = {self.target_ref(n.target)}"
        if n.op == "call_module":
            return f"{n.name} = {self.target_ref(n.target)}({self.args_str(a, k)})"
        if n.op == "call_method":
            return f"{n.name} = {self.fmt(a[0])}.{n.target}({self.args_str(a[1:], k)})"
        if n.op == "output":
            return f"return {self.fmt(a[0])}"
        fn = n.target
        name = getattr(fn, "__name__", "")
        if getattr(operator, name, None) is fn and not k:
            if name in BINARY_MAGIC and len(a) == 2:
                return f"{n.name} = {self.fmt(a[0])} {BINARY_MAGIC[name]} {self.fmt(a[1])}"
            if name in UNARY_MAGIC and len(a) == 1:
                return f"{n.name} = {UNARY_MAGIC[name]}{self.fmt(a[0])}"
            if name == "getitem" and len(a) == 2:
                return f"{n.name} = {self.fmt(a[0])}[{self.fmt(a[1])}]"
        if fn is getattr and len(a) == 2 and not k and isinstance(a[1], str) and \
                a[1].isidentifier():
            return f"{n.name} = {self.fmt(a[0])}.{a[1]}"
        return f"{n.name} = {self.fn_ref(fn)}({self.args_str(a, k)})"
