"""``functional_call`` and ``stack_module_state``: run a module with parameters and buffers
given as tensors, the way ``torch.func`` does."""
from __future__ import annotations

import contextlib
from typing import Any

import ember
from ember._C.core import TensorBase

__all__ = ["functional_call", "stack_module_state"]


def _owner(module, name):
    *path, leaf = name.split(".")
    mod = module
    for p in path:
        mod = getattr(mod, p)
    return mod, leaf


@contextlib.contextmanager
def _swapped(module, tensors: dict, tie_weights: bool):
    # Tied weights: every name sharing a tensor with a replaced one gets the replacement.
    if tie_weights:
        by_id = {}
        for n, t in list(module.named_parameters(remove_duplicate=False)) + \
                list(module.named_buffers(remove_duplicate=False)):
            by_id.setdefault(id(t), []).append(n)
        originals = dict(module.named_parameters(remove_duplicate=False))
        originals.update(dict(module.named_buffers(remove_duplicate=False)))
        tensors = dict(tensors)
        for name, t in list(tensors.items()):
            orig = originals.get(name)
            for other in by_id.get(id(orig), ()) if orig is not None else ():
                if other in tensors and tensors[other] is not t and other != name:
                    raise ValueError(f"functional_call got multiple values for keys "
                                     f"['{name}', '{other}'], which are tied. Consider using "
                                     f"tie_weights=False")
                tensors.setdefault(other, t)
    saved = []
    try:
        for name, t in tensors.items():
            mod, leaf = _owner(module, name)
            store = mod._parameters if leaf in mod._parameters else \
                mod._buffers if leaf in mod._buffers else None
            if store is None:
                saved.append((mod.__dict__, leaf, mod.__dict__.get(leaf, _MISSING)))
                mod.__dict__[leaf] = t
            else:
                saved.append((store, leaf, store[leaf]))
                store[leaf] = t
        yield
    finally:
        for store, leaf, old in reversed(saved):
            if old is _MISSING:
                del store[leaf]
            else:
                store[leaf] = old


_MISSING = object()


def functional_call(module, parameter_and_buffer_dicts, args: Any = None,
                    kwargs: dict | None = None, *, tie_weights: bool = True,
                    strict: bool = False):
    """Call ``module(*args, **kwargs)`` with its parameters and buffers replaced by the
    tensors in ``parameter_and_buffer_dicts`` (a dict, or a tuple of dicts, keyed by
    ``named_parameters()``/``named_buffers()`` names); the module is left unchanged.

    Parameters
    ----------
    tie_weights : bool
        A tensor given for one of several tied names is used for all of them.
    strict : bool
        Require a value for every parameter and buffer, and no unknown names.
    """
    dicts = parameter_and_buffer_dicts
    if isinstance(dicts, dict):
        merged = dict(dicts)
    elif isinstance(dicts, (tuple, list)):
        merged = {}
        for d in dicts:
            for k, v in d.items():
                if k in merged:
                    raise ValueError(f"{k} appeared in multiple dictionaries; behavior of "
                                     f"functional call is ambiguous")
                merged[k] = v
    else:
        raise ValueError(f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple "
                         f"of dicts, but got {type(dicts)}")
    known = {n for n, _ in module.named_parameters(remove_duplicate=False)} | \
        {n for n, _ in module.named_buffers(remove_duplicate=False)}
    if strict:
        missing = sorted(known - set(merged))
        unexpected = sorted(set(merged) - known)
        if missing or unexpected:
            raise RuntimeError(f"Error(s) in reparametrizing for {type(module).__name__}:\n\t"
                               + (f"Unexpected key(s): {', '.join(map(repr, unexpected))}.\n\t"
                                  if unexpected else "")
                               + (f"Missing key(s): {', '.join(map(repr, missing))}."
                                  if missing else ""))
    for k, v in merged.items():
        if not isinstance(v, TensorBase):
            raise TypeError(f"functional_call: expected a Tensor for '{k}', got {type(v)}")
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _swapped(module, merged, tie_weights):
        return module(*args, **(kwargs or {}))


def stack_module_state(models) -> tuple[dict, dict]:
    """Stack the parameters and buffers of same-shaped ``models`` along a new first
    dimension: ``(params, buffers)`` for ``vmap(functional_call(...))`` ensembles. The
    stacked parameters are new leaves that require grad when the originals do."""
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/"
                           "eval mode.")
    types = {type(m) for m in models}
    if len(types) > 1:
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")

    def stack(named_of, grad):
        names = [n for n, _ in named_of(models[0])]
        out = {}
        for n in names:
            ts = [dict(named_of(m))[n] for m in models]
            s = ember.stack([t.detach() for t in ts])
            if grad and ts[0].requires_grad:
                s.requires_grad_(True)
            out[n] = s
        return out

    return (stack(lambda m: m.named_parameters(), True),
            stack(lambda m: m.named_buffers(), False))
