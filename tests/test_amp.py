"""ember.autocast / ember.amp: output dtypes of each op under CPU autocast match torch's,
state functions, nesting, the cast cache, autograd through casts, and GradScaler."""
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _ops(L):
    F = L.nn.functional
    t = L.tensor([0, 1, 2, 3])

    def low(a):
        return a.to(L.get_autocast_dtype("cpu"))
    return {
        "mm": lambda a: a @ a, "matmul": lambda a: L.matmul(a, a),
        "bmm": lambda a: L.bmm(a[None], a[None]),
        "baddbmm": lambda a: L.baddbmm(a[None], a[None], a[None]),
        "addmm": lambda a: L.addmm(a, a, a), "linear": lambda a: F.linear(a, a, a[0]),
        "linear64": lambda a: F.linear(a.double(), a.double()),
        "conv1d": lambda a: F.conv1d(a[None], a[:, :, None]),
        "conv2d": lambda a: F.conv2d(a[None, None], a[None, None]),
        "prelu": lambda a: F.prelu(a, L.tensor([0.1])),
        "sdpa": lambda a: F.scaled_dot_product_attention(a[None], a[None], a[None]),
        "softmax": lambda a: F.softmax(a, -1), "log_softmax": lambda a: F.log_softmax(a, -1),
        "layer_norm": lambda a: F.layer_norm(a, (4,)), "exp": L.exp, "relu": F.relu,
        "linalg_inv": lambda a: L.linalg.inv(a + 4 * L.eye(4, dtype=a.dtype)),
        "sum": L.sum, "prod": L.prod, "trace": L.trace, "cdist": lambda a: L.cdist(a, a),
        "mse": lambda a: F.mse_loss(a, a), "l1": lambda a: F.l1_loss(a, a),
        "smooth_l1": lambda a: F.smooth_l1_loss(a, a), "ce": lambda a: F.cross_entropy(a, t),
        "nll": lambda a: F.nll_loss(a, t),
        "bce_logits": lambda a: F.binary_cross_entropy_with_logits(a, a.sigmoid()),
        "cat64": lambda a: L.cat([a, a.double()]), "cat": lambda a: L.cat([low(a), a]),
        "stack": lambda a: L.stack([a, low(a)]),
        "index_copy": lambda a: a.index_copy(0, L.tensor([0]), low(a[:1])),
        "add_mixed": lambda a: a + low(a), "addcmul": lambda a: L.addcmul(a, low(a), a),
    }


def _name(dt):
    return str(dt).split(".")[-1]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("op", sorted(_ops(ember)))
def test_output_dtypes_match_torch(op, dtype):
    x = np.random.RandomState(0).randn(4, 4).astype("f4")
    got, want = [], []
    for L, acc in ((ember, got), (torch, want)):
        f = _ops(L)[op]
        a = L.tensor(x)
        with L.autocast("cpu", dtype=getattr(L, dtype)):
            for inp in (a, a.to(getattr(L, dtype))):
                acc.append(_name(f(inp).dtype))
    assert got == want


def test_lower_precision_values_and_autograd():
    rs = np.random.RandomState(1)
    a, w = rs.randn(8, 16).astype("f4"), rs.randn(4, 16).astype("f4")
    res = []
    for L in (ember, torch):
        x, W = L.tensor(a, requires_grad=True), L.tensor(w, requires_grad=True)
        with L.autocast("cpu"):
            y = L.nn.functional.linear(x, W)
            loss = L.nn.functional.mse_loss(y, L.zeros(8, 4))
        loss.backward()
        res.append((y.float(), x.grad, W.grad, _name(x.grad.dtype), _name(loss.dtype)))
    for e, t in zip(res[0][:3], res[1][:3]):
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=2e-2, atol=2e-2)
    assert res[0][3:] == res[1][3:] == ("float32", "float32")


def test_state_nesting_and_disable():
    assert not ember.is_autocast_enabled("cpu")
    assert ember.get_autocast_dtype("cpu") == ember.bfloat16
    a = ember.ones(2, 2)
    with ember.autocast(device_type="cpu", dtype=ember.float16):
        assert ember.is_autocast_enabled("cpu")
        assert ember.get_autocast_dtype("cpu") == ember.float16
        assert (a @ a).dtype == ember.float16
        with ember.autocast("cpu", enabled=False):
            assert not ember.is_autocast_enabled("cpu")
            assert (a @ a).dtype == ember.float32
        with ember.amp.autocast("cpu"):        # the default dtype is the current one
            assert (a @ a).dtype == ember.float16
        assert (a @ a).dtype == ember.float16
    assert not ember.is_autocast_enabled("cpu")
    assert ember.get_autocast_dtype("cpu") == ember.bfloat16
    assert (a @ a).dtype == ember.float32

    @ember.autocast("cpu")
    def f(x):
        return x @ x
    assert f(a).dtype == ember.bfloat16 and (a @ a).dtype == ember.float32


def test_set_autocast_enabled_and_errors():
    a = ember.ones(2, 2)
    ember.set_autocast_enabled("cpu", True)
    try:
        assert ember.is_autocast_enabled("cpu") and (a @ a).dtype == ember.bfloat16
    finally:
        ember.set_autocast_enabled("cpu", False)
    assert (a @ a).dtype == ember.float32
    with pytest.raises(RuntimeError, match="unsupported autocast device_type"):
        ember.autocast("tpu")
    with pytest.warns(UserWarning, match="not supported"):
        ctx = ember.autocast("cpu", dtype=ember.float64)
    with ctx:
        assert (a @ a).dtype == ember.float32
    with pytest.warns(FutureWarning, match="deprecated"):
        ctx = ember.cpu.amp.autocast()
    with ctx:
        assert (a @ a).dtype == ember.bfloat16
    assert ember.amp.is_autocast_available("cpu")


def test_cast_cache_reuses_parameter_casts():
    w = ember.nn.Parameter(ember.ones(3, 3))
    x = ember.ones(2, 3)
    seen = []
    with ember.autocast("cpu"):
        ember.nn.functional.linear(x, w)
        seen.append(ember._autocast._cache.get(id(w)))
        ember.nn.functional.linear(x, w)
        seen.append(ember._autocast._cache.get(id(w)))
    assert seen[0] is not None and seen[0][2] is seen[1][2]
    assert seen[0][2].dtype == ember.bfloat16
    assert id(w) not in ember._autocast._cache       # cleared on leaving the region
    with ember.autocast("cpu", cache_enabled=False):
        ember.nn.functional.linear(x, w)
        assert id(w) not in ember._autocast._cache


def _train(L, scaler_kw, grads_bad):
    w = L.nn.Parameter(L.tensor([1.0, -2.0, 3.0]))
    opt = L.optim.SGD([w], lr=0.1)
    scaler = L.amp.GradScaler("cpu", **scaler_kw)
    log = []
    for bad in grads_bad:
        opt.zero_grad()
        loss = (w * w).sum() * (float("inf") if bad else 1.0)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        log.append((scaler.get_scale(), w.detach().clone().numpy().tolist()))
    return log, scaler.state_dict()


def test_grad_scaler_matches_torch():
    kw = dict(init_scale=8.0, growth_factor=4.0, backoff_factor=0.25, growth_interval=2)
    pattern = [False, False, False, True, False, False, True, True, False]
    got, want = _train(ember, kw, pattern), _train(torch, kw, pattern)
    assert got[0] == want[0]
    assert got[1] == want[1]


def test_grad_scaler_unscale_and_errors():
    w = ember.nn.Parameter(ember.tensor([2.0]))
    opt = ember.optim.SGD([w], lr=1.0)
    scaler = ember.amp.GradScaler("cpu", init_scale=4.0)
    scaler.scale((w * 3).sum()).backward()
    assert w.grad.item() == 12.0
    scaler.unscale_(opt)
    assert w.grad.item() == 3.0
    with pytest.raises(RuntimeError, match="already been called"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match="after step"):
        scaler.unscale_(opt)
    scaler.update()
    assert w.item() == -1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        off = ember.amp.GradScaler("cuda")
    assert not off.is_enabled() and off.state_dict() == {} and off.get_scale() == 1.0
    fresh = ember.amp.GradScaler("cpu")
    fresh.load_state_dict(scaler.state_dict())
    assert fresh.state_dict() == scaler.state_dict()
    with pytest.raises(RuntimeError, match="empty"):
        fresh.load_state_dict({})


def test_per_device_state_functions_match_torch():
    """torch's deprecated per-device spellings read and set the same state as the ones
    that take ``device_type``, warn, and count nesting the same way."""
    seen = []
    for L in (ember, torch):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            prev = (L.get_autocast_dtype("cpu"), L.get_autocast_dtype("cuda"))
            try:
                r = [str(L.get_autocast_cpu_dtype()), str(L.get_autocast_gpu_dtype()),
                     L.is_autocast_cpu_enabled()]
                L.set_autocast_cpu_dtype(L.float16)
                L.set_autocast_gpu_dtype(L.bfloat16)
                r += [str(L.get_autocast_dtype("cpu")), str(L.get_autocast_dtype("cuda"))]
                L.set_autocast_cpu_enabled(True)
                r += [L.is_autocast_enabled("cpu"), L.is_autocast_cpu_enabled()]
                r.append(L.mm(L.ones(2, 2), L.ones(2, 2)).dtype == L.float16)
                L.set_autocast_cpu_enabled(False)
                r += [L.is_autocast_enabled("cpu"),
                      L.mm(L.ones(2, 2), L.ones(2, 2)).dtype == L.float32]
                r += [L.autocast_increment_nesting(), L.autocast_increment_nesting(),
                      L.autocast_decrement_nesting(), L.autocast_decrement_nesting()]
                with L.autocast("cpu"):
                    r.append(L.autocast_increment_nesting())
                    r.append(L.autocast_decrement_nesting())
            finally:
                L.set_autocast_dtype("cpu", prev[0])
                L.set_autocast_dtype("cuda", prev[1])
        deprecations = [str(x.message) for x in w if issubclass(x.category, DeprecationWarning)]
        assert any("get_autocast_cpu_dtype() is deprecated" in m and
                   "get_autocast_dtype('cpu')" in m for m in deprecations)
        assert len(deprecations) == 8
        seen.append([x.replace("torch.", "").replace("ember.", "") if isinstance(x, str) else x
                     for x in r])
    assert seen[0] == seen[1]
