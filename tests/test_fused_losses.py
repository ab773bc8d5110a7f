"""Fused cross-entropy kernel and deterministic embedding backward: parity with
PyTorch (values and gradients) and bit-identical results across thread counts."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F

torch = pytest.importorskip("torch")


def _threads(n):
    class _Ctx:
        def __enter__(self):
            self.before = ember.get_num_threads()
            ember.set_num_threads(n)

        def __exit__(self, *exc):
            ember.set_num_threads(self.before)
    return _Ctx()


def _case(N, C, dtype, ignore=False, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((N, C)) * 3).astype(dtype)
    t = rng.integers(0, C, N).astype(np.int64)
    if ignore:
        t[::3] = -100
    w = rng.uniform(0.2, 2.0, C).astype(dtype)
    return x, t, w


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore", [False, True])
def test_cross_entropy_fused_matches_torch(dtype, reduction, smoothing, weighted, ignore):
    x, t, w = _case(37, 23, dtype, ignore)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-11, atol=1e-12)
    ex = ember.tensor(x, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    ew = ember.tensor(w) if weighted else None
    tw = torch.tensor(w) if weighted else None
    kw = dict(reduction=reduction, label_smoothing=smoothing)
    el = F.cross_entropy(ex, ember.tensor(t), weight=ew, **kw)
    tl = torch.nn.functional.cross_entropy(tx, torch.tensor(t), weight=tw, **kw)
    np.testing.assert_allclose(el.detach().numpy(), tl.detach().numpy(), **tol)
    g = np.random.default_rng(1).standard_normal(tuple(tl.shape)).astype(dtype)
    el.backward(ember.tensor(g))
    tl.backward(torch.tensor(g))
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), **tol)
    with ember.no_grad():  # the forward-only path
        nl = F.cross_entropy(ex, ember.tensor(t), weight=ew, **kw)
    np.testing.assert_array_equal(nl.numpy(), el.detach().numpy())


def test_cross_entropy_fused_double_backward_matches_torch():
    x, t, _ = _case(6, 5, "float64", ignore=True)
    ex = ember.tensor(x, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    (eg,) = ember.autograd.grad(F.cross_entropy(ex, ember.tensor(t), label_smoothing=0.2), ex,
                                create_graph=True)
    (tg,) = torch.autograd.grad(torch.nn.functional.cross_entropy(
        tx, torch.tensor(t), label_smoothing=0.2), tx, create_graph=True)
    (eg * eg).sum().backward()
    (tg * tg).sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_cross_entropy_fused_edge_cases():
    x, t, _ = _case(4, 3, "float32")
    t_all = np.full(4, -100, np.int64)
    e = F.cross_entropy(ember.tensor(x), ember.tensor(t_all))
    assert np.isnan(e.item())
    assert np.isnan(torch.nn.functional.cross_entropy(torch.tensor(x),
                                                      torch.tensor(t_all)).item())
    with pytest.raises(IndexError, match="out of bounds"):
        F.cross_entropy(ember.tensor(x, requires_grad=True), ember.tensor([0, 1, 3, 0]))
    with pytest.raises(ValueError, match="batch_size"):
        F.cross_entropy(ember.tensor(x), ember.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="weight tensor should be defined"):
        F.cross_entropy(ember.tensor(x), ember.tensor(t), weight=ember.ones(2))
    # an ignore_index inside [0, C): the rows of that class are skipped
    el = F.cross_entropy(ember.tensor(x), ember.tensor(t), ignore_index=1, reduction="none")
    tl = torch.nn.functional.cross_entropy(torch.tensor(x), torch.tensor(t), ignore_index=1,
                                           reduction="none")
    np.testing.assert_allclose(el.numpy(), tl.numpy(), rtol=1e-6)


def test_cross_entropy_fused_thread_count_independent():
    x, t, w = _case(300, 1000, "float32", ignore=True)
    outs = []
    for n in (1, 2):
        with _threads(n):
            ex = ember.tensor(x, requires_grad=True)
            loss = F.cross_entropy(ex, ember.tensor(t), weight=ember.tensor(w),
                                   label_smoothing=0.1)
            loss.backward()
            outs.append((loss.item(), ex.grad.numpy().copy()))
    assert outs[0][0] == outs[1][0]
    np.testing.assert_array_equal(outs[0][1], outs[1][1])


def _check_ce(x, t, dtype, w=None, **kw):
    """ember's cross_entropy beside torch's: values, gradients and the no-grad path."""
    tol = dict(rtol=2e-5, atol=2e-6) if dtype == "float32" else dict(rtol=1e-11, atol=1e-12)
    ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ew = ember.tensor(w) if w is not None else None
    tw = torch.tensor(w) if w is not None else None
    el = F.cross_entropy(ex, ember.tensor(t), weight=ew, **kw)
    tl = torch.nn.functional.cross_entropy(tx, torch.tensor(t), weight=tw, **kw)
    assert tuple(el.shape) == tuple(tl.shape)
    np.testing.assert_allclose(el.detach().numpy(), tl.detach().numpy(), **tol)
    g = np.random.default_rng(1).standard_normal(tuple(tl.shape)).astype(dtype)
    el.backward(ember.tensor(g))
    tl.backward(torch.tensor(g))
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), **tol)
    with ember.no_grad():
        nl = F.cross_entropy(ex, ember.tensor(t), weight=ew, **kw)
    np.testing.assert_array_equal(nl.numpy(), el.detach().numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_spatial_index_targets_match_torch(dtype, reduction, smoothing,
                                                         weighted):
    # (N, C, d1, d2) logits with (N, d1, d2) targets, some ignored
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((3, 7, 4, 5)) * 3).astype(dtype)
    t = rng.integers(0, 7, (3, 4, 5)).astype(np.int64)
    t[0, ::2, 1] = -100
    w = rng.uniform(0.2, 2.0, 7).astype(dtype) if weighted else None
    _check_ce(x, t, dtype, w, reduction=reduction, label_smoothing=smoothing)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shape", [(29, 11), (3, 6, 4, 2)])
def test_cross_entropy_probability_targets_match_torch(dtype, reduction, smoothing, weighted,
                                                       shape):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    p = rng.uniform(0, 1, shape).astype(dtype)
    p /= p.sum(1, keepdims=True)
    w = rng.uniform(0.2, 2.0, shape[1]).astype(dtype) if weighted else None
    _check_ce(x, p, dtype, w, reduction=reduction, label_smoothing=smoothing)


def test_cross_entropy_probability_targets_double_backward_and_target_grad():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((5, 4))
    p = rng.dirichlet(np.ones(4), 5)
    w = rng.uniform(0.5, 1.5, 4)
    ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    kw = dict(label_smoothing=0.1)
    (eg,) = ember.autograd.grad(F.cross_entropy(ex, ember.tensor(p), ember.tensor(w), **kw), ex,
                                create_graph=True)
    (tg,) = torch.autograd.grad(torch.nn.functional.cross_entropy(
        tx, torch.tensor(p), torch.tensor(w), **kw), tx, create_graph=True)
    (eg * eg).sum().backward()
    (tg * tg).sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    # a target that needs its gradient takes the composed path
    ep, tp = ember.tensor(p, requires_grad=True), torch.tensor(p, requires_grad=True)
    F.cross_entropy(ember.tensor(x), ep, **kw).backward()
    torch.nn.functional.cross_entropy(torch.tensor(x), tp, **kw).backward()
    np.testing.assert_allclose(ep.grad.numpy(), tp.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_cross_entropy_probability_targets_errors_and_threads():
    x = np.random.default_rng(5).standard_normal((300, 700)).astype(np.float32)
    p = np.random.default_rng(6).dirichlet(np.ones(700), 300).astype(np.float32)
    with pytest.raises(RuntimeError, match="Expected target size"):
        F.cross_entropy(ember.tensor(x), ember.tensor(p[:, :5]))
    with pytest.raises(RuntimeError, match="weight tensor should be defined"):
        F.cross_entropy(ember.tensor(x), ember.tensor(p), weight=ember.ones(3))
    outs = []
    for n in (1, 2):
        with _threads(n):
            ex = ember.tensor(x, requires_grad=True)
            loss = F.cross_entropy(ex, ember.tensor(p), label_smoothing=0.1)
            loss.backward()
            outs.append((loss.item(), ex.grad.numpy().copy()))
    assert outs[0][0] == outs[1][0]
    np.testing.assert_array_equal(outs[0][1], outs[1][1])


@pytest.mark.parametrize("padding_idx", [None, 2])
def test_embedding_backward_deterministic_and_matches_torch(padding_idx):
    rng = np.random.default_rng(3)
    wt = rng.standard_normal((50, 64)).astype(np.float32)
    idx = rng.integers(0, 50, (40, 30)).astype(np.int64)  # many repeated rows
    g = rng.standard_normal((40, 30, 64)).astype(np.float32)
    grads = []
    for n in (1, 2):
        with _threads(n):
            ew = ember.tensor(wt, requires_grad=True)
            F.embedding(ember.tensor(idx), ew, padding_idx=padding_idx).backward(
                ember.tensor(g))
            grads.append(ew.grad.numpy().copy())
    np.testing.assert_array_equal(grads[0], grads[1])
    tw = torch.tensor(wt, requires_grad=True)
    torch.nn.functional.embedding(torch.tensor(idx), tw, padding_idx=padding_idx).backward(
        torch.tensor(g))
    np.testing.assert_allclose(grads[0], tw.grad.numpy(), rtol=1e-5, atol=1e-5)


def _seg_case(dtype, shape=(3, 7, 9, 5), seed=7):
    """(N, C, d1, ...) logits and (N, d1, ...) targets with some ignored positions"""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    t = rng.integers(0, shape[1], (shape[0],) + shape[2:]).astype(np.int64)
    t.reshape(-1)[::5] = 255
    return x, t, rng.uniform(0.2, 2.0, shape[1]).astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.15])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shape", [(2, 5, 70), (3, 7, 9, 5), (2, 3, 4, 3, 6)])
def test_cross_entropy_spatial_fused_matches_torch(dtype, reduction, smoothing, weighted, shape):
    # positions past one block of the kernel (70 > 64) and ranks 3 to 5; ignore_index 255
    x, t, w = _seg_case(dtype, shape)
    _check_ce(x, t, dtype, w if weighted else None, reduction=reduction,
              label_smoothing=smoothing, ignore_index=255)
    ex = ember.tensor(x, requires_grad=True)
    loss = F.cross_entropy(ex, ember.tensor(t), ignore_index=255)
    assert type(loss.grad_fn).__name__ == "_CrossEntropyIdxBackward"  # no composed graph


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shape", [(11, 6), (3, 7, 9, 5), (2, 4, 70)])
def test_nll_loss_fused_matches_torch(dtype, reduction, weighted, shape):
    x, t, w = _seg_case(dtype, shape, seed=8)
    # float32: torch sums in float, ember in double
    tol = dict(rtol=2e-5, atol=5e-5) if dtype == "float32" else dict(rtol=1e-12, atol=1e-12)
    ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    kw = dict(reduction=reduction, ignore_index=255)
    el = F.nll_loss(ex, ember.tensor(t), ember.tensor(w) if weighted else None, **kw)
    tl = torch.nn.functional.nll_loss(tx, torch.tensor(t), torch.tensor(w) if weighted else None,
                                      **kw)
    assert tuple(el.shape) == tuple(tl.shape)
    np.testing.assert_allclose(el.detach().numpy(), tl.detach().numpy(), **tol)
    g = np.random.default_rng(2).standard_normal(tuple(tl.shape)).astype(dtype)
    el.backward(ember.tensor(g))
    tl.backward(torch.tensor(g))
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), **tol)
    assert type(el.grad_fn).__name__ == "_NLLLossIdxBackward"
    with ember.no_grad():
        nl = F.nll_loss(ex, ember.tensor(t), ember.tensor(w) if weighted else None, **kw)
    np.testing.assert_array_equal(nl.numpy(), el.detach().numpy())


def test_spatial_losses_double_backward_and_errors_match_torch():
    x, t, w = _seg_case("float64", (2, 4, 3, 5), seed=9)
    for name, kw in (("cross_entropy", dict(label_smoothing=0.1)), ("nll_loss", {})):
        grads = []
        for lib in (ember, torch):
            xt = lib.tensor(x, requires_grad=True)
            loss = getattr(lib.nn.functional, name)(xt, lib.tensor(t), lib.tensor(w),
                                                    ignore_index=255, **kw)
            (g,) = lib.autograd.grad(loss, xt, create_graph=True)
            (g * g).sum().backward() if name == "cross_entropy" else (g * xt).sum().backward()
            grads.append(xt.grad.numpy())
        np.testing.assert_allclose(grads[0], grads[1], rtol=1e-10, atol=1e-12)
    xe, xt = ember.tensor(x), torch.tensor(x)
    bad = [np.zeros((2, 3, 6), np.int64), np.zeros((3, 3, 5), np.int64),
           np.zeros((2, 3), np.int64), np.full((2, 3, 5), 4, np.int64),
           np.full((2, 3, 5), -1, np.int64)]
    for b in bad:
        for name in ("cross_entropy", "nll_loss"):
            with pytest.raises(Exception) as te:
                getattr(torch.nn.functional, name)(xt, torch.tensor(b))
            with pytest.raises(te.type, match=str(te.value).split("(")[0][:30]):
                getattr(F, name)(xe, ember.tensor(b))
    # every position ignored: the mean is nan, as in torch
    allig = np.full((2, 3, 5), 255, np.int64)
    for name in ("cross_entropy", "nll_loss"):
        e = getattr(F, name)(xe, ember.tensor(allig), ignore_index=255)
        tv = getattr(torch.nn.functional, name)(xt, torch.tensor(allig), ignore_index=255)
        assert np.isnan(e.item()) and np.isnan(tv.item())


def test_spatial_losses_thread_count_independent():
    x, t, w = _seg_case("float32", (4, 21, 40, 33), seed=10)
    p = np.random.default_rng(11).dirichlet(np.ones(21), (4, 40, 33)).transpose(0, 3, 1, 2)
    p = np.ascontiguousarray(p, dtype=np.float32)
    outs = []
    for n in (1, 2):
        with _threads(n):
            res = []
            for fn, tgt, kw in (
                    (F.cross_entropy, t, dict(weight=ember.tensor(w), label_smoothing=0.1,
                                              ignore_index=255)),
                    (F.cross_entropy, p, dict(label_smoothing=0.05)),
                    (F.nll_loss, t, dict(weight=ember.tensor(w), ignore_index=255))):
                ex = ember.tensor(x, requires_grad=True)
                loss = fn(ex, ember.tensor(tgt), **kw)
                loss.backward()
                res += [loss.item(), ex.grad.numpy().tobytes()]
            outs.append(res)
    assert outs[0] == outs[1]


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_unbatched_class_losses_are_0_dim_like_torch(reduction):
    x = np.random.default_rng(12).standard_normal(5)
    for name, kw in (("cross_entropy", dict(label_smoothing=0.2)), ("nll_loss", {})):
        res = []
        for lib in (ember, torch):
            xt = lib.tensor(x, requires_grad=True)
            loss = getattr(lib.nn.functional, name)(xt, lib.tensor(2), reduction=reduction,
                                                    **kw)
            loss.backward()
            res.append((tuple(loss.shape), loss.detach().numpy(), xt.grad.numpy()))
        assert res[0][0] == res[1][0] == ()
        for a, b in zip(res[0][1:], res[1][1:]):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
