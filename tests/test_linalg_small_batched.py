"""Batches of small matrices (src_c/lapack_batch.c): the direct kernels for n <= 16
and the LAPACK loop above agree with torch, including singular and indefinite
members of a batch (info per matrix, the error naming the batch element)."""
import numpy as np
import pytest

import ember

RNG = np.random.default_rng(0)


def _batch(n, b=50, dtype="float64"):
    return (RNG.standard_normal((b, n, n)) + n * np.eye(n)).astype(dtype)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7, 16, 17])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_inv_solve_det_cholesky_lu_match_torch(n, dtype):
    torch = pytest.importorskip("torch")
    a = _batch(n, dtype=dtype)
    b = RNG.standard_normal((50, n, 2)).astype(dtype)
    spd = (a @ a.transpose(0, 2, 1) + np.eye(n)).astype(dtype)
    tol = dict(rtol=2e-4, atol=2e-4) if dtype == "float32" else dict(rtol=1e-10, atol=1e-10)
    A, B, S = ember.tensor(a), ember.tensor(b), ember.tensor(spd)
    TA, TB, TS = torch.tensor(a), torch.tensor(b), torch.tensor(spd)
    np.testing.assert_allclose(ember.linalg.inv(A).numpy(), torch.linalg.inv(TA).numpy(), **tol)
    np.testing.assert_allclose(ember.linalg.solve(A, B).numpy(),
                               torch.linalg.solve(TA, TB).numpy(), **tol)
    np.testing.assert_allclose(ember.linalg.det(A).numpy(), torch.linalg.det(TA).numpy(),
                               **tol)
    np.testing.assert_allclose(ember.linalg.cholesky(S).numpy(),
                               torch.linalg.cholesky(TS).numpy(), **tol)
    np.testing.assert_allclose(ember.linalg.cholesky(S, upper=True).numpy(),
                               torch.linalg.cholesky(TS, upper=True).numpy(), **tol)
    lu, piv = ember.linalg.lu_factor(A)
    tlu, tpiv = torch.linalg.lu_factor(TA)
    np.testing.assert_array_equal(piv.numpy(), tpiv.numpy())
    np.testing.assert_allclose(lu.numpy(), tlu.numpy(), **tol)
    for adjoint in (False, True):
        np.testing.assert_allclose(
            ember.linalg.lu_solve(lu, piv, B, adjoint=adjoint).numpy(),
            torch.linalg.lu_solve(tlu, tpiv, TB, adjoint=adjoint).numpy(), **tol)


def test_singular_and_indefinite_members_are_reported_per_matrix():
    torch = pytest.importorskip("torch")
    a = _batch(3, b=4)
    a[2] = [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.0, 1.0, 1.0]]   # rank 2
    _, info = ember.linalg.inv_ex(ember.tensor(a))
    _, tinfo = torch.linalg.inv_ex(torch.tensor(a))
    assert info.tolist() == tinfo.tolist() and info.tolist()[2] != 0
    with pytest.raises(ember.linalg.LinAlgError, match=r"Batch element 2"):
        ember.linalg.inv(ember.tensor(a))
    assert ember.linalg.det(ember.tensor(a))[2].item() == 0.0
    s = np.stack([np.eye(3), np.diag([1.0, -1.0, 1.0]), np.eye(3)])
    _, cinfo = ember.linalg.cholesky_ex(ember.tensor(s))
    _, tcinfo = torch.linalg.cholesky_ex(torch.tensor(s))
    assert cinfo.tolist() == tcinfo.tolist() == [0, 2, 0]


def test_many_tiny_matrices_without_a_python_loop():
    a = _batch(3, b=10_000)
    inv = ember.linalg.inv(ember.tensor(a)).numpy()
    np.testing.assert_allclose(inv @ a, np.broadcast_to(np.eye(3), a.shape), atol=1e-12)
    np.testing.assert_allclose(ember.linalg.det(ember.tensor(a)).numpy(), np.linalg.det(a),
                               rtol=1e-12)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 9, 16, 17])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_slogdet_logdet_and_transposed_input_match_torch(n, dtype):
    torch = pytest.importorskip("torch")
    a = _batch(n, b=30, dtype=dtype)
    a[1] = -a[1]                       # negative determinants for odd n
    a[3, :, 0] = 0.0                   # a singular member: sign 0, log|det| -inf
    tol = dict(rtol=2e-4, atol=2e-4) if dtype == "float32" else dict(rtol=1e-10, atol=1e-10)
    A, TA = ember.tensor(a).transpose(-2, -1), torch.tensor(a).transpose(-2, -1)
    s, la = ember.linalg.slogdet(A)
    ts, tla = torch.linalg.slogdet(TA)
    np.testing.assert_array_equal(s.numpy(), ts.numpy())
    np.testing.assert_allclose(la.numpy(), tla.numpy(), **tol)
    assert la.dtype == A.dtype and s.shape == (30,)
    np.testing.assert_allclose(ember.linalg.det(A).numpy(), torch.linalg.det(TA).numpy(), **tol)
    np.testing.assert_allclose(ember.logdet(A).numpy(), torch.logdet(TA).numpy(), **tol)
    keep = [i for i in range(30) if i != 3]
    np.testing.assert_allclose(ember.linalg.inv(A[keep]).numpy(),
                               torch.linalg.inv(TA[keep]).numpy(), **tol)


def test_solve_shapes_and_singular_members_like_torch():
    torch = pytest.importorskip("torch")
    a = _batch(4, b=6)
    a[4] = [[1.0, 2.0, 0, 0], [2.0, 4.0, 0, 0], [0, 0, 1.0, 0], [0, 0, 0, 1.0]]
    A, TA = ember.tensor(a), torch.tensor(a)
    b = RNG.standard_normal((6, 4, 3))
    x, info = ember.linalg.solve_ex(A, ember.tensor(b))
    tx, tinfo = torch.linalg.solve_ex(TA, torch.tensor(b))
    assert info.tolist() == tinfo.tolist() and info.tolist()[4] != 0
    ok = [0, 1, 2, 3, 5]
    np.testing.assert_allclose(x.numpy()[ok], tx.numpy()[ok], rtol=1e-10, atol=1e-10)
    with pytest.raises(ember.linalg.LinAlgError, match=r"Batch element 4"):
        ember.linalg.solve(A, ember.tensor(b))
    good, tgood = A[ok], TA[ok]
    v = RNG.standard_normal((5, 4))
    for left in (True, False):
        rhs = b[ok] if left else b[ok].transpose(0, 2, 1)
        e = ember.linalg.solve(good, ember.tensor(rhs), left=left).numpy()
        t = torch.linalg.solve(tgood, torch.tensor(rhs), left=left).numpy()
        np.testing.assert_allclose(e, t, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(ember.linalg.solve(good, ember.tensor(v)).numpy(),
                               torch.linalg.solve(tgood, torch.tensor(v)).numpy(), rtol=1e-10)
    # a batch of right-hand sides against one matrix: the broadcasting path
    np.testing.assert_allclose(ember.linalg.solve(good[0], ember.tensor(b[ok])).numpy(),
                               torch.linalg.solve(tgood[0], torch.tensor(b[ok])).numpy(),
                               rtol=1e-10)
    nan = ember.full((2, 3, 3), float("nan"), dtype=ember.float64)
    tnan = torch.full((2, 3, 3), float("nan"), dtype=torch.float64)
    assert ember.linalg.inv_ex(nan).info.tolist() == torch.linalg.inv_ex(tnan).info.tolist()
    assert np.isnan(ember.linalg.det(nan).numpy()).all()


@pytest.mark.parametrize("shape", [(40, 4, 4), (7, 16, 16), (5, 6, 3), (5, 3, 6), (3, 20, 20)])
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
def test_eigh_and_svd_batches_match_torch(shape, dtype):
    torch = pytest.importorskip("torch")
    a = RNG.standard_normal(shape)
    if dtype.startswith("complex"):
        a = a + 1j * RNG.standard_normal(shape)
    a = a.astype(dtype)
    real = np.float32 if dtype in ("float32", "complex64") else np.float64
    tol = dict(rtol=1e-3, atol=1e-4) if real == np.float32 else dict(rtol=1e-9, atol=1e-10)
    A, TA = ember.tensor(a), torch.tensor(a)
    S, TS = ember.linalg.svdvals(A), torch.linalg.svdvals(TA)
    np.testing.assert_allclose(S.numpy(), TS.numpy(), **tol)
    for full in (False, True):
        u, s, vh = ember.linalg.svd(A, full_matrices=full)
        tu, ts, tvh = torch.linalg.svd(TA, full_matrices=full)
        assert u.shape == tuple(tu.shape) and vh.shape == tuple(tvh.shape)
        k = min(shape[-2:])
        us = u.numpy()[..., :k] * s.numpy()[..., None, :].astype(a.dtype)
        rec = us @ vh.numpy()[..., :k, :]
        np.testing.assert_allclose(rec, a, **tol)
    if shape[-1] == shape[-2]:
        h = a + np.conj(a.transpose(0, 2, 1))
        H, TH = ember.tensor(h), torch.tensor(h)
        w, v = ember.linalg.eigh(H)
        tw = torch.linalg.eigvalsh(TH)
        np.testing.assert_allclose(w.numpy(), tw.numpy(), **tol)
        np.testing.assert_allclose(ember.linalg.eigvalsh(H).numpy(), tw.numpy(), **tol)
        np.testing.assert_allclose(h @ v.numpy(), v.numpy() * w.numpy()[..., None, :], **tol)
