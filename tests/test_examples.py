"""The examples run end to end in their fast form (each in a subprocess, < 30 s)."""
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_example(name, *args, timeout=120):
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", name), *args],
                       capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
    assert r.returncode == 0, f"{name} failed:\n{r.stdout}\n{r.stderr}"
    return r.stdout


def _final_accuracy(out):
    m = re.search(r"final test accuracy ([\d.]+)%", out)
    assert m, out
    return float(m.group(1))


def test_train_digits_fast(tmp_path):
    ckpt = tmp_path / "ckpt.pt"
    out = run_example("train_digits.py", "--fast", "--no-progress", "--checkpoint", str(ckpt))
    assert "epoch  1" in out and "reloaded from" in out
    assert _final_accuracy(out) > 60.0
    m = re.search(r"reloaded from .*: test accuracy ([\d.]+)%", out)
    assert m and float(m.group(1)) == _final_accuracy(out)


def test_train_digits_with_workers(tmp_path):
    out = run_example("train_digits.py", "--fast", "--workers", "2", "--no-progress",
                      "--checkpoint", str(tmp_path / "c.pt"))
    assert _final_accuracy(out) > 50.0


def test_train_mlp_fast():
    assert _final_accuracy(run_example("train_mlp.py", "--fast")) > 50.0


def test_train_lstm_fast():
    assert _final_accuracy(run_example("train_lstm.py", "--fast")) > 20.0


@pytest.mark.parametrize("name", ["train_digits.py", "train_mlp.py", "train_lstm.py"])
def test_examples_have_help(name):
    assert "--fast" in run_example(name, "--help")


def test_train_digits_prints_epochs_and_writes_curve(tmp_path):
    png = tmp_path / "curve.png"
    out = run_example("train_digits.py", "--fast", "--no-progress", "--epochs", "2",
                      "--plot", str(png))
    epochs = re.findall(r"^epoch +(\d+)  train loss ([\d.]+)  train accuracy ([\d.]+)%  "
                        r"test loss ([\d.]+)  test accuracy ([\d.]+)%$", out, re.M)
    assert [e[0] for e in epochs] == ["1", "2"], out
    assert all(0 <= float(e[2]) <= 100 for e in epochs)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "matplotlib is not installed" in out and not png.exists()
        return
    assert f"training curve: {png}" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000


def test_build_prints_a_line_per_extension():
    # the extensions are built already (the suite imports them): the build reports each
    env = {**os.environ, "EMBER_BUILD_ONLY": "random"}
    r = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=ROOT,
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert any(re.fullmatch(r"\[1/1\] ember\._C\.random: (up to date|built in [\d.]+ s)", ln)
               for ln in lines), r.stdout
    if any("built in" in ln for ln in lines):
        assert "  cc src_c/philox.c" in lines
