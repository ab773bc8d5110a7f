"""``ember.random``: the global random-number state (PyTorch's ``torch.random``) and
``fork_rng``, which runs a block of code without disturbing that state."""
from __future__ import annotations

import contextlib
import warnings
from typing import Iterable, Iterator

from ember._C.random import (
    default_generator,
    get_rng_state,
    initial_seed,
    manual_seed,
    seed,
    set_rng_state,
)

__all__ = ["set_rng_state", "get_rng_state", "manual_seed", "seed", "initial_seed",
           "fork_rng", "default_generator"]

_warned = [False]


@contextlib.contextmanager
def fork_rng(devices: Iterable[int] | None = None, enabled: bool = True,
             _caller: str = "fork_rng", _devices_kw: str = "devices",
             device_type: str | None = None) -> Iterator[None]:
    """Run the ``with`` block, then put the random state back as it was before it.

    Parameters
    ----------
    devices : iterable of int, optional
        Accelerator devices whose generators are forked too (the CPU generator always
        is). ``None``: every device of ``device_type`` (a warning when there are several).
    enabled : bool
        ``False`` runs the block without forking.
    device_type : str, optional
        The accelerator type (default: the current accelerator, else ``"cuda"``);
        ``"meta"`` forks nothing.

    Examples
    --------
    >>> import ember
    >>> _ = ember.manual_seed(0)
    >>> with ember.random.fork_rng():
    ...     _ = ember.rand(3)
    >>> a = ember.rand(2)
    >>> _ = ember.manual_seed(0)
    >>> bool((a == ember.rand(2)).all())
    True
    """
    if device_type == "meta" or not enabled:
        yield
        return
    import ember

    acc = ember.accelerator.current_accelerator()
    device_type = device_type or (acc.type if acc is not None else "cuda")
    device_mod = ember.get_device_module(device_type)
    if devices is None:
        count = device_mod.device_count()
        if count > 1 and not _warned[0]:
            warnings.warn(f"{device_type.upper()} reports that you have {count} available "
                          f"devices, and you have used {_caller} without explicitly specifying "
                          f"which devices are being used; every device's generator is forked, "
                          f"which can be slow. Pass the '{_devices_kw}' keyword argument to "
                          f"name the ones you use.", stacklevel=3)
            _warned[0] = True
        devices = list(range(count))
    else:
        devices = list(devices)     # a generator would be used up by the first pass
    cpu_state = get_rng_state()
    device_states = [device_mod.get_rng_state(d) for d in devices]
    try:
        yield
    finally:
        set_rng_state(cpu_state)
        for d, state in zip(devices, device_states):
            device_mod.set_rng_state(state, d)
