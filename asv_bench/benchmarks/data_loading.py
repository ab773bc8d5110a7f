"""DataLoader throughput: an epoch over a TensorDataset and over a per-sample Python
dataset, in the main process and with 2 worker processes; ember beside PyTorch."""
import timeit

import numpy as np


def _lib(library):
    if library == "torch":
        try:
            import torch
            import torch.utils.data  # noqa: F401
        except ImportError:
            raise NotImplementedError("torch is not installed")
        return torch
    import ember
    import ember.utils.data  # noqa: F401
    return ember


class _PerSample:
    def __init__(self, lib, n):
        self.x = lib.from_numpy(np.random.default_rng(0).standard_normal((n, 64),
                                                                         dtype=np.float32))
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.x[i], i


class TensorDatasetEpoch:
    """10,000 x 784 float32 + labels, batch 64, shuffled"""
    params = [["ember", "torch"], [0, 2]]
    param_names = ["library", "num_workers"]
    timer = timeit.default_timer

    def setup(self, library, num_workers):
        lib = _lib(library)
        data = lib.utils.data
        rng = np.random.default_rng(0)
        x = lib.from_numpy(rng.standard_normal((10000, 784), dtype=np.float32))
        y = lib.from_numpy(rng.integers(0, 10, size=10000).astype(np.int64))
        self.loader = data.DataLoader(data.TensorDataset(x, y), batch_size=64, shuffle=True,
                                      num_workers=num_workers,
                                      persistent_workers=num_workers > 0)

    def time_epoch(self, library, num_workers):
        for _ in self.loader:
            pass


class PerSampleDatasetEpoch:
    """a Python __getitem__ dataset of 5,000 samples, batch 32"""
    params = [["ember", "torch"]]
    param_names = ["library"]
    timer = timeit.default_timer

    def setup(self, library):
        lib = _lib(library)
        self.loader = lib.utils.data.DataLoader(_PerSample(lib, 5000), batch_size=32)

    def time_epoch(self, library):
        for _ in self.loader:
            pass
