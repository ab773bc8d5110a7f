"""ember.autograd.forward_ad: tangents of ops on dual tensors against torch's forward AD."""
import numpy as np
import pytest

import ember
import ember.autograd.forward_ad as fwAD

F = "nn.functional."
# name -> (function of the library module, shapes of the dual inputs, value range)
OPS = {
    "sin": (lambda t, a: t.sin(a), [(3, 4)], None),
    "exp": (lambda t, a: t.exp(a), [(3, 4)], None),
    "log": (lambda t, a: t.log(a), [(3, 4)], (0.5, 2.0)),
    "sqrt": (lambda t, a: t.sqrt(a), [(3, 4)], (0.5, 2.0)),
    "tanh": (lambda t, a: t.tanh(a), [(3, 4)], None),
    "sigmoid": (lambda t, a: t.sigmoid(a), [(3, 4)], None),
    "abs": (lambda t, a: a.abs(), [(3, 4)], None),
    "relu": (lambda t, a: t.nn.functional.relu(a), [(3, 4)], None),
    "gelu": (lambda t, a: t.nn.functional.gelu(a), [(3, 4)], None),
    "add_broadcast": (lambda t, a, b: a + b, [(3, 4), (4,)], None),
    "mul": (lambda t, a, b: a * b, [(3, 4), (3, 4)], None),
    "div": (lambda t, a, b: a / b, [(3, 4), (3, 4)], (0.5, 2.0)),
    "pow": (lambda t, a, b: t.pow(a, b), [(3, 4), (3, 4)], (0.5, 2.0)),
    "pow_scalar": (lambda t, a: a ** 3, [(3, 4)], None),
    "maximum": (lambda t, a, b: t.maximum(a, b), [(3, 4), (3, 4)], None),
    "matmul": (lambda t, a, b: a @ b, [(3, 4), (4, 5)], None),
    "bmm": (lambda t, a, b: t.bmm(a, b), [(2, 3, 4), (2, 4, 2)], None),
    "sum_dim": (lambda t, a: a.sum(1), [(3, 4)], None),
    "mean": (lambda t, a: a.mean(), [(3, 4)], None),
    "max_dim": (lambda t, a: a.max(1)[0], [(3, 4)], None),
    "softmax": (lambda t, a: t.softmax(a, -1), [(3, 4)], None),
    "log_softmax": (lambda t, a: t.nn.functional.log_softmax(a, -1), [(3, 4)], None),
    "norm": (lambda t, a: a.norm(), [(3, 4)], None),
    "reshape": (lambda t, a: a.reshape(4, 3) * 2, [(3, 4)], None),
    "transpose": (lambda t, a: a.t().exp(), [(3, 4)], None),
    "permute": (lambda t, a: a.permute(2, 0, 1), [(2, 3, 4)], None),
    "getitem": (lambda t, a: a[1:, ::2], [(3, 4)], None),
    "expand": (lambda t, a: a.expand(2, 3, 4), [(3, 4)], None),
    "cat": (lambda t, a, b: t.cat([a, b], 0), [(3, 4), (2, 4)], None),
    "stack": (lambda t, a, b: t.stack([a, b], 1), [(3, 4), (3, 4)], None),
    "where": (lambda t, a, b: t.where(a > 0, a, b), [(3, 4), (3, 4)], None),
    "linear": (lambda t, x, w, b: t.nn.functional.linear(x, w, b), [(2, 4), (3, 4), (3,)], None),
    "conv2d": (lambda t, x, w: t.nn.functional.conv2d(x, w, padding=1),
               [(1, 2, 5, 5), (3, 2, 3, 3)], None),
    "layer_norm": (lambda t, x: t.nn.functional.layer_norm(x, (4,)), [(3, 4)], None),
    "mse_loss": (lambda t, a, b: t.nn.functional.mse_loss(a, b), [(3, 4), (3, 4)], None),
    "cross_entropy": (lambda t, x: t.nn.functional.cross_entropy(x, t.tensor([0, 2, 1])),
                      [(3, 4)], None),
    "chain": (lambda t, a, b: ((a @ b).tanh() * 3).sum(0).exp(), [(3, 4), (4, 2)], None),
}


def _forward(lib, fw, fn, primals, tangents):
    with fw.dual_level():
        duals = [fw.make_dual(lib.tensor(p), lib.tensor(t)) for p, t in zip(primals, tangents)]
        out = fn(lib, *duals)
        primal, tangent = fw.unpack_dual(out)
        return primal.detach().numpy(), tangent.numpy()


@pytest.mark.parametrize("name", sorted(OPS))
def test_tangent_matches_torch(name, torch):
    fn, shapes, rng_range = OPS[name]
    lo, hi = rng_range or (-2.0, 2.0)
    rng = np.random.default_rng(0)
    primals = [rng.uniform(lo, hi, s).astype("float64") for s in shapes]
    tangents = [rng.standard_normal(s) for s in shapes]
    ep, et = _forward(ember, fwAD, fn, primals, tangents)
    tp, tt = _forward(torch, torch.autograd.forward_ad, fn, primals, tangents)
    np.testing.assert_allclose(ep, tp, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(et, tt, rtol=1e-7, atol=1e-9)


def test_tangent_is_linear_in_the_tangent():
    x = ember.tensor([[0.3, -1.2], [2.0, 0.5]])
    with fwAD.dual_level():
        outs = [fwAD.unpack_dual((fwAD.make_dual(x, v) @ x).sin()).tangent
                for v in (ember.ones(2, 2), 3 * ember.ones(2, 2))]
    np.testing.assert_allclose(outs[1].numpy(), 3 * outs[0].numpy(), rtol=1e-6)


def test_no_tangent_outside_and_for_unrelated_tensors():
    with fwAD.dual_level():
        d = fwAD.make_dual(ember.ones(3), ember.ones(3))
        plain = ember.ones(3) * 2
        assert fwAD.unpack_dual(plain).tangent is None
        assert fwAD.unpack_dual(d + plain).tangent is not None
    assert fwAD.unpack_dual(d).tangent is None        # the level closed
    assert fwAD.unpack_dual(d * 2).tangent is None


def test_errors_match_torch(torch):
    cases = [
        (lambda fw, t: fw.make_dual(t.ones(3), t.ones(3)), False, RuntimeError,
         "no level exists"),
        (lambda fw, t: fw.make_dual(t.ones(3), t.ones(4)), True, RuntimeError,
         "different size"),
        (lambda fw, t: fw.make_dual(t.ones(3, dtype=t.int64), t.ones(3)), True, ValueError,
         "Expected primal to be floating point"),
        (lambda fw, t: fw.make_dual(t.ones(3), t.ones(3, dtype=t.int64)), True, ValueError,
         "Expected tangent to be floating point"),
        (lambda fw, t: fw.enter_dual_level(), True, RuntimeError, "Nested forward mode AD"),
    ]
    for make, in_level, err, match in cases:
        for fw, lib in ((fwAD, ember), (torch.autograd.forward_ad, torch)):
            with pytest.raises(err, match=match):
                if in_level:
                    with fw.dual_level():
                        make(fw, lib)
                else:
                    make(fw, lib)
