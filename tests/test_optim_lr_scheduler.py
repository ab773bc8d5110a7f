"""Learning-rate schedulers: the lr sequences match PyTorch's."""
import numpy as np
import pytest

import ember
import ember.optim as optim
from ember.optim import lr_scheduler as S

torch = pytest.importorskip("torch")
TS = torch.optim.lr_scheduler


def make(lib, opt_name="SGD", **kw):
    if lib == "ember":
        ps = [ember.nn.Parameter(ember.ones(2)), ember.nn.Parameter(ember.ones(1))]
        o = getattr(optim, opt_name)
    else:
        ps = [torch.nn.Parameter(torch.ones(2)), torch.nn.Parameter(torch.ones(1))]
        o = getattr(torch.optim, opt_name)
    return o([{"params": ps[:1], "lr": 0.1}, {"params": ps[1:], "lr": 0.02}], **kw)


def sequence(lib, build, steps=25, opt_name="SGD", metrics=None, **okw):
    opt = make(lib, opt_name, **okw)
    sched = build(opt, S if lib == "ember" else TS)
    out = [[g["lr"] for g in opt.param_groups]]
    for i in range(steps):
        opt.step()
        if metrics is not None:
            sched.step(metrics[i])
        else:
            sched.step()
        out.append([g["lr"] for g in opt.param_groups])
    return np.array(out), opt, sched


BUILDERS = {
    "StepLR": lambda o, m: m.StepLR(o, step_size=4, gamma=0.5),
    "MultiStepLR": lambda o, m: m.MultiStepLR(o, milestones=[3, 7, 7, 12], gamma=0.3),
    "ExponentialLR": lambda o, m: m.ExponentialLR(o, gamma=0.9),
    "CosineAnnealingLR": lambda o, m: m.CosineAnnealingLR(o, T_max=8, eta_min=0.001),
    "LambdaLR": lambda o, m: m.LambdaLR(o, lambda e: 1.0 / (1 + e)),
    "LambdaLR-list": lambda o, m: m.LambdaLR(o, [lambda e: 0.9 ** e, lambda e: 1 + e]),
    "LinearLR": lambda o, m: m.LinearLR(o, start_factor=0.25, total_iters=6),
    "ConstantLR": lambda o, m: m.ConstantLR(o, factor=0.5, total_iters=3),
    "PolynomialLR": lambda o, m: m.PolynomialLR(o, total_iters=10, power=2.0),
    "OneCycleLR": lambda o, m: m.OneCycleLR(o, max_lr=[0.5, 0.1], total_steps=25),
    "OneCycleLR-linear-3phase": lambda o, m: m.OneCycleLR(
        o, max_lr=0.3, epochs=5, steps_per_epoch=5, anneal_strategy="linear",
        three_phase=True),
    "SequentialLR": lambda o, m: m.SequentialLR(
        o, [m.LinearLR(o, start_factor=0.1, total_iters=4),
            m.ExponentialLR(o, gamma=0.8)], milestones=[5]),
    "SequentialLR-cos": lambda o, m: m.SequentialLR(
        o, [m.ConstantLR(o, factor=0.5, total_iters=2), m.StepLR(o, 3, 0.5),
            m.CosineAnnealingLR(o, T_max=5)], milestones=[4, 12]),
    "CosineAnnealingWarmRestarts": lambda o, m: m.CosineAnnealingWarmRestarts(o, T_0=4,
                                                                             T_mult=2),
    "ChainedScheduler": lambda o, m: m.ChainedScheduler(
        [m.ConstantLR(o, factor=0.5, total_iters=3), m.ExponentialLR(o, gamma=0.9)]),
}


@pytest.mark.parametrize("name", list(BUILDERS))
def test_lr_sequence_matches_torch(name):
    okw = {"momentum": 0.9} if name.startswith("OneCycle") else {}
    e, eo, es = sequence("ember", BUILDERS[name], **okw)
    t, to, ts = sequence("torch", BUILDERS[name], **okw)
    np.testing.assert_allclose(e, t, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(es.get_last_lr(), ts.get_last_lr(), rtol=1e-12)
    if name.startswith("OneCycle"):
        np.testing.assert_allclose([g["momentum"] for g in eo.param_groups],
                                   [g["momentum"] for g in to.param_groups], rtol=1e-12)


def test_onecycle_with_adam_betas():
    e, eo, _ = sequence("ember", BUILDERS["OneCycleLR"], opt_name="Adam")
    t, to, _ = sequence("torch", BUILDERS["OneCycleLR"], opt_name="Adam")
    np.testing.assert_allclose(e, t, rtol=1e-10)
    assert eo.param_groups[0]["betas"][0] == pytest.approx(to.param_groups[0]["betas"][0])


@pytest.mark.parametrize("kw", [dict(), dict(mode="max", factor=0.5, patience=2, cooldown=1),
                                dict(threshold_mode="abs", threshold=0.1, patience=1,
                                     min_lr=[0.01, 0.005])])
def test_reduce_on_plateau(kw):
    metrics = [1.0, 0.9, 0.9, 0.95, 0.91, 0.92, 0.93, 0.5, 0.5, 0.5, 0.5, 0.5, 0.6, 0.7,
               0.8, 0.4, 0.4, 0.4, 0.4, 0.4, 0.4, 0.4, 0.4, 0.4, 0.4]
    if kw.get("mode") == "max":
        metrics = [-m for m in metrics]
    build = lambda o, m: m.ReduceLROnPlateau(o, **kw)  # noqa: E731
    e, _, es = sequence("ember", build, metrics=metrics)
    t, _, ts = sequence("torch", build, metrics=metrics)
    np.testing.assert_allclose(e, t, rtol=1e-12)


def test_scheduler_state_dict_round_trip():
    opt = make("ember")
    s = S.StepLR(opt, step_size=2, gamma=0.5)
    for _ in range(3):
        s.step()
    sd = s.state_dict()
    assert "optimizer" not in sd and sd["last_epoch"] == 3
    opt2 = make("ember")
    for g in opt2.param_groups:
        g["initial_lr"] = g["lr"]
    s2 = S.StepLR(opt2, step_size=2, gamma=0.5)
    s2.load_state_dict(sd)
    assert s2.last_epoch == 3 and s2.get_last_lr() == s.get_last_lr()
