"""The CUDA twin of ``ember._C.foreach``: multi-tensor SGD and Adam/AdamW steps, the
fused total norm and gradient clipping (src_cuda/optim.cu), one launch per call.

Same contract as the CPU module: a function returns False (None for the norm) and
does nothing when the tensors don't fit the kernels (mixed dtypes or devices, not
float32/float64, not contiguous, shared buffers), and the optimizer falls back to
its per-tensor loop, which runs on the device op by op."""

from __future__ import annotations

import ctypes
from typing import Any

import ember
from ember.cuda import _kernels as K
from ember.cuda._dispatch import _lib, _stream


class _SgdArgs(ctypes.Structure):
    """``em_sgd_args`` (src_c/include/ember_foreach.h)."""

    _fields_ = [("lr", ctypes.c_double), ("weight_decay", ctypes.c_double),
                ("momentum", ctypes.c_double), ("dampening", ctypes.c_double),
                ("nesterov", ctypes.c_int), ("maximize", ctypes.c_int)]


class _AdamArgs(ctypes.Structure):
    """``em_adam_args``."""

    _fields_ = [("lr", ctypes.c_double), ("beta1", ctypes.c_double),
                ("beta2", ctypes.c_double), ("eps", ctypes.c_double),
                ("weight_decay", ctypes.c_double), ("amsgrad", ctypes.c_int),
                ("maximize", ctypes.c_int), ("decoupled", ctypes.c_int)]


def _rows(rows: list) -> tuple | None:
    """(dtype code, device, host pointer arrays per row, numel array) when every tensor
    of every row is a contiguous CUDA tensor of rows[0]'s dtype (float32/float64),
    device and sizes, and no two rows share a buffer; else None."""
    first = rows[0]
    if not first or any(len(r) != len(first) for r in rows):
        return None
    p0 = first[0]
    if not isinstance(p0, ember.Tensor) or not p0.is_cuda or \
            p0.dtype not in (ember.float32, ember.float64):
        return None
    dev, dt = p0.device, p0.dtype
    n = len(first)
    ptrs = [(ctypes.c_void_p * n)() for _ in rows]
    numel = (ctypes.c_int64 * n)()
    for k in range(n):
        m = first[k].numel() if isinstance(first[k], ember.Tensor) else -1
        seen = set()
        for r, row in enumerate(rows):
            t = row[k]
            if not isinstance(t, ember.Tensor) or t.device != dev or t.dtype != dt or \
                    t.numel() != m or not t.is_contiguous():
                return None
            p = t.data_ptr()
            if m and p in seen:        # the kernels read and write distinct buffers
                return None
            seen.add(p)
            ptrs[r][k] = p or None
        numel[k] = m
    return dt.code, dev, ptrs, numel


def _bump(*rows: list) -> None:
    """The in-place writes count as new versions (autograd's saved-tensor check)."""
    for row in rows:
        for t in row:
            t._bump_version()


def sgd_(params: list, grads: list, bufs: list, init: list, lr: float, weight_decay: float,
         momentum: float, dampening: float, nesterov: bool, maximize: bool) -> bool:
    """One SGD step over every (param, grad[, momentum buffer]) in one launch; False
    when the tensors don't fit."""
    mo = momentum != 0
    fit = _rows([params, grads, bufs] if mo else [params, grads])
    if fit is None:
        return False
    dt, dev, ptrs, numel = fit
    n = len(params)
    ini = (ctypes.c_uint8 * n)(*[1 if mo and init[k] else 0 for k in range(n)])
    a = _SgdArgs(lr, weight_decay, momentum, dampening, int(nesterov), int(maximize))
    with K.on_device(dev.index):
        K.check(_lib().emc_sgd_multi(dt, n, ptrs[0], ptrs[1], ptrs[2] if mo else None, ini,
                                     numel, ctypes.byref(a), _stream(params[0])), "SGD.step")
    _bump(params, bufs if mo else [])
    return True


def adam_(params: list, grads: list, exp_avgs: list, exp_avg_sqs: list,
          max_exp_avg_sqs: list, steps: list, lr: float, beta1: float, beta2: float,
          eps: float, weight_decay: float, amsgrad: bool, maximize: bool,
          decoupled: bool) -> bool:
    """One Adam (``decoupled``: AdamW) step over every parameter in one launch;
    ``steps[i]`` is parameter i's step count after it.  False when the tensors don't fit."""
    rows = [params, grads, exp_avgs, exp_avg_sqs] + ([max_exp_avg_sqs] if amsgrad else [])
    fit = _rows(rows)
    if fit is None:
        return False
    dt, dev, ptrs, numel = fit
    n = len(params)
    st = (ctypes.c_double * n)(*[float(s) for s in steps])
    a = _AdamArgs(lr, beta1, beta2, eps, weight_decay, int(amsgrad), int(maximize),
                  int(decoupled))
    with K.on_device(dev.index):
        K.check(_lib().emc_adam_multi(dt, n, ptrs[0], ptrs[1], ptrs[2], ptrs[3],
                                      ptrs[4] if amsgrad else None, st, numel, ctypes.byref(a),
                                      _stream(params[0])), "Adam.step")
    _bump(*([params] + rows[2:]))
    return True


def total_norm(tensors: list, p: float) -> Any:
    """The ``p``-norm (p > 0) of all ``tensors`` together as a 0-dim device tensor, in
    one pass over them (double sums in a fixed order); None when they don't fit."""
    fit = _rows([tensors])
    if fit is None or not p > 0:
        return None
    dt, dev, ptrs, numel = fit
    if p == float("inf") and any(numel[k] == 0 for k in range(len(tensors))):
        return None            # the per-tensor path raises for an empty max
    out = ember.empty((), dtype=tensors[0].dtype, device=dev)
    with K.on_device(dev.index):
        K.check(_lib().emc_total_norm(dt, len(tensors), ptrs[0], numel, ctypes.c_double(p),
                                      ctypes.c_void_p(out.data_ptr()), _stream(out)),
                "clip_grad_norm_")
    return out


def clip_(tensors: list, max_norm: float, norm: Any) -> bool:
    """Scale every tensor by ``max_norm / (norm + 1e-6)`` when that is below 1, with the
    coefficient computed on the device from the 0-dim ``norm`` (no synchronisation);
    False when the tensors don't fit."""
    fit = _rows([tensors])
    if fit is None or not isinstance(norm, ember.Tensor) or norm.device != tensors[0].device:
        return False
    dt, dev, ptrs, numel = fit
    nrm = norm.detach().reshape(()).to(tensors[0].dtype).contiguous()
    with K.on_device(dev.index):
        K.check(_lib().emc_clip_multi(dt, len(tensors), ptrs[0], numel,
                                      ctypes.c_void_p(nrm.data_ptr()),
                                      ctypes.c_double(max_norm), _stream(nrm)),
                "clip_grad_norm_")
    _bump(tensors)
    return True
