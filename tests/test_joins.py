"""Joins and reorders: cat/stack family, flip, roll, repeat, tile, tril/triu, diag,
meshgrid, broadcast_tensors, atleast_*; against NumPy and PyTorch when installed."""
import numpy as np
import pytest

import ember

RNG = np.random.default_rng(1)


def A(*shape, dtype=np.float32):
    return (RNG.standard_normal(shape) * 10).astype(dtype)


def same(e, ref):
    a = np.asarray(e.detach().numpy())
    b = np.asarray(ref)
    assert a.shape == b.shape, (a.shape, b.shape)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    np.testing.assert_array_equal(a, b)


T = ember.tensor


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_cat(dim):
    a, b, c = A(2, 3, 4), A(2, 3, 4), A(2, 3, 4)
    sa = list(a.shape)
    sa[dim] = 1
    d = A(*sa)
    same(ember.cat([T(a), T(b), T(d)], dim), np.concatenate([a, b, d], dim))
    same(ember.concat((T(a), T(c)), dim), np.concatenate([a, c], dim))
    same(ember.concatenate([T(a)], axis=dim), a)


def test_cat_noncontiguous_and_promotion():
    a, b = A(3, 4), A(4, 3)
    same(ember.cat([T(a), T(b).t()], 0), np.concatenate([a, b.T], 0))
    same(ember.cat([T(a[:, ::2]), T(a)], 1), np.concatenate([a[:, ::2], a], 1))
    i = np.arange(4, dtype=np.int32).reshape(1, 4)
    same(ember.cat([T(i), T(a)], 0), np.concatenate([i.astype(np.float32), a], 0))
    same(ember.cat([T(i), T(i.astype(np.int64))], 1),
         np.concatenate([i, i], 1).astype(np.int64))
    same(ember.cat([T(i), T(i.astype(np.uint8))], 0), np.concatenate([i, i], 0))
    b8 = np.array([[True, False]])
    same(ember.cat([T(b8), T(b8)], 1), np.concatenate([b8, b8], 1))


def test_cat_legacy_empty_and_zero_size():
    a = A(2, 3)
    e = ember.tensor([], dtype=ember.float64)
    r = ember.cat([e, T(a)])
    same(r, a.astype(np.float64))
    same(ember.cat([T(A(0, 3)), T(a)]), a)
    same(ember.cat([T(a), T(A(2, 0))], 1), a)


def test_cat_large_parallel():
    parts = [A(300, 50 + 10 * k) for k in range(3)]
    same(ember.cat([T(p) for p in parts], 1), np.concatenate(parts, 1))


def test_cat_errors():
    with pytest.raises(ValueError):
        ember.cat([])
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        ember.cat([T(A(2, 3)), T(A(2))])
    with pytest.raises(RuntimeError, match="Sizes of tensors must match except in dimension 1"):
        ember.cat([T(A(2, 3)), T(A(3, 2))], 1)
    with pytest.raises(RuntimeError, match="zero-dimensional"):
        ember.cat([ember.tensor(1.0)])
    with pytest.raises(IndexError):
        ember.cat([T(A(2, 3))], 2)
    with pytest.raises(TypeError):
        ember.cat([T(A(2)), 3])


def test_stack_family():
    a, b = A(2, 3), A(2, 3)
    for d in (0, 1, 2, -1):
        same(ember.stack([T(a), T(b)], d), np.stack([a, b], d))
    v, w = A(3), A(3)
    same(ember.hstack([T(v), T(w)]), np.hstack([v, w]))
    same(ember.hstack([T(a), T(b)]), np.hstack([a, b]))
    same(ember.vstack([T(v), T(w)]), np.vstack([v, w]))
    same(ember.vstack([T(a), T(v)]), np.vstack([a, v]))
    same(ember.dstack([T(a), T(b)]), np.dstack([a, b]))
    same(ember.dstack([T(v), T(w)]), np.dstack([v, w]))
    same(ember.column_stack([T(v), T(a.T)]), np.column_stack([v, a.T]))
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        ember.stack([T(a), T(A(3, 2))])
    with pytest.raises(RuntimeError, match="non-empty"):
        ember.stack([])


def test_flip_roll():
    a = A(3, 4, 5)
    x = T(a)
    same(ember.flip(x, (0, 2)), np.flip(a, (0, 2)))
    same(x.flip(1), np.flip(a, 1))
    same(x.permute(2, 0, 1).flip(-1), np.flip(a.transpose(2, 0, 1), -1))
    same(ember.fliplr(x), np.fliplr(a))
    same(ember.flipud(x), np.flipud(a))
    same(ember.roll(x, 2, 1), np.roll(a, 2, 1))
    same(x.roll((1, -7), (0, 2)), np.roll(a, (1, -7), (0, 2)))
    same(x.roll(5), np.roll(a, 5))
    same(x.transpose(0, 2).roll(3), np.roll(a.transpose(2, 1, 0), 3))
    same(ember.roll(T(A(0, 3)), 1, 0), np.zeros((0, 3), np.float32))
    with pytest.raises(RuntimeError, match="appears multiple times"):
        x.flip(0, 0)
    with pytest.raises(RuntimeError, match="shifts and dimensions must align"):
        x.roll(1, (0, 1))


def test_repeat_tile_interleave():
    a = A(2, 3)
    x = T(a)
    same(x.repeat(2, 3), np.tile(a, (2, 3)))
    same(x.repeat(2, 1, 2), np.tile(a, (2, 1, 2)))
    same(x.t().repeat(1, 2), np.tile(a.T, (1, 2)))
    same(x.repeat(0, 2), np.tile(a, (0, 2)))
    same(ember.tile(x, (2,)), np.tile(a, 2))
    same(x.tile((3, 1, 1)), np.tile(a, (3, 1, 1)))
    same(ember.repeat_interleave(x, 2), np.repeat(a, 2))
    same(x.repeat_interleave(3, dim=1), np.repeat(a, 3, 1))
    same(x.repeat_interleave(ember.tensor([1, 0]), dim=0), np.repeat(a, [1, 0], 0))
    same(ember.repeat_interleave(ember.tensor([2, 0, 1])), np.array([0, 0, 2]))
    with pytest.raises(RuntimeError):
        x.repeat(2)


def test_tril_triu_diag():
    a = A(4, 5)
    b = A(2, 3, 3)
    for k in (-2, -1, 0, 1, 3, 7, -9):
        same(ember.tril(T(a), k), np.tril(a, k))
        same(T(a).triu(k), np.triu(a, k))
        same(ember.triu(T(b), k), np.triu(b, k))
    y = T(a.copy())
    y.tril_(1)
    same(y, np.tril(a, 1))
    v = A(3)
    for k in (0, 1, -2):
        same(ember.diag(T(v), k), np.diag(v, k))
        same(ember.diag(T(a), k), np.diag(a, k))
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        ember.tril(T(v))
    with pytest.raises(RuntimeError, match="1D or 2D"):
        ember.diag(T(b))


def test_meshgrid_broadcast_atleast():
    x, y = A(3), A(4)
    for ind in ("ij", "xy"):
        for e, r in zip(ember.meshgrid(T(x), T(y), indexing=ind),
                        np.meshgrid(x, y, indexing=ind)):
            same(e, r)
    z = A(2)
    for e, r in zip(ember.meshgrid([T(x), T(y), T(z)], indexing="xy"),
                    np.meshgrid(x, y, z, indexing="xy")):
        same(e, r)
    p, q = ember.broadcast_tensors(T(A(3, 1)), T(A(1, 4)))
    assert tuple(p.shape) == (3, 4) == tuple(q.shape)
    assert ember.atleast_1d(ember.tensor(1.0)).shape == (1,)
    assert ember.atleast_2d(T(x)).shape == (1, 3)
    assert ember.atleast_3d(T(x)).shape == (1, 3, 1)
    assert ember.atleast_3d(T(A(2, 3))).shape == (2, 3, 1)
    assert [t.shape for t in ember.atleast_2d(T(x), ember.tensor(2.0))] == [(1, 3), (1, 1)]


def test_torch_parity_joins():
    torch = pytest.importorskip("torch")
    a = A(3, 4)
    cases = [
        "torch.cat([x, x.t().t()[:1]], 0)",
        "torch.stack([x, x], 1)",
        "torch.hstack([x, x])",
        "torch.vstack([x, x[0]])",
        "torch.dstack([x, x])",
        "torch.column_stack([x, x[:, 0]])",
        "x.flip(0, 1)",
        "x.roll(-2)",
        "x.roll((1, 2), (1, 0))",
        "x.repeat(2, 1, 2)",
        "x.tile((2,))",
        "x.repeat_interleave(2, 1)",
        "torch.tril(x, -1)",
        "torch.triu(x, 2)",
        "torch.diag(x, -1)",
        "torch.diag(x[0])",
        "torch.diag_embed(x, 1)",
        "torch.diag_embed(x, -1, 0, 2)",
        "torch.meshgrid(x[0], x[1, :2], indexing='xy')[0]",
        "torch.cat([x.int(), x.double()], 1)",
        "torch.cat([x.bool(), x.long()], 1)",
    ]
    for c in cases:
        ref = eval(c, {"x": torch.tensor(a), "torch": torch})
        got = eval(c, {"x": ember.tensor(a), "torch": ember})
        assert str(got.dtype).split(".")[-1] == str(ref.dtype).split(".")[-1], c
        np.testing.assert_array_equal(got.numpy(), ref.numpy(), err_msg=c)


def test_dtypes_roundtrip():
    for dt in (ember.float16, ember.bfloat16, ember.int8, ember.int16, ember.bool):
        x = ember.ones(2, 3, dtype=dt)
        for r in (ember.cat([x, x], 1), x.flip(0), x.roll(1, 1), x.repeat(2, 1),
                  ember.tril(x), ember.stack([x, x])):
            assert r.dtype == dt


@pytest.mark.parametrize("bad, name", [(np.ones(2, np.float32), "numpy.ndarray"),
                                       ([1.0, 2.0], "list"), (3, "int")])
def test_join_names_the_foreign_element_type_like_torch(bad, name):
    msg = f"expected Tensor as element 1 in argument 0, but got {name}$"
    for op in (ember.cat, ember.stack):
        with pytest.raises(TypeError, match=msg):
            op([T([1.0, 2.0]), bad])
    try:
        import torch
    except ImportError:
        return
    with pytest.raises(TypeError, match=msg):
        torch.cat([torch.tensor([1.0, 2.0]), bad])
