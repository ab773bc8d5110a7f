"""channels_last without layout round trips: the 3x3 conv's Winograd kernels on NHWC tiles
(forward, input gradient, weight gradient), batch_norm over (rows, channels) and
adaptive average pooling in NHWC.  Values against PyTorch (float64 references), the
layouts against torch's, the NCHW results of the same ops, thread-count identity and
the lower ISA copies of the kernels.

The Winograd tolerances are those of tests/test_conv_winograd.py (max |error| / max
|reference|): the NHWC kernels run the same transforms."""
import numpy as np
import pytest

import ember
from ember._C import conv as L

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(7)
TOL = {"y": 3e-5, "dx": 3e-5, "dw": 6e-5}
CL = (ember.channels_last, torch.channels_last)


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def E(a, cl=False):
    t = ember.from_numpy(np.ascontiguousarray(a))
    return t.contiguous(memory_format=ember.channels_last) if cl else t


def N(t):
    return np.asarray(t.detach() if hasattr(t, "detach") else t).copy()


def is_cl(t):
    return t.is_contiguous(memory_format=ember.channels_last)


def check(got, ref, what):
    err = np.abs(got.astype(np.float64) - ref).max() / np.abs(ref).max()
    assert err <= TOL[what], f"{what}: max error {err:.2e} of the largest value"


def refs(x, w, b, dy, pad):
    tx, tw = torch.tensor(x, dtype=torch.float64), torch.tensor(w, dtype=torch.float64)
    tdy = torch.tensor(dy, dtype=torch.float64)
    tb = None if b is None else torch.tensor(b, dtype=torch.float64)
    return (torch.nn.functional.conv2d(tx, tw, tb, padding=pad).numpy(),
            torch.nn.grad.conv2d_input(x.shape, tw, tdy, padding=pad).numpy(),
            torch.nn.grad.conv2d_weight(tx, w.shape, tdy, padding=pad).numpy())


def passes(x, w, b, dy, pad, xcl, wcl):
    """the three passes in ember with x (and dy) / w channels-last as asked"""
    xe, we, dye = E(x, xcl), E(w, wcl), E(dy, xcl)
    y = L.conv2d(xe, we, None if b is None else E(b), padding=pad)
    dx = L.conv2d_input_grad(x.shape, we, dye, padding=pad)
    dw = L.conv2d_weight_grad(xe, w.shape, dye, padding=pad)
    return y, dx, dw


def case(n, c, k, h, w, pad):
    ho, wo = h + 2 * pad - 2, w + 2 * pad - 2
    return rand(n, c, h, w), rand(k, c, 3, 3), rand(k), rand(n, k, ho, wo)


# every one takes the NHWC Winograd kernels in all three passes; channel counts that
# are no multiple of the 4/8/16 lanes exercise the partial channel vectors
HITS = [(2, 64, 64, 16, 16, 1),       # the ResNet block's shape, smaller
        (3, 20, 24, 17, 19, 1),       # partial tiles and partial channel vectors
        (2, 16, 20, 18, 18, 2),       # padding 2: the input gradient pads by 0
        (1, 33, 17, 20, 21, 0)]       # no padding, batch 1


@pytest.mark.parametrize("n,c,k,h,w,pad", HITS)
@pytest.mark.parametrize("xcl,wcl", [(True, True), (True, False), (False, True)])
def test_nhwc_winograd_vs_torch_and_layouts(n, c, k, h, w, pad, xcl, wcl):
    x, wt, b, dy = case(n, c, k, h, w, pad)
    got = passes(x, wt, b, dy, pad, xcl, wcl)
    for g, ref, what in zip(got, refs(x, wt, b, dy, pad), ("y", "dx", "dw")):
        check(N(g), ref, what)
    # torch's float32 layouts: channels-last results for a channels-last operand (the
    # input gradient as its autograd lays it out, the weight gradient as
    # torch.nn.grad.conv2d_weight does from the same operands)
    fmt = [torch.channels_last if f else torch.contiguous_format for f in (xcl, wcl)]
    tx = torch.tensor(x).contiguous(memory_format=fmt[0]).requires_grad_(True)
    tw = torch.tensor(wt).contiguous(memory_format=fmt[1])
    tdy = torch.tensor(dy).contiguous(memory_format=fmt[0])
    ty = torch.nn.functional.conv2d(tx, tw, torch.tensor(b), padding=pad)
    tdx, = torch.autograd.grad(ty, [tx], tdy)
    tdw = torch.nn.grad.conv2d_weight(tx.detach(), wt.shape, tdy, padding=pad)
    for e, t in zip(got, (ty, tdx, tdw)):
        assert is_cl(e) == t.is_contiguous(memory_format=torch.channels_last)


@pytest.mark.parametrize("n,c,k,h,w,pad", HITS[:2])
def test_nhwc_matches_nchw(n, c, k, h, w, pad):
    """the NHWC kernels give the NCHW kernels' results (the same transforms; the GEMMs
    sum in another order)"""
    x, wt, b, dy = case(n, c, k, h, w, pad)
    for a, o, what in zip(passes(x, wt, b, dy, pad, True, True),
                          passes(x, wt, b, dy, pad, False, False), ("y", "dx", "dw")):
        check(N(a), N(o).astype(np.float64), what)


@pytest.mark.parametrize("n,c,k,h,w,pad", [(4, 16, 16, 32, 32, 1), HITS[1]])
def test_nhwc_bit_identical_across_threads(n, c, k, h, w, pad):
    x, wt, b, dy = case(n, c, k, h, w, pad)
    old = ember.get_num_threads()
    try:
        got = []
        for nt in (1, 2):
            ember.set_num_threads(nt)
            got.append([N(t) for t in passes(x, wt, b, dy, pad, True, True)])
    finally:
        ember.set_num_threads(old)
    for a, o in zip(*got):
        np.testing.assert_array_equal(a, o)


@pytest.mark.parametrize("isa", [0, 1])
def test_nhwc_lower_isa_variants(isa):
    """the generic (4-lane) and AVX2 (8-lane) copies of the NHWC transforms"""
    hw = L._kernel_isa()
    if isa > hw:
        pytest.skip("CPU lacks this ISA")
    x, wt, b, dy = case(*HITS[1])
    try:
        assert L._set_kernel_isa(isa) == isa
        got = passes(x, wt, b, dy, HITS[1][-1], True, True)
    finally:
        L._set_kernel_isa(-1)
    for g, ref, what in zip(got, refs(x, wt, b, dy, HITS[1][-1]), ("y", "dx", "dw")):
        check(N(g), ref, what)


def test_nhwc_winograd_off_switch():
    """with Winograd off, channels-last convs take the other paths, as accurate"""
    x, wt, b, dy = case(*HITS[1])
    try:
        L._winograd(False)
        got = passes(x, wt, b, dy, 1, True, True)
    finally:
        L._winograd(True)
    for g, ref in zip(got, refs(x, wt, b, dy, 1)):
        np.testing.assert_allclose(N(g), ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())


# ---- batch_norm -------------------------------------------------------------------
BN_CASES = [((4, 64, 6, 5), np.float32), ((3, 5, 7, 6), np.float64),
            ((2, 19, 3, 4, 5), np.float32), ((2, 3, 4, 4, 2), np.float64)]


@pytest.mark.parametrize("shape,dtype", BN_CASES)
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_channels_last_vs_torch(shape, dtype, training, affine):
    mods = {4: (ember.nn.BatchNorm2d, torch.nn.BatchNorm2d),
            5: (ember.nn.BatchNorm3d, torch.nn.BatchNorm3d)}[len(shape)]
    fmt = {4: (ember.channels_last, torch.channels_last),
           5: (ember.channels_last_3d, torch.channels_last_3d)}[len(shape)]
    tdt = torch.float32 if dtype == np.float32 else torch.float64
    c = shape[1]
    tm = mods[1](c, affine=affine, dtype=tdt)
    with torch.no_grad():
        if affine:
            tm.weight.uniform_(0.5, 1.5)
            tm.bias.normal_()
        tm.running_mean.normal_()
        tm.running_var.uniform_(0.5, 2.0)
    em = mods[0](c, affine=affine, dtype=ember.float32 if dtype == np.float32 else ember.float64)
    em.load_state_dict({k: ember.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    tm.train(training)
    em.train(training)
    xa = rand(*shape, dtype=dtype) * 3 + 1
    ga = rand(*shape, dtype=dtype)
    xt = torch.tensor(xa).contiguous(memory_format=fmt[1]).requires_grad_(True)
    xe = ember.tensor(xa).contiguous(memory_format=fmt[0]).requires_grad_(True)
    yt, ye = tm(xt), em(xe)
    yt.backward(torch.tensor(ga).contiguous(memory_format=fmt[1]))
    ye.backward(ember.tensor(ga).contiguous(memory_format=fmt[0]))
    assert ye.is_contiguous(memory_format=fmt[0]) and xe.grad.is_contiguous(memory_format=fmt[0])
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-12)
    pairs = [(ye, yt), (xe.grad, xt.grad), (em.running_mean, tm.running_mean),
             (em.running_var, tm.running_var)]
    if affine:
        pairs += [(em.weight.grad, tm.weight.grad), (em.bias.grad, tm.bias.grad)]
    for e, t in pairs:
        np.testing.assert_allclose(N(e), t.detach().numpy(), **tol)


def test_batch_norm_channels_last_matches_nchw_and_threads():
    """the channels-last kernels agree with the NCHW ones, and give the same bits on 1
    and 2 threads (a size that splits across threads)"""
    xa, ga = rand(16, 24, 16, 16), rand(16, 24, 16, 16)
    w, b = ember.tensor(rand(24) + 2), ember.tensor(rand(24))
    old = ember.get_num_threads()
    out = {}
    try:
        for cl in (False, True):
            for nt in (1, 2):
                ember.set_num_threads(nt)
                x = E(xa, cl).requires_grad_(True)
                wt, bt = w.clone().requires_grad_(True), b.clone().requires_grad_(True)
                rm, rv = ember.zeros(24), ember.ones(24)
                y = ember.nn.functional.batch_norm(x, rm, rv, wt, bt, training=True)
                y.backward(E(ga, cl))
                out[cl, nt] = [N(t) for t in (y, x.grad, wt.grad, bt.grad, rm, rv)]
    finally:
        ember.set_num_threads(old)
    for a, o in zip(out[True, 1], out[True, 2]):
        np.testing.assert_array_equal(a, o)
    for a, o in zip(out[True, 1], out[False, 1]):
        np.testing.assert_allclose(a, o, rtol=1e-4, atol=2e-5)


# ---- adaptive average pooling -----------------------------------------------------
@pytest.mark.parametrize("out", [(1, 1), (3, 5), (4, 4)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_adaptive_avg_pool_channels_last(out, dtype):
    xa = rand(3, 10, 8, 11, dtype=dtype)
    xt = torch.tensor(xa).contiguous(memory_format=torch.channels_last).requires_grad_(True)
    xe = ember.tensor(xa).contiguous(memory_format=ember.channels_last).requires_grad_(True)
    yt = torch.nn.functional.adaptive_avg_pool2d(xt, out)
    ye = ember.nn.functional.adaptive_avg_pool2d(xe, out)
    ga = rand(*yt.shape, dtype=dtype)
    yt.backward(torch.tensor(ga))
    ye.backward(ember.tensor(ga))
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-14)
    for e, t in ((ye, yt), (xe.grad, xt.grad)):
        assert is_cl(e) == t.is_contiguous(memory_format=torch.channels_last)
        assert e.stride() == t.stride() or 1 in tuple(t.shape)
        np.testing.assert_allclose(N(e), t.detach().numpy(), **tol)


def test_adaptive_avg_pool_channels_last_threads():
    xa, ga = rand(16, 32, 16, 16), rand(16, 32, 2, 2)
    old = ember.get_num_threads()
    got = []
    try:
        for nt in (1, 2):
            ember.set_num_threads(nt)
            x = E(xa, True).requires_grad_(True)
            y = ember.nn.functional.adaptive_avg_pool2d(x, 2)
            y.backward(ember.tensor(ga))
            got.append((N(y), N(x.grad)))
    finally:
        ember.set_num_threads(old)
    for a, o in zip(*got):
        np.testing.assert_array_equal(a, o)


# ---- a ResNet-style block trained in channels_last -----------------------------------
def _block(nn, c=16):
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(c)
            self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(c)

        def forward(self, x):
            h = self.bn1(self.conv1(x)).relu()
            return (self.bn2(self.conv2(h)) + x).relu()
    return nn.Sequential(Block(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, 10))


def test_resnet_block_step_channels_last():
    """float32 forward and backward of the block in channels_last (every conv pass on
    the NHWC Winograd kernels) against torch's channels_last step and ember's NCHW one"""
    torch.manual_seed(0)
    mt = _block(torch.nn)
    state = {k: v.numpy().copy() for k, v in mt.state_dict().items()}
    xa, ya = rand(4, 16, 16, 16), RNG.integers(0, 10, 4)
    mt = mt.to(memory_format=torch.channels_last)
    xt = torch.tensor(xa).contiguous(memory_format=torch.channels_last)
    torch.nn.functional.cross_entropy(mt(xt), torch.tensor(ya)).backward()
    grads = {}
    for cl in (True, False):
        m = _block(ember.nn)
        m.load_state_dict({k: ember.tensor(v) for k, v in state.items()})
        x = E(xa)
        if cl:
            m = m.to(memory_format=ember.channels_last)
            x = x.contiguous(memory_format=ember.channels_last)
        ember.nn.functional.cross_entropy(m(x), ember.tensor(ya)).backward()
        grads[cl] = {n: N(p.grad) for n, p in m.named_parameters()}
        if cl:
            assert m[0].conv1.weight.grad.is_contiguous(memory_format=ember.channels_last)
    for n, p in mt.named_parameters():
        ref = p.grad.numpy()
        scale = np.abs(ref).max()
        np.testing.assert_allclose(grads[True][n], ref, rtol=0, atol=1e-4 * scale, err_msg=n)
        np.testing.assert_allclose(grads[True][n], grads[False][n], rtol=0, atol=1e-4 * scale,
                                   err_msg=n)
