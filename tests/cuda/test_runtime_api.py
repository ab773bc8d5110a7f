"""ember.cuda's runtime API where CUDA is unavailable: the same answers as
PyTorch without CUDA (statistics 0, bf16 unsupported, no-op empty_cache), and
RuntimeError("CUDA unavailable: <reason>") from everything that needs a device."""

import pytest

import ember

needs_no_gpu = pytest.mark.skipif(ember.cuda.is_available(), reason="a usable GPU is present")


@needs_no_gpu
def test_statistics_and_queries_like_torch_without_cuda():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("torch sees a GPU")
    for name in ("memory_allocated", "max_memory_allocated", "memory_reserved",
                 "max_memory_reserved", "memory_stats", "is_bf16_supported", "empty_cache"):
        assert getattr(ember.cuda, name)() == getattr(torch.cuda, name)(), name


@needs_no_gpu
@pytest.mark.parametrize("call", [
    lambda c: c.Stream(), lambda c: c.Event(enable_timing=True), lambda c: c.current_stream(),
    lambda c: c.default_stream(), lambda c: c.device(0).__enter__(),
    lambda c: c.get_device_properties(0), lambda c: c.get_device_capability(),
    lambda c: c.reset_peak_memory_stats(), lambda c: c.memory_summary(),
    lambda c: c.mem_get_info()],
    ids=["Stream", "Event", "current_stream", "default_stream", "device", "properties",
         "capability", "reset_peak", "summary", "mem_get_info"])
def test_device_functions_raise_with_the_reason(call):
    with pytest.raises(RuntimeError, match="CUDA unavailable: ") as e:
        call(ember.cuda)
    assert ember.cuda.unavailable_reason() in str(e.value)


def test_none_device_and_stream_contexts_do_nothing():
    with ember.cuda.device(None):
        pass
    with ember.cuda.device(-1):
        pass
    with ember.cuda.stream(None) as s:
        assert s is None


def test_runtime_api_names_are_public():
    for name in ("Stream", "Event", "stream", "current_stream", "device", "memory_allocated",
                 "memory_summary", "get_device_properties", "is_bf16_supported"):
        assert name in ember.cuda.__all__ and callable(getattr(ember.cuda, name))
