"""Two helpers ``torch.nn.functional`` re-exports from its TorchScript support, kept for
code that imports them from ``nn.functional``."""
from __future__ import annotations

__all__ = ["boolean_dispatch", "assert_int_or_pair"]

boolean_dispatched: dict = {}


def boolean_dispatch(arg_name, arg_index, default, if_true, if_false, module_name=None,
                     func_name=None):
    """A function that calls ``if_true`` or ``if_false`` depending on the boolean argument
    ``arg_name`` (at position ``arg_index``, ``default`` when absent), the way
    ``max_pool2d`` picks its ``return_indices`` variant."""
    def fn(*args, **kwargs):
        flag = default
        if arg_name in kwargs:
            flag = kwargs[arg_name]
        elif arg_index < len(args):
            flag = args[arg_index]
        return if_true(*args, **kwargs) if flag else if_false(*args, **kwargs)

    if if_true.__doc__ is None and if_false.__doc__ is not None:
        if_true.__doc__ = if_false.__doc__
    elif if_false.__doc__ is None and if_true.__doc__ is not None:
        if_false.__doc__ = if_true.__doc__
    elif if_false.__doc__ is not None and if_true.__doc__ is not None:
        raise RuntimeError("only one function can have a docstring")
    fn.__doc__ = if_true.__doc__
    if module_name is not None:
        fn.__module__ = module_name
    if func_name is not None:
        fn.__name__ = func_name
    boolean_dispatched[fn] = {"if_true": if_true, "if_false": if_false, "index": arg_index,
                              "default": default, "arg_name": arg_name}
    return fn


def assert_int_or_pair(arg, arg_name: str, message: str) -> None:
    """Raise ``AssertionError(message.format(arg_name))`` unless ``arg`` is an int or has
    two elements."""
    if not (isinstance(arg, int) or len(arg) == 2):
        raise AssertionError(message.format(arg_name))
