"""vmap's batched tensors and the dispatch mode that runs each op once on a whole batch.

A ``BatchedTensor`` is what code inside ``vmap`` sees: a tensor whose shape, strides and
dtype are those of one sample (it aliases its physical tensor with the batch dimension left
out), holding the physical tensor, the batch dimension and the vmap level. Ops on it reach
the level's ``VmapMode``, which looks up a batching rule (``_batch_rules.RULES``) that
runs the op once on the physical tensors, or runs it once per sample and warns.

Autograd is recorded on the physical tensors, below every vmap level: ``grad`` inside
``vmap`` makes physical leaves with the batch dimensions in front (``prep_leaf``) and
differentiates the physical outputs (``grads``), so backward passes run unbatched, at
native speed."""
from __future__ import annotations

import contextlib
import warnings

import ember
from ember._C import core
from ember._tensor import Tensor
from ember.library import DispatchMode

# Active vmap levels, outermost first.
_levels: list = []

# Ops that draw random numbers (randomness= decides what they do under vmap).
RANDOM_OPS = frozenset((
    "rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like",
    "bernoulli", "bernoulli_", "multinomial", "normal", "normal_", "uniform_", "poisson",
    "dropout", "dropout_", "alpha_dropout", "feature_alpha_dropout", "dropout1d",
    "dropout2d", "dropout3d", "random_", "exponential_", "geometric_", "cauchy_",
    "log_normal_", "rrelu",
))

_RANDOM_ERROR = ("vmap: called random operation while in randomness error mode. Please "
                 "either use the 'same' or 'different' randomness flags on vmap or perform "
                 "the randomness operation out of vmap")


def _no_data(what):
    def method(self, *args, **kwargs):
        raise RuntimeError(f"vmap: It looks like you're calling {what} on a Tensor. We don't "
                           f"support vmap over calling {what} on a Tensor, please try to "
                           f"rewrite what you're doing with other operations.")
    method.__name__ = what.strip(".()")
    return method


def _base(t):
    while type(t) is BatchedTensor:
        t = t.__dict__["_vphys"]
    return t


class BatchedTensor(Tensor):
    """A per-sample view of a physical tensor inside ``vmap`` (shape of one sample)."""

    item = _no_data(".item()")
    tolist = _no_data(".tolist()")
    numpy = _no_data(".numpy()")
    __bool__ = _no_data("bool()")
    __float__ = _no_data("float()")
    __int__ = _no_data("int()")
    __index__ = _no_data("__index__()")
    __array__ = _no_data("__array__()")
    data_ptr = _no_data(".data_ptr()")

    def __repr__(self, *, tensor_contents=None) -> str:
        d = self.__dict__
        return f"BatchedTensor(lvl={d['_vlevel'].level}, bdim={d['_vbdim']}, " \
               f"value=\n{d['_vphys']!r}\n)"

    __str__ = __repr__

    # factories on a batched tensor give a batched result (in-place ops may then write
    # per-sample values into it), as in PyTorch
    def new_zeros(self, *size, **kwargs):
        return _new_batched(self, "new_zeros", size, (), kwargs)

    def new_ones(self, *size, **kwargs):
        return _new_batched(self, "new_ones", size, (), kwargs)

    def new_empty(self, *size, **kwargs):
        return _new_batched(self, "new_empty", size, (), kwargs)

    def new_full(self, size, fill_value, **kwargs):
        return _new_batched(self, "new_full", (size,), (fill_value,), kwargs)

    @property
    def requires_grad(self):
        return _base(self).requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        _base(self).requires_grad_(value)

    def requires_grad_(self, requires_grad=True):
        _base(self).requires_grad_(requires_grad)
        return self

    @property
    def grad_fn(self):
        return _base(self).grad_fn

    @property
    def is_leaf(self):
        return _base(self).is_leaf


def _new_batched(t, method, size, extra, kwargs):
    d = t.__dict__
    mode = d["_vlevel"]
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    phys = getattr(d["_vphys"], method)((mode.size, *size), *extra, **kwargs)
    return wrap(phys, 0, mode)


def wrap(phys, bdim, mode):
    """The per-sample view of ``phys`` batched over ``bdim`` at ``mode``'s level."""
    if bdim is None:
        return phys
    t = core._batched_alias(BatchedTensor, phys, bdim)
    d = t.__dict__
    d["_vphys"] = phys
    d["_vbdim"] = bdim
    d["_vlevel"] = mode
    return t


def unwrap(x, mode):
    """``(physical, bdim)`` of ``x`` at ``mode``'s level; ``(x, None)`` when unbatched."""
    if type(x) is BatchedTensor:
        d = x.__dict__
        if d["_vlevel"] is mode:
            return d["_vphys"], d["_vbdim"]
    return x, None


def is_batched(x, mode) -> bool:
    return type(x) is BatchedTensor and x.__dict__["_vlevel"] is mode


@contextlib.contextmanager
def _no_modes():
    """Run with every dispatch mode lifted: the ops see plain physical tensors."""
    popped = []
    while core._mode_active():
        popped.append(core._pop_mode())
    try:
        yield
    finally:
        for m in reversed(popped):
            core._push_mode(m)


def _materialize(x, k):
    """``x`` as a plain tensor with the batch dims of the first ``k`` levels in front
    (outermost first), unbatched levels expanded. Runs with the modes lifted."""
    if k == 0:
        return _base(x) if type(x) is BatchedTensor else x
    mode = _levels[k - 1]
    p, b = unwrap(x, mode)
    if b is None:
        t = _materialize(x, k - 1)
        shape = list(t.shape)
        t = t.unsqueeze(k - 1)
        return t.expand(*shape[:k - 1], mode.size, *shape[k - 1:])
    t = _materialize(p, k - 1)
    return t.movedim(k - 1 + b, k - 1)


def _wrap_levels(t):
    for mode in _levels:
        t = wrap(t, 0, mode)
    return t


def active() -> bool:
    return bool(_levels)


def to_base(x):
    """``x`` as a plain tensor with every active level's batch dim in front."""
    if not isinstance(x, core.TensorBase):
        return x
    leaf = x.__dict__.get("_vleaf") if type(x) is BatchedTensor else None
    if leaf is not None:
        return leaf
    with _no_modes():
        return _materialize(x, len(_levels))


def prep_leaf(x):
    """A differentiable input for ``grad``/``vjp``/``jacrev`` inside vmap: physical, with
    every level's batch dim in front (so each sample gets its own gradient), connected to
    ``x``'s graph when ``x`` requires grad."""
    with _no_modes():
        base = _materialize(x, len(_levels))
        leaf = base.view_as(base) if base.requires_grad else base.detach().requires_grad_(True)
    t = _wrap_levels(leaf)
    if type(t) is BatchedTensor:
        t.__dict__["_vleaf"] = leaf
    return t


def grads(outputs, inputs, cotangents):
    """``autograd.grad`` of batched ``outputs`` w.r.t. inputs made by ``prep_leaf``,
    computed on the physical tensors and returned as batched tensors."""
    outs = [to_base(o) for o in outputs]
    ins = [to_base(x) for x in inputs]
    cots = [to_base(c) for c in cotangents]
    pairs = [(o, c) for o, c in zip(outs, cots) if o.requires_grad]
    if not pairs:
        return [None] * len(inputs)
    with _no_modes():
        gs = ember.autograd.grad([o for o, _ in pairs], ins, [c for _, c in pairs],
                                 create_graph=True, allow_unused=True)
    return [None if g is None else _wrap_levels(g) for g in gs]


def make_dual(primal, tangent):
    """``forward_ad.make_dual`` inside vmap: the dual is made on the physical tensors."""
    from ember.autograd import forward_ad
    with _no_modes():
        d = forward_ad.make_dual(_materialize(primal, len(_levels)),
                                 _materialize(tangent, len(_levels)))
    return _wrap_levels(d)


def unpack_dual(t):
    """``forward_ad.unpack_dual`` of a batched tensor: ``(primal, tangent)``, batched."""
    from ember.autograd import forward_ad
    base = to_base(t)
    with _no_modes():
        p, tan = forward_ad.unpack_dual(base)
    return _wrap_levels(p), None if tan is None else _wrap_levels(tan)


def _flat_tensors(args, kwargs):
    for a in args:
        if isinstance(a, (list, tuple)):
            yield from a
        else:
            yield a
    yield from kwargs.values()


class VmapMode(DispatchMode):
    """One vmap level: routes ops on its batched tensors to their batching rules."""

    def __init__(self, size: int, randomness: str, level: int):
        self.size = size
        self.randomness = randomness
        self.level = level
        self.rng = None

    def __ember_dispatch__(self, name, func, args, kwargs):
        batched = False
        for a in _flat_tensors(args, kwargs):
            if type(a) is BatchedTensor and a.__dict__["_vlevel"] is self:
                batched = True
                break
        if name in RANDOM_OPS:
            if self.randomness == "error":
                raise RuntimeError(_RANDOM_ERROR)
            if not batched:
                if self.randomness == "same":
                    return func(*args, **kwargs)
                return fallback(self, name, func, args, kwargs, warn=False)
            if self.randomness == "same":
                return fallback(self, name, func, args, kwargs, warn=False)
        if not batched:
            return func(*args, **kwargs)
        rule = _rules().get(name)
        if rule is None:
            return fallback(self, name, func, args, kwargs)
        return rule(self, func, args, kwargs)


def _rules():
    from ember.func._batch_rules import RULES
    return RULES


def _select(x, mode, i):
    p, b = unwrap(x, mode)
    return x if b is None else p.select(b, i)


def _stack_results(results, mode):
    first = results[0]
    if isinstance(first, core.TensorBase):
        return wrap(ember.stack(results, 0), 0, mode)
    if isinstance(first, (tuple, list)):
        cols = [_stack_results([r[k] for r in results], mode) for k in range(len(first))]
        return type(first)(*cols) if hasattr(first, "_fields") else type(first)(cols)
    if any(r != first for r in results[1:]):
        raise RuntimeError("vmap: an op returned a Python value that differs between samples; "
                           "it cannot be batched")
    return first


def fallback(mode, name, func, args, kwargs, warn=True):
    """Run ``func`` once per sample and stack the results (ops without a batching rule)."""
    if warn:
        warnings.warn(f"There is a performance drop because we have not yet implemented the "
                      f"batching rule for {name}. Please file us an issue on GitHub so that "
                      f"we can prioritize its implementation.", UserWarning, stacklevel=4)
    if mode.size == 0:
        raise RuntimeError(f"vmap: {name} has no batching rule and the batch is empty, so it "
                           f"cannot be run per sample")
    inplace = name.endswith("_") and not name.startswith("_") and args and \
        isinstance(args[0], core.TensorBase)
    if inplace and not is_batched(args[0], mode):
        raise RuntimeError(f"vmap: {name}(self, *extra_args) is not possible because there "
                           f"exists a Tensor `other` in extra_args that has more elements than "
                           f"`self`. This happened due to `other` being vmapped over but "
                           f"`self` not being vmapped over in a vmap. Please try to use "
                           f"out-of-place operators instead of {name}.")
    rng = ember.get_rng_state() if mode.randomness == "same" else None
    results = []
    for i in range(mode.size):
        a = [[_select(y, mode, i) for y in x] if isinstance(x, (list, tuple)) else
             _select(x, mode, i) for x in args]
        a = [type(x)(y) if isinstance(x, (list, tuple)) else y for x, y in zip(args, a)]
        kw = {k: _select(v, mode, i) for k, v in kwargs.items()}
        if rng is not None:
            ember.set_rng_state(rng)
        results.append(func(*a, **kw))
    if inplace:
        return args[0]
    return _stack_results(results, mode)
