"""Doctests of the docs pages (docs/**/*.rst) and of ember's docstrings, plus a check
that docs/environment.rst lists every ``EMBER_*`` environment variable the code reads.

Fast: no Sphinx build (``make docs`` is that); each page and module is one test.
"""

import doctest
import glob
import importlib
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE



def _pages():
    """Docs pages with examples (``>>>``)."""
    out = []
    for p in glob.glob(os.path.join(DOCS, "**", "*.rst"), recursive=True):
        if os.sep + "_build" + os.sep in p:
            continue
        with open(p, encoding="utf-8") as f:
            if ">>>" in f.read():
                out.append(p)
    return sorted(out)


PAGES = _pages()
# Not modules to import for their docstrings: the CLI entry point.
SKIP_MODULES = {"ember.__main__"}


def _globs():
    import numpy as np

    import ember
    return {"ember": ember, "np": np}


def _run(tests, name):
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    out = []
    for t in tests:
        if t.examples:
            runner.run(t, out=out.append)
    res = runner.summarize(verbose=False)
    assert res.failed == 0, f"{res.failed} of {res.attempted} doctests failed in {name}:\n" + \
        "".join(out)
    return res


@pytest.mark.parametrize("page", PAGES, ids=[os.path.relpath(p, DOCS) for p in PAGES])
def test_docs_page(page):
    with open(page, encoding="utf-8") as f:
        text = f.read()
    parser = doctest.DocTestParser()
    test = parser.get_doctest(text, _globs(), os.path.basename(page), page, 0)
    try:
        _run([test], os.path.relpath(page, ROOT))
    finally:
        import ember
        ember.use_deterministic_algorithms(False)  # pages may flip global switches


def _modules():
    """Modules whose source holds an example (``>>>``): found without importing anything."""
    names = []
    pkg = os.path.join(ROOT, "ember")
    for path in glob.glob(os.path.join(pkg, "**", "*.py*"), recursive=True):
        if not path.endswith((".py", ".pyx")):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            if ">>>" not in f.read():
                continue
        rel = os.path.relpath(path, ROOT)[:-len(os.path.splitext(path)[1])]
        name = rel.replace(os.sep, ".")
        name = name[:-len(".__init__")] if name.endswith(".__init__") else name
        if name not in SKIP_MODULES:
            names.append(name)
    return sorted(names)


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples(name):
    try:
        mod = importlib.import_module(name)
    except Exception as e:  # the module's own tests report that; here only its examples
        pytest.skip(f"{name} does not import: {type(e).__name__}: {e}")
    tests = doctest.DocTestFinder(exclude_empty=True).find(mod, name, extraglobs=_globs())
    if not any(t.examples for t in tests):
        pytest.skip("no examples")
    _run(tests, name)


# -- every EMBER_* variable read by the code is documented ----------------------

_READS = re.compile(r"(?:getenv|environ\.get|environ\[|env\.get)\(?\s*[\"'](EMBER_[A-Z0-9_]+)[\"']")
_SOURCES = ["setup.py", "ember/**/*.py", "ember/**/*.pyx", "ember/**/*.pxd", "src_c/**/*.c",
            "src_c/**/*.h", "src_cuda/**/*.cu", "src_cuda/**/*.h"]


def _env_vars_read():
    found = {}
    for pattern in _SOURCES:
        for path in glob.glob(os.path.join(ROOT, pattern), recursive=True):
            try:
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
            except OSError:
                continue
            for var in _READS.findall(text):
                found.setdefault(var, os.path.relpath(path, ROOT))
    return found


def test_environment_page_lists_every_variable():
    with open(os.path.join(DOCS, "environment.rst"), encoding="utf-8") as f:
        page = f.read()
    read = _env_vars_read()
    assert "EMBER_NUM_THREADS" in read  # the scan itself works
    missing = {v: p for v, p in read.items() if f"``{v}``" not in page}
    assert not missing, ("document these in docs/environment.rst (read in): " +
                         ", ".join(f"{v} ({p})" for v, p in sorted(missing.items())))


# ---- the docs' Python blocks: complete examples, type-checked and run ----------------

def _doc_blocks():
    import sys
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    try:
        import doc_blocks
    finally:
        sys.path.pop(0)
    return doc_blocks


DOC_BLOCKS = _doc_blocks().blocks()


def test_doc_blocks_are_found_and_marked():
    kinds = {b.kind for b in DOC_BLOCKS}
    assert kinds <= {"complete", "no-run", "fragment"}
    paths = {b.path for b in DOC_BLOCKS if b.kind == "complete"}
    assert {"README.md", os.path.join("docs", "quickstart.rst"),
            os.path.join("docs", "compile.rst")} <= paths
    with pytest.raises(ValueError, match="unknown code-block class 'snippet'"):
        _doc_blocks()._rst_blocks("x.rst", [".. code-block:: python", "   :class: snippet",
                                            "", "   x = 1"])


def test_doc_blocks_pass_mypy(tmp_path):
    pytest.importorskip("mypy")
    import subprocess
    import sys
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "doc_blocks.py"), "mypy",
                        "--cache-dir", str(tmp_path / "cache")],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("block", [b for b in DOC_BLOCKS if b.kind == "complete"],
                         ids=lambda b: f"{b.path}:{b.line}")
def test_doc_block_runs(block, tmp_path):
    import subprocess
    import sys
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", block.code], capture_output=True, text=True,
                       cwd=tmp_path, env=env, timeout=600)
    assert r.returncode == 0, f"{block.path}:{block.line}\n{r.stdout}\n{r.stderr}"
