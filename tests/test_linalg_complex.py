"""``ember.linalg`` on complex64/complex128 (LAPACK's c/z routines) against torch: values,
LinAlgError behaviour and gradients in torch's conjugate Wirtinger convention.  Losses on
eigen/singular vectors are the gauge-invariant ones torch accepts."""
import numpy as np
import pytest

import ember
from tests.test_complex import _c, _close, _grad_parity

torch = pytest.importorskip("torch")

LA, TLA = ember.linalg, None


def setup_module():
    global TLA
    TLA = torch.linalg


def _herm(rng, n, dt=np.complex128, batch=()):
    a = _c(rng, *batch, n, n, dtype=dt)
    return (a @ np.swapaxes(a.conj(), -1, -2) + n * np.eye(n)).astype(dt)


def _pair(a):
    return ember.tensor(a), torch.tensor(a)


def _rc(x):
    return x.resolve_conj() if hasattr(x, "resolve_conj") else x


# --- forward parity ---------------------------------------------------------------------

@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_det_inv_solve(dt):
    rng = np.random.default_rng(1)
    tol = dict(rtol=1e-4, atol=1e-4) if dt == np.complex64 else dict(rtol=1e-10, atol=1e-10)
    (e, t), (eb, tb) = _pair(_c(rng, 2, 4, 4, dtype=dt)), _pair(_c(rng, 2, 4, 3, dtype=dt))
    _close(LA.det(e), TLA.det(t), **tol)
    _close(ember.det(e), torch.det(t), **tol)
    _close(LA.inv(e), TLA.inv(t), **tol)
    _close(LA.inv_ex(e).inverse, TLA.inv_ex(t).inverse, **tol)
    _close(LA.solve(e, eb), TLA.solve(t, tb), **tol)
    _close(LA.solve(e, eb[..., 0]), TLA.solve(t, tb[..., 0]), **tol)
    _close(LA.solve(e, eb.mT, left=False), _rc(TLA.solve(t, tb.mT, left=False)), **tol)
    s, la = LA.slogdet(e)
    ts, tla = TLA.slogdet(t)
    _close(s, ts, **tol)
    _close(la, tla, **tol)
    _close(ember.logdet(e), torch.logdet(t), **tol)
    _close(LA.solve_triangular(e.triu(), eb, upper=True),
           TLA.solve_triangular(t.triu(), tb, upper=True), **tol)
    _close(LA.solve_triangular(e.tril(), eb.mT, upper=False, left=False),
           TLA.solve_triangular(t.tril(), tb.mT, upper=False, left=False), **tol)


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_lu_family(dt):
    rng = np.random.default_rng(2)
    tol = dict(rtol=1e-4, atol=1e-4) if dt == np.complex64 else dict(rtol=1e-10, atol=1e-10)
    (e, t), (eb, tb) = _pair(_c(rng, 4, 4, dtype=dt)), _pair(_c(rng, 4, 2, dtype=dt))
    for a, b in zip(LA.lu(e), TLA.lu(t)):
        _close(a, b, **tol)
    LU, piv = LA.lu_factor(e)
    tLU, tpiv = TLA.lu_factor(t)
    _close(LU, tLU, **tol)
    for kw in ({}, {"adjoint": True}):
        _close(LA.lu_solve(LU, piv, eb, **kw), TLA.lu_solve(tLU, tpiv, tb, **kw), **tol)
        _close(LA.lu_solve(LU, piv, eb.mT, left=False, **kw),
               _rc(TLA.lu_solve(tLU, tpiv, tb.mT, left=False, **kw)), **tol)


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_cholesky_family(dt):
    rng = np.random.default_rng(3)
    tol = dict(rtol=1e-4, atol=1e-4) if dt == np.complex64 else dict(rtol=1e-10, atol=1e-10)
    (e, t), (eb, tb) = _pair(_herm(rng, 4, dt, (2,))), _pair(_c(rng, 2, 4, 3, dtype=dt))
    for upper in (False, True):
        Le, Lt = LA.cholesky(e, upper=upper), TLA.cholesky(t, upper=upper)
        _close(Le, _rc(Lt), **tol)
        _close(ember.cholesky_solve(eb, Le, upper), torch.cholesky_solve(tb, _rc(Lt), upper),
               **tol)
        _close(ember.cholesky_inverse(Le[0], upper), torch.cholesky_inverse(_rc(Lt)[0], upper),
               **tol)
    LD, piv = LA.ldl_factor(e, hermitian=True)
    tLD, tpiv = TLA.ldl_factor(t, hermitian=True)
    _close(LA.ldl_solve(LD, piv, eb, hermitian=True), TLA.ldl_solve(tLD, tpiv, tb, hermitian=True),
           **tol)
    sym = e + e.mT
    _close(LA.ldl_solve(*LA.ldl_factor(sym), eb), TLA.ldl_solve(*TLA.ldl_factor(t + t.mT), tb),
           **tol)
    # not positive-definite: the same error as torch
    bad = -e
    with pytest.raises(torch.linalg.LinAlgError) as te:
        TLA.cholesky(-t)
    with pytest.raises(ember.linalg.LinAlgError, match="positive-definite") as ee:
        LA.cholesky(bad)
    assert "leading minor" in str(te.value) and "leading minor" in str(ee.value)
    assert LA.cholesky_ex(bad).info.tolist() == TLA.cholesky_ex(-t).info.tolist()


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4)])
def test_qr_svd(dt, shape):
    rng = np.random.default_rng(4)
    tol = dict(rtol=1e-4, atol=1e-4) if dt == np.complex64 else dict(rtol=1e-9, atol=1e-9)
    e, t = _pair(_c(rng, 2, *shape, dtype=dt))
    for mode in ("reduced", "complete"):
        Q, R = LA.qr(e, mode=mode)
        tQ, tR = TLA.qr(t, mode=mode)
        _close(Q, tQ, **tol)
        _close(R, tR, **tol)
        _close(Q @ R, t, **tol)
    _close(LA.qr(e, mode="r").R, TLA.qr(t, mode="r").R, **tol)
    _close(LA.svdvals(e), TLA.svdvals(t), **tol)
    for full in (False, True):
        U, S, Vh = LA.svd(e, full_matrices=full)
        tU, tS, tVh = TLA.svd(t, full_matrices=full)
        _close(S, tS, **tol)
        assert U.shape == tU.shape and Vh.shape == tVh.shape
        k = S.shape[-1]
        _close((U[..., :k] * S.to(e.dtype).unsqueeze(-2)) @ Vh[..., :k, :], t, **tol)
        # singular vectors agree with torch's up to a phase per pair
        ph = (U[..., :k].conj() * torch_to_ember(tU[..., :k])).sum(-2)
        _close(ph.abs(), torch.ones(ph.shape, dtype=tS.dtype), **tol)
    U, S, V = ember.svd(e)
    _close(U @ ember.diag_embed(S).to(e.dtype) @ V.mH, t, **tol)


def torch_to_ember(x):
    return ember.tensor(_rc(x).numpy())


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_eigh(dt):
    rng = np.random.default_rng(5)
    tol = dict(rtol=1e-4, atol=1e-4) if dt == np.complex64 else dict(rtol=1e-9, atol=1e-9)
    e, t = _pair(_herm(rng, 5, dt, (3,)))
    for uplo in ("L", "U"):
        w, V = LA.eigh(e, UPLO=uplo)
        tw, tV = TLA.eigh(t, UPLO=uplo)
        _close(w, tw, **tol)
        _close(LA.eigvalsh(e, UPLO=uplo), TLA.eigvalsh(t, UPLO=uplo), **tol)
        _close((V * w.to(e.dtype).unsqueeze(-2)) @ V.mH, t, **tol)
        _close(V.abs(), tV.abs(), **tol)


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_lstsq_pinv_rank_cond(dt):
    rng = np.random.default_rng(6)
    tol = dict(rtol=1e-3, atol=1e-4) if dt == np.complex64 else dict(rtol=1e-8, atol=1e-9)
    (e, t), (eb, tb) = _pair(_c(rng, 6, 3, dtype=dt)), _pair(_c(rng, 6, 2, dtype=dt))
    for drv in ("gels", "gelsy", "gelsd", "gelss"):
        r, tr = LA.lstsq(e, eb, driver=drv), TLA.lstsq(t, tb, driver=drv)
        _close(r.solution, tr.solution, **tol)
        if drv != "gelsy":
            _close(r.residuals, tr.residuals, **tol)
        if drv in ("gelsd", "gelss"):
            _close(r.singular_values, tr.singular_values, **tol)
    _close(LA.pinv(e), TLA.pinv(t), **tol)
    h, th = _pair(_herm(rng, 4, dt))
    _close(LA.pinv(h, hermitian=True), TLA.pinv(th, hermitian=True), **tol)
    _close(LA.matrix_rank(e), TLA.matrix_rank(t))
    sq, tsq = _pair(_c(rng, 4, 4, dtype=dt))
    for p in (None, 1, "fro", "nuc", -2):
        _close(LA.cond(sq, p), TLA.cond(tsq, p), **tol)
    _close(LA.matrix_norm(sq, "nuc"), TLA.matrix_norm(tsq, "nuc"), **tol)
    _close(LA.matrix_exp(sq), TLA.matrix_exp(tsq), **tol)


def test_householder_geqrf_ormqr():
    rng = np.random.default_rng(7)
    e, t = _pair(_c(rng, 5, 3, dtype=np.complex128))
    a, tau = ember.geqrf(e)
    ta, ttau = torch.geqrf(t)
    _close(a, ta, rtol=1e-10, atol=1e-10)
    _close(LA.householder_product(a, tau), TLA.householder_product(ta, ttau), rtol=1e-10,
           atol=1e-10)
    c, tc = _pair(_c(rng, 5, 2, dtype=np.complex128))
    for tr in (False, True):
        _close(ember.ormqr(a, tau, c, transpose=tr), torch.ormqr(ta, ttau, tc, transpose=tr),
               rtol=1e-10, atol=1e-10)


def test_singular_errors_match_torch():
    e, t = _pair(np.zeros((2, 3, 3), dtype=np.complex64))
    for fe, ft in ((LA.inv, TLA.inv), (lambda a: LA.solve(a, a), lambda a: TLA.solve(a, a))):
        with pytest.raises(torch.linalg.LinAlgError) as te:
            ft(t)
        with pytest.raises(ember.linalg.LinAlgError) as ee:
            fe(e)
        assert "singular" in str(te.value) and "singular" in str(ee.value)
    assert LA.inv_ex(e).info.tolist() == TLA.inv_ex(t).info.tolist()
    assert LA.det(e).tolist() == [0j, 0j]
    with pytest.raises(RuntimeError, match="same dtype"):
        LA.solve(e, e.to(ember.complex128))


# --- gradients ----------------------------------------------------------------------------

def _sq(rng, n=4, batch=()):
    return _c(rng, *batch, n, n, dtype=np.complex128) + 2 * np.eye(n)


_GRADS = {
    "det": (lambda L: lambda a: L.linalg.det(a), "sq"),
    "det_batched": (lambda L: lambda a: L.linalg.det(a), "sqb"),
    "slogdet": (lambda L: lambda a: L.linalg.slogdet(a)[1] * 2 + L.linalg.slogdet(a)[0], "sq"),
    "slogdet_sign": (lambda L: lambda a: L.linalg.slogdet(a)[0], "sq"),
    "logdet": (lambda L: lambda a: L.logdet(a), "sq"),
    "inv": (lambda L: lambda a: L.linalg.inv(a), "sq"),
    "solve": (lambda L: lambda a, b: L.linalg.solve(a, b), "sq,rect"),
    "solve_right": (lambda L: lambda a, b: L.linalg.solve(a, b.mT, left=False), "sq,rect"),
    "solve_triangular": (lambda L: lambda a, b: L.linalg.solve_triangular(a.triu(), b,
                                                                        upper=True), "sq,rect"),
    "cholesky": (lambda L: lambda a: L.linalg.cholesky(a @ a.mH + 4 * L.eye(4)), "sq"),
    "cholesky_upper": (lambda L: lambda a: L.linalg.cholesky(a @ a.mH + 4 * L.eye(4),
                                                             upper=True), "sq"),
    "cholesky_solve": (lambda L: lambda a, b: L.cholesky_solve(
        b, L.linalg.cholesky(a @ a.mH + 4 * L.eye(4))), "sq,rect"),
    "cholesky_inverse": (lambda L: lambda a: L.cholesky_inverse(
        L.linalg.cholesky(a @ a.mH + 4 * L.eye(4))), "sq"),
    "qr_Q": (lambda L: lambda a: L.linalg.qr(a).Q, "tall"),
    "qr_R": (lambda L: lambda a: L.linalg.qr(a).R, "tall"),
    "qr_wide": (lambda L: lambda a: L.linalg.qr(a.mT).Q * 2 + L.linalg.qr(a.mT).R.sum(), "tall"),
    "eigh_values": (lambda L: lambda a: L.linalg.eigvalsh(a + a.mH), "sq"),
    "eigh_vectors": (lambda L: lambda a: (lambda w, v: (v * w.unsqueeze(-2)) @ v.mH + v.abs())(
        *L.linalg.eigh(a + a.mH)), "sq"),
    "svd_values": (lambda L: lambda a: L.linalg.svdvals(a), "tall"),
    "svd_vectors": (lambda L: lambda a: (lambda u, s, vh: u @ vh + u.abs().sum() * s.sum())(
        *L.linalg.svd(a, full_matrices=False)), "sq"),
    "svd_tall": (lambda L: lambda a: (lambda u, s, vh: (u * s.unsqueeze(-2)) @ vh + u @ vh)(
        *L.linalg.svd(a, full_matrices=False)), "tall"),
    "pinv": (lambda L: lambda a: L.linalg.pinv(a), "tall"),
    "lstsq": (lambda L: lambda a, b: L.linalg.lstsq(a, b).solution, "tall,tallb"),
    "lu": (lambda L: lambda a: L.linalg.lu(a).L + L.linalg.lu(a).U, "sq"),
    "lu_solve": (lambda L: lambda a, b: L.linalg.lu_solve(*L.linalg.lu_factor(a), b,
                                                          adjoint=True), "sq,rect"),
    "matrix_exp": (lambda L: lambda a: L.linalg.matrix_exp(a * 0.3), "sq"),
    "eig_values": (lambda L: lambda a: L.linalg.eigvals(a), "sq"),
    "eig_vectors": (lambda L: lambda a: (lambda w, v: v.abs() + w.unsqueeze(-2))(
        *L.linalg.eig(a)), "sq"),
}


@pytest.mark.parametrize("name", list(_GRADS))
def test_gradients(name):
    make, kinds = _GRADS[name]
    rng = np.random.default_rng(8)
    arrays = {"sq": lambda: _sq(rng), "sqb": lambda: _sq(rng, 3, (2,)),
              "rect": lambda: _c(rng, 4, 2, dtype=np.complex128),
              "tall": lambda: _c(rng, 5, 3, dtype=np.complex128),
              "tallb": lambda: _c(rng, 5, 2, dtype=np.complex128)}
    _grad_parity(make(ember), make(torch), *[arrays[k]() for k in kinds.split(",")],
                 rtol=1e-7, atol=1e-8)


def test_eig_gradient_real_input():
    rng = np.random.default_rng(9)
    a = rng.standard_normal((4, 4))
    _grad_parity(lambda x: ember.linalg.eigvals(x), lambda x: torch.linalg.eigvals(x), a,
                 rtol=1e-7, atol=1e-8)
    _grad_parity(lambda x: ember.linalg.eig(x).eigenvectors.abs(),
                 lambda x: torch.linalg.eig(x).eigenvectors.abs(), a, rtol=1e-7, atol=1e-8)
