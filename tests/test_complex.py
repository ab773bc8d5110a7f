"""Complex dtypes: creation, printing, promotion, casts, views, elementwise math,
reductions, matmul, interop and autograd (torch's conjugate Wirtinger convention),
each against torch."""
import pickle
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _c(rng, *shape, dtype=np.complex64):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def _close(e, t, rtol=1e-5, atol=1e-6):
    t = t.detach().resolve_conj() if hasattr(t, "resolve_conj") else t
    assert tuple(e.shape) == tuple(t.shape)
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (e.dtype, t.dtype)
    np.testing.assert_allclose(e.detach().resolve_conj().resolve_neg().numpy(),
                               t.resolve_neg().numpy(), rtol=rtol, atol=atol)


# --- dtypes, creation, printing ------------------------------------------------

def test_dtype_objects_and_aliases():
    assert ember.cfloat is ember.complex64 and ember.cdouble is ember.complex128
    assert ember.complex64.is_complex and not ember.complex64.is_floating_point
    assert ember.complex128.itemsize == 16 and ember.complex64.itemsize == 8
    assert ember.complex64.to_real() is ember.float32
    assert ember.float64.to_complex() is ember.complex128
    assert pickle.loads(pickle.dumps(ember.complex128)) is ember.complex128
    assert ember.finfo(ember.complex64).eps == torch.finfo(torch.complex64).eps


@pytest.mark.parametrize("method", ["cfloat", "cdouble"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.complex64])
def test_cfloat_cdouble_methods(method, dtype):
    a = np.random.default_rng(0).standard_normal((2, 3))
    a = (a + 1j * a[::-1]).astype(dtype) if dtype is np.complex64 else (a * 3).astype(dtype)
    _close(getattr(ember.tensor(a), method)(), getattr(torch.tensor(a), method)())
    x = ember.tensor(a.real.astype(np.float64), requires_grad=True)
    getattr(x, method)().real.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((2, 3)))


@pytest.mark.parametrize("data", [[1 + 2j, 3 - 1j], [[1, 2j], [3.5, -4]], 2j, [1.0, 1j, True]])
def test_tensor_from_python_complex(data):
    _close(ember.tensor(data), torch.tensor(data))


def test_default_complex_follows_default_float():
    try:
        ember.set_default_dtype(ember.float64)
        torch.set_default_dtype(torch.float64)
        assert ember.tensor([1j]).dtype is ember.complex128
        assert ember.result_type(ember.ones(2, dtype=ember.int32), 1j) is ember.complex128
    finally:
        ember.set_default_dtype(ember.float32)
        torch.set_default_dtype(torch.float32)
    assert ember.tensor([1j]).dtype is ember.complex64


@pytest.mark.parametrize("dt", ["complex64", "complex128"])
def test_factories(dt):
    ed, td = getattr(ember, dt), getattr(torch, dt)
    _close(ember.zeros(2, 3, dtype=ed), torch.zeros(2, 3, dtype=td))
    _close(ember.ones(2, dtype=ed), torch.ones(2, dtype=td))
    _close(ember.full((2, 2), 1 - 2j, dtype=ed), torch.full((2, 2), 1 - 2j, dtype=td))
    assert ember.empty(3, dtype=ed).dtype is ed
    _close(ember.eye(3, dtype=ed), torch.eye(3, dtype=td))
    r = ember.randn(4000, dtype=ed)
    assert r.dtype is ed
    # torch's complex randn: each part has variance 1/2
    assert abs(float(r.real.var()) - 0.5) < 0.05 and abs(float(r.imag.var()) - 0.5) < 0.05
    assert abs(complex(r.mean().item())) < 0.1


def test_full_infers_complex_dtype():
    assert str(ember.full((2,), 1j).dtype) == str(torch.full((2,), 1j).dtype).replace(
        "torch", "ember")


@pytest.mark.parametrize("data", [[1 + 2j, 3.5 - 1j], [[1e-5 + 1j, 2j], [3, 4]], [0j, -1 - 1j],
                                  [1.25 + 0.5j], 3 + 4j])
def test_printing_matches_torch(data):
    e, t = ember.tensor(data), torch.tensor(data)
    assert repr(e) == repr(t).replace("torch", "ember")
    e2, t2 = e.to(ember.complex128), t.to(torch.complex128)
    assert repr(e2) == repr(t2).replace("torch", "ember")


# --- promotion and casts -------------------------------------------------------

_TYPES = ["bool", "uint8", "int32", "int64", "float16", "float32", "float64", "complex64",
          "complex128"]


@pytest.mark.parametrize("a", _TYPES)
@pytest.mark.parametrize("b", ["complex64", "complex128"])
def test_promote_types(a, b):
    got = ember.promote_types(getattr(ember, a), getattr(ember, b))
    assert str(got).split(".")[-1] == str(torch.promote_types(getattr(torch, a),
                                                              getattr(torch, b))).split(".")[-1]


@pytest.mark.parametrize("a", ["int64", "float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("zero_dim", [False, True])
def test_result_type_with_scalars_and_zero_dim(a, zero_dim):
    ea = ember.ones(() if zero_dim else (2,), dtype=getattr(ember, a))
    ta = torch.ones(() if zero_dim else (2,), dtype=getattr(torch, a))
    for other in (1j, 2.5, 3, True):
        assert str(ember.result_type(ea, other)).split(".")[-1] == \
            str(torch.result_type(ta, other)).split(".")[-1], other
    for od in ("complex64", "complex128", "float64"):
        eo = ember.ones((), dtype=getattr(ember, od))
        to = torch.ones((), dtype=getattr(torch, od))
        assert str(ember.result_type(ea, eo)).split(".")[-1] == \
            str(torch.result_type(ta, to)).split(".")[-1], od


def test_casts_complex_to_real_warn_and_drop_imaginary():
    e = ember.tensor([1.5 + 2j, -3 - 1j])
    with pytest.warns(UserWarning, match="discards the imaginary part"):
        r = e.to(ember.float64)
    np.testing.assert_array_equal(r.numpy(), [1.5, -3.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert e.to(ember.complex128).tolist() == [1.5 + 2j, -3 - 1j]
        assert ember.tensor([1, 2]).to(ember.complex64).tolist() == [1 + 0j, 2 + 0j]
    assert ember.tensor([3.0]).item() == 3.0 and ember.tensor([3 + 1j]).item() == 3 + 1j
    assert complex(ember.tensor(2 - 1j)) == 2 - 1j


def test_numpy_and_dlpack_interop():
    rng = np.random.default_rng(0)
    for dt in (np.complex64, np.complex128):
        a = _c(rng, 3, 4, dtype=dt)
        e = ember.from_numpy(a)
        assert e.dtype is (ember.complex64 if dt == np.complex64 else ember.complex128)
        np.testing.assert_array_equal(e.numpy(), a)
        e[0, 0] = 7 + 7j                            # shares memory
        assert a[0, 0] == 7 + 7j
        t = torch.from_dlpack(e)
        np.testing.assert_array_equal(t.numpy(), a)
        back = ember.from_dlpack(torch.tensor(a))
        np.testing.assert_array_equal(back.numpy(), a)


def test_save_load_roundtrip_and_torch_interop(tmp_path):
    rng = np.random.default_rng(1)
    a = _c(rng, 2, 3, dtype=np.complex128)
    p = tmp_path / "c.pt"
    ember.save({"x": ember.tensor(a)}, p)
    np.testing.assert_array_equal(ember.load(p)["x"].numpy(), a)
    np.testing.assert_array_equal(torch.load(p)["x"].numpy(), a)
    torch.save({"y": torch.tensor(a.astype(np.complex64))}, p)
    np.testing.assert_array_equal(ember.load(p)["y"].numpy(), a.astype(np.complex64))


# --- views ---------------------------------------------------------------------

def test_views_share_memory():
    rng = np.random.default_rng(2)
    a = _c(rng, 3, 4)
    e, t = ember.tensor(a), torch.tensor(a)
    _close(ember.view_as_real(e), torch.view_as_real(t))
    _close(e.real, t.real)
    _close(e.imag, t.imag)
    _close(ember.real(e), torch.real(t))
    _close(ember.imag(e.t()), torch.imag(t.t()))
    e.imag[0, 0] = 5.0
    assert e[0, 0].item().imag == 5.0
    e.real = ember.zeros(3, 4)
    assert float(ember.view_as_real(e)[..., 0].abs().sum()) == 0
    r = np.random.default_rng(3).standard_normal((2, 3, 2)).astype(np.float32)
    _close(ember.view_as_complex(ember.tensor(r)), torch.view_as_complex(torch.tensor(r)))
    x = ember.tensor([1.0, 2.0])
    assert ember.real(x) is x
    with pytest.raises(RuntimeError, match="imag is not implemented"):
        ember.imag(x)
    with pytest.raises(RuntimeError, match="last dimension of size 2"):
        ember.view_as_complex(ember.zeros(3, 3))
    with pytest.raises(RuntimeError, match="complex tensors"):
        ember.view_as_real(ember.zeros(3))


def test_indexing_cat_stack_for_sixteen_byte_items():
    rng = np.random.default_rng(4)
    a, b = _c(rng, 4, 5, dtype=np.complex128), _c(rng, 4, 5, dtype=np.complex128)
    ea, eb, ta, tb = ember.tensor(a), ember.tensor(b), torch.tensor(a), torch.tensor(b)
    _close(ea[1:3, ::2], ta[1:3, ::2])
    _close(ea[ember.tensor([3, 0])], ta[torch.tensor([3, 0])])
    _close(ea[ea.real > 0], ta[ta.real > 0])
    _close(ember.cat([ea, eb], 1), torch.cat([ta, tb], 1))
    _close(ember.stack([ea, eb]), torch.stack([ta, tb]))
    _close(ea.t().contiguous(), ta.t().contiguous())
    _close(ember.where(ea.real > 0, ea, eb), torch.where(ta.real > 0, ta, tb))
    _close(ea.flip(0), ta.flip(0))
    _close(ea.gather(1, ember.tensor([[0, 1]] * 4)), ta.gather(1, torch.tensor([[0, 1]] * 4)))
    ec, tc = ea.clone(), ta.clone()
    ec[:, 1] = 2 - 3j
    tc[:, 1] = 2 - 3j
    _close(ec, tc)
    ec.masked_fill_(ec.real > 1, 1j)
    tc.masked_fill_(tc.real > 1, 1j)
    _close(ec, tc)
    _close(ea.index_add(0, ember.tensor([0, 0, 1, 2]), eb),
           ta.index_add(0, torch.tensor([0, 0, 1, 2]), tb))


# --- elementwise -----------------------------------------------------------------

_BINARY = ["add", "sub", "mul", "div", "pow"]


@pytest.mark.parametrize("op", _BINARY)
@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_binary_ops_broadcast_and_scalars(op, dt):
    rng = np.random.default_rng(5)
    a, b = _c(rng, 3, 4, dtype=dt), _c(rng, 4, dtype=dt)
    ef, tf = getattr(ember, op), getattr(torch, op)
    rtol = 1e-4 if dt == np.complex64 else 1e-10
    _close(ef(ember.tensor(a), ember.tensor(b)), tf(torch.tensor(a), torch.tensor(b)), rtol=rtol)
    for s in (2, 1.5, 0.5 - 2j):
        _close(ef(ember.tensor(a), s), tf(torch.tensor(a), s), rtol=rtol)
    # real tensor with a complex one, and a real tensor with a complex scalar
    r = rng.standard_normal(4).astype(np.float32)
    _close(ef(ember.tensor(r), ember.tensor(b)), tf(torch.tensor(r), torch.tensor(b)), rtol=rtol)
    _close(ef(ember.tensor(r), 1j), tf(torch.tensor(r), 1j), rtol=rtol)


def test_operators_and_division_by_zero():
    e, t = ember.tensor([1 + 1j, 0j, 2 - 1j]), torch.tensor([1 + 1j, 0j, 2 - 1j])
    _close(-e, -t)
    _close(e * 2j + 1, t * 2j + 1)
    _close(1 / (e + 1), 1 / (t + 1))
    _close(e / 0, t / 0)
    _close(e ** 2, t ** 2)
    _close(e == e.conj(), t == t.conj())
    _close(e != 0, t != 0)


_UNARY = ["exp", "log", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh", "reciprocal",
          "rsqrt", "sigmoid", "asin", "acos", "atan", "asinh", "acosh", "atanh", "expm1",
          "log1p", "log2", "log10", "square", "neg", "sgn", "abs", "angle", "isnan", "isinf",
          "isfinite", "conj_physical", "exp2"]


@pytest.mark.parametrize("op", _UNARY)
@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_unary_ops(op, dt):
    rng = np.random.default_rng(6)
    a = _c(rng, 5, 6, dtype=dt) * 0.8
    rtol = 2e-5 if dt == np.complex64 else 1e-10
    _close(getattr(ember, op)(ember.tensor(a)), getattr(torch, op)(torch.tensor(a)), rtol=rtol,
           atol=1e-5 if dt == np.complex64 else 1e-12)


def test_special_values_and_sign():
    vals = [complex("nan+1j"), complex("inf+0j"), complex("1+infj"), 1 + 1j, 0j]
    e, t = ember.tensor(vals), torch.tensor(vals)
    for op in ("isnan", "isinf", "isfinite"):
        _close(getattr(ember, op)(e), getattr(torch, op)(t))
    with pytest.raises(RuntimeError, match="torch.sgn"):
        ember.sign(e)
    _close(ember.angle(ember.tensor([-1.0, 2.0, 0.0])), torch.angle(torch.tensor([-1.0, 2.0, 0.0])))
    _close(ember.isreal(e), torch.isreal(t))


def test_complex_and_polar():
    rng = np.random.default_rng(7)
    re, im = rng.standard_normal((2, 3)), rng.standard_normal(3)
    _close(ember.complex(ember.tensor(re), ember.tensor(im)),
           torch.complex(torch.tensor(re), torch.tensor(im)))
    ab, an = np.abs(re), im
    _close(ember.polar(ember.tensor(ab), ember.tensor(an)),
           torch.polar(torch.tensor(ab), torch.tensor(an)), rtol=1e-12)
    with pytest.raises(RuntimeError):
        ember.complex(ember.ones(2), ember.ones(2, dtype=ember.float64))


def test_conj_family():
    e = ember.tensor([1 + 2j, 3 - 4j])
    t = torch.tensor([1 + 2j, 3 - 4j])
    _close(e.conj(), t.conj())
    _close(ember.resolve_conj(e.conj()), torch.resolve_conj(t.conj()))
    assert ember.is_conj(e) is False
    e2 = e.clone()
    e2.conj_physical_()
    _close(e2, t.conj_physical())
    m = ember.tensor([[1 + 1j, 2j], [3, 4 - 1j]])
    tm = torch.tensor([[1 + 1j, 2j], [3, 4 - 1j]])
    _close(m.mH, tm.mH)
    _close(m.H, tm.H)
    _close(m.adjoint(), tm.adjoint())


# --- reductions and products ------------------------------------------------------

@pytest.mark.parametrize("op", ["sum", "mean", "prod"])
@pytest.mark.parametrize("dim", [None, 0, (0, 2), -1])
def test_reductions(op, dim):
    rng = np.random.default_rng(8)
    a = _c(rng, 3, 4, 5, dtype=np.complex128) * 0.7
    e, t = ember.tensor(a), torch.tensor(a)
    if dim is None:
        _close(getattr(ember, op)(e), getattr(torch, op)(t), rtol=1e-10)
    elif op == "prod" and isinstance(dim, tuple):
        return      # torch's prod takes one dim
    else:
        for keep in (False, True):
            _close(getattr(ember, op)(e, dim, keepdim=keep),
                   getattr(torch, op)(t, dim, keepdim=keep), rtol=1e-10)


@pytest.mark.parametrize("shapes", [((3, 4), (4, 5)), ((2, 3, 4), (4,)), ((4,), (4,)),
                                    ((2, 1, 3, 4), (5, 4, 2))])
def test_matmul(shapes):
    rng = np.random.default_rng(9)
    a, b = _c(rng, *shapes[0]), _c(rng, *shapes[1])
    _close(ember.matmul(ember.tensor(a), ember.tensor(b)),
           torch.matmul(torch.tensor(a), torch.tensor(b)), rtol=1e-4, atol=1e-5)
    if len(shapes[0]) == 2 and len(shapes[1]) == 2:
        _close(ember.tensor(a) @ ember.tensor(b), torch.tensor(a) @ torch.tensor(b), rtol=1e-4)
        _close(ember.mm(ember.tensor(a), ember.tensor(b)),
               torch.mm(torch.tensor(a), torch.tensor(b)), rtol=1e-4)


# --- autograd ---------------------------------------------------------------------------

def _grad_parity(fn_e, fn_t, *arrays, rtol=1e-9, atol=1e-10):
    """Gradients of L = Re sum(conj(w) * f(inputs)) for a random complex cotangent w."""
    rng = np.random.default_rng(11)
    es = [ember.tensor(a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    eo, to = fn_e(*es), fn_t(*ts)
    _close(eo, to, rtol=rtol, atol=atol)
    w = rng.standard_normal(tuple(to.shape)) + (1j * rng.standard_normal(tuple(to.shape))
                                                if to.is_complex() else 0)
    w = w.astype(np.complex128 if to.is_complex() else np.float64)
    if to.is_complex():
        le = ember.view_as_real(eo * ember.tensor(w).conj()).select(-1, 0).sum()
        lt = torch.real(to * torch.tensor(w).conj()).sum()
    else:
        le, lt = (eo * ember.tensor(w)).sum(), (to * torch.tensor(w)).sum()
    le.backward()
    lt.backward()
    for e, t in zip(es, ts):
        _close(e.grad, t.grad, rtol=rtol, atol=atol)


_GRAD_CASES = {
    "add": (lambda L: lambda a, b: a + b, 2),
    "sub": (lambda L: lambda a, b: a - b * 2j, 2),
    "mul": (lambda L: lambda a, b: a * b, 2),
    "div": (lambda L: lambda a, b: a / b, 2),
    "abs": (lambda L: lambda a: L.abs(a), 1),
    "real": (lambda L: lambda a: L.real(a) * 3, 1),
    "imag": (lambda L: lambda a: L.imag(a) * 3, 1),
    "view_as_real": (lambda L: lambda a: L.view_as_real(a), 1),
    "exp": (lambda L: lambda a: L.exp(a), 1),
    "sum": (lambda L: lambda a: L.sum(a, 0), 1),
    "mean": (lambda L: lambda a: L.mean(a), 1),
    "matmul": (lambda L: lambda a, b: L.matmul(a, b.t()), 2),
    "sin_sqrt_log": (lambda L: lambda a: L.sin(L.sqrt(a)) + L.log(a), 1),
    "pow": (lambda L: lambda a: a ** 3, 1),
    "conj": (lambda L: lambda a: L.conj_physical(a) * a, 1),
    "angle": (lambda L: lambda a: L.angle(a), 1),
    "sgn": (lambda L: lambda a: L.sgn(a), 1),
    "prod": (lambda L: lambda a: L.prod(a, 1), 1),
}


@pytest.mark.parametrize("name", list(_GRAD_CASES))
def test_autograd_matches_torch(name):
    make, nargs = _GRAD_CASES[name]
    rng = np.random.default_rng(12)
    arrays = [_c(rng, 3, 3, dtype=np.complex128) + 0.5 for _ in range(nargs)]
    _grad_parity(make(ember), make(torch), *arrays)


def test_autograd_real_input_meets_complex():
    rng = np.random.default_rng(13)
    r = rng.standard_normal((3, 3))
    c = _c(rng, 3, 3, dtype=np.complex128)
    _grad_parity(lambda x, y: ember.mul(x, y), lambda x, y: torch.mul(x, y), r, c)
    _grad_parity(lambda x, y: ember.complex(x, y), lambda x, y: torch.complex(x, y), r,
                 rng.standard_normal((3, 3)))
    _grad_parity(lambda x: ember.view_as_complex(x), lambda x: torch.view_as_complex(x),
                 rng.standard_normal((4, 2)))


# --- linalg.eig / eigvals (LAPACK geev) ----------------------------------------------------

@pytest.mark.parametrize("dt", [np.float32, np.float64, np.complex64, np.complex128])
def test_eig_and_eigvals_match_torch(dt):
    rng = np.random.default_rng(14)
    a = rng.standard_normal((2, 6, 6)).astype(dt)
    if np.dtype(dt).kind == "c":
        a = a + 1j * rng.standard_normal((2, 6, 6)).astype(dt)
    tol = 1e-4 if dt in (np.float32, np.complex64) else 1e-10
    w, v = ember.linalg.eig(ember.tensor(a))
    tw, tv = torch.linalg.eig(torch.tensor(a))
    _close(w, tw, rtol=tol, atol=tol)
    assert v.dtype is w.dtype and tuple(v.shape) == tuple(tv.shape)
    vn, tvn = v.numpy(), tv.numpy()
    # eigenvectors are unique up to a unit phase: A v = w v, |v| = 1, |<v, v_torch>| = 1
    np.testing.assert_allclose(a @ vn, vn * w.numpy()[:, None, :], rtol=tol, atol=10 * tol)
    np.testing.assert_allclose(np.linalg.norm(vn, axis=-2), 1, rtol=tol)
    np.testing.assert_allclose(np.abs(np.sum(vn.conj() * tvn, axis=-2)), 1, rtol=10 * tol)
    _close(ember.linalg.eigvals(ember.tensor(a)), torch.linalg.eigvals(torch.tensor(a)),
           rtol=tol, atol=tol)


def test_eig_errors():
    with pytest.raises(RuntimeError, match="square"):
        ember.linalg.eig(ember.ones(2, 3))
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        ember.linalg.eigvals(ember.ones(3))
    with pytest.raises(RuntimeError, match="floating point or complex"):
        ember.linalg.eig(ember.ones(2, 2, dtype=ember.int64))


def test_more_ops_follow_torch():
    rng = np.random.default_rng(15)
    a, b = _c(rng, 5), _c(rng, 5)
    ea, eb, ta, tb = ember.tensor(a), ember.tensor(b), torch.tensor(a), torch.tensor(b)
    _close(ember.dot(ea, eb), torch.dot(ta, tb), rtol=1e-5)
    _close(ember.vdot(ea, eb), torch.vdot(ta, tb), rtol=1e-5)
    _close(ember.outer(ea, eb), torch.outer(ta, tb), rtol=1e-5)
    _close(ember.linalg.vector_norm(ea), torch.linalg.vector_norm(ta))
    _close(ea.norm(), ta.norm())
    z = ember.tensor([0j, 1j, 0j])
    tz = torch.tensor([0j, 1j, 0j])
    for op in ("any", "all", "count_nonzero"):
        _close(getattr(ember, op)(z), getattr(torch, op)(tz))


def test_what_torch_refuses_for_complex_is_refused():
    e = ember.tensor([1 + 1j, -2j])
    with pytest.raises(RuntimeError, match="In-place abs"):
        e.clone().abs_()
    with pytest.raises(NotImplementedError):
        ember.arange(3, dtype=ember.complex64)
    with pytest.raises(NotImplementedError):
        ember.zeros(2, dtype=ember.complex64).scatter_reduce(0, ember.tensor([0, 1]), e, "amax")
    for fn in (lambda: e < 1, lambda: ember.maximum(e, e), lambda: e.floor(), lambda: e // 2,
               lambda: e.sort(), lambda: e.softmax(0)):
        with pytest.raises(RuntimeError):
            fn()
