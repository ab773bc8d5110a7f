"""Layers and functions added to reach torch.nn's surface, each against PyTorch: padding,
upsampling, pixel/channel shuffle, grid sampling, distances, 3-D conv and pooling,
losses and small activations. Values, gradients, reprs and error types."""
import numpy as np
import pytest
from conftest import check_parity

import ember
import ember.nn as nn
import ember.nn.functional as F

torch = pytest.importorskip("torch")
tnn, tF = torch.nn, torch.nn.functional
pytestmark = pytest.mark.filterwarnings("ignore:Default grid_sample")
RNG = np.random.default_rng(11)


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def _same_error(fe, ft):
    """Both calls raise, with the same exception type."""
    with pytest.raises(Exception) as te:
        ft()
    with pytest.raises(type(te.value)):
        fe()


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
