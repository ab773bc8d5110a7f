"""ember.utils.data in the main process: datasets, samplers, collation, DataLoader."""
import collections

import numpy as np
import pytest

import ember
from ember.utils.data import (
    BatchSampler,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    default_collate,
    default_convert,
    random_split,
)


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return {"x": np.full((2,), i, dtype=np.float32), "y": i * i, "name": f"s{i}"}


class Count(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


def test_tensor_dataset_and_loader_order():
    x = ember.arange(20).reshape(10, 2).float()
    y = ember.tensor(np.arange(10))
    ds = TensorDataset(x, y)
    assert len(ds) == 10
    xi, yi = ds[3]
    assert xi.numpy().tolist() == [6, 7] and int(yi.item()) == 3
    batches = list(DataLoader(ds, batch_size=4))
    assert [tuple(b[0].shape) for b in batches] == [(4, 2), (4, 2), (2, 2)]
    assert isinstance(batches[0], list)  # default_collate turns tuples into lists
    assert np.concatenate([b[1].numpy() for b in batches]).tolist() == list(range(10))
    assert len(DataLoader(ds, batch_size=4)) == 3
    assert len(DataLoader(ds, batch_size=4, drop_last=True)) == 2
    assert len(list(DataLoader(ds, batch_size=4, drop_last=True))) == 2
    with pytest.raises(AssertionError):
        TensorDataset(x, ember.zeros(3))


def test_shuffle_covers_everything_and_generator_reproduces():
    ds = TensorDataset(ember.tensor(np.arange(50)))
    ember.manual_seed(0)
    seen = np.concatenate([b[0].numpy() for b in DataLoader(ds, batch_size=7, shuffle=True)])
    assert sorted(seen.tolist()) == list(range(50))
    assert seen.tolist() != list(range(50))
    runs = []
    for _ in range(2):
        g = ember.Generator().manual_seed(123)
        runs.append(list(RandomSampler(range(30), generator=g)))
    assert runs[0] == runs[1] and sorted(runs[0]) == list(range(30))
    g = ember.Generator().manual_seed(1)
    r = list(RandomSampler(range(5), replacement=True, num_samples=40, generator=g))
    assert len(r) == 40 and set(r) <= set(range(5))


def test_default_collate_rules():
    b = default_collate([(1, 2.5, np.ones(2, dtype=np.float32)), (3, 4.5, np.zeros(2,
                                                                              dtype=np.float32))])
    assert isinstance(b, list) and len(b) == 3
    assert b[0].dtype == ember.int64 and b[0].numpy().tolist() == [1, 3]
    assert b[1].dtype == ember.float64
    assert b[2].dtype == ember.float32 and tuple(b[2].shape) == (2, 2)
    d = default_collate([{"a": ember.ones(3), "s": "x"}, {"a": ember.zeros(3), "s": "y"}])
    assert tuple(d["a"].shape) == (2, 3) and d["s"] == ["x", "y"]
    P = collections.namedtuple("P", "u v")
    n = default_collate([P(1, ember.ones(1)), P(2, ember.ones(1))])
    assert isinstance(n, P) and n.u.numpy().tolist() == [1, 2]
    lst = default_collate([[1, 2], [3, 4]])
    assert isinstance(lst, list) and lst[0].numpy().tolist() == [1, 3]
    assert default_collate([np.float64(1.5), np.float64(2)]).dtype == ember.float64
    assert default_collate([True, False]).dtype == ember.bool
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError):
        default_collate([object(), object()])
    c = default_convert({"a": np.ones(2), "b": (np.zeros(1), 3)})
    assert isinstance(c["a"], ember.Tensor) and isinstance(c["b"][0], ember.Tensor)
    assert c["b"][1] == 3


def test_dict_dataset_loader_and_custom_collate():
    dl = DataLoader(Squares(5), batch_size=2)
    b = next(iter(dl))
    assert tuple(b["x"].shape) == (2, 2) and b["y"].numpy().tolist() == [0, 1]
    assert b["name"] == ["s0", "s1"]
    dl = DataLoader(Squares(5), batch_size=3, collate_fn=lambda batch: len(batch))
    assert list(dl) == [3, 2]
    dl = DataLoader(Squares(3), batch_size=None)
    first = next(iter(dl))
    assert isinstance(first["x"], ember.Tensor) and first["y"] == 0


def test_iterable_dataset_loader():
    assert [b.numpy().tolist() for b in DataLoader(Count(7), batch_size=3)] == \
        [[0, 1, 2], [3, 4, 5], [6]]
    assert len(list(DataLoader(Count(7), batch_size=3, drop_last=True))) == 2
    assert len(DataLoader(Count(7), batch_size=3)) == 3
    with pytest.raises(ValueError):
        DataLoader(Count(3), shuffle=True)


def test_concat_subset_random_split():
    a, b = Squares(3), Squares(4)
    c = a + b
    assert isinstance(c, ConcatDataset) and len(c) == 7
    assert c[3]["y"] == 0 and c[-1]["y"] == 9
    s = Subset(b, [3, 1])
    assert len(s) == 2 and s[0]["y"] == 9
    g = ember.Generator().manual_seed(42)
    parts = random_split(range(10), [3, 7], generator=g)
    assert [len(p) for p in parts] == [3, 7]
    assert sorted(list(parts[0]) + list(parts[1])) == list(range(10))
    g2 = ember.Generator().manual_seed(42)
    again = random_split(range(10), [3, 7], generator=g2)
    assert list(again[0]) == list(parts[0])
    fr = random_split(range(10), [0.5, 0.3, 0.2], generator=g)
    assert [len(p) for p in fr] == [5, 3, 2]
    with pytest.raises(ValueError):
        random_split(range(10), [3, 3])


def test_samplers():
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3]
    assert list(BatchSampler(SequentialSampler(range(7)), 3, False)) == [[0, 1, 2], [3, 4, 5],
                                                                         [6]]
    assert list(BatchSampler(range(7), 3, True)) == [[0, 1, 2], [3, 4, 5]]
    assert len(BatchSampler(range(7), 3, False)) == 3
    g = ember.Generator().manual_seed(0)
    assert sorted(SubsetRandomSampler([5, 6, 7], generator=g)) == [5, 6, 7]
    g = ember.Generator().manual_seed(0)
    w = WeightedRandomSampler([0.0, 0.0, 1.0, 3.0], 400, generator=g)
    draws = np.array(list(w))
    assert set(draws.tolist()) <= {2, 3}
    assert 0.65 < (draws == 3).mean() < 0.85
    nr = list(WeightedRandomSampler([1, 1, 1, 1], 4, replacement=False, generator=g))
    assert sorted(nr) == [0, 1, 2, 3]
    with pytest.raises(ValueError):
        BatchSampler(range(3), 0, False)
    dl = DataLoader(Squares(6), batch_sampler=[[0, 5], [1]])
    assert [b["y"].numpy().tolist() for b in dl] == [[0, 25], [1]]


def test_loader_argument_errors():
    with pytest.raises(ValueError):
        DataLoader(Squares(3), sampler=SequentialSampler(range(3)), shuffle=True)
    with pytest.raises(ValueError):
        DataLoader(Squares(3), batch_sampler=[[0]], batch_size=2)
    with pytest.raises(ValueError):
        DataLoader(Squares(3), num_workers=-1)
    with pytest.raises(ValueError):
        DataLoader(Squares(3), persistent_workers=True)
    DataLoader(Squares(3), pin_memory=True)  # accepted


def test_loader_main_process_exception_propagates():
    with pytest.raises(IndexError):
        list(DataLoader(Squares(3), sampler=[0, 5]))
