"""ember.profiler: recorded events of a known program, the table layout against
torch.profiler's on the same events, schedules against torch's, traces on disk."""
import gzip
import json
import os

import pytest

import ember
from ember.profiler import (
    ProfilerAction,
    ProfilerActivity,
    profile,
    record_function,
    schedule,
    tensorboard_trace_handler,
)
from ember.profiler._events import build_table


def _program():
    a, b = ember.ones(64, 64), ember.ones(64, 64)
    with record_function("block"):
        for _ in range(3):
            a @ b + a
    return a, b


def test_known_program_events_and_table():
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True,
                 profile_memory=True) as prof:
        _program()
    rows = {e.key: e for e in prof.key_averages()}
    assert rows["ember::matmul"].count == 3 and rows["ember::add"].count == 3
    assert rows["block"].count == 1
    # each op returns a fresh 64x64 float32 tensor: 16 KB
    assert rows["ember::matmul"].cpu_memory_usage == 3 * 64 * 64 * 4
    assert rows["block"].cpu_memory_usage == 6 * 64 * 64 * 4
    assert rows["block"].self_cpu_memory_usage == 0
    children = rows["ember::matmul"].cpu_time_total + rows["ember::add"].cpu_time_total
    assert rows["block"].cpu_time_total >= children
    assert rows["block"].self_cpu_time_total == pytest.approx(
        rows["block"].cpu_time_total - children)
    by_shape = prof.key_averages(group_by_input_shape=True)
    assert {str(e.input_shapes) for e in by_shape if e.key == "ember::add"} == \
        {"[[64, 64], [64, 64]]"}
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10)
    lines = table.splitlines()
    assert lines[1].split() == ["Name", "Self", "CPU", "%", "Self", "CPU", "CPU", "total", "%",
                                "CPU", "total", "CPU", "time", "avg", "CPU", "Mem", "Self",
                                "CPU", "Mem", "#", "of", "Calls"]
    assert "48.00 KB" in table and lines[-1].startswith("Self CPU time total: ")
    events = [r for r in lines[3:-2]]
    assert [r.split()[0] for r in events][:3] == \
        [e.key for e in sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)][:3]


def test_table_layout_matches_torch_on_the_same_events(torch):
    from torch.profiler import profile as tprofile
    a = torch.ones(32, 32)
    with tprofile(record_shapes=True, profile_memory=True) as tp:
        with torch.profiler.record_function("a_long_user_annotation_name"):
            for _ in range(2):
                (a @ a).relu().sum()
    for group in (False, True):
        events = tp.key_averages(group_by_input_shape=group)
        for kw in ({"sort_by": "cpu_time_total", "row_limit": 4},
                   {"sort_by": "self_cpu_time_total"}, {"sort_by": "count"},
                   {"sort_by": "cpu_memory_usage", "time_unit": "ms"},
                   {"header": "HEADER", "max_name_column_width": 12}):
            want = events.table(**kw)
            got = build_table(list(events), profile_memory=True, **kw)
            assert got == want


@pytest.mark.parametrize("kw", [dict(wait=1, warmup=1, active=2),
                                dict(wait=2, warmup=0, active=1, repeat=2),
                                dict(wait=1, warmup=2, active=3, repeat=1, skip_first=3),
                                dict(wait=2, warmup=1, active=1, skip_first_wait=1)])
def test_schedule_matches_torch(kw, torch):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, theirs = schedule(**kw), torch.profiler.schedule(**kw)
    assert [ours(i).name for i in range(30)] == [theirs(i).name for i in range(30)]


def test_schedule_steps_and_trace_handler(tmp_path):
    seen = []

    def ready(p):
        seen.append((p.step_num, sorted({e.key for e in p.key_averages()})))
    sched = schedule(wait=1, warmup=1, active=2, repeat=2)
    x = ember.ones(4)
    with profile(schedule=sched, on_trace_ready=ready) as prof:
        for i in range(10):
            x = x * 2 if i % 2 else x + 1
            prof.step()
    # cycles: steps 2-3 and 6-7 record; each save happens on the step that ends it
    assert [s for s, _ in seen] == [4, 8]
    assert all(keys == ["ember::add", "ember::mul"] for _, keys in seen)
    assert sched(3) is ProfilerAction.RECORD_AND_SAVE

    handler = tensorboard_trace_handler(str(tmp_path / "tb"), worker_name="w0", use_gzip=True)
    with profile(on_trace_ready=handler):
        ember.ones(3).exp()
    (name,) = os.listdir(tmp_path / "tb")
    assert name.startswith("w0.") and name.endswith(".pt.trace.json.gz")
    with gzip.open(tmp_path / "tb" / name, "rt") as f:
        assert [e["name"] for e in json.load(f)["traceEvents"]] == ["ember::ones", "ember::exp"]


def test_chrome_trace(tmp_path):
    with profile(record_shapes=True) as prof:
        _program()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    evts = trace["traceEvents"]
    # two factories (ember::ones), the annotation, three matmuls and three adds
    assert len(evts) == 9 and all(e["ph"] == "X" and e["dur"] >= 0 for e in evts)
    assert sorted(e["name"] for e in evts).count("ember::ones") == 2
    block = next(e for e in evts if e["name"] == "block")
    assert block["cat"] == "user_annotation"
    for e in evts:       # ops nest inside the annotation
        if e["name"] == "ember::ones":
            continue
        assert block["ts"] <= e["ts"] and e["ts"] + e["dur"] <= block["ts"] + block["dur"]
    assert next(e for e in evts if e["name"] == "ember::add")["args"]["Input Dims"] == \
        [[64, 64], [64, 64]]


def test_backward_ops_stack_and_off_state():
    w = ember.ones(3, requires_grad=True)
    with profile(with_stack=True) as prof:
        (w * 2).sum().backward()
    keys = [e.key for e in prof.events()]
    assert keys[:2] == ["ember::mul", "ember::sum"] and len(keys) > 2   # then backward ops
    stacked = prof.key_averages(group_by_stack_n=1)
    assert any("test_profiler.py" in e.stack[0] for e in stacked if e.stack)
    assert "Source Location" in stacked.table()
    n = len(prof.events())
    ember.ones(2) + 1                          # not recorded: the profiler is off
    assert len(prof.events()) == n
    with record_function("no profiler"):      # a no-op without a profiler
        ember.ones(2)


def test_autograd_nodes_and_dataloader_steps():
    from ember.utils.data import DataLoader, TensorDataset
    w = ember.ones(3, requires_grad=True)
    loader = DataLoader(TensorDataset(ember.ones(4, 3)), batch_size=2)
    with profile() as prof:
        for (x,) in loader:
            (x * w).sum().backward()
    rows = {e.key: e for e in prof.key_averages()}
    step = rows["enumerate(DataLoader)#_SingleProcessIter.__next__"]
    assert step.count == 3                     # two batches, then StopIteration
    node = rows["autograd::engine::evaluate_function: MulBackward0"]
    assert node.count == 2
    # the ops a node runs are its children: its self time excludes them
    evts = [e for e in prof.events() if e.key == node.key]
    assert all(e.cpu_children and e.self_cpu_time_total <= e.cpu_time_total for e in evts)
    assert all(c.key.startswith("ember::") for e in evts for c in e.cpu_children)


def test_record_function_decorator_and_errors():
    @record_function("my_fn")
    def f(x):
        return x.exp()
    with profile() as prof:
        f(ember.ones(2))
    (evt,) = [e for e in prof.events() if e.key == "my_fn"]
    assert [c.key for c in evt.cpu_children] == ["ember::exp"]
    with pytest.raises(ValueError, match="sort_by"):
        prof.key_averages().table(sort_by="cuda_time_total")
    with pytest.raises(TypeError, match="ProfilerActivity"):
        profile(activities=["cpu"])
    with pytest.raises(ValueError, match="Invalid profiler schedule"):
        schedule(wait=0, warmup=0, active=0)


def test_recording_keeps_op_parameters_and_in_place_semantics():
    x = ember.tensor([-2.0, -0.5, 0.5, 2.0])
    F = ember.nn.functional
    calls = [lambda v: ember.clamp(v, min=-1.0), lambda v: v.clamp(-1.0, 1.0),
             lambda v: F.leaky_relu(v, 0.2), lambda v: F.gelu(v, approximate="tanh"),
             lambda v: F.elu(v, 0.5), lambda v: F.softplus(v, 2.0)]
    want = [f(x).tolist() for f in calls]
    with profile() as prof:
        got = [f(x).tolist() for f in calls]
        y, z, w = x.clone(), x.clone(), x.clone()
        y.relu_()
        z.clamp_(min=0.0, max=1.0)
        F.leaky_relu(w, 0.5, inplace=True)
    assert got == want
    assert y.tolist() == [0.0, 0.0, 0.5, 2.0] and z.tolist() == [0.0, 0.0, 0.5, 1.0]
    assert w.tolist() == [-1.0, -0.25, 0.5, 2.0]
    keys = [e.key for e in prof.events()]
    assert "ember::relu_" in keys and "ember::clamp_" in keys


def test_recording_keeps_alpha_of_add_and_sub():
    x = ember.tensor([1.0, 2.0])
    want = [ember.add(x, x, alpha=3).tolist(), x.sub(x * 2, alpha=0.5).tolist()]
    with profile():
        got = [ember.add(x, x, alpha=3).tolist(), x.sub(x * 2, alpha=0.5).tolist()]
    assert got == want == [[4.0, 8.0], [0.0, 0.0]]
