"""The ctypes side of CUDA tensors: libember_cuda.so and the CUDA runtime, device
memory from the caching allocator, host<->device copies and the iteration
descriptor (``emc_nd``) the elementwise kernels take.

The op codes below mirror ``src_c/include/ember_ew.h`` and ``ember_reduce.h``
(a CPU test checks them against the headers).  Everything here raises
``RuntimeError("CUDA unavailable: <reason>")`` when no device is usable.
"""

from __future__ import annotations

import ctypes
from typing import Any

from ember import _dll

# --- op codes (src_c/include) ---------------------------------------------------
_BIN_NAMES = ("ADD SUB MUL DIV FLOORDIV REM FMOD POW MAX MIN FMAX FMIN ATAN2 HYPOT COPYSIGN "
              "BAND BOR BXOR LSHIFT RSHIFT XLOGY LOGADDEXP RELU_BW SIGMOID_BW TANH_BW GELU_BW "
              "GELU_TANH_BW SILU_BW ADDA").split()
_CMP_NAMES = "EQ NE LT LE GT GE LAND LOR LXOR".split()
_UN_NAMES = ("NEG ABS SIGN EXP EXP2 EXPM1 LOG LOG2 LOG10 LOG1P SQRT RSQRT SIN COS TAN ASIN "
             "ACOS ATAN SINH COSH TANH ASINH ACOSH ATANH SIGMOID RELU GELU GELU_TANH SILU MISH "
             "ERF ERFC FLOOR CEIL ROUND TRUNC FRAC RECIP SQUARE BNOT LGAMMA SOFTPLUS LEAKY_RELU "
             "ELU CLAMP HARDSIGMOID HARDSWISH").split()
_PRED_NAMES = "ISNAN ISINF ISFINITE LNOT SIGNBIT".split()
_RD_NAMES = "SUM PROD MAX MIN NANSUM ASUM SSQ PSUM AMAX AMIN".split()

EW_BIN = {n: i for i, n in enumerate(_BIN_NAMES)}
EW_CMP = {n: i for i, n in enumerate(_CMP_NAMES)}
EW_UN = {n: i for i, n in enumerate(_UN_NAMES)}
EW_PRED = {n: i for i, n in enumerate(_PRED_NAMES)}
RD = {n: i for i, n in enumerate(_RD_NAMES)}
RAND_UNIFORM, RAND_NORMAL = 0, 1

MAX_DIMS = 16
_H2D, _D2H, _D2D = 1, 2, 3
_E_INDEX = 10004


class Nd(ctypes.Structure):
    """``emc_nd``: shape and per-operand element strides of an elementwise launch."""

    _fields_ = [("ndim", ctypes.c_int32), ("nargs", ctypes.c_int32),
                ("shape", ctypes.c_int64 * MAX_DIMS),
                ("strides", (ctypes.c_int64 * MAX_DIMS) * 4)]


def coalesce(shape: tuple, strides: list) -> tuple:
    """Drop size-1 dims and merge dims that are contiguous in every operand (fewer,
    longer dims: what the kernels iterate fastest)."""
    dims = [i for i, s in enumerate(shape) if s != 1]
    shp = [shape[i] for i in dims]
    sts = [[st[i] for i in dims] for st in strides]
    i = len(shp) - 1
    while i > 0:
        if all(st[i - 1] == st[i] * shp[i] for st in sts):
            shp[i - 1] *= shp[i]
            for st in sts:
                st[i - 1] = st[i]
                del st[i]
            del shp[i]
        i -= 1
    return tuple(shp), [tuple(st) for st in sts]


# descriptors by (shape, strides): the kernels only read them, and a training loop
# launches the same few layouts over and over
_nd_cache: dict = {}


def make_nd(shape: tuple, *strides: tuple) -> Nd:
    """An ``emc_nd`` over ``shape`` (coalesced) with one stride tuple per operand;
    shared between calls, so callers must not modify it."""
    key = (tuple(shape), strides)
    d = _nd_cache.get(key)
    if d is not None:
        return d
    shp, sts = coalesce(key[0], [tuple(s) for s in strides])
    if len(shp) > MAX_DIMS:
        raise RuntimeError(f"CUDA kernels take at most {MAX_DIMS} dims, got {len(shp)}")
    d = Nd()
    d.ndim, d.nargs = len(shp), len(sts)
    for i, s in enumerate(shp):
        d.shape[i] = s
    for a, st in enumerate(sts):
        for i, s in enumerate(st):
            d.strides[a][i] = s
    if len(_nd_cache) >= 4096:
        _nd_cache.clear()
    _nd_cache[key] = d
    return d


# --- the library ------------------------------------------------------------------

class _Backend:
    """The loaded library (``lib``), CUDA runtime (``rt``) and, once asked, the
    number of devices (``ndev``: fixed for the life of a process, as in CUDA)."""

    __slots__ = ("lib", "rt", "ndev")

    def __init__(self, lib: Any, rt: Any) -> None:
        self.lib, self.rt, self.ndev = lib, rt, 0


_backend: _Backend | None = None


def backend() -> _Backend:
    """The CUDA library and runtime, loaded on first use; RuntimeError with the
    reason when CUDA is unavailable."""
    global _backend
    if _backend is None:
        st = _dll.cuda_status()
        if not st.available:
            raise RuntimeError(f"CUDA unavailable: {st.reason}")
        _backend = _Backend(_dll._cuda_handle("ember_cuda"), _dll._cuda_handle("cudart"))
    return _backend


def install(lib: Any, rt: Any) -> Any:
    """Run CUDA tensors over another implementation of the C ABI (the CPU tests'
    stand-in); ``install(None, None)`` goes back to the real library.  Returns the
    previous backend."""
    global _backend
    prev = _backend
    _backend = None if lib is None else _Backend(lib, rt)
    return prev


def error(rc: int, op: str) -> RuntimeError:
    b = backend()
    msg = b.lib.emc_last_error()
    msg = msg.decode(errors="replace") if isinstance(msg, bytes) else str(msg or "")
    if rc == _E_INDEX:
        return IndexError(f"{op}: index out of range in self (CUDA: {msg})")
    return RuntimeError(f"{op}: CUDA kernel error {rc}: {msg}")


def check(rc: int, op: str) -> None:
    if rc:
        raise error(rc, op)


def check_index(op: str, stream: Any) -> None:
    """Raise IndexError when an index kernel on ``stream`` saw an out-of-range index."""
    rc = backend().lib.emc_check_index_error(stream)
    if rc:
        raise error(rc, op)


def current_device() -> int:
    if device_count() == 1:        # the only device is always current: no runtime call
        return 0
    v = ctypes.c_int(0)
    backend().rt.cudaGetDevice(ctypes.byref(v))
    return v.value


def device_count() -> int:
    b = _backend or backend()
    if not b.ndev:
        v = ctypes.c_int(0)
        b.rt.cudaGetDeviceCount(ctypes.byref(v))
        b.ndev = v.value
    return b.ndev


_DEFAULT_STREAM = ctypes.c_void_p(None)
_streams: Any = None


def stream_of(index: int) -> ctypes.c_void_p:
    """The current stream of device ``index`` in this thread (NULL: the default)."""
    global _streams
    if _streams is None:
        from ember.cuda.streams import _streams
    s = _streams().get(index)
    return s._as_parameter_ if s is not None and s.cuda_stream else _DEFAULT_STREAM


class Block:
    """Device memory from the caching allocator, returned to it when the last tensor
    viewing it goes away.  ``keep`` holds a host buffer an asynchronous copy reads."""

    __slots__ = ("ptr", "nbytes", "lib", "keep", "__weakref__")

    def __init__(self, ptr: int, nbytes: int, lib: Any) -> None:
        self.ptr, self.nbytes, self.lib, self.keep = ptr, nbytes, lib, None

    def __del__(self) -> None:
        if self.ptr:
            try:
                self.lib.emc_free(self.ptr)
            except Exception:  # interpreter shutdown: the library may be gone
                pass
            self.ptr = 0


def malloc(nbytes: int, index: int) -> Block:
    b = backend()
    p = ctypes.c_void_p()
    n = max(int(nbytes), 1)
    if device_count() == 1:       # index 0, always current
        rc = b.lib.emc_malloc(ctypes.byref(p), n, stream_of(index))
    else:
        with on_device(index):
            rc = b.lib.emc_malloc(ctypes.byref(p), n, stream_of(index))
    if rc:
        raise RuntimeError(f"CUDA out of memory: tried to allocate {nbytes} bytes on "
                           f"cuda:{index} (error {rc})")
    return Block(p.value or 0, nbytes, b.lib)


class PinnedBlock:
    """Page-locked host memory (``cudaHostAlloc``) behind a pinned CPU tensor."""

    __slots__ = ("ptr", "rt", "__weakref__")

    def __init__(self, nbytes: int) -> None:
        self.rt = backend().rt
        p = ctypes.c_void_p()
        rc = self.rt.cudaHostAlloc(ctypes.byref(p), ctypes.c_size_t(max(int(nbytes), 1)), 0)
        if rc:
            raise RuntimeError(f"cudaHostAlloc of {nbytes} bytes failed with CUDA error {rc}")
        self.ptr = p.value or 0

    def __del__(self) -> None:
        if self.ptr:
            try:
                self.rt.cudaFreeHost(ctypes.c_void_p(self.ptr))
            except Exception:
                pass
            self.ptr = 0


class on_device:
    """Make CUDA device ``index`` current for a block (a no-op when it already is)."""

    __slots__ = ("index", "prev")

    def __init__(self, index: int) -> None:
        self.index = index

    def __enter__(self) -> None:
        self.prev = current_device()
        if self.prev != self.index:
            backend().rt.cudaSetDevice(self.index)

    def __exit__(self, *exc: Any) -> None:
        if self.prev != self.index:
            backend().rt.cudaSetDevice(self.prev)


def memcpy(dst: int, src: int, nbytes: int, kind: int, stream: Any, sync: bool) -> None:
    """cudaMemcpyAsync on ``stream``, then wait for the stream unless ``sync`` is False."""
    if nbytes == 0:
        return
    rt = backend().rt
    rc = rt.cudaMemcpyAsync(ctypes.c_void_p(dst), ctypes.c_void_p(src), ctypes.c_size_t(nbytes),
                            ctypes.c_int(kind), stream)
    if rc == 0 and sync:
        rc = rt.cudaStreamSynchronize(stream)
    if rc:
        raise RuntimeError(f"cudaMemcpyAsync of {nbytes} bytes failed with CUDA error {rc}")


H2D, D2H, D2D = _H2D, _D2H, _D2D
