"""Ops composed from other public ops.

Each is declared in ``ember/_ops.py`` like a native op; autograd flows through the
ops it is built from, so none needs a backward formula of its own, except logaddexp2
and nextafter, whose one-pass C kernels record their own node on CPU tensors (the
composites remain for other devices and Python modes).
"""
from __future__ import annotations

import builtins
import math

from ember._autocast import autocast_entry as _autocast_entry
from ember._C import core
from ember._C import creation as _cr
from ember._C import elementwise as _ew
from ember._C import index as _ix
from ember._C import matmul as _la
from ember._C import reduce as _red
from ember._check import _real_only

TensorBase = core.TensorBase


def _tensor_arg(x, op: str, arg: str = "input"):
    if not isinstance(x, TensorBase):
        raise TypeError(f"{op}(): argument '{arg}' (position 1) must be Tensor, "
                        f"not {type(x).__name__}")
    return x


def _finish(r, out, op: str, inputs=(), exact=False):
    """``r``, or ``r`` written into ``out=`` through the core's out= checks (shape,
    dtype castable, or equal with ``exact`` as torch demands for some ops, overlap with
    ``inputs``)."""
    if out is None:
        return r
    if core.is_grad_enabled() and any(getattr(t, "requires_grad", False) for t in inputs):
        raise RuntimeError(f"{op}(): functions with out=... arguments don't support automatic "
                           f"differentiation, but one of the arguments requires grad.")
    return core._write_out(out, r.detach(), tuple(inputs), op, exact)


def _value_for(value, *tensors):
    # torch casts ``value`` to the tensors' result type: it takes no part in promotion
    dt = tensors[0].dtype
    for t in tensors[1:]:
        dt = core.promote_types(dt, t.dtype)
    return value if dt.is_floating_point or isinstance(value, TensorBase) else int(value)


def addcmul(input, tensor1, tensor2, *, value=1, out=None):
    """``input + value * tensor1 * tensor2``, elementwise with broadcasting."""
    _tensor_arg(input, "addcmul")
    if all(getattr(t, "dtype", None) == core.bool_ for t in (input, tensor1, tensor2)):
        raise NotImplementedError("\"addcmul_cpu_out\" not implemented for 'Bool'")
    r = _ew._addc(False, input, tensor1, tensor2, value, out)
    if r is not NotImplemented:
        return r
    value = _value_for(value, input, tensor1, tensor2)
    r = _ew.add(input, _ew.mul(_ew.mul(tensor1, tensor2), value))
    return _finish(r, out, "addcmul", (input, tensor1, tensor2))


def addcdiv(input, tensor1, tensor2, *, value=1, out=None):
    """``input + value * tensor1 / tensor2``, elementwise with broadcasting."""
    _tensor_arg(input, "addcdiv")
    if not (tensor1.dtype.is_floating_point or tensor1.dtype.is_complex) and not (
            tensor2.dtype.is_floating_point or tensor2.dtype.is_complex):
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a "
                           "future release addcdiv will perform a true division of tensor1 and "
                           "tensor2. The historic addcdiv behavior can be implemented as "
                           "(input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) "
                           "for integer inputs and as (input + value * tensor1 / tensor2) for "
                           "float inputs. The future addcdiv behavior is just the latter "
                           "implementation: (input + value * tensor1 / tensor2), for all dtypes.")
    r = _ew._addc(True, input, tensor1, tensor2, value, out)
    if r is not NotImplemented:
        return r
    r = _ew.add(input, _ew.mul(_ew.div(tensor1, tensor2), value))
    return _finish(r, out, "addcdiv", (input, tensor1, tensor2))


def deg2rad(input, *, out=None):
    """Degrees to radians."""
    if _tensor_arg(input, "deg2rad").is_complex():
        raise RuntimeError("deg2rad is not supported for complex tensors.")
    r = _ew.mul(input, math.pi / 180.0)
    return _finish(r, out, "deg2rad", (input,))


def rad2deg(input, *, out=None):
    """Radians to degrees."""
    if _tensor_arg(input, "rad2deg").is_complex():
        raise RuntimeError("rad2deg is not supported for complex tensors.")
    r = _ew.mul(input, 180.0 / math.pi)
    return _finish(r, out, "rad2deg", (input,))


def sinc(input, *, out=None):
    """The normalised sinc, ``sin(pi x) / (pi x)``, with ``sinc(0) = 1``."""
    x = _tensor_arg(input, "sinc")
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        x = x.to(core.float32)
    px = _ew.mul(x, math.pi)
    zero = _ew.eq(x, 0)
    # the division by zero is masked out; its operand is replaced so no nan reaches grad
    safe = _ew.where(zero, 1.0, px)
    return _finish(_ew.where(zero, 1.0, _ew.div(_ew.sin(safe), safe)), out, "sinc", (input,))


def logit(input, eps=None, *, out=None):
    """``log(p / (1 - p))``, with ``p`` clamped to ``[eps, 1 - eps]`` when eps is given."""
    x = _tensor_arg(input, "logit")
    _real_only(x, "logit_cpu")
    if eps is not None:
        x = _ew.clamp(x, eps, 1.0 - eps)
    return _finish(_ew.log(_ew.div(x, _ew.rsub(x, 1))), out, "logit", (input,))


def ldexp(input, other, *, out=None):
    """``input * 2 ** other``."""
    r = _ew.mul(_tensor_arg(input, "ldexp"), _ew.exp2(other))
    return _finish(r, out, "ldexp", (input, other), exact=True)


def logaddexp2(input, other, *, out=None):
    """``log2(2 ** input + 2 ** other)`` without overflow."""
    _tensor_arg(input, "logaddexp2")
    r = _ew._kernel_binary("logaddexp2", input, other, out)
    if r is not NotImplemented:
        return r
    m = _ew.maximum(input, other)
    d = _ew.abs(_ew.sub(input, other))
    r = _ew.add(m, _ew.div(_ew.log1p(_ew.exp2(_ew.neg(d))), math.log(2.0)))
    # equal infinities: the difference is nan, the answer is the infinity itself
    same_inf = _ew.logical_and(_ew.isinf(m), _ew.eq(input, other))
    return _finish(_ew.where(same_inf, m, r), out, "logaddexp2", (input, other))


def heaviside(input, values, *, out=None):
    """The Heaviside step: 0 below zero, 1 above, ``values`` at zero."""
    _tensor_arg(input, "heaviside")
    if isinstance(values, TensorBase) and values.dtype != input.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes")
    step = _ew.gt(input, 0).to(input.dtype)
    r = _ew.where(_ew.eq(input, 0), values, step)
    return _finish(r, out, "heaviside", (input, values), exact=True)


def isposinf(input, *, out=None):
    """True where ``input`` is +inf."""
    if _tensor_arg(input, "isposinf").is_complex():
        raise RuntimeError("isposinf does not support complex inputs.")
    return _finish(_ew.eq(input, math.inf), out, "isposinf", (input,), exact=True)


def isneginf(input, *, out=None):
    """True where ``input`` is -inf."""
    if _tensor_arg(input, "isneginf").is_complex():
        raise RuntimeError("isneginf does not support complex inputs.")
    return _finish(_ew.eq(input, -math.inf), out, "isneginf", (input,), exact=True)


def nan_to_num(input, nan=0.0, posinf=None, neginf=None, *, out=None):
    """Replace nan, +inf and -inf by ``nan``, ``posinf`` and ``neginf`` (by default the
    dtype's largest and lowest finite values)."""
    x = _tensor_arg(input, "nan_to_num")
    if not x.dtype.is_floating_point:
        return _finish(x.clone(), out, "nan_to_num", (input,), exact=True)
    from ember._dtype_info import finfo

    fi = finfo(x.dtype)
    nan = 0.0 if nan is None else nan
    posinf = fi.max if posinf is None else posinf
    neginf = fi.min if neginf is None else neginf
    r = _ew._nan_to_num(x, nan, posinf, neginf)     # one kernel pass where it can run
    if r is None:
        r = _ew.where(_ew.isnan(x), nan, x)
        r = _ew.where(isposinf(x), posinf, r)
        r = _ew.where(isneginf(x), neginf, r)
    return _finish(r, out, "nan_to_num", (input,), exact=True)


def nan_to_num_(input, nan=0.0, posinf=None, neginf=None):
    """In-place :func:`nan_to_num`: one pass over a floating tensor's own memory."""
    x = _tensor_arg(input, "nan_to_num_")
    if x.dtype.is_floating_point:
        from ember._dtype_info import finfo

        fi = finfo(x.dtype)
        r = _ew._nan_to_num(x, 0.0 if nan is None else nan,
                            fi.max if posinf is None else posinf,
                            fi.min if neginf is None else neginf, True)
        if r is not None:
            return r
    return x.copy_(nan_to_num(x, nan, posinf, neginf))


def fill(input, value):
    """A new tensor like ``input`` filled with ``value`` (a number or a 0-dim tensor)."""
    _tensor_arg(input, "fill")
    if isinstance(value, TensorBase) and value.dim() != 0:
        raise RuntimeError(f"fill only supports 0-dimension value tensor but got tensor with "
                           f"{value.dim()} dimensions.")
    return _ew.add(core.zeros_like(input), value).to(input.dtype) \
        if isinstance(value, TensorBase) else core.full_like(input, value)


@_autocast_entry("trace")
def trace(input):
    """The sum of the main diagonal of a matrix."""
    _tensor_arg(input, "trace")
    if input.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.dim()}")
    return _red.sum(input.diagonal())


def inner(input, other, *, out=None):
    """The inner product over the last dimension (a product when either is 0-dim)."""
    _tensor_arg(input, "inner")
    _tensor_arg(other, "inner", "other")
    if input.dim() == 0 or other.dim() == 0:
        return _finish(_ew.mul(input, other), out, "inner", (input, other), exact=True)
    k = input.shape[-1]
    if other.shape[-1] != k:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but "
                           f"got shapes {list(input.shape)} and {list(other.shape)}")
    r = _la.matmul(input.reshape(-1, k), other.reshape(-1, k).t())
    r = r.reshape(*input.shape[:-1], *other.shape[:-1])
    return _finish(r, out, "inner", (input, other), exact=True)


def kron(input, other, *, out=None):
    """The Kronecker product."""
    _tensor_arg(input, "kron")
    _tensor_arg(other, "kron", "other")
    nd = max(input.dim(), other.dim())
    a = input.reshape(*([1] * (nd - input.dim())), *input.shape)
    b = other.reshape(*([1] * (nd - other.dim())), *other.shape)
    ai, bi = [], []
    for sa, sb in zip(a.shape, b.shape):
        ai += [sa, 1]
        bi += [1, sb]
    r = _ew.mul(a.reshape(*ai), b.reshape(*bi))
    r = r.reshape(*[sa * sb for sa, sb in zip(a.shape, b.shape)])
    return _finish(r, out, "kron", (input, other))


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The n-th forward difference along ``dim`` (``ne`` for bool, as torch)."""
    _tensor_arg(input, "diff")
    if input.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    parts = [t for t in (prepend, input, append) if t is not None]
    x = _ix.cat(parts, dim) if len(parts) > 1 else input
    step = _ew.ne if x.dtype is core.bool_ else _ew.sub
    for _ in range(n):
        length = x.size(dim)
        if length == 0:
            break
        x = step(x.narrow(dim, 1, length - 1), x.narrow(dim, 0, length - 1))
    return x


# -- statistics ---------------------------------------------------------------

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(input, q, dim, keepdim, interpolation, out, op, ignore_nan):
    _tensor_arg(input, op)
    if not input.dtype.is_floating_point or input.dtype.itemsize < 4:
        raise RuntimeError(f"{op}() input tensor must be either float or double dtype")
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"{op}() interpolation must be one of linear, lower, higher, "
                         f"midpoint or nearest. Got {interpolation}")
    if input.numel() == 0:
        raise RuntimeError(f"{op}() input tensor must be non-empty")
    scalar_q = not isinstance(q, TensorBase) or q.dim() == 0
    qs = q.reshape(-1).tolist() if isinstance(q, TensorBase) else [q]
    if isinstance(q, TensorBase) and q.dim() > 1:
        raise RuntimeError(f"{op}() q must be a scalar or 1D tensor")
    for v in qs:
        if not 0 <= v <= 1:
            raise RuntimeError(f"{op}() q must be in the range [0, 1] but got {v}")
    qv = core.tensor(qs, dtype=input.dtype)
    if dim is None:
        x, d = input.reshape(-1), 0
    else:
        nd = max(input.dim(), 1)
        if not -nd <= dim < nd:
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[{-nd}, {nd - 1}], but got {dim})")
        x, d = (input.reshape(1) if input.dim() == 0 else input), dim % nd
    x = x.movedim(d, -1)
    n = x.shape[-1]
    s = _red.sort(x, -1)[0]                          # nan sorts last
    nan = _ew.isnan(s)
    if ignore_nan:
        k = _red.sum(_ew.logical_not(nan), -1, keepdim=True)
        rank = _ew.mul(qv, _ew.clamp_min(_ew.sub(k, 1), 0))
    else:
        rank = _ew.mul(qv, n - 1)
        rank = _ew.where(_red.any(nan, -1, keepdim=True), float(n - 1), rank)
    if interpolation == "nearest":
        rank = _ew.round(rank)
    lo = _ew.floor(rank).to(core.int64)
    hi = _ew.clamp_max(_ew.ceil(rank), n - 1).to(core.int64)
    vlo = _ix.gather(s, -1, lo)
    vhi = _ix.gather(s, -1, hi)
    if interpolation in ("lower", "nearest"):
        r = vlo
    elif interpolation == "higher":
        r = vhi
    else:
        w = 0.5 if interpolation == "midpoint" else _ew.sub(rank, lo)
        r = _ew.add(vlo, _ew.mul(_ew.sub(vhi, vlo), w))
    if ignore_nan:
        r = _ew.where(_ew.eq(k, 0), float("nan"), r)
    r = r.movedim(-1, 0)                             # q's dim first, as torch
    if keepdim:
        if dim is None:
            r = r.reshape(r.shape[0], *([1] * input.dim()))
        elif input.dim() > 0:
            r = r.unsqueeze(d + 1)
    if scalar_q:
        r = r.squeeze(0)
    return _finish(r, out, op, (input,), exact=True)


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """The q-th quantiles of ``input`` along ``dim`` (all elements when None); a nan in
    a reduced slice makes its quantiles nan."""
    return _quantile(input, q, dim, keepdim, interpolation, out, "quantile", False)


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """:func:`quantile` ignoring nan (nan only where a slice holds nothing else)."""
    return _quantile(input, q, dim, keepdim, interpolation, out, "nanquantile", True)


def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the variables in the rows of ``input`` (observations in
    columns), with optional frequency and analytic weights."""
    _tensor_arg(input, "cov")
    if input.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an "
                         f"input with {input.dim()} dimensions")
    x = input.reshape(1, -1) if input.dim() < 2 else input
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        x = x.to(core._get_default_dtype())
    n_obs = x.shape[1]
    w = None
    for name, wt in (("fweights", fweights), ("aweights", aweights)):
        if wt is None:
            continue
        if wt.dim() > 1:
            raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got "
                             f"{name} with {wt.dim()} dimensions")
        if wt.numel() != n_obs:
            raise RuntimeError(f"cov(): expected {name} to have the same numel as there are "
                             f"observations in the input but got {wt.numel()} != {n_obs}")
        if name == "fweights" and wt.dtype.is_floating_point:
            raise RuntimeError("cov(): expected fweights to have integral dtype but got "
                             f"fweights with {wt.dtype} dtype")
        if name == "aweights" and not wt.dtype.is_floating_point:
            raise RuntimeError("cov(): expected aweights to have floating point dtype but got "
                             f"aweights with {wt.dtype} dtype")
        if bool(_red.any(_ew.lt(wt, 0))):
            raise RuntimeError(f"cov(): {name} cannot be negative")
        w = wt if w is None else _ew.mul(w, wt)
    if w is None:
        avg = _red.mean(x, 1)
        w_sum = float(n_obs)
        norm = w_sum - correction
    else:
        w_sum = _red.sum(w)
        avg = _ew.div(_red.sum(_ew.mul(x, w), 1), w_sum)
        if correction == 0:
            norm = w_sum
        elif aweights is None:
            norm = _ew.sub(w_sum, correction)
        else:
            norm = _ew.sub(w_sum, _ew.div(_ew.mul(_red.sum(_ew.mul(w, aweights)),
                                                  correction), w_sum))
    if (float(norm) if isinstance(norm, TensorBase) else norm) <= 0:
        import warnings
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations.", UserWarning, stacklevel=2)
        norm = _ew.clamp_min(norm, 0) if isinstance(norm, TensorBase) else 0.0
    xm = _ew.sub(x, avg.unsqueeze(1))
    xw = xm if w is None else _ew.mul(xm, w)
    c = _ew.div(_la.matmul(xw, xm.t().conj() if xm.is_complex() else xm.t()), norm)
    return c.squeeze() if input.dim() < 2 else c


def corrcoef(input):
    """The Pearson correlation coefficients of the variables in the rows of ``input``."""
    c = cov(input)
    if c.dim() == 0:
        return _ew.div(c, c)
    d = c.diagonal()
    std = _ew.sqrt(d.real if d.is_complex() else d)
    c = _ew.div(_ew.div(c, std.unsqueeze(1)), std.unsqueeze(0))
    if c.is_complex():
        from ember._C import cplx
        return cplx.complex(_ew.clamp(c.real, -1, 1), _ew.clamp(c.imag, -1, 1))
    return _ew.clamp(c, -1, 1)


# -- structure ----------------------------------------------------------------

def _wrap(dim: int, nd: int) -> int:
    if not -nd <= dim < nd:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, "
                         f"{nd - 1}], but got {dim})")
    return dim % nd


def rot90(input, k=1, dims=(0, 1)):
    """Rotate by 90 degrees ``k`` times in the plane of ``dims`` (from the first
    towards the second)."""
    _tensor_arg(input, "rot90")
    dims = list(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.dim() < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.dim()}")
    d0, d1 = _wrap(dims[0], input.dim()), _wrap(dims[1], input.dim())
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and "
                           f"dim1 = {d1}")
    k %= 4
    if k == 1:
        return _ix.flip(input, [d1]).transpose(d0, d1)
    if k == 2:
        return _ix.flip(input, [d0, d1])
    if k == 3:
        return _ix.flip(input, [d0]).transpose(d0, d1)
    return input.clone()


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of the 1-D ``x``: columns are powers of ``x``."""
    _tensor_arg(x, "vander", "x")
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    dt = x.dtype if x.dtype.is_floating_point else core.int64
    xs = x.to(dt)
    if n == 0:
        return core.empty(x.shape[0], 0, dtype=dt)
    cols = [core.ones(x.shape[0], 1, dtype=dt)]
    if n > 1:
        cols.append(xs.unsqueeze(1).expand(x.shape[0], n - 1))
    r = _red.cumprod(_ix.cat(cols, 1), 1)
    return r if increasing else _ix.flip(r, [1])


def tensordot(a, b, dims=2, out=None):
    """Contract ``dims`` (a count of trailing/leading dims, or two lists) of a and b."""
    _tensor_arg(a, "tensordot", "a")
    _tensor_arg(b, "tensordot", "b")
    if isinstance(dims, TensorBase):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        da, db = list(range(a.dim() - dims, a.dim())), list(range(dims))
    else:
        da, db = dims
        da = [da] if isinstance(da, int) else list(da)
        db = [db] if isinstance(db, int) else list(db)
    if len(da) != len(db):
        raise RuntimeError("both dimension lists should have same length")
    da = [_wrap(d, a.dim()) for d in da]
    db = [_wrap(d, b.dim()) for d in db]
    for x, y in zip(da, db):
        if a.shape[x] != b.shape[y]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size "
                               f"{a.shape[x]} in dim {x - a.dim() if isinstance(dims, int) else x}"
                               f" and second has size {b.shape[y]} in dim {y}")
    ka = [d for d in range(a.dim()) if d not in da]
    kb = [d for d in range(b.dim()) if d not in db]
    m = 1
    for d in ka:
        m *= a.shape[d]
    k = 1
    for d in da:
        k *= a.shape[d]
    am = a.permute(*ka, *da).reshape(m, k)
    bm = b.permute(*db, *kb).reshape(k, -1)
    r = _la.matmul(am, bm).reshape(*[a.shape[d] for d in ka], *[b.shape[d] for d in kb])
    return _finish(r, out, "tensordot", (a, b), exact=True)


def block_diag(*tensors):
    """The block-diagonal matrix of the given 0-, 1- or 2-D tensors."""
    mats = []
    for i, t in enumerate(tensors):
        _tensor_arg(t, "block_diag", f"tensors[{i}]")
        if t.dim() > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer "
                               f"dimensions. Input {i} has {t.dim()} dimensions")
        mats.append(t.reshape(1, -1) if t.dim() < 2 else t)
    if not mats:
        return core.empty(1, 0)
    dt = mats[0].dtype
    for t in mats[1:]:
        dt = core.promote_types(dt, t.dtype)
    cols = sum(t.shape[1] for t in mats)
    rows, c0 = [], 0
    for t in mats:
        h, w = t.shape
        row = [core.zeros(h, c0, dtype=dt), t.to(dt), core.zeros(h, cols - c0 - w, dtype=dt)]
        rows.append(_ix.cat(row, 1))
        c0 += w
    return _ix.cat(rows, 0)


def cartesian_prod(*tensors):
    """The cartesian product of 1-D tensors, one row per combination."""
    for i, t in enumerate(tensors):
        _tensor_arg(t, "cartesian_prod", f"tensors[{i}]")
        if t.dim() != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = _ix.meshgrid(*tensors, indexing="ij")
    return _ix.stack([g.reshape(-1) for g in grids], 1)


def combinations(input, r=2, with_replacement=False):
    """The length-``r`` combinations of the elements of the 1-D ``input``, one per row."""
    import itertools

    _tensor_arg(input, "combinations")
    if input.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return core.empty(0, dtype=input.dtype)
    pick = itertools.combinations_with_replacement if with_replacement \
        else itertools.combinations
    idx = [i for c in pick(range(input.shape[0]), r) for i in c]
    sel = _ix.index_select(input, 0, core.tensor(idx, dtype=core.int64))
    return sel.reshape(-1, r)


@_autocast_entry("cdist")
def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """The p-norm distances between each pair of rows of x1 (..., P, M) and x2 (..., R, M)."""
    _tensor_arg(x1, "cdist", "x1")
    _tensor_arg(x2, "cdist", "x2")
    if x1.dim() < 2 or x2.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    if not x1.dtype.is_floating_point:
        raise RuntimeError(f"cdist only supports floating-point dtypes, X1 got: "
                           f"{str(x1.dtype).split('.')[-1].capitalize()}")
    if p < 0:
        raise RuntimeError(f"cdist only supports non-negative p values, got {p}")
    d = _ew.sub(x1.unsqueeze(-2), x2.unsqueeze(-3))
    return _red.norm(d, p, -1)


def dist(input, other, p=2):
    """The p-norm of ``input - other``."""
    _tensor_arg(input, "dist")
    return _red.norm(_ew.sub(input, other), p)


def renorm(input, p, dim, maxnorm):
    """Rescale each slice along ``dim`` whose p-norm exceeds ``maxnorm`` to that norm."""
    _tensor_arg(input, "renorm")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if input.dim() <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.dim()} "
                           f"dimensions")
    d = _wrap(dim, input.dim())
    others = [i for i in range(input.dim()) if i != d]
    norms = _red.norm(input, p, others, keepdim=True)
    factor = _ew.where(_ew.gt(norms, maxnorm), _ew.div(maxnorm, _ew.add(norms, 1e-7)), 1.0)
    return _ew.mul(input, factor)


def diagflat(input, offset=0):
    """A 2-D tensor with the flattened ``input`` on its ``offset`` diagonal."""
    return _ix.diag(_tensor_arg(input, "diagflat").reshape(-1), offset)


def _scatter_into(input, src, view, op):
    """``input`` with the elements of ``view(input)`` replaced by ``src``: the view is
    taken of the element positions, so the result is one differentiable index_put."""
    _tensor_arg(input, op)
    _tensor_arg(src, op, "src")
    pos = view(_cr.arange(input.numel(), dtype=core.int64).reshape(input.shape))
    if tuple(pos.shape) != tuple(src.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size "
                           f"= {list(src.shape)}, slice size = {list(pos.shape)}")
    flat = _ix.index_put(input.reshape(-1), (pos.reshape(-1),), src.reshape(-1).to(input.dtype))
    return flat.reshape(input.shape)


def select_scatter(input, src, dim, index):
    """``input`` with ``input.select(dim, index)`` replaced by ``src`` (out of place)."""
    return _scatter_into(input, src, lambda r: r.select(dim, index), "select_scatter")


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """``input`` with the slice ``start:end:step`` of ``dim`` replaced by ``src``."""
    def view(r):
        d = _wrap(dim, r.dim())
        return r[(slice(None),) * d + (slice(start, end, step),)]
    return _scatter_into(input, src, view, "slice_scatter")


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """``input`` with the diagonal ``(offset, dim1, dim2)`` replaced by ``src``."""
    return _scatter_into(input, src, lambda r: r.diagonal(offset, dim1, dim2),
                         "diagonal_scatter")


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """``input`` with the strided view ``(size, stride, storage_offset)`` replaced by
    ``src``."""
    return _scatter_into(input, src, lambda r: r.as_strided(size, stride, storage_offset),
                         "as_strided_scatter")


def unravel_index(indices, shape):
    """The coordinates of flat ``indices`` in a tensor of ``shape``, one tensor per dim."""
    if not isinstance(indices, TensorBase):
        indices = core.tensor(indices)
    if indices.dtype.is_floating_point or indices.dtype is core.bool_:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    shape = [shape] if isinstance(shape, int) else list(shape)
    for s in shape:
        if s < 0:
            raise ValueError("'shape' cannot have negative values, but got "
                             f"{tuple(shape)}")
    idx = indices.to(core.int64)
    coords = []
    for s in reversed(shape):
        coords.append(_ew.remainder(idx, s) if s else core.zeros_like(idx))
        idx = _ew.floor_divide(idx, s) if s else idx
    return tuple(reversed(coords))


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoidal-rule integral of ``y`` along ``dim`` (samples at ``x``, or spaced
    ``dx`` apart, 1 by default)."""
    _tensor_arg(y, "trapezoid", "y")
    d = _wrap(dim, max(y.dim(), 1))
    n = y.shape[d]
    if n == 0:
        return _red.sum(y, d)
    pair = _ew.add(y.narrow(d, 1, n - 1), y.narrow(d, 0, n - 1))
    if x is None:
        return _ew.mul(_red.sum(pair, d), (1.0 if dx is None else dx) / 2.0)
    if not isinstance(x, TensorBase):
        return trapezoid(y, dx=x, dim=dim)
    dxs = diff(x, dim=-1 if x.dim() == 1 else dim)
    if x.dim() == 1:
        dxs = dxs.reshape(*[n - 1 if i == d else 1 for i in range(y.dim())])
    return _ew.div(_red.sum(_ew.mul(pair, dxs), d), 2.0)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoidal-rule integral of ``y`` along ``dim`` (one element fewer)."""
    _tensor_arg(y, "cumulative_trapezoid", "y")
    d = _wrap(dim, max(y.dim(), 1))
    n = y.shape[d]
    if n == 0:
        return y.clone()
    pair = _ew.add(y.narrow(d, 1, n - 1), y.narrow(d, 0, n - 1))
    if x is None or not isinstance(x, TensorBase):
        step = (x if x is not None else (1.0 if dx is None else dx)) / 2.0
        return _red.cumsum(_ew.mul(pair, step), d)
    dxs = diff(x, dim=-1 if x.dim() == 1 else dim)
    if x.dim() == 1:
        dxs = dxs.reshape(*[n - 1 if i == d else 1 for i in range(y.dim())])
    return _red.cumsum(_ew.div(_ew.mul(pair, dxs), 2.0), d)


# -- windows ------------------------------------------------------------------

def _window(n, periodic, dtype, name, layout=None, device=None, requires_grad=False):
    dt = core._get_default_dtype() if dtype is None else dtype
    if not dt.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dt}")
    if n < 0:
        raise RuntimeError(f"{name} requires non-negative window length, got "
                           f"window_length={n}")
    if n <= 1:
        return core.ones(n, dtype=dt, device=device, requires_grad=requires_grad), None
    m = n + 1 if periodic else n
    return _cr.arange(m, dtype=dt, device=device)[:n], m - 1


def _cosine_window(n, periodic, dtype, name, coeffs, **kw):
    t, denom = _window(n, periodic, dtype, name, **kw)
    if denom is None:
        return t
    r = core.full_like(t, coeffs[0])
    for k, a in enumerate(coeffs[1:], 1):
        r = _ew.add(r, _ew.mul(_ew.cos(_ew.mul(t, 2.0 * math.pi * k / denom)), a))
    return r.requires_grad_(kw.get("requires_grad", False))


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                requires_grad=False):
    """The Hann window, ``0.5 - 0.5 cos(2 pi n / (N - 1))``."""
    return _cosine_window(window_length, periodic, dtype, "hann_window", (0.5, -0.5),
                          device=device, requires_grad=requires_grad)


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None,
                   layout=None, device=None, requires_grad=False):
    """The Hamming window, ``alpha - beta cos(2 pi n / (N - 1))``."""
    return _cosine_window(window_length, periodic, dtype, "hamming_window", (alpha, -beta),
                          device=device, requires_grad=requires_grad)


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    requires_grad=False):
    """The Blackman window."""
    return _cosine_window(window_length, periodic, dtype, "blackman_window",
                          (0.42, -0.5, 0.08), device=device, requires_grad=requires_grad)


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    requires_grad=False):
    """The Bartlett (triangular) window, ``1 - |2n / (N - 1) - 1|``."""
    t, denom = _window(window_length, periodic, dtype, "bartlett_window", device=device,
                       requires_grad=requires_grad)
    if denom is None:
        return t
    r = _ew.rsub(_ew.abs(_ew.sub(_ew.mul(t, 2.0 / denom), 1.0)), 1.0)
    return r.requires_grad_(requires_grad)



def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None,
                  device=None, requires_grad=False):
    """The Kaiser window, ``I0(beta sqrt(1 - ((n - N/2) / (N/2))^2)) / I0(beta)``."""
    from ember._C import special as _sp

    t, denom = _window(window_length, periodic, dtype, "kaiser_window", device=device,
                       requires_grad=requires_grad)
    if denom is None:
        return t
    half = denom / 2.0
    u = _ew.div(_ew.sub(t, half), half)
    arg = _ew.mul(_ew.sqrt(_ew.rsub(_ew.mul(u, u), 1.0)), float(beta))
    r = _ew.div(_sp.i0(arg), _sp.i0(core.full((), float(beta), dtype=t.dtype)))
    return r.requires_grad_(requires_grad)

# -- creation -----------------------------------------------------------------

def scalar_tensor(s, *, dtype=None, layout=None, device=None, pin_memory=False,
                  requires_grad=False):
    """A 0-dim tensor holding the number ``s`` (default dtype unless given)."""
    return core.full((), s, dtype=core._get_default_dtype() if dtype is None else dtype,
                     device=device, requires_grad=requires_grad)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """``obj`` as a tensor, sharing its memory when it can (a tensor, a NumPy array, an
    object with the buffer or DLPack protocol), copying when ``copy`` is True or it must."""
    if isinstance(obj, TensorBase):
        r = obj
        if (dtype is not None and dtype != r.dtype) or \
                (device is not None and core.device(device) != r.device):
            if copy is False:
                raise ValueError("asarray(): a copy is needed to change the dtype or device, "
                                 "but copy=False")
            r = r.to(dtype=dtype or r.dtype, device=device or r.device)
        elif copy:
            r = r.clone()
    else:
        r = core.as_tensor(obj, dtype=dtype, device=device)
        if copy:
            r = r.clone()
    if requires_grad:
        r = r.detach().requires_grad_(True) if r is obj else r.requires_grad_(True)
    return r


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-D tensor over the memory of ``buffer`` (an object with the buffer protocol),
    without a copy: writes through either are seen by the other."""
    import numpy as np

    size = dtype.itemsize
    mv = memoryview(buffer)
    nbytes = mv.nbytes
    if offset < 0 or offset > nbytes:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than "
                         f"buffer length ({nbytes} bytes) minus 1")
    if count < 0:
        if (nbytes - offset) % size:
            raise ValueError(f"buffer length ({nbytes - offset} bytes) after offset "
                             f"({offset} bytes) must be a multiple of element size ({size})")
        count = (nbytes - offset) // size
    elif offset + count * size > nbytes:
        raise ValueError(f"requested buffer length ({count} * {size} bytes) after offset "
                         f"({offset} bytes) must not be greater than actual buffer length "
                         f"({nbytes} bytes)")
    if nbytes == 0 or count == 0:
        raise ValueError("both buffer length (0) and count (0) must not be 0")
    # NumPy only describes the memory here (interop); the tensor wraps it without a copy
    raw = np.dtype(f"i{size}") if size > 1 else np.dtype("u1")
    arr = np.frombuffer(mv.cast("B"), dtype=raw, count=count, offset=offset)
    r = core.from_numpy(arr).view(dtype)
    if requires_grad:
        r.requires_grad_(True)
    return r


# -- more structure -----------------------------------------------------------

def _split_dir(input, indices_or_sections, dim, op, min_dim):
    _tensor_arg(input, op)
    if input.dim() < min_dim:
        raise RuntimeError(f"torch.{op} requires a tensor with at least {min_dim} dimension"
                           f"{'s' if min_dim > 1 else ''}, but got a tensor with "
                           f"{input.dim()} dimensions!")
    if isinstance(indices_or_sections, int) and indices_or_sections != 0 and \
            input.shape[dim] % indices_or_sections:
        raise RuntimeError(f"torch.{op} attempted to split along dimension {dim}, but the size "
                           f"of the dimension {input.shape[dim]} is not divisible by the split_"
                           f"size {indices_or_sections}!")
    return input.tensor_split(indices_or_sections, dim)


def hsplit(input, indices_or_sections):
    """Split horizontally: along dim 1 (dim 0 for a 1-D tensor)."""
    return _split_dir(input, indices_or_sections, 1 if input.dim() > 1 else 0, "hsplit", 1)


def vsplit(input, indices_or_sections):
    """Split vertically: along dim 0 of a tensor of at least 2 dims."""
    return _split_dir(input, indices_or_sections, 0, "vsplit", 2)


def dsplit(input, indices_or_sections):
    """Split depth-wise: along dim 2 of a tensor of at least 3 dims."""
    return _split_dir(input, indices_or_sections, 2, "dsplit", 3)


def adjoint(input):
    """The conjugate transpose of the last two dims (a view)."""
    _tensor_arg(input, "adjoint")
    if input.dim() < 2:
        raise RuntimeError("tensor.adjoint() is only supported on matrices or batches of "
                           f"matrices. Got {input.dim()}-D tensor.")
    return input.transpose(-2, -1).conj()


def is_same_size(input, other) -> bool:
    """Whether the two tensors have the same shape."""
    _tensor_arg(input, "is_same_size")
    _tensor_arg(other, "is_same_size", "other")
    return tuple(input.shape) == tuple(other.shape)


def addr(input, vec1, vec2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * outer(vec1, vec2)`` (``input`` ignored when beta is 0)."""
    _tensor_arg(input, "addr")
    if vec1.dim() != 1 or vec2.dim() != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec1, but got {vec1.dim()}-D"
                           if vec1.dim() != 1 else
                           f"addr: Expected 1-D argument vec2, but got {vec2.dim()}-D")
    prod = _ew.mul(vec1.unsqueeze(1), vec2.unsqueeze(0))
    alpha = _value_for(alpha, input, vec1, vec2)
    prod = prod if alpha == 1 else _ew.mul(prod, alpha)
    if beta == 0:
        r = _ew.add(core.zeros_like(input), prod) if tuple(prod.shape) != tuple(
            input.shape) else prod
    else:
        r = _ew.add(_ew.mul(input, _value_for(beta, input, vec1, vec2)) if beta != 1
                    else input, prod)
    return _finish(r, out, "addr", (input, vec1, vec2))


def addbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * sum_b(batch1[b] @ batch2[b])``."""
    _tensor_arg(input, "addbmm")
    if batch1.dim() != 3 or batch2.dim() != 3:
        raise RuntimeError("batch1 must be a 3D tensor" if batch1.dim() != 3
                           else "batch2 must be a 3D tensor")
    prod = _red.sum(_la.bmm(batch1, batch2), 0)
    prod = prod if alpha == 1 else _ew.mul(prod, alpha)
    if beta == 0:
        r = _ew.add(core.zeros_like(input), prod)
    else:
        r = _ew.add(_ew.mul(input, beta) if beta != 1 else input, prod)
    return _finish(r, out, "addbmm", (input, batch1, batch2), exact=True)


def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """Reduce (``"prod"``, ``"mean"``, ``"amax"``, ``"amin"``) the slices of ``source``
    into ``input`` at the positions ``index`` along ``dim``."""
    _tensor_arg(input, "index_reduce")
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    if index.dim() > 1:
        raise IndexError("index_reduce_(): Index is supposed to be a vector")
    d = _wrap(dim, max(input.dim(), 1))
    if index.numel() != (source.shape[d] if source.dim() else 1):
        raise IndexError("index_reduce_(): Number of indices should be equal to "
                         "source.size(dim)")
    shape = [1] * source.dim()
    if source.dim():
        shape[d] = -1
    idx = index.reshape(*shape).expand(*source.shape) if source.dim() else index.reshape(())
    return _ix.scatter_reduce(input, d, idx, source, reduce, include_self=include_self)


def index_reduce_(input, dim, index, source, reduce, *, include_self=True):
    """In-place :func:`index_reduce`; ``source`` may not share memory with ``input``."""
    core._check_written(input, (index, source), "index_reduce_", True)
    return input.copy_(index_reduce(input, dim, index, source, reduce,
                                    include_self=include_self))


def float_power_(input, exponent):
    """In-place :func:`ember.float_power`: ``input`` must already be float64, the dtype
    the result has."""
    if input.dtype != core.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype "
                           f"{str(input.dtype).split('.')[-1].capitalize()} but the operation's "
                           f"result requires dtype Double")
    core._check_written(input, (exponent,), "float_power_")
    return input.copy_(_ew.float_power(input, exponent))


def _cumulative_(op, name):
    def fn(input, dim, *, dtype=None):
        if input.dtype is core.bool_:
            raise NotImplementedError(f'"{name}_out_cpu" not implemented for \'Bool\'')
        core._check_written(input, (), name + "_")
        return input.copy_(op(input, dim, dtype=input.dtype if dtype is None else dtype))
    fn.__name__ = fn.__qualname__ = name + "_"
    fn.__doc__ = f"In-place :func:`ember.{name}` along ``dim`` (in self's dtype)."
    return fn


cumsum_ = _cumulative_(_red.cumsum, "cumsum")
cumprod_ = _cumulative_(_red.cumprod, "cumprod")


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """True where an element of ``elements`` is in ``test_elements``."""
    if not isinstance(elements, TensorBase) and not isinstance(test_elements, TensorBase):
        raise TypeError("isin() received an invalid combination of arguments: at least one "
                        "of elements and test_elements must be a Tensor")
    if not isinstance(elements, TensorBase):
        elements = core.tensor(elements, dtype=test_elements.dtype)
    if not isinstance(test_elements, TensorBase):
        test_elements = core.tensor(test_elements, dtype=elements.dtype)
    dt = core.promote_types(elements.dtype, test_elements.dtype)
    s = _red.sort(test_elements.reshape(-1).to(dt))[0]
    e = elements.to(dt)
    if s.numel() == 0:
        hit = core.zeros_like(elements, dtype=core.bool_)
    else:
        pos = _ew.clamp_max(_red.searchsorted(s, e), s.numel() - 1)
        hit = _ew.eq(_ix.take(s, pos), e)
    return _ew.logical_not(hit) if invert else hit


def _hist_edges(x, bins, range, dtype, op):
    """The ``bins + 1`` equal-width edges over ``range`` (``x``'s min to max by default,
    widened by 0.5 each side when they are equal), or the given edge tensor."""
    if isinstance(bins, TensorBase):
        edges = bins.to(dtype)
        if edges.dim() != 1 or edges.numel() < 1:
            raise RuntimeError(f"torch.{op}(): bins tensor should have one dimension and at "
                               f"least 1 element")
        return edges
    if bins <= 0:
        raise RuntimeError(f"torch.{op}(): number of bins should be positive, but got {bins}")
    if range is not None:
        lo, hi = float(range[0]), float(range[1])
    elif x.numel():
        lo, hi = float(_red.min(x)), float(_red.max(x))
    else:
        lo, hi = 0.0, 0.0
    if lo > hi:
        raise RuntimeError(f"torch.{op}(): min should not exceed max, but got min {lo} max "
                           f"{hi}")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5 if x.numel() else (0.0, 1.0)
    return _cr.linspace(lo, hi, bins + 1, dtype=dtype)


def _bin_index(edges, x):
    """``(bin of each value, inside)``: bin i holds [e_i, e_i+1), the last bin is closed on
    the right; values outside every bin get bin 0 and ``inside`` False."""
    nb = edges.numel() - 1
    idx = _ew.sub(_red.searchsorted(edges, x, right=True), 1)
    last = _ew.eq(x, _ix.take(edges, core.tensor([nb])))
    idx = _ew.where(last, nb - 1, idx)
    inside = _ew.logical_and(_ew.ge(idx, 0), _ew.lt(idx, nb))
    return _ew.where(inside, idx, 0), inside


def histogram(input, bins=100, *, range=None, weight=None, density=False, out=None):
    """Counts (or ``weight`` sums) of ``input``'s values in ``bins`` equal bins over
    ``range`` (the data's min to max by default), or in the bins a 1-D tensor of edges
    gives; returns ``(hist, bin_edges)``."""
    return_types = _red.return_types
    _tensor_arg(input, "histogram")
    _real_only(input, "histogramdd")
    if input.device.type == "cuda":
        from ember.cuda._dispatch import no_kernel
        raise no_kernel("histogram", input.device)
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"torch.histogram: input tensor and bins tensors should have the "
                           f"same dtype, but got input {input.dtype}")
    x = input.reshape(-1)
    edges = _hist_edges(x, bins, range, input.dtype, "histogram")
    nb = edges.numel() - 1
    if nb < 1:
        hist = core.zeros(0, dtype=input.dtype)
        return return_types.histogram(hist, edges) if out is None else \
            return_types.histogram(_finish(hist, out[0], "histogram", (input,), exact=True),
                                   _finish(edges, out[1], "histogram", (input,), exact=True))
    idx, inside = _bin_index(edges, x)
    w = core.ones_like(x) if weight is None else weight.reshape(-1).to(input.dtype)
    w = _ew.where(inside, w, 0.0)
    hist = core.zeros(nb, dtype=input.dtype).index_add(0, idx, w)
    if density:
        widths = _ew.sub(edges[1:], edges[:-1])
        hist = _ew.div(hist, _ew.mul(_red.sum(hist), widths))
    if out is not None:
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise TypeError("histogram(): argument 'out' must be a tuple of two Tensors "
                            "(hist, bin_edges)")
        hist = _finish(hist, out[0], "histogram", (input,), exact=True)
        edges = _finish(edges, out[1], "histogram", (input,), exact=True)
    return return_types.histogram(hist, edges)


def histogramdd(input, bins, *, range=None, weight=None, density=False):
    """The ``D``-dimensional histogram of the points in the last dim of ``input``
    (``(..., D)``): ``bins`` is an int, one int per dim or one edge tensor per dim,
    ``range`` the flat ``[min_0, max_0, min_1, max_1, ...]``. Returns ``(hist,
    bin_edges)`` with ``hist`` of shape ``(bins_0, ..., bins_D-1)``."""
    _tensor_arg(input, "histogramdd")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"histogramdd\" not implemented for "
                                  f"'{core._SCALAR_NAMES[input.dtype.code]}'")
    if input.dim() < 2:
        raise RuntimeError(f"torch.histogramdd: input tensor should have at least 2 "
                           f"dimensions, but got {input.dim()}")
    D = input.shape[-1]
    pts = input.reshape(-1, D)
    bins = [bins] * D if isinstance(bins, int) else list(bins)
    if len(bins) != D:
        raise RuntimeError(f"histogramdd: The size of bins must be equal to the innermost "
                           f"dimension of the input ({D}), got {len(bins)}")
    if range is not None and len(range) != 2 * D:
        raise RuntimeError(f"torch.histogramdd: for a {D}-dimensional histogram, range should "
                           f"have {2 * D} elements, but got {len(range)}")
    edges, flat = [], None
    inside = core.ones(pts.shape[0], dtype=core.bool_)
    for d in builtins.range(D):
        x = pts.select(1, d)
        e = _hist_edges(x, bins[d], None if range is None else range[2 * d:2 * d + 2],
                        input.dtype, "histogramdd")
        idx, ok = _bin_index(e, x)
        inside = _ew.logical_and(inside, ok)
        flat = idx if flat is None else _ew.add(_ew.mul(flat, max(e.numel() - 1, 1)), idx)
        edges.append(e)
    shape = [max(e.numel() - 1, 0) for e in edges]
    n = math.prod(shape)
    w = core.ones(pts.shape[0], dtype=input.dtype) if weight is None else \
        weight.reshape(-1).to(input.dtype)
    w = _ew.where(inside, w, 0.0)
    hist = core.zeros(n, dtype=input.dtype)
    if n:
        hist = hist.index_add(0, flat, w)
    hist = hist.reshape(shape)
    if density and n:
        vol = None
        for d, e in enumerate(edges):
            width = _ew.sub(e[1:], e[:-1]).reshape([-1 if k == d else 1
                                                    for k in builtins.range(D)])
            vol = width if vol is None else _ew.mul(vol, width)
        hist = _ew.div(hist, _ew.mul(_red.sum(hist), vol))
    return _red.return_types.histogramdd(hist, tuple(edges))


_red.return_types.histogramdd = _red._rt("histogramdd", ("hist", "bin_edges"))


def nonzero_static(input, *, size, fill_value=-1):
    """The indices of non-zero elements as ``nonzero``, truncated or padded with
    ``fill_value`` to exactly ``size`` rows."""
    _tensor_arg(input, "nonzero_static")
    if size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer, but got "
                           f"{size}")
    nz = _ix.nonzero(input)
    n, cols = nz.shape[0], max(input.dim(), 0)
    if n >= size:
        return nz[:size]
    pad = core.full((size - n, cols), fill_value, dtype=core.int64)
    return _ix.cat([nz, pad], 0)


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None,
                   requires_grad=False, pin_memory=False):
    """An uninitialised tensor of ``size`` whose memory is laid out in the dim order
    ``physical_layout`` (outermost first)."""
    size, order = list(size), list(physical_layout)
    if sorted(order) != list(range(len(size))):
        raise RuntimeError(f"empty_permuted: physical_layout {order} is not a permutation of "
                           f"the {len(size)} dims")
    phys = core.empty(*[size[d] for d in order], dtype=dtype, device=device)
    inverse = [order.index(d) for d in range(len(size))]
    return phys.permute(*inverse).requires_grad_(requires_grad)


def to_dlpack(tensor):
    """A DLPack capsule over ``tensor``'s memory (``tensor.__dlpack__()``)."""
    return _tensor_arg(tensor, "to_dlpack", "tensor").__dlpack__()


def _integers(op, a, b):
    for t in (a, b):
        if isinstance(t, TensorBase) and (t.dtype.is_floating_point or t.dtype is core.bool_):
            raise NotImplementedError(f'"{op}_cpu" not implemented for '
                                      f"'{str(t.dtype).split('.')[-1].capitalize()}'")


def gcd(input, other, *, out=None):
    """The greatest common divisor, elementwise (non-negative; gcd(0, 0) = 0)."""
    _tensor_arg(input, "gcd")
    _integers("gcd", input, other)
    a, b = _ew.abs(input), _ew.abs(other)
    a, b = _ew.add(a, core.zeros_like(b)), _ew.add(b, core.zeros_like(a))   # broadcast
    # Euclid on every element at once; each pass at least halves the larger operand
    while bool(_red.any(_ew.ne(b, 0))):
        nz = _ew.ne(b, 0)
        r = _ew.remainder(a, _ew.where(nz, b, 1))
        a, b = _ew.where(nz, b, a), _ew.where(nz, r, 0)
    return _finish(a, out, "gcd", (input, other))


def lcm(input, other, *, out=None):
    """The least common multiple, elementwise (non-negative; 0 when either is 0)."""
    _tensor_arg(input, "lcm")
    _integers("lcm", input, other)
    g = gcd(input, other)
    q = _ew.floor_divide(_ew.abs(input), _ew.where(_ew.eq(g, 0), 1, g))
    return _finish(_ew.abs(_ew.mul(q, other)), out, "lcm", (input, other))


def _along(v, d: int, nd: int):
    """A 1-D tensor shaped to broadcast along dim ``d`` of an ``nd``-dim tensor."""
    return v.reshape(*([1] * d), -1, *([1] * (nd - d - 1)))


def _gradient_1d(f, d: int, h, edge_order: int):
    n, nd = f.shape[d], f.dim()

    def sl(start, length):
        return f.narrow(d, start if start >= 0 else n + start, length)

    if isinstance(h, TensorBase):       # sample coordinates: numpy's non-uniform formulas
        dx = diff(h.to(f.dtype))
        d1, d2 = _along(dx[:-1], d, nd), _along(dx[1:], d, nd)
        s = _ew.add(d1, d2)
        a = _ew.div(_ew.neg(d2), _ew.mul(d1, s))
        b = _ew.div(_ew.sub(d2, d1), _ew.mul(d1, d2))
        c = _ew.div(d1, _ew.mul(d2, s))
        mid = _ew.add(_ew.add(_ew.mul(a, sl(0, n - 2)), _ew.mul(b, sl(1, n - 2))),
                      _ew.mul(c, sl(2, n - 2)))
        if edge_order == 1:
            first = _ew.div(_ew.sub(sl(1, 1), sl(0, 1)), dx[0])
            last = _ew.div(_ew.sub(sl(-1, 1), sl(-2, 1)), dx[-1])
        else:
            p, q = dx[0], dx[1]
            first = _ew.add(_ew.add(
                _ew.mul(sl(0, 1), -(2 * p + q) / (p * (p + q))),
                _ew.mul(sl(1, 1), (p + q) / (p * q))), _ew.mul(sl(2, 1), -p / (q * (p + q))))
            p, q = dx[-2], dx[-1]
            last = _ew.add(_ew.add(
                _ew.mul(sl(-3, 1), q / (p * (p + q))),
                _ew.mul(sl(-2, 1), -(q + p) / (p * q))), _ew.mul(sl(-1, 1),
                                                              (2 * q + p) / (q * (p + q))))
    else:
        mid = _ew.div(_ew.sub(sl(2, n - 2), sl(0, n - 2)), 2.0 * h)
        if edge_order == 1:
            first = _ew.div(_ew.sub(sl(1, 1), sl(0, 1)), h)
            last = _ew.div(_ew.sub(sl(-1, 1), sl(-2, 1)), h)
        else:
            first = _ew.div(_ew.add(_ew.sub(_ew.mul(sl(1, 1), 4.0), _ew.mul(sl(0, 1), 3.0)),
                                    _ew.neg(sl(2, 1))), 2.0 * h)
            last = _ew.div(_ew.add(_ew.sub(_ew.mul(sl(-1, 1), 3.0), _ew.mul(sl(-2, 1), 4.0)),
                                   sl(-3, 1)), 2.0 * h)
    return _ix.cat([first, mid, last], d)


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """Estimate the derivative of ``input`` along each dim in ``dim`` (all by default)
    with central differences inside and one-sided ones at the edges, as NumPy's
    ``gradient``; ``spacing`` is one step for every dim, a step per dim, or the sample
    coordinates (1-D tensors) per dim. Returns one tensor per dim."""
    _tensor_arg(input, "gradient")
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    nd = input.dim()
    dims = list(range(nd)) if dim is None else ([dim] if isinstance(dim, int) else list(dim))
    dims = [_wrap(d, nd) for d in dims]
    if isinstance(spacing, (list, tuple)):
        if len(spacing) != len(dims):
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or "
                               f"it's spacing and dim arguments to have the same length, but "
                               f"got a spacing argument of length {len(spacing)} and a dim "
                               f"argument of length {len(dims)}.")
        steps = list(spacing)
    else:
        steps = [spacing] * len(dims)
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least "
                               "edge_order+1")
    f = input if input.dtype.is_floating_point or input.dtype.is_complex else \
        input.to(core._get_default_dtype())
    out = []
    for d, h in zip(dims, steps):
        if isinstance(h, TensorBase) and h.dim() == 0:
            h = h.item()
        if isinstance(h, TensorBase) and (h.dim() != 1 or h.shape[0] != f.shape[d]):
            raise RuntimeError(f"torch.gradient expected each tensor to be on the same device "
                               f"and to have as many elements as dim {d} of the input")
        out.append(_gradient_1d(f, d, h, edge_order))
    return tuple(out)


# float layout: (same-size integer dtype, mantissa bits, exponent mask, exponent bias - 1,
# a power of two that makes every subnormal normal)
_FLOAT_BITS = {"float32": ("int32", 23, 0xFF, 126, 64),
               "float64": ("int64", 52, 0x7FF, 1022, 128)}


def _float_layout(x, op):
    key = str(x.dtype).split(".")[-1]
    if key not in _FLOAT_BITS:
        raise RuntimeError(f"torch.{op}() only supports floating-point dtypes (float32 and "
                           f"float64 in ember), got {x.dtype}")
    it, mbits, emask, bias, scale = _FLOAT_BITS[key]
    return getattr(core, it), mbits, emask, bias, scale


def _frexp_composed(input, it, mbits, emask, bias, scale):
    """frexp from public bit ops: where the one-pass kernels cannot run."""
    finite = _ew.logical_and(_ew.isfinite(input), _ew.ne(input, 0))
    tiny = _ew.logical_and(finite, _ew.lt(_ew.abs(input), 2.0 ** (1 - bias)))
    x = _ew.where(tiny, _ew.mul(input, 2.0 ** scale), input)      # subnormals made normal
    bits = x.contiguous().view(it)
    e = _ew.bitwise_and(_ew.bitwise_right_shift(bits, mbits), emask)
    exponent = _ew.sub(_ew.sub(e, bias), _ew.where(tiny, scale, 0))
    keep = ~(emask << mbits)
    mant = _ew.bitwise_or(_ew.bitwise_and(bits, keep), bias << mbits).view(input.dtype)
    mantissa = _ew.where(finite, mant, input)
    return mantissa, _ew.where(finite, exponent, 0).to(core.int32)


def frexp(input, *, out=None):
    """Split into a mantissa in [0.5, 1) (with input's sign) and an int32 exponent with
    ``input == mantissa * 2 ** exponent``; zero, inf and nan give themselves and 0."""
    _tensor_arg(input, "frexp")
    it, mbits, emask, bias, scale = _float_layout(input, "frexp")
    parts = _ew._frexp(input)                   # one pass each where it can run
    if parts is not None:
        mantissa, exponent = parts[0], parts[1].to(core.int32)
    else:
        mantissa, exponent = _frexp_composed(input, it, mbits, emask, bias, scale)
    if out is not None:
        mantissa = _finish(mantissa, out[0], "frexp", (input,), exact=True)
        exponent = _finish(exponent, out[1], "frexp", (input,), exact=True)
    return _red.return_types.frexp(mantissa, exponent)


def nextafter(input, other, *, out=None):
    """The next representable value after ``input`` in the direction of ``other``."""
    _tensor_arg(input, "nextafter")
    it, *_ = _float_layout(input, "nextafter")
    if isinstance(other, TensorBase) and other.dtype != input.dtype:
        raise RuntimeError(f"nextafter: expected both arguments to have the same dtype, got "
                           f"{input.dtype} and {other.dtype}")
    if not isinstance(other, TensorBase):
        other = core.full((), other, dtype=input.dtype)
    r = _ew._kernel_binary("nextafter", input, other, out)
    if r is not NotImplemented:
        return r
    shape = core.broadcast_shapes(input.shape, other.shape)
    x, y = input.expand(shape), other.expand(shape)   # (adding zeros would lose -0.0)
    bits = x.contiguous().view(it)
    away = _ew.eq(_ew.gt(y, x), _ew.gt(x, 0))              # moving away from zero
    stepped = _ew.add(bits, _ew.where(away, 1, -1).to(it)).view(input.dtype)
    neg_one = 1 - 2 ** (8 * input.dtype.itemsize - 1)       # sign bit and 1: -min subnormal
    smallest = _ew.where(_ew.gt(y, 0), 1, neg_one).to(it).view(input.dtype)
    r = _ew.where(_ew.eq(x, 0), smallest, stepped)
    r = _ew.where(_ew.eq(x, y), y, r)
    r = _ew.where(_ew.logical_or(_ew.isnan(x), _ew.isnan(y)), float("nan"), r)
    return _finish(r, out, "nextafter", (input, other))


def is_nonzero(input) -> bool:
    """The truth of a one-element tensor (an error for none or several elements)."""
    _tensor_arg(input, "is_nonzero")
    n = input.numel()
    if n != 1:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous" if n == 0
                           else "Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item())


def narrow_copy(input, dim: int, start: int, length: int, *, out=None):
    """A contiguous copy of ``input.narrow(dim, start, length)``."""
    r = _tensor_arg(input, "narrow_copy").narrow(dim, start, length)
    r = r.clone() if r.is_contiguous() else r.contiguous()
    return _finish(r, out, "narrow_copy", (input,), exact=True)


def slice_inverse(input, src, dim: int = 0, start=None, end=None, step: int = 1):
    """The inverse of ``src.slice(dim, start, end, step)`` for a slice ``input`` of
    ``src``'s memory: ``input``'s storage viewed with ``src``'s size, strides and offset
    (the slice arguments only name the slice that was taken)."""
    _tensor_arg(input, "slice_inverse")
    _tensor_arg(src, "slice_inverse", "src")
    return input.as_strided(tuple(src.shape), src.stride(), src.storage_offset())


def mvlgamma(input, p, *, out=None):
    """The log of the multivariate gamma function of dimension ``p``:
    ``p (p - 1) / 4 log(pi) + sum_{j < p} lgamma(input - j / 2)``."""
    x = _tensor_arg(input, "mvlgamma")
    if isinstance(p, bool) or not isinstance(p, int):
        raise TypeError(f"mvlgamma(): argument 'p' (position 2) must be int, not "
                        f"{type(p).__name__}")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    if not x.dtype.is_floating_point:
        x = x.to(core._get_default_dtype())
    r = _ew.lgamma(x)
    for j in range(1, p):
        r = _ew.add(r, _ew.lgamma(_ew.sub(x, j / 2)))
    r = _ew.add(r, p * (p - 1) / 4 * math.log(math.pi))
    return _finish(r, out, "mvlgamma", (input,))
