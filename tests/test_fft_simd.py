"""The vectorised float32 and float64 FFT passes against NumPy's pocketfft: single
transforms (radix-2/4 passes along the row, the transposed last radix-4 pass), column
blocks transformed together (a transform over a non-last dim), real transforms with
their cached twiddles, and the same bits on any thread count."""
import numpy as np
import pytest

import ember

RNG = np.random.default_rng(4)


def _c64(shape):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(np.complex64)


def _close(got, ref, tol=1e-5):
    err = np.abs(got.astype(np.complex128) - ref).max() / max(np.abs(ref).max(), 1e-30)
    assert err < tol, err


# powers of two (even and odd exponents: a leading radix-2 pass), mixed radices whose
# passes partly vectorise, and small lengths
LENGTHS = [2, 4, 8, 16, 32, 64, 512, 1024, 2048, 8192, 12, 48, 96, 3 * 1024, 5 * 256, 100]


@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("cols", [3, 4, 16, 20, 36])
def test_column_transforms_match_numpy(n, cols):
    x = _c64((n, cols))
    for fwd in (True, False):
        got = (ember.fft.fft if fwd else ember.fft.ifft)(ember.tensor(x), dim=0).numpy()
        ref = (np.fft.fft if fwd else np.fft.ifft)(x.astype(np.complex128), axis=0)
        _close(got, ref)


@pytest.mark.parametrize("n", LENGTHS + [1 << 17])
def test_row_and_real_transforms_match_numpy(n):
    x = _c64((3, n))
    _close(ember.fft.fft(ember.tensor(x)).numpy(), np.fft.fft(x.astype(np.complex128)))
    r = RNG.standard_normal((2, n)).astype(np.float32)
    spec = ember.fft.rfft(ember.tensor(r))
    _close(spec.numpy(), np.fft.rfft(r.astype(np.float64)))
    back = ember.fft.irfft(spec, n=n).numpy()
    np.testing.assert_allclose(back, r, atol=2e-5 * np.abs(r).max())
    # the second call reads the cached plan and twiddles: the same bits
    assert ember.fft.rfft(ember.tensor(r)).numpy().tobytes() == spec.numpy().tobytes()


def test_fft2_matches_numpy_and_same_bits_on_any_thread_count():
    x = ember.tensor(_c64((256, 320)))
    old = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        one = ember.fft.fft2(x).numpy()
        ember.set_num_threads(2)
        two = ember.fft.fft2(x).numpy()
    finally:
        ember.set_num_threads(old)
    assert one.tobytes() == two.tobytes()
    _close(one, np.fft.fft2(x.numpy().astype(np.complex128)))


# ---- float64: the double-complex passes (fft_avx2d.h), within 1e-12 of pocketfft

def _c128(shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


@pytest.mark.parametrize("n", LENGTHS + [1 << 16, 3 << 12])
def test_float64_rows_and_real_transforms_match_numpy(n):
    x = _c128((3, n))
    for fwd in (True, False):
        got = (ember.fft.fft if fwd else ember.fft.ifft)(ember.tensor(x)).numpy()
        assert got.dtype == np.complex128
        _close(got, (np.fft.fft if fwd else np.fft.ifft)(x), tol=1e-12)
    r = RNG.standard_normal((2, n))
    spec = ember.fft.rfft(ember.tensor(r))
    _close(spec.numpy(), np.fft.rfft(r), tol=1e-12)
    np.testing.assert_allclose(ember.fft.irfft(spec, n=n).numpy(), r,
                               atol=1e-12 * np.abs(r).max())


@pytest.mark.parametrize("n", [2, 8, 32, 1024, 48, 100])
@pytest.mark.parametrize("cols", [3, 4, 16, 20])
def test_float64_column_transforms_match_numpy(n, cols):
    x = _c128((n, cols))
    for fwd in (True, False):
        got = (ember.fft.fft if fwd else ember.fft.ifft)(ember.tensor(x), dim=0).numpy()
        _close(got, (np.fft.fft if fwd else np.fft.ifft)(x, axis=0), tol=1e-12)


def test_float64_same_bits_on_any_thread_count_and_generic_kernels_agree():
    import os
    import subprocess
    import sys
    x = ember.tensor(_c128((64, 256)))
    old = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        one = ember.fft.fft2(x).numpy()
        ember.set_num_threads(2)
        two = ember.fft.fft2(x).numpy()
    finally:
        ember.set_num_threads(old)
    assert one.tobytes() == two.tobytes()
    _close(one, np.fft.fft2(x.numpy()), tol=1e-12)
    # the scalar passes (EMBER_ISA=generic) reach the same accuracy
    code = ("import numpy as np, ember\n"
            "r = np.random.default_rng(1)\n"
            "x = r.standard_normal((4, 4096)) + 1j * r.standard_normal((4, 4096))\n"
            "ref = np.fft.fft(x)\n"
            "got = ember.fft.fft(ember.tensor(x)).numpy()\n"
            "print(np.abs(got - ref).max() / np.abs(ref).max())\n")
    env = {**os.environ, "EMBER_ISA": "generic"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True)
    assert float(out.stdout) < 1e-12
