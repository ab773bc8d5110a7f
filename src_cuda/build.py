"""Build ``ember/lib/libember_cuda.so`` from ``src_cuda/`` with nvcc.

Used by ``setup.py`` (``EMBER_BUILD_CUDA=auto|0|1``) and by ``make cuda-check``
(``python src_cuda/build.py --check``: build, then check that the library
exports exactly the symbols ``ember/_dll.py`` expects).

Environment:
  EMBER_CUDA_ARCH    target SMs, ";"-separated (default "80;90"); PTX of the
                     highest is embedded too, so newer GPUs JIT it
  EMBER_CUDA_WERROR  0 turns nvcc warnings back into warnings (default: errors)
  CUDA_HOME          where to look for nvcc when it is not on PATH

Incremental: each .cu has an object under build/cuda/<flags hash>/, rebuilt
only when the source or a header is newer; files compile in parallel.
"""
from __future__ import annotations

import concurrent.futures
import glob
import hashlib
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src_cuda")
LIB_NAME = "libember_cuda.so"
# formulas shared with the CPU (ember_scalar.h, ember_philox.h) must round the
# same way there: no FMA contraction in these files
NO_FMAD = {"elementwise.cu", "philox.cu"}
# the longest files compile their target SMs in parallel too (nvcc --threads)
SPLIT_TARGETS = {"elementwise.cu", "gemm.cu"}
# files with sm_90a-only instructions (wgmma) behind __CUDA_ARCH_FEAT_SM90_ALL
ARCH_SPECIFIC = {"gemm.cu"}


def find_nvcc() -> str | None:
    """nvcc on PATH, else under CUDA_HOME / CUDA_PATH / /usr/local/cuda."""
    found = shutil.which("nvcc")
    if found:
        return found
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home and os.path.isfile(os.path.join(home, "bin", "nvcc")):
            return os.path.join(home, "bin", "nvcc")
    return None


def arch_flags(archs: str | None = None) -> list[str]:
    archs = archs or os.environ.get("EMBER_CUDA_ARCH", "80;90")
    sms = [a.strip().replace("sm_", "").replace(".", "") for a in archs.replace(",", ";").split(";")
           if a.strip()]
    if not sms or not all(s.isdigit() for s in sms):
        raise ValueError(f"EMBER_CUDA_ARCH must list SM numbers like '80;90', got {archs!r}")
    flags = []
    for sm in sms:
        flags += ["-gencode", f"arch=compute_{sm},code=sm_{sm}"]
    top = max(sms, key=int)
    return flags + ["-gencode", f"arch=compute_{top},code=compute_{top}"]


def _flags(name: str, archs: list[str]) -> list[str]:
    f = ["-std=c++17", "-O3", "-Xcompiler", "-fPIC,-fvisibility=hidden", "-I" + SRC,
         "-I" + os.path.join(SRC, "include"), "-I" + os.path.join(ROOT, "src_c", "include")]
    if os.environ.get("EMBER_CUDA_WERROR", "1") != "0":
        f += ["-Werror", "all-warnings"]
    if name in NO_FMAD:
        f.append("-fmad=false")
    if name in SPLIT_TARGETS:
        f += ["--threads", "0"]
    if name in ARCH_SPECIFIC:
        # Hopper's wgmma exists only in the arch-specific sm_90a code, which
        # replaces plain sm_90 for these files (run-time probed: wgmma_probe)
        archs = [a.replace("compute_90,code=sm_90", "compute_90a,code=sm_90a") for a in archs]
    if name.endswith(".c"):
        f = ["-x", "c", "-Xcompiler", "-std=c11,-fPIC,-fvisibility=hidden,-Wall,-Wextra,-Werror",
             "-O2", "-I" + os.path.join(SRC, "include"),
             "-I" + os.path.join(ROOT, "src_c", "include")]
        return f
    return f + archs


def sources() -> list[str]:
    return sorted(glob.glob(os.path.join(SRC, "*.cu")) + glob.glob(os.path.join(SRC, "*.c")))


def _headers() -> list[str]:
    return (glob.glob(os.path.join(SRC, "*.cuh")) + glob.glob(os.path.join(SRC, "include", "*.h"))
            + glob.glob(os.path.join(ROOT, "src_c", "include", "*.h")))


def build(out_dir: str | None = None, jobs: int | None = None, log=print) -> str:
    """Compile what changed and link; return the library path."""
    nvcc = find_nvcc()
    if nvcc is None:
        raise RuntimeError("nvcc not found (set CUDA_HOME or put nvcc on PATH)")
    out_dir = out_dir or os.path.join(ROOT, "ember", "lib")
    archs = arch_flags()
    key = hashlib.sha1(" ".join([nvcc] + _flags("x.cu", archs) + sorted(NO_FMAD)).encode())
    obj_dir = os.path.join(ROOT, "build", "cuda", key.hexdigest()[:12])
    os.makedirs(obj_dir, exist_ok=True)
    newest_header = max((os.path.getmtime(h) for h in _headers()), default=0.0)
    todo, objs = [], []
    for src in sources():
        name = os.path.basename(src)
        obj = os.path.join(obj_dir, name + ".o")
        objs.append(obj)
        if not os.path.exists(obj) or os.path.getmtime(obj) < max(os.path.getmtime(src),
                                                                    newest_header):
            todo.append((src, obj, [nvcc] + _flags(name, archs) + ["-c", src, "-o", obj]))

    def run(item):
        src, obj, cmd = item
        t0 = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"nvcc failed on {os.path.relpath(src, ROOT)}:\n"
                               f"{r.stdout}{r.stderr}")
        return f"  nvcc {os.path.relpath(src, ROOT)} ({time.perf_counter() - t0:.1f} s)"

    t0 = time.perf_counter()
    jobs = jobs or os.cpu_count() or 1
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        for line in pool.map(run, todo):
            log(line)
    lib = os.path.join(out_dir, LIB_NAME)
    if todo or not os.path.exists(lib) or os.path.getmtime(lib) < max(map(os.path.getmtime, objs)):
        os.makedirs(out_dir, exist_ok=True)
        # the runtime is linked as a shared library: ember/_dll.py loads it
        # (from the nvidia-cuda-runtime wheel or the system) before this one
        cmd = [nvcc, "-shared", "-cudart", "shared", "-o", lib] + objs + ["-lpthread"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"linking {LIB_NAME} failed:\n{r.stdout}{r.stderr}")
        log(f"libember_cuda.so: {len(todo)} of {len(objs)} files compiled, "
            f"{time.perf_counter() - t0:.1f} s")
    else:
        log("libember_cuda.so: up to date")
    return lib


def exported_symbols(lib: str) -> set[str]:
    """The defined dynamic symbols of ``lib`` starting with ``emc_`` (via nm)."""
    r = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True,
                       check=True)
    return {ln.split()[-1] for ln in r.stdout.splitlines()
            if ln.split() and ln.split()[-1].startswith("emc_")}


def check(lib: str) -> list[str]:
    """Problems with ``lib``'s exports against ``ember._dll.CUDA_SYMBOLS`` (empty: fine)."""
    sys.path.insert(0, ROOT)
    from ember._dll import CUDA_SYMBOLS

    have = exported_symbols(lib)
    want = set(CUDA_SYMBOLS)
    problems = [f"missing: {n}" for n in sorted(want - have)]
    problems += [f"exported but not declared in ember/_dll.py: {n}" for n in sorted(have - want)]
    return problems


def main(argv: list[str]) -> int:
    lib = build(jobs=int(os.environ.get("EMBER_CUDA_JOBS", "0")) or None)
    if "--check" in argv:
        problems = check(lib)
        for p in problems:
            print("cuda-check:", p)
        if problems:
            return 1
        from ember._dll import CUDA_SYMBOLS

        print(f"cuda-check: {len(CUDA_SYMBOLS)} symbols exported, every .cu built with -Werror "
              f"for {' '.join(arch_flags()[1::2])}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
