"""CUDA scans, stream compaction, optimizer steps, device-to-device copies and
autocast against the CPU.  Marked ``cuda`` (skipped without a device);
tests/test_cuda_dispatch_cpu.py runs the same functions over the stand-in."""

import numpy as np
import pytest

import ember

from .test_device_tensors import _np, close, data

pytestmark = pytest.mark.cuda

DEV = "cuda"


# --- scans -------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["cumsum", "cumprod", "logcumsumexp"])
@pytest.mark.parametrize("shape,dim", [((7,), 0), ((3, 5), 1), ((3, 5), 0), ((2, 3, 4), 1),
                                       ((2, 3000), 1), ((2, 3000), -1), ((), 0), ((0, 4), 1)])
def test_scans_match_cpu(name, shape, dim):
    lo, hi = (0.5, 1.5) if name == "cumprod" else (-2.0, 2.0)
    x = data(*shape, lo=lo, hi=hi, seed=len(shape)) if shape else ember.tensor(1.25)
    got = getattr(ember, name)(x.to(DEV), dim)
    close(got, getattr(ember, name)(x, dim), rtol=1e-5, atol=1e-5)
    # fixed blocking: the same bits every time
    np.testing.assert_array_equal(_np(got), _np(getattr(ember, name)(x.to(DEV), dim)))


def test_long_row_scans_cross_tiles_exactly_for_integers():
    x = ember.randint(-50, 50, (3, 5000), generator=ember.Generator().manual_seed(1))
    close(ember.cumsum(x.to(DEV), 1), ember.cumsum(x, 1))
    close(ember.cumsum(x.to(DEV).bool(), 1), ember.cumsum(x.bool(), 1))
    close(x.to(DEV).cumsum(0), x.cumsum(0))
    close(ember.cumprod(x.to(DEV)[:, :10], 1), ember.cumprod(x[:, :10], 1))
    # a float32 row of ones sums exactly through 5000 elements and several tiles
    close(ember.ones(5000, device=DEV).cumsum(0), ember.arange(1.0, 5001.0))


def test_scan_dtypes_strided_out_and_in_place():
    x = data(4, 6, seed=3)
    xd = x.to(DEV)
    close(ember.cumsum(xd.t(), 1), ember.cumsum(x.t(), 1))
    close(ember.cumsum(xd, 1, dtype=ember.float64), ember.cumsum(x, 1, dtype=ember.float64))
    h = x.half()
    close(ember.cumsum(h.to(DEV), 1), ember.cumsum(h, 1), rtol=1e-3, atol=1e-3)
    close(ember.cumsum(x.int().to(DEV), 0), ember.cumsum(x.int(), 0))
    y = xd.clone()
    y.cumsum_(1)
    close(y, ember.cumsum(x, 1))
    o = ember.empty(4, 6, device=DEV)
    ember.cumprod(xd, 0, out=o)
    close(o, ember.cumprod(x, 0))
    with pytest.raises(IndexError):
        ember.cumsum(xd, 2)
    with pytest.raises(RuntimeError, match="logcumsumexp"):
        ember.logcumsumexp(x.long().to(DEV), 0)


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "logcumsumexp"])
def test_scan_backward_matches_cpu(name):
    x = data(3, 5, lo=0.5, hi=1.5, seed=4)
    x[1, 2] = 0.0 if name == "cumprod" else x[1, 2]
    g = data(3, 5, seed=5)
    a = x.clone().requires_grad_()
    b = x.to(DEV).requires_grad_()
    getattr(ember, name)(a, 1).backward(g)
    getattr(ember, name)(b, 1).backward(g.to(DEV))
    close(b.grad, a.grad, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_cummax_cummin_match_cpu_with_ties_nans_and_grad(name):
    x = ember.tensor([[1.0, 3.0, 3.0, float("nan"), 2.0, float("nan"), 5.0],
                      [4.0, 1.0, 1.0, 0.5, 4.0, -1.0, -1.0]])
    for dim in (0, 1, -1):
        got, ref = getattr(ember, name)(x.to(DEV), dim), getattr(ember, name)(x, dim)
        close(got.values, ref.values)
        close(got.indices, ref.indices)
    for t in (data(3, 2000, seed=21), ember.randint(-5, 5, (4, 6)), ember.tensor(2.5),
              data(2, 3, 4, seed=22).to(ember.float16)):
        for dim in range(max(t.dim(), 1)):
            got, ref = getattr(ember, name)(t.to(DEV), dim), getattr(ember, name)(t, dim)
            close(got.values, ref.values)
            close(got.indices, ref.indices)
    a = data(3, 5, seed=23).requires_grad_()
    b = a.detach().to(DEV).requires_grad_()
    g = data(3, 5, seed=24)
    getattr(ember, name)(a, 1).values.backward(g)
    getattr(ember, name)(b, 1).values.backward(g.to(DEV))
    close(b.grad, a.grad)


# --- stream compaction --------------------------------------------------------------------

def test_nonzero_argwhere_and_as_tuple():
    x = data(3, 4, 5, seed=6)
    x = ember.where(x > 0.5, x, 0.0)
    xd = x.to(DEV)
    close(ember.nonzero(xd), ember.nonzero(x))
    close(ember.argwhere(xd), ember.argwhere(x))
    close(xd.bool().nonzero(), x.bool().nonzero())
    close(ember.nonzero(x.long().to(DEV)), ember.nonzero(x.long()))
    for got, ref in zip(ember.nonzero(xd, as_tuple=True), ember.nonzero(x, as_tuple=True)):
        close(got, ref)
    assert ember.nonzero(ember.zeros(4, device=DEV)).shape == (0, 1)
    assert ember.nonzero(ember.zeros(0, 3, device=DEV)).shape == (0, 2)
    close(ember.nonzero(ember.tensor(2.0, device=DEV)), ember.nonzero(ember.tensor(2.0)))
    big = ember.arange(5000, device=DEV) % 7 == 0       # several scan tiles
    close(big.nonzero(), (ember.arange(5000) % 7 == 0).nonzero())


def test_masked_select_broadcast_dtypes_and_grad():
    x = data(4, 5, seed=7)
    m = x > 0
    close(ember.masked_select(x.to(DEV), m.to(DEV)), ember.masked_select(x, m))
    row = m[0]
    close(x.to(DEV).masked_select(row.to(DEV)), x.masked_select(row))
    for dt in (ember.int8, ember.float16, ember.int64, ember.float64, ember.bool):
        close(ember.masked_select(x.to(dt).to(DEV), m.to(DEV)), ember.masked_select(x.to(dt), m))
    a = x.clone().requires_grad_()
    b = x.to(DEV).requires_grad_()
    g = data(int(m.sum()), seed=8)
    ember.masked_select(a, m).backward(g)
    ember.masked_select(b, m.to(DEV)).backward(g.to(DEV))
    close(b.grad, a.grad)
    with pytest.raises(RuntimeError, match="BoolTensor"):
        ember.masked_select(x.to(DEV), m.long().to(DEV))


def test_masked_scatter_and_its_grad():
    x = data(3, 4, seed=9)
    m = x > 0
    src = data(12, seed=10)
    close(x.to(DEV).masked_scatter(m.to(DEV), src.to(DEV)), x.masked_scatter(m, src))
    y = x.to(DEV)
    y.masked_scatter_(m.to(DEV), src.to(DEV))
    close(y, x.masked_scatter(m, src))
    a, s1 = x.clone().requires_grad_(), src.clone().requires_grad_()
    b, s2 = x.to(DEV).requires_grad_(), src.to(DEV).requires_grad_()
    g = data(3, 4, seed=11)
    a.masked_scatter(m, s1).backward(g)
    b.masked_scatter(m.to(DEV), s2).backward(g.to(DEV))
    close(b.grad, a.grad)
    close(s2.grad, s1.grad)
    with pytest.raises(RuntimeError, match="source"):
        x.to(DEV).masked_scatter(m.to(DEV), src[:2].to(DEV))


# --- optimizers and gradient clipping ------------------------------------------------------

_SHAPES = ((40, 300), (7,), (3, 3))       # the first spans several of the kernels' chunks


def _run_optimizer(make, device, steps=3, dtype=ember.float32):
    ps = [data(*s, seed=i).to(dtype).to(device).requires_grad_() for i, s in enumerate(_SHAPES)]
    opt = make(ps)
    for k in range(steps):
        for i, p in enumerate(ps):
            p.grad = data(*p.shape, seed=100 + 10 * k + i).to(dtype).to(device)
        opt.step()
    return [_np(p) for p in ps], opt


@pytest.mark.parametrize("make", [
    lambda ps: ember.optim.SGD(ps, lr=0.1),
    lambda ps: ember.optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=0.01),
    lambda ps: ember.optim.SGD(ps, lr=0.05, momentum=0.8, nesterov=True, maximize=True),
    lambda ps: ember.optim.SGD(ps, lr=0.05, momentum=0.5, dampening=0.3),
    lambda ps: ember.optim.Adam(ps, lr=0.01),
    lambda ps: ember.optim.Adam(ps, lr=0.01, weight_decay=0.1, amsgrad=True),
    lambda ps: ember.optim.AdamW(ps, lr=0.01, betas=(0.8, 0.9), maximize=True),
    lambda ps: ember.optim.AdamW(ps, lr=0.02, amsgrad=True, fused=True),
], ids=["sgd", "sgd-momentum-wd", "sgd-nesterov-max", "sgd-dampening", "adam",
        "adam-l2-amsgrad", "adamw-max", "adamw-amsgrad-fused"])
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_multi_tensor_steps_match_the_cpu_bit_for_bit(make, dtype):
    got, opt = _run_optimizer(make, DEV, dtype=dtype)
    ref, ref_opt = _run_optimizer(make, "cpu", dtype=dtype)
    for g, r in zip(got, ref):
        np.testing.assert_array_equal(g, r)
    for p, q in zip(opt.param_groups[0]["params"], ref_opt.param_groups[0]["params"]):
        st, rst = opt.state[p], ref_opt.state[q]
        assert sorted(st) == sorted(rst)
        for k, v in st.items():
            if isinstance(v, ember.Tensor):
                assert v.device.type == "cuda"
                np.testing.assert_array_equal(_np(v), _np(rst[k]))
            else:
                assert v == rst[k]


def test_steps_that_do_not_fit_the_kernel_run_per_tensor_on_the_device():
    def make(ps):
        return ember.optim.Adam([{"params": ps[:1]}, {"params": ps[1:], "lr": 0.1}], lr=0.01)
    got, _ = _run_optimizer(make, DEV, dtype=ember.float16)
    ref, _ = _run_optimizer(make, "cpu", dtype=ember.float16)
    for g, r in zip(got, ref):
        np.testing.assert_allclose(g.astype(np.float64), r.astype(np.float64), atol=2e-3)
    got, _ = _run_optimizer(lambda ps: ember.optim.SGD(ps, lr=0.1, foreach=False), DEV)
    ref, _ = _run_optimizer(lambda ps: ember.optim.SGD(ps, lr=0.1, foreach=False), "cpu")
    for g, r in zip(got, ref):
        np.testing.assert_array_equal(g, r)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf"), 3.0])
@pytest.mark.parametrize("max_norm", [0.5, 1e6])
def test_clip_grad_norm_on_device_grads(norm_type, max_norm):
    def grads(device):
        ps = [ember.zeros(s, device=device, requires_grad=True) for s in _SHAPES]
        for i, p in enumerate(ps):
            p.grad = data(*p.shape, seed=50 + i).to(device)
        return ps
    pd, pc = grads(DEV), grads("cpu")
    nd = ember.nn.utils.clip_grad_norm_(pd, max_norm, norm_type)
    nc = ember.nn.utils.clip_grad_norm_(pc, max_norm, norm_type)
    close(nd, nc, rtol=1e-5)
    for a, b in zip(pd, pc):
        close(a.grad, b.grad, rtol=1e-5)
    if max_norm > 1e3:     # no clipping: the gradients keep their bits
        for a, b in zip(pd, pc):
            np.testing.assert_array_equal(_np(a.grad), _np(b.grad))
    total = ember.nn.utils.get_total_norm([p.grad for p in pd], norm_type)
    assert total.device.type == "cuda"
    nan = [ember.tensor([1.0, float("nan")], device=DEV)]
    assert np.isnan(float(ember.nn.utils.get_total_norm(nan, norm_type)))
    with pytest.raises(RuntimeError, match="non-finite"):
        ember.nn.utils.get_total_norm(nan, norm_type, error_if_nonfinite=True)


# --- copies between devices -----------------------------------------------------------------

def cross_device_ops(a0):
    """Moves and copies of ``a0`` (on cuda:0) to cuda:1 and back, using device work only;
    returns {name: (result, the CPU function of a0's values that it must equal)}."""
    out = {}
    out["to"] = (a0.to("cuda:1"), lambda a: a)
    out["to_t"] = (a0.t().to("cuda:1"), lambda a: a.t())
    out["to_f64"] = (a0.to("cuda:1", ember.float64), lambda a: a.double())
    d = ember.empty(4, 3, device="cuda:1")
    d.copy_(a0.t())
    out["copy_t"] = (d, lambda a: a.t().contiguous())
    s = ember.zeros(3, 8, device="cuda:1")
    s[:, ::2].copy_(a0)
    out["copy_strided"] = (s, lambda a: ember.zeros(3, 8).index_copy(1, ember.arange(0, 8, 2), a))
    out["copy_broadcast"] = (ember.zeros(2, 3, 4, device="cuda:1").copy_(a0[0]),
                             lambda a: a[0].expand(2, 3, 4).contiguous())
    out["copy_cast"] = (ember.zeros(3, 4, dtype=ember.float16, device="cuda:1").copy_(a0),
                        lambda a: a.half())
    out["clone"] = (out["to"][0].clone(), lambda a: a)
    out["back"] = (out["to"][0].to("cuda:0"), lambda a: a)
    x = a0.clone().requires_grad_()
    (x.to("cuda:1") * 3).sum().backward()
    out["grad"] = (x.grad, lambda a: ember.full_like(a, 3.0))
    return out


def check_cross_device(out, a):
    for name, (got, ref) in out.items():
        want = ref(a)
        assert got.device.type == "cuda", name
        np.testing.assert_array_equal(_np(got), _np(want), err_msg=name)
    assert out["to"][0].device.index == 1 and out["grad"][0].device.index == 0
    assert out["back"][0].device.index == 0


def test_copies_between_devices():
    if ember.cuda.device_count() < 2:
        pytest.skip("needs two CUDA devices")
    a = data(3, 4, seed=12)
    check_cross_device(cross_device_ops(a.to("cuda:0")), a)


# --- autocast and GradScaler ----------------------------------------------------------------

@pytest.mark.parametrize("low", [ember.float16, ember.bfloat16])
def test_autocast_cuda_runs_torchs_lists(low):
    import ember.nn.functional as F

    x, w, b = data(4, 8, seed=13), data(5, 8, seed=14), data(5, seed=15)
    xd, wd, bd = x.to(DEV), w.to(DEV), b.to(DEV)
    t = ember.tensor([0, 1, 2, 3], device=DEV)
    with ember.autocast("cuda", dtype=low):
        assert ember.is_autocast_enabled("cuda") and ember.get_autocast_dtype("cuda") == low
        y = F.linear(xd, wd, bd)
        assert y.dtype == low
        close(y.float(), F.linear(x, w, b), rtol=2e-2, atol=5e-2)
        assert ember.mm(xd, wd.t()).dtype == low and (xd @ wd.t()).dtype == low
        assert ember.bmm(xd[None], wd.t()[None]).dtype == low
        h = y                                                  # low-precision activations
        for fn in (lambda v: ember.softmax(v, 1), lambda v: F.log_softmax(v, 1),
                   lambda v: v.sum(), lambda v: ember.exp(v), lambda v: ember.cumsum(v, 1),
                   lambda v: F.layer_norm(v, (5,)), lambda v: F.cross_entropy(v, t),
                   lambda v: F.mse_loss(v, v.detach() * 0)):
            assert fn(h).dtype == ember.float32
        assert h.sum(dtype=low).dtype == low                  # an explicit dtype wins
        assert (h + 1).dtype == low                            # not on a list: unchanged
        assert ember.cat([h, xd[:, :5]]).dtype == ember.float32   # the widest
        assert F.linear(x, w).dtype == ember.float32           # CPU tensors: CPU autocast off
        with pytest.raises(RuntimeError, match="unsafe to autocast"):
            F.binary_cross_entropy(ember.sigmoid(h.float()), ember.zeros(4, 5, device=DEV))
        with ember.autocast("cuda", enabled=False):
            assert F.linear(xd, wd).dtype == ember.float32
    assert not ember.is_autocast_enabled("cuda")
    assert F.linear(xd, wd).dtype == ember.float32


def test_autocast_cuda_spellings_and_backward():
    lin = ember.nn.Linear(8, 3).to(DEV)
    x = data(6, 8, seed=16).to(DEV)
    with pytest.warns(FutureWarning, match="torch.cuda.amp.autocast"):
        ctx = ember.cuda.amp.autocast()
    with ctx:
        assert lin(x).dtype == ember.float16
    with ember.amp.autocast(device_type="cuda", dtype=ember.bfloat16):
        out = lin(x)
        assert out.dtype == ember.bfloat16
        loss = out.float().pow(2).mean()
    loss.backward()
    assert lin.weight.grad.dtype == ember.float32 and lin.weight.grad.device.type == "cuda"
    ref = ember.nn.Linear(8, 3)
    ref.load_state_dict({k: v.cpu() for k, v in lin.state_dict().items()})
    ref(x.cpu()).pow(2).mean().backward()
    close(lin.weight.grad, ref.weight.grad, rtol=5e-2, atol=2e-2)


def test_grad_scaler_on_cuda_matches_the_cpu_and_skips_inf_steps():
    def run(device):
        lin = ember.nn.Linear(8, 3)
        with ember.no_grad():
            lin.weight.copy_(data(3, 8, seed=17))
            lin.bias.zero_()
        lin = lin.to(device)
        opt = ember.optim.SGD(lin.parameters(), lr=0.1)
        scaler = ember.amp.GradScaler(device, init_scale=2.0 ** 10, growth_interval=2)
        x = data(4, 8, seed=18).to(device)
        scales = []
        for k in range(4):
            opt.zero_grad()
            loss = lin(x).pow(2).mean()
            scaler.scale(loss).backward()
            if k == 2:
                lin.bias.grad.fill_(float("inf"))
            scaler.step(opt)
            scaler.update()
            scales.append(scaler.get_scale())
        return lin, scales, scaler
    gd, sd, scaler = run(DEV)
    gc, sc, _ = run("cpu")
    assert sd == sc == [1024.0, 2048.0, 1024.0, 1024.0]
    assert scaler._scale.device.type == "cuda"
    close(gd.weight, gc.weight, rtol=1e-5)       # the GEMMs round differently
    with pytest.warns(FutureWarning, match="torch.cuda.amp.GradScaler"):
        assert ember.cuda.amp.GradScaler().is_enabled()


# --- sin / cos / tan at every magnitude -------------------------------------------------------

def trig_inputs():
    """float32 values across the whole range, both signs, and the edges of the reductions."""
    rng = np.random.default_rng(19)
    mags = np.ldexp(rng.uniform(0.5, 1.0, 4000), rng.integers(-10, 128, 4000))
    edges = [0.0, -0.0, 8191.99, 8192.0, 1048575.9, 1048576.0, 16777216.0, 1.6889281e19,
             3.4028235e38, np.inf, -np.inf, np.nan]
    x = np.concatenate([mags * rng.choice([-1.0, 1.0], 4000), edges]).astype(np.float32)
    return x


def ulps(got, ref):
    """|got - ref| in units of the float32 spacing at ref (ref in float64)."""
    r32 = ref.astype(np.float32)
    sp = np.abs(np.spacing(r32)).astype(np.float64)
    return np.where(got == r32, 0.0, np.abs(got.astype(np.float64) - ref) / sp)


@pytest.mark.parametrize("name", ["sin", "cos", "tan"])
def test_trig_of_large_arguments_is_the_cpus_and_within_half_an_ulp(name):
    x = trig_inputs()
    got = _np(getattr(ember, name)(ember.tensor(x).to(DEV)))
    cpu = getattr(ember, name)(ember.tensor(x)).numpy()
    np.testing.assert_array_equal(got, cpu)                  # the same bits as the CPU
    finite = np.isfinite(x)
    assert np.isnan(got[~finite]).all()
    ref = getattr(np, name)(x[finite].astype(np.float64))
    assert ulps(got[finite], ref).max() <= 0.51


def test_clip_grad_norm_of_mixed_dtypes_falls_back_per_tensor():
    def grads(device):
        a = ember.zeros(3, device=device, requires_grad=True)
        b = ember.zeros(2, dtype=ember.float64, device=device, requires_grad=True)
        a.grad = data(3, seed=60).to(device)
        b.grad = data(2, seed=61).double().to(device)
        return a, b
    pd, pc = grads(DEV), grads("cpu")
    close(ember.nn.utils.clip_grad_norm_(pd, 0.5), ember.nn.utils.clip_grad_norm_(pc, 0.5))
    for a, b in zip(pd, pc):
        close(a.grad, b.grad)
