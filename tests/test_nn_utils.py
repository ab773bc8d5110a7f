"""``ember.nn.utils`` against PyTorch: variable-length sequences (``rnn``) and
PackedSequence through RNN/LSTM/GRU, parametrizations, pruning and ``functional_call``."""
import numpy as np
import pytest
from conftest import check_parity, copy_torch_weights

import ember
import ember.nn as nn
from ember.nn.utils import rnn as ernn

torch = pytest.importorskip("torch")
trnn = torch.nn.utils.rnn
RNG = np.random.default_rng(5)


def rand(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


def _np(t):
    return t.detach().numpy()


def _same_packed(e, t):
    np.testing.assert_allclose(_np(e.data), _np(t.data), rtol=1e-7, atol=1e-9)
    np.testing.assert_array_equal(e.batch_sizes.numpy(), t.batch_sizes.numpy())
    for a, b in ((e.sorted_indices, t.sorted_indices),
                 (e.unsorted_indices, t.unsorted_indices)):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_array_equal(a.numpy(), b.numpy())


LENS = [[5, 3, 3, 1], [2, 5, 1, 4]]


@pytest.mark.parametrize("lengths", LENS)
@pytest.mark.parametrize("batch_first", [False, True])
def test_pack_pad_round_trip_matches_torch(lengths, batch_first):
    x = rand(5, 4, 3) if not batch_first else rand(4, 5, 3)
    sort = lengths == sorted(lengths, reverse=True)
    ep = ernn.pack_padded_sequence(ember.tensor(x), lengths, batch_first, enforce_sorted=sort)
    tp = trnn.pack_padded_sequence(torch.tensor(x), lengths, batch_first, enforce_sorted=sort)
    assert isinstance(ep, ernn.PackedSequence)
    _same_packed(ep, tp)
    for total in (None, 7):
        ev, el = ernn.pad_packed_sequence(ep, batch_first, -1.0, total)
        tv, tl = trnn.pad_packed_sequence(tp, batch_first, -1.0, total)
        np.testing.assert_array_equal(ev.numpy(), tv.numpy())
        np.testing.assert_array_equal(el.numpy(), tl.numpy())
    check_parity(lambda a: ernn.pad_packed_sequence(
                     ernn.pack_padded_sequence(a, lengths, batch_first, False), batch_first)[0],
                 lambda a: trnn.pad_packed_sequence(
                     trnn.pack_padded_sequence(a, lengths, batch_first, False), batch_first)[0],
                 x)


def test_pad_unpad_pack_sequence_match_torch():
    seqs = [rand(n, 2) for n in (3, 5, 1)]
    for bf in (False, True):
        for side in ("right", "left"):
            e = ernn.pad_sequence([ember.tensor(s) for s in seqs], bf, 9.0, side)
            t = trnn.pad_sequence([torch.tensor(s) for s in seqs], bf, 9.0, side)
            np.testing.assert_array_equal(e.numpy(), t.numpy())
        e = ernn.pad_sequence([ember.tensor(s) for s in seqs], bf)
        back = ernn.unpad_sequence(e, ember.tensor([3, 5, 1]), bf)
        for a, s in zip(back, seqs):
            np.testing.assert_array_equal(a.numpy(), s)
    ep = ernn.pack_sequence([ember.tensor(s) for s in seqs], enforce_sorted=False)
    tp = trnn.pack_sequence([torch.tensor(s) for s in seqs], enforce_sorted=False)
    _same_packed(ep, tp)
    for a, s in zip(ernn.unpack_sequence(ep), seqs):
        np.testing.assert_array_equal(a.numpy(), s)
    np.testing.assert_array_equal(
        ernn.invert_permutation(ember.tensor([2, 0, 1])).numpy(),
        trnn.invert_permutation(torch.tensor([2, 0, 1])).numpy())
    assert ep.to(ember.float32).data.dtype == ember.float32 and ep.double() is ep


def test_pack_errors_match_torch():
    x = rand(4, 3, 2)
    for args, kw in [(([1, 3, 2],), {}), (([3, 0, 2],), {"enforce_sorted": False})]:
        with pytest.raises(RuntimeError):
            trnn.pack_padded_sequence(torch.tensor(x), *args, **kw)
        with pytest.raises(RuntimeError):
            ernn.pack_padded_sequence(ember.tensor(x), *args, **kw)
    tp = trnn.pack_padded_sequence(torch.tensor(x), [4, 2, 1])
    ep = ernn.pack_padded_sequence(ember.tensor(x), [4, 2, 1])
    with pytest.raises(ValueError):
        trnn.pad_packed_sequence(tp, total_length=3)
    with pytest.raises(ValueError):
        ernn.pad_packed_sequence(ep, total_length=3)


@pytest.mark.parametrize("mode,kw", [
    ("RNN", {}), ("RNN", {"nonlinearity": "relu", "bidirectional": True}),
    ("LSTM", {"num_layers": 2}), ("LSTM", {"bidirectional": True, "proj_size": 2}),
    ("GRU", {"bidirectional": True, "num_layers": 2}), ("GRU", {"batch_first": True}),
])
def test_rnns_accept_packed_sequences_like_torch(mode, kw):
    torch.manual_seed(0)
    tm = getattr(torch.nn, mode)(3, 4, **kw).double()
    em = copy_torch_weights(tm, getattr(nn, mode)(3, 4, dtype=ember.float64, **kw))
    lengths = [2, 5, 1, 4]
    bf = kw.get("batch_first", False)
    x = rand(4, 5, 3) if bf else rand(5, 4, 3)
    ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ep = ernn.pack_padded_sequence(ex, lengths, bf, enforce_sorted=False)
    tp = trnn.pack_padded_sequence(tx, lengths, bf, enforce_sorted=False)
    eo, eh = em(ep)
    to, th = tm(tp)
    _same_packed(eo, to)
    ehs = eh if isinstance(eh, tuple) else (eh,)
    ths = th if isinstance(th, tuple) else (th,)
    for a, b in zip(ehs, ths):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-7, atol=1e-9)
    g = rand(*to.data.shape)
    ((eo.data * ember.tensor(g)).sum() + ehs[0].sum()).backward()
    ((to.data * torch.tensor(g)).sum() + ths[0].sum()).backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-6, atol=1e-8)
    name = "weight_hh_l0"
    np.testing.assert_allclose(em.get_parameter(name).grad.numpy(),
                               tm.get_parameter(name).grad.numpy(), rtol=1e-6, atol=1e-8)


def test_packed_lstm_with_initial_state_matches_torch():
    tm = torch.nn.LSTM(3, 4).double()
    em = copy_torch_weights(tm, nn.LSTM(3, 4, dtype=ember.float64))
    h0, c0 = rand(1, 3, 4), rand(1, 3, 4)
    seqs = [rand(n, 3) for n in (2, 4, 3)]
    ep = ernn.pack_sequence([ember.tensor(s) for s in seqs], enforce_sorted=False)
    tp = trnn.pack_sequence([torch.tensor(s) for s in seqs], enforce_sorted=False)
    eo, (eh, ec) = em(ep, (ember.tensor(h0), ember.tensor(c0)))
    to, (th, tc) = tm(tp, (torch.tensor(h0), torch.tensor(c0)))
    _same_packed(eo, to)
    np.testing.assert_allclose(_np(eh), _np(th), rtol=1e-7)
    np.testing.assert_allclose(_np(ec), _np(tc), rtol=1e-7)
    assert "RNNCellBase" in nn.__all__ and issubclass(nn.LSTMCell, nn.RNNCellBase)
