"""Typing: ember/__init__.pyi is current, covers the public API, and mypy checks examples/."""

import ast
import inspect
import os
import re
import subprocess
import sys

import pytest

import ember

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(ember.__file__)))
STUB = os.path.join(ROOT, "ember", "__init__.pyi")


def _stub_tree():
    with open(STUB) as f:
        return ast.parse(f.read())


def test_py_typed_marker_and_packaged():
    assert os.path.isfile(os.path.join(ROOT, "ember", "py.typed"))
    with open(os.path.join(ROOT, "pyproject.toml")) as f:
        assert '"py.typed"' in f.read()


def test_stub_is_current():
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gen_stubs.py"), "--check"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr + "\n(run: python tools/gen_stubs.py)"


def test_stub_covers_public_names_and_tensor_methods():
    tree = _stub_tree()
    top = set()
    tensor = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            top.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            top.add(node.target.id)
        elif isinstance(node, ast.Assign):
            top.update(t.id for t in node.targets)
        elif isinstance(node, ast.ImportFrom):
            top.update(a.asname for a in node.names)
        if isinstance(node, ast.ClassDef) and node.name == "Tensor":
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    tensor[item.name] = item
                elif isinstance(item, ast.AnnAssign):
                    tensor[item.target.id] = item
    missing = [n for n in ember.__all__ if n not in top]
    assert not missing, missing
    public = [n for n in dir(ember.Tensor) if not n.startswith("_")]
    assert not [n for n in public if n not in tensor]
    # parameters as the runtime has them (a sample of native and Python methods)
    for name in ("add", "sum", "view", "backward", "to", "reshape", "add_", "masked_fill"):
        node = tensor[name]
        stub_params = [a.arg for a in node.args.args + node.args.kwonlyargs]
        if node.args.vararg:
            stub_params.append("*" + node.args.vararg.arg)
        sig = inspect.signature(getattr(ember.Tensor, name))
        runtime = ["self"] + [("*" + p.name if p.kind == p.VAR_POSITIONAL else p.name)
                              for p in list(sig.parameters.values())[1:]
                              if p.kind != p.VAR_KEYWORD]
        assert sorted(stub_params) == sorted(runtime), name



def _mypy(*args, cwd=ROOT):
    pytest.importorskip("mypy")
    r = subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary", *args],
                       capture_output=True, text=True, cwd=cwd)
    return r.returncode, r.stdout + r.stderr


def test_mypy_passes_over_examples(tmp_path):
    rc, out = _mypy("--cache-dir", str(tmp_path / "cache"))  # files = examples (pyproject)
    assert rc == 0, out


def test_mypy_sees_ember_types(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import ember as torch\n"
        "x = torch.zeros(3, dtype=torch.float32)\n"
        "reveal_type(x.sum(0))\n"
        "reveal_type(x.shape)\n"
        "reveal_type(torch.cuda.is_available())\n"
        "x.no_such_method()\n"
        "x.add(1, 2, 3, 4)\n"
        "torch.no_such_function()\n"
        "torch.backends.cudnn.benchmark = True\n"
        "torch.backends.cudnn.no_such_flag = True\n")
    rc, out = _mypy("--cache-dir", str(tmp_path / "cache"), "--config-file",
                    os.path.join(ROOT, "pyproject.toml"), str(probe))
    assert rc == 1, out
    lines: dict = {}
    for m in re.finditer(r"probe\.py:(\d+): (?:note|error): (.*)", out):
        lines[int(m.group(1))] = lines.get(int(m.group(1)), "") + m.group(2) + "\n"
    assert 'Revealed type is "ember.Tensor"' in lines[3], out
    assert 'Revealed type is "ember.Size"' in lines[4], out
    assert re.search(r'Revealed type is "(builtins\.)?bool"', lines[5]), out
    assert '"Tensor" has no attribute "no_such_method"' in lines[6], out
    assert 'Too many' in lines[7], out
    assert 'has no attribute "no_such_function"' in lines[8], out
    assert 9 not in lines, out
    assert 'has no attribute "no_such_flag"' in lines[10], out
