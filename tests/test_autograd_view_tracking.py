"""Views know their base: sibling views see in-place writes made through another view or
the base (their grad_fn is rebuilt from the base's, as torch does), and views of
tensors that do not require grad are tracked too (writing a grad-requiring value into
one puts the base in the graph)."""
import numpy as np
import pytest

import ember


def _leaves(lib):
    h = lib.tensor(np.arange(1.0, 13.0).reshape(3, 4) / 4, requires_grad=True)
    w = lib.tensor(np.linspace(-1.0, 1.0, 3), requires_grad=True)
    return h, w


def sibling_mul(lib, h, w):
    y = h * 1
    a = y[0]                       # taken before the write below reaches y[0, 0]
    y[:, 0].mul_(2)
    return (a * a).sum() + y.sum()


def sibling_base_written(lib, h, w):
    y = h * 1
    a = y[1]
    y.mul_(3)
    return (a ** 2).sum() + y.sum()


def sibling_after_zero(lib, h, w):
    y = h * 1
    v = y[:, 1:]
    y[:, :2].zero_()
    return (v * v).sum()


def sibling_of_copy(lib, h, w):
    y = h * 1
    v = y.t()[0]                   # column 0 of y
    y[:, 0].copy_(w)
    return (v * h[:, 1]).sum()


def sibling_chain(lib, h, w):
    y = h * 1
    v = y[1:][:, 1:3]
    y.narrow(0, 1, 1).add_(w[1])
    return (v ** 3).sum()


def nograd_base_copy(lib, h, w):
    y = lib.zeros(3)
    y[:2].copy_(w[:2])
    assert y.requires_grad and type(y.grad_fn).__name__ == "CopySlices"
    return (y * lib.tensor([1.0, 2.0, 3.0], dtype=y.dtype)).sum()


def nograd_base_view_chain(lib, h, w):
    y = lib.zeros(3, 4, dtype=h.dtype)
    y[1][1:4].add_(w)
    return (y ** 2).sum() + (y * h).sum()


def nograd_base_unsqueeze(lib, h, w):
    y = lib.ones(3, dtype=h.dtype)
    y.unsqueeze(0)[0, :2].mul_(w[1:])
    return (y * y).sum()


def nograd_base_transpose(lib, h, w):
    y = lib.zeros(4, 3, dtype=h.dtype)
    y.transpose(0, 1)[1].copy_(h[0])
    return (y * y).sum()


def nograd_base_narrow_zero(lib, h, w):
    y = lib.zeros(3, 4, dtype=h.dtype)
    y.copy_(h)
    y.narrow(1, 1, 2).zero_()
    return (y * h).sum()


def grad_base_transpose_zero(lib, h, w):
    y = h * 1
    y.transpose(0, 1)[1].zero_()
    return (y * h).sum()


def grad_base_narrow_mul(lib, h, w):
    y = h * 2
    y.narrow(1, 1, 2).mul_(w[:, None])
    return (y * y).sum()


def grad_base_unsqueeze_add(lib, h, w):
    y = h.sum(1)
    y.unsqueeze(1)[1:].add_(w[:2, None])
    return (y * y).sum()


CASES = [sibling_mul, sibling_base_written, sibling_after_zero, sibling_of_copy, sibling_chain,
         nograd_base_copy, nograd_base_view_chain, nograd_base_unsqueeze, nograd_base_transpose,
         nograd_base_narrow_zero, grad_base_transpose_zero, grad_base_narrow_mul,
         grad_base_unsqueeze_add]


def _run(lib, case):
    h, w = _leaves(lib)
    out = case(lib, h, w)
    out.backward()
    return [out.detach().numpy()] + [None if t.grad is None else t.grad.numpy() for t in (h, w)]


@pytest.mark.parametrize("case", CASES, ids=[c.__name__ for c in CASES])
def test_view_tracking_matches_torch(case):
    torch = pytest.importorskip("torch")
    want = _run(torch, case)
    got = _run(ember, case)
    for x, y in zip(want, got):
        assert (x is None) == (y is None)
        if x is not None:
            np.testing.assert_allclose(y, x, rtol=1e-12, atol=1e-12)


def test_sibling_grad_fn_is_rebuilt_from_the_base():
    h, _ = _leaves(ember)
    y = h * 1
    a = y.select(0, 0)
    assert type(a.grad_fn).__name__ == "SelectBackward0"
    y[:, 0].mul_(2)
    assert type(a.grad_fn).__name__ == "AsStridedBackward0"
    assert a.grad_fn.next_functions[0][0] is y.grad_fn       # the base's CopySlices
    (a.sum()).backward()
    expect = np.zeros((3, 4))
    expect[0] = 1
    expect[0, 0] = 2                                          # y[0, 0] = 2 h[0, 0]
    np.testing.assert_allclose(h.grad.numpy(), expect)


def test_nograd_base_written_with_grad_value_against_numpy():
    w = ember.tensor([1.5, -2.0], requires_grad=True)
    y = ember.zeros(3)
    y[:2].copy_(w)
    assert y.requires_grad and not y.is_leaf
    y.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [1.0, 1.0])


def test_detached_tensor_is_not_a_view_for_autograd():
    h, w = _leaves(ember)
    y = h * 1
    d = y.detach()
    d[0].copy_(w.detach()[0])             # no grad value: nothing recorded anywhere
    assert y.grad_fn is not None and type(y.grad_fn).__name__ == "MulBackward0"
    z = h.detach()
    z[:, 0].copy_(w)                      # the write reaches z's graph only, never h's
    assert h.is_leaf and h.grad_fn is None
    assert type(z.grad_fn).__name__ == "CopySlices"


def test_nograd_sibling_joins_the_graph_like_torch():
    torch = pytest.importorskip("torch")

    def flags(lib):
        w = lib.tensor([1.5, -2.0], requires_grad=True)
        y = lib.zeros(4, dtype=w.dtype)
        v = y[1:3]                      # taken while y needs no grad
        y[:2].copy_(w)
        return v.requires_grad, v.is_leaf, type(v.grad_fn).__name__

    assert flags(ember) == flags(torch) == (True, False, "AsStridedBackward0")
