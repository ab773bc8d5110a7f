"""``import ember``: what it loads, what stays lazy, ``__all__``, import time, no walks."""

import importlib.util
import json
import os
import re
import statistics
import subprocess
import sys

import pytest

import ember

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(ember.__file__)))

LAZY = ["nn", "optim", "utils", "compiler", "fx", "export", "distributed", "cuda", "cpu"]
HEAVY = ["ember.nn", "ember.optim", "ember.utils", "ember.utils.data", "ember.compiler",
         "ember.fx", "ember.export", "ember.distributed", "ember.cuda",
         "ember.autograd.functional", "ember._sym", "sympy", "torch", "ctypes"]


def run(code, **env):
    e = dict(os.environ)
    e.update(env)
    r = subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True,
                       cwd=ROOT)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_import_loads_no_heavy_modules():
    out = run("import sys, json, ember; print(json.dumps(sorted(sys.modules)))")
    loaded = set(json.loads(out))
    assert "ember._C.core" in loaded
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def _exists(mod):
    try:
        return importlib.util.find_spec(mod) is not None
    except ModuleNotFoundError:
        return False


@pytest.mark.parametrize("name", LAZY)
def test_lazy_submodules_listed_and_loaded_on_access(name):
    assert name in dir(ember)
    if not _exists(f"ember.{name}"):
        pytest.skip(f"ember.{name} is not in this tree yet")
    out = run(f"import sys, ember; a = 'ember.{name}' in sys.modules; m = ember.{name}; "
              f"print(a, m is sys.modules['ember.{name}'])")
    assert out.split() == ["False", "True"]


def test_lazy_attributes():
    for name in ("SymInt", "SymFloat", "SymBool", "sym_int", "sym_float", "sym_max", "sym_min",
                 "sym_sum", "sym_not", "sym_ite", "CompileMode"):
        assert name in dir(ember) and name in ember.__all__
    out = run("import sys, ember; a = 'ember._sym' in sys.modules; ember.SymInt; "
              "b = 'ember._sym' in sys.modules; print(a, b, 'sympy' in sys.modules)")
    assert out.split() == ["False", "True", "False"]   # sympy still not needed
    assert ember.sym_max(2, 3) == 3


def test_unknown_attribute_error():
    with pytest.raises(AttributeError, match="module 'ember' has no attribute 'no_such_thing'"):
        ember.no_such_thing


def test_all_is_curated():
    assert len(ember.__all__) == len(set(ember.__all__))
    missing = [n for n in ember.__all__ if not hasattr(ember, n)]
    assert not missing, missing
    private = [n for n in ember.__all__ if n.startswith("_") and not n.endswith("__")]
    assert not private, private
    for helper in ("_dll", "_plugins", "_switches", "_devices", "_check_with", "annotations"):
        assert helper not in ember.__all__
    for public in ("compile", "CompileMode", "set_default_dtype", "get_default_dtype",
                   "set_default_device", "get_default_device", "use_deterministic_algorithms",
                   "is_deterministic", "set_float32_matmul_precision", "set_warn_always",
                   "typename", "is_tensor", "is_storage", "is_floating_point", "numel",
                   "get_device_module", "SymInt", "current_defaults"):
        assert public in ember.__all__, public


def test_star_import():
    ns = {}
    exec("from ember import *", ns)
    assert "compile" in ns and "set_default_dtype" in ns and "_dll" not in ns


def test_deprecated_attrs_warn_and_work():
    with pytest.warns(DeprecationWarning, match="ember.set_default_dtype"):
        f = ember.set_default_tensor_type
    try:
        f(ember.DoubleTensor if hasattr(ember, "DoubleTensor") else "ember.DoubleTensor")
        assert ember.get_default_dtype() is ember.float64
        f("torch.FloatTensor")
        assert ember.get_default_dtype() is ember.float32
        with pytest.raises(TypeError):
            f("ember.LongTensor")
    finally:
        ember.set_default_dtype(ember.float32)
    with pytest.warns(DeprecationWarning, match="use_deterministic_algorithms"):
        ember.set_deterministic(False)
    assert "set_default_tensor_type" not in ember.__all__
    with pytest.warns(DeprecationWarning, match="ember.arange"):
        r = ember.range(1, 4)
    assert r.tolist() == [1.0, 2.0, 3.0, 4.0]


def _import_ms(stmt, runs):
    """Median and min of the cumulative `-X importtime` microseconds for `stmt`'s module."""
    mod = stmt.split()[-1]
    times = []
    for _ in range(runs):
        r = subprocess.run([sys.executable, "-X", "importtime", "-c", stmt],
                           capture_output=True, text=True, check=True, cwd=ROOT)
        for line in r.stderr.splitlines():
            m = re.match(r"import time:\s+\d+ \|\s+(\d+) \| (\S+)$", line)
            if m and m.group(2) == mod:
                times.append(int(m.group(1)) / 1000)
    assert len(times) == runs
    return statistics.median(times), min(times)


def test_import_time_under_50ms():
    median, best = _import_ms("import ember", 7)
    print(f"import ember: median {median:.1f} ms, min {best:.1f} ms")
    assert best < 50, f"import ember took {best:.1f} ms at best (budget 50 ms)"
    assert median < 100, f"import ember median {median:.1f} ms"


def test_import_time_vs_torch():
    if not _exists("torch"):
        pytest.skip("torch not installed")
    e_med, _ = _import_ms("import ember", 5)
    t_med, _ = _import_ms("import torch", 3)
    print(f"import ember {e_med:.1f} ms vs import torch {t_med:.1f} ms")
    assert e_med * 20 <= t_med, (e_med, t_med)


AUDIT = r"""
import os, sys
PKG = os.path.join(os.getcwd(), "ember") + os.sep
events = []
def hook(event, args):
    if event in ("os.listdir", "os.scandir", "os.walk", "glob.glob", "open"):
        f = sys._getframe(1)
        if f.f_code.co_filename.startswith(PKG):
            events.append((event, str(args[0]) if args else ""))
sys.addaudithook(hook)
import ember
import json
print(json.dumps(events))
"""


def test_no_file_system_walk_at_import():
    out = run(AUDIT, EMBER_DEVICE_BACKEND_AUTOLOAD="0")
    assert json.loads(out.strip().splitlines()[-1]) == []


def test_plugin_discovery_lists_only_sys_path_entries():
    out = run(AUDIT + "print(json.dumps(sys.path))")
    lines = out.strip().splitlines()
    events, path = json.loads(lines[-2]), json.loads(lines[-1])
    listed = [a for e, a in events if e in ("os.listdir", "os.scandir")]
    assert all(a in path or a == "." for a in listed), listed
    assert len(listed) <= len(path)
    opened = [a for e, a in events if e == "open"]
    assert all(a.endswith("entry_points.txt") for a in opened), opened
