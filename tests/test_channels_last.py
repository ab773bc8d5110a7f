"""channels_last end to end, against PyTorch: every op's values, strides and
is_contiguous(memory_format=...) flags, forward and backward (the leaves' .grad), and a
CNN training step of a model moved to channels_last."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional
pytestmark = pytest.mark.filterwarnings("ignore:Using padding='same':UserWarning")

_FMT = {"c": (ember.contiguous_format, torch.contiguous_format),
        "cl": (ember.channels_last, torch.channels_last),
        "cl3": (ember.channels_last_3d, torch.channels_last_3d)}


def _pair(shape, fmt="cl", seed=0, grad=True, dtype=np.float64):
    """the same random values as an ember and a torch tensor laid out in ``fmt``"""
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    e, t = ember.tensor(a), torch.tensor(a)
    if fmt != "c":
        e = e.contiguous(memory_format=_FMT[fmt][0])
        t = t.contiguous(memory_format=_FMT[fmt][1])
    return e.requires_grad_(grad), t.requires_grad_(grad)


def _np(x):
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else x.detach().numpy()


def assert_layout(e, t):
    """the same shape, the same strides (size-1 dims excepted, as torch's layout checks
    do) and the same contiguity in every memory format"""
    assert tuple(e.shape) == tuple(t.shape)
    big = [d for d in range(t.dim()) if t.shape[d] != 1]
    assert [e.stride()[d] for d in big] == [t.stride()[d] for d in big], (e.stride(), t.stride())
    for name, (ef, tf) in _FMT.items():
        if name == "cl" and t.dim() != 4 or name == "cl3" and t.dim() != 5:
            continue
        assert e.is_contiguous(memory_format=ef) == t.is_contiguous(memory_format=tf), name


def assert_same(e, t, rtol=1e-7, atol=1e-9):
    assert_layout(e, t)
    np.testing.assert_allclose(_np(e), _np(t), rtol=rtol, atol=atol)


def _check(fn, specs, seed=0, backward=True, rtol=1e-7, atol=1e-9):
    """run ``fn(lib, F, *inputs)`` in ember and torch on inputs made from ``specs``
    ((shape, fmt) pairs); compare the output and, after a backward pass of the same
    random gradient, every input's .grad"""
    pairs = [_pair(s, f, seed + i) for i, (s, f) in enumerate(specs)]
    ye = fn(ember, F, *[p[0] for p in pairs])
    yt = fn(torch, TF, *[p[1] for p in pairs])
    assert_same(ye, yt, rtol, atol)
    if not backward:
        return
    g = np.random.default_rng(seed + 99).standard_normal(tuple(yt.shape))
    ye.backward(ember.tensor(g))
    yt.backward(torch.tensor(g))
    for e, t in pairs:
        assert_same(e.grad, t.grad, rtol, atol)


X4 = ((2, 3, 6, 7), "cl")
X5 = ((2, 3, 4, 5, 6), "cl3")

# ---- elementwise: torch's TensorIterator layout rule ------------------------------
ELEMENTWISE = {
    "relu": (lambda m, F, x: F.relu(x), [X4]),
    "gelu": (lambda m, F, x: F.gelu(x), [X4]),
    "gelu_tanh": (lambda m, F, x: F.gelu(x, approximate="tanh"), [X4]),
    "silu": (lambda m, F, x: F.silu(x), [X4]),
    "sigmoid": (lambda m, F, x: m.sigmoid(x), [X4]),
    "tanh": (lambda m, F, x: m.tanh(x), [X4]),
    "exp": (lambda m, F, x: m.exp(x), [X4]),
    "leaky_relu": (lambda m, F, x: F.leaky_relu(x, 0.1), [X4]),
    "elu": (lambda m, F, x: F.elu(x), [X4]),
    "softplus": (lambda m, F, x: F.softplus(x), [X4]),
    "hardtanh": (lambda m, F, x: F.hardtanh(x), [X4]),
    "relu6": (lambda m, F, x: F.relu6(x * 4), [X4]),
    "clamp": (lambda m, F, x: x.clamp(-0.5, 0.5), [X4]),
    "pow": (lambda m, F, x: x ** 2, [X4]),
    "neg_scalar_mul": (lambda m, F, x: -x * 3 + 1, [X4]),
    "add_cl_c": (lambda m, F, x, y: x + y, [X4, ((2, 3, 6, 7), "c")]),
    "add_c_cl": (lambda m, F, x, y: x + y, [((2, 3, 6, 7), "c"), X4]),
    "mul_both_cl": (lambda m, F, x, y: x * y, [X4, X4]),
    "bias_broadcast": (lambda m, F, x, b: x + b, [X4, ((3, 1, 1), "c")]),
    "bias_broadcast_first": (lambda m, F, b, x: b * x, [((1, 3, 1, 1), "c"), X4]),
    "row_broadcast": (lambda m, F, x, r: x - r, [X4, ((7,), "c")]),
    "sub_div": (lambda m, F, x, y: (x - y) / (y * y + 1), [X4, X4]),
    "where": (lambda m, F, x, y: m.where(x > 0, x, y), [X4, ((2, 3, 6, 7), "c")]),
    "lerp": (lambda m, F, x, y: m.lerp(x, y, 0.3), [X4, X4]),
    "maximum": (lambda m, F, x, y: m.maximum(x, y), [X4, ((2, 3, 6, 7), "c")]),
    "sliced_cl": (lambda m, F, x: m.sigmoid(x[:, :, ::2, 1:]), [X4]),
    "cl3d_unary": (lambda m, F, x: F.relu(x) * 2, [X5]),
    "cl3d_binary": (lambda m, F, x, y: x + y, [X5, ((3, 1, 1, 1), "c")]),
}


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_elementwise(name):
    fn, specs = ELEMENTWISE[name]
    _check(fn, specs)


def test_elementwise_no_grad_and_inplace():
    e, t = _pair((2, 4, 5, 3), grad=False)
    assert_same(e.relu_(), t.relu_())
    assert_same(e.add_(1).mul_(2), t.add_(1).mul_(2))
    assert_same(e > 0, t > 0)
    assert_same(ember.abs(e), torch.abs(t))
    # a channels-last tensor that needs grad, written in place through the graph
    e, t = _pair((2, 4, 5, 3))
    ye, yt = e * 1, t * 1
    ye.relu_()
    yt.relu_()
    assert_same(ye, yt)
    ye.sum().backward()
    yt.sum().backward()
    assert_same(e.grad, t.grad)


def test_dtype_conversions_keep_format():
    e, t = _pair((2, 4, 5, 3), grad=False)
    assert_same(e.float(), t.float(), rtol=1e-6)
    assert_same(e.to(ember.float32), t.to(torch.float32), rtol=1e-6)
    assert_same(e.half() * 2, t.half() * 2, rtol=1e-3)
    assert_same(e.type_as(ember.zeros(1, dtype=ember.float32)),
                t.type_as(torch.zeros(1, dtype=torch.float32)), rtol=1e-6)
    assert_same(e.clone(), t.clone())
    assert_same(e.clone(memory_format=ember.contiguous_format),
                t.clone(memory_format=torch.contiguous_format))


@pytest.mark.parametrize("factory", ["empty_like", "zeros_like", "ones_like", "rand_like",
                                     "randn_like"])
def test_like_factories_preserve_format(factory):
    e, t = _pair((2, 4, 5, 3), grad=False)
    assert_layout(getattr(ember, factory)(e), getattr(torch, factory)(t))
    e5, t5 = _pair((2, 4, 5, 3, 2), "cl3", grad=False)
    assert_layout(getattr(ember, factory)(e5), getattr(torch, factory)(t5))
    assert_layout(getattr(ember, factory)(e, memory_format=ember.contiguous_format),
                  getattr(torch, factory)(t, memory_format=torch.contiguous_format))


def test_full_like_and_dropout_keep_format():
    e, t = _pair((2, 4, 5, 3), grad=False)
    assert_same(ember.full_like(e, 2.5), torch.full_like(t, 2.5))
    for p in (0.0, 0.5):
        de, dt = F.dropout(e, p), TF.dropout(t, p)
        assert_layout(de, dt)
        kept = _np(de) != 0
        np.testing.assert_allclose(_np(de)[kept], _np(e)[kept] / (1 - p))
    assert_layout(F.dropout2d(e, 0.5), TF.dropout2d(t, 0.5))


# ---- convolution, pooling, normalisation, resampling ------------------------------
W = ((4, 3, 3, 3), "c")
NN = {
    "conv2d_x_cl": (lambda m, F, x, w: F.conv2d(x, w, padding=1), [X4, W]),
    "conv2d_w_cl": (lambda m, F, x, w: F.conv2d(x, w, stride=2),
                    [((2, 3, 6, 7), "c"), ((4, 3, 3, 3), "cl")]),
    "conv2d_both_cl_bias": (lambda m, F, x, w, b: F.conv2d(x, w, b.reshape(4)),
                            [X4, ((4, 3, 3, 3), "cl"), ((4,), "c")]),
    "conv2d_1x1_cl": (lambda m, F, x, w: F.conv2d(x, w), [X4, ((5, 3, 1, 1), "cl")]),
    "conv2d_same_even_kernel": (lambda m, F, x, w: F.conv2d(x, w, padding="same"),
                                [X4, ((4, 3, 4, 2), "cl")]),
    "conv2d_dilated_strided": (lambda m, F, x, w: F.conv2d(x, w, stride=(2, 1), padding=2,
                                                          dilation=2), [X4, W]),
    "conv2d_float32": (lambda m, F, x, w: F.conv2d(x.float(), w.float(), padding=1).double(),
                       [((3, 5, 7, 6), "cl"), ((6, 5, 3, 3), "c")], {"rtol": 1e-4,
                                                                     "atol": 1e-4}),
    "conv2d_wide_cl": (lambda m, F, x, w: F.conv2d(x, w, padding=1),
                       [((2, 64, 5, 4), "cl"), ((8, 64, 3, 3), "cl")]),
    "conv2d_groups": (lambda m, F, x, w: F.conv2d(x, w, groups=3, padding=(1, 0)),
                      [((2, 6, 5, 5), "cl"), ((6, 2, 3, 3), "c")]),
    "conv_transpose2d": (lambda m, F, x, w: F.conv_transpose2d(x, w, stride=2),
                         [X4, ((3, 2, 3, 3), "c")]),
    "conv1d": (lambda m, F, x, w: F.conv1d(x, w), [((2, 3, 9), "c"), ((4, 3, 3), "c")]),
    "conv3d_cl3": (lambda m, F, x, w: F.conv3d(x, w, padding=1),
                   [X5, ((4, 3, 3, 3, 3), "c")]),
    "conv3d_cl3_float32": (lambda m, F, x, w: F.conv3d(x.float(), w.float()).double(),
                           [X5, ((4, 3, 2, 2, 2), "c")], {"rtol": 1e-4, "atol": 1e-5}),
    "conv3d_contiguous": (lambda m, F, x, w: F.conv3d(x, w),
                          [((2, 3, 4, 5, 6), "c"), ((4, 3, 2, 3, 3), "c")]),
    "max_pool2d": (lambda m, F, x: F.max_pool2d(x, 2), [X4]),
    "max_pool2d_pad": (lambda m, F, x: F.max_pool2d(x, 3, 2, 1), [X4]),
    "max_pool3d": (lambda m, F, x: F.max_pool3d(x, 2), [X5]),
    "avg_pool2d": (lambda m, F, x: F.avg_pool2d(x, 2, ceil_mode=True), [X4]),
    "adaptive_avg_pool2d": (lambda m, F, x: F.adaptive_avg_pool2d(x, (2, 3)), [X4]),
    "adaptive_avg_pool2d_1": (lambda m, F, x: F.adaptive_avg_pool2d(x, 1), [X4]),
    "adaptive_max_pool2d": (lambda m, F, x: F.adaptive_max_pool2d(x, (3, 2)), [X4]),
    "batch_norm_train": (lambda m, F, x, w, b: F.batch_norm(
        x, m.zeros(3, dtype=x.dtype), m.ones(3, dtype=x.dtype), w.reshape(3), b.reshape(3),
        training=True), [X4, ((3,), "c"), ((3,), "c")]),
    "batch_norm_eval": (lambda m, F, x, w: F.batch_norm(
        x, m.full((3,), 0.1, dtype=x.dtype), m.full((3,), 2.0, dtype=x.dtype), w.reshape(3),
        None), [X4, ((3,), "c")]),
    "batch_norm_3d": (lambda m, F, x: F.batch_norm(x, None, None, training=True), [X5]),
    "group_norm": (lambda m, F, x, w, b: F.group_norm(x, 3, w, b),
                   [((2, 6, 4, 5), "cl"), ((6,), "c"), ((6,), "c")]),
    "nearest": (lambda m, F, x: F.interpolate(x, scale_factor=2), [X4]),
    "bilinear": (lambda m, F, x: F.interpolate(x, size=(9, 5), mode="bilinear"), [X4]),
    "bilinear_corners": (lambda m, F, x: F.interpolate(x, scale_factor=2, mode="bilinear",
                                                        align_corners=True), [X4]),
    "bicubic": (lambda m, F, x: F.interpolate(x, scale_factor=2, mode="bicubic"), [X4]),
    "trilinear": (lambda m, F, x: F.interpolate(x, scale_factor=2, mode="trilinear"), [X5]),
    "pad_constant": (lambda m, F, x: F.pad(x, (1, 2, 0, 1)), [X4]),
    "cat": (lambda m, F, x, y: m.cat([x, y], 1), [X4, X4]),
    "cat_mixed": (lambda m, F, x, y: m.cat([x, y], 1), [X4, ((2, 3, 6, 7), "c")]),
}


@pytest.mark.parametrize("name", sorted(NN))
def test_nn_ops(name):
    fn, specs, *tol = NN[name]
    _check(fn, specs, **(tol[0] if tol else {}))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_max_pool_channels_last_indices_and_nan(dtype):
    a = np.random.default_rng(4).standard_normal((2, 5, 7, 6)).astype(dtype)
    a[0, 1, 2, 3] = np.nan
    a[1, 4, :2, :2] = 7.0           # ties: the first tap wins
    for kw in ({"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1,
                                    "ceil_mode": True},
               {"kernel_size": 2, "dilation": 2}):
        xe = ember.tensor(a).contiguous(memory_format=ember.channels_last).requires_grad_()
        xt = torch.tensor(a).contiguous(memory_format=torch.channels_last).requires_grad_()
        ye, ie = F.max_pool2d(xe, return_indices=True, **kw)
        yt, it = TF.max_pool2d(xt, return_indices=True, **kw)
        assert_layout(ye, yt)
        assert_layout(ie, it)
        np.testing.assert_array_equal(_np(ye), _np(yt))
        np.testing.assert_array_equal(_np(ie), _np(it))
        g = np.random.default_rng(6).standard_normal(tuple(yt.shape)).astype(dtype)
        ye.backward(ember.tensor(g))
        yt.backward(torch.tensor(g))
        assert_same(xe.grad, xt.grad, rtol=1e-6, atol=1e-6)


def test_conv_input_grad_format():
    # torch's backward gives a channels-last input gradient for a channels-last conv
    x = [_pair((2, 3, 6, 7), f, 1) for f in ("cl", "c")]
    w = [_pair((4, 3, 3, 3), f, 2) for f in ("c", "cl")]
    for (xe, xt), (we, wt) in zip(x, w):
        ye, yt = F.conv2d(xe, we), TF.conv2d(xt, wt)
        g = np.random.default_rng(3).standard_normal(tuple(yt.shape))
        ge, = ember.autograd.grad(ye, [xe], ember.tensor(g))
        gt, = torch.autograd.grad(yt, [xt], torch.tensor(g))
        assert_same(ge, gt)


def test_float32_conv_bn_relu_pool_chain():
    xe, xt = _pair((4, 8, 10, 10), dtype=np.float32)
    we, wt = _pair((16, 8, 3, 3), "c", 1, dtype=np.float32)
    ye = F.max_pool2d(F.relu(F.batch_norm(F.conv2d(xe, we, padding=1), None, None,
                                          training=True)), 2)
    yt = TF.max_pool2d(TF.relu(TF.batch_norm(TF.conv2d(xt, wt, padding=1), None, None,
                                             training=True)), 2)
    assert_same(ye, yt, rtol=1e-4, atol=1e-4)
    ye.sum().backward()
    yt.sum().backward()
    assert_same(xe.grad, xt.grad, rtol=1e-3, atol=1e-4)
    assert_same(we.grad, wt.grad, rtol=1e-3, atol=1e-3)


# ---- a training step of a small CNN moved to channels_last --------------------------
def _cnn(nn):
    return nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Conv2d(8, 16, 3), nn.BatchNorm2d(16), nn.ReLU(),
                         nn.AdaptiveAvgPool2d(2), nn.Flatten(), nn.Linear(64, 10))


def _train(lib, model, x, y, steps=2):
    opt = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = lib.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def test_cnn_training_step_channels_last():
    ember.manual_seed(0)
    ref = _cnn(ember.nn).double()
    state = {k: v.detach().numpy().copy() for k, v in ref.state_dict().items()}
    rng = np.random.default_rng(5)
    xa = rng.standard_normal((8, 1, 12, 12))
    ya = rng.integers(0, 10, 8)

    def ember_model(cl):
        m = _cnn(ember.nn).double()
        m.load_state_dict({k: ember.tensor(v) for k, v in state.items()})
        x = ember.tensor(xa)
        if cl:
            m = m.to(memory_format=ember.channels_last)
            x = x.contiguous(memory_format=ember.channels_last)
        return m, x

    me, xe = ember_model(True)
    mc, xc = ember_model(False)
    mt = _cnn(torch.nn).double()
    mt.load_state_dict({k: torch.tensor(v) for k, v in state.items()})
    mt = mt.to(memory_format=torch.channels_last)
    xt = torch.tensor(xa).contiguous(memory_format=torch.channels_last)
    assert me[0].weight.is_contiguous(memory_format=ember.channels_last)

    le = _train(ember, me, xe, ember.tensor(ya))
    lc = _train(ember, mc, xc, ember.tensor(ya))
    lt = _train(torch, mt, xt, torch.tensor(ya))
    np.testing.assert_allclose(le, lc, rtol=1e-10)
    np.testing.assert_allclose(le, lt, rtol=1e-8)
    for (name, pe), pc, pt in zip(me.named_parameters(), mc.parameters(), mt.parameters()):
        assert_same(pe.grad, pt.grad, rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(_np(pe.grad), _np(pc.grad), rtol=1e-8, atol=1e-12)
        assert_same(pe, pt, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("isa", [0, 1, 2])
def test_max_pool_channels_last_vector_kernel(isa):
    """the vectorised float32 NHWC max pooling: 37 channels (whole vectors and a
    tail), NaN and ties inside the vectors, padding, dilation and a window with no
    tap inside the input, on each ISA the CPU has and on 1 and 2 threads"""
    from ember._C import conv as L
    if isa > L._kernel_isa():
        pytest.skip("CPU lacks this ISA")
    a = np.random.default_rng(7).standard_normal((3, 37, 11, 10)).astype(np.float32)
    a[0, 3, 4, 5] = np.nan
    a[2, 9, 2:4, 2:4] = 5.0
    a[1, 20:30, 6, :] = 9.0
    xe = ember.tensor(a).contiguous(memory_format=ember.channels_last)
    xt = torch.tensor(a).contiguous(memory_format=torch.channels_last)
    old = ember.get_num_threads()
    try:
        L._set_kernel_isa(isa)
        for kw in ({"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1,
                                        "ceil_mode": True},
                   {"kernel_size": (2, 3), "stride": (3, 2), "dilation": 2},
                   {"kernel_size": 2, "stride": 2, "padding": 1, "ceil_mode": True}):
            yt, it = TF.max_pool2d(xt, return_indices=True, **kw)
            got = []
            for nt in (1, 2):
                ember.set_num_threads(nt)
                ye, ie = F.max_pool2d(xe, return_indices=True, **kw)
                assert_layout(ye, yt)
                np.testing.assert_array_equal(_np(ye), _np(yt))
                np.testing.assert_array_equal(_np(ie), _np(it))
                got.append(_np(ye))
            np.testing.assert_array_equal(got[0], got[1])
    finally:
        L._set_kernel_isa(-1)
        ember.set_num_threads(old)
