"""``ember.optim.Optimizer``: parameter groups, per-parameter state, state_dict round trip.

Each optimizer's ``step`` updates parameters in place under ``no_grad`` with whole-tensor
ops (one short loop over parameters, none over elements); SGD, Adam and AdamW run a whole
group in one multi-tensor C call (``ember._C.foreach``) unless ``foreach=False``. With
``differentiable=True`` the step runs with grad enabled, in ops autograd can follow."""
from __future__ import annotations

import copy
import functools
import itertools
from collections import OrderedDict, defaultdict

import ember
from ember._tensor import _capturing
from ember.autograd._hooks import add_hook

__all__ = ["Optimizer", "required"]


class _RequiredParameter:
    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


def _use_grad(step):
    """Run ``step`` under no_grad, or with grad enabled for ``differentiable=True`` so the
    update can be differentiated (the closure, if any, runs with grad enabled)."""
    def wrapper(self, closure=None):
        if closure is None and _capturing():
            # inside ember.compile: the update runs as an eager step between the graphs
            # (SGD, Adam and AdamW: generated code, see ember.compiler.codegen.optim)
            from ember.compiler import _eager_step
            from ember.compiler.codegen.optim import FusedUpdate
            return _eager_step("step", FusedUpdate(self, run), owner=self)
        return run(self, closure)

    def run(self, closure=None):
        for h in list(self._step_pre_hooks.values()):
            h(self, (), {})
        loss = None
        if closure is not None:
            with ember.autograd.enable_grad():
                loss = closure()
        with ember.autograd.set_grad_enabled(bool(self.defaults.get("differentiable"))):
            swapped = _complex_as_real(self)
            try:
                step(self)
            finally:
                if swapped:
                    _restore_complex(self, swapped)
        self._step_count = getattr(self, "_step_count", 0) + 1
        for h in list(self._step_post_hooks.values()):
            h(self, (), {})
        return loss

    wrapper.__name__ = step.__name__
    wrapper.__doc__ = step.__doc__
    return wrapper


def _complex_as_real(opt) -> list:
    """Let every complex parameter stand in the groups as its real view (..., 2), with its
    gradient and state viewed the same way, as torch's optimizers do: each real and
    imaginary part is updated as a parameter of its own.  Returns what to restore."""
    if opt.defaults.get("differentiable"):
        return []
    swapped = []
    views = opt.__dict__.setdefault("_real_views", {})   # one stand-in per parameter
    for group in opt.param_groups:
        params = group["params"]
        for i, p in enumerate(params):
            if not p.is_complex():
                continue
            r = views.get(p)
            if r is None or r.data_ptr() != p.data_ptr() or r.shape[:-1] != p.shape:
                r = views[p] = ember.view_as_real(p.detach())
            if p.grad is not None:
                r.grad = ember.view_as_real(p.grad)
            st = opt.state.pop(p, None)
            if st:
                opt.state[r] = {k: ember.view_as_real(v) if isinstance(v, ember.Tensor) and
                                v.is_complex() and tuple(v.shape) == tuple(p.shape) else v
                                for k, v in st.items()}
            params[i] = r
            swapped.append((group, i, p, r))
    return swapped


def _restore_complex(opt, swapped: list) -> None:
    for group, i, p, r in swapped:
        group["params"][i] = p
        st = opt.state.pop(r, None)
        if st:
            opt.state[p] = {k: ember.view_as_complex(v) if isinstance(v, ember.Tensor) and
                            tuple(v.shape) == tuple(r.shape) and v.is_floating_point() and
                            v.stride(-1) == 1 else v for k, v in st.items()}


class Optimizer:
    """Base class of all optimizers."""

    __module__ = "ember.optim"

    def __init__(self, params, defaults):
        self.defaults = defaults
        self.state = defaultdict(dict)
        self.param_groups = []
        self._init_hooks()
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
        self._init_hooks()

    def _init_hooks(self):
        self._step_pre_hooks = OrderedDict()
        self._step_post_hooks = OrderedDict()
        self._state_dict_pre_hooks = OrderedDict()
        self._state_dict_post_hooks = OrderedDict()
        self._load_state_dict_pre_hooks = OrderedDict()
        self._load_state_dict_post_hooks = OrderedDict()

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
            if not self.defaults.get("differentiable") and not (p.is_leaf or p.retains_grad):
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
        if _capturing():
            # inside ember.compile: an eager step, so every call resets the gradients
            from ember.compiler import _eager_step
            return _eager_step("zero_grad", functools.partial(type(self).zero_grad, self,
                                                             bool(set_to_none)), owner=self)
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
        for hook in list(self._state_dict_pre_hooks.values()):
            hook(self)
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
        packed_state = {(mappings[id(k)] if isinstance(k, ember.Tensor) else k): v
                        for k, v in self.state.items()}
        state_dict = {"state": packed_state, "param_groups": param_groups}
        for hook in list(self._state_dict_post_hooks.values()):
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

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
        """Load a :meth:`state_dict`; state tensors are copied (cast to each parameter's
        floating dtype), so two optimizers never share them."""
        state_dict = dict(state_dict)
        for hook in list(self._load_state_dict_pre_hooks.values()):
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
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
        for hook in list(self._load_state_dict_post_hooks.values()):
            hook(self)

    # ---- hooks -------------------------------------------------------------------
    def register_step_pre_hook(self, hook):
        return add_hook(self._step_pre_hooks, hook)

    def register_step_post_hook(self, hook):
        return add_hook(self._step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook, prepend=False):
        """``hook(optimizer)`` runs before :meth:`state_dict` builds the dict."""
        return add_hook(self._state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend=False):
        """``hook(optimizer, state_dict)`` runs on the built dict; a returned dict replaces
        it."""
        return add_hook(self._state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend=False):
        """``hook(optimizer, state_dict)`` runs before loading; a returned dict is loaded
        instead."""
        return add_hook(self._load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend=False):
        """``hook(optimizer)`` runs after :meth:`load_state_dict`."""
        return add_hook(self._load_state_dict_post_hooks, hook, prepend)


# ---- argument checks and values shared by the optimizers ------------------------------
_CAPTURABLE_DEVICES = ["cuda", "xpu", "hpu", "privateuseone", "xla"]


def _check_lr(lr) -> None:
    """``lr`` may be a float or a 1-element tensor, never negative."""
    if isinstance(lr, ember.Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")


def _check_adam_args(lr, betas, eps, weight_decay) -> None:
    _check_lr(lr)
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


def _check_fused(fused, foreach, differentiable, param_groups) -> None:
    """torch's rules for ``fused=True``: floating-point params, not with foreach or
    differentiable."""
    if not fused:
        return
    if differentiable:
        raise RuntimeError("`fused` does not support `differentiable`")
    if foreach:
        raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
    for g in param_groups:
        for p in g["params"]:
            if not p.is_floating_point():
                raise RuntimeError("`fused=True` requires all the params to be floating point "
                                   "Tensors of supported devices: ['cpu', 'cuda'].")


def _check_capturable(group, what="params and state_steps",
                      devices=_CAPTURABLE_DEVICES) -> None:
    """``capturable=True`` only means something inside a CUDA graph capture: like torch,
    refuse it for params (with a gradient) on other devices."""
    if group.get("capturable") and any(p.grad is not None and p.device.type not in devices
                                       for p in group["params"]):
        raise AssertionError(f"If capturable=True, {what} must be on supported devices: "
                             f"{devices}.")


def _value(x):
    """A Python number from a number or a 1-element tensor (``lr`` may be either)."""
    return x.item() if isinstance(x, ember.Tensor) else x


def _new_step(value=0.0):
    """The ``step`` state entry: a 0-dim float tensor, as torch stores it."""
    dt = ember.float64 if ember.get_default_dtype() == ember.float64 else ember.float32
    return ember.tensor(value, dtype=dt)


def _incr_step(state) -> float:
    """Add one to ``state['step']`` (tensor or number) and return the new value."""
    step = state["step"]
    if isinstance(step, ember.Tensor):
        step.add_(1)
        return step.item()
    state["step"] = _new_step(float(step) + 1)
    return float(step) + 1


def _multi_tensor(group) -> bool:
    """Whether a step may take the multi-tensor kernel: ``foreach`` None (the default) or
    True, or ``fused``; never when the step itself is differentiated."""
    return ((group.get("foreach") is not False or bool(group.get("fused")))
            and not group.get("differentiable") and not ember.is_grad_enabled())


def _foreach(tensors):
    """The multi-tensor kernels for ``tensors``: ``ember._C.foreach``, or its CUDA twin
    (``ember.cuda._optim``, same functions) for device tensors."""
    if tensors and getattr(tensors[0], "is_cuda", False):
        from ember.cuda import _optim
        return _optim
    from ember._C import foreach
    return foreach


def _grad_tracking(*tensors) -> bool:
    return ember.is_grad_enabled() and any(t.requires_grad for t in tensors)


def _add_eps(t, eps):
    """t + eps, in place unless autograd tracks ``t`` (its producer may have saved it)."""
    return t.add(eps) if _grad_tracking(t) else t.add_(eps)


def _lerp_(t, end, weight):
    """t <- t + weight * (end - t), differentiable when grad mode tracks the operands."""
    if _grad_tracking(t, end):
        return t.mul_(1 - weight).add_(end, alpha=weight)
    return ember.lerp(t, end, weight, out=t)


# ---- fused helpers: use a single kernel when the core has one -------------------
def _addcmul_(t, a, b, value):
    """t += value * a * b."""
    if _grad_tracking(a, b):  # state tensors change in place later: save copies
        a, b = a.clone(), b.clone()
    f = getattr(t, "addcmul_", None)
    if f is not None:
        return f(a, b, value=value)
    return t.add_(a * b, alpha=value)


def _addcdiv_(t, a, b, value):
    """t += value * a / b."""
    if _grad_tracking(a, b):
        a, b = a.clone(), b.clone()
    f = getattr(t, "addcdiv_", None)
    if f is not None:
        return f(a, b, value=value)
    return t.add_(a / b, alpha=value)
