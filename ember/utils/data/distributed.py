"""``DistributedSampler``: each rank of a process group visits its own share of a
dataset (PyTorch's ``torch.utils.data.distributed``)."""
from __future__ import annotations

import math
from typing import Any, Iterator, Optional

import ember
from ember.utils.data.sampler import Sampler, _randperm

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler):
    """Split a dataset's indices among ``num_replicas`` ranks.

    Rank ``r`` visits indices ``r, r + num_replicas, ...`` of one (shuffled,
    when ``shuffle``) order that every rank computes alike from ``seed`` and the
    epoch set with :meth:`set_epoch`. Every rank gets the same number of
    samples: without ``drop_last`` the order is padded with its own first
    indices, with it the tail that does not divide evenly is dropped.

    Parameters
    ----------
    dataset : Dataset
        A map-style dataset (``len()`` is used).
    num_replicas, rank : int, optional
        The world size and this process's rank in the default process group
        when omitted.
    shuffle : bool
        Permute the indices (anew each epoch).
    seed : int
        The permutation's seed; the same on every rank.
    drop_last : bool
        Drop the tail instead of padding.
    """

    def __init__(self, dataset: Any, num_replicas: Optional[int] = None,
                 rank: Optional[int] = None, shuffle: bool = True, seed: int = 0,
                 drop_last: bool = False) -> None:
        if num_replicas is None or rank is None:
            from ember import distributed as dist

            if not dist.is_available():
                raise RuntimeError("Requires distributed package to be available")
            num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
            rank = dist.get_rank() if rank is None else rank
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

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        if self.shuffle:
            g = ember.Generator()
            g.manual_seed(self.seed + self.epoch)
            indices = _randperm(n, g)
        else:
            indices = list(range(n))
        if not self.drop_last:
            pad = self.total_size - len(indices)
            if pad <= len(indices):
                indices += indices[:pad]
            else:
                indices += (indices * math.ceil(pad / len(indices)))[:pad]
        else:
            indices = indices[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Use ``epoch`` in the seed, so each epoch has its own order (same on every rank)."""
        self.epoch = epoch
