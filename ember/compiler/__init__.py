"""``ember.compiler``: the compile facade's modes, backend registry and ``compile``.

``ember.compile`` (in the front door) forwards here on first call, so
importing ember never imports this module.

A *backend* is a strategy object: a :class:`Backend` subclass with a
``name``, the :class:`CompileMode` values it can honour, the options it
accepts and a :meth:`Backend.compile` method that turns a callable into a
compiled callable.  Backends compare equal when they are of the same type and
have the same name and configuration, so registering an equal backend twice
is harmless while registering a *different* one under a taken name is an
error.

Only the ``"eager"`` backend exists so far: it runs the function as is and
honours only ``mode="default"``.  The optimising backend is future work; the
default backend name (``"default"``) resolves to ``"eager"`` until it lands,
and :func:`list_backends` says what exists.  A mode a backend cannot honour
raises instead of silently running eagerly.
"""

from __future__ import annotations

import difflib
import functools
import threading
from enum import Enum
from typing import Any, Callable, Iterable

__all__ = [
    "CompileMode",
    "Backend",
    "EagerBackend",
    "CallableBackend",
    "register_backend",
    "lookup_backend",
    "list_backends",
    "default_backend",
    "compile",
    "disable",
    "is_compiling",
    "reset",
    "CompiledFunction",
]


class CompileMode(str, Enum):
    """How hard a backend should work; accepted by ``ember.compile`` as the Enum or its string."""

    DEFAULT = "default"
    REDUCE_OVERHEAD = "reduce-overhead"
    MAX_AUTOTUNE = "max-autotune"
    MAX_AUTOTUNE_NO_CUDAGRAPHS = "max-autotune-no-cudagraphs"

    def __str__(self) -> str:
        return self.value

    @classmethod
    def parse(cls, mode: Any) -> CompileMode:
        """``mode`` as a :class:`CompileMode`; ``None`` is ``DEFAULT``.

        Raises
        ------
        ValueError
            For an unknown string, listing the valid modes and the nearest one.
        TypeError
            For anything that is not a str, a CompileMode or None.
        """
        if mode is None:
            return cls.DEFAULT
        if isinstance(mode, cls):
            return mode
        if not isinstance(mode, str):
            raise TypeError(f"ember.compile(): mode must be a str or ember.CompileMode, got "
                            f"{type(mode).__name__}")
        try:
            return cls(mode)
        except ValueError:
            pass
        valid = [m.value for m in cls]
        # Also match separators and case ("max_autotune", "MAX-AUTOTUNE").
        normalised = {v.replace("-", "_").lower(): v for v in valid}
        guess = normalised.get(mode.replace("-", "_").lower())
        if guess is None:
            close = difflib.get_close_matches(mode, valid, n=1, cutoff=0.5)
            guess = close[0] if close else None
        hint = f" Did you mean {guess!r}?" if guess else ""
        raise ValueError(f"ember.compile(): invalid mode {mode!r}; valid modes are "
                         f"{', '.join(repr(v) for v in valid)}.{hint}")


# ---------------------------------------------------------------------------
# Backends
# ---------------------------------------------------------------------------


class Backend:
    """A compile strategy.  Subclasses set ``name``/``modes``/``options`` and
    implement :meth:`compile`.

    Attributes
    ----------
    name : str
        The registry name.
    modes : frozenset of CompileMode
        The modes this backend honours.
    options : frozenset of str
        The option keys ``ember.compile(options=...)`` may pass.
    """

    name: str = ""
    modes: frozenset = frozenset({CompileMode.DEFAULT})
    options: frozenset = frozenset()

    def _key(self) -> tuple:
        return (type(self), self.name, self.modes, self.options)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Backend):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        modes = ", ".join(sorted(m.value for m in self.modes))
        return f"{type(self).__name__}(name={self.name!r}, modes=[{modes}])"

    def supports(self, mode: CompileMode) -> bool:
        return mode in self.modes

    def check(self, mode: CompileMode, options: dict | None) -> None:
        """Raise if this backend cannot honour ``mode`` / ``options``."""
        if not self.supports(mode):
            others = [b for b in list_backends() if lookup_backend(b).supports(mode)]
            alt = (f"backends that honour it: {', '.join(others)}" if others else
                   "no registered backend honours it yet")
            raise ValueError(
                f"ember.compile(): backend {self.name!r} cannot honour mode {mode.value!r} "
                f"(it supports {', '.join(repr(m.value) for m in sorted(self.modes))}); "
                f"{alt}. Refusing to fall back to eager silently: drop mode= or pick another "
                f"backend (see ember.compiler.list_backends()).")
        unknown = sorted(set(options or ()) - set(self.options))
        if unknown:
            accepted = ", ".join(sorted(self.options)) or "none"
            raise ValueError(f"ember.compile(): backend {self.name!r} does not accept options "
                             f"{unknown} (accepted: {accepted})")

    def compile(self, fn: Callable, *, fullgraph: bool, dynamic: bool | None,
                mode: CompileMode, options: dict) -> Callable:
        raise NotImplementedError


class EagerBackend(Backend):
    """Runs the captured function as is (a correctness baseline; no speed-up)."""

    name = "eager"

    def compile(self, fn: Callable, *, fullgraph: bool, dynamic: bool | None,
                mode: CompileMode, options: dict) -> Callable:
        return fn


class CallableBackend(Backend):
    """A backend made from a function ``compiler_fn(fn, **config) -> callable``."""

    def __init__(self, name: str, compiler_fn: Callable,
                 modes: Iterable[Any] = (CompileMode.DEFAULT,),
                 options: Iterable[str] = ()) -> None:
        self.name = name
        self.compiler_fn = compiler_fn
        self.modes = frozenset(CompileMode.parse(m) for m in modes)
        self.options = frozenset(options)

    def _key(self) -> tuple:
        return super()._key() + (self.compiler_fn,)

    def compile(self, fn: Callable, *, fullgraph: bool, dynamic: bool | None,
                mode: CompileMode, options: dict) -> Callable:
        return self.compiler_fn(fn, fullgraph=fullgraph, dynamic=dynamic, mode=mode,
                                options=options)


_registry: dict[str, Backend] = {}
_lock = threading.Lock()
_DEFAULT_NAME = "default"


def register_backend(backend: Any = None, *, name: str | None = None,
                     modes: Iterable[Any] = (CompileMode.DEFAULT,),
                     options: Iterable[str] = ()) -> Any:
    """Register a compile backend; usable as a decorator on a compiler function.

    Parameters
    ----------
    backend : Backend or callable
        A :class:`Backend` instance, or ``compiler_fn(fn, *, fullgraph,
        dynamic, mode, options) -> callable`` (wrapped in a
        :class:`CallableBackend`).
    name : str, optional
        Registry name (default: ``backend.name`` or the function's name).
    modes, options
        For a compiler function: the modes it honours and option keys it accepts.

    Returns
    -------
    The registered object (so it works as a decorator).

    Raises
    ------
    RuntimeError
        When ``name`` is taken by a different backend (an equal one is a no-op).
    """
    if backend is None:
        return lambda b: register_backend(b, name=name, modes=modes, options=options)
    if isinstance(backend, Backend):
        obj = backend
        if name is not None and name != backend.name:
            raise ValueError(f"register_backend(): name {name!r} differs from the backend's "
                             f"own name {backend.name!r}")
    elif callable(backend):
        obj = CallableBackend(name or backend.__name__, backend, modes, options)
    else:
        raise TypeError(f"register_backend(): expected a Backend or a callable, got "
                        f"{type(backend).__name__}")
    if not obj.name or obj.name == _DEFAULT_NAME:
        raise ValueError(f"register_backend(): invalid backend name {obj.name!r}")
    with _lock:
        existing = _registry.get(obj.name)
        if existing is not None and existing != obj:
            raise RuntimeError(f"register_backend(): a different backend is already registered "
                               f"as {obj.name!r}: {existing!r}")
        _registry[obj.name] = obj
    return backend


def default_backend() -> str:
    """The name ``backend="default"`` resolves to (``"eager"`` until an optimising
    backend is registered as the default)."""
    return "eager"


def list_backends() -> list[str]:
    """The names of the registered backends, sorted."""
    return sorted(_registry)


def lookup_backend(backend: Any) -> Backend:
    """The :class:`Backend` for a name (``"default"`` included), a Backend or a callable."""
    if isinstance(backend, Backend):
        return backend
    if isinstance(backend, str):
        name = default_backend() if backend == _DEFAULT_NAME else backend
        try:
            return _registry[name]
        except KeyError:
            close = difflib.get_close_matches(name, list(_registry), n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ValueError(f"ember.compile(): unknown backend {backend!r}; registered "
                             f"backends: {', '.join(list_backends())}.{hint}") from None
    if callable(backend):
        name = getattr(backend, "__name__", "custom")
        return CallableBackend(name, backend)
    raise TypeError(f"ember.compile(): backend must be a str, a Backend or a callable, got "
                    f"{type(backend).__name__}")


register_backend(EagerBackend())


# ---------------------------------------------------------------------------
# compile
# ---------------------------------------------------------------------------

_compiling = threading.local()


def is_compiling() -> bool:
    """Whether a backend is currently tracing/compiling on this thread."""
    return getattr(_compiling, "depth", 0) > 0


class CompiledFunction:
    """What ``ember.compile`` returns: calls the backend's result, keeps the original.

    For an ``nn.Module`` the wrapper also forwards attribute access (parameters,
    ``train()``/``eval()``, ``state_dict()``) to the original module.
    """

    def __init__(self, orig: Callable, compiled: Callable, backend: Backend,
                 mode: CompileMode, fullgraph: bool, dynamic: bool | None) -> None:
        object.__setattr__(self, "_orig_mod", orig)
        object.__setattr__(self, "_compiled", compiled)
        object.__setattr__(self, "backend", backend)
        object.__setattr__(self, "mode", mode)
        object.__setattr__(self, "fullgraph", fullgraph)
        object.__setattr__(self, "dynamic", dynamic)
        # Name, qualname, doc and __wrapped__ only: copying the original's
        # __dict__ would freeze a module's state (``training``...) in the wrapper.
        functools.update_wrapper(self, orig, updated=())

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._compiled(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(object.__getattribute__(self, "_orig_mod"), name)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        # Decorating a method: bind like a function would.
        return self if obj is None else functools.partial(self, obj)

    def __repr__(self) -> str:
        return (f"CompiledFunction({getattr(self._orig_mod, '__qualname__', self._orig_mod)!r}, "
                f"backend={self.backend.name!r}, mode={self.mode.value!r})")


def compile(model: Callable | None = None, *, fullgraph: bool = False,
            dynamic: bool | None = None, backend: Any = _DEFAULT_NAME,
            mode: str | CompileMode | None = None, options: dict | None = None,
            disable: bool = False) -> Any:
    """Compile ``model`` with a backend; see ``ember.compile`` for the full contract."""
    cmode = CompileMode.parse(mode)  # a bad mode fails at the call, in every form
    if mode is not None and options is not None:
        raise RuntimeError("ember.compile(): either mode or options can be specified, but "
                           "not both at the same time.")
    if not isinstance(fullgraph, bool):
        raise TypeError(f"ember.compile(): fullgraph must be a bool, got "
                        f"{type(fullgraph).__name__}")
    if dynamic is not None and not isinstance(dynamic, bool):
        raise TypeError(f"ember.compile(): dynamic must be a bool or None, got "
                        f"{type(dynamic).__name__}")
    if options is not None and not isinstance(options, dict):
        raise TypeError(f"ember.compile(): options must be a dict, got "
                        f"{type(options).__name__}")
    strategy = lookup_backend(backend)
    strategy.check(cmode, options)

    def apply(fn: Callable) -> Any:
        if fn is None:
            raise RuntimeError("ember.compile(): model can't be None")
        if not callable(fn):
            raise TypeError(f"ember.compile(): expected a callable or an nn.Module, got "
                            f"{type(fn).__name__}")
        if disable:
            return fn
        _compiling.depth = getattr(_compiling, "depth", 0) + 1
        try:
            compiled = strategy.compile(fn, fullgraph=fullgraph, dynamic=dynamic, mode=cmode,
                                        options=dict(options or {}))
        finally:
            _compiling.depth -= 1
        return CompiledFunction(fn, compiled, strategy, cmode, fullgraph, dynamic)

    if model is None:
        return apply
    return apply(model)


def disable(fn: Callable | None = None, recursive: bool = True) -> Any:
    """Mark ``fn`` to run without compilation (the eager backend never compiles anyway)."""
    if fn is None:
        return lambda f: disable(f, recursive)
    return fn


def reset() -> None:
    """Drop compiled caches (none are kept by the eager backend)."""
