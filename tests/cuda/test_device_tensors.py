"""Tensors on a CUDA device: factories, moves, every op of the CUDA dispatcher against
the CPU result (strided, broadcast and empty operands included), autograd, and an
MLP and a small transformer block training on the device with CPU losses.

Marked ``cuda`` (skipped without a device).  tests/test_cuda_dispatch_cpu.py runs the
same functions on the CPU over a stand-in for the kernel library, which checks the
dispatcher's glue (descriptors, strides, argument order, autograd records)."""

import contextlib
import math

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F

pytestmark = pytest.mark.cuda

DEV = "cuda"


@contextlib.contextmanager
def deterministic(on=True):
    """use_deterministic_algorithms(on) inside the block, the previous setting after."""
    prev = ember.are_deterministic_algorithms_enabled()
    ember.use_deterministic_algorithms(on)
    try:
        yield
    finally:
        ember.use_deterministic_algorithms(prev)


def _np(t):
    return t.detach().cpu().numpy()


def close(got, ref, rtol=1e-5, atol=1e-6):
    assert got.device.type == "cuda", got.device
    assert got.dtype == ref.dtype, (got.dtype, ref.dtype)
    assert tuple(got.shape) == tuple(ref.shape), (tuple(got.shape), tuple(ref.shape))
    g, r = _np(got), _np(ref)
    if g.dtype.kind in "biu":
        np.testing.assert_array_equal(g, r)
    else:
        np.testing.assert_allclose(g.astype(np.float64), r.astype(np.float64), rtol=rtol,
                                   atol=atol)


def data(*shape, lo=-2.0, hi=2.0, seed=0, dtype=np.float32):
    return ember.tensor(np.random.default_rng(seed).uniform(lo, hi, shape).astype(dtype))


# --- factories and moves ---------------------------------------------------------------

def test_factories_on_cuda():
    z = ember.zeros(2, 3, device=DEV)
    assert z.device == ember.device("cuda", 0) and z.is_cuda and str(z.device) == "cuda:0"
    close(z, ember.zeros(2, 3))
    close(ember.ones((4,), dtype=ember.int64, device="cuda:0"), ember.ones(4, dtype=ember.int64))
    close(ember.full((2, 2), 7.5, device=ember.device("cuda")), ember.full((2, 2), 7.5))
    close(ember.arange(10, device=DEV), ember.arange(10))
    close(ember.arange(0, 1, 0.25, device=DEV), ember.arange(0, 1, 0.25))
    close(ember.linspace(0, 1, 5, device=DEV), ember.linspace(0, 1, 5))
    close(ember.eye(3, device=DEV), ember.eye(3))
    close(ember.tensor([[1, 2], [3, 4]], device=DEV), ember.tensor([[1, 2], [3, 4]]))
    close(ember.as_tensor(np.arange(4.0), device=DEV), ember.arange(4.0, dtype=ember.float64))
    close(ember.as_tensor(np.arange(4), dtype=ember.float32, device=DEV), ember.arange(4.0))
    x = ember.tensor([1.0, 2.0], device=DEV, requires_grad=True)
    assert x.requires_grad and x.is_leaf
    e = ember.empty(3, 4, device=DEV)
    assert e.shape == (3, 4) and e.device.type == "cuda"
    close(ember.zeros_like(e), ember.zeros(3, 4))
    close(ember.ones_like(e), ember.ones(3, 4))
    close(ember.full_like(e, 2.0), ember.full((3, 4), 2.0))
    assert ember.empty_like(e).device == e.device
    assert ember.zeros(0, 3, device=DEV).numel() == 0


def test_random_factories_follow_the_cpu_streams():
    g1, g2 = ember.Generator().manual_seed(5), ember.Generator().manual_seed(5)
    close(ember.rand(1000, device=DEV, generator=g1), ember.rand(1000, generator=g2))
    close(ember.randn(3, 7, device=DEV, generator=g1), ember.randn(3, 7, generator=g2))
    close(ember.randint(-3, 9, (50,), device=DEV, generator=g1),
          ember.randint(-3, 9, (50,), generator=g2))
    ember.cuda.manual_seed(11)
    a = ember.rand(100, device=DEV)
    b = ember.randn(100, device=DEV)
    ember.cuda.manual_seed(11)
    close(ember.rand(100, device=DEV), a)
    close(ember.randn(100, device=DEV), b)
    ember.manual_seed(4)                   # seeds the CUDA generators too, as torch
    d = ember.rand(10, device=DEV)
    close(d, ember.rand(10).to(DEV))       # the same seed, the same stream
    assert 0.0 <= float(a.min()) and float(a.max()) < 1.0
    u = ember.empty(500, device=DEV).uniform_(-2.0, 3.0, generator=ember.Generator().manual_seed(1))
    close(u, ember.empty(500).uniform_(-2.0, 3.0, generator=ember.Generator().manual_seed(1)))
    n = ember.empty(4, 5, device=DEV).normal_(1.0, 0.5, generator=ember.Generator().manual_seed(2))
    close(n, ember.empty(4, 5).normal_(1.0, 0.5, generator=ember.Generator().manual_seed(2)))
    r = ember.rand_like(n)
    assert r.device == n.device and r.shape == n.shape
    assert ember.randn_like(n).device == n.device


@pytest.mark.parametrize("dtype", [ember.bool, ember.uint8, ember.int8, ember.int16,
                                   ember.int32, ember.int64, ember.float16, ember.bfloat16,
                                   ember.float32, ember.float64])
def test_round_trip_every_dtype(dtype):
    c = (data(3, 5, lo=-50, hi=50) > 0) if dtype == ember.bool else \
        data(3, 5, lo=-50, hi=50).to(dtype)
    d = c.to(DEV)
    assert d.dtype == dtype and d.device.type == "cuda"
    back = d.cpu()
    assert back.device.type == "cpu"
    np.testing.assert_array_equal(back.view(ember.uint8).numpy() if dtype == ember.bool else
                                  back.float().numpy(),
                                  c.view(ember.uint8).numpy() if dtype == ember.bool else
                                  c.float().numpy())


def test_moves_casts_strided_and_views():
    c = data(4, 6)
    d = c.t().cuda()                      # non-contiguous host source
    close(d, c.t().contiguous())
    close(d.t().cpu().to(DEV), c)          # non-contiguous device source
    close(c.to(DEV, ember.float64), c.double())
    close(c.cuda().to(ember.int32), c.to(ember.int32))
    close(c.cuda().half().float(), c.half().float())
    v = c.cuda()[1:3, ::2]                 # views share device memory
    close(v, c[1:3, ::2].contiguous())
    close(c.cuda()[2], c[2])
    close(c.cuda()[:, None, 1], c[:, None, 1])
    assert c.cuda().to("cuda") is not None and c.cuda().to(DEV).device.type == "cuda"
    d = c.cuda()
    assert d.to("cuda:0") is d
    close(d.reshape(3, 8), c.reshape(3, 8))
    close(d.t().reshape(24), c.t().reshape(24))
    close(d.permute(1, 0).contiguous(), c.permute(1, 0).contiguous())
    close(d.unsqueeze(0).expand(2, 4, 6).contiguous(), c.unsqueeze(0).expand(2, 4, 6))
    e = d.clone()
    e[1] = 5.0
    e[:, 0] = ember.arange(4.0, device=DEV)
    ref = c.clone()
    ref[1] = 5.0
    ref[:, 0] = ember.arange(4.0)
    close(e, ref)
    z = d.clone().zero_()
    close(z, ember.zeros(4, 6))
    f = d.clone().fill_(3.0)
    close(f, ember.full((4, 6), 3.0))
    out = ember.empty(6, 4, device=DEV)
    out.copy_(c.t())                        # host -> device copy_
    close(out, c.t().contiguous())
    host = ember.empty(4, 6)
    host.copy_(d)                           # device -> host copy_
    np.testing.assert_array_equal(host.numpy(), c.numpy())


@pytest.mark.parametrize("dtype", [ember.uint8, ember.float16, ember.float32, ember.float64,
                                   ember.complex128])
def test_transposed_copies(dtype):
    # device transposes (the tiled kernel: dst contiguous, src contiguous along dst's rows)
    def same(got, ref):
        assert got.is_cuda and got.dtype == ref.dtype and got.shape == ref.shape
        np.testing.assert_array_equal(_np(got), _np(ref))

    rng = np.random.default_rng(3)
    for shape, dims in [((33, 70), (1, 0)), ((3, 45, 17), (0, 2, 1)), ((1, 5, 64), (0, 2, 1)),
                        ((40, 1, 33), (2, 1, 0)), ((2, 3, 31, 9), (0, 1, 3, 2))]:
        v = rng.uniform(0, 100, shape)
        c = ember.tensor(v + 1j * v[::-1] if dtype == ember.complex128 else v).to(dtype)
        same(c.cuda().permute(*dims).contiguous(), c.permute(*dims).contiguous())
    c = ember.tensor(rng.uniform(0, 100, (64, 48))).to(dtype)
    same(c.cuda()[::2].t().contiguous(), c[::2].t().contiguous())
    same(c.cuda().t()[:, 3:40].contiguous(), c.t()[:, 3:40].contiguous())
    # permutes that keep the last dim (16-byte vectors where rows allow), a misaligned
    # start and a last dim of odd length
    c = ember.tensor(rng.uniform(0, 100, (2, 5, 3, 32))).to(dtype)
    same(c.cuda().permute(0, 2, 1, 3).contiguous(), c.permute(0, 2, 1, 3).contiguous())
    same(c.cuda()[..., 1:17].permute(2, 0, 1, 3).contiguous(),
         c[..., 1:17].permute(2, 0, 1, 3).contiguous())
    same(c.cuda()[..., :7].transpose(0, 1).contiguous(), c[..., :7].transpose(0, 1).contiguous())


def test_item_print_numpy_and_non_blocking():
    d = ember.tensor([[1.5, 2.0]], device=DEV)
    assert d[0, 1].item() == 2.0 and d.sum().item() == 3.5
    assert d.tolist() == [[1.5, 2.0]]
    assert "device='cuda:0'" in repr(d) and "1.5000" in repr(d)
    with pytest.raises(TypeError, match=r"cuda.*\.cpu\(\)"):
        d.numpy()
    p = data(1000).pin_memory()
    assert p.is_pinned() and not data(3).is_pinned()
    q = p.to(DEV, non_blocking=True)
    h = q.to("cpu", non_blocking=True)
    assert h.is_pinned()
    if ember.cuda.is_available():          # (the CPU tests' stand-in copies synchronously)
        ember.cuda.synchronize()
    np.testing.assert_array_equal(h.numpy(), p.numpy())
    close(data(5).cuda(non_blocking=True), data(5))


def test_memory_is_returned_to_the_allocator():
    if not ember.cuda.is_available():
        pytest.skip("needs the device's allocator statistics")
    ember.cuda.synchronize()
    before = ember.cuda.memory_allocated()
    t = ember.empty(1 << 20, device=DEV)
    assert ember.cuda.memory_allocated() >= before + 4 * (1 << 20)
    del t
    assert ember.cuda.memory_allocated() == before


# --- elementwise -----------------------------------------------------------------------

BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "atan2", "hypot", "copysign",
          "fmax", "fmin", "logaddexp", "remainder", "fmod", "floor_divide"]
COMPARE = ["eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"]
UNARY = ["neg", "abs", "exp", "expm1", "log1p", "sin", "cos", "tanh", "sigmoid", "relu",
         "sqrt", "rsqrt", "log", "floor", "ceil", "trunc", "erf", "reciprocal", "square",
         "sign", "atan", "silu"]


@pytest.mark.parametrize("name", BINARY)
def test_binary_contiguous_broadcast_strided_scalar_empty(name):
    fn = getattr(ember, name)
    a, b = data(3, 4, 5), data(4, 1, seed=1) + 3.0
    close(fn(a.cuda(), b.cuda()), fn(a, b), rtol=2e-6)
    at = data(5, 4, seed=2)                              # strided operands
    close(fn(at.cuda().t(), b.t().cuda().t()), fn(at.t(), b), rtol=2e-6)
    close(fn(a.cuda()[:, ::2], b.cuda()[::2]), fn(a[:, ::2], b[::2]), rtol=2e-6)
    close(fn(a.cuda(), 1.5), fn(a, 1.5), rtol=2e-6)
    e = ember.empty(0, 5)
    close(fn(e.cuda(), data(5).cuda()), fn(e, data(5)))
    ia, ib = data(6, lo=-20, hi=20).long(), data(6, lo=1, hi=9, seed=3).long()
    if name not in ("atan2", "hypot", "copysign", "logaddexp", "fmax", "fmin"):
        close(fn(ia.cuda(), ib.cuda()), fn(ia, ib))
    close(fn(ia.cuda(), a[0, 0, :1].cuda()), fn(ia, a[0, 0, :1]), rtol=2e-6)  # promotion


def test_pow_and_in_place_and_out():
    a, b = data(4, 3, lo=0.1, hi=3), data(4, 3, seed=1)
    close(ember.pow(a.cuda(), b.cuda()), ember.pow(a, b), rtol=3e-6)
    close(a.cuda() ** 2, a ** 2)
    close(2 ** a.cuda(), 2 ** a, rtol=3e-6)
    d, c = a.cuda(), a.clone()
    d.add_(b.cuda(), alpha=2)
    c.add_(b, alpha=2)
    d.mul_(3).sub_(1)
    c.mul_(3).sub_(1)
    d.div_(b.cuda() + 5)
    c.div_(b + 5)
    close(d, c)
    out = ember.empty(4, 3, device=DEV)
    r = ember.mul(a.cuda(), b.cuda(), out=out)
    assert r is out
    close(out, a * b)
    i = ember.ones(3, dtype=ember.int64, device=DEV)
    with pytest.raises(RuntimeError, match="can't be cast"):
        i.add_(0.5)
    close(-a.cuda() + a.cuda() * 2 - 1 / (a.cuda() + 1), -a + a * 2 - 1 / (a + 1))


@pytest.mark.parametrize("name", COMPARE)
def test_compare(name):
    a, b = data(4, 5).round(), data(5, seed=1).round()
    fn = getattr(ember, name)
    close(fn(a.cuda(), b.cuda()), fn(a, b))
    close(fn(a.cuda(), 0.0), fn(a, 0.0))


@pytest.mark.parametrize("name", UNARY)
def test_unary(name):
    x = data(7, 9, lo=0.1 if name in ("sqrt", "rsqrt", "log") else -3, hi=3)
    fn = getattr(ember, name)
    close(fn(x.cuda()), fn(x), rtol=2e-6)
    close(fn(x.t().cuda().t()), fn(x), rtol=2e-6)          # strided
    close(fn(x.cuda()[:, ::3]), fn(x[:, ::3]), rtol=2e-6)
    close(fn(ember.empty(0, 3).cuda()), fn(ember.empty(0, 3)))
    if name in ("exp", "sin", "sqrt"):
        close(fn(ember.arange(1, 5, device=DEV)), fn(ember.arange(1, 5)), rtol=2e-6)  # int->float


def test_unary_in_place_predicates_where_masked_fill_lerp():
    x = data(6, 4)
    d = x.cuda()
    d.exp_()
    close(d, x.exp(), rtol=2e-6)
    close(ember.isnan(ember.log(x.cuda())), ember.isnan(ember.log(x)))
    close(ember.logical_not(x.cuda() > 0), ember.logical_not(x > 0))
    close(F.gelu(x.cuda()), F.gelu(x), rtol=2e-6)
    close(F.gelu(x.cuda(), approximate="tanh"), F.gelu(x, approximate="tanh"), rtol=2e-6)
    close(F.leaky_relu(x.cuda(), 0.2), F.leaky_relu(x, 0.2))
    close(F.softplus(x.cuda(), 2.0, 10.0), F.softplus(x, 2.0, 10.0), rtol=2e-6)
    y = data(4, seed=3)
    close(ember.where(x.cuda() > 0, x.cuda(), y.cuda()), ember.where(x > 0, x, y))
    close(ember.where(x.cuda() > 0, x.cuda(), 0.0), ember.where(x > 0, x, 0.0))
    close(x.cuda().masked_fill(x.cuda() < 0, -1.0), x.masked_fill(x < 0, -1.0))
    close(ember.lerp(x.cuda(), y.cuda(), 0.3), ember.lerp(x, y, 0.3))


def test_norms_logsumexp_tril_elu_pad():
    x = data(4, 6, seed=9)
    for ord in (2, 1, 3.0, float("inf"), float("-inf"), 0):
        close(ember.linalg.vector_norm(x.cuda(), ord), ember.linalg.vector_norm(x, ord),
              rtol=1e-5)
        close(ember.linalg.vector_norm(x.cuda(), ord, dim=1, keepdim=True),
              ember.linalg.vector_norm(x, ord, dim=1, keepdim=True), rtol=1e-5)
    close(F.normalize(x.cuda(), dim=1), F.normalize(x, dim=1), rtol=1e-5)
    close(ember.logsumexp(x.cuda(), 1), ember.logsumexp(x, 1), rtol=1e-5)
    close(ember.logsumexp(x.cuda(), (0, 1), keepdim=True), ember.logsumexp(x, (0, 1),
                                                                         keepdim=True), rtol=1e-5)
    close(ember.tril(x.cuda()), ember.tril(x))
    close(ember.triu(x.cuda(), 1), ember.triu(x, 1))
    close(ember.tril(x.cuda(), -2), ember.tril(x, -2))
    close(F.elu(x.cuda(), 0.5), F.elu(x, 0.5), rtol=2e-6)
    close(F.selu(x.cuda()), F.selu(x), rtol=2e-6)
    close(F.pad(x.cuda(), (1, 2)), F.pad(x, (1, 2)))
    xc, xd = x.clone().requires_grad_(True), x.cuda().requires_grad_(True)
    (xc.norm() + ember.logsumexp(xc, 1).sum() + ember.tril(xc).sum()).backward()
    (xd.norm() + ember.logsumexp(xd, 1).sum() + ember.tril(xd).sum()).backward()
    close(xd.grad, xc.grad, rtol=1e-5)
    p = [nn.Parameter(x.cuda() * 10)]
    p[0].grad = x.cuda()
    total = nn.utils.clip_grad_norm_(p, 1.0)
    np.testing.assert_allclose(float(total), float(x.norm()), rtol=1e-5)
    np.testing.assert_allclose(float(p[0].grad.norm()), 1.0, rtol=1e-4)


@pytest.mark.parametrize("dim", [-1, 0])
def test_sort_argsort_topk(dim):
    x = data(6, 9, seed=12, lo=-5, hi=5).round()          # ties: stable order
    for desc in (False, True):
        v, i = ember.sort(x.cuda(), dim, descending=desc)
        rv, ri = ember.sort(x, dim, descending=desc, stable=True)
        close(v, rv)
        close(i, ri)
        close(ember.argsort(x.cuda(), dim, descending=desc), ember.argsort(x, dim,
                                                                         descending=desc,
                                                                         stable=True))
    v, i = ember.topk(x.cuda() + ember.arange(9.0, device=DEV) * 1e-3, 3, dim)
    rv, ri = ember.topk(x + ember.arange(9.0) * 1e-3, 3, dim)
    close(v, rv)
    close(i, ri)
    close(ember.topk(x.long().cuda(), 2, dim, largest=False).values,
          ember.topk(x.long(), 2, dim, largest=False).values)
    xc, xd = x.clone().requires_grad_(True), x.cuda().requires_grad_(True)
    (ember.sort(xc, dim).values * ember.arange(9.0 if dim else 6.0).view(
        (1, -1) if dim else (-1, 1))).sum().backward()
    (ember.sort(xd, dim).values * ember.arange(9.0 if dim else 6.0, device=DEV).view(
        (1, -1) if dim else (-1, 1))).sum().backward()
    close(xd.grad, xc.grad)


def test_scatter():
    x = data(4, 5, seed=13)
    idx = ember.tensor([[0, 1, 2, 3, 4], [4, 3, 2, 1, 0], [1, 1, 1, 1, 1]])
    src = data(3, 5, seed=14)
    close(ember.scatter(x.cuda(), 0, idx[:, :4].t().contiguous().cuda() % 4,
                        src[:, :4].t().contiguous().cuda()),
          ember.scatter(x, 0, idx[:, :4].t().contiguous() % 4, src[:, :4].t().contiguous()))
    close(ember.scatter(x.cuda(), 1, idx[:2].cuda(), src.cuda()),
          ember.scatter(x, 1, idx[:2], src))
    close(x.cuda().scatter(1, idx[:2].cuda(), 7.0), x.scatter(1, idx[:2], 7.0))
    d = x.cuda()
    d.scatter_(1, idx[:1].cuda(), -1.0)
    close(d, x.clone().scatter_(1, idx[:1], -1.0))


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(reduce, include_self):
    x, src = data(4, 5, seed=60), data(3, 5, seed=61)
    idx = ember.tensor([[0, 1, 2, 3, 0], [3, 3, 2, 1, 0], [1, 1, 1, 1, 1]])
    kw = {"include_self": include_self}
    close(ember.scatter_reduce(x.cuda(), 0, idx.cuda(), src.cuda(), reduce, **kw),
          ember.scatter_reduce(x, 0, idx, src, reduce, **kw), rtol=1e-6)
    xi, si = (x * 10).to(ember.int64), (src * 10).to(ember.int64)
    close(ember.scatter_reduce(xi.cuda(), 1, idx[:, :3].cuda(), si.cuda(), reduce, **kw),
          ember.scatter_reduce(xi, 1, idx[:, :3], si, reduce, **kw))
    d = x.cuda()
    d.scatter_reduce_(0, idx.cuda(), src.cuda(), reduce, **kw)
    close(d, x.clone().scatter_reduce_(0, idx, src, reduce, **kw), rtol=1e-6)
    if reduce != "prod":                     # (no derivative on the CPU either)
        _grads_match(lambda x, s: ember.scatter_reduce(x, 0, idx.to(x.device), s, reduce, **kw),
                     [x, src])


def test_scatter_add_and_the_gather_backward():
    x, src = data(4, 5, seed=64), data(3, 5, seed=65)
    idx = ember.tensor([[0, 1, 2, 3, 0], [3, 3, 2, 1, 0], [1, 1, 1, 1, 1]])
    close(ember.scatter_add(x.cuda(), 0, idx.cuda(), src.cuda()), ember.scatter_add(x, 0, idx, src),
          rtol=1e-6)
    close(x.cuda().scatter_add(1, idx[:, :2].cuda(), src.cuda()),
          x.scatter_add(1, idx[:, :2], src), rtol=1e-6)
    _grads_match(lambda x, s: ember.scatter_add(x, 0, idx.to(x.device), s), [x, src])
    _grads_match(lambda x: ember.gather(x, 0, idx.to(x.device)) * 3, [x])
    with deterministic():
        close(ember.scatter_add(x.cuda(), 0, idx.cuda(), src.cuda()),
              ember.scatter_add(x, 0, idx, src), rtol=1e-6)


def test_scatter_with_reduce_nan_and_errors():
    x, src = data(4, 5, seed=62), data(3, 5, seed=63)
    src[1, 2] = float("nan")
    idx = ember.tensor([[0, 1, 2, 3, 0], [3, 3, 2, 1, 0], [1, 1, 1, 1, 1]])
    for red in ("add", "multiply"):
        close(x.cuda().scatter(0, idx.cuda(), src.cuda(), reduce=red),
              x.scatter(0, idx, src, reduce=red), rtol=1e-6)
        close(x.cuda().scatter(1, idx.cuda(), 2.0, reduce=red), x.scatter(1, idx, 2.0,
                                                                          reduce=red))
    for red in ("amax", "amin"):
        close(ember.scatter_reduce(x.cuda(), 0, idx.cuda(), src.cuda(), red),
              ember.scatter_reduce(x, 0, idx, src, red))
    with pytest.raises(RuntimeError, match="reduce argument"):
        ember.scatter_reduce(x.cuda(), 0, idx.cuda(), src.cuda(), "max")
    with pytest.raises(RuntimeError, match="reduce argument"):
        x.cuda().scatter(0, idx.cuda(), src.cuda(), reduce="max")


def test_clamp_and_attention():
    x = data(5, 6).requires_grad_(True)
    d = x.detach().cuda().requires_grad_(True)
    yc, yd = x.clamp(-0.5, 1.0), d.clamp(-0.5, 1.0)
    close(yd, yc)
    close(d.detach().clamp(min=0.0), x.detach().clamp(min=0.0))
    close(F.hardtanh(d.detach()), F.hardtanh(x.detach()))
    yc.sum().backward()
    yd.sum().backward()
    close(d.grad, x.grad)
    q, k, v = data(2, 3, 5, 8, seed=4), data(2, 3, 7, 8, seed=5), data(2, 3, 7, 4, seed=6)
    close(F.scaled_dot_product_attention(q.cuda(), k.cuda(), v.cuda()),
          F.scaled_dot_product_attention(q, k, v), rtol=1e-5, atol=1e-6)
    k2, v2 = data(2, 3, 5, 8, seed=7), data(2, 3, 5, 4, seed=8)
    close(F.scaled_dot_product_attention(q.cuda(), k2.cuda(), v2.cuda(), is_causal=True),
          F.scaled_dot_product_attention(q, k2, v2, is_causal=True), rtol=1e-5, atol=1e-6)


# --- reductions ------------------------------------------------------------------------

@pytest.mark.parametrize("dim,keepdim", [(None, False), (0, False), (1, True), (2, False),
                                         ((0, 2), False), ((1, 2), True), (-1, False)])
def test_sum_mean_amax_amin(dim, keepdim):
    x = data(5, 6, 7)
    kw = {} if dim is None else {"dim": dim, "keepdim": keepdim}
    close(x.cuda().sum(**kw), x.sum(**kw), rtol=1e-5, atol=1e-5)
    close(x.cuda().mean(**kw), x.mean(**kw), rtol=1e-5, atol=1e-6)
    if dim is not None:
        close(x.cuda().amax(**kw), x.amax(**kw))
        close(x.cuda().amin(**kw), x.amin(**kw))
    xt = x.cuda().transpose(0, 2)                            # strided input
    close(xt.sum(**kw), x.transpose(0, 2).sum(**kw), rtol=1e-5, atol=1e-5)
    close(xt.amax(**kw) if dim is not None else xt.max(), x.transpose(0, 2).amax(**kw)
          if dim is not None else x.max())


@pytest.mark.parametrize("dim", [None, 1, (0, 2)])
def test_var_std_and_their_grads(dim):
    x = data(4, 5, 6, seed=3)
    xc, xd = x.clone().requires_grad_(True), x.cuda().requires_grad_(True)
    close(xd.var(dim), xc.var(dim), rtol=1e-5, atol=1e-6)
    close(xd.std(dim, correction=0, keepdim=True), xc.std(dim, correction=0, keepdim=True),
          rtol=1e-5, atol=1e-6)
    vd, md = ember.var_mean(xd, dim)
    vc, mc = ember.var_mean(xc, dim)
    close(vd, vc, rtol=1e-5, atol=1e-6)
    close(md, mc, rtol=1e-5, atol=1e-6)
    (xc.std(dim).sum() + mc.sum()).backward()
    (xd.std(dim).sum() + md.sum()).backward()
    close(xd.grad, xc.grad, rtol=1e-4, atol=1e-6)


def test_reductions_ints_max_min_arg_empty():
    x = data(4, 9, lo=-5, hi=5).round()
    i = x.long()
    close(i.cuda().sum(), i.sum())
    close(i.cuda().sum(1), i.sum(1))
    close((x.cuda() > 0).sum(), (x > 0).sum())
    close(x.cuda().max(), x.max())
    close(x.cuda().min(), x.min())
    v, j = x.cuda().max(1)
    rv, rj = x.max(1)
    close(v, rv)
    close(j, rj)
    v, j = x.cuda().min(0, keepdim=True)
    rv, rj = x.min(0, keepdim=True)
    close(v, rv)
    close(j, rj)
    close(x.cuda().argmax(), x.argmax())
    close(x.cuda().argmax(1), x.argmax(1))
    close(x.cuda().argmin(0, keepdim=True), x.argmin(0, keepdim=True))
    close(i.cuda().amax(1), i.amax(1))
    close(ember.zeros(0, 3, device=DEV).sum(0), ember.zeros(3))
    close(ember.zeros(3, 0, device=DEV).sum(1), ember.zeros(3))
    assert math.isnan(ember.zeros(0, device=DEV).mean().item())
    close(x.cuda().prod(1), x.prod(1), rtol=1e-5)
    b = x > 0
    close((x.cuda() > 0).all(), b.all())
    close((x.cuda() > 0).any(1), b.any(1))
    close(x.cuda().all(0, keepdim=True), x.all(0, keepdim=True))
    close(i.cuda().any(), i.any())
    close(ember.zeros(0, 2, device=DEV).all(0), ember.zeros(0, 2).all(0))
    close(ember.zeros(0, 2, device=DEV).any(), ember.zeros(0, 2).any())
    assert ember.equal(x.cuda(), x.cuda()) and not ember.equal(x.cuda(), x.cuda() + 1)
    assert ember.allclose(x.cuda(), x.cuda() + 1e-9)


# --- GEMM, softmax, losses, normalisation ----------------------------------------------

def test_mm_bmm_matmul_linear_layouts():
    a, b = data(7, 5), data(5, 3, seed=1)
    close(ember.mm(a.cuda(), b.cuda()), a @ b, rtol=1e-5)
    close(a.t().cuda().t() @ b.cuda(), a @ b, rtol=1e-5)               # transposed storage
    close(a.cuda() @ b.t().contiguous().cuda().t(), a @ b, rtol=1e-5)
    close(a.cuda()[::2] @ b.cuda(), a[::2] @ b, rtol=1e-5)              # strided rows
    A, B = data(4, 7, 5, seed=2), data(4, 5, 3, seed=3)
    close(ember.bmm(A.cuda(), B.cuda()), ember.bmm(A, B), rtol=1e-5)
    close(A.cuda() @ b.cuda(), A @ b, rtol=1e-5)                        # broadcast batch
    close(data(2, 1, 7, 5).cuda() @ data(3, 5, 2).cuda(), data(2, 1, 7, 5) @ data(3, 5, 2),
          rtol=1e-5)
    v = data(5, seed=4)
    close(a.cuda() @ v.cuda(), a @ v, rtol=1e-5)
    close(v.cuda() @ b.cuda(), v @ b, rtol=1e-5)
    close(v.cuda() @ v.cuda(), v @ v, rtol=1e-5)
    w, bias = data(6, 5, seed=5), data(6, seed=6)
    close(F.linear(A.cuda(), w.cuda(), bias.cuda()), F.linear(A, w, bias), rtol=1e-5)
    close(F.linear(a.cuda(), w.cuda()), F.linear(a, w), rtol=1e-5)
    close(ember.mm(a.double().cuda(), b.double().cuda()), a.double() @ b.double(), rtol=1e-12)
    close(ember.mm(ember.zeros(3, 0, device=DEV), ember.zeros(0, 4, device=DEV)),
          ember.zeros(3, 4))
    close(ember.zeros(0, 2, 3, device=DEV) @ b.cuda()[:3], ember.zeros(0, 2, 3) @ b[:3])
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        ember.mm(a.cuda(), a.cuda())


@pytest.mark.parametrize("layout", ["nn", "tn", "nt", "tt", "batched_tn", "broadcast_nn"])
def test_tf32_matmul_every_layout(layout):
    # products of 2^30 multiply-adds reach the Hopper kernel, whose TF32 path first
    # re-lays out every operand pair but a @ b.T; the reference is the float64 product
    K = 1024
    a, b = data(K, K, lo=-1, hi=1, seed=21), data(K, K, lo=-1, hi=1, seed=22)
    x, y = data(2, K, K // 2, lo=-1, hi=1, seed=23), data(2, K, K, lo=-1, hi=1, seed=24)
    na, nb, nx, ny = (t.numpy().astype(np.float64) for t in (a, b, x, y))
    ad, bd, xd, yd = a.cuda(), b.cuda(), x.cuda(), y.cuda()
    cases = {"nn": (lambda: ad @ bd, na @ nb), "tn": (lambda: ad.t() @ bd, na.T @ nb),
             "nt": (lambda: ad @ bd.t(), na @ nb.T), "tt": (lambda: ad.t() @ bd.t(), na.T @ nb.T),
             "batched_tn": (lambda: xd.transpose(1, 2) @ yd, nx.transpose(0, 2, 1) @ ny),
             "broadcast_nn": (lambda: xd.transpose(1, 2).contiguous() @ bd,
                              nx.transpose(0, 2, 1) @ nb)}
    make, ref = cases[layout]
    prev = ember.get_float32_matmul_precision()
    ember.set_float32_matmul_precision("high")
    try:
        got = make()
    finally:
        ember.set_float32_matmul_precision(prev)
    assert got.is_cuda and got.dtype == ember.float32 and tuple(got.shape) == ref.shape
    err = np.abs(_np(got).astype(np.float64) - ref).max()
    assert err < 3e-3 * np.sqrt(K), err   # TF32 inputs: 10-bit mantissas over K terms


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_log_softmax(dim):
    x = data(6, 33, seed=7) * 3
    close(ember.softmax(x.cuda(), dim), ember.softmax(x, dim), rtol=1e-5)
    close(F.log_softmax(x.cuda(), dim), F.log_softmax(x, dim), rtol=1e-5, atol=1e-5)
    close(F.softmax(x.t().cuda(), dim), F.softmax(x.t(), dim), rtol=1e-5)


@pytest.mark.parametrize("K", [1, 31, 256, 1024, 1025])
@pytest.mark.parametrize("dtype", [ember.float32, ember.float16, ember.float64])
def test_softmax_rows_forward_backward(K, dtype):
    # last-dim rows up to 1024 take a warp per row, longer ones a block; -inf entries
    # (masked scores) give zeros, an all -inf row NaN, as on the CPU
    x = (data(13, K, seed=K) * 4).to(dtype)
    x[2, : K // 2 + 1] = -math.inf
    x[5] = -math.inf
    g = data(13, K, seed=K + 1).to(dtype)
    tol = {ember.float16: 2e-3, ember.float32: 1e-5, ember.float64: 1e-12}[dtype]
    for fn in (F.softmax, F.log_softmax):
        xc, xd = x.clone().requires_grad_(True), x.cuda().requires_grad_(True)
        yc, yd = fn(xc, -1), fn(xd, -1)
        close(yd, yc, rtol=tol, atol=tol)
        yc.backward(g)
        yd.backward(g.cuda())
        close(xd.grad, xc.grad, rtol=tol, atol=tol)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_cross_entropy_forward_backward(reduction, smoothing):
    x = data(9, 13, seed=8) * 2
    t = ember.tensor(np.random.default_rng(1).integers(0, 13, 9))
    t[2] = -100
    xc = x.clone().requires_grad_(True)
    xd = x.cuda().requires_grad_(True)
    lc = F.cross_entropy(xc, t, reduction=reduction, label_smoothing=smoothing)
    ld = F.cross_entropy(xd, t.cuda(), reduction=reduction, label_smoothing=smoothing)
    close(ld, lc, rtol=1e-5, atol=1e-6)
    lc.sum().backward()
    ld.sum().backward()
    close(xd.grad, xc.grad, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_forward_backward(affine):
    x = data(3, 4, 10, seed=9)
    w, b = (data(10, seed=10), data(10, seed=11)) if affine else (None, None)
    leaves_c = [x.clone().requires_grad_(True)] + ([w.clone().requires_grad_(True),
                                                    b.clone().requires_grad_(True)]
                                                   if affine else [])
    leaves_d = [t.detach().cuda().requires_grad_(True) for t in leaves_c]
    yc = F.layer_norm(leaves_c[0], (10,), *(leaves_c[1:] or [None, None]))
    yd = F.layer_norm(leaves_d[0], (10,), *(leaves_d[1:] or [None, None]))
    close(yd, yc, rtol=1e-5, atol=1e-5)
    g = data(3, 4, 10, seed=12)
    yc.backward(g)
    yd.backward(g.cuda())
    for lc, ld in zip(leaves_c, leaves_d):
        close(ld.grad, lc.grad, rtol=1e-4, atol=1e-5)


def test_embedding_index_select_gather_cat_stack():
    w = data(10, 4, seed=13)
    idx = ember.tensor([[1, 3, 3], [9, 0, 2]])
    close(F.embedding(idx.cuda(), w.cuda()), F.embedding(idx, w))
    close(w.cuda().index_select(1, ember.tensor([3, 0]).cuda()),
          w.index_select(1, ember.tensor([3, 0])))
    close(w.cuda()[ember.tensor([4, 4, 1]).cuda()], w[ember.tensor([4, 4, 1])])
    gi = ember.tensor(np.random.default_rng(3).integers(0, 4, (10, 2)))
    close(ember.gather(w.cuda(), 1, gi.cuda()), ember.gather(w, 1, gi))
    close(ember.cat([w.cuda(), w.cuda()[:3]], 0), ember.cat([w, w[:3]], 0))
    close(ember.cat([w.cuda(), w.cuda().t().t()], 1), ember.cat([w, w], 1))
    close(ember.stack([w.cuda(), w.cuda()], 1), ember.stack([w, w], 1))
    with pytest.raises(IndexError):
        w.cuda().index_select(0, ember.tensor([10]).cuda())


# --- autograd --------------------------------------------------------------------------

def test_backward_of_dispatched_ops_matches_cpu():
    xs = [data(4, 5, seed=20), data(5, 3, seed=21), data(3, seed=22), data(4, 3, seed=23)]

    def f(a, b, c, d):
        h = ember.tanh(a @ b + c) * ember.sigmoid(d) - d.exp() / 3
        h = ember.where(h > 0, h, h * 0.1)
        return (F.softmax(h, 1) * h).sum(1).amax() + h.mean() + h[1:, ::2].pow(2).sum()

    lc = [x.clone().requires_grad_(True) for x in xs]
    ld = [x.cuda().requires_grad_(True) for x in xs]
    yc, yd = f(*lc), f(*ld)
    close(yd, yc, rtol=1e-5)
    yc.backward()
    yd.backward()
    for c, d in zip(lc, ld):
        close(d.grad, c.grad, rtol=1e-4, atol=1e-6)


def test_grad_flows_back_across_the_move():
    x = data(3, 4).requires_grad_(True)
    y = (x.cuda() * 3).relu().sum()
    y.backward()
    assert x.grad.device.type == "cpu"
    np.testing.assert_allclose(x.grad.numpy(), (x.detach() > 0).float().numpy() * 3)


# --- training --------------------------------------------------------------------------

class Block(nn.Module):
    """Embedding, layer norm, single-head attention and an MLP with a residual."""

    def __init__(self, vocab=17, d=16, classes=5):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 2 * d)
        self.fc2 = nn.Linear(2 * d, d)
        self.head = nn.Linear(d, classes)
        self.d = d

    def forward(self, tokens):
        h = self.emb(tokens)
        q, k, v = self.qkv(self.ln1(h)).split(self.d, dim=-1)
        att = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.d), dim=-1)
        h = h + att @ v
        h = h + self.fc2(F.gelu(self.fc1(self.ln2(h))))
        return self.head(h.mean(1))


def _train(model_fn, inputs, target, opt_fn, device):
    ember.manual_seed(0)
    model = model_fn()
    model.to(device)
    for p in model.parameters():
        assert p.device.type == ember.device(device).type
    opt = opt_fn(model.parameters())
    losses = []
    for _ in range(3):
        loss = F.cross_entropy(model(inputs.to(device)), target.to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, model


@pytest.mark.parametrize("opt", ["sgd", "adam"])
@pytest.mark.parametrize("arch", ["mlp", "block"])
def test_training_steps_match_cpu_losses(arch, opt):
    rng = np.random.default_rng(0)
    if arch == "mlp":
        inputs = ember.tensor(rng.standard_normal((16, 12)).astype(np.float32))

        def model_fn():
            return nn.Sequential(nn.Linear(12, 32), nn.BatchNorm1d(32), nn.ReLU(),
                                 nn.Linear(32, 32), nn.Tanh(), nn.Dropout(0.0),
                                 nn.Linear(32, 5))
    else:
        inputs = ember.tensor(rng.integers(0, 17, (8, 6)))

        def model_fn():
            return Block()
    target = ember.tensor(rng.integers(0, 5, inputs.shape[0]))
    opt_fn = (lambda ps: ember.optim.SGD(ps, lr=0.1, momentum=0.9)) if opt == "sgd" else \
        (lambda ps: ember.optim.Adam(ps, lr=1e-2))
    cpu_losses, cpu_model = _train(model_fn, inputs, target, opt_fn, "cpu")
    dev_losses, dev_model = _train(model_fn, inputs, target, opt_fn, DEV)
    np.testing.assert_allclose(dev_losses, cpu_losses, rtol=1e-4, atol=1e-5)
    for (n, pc), (_, pd) in zip(cpu_model.named_parameters(), dev_model.named_parameters()):
        assert pd.device.type == "cuda", n
        # (Adam turns the rounding noise of a zero gradient, e.g. the key bias's under
        # softmax or a bias before batch norm, into full steps: parameters and buffers
        # are compared after SGD only)
        if opt == "sgd":
            np.testing.assert_allclose(_np(pd), _np(pc), rtol=1e-3, atol=1e-4, err_msg=n)
    for (n, bc), (_, bd) in zip(cpu_model.named_buffers(), dev_model.named_buffers()):
        assert bd.device.type == "cuda", n
        if opt == "sgd":
            np.testing.assert_allclose(_np(bd), _np(bc), rtol=1e-4, atol=1e-5, err_msg=n)
    dev_model.cpu()
    assert all(p.device.type == "cpu" for p in dev_model.parameters())


def test_dropout_on_device_keeps_the_expected_share():
    x = ember.ones(4000, device=DEV)
    y = F.dropout(x, 0.25, training=True)
    assert y.device.type == "cuda"
    kept = (y.cpu() != 0).float().mean().item()
    assert 0.7 < kept < 0.8
    np.testing.assert_allclose(_np(y)[_np(y) != 0], 1 / 0.75, rtol=1e-6)


# --- errors ----------------------------------------------------------------------------

def test_mixed_devices_and_ops_without_a_kernel_raise():
    a, c = ember.ones(3, device=DEV), ember.ones(3)
    with pytest.raises(RuntimeError, match=r"same device.*(cpu.*cuda|cuda.*cpu)"):
        a + c
    with pytest.raises(RuntimeError, match=r"same device.*(cpu.*cuda|cuda.*cpu)"):
        ember.mm(a.view(3, 1), c.view(1, 3))
    with pytest.raises(RuntimeError, match=r"same device"):
        F.cross_entropy(ember.zeros(2, 3, device=DEV), ember.tensor([0, 1]))
    with pytest.raises(RuntimeError, match=r"same device.*cpu.*cuda"):
        ember.cat([c, a])
    with pytest.raises(RuntimeError, match=r"same device.*cuda.*cpu"):
        ember.cat([a, c])
    with pytest.raises(RuntimeError, match=r"same device.*cpu.*cuda"):
        ember.mm(c.view(1, 3), a.view(3, 1))
    with pytest.raises(RuntimeError, match=r"same device.*cpu.*cuda"):
        F.conv2d(ember.zeros(1, 1, 3, 3), ember.zeros(1, 1, 2, 2, device=DEV))
    with pytest.raises(RuntimeError, match=r"same device"):
        F.max_pool2d_with_indices(ember.zeros(1, 1, 4, 4, device=DEV), 2)[0] + \
            ember.zeros(1, 1, 2, 2)
    with pytest.raises(RuntimeError, match=r"same device"):
        ember.index_put(a, (ember.tensor([0]),), ember.ones(1))
    # a CPU tensor indexed by device tensors: errors (never a CPU kernel on device memory)
    i = ember.tensor([1, 2], device=DEV)
    with pytest.raises(RuntimeError, match=r"indices should be either on cpu"):
        c[i]
    with pytest.raises(RuntimeError, match=r"indices should be either on cpu"):
        c[i] = 2.0
    with pytest.raises(RuntimeError, match=r"same device.*values"):
        ember.index_put(c, (ember.tensor([1]),), ember.ones(1, device=DEV))
    for f in (lambda: ember.index_select(c, 0, i), lambda: ember.gather(c, 0, i),
              lambda: c.index_add(0, i, ember.ones(2)), lambda: ember.scatter_add(c, 0, i, c),
              lambda: c.scatter(0, i, 1.0), lambda: c.clone().scatter_(0, i, c)):
        with pytest.raises(RuntimeError, match=r"same device.*(cpu.*cuda|cuda.*cpu)"):
            f()
    with pytest.raises(RuntimeError, match=r"'median'.*CUDA"):
        ember.median(a)
    with pytest.raises(RuntimeError, match=r"'kthvalue'.*CUDA"):
        ember.kthvalue(a, 1)


# --- convolution, pooling, batch_norm --------------------------------------------------

def _grads_match(f, inputs, rtol=1e-4, atol=1e-5):
    """f on CPU leaves and on CUDA leaves: outputs and every input's gradient agree."""
    lc = [x.clone().requires_grad_(x.dtype.is_floating_point) for x in inputs]
    ld = [x.cuda().requires_grad_(x.dtype.is_floating_point) for x in inputs]
    yc, yd = f(*lc), f(*ld)
    close(yd, yc, rtol=rtol, atol=atol)
    w = data(*yc.shape, seed=99, dtype=np.float64).to(yc.dtype)
    (yc * w).sum().backward()
    (yd * w.cuda()).sum().backward()
    for c, d in zip(lc, ld):
        if c.requires_grad:
            close(d.grad, c.grad, rtol=rtol, atol=atol)
    return yd


@pytest.mark.parametrize("kw,wshape", [
    ({}, (6, 4, 3, 3)),
    ({"stride": 2, "padding": 1}, (5, 4, 3, 2)),
    ({"stride": (1, 2), "padding": (2, 0), "dilation": (2, 1)}, (6, 4, 2, 3)),
    ({"groups": 2, "padding": 1}, (6, 2, 3, 3)),
    ({"groups": 4, "stride": 2}, (8, 1, 3, 3)),
    ({"padding": "same"}, (3, 4, 2, 4)),           # even kernel: asymmetric padding
    ({"padding": "valid", "dilation": 2}, (3, 4, 2, 2)),
])
def test_conv2d_forward_and_both_backward_kernels(kw, wshape):
    x, w, b = data(2, 4, 9, 8, seed=30), data(*wshape, seed=31), data(wshape[0], seed=32)
    _grads_match(lambda x, w, b: F.conv2d(x, w, b, **kw), [x, w, b])
    _grads_match(lambda x, w: F.conv2d(x, w, None, **kw), [x, w])


def test_conv_strided_unbatched_float64_conv1d_and_module():
    x = data(2, 9, 4, 8, seed=33)
    w = data(5, 4, 3, 3, seed=34)
    # a permuted (non-contiguous) input, an unbatched input, float64, conv1d
    _grads_match(lambda x, w: F.conv2d(x.permute(0, 2, 1, 3), w, padding=1), [x, w])
    _grads_match(lambda x, w: F.conv2d(x[0].permute(1, 0, 2), w), [x, w])
    _grads_match(lambda x, w: F.conv2d(x, w, stride=2), [x.permute(0, 2, 1, 3).double(),
                                                          w.double()], rtol=1e-10, atol=1e-12)
    x1, w1, b1 = data(3, 4, 11, seed=35), data(6, 2, 3, seed=36), data(6, seed=37)
    _grads_match(lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1, groups=2), [x1, w1, b1])
    ember.manual_seed(0)
    m = nn.Conv2d(4, 3, 3, padding=1, bias=True)
    md = nn.Conv2d(4, 3, 3, padding=1, bias=True).cuda()
    md.load_state_dict(m.state_dict())
    xx = data(2, 4, 5, 5, seed=38)
    close(md(xx.cuda()), m(xx), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kw,wshape", [
    ({}, (4, 3, 3, 3)),
    ({"stride": 2, "padding": 1, "output_padding": 1}, (4, 2, 3, 2)),
    ({"groups": 2, "dilation": 2, "stride": (1, 2)}, (4, 3, 2, 2)),
])
def test_conv_transpose2d_and_1d(kw, wshape):
    g = kw.get("groups", 1)
    x, w, b = data(2, 4, 5, 6, seed=70), data(*wshape, seed=71), data(wshape[1] * g, seed=72)
    _grads_match(lambda x, w, b: F.conv_transpose2d(x, w, b, **kw), [x, w, b])
    x1, w1 = data(2, 4, 7, seed=73), data(4, 3, 3, seed=74)
    _grads_match(lambda x, w: F.conv_transpose1d(x, w, stride=2, padding=1), [x1, w1])
    with pytest.raises(RuntimeError, match="padding must be an int"):
        F.conv_transpose2d(x.cuda(), w.cuda(), padding="same")


def test_conv_empty_batch_and_errors():
    w = data(3, 2, 3, 3, seed=39).cuda().requires_grad_(True)
    x = ember.zeros(0, 2, 5, 5, device=DEV, requires_grad=True)
    y = F.conv2d(x, w, padding=1)
    assert tuple(y.shape) == (0, 3, 5, 5) and y.device.type == "cuda"
    y.sum().backward()
    close(w.grad, ember.zeros(3, 2, 3, 3))
    assert tuple(x.grad.shape) == (0, 2, 5, 5)
    with pytest.raises(RuntimeError, match="expected input.*to have 2 channels"):
        F.conv2d(ember.zeros(1, 3, 5, 5, device=DEV), w)
    with pytest.raises(RuntimeError, match="same device"):
        F.conv2d(ember.zeros(1, 2, 5, 5), w)
    with pytest.raises(RuntimeError, match="Input type"):
        F.conv2d(ember.zeros(1, 2, 5, 5, device=DEV, dtype=ember.float64), w)
    with pytest.raises(NotImplementedError):
        F.conv2d(ember.zeros(1, 2, 5, 5, device=DEV, dtype=ember.int64),
                 ember.zeros(3, 2, 3, 3, device=DEV, dtype=ember.int64))


@pytest.mark.parametrize("kw", [
    {"kernel_size": 2},
    {"kernel_size": 3, "stride": 2, "padding": 1},
    {"kernel_size": (2, 3), "stride": (2, 1), "ceil_mode": True},
    {"kernel_size": 3, "stride": 1, "padding": 1, "dilation": 1},
])
def test_max_and_avg_pool2d_forward_backward(kw):
    x = data(2, 3, 7, 8, seed=40)
    _grads_match(lambda x: F.max_pool2d(x, **kw), [x])
    yd, idx = F.max_pool2d(x.cuda(), return_indices=True, **kw)
    assert idx.dtype == ember.int64
    close(idx, F.max_pool2d(x, return_indices=True, **kw)[1])
    akw = {k: v for k, v in kw.items() if k != "dilation"}
    for cip in (True, False):
        _grads_match(lambda x: F.avg_pool2d(x, count_include_pad=cip, **akw), [x])
    _grads_match(lambda x: F.avg_pool2d(x, divisor_override=3, **akw), [x])
    # strided and unbatched inputs
    _grads_match(lambda x: F.max_pool2d(x.transpose(2, 3), **kw), [x])
    _grads_match(lambda x: F.avg_pool2d(x[1], **akw), [x])


def test_max_pool_ties_nan_ints_and_adaptive_avg():
    x = ember.tensor([[[[1.0, 1.0, 0.0], [float("nan"), 2.0, 2.0], [3.0, 3.0, 3.0]]]])
    _grads_match(lambda x: F.max_pool2d(x, 2, 1), [x])
    xi = ember.tensor(np.random.default_rng(41).integers(-9, 9, (1, 2, 4, 4)))
    close(F.max_pool2d(xi.cuda(), 2), F.max_pool2d(xi, 2))
    x = data(2, 3, 6, 8, seed=42)
    for out in (1, (2, 4), (3, None), (6, 8), (4, 3), (5, 7), (7, 9)):
        _grads_match(lambda x: F.adaptive_avg_pool2d(x, out), [x])
    _grads_match(lambda x: F.adaptive_avg_pool2d(x.double()[0], (4, 5)), [x], rtol=1e-10,
                 atol=1e-12)
    close(nn.AdaptiveAvgPool2d(1)(x.cuda()), nn.AdaptiveAvgPool2d(1)(x), rtol=1e-5)
    x1 = data(2, 3, 10, seed=49)                      # the 1-d poolings run the 2-d kernels
    _grads_match(lambda x: F.max_pool1d(x, 3, 2, 1), [x1])
    _grads_match(lambda x: F.avg_pool1d(x, 2), [x1])
    _grads_match(lambda x: F.adaptive_avg_pool1d(x, 5), [x1])
    with pytest.raises(RuntimeError, match="Output size is too small"):
        F.max_pool2d(ember.zeros(1, 1, 1, 1, device=DEV), 2)


@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (3, 2, 4, 5)])
def test_batch_norm_train_eval_and_running_stats(shape):
    x = data(*shape, seed=43)
    C = shape[1]
    w, b = data(C, seed=44), data(C, seed=45)
    rm, rv = data(C, seed=46), data(C, lo=0.5, hi=2.0, seed=47)
    stats = {"cpu": (rm.clone(), rv.clone()), "cuda": (rm.cuda(), rv.cuda())}

    def f(training, momentum, eps):
        def run(x, w, b):
            m, v = stats[x.device.type]
            return F.batch_norm(x, m, v, w, b, training, momentum, eps)
        return run
    _grads_match(f(True, 0.3, 1e-4), [x, w, b])
    # each forward updated its own device's statistics, the same way
    close(stats["cuda"][0], stats["cpu"][0], rtol=1e-5)
    close(stats["cuda"][1], stats["cpu"][1], rtol=1e-5)
    _grads_match(f(False, 0.1, 1e-5), [x, w, b])
    _grads_match(lambda x: F.batch_norm(x, None, None, None, None, True), [x])
    _grads_match(lambda x: F.batch_norm(x.transpose(0, 1).contiguous().transpose(0, 1),
                                        None, None, None, None, True), [x])


def test_batch_norm_module_and_errors():
    ember.manual_seed(0)
    m, md = nn.BatchNorm2d(3), nn.BatchNorm2d(3).cuda()
    x = data(4, 3, 2, 2, seed=48)
    for _ in range(2):
        close(md(x.cuda()), m(x), rtol=1e-4, atol=1e-5)
    close(md.running_mean, m.running_mean, rtol=1e-5)
    close(md.running_var, m.running_var, rtol=1e-5)
    assert int(md.num_batches_tracked.item()) == 2
    m.eval()
    md.eval()
    close(md(x.cuda()), m(x), rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        F.batch_norm(ember.zeros(1, 3, device=DEV), None, None, training=True)
    with pytest.raises(RuntimeError, match="same device"):
        F.batch_norm(ember.zeros(2, 3, device=DEV), ember.zeros(3), ember.ones(3))


# --- advanced indexing, index_put, randperm, multinomial ---------------------------------

_I = ember.tensor


# the second key writes one position twice: which write wins is defined (the last, as
# on the CPU) only by the deterministic kernels, as in torch
@pytest.mark.parametrize("key", [
    lambda a: (_I([0, 2, -1]),),
    lambda a: (slice(None), _I([4, 0, 0])),
    lambda a: (_I([0, 3, 1]), slice(None), _I([0, 5, 1])),         # split: B goes first
    lambda a: (Ellipsis, _I([[1], [3]])),
    lambda a: (_I([[1], [3]]), None, 1, _I([0, 2, -1])),
    lambda a: (1, slice(1, 4), _I([0, 5], dtype=ember.int32)),
    lambda a: (a > 0,),
    lambda a: (slice(None), a[0] > 0),
    lambda a: (a[:, :, 0] > 0, _I([2])),
    lambda a: ([0, 2], [1, 1]),
    lambda a: (_I([], dtype=ember.int64),),
    lambda a: (a > 10,),                                             # an empty selection
])
def test_advanced_getitem_and_setitem(key):
    a = data(4, 5, 6, seed=50)
    k = key(a)
    kd = tuple(t.cuda() if isinstance(t, ember.Tensor) else t for t in k)
    ref = a[k]
    close(a.cuda()[kd], ref)
    close(a.cuda()[k], ref)                                          # CPU index tensors
    c, d = a.clone(), a.cuda()
    v = data(*ref.shape, seed=51)
    c[k] = v
    with deterministic():
        d[kd] = v.cuda()
    close(d, c)
    c[k] = -3.0
    d[kd] = -3.0
    close(d, c)
    # gradients through both
    _grads_match(lambda x: x[k if not x.is_cuda else kd] * 2, [a])

    def put(x, y):
        x = x * 1
        x[k if not x.is_cuda else kd] = y
        return x
    with deterministic():
        _grads_match(put, [a, v])


def test_indexing_a_strided_view_and_errors():
    a = data(6, 8, seed=52)
    i = _I([0, 2, 2, 3])
    close(a.cuda()[:, ::2][i.cuda(), 1:], a[:, ::2][i, 1:])
    d, c = a.cuda(), a.clone()
    d.t()[i.cuda()] = 5.0
    c.t()[i] = 5.0
    close(d, c)
    m8 = (a > 0).to(ember.uint8) * 3                  # a byte mask: nonzero selects
    close(a.cuda()[m8.cuda()], a[m8])
    d[d > 0] = ember.tensor(2)                        # a one-element value of another dtype
    c[c > 0] = ember.tensor(2)
    close(d, c)
    with pytest.raises(IndexError, match="index 6 is out of bounds for dimension 0 with size 6"):
        a.cuda()[_I([0, 6]).cuda()]
    with pytest.raises(IndexError, match="shape mismatch"):
        a.cuda()[_I([0, 1]).cuda(), _I([0, 1, 2]).cuda()]
    with pytest.raises(IndexError, match="shape of the mask"):
        a.cuda()[ember.ones(3, dtype=ember.bool, device=DEV)]
    with pytest.raises(IndexError, match="tensors used as indices"):
        a.cuda()[ember.ones(2, device=DEV)]
    with pytest.raises(RuntimeError, match="shape mismatch: value tensor"):
        a.cuda()[i.cuda()] = ember.ones(3, device=DEV)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.int64, ember.int32])
def test_index_put_accumulate_sums_duplicates(dtype):
    x = data(5, 3, seed=53).to(dtype)
    idx = (_I([0, 4, 0, 0, 2]),)
    v = data(5, 3, seed=54, lo=-5, hi=5).to(dtype)
    ref = ember.index_put(x, idx, v, accumulate=True)
    close(ember.index_put(x.cuda(), (idx[0].cuda(),), v.cuda(), accumulate=True), ref,
          rtol=1e-6)
    d = x.cuda()
    d.index_put_((idx[0].cuda(),), v.cuda(), accumulate=True)
    close(d, ref, rtol=1e-6)
    with deterministic():
        r1 = ember.index_put(x.cuda(), (idx[0].cuda(),), v.cuda(), accumulate=True)
        r2 = ember.index_put(x.cuda(), (idx[0].cuda(),), v.cuda(), accumulate=True)
        np.testing.assert_array_equal(_np(r1), _np(r2))
        close(r1, ref, rtol=1e-6)
        # two index tensors, a mask, a broadcast value and no accumulate (last write wins)
        m = x > 0 if dtype.is_floating_point else x != 0
        close(ember.index_put(x.cuda(), (m.cuda(),), ember.tensor(7).to(dtype).cuda()),
              ember.index_put(x, (m,), ember.tensor(7).to(dtype)))
        close(ember.index_put(x.cuda(), (_I([1, 1]).cuda(), _I([2, 2]).cuda()),
                              v[:2, 0].cuda()),
              ember.index_put(x, (_I([1, 1]), _I([2, 2])), v[:2, 0]))


def test_index_put_gradients():
    x, v = data(5, 3, seed=55), data(4, 3, seed=56)
    idx = _I([1, 3, 1, 0])            # row 1 twice: without accumulate the last write wins
    for acc in (True, False):
        with deterministic(not acc):
            _grads_match(lambda x, v: ember.index_put(x, (idx.cuda() if x.is_cuda else idx,),
                                                      v, accumulate=acc) * 1.5, [x, v])


def test_randperm_and_multinomial_follow_the_cpu_streams():
    for n in (0, 1, 7, 300):
        g1, g2 = ember.Generator().manual_seed(4), ember.Generator().manual_seed(4)
        close(ember.randperm(n, device=DEV, generator=g1), ember.randperm(n, generator=g2))
    g1, g2 = ember.Generator().manual_seed(4), ember.Generator().manual_seed(4)
    close(ember.randperm(9, device=DEV, dtype=ember.int32, generator=g1),
          ember.randperm(9, dtype=ember.int32, generator=g2))
    p = ember.rand(3, 12, generator=ember.Generator().manual_seed(1))
    p[:, ::3] = 0
    for rep, k in ((True, 20), (False, 6), (True, 1)):
        close(ember.multinomial(p.cuda(), k, rep, generator=g1),
              ember.multinomial(p, k, rep, generator=g2))
    close(ember.multinomial(p[0].cuda().double(), 4, generator=g1),
          ember.multinomial(p[0].double(), 4, generator=g2))
    with pytest.raises(RuntimeError, match="sum of probabilities"):
        ember.multinomial(ember.zeros(2, 3, device=DEV), 1)
    with pytest.raises(RuntimeError, match="without replacement"):
        ember.multinomial(p.cuda(), 13)
