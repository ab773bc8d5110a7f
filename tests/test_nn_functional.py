"""ember.nn.functional and the loss modules against PyTorch (values and gradients)."""
import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F

torch = pytest.importorskip("torch")
tF = torch.nn.functional
tnn = torch.nn

RNG = np.random.default_rng(1)


def rand(*shape, low=-1.0, high=1.0):
    return RNG.uniform(low, high, size=shape).astype(np.float32)


def run_both(fn_e, fn_t, arrays, grad=True, rtol=1e-4, atol=1e-5, const=()):
    """Apply fn to ember and torch tensors made from ``arrays``; compare the result and
    the gradients of the float inputs not listed in ``const``."""
    e_in, t_in = [], []
    for i, a in enumerate(arrays):
        if not isinstance(a, np.ndarray):
            e_in.append(a)
            t_in.append(a)
            continue
        rg = grad and a.dtype.kind == "f" and i not in const
        e_in.append(ember.tensor(a, requires_grad=rg))
        t_in.append(torch.tensor(a, requires_grad=rg))
    eo, to = fn_e(*e_in), fn_t(*t_in)
    assert tuple(eo.shape) == tuple(to.shape)
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=rtol, atol=atol)
    if grad and to.requires_grad:
        g = rand(*to.shape)
        (eo * ember.tensor(g)).sum().backward()
        (to * torch.tensor(g)).sum().backward()
        for e, t in zip(e_in, t_in):
            if isinstance(t, torch.Tensor) and t.requires_grad:
                np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=rtol, atol=atol)
    return eo, to


# ---- losses --------------------------------------------------------------------
REDUCTIONS = ["mean", "sum", "none"]


@pytest.mark.parametrize("red", REDUCTIONS)
@pytest.mark.parametrize("name,kw", [("MSELoss", {}), ("L1Loss", {}), ("SmoothL1Loss", {}),
                                     ("SmoothL1Loss", dict(beta=0.5)), ("HuberLoss", {}),
                                     ("HuberLoss", dict(delta=0.3))])
def test_regression_losses(name, kw, red):
    em, th = getattr(nn, name)(reduction=red, **kw), getattr(tnn, name)(reduction=red, **kw)
    run_both(em, th, [rand(4, 5) * 2, rand(4, 5) * 2])


@pytest.mark.parametrize("red", REDUCTIONS)
@pytest.mark.parametrize("kw", [{}, dict(label_smoothing=0.1), dict(ignore_index=2),
                                dict(weight=True), dict(weight=True, label_smoothing=0.2),
                                dict(weight=True, ignore_index=0, label_smoothing=0.1)])
def test_cross_entropy_indices(kw, red):
    kw = dict(kw)
    ekw, tkw = dict(kw), dict(kw)
    if kw.get("weight"):
        w = rand(5, low=0.2, high=2.0)
        ekw["weight"], tkw["weight"] = ember.tensor(w), torch.tensor(w)
    x = rand(6, 5) * 3
    y = np.array([0, 2, 4, 1, 2, 3], dtype=np.int64)
    run_both(nn.CrossEntropyLoss(reduction=red, **ekw), tnn.CrossEntropyLoss(reduction=red,
                                                                              **tkw), [x, y])


def test_cross_entropy_spatial_and_probabilities():
    x = rand(2, 4, 3, 3)
    y = RNG.integers(0, 4, size=(2, 3, 3)).astype(np.int64)
    run_both(F.cross_entropy, tF.cross_entropy, [x, y])
    p = RNG.dirichlet(np.ones(4), size=5).astype(np.float32)
    for red in REDUCTIONS:
        for ls in (0.0, 0.1):
            run_both(lambda a, b: F.cross_entropy(a, b, reduction=red, label_smoothing=ls),
                     lambda a, b: tF.cross_entropy(a, b, reduction=red, label_smoothing=ls),
                     [rand(5, 4) * 2, p], const=(1,))
    run_both(F.cross_entropy, tF.cross_entropy, [rand(4), np.array(2, dtype=np.int64)])


@pytest.mark.parametrize("red", REDUCTIONS)
def test_nll_loss(red):
    w = rand(4, low=0.5, high=1.5)
    x = np.log(RNG.dirichlet(np.ones(4), size=6)).astype(np.float32)
    y = np.array([0, 1, 3, 3, 2, 1], dtype=np.int64)
    run_both(lambda a, b: F.nll_loss(a, b, reduction=red),
             lambda a, b: tF.nll_loss(a, b, reduction=red), [x, y])
    run_both(lambda a, b: F.nll_loss(a, b, weight=ember.tensor(w), ignore_index=3,
                                     reduction=red),
             lambda a, b: tF.nll_loss(a, b, weight=torch.tensor(w), ignore_index=3,
                                      reduction=red), [x, y])


@pytest.mark.parametrize("red", REDUCTIONS)
def test_bce_losses(red):
    p = rand(4, 3, low=0.05, high=0.95)
    t = (rand(4, 3) > 0).astype(np.float32)
    w = rand(4, 3, low=0.5, high=1.5)
    run_both(nn.BCELoss(reduction=red), tnn.BCELoss(reduction=red), [p, t], const=(1,))
    run_both(nn.BCELoss(weight=ember.tensor(w), reduction=red),
             tnn.BCELoss(weight=torch.tensor(w), reduction=red), [p, t], const=(1,))
    x = rand(4, 3) * 6
    run_both(nn.BCEWithLogitsLoss(reduction=red), tnn.BCEWithLogitsLoss(reduction=red), [x, t])
    pw = rand(3, low=0.5, high=3)
    run_both(nn.BCEWithLogitsLoss(pos_weight=ember.tensor(pw), reduction=red),
             tnn.BCEWithLogitsLoss(pos_weight=torch.tensor(pw), reduction=red), [x, t])


@pytest.mark.parametrize("red", ["mean", "sum", "none", "batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(red, log_target):
    inp = np.log(RNG.dirichlet(np.ones(5), size=3)).astype(np.float32)
    tgt = RNG.dirichlet(np.ones(5), size=3).astype(np.float32)
    tgt[0, 0] = 0.0
    if log_target:
        tgt = np.log(tgt + 1e-3).astype(np.float32)
    run_both(nn.KLDivLoss(reduction=red, log_target=log_target),
             tnn.KLDivLoss(reduction=red, log_target=log_target), [inp, tgt])


@pytest.mark.parametrize("red", REDUCTIONS)
def test_cosine_embedding_and_margin_ranking(red):
    y = np.array([1, -1, 1, -1], dtype=np.float32)
    run_both(nn.CosineEmbeddingLoss(margin=0.2, reduction=red),
             tnn.CosineEmbeddingLoss(margin=0.2, reduction=red), [rand(4, 5), rand(4, 5), y],
             const=(2,))
    run_both(nn.MarginRankingLoss(margin=0.1, reduction=red),
             tnn.MarginRankingLoss(margin=0.1, reduction=red), [rand(4), rand(4), y],
             const=(2,))


def test_other_losses():
    y = np.array([1, -1, 1, -1], dtype=np.float32)
    run_both(nn.HingeEmbeddingLoss(), tnn.HingeEmbeddingLoss(), [rand(4), y], const=(1,))
    run_both(nn.SoftMarginLoss(), tnn.SoftMarginLoss(), [rand(4), y], const=(1,))
    run_both(nn.PoissonNLLLoss(), tnn.PoissonNLLLoss(), [rand(4), rand(4, low=0, high=3)],
             const=(1,))
    run_both(nn.GaussianNLLLoss(), tnn.GaussianNLLLoss(),
             [rand(4, 2), rand(4, 2), rand(4, 2, low=0.1, high=2)])
    run_both(nn.TripletMarginLoss(), tnn.TripletMarginLoss(), [rand(3, 4), rand(3, 4),
                                                               rand(3, 4)])


# ---- functional forms -------------------------------------------------------------
@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad(mode):
    x = rand(2, 3, 5, 6)
    for p in [(1, 1, 2, 0), (0, 2, 1, 3)]:
        run_both(lambda a: F.pad(a, p, mode=mode), lambda a: tF.pad(a, p, mode=mode), [x])
    run_both(lambda a: F.pad(a, (2, 1), mode=mode), lambda a: tF.pad(a, (2, 1), mode=mode),
             [rand(2, 3, 4)])
    if mode == "constant":
        run_both(lambda a: F.pad(a, (1, -1, 2, 2, 1, 1), value=2.5),
                 lambda a: tF.pad(a, (1, -1, 2, 2, 1, 1), value=2.5), [x])


@pytest.mark.parametrize("kw", [dict(scale_factor=2, mode="nearest"),
                                dict(size=(7, 5), mode="nearest"),
                                dict(size=(3, 9), mode="nearest-exact"),
                                dict(scale_factor=2, mode="bilinear", align_corners=False),
                                dict(size=(7, 5), mode="bilinear", align_corners=True),
                                dict(size=(3, 2), mode="bilinear", align_corners=False),
                                dict(scale_factor=1.5, mode="bilinear")])
def test_interpolate(kw):
    run_both(lambda a: F.interpolate(a, **kw), lambda a: tF.interpolate(a, **kw),
             [rand(2, 3, 4, 6)])


def test_interpolate_linear_1d():
    kw = dict(scale_factor=2, mode="linear", align_corners=False)
    run_both(lambda a: F.interpolate(a, **kw), lambda a: tF.interpolate(a, **kw),
             [rand(2, 3, 5)])


def test_one_hot_normalize_cosine():
    y = np.array([[0, 3], [2, 1]], dtype=np.int64)
    np.testing.assert_array_equal(F.one_hot(ember.tensor(y)).numpy(),
                                  tF.one_hot(torch.tensor(y)).numpy())
    np.testing.assert_array_equal(F.one_hot(ember.tensor(y), 6).numpy(),
                                  tF.one_hot(torch.tensor(y), 6).numpy())
    assert F.one_hot(ember.tensor(y)).dtype == ember.int64
    for kw in [{}, dict(p=1.0, dim=0), dict(dim=-1)]:
        run_both(lambda a: F.normalize(a, **kw), lambda a: tF.normalize(a, **kw),
                 [rand(3, 4)])
    run_both(F.cosine_similarity, tF.cosine_similarity, [rand(3, 4), rand(3, 4)])


@pytest.mark.parametrize("kw", [{}, dict(is_causal=True), dict(mask="bool"),
                                dict(mask="float"), dict(scale=0.3)])
def test_scaled_dot_product_attention(kw):
    kw = dict(kw)
    q, k, v = rand(2, 3, 4, 8), rand(2, 3, 6, 8), rand(2, 3, 6, 5)
    if kw.get("is_causal"):
        k, v = rand(2, 3, 4, 8), rand(2, 3, 4, 5)
    mask = kw.pop("mask", None)
    ek, tk = dict(kw), dict(kw)
    if mask == "bool":
        m = RNG.random((4, 6)) > 0.3
        m[:, 0] = True
        ek["attn_mask"], tk["attn_mask"] = ember.tensor(m), torch.tensor(m)
    elif mask == "float":
        m = rand(4, 6)
        ek["attn_mask"], tk["attn_mask"] = ember.tensor(m), torch.tensor(m)
    run_both(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, **ek),
             lambda a, b, c: tF.scaled_dot_product_attention(a, b, c, **tk), [q, k, v])


def test_functional_activations_and_misc():
    x = rand(3, 6) * 3
    for fe, ft in [(F.relu, tF.relu), (F.gelu, tF.gelu), (F.silu, tF.silu),
                   (F.elu, tF.elu), (F.leaky_relu, tF.leaky_relu), (F.logsigmoid,
                                                                      tF.logsigmoid),
                   (lambda a: F.softmax(a, -1), lambda a: tF.softmax(a, -1)),
                   (lambda a: F.log_softmax(a, 0), lambda a: tF.log_softmax(a, 0)),
                   (F.hardtanh, tF.hardtanh), (F.softplus, tF.softplus), (F.mish, tF.mish),
                   (F.relu6, tF.relu6), (F.glu, tF.glu)]:
        run_both(fe, ft, [x])
    run_both(lambda a, w, b: F.linear(a, w, b), tF.linear, [rand(2, 3), rand(4, 3), rand(4)])
    run_both(lambda a, w: F.conv2d(a, w, padding=1), lambda a, w: tF.conv2d(a, w, padding=1),
             [rand(1, 2, 5, 5), rand(3, 2, 3, 3)], atol=1e-4)
    run_both(lambda a: F.max_pool2d(a, 2), lambda a: tF.max_pool2d(a, 2), [rand(1, 2, 4, 4)])
    run_both(lambda a: F.layer_norm(a, (4,)), lambda a: tF.layer_norm(a, (4,)), [rand(3, 4)])
    run_both(lambda a, w: F.embedding(a, w), tF.embedding,
             [np.array([1, 0, 1], dtype=np.int64), rand(3, 2)])
    with ember.no_grad():
        assert F.dropout(ember.ones(3), 0.5, training=False).numpy().tolist() == [1, 1, 1]
