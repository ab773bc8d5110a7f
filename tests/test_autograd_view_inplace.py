"""In-place writes through views reach the base's graph (torch's CopySlices)."""
import numpy as np
import pytest

import ember


def _run(lib, f):
    h = lib.tensor(np.arange(1.0, 13.0).reshape(3, 4), requires_grad=True)
    w = lib.tensor(np.linspace(-1.0, 1.0, 3), requires_grad=True)
    out = f(h, w)
    out.backward()
    wg = None if w.grad is None else w.grad.numpy()
    return h.grad.numpy(), wg, out.detach().numpy()


def _then(y, *_):
    return (y * y).sum()


CASES = {
    "mul_column": lambda h, w: _then(*(lambda y: (y, y[:, 0].mul_(2)))(h * 1)),
    "copy_column": lambda h, w: _then(*(lambda y: (y, y[:, 0].copy_(w)))(h * 1)),
    "add_row_of_t": lambda h, w: _then(*(lambda y: (y, y.t()[1].add_(1)))(h * 1)),
    "view_of_view": lambda h, w: (lambda y: (y[1:][:, 1:3].mul_(3), (y ** 3).sum())[1])(h * 1),
    "diagonal_by_tensor": lambda h, w: _then(*(lambda y: (y, y.diagonal().mul_(w)))(h[:, :3] * 1)),
    "narrow_chain": lambda h, w: _then(*(lambda y: (y, y.narrow(1, 1, 2).sub_(5).relu_()))(h * 1)),
    "view_used_after": lambda h, w: (lambda y: (lambda v: (v.mul_(2), v.sum() + (y * y).sum())[1])(
        y[0]))(h * 1),
    "strided_flat_view": lambda h, w: _then(*(lambda y: (y, y.view(12)[::2].mul_(-1)))(h * 1)),
}

# d/dh of sum(y*y) with y = h except y[:, 0] = 2 h[:, 0]: 8 h there, 2 h elsewhere
def test_mul_through_view_against_numpy():
    hg, _, _ = _run(ember, CASES["mul_column"])
    h = np.arange(1.0, 13.0).reshape(3, 4)
    expect = 2 * h
    expect[:, 0] = 8 * h[:, 0]
    np.testing.assert_allclose(hg, expect)


def test_overwritten_view_gets_no_gradient():
    hg, wg, _ = _run(ember, CASES["copy_column"])
    assert np.all(hg[:, 0] == 0)
    np.testing.assert_allclose(wg, 2 * np.linspace(-1.0, 1.0, 3))


@pytest.mark.parametrize("name", sorted(CASES))
def test_inplace_through_view_matches_torch(name):
    torch = pytest.importorskip("torch")
    a = _run(torch, CASES[name])
    b = _run(ember, CASES[name])
    for x, y in zip(a, b):
        assert (x is None) == (y is None)
        if x is not None:
            np.testing.assert_allclose(y, x, rtol=1e-12)


def test_view_of_leaf_written_in_place_raises():
    h = ember.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        h[0:2].mul_(2)
    with ember.no_grad():
        h[0:2].mul_(2)       # allowed without grad mode, as in torch
