"""nn.functional.unfold / fold (im2col / col2im) and nn.Unfold / nn.Fold against
PyTorch: forward, gradients, dtypes, layouts and error types and messages."""
import numpy as np
import pytest

import ember
import ember.nn as enn
import ember.nn.functional as EF
from ember.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(7)


def E(a, grad=False):
    return ember.from_numpy(np.array(a, order="C")).requires_grad_(grad)


def N(t):
    return np.asarray(t.detach()).copy()


def rand(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


# (input shape, kernel_size, dilation, padding, stride); 3-D shapes are unbatched
CASES = [
    ((2, 3, 5, 6), 3, 1, 0, 1),
    ((2, 3, 5, 6), (2, 3), 1, 0, 1),
    ((1, 2, 7, 9), (3, 2), (2, 1), (1, 2), (2, 3)),
    ((3, 4, 8, 8), 3, 2, 2, 2),
    ((2, 1, 1, 1), 1, 1, 0, 1),                # size-1 everything
    ((2, 2, 1, 9), (1, 4), 1, (0, 1), (1, 2)),  # H = 1
    ((1, 3, 6, 1), (3, 1), (2, 1), 1, 1),       # W = 1
    ((2, 2, 3, 3), 5, 1, 1, 1),                 # padding lets a too-big kernel fit
    ((1, 2, 4, 5), 3, 1, 3, 4),                 # padding larger than the image, big stride
    ((2, 3, 11, 13), (4, 5), (1, 2), (2, 0), (3, 2)),  # odd sizes, overlaps and gaps
    ((2, 3, 4, 4), [2, 2], [1, 1], [0, 0], [2, 2]),    # lists
    ((3, 5, 6), 2, 1, 1, 2),                    # unbatched
    ((1, 4, 4), (4, 4), 1, 0, 1),               # unbatched, one block
    ((0, 3, 5, 6), 3, 1, 1, 1),                 # empty batch
]
IDS = [f"{'x'.join(map(str, c[0]))}-k{c[1]}-d{c[2]}-p{c[3]}-s{c[4]}" for c in CASES]


def _tol(dtype):
    return dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape,k,d,p,s", CASES, ids=IDS)
def test_unfold_forward_and_grad_vs_torch(torch, shape, k, d, p, s, dtype):
    x = rand(*shape, dtype=dtype)
    tx = torch.tensor(x, requires_grad=True)
    ty = torch.nn.functional.unfold(tx, k, d, p, s)
    ex = E(x, grad=True)
    y = EF.unfold(ex, k, d, p, s)
    assert tuple(y.shape) == tuple(ty.shape)
    assert y.dtype == ex.dtype and y.is_contiguous()
    # a pure copy: bit-identical
    np.testing.assert_array_equal(N(y), ty.detach().numpy())
    g = rand(*ty.shape, dtype=dtype)
    ty.backward(torch.tensor(g))
    y.backward(E(g))
    assert ex.grad.dtype == ex.dtype and tuple(ex.grad.shape) == shape
    np.testing.assert_allclose(N(ex.grad), tx.grad.numpy(), **_tol(dtype))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape,k,d,p,s", CASES, ids=IDS)
def test_fold_forward_and_grad_vs_torch(torch, shape, k, d, p, s, dtype):
    # fold takes unfold's output shape and gives back the image shape
    cols = tuple(torch.nn.functional.unfold(torch.zeros(shape), k, d, p, s).shape)
    out = shape[-2:]
    x = rand(*cols, dtype=dtype)
    tx = torch.tensor(x, requires_grad=True)
    ty = torch.nn.functional.fold(tx, out, k, d, p, s)
    ex = E(x, grad=True)
    y = EF.fold(ex, out, k, d, p, s)
    assert tuple(y.shape) == tuple(ty.shape) == shape
    assert y.dtype == ex.dtype and y.is_contiguous()
    np.testing.assert_allclose(N(y), ty.detach().numpy(), **_tol(dtype))
    g = rand(*shape, dtype=dtype)
    ty.backward(torch.tensor(g))
    y.backward(E(g))
    assert ex.grad.dtype == ex.dtype and tuple(ex.grad.shape) == cols
    np.testing.assert_array_equal(N(ex.grad), tx.grad.numpy())


def test_fold_output_size_differs_from_unfold_input(torch):
    # output_size resolves the ambiguity of strided blocks: 8, 9 and 10 all give 3 blocks
    x = rand(2, 12, 9)
    for out in [(8, 9), (10, 8), 9]:
        ty = torch.nn.functional.fold(torch.tensor(x), out, 2, stride=3)
        y = EF.fold(E(x), out, 2, stride=3)
        np.testing.assert_allclose(N(y), ty.numpy(), rtol=1e-12, atol=1e-12)


def test_fold_unfold_divisor_identity():
    # fold(unfold(x)) == divisor * x with divisor = fold(unfold(ones))
    x = rand(2, 3, 7, 6)
    kw = dict(kernel_size=(3, 2), dilation=(1, 2), padding=1, stride=1)
    y = EF.fold(EF.unfold(E(x), **kw), (7, 6), **kw)
    div = EF.fold(EF.unfold(ember.ones(2, 3, 7, 6, dtype=ember.float64), **kw), (7, 6), **kw)
    np.testing.assert_allclose(N(y), N(div) * x, rtol=1e-12, atol=1e-12)


def test_unfold_matmul_is_conv2d(torch):
    x, w = rand(2, 3, 10, 12), rand(4, 3, 4, 5)
    cols = EF.unfold(E(x), (4, 5), padding=1, stride=2)
    y = ember.matmul(E(w).reshape(4, -1), cols).reshape(2, 4, 5, 5)
    ref = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), padding=1, stride=2)
    np.testing.assert_allclose(N(y), ref.numpy(), rtol=1e-10, atol=1e-10)


def test_non_contiguous_inputs(torch):
    F = torch.nn.functional
    x = rand(2, 6, 5, 3)
    tx = torch.tensor(x).permute(0, 3, 2, 1)      # (2, 3, 5, 6), not contiguous
    ex = E(x).permute(0, 3, 2, 1)
    assert not ex.is_contiguous()
    np.testing.assert_array_equal(N(EF.unfold(ex, 2, padding=1)),
                                  F.unfold(tx, 2, padding=1).numpy())
    c = rand(2, 12, 27)
    ec = E(c).transpose(1, 2)                     # (2, 27, 12) transposed view
    assert not ec.is_contiguous()
    np.testing.assert_allclose(N(EF.fold(ec, (5, 6), 3)),
                               F.fold(torch.tensor(c).transpose(1, 2), (5, 6), 3).numpy(),
                               rtol=1e-12, atol=1e-12)
    c = rand(2, 54, 12)                           # a strided slice
    np.testing.assert_allclose(N(EF.fold(E(c)[:, ::2], (5, 6), 3)),
                               F.fold(torch.tensor(c)[:, ::2], (5, 6), 3).numpy(),
                               rtol=1e-12, atol=1e-12)


def test_unbatched_and_empty_batch_gradients(torch):
    x = rand(0, 2, 4, 4)
    ex = E(x, grad=True)
    EF.unfold(ex, 2).sum().backward()
    assert tuple(ex.grad.shape) == (0, 2, 4, 4)
    c = E(rand(0, 8, 9), grad=True)
    y = EF.fold(c, 4, 2)
    assert tuple(y.shape) == (0, 2, 4, 4)
    y.sum().backward()
    assert tuple(c.grad.shape) == (0, 8, 9)


@pytest.mark.parametrize("fn", ["unfold", "fold"])
def test_gradcheck_and_gradgradcheck(fn):
    kw = dict(kernel_size=(2, 3), dilation=(2, 1), padding=1, stride=(1, 2))
    if fn == "unfold":
        x = E(rand(2, 2, 5, 6), grad=True)

        def f(t):
            return EF.unfold(t, **kw)
    else:
        x = E(rand(2, 12, 15), grad=True)        # 5 x 3 blocks

        def f(t):
            return EF.fold(t, (5, 6), **kw)
    assert gradcheck(f, (x,))
    assert gradgradcheck(f, (x,))


def test_double_backward_vs_torch(torch):
    # d/dx of <grad_x(unfold(x)**2 . g), h> exercises fold inside the backward graph
    x, h = rand(2, 3, 5, 5), rand(2, 3, 5, 5)
    tx = torch.tensor(x, requires_grad=True)
    ty = torch.nn.functional.unfold(tx, 3, padding=1) ** 2
    (tg,) = torch.autograd.grad(ty.sum(), tx, create_graph=True)
    (tg * torch.tensor(h)).sum().backward()
    ex = E(x, grad=True)
    y = EF.unfold(ex, 3, padding=1) ** 2
    (g,) = ember.autograd.grad(y.sum(), ex, create_graph=True)
    np.testing.assert_allclose(N(g), tg.detach().numpy(), rtol=1e-12, atol=1e-12)
    (g * E(h)).sum().backward()
    np.testing.assert_allclose(N(ex.grad), tx.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_grad_fn_names_and_inplace_after_forward(torch):
    x = E(rand(1, 2, 4, 4), grad=True)
    u = EF.unfold(x, 2)
    f = EF.fold(u, 4, 2)
    tx = torch.zeros(1, 2, 4, 4, requires_grad=True)
    tu = torch.nn.functional.unfold(tx, 2)
    tf = torch.nn.functional.fold(tu, 4, 2)
    assert type(u.grad_fn).__name__ == type(tu.grad_fn).__name__ == "Im2ColBackward0"
    assert type(f.grad_fn).__name__ == type(tf.grad_fn).__name__ == "Col2ImBackward0"
    # neither backward reads its input's values: changing it in place is fine (as in torch)
    y = x * 1
    u = EF.unfold(y, 2)
    y.add_(1)
    u.sum().backward()
    np.testing.assert_array_equal(N(x.grad), N(EF.fold(ember.ones_like(u), 4, 2)))


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_half_precision_vs_torch(torch, dt):
    x = rand(2, 3, 6, 5, dtype=np.float32)
    tdt, edt = getattr(torch, dt), getattr(ember, dt)
    tx = torch.tensor(x).to(tdt).requires_grad_()
    ex = E(x).to(edt).requires_grad_()
    ty = torch.nn.functional.unfold(tx, 3, padding=1)
    y = EF.unfold(ex, 3, padding=1)
    assert y.dtype == edt
    np.testing.assert_array_equal(N(y.float()), ty.detach().float().numpy())
    g = rand(*ty.shape, dtype=np.float32)
    ty.backward(torch.tensor(g).to(tdt))
    y.backward(E(g).to(edt))
    assert ex.grad.dtype == edt
    # torch accumulates overlaps in the half type, ember in float32 then rounds once
    tol = 2e-2 if dt == "float16" else 1e-1
    np.testing.assert_allclose(N(ex.grad.float()), tx.grad.float().numpy(), rtol=tol, atol=tol)
    c = rand(2, 12, 42, dtype=np.float32)         # 7 x 6 blocks
    tf = torch.nn.functional.fold(torch.tensor(c).to(tdt), (6, 5), 2, padding=1)
    f = EF.fold(E(c).to(edt), (6, 5), 2, padding=1)
    assert f.dtype == edt
    np.testing.assert_allclose(N(f.float()), tf.float().numpy(), rtol=tol, atol=tol)


def test_bool_vs_torch(torch):
    x = RNG.random((2, 2, 4, 5)) > 0.6
    ty = torch.nn.functional.unfold(torch.tensor(x), 2, padding=1, stride=(1, 2))
    y = EF.unfold(E(x), 2, padding=1, stride=(1, 2))
    assert y.dtype == ember.bool
    np.testing.assert_array_equal(N(y), ty.numpy())
    c = RNG.random((2, 8, 12)) > 0.7
    tf = torch.nn.functional.fold(torch.tensor(c), (4, 5), 2, stride=1)
    f = EF.fold(E(c), (4, 5), 2, stride=1)
    assert f.dtype == ember.bool
    np.testing.assert_array_equal(N(f), tf.numpy())


@pytest.mark.parametrize("dt", ["int32", "int64", "uint8", "int8", "int16"])
def test_integer_dtypes_not_implemented(torch, dt):
    tdt, edt = getattr(torch, dt), getattr(ember, dt)
    with pytest.raises(NotImplementedError) as te:
        torch.nn.functional.unfold(torch.ones(1, 1, 3, 3, dtype=tdt), 2)
    with pytest.raises(NotImplementedError, match="unfold") as ee:
        EF.unfold(ember.ones(1, 1, 3, 3, dtype=edt), 2)
    assert str(te.value).split(" not implemented for ")[1] in str(ee.value)
    with pytest.raises(NotImplementedError):
        torch.nn.functional.fold(torch.ones(1, 4, 4, dtype=tdt), 3, 2)
    with pytest.raises(NotImplementedError, match="fold"):
        EF.fold(ember.ones(1, 4, 4, dtype=edt), 3, 2)


def _x(*shape):
    return rand(*shape)


# (function name, input shape, args, kwargs): each must fail in ember as in torch
UNFOLD_ERRORS = [
    ((2, 3, 5, 6), (0,), {}),
    ((2, 3, 5, 6), (-1,), {}),
    ((2, 3, 5, 6), ((0, 2),), {}),
    ((2, 3, 5, 6), (3,), dict(stride=0)),
    ((2, 3, 5, 6), (3,), dict(dilation=0)),
    ((2, 3, 5, 6), (3,), dict(padding=-1)),
    ((2, 3, 4, 5), (0,), dict(dilation=0, padding=-1, stride=0)),
    ((2, 3, 4, 5), (1,), dict(dilation=0, padding=-1, stride=0)),
    ((2, 3, 4, 5), (1,), dict(padding=-1, stride=0)),
    ((2, 3, 5, 6), (7,), {}),
    ((2, 3, 5, 6), (6,), {}),
    ((2, 3, 5, 6), ((9, 2),), {}),
    ((0, 3, 4, 5), (9,), {}),
    ((2, 3, 5, 6), ((3, 2, 1),), {}),
    ((2, 3, 5, 6), ([3],), {}),
    ((2, 3, 5, 6), (3,), dict(stride=(1, 2, 3))),
    ((2, 3, 5, 6), (3,), dict(padding=(1, 2, 3))),
    ((2, 3, 5, 6), (3,), dict(dilation=[1])),
    ((2, 3, 5, 6), (3.0,), {}),
    ((2, 3, 5, 6), ((3, 3.0),), {}),
    ((2, 3, 5, 6), (True,), {}),
    ((2, 3, 5, 6), (None,), {}),
    ((2, 3, 5, 6), ("3",), {}),
    ((2, 3, 5, 6), (3,), dict(stride=1.0)),
    ((2, 3, 5, 6), ((2, 3, 4),), dict(stride=(1.0,))),
    ((2, 0, 5, 6), (3,), {}),
    ((2, 3, 0, 6), (3,), {}),
    ((0, 5, 6), (1,), {}),
    ((3, 0, 6), (1,), {}),
    ((1, 2, 3, 5, 6), (3,), {}),
    ((5, 6), (3,), {}),
    ((5,), (3,), {}),
    ((), (3,), {}),
    ((5, 6), (0,), {}),
]

FOLD_ERRORS = [
    ((2, 27, 12), (5, 3), {}),
    ((2, 27, 12), ((5, 7), 3), {}),
    ((2, 27, 12), ((5, 6), 2), {}),
    ((2, 27, 12), ((5, 6), 4), {}),
    ((2, 27, 12), ((5, 6), 0), {}),
    ((2, 27, 12), ((5, 6), 3), dict(stride=0)),
    ((2, 27, 12), ((5, 6), 3), dict(dilation=0)),
    ((2, 27, 12), ((5, 6), 3), dict(padding=-1)),
    ((3, 4), (3, 0), dict(dilation=0, padding=-1, stride=0)),
    ((3, 4), (3, 1), dict(dilation=0, padding=-1, stride=0)),
    ((3, 4), (3, 1), dict(dilation=0, padding=-1)),
    ((3, 4), (3, 1), dict(padding=-1)),
    ((2, 27, 12), ((0, 6), 3), {}),
    ((2, 27, 12), ((2, 2), 3), {}),
    ((2, 27, 12), ((5, 6, 1), 3), {}),
    ((2, 27, 12), ((5, 6), (3, 3, 3)), {}),
    ((2, 27, 12), ((5.0, 6), 3), {}),
    ((2, 27, 12), ("ab", 3), {}),
    ((4, 4), ((2, 2, 3), (1, 3.0)), {}),
    ((1, 2, 27, 12), ((5, 6), 3), {}),
    ((12,), ((5, 6), 3), {}),
    ((), (3, 2), {}),
    ((2, 0, 12), ((5, 6), 3), {}),
    ((2, 27, 0), ((5, 6), 3), {}),
    ((0, 4), (3, 1), {}),
    ((4, 0), (3, 1), {}),
    ((3, 4), (3, 2), {}),
    ((4, 1), ((-1, -1), 1), {}),
    ((4, 1), ((0, 0), 2), {}),
    ((4, 1), ((-1, -1), 2), dict(stride=5)),
    ((4, 6), ((0, 1), 1), dict(padding=1)),
    ((4, 1), ((0, 1), 1), {}),
    ((2, 27, 1), ((1, 1), 3), dict(padding=10)),
]


def _check_same_error(torch, name, shape, args, kw):
    tfn = getattr(torch.nn.functional, name)
    efn = getattr(EF, name)
    x = _x(*shape)
    with pytest.raises(Exception) as te:
        tfn(torch.tensor(x), *args, **kw)
    with pytest.raises(Exception) as ee:
        efn(E(x), *args, **kw)
    assert type(ee.value) is type(te.value), (ee.value, te.value)
    emsg, tmsg = str(ee.value), str(te.value).splitlines()[0]
    assert name in emsg
    if isinstance(te.value, TypeError):
        # torch names its internal op (im2col()/col2im()); ember names the public one
        targ = tmsg.split("argument '")[1].split("'")[0]
        assert f"argument '{targ}'" in emsg
    elif isinstance(te.value, IndexError):
        assert tmsg in emsg
    else:
        assert tmsg in emsg, (emsg, tmsg)


@pytest.mark.parametrize("shape,args,kw", UNFOLD_ERRORS)
def test_unfold_errors_match_torch(torch, shape, args, kw):
    _check_same_error(torch, "unfold", shape, args, kw)


@pytest.mark.parametrize("shape,args,kw", FOLD_ERRORS)
def test_fold_errors_match_torch(torch, shape, args, kw):
    _check_same_error(torch, "fold", shape, args, kw)


def test_non_tensor_input():
    with pytest.raises(TypeError, match=r"unfold\(\): argument 'input'"):
        EF.unfold([[1.0]], 1)
    with pytest.raises(TypeError, match=r"fold\(\): argument 'input'"):
        EF.fold([[1.0]], 1, 1)


def test_huge_parameters_are_refused_cleanly():
    x = ember.zeros(1, 1, 2, 2)
    with pytest.raises(RuntimeError, match="unfold"):
        EF.unfold(x, 1, padding=1 << 61)
    with pytest.raises(RuntimeError, match="unfold"):
        EF.unfold(x, 1, stride=1 << 62)
    with pytest.raises(RuntimeError, match="fold"):
        EF.fold(ember.zeros(1, 1, 1), 1 << 61, 1, stride=1 << 61)
    with pytest.raises(RuntimeError, match="unfold.*(too large|out of range)"):
        EF.unfold(ember.zeros(1, 1, 2, 2), 1, padding=1 << 40)
    # a huge stride with a single block is fine, as in torch
    y = EF.unfold(ember.ones(2, 3, 5, 6), 1, stride=1 << 40)
    assert tuple(y.shape) == (2, 3, 1)


def test_int_like_parameters(torch):
    x = rand(2, 3, 5, 6)
    ref = torch.nn.functional.unfold(torch.tensor(x), (3, 2), stride=2)
    for k in [(np.int64(3), 2), ember.tensor([3, 2]), (ember.tensor(3), 2)]:
        np.testing.assert_array_equal(N(EF.unfold(E(x), k, stride=np.int32(2))), ref.numpy())


def test_modules_vs_torch(torch):
    tu = torch.nn.Unfold(kernel_size=(2, 3), dilation=1, padding=1, stride=(1, 2))
    eu = enn.Unfold(kernel_size=(2, 3), dilation=1, padding=1, stride=(1, 2))
    tf = torch.nn.Fold(output_size=(4, 5), kernel_size=(2, 3), padding=1, stride=(1, 2))
    ef = enn.Fold(output_size=(4, 5), kernel_size=(2, 3), padding=1, stride=(1, 2))
    assert repr(eu) == repr(tu) and repr(ef) == repr(tf)
    assert isinstance(eu, enn.Module) and "Unfold" in enn.__all__ and "Fold" in enn.__all__
    assert len(list(eu.parameters())) == 0 and len(list(ef.parameters())) == 0
    x = rand(2, 3, 4, 5)
    tx, ex = torch.tensor(x, requires_grad=True), E(x, grad=True)
    ty, y = tf(tu(tx)), ef(eu(ex))
    np.testing.assert_allclose(N(y), ty.detach().numpy(), rtol=1e-12, atol=1e-12)
    g = rand(*ty.shape)
    ty.backward(torch.tensor(g))
    y.backward(E(g))
    np.testing.assert_allclose(N(ex.grad), tx.grad.numpy(), rtol=1e-12, atol=1e-12)
    assert repr(enn.Fold(3, 2)) == repr(torch.nn.Fold(3, 2))
    assert repr(enn.Unfold(2)) == repr(torch.nn.Unfold(2))
