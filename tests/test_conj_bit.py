"""The lazy conjugate and negative bits (``conj``, ``is_conj``, ``resolve_conj``,
``conj_physical``, ``is_neg``, ``resolve_neg``): views that share memory, propagation
through views, kernels reading the conjugated values, writes through a conjugate view,
interop errors, serialization and autograd, each against torch."""
import io
import pickle

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _c(rng, *shape, dtype=np.complex64):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def _np(x):
    """the values of an ember or torch tensor, bits resolved"""
    return x.detach().resolve_conj().resolve_neg().numpy()


def _close(e, t, rtol=1e-5, atol=1e-6):
    assert tuple(e.shape) == tuple(t.shape)
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (e.dtype, t.dtype)
    np.testing.assert_allclose(_np(e), _np(t), rtol=rtol, atol=atol)


def _pair(a):
    return ember.tensor(a), torch.tensor(a)


# --- the bit itself ---------------------------------------------------------------

def test_conj_is_a_view_with_the_bit():
    e, t = _pair(_c(np.random.default_rng(0), 3, 4))
    y, ty = e.conj(), t.conj()
    assert y.is_conj() and ember.is_conj(y) and ty.is_conj()
    assert y.data_ptr() == e.data_ptr() and y.untyped_storage().data_ptr() == \
        e.untyped_storage().data_ptr()
    assert not e.is_conj()
    _close(y, ty)
    # conj twice clears the bit; resolving gives new memory only when the bit is set
    assert not y.conj().is_conj() and y.conj().data_ptr() == e.data_ptr()
    assert e.resolve_conj() is e and ember.resolve_conj(e) is e
    r = ember.resolve_conj(y)
    assert not r.is_conj() and r.data_ptr() != e.data_ptr()
    _close(r, torch.resolve_conj(ty))
    p = ember.conj_physical(e)
    assert not p.is_conj() and p.data_ptr() != e.data_ptr()
    _close(p, torch.conj_physical(t))
    _close(ember.conj_physical(y), torch.conj_physical(ty))      # conj of a conj view


def test_real_tensors_are_returned_as_is():
    e = ember.tensor([1.0, -2.0])
    for fn in ("conj", "resolve_conj", "resolve_neg", "conj_physical"):
        assert getattr(e, fn)() is e, fn
        assert getattr(torch.tensor([1.0]), fn)().is_conj() is False
    assert not e.conj().is_conj() and not ember.is_neg(e)


@pytest.mark.parametrize("name,fn", [
    ("view", lambda x: x.view(12)),
    ("view_as_dims", lambda x: x.view(2, 6)),
    ("reshape_view", lambda x: x.reshape(4, 3)),
    ("reshape_copy", lambda x: x.t().reshape(12)),
    ("t", lambda x: x.t()),
    ("transpose", lambda x: x.transpose(0, 1)),
    ("permute", lambda x: x.permute(1, 0)),
    ("mT", lambda x: x.mT),
    ("slice", lambda x: x[1:, ::2]),
    ("select", lambda x: x[1]),
    ("expand", lambda x: x[:1].expand(5, 4)),
    ("unsqueeze", lambda x: x.unsqueeze(1)),
    ("squeeze", lambda x: x[:1].squeeze(0)),
    ("narrow", lambda x: x.narrow(1, 1, 2)),
    ("diagonal", lambda x: x.diagonal()),
    ("as_strided", lambda x: x.as_strided((2, 2), (1, 4), 1)),
    ("unfold", lambda x: x.unfold(1, 2, 1)),
    ("flatten", lambda x: x.flatten()),
    ("detach", lambda x: x.detach()),
    ("contiguous", lambda x: x.contiguous()),
    ("contiguous_copy", lambda x: x.t().contiguous()),
    ("clone", lambda x: x.clone()),
    ("to_same", lambda x: x.to(x.dtype)),
    ("to_other", lambda x: x.to(torch.complex128 if isinstance(x, torch.Tensor)
                                else ember.complex128)),
    ("mH", lambda x: x.mH),
    ("H", lambda x: x.H),
    ("adjoint", lambda x: x.adjoint()),
    ("real", lambda x: x.real),
    ("imag", lambda x: x.imag),
])
def test_views_and_copies_carry_the_bits_as_torch(name, fn):
    e, t = _pair(_c(np.random.default_rng(1), 3, 4))
    re, rt = fn(e.conj()), fn(t.conj())
    assert re.is_conj() == rt.is_conj(), name
    assert re.is_neg() == rt.is_neg(), name
    _close(re, rt)


def test_imag_of_a_conj_view_is_a_negative_view():
    e, t = _pair(_c(np.random.default_rng(2), 5))
    im, tim = e.conj().imag, t.conj().imag
    assert ember.is_neg(im) and tim.is_neg()
    assert not im.is_conj()
    _close(im, tim)
    _close(ember.resolve_neg(im), torch.resolve_neg(tim))
    assert not ember.resolve_neg(im).is_neg()
    # a kernel reads the negated values: unary, binary, reduction
    _close(im.exp(), tim.exp())
    _close(im * ember.arange(5.0), tim * torch.arange(5.0))
    _close(im.sum(), tim.sum())
    _close(ember.special.erf(im), torch.special.erf(tim))
    # the conjugate of a negative view keeps the negative bit (a real tensor: itself)
    assert im.conj() is im
    # a write through it lands negated in the complex base
    im.fill_(1.5)
    tim.fill_(1.5)
    _close(e, t)


# --- kernels see the conjugated values ----------------------------------------------

@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_ops_read_the_conjugated_values(dtype):
    rng = np.random.default_rng(3)
    a, b = _c(rng, 3, 4, dtype=dtype), _c(rng, 4, dtype=dtype)
    (ea, ta), (eb, tb) = _pair(a), _pair(b)
    ya, tya = ea.conj(), ta.conj()
    tol = {"rtol": 1e-5, "atol": 1e-5}
    for fn in (lambda x, y: x + y, lambda x, y: x * y, lambda x, y: x / (y + 3),
               lambda x, y: y - x, lambda x, y: x.exp(), lambda x, y: x.abs(),
               lambda x, y: x.angle(), lambda x, y: x.sgn(), lambda x, y: x.sqrt(),
               lambda x, y: x.sum(), lambda x, y: x.sum(0), lambda x, y: x.mean(1),
               lambda x, y: x.prod(1), lambda x, y: x.cumsum(1), lambda x, y: x.var(0),
               lambda x, y: x.t() @ x, lambda x, y: x @ y, lambda x, y: y @ x.t(),
               lambda x, y: x == y, lambda x, y: x == x.conj_physical().conj_physical(),
               lambda x, y: x.isclose(x), lambda x, y: x.reciprocal(),
               lambda x, y: x.flip(0), lambda x, y: x.roll(1, 1), lambda x, y: x.tril(),
               lambda x, y: x[[0, 2]], lambda x, y: x[x.real > 0],
               lambda x, y: x.index_select(1, type(y.real)([0, 3]).long()),
               lambda x, y: x.masked_fill(x.real > 0, 0), lambda x, y: x.repeat(2, 1),
               lambda x, y: x.pow(2), lambda x, y: x.square(), lambda x, y: x.log()):
        _close(fn(ya, eb.conj()), fn(tya, tb.conj()), **tol)
    _close(ember.cat([ya, ea]), torch.cat([tya, ta]))
    _close(ember.stack([ya, ea]), torch.stack([tya, ta]))
    _close(ember.where(ea.real > 0, ya, ea), torch.where(ta.real > 0, tya, ta))
    _close(ember.fft.fft(ya), torch.fft.fft(tya), **tol)
    _close(ember.fft.ifft(ya, dim=0), torch.fft.ifft(tya, dim=0), **tol)
    _close(ember.view_as_real(ya.resolve_conj()), torch.view_as_real(tya.resolve_conj()))
    sq = a[:, :3] @ a[:, :3].conj().T + 4 * np.eye(3, dtype=dtype)
    (es, ts) = _pair(sq)
    _close(ember.linalg.inv(es.conj()), torch.linalg.inv(ts.conj()), rtol=1e-4, atol=1e-4)
    _close(ember.linalg.solve(es.mH, ya[:, :2]), torch.linalg.solve(ts.mH, tya[:, :2]),
           rtol=1e-4, atol=1e-4)
    _close(ember.linalg.det(es.conj()), torch.linalg.det(ts.conj()), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("which", ["a", "b", "both", "mH"])
def test_matmul_with_conjugate_operands(dtype, which):
    rng = np.random.default_rng(4)
    (ea, ta), (eb, tb) = _pair(_c(rng, 2, 5, 3, dtype=dtype)), _pair(_c(rng, 2, 3, 4,
                                                                      dtype=dtype))
    if which == "a":
        args = (ea.conj(), eb), (ta.conj(), tb)
    elif which == "b":
        args = (ea, eb.conj()), (ta, tb.conj())
    elif which == "both":
        args = (ea.conj(), eb.conj()), (ta.conj(), tb.conj())
    else:
        args = (ea, ea.mH), (ta, ta.mH)
    tol = {"rtol": 1e-5, "atol": 1e-5}
    _close(ember.matmul(*args[0]), torch.matmul(*args[1]), **tol)
    _close(ember.bmm(*args[0]), torch.bmm(*args[1]), **tol)
    _close(ember.mm(args[0][0][0], args[0][1][1]), torch.mm(args[1][0][0], args[1][1][1]),
           **tol)
    _close(args[0][0][1] @ args[0][1][0], args[1][0][1] @ args[1][1][0], **tol)   # 1-D @ 2-D
    _close(ember.vdot(ea[0, 0], ea[0, 1].conj()), torch.vdot(ta[0, 0], ta[0, 1].conj()), **tol)
    _close(ember.dot(ea[0, 0].conj(), ea[0, 1]), torch.dot(ta[0, 0].conj(), ta[0, 1]), **tol)
    _close(ember.dot(ea[0, 0], ea[0, 1].conj()), torch.dot(ta[0, 0], ta[0, 1].conj()), **tol)


def test_values_printing_comparison_and_python_values():
    a = np.array([[1 + 2j, -3.5 - 0.25j], [0.5j, 4]], np.complex64)
    e, t = _pair(a)
    y, ty = e.conj(), t.conj()
    assert repr(y) == repr(ty).replace("torch", "ember")
    assert repr(y.imag) == repr(ty.imag).replace("torch", "ember")
    assert y.tolist() == ty.tolist()
    assert y[0, 0].item() == ty[0, 0].item() == 1 - 2j
    assert complex(y[1, 0]) == complex(ty[1, 0])
    assert y.imag.tolist() == ty.imag.tolist()
    assert (y == e).tolist() == (ty == t).tolist()
    assert ember.equal(y, e.conj_physical()) and not ember.equal(y, e)
    assert ember.allclose(y, ember.tensor(a.conj()))


# --- writes through a conjugate view ------------------------------------------------

_WRITES = {
    "add_": lambda y, m: y.add_(1 + 2j),
    "mul_": lambda y, m: y.mul_(2j),
    "sub_tensor": lambda y, m: y.sub_(y * 0.5),
    "copy_": lambda y, m: y.copy_(m.ones_like(y) * (3 - 1j)),
    "fill_": lambda y, m: y.fill_(2 - 5j),
    "zero_": lambda y, m: y.zero_(),
    "setitem": lambda y, m: y.__setitem__((0, slice(None)), 7 + 1j),
    "setitem_tensor": lambda y, m: y.__setitem__(1, m.full((4,), 1 - 1j)),
    "setitem_mask": lambda y, m: y.__setitem__(y.real > 0, 3j),
    "setitem_index": lambda y, m: y.__setitem__((m.tensor([0, 2]), m.tensor([1, 3])), 2 + 1j),
    "index_put_": lambda y, m: y.index_put_((m.tensor([1]),), m.tensor(1j)),
    "scatter_": lambda y, m: y.scatter_(1, m.tensor([[0], [1], [2]]), 5j),
    "neg_": lambda y, m: y.neg_(),
    "slice_add_": lambda y, m: y[:, 1:3].add_(1j),
    "t_mul_": lambda y, m: y.t().mul_(1 + 1j),
    "conj_physical_": lambda y, m: y.conj_physical_(),
    "exp_": lambda y, m: y.exp_(),
    "masked_fill_": lambda y, m: y.masked_fill_(y.real > 0, 1j),
    "out=": lambda y, m: m.add(m.ones_like(y), 1j * m.ones_like(y), out=y),
    "mm_out": lambda y, m: m.mm(m.ones(3, 2, dtype=y.dtype) * 1j,
                                m.ones(2, 4, dtype=y.dtype) + 2, out=y),
    "sum_out": lambda y, m: m.sum(m.ones(2, 3, 4, dtype=y.dtype) * (1 + 1j), 0, out=y),
    "exp_out": lambda y, m: m.exp(m.ones(3, 4, dtype=y.dtype) * 1j, out=y),
    "dot_out": lambda y, m: m.dot(m.ones(3, dtype=y.dtype) * 1j, m.ones(3, dtype=y.dtype) + 2j,
                                  out=y[0, 0]),
    "imag_fill_": lambda y, m: y.imag.fill_(0.25),
    "real_add_": lambda y, m: y.real.add_(1),
}


@pytest.mark.parametrize("name", sorted(_WRITES))
def test_writes_through_a_conj_view_reach_the_base_as_torch(name):
    a = _c(np.random.default_rng(5), 3, 4)
    e, t = _pair(a)
    ye, yt = e.conj(), t.conj()
    re = _WRITES[name](ye, ember)
    rt = _WRITES[name](yt, torch)
    assert ye.is_conj() and yt.is_conj()
    _close(e, t)
    _close(ye, yt)
    if isinstance(rt, torch.Tensor) and rt is yt:
        assert re is ye


def test_version_counter_and_in_place_on_real_of_conj():
    e = ember.tensor(_c(np.random.default_rng(6), 3))
    y = e.conj()
    v = e._version
    y.add_(1)
    assert e._version > v


# --- interop -------------------------------------------------------------------------

def test_numpy_dlpack_and_view_as_real_refuse_a_conj_view():
    e, t = _pair(_c(np.random.default_rng(7), 3))
    y, ty = e.conj(), t.conj()
    with pytest.raises(RuntimeError) as ee:
        y.numpy()
    with pytest.raises(RuntimeError) as te:
        ty.numpy()
    assert str(ee.value) == str(te.value)
    with pytest.raises(RuntimeError, match="conjugate bit"):
        np.asarray(y)
    with pytest.raises(RuntimeError) as ee:
        ember.view_as_real(y)
    with pytest.raises(RuntimeError) as te:
        torch.view_as_real(ty)
    assert str(ee.value) == str(te.value)
    with pytest.raises(BufferError, match="conjugate bit"):
        y.__dlpack__()
    with pytest.raises(BufferError, match="conjugate bit"):
        ty.__dlpack__()
    with pytest.raises(RuntimeError, match="negative bit"):
        y.imag.numpy()
    with pytest.raises(RuntimeError, match="negative bit"):
        ty.imag.numpy()
    np.testing.assert_array_equal(y.numpy(force=True), ty.numpy(force=True))
    np.testing.assert_array_equal(y.resolve_conj().numpy(), ty.resolve_conj().numpy())
    # a copy exported through DLPack holds the values
    np.testing.assert_array_equal(torch.from_dlpack(y.resolve_conj()).numpy(),
                                  ty.resolve_conj().numpy())


def test_save_load_and_pickle_keep_the_conjugation(tmp_path):
    a = _c(np.random.default_rng(8), 2, 3)
    e, t = _pair(a)
    b = _c(np.random.default_rng(80), 4)
    # (torch's format keeps one dtype per storage: the negative view has its own)
    obj = {"c": e.conj(), "n": ember.tensor(b).conj().imag, "plain": e}
    for fmt in ("ember", "torch"):
        f = tmp_path / f"x_{fmt}.pt"
        ember.save(obj, f, **({} if fmt == "torch" else {"format": "ember"}))
        back = ember.load(f)
        assert back["c"].is_conj() and back["n"].is_neg() and not back["plain"].is_conj()
        np.testing.assert_array_equal(_np(back["c"]), a.conj())
        np.testing.assert_array_equal(_np(back["n"]), -b.imag)
        # the views still share the loaded storage
        assert back["c"].data_ptr() == back["plain"].data_ptr()
        if fmt == "torch":
            tb = torch.load(f, weights_only=True)
            assert tb["c"].is_conj() and tb["n"].is_neg()
            np.testing.assert_array_equal(_np(tb["c"]), a.conj())
            np.testing.assert_array_equal(_np(tb["n"]), -b.imag)
    # torch's files with the bits load into ember with them
    buf = io.BytesIO()
    torch.save({"c": t.conj(), "n": torch.tensor(b).conj().imag}, buf)
    buf.seek(0)
    back = ember.load(buf)
    assert back["c"].is_conj() and back["n"].is_neg()
    np.testing.assert_array_equal(_np(back["c"]), a.conj())
    np.testing.assert_array_equal(_np(back["n"]), -b.imag)
    p = pickle.loads(pickle.dumps(e.conj()))
    assert p.is_conj()
    np.testing.assert_array_equal(_np(p), a.conj())
    p = pickle.loads(pickle.dumps(e.conj().imag))
    assert p.is_neg()
    np.testing.assert_array_equal(_np(p), -a.imag)
    # safetensors has no bits: the values are stored
    from ember.serialization import load_safetensors, save_safetensors
    f = tmp_path / "x.safetensors"
    save_safetensors({"n": e.conj().imag}, f)
    np.testing.assert_array_equal(load_safetensors(f)["n"].numpy(), -a.imag)


# --- autograd ------------------------------------------------------------------------

def _grads(mod, fn, arrays):
    xs = [mod.tensor(a, requires_grad=True) for a in arrays]
    loss = fn(mod, *xs)
    loss.backward()
    return [x.grad for x in xs]


_LOSSES = {
    "conj_mul": lambda m, x, w: (x.conj() * w).real.sum(),
    "conj_abs": lambda m, x, w: (x.conj() * x).abs().sum() + (x.conj() + w).imag.sum(),
    "conj_matmul": lambda m, x, w: (x.conj().t() @ w).real.sum(),
    "mH_matmul": lambda m, x, w: ((x @ w.mH) * (1 + 2j)).imag.pow(2).sum(),
    "conj_views": lambda m, x, w: (x.conj()[1:].t().reshape(-1) * w.flatten()[:8]).real.sum(),
    "imag_of_conj": lambda m, x, w: (x.conj().imag * 3).sum() + x.conj().real.sum(),
    "resolve": lambda m, x, w: (m.resolve_conj(x.conj()) * w).imag.sum(),
    "conj_physical": lambda m, x, w: (m.conj_physical(x) * w).imag.sum(),
    "sum_of_conj": lambda m, x, w: (x.conj().sum(0) * w[0]).real.sum(),
}


@pytest.mark.parametrize("name", sorted(_LOSSES))
def test_gradients_through_conj_views_match_torch(name):
    rng = np.random.default_rng(9)
    arrays = (_c(rng, 3, 4, dtype=np.complex128), _c(rng, 3, 4, dtype=np.complex128))
    ge = _grads(ember, _LOSSES[name], arrays)
    gt = _grads(torch, _LOSSES[name], arrays)
    for a, b in zip(ge, gt):
        assert (a is None) == (b is None)
        if a is not None:
            assert not a.is_conj()
            _close(a, b, rtol=1e-10, atol=1e-10)


def test_gradients_of_writes_through_a_conj_view_match_torch():
    rng = np.random.default_rng(10)
    arrays = (_c(rng, 3, 4, dtype=np.complex128), _c(rng, 3, 4, dtype=np.complex128))

    def loss(m, x, w):
        y = x * 1                    # a non-leaf base
        z = y.conj()
        z[0].mul_(w[0])              # written through the conjugate view
        z.add_(w)
        return (y * (2 - 1j)).real.sum() + (z * w).imag.sum()

    ge = _grads(ember, loss, arrays)
    gt = _grads(torch, loss, arrays)
    for a, b in zip(ge, gt):
        _close(a, b, rtol=1e-10, atol=1e-10)


def test_in_place_on_a_view_of_a_leaf_is_refused():
    x = ember.tensor(_c(np.random.default_rng(11), 3), requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        x.conj().add_(1)


def test_compile_with_conj_matches_eager():
    rng = np.random.default_rng(12)
    a, b = ember.tensor(_c(rng, 4, 4)), ember.tensor(_c(rng, 4, 4))

    def f(x, y):
        return (x.conj() @ y + x.mH).sum(0) * 2

    eager = f(a, b)
    compiled = ember.compile(f)(a, b)
    np.testing.assert_allclose(_np(compiled), _np(eager), rtol=1e-5, atol=1e-5)
    ta, tb = torch.tensor(a.numpy()), torch.tensor(b.numpy())
    np.testing.assert_allclose(_np(eager), _np(f(ta, tb)), rtol=1e-5, atol=1e-5)


def test_compiled_function_reads_lazy_arguments_through_their_bits():
    x = ember.tensor(_c(np.random.default_rng(13), 1000))
    f = ember.compile(lambda t: t * 2 + 1)
    for _ in range(3):              # the first call captures, the later ones replay
        for arg in (x.imag, x.conj().imag, x.conj()):
            np.testing.assert_allclose(_np(f(arg)), _np(arg) * 2 + 1, rtol=1e-6)


def test_gradients_of_a_conj_view_whose_base_was_written_match_torch():
    rng = np.random.default_rng(14)
    arrays = (_c(rng, 3, 4, dtype=np.complex128), _c(rng, 3, 4, dtype=np.complex128))

    def loss(m, x, w):
        y = x * 1
        z = y.conj()              # a conjugate view ...
        n = z.imag                # ... and a negative one
        y.mul_(w)                 # the base is written after the views were taken
        return (z * (1 + 2j)).real.sum() + (n * 3).sum() + y.real[1:].pow(2).sum()

    ge = _grads(ember, loss, arrays)
    gt = _grads(torch, loss, arrays)
    for a, b in zip(ge, gt):
        _close(a, b, rtol=1e-10, atol=1e-10)
