"""Flatten parameters into one vector and back."""
from __future__ import annotations

import ember

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters):
    """One 1-D tensor holding every parameter, flattened, in order."""
    return ember.cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec, parameters):
    """Copy the slices of ``vec`` into the parameters (in place, no grad)."""
    if not isinstance(vec, ember.Tensor):
        raise TypeError(f"expected ember.Tensor, but got: {type(vec).__name__}")
    pointer = 0
    with ember.autograd.no_grad():
        for p in parameters:
            n = p.numel()
            p.copy_(vec[pointer:pointer + n].view_as(p))
            pointer += n
