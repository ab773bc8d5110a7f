"""``DistributedSampler``: each of ``num_replicas`` processes visits its own share of a
map-style dataset (torch's ``torch.utils.data.distributed``)."""
from __future__ import annotations

import math

import ember
from ember.utils.data.sampler import Sampler

__all__ = ["DistributedSampler"]


def _from_process_group(what: str) -> int:
    import ember.distributed as dist
    if not dist.is_available() or not dist.is_initialized():
        raise RuntimeError("Requires distributed package to be available")
    return dist.get_world_size() if what == "num_replicas" else dist.get_rank()


class DistributedSampler(Sampler):
    """Indices of replica ``rank`` among ``num_replicas``: every ``num_replicas``-th index
    of one (shuffled, per ``seed + epoch``) order, padded by wrapping around so all replicas
    get the same count (or, with ``drop_last``, trimmed).

    Parameters
    ----------
    dataset : Dataset
        A map-style dataset (has ``__len__``).
    num_replicas, rank : int, optional
        Default: the world size and rank of the initialised process group.
    shuffle : bool, default True
    seed : int, default 0
        Must be the same on every replica.
    drop_last : bool, default False
    """

    def __init__(self, dataset, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False) -> None:
        if num_replicas is None:
            num_replicas = _from_process_group("num_replicas")
        if rank is None:
            rank = _from_process_group("rank")
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            g = ember.Generator()
            g.manual_seed(self.seed + self.epoch)
            indices = ember.randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Set the epoch, which reseeds the shuffle so each epoch has its own order."""
        self.epoch = epoch
