"""``cond`` and ``while_loop``: PyTorch's structured control-flow operators, run eagerly
(the branch or loop body is called with the operands; under ``ember.compile`` reading
the predicate's value is a graph break, as any data-dependent branch)."""
from __future__ import annotations

from typing import Any, Callable

from ember._C import core

__all__ = ["cond", "while_loop"]


def _truth(value, what: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, core.TensorBase) and value.numel() == 1:
        return bool(value.item())
    raise RuntimeError(f"Expected {what} to be bool or single-element tensor, but got "
                       f"{value!r}.")


def cond(pred, true_fn: Callable, false_fn: Callable, operands=()) -> Any:
    """``true_fn(*operands)`` if ``pred`` else ``false_fn(*operands)``.

    Parameters
    ----------
    pred : bool or Tensor
        A Python bool or a one-element tensor.
    true_fn, false_fn : callable
        The branches; each takes the operands.
    operands : tuple or list of Tensors
        The branch arguments.
    """
    if not (callable(true_fn) and callable(false_fn)):
        raise RuntimeError("Expect both branches to be callable.")
    branch = true_fn if _truth(pred, "pred") else false_fn
    return branch(*tuple(operands))


def _describe(t) -> str:
    return f"Tensor(shape={list(t.shape)}, dtype={t.dtype})" if isinstance(
        t, core.TensorBase) else repr(t)


def while_loop(cond_fn: Callable, body_fn: Callable, carried_inputs) -> tuple:
    """Run ``carried = body_fn(*carried)`` while ``cond_fn(*carried)`` is true and return
    the final ``carried`` (the inputs when the condition is false at once).

    ``cond_fn`` returns a bool or a one-element tensor; ``body_fn`` returns as many values
    as it takes, each tensor with the shape and dtype of the one it replaces.
    """
    if not (callable(cond_fn) and callable(body_fn)):
        raise RuntimeError("Expect cond_fn and body_fn to be callable.")
    if not isinstance(carried_inputs, (tuple, list)):
        raise RuntimeError(f"Expect carried_inputs to be a tuple or list, but got "
                           f"{type(carried_inputs).__name__}")
    carried = tuple(carried_inputs)
    while _truth(cond_fn(*carried), "cond_fn's output"):
        out = body_fn(*carried)
        out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        if len(out) != len(carried):
            raise RuntimeError(f"Expected body_fn to return {len(carried)} values (as many as "
                               f"carried_inputs), but got {len(out)}")
        for i, (a, b) in enumerate(zip(out, carried)):
            same = (isinstance(a, core.TensorBase) == isinstance(b, core.TensorBase)) and (
                not isinstance(a, core.TensorBase) or
                (tuple(a.shape) == tuple(b.shape) and a.dtype == b.dtype))
            if not same:
                raise RuntimeError(f"Expected body_fn_output and carried_inputs to have same "
                                   f"metadata but found: pair[{i}] differ: {_describe(a)} vs "
                                   f"{_describe(b)}")
        carried = out
    return carried
