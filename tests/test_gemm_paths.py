"""GEMM paths a training step leans on, through ember's matmul entry points: the
transposed-B packing (``x @ W.T``, Linear's layout) and the narrow kernel for
N up to one vector of columns (a classifier's output layer), on every ISA the CPU
has, at odd sizes and strides, against NumPy in float64 and PyTorch; results
must be the same bits on 1 and 2 threads."""

import numpy as np
import pytest

import ember
from ember._C import matmul as L

RNG = np.random.default_rng(7)


def E(a):
    return ember.from_numpy(np.array(a, order="C"))


def N(t):
    return np.asarray(t).copy()


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def tol(dtype, k):
    return (dict(rtol=1e-4, atol=2e-5 * (k + 1) ** 0.5) if dtype == np.float32
            else dict(rtol=1e-11, atol=1e-12 * (k + 1) ** 0.5))


@pytest.fixture(params=range(3), ids=["generic", "avx2", "avx512"])
def isa(request):
    """each GEMM code path the CPU can run"""
    hw = L._gemm_isa()
    if request.param > hw:
        pytest.skip("the CPU lacks this ISA")
    L._set_gemm_isa(request.param)
    yield request.param
    L._set_gemm_isa(-1)


@pytest.fixture
def threads():
    old = ember.get_num_threads()
    yield
    ember.set_num_threads(old)


def _operand(a, transposed, sliced):
    """``a`` as an ember tensor stored transposed (a ``.t()`` view), as every other
    column of a wider array, or plainly"""
    if transposed:
        return E(a.T).t()
    if sliced:
        wide = np.zeros((a.shape[0], 2 * a.shape[1] + 1), dtype=a.dtype)
        wide[:, 1::2] = a
        return E(wide)[:, 1::2]
    return E(a)


# (M, N, K): Linear-layout products across the K and row blocks, and narrow N
# (1 to 17 columns) with odd M and K, including one vector exactly (8, 16)
SHAPES = [(64, 256, 784), (37, 29, 41), (130, 97, 400), (7, 300, 50), (64, 10, 256),
          (65, 16, 255), (33, 8, 9), (700, 9, 300), (3, 5, 200), (17, 15, 7), (1000, 2, 129),
          (31, 17, 64), (5, 3, 1)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_mm_layouts_against_numpy(isa, m, n, k, dtype):
    a, b = rand(m, k, dtype=dtype), rand(k, n, dtype=dtype)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    for ta, tb, sliced in [(0, 0, 0), (0, 1, 0), (1, 0, 0), (1, 1, 0), (0, 0, 1), (0, 1, 1)]:
        ea = _operand(a, ta, sliced)
        eb = _operand(b, tb, sliced and not tb)
        got = N(L.mm(ea, eb))
        np.testing.assert_allclose(got, ref, **tol(dtype, k),
                                   err_msg=f"ta={ta} tb={tb} sliced={sliced}")


@pytest.mark.parametrize("m,n,k", [(64, 10, 256), (65, 16, 255), (200, 7, 33), (64, 256, 784),
                                   (37, 29, 41)])
def test_linear_and_addmm_epilogues(isa, m, n, k):
    """the bias and beta terms on the narrow and transposing paths"""
    x, w, bias = rand(m, k), rand(n, k), rand(n)
    ref = x.astype(np.float64) @ w.T.astype(np.float64) + bias
    np.testing.assert_allclose(N(L.linear(E(x), E(w), E(bias))), ref, **tol(np.float32, k))
    c = rand(m, n)
    got = ember.addmm(E(c), E(x), E(w).t(), beta=0.5, alpha=2.0)
    np.testing.assert_allclose(N(got), 0.5 * c + 2.0 * (ref - bias), **tol(np.float32, k))
    # the result written transposed (out= a column-major view): the product is flipped
    out = ember.empty(n, m).t()
    ember.mm(E(x), E(w).t(), out=out)
    np.testing.assert_allclose(N(out), ref - bias, **tol(np.float32, k))


@pytest.mark.parametrize("m,n,k", [(64, 10, 256), (600, 10, 700), (999, 16, 333),
                                   (513, 3, 1201), (64, 256, 784), (333, 517, 701),
                                   (257, 33, 1000)])
def test_same_bits_on_one_and_two_threads(isa, threads, m, n, k):
    x, w = rand(m, k), rand(n, k)
    bias = rand(n)
    res = []
    for nt in (1, 2):
        ember.set_num_threads(nt)
        res.append((N(L.mm(E(x), E(w).t())), N(L.mm(E(w), E(x).t())),
                    N(L.linear(E(x), E(w), E(bias)))))
    for one, two in zip(*res):
        assert np.array_equal(one, two)


def test_linear_parity_with_torch():
    """an MLP's layers (784-256-256-10, batch 64): forward and gradients"""
    torch = pytest.importorskip("torch")
    for k, n in [(784, 256), (256, 256), (256, 10)]:
        xi, w, b = rand(64, k), rand(n, k), rand(n)
        g = rand(64, n)
        ex, ew, eb = (E(v).requires_grad_() for v in (xi, w, b))
        tx, tw, tb = (torch.tensor(v, requires_grad=True) for v in (xi, w, b))
        ey = ember.nn.functional.linear(ex, ew, eb)
        ty = torch.nn.functional.linear(tx, tw, tb)
        np.testing.assert_allclose(N(ey.detach()), ty.detach().numpy(), rtol=1e-4, atol=1e-4)
        ey.backward(E(g))
        ty.backward(torch.tensor(g))
        for e, t in ((ex, tx), (ew, tw), (eb, tb)):
            np.testing.assert_allclose(N(e.grad), t.grad.numpy(), rtol=1e-4, atol=1e-4)
