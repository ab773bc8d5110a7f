"""Layers and functions added to reach torch.nn's surface, each against PyTorch: padding,
upsampling, pixel/channel shuffle, grid sampling, distances, 3-D conv and pooling,
losses and small activations. Values, gradients, reprs and error types."""
import numpy as np
import pytest
from conftest import check_parity, copy_torch_weights

import ember
import ember.nn as nn
import ember.nn.functional as F

torch = pytest.importorskip("torch")
tnn, tF = torch.nn, torch.nn.functional
pytestmark = [pytest.mark.filterwarnings("ignore:Default grid_sample"),
              pytest.mark.filterwarnings("ignore:Using padding=.same.")]
RNG = np.random.default_rng(11)


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def _same_error(fe, ft):
    """Both calls raise, with the same exception type."""
    with pytest.raises(Exception) as te:
        ft()
    with pytest.raises(type(te.value)):
        fe()


def _np(t):
    return t.detach().numpy()


def _repr(m):
    return repr(m).replace("ember.", "torch.")


# ---- padding ----------------------------------------------------------------------
PADS = [("ZeroPad", (), None), ("ConstantPad", (1.5,), None), ("ReflectionPad", (), None),
        ("ReplicationPad", (), None), ("CircularPad", (), None)]


@pytest.mark.parametrize("kind,extra,_", PADS)
@pytest.mark.parametrize("n", [1, 2, 3])
def test_padding_modules_match_torch(kind, extra, _, n):
    name = f"{kind}{n}d"
    pad = (1, 2, 2, 0, 0, 1)[:2 * n]
    em, tm = getattr(nn, name)(pad, *extra), getattr(tnn, name)(pad, *extra)
    assert _repr(em) == repr(tm)
    check_parity(em, tm, rand(2, 3, *([4] * n)))
    em, tm = getattr(nn, name)(1, *extra), getattr(tnn, name)(1, *extra)
    assert em.padding == tm.padding
    check_parity(em, tm, rand(3, *([3] * n)))     # unbatched


def test_padding_errors_match_torch():
    _same_error(lambda: nn.CircularPad2d(1)(ember.randn(4, 4)),
                lambda: tnn.CircularPad2d(1)(torch.randn(4, 4)))
    _same_error(lambda: nn.ReflectionPad1d(3)(ember.randn(1, 2, 3)),
                lambda: tnn.ReflectionPad1d(3)(torch.randn(1, 2, 3)))


# ---- shuffles ---------------------------------------------------------------------
def test_pixel_shuffle_and_unshuffle_match_torch():
    em, tm = nn.PixelShuffle(2), tnn.PixelShuffle(2)
    assert _repr(em) == repr(tm)
    check_parity(em, tm, rand(2, 8, 3, 5))
    check_parity(em, tm, rand(3, 2, 12, 2, 2))           # extra leading dims
    em, tm = nn.PixelUnshuffle(3), tnn.PixelUnshuffle(3)
    assert _repr(em) == repr(tm)
    check_parity(em, tm, rand(2, 2, 6, 9))
    x = ember.randn(2, 8, 3, 5)
    np.testing.assert_array_equal(F.pixel_unshuffle(F.pixel_shuffle(x, 2), 2).numpy(),
                                  x.numpy())


def test_channel_shuffle_matches_torch():
    em, tm = nn.ChannelShuffle(3), tnn.ChannelShuffle(3)
    assert _repr(em) == repr(tm)
    check_parity(em, tm, rand(2, 6, 4), grad=True)
    check_parity(lambda x: F.native_channel_shuffle(x, 2),
                 lambda x: tF.native_channel_shuffle(x, 2), rand(1, 4, 2, 2), grad=False)


@pytest.mark.parametrize("fe,ft", [
    (lambda: F.pixel_shuffle(ember.randn(4, 4), 2), lambda: tF.pixel_shuffle(torch.randn(4, 4), 2)),
    (lambda: F.pixel_shuffle(ember.randn(1, 5, 2, 2), 2),
     lambda: tF.pixel_shuffle(torch.randn(1, 5, 2, 2), 2)),
    (lambda: F.pixel_shuffle(ember.randn(1, 4, 2, 2), 0),
     lambda: tF.pixel_shuffle(torch.randn(1, 4, 2, 2), 0)),
    (lambda: F.pixel_unshuffle(ember.randn(1, 1, 3, 4), 2),
     lambda: tF.pixel_unshuffle(torch.randn(1, 1, 3, 4), 2)),
    (lambda: F.channel_shuffle(ember.randn(1, 5, 2), 2),
     lambda: tF.channel_shuffle(torch.randn(1, 5, 2), 2)),
])
def test_shuffle_errors_match_torch(fe, ft):
    _same_error(fe, ft)


# ---- upsampling ---------------------------------------------------------------------
def test_upsample_modules_match_torch():
    x = rand(2, 3, 4, 5)
    for em, tm in [(nn.Upsample(scale_factor=2), tnn.Upsample(scale_factor=2)),
                   (nn.Upsample(size=(7, 3), mode="bilinear"),
                    tnn.Upsample(size=(7, 3), mode="bilinear")),
                   (nn.Upsample(scale_factor=(1.5, 2), mode="bicubic", align_corners=True),
                    tnn.Upsample(scale_factor=(1.5, 2), mode="bicubic", align_corners=True)),
                   (nn.UpsamplingNearest2d(scale_factor=3),
                    tnn.UpsamplingNearest2d(scale_factor=3)),
                   (nn.UpsamplingBilinear2d(size=(6, 9)), tnn.UpsamplingBilinear2d(size=(6, 9)))]:
        assert _repr(em) == repr(tm)
        check_parity(em, tm, x, rtol=1e-5, atol=1e-5)
    with pytest.warns(UserWarning):
        e = F.upsample_bilinear(ember.tensor(x), scale_factor=2)
    np.testing.assert_allclose(e.numpy(), tF.interpolate(torch.tensor(x), scale_factor=2,
                               mode="bilinear", align_corners=True).numpy(), atol=1e-5)
    with pytest.warns(UserWarning):
        e = F.upsample_nearest(ember.tensor(x), size=(8, 10))
    np.testing.assert_array_equal(e.numpy(), tF.interpolate(torch.tensor(x), size=(8, 10)).numpy())


# ---- affine_grid / grid_sample --------------------------------------------------------
@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_matches_torch(align_corners):
    check_parity(lambda t: F.affine_grid(t, (2, 3, 4, 5), align_corners=align_corners),
                 lambda t: tF.affine_grid(t, (2, 3, 4, 5), align_corners=align_corners),
                 rand(2, 2, 3))
    check_parity(lambda t: F.affine_grid(t, (2, 1, 3, 4, 5), align_corners=align_corners),
                 lambda t: tF.affine_grid(t, (2, 1, 3, 4, 5), align_corners=align_corners),
                 rand(2, 3, 4))
    _same_error(lambda: F.affine_grid(ember.randn(2, 3, 3), (2, 3, 4, 5)),
                lambda: tF.affine_grid(torch.randn(2, 3, 3), (2, 3, 4, 5)))


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_2d_matches_torch(mode, padding_mode, align_corners):
    x = rand(2, 3, 5, 6, dtype=np.float64)
    g = rand(2, 4, 7, 2, dtype=np.float64) * 1.3       # reaches outside [-1, 1]
    check_parity(lambda a, b: F.grid_sample(a, b, mode, padding_mode, align_corners),
                 lambda a, b: tF.grid_sample(a, b, mode, padding_mode, align_corners),
                 x, g, rtol=1e-7, atol=1e-9, grad=mode != "nearest")


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_sample_3d_matches_torch(mode, padding_mode):
    x = rand(2, 2, 4, 5, 3, dtype=np.float64)
    g = rand(2, 3, 2, 2, 3, dtype=np.float64) * 1.3
    check_parity(lambda a, b: F.grid_sample(a, b, mode, padding_mode, True),
                 lambda a, b: tF.grid_sample(a, b, mode, padding_mode, True),
                 x, g, rtol=1e-7, atol=1e-9, grad=mode != "nearest")


def test_grid_sample_errors_match_torch():
    x, g = ember.randn(1, 1, 3, 3), ember.randn(1, 2, 2, 2)
    tx, tg = torch.randn(1, 1, 3, 3), torch.randn(1, 2, 2, 2)
    _same_error(lambda: F.grid_sample(x, g, mode="area"),
                lambda: tF.grid_sample(tx, tg, mode="area"))
    _same_error(lambda: F.grid_sample(x, g, padding_mode="wrap"),
                lambda: tF.grid_sample(tx, tg, padding_mode="wrap"))
    _same_error(lambda: F.grid_sample(x, ember.randn(1, 2, 2, 3)),
                lambda: tF.grid_sample(tx, torch.randn(1, 2, 2, 3)))
    _same_error(lambda: F.grid_sample(x, ember.randn(2, 2, 2, 2)),
                lambda: tF.grid_sample(tx, torch.randn(2, 2, 2, 2)))


# ---- distances --------------------------------------------------------------------
def test_distance_modules_match_torch():
    a, b = rand(4, 5), rand(4, 5)
    for em, tm in [(nn.PairwiseDistance(), tnn.PairwiseDistance()),
                   (nn.PairwiseDistance(p=1.0, keepdim=True),
                    tnn.PairwiseDistance(p=1.0, keepdim=True)),
                   (nn.CosineSimilarity(dim=0), tnn.CosineSimilarity(dim=0))]:
        check_parity(em, tm, a, b, rtol=1e-5, atol=1e-6)


# ---- 3-D convolution ------------------------------------------------------------------
CONV3D = [  # (cin, cout, groups, kernel, stride, padding, dilation)
    (3, 4, 1, 3, 1, 1, 1),
    (4, 6, 2, (2, 3, 1), (2, 1, 2), (1, 0, 0), (2, 1, 1)),
    (2, 2, 1, (3, 2, 2), 1, "same", (1, 2, 1)),
    (2, 4, 2, 2, 1, "valid", 1),
]


@pytest.mark.parametrize("cin,cout,g,k,s,p,d", CONV3D)
def test_conv3d_matches_torch(cin, cout, g, k, s, p, d):
    tm = tnn.Conv3d(cin, cout, k, s, p, d, g).double()
    em = copy_torch_weights(tm, nn.Conv3d(cin, cout, k, s, p, d, g, dtype=ember.float64))
    assert _repr(em) == repr(tm)
    check_parity(em, tm, rand(2, cin, 7, 6, 5, dtype=np.float64), rtol=1e-7, atol=1e-9)
    w = rand(cout, cin // g, *em.weight.shape[2:], dtype=np.float64)
    check_parity(lambda x, w: F.conv3d(x, w, None, s, p, d, g),
                 lambda x, w: tF.conv3d(x, w, None, s, p, d, g),
                 rand(cin, 6, 5, 5, dtype=np.float64), w, rtol=1e-7, atol=1e-9)   # unbatched


def test_conv3d_padding_modes_and_errors():
    for mode in ("reflect", "replicate", "circular"):
        tm = tnn.Conv3d(2, 3, 3, padding=1, padding_mode=mode)
        em = copy_torch_weights(tm, nn.Conv3d(2, 3, 3, padding=1, padding_mode=mode))
        check_parity(em, tm, rand(1, 2, 4, 5, 4), rtol=1e-4, atol=1e-5)
    w = ember.randn(4, 3, 2, 2, 2)
    _same_error(lambda: F.conv3d(ember.randn(1, 2, 4, 4, 4), w),
                lambda: tF.conv3d(torch.randn(1, 2, 4, 4, 4), torch.randn(4, 3, 2, 2, 2)))
    _same_error(lambda: F.conv3d(ember.randn(2, 4, 4), w),
                lambda: tF.conv3d(torch.randn(2, 4, 4), torch.randn(4, 3, 2, 2, 2)))
    _same_error(lambda: F.conv3d(ember.randn(1, 3, 1, 4, 4), w),
                lambda: tF.conv3d(torch.randn(1, 3, 1, 4, 4), torch.randn(4, 3, 2, 2, 2)))
    _same_error(lambda: F.conv_transpose3d(ember.randn(1, 2, 3, 3, 3), ember.randn(3, 2, 2, 2, 2)),
                lambda: tF.conv_transpose3d(torch.randn(1, 2, 3, 3, 3),
                                            torch.randn(3, 2, 2, 2, 2)))
    _same_error(lambda: F.conv_transpose3d(ember.randn(1, 3, 3, 3, 3),
                                           ember.randn(3, 2, 2, 2, 2), stride=2,
                                           output_padding=2),
                lambda: tF.conv_transpose3d(torch.randn(1, 3, 3, 3, 3),
                                            torch.randn(3, 2, 2, 2, 2), stride=2,
                                            output_padding=2))


CONVT3D = [  # (cin, cout, groups, kernel, stride, padding, output_padding, dilation)
    (3, 4, 1, 3, 1, 1, 0, 1),
    (4, 6, 2, (2, 3, 1), (2, 1, 2), (1, 0, 0), (1, 0, 1), (2, 1, 1)),
    (2, 2, 1, 3, 2, 1, 1, 1),
]


@pytest.mark.parametrize("cin,cout,g,k,s,p,op,d", CONVT3D)
def test_conv_transpose3d_matches_torch(cin, cout, g, k, s, p, op, d):
    tm = tnn.ConvTranspose3d(cin, cout, k, s, p, op, g, True, d).double()
    em = copy_torch_weights(tm, nn.ConvTranspose3d(cin, cout, k, s, p, op, g, True, d,
                                                   dtype=ember.float64))
    assert _repr(em) == repr(tm)
    check_parity(em, tm, rand(2, cin, 4, 5, 3, dtype=np.float64), rtol=1e-7, atol=1e-9)
    x = rand(1, cin, 3, 3, 3, dtype=np.float64)
    out = tm(torch.tensor(x), output_size=tm(torch.tensor(x)).shape[2:]).shape
    assert tuple(em(ember.tensor(x), output_size=out[2:]).shape) == tuple(out)


# ---- 3-D and other pooling ------------------------------------------------------------
X5 = rand(2, 3, 7, 6, 5, dtype=np.float64)


@pytest.mark.parametrize("args", [(2,), (3, 2, 1), ((2, 3, 2), (1, 2, 2), (1, 1, 0)),
                                  (3, 2, 1, 2), ((2, 2, 3), None, 0, 1, True)])
def test_max_pool3d_matches_torch(args):
    em, tm = nn.MaxPool3d(*args), tnn.MaxPool3d(*args)
    assert _repr(em) == repr(tm)
    check_parity(em, tm, X5, rtol=1e-7)
    check_parity(lambda a: F.max_pool3d_with_indices(a, *args),
                 lambda a: tF.max_pool3d_with_indices(a, *args), X5, rtol=1e-7)
    check_parity(lambda a: F.max_pool3d(a, *args, return_indices=True),
                 lambda a: tF.max_pool3d(a, *args, return_indices=True), X5[0], rtol=1e-7)


@pytest.mark.parametrize("args", [(2,), (3, 2, 1), ((2, 3, 2), (1, 2, 2), (1, 1, 0)),
                                  (3, 2, 1, True), (3, 2, 1, True, False),
                                  (3, 2, 1, False, False, 5)])
def test_avg_pool3d_matches_torch(args):
    em, tm = nn.AvgPool3d(*args), tnn.AvgPool3d(*args)
    assert _repr(em) == repr(tm)
    check_parity(em, tm, X5, rtol=1e-7)


@pytest.mark.parametrize("size", [3, (2, 4, 5), (None, 3, 1), (7, 6, 5)])
def test_adaptive_pool3d_matches_torch(size):
    check_parity(nn.AdaptiveAvgPool3d(size), tnn.AdaptiveAvgPool3d(size), X5, rtol=1e-7)
    check_parity(nn.AdaptiveMaxPool3d(size, True), tnn.AdaptiveMaxPool3d(size, True), X5,
                 rtol=1e-7)
    check_parity(lambda a: F.adaptive_max_pool3d_with_indices(a, size),
                 lambda a: tF.adaptive_max_pool3d_with_indices(a, size), X5[0], rtol=1e-7)


@pytest.mark.parametrize("size", [1, 3, 5, 11])
def test_adaptive_max_pool1d_matches_torch(size):
    x = rand(2, 3, 11, dtype=np.float64)
    check_parity(nn.AdaptiveMaxPool1d(size), tnn.AdaptiveMaxPool1d(size), x, rtol=1e-7)
    check_parity(lambda a: F.adaptive_max_pool1d_with_indices(a, size),
                 lambda a: tF.adaptive_max_pool1d_with_indices(a, size), x, rtol=1e-7)
    check_parity(lambda a: F.adaptive_max_pool2d_with_indices(a, (size, 2)),
                 lambda a: tF.adaptive_max_pool2d_with_indices(a, (size, 2)),
                 rand(2, 11, 4, dtype=np.float64), rtol=1e-7)
    check_parity(lambda a: F.max_pool1d_with_indices(a, 3, 2),
                 lambda a: tF.max_pool1d_with_indices(a, 3, 2), x, rtol=1e-7)


@pytest.mark.parametrize("p", [2, 3.0, 1.5])
def test_lp_pool_matches_torch(p):
    x = np.abs(rand(2, 3, 8, 7, 6, dtype=np.float64)) + 0.1
    for em, tm, a in [(nn.LPPool1d(p, 3, 2), tnn.LPPool1d(p, 3, 2), x[:, :, 0, 0]),
                      (nn.LPPool2d(p, (3, 2)), tnn.LPPool2d(p, (3, 2)), x[:, :, 0]),
                      (nn.LPPool3d(p, 2, (1, 2, 2), True), tnn.LPPool3d(p, 2, (1, 2, 2), True),
                       x)]:
        assert _repr(em) == repr(tm)
        check_parity(em, tm, a, rtol=1e-7)


@pytest.mark.parametrize("nsp", [1, 2, 3])
def test_max_unpool_matches_torch(nsp):
    x = rand(2, 3, *([6] * nsp), dtype=np.float64)
    tp = getattr(tF, f"max_pool{nsp}d")
    v, i = tp(torch.tensor(x), 2, 2, return_indices=True)
    ei = ember.tensor(i.numpy())
    em, tm = getattr(nn, f"MaxUnpool{nsp}d")(2), getattr(tnn, f"MaxUnpool{nsp}d")(2)
    assert _repr(em) == repr(tm)
    check_parity(lambda a: em(a, ei), lambda a: tm(a, i), v.numpy())
    check_parity(lambda a: em(a, ei, output_size=[7] * nsp),
                 lambda a: tm(a, i, output_size=[7] * nsp), v.numpy())
    _same_error(lambda: em(ember.tensor(v.numpy()), ei, output_size=[9] * nsp),
                lambda: tm(v, i, output_size=[9] * nsp))


@pytest.mark.parametrize("kw", [{"output_size": (4, 5)}, {"output_ratio": (0.5, 0.6)},
                                {"output_size": 3}])
@pytest.mark.parametrize("k", [2, (3, 2)])
def test_fractional_max_pool2d_matches_torch(kw, k):
    x, u = rand(2, 3, 9, 8, dtype=np.float64), RNG.random((2, 3, 2))
    check_parity(lambda a, s: F.fractional_max_pool2d(a, k, return_indices=True,
                                                      _random_samples=s, **kw),
                 lambda a, s: tF.fractional_max_pool2d(a, k, return_indices=True,
                                                       _random_samples=s, **kw),
                 x, u, rtol=1e-7, grad=(True, False))
    em = nn.FractionalMaxPool2d(k, _random_samples=ember.tensor(u), **kw)
    tm = tnn.FractionalMaxPool2d(k, _random_samples=torch.tensor(u), **kw)
    check_parity(em, tm, x, rtol=1e-7)


def test_fractional_max_pool3d_matches_torch_and_errors():
    x, u = rand(2, 3, 9, 8, 7, dtype=np.float64), RNG.random((2, 3, 3))
    check_parity(lambda a, s: F.fractional_max_pool3d_with_indices(a, 2, (4, 5, 3),
                                                                   _random_samples=s),
                 lambda a, s: tF.fractional_max_pool3d_with_indices(a, 2, (4, 5, 3),
                                                                    _random_samples=s),
                 x, u, rtol=1e-7, grad=(True, False))
    out = F.fractional_max_pool3d(ember.randn(1, 2, 6, 6, 6), 2, output_ratio=0.5)
    assert tuple(out.shape) == (1, 2, 3, 3, 3)
    for kwargs in ({}, {"output_size": 2, "output_ratio": 0.5}, {"output_ratio": 1.5}):
        _same_error(lambda: nn.FractionalMaxPool2d(2, **kwargs),
                    lambda: tnn.FractionalMaxPool2d(2, **kwargs))


def test_pool3d_errors_match_torch():
    _same_error(lambda: F.max_pool3d(ember.randn(2, 4, 4), 2),
                lambda: tF.max_pool3d(torch.randn(2, 4, 4), 2))
    _same_error(lambda: F.max_pool3d(ember.randn(1, 1, 4, 4, 4), 2, padding=2),
                lambda: tF.max_pool3d(torch.randn(1, 1, 4, 4, 4), 2, padding=2))
    _same_error(lambda: F.avg_pool3d(ember.randn(1, 1, 2, 2, 2), 3),
                lambda: tF.avg_pool3d(torch.randn(1, 1, 2, 2, 2), 3))


# ---- lazy modules and InstanceNorm3d ---------------------------------------------------
@pytest.mark.parametrize("name,args,shape", [
    ("LazyConv1d", (4, 3), (2, 3, 9)), ("LazyConv2d", (4, 3, 1, 1), (2, 3, 5, 5)),
    ("LazyConv3d", (4, 2), (3, 4, 4, 4)), ("LazyConvTranspose1d", (4, 3, 2), (2, 3, 5)),
    ("LazyConvTranspose2d", (4, 3), (2, 3, 4, 4)), ("LazyConvTranspose3d", (2, 2, 2),
                                                    (1, 3, 2, 3, 2)),
    ("LazyBatchNorm1d", (), (4, 3)), ("LazyBatchNorm2d", (), (2, 3, 4, 4)),
    ("LazyBatchNorm3d", (), (2, 3, 2, 2, 2)), ("LazyInstanceNorm1d", (), (2, 3, 5)),
    ("LazyInstanceNorm2d", (), (2, 3, 4, 4)), ("LazyInstanceNorm3d", (), (2, 3, 2, 3, 2)),
])
def test_lazy_modules_match_torch(name, args, shape):
    torch.manual_seed(0)
    tm, em = getattr(tnn, name)(*args), getattr(nn, name)(*args)
    assert em.has_uninitialized_params()
    x = rand(*shape)
    tm(torch.tensor(x))
    em(ember.tensor(x))
    assert type(em).__name__ == type(tm).__name__           # became the eager class
    assert not em.has_uninitialized_params() if hasattr(em, "has_uninitialized_params") \
        else True
    copy_torch_weights(tm, em)
    check_parity(em, tm, x, rtol=1e-5, atol=1e-5)
    # a fresh lazy module loads a checkpoint of the eager one
    fresh = getattr(nn, name)(*args)
    fresh.load_state_dict({k: ember.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    check_parity(fresh, tm, x, rtol=1e-5, atol=1e-5)


def test_instance_norm3d_and_running_stats_match_torch():
    for kw in ({}, {"affine": True}, {"track_running_stats": True, "affine": True}):
        tm, em = tnn.InstanceNorm3d(3, **kw), nn.InstanceNorm3d(3, **kw)
        assert _repr(em) == repr(tm)
        copy_torch_weights(tm, em)
        x = rand(2, 3, 3, 4, 2, dtype=np.float64)
        check_parity(em.double(), tm.double(), x, rtol=1e-7)
        for a, b in zip(em.state_dict().values(), tm.state_dict().values()):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-7)
        em.eval()
        tm.eval()
        check_parity(em, tm, x, rtol=1e-7)
    _same_error(lambda: nn.InstanceNorm3d(3)(ember.randn(3, 4)),
                lambda: tnn.InstanceNorm3d(3)(torch.randn(3, 4)))


# ---- small activations ------------------------------------------------------------------
X45 = rand(4, 5, dtype=np.float64)


@pytest.mark.parametrize("name,args", [("Hardshrink", ()), ("Hardshrink", (0.8,)),
                                       ("Softshrink", ()), ("Softshrink", (0.3,)),
                                       ("RReLU", ()), ("RReLU", (0.1, 0.4))])
def test_shrink_and_rrelu_modules_match_torch(name, args):
    em, tm = getattr(nn, name)(*args).eval(), getattr(tnn, name)(*args).eval()
    assert _repr(em) == repr(tm)
    check_parity(em, tm, X45)


def test_rrelu_training_draws_slopes_in_range():
    x = ember.tensor(-np.abs(X45) - 0.1)
    y = F.rrelu(x, 0.1, 0.3, training=True)
    ratio = (y / x).numpy()
    assert ratio.min() >= 0.1 - 1e-12 and ratio.max() <= 0.3 + 1e-12 and ratio.std() > 0
    pos = ember.tensor(np.abs(X45))
    np.testing.assert_array_equal(F.rrelu(pos, training=True).numpy(), pos.numpy())
    z = ember.tensor(X45.copy())
    assert F.rrelu_(z) is z


def test_softmax2d_prelu_inplace_forms_match_torch():
    check_parity(nn.Softmax2d(), tnn.Softmax2d(), rand(2, 3, 4, 5))
    check_parity(nn.Softmax2d(), tnn.Softmax2d(), rand(3, 4, 5))
    _same_error(lambda: nn.Softmax2d()(ember.randn(3, 4)),
                lambda: tnn.Softmax2d()(torch.randn(3, 4)))
    w = RNG.random(5)
    check_parity(F.prelu, tF.prelu, rand(2, 5, 3, dtype=np.float64), w)
    check_parity(F.prelu, tF.prelu, rand(2, 5, 3, dtype=np.float64), w[:1])
    _same_error(lambda: F.prelu(ember.randn(2, 4), ember.ones(3)),
                lambda: tF.prelu(torch.randn(2, 4), torch.ones(3)))
    _same_error(lambda: F.softshrink(ember.randn(2), -1.0),
                lambda: tF.softshrink(torch.randn(2), -1.0))
    for name, args in [("elu_", (0.7,)), ("celu_", (1.3,)), ("selu_", ()),
                       ("leaky_relu_", (0.2,)), ("threshold_", (0.1, -2.0))]:
        e, t = ember.tensor(X45.copy()), torch.tensor(X45.copy())
        assert getattr(F, name)(e, *args) is e
        getattr(tF, name)(t, *args)
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-12)


def test_feature_alpha_dropout_drops_whole_channels():
    em = nn.FeatureAlphaDropout(0.5)
    assert _repr(em) == repr(tnn.FeatureAlphaDropout(0.5))
    x = ember.randn(64, 8, 3, 3)
    assert em.eval()(x) is x
    y = em.train()(x).numpy()
    a = 1.0 / ((1.7580993408473766 ** 2 * 0.5 + 1) * 0.5) ** 0.5
    dropped_value = -1.7580993408473766 * a + 1.7580993408473766 * a * 0.5
    flat = y.reshape(64 * 8, 9)
    dropped = np.all(np.isclose(flat, dropped_value), axis=1)
    kept = np.all(np.isclose(flat, x.numpy().reshape(64 * 8, 9) * a + 1.7580993408473766 * a
                             * 0.5), axis=1)
    assert np.all(dropped | kept) and 0.3 < dropped.mean() < 0.7
    assert float(F.feature_alpha_dropout(x, 1.0, True).abs().sum()) == 0


def test_gumbel_softmax_samples():
    ember.manual_seed(0)
    logits = ember.tensor(np.log([[0.7, 0.2, 0.1]] * 4000), requires_grad=True)
    y = F.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(y.sum(-1).detach().numpy(), 1.0, rtol=1e-6)
    h = F.gumbel_softmax(logits, hard=True)
    hn = h.detach().numpy()
    assert set(np.unique(hn)) <= {0.0, 1.0} and np.all(hn.sum(-1) == 1)
    np.testing.assert_allclose(hn.mean(0), [0.7, 0.2, 0.1], atol=0.03)   # Gumbel-max sampling
    (h * ember.tensor([1.0, 2.0, 3.0])).sum().backward()                  # straight-through
    assert logits.grad is not None and float(logits.grad.abs().sum()) > 0


def test_pdist_matches_torch():
    check_parity(F.pdist, tF.pdist, rand(5, 3, dtype=np.float64))
    check_parity(lambda a: F.pdist(a, 1.5), lambda a: tF.pdist(a, 1.5),
                 rand(4, 6, dtype=np.float64))
    assert tuple(F.pdist(ember.randn(1, 3)).shape) == (0,)


# ---- losses ---------------------------------------------------------------------------
TGT = np.array([1, 0, 4, 2])


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_multi_margin_loss_matches_torch(p, reduction):
    w = RNG.random(5)
    em = nn.MultiMarginLoss(p, 0.7, ember.tensor(w), reduction=reduction)
    tm = tnn.MultiMarginLoss(p, 0.7, torch.tensor(w), reduction=reduction)
    check_parity(lambda a: em(a, ember.tensor(TGT)), lambda a: tm(a, torch.tensor(TGT)), X45)
    check_parity(lambda a: F.multi_margin_loss(a, ember.tensor(2), p),
                 lambda a: tF.multi_margin_loss(a, torch.tensor(2), p), X45[0])
    _same_error(lambda: nn.MultiMarginLoss(3), lambda: tnn.MultiMarginLoss(3))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_multilabel_losses_match_torch(reduction):
    tl = np.array([[3, 0, -1, 1, 1], [1, 2, 4, -1, 0], [-1, 1, 1, 1, 1], [0, 1, 2, 3, 4]])
    em, tm = nn.MultiLabelMarginLoss(reduction=reduction), tnn.MultiLabelMarginLoss(
        reduction=reduction)
    check_parity(lambda a: em(a, ember.tensor(tl)), lambda a: tm(a, torch.tensor(tl)), X45)
    check_parity(lambda a: em(a, ember.tensor(tl[1])), lambda a: tm(a, torch.tensor(tl[1])),
                 X45[0])
    tt = (RNG.random((4, 5)) > 0.5).astype(np.float64)
    w = RNG.random(5)
    em = nn.MultiLabelSoftMarginLoss(ember.tensor(w), reduction=reduction)
    tm = tnn.MultiLabelSoftMarginLoss(torch.tensor(w), reduction=reduction)
    check_parity(em, tm, X45, tt)


def test_triplet_margin_with_distance_loss_matches_torch():
    a, p, n = (rand(4, 3, dtype=np.float64) for _ in range(3))
    check_parity(nn.TripletMarginWithDistanceLoss(swap=True),
                 tnn.TripletMarginWithDistanceLoss(swap=True), a, p, n)
    em = nn.TripletMarginWithDistanceLoss(
        distance_function=lambda u, v: 1 - F.cosine_similarity(u, v), margin=0.5,
        reduction="none")
    tm = tnn.TripletMarginWithDistanceLoss(
        distance_function=lambda u, v: 1 - tF.cosine_similarity(u, v), margin=0.5,
        reduction="none")
    check_parity(em, tm, a, p, n)
    _same_error(lambda: nn.TripletMarginWithDistanceLoss(margin=0),
                lambda: tnn.TripletMarginWithDistanceLoss(margin=0))
    _same_error(lambda: F.triplet_margin_with_distance_loss(ember.randn(2, 3), ember.randn(3),
                                                            ember.randn(2, 3)),
                lambda: tF.triplet_margin_with_distance_loss(torch.randn(2, 3), torch.randn(3),
                                                             torch.randn(2, 3)))


def _log_probs(t, n, c):
    lp = rand(t, n, c, dtype=np.float64)
    return lp - np.log(np.exp(lp).sum(-1, keepdims=True))


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_ctc_loss_matches_torch(reduction):
    lp = _log_probs(12, 3, 5)
    tg, il, tl = np.array([[1, 2, 2, 3], [4, 1, 0, 0], [2, 3, 1, 1]]), [12, 9, 11], [4, 2, 3]
    em, tm = nn.CTCLoss(reduction=reduction), tnn.CTCLoss(reduction=reduction)
    check_parity(lambda a: em(a, ember.tensor(tg), ember.tensor(il), ember.tensor(tl)),
                 lambda a: tm(a, torch.tensor(tg), torch.tensor(il), torch.tensor(tl)),
                 lp, rtol=1e-6, atol=1e-8)
    flat = np.array([1, 2, 2, 3, 4, 1, 2, 3, 1])                 # concatenated targets
    check_parity(lambda a: F.ctc_loss(a, ember.tensor(flat), il, tl, reduction=reduction),
                 lambda a: tF.ctc_loss(a, torch.tensor(flat), torch.tensor(il),
                                       torch.tensor(tl), reduction=reduction),
                 lp, rtol=1e-6, atol=1e-8)


def test_ctc_loss_blank_infinity_and_unbatched_match_torch():
    lp = _log_probs(6, 3, 4)
    tg, il, tl = np.array([[1, 1, 1, 1], [2, 0, 0, 0], [3, 3, 0, 0]]), [3, 4, 2], [4, 0, 2]
    for zi in (False, True):     # sample 0 and 2 cannot be aligned: inf (or 0) loss
        check_parity(lambda a: F.ctc_loss(a, ember.tensor(tg), il, tl, reduction="none",
                                          zero_infinity=zi),
                     lambda a: tF.ctc_loss(a, torch.tensor(tg), torch.tensor(il),
                                           torch.tensor(tl), reduction="none",
                                           zero_infinity=zi),
                     lp, rtol=1e-6, atol=1e-8, grad=zi)
    tg = np.array([[0, 2, 2], [1, 0, 1], [2, 1, 0]])
    check_parity(lambda a: F.ctc_loss(a, ember.tensor(tg), [6, 6, 5], [3, 2, 3], blank=3),
                 lambda a: tF.ctc_loss(a, torch.tensor(tg), torch.tensor([6, 6, 5]),
                                       torch.tensor([3, 2, 3]), blank=3),
                 lp, rtol=1e-6, atol=1e-8)
    check_parity(lambda a: F.ctc_loss(a, ember.tensor(tg[0] + 1), [6], [3]),
                 lambda a: tF.ctc_loss(a, torch.tensor(tg[0] + 1), torch.tensor([6]),
                                       torch.tensor([3])), lp[:, 0], rtol=1e-6, atol=1e-8)
    _same_error(lambda: F.ctc_loss(ember.tensor(lp), ember.tensor(tg), [7, 6, 5], [3, 2, 3]),
                lambda: tF.ctc_loss(torch.tensor(lp), torch.tensor(tg), torch.tensor([7, 6, 5]),
                                    torch.tensor([3, 2, 3])))


def test_nll_loss2d_is_deprecated_nll_loss():
    with pytest.warns(FutureWarning):
        em = nn.NLLLoss2d()
    x = rand(2, 3, 4, 4, dtype=np.float64)
    t = RNG.integers(0, 3, (2, 4, 4))
    check_parity(lambda a: em(a, ember.tensor(t)), lambda a: tF.nll_loss(a, torch.tensor(t)), x)


# ---- EmbeddingBag / AdaptiveLogSoftmaxWithLoss --------------------------------------------
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 2])
def test_embedding_bag_matches_torch(mode, padding_idx):
    tm = tnn.EmbeddingBag(10, 3, mode=mode, padding_idx=padding_idx).double()
    em = copy_torch_weights(tm, nn.EmbeddingBag(10, 3, mode=mode, padding_idx=padding_idx,
                                                dtype=ember.float64))
    assert _repr(em) == repr(tm)
    idx = np.array([1, 2, 4, 5, 4, 3, 2, 9, 2])
    offs = np.array([0, 3, 3, 6])                       # bag 1 is empty
    for e_args, t_args in [((ember.tensor(idx), ember.tensor(offs)),
                            (torch.tensor(idx), torch.tensor(offs))),
                           ((ember.tensor(idx.reshape(3, 3)),),
                            (torch.tensor(idx.reshape(3, 3)),))]:
        eo, to = em(*e_args), tm(*t_args)
        np.testing.assert_allclose(_np(eo), _np(to), rtol=1e-12)
        g = rand(*to.shape, dtype=np.float64)
        em.weight.grad = None
        tm.weight.grad = None
        (eo * ember.tensor(g)).sum().backward()
        (to * torch.tensor(g)).sum().backward()
        np.testing.assert_allclose(em.weight.grad.numpy(), tm.weight.grad.numpy(), rtol=1e-12)


def test_embedding_bag_weights_last_offset_and_errors():
    w = rand(10, 3, dtype=np.float64)
    idx, offs = np.array([1, 2, 4, 5, 4, 3]), np.array([0, 2, 6])
    psw = rand(6, dtype=np.float64)
    check_parity(lambda ww, p: F.embedding_bag(ember.tensor(idx), ww, ember.tensor(offs),
                                               mode="sum", per_sample_weights=p,
                                               include_last_offset=True),
                 lambda ww, p: tF.embedding_bag(torch.tensor(idx), ww, torch.tensor(offs),
                                                mode="sum", per_sample_weights=p,
                                                include_last_offset=True), w, psw)
    e = nn.EmbeddingBag.from_pretrained(ember.tensor(w), mode="sum")
    t = tnn.EmbeddingBag.from_pretrained(torch.tensor(w), mode="sum")
    np.testing.assert_allclose(e(ember.tensor(idx), ember.tensor(offs[:2])).numpy(),
                               t(torch.tensor(idx), torch.tensor(offs[:2])).numpy())
    assert not e.weight.requires_grad
    ew, tw = ember.tensor(w), torch.tensor(w)
    for fe, ft in [
        (lambda: F.embedding_bag(ember.tensor(idx), ew),
         lambda: tF.embedding_bag(torch.tensor(idx), tw)),
        (lambda: F.embedding_bag(ember.tensor(idx), ew, ember.tensor(offs), mode="mean",
                                 per_sample_weights=ember.tensor(psw)),
         lambda: tF.embedding_bag(torch.tensor(idx), tw, torch.tensor(offs), mode="mean",
                                  per_sample_weights=torch.tensor(psw))),
        (lambda: F.embedding_bag(ember.tensor(idx), ew, ember.tensor(offs), mode="prod"),
         lambda: tF.embedding_bag(torch.tensor(idx), tw, torch.tensor(offs), mode="prod")),
        (lambda: F.embedding_bag(ember.tensor(idx.reshape(2, 3)), ew, ember.tensor(offs)),
         lambda: tF.embedding_bag(torch.tensor(idx.reshape(2, 3)), tw, torch.tensor(offs))),
    ]:
        _same_error(fe, ft)


def test_adaptive_log_softmax_matches_torch():
    torch.manual_seed(0)
    tm = tnn.AdaptiveLogSoftmaxWithLoss(8, 20, [5, 12], div_value=2.0, head_bias=True)
    tm = tm.double()
    em = copy_torch_weights(tm, nn.AdaptiveLogSoftmaxWithLoss(8, 20, [5, 12], div_value=2.0,
                                                              head_bias=True,
                                                              dtype=ember.float64))
    x = rand(6, 8, dtype=np.float64)
    t = np.array([0, 7, 19, 3, 12, 5])
    check_parity(lambda a: tuple(em(a, ember.tensor(t))),
                 lambda a: tuple(tm(a, torch.tensor(t))), x)
    check_parity(em.log_prob, tm.log_prob, x)
    np.testing.assert_array_equal(em.predict(ember.tensor(x)).numpy(),
                                  tm.predict(torch.tensor(x)).numpy())
    check_parity(lambda a: tuple(em(a, ember.tensor(7))),
                 lambda a: tuple(tm(a, torch.tensor(7))), x[0])
    _same_error(lambda: em(ember.tensor(x), ember.tensor(t + 5)),
                lambda: tm(torch.tensor(x), torch.tensor(t + 5)))
    for cut in ([], [5, 5], [0, 3], [25]):
        _same_error(lambda: nn.AdaptiveLogSoftmaxWithLoss(8, 20, cut),
                    lambda: tnn.AdaptiveLogSoftmaxWithLoss(8, 20, cut))


# ---- conv_tbc, linear_cross_entropy, TorchScript helpers -------------------------------------
@pytest.mark.parametrize("pad", [0, 2])
def test_conv_tbc_matches_torch(pad):
    check_parity(lambda x, w, b: F.conv_tbc(x, w, b, pad),
                 lambda x, w, b: torch.conv_tbc(x, w, b, pad),
                 rand(7, 2, 3, dtype=np.float64), rand(3, 3, 4, dtype=np.float64),
                 rand(4, dtype=np.float64))
    _same_error(lambda: F.conv_tbc(ember.randn(7, 2, 3), ember.randn(3, 2, 4), ember.randn(4)),
                lambda: torch.conv_tbc(torch.randn(7, 2, 3), torch.randn(3, 2, 4),
                                       torch.randn(4)))


LCE = [{}, {"reduction": "sum"}, {"reduction": "none"}, {"ignore_index": 1},
       {"label_smoothing": 0.1}]


@pytest.mark.parametrize("kw", LCE)
@pytest.mark.parametrize("chunk", [None, 2])
def test_linear_cross_entropy_matches_torch(kw, chunk):
    x, w, b = (rand(5, 4, dtype=np.float64), rand(6, 4, dtype=np.float64),
               rand(6, dtype=np.float64))
    cw = RNG.random(6)
    t = np.array([1, 0, 5, 1, 3])
    eopt = nn.LinearCrossEntropyOptions(batch_chunk_size=chunk) if chunk else None
    topt = tnn.LinearCrossEntropyOptions(batch_chunk_size=chunk) if chunk else None
    smooth = kw.get("label_smoothing", 0) > 0
    ctx = pytest.warns(UserWarning) if chunk and smooth else _no_warning()
    with ctx:
        check_parity(lambda a, ww, bb: F.linear_cross_entropy(
                         a, ww, ember.tensor(t), linear_bias=bb, weight=ember.tensor(cw),
                         options=eopt, **kw),
                     lambda a, ww, bb: tF.linear_cross_entropy(
                         a, ww, torch.tensor(t), linear_bias=bb, weight=torch.tensor(cw),
                         options=topt, **kw), x, w, b, rtol=1e-9, atol=1e-12)


class _no_warning:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_linear_cross_entropy_loss_module_and_k_dim_match_torch():
    torch.manual_seed(0)
    tm = tnn.LinearCrossEntropyLoss(4, 3, out_features=(2,), bias=True).double()
    em = copy_torch_weights(tm, nn.LinearCrossEntropyLoss(4, 3, out_features=(2,), bias=True,
                                                          dtype=ember.float64))
    assert _repr(em) == repr(tm)
    t = np.array([[0, 2], [1, 1], [2, 0]])
    check_parity(lambda a: em(a, ember.tensor(t)), lambda a: tm(a, torch.tensor(t)),
                 rand(3, 4, dtype=np.float64), rtol=1e-9)
    x = ember.randn(3, 4)
    _same_error(lambda: F.linear_cross_entropy(x, ember.randn(3, 5), ember.tensor([0, 1, 2])),
                lambda: tF.linear_cross_entropy(torch.randn(3, 4), torch.randn(3, 5),
                                                torch.tensor([0, 1, 2])))
    _same_error(lambda: nn.LinearCrossEntropyLoss(4, 3, label_smoothing=2.0),
                lambda: tnn.LinearCrossEntropyLoss(4, 3, label_smoothing=2.0))


def test_script_helpers():
    def with_idx(x, flag=False):
        return "idx"

    def without(x, flag=False):
        """doc"""
        return "plain"

    fn = F.boolean_dispatch("flag", 1, False, with_idx, without, "m", "f")
    assert fn(0) == "plain" and fn(0, True) == "idx" and fn(0, flag=True) == "idx"
    assert fn.__name__ == "f" and fn.__doc__ == "doc"
    F.assert_int_or_pair(3, "k", "{} bad")
    F.assert_int_or_pair((1, 2), "k", "{} bad")
    with pytest.raises(AssertionError, match="k bad"):
        F.assert_int_or_pair((1, 2, 3), "k", "{} bad")
    with pytest.raises(AssertionError):
        tF.assert_int_or_pair((1, 2, 3), "k", "{} bad")


def test_container_is_deprecated_module_holder():
    with pytest.warns(FutureWarning):
        c = nn.Container(a=nn.Linear(2, 3), b=nn.ReLU())
    assert list(dict(c.named_children())) == ["a", "b"]
    assert sorted(c.state_dict()) == ["a.bias", "a.weight"]


def test_fractional_pool_modules_and_with_indices_names():
    x, u = rand(2, 3, 9, 8, 7, dtype=np.float64), RNG.random((2, 3, 3))
    em = nn.FractionalMaxPool3d(2, output_size=(4, 5, 3), return_indices=True,
                                _random_samples=ember.tensor(u))
    tm = tnn.FractionalMaxPool3d(2, output_size=(4, 5, 3), return_indices=True,
                                 _random_samples=torch.tensor(u))
    check_parity(em, tm, x, rtol=1e-7)
    u2 = RNG.random((2, 3, 2))
    check_parity(lambda a, s: F.fractional_max_pool2d_with_indices(a, 2, (4, 3),
                                                                   _random_samples=s),
                 lambda a, s: tF.fractional_max_pool2d_with_indices(a, 2, (4, 3),
                                                                    _random_samples=s),
                 x[:, :, 0], u2, rtol=1e-7, grad=(True, False))


def test_nn_api_coverage_goal():
    import importlib.util
    import os
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools",
                        "nn_coverage.py")
    spec = importlib.util.spec_from_file_location("nn_coverage", path)
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    for area, (have, total, missing) in tool.coverage().items():
        assert have / total >= 0.95, (area, missing)


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("c", [3, 8])
def test_cross_map_lrn2d_forward_matches_torch_and_gradient_is_exact(size, c):
    em, tm = nn.CrossMapLRN2d(size, 0.5, 0.75, 2.0), tnn.CrossMapLRN2d(size, 0.5, 0.75, 2.0)
    assert _repr(em) == repr(tm)
    x = rand(2, c, 3, 4, dtype=np.float64)
    np.testing.assert_allclose(em(ember.tensor(x)).numpy(), tm(torch.tensor(x)).numpy(),
                               rtol=1e-12, atol=1e-15)
    # torch's own backward fails gradcheck; ember's is checked against finite differences
    xe = ember.tensor(rand(1, c, 2, 2, dtype=np.float64), requires_grad=True)
    assert ember.autograd.gradcheck(em, (xe,))
    _same_error(lambda: em(ember.randn(2, 3, 4)), lambda: tm(torch.randn(2, 3, 4)))
