"""Sorting and selection (sort, argsort, msort, topk, kthvalue, median, mode),
unique, bincount, histc, searchsorted and bucketize against NumPy, and
against PyTorch when it is installed."""
import math

import numpy as np
import pytest

import ember

RNG = np.random.default_rng(99)


def distinct(*shape, dtype=np.float32):
    """Values without ties, so indices are unambiguous."""
    n = int(np.prod(shape))
    return (RNG.permutation(n).reshape(shape) - n / 2).astype(dtype)


def as_np(t):
    return t.numpy()


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.int8])
def test_sort_argsort(dim, descending, dtype):
    a = distinct(4, 5, 6, dtype=np.float64)
    a = (a % 120 - 60).astype(dtype) if dtype == np.int8 else a.astype(dtype)
    t = ember.tensor(a)
    v, i = t.sort(dim, descending)
    ref_i = np.argsort(-a if descending else a, axis=dim, kind="stable")
    assert v.dtype == t.dtype
    np.testing.assert_array_equal(as_np(i), ref_i)
    np.testing.assert_array_equal(as_np(v), np.take_along_axis(a, ref_i, dim))
    np.testing.assert_array_equal(as_np(ember.argsort(t, dim, descending)), ref_i)
    # non-contiguous input
    tp = ember.tensor(np.ascontiguousarray(a.transpose(2, 1, 0))).permute(2, 1, 0)
    np.testing.assert_array_equal(as_np(tp.sort(dim, descending).indices), ref_i)


def test_sort_stable_ties_and_nan():
    a = np.array([3.0, 1.0, np.nan, 1.0, 3.0, -np.inf, np.nan, 2.0], np.float32)
    t = ember.tensor(a)
    v, i = t.sort(stable=True)
    assert i.tolist() == [5, 1, 3, 7, 0, 4, 2, 6]
    assert math.isnan(v[-1].item()) and math.isnan(v[-2].item())
    v, i = t.sort(descending=True, stable=True)
    assert i.tolist() == [2, 6, 0, 4, 7, 1, 3, 5]
    assert ember.tensor([2, 2, 1, 2]).argsort(stable=True).tolist() == [2, 0, 1, 3]


def test_sort_edge_shapes():
    z = ember.zeros(3, 0)
    v, i = z.sort(1)
    assert v.shape == (3, 0) and i.dtype == ember.int64
    s = ember.tensor(4.0)
    assert s.sort().values.item() == 4.0 and s.sort().indices.item() == 0
    assert ember.msort(ember.tensor([[3, 1], [1, 2]])).tolist() == [[1, 1], [3, 2]]
    assert ember.tensor([True, False, True]).sort().values.tolist() == [False, True, True]
    h = ember.tensor([3.0, 1.0, 2.0]).half().sort()
    assert h.values.dtype == ember.float16 and h.indices.tolist() == [1, 2, 0]


def test_sort_large_row_matches_numpy():
    a = RNG.standard_normal(100_003).astype(np.float32)
    v, i = ember.tensor(a).sort()
    np.testing.assert_array_equal(as_np(v), np.sort(a))
    np.testing.assert_array_equal(as_np(i), np.argsort(a, kind="stable"))


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("largest", [True, False])
def test_topk(dim, largest):
    a = distinct(5, 7)
    t = ember.tensor(a)
    k = 3
    v, i = t.topk(k, dim, largest)
    order = np.argsort(-a if largest else a, axis=dim, kind="stable")
    idx = np.take(order, range(k), axis=dim)
    np.testing.assert_array_equal(as_np(i), idx)
    np.testing.assert_array_equal(as_np(v), np.take_along_axis(a, idx, dim))
    with pytest.raises(RuntimeError, match="out of range"):
        t.topk(8, 1)
    assert t.topk(0, 1).values.shape == (5, 0)


@pytest.mark.parametrize("keepdim", [False, True])
def test_kthvalue(keepdim):
    a = distinct(4, 6)
    t = ember.tensor(a)
    for k in (1, 3, 6):
        v, i = t.kthvalue(k, 1, keepdim)
        ref_i = np.argsort(a, 1)[:, k - 1]
        if keepdim:
            ref_i = ref_i[:, None]
        np.testing.assert_array_equal(as_np(i), ref_i)
        np.testing.assert_array_equal(as_np(v), np.take_along_axis(a, ref_i.reshape(4, -1), 1)
                                      .reshape(ref_i.shape))
    with pytest.raises(RuntimeError):
        t.kthvalue(7, 1)
    with pytest.raises(RuntimeError):
        t.kthvalue(0)


def test_median_and_nanmedian(torch):
    a = distinct(5, 6)
    t, tt = ember.tensor(a), torch.tensor(a)
    assert t.median().item() == tt.median().item()
    for d in (0, 1):
        v, i = t.median(d)
        rv, ri = tt.median(d)
        np.testing.assert_array_equal(as_np(v), rv.numpy())
        assert i.tolist() == ri.tolist()
    assert t.median(1, keepdim=True).values.shape == (5, 1)
    n = np.array([[1.0, np.nan, 2.0, np.nan], [4.0, 3.0, 2.0, 1.0]], np.float32)
    tn, ttn = ember.tensor(n), torch.tensor(n)
    v, i = tn.median(1)
    rv, ri = ttn.median(1)
    assert math.isnan(v[0].item()) and v[1].item() == rv[1].item()
    assert i.tolist() == ri.tolist()
    assert math.isnan(tn.median().item())
    v, i = tn.nanmedian(1)
    rv, ri = ttn.nanmedian(1)
    assert v.tolist() == rv.tolist() and i.tolist() == ri.tolist()
    assert tn.nanmedian().item() == ttn.nanmedian().item()
    assert math.isnan(ember.zeros(0).median().item())
    with pytest.raises(IndexError):
        ember.zeros(2, 0).median(1)


def test_mode(torch):
    for data in ([1, 3, 3, 1, 1], [3, 1, 3, 1], [[2, 2, 5], [7, 1, 1]]):
        t, tt = ember.tensor(data), torch.tensor(data)
        v, i = t.mode()
        rv, ri = tt.mode()
        assert v.tolist() == rv.tolist() and i.tolist() == ri.tolist()


# ---------------------------------------------------------------------------
# unique

@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.int16, np.uint8])
def test_unique(dtype):
    a = RNG.integers(0, 7, (4, 9)).astype(dtype)
    t = ember.tensor(a)
    u = t.unique()
    ru, rinv, rcnt = np.unique(a, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(as_np(u), ru)
    assert u.dtype == t.dtype
    u, inv, cnt = ember.unique(t, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(as_np(inv), rinv.reshape(a.shape))
    np.testing.assert_array_equal(as_np(cnt), rcnt)
    u, cnt = t.unique(return_counts=True)
    np.testing.assert_array_equal(as_np(cnt), rcnt)


def test_unique_edge_cases(torch):
    e = ember.zeros(0).unique(return_inverse=True, return_counts=True)
    assert [x.shape[0] for x in e] == [0, 0, 0]
    n = ember.tensor([1.0, float("nan"), 2.0, float("nan")])
    u, c = n.unique(return_counts=True)
    ru, rc = torch.tensor([1.0, float("nan"), 2.0, float("nan")]).unique(return_counts=True)
    assert len(u) == len(ru) and c.tolist() == rc.tolist()
    assert ember.ones(2, 2).unique(dim=0).tolist() == [[1.0, 1.0]]


def test_unique_consecutive(torch):
    data = [1, 1, 2, 2, 3, 1, 1, 2]
    t, tt = ember.tensor(data), torch.tensor(data)
    u, inv, cnt = ember.unique_consecutive(t, return_inverse=True, return_counts=True)
    ru, rinv, rcnt = torch.unique_consecutive(tt, return_inverse=True, return_counts=True)
    assert u.tolist() == ru.tolist() and inv.tolist() == rinv.tolist()
    assert cnt.tolist() == rcnt.tolist()
    m = ember.tensor([[1, 1], [2, 2]])
    assert m.unique_consecutive(return_inverse=True)[1].shape == (2, 2)


# ---------------------------------------------------------------------------
# bincount, histc

def test_bincount(torch):
    x = RNG.integers(0, 6, 50)
    t, tt = ember.tensor(x), torch.tensor(x)
    assert t.bincount().tolist() == tt.bincount().tolist()
    assert ember.bincount(t, minlength=10).tolist() == torch.bincount(tt, minlength=10).tolist()
    w = RNG.standard_normal(50).astype(np.float32)
    r = t.bincount(ember.tensor(w))
    rr = tt.bincount(torch.tensor(w))
    assert r.dtype == ember.float32
    np.testing.assert_allclose(as_np(r), rr.numpy(), rtol=1e-5, atol=1e-6)
    assert t.bincount(ember.tensor(w).double()).dtype == ember.float64
    assert ember.tensor([], dtype=ember.int64).bincount().shape == (0,)
    with pytest.raises(RuntimeError):
        ember.tensor([-1, 2]).bincount()
    with pytest.raises(NotImplementedError):
        ember.tensor([1.0]).bincount()
    with pytest.raises(RuntimeError):
        t.bincount(ember.ones(3))


def test_histc(torch):
    a = (RNG.standard_normal(1000) * 2).astype(np.float32)
    t, tt = ember.tensor(a), torch.tensor(a)
    np.testing.assert_array_equal(as_np(t.histc(10, -3, 3)), tt.histc(10, -3, 3).numpy())
    np.testing.assert_array_equal(as_np(ember.histc(t, bins=7)), torch.histc(tt, bins=7).numpy())
    assert ember.tensor([1.0, 2.0, 1.0]).histc(4, 0, 3).tolist() == [0.0, 2.0, 1.0, 0.0]
    with pytest.raises(NotImplementedError):
        ember.tensor([1, 2]).histc()
    with pytest.raises(RuntimeError):
        t.histc(4, 3, 1)


# ---------------------------------------------------------------------------
# searchsorted, bucketize

@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_1d(right, torch):
    seq = np.array([1, 3, 3, 5, 7, 9], np.float32)
    vals = np.array([[0, 3, 4], [9, 10, 3.5]], np.float32)
    r = ember.searchsorted(ember.tensor(seq), ember.tensor(vals), right=right)
    np.testing.assert_array_equal(as_np(r), np.searchsorted(seq, vals, "right" if right else
                                                            "left"))
    rs = ember.searchsorted(ember.tensor(seq), ember.tensor(vals), side="right" if right else
                            "left", out_int32=True)
    assert rs.dtype == ember.int32
    assert ember.searchsorted(ember.tensor(seq), 3, right=right).item() == \
        torch.searchsorted(torch.tensor(seq), 3, right=right).item()


def test_searchsorted_nd_and_sorter(torch):
    seq = np.sort(RNG.standard_normal((3, 8)), 1)
    vals = RNG.standard_normal((3, 5))
    r = ember.searchsorted(ember.tensor(seq), ember.tensor(vals))
    rt = torch.searchsorted(torch.tensor(seq), torch.tensor(vals))
    assert r.tolist() == rt.tolist()
    unsorted = np.array([5.0, 1.0, 3.0])
    sorter = np.argsort(unsorted)
    r = ember.searchsorted(ember.tensor(unsorted), ember.tensor([2.0, 4.0, 6.0]),
                           sorter=ember.tensor(sorter))
    assert r.tolist() == [1, 2, 3]
    with pytest.raises(RuntimeError):
        ember.searchsorted(ember.tensor(seq), ember.tensor(np.zeros((2, 5))))
    with pytest.raises(RuntimeError):
        ember.searchsorted(ember.tensor(seq[0]), ember.tensor([1.0]), right=True, side="left")


def test_bucketize(torch):
    b = [1, 3, 5, 7]
    x = [[0, 1, 6], [7, 8, 3]]
    for right in (False, True):
        r = ember.bucketize(ember.tensor(x), ember.tensor(b), right=right)
        rt = torch.bucketize(torch.tensor(x), torch.tensor(b), right=right)
        assert r.tolist() == rt.tolist()
    with pytest.raises(RuntimeError):
        ember.bucketize(ember.tensor(x), ember.tensor([b]))


# ---------------------------------------------------------------------------
# autograd of the selecting ops

@pytest.mark.parametrize("case", ["sort", "topk", "kthvalue", "median_dim", "median_all",
                                  "mode", "cummin"])
def test_select_grads_match_torch(case, torch):
    f = {
        "sort": lambda x: x.sort(1)[0],
        "topk": lambda x: x.topk(2, 0)[0],
        "kthvalue": lambda x: x.kthvalue(2, 1, keepdim=True)[0],
        "median_dim": lambda x: x.median(0)[0],
        "median_all": lambda x: x.median(),
        "mode": lambda x: x.mode(1)[0],
        "cummin": lambda x: x.cummin(0)[0],
    }[case]
    a = distinct(4, 5, dtype=np.float64)
    xe = ember.tensor(a, requires_grad=True)
    xt = torch.tensor(a, requires_grad=True)
    ye, yt = f(xe), f(xt)
    w = RNG.standard_normal(tuple(yt.shape))
    (ye * ember.tensor(w)).sum().backward()
    (yt * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy())


def test_sort_bit_identical_threads():
    a = ember.tensor(RNG.standard_normal((64, 5000)).astype(np.float32))
    old = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        v1, i1 = a.sort(1)
        ember.set_num_threads(2)
        v2, i2 = a.sort(1)
    finally:
        ember.set_num_threads(old)
    assert v1.numpy().tobytes() == v2.numpy().tobytes()
    assert i1.tolist() == i2.tolist()


@pytest.mark.parametrize("fn", ["unique", "unique_consecutive"])
@pytest.mark.parametrize("shape,dim", [((6, 3), 0), ((3, 6), 1), ((5, 2, 3), 0), ((4, 5, 2), -2),
                                       ((0, 3), 0), ((3, 0), 1), ((7,), 0)])
def test_unique_dim_matches_torch(fn, shape, dim):
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(sum(shape)).integers(0, 2, size=shape)
    e = getattr(ember, fn)(ember.tensor(a), dim=dim, return_inverse=True, return_counts=True)
    t = getattr(torch, fn)(torch.tensor(a), dim=dim, return_inverse=True, return_counts=True)
    for x, y in zip(e, t):
        np.testing.assert_array_equal(x.numpy(), y.numpy())
        assert tuple(x.shape) == tuple(y.shape)


def test_unique_dim_zero_size_unselected_dim_is_an_error():
    with pytest.raises(RuntimeError, match="0 sized dimensions"):
        ember.unique(ember.zeros(0, 3), dim=1)
