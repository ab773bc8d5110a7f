"""The optimizers beyond SGD/Adam: N steps from the same start match torch's parameters;
state_dict keys and values travel between ember and torch; the foreach/fused/maximize/
capturable/differentiable flags and tensor lr behave as in torch; load_state_dict copies."""
import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.optim as optim

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(7)
SHAPES = [(4, 3), (3,), (2, 3, 2)]
P0 = [RNG.uniform(-1, 1, size=s).astype(np.float32) for s in SHAPES]
TARGET = [RNG.uniform(-1, 1, size=s).astype(np.float32) for s in SHAPES]


def grad_of(values, targets):
    """d/dp of sum((p - t)^2 + 0.1 cos(3p)): depends on p, so trajectories must agree."""
    return [(2 * (v - t) - 0.3 * np.sin(3 * v)).astype(np.float32)
            for v, t in zip(values, targets)]


def lib_of(name):
    return (ember, optim) if name == "ember" else (torch, torch.optim)


def make_params(lib, shapes=None):
    idx = range(len(P0)) if shapes is None else shapes
    return [lib.nn.Parameter(lib.tensor(P0[i].copy())) for i in idx]


def run_steps(opt, params, lib, steps, targets):
    for _ in range(steps):
        opt.zero_grad()
        vals = [p.detach().numpy().copy() for p in params]
        for p, g in zip(params, grad_of(vals, targets)):
            p.grad = lib.tensor(g)
        opt.step()


def run(which, name, kwargs, steps=8, idx=None):
    lib, opt_mod = lib_of(which)
    params = make_params(lib, idx)
    kw = dict(kwargs)
    if isinstance(kw.get("lr"), float) and kw.pop("tensor_lr", False):
        kw["lr"] = lib.tensor(kw["lr"])
    if kw.pop("tensor_wd", False):
        kw["weight_decay"] = lib.tensor(kw["weight_decay"])
    opt = getattr(opt_mod, name)(params, **kw)
    targets = TARGET if idx is None else [TARGET[i] for i in idx]
    run_steps(opt, params, lib, steps, targets)
    return [p.detach().numpy().copy() for p in params], opt


CASES = [
    ("NAdam", dict(lr=0.01)),
    ("NAdam", dict(lr=0.02, betas=(0.8, 0.99), weight_decay=0.1, momentum_decay=0.01)),
    ("NAdam", dict(lr=0.02, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", dict(lr=0.01)),
    ("RAdam", dict(lr=0.02, betas=(0.5, 0.9), weight_decay=0.05)),
    ("RAdam", dict(lr=0.02, betas=(0.5, 0.9), weight_decay=0.05,
                   decoupled_weight_decay=True)),
    ("Adamax", dict(lr=0.01)),
    ("Adamax", dict(lr=0.05, betas=(0.7, 0.9), eps=1e-3, weight_decay=0.1, maximize=True)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-4, weight_decay=0.1)),
    ("ASGD", dict(lr=0.05)),
    ("ASGD", dict(lr=0.05, lambd=0.01, alpha=0.5, t0=3, weight_decay=0.01)),
    ("Rprop", dict(lr=0.01)),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.08), maximize=True)),
    ("Adafactor", dict()),
    ("Adafactor", dict(lr=0.05, beta2_decay=-0.5, eps=(1e-20, 1e-2), d=1.5,
                       weight_decay=0.01, maximize=True)),
    ("Adam", dict(lr=0.01, tensor_lr=True, maximize=True)),
    ("SGD", dict(lr=0.05, momentum=0.9, tensor_lr=True, foreach=True)),
    ("SGD", dict(lr=0.05, momentum=0.9, weight_decay=0.1, tensor_wd=True)),
    ("SGD", dict(lr=0.05, weight_decay=0.1, tensor_wd=True, foreach=False)),
    ("NAdam", dict(lr=0.01, tensor_lr=True, foreach=False)),
    ("Rprop", dict(lr=0.01, tensor_lr=True)),
    ("AdamW", dict(lr=0.01, fused=True)),
    ("Adagrad", dict(lr=0.1, foreach=True, maximize=True)),
    ("RMSprop", dict(lr=0.01, tensor_lr=True, centered=True)),
]


@pytest.mark.parametrize("name,kwargs", CASES,
                         ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_steps_match_torch(name, kwargs):
    e, _ = run("ember", name, kwargs)
    t, _ = run("torch", name, kwargs)
    for a, b in zip(e, t):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def to_torch(value):
    if isinstance(value, ember.Tensor):
        return torch.tensor(value.numpy().copy())
    if isinstance(value, dict):
        return {k: to_torch(v) for k, v in value.items()}
    if isinstance(value, list):
        return [to_torch(v) for v in value]
    return value


def to_ember(value):
    if isinstance(value, torch.Tensor):
        return ember.tensor(value.numpy().copy())
    if isinstance(value, dict):
        return {k: to_ember(v) for k, v in value.items()}
    if isinstance(value, list):
        return [to_ember(v) for v in value]
    return value


SD_CASES = [("NAdam", {}), ("RAdam", {}), ("Adamax", {}), ("Adadelta", {}),
            ("ASGD", dict(t0=2)), ("Rprop", {}), ("Adafactor", {}), ("Adam", {}),
            ("SGD", dict(momentum=0.9)), ("AdamW", dict(amsgrad=True)),
            ("RMSprop", dict(momentum=0.5, centered=True)), ("Adagrad", dict(lr_decay=0.1))]


@pytest.mark.parametrize("name,kwargs", SD_CASES, ids=[f"{n}-{i}" for i, (n, _) in
                                                       enumerate(SD_CASES)])
def test_state_dict_travels_between_ember_and_torch(name, kwargs):
    e_vals, e_opt = run("ember", name, kwargs, steps=4)
    t_vals, t_opt = run("torch", name, kwargs, steps=4)
    e_sd, t_sd = e_opt.state_dict(), t_opt.state_dict()
    assert e_sd["param_groups"][0].keys() == t_sd["param_groups"][0].keys()
    for i in t_sd["state"]:
        assert e_sd["state"][i].keys() == t_sd["state"][i].keys()
        for k, v in t_sd["state"][i].items():
            np.testing.assert_allclose(np.asarray(to_torch(e_sd["state"][i][k])),
                                       np.asarray(v), rtol=1e-5, atol=1e-6)
    # torch's state into ember, ember's into torch: both continue like the originals
    e2 = [nn.Parameter(ember.tensor(v)) for v in t_vals]
    e_opt2 = getattr(optim, name)(e2, **kwargs)
    e_opt2.load_state_dict(to_ember(t_sd))
    t2 = [torch.nn.Parameter(torch.tensor(v)) for v in e_vals]
    t_opt2 = getattr(torch.optim, name)(t2, **kwargs)
    t_opt2.load_state_dict(to_torch(e_sd))
    run_steps(e_opt2, e2, ember, 3, TARGET)
    run_steps(t_opt2, t2, torch, 3, TARGET)
    t_ref, _ = run("torch", name, kwargs, steps=7)
    for a, b, r in zip(e2, t2, t_ref):
        np.testing.assert_allclose(a.detach().numpy(), r, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(b.detach().numpy(), r, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kwargs", [dict(), dict(nesterov=False, weight_decay=0.0),
                                    dict(adjust_lr_fn="match_rms_adamw", momentum=0.8)])
def test_muon_matches_torch(kwargs):
    # Newton-Schulz runs in bfloat16 (as in torch), so agreement is to bf16 rounding
    e, _ = run("ember", "Muon", dict(lr=0.02, **kwargs), steps=3, idx=[0])
    t, _ = run("torch", "Muon", dict(lr=0.02, **kwargs), steps=3, idx=[0])
    p0 = P0[0]
    np.testing.assert_allclose(e[0] - p0, t[0] - p0, rtol=0, atol=2e-3)
    assert np.abs(t[0] - p0).max() > 0.02  # the steps moved the parameter


def test_muon_rejects_non_matrices_and_bad_args():
    with pytest.raises(ValueError, match="2D"):
        optim.Muon([nn.Parameter(ember.ones(3))])
    with pytest.raises(ValueError, match="not supported"):
        optim.Muon([nn.Parameter(ember.ones(2, 2))], adjust_lr_fn="bogus")


def rosenbrock(lib, x):
    return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2


@pytest.mark.parametrize("kwargs", [dict(lr=0.1, max_iter=5),
                                     dict(lr=1, line_search_fn="strong_wolfe"),
                                     dict(lr=1, history_size=3, max_iter=7,
                                          line_search_fn="strong_wolfe")])
def test_lbfgs_matches_torch(kwargs):
    out = {}
    for which in ("ember", "torch"):
        lib, opt_mod = lib_of(which)
        x = lib.nn.Parameter(lib.tensor([-1.2, 1.0], dtype=lib.float64))
        opt = opt_mod.LBFGS([x], **kwargs)
        losses = []

        def closure(lib=lib, x=x, opt=opt):
            opt.zero_grad()
            loss = rosenbrock(lib, x)
            loss.backward()
            return loss

        for _ in range(4):
            losses.append(float(opt.step(closure).detach()))
        st = opt.state[opt.param_groups[0]["params"][0]]
        out[which] = (x.detach().numpy().copy(), losses, st["func_evals"], st["n_iter"])
    (xe, le, fe, ne), (xt, lt, ft, nt) = out["ember"], out["torch"]
    np.testing.assert_allclose(xe, xt, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(le, lt, rtol=1e-6)
    assert (fe, ne) == (ft, nt)


def test_lbfgs_strong_wolfe_solves_least_squares():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((20, 5)), rng.standard_normal(20)
    x = nn.Parameter(ember.zeros(5, dtype=ember.float64))
    opt = optim.LBFGS([x], line_search_fn="strong_wolfe", max_iter=100, max_eval=200,
                      tolerance_grad=1e-12, tolerance_change=1e-15)
    A, B = ember.tensor(a), ember.tensor(b)

    def closure():
        opt.zero_grad()
        loss = ((A @ x - B) ** 2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    np.testing.assert_allclose(x.detach().numpy(), np.linalg.lstsq(a, b, rcond=None)[0],
                               rtol=1e-6, atol=1e-8)
    with pytest.raises(ValueError, match="parameter groups"):
        optim.LBFGS([{"params": [x]}, {"params": [nn.Parameter(ember.ones(1))]}])
    with pytest.raises(RuntimeError, match="strong_wolfe"):
        y = nn.Parameter(ember.ones(5, dtype=ember.float64))
        optim.LBFGS([y], line_search_fn="armijo").step(
            lambda: (((A @ y - B) ** 2).sum().backward(), ((A @ y - B) ** 2).sum())[1])


ALL = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "NAdam", "RAdam", "Adamax",
       "Adadelta", "ASGD", "Rprop", "Adafactor"]


@pytest.mark.parametrize("name", ALL)
def test_flags_accepted_like_torch(name):
    import inspect
    sig_t = inspect.signature(getattr(torch.optim, name).__init__).parameters
    sig_e = inspect.signature(getattr(optim, name).__init__).parameters
    for flag in ("foreach", "fused", "maximize", "capturable", "differentiable"):
        assert (flag in sig_e) == (flag in sig_t), flag
        if flag in sig_t:
            assert sig_e[flag].default == sig_t[flag].default
            assert sig_e[flag].kind == sig_t[flag].kind
    # every argument torch takes, with its default
    assert list(sig_e) == list(sig_t)
    for k in sig_t:
        if k not in ("self", "params") and not isinstance(sig_t[k].default, torch.Tensor):
            assert sig_e[k].default == sig_t[k].default, k


@pytest.mark.parametrize("name", ["Adam", "NAdam", "RAdam", "Adamax", "Adadelta", "ASGD",
                                  "Rprop", "RMSprop"])
def test_capturable_on_cpu_fails_like_torch(name):
    errs = []
    for which in ("ember", "torch"):
        lib, opt_mod = lib_of(which)
        p = lib.nn.Parameter(lib.ones(3))
        p.grad = lib.ones(3)
        opt = getattr(opt_mod, name)([p], capturable=True)
        with pytest.raises(AssertionError) as info:
            opt.step()
        errs.append(str(info.value))
    assert errs[0] == errs[1]


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "Adagrad"])
def test_fused_argument_errors_like_torch(name):
    for kw, msg in ((dict(fused=True, foreach=True), "cannot be `True` together"),
                    (dict(fused=True, differentiable=True), "does not support")):
        for opt_mod, lib in ((optim, ember), (torch.optim, torch)):
            with pytest.raises(RuntimeError, match=msg):
                getattr(opt_mod, name)([lib.nn.Parameter(lib.ones(2))], lr=0.1, **kw)


def test_tensor_lr_rules():
    for opt_mod, lib in ((optim, ember), (torch.optim, torch)):
        p = lib.nn.Parameter(lib.ones(2))
        with pytest.raises(ValueError, match="1-element"):
            opt_mod.NAdam([p], lr=lib.tensor([0.1, 0.2]))
        with pytest.raises(ValueError, match="foreach=True"):
            opt_mod.Adam([p], lr=lib.tensor(0.1), foreach=True)
        with pytest.raises(ValueError, match="Invalid learning rate"):
            opt_mod.RAdam([p], lr=-0.1)
        with pytest.raises(ValueError, match="eta"):
            opt_mod.Rprop([p], etas=(1.5, 2.0))


@pytest.mark.parametrize("name,kwargs", [("SGD", dict(lr=0.1, momentum=0.9)),
                                         ("Adam", dict(lr=0.1)),
                                         ("NAdam", dict(lr=0.1)),
                                         ("RAdam", dict(lr=0.1, betas=(0.5, 0.6))),
                                         ("Adadelta", dict(lr=0.5)),
                                         ("RMSprop", dict(lr=0.1))])
def test_differentiable_step_gradients_match_torch(name, kwargs):
    """With differentiable=True the update is part of the graph: d(sum(new p^2))/d(p0)
    and d/d(grad) after two steps agree with torch."""
    res = {}
    for which in ("ember", "torch"):
        lib, opt_mod = lib_of(which)
        p0 = lib.tensor(P0[0].copy(), requires_grad=True)
        g0 = lib.tensor(TARGET[0].copy(), requires_grad=True)
        p = p0 * 1.0
        opt = getattr(opt_mod, name)([p], differentiable=True, **kwargs)
        for k in range(2):
            p.grad = g0 * (k + 1) + p.detach()
            opt.step()
        (p * p).sum().backward()
        res[which] = (p.detach().numpy().copy(), p0.grad.numpy().copy(),
                      g0.grad.numpy().copy())
    for a, b in zip(res["ember"], res["torch"]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


def test_differentiable_false_rejects_non_leaf():
    p = ember.ones(2, requires_grad=True) * 2
    with pytest.raises(ValueError, match="non-leaf"):
        optim.Adam([p])
    assert len(optim.Adam([p], differentiable=True).param_groups) == 1


@pytest.mark.parametrize("name,kwargs", [("SGD", dict(lr=0.1, momentum=0.9)),
                                         ("Adam", dict(lr=0.1)),
                                         ("Rprop", dict(lr=0.1)),
                                         ("ASGD", dict(lr=0.1, t0=1)),
                                         ("NAdam", dict(lr=0.1))])
def test_load_state_dict_does_not_share_state(name, kwargs):
    """opt2.load_state_dict(opt1.state_dict()), then stepping both: each continues on its
    own copy of the state. (torch 2.13 aliases the tensors when dtype and device match,
    so both optimizers then corrupt each other; the reference is torch given a deep copy.)"""
    import copy
    res = {}
    for which in ("ember", "torch"):
        lib, opt_mod = lib_of(which)
        p1 = lib.nn.Parameter(lib.tensor(P0[0].copy()))
        p2 = lib.nn.Parameter(lib.tensor(P0[0].copy()))
        o1 = getattr(opt_mod, name)([p1], **kwargs)
        o2 = getattr(opt_mod, name)([p2], **kwargs)
        p1.grad = lib.tensor(TARGET[0].copy())
        o1.step()
        sd = o1.state_dict()
        o2.load_state_dict(sd if which == "ember" else copy.deepcopy(sd))
        if which == "ember":
            for k, v in o1.state[p1].items():
                if isinstance(v, ember.Tensor):
                    assert o2.state[p2][k] is not v
        for k in range(3):
            p1.grad = lib.tensor(TARGET[0] * (k + 2))
            p2.grad = lib.tensor(TARGET[0] * -(k + 1))
            o1.step()
            o2.step()
        res[which] = (p1.detach().numpy().copy(), p2.detach().numpy().copy())
    for a, b in zip(res["ember"], res["torch"]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_state_dict_hooks_like_torch():
    out = {}
    for which in ("ember", "torch"):
        lib, opt_mod = lib_of(which)
        p = lib.nn.Parameter(lib.ones(2))
        opt = opt_mod.SGD([p], lr=0.1, momentum=0.9)
        log = []
        opt.register_state_dict_pre_hook(lambda o: log.append("pre"))
        opt.register_state_dict_pre_hook(lambda o: log.append("first"), prepend=True)

        def post(o, sd):
            log.append("post")
            return dict(sd, extra=1)

        h = opt.register_state_dict_post_hook(post)

        def load_pre(o, sd):
            log.append("load_pre")
            sd = dict(sd)
            sd["param_groups"] = [dict(g, lr=0.5) for g in sd["param_groups"]]
            return sd

        opt.register_load_state_dict_pre_hook(load_pre)
        opt.register_load_state_dict_post_hook(lambda o: log.append("load_post"))
        sd = opt.state_dict()
        keys = sorted(sd)
        opt.load_state_dict(sd)
        h.remove()
        keys2 = sorted(opt.state_dict())
        out[which] = (log, keys, keys2, opt.param_groups[0]["lr"])
    assert out["ember"] == out["torch"]
    assert out["ember"][0][:3] == ["first", "pre", "post"]


@pytest.mark.parametrize("opt_name,kwargs", [
    ("SGD", dict(base_lr=0.01, max_lr=0.1, step_size_up=4)),
    ("SGD", dict(base_lr=0.01, max_lr=0.1, step_size_up=3, step_size_down=5,
                 mode="triangular2")),
    ("Adam", dict(base_lr=0.001, max_lr=0.01, step_size_up=2, mode="exp_range", gamma=0.9,
                  base_momentum=0.7, max_momentum=0.95)),
    ("SGD", dict(base_lr=[0.01, 0.02], max_lr=0.1, step_size_up=3,
                 scale_fn=lambda x: 0.5 ** x, scale_mode="iterations")),
])
def test_cyclic_lr_like_torch(opt_name, kwargs):
    out = {}
    for which in ("ember", "torch"):
        lib, opt_mod = lib_of(which)
        a, b = lib.nn.Parameter(lib.ones(2)), lib.nn.Parameter(lib.ones(2))
        extra = dict(momentum=0.9) if opt_name == "SGD" else {}
        opt = getattr(opt_mod, opt_name)([{"params": [a]}, {"params": [b]}], lr=0.5, **extra)
        sched = opt_mod.lr_scheduler.CyclicLR(opt, **kwargs)
        trace = []
        for _ in range(17):
            opt.step()
            sched.step()
            g = opt.param_groups
            trace.append((sched.get_last_lr(), [x.get("momentum", x.get("betas", (0,))[0])
                                                for x in g]))
        sd = sched.state_dict()
        out[which] = (trace, sorted(sd), sd["last_epoch"])
    np.testing.assert_allclose(np.array([t[0] for t in out["ember"][0]]),
                               np.array([t[0] for t in out["torch"][0]]), rtol=1e-12)
    np.testing.assert_allclose(np.array([t[1] for t in out["ember"][0]]),
                               np.array([t[1] for t in out["torch"][0]]), rtol=1e-12)
    assert out["ember"][2] == out["torch"][2]
    assert set(out["ember"][1]) >= {"base_lrs", "max_lrs", "last_epoch", "_scale_fn_custom"}


def test_cyclic_lr_errors():
    p = nn.Parameter(ember.ones(2))
    with pytest.raises(ValueError, match="mode is invalid"):
        optim.lr_scheduler.CyclicLR(optim.SGD([p], lr=0.1, momentum=0.9), 0.01, 0.1,
                                    mode="bogus")
    with pytest.raises(ValueError, match="momentum"):
        optim.lr_scheduler.CyclicLR(optim.Adagrad([p]), 0.01, 0.1)
    with pytest.raises(TypeError):
        optim.lr_scheduler.CyclicLR(object(), 0.01, 0.1)


def _swa_model(lib):
    m = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.Linear(4, 2))
    for p, v in zip(m.parameters(), _SWA_INIT):
        with lib.no_grad():
            p.copy_(lib.tensor(v))
    return m


_SWA_INIT = [RNG.standard_normal(s).astype(np.float32)
             for s in [(4, 3), (4,), (4,), (4,), (2, 4), (2,)]]
_SWA_X = RNG.standard_normal((6, 8, 3)).astype(np.float32)


@pytest.mark.parametrize("mode", ["swa", "ema_multi", "ema", "swa_fn", "buffers"])
def test_averaged_model_like_torch(mode):
    out = {}
    for which in ("ember", "torch"):
        lib, opt_mod = lib_of(which)
        su = opt_mod.swa_utils
        model = _swa_model(lib)
        kw = {"swa": {}, "ema_multi": dict(multi_avg_fn=su.get_ema_multi_avg_fn(0.8)),
              "ema": dict(avg_fn=su.get_ema_avg_fn(0.7)),
              "swa_fn": dict(avg_fn=su.get_swa_avg_fn()),
              "buffers": dict(multi_avg_fn=su.get_ema_multi_avg_fn(0.5), use_buffers=True)}
        avg = su.AveragedModel(model, **kw[mode])
        opt = opt_mod.SGD(model.parameters(), lr=0.05)
        for x in _SWA_X[:4]:
            opt.zero_grad()
            model(lib.tensor(x)).pow(2).mean().backward()
            opt.step()
            avg.update_parameters(model)
        with lib.no_grad():
            y = avg(lib.tensor(_SWA_X[5])).numpy().copy()
        out[which] = ([p.detach().numpy().copy() for p in avg.parameters()],
                      [b.numpy().copy() for b in avg.buffers()], y, int(avg.n_averaged))
    for a, b in zip(out["ember"][0] + out["ember"][1], out["torch"][0] + out["torch"][1]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out["ember"][2], out["torch"][2], rtol=1e-4, atol=1e-5)
    assert out["ember"][3] == out["torch"][3] == 4


def test_update_bn_like_torch():
    out = {}
    for which in ("ember", "torch"):
        lib, opt_mod = lib_of(which)
        model = _swa_model(lib)
        model.eval()
        loader = [(lib.tensor(x), 0) for x in _SWA_X]
        opt_mod.swa_utils.update_bn(loader, model)
        bn = model[1]
        out[which] = (bn.running_mean.numpy().copy(), bn.running_var.numpy().copy(),
                      int(bn.num_batches_tracked), bn.momentum, model.training)
    np.testing.assert_allclose(out["ember"][0], out["torch"][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out["ember"][1], out["torch"][1], rtol=1e-5, atol=1e-6)
    assert out["ember"][2:] == out["torch"][2:]


@pytest.mark.parametrize("kwargs", [dict(swa_lr=0.05), dict(swa_lr=[0.05, 0.01],
                                    anneal_epochs=3, anneal_strategy="linear"),
                                    dict(swa_lr=0.02, anneal_epochs=0)])
def test_swalr_like_torch(kwargs):
    out = {}
    for which in ("ember", "torch"):
        lib, opt_mod = lib_of(which)
        a, b = lib.nn.Parameter(lib.ones(1)), lib.nn.Parameter(lib.ones(1))
        opt = opt_mod.SGD([{"params": [a]}, {"params": [b], "lr": 0.3}], lr=0.5)
        sched = opt_mod.swa_utils.SWALR(opt, **kwargs)
        trace = []
        for _ in range(14):
            opt.step()
            sched.step()
            trace.append(sched.get_last_lr())
        out[which] = trace
    np.testing.assert_allclose(out["ember"], out["torch"], rtol=1e-12)
    for lib, opt_mod in ((ember, optim), (torch, torch.optim)):
        p = lib.nn.Parameter(lib.ones(1))
        with pytest.raises(ValueError, match="anneal_strategy"):
            opt_mod.swa_utils.SWALR(opt_mod.SGD([p], lr=0.1), 0.1, anneal_strategy="exp")
        with pytest.raises(ValueError, match="decay"):
            opt_mod.swa_utils.get_ema_avg_fn(1.5)


def test_swap_in_optimizer_params_and_state_like_torch():
    out = {}
    for which in ("ember", "torch"):
        lib, opt_mod = lib_of(which)
        live = [lib.nn.Parameter(lib.tensor(P0[i].copy())) for i in range(2)]
        opt = opt_mod.Adam(live, lr=0.1)
        for p in live:
            p.grad = lib.ones(*p.shape)
        opt.step()
        sd = opt.state_dict()
        swap = {"w": lib.tensor(P0[0] * 2), "b": lib.tensor(P0[1] * 2)}
        osd = {"state": {k: {n: (v.clone() if isinstance(v, lib.Tensor) else v)
                             for n, v in s.items()} for k, s in sd["state"].items()},
               "param_groups": [dict(g, lr=0.5) for g in sd["param_groups"]]}
        for t in swap.values():
            t.grad = lib.ones(*t.shape)
        with opt_mod.swap_in_optimizer_params_and_state(opt, swap, osd):
            assert opt.param_groups[0]["lr"] == 0.5
            opt.step()
        assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[0]["params"][0] is live[0]
        with pytest.raises(RuntimeError, match="extra keys"):
            with opt_mod.swap_in_optimizer_params_and_state(
                    opt, swap, {"state": {7: {}}, "param_groups": sd["param_groups"]}):
                pass
        out[which] = ([t.numpy().copy() for t in swap.values()],
                      [p.detach().numpy().copy() for p in live],
                      osd["state"][0]["exp_avg"].numpy().copy())
    for a, b in zip(out["ember"][0] + out["ember"][1] + [out["ember"][2]],
                    out["torch"][0] + out["torch"][1] + [out["torch"][2]]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
