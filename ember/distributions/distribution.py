"""``Distribution``: the base class (shapes, argument validation, sampling protocol)."""
from __future__ import annotations

import warnings
from typing import Any

import ember
from ember.distributions import constraints
from ember.distributions.utils import lazy_property

__all__ = ["Distribution"]


class Distribution:
    """Abstract base of probability distributions (PyTorch's ``torch.distributions``).

    Subclasses define ``arg_constraints``, ``support`` and the methods they
    support; shapes follow torch: ``sample_shape + batch_shape + event_shape``.
    """

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Switch argument validation on or off for distributions created afterwards."""
        if value not in [True, False]:
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape: tuple = (), event_shape: tuple = (),
                 validate_args: bool | None = None) -> None:
        self._batch_shape = ember.Size(tuple(batch_shape))
        self._event_shape = ember.Size(tuple(event_shape))
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                arg_constraints = {}
                warnings.warn(f"{self.__class__} does not define `arg_constraints`. Please set "
                              f"`arg_constraints = {{}}` or initialize the distribution with "
                              f"`validate_args=False` to turn off validation.", stacklevel=2)
            for param, constraint in arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue
                if param not in self.__dict__ and isinstance(getattr(type(self), param),
                                                             lazy_property):
                    continue
                value = getattr(self, param)
                valid = constraint.check(value)
                if not bool(valid.all()):
                    raise ValueError(
                        f"Expected parameter {param} ({type(value).__name__} of shape "
                        f"{tuple(value.shape)}) of distribution {self!r} to satisfy the "
                        f"constraint {constraint!r}, but found invalid values:\n{value}")
        super().__init__()

    def expand(self, batch_shape: tuple, _instance: Any = None) -> Distribution:
        """A new distribution with parameters expanded to ``batch_shape``."""
        raise NotImplementedError(f"{type(self).__name__}.expand is not available")

    @property
    def batch_shape(self) -> Any:
        return self._batch_shape

    @property
    def event_shape(self) -> Any:
        return self._event_shape

    @property
    def arg_constraints(self) -> dict:
        raise NotImplementedError

    @property
    def support(self) -> Any:
        raise NotImplementedError

    @property
    def mean(self) -> Any:
        raise NotImplementedError(f"{self.__class__} does not implement mean")

    @property
    def mode(self) -> Any:
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self) -> Any:
        raise NotImplementedError(f"{self.__class__} does not implement variance")

    @property
    def stddev(self) -> Any:
        return self.variance.sqrt()

    def sample(self, sample_shape: tuple = ()) -> Any:
        """Draw a sample of shape ``sample_shape + batch_shape + event_shape`` (no gradient)."""
        with ember.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: tuple = ()) -> Any:
        """A reparameterised sample (gradients flow to the parameters)."""
        raise NotImplementedError(f"{type(self).__name__} does not support rsample")

    def sample_n(self, n: int) -> Any:
        warnings.warn("sample_n will be deprecated. Use .sample((n,)) instead", UserWarning,
                      stacklevel=2)
        return self.sample(ember.Size((n,)))

    def log_prob(self, value: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not implement log_prob")

    def cdf(self, value: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not implement cdf")

    def icdf(self, value: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not implement icdf")

    def enumerate_support(self, expand: bool = True) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not implement "
                                  f"enumerate_support")

    def entropy(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not implement entropy")

    def perplexity(self) -> Any:
        return ember.exp(self.entropy())

    def _extended_shape(self, sample_shape: tuple = ()) -> Any:
        return ember.Size(tuple(sample_shape) + tuple(self._batch_shape)
                          + tuple(self._event_shape))

    def _validate_sample(self, value: Any) -> None:
        if not isinstance(value, ember.Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = value.dim() - len(self._event_shape)
        if tuple(value.shape[event_dim_start:]) != tuple(self._event_shape):
            raise ValueError(f"The right-most size of value must match event_shape: "
                             f"{value.shape} vs {self._event_shape}.")
        actual = tuple(value.shape)
        expected = tuple(self._batch_shape) + tuple(self._event_shape)
        for i, j in zip(reversed(actual), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: "
                                 f"{value.shape} vs {ember.Size(expected)}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample "
                          f"validation. Please initialize the distribution with "
                          f"`validate_args=False` to turn off validation.", stacklevel=2)
            return
        valid = support.check(value)
        if not bool(valid.all()):
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape "
                             f"{tuple(value.shape)}) to be within the support ({support!r}) "
                             f"of the distribution {self!r}, but found invalid values:\n"
                             f"{value}")

    def _get_checked_instance(self, cls: type, _instance: Any = None) -> Any:
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(f"Subclass {self.__class__.__name__} of {cls.__name__} "
                                      f"that defines a custom __init__ method must also define "
                                      f"a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    def __repr__(self) -> str:
        names = [k for k in self.arg_constraints if k in self.__dict__]
        parts = []
        for p in names:
            v = self.__dict__[p]
            parts.append(f"{p}: {v if v.numel() == 1 else v.size()}")
        return self.__class__.__name__ + "(" + ", ".join(parts) + ")"
