"""``GradScaler``: dynamic loss scaling for mixed-precision training."""
from __future__ import annotations

import warnings
from typing import Any

import ember
from ember.amp.autocast_mode import _cuda_usable

__all__ = ["GradScaler"]

_READY, _UNSCALED, _STEPPED = 0, 1, 2


class GradScaler:
    """Scale the loss so that small gradients survive reduced precision, then unscale
    them before the optimizer step (PyTorch's ``torch.amp.GradScaler``).

    Parameters
    ----------
    device : str
        ``"cuda"`` (the default, as in PyTorch; disabled with a warning when CUDA is not
        available) or ``"cpu"``.
    init_scale, growth_factor, backoff_factor, growth_interval
        The scale starts at ``init_scale``; a step whose gradients hold an inf or NaN is
        skipped and the scale is multiplied by ``backoff_factor``; after
        ``growth_interval`` clean steps in a row it is multiplied by ``growth_factor``.
    enabled : bool
        ``False`` makes every method a pass-through.
    """

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16,
                 growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = device
        self._enabled = enabled
        if device == "cuda" and enabled and not _cuda_usable():
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  "
                          "Disabling.", UserWarning, stacklevel=2)
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise ValueError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise ValueError("The backoff factor must be < 1.0.")
        self._init_scale = init_scale
        self._growth_factor = growth_factor
        self._backoff_factor = backoff_factor
        self._growth_interval = growth_interval
        self._init_growth_tracker = 0
        self._scale = None
        self._growth_tracker = None
        self._per_optimizer: dict = {}

    def _state_of(self, optimizer):
        return self._per_optimizer.setdefault(id(optimizer),
                                              {"stage": _READY, "found_inf": None})

    def _lazy_init(self, device=None):
        # the scale lives where the loss does (on the device for "cuda": no copies per step)
        device = self._device if device is None else device
        self._scale = ember.full((), self._init_scale, dtype=ember.float32, device=device)
        self._growth_tracker = ember.full((), self._init_growth_tracker, dtype=ember.int32,
                                          device=device)

    def scale(self, outputs: Any) -> Any:
        """``outputs`` (a tensor or nested lists/tuples of them) times the scale factor."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, ember.Tensor):
            if self._scale is None:
                self._lazy_init(outputs.device)
            return outputs * self._scale.to(outputs.device, outputs.dtype)
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    def unscale_(self, optimizer) -> None:
        """Divide ``optimizer``'s gradients by the scale in place and record whether any
        holds an inf or NaN (at most once per optimizer between ``update`` calls)."""
        if not self._enabled:
            return
        if self._scale is None:
            raise RuntimeError("Attempted unscale_ but _scale is None.  This may indicate "
                               "your script did not use scaler.scale(loss or outputs) earlier "
                               "in the iteration.")
        st = self._state_of(optimizer)
        if st["stage"] == _UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since "
                               "the last update().")
        if st["stage"] == _STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        scale = self._scale
        with ember.no_grad():
            if scale.is_cuda:
                # on the device: no synchronisation until step() reads found_inf
                inv = scale.double().reciprocal().float()
                found = ember.zeros((), dtype=ember.bool, device=scale.device)
            else:
                inv = 1.0 / scale.double().item()
                found = False
            for group in optimizer.param_groups:
                for p in group["params"]:
                    g = p.grad
                    if g is None:
                        continue
                    if g.dtype == ember.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    if scale.is_cuda:
                        g.mul_(inv.to(g.device))
                        found = found | (~ember.isfinite(g)).any().to(found.device)
                    else:
                        g.mul_(inv)
                        found = found or not bool(ember.isfinite(g).all())
        st["found_inf"] = found.float() if scale.is_cuda else \
            ember.full((), 1.0 if found else 0.0, dtype=ember.float32)
        st["stage"] = _UNSCALED

    def step(self, optimizer, *args: Any, **kwargs: Any):
        """Unscale (unless ``unscale_`` was called) and run ``optimizer.step`` only when the
        gradients are finite; returns what ``step`` returned, or None when skipped."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is "
                               "enabled.")
        st = self._state_of(optimizer)
        if st["stage"] == _STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if st["stage"] == _READY:
            self.unscale_(optimizer)
        if st["found_inf"] is None:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        ret = None
        if not st["found_inf"].item():
            ret = optimizer.step(*args, **kwargs)
        st["stage"] = _STEPPED
        return ret

    def update(self, new_scale: float | ember.Tensor | None = None) -> None:
        """Adjust the scale: back off after a skipped step, grow after
        ``growth_interval`` clean ones (or set it to ``new_scale``)."""
        if not self._enabled:
            return
        if self._scale is None:
            raise RuntimeError("Attempted update but _scale is None.  This may indicate your "
                               "script did not use scaler.scale(loss or outputs) earlier in the "
                               "iteration.")
        if new_scale is not None:
            if isinstance(new_scale, float):
                self._scale.fill_(new_scale)
            else:
                if not (isinstance(new_scale, ember.Tensor) and new_scale.numel() == 1 and
                        new_scale.dtype == ember.float32 and not new_scale.requires_grad):
                    raise ValueError("new_scale should be a float or a 1-element "
                                     "torch.FloatTensor with requires_grad=False.")
                self._scale.copy_(new_scale.reshape(()))
        else:
            found = [s["found_inf"] for s in self._per_optimizer.values()
                     if s["found_inf"] is not None]
            if not found:
                raise AssertionError("No inf checks were recorded prior to update.")
            if any(f.item() for f in found):
                self._scale.mul_(self._backoff_factor)
                self._growth_tracker.fill_(0)
            else:
                n = int(self._growth_tracker.item()) + 1
                if n == self._growth_interval:
                    self._scale.mul_(self._growth_factor)
                    n = 0
                self._growth_tracker.fill_(n)
        self._per_optimizer = {}

    def get_scale(self) -> float:
        """The current scale as a Python float (1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else self._scale.item()

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if not self._enabled:
            return 0
        return self._init_growth_tracker if self._growth_tracker is None else \
            int(self._growth_tracker.item())

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict:
        """``scale``, ``growth_factor``, ``backoff_factor``, ``growth_interval`` and
        ``_growth_tracker`` (empty when disabled)."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict: dict) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])
