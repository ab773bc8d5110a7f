"""The UCI optical-recognition handwritten digits, 8x8, shipped with ember."""
from __future__ import annotations

import os

import ember
from ember.utils.data import Dataset

__all__ = ["Digits"]

_PATH = os.path.join(os.path.dirname(__file__), "data", "digits.npz")

# Pixel values are integers 0..16; images are scaled to [0, 1] and then standardised
# with the mean and standard deviation of the *training* pixels (computed once, below).
_cache = {}


def _load():
    if "arrays" not in _cache:
        import numpy as np
        with np.load(_PATH) as z:
            images = z["images"].astype(np.float32) / 16.0
            labels = z["labels"].astype(np.int64)
            is_test = z["is_test"].astype(bool)
        _cache["arrays"] = (images, labels, is_test)
    return _cache["arrays"]


class Digits(Dataset):
    """The 8x8 handwritten digits (1,797 images, 10 classes) with a fixed split.

    ``Digits(train=True)`` holds 1,437 images, ``Digits(train=False)`` the other 360
    (36 per class, a stratified split drawn once with NumPy seed 0 and stored in the
    data file, so it never changes).

    ``data`` is a float32 tensor ``(N, 1, 8, 8)``: pixels scaled to ``[0, 1]`` (raw
    values are 0..16) and, with ``normalize=True`` (default), standardised by the
    training set's pixel mean and std (``Digits.MEAN``, ``Digits.STD``). ``targets`` is an
    int64 tensor ``(N,)``. ``transform`` / ``target_transform`` apply per sample.

    Data: E. Alpaydin and C. Kaynak (1998), Optical Recognition of Handwritten Digits,
    UCI Machine Learning Repository, https://doi.org/10.24432/C50P49, CC BY 4.0.
    """

    classes = [str(i) for i in range(10)]
    MEAN = 0.30585  # mean of the training pixels after scaling to [0, 1]
    STD = 0.37660   # their standard deviation

    def __init__(self, train=True, normalize=True, transform=None, target_transform=None):
        import numpy as np
        images, labels, is_test = _load()
        sel = ~is_test if train else is_test
        x = images[sel][:, None, :, :]
        if normalize:
            x = (x - self.MEAN) / self.STD
        self.train = train
        self.data = ember.from_numpy(np.ascontiguousarray(x, dtype=np.float32))
        self.targets = ember.from_numpy(np.ascontiguousarray(labels[sel]))
        self.transform = transform
        self.target_transform = target_transform

    def __len__(self):
        return self.data.shape[0]

    def __getitem__(self, index):
        x, y = self.data[index], self.targets[index]
        if self.transform is not None:
            x = self.transform(x)
        if self.target_transform is not None:
            y = self.target_transform(y)
        return x, y

    @property
    def tensors(self):
        """``(data, targets)``: convenient for ``TensorDataset(*Digits().tensors)``."""
        return self.data, self.targets

    def __repr__(self):
        split = "train" if self.train else "test"
        return f"Dataset Digits\n    Number of datapoints: {len(self)}\n    Split: {split}"
