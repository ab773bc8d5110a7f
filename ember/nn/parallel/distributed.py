"""``DistributedDataParallel``: data-parallel training over an ``ember.distributed``
process group.

Gradients are averaged in buckets: each parameter's post-accumulate-grad hook
copies its gradient into its bucket, and a bucket whose gradients are all in
starts an asynchronous all-reduce while backward goes on (buckets start in the
same order on every rank, as MPI requires). When the last gradient is in, the
reduced buckets are copied back into ``.grad``."""
from __future__ import annotations

import weakref
from contextlib import contextmanager
from typing import Any, Iterator, Optional

import ember
from ember import distributed as dist
from ember.nn.modules.module import Module

__all__ = ["DistributedDataParallel"]

_MB = 1024 * 1024
_FIRST_BUCKET_BYTES = 1 * _MB    # a small first bucket starts communication early


class _Bucket:
    __slots__ = ("indices", "flat", "views", "pending", "work")

    def __init__(self, indices: list, params: list) -> None:
        self.indices = indices
        sizes = [params[i].numel() for i in indices]
        self.flat = ember.zeros(sum(sizes), dtype=params[indices[0]].dtype)
        self.views = []
        off = 0
        for i, n in zip(indices, sizes):
            self.views.append(self.flat[off:off + n].view(params[i].shape))
            off += n
        self.pending = 0
        self.work = None


def _bucket_assignment(params: list, cap_bytes: int) -> list:
    """Parameter indices per bucket, last parameters first (their gradients are
    ready first in backward); one dtype per bucket."""
    buckets, open_ = [], {}
    cap = {}
    for i in reversed(range(len(params))):
        p = params[i]
        dt = p.dtype
        cur = open_.setdefault(dt, [[], 0])
        cur[0].append(i)
        cur[1] += p.numel() * p.element_size()
        if cur[1] >= cap.get(dt, min(_FIRST_BUCKET_BYTES, cap_bytes) if not buckets
                                     else cap_bytes):
            buckets.append(cur[0])
            cap[dt] = cap_bytes
            del open_[dt]
    buckets.extend(c[0] for c in open_.values() if c[0])
    return buckets


def _tensors_in(obj: Any) -> Iterator[Any]:
    if isinstance(obj, ember.Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            yield from _tensors_in(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from _tensors_in(o)


def _reachable_leaves(outputs: Any) -> set:
    """ids of the leaf tensors whose gradients backward from ``outputs`` would reach."""
    seen, leaves = set(), set()
    stack = [t.grad_fn for t in _tensors_in(outputs) if t.grad_fn is not None]
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        var = getattr(fn, "variable", None)
        if var is not None:
            leaves.add(id(var))
        stack.extend(n for n, _ in fn.next_functions if n is not None)
    return leaves


class DistributedDataParallel(Module):
    """Wrap ``module`` so that ``backward`` averages its gradients across the ranks
    of ``process_group`` (one process per rank, each on its own slice of the data).

    Parameters
    ----------
    module : Module
        The model; every rank builds the same one. Rank 0's parameters and
        buffers are broadcast to the others at construction.
    device_ids, output_device : None
        CPU modules take none (as in PyTorch).
    dim : int
        Kept for PyTorch's signature; inputs are never split (one device per rank).
    broadcast_buffers : bool
        Broadcast rank 0's buffers (e.g. BatchNorm statistics) before each forward.
    init_sync : bool
        Broadcast rank 0's parameters and buffers at construction.
    process_group : ProcessGroup, optional
        The default group when omitted.
    bucket_cap_mb : float, optional
        Gradient bucket size in MiB (25 by default; the first bucket is 1 MiB).
    find_unused_parameters : bool
        Find, after each forward, the parameters the output does not depend on,
        so that backward does not wait for their gradients. Without it every
        parameter that requires grad must get a gradient in every iteration.
    gradient_as_bucket_view : bool
        Leave each ``.grad`` as a view into its bucket (no copy back).

    Notes
    -----
    ``state_dict`` keys carry the ``module.`` prefix, as in PyTorch.
    """

    def __init__(self, module: Module, device_ids: Optional[list] = None,
                 output_device: Any = None, dim: int = 0, broadcast_buffers: bool = True,
                 init_sync: bool = True, process_group: Optional[dist.ProcessGroup] = None,
                 bucket_cap_mb: Optional[float] = None, find_unused_parameters: bool = False,
                 gradient_as_bucket_view: bool = False) -> None:
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel: module must be an nn.Module, got "
                            f"{type(module).__name__}")
        params = [p for _, p in module.named_parameters() if p.requires_grad]
        if not params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't "
                               "have any parameter that requires a gradient.")
        devices = {p.device.type for p in params}
        if device_ids is not None or output_device is not None or devices != {"cpu"}:
            raise ValueError(f"DistributedDataParallel device_ids and output_device arguments "
                             f"only work with CPU modules here, but got device_ids "
                             f"{device_ids}, output_device {output_device}, and module "
                             f"parameters on {sorted(devices)}.")
        if bucket_cap_mb is not None and not bucket_cap_mb > 0:
            raise ValueError(f"DistributedDataParallel: bucket_cap_mb must be positive, got "
                             f"{bucket_cap_mb}")
        self.module = module
        pg = dist.process_group._resolve(process_group)
        d = self.__dict__
        d["process_group"] = pg
        d["dim"] = dim
        d["broadcast_buffers"] = broadcast_buffers
        d["find_unused_parameters"] = find_unused_parameters
        d["gradient_as_bucket_view"] = gradient_as_bucket_view
        d["bucket_bytes_cap"] = int((25 if bucket_cap_mb is None else bucket_cap_mb) * _MB)
        d["require_backward_grad_sync"] = True
        d["_params"] = params
        d["_index"] = {id(p): i for i, p in enumerate(params)}
        d["_buckets"] = [_Bucket(ix, params)
                         for ix in _bucket_assignment(params, self.bucket_bytes_cap)]
        d["_where"] = {}
        for b, bucket in enumerate(self._buckets):
            for k, i in enumerate(bucket.indices):
                self._where[i] = (b, k)
        d["_ready"] = [False] * len(params)
        d["_n_ready"] = 0
        d["_next_bucket"] = 0
        d["_syncing"] = False
        d["_used_work"] = None
        d["_used"] = None
        self._verify_same_params()
        if init_sync:
            self._broadcast_coalesced(list(module.parameters()) + list(module.buffers()))
        ref = weakref.ref(self)

        def hook(p, ref=ref):
            ddp = ref()
            if ddp is not None:
                ddp._on_grad(p)
        d["_hook_handles"] = [p.register_post_accumulate_grad_hook(hook) for p in params]

    # ---- construction helpers ----------------------------------------------
    def _verify_same_params(self) -> None:
        mine = [(tuple(p.shape), str(p.dtype)) for p in self._params]
        every = [None] * self.process_group.size()
        dist.all_gather_object(every, mine, group=self.process_group)
        for r, theirs in enumerate(every):
            if theirs != mine:
                raise RuntimeError(
                    f"DistributedDataParallel: rank {self.process_group._global(r)} has "
                    f"parameters of other shapes or dtypes than rank {dist.get_rank()} "
                    f"({len(theirs)} vs {len(mine)} parameters); every rank must build the "
                    f"same model")

    def _broadcast_coalesced(self, tensors: list) -> None:
        """Broadcast ``tensors`` from the group's first rank, one message per dtype."""
        if self.process_group.size() == 1:
            return
        by_dtype = {}
        for t in tensors:
            by_dtype.setdefault(t.dtype, []).append(t)
        src = self.process_group._global(0)
        with ember.no_grad():
            for ts in by_dtype.values():
                flat = ember.cat([t.detach().reshape(-1) for t in ts])
                dist.broadcast(flat, src=src, group=self.process_group)
                off = 0
                for t in ts:
                    n = t.numel()
                    t.detach().copy_(flat[off:off + n].view(t.shape))
                    off += n

    # ---- forward -------------------------------------------------------------
    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        if self._syncing and self._n_ready:
            missing = [i for i, r in enumerate(self._ready) if not r]
            raise RuntimeError(
                f"Expected to have finished reduction in the prior iteration before starting a "
                f"new one. This error indicates that your module has parameters that were not "
                f"used in producing loss (parameter indices {missing[:20]} received no "
                f"gradient). You can enable unused parameter detection by passing the keyword "
                f"argument `find_unused_parameters=True` to "
                f"`ember.nn.parallel.DistributedDataParallel`, and by making sure all `forward` "
                f"function outputs participate in calculating loss.")
        if self.broadcast_buffers:
            bufs = list(self.module.buffers())
            if bufs:
                self._broadcast_coalesced(bufs)
        out = self.module(*inputs, **kwargs)
        if ember.is_grad_enabled() and self.require_backward_grad_sync:
            self._prepare_for_backward(out)
        else:
            self.__dict__["_syncing"] = False
        return out

    def _prepare_for_backward(self, out: Any) -> None:
        d = self.__dict__
        d["_ready"] = [False] * len(self._params)
        d["_n_ready"] = 0
        d["_next_bucket"] = 0
        d["_syncing"] = True
        for b in self._buckets:
            b.pending = len(b.indices)
            b.work = None
        if self.find_unused_parameters:
            reach = _reachable_leaves(out)
            used = ember.tensor([1 if id(p) in reach else 0 for p in self._params],
                                dtype=ember.int32)
            d["_used"] = used
            d["_used_work"] = dist.all_reduce(used, op=dist.ReduceOp.MAX,
                                              group=self.process_group, async_op=True)
            for i, p in enumerate(self._params):
                if id(p) not in reach:
                    self._mark_ready(i, None)

    # ---- backward: hooks and buckets ------------------------------------------
    def _on_grad(self, p: Any) -> None:
        if not self._syncing:
            return
        i = self._index[id(p)]
        if self._ready[i]:
            raise RuntimeError(f"DistributedDataParallel: parameter {i} got its gradient twice "
                               f"in one backward; reentrant backward or a second backward "
                               f"without a forward is not supported while syncing")
        self._mark_ready(i, p.grad)

    def _mark_ready(self, i: int, grad: Any) -> None:
        b, k = self._where[i]
        bucket = self._buckets[b]
        view = bucket.views[k]
        if grad is None:
            view.zero_()
        elif grad.data_ptr() != view.data_ptr():
            view.copy_(grad.detach())
        self._ready[i] = True
        self.__dict__["_n_ready"] += 1
        bucket.pending -= 1
        # launch ready buckets strictly in index order: MPI needs the same order everywhere
        while self._next_bucket < len(self._buckets) and \
                self._buckets[self._next_bucket].pending == 0:
            nb = self._buckets[self._next_bucket]
            nb.flat.div_(self.process_group.size())
            nb.work = dist.all_reduce(nb.flat, group=self.process_group, async_op=True)
            self.__dict__["_next_bucket"] += 1
        for nb in self._buckets[:self._next_bucket]:      # drive MPI's progress
            if not nb.work.is_completed():
                break
        if self._n_ready == len(self._params):
            self._finish()

    def _finish(self) -> None:
        self.__dict__["_syncing"] = False
        for b in self._buckets:
            b.work.wait()
        globally_used = None
        if self._used_work is not None:
            self._used_work.wait()
            globally_used = self._used.tolist()
            self.__dict__["_used_work"] = None
        with ember.no_grad():
            for b in self._buckets:
                for i, view in zip(b.indices, b.views):
                    if globally_used is not None and not globally_used[i]:
                        continue
                    p = self._params[i]
                    if self.gradient_as_bucket_view:
                        p.grad = view
                    elif p.grad is None:
                        p.grad = view.clone()
                    else:
                        p.grad.copy_(view)

    # ---- public API --------------------------------------------------------------
    @contextmanager
    def no_sync(self) -> Iterator[None]:
        """Inside this context backward accumulates gradients locally, without
        communication; the first backward after it averages the accumulated ones."""
        old = self.require_backward_grad_sync
        self.__dict__["require_backward_grad_sync"] = False
        try:
            yield
        finally:
            self.__dict__["require_backward_grad_sync"] = old

    def extra_repr(self) -> str:
        return (f"process_group={self.process_group._desc}, buckets={len(self._buckets)}, "
                f"find_unused_parameters={self.find_unused_parameters}")
