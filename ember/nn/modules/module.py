"""``ember.nn.Module``: the base class of every layer, with PyTorch's semantics.

Parameters, buffers and submodules register themselves on attribute assignment;
``state_dict``/``load_state_dict`` walk the tree with dotted keys; hooks run around
``forward``."""
from __future__ import annotations

import functools
import itertools
import warnings
from collections import OrderedDict, namedtuple
from typing import Any, Callable

import ember
from ember._tensor import _capturing
from ember.autograd._hooks import RemovableHandle, add_hook
from ember.nn.parameter import Buffer, Parameter, UninitializedParameter

__all__ = ["Module", "register_module_forward_pre_hook", "register_module_forward_hook",
           "register_module_backward_hook", "register_module_full_backward_hook",
           "register_module_full_backward_pre_hook"]

_global_forward_pre_hooks: "OrderedDict[int, object]" = OrderedDict()
_global_forward_hooks: "OrderedDict[int, object]" = OrderedDict()
_global_backward_pre_hooks: "OrderedDict[int, object]" = OrderedDict()
_global_backward_hooks: "OrderedDict[int, object]" = OrderedDict()
_global_is_full_backward_hook: bool | None = None


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def register_module_forward_pre_hook(hook):
    """A pre-hook that runs before every module's forward."""
    return add_hook(_global_forward_pre_hooks, hook)


def register_module_forward_hook(hook):
    """A hook that runs after every module's forward."""
    return add_hook(_global_forward_hooks, hook)


def register_module_full_backward_pre_hook(hook: Callable) -> RemovableHandle:
    """Register a backward pre-hook common to all modules.

    Parameters
    ----------
    hook : callable
        ``hook(module, grad_output) -> tuple of Tensor or None``, as for
        :meth:`Module.register_full_backward_pre_hook`; global pre-hooks fire before the
        module's own.

    Returns
    -------
    RemovableHandle
        ``handle.remove()`` unregisters the hook.
    """
    return add_hook(_global_backward_pre_hooks, hook)


def register_module_full_backward_hook(hook: Callable) -> RemovableHandle:
    """Register a backward hook common to all modules.

    Parameters
    ----------
    hook : callable
        ``hook(module, grad_input, grad_output) -> tuple of Tensor or None``, as for
        :meth:`Module.register_full_backward_hook`; global hooks fire before the
        module's own.

    Returns
    -------
    RemovableHandle
        ``handle.remove()`` unregisters the hook.

    Raises
    ------
    RuntimeError
        If a global non-full hook (:func:`register_module_backward_hook`) was registered.
    """
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is False:
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks as a "
                           "global Module hook. Please use only one of them.")
    _global_is_full_backward_hook = True
    return add_hook(_global_backward_hooks, hook)


def register_module_backward_hook(hook: Callable) -> RemovableHandle:
    """Register a (deprecated, non-full) backward hook common to all modules.

    Parameters
    ----------
    hook : callable
        ``hook(module, grad_input, grad_output)``, attached to the ``grad_fn`` of the
        module's (first) output, as :meth:`Module.register_backward_hook`.

    Returns
    -------
    RemovableHandle
        ``handle.remove()`` unregisters the hook.

    Raises
    ------
    RuntimeError
        If a global full hook (:func:`register_module_full_backward_hook`) was registered.
    """
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is True:
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks as a "
                           "global Module hook. Please use only one of them.")
    _global_is_full_backward_hook = False
    return add_hook(_global_backward_hooks, hook)


_BackwardHookFunction = None


def _backward_hook_function():
    """The identity autograd Function whose graph node carries a module's backward hooks
    (built on first use: ember.autograd loads lazily)."""
    global _BackwardHookFunction
    if _BackwardHookFunction is None:
        from ember.autograd import Function

        class BackwardHookFunction(Function):
            @staticmethod
            def forward(ctx, *args):
                ctx.mark_non_differentiable(*[a for a in args if not a.requires_grad])
                return args

            @staticmethod
            def backward(ctx, *args):
                return args

        _BackwardHookFunction = BackwardHookFunction
    return _BackwardHookFunction


class BackwardHook:
    """Runs a module's full backward (pre-)hooks for one forward call.

    The tensor inputs and outputs of the module pass through an identity autograd
    Function each; a hook on the output node sees the gradients w.r.t. the outputs
    (and runs the pre-hooks), a hook on the input node sees the gradients w.r.t. the
    inputs and runs the user hooks with both. Non-tensor positions read ``None``."""

    def __init__(self, module: "Module", user_hooks: list, user_pre_hooks: list) -> None:
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.module = module
        self.grad_outputs = None
        self.n_outputs = -1
        self.output_tensors_index = None
        self.n_inputs = -1
        self.input_tensors_index = None

    @staticmethod
    def _pack_with_none(indices, values, size):
        res = [None] * size
        for idx, val in zip(indices, values):
            res[idx] = val
        return tuple(res)

    @staticmethod
    def _unpack_none(indices, values):
        return tuple(values[idx] for idx in indices)

    def _set_user_hook(self, grad_fn):
        def hook(grad_input, _):
            if self.grad_outputs is None:
                # the gradient reached the inputs without passing through the outputs
                return None
            res = self._pack_with_none(self.input_tensors_index, grad_input, self.n_inputs)
            for user_hook in self.user_hooks:
                out = user_hook(self.module, res, self.grad_outputs)
                if out is None:
                    continue
                if not isinstance(out, tuple):
                    out = (out,)
                if len(out) != len(res):
                    raise RuntimeError(f"Backward hook returned an invalid number of "
                                       f"grad_input, got {len(out)}, but expected {len(res)}")
                res = out
            self.grad_outputs = None
            return self._unpack_none(self.input_tensors_index, res)

        grad_fn.register_hook(hook)

    def _apply_on_tensors(self, fn, args):
        tensors_idx = []
        tensors = []
        requires_grad = False
        for i, arg in enumerate(args):
            if isinstance(arg, ember.Tensor):
                tensors_idx.append(i)
                tensors.append(arg)
                requires_grad |= arg.requires_grad
        if not (requires_grad and ember.is_grad_enabled()):
            return args, None
        new_tensors = _backward_hook_function().apply(*tensors)
        if len(new_tensors) == 0:
            raise RuntimeError("Cannot set Module backward hook for a Module with no input "
                               "Tensors.")
        grad_fns = [t.grad_fn for t in new_tensors if t.grad_fn is not None
                    and t.grad_fn.name() == "BackwardHookFunctionBackward"]
        if not grad_fns:
            raise RuntimeError("Error while setting up backward hooks: no tensor passed "
                               "through the hook node.")
        fn(grad_fns[0])
        arg_list = list(args)
        for idx, val in zip(tensors_idx, new_tensors):
            arg_list[idx] = val
        if type(args) is tuple:
            out = tuple(arg_list)
        else:
            out = type(args)(*arg_list)
        return out, tensors_idx

    def setup_input_hook(self, args):
        """Route the module's tensor inputs through the hook node; returns new args."""
        res, input_idx = self._apply_on_tensors(self._set_user_hook, args)
        self.n_inputs = len(args)
        self.input_tensors_index = input_idx
        return res

    def setup_output_hook(self, args):
        """Route the module's tensor outputs through the hook node; returns new outputs."""
        def fn(grad_fn):
            def hook(_, grad_output):
                self.grad_outputs = self._pack_with_none(self.output_tensors_index,
                                                         grad_output, self.n_outputs)
                if self.user_pre_hooks:
                    expected_len = len(self.grad_outputs)
                    for user_pre_hook in self.user_pre_hooks:
                        hook_grad_outputs = user_pre_hook(self.module, self.grad_outputs)
                        if hook_grad_outputs is None:
                            continue
                        if not isinstance(hook_grad_outputs, tuple):
                            hook_grad_outputs = (hook_grad_outputs,)
                        if len(hook_grad_outputs) != expected_len:
                            raise RuntimeError(f"Backward pre hook returned an invalid number "
                                               f"of grad_output, got "
                                               f"{len(hook_grad_outputs)}, but expected "
                                               f"{expected_len}")
                        self.grad_outputs = hook_grad_outputs
                local_grad_outputs = self.grad_outputs
                if self.input_tensors_index is None:
                    # no input requires grad: the hooks fire here, on the outputs
                    warnings.warn("Full backward hook is firing when gradients are computed "
                                  "with respect to module outputs since no inputs require "
                                  "gradients. See the documentation of "
                                  "ember.nn.Module.register_full_backward_hook for details.",
                                  stacklevel=5)
                    grad_inputs = self._pack_with_none([], [], self.n_inputs)
                    for user_hook in self.user_hooks:
                        res = user_hook(self.module, grad_inputs, self.grad_outputs)
                        if res is not None and not (isinstance(res, tuple)
                                                    and all(el is None for el in res)):
                            raise RuntimeError("Backward hook for Modules where no input "
                                               "requires gradient should always return None "
                                               "or None for all gradients.")
                    self.grad_outputs = None
                if local_grad_outputs is not None:
                    return tuple(local_grad_outputs[i] for i in self.output_tensors_index)
                return None

            grad_fn.register_hook(hook)

        is_tuple = isinstance(args, tuple)
        if not is_tuple:
            args = (args,)
        res, output_idx = self._apply_on_tensors(fn, args)
        self.n_outputs = len(args)
        self.output_tensors_index = output_idx
        return res if is_tuple else res[0]


class _WrappedHook:
    """A non-full backward hook bound to its module: ``hook(module, gi, go)``."""

    def __init__(self, hook, module):
        self.hook = hook
        self.module = module

    def __call__(self, grad_input, grad_output):
        return self.hook(self.module, grad_input, grad_output)


def _addindent(s, n):
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    first = lines.pop(0)
    return first + "\n" + "\n".join(" " * n + line for line in lines)


# Writes to any module's attributes, parameters, buffers or children: compiled code
# re-checks its guards on module state only when this count moved.
_state_writes = [0]


class Module:
    """Base class for all neural network modules."""

    __module__ = "ember.nn"
    training: bool
    _version = 1
    call_super_init = False

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments")
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = {}
        d["_buffers"] = {}
        d["_non_persistent_buffers_set"] = set()
        d["_modules"] = {}
        d["_forward_pre_hooks"] = OrderedDict()
        d["_forward_pre_hooks_with_kwargs"] = {}
        d["_forward_hooks"] = OrderedDict()
        d["_forward_hooks_with_kwargs"] = {}
        d["_forward_hooks_always_called"] = {}
        d["_state_dict_hooks"] = OrderedDict()
        d["_load_state_dict_pre_hooks"] = OrderedDict()
        d["_load_state_dict_post_hooks"] = OrderedDict()
        d["_state_dict_pre_hooks"] = OrderedDict()
        d["_backward_hooks"] = OrderedDict()
        d["_backward_pre_hooks"] = OrderedDict()
        d["_is_full_backward_hook"] = None

    # replaced by subclasses; typed as torch types it, so `module.forward(...)` checks
    forward: Callable[..., Any] = None  # type: ignore[assignment]

    # ---- registration ---------------------------------------------------------
    def register_buffer(self, name, tensor, persistent=True):
        """Add a buffer (saved in ``state_dict`` unless ``persistent=False``)."""
        _state_writes[0] += 1
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"buffer name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError('buffer name can\'t contain "."')
        if name == "":
            raise KeyError('buffer name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, ember.Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer "
                            f"'{name}' (ember Tensor or None required)")
        if isinstance(tensor, Buffer):
            tensor = tensor.detach()
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name, param):
        """Add a parameter (``None`` is allowed and skipped by ``parameters()``)."""
        _state_writes[0] += 1
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"parameter name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError('parameter name can\'t contain "."')
        if name == "":
            raise KeyError('parameter name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is None:
            self._parameters[name] = None
        elif not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter "
                            f"'{name}' (ember.nn.Parameter or None required)")
        elif param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model "
                             f"parameters must be created explicitly.")
        else:
            self._parameters[name] = param

    def add_module(self, name, module):
        """Add a child module."""
        _state_writes[0] += 1
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {type(name).__name__}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target):
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(f"{mod._get_name()} has no attribute `{item}`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return mod

    def get_parameter(self, target):
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        p = getattr(mod, name)
        if not isinstance(p, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return p

    def get_buffer(self, target):
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if name not in mod._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return mod._buffers[name]

    # ---- attribute protocol ---------------------------------------------------
    def __getattr__(self, name):
        d = self.__dict__
        if "_parameters" in d:
            p = d["_parameters"]
            if name in p:
                return p[name]
        if "_buffers" in d:
            b = d["_buffers"]
            if name in b:
                return b[name]
        if "_modules" in d:
            m = d["_modules"]
            if name in m:
                return m[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        _state_writes[0] += 1
        d = self.__dict__

        def remove_from(*dicts_or_sets):
            for s in dicts_or_sets:
                if name in s:
                    if isinstance(s, dict):
                        del s[name]
                    else:
                        s.discard(name)

        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(d, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter "
                                f"'{name}' (ember.nn.Parameter or None expected)")
            self.register_parameter(name, value)
            return
        modules = d.get("_modules")
        if isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            remove_from(d, self._parameters, self._buffers, self._non_persistent_buffers_set)
            modules[name] = value
            return
        if modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module "
                                f"'{name}' (ember.nn.Module or None expected)")
            modules[name] = value
            return
        buffers = d.get("_buffers")
        if isinstance(value, Buffer) or (buffers is not None and name in buffers):
            if value is not None and not isinstance(value, ember.Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                f"(ember.Tensor or None expected)")
            if isinstance(value, Buffer):
                persistent = value.persistent
                remove_from(d, self._parameters, self._modules)
            else:
                persistent = name not in self._non_persistent_buffers_set
            self.register_buffer(name, value, persistent)
            return
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        _state_writes[0] += 1
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self):
        keys = list(object.__dir__(self)) + list(self._parameters) + list(self._modules) + \
            list(self._buffers)
        return sorted(k for k in set(keys) if not k[0].isdigit())

    def __getstate__(self):
        return self.__dict__.copy()

    def __setstate__(self, state):
        _state_writes[0] += 1
        self.__dict__.update(state)
        self.__dict__.setdefault("_backward_hooks", OrderedDict())
        self.__dict__.setdefault("_backward_pre_hooks", OrderedDict())
        self.__dict__.setdefault("_is_full_backward_hook", None)

    # ---- iteration ------------------------------------------------------------
    def _named_members(self, get_members_fn, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = (self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
                   if recurse else [(prefix, self)])
        for module_prefix, module in modules:
            for k, v in get_members_fn(module):
                if v is None or (remove_duplicate and id(v) in memo):
                    continue
                if remove_duplicate:
                    memo.add(id(v))
                yield (module_prefix + ("." if module_prefix else "") + k, v)

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_members(lambda m: m._parameters.items(), prefix=prefix,
                                   recurse=recurse, remove_duplicate=remove_duplicate)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_members(lambda m: m._buffers.items(), prefix=prefix,
                                   recurse=recurse, remove_duplicate=remove_duplicate)

    def children(self):
        for _, m in self.named_children():
            yield m

    def named_children(self):
        memo = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in memo:
                memo.add(id(module))
                yield name, module

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        if memo is None:
            memo = set()
        if id(self) in memo:
            return
        if remove_duplicate:
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, sub, remove_duplicate)

    # ---- modes and conversions ------------------------------------------------
    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for m in self.children():
            m.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        if _capturing():
            # inside ember.compile: an eager step, so every call resets the gradients
            # (a replay of the graphs alone would not)
            from ember.compiler import _eager_step
            return _eager_step("zero_grad", functools.partial(type(self).zero_grad, self,
                                                             bool(set_to_none)))
        for p in self.parameters():
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    g = p.grad
                    if g.grad_fn is not None:
                        g = g.detach()
                        p.grad = g
                    g.zero_()

    def apply(self, fn):
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def _apply(self, fn, recurse=True):
        _state_writes[0] += 1
        if recurse:
            for m in self.children():
                m._apply(fn)
        from ember.autograd import no_grad
        for key, p in self._parameters.items():
            if p is None:
                continue
            with no_grad():
                new = fn(p)
            if new is p:
                continue
            np_ = Parameter(new, p.requires_grad)
            if p.grad is not None:
                with no_grad():
                    np_.grad = fn(p.grad)
            self._parameters[key] = np_
        for key, b in self._buffers.items():
            if b is not None:
                self._buffers[key] = fn(b)
        return self

    def to(self, *args, **kwargs):
        """Convert parameters and floating-point buffers (``to(dtype)``, ``to(device)``,
        ``to(tensor)``); integer buffers keep their dtype. ``memory_format=`` lays out
        the 4-D and 5-D ones (``ember.channels_last``)."""
        dtype = kwargs.pop("dtype", None)
        device = kwargs.pop("device", None)
        kwargs.pop("non_blocking", None)
        fmt = kwargs.pop("memory_format", None)
        if kwargs:
            raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
        for a in args:
            if isinstance(a, ember.dtype):
                dtype = a
            elif isinstance(a, ember.Tensor):
                dtype, device = a.dtype, a.device
            elif isinstance(a, (str, ember.device)):
                device = a
            elif isinstance(a, bool) or a is None:
                pass
            else:
                raise TypeError(f"to() received an invalid argument {a!r}")
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError(f"nn.Module.to only accepts floating point dtypes, but got "
                            f"desired dtype={dtype}")

        def convert(t):
            kw = {}
            if device is not None:
                kw["device"] = device
            if dtype is not None and t.is_floating_point():
                kw["dtype"] = dtype
            if fmt is not None and t.dim() in (4, 5):
                kw["memory_format"] = fmt
            return t.to(**kw) if kw else t

        return self._apply(convert)

    def float(self):
        return self.to(ember.float32)

    def double(self):
        return self.to(ember.float64)

    def half(self):
        return self.to(ember.float16)

    def bfloat16(self):
        return self.to(ember.bfloat16)

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None):
        return self.to("cuda" if device is None else f"cuda:{int(device)}"
                       if not isinstance(device, (str, ember.device)) else device)

    def type(self, dst_type):
        return self._apply(lambda t: t.type(dst_type))

    def share_memory(self):
        """Move every parameter (and its gradient) and buffer to shared memory, in place:
        processes forked afterwards, or sent the module through ``multiprocessing``,
        update the same tensors (Hogwild-style training)."""
        for t in list(self.parameters()) + list(self.buffers()):
            t.share_memory_()
            if t.grad is not None:
                t.grad.share_memory_()
        return self

    # ---- state dict -----------------------------------------------------------
    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()
        extra = getattr(type(self), "get_extra_state", Module.get_extra_state)
        if extra is not Module.get_extra_state:
            destination[prefix + "_extra_state"] = self.get_extra_state()

    def get_extra_state(self):
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should "
                           "never be called.")

    def set_extra_state(self, state):
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should "
                           "never be called.")

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """A dict of every parameter and persistent buffer keyed by dotted name."""
        if args:  # PyTorch's deprecated positional form (destination, prefix, keep_vars)
            destination = args[0]
            if len(args) > 1:
                prefix = args[1]
            if len(args) > 2:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        meta = getattr(destination, "_metadata", None)
        if meta is not None:
            meta[prefix[:-1]] = {"version": self._version}
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".",
                                  keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            r = hook(self, destination, prefix, {})
            if r is not None:
                destination = r
        return destination

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        for hook in self._load_state_dict_pre_hooks.values():
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                 error_msgs)
        persistent = {k: v for k, v in self._buffers.items()
                      if k not in self._non_persistent_buffers_set}
        local = {k: v for k, v in itertools.chain(self._parameters.items(), persistent.items())
                 if v is not None}
        from ember.autograd import no_grad
        for name, param in local.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            input_param = state_dict[key]
            if not isinstance(input_param, ember.Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected '
                                  f'ember.Tensor or Tensor-like object from checkpoint but '
                                  f'received {type(input_param)}')
                continue
            if isinstance(param, UninitializedParameter):
                with no_grad():
                    newp = Parameter(input_param.detach().clone(), param.requires_grad)
                self._parameters[name] = newp
                continue
            if tuple(input_param.shape) != tuple(param.shape):
                error_msgs.append(f"size mismatch for {key}: copying a param with shape "
                                  f"{ember.Size(input_param.shape)} from checkpoint, the shape "
                                  f"in current model is {ember.Size(param.shape)}.")
                continue
            try:
                with no_grad():
                    param.copy_(input_param)
            except Exception as ex:  # noqa: BLE001 - reported like PyTorch
                error_msgs.append(f'While copying the parameter named "{key}", whose '
                                  f'dimensions in the model are {ember.Size(param.shape)} and '
                                  f'whose dimensions in the checkpoint are '
                                  f'{ember.Size(input_param.shape)}, an exception occurred : '
                                  f'{ex.args}.')
        extra_key = prefix + "_extra_state"
        if getattr(type(self), "set_extra_state", Module.set_extra_state) is not \
                Module.set_extra_state:
            if extra_key in state_dict:
                self.set_extra_state(state_dict[extra_key])
            elif strict:
                missing_keys.append(extra_key)
        if strict:
            for key in state_dict.keys():
                if key.startswith(prefix) and key != extra_key:
                    input_name = key[len(prefix):].split(".", 1)
                    if input_name[0] not in self._modules and input_name[0] not in local:
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy parameters and buffers from ``state_dict``; with ``strict`` (default) the
        keys must match exactly. Returns ``(missing_keys, unexpected_keys)``."""
        if not isinstance(state_dict, dict):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing_keys, unexpected_keys, error_msgs = [], [], []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata

        def load(module, prefix=""):
            local_metadata = {} if metadata is None else metadata.get(prefix[:-1], {})
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            module._load_from_state_dict(state_dict, prefix, local_metadata, True,
                                         missing_keys, unexpected_keys, error_msgs)
            for name, child in module._modules.items():
                if child is not None:
                    load(child, prefix + name + ".")
            incompatible = _IncompatibleKeys(missing_keys, unexpected_keys)
            for hook in module._load_state_dict_post_hooks.values():
                hook(module, incompatible)

        load(self)
        if strict:
            if unexpected_keys:
                error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected_keys)))
            if missing_keys:
                error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing_keys)))
        if error_msgs:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(error_msgs)))
        return _IncompatibleKeys(missing_keys, unexpected_keys)

    def register_state_dict_pre_hook(self, hook):
        return add_hook(self._state_dict_pre_hooks, hook)

    def _register_state_dict_hook(self, hook):
        return add_hook(self._state_dict_hooks, hook)

    register_state_dict_post_hook = _register_state_dict_hook

    def register_load_state_dict_pre_hook(self, hook):
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        return add_hook(self._load_state_dict_pre_hooks,
                        (lambda *a: hook(self, *a)) if with_module else hook)

    def register_load_state_dict_post_hook(self, hook):
        return add_hook(self._load_state_dict_post_hooks, hook)

    # ---- hooks and call -------------------------------------------------------
    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        h = RemovableHandle(self._forward_pre_hooks, self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[h.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[h.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(h.id, last=False)
        return h

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False,
                              always_call=False):
        h = RemovableHandle(self._forward_hooks, self._forward_hooks_with_kwargs,
                            self._forward_hooks_always_called)
        self._forward_hooks[h.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[h.id] = True
        if always_call:
            self._forward_hooks_always_called[h.id] = True
        if prepend:
            self._forward_hooks.move_to_end(h.id, last=False)
        return h

    def register_full_backward_pre_hook(self, hook: Callable,
                                        prepend: bool = False) -> RemovableHandle:
        """Register a hook run when the gradients w.r.t. the module's outputs are known.

        Parameters
        ----------
        hook : callable
            ``hook(module, grad_output) -> tuple of Tensor or None``. ``grad_output`` is
            a tuple (``None`` at non-tensor outputs); a returned tuple of the same length
            replaces it for the rest of the backward pass.
        prepend : bool, optional
            Fire before the module's existing backward pre-hooks (global pre-hooks
            still fire first).

        Returns
        -------
        RemovableHandle
            ``handle.remove()`` unregisters the hook.
        """
        return add_hook(self._backward_pre_hooks, hook, prepend)

    def register_full_backward_hook(self, hook: Callable,
                                    prepend: bool = False) -> RemovableHandle:
        """Register a hook run when the gradients w.r.t. the module's inputs are known.

        Parameters
        ----------
        hook : callable
            ``hook(module, grad_input, grad_output) -> tuple of Tensor or None``. Both are
            tuples over the positional inputs / outputs (``None`` for non-tensors and
            inputs that need no gradient); a returned tuple replaces ``grad_input``. If
            no input requires grad the hook fires with the output gradients (and
            ``grad_input`` all ``None``).
        prepend : bool, optional
            Fire before the module's existing backward hooks (global hooks still fire
            first).

        Returns
        -------
        RemovableHandle
            ``handle.remove()`` unregisters the hook.

        Raises
        ------
        RuntimeError
            If :meth:`register_backward_hook` was used on this module.
        """
        return self._add_backward_hook(hook, True, prepend)

    def register_backward_hook(self, hook: Callable) -> RemovableHandle:
        """Register a (deprecated, non-full) backward hook.

        The hook is attached to the ``grad_fn`` of the module's first output tensor and
        called as ``hook(module, grad_input, grad_output)`` with that node's gradients,
        as in PyTorch; prefer :meth:`register_full_backward_hook`.

        Parameters
        ----------
        hook : callable
            ``hook(module, grad_input, grad_output) -> tuple of Tensor or None``.

        Returns
        -------
        RemovableHandle
            ``handle.remove()`` unregisters the hook.

        Raises
        ------
        RuntimeError
            If :meth:`register_full_backward_hook` was used on this module.
        """
        return self._add_backward_hook(hook, False, False)

    def _add_backward_hook(self, hook: Callable, full: bool, prepend: bool) -> RemovableHandle:
        # a module takes full hooks or legacy ones, never both (as in PyTorch)
        if self._is_full_backward_hook is (not full):
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks "
                               "on a single Module. Please use only one of them.")
        self._is_full_backward_hook = full
        return add_hook(self._backward_hooks, hook, prepend)

    def _get_backward_hooks(self):
        full, non_full = [], []
        if _global_is_full_backward_hook is True:
            full += _global_backward_hooks.values()
        if self._is_full_backward_hook is True:
            full += self._backward_hooks.values()
        if _global_is_full_backward_hook is False:
            non_full += _global_backward_hooks.values()
        if self._is_full_backward_hook is False:
            non_full += self._backward_hooks.values()
        return full, non_full

    def _get_backward_pre_hooks(self):
        return list(_global_backward_pre_hooks.values()) + \
            list(self._backward_pre_hooks.values())

    def _maybe_warn_non_full_backward_hook(self, inputs, result, grad_fn):
        Tensor = ember.Tensor
        if not isinstance(result, Tensor):
            if not (isinstance(result, tuple) and all(isinstance(r, Tensor) for r in result)):
                warnings.warn("Using non-full backward hooks on a Module that does not return a "
                              "single Tensor or a tuple of Tensors is deprecated and will be "
                              "removed in future versions. This hook will be missing some of "
                              "the grad_output. Please use register_full_backward_hook to get "
                              "the documented behavior.", FutureWarning, stacklevel=3)
                return
        else:
            result = (result,)
        if not isinstance(inputs, Tensor):
            if not (isinstance(inputs, tuple) and all(isinstance(i, Tensor) for i in inputs)):
                warnings.warn("Using non-full backward hooks on a Module that does not take as "
                              "input a single Tensor or a tuple of Tensors is deprecated and "
                              "will be removed in future versions. This hook will be missing "
                              "some of the grad_input. Please use register_full_backward_hook "
                              "to get the documented behavior.", FutureWarning, stacklevel=3)
                return
        else:
            inputs = (inputs,)
        out_grad_fn = {r.grad_fn for r in result if r.grad_fn is not None}
        if not out_grad_fn or (len(out_grad_fn) == 1 and grad_fn not in out_grad_fn):
            warnings.warn("Using a non-full backward hook when outputs are nested in python "
                          "data structure is deprecated and will be removed in future "
                          "versions. This hook will be missing some grad_output.",
                          FutureWarning, stacklevel=3)
        elif len(out_grad_fn) > 1:
            warnings.warn("Using a non-full backward hook when outputs are generated by "
                          "different autograd Nodes is deprecated and will be removed in "
                          "future versions. This hook will be missing some grad_output. "
                          "Please use register_full_backward_hook to get the documented "
                          "behavior.", FutureWarning, stacklevel=3)
        else:
            inputs_grad_fn = {i.grad_fn for i in inputs if i.grad_fn is not None}
            next_functions = {n[0] for n in grad_fn.next_functions}
            if inputs_grad_fn != next_functions:
                warnings.warn("Using a non-full backward hook when the forward contains "
                              "multiple autograd Nodes is deprecated and will be removed in "
                              "future versions. This hook will be missing some grad_input. "
                              "Please use register_full_backward_hook to get the documented "
                              "behavior.", FutureWarning, stacklevel=3)

    def _call_impl(self, *args, **kwargs):
        forward = self.forward
        if not (self._forward_pre_hooks or self._forward_hooks or _global_forward_pre_hooks
                or _global_forward_hooks or self._backward_hooks or self._backward_pre_hooks
                or _global_backward_hooks or _global_backward_pre_hooks):
            return forward(*args, **kwargs)
        full_backward_hooks, non_full_backward_hooks = [], []
        backward_pre_hooks = []
        if self._backward_pre_hooks or _global_backward_pre_hooks:
            backward_pre_hooks = self._get_backward_pre_hooks()
        if self._backward_hooks or _global_backward_hooks:
            full_backward_hooks, non_full_backward_hooks = self._get_backward_hooks()
        for hid, hook in itertools.chain(_global_forward_pre_hooks.items(),
                                         self._forward_pre_hooks.items()):
            if hid in self._forward_pre_hooks_with_kwargs:
                r = hook(self, args, kwargs)
                if r is not None:
                    if not (isinstance(r, tuple) and len(r) == 2):
                        raise RuntimeError("forward pre-hook must return None or a tuple of "
                                           f"(new_args, new_kwargs), but got {r}.")
                    args, kwargs = r
            else:
                r = hook(self, args)
                if r is not None:
                    args = r if isinstance(r, tuple) else (r,)
        bw_hook = None
        if full_backward_hooks or backward_pre_hooks:
            bw_hook = BackwardHook(self, full_backward_hooks, backward_pre_hooks)
            args = bw_hook.setup_input_hook(args)
        result = forward(*args, **kwargs)
        for hid, hook in itertools.chain(_global_forward_hooks.items(),
                                         self._forward_hooks.items()):
            if hid in self._forward_hooks_with_kwargs:
                r = hook(self, args, kwargs, result)
            else:
                r = hook(self, args, result)
            if r is not None:
                result = r
        if bw_hook is not None:
            if not isinstance(result, (ember.Tensor, tuple)):
                warnings.warn("For backward hooks to be called, module output should be a "
                              f"Tensor or a tuple of Tensors but received {type(result)}",
                              stacklevel=2)
            result = bw_hook.setup_output_hook(result)
        if non_full_backward_hooks:
            var = result
            while not isinstance(var, ember.Tensor):
                if isinstance(var, dict):
                    var = next(v for v in var.values() if isinstance(v, ember.Tensor))
                else:
                    var = var[0]
            grad_fn = var.grad_fn
            if grad_fn is not None:
                for hook in non_full_backward_hooks:
                    grad_fn.register_hook(_WrappedHook(hook, self))
                self._maybe_warn_non_full_backward_hook(args, result, grad_fn)
        return result

    __call__ = _call_impl

    # ---- repr -----------------------------------------------------------------
    def extra_repr(self):
        return ""

    def _get_name(self):
        return type(self).__name__

    def __repr__(self):
        extra_lines = []
        extra = self.extra_repr()
        if extra:
            extra_lines = extra.split("\n")
        child_lines = []
        for key, module in self._modules.items():
            mod_str = _addindent(repr(module), 2)
            child_lines.append("(" + key + "): " + mod_str)
        lines = extra_lines + child_lines
        main = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main += extra_lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"


def _forward_unimplemented(self, *input):
    raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                              f'"forward" function')


Module.forward = _forward_unimplemented
