"""ember.testing: ``assert_close``, ``make_tensor`` (and the deprecated ``assert_allclose``),
with PyTorch's tolerances, value ranges and failure messages."""
from ember.testing._comparison import assert_allclose, assert_close
from ember.testing._creation import make_tensor

__all__ = ["assert_close", "make_tensor", "assert_allclose"]
