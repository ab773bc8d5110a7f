"""ember.nn.init (statistics and PyTorch's formulas) and ember.nn.utils."""
import math

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.nn import init
from ember.nn.utils import (
    clip_grad_norm_,
    clip_grad_value_,
    parameters_to_vector,
    vector_to_parameters,
)


def test_calculate_gain():
    assert init.calculate_gain("linear") == 1
    assert init.calculate_gain("conv2d") == 1
    assert init.calculate_gain("sigmoid") == 1
    assert init.calculate_gain("tanh") == pytest.approx(5 / 3)
    assert init.calculate_gain("relu") == pytest.approx(math.sqrt(2))
    assert init.calculate_gain("leaky_relu", 0.2) == pytest.approx(math.sqrt(2 / 1.04))
    assert init.calculate_gain("selu") == 0.75
    with pytest.raises(ValueError):
        init.calculate_gain("nope")


def _stats(t):
    a = t.detach().numpy()
    return a.mean(), a.std(), a.min(), a.max()


def test_uniform_normal_constant():
    w = ember.empty(200, 300)
    init.uniform_(w, -2, 3)
    m, s, lo, hi = _stats(w)
    assert -2 <= lo and hi <= 3 and abs(m - 0.5) < 0.05
    init.normal_(w, 1.0, 0.5)
    m, s, _, _ = _stats(w)
    assert abs(m - 1) < 0.01 and abs(s - 0.5) < 0.01
    init.constant_(w, 0.3)
    assert np.all(w.numpy() == np.float32(0.3))
    init.zeros_(w)
    assert not w.numpy().any()
    init.ones_(w)
    assert np.all(w.numpy() == 1)
    e = ember.empty(3, 4)
    init.eye_(e)
    np.testing.assert_array_equal(e.numpy(), np.eye(3, 4))
    d = ember.empty(4, 2, 3, 3)
    init.dirac_(d)
    assert d.numpy().sum() == 2 and d.numpy()[1, 1, 1, 1] == 1


@pytest.mark.parametrize("fn,std", [
    (lambda w: init.xavier_uniform_(w), math.sqrt(2 / (400 + 300))),
    (lambda w: init.xavier_normal_(w, gain=2.0), 2 * math.sqrt(2 / (400 + 300))),
    (lambda w: init.kaiming_uniform_(w, nonlinearity="relu"), math.sqrt(2 / 300)),
    (lambda w: init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu"),
     math.sqrt(2 / 400)),
    (lambda w: init.kaiming_uniform_(w, a=math.sqrt(5)), 1 / math.sqrt(3 * 300)),
])
def test_fan_based_std(fn, std):
    w = ember.empty(400, 300)
    with ember.no_grad():
        fn(w)
    _, s, _, _ = _stats(w)
    assert abs(s / std - 1) < 0.03


def test_trunc_normal_and_orthogonal():
    w = ember.empty(300, 300)
    init.trunc_normal_(w, mean=0.5, std=1.0, a=-1.0, b=2.0)
    m, s, lo, hi = _stats(w)
    assert lo >= -1.0 and hi <= 2.0
    # mean of N(0.5, 1) truncated to [-1, 2] is 0.5 (symmetric)
    assert abs(m - 0.5) < 0.02
    q = ember.empty(6, 10)
    init.orthogonal_(q, gain=2.0)
    a = q.numpy().astype(np.float64)
    np.testing.assert_allclose(a @ a.T, 4 * np.eye(6), atol=1e-4)
    torch = pytest.importorskip("torch")
    # same truncated distribution as torch (compare moments)
    t = torch.empty(300, 300)
    torch.nn.init.trunc_normal_(t, mean=0.5, std=1.0, a=-1.0, b=2.0)
    assert abs(float(t.std()) - s) < 0.02


def test_init_generator_reproducible():
    a, b = ember.empty(5, 5), ember.empty(5, 5)
    init.normal_(a, generator=ember.Generator().manual_seed(7))
    init.normal_(b, generator=ember.Generator().manual_seed(7))
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_manual_seed_makes_modules_reproducible():
    ember.manual_seed(11)
    w1 = nn.Linear(4, 3).weight.detach().numpy().copy()
    ember.manual_seed(11)
    w2 = nn.Linear(4, 3).weight.detach().numpy().copy()
    np.testing.assert_array_equal(w1, w2)


def _params_with_grads():
    ps = [nn.Parameter(ember.zeros(3)), nn.Parameter(ember.zeros(2, 2)),
          nn.Parameter(ember.zeros(1))]
    grads = [np.array([3.0, 0.0, -4.0]), np.array([[1.0, 2.0], [2.0, 4.0]]), None]
    for p, g in zip(ps, grads):
        if g is not None:
            p.grad = ember.tensor(g.astype(np.float32))
    return ps, grads


def test_clip_grad_norm():
    ps, grads = _params_with_grads()
    total = math.sqrt(9 + 16 + 1 + 4 + 4 + 16)
    n = clip_grad_norm_(ps, 1.0)
    assert float(n.item()) == pytest.approx(total, rel=1e-6)
    after = math.sqrt(sum(float((p.grad * p.grad).sum().item()) for p in ps[:2]))
    assert after == pytest.approx(1.0, rel=1e-4)
    ps, _ = _params_with_grads()
    n = clip_grad_norm_(ps, 100.0)
    np.testing.assert_array_equal(ps[0].grad.numpy(), [3, 0, -4])  # untouched
    ps, _ = _params_with_grads()
    n = clip_grad_norm_(ps, 2.0, norm_type=float("inf"))
    assert float(n.item()) == 4.0
    np.testing.assert_allclose(ps[1].grad.numpy(), np.array([[1, 2], [2, 4]]) / 2, rtol=1e-5)
    ps, _ = _params_with_grads()
    ps[0].grad = ember.tensor([float("nan"), 0.0, 0.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        clip_grad_norm_(ps, 1.0, error_if_nonfinite=True)
    torch = pytest.importorskip("torch")
    ps, grads = _params_with_grads()
    tps = [torch.nn.Parameter(torch.zeros(p.shape)) for p in ps]
    for t, g in zip(tps, grads):
        if g is not None:
            t.grad = torch.tensor(g, dtype=torch.float32)
    for norm_type in (1.0, 2.0, 3.0):
        ps2, _ = _params_with_grads()
        tps2 = [torch.nn.Parameter(torch.zeros(p.shape)) for p in ps]
        for t, g in zip(tps2, grads):
            if g is not None:
                t.grad = torch.tensor(g, dtype=torch.float32)
        en = clip_grad_norm_(ps2, 0.5, norm_type)
        tn = torch.nn.utils.clip_grad_norm_(tps2, 0.5, norm_type)
        assert float(en.item()) == pytest.approx(float(tn), rel=1e-5)
        for p, t in zip(ps2[:2], tps2[:2]):
            np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=1e-5)


def test_clip_grad_value():
    ps, _ = _params_with_grads()
    clip_grad_value_(ps, 2.5)
    np.testing.assert_array_equal(ps[0].grad.numpy(), [2.5, 0, -2.5])
    np.testing.assert_array_equal(ps[1].grad.numpy(), [[1, 2], [2, 2.5]])


def test_parameters_vector_round_trip():
    m = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1))
    v = parameters_to_vector(m.parameters())
    assert tuple(v.shape) == (3 * 2 + 2 + 2 + 1,)
    np.testing.assert_array_equal(v.detach().numpy()[:6], m[0].weight.detach().numpy().ravel())
    new = ember.tensor(np.arange(11, dtype=np.float32))
    vector_to_parameters(new, m.parameters())
    np.testing.assert_array_equal(m[1].bias.detach().numpy(), [10.0])
    np.testing.assert_array_equal(m[0].weight.detach().numpy(), [[0, 1, 2], [3, 4, 5]])
    assert isinstance(m[0].weight, nn.Parameter)
