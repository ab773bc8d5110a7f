"""``ember.cuda``: the CUDA device module.

ember's Cython core never links against CUDA: ``libember_cuda.so`` and the
CUDA runtime are found and loaded on first use by ``ember._dll``.  When any
piece is missing, :func:`is_available` is False and
:func:`unavailable_reason` says which piece and how to fix it; functions that
need a device raise ``RuntimeError`` with that reason.
"""

from __future__ import annotations

import ctypes
from typing import Any

from ember import _dll

__all__ = ["is_available", "device_count", "current_device", "set_device", "synchronize",
           "get_device_name", "unavailable_reason", "is_initialized", "init", "manual_seed",
           "manual_seed_all", "seed", "seed_all", "initial_seed", "get_rng_state",
           "get_rng_state_all", "set_rng_state", "set_rng_state_all", "device",
           "get_device_properties", "get_device_capability", "is_bf16_supported",
           "Stream", "Event", "StreamContext", "stream", "current_stream", "default_stream",
           "set_stream", "memory_allocated", "max_memory_allocated", "memory_reserved",
           "max_memory_reserved", "reset_peak_memory_stats", "empty_cache", "memory_stats",
           "memory_summary", "mem_get_info"]


def is_available() -> bool:
    """Whether ember can run CUDA kernels here (library, runtime, driver and a device)."""
    return _dll.cuda_status().available


def unavailable_reason() -> str | None:
    """Why :func:`is_available` is False (``None`` when it is True)."""
    return _dll.cuda_status().reason


def device_count() -> int:
    """The number of CUDA devices ember can use (0 when CUDA is unavailable)."""
    st = _dll.cuda_status()
    return st.device_count if st.available else 0


def is_initialized() -> bool:
    """Whether CUDA has been probed and found usable."""
    st = _dll._status
    return st is not None and st.available


def init() -> None:
    """Probe CUDA now; raise ``RuntimeError`` with the reason if it is unavailable."""
    _require()


def _require() -> Any:
    st = _dll.cuda_status()
    if not st.available:
        raise RuntimeError(f"CUDA unavailable: {st.reason}")
    return st


def _index(device: Any) -> int:
    if device is None:
        return current_device()
    if isinstance(device, int):
        idx = device
    elif isinstance(device, str):
        kind, _, num = device.partition(":")
        if kind != "cuda":
            raise ValueError(f"expected a cuda device, got {device!r}")
        idx = int(num) if num else current_device()
    else:
        if getattr(device, "type", None) != "cuda":
            raise ValueError(f"expected a cuda device, got {device!r}")
        idx = device.index if device.index is not None else current_device()
    n = device_count()
    if not 0 <= idx < n:
        raise RuntimeError(f"invalid CUDA device index {idx}: {n} device(s) available")
    return idx


def _rt_call(fn: str, *args: Any) -> int:
    rt = _dll._cuda_handle("cudart")
    rc = getattr(rt, fn)(*args)
    if rc != 0:
        raise RuntimeError(f"{fn} failed with CUDA error {rc}")
    return rc


def current_device() -> int:
    """The index of the current CUDA device."""
    _require()
    dev = ctypes.c_int(0)
    _rt_call("cudaGetDevice", ctypes.byref(dev))
    return dev.value


def set_device(device: Any) -> None:
    """Make ``device`` (an index, ``"cuda:1"`` or an ``ember.device``) current."""
    _require()
    _rt_call("cudaSetDevice", _index(device))


def synchronize(device: Any = None) -> None:
    """Wait for all kernels on ``device`` (default: the current one) to finish."""
    _require()
    idx = _index(device)
    prev = current_device()
    if idx != prev:
        _rt_call("cudaSetDevice", idx)
    try:
        _rt_call("cudaDeviceSynchronize")
    finally:
        if idx != prev:
            _rt_call("cudaSetDevice", prev)


def get_device_name(device: Any = None) -> str:
    """The name of ``device`` (default: the current one), e.g. ``"NVIDIA H100"``."""
    st = _require()
    return st.device_names[_index(device)]


class device:
    """Context manager that makes ``device`` the current CUDA device for a block.

    ``device`` is an index, ``"cuda:N"``, an ``ember.device`` or None / -1 (do
    nothing), as ``torch.cuda.device``.
    """

    def __init__(self, device: Any) -> None:
        self.idx = -1 if device is None else device

    def __enter__(self) -> None:
        if self.idx == -1:
            self.prev = -1
            return
        _require()
        self.idx = _index(self.idx)
        self.prev = current_device()
        if self.prev != self.idx:
            _rt_call("cudaSetDevice", self.idx)

    def __exit__(self, *exc: Any) -> None:
        if self.prev != -1 and self.prev != self.idx:
            _rt_call("cudaSetDevice", self.prev)


# cudaDeviceGetAttribute codes
_ATTR = {"major": 75, "minor": 76, "multi_processor_count": 16, "L2_cache_size": 89,
         "max_threads_per_multi_processor": 39, "warp_size": 10}


class _DeviceProperties:
    """What :func:`get_device_properties` returns (the fields of PyTorch's)."""

    def __init__(self, name: str, total_memory: int, attrs: dict) -> None:
        self.name = name
        self.total_memory = total_memory
        for k, v in attrs.items():
            setattr(self, k, v)
        self.is_integrated = False

    def __repr__(self) -> str:
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, "
                f"minor={self.minor}, total_memory={self.total_memory // (1 << 20)}MB, "
                f"multi_processor_count={self.multi_processor_count})")


def get_device_properties(device: Any = None) -> _DeviceProperties:
    """Name, compute capability, memory and SM count of ``device``."""
    st = _require()
    idx = _index(device)
    attrs = {}
    for k, code in _ATTR.items():
        v = ctypes.c_int(0)
        _rt_call("cudaDeviceGetAttribute", ctypes.byref(v), code, idx)
        attrs[k] = v.value
    total = ctypes.c_size_t(0)
    drv = _dll._cuda_handle("driver")
    dev = ctypes.c_int(0)
    if drv.cuDeviceGet(ctypes.byref(dev), idx) == 0:
        drv.cuDeviceTotalMem_v2(ctypes.byref(total), dev)
    return _DeviceProperties(st.device_names[idx], total.value, attrs)


def get_device_capability(device: Any = None) -> tuple[int, int]:
    """The (major, minor) compute capability of ``device``."""
    p = get_device_properties(device)
    return p.major, p.minor


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether bfloat16 kernels run on the current device (False without CUDA, as in
    PyTorch): natively from compute capability 8.0."""
    if not is_available():
        return False
    return including_emulation or get_device_capability()[0] >= 8


# ---------------------------------------------------------------------------
# Random-number state
#
# A CUDA generator is its seed and offset (the Philox state layout of
# ``ember.Generator``): each sampling kernel draws the CPU generator's stream at
# that offset, then the offset moves on by one draw.  As in PyTorch,
# seeding works on every machine: without CUDA it is remembered and does no
# harm (PyTorch queues it until CUDA initialises); reading a device's state
# needs CUDA.
# ---------------------------------------------------------------------------

_DEFAULT_SEED = 67280421310721  # PyTorch's default seed
_seeds: dict[int, int] = {}
_all_seed: int | None = None
_offsets: dict[int, int] = {}


def _seed_int(fn: str, seed: Any) -> int:
    if isinstance(seed, bool) or not hasattr(seed, "__index__"):
        if isinstance(seed, float):
            seed = int(seed)
        else:
            raise TypeError(f"{fn}(): seed must be an int, got {type(seed).__name__}")
    s = int(seed.__index__())
    if s < -2 ** 63 or s >= 2 ** 64:
        raise ValueError("Overflow when unpacking long long")
    return s & 0xFFFFFFFFFFFFFFFF


def _device_seed(idx: int) -> int:
    seed = _seeds.get(idx, _all_seed)
    return _DEFAULT_SEED if seed is None else seed


def _current_or_zero() -> int:
    return current_device() if is_available() else 0


def manual_seed(seed: int) -> None:
    """Seed the current CUDA device's generator.

    Without CUDA this is remembered and harmless, as in PyTorch (so that
    ``ember.cuda.manual_seed(0)`` runs in every script).
    """
    s = _seed_int("manual_seed", seed)
    idx = _current_or_zero()
    _seeds[idx] = s
    _offsets[idx] = 0


def manual_seed_all(seed: int) -> None:
    """Seed the generators of all CUDA devices (silently ignored without CUDA, as in PyTorch)."""
    global _all_seed
    _all_seed = _seed_int("manual_seed_all", seed)
    _seeds.clear()
    _offsets.clear()


def _random_seed() -> int:
    import os

    return int.from_bytes(os.urandom(8), "little") & 0x7FFFFFFFFFFFFFFF


def seed() -> None:
    """Seed the current CUDA device's generator from OS entropy (harmless without CUDA)."""
    manual_seed(_random_seed())


def seed_all() -> None:
    """Seed all CUDA devices' generators from OS entropy (harmless without CUDA)."""
    manual_seed_all(_random_seed())


def initial_seed() -> int:
    """The seed of the current CUDA device's generator.

    Raises
    ------
    RuntimeError
        When CUDA is unavailable.
    """
    _require()
    return _device_seed(current_device())


def get_rng_state(device: Any = "cuda") -> Any:
    """The generator state of ``device`` as a 16-byte ``uint8`` tensor (seed, offset).

    Raises
    ------
    RuntimeError
        When CUDA is unavailable.
    """
    _require()
    import ember

    idx = _index(device)
    g = ember.Generator()
    g.manual_seed(_device_seed(idx))
    g.set_offset(_offsets.get(idx, 0))
    return g.get_state()


def get_rng_state_all() -> list:
    """The generator states of all CUDA devices (``[]`` without CUDA, as in PyTorch)."""
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state(new_state: Any, device: Any = "cuda") -> None:
    """Restore a state from :func:`get_rng_state` (remembered and harmless without CUDA).

    Raises
    ------
    TypeError
        When ``new_state`` is not a 16-byte ``uint8`` tensor.
    """
    import ember

    g = ember.Generator()
    g.set_state(new_state)  # checks the dtype and size
    idx = _index(device) if is_available() else device if isinstance(device, int) else 0
    _seeds[idx] = g.initial_seed()
    _offsets[idx] = g.get_offset()


def __getattr__(name: str) -> Any:
    # ``ember.cuda.amp``: PyTorch's deprecated spelling of ``ember.amp`` for CUDA
    if name == "amp":
        import importlib

        return importlib.import_module(__name__ + ".amp")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def set_rng_state_all(new_states: Any) -> None:
    """Restore the states of devices 0, 1, ... from a sequence of states."""
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


from ember.cuda.memory import (  # noqa: E402
    empty_cache,
    max_memory_allocated,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_reserved,
    memory_stats,
    memory_summary,
    reset_peak_memory_stats,
)
from ember.cuda.streams import (  # noqa: E402
    Event,
    Stream,
    StreamContext,
    current_stream,
    default_stream,
    set_stream,
    stream,
)
