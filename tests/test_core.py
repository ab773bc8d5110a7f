"""The native core: dtypes, devices, creation, views, copies, interop, printing."""

import gc
import threading
import time

import numpy as np
import pytest

import ember

ALL = [
    ember.bool,
    ember.uint8,
    ember.int8,
    ember.int16,
    ember.int32,
    ember.int64,
    ember.float16,
    ember.bfloat16,
    ember.float32,
    ember.float64,
]


def test_dtype_attributes():
    assert [d.itemsize for d in ALL] == [1, 1, 1, 2, 4, 8, 2, 2, 4, 8]
    assert [d.is_floating_point for d in ALL] == [False] * 6 + [True] * 4
    assert not ember.uint8.is_signed and ember.int8.is_signed and not ember.bool.is_signed
    assert repr(ember.float32) == "ember.float32" and ember.float is ember.float32
    assert ember.long is ember.int64 and ember.half is ember.float16


def test_finfo_iinfo_match_torch(torch):
    for name in ["float16", "bfloat16", "float32", "float64"]:
        e, t = ember.finfo(getattr(ember, name)), torch.finfo(getattr(torch, name))
        assert (e.bits, e.eps, e.max, e.min, e.tiny, e.resolution) == (
            t.bits,
            t.eps,
            t.max,
            t.min,
            t.tiny,
            t.resolution,
        )
    for name in ["uint8", "int8", "int16", "int32", "int64"]:
        e, t = ember.iinfo(getattr(ember, name)), torch.iinfo(getattr(torch, name))
        assert (e.bits, e.min, e.max) == (t.bits, t.min, t.max)
    with pytest.raises(TypeError):
        ember.finfo(ember.int32)
    with pytest.raises(TypeError):
        ember.iinfo(ember.float32)


def test_device_parsing_and_comparison():
    assert ember.device("cpu") == ember.device("cpu") == "cpu"
    d = ember.device("cuda:1")
    assert (d.type, d.index) == ("cuda", 1) and str(d) == "cuda:1"
    assert ember.device("cuda", 0) == ember.device("cuda:0") != ember.device("cuda")
    assert repr(ember.device("cuda", 2)) == "device(type='cuda', index=2)"
    assert ember.ones(1).device == ember.device("cpu")
    with pytest.raises(RuntimeError):
        ember.device("cuda:x")
    with pytest.raises(RuntimeError):
        ember.device("nope")


def test_default_dtype_switch():
    try:
        ember.set_default_dtype(ember.float64)
        assert ember.tensor([1.5]).dtype is ember.float64
        assert ember.zeros(2).dtype is ember.float64
        assert (ember.tensor([1]) / 2).dtype is ember.float64
    finally:
        ember.set_default_dtype(ember.float32)
    with pytest.raises(TypeError):
        ember.set_default_dtype(ember.int32)


def test_creation_functions():
    assert ember.full((2, 2), 3).dtype is ember.int64
    assert ember.full((2,), 3.5).tolist() == [3.5, 3.5]
    assert ember.full((1,), True).dtype is ember.bool
    z = ember.zeros_like(ember.ones(2, 3, dtype=ember.int16))
    assert z.dtype is ember.int16 and z.tolist() == [[0] * 3] * 2
    assert ember.empty(0, 3).shape == (0, 3)
    assert ember.ones((2, 3)).shape == ember.ones([2, 3]).shape == ember.ones(2, 3).shape
    with pytest.raises(RuntimeError, match="negative dimension"):
        ember.zeros(-1, 2)
    with pytest.raises(TypeError):
        ember.zeros(2.5)
    o = ember.empty(3, dtype=ember.int32)
    assert ember.zeros(3, out=o) is o and o.tolist() == [0, 0, 0]
    with pytest.raises(RuntimeError, match="out= has shape"):
        ember.ones(4, out=o)
    with pytest.raises(ValueError):
        ember.tensor([[1, 2], [3]])


def test_views_share_storage():
    a = ember.tensor(np.arange(24, dtype=np.float32)).view(2, 3, 4)
    for v in [
        a.view(6, 4),
        a.reshape(-1),
        a.permute(2, 0, 1),
        a.transpose(0, 2),
        a.t() if a.dim() == 2 else a.mT,
        a.unsqueeze(1),
        a[0].squeeze(),
        a.narrow(2, 1, 2),
        a.select(1, 2),
        a[:, ::2, 1:],
        a.expand(3, 2, 3, 4),
        a.diagonal(0, 1, 2),
        a.flatten(1),
        a.unflatten(2, (2, 2)),
        a.unbind(0)[1],
        a.split(2, 2)[1],
        a.chunk(3, 1)[2],
        a.T,
        a[..., None, -1],
    ]:
        assert v.untyped_storage().data_ptr() == a.untyped_storage().data_ptr()
    n = a.numpy()
    np.testing.assert_array_equal(a.permute(2, 0, 1).numpy(), n.transpose(2, 0, 1))
    np.testing.assert_array_equal(a[:, ::2, 1:].numpy(), n[:, ::2, 1:])
    np.testing.assert_array_equal(a.diagonal(0, 1, 2).numpy(), np.diagonal(n, 0, 1, 2))
    np.testing.assert_array_equal(a[..., None, -1].numpy(), n[..., None, -1])
    assert a[1, 2, 3].item() == 23 and a.storage_offset() == 0
    assert a[1].storage_offset() == 12 and a[:, 1].stride() == (12, 1)


def test_view_errors_and_reshape_copy():
    a = ember.ones(4, 6).t()
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        a.view(24)
    r = a.reshape(24)
    assert r.is_contiguous() and r.untyped_storage().data_ptr() != a.untyped_storage().data_ptr()
    with pytest.raises(RuntimeError, match="invalid for input of size"):
        a.view(5, 5)
    with pytest.raises(IndexError):
        a.transpose(0, 2)
    with pytest.raises(IndexError, match="out of bounds"):
        ember.ones(3)[3]
    with pytest.raises(RuntimeError, match="expanded size"):
        ember.ones(3).expand(2, 4)


def test_contiguous_clone_copy_cast():
    a = ember.tensor(np.arange(6, dtype=np.float64).reshape(2, 3)).t()
    c = a.contiguous()
    assert c.is_contiguous() and not a.is_contiguous() and c.tolist() == a.tolist()
    b = ember.zeros(3, 2, dtype=ember.int32)
    b.copy_(a)
    assert b.tolist() == [[0, 3], [1, 4], [2, 5]]
    assert a.to(ember.float16).dtype is ember.float16
    assert a.long().dtype is ember.int64 and a.bool().tolist()[0] == [False, True]
    x = ember.ones(3)
    assert x.to(ember.float32) is x and x.to(ember.float32, copy=True) is not x



@pytest.mark.parametrize("dt", ["float32", "float64", "int64", "int32", "int16", "uint8",
                                "bool", "complex64", "complex128"])
def test_broadcast_value_copies_as_fill(dt):
    # one value expanded over a contiguous result (the grad of a sum) takes the fill
    # path: every item the value, for every item size and both sides of 2^20 items
    v = np.array([True] if dt == "bool" else [3 - 2j if dt.startswith("complex") else 7],
                 dtype=dt)
    src = ember.tensor(v)[0]
    for shape in ((3, 5), (1 << 10, 1 << 10, 2)):
        got = src.expand(*shape).contiguous().numpy()
        np.testing.assert_array_equal(got, np.full(shape, v[0]))
        dst = ember.zeros(*shape, dtype=getattr(ember, dt))
        dst.copy_(src)
        np.testing.assert_array_equal(dst.numpy(), np.full(shape, v[0]))
    np.testing.assert_array_equal(ember.full((4, 3), 2.5).numpy(), np.full((4, 3), 2.5, "f4"))
    # a column broadcast along rows is not one value: the general copy
    col = ember.tensor(np.arange(3, dtype=np.float32)).reshape(3, 1).expand(3, 4).contiguous()
    np.testing.assert_array_equal(col.numpy(), np.repeat(np.arange(3.0)[:, None], 4, 1))
    # the conjugate bit is applied to the filled value
    if dt.startswith("complex"):
        np.testing.assert_array_equal(src.conj().expand(2, 2).contiguous().numpy(),
                                      np.full((2, 2), np.conj(v[0])))

def test_all_dtype_conversions_match_numpy():
    vals = np.array([0, 1, -2, 3.7, 250, -128.5], dtype=np.float64)
    npt = {
        ember.float32: np.float32,
        ember.float64: np.float64,
        ember.int32: np.int32,
        ember.int64: np.int64,
        ember.int16: np.int16,
        ember.float16: np.float16,
    }
    for d, nd in npt.items():
        np.testing.assert_array_equal(ember.tensor(vals).to(d).numpy(), vals.astype(nd))
    assert ember.tensor([0.0, 2.0, -1.0]).bool().tolist() == [False, True, True]


def test_numpy_interop_zero_copy_both_ways():
    n = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = ember.from_numpy(n)
    n[0, 0] = 99
    assert t[0, 0].item() == 99
    back = t.numpy()
    back[1, 1] = -5
    assert n[1, 1] == -5
    assert np.asarray(t).base is not None
    s = ember.from_numpy(n[:, ::2])
    assert s.stride() == (4, 2) and s.tolist() == n[:, ::2].tolist()
    with pytest.raises(ValueError, match="negative"):
        ember.from_numpy(n[::-1])
    with pytest.raises(TypeError):
        ember.from_numpy([1, 2])
    assert ember.as_tensor(n).data_ptr() == n.ctypes.data


def test_dlpack_numpy_roundtrip():
    n = np.arange(6, dtype=np.int32).reshape(2, 3)
    t = ember.from_dlpack(n)
    assert t.dtype is ember.int32 and t.tolist() == n.tolist() and t.data_ptr() == n.ctypes.data
    m = np.from_dlpack(t)
    m[0, 0] = 42
    assert t[0, 0].item() == 42 and n[0, 0] == 42
    assert t.__dlpack_device__() == (1, 0)


def test_dlpack_torch_both_ways(torch):
    tt = torch.arange(10, dtype=torch.float64).reshape(2, 5)[:, 1:]
    e = ember.from_dlpack(tt)
    assert e.tolist() == tt.tolist() and e.stride() == tt.stride()
    e[0, 0] = -1
    assert tt[0, 0].item() == -1
    back = torch.from_dlpack(ember.arange(4))
    assert back.shape == (4,)
    bf = ember.ones(3, dtype=ember.bfloat16)
    assert torch.from_dlpack(bf).dtype == torch.bfloat16


def test_printing_like_torch(torch):
    cases = [
        [[1.0, 2.0]],
        [1.5, -2.25, 3.0],
        [1, 2, 3],
        [True, False],
        [1e-8, 1.0],
        [[1e10, 1.0]],
        [],
    ]
    for c in cases:
        assert repr(ember.tensor(c)) == repr(torch.tensor(c))
    for d in ["float64", "int32", "float16"]:
        assert repr(ember.tensor([1, 2], dtype=getattr(ember, d))).replace(
            "ember", "torch"
        ) == repr(torch.tensor([1, 2], dtype=getattr(torch, d)))
    big = np.arange(2000, dtype=np.float32).reshape(40, 50)
    assert repr(ember.tensor(big)) == repr(torch.tensor(big))
    assert repr(ember.zeros(0, 3)).replace("ember", "torch") == repr(torch.zeros(0, 3))
    assert repr(ember.tensor(3.5)) == repr(torch.tensor(3.5))


def test_item_tolist_and_python_conversions():
    t = ember.tensor([[1, 2], [3, 4]], dtype=ember.int16)
    assert t.tolist() == [[1, 2], [3, 4]] and t[1, 0].item() == 3
    assert float(ember.tensor(2.5)) == 2.5 and int(ember.tensor(7)) == 7
    assert [1, 2, 3][ember.tensor(1)] == 2
    with pytest.raises(RuntimeError, match="cannot be converted to Scalar"):
        t.item()
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(t)
    assert len(t) == 2 and [r.tolist() for r in t] == [[1, 2], [3, 4]]


def test_threads_setting():
    n = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        assert ember.get_num_threads() == 1
        x = np.random.default_rng(1).standard_normal(2_000_000).astype(np.float32)
        one = (ember.tensor(x) * 3 + 1).numpy()
        ember.set_num_threads(2)
        two = (ember.tensor(x) * 3 + 1).numpy()
        np.testing.assert_array_equal(one, two)
    finally:
        ember.set_num_threads(n)
    with pytest.raises(ValueError):
        ember.set_num_threads(0)


def test_gil_released_around_large_kernels():
    """Two Python threads running large kernels overlap: with the GIL held they could not."""
    a = ember.ones(8_000_000)
    b = ember.ones(8_000_000)
    out = ember.empty(8_000_000)
    n = ember.get_num_threads()
    ember.set_num_threads(1)
    try:

        def work():
            for _ in range(15):
                ember.add(a, b, out=out)

        t0 = time.perf_counter()
        work()
        serial = time.perf_counter() - t0
        progress = []

        def counter():
            # a pure-Python loop that can only advance while the other thread is in C
            t_end = time.perf_counter() + serial
            c = 0
            while time.perf_counter() < t_end:
                c += 1
            progress.append(c)

        th = threading.Thread(target=counter)
        th.start()
        work()
        th.join()
    finally:
        ember.set_num_threads(n)
    assert progress and progress[0] > 1000


def test_no_leak_over_many_small_ops():
    import resource

    def rss():
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    a, b = ember.ones(100), ember.ones(100)
    for _ in range(20_000):
        (a + b).exp()
    gc.collect()
    before = rss()
    for _ in range(200_000):
        c = a + b
        c = c * 2.0
        del c
    gc.collect()
    assert rss() - before < 10_000  # KiB: flat, not 200k tensors' worth


def test_large_block_cache_reuses_memory():
    from ember._C import core

    x = ember.ones(4_000_000)
    ptr = (x + 1).data_ptr()
    y = x + 2  # the freed 16 MB block of the previous result is handed back
    assert y.data_ptr() == ptr and core._alloc_stats()["cached_blocks"] >= 0
