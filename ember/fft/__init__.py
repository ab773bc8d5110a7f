"""``ember.fft``: discrete Fourier transforms, as ``torch.fft``.

Every transform is built from three kernels over one dim (``ember._C.fft``):
complex-to-complex, real-to-complex (one-sided) and complex-to-real, each a
mixed-radix FFT in C with Bluestein's algorithm for lengths with large prime
factors. ``n``/``s`` trims or zero-pads the input along the transformed dims;
``norm`` is ``"backward"`` (default: no scaling forward, 1/n backward),
``"ortho"`` (1/sqrt(n) both ways) or ``"forward"`` (1/n forward). Autograd
follows torch's formulas (``_fft_c2c``, ``_fft_r2c``, ``_fft_c2r``)."""
from __future__ import annotations

import math
from typing import Optional, Sequence

from ember._C import core as _core
from ember._C import fft as _k

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
           "rfftn", "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn",
           "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

_NORMS = ("backward", "ortho", "forward")


def _ember():
    import ember
    return ember


def _scale(norm: Optional[str], n: int, forward: bool, op: str) -> float:
    """The factor a transform of logical size n is multiplied by."""
    if norm is None:
        norm = "backward"
    if norm not in _NORMS:
        raise ValueError(f"{op}(): Invalid normalization mode: {norm}")
    if norm == "ortho":
        return 1.0 / math.sqrt(n) if n > 0 else 1.0
    scaled = (norm == "forward") == forward
    return 1.0 / n if scaled and n > 0 else 1.0


def _tensor(x, op):
    if not isinstance(x, _core.TensorBase):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")
    return x


def _float_dtype(t):
    """The real dtype a transform computes in: integers and bool go to the default dtype,
    half precision to float32."""
    d = t.dtype
    if d.is_complex:
        return d.to_real()
    if d in (_core.float32, _core.float64):
        return d
    if d.is_floating_point:
        return _core.float32
    return _core._get_default_dtype()


def _as_complex(t):
    real = _float_dtype(t)
    return t if t.dtype.is_complex and t.dtype.to_real() is real else t.to(real.to_complex())


def _as_real(t, op):
    if t.dtype.is_complex:
        raise RuntimeError(f"{op} expects a real input tensor, but got {_type_name(t.dtype)}")
    d = _float_dtype(t)
    return t if t.dtype is d else t.to(d)


def _type_name(d):
    return _core._SCALAR_NAMES[d.code]


def _resize(t, dim: int, n: int, op: str):
    """Trim or zero-pad t along dim to length n."""
    if n < 1:
        raise RuntimeError(f"{op}(): Invalid number of data points ({n}) specified")
    cur = t.shape[dim]
    if cur == n:
        return t
    if cur > n:
        return t.narrow(dim, 0, n)
    E = _ember()
    pad = [0, 0] * (t.dim() - dim - 1) + [0, n - cur]
    if t.dtype.is_complex:
        # constant_pad works on real tensors: pad the (re, im) view, whose last dim is fixed
        return E.view_as_complex(E.nn.functional.pad(E.view_as_real(t), [0, 0] + pad))
    return E.nn.functional.pad(t, pad)


def _wrap(dim: int, ndim: int, op: str) -> int:
    if ndim == 0:
        raise IndexError(f"{op}(): Dimension specified as {dim} but tensor has no dimensions")
    if not -ndim <= dim < ndim:
        raise IndexError(f"{op}(): Dimension out of range (expected to be in range of "
                         f"[{-ndim}, {ndim - 1}], but got {dim})")
    return dim % ndim


def _dims(t, s, dim, op, default_all=True):
    """torch's canonicalisation of (s, dim) for the n-d transforms: the dims and sizes."""
    nd = t.dim()
    if dim is not None:
        dims = [dim] if isinstance(dim, int) else list(dim)
        dims = [_wrap(d, nd, op) for d in dims]
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"{op}(): dims must be unique")
        if s is not None:
            s = [s] if isinstance(s, int) else list(s)
            if len(s) != len(dims):
                raise RuntimeError(f"{op}(): When given, dim and shape arguments must have the "
                                   f"same length")
    elif s is not None:
        s = [s] if isinstance(s, int) else list(s)
        if len(s) > nd:
            raise RuntimeError(f"{op}(): Got shape with {len(s)} values but input tensor only "
                               f"has {nd} dimensions.")
        dims = list(range(nd - len(s), nd))
    else:
        dims = list(range(nd)) if default_all else []
    if s is None:
        s = [-1] * len(dims)
    s = [t.shape[d] if n == -1 else n for d, n in zip(dims, s)]
    return dims, s


def _out(r, out, op):
    if out is None:
        return r
    return _core._write_out(out, r, (), op, True)


# ---------------------------------------------------------------------------
# complex-to-complex

def _c2c_nd(t, dims, sizes, forward, norm, op):
    x = _as_complex(t)
    for d, n in zip(dims, sizes):
        x = _resize(x, d, n, op)
    total = 1
    for n in sizes:
        total *= n
    scale = _scale(norm, total, forward, op)
    if not dims:
        return x.clone() if x is t else x
    owned = False       # x may still share memory with the input; each result is ours
    for i, d in enumerate(dims):
        x = _k._fft_c2c(x, d, forward, scale if i == len(dims) - 1 else 1.0, owned)
        owned = True
    return x


def fft(input, n: Optional[int] = None, dim: int = -1, norm: Optional[str] = None, *,
        out=None):
    """One-dimensional discrete Fourier transform of ``input`` along ``dim``.

    Parameters
    ----------
    input : Tensor
        Real or complex input (real input is promoted to complex).
    n : int, optional
        Signal length: the input is trimmed or zero-padded along ``dim``.
    dim : int
        The dim to transform.
    norm : {"backward", "ortho", "forward"}, optional
        Normalization mode (default ``"backward"``: no scaling).
    """
    t = _tensor(input, "fft_fft")
    d = _wrap(dim, t.dim(), "fft_fft")
    return _out(_c2c_nd(t, [d], [t.shape[d] if n is None else n], True, norm, "fft_fft"),
                out, "fft_fft")


def ifft(input, n: Optional[int] = None, dim: int = -1, norm: Optional[str] = None, *,
         out=None):
    """One-dimensional inverse discrete Fourier transform (see :func:`fft`)."""
    t = _tensor(input, "fft_ifft")
    d = _wrap(dim, t.dim(), "fft_ifft")
    return _out(_c2c_nd(t, [d], [t.shape[d] if n is None else n], False, norm, "fft_ifft"),
                out, "fft_ifft")


def fftn(input, s: Optional[Sequence[int]] = None, dim: Optional[Sequence[int]] = None,
         norm: Optional[str] = None, *, out=None):
    """N-dimensional discrete Fourier transform over ``dim`` (default: all dims, or the
    last ``len(s)``), with sizes ``s``."""
    t = _tensor(input, "fft_fftn")
    dims, sizes = _dims(t, s, dim, "fft_fftn")
    return _out(_c2c_nd(t, dims, sizes, True, norm, "fft_fftn"), out, "fft_fftn")


def ifftn(input, s: Optional[Sequence[int]] = None, dim: Optional[Sequence[int]] = None,
          norm: Optional[str] = None, *, out=None):
    """N-dimensional inverse discrete Fourier transform (see :func:`fftn`)."""
    t = _tensor(input, "fft_ifftn")
    dims, sizes = _dims(t, s, dim, "fft_ifftn")
    return _out(_c2c_nd(t, dims, sizes, False, norm, "fft_ifftn"), out, "fft_ifftn")


def fft2(input, s: Optional[Sequence[int]] = None, dim: Sequence[int] = (-2, -1),
         norm: Optional[str] = None, *, out=None):
    """Two-dimensional discrete Fourier transform over ``dim`` (default the last two)."""
    return fftn(input, s, dim, norm, out=out)


def ifft2(input, s: Optional[Sequence[int]] = None, dim: Sequence[int] = (-2, -1),
          norm: Optional[str] = None, *, out=None):
    """Two-dimensional inverse discrete Fourier transform."""
    return ifftn(input, s, dim, norm, out=out)


# ---------------------------------------------------------------------------
# real-to-complex and complex-to-real

def _rfftn(t, dims, sizes, norm, op):
    if not dims:
        raise RuntimeError(f"{op} must transform at least one axis")
    x = _as_real(t, op)
    for d, n in zip(dims, sizes):
        x = _resize(x, d, n, op)
    total = 1
    for n in sizes:
        total *= n
    scale = _scale(norm, total, True, op)
    x = _k._fft_r2c(x, dims[-1], scale)
    for d in dims[:-1]:
        x = _k._fft_c2c(x, d, True, 1.0, True)
    return x


def _irfftn(t, dims, sizes, last_n, norm, op, forward_norm=False):
    """C2R over dims: c2c (backward) over all but the last, then c2r of length last_n;
    scaled as a forward transform when forward_norm (hfft, which runs on conj(input))."""
    if not dims:
        raise RuntimeError(f"{op} must transform at least one axis")
    x = _as_complex(t)
    if last_n < 1:
        raise RuntimeError(f"{op}(): Invalid number of data points ({last_n}) specified")
    for d, n in zip(dims[:-1], sizes[:-1]):
        x = _resize(x, d, n, op)
    x = _resize(x, dims[-1], last_n // 2 + 1, op)
    total = last_n
    for n in sizes[:-1]:
        total *= n
    scale = _scale(norm, total, forward_norm, op)
    owned = False       # x may still share memory with the input; each result is ours
    for d in dims[:-1]:
        x = _k._fft_c2c(x, d, False, 1.0, owned)
        owned = True
    return _k._fft_c2r(x, dims[-1], last_n, scale)


def rfft(input, n: Optional[int] = None, dim: int = -1, norm: Optional[str] = None, *,
         out=None):
    """Fourier transform of a real signal: the ``n // 2 + 1`` non-redundant terms."""
    t = _tensor(input, "fft_rfft")
    d = _wrap(dim, t.dim(), "fft_rfft")
    return _out(_rfftn(t, [d], [t.shape[d] if n is None else n], norm, "fft_rfft"), out,
                "fft_rfft")


def irfft(input, n: Optional[int] = None, dim: int = -1, norm: Optional[str] = None, *,
          out=None):
    """Inverse of :func:`rfft`: a real signal of length ``n`` (default
    ``2 * (input.size(dim) - 1)``) from the one-sided spectrum."""
    t = _tensor(input, "fft_irfft")
    d = _wrap(dim, t.dim(), "fft_irfft")
    last = 2 * (t.shape[d] - 1) if n is None else n
    return _out(_irfftn(t, [d], [last], last, norm, "fft_irfft"), out, "fft_irfft")


def rfftn(input, s: Optional[Sequence[int]] = None, dim: Optional[Sequence[int]] = None,
          norm: Optional[str] = None, *, out=None):
    """N-dimensional FFT of a real input; the last transformed dim is one-sided."""
    t = _tensor(input, "fft_rfftn")
    dims, sizes = _dims(t, s, dim, "fft_rfftn")
    return _out(_rfftn(t, dims, sizes, norm, "fft_rfftn"), out, "fft_rfftn")


def irfftn(input, s: Optional[Sequence[int]] = None, dim: Optional[Sequence[int]] = None,
           norm: Optional[str] = None, *, out=None):
    """Inverse of :func:`rfftn`."""
    t = _tensor(input, "fft_irfftn")
    given = s is not None
    dims, sizes = _dims(t, s, dim, "fft_irfftn")
    last = sizes[-1] if given else 2 * (t.shape[dims[-1]] - 1) if dims else 0
    return _out(_irfftn(t, dims, sizes, last, norm, "fft_irfftn"), out, "fft_irfftn")


def rfft2(input, s: Optional[Sequence[int]] = None, dim: Sequence[int] = (-2, -1),
          norm: Optional[str] = None, *, out=None):
    """Two-dimensional FFT of a real input (see :func:`rfftn`)."""
    return rfftn(input, s, dim, norm, out=out)


def irfft2(input, s: Optional[Sequence[int]] = None, dim: Sequence[int] = (-2, -1),
           norm: Optional[str] = None, *, out=None):
    """Inverse of :func:`rfft2`."""
    return irfftn(input, s, dim, norm, out=out)


# ---------------------------------------------------------------------------
# Hermitian input (hfft) and its inverse (ihfft): the real transforms mirrored

def hfft(input, n: Optional[int] = None, dim: int = -1, norm: Optional[str] = None, *,
         out=None):
    """FFT of a Hermitian-symmetric signal given by its one-sided half: a real output of
    length ``n`` (default ``2 * (input.size(dim) - 1)``)."""
    t = _tensor(input, "fft_hfft")
    d = _wrap(dim, t.dim(), "fft_hfft")
    last = 2 * (t.shape[d] - 1) if n is None else n
    x = _as_complex(t).conj()
    return _out(_irfftn(x, [d], [last], last, norm, "fft_hfft", forward_norm=True), out,
                "fft_hfft")


def ihfft(input, n: Optional[int] = None, dim: int = -1, norm: Optional[str] = None, *,
          out=None):
    """Inverse of :func:`hfft`: the one-sided inverse FFT of a real signal."""
    t = _tensor(input, "fft_ihfft")
    d = _wrap(dim, t.dim(), "fft_ihfft")
    n = t.shape[d] if n is None else n
    x = _as_real(t, "fft_ihfft")
    x = _resize(x, d, n, "fft_ihfft")
    r = _k._fft_r2c(x, d, _scale(norm, n, False, "fft_ihfft")).conj()
    return _out(r, out, "fft_ihfft")


def hfftn(input, s: Optional[Sequence[int]] = None, dim: Optional[Sequence[int]] = None,
          norm: Optional[str] = None, *, out=None):
    """N-dimensional :func:`hfft`: the last dim is the one-sided Hermitian one."""
    t = _tensor(input, "fft_hfftn")
    given = s is not None
    dims, sizes = _dims(t, s, dim, "fft_hfftn")
    if not dims:
        raise RuntimeError("fft_hfftn must transform at least one axis")
    last = sizes[-1] if given else 2 * (t.shape[dims[-1]] - 1)
    x = _as_complex(t).conj()
    return _out(_irfftn(x, dims, sizes, last, norm, "fft_hfftn", forward_norm=True), out,
                "fft_hfftn")


def ihfftn(input, s: Optional[Sequence[int]] = None, dim: Optional[Sequence[int]] = None,
           norm: Optional[str] = None, *, out=None):
    """N-dimensional :func:`ihfft`."""
    t = _tensor(input, "fft_ihfftn")
    dims, sizes = _dims(t, s, dim, "fft_ihfftn")
    if not dims:
        raise RuntimeError("fft_ihfftn must transform at least one axis")
    x = _as_real(t, "fft_ihfftn")
    for d, n in zip(dims, sizes):
        x = _resize(x, d, n, "fft_ihfftn")
    total = 1
    for n in sizes:
        total *= n
    x = _k._fft_r2c(x, dims[-1], _scale(norm, total, False, "fft_ihfftn")).conj()
    for d in dims[:-1]:
        x = _k._fft_c2c(x, d, False, 1.0, True)
    return _out(x, out, "fft_ihfftn")


def hfft2(input, s: Optional[Sequence[int]] = None, dim: Sequence[int] = (-2, -1),
          norm: Optional[str] = None, *, out=None):
    """Two-dimensional :func:`hfftn`."""
    return hfftn(input, s, dim, norm, out=out)


def ihfft2(input, s: Optional[Sequence[int]] = None, dim: Sequence[int] = (-2, -1),
           norm: Optional[str] = None, *, out=None):
    """Two-dimensional :func:`ihfftn`."""
    return ihfftn(input, s, dim, norm, out=out)


# ---------------------------------------------------------------------------
# frequencies and shifts

def fftfreq(n: int, d: float = 1.0, *, out=None, dtype=None, layout=None, device=None,
            requires_grad: bool = False):
    """Sample frequencies of a length-``n`` FFT: ``[0, 1, ..., -1] / (d * n)``."""
    E = _ember()
    r = E.arange(n, dtype=dtype, device=device)
    r = E.where(r < (n + 1) // 2, r, r - n) if n > 0 else r
    r = E.mul(r, 1.0 / (n * d)) if n > 0 else r
    if dtype is None and not r.is_floating_point():
        r = r.to(_core._get_default_dtype())
    r = _out(r, out, "fft_fftfreq")
    return r.requires_grad_(True) if requires_grad else r


def rfftfreq(n: int, d: float = 1.0, *, out=None, dtype=None, layout=None, device=None,
             requires_grad: bool = False):
    """Sample frequencies of :func:`rfft` of length ``n``: ``[0, ..., n // 2] / (d * n)``."""
    E = _ember()
    r = E.arange(n // 2 + 1, dtype=dtype, device=device)
    r = E.mul(r, 1.0 / (n * d))
    if dtype is not None:
        r = r.to(dtype)
    r = _out(r, out, "fft_rfftfreq")
    return r.requires_grad_(True) if requires_grad else r


def _shift(t, dim, sign, op):
    t = _tensor(t, op)
    if dim is None:
        dims = list(range(t.dim()))
    else:
        dims = [dim] if isinstance(dim, int) else list(dim)
        dims = [_wrap(d, t.dim(), op) for d in dims]
    shifts = [(t.shape[d] // 2) if sign > 0 else -(t.shape[d] // 2) for d in dims]
    if not dims:
        return t.clone()
    return _ember().roll(t, shifts, dims)


def fftshift(input, dim=None):
    """Move the zero-frequency term to the centre (a roll by ``size // 2``)."""
    return _shift(input, dim, 1, "fftshift")


def ifftshift(input, dim=None):
    """Inverse of :func:`fftshift`."""
    return _shift(input, dim, -1, "ifftshift")
