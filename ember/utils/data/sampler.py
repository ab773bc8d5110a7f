"""Samplers: the order in which a DataLoader visits a map-style dataset."""
from __future__ import annotations

import ember

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler"]


class Sampler:
    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


def _randperm(n, generator):
    return (ember.randperm(n, generator=generator) if generator is not None
            else ember.randperm(n)).tolist()


def _randint(high, size, generator):
    if generator is not None:
        return ember.randint(0, high, (size,), dtype=ember.int64, generator=generator).tolist()
    return ember.randint(0, high, (size,), dtype=ember.int64).tolist()


class RandomSampler(Sampler):
    """A random permutation (or, with ``replacement``, independent draws) of the indices."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got "
                            f"replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        g = self.generator
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from _randint(n, 32, g)
            yield from _randint(n, self.num_samples % 32, g)
        else:
            for _ in range(self.num_samples // n):
                yield from _randperm(n, g)
            yield from _randperm(n, g)[:self.num_samples % n]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in _randperm(len(self.indices), self.generator):
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """Indices drawn with probabilities proportional to ``weights``."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or \
                num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got "
                             f"replacement={replacement}")
        w = weights if isinstance(weights, ember.Tensor) else ember.tensor(list(weights))
        w = w.to(ember.float64)
        if w.dim() != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape "
                             f"{tuple(w.shape)}")
        self.weights = w
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        kw = {} if self.generator is None else {"generator": self.generator}
        r = ember.multinomial(self.weights, self.num_samples, self.replacement, **kw)
        yield from iter(r.tolist())

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Groups the indices of ``sampler`` into lists of ``batch_size``."""

    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got "
                             f"drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        bs = self.batch_size
        it = iter(self.sampler)
        if self.drop_last:
            while True:
                try:
                    batch = [next(it) for _ in range(bs)]
                except StopIteration:
                    return
                yield batch
        else:
            batch = []
            for idx in it:
                batch.append(idx)
                if len(batch) == bs:
                    yield batch
                    batch = []
            if batch:
                yield batch

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
