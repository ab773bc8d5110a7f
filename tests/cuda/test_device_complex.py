"""complex64 / complex128 tensors on a CUDA device against the CPU result: moves,
strided copies and casts, the views between complex and real layouts, the lazy
conjugate / negative bits, elementwise ops, reductions, matrix products and autograd.

Marked ``cuda`` (skipped without a device); tests/test_cuda_complex_cpu.py runs them
on the CPU over the stand-in of tests/cuda/fake_device.py."""

import numpy as np
import pytest

import ember

pytestmark = pytest.mark.cuda

DEV = "cuda"
CDT = [ember.complex64, ember.complex128]
_NPC = {ember.complex64: np.complex64, ember.complex128: np.complex128}


def _np(t):
    return t.detach().cpu().resolve_conj().resolve_neg().numpy()


def close(got, ref, rtol=None, atol=None):
    """got (on the device) equals the CPU's ref: dtype, shape and values."""
    assert got.device.type == "cuda", got.device
    assert got.dtype == ref.dtype, (got.dtype, ref.dtype)
    assert tuple(got.shape) == tuple(ref.shape), (tuple(got.shape), tuple(ref.shape))
    g, r = _np(got), _np(ref)
    if g.dtype.kind in "biu":
        np.testing.assert_array_equal(g, r)
        return
    single = got.dtype in (ember.complex64, ember.float32)
    np.testing.assert_allclose(g, r, rtol=rtol or (2e-5 if single else 1e-10),
                               atol=atol or (1e-5 if single else 1e-12))


def cdata(*shape, dtype=ember.complex64, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    v = (rng.uniform(-1, 1, shape) + 1j * rng.uniform(-1, 1, shape)) * scale
    return ember.tensor(v.astype(_NPC[dtype]))


# --- moves, copies, casts ----------------------------------------------------------

@pytest.mark.parametrize("dt", CDT)
def test_moves_and_strided_copies(dt):
    x = cdata(3, 4, dtype=dt)
    d = x.cuda()
    assert d.is_cuda and d.dtype == dt and d.is_complex()
    np.testing.assert_array_equal(d.cpu().numpy(), x.numpy())
    close(d.t().contiguous(), x.t().contiguous())
    close(d[:, ::2].clone(), x[:, ::2].clone())
    close(d.t().cpu().cuda(), x.t())
    e = ember.zeros(4, 3, dtype=dt, device=DEV)
    e.copy_(d.t())
    close(e, x.t().contiguous())
    close(ember.full((2, 2), 1 - 2j, dtype=dt, device=DEV), ember.full((2, 2), 1 - 2j, dtype=dt))


def test_casts_between_real_and_complex_on_device():
    x = cdata(5, dtype=ember.complex128)
    d = x.cuda()
    close(d.to(ember.complex64), x.to(ember.complex64))
    close(d.to(ember.complex64).to(ember.complex128), x.to(ember.complex64).to(ember.complex128))
    r = ember.tensor([1.5, -2.0, 0.0])
    close(r.cuda().to(ember.complex64), r.to(ember.complex64))
    close(ember.arange(4, device=DEV).to(ember.complex128), ember.arange(4).to(ember.complex128))
    with pytest.warns(UserWarning):
        want = x.to(ember.float32)
    with pytest.warns(UserWarning):
        got = d.to(ember.float32)
    close(got, want)
    # a complex tensor written into a real one, and the reverse, on the device
    out = ember.empty(5, device=DEV, dtype=ember.complex64)
    out.copy_(ember.tensor([1.0, 2, 3, 4, 5], device=DEV))
    close(out, ember.tensor([1.0, 2, 3, 4, 5]).to(ember.complex64))


# --- views ---------------------------------------------------------------------------

@pytest.mark.parametrize("dt", CDT)
def test_views_between_complex_and_real(dt):
    x = cdata(2, 3, dtype=dt)
    d = x.cuda()
    close(ember.view_as_real(d), ember.view_as_real(x))
    close(d.real, x.real)
    close(d.imag, x.imag)
    close(ember.view_as_complex(ember.view_as_real(d)), x)
    assert d.real.is_cuda and d.real.dtype == dt.to_real()
    # the views alias the device memory
    d.real.fill_(7.0)
    d.imag[0].zero_()
    want = x.clone()
    want.real.fill_(7.0)
    want.imag[0].zero_()
    close(d, want)
    with pytest.raises(RuntimeError, match="view_as_complex"):
        ember.view_as_complex(ember.ones(3, 2, dtype=ember.int32, device=DEV))
    with pytest.raises(RuntimeError, match="imag is not implemented"):
        ember.ones(2, device=DEV).imag


# --- the lazy bits -------------------------------------------------------------------

def test_conj_is_a_lazy_view_on_device():
    x = cdata(3, 4, dtype=ember.complex128)
    d = x.cuda()
    c = d.conj()
    assert c.is_conj() and c.is_cuda and not d.is_conj()
    close(c, x.conj())
    assert c.data_ptr() == d.data_ptr()          # a view, no copy
    r = c.resolve_conj()
    assert not r.is_conj()
    close(r, x.conj().resolve_conj())
    close(ember.conj_physical(d), ember.conj_physical(x))
    # the imaginary part of a conjugate view carries the negative bit
    im = c.imag
    assert im.is_neg()
    close(im, x.conj().imag)
    close(im.resolve_neg(), x.conj().imag.resolve_neg())
    # views of views keep the bit; copies honour it
    close(c.t().contiguous(), x.conj().t().contiguous())
    close(c.clone(), x.conj().clone())
    close(c.to(ember.complex64), x.conj().to(ember.complex64))
    with pytest.raises(RuntimeError, match="unresolved conjugated"):
        ember.view_as_real(c)


def test_writes_through_conj_views_and_in_place_conjugation():
    x = cdata(2, 3, dtype=ember.complex64, seed=1)
    y = cdata(2, 3, dtype=ember.complex64, seed=2)
    d = x.cuda()
    d.conj().copy_(y.cuda())                      # d stores conj(y)
    close(d, y.conj().resolve_conj())
    d2 = x.cuda()
    d2.conj_physical_()
    close(d2, x.conj_physical())
    d3 = x.cuda()
    d3.conj().mul_(2)                              # through the view: resolved, written back
    w = x.clone()
    w.conj().mul_(2)
    close(d3, w)
    b = x.cuda().expand(3, 2, 3)                   # stride 0: conjugated once
    b = b.clone()
    b.conj_physical_()
    close(b, x.expand(3, 2, 3).conj_physical())


def test_ops_read_conj_and_neg_operands():
    x = cdata(4, dtype=ember.complex128, seed=3)
    y = cdata(4, dtype=ember.complex128, seed=4)
    dx, dy = x.cuda(), y.cuda()
    close(dx.conj() + dy, x.conj() + y)
    close(dx.conj() * dy.conj(), x.conj() * y.conj())
    close(ember.exp(dx.conj()), ember.exp(x.conj()))
    close(dx.conj().imag * 2, x.conj().imag * 2)
    close(ember.sum(dx.conj()), ember.sum(x.conj()))


# --- elementwise ---------------------------------------------------------------------

@pytest.mark.parametrize("dt", CDT)
def test_binary_ops_broadcast_strided_and_scalars(dt):
    x = cdata(3, 4, dtype=dt, seed=5)
    y = cdata(4, dtype=dt, seed=6)
    dx, dy = x.cuda(), y.cuda()
    for op in ("add", "sub", "mul", "div", "pow"):
        f = getattr(ember, op)
        close(f(dx, dy), f(x, y))
        close(f(dx.t(), dx[0:1].t()), f(x.t(), x[0:1].t()))
    close(dx * (2 - 1j), x * (2 - 1j))
    close((1 + 1j) / dx, (1 + 1j) / x)
    close(dx + ember.tensor([1.0, 2, 3, 4], device=DEV), x + ember.tensor([1.0, 2, 3, 4]))
    close(dx ** 2, x ** 2)
    close(dx / 0, x / 0)
    for op in ("eq", "ne", "logical_and", "logical_or", "logical_xor"):
        f = getattr(ember, op)
        close(f(dx, dx[0]), f(x, x[0]))
    a = dx.clone()
    a.add_(dy)
    a.mul_(dy)
    close(a, (x + y) * y)
    o = ember.empty(3, 4, dtype=dt, device=DEV)
    ember.mul(dx, dy, out=o)
    close(o, x * y)


_UNARY = ["neg", "abs", "sgn", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p",
          "sqrt", "rsqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh", "sigmoid",
          "reciprocal", "square", "asin", "acos", "atan", "asinh", "acosh", "atanh"]


@pytest.mark.parametrize("dt", CDT)
def test_unary_ops(dt):
    x = cdata(5, 6, dtype=dt, seed=7, scale=1.5)
    d = x.cuda()
    for op in _UNARY:
        f = getattr(ember, op)
        close(f(d), f(x))
        close(f(d.t()), f(x.t()))
    assert ember.abs(d).dtype == dt.to_real()
    e = d.clone()
    e.exp_()
    close(e, ember.exp(x))


def test_predicates_and_special_values():
    vals = [complex("nan+1j"), complex("inf+0j"), complex("1+infj"), 1 + 1j, 0j, -4 + 0j]
    x = ember.tensor(vals)
    d = x.cuda()
    for op in ("isnan", "isinf", "isfinite", "logical_not"):
        close(getattr(ember, op)(d), getattr(ember, op)(x))
    close(ember.sqrt(d[3:]), ember.sqrt(x[3:]))
    with pytest.raises(RuntimeError, match="torch.sgn"):
        ember.sign(d)


def test_unsupported_complex_ops_raise_naming_op_and_dtype():
    d = cdata(3, dtype=ember.complex64).cuda()
    for f, name in ((ember.erf, "erf"), (ember.relu, "relu"), (ember.floor, "floor")):
        with pytest.raises(RuntimeError, match=f"{name}.*ComplexFloat"):
            f(d)
    with pytest.raises(RuntimeError, match="maximum.*ComplexDouble"):
        ember.maximum(d.to(ember.complex128), d.to(ember.complex128))


@pytest.mark.parametrize("dt", [ember.float32, ember.float64])
def test_constructors_angle_and_polar(dt):
    rng = np.random.default_rng(8)
    re = ember.tensor(rng.standard_normal((2, 3)), dtype=dt)
    im = ember.tensor(rng.standard_normal(3), dtype=dt)
    close(ember.complex(re.cuda(), im.cuda()), ember.complex(re, im))
    close(ember.polar(re.abs().cuda(), im.cuda()), ember.polar(re.abs(), im))
    z = ember.complex(re, im)
    close(ember.angle(z.cuda()), ember.angle(z))
    close(ember.angle(re.cuda()), ember.angle(re))
    close(ember.isreal(z.cuda()), ember.isreal(z))
    with pytest.raises(RuntimeError, match="same device|two devices"):
        ember.complex(re.cuda(), ember.ones(3, dtype=dt))


# --- reductions and products ---------------------------------------------------------

@pytest.mark.parametrize("dt", CDT)
def test_sum_mean_prod(dt):
    x = cdata(3, 4, 5, dtype=dt, seed=9)
    d = x.cuda()
    for op in ("sum", "mean", "prod"):
        f = getattr(ember, op)
        close(f(d), f(x))
        close(f(d, 1), f(x, 1))
        close(f(d, 0, keepdim=True), f(x, 0, keepdim=True))
        close(f(d.transpose(0, 2), 2), f(x.transpose(0, 2), 2))
    close(ember.sum(d, (0, 2)), ember.sum(x, (0, 2)))
    close(ember.sum(ember.ones(3, device=DEV), dtype=dt), ember.sum(ember.ones(3), dtype=dt))
    close(ember.prod(d[0, 0, 0]), ember.prod(x[0, 0, 0]))


@pytest.mark.parametrize("dt", CDT)
def test_matrix_products_and_conj_operands(dt):
    a = cdata(3, 4, dtype=dt, seed=10)
    b = cdata(4, 5, dtype=dt, seed=11)
    da, db = a.cuda(), b.cuda()
    close(ember.mm(da, db), ember.mm(a, b))
    close(da @ db, a @ b)
    close(da.conj() @ db, a.conj() @ b)
    close(da @ db.conj(), a @ b.conj())
    close(da.conj() @ db.conj(), a.conj() @ b.conj())
    close(da @ da.mH, a @ a.mH)
    close(da.mH @ da, a.mH @ a)
    close(da[0] @ db, a[0] @ b)
    ba, bb = cdata(2, 3, 4, dtype=dt, seed=12), cdata(2, 4, 2, dtype=dt, seed=13)
    close(ember.bmm(ba.cuda(), bb.cuda()), ember.bmm(ba, bb))
    close(ember.bmm(ba.cuda().conj(), bb.cuda()), ember.bmm(ba.conj(), bb))
    with pytest.raises(RuntimeError, match="must be a matrix"):
        ember.mm(da[0], db)
    with pytest.raises(RuntimeError, match="same dtype"):
        ember.mm(da, ember.ones(4, 5, device=DEV))
    # a real matmul beside a negative-bit operand
    im = da.conj().imag
    close(im @ ember.ones(4, 2, dtype=dt.to_real(), device=DEV),
          a.conj().imag @ ember.ones(4, 2, dtype=dt.to_real()))


# --- autograd ------------------------------------------------------------------------

def _grads(dev, fn, *xs):
    ts = [x.detach().to(dev).requires_grad_(True) for x in xs]
    out = fn(*ts)
    out.backward()
    return out, [t.grad for t in ts]


@pytest.mark.parametrize("fn", [
    lambda x, y: (x * y).abs().sum(),
    lambda x, y: (ember.exp(x) / (y + 2)).real.sum(),
    lambda x, y: (x @ y.mH).abs().pow(2).sum(),
    lambda x, y: ember.view_as_real(x.conj().resolve_conj() * ember.sin(y)).sum(),
    lambda x, y: ember.angle(x - y).sum() + ember.prod(x, 1).imag.sum(),
    lambda x, y: (ember.sqrt(x) + ember.cos(y) * ember.log(x)).mean().abs(),
])
def test_complex_gradients_match_the_cpu(fn):
    x = cdata(3, 3, dtype=ember.complex128, seed=14)
    y = cdata(3, 3, dtype=ember.complex128, seed=15)
    out_d, g_d = _grads(DEV, fn, x, y)
    out_c, g_c = _grads("cpu", fn, x, y)
    close(out_d, out_c)
    for a, b in zip(g_d, g_c):
        close(a, b)


def test_empty_complex_tensors():
    d = ember.empty(0, 3, dtype=ember.complex64, device=DEV)
    close(d + d, ember.empty(0, 3, dtype=ember.complex64))
    close(ember.exp(d), ember.empty(0, 3, dtype=ember.complex64))
    close(ember.sum(d, 0), ember.zeros(3, dtype=ember.complex64))
    close(ember.prod(d, 0), ember.ones(3, dtype=ember.complex64))
    close(d.conj().clone(), ember.empty(0, 3, dtype=ember.complex64))


@pytest.mark.parametrize("dt", CDT)
def test_var_std_logsumexp_and_linear(dt):
    x = cdata(3, 4, dtype=dt, seed=16, scale=3.0)
    d = x.cuda()
    close(ember.var(d, 1), ember.var(x, 1))
    close(ember.std(d), ember.std(x))
    close(ember.std(d, 0, correction=0, keepdim=True), ember.std(x, 0, correction=0,
                                                                 keepdim=True))
    for a, b in zip(ember.var_mean(d, 1), ember.var_mean(x, 1)):
        close(a, b)
    close(ember.logsumexp(d, 1), ember.logsumexp(x, 1))
    w, b = cdata(2, 4, dtype=dt, seed=17), cdata(2, dtype=dt, seed=18)
    F = ember.nn.functional
    close(F.linear(d, w.cuda(), b.cuda()), F.linear(x, w, b))
    close(F.linear(d, w.cuda()), F.linear(x, w))


def test_ops_without_a_complex_kernel_refuse_clearly():
    d = cdata(4, dtype=ember.complex64).cuda()
    with pytest.raises(RuntimeError, match="cumsum.*ComplexFloat"):
        ember.cumsum(d, 0)
    with pytest.raises(RuntimeError, match="fft.*cuda"):
        ember.fft.fft(d)
    with pytest.raises(RuntimeError, match="fft.*cuda"):
        ember.fft.rfft(d.real)
