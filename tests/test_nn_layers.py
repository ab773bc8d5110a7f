"""Every layer against PyTorch: same weights copied over, outputs and gradients
(of the input and of every parameter) compared."""
import numpy as np
import pytest

import ember
import ember.nn as nn

torch = pytest.importorskip("torch")
tnn = torch.nn

RNG = np.random.default_rng(0)


def rand(*shape, low=-1.0, high=1.0):
    return RNG.uniform(low, high, size=shape).astype(np.float32)


def _flat(out):
    if isinstance(out, (tuple, list)):
        r = []
        for o in out:
            r.extend(_flat(o))
        return r
    return [] if out is None else [out]


def copy_weights(em, th):
    sd = {k: ember.tensor(v.detach().cpu().numpy().copy()) for k, v in th.state_dict().items()}
    em.load_state_dict(sd)


def check(em, th, *inputs, rtol=1e-4, atol=1e-5, grad=True, copy=True, kwargs=None,
          int_inputs=()):
    """Run em and th on the same inputs; compare outputs and all gradients."""
    kwargs = kwargs or {}
    if copy:
        copy_weights(em, th)
    e_in, t_in = [], []
    for i, a in enumerate(inputs):
        if a is None:
            e_in.append(None)
            t_in.append(None)
            continue
        if isinstance(a, tuple):  # nested (h0, c0)
            e_in.append(tuple(ember.tensor(x, requires_grad=grad) for x in a))
            t_in.append(tuple(torch.tensor(x, requires_grad=grad) for x in a))
            continue
        rg = grad and a.dtype.kind == "f" and i not in int_inputs
        e_in.append(ember.tensor(a, requires_grad=rg))
        t_in.append(torch.tensor(a, requires_grad=rg))
    eo = _flat(em(*e_in, **kwargs))
    to = _flat(th(*t_in, **kwargs))
    assert len(eo) == len(to)
    for e, t in zip(eo, to):
        assert tuple(e.shape) == tuple(t.shape)
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol)
    if not grad:
        return eo, to
    e_loss, t_loss = 0, 0
    for e, t in zip(eo, to):
        if not t.requires_grad:
            continue
        g = rand(*t.shape)
        e_loss = e_loss + (e * ember.tensor(g)).sum()
        t_loss = t_loss + (t * torch.tensor(g)).sum()
    e_loss.backward()
    t_loss.backward()
    flat_e = [x for a in e_in for x in (a if isinstance(a, tuple) else (a,))]
    flat_t = [x for a in t_in for x in (a if isinstance(a, tuple) else (a,))]
    for e, t in zip(flat_e, flat_t):
        if t is not None and t.requires_grad:
            assert e.grad is not None
            np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=rtol, atol=atol)
    tp = dict(th.named_parameters())
    for name, p in em.named_parameters():
        if tp[name].grad is None:
            assert p.grad is None or float(p.grad.abs().sum().item()) == 0, name
            continue
        assert p.grad is not None, name
        np.testing.assert_allclose(p.grad.numpy(), tp[name].grad.numpy(), rtol=rtol, atol=atol,
                                   err_msg=name)
    return eo, to


def pair(name, *args, **kw):
    return getattr(nn, name)(*args, **kw), getattr(tnn, name)(*args, **kw)


# ---- linear / shape ------------------------------------------------------------
def test_linear():
    check(*pair("Linear", 5, 3), rand(4, 5))
    check(*pair("Linear", 5, 3, bias=False), rand(2, 6, 5))
    check(*pair("Linear", 5, 3), rand(5))


def test_bilinear_identity_flatten():
    check(*pair("Bilinear", 3, 4, 2), rand(5, 3), rand(5, 4))
    check(*pair("Identity", 1, foo=2), rand(3, 2))
    check(*pair("Flatten"), rand(2, 3, 4))
    check(*pair("Flatten", 0, 1), rand(2, 3, 4))
    check(*pair("Unflatten", 1, (2, 3)), rand(4, 6))


# ---- convolution and pooling -----------------------------------------------------
@pytest.mark.parametrize("kw", [
    dict(), dict(stride=2, padding=1), dict(padding=2, dilation=2), dict(groups=2, padding=1),
    dict(padding="same"), dict(padding=1, padding_mode="reflect"),
    dict(padding=1, padding_mode="replicate"), dict(padding=1, padding_mode="circular"),
    dict(bias=False),
])
def test_conv2d(kw):
    check(*pair("Conv2d", 4, 6, 3, **kw), rand(2, 4, 9, 8), rtol=1e-4, atol=1e-4)


def test_conv1d():
    check(*pair("Conv1d", 3, 5, 3, padding=1), rand(2, 3, 10), atol=1e-4)
    check(*pair("Conv1d", 3, 4, 2, stride=2), rand(2, 3, 9), atol=1e-4)


@pytest.mark.parametrize("kw", [dict(), dict(stride=2), dict(stride=2, padding=1,
                                                               output_padding=1)])
def test_conv_transpose2d(kw):
    check(*pair("ConvTranspose2d", 4, 3, 3, **kw), rand(2, 4, 5, 5), atol=1e-4)


def test_conv_transpose1d():
    check(*pair("ConvTranspose1d", 3, 2, 3, stride=2, padding=1), rand(2, 3, 6), atol=1e-4)


def test_conv_transpose2d_output_size():
    em, th = pair("ConvTranspose2d", 2, 2, 3, stride=2, padding=1)
    check(em, th, rand(1, 2, 4, 4), kwargs=dict(output_size=(8, 8)), atol=1e-4)


@pytest.mark.parametrize("name,args,kw", [
    ("MaxPool2d", (2,), {}), ("MaxPool2d", (3,), dict(stride=2, padding=1)),
    ("MaxPool2d", (2,), dict(ceil_mode=True)), ("AvgPool2d", (2,), {}),
    ("AvgPool2d", (3,), dict(stride=2, padding=1)),
    ("AvgPool2d", (3,), dict(stride=2, padding=1, count_include_pad=False)),
    ("AdaptiveAvgPool2d", ((1, 1),), {}), ("AdaptiveAvgPool2d", ((3, 2),), {}),
    ("AdaptiveMaxPool2d", ((2, 2),), {}), ("MaxPool1d", (2,), {}), ("AvgPool1d", (2,), {}),
    ("AdaptiveAvgPool1d", (3,), {}),
])
def test_pooling(name, args, kw):
    shape = (2, 3, 7) if name.endswith("1d") else (2, 3, 7, 6)
    check(*pair(name, *args, **kw), rand(*shape))


def test_maxpool_return_indices():
    em, th = pair("MaxPool2d", 2, return_indices=True)
    x = rand(1, 2, 4, 4)
    (_, ei), (_, ti) = em(ember.tensor(x)), th(torch.tensor(x))
    np.testing.assert_array_equal(ei.numpy(), ti.numpy())


# ---- normalisation -----------------------------------------------------------
@pytest.mark.parametrize("name,shape", [("BatchNorm1d", (8, 5)), ("BatchNorm1d", (4, 5, 3)),
                                        ("BatchNorm2d", (4, 5, 3, 3))])
def test_batchnorm_train_then_eval(name, shape):
    em, th = pair(name, 5, momentum=0.2)
    with torch.no_grad():
        th.weight.uniform_(0.5, 1.5)
        th.bias.uniform_(-0.5, 0.5)
    copy_weights(em, th)
    for _ in range(3):
        check(em, th, rand(*shape) * 3 + 1, copy=False, atol=1e-4)
    np.testing.assert_allclose(em.running_mean.numpy(), th.running_mean.numpy(), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(em.running_var.numpy(), th.running_var.numpy(), rtol=1e-5,
                               atol=1e-6)
    assert int(em.num_batches_tracked.item()) == 3
    em.eval()
    th.eval()
    check(em, th, rand(*shape), copy=False)


def test_batchnorm_momentum_none_and_no_affine():
    em, th = pair("BatchNorm1d", 3, momentum=None, affine=False)
    for _ in range(3):
        check(em, th, rand(6, 3), copy=False)
    np.testing.assert_allclose(em.running_var.numpy(), th.running_var.numpy(), rtol=1e-5)


def test_layernorm_groupnorm():
    em, th = pair("LayerNorm", 6)
    with torch.no_grad():
        th.weight.uniform_(0.5, 1.5)
        th.bias.uniform_(-1, 1)
    check(em, th, rand(3, 4, 6))
    check(*pair("LayerNorm", (4, 6), elementwise_affine=False), rand(3, 4, 6))
    em, th = pair("GroupNorm", 2, 6)
    with torch.no_grad():
        th.weight.uniform_(0.5, 1.5)
    check(em, th, rand(3, 6, 4, 4))
    check(*pair("InstanceNorm2d", 3), rand(2, 3, 4, 4))


# ---- embedding -----------------------------------------------------------------
def test_embedding_padding_idx():
    em, th = pair("Embedding", 10, 4, padding_idx=1)
    idx = np.array([[1, 2, 3], [4, 1, 9]], dtype=np.int64)
    check(em, th, idx)
    assert float(em.weight.grad[1].abs().sum().item()) == 0.0
    check(*pair("Embedding", 7, 3), np.array([0, 6, 6, 2], dtype=np.int64))


def test_embedding_default_init_zeroes_padding_row():
    em = nn.Embedding(5, 3, padding_idx=2)
    assert float(em.weight[2].abs().sum().item()) == 0.0


# ---- activations -------------------------------------------------------------------
@pytest.mark.parametrize("name,args", [
    ("ReLU", ()), ("LeakyReLU", (0.2,)), ("ELU", (0.7,)), ("GELU", ()), ("GELU", ("tanh",)),
    ("SiLU", ()), ("Mish", ()), ("Tanh", ()), ("Sigmoid", ()), ("Softplus", ()),
    ("Softplus", (2.0, 1.0)), ("Hardtanh", ()), ("Hardtanh", (-0.5, 2.0)), ("ReLU6", ()),
    ("Softmax", (1,)), ("LogSoftmax", (1,)), ("Softmax", (-1,)), ("LogSoftmax", (0,)),
    ("Softmin", (1,)), ("SELU", ()), ("CELU", (0.5,)), ("LogSigmoid", ()), ("Hardsigmoid", ()),
    ("Hardswish", ()), ("Softsign", ()), ("Tanhshrink", ()), ("GLU", ()), ("PReLU", ()),
])
def test_activation(name, args):
    x = rand(4, 6) * 4
    x[np.abs(x) < 1e-3] = 0.5  # keep away from kinks
    check(*pair(name, *args), x, atol=1e-5)


def test_relu_inplace():
    m = nn.ReLU(inplace=True)
    x = ember.tensor([-1.0, 2.0])
    y = m(x)
    assert y.data_ptr() == x.data_ptr()
    np.testing.assert_array_equal(x.numpy(), [0.0, 2.0])


def test_dropout():
    d = nn.Dropout(0.3)
    x = ember.ones(200, 100)
    with ember.no_grad():
        y = d(x).numpy()
    zeros = (y == 0).mean()
    assert 0.25 < zeros < 0.35
    np.testing.assert_allclose(y[y != 0], 1 / 0.7, rtol=1e-6)
    d.eval()
    assert d(x) is x
    d2 = nn.Dropout2d(0.5)
    with ember.no_grad():
        y = d2(ember.ones(8, 50, 3, 3)).numpy()
    per_channel = y.reshape(8, 50, 9)
    assert np.all((per_channel == 0).all(-1) | (per_channel == 2).all(-1))
    with pytest.raises(ValueError):
        nn.Dropout(1.5)


# ---- recurrent -------------------------------------------------------------------
@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("kw", [dict(), dict(num_layers=2, bidirectional=True),
                                dict(batch_first=True, bias=False)])
def test_rnn(name, kw):
    em, th = pair(name, 5, 4, **kw)
    L, N = 6, 3
    x = rand(N, L, 5) if kw.get("batch_first") else rand(L, N, 5)
    check(em, th, x, atol=1e-5)


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
def test_rnn_initial_state_and_unbatched(name):
    em, th = pair(name, 3, 4, num_layers=2)
    h = rand(2, 2, 4)
    hx = (h, rand(2, 2, 4)) if name == "LSTM" else h
    check(em, th, rand(5, 2, 3), hx, atol=1e-5)
    h1 = rand(2, 4)
    hx1 = (h1, rand(2, 4)) if name == "LSTM" else h1
    check(em, th, rand(5, 3), hx1, copy=False, atol=1e-5)


def test_rnn_relu():
    check(*pair("RNN", 3, 4, nonlinearity="relu"), rand(5, 2, 3))


@pytest.mark.parametrize("name", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cells(name):
    em, th = pair(name, 3, 5)
    check(em, th, rand(4, 3))
    h = rand(4, 5)
    check(em, th, rand(4, 3), (h, rand(4, 5)) if name == "LSTMCell" else h, copy=False)


# ---- attention / transformer --------------------------------------------------------
def test_multihead_attention():
    em, th = pair("MultiheadAttention", 8, 2)
    q, k = rand(5, 3, 8), rand(7, 3, 8)
    check(em, th, q, k, k)
    mask = np.triu(np.ones((5, 7), dtype=bool), 1)
    kpm = np.zeros((3, 7), dtype=bool)
    kpm[:, -1] = True
    copy_weights(em, th)
    eo, ew = em(ember.tensor(q), ember.tensor(k), ember.tensor(k), attn_mask=ember.tensor(mask),
                key_padding_mask=ember.tensor(kpm))
    to, tw = th(torch.tensor(q), torch.tensor(k), torch.tensor(k), attn_mask=torch.tensor(mask),
                key_padding_mask=torch.tensor(kpm))
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ew.detach().numpy(), tw.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_multihead_attention_batch_first_kdim():
    em, th = pair("MultiheadAttention", 8, 4, batch_first=True, kdim=6, vdim=5)
    check(em, th, rand(2, 3, 8), rand(2, 4, 6), rand(2, 4, 5),
          kwargs=dict(average_attn_weights=False))


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_encoder(norm_first):
    kw = dict(dim_feedforward=16, dropout=0.0, norm_first=norm_first, batch_first=True)
    em = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, **kw), 2)
    th = tnn.TransformerEncoder(tnn.TransformerEncoderLayer(8, 2, **kw), 2,
                                enable_nested_tensor=False)
    check(em, th, rand(3, 5, 8), atol=1e-4)
    assert [n for n, _ in em.named_parameters()] == [n for n, _ in th.named_parameters()]


def test_default_initialisations_match_torch_bounds():
    # same fan-in rules: weights of Linear/Conv within kaiming_uniform(a=sqrt(5)) bounds
    for em in (nn.Linear(50, 20), nn.Conv2d(3, 8, 5)):
        fan_in = em.weight[0].numel()
        bound = 1 / np.sqrt(fan_in)
        w = em.weight.detach().numpy()
        assert np.abs(w).max() <= bound + 1e-6 and np.abs(w).max() > 0.8 * bound
        b = em.bias.detach().numpy()
        assert np.abs(b).max() <= bound + 1e-6
    lstm = nn.LSTM(4, 16)
    for p in lstm.parameters():
        assert np.abs(p.detach().numpy()).max() <= 0.25 + 1e-6
    bn = nn.BatchNorm2d(3)
    assert bn.weight.detach().numpy().tolist() == [1, 1, 1]
    assert bn.bias.detach().numpy().tolist() == [0, 0, 0]
    mha = nn.MultiheadAttention(8, 2)
    assert float(mha.in_proj_bias.abs().sum().item()) == 0
