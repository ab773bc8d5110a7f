"""``ember.distributed``: process groups and collectives on MPI (PyTorch's
``torch.distributed``).

Start a job with an MPI launcher, ``python -m ember.distributed.run
--nproc-per-node N script.py`` (torchrun's flags) or ``mpiexec -n N python
script.py``, and call ``init_process_group()`` in the script. MPI comes from
``mpi4py`` (``pip install ember[distributed]``, which brings the MPICH wheel);
``backend="gloo"`` is served by MPI too. CPU tensors only: ember has no NCCL.
Importing this module does not start MPI; ``init_process_group`` does.
"""
from __future__ import annotations

from ember.distributed._work import Work
from ember.distributed.collectives import (
    all_gather,
    all_gather_into_tensor,
    all_gather_object,
    all_reduce,
    all_to_all,
    all_to_all_single,
    barrier,
    broadcast,
    broadcast_object_list,
    gather,
    gather_object,
    irecv,
    isend,
    monitored_barrier,
    recv,
    reduce,
    reduce_scatter,
    reduce_scatter_tensor,
    scatter,
    scatter_object_list,
    send,
)
from ember.distributed.process_group import (
    Backend,
    GroupMember,
    ProcessGroup,
    ReduceOp,
    default_pg_timeout,
    destroy_process_group,
    get_backend,
    get_default_backend_for_device,
    get_global_rank,
    get_group_rank,
    get_process_group_ranks,
    get_rank,
    get_world_size,
    group,
    init_process_group,
    is_available,
    is_gloo_available,
    is_initialized,
    is_mpi_available,
    is_nccl_available,
    new_group,
)

__all__ = ["Work", "Backend", "GroupMember", "ProcessGroup", "ReduceOp", "default_pg_timeout",
           "group", "init_process_group", "destroy_process_group", "new_group", "is_available",
           "is_initialized", "is_mpi_available", "is_nccl_available", "is_gloo_available",
           "get_rank", "get_world_size", "get_backend", "get_default_backend_for_device",
           "get_process_group_ranks", "get_global_rank", "get_group_rank", "all_reduce",
           "broadcast", "reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter",
           "reduce_scatter_tensor", "gather", "scatter", "all_to_all", "all_to_all_single", "send",
           "recv", "isend", "irecv", "barrier", "monitored_barrier", "broadcast_object_list",
           "all_gather_object", "gather_object", "scatter_object_list"]
