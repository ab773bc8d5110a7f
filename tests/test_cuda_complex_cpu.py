"""Complex tensors on CUDA without a GPU: every test of tests/cuda/test_device_complex.py
runs here over the stand-in for libember_cuda.so (tests/cuda/fake_device.py), whose
complex elementwise entry points run the kernels' own element functions on the host.
Also checks those functions (ember_complex.h, shared with the CPU loops) directly
against the CPU ops."""

import ctypes

import numpy as np
import pytest

import ember
from ember import _dll
from ember.cuda import _kernels
from tests.cuda import test_device_complex as _device_complex
from tests.cuda.fake_device import FakeDevice


@pytest.fixture(autouse=True)
def _fake_device(request):
    if request.function.__module__ != _device_complex.__name__:
        yield None
        return
    with FakeDevice() as fd:
        yield fd


for _name in dir(_device_complex):
    if _name.startswith("test_"):
        globals()[_name] = getattr(_device_complex, _name)


def _host_lib():
    try:
        return _dll.cuda_library_host_only()
    except RuntimeError as e:
        pytest.skip(str(e))


@pytest.mark.parametrize("dt", [ember.complex64, ember.complex128])
def test_the_kernels_element_functions_are_the_cpu_formulas(dt):
    lib = _host_lib()
    npdt = np.complex64 if dt == ember.complex64 else np.complex128
    rng = np.random.default_rng(0)
    a = ((rng.uniform(-2, 2, 64) + 1j * rng.uniform(-2, 2, 64))).astype(npdt)
    b = ((rng.uniform(-2, 2, 64) + 1j * rng.uniform(-2, 2, 64))).astype(npdt)
    ea, eb = ember.tensor(a), ember.tensor(b)
    for name, fn in (("add", ember.add), ("sub", ember.sub), ("mul", ember.mul),
                     ("div", ember.div), ("pow", ember.pow)):
        out = np.empty_like(a)
        assert lib.emc_cew_host(1, _kernels.EW_BIN[name.upper()], dt.code, out.ctypes.data,
                                a.ctypes.data, b.ctypes.data, a.size, None) == 0
        np.testing.assert_allclose(out, fn(ea, eb).numpy(), rtol=1e-6 if npdt == np.complex64
                                   else 1e-14, err_msg=name)
    for name, code in (("exp", "EXP"), ("log", "LOG"), ("sqrt", "SQRT"), ("sin", "SIN"),
                       ("tanh", "TANH"), ("sigmoid", "SIGMOID"), ("sgn", "SIGN"),
                       ("reciprocal", "RECIP"), ("tan", "TAN"), ("cosh", "COSH"),
                       ("asin", "ASIN"), ("acos", "ACOS"), ("atan", "ATAN"),
                       ("asinh", "ASINH"), ("acosh", "ACOSH"), ("atanh", "ATANH")):
        out = np.empty_like(a)
        assert lib.emc_cew_host(0, _kernels.EW_UN[code], dt.code, out.ctypes.data,
                                a.ctypes.data, None, a.size, None) == 0
        np.testing.assert_allclose(out, getattr(ember, name)(ea).numpy(),
                                   rtol=1e-6 if npdt == np.complex64 else 1e-14, err_msg=name)
    absd = np.empty(a.size, np.float32 if npdt == np.complex64 else np.float64)
    assert lib.emc_cew_host(0, _kernels.EW_UN["ABS"], dt.code, absd.ctypes.data, a.ctypes.data,
                            None, a.size, None) == 0
    np.testing.assert_allclose(absd, ember.abs(ea).numpy(), rtol=1e-7)
    # an op without a complex formula is refused, as the device kernels refuse it
    out = np.empty_like(a)
    assert lib.emc_cew_host(0, _kernels.EW_UN["FLOOR"], dt.code, out.ctypes.data, a.ctypes.data,
                            None, a.size, None) == 10001
    alpha = (ctypes.c_double * 1)(2.5)
    assert lib.emc_cew_host(1, _kernels.EW_BIN["ADDA"], dt.code, out.ctypes.data,
                            a.ctypes.data, b.ctypes.data, a.size, alpha) == 0
    np.testing.assert_allclose(out, ember.add(ea, eb, alpha=2.5).numpy(), rtol=1e-6)


def test_complex_kernels_are_launched_over_the_stand_in():
    with FakeDevice() as fd:
        x = ember.tensor([1 + 1j, 2 - 1j]).cuda()
        fd.lib.calls.clear()
        y = ember.exp(x) * x.conj()
        assert any(c[0] == "cunary" for c in fd.lib.calls if isinstance(c, tuple))
        assert any(c[0] == "cbinary" for c in fd.lib.calls if isinstance(c, tuple))
        assert any(c[0] == "copy_math" and c[4] == 1 for c in fd.lib.calls
                   if isinstance(c, tuple))
        np.testing.assert_allclose(y.cpu().numpy(),
                                   (np.exp(x.cpu().numpy()) * np.conj(x.cpu().numpy())),
                                   rtol=1e-6)


def test_conj_views_move_between_devices_and_to_the_host():
    with FakeDevice(ndev=2):
        x = ember.tensor([1 + 2j, 3 - 4j, -0.5 + 0.25j], dtype=ember.complex128)
        c = x.cuda(0).conj()
        moved = c.to("cuda:1")
        assert moved.device == ember.device("cuda", 1)
        np.testing.assert_array_equal(moved.cpu().numpy(), np.conj(x.numpy()))
        np.testing.assert_array_equal(c.to("cuda:1", ember.complex64).cpu().numpy(),
                                      np.conj(x.numpy()).astype(np.complex64))
        # into a conjugate view on the other device, and into a host one
        dst = ember.zeros(3, dtype=ember.complex128, device="cuda:1")
        dst.conj().copy_(c)
        np.testing.assert_array_equal(dst.cpu().numpy(), x.numpy())
        h = ember.zeros(3, dtype=ember.complex128)
        h.conj().copy_(c)
        np.testing.assert_array_equal(h.numpy(), x.numpy())
        d = ember.zeros(3, dtype=ember.complex128, device="cuda:0")
        d.conj().copy_(x.conj())
        np.testing.assert_array_equal(d.cpu().numpy(), x.numpy())
