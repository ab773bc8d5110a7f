"""ember.fft against torch.fft (and NumPy's pocketfft for accuracy over many sizes),
norm modes, n/s/dim handling, autograd, errors; stft/istft against torch."""
import warnings

import numpy as np
import pytest

import ember
import ember.fft as F

torch = pytest.importorskip("torch")
TF = torch.fft


def _close(e, t, rtol=1e-5, atol=1e-5):
    assert tuple(e.shape) == tuple(t.shape), (tuple(e.shape), tuple(t.shape))
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (e.dtype, t.dtype)
    np.testing.assert_allclose(e.detach().resolve_conj().numpy(),
                               t.detach().resolve_conj().numpy(), rtol=rtol, atol=atol)


def _c(rng, *shape, dtype=np.complex128):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


# --- accuracy of the kernels over lengths (radix 2/3/4/5, generic radices, Bluestein) ---

_SIZES = list(range(1, 130)) + [243, 256, 625, 1000, 1024, 1031, 2048, 3125, 4093, 4096]


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_c2c_accuracy_against_pocketfft(dt):
    rng = np.random.default_rng(0)
    tol = 1e-5 if dt == np.complex64 else 1e-12
    for n in _SIZES:
        x = _c(rng, 2, n, dtype=dt)
        ref = np.fft.fft(x.astype(np.complex128))
        got = F.fft(ember.tensor(x)).numpy()
        err = np.max(np.abs(got - ref)) / max(np.max(np.abs(ref)), 1e-30)
        assert err < tol, (n, err)
        back = F.ifft(ember.tensor(got)).numpy()
        assert np.max(np.abs(back - x)) < 10 * tol * max(1, np.max(np.abs(x))), n


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_real_transforms_accuracy_against_pocketfft(dt):
    rng = np.random.default_rng(1)
    tol = 1e-5 if dt == np.float32 else 1e-12
    for n in _SIZES:
        x = rng.standard_normal((3, n)).astype(dt)
        ref = np.fft.rfft(x.astype(np.float64))
        got = F.rfft(ember.tensor(x)).numpy()
        assert np.max(np.abs(got - ref)) / np.max(np.abs(ref)) < tol, n
        back = F.irfft(ember.tensor(got), n=n).numpy()
        assert np.max(np.abs(back - x)) < 10 * tol * np.max(np.abs(x)), n


# --- parity with torch: every name, norm modes, n / s / dim ----------------------------

@pytest.mark.parametrize("norm", [None, "backward", "ortho", "forward"])
@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"])
def test_1d_transforms(name, norm):
    rng = np.random.default_rng(2)
    real_in = name in ("rfft", "ihfft")
    x = rng.standard_normal((3, 10)) if real_in else _c(rng, 3, 10)
    ef, tf = getattr(F, name), getattr(TF, name)
    _close(ef(ember.tensor(x), norm=norm), tf(torch.tensor(x), norm=norm), rtol=1e-10)
    for n in (7, 10, 16):
        _close(ef(ember.tensor(x), n=n, norm=norm), tf(torch.tensor(x), n=n, norm=norm),
               rtol=1e-10)
    _close(ef(ember.tensor(x.T.copy()), dim=0, norm=norm), tf(torch.tensor(x.T.copy()), dim=0,
                                                              norm=norm), rtol=1e-10)


@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
@pytest.mark.parametrize("name", ["fft2", "ifft2", "fftn", "ifftn", "rfft2", "irfft2", "rfftn",
                                  "irfftn", "hfft2", "ihfft2", "hfftn", "ihfftn"])
def test_nd_transforms(name, norm):
    rng = np.random.default_rng(3)
    real_in = name.startswith("rfft") or name.startswith("ihfft")
    x = rng.standard_normal((2, 6, 5)) if real_in else _c(rng, 2, 6, 5)
    ef, tf = getattr(F, name), getattr(TF, name)
    _close(ef(ember.tensor(x), norm=norm), tf(torch.tensor(x), norm=norm), rtol=1e-10,
           atol=1e-10)
    _close(ef(ember.tensor(x), s=(4, 8), norm=norm), tf(torch.tensor(x), s=(4, 8), norm=norm),
           rtol=1e-10, atol=1e-10)
    _close(ef(ember.tensor(x), dim=(0, 2), norm=norm),
           tf(torch.tensor(x), dim=(0, 2), norm=norm), rtol=1e-10, atol=1e-10)


def test_dtypes_follow_torch():
    for src in (torch.float32, torch.float64, torch.int64, torch.complex64, torch.bool):
        t = torch.ones(8, dtype=src)
        e = ember.ones(8, dtype=getattr(ember, str(src).split(".")[-1]))
        _close(F.fft(e), TF.fft(t))
        if not src.is_complex:
            _close(F.rfft(e), TF.rfft(t))
    _close(F.irfft(ember.ones(5, dtype=ember.complex64)), TF.irfft(torch.ones(5,
                                                                          dtype=torch.complex64)))


def test_freqs_and_shifts():
    for n in (1, 4, 5, 8):
        for d in (1.0, 0.1):
            _close(F.fftfreq(n, d), TF.fftfreq(n, d))
            _close(F.rfftfreq(n, d), TF.rfftfreq(n, d))
    _close(F.fftfreq(6, dtype=ember.float64), TF.fftfreq(6, dtype=torch.float64))
    x = np.arange(30).reshape(5, 6)
    for dim in (None, 0, (0, 1), -1):
        _close(F.fftshift(ember.tensor(x), dim), TF.fftshift(torch.tensor(x), dim))
        _close(F.ifftshift(ember.tensor(x), dim), TF.ifftshift(torch.tensor(x), dim))


def test_errors():
    with pytest.raises(RuntimeError, match="expects a real input"):
        F.rfft(ember.ones(4, dtype=ember.complex64))
    with pytest.raises(ValueError, match="Invalid normalization mode"):
        F.fft(ember.ones(4), norm="bogus")
    with pytest.raises(RuntimeError, match="Invalid number of data points"):
        F.fft(ember.ones(4), n=0)
    with pytest.raises(IndexError):
        F.fft(ember.ones(4), dim=1)
    with pytest.raises(TypeError):
        F.fft([1.0, 2.0])
    with pytest.raises(RuntimeError):
        F.fftn(ember.ones(4, 4), s=(2, 2), dim=(0,))


def test_out_argument():
    x = ember.tensor(_c(np.random.default_rng(4), 8))
    out = ember.empty(8, dtype=ember.complex128)
    r = F.fft(x, out=out)
    assert r is out
    np.testing.assert_allclose(out.numpy(), np.fft.fft(x.numpy()), rtol=1e-12)


def test_batched_many_rows_and_strided_dims():
    rng = np.random.default_rng(5)
    x = _c(rng, 64, 3, 48, dtype=np.complex64)
    for dim in (0, 1, 2):
        _close(F.fft(ember.tensor(x), dim=dim), TF.fft(torch.tensor(x), dim=dim), rtol=1e-4,
               atol=1e-4)
    v = ember.tensor(x)[:, 1, ::2]           # non-contiguous view
    _close(F.fft(v), TF.fft(torch.tensor(x)[:, 1, ::2]), rtol=1e-4, atol=1e-4)


# --- autograd -----------------------------------------------------------------------------

def _grad_parity(fn_e, fn_t, x, rtol=1e-9):
    rng = np.random.default_rng(6)
    e = ember.tensor(x, requires_grad=True)
    t = torch.tensor(x, requires_grad=True)
    eo, to = fn_e(e), fn_t(t)
    _close(eo, to, rtol=rtol, atol=1e-9)
    w = rng.standard_normal(tuple(to.shape))
    if to.is_complex():
        w = w + 1j * rng.standard_normal(tuple(to.shape))
        le = ember.real(eo * ember.tensor(w).conj()).sum()
        lt = torch.real(to * torch.tensor(w).conj()).sum()
    else:
        le, lt = (eo * ember.tensor(w)).sum(), (to * torch.tensor(w)).sum()
    le.backward()
    lt.backward()
    _close(e.grad, t.grad, rtol=rtol, atol=1e-9)


@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
@pytest.mark.parametrize("case", [
    ("fft", False, {}), ("ifft", False, {"n": 12}), ("fft", True, {}),
    ("rfft", True, {}), ("rfft", True, {"n": 7}), ("irfft", False, {}),
    ("irfft", False, {"n": 9}), ("hfft", False, {}), ("ihfft", True, {}),
    ("fft2", False, {}), ("rfftn", True, {}), ("irfftn", False, {}),
])
def test_autograd_matches_torch(case, norm):
    name, real_in, kw = case
    rng = np.random.default_rng(7)
    x = rng.standard_normal((4, 10)) if real_in else _c(rng, 4, 10)
    _grad_parity(lambda a: getattr(F, name)(a, norm=norm, **kw),
                 lambda a: getattr(TF, name)(a, norm=norm, **kw), x)


def test_grad_fn_names():
    x = ember.ones(8, requires_grad=True)
    assert type(F.rfft(x).grad_fn).__name__ == "FftR2CBackward0"
    assert type(F.irfft(F.rfft(x)).grad_fn).__name__ == "FftC2RBackward0"
    assert type(F.fft(x.to(ember.complex64)).grad_fn).__name__ == "FftC2CBackward0"


# --- stft / istft ------------------------------------------------------------------------

@pytest.mark.parametrize("kw", [
    dict(n_fft=16), dict(n_fft=16, hop_length=5, win_length=12, window="hann"),
    dict(n_fft=15, center=False, window="hann"), dict(n_fft=16, normalized=True, onesided=False),
    dict(n_fft=16, pad_mode="constant", window="hamming"),
])
@pytest.mark.parametrize("batched", [False, True])
def test_stft_and_istft_match_torch(kw, batched):
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 100) if batched else (100,))
    kw = dict(kw)
    we = wt = None
    kind = kw.pop("window", None)
    if kind:
        wl = kw.get("win_length", kw["n_fft"])
        name = kind + "_window"
        we, wt = getattr(ember, name)(wl, dtype=ember.float64), getattr(torch, name)(
            wl, dtype=torch.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        se = ember.stft(ember.tensor(x), window=we, return_complex=True, **kw)
        st = torch.stft(torch.tensor(x), window=wt, return_complex=True, **kw)
    _close(se, st, rtol=1e-10, atol=1e-10)
    if we is not None:
        _close(ember.tensor(x).stft(window=we, return_complex=True, **kw), st, rtol=1e-10,
               atol=1e-10)
    else:
        with pytest.warns(UserWarning, match="window was not provided"):
            ember.stft(ember.tensor(x), return_complex=True, **kw)
    ikw = {k: v for k, v in kw.items() if k != "pad_mode"}
    if kw.get("center", True):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ie = ember.istft(se, window=we, length=100, **ikw)
            it = torch.istft(st, window=wt, length=100, **ikw)
        _close(ie, it, rtol=1e-8, atol=1e-8)


def test_stft_requires_return_complex_and_autograd():
    x = np.random.default_rng(9).standard_normal(64)
    with pytest.raises(RuntimeError, match="return_complex"):
        ember.stft(ember.tensor(x), 16)
    w = ember.hann_window(16, dtype=ember.float64)
    tw = torch.hann_window(16, dtype=torch.float64)
    _grad_parity(lambda a: ember.stft(a, 16, window=w, return_complex=True).abs(),
                 lambda a: torch.stft(a, 16, window=tw, return_complex=True).abs(), x)
