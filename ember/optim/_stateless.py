"""``swap_in_optimizer_params_and_state``: run optimizer APIs on other parameter tensors
and another state for the duration of a ``with`` block."""
from __future__ import annotations

import contextlib
from collections import defaultdict

import ember

__all__ = ["swap_in_optimizer_params_and_state"]

_NAME = "swap_in_optimizer_params_and_state"


def _prepare(optimizer, swapin_parameters, swapin_optim_state):
    """Check the state_dict-shaped input against the live optimizer; returns the packed
    state and, per group, (live group, swap-in group, swap-in params)."""
    if not optimizer.state:
        raise RuntimeError(f"{_NAME} requires initialized optimizer state.")
    if not isinstance(swapin_optim_state, dict):
        raise RuntimeError(f"{_NAME} requires a DCP-style optimizer state_dict.")
    state = swapin_optim_state.get("state")
    if not isinstance(state, dict):
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['state'] to be a dict mapping "
                           f"packed parameter ids to per-param state dicts, got "
                           f"{type(state).__name__}.")
    if any(isinstance(k, ember.Tensor) for k in state):
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style state keyed by "
                           f"packed parameter ids.")
    if any(isinstance(k, int) and not isinstance(v, dict) for k, v in state.items()):
        raise RuntimeError(f"{_NAME} requires per-parameter optimizer state entries to be "
                           f"dictionaries.")
    groups = swapin_optim_state.get("param_groups")
    if not isinstance(groups, list):
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['param_groups'] to be a list "
                           f"of param-group dicts, got {type(groups).__name__}.")
    if len(optimizer.param_groups) != len(groups):
        raise RuntimeError("swapin_optim_state has a different number of parameter groups "
                           "than the live optimizer.")
    flat = list(swapin_parameters.values())
    offset, seen, infos = 0, set(), []
    for idx, (group, sgroup) in enumerate(zip(optimizer.param_groups, groups)):
        if not isinstance(sgroup, dict):
            raise RuntimeError(f"{_NAME} requires each optimizer param group to be a "
                               f"dictionary.")
        ids = sgroup.get("params")
        if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
            raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style "
                               f"param_groups[*]['params'] entries keyed by packed parameter "
                               f"ids.")
        if len(group["params"]) != len(ids):
            raise RuntimeError(f"swapin_optim_state param group {idx} has a different number "
                               f"of params than the live optimizer param group.")
        swapin_only = [k for k in sgroup if k not in group]
        live_only = [k for k in group if k not in sgroup]
        if swapin_only or live_only:
            raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style param group "
                               f"keys to exactly match the live optimizer group keys for group "
                               f"{idx}. Keys only in swap-in: {swapin_only}. Keys only in "
                               f"live: {live_only}.")
        seen.update(ids)
        if offset + len(ids) > len(flat):
            raise RuntimeError(f"{_NAME} requires the explicit parameter state to match "
                               f"optimizer.param_groups ordering.")
        infos.append((group, sgroup, flat[offset:offset + len(ids)]))
        offset += len(ids)
    extra = [k for k in state if k not in seen]
    if extra:
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['state'] to be keyed only by "
                           f"packed parameter ids from param_groups[*]['params']; got extra "
                           f"keys {extra!r}.")
    return state, infos


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(optimizer, swapin_parameters, swapin_optim_state):
    """Temporarily give ``optimizer`` the parameters ``swapin_parameters`` (a dict, in the
    order of its param groups) and the state of ``swapin_optim_state`` (shaped like
    :meth:`Optimizer.state_dict`); the live parameters, hyperparameters and state come
    back on exit. In-place updates of the swapped-in tensors stay in them."""
    state, infos = _prepare(optimizer, swapin_parameters, swapin_optim_state)
    original_state = optimizer.state
    snapshots = [dict(g) for g in optimizer.param_groups]
    try:
        swapped = defaultdict(dict)
        for group, sgroup, params in infos:
            group["params"] = params
            group.update({k: v for k, v in sgroup.items() if k != "params"})
            for p, pid in zip(params, sgroup["params"]):
                swapped[p] = dict(state.get(pid, {}))
        optimizer.state = swapped
        yield
    finally:
        for group, snap in zip(optimizer.param_groups, snapshots):
            group.clear()
            group.update(snap)
        optimizer.state = original_state
