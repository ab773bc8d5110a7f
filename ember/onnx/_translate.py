"""Translate an ember ExportedProgram's graph into an ONNX ModelProto.

The captured graph records the example's concrete sizes, so each value also
carries which of its dims hold a dynamic axis (``dyn``: the symbol names per
dim); reshapes use it to compute those sizes in the graph from the inputs.
"""

from __future__ import annotations

import math
import operator
from typing import Any, Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from ember import Tensor
from ember.fx.node import Node
from ember.onnx._symbolic import SymExpr

_INT_MAX = 2 ** 63 - 1

_DTYPES = {
    "float32": TensorProto.FLOAT, "float64": TensorProto.DOUBLE,
    "float16": TensorProto.FLOAT16, "bfloat16": TensorProto.BFLOAT16,
    "int64": TensorProto.INT64, "int32": TensorProto.INT32, "int16": TensorProto.INT16,
    "int8": TensorProto.INT8, "uint8": TensorProto.UINT8, "bool": TensorProto.BOOL,
}


def _dtype_name(dtype: Any) -> str:
    return str(dtype).rsplit(".", 1)[-1]


def _onnx_dtype(dtype: Any) -> int:
    name = _dtype_name(dtype)
    if name not in _DTYPES:
        raise RuntimeError(f"ember.onnx.export(): dtype {name} has no ONNX equivalent")
    return _DTYPES[name]


class _Value:
    """An ONNX tensor name with its example shape, dtype and dynamic dims."""

    def __init__(self, name: str, shape: tuple, dtype: Any, dyn: list) -> None:
        self.name, self.shape, self.dtype, self.dyn = name, tuple(shape), dtype, list(dyn)


class _Builder:
    def __init__(self, opset: int) -> None:
        self.opset = opset
        self.nodes: list = []
        self.initializers: list = []
        self.sym_sizes: dict[str, int] = {}
        self.sym_source: dict[str, tuple[str, int]] = {}
        self._sym_dims: dict[str, str] = {}
        self._count = 0
        # node -> output dims as ints and SymExprs, when sizes were traced (_symbolic.py)
        self.shapes: dict | None = None

    def fresh(self, base: str) -> str:
        self._count += 1
        return f"{base}__{self._count}"

    def op(self, op_type: str, inputs: list[str], base: str, **attrs: Any) -> str:
        out = self.fresh(base)
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=out, **attrs))
        return out

    def const(self, array: np.ndarray, base: str = "const") -> str:
        name = self.fresh(base)
        self.initializers.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def sym_dim(self, sym: str) -> str:
        """A 1-element int64 tensor holding the run-time size of axis ``sym``."""
        if sym not in self._sym_dims:
            name, axis = self.sym_source[sym]
            self._sym_dims[sym] = self.op("Shape", [name], "size_" + sym, start=axis,
                                          end=axis + 1)
        return self._sym_dims[sym]

    def ints(self, values: list[int]) -> str:
        return self.const(np.asarray(values, dtype=np.int64), "ints")


def _shape_tensor(b: _Builder, dims: list) -> str:
    """An int64 1-D tensor of ``dims`` (ints, and SymExprs computed at run time)."""
    if all(isinstance(d, int) for d in dims):
        return b.ints(list(dims))
    return b.op("Concat", [b.ints([d]) if isinstance(d, int) else d.emit(b) for d in dims],
                "shape", axis=0)


def _scalar_of(b: _Builder, v: Any, dtype: Any) -> str:
    """A 0-d tensor of ``dtype`` holding ``v`` (a number or a SymExpr)."""
    if isinstance(v, SymExpr):
        t = b.op("Reshape", [v.emit(b), b.ints([])], "size")
        return b.op("Cast", [t], "size", to=_onnx_dtype(dtype))
    np_dtype = helper.tensor_dtype_to_np_dtype(_onnx_dtype(dtype))
    return b.const(np.asarray(v, dtype=np_dtype), "scalar")


def _traced_shape(b: _Builder, node: Any) -> list | None:
    """The node's output dims with traced sizes, or None when sizes were not traced."""
    return None if b.shapes is None else b.shapes.get(node)


def _dyn_of(dims: list) -> list:
    return [_Dim.of({s: 1 for s in d.syms}) if isinstance(d, SymExpr) else frozenset()
            for d in dims]


def _node_meta(node: Any) -> tuple[tuple, Any]:
    tm = node.meta.get("tensor_meta")
    if tm is None:
        raise RuntimeError(f"ember.onnx.export(): node {node.name} has no tensor metadata")
    return tuple(tm.shape), tm.dtype


def _norm(dim: int, ndim: int) -> int:
    return dim + ndim if dim < 0 else dim


class _Dim(frozenset):
    """The dynamic-axis symbols in one dim; ``inners[sym]`` is the static factor
    of the dim's size below ``sym`` (a dim of size ``batch * heads`` has
    ``inners["batch"] == heads``)."""

    inners: dict = {}

    @classmethod
    def of(cls, inners: dict) -> _Dim:
        d = cls(inners)
        d.inners = dict(inners)
        return d


def _broadcast_dyn(*vals: _Value) -> list:
    ndim = max(len(v.dyn) for v in vals)
    out: list = [frozenset() for _ in range(ndim)]
    for v in vals:
        for i, d in enumerate(v.dyn):
            k = ndim - len(v.dyn) + i
            if d and not out[k]:
                out[k] = d
    return out


def _reshape_spec(b: _Builder, x: _Value, shape: tuple, opname: str) -> tuple[list, list]:
    """The ONNX Reshape target for ``x`` -> ``shape`` and the result's dynamic dims.

    Each dynamic axis lands in the output dim that holds its elements in
    row-major order; that dim's size is computed in the graph from the input
    that carries the axis (an int entry is static, a str one a 1-element tensor).
    """
    target: list[int] = list(shape)
    where: dict[str, tuple[int, int]] = {}
    for i, syms in enumerate(x.dyn):
        for sym in syms:
            # the elements the symbol spans, in row-major order
            inner = getattr(syms, "inners", {}).get(sym, 1) * math.prod(x.shape[i + 1:])
            outer = inner * b.sym_sizes[sym]
            j = next((j for j in range(len(shape))
                      if shape[j] > 1 and math.prod(shape[j + 1:]) <= inner
                      and math.prod(shape[j:]) >= outer), None)
            if (j is None or inner % math.prod(shape[j + 1:])
                    or math.prod(shape[j:]) % outer):
                raise RuntimeError(f"ember.onnx.export(): {opname} from {x.shape} to "
                                   f"{shape} splits the dynamic axis '{sym}'")
            where[sym] = (i, j, inner // math.prod(shape[j + 1:]))
    dyn: list = [frozenset() for _ in shape]
    for j in sorted({j for _, j, _ in where.values()}):
        inners = {sym: f for sym, (_, jj, f) in where.items() if jj == j}
        dyn[j] = _Dim.of(inners)
        # the size at run time: the symbols' sizes read from the graph inputs
        size = b.ints([shape[j] // math.prod(b.sym_sizes[sym] for sym in inners)])
        for sym in sorted(inners):
            size = b.op("Mul", [size, b.sym_dim(sym)], "dim")
        target[j] = size
    return target, dyn


# ---- translations: fn(builder, node, args, kwargs) -> _Value ------------------------------

def _same(b: _Builder, node: Any, x: _Value, name: str, dyn: list | None = None) -> _Value:
    shape, dtype = _node_meta(node)
    return _Value(name, shape, dtype, x.dyn if dyn is None else dyn)


def _as_input(b: _Builder, v: Any, like: _Value) -> _Value:
    if isinstance(v, _Value):
        return v
    if isinstance(v, SymExpr):
        return _Value(_scalar_of(b, v, like.dtype), (), like.dtype, [])
    arr = np.asarray(v, dtype=onnx.helper.tensor_dtype_to_np_dtype(_onnx_dtype(like.dtype)))
    return _Value(b.const(arr, "scalar"), (), like.dtype, [])


def _binary(op_type: str, reverse: bool = False) -> Callable:
    def run(b: _Builder, node: Any, args: tuple, kwargs: dict) -> _Value:
        x, y = args[0], args[1]
        like = x if isinstance(x, _Value) else y
        x, y = _as_input(b, x, like), _as_input(b, y, like)
        alpha = kwargs.get("alpha", 1)
        if alpha != 1:
            y = _Value(b.op("Mul", [y.name, _as_input(b, alpha, y).name], "alpha"),
                       y.shape, y.dtype, y.dyn)
        if reverse:
            x, y = y, x
        return _same(b, node, x, b.op(op_type, [x.name, y.name], node.name),
                     _broadcast_dyn(x, y))
    return run


def _unary(op_type: str) -> Callable:
    def run(b: _Builder, node: Any, args: tuple, kwargs: dict) -> _Value:
        return _same(b, node, args[0], b.op(op_type, [args[0].name], node.name))
    return run


def _identity(b: _Builder, node: Any, args: tuple, kwargs: dict) -> _Value:
    return args[0]


def _dropout(b: _Builder, node: Any, args: tuple, kwargs: dict) -> _Value:
    training = kwargs.get("training", args[2] if len(args) > 2 else True)
    p = kwargs.get("p", args[1] if len(args) > 1 else 0.5)
    if training and p > 0:
        raise RuntimeError("ember.onnx.export(): dropout in training mode has no ONNX "
                           "inference equivalent; call model.eval() before exporting")
    return args[0]


def _gelu(b: _Builder, node: Any, args: tuple, kwargs: dict) -> _Value:
    x = args[0]
    approximate = kwargs.get("approximate", args[1] if len(args) > 1 else "none")
    c = lambda v: _as_input(b, v, x).name  # noqa: E731
    if approximate == "tanh":
        x3 = b.op("Mul", [x.name, b.op("Mul", [x.name, x.name], "sq")], "cube")
        inner = b.op("Mul", [b.op("Add", [x.name, b.op("Mul", [x3, c(0.044715)], "t")], "t"),
                             c(math.sqrt(2.0 / math.pi))], "t")
        gate = b.op("Add", [b.op("Tanh", [inner], "t"), c(1.0)], "t")
    else:
        gate = b.op("Add", [b.op("Erf", [b.op("Div", [x.name, c(math.sqrt(2.0))], "t")], "t"),
                            c(1.0)], "t")
    out = b.op("Mul", [b.op("Mul", [x.name, c(0.5)], "t"), gate], node.name)
    return _same(b, node, x, out)


def _softmax(op_type: str) -> Callable:
    def run(b: _Builder, node: Any, args: tuple, kwargs: dict) -> _Value:
        x = args[0]
        dim = kwargs.get("dim", args[1] if len(args) > 1 else None)
        if dim is None:
            raise RuntimeError(f"ember.onnx.export(): {op_type.lower()} needs an explicit dim")
        src = x.name
        dtype = kwargs.get("dtype")
        if dtype is not None:
            src = b.op("Cast", [src], "cast", to=_onnx_dtype(dtype))
        return _same(b, node, x, b.op(op_type, [src], node.name, axis=int(dim)))
    return run


def _matmul(b: _Builder, node: Any, args: tuple, kwargs: dict) -> _Value:
    x, y = args[0], args[1]
    shape, dtype = _node_meta(node)
    if len(x.dyn) >= 2 and len(y.dyn) >= 2:
        dyn = _broadcast_dyn(_Value("", (), None, x.dyn[:-2]), _Value("", (), None, y.dyn[:-2]))
        dyn = dyn + [x.dyn[-2], y.dyn[-1]]
    elif len(y.dyn) >= 2:
        dyn = y.dyn[:-2] + [y.dyn[-1]]
    else:
        dyn = x.dyn[:-1]
    return _Value(b.op("MatMul", [x.name, y.name], node.name), shape, dtype, dyn)


def _linear(b: _Builder, node: Any, args: tuple, kwargs: dict) -> _Value:
    x, w = args[0], args[1]
    bias = kwargs.get("bias", args[2] if len(args) > 2 else None)
    wt = b.op("Transpose", [w.name], "wt", perm=[1, 0])
    out = b.op("MatMul", [x.name, wt], node.name if bias is None else "mm")
    if bias is not None:
        out = b.op("Add", [out, bias.name], node.name)
    return _same(b, node, x, out, x.dyn[:-1] + [set()])


def _addmm(b: _Builder, node: Any, args: tuple, kwargs: dict) -> _Value:
    bias, x, y = args[0], args[1], args[2]
    beta, alpha = kwargs.get("beta", 1), kwargs.get("alpha", 1)
    prod = b.op("MatMul", [x.name, y.name], "mm")
    if alpha != 1:
        prod = b.op("Mul", [prod, _as_input(b, alpha, x).name], "alpha")
    bname = bias.name
    if beta != 1:
        bname = b.op("Mul", [bname, _as_input(b, beta, bias).name], "beta")
    return _same(b, node, x, b.op("Add", [prod, bname], node.name), [x.dyn[0], y.dyn[1]])


def _pair(v: Any, n: int = 2) -> list[int]:
    return [int(i) for i in v] if isinstance(v, (tuple, list)) else [int(v)] * n


def _conv(b: _Builder, node: Any, args: tuple, kwargs: dict) -> _Value:
    names = ("input", "weight", "bias", "stride", "padding", "dilation", "groups")
    defaults = (None, None, None, 1, 0, 1, 1)
    a = {k: kwargs.get(k, args[i] if i < len(args) else defaults[i])
         for i, k in enumerate(names)}
    x, w = a["input"], a["weight"]
    nsp = len(w.shape) - 2
    dil = _pair(a["dilation"], nsp)
    pad = a["padding"]
    if pad == "valid":
        pads = [0] * nsp * 2
    elif pad == "same":
        total = [d * (k - 1) for d, k in zip(dil, w.shape[2:])]
        pads = [t // 2 for t in total] + [t - t // 2 for t in total]
    else:
        p = _pair(pad, nsp)
        pads = p + p
    inputs = [x.name, w.name] + ([a["bias"].name] if a["bias"] is not None else [])
    out = b.op("Conv", inputs, node.name, strides=_pair(a["stride"], nsp), pads=pads,
               dilations=dil, group=int(a["groups"]), kernel_shape=list(w.shape[2:]))
    return _same(b, node, x, out, [x.dyn[0]] + [set() for _ in range(nsp + 1)])


def _conv_transpose(b: _Builder, node: Any, args: tuple, kwargs: dict) -> _Value:
    names = ("input", "weight", "bias", "stride", "padding", "output_padding", "groups",
             "dilation")
    defaults = (None, None, None, 1, 0, 0, 1, 1)
    a = {k: kwargs.get(k, args[i] if i < len(args) else defaults[i])
         for i, k in enumerate(names)}
    x, w = a["input"], a["weight"]
    nsp = len(w.shape) - 2
    p = _pair(a["padding"], nsp)
    inputs = [x.name, w.name] + ([a["bias"].name] if a["bias"] is not None else [])
    out = b.op("ConvTranspose", inputs, node.name, strides=_pair(a["stride"], nsp),
               pads=p + p, output_padding=_pair(a["output_padding"], nsp),
               dilations=_pair(a["dilation"], nsp), group=int(a["groups"]),
               kernel_shape=list(w.shape[2:]))
    return _same(b, node, x, out, [x.dyn[0]] + [set() for _ in range(nsp + 1)])


def _select(b: _Builder, node: Any, args: tuple, kwargs: dict) -> _Value:
    x = args[0]
    dim = _norm(int(kwargs.get("dim", args[1])), len(x.shape))
    index = kwargs.get("index", args[2])
    if isinstance(index, int) and index < 0:
        index = index + x.shape[dim]
    idx = b.op("Reshape", [_shape_tensor(b, [index]), b.ints([])], "index")
    out = b.op("Gather", [x.name, idx], node.name, axis=dim)
    return _same(b, node, x, out, x.dyn[:dim] + x.dyn[dim + 1:])


def _trilu(upper: int) -> Callable:
    def run(b: _Builder, node: Any, args: tuple, kwargs: dict) -> _Value:
        x = args[0]
        k = kwargs.get("diagonal", args[1] if len(args) > 1 else 0)
        src, cast = x.name, None
        if _dtype_name(x.dtype) == "bool":     # onnxruntime's Trilu has no bool kernel
            src, cast = b.op("Cast", [src], "tri", to=TensorProto.INT32), TensorProto.BOOL
        kk = b.op("Reshape", [_shape_tensor(b, [k]), b.ints([])], "k")
        out = b.op("Trilu", [src, kk], "tri" if cast else node.name, upper=upper)
        if cast is not None:
            out = b.op("Cast", [out], node.name, to=cast)
        return _same(b, node, x, out, _traced_dyn(b, node, x))
    return run


def _masked_fill(b: _Builder, node: Any, args: tuple, kwargs: dict) -> _Value:
    x, mask = args[0], kwargs.get("mask", args[1])
    value = _as_input(b, kwargs.get("value", args[2] if len(args) > 2 else None), x)
    out = b.op("Where", [mask.name, value.name, x.name], node.name)
    return _same(b, node, x, out, _broadcast_dyn(x, mask))


def _sdpa_fused(b: _Builder, node: Any, args: tuple, kwargs: dict) -> _Value:
    q, k, v, scale, causal = args[:5]
    mask = args[5] if len(args) > 5 else kwargs.get("attn_mask")
    return _sdpa(b, node, (q, k, v), {"scale": scale, "is_causal": causal, "attn_mask": mask})


def _fill_like(value: Any) -> Callable:
    """``zeros_like``/``full_like``/``new_zeros``...: ConstantOfShape of the result's
    shape (read from the input for ``*_like``, traced or static for ``new_*``)."""
    def run(b: _Builder, node: Any, args: tuple, kwargs: dict) -> _Value:
        x = args[0]
        shape, dtype = _node_meta(node)
        fill = value
        if fill is None:       # full_like(x, v) / x.new_full(size, v)
            fill = kwargs.get("fill_value", args[-1])
        if isinstance(fill, (SymExpr, _Value)):
            raise RuntimeError(f"ember.onnx.export(): {_op_name(node)} (node {node.name}) fills "
                               f"with a value computed in the graph; no ONNX mapping")
        if _op_name(node).endswith("_like"):
            dims, dyn = b.op("Shape", [x.name], "shape"), x.dyn
        else:
            traced = _traced_shape(b, node)
            dims = _shape_tensor(b, traced if traced is not None else list(shape))
            dyn = _dyn_of(traced) if traced is not None else [set() for _ in shape]
        np_dtype = helper.tensor_dtype_to_np_dtype(_onnx_dtype(dtype))
        t = numpy_helper.from_array(np.asarray([fill], dtype=np_dtype), "value")
        return _Value(b.op("ConstantOfShape", [dims], node.name, value=t), shape, dtype, dyn)
    return run


def _to(b: _Builder, node: Any, args: tuple, kwargs: dict) -> _Value:
    """``to``/``float``/``type`` to another dtype (device moves are no-ops in ONNX)."""
    x = args[0]
    shape, dtype = _node_meta(node)
    if _dtype_name(dtype) == _dtype_name(x.dtype):
        return x
    return _Value(b.op("Cast", [x.name], node.name, to=_onnx_dtype(dtype)), shape, dtype,
                  x.dyn)


def _repeat(b: _Builder, node: Any, args: tuple, kwargs: dict) -> _Value:
    x = args[0]
    reps = args[1] if len(args) == 2 and isinstance(args[1], (tuple, list)) else args[1:]
    reps = list(kwargs.get("repeats", reps))
    name = x.name
    extra = len(reps) - len(x.shape)
    if extra > 0:
        name = b.op("Unsqueeze", [name, b.ints(list(range(extra)))], "unsq")
    out = b.op("Tile", [name, _shape_tensor(b, reps)], node.name)
    shape, dtype = _node_meta(node)
    traced = _traced_shape(b, node)
    dyn = _dyn_of(traced) if traced is not None else [set() for _ in shape]
    return _Value(out, shape, dtype, dyn)


def _max_pool(b: _Builder, node: Any, args: tuple, kwargs: dict) -> _Value:
    names = ("input", "kernel_size", "stride", "padding", "dilation", "ceil_mode",
             "return_indices")
    defaults = (None, None, None, 0, 1, False, False)
    a = {k: kwargs.get(k, args[i] if i < len(args) else defaults[i])
         for i, k in enumerate(names)}
    if a["return_indices"]:
        raise RuntimeError("ember.onnx.export(): max_pool2d with return_indices=True "
                           "has no ONNX mapping")
    x = a["input"]
    nsp = len(x.shape) - 2
    k = _pair(a["kernel_size"], nsp)
    s = _pair(a["stride"] if a["stride"] not in (None, ()) else k, nsp)
    p = _pair(a["padding"], nsp)
    out = b.op("MaxPool", [x.name], node.name, kernel_shape=k, strides=s, pads=p + p,
               dilations=_pair(a["dilation"], nsp), ceil_mode=int(bool(a["ceil_mode"])))
    return _same(b, node, x, out, x.dyn[:2] + [set() for _ in range(nsp)])


def _layer_norm(b: _Builder, node: Any, args: tuple, kwargs: dict) -> _Value:
    names = ("input", "normalized_shape", "weight", "bias", "eps")
    defaults = (None, None, None, None, 1e-5)
    a = {k: kwargs.get(k, args[i] if i < len(args) else defaults[i])
         for i, k in enumerate(names)}
    x = a["input"]
    nshape = _pair(a["normalized_shape"], 1)
    np_dtype = helper.tensor_dtype_to_np_dtype(_onnx_dtype(x.dtype))
    w = a["weight"].name if a["weight"] is not None else b.const(np.ones(nshape, np_dtype))
    inputs = [x.name, w] + ([a["bias"].name] if a["bias"] is not None else [])
    out = b.op("LayerNormalization", inputs, node.name, axis=-len(nshape),
               epsilon=float(a["eps"]))
    return _same(b, node, x, out)


def _reshape(b: _Builder, node: Any, args: tuple, kwargs: dict) -> _Value:
    x = args[0]
    shape, dtype = _node_meta(node)
    traced = _traced_shape(b, node)
    if traced is not None:
        spec = _shape_tensor(b, traced)
        return _Value(b.op("Reshape", [x.name, spec], node.name), shape, dtype,
                      _dyn_of(traced))
    target, dyn = _reshape_spec(b, x, shape, str(node.target))
    if all(isinstance(t, int) for t in target):
        spec = b.ints(target)
    else:
        spec = b.op("Concat", [b.ints([t]) if isinstance(t, int) else t for t in target],
                    "shape", axis=0)
    return _Value(b.op("Reshape", [x.name, spec], node.name), shape, dtype, dyn)


def _transpose(b: _Builder, node: Any, args: tuple, kwargs: dict) -> _Value:
    x = args[0]
    n = len(x.shape)
    if n < 2:
        return x
    d0, d1 = (_norm(int(args[1]), n), _norm(int(args[2]), n)) if len(args) > 2 else (0, 1)
    perm = list(range(n))
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return _permute_to(b, node, x, perm)


def _permute(b: _Builder, node: Any, args: tuple, kwargs: dict) -> _Value:
    x = args[0]
    dims = args[1] if len(args) == 2 and isinstance(args[1], (tuple, list)) else args[1:]
    dims = kwargs.get("dims", dims)
    return _permute_to(b, node, x, [_norm(int(d), len(x.shape)) for d in dims])


def _permute_to(b: _Builder, node: Any, x: _Value, perm: list[int]) -> _Value:
    out = b.op("Transpose", [x.name], node.name, perm=perm)
    return _same(b, node, x, out, [x.dyn[p] for p in perm])


def _unsqueeze(b: _Builder, node: Any, args: tuple, kwargs: dict) -> _Value:
    x = args[0]
    dim = _norm(int(kwargs.get("dim", args[1] if len(args) > 1 else 0)), len(x.shape) + 1)
    dyn = x.dyn[:dim] + [set()] + x.dyn[dim:]
    return _same(b, node, x, b.op("Unsqueeze", [x.name, b.ints([dim])], node.name), dyn)


def _squeeze(b: _Builder, node: Any, args: tuple, kwargs: dict) -> _Value:
    x = args[0]
    dim = kwargs.get("dim", args[1] if len(args) > 1 else None)
    if dim is None:
        dims = [i for i, s in enumerate(x.shape) if s == 1 and not x.dyn[i]]
    else:
        dims = [_norm(int(d), len(x.shape))
                for d in (dim if isinstance(dim, (tuple, list)) else [dim])]
        dims = [d for d in dims if x.shape[d] == 1]
    if not dims:
        return x
    dyn = [d for i, d in enumerate(x.dyn) if i not in dims]
    return _same(b, node, x, b.op("Squeeze", [x.name, b.ints(dims)], node.name), dyn)


def _expand(b: _Builder, node: Any, args: tuple, kwargs: dict) -> _Value:
    x = args[0]
    shape, dtype = _node_meta(node)
    traced = _traced_shape(b, node)
    if traced is not None:
        return _Value(b.op("Expand", [x.name, _shape_tensor(b, traced)], node.name), shape,
                      dtype, _dyn_of(traced))
    off = len(shape) - len(x.shape)
    target, dyn = list(shape), [set() for _ in shape]
    for i, d in enumerate(x.dyn):
        if d:  # Expand broadcasts a 1 to the input's own (symbolic) size
            target[off + i], dyn[off + i] = 1, d
    return _Value(b.op("Expand", [x.name, b.ints(target)], node.name), shape, dtype, dyn)


def _narrow(b: _Builder, node: Any, args: tuple, kwargs: dict) -> _Value:
    x, dim, start, length = args[0], int(args[1]), args[2], args[3]
    dim = _norm(dim, len(x.shape))
    if isinstance(start, int) and start < 0:
        start = _norm(start, x.shape[dim])
    if isinstance(start, int) and isinstance(length, int):
        end: Any = start + length
    else:
        end = b.op("Add", [_shape_tensor(b, [start]), _shape_tensor(b, [length])], "end")
    ends = end if isinstance(end, str) else _shape_tensor(b, [end])
    out = b.op("Slice", [x.name, _shape_tensor(b, [start]), ends, b.ints([dim])], node.name)
    return _same(b, node, x, out, _traced_dyn(b, node, x))


def _traced_dyn(b: _Builder, node: Any, x: _Value) -> list:
    traced = _traced_shape(b, node)
    return x.dyn if traced is None else _dyn_of(traced)


def _getitem(b: _Builder, node: Any, args: tuple, kwargs: dict) -> _Value:
    x, idx = args[0], args[1]
    if not isinstance(x, _Value):
        raise RuntimeError("ember.onnx.export(): getitem on a non-tensor has no ONNX mapping")
    idx = idx if isinstance(idx, tuple) else (idx,)
    n_real = sum(1 for i in idx if i is not None and i is not Ellipsis)
    if Ellipsis in idx:
        at = idx.index(Ellipsis)
        idx = idx[:at] + (slice(None),) * (len(x.shape) - n_real) + idx[at + 1:]
    starts, ends, axes, steps, squeeze, unsq = [], [], [], [], [], []
    dim = out_dim = 0
    dyn = []
    for i in idx:
        if i is None:
            unsq.append(out_dim)
            dyn.append(set())
            out_dim += 1
            continue
        if isinstance(i, bool) or not isinstance(i, (int, slice, SymExpr)):
            raise RuntimeError(f"ember.onnx.export(): indexing with {type(i).__name__} "
                               "has no ONNX mapping")
        if isinstance(i, SymExpr):
            starts.append(i), ends.append(SymExpr(i.const + 1, i.coef, i.syms))
            axes.append(dim), steps.append(1)
            squeeze.append(dim)
        elif isinstance(i, int):
            s = _norm(i, x.shape[dim])
            starts.append(s), ends.append(s + 1), axes.append(dim), steps.append(1)
            squeeze.append(dim)
        else:
            if i != slice(None):
                step = 1 if i.step is None else int(i.step)
                starts.append(0 if i.start is None else i.start)
                ends.append(_INT_MAX if i.stop is None else i.stop)
                axes.append(dim), steps.append(step)
            dyn.append(x.dyn[dim] if i == slice(None) else set())
            out_dim += 1
        dim += 1
    dyn += x.dyn[dim:]
    traced = _traced_shape(b, node)
    if traced is not None:
        dyn = _dyn_of(traced)
    name = x.name
    if axes:
        name = b.op("Slice", [name, _shape_tensor(b, starts), _shape_tensor(b, ends),
                              b.ints(axes), b.ints(steps)], "slice")
    if squeeze:
        name = b.op("Squeeze", [name, b.ints(squeeze)], "squeeze")
    if unsq:
        name = b.op("Unsqueeze", [name, b.ints(unsq)], "unsqueeze")
    name = b.op("Identity", [name], node.name)
    return _same(b, node, x, name, dyn)


def _cat(b: _Builder, node: Any, args: tuple, kwargs: dict) -> _Value:
    xs = list(args[0])
    dim = _norm(int(kwargs.get("dim", args[1] if len(args) > 1 else 0)), len(xs[0].shape))
    dyn = _broadcast_dyn(*xs)
    return _same(b, node, xs[0], b.op("Concat", [x.name for x in xs], node.name, axis=dim), dyn)


def _embedding(b: _Builder, node: Any, args: tuple, kwargs: dict) -> _Value:
    idx, w = args[0], args[1]
    if kwargs.get("max_norm", args[3] if len(args) > 3 else None) is not None:
        raise RuntimeError("ember.onnx.export(): embedding with max_norm has no ONNX mapping")
    out = b.op("Gather", [w.name, idx.name], node.name, axis=0)
    shape, dtype = _node_meta(node)
    return _Value(out, shape, dtype, idx.dyn + [set()])


def _index_select(b: _Builder, node: Any, args: tuple, kwargs: dict) -> _Value:
    x, idx = args[0], kwargs.get("index", args[2] if len(args) > 2 else None)
    dim = _norm(int(kwargs.get("dim", args[1] if len(args) > 1 else 0)), len(x.shape))
    out = b.op("Gather", [x.name, idx.name], node.name, axis=dim)
    return _same(b, node, x, out, x.dyn[:dim] + [idx.dyn[0] if idx.dyn else set()]
                 + x.dyn[dim + 1:])


def _avg_pool(b: _Builder, node: Any, args: tuple, kwargs: dict) -> _Value:
    names = ("input", "kernel_size", "stride", "padding", "ceil_mode", "count_include_pad",
             "divisor_override")
    defaults = (None, None, None, 0, False, True, None)
    a = {k: kwargs.get(k, args[i] if i < len(args) else defaults[i])
         for i, k in enumerate(names)}
    if a["divisor_override"] is not None:
        raise RuntimeError("ember.onnx.export(): avg_pool2d with divisor_override has no "
                           "ONNX mapping")
    x = a["input"]
    nsp = len(x.shape) - 2
    k = _pair(a["kernel_size"], nsp)
    s = _pair(a["stride"] if a["stride"] not in (None, ()) else k, nsp)
    p = _pair(a["padding"], nsp)
    out = b.op("AveragePool", [x.name], node.name, kernel_shape=k, strides=s, pads=p + p,
               ceil_mode=int(bool(a["ceil_mode"])),
               count_include_pad=int(bool(a["count_include_pad"])))
    return _same(b, node, x, out, x.dyn[:2] + [set() for _ in range(nsp)])


def _adaptive_avg_pool(b: _Builder, node: Any, args: tuple, kwargs: dict) -> _Value:
    x = args[0]
    shape, _ = _node_meta(node)
    ins, outs = x.shape[2:], shape[2:]
    if all(o == 1 for o in outs):
        return _same(b, node, x, b.op("GlobalAveragePool", [x.name], node.name))
    if any(i % o for i, o in zip(ins, outs)):
        raise RuntimeError(f"ember.onnx.export(): adaptive_avg_pool2d from {tuple(ins)} to "
                           f"{tuple(outs)} (not a whole multiple) has no ONNX mapping")
    k = [i // o for i, o in zip(ins, outs)]
    return _same(b, node, x, b.op("AveragePool", [x.name], node.name, kernel_shape=k,
                                  strides=k))


def _reduce(op_type: str, axes_input_from: int) -> Callable:
    def run(b: _Builder, node: Any, args: tuple, kwargs: dict) -> _Value:
        x = args[0]
        dim = kwargs.get("dim", args[1] if len(args) > 1 else None)
        keep = bool(kwargs.get("keepdim", args[2] if len(args) > 2 else False))
        src = x.name
        if kwargs.get("dtype") is not None:
            src = b.op("Cast", [src], "cast", to=_onnx_dtype(kwargs["dtype"]))
        n = len(x.shape)
        axes = list(range(n)) if dim is None or dim == () else \
            [_norm(int(d), n) for d in (dim if isinstance(dim, (tuple, list)) else [dim])]
        if b.opset >= axes_input_from:
            out = b.op(op_type, [src, b.ints(axes)], node.name, keepdims=int(keep))
        else:
            out = b.op(op_type, [src], node.name, axes=axes, keepdims=int(keep))
        dyn = [set() if i in axes else d for i, d in enumerate(x.dyn)] if keep else \
            [d for i, d in enumerate(x.dyn) if i not in axes]
        return _same(b, node, x, out, dyn)
    return run


def _compare(op_type: str) -> Callable:
    def run(b: _Builder, node: Any, args: tuple, kwargs: dict) -> _Value:
        x, y = args[0], args[1]
        like = x if isinstance(x, _Value) else y
        x, y = _as_input(b, x, like), _as_input(b, y, like)
        out = b.op(op_type, [x.name, y.name], node.name)
        if op_type == "Equal" and node.target in ("ne", "__ne__"):
            out = b.op("Not", [out], node.name + "_not")
        return _same(b, node, x, out, _broadcast_dyn(x, y))
    return run


def _where(b: _Builder, node: Any, args: tuple, kwargs: dict) -> _Value:
    cond, x, y = args[0], args[1], args[2]
    like = x if isinstance(x, _Value) else y
    x, y = _as_input(b, x, like), _as_input(b, y, like)
    out = b.op("Where", [cond.name, x.name, y.name], node.name)
    return _same(b, node, like, out, _broadcast_dyn(cond, x, y))


def _silu(b: _Builder, node: Any, args: tuple, kwargs: dict) -> _Value:
    x = args[0]
    return _same(b, node, x, b.op("Mul", [x.name, b.op("Sigmoid", [x.name], "sig")], node.name))


def _rsqrt(b: _Builder, node: Any, args: tuple, kwargs: dict) -> _Value:
    x = args[0]
    return _same(b, node, x, b.op("Reciprocal", [b.op("Sqrt", [x.name], "sqrt")], node.name))


def _sdpa(b: _Builder, node: Any, args: tuple, kwargs: dict) -> _Value:
    names = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale")
    defaults = (None, None, None, None, 0.0, False, None)
    a = {k: kwargs.get(k, args[i] if i < len(args) else defaults[i])
         for i, k in enumerate(names)}
    q, k, v, mask = a["query"], a["key"], a["value"], a["attn_mask"]
    if a["dropout_p"]:
        raise RuntimeError("ember.onnx.export(): scaled_dot_product_attention with "
                           "dropout_p > 0 has no ONNX inference equivalent; call "
                           "model.eval() before exporting")
    if a["is_causal"]:
        # tril(ones(L, S)) with L and S read from the query and key at run time
        ls = b.op("Concat", [b.op("Shape", [q.name], "len", start=-2, end=-1),
                             b.op("Shape", [k.name], "len", start=-2, end=-1)], "ls", axis=0)
        one = helper.make_tensor("one", TensorProto.INT64, [1], [1])
        ones = b.op("ConstantOfShape", [ls], "ones", value=one)
        tri = b.op("Trilu", [ones], "tril", upper=0)
        cmask = b.op("Cast", [tri], "causal", to=TensorProto.BOOL)
        mask = _Value(cmask, (q.shape[-2], k.shape[-2]), "bool", [set(), set()])
    scale = a["scale"] if a["scale"] is not None else 1.0 / math.sqrt(q.shape[-1])
    nd = len(k.shape)
    kt = b.op("Transpose", [k.name], "kt", perm=list(range(nd - 2)) + [nd - 1, nd - 2])
    s = b.op("Mul", [b.op("MatMul", [q.name, kt], "qk"), _as_input(b, scale, q).name], "s")
    if mask is not None:
        if _dtype_name(mask.dtype) == "bool":
            neg = _as_input(b, float("-inf"), q).name
            s = b.op("Where", [mask.name, s, neg], "masked")
        else:
            s = b.op("Add", [s, mask.name], "masked")
    p = b.op("Softmax", [s], "attn", axis=-1)
    return _same(b, node, q, b.op("MatMul", [p, v.name], node.name))


_TABLE: dict[str, Callable] = {
    "linear": _linear, "matmul": _matmul, "mm": _matmul, "bmm": _matmul, "addmm": _addmm,
    "add": _binary("Add"), "__add__": _binary("Add"), "__radd__": _binary("Add", True),
    "sub": _binary("Sub"), "__sub__": _binary("Sub"), "rsub": _binary("Sub", True),
    "__rsub__": _binary("Sub", True),
    "mul": _binary("Mul"), "__mul__": _binary("Mul"), "__rmul__": _binary("Mul", True),
    "div": _binary("Div"), "truediv": _binary("Div"), "__truediv__": _binary("Div"),
    "__rtruediv__": _binary("Div", True),
    "relu": _unary("Relu"), "tanh": _unary("Tanh"), "sigmoid": _unary("Sigmoid"),
    "exp": _unary("Exp"), "neg": _unary("Neg"), "sqrt": _unary("Sqrt"), "gelu": _gelu,
    "softmax": _softmax("Softmax"), "log_softmax": _softmax("LogSoftmax"),
    "layer_norm": _layer_norm, "conv1d": _conv, "conv2d": _conv, "conv3d": _conv,
    "conv_transpose1d": _conv_transpose, "conv_transpose2d": _conv_transpose,
    "conv_transpose3d": _conv_transpose, "max_pool2d": _max_pool,
    "max_pool1d": _max_pool,
    "reshape": _reshape, "view": _reshape, "flatten": _reshape, "transpose": _transpose,
    "t": _transpose, "permute": _permute, "unsqueeze": _unsqueeze, "squeeze": _squeeze,
    "expand": _expand, "narrow": _narrow, "getitem": _getitem, "__getitem__": _getitem,
    "cat": _cat, "concat": _cat, "embedding": _embedding,
    "index_select": _index_select,
    "scaled_dot_product_attention": _sdpa, "avg_pool2d": _avg_pool,
    "adaptive_avg_pool2d": _adaptive_avg_pool, "mean": _reduce("ReduceMean", 18),
    "sum": _reduce("ReduceSum", 13), "amax": _reduce("ReduceMax", 18),
    "gt": _compare("Greater"), "__gt__": _compare("Greater"), "lt": _compare("Less"),
    "__lt__": _compare("Less"), "ge": _compare("GreaterOrEqual"),
    "le": _compare("LessOrEqual"), "eq": _compare("Equal"), "ne": _compare("Equal"),
    "__ne__": _compare("Equal"), "where": _where, "silu": _silu, "rsqrt": _rsqrt,
    "pow": _binary("Pow"), "__pow__": _binary("Pow"), "abs": _unary("Abs"),
    "log": _unary("Log"), "erf": _unary("Erf"),
    "dropout": _dropout, "contiguous": _identity, "clone": _identity, "detach": _identity,
    "to": _to, "float": _to, "type": _to, "repeat": _repeat, "select": _select,
    "tril": _trilu(0), "triu": _trilu(1), "logical_not": _unary("Not"),
    "masked_fill": _masked_fill, "sdpa_fused": _sdpa_fused,
    "zeros_like": _fill_like(0), "ones_like": _fill_like(1), "empty_like": _fill_like(0),
    "full_like": _fill_like(None), "new_zeros": _fill_like(0), "new_ones": _fill_like(1),
    "new_empty": _fill_like(0), "new_full": _fill_like(None),
}


def _op_name(node: Any) -> str:
    if node.op == "call_method":
        return str(node.target)
    if node.target is operator.getitem:
        return "getitem"
    return getattr(node.target, "__name__", str(node.target))


def _syms_in(a: Any) -> list:
    if isinstance(a, SymExpr):
        return [a]
    if isinstance(a, (list, tuple)):
        return [s for x in a for s in _syms_in(x)]
    if isinstance(a, dict):
        return [s for x in a.values() for s in _syms_in(x)]
    if isinstance(a, slice):
        return _syms_in((a.start, a.stop, a.step))
    return []


def _has_node(a: Any) -> bool:
    if isinstance(a, (list, tuple)):
        return any(_has_node(x) for x in a)
    if isinstance(a, dict):
        return any(_has_node(x) for x in a.values())
    return isinstance(a, Node)


def _dim_param(spec: Any, name: str, i: int) -> str:
    if isinstance(spec, dict):
        return str(spec[i]) if i in spec else ""
    return f"{name}_dynamic_axes_{i + 1}" if i in spec else ""


# ops that take sizes computed from dynamic axes (SymExprs) among their arguments
_SIZE_OPS = frozenset({"reshape", "view", "flatten", "expand", "narrow", "getitem",
                       "__getitem__", "add", "__add__", "__radd__", "sub", "__sub__", "rsub",
                       "__rsub__", "mul", "__mul__", "__rmul__", "div", "truediv",
                       "__truediv__", "__rtruediv__", "repeat", "select", "new_zeros",
                       "new_ones", "new_empty", "new_full"})
_FILLS = {"zeros": 0, "ones": 1, "empty": 0, "full": None}


def _has_sym(a: Any) -> bool:
    if isinstance(a, SymExpr):
        return True
    if isinstance(a, (list, tuple)):
        return any(_has_sym(x) for x in a)
    if isinstance(a, dict):
        return any(_has_sym(x) for x in a.values())
    if isinstance(a, slice):
        return any(_has_sym(x) for x in (a.start, a.stop, a.step))
    return False


def _sized_factory(b: _Builder, node: Any, args: tuple, kwargs: dict) -> _Value:
    """A factory whose size comes from a dynamic axis: ConstantOfShape / Range."""
    name = _op_name(node)
    shape, dtype = _node_meta(node)
    dims = b.shapes[node]
    if name in _FILLS:
        value = _FILLS[name]
        if value is None:
            value = kwargs.get("fill_value", args[1] if len(args) > 1 else None)
        if isinstance(value, SymExpr):
            raise RuntimeError(f"ember.onnx.export(): {name} (node {node.name}) fills with a "
                               f"value computed from a dynamic size; no ONNX mapping")
        np_dtype = helper.tensor_dtype_to_np_dtype(_onnx_dtype(dtype))
        fill = numpy_helper.from_array(np.asarray([value], dtype=np_dtype), "value")
        out = b.op("ConstantOfShape", [_shape_tensor(b, dims)], node.name, value=fill)
    elif name == "arange":
        start = kwargs.get("start", args[0] if args else 0)
        end = kwargs.get("end", args[1] if len(args) > 1 else None)
        step = kwargs.get("step", args[2] if len(args) > 2 else 1)
        if end is None:           # arange(end)
            start, end = 0, start
        out = b.op("Range", [_scalar_of(b, start, dtype), _scalar_of(b, end, dtype),
                             _scalar_of(b, step, dtype)], node.name)
    else:
        raise RuntimeError(f"ember.onnx.export(): the op '{name}' (node {node.name}) builds a "
                           f"tensor whose size comes from a dynamic axis; no ONNX mapping")
    return _Value(out, shape, dtype, _dyn_of(dims))


def build_model(ep: Any, input_names: list[str] | None, output_names: list[str] | None,
                dynamic_axes: dict, opset: int, sizes: tuple | None = None
                ) -> onnx.ModelProto:
    """The ONNX model for ExportedProgram ``ep``; ``sizes`` is (node -> args with
    SymExprs, node -> output dims) from ``_symbolic.annotate`` when traced."""
    b = _Builder(opset)
    sym_args: dict = {}
    if sizes is not None:
        sym_args, b.shapes = sizes
    sig = ep.graph_signature
    specs = {s.name: s for s in sig.input_specs}
    user = list(sig.user_inputs)
    if input_names is not None and len(input_names) > len(user):
        raise ValueError(f"ember.onnx.export(): {len(input_names)} input_names given for "
                         f"{len(user)} inputs")
    rename = dict(zip(user, input_names or []))
    env: dict[Any, _Value] = {}
    graph_inputs, graph_outputs = [], []

    def value_info(name: str, shape: tuple, dtype: Any, dims: Any) -> Any:
        spec = dims if dims is not None else []
        shp = [_dim_param(spec, name, i) or s for i, s in enumerate(shape)]
        return helper.make_tensor_value_info(name, _onnx_dtype(dtype), shp)

    def lookup(a: Any) -> Any:
        if isinstance(a, (list, tuple)):
            return type(a)(lookup(x) for x in a)
        if isinstance(a, dict):
            return {k: lookup(x) for k, x in a.items()}
        return env.get(a, a) if isinstance(a, Node) else a

    for node in ep.graph.nodes:
        if node.op == "placeholder":
            shape, dtype = _node_meta(node)
            spec = specs.get(node.name) or specs[node.target]
            if spec.kind == "USER_INPUT":
                name = rename.get(spec.name, spec.name)
                axes = dynamic_axes.get(name)
                dyn = [set() for _ in shape]
                for i in range(len(shape)):
                    sym = _dim_param(axes, name, i) if axes is not None else ""
                    if sym:
                        dyn[i] = _Dim.of({sym: 1})
                        if sym not in b.sym_sizes:
                            b.sym_sizes[sym] = int(shape[i])
                            b.sym_source[sym] = (name, i)
                graph_inputs.append(value_info(name, shape, dtype, axes))
            else:
                source = ep.state_dict if spec.target in ep.state_dict else ep.constants
                arr = source[spec.target].detach().numpy()
                name = spec.target
                b.initializers.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
                dyn = [set() for _ in shape]
            env[node] = _Value(name, shape, dtype, dyn)
        elif node.op == "call_function" and not _has_node((node.args, node.kwargs)) and \
                node in sym_args:
            a, kw = sym_args[node]
            env[node] = _sized_factory(b, node, a, kw)
        elif node.op == "call_function" and not _has_node((node.args, node.kwargs)):
            # a factory (ember.tensor, zeros, arange...) independent of the inputs
            t = node.target(*node.args, **node.kwargs)
            if not isinstance(t, Tensor):
                raise RuntimeError(f"ember.onnx.export(): the op '{_op_name(node)}' (node "
                                   f"{node.name}) has no ONNX mapping")
            name = b.const(np.ascontiguousarray(t.detach().numpy()), node.name)
            env[node] = _Value(name, tuple(t.shape), t.dtype, [frozenset()] * t.dim())
        elif node.op in ("call_function", "call_method"):
            opname = _op_name(node)
            fn = _TABLE.get(opname)
            if fn is None:
                raise RuntimeError(f"ember.onnx.export(): the op '{opname}' (node {node.name}) "
                                   "has no ONNX mapping")
            a, kw = sym_args.get(node, (node.args, node.kwargs))
            if node in sym_args and opname not in _SIZE_OPS and _has_sym((a, kw)):
                raise RuntimeError(f"ember.onnx.export(): the op '{opname}' (node "
                                   f"{node.name}) takes a size computed from a dynamic axis "
                                   f"({[str(x) for x in _syms_in((a, kw))]}); exporting it "
                                   f"with that axis dynamic is not supported")
            env[node] = fn(b, node, lookup(tuple(a)), lookup(dict(kw)))
        elif node.op == "output":
            outs = node.args[0]
            outs = outs if isinstance(outs, (tuple, list)) else (outs,)
            if output_names is not None and len(output_names) > len(outs):
                raise ValueError(f"ember.onnx.export(): {len(output_names)} output_names "
                                 f"given for {len(outs)} outputs")
            for i, o in enumerate(outs):
                v = env[o]
                name = output_names[i] if output_names and i < len(output_names) \
                    else f"output_{i}"
                b.nodes.append(helper.make_node("Identity", [v.name], [name], name=name))
                axes = dynamic_axes.get(name)
                traced = _traced_shape(b, o)
                if axes is None and traced is not None:   # the traced sizes, by name
                    axes = {i: str(d) for i, d in enumerate(traced) if isinstance(d, SymExpr)}
                elif axes is None:  # outputs keep the symbols that flowed into them
                    axes = {i: next(iter(d)) for i, d in enumerate(v.dyn) if d}
                graph_outputs.append(value_info(name, v.shape, v.dtype, axes))
        else:
            raise RuntimeError(f"ember.onnx.export(): graph node kind {node.op} "
                               "has no ONNX mapping")
    graph = helper.make_graph(b.nodes, "ember_graph", graph_inputs, graph_outputs,
                              initializer=b.initializers)
    model = helper.make_model(graph, producer_name="ember",
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = min(model.ir_version, 10)
    return model
