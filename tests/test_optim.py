"""Optimizers: ten steps on a fixed problem match PyTorch's parameters to 1e-5; param
groups, zero_grad and state_dict round trips."""
import copy

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.optim as optim

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(3)
P0 = [RNG.uniform(-1, 1, size=s).astype(np.float32) for s in [(4, 3), (3,), (2, 2, 2)]]
TARGET = [RNG.uniform(-1, 1, size=p.shape).astype(np.float32) for p in P0]


def grad_of(values):
    """A fixed, parameter-dependent gradient: d/dp of sum((p - t)^2 + 0.1 * cos(3 p))."""
    return [(2 * (v - t) - 0.3 * np.sin(3 * v)).astype(np.float32)
            for v, t in zip(values, TARGET)]


def run(lib, name, kwargs, steps=10, groups=None):
    if lib == "ember":
        params = [ember.nn.Parameter(ember.tensor(p.copy())) for p in P0]
        opt_cls = getattr(optim, name)
        make = ember.tensor
    else:
        params = [torch.nn.Parameter(torch.tensor(p.copy())) for p in P0]
        opt_cls = getattr(torch.optim, name)
        make = torch.tensor
    if groups:
        pg = [{"params": params[:2], **groups[0]}, {"params": params[2:], **groups[1]}]
        opt = opt_cls(pg, **kwargs)
    else:
        opt = opt_cls(params, **kwargs)
    for _ in range(steps):
        opt.zero_grad()
        vals = [p.detach().numpy().copy() for p in params]
        for p, g in zip(params, grad_of(vals)):
            p.grad = make(g)
        opt.step()
    return [p.detach().numpy().copy() for p in params], opt


CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1)),
    ("SGD", dict(lr=0.05, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.02, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    ("Adam", dict(lr=0.01, amsgrad=True)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.03, weight_decay=0.1, amsgrad=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.01)),
    ("RMSprop", dict(lr=0.005, alpha=0.9, centered=True)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.05,
                     initial_accumulator_value=0.1)),
]


@pytest.mark.parametrize("name,kwargs", CASES, ids=[f"{n}-{i}" for i, (n, _) in
                                                    enumerate(CASES)])
def test_ten_steps_match_torch(name, kwargs):
    e, _ = run("ember", name, kwargs)
    t, _ = run("torch", name, kwargs)
    for a, b in zip(e, t):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_param_groups_match_torch():
    groups = [{"lr": 0.05}, {"lr": 0.01, "momentum": 0.5}]
    e, eo = run("ember", "SGD", dict(lr=0.1, momentum=0.9), groups=groups)
    t, to = run("torch", "SGD", dict(lr=0.1, momentum=0.9), groups=groups)
    for a, b in zip(e, t):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    assert len(eo.param_groups) == 2
    assert eo.param_groups[1]["momentum"] == 0.5 and eo.param_groups[0]["momentum"] == 0.9


def test_zero_grad_set_to_none():
    p = nn.Parameter(ember.ones(3))
    opt = optim.SGD([p], lr=0.1)
    p.grad = ember.ones(3)
    opt.zero_grad(set_to_none=False)
    assert p.grad is not None and float(p.grad.abs().sum().item()) == 0
    opt.zero_grad()
    assert p.grad is None
    opt.step()  # no grad: no update, no error
    np.testing.assert_array_equal(p.detach().numpy(), [1, 1, 1])


def test_state_dict_round_trip_continues_identically():
    e1, opt1 = run("ember", "Adam", dict(lr=0.01), steps=5)
    sd = copy.deepcopy(opt1.state_dict())
    assert set(sd) == {"state", "param_groups"}
    assert sorted(sd["state"]) == [0, 1, 2]
    assert sorted(sd["state"][0]) == ["exp_avg", "exp_avg_sq", "step"]
    assert sd["param_groups"][0]["params"] == [0, 1, 2]
    # a fresh optimizer over copies of the parameters, loaded from the state dict,
    # continues exactly like the original
    params2 = [nn.Parameter(ember.tensor(v)) for v in e1]
    opt2 = optim.Adam(params2, lr=0.5)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == 0.01
    params1 = opt1.param_groups[0]["params"]
    for opt, params in ((opt1, params1), (opt2, params2)):
        for _ in range(3):
            vals = [p.detach().numpy().copy() for p in params]
            for p, g in zip(params, grad_of(vals)):
                p.grad = ember.tensor(g)
            opt.step()
    for a, b in zip(params1, params2):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    # the same 8 steps in torch
    t, _ = run("torch", "Adam", dict(lr=0.01), steps=8)
    for a, b in zip(params2, t):
        np.testing.assert_allclose(a.detach().numpy(), b, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError):
        optim.Adam([nn.Parameter(ember.ones(1))]).load_state_dict(
            {"state": {}, "param_groups": sd["param_groups"] * 2})


def test_add_param_group_and_errors():
    a, b = nn.Parameter(ember.ones(2)), nn.Parameter(ember.ones(2))
    opt = optim.Adam([a], lr=0.1)
    opt.add_param_group({"params": b, "lr": 0.01})
    assert opt.param_groups[1]["betas"] == (0.9, 0.999)
    with pytest.raises(ValueError):
        opt.add_param_group({"params": [a]})
    with pytest.raises(ValueError):
        optim.SGD([], lr=0.1)
    with pytest.raises(ValueError):
        optim.Adam([a], lr=-1)
    with pytest.raises(TypeError):
        optim.SGD(a, lr=0.1)
    assert "Parameter Group 0" in repr(opt) and "lr: 0.1" in repr(opt)


def test_closure_and_training_a_model():
    ember_model = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
    torch_model = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Tanh(),
                                      torch.nn.Linear(8, 1))
    ember_model.load_state_dict({k: ember.tensor(v.detach().numpy().copy())
                                 for k, v in torch_model.state_dict().items()})
    x = RNG.uniform(-1, 1, size=(16, 3)).astype(np.float32)
    y = RNG.uniform(-1, 1, size=(16, 1)).astype(np.float32)
    eo = optim.Adam(ember_model.parameters(), lr=0.01)
    to = torch.optim.Adam(torch_model.parameters(), lr=0.01)
    ex, ey, tx, ty = ember.tensor(x), ember.tensor(y), torch.tensor(x), torch.tensor(y)
    for _ in range(10):
        def ec():
            eo.zero_grad()
            loss = nn.functional.mse_loss(ember_model(ex), ey)
            loss.backward()
            return loss

        def tc():
            to.zero_grad()
            loss = torch.nn.functional.mse_loss(torch_model(tx), ty)
            loss.backward()
            return loss

        el, tl = eo.step(ec), to.step(tc)
        assert abs(float(el.item()) - float(tl.item())) < 1e-5
    for (n, a), (_, b) in zip(ember_model.named_parameters(), torch_model.named_parameters()):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5,
                                   atol=1e-5, err_msg=n)
