"""One rank of the multi-process tests in test_distributed.py (run under mpiexec).

``python _dist_worker.py CASE OUT_DIR``: runs CASE and saves what each rank saw in
OUT_DIR/rank<r>.npz (tensors) and OUT_DIR/rank<r>.json (everything else); the
test process checks them against NumPy. The inputs are made by ``make_input``,
which the test imports to compute the expected values."""
from __future__ import annotations

import json
import os
import sys
from datetime import timedelta

import numpy as np

W = 2
SHAPE = (3, 4)
DTYPES = ("float32", "float64", "int64")


def make_input(rank: int, dtype: str, shape: tuple = SHAPE) -> np.ndarray:
    """Small positive values (products stay exact), different on each rank."""
    n = int(np.prod(shape))
    return ((np.arange(n).reshape(shape) % 5) + 1 + rank).astype(
        "float32" if dtype in ("bfloat16", "float16") else dtype)


def _tensor(ember, a: np.ndarray, dtype: str, contiguous: bool = True):
    dt = getattr(ember, dtype)
    if contiguous:
        return ember.tensor(a).to(dt)
    big = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), dtype=a.dtype)
    big[..., ::2] = a
    t = ember.tensor(big).to(dt)[..., ::2]
    assert not t.is_contiguous()
    return t


def _np(t):
    import ember

    if t.dtype in (ember.bfloat16, ember.float16):
        t = t.float()
    return t.detach().numpy().copy()


def collectives(ember, dist, r, arrays, info):
    R = dist.ReduceOp
    info["rank"], info["size"] = dist.get_rank(), dist.get_world_size()
    info["backend"] = dist.get_backend()
    info["initialized"] = dist.is_initialized()
    for dt in DTYPES:
        for contig in (True, False):
            tag = f"{dt}_{'c' if contig else 'nc'}"
            ops = ["SUM", "PRODUCT", "MIN", "MAX"] + (["AVG"] if dt != "int64" else [])
            for op in ops:
                t = _tensor(ember, make_input(r, dt), dt, contig)
                dist.all_reduce(t, op=getattr(R, op))
                arrays[f"all_reduce_{op}_{tag}"] = _np(t)
            t = _tensor(ember, make_input(r, dt), dt, contig)
            dist.broadcast(t, src=1)
            arrays[f"broadcast_{tag}"] = _np(t)
            t = _tensor(ember, make_input(r, dt), dt, contig)
            dist.reduce(t, dst=1, op=R.SUM)
            arrays[f"reduce_{tag}"] = _np(t)
            outs = [_tensor(ember, np.zeros(SHAPE, dt), dt, contig) for _ in range(W)]
            dist.all_gather(outs, _tensor(ember, make_input(r, dt), dt, contig))
            arrays[f"all_gather_{tag}"] = np.stack([_np(o) for o in outs])
            out = ember.empty((W * SHAPE[0], SHAPE[1]), dtype=getattr(ember, dt))
            dist.all_gather_into_tensor(out, _tensor(ember, make_input(r, dt), dt, contig))
            arrays[f"all_gather_into_tensor_{tag}"] = _np(out)
            out = _tensor(ember, np.zeros(SHAPE, dt), dt, contig)
            ins = [_tensor(ember, make_input(r, dt) * (i + 1), dt, contig) for i in range(W)]
            dist.reduce_scatter(out, ins)
            arrays[f"reduce_scatter_{tag}"] = _np(out)
            out = _tensor(ember, np.zeros((1, SHAPE[1]), dt), dt, contig)
            dist.reduce_scatter_tensor(out, _tensor(ember, make_input(r, dt, (W, SHAPE[1])), dt,
                                                    contig))
            arrays[f"reduce_scatter_tensor_{tag}"] = _np(out)
            gl = [_tensor(ember, np.zeros(SHAPE, dt), dt, contig) for _ in range(W)] \
                if r == 0 else None
            dist.gather(_tensor(ember, make_input(r, dt), dt, contig), gl, dst=0)
            if r == 0:
                arrays[f"gather_{tag}"] = np.stack([_np(o) for o in gl])
            t = _tensor(ember, np.zeros(SHAPE, dt), dt, contig)
            sl = [_tensor(ember, make_input(i, dt) * 10, dt, contig) for i in range(W)] \
                if r == 1 else None
            dist.scatter(t, sl, src=1)
            arrays[f"scatter_{tag}"] = _np(t)
            out = _tensor(ember, np.zeros((2 * W, 2), dt), dt, contig)
            dist.all_to_all_single(out, _tensor(ember, make_input(r, dt, (2 * W, 2)), dt,
                                                contig))
            arrays[f"all_to_all_single_{tag}"] = _np(out)
    # bitwise ops, and dtypes MPI has no arithmetic for
    for op in ("BAND", "BOR", "BXOR"):
        t = ember.tensor(make_input(r, "int64") * 3)
        dist.all_reduce(t, op=getattr(R, op))
        arrays[f"all_reduce_{op}_int64"] = _np(t)
    for dt in ("bfloat16", "float16"):
        for op in ("SUM", "MAX", "AVG"):
            t = ember.tensor(make_input(r, dt)).to(getattr(ember, dt))
            dist.all_reduce(t, op=getattr(R, op))
            arrays[f"all_reduce_{op}_{dt}"] = _np(t)
        t = ember.tensor(make_input(r, dt)).to(getattr(ember, dt))
        dist.broadcast(t, src=1)
        arrays[f"broadcast_{dt}"] = _np(t)
    for op in ("SUM", "MIN"):
        t = ember.tensor([True, r == 0, False, True])
        dist.all_reduce(t, op=getattr(R, op))
        arrays[f"all_reduce_{op}_bool"] = _np(t)
    # uneven all_to_all_single: rank r sends r + 1 rows to each rank
    rows_in = [r + 1] * W
    rows_out = [i + 1 for i in range(W)]
    out = ember.empty((sum(rows_out), 3))
    inp = ember.tensor(make_input(r, "float32", (sum(rows_in), 3)))
    dist.all_to_all_single(out, inp, output_split_sizes=rows_out, input_split_sizes=rows_in)
    arrays["all_to_all_single_uneven"] = _np(out)
    outs = [ember.empty(i + 2) for i in range(W)]
    dist.all_to_all(outs, [ember.full((r + 2,), float(10 * r + i)) for i in range(W)])
    info["all_to_all"] = [o.tolist() for o in outs]
    # point to point
    if r == 0:
        dist.send(ember.arange(5.0), dst=1)
        w = dist.isend(ember.arange(3, dtype=ember.int64) * 7, dst=1, tag=3)
        w.wait()
    else:
        t = ember.zeros(5)
        info["recv_src"] = dist.recv(t, src=0)
        arrays["recv"] = _np(t)
        t = ember.zeros(3, dtype=ember.int64)
        w = dist.irecv(t, tag=3)
        info["irecv_wait"] = w.wait()
        info["irecv_src"] = w._source_rank()
        arrays["irecv"] = _np(t)
    # async collectives
    t = ember.tensor(make_input(r, "float32"))
    w = dist.all_reduce(t, async_op=True)
    info["work_wait"] = w.wait()
    info["work_completed"] = w.is_completed()
    arrays["async_all_reduce"] = _np(t)
    t = _tensor(ember, make_input(r, "float64"), "float64", False)
    w = dist.all_reduce(t, op=dist.ReduceOp.MAX, async_op=True)
    while not w.is_completed():
        pass
    arrays["async_poll_nc"] = _np(t)
    info["work_result_is_input"] = w.result()[0] is t
    # a dropped Work stays registered (its buffers alive) until it completes
    out = ember.empty(SHAPE[1], W * SHAPE[0]).t()
    dist.all_gather_into_tensor(out, ember.tensor(make_input(r, "float32")), async_op=True)
    from ember.distributed import _work
    info["dropped_registered"] = len(_work._pending) == 1
    while _work._pending:
        for w in list(_work._pending):
            w.is_completed()
    arrays["dropped_work"] = _np(out)
    # autograd leaves take part without autograd complaining
    p = ember.tensor(make_input(r, "float64"), requires_grad=True)
    dist.all_reduce(p)
    arrays["all_reduce_requires_grad"] = _np(p)
    # Python objects
    objs = [{"from": r}, f"s{r}", r * 1.5]
    dist.broadcast_object_list(objs, src=1)
    info["broadcast_object_list"] = objs
    gathered = [None] * W
    dist.all_gather_object(gathered, {"rank": r, "list": list(range(r + 2))})
    info["all_gather_object"] = gathered
    gl = [None] * W if r == 0 else None
    dist.gather_object(("g", r), gl, dst=0)
    info["gather_object"] = gl
    out = [None]
    dist.scatter_object_list(out, [f"to{i}" for i in range(W)] if r == 1 else None, src=1)
    info["scatter_object_list"] = out[0]
    # subgroups: rank 1 alone, and both ranks in reversed order of creation
    solo = dist.new_group([1])
    info["solo_rank"], info["solo_size"] = solo.rank(), solo.size()
    t = ember.full((2,), float(r + 1))
    dist.all_reduce(t, group=solo)          # rank 0 is outside: its tensor is untouched
    arrays["solo_all_reduce"] = _np(t)
    both = dist.new_group([1, 0], timeout=timedelta(seconds=60))
    info["both_ranks"] = dist.get_process_group_ranks(both)
    info["both_group_rank_of_1"] = dist.get_group_rank(both, 1)
    t = ember.full((2,), float(r + 1))
    dist.broadcast(t, group=both, group_src=1)
    arrays["group_src_broadcast"] = _np(t)
    local = dist.new_group([0, 1], use_local_synchronization=True)
    t = ember.full((2,), float(r + 1))
    dist.all_reduce(t, group=local, op=dist.ReduceOp.PRODUCT)
    arrays["local_sync_group"] = _np(t)
    info["global_rank_of_0"] = dist.get_global_rank(both, 0)
    dist.destroy_process_group(solo)
    dist.monitored_barrier(timeout=timedelta(seconds=60))
    dist.barrier()


def _mlp(ember, nn, seed=0, extra=False):
    ember.manual_seed(seed)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(5, 16)
            self.fc2 = nn.Linear(16, 3)
            self.side = nn.Linear(5, 3)     # used only when asked
            self.never = nn.Linear(2, 2)    # never used
            self.extra = extra

        def forward(self, x, use_side=False):
            y = self.fc2(ember.tanh(self.fc1(x)))
            return y + self.side(x) if use_side else y

    return Net()


def ddp(ember, dist, r, arrays, info):
    from ember import nn
    from ember.nn.parallel import DistributedDataParallel as DDP

    info["env"] = {k: os.environ.get(k) for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE",
                                                  "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                                                  "MASTER_PORT")}
    rng = np.random.default_rng(0)
    steps, B = 20, 4
    X = ember.tensor(rng.standard_normal((steps, W * B, 5)).astype(np.float32))
    Y = ember.tensor(rng.standard_normal((steps, W * B, 3)).astype(np.float32))

    def train(model, ranks_batch, use_side=False):
        opt = ember.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1,
                              momentum=0.9)
        for s in range(steps):
            opt.zero_grad()
            x, y = X[s][ranks_batch], Y[s][ranks_batch]
            loss = ((model(x, use_side=use_side) - y) ** 2).mean()
            loss.backward()
            opt.step()

    mine = slice(r * B, (r + 1) * B)
    net = _mlp(ember, nn)
    net.never.requires_grad_(False)
    net.side.requires_grad_(False)
    if r == 1:      # construction must overwrite rank 1's parameters with rank 0's
        with ember.no_grad():
            for p in net.parameters():
                p.add_(1.0)
    model = DDP(net, bucket_cap_mb=16 * 4 / 2**20)   # several buckets
    info["n_buckets"] = len(model._buckets)
    info["state_dict_keys"] = list(model.state_dict())
    train(model, mine)
    for name, p in net.named_parameters():
        arrays[f"ddp_{name}"] = _np(p)
    if r == 0:
        ref = _mlp(ember, nn)
        train(ref, slice(0, W * B))
        for name, p in ref.named_parameters():
            arrays[f"ref_{name}"] = _np(p)

    # no_sync: two local micro-batches, then a synced one
    net = _mlp(ember, nn)
    net.never.requires_grad_(False)
    net.side.requires_grad_(False)
    model = DDP(net, gradient_as_bucket_view=True)
    micro = [slice(r * B + 2 * k, r * B + 2 * k + 2) for k in range(2)]
    with model.no_sync():
        ((model(X[0][micro[0]]) - Y[0][micro[0]]) ** 2).mean().backward()
    info["no_sync_local_grad_is_local"] = True
    ((model(X[0][micro[1]]) - Y[0][micro[1]]) ** 2).mean().backward()
    info["grad_is_bucket_view"] = all(
        any(b.flat.data_ptr() <= p.grad.data_ptr() < b.flat.data_ptr() + b.flat.nbytes
            for b in model._buckets)
        for p in net.parameters() if p.requires_grad)
    for name, p in net.named_parameters():
        if p.requires_grad:
            arrays[f"nosync_{name}"] = _np(p.grad)
    if r == 0:
        ref = _mlp(ember, nn)
        for rr in range(W):
            for k in range(2):
                sl = slice(rr * B + 2 * k, rr * B + 2 * k + 2)
                ((ref(X[0][sl]) - Y[0][sl]) ** 2).mean().backward()
        for name, p in ref.named_parameters():
            if p.grad is not None and name.split(".")[0] in ("fc1", "fc2"):
                arrays[f"nosync_ref_{name}"] = _np(p.grad) / W

    # find_unused_parameters: `side` is used on rank 0 only, `never` on no rank
    net = _mlp(ember, nn)
    model = DDP(net, find_unused_parameters=True)
    loss = ((model(X[0][mine], use_side=(r == 0)) - Y[0][mine]) ** 2).mean()
    loss.backward()
    info["never_grad_is_none"] = net.never.weight.grad is None
    arrays["unused_side_grad"] = _np(net.side.weight.grad)
    if r == 0:
        ref = _mlp(ember, nn)
        ((ref(X[0][mine], use_side=True) - Y[0][mine]) ** 2).mean().backward()
        arrays["unused_side_ref"] = _np(ref.side.weight.grad) / W

    # buffers: rank 0's are broadcast before each forward
    net = _mlp(ember, nn)
    net.register_buffer("stat", ember.zeros(3))
    model = DDP(net)
    net.stat.fill_(float(r + 5))
    with ember.no_grad():
        model(X[0][mine])
    info["buffer_after_forward"] = net.stat.tolist()

    # without find_unused_parameters an unused parameter is reported at the next forward
    net = _mlp(ember, nn)
    model = DDP(net)
    ((model(X[0][mine]) - Y[0][mine]) ** 2).mean().backward()
    try:
        model(X[0][mine])
        info["unused_error"] = None
    except RuntimeError as e:
        info["unused_error"] = str(e)


def syncbn(ember, dist, r, arrays, info):
    """SyncBatchNorm over the two ranks' halves of a batch, and on rank 0 BatchNorm over
    the whole batch (the reference)."""
    from ember import nn

    rng = np.random.default_rng(0)
    B = 3
    X = rng.standard_normal((W * B, 4, 5)).astype(np.float64) * 2 + 1
    G = rng.standard_normal((W * B, 4, 5)).astype(np.float64)
    mine = slice(r * B, (r + 1) * B)
    net = nn.Sequential(nn.Linear(5, 5), nn.BatchNorm1d(4)).double()
    ember.manual_seed(0)
    for p in net.parameters():
        p.data.copy_(ember.tensor(rng.standard_normal(tuple(p.shape))))
    sync = nn.SyncBatchNorm.convert_sync_batchnorm(net)
    info["converted"] = type(sync[1]).__name__
    for step in range(2):
        x = ember.tensor(X[mine] + step, requires_grad=True)
        (sync(x) * ember.tensor(G[mine])).sum().backward()
        arrays[f"x_grad{step}"] = _np(x.grad)
    arrays["y"] = _np(sync(ember.tensor(X[mine])))
    for name, p in sync.named_parameters():
        arrays[f"grad_{name}"] = _np(p.grad)
    for name, b in sync.named_buffers():
        arrays[f"buf_{name}"] = _np(b)
    sync.eval()
    arrays["y_eval"] = _np(sync(ember.tensor(X[mine])))


def faults(ember, dist, r, arrays, info):
    # a shape mismatch, caught by TORCH_DISTRIBUTED_DEBUG=DETAIL and named on every rank
    try:
        dist.all_reduce(ember.ones(3 + r))
        info["mismatch"] = None
    except RuntimeError as e:
        info["mismatch"] = str(e)
    # rank 1 never joins this all_reduce: rank 0 gives up after the group's timeout,
    # both with the debug check's object exchange and (debug off) in the reduction itself
    if r == 0:
        for key in ("timeout_detail", "timeout"):
            try:
                dist.all_reduce(ember.ones(4))
                info[key] = None
            except RuntimeError as e:
                info[key] = str(e)
            dist.process_group._state.debug_detail = False
        try:    # rank 1 does not come either: it is named
            dist.monitored_barrier(timeout=timedelta(seconds=1))
            info["monitored"] = None
        except RuntimeError as e:
            info["monitored"] = str(e)
        dist.send(ember.ones(1), dst=1)     # now rank 1 may leave
    else:
        dist.irecv(ember.ones(1), src=0).wait(timeout=60)


def kill(ember, dist, r, arrays, info):
    import signal

    from ember import nn
    from ember.nn.parallel import DistributedDataParallel as DDP

    net = _mlp(ember, nn)
    net.side.requires_grad_(False)
    net.never.requires_grad_(False)
    model = DDP(net)
    for step in range(50):
        if r == 1 and step == 3:
            os.kill(os.getpid(), signal.SIGKILL)
        model(ember.ones(4, 5)).sum().backward()
    info["survived"] = True


def raises(ember, dist, r, arrays, info):
    for step in range(50):
        if r == 1 and step == 3:
            raise ValueError("bad batch on purpose")
        dist.all_reduce(ember.ones(4))
    info["survived"] = True


def main() -> None:
    case, out_dir = sys.argv[1], sys.argv[2]
    import ember
    import ember.distributed as dist

    timeout = timedelta(seconds=2) if case == "faults" else timedelta(seconds=60)
    dist.init_process_group("mpi", timeout=timeout)
    r = dist.get_rank()
    arrays, info = {}, {}
    try:
        globals()[case](ember, dist, r, arrays, info)
    finally:
        np.savez(os.path.join(out_dir, f"rank{r}.npz"), **arrays)
        with open(os.path.join(out_dir, f"rank{r}.json"), "w") as f:
            json.dump(info, f)
    if case == "faults":
        # rank 0 left a request pending, so both leave without MPI_Finalize; rank 0 first
        # waits until rank 1 has written its results, so the launcher, which ends the job
        # when one rank exits unfinalised, never stops rank 1 mid-write
        if r == 1:
            dist.send(ember.ones(1), dst=0)
        else:
            dist.irecv(ember.ones(1), src=1).wait(timeout=60)
        sys.stdout.flush()
        os._exit(0)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
