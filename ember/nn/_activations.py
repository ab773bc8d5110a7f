"""Activation functions of ``ember.nn.functional`` beyond the element-wise kernels:
shrinkage, randomized leaky ReLU, PReLU, the in-place ``*_`` forms, feature alpha dropout,
Gumbel-softmax and ``pdist``; composed from ember's public tensor ops, except the shrinks
and PReLU, which run one-pass kernels on CPU tensors (their compositions remain for other
devices and Python modes)."""
from __future__ import annotations

import ember
from ember._C import elementwise as _ew
from ember._check import _check, _check_value, _real_only

__all__ = ["hardshrink", "softshrink", "rrelu", "rrelu_", "prelu", "elu_", "celu_", "selu_",
           "leaky_relu_", "threshold_", "feature_alpha_dropout", "gumbel_softmax", "pdist"]


def _F():
    return ember.nn.functional


def hardshrink(input: ember.Tensor, lambd: float = 0.5) -> ember.Tensor:
    """``x`` outside ``[-lambd, lambd]``, else 0 (NaN passes through)."""
    _real_only(input, "hardshrink_cpu")
    r = _ew._hardshrink(input, lambd)
    if r is not None:
        return r
    # other devices and Python modes: the same selects from public ops, the gradient
    # passing where |x| > lambd only (NaN takes none, as the kernel's backward)
    outside = ember.logical_or(input < -lambd, input > lambd)
    r = ember.where(outside, input, ember.zeros_like(input))
    return ember.where(input != input, input.detach(), r)


def softshrink(input: ember.Tensor, lambd: float = 0.5) -> ember.Tensor:
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0 (NaN passes)."""
    _ew._softshrink_check(input, lambd)
    r = _ew._softshrink(input, lambd)
    if r is not None:
        return r
    r = ember.where(input > lambd, input - lambd, ember.where(input != input, input.detach(), 0.0))
    return ember.where(input < -lambd, input + lambd, r)


def rrelu(input: ember.Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
          training: bool = False, inplace: bool = False) -> ember.Tensor:
    """Randomized leaky ReLU: negative inputs scaled by a slope drawn from
    ``U(lower, upper)`` per element in training, by ``(lower + upper) / 2`` otherwise."""
    _check(lower <= upper, lambda: "Lower bound should be less than or equal to the upper "
                                   "bound")
    if training:
        slope = ember.empty_like(input).uniform_(lower, upper)
        r = ember.where(input >= 0, input, input * slope)
    else:
        r = _F().leaky_relu(input, (lower + upper) / 2)
    return input.copy_(r) if inplace else r


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    """In-place :func:`rrelu`."""
    return rrelu(input, lower, upper, training, True)


def prelu(input: ember.Tensor, weight: ember.Tensor) -> ember.Tensor:
    """``x`` where ``x > 0``, else ``weight * x``, with one slope or one per channel (dim 1)."""
    for name, v in (("input", input), ("weight", weight)):
        if not isinstance(v, ember.Tensor):
            raise TypeError(f"prelu(): argument '{name}' must be Tensor, not "
                            f"{type(v).__name__}")
    if not input.is_floating_point():
        raise NotImplementedError(f"\"prelu_cpu\" not implemented for '{_ew._type_name(input)}'")
    _check(weight.dim() <= 1, lambda: f"prelu: Expected `weight` to be a scalar or 1D tensor, "
                                      f"but got: ndim = {weight.dim()}")
    _check(input.dtype == weight.dtype, lambda: f"prelu: Type promoting not supported. Got "
                                                f"{_ew._type_name(input)} and "
                                                f"{_ew._type_name(weight)}")
    n = weight.numel()
    if n != 1:
        _check(input.dim() > 0, "Not allow zero-dim input tensor.")
        c = input.shape[1] if input.dim() >= 2 else 1
        _check(c == n, lambda: f"Mismatch of parameter numbers and input channel size. Found "
                               f"parameter numbers = {n} and channel size = {c}.")
        weight = weight.reshape((1, n) + (1,) * (input.dim() - 2))
    else:
        weight = weight.reshape(())
    r = _ew._prelu(input, weight)
    if r is not None:
        return r
    return ember.where(input > 0, input, weight * input)


def elu_(input, alpha=1.0):
    """In-place ELU."""
    return _F().elu(input, alpha, True)


def celu_(input, alpha=1.0):
    """In-place CELU."""
    return _F().celu(input, alpha, True)


def selu_(input):
    """In-place SELU."""
    return _F().selu(input, True)


def leaky_relu_(input, negative_slope=0.01):
    """In-place leaky ReLU."""
    return _F().leaky_relu(input, negative_slope, True)


def threshold_(input, threshold, value):
    """In-place threshold."""
    return _F().threshold(input, threshold, value, True)


_SELU_ALPHA_SCALE = 1.7580993408473766   # -SELU alpha * scale: the value a dropped unit gets


def feature_alpha_dropout(input: ember.Tensor, p: float = 0.5, training: bool = False,
                          inplace: bool = False) -> ember.Tensor:
    """Alpha dropout of whole channels: every element of a dropped ``(n, c)`` channel is
    set to SELU's negative saturation, then an affine map keeps mean and variance."""
    _check_value(0.0 <= p <= 1.0, lambda: f"dropout probability has to be between 0 and 1, "
                                          f"but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input.mul_(0) if inplace else input * 0
    shape = [input.shape[0], input.shape[1] if input.dim() > 1 else 1] + \
        [1] * max(input.dim() - 2, 0)
    shape = shape[:input.dim()]
    keep = (ember.rand(*shape, dtype=input.dtype) >= p).to(input.dtype)
    al = _SELU_ALPHA_SCALE
    a = 1.0 / ((al * al * p + 1) * (1 - p)) ** 0.5
    b = (keep - 1) * (al * a) + al * a * p
    r = input * (keep * a) + b
    return input.copy_(r) if inplace else r


def gumbel_softmax(logits: ember.Tensor, tau: float = 1.0, hard: bool = False,
                   eps: float = 1e-10, dim: int = -1) -> ember.Tensor:
    """A sample of the Gumbel-softmax (Concrete) distribution over ``dim``; with ``hard``
    the one-hot of its argmax, differentiated as the soft sample (straight-through)."""
    gumbels = -ember.empty_like(logits).exponential_().log()
    y = ember.softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y
    index = y.max(dim, keepdim=True)[1]
    y_hard = ember.zeros_like(logits).scatter(dim, index, 1.0)
    return y_hard - y.detach() + y


def pdist(input: ember.Tensor, p: float = 2.0) -> ember.Tensor:
    """The p-norm distances between every pair of rows ``i < j`` of an ``(N, M)`` input,
    in row-major order (``N * (N - 1) / 2`` values)."""
    _check(input.dim() == 2, lambda: f"pdist only supports 2D tensors, got: {input.dim()}D")
    _check(input.is_floating_point(), "pdist only supports floating-point dtypes")
    _check(p >= 0, "pdist only supports non-negative p values")
    n = input.shape[0]
    rows = [i for i in range(n) for _ in range(i + 1, n)]
    cols = [j for i in range(n) for j in range(i + 1, n)]
    if not rows:
        return ember.empty(0, dtype=input.dtype)
    ri = ember.tensor(rows, dtype=ember.int64)
    ci = ember.tensor(cols, dtype=ember.int64)
    diff = input.index_select(0, ri) - input.index_select(0, ci)
    return diff.norm(p, -1)
