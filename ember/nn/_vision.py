"""Vision functions of ``ember.nn.functional``: pixel and channel shuffles, the deprecated
``upsample_*`` forms, ``affine_grid`` and ``grid_sample``.

Written over ember's public tensor ops, so autograd comes from the ops themselves."""
from __future__ import annotations

import itertools
import warnings

import ember
from ember._check import _check, _check_value

__all__ = ["pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle",
           "upsample_nearest", "upsample_bilinear", "affine_grid", "grid_sample"]


def _shuffle_checks(op, input, factor):
    _check(input.dim() >= 3, lambda: f"{op} expects input to have at least 3 dimensions, "
                                     f"but got input with {input.dim()} dimension(s)")
    name = "upscale_factor" if op == "pixel_shuffle" else "downscale_factor"
    _check(factor > 0, lambda: f"{op} expects a positive {name}, but got {factor}")


def pixel_shuffle(input: ember.Tensor, upscale_factor: int) -> ember.Tensor:
    """Rearrange ``(*, C*r*r, H, W)`` into ``(*, C, H*r, W*r)``.

    Parameters
    ----------
    input : Tensor
        At least 3-D, with channels divisible by ``upscale_factor ** 2``.
    upscale_factor : int
        The factor ``r`` that multiplies each spatial size.

    Returns
    -------
    Tensor
        The rearranged tensor (a copy); differentiable.
    """
    r = int(upscale_factor)
    _shuffle_checks("pixel_shuffle", input, r)
    *lead, c, h, w = input.shape
    _check(c % (r * r) == 0, lambda: f"pixel_shuffle expects its input's 'channel' dimension "
                                     f"to be divisible by the square of upscale_factor, but "
                                     f"input.size(-3)={c} is not divisible by {r * r}")
    oc = c // (r * r)
    x = input.reshape(*lead, oc, r, r, h, w)
    n = len(lead)
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return x.reshape(*lead, oc, h * r, w * r)


def pixel_unshuffle(input: ember.Tensor, downscale_factor: int) -> ember.Tensor:
    """Rearrange ``(*, C, H*r, W*r)`` into ``(*, C*r*r, H, W)`` (inverse of
    :func:`pixel_shuffle`)."""
    r = int(downscale_factor)
    _shuffle_checks("pixel_unshuffle", input, r)
    *lead, c, h, w = input.shape
    _check(h % r == 0, lambda: f"pixel_unshuffle expects height to be divisible by "
                               f"downscale_factor, but input.size(-2)={h} is not divisible "
                               f"by {r}")
    _check(w % r == 0, lambda: f"pixel_unshuffle expects width to be divisible by "
                               f"downscale_factor, but input.size(-1)={w} is not divisible "
                               f"by {r}")
    n = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return x.reshape(*lead, c * r * r, h // r, w // r)


def channel_shuffle(input: ember.Tensor, groups: int) -> ember.Tensor:
    """Split the channels of ``(N, C, *)`` into ``groups`` and interleave them."""
    _check(input.dim() >= 3, lambda: f"channel_shuffle expects input to have at least 3 "
                                     f"dimensions, but got input with {input.dim()} "
                                     f"dimension(s)")
    _check(groups > 0, lambda: f"Number of groups to divide channels in must be positive. "
                               f"Value of groups:{groups}")
    c = input.shape[1]
    _check(c % groups == 0, lambda: f"Number of channels must be divisible by groups. Got "
                                    f"{c} channels and {groups} groups.")
    n, rest = input.shape[0], input.shape[2:]
    x = input.reshape(n, groups, c // groups, *rest).transpose(1, 2)
    return x.reshape(n, c, *rest)


native_channel_shuffle = channel_shuffle


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated alias of ``interpolate(..., mode='nearest')``."""
    from ember.nn.functional import interpolate
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated alias of ``interpolate(..., mode='bilinear', align_corners=True)``."""
    from ember.nn.functional import interpolate
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ---- affine_grid / grid_sample -------------------------------------------------
def _linspace(n, align_corners, dtype):
    if n <= 1:
        return ember.zeros(max(n, 0), dtype=dtype)
    r = ember.linspace(-1.0, 1.0, n, dtype=dtype)
    return r if align_corners else r * ((n - 1) / n)


def affine_grid(theta: ember.Tensor, size, align_corners: bool | None = None) -> ember.Tensor:
    """The sampling grid of the affine maps ``theta`` (``(N, 2, 3)`` or ``(N, 3, 4)``) for an
    output of ``size`` ``(N, C, H, W)`` or ``(N, C, D, H, W)``, as ``(N, H, W, 2)`` or
    ``(N, D, H, W, 3)`` normalised coordinates."""
    if align_corners is None:
        align_corners = False
    _check_value(theta.is_floating_point(), lambda: f"Expected theta to have floating point "
                                                    f"type, but got {theta.dtype}")
    size = list(size)
    if len(size) == 4:
        _check_value(theta.dim() == 3 and tuple(theta.shape[1:]) == (2, 3), lambda: (
            f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. Got "
            f"{list(theta.shape)}."))
    elif len(size) == 5:
        _check_value(theta.dim() == 3 and tuple(theta.shape[1:]) == (3, 4), lambda: (
            f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {size}. Got "
            f"{list(theta.shape)}."))
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {size}.")
    _check_value(min(size) > 0, lambda: f"Expected non-zero, positive output size. Got {size}")
    n, spatial = size[0], size[2:]
    axes = [_linspace(s, align_corners, theta.dtype) for s in reversed(spatial)]  # x, y(, z)
    mesh = ember.meshgrid(*reversed(axes), indexing="ij")          # each (D,) H, W
    coords = [m.reshape(-1) for m in reversed(mesh)]                # x, y(, z) flattened
    base = ember.stack(coords + [ember.ones_like(coords[0])], 1)    # (P, k+1)
    grid = ember.matmul(base.unsqueeze(0), theta.transpose(1, 2))   # (N, P, k)
    return grid.reshape(n, *spatial, len(spatial))


def _unnormalize(coord, size, align_corners):
    if align_corners:
        return (coord + 1) * ((size - 1) / 2)
    return ((coord + 1) * size - 1) / 2


def _reflect(coord, twice_low, twice_high):
    if twice_low == twice_high:
        return ember.zeros_like(coord)
    lo = twice_low / 2
    span = (twice_high - twice_low) / 2
    c = (coord - lo).abs()
    extra = ember.fmod(c, span)
    flips = ember.floor(c / span).detach()
    even = ember.fmod(flips, 2) == 0
    return ember.where(even, extra + lo, span - extra + lo)


def _pad_coord(coord, size, padding_mode, align_corners):
    """ATen's ``compute_coordinates``: bring a pixel coordinate inside for border and
    reflection padding."""
    if padding_mode == "border":
        return coord.clamp(0, size - 1)
    if padding_mode == "reflection":
        if align_corners:
            coord = _reflect(coord, 0, 2 * (size - 1))
        else:
            coord = _reflect(coord, -1, 2 * size - 1)
        return coord.clamp(0, size - 1)
    return coord


def _gather(flat, idx_list, sizes, n, c):
    """Values of ``flat`` (N, C, P) at the integer coordinates ``idx_list`` (each (N, Q)),
    with a mask of the in-bounds ones; out-of-bounds taps read index 0."""
    valid = None
    lin = None
    stride = 1
    for idx, s in zip(reversed(idx_list), reversed(sizes)):
        ok = (idx >= 0) & (idx < s)
        valid = ok if valid is None else valid & ok
        term = idx * stride
        lin = term if lin is None else lin + term
        stride *= s
    lin = ember.where(valid, lin, ember.zeros_like(lin))
    q = lin.shape[1]
    vals = flat.gather(2, lin.unsqueeze(1).expand(n, c, q))
    return vals, valid.unsqueeze(1)


def _cubic_weights(t, a=-0.75):
    """The four cubic-convolution weights for taps at -1, 0, 1, 2 of fraction ``t``."""
    def near(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def grid_sample(input: ember.Tensor, grid: ember.Tensor, mode: str = "bilinear",
                padding_mode: str = "zeros", align_corners: bool | None = None) -> ember.Tensor:
    """Sample ``input`` (``(N, C, H, W)`` or ``(N, C, D, H, W)``) at the normalised
    locations of ``grid`` (``(N, Ho, Wo, 2)`` or ``(N, Do, Ho, Wo, 3)``, x first).

    Parameters
    ----------
    mode : {'bilinear', 'nearest', 'bicubic'}
        Interpolation (``'bicubic'`` for 4-D input only).
    padding_mode : {'zeros', 'border', 'reflection'}
        Values read outside the input.
    align_corners : bool, optional
        Whether -1 and 1 are the centres (True) or the outer edges (False, default) of the
        corner pixels.

    Returns
    -------
    Tensor
        ``(N, C, Ho, Wo)`` or ``(N, C, Do, Ho, Wo)``; differentiable in input and grid.
    """
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        align_corners = False
    _check(input.dim() in (4, 5), lambda: f"grid_sampler(): expected 4D or 5D input and grid "
                                          f"with same number of dimensions, but got input "
                                          f"with sizes {list(input.shape)} and grid with "
                                          f"sizes {list(grid.shape)}")
    _check(grid.dim() == input.dim(), lambda: f"grid_sampler(): expected grid to have same "
                                              f"number of dimensions as input, but got grid "
                                              f"with sizes {list(grid.shape)}")
    nsp = input.dim() - 2
    _check(grid.shape[0] == input.shape[0], lambda: f"grid_sampler(): expected grid and input "
                                                    f"to have same batch size, but got input "
                                                    f"with sizes {list(input.shape)} and grid "
                                                    f"with sizes {list(grid.shape)}")
    _check(grid.shape[-1] == nsp, lambda: f"grid_sampler(): expected grid to have size {nsp} "
                                          f"in last dimension, but got grid with sizes "
                                          f"{list(grid.shape)}")
    _check(not (mode == "bicubic" and nsp == 3),
           "grid_sampler(): bicubic interpolation only supports 4D input")
    n, c = input.shape[:2]
    sizes = list(input.shape[2:])                        # (D,) H, W
    out_sp = list(grid.shape[1:-1])
    flat = input.reshape(n, c, -1)
    g = grid.reshape(n, -1, nsp)
    # coords[k] follows the input's spatial order (D,) H, W; grid's last axis is x, y(, z)
    raw = [_unnormalize(g[..., nsp - 1 - k], sizes[k], align_corners) for k in range(nsp)]
    if mode == "bicubic":
        base = [ember.floor(r) for r in raw]
        wts = [_cubic_weights(r - b) for r, b in zip(raw, base)]
        base = [b.detach() for b in base]
        out = None
        for ty, tx in itertools.product(range(4), range(4)):
            idx = []
            for k, t in ((0, ty), (1, tx)):
                p = _pad_coord(base[k] + (t - 1), sizes[k], padding_mode, align_corners)
                idx.append(p.long())
            vals, valid = _gather(flat, idx, sizes, n, c)
            w = (wts[0][ty] * wts[1][tx]).unsqueeze(1)
            term = ember.where(valid, vals * w, ember.zeros_like(vals))
            out = term if out is None else out + term
        return out.reshape(n, c, *out_sp)
    coords = [_pad_coord(r, s, padding_mode, align_corners) for r, s in zip(raw, sizes)]
    if mode == "nearest":
        idx = [ember.round(co.detach()).long() for co in coords]
        vals, valid = _gather(flat, idx, sizes, n, c)
        out = ember.where(valid, vals, ember.zeros_like(vals))
        return out.reshape(n, c, *out_sp)
    lo = [ember.floor(co.detach()) for co in coords]
    frac = [co - b for co, b in zip(coords, lo)]
    lo = [b.long() for b in lo]
    out = None
    for corner in itertools.product((0, 1), repeat=nsp):
        idx = [b + o for b, o in zip(lo, corner)]
        w = None
        for f, o in zip(frac, corner):
            wk = f if o else 1 - f
            w = wk if w is None else w * wk
        vals, valid = _gather(flat, idx, sizes, n, c)
        term = ember.where(valid, vals * w.unsqueeze(1), ember.zeros_like(vals))
        out = term if out is None else out + term
    return out.reshape(n, c, *out_sp)
