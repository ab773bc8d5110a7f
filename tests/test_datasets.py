"""ember.datasets: the packaged Digits and MNIST from IDX files."""
import gzip
import os
import struct

import numpy as np
import pytest

import ember
from ember.datasets import MNIST, Digits, read_idx
from ember.utils.data import DataLoader


def test_digits_split_shapes_and_normalisation():
    tr, te = Digits(train=True), Digits(train=False)
    assert len(tr) == 1437 and len(te) == 360 and len(tr) + len(te) == 1797
    assert tuple(tr.data.shape) == (1437, 1, 8, 8) and tr.data.dtype == ember.float32
    assert tuple(te.targets.shape) == (360,) and te.targets.dtype == ember.int64
    assert np.bincount(te.targets.numpy()).tolist() == [36] * 10
    assert set(np.unique(tr.targets.numpy()).tolist()) == set(range(10))
    x = tr.data.numpy()
    assert abs(x.mean()) < 1e-3 and abs(x.std() - 1) < 1e-3  # standardised on train
    raw = Digits(train=True, normalize=False).data.numpy()
    assert raw.min() == 0.0 and raw.max() == 1.0
    np.testing.assert_allclose((raw - Digits.MEAN) / Digits.STD, x, rtol=1e-5, atol=1e-5)
    img, label = te[0]
    assert tuple(img.shape) == (1, 8, 8) and label.dtype == ember.int64
    # the split is fixed: two constructions agree exactly
    np.testing.assert_array_equal(Digits(train=False).data.numpy(), te.data.numpy())


def test_digits_matches_the_source_csv():
    src = "/work/shared/data/digits.csv.gz"
    if not os.path.exists(src):
        pytest.skip("source CSV not available")
    a = np.loadtxt(gzip.open(src), delimiter=",")
    raw = np.concatenate([Digits(train=True, normalize=False).data.numpy(),
                          Digits(train=False, normalize=False).data.numpy()]).reshape(-1, 64)
    assert sorted(map(tuple, (raw * 16).round().astype(int).tolist())) == \
        sorted(map(tuple, a[:, :64].astype(int).tolist()))


def test_digits_transforms_and_loader():
    ds = Digits(train=False, transform=lambda x: x * 0, target_transform=lambda y: y + 1)
    x, y = ds[5]
    assert float(x.abs().sum().item()) == 0 and 1 <= int(y.item()) <= 10
    xb, yb = next(iter(DataLoader(Digits(train=False), batch_size=16)))
    assert tuple(xb.shape) == (16, 1, 8, 8) and tuple(yb.shape) == (16,)


def _write_idx(path, arr, gz=False):
    codes = {np.uint8: 0x08, np.int32: 0x0C, np.float32: 0x0D}
    header = struct.pack(">BBBB", 0, 0, codes[arr.dtype.type], arr.ndim)
    header += b"".join(struct.pack(">I", s) for s in arr.shape)
    data = header + arr.astype(arr.dtype.newbyteorder(">")).tobytes()
    opener = gzip.open if gz else open
    with opener(path, "wb") as f:
        f.write(data)


@pytest.mark.parametrize("layout", ["flat", "raw_gz"])
def test_mnist_reads_idx_files(tmp_path, layout):
    rng = np.random.default_rng(0)
    d = tmp_path if layout == "flat" else tmp_path / "MNIST" / "raw"
    d.mkdir(parents=True, exist_ok=True)
    gz = layout == "raw_gz"
    sfx = ".gz" if gz else ""
    sets = {}
    for prefix, n in (("train", 5), ("t10k", 3)):
        imgs = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
        labels = rng.integers(0, 10, size=n, dtype=np.uint8)
        _write_idx(d / f"{prefix}-images-idx3-ubyte{sfx}", imgs, gz)
        _write_idx(d / f"{prefix}-labels-idx1-ubyte{sfx}", labels, gz)
        sets[prefix] = (imgs, labels)
    tr = MNIST(tmp_path, train=True)
    te = MNIST(str(tmp_path), train=False)
    assert len(tr) == 5 and len(te) == 3
    assert tr.data.dtype == ember.uint8 and tuple(tr.data.shape) == (5, 28, 28)
    np.testing.assert_array_equal(tr.data.numpy(), sets["train"][0])
    np.testing.assert_array_equal(te.targets.numpy(), sets["t10k"][1])
    assert te.targets.dtype == ember.int64
    img, label = tr[2]
    assert tuple(img.shape) == (1, 28, 28) and img.dtype == ember.float32
    np.testing.assert_allclose(img.numpy()[0], sets["train"][0][2] / 255.0, rtol=1e-6)
    assert int(label.item()) == int(sets["train"][1][2])
    img_n, _ = MNIST(tmp_path, normalize=True)[2]
    np.testing.assert_allclose(img_n.numpy()[0], (sets["train"][0][2] / 255.0 - 0.1307) / 0.3081,
                               rtol=1e-5, atol=1e-5)
    xb, yb = next(iter(DataLoader(tr, batch_size=4)))
    assert tuple(xb.shape) == (4, 1, 28, 28) and tuple(yb.shape) == (4,)


def test_mnist_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not download"):
        MNIST(tmp_path)
    with pytest.raises(RuntimeError):
        MNIST(tmp_path, download=True)
    bad = tmp_path / "bad"
    bad.write_bytes(b"\x01\x02\x03\x04")
    with pytest.raises(ValueError, match="magic"):
        read_idx(bad)
    trunc = tmp_path / "trunc"
    _write_idx(trunc, np.zeros((2, 3), np.uint8))
    trunc.write_bytes(trunc.read_bytes()[:-1])
    with pytest.raises(ValueError, match="data bytes"):
        read_idx(trunc)
    f32 = tmp_path / "f32"
    _write_idx(f32, np.arange(6, dtype=np.float32).reshape(2, 3))
    np.testing.assert_array_equal(read_idx(f32), np.arange(6, dtype=np.float32).reshape(2, 3))
