"""``python -m ember``: report the environment ember runs in.

Version, how it was built (compiler, flags), the CPU features and the kernel
ISA picked at run time, the thread count, whether the CUDA library was found
(or why not), which backend plugins were loaded, and which optional
components are found or missing, with how to add each.  Paste it into bug
reports.  ``python -m ember --components`` prints only the components.
"""

from __future__ import annotations

import os
import platform
import sys
from typing import Any


def _cpu_info(core: Any) -> dict:
    get = getattr(core, "_cpu_info", None)
    if callable(get):
        try:
            info = get()
            if isinstance(info, dict):
                return info
        except Exception as e:  # degrade: the report must always print
            return {"isa": f"unknown ({type(e).__name__}: {e})", "features": []}
    return {"isa": "unknown (ember._C.core._cpu_info is missing)", "features": []}


def _has_module(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _c_compiler() -> str | None:
    # the one ember.compile's code generator uses: CC, else Python's build compiler
    from ember.compiler.codegen.cache import compiler_command

    argv = compiler_command()
    return " ".join(argv) if argv else None


def _mpiexec() -> str | None:
    import shutil

    found = shutil.which("mpiexec")
    if found:
        return found
    # the mpich wheel installs its launcher next to the interpreter
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return here if os.path.exists(here) else None


def components() -> list[tuple[str, bool, str, str]]:
    """The optional components: ``(name, found, what it gives / where found, how to add it)``."""
    from ember import _dll

    rows = []
    lapack = _has_module("scipy_openblas32")
    rows.append(("LAPACK (scipy-openblas32)", lapack,
                 "ember.linalg factorizations (solve, cholesky, svd, eig, ...)",
                 "pip install scipy-openblas32   (or: pip install ember[linalg])"))
    cc = _c_compiler()
    rows.append(("C compiler", cc is not None,
                 f"ember.compile's C code generation ({cc})" if cc else
                 "ember.compile's C code generation",
                 "install gcc or clang (apt install gcc; xcode-select --install), or set CC"))
    mpi4py, mpiexec = _has_module("mpi4py"), _mpiexec()
    rows.append(("MPI (mpi4py + mpiexec)", mpi4py and mpiexec is not None,
                 "ember.distributed across processes" + (f" ({mpiexec})" if mpiexec else "")
                 + ("" if mpi4py else "; mpi4py is missing")
                 + ("" if mpiexec else "; no mpiexec launcher found"),
                 "pip install ember[distributed]   (mpi4py and the MPICH wheel)"))
    st = _dll.cuda_status()
    rows.append(("CUDA", st.available,
                 f"{st.device_count} device(s): {', '.join(st.device_names)}" if st.available
                 else f"GPU kernels; not available: {st.reason}",
                 "an NVIDIA driver, the CUDA runtime and an ember build with its CUDA library"))
    rows.append(("tensorboard", _has_module("tensorboard"),
                 "ember.utils.tensorboard.SummaryWriter",
                 "pip install tensorboard   (or: pip install ember[tensorboard])"))
    onnx, ort = _has_module("onnx"), _has_module("onnxruntime")
    rows.append(("onnx", onnx,
                 "ONNX export (ember.onnx)" + ("" if ort else "; onnxruntime (to run the "
                                                              "exported files) is missing"),
                 "pip install onnx onnxruntime"))
    rows.append(("matplotlib", _has_module("matplotlib"),
                 "the training-curve PNG of `make demo`", "pip install matplotlib"))
    return rows


def components_report() -> str:
    """The optional components as text: one line each, with how to add the missing ones."""
    lines = ["optional components:"]
    for name, found, what, how in components():
        lines.append(f"  [{'found' if found else 'missing'}] {name}: {what}")
        if not found:
            lines.append(f"      to add: {how}")
    return "\n".join(lines) + "\n"


def report() -> str:
    """The environment report as a string."""
    import ember
    from ember import __config__, _dll, _plugins
    from ember._C import core

    lines = []
    add = lines.append
    add(f"ember version:      {ember.__version__}")
    add(f"ember location:     {os.path.dirname(ember.__file__)}")
    add(f"Python:             {sys.version.split()[0]} ({platform.python_implementation()})")
    add(f"platform:           {platform.platform()}")
    cfg = __config__.config()
    add(f"compiler:           {cfg['compiler']} ({cfg['compiler_version']})")
    add(f"cflags:             {cfg['cflags']}")
    add(f"openmp:             {cfg['openmp']}   debug build: {cfg['debug']}   "
        f"CUDA built: {cfg['cuda_built']}")
    info = _cpu_info(core)
    feats = info.get("features", [])
    if isinstance(feats, dict):
        feats = [k for k, v in feats.items() if v]
    add(f"CPU:                {ember.cpu.get_device_name()}")
    add(f"CPU features:       {' '.join(feats) if feats else '(none reported)'}")
    add(f"kernel ISA:         {info.get('isa')}")
    get_threads = getattr(ember, "get_num_threads", None)
    add(f"threads:            {get_threads() if callable(get_threads) else 'unknown'}")
    add(f"extension loading:  {_dll.load_flags()}")
    st = _dll.cuda_status()
    if st.available:
        add(f"CUDA:               available, {st.device_count} device(s): "
            f"{', '.join(st.device_names)}")
        add(f"  library:          {st.library}")
        add(f"  runtime / driver: {st.runtime} / {st.driver}")
    else:
        add(f"CUDA:               not available: {st.reason}")
        add(f"  library:          {st.library or '(not built)'}")
        add(f"  runtime:          {st.runtime or '(not found)'}")
    autoload = os.environ.get(_plugins.ENV_VAR, "1")
    eps = _plugins.loaded()
    if eps:
        add(f"backend plugins:    {len(eps)} loaded")
        for ep in eps:
            add(f"  {ep.name} = {ep.value}  ({ep.distribution})")
    else:
        add("backend plugins:    none loaded" + (f" (autoload disabled: {_plugins.ENV_VAR}="
                                                  f"{autoload})" if autoload == "0" else ""))
    return "\n".join(lines) + "\n" + components_report()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args and args != ["--components"]:
        sys.stderr.write("usage: python -m ember [--components]\n")
        return 2
    sys.stdout.write(components_report() if args else report())
    return 0


if __name__ == "__main__":
    sys.exit(main())
