"""The native entry point of generated kernels (ember._C.cgrun) and the code it runs."""
import numpy as np
import pytest

import ember
from ember._C import cgrun
from ember.compiler.codegen import cache, compile_graph

# k0: o = x * 2 + 1 over n0 elements, info = (nt, n0); k1: o = x + y
_SRC = """#include <stdint.h>
void k0(void **a, int nt, int64_t n0) {
    const float *x = (const float *)a[0]; float *o = (float *)a[1], *info = (float *)a[2];
    for (int64_t i = 0; i < n0; i++) o[i] = x[i] * 2.0f + 1.0f;
    info[0] = (float)nt; info[1] = (float)n0;
}
void k1(void **a, int nt, int64_t n0) {
    const float *x = (const float *)a[0], *y = (const float *)a[1]; float *o = (float *)a[2];
    (void)nt;
    for (int64_t i = 0; i < n0; i++) o[i] = x[i] + y[i];
}
"""


@pytest.fixture(scope="module")
def lib():
    argv = cache.compiler_command()
    if argv is None:
        pytest.skip("no C compiler")
    return cache.load(_SRC, argv)


def _addr(lib, name):
    import ctypes
    return ctypes.cast(getattr(lib, name), ctypes.c_void_p).value


def _k0(lib, n=5):
    return cgrun.Kernel(_addr(lib, "k0"), 1, [((n,), ember.float32), ((2,), ember.float32)], n)


def test_kernel_allocates_outputs_and_passes_threads_and_size(lib):
    x = ember.arange(5.)
    k = _k0(lib)
    o, info = k.run([x], 3)
    np.testing.assert_array_equal(o.numpy(), x.numpy() * 2 + 1)
    assert o.shape == (5,) and o.dtype == ember.float32
    assert info.tolist() == [3.0, 5.0]
    assert k.run((x,))[1].tolist() == [float(ember.get_num_threads()), 5.0]   # 0: all
    k.nt = 1                                                    # max-autotune's cap
    assert k.run([x], 4)[1].tolist()[0] == 1.0
    o2, i2 = ember.zeros(5), ember.zeros(2)
    assert k.run_into([x], [o2, i2])[0] is o2
    np.testing.assert_array_equal(o2.numpy(), x.numpy() * 2 + 1)


def test_kernel_reads_views_at_their_offset(lib):
    base = ember.arange(8.)
    o, _ = _k0(lib).run([base[3:]])
    np.testing.assert_array_equal(o.numpy(), np.arange(3., 8.) * 2 + 1)


def test_kernel_checks_its_arguments(lib):
    k = _k0(lib)
    with pytest.raises(ValueError, match="expected 1 inputs and 2 outputs"):
        k.run([ember.ones(5), ember.ones(5)])
    with pytest.raises(TypeError):
        k.run([np.ones(5, np.float32)])
    with pytest.raises(ValueError, match="null function address"):
        cgrun.Kernel(0, 1, [], 1)


def test_plan_chains_kernels_and_frees_dead_values(lib):
    k0 = _k0(lib, 4)
    k1 = cgrun.Kernel(_addr(lib, "k1"), 2, [((4,), ember.float32)], 4)
    # slots: 0 x, 1 y | k0 -> 2 (dead after k1), 3 (info, unread) | k1(2, 1) -> 4
    plan = cgrun.Plan([k0, k1], [[0], [2, 1]], [[2, 3], [4]], [[3], [2]], 2, [4, 2])
    x, y = ember.arange(4.), ember.full((4,), 10.)
    out, mid = plan(x, y)
    np.testing.assert_array_equal(out.numpy(), x.numpy() * 2 + 1 + 10)
    assert mid is None                      # freed after its last reader
    with pytest.raises(TypeError, match="expected 2 arguments"):
        plan(x)
    with pytest.raises(ValueError, match="wrong count"):
        cgrun.Plan([k1], [[0]], [[1]], [[]], 1, [1])


def test_static_plan_reuses_buffers_and_refuses_aliased_arguments(lib):
    k1 = cgrun.Kernel(_addr(lib, "k1"), 2, [((3,), ember.float32)], 3)
    buf = ember.empty(3)
    plan = cgrun.Plan([k1], [[0, 1]], [[2]], [[]], 2, [2], [buf])
    a, b = ember.ones(3), ember.arange(3.)
    (r,) = plan(a, b)
    assert r is buf and r.tolist() == [1.0, 2.0, 3.0]
    assert plan(a, a)[0] is buf and buf.tolist() == [2.0, 2.0, 2.0]
    assert plan(buf, a) is None              # an earlier result fed back in


def _compiled(fn, mode=ember.CompileMode.DEFAULT):
    made = []

    def backend(gm, example_inputs):
        made.append(compile_graph(gm, example_inputs, mode))
        return made[-1]

    return ember.compile(fn, backend=backend), made


@pytest.mark.parametrize("fn", ["sigmoid", "silu"])
def test_fused_sigmoid_matches_eager_and_a_float64_reference(fn):
    def f(t):
        return getattr(ember.nn.functional, fn)(t * 1.0) + 0.0

    cf, made = _compiled(f)
    vals = [-1e30, -100.0, -88.8, -88.72, -88.5, -87.5, -87.0, -50.0, -1.5, -1e-8, 0.0, -0.0,
            1e-8, 0.75, 20.0, 87.5, 88.5, 88.8, 100.0, float("inf"), float("-inf"),
            float("nan")]
    x = ember.cat([ember.tensor(vals), ember.randn(997, generator=ember.Generator()
                                                   .manual_seed(3)) * 30])
    cf(x)
    got, want = cf(x).numpy(), f(x).numpy()
    assert made and made[0].n_kernels == 1
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    xs = x.numpy().astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        ref = 1 / (1 + np.exp(-xs))
        ref = (ref * xs if fn == "silu" else ref).astype(np.float32)
    mid = ~nan & (np.abs(xs) < 85)          # beyond, eager (and so fused) flushes to 0 / 1

    # 2 ulp (eager's kernel is compiled with other FMA contractions: both stay close)
    np.testing.assert_allclose(got[mid], ref[mid], rtol=2.4e-7, atol=1e-37)
    np.testing.assert_allclose(got[mid], want[mid], rtol=3.6e-7, atol=1e-37)
    tail = np.abs(vals) > 80
    assert np.array_equal(got[:len(vals)][tail], want[:len(vals)][tail], equal_nan=True)


@pytest.mark.parametrize("n", [7, 70000])
def test_small_and_large_kernels_match_at_each_thread_count(n):
    def f(t):
        return (t.sin() * 2 + t.cos()).relu() * t.sigmoid()

    x = ember.randn(n, generator=ember.Generator().manual_seed(n))
    cf, made = _compiled(f)
    before = ember.get_num_threads()
    try:
        outs = []
        for nt in (1, 2):
            ember.set_num_threads(nt)
            cf(x)
            outs.append(cf(x).numpy())
    finally:
        ember.set_num_threads(before)
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_allclose(outs[0], f(x).numpy(), rtol=3e-6, atol=3e-6)
    assert isinstance(made[0].plan, cgrun.Plan)


def test_reduce_overhead_plan_runs_natively_and_falls_back_on_aliasing():
    def f(t):
        return (t * 2).exp() - t.tanh()

    cf, made = _compiled(f, ember.CompileMode.REDUCE_OVERHEAD)
    x = ember.randn(5, 9, generator=ember.Generator().manual_seed(8))
    cf(x)
    a = cf(x)
    assert isinstance(made[0].plan, cgrun.Plan)
    np.testing.assert_allclose(a.numpy(), f(x).numpy(), rtol=2e-6, atol=2e-6)
    b = cf(x + 1)
    assert b.data_ptr() == a.data_ptr()
    c = cf(b)                                        # aliasing: fresh buffers this call
    assert c.data_ptr() != b.data_ptr()
    np.testing.assert_allclose(c.numpy(), f(f(x + 1)).numpy(), rtol=2e-5, atol=2e-5)


def test_graph_with_eager_steps_runs_as_one_generated_function():
    def f(a, w):
        h = (a * 2 + 1).tanh() * a            # a kernel
        h = h @ w                              # an eager step (GEMM)
        return (h.exp() - 1) * 0.5, h.sum(0)   # another kernel (with a column sum)

    g = ember.Generator().manual_seed(12)
    a, w = ember.randn(6, 5, generator=g), ember.randn(5, 7, generator=g)
    cf, made = _compiled(f)
    cf(a, w)
    for scale in (1.0, -0.5):                  # the first call builds it, later ones use it
        got, want = cf(a * scale, w), f(a * scale, w)
        for x, y in zip(got, want):
            np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=2e-6, atol=2e-6)
    cg = made[0]
    assert cg.n_kernels == 2 and callable(cg.plan) and not isinstance(cg.plan, cgrun.Plan)
    code = cg.plan.__self__.code               # kernels called through their entry points
    assert code.count("run_") >= 2 and "matmul" in code


def test_fused_relu_and_large_trig_arguments_after_a_nan():
    def f(t):
        return (t * 1.0).relu() + 0.0, t.sin() * 1.0

    vals = np.zeros(1000, np.float32)
    vals[:6] = [np.nan, -0.0, -np.inf, 2.0, -1.5, 0.25]
    # |x| > 8192 sends the kernel to libm's sin: a NaN before or after it (in its
    # vector lane too) must not hide it
    vals[500], vals[516], vals[532] = 3e7, np.nan, 3.0
    x = ember.from_numpy(vals)
    cf, made = _compiled(f)
    cf(x)
    assert made[0].n_kernels == 1
    for got, want in zip(cf(x), f(x)):
        got, want = got.numpy(), want.numpy()
        assert np.array_equal(np.isnan(got), np.isnan(want))
        ok = ~np.isnan(want)
        np.testing.assert_allclose(got[ok], want[ok], rtol=2e-6, atol=2e-6)
    relu, sin = (t.numpy() for t in cf(x))
    assert relu[1] == 0.0 and relu[2] == 0.0 and relu[3] == 2.0 and np.isnan(relu[0])
    np.testing.assert_allclose(sin[500], np.sin(np.float64(3e7)), rtol=1e-6)


def test_fused_sin_and_cos_of_one_input_across_quadrants():
    def f(t):
        return t.sin() + 0.0, t.cos() + 0.0

    q = np.arange(-64, 65) * (np.pi / 4)          # quadrant boundaries and both sides
    x = np.concatenate([np.linspace(-100, 100, 20001), q, np.nextafter(q, -1e9),
                        np.nextafter(q, 1e9)]).astype(np.float32)
    xt = ember.tensor(x)
    cf, made = _compiled(f)
    cf(xt)
    s, c = cf(xt)
    assert made[0].n_kernels == 1
    xd = x.astype(np.float64)
    for got, ref, eager in ((s, np.sin(xd), xt.sin()), (c, np.cos(xd), xt.cos())):
        # within one float32 ulp of 1 of the exact value (the vectorised polynomials)
        np.testing.assert_allclose(got.numpy(), ref, rtol=0, atol=1.2e-7)
        np.testing.assert_allclose(got.numpy(), eager.numpy(), rtol=0, atol=2.4e-7)
