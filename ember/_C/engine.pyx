# cython: boundscheck=True, wraparound=True
"""The hot loops of ember's autograd, compiled: the record hook the core calls for
every op that needs a graph node, the reverse pass over a whole graph (backward)
or over the part that leads to given inputs (``autograd.grad``, ``backward(inputs=)``),
a leaf's gradient accumulation and a node's release of its saved tensors.

``ember/autograd/_engine.py`` owns the graph's classes and every rare path (hooks,
anomaly mode, freed graphs); it hands them to this
module once with :func:`bind`.  The semantics are those documented there; this
module only does the per-node bookkeeping without the interpreter: tensors' fields
are read as C fields, the ready nodes sit in a C heap keyed by creation order."""
from cpython.object cimport PyObject
from cpython.ref cimport Py_DECREF, Py_INCREF
from cpython.weakref cimport PyWeakref_NewRef
from libc.stdint cimport int64_t
from libc.stdlib cimport free, realloc

from ember._C.core cimport (EM_C64, EM_C128, EM_F16, EM_F64, DType, TensorBase, is_contig,
                            numel_of)


cdef extern from "Python.h":
    # a pointer argument: an object argument could be a new temporary reference
    Py_ssize_t refcount "Py_REFCNT"(PyObject *o)


cdef extern from *:
    """
    /* cls(...)'s allocation without its __init__: the type's own tp_new */
    static PyObject *ember_tp_new(PyObject *cls, PyObject *args) {
        return ((PyTypeObject *)cls)->tp_new((PyTypeObject *)cls, args, NULL);
    }
    """
    object _tp_new "ember_tp_new"(object cls, object args)


# bound once by ember.autograd._engine (see bind)
cdef object _Acc = None            # AccumulateGrad
cdef object _node_release = None   # Node._release (the default, done here)
cdef object _FREED_SCALAR = None
cdef tuple _FREED_ONE = None
cdef object _Freed = None
cdef dict _classes = None          # op name -> Node subclass
cdef object _eng = None            # the _engine module (late-bound names)
cdef list _anomaly = None          # [enabled, check_nan]
cdef list _observer = None         # [fn or None]
cdef list _nones = None            # _NONES
cdef int64_t _seq = 0              # creation order of nodes
cdef object _call_slow = None      # the rare paths of running a node (see bind)
cdef object _call_anomaly = None
cdef object _fix_grad = None


cdef class NodeBase:
    """The fields of a graph node, as C fields (``ember.autograd.graph.Node`` adds the
    methods): its edges, the op's inputs and attrs, the saved output alias and
    versions, hooks and metadata (``_extra``), its output count and creation order."""
    cdef public object _next
    cdef public object _inputs
    cdef public object _attrs
    cdef public object _out
    cdef public object _vers
    cdef public object _extra
    cdef public Py_ssize_t _nout
    cdef public int64_t _seq
    cdef object __weakref__

    # --- what formulas read ----------------------------------------------------
    @property
    def inputs(self):
        """The op's inputs as passed (tensors or Python scalars); saved tensors are
        checked against their version at forward."""
        ins = self._inputs
        vers = self._vers
        if vers is None:                  # released: stand-ins raise on use
            return ins
        cdef Py_ssize_t i = 0
        for x in ins:
            v = vers[i]
            if v is not None and _moved(x, v):
                raise _eng._version_error(x, v, _eng._producer(x), self)
            i += 1
        return ins

    def input(self, Py_ssize_t i):
        """Input ``i`` (version-checked); cheaper than ``inputs`` when a formula
        needs one of them."""
        x = self._inputs[i]
        vers = self._vers
        if vers is None:
            if type(x) is _Freed or x is _FREED_SCALAR:
                raise RuntimeError(_eng.FREED_MSG)
            return x
        v = vers[i]
        if v is not None and _moved(x, v):
            raise _eng._version_error(x, v, _eng._producer(x), self)
        return x

    def needs(self, Py_ssize_t i):
        """Whether input ``i`` needs a gradient."""
        return self._next[i] is not None

    @property
    def attrs(self):
        return self._attrs


cdef inline bint _moved(object x, object v) except -1:
    """The saved tensor ``x`` was written since it was saved at version ``v``."""
    if isinstance(x, TensorBase):
        return (<TensorBase>x)._storage.version != <int64_t>v
    return x._version != v


cdef class FreedBase:
    """The shape and dtype of a tensor a node no longer holds (``_engine._Freed``)."""
    cdef public object shape
    cdef public object dtype

    def __init__(self, t):
        self.shape = t.shape
        self.dtype = t.dtype


cdef inline FreedBase _freed(TensorBase t):
    cdef FreedBase f = <FreedBase>_tp_new(_Freed, ())
    f.shape = t.shape
    f.dtype = t.dtype
    return f


def bind(eng):
    """Take the graph's classes and rare paths from ``ember.autograd._engine``."""
    global _Acc, _node_release, _FREED_SCALAR, _FREED_ONE, _Freed, _classes, _eng
    global _anomaly, _observer, _nones, _call_slow, _call_anomaly, _fix_grad
    _eng = eng
    _call_slow = eng._call_slow
    _call_anomaly = eng._call_anomaly
    _fix_grad = eng._fix_grad
    _Acc = eng.AccumulateGrad
    _node_release = eng.Node._release
    _FREED_SCALAR = eng._FREED_SCALAR
    _FREED_ONE = eng._FREED_ONE
    _Freed = eng._Freed
    _classes = eng._CLASSES
    _anomaly = eng._anomaly
    _observer = eng._node_observer
    _nones = eng._NONES


def next_seq():
    """The next creation sequence number: a node's consumers are always newer than it."""
    global _seq
    _seq += 1
    return _seq


def accumulate_node(TensorBase t):
    """The AccumulateGrad node of leaf ``t`` (made once per graph; the leaf holds it
    weakly)."""
    return _acc_node(t)


cdef object _acc_node(TensorBase t):
    global _seq
    cdef object r = t._ag_acc
    if r is not None:
        a = r()
        if a is not None:
            return a
    cdef NodeBase n = <NodeBase>_tp_new(_Acc, ())
    n._next = ()
    n._vers = ()
    n._nout = 1
    _seq += 1
    n._seq = _seq
    n.variable = t
    t._ag_acc = PyWeakref_NewRef(n, None)
    return n


# ---- the record hook ------------------------------------------------------------

def record(name, inputs, output, attrs):
    """The record hook: make the graph node of op ``name`` (see _engine._record)."""
    global _seq
    cls = _classes.get(name)
    if cls is None:
        cls = _eng._class_for(name)
    cdef bint saves = cls._saves
    cdef list nxt = []
    cdef list vers = [] if saves else None
    cdef TensorBase t
    cdef Py_ssize_t n_in = 0
    for x in inputs:
        n_in += 1
        if isinstance(x, TensorBase):
            t = <TensorBase>x
            if saves:
                vers.append(t._storage.version)
            if t._requires_grad:
                if t._ag_base is not None and t._ag_ver != t._storage.version:
                    _eng._view_refresh(t)
                fn = t._grad_fn
                if fn is None:
                    nxt.append((_acc_node(t), 0))
                else:
                    nr = t._ag_nr
                    nxt.append((fn, nr[1] if nr is not None and nr[0] is fn else 0))
            else:
                nxt.append(None)
        else:
            if saves:
                vers.append(None)
            nxt.append(None)
    cdef NodeBase node = <NodeBase?>_tp_new(cls, ())
    node._next = nxt
    node._inputs = inputs
    node._attrs = attrs
    node._out = None
    node._extra = None
    _seq += 1
    node._seq = _seq
    cdef int d
    if type(output) is tuple:
        node._nout = len(<tuple>output)
        if cls._save_out:
            if vers is None:
                vers = list(_nones[n_in])
            node._out = tuple([o.detach() if o is not None else None for o in output])
            vers.append(tuple([o._version if o is not None else None for o in output]))
        k = 0
        for o in <tuple>output:
            if o is not None:
                d = (<TensorBase?>o)._dtype
                if EM_F16 <= d <= EM_F64 or d == EM_C64 or d == EM_C128:
                    (<TensorBase>o)._grad_fn = node
                    (<TensorBase>o)._requires_grad = True
                    (<TensorBase>o)._ag_nr = (node, k)
            k += 1
    else:
        node._nout = 1
        if cls._save_out:
            if vers is None:
                vers = list(_nones[n_in])
            node._out = output.detach()
            vers.append(output._version)
        (<TensorBase?>output)._grad_fn = node
        (<TensorBase>output)._requires_grad = True
    if vers is not None:
        node._vers = vers
    else:
        node._vers = _nones[n_in] if n_in < 16 else (None,) * n_in
    if _anomaly[0]:
        _eng._anomaly_trace(node)
    return output


# ---- gradient accumulation into a leaf -----------------------------------------

def accumulate_into(TensorBase var, TensorBase g, bint create_graph, bint sole):
    """``var.grad`` += ``g`` (hooks excluded: see _engine._accumulate).  ``sole``: the
    caller's reference is the only one to ``g``, so a fresh gradient may be kept as
    ``var.grad`` instead of copied (PyTorch's use_count check)."""
    _acc_into(var, g, create_graph, sole)


cdef inline bint _owns_storage(TensorBase g):
    cdef Py_ssize_t refs = refcount(<PyObject *>g._storage)
    if refs == 1:
        return True
    return (refs == 2 and isinstance(g._ag_base, TensorBase) and
            refcount(<PyObject *>g._ag_base) == 1 and
            (<TensorBase>g._ag_base)._storage is g._storage)


cdef int _acc_into(TensorBase var, TensorBase g, bint create_graph, bint sole) except -1:
    cdef TensorBase old = var._grad
    cdef TensorBase ng
    # and no other tensor shares g's storage: none at all, or only g's own base when
    # nothing but g holds that (a formula's reshape of a fresh result)
    sole = sole and _owns_storage(g)
    if old is None:
        if create_graph:
            ng = g if sole else g.clone()
        elif sole and g._grad_fn is None and is_contig(g):
            ng = g
        else:
            ng = g.detach().clone()
        if ng._dtype != var._dtype:
            ng = ng.to(var.dtype)
        if not (is_contig(ng) and is_contig(var)):
            ng = _eng._memory_format.grad_layout(var, ng)
        var._grad = ng
    elif create_graph or old._requires_grad:
        var._grad = old + g
    else:
        old.add_(g)
    return 0


cdef inline int _accumulate(object var, object g, bint create_graph, bint sole) except -1:
    # sole: the engine holds the only reference to g (the buffer it popped)
    cdef TensorBase v = <TensorBase?>var
    if v._ag_hooks or v._ag_post_hooks or not isinstance(g, TensorBase):
        _eng._accumulate(var, g, create_graph)
    else:
        _acc_into(v, g, create_graph, sole)
    return 0


# ---- a node's release of its saved state ------------------------------------

def release(node, fixed=None):
    """Node._release: drop the saved tensors after a backward without retain_graph
    (see Node._release for what stays)."""
    _release(node, fixed)


cdef int _release(NodeBase node, object fixed) except -1:
    if node._vers is None:
        return 0
    ins = node._inputs
    cls = type(node)
    cdef Py_ssize_t n, i
    if cls._saves or cls._exact:
        if fixed is None:
            n = len(ins)
            if n == 1:
                if isinstance(ins[0], TensorBase):
                    node._inputs = _FREED_ONE
            elif n == 2:
                a, b = ins
                node._inputs = (_FREED_SCALAR if isinstance(a, TensorBase) else a,
                                _FREED_SCALAR if isinstance(b, TensorBase) else b)
            else:
                node._inputs = tuple([_FREED_SCALAR if isinstance(x, TensorBase) else x
                                      for x in ins])
        else:
            node._inputs = tuple([(_freed(x) if i in fixed else _FREED_SCALAR)
                                  if isinstance(x, TensorBase) else x
                                  for i, x in enumerate(ins)])
    else:
        nxt = node._next
        node._inputs = tuple([(_freed(x) if nxt[i] is not None else _FREED_SCALAR)
                              if isinstance(x, TensorBase) else x
                              for i, x in enumerate(ins)])
    node._out = None
    node._vers = None
    return 0


# ---- the reverse pass -----------------------------------------------------------

cdef struct Entry:
    int64_t seq
    PyObject *node          # a reference owned by the heap


cdef class _Heap:
    """Nodes by creation order, newest first (a binary max-heap)."""
    cdef Entry *a
    cdef Py_ssize_t n, cap

    def __dealloc__(self):
        cdef Py_ssize_t i
        for i in range(self.n):
            Py_DECREF(<object>self.a[i].node)
        free(self.a)

    cdef int push(self, NodeBase node) except -1:
        cdef int64_t s = node._seq
        cdef Entry *na
        cdef Py_ssize_t i, p
        if self.n == self.cap:
            self.cap = self.cap * 2 if self.cap else 64
            na = <Entry *>realloc(self.a, self.cap * sizeof(Entry))
            if na == NULL:
                raise MemoryError()
            self.a = na
        i = self.n
        self.n += 1
        while i > 0:
            p = (i - 1) >> 1
            if self.a[p].seq >= s:
                break
            self.a[i] = self.a[p]
            i = p
        Py_INCREF(node)
        self.a[i].seq = s
        self.a[i].node = <PyObject *>node
        return 0

    cdef object pop(self):
        cdef Entry top = self.a[0]
        cdef Entry last
        cdef Py_ssize_t i = 0, c
        self.n -= 1
        if self.n:
            last = self.a[self.n]
            while True:
                c = 2 * i + 1
                if c >= self.n:
                    break
                if c + 1 < self.n and self.a[c + 1].seq > self.a[c].seq:
                    c += 1
                if self.a[c].seq <= last.seq:
                    break
                self.a[i] = self.a[c]
                i = c
            self.a[i] = last
        node = <object>top.node
        Py_DECREF(node)      # the heap's reference passes to `node`
        return node


cdef inline object _sum(object old, object g, bint sole):
    """``old + g`` for a gradient buffer; added into ``old`` (PyTorch's InputBuffer) when
    ``sole`` (the buffer holds the only reference to it, and no graph is recorded) and
    its memory is its own, dense, and of ``g``'s dtype and shape."""
    cdef TensorBase o, t
    cdef int d
    if sole and isinstance(old, TensorBase) and isinstance(g, TensorBase):
        o = <TensorBase>old
        t = <TensorBase>g
        if (o._dtype == t._dtype and o._ndim == t._ndim and o._mbits == 0 and
                not o._requires_grad and o._grad_fn is None and is_contig(o) and
                _owns_storage(o)):
            for d in range(o._ndim):
                if o._shape[d] != t._shape[d]:
                    return old + g
            o.add_(g)
            return old
    return old + g


cdef inline int _add_into(dict buffers, NodeBase node, object nr, object g,
                          bint create_graph) except -1:
    cdef list b
    if node._nout == 1:
        old = buffers.get(node)
        if old is None:
            buffers[node] = g
        else:        # refs to old: the dict's and this frame's
            buffers[node] = _sum(old, g, not create_graph and
                                 refcount(<PyObject *>old) == 2)
    else:
        b = buffers.get(node)
        if b is None:
            b = [None] * node._nout
            buffers[node] = b
        old = b[nr]
        if old is None:
            b[nr] = g
        else:        # refs to old: the list's and this frame's
            b[nr] = _sum(old, g, not create_graph and refcount(<PyObject *>old) == 2)
    return 0


cdef inline bint _misfit(object g, object x) except -1:
    """The gradient ``g`` of input ``x`` needs the engine's fix-up (broadcast undone,
    dtype cast): it differs from ``x`` in dtype, rank or size, or is empty."""
    cdef int64_t n
    if isinstance(g, TensorBase) and isinstance(x, TensorBase):
        n = numel_of((<TensorBase>x)._ndim, (<TensorBase>x)._shape)
        return ((<TensorBase>g)._dtype != (<TensorBase>x)._dtype or
                (<TensorBase>g)._ndim != (<TensorBase>x)._ndim or n == 0 or
                numel_of((<TensorBase>g)._ndim, (<TensorBase>g)._shape) != n)
    if (isinstance(g, TensorBase) and isinstance(x, FreedBase) and
            isinstance((<FreedBase>x).dtype, DType)):
        n = 1
        for s in (<FreedBase>x).shape:
            n *= <int64_t>s
        return ((<TensorBase>g)._dtype != (<DType>(<FreedBase>x).dtype).code or
                (<TensorBase>g)._ndim != len((<FreedBase>x).shape) or n == 0 or
                numel_of((<TensorBase>g)._ndim, (<TensorBase>g)._shape) != n)
    n = x.numel()
    return g.dtype is not x.dtype or g.dim() != x.dim() or g.numel() != n or not n


cdef object _run_node(NodeBase fn, object buf, bint skip_pre, bint anomaly, object observe):
    """Node ``fn``'s input gradients from its output gradients ``buf``: its formula
    directly, or through the hooks' / anomaly mode's / an observer's path."""
    if observe is not None:
        return observe(fn, buf, skip_pre, _call_anomaly if anomaly else _call_slow)
    if anomaly:
        return _call_anomaly(fn, buf, skip_pre)
    if fn._extra is None and fn._vers is not None:
        return fn._apply(buf)
    return _call_slow(fn, buf, skip_pre)


cdef int _deliver(NodeBase fn, object res, dict buffers, _Heap heap, object needed,
                  bint keep_graph, bint create_graph) except -1:
    """Add ``fn``'s input gradients ``res`` into the buffers of the nodes its edges
    lead to (only those in ``needed`` unless it is None), pushing each node reached
    for the first time on the heap; then release ``fn``'s saved tensors unless the
    graph is kept."""
    cdef Py_ssize_t i, ne
    cdef NodeBase n
    fixed = None
    if res is not None:
        ins = None if fn._exact else fn._inputs
        nxt = fn._next
        ne = len(nxt)
        for i in range(ne):
            e = nxt[i]
            if e is None:
                continue
            g = res[i]
            if g is None:
                continue
            n = <NodeBase?>(<tuple>e)[0]
            if needed is not None and n not in <set>needed:
                continue
            if ins is not None:
                x = ins[i]
                if x is not _FREED_SCALAR and _misfit(g, x):
                    g = _fix_grad(g, x)
                    if fixed is None:
                        fixed = set()
                    fixed.add(i)
            if n._nout == 1:
                old = buffers.get(n)
                if old is None:
                    buffers[n] = g
                    heap.push(n)
                else:    # refs to old: the dict's and this frame's
                    buffers[n] = _sum(old, g, not create_graph and
                                      refcount(<PyObject *>old) == 2)
                    old = None
            else:
                if buffers.get(n) is None:
                    heap.push(n)
                _add_into(buffers, n, (<tuple>e)[1], g, create_graph)
            g = None
    if not keep_graph:
        if type(fn)._release is _node_release:
            _release(fn, fixed)
        else:
            fn._release(fixed)
    return 0


def run_all(roots, grads, bint keep_graph, bint create_graph):
    """Run every node reachable from ``roots`` ((node, output_nr) pairs, with their
    ``grads``), newest first: when a node is popped, all of its consumers, being
    newer, have already delivered their gradients, so no dependency pass is needed.
    Leaves accumulate into ``.grad``."""
    cdef dict buffers = {}
    cdef _Heap heap = _Heap()
    cdef NodeBase fn, n
    for (r, nr), g in zip(roots, grads):
        if g is not None:
            n = <NodeBase?>r
            if buffers.get(n) is None:
                heap.push(n)
            _add_into(buffers, n, nr, g, create_graph)
    prev = _eng.is_grad_enabled()
    set_grad = _eng._set_grad_enabled
    set_grad(create_graph)
    cdef bint anomaly = _anomaly[0]
    observe = _observer[0]
    Acc = _Acc
    cdef bint any_grad, multi
    try:
        while heap.n:
            fn = <NodeBase>heap.pop()
            buf = buffers.pop(fn)
            if type(fn) is Acc:
                if fn._extra is None and not anomaly:
                    _accumulate(fn.variable, buf, create_graph, refcount(<PyObject *>buf) == 1)
                elif anomaly:
                    _call_anomaly(fn, buf)
                else:
                    _call_slow(fn, buf)
                continue
            multi = fn._nout > 1
            if multi:
                any_grad = False
                for b in <list>buf:
                    if b is not None:
                        any_grad = True
                        break
            res = None if multi and not any_grad else _run_node(fn, buf, False, anomaly, observe)
            buf = None
            _deliver(fn, res, buffers, heap, None, keep_graph, create_graph)
            res = None
    finally:
        set_grad(prev)
    return None


# ---- capture: autograd.grad and backward(inputs=...) -------------------------------

cdef list _current = [None]         # the node whose backward runs in run_capture


def current_node():
    """The node whose formula :func:`run_capture` is running (None outside one): the
    compiler's joint trace names the op of a backward it cannot trace."""
    return _current[0]


def _seq_key(NodeBase n):
    return n._seq


def run_capture(roots, grads, bint keep_graph, bint create_graph, inputs,
                bint accumulate):
    """The reverse pass restricted to the nodes on a path to ``inputs`` (tensors):
    the gradients arriving there are returned (``autograd.grad``) or accumulated into
    their ``.grad`` (``backward(inputs=...)``, ``accumulate``).

    A node is needed when it captures an input's gradient or has an edge into a
    needed node; one pass over the reachable nodes in creation order decides it,
    since a node's edges lead to older nodes.  Needed nodes with such an edge run,
    newest first from the heap, and deliver only along those edges."""
    cdef dict capture = {}
    cdef Py_ssize_t k = 0
    for t in inputs:
        e = _eng._edge_of(t)
        slots = capture.get(e[0])
        if slots is None:
            capture[e[0]] = [(e[1], k)]
        else:
            slots.append((e[1], k))
        k += 1
    # --- the reachable nodes, then the needed ones oldest first --------------------
    cdef set seen = set()
    cdef list stack = []
    cdef list order = []
    cdef NodeBase fn, n
    for e in roots:
        if e[0] not in seen:
            seen.add(e[0])
            stack.append(e[0])
    while stack:
        fn = <NodeBase?>stack.pop()
        order.append(fn)
        for e in fn._next:
            if e is not None and (<tuple>e)[0] not in seen:
                seen.add((<tuple>e)[0])
                stack.append((<tuple>e)[0])
    seen = None
    order.sort(key=_seq_key)
    cdef set needed = set(capture)
    cdef set run = set()
    for fn in order:
        for e in fn._next:
            if e is not None and (<tuple>e)[0] in needed:
                needed.add(fn)
                run.add(fn)
                break
    order = None
    # --- the pass ---------------------------------------------------------------
    cdef dict buffers = {}
    cdef dict captured = {}
    cdef _Heap heap = _Heap()
    for (r, nr), g in zip(roots, grads):
        if g is not None:
            n = <NodeBase?>r
            if buffers.get(n) is None:
                heap.push(n)
            _add_into(buffers, n, nr, g, create_graph)
    prev = _eng.is_grad_enabled()
    set_grad = _eng._set_grad_enabled
    set_grad(create_graph)
    prev_node = _current[0]
    cdef bint anomaly = _anomaly[0]
    observe = _observer[0]
    pre_hooks = _eng._pre_hooks
    cdef bint any_grad, multi, skip_pre
    try:
        while heap.n:
            fn = <NodeBase>heap.pop()
            buf = buffers.pop(fn)
            multi = fn._nout > 1
            skip_pre = False
            slots = capture.get(fn)
            if slots is not None:
                if fn._extra is not None:
                    buf = pre_hooks(fn, fn._extra, buf)
                    skip_pre = True
                for s in <list>slots:
                    captured[(<tuple>s)[1]] = ((buf[(<tuple>s)[0]] if buf is not None
                                                else None) if multi else buf)
            if fn not in run:
                continue
            any_grad = buf is not None
            if multi and any_grad:
                any_grad = False
                for b in <list>buf:
                    if b is not None:
                        any_grad = True
                        break
            _current[0] = fn
            res = _run_node(fn, buf, skip_pre, anomaly, observe) if any_grad else None
            buf = None
            _deliver(fn, res, buffers, heap, needed, keep_graph, create_graph)
            res = None
    finally:
        _current[0] = prev_node
        set_grad(prev)
    return _eng._finish_capture(capture, captured, buffers, inputs, accumulate,
                                create_graph)
