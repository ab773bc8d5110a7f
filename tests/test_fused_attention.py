"""The fused scaled-dot-product attention kernel (forward and backward): parity
with PyTorch and with the composed path, causal masks, thread-count independence."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F

RNG = np.random.default_rng(5)


def _fused(q, k, v, is_causal=False, scale=None):
    """ember's fused kernel, called directly."""
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    return ember._C.reduce.sdpa_fused(q, k, v, scale, is_causal)


def _sdpa(lib):
    return _fused if lib is ember else lib.nn.functional.scaled_dot_product_attention


def _run(lib, q, k, v, g, **kw):
    ts = [lib.from_numpy(a.copy()).requires_grad_() for a in (q, k, v)]
    y = _sdpa(lib)(*ts, **kw)
    y.backward(lib.from_numpy(g))
    return y.detach().numpy(), [t.grad.numpy() for t in ts]


CASES = [((2, 4), 64, 64, 32, 32, np.float32, True),
         ((2, 4), 64, 64, 32, 32, np.float32, False),
         ((3,), 5, 7, 8, 6, np.float64, True),
         ((3,), 7, 5, 8, 6, np.float64, True),
         ((2, 2), 9, 17, 16, 4, np.float64, False),
         ((), 20, 20, 3, 5, np.float32, True)]


@pytest.mark.parametrize("batch,L,S,D,Dv,dt,causal", CASES)
def test_sdpa_matches_torch(batch, L, S, D, Dv, dt, causal):
    torch = pytest.importorskip("torch")
    q = RNG.standard_normal(batch + (L, D)).astype(dt)
    k = RNG.standard_normal(batch + (S, D)).astype(dt)
    v = RNG.standard_normal(batch + (S, Dv)).astype(dt)
    g = RNG.standard_normal(batch + (L, Dv)).astype(dt)
    ye, ge = _run(ember, q, k, v, g, is_causal=causal)
    yt, gt = _run(torch, q, k, v, g, is_causal=causal)
    tol = 2e-5 if dt == np.float32 else 1e-12
    assert ye.shape == yt.shape and ye.dtype == yt.dtype
    np.testing.assert_allclose(ye, yt, rtol=tol, atol=tol)
    for a, c in zip(ge, gt):
        np.testing.assert_allclose(a, c, rtol=tol * 5, atol=tol * 5)


# several query (192) and key (256) blocks, ragged edges, head dims 32/64/80, one query row
BLOCK_CASES = [((2,), 450, 600, 64, 64, True),
               ((2,), 450, 600, 64, 64, False),
               ((1, 2), 600, 300, 32, 32, True),
               ((3,), 200, 520, 80, 80, False),
               ((3,), 200, 520, 80, 48, True),
               ((2,), 1, 600, 64, 64, False),
               ((2,), 1, 600, 64, 64, True)]


@pytest.mark.parametrize("batch,L,S,D,Dv,causal", BLOCK_CASES)
def test_sdpa_blocked_matches_torch(batch, L, S, D, Dv, causal):
    torch = pytest.importorskip("torch")
    q = RNG.standard_normal(batch + (L, D)).astype(np.float32)
    k = RNG.standard_normal(batch + (S, D)).astype(np.float32)
    v = RNG.standard_normal(batch + (S, Dv)).astype(np.float32)
    g = RNG.standard_normal(batch + (L, Dv)).astype(np.float32)
    ye, ge = _run(ember, q, k, v, g, is_causal=causal)
    # torch in float64: the reference without its own float32 rounding
    yt, gt = _run(torch, *(a.astype(np.float64) for a in (q, k, v, g)), is_causal=causal)
    np.testing.assert_allclose(ye, yt, rtol=1e-4, atol=2e-5)
    for a, c in zip(ge, gt):
        np.testing.assert_allclose(a, c, rtol=1e-4, atol=1e-4)


def test_sdpa_public_path_long_sequence_matches_torch():
    torch = pytest.importorskip("torch")
    q, k, v = (RNG.standard_normal((1, 2, 300, 64)).astype(np.float32) for _ in range(3))
    g = RNG.standard_normal((1, 2, 300, 64)).astype(np.float32)
    for causal in (False, True):
        res = []
        for lib in (ember, torch):
            ts = [lib.from_numpy(a.copy()).requires_grad_() for a in (q, k, v)]
            y = lib.nn.functional.scaled_dot_product_attention(*ts, is_causal=causal)
            y.backward(lib.from_numpy(g))
            res.append([y.detach().numpy()] + [t.grad.numpy() for t in ts])
        for a, c in zip(*res):
            np.testing.assert_allclose(a, c, rtol=1e-4, atol=1e-4)


def _mask_case(kind, shape, L, S):
    """(ember mask, torch mask) of one kind: bool with a fully masked row, float
    additive, or a key-padding style (batch, 1, 1, S) bool mask."""
    if kind == "bool":
        m = RNG.standard_normal((L, S)) > -0.5
        m[1] = False                      # a row with no key left: output 0, no gradient
        return m, m
    if kind == "float":
        m = RNG.standard_normal(shape[:-2] + (L, S)).astype(np.float32)
        m[..., 0, :3] = -np.inf
        return m, m
    m = np.ones(shape[:1] + (1, 1, S), dtype=bool)
    m[0, ..., S // 2:] = False
    return m, m


@pytest.mark.parametrize("kind", ["bool", "float", "padding"])
@pytest.mark.parametrize("L,S", [(7, 9), (300, 450)])
def test_sdpa_masked_fused_matches_torch(kind, L, S):
    torch = pytest.importorskip("torch")
    shape = (2, 3, L, 32)
    q = RNG.standard_normal(shape).astype(np.float32)
    k = RNG.standard_normal(shape[:-2] + (S, 32)).astype(np.float32)
    v = RNG.standard_normal(shape[:-2] + (S, 32)).astype(np.float32)
    g = RNG.standard_normal(shape).astype(np.float32)
    me, mt = _mask_case(kind, shape, L, S)
    res = []
    for lib, m in ((ember, me), (torch, mt)):
        ts = [lib.from_numpy(a.copy()).requires_grad_() for a in (q, k, v)]
        y = lib.nn.functional.scaled_dot_product_attention(*ts, attn_mask=lib.from_numpy(m))
        if lib is ember:
            assert "ScaledDotProduct" in type(y.grad_fn).__name__
        y.backward(lib.from_numpy(g))
        res.append([y.detach().numpy()] + [t.grad.numpy() for t in ts])
    for a, c in zip(*res):
        np.testing.assert_allclose(a, c, rtol=1e-4, atol=1e-4)
    if kind == "bool":
        assert not res[0][0][:, :, 1].any() and not res[0][1][:, :, 1].any()


def test_sdpa_mask_with_grad_takes_the_composed_path():
    torch = pytest.importorskip("torch")
    q, k, v = (RNG.standard_normal((2, 5, 4)) for _ in range(3))
    m = RNG.standard_normal((5, 5))
    grads = []
    for lib in (ember, torch):
        mt = lib.from_numpy(m.copy()).requires_grad_()
        y = lib.nn.functional.scaled_dot_product_attention(
            *[lib.from_numpy(a) for a in (q, k, v)], attn_mask=mt)
        y.sum().backward()
        grads.append(mt.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-9, atol=1e-12)


def test_sdpa_scale_and_composed_path_agree():
    q, k, v = (RNG.standard_normal((2, 6, 4)) for _ in range(3))
    args = [ember.from_numpy(a) for a in (q, k, v)]
    fused = _fused(*args, is_causal=True, scale=0.3)
    comp = F._sdpa_composite(*args, None, 0.0, True, 0.3)
    np.testing.assert_allclose(fused.numpy(), comp.numpy(), rtol=1e-13, atol=1e-13)


def test_sdpa_mask_and_dropout_fall_back():
    torch = pytest.importorskip("torch")
    q, k, v = (RNG.standard_normal((2, 5, 4)).astype(np.float32) for _ in range(3))
    mask = RNG.standard_normal((5, 5)) > 0
    mask[:, 0] = True
    ye = F.scaled_dot_product_attention(*[ember.from_numpy(a) for a in (q, k, v)],
                                        attn_mask=ember.from_numpy(mask))
    yt = torch.nn.functional.scaled_dot_product_attention(
        *[torch.from_numpy(a) for a in (q, k, v)], attn_mask=torch.from_numpy(mask))
    np.testing.assert_allclose(ye.numpy(), yt.numpy(), rtol=1e-5, atol=1e-6)


def test_sdpa_double_backward_matches_torch():
    torch = pytest.importorskip("torch")
    q, k, v = (RNG.standard_normal((2, 4, 3)) for _ in range(3))
    out = []
    for lib in (ember, torch):
        ts = [lib.from_numpy(a.copy()).requires_grad_() for a in (q, k, v)]
        y = _sdpa(lib)(*ts, is_causal=True)
        gq, = lib.autograd.grad((y * y).sum(), (ts[0],), create_graph=True)
        (gq * gq).sum().backward()
        out.append([gq.detach().numpy()] + [t.grad.numpy() for t in ts])
    for a, c in zip(*out):
        np.testing.assert_allclose(a, c, rtol=1e-9, atol=1e-10)


# many batch-heads (one backward item each) and few (key chunks with dQ partials)
@pytest.mark.parametrize("shape", [(4, 4, 64, 32), (4, 4, 400, 32), (1, 1, 700, 64),
                                   (1, 2, 333, 64)])
@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_bit_identical_across_thread_counts(shape, causal):
    q, k, v = (RNG.standard_normal(shape).astype(np.float32) for _ in range(3))
    g = RNG.standard_normal(shape).astype(np.float32)
    mask = ember.from_numpy(RNG.standard_normal((shape[-2],) * 2).astype(np.float32))
    old = ember.get_num_threads()
    res = []
    try:
        for n in (1, 2, 3):
            ember.set_num_threads(n)
            y, grads = _run(ember, q, k, v, g, is_causal=causal)
            res.append([y.tobytes()] + [a.tobytes() for a in grads])
            ts = [ember.from_numpy(a.copy()).requires_grad_() for a in (q, k, v)]
            y = F.scaled_dot_product_attention(*ts, attn_mask=mask)
            y.backward(ember.from_numpy(g))
            res[-1] += [y.detach().numpy().tobytes()] + [t.grad.numpy().tobytes() for t in ts]
    finally:
        ember.set_num_threads(old)
    assert res[0] == res[1] == res[2]


def test_long_sequences_take_the_fused_kernel():
    q, k, v = (ember.randn(1, 256, 8, requires_grad=True) for _ in range(3))
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert "ScaledDotProduct" in type(y.grad_fn).__name__
    comp = F._sdpa_composite(q.detach(), k.detach(), v.detach(), None, 0.0, True, 8 ** -0.5)
    np.testing.assert_allclose(y.detach().numpy(), comp.numpy(), rtol=1e-5, atol=1e-6)


def test_multihead_attention_masked_without_weights_matches_torch():
    torch = pytest.importorskip("torch")
    ember.manual_seed(0)
    me = ember.nn.MultiheadAttention(16, 4, batch_first=True)
    mt = torch.nn.MultiheadAttention(16, 4, batch_first=True)
    with torch.no_grad():
        for (_, pe), (_, pt) in zip(me.named_parameters(), mt.named_parameters()):
            pt.copy_(torch.from_numpy(pe.detach().numpy()))
    x = RNG.standard_normal((2, 7, 16)).astype(np.float32)
    kpm = np.zeros((2, 7), dtype=bool)
    kpm[1, 4:] = True
    causal = np.triu(np.ones((7, 7), dtype=bool), 1)
    res = []
    for lib, m in ((ember, me), (torch, mt)):
        xx = lib.from_numpy(x.copy()).requires_grad_()
        y = m(xx, xx, xx, need_weights=False, key_padding_mask=lib.from_numpy(kpm),
              attn_mask=lib.from_numpy(causal))[0]
        y.sum().backward()
        res.append((y.detach().numpy(), xx.grad.numpy()))
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=1e-4, atol=1e-5)


def test_multihead_attention_without_weights_matches_torch():
    torch = pytest.importorskip("torch")
    ember.manual_seed(0)
    me = ember.nn.MultiheadAttention(16, 4, batch_first=True)
    mt = torch.nn.MultiheadAttention(16, 4, batch_first=True)
    with torch.no_grad():
        for (_, pe), (_, pt) in zip(me.named_parameters(), mt.named_parameters()):
            pt.copy_(torch.from_numpy(pe.detach().numpy()))
    x = RNG.standard_normal((2, 7, 16)).astype(np.float32)
    xe = ember.from_numpy(x.copy()).requires_grad_()
    xt = torch.from_numpy(x.copy()).requires_grad_()
    ye = me(xe, xe, xe, need_weights=False)[0]
    yt = mt(xt, xt, xt, need_weights=False)[0]
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=1e-5, atol=1e-5)
    ye.sum().backward()
    yt.sum().backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-5)
