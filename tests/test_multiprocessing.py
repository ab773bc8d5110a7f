"""ember.multiprocessing: the multiprocessing API with shared-memory tensors, spawn /
start_processes and their failure reports, and ember.random.fork_rng (against torch)."""
import multiprocessing
import os
import signal

import numpy as np
import pytest

import ember
import ember.multiprocessing as emp


def _fill(rank, out, value):
    out[rank] = value + rank


def _fail(rank, kind):
    if rank == 1:
        if kind == "raise":
            raise ValueError("bad rank")
        if kind == "exit":
            raise SystemExit(3)
        os.kill(os.getpid(), signal.SIGKILL)


def _child_writes(inbox, outbox):
    t = inbox.get()
    t.add_(1)
    outbox.put(t.sum().item())


def test_names_and_sharing_strategy():
    for name in multiprocessing.__all__:
        assert hasattr(emp, name), name
    assert emp.get_sharing_strategy() == "file_descriptor"
    assert "file_descriptor" in emp.get_all_sharing_strategies()
    emp.set_sharing_strategy("file_descriptor")
    with pytest.raises(ValueError, match="file_system"):
        emp.set_sharing_strategy("file_system")
    torch = pytest.importorskip("torch")
    assert torch.multiprocessing.get_sharing_strategy() == emp.get_sharing_strategy()
    assert set(emp.__all__) - {"SpawnContext"} <= set(torch.multiprocessing.__all__) | {
        "spawn", "start_processes", "ProcessContext", "ProcessException",
        "ProcessRaisedException", "ProcessExitedException"}


def test_shared_tensor_crosses_a_queue_by_memory():
    ctx = emp.get_context("fork")
    inbox, outbox = ctx.Queue(), ctx.Queue()
    t = ember.zeros(4).share_memory_()
    p = ctx.Process(target=_child_writes, args=(inbox, outbox))
    p.start()
    inbox.put(t)
    assert outbox.get(timeout=60) == 4.0
    p.join(60)
    assert p.exitcode == 0
    np.testing.assert_array_equal(t.numpy(), np.ones(4))     # the child's write is seen


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_start_processes_runs_every_rank(method):
    out = ember.zeros(3).share_memory_()
    if method == "spawn":
        emp.spawn(_fill, args=(out, 10.0), nprocs=3)
    else:
        emp.start_processes(_fill, args=(out, 10.0), nprocs=3, start_method="fork")
    np.testing.assert_array_equal(out.numpy(), [10.0, 11.0, 12.0])


def test_join_later_and_pids():
    out = ember.zeros(2).share_memory_()
    ctx = emp.start_processes(_fill, args=(out, 1.0), nprocs=2, join=False, start_method="fork")
    assert isinstance(ctx, emp.ProcessContext) and len(ctx.pids()) == 2
    while not ctx.join(timeout=60):
        pass
    assert ctx.join() is True
    np.testing.assert_array_equal(out.numpy(), [1.0, 2.0])


def test_failures_are_reported():
    with pytest.raises(emp.ProcessRaisedException) as e:
        emp.start_processes(_fail, args=("raise",), nprocs=2, start_method="fork")
    assert e.value.error_index == 1
    assert "-- Process 1 terminated with the following error:" in str(e.value)
    assert "ValueError: bad rank" in str(e.value)
    with pytest.raises(emp.ProcessExitedException, match="exit code 3") as e:
        emp.start_processes(_fail, args=("exit",), nprocs=2, start_method="fork")
    assert e.value.exit_code == 3 and e.value.signal_name is None
    with pytest.raises(emp.ProcessExitedException, match="signal SIGKILL") as e:
        emp.start_processes(_fail, args=("kill",), nprocs=2, start_method="fork")
    assert e.value.exit_code == -signal.SIGKILL and e.value.signal_name == "SIGKILL"
    # the exceptions pickle with their fields (they cross process boundaries too)
    import pickle
    again = pickle.loads(pickle.dumps(e.value))
    assert (again.error_index, again.exit_code, again.signal_name) == (1, -9, "SIGKILL")


def test_spawn_other_start_method_warns():
    with pytest.warns(FutureWarning, match="only supports start_method=spawn"):
        assert emp.spawn(_fill, args=(None, 0), nprocs=0, start_method="fork") is None


def test_fork_rng_matches_torch():
    torch = pytest.importorskip("torch")
    seen = []
    for lib in (ember, torch):
        lib.manual_seed(3)
        with lib.random.fork_rng(devices=[]):
            lib.rand(5)
        a = lib.rand(2).numpy()
        lib.manual_seed(3)
        b = lib.rand(2).numpy()
        with lib.random.fork_rng(enabled=False):
            lib.rand(5)
        c = lib.rand(2).numpy()
        lib.manual_seed(3)
        with lib.random.fork_rng():
            lib.manual_seed(99)
        seen.append((np.array_equal(a, b), np.array_equal(c, b), lib.initial_seed()))
    assert seen[0] == seen[1] == (True, False, 3)
    assert ember.random.manual_seed is ember.manual_seed
    assert ember.random.get_rng_state is ember.get_rng_state
