"""Convolution and pooling (ember._C.conv) against a NumPy float64 reference
and, when installed, PyTorch forward and backward."""

import numpy as np
import pytest

import ember
from ember._C import conv as L

RNG = np.random.default_rng(1)


def E(a):
    return ember.from_numpy(np.array(a, order="C"))


def N(t):
    return np.asarray(t).copy()


def rand(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


def conv2d_ref(x, w, b, stride, pad, dil, groups):
    """float64 NumPy conv2d (cross-correlation), symmetric padding"""
    (sh, sw), (ph, pw), (dh, dw) = stride, pad, dil
    n, c, h, wd = x.shape
    oc, cg, kh, kw = w.shape
    xp = np.zeros((n, c, h + 2 * ph, wd + 2 * pw))
    xp[:, :, ph : ph + h, pw : pw + wd] = x
    ho = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    wo = (wd + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    y = np.zeros((n, oc, ho, wo))
    ocg = oc // groups
    for g in range(groups):
        for i in range(kh):
            for j in range(kw):
                patch = xp[
                    :,
                    g * cg : (g + 1) * cg,
                    i * dh : i * dh + sh * (ho - 1) + 1 : sh,
                    j * dw : j * dw + sw * (wo - 1) + 1 : sw,
                ]
                y[:, g * ocg : (g + 1) * ocg] += np.einsum(
                    "nchw,oc->nohw", patch, w[g * ocg : (g + 1) * ocg, :, i, j]
                )
    if b is not None:
        y += b[None, :, None, None]
    return y


CONV_CASES = [
    # (N, C, H, W), (OC, kh, kw), stride, pad, dil, groups
    ((2, 3, 9, 8), (4, 3, 3), (1, 1), (1, 1), (1, 1), 1),
    ((1, 1, 7, 7), (5, 3, 3), (1, 1), (0, 0), (1, 1), 1),
    ((2, 4, 10, 9), (6, 3, 2), (2, 3), (1, 0), (1, 2), 2),
    ((3, 6, 8, 8), (6, 3, 3), (1, 1), (1, 1), (1, 1), 6),  # depthwise
    ((2, 4, 8, 7), (8, 3, 3), (2, 2), (1, 1), (2, 1), 4),  # depthwise x2
    ((2, 5, 6, 6), (7, 1, 1), (1, 1), (0, 0), (1, 1), 1),  # 1x1
    ((1, 3, 5, 5), (2, 5, 5), (1, 1), (0, 0), (1, 1), 1),  # kernel = input
    ((4, 2, 1, 13), (3, 1, 4), (1, 2), (0, 1), (1, 1), 1),  # H = 1
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("xs,ws,stride,pad,dil,groups", CONV_CASES)
def test_conv2d_forward(xs, ws, stride, pad, dil, groups, dtype):
    x = rand(*xs)
    w = rand(ws[0], xs[1] // groups, ws[1], ws[2])
    b = rand(ws[0])
    ref = conv2d_ref(x, w, b, stride, pad, dil, groups)
    y = L.conv2d(
        E(x.astype(dtype)), E(w.astype(dtype)), E(b.astype(dtype)), stride, pad, dil, groups
    )
    assert tuple(y.shape) == ref.shape
    t = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(N(y), ref, **t)
    # unbatched input
    y1 = L.conv2d(E(x[0].astype(dtype)), E(w.astype(dtype)), None, stride, pad, dil, groups)
    np.testing.assert_allclose(N(y1), ref[0] - b[:, None, None], **t)


@pytest.mark.parametrize("xs,ws,stride,pad,dil,groups", CONV_CASES)
def test_conv2d_backward_vs_torch(xs, ws, stride, pad, dil, groups):
    torch = pytest.importorskip("torch")
    x = rand(*xs)
    w = rand(ws[0], xs[1] // groups, ws[1], ws[2])
    tx = torch.tensor(x, requires_grad=True)
    tw = torch.tensor(w, requires_grad=True)
    tb = torch.zeros(ws[0], dtype=torch.float64, requires_grad=True)
    ty = torch.nn.functional.conv2d(tx, tw, tb, stride, pad, dil, groups)
    g = rand(*ty.shape)
    ty.backward(torch.tensor(g))
    dx = L.conv2d_input_grad(xs, E(w), E(g), stride, pad, dil, groups)
    dw, db = L.conv2d_weight_grad(E(x), w.shape, E(g), stride, pad, dil, groups, bias_grad=True)
    np.testing.assert_allclose(N(dx), tx.grad.numpy(), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(N(dw), tw.grad.numpy(), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(N(db), tb.grad.numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("padding", ["same", "valid", 2])
@pytest.mark.parametrize("k", [3, 4])
def test_conv_padding_modes_vs_torch(padding, k):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    x, w = rand(2, 3, 9, 10), rand(4, 3, k, k - 1)
    ty = F.conv2d(torch.tensor(x), torch.tensor(w), padding=padding, dilation=(1, 2))
    y = L.conv2d(E(x), E(w), padding=padding, dilation=(1, 2))
    np.testing.assert_allclose(N(y), ty.numpy(), rtol=1e-10, atol=1e-10)
    g = rand(*ty.shape)
    tx = torch.tensor(x, requires_grad=True)
    tw = torch.tensor(w, requires_grad=True)
    F.conv2d(tx, tw, padding=padding, dilation=(1, 2)).backward(torch.tensor(g))
    dx = L.conv2d_input_grad(x.shape, E(w), E(g), 1, padding, (1, 2))
    dw = L.conv2d_weight_grad(E(x), w.shape, E(g), 1, padding, (1, 2))
    np.testing.assert_allclose(N(dx), tx.grad.numpy(), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(N(dw), tw.grad.numpy(), rtol=1e-10, atol=1e-10)


def test_conv1d_vs_torch():
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    x, w, b = rand(3, 4, 20), rand(6, 2, 5), rand(6)
    for kw in [dict(stride=2, padding=1, groups=2), dict(padding="same", dilation=3, groups=2)]:
        ty = F.conv1d(torch.tensor(x), torch.tensor(w), torch.tensor(b), **kw)
        y = L.conv1d(E(x), E(w), E(b), **kw)
        assert tuple(y.shape) == tuple(ty.shape)
        np.testing.assert_allclose(N(y), ty.numpy(), rtol=1e-10, atol=1e-10)
    y = L.conv1d(E(x[0]), E(w), None, groups=2)
    np.testing.assert_allclose(
        N(y),
        F.conv1d(torch.tensor(x[0]), torch.tensor(w), groups=2).numpy(),
        rtol=1e-10,
        atol=1e-10,
    )


@pytest.mark.parametrize(
    "kw",
    [
        dict(),
        dict(stride=2, padding=1, output_padding=1),
        dict(stride=(2, 1), dilation=2, groups=2),
        dict(stride=3, padding=(0, 2)),
    ],
)
def test_conv_transpose2d_vs_torch(kw):
    torch = pytest.importorskip("torch")
    x, w, b = rand(2, 4, 5, 6), rand(4, 3, 3, 3), rand(3 * kw.get("groups", 1))
    ty = torch.nn.functional.conv_transpose2d(
        torch.tensor(x), torch.tensor(w), torch.tensor(b), **kw
    )
    y = L.conv_transpose2d(E(x), E(w), E(b), **kw)
    assert tuple(y.shape) == tuple(ty.shape)
    np.testing.assert_allclose(N(y), ty.numpy(), rtol=1e-10, atol=1e-10)
    yf = L.conv_transpose2d(
        E(x.astype(np.float32)), E(w.astype(np.float32)), E(b.astype(np.float32)), **kw
    )
    assert yf.dtype == ember.float32
    np.testing.assert_allclose(N(yf), ty.numpy(), rtol=1e-4, atol=1e-4)


def test_conv_errors():
    with pytest.raises(RuntimeError, match="to have 1 channels, but got 3 channels"):
        L.conv2d(E(rand(2, 3, 8, 8)), E(rand(4, 1, 3, 3)))
    with pytest.raises(RuntimeError, match="Kernel size can't be greater than actual input size"):
        L.conv2d(E(rand(1, 1, 2, 2)), E(rand(4, 1, 3, 3)))
    with pytest.raises(RuntimeError, match="divisible by 2 at dimension 0"):
        L.conv2d(E(rand(1, 4, 5, 5)), E(rand(3, 2, 3, 3)), groups=2)
    with pytest.raises(RuntimeError, match="Expected 3D \\(unbatched\\) or 4D \\(batched\\) input"):
        L.conv2d(E(rand(8, 8)), E(rand(4, 1, 3, 3)))
    with pytest.raises(RuntimeError, match="non-positive stride"):
        L.conv2d(E(rand(1, 1, 8, 8)), E(rand(4, 1, 3, 3)), stride=0)
    with pytest.raises(RuntimeError, match="negative padding"):
        L.conv2d(E(rand(1, 1, 8, 8)), E(rand(4, 1, 3, 3)), padding=-1)
    with pytest.raises(RuntimeError, match="padding='same' is not supported for strided"):
        L.conv2d(E(rand(1, 1, 8, 8)), E(rand(4, 1, 3, 3)), stride=2, padding="same")
    with pytest.raises(RuntimeError, match="expected bias to be 1-dimensional with 4 elements"):
        L.conv2d(E(rand(1, 1, 8, 8)), E(rand(4, 1, 3, 3)), E(rand(3)))


CONV_ERRORS = [
    ((2, 3, 8, 8), (4, 1, 3, 3), {}),
    ((1, 1, 2, 2), (4, 1, 3, 3), {}),
    ((1, 3, 5, 5), (4, 1, 3, 3), {"groups": 2}),
    ((8, 8), (4, 1, 3, 3), {}),
    ((1, 1, 8, 8), (4, 1, 3, 3), {"stride": 0}),
    ((1, 1, 8, 8), (4, 1, 3, 3), {"padding": "foo"}),
]


@pytest.mark.parametrize("xs,ws,kw", CONV_ERRORS)
def test_conv_error_parity_with_torch(xs, ws, kw):
    torch = pytest.importorskip("torch")
    with pytest.raises(Exception) as te:
        torch.nn.functional.conv2d(torch.zeros(xs), torch.zeros(ws), **kw)
    with pytest.raises(Exception) as ee:
        L.conv2d(E(np.zeros(xs, np.float32)), E(np.zeros(ws, np.float32)), **kw)
    assert type(ee.value) is type(te.value)
    assert str(ee.value) == str(te.value)


# ---------------------------------------------------------------- pooling
POOL_CASES = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 0), ceil_mode=True),
    dict(kernel_size=3, stride=2, ceil_mode=True),
    dict(kernel_size=1),
]


@pytest.mark.parametrize("kw", POOL_CASES + [dict(kernel_size=3, dilation=2, padding=1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_max_pool2d_vs_torch(kw, dtype):
    torch = pytest.importorskip("torch")
    x = rand(2, 3, 9, 11, dtype=dtype)
    tx = torch.tensor(x, requires_grad=True)
    ty, ti = torch.nn.functional.max_pool2d(tx, return_indices=True, **kw)
    y, i = L.max_pool2d(E(x), return_indices=True, **kw)
    np.testing.assert_array_equal(N(y), ty.detach().numpy())
    np.testing.assert_array_equal(N(i), ti.numpy())
    assert i.dtype == ember.int64
    g = rand(*ty.shape, dtype=dtype)
    ty.backward(torch.tensor(g))
    dx = L.max_pool2d_backward(E(g), E(x), i)
    np.testing.assert_allclose(N(dx), tx.grad.numpy(), rtol=1e-6)
    y3 = L.max_pool2d(E(x[0]), **kw)  # unbatched
    np.testing.assert_array_equal(N(y3), ty.detach().numpy()[0])


def test_max_pool2d_numpy_reference_and_nan():
    x = rand(1, 2, 6, 6)
    x[0, 1, 2, 3] = np.nan
    y = N(L.max_pool2d(E(x), 2))
    ref = x.reshape(1, 2, 3, 2, 3, 2).max(axis=(3, 5))
    np.testing.assert_array_equal(np.isnan(y), np.isnan(ref))
    np.testing.assert_array_equal(y[~np.isnan(y)], ref[~np.isnan(ref)])


@pytest.mark.parametrize(
    "kw",
    POOL_CASES
    + [
        dict(kernel_size=3, padding=1, count_include_pad=False),
        dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
        dict(kernel_size=2, divisor_override=3),
    ],
)
def test_avg_pool2d_vs_torch(kw):
    torch = pytest.importorskip("torch")
    x = rand(2, 3, 9, 11)
    tx = torch.tensor(x, requires_grad=True)
    ty = torch.nn.functional.avg_pool2d(tx, **kw)
    y = L.avg_pool2d(E(x), **kw)
    np.testing.assert_allclose(N(y), ty.detach().numpy(), rtol=1e-12)
    g = rand(*ty.shape)
    ty.backward(torch.tensor(g))
    dx = L.avg_pool2d_backward(E(g), E(x), **kw)
    np.testing.assert_allclose(N(dx), tx.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("os_", [1, 3, (4, 5), (7, 2), (None, 3), (9, 11), (12, 13)])
def test_adaptive_pools_vs_torch(os_):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    x = rand(2, 3, 9, 11)
    tx = torch.tensor(x, requires_grad=True)
    ty = F.adaptive_avg_pool2d(tx, os_)
    y = L.adaptive_avg_pool2d(E(x), os_)
    np.testing.assert_allclose(N(y), ty.detach().numpy(), rtol=1e-12)
    g = rand(*ty.shape)
    ty.backward(torch.tensor(g))
    np.testing.assert_allclose(
        N(L.adaptive_avg_pool2d_backward(E(g), E(x))), tx.grad.numpy(), rtol=1e-12
    )
    tx2 = torch.tensor(x, requires_grad=True)
    ty2, ti2 = F.adaptive_max_pool2d(tx2, os_, return_indices=True)
    y2, i2 = L.adaptive_max_pool2d(E(x), os_, return_indices=True)
    np.testing.assert_array_equal(N(y2), ty2.detach().numpy())
    np.testing.assert_array_equal(N(i2), ti2.numpy())
    ty2.backward(torch.tensor(g))
    np.testing.assert_allclose(
        N(L.adaptive_max_pool2d_backward(E(g), E(x), i2)), tx2.grad.numpy(), rtol=1e-12
    )


def test_adaptive_avg_numpy_reference():
    x = rand(2, 3, 8, 8)
    np.testing.assert_allclose(
        N(L.adaptive_avg_pool2d(E(x), 1)), x.mean(axis=(2, 3), keepdims=True), rtol=1e-12
    )
    np.testing.assert_allclose(
        N(L.adaptive_avg_pool2d(E(x), 4)), x.reshape(2, 3, 4, 2, 4, 2).mean(axis=(3, 5)), rtol=1e-12
    )


POOL_ERRORS = [
    ("max_pool2d", (1, 1, 4, 4), dict(kernel_size=3, padding=2)),
    ("max_pool2d", (1, 1, 2, 2), dict(kernel_size=3)),
    ("max_pool2d", (4, 4), dict(kernel_size=3)),
    ("avg_pool2d", (1, 1, 2, 2), dict(kernel_size=3)),
    ("adaptive_avg_pool2d", (4, 4), dict(output_size=3)),
    ("adaptive_avg_pool2d", (1, 1, 0, 4), dict(output_size=3)),
]


@pytest.mark.parametrize("op,xs,kw", POOL_ERRORS)
def test_pool_errors(op, xs, kw):
    with pytest.raises(RuntimeError) as ee:
        getattr(L, op)(E(np.zeros(xs, np.float32)), **kw)
    torch = pytest.importorskip("torch")
    with pytest.raises(Exception) as te:
        getattr(torch.nn.functional, op)(torch.zeros(xs), **kw)
    assert type(ee.value) is type(te.value)
    assert str(ee.value) == str(te.value)


def test_conv_pool_large_threads_vs_reference():
    """batch big enough for the threaded paths (per-image GEMM, per-plane pools)"""
    x, w = rand(8, 6, 14, 14, dtype=np.float32), rand(10, 6, 3, 3, dtype=np.float32)
    old = ember.get_num_threads()
    try:
        outs = []
        for nt in (1, 2):
            ember.set_num_threads(nt)
            outs.append(N(L.conv2d(E(x), E(w), padding=1)))
        ref = conv2d_ref(
            x.astype(np.float64), w.astype(np.float64), None, (1, 1), (1, 1), (1, 1), 1
        )
        for o in outs:
            np.testing.assert_allclose(o, ref, rtol=1e-4, atol=1e-4)
    finally:
        ember.set_num_threads(old)


# ---------------------------------------------------------------- malformed arguments
# Each of these once crashed the interpreter (segfault), hung, or raised an
# error type outside PyTorch's taxonomy (OverflowError, RecursionError).
NOT_TENSORS = [-1, 1.5, [], "x", object(), [[1, 2], [3]], 2**62, None]


@pytest.mark.parametrize(
    "op",
    [
        "conv1d",
        "conv2d",
        "conv_transpose1d",
        "conv_transpose2d",
        "max_pool2d",
        "avg_pool2d",
        "adaptive_avg_pool2d",
        "adaptive_max_pool2d",
    ],
)
@pytest.mark.parametrize("bad", NOT_TENSORS, ids=repr)
def test_non_tensor_operands_raise_type_error(op, bad):
    """non-tensors used to be cast blindly to TensorBase (segfault / RecursionError)"""
    fn = getattr(L, op)
    good = ember.ones(1, 1, 4, 4) if "1d" not in op else ember.ones(1, 1, 4)
    with pytest.raises(TypeError, match=op):
        fn(bad, good)
    if op.startswith("conv"):
        with pytest.raises(TypeError, match=op):
            fn(good, bad)


def test_top_level_conv_rejects_scalars():
    for bad in (-1, 1.5, []):
        with pytest.raises(TypeError, match="conv2d.*'input'"):
            ember.conv2d(bad, ember.ones(3, 4))


@pytest.mark.parametrize(
    "kw",
    [
        dict(stride=1.5),
        dict(padding=None),
        dict(dilation="x"),
        dict(groups=1.0),
        dict(stride=True),
        dict(padding=(1, 1.5)),
    ],
)
def test_conv_non_int_params_type_error(kw):
    with pytest.raises(TypeError, match="conv2d"):
        L.conv2d(ember.ones(1, 1, 4, 4), ember.ones(1, 1, 3, 3), **kw)


@pytest.mark.parametrize(
    "op,kw",
    [
        ("conv2d", dict(padding=2**62)),
        ("conv2d", dict(padding=2**40)),  # numel wraps int64
        ("conv2d", dict(stride=2**63)),
        ("conv2d", dict(dilation=2**62, padding=2**62)),
        ("conv_transpose2d", dict(stride=2**62)),
        ("conv_transpose2d", dict(stride=2**40)),
        ("conv_transpose2d", dict(dilation=2**62)),
        ("conv1d", dict(padding=2**62)),
        ("conv2d", dict(groups=2**62)),
    ],
)
def test_conv_huge_params_raise(op, kw):
    x = ember.ones(1, 1, 3, 3) if "1d" not in op else ember.ones(1, 1, 3)
    w = ember.ones(1, 1, 3, 3) if "1d" not in op else ember.ones(1, 1, 3)
    with pytest.raises(RuntimeError):
        getattr(L, op)(x, w, **kw)


@pytest.mark.parametrize(
    "op,args,kw",
    [
        ("max_pool2d", (2**40,), dict(padding=2**39)),  # used to loop 2**80 times
        ("max_pool2d", (3,), dict(stride=2**63)),
        ("max_pool2d", (3,), dict(dilation=2**62)),
        ("avg_pool2d", (2**40,), dict(padding=2**39)),  # divisor overflowed silently
        ("adaptive_avg_pool2d", (2**40,), {}),  # numel wrapped: segfault
        ("adaptive_max_pool2d", ((2**40, 2**40),), {}),
    ],
)
def test_pool_huge_params_raise(op, args, kw):
    with pytest.raises(RuntimeError, match="overflow|too large"):
        getattr(L, op)(ember.ones(1, 1, 3, 3), *args, **kw)


def test_max_pool2d_large_window_is_clipped_to_the_input():
    torch = pytest.importorskip("torch")
    x = rand(2, 3, 5, 6)
    for kw in (
        dict(kernel_size=9, padding=4),
        dict(kernel_size=(7, 3), padding=(3, 1), dilation=(1, 2), stride=2),
    ):
        y, i = L.max_pool2d(E(x), return_indices=True, **kw)
        ty, ti = torch.nn.functional.max_pool2d(torch.tensor(x), return_indices=True, **kw)
        np.testing.assert_array_equal(N(y), ty.numpy())
        np.testing.assert_array_equal(N(i), ti.numpy())


@pytest.mark.parametrize(
    "kw",
    [
        dict(kernel_size=1.5),
        dict(kernel_size=None),
        dict(kernel_size=2, stride=True),
        dict(kernel_size=2, divisor_override=1.5),
    ],
)
def test_pool_non_int_params_type_error(kw):
    with pytest.raises(TypeError, match="pool2d"):
        if "divisor_override" in kw:
            L.avg_pool2d(ember.ones(1, 1, 4, 4), **kw)
        else:
            L.max_pool2d(ember.ones(1, 1, 4, 4), **kw)


def test_pool_backward_rejects_bad_indices_and_shapes():
    x = ember.ones(1, 1, 3, 3)
    with pytest.raises(RuntimeError, match="invalid max index"):
        L.max_pool2d_backward(ember.ones(1, 1, 1, 2), x, ember.tensor([[[[100, -5]]]]))
    with pytest.raises(RuntimeError, match="invalid max index"):
        L.adaptive_max_pool2d_backward(ember.ones(1, 1, 1, 2), x, ember.tensor([[[[9, 0]]]]))
    with pytest.raises(RuntimeError, match="does not match"):
        L.max_pool2d_backward(ember.ones(4, 1, 1, 2), x, ember.zeros(4, 1, 1, 2, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="does not match"):
        L.adaptive_avg_pool2d_backward(ember.ones(()), x)


def test_conv_grad_entry_points_validate_sizes():
    w, dy = ember.ones(1, 1, 3, 3), ember.ones(1, 1, 1, 1)
    with pytest.raises(RuntimeError, match="out of range"):
        L.conv2d_input_grad((1, 1, -3, 3), w, dy)
    with pytest.raises(RuntimeError, match="weight"):
        L.conv2d_input_grad((1, 1, 3, 3), ember.ones(3), dy)
    with pytest.raises(TypeError):
        L.conv2d_input_grad((1.5, 1, 3, 3), w, dy)
    with pytest.raises(RuntimeError, match="weight"):
        L.conv2d_weight_grad(ember.ones(1, 1, 3, 3), (1,), dy)
    with pytest.raises(RuntimeError, match="out of range"):
        L.conv2d_weight_grad(ember.ones(1, 1, 3, 3), (1, 1, -3, 3), dy)


@pytest.mark.parametrize(
    "op,xs,ws,kw",
    [
        ("conv2d", (1, 1, 0, 3), (1, 1, 1, 1), dict(padding=1)),
        ("conv2d", (1, 1, 0, 3), (1, 1, 1, 1), {}),
        ("conv_transpose2d", (1, 1, 0, 3), (1, 1, 3, 3), {}),
        ("conv_transpose2d", (1, 0, 3, 3), (0, 1, 3, 3), {}),
        ("conv2d", (1, 0, 3, 3), (0, 0, 1, 1), dict(groups=4)),
    ],
)
def test_conv_empty_error_parity_with_torch(op, xs, ws, kw):
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError) as te:
        getattr(torch.nn.functional, op)(torch.zeros(xs), torch.zeros(ws), **kw)
    with pytest.raises(RuntimeError) as ee:
        getattr(L, op)(E(np.zeros(xs, np.float32)), E(np.zeros(ws, np.float32)), **kw)
    assert str(ee.value) == str(te.value)


@pytest.mark.parametrize("nt", [1, 2])
@pytest.mark.parametrize(
    "kw",
    [
        dict(padding=1, groups=2),
        dict(stride=2, dilation=2, padding=2),
        dict(stride=(1, 2), padding=(0, 1)),
    ],
)
def test_conv_chunked_batches_vs_torch(nt, kw):
    """deep K, small planes: several images share one wide GEMM (chunks of nb,
    the last one partial), forward and both gradients, 1 and 2 threads"""
    torch = pytest.importorskip("torch")
    g = kw.get("groups", 1)
    x, w, b = rand(7, 16, 9, 9), rand(12, 16 // g, 3, 3), rand(12)
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    ty = torch.nn.functional.conv2d(tx, tw, tb, **kw)
    dy = rand(*ty.shape)
    ty.backward(torch.tensor(dy))
    old = ember.get_num_threads()
    try:
        ember.set_num_threads(nt)
        for dt in (np.float32, np.float64):
            tol = 1e-4 if dt == np.float32 else 1e-10
            y = L.conv2d(E(x.astype(dt)), E(w.astype(dt)), E(b.astype(dt)), **kw)
            np.testing.assert_allclose(N(y), ty.detach().numpy(), rtol=tol, atol=tol)
            dx = L.conv2d_input_grad(x.shape, E(w.astype(dt)), E(dy.astype(dt)), **kw)
            np.testing.assert_allclose(N(dx), tx.grad.numpy(), rtol=tol, atol=tol)
            dw, db = L.conv2d_weight_grad(
                E(x.astype(dt)), w.shape, E(dy.astype(dt)), **kw, bias_grad=True
            )
            np.testing.assert_allclose(N(dw), tw.grad.numpy(), rtol=tol, atol=tol * 10)
            np.testing.assert_allclose(N(db), tb.grad.numpy(), rtol=tol, atol=tol * 10)
    finally:
        ember.set_num_threads(old)


@pytest.mark.parametrize("nt", [1, 2])
@pytest.mark.parametrize("ci,co,hw,kw", [(32, 64, 14, {}), (1, 32, 28, {}),
                                         (16, 24, 13, dict(padding=1)),
                                         (8, 16, 20, dict(padding=2, dilation=2)),
                                         (6, 8, 9, dict(padding=2)),
                                         (4, 8, 7, dict(padding=(0, 3)))])
def test_conv_float32_benchmark_shapes_vs_torch(nt, ci, co, hw, kw):
    """the shapes the benchmarks time (implicit-im2col packing with vector runs
    and 8x8 transposes in float32), forward with a fused bias and both gradients"""
    torch = pytest.importorskip("torch")
    x, w, b = rand(5, ci, hw, hw), rand(co, ci, 3, 3), rand(co)
    tx, tw, tb = (torch.tensor(a.astype(np.float32), requires_grad=True) for a in (x, w, b))
    ty = torch.nn.functional.conv2d(tx, tw, tb, **kw)
    dy = rand(*ty.shape).astype(np.float32)
    ty.backward(torch.tensor(dy))
    old = ember.get_num_threads()
    try:
        ember.set_num_threads(nt)
        f = lambda a: E(a.astype(np.float32))  # noqa: E731
        # 3x3 stride-1 convolutions with >= 16 channels run Winograd F(4x4, 3x3):
        # errors of a few 1e-6 of the largest magnitude (tests/test_conv_winograd.py)
        def close(a, ref, atol):
            np.testing.assert_allclose(N(a), ref, rtol=1e-4,
                                       atol=max(atol, 2e-5 * np.abs(ref).max()))
        y = L.conv2d(f(x), f(w), f(b), **kw)
        close(y, ty.detach().numpy(), 1e-4)
        dx = L.conv2d_input_grad(x.shape, f(w), E(dy), **kw)
        close(dx, tx.grad.numpy(), 1e-4)
        dw, db = L.conv2d_weight_grad(f(x), w.shape, E(dy), bias_grad=True, **kw)
        close(dw, tw.grad.numpy(), 2e-3)
        np.testing.assert_allclose(N(db), tb.grad.numpy(), rtol=1e-4, atol=1e-3)
    finally:
        ember.set_num_threads(old)
