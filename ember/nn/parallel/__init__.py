"""``ember.nn.parallel``: data-parallel training across processes (PyTorch's
``torch.nn.parallel``)."""
from ember.nn.parallel.data_parallel import DataParallel, data_parallel
from ember.nn.parallel.distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]
