"""``ember.nn.parallel``: data-parallel training across processes (PyTorch's
``torch.nn.parallel``)."""
from ember.nn.parallel.distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
