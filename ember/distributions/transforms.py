"""Transforms: invertible maps with log-det-Jacobians, for ``TransformedDistribution``."""
from __future__ import annotations

import math
import weakref
from typing import Any

import ember
from ember.distributions import constraints
from ember.distributions.utils import _sum_rightmost

__all__ = ["AbsTransform", "AffineTransform", "ComposeTransform", "CumulativeDistributionTransform",
           "ExpTransform", "IndependentTransform", "LowerCholeskyTransform", "PowerTransform",
           "ReshapeTransform", "SigmoidTransform", "SoftmaxTransform", "SoftplusTransform",
           "StickBreakingTransform", "TanhTransform", "Transform", "identity_transform"]


class Transform:
    """An invertible (or at least injective) map ``y = t(x)`` with ``log|dy/dx|``.

    ``cache_size=1`` remembers the last ``(x, y)`` pair so that ``t.inv(t(x))``
    returns ``x`` itself.
    """

    bijective = False
    domain: Any = constraints.real
    codomain: Any = constraints.real

    def __init__(self, cache_size: int = 0) -> None:
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._inv = None
        self._cached_x_y = (None, None)

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_inv"] = None
        return state

    @property
    def event_dim(self) -> int:
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def inv(self) -> Transform:
        """The inverse transform (``inv.inv is self``)."""
        inv = None
        if self._inv is not None:
            inv = self._inv()
        if inv is None:
            inv = _InverseTransform(self)
            self._inv = weakref.ref(inv)
        return inv

    @property
    def sign(self) -> int:
        raise NotImplementedError

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self)}.with_cache is not implemented")

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return id(self)

    def __call__(self, x: Any) -> Any:
        if self._cache_size == 0:
            return self._call(x)
        x_old, y_old = self._cached_x_y
        if x is x_old:
            return y_old
        y = self._call(x)
        self._cached_x_y = x, y
        return y

    def _inv_call(self, y: Any) -> Any:
        if self._cache_size == 0:
            return self._inverse(y)
        x_old, y_old = self._cached_x_y
        if y is y_old:
            return x_old
        x = self._inverse(y)
        self._cached_x_y = x, y
        return x

    def _call(self, x: Any) -> Any:
        raise NotImplementedError

    def _inverse(self, y: Any) -> Any:
        raise NotImplementedError

    def log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.__class__.__name__ + "()"

    def forward_shape(self, shape: tuple) -> tuple:
        return shape

    def inverse_shape(self, shape: tuple) -> tuple:
        return shape


class _InverseTransform(Transform):
    def __init__(self, transform: Transform) -> None:
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform

    @property
    def domain(self) -> Any:
        return self._inv.codomain

    @property
    def codomain(self) -> Any:
        return self._inv.domain

    @property
    def bijective(self) -> bool:
        return self._inv.bijective

    @property
    def sign(self) -> int:
        return self._inv.sign

    @property
    def inv(self) -> Transform:
        return self._inv

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self.inv.with_cache(cache_size).inv

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    def __hash__(self) -> int:
        return hash(("inv", self._inv))

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self._inv!r})"

    def __call__(self, x: Any) -> Any:
        return self._inv._inv_call(x)

    def log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape: tuple) -> tuple:
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape: tuple) -> tuple:
        return self._inv.forward_shape(shape)


class ComposeTransform(Transform):
    """Apply ``parts`` in order (``parts[0]`` first)."""

    def __init__(self, parts: list, cache_size: int = 0) -> None:
        if cache_size:
            parts = [part.with_cache(cache_size) for part in parts]
        super().__init__(cache_size=cache_size)
        self.parts = list(parts)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    def __hash__(self) -> int:
        return hash(tuple(self.parts))

    @property
    def domain(self) -> Any:
        if not self.parts:
            return constraints.real
        domain = self.parts[0].domain
        event_dim = self.parts[-1].codomain.event_dim
        for part in reversed(self.parts):
            event_dim += part.domain.event_dim - part.codomain.event_dim
            event_dim = max(event_dim, part.domain.event_dim)
        if event_dim > domain.event_dim:
            domain = constraints.independent(domain, event_dim - domain.event_dim)
        return domain

    @property
    def codomain(self) -> Any:
        if not self.parts:
            return constraints.real
        codomain = self.parts[-1].codomain
        event_dim = self.parts[0].domain.event_dim
        for part in self.parts:
            event_dim += part.codomain.event_dim - part.domain.event_dim
            event_dim = max(event_dim, part.codomain.event_dim)
        if event_dim > codomain.event_dim:
            codomain = constraints.independent(codomain, event_dim - codomain.event_dim)
        return codomain

    @property
    def bijective(self) -> bool:
        return all(p.bijective for p in self.parts)

    @property
    def sign(self) -> int:
        sign = 1
        for p in self.parts:
            sign = sign * p.sign
        return sign

    @property
    def inv(self) -> Transform:
        inv = self._inv() if self._inv is not None else None
        if inv is None:
            inv = ComposeTransform([p.inv for p in reversed(self.parts)])
            self._inv = weakref.ref(inv)
            inv._inv = weakref.ref(self)
        return inv

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return ComposeTransform(self.parts, cache_size=cache_size)

    def __call__(self, x: Any) -> Any:
        for part in self.parts:
            x = part(x)
        return x

    def log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
        if not self.parts:
            return ember.zeros_like(x)
        xs = [x]
        for part in self.parts[:-1]:
            xs.append(part(xs[-1]))
        xs.append(y)
        terms = []
        event_dim = self.domain.event_dim
        for part, a, b in zip(self.parts, xs[:-1], xs[1:]):
            terms.append(_sum_rightmost(part.log_abs_det_jacobian(a, b),
                                        event_dim - part.domain.event_dim))
            event_dim += part.codomain.event_dim - part.domain.event_dim
        result = terms[0]
        for t in terms[1:]:
            result = result + t
        return result

    def forward_shape(self, shape: tuple) -> tuple:
        for part in self.parts:
            shape = part.forward_shape(shape)
        return shape

    def inverse_shape(self, shape: tuple) -> tuple:
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return shape

    def __repr__(self) -> str:
        return self.__class__.__name__ + "(\n    " + ",\n    ".join(
            repr(p) for p in self.parts) + "\n)"


identity_transform = ComposeTransform([])


class IndependentTransform(Transform):
    """Treat ``reinterpreted_batch_ndims`` batch dims of ``base_transform`` as event dims."""

    def __init__(self, base_transform: Transform, reinterpreted_batch_ndims: int,
                 cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return IndependentTransform(self.base_transform, self.reinterpreted_batch_ndims,
                                    cache_size=cache_size)

    @property
    def domain(self) -> Any:
        return constraints.independent(self.base_transform.domain,
                                       self.reinterpreted_batch_ndims)

    @property
    def codomain(self) -> Any:
        return constraints.independent(self.base_transform.codomain,
                                       self.reinterpreted_batch_ndims)

    @property
    def bijective(self) -> bool:
        return self.base_transform.bijective

    @property
    def sign(self) -> int:
        return self.base_transform.sign

    def _call(self, x: Any) -> Any:
        return self.base_transform(x)

    def _inverse(self, y: Any) -> Any:
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
        return _sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y),
                              self.reinterpreted_batch_ndims)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}({self.base_transform!r}, "
                f"{self.reinterpreted_batch_ndims})")


class ReshapeTransform(Transform):
    """Reshape the rightmost part of a tensor from ``in_shape`` to ``out_shape``."""

    bijective = True

    def __init__(self, in_shape: tuple, out_shape: tuple, cache_size: int = 0) -> None:
        self.in_shape = ember.Size(tuple(in_shape))
        self.out_shape = ember.Size(tuple(out_shape))
        if self.in_shape.numel() != self.out_shape.numel():
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    @property
    def domain(self) -> Any:
        return constraints.independent(constraints.real, len(self.in_shape))

    @property
    def codomain(self) -> Any:
        return constraints.independent(constraints.real, len(self.out_shape))

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    def _call(self, x: Any) -> Any:
        batch = x.shape[:x.dim() - len(self.in_shape)]
        return x.reshape(*batch, *self.out_shape)

    def _inverse(self, y: Any) -> Any:
        batch = y.shape[:y.dim() - len(self.out_shape)]
        return y.reshape(*batch, *self.in_shape)

    def log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
        batch = x.shape[:x.dim() - len(self.in_shape)]
        return x.new_zeros(*batch)

    def forward_shape(self, shape: tuple) -> tuple:
        cut = len(shape) - len(self.in_shape)
        return tuple(shape[:cut]) + tuple(self.out_shape)

    def inverse_shape(self, shape: tuple) -> tuple:
        cut = len(shape) - len(self.out_shape)
        return tuple(shape[:cut]) + tuple(self.in_shape)


class ExpTransform(Transform):
    """``y = exp(x)``."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ExpTransform)

    def __hash__(self) -> int:
        return hash(ExpTransform)

    def _call(self, x: Any) -> Any:
        return x.exp()

    def _inverse(self, y: Any) -> Any:
        return y.log()

    def log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
        return x


class PowerTransform(Transform):
    """``y = x ** exponent`` on positive reals."""

    domain = constraints.positive
    codomain = constraints.positive
    bijective = True

    def __init__(self, exponent: Any, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.exponent = exponent if isinstance(exponent, ember.Tensor) else \
            ember.tensor(float(exponent))

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return PowerTransform(self.exponent, cache_size=cache_size)

    @property
    def sign(self) -> Any:
        return self.exponent.sign()

    def _call(self, x: Any) -> Any:
        return x.pow(self.exponent)

    def _inverse(self, y: Any) -> Any:
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
        return (self.exponent * y / x).abs().log()

    def forward_shape(self, shape: tuple) -> tuple:
        return tuple(ember.broadcast_shapes(tuple(shape), tuple(self.exponent.shape)))

    inverse_shape = forward_shape


class SigmoidTransform(Transform):
    """``y = sigmoid(x)``."""

    domain = constraints.real
    codomain = constraints.unit_interval
    bijective = True
    sign = +1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SigmoidTransform)

    def __hash__(self) -> int:
        return hash(SigmoidTransform)

    def _call(self, x: Any) -> Any:
        finfo = ember.finfo(x.dtype)
        return ember.sigmoid(x).clamp(min=finfo.tiny, max=1.0 - finfo.eps)

    def _inverse(self, y: Any) -> Any:
        finfo = ember.finfo(y.dtype)
        y = y.clamp(min=finfo.tiny, max=1.0 - finfo.eps)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
        return -ember.nn.functional.softplus(-x) - ember.nn.functional.softplus(x)


class SoftplusTransform(Transform):
    """``y = log(1 + exp(x))``."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SoftplusTransform)

    def __hash__(self) -> int:
        return hash(SoftplusTransform)

    def _call(self, x: Any) -> Any:
        return ember.nn.functional.softplus(x)

    def _inverse(self, y: Any) -> Any:
        return (-y).expm1().neg().log() + y

    def log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
        return -ember.nn.functional.softplus(-x)


class TanhTransform(Transform):
    """``y = tanh(x)``."""

    domain = constraints.real
    codomain = constraints.interval(-1.0, 1.0)
    bijective = True
    sign = +1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TanhTransform)

    def __hash__(self) -> int:
        return hash(TanhTransform)

    def _call(self, x: Any) -> Any:
        return x.tanh()

    def _inverse(self, y: Any) -> Any:
        return 0.5 * ((1 + y).log() - (1 - y).log())

    def log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
        # 2 * (log 2 - x - softplus(-2x)), stable for large |x|
        return 2.0 * (math.log(2.0) - x - ember.nn.functional.softplus(-2.0 * x))


class AbsTransform(Transform):
    """``y = |x|`` (not injective)."""

    domain = constraints.real
    codomain = constraints.positive

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AbsTransform)

    def __hash__(self) -> int:
        return hash(AbsTransform)

    def _call(self, x: Any) -> Any:
        return x.abs()

    def _inverse(self, y: Any) -> Any:
        return y


class AffineTransform(Transform):
    """``y = loc + scale * x`` (``event_dim`` rightmost dims form one event)."""

    bijective = True

    def __init__(self, loc: Any, scale: Any, event_dim: int = 0, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.loc = loc
        self.scale = scale
        self._event_dim = event_dim

    @property
    def event_dim(self) -> int:
        return self._event_dim

    @property
    def domain(self) -> Any:
        if self.event_dim == 0:
            return constraints.real
        return constraints.independent(constraints.real, self.event_dim)

    @property
    def codomain(self) -> Any:
        return self.domain

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self.event_dim, cache_size=cache_size)

    @property
    def sign(self) -> Any:
        if isinstance(self.scale, (int, float)):
            return 1 if float(self.scale) > 0 else -1 if float(self.scale) < 0 else 0
        return self.scale.sign()

    def _call(self, x: Any) -> Any:
        return self.loc + self.scale * x

    def _inverse(self, y: Any) -> Any:
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
        shape = x.shape
        scale = self.scale
        if isinstance(scale, (int, float)):
            result = ember.full_like(x, math.log(abs(scale)))
        else:
            result = scale.abs().log()
        if self.event_dim:
            result_size = tuple(result.shape[:result.dim() - self.event_dim]) + (-1,)
            result = result.reshape(*result_size).sum(-1)
            shape = shape[:len(shape) - self.event_dim]
        return result.expand(*shape)

    def forward_shape(self, shape: tuple) -> tuple:
        return tuple(ember.broadcast_shapes(tuple(shape), tuple(getattr(self.loc, "shape", ())),
                                            tuple(getattr(self.scale, "shape", ()))))

    inverse_shape = forward_shape


class SoftmaxTransform(Transform):
    """Unconstrained vectors to the simplex by ``exp`` and normalising (not bijective)."""

    domain = constraints.real_vector
    codomain = constraints.simplex

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SoftmaxTransform)

    def __hash__(self) -> int:
        return hash(SoftmaxTransform)

    def _call(self, x: Any) -> Any:
        probs = (x - x.amax(-1, keepdim=True)).exp()
        return probs / probs.sum(-1, keepdim=True)

    def _inverse(self, y: Any) -> Any:
        return y.log()


class StickBreakingTransform(Transform):
    """Unconstrained ``K-1`` vectors to the ``K``-simplex by stick breaking (bijective)."""

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StickBreakingTransform)

    def __hash__(self) -> int:
        return hash(StickBreakingTransform)

    def _offset(self, n: int, like: Any) -> Any:
        # log of [n, n-1, ..., 1]: centres the stick-breaking fractions at x = 0
        return (n + 1 - ember.arange(1, n + 1, dtype=like.dtype)).log()

    def _call(self, x: Any) -> Any:
        z = ember.sigmoid(x - self._offset(x.shape[-1], x))
        z_cumprod = (1 - z).cumprod(-1)
        pad_z = ember.cat([z, ember.ones(*z.shape[:-1], 1, dtype=z.dtype)], -1)
        pad_c = ember.cat([ember.ones(*z.shape[:-1], 1, dtype=z.dtype), z_cumprod], -1)
        return pad_z * pad_c

    def _inverse(self, y: Any) -> Any:
        y_crop = y[..., :-1]
        offset = self._offset(y.shape[-1] - 1, y)
        sf = 1 - y_crop.cumsum(-1)
        finfo = ember.finfo(y.dtype)
        sf = ember.clamp(sf, min=finfo.tiny)
        return y_crop.log() - sf.log() + offset

    def log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
        offset = self._offset(x.shape[-1], x)
        x = x - offset
        detJ = (-x + ember.nn.functional.logsigmoid(x) + y[..., :-1].log()).sum(-1)
        return detJ

    def forward_shape(self, shape: tuple) -> tuple:
        return tuple(shape[:-1]) + (shape[-1] + 1,)

    def inverse_shape(self, shape: tuple) -> tuple:
        return tuple(shape[:-1]) + (shape[-1] - 1,)


class LowerCholeskyTransform(Transform):
    """Unconstrained matrices to lower-triangular ones with positive diagonal (exp)."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LowerCholeskyTransform)

    def __hash__(self) -> int:
        return hash(LowerCholeskyTransform)

    def _call(self, x: Any) -> Any:
        return x.tril(-1) + ember.diag_embed(x.diagonal(0, -2, -1).exp())

    def _inverse(self, y: Any) -> Any:
        return y.tril(-1) + ember.diag_embed(y.diagonal(0, -2, -1).log())


class CumulativeDistributionTransform(Transform):
    """``y = distribution.cdf(x)`` onto the unit interval."""

    bijective = True
    codomain = constraints.unit_interval
    sign = +1

    def __init__(self, distribution: Any, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self) -> Any:
        return self.distribution.support

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return type(self)(self.distribution, cache_size=cache_size)

    def _call(self, x: Any) -> Any:
        return self.distribution.cdf(x)

    def _inverse(self, y: Any) -> Any:
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
        return self.distribution.log_prob(x)
