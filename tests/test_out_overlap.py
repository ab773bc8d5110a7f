"""Writes that torch refuses must be refused: ``out=`` and in-place ops on a tensor
that overlaps itself (an expanded tensor), that partially overlaps one of its
inputs, or whose dtype the result cannot be cast to; and dims out of range or
repeated.  The generated cases run with torch as the oracle (ember raises the
same exception type where torch raises, and gives torch's values where it does
not); the named reproducers at the end run without torch."""

import numpy as np
import pytest

import ember

_RNG = np.random.default_rng(0)
_A = _RNG.uniform(0.25, 2.0, (3, 4)).astype(np.float32)
_B = _RNG.uniform(0.25, 2.0, (3, 4)).astype(np.float32)
_I = np.array([[0, 2, 1, 3], [1, 0, 3, 2], [2, 1, 0, 3]], np.int64)
_M = np.array([[True, False, True, False]] * 3)

# Ops whose results are random: only whether they raise is compared.
RANDOM = {"rand", "randn", "randint", "randperm", "normal", "bernoulli", "multinomial",
          "empty", "bernoulli_", "cauchy_", "exponential_", "geometric_", "log_normal_",
          "normal_", "random_", "uniform_"}


def _t(m, a):
    return m.tensor(a)


# ---------------------------------------------------------------------------
# out= ops: name -> sample(m, A) giving (fn, args, kwargs); A is the (3, 4) input.

UNARY = ("abs absolute acos acosh asin asinh atan atanh arccos arcsin arctan bitwise_not ceil "
         "cos cosh erf erfc exp exp2 expm1 fix floor frac lgamma log log10 log1p log2 neg "
         "negative reciprocal round rsqrt sigmoid sign signbit sin sinh sqrt square tan tanh "
         "trunc isfinite isinf isnan logical_not msort relu silu mish gelu arccosh arcsinh "
         "arctanh conj_physical deg2rad rad2deg sgn sinc logit nan_to_num isposinf "
         "isneginf angle").split()
BINARY = ("add sub subtract mul multiply div divide true_divide floor_divide remainder fmod "
          "pow float_power maximum minimum fmax fmin atan2 arctan2 hypot copysign xlogy "
          "logaddexp eq ne lt le gt ge greater greater_equal less less_equal not_equal "
          "logical_and logical_or logical_xor bitwise_and bitwise_or bitwise_xor "
          "bitwise_left_shift bitwise_right_shift logaddexp2 heaviside inner kron nextafter"
          " complex polar").split()
DIM_REDUCE = ("all any amax amin cumprod cumsum logcumsumexp logsumexp mean nanmean nansum "
              "prod std sum var").split()


def _sample_table():
    s = {}
    for n in UNARY:
        s[n] = lambda m, A, n=n: (getattr(m, n), (A,), {})
    for n in BINARY:
        s[n] = lambda m, A, n=n: (getattr(m, n), (A, _t(m, _B)), {})
    for n in DIM_REDUCE:
        s[n] = lambda m, A, n=n: (getattr(m, n), (A, 1), {})
    s.update({
        "norm": lambda m, A: (m.norm, (A,), {"dim": 1}),
        "max": lambda m, A: (m.max, (A, 1), {}),
        "min": lambda m, A: (m.min, (A, 1), {}),
        "sort": lambda m, A: (m.sort, (A, 1), {}),
        "topk": lambda m, A: (m.topk, (A, 2, 1), {}),
        "kthvalue": lambda m, A: (m.kthvalue, (A, 2, 1), {}),
        "clamp": lambda m, A: (m.clamp, (A, 0.5, 1.5), {}),
        "clip": lambda m, A: (m.clip, (A, 0.5, 1.5), {}),
        "lerp": lambda m, A: (m.lerp, (A, _t(m, _B), 0.25), {}),
        "where": lambda m, A: (m.where, (_t(m, _M), A, _t(m, _B)), {}),
        "tril": lambda m, A: (m.tril, (A,), {}),
        "triu": lambda m, A: (m.triu, (A,), {}),
        "diag": lambda m, A: (m.diag, (A,), {}),
        "histc": lambda m, A: (m.histc, (A, 4, 0.0, 2.0), {}),
        "gather": lambda m, A: (m.gather, (A, 1, _t(m, _I)), {}),
        "take_along_dim": lambda m, A: (m.take_along_dim, (A, _t(m, _I), 1), {}),
        "index_select": lambda m, A: (m.index_select, (A, 1, _t(m, _I[0])), {}),
        "index_add": lambda m, A: (m.index_add, (A, 1, _t(m, _I[0]), _t(m, _B)), {}),
        "scatter": lambda m, A: (m.scatter, (A, 1, _t(m, _I), _t(m, _B)), {}),
        "masked_select": lambda m, A: (m.masked_select, (A, _t(m, _M)), {}),
        "nonzero": lambda m, A: (m.nonzero, (A,), {}),
        "bucketize": lambda m, A: (m.bucketize, (A, _t(m, np.float32([0.5, 1.0, 1.5]))), {}),
        "searchsorted": lambda m, A: (m.searchsorted,
                                      (_t(m, np.float32([0.5, 1.0, 1.5])), A), {}),
        "mm": lambda m, A: (m.mm, (A, _t(m, _B.T.copy())), {}),
        "matmul": lambda m, A: (m.matmul, (A, _t(m, _B.T.copy())), {}),
        "bmm": lambda m, A: (m.bmm, (A.unsqueeze(0), _t(m, _B.T.copy()).unsqueeze(0)), {}),
        "baddbmm": lambda m, A: (m.baddbmm, (m.zeros(1, 3, 3), A.unsqueeze(0),
                                             _t(m, _B.T.copy()).unsqueeze(0)), {}),
        "addmm": lambda m, A: (m.addmm, (m.zeros(3, 3), A, _t(m, _B.T.copy())), {}),
        "mv": lambda m, A: (m.mv, (A, _t(m, _B[0])), {}),
        "addmv": lambda m, A: (m.addmv, (m.zeros(3), A, _t(m, _B[0])), {}),
        "outer": lambda m, A: (m.outer, (A[0], _t(m, _B[0])), {}),
        "ger": lambda m, A: (m.ger, (A[0], _t(m, _B[0])), {}),
        "dot": lambda m, A: (m.dot, (A[0], _t(m, _B[0])), {}),
        "vdot": lambda m, A: (m.vdot, (A[0], _t(m, _B[0])), {}),
        "cat": lambda m, A: (m.cat, ([A, _t(m, _B)],), {}),
        "concat": lambda m, A: (m.concat, ([A, _t(m, _B)],), {}),
        "concatenate": lambda m, A: (m.concatenate, ([A, _t(m, _B)],), {}),
        "stack": lambda m, A: (m.stack, ([A, _t(m, _B)],), {}),
        "hstack": lambda m, A: (m.hstack, ([A, _t(m, _B)],), {}),
        "vstack": lambda m, A: (m.vstack, ([A, _t(m, _B)],), {}),
        "row_stack": lambda m, A: (m.row_stack, ([A, _t(m, _B)],), {}),
        "dstack": lambda m, A: (m.dstack, ([A, _t(m, _B)],), {}),
        "column_stack": lambda m, A: (m.column_stack, ([A, _t(m, _B)],), {}),
        "zeros": lambda m, A: (m.zeros, (3, 4), {}),
        "ones": lambda m, A: (m.ones, (3, 4), {}),
        "empty": lambda m, A: (m.empty, (3, 4), {}),
        "full": lambda m, A: (m.full, ((3, 4), 1.5), {}),
        "eye": lambda m, A: (m.eye, (3, 4), {}),
        "arange": lambda m, A: (m.arange, (0.0, 12.0), {}),
        "range": lambda m, A: (m.range, (0.0, 11.0), {}),
        "linspace": lambda m, A: (m.linspace, (0.0, 1.0, 12), {}),
        "logspace": lambda m, A: (m.logspace, (0.0, 1.0, 12), {}),
        "rand": lambda m, A: (m.rand, (3, 4), {}),
        "randn": lambda m, A: (m.randn, (3, 4), {}),
        "randint": lambda m, A: (m.randint, (0, 5, (3, 4)), {}),
        "randperm": lambda m, A: (m.randperm, (12,), {}),
        "normal": lambda m, A: (m.normal, (A, _t(m, _B)), {}),
        "bernoulli": lambda m, A: (m.bernoulli, (A / 2,), {}),
        "multinomial": lambda m, A: (m.multinomial, (A, 2), {}),
        "nn.functional.normalize": lambda m, A: (m.nn.functional.normalize, (A,), {"dim": 1}),
        "addcmul": lambda m, A: (m.addcmul, (A, _t(m, _B), A), {"value": 0.5}),
        "addcdiv": lambda m, A: (m.addcdiv, (A, _t(m, _B), A + 1), {"value": 0.5}),
        "addr": lambda m, A: (m.addr, (A, _t(m, _B[:, 0]), _t(m, _B[0])), {}),
        "addbmm": lambda m, A: (m.addbmm, (m.zeros(3, 3), A.unsqueeze(0),
                                           _t(m, _B.T.copy()).unsqueeze(0)), {}),
        "tensordot": lambda m, A: (m.tensordot, (A, _t(m, _B.T.copy()), 1), {}),
        "ldexp": lambda m, A: (m.ldexp, (A, _t(m, _I[:, :1].repeat(4, 1))), {}),
        "quantile": lambda m, A: (m.quantile, (A, 0.25, 1), {}),
        "nanquantile": lambda m, A: (m.nanquantile, (A, 0.75, 1), {}),
        "histogram": lambda m, A: (m.histogram, (A.reshape(-1), 4), {}),
        "frexp": lambda m, A: (m.frexp, (A,), {}),
        "gcd": lambda m, A: (m.gcd, (A.to(m.int64), _t(m, _I[:, :1].repeat(4, 1))), {}),
        "lcm": lambda m, A: (m.lcm, (A.to(m.int64), _t(m, _I[:, :1].repeat(4, 1))), {}),
    })
    return s


SAMPLES = _sample_table()

# torch reads the source while it writes self here, so self as the source gives an
# answer that depends on its loop order; ember refuses it.
ALIAS_DEPENDENT = {"masked_scatter_", "addmv_", "addbmm_", "baddbmm_"}

# ---------------------------------------------------------------------------
# in-place methods: name -> (call(S, O, m), has a tensor operand O)

INPLACE_UNARY = ("abs absolute acos acosh asin asinh atan atanh bitwise_not ceil cos cosh erf "
                 "erfc exp exp2 expm1 floor frac log log10 log1p log2 logical_not neg negative "
                 "reciprocal relu round rsqrt sigmoid sign silu sin sinh sqrt square tan tanh "
                 "trunc tril triu zero cauchy exponential log_normal normal uniform arccos "
                 "arccosh arcsin arcsinh arctan arctanh deg2rad rad2deg fix sgn sinc logit "
                 "nan_to_num lgamma mish t conj_physical").split()
INPLACE_BINARY = ("add sub subtract mul multiply div divide floor_divide remainder fmod pow "
                  "maximum minimum atan2 bitwise_and bitwise_or bitwise_xor bitwise_left_shift "
                  "bitwise_right_shift logical_and logical_or eq ne lt le gt ge copy arctan2 "
                  "copysign float_power greater greater_equal hypot less less_equal "
                  "logical_xor not_equal true_divide xlogy heaviside ldexp gcd lcm "
                  "set nextafter").split()


def _inplace_table():
    s = {}
    for n in INPLACE_UNARY:
        s[n + "_"] = (lambda S, O, m, n=n: getattr(S, n + "_")(), False)
    for n in INPLACE_BINARY:
        s[n + "_"] = (lambda S, O, m, n=n: getattr(S, n + "_")(O), True)
    idx = np.array([2, 0, 3, 1], np.int64)
    s.update({
        "clamp_": (lambda S, O, m: S.clamp_(0.5, 1.5), False),
        "clip_": (lambda S, O, m: S.clip_(0.5, 1.5), False),
        "fill_": (lambda S, O, m: S.fill_(1.5), False),
        "bernoulli_": (lambda S, O, m: S.bernoulli_(0.5), False),
        "geometric_": (lambda S, O, m: S.geometric_(0.5), False),
        "random_": (lambda S, O, m: S.random_(0, 5), False),
        "index_add_": (lambda S, O, m: S.index_add_(1, _t(m, idx), O), True),
        "index_copy_": (lambda S, O, m: S.index_copy_(1, _t(m, idx), O), True),
        "index_fill_": (lambda S, O, m: S.index_fill_(1, _t(m, idx[:2]), 1.5), False),
        "index_put_": (lambda S, O, m: S.index_put_((_t(m, idx[:3]) % 3,), O), True),
        "masked_fill_": (lambda S, O, m: S.masked_fill_(_t(m, _M), 1.5), False),
        "masked_scatter_": (lambda S, O, m: S.masked_scatter_(_t(m, _M), O), True),
        "put_": (lambda S, O, m: S.put_(_t(m, _I[0]), O[0]), True),
        "scatter_": (lambda S, O, m: S.scatter_(1, _t(m, _I), O), True),
        "scatter_add_": (lambda S, O, m: S.scatter_add_(1, _t(m, _I), O), True),
        "scatter_reduce_": (lambda S, O, m: S.scatter_reduce_(1, _t(m, _I), O, "sum"), True),
        "addcmul_": (lambda S, O, m: S.addcmul_(O, O, value=0.5), True),
        "addcdiv_": (lambda S, O, m: S.addcdiv_(O, O + 1, value=0.5), True),
        "addmm_": (lambda S, O, m: S.addmm_(O, O.t()[:4, :4]), True),
        "addmv_": (lambda S, O, m: S[0].addmv_(O.t(), O[:, 0]), True),
        "addr_": (lambda S, O, m: S.addr_(O[:, 0], O[0]), True),
        "addbmm_": (lambda S, O, m: S.addbmm_(O[:, :3].unsqueeze(0), O.unsqueeze(0)), True),
        # operands that are non-dense views of self are allowed (torch cannot judge them
        # either) and give loop-order-dependent answers in torch: fresh operands here
        "baddbmm_": (lambda S, O, m: S.unsqueeze(0).baddbmm_(O[:, :3].unsqueeze(0).clone(),
                                                            O.unsqueeze(0).clone()), False),
        "clamp_min_": (lambda S, O, m: S.clamp_min_(0.5), False),
        "clamp_max_": (lambda S, O, m: S.clamp_max_(1.5), False),
        "cumsum_": (lambda S, O, m: S.cumsum_(1), False),
        "cumprod_": (lambda S, O, m: S.cumprod_(1), False),
        "lerp_": (lambda S, O, m: S.lerp_(O, 0.25), True),
        "renorm_": (lambda S, O, m: S.renorm_(2, 0, 1.0), False),
        "index_reduce_": (lambda S, O, m: S.index_reduce_(1, _t(m, idx), O, "amax"), True),
        "fill_diagonal_": (lambda S, O, m: S.fill_diagonal_(1.5), False),
        "resize_": (lambda S, O, m: S.resize_(2, 2), False),   # grown memory is uninitialised
        "squeeze_": (lambda S, O, m: S.unsqueeze(0).squeeze_(0), False),
        "unsqueeze_": (lambda S, O, m: S.unsqueeze_(0), False),
        "transpose_": (lambda S, O, m: S.transpose_(0, 1), False),
        "swapaxes_": (lambda S, O, m: S.swapaxes_(0, 1), False),
        "swapdims_": (lambda S, O, m: S.swapdims_(0, 1), False),
        "as_strided_": (lambda S, O, m: S.as_strided_((2, 2), (1, 2)), False),
        "apply_": (lambda S, O, m: S.apply_(lambda v: v * 2), False),
        "resize_as_": (lambda S, O, m: S.resize_as_(O[:2, :2]), False),
        "map_": (lambda S, O, m: S.map_(O, lambda a, b: a + b), True),
    })
    return s


INPLACE = _inplace_table()


# ---------------------------------------------------------------------------
# the case generator


def _np(x):
    if isinstance(x, (tuple, list)):
        return [_np(v) for v in x]
    if hasattr(x, "detach"):
        x = x.detach()
    return np.asarray(x.numpy() if hasattr(x, "numpy") and not isinstance(x, ember.Tensor)
                      else x)


def _dt(m, np_dtype):
    return getattr(m, {np.float32: "float32", np.float64: "float64", np.int64: "int64",
                       np.bool_: "bool", np.int32: "int32"}[np_dtype])


def _np_dtype(r):
    return _np(r).dtype.type


def _buf(m, n, np_dtype):
    """A 1-d tensor of n distinct, positive values of np_dtype."""
    if np_dtype == np.bool_:
        return m.tensor(np.arange(n) % 3 == 0)
    return m.tensor((np.arange(n) % 7 + 1).astype(np_dtype) * (0.25 if np_dtype in (
        np.float32, np.float64) else 1))


def _zeros_like(m, r, np_dtype=None, expand=False):
    shape = tuple(r.shape)
    dt = _dt(m, np_dtype or _np_dtype(r))
    if expand:
        return m.zeros((1,) + shape[1:], dtype=dt).expand(*shape)
    return m.zeros(shape, dtype=dt)


_LOWER = {np.float32: np.int64, np.float64: np.int64, np.int64: np.bool_, np.int32: np.bool_}
_WIDER = {np.float32: np.float64, np.int64: np.float32, np.bool_: np.int64}
OUT_CASES = ("expanded", "badcast", "widecast", "partial_input", "same_input", "alias_input")
INPLACE_CASES = ("expanded", "partial_input", "self_operand", "badcast_int", "badcast_bool")


def _results(r):
    return list(r) if isinstance(r, (tuple, list)) else [r]


def _out_call(m, name, case):
    """A zero-argument callable doing the case with module m, or None if n/a."""
    A = _t(m, _A)
    fn, args, kw = SAMPLES[name](m, A)
    rs = _results(fn(*args, **kw))
    one = len(rs) == 1

    def call(outs, args=args):
        return fn(*args, out=outs[0] if one else tuple(outs), **kw)

    if case == "expanded":
        if not rs[0].dim() or rs[0].shape[0] < 2:
            return None
        return lambda: call([_zeros_like(m, r, expand=True) for r in rs])
    if case in ("badcast", "widecast"):
        table = _LOWER if case == "badcast" else _WIDER
        if _np_dtype(rs[0]) not in table:
            return None
        return lambda: call([_zeros_like(m, rs[0], table[_np_dtype(rs[0])])] +
                            [_zeros_like(m, r) for r in rs[1:]])
    if case == "partial_input" or case == "alias_input":
        if _np_dtype(rs[0]) != np.float32 or name in ("searchsorted", "where"):
            return None
        n = int(np.prod(rs[0].shape))
        buf = _buf(m, max(n, 13), np.float32)
        if case == "partial_input":
            A2, out = buf[1:13].view(3, 4), buf[:n].view(tuple(rs[0].shape))
        else:
            if tuple(rs[0].shape) != (3, 4):
                return None
            A2, out = buf[:12].view(3, 4), buf[:12].view(3, 4)
        _, args2, _ = SAMPLES[name](m, A2)
        return lambda: (call([out] + [_zeros_like(m, r) for r in rs[1:]], args2), buf)
    if case == "same_input":
        if _np_dtype(rs[0]) != np.float32 or tuple(rs[0].shape) != (3, 4) or \
                name in ("searchsorted", "where"):
            return None
        A2 = _t(m, _A)
        _, args2, _ = SAMPLES[name](m, A2)
        return lambda: call([A2] + [_zeros_like(m, r) for r in rs[1:]], args2)
    raise AssertionError(case)


def _inplace_call(m, name, case):
    fn, has_operand = INPLACE[name]
    O = _t(m, _B)
    if case == "expanded":
        return lambda: fn(m.zeros(1, 4).expand(3, 4), O, m)
    if case == "partial_input":
        if not has_operand:
            return None
        buf = _buf(m, 13, np.float32)
        return lambda: (fn(buf[1:13].view(3, 4), buf[:12].view(3, 4), m), buf)
    if case == "self_operand":
        if not has_operand:
            return None
        S = _buf(m, 12, np.float32).view(3, 4)
        return lambda: fn(S, S, m)
    if case == "badcast_int":
        S = _buf(m, 12, np.int64).view(3, 4)
        return lambda: fn(S, O, m)
    if case == "badcast_bool":
        S = _buf(m, 12, np.bool_).view(3, 4)
        return lambda: fn(S, _buf(m, 12, np.int64).view(3, 4), m)
    raise AssertionError(case)


def _outcome(make):
    """(exception type or None, numpy result) of running make() then its callable."""
    try:
        f = make()
    except Exception as e:  # the setup itself failed
        return ("setup", type(e)), None
    if f is None:
        return ("n/a", None), None
    try:
        r = f()
    except Exception as e:
        return ("raise", type(e)), e
    return ("ok", None), _np(r)


NA = "not applicable"


def _builtin_base(tp):
    for k in tp.__mro__:
        if k.__module__ == "builtins":
            return k
    return Exception


def _unsupported_by_torch(e):
    """torch has no such method, or no out= for this function: nothing to compare."""
    return isinstance(e, AttributeError) or (
        isinstance(e, TypeError) and "unexpected keyword argument 'out'" in str(e))


def compare(torch, kind, name, case):
    """None when ember behaves like torch; else a description of the difference."""
    mk = _out_call if kind == "out" else _inplace_call
    (ts, tt), tv = _outcome(lambda: mk(torch, name, case))
    (es, et), ev = _outcome(lambda: mk(ember, name, case))
    if ts in ("setup", "n/a") or (ts == "raise" and _unsupported_by_torch(tv)):
        return NA
    if ts == "ok" and es == "raise" and (case in ("expanded", "partial_input") or (
            case == "self_operand" and name in ALIAS_DEPENDENT)) and \
            et is RuntimeError and "single memory location" in str(ev):
        return None  # torch writes through the overlap; its answer is ill-defined
    if ts == "raise":
        if es == "raise" and issubclass(et, _builtin_base(tt)):
            return None
        return f"torch raises {tt.__name__}({tv}); ember: {es} {et.__name__ if et else ''}"
    if es != "ok":
        return f"torch ok; ember: {es} {et.__name__}({ev})"
    if name in RANDOM:
        return None
    for a, b in zip(_results(tv), _results(ev)):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape or not np.allclose(a.astype(np.float64), b.astype(np.float64),
                                                 rtol=1e-4, atol=1e-5, equal_nan=True):
            return f"values differ: torch {a.tolist()} ember {b.tolist()}"
    return None


# ---------------------------------------------------------------------------
# dims: out of range, repeated, or on a 0-d tensor

_X = np.arange(12, dtype=np.float32).reshape(3, 4)
DIM_CASES = [
   ("movedim 4,5", lambda m, x: x.movedim(4, 5)),
   ("movedim 0,2", lambda m, x: x.movedim(0, 2)),
   ("movedim -3,0", lambda m, x: x.movedim(-3, 0)),
   ("movedim dup src", lambda m, x: x.movedim((0, 0), (0, 1))),
   ("movedim dup dst", lambda m, x: x.movedim((0, 1), (1, 1))),
   ("movedim len", lambda m, x: x.movedim((0, 1), (1,))),
   ("permute dup", lambda m, x: x.permute(0, 0)),
   ("permute oob", lambda m, x: x.permute(0, 2)),
   ("permute -3", lambda m, x: x.permute(-3, 0)),
   ("flip dup", lambda m, x: x.flip(0, 0)),
   ("flip oob", lambda m, x: x.flip(2)),
   ("flip dup neg", lambda m, x: m.flip(x, (1, -1))),
   ("sum dup", lambda m, x: x.sum((0, 0))),
   ("sum dup neg", lambda m, x: x.sum((1, -1))),
   ("sum oob", lambda m, x: x.sum(2)),
   ("mean dup", lambda m, x: x.mean((0, 0))),
   ("amax dup", lambda m, x: x.amax((0, 0))),
   ("amin oob", lambda m, x: x.amin(5)),
   ("std dup", lambda m, x: x.std((1, 1))),
   ("var oob", lambda m, x: x.var(3)),
   ("prod oob", lambda m, x: x.prod(2)),
   ("nansum dup", lambda m, x: m.nansum(x, (0, 0))),
   ("logsumexp dup", lambda m, x: m.logsumexp(x, (0, 0))),
   ("norm dup", lambda m, x: m.norm(x, dim=(0, 0))),
   ("count_nonzero dup", lambda m, x: m.count_nonzero(x, (0, 0))),
   ("all dup", lambda m, x: m.all(x, (0, 0))),
   ("any oob", lambda m, x: m.any(x, 2)),
   ("transpose oob", lambda m, x: x.transpose(0, 2)),
   ("squeeze oob", lambda m, x: x.squeeze(2)),
   ("squeeze dup", lambda m, x: x.squeeze((0, 0))),
   ("unsqueeze oob", lambda m, x: x.unsqueeze(3)),
   ("unsqueeze -4", lambda m, x: x.unsqueeze(-4)),
   ("narrow oob", lambda m, x: x.narrow(2, 0, 1)),
   ("select oob", lambda m, x: x.select(2, 0)),
   ("cumsum oob", lambda m, x: x.cumsum(2)),
   ("cumprod -3", lambda m, x: x.cumprod(-3)),
   ("softmax oob", lambda m, x: x.softmax(2)),
   ("log_softmax oob", lambda m, x: x.log_softmax(-3)),
   ("diagonal same", lambda m, x: x.diagonal(0, 0, 0)),
   ("diagonal oob", lambda m, x: x.diagonal(0, 0, 2)),
   ("unbind oob", lambda m, x: x.unbind(2)),
   ("split oob", lambda m, x: x.split(1, 2)),
   ("chunk oob", lambda m, x: x.chunk(2, 2)),
   ("roll oob", lambda m, x: x.roll(1, 2)),
   ("flatten oob", lambda m, x: x.flatten(2)),
   ("flatten rev", lambda m, x: x.flatten(1, 0)),
   ("unflatten oob", lambda m, x: x.unflatten(2, (1, 1))),
   ("argmax oob", lambda m, x: x.argmax(2)),
   ("topk oob", lambda m, x: x.topk(1, 2)),
   ("sort oob", lambda m, x: x.sort(2)),
   ("argsort oob", lambda m, x: x.argsort(2)),
   ("kthvalue oob", lambda m, x: x.kthvalue(1, 2)),
   ("median oob", lambda m, x: x.median(2)),
   ("mode oob", lambda m, x: x.mode(2)),
   ("cummax oob", lambda m, x: x.cummax(2)),
   ("logcumsumexp oob", lambda m, x: x.logcumsumexp(2)),
   ("gather oob", lambda m, x: x.gather(2, m.zeros(3, 4, dtype=m.int64))),
   ("index_select oob", lambda m, x: x.index_select(2, m.zeros(1, dtype=m.int64))),
   ("repeat_interleave oob", lambda m, x: x.repeat_interleave(2, dim=2)),
   ("cat oob", lambda m, x: m.cat([x, x], 2)),
   ("stack oob", lambda m, x: m.stack([x, x], 3)),
   ("stack -4", lambda m, x: m.stack([x, x], -4)),
   ("size oob", lambda m, x: x.size(2)),
   ("stride oob", lambda m, x: x.stride(2)),
   ("aminmax oob", lambda m, x: m.aminmax(x, dim=2)),
   ("var_mean dup", lambda m, x: m.var_mean(x, (0, 0))),
   ("unique dim oob", lambda m, x: m.unique(x, dim=2)),
   ("softmax F", lambda m, x: m.nn.functional.softmax(x, dim=2)),
   ("normalize", lambda m, x: m.nn.functional.normalize(x, dim=2)),
   ("cosine_similarity", lambda m, x: m.nn.functional.cosine_similarity(x, x, dim=2)),
   ("glu", lambda m, x: m.nn.functional.glu(x, dim=2)),
   ("scatter oob", lambda m, x: x.scatter(2, m.zeros(3, 4, dtype=m.int64), 1.0)),
   ("index_add oob", lambda m, x: x.index_add(2, m.zeros(1, dtype=m.int64), x[:, :1])),
   ("index_fill oob", lambda m, x: x.index_fill(2, m.zeros(1, dtype=m.int64), 1.0)),
   ("take_along_dim oob", lambda m, x: m.take_along_dim(x, m.zeros(3, 4, dtype=m.int64), 2)),
   ("diag_embed dup", lambda m, x: m.diag_embed(x, 0, 1, 1)),
   ("tril 1d", lambda m, x: x[0].tril()),
   ("swapaxes oob", lambda m, x: x.swapaxes(0, 2)),
   ("expand fewer", lambda m, x: x.expand(4)),
   ("unfold oob", lambda m, x: x.unfold(2, 1, 1)),
   ("max oob", lambda m, x: x.max(2)),
   ("min -3", lambda m, x: x.min(-3)),
   ("cummin dup", lambda m, x: x.cummin(-3)),
   ("nanmean dup", lambda m, x: m.nanmean(x, (0, 0))),
   ("mean list dup", lambda m, x: x.mean([1, 1])),
   ("sum dim 0-d", lambda m, x: x[0, 0].sum(1)),
   ("0-d transpose", lambda m, x: x[0, 0].transpose(0, 1)),
   ("0-d movedim", lambda m, x: x[0, 0].movedim(0, 1)),
   ("0-d flip", lambda m, x: x[0, 0].flip(1)),
   ("0-d permute", lambda m, x: x[0, 0].permute(1)),
   ("0-d unsqueeze", lambda m, x: x[0, 0].unsqueeze(2)),
   ("0-d cumsum", lambda m, x: x[0, 0].cumsum(1)),
   ("0-d softmax", lambda m, x: x[0, 0].softmax(1)),
   ("movedim ok", lambda m, x: x.movedim((0, 1), (1, 0))),
   ("movedim neg ok", lambda m, x: x.unsqueeze(0).movedim(-1, 0)),
   ("squeeze tuple ok", lambda m, x: x.unsqueeze(0).squeeze((0, -1))),
   ("flip neg ok", lambda m, x: x.flip(-1)),
]


def compare_dims(torch, fn):
    (ts, tt), tv = _outcome(lambda: (lambda: fn(torch, torch.tensor(_X))))
    (es, et), ev = _outcome(lambda: (lambda: fn(ember, ember.tensor(_X))))
    if ts == "raise":
        if es == "raise" and issubclass(et, _builtin_base(tt)):
            return None
        return f"torch raises {tt.__name__}({tv}); ember: {es} {et.__name__ if et else ''}"
    if es != "ok":
        return f"torch ok; ember: {es} {et.__name__}({ev})"
    for a, b in zip(_results(tv), _results(ev)):
        if np.asarray(a).shape != np.asarray(b).shape or not np.allclose(a, b, equal_nan=True):
            return f"values differ: torch {np.asarray(a).tolist()} ember {np.asarray(b).tolist()}"
    return None


# ---------------------------------------------------------------------------
# the generated cases, torch as the oracle

OUT_PARAMS = [(n, c) for n in sorted(SAMPLES) for c in OUT_CASES]
INPLACE_PARAMS = [(n, c) for n in sorted(INPLACE) for c in INPLACE_CASES]


def _check_case(kind, name, case):
    torch = pytest.importorskip("torch")
    diff = compare(torch, kind, name, case)
    if diff is NA:
        pytest.skip("the case does not apply to this op")
    assert diff is None, diff


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name,case", OUT_PARAMS)
def test_out_like_torch(name, case):
    _check_case("out", name, case)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name,case", INPLACE_PARAMS)
def test_inplace_like_torch(name, case):
    _check_case("inplace", name, case)


@pytest.mark.parametrize("label,fn", DIM_CASES, ids=[c[0] for c in DIM_CASES])
def test_dims_like_torch(label, fn):
    torch = pytest.importorskip("torch")
    diff = compare_dims(torch, fn)
    assert diff is None, diff


def test_generator_covers_every_writing_api():
    """A new op with out= or a new in-place method must get a sample here."""
    import inspect

    outs = set()
    for mod, prefix in ((ember, ""), (ember.nn.functional, "nn.functional.")):
        for n in dir(mod):
            f = getattr(mod, n)
            if n.startswith("_") or not callable(f) or isinstance(f, type):
                continue
            try:
                if "out" in inspect.signature(f).parameters:
                    outs.add(prefix + n)
            except (TypeError, ValueError):
                pass
    assert outs - set(SAMPLES) == set()
    inplace = {n for n in dir(ember.Tensor) if n.endswith("_") and not n.startswith("_")}
    assert inplace - set(INPLACE) == {"detach_", "requires_grad_"}   # they write no data


# ---------------------------------------------------------------------------
# the reproducers, without torch

INTERNAL = "more than one element of the written-to tensor"
PARTIAL = "some elements of the input tensor and the written-to tensor"


def test_expanded_out_is_refused():
    a = ember.ones(3, 4)
    with pytest.raises(RuntimeError, match=INTERNAL):
        ember.add(a, 1, out=ember.zeros(1, 4).expand(3, 4))
    with pytest.raises(RuntimeError, match=INTERNAL):
        ember.exp(a, out=ember.zeros(1, 4).expand(3, 4))
    with pytest.raises(RuntimeError, match=INTERNAL):
        ember.mm(ember.ones(3, 2), ember.ones(2, 4), out=ember.zeros(1, 4).expand(3, 4))
    # a broadcast (stride 0) size-1 dim writes each element once: allowed
    r = ember.add(ember.ones(1, 4), 1, out=ember.zeros(4).expand(1, 4))
    assert r.tolist() == [[2.0] * 4]


def test_inplace_on_expanded_is_refused():
    for op in (lambda t: t.add_(1), lambda t: t.sqrt_(), lambda t: t.mul_(ember.ones(3, 4)),
               lambda t: t.uniform_(), lambda t: t.copy_(ember.ones(3, 4)),
               lambda t: t.clamp_(0, 1), lambda t: t.eq_(0)):
        with pytest.raises(RuntimeError, match=INTERNAL):
            op(ember.zeros(1, 4).expand(3, 4))
    # fill_/zero_ write one value everywhere: allowed, as in torch
    assert ember.zeros(1, 4).expand(3, 4).fill_(2.0).tolist() == [[2.0] * 4] * 3


def test_partial_overlap_is_refused():
    a = ember.arange(6.0)
    with pytest.raises(RuntimeError, match=PARTIAL):
        a[1:].add_(a[:-1])
    with pytest.raises(RuntimeError, match=PARTIAL):
        ember.add(a[1:], 1, out=a[:-1])
    with pytest.raises(RuntimeError, match=PARTIAL):
        a.add_(a[0])
    with pytest.raises(RuntimeError, match=PARTIAL):
        a[1:].copy_(a[:-1])
    with pytest.raises(RuntimeError, match=PARTIAL):
        a[1:] = a[:-1]
    with pytest.raises(RuntimeError, match=PARTIAL):
        ember.cumsum(a[1:], 0, out=a[:-1])
    m = ember.arange(9.0).view(3, 3)
    with pytest.raises(RuntimeError, match=PARTIAL):
        m.add_(m.t())
    with pytest.raises(RuntimeError, match=PARTIAL):
        ember.cat([a[:3], a[3:]], out=a)
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]   # nothing was written


def test_full_and_no_overlap_stay_allowed():
    a = ember.arange(6.0)
    assert a.add_(a).tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    assert ember.mul(a, a, out=a).tolist() == [0.0, 4.0, 16.0, 36.0, 64.0, 100.0]
    assert ember.neg(a, out=a).tolist() == [-0.0, -4.0, -16.0, -36.0, -64.0, -100.0]
    b = ember.arange(6.0)
    b[:3].add_(b[3:])                        # same storage, disjoint halves
    assert b.tolist() == [3.0, 5.0, 7.0, 3.0, 4.0, 5.0]
    c = ember.arange(4.0)
    c.view(2, 2).add_(c.view(2, 2))          # another view object of the same memory
    assert c.tolist() == [0.0, 2.0, 4.0, 6.0]


def test_uncastable_result_is_refused():
    f = ember.tensor([1.5, 2.5])
    i = ember.tensor([1, 2])
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        ember.pow(f, f, out=ember.zeros(2, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        i.add_(1.5)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        i.div_(2)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        i.sqrt_()
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Bool"):
        ember.tensor([True]).add_(1)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        i.clamp_(0.5)
    with pytest.raises(RuntimeError):
        ember.abs(f, out=ember.zeros(2, dtype=ember.float64))   # abs wants its own dtype
    with pytest.raises(TypeError, match="can't be cast"):
        ember.cat([f, f], out=ember.zeros(4, dtype=ember.int64))
    assert i.tolist() == [1, 2]                                 # nothing was written
    # widening is allowed; integer results into integer tensors too
    assert ember.add(f, 1, out=ember.zeros(2, dtype=ember.float64)).tolist() == [2.5, 3.5]
    assert i.add_(2).tolist() == [3, 4]
    assert ember.eq(f, 1.5, out=ember.zeros(2)).tolist() == [1.0, 0.0]


def test_out_dtype_drives_reductions_and_samplers():
    f = ember.tensor([[1.5, 2.5], [0.5, 0.75]])
    # torch sums in out's dtype: the elements are truncated first
    assert ember.sum(f, 1, out=ember.zeros(2, dtype=ember.int64)).tolist() == [3, 0]
    assert ember.cumsum(f, 1, out=ember.zeros(2, 2, dtype=ember.int64)).tolist() == [[1, 3],
                                                                                     [0, 0]]
    with pytest.raises(NotImplementedError):
        ember.rand(2, out=ember.zeros(2, dtype=ember.int64))
    r = ember.randint(0, 5, (3,), out=ember.zeros(3, dtype=ember.int32))
    assert r.dtype == ember.int32 and all(0 <= v < 5 for v in r.tolist())


def test_pair_outs_are_checked():
    x = ember.tensor([[3.0, 1.0, 2.0]])
    v, i = ember.zeros(1, 3), ember.zeros(1, 3, dtype=ember.int64)
    r = ember.sort(x, 1, out=(v, i))
    assert r.values is v and v.tolist() == [[1.0, 2.0, 3.0]] and i.tolist() == [[1, 2, 0]]
    with pytest.raises(RuntimeError):
        ember.sort(x, 1, out=(v, ember.zeros(1, 3, dtype=ember.int32)))
    v2, i2 = ember.zeros(1), ember.zeros(1, dtype=ember.int64)
    ember.topk(x, 1, 1, out=(v2.view(1, 1), i2.view(1, 1)))
    ember.kthvalue(x, 1, 1, out=(v2, i2))
    assert v2.tolist() == [1.0] and i2.tolist() == [1]


def test_movedim_checks_its_dims():
    x = ember.zeros(2, 3)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.movedim(4, 5)
    with pytest.raises(IndexError):
        x.movedim(0, -3)
    with pytest.raises(RuntimeError, match="repeated dim"):
        x.movedim((0, 1), (1, 1))
    with pytest.raises(RuntimeError, match="same number of dims"):
        x.movedim((0, 1), (1,))
    with pytest.raises(RuntimeError, match="appears multiple times"):
        x.unsqueeze(0).squeeze((0, 0))
    assert tuple(ember.zeros(2, 3, 4).movedim(-1, 0).shape) == (4, 2, 3)
