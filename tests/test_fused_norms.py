"""Fused rms_norm kernel (forward and backward): parity with PyTorch, double
backward through the composed form, and bit-identical results across thread counts."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape, norm", [((4, 7, 33), (33,)), ((3, 5, 6), (5, 6)), ((1, 1), (1,))])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("eps", [None, 1e-3])
def test_rms_norm_matches_torch(dtype, shape, norm, weighted, eps):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 2).astype(dtype)
    w = rng.uniform(0.5, 1.5, norm).astype(dtype) if weighted else None
    tol = dict(rtol=2e-5, atol=2e-6) if dtype == "float32" else dict(rtol=1e-11, atol=1e-12)
    ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ew = ember.tensor(w, requires_grad=True) if weighted else None
    tw = torch.tensor(w, requires_grad=True) if weighted else None
    ey, ty = F.rms_norm(ex, norm, ew, eps), torch.nn.functional.rms_norm(tx, norm, tw, eps)
    np.testing.assert_allclose(ey.detach().numpy(), ty.detach().numpy(), **tol)
    g = rng.standard_normal(shape).astype(dtype)
    ey.backward(ember.tensor(g))
    ty.backward(torch.tensor(g))
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), **tol)
    if weighted:
        np.testing.assert_allclose(ew.grad.numpy(), tw.grad.numpy(), **tol)
    with ember.no_grad():
        ny = F.rms_norm(ex, norm, ew, eps)
    np.testing.assert_array_equal(ny.numpy(), ey.detach().numpy())


def test_rms_norm_module_and_double_backward():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 8))
    w = rng.uniform(0.5, 1.5, 8)
    ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ew, tw = ember.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
    eg = ember.autograd.grad((F.rms_norm(ex, (8,), ew) ** 3).sum(), (ex, ew), create_graph=True)
    tg = torch.autograd.grad((torch.nn.functional.rms_norm(tx, (8,), tw) ** 3).sum(), (tx, tw),
                             create_graph=True)
    (eg[0].square().sum() + eg[1].sum()).backward()
    (tg[0].square().sum() + tg[1].sum()).backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ew.grad.numpy(), tw.grad.numpy(), rtol=1e-10, atol=1e-12)
    m = ember.nn.RMSNorm(8, eps=1e-6)
    np.testing.assert_allclose(m(ember.tensor(x)).detach().numpy(),
                               torch.nn.RMSNorm(8, eps=1e-6, dtype=torch.float64)(
                                   torch.tensor(x)).detach().numpy(), rtol=1e-12)


def test_rms_norm_errors_and_thread_count():
    with pytest.raises(RuntimeError, match="normalized_shape"):
        F.rms_norm(ember.ones(3, 4), (5,))
    with pytest.raises(RuntimeError, match="weight"):
        F.rms_norm(ember.ones(3, 4), (4,), ember.ones(5))
    rng = np.random.default_rng(2)
    x = rng.standard_normal((300, 1000)).astype(np.float32)
    w = rng.uniform(0.5, 1.5, 1000).astype(np.float32)
    outs = []
    old = ember.get_num_threads()
    try:
        for n in (1, 2):
            ember.set_num_threads(n)
            ex, ew = ember.tensor(x, requires_grad=True), ember.tensor(w, requires_grad=True)
            y = F.rms_norm(ex, (1000,), ew)
            y.backward(ember.ones_like(y))
            outs.append([y.detach().numpy().tobytes(), ex.grad.numpy().tobytes(),
                         ew.grad.numpy().tobytes()])
    finally:
        ember.set_num_threads(old)
    assert outs[0] == outs[1]
