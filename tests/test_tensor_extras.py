"""Smaller torch names without an op-database shape: deprecated resize forms, map2_,
method forms of nn functions, pointer and placement predicates."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def test_resize_forms_match_torch():
    e, t = ember.arange(6.0), torch.arange(6.0)
    with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
        r = e.resize(2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rt = t.resize(2, 3)
        np.testing.assert_array_equal(r.numpy(), rt.numpy())
        r[0, 0] = 100.0                               # a view of a contiguous tensor
        assert e[0].item() == 100.0
        with pytest.raises(RuntimeError, match="preserving the number of elements"):
            e.resize(4)
        with pytest.raises(RuntimeError):
            t.resize(4)
        assert e.resize_as(ember.ones(3, 2)).shape == t.resize_as(torch.ones(3, 2)).shape


def test_map2_matches_torch():
    a, b, c = (np.arange(k, k + 4, dtype=np.float32) for k in (0, 5, 9))
    e, t = ember.tensor(a), torch.tensor(a)
    fn = lambda p, q, r: p + q * r   # noqa: E731
    assert e.map2_(ember.tensor(b), ember.tensor(c), fn) is e
    t.map2_(torch.tensor(b), torch.tensor(c), fn)
    np.testing.assert_array_equal(e.numpy(), t.numpy())
    with pytest.raises(TypeError):
        e.map2_(ember.tensor(b).double(), ember.tensor(c), fn)


def test_nn_methods_match_torch():
    x = np.linspace(-1.5, 1.5, 8, dtype=np.float32).reshape(2, 4)
    np.testing.assert_array_equal(ember.tensor(x).hardshrink(0.6).numpy(),
                                  torch.tensor(x).hardshrink(0.6).numpy())
    np.testing.assert_array_equal(ember.tensor(x).hardshrink().numpy(),
                                  torch.tensor(x).hardshrink().numpy())
    w = np.array([0.1, 0.2, 0.3, 0.4], np.float32)
    y = np.linspace(-1, 1, 16, dtype=np.float32).reshape(2, 4, 2)
    np.testing.assert_allclose(ember.tensor(y).prelu(ember.tensor(w)).numpy(),
                               torch.tensor(y).prelu(torch.tensor(w)).numpy())


def test_pointer_and_placement_predicates():
    e = ember.arange(4.0)
    assert e[1:].const_data_ptr() == e[1:].data_ptr() == e.data_ptr() + 4
    assert e.is_distributed() is torch.arange(4.0).is_distributed() is False


def test_inplace_function_forms_match_torch():
    a = np.arange(12.0, dtype=np.float32)
    e, t = ember.tensor(a), torch.tensor(a)
    assert ember.as_strided_(e, (2, 2), (1, 3), 1) is e
    torch.as_strided_(t, (2, 2), (1, 3), 1)
    assert e.stride() == t.stride() and e.storage_offset() == t.storage_offset()
    np.testing.assert_array_equal(e.numpy(), t.numpy())
    e, t = ember.arange(6.0), torch.arange(6.0)
    assert ember.resize_as_(e, ember.ones(2, 3)) is e
    torch.resize_as_(t, torch.ones(2, 3))
    np.testing.assert_array_equal(e.numpy(), t.numpy())
    assert ember.is_distributed(e) is torch.is_distributed(t) is False


def test_cond_matches_torch():
    x = np.array([1.0, -2.0, 3.0], np.float32)
    for pred in (True, False):
        e = ember.cond(ember.tensor(x).sum() > 0 if pred else ember.tensor(False),
                       lambda v: v + 1, lambda v: v * 2, (ember.tensor(x),))
        t = torch.cond(torch.tensor(x).sum() > 0 if pred else torch.tensor(False),
                       lambda v: v + 1, lambda v: v * 2, (torch.tensor(x),))
        np.testing.assert_array_equal(e.numpy(), t.numpy())
    # gradients flow through the branch taken
    v = ember.tensor(x, requires_grad=True)
    ember.cond(True, lambda a: (a * a).sum(), lambda a: a.sum(), [v]).backward()
    np.testing.assert_array_equal(v.grad.numpy(), 2 * x)
    with pytest.raises(RuntimeError, match="single-element"):
        ember.cond(ember.tensor([True, False]), lambda a: a, lambda a: a, (v,))


def test_while_loop_matches_torch():
    def run(lib):
        return lib.while_loop(lambda i, x: i < 4, lambda i, x: (i + 1, x * 2 - 1),
                              (lib.tensor(0), lib.tensor([1.5, -0.5])))
    e, t = run(ember), run(torch)
    assert e[0].item() == t[0].item() == 4
    np.testing.assert_array_equal(e[1].numpy(), t[1].numpy())
    same = ember.while_loop(lambda x: x.sum() > 100, lambda x: (x + 1,), (ember.ones(2),))
    assert same[0].tolist() == [1.0, 1.0]       # condition false at once: the inputs
    with pytest.raises(RuntimeError, match="same metadata"):
        ember.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, x.sum()),
                         (ember.tensor(0), ember.ones(3)))


def test_anomaly_switches_and_thread_init_at_the_top_level():
    assert ember.is_anomaly_enabled() is torch.is_anomaly_enabled() is False
    try:
        ember.set_anomaly_enabled(True, False)
        assert ember.is_anomaly_enabled() and not ember.is_anomaly_check_nan_enabled()
        assert ember.autograd.is_anomaly_enabled()
    finally:
        ember.set_anomaly_enabled(False)
    assert not ember.is_anomaly_enabled() and ember.is_anomaly_check_nan_enabled()
    n = ember.get_num_threads()
    assert ember.init_num_threads() is None and ember.get_num_threads() == n


@pytest.mark.parametrize("shape", [(20, 12), (12, 20), (2, 15, 9)])
def test_svd_lowrank_recovers_a_low_rank_matrix(shape):
    rng = np.random.default_rng(0)
    *batch, m, n = shape
    A = rng.standard_normal((*batch, m, 3)) @ rng.standard_normal((*batch, 3, n))
    ember.manual_seed(0)
    U, S, V = ember.svd_lowrank(ember.tensor(A), q=4)
    assert tuple(U.shape) == (*batch, m, 4) and tuple(V.shape) == (*batch, n, 4)
    np.testing.assert_allclose(((U * S.unsqueeze(-2)) @ V.mT).numpy(), A, atol=1e-10)
    np.testing.assert_allclose(S.numpy()[..., :3],
                               torch.linalg.svdvals(torch.tensor(A))[..., :3].numpy(),
                               rtol=1e-10)
    np.testing.assert_allclose((U.mT @ U).numpy(), np.broadcast_to(np.eye(4), (*batch, 4, 4)),
                               atol=1e-12)
    with pytest.raises(ValueError, match="q"):
        ember.svd_lowrank(ember.tensor(A), q=min(m, n) + 1)


def test_pca_lowrank_matches_torch():
    rng = np.random.default_rng(1)
    low = rng.standard_normal((30, 2)) @ rng.standard_normal((2, 5))
    ember.manual_seed(0)
    for center in (True, False):
        A = low + 4.0 if center else low        # of rank 2 once centred
        _, S, V = ember.pca_lowrank(ember.tensor(A), q=2, center=center)
        _, St, Vt = torch.pca_lowrank(torch.tensor(A), q=2, center=center)
        np.testing.assert_allclose(S.numpy(), St.numpy(), rtol=1e-8)
        # directions agree up to sign
        np.testing.assert_allclose(np.abs((V.mT @ ember.tensor(Vt.numpy())).numpy()),
                                   np.eye(2), atol=1e-8)


def test_histogramdd_weights_and_edge_tensors_match_torch():
    rng = np.random.default_rng(2)
    x = rng.uniform(-1, 1, (50, 2)).astype(np.float32)
    w = rng.random(50).astype(np.float32)
    edges = [np.array([-1.0, -0.2, 0.1, 1.0], np.float32), np.array([-0.5, 0.5], np.float32)]
    e = ember.histogramdd(ember.tensor(x), [ember.tensor(b) for b in edges],
                          weight=ember.tensor(w), density=True)
    t = torch.histogramdd(torch.tensor(x), [torch.tensor(b) for b in edges],
                          weight=torch.tensor(w), density=True)
    np.testing.assert_allclose(e.hist.numpy(), t.hist.numpy(), rtol=1e-5)
    np.testing.assert_allclose(e.hist.numpy(), np.histogramdd(x, edges, weights=w,
                                                              density=True)[0], rtol=1e-5)
    assert [b.tolist() for b in e.bin_edges] == [b.tolist() for b in t.bin_edges]


def _spd(rng, m, lo=1.0, hi=50.0):
    Q, _ = np.linalg.qr(rng.standard_normal((m, m)))
    return (Q * np.linspace(lo, hi, m)) @ Q.T


@pytest.mark.parametrize("largest", [True, False])
def test_lobpcg_finds_extreme_eigenpairs(largest):
    rng = np.random.default_rng(3)
    A = _spd(rng, 40)
    want = np.linalg.eigvalsh(A)
    want = want[::-1][:3] if largest else want[:3]
    ember.manual_seed(0)
    steps = []
    E, X = ember.lobpcg(ember.tensor(A), k=3, largest=largest,
                        tracker=lambda s: steps.append(s.iparams["istep"]))
    np.testing.assert_allclose(E.numpy(), want, rtol=1e-8)
    np.testing.assert_allclose(torch.lobpcg(torch.tensor(A), k=3, largest=largest)[0].numpy(),
                               want, rtol=1e-6)
    Xn = X.numpy()
    np.testing.assert_allclose(A @ Xn, Xn * E.numpy(), atol=1e-6)
    assert steps and steps == list(range(len(steps)))


def test_lobpcg_generalized_batched_and_float32():
    rng = np.random.default_rng(4)
    A, Bm = _spd(rng, 30), _spd(rng, 30, 1.0, 3.0)
    E, X = ember.lobpcg(ember.tensor(A), k=2, B=ember.tensor(Bm))
    Et, _ = torch.lobpcg(torch.tensor(A), k=2, B=torch.tensor(Bm))
    np.testing.assert_allclose(E.numpy(), Et.numpy(), rtol=1e-7)
    Xn = X.numpy()
    np.testing.assert_allclose(A @ Xn, Bm @ Xn * E.numpy(), atol=1e-6)
    np.testing.assert_allclose(Xn.T @ Bm @ Xn, np.eye(2), atol=1e-8)   # B-orthonormal
    As = np.stack([_spd(rng, 15), _spd(rng, 15, 2.0, 9.0)])
    E, X = ember.lobpcg(ember.tensor(As.astype(np.float32)), k=1)
    assert tuple(E.shape) == (2, 1) and tuple(X.shape) == (2, 15, 1)
    np.testing.assert_allclose(E.numpy()[:, 0], [50.0, 9.0], rtol=1e-4)
    with pytest.raises(ValueError, match="3 x the number"):
        ember.lobpcg(ember.tensor(A[:5, :5]), k=2)


def test_is_nonzero_matches_torch():
    for a in (np.array(0.0), np.array([[3]]), np.array([False])):
        assert ember.is_nonzero(ember.tensor(a)) is torch.is_nonzero(torch.tensor(a))
        assert ember.tensor(a).is_nonzero() is torch.tensor(a).is_nonzero()
    for a, msg in ((np.ones(0), "no values"), (np.ones(2), "more than one value")):
        with pytest.raises(RuntimeError, match=msg):
            torch.is_nonzero(torch.tensor(a))
        with pytest.raises(RuntimeError, match=msg):
            ember.is_nonzero(ember.tensor(a))


def test_slice_inverse_matches_torch():
    a = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    for lib in (ember, torch):
        base = lib.tensor(a)
        r = lib.slice_inverse(base[:, 1:3], base, 1, 1, 3, 1)
        assert tuple(r.shape) == (3, 4) and r.stride() == (4, 1) and \
            r.data_ptr() == base.data_ptr()
        np.testing.assert_array_equal(r.numpy(), a)
        assert base[1:].slice_inverse(base, 0, 1).storage_offset() == 0
        with pytest.raises(RuntimeError):
            lib.slice_inverse(base[:, 1:3].clone(), base, 1, 1, 3)


def test_set_flush_denormal_matches_torch():
    tiny = np.array([1e-310, 2.5e-320, 1.0], np.float64)    # two float64 denormals
    try:
        on = ember.set_flush_denormal(True)
        assert on is torch.set_flush_denormal(True)
        torch.set_flush_denormal(False)     # torch's switch is this thread's too: ember's
        ember.set_flush_denormal(True)      # own call must be what flushes below
        if on:
            np.testing.assert_array_equal((ember.tensor(tiny) * 1.0).numpy(), [0.0, 0.0, 1.0])
        assert ember.set_flush_denormal(False) is on
        np.testing.assert_array_equal((ember.tensor(tiny) * 1.0).numpy(), tiny)
    finally:
        ember.set_flush_denormal(False)
        torch.set_flush_denormal(False)


def test_legacy_tensor_types_match_torch():
    names = ("FloatTensor", "DoubleTensor", "LongTensor", "IntTensor", "ByteTensor",
             "BoolTensor", "HalfTensor", "ShortTensor", "CharTensor", "BFloat16Tensor")
    for n in names:
        ec, tc = getattr(ember, n), getattr(torch, n)
        assert str(ec.dtype).split(".")[-1] == str(tc.dtype).split(".")[-1], n
        for dt in ("float32", "int64", "bool"):
            assert isinstance(ember.ones(2, dtype=getattr(ember, dt)), ec) == \
                isinstance(torch.ones(2, dtype=getattr(torch, dt)), tc), (n, dt)
    assert ember.LongTensor([1, 2]).tolist() == torch.LongTensor([1, 2]).tolist()
    assert ember.LongTensor([1, 2]).dtype == ember.int64
    assert tuple(ember.FloatTensor(2, 3).shape) == tuple(torch.FloatTensor(2, 3).shape)
    assert tuple(ember.DoubleTensor(ember.Size([4])).shape) == (4,)
    assert tuple(ember.FloatTensor().shape) == tuple(torch.FloatTensor().shape) == (0,)
    x, t = ember.tensor([1.5, -2.5]), torch.tensor([1.5, -2.5])
    for spec in ("LongTensor", "torch.IntTensor", "torch.DoubleTensor"):
        e = x.type(getattr(ember, spec) if "." not in spec else spec)
        r = t.type(getattr(torch, spec) if "." not in spec else spec)
        assert e.tolist() == r.tolist() and str(e.dtype)[6:] == str(r.dtype)[6:], spec
    assert x.type() == "ember.FloatTensor" and x.type(ember.float64).dtype == ember.float64
    with pytest.raises(ValueError):
        x.type("torch.NoSuchTensor")


def test_numeric_constants_match_torch():
    for n in ("e", "pi", "inf"):
        assert getattr(ember, n) == getattr(torch, n)
    assert np.isnan(ember.nan) and ember.newaxis is torch.newaxis is None
    assert tuple(ember.ones(3)[:, ember.newaxis].shape) == (3, 1)
