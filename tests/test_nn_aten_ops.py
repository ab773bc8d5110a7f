"""nn ops at the top level in ATen's signatures (ember._nn_ops) that the op database
cannot express: flat weight lists, running statistics, randomness, in-place forms."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from tests.conftest import check_parity

torch = pytest.importorskip("torch")


def _weights(rng, gates, In, H, layers, D, bias, proj=0):
    out = []
    for layer in range(layers):
        for _ in range(D):
            i = In if layer == 0 else (proj or H) * D
            out += [rng.standard_normal((gates * H, i)),
                    rng.standard_normal((gates * H, proj or H))]
            if bias:
                out += [rng.standard_normal(gates * H), rng.standard_normal(gates * H)]
            if proj:
                out.append(rng.standard_normal((proj, H)))
    return [(w * 0.4).astype(np.float64) for w in out]


@pytest.mark.parametrize("name,gates", [("rnn_tanh", 1), ("rnn_relu", 1), ("gru", 3)])
@pytest.mark.parametrize("bias,bidir,batch_first", [(True, False, False), (False, True, True)])
def test_rnn_functions_match_torch(name, gates, bias, bidir, batch_first):
    rng = np.random.default_rng(0)
    D, L = 2 if bidir else 1, 2
    x = rng.standard_normal((3, 5, 4) if batch_first else (5, 3, 4))
    h0 = rng.standard_normal((L * D, 3, 6))
    ws = _weights(rng, gates, 4, 6, L, D, bias)

    def run(lib):
        return lambda x, h, *w: getattr(lib, name)(x, h, list(w), bias, L, 0.0, False, bidir,
                                                   batch_first)
    check_parity(run(ember), run(torch), x, h0, *ws, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("proj", [0, 2])
def test_lstm_function_matches_torch(proj):
    rng = np.random.default_rng(1)
    x, h0 = rng.standard_normal((4, 2, 3)), rng.standard_normal((2, 2, proj or 5))
    c0 = rng.standard_normal((2, 2, 5))
    ws = _weights(rng, 4, 3, 5, 1, 2, True, proj)

    def run(lib):
        return lambda x, h, c, *w: lib.lstm(x, (h, c), list(w), True, 1, 0.0, False, True,
                                            False)
    e, t = check_parity(run(ember), run(torch), x, h0, c0, *ws, rtol=1e-6, atol=1e-8)
    assert len(e) == len(t) == 3


def test_packed_rnn_function_matches_torch():
    rng = np.random.default_rng(2)
    data = rng.standard_normal((6, 3))           # batch sizes 3, 2, 1
    bs, h0 = np.array([3, 2, 1]), rng.standard_normal((1, 3, 4))
    ws = _weights(rng, 3, 3, 4, 1, 1, True)
    e = ember.gru(ember.tensor(data), ember.tensor(bs), ember.tensor(h0),
                  [ember.tensor(w) for w in ws], True, 1, 0.0, False, False)
    t = torch.gru(torch.tensor(data), torch.tensor(bs), torch.tensor(h0),
                  [torch.tensor(w) for w in ws], True, 1, 0.0, False, False)
    for a, b in zip(e, t):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-8)


def test_lstm_cell_matches_torch():
    rng = np.random.default_rng(3)
    arrs = [rng.standard_normal(s) for s in ((2, 3), (2, 4), (2, 4), (16, 3), (16, 4), (16,),
                                             (16,))]

    def run(lib):
        return lambda x, h, c, *w: lib.lstm_cell(x, (h, c), *w)
    check_parity(run(ember), run(torch), *arrs, rtol=1e-6, atol=1e-8)
    with pytest.raises(RuntimeError, match="input_size"):
        ember.lstm_cell(ember.ones(2, 5), (ember.ones(2, 4), ember.ones(2, 4)),
                        ember.ones(16, 3), ember.ones(16, 4))


@pytest.mark.parametrize("op", ["batch_norm", "instance_norm"])
def test_norms_with_running_stats_match_torch(op):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((4, 3, 5)).astype(np.float32)
    w, b = rng.random(3).astype(np.float32), rng.random(3).astype(np.float32)
    for training in (True, False):
        m0, v0 = rng.random(3).astype(np.float32), rng.random(3).astype(np.float32) + 0.5
        res = []
        for lib in (ember, torch):
            m, v = lib.tensor(m0), lib.tensor(v0)
            y = getattr(lib, op)(lib.tensor(x), lib.tensor(w), lib.tensor(b), m, v, training,
                                 0.3, 1e-5, False)
            res.append((y.numpy(), m.numpy(), v.numpy()))
        for a, t in zip(*res):
            np.testing.assert_allclose(a, t, rtol=1e-5, atol=1e-6)


def test_dropout_forms_match_torch_statistics():
    x = ember.ones(200, 50)
    y = ember.dropout(x, 0.3, True)
    kept = (y != 0).float().mean().item()
    assert abs(kept - 0.7) < 0.03
    np.testing.assert_allclose(y[y != 0].numpy(), 1 / 0.7, rtol=1e-6)
    assert ember.dropout(x, 0.3, False) is x
    z = ember.ones(64, 8, 5)
    f = ember.feature_dropout(z, 0.5, True)
    per_channel = f.numpy()
    assert np.all((per_channel == per_channel[:, :, :1]))     # whole (batch, channel) rows
    assert 0.3 < (per_channel[:, :, 0] != 0).mean() < 0.7
    a = ember.ones(10, 4)
    assert ember.dropout_(a, 1.0, True) is a and not a.any().item()
    b = ember.ones(6, 4, 3)
    assert ember.feature_dropout_(b, 0.5, True) is b
    assert ember.alpha_dropout_(b, 0.0, True) is b
    fa = ember.feature_alpha_dropout(ember.ones(50, 6, 4), 0.5, True).numpy()
    assert np.all(fa == fa[:, :, :1])
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        ember.feature_alpha_dropout(ember.ones(3), 0.5, True)


def test_inplace_activations_match_torch():
    a = np.linspace(-2, 2, 12).astype(np.float32)
    for name, args in (("celu_", (0.7,)), ("selu_", ()), ("threshold_", (0.5, -3.0)),
                       ("rrelu_", (0.1, 0.3, False))):
        e, t = ember.tensor(a), torch.tensor(a)
        assert getattr(ember, name)(e, *args) is e
        getattr(torch, name)(t, *args)
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6, atol=1e-7, err_msg=name)


def test_embedding_renorm_matches_torch():
    rng = np.random.default_rng(5)
    w = rng.standard_normal((6, 4)).astype(np.float32) * 2
    idx = np.array([0, 2, 2, 5])
    e, t = ember.tensor(w), torch.tensor(w)
    assert ember.embedding_renorm_(e, ember.tensor(idx), 1.5, 2.0) is e
    torch.embedding_renorm_(t, torch.tensor(idx), 1.5, 2.0)
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-5, atol=1e-6)


def test_embedding_bag_per_sample_weights_and_embedding_freq_scaling():
    rng = np.random.default_rng(8)
    w = rng.standard_normal((7, 3))
    idx, offs = np.array([1, 4, 4, 0, 6, 2, 4, 3]), np.array([0, 3, 3, 5])
    psw = rng.standard_normal(8)
    check_parity(lambda w, p: ember.embedding_bag(w, ember.tensor(idx), ember.tensor(offs),
                                                  False, 0, False, p),
                 lambda w, p: torch.embedding_bag(w, torch.tensor(idx), torch.tensor(offs),
                                                  False, 0, False, p), w, psw)
    # nn.Embedding's scale_grad_by_freq: each row's gradient over its count in the batch
    for pad in (None, 4):
        te = torch.nn.Embedding(7, 3, padding_idx=pad, scale_grad_by_freq=True).double()
        ee = ember.nn.Embedding(7, 3, padding_idx=pad, scale_grad_by_freq=True,
                                dtype=ember.float64)
        ee.weight.data.copy_(ember.tensor(te.weight.detach().numpy()))
        g = rng.standard_normal((2, 4, 3))
        (te(torch.tensor(idx.reshape(2, 4))) * torch.tensor(g)).sum().backward()
        (ee(ember.tensor(idx.reshape(2, 4))) * ember.tensor(g)).sum().backward()
        np.testing.assert_allclose(ee.weight.grad.numpy(), te.weight.grad.numpy(), rtol=1e-12)


def test_ctc_loss_matches_torch():
    rng = np.random.default_rng(6)
    lp = np.log(rng.dirichlet(np.ones(5), (8, 2))).astype(np.float32)
    tg = np.array([[1, 2, 2], [3, 1, 0]])
    for red in (0, 1, 2):
        e = ember.ctc_loss(ember.tensor(lp), ember.tensor(tg), [8, 7], [3, 2], 0, red)
        t = torch.ctc_loss(torch.tensor(lp), torch.tensor(tg), [8, 7], [3, 2], 0, red)
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-5)
    assert ember.ctc_loss(ember.tensor(lp), ember.tensor(tg), [8, 7], [3, 2]).shape == (2,)


def test_norm_weights_and_reductions():
    rng = np.random.default_rng(7)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((2, 4, 3), (4,), (4,)))
    check_parity(lambda x, w, b: ember.group_norm(x, 2, w, b, 1e-5, True),
                 lambda x, w, b: torch.group_norm(x, 2, w, b, 1e-5, True), x, w, b, rtol=1e-4,
                 atol=1e-5)
    check_parity(lambda x, w, b: ember.layer_norm(x, (3,), w[:3], b[:3]),
                 lambda x, w, b: torch.layer_norm(x, (3,), w[:3], b[:3]), x, w, b, rtol=1e-4,
                 atol=1e-5)
    with pytest.raises(ValueError, match="reduction"):
        ember.hinge_embedding_loss(ember.ones(3), ember.ones(3), 1.0, 7)
