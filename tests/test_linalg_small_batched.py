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
