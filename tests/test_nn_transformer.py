"""Transformer, TransformerEncoder(Layer) and TransformerDecoder(Layer) against PyTorch:
state-dict keys and shapes, forward and gradients with the same weights, masks,
``norm_first``, ``is_causal`` and the causal-mask helper."""
import numpy as np
import pytest
from conftest import copy_torch_weights

import ember
import ember.nn as nn

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:enable_nested_tensor")
RNG = np.random.default_rng(3)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _pair(make):
    torch.manual_seed(0)
    t = make(torch.nn)
    e = make(nn)
    copy_torch_weights(t, e)
    t.eval()
    e.eval()
    return e, t


def _close(eo, to, tol=2e-5):
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_decoder_layer_matches_torch(norm_first, batch_first, activation):
    e, t = _pair(lambda m: m.TransformerDecoderLayer(16, 4, 32, dropout=0.0,
                                                     activation=activation,
                                                     batch_first=batch_first,
                                                     norm_first=norm_first))
    tgt, mem = rand(5, 3, 16), rand(7, 3, 16)
    if batch_first:
        tgt, mem = tgt.transpose(1, 0, 2).copy(), mem.transpose(1, 0, 2).copy()
    mask = nn.Transformer.generate_square_subsequent_mask(5)
    tmask = torch.nn.Transformer.generate_square_subsequent_mask(5)
    kpm = np.zeros((3, 7), bool)
    kpm[1, 5:] = True
    et, tt = ember.tensor(tgt, requires_grad=True), torch.tensor(tgt, requires_grad=True)
    eo = e(et, ember.tensor(mem), tgt_mask=mask, memory_key_padding_mask=ember.tensor(kpm),
           tgt_is_causal=True)
    to = t(tt, torch.tensor(mem), tgt_mask=tmask, memory_key_padding_mask=torch.tensor(kpm),
           tgt_is_causal=True)
    _close(eo, to)
    g = rand(*to.shape)
    (eo * ember.tensor(g)).sum().backward()
    (to * torch.tensor(g)).sum().backward()
    _close(et.grad, tt.grad, 1e-4)
    _close(e.linear1.weight.grad, t.linear1.weight.grad, 1e-4)
    _close(e.multihead_attn.in_proj_weight.grad, t.multihead_attn.in_proj_weight.grad, 1e-4)


def test_decoder_stack_and_unbatched_match_torch():
    e, t = _pair(lambda m: m.TransformerDecoder(m.TransformerDecoderLayer(8, 2, 16, 0.0), 3,
                                                norm=m.LayerNorm(8)))
    assert len(e.state_dict()) == len(t.state_dict())
    tgt, mem = rand(4, 2, 8), rand(6, 2, 8)
    mm = rand(4, 6)
    _close(e(ember.tensor(tgt), ember.tensor(mem), memory_mask=ember.tensor(mm)),
           t(torch.tensor(tgt), torch.tensor(mem), memory_mask=torch.tensor(mm)))
    # unbatched (T, E) with a boolean target mask
    bm = np.triu(np.ones((4, 4), bool), 1)
    _close(e(ember.tensor(tgt[:, 0]), ember.tensor(mem[:, 0]), tgt_mask=ember.tensor(bm)),
           t(torch.tensor(tgt[:, 0]), torch.tensor(mem[:, 0]), tgt_mask=torch.tensor(bm)))


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_matches_torch(norm_first):
    e, t = _pair(lambda m: m.Transformer(16, 4, 2, 2, 32, dropout=0.0, batch_first=True,
                                         norm_first=norm_first))
    assert [k for k in e.state_dict()] == [k for k in t.state_dict()]
    src, tgt = rand(2, 6, 16), rand(2, 5, 16)
    kpm = np.zeros((2, 6), bool)
    kpm[0, 4:] = True
    es, ts = ember.tensor(src, requires_grad=True), torch.tensor(src, requires_grad=True)
    eo = e(es, ember.tensor(tgt), tgt_mask=nn.Transformer.generate_square_subsequent_mask(5),
           src_key_padding_mask=ember.tensor(kpm), memory_key_padding_mask=ember.tensor(kpm))
    to = t(ts, torch.tensor(tgt),
           tgt_mask=torch.nn.Transformer.generate_square_subsequent_mask(5),
           src_key_padding_mask=torch.tensor(kpm), memory_key_padding_mask=torch.tensor(kpm))
    _close(eo, to, 1e-4)
    eo.sum().backward()
    to.sum().backward()
    _close(es.grad, ts.grad, 1e-4)


def test_transformer_default_init_and_errors():
    m = nn.Transformer(8, 2, 1, 1, 16)
    t = torch.nn.Transformer(8, 2, 1, 1, 16)
    assert {k: tuple(v.shape) for k, v in m.state_dict().items()} == \
        {k: tuple(v.shape) for k, v in t.state_dict().items()}
    w = m.encoder.layers[0].linear1.weight
    bound = (6 / (8 + 16)) ** 0.5   # xavier_uniform_ on every matrix
    assert float(w.abs().max()) <= bound and float(w.std()) > bound / 4
    with pytest.raises(RuntimeError, match="batch number"):
        m(ember.randn(3, 2, 8), ember.randn(3, 4, 8))
    with pytest.raises(RuntimeError):
        t(torch.randn(3, 2, 8), torch.randn(3, 4, 8))
    with pytest.raises(RuntimeError, match="d_model"):
        m(ember.randn(3, 2, 6), ember.randn(3, 2, 6))
    with pytest.raises(RuntimeError):
        t(torch.randn(3, 2, 6), torch.randn(3, 2, 6))
    with pytest.raises(RuntimeError, match="relu/gelu"):
        nn.TransformerDecoderLayer(8, 2, activation="tanh")


def test_generate_square_subsequent_mask_matches_torch():
    for n in (1, 4):
        em = nn.Transformer.generate_square_subsequent_mask(n)
        tm = torch.nn.Transformer.generate_square_subsequent_mask(n)
        assert em.dtype == ember.float32
        np.testing.assert_array_equal(em.numpy(), tm.numpy())
    em = nn.Transformer.generate_square_subsequent_mask(3, dtype=ember.float64)
    assert em.dtype == ember.float64


def test_encoder_detects_causal_mask():
    from ember.nn.modules.transformer import _detect_is_causal_mask
    m = nn.Transformer.generate_square_subsequent_mask(4)
    assert _detect_is_causal_mask(m) is True
    assert _detect_is_causal_mask(m, size=5) is False
    assert _detect_is_causal_mask(ember.zeros(4, 4)) is False
    assert _detect_is_causal_mask(None, True) is True
    e, t = _pair(lambda mm: mm.TransformerEncoder(mm.TransformerEncoderLayer(8, 2, 16, 0.0), 2))
    x = rand(4, 2, 8)
    _close(e(ember.tensor(x), mask=m, is_causal=True),
           t(torch.tensor(x), mask=torch.nn.Transformer.generate_square_subsequent_mask(4),
             is_causal=True))
