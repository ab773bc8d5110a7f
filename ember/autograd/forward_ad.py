"""Forward-mode AD (PyTorch's ``torch.autograd.forward_ad``): dual tensors carry a tangent,
and every op on them computes the tangent of its result, ``J @ tangent``.

There is no second table of forward formulas: the tangent of an op is derived from its
backward formula (the one table in ``_table``). The backward ``v -> J^T v`` is linear in
``v``, so ``J t = d/dv <J^T v, t>``: each op on a dual tensor evaluates its backward node
once at a zero cotangent that requires grad and differentiates that once more. This
covers every op with a backward formula that is differentiable again (``create_graph``).

Dual tensors are found through autograd recording: a dual tensor takes part in it
(``requires_grad`` is True) and tangents flow only while grad mode is on.
"""
from __future__ import annotations

import weakref
from collections import namedtuple

from ember._C.core import TensorBase
from ember.autograd import _engine
from ember.autograd.grad_mode import enable_grad

__all__ = ["dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual",
           "UnpackedDualTensor"]

UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])

_level: list = [None]          # the one active level (nesting is not supported)
_tangents: dict = {}           # id(tensor) -> (weakref(tensor), tangent)
_busy = [False]                # set while a tangent is being computed (its ops carry none)


def _get(t):
    e = _tangents.get(id(t))
    if e is None or e[0]() is not t:
        return None
    return e[1]


def _set(t, tangent):
    key = id(t)
    _tangents[key] = (weakref.ref(t, lambda _r, k=key: _tangents.pop(k, None)), tangent)


def _alias(src, dst):
    t = _get(src)
    if t is not None:
        _set(dst, t)


def enter_dual_level() -> int:
    """Open a forward-AD level (only one at a time); returns its index."""
    if _level[0] is not None:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _level[0] = 0
    _engine.push_record_hook(_record)
    _engine._recorder[0] = _record
    return 0


def exit_dual_level(*, level: int | None = None) -> None:
    """Close the level: every tangent made in it is dropped."""
    if _level[0] is None or (level is not None and level != _level[0]):
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that "
                           "was created. This is not supported.")
    _level[0] = None
    _tangents.clear()
    _engine.pop_record_hook(_record)
    _engine._recorder[0] = None


class dual_level:
    """Context manager for a forward-AD level: dual tensors made inside it lose their
    tangents on exit.

    Examples
    --------
    >>> import ember.autograd.forward_ad as fwAD
    >>> with fwAD.dual_level():
    ...     x = fwAD.make_dual(ember.tensor([1.0, 2.0]), ember.tensor([1.0, 0.0]))
    ...     jvp = fwAD.unpack_dual(x.sin()).tangent     # cos(x) * [1, 0]
    """

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc) -> None:
        exit_dual_level()


def make_dual(tensor: TensorBase, tangent: TensorBase, *, level: int | None = None):
    """A view of ``tensor`` whose tangent is ``tangent`` (same shape, floating dtypes)."""
    if _level[0] is None:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, "
                           "make sure to enter_dual_level() first.")
    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise ValueError(f"Expected primal to be floating point or complex, but got: "
                         f"{tensor.dtype}")
    if not (tangent.is_floating_point() or tangent.is_complex()):
        raise ValueError(f"Expected tangent to be floating point or complex, but got: "
                         f"{tangent.dtype}")
    if tuple(tensor.shape) != tuple(tangent.shape):
        raise RuntimeError(f"Trying to set a forward gradient that has a different size than "
                           f"that of the original Tensor, this is not supported. Tensor is of "
                           f"size {list(tensor.shape)} while the given forward gradient is of "
                           f"size {list(tangent.shape)}.")
    _busy[0] = True
    try:
        with enable_grad():
            dual = tensor.view_as(tensor) if tensor.requires_grad else \
                tensor.detach().requires_grad_(True)
    finally:
        _busy[0] = False
    _set(dual, tangent.to(tensor.dtype))
    return dual


def unpack_dual(tensor: TensorBase, *, level: int | None = None) -> UnpackedDualTensor:
    """``(primal, tangent)`` of ``tensor``; ``tangent`` is None when it has none."""
    tangent = _get(tensor) if _level[0] is not None else None
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    _busy[0] = True
    try:
        primal = tensor.view_as(tensor)
    finally:
        _busy[0] = False
    return UnpackedDualTensor(primal, tangent)


def _record(name, inputs, output, attrs):
    out = _engine._record(name, inputs, output, attrs)
    if _busy[0] or not _tangents:
        return out
    tans = [_get(x) if isinstance(x, TensorBase) else None for x in inputs]
    if all(t is None for t in tans):
        return out
    _busy[0] = True
    try:
        _propagate(name, inputs, tans, output)
    finally:
        _busy[0] = False
    return out


def _custom_function(name, args, output):
    """Tangents through an ``autograd.Function``, from its backward like any op."""
    if _busy[0] or not _tangents:
        return
    tans = [_get(x) if isinstance(x, TensorBase) else None for x in args]
    if all(t is None for t in tans):
        return
    _busy[0] = True
    try:
        _propagate(name, args, tans, output)
    finally:
        _busy[0] = False


def _inner(g, t):
    """The real inner product <g, t> = Re sum(conj(g) t): complex gradients follow torch's
    convention (dL/dx + i dL/dy), so differentiating it in the cotangent gives J t."""
    if not (g.is_complex() or t.is_complex()):
        return (g * t).sum()
    import ember
    return ember.real((g.conj() * t).sum()) if g.is_complex() else (g * ember.real(t)).sum()


def _propagate(name, inputs, tans, output):
    import ember
    outs = output if type(output) is tuple else (output,)
    node = next(o._grad_fn for o in outs if o is not None and o._grad_fn is not None)
    with enable_grad():
        us = [ember.zeros_like(o).requires_grad_(True)
              if o is not None and (o.is_floating_point() or o.is_complex()) else None
              for o in outs]
        grads = node._apply(us[0] if len(outs) == 1 else tuple(us))
        total = None
        for g, x, t in zip(grads, inputs, tans):
            if g is None or t is None:
                continue
            term = _inner(_engine._fix_grad(g, x), t)
            total = term if total is None else total + term
        live = [u for u in us if u is not None]
        if total is None:
            return
        if not total.requires_grad:
            raise RuntimeError(f"forward-mode AD: the derivative of '{name}' cannot be "
                               f"derived from its backward formula (not differentiable in "
                               f"its gradient)")
        res = ember.autograd.grad(total, live, allow_unused=True)
    res = iter(res)
    saved = node._out if type(node._out) is tuple else (node._out,)
    for k, (o, u) in enumerate(zip(outs, us)):
        if u is not None:
            r = next(res)
            tangent = (r if r is not None else ember.zeros_like(o)).detach()
            _set(o, tangent)
            if k < len(saved) and saved[k] is not None:   # the copy formulas read
                _set(saved[k], tangent)
