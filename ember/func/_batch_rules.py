"""Batching rules: op name -> ``rule(mode, func, args, kwargs)``, which runs the op once
on the physical tensors of ``mode``'s level and returns batched results.

Most ops come from a few families: elementwise (batch dims to the front, ranks padded so
broadcasting lines samples up), reductions and dim-taking ops (dims shifted past the
batch dim), views, matmul/linear/conv, and ops on trailing dims that take the batch as
extra leading dims. An op without a rule runs once per sample (``_batched.fallback``)."""
from __future__ import annotations

import ember
from ember import _autocast
from ember._C import core
from ember._C.core import TensorBase
from ember.func._batched import BatchedTensor, fallback, is_batched, unwrap, wrap

RULES: dict = {}


def _front(x, mode):
    """``x``'s physical tensor with its batch dim first, or None when ``x`` is unbatched."""
    p, b = unwrap(x, mode)
    if b is None:
        return None
    return p.movedim(b, 0) if b else p


def _full(x, mode):
    """``x`` physical with the batch dim first, unbatched tensors expanded."""
    p = _front(x, mode)
    if p is not None:
        return p
    return x.unsqueeze(0).expand(mode.size, *x.shape)


def _pad(p, r, R):
    """Insert ``R - r`` unit dims after the batch dim of ``p`` (logical rank ``r``)."""
    for _ in range(R - r):
        p = p.unsqueeze(1)
    return p


def _out(out, mode, bdim=0):
    """Wrap every tensor of an op's result as batched over ``bdim``."""
    if isinstance(out, TensorBase):
        return wrap(out, bdim, mode)
    if isinstance(out, (tuple, list)):
        items = [_out(o, mode, bdim) for o in out]
        if hasattr(out, "_fields"):
            return type(out)(*items)
        return type(out)(items)
    return out


def _wrap_dim(d, r):
    """A logical dim of a rank-``r`` tensor as a physical dim (batch dim first)."""
    n = max(r, 1)
    if not -n <= d < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {d})")
    return d % n + 1


def _shift(d, r):
    if isinstance(d, (tuple, list)):
        return type(d)(_wrap_dim(x, r) for x in d)
    return _wrap_dim(d, r)


def _is_t(a):
    return isinstance(a, TensorBase)


# ---------------------------------------------------------------------------
# elementwise

def elementwise(mode, func, args, kwargs):
    R = 0
    for a in args:
        if isinstance(a, TensorBase):
            r = a.dim()
            R = r if r > R else R
    for a in kwargs.values():
        if isinstance(a, TensorBase):
            r = a.dim()
            R = r if r > R else R

    def fix(a):
        if type(a) is BatchedTensor:
            p, b = unwrap(a, mode)
            if b is not None:
                if b:
                    p = p.movedim(b, 0)
                r = a.dim()
                return _pad(p, r, R) if r < R else p
        return a
    out = func(*[fix(a) for a in args], **{k: fix(v) for k, v in kwargs.items()})
    return _out(out, mode)


def _inplace_error(name):
    return RuntimeError(f"vmap: {name}(self, *extra_args) is not possible because there exists "
                        f"a Tensor `other` in extra_args that has more elements than `self`. "
                        f"This happened due to `other` being vmapped over but `self` not being "
                        f"vmapped over in a vmap. Please try to use out-of-place operators "
                        f"instead of {name}. If said operator is being called inside the "
                        f"ember framework, please file a bug report instead.")


def _inplace(name):
    def rule(mode, func, args, kwargs):
        self = args[0]
        sp = _front(self, mode)
        if sp is None:
            raise _inplace_error(name)
        R = self.dim()

        def fix(a):
            p = _front(a, mode) if type(a) is BatchedTensor else None
            return a if p is None else _pad(p, a.dim(), R)
        func(sp, *[fix(a) for a in args[1:]], **{k: fix(v) for k, v in kwargs.items()})
        return self
    return rule


_UNARY = """abs absolute neg negative exp exp2 expm1 log log2 log10 log1p sqrt rsqrt reciprocal
sign sgn signbit floor ceil round trunc fix frac sin cos tan asin acos atan sinh cosh tanh asinh
acosh atanh arcsin arccos arctan arcsinh arccosh arctanh sigmoid logit erf erfc erfinv lgamma
digamma square relu relu6 gelu silu mish softplus elu selu celu leaky_relu hardtanh hardsigmoid
hardswish hardshrink softshrink tanhshrink logsigmoid softsign threshold glu_ isnan isinf isposinf
isneginf isfinite isreal logical_not bitwise_not nan_to_num clamp clip clamp_min clamp_max
deg2rad rad2deg angle conj positive i0 sinc to type float double half bfloat16 int long short
bool byte char cfloat contiguous clone detach zeros_like ones_like empty_like full_like
rand_like randn_like randint_like bernoulli dropout alpha_dropout real imag sigmoid_backward
relu_backward threshold_backward"""

_BINARY = """add sub subtract mul multiply div divide true_divide floor_divide remainder fmod
pow float_power atan2 arctan2 maximum minimum fmax fmin eq ne lt le gt ge greater less
greater_equal less_equal not_equal equal_ logical_and logical_or logical_xor bitwise_and
bitwise_or bitwise_xor bitwise_left_shift bitwise_right_shift hypot copysign xlogy rsub where
lerp addcmul addcdiv masked_fill heaviside nextafter ldexp logaddexp logaddexp2 isclose
normal poisson"""

for _n in (_UNARY + " " + _BINARY).split():
    RULES[_n] = elementwise

_INPLACE = """add_ sub_ mul_ div_ pow_ clamp_ clamp_min_ clamp_max_ copy_ fill_ zero_
masked_fill_ relu_ sigmoid_ tanh_ exp_ log_ neg_ abs_ sqrt_ addcmul_ addcdiv_ lerp_ floor_
ceil_ round_ trunc_ remainder_ fmod_ uniform_ normal_ bernoulli_ exponential_ random_
cauchy_ log_normal_ geometric_ dropout_ hardtanh_ leaky_relu_ elu_ requires_grad_ detach_
sin_ cos_ reciprocal_ rsqrt_ square_ sign_ maximum_ minimum_ t_ squeeze_ unsqueeze_
transpose_""".split()
for _n in _INPLACE:
    RULES[_n] = _inplace(_n)
for _n in ("t_", "squeeze_", "unsqueeze_", "transpose_", "detach_", "requires_grad_"):
    del RULES[_n]          # they change metadata: per sample, through the fallback


# ---------------------------------------------------------------------------
# reductions and ops that take a dim

_NO_DIM = object()


def _get(args, kwargs, pos, key, default):
    if len(args) > pos:
        return args[pos], True
    return kwargs.get(key, default), False


def _set(args, kwargs, pos, key, value, positional):
    if positional:
        args = args[:pos] + (value,) + args[pos + 1:]
    else:
        kwargs = dict(kwargs)
        kwargs[key] = value
    return args, kwargs


def _dim_op(pos=1, key="dim", default=None, full=True):
    """An op over ``dim`` (``args[pos]`` or ``kwargs[key]``); ``dim=None`` reduces over
    every dim (``full``), which runs over the flattened sample."""
    def rule(mode, func, args, kwargs):
        x = args[0]
        p = _front(x, mode)
        others = [a for a in args[1:] if type(a) is BatchedTensor and is_batched(a, mode)]
        if p is None or others or any(is_batched(v, mode) for v in kwargs.values()):
            return fallback(mode, getattr(func, "__name__", "op"), func, args, kwargs)
        R = x.dim()
        d, positional = _get(args, kwargs, pos, key, default)
        squeeze = False
        if d is None or (isinstance(d, (tuple, list)) and not d and full):
            if not full:
                return fallback(mode, getattr(func, "__name__", "op"), func, args, kwargs)
            p = p.reshape(p.shape[0], -1)
            nd = 1
            squeeze = bool(kwargs.get("keepdim") or (len(args) > pos + 1 and
                                                     args[pos + 1] is True))
        else:
            if R == 0:
                p = p.unsqueeze(1)
                squeeze = True
            nd = _shift(d, R)
        args = (p,) + args[1:]
        args, kwargs = _set(args, kwargs, pos, key, nd, positional)
        out = func(*args, **kwargs)
        if squeeze:
            out = _squeeze_out(out, R)
        return _out(out, mode)
    return rule


def _squeeze_out(out, R):
    if isinstance(out, TensorBase):
        if out.dim() > 1:
            out = out.reshape(out.shape[0], *([1] * R)) if R else out.reshape(out.shape[0])
        return out
    if isinstance(out, (tuple, list)):
        items = [_squeeze_out(o, R) for o in out]
        return type(out)(*items) if hasattr(out, "_fields") else type(out)(items)
    return out


for _n in """sum mean nansum nanmean prod amax amin logsumexp all any count_nonzero std var
argmax argmin std_mean var_mean aminmax""".split():
    RULES[_n] = _dim_op()
for _n in "softmax log_softmax cumsum cumprod logcumsumexp cummax cummin".split():
    RULES[_n] = _dim_op(full=False)
RULES["norm"] = _dim_op(pos=2)
RULES["sort"] = _dim_op(default=-1, full=False)
RULES["argsort"] = _dim_op(default=-1, full=False)
RULES["topk"] = _dim_op(pos=2, default=-1, full=False)
RULES["kthvalue"] = _dim_op(pos=2, default=-1, full=False)
RULES["flip"] = _dim_op(key="dims", full=False)
RULES["unbind"] = _dim_op(default=0, full=False)
RULES["split"] = _dim_op(pos=2, default=0, full=False)
RULES["chunk"] = _dim_op(pos=2, default=0, full=False)
RULES["select"] = _dim_op(full=False)
RULES["narrow"] = _dim_op(full=False)
RULES["cumulative_trapezoid"] = _dim_op(default=-1, full=False)


def _max_min(mode, func, args, kwargs):
    if (len(args) > 1 and _is_t(args[1])) or _is_t(kwargs.get("other")):
        return elementwise(mode, func, args, kwargs)
    if len(args) == 1 and "dim" not in kwargs:
        p = _front(args[0], mode)
        red = ember.amax if func.__name__ == "max" else ember.amin
        return wrap(red(p.reshape(p.shape[0], -1), 1), 0, mode)
    return _dim_op(full=False)(mode, func, args, kwargs)


RULES["max"] = _max_min
RULES["min"] = _max_min


def _gather(mode, func, args, kwargs):
    x, idx = args[0], args[2] if len(args) > 2 else kwargs["index"]
    d, positional = _get(args, kwargs, 1, "dim", 0)
    xp, ip = _full(x, mode), _full(idx, mode)
    args = (xp, _shift(d, x.dim()), ip) + args[3:]
    kwargs = {k: v for k, v in kwargs.items() if k not in ("dim", "index")}
    return wrap(func(*args, **kwargs), 0, mode)


RULES["gather"] = _gather


def _index_select(mode, func, args, kwargs):
    x = args[0]
    d, _ = _get(args, kwargs, 1, "dim", None)
    idx = args[2] if len(args) > 2 else kwargs["index"]
    if is_batched(idx, mode):
        if is_batched(x, mode) or idx.dim() != 1:
            return fallback(mode, "index_select", func, args, kwargs)
        ip = _front(idx, mode)
        dd = d % max(x.dim(), 1)
        out = func(x, dd, ip.reshape(-1)).unflatten(dd, tuple(ip.shape))
        return wrap(out.movedim(dd, 0), 0, mode)
    return wrap(func(_front(x, mode), _wrap_dim(d, x.dim()), idx), 0, mode)


def _roll(mode, func, args, kwargs):
    x = args[0]
    p = _front(x, mode)
    shifts, _ = _get(args, kwargs, 1, "shifts", None)
    dims, _ = _get(args, kwargs, 2, "dims", None)
    if any(is_batched(a, mode) for a in args[1:]):
        return fallback(mode, "roll", func, args, kwargs)
    if dims is None:
        return wrap(func(p.reshape(p.shape[0], -1), shifts, 1).reshape(p.shape), 0, mode)
    return wrap(func(p, shifts, _shift(dims, x.dim())), 0, mode)


RULES["index_select"] = _index_select
RULES["roll"] = _roll


# ---------------------------------------------------------------------------
# views

def _shape_args(args):
    rest = args[1:]
    if len(rest) == 1 and isinstance(rest[0], (tuple, list)):
        return tuple(rest[0])
    return tuple(rest)


def _infer(shape, numel, name):
    shape = [int(s) for s in shape]
    if shape.count(-1) == 1:
        known = 1
        for s in shape:
            if s != -1:
                known *= s
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape[shape.index(-1)] = numel // known
    return shape


def _view_like(method):
    def rule(mode, func, args, kwargs):
        x = args[0]
        p = _front(x, mode)
        if len(args) == 2 and isinstance(args[1], ember.dtype):
            return wrap(func(p, args[1]), 0, mode)
        shape = _infer(_shape_args(args) or kwargs.get("shape", ()), x.numel(), method)
        return wrap(getattr(p, method)(p.shape[0], *shape), 0, mode)
    return rule


RULES["view"] = _view_like("view")
RULES["reshape"] = _view_like("reshape")


def _as_other(method):
    def rule(mode, func, args, kwargs):
        x, other = args[0], args[1]
        if is_batched(other, mode):
            return fallback(mode, method + "_as", func, args, kwargs)
        return RULES[method](mode, func, (x, tuple(other.shape)), {})
    return rule


for _n in ("view", "reshape", "expand"):
    RULES[_n + "_as"] = _as_other(_n)


def _permute(mode, func, args, kwargs):
    x = args[0]
    p = _front(x, mode)
    dims = _shape_args(args) or tuple(kwargs.get("dims", ()))
    return wrap(p.permute(0, *[_wrap_dim(d, x.dim()) for d in dims]), 0, mode)


def _transpose(mode, func, args, kwargs):
    x = args[0]
    p = _front(x, mode)
    a, b = (args[1], args[2]) if len(args) > 2 else (kwargs["dim0"], kwargs["dim1"])
    R = x.dim()
    if R == 0:
        return x
    return wrap(p.transpose(_wrap_dim(a, R), _wrap_dim(b, R)), 0, mode)


def _t(mode, func, args, kwargs):
    x = args[0]
    if x.dim() > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{x.dim()}D")
    p = _front(x, mode)
    return wrap(p.transpose(1, 2) if x.dim() == 2 else p, 0, mode)


def _movedim(mode, func, args, kwargs):
    x = args[0]
    p = _front(x, mode)
    src, dst = args[1], args[2]
    return wrap(p.movedim(_shift(src, x.dim()), _shift(dst, x.dim())), 0, mode)


def _squeeze(mode, func, args, kwargs):
    x = args[0]
    p = _front(x, mode)
    d, _ = _get(args, kwargs, 1, "dim", None)
    if d is None:
        dims = tuple(i + 1 for i, s in enumerate(x.shape) if s == 1)
    else:
        dims = tuple(_shift(d if isinstance(d, (tuple, list)) else (d,), x.dim()))
    return wrap(p.squeeze(dims) if dims else p, 0, mode)


def _unsqueeze(mode, func, args, kwargs):
    x = args[0]
    p = _front(x, mode)
    d, _ = _get(args, kwargs, 1, "dim", None)
    return wrap(p.unsqueeze(_wrap_dim(d, x.dim() + 1)), 0, mode)


def _expand(mode, func, args, kwargs):
    x = args[0]
    p = _front(x, mode)
    sizes = _shape_args(args) or tuple(kwargs.get("size", ()))
    if len(sizes) < x.dim():
        raise RuntimeError(f"expand: the number of sizes provided ({len(sizes)}) must be "
                           f"greater or equal to the number of dimensions in the tensor "
                           f"({x.dim()})")
    p = _pad(p, x.dim(), len(sizes))
    return wrap(p.expand(p.shape[0], *sizes), 0, mode)


def _flatten(mode, func, args, kwargs):
    x = args[0]
    p = _front(x, mode)
    s, _ = _get(args, kwargs, 1, "start_dim", 0)
    e, _ = _get(args, kwargs, 2, "end_dim", -1)
    if x.dim() == 0:
        return wrap(p.reshape(p.shape[0], 1), 0, mode)
    return wrap(p.flatten(_wrap_dim(s, x.dim()), _wrap_dim(e, x.dim())), 0, mode)


def _unflatten(mode, func, args, kwargs):
    x = args[0]
    p = _front(x, mode)
    d, _ = _get(args, kwargs, 1, "dim", None)
    sizes, _ = _get(args, kwargs, 2, "sizes", None)
    return wrap(p.unflatten(_wrap_dim(d, x.dim()), sizes), 0, mode)


def _diagonal(mode, func, args, kwargs):
    x = args[0]
    p = _front(x, mode)
    off, _ = _get(args, kwargs, 1, "offset", 0)
    d1, _ = _get(args, kwargs, 2, "dim1", 0)
    d2, _ = _get(args, kwargs, 3, "dim2", 1)
    R = x.dim()
    return wrap(p.diagonal(off, _wrap_dim(d1, R), _wrap_dim(d2, R)), 0, mode)


def _repeat(mode, func, args, kwargs):
    x = args[0]
    p = _front(x, mode)
    reps = _shape_args(args)
    p = _pad(p, x.dim(), len(reps))
    return wrap(p.repeat(1, *reps), 0, mode)


RULES.update(permute=_permute, transpose=_transpose, swapaxes=_transpose,
             swapdims=_transpose, t=_t, movedim=_movedim, moveaxis=_movedim,
             squeeze=_squeeze, unsqueeze=_unsqueeze, expand=_expand, broadcast_to=_expand,
             flatten=_flatten, unflatten=_unflatten, diagonal=_diagonal, repeat=_repeat)


def _trailing(mode, func, args, kwargs):
    """Ops on trailing dims (``tril``, ``triu``, ``pad``...): the batch is one more
    leading dim; only the first argument may be batched."""
    if any(is_batched(a, mode) for a in args[1:]) or \
            any(is_batched(v, mode) for v in kwargs.values()):
        return fallback(mode, getattr(func, "__name__", "op"), func, args, kwargs)
    return _out(func(_front(args[0], mode), *args[1:], **kwargs), mode)


for _n in "tril triu pad embedding_renorm_".split():
    RULES[_n] = _trailing


def _index_tuple(idx):
    return idx if isinstance(idx, tuple) else (idx,)


def _advanced_ok(idx, mode):
    """Whether ``(slice(None),) + idx`` indexes every sample the way ``idx`` indexes one:
    no batched or boolean index and the advanced indices next to each other."""
    pos = []
    for k, i in enumerate(idx):
        if _is_t(i) or isinstance(i, list):
            if is_batched(i, mode) or type(i) is BatchedTensor or \
                    (_is_t(i) and i.dtype == ember.bool):
                return False
            pos.append(k)
        elif isinstance(i, bool):
            return False
    return not pos or pos[-1] - pos[0] == len(pos) - 1


def _getitem(mode, func, args, kwargs):
    x, idx = args
    idx = _index_tuple(idx)
    if not is_batched(x, mode) or not _advanced_ok(idx, mode):
        return fallback(mode, "getitem", func, args, kwargs)
    return wrap(_front(x, mode)[(slice(None),) + idx], 0, mode)


def _setitem(mode, func, args, kwargs):
    x, idx, v = args
    idx = _index_tuple(idx)
    if not is_batched(x, mode):
        raise _inplace_error("setitem")
    if not _advanced_ok(idx, mode):
        return fallback(mode, "setitem_", func, args, kwargs)
    p = _front(x, mode)
    full = (slice(None),) + idx
    vp = _front(v, mode) if type(v) is BatchedTensor else None
    if vp is not None:
        r = p[full].dim() - 1
        vp = _pad(vp, v.dim(), r)
    func(p, full, v if vp is None else vp)
    return None


RULES["getitem"] = _getitem
RULES["setitem"] = _setitem


# ---------------------------------------------------------------------------
# joining

def _cat(stack):
    def rule(mode, func, args, kwargs):
        ts = list(args[0])
        d, positional = _get(args, kwargs, 1, "dim", 0)
        R = max(t.dim() for t in ts) + (1 if stack else 0)
        phys = [_full(t, mode) if (t.dim() or stack) else t for t in ts]
        args = (phys,) + args[1:]
        args, kwargs = _set(args, kwargs, 1, "dim", _wrap_dim(d, R), positional)
        return wrap(func(*args, **kwargs), 0, mode)
    return rule


RULES["cat"] = RULES["concat"] = RULES["concatenate"] = _cat(False)
RULES["stack"] = _cat(True)


# ---------------------------------------------------------------------------
# matmul, linear, convolution

class _SharedRhsMatmul(ember.autograd.Function):
    """``a[i] @ b[i]`` where ``b`` is one matrix expanded over the batch (stride 0), as
    ``grad`` inside vmap makes of an unbatched weight: the forward is one GEMM with the
    batch folded into the rows; ``b``'s gradient is still per sample."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return ember.matmul(a, b[0])

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        ga = gb = None
        if ctx.needs_input_grad[0]:
            ga = ember.matmul(g, b[0].transpose(0, 1))
        if ctx.needs_input_grad[1]:
            gb = a.unsqueeze(2) * g.unsqueeze(1) if a.dim() == 2 else \
                ember.bmm(a.transpose(1, 2), g)
        return ga, gb


def _matmul_phys(mode, a, b):
    """``a @ b`` of two (possibly batched) tensors: a physical result, batch dim first."""
    ra, rb = a.dim(), b.dim()
    ap, bp = _front(a, mode), _front(b, mode)
    if ap is not None and bp is None and rb <= 2 and ra >= 1:
        # one GEMM with the batch folded into the rows
        return ember.matmul(ap, b)
    if ap is not None and bp is not None and rb == 2 and ra in (1, 2) and \
            bp.stride(0) == 0 and not core._mode_active():
        return _SharedRhsMatmul.apply(ap, bp)
    if ap is None:
        ap = a
    if bp is None:
        bp = b
    sq_a, sq_b = ra == 1, rb == 1
    if sq_a:
        ap = ap.unsqueeze(-2)
        ra = 2
    if sq_b:
        bp = bp.unsqueeze(-1)
        rb = 2
    R = max(ra, rb)
    if is_batched(a, mode):
        ap = _pad(ap, ra, R)
    if is_batched(b, mode):
        bp = _pad(bp, rb, R)
    out = ember.matmul(ap, bp)
    if sq_b:
        out = out.squeeze(-1)
    if sq_a:
        out = out.squeeze(-1 if sq_b else -2)
    return out


def _matmul(mode, func, args, kwargs):
    return wrap(_matmul_phys(mode, args[0], args[1]), 0, mode)


for _n in ("matmul", "mm", "bmm", "mv", "dot"):
    RULES[_n] = _matmul


def _linear(mode, func, args, kwargs):
    x, w = args[0], args[1]
    bias = args[2] if len(args) > 2 else kwargs.get("bias")
    if not is_batched(w, mode) and not is_batched(bias, mode):
        return wrap(func(_front(x, mode), w, bias), 0, mode)
    wt = _front(w, mode)
    wt = w.t() if wt is None else wt.transpose(-1, -2)
    wt_b = wrap(wt, 0, mode) if is_batched(w, mode) else wt
    out = wrap(_matmul_phys(mode, x, wt_b), 0, mode)
    if bias is not None:
        out = elementwise(mode, ember.add, (out, bias), {})
    return out


RULES["linear"] = _linear


def _conv(mode, func, args, kwargs):
    x, w = args[0], args[1]
    bias = args[2] if len(args) > 2 else kwargs.get("bias")
    rest = args[3:]
    kw = {k: v for k, v in kwargs.items() if k != "bias"}
    k = w.dim() - 2
    B = mode.size
    unbatched_input = x.dim() == k + 1
    if not is_batched(w, mode) and not is_batched(bias, mode):
        xp = _front(x, mode)
        if unbatched_input:
            return wrap(func(xp, w, bias, *rest, **kw), 0, mode)
        out = func(xp.flatten(0, 1), w, bias, *rest, **kw)
        return wrap(out.unflatten(0, (B, x.shape[0])), 0, mode)
    groups = rest[3] if len(rest) > 3 else kw.pop("groups", 1)
    rest = rest[:3]
    xp = _full(x, mode)
    if unbatched_input:
        xp = xp.unsqueeze(1)
    N, C = xp.shape[1], xp.shape[2]
    xg = xp.movedim(0, 1).reshape(N, B * C, *xp.shape[3:])
    wp = _full(w, mode)
    wg = wp.reshape(B * wp.shape[1], *wp.shape[2:])
    out = func(xg, wg, None, *rest, groups=groups * B, **kw)
    O = wp.shape[1]
    out = out.reshape(N, B, O, *out.shape[2:]).movedim(1, 0)
    if bias is not None:
        bp = _full(bias, mode)
        out = out + bp.reshape(B, 1, O, *([1] * k))
    if unbatched_input:
        out = out.squeeze(1)
    return wrap(out, 0, mode)


for _n in ("conv1d", "conv2d", "conv3d"):
    RULES[_n] = _conv


def _fold(spatial):
    """Ops on (N, C, *spatial) or (C, *spatial) inputs where only the input is batched:
    the batch folds into N."""
    def rule(mode, func, args, kwargs):
        x = args[0]
        if any(is_batched(a, mode) for a in args[1:]) or \
                any(is_batched(v, mode) for v in kwargs.values()):
            return fallback(mode, getattr(func, "__name__", "op"), func, args, kwargs)
        xp = _front(x, mode)
        if x.dim() == spatial + 1:
            return _out(func(xp, *args[1:], **kwargs), mode)
        out = func(xp.flatten(0, 1), *args[1:], **kwargs)
        return _out(_unfold(out, mode.size, x.shape[0]), mode)
    return rule


def _unfold(out, B, N):
    if isinstance(out, TensorBase):
        return out.unflatten(0, (B, N))
    if isinstance(out, (tuple, list)):
        return type(out)(_unfold(o, B, N) for o in out)
    return out


for _d in (1, 2, 3):
    for _n in ("max_pool", "avg_pool", "adaptive_avg_pool", "adaptive_max_pool", "lp_pool"):
        RULES[f"{_n}{_d}d"] = _fold(_d)
        RULES[f"{_n}{_d}d_with_indices"] = _fold(_d)


def _layer_norm(mode, func, args, kwargs):
    x, shape = args[0], args[1]
    w = args[2] if len(args) > 2 else kwargs.get("weight")
    b = args[3] if len(args) > 3 else kwargs.get("bias")
    eps = args[4] if len(args) > 4 else kwargs.get("eps", 1e-5)
    if not is_batched(w, mode) and not is_batched(b, mode):
        return wrap(func(_full(x, mode), shape, w, b, eps), 0, mode)
    out = wrap(func(_full(x, mode), shape, None, None, eps), 0, mode)
    if w is not None:
        out = elementwise(mode, ember.mul, (out, w), {})
    if b is not None:
        out = elementwise(mode, ember.add, (out, b), {})
    return out


RULES["layer_norm"] = _layer_norm


def _cross_entropy_fused(mode, func, args, kwargs):
    """The fused cross-entropy Function ((N, C) logits, class-index targets)."""
    x, t, ignore_index, reduction = args[:4]
    B = mode.size
    xp, tp = _full(x, mode), _full(t, mode)
    N = xp.shape[1]
    loss = func(xp.flatten(0, 1), tp.flatten(0, 1), ignore_index, "none").reshape(B, N)
    if reduction == "none":
        return wrap(loss, 0, mode)
    if reduction == "sum":
        return wrap(loss.sum(1), 0, mode)
    valid = (tp != ignore_index).sum(1).to(loss.dtype)
    return wrap(loss.sum(1) / valid, 0, mode)


RULES["_CrossEntropyIdx"] = _cross_entropy_fused


# ---------------------------------------------------------------------------
# losses (Python composites that vmap sees as one op, see ember._autocast.autocast_entry)

def _reduce_per_sample(out, reduction, B, batch_size=None):
    if reduction == "none":
        return out
    flat = out.reshape(B, -1)
    if reduction == "sum":
        return flat.sum(1)
    if reduction == "batchmean":
        return flat.sum(1) / (batch_size or 1)
    return flat.mean(1)


def _pointwise_loss(mode, func, args, kwargs):
    """Losses of elementwise terms: computed with ``reduction="none"`` on the aligned
    batch, then reduced per sample."""
    if len(args) != 2 or kwargs.get("size_average") is not None or \
            kwargs.get("reduce") is not None:
        return fallback(mode, func.__name__, func, args, kwargs)
    x, t = args
    R = max(x.dim(), t.dim())
    xp, tp = _pad(_full(x, mode), x.dim(), R), _pad(_full(t, mode), t.dim(), R)
    kw = {}
    for k, v in kwargs.items():
        p = _front(v, mode) if type(v) is BatchedTensor else None
        kw[k] = v if p is None else _pad(p, v.dim(), R)
    reduction = kw.get("reduction", "mean")
    kw["reduction"] = "none"
    out = func(xp, tp, **kw)
    return wrap(_reduce_per_sample(out, reduction, mode.size, x.shape[0] if x.dim() else 1),
                0, mode)


def _class_loss(mode, func, args, kwargs):
    """``nll_loss`` / ``cross_entropy``: the batch folds into N; the per-sample mean divides
    by the sample's own (weighted, non-ignored) target count."""
    weight = args[2] if len(args) > 2 else kwargs.get("weight")
    if len(args) > 3 or kwargs.get("size_average") is not None or \
            kwargs.get("reduce") is not None or is_batched(weight, mode) or \
            (weight is not None and kwargs.get("label_smoothing", 0.0) > 0):
        return fallback(mode, func.__name__, func, args, kwargs)
    x, t = args[0], args[1]
    B = mode.size
    xp, tp = _full(x, mode), _full(t, mode)
    kw = {k: v for k, v in kwargs.items() if k != "weight"}
    reduction = kw.get("reduction", "mean")
    kw["reduction"] = "none"
    if x.dim() == 1:
        out = func(xp, tp, weight, **kw)
    else:
        out = func(xp.flatten(0, 1), tp.flatten(0, 1), weight, **kw).unflatten(
            0, (B, x.shape[0]))
    if reduction != "mean" or t.is_floating_point():
        return wrap(_reduce_per_sample(out, reduction, B), 0, mode)
    valid = tp != kwargs.get("ignore_index", -100)
    if weight is None:
        den = valid.reshape(B, -1).sum(1).to(out.dtype)
    else:
        w = weight[ember.where(valid, tp, ember.zeros((), dtype=tp.dtype))]
        den = (w * valid.to(w.dtype)).reshape(B, -1).sum(1)
    return wrap(out.reshape(B, -1).sum(1) / den, 0, mode)


for _n in ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "soft_margin_loss",
           "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div"):
    RULES[_n] = _pointwise_loss
RULES["nll_loss"] = _class_loss
RULES["cross_entropy"] = _class_loss
_autocast._vmap_names.update(("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
                              "soft_margin_loss", "binary_cross_entropy",
                              "binary_cross_entropy_with_logits", "kl_div", "nll_loss",
                              "cross_entropy"))


# Linear algebra on the trailing two dims (LAPACK calls take leading batch dims)
_LINALG = ("linalg_inv", "linalg_inv_ex", "linalg_det", "linalg_slogdet", "linalg_cholesky",
           "linalg_cholesky_ex", "linalg_qr", "linalg_eigh", "linalg_eigvalsh", "linalg_svd",
           "linalg_svdvals", "linalg_matrix_exp", "linalg_pinv")
for _n in _LINALG:
    RULES[_n] = _trailing
_autocast._vmap_names.update(_LINALG)
