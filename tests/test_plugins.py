"""Backend plugins: a real distribution (``.dist-info`` + ``entry_points.txt``) on a
temporary ``sys.path`` is autoloaded by ``import ember`` (in a subprocess)."""

import os
import subprocess
import sys
import textwrap

import pytest

from ember import _plugins

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(_plugins.__file__)))

GOOD_MODULE = '''
"""A tiny out-of-tree backend: registers the device module ``ember.fakedev``."""
import sys
import types

import ember  # re-entrant: ember is still importing when this runs

CALLS = []


def _autoload():
    CALLS.append(1)
    mod = types.ModuleType("ember.fakedev")
    mod.is_available = lambda: True
    mod.device_count = lambda: 3
    mod.current_device = lambda: 0
    mod.synchronize = lambda device=None: None
    mod.get_device_name = lambda device=None: "Fake Device"
    ember._register_device_module("fakedev", mod)
    ember._plugins._autoload()  # a nested call must not recurse
'''

BROKEN_MODULE = '''
def _autoload():
    raise ValueError("fakedev driver is missing")
'''


def _make_dist(root, dist, module, source, entry):
    pkg = root / module
    pkg.mkdir()
    (pkg / "__init__.py").write_text(textwrap.dedent(source))
    meta = root / f"{dist}-0.1.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (meta / "entry_points.txt").write_text(
        "[console_scripts]\nfoo = x:y\n\n[ember.backends]\n" + entry + "\n")
    (meta / "RECORD").write_text("")


@pytest.fixture
def good(tmp_path):
    _make_dist(tmp_path, "ember_fakedev", "ember_fakedev", GOOD_MODULE,
               "fakedev = ember_fakedev:_autoload")
    return tmp_path


@pytest.fixture
def broken(tmp_path):
    _make_dist(tmp_path, "ember_broken", "ember_broken", BROKEN_MODULE,
               "broken = ember_broken:_autoload")
    return tmp_path


def run_ember(site, code, **env):
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([str(site), ROOT])
    e.update(env)
    return subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True,
                          cwd=ROOT)


def test_discover_matches_importlib_metadata(good):
    from importlib.metadata import entry_points

    eps = _plugins.discover(paths=[str(good)])
    assert [(e.name, e.value) for e in eps] == [("fakedev", "ember_fakedev:_autoload")]
    sys.path.insert(0, str(good))
    try:
        std = [(e.name, e.value) for e in entry_points(group="ember.backends")
               if e.name == "fakedev"]
    finally:
        sys.path.remove(str(good))
    assert std == [("fakedev", "ember_fakedev:_autoload")]


def test_parse_entry_points_sections_and_comments():
    text = "# c\n[other]\na = b\n[ember.backends]\n; x\nx = pkg.mod:obj.attr [extra]\n"
    assert _plugins._parse_entry_points(text, "ember.backends") == [
        ("x", "pkg.mod:obj.attr [extra]")]


def test_plugin_autoloads_and_registers_device_module(good):
    r = run_ember(good, "import sys, ember, ember_fakedev; "
                        "print(ember.fakedev.device_count(), ember.fakedev.get_device_name(), "
                        "sys.modules['ember.fakedev'] is ember.fakedev, ember_fakedev.CALLS, "
                        "[e.name for e in ember._plugins.loaded()], "
                        "ember.get_device_module('fakedev') is ember.fakedev, "
                        "ember.device('fakedev:1'))")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["3", "Fake", "Device", "True", "[1]", "['fakedev']", "True",
                                "fakedev:1"]


def test_env_var_disables_autoload(good):
    r = run_ember(good, "import sys, ember; print(hasattr(ember, 'fakedev'), "
                        "'ember_fakedev' in sys.modules)",
                  EMBER_DEVICE_BACKEND_AUTOLOAD="0")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "False"]


def test_broken_plugin_gives_actionable_error(broken):
    r = run_ember(broken, "import ember")
    assert r.returncode != 0
    err = r.stderr
    assert "RuntimeError" in err
    assert "'broken'" in err and "ember_broken:_autoload" in err   # extension + entry point
    assert "EMBER_DEVICE_BACKEND_AUTOLOAD=0" in err                 # how to disable
    assert "ValueError: fakedev driver is missing" in err           # the original, chained
    assert "The above exception was the direct cause" in err
    ok = run_ember(broken, "import ember; print('ok')", EMBER_DEVICE_BACKEND_AUTOLOAD="0")
    assert ok.returncode == 0 and ok.stdout.strip() == "ok"


def test_autoload_in_process_runs_once_and_retries_after_failure(monkeypatch):
    calls = []
    ep = _plugins.EntryPoint("x", "builtins:dict", "dist", "/nowhere")
    monkeypatch.setattr(_plugins, "_state", "idle")
    monkeypatch.setattr(_plugins, "_loaded", [])
    _plugins._autoload({}, discover_fn=lambda: calls.append(1) or [ep])
    _plugins._autoload({}, discover_fn=lambda: calls.append(1) or [ep])
    assert calls == [1] and _plugins.loaded() == [ep]

    bad = _plugins.EntryPoint("bad", "ember_no_such_module_xyz:f", "dist", "/nowhere")
    monkeypatch.setattr(_plugins, "_state", "idle")
    for _ in range(2):  # a failure is not remembered as success
        with pytest.raises(RuntimeError, match="ember_no_such_module_xyz") as info:
            _plugins._autoload({}, discover_fn=lambda: [bad])
        assert isinstance(info.value.__cause__, ModuleNotFoundError)
    monkeypatch.setattr(_plugins, "_state", "idle")
    _plugins._autoload({"EMBER_DEVICE_BACKEND_AUTOLOAD": "0"}, discover_fn=lambda: [bad])
