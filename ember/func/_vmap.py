"""``vmap``: map a function over a dimension of its inputs.

Inputs become ``BatchedTensor``s (one sample's shape, the batch held aside) and each op
runs once on the whole batch through its batching rule (``_batch_rules``); an op without
one runs per sample and warns. Transforms nest: ``vmap(vmap(f))``, ``vmap(grad(f))``,
``vmap(jacrev(f))``."""
from __future__ import annotations

import functools
from typing import Any, Callable

import ember
from ember import _autocast
from ember._C.core import TensorBase
from ember.func import _batch_rules, _batched  # noqa: F401 - the rules register on import
from ember.func._batched import RANDOM_OPS as _RANDOM_OPS
from ember.func._tree import broadcast_prefix, flatten, unflatten
from ember.library import DispatchMode

__all__ = ["vmap"]


class _RefuseRandom(DispatchMode):
    def __ember_dispatch__(self, name, func, args, kwargs):
        if name in _RANDOM_OPS:
            raise RuntimeError("vmap: called random operation while in randomness error mode. "
                               "Please either use the 'same' or 'different' randomness flags "
                               "on vmap or perform the randomness operation out of vmap")
        return func(*args, **kwargs)


def _fn_name(func):
    return getattr(func, "__name__", type(func).__name__)


def _check_in_dim(d, x, i, func, in_dims):
    if d is None:
        return None
    if not isinstance(d, int):
        raise ValueError(f"vmap({_fn_name(func)}, in_dims={in_dims}, ...)(<inputs>): in_dims "
                         f"is not compatible with the structure of `inputs`. in_dim={d} for "
                         f"input {i}: expected an int or None")
    if not isinstance(x, TensorBase):
        raise ValueError(f"vmap({_fn_name(func)}, in_dims={in_dims}, ...)(<inputs>): Got "
                         f"in_dim={d} for an input but the input is of type {type(x)}. We "
                         f"cannot vmap over non-Tensor arguments, please use None as the "
                         f"respective in_dim")
    if not -x.dim() <= d < max(x.dim(), 1) or x.dim() == 0:
        raise ValueError(f"vmap({_fn_name(func)}, in_dims={in_dims}, ...)(<inputs>): Got "
                         f"in_dim={d} for some input, but that input is a Tensor of "
                         f"dimensionality {x.dim()} so expected in_dim to satisfy "
                         f"-{x.dim()} <= in_dim < {x.dim()}.")
    return d % x.dim()


def vmap(func: Callable, in_dims: Any = 0, out_dims: Any = 0, randomness: str = "error", *,
         chunk_size: int | None = None) -> Callable:
    """Vectorise ``func`` over a dimension of its inputs (PyTorch's ``torch.vmap``).

    Parameters
    ----------
    func : callable
        Takes tensors (or nested tuples/lists/dicts of them) and returns tensors.
    in_dims : int, None or a structure matching the positional arguments
        Which dimension of each input is mapped; ``None`` passes an input unmapped.
    out_dims : int or a structure matching the outputs
        Where the mapped dimension goes in each output.
    randomness : {"error", "different", "same"}
        Random ops inside ``func`` raise (``"error"``), draw independently per sample
        (``"different"``), or draw the same numbers for every sample (``"same"``).
    chunk_size : int, optional
        Map at most this many samples at once (less memory for large batches).

    Returns
    -------
    callable
        The vectorised function.
    """
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got "
                         f"{chunk_size})")
    if not isinstance(in_dims, (int, tuple)):
        raise ValueError(f"vmap({_fn_name(func)}, in_dims={in_dims}, ...): expected `in_dims` "
                         f"to be int or a (potentially nested) tuple matching the structure "
                         f"of inputs, got: {type(in_dims)}.")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        if not args:
            raise ValueError(f"vmap({_fn_name(func)})(<inputs>): got no inputs. Maybe you "
                             f"forgot to add inputs, or you are trying to vmap over a "
                             f"function with no inputs. The latter is unsupported.")
        if isinstance(in_dims, tuple) and len(in_dims) != len(args):
            raise ValueError(f"vmap({_fn_name(func)}, in_dims={in_dims}, ...)(<inputs>): "
                             f"Expected len(in_dims) == len(inputs), but got {len(in_dims)} "
                             f"and {len(args)}")
        leaves, spec = flatten(args)
        dims = broadcast_prefix(in_dims, args, f"vmap({_fn_name(func)}, in_dims={in_dims})")
        dims = [_check_in_dim(d, x, i, func, in_dims) for i, (d, x) in
                enumerate(zip(dims, leaves))]
        sizes = {x.shape[d] for d, x in zip(dims, leaves) if d is not None}
        if not sizes:
            raise ValueError("vmap: Expected at least one Tensor to vmap over")
        if len(sizes) > 1:
            got = [x.shape[d] for d, x in zip(dims, leaves) if d is not None]
            raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped "
                             f"dimension, got sizes {got} for the mapped dimension")
        (batch,) = sizes
        if chunk_size is not None and batch > chunk_size:
            return _chunked(func, dims, leaves, spec, kwargs, batch, chunk_size, out_dims,
                            randomness)
        rng = ember.get_rng_state() if randomness == "same" else None
        return _run(func, dims, leaves, spec, kwargs, batch, out_dims, randomness, rng)
    return wrapper


def _run(func, dims, leaves, spec, kwargs, batch, out_dims, randomness, rng):
    mode = _batched.VmapMode(batch, randomness, len(_batched._levels))
    args = [_batched.wrap(x, d, mode) if d is not None else x for d, x in zip(dims, leaves)]
    if rng is not None:
        ember.set_rng_state(rng)
    _batched._levels.append(mode)
    _autocast._vmap_depth[0] += 1
    try:
        with mode:
            out = func(*unflatten(args, spec), **kwargs)
    finally:
        _autocast._vmap_depth[0] -= 1
        _batched._levels.pop()
    o_leaves, o_spec = flatten(out)
    odims = broadcast_prefix(out_dims, out, f"vmap({_fn_name(func)}, out_dims={out_dims})")
    res = []
    for o, od in zip(o_leaves, odims):
        if not isinstance(o, TensorBase):
            raise ValueError(f"vmap({_fn_name(func)}, ...): `{_fn_name(func)}` must only "
                             f"return Tensors, got type {type(o)}. Did you mean to set "
                             f"out_dims= to None for output?")
        p, b = _batched.unwrap(o, mode)
        if od is None:
            if b is not None:
                raise ValueError(f"vmap({_fn_name(func)}, ..., out_dims=None): Cannot return "
                                 f"a BatchedTensor when out_dim is None")
            res.append(o)
            continue
        nd = o.dim() + 1
        if not -nd <= od < nd:
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[{-nd}, {nd - 1}], but got {od})")
        od %= nd
        if b is None:
            shape = list(o.shape)
            res.append(o.unsqueeze(od).expand(*shape[:od], batch, *shape[od:]))
        else:
            res.append(p.movedim(b, od))
    return unflatten(res, o_spec)


def _chunked(func, dims, leaves, spec, kwargs, batch, chunk_size, out_dims, randomness):
    rng = ember.get_rng_state() if randomness == "same" else None
    parts, odims, o_spec = [], None, None
    for start in range(0, batch, chunk_size):
        n = min(chunk_size, batch - start)
        chunk = [x.narrow(d, start, n) if d is not None else x for d, x in zip(dims, leaves)]
        out = _run(func, dims, chunk, spec, kwargs, n, out_dims, randomness, rng)
        o_leaves, o_spec = flatten(out)
        if odims is None:
            odims = broadcast_prefix(out_dims, out, f"vmap({_fn_name(func)}, "
                                                    f"out_dims={out_dims})")
        parts.append(o_leaves)
    res = []
    for k, od in enumerate(odims):
        col = [p[k] for p in parts]
        res.append(col[0] if od is None else ember.cat(col, od))
    return unflatten(res, o_spec)
