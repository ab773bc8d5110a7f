"""The multi-tensor kernels behind foreach/fused (SGD, Adam, AdamW) and clip_grad_norm_:
bit-identical to the per-tensor path, on 1 and 2 threads, and falling back cleanly."""
import math

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.optim as optim
from ember._C import foreach as _fe

SHAPES = [(40000,), (3, 7), (129, 130), (1,), (0,)]


def params_and_grads(dtype, seed=0, steps=4):
    rng = np.random.default_rng(seed)
    p0 = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    gs = [[rng.standard_normal(s).astype(dtype) for s in SHAPES] for _ in range(steps)]
    return p0, gs


def run(name, kwargs, dtype=np.float32, steps=4, threads=None):
    p0, gs = params_and_grads(dtype, steps=steps)
    params = [nn.Parameter(ember.tensor(v)) for v in p0]
    opt = getattr(optim, name)(params, **kwargs)
    old = ember.get_num_threads()
    if threads:
        ember.set_num_threads(threads)
    try:
        for k in range(steps):
            for p, g in zip(params, gs[k]):
                p.grad = ember.tensor(g)
            opt.step()
    finally:
        ember.set_num_threads(old)
    state = [{k: (v.numpy().copy() if isinstance(v, ember.Tensor) else v)
              for k, v in opt.state[p].items()} for p in params]
    return [p.detach().numpy().copy() for p in params], state


CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01, maximize=True)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.02, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1, maximize=True)),
    ("Adam", dict(lr=0.01, amsgrad=True, betas=(0.3, 0.4))),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.03, weight_decay=0.1, amsgrad=True, betas=(0.6, 0.7))),
    ("Adam", dict(lr=0.01, decoupled_weight_decay=True, weight_decay=0.2)),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,kwargs", CASES, ids=[f"{n}-{i}" for i, (n, _) in
                                                    enumerate(CASES)])
def test_multi_tensor_path_is_bit_identical(name, kwargs, dtype):
    ref, ref_state = run(name, dict(kwargs, foreach=False), dtype)
    for flags in (dict(), dict(foreach=True), dict(fused=True)):
        got, state = run(name, dict(kwargs, **flags), dtype, threads=2)
        for a, b in zip(got, ref):
            np.testing.assert_array_equal(a, b)
        for s, r in zip(state, ref_state):
            assert s.keys() == r.keys()
            for k in s:
                np.testing.assert_array_equal(s[k], r[k])
    one, _ = run(name, kwargs, dtype, threads=1)
    for a, b in zip(one, ref):
        np.testing.assert_array_equal(a, b)


def test_kernel_really_runs_and_bumps_versions():
    p = nn.Parameter(ember.ones(5))
    p.grad = ember.ones(5)
    buf = ember.zeros(5)
    v = p._version
    assert _fe.sgd_([p], [p.grad], [buf], [True], 0.5, 0.0, 0.9, 0.0, False, False)
    np.testing.assert_array_equal(p.detach().numpy(), [0.5] * 5)
    np.testing.assert_array_equal(buf.numpy(), [1.0] * 5)
    assert p._version > v
    # tensors that don't fit the kernel: nothing happens, the caller falls back
    assert not _fe.sgd_([p], [p.grad.to(ember.float64)], [], [], 0.5, 0, 0, 0, False, False)
    assert not _fe.scale_([ember.ones(4, 4).t()], 2.0)
    assert not _fe.scale_([ember.ones(3, dtype=ember.int64)], 2.0)
    # the same buffer in two roles (the kernels assume distinct buffers)
    assert not _fe.sgd_([p], [p], [], [], 0.5, 0, 0, 0, False, False)
    np.testing.assert_array_equal(p.detach().numpy(), [0.5] * 5)


def test_fallback_for_non_contiguous_and_mixed_dtypes():
    base = ember.randn(6, 4)
    w = nn.Parameter(base.t())  # non-contiguous parameter
    d = nn.Parameter(ember.randn(3, dtype=ember.float64))
    ref_w, ref_d = w.detach().clone(), d.detach().clone()
    g_w, g_d = ember.randn(4, 6), ember.randn(3, dtype=ember.float64)
    for opt_w, opt_d, foreach in ((w, d, None), (ref_w, ref_d, False)):
        if foreach is False:
            opt_w, opt_d = nn.Parameter(ref_w), nn.Parameter(ref_d)
            ref_w, ref_d = opt_w, opt_d
        opt = optim.AdamW([opt_w, opt_d], lr=0.1, foreach=foreach)
        for _ in range(3):
            opt_w.grad, opt_d.grad = g_w, g_d
            opt.step()
    np.testing.assert_array_equal(w.detach().numpy(), ref_w.detach().numpy())
    np.testing.assert_array_equal(d.detach().numpy(), ref_d.detach().numpy())


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, math.inf])
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_clip_grad_norm_fused_is_bit_identical(norm_type, dtype):
    ember.manual_seed(0)
    shapes = [(300, 200), (7,), (50, 3, 2), (1,)]
    res = []
    for foreach in (False, None):
        ps = [nn.Parameter(ember.zeros(*s, dtype=dtype)) for s in shapes]
        g = ember.Generator().manual_seed(1)
        for p in ps:
            p.grad = ember.randn(*p.shape, dtype=dtype, generator=g) * 3
        total = nn.utils.clip_grad_norm_(ps, 1.0, norm_type=norm_type, foreach=foreach)
        res.append((total.item(), [p.grad.numpy().copy() for p in ps]))
    assert res[0][0] == res[1][0]
    for a, b in zip(res[0][1], res[1][1]):
        np.testing.assert_array_equal(a, b)
    allg = np.concatenate([x.ravel() for x in res[0][1]])
    if norm_type != math.inf:  # the clipped gradients have norm max_norm
        assert abs(np.linalg.norm(allg.astype(np.float64), norm_type) - 1.0) < 1e-4


def test_clip_grad_norm_fused_non_finite():
    ps = [nn.Parameter(ember.zeros(3)) for _ in range(2)]
    ps[0].grad = ember.tensor([1.0, float("nan"), 2.0])
    ps[1].grad = ember.tensor([1.0, 2.0, 3.0])
    t = nn.utils.clip_grad_norm_(ps, 1.0)
    assert math.isnan(t.item())
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.clip_grad_norm_(ps, 1.0, error_if_nonfinite=True)
    for foreach in (None, False):
        ps[0].grad = ember.tensor([1.0, float("inf"), 2.0])
        ps[1].grad = ember.tensor([1.0, 2.0, 3.0])
        total = nn.utils.clip_grad_norm_(ps, 1.0, norm_type=math.inf, foreach=foreach)
        assert total.item() == math.inf
        np.testing.assert_array_equal(ps[1].grad.numpy(), [0.0, 0.0, 0.0])


@pytest.mark.parametrize("name,entry,flags", [("SGD", "sgd_", dict(momentum=0.9)),
                                              ("Adam", "adam_", {}),
                                              ("AdamW", "adam_", dict(fused=True))])
def test_default_step_takes_the_kernel(monkeypatch, name, entry, flags):
    calls = []
    real = getattr(_fe, entry)

    def spy(*args):
        calls.append(len(args[0]))
        return real(*args)

    monkeypatch.setattr(_fe, entry, spy)
    ps = [nn.Parameter(ember.ones(4)), nn.Parameter(ember.ones(2, 3))]
    opt = getattr(optim, name)(ps, lr=0.1, **flags)
    for p in ps:
        p.grad = ember.ones(*p.shape)
    opt.step()
    assert calls == [2]  # one call for the whole group
    getattr(optim, name)(ps, lr=0.1, foreach=False).step()
    assert calls == [2]
