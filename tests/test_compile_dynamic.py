"""ember.compile(dynamic=True): every size of the arguments may change (batch and
sequence length) without a recompile, once three captures have fixed the graph's form."""
import numpy as np

import ember
from ember.compiler.codegen import cache

F = ember.nn.functional


def _attention(lin):
    def f(x):
        B, T, C = x.shape
        q, k, v = lin(x).split(16, -1)
        att = (q @ k.transpose(-1, -2) * 0.25).softmax(-1)
        y = (att @ v).reshape(B * T, 16)
        return F.gelu(y).reshape(B, T, 16).sum(1), y.mean()
    return f


def _recompiles():
    return sum(ember.compiler.counters["recompiles"].values())


def _check(cf, f, x):
    for a, e in zip(cf(x), f(x)):
        np.testing.assert_allclose(a.numpy(), e.numpy(), rtol=1e-5, atol=1e-6)


def test_batch_and_sequence_length_change_without_recompiles(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    ember.compiler.reset()
    g = ember.Generator().manual_seed(1)
    f = _attention(ember.nn.Linear(16, 48))
    cf = ember.compile(f, dynamic=True)
    with ember.no_grad():
        for B, T in [(2, 5), (3, 7), (5, 4)]:
            _check(cf, f, ember.randn(B, T, 16, generator=g))
            if (B, T) == (2, 5):
                builds = cache.stats["builds"]
        stats = ember.compiler.counters["stats"]
        assert stats["calls_captured"] == 3 and _recompiles() == 2
        # batch, sequence, both, and the two equal: no capture, no recompile
        for B, T in [(4, 9), (6, 3), (2, 11), (7, 7), (3, 40)]:
            _check(cf, f, ember.randn(B, T, 16, generator=g))
    assert stats["calls_captured"] == 3 and _recompiles() == 2
    assert stats["graphs_resized"] == 5
    # the generated code reads every size at run time: one build served them all
    assert cache.stats["builds"] == builds


def test_sizes_the_captures_cannot_tell_apart_are_not_extrapolated():
    ember.compiler.reset()
    g = ember.Generator().manual_seed(2)

    def f(x):
        return (x * 2).reshape(-1).softmax(0) + 1

    cf = ember.compile(f, dynamic=True)
    # the sequence length is always twice the batch: B * T fits 2 * B * B as well
    for B in (2, 4, 8):
        _check_one(cf, f, ember.randn(B, 2 * B, generator=g))
    _check_one(cf, f, ember.randn(3, 5, generator=g))
    stats = ember.compiler.counters["stats"]
    assert stats["calls_captured"] == 4 and stats["graphs_resized"] == 0


def test_sizes_fixed_in_the_captures_or_moving_together_then_apart_capture_again():
    ember.compiler.reset()
    g = ember.Generator().manual_seed(3)

    def f(x, y):
        return (x.sin() + y.sum(-1, keepdim=True)).relu()

    cf = ember.compile(f, dynamic=True)
    for n in (2, 3, 5):                 # x and y share their first size in every capture
        x, y = ember.randn(n, 6, generator=g), ember.randn(n, 4, generator=g)
        _check_one(cf, f, x, y)
    _check_one(cf, f, ember.randn(9, 6, generator=g), ember.randn(9, 4, generator=g))
    stats = ember.compiler.counters["stats"]
    assert stats["calls_captured"] == 3 and stats["graphs_resized"] == 1
    # y's last size never changed, and the first sizes part ways: both capture
    _check_one(cf, f, ember.randn(4, 6, generator=g), ember.randn(4, 7, generator=g))
    _check_one(cf, f, ember.randn(4, 6, generator=g), ember.randn(1, 4, generator=g))
    assert stats["calls_captured"] == 5


def _check_one(cf, f, *args):
    np.testing.assert_allclose(cf(*args).numpy(), f(*args).numpy(), rtol=1e-5, atol=1e-6)


def test_dynamic_none_keeps_sizes_beyond_the_leading_one_specialised():
    ember.compiler.reset()
    g = ember.Generator().manual_seed(4)
    f = _attention(ember.nn.Linear(16, 48))
    cf = ember.compile(f)
    with ember.no_grad():
        for T in (3, 5, 7, 9):
            _check(cf, f, ember.randn(2, T, 16, generator=g))
    assert ember.compiler.counters["stats"]["calls_captured"] == 4


def test_training_at_new_batch_and_sequence_lengths():
    ember.compiler.reset()
    g = ember.Generator().manual_seed(5)
    lin = ember.nn.Linear(16, 48)
    f = _attention(lin)

    def loss_fn(x):
        a, b = f(x)
        return (a ** 2).mean() + b

    cf = ember.compile(loss_fn, dynamic=True)
    for B, T in [(2, 5), (3, 7), (5, 4), (4, 9), (6, 3)]:
        x = ember.randn(B, T, 16, generator=g, requires_grad=True)
        grads = []
        for fn in (cf, loss_fn):
            lin.weight.grad = None
            x.grad = None
            loss = fn(x)
            loss.backward()
            grads.append((loss.detach().numpy(), lin.weight.grad.numpy(), x.grad.numpy()))
        for a, e in zip(*grads):
            np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6)
    stats = ember.compiler.counters["stats"]
    assert stats["calls_captured"] == 3 and stats["graphs_resized"] == 2
    assert _recompiles() == 2
