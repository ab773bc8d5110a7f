"""The direct symmetric eigen-decomposition for small real matrices
(src_c/small_eigh.c, n <= 32): reconstruction and orthonormality to tight
tolerances, values against NumPy, special matrices, UPLO, gradients against torch,
and the same bits at any thread count."""
import numpy as np
import pytest

import ember

RNG = np.random.default_rng(7)
TOL = {"float32": 2e-5, "float64": 1e-13}


def _sym(b, n, dtype):
    a = RNG.standard_normal((b, n, n))
    return ((a + a.transpose(0, 2, 1)) / 2).astype(dtype)


def _check(h, w, v, dtype):
    """A V = V diag(w) and V^T V = I relative to ||A||, values against NumPy (float64)."""
    tol = TOL[dtype]
    h64 = h.astype(np.float64)
    w, v = w.astype(np.float64), v.astype(np.float64)
    scale = max(1.0, float(np.abs(h64).max()))
    n = h.shape[-1]
    np.testing.assert_allclose(h64 @ v, v * w[..., None, :], atol=n * tol * scale, rtol=0)
    np.testing.assert_allclose(v.transpose(0, 2, 1) @ v, np.broadcast_to(np.eye(n), v.shape),
                               atol=n * tol, rtol=0)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(h64), atol=n * tol * scale, rtol=0)
    assert (np.diff(w, axis=-1) >= 0).all()


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 16, 32])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_random_symmetric(n, dtype):
    h = _sym(30, n, dtype)
    w, v = ember.linalg.eigh(ember.tensor(h))
    assert w.dtype == v.dtype == getattr(ember, dtype)
    assert tuple(w.shape) == (30, n) and tuple(v.shape) == (30, n, n)
    _check(h, w.numpy(), v.numpy(), dtype)
    np.testing.assert_array_equal(ember.linalg.eigvalsh(ember.tensor(h)).numpy(), w.numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_special_matrices(dtype):
    n = 12
    q, _ = np.linalg.qr(RNG.standard_normal((n, n)))
    repeated = (q * np.array([1.0] * 5 + [-2.0] * 4 + [3.0] * 3)) @ q.T
    mats = [np.zeros((n, n)), np.eye(n), np.diag(RNG.standard_normal(n)), repeated,
            np.ones((n, n)), 1e30 * _sym(1, n, "float64")[0] if dtype == "float64"
            else 1e15 * _sym(1, n, "float64")[0], 1e-30 * _sym(1, n, "float64")[0]]
    if dtype == "float64":   # the exact power-of-two scaling keeps extremes representable
        mats += [1e300 * repeated, 1e-300 * repeated]
    h = np.stack(mats).astype(dtype)
    w, v = ember.linalg.eigh(ember.tensor(h))
    _check(h, w.numpy(), v.numpy(), dtype)
    np.testing.assert_array_equal(w.numpy()[0], 0)
    np.testing.assert_array_equal(w.numpy()[1], 1)
    np.testing.assert_array_equal(v.numpy()[0], np.eye(n))
    np.testing.assert_allclose(w.numpy()[3], [-2] * 4 + [1] * 5 + [3] * 3, atol=50 * TOL[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_uplo_reads_one_triangle(dtype):
    h = _sym(10, 9, dtype)
    junk = RNG.standard_normal(h.shape).astype(dtype) * 100
    lower = np.tril(h) + np.triu(junk, 1)
    upper = np.triu(h) + np.tril(junk, -1)
    for uplo, a in (("L", lower), ("U", upper)):
        w, v = ember.linalg.eigh(ember.tensor(a), UPLO=uplo)
        _check(h, w.numpy(), v.numpy(), dtype)
        np.testing.assert_array_equal(ember.linalg.eigvalsh(ember.tensor(a), UPLO=uplo).numpy(),
                                      w.numpy())


def test_non_contiguous_and_batch_shapes():
    h = _sym(24, 6, "float64").reshape(2, 3, 4, 6, 6)
    t = ember.tensor(h.transpose(0, 1, 2, 4, 3).copy()).transpose(-2, -1)
    w, v = ember.linalg.eigh(t)
    assert tuple(w.shape) == (2, 3, 4, 6)
    _check(h.reshape(24, 6, 6), w.numpy().reshape(24, 6), v.numpy().reshape(24, 6, 6),
           "float64")


def test_non_finite_keeps_lapack_path():
    torch = pytest.importorskip("torch")
    h = _sym(3, 4, "float64")
    h[1, 2, 0] = np.nan
    with pytest.raises(torch.linalg.LinAlgError, match=r"Batch element 1\): The algorithm"):
        torch.linalg.eigvalsh(torch.tensor(h))
    with pytest.raises(ember.linalg.LinAlgError, match=r"Batch element 1\): The algorithm"):
        ember.linalg.eigvalsh(ember.tensor(h))
    # non-finite values in the unread triangle do not matter
    h = _sym(3, 4, "float64")
    a = np.tril(h) + np.triu(np.full_like(h, np.inf), 1)
    w, v = ember.linalg.eigh(ember.tensor(a))
    _check(h, w.numpy(), v.numpy(), "float64")


def test_thread_count_gives_identical_bits():
    h = _sym(64, 16, "float64")
    old = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        w1, v1 = ember.linalg.eigh(ember.tensor(h))
        ember.set_num_threads(2)
        w2, v2 = ember.linalg.eigh(ember.tensor(h))
    finally:
        ember.set_num_threads(old)
    np.testing.assert_array_equal(w1.numpy(), w2.numpy())
    np.testing.assert_array_equal(v1.numpy(), v2.numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gradients_match_torch(dtype):
    torch = pytest.importorskip("torch")
    h = _sym(4, 7, dtype)
    g = RNG.standard_normal(h.shape).astype(dtype)
    A = ember.tensor(h, requires_grad=True)
    TA = torch.tensor(h, requires_grad=True)

    def loss(m, a):
        w, v = m.linalg.eigh(a)
        # sign-invariant in the vectors: V diag(w^2) V^T and |V|
        rec = (v * (w * w).unsqueeze(-2)) @ v.transpose(-2, -1)
        return (rec * m.tensor(g)).sum() + v.abs().sum() + m.linalg.eigvalsh(a).sum()

    loss(ember, A).backward()
    loss(torch, TA).backward()
    tol = dict(rtol=1e-3, atol=1e-3) if dtype == "float32" else dict(rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(A.grad.numpy(), TA.grad.numpy(), **tol)
