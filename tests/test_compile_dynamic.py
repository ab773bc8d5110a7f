"""ember.compile(dynamic=True): every size of the arguments may change (batch and
sequence length) without a recompile, once three captures have fixed the graph's
form; dynamic=None goes dynamic on the second distinct leading size."""
import numpy as np
import pytest

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


# ---------------------------------------------------------------- dynamic=None
def _stats():
    return ember.compiler.counters["stats"]


def test_dynamic_none_goes_dynamic_on_the_second_size():
    ember.compiler.reset()
    g = ember.Generator().manual_seed(6)
    f = _attention(ember.nn.Linear(16, 48))
    cf = ember.compile(f)
    with ember.no_grad():
        for B in (2, 3, 5, 8, 4):
            _check(cf, f, ember.randn(B, 6, 16, generator=g))
            if B == 3:
                assert _stats()["calls_captured"] == 2 and _recompiles() == 1
    # the third size on: neither a capture nor a recompile
    assert _stats()["calls_captured"] == 2 and _recompiles() == 1
    assert _stats()["graphs_resized"] == 3


def test_dynamic_none_size_two_samples_cannot_place_is_captured_again():
    ember.compiler.reset()
    g = ember.Generator().manual_seed(7)

    def f(x):            # n * n values: the line through two sizes misses the third
        return (x * 2).reshape(-1)[: x.shape[0] * x.shape[0]].exp() + 1

    cf = ember.compile(f)
    for n in (4, 8, 12, 16):
        _check_one(cf, f, ember.randn(n, 32, generator=g))
    assert _stats()["calls_captured"] == 4 and _stats()["graphs_resized"] == 0


def test_dynamic_none_training_step_at_new_batch_sizes():
    ember.compiler.reset()
    ember.manual_seed(8)
    m = ember.nn.Sequential(ember.nn.Linear(8, 16), ember.nn.ReLU(), ember.nn.Linear(16, 4))

    def loss_fn(x, y):     # dropout: the probe must not move the generator
        return F.cross_entropy(F.dropout(m(x), 0.25), y)

    cf = ember.compile(loss_fn)
    for n in (4, 6, 9, 13):
        x = ember.randn(n, 8, requires_grad=True)
        y = ember.randint(0, 4, (n,))
        got = []
        for fn in (cf, loss_fn):
            m.zero_grad()
            x.grad = None
            ember.manual_seed(n)
            loss = fn(x, y)
            loss.backward()
            got.append((loss.detach().numpy(), m[0].weight.grad.numpy(), x.grad.numpy(),
                        ember.rand(3).numpy()))
        for a, e in zip(*got):
            np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6)
    assert _stats()["calls_captured"] == 2 and _stats()["graphs_resized"] == 2
    assert _recompiles() == 1


def test_dynamic_none_never_reruns_a_function_that_writes_state():
    ember.compiler.reset()
    g = ember.Generator().manual_seed(9)
    net = ember.nn.Sequential(ember.nn.Linear(8, 8), ember.nn.BatchNorm1d(8))
    ref = ember.nn.Sequential(ember.nn.Linear(8, 8), ember.nn.BatchNorm1d(8))
    ref.load_state_dict(net.state_dict())
    cnet = ember.compile(net)
    for n in (4, 6):
        x = ember.randn(n, 8, generator=g)
        np.testing.assert_allclose(cnet(x).detach().numpy(), ref(x).detach().numpy(),
                                   rtol=1e-5, atol=1e-5)
    # running statistics updated once per call, not again by a probe at another size
    assert int(net[1].num_batches_tracked) == 2
    np.testing.assert_allclose(net[1].running_var.numpy(), ref[1].running_var.numpy(),
                               rtol=1e-5, atol=1e-6)
    assert _stats()["calls_captured"] == 2


def test_dynamic_false_specialises_every_size():
    ember.compiler.reset()
    g = ember.Generator().manual_seed(10)
    f = _attention(ember.nn.Linear(16, 48))
    cf = ember.compile(f, dynamic=False)
    with ember.no_grad():
        for B in (2, 3, 5):
            _check(cf, f, ember.randn(B, 6, 16, generator=g))
    assert _stats()["calls_captured"] == 3 and _stats().get("graphs_resized", 0) == 0


@pytest.mark.parametrize("dynamic", [None, True])
def test_a_branch_on_a_size_is_guarded(dynamic):
    ember.compiler.reset()
    g = ember.Generator().manual_seed(11)

    def f(x):
        B, C = x.shape
        if B * C > 80:           # the captured sizes all take the second branch
            return x * 2
        return (x * 3).reshape(B * C).softmax(0)

    cf = ember.compile(f, dynamic=dynamic)
    sizes = [(2, 5), (3, 4), (4, 7), (5, 5), (30, 9), (6, 3)]
    for b, c in sizes:
        _check_one(cf, f, ember.randn(b, 8 if dynamic is None else c, generator=g))
    # (30, .) fails the guard B * C > 80 and is captured; the sizes after the
    # first captures (two, or three with dynamic=True) are resized
    n_cap = 2 if dynamic is None else 3
    assert _stats()["calls_captured"] == n_cap + 1
    assert _stats()["graphs_resized"] == len(sizes) - n_cap - 1


def test_len_of_an_argument_keeps_its_size_specialised():
    ember.compiler.reset()
    g = ember.Generator().manual_seed(12)

    def f(x):
        return x[: len(x) // 2] * 2 if len(x) < 9 else x * 5

    cf = ember.compile(f)
    for n in (4, 6, 8, 10):
        _check_one(cf, f, ember.randn(n, 4, generator=g))
    assert _stats()["calls_captured"] == 4 and _stats().get("graphs_resized", 0) == 0


def test_sizes_read_while_capturing_are_plain_ints_outside():
    ember.compiler.reset()
    seen = []

    def f(x):
        n = x.shape[0] * 2
        seen.append(type(x.size(0)))
        return x.sum() + n, n

    cf = ember.compile(f)
    out, n = cf(ember.ones(3, 2))
    assert type(n) is int and n == 6 and float(out) == 12.0
    assert not hasattr(ember.Tensor, "__len__") or ember.Tensor.__len__ is \
        ember._C.core.TensorBase.__len__
    assert type(ember.ones(2).shape[0]) is int
