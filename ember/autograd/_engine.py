"""The graph and the engine: nodes, the record hook the native core calls, and a
dependency-counting reverse pass that runs on the calling thread.

Lean on purpose: every training step pays for this file. Graph nodes use
``__slots__``; the hook does one pass over the op's inputs; the engine keeps a
dependency count per node and a stack of ready nodes.

A node's edges (``_next``) are ``(node, output_nr)`` pairs, ``None`` for inputs
that need no gradient. A formula node keeps the op's inputs as passed (tensors or
Python scalars), the op's ``attrs`` and, when its formula needs it, a detached
alias of the output; the version of every saved tensor is recorded at forward
and checked when the formula reads it."""
from __future__ import annotations

import sys
import threading

from ember import _memory_format  # noqa: F401  (the compiled engine reads it from here)
from ember._C import core as _core
from ember._C import engine as _ce
from ember._C.core import TensorBase, _set_grad_enabled, is_grad_enabled

_getrefcount = sys.getrefcount
# creation order of nodes: a node's consumers are always newer than it, so running
# the newest pending node first is a topological order (no dependency pass needed)
next_seq = _ce.next_seq

FREED_MSG = ("Trying to backward through the graph a second time (or directly access saved "
             "tensors after they have already been freed). Saved intermediate values of the "
             "graph are freed when you call .backward() or autograd.grad(). Specify "
             "retain_graph=True if you need to backward through the graph a second time or "
             "if you need to access saved tensors after calling backward.")

_TYPE_NAMES = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
               "bfloat16": "BFloat16Tensor", "int64": "LongTensor", "int32": "IntTensor",
               "int16": "ShortTensor", "int8": "CharTensor", "uint8": "ByteTensor",
               "bool": "BoolTensor"}

# anomaly mode (global, like PyTorch's): set by ember.autograd.anomaly_mode
_anomaly = [False, True]   # [enabled, check_nan]
# fn(node, buf, skip_pre, call) -> grads: set while a profiler records, to time each node.
_node_observer = [None]


def _type_str(t):
    return f"ember.{_TYPE_NAMES.get(str(t.dtype).split('.')[-1], 'Tensor')}"


def _version_error(t, saved_version, producer, consumer):
    where = f", which is output {producer[1]} of {producer[0].name()}," if producer else ""
    return RuntimeError(
        f"one of the variables needed for gradient computation has been modified by an inplace "
        f"operation: [{_type_str(t)} {list(t.shape)}]{where} is at version {t._version}; "
        f"expected version {saved_version} instead (saved for {consumer.name()}). Hint: enable "
        f"anomaly detection to find the operation that failed to compute its gradient, with "
        f"ember.autograd.set_detect_anomaly(True).")


class _Freed(_ce.FreedBase):
    """Stands in for a saved tensor after the graph was freed: it still answers the
    metadata the engine needs (``shape``, ``dtype``: C fields of ``FreedBase``) and
    raises PyTorch's error for the rest."""

    __slots__ = ()

    def dim(self):
        return len(self.shape)

    def numel(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    def size(self, d=None):
        return self.shape if d is None else self.shape[d]

    def __getattr__(self, name):
        raise RuntimeError(FREED_MSG)

    def _raise(self, *a, **k):
        raise RuntimeError(FREED_MSG)

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = _raise
    __rtruediv__ = __pow__ = __rpow__ = __neg__ = __gt__ = __lt__ = __ge__ = __le__ = _raise
    __eq__ = __ne__ = _raise
    __hash__ = object.__hash__


_FREED_SCALAR = object()     # a released tensor input (no metadata kept)
_FREED_ONE = (_FREED_SCALAR,)


class Node(_ce.NodeBase):
    """A node of the backward graph (PyTorch's ``torch.autograd.graph.Node``); its
    fields are C fields of ``NodeBase`` (made with ``NodeBase.__new__(cls)``)."""

    __slots__ = ()
    _save_out = False
    _exact = False        # True: gradients always have the inputs' shape and dtype
    _saves = True         # False: the formula never reads saved input values

    # --- public API ---------------------------------------------------------
    def name(self):
        return type(self).__name__

    @property
    def next_functions(self):
        return tuple((None, 0) if e is None else e for e in self._next)

    @property
    def metadata(self):
        ex = self._ext()
        md = ex.get("metadata")
        if md is None:
            md = ex["metadata"] = {}
        return md

    def register_hook(self, fn):
        """fn(grad_inputs, grad_outputs) -> None or replacement grad_inputs; runs after
        the node computed the gradients of its inputs."""
        from ember.autograd._hooks import add_hook
        return add_hook(self._ext().setdefault("post", {}), fn)

    def register_prehook(self, fn):
        """fn(grad_outputs) -> None or replacement grad_outputs; runs before the node."""
        from ember.autograd._hooks import add_hook
        return add_hook(self._ext().setdefault("pre", {}), fn)

    def _register_hook_dict(self, tensor):  # PyTorch internal name; kept for parity
        pass

    @property
    def needs_input_grad(self):
        return tuple([e is not None for e in self._next])

    def __call__(self, *grads):
        r = self._apply(grads[0] if self._nout == 1 else grads)
        return r[0] if len(r) == 1 else r

    def __repr__(self):
        return f"<{self.name()} object at {hex(id(self))}>"

    # --- helpers for formulas ------------------------------------------------
    def _ext(self):
        ex = self._extra
        if ex is None:
            ex = self._extra = {}
        return ex

    # inputs, input(i), needs(i) and attrs: NodeBase's (compiled), every formula reads them

    @property
    def output(self):
        """The op's output (a tuple for multi-output ops), version-checked. While
        recording (create_graph) it is re-attached to this node, so formulas that use
        it are differentiable again."""
        o = self._out
        vers = self._vers
        if vers is None or o is None:
            raise RuntimeError(FREED_MSG)
        if type(o) is tuple:
            ov = vers[-1]
            res = []
            for k, t in enumerate(o):
                if t is not None and t._version != ov[k]:
                    raise _version_error(t, ov[k], (self, k), self)
                if t is not None and is_grad_enabled() and t.is_floating_point():
                    saved, t = t, t.detach()
                    t._grad_fn = self
                    t._requires_grad = True
                    t._ag_nr = (self, k)
                    if _recorder[0] is not None:
                        _alias_tangent(saved, t)
                res.append(t)
            return tuple(res)
        if o._version != vers[-1]:
            raise _version_error(o, vers[-1], (self, 0), self)
        if is_grad_enabled():
            saved, o = o, o.detach()
            o._grad_fn = self
            o._requires_grad = True
            if _recorder[0] is not None:
                _alias_tangent(saved, o)
        return o

    def _release(self, fixed=None):
        """Drop saved tensors (after a backward without retain_graph). Python scalars
        stay. A tensor input becomes a stand-in that knows only its shape and dtype
        where that can still be needed: formulas that read no values (``saves=False``,
        e.g. sum reads ``inputs[0].shape``) and edges whose gradient the engine had to
        fix up (``fixed``); elsewhere a bare marker."""
        _ce.release(self, fixed)


def _producer(t):
    fn = t._grad_fn
    if fn is None:
        return None
    nr = t._ag_nr
    return (fn, nr[1] if nr is not None and nr[0] is fn else 0)


class AccumulateGrad(Node):
    """Sink of a leaf tensor: adds the arriving gradient into ``variable.grad``.

    Created once per leaf and graph (the leaf holds it weakly) by
    ``accumulate_node``: no edges, nothing saved, one output, and ``variable``."""

    @property
    def next_functions(self):
        return ()

    def _apply(self, g):
        _accumulate(self.variable, g, is_grad_enabled())
        return ()

    def _release(self, fixed=None):
        pass


def _accumulate(var, g, create_graph):
    """``var.grad`` += ``g`` with the leaf's hooks; the engine calls it for leaves that
    have hooks (and its fast path for the others)."""
    hooks = var._ag_hooks
    if hooks:
        for h in list(hooks.values()):
            r = h(g)
            if r is not None:
                g = r
    # a fresh gradient is kept rather than copied when nothing else holds it (PyTorch's
    # use_count check): refs here are this frame's `g`, the caller's buffer variable
    # (or a hook's result `r`) and getrefcount's argument
    _ce.accumulate_into(var, g, create_graph, _getrefcount(g) <= 3)
    post = var._ag_post_hooks
    if post:
        for h in list(post.values()):
            h(var)


_accumulate_node = _ce.accumulate_node


def _unimplemented_formula(name):
    def backward(ctx, grad):
        raise RuntimeError(f"the derivative for '{name}' is not implemented.")
    return backward


# ---------------------------------------------------------------------------
# the record hook: called by the native core as fn(op, inputs, output, attrs)

# ---- the record hook ---------------------------------------------------------
# The native core calls one hook for every op that needs a graph node: _record,
# unless a region (forward AD, checkpoint discovery) routes recording through its
# own hook for a while.  Regions stack: the innermost active hook is installed.
_hooks = []
_hooks_lock = threading.Lock()


def push_record_hook(hook) -> None:
    """Route graph recording through ``hook(name, inputs, output, attrs)`` until
    :func:`pop_record_hook`; a hook that wants the normal node calls ``_record``."""
    with _hooks_lock:
        _hooks.append(hook)
        _core._set_autograd_hook(hook)


def pop_record_hook(hook) -> None:
    """End the innermost region of ``hook``; the region below it (or _record) resumes."""
    with _hooks_lock:
        for i in range(len(_hooks) - 1, -1, -1):
            if _hooks[i] is hook:
                del _hooks[i]
                break
        _core._set_autograd_hook(_hooks[-1] if _hooks else _record)


class record_hook:
    """``with record_hook(fn):`` a region where graph recording goes through ``fn``."""

    __slots__ = ("hook",)

    def __init__(self, hook):
        self.hook = hook

    def __enter__(self):
        push_record_hook(self.hook)
        return self

    def __exit__(self, *exc):
        pop_record_hook(self.hook)
        return False


_CLASSES = {}          # op name -> Node subclass
_class_for = None      # set by _table (lazy formula loading)


_NONES = [(None,) * k for k in range(16)]


def new_node(cls, next_edges=None, inputs=None, attrs=None, nout=1,
             _new=_ce.NodeBase.__new__):
    """The one constructor of graph nodes: a ``cls`` node (a Node subclass) with its
    edges, the op's inputs and attrs, and the next creation sequence number.  The
    output alias (``_out``) and saved versions (``_vers``) start empty."""
    node = _new(cls)
    node._next = next_edges
    node._inputs = inputs
    node._attrs = attrs
    node._out = None
    node._vers = ()
    node._extra = None
    node._seq = next_seq()
    node._nout = nout
    return node


# The record hook the core calls as fn(op, inputs, output, attrs): the node of class
# _CLASSES[op] with an edge per input ((node, output_nr), or None for one that needs no
# gradient), the inputs as passed, the attrs, the saved versions and, for formulas that
# read it, a detached alias of the output.  Compiled (ember/_C/engine.pyx).
_record = _ce.record


def _anomaly_trace(node):
    """Anomaly mode: keep the stack of the forward call that made ``node``."""
    import traceback
    node._ext()["traceback_"] = traceback.format_stack()[:-1]


# ---- views written in place ---------------------------------------------------
# Every view knows its base (``_ag_base``: the tensor that owns the memory, through
# views of views) and the storage version at which its grad_fn was set (``_ag_ver``).
# When a view is written in place under grad mode, the core calls _view_written,
# which makes the base the output of a "view_write" node (torch's CopySlices): the
# old base outside the view's elements, the view's new value inside them.  A view
# whose memory changed since its grad_fn was set (a write through the base or a
# sibling view) gets its grad_fn rebuilt from the base's when it is next used
# (_view_refresh, torch's lazy regeneration).
def _view_written(view):
    from ember._C import creation as _cr
    base = view._ag_base
    if base.dtype != view.dtype or base.untyped_storage().data_ptr() != \
            view.untyped_storage().data_ptr():
        raise RuntimeError("an in-place write through a view that reinterprets its base's "
                           "dtype is not supported by autograd; write into a clone instead")
    prev = is_grad_enabled()
    _set_grad_enabled(False)
    try:
        # the positions of the view's elements in the base's own element order
        slots = base.untyped_storage().nbytes() // base.element_size()
        where = _core.full((slots,), -1, dtype=_core.int64)
        where.as_strided(base.shape, base.stride(), base.storage_offset()).copy_(
            _cr.arange(base.numel(), dtype=_core.int64).reshape(base.shape))
        pos = where.as_strided(view.shape, view.stride(), view.storage_offset()).clone()
        if bool((pos < 0).any()):
            raise RuntimeError("an in-place write through a view reaches memory outside "
                               "its base; autograd cannot track it")
        old = base.detach()
    finally:
        _set_grad_enabled(prev)
    old._requires_grad = base._requires_grad
    old._grad_fn = base._grad_fn
    old._ag_nr = base._ag_nr
    view._ag_ver = view._version     # the view's own (in-place) grad_fn is current
    _record("view_write", (old, view), base, (pos, view._mbits ^ base._mbits))
    base._ag_nr = None


def _view_refresh(view):
    """``view``'s memory was written since its grad_fn was set: when its base is in
    the graph, its grad_fn becomes the view of the base's current value."""
    base = view._ag_base
    view._ag_ver = view._version
    if not base._requires_grad or (view._grad_fn is None and view._requires_grad):
        return               # nothing to regenerate from, or a leaf view the user made
    rel = view._mbits ^ base._mbits
    if rel & 1 and not view.is_complex():
        rel &= 2
    src = base
    if base.is_complex() and not view.is_complex() and not base._mbits & 1:
        # a real view (real, imag) of a complex base: its strides count the base's
        # (re, im) parts, so it is regenerated from the base's real view
        from ember._C import cplx
        prev = is_grad_enabled()
        _set_grad_enabled(False)
        try:
            src = cplx.view_as_real(base.detach())
        finally:
            _set_grad_enabled(prev)
        _record("view_as_real", (base,), src, None)
    attrs = (tuple(src.shape), src.stride(), src.storage_offset(), tuple(view.shape),
             view.stride(), view.storage_offset())
    if not rel:
        _record("as_strided", (src,), view, attrs)
    else:
        # the view reads its memory through other conjugate/negative bits than the base
        mid = view.detach()
        _record("as_strided", (src,), mid, attrs)
        if rel & 1:
            out = view if rel == 1 else view.detach()
            _record("conj", (mid,), out, None)
            mid = out
        if rel & 2:
            _record("neg", (mid,), view, None)
    view._ag_nr = None


_core._set_view_hooks(_view_written, _view_refresh)


# The hook the native core calls when it is not ``_record`` itself (forward-mode AD wraps
# it); composites recorded from Python go through it too.
_recorder = [None]


def _alias_tangent(src, dst):
    """Forward-mode AD: ``dst`` (a re-attached copy of a saved output) has ``src``'s
    tangent, so formulas that read ``ctx.output`` stay differentiable forwards."""
    from ember.autograd.forward_ad import _alias
    _alias(src, dst)


def _record_composite(name, fn, inputs, attrs):
    """Run ``fn(*inputs)`` without recording and record it as one op ``name`` (for
    backward helpers that must be differentiable again under create_graph)."""
    if is_grad_enabled() and any([isinstance(x, TensorBase) and x._requires_grad
                                  for x in inputs]):
        _set_grad_enabled(False)
        try:
            out = fn(*inputs)
        finally:
            _set_grad_enabled(True)
        (_recorder[0] or _record)(name, tuple(inputs), out, attrs)
        return out
    return fn(*inputs)


# ---------------------------------------------------------------------------
# the engine

def _sum_to(g, shape):
    """Sum a broadcast gradient back to ``shape`` (the one place broadcasting is undone)."""
    nd = g.dim()
    k = nd - len(shape)
    gs = g.shape
    dims = [i for i in range(nd) if i < k or (shape[i - k] == 1 and gs[i] != 1)]
    if dims:
        g = _reduce_sum(g, dims)
    if tuple(g.shape) != tuple(shape):
        g = g.reshape(tuple(shape))
    return g


def _reduce_sum(g, dims):
    s = getattr(g, "sum", None)
    if s is not None:
        return s(dim=tuple(dims), keepdim=True)
    # the reductions module is not built yet: NumPy fallback (not differentiable)
    import numpy as np
    return _core.from_numpy(np.ascontiguousarray(
        np.sum(g.numpy(), axis=tuple(dims), keepdims=True)))


def _fix_grad(g, x):
    """Make ``g`` fit input ``x`` (a tensor or a freed stand-in): shape, then dtype."""
    if g.dim() != x.dim() or g.numel() != x.numel() or (g.numel() == 0 and
                                                       tuple(g.shape) != tuple(x.shape)):
        g = _sum_to(g, x.shape)
    if g.dtype is not x.dtype:
        if g.dtype.is_complex and not x.dtype.is_complex:
            g = g.real        # a real input's gradient is the real part, as torch's
        g = g.to(x.dtype)
    return g


def _check_nan(fn, grads):
    from ember._C import elementwise as _ew
    for i, g in enumerate(grads):
        if g is not None and isinstance(g, TensorBase) and g.is_floating_point() and \
                not _ew.equal(g, g):
            raise RuntimeError(f"Function '{fn.name()}' returned nan values in its {i}th "
                               f"output.")


def _call_slow(fn, buf, skip_pre=False):
    """A node with hooks, or one whose saved state was freed."""
    ex = fn._extra
    if ex is not None and not skip_pre:
        buf = _pre_hooks(fn, ex, buf)
        if buf is None:
            return None
    if fn._vers is None:          # released: formulas that read saved tensors fail
        try:
            res = fn._apply(buf)
        except (TypeError, AttributeError) as e:
            raise RuntimeError(FREED_MSG) from e
    else:
        res = fn._apply(buf)
    if ex is not None and "post" in ex:
        grads_out = tuple(buf) if fn._nout > 1 else (buf,)
        ins = None if fn._exact else fn._inputs
        if ins is not None and res is not None:
            # hooks see gradients shaped like the node's inputs (broadcasts undone)
            res = list(res)
            for i, g in enumerate(res):
                x = ins[i] if i < len(ins) else None
                if g is not None and x is not None and x is not _FREED_SCALAR and (
                        g.dtype is not x.dtype or g.dim() != x.dim() or
                        g.numel() != x.numel()):
                    res[i] = _fix_grad(g, x)
        for h in list(ex["post"].values()):
            r = h(tuple(res), grads_out)
            if r is not None:
                res = tuple(r)
    return res


def _pre_hooks(fn, ex, buf):
    multi = fn._nout > 1
    grads = list(buf) if multi else [buf]
    th = ex.get("tensor_pre")
    if th:
        for nr, hooks in th.items():
            for h in list(hooks.values()):
                if grads[nr] is None:
                    continue
                r = h(grads[nr])
                if r is not None:
                    grads[nr] = r
    rh = ex.get("retain")
    if rh:
        for nr, ref in list(rh.items()):
            t = ref()
            if t is not None and grads[nr] is not None:
                g = grads[nr]
                if t._grad is None:
                    t._grad = g.clone() if is_grad_enabled() else g.detach().clone()
                else:
                    t._grad = t._grad + g
    ph = ex.get("pre")
    if ph:
        for h in list(ph.values()):
            r = h(tuple(grads))
            if r is not None:
                grads = list(r)
    if all([g is None for g in grads]):
        return None
    return tuple(grads) if multi else grads[0]


def _call_anomaly(fn, buf, skip_pre=False):
    try:
        res = _call_slow(fn, buf, skip_pre)
        if res is not None and _anomaly[1]:
            _check_nan(fn, res)
        return res
    except Exception:
        tb = (fn._extra or {}).get("traceback_")
        if tb:
            import warnings
            msg = (f"Error detected in {fn.name()}. Traceback of forward call that caused the "
                   f"error:\n{''.join(tb)}")
            warnings.warn(msg, RuntimeWarning, stacklevel=3)
        raise


def run_backward(roots, grads, keep_graph, create_graph, inputs=None, accumulate=True):
    """Run the reverse pass on the calling thread.

    roots: list of (node, output_nr) with matching ``grads``. Without ``inputs`` every
    reachable node runs and leaves accumulate. With ``inputs`` (tensors) only nodes on
    a path to them run, and the gradients arriving there are returned (autograd.grad)
    or accumulated into their ``.grad`` (backward(inputs=...)).  Both loops are
    compiled (``ember/_C/engine.pyx``)."""
    if inputs is None:
        return _run_all(roots, grads, keep_graph, create_graph)
    return _ce.run_capture(roots, grads, keep_graph, create_graph, inputs, accumulate)


# Every reachable node runs, newest first (a max-heap on creation order): when a node
# is popped, all of its consumers, being newer, have already delivered their gradients,
# so no dependency-counting pass over the graph is needed.  Compiled.
_run_all = _ce.run_all


# --- capture (autograd.grad / backward(inputs=...)) ---------------------------

def _edge_of(t):
    fn = t._grad_fn
    if fn is None:
        return (_accumulate_node(t), 0)
    nr = t._ag_nr
    return (fn, nr[1] if nr is not None and nr[0] is fn else 0)


def _finish_capture(capture, captured, buffers, inputs, accumulate, create_graph):
    out = [None] * len(inputs)
    for fn, slots in capture.items():
        for nr, k in slots:
            if k in captured:
                g = captured[k]
            else:           # never reached
                b = buffers.get(fn)
                g = (b[nr] if b is not None else None) if fn._nout > 1 else b
            t = inputs[k]
            if accumulate:
                if g is None:
                    continue
                if type(fn) is AccumulateGrad:
                    _accumulate(t, g, create_graph)
                elif not t.__dict__.get("_retains_grad"):   # else its hook already did
                    t._grad = g.detach().clone() if t._grad is None and not create_graph \
                        else (g if t._grad is None else t._grad + g)
            else:
                if g is not None and type(fn) is AccumulateGrad:
                    hooks = t._ag_hooks
                    if hooks:
                        for h in list(hooks.values()):
                            r = h(g)
                            if r is not None:
                                g = r
                out[k] = g
    return out


_ce.bind(sys.modules[__name__])
