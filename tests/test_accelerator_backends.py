"""ember.accelerator, ember.backends, ember.cuda seeding, ember.mps/xpu and interop threads:
the names PyTorch has on every machine, checked against torch where it is installed."""

import os
import subprocess
import sys

import pytest

import ember

NO_GPU = not ember.cuda.is_available()
needs_no_gpu = pytest.mark.skipif(not NO_GPU, reason="a usable GPU is present")


@pytest.fixture
def restore_switches():
    prec = ember.get_float32_matmul_precision()
    det = ember.are_deterministic_algorithms_enabled()
    cudnn = {k: getattr(ember.backends.cudnn, k)
             for k in ("enabled", "benchmark", "deterministic", "allow_tf32")}
    yield
    ember.set_float32_matmul_precision(prec)
    ember.use_deterministic_algorithms(det)
    for k, v in cudnn.items():
        setattr(ember.backends.cudnn, k, v)


# -- ember.accelerator --------------------------------------------------------

@needs_no_gpu
def test_accelerator_without_one_like_torch():
    acc = ember.accelerator
    assert acc.is_available() is False
    assert acc.current_accelerator() is None
    assert acc.current_accelerator(check_available=True) is None
    assert acc.device_count() == 0
    for call in (acc.current_device_index, acc.synchronize, lambda: acc.set_device_index(0)):
        with pytest.raises(RuntimeError, match="Cannot access accelerator device when none"):
            call()
    with pytest.raises(RuntimeError, match="none is available"):
        with acc.device_index(0):
            pass
    ran = []
    with acc.device_index(None):
        ran.append(1)
    assert ran == [1]
    torch = pytest.importorskip("torch")
    if not torch.accelerator.is_available():
        assert torch.accelerator.current_accelerator() is None
        assert torch.accelerator.device_count() == acc.device_count()


def test_accelerator_uses_an_available_plugin_backend(monkeypatch):
    import types

    from ember import _devices

    calls = []
    mod = types.ModuleType("ember.fakeacc")
    mod.is_available = lambda: True
    mod.device_count = lambda: 3
    mod.current_device = lambda: 1
    mod.set_device = lambda i: calls.append(("set", i))
    mod.synchronize = lambda i=None: calls.append(("sync", i))
    monkeypatch.setattr(_devices, "_registered", {"fakeacc": mod})
    monkeypatch.setattr(ember.cuda, "is_available", lambda: False)
    acc = ember.accelerator
    assert acc.is_available() and acc.device_count() == 3
    assert acc.current_device_index() == 1
    acc.set_device_index("fakeacc:2")
    acc.synchronize(0)
    with acc.device_index(2):
        pass
    assert calls == [("set", 2), ("sync", 0), ("set", 2), ("set", 1)]
    with pytest.raises(ValueError, match="doesn't match the current accelerator fakeacc"):
        acc.set_device_index("cuda:0")


# -- ember.backends -------------------------------------------------------------

def test_cpu_capability_names_the_kernel_variant():
    isa = ember._C.core._cpu_info()["isa"]
    cap = ember.backends.cpu.get_cpu_capability()
    assert cap == {"avx512": "AVX512", "avx2": "AVX2", "generic": "DEFAULT"}[isa]
    # Capping the ISA (EMBER_ISA) changes the variant ember picks, and the answer with it.
    out = subprocess.run([sys.executable, "-c", "import ember; "
                          "print(ember.backends.cpu.get_cpu_capability())"],
                         env={**__import__("os").environ, "EMBER_ISA": "generic"},
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["DEFAULT"]
    torch = pytest.importorskip("torch")
    assert cap in ("DEFAULT", "AVX2", "AVX512")
    if cap != "DEFAULT":  # the same CPU: torch picks the same SIMD width
        assert torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512")


def test_backends_defaults_like_torch():
    torch = pytest.importorskip("torch")
    for mod in ("cudnn",):
        for k in ("enabled", "benchmark", "deterministic", "allow_tf32"):
            assert getattr(getattr(ember.backends, mod), k) == \
                getattr(getattr(torch.backends, mod), k), k
    assert ember.backends.cuda.matmul.allow_tf32 == torch.backends.cuda.matmul.allow_tf32
    assert ember.backends.mkldnn.enabled == torch.backends.mkldnn.enabled
    assert ember.backends.mps.is_available() == torch.backends.mps.is_available() is False
    assert ember.backends.mps.is_built() is False
    assert ember.backends.cudnn.is_available() is False and ember.backends.cudnn.version() is None
    assert ember.backends.mkldnn.is_available() is False  # ember does not use oneDNN
    assert ember.backends.opt_einsum.is_available() is False
    assert ember.backends.opt_einsum.enabled is False
    assert ember.backends.openmp.is_available() is bool(ember.__config__.config()["openmp"])
    # built: the build found nvcc and made ember/lib/libember_cuda.so
    lib = os.path.join(os.path.dirname(ember.__file__), "lib", "libember_cuda.so")
    assert ember.backends.cuda.is_built() is os.path.isfile(lib)


def test_cudnn_flags_checked_restored_and_independent_of_determinism(restore_switches):
    cudnn = ember.backends.cudnn
    cudnn.benchmark = True
    cudnn.deterministic = True
    assert cudnn.benchmark is True and cudnn.deterministic is True
    # As in PyTorch: cudnn.deterministic does not switch on deterministic algorithms.
    assert ember.are_deterministic_algorithms_enabled() is False
    ember.use_deterministic_algorithms(True)
    cudnn.deterministic = False
    assert ember.are_deterministic_algorithms_enabled() is True
    with pytest.raises(RuntimeError, match="deterministic expects a bool, but got int"):
        cudnn.deterministic = 1
    with cudnn.flags(enabled=False, benchmark=False, deterministic=None):
        assert cudnn.enabled is False and cudnn.benchmark is False
    assert cudnn.enabled is True and cudnn.benchmark is True
    with pytest.raises(TypeError, match="unexpected keyword"):
        with cudnn.flags(fast=True):
            pass
    with pytest.raises(AttributeError):
        cudnn.no_such_flag
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match="expects a bool"):
        torch.backends.cudnn.deterministic = 1


def test_matmul_allow_tf32_is_the_matmul_precision(restore_switches):
    torch = pytest.importorskip("torch")
    tprec = torch.get_float32_matmul_precision()
    try:
        for prec in ("high", "medium", "highest"):
            ember.set_float32_matmul_precision(prec)
            torch.set_float32_matmul_precision(prec)
            assert ember.backends.cuda.matmul.allow_tf32 == torch.backends.cuda.matmul.allow_tf32
    finally:
        torch.set_float32_matmul_precision(tprec)
    ember.backends.cuda.matmul.allow_tf32 = True
    assert ember.get_float32_matmul_precision() == "high"
    ember.backends.cuda.matmul.allow_tf32 = False
    assert ember.get_float32_matmul_precision() == "highest"
    with pytest.raises(RuntimeError, match="expects a bool"):
        ember.backends.cuda.matmul.allow_tf32 = "yes"
    with pytest.raises(AttributeError):
        ember.backends.cuda.matmul.allow_tf64 = True


# -- ember.cuda without a GPU ---------------------------------------------------

@needs_no_gpu
def test_cuda_seeding_callable_without_cuda_like_torch():
    torch = pytest.importorskip("torch")
    for name, args in (("manual_seed", (3,)), ("manual_seed_all", (3,)), ("seed", ()),
                       ("seed_all", ()), ("is_available", ()), ("device_count", ()),
                       ("is_initialized", ()), ("get_rng_state_all", ()),
                       ("set_rng_state_all", ([],))):
        assert getattr(ember.cuda, name)(*args) == getattr(torch.cuda, name)(*args), name
    state = ember.get_rng_state()
    assert ember.cuda.set_rng_state(state) is None
    assert ember.cuda.set_rng_state_all([state, state]) is None
    assert ember.cuda.is_initialized() is False
    with pytest.raises(TypeError, match="uint8"):
        ember.cuda.set_rng_state(ember.zeros(16))
    with pytest.raises(TypeError, match="seed must be an int"):
        ember.cuda.manual_seed("1")
    # Seeding CUDA leaves the CPU generator alone.
    ember.manual_seed(5)
    a = ember.rand(3)
    ember.manual_seed(5)
    ember.cuda.manual_seed_all(7)
    assert ember.equal(ember.rand(3), a)


@needs_no_gpu
@pytest.mark.parametrize("name", ["get_rng_state", "initial_seed", "current_device",
                                  "synchronize", "get_device_name", "init"])
def test_cuda_state_functions_raise_unavailable(name):
    reason = ember.cuda.unavailable_reason()
    with pytest.raises(RuntimeError, match="CUDA unavailable: ") as e:
        getattr(ember.cuda, name)()
    assert reason in str(e.value)
    torch = pytest.importorskip("torch")
    with pytest.raises((AssertionError, RuntimeError)):  # torch raises where ember raises
        getattr(torch.cuda, name)()


@needs_no_gpu
def test_cuda_set_device_raises_unavailable():
    with pytest.raises(RuntimeError, match="CUDA unavailable: "):
        ember.cuda.set_device(0)


# -- ember.mps, ember.xpu, interop threads ------------------------------------------

def test_mps_xpu_unavailable_like_torch():
    assert ember.mps.is_available() is False and ember.xpu.is_available() is False
    assert ember.mps.device_count() == 0 and ember.xpu.device_count() == 0
    torch = pytest.importorskip("torch")
    assert torch.mps.is_available() is False and torch.xpu.is_available() is False


def test_interop_threads():
    torch = pytest.importorskip("torch")
    n = ember.get_num_interop_threads()
    assert isinstance(n, int) and n >= 1
    try:
        ember.set_num_interop_threads(3)
        assert ember.get_num_interop_threads() == 3
        for bad, msg in ((0, "positive integer"), (-1, "positive integer"),
                         ("a", "expects an int, but got str"), (2.0, "expects an int")):
            with pytest.raises(RuntimeError, match=msg):
                ember.set_num_interop_threads(bad)
            if bad != 2.0:
                with pytest.raises(RuntimeError, match=msg):
                    torch.set_num_interop_threads(bad)
        assert ember.get_num_interop_threads() == 3
    finally:
        ember._switches._interop_threads = None
    assert ember.get_num_interop_threads() == n


def test_new_names_lazy_and_listed():
    for name in ("accelerator", "backends", "mps", "xpu"):
        assert name in dir(ember)
    out = subprocess.run([sys.executable, "-c", "import sys, ember; "
                          "print(any(m in sys.modules for m in ('ember.backends', "
                          "'ember.accelerator', 'ember.mps', 'ember.xpu')))"],
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False"]
    assert "set_num_interop_threads" in ember.__all__
