"""ember.return_types: the named result types of multi-tensor ops, with torch's field
names, reachable by name (so results pickle) and made on first use for linalg."""
import pickle

import numpy as np
import pytest

import ember


def test_results_are_instances_and_pickle():
    x = ember.randn(3, 4)
    for r, cls in ((x.max(1), "max"), (x.sort(), "sort"), (x.topk(2), "topk"),
                   (ember.aminmax(x), "aminmax"), (ember.linalg.qr(x), "linalg_qr"),
                   (ember.linalg.slogdet(ember.eye(3)), "linalg_slogdet")):
        assert isinstance(r, getattr(ember.return_types, cls))
        back = pickle.loads(pickle.dumps(r))
        assert type(back) is type(r)
        for a, b in zip(back, r):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        ember.return_types.nope


def test_field_names_match_torch():
    torch = pytest.importorskip("torch")
    names = [n for n in dir(ember.return_types) if hasattr(torch.return_types, n)]
    assert len(names) >= 25
    for n in names:
        assert getattr(ember.return_types, n)._fields == \
            getattr(torch.return_types, n).__match_args__, n
