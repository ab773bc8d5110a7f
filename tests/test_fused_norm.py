"""layer_norm's fused kernels (forward, backward): parity with PyTorch, the
composed path they replace, and bit-identical results across thread counts."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F

RNG = np.random.default_rng(2)


def _run(lib, x, shape, w, b, g, eps=1e-5):
    xt = lib.from_numpy(x.copy()).requires_grad_()
    wt = None if w is None else lib.from_numpy(w.copy()).requires_grad_()
    bt = None if b is None else lib.from_numpy(b.copy()).requires_grad_()
    y = lib.nn.functional.layer_norm(xt, shape, wt, bt, eps)
    y.backward(lib.from_numpy(g))
    grads = [t.grad.numpy() if t is not None else None for t in (xt, wt, bt)]
    return y.detach().numpy(), grads


CASES = [((16, 64, 128), (128,), np.float32, True, True),
         ((3, 5, 7), (5, 7), np.float64, True, True),
         ((4, 33), (33,), np.float32, False, False),
         ((2, 3, 10), (10,), np.float64, True, False),
         ((2, 3, 10), (10,), np.float32, False, True),
         ((0, 8), (8,), np.float32, True, True)]


@pytest.mark.parametrize("xshape,nshape,dt,has_w,has_b", CASES)
def test_layer_norm_matches_torch(xshape, nshape, dt, has_w, has_b):
    torch = pytest.importorskip("torch")
    x = (RNG.standard_normal(xshape) * 3 + 1).astype(dt)
    w = RNG.standard_normal(nshape).astype(dt) if has_w else None
    b = RNG.standard_normal(nshape).astype(dt) if has_b else None
    g = RNG.standard_normal(xshape).astype(dt)
    ye, ge = _run(ember, x, nshape, w, b, g)
    yt, gt = _run(torch, x, nshape, w, b, g)
    tol = 2e-5 if dt == np.float32 else 1e-12
    assert ye.dtype == yt.dtype
    np.testing.assert_allclose(ye, yt, rtol=tol, atol=tol)
    for a, c in zip(ge, gt):
        assert (a is None) == (c is None)
        if a is not None:
            assert a.shape == c.shape
            np.testing.assert_allclose(a, c, rtol=tol * 10, atol=tol * 10)


def test_layer_norm_matches_composed_path():
    x = RNG.standard_normal((6, 40)).astype(np.float64)
    w = RNG.standard_normal(40)
    b = RNG.standard_normal(40)
    fused = F.layer_norm(ember.from_numpy(x), 40, ember.from_numpy(w), ember.from_numpy(b))
    comp = F._layer_norm_composite(ember.from_numpy(x), 40, ember.from_numpy(w),
                                   ember.from_numpy(b))
    np.testing.assert_allclose(fused.numpy(), comp.numpy(), rtol=1e-13, atol=1e-13)


def test_layer_norm_double_backward_matches_torch():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((3, 8))
    w = RNG.standard_normal(8)
    out = []
    for lib in (ember, torch):
        xt = lib.from_numpy(x.copy()).requires_grad_()
        wt = lib.from_numpy(w.copy()).requires_grad_()
        y = lib.nn.functional.layer_norm(xt, (8,), wt, None)
        gx, = lib.autograd.grad((y * y * y).sum(), (xt,), create_graph=True)
        (gx * gx).sum().backward()
        out.append((gx.detach().numpy(), xt.grad.numpy(), wt.grad.numpy()))
    for a, c in zip(*out):
        np.testing.assert_allclose(a, c, rtol=1e-9, atol=1e-10)


def test_layer_norm_bit_identical_across_thread_counts():
    x = RNG.standard_normal((512, 256)).astype(np.float32)
    w = RNG.standard_normal(256).astype(np.float32)
    b = RNG.standard_normal(256).astype(np.float32)
    g = RNG.standard_normal((512, 256)).astype(np.float32)
    old = ember.get_num_threads()
    res = []
    try:
        for n in (1, 2):
            ember.set_num_threads(n)
            y, grads = _run(ember, x, (256,), w, b, g)
            res.append([y.tobytes()] + [a.tobytes() for a in grads])
    finally:
        ember.set_num_threads(old)
    assert res[0] == res[1]


def test_layer_norm_bad_arguments():
    x = ember.randn(2, 3)
    with pytest.raises(RuntimeError, match="normalized_shape"):
        F.layer_norm(x, (4,))
    with pytest.raises(RuntimeError, match="weight"):
        F.layer_norm(x, (3,), ember.ones(4))


def test_layer_norm_module_uses_fused_node():
    ln = ember.nn.LayerNorm(16)
    y = ln(ember.randn(4, 16, requires_grad=True))
    assert "LayerNorm" in type(y.grad_fn).__name__
