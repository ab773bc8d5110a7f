"""Write ``ember/__init__.pyi``: the typed face of ``import ember`` for mypy and IDEs.

ember's tensor API is bound at import time from the op table (``ember/_ops.py``)
onto a Cython class, so a type checker reading the sources sees neither
``Tensor``'s methods nor most ``ember.*`` functions.  This script imports ember
and writes a stub from what is really there: every public name, every
``Tensor`` method and property with its signature (``inspect.signature``;
Cython's ``embedsignature``/binding make native functions introspectable).
Parameters are typed ``Any``; return types are ``Tensor`` for ops and methods
that return one tensor, and spelled out below for the ones that do not.

    python tools/gen_stubs.py            # rewrite the stub
    python tools/gen_stubs.py --check    # exit 1 if the stub is stale (CI)
"""
from __future__ import annotations

import argparse
import builtins
import importlib.util
import inspect
import os
import sys
import types

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STUB = os.path.join(ROOT, "ember", "__init__.pyi")
sys.path.insert(0, ROOT)

import ember  # noqa: E402
from ember import _ops  # noqa: E402

# Names whose result is not one tensor: several tensors (named tuples, lists), or
# a tensor or a tuple depending on the arguments.
ANY_RESULT = {
    "aminmax", "broadcast_tensors", "chunk", "cummax", "cummin", "frexp", "geqrf",
    "kthvalue", "lu", "lu_unpack", "max", "median", "meshgrid", "min", "mode", "nanmedian",
    "nonzero", "qr", "slogdet", "sort", "split", "split_with_sizes", "std_mean", "svd",
    "tensor_split", "topk", "triangular_solve", "unbind", "unique", "unique_consecutive",
    "var_mean", "where", "atleast_1d", "atleast_2d", "atleast_3d", "histogram",
    "hsplit", "vsplit", "dsplit", "item", "tolist", "numpy", "size", "stride", "storage",
    "untyped_storage", "type", "register_hook", "register_post_accumulate_grad_hook",
    "__array__", "__dlpack__", "__dlpack_device__", "__reduce_ex__", "__reduce__",
    "__deepcopy__", "__array_wrap__", "__torch_function__", "native_dropout", "__format__",
    "__getstate__", "__setstate__", "__array_priority__", "allclose", "equal",
}
BOOL_RESULT = {"allclose", "equal", "__bool__", "__contains__", "is_nonzero", "is_conj", "is_neg"}
INT_RESULT = {"dim", "ndimension", "numel", "nelement", "element_size", "storage_offset",
              "data_ptr", "get_device", "__len__", "__int__", "__index__", "__hash__"}
NONE_RESULT = {"backward", "retain_grad", "__setitem__", "__init__", "__delitem__",
               "record_stream"}
# Creation functions not in the op table.
TENSOR_FUNCTIONS = {"tensor", "as_tensor", "from_numpy", "from_dlpack", "empty", "zeros",
                    "ones", "full", "empty_like", "zeros_like", "ones_like", "full_like"}
# Dunders of classes worth declaring (the others come from ``object``).
DUNDERS = {
    "__init__", "__call__", "__enter__", "__exit__", "__getitem__", "__setitem__",
    "__delitem__", "__len__", "__iter__", "__contains__", "__bool__", "__float__",
    "__int__", "__index__", "__complex__", "__neg__", "__pos__", "__abs__", "__invert__",
    "__add__", "__radd__", "__iadd__", "__sub__", "__rsub__", "__isub__", "__mul__",
    "__rmul__", "__imul__", "__truediv__", "__rtruediv__", "__itruediv__", "__floordiv__",
    "__rfloordiv__", "__ifloordiv__", "__mod__", "__rmod__", "__imod__", "__pow__",
    "__rpow__", "__ipow__", "__matmul__", "__rmatmul__", "__imatmul__", "__and__",
    "__rand__", "__iand__", "__or__", "__ror__", "__ior__", "__xor__", "__rxor__",
    "__ixor__", "__lshift__", "__rlshift__", "__ilshift__", "__rshift__", "__rrshift__",
    "__irshift__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__",
}
# Object-returning dunders that differ from the class's own type.
DUNDER_RESULT = {"__enter__": "Any", "__exit__": "Any", "__call__": "Any",
                 "__float__": "_builtins.float", "__complex__": "_builtins.complex"}
# Types of Tensor's properties (the rest are Any).
TENSOR_PROPS = {
    "shape": "Size", "dtype": "dtype", "device": "device", "ndim": "_builtins.int",
    "requires_grad": "_builtins.bool", "is_leaf": "_builtins.bool", "grad": "Tensor | None",
    "data": "Tensor", "T": "Tensor", "mT": "Tensor", "H": "Tensor", "mH": "Tensor",
    "is_cuda": "_builtins.bool", "is_cpu": "_builtins.bool", "is_meta": "_builtins.bool",
    "itemsize": "_builtins.int", "nbytes": "_builtins.int", "retains_grad": "_builtins.bool",
    "grad_fn": "Any",
}
# Underscored names that are documented API (for backend plugins).
PRIVATE_API = ["_register_device_module"]
SIMPLE_ANNOTATIONS = {"None": "None", "bool": "_builtins.bool", "int": "_builtins.int",
                      "str": "_builtins.str", "float": "_builtins.float", "Any": "Any"}


def _op_names() -> set[str]:
    names = set()
    for name, variants, aliases in _ops.OPS:
        for n in (name,) + tuple(aliases):
            names.add(n)
            if "i" in variants or "I" in variants:
                names.add(n + "_")
    return names


OPS = _op_names()


def _result(name: str, obj: object, *, method: bool, owner: str = "Tensor") -> str:
    base = name.rstrip("_") if not name.startswith("__") else name
    if name in BOOL_RESULT or (name.startswith("is_") and owner == "Tensor"):
        return "_builtins.bool"
    if name in INT_RESULT:
        return "_builtins.int"
    if name in NONE_RESULT:
        return "None"
    if name in DUNDER_RESULT:
        return DUNDER_RESULT[name]
    if name == "__iter__":
        return f"Iterator[{owner}]" if owner == "Tensor" else "Iterator[Any]"
    if name == "__repr__" or name == "__str__":
        return "_builtins.str"
    if name in ANY_RESULT or base in ANY_RESULT:
        return "Any"
    if owner == "Tensor" and method:
        return "Tensor"
    if name in OPS or name in TENSOR_FUNCTIONS:
        return "Tensor"
    ann = getattr(obj, "__annotations__", {}).get("return") if hasattr(obj, "__annotations__") \
        else None
    if isinstance(ann, str) and ann in SIMPLE_ANNOTATIONS:
        return SIMPLE_ANNOTATIONS[ann]
    if ann in (None.__class__, None) and "return" in getattr(obj, "__annotations__", {}):
        return "None"
    return "Any"


def _params(obj: object, *, method: bool) -> str | None:
    """The parameter list, every parameter typed Any and every default ``...``."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    out = []
    params = list(sig.parameters.values())
    seen_kwonly = False
    for i, p in enumerate(params):
        if method and i == 0 and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            out.append("self")
            continue
        if p.kind == p.VAR_POSITIONAL:
            out.append(f"*{p.name}: Any")
            seen_kwonly = True
            continue
        if p.kind == p.VAR_KEYWORD:
            out.append(f"**{p.name}: Any")
            continue
        if p.kind == p.KEYWORD_ONLY and not seen_kwonly:
            out.append("*")
            seen_kwonly = True
        out.append(f"{p.name}: Any" + (" = ..." if p.default is not p.empty else ""))
        if p.kind == p.POSITIONAL_ONLY and (i + 1 == len(params) or
                                            params[i + 1].kind != p.POSITIONAL_ONLY):
            out.append("/")
    if method and (not params or params[0].kind in (inspect.Parameter.KEYWORD_ONLY,
                                                    inspect.Parameter.VAR_POSITIONAL,
                                                    inspect.Parameter.VAR_KEYWORD)):
        out.insert(0, "self")
    # "/" straight after self only: drop it (self is positional anyway)
    if len(out) >= 2 and out[0] == "self" and out[1] == "/":
        del out[1]
    return ", ".join(out)


_OPERATORS = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or",
              "xor", "lshift", "rshift")
BINARY = {f"__{p}{op}__" for op in _OPERATORS for p in ("", "r", "i")} | {
    "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"}


def _def(name: str, obj: object, *, method: bool, owner: str = "Tensor",
         indent: str = "") -> list[str]:
    if owner == "Tensor" and name in BINARY:
        # operators take one operand (a tensor or a number); the keyword options of
        # the op (alpha=, out=) are not reachable through ``a + b``
        ignore = "  # type: ignore[override]" if name in ("__eq__", "__ne__") else ""
        return [f"{indent}def {name}(self, other: Any) -> Tensor: ...{ignore}"]
    params = _params(obj, method=method)
    if params is None:
        params = "self, *args: Any, **kwargs: Any" if method else "*args: Any, **kwargs: Any"
    result = _result(name, obj, method=method, owner=owner)
    return [f"{indent}def {name}({params}) -> {result}: ..."]


def _class(name: str, cls: type) -> list[str]:
    bases = [b for b in cls.__bases__ if b is not object]
    base_txt = ""
    if bases and bases[0] in (tuple,):
        base_txt = "(Tuple[_builtins.int, ...])" if name == "Size" else "(Tuple[Any, ...])"
    elif bases and getattr(builtins, bases[0].__name__, None) is bases[0]:
        base_txt = f"(_builtins.{bases[0].__name__})"
    lines = [f"class {name}{base_txt}:"]
    body = []
    for attr in sorted(dir(cls)):
        if attr.startswith("_") and attr not in DUNDERS:
            continue
        if attr.startswith("__") and not any(attr in vars(k) for k in cls.__mro__[:-1]
                                             if k not in (tuple, int, float, str)):
            continue
        static = inspect.getattr_static(cls, attr)
        if isinstance(static, (property, types.GetSetDescriptorType, types.MemberDescriptorType)):
            typ = TENSOR_PROPS.get(attr, "Any") if name == "Tensor" else "Any"
            body.append(f"    {attr}: {typ}")
        elif isinstance(static, staticmethod):
            body.append("    @staticmethod")
            body += _def(attr, static.__func__, method=False, owner=name, indent="    ")
        elif isinstance(static, (classmethod, types.ClassMethodDescriptorType)):
            func = getattr(cls, attr)
            body.append("    @classmethod")
            sig = _params(func, method=False)
            params = "cls" + (", " + sig if sig else "") if sig is not None else \
                "cls, *args: Any, **kwargs: Any"
            body.append(f"    def {attr}({params}) -> Any: ...")
        elif callable(static):
            body += _def(attr, getattr(cls, attr), method=True, owner=name, indent="    ")
        else:
            body.append(f"    {attr}: Any")
    if not any(b.lstrip().startswith("def __init__(") for b in body):
        # built by __new__ (Cython, tuple subclasses): accept what the constructor accepts
        body.insert(0, "    def __init__(self, *args: Any, **kwargs: Any) -> None: ...")
    return lines + body


def generate() -> str:
    lines = [
        '"""Type stub of ``import ember`` (generated by tools/gen_stubs.py: do not edit)."""',
        "import builtins as _builtins",
        "from typing import Any, Iterator, Tuple",
        "",
    ]
    # lazy submodules are named, not imported (their files may be absent from a build)
    modules = [n for n in sorted(ember._LAZY_SUBMODULES)
               if importlib.util.find_spec(f"ember.{n}") is not None]
    names = list(dict.fromkeys(list(ember.__all__) + sorted(ember._LAZY_ATTRS)
                               + PRIVATE_API))
    values, classes, functions = [], [], []
    for n in names:
        if n.startswith("_") and n not in ("__version__", *PRIVATE_API):
            continue
        obj = getattr(ember, n)
        if isinstance(obj, types.ModuleType):
            modules.append(n)
        elif isinstance(obj, type):
            classes.append(n)
        elif callable(obj) and not isinstance(obj, ember.dtype):
            functions.append(n)
        else:
            values.append(n)
    for n in sorted(modules):
        lines.append(f"from ember import {n} as {n}")
    emitted = set()
    for n in classes:
        cls = getattr(ember, n)
        if cls.__name__ != n and cls.__name__ in classes and getattr(ember, cls.__name__) is cls:
            continue  # an alias, written after its class
        lines += [""] + _class(n, cls) + [""]
        emitted.add(n)
    for n in classes:
        if n not in emitted:
            lines.append(f"{n} = {getattr(ember, n).__name__}")
    lines.append("")
    for n in values:
        obj = getattr(ember, n)
        if isinstance(obj, ember.dtype):
            lines.append(f"{n}: dtype")
        elif n == "__version__":
            lines.append("__version__: _builtins.str")
        else:
            typ = type(obj).__name__
            lines.append(f"{n}: {typ if typ in classes else 'Any'}")
    lines.append("")
    for n in functions:
        lines += _def(n, getattr(ember, n), method=False, owner="")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="fail if the stub is stale")
    args = p.parse_args(argv)
    text = generate()
    if args.check:
        try:
            with open(STUB) as f:
                current = f.read()
        except FileNotFoundError:
            current = ""
        if current != text:
            print(f"{os.path.relpath(STUB, ROOT)} is stale: run python tools/gen_stubs.py")
            return 1
        return 0
    with open(STUB, "w") as f:
        f.write(text)
    print(f"wrote {os.path.relpath(STUB, ROOT)} ({text.count(chr(10))} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
