"""``ember.linalg`` on device tensors: LAPACK is a host library, so the factorizations run
on host copies and their results come back on the device, as torch returns them; values,
gradients, ``out=``, the legacy names and the errors match the host's."""

import numpy as np
import pytest

import ember
import ember.linalg as LA

pytestmark = pytest.mark.cuda

DEV = "cuda"


def _mat(n, seed, dtype, spd=False, batch=()):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((*batch, n, n))
    if dtype.is_complex:
        a = a + 1j * rng.standard_normal((*batch, n, n))
    if spd:
        a = a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)
    return ember.tensor(a).to(dtype)


def _flat(r):
    return [t for v in r for t in _flat(v)] if isinstance(r, tuple) else [r]


_CASES = {
    "inv": lambda A, B: LA.inv(A),
    "det": lambda A, B: LA.det(A),
    "slogdet": lambda A, B: LA.slogdet(A),
    "solve": lambda A, B: LA.solve(A, B),
    "cholesky": lambda A, B: LA.cholesky(B @ B.mH + 4 * ember.eye(4, dtype=B.dtype,
                                                                     device=B.device)),
    "qr": lambda A, B: LA.qr(A),
    "eigvalsh": lambda A, B: LA.eigvalsh(A + A.mH),
    "svdvals": lambda A, B: LA.svdvals(A),
    "pinv": lambda A, B: LA.pinv(A),
    "lstsq": lambda A, B: LA.lstsq(A, B).solution,
    "lu_factor": lambda A, B: LA.lu_factor(A),
    "eigvals": lambda A, B: LA.eigvals(A),
    "matrix_rank": lambda A, B: LA.matrix_rank(A),
    "cond": lambda A, B: LA.cond(A),
    "matrix_norm_2": lambda A, B: LA.matrix_norm(A, 2),
    "matrix_exp": lambda A, B: LA.matrix_exp(A * 0.1),
    "matrix_power": lambda A, B: (LA.matrix_power(A, -2), LA.matrix_power(A, 0)),
}


@pytest.mark.parametrize("name", sorted(_CASES))
@pytest.mark.parametrize("dtype", [ember.float64, ember.complex128])
def test_results_come_back_on_the_device(name, dtype):
    A, B = _mat(4, 1, dtype, batch=(2,)), _mat(4, 2, dtype, batch=(2,))
    host = _flat(_CASES[name](A, B))
    dev = _flat(_CASES[name](A.to(DEV), B.to(DEV)))
    assert len(dev) == len(host)
    for d, h in zip(dev, host):
        assert d.device.type == "cuda" and d.dtype == h.dtype and d.shape == h.shape
        np.testing.assert_allclose(d.cpu().numpy(), h.numpy(), rtol=1e-10, atol=1e-12)


def test_gradients_reach_the_device_leaves():
    A, B = _mat(3, 3, ember.float64), _mat(3, 4, ember.float64)[:, :2]
    grads = []
    for dev in ("cpu", DEV):
        a, b = (t.detach().to(dev).requires_grad_() for t in (A, B))
        (LA.inv(a).sum() + LA.det(a) + LA.solve(a, b).pow(2).sum()).backward()
        grads.append((a.grad, b.grad))
    for d, h in zip(grads[1], grads[0]):
        assert d.device.type == "cuda"
        np.testing.assert_allclose(d.cpu().numpy(), h.numpy(), rtol=1e-10)


def test_out_legacy_names_and_errors():
    A = _mat(3, 5, ember.float64)
    Ad = A.to(DEV)
    out = ember.empty(3, 3, dtype=ember.float64, device=DEV)
    r = LA.inv(Ad, out=out)
    assert r is out
    np.testing.assert_allclose(out.cpu().numpy(), LA.inv(A).numpy(), rtol=1e-12)
    for got, want in ((ember.inverse(Ad), ember.inverse(A)), (Ad.det(), A.det()),
                      (ember.svd(Ad).S, ember.svd(A).S), (Ad.cholesky_inverse(), None)):
        assert got.device.type == "cuda"
        if want is not None:
            np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=1e-10)
    with pytest.raises(RuntimeError, match="same device"):
        LA.solve(Ad, A)
    with pytest.raises(LA.LinAlgError, match="singular"):
        LA.inv(ember.zeros(2, 2, dtype=ember.float64, device=DEV))
