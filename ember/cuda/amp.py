"""``ember.cuda.amp``: PyTorch's deprecated CUDA spellings of ``ember.amp.autocast`` and
``ember.amp.GradScaler`` (they warn, as PyTorch's do)."""
from __future__ import annotations

import ember
from ember.amp._deprecated import spellings

__all__ = ["autocast", "GradScaler"]

autocast, GradScaler = spellings("cuda", ember.float16, "ember.cuda.amp")
