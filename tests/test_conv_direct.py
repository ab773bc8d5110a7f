"""The direct float32 3x3 convolution for few channels (src_c/conv_dir_impl.h):
forward, input gradient and weight gradient against PyTorch in float64, the
shapes it takes by default, thread-count identity, views, the ISA variants,
the fallback for non-finite inputs, and the convolutions it must leave alone.

Its sums run in float32 in a fixed order (no transforms), so it is held to the
elementwise accuracy of the im2col path."""

import numpy as np
import pytest

import ember
from ember._C import conv as L

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(5)


def E(a):
    return ember.from_numpy(np.ascontiguousarray(a))


def N(t):
    return np.asarray(t).copy()


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def case(n, c, k, h, w, pad):
    return (rand(n, c, h, w), rand(k, c, 3, 3), rand(k),
            rand(n, k, h + 2 * pad - 2, w + 2 * pad - 2))


def ours(x, w, b, dy, pad, **kw):
    y = L.conv2d(E(x), E(w), None if b is None else E(b), padding=pad, **kw)
    dx = L.conv2d_input_grad(x.shape, E(w), E(dy), padding=pad, **kw)
    dw = L.conv2d_weight_grad(E(x), w.shape, E(dy), padding=pad, **kw)
    return N(y), N(dx), N(dw)


def refs(x, w, b, dy, pad, **kw):
    tx, tw = torch.tensor(x, dtype=torch.float64), torch.tensor(w, dtype=torch.float64)
    tb = None if b is None else torch.tensor(b, dtype=torch.float64)
    tdy = torch.tensor(dy, dtype=torch.float64)
    return (torch.nn.functional.conv2d(tx, tw, tb, padding=pad, **kw).numpy(),
            torch.nn.grad.conv2d_input(x.shape, tw, tdy, padding=pad, **kw).numpy(),
            torch.nn.grad.conv2d_weight(tx, w.shape, tdy, padding=pad, **kw).numpy())


def close(got, ref):
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=2e-5 * np.abs(ref).max())


class mode:
    """run with the direct kernel's mode set (0 off, 1 where it pays, 2 wherever it fits)"""

    def __init__(self, m):
        self.m = m

    def __enter__(self):
        self.old = L._direct3()
        L._direct3(self.m)

    def __exit__(self, *exc):
        L._direct3(self.old)


# (batch, in, out, H, W, padding)
SHAPES = [(4, 16, 16, 28, 28, 0),      # the small-channel block of a CNN
          (3, 16, 16, 26, 26, 1),
          (5, 1, 32, 28, 28, 0),       # the digits CNN's first conv
          (3, 3, 32, 32, 32, 1),       # RGB input
          (2, 8, 24, 13, 17, 1),       # odd sizes, channels not a multiple of the blocks
          (2, 5, 3, 9, 30, 0),         # fewer outputs than a block, wide rows
          (11, 2, 9, 3, 40, 1),        # one output row of three: short images
          (3, 4, 8, 20, 4, 0),         # rows of 2: one vector stores into several
          (2, 3, 16, 30, 30, 0)]       # unpadded: read in place but the last image


@pytest.mark.parametrize("n,c,k,h,w,pad", SHAPES)
def test_direct_vs_torch(n, c, k, h, w, pad):
    x, wt, b, dy = case(n, c, k, h, w, pad)
    with mode(2):
        got = ours(x, wt, b, dy, pad)
    for g, ref in zip(got, refs(x, wt, b, dy, pad)):
        close(g, ref)


@pytest.mark.parametrize("n,c,k,h,w,pad,passes", [
    (3, 16, 16, 28, 28, 0, (0, 1, 2)),     # 16 -> 16: all three passes
    (3, 16, 16, 30, 30, 1, (0, 1, 2)),
    (4, 1, 32, 28, 28, 0, (0, 2)),         # 1 or 3 inputs: forward, weight gradient
    (2, 3, 32, 32, 32, 1, (0, 2)),
    (2, 3, 32, 32, 32, 0, (0, 2)),
    (2, 3, 4, 32, 32, 1, (2,))])           # < 8 outputs: the forward's blocks idle
def test_taken_by_default(n, c, k, h, w, pad, passes):
    """the default picks the direct kernel for these passes (the bits of the
    forced mode) and the GEMM/Winograd paths for the others"""
    x, wt, b, dy = case(n, c, k, h, w, pad)
    with mode(2):
        forced = ours(x, wt, b, dy, pad)
    with mode(0):
        off = ours(x, wt, b, dy, pad)
    assert L._direct3() == 1
    default = ours(x, wt, b, dy, pad)
    for i in range(3):
        np.testing.assert_array_equal(default[i], forced[i] if i in passes else off[i])
    for g, ref in zip(off, refs(x, wt, b, dy, pad)):
        close(g, ref)


@pytest.mark.parametrize("n,c,k,h,w,pad", [SHAPES[0], SHAPES[3], (11, 16, 16, 20, 20, 1),
                                           (1, 3, 8, 12, 12, 0), (5, 1, 32, 28, 28, 0),
                                           (1, 16, 16, 20, 20, 1), (1, 3, 32, 32, 32, 1)])
def test_bit_identical_across_threads(n, c, k, h, w, pad):
    """(one image: the threads split its rows)"""
    x, wt, b, dy = case(n, c, k, h, w, pad)
    old = ember.get_num_threads()
    got = []
    try:
        with mode(2):
            for nt in (1, 2):
                ember.set_num_threads(nt)
                got.append(ours(x, wt, b, dy, pad))
    finally:
        ember.set_num_threads(old)
    for a, o in zip(*got):
        np.testing.assert_array_equal(a, o)


def test_views_give_their_copies_results():
    """a channel slice with a column stride, a permuted weight, a transposed grad"""
    base = rand(3, 20, 22, 61)
    x = base[:, 2:18, :, ::2]                                   # (3, 16, 22, 31)
    xe = E(base)[:, 2:18, :, ::2]
    wt = rand(16, 16, 3, 3)
    we = E(np.ascontiguousarray(wt.transpose(1, 0, 2, 3))).permute(1, 0, 2, 3)
    assert not xe.is_contiguous() and not we.is_contiguous()
    with mode(1):
        y = N(L.conv2d(xe, we, padding=1))
        np.testing.assert_array_equal(y, N(L.conv2d(E(x), E(wt), padding=1)))
        dy = rand(*y.shape)
        dye = E(np.ascontiguousarray(dy.transpose(0, 1, 3, 2))).transpose(2, 3)
        dx = N(L.conv2d_input_grad(x.shape, we, dye, padding=1))
        np.testing.assert_array_equal(dx, N(L.conv2d_input_grad(x.shape, E(wt), E(dy),
                                                                padding=1)))
        dw = N(L.conv2d_weight_grad(xe, wt.shape, dye, padding=1))
        np.testing.assert_array_equal(dw, N(L.conv2d_weight_grad(E(x), wt.shape, E(dy),
                                                                 padding=1)))
    for g, ref in zip((y, dx, dw), refs(x, wt, None, dy, 1)):
        close(g, ref)


@pytest.mark.parametrize("isa", [0, 1])
def test_lower_isa_variants(isa):
    """the generic (4-lane) and AVX2 (8-lane) builds of the kernels"""
    hw = L._kernel_isa()
    if isa > hw:
        pytest.skip("CPU lacks this ISA")
    x, wt, b, dy = case(*SHAPES[4])
    try:
        assert L._set_kernel_isa(isa) == isa
        with mode(2):
            got = ours(x, wt, b, dy, 1)
    finally:
        L._set_kernel_isa(-1)
    for g, ref in zip(got, refs(x, wt, b, dy, 1)):
        close(g, ref)


def test_nonfinite_input_weight_grad_falls_back():
    """the weight gradient multiplies zeros into the thrown-away positions, which
    would turn an inf there into NaN: inputs with inf or NaN take the GEMM path"""
    x, wt, b, dy = case(2, 16, 16, 12, 12, 0)
    x[0, 3, 5, 11] = np.inf            # the last column: only the j = 2 taps touch it
    x[1, 7, 0, 0] = np.nan
    with mode(2):
        dw = N(L.conv2d_weight_grad(E(x), wt.shape, E(dy)))
    with mode(0):
        ref = N(L.conv2d_weight_grad(E(x), wt.shape, E(dy)))
    np.testing.assert_array_equal(dw, ref)
    assert np.isfinite(dw[:, 3, :, :2]).all() and np.isnan(dw[:, 7, 0, 0]).all()
    assert np.isfinite(dw[:, 7, 1:]).all()


def test_weight_grad_reads_no_nonfinite_past_an_image():
    """unpadded images are read in place, their last vectors running into the
    next image: an inf at its start must not reach the sums of the one before
    (which multiply it by zeros) -- the bits of the GEMM path"""
    x, wt, b, dy = case(3, 16, 16, 14, 14, 0)
    x[1, 0, 0, :2] = np.inf
    with mode(2):
        dw = N(L.conv2d_weight_grad(E(x), wt.shape, E(dy)))
    with mode(0):
        ref = N(L.conv2d_weight_grad(E(x), wt.shape, E(dy)))
    np.testing.assert_array_equal(dw, ref)
    assert np.isfinite(dw[:, 1:]).all()


@pytest.mark.parametrize("kw", [dict(groups=2), dict(dilation=2), dict(stride=2),
                                dict(padding=2)])
def test_other_convolutions_untouched(kw):
    """grouped, dilated, strided and padding-2 convolutions keep their paths
    (the forced mode changes no bit) and match torch"""
    pad = kw.pop("padding", 1)
    x, dy0 = rand(2, 16, 18, 18), None
    wt = rand(16, 16 // kw.get("groups", 1), 3, 3)
    y0 = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(wt), padding=pad, **kw)
    dy0 = rand(*y0.shape)
    with mode(2):
        forced = ours(x, wt, None, dy0, pad, **kw)
    with mode(0):
        off = ours(x, wt, None, dy0, pad, **kw)
    for a, o, ref in zip(forced, off, refs(x, wt, None, dy0, pad, **kw)):
        np.testing.assert_array_equal(a, o)
        close(a, ref)


def test_float64_untouched():
    x, wt, b, dy = (a.astype(np.float64) for a in case(2, 16, 16, 14, 14, 1))
    with mode(2):
        got = ours(x, wt, b, dy, 1)
    for g, ref in zip(got, refs(x, wt, b, dy, 1)):
        np.testing.assert_allclose(g, ref, rtol=1e-12, atol=1e-11)


def test_autograd_training_step_vs_torch():
    """nn.Conv2d 16 -> 16 forward and backward through autograd, float32"""
    tm = torch.nn.Conv2d(16, 16, 3, padding=1)
    m = ember.nn.Conv2d(16, 16, 3, padding=1)
    with ember.no_grad():
        m.weight.copy_(E(tm.weight.detach().numpy()))
        m.bias.copy_(E(tm.bias.detach().numpy()))
    x = rand(4, 16, 28, 28)
    tx, xe = torch.tensor(x, requires_grad=True), E(x).requires_grad_(True)
    ty, y = tm(tx), m(xe)
    g = rand(*ty.shape)
    ty.backward(torch.tensor(g))
    y.backward(E(g))
    for got, ref in ((y, ty), (xe.grad, tx.grad), (m.weight.grad, tm.weight.grad),
                     (m.bias.grad, tm.bias.grad)):
        close(N(got.detach()), ref.detach().double().numpy())
