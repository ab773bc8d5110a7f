"""The float32 weight gradient through channels-last copies of the images
(src_c/conv_wgn_impl.h): against PyTorch in float64 on the shapes it takes by
default (32+ channels, 3x3, small images) and, forced on, on every geometry it
accepts (odd channel counts, strides, dilation, other kernel sizes, narrow
images); bit-identical on 1 and 2 threads; the AVX2 build; strided operands.

Accuracy: plain float32 sums of products in a fixed order, so the error grows
like the sum's length: measured max |error| / max |reference| ~1.5e-6 on 64
images of 32 -> 64 channels, 26x26 (PyTorch's float32: ~8e-6)."""

import numpy as np
import pytest

import ember
from ember._C import conv as L

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(64)


def E(a):
    return ember.from_numpy(np.ascontiguousarray(a))


def N(t):
    return np.asarray(t).copy()


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def case(n, c, k, h, w, kh=3, kw=3, **conv):
    x, wt = rand(n, c, h, w), rand(k, c // conv.get("groups", 1), kh, kw)
    tx = torch.tensor(x, dtype=torch.float64)
    y = torch.nn.functional.conv2d(tx, torch.tensor(wt, dtype=torch.float64), **conv)
    dy = rand(*y.shape)
    ref = torch.nn.grad.conv2d_weight(tx, wt.shape, torch.tensor(dy, dtype=torch.float64),
                                      **conv).numpy()
    return x, wt.shape, dy, ref


def wgrad(x, wshape, dy, mode, threads=None, **conv):
    old_mode, old_nt = L._wgrad_cl(), ember.get_num_threads()
    try:
        L._wgrad_cl(mode)
        if threads:
            ember.set_num_threads(threads)
        return N(L.conv2d_weight_grad(E(x), wshape, E(dy), **conv))
    finally:
        L._wgrad_cl(old_mode)
        ember.set_num_threads(old_nt)


def check(got, ref):
    # float32 sums of up to a few thousand products: well under 1e-5 of the largest
    assert np.abs(got - ref).max() <= 1e-5 * np.abs(ref).max()


@pytest.mark.parametrize("pad", [0, 1])
@pytest.mark.parametrize("shape", [(3, 32, 64, 26, 26), (4, 32, 64, 13, 13)])
def test_default_shapes_take_it(shape, pad):
    """32 -> 64 channels on 26x26 (Winograd's choice before) and 13x13 (the
    GEMM's): the default picks this kernel, the same bits as forcing it (at 13x13
    also the GEMM's bits: one product chain per element in the same order)"""
    x, ws, dy, ref = case(*shape, padding=pad)
    got = wgrad(x, ws, dy, 1, padding=pad)
    check(got, ref)
    np.testing.assert_array_equal(got, wgrad(x, ws, dy, 2, padding=pad))
    off = wgrad(x, ws, dy, 0, padding=pad)
    check(off, ref)
    assert np.array_equal(got, off) == (shape[3] == 13)


@pytest.mark.parametrize("shape,conv", [
    ((2, 33, 48, 11, 13), dict(padding=1)),            # 3 vectors of outputs, input tail
    ((3, 5, 80, 9, 9), dict(padding=2)),               # 4 + 1 vectors, 5 channels
    ((2, 16, 16, 7, 6), {}),                           # sides under 8
    ((2, 24, 32, 15, 17), dict(stride=2, padding=1)),
    ((2, 8, 32, 16, 16), dict(dilation=2, padding=(2, 1))),
    ((2, 12, 32, 10, 12, 5, 3), dict(padding=(2, 1))),  # 5x3 filters
    ((2, 16, 32, 8, 8, 1, 1), {}),                     # 1x1
])
def test_forced_geometries_vs_torch(shape, conv):
    x, ws, dy, ref = case(*shape, **conv)
    got = wgrad(x, ws, dy, 2, **conv)
    check(got, ref)
    np.testing.assert_array_equal(wgrad(x, ws, dy, 2, threads=2, **conv), got)


@pytest.mark.parametrize("shape,conv", [((2, 16, 24, 9, 9), dict(padding=1)),
                                        ((2, 16, 32, 9, 9), dict(padding=1, groups=2))])
def test_shapes_it_declines_fall_back(shape, conv):
    """24 output channels (not whole vectors) and groups: the other paths"""
    x, ws, dy, ref = case(*shape, **conv)
    got = wgrad(x, ws, dy, 2, **conv)
    check(got, ref)
    np.testing.assert_array_equal(got, wgrad(x, ws, dy, 0, **conv))


@pytest.mark.parametrize("n", [3, 10, 17])
def test_bit_identical_across_threads(n):
    """fixed image slices summed in order: 1 and 2 threads give the same bits"""
    x, ws, dy, ref = case(n, 32, 64, 13, 13, padding=1)
    one = wgrad(x, ws, dy, 1, threads=1, padding=1)
    check(one, ref)
    np.testing.assert_array_equal(wgrad(x, ws, dy, 1, threads=2, padding=1), one)


def test_avx2_build():
    if L._kernel_isa() < 1:
        pytest.skip("CPU lacks AVX2")
    x, ws, dy, ref = case(3, 32, 64, 12, 12, padding=1)
    x1, ws1, dy1, ref1 = case(3, 1, 24, 12, 12, padding=1)    # nine-tap tiles
    cl = ember.channels_last
    try:
        assert L._set_kernel_isa(1) == 1
        got = wgrad(x, ws, dy, 2, padding=1)
        got2 = wgrad(x, ws, dy, 2, threads=2, padding=1)
        got1 = N(L.conv2d_weight_grad(E(x1).contiguous(memory_format=cl), ws1,
                                      E(dy1).contiguous(memory_format=cl), padding=1))
    finally:
        L._set_kernel_isa(-1)
    check(got, ref)
    np.testing.assert_array_equal(got, got2)
    check(got1, ref1)


def test_strided_operands():
    """a channel slice of x and a transposed view of dy (copied to dense first)"""
    xs, dys = rand(2, 64, 14, 14), rand(2, 12, 12, 64)
    x, dy = xs[:, ::2], dys.transpose(0, 3, 1, 2)
    tx = torch.tensor(x, dtype=torch.float64)
    ref = torch.nn.grad.conv2d_weight(tx, (64, 32, 3, 3),
                                      torch.tensor(dy, dtype=torch.float64)).numpy()
    xe = ember.from_numpy(xs)[:, ::2]
    dye = ember.from_numpy(dys).permute(0, 3, 1, 2)
    got = N(L.conv2d_weight_grad(xe, (64, 32, 3, 3), dye))
    check(got, ref)


def test_conv_module_weight_grad_vs_torch():
    """nn.Conv2d(32, 64, 3) backward through autograd, float32 against torch"""
    tm = torch.nn.Conv2d(32, 64, 3)
    m = ember.nn.Conv2d(32, 64, 3)
    with ember.no_grad():
        m.weight.copy_(E(tm.weight.detach().numpy()))
        m.bias.copy_(E(tm.bias.detach().numpy()))
    x = rand(4, 32, 13, 13)
    ty, y = tm(torch.tensor(x)), m(E(x))
    g = rand(*ty.shape)
    ty.backward(torch.tensor(g))
    y.backward(E(g))
    ref = tm.weight.grad.double().numpy()
    assert np.abs(N(m.weight.grad) - ref).max() <= 2e-5 * np.abs(ref).max()
    np.testing.assert_allclose(N(m.bias.grad), tm.bias.grad.numpy(), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("shape,pad", [((4, 1, 32, 14, 14), 0), ((3, 32, 64, 12, 12), 0),
                                       ((3, 32, 64, 13, 13), 1), ((2, 3, 48, 9, 11), 1)])
def test_channels_last_operands(shape, pad):
    """channels-last x and grad_output go to the kernel as they are (only the
    padding copied): torch's result, channels-last like torch's, any thread count"""
    x, ws, dy, ref = case(*shape, padding=pad)
    cl = ember.channels_last
    xe, dye = E(x).contiguous(memory_format=cl), E(dy).contiguous(memory_format=cl)
    old = ember.get_num_threads()
    try:
        got = []
        for nt in (1, 2):
            ember.set_num_threads(nt)
            dw = L.conv2d_weight_grad(xe, ws, dye, padding=pad)
            assert dw.is_contiguous(memory_format=cl)
            got.append(N(dw))
    finally:
        ember.set_num_threads(old)
    check(got[0], ref)
    np.testing.assert_array_equal(got[0], got[1])
    if shape[1] >= 32:   # (fewer input channels: the direct kernel comes first for NCHW)
        # the same sums as from NCHW operands
        np.testing.assert_array_equal(got[0], wgrad(x, ws, dy, 2, padding=pad))


@pytest.mark.parametrize("shape,conv", [
    ((2, 2, 32, 11, 12), dict(stride=2, padding=2, dilation=2)),   # im2col of 18 taps
    ((2, 1, 16, 9, 9), dict(padding=1)),
    ((2, 8, 32, 10, 9), dict(stride=(1, 2), padding=(0, 1)))])
def test_channels_last_forced_geometries(shape, conv):
    """channels-last operands with strides, dilation and uneven padding, forced
    through the kernel (few taps: its im2col of each image)"""
    x, ws, dy, ref = case(*shape, **conv)
    cl = ember.channels_last
    xe, dye = E(x).contiguous(memory_format=cl), E(dy).contiguous(memory_format=cl)
    old = L._wgrad_cl()
    try:
        L._wgrad_cl(2)
        got = N(L.conv2d_weight_grad(xe, ws, dye, **conv))
    finally:
        L._wgrad_cl(old)
    check(got, ref)
