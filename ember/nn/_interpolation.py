"""Resizing for ``ember.nn.functional``: ``interpolate`` (nearest, nearest-exact,
(bi/tri)linear, bicubic, area, anti-aliased) and ``upsample``, composed from
gathers and weighted sums over one axis at a time."""
from __future__ import annotations

import math
import operator
import struct as _struct

import ember
from ember import _memory_format
from ember._C import core as _core
from ember._check import _real_only
from ember.nn.functional import adaptive_avg_pool1d, adaptive_avg_pool2d

__all__ = ["interpolate", "upsample"]


def _f32(v):
    """``v`` rounded to float32 (ATen computes nearest-neighbour indices in float)."""
    return _struct.unpack("f", _struct.pack("f", v))[0]


def _is_int(v):
    if isinstance(v, ember.Tensor):
        return not v.is_floating_point()
    try:
        operator.index(v)
    except TypeError:
        return False
    return True


def _interp_sizes(input, size, scale_factor, nsp, recompute_scale_factor, mode):
    """Output size and per-axis scale factors (None: derive from the sizes), as
    ``torch.nn.functional.interpolate`` settles them."""
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != nsp:
                raise ValueError(f"Input and output must have the same number of spatial "
                                 f"dimensions, but got input with spatial dimensions of "
                                 f"{list(input.shape[2:])} and output size of {size}. Please "
                                 f"provide input tensor in (N, C, d1, d2, ...,dK) format and "
                                 f"output size in (o1, o2, ...,oK) format.")
            if not all(_is_int(v) for v in size):
                raise TypeError(f"expected size to be one of int or Tuple[int] or Tuple[int, "
                                f"int] or Tuple[int, int, int], but got size with types "
                                f"{[type(v) for v in size]}")
            out_size = [int(v) for v in size]
        else:
            out_size = [int(size)] * nsp
        scales = None
    elif scale_factor is not None:
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != nsp:
                raise ValueError(f"Input and scale_factor must have the same number of spatial "
                                 f"dimensions, but got input with spatial dimensions of "
                                 f"{list(input.shape[2:])} and scale_factor of shape "
                                 f"{scale_factor}. Please provide input tensor in (N, C, d1, "
                                 f"d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) "
                                 f"format.")
            scales = [float(s) for s in scale_factor]
        else:
            scales = [float(scale_factor)] * nsp
        sizes = [input.shape[2 + i] * scales[i] for i in range(nsp)]
        if not all(math.isfinite(v) and abs(v) < 2.0**63 for v in sizes):
            raise RuntimeError("value cannot be converted to type int64_t without overflow")
        out_size = [int(math.floor(v)) for v in sizes]
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if recompute_scale_factor or mode == "area":
        scales = None
    if scales is None:
        scales = [None] * nsp
    return out_size, scales


def _area_scale(in_n, out_n, align_corners, scale):
    """ATen's ``area_pixel_compute_scale``: input step per output step."""
    if align_corners:
        return (in_n - 1) / (out_n - 1) if out_n > 1 else 0.0
    return 1.0 / scale if scale is not None and scale > 0 else in_n / out_n


def _taps_axis(x, dim, idx, wts):
    """``out[..., i, ...] = sum_k wts[k][i] * x[..., idx[k][i], ...]`` along ``dim``: a
    few index_selects and multiplies, so autograd comes from the ops."""
    shape = [1] * x.dim()
    shape[dim] = len(idx[0])
    out = None
    for ik, wk in zip(idx, wts):
        term = x.index_select(dim, ember.tensor(ik, dtype=ember.int64))
        term = term * ember.tensor(wk, dtype=x.dtype).reshape(shape)
        out = term if out is None else out + term
    return out


def _nearest_axis(x, dim, out_n, scale, exact):
    in_n = x.shape[dim]
    s = _f32(1.0 / scale) if scale is not None and scale > 0 else _f32(in_n / out_n)
    off = 0.5 if exact else 0.0
    idx = [min(int(math.floor(_f32((i + off) * s))), in_n - 1) for i in range(out_n)]
    return x.index_select(dim, ember.tensor(idx, dtype=ember.int64))


def _linear_axis(x, dim, out_n, align_corners, scale):
    in_n = x.shape[dim]
    if out_n == in_n:          # ATen copies when the size is unchanged
        return x
    r = _area_scale(in_n, out_n, align_corners, scale)
    i0, i1, w0, w1 = [], [], [], []
    for i in range(out_n):
        src = r * i if align_corners else max(r * (i + 0.5) - 0.5, 0.0)
        j = int(src)
        lam = min(max(src - j, 0.0), 1.0)
        i0.append(j)
        i1.append(j + 1 if j < in_n - 1 else j)
        w0.append(1.0 - lam)
        w1.append(lam)
    return _taps_axis(x, dim, [i0, i1], [w0, w1])


def _cubic1(t, a):
    return ((a + 2) * t - (a + 3)) * t * t + 1


def _cubic2(t, a):
    return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a


def _cubic_axis(x, dim, out_n, align_corners, scale):
    """Keys' cubic convolution (A = -0.75) with border replication, as ATen's bicubic."""
    in_n = x.shape[dim]
    r = _area_scale(in_n, out_n, align_corners, scale)
    idx = [[], [], [], []]
    wts = [[], [], [], []]
    a = -0.75
    for i in range(out_n):
        src = r * i if align_corners else r * (i + 0.5) - 0.5
        j = min(int(math.floor(src)), in_n - 1)
        t = min(max(src - j, 0.0), 1.0)
        coeffs = (_cubic2(t + 1.0, a), _cubic1(t, a), _cubic1(1.0 - t, a),
                  _cubic2(2.0 - t, a))
        for k in range(4):
            idx[k].append(min(max(j + k - 1, 0), in_n - 1))
            wts[k].append(coeffs[k])
    return _taps_axis(x, dim, idx, wts)


def _aa_bilinear(t):
    t = abs(t)
    return 1.0 - t if t < 1.0 else 0.0


def _aa_bicubic(t):
    t = abs(t)
    if t < 1.0:
        return _cubic1(t, -0.5)
    if t < 2.0:
        return _cubic2(t, -0.5)
    return 0.0


def _aa_lanczos(t):
    t = abs(t)
    if t == 0.0:
        return 1.0
    if t >= 3.0:
        return 0.0
    pt = math.pi * t
    return (math.sin(pt) / pt) * (math.sin(pt / 3.0) / (pt / 3.0))


_AA_FILTERS = {"bilinear": (2, _aa_bilinear), "bicubic": (4, _aa_bicubic),
               "lanczos": (6, _aa_lanczos)}


def _aa_axis(x, dim, out_n, align_corners, scale, mode):
    """Anti-aliased resampling (ATen's ``_upsample_*_aa``): the filter is stretched by
    the downscale factor, clipped at the borders and renormalised."""
    in_n = x.shape[dim]
    if out_n == in_n:
        return x
    interp_size, filt = _AA_FILTERS[mode]
    r = _area_scale(in_n, out_n, align_corners, scale)
    support = interp_size * 0.5 * r if r >= 1.0 else interp_size * 0.5
    inv = 1.0 / r if r >= 1.0 else 1.0
    rows = []
    for i in range(out_n):
        center = r * (i + 0.5)
        lo = max(int(center - support + 0.5), 0)
        n = min(int(center + support + 0.5), in_n) - lo
        w = [filt((j + lo - center + 0.5) * inv) for j in range(n)]
        total = sum(w)
        if total != 0.0:
            w = [v / total for v in w]
        rows.append((lo, w))
    k = max(len(w) for _, w in rows)
    idx = [[min(lo + j, in_n - 1) for lo, _ in rows] for j in range(k)]
    wts = [[w[j] if j < len(w) else 0.0 for _, w in rows] for j in range(k)]
    return _taps_axis(x, dim, idx, wts)


def _area_interp(input, out_size):
    nsp = len(out_size)
    if nsp == 1:
        return adaptive_avg_pool1d(input, out_size[0])
    if nsp == 2:
        return adaptive_avg_pool2d(input, out_size)
    # 3-D: box averages are separable, (D, H, W) -> (D, oh, ow) -> (od, oh, ow)
    N, C, D, H, W = input.shape
    od, oh, ow = out_size
    x = adaptive_avg_pool2d(input.reshape(N, C * D, H, W), (oh, ow))
    x = adaptive_avg_pool2d(x.reshape(N, C, D, oh * ow), (od, oh * ow))
    return x.reshape(N, C, od, oh, ow)


_INTERP_DIMS = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3, "lanczos": 2}
_INTERP_KERNEL = {"linear": "upsample_linear1d", "bilinear": "upsample_bilinear2d",
                  "bicubic": "upsample_bicubic2d", "trilinear": "upsample_trilinear3d",
                  "lanczos": "_upsample_lanczos2d_aa"}


def interpolate(input: ember.Tensor, size=None, scale_factor=None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> ember.Tensor:
    """Resize an ``(N, C, *spatial)`` input, as ``torch.nn.functional.interpolate``.

    Parameters
    ----------
    input : Tensor
        3-D, 4-D or 5-D: one, two or three spatial dims.
    size : int or sequence of int, optional
        Output spatial size.
    scale_factor : float or sequence of float, optional
        Multiplier of the spatial size (exactly one of ``size`` and ``scale_factor``).
    mode : str, optional
        ``'nearest'`` (default), ``'nearest-exact'``, ``'linear'`` (3-D),
        ``'bilinear'`` (4-D), ``'bicubic'`` (4-D), ``'trilinear'`` (5-D), ``'area'``
        or ``'lanczos'`` (4-D, needs ``antialias=True``).
    align_corners : bool, optional
        For the interpolating modes: map the corner pixels' centres onto each other.
    recompute_scale_factor : bool, optional
        Derive the scale from the computed output size instead of ``scale_factor``.
    antialias : bool, optional
        Anti-aliased (filter-stretching) downsampling; bilinear, bicubic and lanczos on
        4-D input only.

    Returns
    -------
    Tensor
        ``(N, C, *out_size)``; differentiable in ``input``.

    Raises
    ------
    ValueError
        Bad ``size``/``scale_factor``/``align_corners``/``antialias`` combinations.
    NotImplementedError
        A mode used with the wrong number of dimensions, as in PyTorch.
    """
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating "
                             "modes: linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    nd = input.dim()
    nsp = nd - 2
    _real_only(input, f"upsample_{mode.replace('-', '_')}{nsp}d")
    out_size, scales = _interp_sizes(input, size, scale_factor, nsp, recompute_scale_factor,
                                     mode)
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and nd == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos "
                         "modes and requires a 4-D tensor as input")
    known = ("nearest", "nearest-exact", "area") + tuple(_INTERP_DIMS)
    if mode not in known or nd not in (3, 4, 5):
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported "
                                  f"(got {nd}D) for the modes: nearest | linear | bilinear | "
                                  f"bicubic | trilinear | lanczos | area | nearest-exact (got "
                                  f"{mode})")
    want = _INTERP_DIMS.get(mode)
    if want is not None and want != nsp:
        if mode in ("bicubic", "lanczos"):
            raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors "
                                      f"supported (got {nd}D) for the modes: nearest | linear "
                                      f"| bilinear | bicubic | trilinear | lanczos | area | "
                                      f"nearest-exact (got {mode})")
        raise NotImplementedError(f"Got {nd}D input, but {mode} mode needs {want + 2}D input")
    if any(o <= 0 for o in out_size):
        names = "DHW"[3 - nsp:]
        ins = ", ".join(f"{n}: {s}" for n, s in zip(names, input.shape[2:]))
        outs = ", ".join(f"{n}: {s}" for n, s in zip(names, out_size))
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input "
                           f"({ins}) output ({outs})")
    _core._check_size(list(input.shape[:2]) + list(out_size), input.dtype, "interpolate")
    if mode in ("nearest", "nearest-exact"):
        out = input
        for k in range(nsp):
            if nsp == 2 and mode == "nearest" and out_size[k] == input.shape[2 + k]:
                continue       # ATen's 2-D nearest kernel copies an axis of unchanged size
            out = _nearest_axis(out, 2 + k, out_size[k], scales[k], mode == "nearest-exact")
        return _memory_format.like_input(input, out)
    if mode == "area":
        return _memory_format.like_input(input, _area_interp(input, out_size))
    if not input.is_floating_point():
        # PyTorch also refuses every integer dtype here except uint8 (which it resamples
        # with its own fixed-point rounding); ember resamples floating-point inputs only
        raise NotImplementedError(f'interpolate(mode={mode!r}): "{_INTERP_KERNEL[mode]}" not '
                                  f"implemented for {input.dtype} input; convert it to a "
                                  f"floating-point dtype first")
    if mode == "lanczos":
        if align_corners:
            raise ValueError("Lanczos mode does not support align_corners=True")
        if not antialias:
            raise ValueError("Lanczos mode requires antialias=True")
    out = input
    # ATen's separable anti-aliased kernel resamples the last dim first
    axes = range(nsp - 1, -1, -1) if antialias else range(nsp)
    for k in axes:
        if antialias:
            out = _aa_axis(out, 2 + k, out_size[k], align_corners, scales[k], mode)
        elif mode == "bicubic":
            out = _cubic_axis(out, 2 + k, out_size[k], align_corners, scales[k])
        else:
            out = _linear_axis(out, 2 + k, out_size[k], align_corners, scales[k])
    return _memory_format.like_input(input, out)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    return interpolate(input, size, scale_factor, mode, align_corners)
