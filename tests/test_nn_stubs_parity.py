"""Parity with PyTorch for features that used to be stubs: local_response_norm /
LocalResponseNorm, module backward hooks, LSTM projections, every pad and interpolate
mode, and autograd.grad(is_grads_batched=True). Values and gradients are compared."""
import itertools
import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.nn.modules import module as ember_module

torch = pytest.importorskip("torch")
tF = torch.nn.functional
tnn = torch.nn

RNG = np.random.default_rng(7)


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def np_of(t):
    return t.detach().numpy()


def check_fn(fn_e, fn_t, a, rtol=1e-4, atol=1e-5, grad=True):
    """Run fn on ember and torch copies of ``a``; compare output and input gradient."""
    e = ember.tensor(a, requires_grad=grad)
    t = torch.tensor(a, requires_grad=grad)
    eo, to = fn_e(e), fn_t(t)
    assert tuple(eo.shape) == tuple(to.shape)
    assert str(eo.dtype).split(".")[-1] == str(to.dtype).split(".")[-1]
    np.testing.assert_allclose(np_of(eo), np_of(to), rtol=rtol, atol=atol)
    if grad:
        g = rand(*to.shape, dtype=a.dtype)
        (eo * ember.tensor(g)).sum().backward()
        (to * torch.tensor(g)).sum().backward()
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=rtol, atol=atol)
    return eo


# ---- local_response_norm ----------------------------------------------------------
@pytest.mark.parametrize("shape", [(2, 5, 7), (2, 6, 4, 5), (2, 5, 3, 4, 2), (1, 3, 2, 2, 2, 2)])
@pytest.mark.parametrize("size", [1, 2, 3, 5, 8])
def test_local_response_norm_matches_torch(shape, size):
    a = rand(*shape)
    check_fn(lambda x: F.local_response_norm(x, size, alpha=0.3, beta=0.7, k=1.5),
             lambda x: tF.local_response_norm(x, size, alpha=0.3, beta=0.7, k=1.5), a)


def test_local_response_norm_defaults_and_float64():
    a = rand(3, 4, 6, dtype=np.float64) * 30
    out = check_fn(lambda x: F.local_response_norm(x, 3), lambda x: tF.local_response_norm(x, 3),
                   a, rtol=1e-10, atol=1e-12)
    assert out.dtype == ember.float64


def test_local_response_norm_errors_and_empty():
    with pytest.raises(ValueError, match="3D or higher"):
        F.local_response_norm(ember.randn(4, 5), 2)
    with pytest.raises(ValueError):
        tF.local_response_norm(torch.randn(4, 5), 2)
    empty = ember.zeros(0, 3, 4)
    assert F.local_response_norm(empty, 2) is empty


def test_local_response_norm_module():
    m, tm = nn.LocalResponseNorm(3, alpha=1e-2, beta=0.5, k=2.0), tnn.LocalResponseNorm(
        3, alpha=1e-2, beta=0.5, k=2.0)
    assert repr(m).replace("ember.", "") == repr(tm)
    assert list(m.parameters()) == [] and len(m.state_dict()) == 0
    a = rand(2, 6, 5, 5)
    check_fn(m, tm, a)
    assert "LocalResponseNorm" in nn.__all__


# ---- autograd.Function: non-differentiable inputs returned as outputs -------------
def test_mark_non_differentiable_passthrough_input():
    class Ident(ember.autograd.Function):
        @staticmethod
        def forward(ctx, *args):
            ctx.mark_non_differentiable(*[a for a in args if not a.requires_grad])
            return args

        @staticmethod
        def backward(ctx, *grads):
            return grads

    a = ember.randn(3, requires_grad=True)
    b = ember.randn(3)
    x, y = Ident.apply(a, b)
    assert x.requires_grad and x.grad_fn is not None
    assert not y.requires_grad and y.grad_fn is None
    (x * 2).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.full(3, 2.0, np.float32))


# ---- module backward hooks ---------------------------------------------------------
class _TwoIn(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 2)

    def forward(self, x, scale, y):
        h = self.lin(x) * scale
        return h + y.sum(), h * 2


class _TTwoIn(tnn.Module):
    def __init__(self):
        super().__init__()
        self.lin = tnn.Linear(3, 2)

    def forward(self, x, scale, y):
        h = self.lin(x) * scale
        return h + y.sum(), h * 2


def _pair_two_in():
    m, tm = _TwoIn(), _TTwoIn()
    m.lin.weight.data.copy_(ember.tensor(tm.lin.weight.detach().numpy()))
    m.lin.bias.data.copy_(ember.tensor(tm.lin.bias.detach().numpy()))
    return m, tm


def _assert_grads_equal(eg, tg):
    assert len(eg) == len(tg)
    for a, b in zip(eg, tg):
        if b is None:
            assert a is None
        else:
            np.testing.assert_allclose(np_of(a), np_of(b), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("y_grad", [True, False])
def test_full_backward_hook_args_match_torch(y_grad):
    m, tm = _pair_two_in()
    xa, ya = rand(4, 3), rand(4, 2)
    elog, tlog = [], []
    m.register_full_backward_hook(lambda mod, gi, go: elog.append((mod, gi, go)))
    tm.register_full_backward_hook(lambda mod, gi, go: tlog.append((mod, gi, go)))
    xe, xt = ember.tensor(xa, requires_grad=True), torch.tensor(xa, requires_grad=True)
    ye, yt = ember.tensor(ya, requires_grad=y_grad), torch.tensor(ya, requires_grad=y_grad)
    oe, te = m(xe, 0.5, ye), tm(xt, 0.5, yt)
    g1, g2 = rand(4, 2), rand(4, 2)
    ((oe[0] * ember.tensor(g1)).sum() + (oe[1] * ember.tensor(g2)).sum()).backward()
    ((te[0] * torch.tensor(g1)).sum() + (te[1] * torch.tensor(g2)).sum()).backward()
    assert len(elog) == len(tlog) == 1
    assert elog[0][0] is m
    _assert_grads_equal(elog[0][1], tlog[0][1])   # (dx, None, dy or None)
    _assert_grads_equal(elog[0][2], tlog[0][2])   # (do0, do1)
    assert elog[0][1][1] is None
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_full_backward_hook_replaces_grad_input():
    lin, tlin = nn.Linear(3, 2), tnn.Linear(3, 2)
    lin.load_state_dict({k: ember.tensor(v.numpy()) for k, v in tlin.state_dict().items()})
    lin.register_full_backward_hook(lambda mod, gi, go: (gi[0] * 3,))
    tlin.register_full_backward_hook(lambda mod, gi, go: (gi[0] * 3,))
    a = rand(5, 3)
    xe, xt = ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    (lin(ember.tanh(xe)) ** 2).sum().backward()
    (tlin(torch.tanh(xt)) ** 2).sum().backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-6)
    # the parameters' gradients do not pass through the input hook
    np.testing.assert_allclose(lin.weight.grad.numpy(), tlin.weight.grad.numpy(), rtol=1e-5,
                               atol=1e-6)


def test_full_backward_pre_hook_replaces_grad_output():
    lin, tlin = nn.Linear(3, 2), tnn.Linear(3, 2)
    lin.load_state_dict({k: ember.tensor(v.numpy()) for k, v in tlin.state_dict().items()})
    seen = []
    lin.register_full_backward_pre_hook(lambda mod, go: (go[0] * 2,))
    tlin.register_full_backward_pre_hook(lambda mod, go: (go[0] * 2,))
    lin.register_full_backward_hook(lambda mod, gi, go: seen.append(np_of(go[0])))
    a = rand(5, 3)
    xe, xt = ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    lin(xe).sum().backward()
    tlin(xt).sum().backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(lin.weight.grad.numpy(), tlin.weight.grad.numpy(), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(lin.bias.grad.numpy(), np.full(2, 10.0, np.float32))
    np.testing.assert_allclose(seen[0], np.full((5, 2), 2.0, np.float32))   # after pre-hook


def test_backward_hooks_order_prepend_and_remove():
    lin = nn.Linear(3, 2)
    order = []
    h1 = lin.register_full_backward_hook(lambda m, gi, go: order.append("a"))
    h2 = lin.register_full_backward_hook(lambda m, gi, go: order.append("b"), prepend=True)
    p1 = lin.register_full_backward_pre_hook(lambda m, go: order.append("pre1"))
    p2 = lin.register_full_backward_pre_hook(lambda m, go: order.append("pre0"), prepend=True)
    g = ember_module.register_module_full_backward_hook(lambda m, gi, go: order.append("g"))
    try:
        x = ember.randn(2, 3, requires_grad=True)
        lin(x).sum().backward()
        assert order == ["pre0", "pre1", "g", "b", "a"]
    finally:
        g.remove()
    for h in (h1, h2, p1, p2):
        h.remove()
    order.clear()
    x = ember.randn(2, 3, requires_grad=True)
    lin(x).sum().backward()
    assert order == [] and x.grad is not None
    assert not lin._backward_hooks and not lin._backward_pre_hooks


def test_backward_hook_no_input_requires_grad_fires_on_outputs():
    lin, tlin = nn.Linear(3, 2), tnn.Linear(3, 2)
    lin.load_state_dict({k: ember.tensor(v.numpy()) for k, v in tlin.state_dict().items()})
    elog, tlog = [], []
    lin.register_full_backward_hook(lambda m, gi, go: elog.append((gi, go)))
    tlin.register_full_backward_hook(lambda m, gi, go: tlog.append((gi, go)))
    a = rand(4, 3)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        lin(ember.tensor(a)).sum().backward()
    assert any("no inputs require gradients" in str(x.message) for x in w)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tlin(torch.tensor(a)).sum().backward()
    assert elog[0][0] == (None,) and tlog[0][0] == (None,)
    _assert_grads_equal(elog[0][1], tlog[0][1])


def test_backward_hook_not_called_without_grad():
    lin = nn.Linear(3, 2)
    calls = []
    lin.register_full_backward_hook(lambda m, gi, go: calls.append(1))
    with ember.no_grad():
        out = lin(ember.randn(2, 3, requires_grad=True))
    assert not out.requires_grad and calls == []


def test_backward_hook_wrong_length_raises():
    lin = nn.Linear(3, 2)
    lin.register_full_backward_hook(lambda m, gi, go: (gi[0], gi[0]))
    with pytest.raises(RuntimeError, match="invalid number of grad_input"):
        lin(ember.randn(2, 3, requires_grad=True)).sum().backward()
    lin2 = nn.Linear(3, 2)
    lin2.register_full_backward_pre_hook(lambda m, go: (go[0], go[0]))
    with pytest.raises(RuntimeError, match="invalid number of grad_output"):
        lin2(ember.randn(2, 3, requires_grad=True)).sum().backward()


def test_full_and_legacy_backward_hooks_cannot_mix():
    for mod in (nn.Linear(2, 2), tnn.Linear(2, 2)):
        mod.register_backward_hook(lambda m, gi, go: None)
        with pytest.raises(RuntimeError, match="Cannot use both"):
            mod.register_full_backward_hook(lambda m, gi, go: None)
    for mod in (nn.Linear(2, 2), tnn.Linear(2, 2)):
        mod.register_full_backward_hook(lambda m, gi, go: None)
        with pytest.raises(RuntimeError, match="Cannot use both"):
            mod.register_backward_hook(lambda m, gi, go: None)


class _Scale(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(ember.tensor([1.5, -2.0, 0.5]))

    def forward(self, x):
        return x * self.w


class _TScale(tnn.Module):
    def __init__(self):
        super().__init__()
        self.w = tnn.Parameter(torch.tensor([1.5, -2.0, 0.5]))

    def forward(self, x):
        return x * self.w


def test_legacy_backward_hook_sees_output_node_grads():
    m, tm = _Scale(), _TScale()
    elog, tlog = [], []
    m.register_backward_hook(lambda mod, gi, go: elog.append((mod, gi, go)))
    tm.register_backward_hook(lambda mod, gi, go: tlog.append((mod, gi, go)))
    a, g = rand(4, 3), rand(4, 3)
    xe, xt = ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    (m(xe) * ember.tensor(g)).sum().backward()
    (tm(xt) * torch.tensor(g)).sum().backward()
    assert elog[0][0] is m
    _assert_grads_equal(elog[0][1], tlog[0][1])
    _assert_grads_equal(elog[0][2], tlog[0][2])


def test_global_backward_hooks_fire_for_every_module():
    net = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    names = []
    pre = []
    h = ember_module.register_module_full_backward_hook(
        lambda m, gi, go: names.append(type(m).__name__))
    hp = ember_module.register_module_full_backward_pre_hook(
        lambda m, go: pre.append(type(m).__name__))
    try:
        with pytest.raises(RuntimeError, match="Cannot use both"):
            ember_module.register_module_backward_hook(lambda m, gi, go: None)
        net(ember.randn(2, 3, requires_grad=True)).sum().backward()
    finally:
        h.remove()
        hp.remove()
    assert names == ["Linear", "Tanh", "Linear", "Sequential"]
    assert pre == ["Sequential", "Linear", "Tanh", "Linear"]
    names.clear()
    net(ember.randn(2, 3, requires_grad=True)).sum().backward()
    assert names == []


# ---- LSTM with projections -----------------------------------------------------------
def _lstm_pair(**kw):
    torch.manual_seed(0)
    t = tnn.LSTM(5, 7, proj_size=3, **kw)
    e = nn.LSTM(5, 7, proj_size=3, **kw)
    assert list(t.state_dict()) == list(e.state_dict())
    e.load_state_dict({k: ember.tensor(v.numpy()) for k, v in t.state_dict().items()})
    return e, t


@pytest.mark.parametrize("bidirectional,num_layers,bias,batch_first,with_hx",
                         list(itertools.product([False, True], [1, 2], [True, False],
                                                [False, True], [False, True])))
def test_lstm_proj_matches_torch(bidirectional, num_layers, bias, batch_first, with_hx):
    e, t = _lstm_pair(num_layers=num_layers, bias=bias, batch_first=batch_first,
                      bidirectional=bidirectional)
    D = 2 if bidirectional else 1
    xa = rand(2, 4, 5) if batch_first else rand(4, 2, 5)
    xe, xt = ember.tensor(xa, requires_grad=True), torch.tensor(xa, requires_grad=True)
    extra_e, extra_t = (), ()
    if with_hx:
        ha, ca = rand(num_layers * D, 2, 3), rand(num_layers * D, 2, 7)
        he, ce = ember.tensor(ha, requires_grad=True), ember.tensor(ca, requires_grad=True)
        ht, ct = torch.tensor(ha, requires_grad=True), torch.tensor(ca, requires_grad=True)
        extra_e, extra_t = ((he, ce),), ((ht, ct),)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # torch: "LSTM with projections ... oneDNN"
        ot, (hnt, cnt) = t(xt, *extra_t)
    oe, (hne, cne) = e(xe, *extra_e)
    assert tuple(oe.shape)[-1] == 3 * D and tuple(hne.shape) == (num_layers * D, 2, 3)
    assert tuple(cne.shape) == (num_layers * D, 2, 7)
    for a, b in ((oe, ot), (hne, hnt), (cne, cnt)):
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(np_of(a), np_of(b), rtol=1e-4, atol=1e-5)
    go, gh, gc = rand(*ot.shape), rand(*hnt.shape), rand(*cnt.shape)
    ((oe * ember.tensor(go)).sum() + (hne * ember.tensor(gh)).sum()
     + (cne * ember.tensor(gc)).sum()).backward()
    ((ot * torch.tensor(go)).sum() + (hnt * torch.tensor(gh)).sum()
     + (cnt * torch.tensor(gc)).sum()).backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-5)
    for (name, pt), pe in zip(t.named_parameters(), e.parameters()):
        np.testing.assert_allclose(pe.grad.numpy(), pt.grad.numpy(), rtol=1e-4, atol=1e-5,
                                   err_msg=name)
    if with_hx:
        np.testing.assert_allclose(he.grad.numpy(), ht.grad.numpy(), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(ce.grad.numpy(), ct.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_lstm_proj_unbatched_and_no_grad():
    e, t = _lstm_pair(num_layers=2, bidirectional=True)
    xa = rand(6, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ot, (hnt, cnt) = t(torch.tensor(xa))
    with ember.no_grad():
        oe, (hne, cne) = e(ember.tensor(xa))
    assert not oe.requires_grad and tuple(oe.shape) == (6, 6)
    for a, b in ((oe, ot), (hne, hnt), (cne, cnt)):
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(np_of(a), np_of(b), rtol=1e-4, atol=1e-5)


def test_lstm_proj_parameters_and_repr():
    e = nn.LSTM(4, 6, num_layers=2, proj_size=2, bidirectional=True)
    t = tnn.LSTM(4, 6, num_layers=2, proj_size=2, bidirectional=True)
    es = {k: tuple(v.shape) for k, v in e.state_dict().items()}
    ts = {k: tuple(v.shape) for k, v in t.state_dict().items()}
    assert list(es.items()) == list(ts.items())
    assert es["weight_hr_l1_reverse"] == (2, 6) and es["weight_ih_l1"] == (24, 4)
    assert repr(e).replace("ember.", "") == repr(t)
    assert len(e.all_weights[0]) == 5


def test_lstm_proj_errors():
    for lib in (nn, tnn):
        with pytest.raises(ValueError, match="smaller than hidden_size"):
            lib.LSTM(3, 4, proj_size=4)
        with pytest.raises(ValueError, match="positive integer or zero"):
            lib.LSTM(3, 4, proj_size=-1)
        with pytest.raises(ValueError, match="only supported for LSTM"):
            lib.GRU(3, 4, proj_size=2)
        with pytest.raises(ValueError, match="only supported for LSTM"):
            lib.RNN(3, 4, proj_size=2)
    e = nn.LSTM(3, 4, proj_size=2)
    with pytest.raises(RuntimeError, match=r"Expected hidden\[0\] size \(1, 2, 2\), got"):
        e(ember.randn(5, 2, 3), (ember.zeros(1, 2, 4), ember.zeros(1, 2, 4)))
    with pytest.raises(RuntimeError, match=r"Expected hidden\[1\] size \(1, 2, 4\), got"):
        e(ember.randn(5, 2, 3), (ember.zeros(1, 2, 2), ember.zeros(1, 2, 2)))
    with pytest.raises(RuntimeError, match="should also be 3-D"):
        e(ember.randn(5, 2, 3), (ember.zeros(2, 2), ember.zeros(2, 4)))


# ---- pad -----------------------------------------------------------------------------
_PAD_1D = [(1, 2), (0, 0), (3, 0), (-1, 2), (2, -1), (-2, -1), (4, 4), (-3, 4)]
_PAD_ND = [(1, 2, 2, 1), (-1, 2, 3, -2), (1, 1, 1, 1, 1, 1), (2, -1, -1, 2, 1, 0)]


def _pad_ok(shape, p, mode):
    """Skip circular pads longer than the cropped axis: PyTorch reads uninitialised
    memory or gives an inconsistent gradient there."""
    if mode != "circular":
        return True
    for k in range(len(p) // 2):
        n = shape[-1 - k] + min(p[2 * k], 0) + min(p[2 * k + 1], 0)
        if max(p[2 * k], p[2 * k + 1]) > n:
            return False
    return True


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_matches_torch(mode):
    cases = [((2, 5), p) for p in _PAD_1D] + [((2, 3, 5), p) for p in _PAD_1D]
    cases += [(s, p) for s in [(2, 3, 4), (2, 2, 3, 4), (1, 2, 3, 4, 5)] for p in _PAD_ND
              if len(p) // 2 + 1 <= len(s) <= len(p) // 2 + 2]
    ran = 0
    for shape, p in cases:
        if not _pad_ok(shape, p, mode):
            continue
        if mode == "reflect" and any(abs(v) >= shape[-1 - i // 2] for i, v in enumerate(p)):
            continue
        check_fn(lambda x: F.pad(x, p, mode), lambda x: tF.pad(x, p, mode), rand(*shape))
        ran += 1
    assert ran >= 15


def test_pad_constant_any_rank_and_dtypes():
    a = rand(2, 3, 4, 2)
    check_fn(lambda x: F.pad(x, (1, 1, 0, 2, 1, 0, 2, 1), value=-1.5),
             lambda x: tF.pad(x, (1, 1, 0, 2, 1, 0, 2, 1), value=-1.5), a)
    ai = np.arange(12).reshape(3, 4)
    e = F.pad(ember.tensor(ai), (1, 2), value=2.7)
    t = tF.pad(torch.tensor(ai), (1, 2), value=2.7)
    assert e.dtype == ember.int64
    np.testing.assert_array_equal(e.numpy(), t.numpy())
    e = F.pad(ember.tensor(ai), (1, 1), mode="reflect")
    np.testing.assert_array_equal(e.numpy(), tF.pad(torch.tensor(ai), (1, 1), "reflect").numpy())


def test_pad_reflect_negative_pads_use_original_size():
    a = rand(1, 1, 5)
    check_fn(lambda x: F.pad(x, (4, -4), "reflect"), lambda x: tF.pad(x, (4, -4), "reflect"), a)
    check_fn(lambda x: F.pad(x, (5, -3), "replicate"),
             lambda x: tF.pad(x, (5, -3), "replicate"), a)


def test_pad_errors_match_torch():
    x4, x3 = rand(2, 3, 4, 5), rand(2, 3, 5)
    cases = [(x4, (1, 2, 3), "constant", None), (x4, (1,) * 10, "constant", None),
             (x4, (1, 1), "bogus", None), (x4, (1, 1), "reflect", None),
             (x4, (1,) * 8, "replicate", None), (x4, (1, 1, 1, 1), "replicate", 2.0),
             (x4, (5, 0, 0, 0), "reflect", None), (x4, (6, 0, 0, 0), "circular", None),
             (x3, (-3, -2), "replicate", None), (x3, (-3, -3), "constant", None)]
    for a, p, mode, value in cases:
        with pytest.raises(Exception) as te:
            tF.pad(torch.tensor(a), p, mode, value)
        with pytest.raises(te.type):
            F.pad(ember.tensor(a), p, mode, value)
    # the 2-D and 3-D kernels accept an empty result
    e = F.pad(ember.tensor(x3), (0, 0, -2, -1), "replicate")
    t = tF.pad(torch.tensor(x3), (0, 0, -2, -1), "replicate")
    assert tuple(e.shape) == tuple(t.shape) == (2, 0, 5)


# ---- interpolate -------------------------------------------------------------------------
_SIZES = {1: [(None, 0.5), (None, 1.7), (None, 2), (3, None), (13, None), (1, None)],
          2: [(None, 0.5), (None, (0.7, 2.5)), ((3, 11), None), ((9, 4), None), (1, None)],
          3: [(None, 0.6), (None, 2), ((2, 9, 3), None), ((5, 3, 7), None)]}
_MODES = {1: ["nearest", "nearest-exact", "linear", "area"],
          2: ["nearest", "nearest-exact", "bilinear", "bicubic", "area"],
          3: ["nearest", "nearest-exact", "trilinear", "area"]}
_SHAPES = {1: (2, 3, 7), 2: (2, 2, 5, 6), 3: (1, 2, 3, 4, 5)}


def _interp_cases():
    for nsp in (1, 2, 3):
        for mode in _MODES[nsp]:
            acs = [None] if mode in ("nearest", "nearest-exact", "area") else [False, True]
            for (size, sf), ac in itertools.product(_SIZES[nsp], acs):
                yield nsp, mode, size, sf, ac


@pytest.mark.parametrize("nsp,mode,size,sf,ac", list(_interp_cases()))
def test_interpolate_matches_torch(nsp, mode, size, sf, ac):
    kw = dict(size=size, scale_factor=sf, mode=mode, align_corners=ac)
    check_fn(lambda x: F.interpolate(x, **kw), lambda x: tF.interpolate(x, **kw),
             rand(*_SHAPES[nsp]))


@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "lanczos"])
@pytest.mark.parametrize("size,sf,ac", [((7, 5), None, False), ((7, 50), None, False),
                                        (None, (0.3, 1.7), False), (None, 0.45, True),
                                        ((3, 3), None, True), ((40, 2), None, False)])
def test_interpolate_antialias_matches_torch(mode, size, sf, ac):
    if mode == "lanczos" and ac:
        return
    kw = dict(size=size, scale_factor=sf, mode=mode, align_corners=ac, antialias=True)
    check_fn(lambda x: F.interpolate(x, **kw), lambda x: tF.interpolate(x, **kw),
             rand(2, 3, 23, 19))


def test_interpolate_recompute_scale_factor_and_float64():
    a = rand(1, 2, 7, 9, dtype=np.float64)
    for mode in ("bilinear", "bicubic", "nearest"):
        ac = None if mode == "nearest" else False
        kw = dict(scale_factor=(1.3, 0.45), mode=mode, align_corners=ac,
                  recompute_scale_factor=True)
        check_fn(lambda x: F.interpolate(x, **kw), lambda x: tF.interpolate(x, **kw), a,
                 rtol=1e-9, atol=1e-10)


def test_interpolate_nearest_indices_match_torch_float32_rounding():
    for n in range(1, 40):
        for mode in ("nearest", "nearest-exact"):
            a = np.arange(n, dtype=np.float32).reshape(1, 1, n)
            for kw in [dict(size=max(1, (n * 7) // 3)), dict(size=max(1, n // 3)),
                       dict(scale_factor=0.3), dict(scale_factor=2.0001),
                       dict(scale_factor=3.7)]:
                try:
                    t = tF.interpolate(torch.tensor(a), mode=mode, **kw)
                except RuntimeError:
                    with pytest.raises(RuntimeError):
                        F.interpolate(ember.tensor(a), mode=mode, **kw)
                    continue
                e = F.interpolate(ember.tensor(a), mode=mode, **kw)
                np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_interpolate_unchanged_size_with_scale_factor_forward():
    # scale 1.1 keeps these sizes; PyTorch copies some axes and resamples others
    for shape, mode in [((1, 2, 7), "nearest"), ((1, 2, 5, 6), "nearest"),
                        ((1, 1, 2, 3, 7), "nearest"), ((1, 2, 5, 6), "bilinear"),
                        ((1, 2, 5, 6), "bicubic"), ((1, 2, 7), "nearest-exact")]:
        a = rand(*shape)
        for aa in ([False, True] if mode in ("bilinear", "bicubic") else [False]):
            e = F.interpolate(ember.tensor(a), scale_factor=1.1, mode=mode, antialias=aa)
            t = tF.interpolate(torch.tensor(a), scale_factor=1.1, mode=mode, antialias=aa)
            np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-5, atol=1e-6)


def test_interpolate_integer_inputs():
    a = np.arange(24, dtype=np.uint8).reshape(1, 2, 3, 4)
    for mode in ("nearest", "nearest-exact"):
        e = F.interpolate(ember.tensor(a), size=(5, 7), mode=mode)
        t = tF.interpolate(torch.tensor(a), size=(5, 7), mode=mode)
        assert e.dtype == ember.uint8
        np.testing.assert_array_equal(e.numpy(), t.numpy())
    ai = a.astype(np.int64)
    with pytest.raises(NotImplementedError):
        tF.interpolate(torch.tensor(ai), size=(5, 7), mode="bilinear")
    with pytest.raises(NotImplementedError, match="upsample_bilinear2d"):
        F.interpolate(ember.tensor(ai), size=(5, 7), mode="bilinear")


def test_interpolate_errors_match_torch():
    x3, x4, x5 = (rand(1, 2, 5), rand(1, 2, 5, 6), rand(1, 2, 3, 4, 5))
    cases = [(x4, dict(size=3, scale_factor=2)), (x4, dict()),
             (x4, dict(size=3, align_corners=True)),
             (x4, dict(size=3, mode="area", align_corners=False)),
             (x3, dict(size=3, mode="bilinear")), (x4, dict(size=3, mode="linear")),
             (x5, dict(size=3, mode="bilinear")), (x4, dict(size=3, mode="trilinear")),
             (x3, dict(size=3, mode="bicubic")), (x4, dict(size=3, mode="bogus")),
             (rand(2, 3), dict(size=3)), (x4, dict(size=(3, 4, 5))),
             (x4, dict(scale_factor=(2, 2, 2))), (x4, dict(size=(3.0, 4))),
             (x4, dict(size=3, recompute_scale_factor=True)),
             (x4, dict(size=3, antialias=True)), (x3, dict(size=3, mode="linear",
                                                           antialias=True)),
             (x4, dict(size=3, mode="lanczos")),
             (x4, dict(size=3, mode="lanczos", antialias=True, align_corners=True)),
             (x4, dict(size=0)), (x4, dict(scale_factor=0.1, mode="bilinear"))]
    for a, kw in cases:
        with pytest.raises(Exception) as te:
            tF.interpolate(torch.tensor(a), **kw)
        with pytest.raises(te.type):
            F.interpolate(ember.tensor(a), **kw)


def test_upsample_module_style_calls():
    a = rand(1, 1, 3, 3)
    e = F.upsample(ember.tensor(a), scale_factor=2, mode="bilinear", align_corners=True)
    t = tF.interpolate(torch.tensor(a), scale_factor=2, mode="bilinear", align_corners=True)
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-5, atol=1e-6)


# ---- autograd.grad(is_grads_batched=True) ------------------------------------------------
def test_grad_is_grads_batched_matches_torch():
    xa, wa, ga = rand(3, 4), rand(4, 5), rand(6, 3, 5)
    xe, we = ember.tensor(xa, requires_grad=True), ember.tensor(wa, requires_grad=True)
    xt, wt = torch.tensor(xa, requires_grad=True), torch.tensor(wa, requires_grad=True)
    ge = ember.autograd.grad(ember.tanh(xe @ we), (xe, we), ember.tensor(ga),
                             is_grads_batched=True)
    gt = torch.autograd.grad(torch.tanh(xt @ wt), (xt, wt), torch.tensor(ga),
                             is_grads_batched=True)
    assert tuple(ge[0].shape) == (6, 3, 4) and tuple(ge[1].shape) == (6, 4, 5)
    for a, b in zip(ge, gt):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    # the rows are the plain vector-Jacobian products
    y = ember.tanh(xe @ we)
    (row,) = ember.autograd.grad(y, xe, ember.tensor(ga[2]))
    np.testing.assert_allclose(ge[0][2].numpy(), row.numpy(), rtol=1e-6, atol=1e-7)


def test_grad_is_grads_batched_create_graph_and_errors():
    x = ember.tensor(rand(3), requires_grad=True)
    y = x ** 3
    (g,) = ember.autograd.grad(y, x, ember.eye(3), is_grads_batched=True, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), np.diag(3 * x.detach().numpy() ** 2),
                               rtol=1e-5)
    (gg,) = ember.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), 6 * x.detach().numpy(), rtol=1e-5)
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        ember.autograd.grad(x * 2, x, ember.ones(3), is_grads_batched=True)
