"""The op test database: one entry per op, read by the generic tests in test_ops.py.

An entry gives sample inputs (NumPy arrays, so the same data reaches ember and
torch), the dtypes the samples are made in, whether gradients are compared, and
error inputs that must raise the same exception type as torch. The op's variants
(function, method, in-place, aliases) come from its declaration in ember/_ops.py.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np


@dataclass
class Sample:
    arrays: tuple            # tensor arguments, as NumPy arrays (positional, first)
    args: tuple = ()         # further positional arguments (numbers, tuples)
    kwargs: dict = field(default_factory=dict)
    noncontig: bool = False  # pass the tensors as transposed views of transposed copies


@dataclass
class OpInfo:
    name: str
    samples: Callable        # samples(rng, dtype) -> list[Sample]
    dtypes: tuple = ("float32", "float64")
    grad: bool = True
    ref: str | None = None   # torch's name, when it differs
    inplace_dtypes: tuple | None = None   # dtypes whose in-place form keeps self's dtype
    errors: Callable | None = None        # errors() -> list[Sample]
    method_self: int = 0                  # which tensor is ``self`` in the method form
    rtol: float = 1e-5
    atol: float = 1e-6
    forward_ad: bool = True               # tangents (forward-mode AD) compared with torch's


def _r(rng, *shape, dtype="float32", lo=-2.0, hi=2.0):
    if np.dtype(dtype).kind == "b":
        return rng.random(shape) > 0.5
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-5 if np.dtype(dtype).kind == "i" else 0, 6, shape).astype(dtype)
    return rng.uniform(lo, hi, shape).astype(dtype)


def _unary_samples(lo=-2.0, hi=2.0):
    def samples(rng, dt):
        return [Sample((_r(rng, 3, 4, dtype=dt, lo=lo, hi=hi),)),
                Sample((_r(rng, 4, 3, dtype=dt, lo=lo, hi=hi),), noncontig=True),
                Sample((_r(rng, dtype=dt, lo=lo, hi=hi),)),           # 0-dim
                Sample((_r(rng, 0, 3, dtype=dt, lo=lo, hi=hi),))]     # empty
    return samples


def _binary_samples(lo=-2.0, hi=2.0, lo2=None, hi2=None):
    lo2 = lo if lo2 is None else lo2
    hi2 = hi if hi2 is None else hi2

    def samples(rng, dt):
        return [Sample((_r(rng, 3, 4, dtype=dt, lo=lo, hi=hi),
                        _r(rng, 3, 4, dtype=dt, lo=lo2, hi=hi2))),
                Sample((_r(rng, 3, 4, dtype=dt, lo=lo, hi=hi),
                        _r(rng, 4, dtype=dt, lo=lo2, hi=hi2))),               # broadcast
                Sample((_r(rng, 4, 3, dtype=dt, lo=lo, hi=hi),
                        _r(rng, 4, 3, dtype=dt, lo=lo2, hi=hi2)), noncontig=True),
                Sample((_r(rng, 0, 4, dtype=dt, lo=lo, hi=hi),
                        _r(rng, 4, dtype=dt, lo=lo2, hi=hi2)))]
    return samples


def _ternary(rng, dt):
    return [Sample((_r(rng, 3, 4, dtype=dt), _r(rng, 3, 4, dtype=dt),
                    _r(rng, 4, dtype=dt, lo=0.5, hi=2.0)), kwargs={"value": 0.5}),
            Sample((_r(rng, 4, dtype=dt), _r(rng, 3, 1, dtype=dt),
                    _r(rng, 3, 4, dtype=dt, lo=0.5, hi=2.0))),
            Sample((_r(rng, 4, 3, dtype=dt), _r(rng, 4, 3, dtype=dt),
                    _r(rng, 4, 3, dtype=dt, lo=0.5, hi=2.0)), noncontig=True)]


def _view(shape, *args_list, **kw):
    def samples(rng, dt):
        out = [Sample((_r(rng, *shape, dtype=dt),), args=a, kwargs=kw) for a in args_list]
        out.append(Sample((_r(rng, *shape, dtype=dt),), args=args_list[0], kwargs=kw,
                          noncontig=True))
        return out
    return samples


OPS = [
    # -- math composed from other ops
    OpInfo("addcmul", _ternary, dtypes=("float32", "float64", "int64"),
           inplace_dtypes=("float32", "float64")),
    OpInfo("addcdiv", _ternary,
           errors=lambda: [Sample((np.ones(2, np.float32), np.ones(2, np.int64),
                                   np.ones(2, np.int64)))]),
    OpInfo("deg2rad", _unary_samples(-360, 360), dtypes=("float32", "float64", "int64"),
           inplace_dtypes=("float32", "float64")),
    OpInfo("rad2deg", _unary_samples(), dtypes=("float32", "float64", "int64"),
           inplace_dtypes=("float32", "float64")),
    OpInfo("sinc", _unary_samples(), atol=1e-5),
    OpInfo("logit", _unary_samples(0.05, 0.95)),
    OpInfo("logit", _view((3, 4), (0.1,)), rtol=1e-4),
    # torch's ldexp gradient computes 2 ** other in integers (0 for negative exponents):
    # the gradient is checked against NumPy in test_ops.py instead
    OpInfo("ldexp", lambda rng, dt: [Sample((_r(rng, 3, 4, dtype=dt),
                                             _r(rng, 3, 4, dtype="int64")))], grad=False),
    OpInfo("logaddexp2", _binary_samples()),
    OpInfo("heaviside", lambda rng, dt: [Sample((np.array([-1.5, 0, 2, 0], dt),
                                                 np.array([0.5, 0.25, 3, 7], dt)))],
           grad=False, dtypes=("float32", "int64"),
           errors=lambda: [Sample((np.ones(2, np.float32), np.ones(2, np.float64)))]),
    OpInfo("isposinf", lambda rng, dt: [Sample((np.array([np.inf, -np.inf, np.nan, 1.0],
                                                         dt),))], grad=False),
    OpInfo("isneginf", lambda rng, dt: [Sample((np.array([np.inf, -np.inf, np.nan, 1.0],
                                                         dt),))], grad=False),
    OpInfo("isreal", _unary_samples(), grad=False, dtypes=("float32", "int64", "bool")),
    OpInfo("nan_to_num", lambda rng, dt: [
        Sample((np.array([np.nan, np.inf, -np.inf, 1.5], dt),)),
        Sample((np.array([np.nan, np.inf, -np.inf, 1.5], dt),), args=(2.0, 9.0, -9.0))]),
    OpInfo("fill", lambda rng, dt: [Sample((_r(rng, 3, 2, dtype=dt),), args=(1.5,))],
           grad=False, dtypes=("float32", "int64"),
           errors=lambda: [Sample((np.ones(2, np.float32), np.ones(2, np.float32)))]),
    OpInfo("trace", _view((4, 3), ()), dtypes=("float32", "float64", "int64"),
           errors=lambda: [Sample((np.ones((2, 2, 2), np.float32),))]),
    OpInfo("inner", lambda rng, dt: [Sample((_r(rng, 2, 3, dtype=dt), _r(rng, 4, 3, dtype=dt))),
                                     Sample((_r(rng, 3, dtype=dt), _r(rng, 3, dtype=dt))),
                                     Sample((_r(rng, dtype=dt), _r(rng, 2, 3, dtype=dt)))],
           rtol=1e-4, atol=1e-5,
           errors=lambda: [Sample((np.ones((2, 3), np.float32), np.ones((2, 4), np.float32)))]),
    OpInfo("kron", lambda rng, dt: [Sample((_r(rng, 2, 3, dtype=dt), _r(rng, 3, 2, dtype=dt))),
                                    Sample((_r(rng, 3, dtype=dt), _r(rng, 2, 2, dtype=dt)))],
           dtypes=("float32", "int64")),
    OpInfo("diff", lambda rng, dt: [Sample((_r(rng, 3, 5, dtype=dt),)),
                                    Sample((_r(rng, 3, 5, dtype=dt),), args=(2, 0)),
                                    Sample((_r(rng, 4, 3, dtype=dt),), noncontig=True)],
           dtypes=("float32", "int64", "bool"),
           errors=lambda: [Sample((np.float32(1.0),))]),
    # -- function forms of view / split ops that were methods only
    OpInfo("permute", _view((2, 3, 4), ((2, 0, 1),), ((0, 1, 2),))),
    OpInfo("squeeze", _view((2, 1, 3), (), (1,))),
    OpInfo("unsqueeze", _view((2, 3), (0,), (-1,))),
    OpInfo("flatten", _view((2, 3, 4), (), (1,), (0, 1))),
    OpInfo("transpose", _view((2, 3, 4), (0, 2), (-1, 1))),
    OpInfo("swapaxes", _view((2, 3, 4), (0, 2))),
    OpInfo("swapdims", _view((2, 3, 4), (1, 2))),
    OpInfo("movedim", _view((2, 3, 4), (0, 2), ((0, 1), (2, 0)))),
    OpInfo("moveaxis", _view((2, 3, 4), (0, -1))),
    OpInfo("t", _view((2, 3), ())),
    OpInfo("broadcast_to", _view((3, 1), ((2, 3, 4),))),
    OpInfo("diagonal", _view((3, 4), (), (1,), (-1, 1, 0))),
    OpInfo("narrow", _view((4, 5), (0, 1, 2), (1, 2, 3))),
    OpInfo("narrow_copy", _view((4, 5), (0, 1, 2), (1, 2, 3), (-1, 4, 1)),
           errors=lambda: [Sample((np.ones((3, 4), np.float32),), args=(1, 3, 2))]),
    OpInfo("select", _view((4, 5), (0, 1), (1, -1))),
    OpInfo("split", _view((6, 4), (2,), ([1, 5],), (3, 1))),
    OpInfo("split_with_sizes", _view((6, 4), ([2, 4],))),
    OpInfo("chunk", _view((7, 4), (3,), (2, 1))),
    OpInfo("tensor_split", _view((7, 4), (3,), ([1, 4],))),
    OpInfo("unbind", _view((3, 4), (), (1,))),
    OpInfo("unflatten", _view((6, 4), (0, (2, 3)))),
    OpInfo("ravel", _view((3, 4), ())),
    OpInfo("reshape", _view((3, 4), ((2, 6),), ((-1,),))),
    OpInfo("clone", _view((3, 4), ())),
    OpInfo("detach", _view((3, 4), ()), grad=False),
    OpInfo("as_strided", _view((3, 4), ((2, 2), (1, 2)), ((3,), (4,), 1))),
    # -- existing ops whose in-place forms are now generated
    OpInfo("cumsum", _view((3, 4), (0,), (1,))),
    OpInfo("cumprod", _view((3, 4), (1,))),
    OpInfo("lgamma", _unary_samples(0.5, 4.0), rtol=1e-4),
    OpInfo("hypot", _binary_samples()),
    OpInfo("copysign", _binary_samples()),
    OpInfo("xlogy", _binary_samples(-1, 2, 0.1, 3)),
    OpInfo("float_power", _binary_samples(0.5, 2.0), dtypes=("float64",)),
    OpInfo("clamp_min", _view((3, 4), (0.1,))),
    OpInfo("clamp_max", _view((3, 4), (0.1,))),
    OpInfo("logical_xor", _binary_samples(), grad=False, dtypes=("bool",)),
    OpInfo("lerp", lambda rng, dt: [Sample((_r(rng, 3, 4, dtype=dt), _r(rng, 3, 4, dtype=dt)),
                                           args=(0.3,))]),
    OpInfo("true_divide", _binary_samples(0.5, 2.0)),
    OpInfo("where", lambda rng, dt: [Sample((_r(rng, 3, 4, dtype="bool"), _r(rng, 3, 4, dtype=dt),
                                             _r(rng, 4, dtype=dt)))], method_self=1),
    # -- statistics
    OpInfo("quantile", lambda rng, dt: [
        Sample((_r(rng, 4, 7, dtype=dt),), args=(0.3,)),
        Sample((_r(rng, 4, 7, dtype=dt),), args=(0.75, 1, True)),
        Sample((_r(rng, 4, 7, dtype=dt),), args=(0.5, 0), kwargs={"interpolation": "midpoint"}),
        Sample((_r(rng, 4, 7, dtype=dt),), args=(0.2, -1), kwargs={"interpolation": "nearest"}),
        Sample((_r(rng, 7, 4, dtype=dt),), args=(0.9, 1), kwargs={"interpolation": "lower"},
               noncontig=True)],
        errors=lambda: [Sample((np.ones(3, np.float32),), args=(1.5,)),
                        Sample((np.ones(3, np.int64),), args=(0.5,)),
                        Sample((np.ones(0, np.float32),), args=(0.5,))]),
    OpInfo("nanquantile", lambda rng, dt: [
        Sample((np.where(rng.random((4, 7)) > 0.7, np.nan, _r(rng, 4, 7, dtype=dt)).astype(dt),),
               args=(0.4, 1)),
        Sample((_r(rng, 4, 7, dtype=dt),), args=(0.6,), kwargs={"interpolation": "higher"})]),
    OpInfo("cov", lambda rng, dt: [Sample((_r(rng, 3, 8, dtype=dt),)),
                                   Sample((_r(rng, 8, dtype=dt),)),
                                   Sample((_r(rng, 3, 8, dtype=dt),), kwargs={"correction": 0}),
                                   Sample((_r(rng, 8, 3, dtype=dt),), noncontig=True)],
           rtol=1e-4, atol=1e-5,
           errors=lambda: [Sample((np.ones((2, 2, 2), np.float32),))]),
    OpInfo("corrcoef", lambda rng, dt: [Sample((_r(rng, 3, 8, dtype=dt),))], rtol=1e-4,
           atol=1e-5),
    # -- structure
    OpInfo("rot90", _view((3, 4), (), (1, (0, 1)), (2, (1, 0)), (-1, (0, 1)), (3, (1, 0))),
           errors=lambda: [Sample((np.ones(3, np.float32),)),
                           Sample((np.ones((2, 2), np.float32),), args=(1, (0, 0)))]),
    # torch's vander cannot be differentiated (an in-place cumprod): checked in test_ops.py
    OpInfo("vander", lambda rng, dt: [Sample((_r(rng, 4, dtype=dt),)),
                                      Sample((_r(rng, 4, dtype=dt),), args=(3, True))],
           dtypes=("float32", "int64"), grad=False,
           errors=lambda: [Sample((np.ones((2, 2), np.float32),))]),
    OpInfo("tensordot", lambda rng, dt: [
        Sample((_r(rng, 2, 3, 4, dtype=dt), _r(rng, 3, 4, 5, dtype=dt))),
        Sample((_r(rng, 2, 3, dtype=dt), _r(rng, 3, 4, dtype=dt)), args=(1,)),
        Sample((_r(rng, 2, 3, 4, dtype=dt), _r(rng, 4, 2, dtype=dt)), args=(([0, 2], [1, 0]),))],
        rtol=1e-4, atol=1e-5,
        errors=lambda: [Sample((np.ones((2, 3), np.float32), np.ones((4, 5), np.float32)),
                               args=(1,))]),
    OpInfo("block_diag", lambda rng, dt: [Sample((_r(rng, 2, 3, dtype=dt), _r(rng, 2, dtype=dt),
                                                  _r(rng, dtype=dt)))],
           dtypes=("float32", "int64")),
    OpInfo("cartesian_prod", lambda rng, dt: [Sample((_r(rng, 2, dtype=dt),
                                                      _r(rng, 3, dtype=dt)))],
           dtypes=("float32", "int64")),
    OpInfo("combinations", lambda rng, dt: [Sample((_r(rng, 5, dtype=dt),)),
                                            Sample((_r(rng, 5, dtype=dt),), args=(3,)),
                                            Sample((_r(rng, 4, dtype=dt),), args=(2, True))]),
    OpInfo("cdist", lambda rng, dt: [Sample((_r(rng, 5, 3, dtype=dt), _r(rng, 4, 3, dtype=dt))),
                                     Sample((_r(rng, 2, 5, 3, dtype=dt),
                                             _r(rng, 2, 4, 3, dtype=dt)), args=(1.0,))],
           rtol=1e-4, atol=1e-5, forward_ad=False),   # torch has no forward AD for cdist
    OpInfo("dist", lambda rng, dt: [Sample((_r(rng, 3, 4, dtype=dt), _r(rng, 4, dtype=dt))),
                                    Sample((_r(rng, 3, 4, dtype=dt), _r(rng, 3, 4, dtype=dt)),
                                           args=(3,))], rtol=1e-4),
    OpInfo("renorm", _view((3, 4), (2, 0, 1.0), (1, 1, 0.5)), rtol=1e-4),
    OpInfo("diagflat", _view((2, 3), (), (1,), (-2,))),
    OpInfo("select_scatter", lambda rng, dt: [Sample((_r(rng, 3, 4, dtype=dt),
                                                      _r(rng, 4, dtype=dt)), args=(0, 1))]),
    OpInfo("slice_scatter", lambda rng, dt: [Sample((_r(rng, 3, 4, dtype=dt),
                                                     _r(rng, 3, 2, dtype=dt)),
                                                    args=(1, 0, 4, 2))]),
    OpInfo("diagonal_scatter", lambda rng, dt: [Sample((_r(rng, 3, 4, dtype=dt),
                                                        _r(rng, 3, dtype=dt)), args=(1,))]),
    # torch's as_strided_scatter gradient misplaces a storage offset: checked in test_ops.py
    OpInfo("as_strided_scatter", lambda rng, dt: [Sample((_r(rng, 3, 4, dtype=dt),
                                                          _r(rng, 2, 2, dtype=dt)),
                                                         args=((2, 2), (1, 2), 3))], grad=False),
    OpInfo("unravel_index", lambda rng, dt: [Sample((np.array([-1, 5, 17, 0]),),
                                                    args=((2, 3, 3),))],
           dtypes=("int64",), grad=False),
    OpInfo("trapezoid", lambda rng, dt: [Sample((_r(rng, 3, 5, dtype=dt),)),
                                         Sample((_r(rng, 3, 5, dtype=dt),),
                                                kwargs={"dx": 0.5, "dim": 0}),
                                         Sample((_r(rng, 3, 5, dtype=dt), np.sort(
                                             _r(rng, 5, dtype=dt))))]),
    OpInfo("trapz", lambda rng, dt: [Sample((_r(rng, 3, 5, dtype=dt),))]),
    OpInfo("cumulative_trapezoid", lambda rng, dt: [
        Sample((_r(rng, 3, 5, dtype=dt),)),
        Sample((_r(rng, 3, 5, dtype=dt), np.sort(_r(rng, 5, dtype=dt))))]),
    # -- creation
    OpInfo("hann_window", lambda rng, dt: [Sample((), args=(n, p)) for n in (0, 1, 6, 9)
                                           for p in (True, False)], grad=False),
    OpInfo("hamming_window", lambda rng, dt: [Sample((), args=(n, p)) for n in (0, 1, 6)
                                              for p in (True, False)], grad=False),
    OpInfo("blackman_window", lambda rng, dt: [Sample((), args=(n, p)) for n in (1, 6, 9)
                                               for p in (True, False)], grad=False),
    OpInfo("bartlett_window", lambda rng, dt: [Sample((), args=(n, p)) for n in (1, 6, 9)
                                               for p in (True, False)], grad=False),
    OpInfo("kaiser_window", lambda rng, dt: [Sample((), args=(n, p, b)) for n in (0, 1, 6, 9)
                                             for p in (True, False) for b in (12.0, 3.5)],
           grad=False),
    OpInfo("scalar_tensor", lambda rng, dt: [Sample((), args=(2.5,)), Sample((), args=(3,))],
           grad=False),
    # -- more structure
    OpInfo("hsplit", _view((4, 6), (3,), ([1, 4],))),
    OpInfo("vsplit", _view((4, 6), (2,), ([1, 3],))),
    OpInfo("dsplit", _view((2, 2, 6), (3,), ([2],))),
    OpInfo("unsafe_split", _view((6, 4), (2,))),
    OpInfo("unsafe_chunk", _view((7, 4), (3,))),
    OpInfo("adjoint", _view((2, 3, 4), ())),
    OpInfo("sgn", _unary_samples(), grad=False),
    OpInfo("conj", _view((3, 4), ())),
    OpInfo("resolve_conj", _view((3, 4), ())),
    OpInfo("resolve_neg", _view((3, 4), ())),
    OpInfo("conj_physical", _unary_samples()),
    OpInfo("addr", lambda rng, dt: [Sample((_r(rng, 2, 3, dtype=dt), _r(rng, 2, dtype=dt),
                                            _r(rng, 3, dtype=dt))),
                                    Sample((_r(rng, 2, 3, dtype=dt), _r(rng, 2, dtype=dt),
                                            _r(rng, 3, dtype=dt)),
                                           kwargs={"beta": 2, "alpha": 0.5})]),
    OpInfo("addbmm", lambda rng, dt: [Sample((_r(rng, 2, 5, dtype=dt), _r(rng, 3, 2, 4, dtype=dt),
                                              _r(rng, 3, 4, 5, dtype=dt)),
                                             kwargs={"beta": 0.5, "alpha": 2})],
           rtol=1e-4, atol=1e-5),
    OpInfo("isin", lambda rng, dt: [Sample((np.array([1, 2, 3, 4], dt), np.array([2, 4, 9], dt))),
                                    Sample((np.array([1, 2, 3, 4], dt), np.array([2, 4], dt)),
                                           kwargs={"invert": True})],
           dtypes=("int64", "float32"), grad=False),
    OpInfo("histogram", lambda rng, dt: [
        Sample((_r(rng, 50, dtype=dt),), args=(7,)),
        Sample((_r(rng, 50, dtype=dt),), args=(5,), kwargs={"range": (-1.0, 1.0),
                                                            "density": True})], grad=False),
    OpInfo("histogramdd", lambda rng, dt: [
        Sample((_r(rng, 40, 2, dtype=dt),), args=([3, 4],)),
        Sample((_r(rng, 5, 8, 3, dtype=dt),), args=(2,),
               kwargs={"range": [-1.0, 1.0, -2.0, 0.5, 0.0, 2.0], "density": True}),
        Sample((np.ones((4, 2), dt),), args=(2,))], grad=False,
        errors=lambda: [Sample((np.ones((4, 2), np.float32),), args=([2, 2, 2],)),
                        Sample((np.ones((4, 2), np.int64),), args=(2,))]),
    OpInfo("gcd", lambda rng, dt: [Sample((np.array([5, 10, 15, -4, 0]),
                                           np.array([3, 4, 5, 6, 0]))),
                                   Sample((_r(rng, 3, 4, dtype=dt), _r(rng, 4, dtype=dt)))],
           dtypes=("int64",), grad=False,
           errors=lambda: [Sample((np.ones(2, np.float32), np.ones(2, np.float32)))]),
    OpInfo("lcm", lambda rng, dt: [Sample((np.array([5, 10, 15, -4, 0]),
                                           np.array([3, 4, 5, 6, 7])))],
           dtypes=("int64",), grad=False),
    OpInfo("nonzero_static", lambda rng, dt: [
        Sample((np.array([0, 1, 0, 2], dt),), kwargs={"size": 3}),
        Sample((np.array([[0, 1], [1, 2]], dt),), kwargs={"size": 2, "fill_value": 7})],
        dtypes=("int64",), grad=False),
    OpInfo("gradient", lambda rng, dt: [
        Sample((_r(rng, 3, 5, dtype=dt),)),
        Sample((_r(rng, 3, 5, dtype=dt),), kwargs={"spacing": 2.0, "dim": 1}),
        Sample((_r(rng, 3, 5, dtype=dt),), kwargs={"spacing": (0.5, 2.0), "edge_order": 2}),
        Sample((_r(rng, 5, 3, dtype=dt),), noncontig=True)],
        errors=lambda: [Sample((np.ones(2, np.float32),), kwargs={"edge_order": 2}),
                        Sample((np.ones(4, np.float32),), kwargs={"edge_order": 3})]),
    OpInfo("frexp", lambda rng, dt: [Sample((np.array([1e-40, 0.0, -0.0, 3.0, -5.5, np.inf,
                                                       -np.inf, np.nan, 2.5e38], dt),)),
                                     Sample((_r(rng, 3, 4, dtype=dt, lo=-1e3, hi=1e3),))],
           grad=False,
           errors=lambda: [Sample((np.ones(2, np.int64),))]),
    OpInfo("nextafter", lambda rng, dt: [
        Sample((np.array([1.0, 0.0, -0.0, np.inf, np.nan, 1.0, -1.0, 2.0, 1e-45, 0.0], dt),
                np.array([2.0, -1.0, 1.0, 0.0, 1.0, np.nan, -2.0, 1.0, 0.0, -0.0], dt))),
        Sample((_r(rng, 3, 1, dtype=dt), _r(rng, 4, dtype=dt)))], grad=False),
    # -- complex construction and views (real inputs; complex-input parity: test_complex.py)
    OpInfo("angle", _unary_samples(), forward_ad=False),
    OpInfo("complex", _binary_samples(), grad=False, forward_ad=False,
           errors=lambda: [Sample((np.ones(2, np.float32), np.ones(2, np.float64)))]),
    OpInfo("polar", _binary_samples(lo=0.1), grad=False, forward_ad=False),
    OpInfo("real", _view((3, 4), ()), forward_ad=False),
    OpInfo("imag", lambda rng, dt: [], forward_ad=False,
           errors=lambda: [Sample((np.ones(2, np.float32),))]),
    OpInfo("view_as_complex", lambda rng, dt: [Sample((_r(rng, 3, 2, dtype=dt),)),
                                               Sample((_r(rng, 4, 3, 2, dtype=dt),))],
           grad=False, forward_ad=False,
           errors=lambda: [Sample((np.ones((2, 3), np.float32),))]),
    OpInfo("view_as_real", lambda rng, dt: [], forward_ad=False,
           errors=lambda: [Sample((np.ones(2, np.float32),))]),
    OpInfo("stft", lambda rng, dt: [Sample((_r(rng, 40, dtype=dt),), args=(8,),
                                           kwargs={"return_complex": True}),
                                    Sample((_r(rng, 2, 40, dtype=dt),), args=(8, 3),
                                           kwargs={"return_complex": True, "center": False})],
           grad=False, forward_ad=False,
           errors=lambda: [Sample((np.ones(40, np.float32),), args=(8,))]),
    # -- special functions at the top level (ember/_C/special.pyx)
    OpInfo("digamma", _unary_samples(-3.7, 6.0), rtol=1e-4, atol=1e-5),
    OpInfo("erfinv", _unary_samples(-0.95, 0.95), rtol=1e-4, atol=1e-5),
    OpInfo("i0", _unary_samples(-5.0, 5.0), rtol=1e-5),
    OpInfo("igamma", _binary_samples(0.2, 5.0, 0.1, 6.0), grad=False, rtol=1e-4),
    OpInfo("igammac", _binary_samples(0.2, 5.0, 0.1, 6.0), grad=False, rtol=1e-4),
    OpInfo("mvlgamma", lambda rng, dt: [
        Sample((_r(rng, 3, 4, dtype=dt, lo=2.0, hi=5.0),), args=(1,)),
        Sample((_r(rng, 4, 3, dtype=dt, lo=2.0, hi=5.0),), args=(3,), noncontig=True)],
        rtol=1e-4, errors=lambda: [Sample((np.ones(3, np.float32) * 3,), args=(0,))]),
]


# -- nn ops at the top level, in ATen's signatures (ember._nn_ops)
def _bn(rng, dt):
    x = _r(rng, 4, 3, 5, dtype=dt)
    w, b = (_r(rng, 3, dtype=dt, lo=0.5, hi=1.5) for _ in range(2))
    return [Sample((x, w, b), args=(None, None, True, 0.1, 1e-5, False)),
            Sample((x,), args=(None, None, None, None, True, 0.1, 1e-3, True))]


def _in(rng, dt):
    x = _r(rng, 2, 3, 6, dtype=dt)
    w, b = _r(rng, 3, dtype=dt), _r(rng, 3, dtype=dt)
    return [Sample((x, w, b), args=(None, None, True, 0.1, 1e-5, False))]


def _losses2(rng, dt):     # (input1, input2, target in {-1, 1})
    y = np.where(rng.random(4) > 0.5, 1.0, -1.0).astype(dt)
    return [Sample((_r(rng, 4, 5, dtype=dt), _r(rng, 4, 5, dtype=dt), y), args=(0.2, r))
            for r in (0, 1, 2)]


def _bce(rng, dt, weighted=False):
    x, t = _r(rng, 3, 4, dtype=dt), rng.random((3, 4)).astype(dt)
    w, pw = _r(rng, 4, dtype=dt, lo=0.5, hi=2), _r(rng, 4, dtype=dt, lo=0.5, hi=2)
    if weighted:    # torch cannot differentiate with respect to weight
        return [Sample((x, t, w, pw), args=(1,)), Sample((x, t, w), args=(None, 2))]
    return [Sample((x, t)), Sample((x, t), args=(None, None, 1))]


def _conv(rng, dt):
    return [Sample((_r(rng, 2, 4, 7, dtype=dt), _r(rng, 6, 2, 3, dtype=dt), _r(rng, 6, dtype=dt)),
                   args=((2,), (1,), (1,), False, (0,), 2)),
            Sample((_r(rng, 1, 2, 5, 6, dtype=dt), _r(rng, 3, 2, 3, 3, dtype=dt)),
                   args=(None, (1, 1), (1, 0), (2, 1), False, (0, 0), 1)),
            Sample((_r(rng, 1, 2, 4, 4, dtype=dt), _r(rng, 2, 3, 3, 3, dtype=dt)),
                   args=(None, (2, 2), (1, 1), (1, 1), True, (1, 0), 1))]


def _grid(rng, dt):
    out = []
    for interp, pad, ac in ((0, 0, False), (0, 1, True), (0, 2, False), (2, 0, True)):
        out.append(Sample((_r(rng, 1, 2, 4, 5, dtype=dt), _r(rng, 1, 3, 2, 2, dtype=dt, lo=-1.2,
                                                              hi=1.2)), args=(interp, pad, ac)))
    return out


def _rnn_cell(gates, two_states=False):
    def samples(rng, dt):
        H, In = 3, 4
        return [Sample((_r(rng, 2, In, dtype=dt), _r(rng, 2, H, dtype=dt),
                        _r(rng, gates * H, In, dtype=dt), _r(rng, gates * H, H, dtype=dt),
                        _r(rng, gates * H, dtype=dt), _r(rng, gates * H, dtype=dt))),
                Sample((_r(rng, 2, In, dtype=dt), _r(rng, 2, H, dtype=dt),
                        _r(rng, gates * H, In, dtype=dt), _r(rng, gates * H, H, dtype=dt)))]
    return samples


_IDX = np.array([[0, 2, 4], [1, 1, 3]])


def _embedding_bag(rng, dt):
    """torch.embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse,
    per_sample_weights, include_last_offset, padding_idx): every mode, an empty bag,
    padding, include_last_offset and int32 indices (per-sample weights: in
    test_nn_aten_ops.py, as they come after the non-tensor arguments)."""
    idx = np.array([1, 4, 4, 0, 6, 2, 4, 3])
    w = _r(rng, 7, 3, dtype=dt)
    out = [Sample((w, idx, np.array([0, 3, 3, 5])), args=(False, mode, False, None, False, pad))
           for mode in (0, 1, 2) for pad in (None, 4)]
    out += [Sample((w, idx, np.array([0, 2, 8])), args=(False, mode, False, None, True))
            for mode in (0, 1, 2)]
    out += [Sample((w, idx.astype(np.int32), np.array([0, 6], np.int32)), args=(False, 2)),
            Sample((w, idx[:0], np.array([0, 0])), args=(False, 2))]
    return out

OPS += [
    OpInfo("batch_norm", _bn, rtol=1e-4, atol=1e-5),
    OpInfo("instance_norm", _in, rtol=1e-4, atol=1e-5),
    OpInfo("layer_norm", lambda rng, dt: [
        Sample((_r(rng, 2, 3, 4, dtype=dt),), args=((3, 4),),
               kwargs={"eps": 1e-3, "cudnn_enable": False})], rtol=1e-4, atol=1e-5),
    OpInfo("group_norm", lambda rng, dt: [
        Sample((_r(rng, 2, 4, 3, dtype=dt),), args=(2, None, None, 1e-4, True))], rtol=1e-4,
        atol=1e-5),
    OpInfo("embedding", lambda rng, dt: [Sample((_r(rng, 5, 3, dtype=dt), _IDX)),
                                         Sample((_r(rng, 5, 3, dtype=dt), _IDX), args=(1,)),
                                         Sample((_r(rng, 5, 3, dtype=dt), _IDX), args=(-1,)),
                                         Sample((_r(rng, 5, 3, dtype=dt), _IDX),
                                                args=(-1, True)),      # scale_grad_by_freq
                                         Sample((_r(rng, 5, 3, dtype=dt), _IDX), args=(3, True))],
           forward_ad=False,
           errors=lambda: [Sample((np.ones((5, 3), np.float32), np.ones(2, np.float32)))]),
    OpInfo("embedding_bag", _embedding_bag, forward_ad=False,
           errors=lambda: [Sample((np.ones((5, 3), np.float32), np.ones(4, np.float32),
                                   np.array([0, 2]))),
                           Sample((np.ones((5, 3), np.float32), np.array([0, 1, 2, 3]),
                                   np.array([0, 2])), args=(False, 3)),
                           Sample((np.ones((5, 3), np.float32), np.array([0, 1, 2, 3]),
                                   np.array([0, 5])))]),
    # torch has no forward AD through this op's backward formula
    OpInfo("binary_cross_entropy_with_logits", _bce, rtol=1e-4, atol=1e-5, forward_ad=False),
    OpInfo("binary_cross_entropy_with_logits",
           lambda rng, dt: _bce(rng, dt, weighted=True), grad=False),
    OpInfo("cosine_embedding_loss", _losses2, rtol=1e-4, atol=1e-5),
    OpInfo("margin_ranking_loss", lambda rng, dt: [
        Sample((_r(rng, 6, dtype=dt), _r(rng, 6, dtype=dt),
                np.where(rng.random(6) > 0.5, 1.0, -1.0).astype(dt)), args=(0.1, r))
        for r in (0, 1, 2)]),
    OpInfo("hinge_embedding_loss", lambda rng, dt: [
        Sample((_r(rng, 3, 4, dtype=dt), np.where(rng.random((3, 4)) > 0.5, 1.0, -1.0).astype(dt)),
               args=(0.5, r)) for r in (0, 1, 2)]),
    OpInfo("kl_div", lambda rng, dt: [
        Sample((np.log(rng.random((3, 4)) + 0.1).astype(dt), rng.random((3, 4)).astype(dt))),
        Sample((_r(rng, 3, 4, dtype=dt), _r(rng, 3, 4, dtype=dt)), args=(2,),
               kwargs={"log_target": True}),
        Sample((_r(rng, 3, 4, dtype=dt), _r(rng, 3, 4, dtype=dt)), args=(1,))], rtol=1e-4,
        forward_ad=False),     # torch's tangent is nan where the target is not positive
    OpInfo("poisson_nll_loss", lambda rng, dt: [
        Sample((_r(rng, 3, 4, dtype=dt), rng.random((3, 4)).astype(dt) * 3), args=(True, False,
                                                                                   1e-8, 1)),
        Sample((rng.random((3, 4)).astype(dt) + 0.1, (rng.random((3, 4)) * 3).astype(dt)),
               args=(False, True, 1e-6, 0))], rtol=1e-4, atol=1e-5),
    OpInfo("triplet_margin_loss", lambda rng, dt: [
        Sample((_r(rng, 4, 5, dtype=dt), _r(rng, 4, 5, dtype=dt), _r(rng, 4, 5, dtype=dt))),
        Sample((_r(rng, 4, 5, dtype=dt), _r(rng, 4, 5, dtype=dt), _r(rng, 4, 5, dtype=dt)),
               args=(0.5, 1.0, 1e-6, True, 1))], rtol=1e-4, atol=1e-5),
    OpInfo("dropout", _view((3, 4), (0.5, False), (0.0, True))),
    OpInfo("alpha_dropout", _view((3, 4), (0.5, False), (0.0, True))),
    OpInfo("feature_dropout", _view((2, 3, 4), (0.5, False), (0.0, True)),
           errors=lambda: [Sample((np.ones(3, np.float32),), args=(0.5, True))]),
    OpInfo("feature_alpha_dropout", _view((2, 3, 4), (0.5, False), (0.0, True))),
    OpInfo("constant_pad_nd", _view((2, 3, 4), ((1, 2),), ((0, 1, 2, 0), 1.5), ((-1, 1),))),
    OpInfo("convolution", _conv, rtol=1e-4, atol=1e-5, forward_ad=False),
    OpInfo("grid_sampler", _grid, rtol=1e-4, atol=1e-5, forward_ad=False),
    # nearest: torch's grid gradient is zeros, ember's None (no path): values only
    OpInfo("grid_sampler", lambda rng, dt: [
        Sample((_r(rng, 1, 2, 4, 5, dtype=dt), _r(rng, 1, 3, 2, 2, dtype=dt, lo=-1.2, hi=1.2)),
               args=(1, p, False)) for p in (0, 1, 2)], grad=False),
    OpInfo("grid_sampler_2d", lambda rng, dt: _grid(rng, dt)[:2], rtol=1e-4, atol=1e-5,
           forward_ad=False,
           errors=lambda: [Sample((np.ones((1, 1, 3, 3, 3), np.float32),
                                   np.zeros((1, 2, 2, 2, 3), np.float32)), args=(0, 0, False))]),
    OpInfo("grid_sampler_3d", lambda rng, dt: [
        Sample((_r(rng, 1, 2, 3, 4, 3, dtype=dt), _r(rng, 1, 2, 2, 3, 3, dtype=dt, lo=-1, hi=1)),
               args=(0, 0, False))], rtol=1e-4, atol=1e-5, forward_ad=False),
    OpInfo("affine_grid_generator", lambda rng, dt: [
        Sample((_r(rng, 2, 2, 3, dtype=dt),), args=((2, 1, 3, 4), False)),
        Sample((_r(rng, 1, 3, 4, dtype=dt),), args=((1, 1, 2, 3, 2), True))], rtol=1e-5,
        forward_ad=False),
    # torch's forward AD gives dim=-1 a tangent of the wrong shape
    OpInfo("norm_except_dim", _view((3, 4, 5), (), (2, 1), (3, 2), (2, -1)), rtol=1e-4,
           forward_ad=False),
    OpInfo("frobenius_norm", _view((3, 4, 5), ((1,),), ((0, 2), True)), rtol=1e-4),
    OpInfo("nuclear_norm", lambda rng, dt: [Sample((_r(rng, 3, 4, dtype=dt),)),
                                            Sample((_r(rng, 3, 4, dtype=dt),), args=(True,)),
                                            Sample((_r(rng, 2, 3, 4, dtype=dt),),
                                                   args=((0, 2),))],
           dtypes=("float64",), rtol=1e-6, forward_ad=False),
    OpInfo("chain_matmul", lambda rng, dt: [
        Sample((_r(rng, 2, 3, dtype=dt), _r(rng, 3, 5, dtype=dt), _r(rng, 5, 2, dtype=dt))),
        Sample((_r(rng, 2, 3, dtype=dt),))], rtol=1e-4, atol=1e-5,
        errors=lambda: [Sample((np.ones(3, np.float32), np.ones((3, 2), np.float32)))]),
    OpInfo("rnn_tanh_cell", _rnn_cell(1), rtol=1e-4, atol=1e-5),
    OpInfo("rnn_relu_cell", _rnn_cell(1), rtol=1e-4, atol=1e-5),
    OpInfo("gru_cell", _rnn_cell(3), rtol=1e-4, atol=1e-5, forward_ad=False),
    OpInfo("adaptive_max_pool1d", _view((2, 3, 8), ((4,),), (3,)), forward_ad=False),
]
