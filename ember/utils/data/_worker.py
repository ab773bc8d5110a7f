"""The DataLoader worker process: fetch batches, send tensors back as NumPy arrays."""
from __future__ import annotations

import queue
import random
import sys
import traceback
from dataclasses import dataclass

__all__ = ["get_worker_info", "WorkerInfo"]

_worker_info = None


@dataclass(frozen=True)
class WorkerInfo:
    id: int
    num_workers: int
    seed: int
    dataset: object


def get_worker_info():
    """In a DataLoader worker: its id, the number of workers, its seed and its dataset
    copy. In the main process: None."""
    return _worker_info


class ExceptionWrapper:
    """An exception caught in a worker, carried to the main process with its traceback."""

    def __init__(self, exc_info, where):
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        msg = (f"Caught {self.exc_type.__name__} {self.where}.\nOriginal "
               f"{self.exc_msg}")
        if self.exc_type is KeyError:
            msg = _KeyErrorMessage(msg)
        try:
            exc = self.exc_type(msg)
        except Exception:  # noqa: BLE001 - constructor with another signature
            raise RuntimeError(msg) from None
        raise exc


class _KeyErrorMessage(str):
    def __repr__(self):
        return self


class _IterableStop:
    def __init__(self, worker_id):
        self.worker_id = worker_id


class _Resume:
    """Sent to persistent workers at the start of a new epoch."""


class _TensorPayload:
    """A tensor in transit: a NumPy array (rebuilt zero-copy with from_numpy)."""
    __slots__ = ("array", "dtype", "requires_grad")

    def __init__(self, array, dtype, requires_grad=False):
        self.array = array
        self.dtype = dtype
        self.requires_grad = requires_grad

    def __getstate__(self):
        return (self.array, self.dtype, self.requires_grad)

    def __setstate__(self, s):
        self.array, self.dtype, self.requires_grad = s


def _pack(obj):
    import ember
    if isinstance(obj, ember.Tensor):
        t = obj.detach()
        if t.dtype == ember.bfloat16:
            return _TensorPayload(t.float().contiguous().numpy(), "bfloat16")
        return _TensorPayload(t.contiguous().numpy(), None)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_pack(o) for o in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_pack(o) for o in obj)
    if isinstance(obj, dict):
        try:
            return type(obj)((k, _pack(v)) for k, v in obj.items())
        except TypeError:
            return {k: _pack(v) for k, v in obj.items()}
    return obj


def _unpack(obj):
    import ember
    if isinstance(obj, _TensorPayload):
        t = ember.from_numpy(obj.array)
        if obj.dtype == "bfloat16":
            t = t.to(ember.bfloat16)
        return t
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_unpack(o) for o in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_unpack(o) for o in obj)
    if isinstance(obj, dict):
        try:
            return type(obj)((k, _unpack(v)) for k, v in obj.items())
        except TypeError:
            return {k: _unpack(v) for k, v in obj.items()}
    return obj


def _worker_loop(kind, dataset, index_queue, result_queue, done_event, auto_collation,
                 collate_fn, drop_last, base_seed, init_fn, worker_id, num_workers, batch_size):
    global _worker_info
    try:
        import ember
        from ember.utils.data.dataloader import _make_fetcher
        try:
            ember.set_num_threads(1)
        except Exception:  # noqa: BLE001
            pass
        seed = base_seed + worker_id
        random.seed(seed)
        ms = getattr(ember, "manual_seed", None)
        if ms is not None:
            ms(seed)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,
                                  dataset=dataset)
        init_exception = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = _make_fetcher(kind, dataset, auto_collation, collate_fn, drop_last,
                                    batch_size)
        except Exception:  # noqa: BLE001 - reported to the main process
            init_exception = ExceptionWrapper(sys.exc_info(),
                                              f"in DataLoader worker process {worker_id}")
        exhausted = False
        while True:
            try:
                r = index_queue.get(timeout=5.0)
            except queue.Empty:
                if done_event.is_set():
                    break
                continue
            if isinstance(r, _Resume):
                result_queue.put((r, None))
                exhausted = False
                fetcher = _make_fetcher(kind, dataset, auto_collation, collate_fn, drop_last,
                                        batch_size)
                continue
            if r is None:
                break
            if done_event.is_set() or exhausted:
                continue
            idx, index = r
            if init_exception is not None:
                data, init_exception = init_exception, None
            else:
                try:
                    data = _pack(fetcher.fetch(index))
                except Exception as e:  # noqa: BLE001 - reported to the main process
                    if isinstance(e, StopIteration) and kind == "iterable":
                        data = _IterableStop(worker_id)
                        exhausted = True
                    else:
                        data = ExceptionWrapper(sys.exc_info(),
                                                f"in DataLoader worker process {worker_id}")
            result_queue.put((idx, data))
            del data
    except KeyboardInterrupt:
        pass
    if done_event.is_set():
        result_queue.cancel_join_thread()
        result_queue.close()
