"""ember.compile goes on past graph breaks: Python scalars read from tensors are guarded
by value between two graphs, data-dependent-shape ops and ``disable``d functions run
eagerly between graphs; results always equal eager ones."""

import types
import warnings

import numpy as np
import pytest

import ember
from ember import compiler, nn
from ember.compiler import GraphBreakError


class Counting:
    def __init__(self):
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        return gm.forward


@pytest.fixture(autouse=True)
def _fresh():
    compiler.reset()
    yield
    compiler.reset()
    compiler.config.cache_size_limit = 8


def np_of(t):
    return np.asarray(t.detach())


def branchy(x, w):
    h = (x @ w).tanh()
    s = h.sum()
    if s > 0:                              # bool(tensor) in a Python if
        h = h * 2
    scale = float(h.abs().max())           # float(t)
    k = int(h.shape[0] * (h.mean() > 0))   # int arithmetic on a bool tensor read
    n = (h > 0).sum().item()               # t.item()
    return h / scale + n + k


def test_changing_values_equal_eager_and_recompile_per_value():
    rng = np.random.default_rng(0)
    w = ember.tensor(rng.standard_normal((4, 3)).astype(np.float32))
    be = Counting()
    cf = ember.compile(branchy, backend=be)
    xs = [ember.tensor(rng.standard_normal((5, 4)).astype(np.float32)) for _ in range(6)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for x in xs + xs:                  # the second round reuses the captured entries
            np.testing.assert_allclose(np_of(cf(x, w)), np_of(branchy(x, w)), rtol=1e-6)
    n_captures = compiler.counters["stats"]["calls_captured"]
    assert 1 <= n_captures <= 6
    assert sum(compiler.counters["recompiles"].values()) == n_captures - 1
    assert all("Tensor.item()" in r for r in compiler.counters["recompiles"])
    before = len(be.graphs)
    cf(xs[0], w)
    assert len(be.graphs) == before        # nothing new to capture


def test_cache_size_limit_bounds_value_recompiles():
    compiler.config.cache_size_limit = 3

    def f(x):
        return x * x.max().item()

    cf = ember.compile(f, backend="eager")
    with pytest.warns(RuntimeWarning, match=r"cache_size_limit \(3\).*Tensor.item\(\)"):
        for v in range(1, 7):
            x = ember.tensor([float(v), 0.5])
            assert cf(x).tolist() == [v * v, 0.5 * v]
    assert compiler.counters["stats"]["calls_captured"] == 3
    assert cf(ember.tensor([9.0, 1.0])).tolist() == [81.0, 9.0]     # eagerly, still right


def test_tolist_and_bool_reads():
    def f(x, idx):
        a, b = idx.tolist()
        y = x[a:b]
        return y.sum() if bool(y.numel() and (y.max() > 1)) else -y.sum()

    cf = ember.compile(f, backend="eager")
    x = ember.arange(6.0)
    for ab in ([0, 2], [1, 5], [0, 2], [3, 6], [1, 5]):
        idx = ember.tensor(ab)
        assert cf(x, idx).item() == f(x, idx).item()
    assert compiler.counters["stats"]["calls_captured"] == 3


def test_gradients_flow_through_split_programs():
    def f(x, w):
        y = x * w
        if y.sum() > 0:
            return (y * y).sum()
        return y.exp().sum()

    cf = ember.compile(f, backend="eager")
    for sign in (1.0, -1.0, 1.0):
        x = ember.tensor([1.0, 2.0, 3.0]) * sign
        w1 = ember.tensor([0.5, 1.0, 1.5], requires_grad=True)
        w2 = ember.tensor([0.5, 1.0, 1.5], requires_grad=True)
        cf(x, w1).backward()
        f(x, w2).backward()
        np.testing.assert_allclose(np_of(w1.grad), np_of(w2.grad), rtol=1e-6)


def test_module_branching_on_a_value_sees_updated_weights():
    class Gate(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x):
            h = self.lin(x)
            return h.relu() if h.mean() > 0 else h.sigmoid()

    ember.manual_seed(0)
    m = Gate()
    cm = ember.compile(m, backend="eager")
    x = ember.randn(4, 3)
    for bias in (5.0, -5.0, 5.0):
        with ember.no_grad():
            m.lin.bias.fill_(bias)
        np.testing.assert_allclose(np_of(cm(x)), np_of(m(x)), rtol=1e-6)
    assert compiler.counters["stats"]["calls_captured"] == 2


def test_random_numbers_before_a_value_check_are_drawn_once():
    def f(x):
        y = ember.nn.functional.dropout(x, 0.5, training=True)
        if y.sum() > 2:
            return y * 10
        return y

    cf = ember.compile(f, backend="eager")
    x = ember.ones(8)
    for seed in range(6):
        ember.manual_seed(seed)
        got = cf(x)
        after = ember.rand(1).item()       # the generator advanced as eager advances it
        ember.manual_seed(seed)
        want = f(x)
        assert np_of(got).tolist() == np_of(want).tolist()
        assert after == ember.rand(1).item()


def test_grad_mode_restored_after_a_failed_value_check():
    def f(x):
        with ember.no_grad():
            s = x.sum()
        return x * 2 if s > 0 else x * 3

    cf = ember.compile(f, backend="eager")
    x = ember.ones(2, requires_grad=True)
    cf(x)
    y = cf(-x.detach().requires_grad_())     # misses inside no_grad, recaptures
    assert ember.is_grad_enabled() and y.requires_grad
    assert y.tolist() == [-3.0, -3.0]


@pytest.mark.parametrize("limit", [8, 1])
def test_inplace_update_of_an_input_before_a_read_resumes_at_the_check(limit, monkeypatch):
    monkeypatch.setattr(compiler.config, "cache_size_limit", limit)

    def f(x, buf):
        buf.add_(1)                         # a rerun from the start would add twice
        return x * 2 if buf.sum() > 3 else x

    cf = ember.compile(f, backend="eager")
    buf, ref = ember.zeros(2), ember.zeros(2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # split, not broken
        for _ in range(5):
            assert cf(ember.ones(2), buf).tolist() == f(ember.ones(2), ref).tolist()
            assert buf.tolist() == ref.tolist()
    # the second call failed the check after the write: it ran on from there (not again
    # from the start) and captured the other branch, which later calls resume into
    assert buf.tolist() == [5.0, 5.0]
    # (over the cache's limit each such miss runs on from the check without keeping a
    # graph of the other branch)
    assert compiler.counters["stats"]["calls_captured"] == min(2, limit)


def test_data_dependent_shape_feeds_python_arithmetic():
    def f(x):
        idx = (x > 0).nonzero().view(-1)
        n = idx.shape[0]                    # a Python int from a data-dependent shape
        return x[idx].sum() * n + x.view(2, -1).shape[1]

    be = Counting()
    cf = ember.compile(f, backend=be)
    for v in ([1.0, -1.0, 2.0, 3.0], [-1.0, -1.0, 2.0, 0.0], [4.0, 5.0, 6.0, 7.0],
              [1.0, -2.0, 2.0, 3.0]):
        x = ember.tensor(v)
        assert cf(x).item() == f(x).item()
    assert compiler.counters["stats"]["calls_captured"] == 3    # one per count of positives
    assert any("output of nonzero" in r for r in compiler.counters["recompiles"])


def test_explain_reports_each_graph_and_break():
    def f(x):
        y = x.exp()
        if y.sum() > 3:
            y = y + 1
        z = y[y > 1.5]
        return z.sum() + y.mean().item()

    out = compiler.explain(f)(ember.ones(4))
    # exp, sum > 3 | item | add, gt | mask (eager) | sum, mean | item | add
    assert out.graph_count == 4 and out.graph_break_count == 3
    assert "item" in out.break_reasons[0] and "if y.sum() > 3" in out.break_reasons[0]
    assert "boolean mask" in out.break_reasons[1]
    assert "return z.sum() + y.mean().item()" in out.break_reasons[2]
    assert "Graph Count: 4" in str(out)
    assert "Tensor.item() of gt at `if y.sum() > 3:` == True" in out.out_guards
    assert "output of getitem at `z = y[y > 1.5]`: shapes/values [(4,)]" in out.out_guards
    torch = pytest.importorskip("torch")
    pytest.importorskip("torch._dynamo")

    def tf(x):
        y = x.exp()
        if y.sum() > 3:
            y = y + 1
        z = y[y > 1.5]
        return z.sum() + y.mean().item()
    torch._dynamo.reset()
    tout = torch._dynamo.explain(tf)(torch.ones(4))
    # the same graphs and breaks as torch: at the branch, the mask and the item()
    assert (tout.graph_count, tout.graph_break_count) == (out.graph_count,
                                                          out.graph_break_count)


def test_fullgraph_still_refuses_every_split():
    with pytest.raises(GraphBreakError, match="item"):
        ember.compile(lambda x: x * x.sum().item(), fullgraph=True)(ember.ones(2))
    with pytest.raises(GraphBreakError, match="data-dependent"):
        ember.compile(lambda x: x.nonzero(), fullgraph=True)(ember.ones(2))


def test_steps_before_a_failed_check_run_once_per_call():
    log = types.SimpleNamespace(n=0)

    @compiler.disable
    def tick(x):
        log.n += 1            # a side effect: once per call, as in eager
        return x

    def f(x):
        y = tick(x * 2)
        if y.sum() > 0:
            return y + 1
        return y - 1

    cf = ember.compile(f, backend="eager")
    pos, neg = ember.ones(2), -ember.ones(2)
    assert cf(pos).tolist() == [3.0, 3.0] and log.n == 1
    assert cf(neg).tolist() == [-3.0, -3.0] and log.n == 2     # missed, recaptured: once
    assert cf(pos).tolist() == [3.0, 3.0] and log.n == 3
    assert cf(neg).tolist() == [-3.0, -3.0] and log.n == 4     # resumed after the miss
    assert compiler.counters["stats"]["calls_captured"] == 2
    compiler.config.cache_size_limit = 2
    assert cf(ember.zeros(2)).tolist() == [-1.0, -1.0] and log.n == 5   # eagerly: once


def test_disabled_function_whose_result_changes_shape_runs_once():
    log = types.SimpleNamespace(n=0)

    @compiler.disable
    def positives(x):
        log.n += 1
        return x[x > 0]

    def f(x):
        p = positives(x)
        return p * p.shape[0]

    cf = ember.compile(f, backend="eager")
    for i, v in enumerate(([1.0, -1.0, 2.0], [1.0, 3.0, 2.0], [-1.0, -1.0, 2.0],
                           [1.0, 3.0, 2.0])):
        assert cf(ember.tensor(v)).tolist() == f(ember.tensor(v)).tolist()
        assert log.n == 2 * (i + 1)      # once in the compiled call, once in eager f
    assert compiler.counters["stats"]["calls_captured"] == 3


def test_default_backend_compiles_each_piece():
    rng = np.random.default_rng(1)
    w = ember.tensor(rng.standard_normal((4, 3)).astype(np.float32))
    cf = ember.compile(branchy)             # the fused C code generator
    for _ in range(3):
        x = ember.tensor(rng.standard_normal((5, 4)).astype(np.float32))
        np.testing.assert_allclose(np_of(cf(x, w)), np_of(branchy(x, w)), rtol=1e-5,
                                   atol=1e-6)
    assert compiler.counters["stats"]["unique_graphs"] >= 4


def test_disabled_function_drawing_random_numbers_keeps_the_stream():
    @compiler.disable
    def noise(x):
        return x + ember.rand(x.shape)

    def f(x):
        y = noise(x)
        return y * 2 if y.sum() > 2 else y.neg()

    cf = ember.compile(f, backend="eager")
    for seed, v in enumerate((1.0, -1.0, 1.0, -1.0, 5.0)):
        ember.manual_seed(seed)
        got = cf(ember.full((2,), v))
        after = ember.rand(1).item()
        ember.manual_seed(seed)
        want = f(ember.full((2,), v))
        assert got.tolist() == want.tolist() and after == ember.rand(1).item()


def mixed(x, w):
    h = x @ w
    with ember.no_grad():                   # a grad-mode switch spanning a split
        s = h.abs().sum()
        h2 = h * 0.5 if s > 3 else h * 2
    h3 = h.relu()
    h3.add_(1)                              # in place on an intermediate: replayable
    n = int((h3 > 1.5).sum())
    idx = (h3 > 1.5).nonzero()
    return (h3[:, :n] if n <= h3.shape[1] else h3).sum() + h2.sum() + idx.shape[0]


@pytest.mark.parametrize("backend,grads", [("eager", True), ("inductor", False)])
def test_mixed_breaks_values_and_gradients_equal_eager(backend, grads):
    # gradients are compared for the eager backend (the code generator's backward is
    # its own tests' to check)
    cf = ember.compile(mixed, backend=backend)
    rng = np.random.default_rng(0)
    for _ in range(6):
        x = ember.tensor(rng.standard_normal((3, 4)).astype(np.float32))
        w1 = ember.tensor(rng.standard_normal((4, 5)).astype(np.float32), requires_grad=grads)
        w2 = w1.detach().clone().requires_grad_(grads)
        got, want = cf(x, w1), mixed(x, w2)
        assert got.item() == pytest.approx(want.item(), rel=1e-5)
        if grads:
            got.backward()
            want.backward()
            np.testing.assert_allclose(np_of(w1.grad), np_of(w2.grad), rtol=1e-5, atol=1e-6)
        assert ember.is_grad_enabled()
    assert compiler.counters["stats"]["calls_captured"] < 6      # some calls replayed


def test_numpy_arithmetic_on_a_tensor_read_is_checked_by_value():
    def f(x):
        z = x * 1
        a = z.numpy()                   # shares z's memory; Python does arithmetic on it
        k = float(a.max() - a.min())
        z.add_(1)                       # a later write: the check compares the read values
        return x * k + float(a.sum()) + float(np.asarray(z).sum())

    cf = ember.compile(f, backend="eager")
    for v in ([1.0, 3.0], [2.0, 0.0], [1.0, 3.0], [5.0, 5.0]):
        a, b = ember.tensor(v), ember.tensor(v)
        np.testing.assert_allclose(np_of(cf(a)), np_of(f(b)))
        assert a.tolist() == b.tolist()
    assert compiler.counters["stats"]["calls_captured"] == 3
    assert any("numpy" in r for r in compiler.counters["graph_break"])


def test_disabled_functions_first_met_while_starting_over_stay_out_of_the_graph():
    log = types.SimpleNamespace(n=0)

    @compiler.disable
    def tick(x):
        log.n += 1
        return x + 0

    @compiler.disable
    def scale(x):
        log.n += 1
        return x * 10

    def f(x):
        y = tick(x)
        return scale(y) if y.sum() > 0 else y

    be = Counting()
    cf = ember.compile(f, backend=be)
    assert cf(-ember.ones(2)).tolist() == [-1.0, -1.0] and log.n == 1
    assert cf(ember.ones(2)).tolist() == [10.0, 10.0] and log.n == 3   # tick once, scale
    assert cf(ember.ones(2)).tolist() == [10.0, 10.0] and log.n == 5
    assert not any("10" in gm.code for gm in be.graphs)     # scale ran as an eager step


def test_compiled_function_called_while_another_starts_over():
    log = types.SimpleNamespace(n=0)

    @compiler.disable
    def tick(x):
        log.n += 1
        return x + 0

    inner = ember.compile(lambda x: tick(x * 2), backend="eager")

    def outer(x):
        y = inner(x)
        return y + 1 if y.sum() > 0 else y - 1

    assert inner(ember.ones(2)).tolist() == [2.0, 2.0] and log.n == 1   # inner's own entry
    co = ember.compile(outer, backend="eager")
    compiler.config.cache_size_limit = 1          # the second branch runs eagerly
    assert co(ember.ones(2)).tolist() == [3.0, 3.0] and log.n == 2
    with pytest.warns(RuntimeWarning, match="cache_size_limit"):
        assert co(-ember.ones(2)).tolist() == [-3.0, -3.0]
    assert log.n == 3                 # tick ran once: in the replay, reused when eager


def test_large_reads_run_the_guard_set_eagerly():
    cf = ember.compile(lambda x: x * sum(x.tolist()), backend="eager")
    x = ember.ones(2000)
    with pytest.warns(UserWarning, match=r"2000 values; at most 1024 are checked"):
        assert cf(x).sum().item() == 2000.0 * 2000
    assert cf(x * 2).sum().item() == 4000.0 * 4000.0       # eager: still right
