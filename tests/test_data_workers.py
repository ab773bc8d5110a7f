"""DataLoader with worker processes: results, ordering, seeding, worker_init_fn,
persistent workers, exceptions with tracebacks, and no zombie processes."""
import multiprocessing
import os

import numpy as np
import pytest

import ember
from ember.utils.data import DataLoader, Dataset, IterableDataset, TensorDataset, get_worker_info


class Squares(Dataset):
    def __len__(self):
        return 23

    def __getitem__(self, i):
        return ember.tensor([float(i)]), i * i, np.full((2, 2), i, dtype=np.int32)


class Failing(Dataset):
    def __len__(self):
        return 10

    def __getitem__(self, i):
        if i == 6:
            raise ValueError(f"bad sample {i}")
        return i


class WorkerId(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        info = get_worker_info()
        return ember.tensor([info.id, info.num_workers, info.seed % 1000, i])


class Sharded(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        wid, nw = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(wid, self.n, nw))


def _child_pids():
    me = os.getpid()
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                parts = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(parts[1]) == me:
            out.append((int(d), parts[0]))
    return out


def _assert_no_children():
    assert multiprocessing.active_children() == []
    kids = _child_pids()
    assert not kids, f"left-over child processes (pid, state): {kids}"


@pytest.fixture(autouse=True)
def no_leftovers():
    yield
    import gc
    gc.collect()
    _assert_no_children()


def test_workers_give_the_same_batches_in_order():
    single = list(DataLoader(Squares(), batch_size=4))
    multi = list(DataLoader(Squares(), batch_size=4, num_workers=2))
    assert len(single) == len(multi) == 6
    for a, b in zip(single, multi):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x.numpy(), y.numpy())
            assert x.dtype == y.dtype
    assert isinstance(multi[0][0], ember.Tensor)


def test_tensor_dataset_workers_and_prefetch():
    x = ember.tensor(np.arange(100, dtype=np.float32).reshape(50, 2))
    dl = DataLoader(TensorDataset(x), batch_size=8, num_workers=2, prefetch_factor=3)
    got = np.concatenate([b[0].numpy() for b in dl])
    np.testing.assert_array_equal(got, x.numpy())


def test_worker_info_seed_and_init_fn():
    calls = multiprocessing.get_context("fork").Queue()

    def init(wid):
        calls.put(wid)

    batches = list(DataLoader(WorkerId(), batch_size=2, num_workers=2, worker_init_fn=init))
    rows = np.concatenate([b.numpy() for b in batches])
    assert sorted(set(rows[:, 0].tolist())) == [0, 1]
    assert set(rows[:, 1].tolist()) == {2}
    assert rows[:, 3].tolist() == list(range(8))
    seeds = {int(r[0]): int(r[2]) for r in rows}
    assert seeds[0] != seeds[1]
    assert sorted([calls.get(timeout=5), calls.get(timeout=5)]) == [0, 1]
    assert get_worker_info() is None


def test_iterable_dataset_sharded_over_workers():
    dl = DataLoader(Sharded(10), batch_size=2, num_workers=2)
    got = sorted(np.concatenate([b.numpy() for b in dl]).tolist())
    assert got == list(range(10))


def test_worker_exception_surfaces_with_traceback():
    dl = DataLoader(Failing(), batch_size=2, num_workers=2)
    with pytest.raises(ValueError) as ei:
        list(dl)
    msg = str(ei.value)
    assert "Caught ValueError in DataLoader worker process" in msg
    assert "bad sample 6" in msg
    assert "Traceback (most recent call last)" in msg
    assert "__getitem__" in msg


def test_persistent_workers_reused_across_epochs():
    dl = DataLoader(Squares(), batch_size=5, num_workers=2, persistent_workers=True)
    e1 = [b[1].numpy().tolist() for b in dl]
    pids = [w.pid for w in dl._iterator._workers]
    e2 = [b[1].numpy().tolist() for b in dl]
    assert e1 == e2
    assert [w.pid for w in dl._iterator._workers] == pids
    assert all(w.is_alive() for w in dl._iterator._workers)
    # leaving an epoch early is fine too
    it = iter(dl)
    next(it)
    e3 = [b[1].numpy().tolist() for b in dl]
    assert e3 == e1
    del it, dl


def test_breaking_out_early_cleans_up():
    dl = DataLoader(Squares(), batch_size=2, num_workers=2)
    it = iter(dl)
    next(it)
    del it


def test_shuffled_workers_cover_dataset():
    ember.manual_seed(0)
    dl = DataLoader(Squares(), batch_size=3, shuffle=True, num_workers=2)
    got = sorted(int(v) for b in dl for v in b[1].numpy())
    assert got == [i * i for i in range(23)]
