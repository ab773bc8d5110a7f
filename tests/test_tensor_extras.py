"""Smaller torch names without an op-database shape: deprecated resize forms, map2_,
method forms of nn functions, pointer and placement predicates."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def test_resize_forms_match_torch():
    e, t = ember.arange(6.0), torch.arange(6.0)
    with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
        r = e.resize(2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rt = t.resize(2, 3)
        np.testing.assert_array_equal(r.numpy(), rt.numpy())
        r[0, 0] = 100.0                               # a view of a contiguous tensor
        assert e[0].item() == 100.0
        with pytest.raises(RuntimeError, match="preserving the number of elements"):
            e.resize(4)
        with pytest.raises(RuntimeError):
            t.resize(4)
        assert e.resize_as(ember.ones(3, 2)).shape == t.resize_as(torch.ones(3, 2)).shape


def test_map2_matches_torch():
    a, b, c = (np.arange(k, k + 4, dtype=np.float32) for k in (0, 5, 9))
    e, t = ember.tensor(a), torch.tensor(a)
    fn = lambda p, q, r: p + q * r   # noqa: E731
    assert e.map2_(ember.tensor(b), ember.tensor(c), fn) is e
    t.map2_(torch.tensor(b), torch.tensor(c), fn)
    np.testing.assert_array_equal(e.numpy(), t.numpy())
    with pytest.raises(TypeError):
        e.map2_(ember.tensor(b).double(), ember.tensor(c), fn)


def test_nn_methods_match_torch():
    x = np.linspace(-1.5, 1.5, 8, dtype=np.float32).reshape(2, 4)
    np.testing.assert_array_equal(ember.tensor(x).hardshrink(0.6).numpy(),
                                  torch.tensor(x).hardshrink(0.6).numpy())
    np.testing.assert_array_equal(ember.tensor(x).hardshrink().numpy(),
                                  torch.tensor(x).hardshrink().numpy())
    w = np.array([0.1, 0.2, 0.3, 0.4], np.float32)
    y = np.linspace(-1, 1, 16, dtype=np.float32).reshape(2, 4, 2)
    np.testing.assert_allclose(ember.tensor(y).prelu(ember.tensor(w)).numpy(),
                               torch.tensor(y).prelu(torch.tensor(w)).numpy())


def test_pointer_and_placement_predicates():
    e = ember.arange(4.0)
    assert e[1:].const_data_ptr() == e[1:].data_ptr() == e.data_ptr() + 4
    assert e.is_distributed() is torch.arange(4.0).is_distributed() is False
