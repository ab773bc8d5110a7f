"""Memory formats and layouts: torch's ``memory_format`` and ``layout`` objects.

ember tensors are strided (``ember.strided`` is their one layout). A memory format
names an order of a tensor's strides: ``contiguous_format`` is row-major,
``channels_last`` keeps a 4-D NCHW tensor in NHWC order and ``channels_last_3d`` a 5-D
NCDHW tensor in NDHWC order. Ops that take ``memory_format=`` (``contiguous``, ``clone``,
``to``, ``empty`` and the ``*_like`` factories) give those strides; under
``preserve_format`` (their default) a channels-last input stays channels-last, as torch
keeps it. The ops propagate channels-last layouts as torch does (``ember/_C/layout.pxd``
for elementwise results; convolution, pooling, the norms and resampling lay out their
results with the helpers here or there), and a leaf's accumulated ``.grad`` takes the
leaf's strides (``grad_layout``); other stride orders give row-major results.

The core calls in here only when a format is named or the input is a non-contiguous
4-D or 5-D tensor, so the row-major fast paths stay as they are.
"""
from __future__ import annotations


class _Named:
    __slots__ = ("_name",)

    def __new__(cls, *args, **kwargs):
        raise TypeError(f"cannot create 'ember.{cls.__name__}' instances")

    def __repr__(self) -> str:
        return "ember." + self._name

    def __reduce__(self) -> str:
        return self._name          # pickled by name: unpickles to the same object


class memory_format(_Named):
    """A memory format: ``ember.contiguous_format``, ``ember.channels_last``,
    ``ember.channels_last_3d`` or ``ember.preserve_format``."""

    __slots__ = ()


class layout(_Named):
    """A tensor layout; ember's tensors are all ``ember.strided``."""

    __slots__ = ()


def _make(cls, name: str):
    obj = object.__new__(cls)
    obj._name = name
    return obj


contiguous_format = _make(memory_format, "contiguous_format")
channels_last = _make(memory_format, "channels_last")
channels_last_3d = _make(memory_format, "channels_last_3d")
preserve_format = _make(memory_format, "preserve_format")
legacy_contiguous_format = contiguous_format     # torch's name for the same object
strided = _make(layout, "strided")

_RANK = {channels_last: 4, channels_last_3d: 5}


def _check(fmt, op: str):
    if type(fmt) is not memory_format:
        raise TypeError(f"{op}(): argument 'memory_format' must be ember.memory_format, not "
                        f"{type(fmt).__name__}")
    return fmt


def _require_rank(ndim: int, fmt) -> None:
    rank = _RANK.get(fmt)
    if rank is not None and ndim != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {fmt._name} format")


def _order(ndim: int, fmt) -> list:
    """The dimensions from the innermost (stride 1) outwards."""
    if fmt in _RANK:
        return [1] + list(range(ndim - 1, 1, -1)) + [0]
    return list(range(ndim - 1, -1, -1))


def strides_for(shape, fmt) -> tuple:
    """The strides of a dense tensor of ``shape`` laid out in ``fmt`` (torch's formula:
    a size-0 dimension counts as 1)."""
    st = [0] * len(shape)
    acc = 1
    for d in _order(len(shape), fmt):
        st[d] = acc
        acc *= max(int(shape[d]), 1)
    return tuple(st)


def _dense_in(shape, stride, fmt) -> bool:
    # torch's channels-last contiguity test: size-1 dimensions may have any stride
    expected = 1
    for d in _order(len(shape), fmt):
        if shape[d] != 1:
            if stride[d] != expected:
                return False
            expected *= shape[d]
    return True


def _strides_like_channels_last(shape, stride) -> bool:
    """torch's ``is_channels_last_strides_2d/3d``: strides ordered C innermost, then the
    spatial dimensions, then N; ambiguous cases (N111) count as row-major."""
    if len(shape) not in (4, 5) or stride[1] == 0:
        return False
    low = 0
    for d in _order(len(shape), channels_last):
        if shape[d] == 0 or stride[d] < low:
            return False
        if d == 0 and low == stride[1]:
            return False
        low = stride[d] * (shape[d] if shape[d] > 1 else 1)
    return True


def suggest(t):
    """The format ``preserve_format`` keeps for ``t``: channels-last when ``t``'s strides
    are ordered so, else row-major."""
    if _strides_like_channels_last(tuple(t.shape), t.stride()):
        return channels_last if t.dim() == 4 else channels_last_3d
    return contiguous_format


def _resolve(t, fmt, op: str):
    if fmt is None or _check(fmt, op) is preserve_format:
        return suggest(t)
    _require_rank(t.dim(), fmt)
    return fmt


def is_contiguous(t, fmt) -> bool:
    """``Tensor.is_contiguous(memory_format=fmt)``."""
    fmt = _check(fmt, "is_contiguous")
    if fmt in _RANK:
        return t.dim() == _RANK[fmt] and _dense_in(tuple(t.shape), t.stride(), fmt)
    return t.is_contiguous()


def empty(shape, fmt, *, dtype, device):
    """An uninitialised tensor of ``shape`` laid out in ``fmt``."""
    from ember._C import creation

    return creation.empty_strided(tuple(shape), strides_for(tuple(shape), fmt), dtype=dtype,
                                  device=device)


def _copy_in(t, fmt):
    # copy_ carries autograd from t to the result, as clone does
    return empty(t.shape, fmt, dtype=t.dtype, device=t.device).copy_(t)


def contiguous(t, fmt):
    """``Tensor.contiguous(memory_format=fmt)``: ``t`` itself when it is laid out so."""
    if is_contiguous(t, fmt):
        return t
    if fmt is preserve_format:
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    _require_rank(t.dim(), fmt)
    return t.contiguous() if fmt is contiguous_format else _copy_in(t, fmt)


def clone(t, fmt):
    """``Tensor.clone(memory_format=fmt)``, or None when the clone is row-major (the core
    makes that one)."""
    fmt = _resolve(t, fmt, "clone")
    return None if fmt is contiguous_format else _copy_in(t, fmt)


def like(input, fmt, op: str):
    """The format a ``*_like`` factory lays its result out in, or None for row-major."""
    fmt = _resolve(input, fmt, op)
    return None if fmt is contiguous_format else fmt


def relayout_like(input, r, fmt, op: str):
    """``r`` (a fresh row-major result shaped like ``input``) copied into the layout a
    ``*_like`` factory gives under ``fmt``; ``r`` itself when that is row-major."""
    fmt = like(input, fmt, op)
    if fmt is None:
        return r
    out = _copy_in(r.detach(), fmt)
    return out.requires_grad_(r.requires_grad)


def to(t, r, fmt):
    """The end of ``Tensor.to``: ``r`` is the converted tensor (``t`` itself when nothing
    changed); lay it out as ``fmt`` asks (``preserve_format`` keeps ``t``'s channels-last
    layout)."""
    if fmt is None or _check(fmt, "to") is preserve_format:
        want = suggest(t)
        if r is t or want is contiguous_format or is_contiguous(r, want):
            return r
        return _copy_in(r, want)
    _require_rank(t.dim(), fmt)
    if r is t and suggest(t) is fmt:
        return t        # torch aliases here, whatever the exact strides
    if r is not t and r.stride() == strides_for(tuple(r.shape), fmt):
        return r
    return _copy_in(r, fmt)


def _non_overlapping_dense(shape, stride) -> bool:
    """torch's is_non_overlapping_and_dense: some permutation of the dims is row-major."""
    dims = sorted((d for d in range(len(shape)) if shape[d] != 1), key=lambda d: stride[d])
    expected = 1
    for d in dims:
        if shape[d] == 0:
            return True
        if stride[d] != expected:
            return False
        expected *= shape[d]
    return True


def grad_layout(var, g):
    """torch's layout contract for a leaf's accumulated ``.grad``: the strides of ``var``
    when ``var`` is dense (a channels-last parameter gets a channels-last gradient),
    else row-major.  ``g`` itself when it already obeys."""
    shape, vst, gst = tuple(var.shape), var.stride(), g.stride()
    if _non_overlapping_dense(shape, vst):
        if all(gst[d] == vst[d] if shape[d] != 1 else gst[d] != 0 for d in range(len(shape))):
            return g
        from ember._C import creation

        return creation.empty_strided(shape, vst, dtype=g.dtype, device=g.device).copy_(g)
    return g if g.is_contiguous() else g.contiguous()


def like_input(input, out, *others):
    """``out`` (a row-major result of an op composed of other ops) in the channels-last
    layout that torch's kernel for the op gives: that of ``input`` (or of one of
    ``others``, as convolution takes its weight's) when it suggests one."""
    for t in (input,) + others:
        fmt = suggest(t)
        if fmt is not contiguous_format:
            return out if out.dim() != t.dim() else out.contiguous(memory_format=fmt)
    return out
