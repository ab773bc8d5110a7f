"""ember.utils.benchmark: Measurement statistics and Compare tables against
torch.utils.benchmark on the same raw times, and Timer on real statements."""
import re

import pytest

import ember
from ember.utils.benchmark import Compare, Measurement, TaskSpec, Timer, select_unit, trim_sigfig

RAW = {  # (label, sub_label, description, num_threads, raw block times, runs per block)
    "add_small": ("add", "small", "ember", 1, [1.2e-3, 1.25e-3, 1.21e-3, 1.3e-3, 1.22e-3], 1000),
    "add_small_t": ("add", "small", "torch", 1, [2.2e-3, 2.1e-3, 2.4e-3, 2.3e-3], 1000),
    "add_big": ("add", "big", "ember", 1, [3.1, 3.0, 3.3, 3.05, 2.9, 3.6], 100),
    "add_big_t": ("add", "big", "torch", 1, [6.1, 6.0], 100),
    "add_4t": ("add", "small", "ember", 4, [0.9e-3, 0.95e-3, 0.91e-3, 0.99e-3], 1000),
    "mm": ("mm", None, "ember", 1, [5e-6, 9e-6, 4e-6, 7e-6], 1),
    "noisy": ("mm", "noisy", "ember", 1, [1.0, 2.0, 3.0, 4.0, 5.0], 10),
}


def _measurements(lib_common):
    out = []
    for label, sub, desc, threads, raw, number in RAW.values():
        spec = lib_common.TaskSpec(stmt="x + y", setup="x = ember.ones(8)", label=label,
                                   sub_label=sub, description=desc, num_threads=threads)
        out.append(lib_common.Measurement(number, list(raw), spec))
    return out


@pytest.fixture
def both(torch):
    from torch.utils.benchmark.utils import common as tcommon

    import ember.utils.benchmark as ecommon
    return _measurements(ecommon), _measurements(tcommon)


def _strip_address(s):
    return re.sub(r"<[\w.]+Measurement object at 0x[0-9a-f]+>", "<Measurement>", s)


def test_measurement_statistics_match_torch(both):
    for e, t in zip(*both):
        for attr in ("median", "mean", "iqr", "times"):
            assert getattr(e, attr) == pytest.approx(getattr(t, attr), rel=1e-12), attr
        assert e.has_warnings == t.has_warnings
        assert e.meets_confidence(0.05) == t.meets_confidence(0.05)
        assert e.significant_figures == t.significant_figures
        assert e.title == t.title
        assert _strip_address(repr(e)) == _strip_address(repr(t))


def test_measurement_repr_names_statistics():
    m = Measurement(10, [1.0, 2.0, 3.0, 4.0], TaskSpec("f()", "pass", label="L"))
    text = repr(m)
    assert "L\n  Median: 250.00 ms\n  IQR:    150.00 ms (175.00 to 325.00)" in text
    assert "4 measurements, 10 runs per measurement, 1 thread" in text
    assert "WARNING: Interquartile range is 60.0% of the median" in text


@pytest.mark.parametrize("options", [(), ("trim",), ("color",), ("color_row",),
                                     ("warn",), ("trim", "warn", "color")])
def test_compare_table_matches_torch(both, options, torch):
    tables = []
    for cls, ms in ((Compare, both[0]), (torch.utils.benchmark.Compare, both[1])):
        c = cls(ms)
        if "trim" in options:
            c.trim_significant_figures()
        if "color" in options:
            c.colorize()
        if "color_row" in options:
            c.colorize(rowwise=True)
        if "warn" in options:
            c.highlight_warnings()
        tables.append(str(c))
    assert tables[0] == tables[1]
    assert "[-" in tables[0] and "Times are in" in tables[0]


def test_compare_rejects_non_measurements():
    with pytest.raises(ValueError, match="Expected an instance of `Measurement`"):
        Compare([1.0])


def test_units_and_sigfigs():
    assert select_unit(5e-9) == ("ns", 1e-9) and select_unit(2e-5)[0] == "us"
    assert select_unit(0.5)[0] == "ms" and select_unit(20.0)[0] == "s"
    assert trim_sigfig(3.14159, 2) == pytest.approx(3.1)
    assert trim_sigfig(123456.0, 3) == pytest.approx(123000.0)


def test_timer_timeit_counts_executions():
    calls = []
    m = Timer("f()", globals={"f": lambda: calls.append(1)}).timeit(500)
    assert len(calls) == 500 + 5          # the warm-up runs number // 100 times
    assert m.number_per_run == 500 and len(m.raw_times) == 1 and m.median > 0
    assert m.stmt == "f()" and m.num_threads == 1


def test_timer_blocked_and_adaptive_autorange():
    t = Timer("a + b", setup="a = ember.ones(16); b = ember.ones(16)", label="add",
              description="ember", num_threads=1)
    seen = []
    m = t.blocked_autorange(callback=lambda n, s: seen.append((n, s)), min_run_time=0.02)
    assert sum(m.raw_times) >= 0.02 and len(seen) == len(m.raw_times)
    assert all(n == m.number_per_run for n, _ in seen)
    assert m.median == sorted(m.times)[len(m.times) // 2] or len(m.times) % 2 == 0
    a = t.adaptive_autorange(threshold=0.5, max_run_time=0.5)
    assert len(a.raw_times) >= 4 or sum(a.raw_times) > 0.5
    assert "add" in str(Compare([m, a]))


def test_timer_sets_threads_per_measurement():
    before = ember.get_num_threads()
    seen = []
    Timer("seen.append(ember.get_num_threads())", globals={"seen": seen},
          num_threads=1).timeit(3)
    assert set(seen) == {1} and ember.get_num_threads() == before


def test_timer_errors():
    with pytest.raises(ValueError, match="only a `str` stmt"):
        Timer(lambda: None)
    with pytest.raises(ValueError, match="global_setup is C\\+\\+ only"):
        Timer("pass", global_setup="int x;")
