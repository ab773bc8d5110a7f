"""Building generated C and caching the shared objects.

The key hashes the generated source (which spells out the graph's structure,
shapes, strides and dtypes, i.e. everything the guards pinned that shapes the
code), the compiler's identity and flags, and ember's version.  Entries live
in ``EMBER_CACHE_DIR`` (default ``~/.cache/ember``) under ``codegen/``, each
a ``.so`` plus a ``.sha256`` of its bytes; both are written through a
temporary file and ``os.replace``, so concurrent processes never see half a
file, and an entry whose bytes do not match its digest is rebuilt, never
loaded.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
from pathlib import Path

FLAGS = ["-O3", "-march=native", "-std=gnu11", "-fPIC", "-shared", "-fopenmp",
         "-fno-math-errno", "-fno-trapping-math"]
if sys.platform.startswith("linux"):
    # GCC's parallel regions go through the generated code's one-thread shortcut
    FLAGS.append("-Wl,--wrap=GOMP_parallel")

_mem: dict = {}
_lock = threading.Lock()
stats = {"memory_hits": 0, "disk_hits": 0, "builds": 0, "corrupt": 0}


def compiler_command() -> list | None:
    """The C compiler as argv: ``CC``, else the one Python was built with; None if absent."""
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    argv = shlex.split(cc)
    if not argv:
        return None
    path = shutil.which(argv[0])
    return [path] + argv[1:] if path else None


@functools.lru_cache(maxsize=8)
def _identity(argv: tuple) -> str:
    """The compiler's ``--version`` line; remembered on disk per binary (path, size,
    mtime), since asking costs a process start on every first compile."""
    memo = None
    try:
        st = os.stat(os.path.realpath(argv[0]))
        tag = hashlib.sha256(repr((argv, st.st_size, st.st_mtime_ns)).encode()).hexdigest()
        memo = cache_dir() / f"cc-{tag[:24]}.txt"
        return memo.read_text()
    except OSError:
        pass
    try:
        out = subprocess.run(list(argv) + ["--version"], capture_output=True, text=True,
                             timeout=30)
        ident = out.stdout.splitlines()[0] if out.stdout else " ".join(argv)
    except (OSError, subprocess.SubprocessError):
        return " ".join(argv)
    if memo is not None:
        try:
            memo.parent.mkdir(parents=True, exist_ok=True)
            _write_atomic(memo, ident.encode())
        except OSError:
            pass
    return ident


def cache_dir() -> Path:
    """The directory of generated shared objects."""
    root = os.environ.get("EMBER_CACHE_DIR")
    if not root:
        root = os.path.join(os.environ.get("XDG_CACHE_HOME") or
                            os.path.join(os.path.expanduser("~"), ".cache"), "ember")
    return Path(root) / "codegen"


def cache_key(source: str, argv: list) -> str:
    from ember._version import __version__
    h = hashlib.sha256()
    for part in (source, _identity(tuple(argv)), " ".join(FLAGS), __version__):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def _write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _valid(so: Path, digest: Path) -> bool:
    try:
        return hashlib.sha256(so.read_bytes()).hexdigest() == digest.read_text().strip()
    except OSError:
        return False


def _build(source: str, argv: list, so: Path, digest: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="ember-cg-") as tmp:
        src, out = Path(tmp) / "k.c", Path(tmp) / "k.so"
        src.write_text(source)
        res = subprocess.run(argv + FLAGS + [str(src), "-o", str(out), "-lm"],
                             capture_output=True, text=True)
        if res.returncode != 0:
            raise RuntimeError(f"ember.compile: the C compiler {argv[0]} failed on generated "
                               f"code:\n{res.stderr[-4000:]}")
        data = out.read_bytes()
    so.parent.mkdir(parents=True, exist_ok=True)
    _write_atomic(so, data)
    _write_atomic(digest, hashlib.sha256(data).hexdigest().encode())
    stats["builds"] += 1


def load(source: str, argv: list) -> ctypes.CDLL:
    """The loaded shared object for ``source`` (memory cache, then disk, then a build)."""
    from ember import _dll
    key = cache_key(source, argv)
    with _lock:
        lib = _mem.get(key)
        if lib is not None:
            stats["memory_hits"] += 1
            return lib
        d = cache_dir() / key[:2]
        so, digest = d / f"{key}.so", d / f"{key}.sha256"
        if so.exists() and _valid(so, digest):
            stats["disk_hits"] += 1
        else:
            if so.exists():
                stats["corrupt"] += 1
            _build(source, argv, so, digest)
        # a loaded file stays mapped even if another process replaces the entry
        lib = _dll.load_generated(so)
        _mem[key] = lib
        return lib


def clear_memory() -> None:
    """Forget the loaded libraries (the disk cache stays)."""
    with _lock:
        _mem.clear()
