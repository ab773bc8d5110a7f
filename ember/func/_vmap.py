"""``vmap``: map a function over a dimension of its inputs.

ember runs the function once per sample and stacks the results along ``out_dims``, so
everything the function does works under ``vmap``: nested transforms (``vmap(grad(f))``,
``vmap(jacrev(f))``, ``vmap(vmap(f))``) and in-place ops on per-sample values."""
from __future__ import annotations

import functools
from typing import Any, Callable

import ember
from ember._C.core import TensorBase
from ember.func._tree import broadcast_prefix, flatten, unflatten
from ember.library import DispatchMode

__all__ = ["vmap"]

# Ops that draw random numbers: under randomness="error" they are refused.
_RANDOM_OPS = frozenset((
    "rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like",
    "bernoulli", "bernoulli_", "multinomial", "normal", "normal_", "uniform_", "poisson",
    "dropout", "dropout_", "alpha_dropout", "feature_alpha_dropout", "dropout1d",
    "dropout2d", "dropout3d", "random_", "exponential_", "geometric_", "cauchy_",
    "log_normal_", "rrelu",
))


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
        Accepted (and checked) for PyTorch compatibility; ember already maps one sample at a
        time, so it does not change memory use.

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
        rng = ember.get_rng_state() if randomness == "same" else None
        results = []
        for i in range(batch):
            sample = [x.select(d, i) if d is not None else x for d, x in zip(dims, leaves)]
            if rng is not None:
                ember.set_rng_state(rng)
            if randomness == "error":
                with _RefuseRandom():
                    out = func(*unflatten(sample, spec), **kwargs)
            else:
                out = func(*unflatten(sample, spec), **kwargs)
            results.append(flatten(out))
        if batch == 0:
            raise ValueError("vmap: the mapped dimension has size 0; there is no sample to "
                             "infer the outputs from")
        o_spec = results[0][1]
        out0 = unflatten(results[0][0], o_spec)
        odims = broadcast_prefix(out_dims, out0, f"vmap({_fn_name(func)}, out_dims={out_dims})")
        stacked = []
        for k, od in enumerate(odims):
            col = [r[0][k] for r in results]
            if not all(isinstance(c, TensorBase) for c in col):
                raise ValueError(f"vmap({_fn_name(func)}, ...): `{_fn_name(func)}` must only "
                                 f"return Tensors, got type {type(col[0])}. Did you mean to "
                                 f"set out_dims= to None for output?")
            if od is None:
                stacked.append(col[0])
                continue
            nd = col[0].dim() + 1
            if not -nd <= od < nd:
                raise IndexError(f"Dimension out of range (expected to be in range of "
                                 f"[{-nd}, {nd - 1}], but got {od})")
            stacked.append(ember.stack(col, od))
        return unflatten(stacked, o_spec)
    return wrapper
