"""Storages (UntypedStorage, TypedStorage, the legacy typed classes), shared memory
across processes (share_memory_, DataLoader workers, multiprocessing queues) and
from_file, against torch where it is installed."""
from __future__ import annotations

import multiprocessing as mp
import warnings

import numpy as np
import pytest

import ember
from ember.utils.data import DataLoader, Dataset

_fork = pytest.mark.skipif("fork" not in mp.get_all_start_methods(), reason="needs fork")


def test_untyped_storage_api_matches_torch(torch):
    a = np.arange(6, dtype=np.float32)
    e, t = ember.tensor(a), torch.tensor(a)
    es, ts = e.untyped_storage(), t.untyped_storage()
    assert isinstance(es, ember.UntypedStorage)
    assert es.nbytes() == es.size() == len(es) == ts.nbytes() == 24
    assert es.element_size() == ts.element_size() == 1
    assert str(es.dtype) == "ember.uint8" and es.device == e.device
    assert es.data_ptr() == e.data_ptr() and e[2:].data_ptr() == es.data_ptr() + 8
    assert es.tolist() == ts.tolist() and list(es) == list(ts)
    assert es[7] == ts[7] == 63 and es[-1] == ts[-1]
    es[0] = 1
    ts[0] = 1
    assert e[0].item() == t[0].item()
    with pytest.raises(IndexError):
        es[24]
    u = ember.UntypedStorage(5)
    assert u.nbytes() == 5 and u.fill_(7).tolist() == [7] * 5
    assert ember.UntypedStorage([1, 2, 255]).tolist() == torch.UntypedStorage([1, 2, 255]).tolist()
    c = es.clone()
    c[1] = 200
    assert c.data_ptr() != es.data_ptr() and es[1] != 200
    assert es[4:8].tolist() == ts[4:8].tolist() and es[4:8].data_ptr() == es.data_ptr() + 4


def test_typed_storage_matches_torch(torch):
    a = np.arange(5, dtype=np.float64)
    e, t = ember.tensor(a), torch.tensor(a)
    with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
        ember._storage._warned[0] = False
        es = e.storage()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts = t.storage()
        assert es.size() == len(es) == ts.size() == 5
        assert es.element_size() == ts.element_size() == 8 and es.nbytes() == ts.nbytes()
        assert str(es.dtype) == "ember.float64" and es.data_ptr() == e.data_ptr()
        assert es.tolist() == ts.tolist() and es[-2] == ts[-2] == 3.0
        es[1] = 7.5                       # writes reach the tensor
        assert e[1].item() == 7.5
        assert es[1:3].tolist() == [7.5, 2.0] and es[1:3].data_ptr() == e[1:].data_ptr()
        assert e.storage_type() is ember.DoubleStorage and t.storage_type() is torch.DoubleStorage
        assert ember.tensor([1], dtype=ember.int32).storage_type() is ember.IntStorage
        f, tf = ember.FloatStorage([1, 2, 3]), torch.FloatStorage([1, 2, 3])
        assert f.tolist() == tf.tolist() and f.dtype == ember.float32 and f.size() == 3
        assert ember.LongStorage(4).size() == 4 and ember.LongStorage(4).dtype == ember.int64
        assert es.untyped() is e.untyped_storage()
        assert es.clone().fill_(1).tolist() == [1.0] * 5 and e[0].item() == 0.0


def test_share_memory_moves_the_storage_in_place(torch):
    base = ember.arange(12.0)
    view = base[3:].reshape(3, 3)
    old = base.data_ptr()
    assert not base.is_shared() and not torch.arange(3.0).is_shared()
    assert base.share_memory_() is base
    assert base.is_shared() and view.is_shared() and base.untyped_storage().is_shared()
    assert base.data_ptr() != old and view.data_ptr() == base.data_ptr() + 12
    np.testing.assert_array_equal(base.numpy(), np.arange(12.0))
    view[0, 0] = -1.0                         # views still share the (moved) memory
    assert base[3].item() == -1.0
    p = base.data_ptr()
    base.share_memory_()                      # already shared: nothing moves
    assert base.data_ptr() == p
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert base.storage().is_shared()
    assert ember.ones(0).share_memory_().is_shared()


class _Writes(Dataset):
    def __init__(self, buf):
        self.buf = buf

    def __len__(self):
        return len(self.buf)

    def __getitem__(self, i):
        self.buf[i] = float(i + 1)           # a worker process writes here
        return ember.tensor(float(i))


@_fork
@pytest.mark.parametrize("shared", [True, False])
def test_dataloader_workers_write_shared_memory(shared):
    buf = ember.zeros(8)
    if shared:
        buf.share_memory_()
    loader = DataLoader(_Writes(buf), batch_size=2, num_workers=2,
                        multiprocessing_context="fork")
    got = ember.cat(list(loader))
    np.testing.assert_array_equal(got.numpy(), np.arange(8.0))
    # shared memory: the workers' writes are the parent's; private: copy-on-write pages
    want = np.arange(1.0, 9.0) if shared else np.zeros(8)
    np.testing.assert_array_equal(buf.numpy(), want)


def _child_fill(q_in, q_out):
    t = q_in.get()
    t.mul_(10)                                  # in the parent's memory
    made = ember.arange(4.0).share_memory_()    # shared here, sent back as a descriptor
    q_out.put((t.is_shared(), made, made[1:3]))
    q_in.get()                                  # stay alive until the parent has read


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_shared_tensors_cross_queues_without_copies(method):
    if method not in mp.get_all_start_methods():
        pytest.skip(f"no {method}")
    ctx = mp.get_context(method)
    t = ember.arange(6.0).reshape(2, 3).share_memory_()
    q_in, q_out = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=_child_fill, args=(q_in, q_out))
    p.start()
    try:
        q_in.put(t[1])
        was_shared, made, part = q_out.get(timeout=60)
        assert was_shared and made.is_shared() and part.is_shared()
        np.testing.assert_array_equal(t.numpy(), [[0, 1, 2], [30, 40, 50]])
        np.testing.assert_array_equal(made.numpy(), [0, 1, 2, 3])
        np.testing.assert_array_equal(part.numpy(), [1, 2])
        q_in.put(None)
    finally:
        p.join(60)
    assert p.exitcode == 0
    made[0] = 5.0                               # the child is gone; the memory is not
    assert made.tolist() == [5.0, 1.0, 2.0, 3.0]


def test_from_file_matches_torch(torch, tmp_path):
    path = tmp_path / "data.bin"
    np.arange(10, dtype=np.float32).tofile(path)
    e = ember.from_file(str(path), False, 6, dtype=ember.float32)
    t = torch.from_file(str(path), False, 6, dtype=torch.float32)
    np.testing.assert_array_equal(e.numpy(), t.numpy())
    e[0] = 99.0                                   # private: the file keeps its bytes
    assert np.fromfile(path, np.float32)[0] == 0.0
    s = ember.from_file(str(path), True, 12, dtype=ember.float32)   # grows the file
    s[1] = 42.0
    on_disk = np.fromfile(path, np.float32)
    assert on_disk.size == 12 and on_disk[1] == 42.0
    with pytest.raises(RuntimeError):
        ember.from_file(str(path), False, 100, dtype=ember.float32)
    with pytest.raises(RuntimeError):
        torch.from_file(str(path), False, 100, dtype=torch.float32)


def test_storages_pickle_and_copy_as_bytes():
    import copy
    import pickle

    e = ember.arange(4.0).untyped_storage()
    for fn in (lambda s: pickle.loads(pickle.dumps(s)), copy.deepcopy):
        r = fn(e)
        assert isinstance(r, ember.UntypedStorage) and r.tolist() == e.tolist()
        assert r.data_ptr() != e.data_ptr()
    assert pickle.loads(pickle.dumps(ember.ones(0).untyped_storage())).nbytes() == 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts = ember.arange(3, dtype=ember.int32).storage()
        r = pickle.loads(pickle.dumps(ts))
        assert r.tolist() == [0, 1, 2] and r.dtype == ember.int32
    shared = ember.arange(3.0).share_memory_()     # plain pickle: a copy, not shared
    back = pickle.loads(pickle.dumps(shared))
    assert back.tolist() == [0.0, 1.0, 2.0] and not back.is_shared()


def test_saved_typed_storages_load_in_torch(torch):
    import io

    b = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x = ember.arange(4, dtype=ember.int32)
        ember.save({"s": x.storage(), "x": x}, b)
        b.seek(0)
        d = torch.load(b)
        assert isinstance(d["s"], torch.TypedStorage) and d["s"].dtype == torch.int32
        assert d["s"].tolist() == [0, 1, 2, 3] and d["x"].tolist() == [0, 1, 2, 3]
        # the tensor and the storage it views stay one storage in the file
        assert d["x"].untyped_storage().data_ptr() == d["s"].data_ptr()
        b.seek(0)
        assert ember.load(b)["s"].nbytes() == 16


def _hogwild_step(model):
    with ember.no_grad():
        model.weight.add_(1.0)      # a forked process updates the shared parameters


@_fork
def test_module_share_memory_is_seen_by_forked_processes():
    from ember import nn

    model = nn.Linear(3, 2)
    model.weight.grad = ember.zeros(2, 3)
    assert model.share_memory() is model
    assert all(p.is_shared() for p in model.parameters()) and model.weight.grad.is_shared()
    before = model.weight.detach().clone()
    p = mp.get_context("fork").Process(target=_hogwild_step, args=(model,))
    p.start()
    p.join(60)
    assert p.exitcode == 0
    np.testing.assert_allclose(model.weight.detach().numpy(), before.numpy() + 1.0)
