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
ALIAS_OF = {a: name for name, (_, aliases) in DECLARED.items() for a in aliases}


def _declared(name):
    base = ALIAS_OF.get(name, name)
    return base, DECLARED[base]


def _cases(inplace=False):
    for i, info in enumerate(OPS):
        if inplace and "i" not in _declared(info.name)[1][0]:
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
