"""``DataLoader``: batches from a dataset, in the main process or in worker processes.

Workers (``num_workers > 0``) are ``multiprocessing`` processes (fork on Linux). Each
gets index lists on its own queue and puts collated batches on one result queue; tensors
travel as NumPy arrays and are rebuilt zero-copy with ``ember.from_numpy``. A worker's
exception is re-raised in the main process with the worker's traceback; workers are
joined (never left as zombies) when the iterator ends, fails or is collected."""
from __future__ import annotations

import itertools
import multiprocessing as mp
import os
import queue
import random
import sys
import threading
import warnings
import weakref

import ember
from ember.utils.data import _worker
from ember.utils.data._collate import default_collate, default_convert
from ember.utils.data.dataset import IterableDataset, TensorDataset
from ember.utils.data.sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "get_worker_info", "default_collate", "default_convert"]

get_worker_info = _worker.get_worker_info

_POLL = 2.0  # seconds between liveness checks while waiting on workers


class _MapFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        # TensorDataset + default_collate: index each tensor once per batch
        self.fast = (auto_collation and collate_fn is default_collate and
                     type(dataset) is TensorDataset)

    def fetch(self, index):
        if self.auto_collation:
            if self.fast:
                idx = ember.tensor(index, dtype=ember.int64)
                return [t.index_select(0, idx) for t in self.dataset.tensors]
            getitems = getattr(self.dataset, "__getitems__", None)
            if getitems is not None:
                data = getitems(index)
            else:
                data = [self.dataset[i] for i in index]
        else:
            data = self.dataset[index]
        return self.collate_fn(data)


class _IterFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last, batch_size):
        self.dataset_iter = iter(dataset)
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.batch_size = batch_size
        self.ended = False

    def fetch(self, index):
        if self.ended:
            raise StopIteration
        if self.auto_collation:
            data = []
            for _ in range(self.batch_size):
                try:
                    data.append(next(self.dataset_iter))
                except StopIteration:
                    self.ended = True
                    break
            if not data or (self.drop_last and len(data) < self.batch_size):
                raise StopIteration
        else:
            data = next(self.dataset_iter)
        return self.collate_fn(data)


def _make_fetcher(kind, dataset, auto_collation, collate_fn, drop_last, batch_size):
    if kind == "map":
        return _MapFetcher(dataset, auto_collation, collate_fn, drop_last)
    return _IterFetcher(dataset, auto_collation, collate_fn, drop_last, batch_size)


class _InfiniteConstantSampler(Sampler):
    def __iter__(self):
        while True:
            yield None


class DataLoader:
    """Combines a dataset and a sampler and iterates over batches (PyTorch's DataLoader)."""

    __module__ = "ember.utils.data"

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 "
                             "to disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in "
                             "multiprocessing.let num_workers > 0 to enable multiprocessing, "
                             "otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory  # batches land in page-locked memory when CUDA is usable
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.persistent_workers = persistent_workers
        self.in_order = in_order
        self.generator = generator

        if isinstance(dataset, IterableDataset):
            self._dataset_kind = "iterable"
            if shuffle not in (False, None):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"shuffle option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"sampler option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler="
                                 f"{batch_sampler}")
        else:
            self._dataset_kind = "map"
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")
        if sampler is None:
            if self._dataset_kind == "iterable":
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self._iterator = None

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        return _MultiProcessIter(self)

    def __iter__(self):
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    def __len__(self):
        if self._dataset_kind == "iterable":
            n = len(self.dataset)
            if self.batch_size is not None:
                from math import ceil
                n = n // self.batch_size if self.drop_last else ceil(n / self.batch_size)
            return n
        return len(self._index_sampler)

    def __del__(self):
        it = self.__dict__.get("_iterator")
        if it is not None:
            it._shutdown_workers()


def _can_pin():
    """Whether pinning is possible (a usable CUDA device); torch skips it otherwise too."""
    from ember.cuda import _kernels
    try:
        _kernels.backend()
    except RuntimeError:
        return False
    return True


def _pin(data):
    """``data`` with every CPU tensor copied to page-locked memory (containers kept)."""
    if isinstance(data, ember.Tensor):
        return data.pin_memory() if data.device.type == "cpu" else data
    if isinstance(data, dict):
        return type(data)({k: _pin(v) for k, v in data.items()})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*[_pin(v) for v in data])
    if isinstance(data, (list, tuple)):
        return type(data)(_pin(v) for v in data)
    return data


class _BaseIter:
    def __init__(self, loader):
        # a persistent iterator is owned by its loader: refer back weakly (no cycle)
        self._loader = weakref.proxy(loader) if loader.persistent_workers else loader
        self._dataset = loader.dataset
        self._kind = loader._dataset_kind
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._collate_fn = loader.collate_fn
        self._batch_size = loader.batch_size
        self._index_sampler = loader._index_sampler
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._pin = bool(loader.pin_memory) and _can_pin()

    def __iter__(self):
        return self

    def __next__(self):
        # A profiler that records sees each step as one range, as in PyTorch.
        prof = sys.modules.get("ember.profiler._profile")
        if prof is not None and prof._active:
            with prof.record_function(f"enumerate(DataLoader)#{type(self).__name__}.__next__"):
                data = self._next_data()
        else:
            data = self._next_data()
        return _pin(data) if self._pin else data

    def _next_index(self):
        return next(self._sampler_iter)

    def __len__(self):
        return len(self._loader)

    def _reset(self, loader, first_iter=False):
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0

    def _shutdown_workers(self):
        pass


class _SingleProcessIter(_BaseIter):
    def __init__(self, loader):
        super().__init__(loader)
        self._fetcher = _make_fetcher(self._kind, self._dataset, self._auto_collation,
                                      self._collate_fn, self._drop_last, self._batch_size)

    def _next_data(self):
        index = self._next_index()
        data = self._fetcher.fetch(index)
        self._num_yielded += 1
        return data


def _mp_context(ctx):
    if ctx is None:
        methods = mp.get_all_start_methods()
        return mp.get_context("fork" if "fork" in methods else methods[0])
    if isinstance(ctx, str):
        return mp.get_context(ctx)
    return ctx


_live_iters = weakref.WeakSet()


class _MultiProcessIter(_BaseIter):
    def __init__(self, loader):
        super().__init__(loader)
        self._num_workers = loader.num_workers
        self._prefetch = loader.prefetch_factor
        self._timeout = loader.timeout
        self._persistent = loader.persistent_workers
        ctx = _mp_context(loader.multiprocessing_context)
        self._shutdown = False
        self._worker_result_queue = ctx.Queue()
        self._workers_done_event = ctx.Event()
        self._index_queues = []
        self._workers = []
        base_seed = _base_seed(loader.generator)
        for wid in range(self._num_workers):
            iq = ctx.Queue()
            iq.cancel_join_thread()
            w = ctx.Process(target=_worker._worker_loop,
                            args=(self._kind, self._dataset, iq, self._worker_result_queue,
                                  self._workers_done_event, self._auto_collation,
                                  self._collate_fn, self._drop_last, base_seed,
                                  loader.worker_init_fn, wid, self._num_workers,
                                  self._batch_size),
                            daemon=True)
            w.start()
            self._index_queues.append(iq)
            self._workers.append(w)
        _live_iters.add(self)
        self._reset(loader, first_iter=True)

    def _reset(self, loader, first_iter=False):
        super()._reset(loader, first_iter)
        self._send_idx = 0
        self._rcvd_idx = 0
        self._task_info = {}
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:
            for iq in self._index_queues:
                iq.put(_worker._Resume())
            pending = self._num_workers
            while pending > 0:
                ok, data = self._get_data()
                if ok and isinstance(data[0], _worker._Resume):
                    pending -= 1
        for _ in range(self._prefetch * self._num_workers):
            self._try_put_index()

    def _try_put_index(self):
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):
            wid = next(self._worker_queue_idx_cycle)
            if self._workers_status[wid]:
                break
        else:
            return
        self._index_queues[wid].put((self._send_idx, index))
        self._task_info[self._send_idx] = (wid,)
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _try_get_data(self, timeout):
        try:
            return True, self._worker_result_queue.get(timeout=timeout)
        except queue.Empty:
            failed = [w for w in self._workers if not w.is_alive()]
            if failed and not self._shutdown:
                pids = ", ".join(str(w.pid) for w in failed)
                codes = ", ".join(str(w.exitcode) for w in failed)
                self._shutdown_workers()
                raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly "
                                   f"(exit code(s) {codes})") from None
            return False, None

    def _get_data(self):
        if self._timeout > 0:
            ok, data = self._try_get_data(self._timeout)
            if not ok:
                self._shutdown_workers()
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
            return ok, data
        while True:
            ok, data = self._try_get_data(_POLL)
            if ok:
                return ok, data

    def _next_data(self):
        while True:
            # skip over indices that belonged to exhausted iterable workers
            while self._rcvd_idx < self._send_idx:
                info = self._task_info[self._rcvd_idx]
                wid = info[0]
                if len(info) == 2 or self._workers_status[wid]:
                    break
                del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent:
                    self._shutdown_workers()
                raise StopIteration
            info = self._task_info[self._rcvd_idx]
            if len(info) == 2:
                data = info[1]
                del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
                return self._process_data(data)
            if self._shutdown:
                raise StopIteration
            ok, (idx, data) = self._get_data()
            if isinstance(idx, _worker._Resume):
                continue
            self._tasks_outstanding -= 1
            if isinstance(data, _worker._IterableStop):
                self._workers_status[data.worker_id] = False
                self._try_put_index()
                continue
            if idx != self._rcvd_idx:
                if idx in self._task_info:
                    self._task_info[idx] += (data,)
                continue
            del self._task_info[idx]
            self._rcvd_idx += 1
            return self._process_data(data)

    def _process_data(self, data):
        self._try_put_index()
        if isinstance(data, _worker.ExceptionWrapper):
            self._shutdown_workers()
            data.reraise()
        self._num_yielded += 1
        return _worker._unpack(data)

    def _shutdown_workers(self):
        if self.__dict__.get("_shutdown", True):
            return
        self._shutdown = True
        try:
            self._workers_done_event.set()
            for iq in self._index_queues:
                try:
                    iq.put(None)
                except Exception:  # noqa: BLE001
                    pass
            for w in self._workers:
                w.join(timeout=5.0)
            for w in self._workers:
                if w.is_alive():
                    w.terminate()
                    w.join(timeout=5.0)
                if w.is_alive():
                    w.kill()
                    w.join()
            for iq in self._index_queues:
                iq.close()
            self._worker_result_queue.cancel_join_thread()
            self._worker_result_queue.close()
        finally:
            _live_iters.discard(self)

    def __del__(self):
        self._shutdown_workers()


def _base_seed(generator):
    try:
        kw = {} if generator is None else {"generator": generator}
        return int(ember.randint(0, 2 ** 31 - 1, (1,), dtype=ember.int64, **kw).item())
    except Exception:  # noqa: BLE001 - no RNG in this build: fall back to Python's
        return random.getrandbits(31)


def _cleanup_at_exit():
    for it in list(_live_iters):
        it._shutdown_workers()


import atexit  # noqa: E402

atexit.register(_cleanup_at_exit)

del os, threading, warnings
