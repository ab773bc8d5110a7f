"""``ember.datasets``: small ready-to-use datasets.

- :class:`Digits`: the UCI 8x8 handwritten digits (1,797 images), shipped inside the
  package (``data/digits.npz``; citation and licence in ``data/README.md``).
- :class:`MNIST`: reads the standard IDX files from a folder you provide (no download).
"""
from ember.datasets.digits import Digits
from ember.datasets.mnist import MNIST, read_idx

__all__ = ["Digits", "MNIST", "read_idx"]
