import numpy as np
import pytest

import ember


def test_tensor_roundtrip_and_dtype_inference():
    assert ember.tensor([1, 2]).dtype is ember.int64
    assert ember.tensor([1.0, 2]).dtype is ember.float32
    assert ember.tensor([True, False]).dtype is ember.bool
    a = ember.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=ember.float64)
    np.testing.assert_array_equal(a.numpy(), [[1, 2], [3, 4]])
    assert a.shape == (2, 2) and a.stride() == (2, 1)


def test_add_broadcast_against_numpy():
    x = np.random.rand(3, 1, 4).astype(np.float32)
    y = np.random.rand(5, 1).astype(np.float32)
    r = ember.tensor(x) + ember.tensor(y)
    np.testing.assert_allclose(r.numpy(), x + y, rtol=1e-6)


def test_broadcast_error_names_shapes():
    with pytest.raises(RuntimeError, match="size of tensor a \\(3\\) must match"):
        ember.ones(3) + ember.ones(4)
