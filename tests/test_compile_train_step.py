"""A whole training step under ember.compile: zero_grad, forward, loss.backward(),
optimizer.step() (and a scheduler) in one compiled function, against eager."""
import warnings

import numpy as np
import pytest

import ember

nn = ember.nn
F = nn.functional


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(12, 24)
        self.ln = nn.LayerNorm(24)
        self.l2 = nn.Linear(24, 5)

    def forward(self, x):
        return self.l2(self.ln(F.gelu(self.l1(x))).tanh() * 2)


def _make(opt_cls, **kw):
    ember.manual_seed(0)
    net = _Net()
    return net, opt_cls(net.parameters(), **kw)


def _data():
    g = ember.Generator().manual_seed(1)
    return ember.randn(8, 12, generator=g), ember.randint(0, 5, (8,), generator=g)


def _train_step(net, opt, sched=None, set_to_none=True):
    def step(x, y):
        opt.zero_grad(set_to_none=set_to_none)
        loss = F.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        return loss
    return step


def _program(compiled):
    (entry,) = [e for es in compiled._compiled.cache.values() for e in es]
    return entry.compiled


@pytest.mark.parametrize("opt_cls,kw", [
    (ember.optim.Adam, dict(lr=1e-2)),
    (ember.optim.AdamW, dict(lr=1e-2, weight_decay=0.1)),
    (ember.optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True)),
])
def test_compiled_train_step_matches_eager(opt_cls, kw):
    ember.compiler.reset()
    x, y = _data()
    n1, o1 = _make(opt_cls, **kw)
    n2, o2 = _make(opt_cls, **kw)
    compiled = ember.compile(_train_step(n1, o1))
    eager = _train_step(n2, o2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")           # no graph break makes it run eagerly
        for _ in range(4):
            l1, l2 = compiled(x, y), eager(x, y)
            np.testing.assert_allclose(l1.item(), l2.item(), rtol=1e-5)
    for (name, a), b in zip(n1.named_parameters(), n2.parameters()):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5,
                                   atol=1e-6, err_msg=name)
    stats = ember.compiler.counters["stats"]
    assert stats["calls_captured"] == 1 and stats["unique_graphs"] == 1
    # the forward runs generated code and its backward the generated backward
    prog = _program(compiled)
    kinds = [type(s).__name__ for s in prog.steps]
    assert kinds == ["_EagerStep", "_GraphStep", "_EagerStep", "_EagerStep"]
    assert type(prog.steps[1].fn).__name__ == "TrainingGraph"
    breaks = ember.compiler.counters["graph_break"]
    assert breaks["backward() runs eagerly between graphs"] >= 1
    assert breaks["step() runs eagerly between graphs"] >= 1


def test_compiled_train_step_matches_torch():
    torch = pytest.importorskip("torch")
    x, y = _data()
    net, opt = _make(ember.optim.Adam, lr=1e-2)
    tnet = torch.nn.Sequential(torch.nn.Linear(12, 24), torch.nn.GELU(),
                               torch.nn.LayerNorm(24), torch.nn.Tanh(), torch.nn.Linear(24, 5))
    with torch.no_grad():
        for tm, em in ((tnet[0], net.l1), (tnet[2], net.ln), (tnet[4], net.l2)):
            tm.weight.copy_(torch.from_numpy(em.weight.detach().numpy().copy()))
            tm.bias.copy_(torch.from_numpy(em.bias.detach().numpy().copy()))
    topt = torch.optim.Adam(tnet.parameters(), lr=1e-2)
    tx, ty = torch.from_numpy(x.numpy().copy()), torch.from_numpy(y.numpy().copy())
    compiled = ember.compile(_train_step(net, opt))
    for _ in range(3):
        loss = compiled(x, y)
        topt.zero_grad()
        tloss = torch.nn.functional.cross_entropy(tnet[4](tnet[:4](tx) * 2), ty)
        tloss.backward()
        topt.step()
        np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-5)
    np.testing.assert_allclose(net.l1.weight.detach().numpy(), tnet[0].weight.detach().numpy(),
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(net.l2.bias.detach().numpy(), tnet[4].bias.detach().numpy(),
                               rtol=1e-4, atol=1e-5)


def test_scheduler_and_kept_gradients_inside_the_compiled_step():
    ember.compiler.reset()
    x, y = _data()
    runs = []
    for compiled in (True, False):
        net, opt = _make(ember.optim.SGD, lr=0.1, momentum=0.9)
        sched = ember.optim.lr_scheduler.StepLR(opt, 1, gamma=0.5)
        step = _train_step(net, opt, sched, set_to_none=False)
        step = ember.compile(step) if compiled else step
        losses = [step(x, y).item() for _ in range(4)]
        runs.append((losses, opt.param_groups[0]["lr"], net.l1.weight.detach().numpy(),
                     net.l1.weight.grad.numpy()))
    (l1, lr1, w1, g1), (l2, lr2, w2, g2) = runs
    np.testing.assert_allclose(l1, l2, rtol=1e-5)
    assert lr1 == lr2 == 0.1 * 0.5 ** 4
    np.testing.assert_allclose(w1, w2, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g1, g2, rtol=1e-5, atol=1e-6)
    assert ember.compiler.counters["stats"]["calls_captured"] == 1


def _lr_step(net, opt, where):
    def step(x, y):
        if where == "before":
            opt.param_groups[0]["lr"] *= 0.5      # Python state a replay would not change
        opt.zero_grad()
        F.cross_entropy(net(x), y).backward()
        opt.step()
        if where == "after":
            opt.param_groups[0]["lr"] *= 0.5
    return step


@pytest.mark.parametrize("where", ["before", "after"])
def test_hyperparameters_changed_by_traced_code_run_eagerly(where):
    ember.compiler.reset()
    x, y = _data()
    runs = []
    for compiled in (True, False):
        net, opt = _make(ember.optim.SGD, lr=0.1)
        step = _lr_step(net, opt, where)
        fn = ember.compile(step) if compiled else step
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            for _ in range(3):
                fn(x, y)
        runs.append((opt.param_groups[0]["lr"], net.l2.weight.detach().numpy()))
        if compiled:
            assert any("changed Python state" in str(m.message) for m in w)
    assert runs[0][0] == runs[1][0] == 0.1 / 8
    np.testing.assert_allclose(runs[0][1], runs[1][1], rtol=1e-6, atol=1e-7)


def _clip_step(net, opt, max_norm):
    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(net(x), y)
        loss.backward()
        total = nn.utils.clip_grad_norm_(net.parameters(), max_norm)
        opt.step()
        return loss, total
    return step


@pytest.mark.parametrize("max_norm", [0.5, 100.0])     # clipping, and a factor clamped at 1
def test_gradients_clipped_between_backward_and_step_stay_compiled(max_norm):
    ember.compiler.reset()
    x, y = _data()
    n1, o1 = _make(ember.optim.Adam, lr=1e-2)
    n2, o2 = _make(ember.optim.Adam, lr=1e-2)
    compiled = ember.compile(_clip_step(n1, o1, max_norm))
    eager = _clip_step(n2, o2, max_norm)
    with warnings.catch_warnings():
        warnings.simplefilter("error")           # no graph break makes it run eagerly
        for _ in range(5):
            (l1, t1), (l2, t2) = compiled(x, y), eager(x, y)
            np.testing.assert_allclose(l1.item(), l2.item(), rtol=1e-5)
            np.testing.assert_allclose(t1.item(), t2.item(), rtol=1e-5)
            for a, b in zip(n1.parameters(), n2.parameters()):
                np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5,
                                           atol=1e-7)
    for a, b in zip(n1.parameters(), n2.parameters()):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
    stats = ember.compiler.counters["stats"]
    assert stats["calls_captured"] == 1 and stats["unique_graphs"] == 2
    # zero_grad, forward+backward graph, backward, the clipping graph, step
    prog = _program(compiled)
    assert [type(s).__name__ for s in prog.steps] == \
        ["_EagerStep", "_GraphStep", "_EagerStep", "_GraphStep", "_EagerStep"]
    clip = prog.steps[3].gm.graph
    assert sum(1 for n in clip.nodes if n.op == "placeholder") == len(list(n1.parameters()))


def test_module_zero_grad_inside_a_compiled_step_runs_on_every_call():
    x, y = _data()
    runs = []
    def make(net):
        def step(x, y):
            net.zero_grad()
            F.cross_entropy(net(x), y).backward()
        return step

    for compiled in (True, False):
        net, _ = _make(ember.optim.SGD, lr=0.1)
        fn = ember.compile(make(net)) if compiled else make(net)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for _ in range(3):
                fn(x, y)
        runs.append([p.grad.numpy() for p in net.parameters()])
    for a, b in zip(*runs):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


# ---------------------------------------------------------------- memory of the backward
def _graph_module(nodes_fn, *inputs):
    from ember.fx import Graph, GraphModule
    from ember.fx.passes.shape_prop import ShapeProp
    g = Graph()
    phs = [g.placeholder(f"in{i}") for i in range(len(inputs))]

    def op(name, *args):
        n = g.call_method(name, args)
        n.meta["op_name"] = name
        return n
    g.output((nodes_fn(g, op, *phs),))
    gm = GraphModule(ember.nn.Module(), g)
    ShapeProp(gm).propagate(*inputs)
    return gm


def test_generated_backward_frees_each_saved_value_after_its_last_use():
    import weakref

    from ember.compiler.codegen.backend import _compile_plain
    seen, refs = [], []

    def probe(t):
        if refs:                         # the first input's last reader ran before this
            seen.append(refs[0]() is None)
        return t

    def body(g, op, a, b):
        d = g.call_function(probe, (op("cos", op("sin", a)),))
        return op("add", op("mul", d, b), 1.0)
    ta, tb = ember.randn(4, 8), ember.randn(4, 8)
    want = (ta.sin().cos() * tb + 1).numpy()
    run = _compile_plain(_graph_module(body, ta, tb))
    assert run.n_kernels == 2
    refs.append(weakref.ref(ta))
    args = [ta, tb]
    del ta
    (out,) = run.run_owned(args)
    assert all(v is None for v in args) and seen == [True]
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)
    # a graph of kernels only (one native plan) takes its arguments the same way
    ta = ember.randn(4, 8)
    run = _compile_plain(_graph_module(lambda g, op, a: op("cos", op("sin", a)), ta))
    args = [ta]
    (out,) = run.run_owned(args)
    assert all(v is None for v in args) and run.owned is not None
    np.testing.assert_allclose(out.numpy(), ta.sin().cos().numpy(), rtol=1e-6)


def test_compiled_backward_twice_with_retain_graph_and_not_without():
    ember.compiler.reset()
    ember.manual_seed(3)
    net = _Net()
    x, y = _data()
    cnet = ember.compile(net)
    loss = F.cross_entropy(cnet(x), y)
    loss.backward(retain_graph=True)
    g1 = net.l1.weight.grad.clone()
    loss.backward()                      # the saved values were kept for this one
    np.testing.assert_allclose(net.l1.weight.grad.numpy(), 2 * g1.numpy(), rtol=1e-5,
                               atol=1e-7)
    with pytest.raises(RuntimeError, match="second time|freed"):
        loss.backward()
    net.zero_grad()
    F.cross_entropy(net(x), y).backward()
    np.testing.assert_allclose(g1.numpy(), net.l1.weight.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_relu_mask_read_from_the_saved_output_not_the_input():
    ember.compiler.reset()
    ember.manual_seed(4)
    mlp = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 5))
    ref = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 5))
    ref.load_state_dict(mlp.state_dict())
    x, y = _data()
    cm = ember.compile(mlp)
    F.cross_entropy(cm(x), y).backward()
    F.cross_entropy(ref(x), y).backward()
    for p, q in zip(mlp.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-7)
    (entry,) = [e for es in cm._compiled.cache.values() for e in es]
    fwd = entry.gm.meta["joint"]["forward"]
    out = next(n for n in fwd.graph.nodes if n.op == "output")
    saved = [n.meta.get("op_name") for n in out.args[0][1:]]
    # the first layer's output (relu's input) is not kept for the backward
    assert saved.count("relu") == 1 and "linear" not in saved
    # linear's formula reshapes 2-D gradients to the shapes they have: dropped
    bwd = entry.gm.meta["joint"]["backward"].graph
    assert not [n for n in bwd.nodes if n.target == "reshape"]
    assert [n for n in bwd.nodes if n.target == "mm"]


@pytest.mark.parametrize("kind", ["index", "index-weighted", "probabilities"])
def test_cross_entropy_island_runs_its_function_directly(kind):
    from ember._C import core
    ember.compiler.reset()
    ember.manual_seed(5)
    net, ref = _Net(), _Net()
    ref.load_state_dict(net.state_dict())
    x, y = _data()
    w = ember.rand(5) + 0.5
    if kind == "probabilities":
        y = ember.softmax(ember.randn(8, 5), 1)

    def loss_fn(m, x, y):
        if kind == "index-weighted":
            return F.cross_entropy(m(x), y, weight=w, label_smoothing=0.1, ignore_index=2)
        return F.cross_entropy(m(x), y, label_smoothing=0.05)

    cf = ember.compile(lambda x, y: loss_fn(net, x, y))
    for i in range(3):
        net.zero_grad()
        ref.zero_grad()
        rg = core._requires_grad_writes()
        loss = cf(x, y)
        # no autograd graph of its own: a replay sets no requires_grad flag, so the
        # next call's guards need not look at modules again
        assert i == 0 or core._requires_grad_writes() == rg
        loss.backward()
        want = loss_fn(ref, x, y)
        want.backward()
        np.testing.assert_allclose(loss.item(), want.item(), rtol=1e-5)
        for p, q in zip(net.parameters(), ref.parameters()):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-6)
    (entry,) = [e for es in cf._compiled.cache.values() for e in es]
    assert entry.gm.meta["joint"]["saved"] > 0


# ------------------------------------------------ optimizer.step() as generated code
def _opt_state(opt):
    return [{k: (v.numpy().copy() if isinstance(v, ember.Tensor) else v)
             for k, v in opt.state[p].items()} for g in opt.param_groups for p in g["params"]]


@pytest.mark.parametrize("opt_cls,kw", [
    (ember.optim.Adam, dict(lr=1e-2)),
    (ember.optim.Adam, dict(lr=1e-2, amsgrad=True, weight_decay=0.01, maximize=True)),
    (ember.optim.AdamW, dict(lr=1e-2, weight_decay=0.1)),
    (ember.optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True)),
    (ember.optim.SGD, dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=1e-3)),
    (ember.optim.SGD, dict(lr=0.1)),
])
def test_optimizer_step_runs_generated_code_equal_to_eager(opt_cls, kw):
    ember.compiler.reset()
    x, y = _data()
    nets = []
    for _ in range(2):      # linear layers and relu: compiled gradients equal eager's
        ember.manual_seed(0)
        net = nn.Sequential(nn.Linear(12, 40), nn.ReLU(), nn.Linear(40, 5))
        nets += [net, opt_cls(net.parameters(), **kw)]
    n1, o1, n2, o2 = nets
    compiled = ember.compile(_train_step(n1, o1))
    eager = _train_step(n2, o2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(5):
            np.testing.assert_array_equal(compiled(x, y).item(), eager(x, y).item())
    # the update is the eager multi-tensor kernel's arithmetic: equal bit for bit
    for (name, a), b in zip(n1.named_parameters(), n2.parameters()):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy(), err_msg=name)
    for s1, s2 in zip(_opt_state(o1), _opt_state(o2)):
        assert s1.keys() == s2.keys()
        for k in s1:
            np.testing.assert_array_equal(s1[k], s2[k], err_msg=k)
    assert o1._step_count == o2._step_count == 5
    # the capture ran the eager step; the four replays ran the generated one
    assert ember.compiler.counters["stats"]["fused_optimizer_steps"] == 4
    update = _program(compiled).steps[-1].fn._ember_step_fn
    assert type(update).__name__ == "FusedUpdate" and update.unfit is None


def test_generated_optimizer_step_follows_groups_schedulers_and_hooks():
    ember.compiler.reset()
    x, y = _data()
    runs = []
    for compiled in (True, False):
        ember.manual_seed(0)
        net = _Net()
        opt = ember.optim.Adam([{"params": net.l1.parameters(), "lr": 1e-2},
                                {"params": list(net.ln.parameters()) + list(net.l2.parameters()),
                                 "lr": 3e-3, "betas": (0.8, 0.99)}])
        sched = ember.optim.lr_scheduler.StepLR(opt, 1, gamma=0.7)
        step = _train_step(net, opt, sched)
        fn = ember.compile(step) if compiled else step
        calls = []
        for i in range(6):
            if i == 3:       # a hook: the compiled step runs the eager update (which calls it)
                h = opt.register_step_post_hook(lambda o, a, k: calls.append(1))
            if i == 5:
                h.remove()
            fn(x, y)
        runs.append(([p.detach().numpy() for p in net.parameters()],
                     [g["lr"] for g in opt.param_groups], len(calls)))
    (p1, lr1, c1), (p2, lr2, c2) = runs
    assert lr1 == lr2 and c1 == c2 == 2
    for a, b in zip(p1, p2):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    # calls 2, 3 and 6 (after the hook went) ran the generated update
    assert ember.compiler.counters["stats"]["fused_optimizer_steps"] == 3


# ------------------------------------- a branch on the clipped norm: resume at the check
def _skip_step(net, opt, limit):
    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(net(x), y)
        loss.backward()
        total = nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        if total < limit:           # skip the update when the gradients blew up
            opt.step()
        return loss, total
    return step


def test_branch_on_the_clipped_norm_resumes_after_the_check():
    ember.compiler.reset()
    x, y = _data()
    nets = []
    for _ in range(2):
        ember.manual_seed(0)
        net = nn.Sequential(nn.Linear(12, 24), nn.ReLU(), nn.Linear(24, 5))
        nets += [net, ember.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)]
    n1, o1, n2, o2 = nets
    compiled = ember.compile(_skip_step(n1, o1, 5.0))
    eager = _skip_step(n2, o2, 5.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")           # split at the check, never run eagerly
        for s in (1, 1, 1000, 1000, 1, 1000, 1):     # 1000: norms above the limit
            (l1, t1), (l2, t2) = compiled(x * s, y), eager(x * s, y)
            np.testing.assert_allclose(l1.item(), l2.item(), rtol=1e-5)
            np.testing.assert_allclose(t1.item(), t2.item(), rtol=1e-5)
            for a, b in zip(n1.parameters(), n2.parameters()):
                np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(),
                                           rtol=1e-5, atol=1e-6)
                np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5,
                                           atol=1e-6)
    # the third call failed the check after the in-place clipping: it went on from the
    # check (not from the start, which would clip twice) and captured the branch that
    # skips the step; later calls resume into whichever branch their norm takes
    stats = ember.compiler.counters["stats"]
    assert stats["calls_captured"] == 2
    progs = [e.compiled for es in compiled._compiled.cache.values() for e in es]
    checks = [s for p in progs for s in p.steps if type(s).__name__ == "_ValueStep"]
    assert sorted(c.expected for c in checks) == [False, True]
    assert all(c.resume_at is not None for c in checks)
    assert [type(s).__name__ for s in progs[0].steps][-1] == "_EagerStep"       # the step
    assert [type(s).__name__ for s in progs[1].steps][-1] == "_ValueStep"       # skipped


def test_optimizer_step_without_generated_code_runs_its_own_step():
    ember.compiler.reset()
    x, y = _data()
    runs = []
    for compiled in (True, False):
        net, opt = _make(ember.optim.Adam, lr=1e-2, foreach=False)   # the per-tensor loop
        step = _train_step(net, opt)
        fn = ember.compile(step) if compiled else step
        for _ in range(3):
            fn(x, y)
        runs.append([p.detach().numpy() for p in net.parameters()])
        if compiled:
            update = _program(fn).steps[-1].fn._ember_step_fn
            assert "group" in update.unfit and update.plan is None
    for a, b in zip(*runs):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert ember.compiler.counters["stats"]["fused_optimizer_steps"] == 0
