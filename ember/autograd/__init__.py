"""ember.autograd: reverse-mode automatic differentiation in pure Python.

The native core calls the hook installed here whenever an op runs with grad mode
on and an input that requires grad; the hook adds one node to the graph. The
engine (``_engine.py``) runs the graph backwards on the calling thread; the
derivative formulas live in one table (``_table.py``)."""
from __future__ import annotations

from ember._C import core as _core
from ember._C import index as _index
from ember._C.core import TensorBase as _TensorBase
from ember.autograd import _engine, _table  # noqa: F401  (_table wires the lazy formulas)
from ember.autograd.anomaly_mode import (
    detect_anomaly,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    set_detect_anomaly,
)
from ember.autograd.function import Function, FunctionCtx, NestedIOFunction, once_differentiable  # noqa: F401
from ember.autograd.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)

__all__ = ["Function", "FunctionCtx", "once_differentiable", "backward", "grad", "no_grad",
           "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled", "detect_anomaly", "set_detect_anomaly",
           "is_anomaly_enabled", "is_anomaly_check_nan_enabled", "gradcheck", "gradgradcheck",
           "GradcheckError", "functional", "graph", "Variable"]

_ONES = {}


def _as_list(x, what):
    if x is None:
        return None
    if isinstance(x, _TensorBase):
        return [x]
    if isinstance(x, (list, tuple)):
        return list(x)
    raise TypeError(f"{what}: expected a Tensor or a sequence of Tensors, got "
                    f"{type(x).__name__}")


def _make_grads(outputs, grads, is_grads_batched=False):
    res = []
    for i, (out, g) in enumerate(zip(outputs, grads)):
        if g is None:
            if out._requires_grad:
                if out.numel() != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                if not out.is_floating_point():
                    raise RuntimeError(f"grad can be implicitly created only for real scalar "
                                       f"outputs but got {out.dtype}")
                if out.dim() == 0:
                    g = _ones(out.dtype, out.device)
                else:
                    g = _core.ones(tuple(out.shape), dtype=out.dtype, device=out.device)
            res.append(g)
            continue
        if not isinstance(g, _TensorBase):
            raise TypeError(f"gradients can be either Tensors or None, but got "
                            f"{type(g).__name__}")
        if tuple(g.shape) != tuple(out.shape) and not is_grads_batched:
            if g.numel() == out.numel() == 1 or False:
                g = g.reshape(tuple(out.shape))
            else:
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                                   f"{g.shape} and output[{i}] has a shape of {out.shape}.")
        if g.dtype is not out.dtype and out.is_floating_point():
            g = g.to(out.dtype)
        res.append(g)
    return res


def _roots(outputs):
    roots = []
    for i, t in enumerate(outputs):
        if not isinstance(t, _TensorBase):
            raise TypeError(f"outputs must be Tensors, got {type(t).__name__}")
        if not t._requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not "
                               f"have a grad_fn")
        roots.append(_engine._edge_of(t))
    return roots


def _ones(dtype, device=None):
    # the implicit gradient of a scalar output: one read-only tensor per dtype and
    # device (the engine never writes into gradients, and AccumulateGrad does not
    # steal shared ones)
    key = dtype if device is None or device.type == "cpu" else (dtype, device)
    g = _ONES.get(key)
    if g is None:
        g = _ONES[key] = _core.ones((), dtype=dtype, device=device)
    return g


def _tensor_backward(t, retain_graph, create_graph, _run=_engine.run_backward):
    """``t.backward()`` with no gradient and no inputs: the training-step path."""
    if t._requires_grad and t.dim() == 0 and t.is_floating_point():
        fn = t._grad_fn
        g = _ONES.get(t.dtype) if t.device.type == "cpu" else None
        if g is None:
            g = _ones(t.dtype, t.device)
        _run([_engine._edge_of(t) if fn is None or t._ag_nr is not None else (fn, 0)], [g],
             create_graph if retain_graph is None else retain_graph, create_graph)
    else:
        backward(t, None, retain_graph, create_graph)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
             grad_variables=None, inputs=None):
    """Compute the sum of gradients of ``tensors`` w.r.t. graph leaves, accumulating
    them into the leaves' ``.grad`` (only into ``inputs`` when given)."""
    if grad_tensors is None and inputs is None and grad_variables is None and \
            isinstance(tensors, _TensorBase) and tensors._requires_grad and \
            tensors.dim() == 0 and tensors.is_floating_point():
        # the training-step path: loss.backward()
        fn = tensors._grad_fn
        root = _engine._edge_of(tensors) if fn is None or tensors._ag_nr is not None else (fn, 0)
        _engine.run_backward([root], [_ones(tensors.dtype, tensors.device)],
                             create_graph if retain_graph is None else retain_graph,
                             create_graph)
        return
    if grad_variables is not None:
        grad_tensors = grad_variables
    outputs = _as_list(tensors, "backward")
    if isinstance(grad_tensors, _TensorBase):
        grads = [grad_tensors]
    elif grad_tensors is None:
        grads = [None] * len(outputs)
    else:
        grads = list(grad_tensors)
    if len(grads) != len(outputs):
        raise RuntimeError(f"got {len(grads)} gradients for {len(outputs)} tensors")
    if inputs is not None:
        inputs = _as_list(inputs, "backward")
        if len(inputs) == 0:
            raise RuntimeError("'inputs' argument to backward() cannot be empty.")
        for t in inputs:
            if not t._requires_grad:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
    # fast path: one scalar output, no explicit gradient
    if len(outputs) == 1 and grads[0] is None:
        out = outputs[0]
        if not isinstance(out, _TensorBase):
            raise TypeError(f"backward: expected a Tensor, got {type(out).__name__}")
        if not out._requires_grad:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a "
                               "grad_fn")
        grads = _make_grads(outputs, grads)
    else:
        grads = _make_grads(outputs, grads)
    roots = _roots(outputs)
    if retain_graph is None:
        retain_graph = create_graph
    _engine.run_backward(roots, grads, retain_graph, create_graph, inputs, True)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Gradients of ``outputs`` w.r.t. ``inputs`` (returned, not accumulated).

    With ``is_grads_batched=True`` the first dim of every ``grad_outputs`` tensor is a
    batch of vectors: the result holds one vector-Jacobian product per batch entry,
    stacked along a new first dim (computed as one backward pass per entry)."""
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when "
                         "materialize_grads=True, but got: allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    outs = _as_list(outputs, "grad")
    ins = _as_list(inputs, "grad")
    for t in ins:
        if not isinstance(t, _TensorBase):
            raise TypeError(f"grad: inputs must be Tensors, got {type(t).__name__}")
        if not t._requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    if grad_outputs is None:
        gouts = [None] * len(outs)
    elif isinstance(grad_outputs, _TensorBase):
        gouts = [grad_outputs]
    else:
        gouts = list(grad_outputs)
    if len(gouts) != len(outs):
        raise RuntimeError(f"grad requires one grad_output per output: got {len(gouts)} "
                           f"grad_outputs for {len(outs)} outputs")
    # outputs that do not require grad contribute nothing (PyTorch errors unless they are
    # paired with a None grad_output in allow_unused mode; we follow its message)
    keep = [(o, g) for o, g in zip(outs, gouts)]
    for i, (o, _) in enumerate(keep):
        if not isinstance(o, _TensorBase):
            raise TypeError(f"grad: outputs must be Tensors, got {type(o).__name__}")
        if not o._requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not "
                               f"have a grad_fn")
    if retain_graph is None:
        retain_graph = create_graph
    if is_grads_batched:
        res = _grad_batched([o for o, _ in keep], [g for _, g in keep], ins, retain_graph,
                            create_graph)
    else:
        gl = _make_grads([o for o, _ in keep], [g for _, g in keep])
        roots = _roots([o for o, _ in keep])
        res = _engine.run_backward(roots, gl, retain_graph, create_graph, ins, False)
    for i, r in enumerate(res):
        if r is None:
            if materialize_grads:
                res[i] = _core.zeros_like(ins[i])
            elif not allow_unused:
                raise RuntimeError("One of the differentiated Tensors appears to not have been "
                                   "used in the graph. Set allow_unused=True if this is the "
                                   "desired behavior.")
    return tuple(res)


def _grad_batched(outs, gouts, ins, retain_graph, create_graph):
    """``grad(..., is_grads_batched=True)``: one reverse pass per batch entry."""
    batch = None
    for i, (o, g) in enumerate(zip(outs, gouts)):
        if not isinstance(g, _TensorBase):
            raise RuntimeError(f"grad(is_grads_batched=True) needs a batched grad_output "
                               f"tensor for every output, got {type(g).__name__} for "
                               f"output {i}")
        if g.dim() == 0 or tuple(g.shape[1:]) != tuple(o.shape):
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                               f"{g.shape} and output[{i}] has a shape of {o.shape}. If you "
                               f"are using is_grads_batched=True, the first dimension of "
                               f"each grad_output is the batch dimension; the rest must "
                               f"match the output.")
        if batch is None:
            batch = g.shape[0]
        elif g.shape[0] != batch:
            raise RuntimeError(f"grad(is_grads_batched=True): grad_outputs have different "
                               f"batch sizes ({batch} and {g.shape[0]})")
    if not batch:
        raise RuntimeError("grad(is_grads_batched=True): the batch dimension of grad_outputs "
                           "must not be empty")
    roots = _roots(outs)
    per = []
    for b in range(batch):
        gl = _make_grads(outs, [g[b] for g in gouts])
        keep = retain_graph or b < batch - 1
        per.append(_engine.run_backward(roots, gl, keep, create_graph, ins, False))
    res = []
    for i in range(len(ins)):
        col = [r[i] for r in per]
        if all(c is None for c in col):
            res.append(None)
            continue
        col = [c if c is not None else _core.zeros_like(ins[i]) for c in col]
        res.append(_index.stack(col, 0))
    return res


def Variable(data, requires_grad=False, volatile=False):
    """Deprecated PyTorch API: returns ``data`` (optionally requiring grad)."""
    if requires_grad:
        data.requires_grad_(True)
    return data


def __getattr__(name):
    if name in ("gradcheck", "gradgradcheck", "GradcheckError"):
        from ember.autograd import _gradcheck
        for n in ("gradcheck", "gradgradcheck", "GradcheckError"):
            globals()[n] = getattr(_gradcheck, n)
        return globals()[name]
    if name in ("functional", "graph", "forward_ad", "profiler"):
        import importlib
        try:
            return importlib.import_module("ember.autograd." + name)
        except ModuleNotFoundError:
            raise AttributeError(f"module 'ember.autograd' has no attribute {name!r}") from None
    raise AttributeError(f"module 'ember.autograd' has no attribute {name!r}")


# --- install ----------------------------------------------------------------
def _install():
    _core._set_autograd_hook(_engine._record)
    from ember import _tensor
    _tensor._fast_backward[0] = _tensor_backward


_install()
