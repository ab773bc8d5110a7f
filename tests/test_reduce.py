"""Reductions, scans and softmax (ember/_C/reduce.pyx) against NumPy, and
against PyTorch when it is installed."""
import math

import numpy as np
import pytest

import ember

RNG = np.random.default_rng(1234)
DIMS3 = [None, 0, 1, 2, -1, (0, 2), (1, 2), (0, 1), (0, 1, 2), ()]


def _np_dim(d):
    return None if d == () else d


def arr(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def views(a):
    """The same values as a contiguous tensor, a transposed copy, and a strided slice."""
    e = ember.tensor(a)
    yield "contig", a, e
    t = ember.tensor(np.ascontiguousarray(a.transpose(2, 1, 0))).permute(2, 1, 0)
    yield "permuted", a, t
    big = np.zeros((a.shape[0], a.shape[1] * 2, a.shape[2]), a.dtype)
    big[:, ::2] = a
    yield "strided", a, ember.tensor(big)[:, ::2]


def close(e, n, rtol=1e-5, atol=1e-6):
    en = e.numpy() if isinstance(e, ember.Tensor) else np.asarray(e)
    assert en.shape == np.shape(n), (en.shape, np.shape(n))
    np.testing.assert_allclose(en, n, rtol=rtol, atol=atol, equal_nan=True)


# ---------------------------------------------------------------------------
# sum / mean / prod / nansum / nanmean

@pytest.mark.parametrize("dim", DIMS3)
@pytest.mark.parametrize("keepdim", [False, True])
def test_sum_mean_prod_dims_layouts(dim, keepdim):
    a = arr(3, 4, 5)
    for _, a_, t in views(a):
        nd = _np_dim(dim)
        close(t.sum(dim=dim, keepdim=keepdim), a_.sum(axis=nd, keepdims=keepdim))
        close(ember.mean(t, dim, keepdim), a_.mean(axis=nd, keepdims=keepdim))
        close(t.prod(dim=dim, keepdim=keepdim), a_.prod(axis=nd, keepdims=keepdim), rtol=1e-4)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.int64, np.bool_])
def test_sum_prod_integer_dtypes(dtype):
    a = RNG.integers(0, 3, (4, 6)).astype(dtype)
    t = ember.tensor(a)
    s = t.sum()
    assert s.dtype == ember.int64
    assert s.item() == a.astype(np.int64).sum()
    close(t.sum(1), a.astype(np.int64).sum(1))
    assert t.prod(0).dtype == ember.int64
    close(t.prod(0), a.astype(np.int64).prod(0))
    with pytest.raises(RuntimeError, match="mean"):
        t.mean()
    assert t.mean(dtype=ember.float64).item() == pytest.approx(a.astype(np.float64).mean())


def test_sum_dtype_arg_and_half():
    a = arr(8, 16)
    t = ember.tensor(a)
    assert t.sum(dtype=ember.float64).dtype == ember.float64
    assert t.sum(1, dtype=ember.int32).dtype == ember.int32
    h = t.half()
    assert h.sum().dtype == ember.float16
    assert abs(h.sum().item() - a.astype(np.float16).astype(np.float32).sum()) < 0.05
    b = t.bfloat16()
    assert b.mean(1).dtype == ember.bfloat16
    close(b.mean(1).float(), a.mean(1), rtol=2e-2, atol=2e-2)


def test_sum_float32_accuracy_large():
    a = RNG.random(1_000_000).astype(np.float32)
    ref = a.astype(np.float64).sum()
    assert abs(ember.tensor(a).sum().item() - ref) / ref < 1e-6
    b = RNG.random((1000, 1000)).astype(np.float32)
    ref0 = b.astype(np.float64).sum(0)
    np.testing.assert_allclose(ember.tensor(b).sum(0).numpy(), ref0, rtol=1e-6)


def test_nansum_nanmean():
    a = arr(4, 5)
    a[0, 1] = a[2, 3] = a[2, 0] = np.nan
    t = ember.tensor(a)
    close(t.nansum(), np.nansum(a))
    close(t.nansum(1), np.nansum(a, 1))
    close(t.nanmean(0), np.nanmean(a, 0))
    close(ember.nanmean(t, (0, 1), True), np.nanmean(a, (0, 1), keepdims=True))
    assert ember.tensor([1, 2]).nansum().dtype == ember.int64
    with pytest.raises(RuntimeError, match="nanmean"):
        ember.tensor([1, 2]).nanmean()


def test_empty_and_zero_size():
    z = ember.zeros(0, 3)
    close(z.sum(), np.float32(0))
    close(z.sum(0), np.zeros(3))
    close(z.prod(0), np.ones(3))
    assert z.sum(1).shape == (0,)
    assert math.isnan(z.mean().item())
    with pytest.raises(RuntimeError):
        z.max()
    with pytest.raises(IndexError):
        z.max(0)
    assert z.max(1).values.shape == (0,)
    with pytest.raises(IndexError):
        z.amax(0)
    with pytest.raises(IndexError):
        z.argmax()
    with pytest.raises(IndexError):
        z.argmin(0)
    s = ember.tensor(5.0)
    assert s.sum().item() == 5.0 and s.sum(0).item() == 5.0
    assert s.max(0).indices.item() == 0


def test_dim_errors():
    t = ember.ones(2, 3)
    with pytest.raises(IndexError):
        t.sum(2)
    with pytest.raises(RuntimeError, match="multiple times"):
        t.sum((0, 0))
    with pytest.raises(TypeError):
        t.sum("a")
    with pytest.raises(TypeError):
        ember.sum([1, 2])


# ---------------------------------------------------------------------------
# max / min / amax / amin / argmax / argmin

@pytest.mark.parametrize("dim", [0, 1, 2, -1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_max_min_with_dim(dim, keepdim):
    a = arr(3, 4, 5)
    for _, a_, t in views(a):
        v, i = t.max(dim, keepdim)
        close(v, a_.max(axis=dim, keepdims=keepdim))
        close(i, np.expand_dims(a_.argmax(dim), dim) if keepdim else a_.argmax(dim))
        r = ember.min(t, dim=dim, keepdim=keepdim)
        close(r.values, a_.min(axis=dim, keepdims=keepdim))
        close(r.indices, np.expand_dims(a_.argmin(dim), dim) if keepdim else a_.argmin(dim))
        close(t.argmax(dim, keepdim), np.expand_dims(a_.argmax(dim), dim) if keepdim
              else a_.argmax(dim))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.uint8, np.int32,
                                   np.int64])
def test_extremes_dtypes(dtype):
    a = (RNG.standard_normal((6, 7)) * 50).astype(dtype)
    t = ember.tensor(a)
    assert t.max().dtype == t.dtype
    assert t.max().item() == a.max() and t.min().item() == a.min()
    close(t.amax(1), a.max(1))
    close(t.amin((0, 1)), a.min())
    assert t.argmax().item() == a.argmax() and t.argmin().item() == a.argmin()
    close(t.argmax(0), a.argmax(0))
    mn, mx = ember.aminmax(t, dim=0)
    close(mn, a.min(0))
    close(mx, a.max(0))


def test_max_nan_propagates_and_ties_first():
    a = np.array([[1.0, np.nan, 3.0, np.nan], [2.0, 5.0, 5.0, 1.0]], np.float32)
    t = ember.tensor(a)
    assert math.isnan(t.max().item()) and math.isnan(t.min().item())
    v, i = t.max(1)
    assert math.isnan(v[0].item()) and i.tolist() == [1, 1]
    assert t.argmin(1).tolist() == [1, 3]
    assert math.isnan(t.amax(1)[0].item())
    assert t.argmax().item() == 1


def test_max_other_is_maximum():
    a, b = ember.tensor([1.0, 5.0]), ember.tensor([3.0, 2.0])
    assert ember.max(a, b).tolist() == [3.0, 5.0]
    assert a.min(b).tolist() == [1.0, 2.0]


def test_return_types():
    r = ember.ones(2, 3).max(1)
    assert r.values.shape == (2,) and r.indices.dtype == ember.int64
    v, i = r
    assert type(r).__name__ == "max"


def test_argmax_keepdim_none():
    t = ember.tensor(arr(2, 3))
    assert t.argmax(keepdim=True).shape == (1, 1)


# ---------------------------------------------------------------------------
# var / std / norm / logsumexp / all / any / count_nonzero

@pytest.mark.parametrize("dim", [None, 0, 1, (0, 2), -1])
@pytest.mark.parametrize("correction", [0, 1, 2])
def test_var_std(dim, correction):
    a = arr(4, 5, 6).astype(np.float64)
    t = ember.tensor(a)
    close(t.var(dim, correction=correction), a.var(axis=dim, ddof=correction))
    close(t.std(dim, correction=correction, keepdim=True),
          a.std(axis=dim, ddof=correction, keepdims=True))
    v, m = ember.var_mean(t, dim, correction=correction)
    close(v, a.var(axis=dim, ddof=correction))
    close(m, a.mean(axis=dim))
    s, m = ember.std_mean(t, dim, keepdim=True, correction=correction)
    close(s, a.std(axis=dim, ddof=correction, keepdims=True))


def test_var_legacy_unbiased_and_errors():
    a = arr(5, 6)
    t = ember.tensor(a)
    close(t.var(1, False), a.var(1), rtol=1e-5)
    close(t.var(False), a.var(), rtol=1e-5)
    close(ember.std(t, 0, unbiased=True), a.std(0, ddof=1), rtol=1e-5)
    with pytest.raises(RuntimeError):
        ember.tensor([1, 2]).var()
    with pytest.warns(UserWarning):
        assert math.isnan(ember.ones(3).std(correction=5).item())


@pytest.mark.parametrize("p", [2, 1, 0, 3, 0.5, float("inf"), float("-inf"), "fro"])
@pytest.mark.parametrize("dim", [None, 1, (0, 1)])
def test_norm(p, dim):
    a = arr(3, 4, 5)
    a[0, 0, 0] = 0
    t = ember.tensor(a)
    pp = 2 if p == "fro" else p
    axes = tuple(range(3)) if dim is None else (dim if isinstance(dim, tuple) else (dim,))
    flat = np.moveaxis(a, axes, tuple(range(-len(axes), 0))).reshape(
        *[a.shape[i] for i in range(3) if i not in axes], -1)
    ref = np.linalg.norm(flat, ord=pp, axis=-1)
    close(t.norm(p, dim), ref, rtol=1e-5, atol=1e-5)


def test_norm_errors():
    with pytest.raises(RuntimeError, match="vector_norm"):
        ember.tensor([1, 2]).norm()
    with pytest.raises(RuntimeError):
        ember.zeros(0).norm(float("inf"))


@pytest.mark.parametrize("dim", [0, 1, (0, 1), -1])
def test_logsumexp(dim):
    a = arr(4, 6) * 30
    t = ember.tensor(a)
    ref = np.log(np.exp(a.astype(np.float64) - a.max()).sum(axis=dim)) + a.max()
    close(t.logsumexp(dim), ref, rtol=1e-5, atol=1e-4)
    big = ember.tensor([1000.0, 1000.0])
    assert big.logsumexp(0).item() == pytest.approx(1000 + math.log(2))
    ninf = ember.tensor([-math.inf, -math.inf])
    assert ninf.logsumexp(0).item() == -math.inf
    assert ember.tensor([1, 2, 3]).logsumexp(0).dtype == ember.float32


def test_all_any_count_nonzero():
    a = RNG.integers(0, 2, (3, 4, 5)).astype(np.float32)
    a[0, 0, 0] = np.nan
    t = ember.tensor(a)
    for d in [None, 0, 2, (0, 1)]:
        close(t.all(d), np.all(a, axis=d))
        close(t.any(d), np.any(a, axis=d))
        close(ember.count_nonzero(t, d), np.count_nonzero(a, axis=d))
    assert t.all(1, keepdim=True).shape == (3, 1, 5)
    assert t.all().dtype == ember.bool
    assert ember.tensor([0, 2], dtype=ember.uint8).all().dtype == ember.uint8
    assert ember.zeros(0).all().item() is True and ember.zeros(0).any().item() is False


# ---------------------------------------------------------------------------
# scans

@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_cumsum_cumprod(dim):
    a = arr(3, 4, 5)
    for _, a_, t in views(a):
        close(t.cumsum(dim), np.cumsum(a_, dim), rtol=1e-5, atol=1e-5)
        close(ember.cumprod(t, dim), np.cumprod(a_, dim), rtol=1e-4, atol=1e-5)
    i = ember.tensor(RNG.integers(-5, 5, (4, 4)).astype(np.int32))
    assert i.cumsum(0).dtype == ember.int64
    assert ember.tensor([True, True]).cumsum(0).tolist() == [1, 2]
    assert ember.ones(3).cumsum(0, dtype=ember.float64).dtype == ember.float64


@pytest.mark.parametrize("dim", [0, 1])
def test_cummax_cummin_logcumsumexp(dim, torch):
    a = np.array([[1.0, 3.0, 3.0, np.nan, 2.0], [5.0, 1.0, 5.0, 0.0, 7.0]], np.float32)
    t, tt = ember.tensor(a), torch.tensor(a)
    for name in ("cummax", "cummin"):
        v, i = getattr(t, name)(dim)
        rv, ri = getattr(tt, name)(dim)
        close(v, rv.numpy())
        assert i.tolist() == ri.tolist()
    b = arr(4, 6) * 10
    close(ember.tensor(b).logcumsumexp(dim), torch.tensor(b).logcumsumexp(dim).numpy(),
          rtol=1e-5, atol=1e-5)
    ii = ember.tensor([[3, 1, 3, 4]])
    assert ii.cummax(1).indices.tolist() == torch.tensor([[3, 1, 3, 4]]).cummax(1).indices.tolist()


# ---------------------------------------------------------------------------
# softmax / log_softmax

def _np_softmax(a, d):
    e = np.exp(a - a.max(axis=d, keepdims=True))
    return e / e.sum(axis=d, keepdims=True)


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_softmax_every_dim(dim):
    a = arr(3, 40, 37) * 5
    for _, a_, t in views(a):
        close(t.softmax(dim), _np_softmax(a_, dim), rtol=1e-5, atol=1e-6)
        close(ember.log_softmax(t, dim), np.log(_np_softmax(a_.astype(np.float64), dim)),
              rtol=1e-5, atol=1e-5)


def test_softmax_stable_and_dtypes():
    t = ember.tensor([[1000.0, 1000.0, -1000.0]])
    close(t.softmax(1), np.array([[0.5, 0.5, 0.0]], np.float32))
    close(t.log_softmax(1), np.array([[-math.log(2), -math.log(2), -2000 - math.log(2)]]),
          rtol=1e-5)
    h = ember.tensor(arr(4, 8)).half()
    assert h.softmax(1).dtype == ember.float16
    assert ember.softmax(ember.tensor(arr(2, 3)), 1, dtype=ember.float64).dtype == ember.float64
    with pytest.raises(NotImplementedError):
        ember.tensor([1, 2]).softmax(0)
    nan = ember.tensor([[1.0, float("nan")]]).softmax(1)
    assert all(math.isnan(v) for v in nan[0].tolist())
    with pytest.warns(UserWarning):
        ember.softmax(ember.ones(2, 3))


# ---------------------------------------------------------------------------
# determinism: bit-identical results on 1 and 2 threads

def test_bit_identical_1_vs_2_threads():
    a = RNG.standard_normal(3_000_000).astype(np.float32)
    t = ember.tensor(a)
    m = ember.tensor(RNG.standard_normal((512, 3000)).astype(np.float32))
    ops = [lambda: t.sum(), lambda: t.mean(), lambda: t.var(), lambda: t.norm(),
           lambda: t.logsumexp(0), lambda: m.sum(0), lambda: m.sum(1), lambda: m.softmax(1),
           lambda: m.softmax(0), lambda: m.var(0), lambda: m.cumsum(1), lambda: m.max(0)[0],
           lambda: m.t().sum(1)]
    old = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        r1 = [op().numpy().copy() for op in ops]
        ember.set_num_threads(2)
        r2 = [op().numpy().copy() for op in ops]
    finally:
        ember.set_num_threads(old)
    for x, y in zip(r1, r2):
        assert x.tobytes() == y.tobytes()


# ---------------------------------------------------------------------------
# parity with PyTorch: values, dtypes, shapes

@pytest.mark.parametrize("name,args,kwargs", [
    ("sum", (), {}), ("sum", (1,), {"keepdim": True}), ("mean", ((0, 2),), {}),
    ("prod", (2,), {}), ("nansum", (0,), {}), ("amax", ((1, 2),), {}), ("amin", (0,), {}),
    ("argmax", (1,), {}), ("argmin", (), {}), ("var", (1,), {"correction": 0}),
    ("std", (), {}), ("norm", (), {}), ("norm", (1, 2), {}), ("logsumexp", (2,), {}),
    ("all", (1,), {}), ("any", (), {}), ("count_nonzero", (0,), {}), ("cumsum", (1,), {}),
    ("cumprod", (0,), {}), ("softmax", (1,), {}), ("log_softmax", (0,), {}),
])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_parity_with_torch(name, args, kwargs, dtype, torch):
    a = (RNG.standard_normal((3, 4, 5)) * 3).astype(dtype)
    t, tt = ember.tensor(a), torch.tensor(a)
    try:
        ref = getattr(tt, name)(*args, **kwargs)
    except Exception as e:
        with pytest.raises(type(e)):
            getattr(t, name)(*args, **kwargs)
        return
    r = getattr(t, name)(*args, **kwargs)
    assert str(r.dtype).split(".")[-1] == str(ref.dtype).split(".")[-1]
    assert tuple(r.shape) == tuple(ref.shape)
    np.testing.assert_allclose(r.numpy().astype(np.float64), ref.numpy().astype(np.float64),
                               rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------
# autograd

GRAD_CASES = {
    "sum": lambda m, x: m.sum(x, (0, 2)),
    "sum_keepdim": lambda m, x: x.sum(1, keepdim=True),
    "mean": lambda m, x: x.mean(1),
    "nansum": lambda m, x: m.nansum(x, 1),
    "prod": lambda m, x: x.prod(1),
    "max_all": lambda m, x: x.max(),
    "max_dim": lambda m, x: x.max(1).values,
    "min_dim_keepdim": lambda m, x: x.min(2, keepdim=True)[0],
    "amax": lambda m, x: x.amax((0, 1)),
    "var": lambda m, x: x.var(1),
    "std": lambda m, x: x.std((0, 2), keepdim=True),
    "var_mean": lambda m, x: m.var_mean(x, 1)[0] * 2 + m.var_mean(x, 1)[1],
    "norm2": lambda m, x: x.norm(),
    "norm1": lambda m, x: x.norm(1, 1),
    "norm3": lambda m, x: x.norm(3, (1, 2)),
    "norminf": lambda m, x: x.norm(float("inf"), 2),
    "logsumexp": lambda m, x: x.logsumexp(1),
    "cumsum": lambda m, x: x.cumsum(1),
    "cumprod": lambda m, x: x.cumprod(2),
    "logcumsumexp": lambda m, x: x.logcumsumexp(1),
    "cummax": lambda m, x: x.cummax(1)[0],
    "softmax": lambda m, x: x.softmax(1),
    "log_softmax": lambda m, x: x.log_softmax(2),
    "nanmean": lambda m, x: x.nanmean(1),
}


@pytest.mark.parametrize("case", list(GRAD_CASES))
def test_grad_matches_torch(case, torch):
    f = GRAD_CASES[case]
    a = RNG.standard_normal((3, 4, 5))
    xe = ember.tensor(a, requires_grad=True)
    xt = torch.tensor(a, requires_grad=True)
    ye, yt = f(ember, xe), f(torch, xt)
    w = RNG.standard_normal(tuple(yt.shape))
    (ye * ember.tensor(w)).sum().backward()
    (yt * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("case", ["sum", "mean", "var", "softmax", "log_softmax", "logsumexp",
                                  "norm2", "cumsum", "prod"])
def test_gradcheck(case):
    from ember.autograd import gradcheck
    f = GRAD_CASES[case]
    x = ember.tensor(RNG.standard_normal((2, 3, 4)) + 0.5, requires_grad=True)
    assert gradcheck(lambda x: f(ember, x), (x,))


def test_prod_grad_with_zeros(torch):
    a = np.array([[1.0, 0.0, 3.0], [2.0, 4.0, 0.5], [0.0, 0.0, 2.0]])
    for dim in (None, 0, 1):
        xe = ember.tensor(a, requires_grad=True)
        xt = torch.tensor(a, requires_grad=True)
        (xe.prod() if dim is None else xe.prod(dim)).sum().backward()
        (xt.prod() if dim is None else xt.prod(dim)).sum().backward()
        np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy())


def test_softmax_double_backward(torch):
    a = RNG.standard_normal((3, 4))
    xe = ember.tensor(a, requires_grad=True)
    xt = torch.tensor(a, requires_grad=True)
    ge, = ember.autograd.grad((xe.softmax(1) ** 2).sum(), xe, create_graph=True)
    gt, = torch.autograd.grad((xt.softmax(1) ** 2).sum(), xt, create_graph=True)
    ge.sum().backward()
    gt.sum().backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-7, atol=1e-10)


def test_no_record_for_integer_outputs():
    x = ember.tensor(arr(3, 4), requires_grad=True)
    v, i = x.max(1)
    assert v.requires_grad and not i.requires_grad
    assert not x.argmax().requires_grad
    assert not x.all().requires_grad
