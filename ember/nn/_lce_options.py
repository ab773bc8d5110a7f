"""``LinearCrossEntropyOptions``, in its own module so that ``import ember.nn`` does not
load ``dataclasses`` (``ember.nn`` exposes the class lazily)."""
from __future__ import annotations

import dataclasses

__all__ = ["LinearCrossEntropyOptions"]


@dataclasses.dataclass(frozen=True)
class LinearCrossEntropyOptions:
    """Ask :func:`linear_cross_entropy` for its chunked path: the batch is processed
    ``batch_chunk_size`` rows at a time (``None``: as many rows as keep a chunk's logits
    near 4M elements), so the full ``(N, num_classes)`` logits never exist at once.

    ``acc_dtype`` is the dtype the weight gradient is accumulated in (default: the
    weight's); ``allow_retain_graph`` is accepted for PyTorch compatibility (ember's
    backward never consumes its buffers, so a second backward always works);
    ``chunking_method`` and ``acc_policy`` accept PyTorch's values, ember chunks the batch
    dimension only."""

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None

    def __post_init__(self):
        if self.batch_chunk_size is not None and self.batch_chunk_size <= 0:
            raise ValueError(f"batch_chunk_size must be positive, got {self.batch_chunk_size}")
        if self.acc_policy not in ("accurate", "balanced", "compact", "auto"):
            raise ValueError(f"acc_policy must be one of 'accurate', 'balanced', 'compact' or "
                             f"'auto', got {self.acc_policy!r}")
