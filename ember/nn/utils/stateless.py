"""Calling a module with other parameters and buffers (PyTorch's
``torch.nn.utils.stateless``)."""
from __future__ import annotations

import contextlib

__all__ = ["functional_call"]


def _tied_names(module):
    """For every parameter or buffer shared under several names: name -> all its names."""
    by_id: dict = {}
    for name, t in module.named_parameters(remove_duplicate=False):
        by_id.setdefault(id(t), []).append(name)
    for name, t in module.named_buffers(remove_duplicate=False):
        by_id.setdefault(id(t), []).append(name)
    return {n: names for names in by_id.values() if len(names) > 1 for n in names}


def _owner(module, name):
    path, _, leaf = name.rpartition(".")
    return (module.get_submodule(path) if path else module), leaf


@contextlib.contextmanager
def _reparametrize(module, tensors, tie_weights, strict):
    tensors = dict(tensors)
    if tie_weights:
        tied = _tied_names(module)
        for name in list(tensors):
            for other in tied.get(name, ()):
                if other in tensors and tensors[other] is not tensors[name]:
                    raise ValueError(f"functional_call got multiple values for keys "
                                     f"{sorted([name, other])}, which are tied. Consider "
                                     f"using tie_weights=False")
                tensors.setdefault(other, tensors[name])
    if strict:
        known = {n for n, _ in module.named_parameters(remove_duplicate=False)} | \
            {n for n, _ in module.named_buffers(remove_duplicate=False)}
        missing = sorted(known - set(tensors))
        unexpected = sorted(set(tensors) - known)
        if missing or unexpected:
            msgs = []
            if unexpected:
                msgs.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
            if missing:
                msgs.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
            raise RuntimeError(f"Error(s) in reparametrizing for {type(module).__name__}:\n\t"
                               + "\n\t".join(msgs))
    saved = []
    try:
        for name, t in tensors.items():
            owner, leaf = _owner(module, name)
            if leaf in owner._parameters:
                saved.append((owner._parameters, leaf, owner._parameters[leaf]))
                owner._parameters[leaf] = t
            elif leaf in owner._buffers:
                saved.append((owner._buffers, leaf, owner._buffers[leaf]))
                owner._buffers[leaf] = t
            else:
                saved.append((owner.__dict__, leaf, owner.__dict__.get(leaf, _MISSING)))
                owner.__dict__[leaf] = t
        yield
    finally:
        for store, leaf, old in reversed(saved):
            if old is _MISSING:
                store.pop(leaf, None)
            else:
                store[leaf] = old


_MISSING = object()


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights: bool = True, strict: bool = False):
    """Call ``module(*args, **kwargs)`` with its parameters and buffers replaced by the
    tensors of ``parameter_and_buffer_dicts`` (one dict or a sequence of dicts, keyed by
    ``named_parameters``/``named_buffers`` names); the module is restored afterwards.

    Parameters
    ----------
    tie_weights : bool
        Replace a tensor shared under several names everywhere it is used.
    strict : bool
        Require exactly the module's parameter and buffer names.
    """
    if isinstance(parameter_and_buffer_dicts, dict):
        tensors = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, (list, tuple)):
        tensors = {}
        for d in parameter_and_buffer_dicts:
            dup = set(tensors) & set(d)
            if dup:
                raise ValueError(f"{sorted(dup)} appeared in multiple dictionaries; behavior "
                                 f"of functional call is ambiguous")
            tensors.update(d)
    else:
        raise ValueError(f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple "
                         f"of dicts, but got {type(parameter_and_buffer_dicts)}")
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrize(module, tensors, tie_weights, strict):
        return module(*args, **(kwargs or {}))
