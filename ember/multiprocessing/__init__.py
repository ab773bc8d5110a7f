"""``ember.multiprocessing``: Python's ``multiprocessing`` with ember tensors that cross
process boundaries by shared memory (PyTorch's ``torch.multiprocessing``).

Every name of ``multiprocessing`` is here. A tensor in shared memory
(``Tensor.share_memory_()``, or any tensor a worker sends) travels through a queue or
pipe as a file descriptor of its memory, so both processes see one buffer; other
tensors are pickled by value. ``spawn`` starts one process per rank.
"""
from __future__ import annotations

import multiprocessing
from multiprocessing import *  # noqa: F401,F403 - the whole multiprocessing API

from ember import _storage  # noqa: F401 - registers the shared-memory reducers
from ember.multiprocessing.spawn import (
    ProcessContext,
    ProcessException,
    ProcessExitedException,
    ProcessRaisedException,
    SpawnContext,
    spawn,
    start_processes,
)

__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies",
           "spawn", "start_processes", "ProcessContext", "SpawnContext", "ProcessException",
           "ProcessRaisedException", "ProcessExitedException"] + list(multiprocessing.__all__)

# ember shares memory one way: an anonymous memory file passed as a file descriptor
_all_sharing_strategies = frozenset({"file_descriptor"})
_sharing_strategy = "file_descriptor"


def set_sharing_strategy(new_strategy: str) -> None:
    """Choose how shared tensors cross processes; ember has one strategy,
    ``"file_descriptor"``."""
    if new_strategy not in _all_sharing_strategies:
        raise ValueError(f"set_sharing_strategy(): unknown strategy {new_strategy!r}; ember "
                         f"supports {sorted(_all_sharing_strategies)}")
    global _sharing_strategy
    _sharing_strategy = new_strategy


def get_sharing_strategy() -> str:
    """The current strategy for sharing tensors between processes."""
    return _sharing_strategy


def get_all_sharing_strategies() -> frozenset:
    """The strategies this build supports."""
    return _all_sharing_strategies
