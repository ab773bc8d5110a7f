"""Device modules: ember.cpu, ember.cuda and the registry for out-of-tree backends."""

import sys
import types

import pytest

import ember
from ember import _devices

INTERFACE = ("is_available", "device_count", "current_device", "synchronize",
             "get_device_name", "unavailable_reason")


def test_cpu_module():
    for name in INTERFACE:
        assert callable(getattr(ember.cpu, name))
    assert ember.cpu.is_available() is True and ember.cpu.unavailable_reason() is None
    assert ember.cpu.device_count() == 1 and ember.cpu.current_device() == "cpu"
    assert ember.cpu.synchronize() is None
    assert isinstance(ember.cpu.get_device_name(), str) and ember.cpu.get_device_name()


def test_cpu_module_like_torch():
    torch = pytest.importorskip("torch")
    assert ember.cpu.is_available() == torch.cpu.is_available()
    assert ember.cpu.device_count() == torch.cpu.device_count()
    assert ember.cpu.current_device() == torch.cpu.current_device()


def test_cuda_module_unavailable_with_reason():
    cuda = ember.cuda
    for name in INTERFACE:
        assert callable(getattr(cuda, name))
    if cuda.is_available():
        pytest.skip("a usable GPU is present")
    assert cuda.device_count() == 0
    reason = cuda.unavailable_reason()
    assert isinstance(reason, str) and len(reason) > 20
    assert reason == ember._dll.cuda_status().reason
    for fn in (cuda.current_device, cuda.synchronize, cuda.get_device_name, cuda.init):
        with pytest.raises(RuntimeError, match="CUDA unavailable: " + reason[:20]):
            fn()
    assert cuda.is_initialized() is False


def test_cuda_is_available_agrees_with_torch_when_torch_sees_no_gpu():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        assert ember.cuda.is_available() is False


def test_register_device_module_attaches_and_refuses_twice(monkeypatch):
    monkeypatch.setattr(_devices, "_registered", {})
    mod = types.ModuleType("ember.testdev")
    mod.is_available = lambda: False
    try:
        ember._register_device_module("testdev", mod)
        assert ember.testdev is mod
        assert sys.modules["ember.testdev"] is mod
        import ember.testdev as again
        assert again is mod
        assert ember.get_device_module("testdev") is mod
        assert ember.get_device_module("testdev:1") is mod
        with pytest.raises(RuntimeError, match="already been registered"):
            ember._register_device_module("testdev", types.ModuleType("other"))
    finally:
        sys.modules.pop("ember.testdev", None)
        if "testdev" in vars(ember):
            delattr(ember, "testdev")


def test_register_builtin_or_bad_names():
    with pytest.raises(RuntimeError, match="already been registered"):
        ember._register_device_module("cuda", types.ModuleType("x"))
    with pytest.raises(RuntimeError, match="already been registered"):
        ember._register_device_module("cpu", types.ModuleType("x"))
    with pytest.raises(RuntimeError, match="already exists"):
        ember._register_device_module("zeros", types.ModuleType("x"))
    with pytest.raises(TypeError):
        ember._register_device_module("not a name", types.ModuleType("x"))


def test_get_device_module():
    assert ember.get_device_module("cpu") is ember.cpu
    assert ember.get_device_module(ember.device("cpu")) is ember.cpu
    assert ember.get_device_module("cuda:0") is ember.cuda
    assert ember.get_device_module(ember.device("cuda", 1)) is ember.cuda
    expected = ember.cuda if ember.cuda.is_available() else ember.cpu
    assert ember.get_device_module() is expected
    with pytest.raises(RuntimeError, match="does not have a corresponding module"):
        ember.get_device_module("nosuchdev")


def test_get_device_module_none_prefers_available_plugin(monkeypatch):
    if ember.cuda.is_available():
        pytest.skip("CUDA wins when present")
    mod = types.ModuleType("ember.fakeaccel")
    mod.is_available = lambda: True
    monkeypatch.setattr(_devices, "_registered", {"fakeaccel": mod})
    assert ember.get_device_module() is mod


class FakeCudart:
    """Stands in for libcudart at its C boundary (the functions ember.cuda calls)."""

    def __init__(self):
        self.current = 0
        self.synced = []

    def cudaGetDevice(self, ref):
        ref._obj.value = self.current
        return 0

    def cudaSetDevice(self, idx):
        self.current = idx
        return 0

    def cudaDeviceSynchronize(self):
        self.synced.append(self.current)
        return 0


def test_cuda_module_logic_with_a_stubbed_runtime(monkeypatch):
    from ember import _dll

    rt = FakeCudart()
    st = _dll.CudaStatus(True, None, "/x/libember_cuda.so", "libcudart.so", "libcuda.so.1", 2,
                         ("GPU A", "GPU B"))
    monkeypatch.setattr(_dll, "_status", st)
    monkeypatch.setitem(_dll._handles, "cudart", rt)
    cuda = ember.cuda
    assert cuda.is_available() and cuda.unavailable_reason() is None
    assert cuda.device_count() == 2 and cuda.is_initialized()
    assert cuda.current_device() == 0 and cuda.get_device_name() == "GPU A"
    cuda.set_device("cuda:1")
    assert cuda.current_device() == 1 and cuda.get_device_name() == "GPU B"
    assert cuda.get_device_name(ember.device("cuda", 0)) == "GPU A"
    cuda.synchronize(0)
    assert rt.synced == [0] and rt.current == 1      # synchronised device 0, restored 1
    with pytest.raises(RuntimeError, match="invalid CUDA device index 5"):
        cuda.set_device(5)
    with pytest.raises(ValueError):
        cuda.get_device_name("cpu")
    assert ember.get_device_module() is cuda
