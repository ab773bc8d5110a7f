"""``embedding_bag``: sums, means or maxima of bags of embeddings, without building the
intermediate ``(bags, length, dim)`` tensor."""
from __future__ import annotations

import ember

__all__ = ["embedding_bag"]


def embedding_bag(input: ember.Tensor, weight: ember.Tensor, offsets=None, max_norm=None,
                  norm_type: float = 2, scale_grad_by_freq: bool = False, mode: str = "mean",
                  sparse: bool = False, per_sample_weights=None,
                  include_last_offset: bool = False, padding_idx=None) -> ember.Tensor:
    """Reduce bags of rows of ``weight``.

    Parameters
    ----------
    input : Tensor
        ``(B, L)`` indices (B bags of L each), or 1-D indices cut into bags by ``offsets``.
    offsets : Tensor, optional
        Start of each bag in a 1-D ``input`` (with ``include_last_offset``, one more entry
        marking the end).
    mode : {'sum', 'mean', 'max'}
        The reduction; an empty bag gives zeros.
    per_sample_weights : Tensor, optional
        A weight per index (``mode='sum'`` only).
    padding_idx : int, optional
        Indices equal to it are left out of their bag.

    Returns
    -------
    Tensor
        ``(B, embedding_dim)``; differentiable in ``weight`` and ``per_sample_weights``.
    """
    F = ember.nn.functional
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({tuple(per_sample_weights.shape)}"
                         f") is not None, then it must have the same shape as the input "
                         f"({tuple(input.shape)})")
    if weight.dim() != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension "
                         f"{weight.dim()}")
    if input.is_floating_point():
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the "
                           "following scalar types: Long, Int; but got a floating tensor")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError(f"if input is 2D, then offsets has to be None, as input is "
                             f"treated is a mini-batch of fixed length sequences. However, "
                             f"found offsets of type {type(offsets)}")
        offsets = ember.arange(0, input.numel(), max(input.shape[1], 1), dtype=ember.int64)
        if input.shape[1] == 0:
            offsets = ember.zeros(input.shape[0], dtype=ember.int64)
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.dim()}")
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. "
                                  f"per_sample_weights is only supported for mode='sum' "
                                  f"(got mode='{mode}'). Please open a feature request on "
                                  f"GitHub.")
    if padding_idx is not None and padding_idx < 0:
        padding_idx += weight.shape[0]
    if max_norm is not None:
        F._embedding_renorm(weight, input, max_norm, norm_type)
    n = input.numel()
    offsets = offsets.to(ember.int64)
    starts = offsets[:-1] if include_last_offset else offsets
    nbags = starts.numel()
    end = int(offsets[-1]) if include_last_offset and offsets.numel() else n
    idx = input.to(ember.int64)
    pos = ember.arange(n, dtype=ember.int64)
    bag = ember.searchsorted(starts, pos, right=True) - 1
    # indices outside every bag or equal to padding_idx go to a spare bag that is dropped
    drop = (bag < 0) | (pos >= end)
    if padding_idx is not None:
        drop = drop | (idx == padding_idx)
    bag = ember.where(drop, ember.full_like(bag, nbags), bag)
    dim = weight.shape[1]
    rows = weight.index_select(0, idx)
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.unsqueeze(1).to(rows.dtype)
    count = ember.zeros(nbags + 1, dtype=weight.dtype).index_add(
        0, bag, ember.ones(n, dtype=weight.dtype))[:nbags].unsqueeze(1)
    if mode == "max":
        init = ember.full((nbags + 1, dim), float("-inf"), dtype=weight.dtype)
        out = init.scatter_reduce(0, bag.unsqueeze(1).expand(n, dim), rows, "amax")[:nbags]
        return ember.where(count > 0, out, ember.zeros_like(out))
    out = ember.zeros(nbags + 1, dim, dtype=weight.dtype).index_add(0, bag, rows)[:nbags]
    if mode == "mean":
        out = out / count.clamp_min(1)
    return out
