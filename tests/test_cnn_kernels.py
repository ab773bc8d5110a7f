"""The CNN training kernels: max pooling's fast paths, and fused batch_norm,
group_norm and instance_norm (forward, backward, running statistics) against
PyTorch, double backward through the composed form, and bit-identical results
across thread counts."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _threads(fn):
    """fn() at 1 and at 2 threads (the previous count restored)"""
    old = ember.get_num_threads()
    try:
        out = []
        for n in (1, 2):
            ember.set_num_threads(n)
            out.append(fn())
        return out
    finally:
        ember.set_num_threads(old)


def _tol(dtype):
    return dict(rtol=2e-5, atol=2e-5) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)


# ---------------------------------------------------------------- max pooling
@pytest.mark.parametrize("hw", [(8, 8), (9, 19), (24, 24), (5, 34)])
@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=2, stride=1),
                                dict(kernel_size=3, stride=3), dict(kernel_size=(2, 3),
                                                                    stride=(2, 2))])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_max_pool2d_inside_windows_match_torch(hw, kw, dtype):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3) + hw).astype(dtype)
    x[0, 0, :2, :4] = 1.0                      # ties: the first in scan order wins
    x[0, 1, 1, 1] = x[0, 1, 0, 3] = np.nan     # NaNs: the last one in the window wins
    x[1, 2, 2:4, 2:4] = np.nan
    y, i = F.max_pool2d(ember.tensor(x), return_indices=True, **kw)
    ty, ti = TF.max_pool2d(torch.tensor(x), return_indices=True, **kw)
    np.testing.assert_array_equal(y.numpy(), ty.numpy())
    np.testing.assert_array_equal(i.numpy(), ti.numpy())
    ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    g = rng.standard_normal(ty.shape).astype(dtype)
    F.max_pool2d(ex, **kw).backward(ember.tensor(g))
    TF.max_pool2d(tx, **kw).backward(torch.tensor(g))
    np.testing.assert_array_equal(ex.grad.numpy(), tx.grad.numpy())


def test_max_pool2d_thread_count_identity():
    x = ember.randn(8, 16, 24, 24)
    a, b = _threads(lambda: F.max_pool2d(x, 2, return_indices=True))
    assert a[0].numpy().tobytes() == b[0].numpy().tobytes()
    assert a[1].numpy().tobytes() == b[1].numpy().tobytes()


# ---------------------------------------------------------------- batch_norm
def _bn_pair(C, affine, track, dtype, training):
    mods = []
    for T in (ember, torch):
        m = T.nn.BatchNorm2d(C, affine=affine, track_running_stats=track,
                             dtype=getattr(T, np.dtype(dtype).name))
        with T.no_grad():
            if affine:
                m.weight.copy_(T.linspace(0.5, 1.5, C, dtype=m.weight.dtype))
                m.bias.copy_(T.linspace(-1, 1, C, dtype=m.weight.dtype))
            if track:
                m.running_mean.copy_(T.linspace(-0.3, 0.3, C, dtype=m.running_mean.dtype))
                m.running_var.copy_(T.linspace(0.5, 2.0, C, dtype=m.running_mean.dtype))
        mods.append(m.train(training))
    return mods


@pytest.mark.parametrize("shape", [(4, 3, 5, 7), (2, 5, 1, 1), (3, 4, 16, 17), (6, 3)])
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_batch_norm_matches_torch(shape, training, affine, dtype):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(shape) * 2 + 0.5).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    C = shape[1]
    outs = []
    for T, m in zip((ember, torch), _bn_pair(C, affine, True, dtype, training)):
        if len(shape) == 2:
            m = (ember.nn.BatchNorm1d if T is ember else torch.nn.BatchNorm1d)(
                C, affine=affine, dtype=getattr(T, np.dtype(dtype).name)).train(training)
        xt = T.tensor(x, requires_grad=True)
        y = m(xt)
        y.backward(T.tensor(g))
        res = [y.detach().numpy(), xt.grad.numpy(), m.running_mean.numpy(),
               m.running_var.numpy()]
        if affine:
            res += [m.weight.grad.numpy(), m.bias.grad.numpy()]
        outs.append(res)
        if T is ember:
            assert type(y.grad_fn).__name__ == "NativeBatchNormBackward0"
    for a, b in zip(*outs):
        np.testing.assert_allclose(a, b, **_tol(dtype))


def test_batch_norm_functional_variants_and_momentum_none():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((5, 4, 3, 3)).astype(np.float32)
    # no running stats in training; weight only; bias only
    for w, b in ((None, None), (np.linspace(0.5, 1.5, 4), None), (None, np.ones(4))):
        args = [None if v is None else v.astype(np.float32) for v in (w, b)]
        ey = F.batch_norm(ember.tensor(x), None, None,
                          *[None if a is None else ember.tensor(a) for a in args], True)
        ty = TF.batch_norm(torch.tensor(x), None, None,
                           *[None if a is None else torch.tensor(a) for a in args], True)
        np.testing.assert_allclose(ey.numpy(), ty.numpy(), rtol=1e-5, atol=1e-6)
    # momentum=None: cumulative moving average over the batches seen
    em, tm = (T.nn.BatchNorm2d(4, momentum=None) for T in (ember, torch))
    for k in range(3):
        xk = x * (k + 1)
        em(ember.tensor(xk)), tm(torch.tensor(xk))
    np.testing.assert_allclose(em.running_mean.numpy(), tm.running_mean.numpy(), rtol=1e-5)
    np.testing.assert_allclose(em.running_var.numpy(), tm.running_var.numpy(), rtol=1e-5)
    assert int(em.num_batches_tracked) == 3
    # running stats are updated in place: their version moves, their identity stays
    rm = em.running_mean
    v = rm._version
    em(ember.tensor(x))
    assert em.running_mean is rm and rm._version > v
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        F.batch_norm(ember.ones(1, 3), None, None, training=True)


def test_batch_norm_double_backward_matches_torch():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 2, 4, 4))
    for training in (True, False):
        res = []
        for T in (ember, torch):
            m = T.nn.BatchNorm2d(2, dtype=T.float64).train(training)
            with T.no_grad():
                m.weight.copy_(T.tensor([0.7, 1.3], dtype=T.float64))
                m.running_var.copy_(T.tensor([0.5, 2.0], dtype=T.float64))
            xt = T.tensor(x, requires_grad=True)
            gx, gw = T.autograd.grad((m(xt) ** 3).sum(), (xt, m.weight), create_graph=True)
            (gx.square().sum() + gw.sum()).backward()
            res.append((xt.grad.numpy(), m.weight.grad.numpy()))
        for a, b in zip(*res):
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10)


def test_batch_norm_thread_count_identity():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((16, 8, 20, 20)).astype(np.float32) + 3

    def run():
        m = ember.nn.BatchNorm2d(8)
        xt = ember.tensor(x, requires_grad=True)
        y = m(xt)
        y.backward(ember.tensor(x[::-1].copy()))
        return [t.numpy().tobytes() for t in (y.detach(), xt.grad, m.weight.grad, m.bias.grad,
                                              m.running_mean, m.running_var)]
    a, b = _threads(run)
    assert a == b


# ---------------------------------------------------------------- group_norm
@pytest.mark.parametrize("shape, G", [((2, 6, 5, 7), 3), ((3, 4, 9), 4), ((2, 8, 33, 31), 2),
                                      ((4, 6), 1), ((2, 6, 1, 1), 3)])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_group_norm_matches_torch(shape, G, affine, dtype):
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(shape) * 3 - 1).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    C = shape[1]
    outs = []
    for T in (ember, torch):
        m = T.nn.GroupNorm(G, C, affine=affine, dtype=getattr(T, np.dtype(dtype).name))
        if affine:
            with T.no_grad():
                m.weight.copy_(T.linspace(0.5, 1.5, C, dtype=m.weight.dtype))
                m.bias.copy_(T.linspace(-1, 1, C, dtype=m.weight.dtype))
        xt = T.tensor(x, requires_grad=True)
        y = m(xt)
        y.backward(T.tensor(g))
        res = [y.detach().numpy(), xt.grad.numpy()]
        if affine:
            res += [m.weight.grad.numpy(), m.bias.grad.numpy()]
        outs.append(res)
        if T is ember:
            assert type(y.grad_fn).__name__ == "NativeGroupNormBackward0"
    for a, b in zip(*outs):
        np.testing.assert_allclose(a, b, **_tol(dtype))


def test_group_norm_double_backward_errors_and_threads():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 4, 3, 3))
    res = []
    for T in (ember, torch):
        w = T.tensor([0.5, 1.0, 1.5, 2.0], dtype=T.float64, requires_grad=True)
        xt = T.tensor(x, requires_grad=True)
        gx, gw = T.autograd.grad((T.nn.functional.group_norm(xt, 2, w) ** 3).sum(), (xt, w),
                                 create_graph=True)
        (gx.square().sum() + gw.sum()).backward()
        res.append((xt.grad.numpy(), w.grad.numpy()))
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10)
    with pytest.raises(RuntimeError, match="divisible by num_groups"):
        F.group_norm(ember.ones(2, 6, 3), 4)
    xl = rng.standard_normal((8, 32, 24, 24)).astype(np.float32)

    def run():
        m = ember.nn.GroupNorm(4, 32)
        xt = ember.tensor(xl, requires_grad=True)
        y = m(xt)
        y.backward(ember.tensor(xl[::-1].copy()))
        return [t.numpy().tobytes() for t in (y.detach(), xt.grad, m.weight.grad, m.bias.grad)]
    a, b = _threads(run)
    assert a == b



# ---------------------------------------------------------------- instance_norm
@pytest.mark.parametrize("shape", [(2, 3, 7), (3, 4, 5, 6), (2, 2, 3, 2, 4)])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("track", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_instance_norm_matches_torch(shape, affine, track, dtype):
    # the fused batch_norm kernel over the (1, N*C, ...) view: values, gradients and the
    # running statistics, in training and in eval
    rng = np.random.default_rng(8)
    x = (rng.standard_normal(shape) * 2 + 1).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    C = shape[1]
    cls = {3: "InstanceNorm1d", 4: "InstanceNorm2d", 5: "InstanceNorm3d"}[len(shape)]
    outs = []
    for T in (ember, torch):
        m = getattr(T.nn, cls)(C, affine=affine, track_running_stats=track, momentum=0.3,
                               dtype=getattr(T, np.dtype(dtype).name))
        if affine:
            with T.no_grad():
                m.weight.copy_(T.linspace(0.5, 1.5, C, dtype=m.weight.dtype))
                m.bias.copy_(T.linspace(-1, 1, C, dtype=m.weight.dtype))
        res = []
        for training in (True, False):
            m.train(training)
            xt = T.tensor(x, requires_grad=True)
            y = m(xt)
            y.backward(T.tensor(g))
            res += [y.detach().numpy(), xt.grad.numpy()]
            if affine:
                res += [m.weight.grad.numpy(), m.bias.grad.numpy()]
            if track:
                res += [m.running_mean.numpy().copy(), m.running_var.numpy().copy()]
        outs.append(res)
    for a, b in zip(*outs):
        np.testing.assert_allclose(a, b, **_tol(dtype))


def test_instance_norm_fused_double_backward_errors_and_threads():
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 3, 4, 4))
    res = []
    for T in (ember, torch):
        w = T.tensor([0.5, 1.0, 1.5], dtype=T.float64, requires_grad=True)
        xt = T.tensor(x, requires_grad=True)
        gx, gw = T.autograd.grad((T.nn.functional.instance_norm(xt, weight=w) ** 3).sum(),
                                 (xt, w), create_graph=True)
        (gx.square().sum() + gw.sum()).backward()
        res.append((xt.grad.numpy(), w.grad.numpy()))
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10)
    with pytest.raises(ValueError, match="more than 1 spatial element"):
        F.instance_norm(ember.ones(2, 3, 1))
    y = F.instance_norm(ember.ones(2, 3, 4, requires_grad=True))
    assert "BatchNorm" in type(y.grad_fn.next_functions[0][0]).__name__  # the fused node
    xl = rng.standard_normal((8, 16, 20, 20)).astype(np.float32)

    def run():
        m = ember.nn.InstanceNorm2d(16, affine=True, track_running_stats=True)
        xt = ember.tensor(xl, requires_grad=True)
        y = m(xt)
        y.backward(ember.tensor(xl[::-1].copy()))
        return [t.numpy().tobytes() for t in (y.detach(), xt.grad, m.weight.grad, m.bias.grad,
                                              m.running_mean, m.running_var)]
    a, b = _threads(run)
    assert a == b

def test_norms_take_any_layout_and_rank():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 4, 5, 6)).astype(np.float32)
    ex = ember.tensor(x).to(memory_format=ember.channels_last).requires_grad_()
    tx = torch.tensor(x).to(memory_format=torch.channels_last).requires_grad_()
    g = rng.standard_normal(x.shape).astype(np.float32)
    for fe, ft in ((lambda t: F.batch_norm(t, None, None, training=True),
                    lambda t: TF.batch_norm(t, None, None, training=True)),
                   (lambda t: F.group_norm(t, 2), lambda t: TF.group_norm(t, 2))):
        ex.grad, tx.grad = None, None
        ey, ty = fe(ex), ft(tx)
        ey.backward(ember.tensor(g))
        ty.backward(torch.tensor(g))
        np.testing.assert_allclose(ey.detach().numpy(), ty.detach().numpy(), rtol=1e-5,
                                   atol=1e-5)
        np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-5)
    x5 = rng.standard_normal((2, 3, 2, 3, 4))
    em, tm = ember.nn.BatchNorm3d(3, dtype=ember.float64), torch.nn.BatchNorm3d(
        3, dtype=torch.float64)
    np.testing.assert_allclose(em(ember.tensor(x5)).detach().numpy(),
                               tm(torch.tensor(x5)).detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(em.running_var.numpy(), tm.running_var.numpy(), rtol=1e-12)
    # a non-contiguous running buffer takes the composed path, with the same result
    rm = ember.zeros(6)[::2]
    rv = ember.ones(6)[::2]
    F.batch_norm(ember.tensor(x5), rm, rv, training=True)
    np.testing.assert_allclose(rm.numpy(), tm.running_mean.numpy(), rtol=1e-6)
