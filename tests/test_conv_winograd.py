"""Winograd F(4x4, 3x3) convolution (float32, 3x3, stride 1, >= 16 channels,
outputs of 16x16 and more, or 12x12 and more with 64 channels): forward, input
gradient and weight gradient against PyTorch in float64, the shapes around its
thresholds, thread-count identity and the ISA variants.

Accuracy: the transforms grow magnitudes before the products (B^T d B up to ~10x
per dimension, A^T up to 8x), so the error is measured against the largest
output, not elementwise.  Measured on 64 -> 64 channels, 32x32, float32 inputs:
max |error| / max |reference| ~6e-6 forward, ~7e-6 input gradient, ~1.2e-5
weight gradient (PyTorch's own float32 paths: ~3e-7, ~3e-7, ~2e-6); the input
gradient of 32 -> 64 channels at 26x26 (tiles overhanging the image) ~7e-6
(the im2col path it replaces: ~2e-7)."""

import numpy as np
import pytest

import ember
from ember._C import conv as L

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(16)

@pytest.fixture(autouse=True)
def _no_direct3():
    """these tests pin the Winograd and im2col paths: the direct kernel for few
    channels (test_conv_direct.py) would take some of their shapes"""
    old = L._direct3()
    L._direct3(0)
    yield
    L._direct3(old)


# max |error| / max |reference| allowed (a few times the measured figures)
TOL = {"y": 3e-5, "dx": 3e-5, "dw": 6e-5}


def E(a):
    return ember.from_numpy(np.ascontiguousarray(a))


def N(t):
    return np.asarray(t).copy()


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def refs(x, w, b, dy, pad):
    """forward, input and weight gradients in float64 (PyTorch)"""
    tx, tw = torch.tensor(x, dtype=torch.float64), torch.tensor(w, dtype=torch.float64)
    tb = None if b is None else torch.tensor(b, dtype=torch.float64)
    y = torch.nn.functional.conv2d(tx, tw, tb, padding=pad).numpy()
    tdy = torch.tensor(dy, dtype=torch.float64)
    dx = torch.nn.grad.conv2d_input(x.shape, tw, tdy, padding=pad).numpy()
    dw = torch.nn.grad.conv2d_weight(tx, w.shape, tdy, padding=pad).numpy()
    return y, dx, dw


def ours(x, w, b, dy, pad):
    y = L.conv2d(E(x), E(w), None if b is None else E(b), padding=pad)
    dx = L.conv2d_input_grad(x.shape, E(w), E(dy), padding=pad)
    dw = L.conv2d_weight_grad(E(x), w.shape, E(dy), padding=pad)
    return N(y), N(dx), N(dw)


def check(got, ref, what):
    scale = np.abs(ref).max()
    err = np.abs(got.astype(np.float64) - ref).max() / scale
    assert err <= TOL[what], f"{what}: max error {err:.2e} of the largest value"


def case(n, c, k, h, w, pad, bias=True):
    ho, wo = h + 2 * pad - 2, w + 2 * pad - 2
    b = rand(k) if bias else None
    return rand(n, c, h, w), rand(k, c, 3, 3), b, rand(n, k, ho, wo)


# (batch, in, out, H, W, padding): every one takes Winograd for all three passes
HITS = [(2, 64, 64, 16, 16, 1),       # the ResNet block's shape, smaller
        (3, 16, 24, 20, 24, 0),       # partial tiles on both edges of the 18x22 output
        (2, 16, 20, 18, 18, 2),       # padding 2: the input gradient pads by 0
        (1, 32, 16, 24, 20, 1)]       # batch 1, unequal channels


# input gradients whose 4x4 tiles overhang the image (sides no multiple of 4) with
# fewer than 64 channels: rows of 7 tiles (26 wide), of 10 (38: a whole vector
# and a part), of 5 (18, 19), and the input transform's whole-vector stores past
# each tile row; 12 images of 7 tile rows make 3 forward blocks on 1 thread
# (36 + 36 + 12 rows) and 36 + 6 on each of 2
OVERHANG = [(2, 32, 64, 26, 26, 0), (2, 32, 64, 26, 26, 1), (3, 32, 24, 22, 38, 1),
            (2, 24, 16, 30, 18, 1), (2, 20, 16, 27, 19, 1), (12, 16, 24, 26, 26, 1)]


@pytest.mark.parametrize("n,c,k,h,w,pad", HITS)
def test_winograd_vs_torch(n, c, k, h, w, pad):
    x, wt, b, dy = case(n, c, k, h, w, pad)
    for got, ref, what in zip(ours(x, wt, b, dy, pad), refs(x, wt, b, dy, pad),
                              ("y", "dx", "dw")):
        check(got, ref, what)


@pytest.mark.parametrize("n,c,k,h,w,pad", HITS[:2])
def test_winograd_is_taken_and_off_switch(n, c, k, h, w, pad):
    """the hit shapes run Winograd (their last bits differ from the im2col path's),
    and _winograd(False) sends them back to im2col, as accurate as torch"""
    x, wt, b, dy = case(n, c, k, h, w, pad)
    assert L._winograd() is True
    on = ours(x, wt, b, dy, pad)
    try:
        assert L._winograd(False) is False
        off = ours(x, wt, b, dy, pad)
    finally:
        L._winograd(True)
    for a, o, ref in zip(on, off, refs(x, wt, b, dy, pad)):
        assert not np.array_equal(a, o)
        np.testing.assert_allclose(o, ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())


# around the thresholds: these stay on im2col and keep its elementwise accuracy
MISSES = [(2, 8, 32, 20, 20, 1),      # 8 input channels
          (2, 32, 8, 20, 20, 1),      # 8 output channels
          (2, 32, 32, 12, 12, 0),     # 10x10 output (12x12 of tiles)
          (2, 32, 32, 12, 12, 1)]     # 12x12 output with 32 channels


@pytest.mark.parametrize("n,c,k,h,w,pad", MISSES)
def test_below_thresholds_im2col(n, c, k, h, w, pad):
    x, wt, b, dy = case(n, c, k, h, w, pad)
    for got, ref in zip(ours(x, wt, b, dy, pad), refs(x, wt, b, dy, pad)):
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=2e-4)


def test_strided_and_noncontiguous_inputs():
    """views (a channel slice, a column stride, a transposed layout) give the
    results of their contiguous copies"""
    base = rand(2, 40, 20, 41)
    x = base[:, 4:36, :, ::2]                                   # (2, 32, 20, 21)
    xe = E(base)[:, 4:36, :, ::2]
    wt = rand(24, 32, 3, 3)
    we = E(np.ascontiguousarray(wt.transpose(1, 0, 2, 3))).permute(1, 0, 2, 3)
    assert not xe.is_contiguous() and not we.is_contiguous()
    y = N(L.conv2d(xe, we, padding=1))
    np.testing.assert_array_equal(y, N(L.conv2d(E(x), E(wt), padding=1)))
    dy = rand(*y.shape)
    dye = E(np.ascontiguousarray(dy.transpose(0, 1, 3, 2))).transpose(2, 3)
    dx = N(L.conv2d_input_grad(x.shape, we, dye, padding=1))
    np.testing.assert_array_equal(dx, N(L.conv2d_input_grad(x.shape, E(wt), E(dy), padding=1)))
    dw = N(L.conv2d_weight_grad(xe, wt.shape, dye, padding=1))
    np.testing.assert_array_equal(dw, N(L.conv2d_weight_grad(E(x), wt.shape, E(dy), padding=1)))
    for got, ref, what in zip((y, dx, dw), refs(x, wt, None, dy, 1), ("y", "dx", "dw")):
        check(got, ref, what)


@pytest.mark.parametrize("n,c,k,h,w,pad", [(4, 16, 16, 32, 32, 1), HITS[1], MISSES[0],
                                           MISSES[2], (16, 1, 32, 26, 26, 0),
                                           (6, 16, 16, 8, 8, 1), (5, 32, 32, 26, 26, 1)])
def test_bit_identical_across_threads(n, c, k, h, w, pad):
    """Winograd's three passes and the im2col paths (the weight gradient's image
    slices included) give the same bits on 1 and 2 threads; 5 images of 7 tile
    rows split between two threads mid-image (the forward's 35 rows in one
    block on one thread, 17 + 18 on two), and their weight gradient's 5 slices
    summed by both threads"""
    x, wt, b, dy = case(n, c, k, h, w, pad)
    old = ember.get_num_threads()
    try:
        got = []
        for nt in (1, 2):
            ember.set_num_threads(nt)
            got.append(ours(x, wt, b, dy, pad))
    finally:
        ember.set_num_threads(old)
    for a, o in zip(*got):
        np.testing.assert_array_equal(a, o)


def test_bit_identical_across_threads_1x1_weight_grad():
    x, dy = rand(10, 16, 9, 9), rand(10, 24, 9, 9)
    old = ember.get_num_threads()
    try:
        got = []
        for nt in (1, 2):
            ember.set_num_threads(nt)
            got.append(N(L.conv2d_weight_grad(E(x), (24, 16, 1, 1), E(dy))))
    finally:
        ember.set_num_threads(old)
    np.testing.assert_array_equal(got[0], got[1])


@pytest.mark.parametrize("shape", [HITS[1], OVERHANG[2], OVERHANG[-1]])
@pytest.mark.parametrize("isa", [0, 1])
def test_lower_isa_variants(isa, shape):
    """the generic (4-lane) and AVX2 builds of the transforms and the GEMM"""
    hw = L._kernel_isa()
    if isa > hw:
        pytest.skip("CPU lacks this ISA")
    x, wt, b, dy = case(*shape)
    try:
        assert L._set_kernel_isa(isa) == isa
        got = ours(x, wt, b, dy, shape[-1])
    finally:
        L._set_kernel_isa(-1)
    assert L._kernel_isa() == hw
    for g, ref, what in zip(got, refs(x, wt, b, dy, shape[-1]), ("y", "dx", "dw")):
        check(g, ref, what)


def test_module_training_step_vs_torch():
    """nn.Conv2d forward and backward through autograd (the formulas call the
    three passes), float32 against torch's float32"""
    tm = torch.nn.Conv2d(16, 32, 3, padding=1)
    m = ember.nn.Conv2d(16, 32, 3, padding=1)
    with ember.no_grad():
        m.weight.copy_(E(tm.weight.detach().numpy()))
        m.bias.copy_(E(tm.bias.detach().numpy()))
    x = rand(2, 16, 20, 20)
    tx = torch.tensor(x, requires_grad=True)
    xe = E(x).requires_grad_(True)
    ty, y = tm(tx), m(xe)
    g = rand(*ty.shape)
    ty.backward(torch.tensor(g))
    y.backward(E(g))
    for got, ref, what in ((y, ty, "y"), (xe.grad, tx.grad, "dx"), (m.weight.grad, tm.weight.grad,
                                                                   "dw")):
        check(N(got.detach()), ref.detach().double().numpy(), what)
    np.testing.assert_allclose(N(m.bias.grad), tm.bias.grad.numpy(), rtol=1e-4, atol=1e-3)


def test_float64_keeps_exact_path():
    """float64 never runs Winograd: as accurate as a float64 direct sum"""
    x, wt, b, dy = (a.astype(np.float64) for a in case(2, 16, 16, 16, 16, 1))
    y, dx, dw = ours(x, wt, b, dy, 1)
    ry, rdx, rdw = refs(x, wt, b, dy, 1)
    for got, ref in ((y, ry), (dx, rdx), (dw, rdw)):
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-11)


# the direct weight gradient (few taps per output channel, stride 1 along W)
@pytest.mark.parametrize("shape,kw", [
    ((16, 1, 32, 26, 26), {}),                                  # digits CNN's first conv
    ((4, 3, 16, 21, 19), dict(padding=1)),                      # RGB, row tails
    ((3, 2, 8, 17, 20), dict(padding=(2, 1), dilation=2, stride=(2, 1))),
    ((2, 12, 12, 15, 16), dict(padding=1, groups=12)),          # depthwise
    ((2, 2, 4, 9, 30), dict(padding=(0, 2)))])
def test_direct_weight_grad_vs_torch(shape, kw):
    n, c, k, h, w = shape
    x, wt = rand(n, c, h, w), rand(k, c // kw.get("groups", 1), 3, 3)
    tx, tw = torch.tensor(x, dtype=torch.float64), torch.tensor(wt, dtype=torch.float64)
    y = torch.nn.functional.conv2d(tx, tw, **kw)
    dy = rand(*y.shape)
    ref = torch.nn.grad.conv2d_weight(tx, wt.shape, torch.tensor(dy, dtype=torch.float64),
                                      **kw).numpy()
    got = N(L.conv2d_weight_grad(E(x), wt.shape, E(dy), **kw))
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5 * np.abs(ref).max())
    old = ember.get_num_threads()
    try:
        ember.set_num_threads(2)
        np.testing.assert_array_equal(N(L.conv2d_weight_grad(E(x), wt.shape, E(dy), **kw)), got)
    finally:
        ember.set_num_threads(old)


@pytest.mark.parametrize("n,c,k,h,w,pad", OVERHANG)
def test_input_grad_winograd_off_multiples_of_4(n, c, k, h, w, pad):
    """these input gradients take Winograd (their bits differ from the im2col
    path's), as accurate as the forward, the same bits on 1 and 2 threads"""
    x, wt, b, dy = case(n, c, k, h, w, pad)
    on = ours(x, wt, b, dy, pad)
    try:
        L._winograd(False)
        off = ours(x, wt, b, dy, pad)
    finally:
        L._winograd(True)
    assert not np.array_equal(on[1], off[1])
    for got, ref, what in zip(on, refs(x, wt, b, dy, pad), ("y", "dx", "dw")):
        check(got, ref, what)
    old = ember.get_num_threads()
    try:
        ember.set_num_threads(2)
        two = ours(x, wt, b, dy, pad)
    finally:
        ember.set_num_threads(old)
    for a, o in zip(on, two):
        np.testing.assert_array_equal(a, o)
