"""Memory formats and layouts against torch: the objects, the strides each format gives,
the channels-last layout kept by ``preserve_format``, and values and gradients through
channels-last tensors."""
import pickle

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

FORMATS = ("contiguous_format", "channels_last", "channels_last_3d", "preserve_format")


def _pair(shape, layout="plain", seed=0):
    """The same values in ember and torch, laid out as ``layout`` says."""
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    e, t = ember.tensor(a), torch.empty(shape).copy_(torch.from_numpy(a))
    if layout == "nhwc":        # an NHWC buffer viewed as NCHW: channels-last strides
        e = ember.tensor(a.transpose(0, 2, 3, 1).copy()).permute(0, 3, 1, 2)
        t = torch.tensor(a.transpose(0, 2, 3, 1).copy()).permute(0, 3, 1, 2)
    elif layout == "ndhwc":
        e = ember.tensor(a.transpose(0, 2, 3, 4, 1).copy()).permute(0, 4, 1, 2, 3)
        t = torch.tensor(a.transpose(0, 2, 3, 4, 1).copy()).permute(0, 4, 1, 2, 3)
    elif layout == "sliced":    # not dense: every other column
        e, t = e[..., ::2], t[..., ::2]
    elif layout == "transposed":
        e, t = e.transpose(0, 1), t.transpose(0, 1)
    return e, t


def _same(e, t):
    assert tuple(e.shape) == tuple(t.shape)
    assert e.stride() == t.stride(), (e.stride(), t.stride())
    np.testing.assert_array_equal(e.detach().numpy(), t.detach().numpy())


CASES = [((2, 3, 4, 5), "plain"), ((2, 3, 4, 5), "nhwc"), ((2, 3, 4, 6), "sliced"),
         ((2, 1, 4, 1), "plain"), ((3, 1, 1, 1), "plain"), ((1, 3, 1, 1), "plain"),
         ((2, 3, 2, 4, 5), "ndhwc"), ((2, 3, 2, 4, 5), "plain"), ((3, 4), "plain"),
         ((3, 4), "transposed"), ((0, 3, 2, 2), "plain")]


def test_objects():
    assert repr(ember.channels_last) == "ember.channels_last"
    assert str(ember.preserve_format) == "ember.preserve_format"
    assert ember.legacy_contiguous_format is ember.contiguous_format
    for name in FORMATS:
        f = getattr(ember, name)
        assert isinstance(f, ember.memory_format)
        assert pickle.loads(pickle.dumps(f)) is f
    assert isinstance(ember.strided, ember.layout)
    assert not isinstance(ember.strided, ember.memory_format)
    assert ember.zeros(2).layout is ember.strided
    assert pickle.loads(pickle.dumps(ember.strided)) is ember.strided
    with pytest.raises(TypeError, match="cannot create"):
        ember.memory_format()
    with pytest.raises(TypeError, match="cannot create"):
        torch.memory_format()


@pytest.mark.parametrize("shape,layout", CASES)
@pytest.mark.parametrize("fmt", FORMATS)
def test_is_contiguous(shape, layout, fmt):
    e, t = _pair(shape, layout)
    assert e.is_contiguous(memory_format=getattr(ember, fmt)) == \
        t.is_contiguous(memory_format=getattr(torch, fmt))
    assert e.is_contiguous() == t.is_contiguous()


def _both(fn_e, fn_t):
    """Run both; the same exception type (and message) when torch raises."""
    try:
        rt = fn_t()
    except Exception as exc_t:
        with pytest.raises(type(exc_t)) as exc_e:
            fn_e()
        words = str(exc_t).split()[:3]
        assert " ".join(words).lower().replace("torch.", "") in str(exc_e.value).lower()
        return None, None
    return fn_e(), rt


@pytest.mark.parametrize("shape,layout", CASES)
@pytest.mark.parametrize("fmt", FORMATS)
def test_contiguous_and_clone(shape, layout, fmt):
    e, t = _pair(shape, layout)
    re, rt = _both(lambda: e.contiguous(memory_format=getattr(ember, fmt)),
                   lambda: t.contiguous(memory_format=getattr(torch, fmt)))
    if rt is not None:
        _same(re, rt)
        assert (re is e) == (rt is t)
    if layout == "transposed" and fmt == "preserve_format":
        return      # torch keeps the transposed strides; ember's clone is row-major there
    re, rt = _both(lambda: e.clone(memory_format=getattr(ember, fmt)),
                   lambda: t.clone(memory_format=getattr(torch, fmt)))
    if rt is not None:
        _same(re, rt)


@pytest.mark.parametrize("shape,layout", [c for c in CASES if c[1] != "transposed"])
def test_default_clone_keeps_channels_last(shape, layout):
    e, t = _pair(shape, layout)
    _same(e.clone(), t.clone())


def test_bad_format_argument():
    x = ember.zeros(2, 3, 4, 5)
    for fn in (lambda: x.contiguous(memory_format=1), lambda: x.clone(memory_format="cl"),
               lambda: x.is_contiguous(memory_format=ember.strided),
               lambda: ember.empty_like(x, memory_format=ember.float32)):
        with pytest.raises(TypeError, match="memory_format"):
            fn()
    with pytest.raises(TypeError):
        torch.zeros(2, 3, 4, 5).contiguous(memory_format=1)


@pytest.mark.parametrize("factory", ["empty_like", "zeros_like", "ones_like", "full_like",
                                     "rand_like", "randn_like", "randint_like"])
@pytest.mark.parametrize("shape,layout", [((2, 3, 4, 5), "plain"), ((2, 3, 4, 5), "nhwc"),
                                          ((2, 3, 4, 6), "sliced"), ((3, 4), "plain"),
                                          ((2, 3, 2, 4, 5), "ndhwc")])
@pytest.mark.parametrize("fmt", [None] + list(FORMATS))
def test_like_factories(factory, shape, layout, fmt):
    e, t = _pair(shape, layout)
    extra = {"full_like": (2.5,), "randint_like": (7,)}.get(factory, ())
    kw_e = {} if fmt is None else {"memory_format": getattr(ember, fmt)}
    kw_t = {} if fmt is None else {"memory_format": getattr(torch, fmt)}
    re, rt = _both(lambda: getattr(ember, factory)(e, *extra, **kw_e),
                   lambda: getattr(torch, factory)(t, *extra, **kw_t))
    if rt is None:
        return
    assert tuple(re.shape) == tuple(rt.shape) and re.dtype == e.dtype
    assert re.stride() == rt.stride(), (re.stride(), rt.stride())
    if factory in ("zeros_like", "ones_like", "full_like"):
        np.testing.assert_array_equal(re.numpy(), rt.numpy())
    elif factory == "randint_like":
        assert ((re >= 0) & (re < 7)).all()


def test_like_factories_requires_grad():
    e, _ = _pair((2, 3, 4, 5), "nhwc")
    for fn in (ember.zeros_like, ember.empty_like, ember.randn_like):
        r = fn(e, requires_grad=True)
        assert r.requires_grad and r.is_leaf and r.grad_fn is None
        assert r.is_contiguous(memory_format=ember.channels_last)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (2, 3, 2, 4, 5), (3, 4)])
def test_empty(fmt, shape):
    re, rt = _both(lambda: ember.empty(*shape, memory_format=getattr(ember, fmt)),
                   lambda: torch.empty(*shape, memory_format=getattr(torch, fmt)))
    if rt is not None:
        assert re.stride() == rt.stride()


@pytest.mark.parametrize("shape,layout", CASES)
@pytest.mark.parametrize("fmt", [None] + list(FORMATS))
@pytest.mark.parametrize("dtype", [None, "float64"])
def test_to(shape, layout, fmt, dtype):
    if layout == "transposed" and dtype is not None and fmt in (None, "preserve_format"):
        return      # torch keeps the transposed strides through the cast; ember row-major
    e, t = _pair(shape, layout)
    args_e = () if dtype is None else (getattr(ember, dtype),)
    args_t = () if dtype is None else (getattr(torch, dtype),)
    kw_e = {} if fmt is None else {"memory_format": getattr(ember, fmt)}
    kw_t = {} if fmt is None else {"memory_format": getattr(torch, fmt)}
    re, rt = _both(lambda: e.to(*args_e, **kw_e), lambda: t.to(*args_t, **kw_t))
    if rt is None:
        return
    if layout != "sliced" or dtype is None:
        assert re.stride() == rt.stride(), (re.stride(), rt.stride())
    np.testing.assert_array_equal(re.numpy(), rt.numpy())
    assert (re is e) == (rt is t)


def test_resize():
    for fmt in ("channels_last", "contiguous_format"):
        e, t = ember.zeros(3), torch.zeros(3)
        e.resize_(2, 3, 4, 5, memory_format=getattr(ember, fmt))
        t.resize_(2, 3, 4, 5, memory_format=getattr(torch, fmt))
        assert e.stride() == t.stride()
    with pytest.raises(RuntimeError, match="required rank 4"):
        ember.zeros(3).resize_(2, 3, memory_format=ember.channels_last)
    with pytest.raises(RuntimeError, match="Preserve"):
        ember.zeros(3).resize_(2, 3, memory_format=ember.preserve_format)
    # the elements already there keep their places in memory when the storage grows
    e = ember.arange(6.0)
    e.resize_(1, 2, 2, 3, memory_format=ember.channels_last)
    np.testing.assert_array_equal(e.as_strided((6,), (1,), 0).numpy(), np.arange(6.0))
    el, tl = _pair((2, 3, 4, 5), "nhwc")
    for fmt in (None, "preserve_format", "contiguous_format"):
        kw_e = {} if fmt is None else {"memory_format": getattr(ember, fmt)}
        kw_t = {} if fmt is None else {"memory_format": getattr(torch, fmt)}
        assert ember.zeros(3).resize_as_(el, **kw_e).stride() == \
            torch.zeros(3).resize_as_(tl, **kw_t).stride()


def test_module_to_channels_last_matches_torch():
    tm = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4),
                             torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Flatten(),
                             torch.nn.Linear(4 * 4 * 5, 2))
    em = ember.nn.Sequential(ember.nn.Conv2d(3, 4, 3, padding=1), ember.nn.BatchNorm2d(4),
                             ember.nn.ReLU(), ember.nn.MaxPool2d(2), ember.nn.Flatten(),
                             ember.nn.Linear(4 * 4 * 5, 2))
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in
                        tm.state_dict().items()})
    tm = tm.to(memory_format=torch.channels_last)
    em = em.to(memory_format=ember.channels_last)
    assert em[0].weight.stride() == tm[0].weight.stride()
    assert isinstance(em[0].weight, ember.nn.Parameter)
    assert em[5].weight.stride() == tm[5].weight.stride()      # 2-D: left as it was
    e, t = _pair((2, 3, 8, 10))
    e = e.to(memory_format=ember.channels_last).requires_grad_()
    t = t.to(memory_format=torch.channels_last).requires_grad_()
    oe, ot = em(e), tm(t)
    np.testing.assert_allclose(oe.detach().numpy(), ot.detach().numpy(), rtol=1e-4, atol=1e-5)
    oe.square().sum().backward()
    ot.square().sum().backward()
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(em[0].weight.grad.numpy(), tm[0].weight.grad.numpy(),
                               rtol=1e-4, atol=1e-4)
    with pytest.raises(RuntimeError, match="required rank 4"):
        ember.nn.Conv3d(1, 1, 1).to(memory_format=ember.channels_last)
    with pytest.raises(RuntimeError, match="required rank 4"):
        torch.nn.Conv3d(1, 1, 1).to(memory_format=torch.channels_last)


@pytest.mark.parametrize("make", ["contiguous", "clone", "to"])
def test_gradient_through_format_change(make):
    a = np.random.default_rng(1).standard_normal((2, 3, 4, 5)).astype(np.float32)
    w = np.random.default_rng(2).standard_normal((2, 3, 4, 5)).astype(np.float32)
    grads = []
    for lib in (ember, torch):
        x = lib.tensor(a, requires_grad=True)
        y = getattr(x, make)(memory_format=lib.channels_last)
        assert y.is_contiguous(memory_format=lib.channels_last)
        (y * lib.tensor(w)).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_array_equal(grads[0], grads[1])


def test_fill_of_dense_permuted_tensors():
    """fill_ / ones_like on channels-last and transposed tensors (one flat fill over
    their dense memory) keep the layout and set every element, nothing outside"""
    base = ember.zeros(2 * 3 * 4 * 5 + 4)
    x = base[2:-2].view(2, 4, 5, 3).permute(0, 3, 1, 2)    # channels-last view
    assert x.is_contiguous(memory_format=ember.channels_last)
    x.fill_(2.5)
    b = np.asarray(base)
    assert (b[2:-2] == 2.5).all() and (b[:2] == 0).all() and (b[-2:] == 0).all()
    o = ember.ones_like(x)
    assert o.is_contiguous(memory_format=ember.channels_last)
    np.testing.assert_array_equal(np.asarray(o), np.ones((2, 3, 4, 5), np.float32))
    t = ember.zeros(6, 4).t()
    t.fill_(-1.0)
    np.testing.assert_array_equal(np.asarray(t), -np.ones((4, 6), np.float32))
    s = ember.zeros(4, 6)
    s[:, ::2].fill_(3.0)
    np.testing.assert_array_equal(np.asarray(s)[:, 1::2], np.zeros((4, 3), np.float32))
    np.testing.assert_array_equal(np.asarray(s)[:, ::2], np.full((4, 3), 3.0, np.float32))
