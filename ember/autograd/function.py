"""``ember.autograd.Function``: user-defined ops with a hand-written backward.

As in PyTorch the ``ctx`` passed to ``forward``/``backward`` is the graph node
itself (class ``<Name>Backward``), so it is what ``output.grad_fn`` returns."""
from __future__ import annotations

import functools

from ember._C.core import (
    TensorBase,
    _dispatch,
    _mode_active,
    _set_grad_enabled,
    is_grad_enabled,
    zeros,
)
from ember.autograd import _engine
from ember.autograd._engine import FREED_MSG, Node, _accumulate_node, _Freed, _version_error

__all__ = ["Function", "FunctionCtx", "once_differentiable", "BackwardCFunction",
           "InplaceFunction", "NestedIOFunction"]

_SAVED_FREED = object()


class FunctionCtx:
    """The methods a Function's ``ctx`` offers (mixed into its node class)."""

    def save_for_backward(self, *tensors):
        for t in tensors:
            if t is not None and not isinstance(t, TensorBase):
                raise TypeError(f"save_for_backward can only save variables, but argument "
                                f"{tensors.index(t)} is of type {type(t).__name__}")
        self._to_save = tensors

    def save_for_forward(self, *tensors):
        self._saved_for_forward = tensors

    def mark_dirty(self, *args):
        self._dirty = args

    def mark_non_differentiable(self, *args):
        self._non_diff = args

    def set_materialize_grads(self, value: bool):
        self._materialize = bool(value)

    @property
    def saved_tensors(self):
        saved = self._saved
        if saved is _SAVED_FREED:
            raise RuntimeError(FREED_MSG)
        if saved is None:
            return tuple(getattr(self, "_to_save", ()))
        out = []
        grad_on = is_grad_enabled()
        for t, v, k in saved:
            if t is None:
                out.append(None)
                continue
            if t._version != v:
                raise _version_error(t, v, (self, k) if k is not None else _engine._producer(t),
                                     self)
            if k is not None and grad_on:     # an output: re-attach to this node
                t = t.detach()
                t._grad_fn = self
                t._requires_grad = True
                t._ag_nr = (self, k)
            out.append(t)
        return tuple(out)

    saved_variables = saved_tensors


class BackwardCFunction(FunctionCtx, Node):
    """The graph node of one ``Function.apply`` call (it is also the ``ctx``)."""

    _forward_cls = None

    def _apply(self, grads):
        grads = grads if self._nout > 1 else (grads,)
        if self._materialize and any(g is None for g in grads):
            grads = tuple(zeros(m[0], dtype=m[1]) if g is None and m is not None else g
                          for g, m in zip(grads, self._out_meta))
        cls = self._forward_cls
        res = cls.backward(self, *grads)
        if not isinstance(res, tuple):
            res = (res,)
        n = len(self._next)
        if len(res) != n:
            if len(res) > n and all(r is None for r in res[n:]):
                res = res[:n]
            else:
                raise RuntimeError(f"function {self.name()} returned an incorrect number of "
                                   f"gradients (expected {n}, got {len(res)})")
        for i, (g, e) in enumerate(zip(res, self._next)):
            if g is not None and e is not None:
                if not isinstance(g, TensorBase):
                    raise TypeError(f"function {self.name()} returned a gradient of type "
                                    f"{type(g).__name__} at index {i}, expected a Tensor")
                x = self._inputs[i]
                if tuple(g.shape) != tuple(x.shape):
                    try:
                        _broadcastable_to(tuple(g.shape), tuple(x.shape))
                    except ValueError:
                        raise RuntimeError(
                            f"Function {self.name()} returned an invalid gradient at index "
                            f"{i} - got {list(g.shape)} but expected shape compatible with "
                            f"{list(x.shape)}") from None
        return res

    def _release(self, fixed=None):
        if self._saved is not None:
            self._saved = _SAVED_FREED
        self._to_save = ()

    @property
    def next_functions(self):
        return tuple((None, 0) if e is None else e for e in self._next)


def _broadcastable_to(src, dst):
    if len(src) < len(dst):
        raise ValueError
    k = len(src) - len(dst)
    for s, d in zip(src[k:], dst):
        if d != 1 and s != d:
            raise ValueError


class FunctionMeta(type):
    def __init__(cls, name, bases, attrs):
        cls._backward_cls = type(name + "Backward", (BackwardCFunction,),
                                 {"_forward_cls": cls, "__module__": cls.__module__})
        super().__init__(name, bases, attrs)


class Function(metaclass=FunctionMeta):
    """Subclass with ``@staticmethod forward(ctx, *args)`` and
    ``@staticmethod backward(ctx, *grad_outputs)`` (or ``forward(*args)`` plus
    ``setup_context(ctx, inputs, output)``); call with ``MyFn.apply(*args)``."""

    is_traceable = False
    generate_vmap_rule = False

    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Legacy autograd function with non-static forward method is "
                           "deprecated. Please use new-style autograd function with static "
                           "forward method.")

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward mode "
                                  "AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("You must implement the jvp function for custom "
                                  "autograd.Function to use it with forward mode AD.")

    @staticmethod
    def vmap(info, in_dims, *args):
        raise NotImplementedError("vmap is not supported for ember autograd Functions")

    @classmethod
    def apply(cls, *args, **kwargs):
        if _mode_active():
            # a Python mode (graph capture) sees a custom Function as one op: a replay
            # must run this forward and backward, not the ops inside forward
            return _dispatch(cls.__name__, cls.apply, args, kwargs)
        node = _engine.new_node(cls._backward_cls)
        node._saved = None
        node._to_save = ()
        node._dirty = ()
        node._non_diff = ()
        node._materialize = True
        grad_on = is_grad_enabled()
        nxt = []
        needs = False
        for a in args:
            if grad_on and isinstance(a, TensorBase) and a._requires_grad:
                needs = True
                fn = a._grad_fn
                nxt.append(_engine._edge_of(a) if fn is not None else (_accumulate_node(a), 0))
            else:
                nxt.append(None)
        node._next = nxt
        custom_setup = cls.setup_context is not Function.setup_context
        _set_grad_enabled(False)
        try:
            if custom_setup:
                out = cls.forward(*args, **kwargs)
                cls.setup_context(node, args, out)
            else:
                out = cls.forward(node, *args, **kwargs)
        finally:
            _set_grad_enabled(grad_on)
        if not needs:
            return out
        out = _wrap_outputs(node, args, out)
        if _engine._recorder[0] is not None:       # forward-mode AD is active
            from ember.autograd.forward_ad import _custom_function
            _custom_function(cls.__name__, args, out)
        return out


def _wrap_outputs(node, args, out):
    is_tuple = isinstance(out, tuple)
    outs = list(out) if is_tuple else [out]
    arg_ids = {id(a) for a in args if isinstance(a, TensorBase)}
    dirty = {id(t) for t in node._dirty}
    non_diff = {id(t) for t in node._non_diff}
    meta = []
    for k, o in enumerate(outs):
        if not isinstance(o, TensorBase):
            meta.append(None)
            continue
        meta.append((tuple(o.shape), o.dtype))
        orig_id = id(o)
        if orig_id in dirty:
            if o._requires_grad and o._grad_fn is None:
                raise RuntimeError("a leaf Variable that requires grad has been used in an "
                                   "in-place operation.")
        elif orig_id in arg_ids:
            o = outs[k] = o.detach()          # an input returned as is: a new alias
        if orig_id in non_diff or not o.is_floating_point():
            continue
        o._grad_fn = node
        o._requires_grad = True
        o._ag_nr = (node, k)
    node._nout = len(outs)
    node._out_meta = meta
    node._inputs = tuple(_Freed(a) if e is not None else None
                         for a, e in zip(args, node._next))
    # saved tensors: outputs are kept as detached aliases (no reference cycle)
    out_pos = {id(o): k for k, o in enumerate(outs) if isinstance(o, TensorBase)}
    saved = []
    for t in node._to_save:
        if t is None:
            saved.append((None, None, None))
            continue
        k = out_pos.get(id(t))
        if k is not None and t._grad_fn is node:
            saved.append((t.detach(), t._version, k))
        else:
            saved.append((t, t._version, None))
    node._saved = tuple(saved)
    node._to_save = ()
    if _engine._anomaly[0]:
        import traceback
        node._ext()["traceback_"] = traceback.format_stack()[:-2]
    return tuple(outs) if is_tuple else outs[0]


class InplaceFunction(Function):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace


class NestedIOFunction(Function):
    pass


# --- once_differentiable -------------------------------------------------------

def _delayed_error(ctx, grad):
    raise RuntimeError("trying to differentiate twice a function that was marked with "
                       "@once_differentiable")


def once_differentiable(fn):
    """Run ``backward`` without recording; differentiating its result again raises."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        prev = is_grad_enabled()
        _set_grad_enabled(False)
        try:
            outputs = fn(ctx, *args)
        finally:
            _set_grad_enabled(prev)
        if not prev:
            return outputs
        grads_in = tuple(a for a in args if isinstance(a, TensorBase) and a._requires_grad)
        if not grads_in:
            return outputs
        outs = outputs if isinstance(outputs, tuple) else (outputs,)
        from ember.autograd._table import FORMULAS, formula
        if "__once_differentiable__" not in FORMULAS:
            formula("__once_differentiable__", node_name="DelayedError")(_delayed_error)
        for o in outs:
            if isinstance(o, TensorBase) and o.is_floating_point():
                _engine._record("__once_differentiable__", grads_in, o, None)
        return outputs

    return wrapper
