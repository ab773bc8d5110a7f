"""Complex paths of scans, variance, scaled products, linear/conv layers and ranges, each
against torch (values and gradients in torch's conjugate Wirtinger convention)."""
import numpy as np
import pytest

import ember
from tests.test_complex import _c, _close, _grad_parity

torch = pytest.importorskip("torch")


def _pair(a):
    return ember.tensor(a), torch.tensor(a)


# --- cumsum / cumprod ----------------------------------------------------------------------

@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_scans(op, dt):
    rng = np.random.default_rng(1)
    e, t = _pair(_c(rng, 3, 4, 5, dtype=dt))
    for d in (0, 1, -1):
        _close(getattr(ember, op)(e, d), getattr(torch, op)(t, d), rtol=1e-4, atol=1e-5)
    _close(getattr(e, op)(1), getattr(t, op)(1), rtol=1e-4, atol=1e-5)
    # a strided input and a 0-d one
    _close(getattr(ember, op)(e.transpose(0, 2), 1), getattr(torch, op)(t.transpose(0, 2), 1),
           rtol=1e-4, atol=1e-5)
    _close(getattr(ember, op)(ember.tensor(1 - 2j), 0), getattr(torch, op)(torch.tensor(1 - 2j), 0))


def test_logcumsumexp():
    rng = np.random.default_rng(18)
    e, t = _pair(_c(rng, 3, 5) * 20)
    for d in (0, 1):
        _close(ember.logcumsumexp(e, d), torch.logcumsumexp(t, d), rtol=1e-5, atol=1e-5)
    inf, nan = float("inf"), float("nan")
    special = [[1 + 1j, -inf + 0j, 2 - 3j, 1000 + 2j], [nan, 1j, 2, 3],
               [-inf + 0j, -inf + 1j, 0j, 1], [inf + 0j, inf + 1j, 0j, 1]]
    e, t = _pair(np.array(special, dtype=np.complex128))
    _close(ember.logcumsumexp(e, 1), torch.logcumsumexp(t, 1), rtol=1e-12)
    _grad_parity(lambda x: ember.logcumsumexp(x, 1), lambda x: torch.logcumsumexp(x, 1),
                 _c(rng, 3, 4, dtype=np.complex128) * 3)


def test_scans_dtype_and_out():
    x = np.array([1, 2, 3])
    for op in ("cumsum", "cumprod"):
        _close(getattr(ember, op)(ember.tensor(x), 0, dtype=ember.complex128),
               getattr(torch, op)(torch.tensor(x), 0, dtype=torch.complex128))
    rng = np.random.default_rng(2)
    e, t = _pair(_c(rng, 4))
    oe, ot = ember.empty(4, dtype=ember.complex64), torch.empty(4, dtype=torch.complex64)
    ember.cumsum(e, 0, out=oe)
    torch.cumsum(t, 0, out=ot)
    _close(oe, ot)
    ie, it = e.clone(), t.clone()
    ie.cumsum_(0)
    it.cumsum_(0)
    _close(ie, it)


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_scan_gradients(op):
    rng = np.random.default_rng(3)
    _grad_parity(lambda x: getattr(ember, op)(x, 1), lambda x: getattr(torch, op)(x, 1),
                 _c(rng, 3, 4, dtype=np.complex128))


@pytest.mark.parametrize("zeros", [[(0, 1)], [(0, 1), (0, 3)], [(1, 2), (2, 0)]])
def test_prod_gradient_at_zeros(zeros):
    rng = np.random.default_rng(14)
    a = _c(rng, 3, 4, dtype=np.complex128)
    for i, j in zeros:
        a[i, j] = 0
    _grad_parity(lambda x: ember.prod(x, 1), lambda x: torch.prod(x, 1), a)
    _grad_parity(lambda x: ember.prod(x, 0, keepdim=True),
                 lambda x: torch.prod(x, 0, keepdim=True), a)
    _grad_parity(lambda x: ember.prod(x), lambda x: torch.prod(x), a)


@pytest.mark.parametrize("cplx", [False, True])
@pytest.mark.parametrize("dim", [0, 1])
def test_cumprod_gradient_at_zeros(cplx, dim):
    rng = np.random.default_rng(17)
    a = _c(rng, 3, 6, dtype=np.complex128) if cplx else rng.standard_normal((3, 6))
    for i, j in ((0, 2), (1, 1), (1, 4), (2, 0)):
        a[i, j] = 0
    _grad_parity(lambda x: ember.cumprod(x, dim), lambda x: torch.cumprod(x, dim), a)


# --- var / std --------------------------------------------------------------------------

@pytest.mark.parametrize("op", ["var", "std"])
@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_var_std(op, dt):
    rng = np.random.default_rng(4)
    e, t = _pair(_c(rng, 3, 4, 5, dtype=dt) + 1)
    _close(getattr(ember, op)(e), getattr(torch, op)(t), rtol=1e-5)
    for dim in (0, (0, 2), -1):
        for keep in (False, True):
            _close(getattr(ember, op)(e, dim, keepdim=keep),
                   getattr(torch, op)(t, dim, keepdim=keep), rtol=1e-5)
    _close(getattr(ember, op)(e, 1, correction=0), getattr(torch, op)(t, 1, correction=0),
           rtol=1e-5)
    _close(getattr(ember, op)(e, 1, unbiased=False), getattr(torch, op)(t, 1, unbiased=False),
           rtol=1e-5)
    _close(getattr(e, op)(1), getattr(t, op)(1), rtol=1e-5)


@pytest.mark.parametrize("op", ["var_mean", "std_mean"])
def test_var_std_mean(op):
    rng = np.random.default_rng(5)
    e, t = _pair(_c(rng, 4, 3))
    for (re, me), (rt, mt) in ((getattr(ember, op)(e, 0), getattr(torch, op)(t, 0)),
                               (getattr(ember, op)(e), getattr(torch, op)(t))):
        _close(re, rt, rtol=1e-5)
        _close(me, mt, rtol=1e-5)


@pytest.mark.parametrize("op", ["var", "std"])
def test_var_std_gradients(op):
    rng = np.random.default_rng(6)
    _grad_parity(lambda x: getattr(ember, op)(x, 1), lambda x: getattr(torch, op)(x, 1),
                 _c(rng, 3, 4, dtype=np.complex128))


# --- addmm / baddbmm / addmv / mv / linear / einsum ----------------------------------------

def test_scaled_products():
    rng = np.random.default_rng(7)
    i, a, b = _c(rng, 3, 5), _c(rng, 3, 4), _c(rng, 4, 5)
    (ie, it), (ae, at), (be, bt) = _pair(i), _pair(a), _pair(b)
    _close(ember.addmm(ie, ae, be), torch.addmm(it, at, bt), rtol=1e-4, atol=1e-5)
    _close(ember.addmm(ie, ae, be, beta=1j, alpha=2 - 1j),
           torch.addmm(it, at, bt, beta=1j, alpha=2 - 1j), rtol=1e-4, atol=1e-5)
    _close(ie.addmm(ae, be, alpha=0.5), it.addmm(at, bt, alpha=0.5), rtol=1e-4, atol=1e-5)
    # beta = 0 never reads the input
    nan = ember.full((3, 5), float("nan"), dtype=ember.complex64)
    _close(ember.addmm(nan, ae, be, beta=0), torch.mm(at, bt), rtol=1e-4, atol=1e-5)
    _close(ember.addmm(ie[0], ae, be), torch.addmm(it[0], at, bt), rtol=1e-4, atol=1e-5)
    b3, c3, d3 = _c(rng, 2, 3, 5), _c(rng, 2, 3, 4), _c(rng, 2, 4, 5)
    _close(ember.baddbmm(*map(ember.tensor, (b3, c3, d3)), alpha=2),
           torch.baddbmm(*map(torch.tensor, (b3, c3, d3)), alpha=2), rtol=1e-4, atol=1e-5)
    v, w = _c(rng, 4), _c(rng, 3)
    _close(ember.mv(ae, ember.tensor(v)), torch.mv(at, torch.tensor(v)), rtol=1e-4, atol=1e-5)
    _close(ember.addmv(ember.tensor(w), ae, ember.tensor(v), beta=2),
           torch.addmv(torch.tensor(w), at, torch.tensor(v), beta=2), rtol=1e-4, atol=1e-5)
    _close(ember.einsum("ij,jk->ik", ae, be), torch.einsum("ij,jk->ik", at, bt), rtol=1e-4,
           atol=1e-5)
    _close(ember.einsum("ij,ij->i", ae, ae.conj()), torch.einsum("ij,ij->i", at, at.conj()),
           rtol=1e-4, atol=1e-5)
    with pytest.raises(RuntimeError, match="same dtype"):
        ember.addmm(ie, ae, be.to(ember.complex128))


def test_linear():
    rng = np.random.default_rng(8)
    x, w, b = _c(rng, 2, 3, 4), _c(rng, 5, 4), _c(rng, 5)
    F, TF = ember.nn.functional, torch.nn.functional
    _close(F.linear(*map(ember.tensor, (x, w, b))), TF.linear(*map(torch.tensor, (x, w, b))),
           rtol=1e-4, atol=1e-5)
    _close(F.linear(ember.tensor(x), ember.tensor(w)), TF.linear(torch.tensor(x), torch.tensor(w)),
           rtol=1e-4, atol=1e-5)
    _close(F.linear(ember.tensor(x), ember.tensor(w[0])),
           TF.linear(torch.tensor(x), torch.tensor(w[0])), rtol=1e-4, atol=1e-5)
    with pytest.raises(RuntimeError, match="same dtype"):
        F.linear(ember.tensor(x), ember.tensor(w), ember.tensor(b.real))


@pytest.mark.parametrize("name", ["addmm", "addmv", "baddbmm", "linear", "einsum"])
def test_product_gradients(name):
    rng = np.random.default_rng(9)
    cases = {
        "addmm": (lambda L: lambda i, a, b: L.addmm(i, a, b, beta=0.5, alpha=1j),
                  [(3, 5), (3, 4), (4, 5)]),
        "addmv": (lambda L: lambda i, a, v: L.addmv(i, a, v, alpha=2), [(3,), (3, 4), (4,)]),
        "baddbmm": (lambda L: lambda i, a, b: L.baddbmm(i, a, b), [(2, 3, 5), (2, 3, 4),
                                                                  (2, 4, 5)]),
        "linear": (lambda L: lambda x, w, b: L.nn.functional.linear(x, w, b),
                   [(2, 4), (3, 4), (3,)]),
        "einsum": (lambda L: lambda a, b: L.einsum("bij,bjk->bik", a, b), [(2, 3, 4), (2, 4, 2)]),
    }
    make, shapes = cases[name]
    _grad_parity(make(ember), make(torch), *[_c(rng, *s, dtype=np.complex128) for s in shapes])


# --- convolution ---------------------------------------------------------------------------

@pytest.mark.parametrize("op,xs,ws,kw", [
    ("conv1d", (2, 3, 9), (4, 3, 3), {"padding": 1}),
    ("conv1d", (3, 9), (4, 3, 2), {"stride": 2, "dilation": 2}),
    ("conv2d", (2, 4, 6, 5), (6, 2, 3, 2), {"groups": 2, "padding": "same"}),
    ("conv_transpose1d", (2, 3, 7), (3, 4, 3), {"stride": 2, "output_padding": 1}),
    ("conv_transpose2d", (1, 2, 4, 4), (2, 3, 3, 3), {"padding": 1}),
])
def test_conv(op, xs, ws, kw):
    rng = np.random.default_rng(10)
    oc = ws[1] * kw.get("groups", 1) if "transpose" in op else ws[0]
    x, w, b = _c(rng, *xs), _c(rng, *ws), _c(rng, oc)
    fe, ft = getattr(ember.nn.functional, op), getattr(torch.nn.functional, op)
    _close(fe(*map(ember.tensor, (x, w, b)), **kw), ft(*map(torch.tensor, (x, w, b)), **kw),
           rtol=1e-4, atol=1e-4)
    _close(fe(ember.tensor(x), ember.tensor(w), **kw), ft(torch.tensor(x), torch.tensor(w), **kw),
           rtol=1e-4, atol=1e-4)


def test_conv_gradients_and_module():
    rng = np.random.default_rng(11)
    x, w, b = _c(rng, 2, 3, 6, dtype=np.complex128), _c(rng, 4, 3, 3, dtype=np.complex128), \
        _c(rng, 4, dtype=np.complex128)
    _grad_parity(lambda *a: ember.nn.functional.conv1d(*a, padding=1),
                 lambda *a: torch.nn.functional.conv1d(*a, padding=1), x, w, b)
    x2, w2 = _c(rng, 1, 2, 5, 5, dtype=np.complex128), _c(rng, 3, 2, 2, 2, dtype=np.complex128)
    _grad_parity(ember.nn.functional.conv2d, torch.nn.functional.conv2d, x2, w2)
    m = ember.nn.Conv1d(3, 2, 3, dtype=ember.complex64)
    assert m.weight.dtype is ember.complex64
    assert m(ember.tensor(_c(rng, 1, 3, 5))).shape == (1, 2, 3)
    with pytest.raises(RuntimeError, match="should be the same"):
        ember.nn.functional.conv1d(ember.tensor(x), ember.tensor(w.real))


# --- linspace / logspace --------------------------------------------------------------------

def test_linspace_logspace_complex():
    _close(ember.linspace(0, 1 + 1j, 5), torch.linspace(0, 1 + 1j, 5))
    _close(ember.linspace(-2j, 3 + 1j, 7, dtype=ember.complex128),
           torch.linspace(-2j, 3 + 1j, 7, dtype=torch.complex128))
    _close(ember.linspace(0, 1, 5, dtype=ember.complex128),
           torch.linspace(0, 1, 5, dtype=torch.complex128))
    _close(ember.linspace(1j, 2, 1), torch.linspace(1j, 2, 1))
    _close(ember.linspace(ember.tensor(1 + 1j), 0, 3), torch.linspace(torch.tensor(1 + 1j), 0, 3))
    _close(ember.logspace(0, 1 + 1j, 4), torch.logspace(0, 1 + 1j, 4), rtol=1e-5)
    _close(ember.logspace(-1j, 1 + 1j, 6, base=2, dtype=ember.complex128),
           torch.logspace(-1j, 1 + 1j, 6, base=2, dtype=torch.complex128), rtol=1e-12)
    with pytest.raises(RuntimeError, match="can't be safely cast"):
        torch.linspace(0, 1 + 1j, 5, dtype=torch.float32)
    with pytest.raises(RuntimeError, match="can't be safely cast"):
        ember.linspace(0, 1 + 1j, 5, dtype=ember.float32)


def test_cov_corrcoef():
    rng = np.random.default_rng(13)
    e, t = _pair(_c(rng, 3, 6, dtype=np.complex128))
    _close(ember.cov(e), torch.cov(t), rtol=1e-10)
    _close(ember.cov(e, correction=0), torch.cov(t, correction=0), rtol=1e-10)
    _close(ember.corrcoef(e), torch.corrcoef(t), rtol=1e-10)
    _close(ember.cov(e[0]), torch.cov(t[0]), rtol=1e-10)


# --- what torch refuses for complex, ember refuses the same way -----------------------------

def test_logsumexp():
    rng = np.random.default_rng(12)
    e, t = _pair(_c(rng, 3, 4) * 30)
    for dim in (0, (0, 1), -1):
        _close(ember.logsumexp(e, dim), torch.logsumexp(t, dim), rtol=1e-5)
    _close(ember.logsumexp(e, 1, keepdim=True), torch.logsumexp(t, 1, keepdim=True), rtol=1e-5)
    _grad_parity(lambda x: ember.logsumexp(x, 1), lambda x: torch.logsumexp(x, 1),
                 _c(rng, 3, 4, dtype=np.complex128))


_REFUSED = {
    "batch_norm": lambda L, F, a: F.batch_norm(a, None, None, training=True),
    "instance_norm": lambda L, F, a: F.instance_norm(a),
    "group_norm": lambda L, F, a: F.group_norm(a, 1),
    "max_pool2d": lambda L, F, a: F.max_pool2d(a, 2),
    "max_pool1d": lambda L, F, a: F.max_pool1d(a[0], 2),
    "adaptive_max_pool2d": lambda L, F, a: F.adaptive_max_pool2d(a, 2),
    "interpolate": lambda L, F, a: F.interpolate(a, scale_factor=2),
    "interpolate_bilinear": lambda L, F, a: F.interpolate(a, scale_factor=2, mode="bilinear"),
    "mse_loss": lambda L, F, a: F.mse_loss(a, a),
    "smooth_l1_loss": lambda L, F, a: F.smooth_l1_loss(a, a),
    "huber_loss": lambda L, F, a: F.huber_loss(a, a),
    "glu": lambda L, F, a: F.glu(a),
    "kthvalue": lambda L, F, a: a.kthvalue(1),
    "median": lambda L, F, a: a.median(),
    "topk": lambda L, F, a: a.topk(2),
    "argmin": lambda L, F, a: a.argmin(),
    "clamp": lambda L, F, a: a.clamp(0, 1),
}


@pytest.mark.parametrize("name", list(_REFUSED))
def test_nn_and_ordering_ops_refuse_complex(name):
    rng = np.random.default_rng(19)
    a = _c(rng, 2, 3, 4, 4)
    with pytest.raises(RuntimeError) as te:
        _REFUSED[name](torch, torch.nn.functional, torch.tensor(a))
    with pytest.raises(type(te.value), match="complex|Complex"):
        _REFUSED[name](ember, ember.nn.functional, ember.tensor(a))


def test_unfold_fold():
    rng = np.random.default_rng(20)
    a = _c(rng, 2, 3, 4, 4, dtype=np.complex128)
    F, TF = ember.nn.functional, torch.nn.functional
    _grad_parity(lambda x: F.unfold(x, 2, padding=1), lambda x: TF.unfold(x, 2, padding=1), a)
    u = _c(rng, 2, 12, 9, dtype=np.complex128)
    _grad_parity(lambda x: F.fold(x, (4, 4), 2), lambda x: TF.fold(x, (4, 4), 2), u)


@pytest.mark.parametrize("op", ["amax", "argmax", "cummax", "max", "sort"])
def test_real_only_ops_refuse_complex(op):
    args = (0,) if op in ("cummax",) else ()
    e, t = ember.tensor([1 + 1j, 2j]), torch.tensor([1 + 1j, 2j])
    with pytest.raises(RuntimeError) as te:
        getattr(torch, op)(t, *args)
    with pytest.raises(type(te.value), match="ComplexFloat|complex"):
        getattr(ember, op)(e, *args)


def test_vecdot_and_sinc():
    rng = np.random.default_rng(16)
    a, b = _c(rng, 3, 4, dtype=np.complex128), _c(rng, 3, 4, dtype=np.complex128)
    a[0, 0] = 0
    _grad_parity(lambda x, y: ember.linalg.vecdot(x, y), lambda x, y: torch.linalg.vecdot(x, y),
                 a, b)
    _grad_parity(ember.sinc, torch.sinc, a)


def test_lerp_and_masked_fill():
    rng = np.random.default_rng(21)
    a, b = _c(rng, 3, 4, dtype=np.complex128), _c(rng, 3, 4, dtype=np.complex128)
    for w in (0.3, 0.8, 0.25j):
        _grad_parity(lambda x, y: ember.lerp(x, y, w), lambda x, y: torch.lerp(x, y, w), a, b)
    w = _c(rng, 3, 4, dtype=np.complex128)
    _grad_parity(ember.lerp, torch.lerp, a, b, w)
    e, t = ember.tensor(a), torch.tensor(a)
    ember.lerp(e, ember.tensor(b), 0.7, out=e)
    _close(e, torch.lerp(t, torch.tensor(b), 0.7))
    with pytest.raises(RuntimeError, match=r"boolean masks.*complex<float>"):
        ember.zeros(2).masked_fill(ember.zeros(2, dtype=ember.complex64), 1)


@pytest.mark.parametrize("opt,kw", [
    ("Adam", {"lr": 0.1}), ("Adam", {"lr": 0.1, "amsgrad": True, "weight_decay": 0.1}),
    ("AdamW", {"lr": 0.1}), ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
    ("RMSprop", {"lr": 0.01, "centered": True, "momentum": 0.5}), ("Adagrad", {"lr": 0.1}),
    ("Adadelta", {}), ("Adamax", {}), ("NAdam", {}), ("RAdam", {}), ("ASGD", {}),
    ("Rprop", {})])
def test_optimizers_on_complex_parameters(opt, kw):
    rng = np.random.default_rng(22)
    w0, x = _c(rng, 3, 4), _c(rng, 5, 4)
    results = []
    for L in (ember, torch):
        w = L.tensor(w0).requires_grad_(True)
        o = getattr(L.optim, opt)([w], **kw)
        for _ in range(3):
            o.zero_grad()
            (L.tensor(x) @ w.mT).abs().sum().backward()
            o.step()
        results.append(w)
    _close(results[0], results[1], rtol=1e-4, atol=1e-5)


def test_optimizer_state_of_complex_parameters_stays_complex():
    w = ember.randn(3, 4, dtype=ember.complex64, requires_grad=True)
    o = ember.optim.Adam([w], lr=0.1)
    for _ in range(2):
        o.zero_grad()
        w.abs().sum().backward()
        o.step()
    st = o.state[w]
    assert st["exp_avg"].dtype is ember.complex64 and st["exp_avg"].shape == w.shape
    assert o.param_groups[0]["params"][0] is w
    o2 = ember.optim.Adam([w], lr=0.1)
    o2.load_state_dict(o.state_dict())
    before = w.detach().clone()
    o2.step()
    assert not ember.equal(before, w.detach())


def test_zero_dim_reductions():
    e, t = ember.tensor(1 + 2j), torch.tensor(1 + 2j)
    for op in ("sum", "mean", "prod"):
        _close(getattr(ember, op)(e), getattr(torch, op)(t))
        _close(getattr(ember, op)(e, 0, keepdim=True), getattr(torch, op)(t, 0, keepdim=True))


# --- forward-mode AD ----------------------------------------------------------------------

_JVP = {
    "mul": (lambda L: lambda a: a * a * (2 - 1j), (3, 3), True),
    "exp_sin": (lambda L: lambda a: L.exp(a).sin(), (3, 3), True),
    "abs_angle": (lambda L: lambda a: a.abs() + L.angle(a), (3, 3), True),
    "view_as_real": (lambda L: lambda a: L.view_as_real(a) * 2, (3, 3), True),
    "conj": (lambda L: lambda a: a.conj() * a, (3, 3), True),
    "matmul": (lambda L: lambda a: a @ a, (3, 3), True),
    "prod_sum": (lambda L: lambda a: a.prod(0) + a.sum(1), (3, 3), True),
    "cumsum_var": (lambda L: lambda a: L.cumsum(a, 0).sum() + L.var(a, 0), (4, 3), True),
    "complex": (lambda L: lambda a: L.complex(a, a * 2), (4,), False),
    "fft": (lambda L: lambda a: L.fft.fft(a), (8,), True),
    "fft2": (lambda L: lambda a: L.fft.fft2(a, norm="ortho"), (4, 4), True),
    "rfft": (lambda L: lambda a: L.fft.rfft(a), (8,), False),
    "irfft": (lambda L: lambda a: L.fft.irfft(a, 8), (5,), True),
    "ihfft": (lambda L: lambda a: L.fft.ihfft(a), (6,), False),
    "linalg_inv": (lambda L: lambda a: L.linalg.inv(a), (3, 3), True),
    "linalg_svdvals": (lambda L: lambda a: L.linalg.svdvals(a), (3, 3), True),
    "linalg_det": (lambda L: lambda a: L.linalg.det(a), (3, 3), True),
    "linalg_cholesky": (lambda L: lambda a: L.linalg.cholesky(a @ a.mH + 3 * L.eye(3)), (3, 3),
                        True),
    "linalg_qr": (lambda L: lambda a: L.linalg.qr(a).Q, (3, 3), True),
    "linalg_eigvals": (lambda L: lambda a: L.linalg.eigvals(a), (3, 3), True),
    "conv1d": (lambda L: lambda a: L.nn.functional.conv1d(a[None], a[:, :, None]), (3, 3), True),
    "logcumsumexp": (lambda L: lambda a: L.logcumsumexp(a, 1), (3, 3), True),
}


@pytest.mark.parametrize("name", list(_JVP))
def test_forward_ad(name):
    import torch.autograd.forward_ad as ft

    import ember.autograd.forward_ad as fe
    make, shape, cplx = _JVP[name]
    rng = np.random.default_rng(15)
    x = _c(rng, *shape, dtype=np.complex128) if cplx else rng.standard_normal(shape)
    t = _c(rng, *shape, dtype=np.complex128) if cplx else rng.standard_normal(shape)
    with fe.dual_level():
        de = fe.make_dual(ember.tensor(x), ember.tensor(t))
        pe, te = fe.unpack_dual(make(ember)(de))
    with ft.dual_level():
        dt = ft.make_dual(torch.tensor(x), torch.tensor(t))
        pt, tt = ft.unpack_dual(make(torch)(dt))
    _close(pe, pt, rtol=1e-9, atol=1e-10)
    _close(te, tt, rtol=1e-8, atol=1e-10)
