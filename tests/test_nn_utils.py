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
pytestmark = pytest.mark.filterwarnings("ignore:`torch.nn.utils.weight_norm` is deprecated")
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


# ---- parametrize / parametrizations -------------------------------------------------------
P = nn.utils.parametrize
TP = torch.nn.utils.parametrize


class _Symmetric(nn.Module):
    def forward(self, x):
        return x.triu() + x.triu(1).transpose(0, 1)

    def right_inverse(self, a):
        return a.triu()


class _TSymmetric(torch.nn.Module):
    def forward(self, x):
        return x.triu() + x.triu(1).transpose(0, 1)

    def right_inverse(self, a):
        return a.triu()


class _Double(nn.Module):
    def forward(self, x):
        return x * 2


def test_register_parametrization_matches_torch():
    tm = torch.nn.Linear(3, 3).double()
    em = copy_torch_weights(tm, nn.Linear(3, 3, dtype=ember.float64))
    TP.register_parametrization(tm, "weight", _TSymmetric())
    P.register_parametrization(em, "weight", _Symmetric())
    assert P.is_parametrized(em) and P.is_parametrized(em, "weight")
    assert not P.is_parametrized(em, "bias")
    assert type(em).__name__ == type(tm).__name__ == "ParametrizedLinear"
    assert P.type_before_parametrizations(em) is nn.Linear
    assert list(em.state_dict()) == list(tm.state_dict())
    np.testing.assert_allclose(_np(em.weight), _np(tm.weight), rtol=1e-12)
    x = rand(2, 3)
    check_parity(em, tm, x)
    orig = em.parametrizations.weight.original
    assert orig.grad is not None     # the gradient reaches the original parameter
    np.testing.assert_allclose(orig.grad.numpy(), tm.parametrizations.weight.original.grad
                               .numpy(), rtol=1e-10)
    # assignment goes through right_inverse
    s = rand(3, 3)
    s = s + s.T
    em.weight = ember.tensor(s)
    np.testing.assert_allclose(_np(em.weight), s, rtol=1e-12)
    assert em.parametrizations.weight.original is orig
    # a second parametrization chains
    P.register_parametrization(em, "weight", _Double())
    np.testing.assert_allclose(_np(em.weight), 2 * s, rtol=1e-12)
    with P.cached():
        assert em.weight is em.weight
    P.remove_parametrizations(em, "weight")
    assert type(em) is nn.Linear and isinstance(em.weight, nn.Parameter)
    np.testing.assert_allclose(_np(em.weight), 2 * s, rtol=1e-12)
    assert sorted(em.state_dict()) == ["bias", "weight"]


def test_parametrize_errors_match_torch():
    class Shrink(nn.Module):
        def forward(self, x):
            return x[:1]

    class TShrink(torch.nn.Module):
        def forward(self, x):
            return x[:1]

    with pytest.raises(ValueError):
        TP.register_parametrization(torch.nn.Linear(2, 2), "weight", TShrink())
    with pytest.raises(ValueError):
        P.register_parametrization(nn.Linear(2, 2), "weight", Shrink())
    with pytest.raises(ValueError):
        TP.register_parametrization(torch.nn.Linear(2, 2), "nope", TShrink())
    with pytest.raises(ValueError):
        P.register_parametrization(nn.Linear(2, 2), "nope", Shrink())
    with pytest.raises(ValueError):
        P.remove_parametrizations(nn.Linear(2, 2), "weight")
    m = P.register_parametrization(nn.Linear(2, 2), "weight", _Double())
    with pytest.raises(RuntimeError):      # _Double has no right_inverse
        m.weight = ember.ones(2, 2)


@pytest.mark.parametrize("dim", [0, 1, None, -1])
def test_weight_norm_matches_torch(dim):
    tm = torch.nn.Conv2d(2, 3, 3).double()
    em = copy_torch_weights(tm, nn.Conv2d(2, 3, 3, dtype=ember.float64))
    torch.nn.utils.parametrizations.weight_norm(tm, dim=dim)
    nn.utils.parametrizations.weight_norm(em, dim=dim)
    assert {k: tuple(v.shape) for k, v in em.state_dict().items()} == \
        {k: tuple(v.shape) for k, v in tm.state_dict().items()}
    copy_torch_weights(tm, em)
    check_parity(em, tm, rand(1, 2, 5, 5), rtol=1e-9)
    for k in ("original0", "original1"):
        np.testing.assert_allclose(
            getattr(em.parametrizations.weight, k).grad.numpy(),
            getattr(tm.parametrizations.weight, k).grad.numpy(), rtol=1e-8, atol=1e-10)


def test_weight_norm_loads_hook_based_checkpoint():
    tm = torch.nn.utils.weight_norm(torch.nn.Linear(4, 2).double())
    sd = {k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()}
    assert {"weight_g", "weight_v"} <= set(sd)
    em = nn.utils.parametrizations.weight_norm(nn.Linear(4, 2, dtype=ember.float64))
    em.load_state_dict(sd)
    check_parity(em, tm, rand(3, 4), rtol=1e-9)


@pytest.mark.parametrize("make", [lambda m: m.Linear(5, 4), lambda m: m.Conv2d(3, 4, 2),
                                  lambda m: m.ConvTranspose2d(3, 4, 2)])
def test_spectral_norm_matches_torch(make):
    tm = make(torch.nn).double()
    em = copy_torch_weights(tm, make(nn).to(ember.float64))
    torch.nn.utils.parametrizations.spectral_norm(tm)
    nn.utils.parametrizations.spectral_norm(em)
    assert list(em.state_dict()) == list(tm.state_dict())
    copy_torch_weights(tm, em)             # same u, v estimates
    x = rand(2, 5) if isinstance(tm, torch.nn.Linear) else rand(1, 3, 4, 4)
    for _ in range(2):                      # training forwards run the power iteration
        check_parity(em, tm, x, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(em.parametrizations.weight[0]._u.numpy(),
                               tm.parametrizations.weight[0]._u.numpy(), rtol=1e-8)
    em.eval()
    tm.eval()
    check_parity(em, tm, x, rtol=1e-8, atol=1e-10)
    w = _np(em.weight).reshape(_np(em.weight).shape[0], -1)
    if isinstance(tm, torch.nn.ConvTranspose2d):
        w = np.moveaxis(_np(em.weight), 1, 0).reshape(4, -1)
    assert abs(np.linalg.svd(w, compute_uv=False)[0] - 1) < 0.05
    with pytest.raises(ValueError):
        nn.utils.parametrizations.spectral_norm(nn.Linear(2, 2), n_power_iterations=0)


# ---- prune ------------------------------------------------------------------------------
PR = nn.utils.prune
TPR = pytest.importorskip("torch.nn.utils.prune")


def _pair_linear(n_in=6, n_out=5):
    tm = torch.nn.Linear(n_in, n_out).double()
    return tm, copy_torch_weights(tm, nn.Linear(n_in, n_out, dtype=ember.float64))


@pytest.mark.parametrize("amount", [0.3, 7, 0])
def test_l1_unstructured_matches_torch(amount):
    tm, em = _pair_linear()
    TPR.l1_unstructured(tm, "weight", amount)
    PR.l1_unstructured(em, "weight", amount)
    assert list(em.state_dict()) == list(tm.state_dict())      # weight_orig, weight_mask
    np.testing.assert_array_equal(em.weight_mask.numpy(), tm.weight_mask.numpy())
    check_parity(em, tm, rand(3, 6))
    np.testing.assert_allclose(em.weight_orig.grad.numpy(), tm.weight_orig.grad.numpy(),
                               rtol=1e-12)
    assert PR.is_pruned(em) and not PR.is_pruned(nn.Linear(2, 2))


def test_iterative_pruning_and_remove_match_torch():
    tm, em = _pair_linear(8, 6)
    for fe, ft in [(lambda m: PR.l1_unstructured(m, "weight", 0.25),
                    lambda m: TPR.l1_unstructured(m, "weight", 0.25)),
                   (lambda m: PR.ln_structured(m, "weight", 2, 2, 0),
                    lambda m: TPR.ln_structured(m, "weight", 2, 2, 0)),
                   (lambda m: PR.ln_structured(m, "weight", 0.25, 1, -1),
                    lambda m: TPR.ln_structured(m, "weight", 0.25, 1, -1)),
                   (lambda m: PR.l1_unstructured(m, "bias", 2),
                    lambda m: TPR.l1_unstructured(m, "bias", 2))]:
        fe(em)
        ft(tm)
        np.testing.assert_array_equal(em.weight_mask.numpy(), tm.weight_mask.numpy())
    hooks = [h for h in em._forward_pre_hooks.values() if isinstance(h, PR.PruningContainer)]
    assert len(hooks) == 1 and len(hooks[0]) == 3
    check_parity(em, tm, rand(2, 8))
    PR.remove(em, "weight")
    TPR.remove(tm, "weight")
    assert isinstance(em.weight, nn.Parameter) and "weight_mask" not in dict(em.named_buffers())
    np.testing.assert_allclose(_np(em.weight), _np(tm.weight), rtol=1e-12)
    with pytest.raises(ValueError):
        PR.remove(em, "weight")
    with pytest.raises(ValueError):
        TPR.remove(tm, "weight")


def test_global_and_custom_pruning_match_torch():
    t1, e1 = _pair_linear(4, 3)
    t2, e2 = _pair_linear(3, 2)
    TPR.global_unstructured([(t1, "weight"), (t2, "weight")], TPR.L1Unstructured, amount=0.4)
    PR.global_unstructured([(e1, "weight"), (e2, "weight")], PR.L1Unstructured, amount=0.4)
    for e, t in ((e1, t1), (e2, t2)):
        np.testing.assert_array_equal(e.weight_mask.numpy(), t.weight_mask.numpy())
    mask = (RNG.random((3, 4)) > 0.5).astype(np.float64)
    tm, em = _pair_linear(4, 3)
    TPR.custom_from_mask(tm, "weight", torch.tensor(mask))
    PR.custom_from_mask(em, "weight", ember.tensor(mask))
    np.testing.assert_array_equal(_np(em.weight), _np(tm.weight))
    PR.identity(em, "bias")
    np.testing.assert_array_equal(em.bias_mask.numpy(), np.ones(3))
    with pytest.raises(TypeError):
        PR.global_unstructured([(e1, "bias")], PR.RandomStructured, amount=1)


def test_random_pruning_counts_and_errors():
    em = nn.Linear(10, 8)
    PR.random_unstructured(em, "weight", 0.25)
    assert int((em.weight_mask == 0).sum()) == 20
    PR.random_structured(em, "weight", 3, 0)
    rows = em.weight_mask.sum(1).numpy()
    assert int((rows == 0).sum()) >= 3
    for bad in (-1, 1.5):
        with pytest.raises(ValueError):
            TPR.L1Unstructured(bad)
        with pytest.raises(ValueError):
            PR.L1Unstructured(bad)
    with pytest.raises(TypeError):
        PR.L1Unstructured("a")
    with pytest.raises(ValueError):
        PR.l1_unstructured(nn.Linear(2, 2), "weight", 5)
    with pytest.raises(ValueError):
        PR.random_structured(nn.Linear(2, 2), "bias", 1, 0)
    m = nn.Linear(2, 2)
    with pytest.raises(ValueError):
        PR.l1_unstructured(m, "weight", 5)
    assert isinstance(m.weight, nn.Parameter) and "weight_orig" not in m._parameters


# ---- stateless.functional_call --------------------------------------------------------------
def test_functional_call_matches_torch():
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4)).double()
    em = copy_torch_weights(tm, nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)).double())
    w, b = rand(4, 3), rand(4)
    x = rand(5, 3)
    check_parity(
        lambda ww, xx: nn.utils.stateless.functional_call(
            em, ({"0.weight": ww}, {"0.bias": ember.tensor(b)}), (xx,)),
        lambda ww, xx: torch.func.functional_call(
            tm, ({"0.weight": ww}, {"0.bias": torch.tensor(b)}), (xx,)), w, x)
    np.testing.assert_allclose(em[0].weight.detach().numpy(), tm[0].weight.detach().numpy())
    assert em[0].weight.grad is None            # the module's own weight was not used
    np.testing.assert_allclose(em[1].running_mean.numpy(), tm[1].running_mean.numpy())
    with pytest.raises(RuntimeError):
        nn.utils.stateless.functional_call(em, {"0.weight": ember.tensor(w)},
                                           (ember.tensor(x),), strict=True)
    with pytest.raises(ValueError):
        nn.utils.stateless.functional_call(em, ({"0.weight": 1}, {"0.weight": 2}), ())


def test_functional_call_ties_weights():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(2, 2, bias=False)
            self.b = nn.Linear(2, 2, bias=False)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))

    m = Tied()
    w = ember.eye(2) * 3
    out = nn.utils.stateless.functional_call(m, {"a.weight": w}, ember.ones(1, 2))
    np.testing.assert_allclose(out.numpy(), [[9.0, 9.0]])
    out = nn.utils.stateless.functional_call(m, {"a.weight": w}, ember.ones(1, 2),
                                             tie_weights=False)
    assert not np.allclose(out.detach().numpy(), [[9.0, 9.0]])


def test_transfer_parametrizations_and_params():
    src = P.register_parametrization(nn.Linear(3, 3), "weight", _Symmetric())
    dst = nn.Linear(3, 3)
    P.transfer_parametrizations_and_params(src, dst)
    assert P.is_parametrized(dst, "weight")
    np.testing.assert_allclose(_np(dst.weight), _np(src.weight))
    np.testing.assert_allclose(_np(dst.weight), _np(dst.weight).T)


# ---- hook-based weight/spectral norm, fusion, clipping, init aliases ---------------------------
def test_hook_weight_norm_matches_torch():
    tm = torch.nn.Linear(4, 3).double()
    em = copy_torch_weights(tm, nn.Linear(4, 3, dtype=ember.float64))
    with pytest.warns(FutureWarning):
        torch.nn.utils.weight_norm(tm)
    with pytest.warns(FutureWarning):
        nn.utils.weight_norm(em)
    assert sorted(em.state_dict()) == sorted(tm.state_dict())
    check_parity(em, tm, rand(2, 4))
    np.testing.assert_allclose(em.weight_g.grad.numpy(), tm.weight_g.grad.numpy(), rtol=1e-10)
    with pytest.raises(RuntimeError):
        nn.utils.weight_norm(em)
    nn.utils.remove_weight_norm(em)
    torch.nn.utils.remove_weight_norm(tm)
    assert sorted(em.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(_np(em.weight), _np(tm.weight), rtol=1e-12)
    with pytest.raises(ValueError):
        nn.utils.remove_weight_norm(em)


def test_hook_spectral_norm_matches_torch():
    tm = torch.nn.Conv2d(3, 4, 2).double()
    em = copy_torch_weights(tm, nn.Conv2d(3, 4, 2, dtype=ember.float64))
    torch.nn.utils.spectral_norm(tm)
    nn.utils.spectral_norm(em)
    assert sorted(em.state_dict()) == sorted(tm.state_dict())
    for k in ("weight_u", "weight_v"):
        getattr(em, k).copy_(ember.tensor(getattr(tm, k).numpy()))
    x = rand(1, 3, 4, 4)
    for _ in range(2):
        check_parity(em, tm, x, rtol=1e-9)
    np.testing.assert_allclose(em.weight_orig.grad.numpy(), tm.weight_orig.grad.numpy(),
                               rtol=1e-8)
    nn.utils.remove_spectral_norm(em)
    torch.nn.utils.remove_spectral_norm(tm)
    np.testing.assert_allclose(_np(em.weight), _np(tm.weight), rtol=1e-9)
    with pytest.raises(ValueError):
        nn.utils.remove_spectral_norm(em)


def test_fusion_matches_torch():
    from torch.nn.utils import fusion as tfusion
    tc, tb = torch.nn.Conv2d(3, 4, 3).double(), torch.nn.BatchNorm2d(4).double()
    ec = copy_torch_weights(tc, nn.Conv2d(3, 4, 3, dtype=ember.float64))
    eb = nn.BatchNorm2d(4, dtype=ember.float64)
    tb.running_mean.copy_(torch.tensor(rand(4)))
    tb.running_var.copy_(torch.tensor(RNG.random(4) + 0.5))
    tb.weight.data.copy_(torch.tensor(rand(4)))
    copy_torch_weights(tb, eb)
    for m in (tc, tb, ec, eb):
        m.eval()
    ef, tf = nn.utils.fuse_conv_bn_eval(ec, eb), tfusion.fuse_conv_bn_eval(tc, tb)
    x = rand(2, 3, 5, 5)
    np.testing.assert_allclose(_np(ef(ember.tensor(x))), _np(tf(torch.tensor(x))), rtol=1e-10)
    np.testing.assert_allclose(_np(ef(ember.tensor(x))), _np(eb(ec(ember.tensor(x)))),
                               rtol=1e-9, atol=1e-12)
    tl, tb1 = torch.nn.Linear(3, 4).double(), torch.nn.BatchNorm1d(4).double()
    el = copy_torch_weights(tl, nn.Linear(3, 4, dtype=ember.float64))
    tb1.running_var.copy_(torch.tensor(RNG.random(4) + 0.5))
    eb1 = copy_torch_weights(tb1, nn.BatchNorm1d(4, dtype=ember.float64))
    for m in (tl, tb1, el, eb1):
        m.eval()
    x = rand(2, 3)
    np.testing.assert_allclose(_np(nn.utils.fuse_linear_bn_eval(el, eb1)(ember.tensor(x))),
                               _np(tfusion.fuse_linear_bn_eval(tl, tb1)(torch.tensor(x))),
                               rtol=1e-10)
    with pytest.raises(AssertionError):
        nn.utils.fuse_conv_bn_eval(ec.train(), eb)


def test_total_norm_and_clip_with_norm_match_torch():
    gs = [rand(3, 2), rand(4)]
    for p in (2.0, 1.0, float("inf")):
        e = nn.utils.get_total_norm([ember.tensor(g) for g in gs], p)
        t = torch.nn.utils.get_total_norm([torch.tensor(g) for g in gs], p)
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-12)
    ep = [nn.Parameter(ember.zeros(3, 2)), nn.Parameter(ember.zeros(4))]
    tp = [torch.nn.Parameter(torch.zeros(3, 2)), torch.nn.Parameter(torch.zeros(4))]
    for a, b, g in zip(ep, tp, gs):
        a.grad = ember.tensor(g.astype(np.float32))
        b.grad = torch.tensor(g.astype(np.float32))
    nn.utils.clip_grads_with_norm_(ep, 0.5, nn.utils.get_total_norm([p.grad for p in ep]))
    torch.nn.utils.clip_grads_with_norm_(tp, 0.5, torch.nn.utils.get_total_norm(
        [p.grad for p in tp]))
    for a, b in zip(ep, tp):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError):
        nn.utils.get_total_norm([ember.tensor([float("nan")])], error_if_nonfinite=True)


def test_init_aliases_and_sparse():
    w = ember.empty(10, 6)
    nn.init.sparse(w, 0.3)
    assert all(int((w[:, c] == 0).sum()) == 3 for c in range(6))
    e = ember.empty(3, 3)
    nn.init.eye(e)
    np.testing.assert_array_equal(e.numpy(), np.eye(3))
    d = ember.empty(2, 2, 3)
    nn.init.dirac(d)
    t = torch.empty(2, 2, 3)
    torch.nn.init.dirac_(t)
    np.testing.assert_array_equal(d.numpy(), t.numpy())


ORTH = [((4, 4), None, True), ((4, 4), "cayley", True), ((4, 4), "householder", True),
        ((5, 3), None, True), ((3, 5), "matrix_exp", True), ((5, 3), "cayley", True),
        ((3, 5), "householder", False), ((5, 3), "householder", False)]


@pytest.mark.parametrize("shape,orthogonal_map,triv", ORTH)
def test_orthogonal_matches_torch(shape, orthogonal_map, triv):
    out_f, in_f = shape
    tm = torch.nn.Linear(in_f, out_f).double()
    em = copy_torch_weights(tm, nn.Linear(in_f, out_f, dtype=ember.float64))
    torch.nn.utils.parametrizations.orthogonal(tm, orthogonal_map=orthogonal_map,
                                               use_trivialization=triv)
    nn.utils.parametrizations.orthogonal(em, orthogonal_map=orthogonal_map,
                                         use_trivialization=triv)
    assert list(em.state_dict()) == list(tm.state_dict())
    if out_f == in_f or not triv:       # no random completion of the base: same weight
        np.testing.assert_allclose(_np(em.weight), _np(tm.weight), rtol=1e-9, atol=1e-12)
    copy_torch_weights(tm, em)
    check_parity(em, tm, rand(2, in_f), rtol=1e-8, atol=1e-10)
    w = _np(em.weight)
    q = w if out_f >= in_f else w.T
    np.testing.assert_allclose(q.T @ q, np.eye(q.shape[1]), atol=1e-12)
    target = np.linalg.qr(rand(max(shape), min(shape)))[0]
    target = target if out_f >= in_f else target.T
    em.weight = ember.tensor(target)              # assignment goes through right_inverse
    np.testing.assert_allclose(_np(em.weight), target, atol=1e-12)


def test_orthogonal_errors_match_torch():
    for kw in ({"orthogonal_map": "qr"},):
        with pytest.raises(ValueError):
            torch.nn.utils.parametrizations.orthogonal(torch.nn.Linear(3, 3), **kw)
        with pytest.raises(ValueError):
            nn.utils.parametrizations.orthogonal(nn.Linear(3, 3), **kw)
    with pytest.raises(ValueError):
        nn.utils.parametrizations.orthogonal(nn.Linear(3, 3), "bias")
    tm = torch.nn.utils.parametrizations.orthogonal(torch.nn.Linear(3, 3),
                                                    use_trivialization=False)
    em = nn.utils.parametrizations.orthogonal(nn.Linear(3, 3), use_trivialization=False)
    with pytest.raises(NotImplementedError):   # exp/Cayley have no inverse to assign with
        tm.weight = torch.eye(3)
    with pytest.raises(NotImplementedError):
        em.weight = ember.eye(3)
