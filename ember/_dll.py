"""Native loading: how ember's extensions and its optional CUDA library get loaded.

``ember/__init__.py`` calls :func:`_before_extensions` before importing
``ember._C`` and :func:`_after_extensions` once the extensions are in:

* Unix: extensions load with ``RTLD_LOCAL`` (Python's default), so ember's
  symbols cannot clash with another library's.  ``EMBER_USE_RTLD_GLOBAL=1``
  loads them with ``RTLD_GLOBAL`` instead (for tools that need to see them).
* Windows: the package's ``lib`` folder and the CUDA runtime's ``bin`` folder
  are added to the DLL search path and the runtime DLLs the extensions need
  are loaded one by one, so a missing one gives a per-DLL report (which DLL,
  where it was looked for, what to install) instead of a bare
  ``WinError 126``.  ``EMBER_SKIP_WIN32_DLLS=1`` skips all of it.

The CUDA side (``ember/lib/libember_cuda.so``, the CUDA runtime and driver)
is located only when first asked for, by :func:`cuda_status` (used by
``ember.cuda`` and ``python -m ember``); it records *why* CUDA is
unavailable.  Nothing here lists a directory: only fixed paths are checked.
"""

from __future__ import annotations

import os
import sys
from _thread import allocate_lock

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Mapping

__all__ = ["cuda_status", "CudaStatus", "DllLoadError", "load_flags"]


def _record(name: str, fields: tuple, doc: str | None = None, module: str = __name__) -> type:
    """An immutable named tuple type, like :func:`collections.namedtuple`.

    ``import ember`` must stay cheap: ``collections`` and ``typing`` (and the
    ``re``/``enum``/``functools`` they pull in) would cost more than the rest
    of the front door, and ``_dll`` is the first module ember imports.
    """

    def __new__(cls, *args, **kwargs):
        if kwargs:
            args = args + tuple(kwargs.pop(f) for f in fields[len(args):] if f in kwargs)
        if kwargs or len(args) != len(fields):
            raise TypeError(f"{name}() takes the fields {', '.join(fields)}")
        return tuple.__new__(cls, args)

    def __repr__(self):
        return f"{name}(" + ", ".join(f"{f}={v!r}" for f, v in zip(fields, self)) + ")"

    def _asdict(self):
        return dict(zip(fields, self))

    ns = {"__slots__": (), "_fields": fields, "__doc__": doc, "__module__": module,
          "__new__": __new__, "__repr__": __repr__, "_asdict": _asdict,
          "__getnewargs__": lambda self: tuple(self)}
    for i, f in enumerate(fields):
        ns[f] = property(lambda self, i=i: tuple.__getitem__(self, i), doc=f"field {f!r}")
    return type(name, (tuple,), ns)

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
_LIB_DIR = os.path.join(_PKG_DIR, "lib")

_saved_flags: int | None = None
_load_mode = "RTLD_LOCAL"
_windows_report: list = []


def _truthy(value: str | None) -> bool:
    return value is not None and value.strip().lower() in ("1", "true", "yes", "on")


def load_flags() -> str:
    """How the extension modules were loaded: ``"RTLD_LOCAL"``, ``"RTLD_GLOBAL"`` or
    ``"windows"``."""
    return _load_mode


def _before_extensions(environ: Mapping[str, str] | None = None) -> None:
    """Prepare the loader; call right before the first ``import ember._C...``."""
    global _saved_flags, _load_mode
    env = os.environ if environ is None else environ
    if os.name == "nt":  # pragma: no cover - exercised with stubs in tests
        _load_mode = "windows"
        _load_windows_dlls(environ=env)
        return
    if _truthy(env.get("EMBER_USE_RTLD_GLOBAL")):
        _saved_flags = sys.getdlopenflags()
        sys.setdlopenflags(os.RTLD_GLOBAL | os.RTLD_LAZY)
        _load_mode = "RTLD_GLOBAL"


def _after_extensions() -> None:
    """Restore the interpreter's dlopen flags once ember's extensions are loaded."""
    global _saved_flags
    if _saved_flags is not None:
        sys.setdlopenflags(_saved_flags)
        _saved_flags = None


# ---------------------------------------------------------------------------
# Windows
# ---------------------------------------------------------------------------

class DllLoadError(OSError):
    """One or more DLLs ember needs could not be loaded; ``failures`` lists them."""

    def __init__(self, failures: list) -> None:
        self.failures = failures
        lines = ["ember could not load the DLLs it needs:"]
        for f in failures:
            lines.append(f"  - {f.name}: {f.error}")
            lines.append(f"      looked in: {', '.join(f.searched) or '(system search path)'}")
            lines.append(f"      fix: {f.hint}")
        lines.append("Set EMBER_SKIP_WIN32_DLLS=1 to skip this check if you manage DLL "
                     "paths yourself.")
        super().__init__("\n".join(lines))


DllFailure = _record("DllFailure", ("name", "searched", "error", "hint"),
                     "One DLL that failed to load: where it was looked for and the fix.")

# The Windows calls, as a boundary that tests replace with stubs:
# add_dll_directory(path), load_library(path) -> handle (raises OSError), exists(path).
WinApi = _record("WinApi", ("add_dll_directory", "load_library", "exists"),
                 "The Windows calls ember makes, as a boundary that tests stub.")


def _real_winapi() -> WinApi:  # pragma: no cover - Windows only
    import ctypes

    kernel32 = ctypes.WinDLL("kernel32.dll", use_last_error=True)
    kernel32.LoadLibraryExW.restype = ctypes.c_void_p
    flags = 0x00001100  # LOAD_LIBRARY_SEARCH_DEFAULT_DIRS | LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR

    def load_library(path: str) -> Any:
        handle = kernel32.LoadLibraryExW(path, None, flags)
        if not handle:
            err = ctypes.WinError(ctypes.get_last_error())
            raise OSError(err.winerror, err.strerror, path)
        return handle

    return WinApi(os.add_dll_directory, load_library, os.path.exists)


# DLLs the extension modules link against, with the fix when missing.  Fixed
# names: nothing is discovered by listing folders.
_WIN_REQUIRED = (
    ("vcruntime140.dll", "install the Microsoft Visual C++ Redistributable (x64)"),
    ("vcruntime140_1.dll", "install the Microsoft Visual C++ Redistributable (x64)"),
    ("msvcp140.dll", "install the Microsoft Visual C++ Redistributable (x64)"),
    ("vcomp140.dll", "install the Microsoft Visual C++ Redistributable (OpenMP runtime) "
                     "or rebuild ember with EMBER_NO_OPENMP=1"),
)
_WIN_OPTIONAL = (
    ("ember_cuda.dll", "this build of ember has no CUDA kernels"),
)


def _windows_dll_dirs(environ: Mapping[str, str], exists: Callable[[str], bool],
                      pkg_dir: str = _PKG_DIR) -> list:
    """The folders added to the DLL search path, in order, existing ones only."""
    dirs = [os.path.join(pkg_dir, "lib")]
    cuda = environ.get("CUDA_PATH")
    if cuda:
        dirs.append(os.path.join(cuda, "bin"))
    prefix = environ.get("CONDA_PREFIX")
    if prefix:
        dirs.append(os.path.join(prefix, "Library", "bin"))
    seen = []
    for d in dirs:
        if d not in seen and exists(d):
            seen.append(d)
    return seen


def _load_windows_dlls(environ: Mapping[str, str] | None = None, api: WinApi | None = None,
                       pkg_dir: str = _PKG_DIR) -> list:
    """Set up the DLL search path and load the runtime DLLs; return the report.

    Returns a list of ``(dll, status)`` pairs; raises :class:`DllLoadError`
    naming every required DLL that failed.  Optional DLLs (CUDA) only record
    their failure, which :func:`cuda_status` reports.
    """
    global _windows_report
    env = os.environ if environ is None else environ
    if _truthy(env.get("EMBER_SKIP_WIN32_DLLS")):
        _windows_report = [("*", "skipped (EMBER_SKIP_WIN32_DLLS=1)")]
        return _windows_report
    api = _real_winapi() if api is None else api
    dirs = _windows_dll_dirs(env, api.exists, pkg_dir)
    for d in dirs:
        api.add_dll_directory(d)
    report = []
    failures = []
    for group, required in ((_WIN_REQUIRED, True), (_WIN_OPTIONAL, False)):
        for name, hint in group:
            local = [os.path.join(d, name) for d in dirs if api.exists(os.path.join(d, name))]
            if not local and not required:
                report.append((name, f"not found in {', '.join(dirs) or '(no folder)'}"))
                continue
            target = local[0] if local else name
            try:
                api.load_library(target)
                report.append((name, f"loaded from {target}"))
            except OSError as e:
                msg = getattr(e, "strerror", None) or str(e)
                report.append((name, f"failed: {msg}"))
                if required:
                    failures.append(DllFailure(name, tuple(dirs) + ("(system search path)",),
                                               msg, hint))
    _windows_report = report
    if failures:
        raise DllLoadError(failures)
    return report


# ---------------------------------------------------------------------------
# CUDA discovery (lazy)
# ---------------------------------------------------------------------------

CudaStatus = _record(
    "CudaStatus",
    ("available", "reason", "library", "runtime", "driver", "device_count", "device_names"),
    """What :func:`cuda_status` found.

    ``available`` is True only when ember's CUDA library (``library``), the
    CUDA runtime (``runtime``: its path, from the ``nvidia-cuda-runtime`` wheel
    or the system) and a driver (``driver``) with at least one device were all
    found; otherwise ``reason`` says which piece is missing and how to fix it.
    """)


_status: CudaStatus | None = None
_status_lock = allocate_lock()
_handles: dict = {}

_CUDA_LIB = "libember_cuda.so"
_RUNTIME_NAMES = ("libcudart.so.13", "libcudart.so", "libcudart.so.12")
_DRIVER_NAMES = ("libcuda.so.1", "libcuda.so")
# the runtime inside the nvidia-cuda-runtime wheels: CUDA 13 (nvidia/cu13/lib),
# CUDA 12 (nvidia/cuda_runtime/lib)
_WHEEL_RUNTIMES = (("cu13", "lib", "libcudart.so.13"), ("cuda_runtime", "lib", "libcudart.so.12"))

# The C ABI of libember_cuda.so (src_cuda/include/ember_cuda.h): name -> (result,
# arguments) as type codes, turned into ctypes prototypes when the library is
# bound (ctypes is not imported with ember).  `make cuda-check` checks that the
# library exports exactly these.  Codes: i int, q int64, Q uint64, z size_t,
# d double, p pointer, s char* result, v no result.
CUDA_SYMBOLS = {
    "emc_abi_version": ("i", ""),
    "emc_built_cuda_version": ("i", ""),
    "emc_error_string": ("s", "i"),
    "emc_last_error": ("s", ""),
    "emc_malloc": ("i", "pzp"),
    "emc_free": ("i", "p"),
    "emc_memory_stats": ("v", "p"),
    "emc_reset_peak_memory_stats": ("v", ""),
    "emc_empty_cache": ("i", ""),
    "emc_copy": ("i", "ipippp"),
    "emc_fill": ("i", "ipppp"),
    "emc_cat": ("i", "ipippqqp"),
    "emc_ew_binary": ("i", "iipppppp"),
    "emc_ew_compare": ("i", "iippppp"),
    "emc_ew_unary": ("i", "iippppp"),
    "emc_ew_predicate": ("i", "iipppp"),
    "emc_ew_where": ("i", "ipppppp"),
    "emc_ew_host": ("i", "iiipppqp"),
    "emc_reduce": ("i", "iipqqqpdp"),
    "emc_var": ("i", "ipqqqdppp"),
    "emc_argreduce": ("i", "iipqqqppp"),
    "emc_softmax": ("i", "iipqqqpp"),
    "emc_softmax_bwd": ("i", "iippqqqpp"),
    "emc_cross_entropy_fwd": ("i", "ippqqqdppp"),
    "emc_cross_entropy_bwd": ("i", "ippppqqqdpp"),
    "emc_layer_norm_fwd": ("i", "ipppqqdpppp"),
    "emc_layer_norm_bwd": ("i", "ipppppqqpppp"),
    "emc_gemm": ("i", "iiiqqqdpqqpqqdpqqqip"),
    "emc_rand_float": ("i", "iipqQQddp"),
    "emc_rand_int": ("i", "ipqQQqQp"),
    "emc_rand_bernoulli": ("i", "ipqQQdp"),
    "emc_dropout": ("i", "ipppqdQQp"),
    "emc_rand_float_host": ("i", "iipqQQdd"),
    "emc_rand_int_host": ("i", "ipqQQqQ"),
    "emc_index_select": ("i", "ipqqqpqpp"),
    "emc_index_add": ("i", "ipqqqpqpip"),
    "emc_gather": ("i", "ipqqqpqpp"),
    "emc_check_index_error": ("i", "p"),
    "emc_scatter": ("i", "iipqqpppip"),
    "emc_index_put": ("i", "ipipppqpqpiip"),
    "emc_stack": ("i", "ipipqqp"),
    "emc_std": ("i", "ipqqqdppp"),
    "emc_norm": ("i", "ipqqqdpp"),
    "emc_batch_norm_fwd": ("i", "ipppppqqqiddpppp"),
    "emc_batch_norm_bwd": ("i", "ipppppppqqqidpppp"),
    "emc_conv2d_fwd": ("i", "ipppppp"),
    "emc_conv2d_bwd_input": ("i", "ippppp"),
    "emc_conv2d_bwd_weight": ("i", "ipppppp"),
    "emc_max_pool2d_fwd": ("i", "ippppp"),
    "emc_max_pool2d_bwd": ("i", "ippppp"),
    "emc_adaptive_max_pool2d_fwd": ("i", "ippppp"),
    "emc_adaptive_max_pool2d_bwd": ("i", "ippppp"),
    "emc_sdpa_fwd": ("i", "ipppqqqqqdidQQppp"),
    "emc_sdpa_bwd": ("i", "ippppppqqqqqdidQQpppp"),
    "emc_avg_pool2d_fwd": ("i", "ipppp"),
    "emc_avg_pool2d_bwd": ("i", "ipppp"),
    "emc_sort": ("i", "ipqqippp"),
    "emc_topk": ("i", "ipqqqippp"),
    "emc_randperm": ("i", "pqQQp"),
    "emc_multinomial": ("i", "ipqqqipQQpp"),
    "emc_randperm_host": ("i", "pqQQ"),
    "emc_multinomial_host": ("i", "pqqqipQQp"),
    "emc_scan": ("i", "iipqqqpp"),
    "emc_cumext": ("i", "iipqqqppp"),
    "emc_mask_positions": ("i", "pqpp"),
    "emc_nonzero": ("i", "pipqppp"),
    "emc_masked_select": ("i", "ipppqpp"),
    "emc_masked_scatter": ("i", "ipppqpp"),
    "emc_sgd_multi": ("i", "iqppppppp"),
    "emc_adam_multi": ("i", "iqppppppppp"),
    "emc_total_norm": ("i", "iqppdpp"),
    "emc_clip_multi": ("i", "iqpppdp"),
    "emc_pool_create": ("p", "ppp"),
    "emc_pool_destroy": ("v", "p"),
    "emc_pool_malloc": ("i", "pzQp"),
    "emc_pool_free": ("i", "pp"),
    "emc_pool_block_size": ("z", "pp"),
    "emc_pool_stats": ("v", "pp"),
    "emc_pool_reset_peak": ("v", "p"),
    "emc_pool_empty_cache": ("i", "p"),
    "emc_cew_unary": ("i", "iipppp"),
    "emc_cew_predicate": ("i", "iipppp"),
    "emc_cew_binary": ("i", "iipppppp"),
    "emc_cew_compare": ("i", "iippppp"),
    "emc_cew_host": ("i", "iiipppqp"),
    "emc_copy_math": ("i", "ipiipipp"),
    "emc_cprod": ("i", "ipqqqpp"),
}


def bind_cuda_symbols(lib: Any) -> Any:
    """Give every function of ``CUDA_SYMBOLS`` in the ctypes library ``lib`` its
    prototype; return ``lib``.  Raises AttributeError naming a missing symbol."""
    import ctypes

    codes = {"i": ctypes.c_int, "q": ctypes.c_int64, "Q": ctypes.c_uint64,
             "z": ctypes.c_size_t, "d": ctypes.c_double, "p": ctypes.c_void_p,
             "s": ctypes.c_char_p, "v": None}
    for name, (res, args) in CUDA_SYMBOLS.items():
        fn = getattr(lib, name)
        fn.restype = codes[res]
        fn.argtypes = [codes[c] for c in args]
    return lib


def _cuda_homes(environ: Mapping[str, str]) -> list:
    homes = [environ.get("CUDA_HOME"), environ.get("CUDA_PATH"), "/usr/local/cuda"]
    return [h for h in dict.fromkeys(homes) if h]


def _wheel_runtimes() -> list:
    """libcudart paths inside an installed nvidia-cuda-runtime wheel (no import of it)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return []
    found = []
    for base in (spec.submodule_search_locations or []) if spec else []:
        for parts in _WHEEL_RUNTIMES:
            p = os.path.join(base, *parts)
            if os.path.isfile(p):
                found.append(p)
    return found


def _runtime_candidates(environ: Mapping[str, str]) -> list:
    """The wheel's runtime first, then the system's (linker search, CUDA homes)."""
    cands = _wheel_runtimes() + list(_RUNTIME_NAMES)
    # a conda environment's cuda-cudart, then CUDA toolkit installs
    homes = [environ.get("CONDA_PREFIX"), sys.prefix] + _cuda_homes(environ)
    for home in [h for h in dict.fromkeys(homes) if h]:
        for sub in ("lib64", "lib"):
            for n in _RUNTIME_NAMES:
                p = os.path.join(home, sub, n)
                if os.path.isfile(p):
                    cands.append(p)
    return cands


def _dlopen(candidates: list, mode: int) -> tuple:
    """Try each candidate in order; return (handle, name, errors)."""
    import ctypes

    errors = []
    for c in candidates:
        try:
            return ctypes.CDLL(c, mode=mode), c, errors
        except OSError as e:
            errors.append(f"{c}: {e}")
    return None, None, errors


def _version(v: int) -> str:
    return f"{v // 1000}.{v % 1000 // 10}"


def _runtime_path(handle: Any, name: str) -> str:
    """Where the dynamic linker found a library loaded by bare name."""
    if os.path.isabs(name):
        return name
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                if os.path.basename(name) in line and "/" in line:
                    return line.split(None, 5)[-1].strip()
    except OSError:
        pass
    return name


def _load_library(path: str, mode: int) -> Any:
    import ctypes

    return bind_cuda_symbols(ctypes.CDLL(path, mode=mode))


def cuda_library_host_only(lib_dir: str = _LIB_DIR) -> Any:
    """ember's CUDA library, loaded with the CUDA runtime but without needing a
    driver or a device: for its host-side entry points (the allocator's
    bookkeeping, the random streams computed on the host) and the tests.
    Raises RuntimeError saying what is missing."""
    import ctypes

    lib = os.path.join(lib_dir, _CUDA_LIB)
    if not os.path.isfile(lib):
        raise RuntimeError(f"ember was built without CUDA support: {lib} does not exist")
    runtime, _, errs = _dlopen(_runtime_candidates(os.environ), ctypes.RTLD_LOCAL)
    if runtime is None:
        raise RuntimeError("the CUDA runtime (libcudart) was not found (tried "
                           + "; ".join(errs[:3]) + ")")
    handle = _handles.get(("host", lib))
    if handle is None:
        handle = _handles[("host", lib)] = _load_library(lib, ctypes.RTLD_LOCAL)
    return handle


def _probe_cuda(environ: Mapping[str, str], lib_dir: str = _LIB_DIR,
                handles: dict | None = None) -> CudaStatus:
    """Find and load the runtime, the driver and ember's CUDA library; the handles
    loaded go into ``handles`` (``cuda_status`` passes the process's own: a probe
    from elsewhere, such as a test with stand-in libraries, leaves those alone)."""
    import ctypes

    handles = {} if handles is None else handles

    mode = ctypes.RTLD_GLOBAL if _truthy(environ.get("EMBER_USE_RTLD_GLOBAL")) \
        else ctypes.RTLD_LOCAL
    lib = os.path.join(lib_dir, _CUDA_LIB)
    if not os.path.isfile(lib):
        return CudaStatus(False, f"ember was built without CUDA support: {lib} does not exist "
                          "(no CUDA kernels were compiled: build with nvcc on PATH or CUDA_HOME "
                          "set, or EMBER_BUILD_CUDA=1)", None, None, None, 0, ())
    # The runtime, before the library that needs it: the nvidia-cuda-runtime
    # wheel's, then the system's.
    runtime, runtime_name, errs = _dlopen(_runtime_candidates(environ), mode)
    if runtime is None:
        return CudaStatus(False, "the CUDA runtime (libcudart) was not found: `pip install "
                          "ember[cuda]` (the nvidia-cuda-runtime wheel), install the CUDA "
                          "toolkit, or put it on LD_LIBRARY_PATH (tried "
                          + "; ".join(errs[:3]) + ")", lib, None, None, 0, ())
    runtime_name = _runtime_path(runtime, runtime_name)
    handles["cudart"] = runtime
    driver, driver_name, _ = _dlopen(list(_DRIVER_NAMES), mode)
    if driver is None:
        return CudaStatus(False, "the NVIDIA driver library (libcuda.so.1) was not found: no "
                          "NVIDIA driver is installed on this machine", lib, runtime_name, None,
                          0, ())
    handles["driver"] = driver
    try:
        ember_cuda = _load_library(lib, mode)
    except (OSError, AttributeError) as e:
        return CudaStatus(False, f"{lib} failed to load: {e}", lib, runtime_name, driver_name,
                          0, ())
    rt_ver, drv_ver = ctypes.c_int(0), ctypes.c_int(0)
    runtime.cudaRuntimeGetVersion(ctypes.byref(rt_ver))
    built = ember_cuda.emc_built_cuda_version()
    if rt_ver.value < built:
        return CudaStatus(False, f"the CUDA runtime is too old: {runtime_name} is CUDA "
                          f"{_version(rt_ver.value)}, ember's CUDA kernels were built with CUDA "
                          f"{_version(built)} (pip install -U nvidia-cuda-runtime)", lib,
                          runtime_name, driver_name, 0, ())
    runtime.cudaDriverGetVersion(ctypes.byref(drv_ver))
    if drv_ver.value and drv_ver.value < rt_ver.value:
        return CudaStatus(False, f"the NVIDIA driver is too old: it supports CUDA "
                          f"{_version(drv_ver.value)}, the runtime is CUDA "
                          f"{_version(rt_ver.value)} (update the driver)", lib, runtime_name,
                          driver_name, 0, ())
    count = ctypes.c_int(0)
    rc = runtime.cudaGetDeviceCount(ctypes.byref(count))
    if rc != 0 or count.value == 0:
        runtime.cudaGetErrorString.restype = ctypes.c_char_p
        what = runtime.cudaGetErrorString(rc).decode(errors="replace") if rc else \
            "the NVIDIA driver reports no CUDA devices"
        return CudaStatus(False, f"no usable CUDA device: {what} (cudaGetDeviceCount error "
                          f"{rc})", lib, runtime_name, driver_name, 0, ())
    names = []
    for i in range(count.value):
        dev = ctypes.c_int(0)
        buf = ctypes.create_string_buffer(256)
        if driver.cuDeviceGet(ctypes.byref(dev), i) == 0 and \
                driver.cuDeviceGetName(buf, 256, dev) == 0:
            names.append(buf.value.decode(errors="replace"))
        else:
            names.append(f"CUDA device {i}")
    handles["ember_cuda"] = ember_cuda
    return CudaStatus(True, None, lib, runtime_name, driver_name, count.value, tuple(names))


def cuda_status(refresh: bool = False) -> CudaStatus:
    """Locate and load ember's CUDA library, the CUDA runtime and driver (once).

    Parameters
    ----------
    refresh : bool
        Probe again instead of returning the cached result.

    Returns
    -------
    CudaStatus
        ``available`` and, when False, ``reason``.
    """
    global _status
    with _status_lock:
        if _status is None or refresh:
            if os.name == "nt":  # pragma: no cover
                _status = CudaStatus(False, "CUDA on Windows: see the DLL report "
                                     f"{_windows_report}", None, None, None, 0, ())
            else:
                _status = _probe_cuda(os.environ, handles=_handles)
        return _status


def _cuda_handle(name: str) -> Any:
    """A loaded library handle (``"cudart"``, ``"driver"``, ``"ember_cuda"``) or None."""
    cuda_status()
    return _handles.get(name)


# ---------------------------------------------------------------------------
# LAPACK (lazy): the scipy-openblas32 wheel's OpenBLAS, loaded on first use
# ---------------------------------------------------------------------------

_lapack_lock = allocate_lock()
_LAPACK_HINT = ("ember.linalg needs LAPACK from the scipy-openblas32 wheel: install it with "
                "`pip install scipy-openblas32` (or `pip install ember[linalg]`)")


def lapack() -> Any:
    """The ctypes handle of the OpenBLAS/LAPACK library of ``scipy-openblas32`` (loaded once).

    Its symbols carry the ``scipy_`` prefix (``scipy_dgetrf_``) and take 32-bit
    Fortran integers.  Raises ``RuntimeError`` saying how to install the wheel
    when it is missing or cannot be loaded.
    """
    with _lapack_lock:
        handle = _handles.get("lapack")
        if handle is not None:
            return handle
        try:
            import scipy_openblas32
        except ImportError:
            raise RuntimeError(_LAPACK_HINT + " (the package is not installed)") from None
        import ctypes

        path = os.path.join(scipy_openblas32.get_lib_dir(),
                            "lib" + scipy_openblas32.get_library() + ".so")
        if os.name == "nt":  # pragma: no cover
            path = os.path.join(scipy_openblas32.get_lib_dir(),
                                scipy_openblas32.get_library() + ".dll")
        elif sys.platform == "darwin":  # pragma: no cover
            path = path[:-3] + ".dylib"
        try:
            handle = ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
        except OSError as e:
            raise RuntimeError(f"{_LAPACK_HINT} ({path} failed to load: {e})") from None
        _handles["lapack"] = handle
        return handle


# ---------------------------------------------------------------------------
# generated code (ember.compile's C backend)
# ---------------------------------------------------------------------------


def load_generated(path: str | os.PathLike) -> Any:
    """Load a shared object built from generated code (RTLD_LOCAL, so kernels of
    different graphs never see each other's symbols)."""
    import ctypes

    try:
        return ctypes.CDLL(os.fspath(path), mode=ctypes.RTLD_LOCAL)
    except OSError as e:
        raise RuntimeError(f"ember.compile: cannot load generated code {path}: {e}") from None
