"""Complex inputs at the edges of ops, as torch handles them: cumsum/cumprod into a real
out= (the input cast to out's dtype first, with torch's warning), adaptive average pooling
to a 1 x 1 output (the mean; other sizes are not implemented for complex), complex
normal noise (variance std^2 split evenly between the parts), and complex64 in the
safetensors format (complex128 has no code there: the safetensors package's KeyError)."""
import io
import warnings

import numpy as np
import pytest

import ember
from ember import serialization as S

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(8)


def _c(shape, dtype=np.complex64):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
@pytest.mark.parametrize("out_dtype", ["float32", "float64", "int64"])
def test_cumulative_ops_into_a_real_out_cast_the_input_first(op, out_dtype):
    x = _c((4, 5)) * 3
    o, to = ember.empty(4, 5, dtype=getattr(ember, out_dtype)), torch.empty(
        4, 5, dtype=getattr(torch, out_dtype))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = getattr(ember, op)(ember.tensor(x), 1, out=o)
    assert any("discards the imaginary part" in str(m.message) for m in w)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # torch's own copy of the warning
        getattr(torch, op)(torch.tensor(x), 1, out=to)
    assert r is o and o.dtype == getattr(ember, out_dtype)
    np.testing.assert_allclose(o.numpy(), to.numpy(), rtol=1e-5, atol=1e-5)
    # a complex out keeps the complex scan
    oc = ember.empty(4, 5, dtype=ember.complex64)
    getattr(ember, op)(ember.tensor(x), 1, out=oc)
    np.testing.assert_allclose(oc.numpy(), getattr(torch, op)(torch.tensor(x), 1).numpy(),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape,size", [((2, 3, 4, 5), 1), ((2, 3, 4, 5), (1, 1)),
                                        ((3, 4, 1), (1, None)), ((3, 1, 5), (None, 1)),
                                        ((2, 3, 4, 5, 6), 1), ((4, 5), 1)])
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_adaptive_avg_pool2d_of_complex_to_one_is_the_mean(shape, size, dtype):
    x = _c(shape, dtype)
    got = ember.nn.functional.adaptive_avg_pool2d(ember.tensor(x), size)
    want = torch.nn.functional.adaptive_avg_pool2d(torch.tensor(x), size)
    assert tuple(got.shape) == tuple(want.shape) and str(got.dtype)[6:] == str(want.dtype)[6:]
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


def test_adaptive_avg_pools_of_complex_elsewhere_and_gradients_like_torch():
    F, TF = ember.nn.functional, torch.nn.functional
    x = _c((2, 3, 4, 4, 4))
    for ef, tf in [(lambda: F.adaptive_avg_pool2d(ember.tensor(x[0]), 2),
                    lambda: TF.adaptive_avg_pool2d(torch.tensor(x[0]), 2)),
                   (lambda: F.adaptive_avg_pool2d(ember.tensor(x[0]), (1, None)),
                    lambda: TF.adaptive_avg_pool2d(torch.tensor(x[0]), (1, None))),
                   (lambda: F.adaptive_avg_pool1d(ember.tensor(x[0, 0]), 2),
                    lambda: TF.adaptive_avg_pool1d(torch.tensor(x[0, 0]), 2)),
                   (lambda: F.adaptive_avg_pool3d(ember.tensor(x), (2, 1, 1)),
                    lambda: TF.adaptive_avg_pool3d(torch.tensor(x), (2, 1, 1)))]:
        with pytest.raises(NotImplementedError) as te:
            tf()
        with pytest.raises(NotImplementedError, match=str(te.value).split(" not")[0]):
            ef()
    for ef, tf in [(lambda t: F.adaptive_avg_pool1d(t.flatten(0, 2), 1),
                    lambda t: TF.adaptive_avg_pool1d(t.flatten(0, 2), 1)),
                   (lambda t: F.adaptive_avg_pool3d(t, 1), lambda t: TF.adaptive_avg_pool3d(t, 1)),
                   (lambda t: ember.nn.AdaptiveAvgPool2d(1)(t.flatten(-2)),
                    lambda t: torch.nn.AdaptiveAvgPool2d(1)(t.flatten(-2)))]:
        ex = ember.tensor(x, requires_grad=True)
        tx = torch.tensor(x, requires_grad=True)
        e, t = ef(ex), tf(tx)
        assert tuple(e.shape) == tuple(t.shape)
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-6)
        e.abs().sum().backward()
        t.abs().sum().backward()
        np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-6)
    with pytest.raises(RuntimeError, match="Expected 2 to 3 dimensions, but got 5-dimensional"):
        F.adaptive_avg_pool1d(ember.tensor(x), 1)
    # real input: the 1 x 1 mean for any rank, as torch (ints: mean's error)
    r = RNG.standard_normal((4, 5)).astype(np.float32)
    np.testing.assert_allclose(F.adaptive_avg_pool2d(ember.tensor(r), 1).numpy(),
                               TF.adaptive_avg_pool2d(torch.tensor(r), 1).numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="mean"):
        F.adaptive_avg_pool2d(ember.arange(20).reshape(1, 1, 4, 5), 1)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_normal_noise_has_half_the_variance_in_each_part(dtype):
    n = 200_000
    tol = 5 * np.sqrt(2 / n)            # relative standard error of a variance, 5 sigma
    ember.manual_seed(3)
    for x, var in [(ember.randn(n, dtype=getattr(ember, dtype)), 0.5),
                   (ember.empty(n, dtype=getattr(ember, dtype)).normal_(1.0, 3.0), 4.5),
                   (ember.normal(ember.full((n,), 2 + 1j, dtype=getattr(ember, dtype)), 2.0), 2.0),
                   (ember.normal(ember.zeros(n, dtype=getattr(ember, dtype)),
                                 ember.full((n,), 2.0)), 2.0),
                   (ember.normal(ember.zeros(n), 2.0,
                                 out=ember.empty(n, dtype=getattr(ember, dtype))), 2.0)]:
        a = x.numpy()
        assert a.dtype == np.dtype(dtype)
        for part in (a.real, a.imag):
            assert abs(part.var() / var - 1) < tol, (part.var(), var)
        assert abs(np.corrcoef(a.real, a.imag)[0, 1]) < 5 / np.sqrt(n)
    m = ember.normal(ember.full((n,), 2 - 3j, dtype=getattr(ember, dtype)), 0.5).numpy()
    assert abs(m.real.mean() - 2) < 0.01 and abs(m.imag.mean() + 3) < 0.01


def test_complex_normal_errors_like_torch():
    c = ember.zeros(5, dtype=ember.complex64)
    tc = torch.zeros(5, dtype=torch.complex64)
    for ef, tf in [(lambda: ember.normal(3.0, c + 2), lambda: torch.normal(3.0, tc + 2)),
                   (lambda: ember.normal(ember.zeros(5), c + 2),
                    lambda: torch.normal(torch.zeros(5), tc + 2)),
                   (lambda: ember.normal(c, 2.0, out=ember.empty(5)),
                    lambda: torch.normal(tc, 2.0, out=torch.empty(5)))]:
        with pytest.raises(RuntimeError) as te:
            tf()
        with pytest.raises(RuntimeError, match=str(te.value)):
            ef()


def test_safetensors_complex64_round_trip_and_interop(tmp_path):
    st = pytest.importorskip("safetensors.torch")
    x = _c((3, 4))
    buf = io.BytesIO()
    S.save_safetensors({"z": ember.tensor(x), "r": ember.ones(2)}, buf)
    back = S.load_safetensors(buf.getvalue())
    assert back["z"].dtype == ember.complex64
    np.testing.assert_array_equal(back["z"].numpy(), x)
    theirs = st.load(buf.getvalue())
    assert theirs["z"].dtype == torch.complex64
    np.testing.assert_array_equal(theirs["z"].numpy(), x)
    mine = S.load_safetensors(st.save({"z": torch.tensor(x)}))
    np.testing.assert_array_equal(mine["z"].numpy(), x)
    # complex128 has no safetensors dtype code: the package raises KeyError, so does ember
    with pytest.raises(KeyError):
        st.save({"z": torch.tensor(x.astype(np.complex128))})
    with pytest.raises(KeyError, match="complex128"):
        S.save_safetensors({"z": ember.tensor(x.astype(np.complex128))}, io.BytesIO())
