"""Process groups on MPI: the default group, ``new_group``, reduce ops and backends.

The MPI launcher (``mpiexec`` or ``python -m ember.distributed.run``) decides
ranks and world size; ``init_process_group`` checks what the script and the
environment say against it and duplicates ``MPI.COMM_WORLD`` for ember's traffic,
so a script's own MPI messages never mix with collectives."""
from __future__ import annotations

import enum
import importlib.util
import os
import sys
import warnings
from datetime import timedelta
from typing import Any, Optional

from ember._check import _check_type, _check_value, _expected

__all__ = ["ReduceOp", "Backend", "ProcessGroup", "GroupMember", "group", "init_process_group",
           "destroy_process_group", "new_group", "is_available", "is_initialized",
           "is_mpi_available", "is_nccl_available", "is_gloo_available", "get_rank",
           "get_world_size", "get_backend", "get_default_backend_for_device",
           "get_process_group_ranks", "get_global_rank", "get_group_rank"]

default_pg_timeout = timedelta(minutes=10)

_NOT_INIT = ("Default process group has not been initialized, please make sure to call "
             "init_process_group.")


class ReduceOp:
    """How a reduction combines the ranks' values: ``SUM``, ``AVG``, ``PRODUCT``,
    ``MIN``, ``MAX`` and, for integer and bool tensors, ``BAND``, ``BOR``, ``BXOR``."""

    class RedOpType(enum.IntEnum):
        SUM = 0
        AVG = 1
        PRODUCT = 2
        MIN = 3
        MAX = 4
        BAND = 5
        BOR = 6
        BXOR = 7

        def __repr__(self) -> str:
            return f"<RedOpType.{self.name}: {self.value}>"

    SUM = RedOpType.SUM
    AVG = RedOpType.AVG
    PRODUCT = RedOpType.PRODUCT
    MIN = RedOpType.MIN
    MAX = RedOpType.MAX
    BAND = RedOpType.BAND
    BOR = RedOpType.BOR
    BXOR = RedOpType.BXOR


class Backend(str):
    """A backend name, lower-cased: ``Backend("GLOO") == "gloo"``.

    ember serves every CPU backend with MPI (see :func:`get_backend`)."""

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    MPI = "mpi"
    backend_list = [UNDEFINED, GLOO, NCCL, MPI]

    def __new__(cls, name: str) -> "Backend":
        _check_type(isinstance(name, str),
                    lambda: f"Backend constructor parameter must be string-ish, got {name!r}")
        value = getattr(Backend, name.upper(), Backend.UNDEFINED)
        return str.__new__(cls, name.lower() if value == Backend.UNDEFINED else value)


class ProcessGroup:
    """A set of ranks that run collectives together (one MPI communicator).

    ``rank()`` and ``size()`` are this process's rank in the group and the
    group's size; a process outside the group has rank -1."""

    def __init__(self, comm: Any, ranks: list, backend: str, timeout_s: float,
                 desc: str) -> None:
        self._comm = comm                 # None on a rank outside the group
        # control messages (monitored_barrier) on their own communicator, so they never
        # match a user's send/recv whatever its tag
        self._ctrl = comm.Dup() if comm is not None else None
        self._ranks = list(ranks)         # global rank of each group rank
        self._g2l = {g: i for i, g in enumerate(self._ranks)}
        self._backend = backend
        self._timeout_s = timeout_s
        self._desc = desc
        self._rank = comm.Get_rank() if comm is not None else -1

    def rank(self) -> int:
        return self._rank

    def size(self) -> int:
        return len(self._ranks) if self._comm is not None else -1

    def name(self) -> str:
        return self._backend

    @property
    def group_desc(self) -> str:
        return self._desc

    def _local(self, global_rank: int, op: str, arg: str) -> int:
        """The group rank of ``global_rank``; ValueError naming ``op``/``arg`` if absent."""
        _check_type(isinstance(global_rank, int) and not isinstance(global_rank, bool),
                    lambda: _expected(op, arg, "an int rank", type(global_rank).__name__))
        r = self._g2l.get(global_rank)
        _check_value(r is not None,
                     lambda: f"{op}(): Global rank {global_rank} ({arg}) is not part of group "
                             f"{self._desc} (ranks {self._ranks})")
        return r

    def _global(self, local_rank: int) -> int:
        return self._ranks[local_rank]

    def _free(self) -> None:
        for c in (self._comm, self._ctrl):
            if c is not None:
                c.Free()
        self._comm = self._ctrl = None

    def _timeout_message(self, op: str, secs: float) -> str:
        return (f"[Rank {_world_rank()}] {op} timed out after {secs:g} s in process group "
                f"{self._desc} (ranks {self._ranks}): another rank died, raised, or called a "
                f"different collective; the timeout is set by init_process_group(timeout=) or "
                f"new_group(timeout=)")

    def __repr__(self) -> str:
        return f"ProcessGroup({self._desc}, backend={self._backend}, ranks={self._ranks})"


class _State:
    default: Optional[ProcessGroup] = None
    groups: list = []
    gloo_noted = False
    debug_detail = False
    excepthook: Any = None


_state = _State()


class GroupMember:
    """``GroupMember.WORLD``: the default group (None before ``init_process_group``);
    ``GroupMember.NON_GROUP_MEMBER``: what ``new_group`` gives a rank left out."""

    NON_GROUP_MEMBER = -100

    class _World:
        def __get__(self, obj, owner):
            return _state.default

    WORLD = _World()


class _GroupNamespace:
    """``group.WORLD``: the default process group, as in ``torch.distributed.group``."""

    @property
    def WORLD(self) -> Optional[ProcessGroup]:
        return _state.default


group = _GroupNamespace()


# --- availability -------------------------------------------------------------
def is_available() -> bool:
    """True when MPI bindings (``mpi4py``) are installed: ``pip install ember[distributed]``."""
    return importlib.util.find_spec("mpi4py") is not None


def is_mpi_available() -> bool:
    """True when the MPI backend can be used (``mpi4py`` is installed)."""
    return is_available()


def is_gloo_available() -> bool:
    """True when ``backend="gloo"`` can be used: ember serves it with MPI."""
    return is_available()


def is_nccl_available() -> bool:
    """False: ember has no NCCL backend (CUDA collectives)."""
    return False


def is_initialized() -> bool:
    """True once ``init_process_group`` has run (and ``destroy_process_group`` has not)."""
    return _state.default is not None


def get_default_backend_for_device(device: Any) -> str:
    """The backend that serves tensors on ``device``: ``"mpi"`` for the CPU.

    Raises
    ------
    ValueError
        For a device type no backend serves (ember has no CUDA collectives).
    """
    kind = device if isinstance(device, str) else getattr(device, "type", str(device))
    kind = kind.split(":")[0]
    if kind == "cpu":
        return Backend.MPI
    raise ValueError(f"Default backend not registered for device : {kind}")


def _mpi():
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise RuntimeError("ember.distributed needs MPI bindings: pip install mpi4py mpich "
                           "(or pip install ember[distributed])") from e
    return MPI


def _world_rank() -> int:
    return _mpi().COMM_WORLD.Get_rank()


def _parse_backend(backend: Any) -> str:
    if backend is None:
        return Backend.MPI
    _check_type(isinstance(backend, str),
                lambda: _expected("init_process_group", "backend", "a str", backend))
    spec = backend.lower()
    if ":" in spec:      # "cpu:gloo,cuda:nccl": the CPU entry serves ember's tensors
        pairs = dict(p.split(":", 1) for p in spec.split(",") if ":" in p)
        _check_value("cpu" in pairs, lambda: f"init_process_group(): backend {backend!r} names "
                                             f"no backend for device 'cpu'")
        spec = pairs["cpu"]
    name = Backend(spec)
    if name == Backend.NCCL:
        raise RuntimeError("Distributed package doesn't have NCCL built in")
    _check_value(name in (Backend.MPI, Backend.GLOO), lambda: f"Invalid backend: '{backend}'")
    return str(name)


def _timeout_seconds(timeout: Any, op: str) -> float:
    if timeout is None:
        return default_pg_timeout.total_seconds()
    _check_type(isinstance(timeout, timedelta),
                lambda: _expected(op, "timeout", "a datetime.timedelta", type(timeout).__name__))
    return timeout.total_seconds()


def _env_int(name: str) -> Optional[int]:
    v = os.environ.get(name)
    if v is None or v == "":
        return None
    try:
        return int(v)
    except ValueError:
        raise ValueError(f"init_process_group(): environment variable {name}={v!r} is not an "
                         f"integer") from None


def init_process_group(backend: Optional[str] = None, init_method: Optional[str] = None,
                       timeout: Optional[timedelta] = None, world_size: int = -1,
                       rank: int = -1, store: Any = None, group_name: str = "",
                       pg_options: Any = None, device_id: Any = None) -> None:
    """Join the default process group: every process of the MPI job.

    Parameters
    ----------
    backend : str, optional
        ``"mpi"`` (the default) or ``"gloo"``, which ember serves with MPI so
        CPU scripts written for PyTorch run unchanged. A device map such as
        ``"cpu:gloo,cuda:nccl"`` uses its CPU entry. ``"nccl"`` raises: ember
        has no CUDA collectives.
    init_method : str, optional
        ``"env://"`` (the default), ``"tcp://..."`` or ``"file://..."``. The MPI
        launcher has already connected the processes, so the address itself is
        not used; with ``env://`` the launcher variables ``WORLD_SIZE`` and
        ``RANK`` (set by ``python -m ember.distributed.run``) must match the job.
    timeout : datetime.timedelta, optional
        How long any collective waits for the other ranks before raising
        (10 minutes by default).
    world_size, rank : int, optional
        When given, checked against the MPI job's size and this process's rank.
    store : None
        Rendezvous stores are not used: MPI's launcher does the rendezvous.
    group_name, pg_options, device_id
        Accepted for compatibility; they change nothing on the CPU.

    Raises
    ------
    ValueError
        When the default group already exists, or ``world_size``/``rank``
        disagree with the MPI job.
    RuntimeError
        When the job was not started by an MPI launcher but the environment
        asks for several processes (e.g. under torchrun).
    """
    if _state.default is not None:
        raise ValueError("trying to initialize the default process group twice!")
    name = _parse_backend(backend)
    timeout_s = _timeout_seconds(timeout, "init_process_group")
    _check_value(store is None,
                 "init_process_group(): store= is not supported: ember's processes meet through "
                 "the MPI launcher (mpiexec or python -m ember.distributed.run)")
    if init_method is not None:
        _check_type(isinstance(init_method, str),
                    lambda: _expected("init_process_group", "init_method", "a str", init_method))
        _check_value(init_method.split("://")[0] in ("env", "tcp", "file"),
                     lambda: f"init_process_group(): unsupported init_method {init_method!r} "
                             f"(env://, tcp:// or file://)")
    MPI = _mpi()
    world = MPI.COMM_WORLD
    size, me = world.Get_size(), world.Get_rank()
    if init_method is None or init_method.startswith("env://"):
        env_size, env_rank = _env_int("WORLD_SIZE"), _env_int("RANK")
        if env_size is not None and env_size != size:
            raise RuntimeError(
                f"init_process_group(): WORLD_SIZE={env_size} in the environment but the MPI job "
                f"has {size} process(es). ember's processes meet through MPI: start the script "
                f"with `python -m ember.distributed.run --nproc-per-node {env_size} script.py` "
                f"(torchrun's flags) or `mpiexec -n {env_size} python script.py`")
        if env_rank is not None and env_rank != me:
            raise RuntimeError(f"init_process_group(): RANK={env_rank} in the environment but "
                               f"MPI gave this process rank {me}")
    _check_value(world_size in (-1, size),
                 lambda: f"init_process_group(): world_size={world_size} but the MPI job has "
                         f"{size} process(es)")
    _check_value(rank in (-1, me),
                 lambda: f"init_process_group(): rank={rank} but MPI gave this process rank {me}")
    pg = ProcessGroup(world.Dup(), list(range(size)), name, timeout_s,
                      group_name or "default_pg")
    _state.default = pg
    _state.groups = [pg]
    _state.debug_detail = os.environ.get("TORCH_DISTRIBUTED_DEBUG", "").upper() == "DETAIL"
    if name == Backend.GLOO and not _state.gloo_noted:
        _state.gloo_noted = True
        if me == 0:
            warnings.warn("ember.distributed: backend 'gloo' is served by MPI (mpi4py); results "
                          "and API are the same", stacklevel=2)
    if size > 1 and _state.excepthook is None:
        _state.excepthook = sys.excepthook
        sys.excepthook = _abort_on_uncaught


def _abort_on_uncaught(exc_type, exc, tb) -> None:
    """An uncaught exception on one rank ends the whole job at once (MPI_Abort),
    instead of leaving the other ranks waiting in their next collective."""
    hook = _state.excepthook or sys.__excepthook__
    sys.stderr.write(f"[ember.distributed] rank {_world_rank()} raised an uncaught exception; "
                     f"aborting the MPI job\n")
    hook(exc_type, exc, tb)
    sys.stderr.flush()
    sys.stdout.flush()
    _mpi().COMM_WORLD.Abort(1)


def _default_group() -> ProcessGroup:
    pg = _state.default
    if pg is None:
        raise ValueError(_NOT_INIT)
    return pg


def _resolve(group_: Optional[ProcessGroup]) -> ProcessGroup:
    if group_ is None:
        return _default_group()
    _check_type(isinstance(group_, ProcessGroup),
                lambda: f"expected a ProcessGroup for group, got {type(group_).__name__}")
    _default_group()
    return group_


def new_group(ranks: Optional[list] = None, timeout: Optional[timedelta] = None,
              backend: Optional[str] = None, pg_options: Any = None,
              use_local_synchronization: bool = False,
              group_desc: Optional[str] = None) -> ProcessGroup:
    """A process group of some of the default group's ranks.

    Every rank of the default group must call it with the same ``ranks`` (only
    the members, when ``use_local_synchronization=True``). A rank outside
    ``ranks`` gets a group whose ``rank()`` is -1; collectives on it do nothing.

    Parameters
    ----------
    ranks : list of int, optional
        Global ranks of the members (sorted); all ranks when omitted.
    timeout : datetime.timedelta, optional
        The group's collective timeout (the default group's when omitted).
    backend : str, optional
        ``"mpi"`` or ``"gloo"``; the default group's when omitted.

    Returns
    -------
    ProcessGroup
    """
    world = _default_group()
    n = world.size()
    ranks = list(range(n)) if ranks is None else sorted(ranks)
    for r in ranks:
        _check_value(isinstance(r, int) and 0 <= r < n,
                     lambda: f"new_group(): rank {r!r} is not within the world size {n} set by "
                             f"init_process_group")
    _check_value(len(set(ranks)) == len(ranks), "new_group(): ranks must be unique")
    name = world._backend if backend is None else _parse_backend(backend)
    timeout_s = world._timeout_s if timeout is None else _timeout_seconds(timeout, "new_group")
    mpi_group = world._comm.Get_group().Incl(ranks)
    try:
        if use_local_synchronization:
            comm = world._comm.Create_group(mpi_group) if world.rank() in ranks else None
        else:
            comm = world._comm.Create(mpi_group)
    finally:
        mpi_group.Free()
    if comm is not None and comm == _mpi().COMM_NULL:
        comm = None
    desc = group_desc or f"group{len(_state.groups)}"
    pg = ProcessGroup(comm, ranks, name, timeout_s, desc)
    _state.groups.append(pg)
    return pg


def destroy_process_group(group: Optional[ProcessGroup] = None) -> None:
    """Free ``group``; without an argument, every group and the default one."""
    if group is None or group is _state.default:
        _default_group()
        for pg in _state.groups:
            pg._free()
        _state.groups = []
        _state.default = None
        if _state.excepthook is not None:
            sys.excepthook, _state.excepthook = _state.excepthook, None
        return
    if group in _state.groups:
        _state.groups.remove(group)
    group._free()


# --- queries -------------------------------------------------------------------
def get_rank(group: Optional[ProcessGroup] = None) -> int:
    """This process's rank in ``group`` (the default group when omitted); -1 outside it."""
    return _resolve(group).rank()


def get_world_size(group: Optional[ProcessGroup] = None) -> int:
    """The number of ranks in ``group``; -1 for a process outside it."""
    return _resolve(group).size()


def get_backend(group: Optional[ProcessGroup] = None) -> str:
    """The backend name the group was created with: ``"mpi"`` or ``"gloo"``.

    ember serves both with MPI through ``mpi4py``: ``"gloo"`` is accepted so
    scripts written for PyTorch's CPU backend run unchanged, and it is the name
    this function returns for such a group, while the work is done by MPI.
    """
    return Backend(_resolve(group)._backend)


def get_process_group_ranks(group: ProcessGroup) -> list:
    """The global ranks of ``group``'s members, in group-rank order."""
    return list(_resolve(group)._ranks)


def get_global_rank(group: ProcessGroup, group_rank: int) -> int:
    """The global rank of ``group``'s rank ``group_rank``."""
    g = _resolve(group)
    _check_value(isinstance(group_rank, int) and 0 <= group_rank < len(g._ranks),
                 lambda: f"get_global_rank(): group rank {group_rank!r} is not part of group "
                         f"{g._desc}")
    return g._ranks[group_rank]


def get_group_rank(group: ProcessGroup, global_rank: int) -> int:
    """The rank in ``group`` of the process whose global rank is ``global_rank``."""
    return _resolve(group)._local(global_rank, "get_group_rank", "global_rank")
