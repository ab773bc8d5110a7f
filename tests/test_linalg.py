"""Matrix products (ember._C.matmul) against NumPy (float64 reference) and,
when installed, PyTorch (values, shapes, dtypes, error types and messages)."""

import numpy as np
import pytest

import ember
from ember._C import matmul as L

RNG = np.random.default_rng(0)


def E(a, dtype=None):
    """an ember tensor holding a copy of the NumPy array a"""
    t = ember.from_numpy(np.array(a, order="C"))
    return t if dtype is None else t.to(dtype)


def N(t):
    return np.asarray(t).copy()


def rand(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


def tol(dtype, k=64):
    return (
        dict(rtol=1e-4, atol=1e-4 * max(1, k) ** 0.5)
        if dtype == np.float32
        else dict(rtol=1e-11, atol=1e-11 * max(1, k))
    )


SIZES = [
    (0, 3, 4),
    (3, 0, 4),
    (3, 4, 0),
    (1, 1, 1),
    (1, 7, 5),
    (7, 1, 5),
    (5, 7, 1),
    (2, 3, 4),
    (6, 16, 9),
    (13, 17, 19),
    (33, 31, 64),
    (65, 47, 130),
    (97, 100, 3),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m,n,k", SIZES)
def test_mm_shapes(m, n, k, dtype):
    a, b = rand(m, k, dtype=dtype), rand(k, n, dtype=dtype)
    r = L.mm(E(a), E(b))
    assert tuple(r.shape) == (m, n)
    assert r.dtype == (ember.float32 if dtype == np.float32 else ember.float64)
    np.testing.assert_allclose(N(r), a.astype(np.float64) @ b, **tol(dtype, k))


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mm_transposed_and_sliced(ta, tb, dtype):
    m, n, k = 37, 29, 41
    a = rand(k, m, dtype=dtype).T if ta else rand(m, k, dtype=dtype)
    b = rand(n, k, dtype=dtype).T if tb else rand(k, n, dtype=dtype)
    ea = E(a.T).t() if ta else E(a)
    eb = E(b.T).t() if tb else E(b)
    assert not ta or not ea.is_contiguous()
    np.testing.assert_allclose(N(L.mm(ea, eb)), a.astype(np.float64) @ b, **tol(dtype, k))
    # sliced: every other row / a column window (strides that are not the shape's)
    big = rand(2 * m, k + 5, dtype=dtype)
    eb2 = E(big)[::2, 2 : 2 + k]
    np.testing.assert_allclose(
        N(L.mm(eb2, eb)), big[::2, 2 : 2 + k].astype(np.float64) @ b, **tol(dtype, k)
    )


def test_mm_large_blocks_and_threads():
    m, n, k = 301, 257, 600  # crosses the K and M cache blocks, edge tiles everywhere
    a, b = rand(m, k, dtype=np.float32), rand(k, n, dtype=np.float32)
    ref = a.astype(np.float64) @ b
    old = ember.get_num_threads()
    try:
        for nt in (1, 2):
            ember.set_num_threads(nt)
            np.testing.assert_allclose(N(L.mm(E(a), E(b))), ref, rtol=1e-4, atol=1e-3)
            np.testing.assert_allclose(N(L.mm(E(b).t(), E(a).t())), ref.T, rtol=1e-4, atol=1e-3)
    finally:
        ember.set_num_threads(old)


def test_generic_isa_path():
    hw = L._gemm_isa()
    try:
        assert L._set_gemm_isa(0) == 0
        for m, n, k in [(13, 17, 19), (64, 70, 300), (1, 40, 9)]:
            for dt in (np.float32, np.float64):
                a, b = rand(m, k, dtype=dt), rand(k, n, dtype=dt)
                np.testing.assert_allclose(
                    N(L.mm(E(a), E(b))), a.astype(np.float64) @ b, **tol(dt, k)
                )
    finally:
        L._set_gemm_isa(-1)
    assert L._gemm_isa() == hw


MATMUL_SHAPES = [
    ((3,), (3,)),
    ((2, 3), (3,)),
    ((3,), (3, 4)),
    ((2, 3), (3, 4)),
    ((5, 2, 3), (3,)),
    ((3,), (5, 3, 4)),
    ((5, 2, 3), (3, 4)),
    ((2, 3), (5, 3, 4)),
    ((5, 2, 3), (5, 3, 4)),
    ((1, 2, 3), (5, 3, 4)),
    ((4, 1, 2, 3), (5, 3, 4)),
    ((2, 1, 6, 7), (1, 3, 7, 2)),
    ((0, 2, 3), (3, 4)),
    ((2, 0), (0, 3)),
    ((7, 1, 1), (7, 1, 1)),
]


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
def test_matmul_broadcasting(sa, sb):
    a, b = rand(*sa), rand(*sb)
    r = L.matmul(E(a), E(b))
    ref = np.matmul(a, b)
    assert tuple(r.shape) == ref.shape
    np.testing.assert_allclose(N(r), ref, rtol=1e-12, atol=1e-12)


def test_matmul_noncontiguous_batch():
    a = rand(4, 6, 5, 3)
    b = rand(3, 7)
    ea = E(a).permute(2, 0, 1, 3)  # (5, 4, 6, 3), strided batch dims
    ref = np.transpose(a, (2, 0, 1, 3)) @ b
    np.testing.assert_allclose(N(L.matmul(ea, E(b))), ref, rtol=1e-12, atol=1e-12)
    eb = E(rand(7, 3)).t()
    np.testing.assert_allclose(
        N(L.matmul(ea, eb)), np.transpose(a, (2, 0, 1, 3)) @ N(eb), rtol=1e-12, atol=1e-12
    )


@pytest.mark.parametrize("dt", ["int64", "int32"])
def test_integer_mm(dt):
    a = RNG.integers(-5, 5, (4, 6)).astype(dt)
    b = RNG.integers(-5, 5, (6, 3)).astype(dt)
    r = L.mm(E(a), E(b))
    assert str(r.dtype) == "ember." + dt
    np.testing.assert_array_equal(N(r), a @ b)


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_half_mm(dt):
    a, b = rand(9, 20, dtype=np.float32), rand(20, 5, dtype=np.float32)
    d = getattr(ember, dt)
    r = L.mm(E(a).to(d), E(b).to(d))
    assert r.dtype == d
    ref = N(L.mm(E(a).to(d).float(), E(b).to(d).float()))
    np.testing.assert_allclose(N(r.float()), ref, rtol=2e-2, atol=5e-2)


def test_bmm_and_baddbmm():
    a, b, c = rand(6, 5, 4), rand(6, 4, 3), rand(6, 5, 3)
    np.testing.assert_allclose(N(L.bmm(E(a), E(b))), a @ b, rtol=1e-12)
    r = L.baddbmm(E(c), E(a), E(b), beta=0.5, alpha=2.0)
    np.testing.assert_allclose(N(r), 0.5 * c + 2.0 * (a @ b), rtol=1e-12)
    r = L.baddbmm(E(rand(1, 3)), E(a), E(b))  # broadcast input
    assert tuple(r.shape) == (6, 5, 3)


def test_addmm_addmv_beta_alpha():
    a, b = rand(5, 4), rand(4, 3)
    inp = rand(3)
    np.testing.assert_allclose(
        N(L.addmm(E(inp), E(a), E(b), beta=0.3, alpha=-2)), 0.3 * inp + -2 * (a @ b), rtol=1e-12
    )
    nan = np.full((5, 3), np.nan)
    r = N(L.addmm(E(nan), E(a), E(b), beta=0))  # beta=0: input ignored, NaN not propagated
    np.testing.assert_allclose(r, a @ b, rtol=1e-12)
    v, y = rand(4), rand(5)
    np.testing.assert_allclose(
        N(L.addmv(E(y), E(a), E(v), beta=2, alpha=0.5)), 2 * y + 0.5 * (a @ v), rtol=1e-12
    )
    np.testing.assert_allclose(N(L.mv(E(a), E(v))), a @ v, rtol=1e-12)
    np.testing.assert_allclose(N(L.mv(E(a.T.copy()).t(), E(v))), a @ v, rtol=1e-12)


def test_vector_products():
    x, y = rand(11), rand(11)
    r = L.dot(E(x), E(y))
    assert tuple(r.shape) == ()
    assert abs(float(r) - x @ y) < 1e-12
    assert abs(float(L.vdot(E(x), E(y))) - x @ y) < 1e-12
    np.testing.assert_allclose(N(L.outer(E(x), E(y[:4]))), np.outer(x, y[:4]), rtol=1e-12)
    big = rand(5000).astype(np.float32)
    assert abs(float(L.dot(E(big), E(big))) - float(big.astype(np.float64) @ big)) < 1e-2
    assert float(L.dot(E(rand(0)), E(rand(0)))) == 0.0


def test_linear():
    x, w, b = rand(4, 3, 7), rand(5, 7), rand(5)
    np.testing.assert_allclose(N(L.linear(E(x), E(w), E(b))), x @ w.T + b, rtol=1e-12)
    np.testing.assert_allclose(N(L.linear(E(x), E(w))), x @ w.T, rtol=1e-12)
    np.testing.assert_allclose(N(L.linear(E(x[0, 0]), E(w), E(b))), x[0, 0] @ w.T + b, rtol=1e-12)
    np.testing.assert_allclose(N(L.linear(E(x), E(w[0]))), x @ w[0], rtol=1e-12)
    xt = E(np.transpose(x, (1, 0, 2)).copy()).permute(1, 0, 2)  # non-foldable batch
    np.testing.assert_allclose(N(L.linear(xt, E(w), E(b))), x @ w.T + b, rtol=1e-12)
    xf = rand(64, 33).astype(np.float32)
    wf = rand(17, 33).astype(np.float32)
    np.testing.assert_allclose(
        N(L.linear(E(xf), E(wf))), xf.astype(np.float64) @ wf.T, rtol=1e-4, atol=1e-4
    )


EINSUM = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("i,i->", [(6,), (6,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),
    ("ij->ji", [(3, 4)]),
    ("ij->", [(3, 4)]),
    ("ijk->j", [(2, 3, 4)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 5, 4), (2, 3, 6, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("abc,cd->abd", [(2, 3, 4), (4, 5)]),
    ("ab,ab->a", [(3, 4), (3, 4)]),
    ("ijk,ikl->jl", [(2, 3, 4), (2, 4, 5)]),
    ("i,ij,j", [(3,), (3, 4), (4,)]),
]


@pytest.mark.parametrize("eq,shapes", EINSUM)
def test_einsum(eq, shapes):
    ops = [rand(*s) for s in shapes]
    r = L.einsum(eq, *[E(o) for o in ops])
    ref = np.einsum(eq, *ops)
    assert tuple(r.shape) == np.shape(ref)
    np.testing.assert_allclose(N(r), ref, rtol=1e-10, atol=1e-12)


def test_errors():
    with pytest.raises(
        RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"
    ):
        L.mm(E(rand(2, 3)), E(rand(4, 5)))
    with pytest.raises(RuntimeError, match="self must be a matrix"):
        L.mm(E(rand(2, 3, 1)), E(rand(4, 5)))
    with pytest.raises(RuntimeError, match="same dtype"):
        L.mm(E(rand(2, 3)), E(rand(3, 5)).float())
    with pytest.raises(RuntimeError, match="both arguments to matmul need to be at least 1D"):
        L.matmul(E(np.array(1.0)), E(rand(4, 5)))
    with pytest.raises(RuntimeError, match="must match the size"):
        L.matmul(E(rand(2, 3, 4)), E(rand(3, 4, 6)))
    with pytest.raises(RuntimeError, match="batch1 must be a 3D tensor"):
        L.bmm(E(rand(2, 3)), E(rand(3, 4)))
    with pytest.raises(RuntimeError, match="1D tensors expected"):
        L.dot(E(rand(2, 3)), E(rand(3)))
    with pytest.raises(RuntimeError, match="size mismatch"):
        L.mv(E(rand(2, 3)), E(rand(4)))
    with pytest.raises(NotImplementedError):
        L.mm(E(rand(2, 3) > 0), E(rand(3, 4) > 0))
    with pytest.raises(TypeError):
        L.mm(rand(2, 3), E(rand(3, 4)))


ERROR_CASES = [
    ("mm", ((2, 3), (4, 5))),
    ("mm", ((2, 3, 1), (4, 5))),
    ("matmul", ((2, 3, 4), (5, 6))),
    ("matmul", ((2, 3, 4), (3, 4, 6))),
    ("matmul", ((2, 3), (4,))),
    ("matmul", ((3,), (4, 5))),
    ("matmul", ((3,), (4,))),
    ("bmm", ((2, 3), (4, 5))),
    ("bmm", ((2, 2, 3), (3, 4, 5))),
    ("mv", ((2, 3), (4,))),
    ("dot", ((2, 3), (4,))),
    ("dot", ((3,), (4,))),
    ("outer", ((2, 3), (4,))),
]


@pytest.mark.parametrize("op,shapes", ERROR_CASES)
def test_error_parity_with_torch(op, shapes):
    torch = pytest.importorskip("torch")
    args = [rand(*s) for s in shapes]
    with pytest.raises(Exception) as te:
        getattr(torch, op)(*[torch.from_numpy(a) for a in args])
    with pytest.raises(Exception) as ee:
        getattr(L, op)(*[E(a) for a in args])
    assert type(ee.value) is type(te.value)
    assert str(ee.value) == str(te.value).split("\n")[0]


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
def test_matmul_parity_with_torch(sa, sb):
    torch = pytest.importorskip("torch")
    a, b = rand(*sa, dtype=np.float32), rand(*sb, dtype=np.float32)
    t = torch.matmul(torch.from_numpy(a), torch.from_numpy(b))
    r = L.matmul(E(a), E(b))
    assert tuple(r.shape) == tuple(t.shape)
    assert r.dtype == ember.float32
    np.testing.assert_allclose(N(r), t.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("rows,k,n", [(1, 300, 70), (1, 5, 3), (37, 65, 19), (200, 129, 40),
                                      (0, 8, 5), (6, 0, 5), (3, 4, 1)])
def test_linear_fused_bias(dt, rows, k, n):
    """the bias-fused GEMM path: gemv-sized, naive-sized and blocked products, empty
    rows and K = 0, a transposed (non-contiguous) weight, against NumPy in float64"""
    x, w, b = rand(rows, k), rand(n, k), rand(n)
    ref = x @ w.T + b
    tol = dict(rtol=1e-4, atol=1e-4) if dt == np.float32 else dict(rtol=1e-11, atol=1e-11)
    y = L.linear(E(x.astype(dt)), E(w.astype(dt)), E(b.astype(dt)))
    assert y.dtype == (ember.float32 if dt == np.float32 else ember.float64)
    np.testing.assert_allclose(N(y), ref, **tol)
    wt = E(np.ascontiguousarray(w.T).astype(dt)).t()  # same values, strides (1, n)
    np.testing.assert_allclose(N(L.linear(E(x.astype(dt)), wt, E(b.astype(dt)))), ref, **tol)
    if rows:
        xb = E(np.stack([x, 2 * x]).astype(dt))  # 3-D input folds into rows
        np.testing.assert_allclose(N(L.linear(xb, E(w.astype(dt)), E(b.astype(dt)))),
                                   np.stack([ref, 2 * x @ w.T + b]), **tol)
