"""``ember.optim.Optimizer``: parameter groups, per-parameter state, state_dict round trip.

Each optimizer's ``step`` updates parameters in place under ``no_grad`` with whole-tensor
ops (one short loop over parameters, none over elements)."""
from __future__ import annotations

import copy
import itertools
from collections import OrderedDict, defaultdict

import ember
from ember.autograd._hooks import add_hook

__all__ = ["Optimizer", "required"]


class _RequiredParameter:
    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


def _no_grad():
    return ember.autograd.no_grad()


def _use_grad(step):
    """Run ``step`` under no_grad (the closure, if any, runs with grad enabled)."""
    def wrapper(self, closure=None):
        for h in list(self._step_pre_hooks.values()):
            h(self, (), {})
        loss = None
        if closure is not None:
            with ember.autograd.enable_grad():
                loss = closure()
        with _no_grad():
            step(self)
        self._step_count = getattr(self, "_step_count", 0) + 1
        for h in list(self._step_post_hooks.values()):
            h(self, (), {})
        return loss

    wrapper.__name__ = step.__name__
    wrapper.__doc__ = step.__doc__
    return wrapper


class Optimizer:
    """Base class of all optimizers."""

    __module__ = "ember.optim"

    def __init__(self, params, defaults):
        self.defaults = defaults
        self.state = defaultdict(dict)
        self.param_groups = []
        self._step_pre_hooks = OrderedDict()
        self._step_post_hooks = OrderedDict()
        self._step_count = 0
        if isinstance(params, ember.Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got " + type(params).__name__)
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for g in param_groups:
            self.add_param_group(g)

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state,
                "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._step_pre_hooks = OrderedDict()
        self._step_post_hooks = OrderedDict()

    def __repr__(self):
        s = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            s += "\n"
            s += f"Parameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    s += f"    {key}: {group[key]}\n"
        s += ")"
        return s

    def add_param_group(self, param_group):
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, ember.Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        else:
            param_group["params"] = list(params)
        plist = []
        for p in param_group["params"]:
            if isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str):
                param_group.setdefault("param_names", []).append(p[0])
                p = p[1]
            if not isinstance(p, ember.Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + type(p).__name__)
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
            plist.append(p)
        param_group["params"] = plist
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            param_group.setdefault(name, default)
        seen = set()
        for g in self.param_groups:
            seen.update(id(p) for p in g["params"])
        if any(id(p) in seen for p in plist):
            raise ValueError("some parameters appear in more than one parameter group")
        if len({id(p) for p in plist}) != len(plist):
            import warnings
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in "
                          "future, this will cause an error", stacklevel=3)
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none=True):
        """Reset the gradients of every parameter (to None by default)."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    if set_to_none:
                        p.grad = None
                    else:
                        g = p.grad
                        if g.grad_fn is not None:
                            g = g.detach()
                            p.grad = g
                        g.zero_()

    def step(self, closure=None):
        raise NotImplementedError

    # ---- state dict ---------------------------------------------------------
    def state_dict(self):
        """``{'state': {index: {...}}, 'param_groups': [{..., 'params': [indices]}]}``."""
        mappings = {}
        start = 0

        def pack_group(group):
            nonlocal start
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                if id(p) not in mappings:
                    mappings[id(p)] = i
            packed["params"] = [mappings[id(p)] for p in group["params"]]
            start += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {mappings[id(k)]: v for k, v in self.state.items()
                        if isinstance(k, ember.Tensor)}
        return {"state": packed_state, "param_groups": param_groups}

    @staticmethod
    def _process_value(param, value, key):
        if isinstance(value, ember.Tensor):
            if key == "step":
                return value.clone()
            if param.is_floating_point() and value.is_floating_point():
                return value.to(param.dtype).clone()
            return value.clone()
        if isinstance(value, dict):
            return {k: Optimizer._process_value(param, v, k) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(Optimizer._process_value(param, v, key) for v in value)
        return value

    def load_state_dict(self, state_dict):
        state_dict = dict(state_dict)
        groups = self.param_groups
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        param_lens = (len(g["params"]) for g in groups)
        saved_lens = (len(g["params"]) for g in saved_groups)
        if any(p_len != s_len for p_len, s_len in zip(param_lens, saved_lens)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")
        id_map = dict(zip(itertools.chain.from_iterable(g["params"] for g in saved_groups),
                          itertools.chain.from_iterable(g["params"] for g in groups)))
        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = self._process_value(param, v, None)
            else:
                state[k] = v

        def update_group(group, new_group):
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        self.state = state
        self.param_groups = [update_group(g, ng) for g, ng in zip(groups, saved_groups)]

    # ---- hooks -------------------------------------------------------------------
    def register_step_pre_hook(self, hook):
        return add_hook(self._step_pre_hooks, hook)

    def register_step_post_hook(self, hook):
        return add_hook(self._step_post_hooks, hook)


# ---- fused helpers: use a single kernel when the core has one -------------------
def _addcmul_(t, a, b, value):
    """t += value * a * b."""
    f = getattr(t, "addcmul_", None)
    if f is not None:
        return f(a, b, value=value)
    return t.add_(a * b, alpha=value)


def _addcdiv_(t, a, b, value):
    """t += value * a / b."""
    f = getattr(t, "addcdiv_", None)
    if f is not None:
        return f(a, b, value=value)
    return t.add_(a / b, alpha=value)
