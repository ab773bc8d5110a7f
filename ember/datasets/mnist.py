"""MNIST from the standard IDX files in a folder the user provides (no download)."""
from __future__ import annotations

import gzip
import os

import ember
from ember.utils.data import Dataset

__all__ = ["MNIST", "read_idx"]

_IDX_DTYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_idx(path):
    """Read an IDX file (optionally ``.gz``) into a NumPy array."""
    import numpy as np
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0:
        raise ValueError(f"{path}: not an IDX file (bad magic number)")
    code, ndim = raw[2], raw[3]
    if code not in _IDX_DTYPES:
        raise ValueError(f"{path}: unknown IDX data type 0x{code:02x}")
    shape = tuple(int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim))
    offset = 4 + 4 * ndim
    dt = np.dtype(_IDX_DTYPES[code])
    count = 1
    for s in shape:
        count *= s
    if len(raw) - offset != count * dt.itemsize:
        raise ValueError(f"{path}: expected {count * dt.itemsize} data bytes for shape {shape}, "
                         f"found {len(raw) - offset}")
    arr = np.frombuffer(raw, dtype=dt, count=count, offset=offset).reshape(shape)
    return arr.astype(dt.newbyteorder("="))


class MNIST(Dataset):
    """MNIST read from ``root``: ``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte``,
    ``t10k-images-idx3-ubyte``, ``t10k-labels-idx1-ubyte`` (each optionally ``.gz``),
    directly in ``root``, in ``root/MNIST/raw`` or in ``root/raw``.

    ``data`` is a uint8 tensor ``(N, 28, 28)`` and ``targets`` int64 ``(N,)``, as in
    torchvision. Samples are ``(image, label)``: the image as a float32 ``(1, H, W)`` tensor
    scaled to ``[0, 1]`` (and standardised with ``(x - 0.1307) / 0.3081`` when
    ``normalize=True``) unless a ``transform`` is given, which then receives the uint8
    ``(H, W)`` tensor. Nothing is downloaded: ``download=True`` raises."""

    classes = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five",
               "6 - six", "7 - seven", "8 - eight", "9 - nine"]
    MEAN, STD = 0.1307, 0.3081

    def __init__(self, root, train=True, transform=None, target_transform=None,
                 download=False, normalize=False):
        if download:
            raise RuntimeError("ember.datasets.MNIST does not download; put the IDX files in "
                               f"{root!r}")
        self.root = os.fspath(root)
        self.train = train
        self.transform = transform
        self.target_transform = target_transform
        self.normalize = normalize
        prefix = "train" if train else "t10k"
        images = read_idx(self._find(f"{prefix}-images-idx3-ubyte"))
        labels = read_idx(self._find(f"{prefix}-labels-idx1-ubyte"))
        if images.ndim != 3 or labels.ndim != 1 or images.shape[0] != labels.shape[0]:
            raise ValueError(f"MNIST: images {images.shape} and labels {labels.shape} do not "
                             f"match")
        self.data = ember.from_numpy(images.copy())
        self.targets = ember.from_numpy(labels.astype("int64"))

    def _find(self, name):
        for d in (self.root, os.path.join(self.root, "MNIST", "raw"),
                  os.path.join(self.root, "raw")):
            for n in (name, name + ".gz", name.replace("-idx", ".idx")):
                p = os.path.join(d, n)
                if os.path.isfile(p):
                    return p
        raise FileNotFoundError(f"MNIST: {name} not found in {self.root!r} (nor in MNIST/raw "
                                f"or raw below it); ember does not download datasets")

    def __len__(self):
        return self.data.shape[0]

    def __getitem__(self, index):
        img, target = self.data[index], self.targets[index]
        if self.transform is not None:
            img = self.transform(img)
        else:
            img = img.to(ember.float32).unsqueeze(0) / 255.0
            if self.normalize:
                img = (img - self.MEAN) / self.STD
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def __repr__(self):
        split = "Train" if self.train else "Test"
        return (f"Dataset MNIST\n    Number of datapoints: {len(self)}\n    Root location: "
                f"{self.root}\n    Split: {split}")
