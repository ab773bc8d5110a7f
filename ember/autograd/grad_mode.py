"""Grad modes: ``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``inference_mode``.

Each is a context manager and a decorator. The switch itself lives in the native
core (a thread-local C int read by every op), so modes are per thread, like PyTorch's."""
from __future__ import annotations

import functools

from ember._C.core import (
    _set_grad_enabled,
    _set_inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
)

# inspect costs ~10 ms to import; this is all grad modes need of it
_CO_GENERATOR = 0x20


def _is_generator_function(func) -> bool:
    code = getattr(getattr(func, "__func__", func), "__code__", None)
    return code is not None and bool(code.co_flags & _CO_GENERATOR)


__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled"]


class _DecoratorContextManager:
    """A context manager that is also a decorator (of functions and generators)."""

    def __call__(self, func):
        if isinstance(func, type):
            raise RuntimeError(f"{type(self).__name__} cannot decorate a class")
        if _is_generator_function(func):
            return self._wrap_generator(func)

        @functools.wraps(func)
        def decorate_context(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)

        return decorate_context

    def _wrap_generator(self, func):
        @functools.wraps(func)
        def generator_context(*args, **kwargs):
            gen = func(*args, **kwargs)
            try:
                with self.clone():
                    response = gen.send(None)
                while True:
                    try:
                        request = yield response
                    except GeneratorExit:
                        with self.clone():
                            gen.close()
                        raise
                    except BaseException as e:
                        with self.clone():
                            response = gen.throw(e)
                    else:
                        with self.clone():
                            response = gen.send(request)
            except StopIteration as e:
                return e.value

        return generator_context

    def clone(self):
        return type(self)()


class no_grad(_DecoratorContextManager):
    """Disable gradient recording (this thread) inside the block / decorated function."""

    __slots__ = ("prev",)

    def __init__(self, orig_func=None):
        self.prev = False

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)     # @no_grad without parentheses

    def __enter__(self):
        self.prev = is_grad_enabled()
        _set_grad_enabled(False)

    def __exit__(self, *exc):
        _set_grad_enabled(self.prev)
        return False


class enable_grad(_DecoratorContextManager):
    """Enable gradient recording inside the block (e.g. within ``no_grad``)."""

    __slots__ = ("prev",)

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)

    def __init__(self, orig_func=None):
        self.prev = False

    def __enter__(self):
        self.prev = is_grad_enabled()
        _set_grad_enabled(True)

    def __exit__(self, *exc):
        _set_grad_enabled(self.prev)
        return False


class set_grad_enabled(_DecoratorContextManager):
    """Set grad mode to ``mode``. Takes effect at construction, so it also works as a
    plain function call; used with ``with`` the previous mode is restored at exit."""

    __slots__ = ("prev", "mode")

    def __init__(self, mode: bool):
        if not isinstance(mode, bool):
            if isinstance(mode, (int,)) or hasattr(mode, "__bool__"):
                mode = bool(mode)
            else:
                raise TypeError(f"set_grad_enabled(): argument 'mode' must be bool, not "
                                f"{type(mode).__name__}")
        self.prev = is_grad_enabled()
        self.mode = mode
        _set_grad_enabled(mode)

    def __call__(self, func):
        _set_grad_enabled(self.prev)
        return super().__call__(func)

    def __enter__(self):
        _set_grad_enabled(self.mode)

    def __exit__(self, *exc):
        _set_grad_enabled(self.prev)
        return False

    def clone(self):
        return type(self)(self.mode)


class inference_mode(_DecoratorContextManager):
    """Like ``no_grad``, and ``is_inference_mode_enabled()`` is True inside."""

    __slots__ = ("mode", "prev", "prev_inf")

    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)   # @inference_mode without parentheses

    def __init__(self, mode=True):
        self.mode = mode if isinstance(mode, bool) else True
        self.prev = False
        self.prev_inf = False

    def __enter__(self):
        self.prev = is_grad_enabled()
        self.prev_inf = is_inference_mode_enabled()
        if self.mode:
            _set_inference_mode(True)
            _set_grad_enabled(False)
        else:
            _set_inference_mode(False)

    def __exit__(self, *exc):
        _set_inference_mode(self.prev_inf)
        _set_grad_enabled(self.prev)
        return False

    def clone(self):
        return type(self)(self.mode)
