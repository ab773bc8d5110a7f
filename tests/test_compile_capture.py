"""ember.compile's capture: graphs recorded through the dispatcher's Python key, guards and
recompiles, graph breaks, parameters as inputs, autograd and the compiler APIs."""

import copy
import types
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import compiler, nn
from ember.compiler import GraphBreakError


def np_of(t):
    return np.asarray(t.detach())


class Counting:
    """A torch-style backend that records what it was given."""

    def __init__(self):
        self.graphs, self.inputs = [], []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        self.inputs.append(example_inputs)
        return gm.forward


@pytest.fixture(autouse=True)
def _fresh():
    compiler.reset()
    yield
    compiler.reset()
    compiler.config.cache_size_limit = 8


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 2)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x))).softmax(-1)


# ---------------------------------------------------------------------------
# what gets captured
# ---------------------------------------------------------------------------

def test_captured_graph_has_dispatcher_ops_params_as_inputs_and_meta():
    be = Counting()
    m = Net()
    cm = ember.compile(m, backend=be)
    x = ember.randn(3, 4)
    np.testing.assert_array_equal(np_of(cm(x)), np_of(m(x)))
    assert len(be.graphs) == 1
    gm = be.graphs[0]
    ph = [n for n in gm.graph.nodes if n.op == "placeholder"]
    assert [n.name for n in ph] == ["x", "fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias"]
    assert be.inputs[0][0] is x and be.inputs[0][1] is m.fc1.weight
    ops = [n.target if n.op == "call_method" else n.target.__name__ for n in gm.graph.nodes
           if n.op in ("call_function", "call_method")]
    assert ops == ["linear", "relu", "linear", "softmax"]
    for n in gm.graph.nodes:
        if n.op != "output":
            assert "tensor_meta" in n.meta
    relu = [n for n in gm.graph.nodes if getattr(n.target, "__name__", n.target) == "relu"][0]
    assert tuple(relu.meta["tensor_meta"].shape) == (3, 8)
    assert "test_compile_capture.py" in relu.meta["stack_trace"]
    assert 'x: "f32[3, 4]"' in gm.print_readable(print_output=False)


def test_views_casts_and_indexing_are_captured():
    be = Counting()

    def f(x):
        y = x.view(2, 6).t().contiguous()[1:, ::2]
        return y.float().double().sum(0), x.reshape(-1)[3]

    cf = ember.compile(f, backend=be)
    x = ember.arange(12, dtype=ember.float32)
    for got, want in zip(cf(x), f(x)):
        np.testing.assert_array_equal(np_of(got), np_of(want))
    x2 = ember.randn(12)
    for got, want in zip(cf(x2), f(x2)):      # replayed, not cached values
        np.testing.assert_array_equal(np_of(got), np_of(want))
    assert len(be.graphs) == 1
    names = [n.target if isinstance(n.target, str) else n.target.__name__
             for n in be.graphs[0].graph.nodes]
    for op in ("view", "t", "contiguous", "getitem", "to", "sum", "reshape"):
        assert op in names, op


def test_later_calls_see_updated_weights_and_train_like_eager():
    ember.manual_seed(0)
    m_eager = Net()
    m_comp = copy.deepcopy(m_eager)
    be = Counting()
    cm = ember.compile(m_comp, backend=be)
    opt_e = ember.optim.SGD(m_eager.parameters(), lr=0.5)
    opt_c = ember.optim.SGD(cm.parameters(), lr=0.5)
    x, target = ember.randn(5, 4), ember.tensor([0, 1, 1, 0, 1])
    for _ in range(4):
        for model, opt in ((m_eager, opt_e), (cm, opt_c)):
            opt.zero_grad()
            loss = F.cross_entropy(ember.log(model(x)), target)
            loss.backward()
            opt.step()
        for pe, pc in zip(m_eager.parameters(), m_comp.parameters()):
            np.testing.assert_array_equal(np_of(pe.grad), np_of(pc.grad))
            np.testing.assert_array_equal(np_of(pe), np_of(pc))
    assert len(be.graphs) == 1          # one capture served every step


def test_reassigned_parameter_is_seen():
    m = nn.Linear(3, 1)
    cm = ember.compile(m, backend="eager")
    x = ember.randn(2, 3)
    cm(x)
    m.weight = nn.Parameter(ember.zeros(1, 3))
    np.testing.assert_array_equal(np_of(cm(x)), np_of(m(x)))


def test_autograd_grad_through_compiled_function():
    def f(x, w):
        return (ember.tanh(x @ w) ** 2).mean()

    cf = ember.compile(f, backend="eager")
    x = ember.randn(4, 3)
    w = ember.randn(3, 2, requires_grad=True)
    cf(x, w)                                 # capture
    (g,) = ember.autograd.grad(cf(x, w), [w])
    (ge,) = ember.autograd.grad(f(x, w), [w])
    np.testing.assert_array_equal(np_of(g), np_of(ge))


def test_optimized_module_state_dict_and_attributes():
    m = Net()
    cm = ember.compile(m)
    assert isinstance(cm, compiler.OptimizedModule) and cm._orig_mod is m
    assert set(cm.state_dict()) == {"_orig_mod." + k for k in m.state_dict()}
    assert cm.fc1 is m.fc1
    cm.eval()
    assert not m.training
    torch = pytest.importorskip("torch")
    tm = torch.compile(torch.nn.Linear(2, 2))
    assert all(k.startswith("_orig_mod.") for k in tm.state_dict())


def test_batchnorm_running_stats_update_once_per_call():
    ember.manual_seed(0)
    bn_e = nn.BatchNorm1d(3)
    bn_c = copy.deepcopy(bn_e)
    cm = ember.compile(bn_c, backend="eager")
    for i in range(3):
        x = ember.randn(8, 3) + i
        np.testing.assert_allclose(np_of(cm(x)), np_of(bn_e(x)), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(np_of(bn_c.running_mean), np_of(bn_e.running_mean),
                                   rtol=1e-6)
        assert int(bn_c.num_batches_tracked) == int(bn_e.num_batches_tracked) == i + 1


# ---------------------------------------------------------------------------
# guards and recompiles
# ---------------------------------------------------------------------------

def test_guards_recompile_on_shape_dtype_requires_grad_scalar_and_switches():
    be = Counting()
    cf = ember.compile(lambda x, k: x * k + 1, backend=be)
    x = ember.randn(3)
    cf(x, 2.0)
    cf(ember.randn(3), 2.0)
    assert len(be.graphs) == 1
    cf(ember.randn(4), 2.0)                             # shape
    cf(ember.randn(4, dtype=ember.float64), 2.0)        # dtype
    cf(ember.randn(4, requires_grad=True), 2.0)         # requires_grad
    r = cf(x, 3.0)                                      # Python scalar value
    np.testing.assert_array_equal(np_of(r), np_of(x * 3.0 + 1))
    assert len(be.graphs) == 5
    with ember.no_grad():                               # grad mode
        cf(x, 3.0)
    assert len(be.graphs) == 6
    cf(x, 3.0)
    assert len(be.graphs) == 6
    assert sum(compiler.counters["recompiles"].values()) == 5


def test_default_dtype_is_a_guard():
    be = Counting()
    cf = ember.compile(lambda x: x + ember.ones(2), backend=be)
    cf(ember.ones(2, dtype=ember.float64))
    ember.set_default_dtype(ember.float64)
    try:
        r = cf(ember.ones(2, dtype=ember.float64))
    finally:
        ember.set_default_dtype(ember.float32)
    assert r.dtype is ember.float64 and len(be.graphs) == 2


def test_global_and_closure_scalars_are_guarded():
    be = Counting()
    state = {"k": 2.0}
    g = {"ember": ember, "SCALE": 2.0}
    exec("def f(x):\n    return x * SCALE", g)
    cf = ember.compile(g["f"], backend=be)
    x = ember.ones(2)
    assert cf(x).tolist() == [2.0, 2.0]
    g["SCALE"] = 5.0
    assert cf(x).tolist() == [5.0, 5.0] and len(be.graphs) == 2

    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.k = state["k"]

        def forward(self, x):
            return x * self.k
    m = Scaled()
    cm = ember.compile(m, backend=be)
    assert cm(x).tolist() == [2.0, 2.0]
    m.k = 7.0
    assert cm(x).tolist() == [7.0, 7.0]
    m.train(False)                       # training flag: another guard
    assert cm(x).tolist() == [7.0, 7.0] and len(be.graphs) == 5


def test_recompile_log_and_cache_size_limit_warning(capsys):
    compiler.config.cache_size_limit = 2
    compiler.set_logs(recompiles=True)
    try:
        cf = ember.compile(lambda x: x.sin(), backend="eager")
        cf(ember.randn(2))
        cf(ember.randn(3))
        with pytest.warns(RuntimeWarning, match=r"cache_size_limit \(2\).*size mismatch at "
                                                r"index 0\. expected 3, actual 4"):
            r = cf(ember.ones(4))
        np.testing.assert_allclose(np_of(r), np.sin(np.ones(4)), rtol=1e-6)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            cf(ember.ones(5))                 # one warning only; eager from now on
    finally:
        compiler.set_logs(recompiles=False)
    err = capsys.readouterr().err
    assert "[ember.compiler:recompiles] Recompiling" in err
    assert "tensor 'x' size mismatch at index 0. expected 2, actual 3" in err
    with pytest.raises(ValueError, match="cache_size_limit"):
        compiler.config.cache_size_limit = -1


def test_graph_log(capsys):
    compiler.set_logs(graph=True)
    try:
        ember.compile(lambda x: x.exp(), backend="eager")(ember.ones(2))
    finally:
        compiler.set_logs(graph=False)
    assert "exp = x.exp()" in capsys.readouterr().err


# ---------------------------------------------------------------------------
# graph breaks: never a wrong answer
# ---------------------------------------------------------------------------

def test_data_dependent_branch_splits_and_stays_correct():
    def f(x):
        if x.sum() > 0:
            return x * 2
        return x - 1

    be = Counting()
    cf = ember.compile(f, backend=be)
    pos, neg = ember.ones(3), -ember.ones(3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")     # the program goes on compiled: no warning
        assert cf(pos).tolist() == [2.0, 2.0, 2.0]
    assert len(be.graphs) == 2             # sum > 0, then the branch taken
    assert cf(neg).tolist() == [-2.0, -2.0, -2.0]     # the guard on the value failed
    assert len(be.graphs) == 4
    assert list(compiler.counters["recompiles"]) == [
        "Tensor.item() of gt at `if x.sum() > 0:` == True (now False)"]
    assert cf(pos * 3).tolist() == [6.0, 6.0, 6.0] and len(be.graphs) == 4
    assert cf(neg * 2).tolist() == [-3.0, -3.0, -3.0] and len(be.graphs) == 4
    assert sum(compiler.counters["graph_break"].values()) == 2     # one per capture
    with pytest.raises(GraphBreakError, match=r"(?s)'item'.*if x.sum\(\) > 0"):
        ember.compile(f, backend="eager", fullgraph=True)(pos)
    torch = pytest.importorskip("torch")
    pytest.importorskip("torch._dynamo")

    def tf(x):
        if x.sum() > 0:
            return x * 2
        return x - 1
    torch._dynamo.reset()
    with pytest.raises(Exception, match="(?i)data-dependent"):
        torch.compile(tf, fullgraph=True, backend="eager")(torch.ones(3))


def test_item_scalar_is_never_baked():
    def f(x):
        return x * x.max().item()

    cf = ember.compile(f, backend="eager")
    cf(ember.tensor([1.0, 2.0]))
    assert cf(ember.tensor([1.0, 3.0])).tolist() == [3.0, 9.0]
    assert cf(ember.tensor([2.0, 1.0])).tolist() == [4.0, 2.0]


@pytest.mark.parametrize("body", [lambda x: x[x > 0], lambda x: x.nonzero()])
def test_data_dependent_shapes_run_eagerly_between_graphs(body):
    be = Counting()
    cf = ember.compile(body, backend=be)
    for v in ([1.0, -1.0, 2.0], [-1.0, -1.0, 2.0], [3.0, -1.0, 2.0]):
        r = cf(ember.tensor(v))
        np.testing.assert_array_equal(np_of(r), np_of(body(ember.tensor(v))))
    assert "data-dependent output shape" in next(iter(compiler.counters["graph_break"]))


def test_inplace_on_aliasing_inputs_runs_between_graphs():
    def f(a, b):
        a.add_(1)
        return a + b

    be = Counting()
    cf = ember.compile(f, backend=be)
    base = ember.zeros(3)
    r = cf(base, base[:])          # the write runs eagerly between graphs
    assert r.tolist() == [2.0, 2.0, 2.0] and len(be.graphs) == 1
    assert "aliases another input" in next(iter(compiler.counters["graph_break"]))
    b2 = ember.zeros(3)
    assert cf(b2, b2[:]).tolist() == [2.0, 2.0, 2.0] and b2.tolist() == [1.0, 1.0, 1.0]
    assert cf(base, base).tolist() == [4.0, 4.0, 4.0]   # one object twice: replayable
    a, b = ember.zeros(3), ember.zeros(3)
    assert cf(a, b).tolist() == [1.0, 1.0, 1.0] and a.tolist() == [1.0, 1.0, 1.0]
    assert cf(a, b).tolist() == [2.0, 2.0, 2.0]       # replayed: mutation applied again


def test_python_side_effects_break():
    log = []

    class Logger(nn.Module):
        def __init__(self):
            super().__init__()
            self.calls = 0

        def forward(self, x):
            self.calls += 1
            log.append(1)
            return x + 1

    m = Logger()
    cm = ember.compile(m, backend="eager")
    with pytest.warns(UserWarning, match="changed Python state"):
        cm(ember.ones(1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # that guard set now runs eagerly, quietly
        cm(ember.ones(1))
        cm(ember.ones(1))
    assert m.calls == 3 and len(log) == 3


def test_disable_inside_capture_runs_between_graphs():
    log = types.SimpleNamespace(calls=[])

    @compiler.disable
    def helper(x):
        log.calls.append(x)     # a side effect each replay repeats
        return x + 1

    be = Counting()
    cf = ember.compile(lambda x: helper(x.exp()) * 2, backend=be)
    assert cf(ember.zeros(2)).tolist() == [4.0, 4.0]
    assert cf(ember.ones(2)).tolist() == pytest.approx([2 * np.e + 2] * 2)
    assert len(log.calls) == 2 and len(be.graphs) == 2      # exp | helper (eager) | mul
    with pytest.raises(GraphBreakError):
        ember.compile(lambda x: helper(x) * 2, fullgraph=True)(ember.ones(2))


def test_allow_in_graph_records_one_node():
    calls = []

    def fused(x, y):
        calls.append(1)
        return x * y + x

    opaque = compiler.allow_in_graph(fused)
    be = Counting()
    cf = ember.compile(lambda x: opaque(x, x).neg(), backend=be)
    assert cf(ember.ones(2)).tolist() == [-2.0, -2.0]
    assert cf(ember.full((2,), 2.0)).tolist() == [-6.0, -6.0]
    targets = [n.target for n in be.graphs[0].graph.nodes if n.op != "placeholder"]
    assert targets[0] is fused and calls == [1, 1]


def test_no_tensor_ops_runs_python_as_written():
    seen = []

    def f(k):
        seen.append(k)
        return k * 2

    cf = ember.compile(f)
    assert cf(3) == 6 and cf(3) == 6 and seen == [3, 3]


# ---------------------------------------------------------------------------
# compiler APIs
# ---------------------------------------------------------------------------

def test_is_compiling_during_capture_only():
    flags = []

    def f(x):
        flags.append(compiler.is_compiling())
        return x + 1

    cf = ember.compile(f, backend="eager")
    cf(ember.ones(1))
    assert flags == [True] and not compiler.is_compiling()


def test_reset_forgets_graphs():
    be = Counting()
    cf = ember.compile(lambda x: x.cos(), backend=be)
    cf(ember.ones(2))
    cf(ember.ones(2))
    compiler.reset()
    cf(ember.ones(2))
    assert len(be.graphs) == 2


def test_explain_counts_graphs_and_breaks():
    out = compiler.explain(lambda x: (x.relu() + 1).sum())(ember.randn(3))
    assert out.graph_count == 1 and out.graph_break_count == 0
    assert out.op_count == 3
    assert any(g.startswith("x: ") and "Size([3])" in g for g in out.out_guards)
    assert "Graph Count: 1" in str(out)

    def brk(x):
        return x * 2 if x.sum() > 0 else x

    out = compiler.explain(brk)(ember.ones(2))
    assert out.graph_count == 2 and out.graph_break_count == 1
    assert "item" in out.break_reasons[0]

    def side_effect(x):
        x = x + 1
        return x.numpy()   # an array sharing the result's memory: the guard set is eager
    out = compiler.explain(side_effect)(ember.ones(2))
    assert out.graph_count == 0 and out.graph_break_count == 1


def test_backend_errors():
    with pytest.raises(ValueError, match="Did you mean 'eager'"):
        ember.compile(lambda x: x, backend="eagr")
    cf = ember.compile(lambda x: x + 1, backend=lambda gm, ex: 42)
    with pytest.raises(TypeError, match="not a callable"):
        cf(ember.ones(1))


def test_compile_matches_torch_compile_on_a_small_model():
    torch = pytest.importorskip("torch")
    pytest.importorskip("torch._dynamo")

    seen = []

    def tb(gm, ex):
        seen.append(gm)
        return gm.forward

    tm = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    torch._dynamo.reset()
    tc = torch.compile(tm, backend=tb)
    tc(torch.randn(3, 4))
    em = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    be = Counting()
    ember.compile(em, backend=be)(ember.randn(3, 4))
    t_ops = [n for n in seen[0].graph.nodes if n.op in ("call_function", "call_method")]
    e_ops = [n for n in be.graphs[0].graph.nodes if n.op in ("call_function", "call_method")]
    assert [getattr(n.target, "__name__", n.target) for n in e_ops] == \
           [getattr(n.target, "__name__", n.target) for n in t_ops]
    assert len([n for n in be.graphs[0].graph.nodes if n.op == "placeholder"]) == \
           len([n for n in seen[0].graph.nodes if n.op == "placeholder"])


# ---------------------------------------------------------------------------
# ember.export
# ---------------------------------------------------------------------------

class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3)
        self.bn = nn.BatchNorm2d(2)
        self.fc = nn.Linear(2 * 4 * 4, 3)

    def forward(self, x):
        h = F.relu(self.bn(self.conv(x)))
        return {"logits": self.fc(h.flatten(1)), "n": 3}


def test_export_signature_module_and_no_side_effects():
    ember.manual_seed(0)
    m = ConvNet()
    x = ember.randn(2, 1, 6, 6)
    before = {k: np_of(v).copy() for k, v in m.state_dict().items()}
    ep = ember.export.export(m, (x,))
    for k, v in m.state_dict().items():          # exporting changed no buffer
        np.testing.assert_array_equal(np_of(v), before[k])
    sig = ep.graph_signature
    assert sig.parameters == ["conv.weight", "conv.bias", "bn.weight", "bn.bias", "fc.weight",
                              "fc.bias"]
    assert sig.buffers == ["bn.num_batches_tracked", "bn.running_mean", "bn.running_var"]
    assert sig.user_inputs == ["x"]
    names = [n.name for n in ep.graph.nodes if n.op == "placeholder"]
    assert names[0] == "p_conv_weight" and names[-1] == "x"
    ref = copy.deepcopy(m)
    got, want = ep.module()(x), ref(x)
    np.testing.assert_allclose(np_of(got["logits"]), np_of(want["logits"]), rtol=1e-6)
    assert got["n"] == 3
    assert "GraphModule" in str(ep)


def test_export_save_load_roundtrip(tmp_path):
    ember.manual_seed(1)
    m = ConvNet().eval()
    x = ember.randn(2, 1, 6, 6)
    ep = ember.export.export(m, (x,))
    path = tmp_path / "net.ember"
    ember.export.save(ep, str(path))
    raw = path.read_bytes()
    assert b"ember_export" in raw and b"pickle" not in raw
    ep2 = ember.export.load(str(path))
    assert [n.name for n in ep2.graph.nodes] == [n.name for n in ep.graph.nodes]
    assert ep2.graph_signature.input_specs == ep.graph_signature.input_specs
    np.testing.assert_array_equal(np_of(ep2.module()(x)["logits"]), np_of(m(x)["logits"]))


def test_export_run_decompositions_and_errors():
    m = nn.Sequential(nn.Linear(3, 2))
    x = ember.randn(4, 3)
    ep = ember.export.export(m, (x,))

    def linear_decomp(inp, w, b=None):
        return ember.matmul(inp, w.t()) + b

    ep2 = ep.run_decompositions({F.linear: linear_decomp})
    targets = [n.target if isinstance(n.target, str) else n.target.__name__
               for n in ep2.graph.nodes if n.op in ("call_function", "call_method")]
    assert "linear" not in targets and "matmul" in targets
    np.testing.assert_allclose(np_of(ep2.module()(x)), np_of(m(x)), rtol=1e-6)
    same = ep.run_decompositions()
    assert [n.name for n in same.graph.nodes] == [n.name for n in ep.graph.nodes]

    class Branchy(nn.Module):
        def forward(self, x):
            return x if x.sum() > 0 else -x

    with pytest.raises(GraphBreakError, match="item"):
        ember.export.export(Branchy(), (x,))
    with pytest.raises(TypeError, match="nn.Module"):
        ember.export.export(lambda t: t, (x,))
    with pytest.raises(ValueError, match="not an ember.export file"):
        import io
        buf = io.BytesIO()
        ember.serialization.save_safetensors({"a": x}, buf)
        buf.seek(0)
        ember.export.load(buf)


def test_custom_autograd_function_is_one_node_with_its_own_backward():
    class StraightThrough(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return ember.round(x)

        @staticmethod
        def backward(ctx, g):
            return g * 3.0

    be = Counting()
    cf = ember.compile(lambda x: StraightThrough.apply(x) * 2, backend=be)
    for _ in range(2):                        # capture, then replay
        x = ember.tensor([0.4, 1.6], requires_grad=True)
        y = cf(x)
        y.sum().backward()
        assert y.tolist() == [0.0, 4.0] and x.grad.tolist() == [6.0, 6.0]
    assert [n.target.__name__ for n in be.graphs[0].graph.nodes
            if n.op == "call_function"][0] == "apply"


def test_no_grad_block_inside_is_replayed_with_grad_switches():
    def f(x, w):
        y = x * w
        with ember.no_grad():
            scale = y.abs() + 1          # no gradient through this, as in eager
        return (y * scale).sum()

    be = Counting()
    cf = ember.compile(f, backend=be)
    x = ember.tensor([1.0, -2.0])
    for _ in range(2):
        w = ember.tensor([3.0, 0.5], requires_grad=True)
        cf(x, w).backward()
        we = ember.tensor([3.0, 0.5], requires_grad=True)
        f(x, we).backward()
        np.testing.assert_array_equal(np_of(w.grad), np_of(we.grad))
    code = be.graphs[0].code
    assert code.count("_set_grad_enabled(False)") == 1 and "_set_grad_enabled(True)" in code


def test_reseeding_inside_is_a_side_effect():
    def f(x):
        ember.manual_seed(0)
        return x + ember.rand(2)

    cf = ember.compile(f, backend="eager")
    with pytest.warns(UserWarning, match="changed Python state"):
        a = cf(ember.zeros(2))
    b = cf(ember.zeros(2))
    assert a.tolist() == b.tolist()


def test_module_structure_change_recaptures():
    class Stack(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.ReLU()])

        def forward(self, x):
            for layer in self.layers:
                x = layer(x) + 1
            return x

    m = Stack()
    be = Counting()
    cm = ember.compile(m, backend=be)
    x = ember.ones(2)
    assert cm(x).tolist() == [2.0, 2.0] and cm(x).tolist() == [2.0, 2.0]
    m.layers.append(nn.ReLU())
    assert cm(x).tolist() == [3.0, 3.0]
    m.layers.insert(0, nn.ReLU())
    assert cm(x).tolist() == [4.0, 4.0]
    assert len(be.graphs) == 3


def test_forward_hook_added_after_capture_is_seen():
    m = nn.Linear(2, 2)
    be = Counting()
    cm = ember.compile(m, backend=be)
    x = ember.ones(1, 2)
    cm(x)
    h = m.register_forward_hook(lambda mod, inp, out: out * 0)
    assert cm(x).tolist() == [[0.0, 0.0]]
    h.remove()
    np.testing.assert_array_equal(np_of(cm(x)), np_of(m(x)))
    assert len(be.graphs) == 2          # the hook-free graph is reused after remove()


def test_outside_tensors_are_reread_or_break():
    w = ember.ones(2)

    def scale(x):
        return x * w                          # a closure tensor: re-read every call

    cf = ember.compile(scale, backend="eager")
    x = ember.ones(2)
    assert cf(x).tolist() == [1.0, 1.0]
    w = ember.full((2,), 3.0)                 # rebinding the closure variable
    assert cf(x).tolist() == [3.0, 3.0]

    lin = nn.Linear(2, 1)
    opt_like = ember.compile(lambda p: p.grad * 2, backend="eager")
    lin(x).sum().backward()
    g1 = opt_like(lin.weight)
    assert np_of(g1).tolist() == (np_of(lin.weight.grad) * 2).tolist()
    lin.weight.grad = None
    lin(x * 5).sum().backward()              # a new .grad object
    np.testing.assert_array_equal(np_of(opt_like(lin.weight)), np_of(lin.weight.grad) * 2)
    other = nn.Linear(2, 1)                  # the .grad of another argument
    other(x * 7).sum().backward()
    np.testing.assert_array_equal(np_of(opt_like(other.weight)), np_of(other.weight.grad) * 2)

    class Holder:
        pass
    h = Holder()
    h.t = ember.ones(2)
    cf2 = ember.compile(lambda x: x + h.t, backend="eager")
    with pytest.warns(UserWarning, match="could not read again"):
        cf2(x)
    h.t = ember.zeros(2)
    assert cf2(x).tolist() == [1.0, 1.0]


def test_ember_logs_environment_variable(monkeypatch, capsys):
    monkeypatch.setenv("EMBER_LOGS", "graph,guards,recompiles,graph_breaks")
    cf = ember.compile(lambda x: x.tanh() if x.shape[0] < 3 else x.sum().numpy(),
                       backend="eager")
    cf(ember.ones(2))
    with pytest.warns(UserWarning):
        cf(ember.ones(3))
    err = capsys.readouterr().err
    for kind in ("graph", "guards", "recompiles", "graph_breaks"):
        assert f"[ember.compiler:{kind}]" in err, kind
    monkeypatch.setenv("EMBER_LOGS", "")
    with pytest.warns(UserWarning, match="graph break"):
        cf(ember.ones(4))
    assert "[ember.compiler" not in capsys.readouterr().err


def test_config_containers_are_guarded_by_value():
    g = {"ember": ember, "CFG": {"scale": 2.0, "shift": 1.0}}
    exec("def f(x):\n    return x * CFG['scale'] + CFG['shift']", g)
    cf = ember.compile(g["f"], backend="eager")
    x = ember.ones(2)
    assert cf(x).tolist() == [3.0, 3.0]
    g["CFG"]["scale"] = 5.0                     # mutated in place
    assert cf(x).tolist() == [6.0, 6.0]

    class Dims(nn.Module):
        def __init__(self):
            super().__init__()
            self.perm = [1, 0]

        def forward(self, x):
            return x.permute(*self.perm)
    m = Dims()
    cm = ember.compile(m, backend="eager")
    y = ember.randn(2, 3)
    assert tuple(cm(y).shape) == (3, 2)
    m.perm.reverse()                            # no __setattr__: still caught by value
    assert tuple(cm(y).shape) == (2, 3)


def test_requires_grad_toggled_inside_breaks():
    def f(x):
        z = (x * 2).detach().requires_grad_()
        return (z * z).sum(), z

    cf = ember.compile(f, backend="eager")
    with pytest.warns(UserWarning, match="requires_grad was changed"):
        out, z = cf(ember.ones(2))
    out, z = cf(ember.ones(2))
    (g,) = ember.autograd.grad(out, [z])
    assert g.tolist() == [4.0, 4.0]


def test_freezing_a_parameter_recaptures():
    m = nn.Linear(3, 2)
    be = Counting()
    cm = ember.compile(m, backend=be)
    x = ember.randn(4, 3)
    cm(x).sum().backward()
    cm(x)
    assert len(be.graphs) == 1
    m.weight.requires_grad_(False)           # no module write: counted by the core
    m.weight.grad = None
    m.bias.grad = None
    cm(x).sum().backward()
    assert m.weight.grad is None and m.bias.grad is not None
    assert len(be.graphs) == 2
    ph = [n for n in be.graphs[1].graph.nodes if n.op == "placeholder"]
    assert not ph[1].meta["tensor_meta"].requires_grad


def test_backward_hooks_and_retain_grad_run_eagerly():
    m = nn.Linear(3, 2)
    seen = []
    m.register_full_backward_hook(lambda mod, gi, go: seen.append(1))
    cm = ember.compile(m, backend="eager")
    x = ember.randn(4, 3, requires_grad=True)
    with pytest.warns(UserWarning, match="registered hooks"):
        cm(x).sum().backward()
    cm(x).sum().backward()
    assert seen == [1, 1]                 # the hook fires on every call

    def f(x):
        h = x * 2
        h.retain_grad()
        return h.sum(), h
    cf = ember.compile(f, backend="eager")
    with pytest.warns(UserWarning, match="registered hooks"):
        cf(x)
    out, h = cf(x)
    out.backward()
    assert h.grad.tolist() == [[1.0] * 3] * 4


def test_training_step_with_backward_inside_splits_there():
    m = nn.Linear(3, 1)
    opt = ember.optim.SGD(m.parameters(), lr=0.1)

    def step(x):
        opt.zero_grad()
        loss = m(x).pow(2).mean()
        loss.backward()
        opt.step()
        return loss

    ref = copy.deepcopy(m)
    ref_opt = ember.optim.SGD(ref.parameters(), lr=0.1)
    cstep = ember.compile(step, backend="eager")
    x = ember.randn(5, 3)
    ember.compiler.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("error")    # zero_grad, backward, step: eager steps, no break
        cstep(x)
    assert ember.compiler.counters["graph_break"]["backward() runs eagerly between graphs"] == 1
    for i in range(3):
        if i:
            cstep(x)
        ref_opt.zero_grad()
        ref(x).pow(2).mean().backward()
        ref_opt.step()
        np.testing.assert_allclose(np_of(m.weight), np_of(ref.weight), rtol=1e-6)


def test_other_threads_ops_are_not_captured():
    import threading
    started, release = threading.Event(), threading.Event()
    results = []

    def worker():
        started.set()
        release.wait(5)
        results.append((ember.ones(3) * 7).tolist())

    be = Counting()

    def f(x):
        release.set()                 # the worker runs ops while this capture is active
        y = x + 1
        for _ in range(50):
            y = y * 1.0
        return y

    t = threading.Thread(target=worker)
    t.start()
    started.wait(5)
    cf = ember.compile(f, backend=be)
    assert cf(ember.zeros(3)).tolist() == [1.0, 1.0, 1.0]
    t.join(5)
    assert results == [[7.0, 7.0, 7.0]]
    names = {getattr(n.target, "__name__", n.target) for n in be.graphs[0].graph.nodes}
    assert "ones" not in names


def test_custom_output_objects_are_rebuilt_by_running_eagerly():
    class Out:
        def __init__(self, loss):
            self.loss = loss

    cf = ember.compile(lambda x: Out((x * 2).sum()), backend="eager")
    with pytest.warns(UserWarning, match="holds a Out"):
        a = cf(ember.ones(2))
    b = cf(ember.full((2,), 3.0))
    assert a is not b and a.loss.item() == 4.0 and b.loss.item() == 12.0
    s = ember.compile(lambda x: (x.shape, x.sum()), backend="eager")
    shape, total = s(ember.ones(2, 3))
    shape, total = s(ember.ones(2, 3))
    assert tuple(shape) == (2, 3) and total.item() == 6.0


def test_reading_data_through_dlpack_breaks_numpy_is_checked():
    def f(x):
        k = float(np.from_dlpack(x.detach()).max())
        return x * k

    cf = ember.compile(f, backend="eager")
    with pytest.warns(UserWarning, match="__dlpack__"):
        cf(ember.tensor([1.0, 2.0]))
    assert cf(ember.tensor([1.0, 3.0])).tolist() == [3.0, 9.0]
    g = ember.compile(lambda x: x * float(np.asarray(x).sum()), backend="eager")
    g(ember.ones(2))                      # the values read are checked on replays
    assert g(ember.full((2,), 2.0)).tolist() == [8.0, 8.0]
    assert g(ember.ones(2)).tolist() == [2.0, 2.0]
    assert g._compiled.n_entries == 2
