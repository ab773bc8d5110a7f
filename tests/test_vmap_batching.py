"""vmap's batching rules: each op runs once on the batch (no per-sample fallback warning)
and matches torch.vmap; fallbacks warn; in-place, randomness and nesting behave as torch."""
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _np(t):
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


def _close(a, b, tol=1e-5):
    if isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _close(x, y, tol)
        return
    assert tuple(a.shape) == tuple(b.shape)
    assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
    np.testing.assert_allclose(_np(a).astype("f8"), _np(b).astype("f8"), rtol=tol, atol=tol)


def _data(shapes, seed=0, dtype="f4"):
    rs = np.random.RandomState(seed)
    return [rs.randn(*s).astype(dtype) for s in shapes]


# (id, fn(lib, *xs), input shapes, in_dims)
CASES = [
    ("add_bcast", lambda L, x, y: x + y, [(4, 3), (3,)], (0, None)),
    ("add_both", lambda L, x, y: x * y - 1, [(4, 2, 3), (4, 3)], (0, 0)),
    ("bdim1", lambda L, x, y: L.where(x > 0, x, y), [(2, 4, 3), (4, 3)], (1, 0)),
    ("unary", lambda L, x: L.nn.functional.gelu(x.exp().tanh()), [(4, 5)], 0),
    ("sum_dim", lambda L, x: x.sum(1), [(4, 3, 5)], 0),
    ("mean_all", lambda L, x: x.mean(), [(4, 3, 5)], 0),
    ("amax_neg", lambda L, x: x.amax(-1, keepdim=True), [(4, 3, 5)], 2),
    ("max_dim", lambda L, x: x.max(0), [(4, 3, 5)], 0),
    ("max_all", lambda L, x: x.max(), [(4, 3, 5)], 0),
    ("argmax", lambda L, x: x.argmax(), [(4, 3, 5)], 0),
    ("var", lambda L, x: x.var(0, keepdim=True), [(4, 3, 5)], 0),
    ("softmax", lambda L, x: L.softmax(x, -1) + L.log_softmax(x, 0), [(4, 3, 5)], 0),
    ("cumsum", lambda L, x: x.cumsum(0), [(4, 3, 5)], 1),
    ("view", lambda L, x: x.view(-1, 3).t(), [(4, 2, 3)], 0),
    ("reshape_bdim1", lambda L, x: x.reshape(6), [(2, 4, 3)], 1),
    ("permute", lambda L, x: x.permute(2, 0, 1).contiguous(), [(4, 2, 3, 5)], 0),
    ("transpose", lambda L, x: x.transpose(0, -1), [(4, 2, 3)], 0),
    ("squeeze", lambda L, x: x.squeeze() + x.squeeze(1).unsqueeze(-1).sum(), [(4, 2, 1, 3)], 0),
    ("expand", lambda L, x: x.unsqueeze(0).expand(5, 3, 2), [(4, 3, 1)], 0),
    ("getitem", lambda L, x: x[1:, ..., None, 0] * x[0], [(4, 3, 2)], 0),
    ("getitem_idx", lambda L, x: x[L.tensor([2, 0])], [(4, 3, 2)], 0),
    ("select_narrow", lambda L, x: x.select(1, 0) + x.narrow(1, 1, 1).squeeze(1),
     [(4, 3, 2)], 0),
    ("flatten", lambda L, x: x.flatten() + x.flatten(1).sum(), [(4, 3, 2)], 0),
    ("unbind_split", lambda L, x: tuple(x.unbind(1)) + tuple(x.split(1, 0)), [(4, 2, 3)], 0),
    ("cat_stack", lambda L, x, y: (L.cat([x, y], 0), L.stack([x, y], -1)),
     [(4, 2, 3), (2, 3)], (0, None)),
    ("matmul_vv", lambda L, x, y: x @ y, [(4, 3), (4, 3)], (0, 0)),
    ("matmul_mv", lambda L, x, y: x @ y, [(4, 2, 3), (3,)], (0, None)),
    ("matmul_vm", lambda L, x, y: x @ y, [(3,), (4, 3, 2)], (None, 0)),
    ("matmul_bb", lambda L, x, y: x @ y, [(4, 5, 2, 3), (3, 4, 6)], (0, 1)),
    ("mm_bmm", lambda L, x, y: (L.mm(x, y[0]), L.bmm(x.unsqueeze(0), y)),
     [(4, 2, 3), (4, 1, 3, 2)], (0, 0)),
    ("linear", lambda L, x, w, b: L.nn.functional.linear(x, w, b),
     [(4, 5, 3), (2, 3), (2,)], (0, None, None)),
    ("linear_bw", lambda L, x, w, b: L.nn.functional.linear(x, w, b),
     [(4, 3), (4, 2, 3), (4, 2)], (0, 0, 0)),
    ("conv2d", lambda L, x, w: L.nn.functional.conv2d(x, w, padding=1),
     [(4, 2, 3, 5, 5), (6, 3, 3, 3)], (0, None)),
    ("conv2d_w", lambda L, x, w, b: L.nn.functional.conv2d(x, w, b, stride=2),
     [(3, 5, 5), (4, 6, 3, 3, 3), (4, 6)], (None, 0, 0)),
    ("conv1d_unbatched_input", lambda L, x, w: L.nn.functional.conv1d(x, w),
     [(4, 3, 7), (2, 3, 3)], (0, None)),
    ("pool", lambda L, x: L.nn.functional.max_pool2d(x, 2), [(4, 2, 3, 4, 4)], 0),
    ("layer_norm", lambda L, x, w: L.nn.functional.layer_norm(x, (3,), w),
     [(4, 2, 3), (4, 3)], (0, 0)),
    ("gather", lambda L, x: L.gather(x, 1, L.tensor([[0, 2], [1, 1]])), [(4, 2, 3)], 0),
    ("tril", lambda L, x: x.tril(), [(4, 3, 3)], 0),
    ("index_select", lambda L, x: L.index_select(x, -1, L.tensor([2, 0, 2])), [(4, 3, 3)], 0),
    ("roll", lambda L, x: (L.roll(x, 1, 0), L.roll(x, (1, -1), (0, 1)), L.roll(x, 2)),
     [(4, 3, 5)], 0),
    ("zeros_like", lambda L, x: L.zeros_like(x) + L.ones(3), [(4, 3)], 0),
    ("trace_kron_diff", lambda L, x: (L.trace(x), L.kron(x, x), L.diff(x)), [(4, 3, 3)], 0),
    ("einsum", lambda L, x, y: L.einsum("ij,jk->ik", x, y), [(4, 2, 3), (3, 5)], (0, None)),
    ("clamp", lambda L, x, y: x.clamp(min=y), [(4, 3), (4, 3)], (0, 0)),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_rules_match_torch_without_fallback(case):
    _, fn, shapes, in_dims = case
    data = _data(shapes)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        got = ember.vmap(lambda *xs: fn(ember, *xs), in_dims)(*map(ember.tensor, data))
    want = torch.vmap(lambda *xs: fn(torch, *xs), in_dims)(*map(torch.tensor, data))
    _close(got, want)


def test_code_inside_sees_per_sample_shapes():
    seen = []

    def f(x):
        seen.append((tuple(x.shape), x.dim(), x.numel()))
        return x.sum(-1)
    ember.vmap(f, in_dims=1)(ember.ones(3, 5, 2))
    assert seen == [((3, 2), 2, 6)]


def test_out_dims_and_unbatched_outputs():
    x = _data([(4, 3)])[0]
    for lib in (ember, torch):
        out = lib.vmap(lambda v: (v * 2, lib.ones(2)), out_dims=(1, 0))(lib.tensor(x))
        if lib is ember:
            got = out
        else:
            _close(got, out)


def test_embedding_of_batched_indices():
    w = _data([(6, 3)])[0]
    idx = np.array([[0, 2], [1, 5], [2, 0], [4, 4]])
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        got = ember.vmap(lambda i: ember.nn.functional.embedding(i, ember.tensor(w)))(
            ember.tensor(idx))
    _close(got, torch.vmap(lambda i: torch.nn.functional.embedding(i, torch.tensor(w)))(
        torch.tensor(idx)))


def test_fallback_warns_and_matches():
    x = _data([(4, 3, 3)])[0]
    with pytest.warns(UserWarning, match="batching rule for outer"):
        got = ember.vmap(lambda m: ember.outer(m[0], m[1]))(ember.tensor(x))
    want = torch.vmap(lambda m: torch.outer(m[0], m[1]))(torch.tensor(x))
    _close(got, want)


def test_inplace_on_batched_and_error_on_unbatched():
    x, y = _data([(4, 3), (4, 3)])

    def f(a, b):
        a = a.clone()
        a.mul_(b)
        a[0] = 5.0
        a.add_(1)
        return a
    _close(ember.vmap(f)(ember.tensor(x), ember.tensor(y)),
           torch.vmap(f)(torch.tensor(x), torch.tensor(y)))

    def g(a, b):
        return a.add_(b)
    with pytest.raises(RuntimeError, match="vmapped over"):
        ember.vmap(g, in_dims=(None, 0))(ember.tensor(x[0]), ember.tensor(y))
    with pytest.raises(RuntimeError):
        torch.vmap(g, in_dims=(None, 0))(torch.tensor(x[0]), torch.tensor(y))


def test_new_factories_are_batched():
    x = _data([(4, 2)])[0]

    def f(v):
        z = v.new_zeros(3)
        z.add_(v[0])
        return z + v.new_full((3,), 2.0) + v.new_ones(3)
    _close(ember.vmap(f)(ember.tensor(x)), torch.vmap(f)(torch.tensor(x)))


def test_item_inside_vmap_errors():
    with pytest.raises(RuntimeError, match=r"\.item\(\)"):
        ember.vmap(lambda v: v.sum().item())(ember.ones(3, 2))


def test_randomness():
    x = ember.ones(6, 1000)
    with pytest.raises(RuntimeError, match="randomness"):
        ember.vmap(lambda v: ember.nn.functional.dropout(v, 0.5))(x)
    diff = ember.vmap(lambda v: ember.nn.functional.dropout(v, 0.5), randomness="different")(x)
    same = ember.vmap(lambda v: ember.nn.functional.dropout(v, 0.5), randomness="same")(x)
    assert not bool((diff[0] == diff[1]).all())
    assert bool((same[0] == same[1]).all())
    assert 0.4 < float((same[0] == 0).float().mean()) < 0.6
    fresh = ember.vmap(lambda v: v + ember.randn(1000), randomness="different")(x)
    assert fresh.shape == (6, 1000) and not bool((fresh[0] == fresh[1]).all())


def test_nested_vmap_and_chunks():
    x, y = _data([(3, 4, 5), (4, 5)])
    for lib in (ember, torch):
        f = lib.vmap(lib.vmap(lambda a, b: (a * b).sum() + a.max()), in_dims=(0, None))
        r = f(lib.tensor(x), lib.tensor(y))
        c = lib.vmap(lambda a: a.exp().sum(0), chunk_size=2)(lib.tensor(x))
        if lib is ember:
            got = (r, c)
    _close(got, (r, c))


def test_grad_and_jacrev_inside_vmap_match_torch():
    w, x = _data([(3, 4), (5, 4)])
    res = []
    for lib in (ember, torch):
        W, X = lib.tensor(w), lib.tensor(x)

        def loss(w, x, lib=lib):
            return lib.softmax(w @ x, 0).log().sum()
        res.append((lib.func.vmap(lib.func.grad(loss), in_dims=(None, 0))(W, X),
                    lib.func.vmap(lib.func.grad(loss, argnums=1), in_dims=(None, 0))(W, X),
                    lib.func.vmap(lib.func.jacrev(lambda v: (W @ v).tanh()))(X),
                    lib.vmap(lib.vmap(lib.func.grad(lambda v: (v.sin() * v).sum())))(
                        X.reshape(5, 2, 2))))
    _close(res[0], res[1], 1e-4)


def test_grad_of_vmap():
    x = _data([(5, 3)])[0]
    res = []
    for lib in (ember, torch):
        res.append(lib.func.grad(lambda v: lib.vmap(lambda r: (r * r).sum().sqrt())(v).sum())(
            lib.tensor(x)))
    _close(res[0], res[1])


def test_cross_entropy_per_sample_grads():
    lg, w = _data([(6, 4), (3, 4)])
    t = np.array([0, 2, 1, 1, 0, 2])
    res = []
    for lib in (ember, torch):
        def loss(w, x, y, lib=lib):
            return lib.nn.functional.cross_entropy((w @ x).unsqueeze(0), y.unsqueeze(0))
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)
            res.append(lib.func.vmap(lib.func.grad(loss), in_dims=(None, 0, 0))(
                lib.tensor(w), lib.tensor(lg), lib.tensor(t)))
    _close(res[0], res[1], 1e-5)


LOSSES = [
    ("mse_sum", lambda L, x, y: L.nn.functional.mse_loss(x, y, reduction="sum")),
    ("l1_none", lambda L, x, y: L.nn.functional.l1_loss(x, y, reduction="none")),
    ("smooth_l1", lambda L, x, y: L.nn.functional.smooth_l1_loss(x, y, beta=0.5)),
    ("bce_logits", lambda L, x, y: L.nn.functional.binary_cross_entropy_with_logits(
        x, y.sigmoid())),
    ("kl_batchmean", lambda L, x, y: L.nn.functional.kl_div(
        x.log_softmax(-1), y.softmax(-1), reduction="batchmean")),
    ("ce_1d", lambda L, x, y: L.nn.functional.cross_entropy(x[0], (y[0, 0] > 0).long())),
    ("ce_2d_ignore", lambda L, x, y: L.nn.functional.cross_entropy(
        x, (y[:, 0] > 0).long() * 2 - 1, ignore_index=-1, reduction="mean")),
    ("ce_probs", lambda L, x, y: L.nn.functional.cross_entropy(x, y.softmax(-1))),
    ("nll_weight", lambda L, x, y: L.nn.functional.nll_loss(
        x.log_softmax(-1), (y[:, 1] > 0).long(), weight=L.tensor([0.3, 2.0, 1.0]))),
]


@pytest.mark.parametrize("case", LOSSES, ids=[c[0] for c in LOSSES])
def test_losses_batch_without_fallback(case):
    _, fn = case
    x, y = _data([(5, 4, 3), (5, 4, 3)], seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        got = ember.vmap(lambda a, b: fn(ember, a, b))(ember.tensor(x), ember.tensor(y))
    want = torch.vmap(lambda a, b: fn(torch, a, b))(torch.tensor(x), torch.tensor(y))
    _close(got, want)


@pytest.mark.parametrize("name", ["inv", "det", "slogdet", "cholesky", "eigvalsh", "svdvals",
                                  "pinv", "qr"])
def test_linalg_batches_without_fallback(name):
    x = _data([(4, 3, 3)], seed=5)[0]
    x = x @ x.transpose(0, 2, 1) + 3 * np.eye(3, dtype="f4")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        got = ember.vmap(getattr(ember.linalg, name))(ember.tensor(x))
    want = torch.vmap(getattr(torch.linalg, name))(torch.tensor(x))
    _close(tuple(got) if isinstance(got, tuple) else got,
           tuple(want) if isinstance(want, tuple) else want, 1e-4)


def test_per_sample_grad_through_linalg():
    x = _data([(4, 3, 3)], seed=6)[0] + 3 * np.eye(3, dtype="f4")
    got = ember.func.vmap(ember.func.grad(lambda m: ember.linalg.inv(m).sum()))(ember.tensor(x))
    want = torch.func.vmap(torch.func.grad(lambda m: torch.linalg.inv(m).sum()))(
        torch.tensor(x))
    _close(got, want, 1e-4)
