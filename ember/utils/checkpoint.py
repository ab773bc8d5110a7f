"""Activation checkpointing: run a block without keeping its intermediate tensors and
recompute it during backward (PyTorch's ``torch.utils.checkpoint``).

``use_reentrant=False`` (the default here): the forward runs with a light recording
mode that builds no graph nodes and saves nothing, only noting which tensors from
outside the block (inputs, parameters) it reads. The block's outputs get one node;
its backward recomputes the block with grad enabled and asks ``autograd.grad`` for
the gradients of all those outside tensors, so ``backward()`` and
``autograd.grad()`` both work, and so do parameters the block closes over.

``use_reentrant=True``: the classic ``autograd.Function`` form (gradients reach the
explicit tensor inputs; parameters inside the block accumulate during the
recomputation's own backward)."""
from __future__ import annotations

import threading
import warnings

import ember
from ember._C import core as _core
from ember._C.core import TensorBase
from ember.autograd import _engine
from ember.autograd.function import Function
from ember.autograd.grad_mode import enable_grad, no_grad

__all__ = ["checkpoint", "checkpoint_sequential"]


# --- RNG state ---------------------------------------------------------------

def _get_rng():
    get = getattr(ember, "get_rng_state", None)
    if get is None:
        return None
    try:
        return get()
    except Exception:
        return None


def _set_rng(state):
    if state is not None:
        ember.set_rng_state(state)


class _rng_restored:
    """Run the recomputation from the forward's RNG state, then put the current one back."""

    def __init__(self, state):
        self.state = state
        self.cur = None

    def __enter__(self):
        if self.state is not None:
            self.cur = _get_rng()
            _set_rng(self.state)

    def __exit__(self, *exc):
        if self.state is not None:
            _set_rng(self.cur)
        return False


# --- the non-reentrant form --------------------------------------------------

class _Region:
    """Marks tensors produced inside a block run in discovery mode."""

    __slots__ = ("external", "ext_ids", "thread")

    def __init__(self):
        self.external = []
        self.ext_ids = set()
        self.thread = threading.get_ident()

    def name(self):
        return "CheckpointRegion"


_regions = []            # active discovery regions (innermost last)


def _discovery_hook(name, inputs, output, attrs):
    reg = None
    tid = threading.get_ident()
    for r in reversed(_regions):
        if r.thread == tid:
            reg = r
            break
    if reg is None:
        return _engine._record(name, inputs, output, attrs)
    for x in inputs:
        if isinstance(x, TensorBase) and x._requires_grad and x._grad_fn is not reg and \
                id(x) not in reg.ext_ids:
            reg.ext_ids.add(id(x))
            reg.external.append(x)
    for o in (output if type(output) is tuple else (output,)):
        if o is not None and o.is_floating_point():
            o._grad_fn = reg
            o._requires_grad = True
    return output


class _CheckpointNode(_engine.Node):
    """Backward of a checkpointed block: recompute, then autograd.grad."""

    def _apply(self, grads):
        st = self.__dict__
        if st.get("fn") is None:
            raise RuntimeError(_engine.FREED_MSG)
        grads = grads if self._nout > 1 else (grads,)
        fn, args, kwargs = st["fn"], st["args"], st["kwargs"]
        targets = st["targets"]        # (position in args or None, tensor)
        create_graph = _core.is_grad_enabled()
        det = list(args)
        for pos, t in targets:
            if pos is not None:
                det[pos] = t.detach().requires_grad_(True)
        with _rng_restored(st["rng"]), enable_grad():
            outs = fn(*det, **kwargs)
        outs = outs if isinstance(outs, tuple) else (outs,)
        pairs = [(o, g) for o, g in zip(outs, grads)
                 if g is not None and isinstance(o, TensorBase) and o.requires_grad]
        wrt = [det[pos] if pos is not None else t for pos, t in targets]
        if not pairs:
            return (None,) * len(targets)
        from ember.autograd import grad as _grad
        res = _grad([o for o, _ in pairs], wrt, [g for _, g in pairs], allow_unused=True,
                    create_graph=create_graph)
        return tuple(res)

    def _release(self, fixed=None):
        self.__dict__["fn"] = None
        self.__dict__["args"] = None


class CheckpointFunctionBackward(_CheckpointNode):
    pass


def _checkpoint_nonreentrant(fn, args, kwargs, preserve_rng_state):
    if not _core.is_grad_enabled():
        return fn(*args, **kwargs)
    if any(r.thread == threading.get_ident() for r in _regions):
        return fn(*args, **kwargs)          # nested inside a block being discovered
    rng = _get_rng() if preserve_rng_state else None
    reg = _Region()
    _regions.append(reg)
    try:
        with _engine.record_hook(_discovery_hook):
            out = fn(*args, **kwargs)
    finally:
        _regions.remove(reg)
    outs = out if isinstance(out, tuple) else (out,)
    diff = [k for k, o in enumerate(outs) if isinstance(o, TensorBase) and o._grad_fn is reg]
    if not diff:
        return out
    arg_pos = {id(a): i for i, a in enumerate(args) if isinstance(a, TensorBase)}
    targets = []
    for t in reg.external:
        targets.append((arg_pos.get(id(t)), t))
    node = _engine.new_node(CheckpointFunctionBackward,
                            [_engine._edge_of(t) for _, t in targets],
                            tuple(_engine._Freed(t) for _, t in targets), nout=len(outs))
    node.__dict__.update(fn=fn, args=tuple(args), kwargs=kwargs, targets=targets, rng=rng)
    for k in diff:
        o = outs[k]
        o._grad_fn = node
        o._ag_nr = (node, k)
    return out


# --- the reentrant form --------------------------------------------------------

class CheckpointFunction(Function):
    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        ctx.run_function = run_function
        ctx.rng = _get_rng() if preserve_rng_state else None
        ctx.tensor_pos = [i for i, a in enumerate(args) if isinstance(a, TensorBase)]
        ctx.args = args
        with no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        args = list(ctx.args)
        for i in ctx.tensor_pos:
            a = args[i]
            args[i] = a.detach().requires_grad_(a.requires_grad)
        with _rng_restored(ctx.rng), enable_grad():
            outs = ctx.run_function(*args)
        outs = outs if isinstance(outs, tuple) else (outs,)
        pairs = [(o, g) for o, g in zip(outs, grads)
                 if isinstance(o, TensorBase) and o.requires_grad and g is not None]
        if pairs:
            ember.autograd.backward([o for o, _ in pairs], [g for _, g in pairs])
        res = [None, None]
        for a in args:
            res.append(a.grad if isinstance(a, TensorBase) and a.requires_grad else None)
        return tuple(res)


def checkpoint(function, *args, use_reentrant=None, context_fn=None, determinism_check="default",
               debug=False, preserve_rng_state=True, **kwargs):
    """Run ``function(*args, **kwargs)`` without storing its intermediate activations;
    they are recomputed when the backward pass needs them."""
    if use_reentrant is None:
        use_reentrant = False
    if use_reentrant:
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        if _core.is_grad_enabled() and not any(isinstance(a, TensorBase) and a.requires_grad
                                               for a in args):
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                          stacklevel=2)
        return CheckpointFunction.apply(function, preserve_rng_state, *args)
    return _checkpoint_nonreentrant(function, args, kwargs, preserve_rng_state)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Checkpoint a sequence of modules/functions in ``segments`` chunks (the last chunk
    runs normally)."""
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if hasattr(functions, "children") and not isinstance(functions, (list, tuple)):
        functions = list(functions.children())
    functions = list(functions)

    def run_function(start, end, fns):
        def forward(x):
            for j in range(start, end + 1):
                x = fns[j](x)
            return x
        return forward

    segment_size = len(functions) // segments if segments else len(functions)
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input,
                           use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1, functions)(input)
