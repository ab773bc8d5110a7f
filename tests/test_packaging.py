"""Packaging: the sdist's file list, the version's single source, the conda recipe,
and ``asv check`` over the benchmark suite (issue 7: it runs in ``make test``).

The sdist is built from a copy of the checkout (the files git tracks or would
track) plus the build products a developer tree holds (compiled extensions,
generated C), so the check also proves those stay out.  Building a wheel
compiles every kernel, so that check runs only with ``EMBER_TEST_WHEEL=1``.
"""

import glob
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _cuda_build():
    """src_cuda/build.py as a module (its name would clash with PyPI's `build`)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("_ember_cuda_build",
                                                  os.path.join(ROOT, "src_cuda", "build.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _version():
    with open(os.path.join(ROOT, "ember", "_version.py")) as f:
        return re.search(r'__version__\s*=\s*["\']([^"\']+)["\']', f.read()).group(1)


def _have(module):
    import importlib.util
    return importlib.util.find_spec(module) is not None


def _checkout_files():
    try:
        out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                             capture_output=True, check=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        pytest.skip("not a git checkout")
    return [p for p in out.decode().split("\0") if p and os.path.isfile(os.path.join(ROOT, p))]


def _copy_tree(dest):
    files = _checkout_files()
    # what a developer tree also holds: build products that must not be packaged
    extras = [os.path.relpath(p, ROOT) for pat in ("ember/_C/*.so", "ember/_C/*.c",
                                                    "ember/_build_config.py")
              for p in glob.glob(os.path.join(ROOT, pat))]
    for rel in set(files) | set(extras):
        dst = os.path.join(dest, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(os.path.join(ROOT, rel), dst)
    os.makedirs(os.path.join(dest, "build", "junk"), exist_ok=True)
    with open(os.path.join(dest, "build", "junk", "x.o"), "w") as f:
        f.write("object")
    return files


@pytest.fixture(scope="module")
def sdist(tmp_path_factory):
    if not _have("build"):
        pytest.skip("the `build` package is not installed (requirements-dev.txt)")
    src = tmp_path_factory.mktemp("checkout")
    out = tmp_path_factory.mktemp("dist")
    files = _copy_tree(str(src))
    env = dict(os.environ)
    # The sdist's contents come from MANIFEST.in and the package list, not from
    # cythonizing: build no extension while packing (keeps this test fast).
    env["EMBER_BUILD_ONLY"] = "__sdist__"
    proc = subprocess.run([sys.executable, "-m", "build", "--sdist", "--no-isolation",
                           "--outdir", str(out), str(src)], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    tars = glob.glob(os.path.join(str(out), "*.tar.gz"))
    assert len(tars) == 1, os.listdir(str(out))
    with tarfile.open(tars[0]) as tf:
        names = [n.split("/", 1)[1] for n in tf.getnames() if "/" in n]
    return os.path.basename(tars[0]), set(names), files


def test_sdist_name_has_the_version(sdist):
    name, _, _ = sdist
    assert name == f"ember-{_version()}.tar.gz"


def test_sdist_has_the_sources(sdist):
    _, names, files = sdist
    required = {"pyproject.toml", "setup.py", "README.md", "MANIFEST.in",
                "ember/__init__.py", "ember/_version.py"}
    required |= {f for f in files if f.startswith("src_c/")}
    required |= {f for f in files if f.startswith("src_cuda/")}
    required |= {f for f in files if re.match(r"ember/_C/[^/]+\.(pyx|pxd|pxi)$", f)}
    required |= {f for f in files if f.startswith("ember/datasets/data/")}
    required |= {f for f in files if f.startswith("tests/") and f.endswith(".py")}
    assert any(f.endswith(".pyx") for f in required) and any(f.endswith(".c") for f in required)
    missing = sorted(required - names)
    assert not missing, f"missing from the sdist: {missing}"


def test_sdist_has_no_build_products(sdist):
    _, names, _ = sdist
    bad = sorted(n for n in names if n.endswith((".so", ".o", ".pyd", ".dll", ".pyc"))
                 or n.startswith(("build/", "dist/", ".venv/", "asv_bench/.asv/", "docs/_build/"))
                 or "__pycache__" in n or re.match(r"ember/_C/[^/]+\.c$", n)
                 or n == "ember/_build_config.py")
    assert not bad, f"build products in the sdist: {bad[:20]}"


def test_version_has_one_source():
    import ember
    assert ember.__version__ == _version()
    with open(os.path.join(ROOT, "pyproject.toml")) as f:
        pyproject = f.read()
    assert 'dynamic = ["version"]' in pyproject
    assert 'attr = "ember._version.__version__"' in pyproject
    assert not re.search(r"^version\s*=\s*[\"']", pyproject, re.M)  # no literal version
    with open(os.path.join(ROOT, "conda", "recipe", "meta.yaml")) as f:
        recipe = f.read()
    assert "ember/_version.py" in recipe and _version() not in recipe


def test_conda_recipe_shape():
    with open(os.path.join(ROOT, "conda", "recipe", "meta.yaml")) as f:
        recipe = f.read()
    for needle in ("{{ compiler('c') }}", "host:", "run:",
                   "- python", "- cython", "- numpy", "- setuptools", "- pip",
                   "imports:", "- ember", "python -m ember", "pytest"):
        assert needle in recipe, f"conda/recipe/meta.yaml lacks {needle!r}"


def test_conda_recipe_has_a_cuda_variant():
    with open(os.path.join(ROOT, "conda", "recipe", "meta.yaml")) as f:
        recipe = f.read()
    for needle in ("{{ compiler('cuda') }}", "EMBER_BUILD_CUDA=1", "EMBER_BUILD_CUDA=0",
                   "cuda-cudart-dev", 'cuda_compiler_version != "None"'):
        assert needle in recipe, f"conda/recipe/meta.yaml lacks {needle!r}"
    with open(os.path.join(ROOT, "conda", "recipe", "conda_build_config.yaml")) as f:
        variants = f.read()
    assert "cuda_compiler_version:" in variants and "None" in variants and '"13.0"' in variants


def test_cuda_extra_and_dev_requirements_name_the_runtime_wheel():
    with open(os.path.join(ROOT, "pyproject.toml")) as f:
        pyproject = f.read()
    assert 'cuda = ["nvidia-cuda-runtime>=13.0,<14"]' in pyproject
    with open(os.path.join(ROOT, "requirements-dev.txt")) as f:
        assert "nvidia-cuda-runtime>=13.0,<14" in f.read()


def test_package_data_covers_data_and_cuda_library():
    with open(os.path.join(ROOT, "pyproject.toml")) as f:
        pyproject = f.read()
    section = pyproject.split("[tool.setuptools.package-data]", 1)[1].split("\n[", 1)[0]
    for pattern in ("*.pxd", "*.npz", "lib/*.so"):
        assert pattern in section, f"package-data lacks {pattern}"
    for data in glob.glob(os.path.join(ROOT, "ember", "datasets", "data", "*")):
        ext = os.path.splitext(data)[1]
        assert f"*{ext}" in section, f"package-data does not cover {os.path.basename(data)}"


@pytest.mark.skipif(os.environ.get("EMBER_TEST_WHEEL") != "1",
                    reason="builds every extension: set EMBER_TEST_WHEEL=1")
def test_wheel_contents(tmp_path):
    src = tmp_path / "checkout"
    _copy_tree(str(src))
    proc = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation",
                           "--outdir", str(tmp_path), str(src)], capture_output=True,
                          text=True, timeout=3600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (whl,) = glob.glob(str(tmp_path / "*.whl"))
    names = zipfile.ZipFile(whl).namelist()
    pyx = [os.path.basename(p)[:-4] for p in glob.glob(os.path.join(ROOT, "ember/_C/*.pyx"))]
    for mod in pyx:
        assert any(re.match(rf"ember/_C/{mod}\..*(so|pyd)$", n) for n in names), mod
    for data in glob.glob(os.path.join(ROOT, "ember", "datasets", "data", "*")):
        assert "ember/datasets/data/" + os.path.basename(data) in names
    cuda_build = _cuda_build()
    if cuda_build.find_nvcc() is not None and os.environ.get("EMBER_BUILD_CUDA") != "0":
        assert "ember/lib/libember_cuda.so" in names
    # sources of the extensions (.pyx/.pxd) may ship; build products must not
    assert not [n for n in names if n.startswith(("build/", "src_c/", "tests/"))
                or n.endswith((".c", ".o"))]
    # the build record of *this* build (ember.__config__.show()), not a stale one
    assert "ember/_build_config.py" in names
    # the header compile's generated code includes
    assert "ember/compiler/codegen/ember_math.h" in names


@pytest.mark.skipif(not _have("asv"), reason="asv is not installed (requirements-dev.txt)")
def test_asv_check():
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "asv", "check", "--python=same"],
                          cwd=os.path.join(ROOT, "asv_bench"), capture_output=True, text=True,
                          env=env, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "No problems found" in out, out[-5000:]


def test_bench_table_ratios(tmp_path):
    """tools/bench_table.py over a synthetic asv results folder (format version 2)."""
    import json

    sys.path.insert(0, os.path.join(ROOT, "tools"))
    try:
        import bench_table
    finally:
        sys.path.pop(0)
    res = tmp_path / "results"
    (res / "box").mkdir(parents=True)
    (res / "benchmarks.json").write_text(json.dumps({
        "ew.Add.time_add": {"param_names": ["n", "library"], "unit": "seconds"},
        "imp.timeraw_import_ember": {"param_names": [], "unit": "seconds"},
        "imp.timeraw_import_torch": {"param_names": [], "unit": "seconds"},
        "version": 2}))
    cols = ["result", "params", "version"]
    (res / "box" / "abc-existing.json").write_text(json.dumps({
        "commit_hash": "abc123", "date": 1, "params": {"cpu": "x", "num_cpu": "2"},
        "result_columns": cols, "version": 2, "results": {
            "ew.Add.time_add": [[1e-6, 2e-6, None, 4e-3, 2e-3, 8e-3],
                                [["10", "1000"], ["'ember'", "'torch'", "'numpy'"]], "v"],
            "imp.timeraw_import_ember": [[0.05], [], "v"],
            "imp.timeraw_import_torch": [[0.5], [], "v"]}}))
    values, names, info = bench_table.load_results(str(res))
    table = bench_table.rows(values, names, info["meta"])
    by = {(r["bench"], r["params"]): r for r in table}
    small = by[("ew.Add.time_add", "n=10")]
    assert small["vs_torch"] == pytest.approx(0.5) and small["vs_numpy"] is None
    big = by[("ew.Add.time_add", "n=1000")]
    assert big["vs_torch"] == pytest.approx(2.0) and big["vs_numpy"] == pytest.approx(0.5)
    assert by[("imp.timeraw_import_{lib}", "")]["vs_torch"] == pytest.approx(0.1)
    out = tmp_path / "ratios.md"
    assert bench_table.main(["--results", str(res), "-o", str(out)]) == 0
    text = out.read_text()
    assert "| `ew.Add.time_add` | n=10 | 1 µs | 2 µs | n/a | 0.50 | n/a |" in text
