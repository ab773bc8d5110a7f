"""utils.data names against torch.utils.data: the public names, random_split with
fractions, ChainDataset, StackDataset, WeightedRandomSampler statistics, default_convert,
DistributedSampler, and worker semantics (worker info, persistent workers, generator)."""
import multiprocessing
import os

import numpy as np
import pytest

import ember
import ember.utils.data as ed

torch = pytest.importorskip("torch")
import torch.utils.data as td  # noqa: E402

# the DataPipes family (torchdata's, deprecated in torch) is not carried over
DATAPIPES = {"DFIterDataPipe", "DataChunk", "IterDataPipe", "MapDataPipe", "datapipes",
             "argument_validation", "functional_datapipe", "graph", "graph_settings",
             "guaranteed_datapipes_determinism", "non_deterministic", "runtime_validation",
             "runtime_validation_disabled"}


def test_every_everyday_name_of_torch_utils_data():
    torch_names = {n for n in dir(td) if not n.startswith("_")}
    missing = sorted(torch_names - DATAPIPES - set(dir(ed)))
    assert missing == []
    assert set(ed.__all__) <= set(dir(ed))
    from ember.utils.data.distributed import DistributedSampler
    assert DistributedSampler is ed.DistributedSampler


@pytest.mark.parametrize("n,fracs", [(10, [0.3, 0.7]), (11, [0.5, 0.25, 0.25]),
                                     (7, [0.1, 0.1, 0.8]), (100, [1 / 3] * 3)])
def test_random_split_fractions_like_torch(n, fracs):
    e = ed.random_split(range(n), fracs, generator=ember.Generator().manual_seed(1))
    t = td.random_split(range(n), fracs, generator=torch.Generator().manual_seed(1))
    assert [len(s) for s in e] == [len(s) for s in t]
    got = sorted(i for s in e for i in s)
    assert got == list(range(n))
    again = ed.random_split(range(n), fracs, generator=ember.Generator().manual_seed(1))
    assert [list(s) for s in again] == [list(s) for s in e]


def test_random_split_errors_like_torch():
    for lib in (ed, td):
        with pytest.raises(ValueError):
            lib.random_split(range(10), [3, 3])
        with pytest.raises(ValueError):
            lib.random_split(range(10), [1.5, -0.5])


class Count(ed.IterableDataset):
    def __init__(self, lo, hi):
        self.lo, self.hi = lo, hi

    def __iter__(self):
        return iter(range(self.lo, self.hi))

    def __len__(self):
        return self.hi - self.lo


class TCount(td.IterableDataset):
    def __init__(self, lo, hi):
        self.lo, self.hi = lo, hi

    def __iter__(self):
        return iter(range(self.lo, self.hi))

    def __len__(self):
        return self.hi - self.lo


def test_chain_dataset_like_torch():
    e = ed.ChainDataset([Count(0, 3), Count(10, 12)])
    t = td.ChainDataset([TCount(0, 3), TCount(10, 12)])
    assert list(e) == list(t) == [0, 1, 2, 10, 11]
    assert len(e) == len(t) == 5
    assert list(Count(0, 2) + Count(5, 6)) == [0, 1, 5]
    assert isinstance(Count(0, 2) + Count(5, 6), ed.ChainDataset)
    with pytest.raises(AssertionError):
        list(ed.ChainDataset([Count(0, 2), ed.TensorDataset(ember.ones(2))]))
    batches = list(ed.DataLoader(e, batch_size=2))
    assert [b.tolist() for b in batches] == [[0, 1], [2, 10], [11]]


def test_stack_dataset_like_torch():
    a, b = list(range(4)), [str(i) for i in range(4)]
    e, t = ed.StackDataset(a, b), td.StackDataset(a, b)
    assert len(e) == len(t) == 4
    assert [e[i] for i in range(4)] == [t[i] for i in range(4)]
    e, t = ed.StackDataset(x=a, y=b), td.StackDataset(x=a, y=b)
    assert e[2] == t[2] == {"x": 2, "y": "2"}
    for lib in (ed, td):
        with pytest.raises(ValueError):
            lib.StackDataset(a, b[:3])
        with pytest.raises(ValueError):
            lib.StackDataset(a, y=b)
    batch = next(iter(ed.DataLoader(ed.StackDataset(x=ember.arange(4), y=a), batch_size=4)))
    assert batch["x"].tolist() == [0, 1, 2, 3] and batch["y"].tolist() == a


def test_weighted_random_sampler_statistics():
    w = [0.1, 0.0, 0.6, 0.3]
    g = ember.Generator().manual_seed(0)
    draws = list(ed.WeightedRandomSampler(w, 20000, generator=g))
    counts = np.bincount(draws, minlength=4) / 20000
    assert counts[1] == 0
    np.testing.assert_allclose(counts, w, atol=0.015)
    no_rep = list(ed.WeightedRandomSampler([1, 5, 1, 1, 5], 5, replacement=False))
    assert sorted(no_rep) == [0, 1, 2, 3, 4]
    assert len(ed.WeightedRandomSampler(w, 7)) == len(td.WeightedRandomSampler(w, 7)) == 7
    for lib in (ed, td):
        with pytest.raises(ValueError):
            lib.WeightedRandomSampler(w, 0)
        with pytest.raises(ValueError):
            lib.WeightedRandomSampler(w, 3, replacement=1)


def test_default_convert_like_torch():
    sample = {"a": np.arange(3, dtype=np.float32), "b": [np.int64(4), (np.ones((2, 2)),)],
              "c": "text", "d": 1.5}
    e, t = ed.default_convert(sample), td.default_convert(sample)
    assert isinstance(e["a"], ember.Tensor) and isinstance(t["a"], torch.Tensor)
    assert str(e["a"].dtype).split(".")[1] == str(t["a"].dtype).split(".")[1]
    np.testing.assert_array_equal(e["a"].numpy(), t["a"].numpy())
    assert type(e["b"][1]) is type(t["b"][1]) is list  # a plain tuple becomes a list
    assert e["b"][0].item() == t["b"][0].item() == 4
    np.testing.assert_array_equal(e["b"][1][0].numpy(), t["b"][1][0].numpy())
    assert e["c"] == t["c"] and e["d"] == t["d"]
    import collections
    point = collections.namedtuple("point", "x y")
    e = ed.default_convert(point(np.ones(2), 3))
    assert type(e) is point and isinstance(e.x, ember.Tensor) and e.y == 3
    dl = ed.DataLoader([np.arange(2), np.arange(2) + 5], batch_size=None)
    assert [x.tolist() for x in dl] == [[0, 1], [5, 6]]


def test_samplers_semantics_like_torch():
    idx = [3, 7, 9, 11]
    got = list(ed.SubsetRandomSampler(idx, generator=ember.Generator().manual_seed(3)))
    assert sorted(got) == idx and len(ed.SubsetRandomSampler(idx)) == 4
    for n, bs, drop in [(10, 3, False), (10, 3, True), (9, 3, True), (2, 5, False)]:
        e = ed.BatchSampler(ed.SequentialSampler(range(n)), bs, drop)
        t = td.BatchSampler(td.SequentialSampler(range(n)), bs, drop)
        assert list(e) == list(t) and len(e) == len(t)
    r = list(ed.RandomSampler(range(5), replacement=True, num_samples=50))
    assert len(r) == 50 and set(r) <= set(range(5))
    sub = ed.Subset(ed.ConcatDataset([range(3), range(10, 14)]), [6, 0, 3])
    assert [sub[i] for i in range(3)] == [13, 0, 10]
    assert ed.ConcatDataset([range(3), range(10, 14)])[-1] == 13


@pytest.mark.parametrize("n,replicas,drop_last", [(10, 3, False), (10, 3, True),
                                                  (12, 4, False), (2, 5, False),
                                                  (7, 2, True)])
def test_distributed_sampler_like_torch(n, replicas, drop_last):
    ds = list(range(n))
    shards = []
    for rank in range(replicas):
        e = ed.DistributedSampler(ds, replicas, rank, shuffle=False, drop_last=drop_last)
        t = td.DistributedSampler(ds, replicas, rank, shuffle=False, drop_last=drop_last)
        assert list(e) == list(t) and len(e) == len(t)
        es = ed.DistributedSampler(ds, replicas, rank, seed=5, drop_last=drop_last)
        ts = td.DistributedSampler(ds, replicas, rank, seed=5, drop_last=drop_last)
        first = list(es)
        assert len(first) == len(list(ts)) == len(es)
        assert list(es) == first  # same epoch, same order
        shards.append(first)
    flat = [i for s in shards for i in s]
    if drop_last:
        assert len(set(flat)) == len(flat)  # no index twice
    else:
        assert set(flat) == set(ds)  # every index, padded by wrap-around
    es = ed.DistributedSampler(list(range(50)), 2, 0, seed=5)
    e0 = list(es)
    es.set_epoch(1)
    assert list(es) != e0 and sorted(es) != []


def test_distributed_sampler_errors():
    for lib in (ed, td):
        with pytest.raises(ValueError, match="Invalid rank"):
            lib.DistributedSampler(range(4), num_replicas=2, rank=2)
    with pytest.raises(RuntimeError, match="distributed"):
        ed.DistributedSampler(range(4))


class PidDataset(ed.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        info = ed.get_worker_info()
        assert isinstance(info, ed.WorkerInfo)
        return ember.tensor([os.getpid(), info.id, info.num_workers, info.seed % 100003,
                             int(info.dataset is self)])


def rows(dl):
    return np.concatenate([b.numpy() for b in dl])


def test_worker_info_and_persistent_workers_reuse_processes():
    dl = ed.DataLoader(PidDataset(), batch_size=2, num_workers=2, persistent_workers=True,
                       prefetch_factor=3)
    r1, r2 = rows(dl), rows(dl)
    pids = set(r1[:, 0].tolist())
    assert len(pids) == 2 and os.getpid() not in pids
    assert set(r2[:, 0].tolist()) == pids  # the same processes served epoch 2
    assert set(r1[:, 1].tolist()) == {0, 1} and set(r1[:, 2].tolist()) == {2}
    assert r1[:, 4].tolist() == [1] * 8  # info.dataset is the worker's copy of the dataset
    # non-persistent: fresh processes each epoch
    dl2 = ed.DataLoader(PidDataset(), batch_size=2, num_workers=2)
    assert set(rows(dl2)[:, 0].tolist()).isdisjoint(set(rows(dl2)[:, 0].tolist()))
    del dl, dl2
    assert ed.get_worker_info() is None


def test_generator_seeds_workers_and_worker_init_fn():
    def seeds(seed):
        g = ember.Generator().manual_seed(seed)
        r = rows(ed.DataLoader(PidDataset(), batch_size=2, num_workers=2, generator=g))
        return {int(a): int(b) for a, b in zip(r[:, 1], r[:, 3])}

    assert seeds(7) == seeds(7)
    assert seeds(7) != seeds(8)
    q = multiprocessing.get_context("fork").Queue()
    dl = ed.DataLoader(PidDataset(), batch_size=4, num_workers=2,
                       worker_init_fn=lambda wid: q.put((wid, ed.get_worker_info().id)),
                       multiprocessing_context="fork")
    rows(dl)
    assert sorted([q.get(timeout=10), q.get(timeout=10)]) == [(0, 0), (1, 1)]


def test_pin_memory_gives_the_same_batches():
    ds = ed.TensorDataset(ember.arange(10.0))
    a = [b[0].tolist() for b in ed.DataLoader(ds, batch_size=4, pin_memory=True)]
    b = [b[0].tolist() for b in ed.DataLoader(ds, batch_size=4)]
    assert a == b == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    with pytest.raises(ValueError, match="prefetch_factor"):
        ed.DataLoader(ds, prefetch_factor=2)
