"""Range and structured creation: arange, range, linspace, logspace, eye,
empty_strided, tril/triu_indices against NumPy and PyTorch (values, dtypes, sizes,
error types), the default dtype and device, plugin devices and Python modes."""

import math
import warnings

import numpy as np
import pytest

import ember
from ember import library

DT = {
    ember.float32: "float32",
    ember.float64: "float64",
    ember.float16: "float16",
    ember.bfloat16: "bfloat16",
    ember.int64: "int64",
    ember.int32: "int32",
    ember.int16: "int16",
    ember.int8: "int8",
    ember.uint8: "uint8",
    ember.bool: "bool",
}


def vals(t):
    if t.dtype == ember.bfloat16:
        t = t.float()
    return t.numpy()


def tdt(torch, d):
    return getattr(torch, DT[d])


# ---- arange ----------------------------------------------------------------------

ARANGE_CASES = [
    ((5,), {}),
    ((5.0,), {}),
    ((0, 1, 0.1), {}),
    ((1, 0, -1), {}),
    ((-3, 7, 2), {}),
    ((0, 10, 3), {"dtype": ember.float32}),
    ((0.5, 5), {"dtype": ember.int64}),
    ((0, 300), {"dtype": ember.uint8}),
    ((-2.5, 2.5, 0.5), {"dtype": ember.float16}),
    ((1, 2.5, 0.5), {}),
    ((0.1, 0.5, 0.1), {}),
    ((-3.3, 7.9, 1.7), {"dtype": ember.int64}),
    ((-3, 7, 2), {"dtype": ember.uint8}),
    ((0, 2**53 + 10, 2**50), {"dtype": ember.float64}),
    ((10, -10, -3), {"dtype": ember.int32}),
    ((0, 0), {}),
    ((3, 3, -1), {}),
    ((True,), {}),
    ((-1.0, 1.0, 0.25), {"dtype": ember.float64}),
    ((0, 1, 1 / 3), {"dtype": ember.float64}),
    ((0, 12), {"dtype": ember.bfloat16}),
    ((5, 1e10, 1e9), {"dtype": ember.int8}),
]


@pytest.mark.parametrize("args,kw", ARANGE_CASES)
def test_arange_matches_torch(args, kw):
    torch = pytest.importorskip("torch")
    e = ember.arange(*args, **kw)
    tkw = {"dtype": tdt(torch, kw["dtype"])} if "dtype" in kw else {}
    t = torch.arange(*args, **tkw)
    assert tuple(e.shape) == tuple(t.shape)
    assert DT[e.dtype] == str(t.dtype).replace("torch.", "")
    np.testing.assert_array_equal(
        vals(e), t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy()
    )


def test_arange_matches_numpy_and_torch_on_many_float_steps():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    for _ in range(300):
        s = float(rng.uniform(-10, 10))
        st = float(rng.choice([-1, 1]) * rng.uniform(0.01, 3))
        e = s + st * float(rng.uniform(0, 40))
        a = ember.arange(s, e, st, dtype=ember.float64)
        t = torch.arange(s, e, st, dtype=torch.float64)
        assert a.numel() == t.numel()
        np.testing.assert_allclose(a.numpy(), t.numpy(), rtol=1e-12, atol=1e-12)
        assert a.numel() == math.ceil((e - s) / st)
        f = ember.arange(s, e, st)
        np.testing.assert_allclose(
            f.numpy(), np.arange(s, e, st)[: f.numel()].astype(np.float32), rtol=1e-6, atol=1e-6
        )


def test_arange_large_matches_numpy_on_any_thread_count():
    n = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        a = ember.arange(1_000_003)
        b = ember.arange(0.0, 100.0, 1e-4, dtype=ember.float64)
        ember.set_num_threads(2)
        np.testing.assert_array_equal(ember.arange(1_000_003).numpy(), a.numpy())
        np.testing.assert_array_equal(
            ember.arange(0.0, 100.0, 1e-4, dtype=ember.float64).numpy(), b.numpy()
        )
    finally:
        ember.set_num_threads(n)
    np.testing.assert_array_equal(a.numpy(), np.arange(1_000_003))
    np.testing.assert_allclose(b.numpy(), np.arange(1_000_000) * 1e-4, rtol=1e-12, atol=1e-12)


def test_arange_keywords_tensors_and_requires_grad():
    assert ember.arange(end=5).tolist() == [0, 1, 2, 3, 4]
    assert ember.arange(start=1, end=5).tolist() == [1, 2, 3, 4]
    assert ember.arange(ember.tensor(5)).dtype == ember.int64
    assert ember.arange(ember.tensor(5.0)).dtype == ember.float32
    r = ember.arange(5.0, requires_grad=True)
    assert r.requires_grad and r.is_leaf
    with pytest.raises(RuntimeError, match="floating point"):
        ember.arange(5, requires_grad=True)
    o = ember.empty(3, dtype=ember.int64)
    assert ember.arange(3, out=o) is o and o.tolist() == [0, 1, 2]


def test_arange_errors():
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        ember.arange(0, 1, 0)
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        ember.arange(0, 5, 0.0)
    with pytest.raises(ValueError, match="step must be nonzero"):
        ember.arange(0, 5, 0.5, dtype=ember.int64)
    with pytest.raises(
        RuntimeError, match="upper bound and lower bound inconsistent with step sign"
    ):
        ember.arange(0, 1, -1)
    with pytest.raises(RuntimeError, match="inconsistent with step sign"):
        ember.arange(1, 0, 0.1)
    with pytest.raises(RuntimeError, match="unsupported range: 0 -> inf"):
        ember.arange(0, float("inf"))
    with pytest.raises(RuntimeError, match="unsupported range"):
        ember.arange(0, float("nan"))
    with pytest.raises(RuntimeError, match="invalid size, possible overflow"):
        ember.arange(0, 1e300, 1e-300)
    with pytest.raises(NotImplementedError, match="Bool"):
        ember.arange(0, 5, dtype=ember.bool)
    with pytest.raises(TypeError, match="must be Number, not str"):
        ember.arange("a")
    with pytest.raises(TypeError, match="must be Number, not Tensor"):
        ember.arange(ember.tensor([5]))


def test_arange_errors_match_torch():
    torch = pytest.importorskip("torch")
    for args in [(0, 1, 0), (0, 1, -1), (0, float("inf")), (0, 1e300, 1e-300)]:
        with pytest.raises(Exception) as te:
            torch.arange(*args)
        with pytest.raises(type(te.value)) as ee:
            ember.arange(*args)
        assert str(ee.value) == str(te.value).splitlines()[0]


def test_range_deprecated_inclusive():
    torch = pytest.importorskip("torch")
    for args in [(0, 4), (0, 1, 0.25), (5, 1, -2), (0.5, 3)]:
        with pytest.warns(DeprecationWarning, match="deprecated"):
            e = ember.range(*args)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch warns once per process
            t = torch.range(*args)
        assert e.dtype == ember.float32
        np.testing.assert_array_equal(e.numpy(), t.numpy())
    with (
        pytest.warns(DeprecationWarning),
        pytest.raises(RuntimeError, match="step must be nonzero"),
    ):
        ember.range(0, 1, 0)


# ---- linspace / logspace -----------------------------------------------------------

LINSPACE_CASES = [
    (0, 1, 5, None),
    (0, 10, 5, ember.int64),
    (0, 1, 1, None),
    (0, 1, 0, None),
    (-5, 5, 7, ember.int64),
    (10, 0, 4, ember.int32),
    (-3.3, 7.9, 9, ember.int64),
    (0, 1000, 7, ember.float16),
    (-3.3, 7.9, 9, ember.bfloat16),
    (2.5, -1.25, 11, ember.float64),
    (-1, 1, 9, None),
    (0.1, 0.9, 15, None),
    (3, 3, 4, None),
    (0, 255, 6, ember.uint8),
]


@pytest.mark.parametrize("start,end,steps,dtype", LINSPACE_CASES)
def test_linspace_matches_torch(start, end, steps, dtype):
    torch = pytest.importorskip("torch")
    e = ember.linspace(start, end, steps, dtype=dtype)
    t = torch.linspace(start, end, steps, **({"dtype": tdt(torch, dtype)} if dtype else {}))
    assert tuple(e.shape) == tuple(t.shape)
    assert DT[e.dtype] == str(t.dtype).replace("torch.", "")
    np.testing.assert_array_equal(
        vals(e), t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy()
    )


def test_linspace_large_close_to_numpy():
    e = ember.linspace(-2.0, 3.0, 100_001, dtype=ember.float64)
    np.testing.assert_allclose(e.numpy(), np.linspace(-2.0, 3.0, 100_001), rtol=0, atol=1e-14)
    assert e[0].item() == -2.0 and e[-1].item() == 3.0
    f = ember.linspace(0, 1, 1000)
    np.testing.assert_allclose(f.numpy(), np.linspace(0, 1, 1000), atol=1e-7)


LOGSPACE_CASES = [
    (0, 2, 3, 10.0, None),
    (0, 2, 3, 2, None),
    (0, 2, 3, 10.0, ember.int64),
    (0, 3, 4, 2, ember.int64),
    (-3.3, 2.9, 9, 10.0, None),
    (-3.3, 2.9, 9, 10.0, ember.float64),
    (1, 1, 1, 3.0, None),
    (0, 1, 0, 10.0, None),
    (-1.0, 4.0, 11, 2.0, ember.float16),
    (-3.3, 7.9, 9, 10.0, ember.int64),
]


@pytest.mark.parametrize("start,end,steps,base,dtype", LOGSPACE_CASES)
def test_logspace_matches_torch(start, end, steps, base, dtype):
    torch = pytest.importorskip("torch")
    e = ember.logspace(start, end, steps, base=base, dtype=dtype)
    t = torch.logspace(
        start, end, steps, base=base, **({"dtype": tdt(torch, dtype)} if dtype else {})
    )
    assert tuple(e.shape) == tuple(t.shape)
    assert DT[e.dtype] == str(t.dtype).replace("torch.", "")
    np.testing.assert_array_equal(vals(e), t.numpy())


def test_linspace_logspace_errors():
    with pytest.raises(RuntimeError, match="number of steps must be non-negative"):
        ember.linspace(0, 1, -1)
    with pytest.raises(TypeError):
        ember.linspace(0, 1)
    with pytest.raises(TypeError):
        ember.linspace(0, 1, 2.5)
    with pytest.raises(NotImplementedError, match="Bool"):
        ember.linspace(0, 1, 3, dtype=ember.bool)
    with pytest.raises(NotImplementedError, match="Bool"):
        ember.logspace(0, 1, 3, dtype=ember.bool)
    with pytest.raises(RuntimeError, match="without overflow"):
        ember.linspace(0, 100000, 7, dtype=ember.float16)
    with pytest.raises(RuntimeError, match="without overflow"):
        ember.linspace(-3.3, 7.9, 9, dtype=ember.uint8)
    assert ember.linspace(ember.tensor(0.0), 1, 3).tolist() == [0.0, 0.5, 1.0]
    assert ember.linspace(0, 1, 3, requires_grad=True).requires_grad


# ---- eye, empty_strided, tril/triu_indices -------------------------------------------


@pytest.mark.parametrize(
    "n,m,dtype",
    [
        (3, None, None),
        (2, 3, ember.int64),
        (4, 2, ember.int8),
        (0, None, None),
        (3, 3, ember.bool),
        (3, None, ember.float16),
        (1, 5, ember.float64),
    ],
)
def test_eye(n, m, dtype):
    e = ember.eye(n, m, dtype=dtype)
    np.testing.assert_array_equal(vals(e).astype(np.float64), np.eye(n, m))
    assert e.dtype == (dtype or ember.float32)


def test_eye_errors_and_grad():
    with pytest.raises(RuntimeError, match="n must be greater or equal to 0, got -1"):
        ember.eye(-1)
    with pytest.raises(RuntimeError, match="m must be greater or equal to 0, got -1"):
        ember.eye(2, -1)
    with pytest.raises(TypeError, match="must be int"):
        ember.eye(2.5)
    assert ember.eye(3, requires_grad=True).requires_grad
    assert tuple(ember.eye(n=2, m=3).shape) == (2, 3)


def test_empty_strided():
    e = ember.empty_strided((2, 3), (1, 2))
    assert tuple(e.shape) == (2, 3) and e.stride() == (1, 2) and e.dtype == ember.float32
    e.fill_(1.0) if hasattr(e, "fill_") else None
    z = ember.empty_strided((0, 4), (4, 1), dtype=ember.int64)
    assert z.numel() == 0 and z.dtype == ember.int64
    w = ember.empty_strided((3, 4), (4, 1))
    w.copy_(ember.arange(12.0).reshape(3, 4))
    assert w.tolist()[2] == [8.0, 9.0, 10.0, 11.0]
    with pytest.raises(RuntimeError, match="dimensionality of sizes"):
        ember.empty_strided((2, 3), (1,))
    with pytest.raises(RuntimeError, match="negative dimension"):
        ember.empty_strided((2, -3), (1, 2))


@pytest.mark.parametrize(
    "row,col,offset",
    [(3, 3, 0), (3, 4, 1), (4, 3, -1), (0, 3, 0), (5, 2, 3), (2, 5, -4), (6, 6, -2), (1, 1, 0)],
)
def test_tril_triu_indices_match_numpy(row, col, offset):
    t = ember.tril_indices(row, col, offset)
    u = ember.triu_indices(row, col, offset)
    assert t.dtype == ember.int64 and tuple(t.shape)[0] == 2
    np.testing.assert_array_equal(t.numpy(), np.stack(np.tril_indices(row, offset, col)))
    np.testing.assert_array_equal(u.numpy(), np.stack(np.triu_indices(row, offset, col)))


def test_tri_indices_errors_and_dtype():
    with pytest.raises(RuntimeError, match="row must be non-negative"):
        ember.tril_indices(-1, 3)
    with pytest.raises(RuntimeError, match="col must be non-negative"):
        ember.triu_indices(3, -1)
    with pytest.raises(NotImplementedError, match="Float"):
        ember.tril_indices(3, 3, dtype=ember.float32)
    assert ember.tril_indices(3, 3, dtype=ember.int32).dtype == ember.int32


# ---- default dtype / device, dispatch ----------------------------------------------


def test_default_dtype_is_respected():
    old = ember.get_default_dtype()
    ember.set_default_dtype(ember.float64)
    try:
        assert ember.arange(0.0, 1.0, 0.5).dtype == ember.float64
        assert ember.arange(3).dtype == ember.int64
        assert ember.linspace(0, 1, 3).dtype == ember.float64
        assert ember.logspace(0, 1, 3).dtype == ember.float64
        assert ember.eye(2).dtype == ember.float64
        assert ember.empty_strided((2,), (1,)).dtype == ember.float64
    finally:
        ember.set_default_dtype(old)


def test_default_device_and_plugin_device():
    with ember.device("cpu"):
        assert ember.arange(3).device == ember.device("cpu")
    try:
        library.register_backend("creadev")
    except RuntimeError:
        pass

    def empty(shape, dtype, device):
        a = np.empty(shape, {ember.float32: np.float32, ember.int64: np.int64}[dtype])
        return library.wrap_memory(a.__array_interface__["data"][0], shape, dtype, device, a)

    def to(t, device, dtype):
        if device.type == "cpu":
            return library.wrap_memory(t.data_ptr(), t.shape, t.dtype, "cpu", t).to(dtype).clone()
        out = empty(tuple(t.shape), dtype, device)
        library.wrap_memory(out.data_ptr(), out.shape, dtype, "cpu", out).copy_(t.to(dtype))
        return out

    library.register_kernel("empty", "creadev", empty)
    library.register_kernel("to", "creadev", to)
    a = ember.arange(4, device="creadev")
    assert a.device.type == "creadev" and a.to("cpu").tolist() == [0, 1, 2, 3]
    seen = []
    library.register_kernel(
        "linspace", "creadev", lambda *a, **k: seen.append(a) or ember.empty(a[2], device="creadev")
    )
    ember.linspace(0, 1, 3, device="creadev")
    assert seen and seen[0][:3] == (0, 1, 3)
    e = ember.eye(2, device="creadev")
    assert e.device.type == "creadev" and e.to("cpu").tolist() == [[1.0, 0.0], [0.0, 1.0]]


def test_python_mode_sees_creation_ops():
    class Log(library.DispatchMode):
        def __init__(self):
            self.seen = []

        def __ember_dispatch__(self, name, func, args, kwargs):
            self.seen.append(name)
            return func(*args, **kwargs)

    with Log() as m:
        ember.arange(3)
        ember.linspace(0, 1, 4)
        ember.eye(2)
    assert m.seen == ["arange", "linspace", "eye"]
