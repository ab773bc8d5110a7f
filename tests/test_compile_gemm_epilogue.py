"""ember.compile fuses the pointwise ops after a linear into the GEMM's epilogue."""
import numpy as np
import pytest

import ember
from ember.compiler.codegen import compile_graph

F = ember.nn.functional


def _compiled(fn):
    """``fn`` compiled by the code generator, plus the CompiledGraphs it made."""
    made = []

    def backend(gm, example_inputs):
        c = compile_graph(gm, example_inputs)
        made.append(c)
        return c

    compiled = ember.compile(fn, backend=backend)

    def run(*args):
        if not made:
            compiled(*args)      # the capture call runs eagerly
        return compiled(*args)

    return run, made


def _gemm_kernels(made):
    """The number of GEMM-epilogue kernels in the compiled graphs (forward and backward)."""
    out = 0
    for c in made:
        for cg in _graphs(c):
            out += sum(1 for is_k, k in cg.steps if is_k and k.gemm)
    return out


def _graphs(c):
    if hasattr(c, "steps"):
        return [c]
    # a training graph: its generated forward and backward
    return [g for g in (getattr(c, "fwd", None), getattr(c, "bwd", None))
            if hasattr(g, "steps")]


def _close(a, e, tol=2e-6):
    a, e = a.detach().numpy(), e.detach().numpy()
    assert a.shape == e.shape and a.dtype == e.dtype
    np.testing.assert_allclose(a, e, rtol=tol, atol=tol)


def _with_threads(n, fn):
    before = ember.get_num_threads()
    ember.set_num_threads(n)
    try:
        return fn()
    finally:
        ember.set_num_threads(before)


# rows x K x N: the GEMM's tiny-product, matrix-vector (one row, one column) and
# blocked paths, edge tiles, and K longer than one K block (the epilogue must see
# only finished blocks)
SHAPES = [((2, 3), 4, 5), ((1, 1), 64, 40), ((3, 70), 33, 1), ((4, 37), 48, 52),
          ((2, 64), 400, 96)]


@pytest.mark.parametrize("rows,K,N", SHAPES)
@pytest.mark.parametrize("threads", [1, 2])
def test_linear_gelu_matches_eager(rows, K, N, threads):
    g = ember.Generator().manual_seed(1)
    lin = ember.nn.Linear(K, N)
    x = ember.randn(*rows, K, generator=g)

    def f(t):
        return F.gelu(lin(t))

    cf, made = _compiled(f)
    with ember.no_grad():
        got = _with_threads(threads, lambda: cf(x))
        ref = _with_threads(threads, lambda: f(x))
    _close(got, ref)
    assert _gemm_kernels(made) == 1


def test_linear_bias_relu_residual_is_bit_identical_across_threads():
    g = ember.Generator().manual_seed(2)
    lin = ember.nn.Linear(96, 96)
    x = ember.randn(6, 50, 96, generator=g)

    def f(t):
        y = lin(t)
        return y.relu() + t, y      # the product itself is an output too

    cf, made = _compiled(f)
    with ember.no_grad():
        one = _with_threads(1, lambda: cf(x))
        two = _with_threads(2, lambda: cf(x))
        ref = f(x)
    assert _gemm_kernels(made) == 1
    for a, b, e in zip(one, two, ref):
        assert np.array_equal(a.numpy(), b.numpy())
        _close(a, e)
    # the eager GEMM's product, bit for bit
    assert np.array_equal(one[1].numpy(), ref[1].numpy())


def test_epilogue_parity_with_torch():
    torch = pytest.importorskip("torch")
    g = ember.Generator().manual_seed(3)
    x = ember.randn(5, 17, 40, generator=g)
    w = ember.randn(24, 40, generator=g)
    b = ember.randn(24, generator=g)
    r = ember.randn(24, generator=g)

    def f(t, w, b, r):
        y = F.linear(t, w, b)
        return F.silu(y) * 2 + r, y > 0

    cf, made = _compiled(f)
    got, mask = cf(x, w, b, r)
    tx, tw, tb, tr = (torch.from_numpy(a.numpy()) for a in (x, w, b, r))
    ty = torch.nn.functional.linear(tx, tw, tb)
    ref = torch.nn.functional.silu(ty) * 2 + tr
    np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-5, atol=1e-5)
    assert mask.dtype == ember.bool
    np.testing.assert_array_equal(mask.numpy(), (ty > 0).numpy())
    assert _gemm_kernels(made) == 1


@pytest.mark.parametrize("threads", [1, 2])
def test_training_through_the_epilogue_matches_eager(threads):
    g = ember.Generator().manual_seed(4)
    l1, l2 = ember.nn.Linear(32, 64), ember.nn.Linear(64, 32)
    params = list(l1.parameters()) + list(l2.parameters())
    x = ember.randn(12, 32, generator=g, requires_grad=True)

    def loss_fn(t):
        h = F.gelu(l1(t))
        return ((l2(h).relu() + t) ** 2).mean()

    def grads(fn):
        for p in params + [x]:
            p.grad = None
        loss = fn(x)
        loss.backward()
        return [loss.detach()] + [p.grad.clone() for p in params + [x]]

    cf, made = _compiled(loss_fn)
    _with_threads(threads, lambda: grads(cf))
    got = _with_threads(threads, lambda: grads(cf))
    ref = _with_threads(threads, lambda: grads(loss_fn))
    for a, e in zip(got, ref):
        _close(a, e, 1e-5)
    assert _gemm_kernels(made) >= 1


def test_linears_the_gemm_kernel_leaves_to_eager():
    g = ember.Generator().manual_seed(5)
    w = ember.randn(8, 16, generator=g)
    xt = ember.randn(16, 10, generator=g).t()       # not contiguous: eager linear
    xd = ember.randn(10, 16, generator=g, dtype=ember.float64)

    def f(t):
        return F.linear(t, w).relu() * 2

    cf, made = _compiled(f)
    with ember.no_grad():
        _close(cf(xt), f(xt))
        assert _gemm_kernels(made) == 0
        cf64, made64 = _compiled(lambda t: F.linear(t, w.double()).relu() * 2)
        _close(cf64(xd), F.linear(xd, w.double()).relu() * 2, 1e-12)
        assert _gemm_kernels(made64) == 0


@pytest.mark.parametrize("threads", [1, 2])
def test_both_gemm_variants_match_eager(threads):
    g = ember.Generator().manual_seed(6)
    lin = ember.nn.Linear(40, 72)
    x = ember.randn(3, 45, 40, generator=g)

    def f(t):
        return F.gelu(lin(t)) * t.sum(-1, keepdim=True)

    cf, made = _compiled(f)
    with ember.no_grad():
        ref = _with_threads(threads, lambda: f(x))
        cf(x)
        (step,) = [k for is_k, k in made[0].steps if is_k and k.gemm]
        outs = []
        for v in (0, 1):
            step.choose(v, 0)
            outs.append(_with_threads(threads, lambda: cf(x)).numpy())
    assert np.array_equal(outs[0], outs[1])
    _close(ember.tensor(outs[0]), ref)


def test_max_autotune_times_the_gemm_variants_and_keeps_its_choice(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    g = ember.Generator().manual_seed(7)
    lin = ember.nn.Linear(64, 64)
    x = ember.randn(8, 30, 64, generator=g)

    def f(t):
        return F.relu(lin(t)) + t

    made = []

    def backend(gm, example_inputs):
        made.append(compile_graph(gm, example_inputs, ember.CompileMode("max-autotune")))
        return made[-1]

    with ember.no_grad():
        for _ in range(2):
            cf = ember.compile(f, backend=backend)
            cf(x)
            _close(cf(x), f(x))
    first, second = made
    import json
    saved = json.loads(first.tune_file.read_text())
    nt = str(ember.get_num_threads())
    assert saved[nt] == first.kernel_threads and saved[f"{nt}:variants"] == \
        first.kernel_variants
    assert first.kernel_variants[0] in (0, 1) and first.kernel_threads[0] >= 1
    # a new process (here: a new compile) reads the choice back instead of timing again
    assert second.tuned and second.kernel_variants == first.kernel_variants
    assert second.kernel_threads == first.kernel_threads


def test_gelu_tail_below_the_fast_range_matches_eager():
    """gelu and its derivative below -5.5 in a row kernel and in a GEMM epilogue equal
    eager: gelu's one form covers every x, the derivative's rows or kernels that meet
    such values are computed again (libm's erfc)."""
    from ember._C import elementwise as _E
    g = ember.Generator().manual_seed(8)
    vals = [-40.0, -10.0, -6.0, -5.5, -5.4999, -1.0, -0.0, 0.0, 0.5, 6.0, 40.0]
    x = ember.cat([ember.tensor(vals), ember.randn(2000, generator=g) * 4])

    def f(t):
        return F.gelu(t * 1.0) + 0.0, _E.gelu_backward(t * 0.5, t * 1.0) + 0.0

    cf, made = _compiled(f)
    for got, ref in zip(cf(x), f(x)):
        np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=4e-7, atol=1e-37)
    assert made[0].n_kernels == 1

    lin = ember.nn.Linear(16, 40)
    with ember.no_grad():
        lin.weight.mul_(8.0)        # pre-activations far below -5.5 in most rows
    xs = ember.randn(37, 16, generator=g)

    def h(t):
        return F.gelu(lin(t)) * 2

    ch, made_h = _compiled(h)
    with ember.no_grad():
        got, ref = ch(xs), h(xs)
    assert (lin(xs) < -5.5).any()
    np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=4e-7, atol=1e-37)
    assert _gemm_kernels(made_h) == 1
