"""Every elementwise / view backward formula of ember.autograd: gradcheck (and
gradgradcheck for the smooth ones) in float64, and gradients against PyTorch's."""
import math

import numpy as np
import pytest

import ember
from ember._C import elementwise as E
from ember.autograd import gradcheck, gradgradcheck

rng = np.random.default_rng(1234)


def T(a, grad=True):
    return ember.tensor(np.asarray(a, dtype=np.float64).tolist(), dtype=ember.float64,
                        requires_grad=grad)


def away_from_zero(shape, lo=0.2, hi=1.5):
    v = rng.uniform(lo, hi, shape)
    return v * rng.choice([-1.0, 1.0], shape)


# name -> (callable taking ember tensors, input generator, torch callable)
UNARY = {
    "neg": (E.neg, lambda s: rng.normal(size=s), "neg"),
    "abs": (E.abs, away_from_zero, "abs"),
    "exp": (E.exp, lambda s: rng.normal(size=s), "exp"),
    "exp2": (E.exp2, lambda s: rng.normal(size=s), "exp2"),
    "expm1": (E.expm1, lambda s: rng.normal(size=s), "expm1"),
    "log": (E.log, lambda s: rng.uniform(0.3, 2, s), "log"),
    "log2": (E.log2, lambda s: rng.uniform(0.3, 2, s), "log2"),
    "log10": (E.log10, lambda s: rng.uniform(0.3, 2, s), "log10"),
    "log1p": (E.log1p, lambda s: rng.uniform(-0.5, 2, s), "log1p"),
    "sqrt": (E.sqrt, lambda s: rng.uniform(0.3, 2, s), "sqrt"),
    "rsqrt": (E.rsqrt, lambda s: rng.uniform(0.3, 2, s), "rsqrt"),
    "sin": (E.sin, lambda s: rng.normal(size=s), "sin"),
    "cos": (E.cos, lambda s: rng.normal(size=s), "cos"),
    "tan": (E.tan, lambda s: rng.uniform(-1, 1, s), "tan"),
    "asin": (E.asin, lambda s: rng.uniform(-0.8, 0.8, s), "asin"),
    "acos": (E.acos, lambda s: rng.uniform(-0.8, 0.8, s), "acos"),
    "atan": (E.atan, lambda s: rng.normal(size=s), "atan"),
    "sinh": (E.sinh, lambda s: rng.normal(size=s), "sinh"),
    "cosh": (E.cosh, lambda s: rng.normal(size=s), "cosh"),
    "tanh": (E.tanh, lambda s: rng.normal(size=s), "tanh"),
    "asinh": (E.asinh, lambda s: rng.normal(size=s), "asinh"),
    "acosh": (E.acosh, lambda s: rng.uniform(1.2, 3, s), "acosh"),
    "atanh": (E.atanh, lambda s: rng.uniform(-0.8, 0.8, s), "atanh"),
    "sigmoid": (E.sigmoid, lambda s: rng.normal(size=s), "sigmoid"),
    "relu": (E.relu, away_from_zero, "relu"),
    "silu": (E.silu, lambda s: rng.normal(size=s), "nn.functional.silu"),
    "mish": (E.mish, lambda s: rng.normal(size=s), "nn.functional.mish"),
    "erf": (E.erf, lambda s: rng.normal(size=s), "erf"),
    "erfc": (E.erfc, lambda s: rng.normal(size=s), "erfc"),
    "reciprocal": (E.reciprocal, away_from_zero, "reciprocal"),
    "square": (E.square, lambda s: rng.normal(size=s), "square"),
    "lgamma": (E.lgamma, lambda s: np.concatenate([rng.uniform(0.2, 8, s[0] - 2),
                                                   [-0.5, -2.7]]), "lgamma"),
    "frac": (E.frac, lambda s: rng.uniform(0.1, 0.9, s) + rng.integers(-3, 3, s), "frac"),
    "hardsigmoid": (E.hardsigmoid, lambda s: np.array([-4., -1.5, 0.3, 2.0, 4.5])[:s[0]],
                    "nn.functional.hardsigmoid"),
    "hardswish": (E.hardswish, lambda s: np.array([-4., -1.5, 0.3, 2.0, 4.5])[:s[0]],
                  "nn.functional.hardswish"),
    "gelu": (E.gelu, lambda s: rng.normal(size=s), "nn.functional.gelu"),
    "gelu_tanh": (lambda x: E.gelu(x, approximate="tanh"), lambda s: rng.normal(size=s),
                  lambda t, x: t.nn.functional.gelu(x, approximate="tanh")),
    "softplus": (lambda x: E.softplus(x, 1.5, 2.0), lambda s: rng.normal(size=s) * 2,
                 lambda t, x: t.nn.functional.softplus(x, 1.5, 2.0)),
    "leaky_relu": (lambda x: E.leaky_relu(x, 0.1), away_from_zero,
                   lambda t, x: t.nn.functional.leaky_relu(x, 0.1)),
    "elu": (lambda x: E.elu(x, 0.7, 1.2, 0.9), away_from_zero,
            lambda t, x: t.ops.aten.elu(x, 0.7, 1.2, 0.9)),
    "clamp": (lambda x: E.clamp(x, -0.5, 0.6), lambda s: np.array([-0.9, -0.3, 0.1, 0.4, 0.8]),
              lambda t, x: t.clamp(x, -0.5, 0.6)),
    "clamp_min": (lambda x: E.clamp(x, min=-0.5), lambda s: np.array([-0.9, -0.3, 0.1, 0.4, 0.8]),
                  lambda t, x: t.clamp(x, min=-0.5)),
    "clamp_max": (lambda x: E.clamp(x, max=0.2), lambda s: np.array([-0.9, -0.3, 0.1, 0.4, 0.8]),
                  lambda t, x: t.clamp(x, max=0.2)),
}
ZERO_GRAD = ["sign", "floor", "ceil", "round", "trunc"]
NOT_TWICE = {"frac", "hardsigmoid", "hardswish", "clamp", "clamp_min", "clamp_max", "relu",
             "leaky_relu", "abs", "lgamma"}


def _torch_fn(torch, spec):
    if callable(spec):
        return lambda x: spec(torch, x)
    obj = torch
    for part in spec.split("."):
        obj = getattr(obj, part)
    return obj


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_gradcheck(name):
    fn, gen, _ = UNARY[name]
    x = T(gen((5,)))
    assert gradcheck(fn, (x,))
    if name not in NOT_TWICE:
        assert gradgradcheck(fn, (x,))


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_against_torch(name, torch):
    fn, gen, spec = UNARY[name]
    v = gen((5,))
    x = T(v)
    y = fn(x)
    g = T(rng.normal(size=5), grad=False)
    y.backward(g)
    tx = torch.tensor(v, dtype=torch.float64, requires_grad=True)
    _torch_fn(torch, spec)(tx).backward(torch.tensor(g.tolist(), dtype=torch.float64))
    # PyTorch's hardsigmoid/hardswish backward use a float32 1/6 even for float64
    tol = 1e-7 if name.startswith("hard") else 1e-10
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=tol, atol=1e-12)


@pytest.mark.parametrize("name", ZERO_GRAD)
def test_piecewise_constant_zero_grad(name, torch):
    v = rng.uniform(-3, 3, 6)
    x = T(v)
    getattr(E, name)(x).backward(ember.ones(6, dtype=ember.float64))
    tx = torch.tensor(v, requires_grad=True)
    getattr(torch, name)(tx).backward(torch.ones(6, dtype=torch.float64))
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


BINARY = {
    "add": (E.add, None), "sub": (E.sub, None), "mul": (E.mul, None), "div": (E.div, None),
    "pow": (E.pow, "pos"), "maximum": (E.maximum, None), "minimum": (E.minimum, None),
    "fmax": (E.fmax, None), "fmin": (E.fmin, None), "atan2": (E.atan2, None),
    "hypot": (E.hypot, None), "xlogy": (E.xlogy, "pos"), "logaddexp": (E.logaddexp, None),
    "remainder": (E.remainder, "posb"), "fmod": (E.fmod, "posb"),
    "copysign": (E.copysign, None),
    "lerp_w": (lambda a, b: E.lerp(a, b, 0.3), None),
    "rsub": (lambda a, b: E.rsub(a, b, alpha=2), None),
    "add_alpha": (lambda a, b: E.add(a, b, alpha=-1.5), None),
}


def _binary_inputs(kind):
    a = rng.uniform(0.3, 2.0, (3, 4)) if kind == "pos" else away_from_zero((3, 4))
    b = rng.uniform(0.3, 2.0, (4,)) if kind in ("pos", "posb") else away_from_zero((4,))
    if kind == "posb":
        a = rng.uniform(0.3, 5.0, (3, 4))
        b = b + 0.37
    return a, b


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_gradcheck_broadcast(name):
    fn, kind = BINARY[name]
    a, b = _binary_inputs(kind)
    assert gradcheck(fn, (T(a), T(b)))
    if name not in ("maximum", "minimum", "fmax", "fmin", "remainder", "fmod", "copysign"):
        assert gradgradcheck(fn, (T(a), T(b)))


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "pow", "maximum", "minimum",
                                  "atan2", "hypot", "xlogy", "logaddexp", "fmax", "fmin",
                                  "remainder", "fmod", "copysign"])
def test_binary_against_torch(name, torch):
    fn, kind = BINARY[name]
    a, b = _binary_inputs(kind)
    ea, eb = T(a), T(b)
    fn(ea, eb).sum().backward()
    ta = torch.tensor(a, requires_grad=True)
    tb = torch.tensor(b, requires_grad=True)
    getattr(torch, name)(ta, tb).sum().backward()
    np.testing.assert_allclose(ea.grad.numpy(), ta.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(eb.grad.numpy(), tb.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_max_min_ties_split_the_gradient(torch):
    a, b = T([1.0, 2.0, 3.0]), T([1.0, 5.0, 3.0])
    E.maximum(a, b).sum().backward()
    ta = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    tb = torch.tensor([1.0, 5.0, 3.0], dtype=torch.float64, requires_grad=True)
    torch.maximum(ta, tb).sum().backward()
    assert a.grad.tolist() == ta.grad.tolist() and b.grad.tolist() == tb.grad.tolist()


@pytest.mark.parametrize("case", ["scalar_exp", "scalar_base", "zero_exp", "zero_base"])
def test_pow_variants(case, torch):
    x = rng.uniform(0.3, 2.0, 4)
    if case == "scalar_exp":
        f, tf = (lambda t: t ** 2.5), (lambda t: t ** 2.5)
    elif case == "scalar_base":
        f, tf = (lambda t: 1.7 ** t), (lambda t: 1.7 ** t)
    elif case == "zero_exp":
        f, tf = (lambda t: E.pow(t, 0)), (lambda t: torch.pow(t, 0))
    else:
        x = np.array([0.0, 1.0, 2.0, 0.5])
        f, tf = (lambda t: E.pow(0.0, t)), (lambda t: torch.pow(0.0, t))
    ex = T(x)
    f(ex).sum().backward()
    tx = torch.tensor(x, requires_grad=True)
    tf(tx).sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-10)
    if case in ("scalar_exp", "scalar_base"):
        assert gradgradcheck(f, (T(x),))


def test_where_and_lerp():
    c = ember.tensor([True, False, True, False])
    a, b = T(rng.normal(size=4)), T(rng.normal(size=(3, 1)))
    assert gradcheck(lambda p, q: E.where(c, p, q), (a, b))
    w = T(rng.uniform(0, 1, 4))
    assert gradcheck(lambda p, q, r: E.lerp(p, q, r), (a, T(rng.normal(size=4)), w))
    assert gradgradcheck(lambda p, q, r: E.lerp(p, q, r), (a, T(rng.normal(size=4)), w))
    assert gradcheck(lambda p: E.where(c, p, 0.5), (a,))


def test_where_against_torch(torch):
    cond = [True, False, True]
    a, b = T([1.0, 2.0, 3.0]), T([4.0])
    E.where(ember.tensor(cond), a, b).sum().backward()
    ta = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    tb = torch.tensor([4.0], dtype=torch.float64, requires_grad=True)
    torch.where(torch.tensor(cond), ta, tb).sum().backward()
    assert a.grad.tolist() == ta.grad.tolist() and b.grad.tolist() == tb.grad.tolist()


@pytest.mark.parametrize("name", ["relu_backward", "sigmoid_backward", "tanh_backward",
                                  "gelu_backward", "silu_backward"])
def test_fused_backward_helpers_are_differentiable(name):
    fn = getattr(E, name)
    g = T(rng.normal(size=5))
    x = T(away_from_zero((5,)) if name == "relu_backward" else rng.uniform(-0.9, 0.9, 5))
    assert gradcheck(fn, (g, x))


VIEWS = {
    "view": lambda x: x.view(4, 3),
    "reshape_copy": lambda x: x.t().reshape(12),
    "permute": lambda x: x.reshape(2, 2, 3).permute(2, 0, 1),
    "transpose": lambda x: x.transpose(0, 1),
    "t": lambda x: x.t(),
    "expand": lambda x: x[:1].expand(5, 4) * 1.0,
    "unsqueeze_squeeze": lambda x: x.unsqueeze(1).squeeze(1),
    "narrow": lambda x: x.narrow(1, 1, 2),
    "select": lambda x: x.select(1, 2),
    "diagonal": lambda x: x.diagonal(1),
    "diagonal_neg": lambda x: x.diagonal(-1),
    "as_strided": lambda x: x.as_strided((2, 2), (1, 4), 1),
    "unfold_overlap": lambda x: x.reshape(12).unfold(0, 4, 2),
    "clone": lambda x: x.clone(),
    "contiguous": lambda x: x.t().contiguous(),
    "getitem": lambda x: x[1:, ::2],
    "split": lambda x: x.split(2, 1)[1],
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_view_gradcheck(name):
    x = T(rng.normal(size=(3, 4)))
    assert gradcheck(VIEWS[name], (x,))
    assert gradgradcheck(lambda t: VIEWS[name](t) * VIEWS[name](t), (x,))


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_view_against_torch(name, torch):
    v = rng.normal(size=(3, 4))
    x = T(v)
    y = VIEWS[name](x)
    g = rng.normal(size=tuple(y.shape))
    y.backward(ember.tensor(g.tolist(), dtype=ember.float64))
    tx = torch.tensor(v, requires_grad=True)
    VIEWS[name](tx).backward(torch.tensor(g))
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)


def test_copy_and_dtype_conversion(torch):
    src = T(rng.normal(size=(4,)))
    dst = ember.zeros(3, 4, dtype=ember.float32)
    dst.copy_(src)
    assert dst.grad_fn.name() == "CopyBackwards"
    (dst * 2).sum().backward()
    assert src.grad.dtype == ember.float64 and src.grad.tolist() == [6.0] * 4
    x = T([1.0, 2.0])
    y = x.to(ember.float32)
    assert y.grad_fn.name() == "ToCopyBackward0"
    (y * y).sum().backward()
    assert x.grad.dtype == ember.float64 and x.grad.tolist() == [2.0, 4.0]


def test_inplace_ops_are_recorded():
    x = T([0.5, 1.0, 2.0])
    y = x * 1
    y.mul_(x)
    y.exp_()
    y.add_(1)
    y.sum().backward()
    expected = [2 * v * math.exp(v * v) for v in (0.5, 1.0, 2.0)]
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-12)


def test_node_names_match_pytorch(torch):
    x = T(rng.normal(size=(2, 3)))
    tx = torch.tensor(x.tolist(), dtype=torch.float64, requires_grad=True)
    for f in (lambda t: t + t, lambda t: t * 2, lambda t: t.exp(), lambda t: t.view(6),
              lambda t: t.permute(1, 0), lambda t: t.select(0, 1), lambda t: t.narrow(1, 0, 2),
              lambda t: t.clone(), lambda t: t.sigmoid(), lambda t: t.relu(),
              lambda t: t.clamp(0, 1), lambda t: t.diagonal(), lambda t: t.expand(2, 2, 3)):
        assert type(f(x).grad_fn).__name__ == type(f(tx).grad_fn).__name__


def test_indexing_an_expanded_tensor_counts_each_element_once():
    x = ember.ones(2, 4, requires_grad=True)
    w = ember.arange(4.0)
    for f, want in [(lambda t: t.unsqueeze(-1).expand(2, 4, 2)[..., 0] * w, [0, 1, 2, 3]),
                    (lambda t: t.unsqueeze(-1).expand(2, 4, 3)[..., :2] * w.reshape(4, 1),
                     [0, 2, 4, 6]),
                    (lambda t: t.unsqueeze(0).expand(3, 2, 4)[1:] * w, [0, 2, 4, 6])]:
        x.grad = None
        f(x).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), np.array([want, want], dtype=np.float32))
    x = ember.tensor(rng.normal(size=(2, 4)), requires_grad=True)
    for f in (lambda t: t.unsqueeze(-1).expand(2, 4, 3)[..., :2] ** 2,
              lambda t: t.expand(3, 2, 4)[1:].sin()):
        assert gradcheck(f, (x,))
        assert gradgradcheck(f, (x,))
