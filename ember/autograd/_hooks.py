"""Tensor hooks: ``register_hook``, ``retain_grad``, ``register_post_accumulate_grad_hook``.

Hooks on a leaf live on the tensor (its AccumulateGrad node reads them); hooks on a
non-leaf live on its grad_fn, keyed by the tensor's output number."""
from __future__ import annotations

import itertools
import weakref

from ember.autograd._engine import _producer

_ids = itertools.count()
# Hooks registered or removed anywhere: compiled code re-checks module guards when it moves.
_hook_writes = [0]


class RemovableHandle:
    """Returned by every ``register_*hook`` (tensor, node and module hooks):
    ``handle.remove()`` takes the hook out of its dict and of any extra dicts
    that carry per-hook flags."""

    __slots__ = ("_dicts", "id")

    def __init__(self, hooks_dict, *extra_dicts):
        _hook_writes[0] += 1
        self.id = next(_ids)
        self._dicts = (hooks_dict,) + extra_dicts

    def remove(self):
        _hook_writes[0] += 1
        for d in self._dicts:
            d.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
        return False


def add_hook(hooks_dict, fn, prepend=False):
    """Put ``fn`` in ``hooks_dict`` (first when ``prepend``); its handle."""
    h = RemovableHandle(hooks_dict)
    hooks_dict[h.id] = fn
    if prepend:
        hooks_dict.move_to_end(h.id, last=False)
    return h


def register_tensor_hook(t, hook):
    if not t._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if t._grad_fn is None:
        if t._ag_hooks is None:
            t._ag_hooks = {}
        return add_hook(t._ag_hooks, hook)
    fn, nr = _producer(t)
    th = fn._ext().setdefault("tensor_pre", {})
    return add_hook(th.setdefault(nr, {}), hook)


def retain_grad(t):
    if not t._requires_grad:
        raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    if t._grad_fn is None or t.__dict__.get("_retains_grad"):
        return
    _hook_writes[0] += 1
    fn, nr = _producer(t)
    fn._ext().setdefault("retain", {})[nr] = weakref.ref(t)
    t.__dict__["_retains_grad"] = True


def register_post_accumulate_grad_hook(t, hook):
    if not t._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if t._grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf "
                           "tensors")
    if t._ag_post_hooks is None:
        t._ag_post_hooks = {}
    return add_hook(t._ag_post_hooks, hook)
