"""CUDA addmm / baddbmm / addmv: ``beta * input + alpha * (m1 @ m2)`` as one GEMM
launch whose output starts as ``input`` broadcast (the GEMM's beta term), as the
CPU kernels do; they record the CPU's graph nodes, so the formula table gives
their gradients on the device."""

from __future__ import annotations

from typing import Any

import ember
from ember.cuda._device_ops import _gemm, _same_dtype
from ember.cuda._dispatch import _TORCH_NAMES, _empty, _record, _write_out, copy_into, kernel


def _scalar(v: Any, op: str, name: str) -> float:
    if isinstance(v, ember.Tensor):
        v = v.item()
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f"{op}(): argument '{name}' must be Number, not {type(v).__name__}")
    return float(v)


def _prefill(input: Any, shape: tuple, like: Any, beta: float, op: str) -> Any:
    """A new ``shape`` result holding input broadcast (left unset when beta == 0)."""
    if input.dtype != like.dtype:
        raise RuntimeError(f"expected self and mat to have the same dtype, but got: "
                           f"{_TORCH_NAMES[input.dtype].lower()} != "
                           f"{_TORCH_NAMES[like.dtype].lower()}")
    c = _empty(shape, like.dtype, like)
    if beta != 0.0:
        try:
            ok = ember.broadcast_shapes(tuple(input.shape), shape) == shape
        except RuntimeError:
            ok = False
        if not ok:
            raise RuntimeError(f"The expanded size of the tensor ({shape[-1]}) must match the "
                               f"existing size ({input.shape[-1] if input.dim() else 1}) at "
                               f"non-singleton dimension {len(shape) - 1}.  Target sizes: "
                               f"{list(shape)}.  Tensor sizes: {list(input.shape)}")
        copy_into(c, input.detach().expand(*shape))
    return c


def _finish(op: str, inputs: tuple, r: Any, beta: float, alpha: float, out: Any) -> Any:
    if out is not None:
        return _write_out(out, r, op)
    _record(op, inputs, r, {"beta": beta, "alpha": alpha})
    return r


@kernel("addmm")
def _addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    op = "addmm"
    beta, alpha = _scalar(beta, op, "beta"), _scalar(alpha, op, "alpha")
    for m, nm in ((mat1, "mat1"), (mat2, "mat2")):
        if m.dim() != 2:
            raise RuntimeError(f"{nm} must be a matrix, got {m.dim()}-D tensor")
    if mat1.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({mat1.shape[0]}x"
                           f"{mat1.shape[1]} and {mat2.shape[0]}x{mat2.shape[1]})")
    _same_dtype(mat1, mat2)
    shape = (mat1.shape[0], mat2.shape[1])
    r = _prefill(input, shape, mat1, beta, op)
    _gemm(mat1.detach().unsqueeze(0), mat2.detach().unsqueeze(0), r.unsqueeze(0), beta, alpha)
    return _finish(op, (input, mat1, mat2), r, beta, alpha, out)


@kernel("baddbmm")
def _baddbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    op = "baddbmm"
    beta, alpha = _scalar(beta, op, "beta"), _scalar(alpha, op, "alpha")
    for m, nm in ((batch1, "batch1"), (batch2, "batch2")):
        if m.dim() != 3:
            raise RuntimeError(f"{nm} must be a 3D tensor")
    if batch2.shape[0] != batch1.shape[0] or batch2.shape[1] != batch1.shape[2]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{batch1.shape[0]}, {batch1.shape[2]}] but got: "
                           f"[{batch2.shape[0]}, {batch2.shape[1]}].")
    _same_dtype(batch1, batch2)
    shape = (batch1.shape[0], batch1.shape[1], batch2.shape[2])
    r = _prefill(input, shape, batch1, beta, op)
    _gemm(batch1.detach(), batch2.detach(), r, beta, alpha)
    return _finish(op, (input, batch1, batch2), r, beta, alpha, out)


@kernel("addmv")
def _addmv(input, mat, vec, *, beta=1, alpha=1, out=None):
    op = "addmv"
    beta, alpha = _scalar(beta, op, "beta"), _scalar(alpha, op, "alpha")
    if mat.dim() != 2 or vec.dim() != 1 or input.dim() > 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input.dim()}, "
                           f"{mat.dim()}, {vec.dim()}")
    if mat.shape[1] != vec.shape[0] or (input.dim() == 1 and
                                        input.shape[0] not in (1, mat.shape[0])):
        raise RuntimeError(f"size mismatch, got input ({input.shape[0] if input.dim() else 1}), "
                           f"mat ({mat.shape[0]}x{mat.shape[1]}), vec ({vec.shape[0]})")
    _same_dtype(mat, vec)
    r = _prefill(input, (mat.shape[0],), mat, beta, op)
    _gemm(mat.detach().unsqueeze(0), vec.detach().view(-1, 1).unsqueeze(0),
          r.view(-1, 1).unsqueeze(0), beta, alpha)
    return _finish(op, (input, mat, vec), r, beta, alpha, out)


@kernel("mv")
def _mv(input, vec, *, out=None):
    if input.dim() != 2 or vec.dim() != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {input.dim()}, "
                           f"{vec.dim()}")
    if input.shape[1] != vec.shape[0]:
        raise RuntimeError(f"size mismatch, got input ({input.shape[0]}), mat ({input.shape[0]}"
                           f"x{input.shape[1]}), vec ({vec.shape[0]})")
    _same_dtype(input, vec)
    r = _empty((input.shape[0],), input.dtype, input)
    _gemm(input.detach().unsqueeze(0), vec.detach().view(-1, 1).unsqueeze(0),
          r.view(-1, 1).unsqueeze(0))
    if out is not None:
        return _write_out(out, r, "mv")
    _record("mv", (input, vec), r, None)
    return r


@kernel("dot")
def _dot(input, tensor, *, out=None):
    if input.dim() != 1 or tensor.dim() != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.dim()}D and {tensor.dim()}D "
                           f"tensors")
    if input.dtype != tensor.dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                           f"{_TORCH_NAMES[input.dtype]} and {_TORCH_NAMES[tensor.dtype]}")
    if input.shape[0] != tensor.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{input.shape[0]}] and "
                           f"src [{tensor.shape[0]}] to have the same number of elements, but "
                           f"got {input.shape[0]} and {tensor.shape[0]} elements respectively")
    r = _empty((1, 1), input.dtype, input)
    _gemm(input.detach().view(1, -1).unsqueeze(0), tensor.detach().view(-1, 1).unsqueeze(0),
          r.unsqueeze(0))
    r = r.view(())
    if out is not None:
        return _write_out(out, r, "dot")
    _record("dot", (input, tensor), r, None)
    return r


@kernel("outer")
def _outer(input, vec2, *, out=None):
    if input.dim() != 1:
        raise RuntimeError(f"outer: Expected 1-D argument self, but got {input.dim()}-D")
    if vec2.dim() != 1:
        raise RuntimeError(f"outer: Expected 1-D argument vec2, but got {vec2.dim()}-D")
    _same_dtype(input, vec2)
    with ember.no_grad():        # one product per element: the CPU's values exactly
        r = ember.mul(input.detach().view(-1, 1), vec2.detach().view(1, -1))
    if out is not None:
        return _write_out(out, r, "outer")
    _record("outer", (input, vec2), r, None)
    return r
