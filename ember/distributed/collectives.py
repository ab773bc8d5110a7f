"""Collectives and point-to-point messages on ember tensors, over MPI.

MPI reads and writes the tensors' own memory (mpi4py takes them through DLPack,
no copy). A copy is made only where MPI cannot work in place: a non-contiguous
tensor (reduced in a contiguous copy, copied back), bfloat16 reductions (MPI has
no bfloat16: they run in float32) and list arguments (packed into one buffer).
Every call posts a nonblocking MPI request; ``async_op=True`` returns it as a
:class:`Work`, otherwise it is waited on (with the group's timeout)."""
from __future__ import annotations

import pickle
import warnings
from array import array
from typing import Any, Callable, Optional

import ember
from ember._check import _check_type, _check_value, _expected
from ember.distributed._work import Work, _seconds, wait_requests
from ember.distributed.process_group import ProcessGroup, ReduceOp, _mpi, _resolve, _state

__all__ = ["all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor",
           "reduce_scatter", "reduce_scatter_tensor", "gather", "scatter", "all_to_all",
           "all_to_all_single", "send", "recv", "isend", "irecv", "barrier",
           "monitored_barrier", "broadcast_object_list", "all_gather_object", "gather_object",
           "scatter_object_list"]

_R = ReduceOp.RedOpType
_FLOAT_OPS = {_R.SUM: "SUM", _R.AVG: "SUM", _R.PRODUCT: "PROD", _R.MIN: "MIN", _R.MAX: "MAX",
              _R.BAND: "BAND", _R.BOR: "BOR", _R.BXOR: "BXOR"}
# MPI reduces C booleans only with logical ops: sum/max are "any", product/min "all"
_BOOL_OPS = {_R.SUM: "LOR", _R.MAX: "LOR", _R.BOR: "LOR", _R.PRODUCT: "LAND", _R.MIN: "LAND",
             _R.BAND: "LAND", _R.BXOR: "LXOR"}


# --- argument handling ---------------------------------------------------------
def _group(group: Optional[ProcessGroup], op: str) -> Optional[ProcessGroup]:
    """The group to run ``op`` on, or None (with torch's warning) outside it."""
    pg = _resolve(group)
    if pg._comm is None:
        warnings.warn(f"Running {op} on global rank {_state.default._comm.Get_rank()} which does "
                      f"not belong to the given group.", stacklevel=3)
        return None
    return pg


def _tensor(t: Any, op: str, arg: str = "tensor") -> Any:
    """``t`` checked (a CPU tensor) and detached: collectives bypass autograd."""
    if not isinstance(t, ember.Tensor):
        raise TypeError(f"{op}(): Invalid function argument. Expected parameter `{arg}` of type "
                        f"ember.Tensor but got {type(t)} instead.")
    if t.device.type != "cpu":
        raise RuntimeError(f"{op}(): No backend type associated with device type "
                           f"{t.device.type}")
    return t.detach() if t.requires_grad else t


def _tensor_list(ts: Any, op: str, arg: str, n: int, like: Any) -> list:
    _check_type(isinstance(ts, (list, tuple)),
                lambda: _expected(op, arg, "a list of tensors", type(ts).__name__))
    _check_value(len(ts) == n, lambda: f"{op}(): argument '{arg}' must hold one tensor per rank "
                                      f"({n}), got {len(ts)}")
    out = [_tensor(t, op, arg) for t in ts]
    for t in out:
        _same(t, like, op, arg)
    return out


def _same(t: Any, like: Any, op: str, arg: str) -> None:
    _check_type(t.dtype is like.dtype,
                lambda: f"{op}(): tensors in '{arg}' must have dtype {like.dtype}, got {t.dtype}")
    _check_value(t.numel() == like.numel(),
                 lambda: f"{op}(): tensors in '{arg}' must have {like.numel()} elements (shape "
                         f"{tuple(like.shape)}), got shape {tuple(t.shape)}")


def _root(pg: ProcessGroup, rank: Optional[int], group_rank: Optional[int], op: str,
          arg: str) -> int:
    """The group rank of a root given as a global ``rank`` or as ``group_rank``."""
    if group_rank is not None:
        _check_value(rank is None, lambda: f"{op}(): give only one of {arg} and group_{arg}")
        _check_value(isinstance(group_rank, int) and 0 <= group_rank < pg.size(),
                     lambda: f"{op}(): group_{arg}={group_rank!r} is not a rank of the group "
                             f"(size {pg.size()})")
        return group_rank
    return pg._local(0 if rank is None else rank, op, arg)


def _raw(t: Any) -> Any:
    """What MPI is given for a contiguous tensor: itself (bfloat16 as int16 bits)."""
    return t.view(ember.int16) if t.dtype is ember.bfloat16 else t


def _contig(t: Any) -> Any:
    return t if t.is_contiguous() else t.contiguous()


def _mpi_op(op: Any, dtype: Any, name: str) -> Any:
    try:
        op = _R(op)
    except ValueError:
        raise ValueError(f"{name}(): op must be a ReduceOp, got {op!r}") from None
    MPI = _mpi()
    if dtype is ember.bool:
        _check_value(op in _BOOL_OPS, lambda: f"{name}(): ReduceOp.{op.name} is not defined for "
                                              f"bool tensors")
        return getattr(MPI, _BOOL_OPS[op])
    floating = dtype.is_floating_point
    if op in (_R.BAND, _R.BOR, _R.BXOR) and floating:
        raise RuntimeError(f"{name}(): ReduceOp.{op.name} needs an integer or bool tensor, got "
                           f"{dtype}")
    if op is _R.AVG and not floating:
        raise RuntimeError(f"{name}(): ReduceOp.AVG needs a floating-point tensor, got {dtype}")
    return getattr(MPI, _FLOAT_OPS[op])


def _reduce_in(t: Any) -> Any:
    """The buffer MPI reduces from: contiguous, bfloat16 widened to float32."""
    return t.float() if t.dtype is ember.bfloat16 else _contig(t)


def _reduce_out(t: Any, op: Any, pg: ProcessGroup) -> tuple:
    """(buffer, finish): MPI reduces into ``buffer``; ``finish()`` then leaves the
    result in ``t`` (divided by the group size for AVG)."""
    buf = _reduce_in(t)
    avg = op == _R.AVG
    if buf is t and not avg:
        return buf, None

    def finish():
        if avg:
            buf.div_(pg.size())
        if buf is not t:
            t.copy_(buf)
    return buf, finish


def _moved(t: Any) -> tuple:
    """(contiguous buffer, finish copying it back into ``t`` when it is a copy)."""
    c = _contig(t)
    return c, (None if c is t else (lambda: t.copy_(c)))


def _debug_check(pg: ProcessGroup, op: str, *tensors: Any) -> None:
    """With TORCH_DISTRIBUTED_DEBUG=DETAIL, every rank's call is compared first:
    a different collective, shape or dtype on any rank is an error naming it."""
    if not _state.debug_detail:
        return
    mine = (op, [(tuple(t.shape), str(t.dtype)) for t in tensors])
    every = _all_gather_objects(pg, mine, op)
    bad = [i for i, s in enumerate(every) if s != every[0]]
    if bad:
        desc = "; ".join(f"rank {pg._global(i)} called {s[0]} with (shape, dtype) {s[1]}"
                         for i, s in enumerate(every))
        raise RuntimeError(f"{op}(): the ranks of group {pg._desc} disagree: {desc} "
                           f"(mismatch on rank(s) {[pg._global(i) for i in bad]})")


def _post(pg: ProcessGroup, op: str, start: Callable[[], list], async_op: bool,
          finish: Optional[Callable[[], None]] = None, keep: tuple = (), result: tuple = (),
          status: Any = None) -> Optional[Work]:
    MPI = _mpi()
    try:
        reqs = start()
    except MPI.Exception as e:
        raise RuntimeError(f"{op}(): MPI error: {e.Get_error_string()}") from None
    work = Work(reqs, op, pg, finish, keep, result, status)
    if async_op:
        return work
    work.wait()
    return None


# --- reductions ------------------------------------------------------------------
def all_reduce(tensor: Any, op: Any = ReduceOp.SUM, group: Optional[ProcessGroup] = None,
               async_op: bool = False) -> Optional[Work]:
    """Reduce ``tensor`` across the group, in place, on every rank.

    Parameters
    ----------
    tensor : Tensor
        Input and output; the same shape and dtype on every rank.
    op : ReduceOp
        ``SUM`` (default), ``AVG``, ``PRODUCT``, ``MIN``, ``MAX``, ``BAND``,
        ``BOR``, ``BXOR``.
    group : ProcessGroup, optional
        The default group when omitted.
    async_op : bool
        Return a :class:`Work` instead of waiting.

    Returns
    -------
    Work or None
    """
    pg = _group(group, "all_reduce")
    if pg is None:
        return None
    t = _tensor(tensor, "all_reduce")
    mop = _mpi_op(op, t.dtype, "all_reduce")
    _debug_check(pg, "all_reduce", t)
    buf, finish = _reduce_out(t, op, pg)
    MPI = _mpi()
    return _post(pg, "all_reduce", lambda: [pg._comm.Iallreduce(MPI.IN_PLACE, buf, mop)],
                 async_op, finish, (buf,), (tensor,))


def reduce(tensor: Any, dst: Optional[int] = None, op: Any = ReduceOp.SUM,
           group: Optional[ProcessGroup] = None, async_op: bool = False,
           group_dst: Optional[int] = None) -> Optional[Work]:
    """Reduce ``tensor`` across the group into ``tensor`` on rank ``dst`` only.

    ``dst`` is a global rank (``group_dst`` a rank in ``group``); the other
    ranks' tensors are left unchanged.
    """
    pg = _group(group, "reduce")
    if pg is None:
        return None
    t = _tensor(tensor, "reduce")
    root = _root(pg, dst, group_dst, "reduce", "dst")
    mop = _mpi_op(op, t.dtype, "reduce")
    _debug_check(pg, "reduce", t)
    MPI = _mpi()
    if pg.rank() == root:
        buf, finish = _reduce_out(t, op, pg)
        return _post(pg, "reduce", lambda: [pg._comm.Ireduce(MPI.IN_PLACE, buf, mop, root)],
                     async_op, finish, (buf,), (tensor,))
    src = _reduce_in(t)
    return _post(pg, "reduce", lambda: [pg._comm.Ireduce(src, None, mop, root)], async_op,
                 None, (src,), (tensor,))


def reduce_scatter(output: Any, input_list: list, op: Any = ReduceOp.SUM,
                   group: Optional[ProcessGroup] = None, async_op: bool = False) -> Optional[Work]:
    """Reduce ``input_list[i]`` across the group into ``output`` on group rank ``i``."""
    pg = _group(group, "reduce_scatter")
    if pg is None:
        return None
    out = _tensor(output, "reduce_scatter", "output")
    ins = _tensor_list(input_list, "reduce_scatter", "input_list", pg.size(), out)
    mop = _mpi_op(op, out.dtype, "reduce_scatter")
    _debug_check(pg, "reduce_scatter", out, *ins)
    flat = ember.cat([x.reshape(-1) for x in ins])
    flat = _reduce_in(flat)
    buf, finish = _reduce_out(out, op, pg)
    return _post(pg, "reduce_scatter",
                 lambda: [pg._comm.Ireduce_scatter_block(flat, buf, mop)], async_op, finish,
                 (flat, buf), (output,))


def reduce_scatter_tensor(output: Any, input: Any, op: Any = ReduceOp.SUM,
                          group: Optional[ProcessGroup] = None,
                          async_op: bool = False) -> Optional[Work]:
    """Reduce ``input`` (group size x ``output``'s elements, rank-major) across the
    group; group rank ``i`` gets chunk ``i`` of the result in ``output``."""
    pg = _group(group, "reduce_scatter_tensor")
    if pg is None:
        return None
    out = _tensor(output, "reduce_scatter_tensor", "output")
    inp = _tensor(input, "reduce_scatter_tensor", "input")
    _check_type(inp.dtype is out.dtype, lambda: f"reduce_scatter_tensor(): input dtype "
                                                f"{inp.dtype} and output dtype {out.dtype} differ")
    _check_value(inp.numel() == out.numel() * pg.size(),
                 lambda: f"reduce_scatter_tensor(): input must have group size ({pg.size()}) "
                         f"times the output's {out.numel()} elements, got {inp.numel()}")
    mop = _mpi_op(op, out.dtype, "reduce_scatter_tensor")
    _debug_check(pg, "reduce_scatter_tensor", out, inp)
    src = _reduce_in(inp)
    buf, finish = _reduce_out(out, op, pg)
    return _post(pg, "reduce_scatter_tensor",
                 lambda: [pg._comm.Ireduce_scatter_block(src, buf, mop)], async_op, finish,
                 (src, buf), (output,))


# --- data movement ----------------------------------------------------------------
def broadcast(tensor: Any, src: Optional[int] = None, group: Optional[ProcessGroup] = None,
              async_op: bool = False, group_src: Optional[int] = None) -> Optional[Work]:
    """Copy ``tensor`` from rank ``src`` (global; ``group_src`` in the group) into
    ``tensor`` on every other rank."""
    pg = _group(group, "broadcast")
    if pg is None:
        return None
    t = _tensor(tensor, "broadcast")
    root = _root(pg, src, group_src, "broadcast", "src")
    _debug_check(pg, "broadcast", t)
    buf, finish = _moved(t)
    return _post(pg, "broadcast", lambda: [pg._comm.Ibcast(_raw(buf), root)], async_op,
                 finish, (buf,), (tensor,))


def all_gather(tensor_list: list, tensor: Any, group: Optional[ProcessGroup] = None,
               async_op: bool = False) -> Optional[Work]:
    """Gather every rank's ``tensor`` into ``tensor_list`` (one per group rank)."""
    pg = _group(group, "all_gather")
    if pg is None:
        return None
    t = _tensor(tensor, "all_gather")
    outs = _tensor_list(tensor_list, "all_gather", "tensor_list", pg.size(), t)
    _debug_check(pg, "all_gather", t)
    src = _contig(t)
    tmp = ember.empty((pg.size(),) + tuple(t.shape), dtype=t.dtype)

    def finish():
        for i, o in enumerate(outs):
            o.copy_(tmp[i].view(o.shape))
    return _post(pg, "all_gather", lambda: [pg._comm.Iallgather(_raw(src), _raw(tmp))],
                 async_op, finish, (src, tmp), tuple(tensor_list))


def all_gather_into_tensor(output_tensor: Any, input_tensor: Any,
                           group: Optional[ProcessGroup] = None,
                           async_op: bool = False) -> Optional[Work]:
    """Gather every rank's ``input_tensor`` into ``output_tensor``, rank-major
    (``output_tensor`` holds group size x ``input_tensor``'s elements: concatenated
    along dim 0 or stacked)."""
    pg = _group(group, "all_gather_into_tensor")
    if pg is None:
        return None
    out = _tensor(output_tensor, "all_gather_into_tensor", "output_tensor")
    inp = _tensor(input_tensor, "all_gather_into_tensor", "input_tensor")
    _check_type(inp.dtype is out.dtype, lambda: f"all_gather_into_tensor(): input dtype "
                                                f"{inp.dtype} and output dtype {out.dtype} differ")
    _check_value(out.numel() == inp.numel() * pg.size(),
                 lambda: f"all_gather_into_tensor(): output must have group size ({pg.size()}) "
                         f"times the input's {inp.numel()} elements, got {out.numel()}")
    _debug_check(pg, "all_gather_into_tensor", inp, out)
    src = _contig(inp)
    buf, finish = _moved(out)
    return _post(pg, "all_gather_into_tensor",
                 lambda: [pg._comm.Iallgather(_raw(src), _raw(buf))], async_op, finish,
                 (src, buf), (output_tensor,))


def gather(tensor: Any, gather_list: Optional[list] = None, dst: Optional[int] = None,
           group: Optional[ProcessGroup] = None, async_op: bool = False,
           group_dst: Optional[int] = None) -> Optional[Work]:
    """Gather every rank's ``tensor`` into ``gather_list`` on rank ``dst`` (which
    alone passes ``gather_list``)."""
    pg = _group(group, "gather")
    if pg is None:
        return None
    t = _tensor(tensor, "gather")
    root = _root(pg, dst, group_dst, "gather", "dst")
    _debug_check(pg, "gather", t)
    src = _contig(t)
    if pg.rank() != root:
        _check_value(not gather_list, "gather(): Argument ``gather_list`` must NOT be specified "
                                      "on non-destination ranks.")
        return _post(pg, "gather", lambda: [pg._comm.Igather(_raw(src), None, root)],
                     async_op, None, (src,))
    outs = _tensor_list(gather_list, "gather", "gather_list", pg.size(), t)
    tmp = ember.empty((pg.size(),) + tuple(t.shape), dtype=t.dtype)

    def finish():
        for i, o in enumerate(outs):
            o.copy_(tmp[i].view(o.shape))
    return _post(pg, "gather", lambda: [pg._comm.Igather(_raw(src), _raw(tmp), root)],
                 async_op, finish, (src, tmp), tuple(gather_list))


def scatter(tensor: Any, scatter_list: Optional[list] = None, src: Optional[int] = None,
            group: Optional[ProcessGroup] = None, async_op: bool = False,
            group_src: Optional[int] = None) -> Optional[Work]:
    """Send ``scatter_list[i]`` from rank ``src`` into ``tensor`` on group rank ``i``
    (only ``src`` passes ``scatter_list``)."""
    pg = _group(group, "scatter")
    if pg is None:
        return None
    t = _tensor(tensor, "scatter")
    root = _root(pg, src, group_src, "scatter", "src")
    _debug_check(pg, "scatter", t)
    buf, finish = _moved(t)
    if pg.rank() != root:
        _check_value(not scatter_list, "scatter(): Argument ``scatter_list`` must NOT be "
                                       "specified on non-source ranks.")
        return _post(pg, "scatter", lambda: [pg._comm.Iscatter(None, _raw(buf), root)],
                     async_op, finish, (buf,), (tensor,))
    ins = _tensor_list(scatter_list, "scatter", "scatter_list", pg.size(), t)
    flat = ember.cat([x.reshape(-1) for x in ins])
    return _post(pg, "scatter", lambda: [pg._comm.Iscatter(_raw(flat), _raw(buf), root)],
                 async_op, finish, (flat, buf), (tensor,))


def _splits(sizes: Optional[list], t: Any, n: int, op: str, arg: str) -> tuple:
    """(counts, displacements) in elements for splitting ``t`` along dim 0."""
    _check_value(t.dim() >= 1, lambda: f"{op}(): '{arg}' tensors need at least one dimension")
    rows = t.shape[0]
    row = t.numel() // rows if rows else 0
    if sizes is None or len(sizes) == 0:
        _check_value(rows % n == 0, lambda: f"{op}(): dim 0 of the {arg} tensor ({rows}) must "
                                            f"divide evenly by the group size {n}")
        sizes = [rows // n] * n
    _check_value(len(sizes) == n and sum(sizes) == rows,
                 lambda: f"{op}(): {arg}_split_sizes must have {n} entries summing to dim 0 "
                         f"({rows}), got {list(sizes)}")
    counts = [int(s) * row for s in sizes]
    displs = [0] * n
    for i in range(1, n):
        displs[i] = displs[i - 1] + counts[i - 1]
    return counts, displs


def all_to_all_single(output: Any, input: Any, output_split_sizes: Optional[list] = None,
                      input_split_sizes: Optional[list] = None,
                      group: Optional[ProcessGroup] = None,
                      async_op: bool = False) -> Optional[Work]:
    """Split ``input`` along dim 0 and send part ``i`` to group rank ``i``; the
    parts received are concatenated along dim 0 into ``output``.

    Without split sizes dim 0 is divided evenly; with them, ``input_split_sizes[i]``
    rows go to rank ``i`` and ``output_split_sizes[i]`` rows come from it.
    """
    pg = _group(group, "all_to_all_single")
    if pg is None:
        return None
    out = _tensor(output, "all_to_all_single", "output")
    inp = _tensor(input, "all_to_all_single", "input")
    _check_type(inp.dtype is out.dtype, lambda: f"all_to_all_single(): input dtype {inp.dtype} "
                                                f"and output dtype {out.dtype} differ")
    n = pg.size()
    scount, sdispl = _splits(input_split_sizes, inp, n, "all_to_all_single", "input")
    rcount, rdispl = _splits(output_split_sizes, out, n, "all_to_all_single", "output")
    _debug_check(pg, "all_to_all_single", inp, out)
    src = _contig(inp)
    buf, finish = _moved(out)
    return _post(pg, "all_to_all_single",
                 lambda: [pg._comm.Ialltoallv([_raw(src), (scount, sdispl)],
                                              [_raw(buf), (rcount, rdispl)])],
                 async_op, finish, (src, buf), (output,))


def all_to_all(output_tensor_list: list, input_tensor_list: list,
               group: Optional[ProcessGroup] = None, async_op: bool = False) -> Optional[Work]:
    """Send ``input_tensor_list[i]`` to group rank ``i``; receive rank ``i``'s into
    ``output_tensor_list[i]`` (sizes may differ between pairs)."""
    pg = _group(group, "all_to_all")
    if pg is None:
        return None
    n = pg.size()
    for name, lst in (("output_tensor_list", output_tensor_list),
                      ("input_tensor_list", input_tensor_list)):
        _check_type(isinstance(lst, (list, tuple)) and len(lst) == n,
                    lambda: _expected("all_to_all", name, f"a list of {n} tensors", lst))
    ins = [_tensor(t, "all_to_all", "input_tensor_list") for t in input_tensor_list]
    outs = [_tensor(t, "all_to_all", "output_tensor_list") for t in output_tensor_list]
    dt = ins[0].dtype
    _check_type(all(t.dtype is dt for t in ins + outs),
                lambda: f"all_to_all(): every tensor must have dtype {dt}")
    _debug_check(pg, "all_to_all", *ins)
    flat = ember.cat([x.reshape(-1) for x in ins])
    tmp = ember.empty(sum(o.numel() for o in outs), dtype=dt)

    def offsets(ts):
        c = [t.numel() for t in ts]
        d = [0] * n
        for i in range(1, n):
            d[i] = d[i - 1] + c[i - 1]
        return c, d
    scount, sdispl = offsets(ins)
    rcount, rdispl = offsets(outs)

    def finish():
        for o, c, d in zip(outs, rcount, rdispl):
            o.copy_(tmp[d:d + c].view(o.shape))
    return _post(pg, "all_to_all",
                 lambda: [pg._comm.Ialltoallv([_raw(flat), (scount, sdispl)],
                                              [_raw(tmp), (rcount, rdispl)])],
                 async_op, finish, (flat, tmp), tuple(output_tensor_list))


def barrier(group: Optional[ProcessGroup] = None, async_op: bool = False,
            device_ids: Optional[list] = None) -> Optional[Work]:
    """Block until every rank of the group has reached the barrier."""
    pg = _group(group, "barrier")
    if pg is None:
        return None
    return _post(pg, "barrier", lambda: [pg._comm.Ibarrier()], async_op)


def monitored_barrier(group: Optional[ProcessGroup] = None, timeout: Any = None,
                      wait_all_ranks: bool = False) -> None:
    """A barrier that names the ranks that did not reach it in time.

    Every rank reports to the group's first rank, which waits up to
    ``timeout`` for all of them and then releases them.

    Parameters
    ----------
    timeout : datetime.timedelta, optional
        The group's timeout when omitted.
    wait_all_ranks : bool
        Name every late rank instead of the first one.

    Raises
    ------
    RuntimeError
        On the first rank: ``"Rank 1 failed to pass monitoredBarrier in 2000 ms"``
        (``"Ranks [1, 3] ..."`` with ``wait_all_ranks``); on the others, when the
        first rank does not release them in time.
    """
    pg = _group(group, "monitored_barrier")
    if pg is None:
        return
    secs = pg._timeout_s if timeout is None else _seconds(timeout)
    ctrl, n = pg._ctrl, pg.size()
    token = bytearray(1)
    if pg.rank() != 0:
        wait_requests([ctrl.Isend(token, 0, 1)], secs, "monitored_barrier", pg)
        wait_requests([ctrl.Irecv(token, 0, 2)], secs, "monitored_barrier", pg)
        return
    MPI = _mpi()
    reqs = {i: ctrl.Irecv(bytearray(1), i, 1) for i in range(1, n)}
    work = Work(list(reqs.values()), "monitored_barrier", pg)
    try:
        work.wait(secs)
    except RuntimeError:
        late = [pg._global(i) for i, q in reqs.items() if not q.Test()]
        for i, q in reqs.items():
            if pg._global(i) in late:
                q.Cancel()
                q.Wait()
        work._complete()
        ms = int(secs * 1000)
        if wait_all_ranks and len(late) > 1:
            raise RuntimeError(f"Ranks {late} failed to pass monitoredBarrier in {ms} ms") \
                from None
        raise RuntimeError(f"Rank {late[0]} failed to pass monitoredBarrier in {ms} ms") \
            from None
    MPI.Request.Waitall([ctrl.Isend(token, i, 2) for i in range(1, n)])


# --- point to point -------------------------------------------------------------
def _peer(pg: ProcessGroup, rank: Optional[int], group_rank: Optional[int], op: str,
          arg: str) -> int:
    r = _root(pg, rank, group_rank, op, arg)
    _check_value(r != pg.rank(), lambda: f"{op}(): Invalid {arg} rank: should not use rank of "
                                         f"the current process")
    return r


def isend(tensor: Any, dst: Optional[int] = None, group: Optional[ProcessGroup] = None,
          tag: int = 0, group_dst: Optional[int] = None) -> Optional[Work]:
    """Start sending ``tensor`` to rank ``dst``; a :class:`Work` to wait on."""
    pg = _group(group, "isend")
    if pg is None:
        return None
    t = _tensor(tensor, "isend")
    peer = _peer(pg, dst, group_dst, "isend", "dst")
    src = _contig(t)
    return _post(pg, "isend", lambda: [pg._comm.Isend(_raw(src), peer, tag)], True, None, (src,))


def irecv(tensor: Any, src: Optional[int] = None, group: Optional[ProcessGroup] = None,
          tag: int = 0, group_src: Optional[int] = None) -> Optional[Work]:
    """Start receiving into ``tensor`` from rank ``src`` (any rank when omitted)."""
    pg = _group(group, "irecv")
    if pg is None:
        return None
    t = _tensor(tensor, "irecv")
    MPI = _mpi()
    peer = MPI.ANY_SOURCE if src is None and group_src is None else \
        _peer(pg, src, group_src, "irecv", "src")
    buf, finish = _moved(t)
    status = MPI.Status()
    return _post(pg, "irecv", lambda: [pg._comm.Irecv(_raw(buf), peer, tag)], True, finish,
                 (buf,), (tensor,), status)


def send(tensor: Any, dst: Optional[int] = None, group: Optional[ProcessGroup] = None,
         tag: int = 0, group_dst: Optional[int] = None) -> None:
    """Send ``tensor`` to rank ``dst`` and wait until it has been sent."""
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def recv(tensor: Any, src: Optional[int] = None, group: Optional[ProcessGroup] = None,
         tag: int = 0, group_src: Optional[int] = None) -> int:
    """Receive into ``tensor`` from rank ``src`` (any rank when omitted).

    Returns
    -------
    int
        The global rank the message came from (-1 outside the group).
    """
    work = irecv(tensor, src, group, tag, group_src)
    if work is None:
        return -1
    return work._source_rank()


# --- Python objects (pickled) -------------------------------------------------------
def _wait(pg: ProcessGroup, op: str, start: Callable[[], list]) -> None:
    _post(pg, op, start, False)


def _offsets(sizes: Any) -> list:
    d = [0] * len(sizes)
    for i in range(1, len(sizes)):
        d[i] = d[i - 1] + sizes[i - 1]
    return d


def broadcast_object_list(object_list: list, src: Optional[int] = None,
                          group: Optional[ProcessGroup] = None, device: Any = None,
                          group_src: Optional[int] = None) -> None:
    """Replace ``object_list``'s items on every rank by those of rank ``src``
    (pickled; every rank passes a list of the same length)."""
    pg = _group(group, "broadcast_object_list")
    if pg is None:
        return
    _check_type(isinstance(object_list, list),
                lambda: _expected("broadcast_object_list", "object_list", "a list", object_list))
    root = _root(pg, src, group_src, "broadcast_object_list", "src")
    me = pg.rank() == root
    payloads = [pickle.dumps(o) for o in object_list] if me else []
    sizes = array("q", [len(p) for p in payloads] if me else [0] * len(object_list))
    _wait(pg, "broadcast_object_list", lambda: [pg._comm.Ibcast(sizes, root)])
    data = bytearray(b"".join(payloads)) if me else bytearray(sum(sizes))
    _wait(pg, "broadcast_object_list", lambda: [pg._comm.Ibcast(data, root)])
    if not me:
        view = memoryview(data)
        for i, (off, n) in enumerate(zip(_offsets(sizes), sizes)):
            object_list[i] = pickle.loads(view[off:off + n])


def _all_gather_objects(pg: ProcessGroup, obj: Any, op: str) -> list:
    """Every group rank's ``obj`` (pickled), in group-rank order."""
    n = pg.size()
    mine = pickle.dumps(obj)
    sizes = array("q", [0] * n)
    _wait(pg, op, lambda: [pg._comm.Iallgather(array("q", [len(mine)]), sizes)])
    displs = _offsets(sizes)
    data = bytearray(sum(sizes))
    _wait(pg, op, lambda: [pg._comm.Iallgatherv(mine, [data, (list(sizes), displs)])])
    view = memoryview(data)
    return [pickle.loads(view[displs[i]:displs[i] + sizes[i]]) for i in range(n)]


def all_gather_object(object_list: list, obj: Any,
                      group: Optional[ProcessGroup] = None) -> None:
    """Fill ``object_list`` (one slot per group rank) with every rank's ``obj``."""
    pg = _group(group, "all_gather_object")
    if pg is None:
        return
    n = pg.size()
    _check_value(isinstance(object_list, list) and len(object_list) == n,
                 lambda: f"all_gather_object(): object_list must be a list of the group size "
                         f"({n})")
    object_list[:] = _all_gather_objects(pg, obj, "all_gather_object")


def gather_object(obj: Any, object_gather_list: Optional[list] = None,
                  dst: Optional[int] = None, group: Optional[ProcessGroup] = None,
                  group_dst: Optional[int] = None) -> None:
    """Gather every rank's ``obj`` into ``object_gather_list`` on rank ``dst``."""
    pg = _group(group, "gather_object")
    if pg is None:
        return
    root = _root(pg, dst, group_dst, "gather_object", "dst")
    n, me = pg.size(), pg.rank() == root
    if me:
        _check_value(isinstance(object_gather_list, list) and len(object_gather_list) == n,
                     lambda: f"gather_object(): object_gather_list must be a list of the group "
                             f"size ({n}) on the destination rank")
    else:
        _check_value(object_gather_list is None,
                     "gather_object(): Argument ``object_gather_list`` must NOT be specified on "
                     "non-destination ranks.")
    mine = pickle.dumps(obj)
    sizes = array("q", [0] * n)
    _wait(pg, "gather_object",
          lambda: [pg._comm.Igather(array("q", [len(mine)]), sizes if me else None, root)])
    if not me:
        _wait(pg, "gather_object", lambda: [pg._comm.Igatherv(mine, None, root)])
        return
    displs = _offsets(sizes)
    data = bytearray(sum(sizes))
    _wait(pg, "gather_object",
          lambda: [pg._comm.Igatherv(mine, [data, (list(sizes), displs)], root)])
    view = memoryview(data)
    for i in range(n):
        object_gather_list[i] = pickle.loads(view[displs[i]:displs[i] + sizes[i]])


def scatter_object_list(scatter_object_output_list: list,
                        scatter_object_input_list: Optional[list] = None,
                        src: Optional[int] = None, group: Optional[ProcessGroup] = None,
                        group_src: Optional[int] = None) -> None:
    """Put ``scatter_object_input_list[i]`` of rank ``src`` into
    ``scatter_object_output_list[0]`` on group rank ``i``."""
    pg = _group(group, "scatter_object_list")
    if pg is None:
        return
    _check_value(isinstance(scatter_object_output_list, list)
                 and len(scatter_object_output_list) >= 1,
                 "scatter_object_list(): Expected argument scatter_object_output_list to be a "
                 "list of size at least 1.")
    root = _root(pg, src, group_src, "scatter_object_list", "src")
    n, me = pg.size(), pg.rank() == root
    if me:
        _check_value(isinstance(scatter_object_input_list, list)
                     and len(scatter_object_input_list) == n,
                     lambda: f"scatter_object_list(): scatter_object_input_list must be a list "
                             f"of the group size ({n}) on the source rank")
        payloads = [pickle.dumps(o) for o in scatter_object_input_list]
        sizes = array("q", [len(p) for p in payloads])
        data = b"".join(payloads)
    size = array("q", [0])
    _wait(pg, "scatter_object_list",
          lambda: [pg._comm.Iscatter(sizes if me else None, size, root)])
    out = bytearray(size[0])
    _wait(pg, "scatter_object_list",
          lambda: [pg._comm.Iscatterv([data, (list(sizes), _offsets(sizes))] if me else None,
                                      out, root)])
    scatter_object_output_list[0] = pickle.loads(out)
