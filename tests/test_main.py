"""``python -m ember`` (the environment report) and ``ember.__config__``."""

import os
import re
import subprocess
import sys

import ember

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(ember.__file__)))


def run_main(**env):
    e = dict(os.environ)
    e.update(env)
    r = subprocess.run([sys.executable, "-m", "ember"], env=e, capture_output=True, text=True,
                       cwd=ROOT)
    assert r.returncode == 0, r.stderr
    return r.stdout


def field(out, name):
    m = re.search(rf"^{re.escape(name)}:\s*(.*)$", out, re.M)
    assert m, f"no {name!r} line in:\n{out}"
    return m.group(1)


def test_report_fields():
    out = run_main()
    assert field(out, "ember version") == ember.__version__
    cfg = ember.__config__.config()
    assert str(cfg["compiler"]) in field(out, "compiler")
    assert field(out, "cflags") == str(cfg["cflags"])
    isa = field(out, "kernel ISA")
    assert isa in ("generic", "avx2", "avx512")
    assert isa == ember._C.core._cpu_info()["isa"]
    feats = field(out, "CPU features").split()
    assert feats == ember._C.core._cpu_info()["features"] or feats == ["(none", "reported)"]
    assert field(out, "threads") == str(ember.get_num_threads())
    cuda = field(out, "CUDA")
    if not ember.cuda.is_available():
        assert cuda == "not available: " + ember.cuda.unavailable_reason()
    assert field(out, "extension loading") == "RTLD_LOCAL"
    assert field(out, "backend plugins").startswith("none loaded")


def test_report_follows_environment():
    out = run_main(EMBER_NUM_THREADS="3", EMBER_USE_RTLD_GLOBAL="1",
                   EMBER_DEVICE_BACKEND_AUTOLOAD="0")
    assert field(out, "threads") == "3"
    assert field(out, "extension loading") == "RTLD_GLOBAL"
    assert "autoload disabled" in field(out, "backend plugins")


def test_report_lists_loaded_plugins(tmp_path):
    pkg = tmp_path / "ember_reportdev"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("def hook():\n    pass\n")
    meta = tmp_path / "ember_reportdev-1.0.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: ember_reportdev\nVersion: 1.0\n")
    (meta / "entry_points.txt").write_text("[ember.backends]\nreportdev = ember_reportdev:hook\n")
    out = run_main(PYTHONPATH=os.pathsep.join([str(tmp_path), ROOT]))
    assert field(out, "backend plugins") == "1 loaded"
    assert "reportdev = ember_reportdev:hook  (ember_reportdev-1.0)" in out


def test_config_show():
    s = ember.__config__.show()
    assert isinstance(s, str) and s.startswith(f"ember {ember.__version__}")
    cfg = ember.__config__.config()
    assert set(cfg) == {"compiler", "compiler_version", "cflags", "openmp", "debug",
                        "cuda_built"}
    from ember import _build_config

    for k, v in cfg.items():
        assert getattr(_build_config, k) == v
        assert f"  {k}: {v}" in s
    assert "ember threads:" in ember.__config__.parallel_info()


def _component_lines(out):
    return {m.group(2): m.group(1) for m in
            re.finditer(r"^  \[(found|missing)\] ([^:]+):", out, re.M)}


def test_components_listed_found_or_missing():
    import importlib.util
    import shutil

    out = run_main()
    comps = _component_lines(out)
    assert set(comps) == {"LAPACK (scipy-openblas32)", "C compiler", "MPI (mpi4py + mpiexec)",
                          "CUDA", "tensorboard", "onnx", "matplotlib"}

    def state(found):
        return "found" if found else "missing"

    assert comps["tensorboard"] == state(importlib.util.find_spec("tensorboard"))
    assert comps["onnx"] == state(importlib.util.find_spec("onnx"))
    assert comps["LAPACK (scipy-openblas32)"] == state(importlib.util.find_spec(
        "scipy_openblas32"))
    assert comps["CUDA"] == state(ember.cuda.is_available())
    assert comps["C compiler"] == state(shutil.which("cc") or shutil.which("gcc")
                                        or shutil.which("clang"))
    # every missing component says how to add it
    for line_no, line in enumerate(out.splitlines()):
        if line.startswith("  [missing]"):
            assert out.splitlines()[line_no + 1].strip().startswith("to add:")


def test_components_missing_say_how_to_add():
    code = ("import sys; sys.modules['tensorboard'] = None; sys.modules['matplotlib'] = None\n"
            "from ember.__main__ import main; sys.exit(main(['--components']))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                       env={**os.environ, "CC": "no-such-compiler-xyz", "PATH": "/nonexistent"})
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert out.startswith("optional components:") and "ember version" not in out
    comps = _component_lines(out)
    assert comps["tensorboard"] == comps["matplotlib"] == comps["C compiler"] == "missing"
    assert "to add: pip install tensorboard   (or: pip install ember[tensorboard])" in out
    assert "to add: install gcc or clang" in out


def test_main_rejects_unknown_arguments():
    from ember.__main__ import main

    assert main(["--bogus"]) == 2
