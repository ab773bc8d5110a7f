"""mse_loss, smooth_l1_loss, huber_loss and binary_cross_entropy_with_logits through their one-pass kernels: values and
gradients (input and target) against torch, the composed form under create_graph,
and thread-count independence."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

CASES = [("mse_loss", {}), ("smooth_l1_loss", {}), ("smooth_l1_loss", {"beta": 0.3}),
         ("huber_loss", {}), ("huber_loss", {"delta": 2.5}),
         ("binary_cross_entropy_with_logits", {})]


def _data(dtype, n=3001, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * 2).astype(dtype)
    y = (rng.standard_normal(n) * 2).astype(dtype)
    y[:8] = x[:8]                          # zero differences
    y[8:12] = x[8:12] - 1.0                # differences on the beta/delta edge
    x[12], y[13] = np.nan, np.inf          # NaN propagates
    return x, y


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,kw", CASES)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_values_match_torch(name, kw, reduction, dtype):
    x, y = _data(dtype)
    got = getattr(F, name)(ember.from_numpy(x), ember.from_numpy(y), reduction=reduction, **kw)
    want = getattr(TF, name)(torch.from_numpy(x), torch.from_numpy(y), reduction=reduction, **kw)
    assert got.dtype == ember.float32 if dtype == np.float32 else ember.float64
    # bce's two terms cancel: an absolute tolerance of a few ulps of the terms
    tol = dict(rtol=2e-6, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(got.numpy(), want.numpy(), equal_nan=True, **tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,kw", CASES)
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_gradients_match_torch(name, kw, reduction, dtype):
    x, y = _data(dtype)
    x[12], y[13] = 0.5, -0.25                # finite: the mean's gradient stays finite
    ex, ey = ember.from_numpy(x).requires_grad_(), ember.from_numpy(y).requires_grad_()
    tx, ty = torch.from_numpy(x).requires_grad_(), torch.from_numpy(y).requires_grad_()
    le = getattr(F, name)(ex, ey, reduction=reduction, **kw)
    lt = getattr(TF, name)(tx, ty, reduction=reduction, **kw)
    (le * 3.0).backward()
    (lt * 3.0).backward()
    # sigmoid(x) - t cancels: absolute tolerances of a few ulps of the terms (times 3)
    tol = dict(rtol=2e-6, atol=5e-7) if dtype == np.float32 else dict(rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(le.detach().numpy(), lt.detach().numpy(), **tol)
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), **tol)
    np.testing.assert_allclose(ey.grad.numpy(), ty.grad.numpy(), **tol)


@pytest.mark.parametrize("name,kw", CASES)
def test_only_target_requires_grad(name, kw):
    x, y = _data(np.float64)
    x[12], y[13] = 0.5, -0.25
    ey = ember.from_numpy(y).requires_grad_()
    ty = torch.from_numpy(y).requires_grad_()
    getattr(F, name)(ember.from_numpy(x), ey, **kw).backward()
    getattr(TF, name)(torch.from_numpy(x), ty, **kw).backward()
    np.testing.assert_allclose(ey.grad.numpy(), ty.grad.numpy(), rtol=1e-13, atol=1e-18)


@pytest.mark.parametrize("name,kw", CASES)
def test_double_backward_matches_torch(name, kw):
    x, y = _data(np.float64, n=64, seed=1)
    x[12], y[13] = 0.5, -0.25
    ex, tx = ember.from_numpy(x).requires_grad_(), torch.from_numpy(x).requires_grad_()
    ge, = ember.autograd.grad(getattr(F, name)(ex, ember.from_numpy(y), **kw), ex,
                              create_graph=True)
    gt, = torch.autograd.grad(getattr(TF, name)(tx, torch.from_numpy(y), **kw), tx,
                              create_graph=True)
    np.testing.assert_allclose(ge.detach().numpy(), gt.detach().numpy(), rtol=1e-13, atol=1e-18)
    (ge * ember.from_numpy(x)).sum().backward()
    (gt * torch.from_numpy(x)).sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-18)


@pytest.mark.parametrize("name,kw", CASES)
def test_strided_broadcast_and_none_under_autograd_match_torch(name, kw):
    x, y = _data(np.float32, n=400)
    x[12], y[13] = 0.5, -0.25
    ex = ember.from_numpy(x).reshape(20, 20).requires_grad_()
    tx = torch.from_numpy(x).reshape(20, 20).requires_grad_()
    ey, ty = ember.from_numpy(y).reshape(20, 20).t(), torch.from_numpy(y).reshape(20, 20).t()
    le = getattr(F, name)(ex, ey, reduction="none", **kw)
    lt = getattr(TF, name)(tx, ty, reduction="none", **kw)
    le.sum().backward()
    lt.sum().backward()
    np.testing.assert_allclose(le.detach().numpy(), lt.detach().numpy(), rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=2e-6, atol=2e-7)
    if name == "binary_cross_entropy_with_logits":
        with pytest.raises(ValueError, match="must be the same as input size"):
            F.binary_cross_entropy_with_logits(ex, ey.reshape(400, 1))
        return
    with pytest.warns(UserWarning, match="target size"):
        rb = getattr(F, name)(ember.from_numpy(x[:20]), ember.from_numpy(y[:20]).reshape(20, 1))
    with pytest.warns(UserWarning):
        rt = getattr(TF, name)(torch.from_numpy(x[:20]), torch.from_numpy(y[:20]).reshape(20, 1))
    np.testing.assert_allclose(float(rb), float(rt), rtol=2e-6)


@pytest.mark.parametrize("name,kw", CASES)
def test_thread_count_independent(name, kw):
    x, y = _data(np.float32, n=1 << 18)
    x[12], y[13] = 0.5, -0.25
    out = []
    old = ember.get_num_threads()
    try:
        for th in (1, 2):
            ember.set_num_threads(th)
            ex = ember.from_numpy(x).requires_grad_()
            loss = getattr(F, name)(ex, ember.from_numpy(y), reduction="none", **kw)
            getattr(F, name)(ex, ember.from_numpy(y), **kw).backward()
            out.append((loss.detach().numpy(), ex.grad.numpy()))
    finally:
        ember.set_num_threads(old)
    np.testing.assert_array_equal(out[0][0], out[1][0])
    np.testing.assert_array_equal(out[0][1], out[1][1])
