"""Native loading: the Windows DLL path (stubbed), RTLD flags, CUDA discovery reasons."""

import os
import subprocess
import sys

import pytest

from ember import _dll

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(_dll.__file__)))


class FakeWin:
    """Stubs for os.add_dll_directory / LoadLibraryExW / os.path.exists."""

    def __init__(self, files=(), dirs=(), broken=()):
        self.files = set(files)
        self.dirs = set(dirs)
        self.broken = set(broken)
        self.added = []
        self.loaded = []

    def api(self):
        return _dll.WinApi(self.add, self.load, self.exists)

    def add(self, d):
        self.added.append(d)

    def exists(self, p):
        return p in self.files or p in self.dirs

    def load(self, target):
        name = target.replace("\\", "/").rsplit("/", 1)[-1]
        if name in self.broken:
            raise OSError(126, "The specified module could not be found", target)
        self.loaded.append(target)
        return 1


PKG = os.path.join("C:", "py", "ember")
LIB = os.path.join(PKG, "lib")
CUDA = os.path.join("C:", "CUDA", "v12.4")


def test_windows_adds_dll_directories_and_loads_dlls():
    fake = FakeWin(dirs={LIB, os.path.join(CUDA, "bin")},
                   files={os.path.join(LIB, "ember_cuda.dll")})
    report = _dll._load_windows_dlls({"CUDA_PATH": CUDA}, fake.api(), pkg_dir=PKG)
    assert fake.added == [LIB, os.path.join(CUDA, "bin")]
    names = [n for n, _ in report]
    assert names[:4] == ["vcruntime140.dll", "vcruntime140_1.dll", "msvcp140.dll",
                         "vcomp140.dll"]
    assert os.path.join(LIB, "ember_cuda.dll") in fake.loaded
    assert all("loaded" in status for _, status in report)


def test_windows_missing_dirs_are_not_added():
    fake = FakeWin()
    _dll._load_windows_dlls({"CUDA_PATH": CUDA, "CONDA_PREFIX": "C:/env"}, fake.api(),
                            pkg_dir=PKG)
    assert fake.added == []


def test_windows_per_dll_failure_report():
    fake = FakeWin(dirs={LIB}, broken={"vcomp140.dll", "msvcp140.dll"})
    with pytest.raises(_dll.DllLoadError) as info:
        _dll._load_windows_dlls({}, fake.api(), pkg_dir=PKG)
    err = info.value
    assert isinstance(err, OSError)
    assert [f.name for f in err.failures] == ["msvcp140.dll", "vcomp140.dll"]
    msg = str(err)
    assert "msvcp140.dll" in msg and "vcomp140.dll" in msg
    assert "could not be found" in msg                 # the OS error, per DLL
    assert LIB in msg                                  # where it was looked for
    assert "Visual C++ Redistributable" in msg         # what to install
    assert "EMBER_SKIP_WIN32_DLLS=1" in msg
    assert "WinError" not in msg


def test_windows_optional_cuda_dll_failure_is_only_recorded():
    fake = FakeWin(dirs={LIB}, files={os.path.join(LIB, "ember_cuda.dll")},
                   broken={"ember_cuda.dll"})
    report = dict(_dll._load_windows_dlls({}, fake.api(), pkg_dir=PKG))
    assert report["ember_cuda.dll"].startswith("failed")
    fake = FakeWin(dirs={LIB})
    report = dict(_dll._load_windows_dlls({}, fake.api(), pkg_dir=PKG))
    assert report["ember_cuda.dll"].startswith("not found")


def test_windows_skip_env_var():
    fake = FakeWin(broken={"vcruntime140.dll"})
    report = _dll._load_windows_dlls({"EMBER_SKIP_WIN32_DLLS": "1"}, fake.api(), pkg_dir=PKG)
    assert fake.added == [] and fake.loaded == []
    assert "skipped" in report[0][1]


def _run(code, **env):
    e = dict(os.environ)
    e.update(env)
    return subprocess.run([sys.executable, "-c", code], env=e, capture_output=True,
                          text=True, check=True, cwd=ROOT).stdout.strip()


PROBE = ("import ctypes, ember, ember._dll as d; "
         "print(d.load_flags(), hasattr(ctypes.CDLL(None), 'PyInit_core'))")


def test_extensions_load_rtld_local_by_default():
    out = _run(PROBE, EMBER_USE_RTLD_GLOBAL="0")
    assert out == "RTLD_LOCAL False"


def test_rtld_global_on_request():
    out = _run(PROBE, EMBER_USE_RTLD_GLOBAL="1")
    assert out == "RTLD_GLOBAL True"
    # and the interpreter's own flags are restored afterwards
    out = _run("import sys; f = sys.getdlopenflags(); import ember; "
               "print(sys.getdlopenflags() == f)", EMBER_USE_RTLD_GLOBAL="1")
    assert out == "True"


def test_cuda_status_reason_when_library_missing(tmp_path):
    st = _dll._probe_cuda({}, lib_dir=str(tmp_path))
    assert st.available is False and st.device_count == 0
    assert "built without CUDA" in st.reason and "no CUDA kernels" in st.reason


def test_cuda_status_reason_when_library_present_but_no_driver(tmp_path, monkeypatch):
    (tmp_path / "libember_cuda.so").write_bytes(b"")
    real = _dll._dlopen

    def no_driver(cands, mode):
        if any("libcuda.so" in c for c in cands):
            return None, None, ["libcuda.so.1: cannot open shared object file"]
        return real(cands, mode)

    monkeypatch.setattr(_dll, "_dlopen", no_driver)
    st = _dll._probe_cuda({}, lib_dir=str(tmp_path))
    assert st.available is False
    assert ("driver" in st.reason) or ("runtime" in st.reason)


def test_cuda_status_runtime_missing(tmp_path, monkeypatch):
    (tmp_path / "libember_cuda.so").write_bytes(b"")
    monkeypatch.setattr(_dll, "_dlopen", lambda c, m: (None, None, ["nope"]))
    st = _dll._probe_cuda({"CUDA_HOME": str(tmp_path)}, lib_dir=str(tmp_path))
    assert "CUDA runtime" in st.reason and "LD_LIBRARY_PATH" in st.reason


def test_cuda_status_is_cached_and_consistent():
    a = _dll.cuda_status()
    assert _dll.cuda_status() is a
    assert (a.reason is None) == a.available


def test_no_ctypes_or_cuda_probe_at_import():
    out = _run("import sys, ember, ember._dll as d; "
               "print(d._status is None, 'ember.cuda' in sys.modules)")
    assert out == "True False"


def test_before_extensions_takes_the_windows_path_on_nt(monkeypatch):
    fake = FakeWin(dirs={os.path.join(os.path.dirname(_dll.__file__), "lib")})
    monkeypatch.setattr(_dll, "_real_winapi", fake.api)
    monkeypatch.setattr(_dll, "_load_mode", _dll._load_mode)
    monkeypatch.setattr(os, "name", "nt")
    _dll._before_extensions({})
    monkeypatch.undo()
    assert fake.added and fake.loaded[0].endswith("vcruntime140.dll")
    assert _dll.load_flags() in ("RTLD_LOCAL", "RTLD_GLOBAL")  # restored by undo
