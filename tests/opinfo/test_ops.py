"""Generic tests over the op database: every declared variant of every entry, checked
against torch (forward and gradients), plus the declarations' own consistency."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import _ops
from tests.conftest import check_parity
from tests.opinfo.database import OPS

DECLARED = {name: (variants, aliases) for name, variants, aliases in _ops.OPS}
# nn ops at the top level in ATen's signatures: a function variant only
DECLARED.update({name: ("f", ()) for name in _ops.ATEN_NN_AT_TOP})
ALIAS_OF = {a: name for name, (_, aliases) in DECLARED.items() for a in aliases}


def _declared(name):
    base = ALIAS_OF.get(name, name)
    return base, DECLARED[base]


# in-place view ops change self's shape: test_inplace_view_ops_match_torch covers them
VIEW_INPLACE = {"squeeze", "unsqueeze", "t", "transpose", "swapaxes", "swapdims", "as_strided"}


def _cases(inplace=False):
    for i, info in enumerate(OPS):
        if inplace and ("i" not in _declared(info.name)[1][0] or info.name in VIEW_INPLACE):
            continue
        for dt in info.dtypes:
            yield pytest.param(info, dt, id=f"{info.name}-{dt}-{i}")


def _flip(t):
    return t.permute(*reversed(range(t.dim()))) if t.dim() >= 2 else t


def _to(lib, arr, noncontig):
    if noncontig:   # a reversed view of a reversed copy: same values, strided
        return _flip(lib.tensor(np.ascontiguousarray(arr.T))) if arr.ndim >= 2 \
            else lib.tensor(arr)
    return lib.tensor(arr)


def _call(lib, info, sample, tensors, variant):
    name = info.ref if (lib.__name__ == "torch" and info.ref) else info.name
    if variant == "function":
        return getattr(lib, name)(*tensors, *sample.args, **sample.kwargs)
    rest = tensors[:info.method_self] + tensors[info.method_self + 1:]
    return getattr(tensors[info.method_self], name)(*rest, *sample.args, **sample.kwargs)


def _as_np(x):
    if isinstance(x, (tuple, list)):
        return [_as_np(v) for v in x]
    return x.detach().numpy() if hasattr(x, "detach") else np.asarray(x)


def test_every_declaration_binds_its_variants():
    for name, variants, aliases in _ops.OPS:
        for n in (name,) + aliases:
            if "f" in variants:
                assert callable(getattr(ember, n)), n
            if "m" in variants:
                assert callable(getattr(ember.Tensor, n)), n
            if "i" in variants:
                assert callable(getattr(ember.Tensor, n + "_")), n
            if "I" in variants:
                assert callable(getattr(ember, n + "_")), n
            if n != name:   # an alias is the same object as its op
                for v, get in (("f", lambda k: getattr(ember, k)),
                               ("I", lambda k: getattr(ember, k + "_"))):
                    if v in variants:
                        assert get(n) is get(name), (n, v)


def test_declarations_are_unique():
    names = [n for name, _, aliases in _ops.OPS for n in (name,) + aliases]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("info,dt", list(_cases()))
def test_forward_and_grad_match_torch(info, dt):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    variants = _declared(info.name)[1][0]
    for sample in info.samples(rng, dt):
        noncontig = sample.noncontig
        grad = info.grad and np.dtype(dt).kind == "f"

        def run(lib, variant):
            def fn(*ts):
                ts = [_flip(t) if noncontig else t for t in ts]
                return _call(lib, info, sample, ts, variant)
            return fn

        arrays = [np.ascontiguousarray(a.T) if noncontig and a.ndim >= 2 else a
                  for a in sample.arrays]
        check_parity(run(ember, "function"), run(torch, "function"), *arrays,
                     rtol=info.rtol, atol=info.atol, grad=grad) if "f" in variants else None
        if "m" in variants:
            check_parity(run(ember, "method"), run(torch, "method"), *arrays,
                         rtol=info.rtol, atol=info.atol, grad=grad)


@pytest.mark.parametrize("info,dt", list(_cases(inplace=True)))
def test_inplace_matches_out_of_place(info, dt):
    torch = pytest.importorskip("torch")
    base, (variants, _) = _declared(info.name)
    rng = np.random.default_rng(1)
    for sample in info.samples(rng, dt):
        et = [_to(ember, a, sample.noncontig) for a in sample.arrays]
        tt = [_to(torch, a, sample.noncontig) for a in sample.arrays]
        try:
            expect = _call(torch, info, sample, [t.clone() for t in tt], "method")
            tself = tt[0].clone()
            getattr(tself, info.name + "_")(*tt[1:], *sample.args, **sample.kwargs)
        except RuntimeError as e:   # torch refuses this in-place form: so must ember
            with pytest.raises(RuntimeError):
                getattr(et[0].clone(), info.name + "_")(*et[1:], *sample.args,
                                                         **sample.kwargs)
            assert "cast" in str(e) or "shape" in str(e), e
            continue
        eself = et[0].clone()
        r = getattr(eself, info.name + "_")(*et[1:], *sample.args, **sample.kwargs)
        assert r is eself
        np.testing.assert_allclose(_as_np(eself), _as_np(tself), rtol=info.rtol,
                                   atol=info.atol)
        assert str(eself.dtype).split(".")[-1] == str(expect.dtype).split(".")[-1] or \
            str(eself.dtype) == str(et[0].dtype)
        if "I" in variants:
            e2 = et[0].clone()
            getattr(ember, info.name + "_")(e2, *et[1:], *sample.args, **sample.kwargs)
            np.testing.assert_allclose(_as_np(e2), _as_np(tself), rtol=info.rtol,
                                       atol=info.atol)


@pytest.mark.parametrize("info", [i for i in OPS if i.errors], ids=lambda i: i.name)
def test_error_inputs_raise_like_torch(info):
    torch = pytest.importorskip("torch")
    for sample in info.errors():
        with pytest.raises(Exception) as te:
            _call(torch, info, sample, [torch.tensor(a) for a in sample.arrays], "function")
        with pytest.raises(te.type):
            _call(ember, info, sample, [ember.tensor(a) for a in sample.arrays], "function")


def test_generated_inplace_refuses_what_torch_refuses():
    x = ember.ones(3, dtype=ember.int64)
    with pytest.raises(RuntimeError, match="can't be cast"):
        x.deg2rad_()
    y = ember.ones(3)
    with pytest.raises(RuntimeError, match="shape"):
        y.hypot_(ember.ones(2, 3))


def test_ldexp_gradient_is_two_to_the_exponent():
    x = ember.tensor([0.5, 0.3, -1.25], requires_grad=True)
    e = np.array([-3, 2, 0])
    ember.ldexp(x, ember.tensor(e)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2.0 ** e)


def test_diff_prepend_append_match_torch(torch):
    rng = np.random.default_rng(3)
    y, p, a = (rng.standard_normal(s).astype(np.float32) for s in ((3, 5), (3, 2), (3, 1)))
    e = ember.diff(ember.tensor(y), 2, 1, prepend=ember.tensor(p), append=ember.tensor(a))
    t = torch.diff(torch.tensor(y), 2, 1, prepend=torch.tensor(p), append=torch.tensor(a))
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6)


def test_as_strided_scatter_gradient():
    # out = input with positions 3..6 replaced by src = 3 * input[:2, :2]
    x = ember.tensor(np.arange(28, dtype=np.float32).reshape(4, 7), requires_grad=True)
    ember.as_strided_scatter(x, x[:2, :2] * 3, (2, 2), (1, 2), 3).sum().backward()
    want = np.ones((4, 7), np.float32)
    want.reshape(-1)[3:7] = 0
    want[:2, :2] += 3
    np.testing.assert_array_equal(x.grad.numpy(), want)


def test_vander_gradient():
    xs = np.array([0.5, -1.5, 2.0])
    x = ember.tensor(xs, requires_grad=True)
    ember.vander(x, 4).sum().backward()   # d/dx (1 + x + x^2 + x^3)
    np.testing.assert_allclose(x.grad.numpy(), 1 + 2 * xs + 3 * xs ** 2)


def test_inplace_view_ops_match_torch(torch):
    for name, args in (("squeeze_", (1,)), ("unsqueeze_", (0,)), ("transpose_", (0, 2)),
                       ("swapaxes_", (2, 0)), ("t_", ()), ("as_strided_", ((2, 2), (1, 2)))):
        shape = (3, 4) if name == "t_" else (2, 1, 3)
        a = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
        e, t = ember.tensor(a), torch.tensor(a)
        assert getattr(e, name)(*args) is e
        getattr(t, name)(*args)
        assert tuple(e.shape) == tuple(t.shape) and e.stride() == t.stride(), name
        np.testing.assert_array_equal(e.numpy(), t.numpy())
    # through autograd: the in-place view is recorded like its out-of-place form
    x = ember.ones(2, 1, requires_grad=True)
    y = x * 2
    y.squeeze_()
    (y * ember.tensor([1.0, 3.0])).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[2.0], [6.0]])
    with pytest.raises(RuntimeError, match="leaf Variable"):
        ember.ones(2, 1, requires_grad=True).squeeze_()


def test_resize_set_and_friends_match_torch(torch):
    e, t = ember.arange(6.0), torch.arange(6.0)
    e.resize_(2, 2)
    t.resize_(2, 2)
    np.testing.assert_array_equal(e.numpy(), t.numpy())
    e.resize_(3, 3)                       # grows into new storage, keeping the prefix
    assert tuple(e.shape) == (3, 3)
    np.testing.assert_array_equal(e.reshape(-1)[:6].numpy(), np.arange(6.0))
    with pytest.raises(RuntimeError, match="require grad"):
        ember.ones(2, requires_grad=True).resize_(3)
    src = ember.arange(12.0).reshape(3, 4)
    y = ember.empty(0)
    assert y.set_(src) is y and y.is_set_to(src) and not ember.ones(3, 4).is_set_to(src)
    y[0, 0] = 7.0
    assert src[0, 0].item() == 7.0        # shares memory
    y.set_(src, 1, (2, 2), (4, 1))
    np.testing.assert_array_equal(y.numpy(), [[1.0, 2.0], [5.0, 6.0]])
    assert tuple(y.set_().shape) == (0,)
    z, tz = ember.zeros(7, 3), torch.zeros(7, 3)
    z.fill_diagonal_(1.5, wrap=True)
    tz.fill_diagonal_(1.5, wrap=True)
    np.testing.assert_array_equal(z.numpy(), tz.numpy())
    a = np.arange(24.0, dtype=np.float32).reshape(4, 6)
    for size in ((1, 6), (6,), (4, 1), (1, 1)):
        np.testing.assert_allclose(ember.tensor(a).sum_to_size(*size).numpy(),
                                   torch.tensor(a).sum_to_size(*size).numpy())
    with pytest.raises(RuntimeError):
        ember.ones(4, 6).sum_to_size(3, 6)
    s = ember.ones(2).new_empty_strided((2, 2), (1, 2))
    assert s.stride() == (1, 2) and s.dtype == ember.float32
    assert ember.arange(3).new([1, 2]).dtype == ember.int64
    r = ember.arange(3.0)
    r.apply_(lambda v: v * 2).map_(ember.ones(3), lambda p, q: p + q)
    assert r.tolist() == [1.0, 3.0, 5.0]


def test_inference_flag_matches_torch(torch):
    base_e, base_t = ember.ones(3), torch.ones(3)
    with ember.inference_mode():
        e, ev = ember.ones(2), base_e.view(-1)
    with torch.inference_mode():
        t, tv = torch.ones(2), base_t.view(-1)
    assert (e.is_inference(), e[0:1].is_inference(), ev.is_inference()) == \
        (t.is_inference(), t[0:1].is_inference(), tv.is_inference()) == (True, True, False)
    assert ember.is_inference(e) and not base_e.is_inference()


def test_pinning_refuses_like_torch_without_an_accelerator(torch):
    with pytest.raises(RuntimeError) as te:
        torch.ones(2).pin_memory()
    with pytest.raises(RuntimeError, match=str(te.value)[:30]):
        ember.ones(2).pin_memory()
    assert ember.ones(2).is_pinned() is torch.ones(2).is_pinned() is False


def test_broadcast_shapes_of_growing_rank():
    # the accumulated shape is widened in place: a shorter first shape must not be clobbered
    assert tuple(ember.broadcast_shapes((6,), (4, 6))) == (4, 6)
    assert tuple(ember.broadcast_shapes((3, 1), (1,), (2, 1, 4))) == (2, 3, 4)


def test_predicates_match_torch(torch):
    a = np.ones((3, 4), np.float32)
    for fn in ("is_same_size",):
        for other in (np.ones((3, 4), np.float32), np.ones(4, np.float32)):
            assert getattr(ember, fn)(ember.tensor(a), ember.tensor(other)) == \
                getattr(torch, fn)(torch.tensor(a), torch.tensor(other))
    for fn in ("is_conj", "is_neg", "is_complex", "is_signed", "is_inference"):
        for arr in (a, np.ones(2, np.uint8)):
            assert getattr(ember, fn)(ember.tensor(arr)) == getattr(torch, fn)(torch.tensor(arr))


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce_matches_torch(torch, reduce, include_self):
    src = np.array([[2.0, 3], [4, 5], [6, 7]], np.float32)
    base = np.arange(6, dtype=np.float32).reshape(3, 2)
    e = ember.tensor(base).index_reduce(0, ember.tensor([0, 0, 2]), ember.tensor(src), reduce,
                                        include_self=include_self)
    t = torch.tensor(base).index_reduce(0, torch.tensor([0, 0, 2]), torch.tensor(src), reduce,
                                        include_self=include_self)
    np.testing.assert_allclose(e.numpy(), t.numpy())
    x = ember.tensor(base)
    assert x.index_reduce_(0, ember.tensor([0, 0, 2]), ember.tensor(src), reduce,
                           include_self=include_self) is x
    np.testing.assert_allclose(x.numpy(), t.numpy())


def test_functional_ops_at_the_top_level_match_torch(torch):
    import subprocess
    import sys

    # ember.<name> is nn.functional's op, loaded on first use only
    code = ("import sys, ember; assert 'ember.nn.functional' not in sys.modules; "
            "ember.hardshrink; assert 'ember.nn.functional' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 4, 6)).astype(np.float32)
    cases = {
        "rms_norm": ((6,),), "celu": (),
        "selu": (), "hardshrink": (), "threshold": (0.1, 20.0), "max_pool1d": (2,),
        "avg_pool1d": (2,), "adaptive_avg_pool1d": (3,), "channel_shuffle": (2,),
        "pdist": (), "prelu": ("w",), "pixel_shuffle": (1,), "pixel_unshuffle": (1,),
    }
    for name in _ops.FUNCTIONAL_AT_TOP:
        assert getattr(ember, name) is getattr(ember.nn.functional, name)
        if name not in cases:
            continue
        args = tuple(ember.ones(4) * 0.25 if a == "w" else a for a in cases[name])
        targs = tuple(torch.ones(4) * 0.25 if a == "w" else a for a in cases[name])
        xi = x[0] if name == "pdist" else (x[None] if "pixel" in name else x)
        e, t = getattr(ember, name)(ember.tensor(xi), *args), \
            getattr(torch, name)(torch.tensor(xi), *targs)
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-5, atol=1e-5, err_msg=name)


def test_gradient_with_coordinates_matches_torch(torch):
    rng = np.random.default_rng(7)
    f = rng.standard_normal((3, 5)).astype(np.float64)
    xs = np.array([0.0, 1.0, 3.0, 4.0, 6.5])
    for order in (1, 2):
        e = ember.gradient(ember.tensor(f), spacing=[ember.tensor(xs)], dim=1, edge_order=order)
        t = torch.gradient(torch.tensor(f), spacing=[torch.tensor(xs)], dim=1, edge_order=order)
        np.testing.assert_allclose(e[0].numpy(), t[0].numpy(), rtol=1e-12)
        np.testing.assert_allclose(e[0].numpy(), np.gradient(f, xs, axis=1, edge_order=order),
                                   rtol=1e-12)


def test_frexp_recomposes_and_nextafter_steps_one_ulp():
    x = np.array([1e-40, 3.0, -5.5, 2.5e38, 0.75], np.float32)
    m, e = ember.frexp(ember.tensor(x))
    assert e.dtype == ember.int32
    np.testing.assert_array_equal(np.ldexp(m.numpy(), e.numpy()), x)
    assert np.all((np.abs(m.numpy()) >= 0.5) & (np.abs(m.numpy()) < 1))
    up = ember.nextafter(ember.tensor(x), ember.tensor(np.full(5, np.inf, np.float32)))
    np.testing.assert_array_equal(up.numpy(), np.nextafter(x, np.float32(np.inf)))
