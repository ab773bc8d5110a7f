"""The float32 accuracy harness (tools/accuracy_f32.py) on a strided subset of all
2^32 inputs plus the special values: every kernel stays within its documented bound
(docs/accuracy.rst) and agrees on NaN, infinities, overflow and saturation."""
import os
import shutil
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "tools"))
import accuracy_f32 as acc  # noqa: E402

# a prime stride: about 65,000 inputs per function, spread over every binade
STRIDE = 65521


@pytest.fixture(scope="module")
def harness():
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler for the accuracy harness")
    return acc.Harness()


def test_every_swept_function_has_a_documented_bound(harness):
    assert set(harness.names) == set(acc.BOUNDS)
    with open(os.path.join(acc.ROOT, "docs", "accuracy.rst")) as f:
        doc = f.read()
    for name in harness.names:
        assert f"``{name}``" in doc, name


@pytest.mark.parametrize("name", sorted(acc.BOUNDS))
def test_strided_sweep_within_documented_bound(harness, name):
    a = harness.sweep(name, stride=STRIDE, start=7, threads=2)
    s = harness.sweep(name, bits=acc.special_bits(), threads=2)
    assert a.tested == (2 ** 32 - 7 + STRIDE - 1) // STRIDE
    assert max(a.max_ulp, s.max_ulp) <= acc.BOUNDS[name], (name, a.max_ulp, s.max_ulp)
    assert a.special_bad + s.special_bad == 0, (name, hex(a.special_bits), hex(s.special_bits))


def test_result_does_not_depend_on_the_thread_count(harness):
    one = harness.sweep("erf", stride=STRIDE * 4, threads=1)
    two = harness.sweep("erf", stride=STRIDE * 4, threads=2)
    assert (one.max_ulp, one.tested, one.over_1ulp) == (two.max_ulp, two.tested, two.over_1ulp)


def test_harness_detects_a_wrong_kernel(harness):
    # sin's kernel judged against cos's reference fails by many ulps
    bad = harness.sweep("sin", stride=STRIDE * 16, threads=1, reference="cos")
    assert bad.max_ulp > 1e3
