"""CUDA kernels of the convolutional layers: conv2d/conv1d and their two backward
kernels (the input-gradient kernel also runs conv_transpose2d/1d), max/avg
pooling, adaptive average pooling (an average pool where its windows tile the
input, else two GEMMs with the averaging matrices) and batch_norm.

conv and pooling record the CPU's graph nodes (``conv2d``, ``max_pool2d``, ...),
whose formulas call ``conv2d_input_grad`` / ``conv2d_weight_grad`` /
``*_pool2d_backward``: those redispatch here too, so autograd runs on the device.
Shapes and arguments are checked by the CPU's own code (``ember._C.conv``), so
the messages are the CPU's.  batch_norm is one graph node over the fused
forward/backward kernels (``F.batch_norm`` routes CUDA tensors here)."""

from __future__ import annotations

import ctypes
from typing import Any

import ember
from ember._C import conv as _cc
from ember.autograd import Function
from ember.cuda import _kernels as K
from ember.cuda._dispatch import (
    _FLOATS,
    _TORCH_NAMES,
    _empty,
    _lib,
    _ptr,
    _record,
    _stream,
    copy_into,
    kernel,
)

_F32, _F64, _I64 = ember.float32, ember.float64, ember.int64
_CONV_FIELDS = ("N", "C", "H", "W", "OC", "kh", "kw", "sh", "sw", "ph", "pw", "dh", "dw",
                "groups", "Ho", "Wo")
_POOL_FIELDS = ("planes", "H", "W", "kh", "kw", "sh", "sw", "ph", "pw", "dh", "dw", "Ho", "Wo")


class ConvParams(ctypes.Structure):
    """``ember_conv2d_params`` (src_c/include/ember_conv.h)."""

    _fields_ = [(n, ctypes.c_int64) for n in _CONV_FIELDS]


class PoolParams(ctypes.Structure):
    """``ember_pool2d_params`` (src_c/include/ember_conv.h)."""

    _fields_ = [(n, ctypes.c_int64) for n in _POOL_FIELDS] + \
        [("count_include_pad", ctypes.c_int), ("divisor", ctypes.c_int64)]


def _struct(cls: Any, values: dict) -> Any:
    s = cls()
    for n, _ in cls._fields_:
        if n in values:
            setattr(s, n, int(values[n]))
    return s


def _compute_dtype(t: Any, op: str) -> Any:
    """The dtype the conv kernels run in (the CPU's rule: half types in float32)."""
    if t.dtype == _F64:
        return _F64
    if t.dtype in (_F32, ember.float16, ember.bfloat16):
        return _F32
    raise NotImplementedError(f"\"{op}\" not implemented for '{_TORCH_NAMES[t.dtype]}'")


def _as(t: Any, dt: Any, shape: tuple) -> Any:
    """t detached, in dtype ``dt``, contiguous, viewed as ``shape``."""
    t = t.detach()
    t = t if t.dtype == dt else t._cast(dt.code)
    return t.contiguous().reshape(shape)


def _check(rc: int, op: str) -> None:
    if rc == 10001:
        raise RuntimeError(f"\"{op}_cuda\" has no CUDA kernel for this dtype")
    K.check(rc, op)


def _same_device(a: Any, b: Any, op: str, arg: str) -> None:
    if b is not None and a.device != b.device:
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least "
                           f"two devices, {a.device} and {b.device}! (when checking argument "
                           f"for argument {arg} in method {op})")


# ---------------------------------------------------------------------------
# convolution

def _asym(a: dict) -> bool:
    return a["pt"] != a["pb"] or a["pl"] != a["pr"]


def _pad_params(a: dict) -> dict:
    """The params of the conv over the explicitly padded input (no padding)."""
    return dict(a, H=a["H"] + a["pt"] + a["pb"], W=a["W"] + a["pl"] + a["pr"], ph=0, pw=0)


def _padded(x: Any, a: dict) -> tuple:
    """x (N, C, H, W) zero-padded explicitly (asymmetric "same" padding) and the
    params of a conv over it."""
    q = _pad_params(a)
    xp = ember.zeros((a["N"], a["C"], q["H"], q["W"]), dtype=x.dtype, device=x.device)
    copy_into(xp.narrow(2, a["pt"], a["H"]).narrow(3, a["pl"], a["W"]), x)
    return xp, q


def _user_shape(a: dict, nd: int, C: int, H: int, W: int) -> tuple:
    shp = (a["N"], C) + ((W,) if nd == 1 else (H, W))
    return shp if a["batched"] else shp[1:]


def _conv_kw(stride: Any, padding: Any, dilation: Any, groups: Any) -> dict:
    return {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}


def _conv(op: str, nd: int):
    def run(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
        if input.dtype != weight.dtype:
            raise RuntimeError(f"{op}: Input type ({_TORCH_NAMES[input.dtype]}) and weight "
                               f"type ({_TORCH_NAMES[weight.dtype]}) should be the same")
        if bias is not None and bias.dtype != input.dtype:
            raise RuntimeError(f"{op}: Input type ({_TORCH_NAMES[input.dtype]}) and bias type "
                               f"({_TORCH_NAMES[bias.dtype]}) should be the same")
        a = _cc.conv_params(op, nd, tuple(input.shape), tuple(weight.shape), stride, padding,
                              dilation, groups)
        if bias is not None and (bias.dim() != 1 or bias.shape[0] != weight.shape[0]):
            raise RuntimeError(f"Given weight of size {list(weight.shape)}, expected bias to be "
                               f"1-dimensional with {weight.shape[0]} elements, but got bias of "
                               f"size {list(bias.shape)} instead")
        cdt = _compute_dtype(input, op)
        x = _as(input, cdt, (a["N"], a["C"], a["H"], a["W"]))
        w = _as(weight, cdt, (a["OC"], a["C"] // a["groups"], a["kh"], a["kw"]))
        b = None if bias is None else _as(bias, cdt, (a["OC"],))
        if _asym(a):
            x, a = _padded(x, a)
        y = _empty((a["N"], a["OC"], a["Ho"], a["Wo"]), cdt, input)
        if y.numel():
            p = _struct(ConvParams, a)
            _check(_lib().emc_conv2d_fwd(cdt.code, ctypes.byref(p), _ptr(x), _ptr(w),
                                         _ptr(b) if b is not None else None, _ptr(y),
                                         _stream(y)), op)
        if cdt != input.dtype:
            y = y._cast(input.dtype.code)
        y = y.view(_user_shape(a, nd, a["OC"], a["Ho"], a["Wo"]))
        _record(op, (input, weight, bias) if bias is not None else (input, weight), y,
                _conv_kw(stride, padding, dilation, groups))
        return y
    return run


kernel("conv2d")(_conv("conv2d", 2))
kernel("conv1d")(_conv("conv1d", 1))


def _check_grad_shape(op: str, a: dict, nd: int, dy: Any) -> None:
    want = _user_shape(a, nd, a["OC"], a["Ho"], a["Wo"])
    if tuple(dy.shape) != want:
        raise RuntimeError(f"{op}: expected grad_output of size {list(want)}, but got "
                           f"{list(dy.shape)}")


def _input_grad(a: dict, grad_output: Any, weight: Any, cdt: Any, op: str) -> Any:
    """emc_conv2d_bwd_input: the (N, C, H, W) gradient of the conv ``a`` describes,
    contiguous in ``cdt``."""
    dy = _as(grad_output, cdt, (a["N"], a["OC"], a["Ho"], a["Wo"]))
    w = _as(weight, cdt, (a["OC"], a["C"] // a["groups"], a["kh"], a["kw"]))
    q = _pad_params(a) if _asym(a) else a
    dx = _empty((q["N"], q["C"], q["H"], q["W"]), cdt, weight)
    if dx.numel():
        if q["OC"] == 0 or q["Ho"] * q["Wo"] == 0:
            dx.zero_()
        else:
            p = _struct(ConvParams, q)
            _check(_lib().emc_conv2d_bwd_input(cdt.code, ctypes.byref(p), _ptr(dy), _ptr(w),
                                               _ptr(dx), _stream(dx)), op)
    if q is not a:
        dx = dx.narrow(2, a["pt"], a["H"]).narrow(3, a["pl"], a["W"]).contiguous()
    return dx


@kernel("conv2d_input_grad")
def _conv_input_grad(input_size, weight, grad_output, stride=1, padding=0, dilation=1,
                     groups=1):
    op = "conv2d_input_grad"
    nd = weight.dim() - 2
    input_size = tuple(input_size)
    a = _cc.conv_params(op, nd, input_size, tuple(weight.shape), stride, padding, dilation,
                          groups)
    _check_grad_shape(op, a, nd, grad_output)
    cdt = _compute_dtype(grad_output, op)
    dx = _input_grad(a, grad_output, weight, cdt, op)
    if cdt != grad_output.dtype:
        dx = dx._cast(grad_output.dtype.code)
    dx = dx.view(input_size)
    _record(op, (weight, grad_output), dx,
            dict(_conv_kw(stride, padding, dilation, groups), input_size=input_size))
    return dx


@kernel("conv2d_weight_grad")
def _conv_weight_grad(input, weight_size, grad_output, stride=1, padding=0, dilation=1,
                      groups=1, *, bias_grad=False):
    op = "conv2d_weight_grad"
    weight_size = tuple(weight_size)
    nd = len(weight_size) - 2
    a = _cc.conv_params(op, nd, tuple(input.shape), weight_size, stride, padding, dilation,
                          groups)
    _check_grad_shape(op, a, nd, grad_output)
    if input.dtype != grad_output.dtype:
        raise RuntimeError(f"{op}: expected input and grad_output to have the same dtype, but "
                           f"got {_TORCH_NAMES[input.dtype]} and "
                           f"{_TORCH_NAMES[grad_output.dtype]}")
    cdt = _compute_dtype(input, op)
    x = _as(input, cdt, (a["N"], a["C"], a["H"], a["W"]))
    dy = _as(grad_output, cdt, (a["N"], a["OC"], a["Ho"], a["Wo"]))
    if _asym(a):
        x, a = _padded(x, a)
    dw = _empty((a["OC"], a["C"] // a["groups"], a["kh"], a["kw"]), cdt, input)
    db = _empty((a["OC"],), cdt, input) if bias_grad else None
    if dw.numel() or (db is not None and db.numel()):
        p = _struct(ConvParams, a)
        _check(_lib().emc_conv2d_bwd_weight(cdt.code, ctypes.byref(p), _ptr(x), _ptr(dy),
                                            _ptr(dw), _ptr(db) if db is not None else None,
                                            _stream(dw)), op)
    if cdt != input.dtype:
        dw = dw._cast(input.dtype.code)
        db = None if db is None else db._cast(input.dtype.code)
    dw = dw.view(weight_size)
    _record(op, (input, grad_output), dw,
            dict(_conv_kw(stride, padding, dilation, groups), weight_size=weight_size))
    return (dw, db) if bias_grad else dw


def _conv_transpose(op: str, nd: int):
    def run(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
            dilation=1):
        """The transposed convolution: conv2d's input gradient with the input as the
        output gradient, plus the bias."""
        if input.dtype != weight.dtype:
            raise RuntimeError(f"{op}: Input type ({_TORCH_NAMES[input.dtype]}) and weight "
                               f"type ({_TORCH_NAMES[weight.dtype]}) should be the same")
        if bias is not None and bias.dtype != input.dtype:
            raise RuntimeError(f"{op}: Input type ({_TORCH_NAMES[input.dtype]}) and bias type "
                               f"({_TORCH_NAMES[bias.dtype]}) should be the same")
        a = _cc.conv_params(op, nd, tuple(input.shape), tuple(weight.shape), stride, padding,
                            dilation, groups, True, output_padding)
        cout = weight.shape[1] * a["groups"]
        if bias is not None and (bias.dim() != 1 or bias.shape[0] != cout):
            raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, "
                               f"expected bias to be 1-dimensional with {cout} elements, but "
                               f"got bias of size {list(bias.shape)} instead")
        cdt = _compute_dtype(input, op)
        y = _input_grad(a, input, weight, cdt, op)
        if bias is not None:
            with ember.no_grad():
                y = y + _as(bias, cdt, (1, a["C"], 1, 1))
        if cdt != input.dtype:
            y = y._cast(input.dtype.code)
        y = y.view(_user_shape(a, nd, a["C"], a["H"], a["W"]))
        _record(op, (input, weight, bias) if bias is not None else (input, weight), y,
                {"stride": stride, "padding": padding, "output_padding": output_padding,
                 "dilation": dilation, "groups": groups})
        return y
    return run


kernel("conv_transpose2d")(_conv_transpose("conv_transpose2d", 2))
kernel("conv_transpose1d")(_conv_transpose("conv_transpose1d", 1))


# ---------------------------------------------------------------------------
# pooling

def _pool_dtype(x: Any, op: str) -> Any:
    """The dtype the pooling kernels run in: floats as they are, integers in float64
    (the CPU's rule)."""
    if x.dtype in _FLOATS:
        return x.dtype
    if x.dtype == ember.bool:
        raise NotImplementedError(f"\"{op}\" not implemented for 'Bool'")
    return _F64


def _plane_view(t: Any, dt: Any) -> Any:
    t = t.detach()
    return (t if t.dtype == dt else t._cast(dt.code)).contiguous()


@kernel("max_pool2d", "max_pool2d_with_indices")
def _max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                return_indices=False):
    op = "max_pool2d"
    prm, oshape = _cc.pool_params(input, op, kernel_size, stride, padding, dilation,
                                    ceil_mode)
    cdt = _pool_dtype(input, op)
    x = _plane_view(input, cdt)
    y = _empty(oshape, cdt, input)
    idx = _empty(oshape, _I64, input)
    if y.numel():
        p = _struct(PoolParams, prm)
        _check(_lib().emc_max_pool2d_fwd(cdt.code, ctypes.byref(p), _ptr(x), _ptr(y), _ptr(idx),
                                         _stream(y)), op)
    if cdt != input.dtype:
        y = y._cast(input.dtype.code)
    _record(op, (input,), y, {"indices": idx, "kernel_size": kernel_size, "stride": stride,
                              "padding": padding, "dilation": dilation, "ceil_mode": ceil_mode})
    return (y, idx) if return_indices else y


def _gather_geometry(op: str, grad_output: Any, input: Any, window: dict) -> Any:
    """The pool params of the gather kernels (emc_max_pool2d_bwd with the forward's
    window, emc_adaptive_max_pool2d_bwd from the shapes), or None to scatter."""
    if op == "adaptive_max_pool2d_backward":
        prm, oshape = _cc.adaptive_params(input, op, tuple(grad_output.shape[-2:]))
    elif window.get("kernel_size") is None:
        return None
    else:
        prm, oshape = _cc.pool_params(input, op, window["kernel_size"], window["stride"],
                                      window["padding"], window["dilation"],
                                      window["ceil_mode"])
    if tuple(oshape) != tuple(grad_output.shape):
        raise RuntimeError(f"{op}: grad_output of size {list(grad_output.shape)} does not "
                           f"match the window's output size {list(oshape)}")
    return _struct(PoolParams, prm)


def _max_pool_backward(op: str):
    def run(grad_output, input, indices, kernel_size=None, stride=None, padding=0,
            dilation=1, ceil_mode=False):
        """dx.view(planes, H * W)[plane, indices] += grad_output: the CPU's scatter.  With
        the window known (the autograd formula passes the forward's), one thread per
        input element gathers the outputs whose windows hold it, in output order (the
        CPU's sum, no atomics, no sort); else emc_scatter's deterministic sum."""
        if indices.dtype != _I64:
            raise RuntimeError(f"{op}: expected indices to be int64, got {indices.dtype}")
        if tuple(grad_output.shape) != tuple(indices.shape):
            raise RuntimeError(f"{op}: grad_output of size {list(grad_output.shape)} does not "
                               f"match indices of size {list(indices.shape)}")
        if input.dim() not in (3, 4) or grad_output.dim() != input.dim() or \
                tuple(grad_output.shape[:-2]) != tuple(input.shape[:-2]):
            raise RuntimeError(f"{op}: grad_output of size {list(grad_output.shape)} does not "
                               f"match the input of size {list(input.shape)}")
        cdt = _pool_dtype(input, op)
        HW = input.shape[-2] * input.shape[-1]
        planes = input.numel() // HW if HW else 0
        P = grad_output.shape[-2] * grad_output.shape[-1]
        window = {"kernel_size": kernel_size, "stride": stride, "padding": padding,
                  "dilation": dilation, "ceil_mode": ceil_mode}
        geom = _gather_geometry(op, grad_output, input, window) if planes * P else None
        if geom is None:
            dx = ember.zeros(tuple(input.shape), dtype=cdt, device=input.device)
        else:                                   # the gather writes every element
            dx = _empty(tuple(input.shape), cdt, input)
        if geom is not None:
            with ember.no_grad():
                ix = indices.detach().contiguous()
                src = _plane_view(grad_output, cdt)
                fn = (_lib().emc_adaptive_max_pool2d_bwd if op.startswith("adaptive")
                      else _lib().emc_max_pool2d_bwd)
                _check(fn(cdt.code, ctypes.byref(geom), _ptr(src), _ptr(ix), _ptr(dx),
                          _stream(dx)), op)
        elif planes * P:
            with ember.no_grad():
                ix = indices.detach().contiguous()
                if ((ix < 0) | (ix >= HW)).any().item():
                    raise RuntimeError(f"{op}: Found an invalid max index (output volumes are "
                                       f"of size {input.shape[-2]}x{input.shape[-1]})")
                src = _plane_view(grad_output, cdt)
                nd = K.make_nd((planes, P), (HW, 0), (P, 1), (P, 1))
                s = _stream(dx)
                _check(_lib().emc_scatter(1, cdt.code, _ptr(dx), HW, 1, _ptr(ix), _ptr(src),
                                          ctypes.byref(nd), 1, s), op)
                K.check_index(op, s)
        if cdt != input.dtype:
            dx = dx._cast(input.dtype.code)
        _record(op, (grad_output,), dx, {"indices": indices})
        return dx
    return run


@kernel("adaptive_max_pool2d")
def _adaptive_max_pool2d(input, output_size, return_indices=False):
    op = "adaptive_max_pool2d"
    prm, oshape = _cc.adaptive_params(input, op, output_size)
    cdt = _pool_dtype(input, op)
    x = _plane_view(input, cdt)
    y = _empty(oshape, cdt, input)
    idx = _empty(oshape, _I64, input)
    if y.numel():
        p = _struct(PoolParams, prm)
        _check(_lib().emc_adaptive_max_pool2d_fwd(cdt.code, ctypes.byref(p), _ptr(x), _ptr(y),
                                                  _ptr(idx), _stream(y)), op)
    if cdt != input.dtype:
        y = y._cast(input.dtype.code)
    _record(op, (input,), y, {"indices": idx, "output_size": output_size})
    return (y, idx) if return_indices else y


kernel("max_pool2d_backward")(_max_pool_backward("max_pool2d_backward"))
kernel("adaptive_max_pool2d_backward")(_max_pool_backward("adaptive_max_pool2d_backward"))


def _avg_params(input: Any, op: str, kernel_size: Any, stride: Any, padding: Any,
                ceil_mode: bool, count_include_pad: bool, divisor_override: Any) -> tuple:
    prm, oshape = _cc.pool_params(input, op, kernel_size, stride, padding, 1, ceil_mode)
    div = _cc.pool_divisor(divisor_override, op)
    p = _struct(PoolParams, prm)
    p.count_include_pad = 1 if count_include_pad else 0
    p.divisor = 0 if div is None else div
    return p, oshape, div


def _avg_attrs(kernel_size, stride, padding, ceil_mode, count_include_pad, div) -> dict:
    return {"kernel_size": kernel_size, "stride": stride, "padding": padding,
            "ceil_mode": ceil_mode, "count_include_pad": count_include_pad,
            "divisor_override": div}


@kernel("avg_pool2d")
def _avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
                count_include_pad=True, divisor_override=None):
    op = "avg_pool2d"
    p, oshape, div = _avg_params(input, op, kernel_size, stride, padding, ceil_mode,
                                 count_include_pad, divisor_override)
    cdt = _compute_dtype(input, op)
    x = _plane_view(input, cdt)
    y = _empty(oshape, cdt, input)
    if y.numel():
        _check(_lib().emc_avg_pool2d_fwd(cdt.code, ctypes.byref(p), _ptr(x), _ptr(y),
                                         _stream(y)), op)
    if cdt != input.dtype:
        y = y._cast(input.dtype.code)
    _record(op, (input,), y, _avg_attrs(kernel_size, stride, padding, ceil_mode,
                                        count_include_pad, div))
    return y


@kernel("avg_pool2d_backward")
def _avg_pool2d_backward(grad_output, input, kernel_size, stride=None, padding=0,
                         ceil_mode=False, count_include_pad=True, divisor_override=None):
    op = "avg_pool2d_backward"
    p, oshape, div = _avg_params(input, op, kernel_size, stride, padding, ceil_mode,
                                 count_include_pad, divisor_override)
    if tuple(grad_output.shape) != tuple(oshape):
        raise RuntimeError(f"{op}: expected grad_output of size {list(oshape)}, but got "
                           f"{list(grad_output.shape)}")
    cdt = _compute_dtype(grad_output, op)
    dy = _plane_view(grad_output, cdt)
    dx = _empty(tuple(input.shape), cdt, input)
    if dx.numel():
        _check(_lib().emc_avg_pool2d_bwd(cdt.code, ctypes.byref(p), _ptr(dy), _ptr(dx),
                                         _stream(dx)), op)
    if cdt != grad_output.dtype:
        dx = dx._cast(grad_output.dtype.code)
    _record(op, (grad_output,), dx, _avg_attrs(kernel_size, stride, padding, ceil_mode,
                                               count_include_pad, div))
    return dx


def _adaptive_out(x: Any, output_size: Any, op: str) -> tuple:
    if x.dim() not in (3, 4):
        raise RuntimeError(f"{op}(): Expected 3D or 4D tensor, but got {list(x.shape)}")
    for i in (x.dim() - 2, x.dim() - 1):
        if x.shape[i] == 0:
            raise RuntimeError(f"{op}(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but input has sizes {list(x.shape)} with "
                               f"dimension {i} being empty")
    os_ = tuple(output_size) if isinstance(output_size, (list, tuple)) else \
        (output_size, output_size)
    if len(os_) == 1:
        os_ = os_ * 2
    if len(os_) != 2:
        raise RuntimeError(f"{op}: output_size must be 2")
    H, W = x.shape[-2], x.shape[-1]
    Ho = H if os_[0] is None else int(os_[0])
    Wo = W if os_[1] is None else int(os_[1])
    if Ho < 0 or Wo < 0:
        raise RuntimeError(f"{op}: elements of output_size must be greater than or equal to 0 "
                           f"but received {[Ho, Wo]}")
    return H, W, Ho, Wo


def _avg_matrix(n: int, o: int, dt: Any, dev: Any) -> Any:
    """(o, n) averaging matrix: row i weighs input positions [floor(i n / o),
    ceil((i + 1) n / o)) (the adaptive window) by one over their count."""
    rows = []
    for i in range(o):
        s, e = (i * n) // o, -(-((i + 1) * n) // o)
        rows.append([1.0 / (e - s) if s <= j < e else 0.0 for j in range(n)])
    return ember.tensor(rows, dtype=dt, device=dev)


def _adaptive_apply(t: Any, H: int, W: int, Ho: int, Wo: int, back: bool, like: Any) -> Any:
    """Adaptive average pooling (back: its gradient) of the planes of t.  Windows that
    tile the input evenly (e.g. output 1) are avg_pool2d with kernel = stride = H / Ho;
    any other size is Ah @ plane @ Aw^T with the averaging matrices (GEMMs)."""
    with ember.no_grad():
        if H % Ho == 0 and W % Wo == 0:
            k = (H // Ho, W // Wo)
            return _avg_pool2d_backward(t, like, k, k) if back else _avg_pool2d(t, k, k)
        cdt = _compute_dtype(t, "adaptive_avg_pool2d")
        x = t.detach()
        x = (x if x.dtype == cdt else x._cast(cdt.code)).reshape(-1, *x.shape[-2:])
        Ah, Aw = _avg_matrix(H, Ho, cdt, t.device), _avg_matrix(W, Wo, cdt, t.device)
        if back:
            y = ember.matmul(ember.matmul(Ah.t(), x), Aw).reshape(tuple(like.shape))
        else:
            y = ember.matmul(ember.matmul(Ah, x), Aw.t()).reshape(tuple(t.shape[:-2]) +
                                                                   (Ho, Wo))
        return y if y.dtype == t.dtype else y._cast(t.dtype.code)


@kernel("adaptive_avg_pool2d")
def _adaptive_avg_pool2d(input, output_size):
    op = "adaptive_avg_pool2d"
    H, W, Ho, Wo = _adaptive_out(input, output_size, op)
    if Ho * Wo == 0 or input.numel() == 0:
        y = _empty(tuple(input.shape[:-2]) + (Ho, Wo), input.dtype, input)
    else:
        y = _adaptive_apply(input.detach(), H, W, Ho, Wo, False, input)
    _record(op, (input,), y, {"output_size": output_size})
    return y


@kernel("adaptive_avg_pool2d_backward")
def _adaptive_avg_pool2d_backward(grad_output, input):
    op = "adaptive_avg_pool2d_backward"
    if grad_output.dim() != input.dim() or input.dim() not in (3, 4):
        raise RuntimeError(f"{op}: grad_output of size {list(grad_output.shape)} does not match "
                           f"the input {list(input.shape)}")
    H, W, Ho, Wo = _adaptive_out(input, tuple(grad_output.shape[-2:]), op)
    if tuple(grad_output.shape[:-2]) != tuple(input.shape[:-2]):
        raise RuntimeError(f"{op}: grad_output of size {list(grad_output.shape)} does not match "
                           f"the input {list(input.shape)}")
    if Ho * Wo == 0 or input.numel() == 0:
        dx = ember.zeros(tuple(input.shape), dtype=grad_output.dtype, device=input.device)
    else:
        dx = _adaptive_apply(grad_output.detach(), H, W, Ho, Wo, True, input.detach())
    _record(op, (grad_output,), dx, {"input_shape": tuple(input.shape)})
    return dx


# ---------------------------------------------------------------------------
# batch_norm

def fits_batch_norm(input: Any, running_mean: Any, running_var: Any, weight: Any,
                    bias: Any) -> bool:
    """Whether the fused kernels compute this batch_norm (else the composed ops do):
    a float input, and every parameter / statistic a contiguous vector of its dtype
    on its device."""
    if input.dtype not in _FLOATS or input.dim() < 2:
        return False
    for t in (running_mean, running_var, weight, bias):
        if t is not None and not (isinstance(t, ember.Tensor) and t.dtype == input.dtype and
                                  t.device == input.device and t.dim() == 1 and
                                  t.shape[0] == input.shape[1] and t.is_contiguous()):
            return False
    return True


class _BatchNorm(Function):
    @staticmethod
    def forward(ctx, input, weight, bias, running_mean, running_var, training, momentum, eps):
        x = input.contiguous()
        N, C = x.shape[0], x.shape[1]
        HW = 1
        for s in x.shape[2:]:
            HW *= s
        sd = _F64 if x.dtype == _F64 else _F32
        y = _empty(tuple(x.shape), x.dtype, x)
        sm = _empty((C,), sd, x) if training else None
        si = _empty((C,), sd, x) if training else None
        w = None if weight is None else weight.detach()
        b = None if bias is None else bias.detach()
        rm = None if running_mean is None else running_mean.detach()
        rv = None if running_var is None else running_var.detach()
        if C:
            K.check(_lib().emc_batch_norm_fwd(
                x.dtype.code, _ptr(x), _ptr(w) if w is not None else None,
                _ptr(b) if b is not None else None, _ptr(rm) if rm is not None else None,
                _ptr(rv) if rv is not None else None, N, C, HW, int(training),
                ctypes.c_double(momentum), ctypes.c_double(eps), _ptr(y),
                _ptr(sm) if sm is not None else None, _ptr(si) if si is not None else None,
                _stream(y)), "batch_norm")
        if training:
            for r in (running_mean, running_var):
                if r is not None:
                    r._bump_version()
        ctx.save_for_backward(x, w, rm if not training else None,
                              rv if not training else None, sm, si)
        ctx.dims = (N, C, HW, bool(training), float(eps), weight is not None, bias is not None)
        return y

    @staticmethod
    def backward(ctx, grad):
        x, w, rm, rv, sm, si = ctx.saved_tensors
        N, C, HW, training, eps, has_w, has_b = ctx.dims
        dy = grad.contiguous()
        if dy.dtype != x.dtype:
            dy = dy._cast(x.dtype.code)
        dx = _empty(tuple(x.shape), x.dtype, x)
        dw = _empty((C,), x.dtype, x) if has_w else None
        db = _empty((C,), x.dtype, x) if has_b else None
        if C:
            def P(t):
                return _ptr(t) if t is not None else None
            K.check(_lib().emc_batch_norm_bwd(x.dtype.code, _ptr(dy), _ptr(x), P(w), P(rm),
                                              P(rv), P(sm), P(si), N, C, HW, int(training),
                                              ctypes.c_double(eps), _ptr(dx), P(dw), P(db),
                                              _stream(dx)), "batch_norm")
        return dx, dw, db, None, None, None, None, None


def batch_norm(input: Any, running_mean: Any, running_var: Any, weight: Any = None,
               bias: Any = None, training: bool = False, momentum: float = 0.1,
               eps: float = 1e-5) -> Any:
    """Batch normalisation of a CUDA tensor over every dim but 1 (the fused kernels):
    training normalises with the batch statistics and updates the running ones in
    place (unbiased variance), eval uses the running statistics."""
    for t, nm in ((running_mean, "running_mean"), (running_var, "running_var"),
                  (weight, "weight"), (bias, "bias")):
        _same_device(input, t, "batch_norm", nm)
    if training:
        n = input.numel() // input.shape[1] if input.shape[1] else 0
        if n <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input "
                             f"size {list(input.shape)}")
    elif running_mean is None or running_var is None:
        raise RuntimeError("batch_norm: running_mean and running_var must be defined in "
                           "evaluation mode")
    return _BatchNorm.apply(input, weight, bias, running_mean, running_var, bool(training),
                            float(momentum), float(eps))

