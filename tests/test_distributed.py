"""ember.distributed, DistributedDataParallel and DistributedSampler.

Multi-process cases run ``tests/_dist_worker.py`` in 2 MPI processes (a
subprocess with a timeout, so a hang fails instead of blocking); each rank saves
what it saw and the checks here compare it with NumPy."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time

import _dist_worker as W
import numpy as np
import pytest

import ember
import ember.distributed as dist
from ember.distributed import run as launcher
from ember.utils.data import DistributedSampler

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKER = os.path.join(ROOT, "tests", "_dist_worker.py")
HAVE_MPI4PY = importlib.util.find_spec("mpi4py") is not None
MPIEXEC = launcher.find_mpiexec()
needs_mpi = pytest.mark.skipif(not HAVE_MPI4PY or MPIEXEC is None,
                               reason="needs mpi4py and an mpiexec (pip install mpi4py mpich)")


def _env(**extra):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               OMP_NUM_THREADS="1")
    env.pop("TORCH_DISTRIBUTED_DEBUG", None)
    env.update(extra)
    return env


def _launch(case, out, cmd_prefix=None, timeout=90, **env):
    cmd = (cmd_prefix or [MPIEXEC, "-n", str(W.W), sys.executable]) + [WORKER, case, str(out)]
    t0 = time.monotonic()
    p = subprocess.run(cmd, cwd=ROOT, env=_env(**env), capture_output=True, text=True,
                       timeout=timeout)
    return p, time.monotonic() - t0


def _results(out):
    ranks = []
    for r in range(W.W):
        with np.load(os.path.join(out, f"rank{r}.npz")) as z:
            arrays = dict(z)
        with open(os.path.join(out, f"rank{r}.json")) as f:
            ranks.append((arrays, json.load(f)))
    return ranks


def _run_case(tmp_path_factory, case, **kw):
    out = tmp_path_factory.mktemp(case)
    p, _ = _launch(case, out, **kw)
    assert p.returncode == 0, p.stdout + p.stderr
    return _results(out)


@pytest.fixture(scope="module")
def coll(tmp_path_factory):
    return _run_case(tmp_path_factory, "collectives")


@pytest.fixture(scope="module")
def ddp(tmp_path_factory):
    # through the torchrun-style launcher, which sets torchrun's variables
    prefix = [sys.executable, "-m", "ember.distributed.run", "--nproc-per-node", str(W.W)]
    return _run_case(tmp_path_factory, "ddp", cmd_prefix=prefix)


def inputs(dt, shape=W.SHAPE):
    return [W.make_input(r, dt, shape) for r in range(W.W)]


def _check(got, want, exact=True):
    assert got.shape == want.shape
    if exact:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-6)


TAGS = [(dt, c) for dt in W.DTYPES for c in ("c", "nc")]
NP_OPS = {"SUM": lambda a: sum(a), "PRODUCT": lambda a: np.prod(a, axis=0),
          "MIN": lambda a: np.min(a, axis=0), "MAX": lambda a: np.max(a, axis=0),
          "AVG": lambda a: sum(a) / len(a)}


# --- collectives ---------------------------------------------------------------------
@needs_mpi
@pytest.mark.parametrize("dt,c,op", [(dt, c, op) for dt, c in TAGS for op in NP_OPS
                                     if not (op == "AVG" and dt == "int64")])
def test_all_reduce(coll, dt, c, op):
    want = NP_OPS[op](np.stack(inputs(dt))).astype(dt)
    for arrays, _ in coll:
        got = arrays[f"all_reduce_{op}_{dt}_{c}"]
        assert got.dtype == np.dtype(dt)
        _check(got, want)


@needs_mpi
@pytest.mark.parametrize("op,fn", [("BAND", np.bitwise_and), ("BOR", np.bitwise_or),
                                   ("BXOR", np.bitwise_xor)])
def test_all_reduce_bitwise(coll, op, fn):
    a = [x * 3 for x in inputs("int64")]
    for arrays, _ in coll:
        _check(arrays[f"all_reduce_{op}_int64"], fn.reduce(np.stack(a)))


@needs_mpi
@pytest.mark.parametrize("dt", ["bfloat16", "float16"])
def test_all_reduce_half_precision(coll, dt):
    a = np.stack(inputs(dt))
    for arrays, _ in coll:
        _check(arrays[f"all_reduce_SUM_{dt}"], a.sum(0))
        _check(arrays[f"all_reduce_MAX_{dt}"], a.max(0))
        _check(arrays[f"all_reduce_AVG_{dt}"], a.mean(0))
        _check(arrays[f"broadcast_{dt}"], a[1])


@needs_mpi
def test_all_reduce_bool(coll):
    a = np.array([[True, True, False, True], [True, False, False, True]])
    for arrays, _ in coll:
        _check(arrays["all_reduce_SUM_bool"], a.any(0))
        _check(arrays["all_reduce_MIN_bool"], a.all(0))


@needs_mpi
@pytest.mark.parametrize("dt,c", TAGS)
def test_broadcast_reduce(coll, dt, c):
    a = inputs(dt)
    for r, (arrays, _) in enumerate(coll):
        _check(arrays[f"broadcast_{dt}_{c}"], a[1])
        # reduce: the sum lands on dst=1; rank 0 keeps its input
        _check(arrays[f"reduce_{dt}_{c}"], sum(a) if r == 1 else a[r])


@needs_mpi
@pytest.mark.parametrize("dt,c", TAGS)
def test_all_gather(coll, dt, c):
    a = np.stack(inputs(dt))
    for arrays, _ in coll:
        _check(arrays[f"all_gather_{dt}_{c}"], a)
        _check(arrays[f"all_gather_into_tensor_{dt}_{c}"], a.reshape(-1, W.SHAPE[1]))


@needs_mpi
@pytest.mark.parametrize("dt,c", TAGS)
def test_reduce_scatter(coll, dt, c):
    a = inputs(dt)
    big = sum(inputs(dt, (W.W, W.SHAPE[1])))
    for r, (arrays, _) in enumerate(coll):
        _check(arrays[f"reduce_scatter_{dt}_{c}"], sum(x * (r + 1) for x in a))
        _check(arrays[f"reduce_scatter_tensor_{dt}_{c}"], big[r:r + 1])


@needs_mpi
@pytest.mark.parametrize("dt,c", TAGS)
def test_gather_scatter(coll, dt, c):
    a = inputs(dt)
    _check(coll[0][0][f"gather_{dt}_{c}"], np.stack(a))
    assert f"gather_{dt}_{c}" not in coll[1][0]
    for r, (arrays, _) in enumerate(coll):
        _check(arrays[f"scatter_{dt}_{c}"], a[r] * 10)


@needs_mpi
@pytest.mark.parametrize("dt,c", TAGS)
def test_all_to_all_single(coll, dt, c):
    a = inputs(dt, (2 * W.W, 2))
    for r, (arrays, _) in enumerate(coll):
        _check(arrays[f"all_to_all_single_{dt}_{c}"],
               np.concatenate([x[2 * r:2 * r + 2] for x in a]))


@needs_mpi
def test_all_to_all_uneven(coll):
    for r, (arrays, info) in enumerate(coll):
        # rank s sends s + 1 rows to each rank; rank r's block from s is rows r*(s+1)...
        parts = []
        for s in range(W.W):
            x = W.make_input(s, "float32", ((s + 1) * W.W, 3))
            parts.append(x[r * (s + 1):(r + 1) * (s + 1)])
        _check(arrays["all_to_all_single_uneven"], np.concatenate(parts))
        assert info["all_to_all"] == [[10.0 * s + r] * (s + 2) for s in range(W.W)]


@needs_mpi
def test_point_to_point_and_async(coll):
    arrays, info = coll[1]
    _check(arrays["recv"], np.arange(5.0, dtype=np.float32))
    assert info["recv_src"] == 0
    _check(arrays["irecv"], np.arange(3) * 7)
    assert info["irecv_wait"] is True and info["irecv_src"] == 0
    a = inputs("float32")
    for arrays, info in coll:
        assert info["work_wait"] is True and info["work_completed"] is True
        _check(arrays["async_all_reduce"], sum(a))
        _check(arrays["all_reduce_requires_grad"], sum(inputs("float64")))
        _check(arrays["async_poll_nc"], np.maximum(*inputs("float64")))
        assert info["work_result_is_input"] is True
        _check(arrays["dropped_work"], np.concatenate(inputs("float32")))
        assert info["dropped_registered"] is True


@needs_mpi
def test_object_collectives(coll):
    for r, (_, info) in enumerate(coll):
        assert info["broadcast_object_list"] == [{"from": 1}, "s1", 1.5]
        assert info["all_gather_object"] == [{"rank": s, "list": list(range(s + 2))}
                                             for s in range(W.W)]
        assert info["scatter_object_list"] == f"to{r}"
    assert coll[0][1]["gather_object"] == [["g", 0], ["g", 1]]
    assert coll[1][1]["gather_object"] is None


@needs_mpi
def test_groups(coll):
    for r, (arrays, info) in enumerate(coll):
        assert (info["rank"], info["size"]) == (r, W.W)
        assert info["backend"] == "mpi" and info["initialized"] is True
        assert info["both_ranks"] == [0, 1] and info["both_group_rank_of_1"] == 1
        _check(arrays["group_src_broadcast"], np.full(2, 2.0, np.float32))
        _check(arrays["local_sync_group"], np.full(2, 2.0, np.float32))
        assert info["global_rank_of_0"] == 0
    assert (coll[0][1]["solo_rank"], coll[0][1]["solo_size"]) == (-1, -1)
    assert (coll[1][1]["solo_rank"], coll[1][1]["solo_size"]) == (0, 1)
    _check(coll[0][0]["solo_all_reduce"], np.full(2, 1.0, np.float32))   # outside: untouched
    _check(coll[1][0]["solo_all_reduce"], np.full(2, 2.0, np.float32))


# --- DistributedDataParallel ---------------------------------------------------------
@needs_mpi
def test_ddp_matches_single_process(ddp):
    (a0, i0), (a1, _) = ddp
    names = [k[4:] for k in a0 if k.startswith("ddp_") and not k.startswith("ddp_never")
             and not k.startswith("ddp_side")]
    assert len(names) == 4
    for n in names:
        np.testing.assert_allclose(a0["ddp_" + n], a0["ref_" + n], rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(a0["ddp_" + n], a1["ddp_" + n])
    # the constructor broadcast rank 0's parameters over rank 1's (which were shifted)
    np.testing.assert_array_equal(a0["ddp_never.weight"], a1["ddp_never.weight"])
    assert i0["n_buckets"] > 1
    assert i0["state_dict_keys"][:2] == ["module.fc1.weight", "module.fc1.bias"]


@needs_mpi
def test_ddp_launcher_environment(ddp):
    for r, (_, info) in enumerate(ddp):
        assert info["env"] == {"RANK": str(r), "LOCAL_RANK": str(r), "WORLD_SIZE": str(W.W),
                               "LOCAL_WORLD_SIZE": str(W.W), "MASTER_ADDR": "127.0.0.1",
                               "MASTER_PORT": "29500"}


@needs_mpi
def test_ddp_no_sync_accumulates(ddp):
    (a0, i0), (a1, i1) = ddp
    for n in ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"):
        np.testing.assert_allclose(a0["nosync_" + n], a0["nosync_ref_" + n], rtol=1e-5,
                                   atol=1e-7)
        np.testing.assert_array_equal(a0["nosync_" + n], a1["nosync_" + n])
    assert i0["grad_is_bucket_view"] and i1["grad_is_bucket_view"]


@needs_mpi
def test_ddp_find_unused_parameters(ddp):
    (a0, i0), (a1, i1) = ddp
    # `side` is used on rank 0 only: both ranks get rank 0's gradient / world size
    np.testing.assert_allclose(a0["unused_side_grad"], a0["unused_side_ref"], rtol=1e-5)
    np.testing.assert_array_equal(a0["unused_side_grad"], a1["unused_side_grad"])
    assert i0["never_grad_is_none"] and i1["never_grad_is_none"]
    assert i0["buffer_after_forward"] == i1["buffer_after_forward"] == [5.0, 5.0, 5.0]
    for info in (i0, i1):
        assert "find_unused_parameters=True" in info["unused_error"]
        assert "[4, 5, 6, 7]" in info["unused_error"]


# --- faults --------------------------------------------------------------------------
@needs_mpi
def _syncbn_reference():
    """BatchNorm over the whole batch, as the worker's syncbn case sets it up."""
    from ember import nn
    rng = np.random.default_rng(0)
    B = 3
    X = rng.standard_normal((W.W * B, 4, 5)).astype(np.float64) * 2 + 1
    G = rng.standard_normal((W.W * B, 4, 5)).astype(np.float64)
    net = nn.Sequential(nn.Linear(5, 5), nn.BatchNorm1d(4)).double()
    for p in net.parameters():
        p.data.copy_(ember.tensor(rng.standard_normal(tuple(p.shape))))
    ref = {}
    for step in range(2):
        x = ember.tensor(X + step, requires_grad=True)
        (net(x) * ember.tensor(G)).sum().backward()
        ref[f"x_grad{step}"] = x.grad.numpy()
    ref["y"] = net(ember.tensor(X)).detach().numpy()
    ref.update({f"grad_{n}": p.grad.numpy() for n, p in net.named_parameters()})
    ref.update({f"buf_{n}": b.numpy() for n, b in net.named_buffers()})
    net.eval()
    ref["y_eval"] = net(ember.tensor(X)).detach().numpy()
    return ref, B


@needs_mpi
def test_sync_batchnorm_matches_batchnorm_on_the_global_batch(tmp_path_factory):
    ranks = _run_case(tmp_path_factory, "syncbn")
    ref, B = _syncbn_reference()
    assert ranks[0][1]["converted"] == "SyncBatchNorm"
    for r, (arrays, _) in enumerate(ranks):
        mine = slice(r * B, (r + 1) * B)
        for k in ("x_grad0", "x_grad1", "y", "y_eval"):
            np.testing.assert_allclose(arrays[k], ref[k][mine], rtol=1e-10, atol=1e-12,
                                       err_msg=k)
        for k in ref:
            if k.startswith("buf_"):      # running stats of the global batch on every rank
                np.testing.assert_allclose(arrays[k], ref[k], rtol=1e-10, err_msg=k)
    for k in ref:       # parameter gradients are local: their sum over ranks is the global one
        if k.startswith("grad_"):
            np.testing.assert_allclose(sum(a[k] for a, _ in ranks), ref[k], rtol=1e-10,
                                       atol=1e-12, err_msg=k)


def test_mismatch_and_timeout_are_named(tmp_path):
    p, secs = _launch("faults", tmp_path, TORCH_DISTRIBUTED_DEBUG="DETAIL")
    assert p.returncode == 0, p.stdout + p.stderr
    (_, i0), (_, i1) = _results(tmp_path)
    for info in (i0, i1):
        assert "all_reduce" in info["mismatch"] and "rank 1" in info["mismatch"]
        assert "(4,)" in info["mismatch"] and "(3,)" in info["mismatch"]
    for key in ("timeout_detail", "timeout"):
        assert i0[key].startswith("[Rank 0] all_reduce timed out after 2 s")
    assert i0["monitored"] == "Rank 1 failed to pass monitoredBarrier in 1000 ms"


@needs_mpi
def test_killed_rank_ends_the_job(tmp_path):
    p, secs = _launch("kill", tmp_path, timeout=60)
    assert p.returncode != 0
    assert "Killed" in p.stdout + p.stderr or "signal 9" in p.stdout + p.stderr
    assert not os.path.exists(tmp_path / "rank0.json") or \
        "survived" not in json.loads((tmp_path / "rank0.json").read_text())


@needs_mpi
def test_uncaught_exception_aborts_the_job(tmp_path):
    p, secs = _launch("raises", tmp_path, timeout=60)
    assert p.returncode != 0
    err = p.stdout + p.stderr
    assert "rank 1 raised an uncaught exception" in err and "bad batch on purpose" in err
    assert "survived" not in json.loads((tmp_path / "rank0.json").read_text()) \
        if os.path.exists(tmp_path / "rank0.json") else True


# --- one process: API, errors ---------------------------------------------------------
SINGLETON = r"""
import json, os, warnings
import ember, ember.distributed as dist
out = {}
def err(f):
    try:
        f()
    except Exception as e:
        return [type(e).__name__, str(e)]
out["before"] = err(lambda: dist.get_rank())
out["nccl"] = err(lambda: dist.init_process_group("nccl"))
out["bogus"] = err(lambda: dist.init_process_group("bogus"))
out["store"] = err(lambda: dist.init_process_group(store=object()))
out["size"] = err(lambda: dist.init_process_group(world_size=3))
os.environ["WORLD_SIZE"] = "2"
out["env"] = err(lambda: dist.init_process_group())
del os.environ["WORLD_SIZE"]
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    dist.init_process_group("gloo", init_method="env://")
out["gloo_note"] = [str(x.message) for x in w]
out["twice"] = err(lambda: dist.init_process_group())
out["backend"] = dist.get_backend()
out["world"] = [dist.group.WORLD is dist.GroupMember.WORLD is not None,
                dist.get_process_group_ranks(dist.group.WORLD), dist.group.WORLD.size()]
t = ember.tensor([1.0, 2.0])
dist.all_reduce(t, op=dist.ReduceOp.AVG)
out["single"] = t.tolist()
out["cuda"] = err(lambda: dist.all_reduce(ember.empty(2, device="meta")))
out["bad_op"] = err(lambda: dist.all_reduce(ember.ones(2), op=dist.ReduceOp.BAND))
out["int_avg"] = err(lambda: dist.all_reduce(ember.ones(2, dtype=ember.int64),
                                              op=dist.ReduceOp.AVG))
out["not_tensor"] = err(lambda: dist.all_reduce([1.0]))
out["bad_src"] = err(lambda: dist.broadcast(ember.ones(2), src=3))
dist.destroy_process_group()
out["after"] = dist.is_initialized()
print(json.dumps(out))
"""


@needs_mpi
def test_single_process_api_and_errors():
    p = subprocess.run([sys.executable, "-c", SINGLETON], cwd=ROOT, env=_env(), text=True,
                       capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["before"] == ["ValueError", "Default process group has not been initialized, "
                             "please make sure to call init_process_group."]
    assert out["nccl"] == ["RuntimeError", "Distributed package doesn't have NCCL built in"]
    assert out["bogus"] == ["ValueError", "Invalid backend: 'bogus'"]
    assert out["store"][0] == "ValueError"
    assert out["size"][0] == "ValueError" and "world_size=3" in out["size"][1]
    assert out["env"][0] == "RuntimeError" and "ember.distributed.run" in out["env"][1]
    assert len(out["gloo_note"]) == 1 and "served by MPI" in out["gloo_note"][0]
    assert out["twice"] == ["ValueError", "trying to initialize the default process group "
                            "twice!"]
    assert out["backend"] == "gloo"
    assert out["world"] == [True, [0], 1]
    assert out["single"] == [1.0, 2.0]
    assert out["cuda"][0] == "RuntimeError" and "device type meta" in out["cuda"][1]
    assert out["bad_op"][0] == "RuntimeError" and "BAND" in out["bad_op"][1]
    assert out["int_avg"][0] == "RuntimeError" and "AVG" in out["int_avg"][1]
    assert out["not_tensor"][0] == "TypeError"
    assert out["bad_src"][0] == "ValueError" and "Global rank 3" in out["bad_src"][1]
    assert out["after"] is False


def test_availability_and_names():
    assert dist.is_available() is HAVE_MPI4PY
    assert dist.is_nccl_available() is False
    assert dist.is_initialized() is False
    assert dist.Backend("GLOO") == "gloo" and dist.Backend("mpi") == dist.Backend.MPI
    assert dist.get_default_backend_for_device("cpu") == "mpi"
    assert dist.get_default_backend_for_device(ember.device("cpu")) == "mpi"
    with pytest.raises(ValueError, match="device : cuda"):
        dist.get_default_backend_for_device("cuda")
    assert int(dist.ReduceOp.SUM) == 0 and dist.ReduceOp.MAX.name == "MAX"
    with pytest.raises(ValueError, match="not been initialized"):
        dist.get_world_size()
    assert ember.nn.parallel.DistributedDataParallel.__name__ == "DistributedDataParallel"
    assert "mpi4py" not in sys.modules or HAVE_MPI4PY


def test_reduce_op_names_match_torch(torch):
    tdist = torch.distributed
    for name in ("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"):
        assert hasattr(tdist.ReduceOp, name) and hasattr(dist.ReduceOp, name)
    assert dist.Backend("GLOO") == tdist.Backend("GLOO")
    assert dist.Backend("foo") == tdist.Backend("foo")


# --- launcher ------------------------------------------------------------------------
def test_launcher_command(tmp_path, monkeypatch):
    fake = tmp_path / "mpiexec"
    fake.write_text("#!/bin/sh\necho HYDRA build details\n")
    fake.chmod(0o755)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    with pytest.warns(UserWarning, match="OMP_NUM_THREADS is set to 1"):
        cmd = launcher.build_command(["--nproc_per_node", "2", "--master-port", "1234",
                                      "--mpiexec", str(fake), "train.py", "--lr", "0.1"])
    blocks = " ".join(cmd[1:]).split(" : ")
    assert cmd[0] == str(fake) and len(blocks) == 2
    for r, b in enumerate(blocks):
        words = b.split()
        assert words[:2] == ["-n", "1"]
        assert f"-env RANK {r}" in b and f"-env LOCAL_RANK {r}" in b
        assert "-env WORLD_SIZE 2" in b and "-env MASTER_PORT 1234" in b
        assert "-env OMP_NUM_THREADS 1" in b
        assert words[-3:] == ["train.py", "--lr", "0.1"]
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    mod = launcher.build_command(["--mpiexec", str(fake), "-m", "pkg.train"])
    assert "OMP_NUM_THREADS" not in " ".join(mod)
    assert mod[-4:] == [sys.executable, "-u", "-m", "pkg.train"]
    with pytest.raises(SystemExit, match="one node only"):
        launcher.build_command(["--nnodes", "2", "--mpiexec", str(fake), "x.py"])
    with pytest.raises(SystemExit, match="max-restarts"):
        launcher.build_command(["--max-restarts", "3", "--mpiexec", str(fake), "x.py"])


# --- DistributedSampler -----------------------------------------------------------
@pytest.mark.parametrize("n,reps,drop_last", [(10, 3, False), (10, 3, True), (12, 4, False),
                                              (2, 5, False)])
@pytest.mark.parametrize("shuffle", [False, True])
def test_distributed_sampler_partitions(n, reps, drop_last, shuffle):
    parts = [list(DistributedSampler(range(n), reps, r, shuffle=shuffle, seed=7,
                                     drop_last=drop_last)) for r in range(reps)]
    lens = {len(p) for p in parts}
    assert len(lens) == 1 and lens.pop() == len(DistributedSampler(range(n), reps, 0,
                                                                    drop_last=drop_last))
    flat = [i for p in parts for i in p]
    if drop_last:
        assert len(set(flat)) == len(flat) == (n // reps) * reps
    else:
        assert set(flat) == set(range(n)) and len(flat) == -(-n // reps) * reps
    if not shuffle:
        assert parts[0][:2] == [0, reps][:len(parts[0])]


def test_distributed_sampler_epochs():
    s = [DistributedSampler(range(20), 2, r, seed=3) for r in range(2)]
    e0 = [list(x) for x in s]
    for x in s:
        x.set_epoch(1)
    e1 = [list(x) for x in s]
    assert e0 != e1
    assert sorted(e0[0] + e0[1]) == sorted(e1[0] + e1[1]) == list(range(20))
    again = DistributedSampler(range(20), 2, 0, seed=3)
    assert list(again) == e0[0]
    with pytest.raises(ValueError, match="Invalid rank"):
        DistributedSampler(range(4), 2, 2)


@pytest.mark.parametrize("n,reps,drop_last", [(10, 3, False), (10, 3, True), (2, 5, False)])
def test_distributed_sampler_matches_torch_unshuffled(torch, n, reps, drop_last):
    from torch.utils.data import DistributedSampler as TS

    for r in range(reps):
        assert list(DistributedSampler(range(n), reps, r, shuffle=False, drop_last=drop_last)) \
            == list(TS(range(n), reps, r, shuffle=False, drop_last=drop_last))
