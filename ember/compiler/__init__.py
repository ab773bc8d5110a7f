"""``ember.compiler``: ``ember.compile``'s capture, guards, backends and modes.

``ember.compile(fn)`` returns a callable that, on its first call with a new
*guard set* (argument shapes, dtypes, devices, scalar values, global
switches, module state), runs ``fn`` once under the dispatcher's Python key
and records every op into an ``ember.fx`` graph (:mod:`ember.compiler.capture`).
The graph goes to a *backend*: any callable ``backend(gm, example_inputs)
-> callable``, exactly ``torch.compile``'s custom-backend contract, or a
registered name.  Later calls whose guards hold run the backend's callable;
a guard miss re-captures, up to ``config.cache_size_limit`` entries.

``"eager"`` runs the captured graph op by op through the GraphModule's
generated code; ``"default"`` resolves to it until an optimising backend is
registered.  Every :class:`CompileMode` is accepted: with the eager backend
no mode changes anything yet (``list_modes()`` says so).
"""

from __future__ import annotations

import collections
import difflib
import functools
import logging
import os
import threading
import weakref
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
    "OptimizedModule",
    "GraphBreakError",
    "allow_in_graph",
    "explain",
    "ExplainOutput",
    "list_modes",
    "config",
    "counters",
    "set_logs",
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

    def compile(self, gm: Any, example_inputs: list, *, mode: CompileMode,
                options: dict) -> Callable:
        """Turn a captured ``GraphModule`` into a callable taking the graph's inputs
        (user tensors, then parameters and buffers) and returning its outputs."""
        raise TypeError(f"{type(self).__name__} must implement compile(gm, example_inputs, "
                        f"*, mode, options)")


ALL_MODES = frozenset(CompileMode)


class EagerBackend(Backend):
    """Runs the captured graph op by op (the GraphModule's generated ``forward``):
    a correctness baseline and a debugging aid; no mode changes what it does."""

    name = "eager"
    modes = ALL_MODES

    def compile(self, gm: Any, example_inputs: list, *, mode: CompileMode,
                options: dict) -> Callable:
        return gm.forward


class CallableBackend(Backend):
    """A backend made from ``compiler_fn(gm, example_inputs) -> callable`` (torch's
    custom-backend contract); options, when given, are passed as keywords."""

    def __init__(self, name: str, compiler_fn: Callable,
                 modes: Iterable[Any] = tuple(CompileMode),
                 options: Iterable[str] = ()) -> None:
        self.name = name
        self.compiler_fn = compiler_fn
        self.modes = frozenset(CompileMode.parse(m) for m in modes)
        self.options = frozenset(options)

    def _key(self) -> tuple:
        return super()._key() + (self.compiler_fn,)

    def compile(self, gm: Any, example_inputs: list, *, mode: CompileMode,
                options: dict) -> Callable:
        return self.compiler_fn(gm, example_inputs, **options)


_registry: dict[str, Backend] = {}
_lock = threading.Lock()
_DEFAULT_NAME = "default"


def register_backend(backend: Any = None, *, name: str | None = None,
                     modes: Iterable[Any] = tuple(CompileMode),
                     options: Iterable[str] = ()) -> Any:
    """Register a compile backend; usable as a decorator on a compiler function.

    Parameters
    ----------
    backend : Backend or callable
        A :class:`Backend` instance, or ``compiler_fn(gm, example_inputs)
        -> callable`` as for ``torch.compile`` (wrapped in a
        :class:`CallableBackend`; accepted ``options`` arrive as keywords).
    name : str, optional
        Registry name (default: ``backend.name`` or the function's name).
    modes, options
        For a compiler function: the modes it honours (all by default) and the
        option keys it accepts.

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
    """The name ``backend="default"`` resolves to: ``"inductor"``, the fused C code
    generator (which itself runs graphs eagerly when no C compiler is found)."""
    return "inductor"


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

# ---------------------------------------------------------------------------
# configuration, counters, logging
# ---------------------------------------------------------------------------


class _Config:
    """``ember.compiler.config``: knobs of capture (torch._dynamo.config's names)."""

    cache_size_limit: int = 8

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "cache_size_limit":
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"config.cache_size_limit must be a non-negative int, got "
                                 f"{value!r}")
        elif not hasattr(type(self), name):
            raise AttributeError(f"ember.compiler.config has no option {name!r}")
        object.__setattr__(self, name, value)


config = _Config()
# counters["stats"]["calls_captured" | "calls_reused" | "unique_graphs"],
# counters["graph_break"][reason], counters["recompiles"][reason]
counters: collections.defaultdict = collections.defaultdict(collections.Counter)

_LOG_KINDS = ("graph", "guards", "recompiles", "graph_breaks")
_logger = logging.getLogger("ember.compiler")
_log_state: dict[str, Any] = {"env": None, "kinds": frozenset()}


def set_logs(**kinds: bool) -> None:
    """Turn compile logs on or off (``set_logs(graph=True, recompiles=True)``), like
    ``torch._logging.set_logs``; the ``EMBER_LOGS`` variable
    (``EMBER_LOGS=graph,guards,recompiles,graph_breaks``) sets the initial state."""
    unknown = set(kinds) - set(_LOG_KINDS)
    if unknown:
        raise ValueError(f"set_logs(): unknown log kinds {sorted(unknown)}; valid: "
                         f"{', '.join(_LOG_KINDS)}")
    _enabled_logs()
    _log_state["kinds"] = frozenset(k for k in _LOG_KINDS
                                    if kinds.get(k, k in _log_state["kinds"]))


def _enabled_logs() -> frozenset:
    env = os.environ.get("EMBER_LOGS", "")
    if env != _log_state["env"]:
        _log_state["env"] = env
        names = {n.strip().lstrip("+") for n in env.split(",") if n.strip()}
        if "all" in names or "dynamo" in names:
            names = set(_LOG_KINDS)
        _log_state["kinds"] = frozenset(names & set(_LOG_KINDS))
    return _log_state["kinds"]


def _log(kind: str, msg: str) -> None:
    if kind in _enabled_logs():
        if not _logger.handlers:
            h = _StderrHandler()
            h.setFormatter(logging.Formatter("[ember.compiler:%(kind)s] %(message)s"))
            _logger.addHandler(h)
            _logger.setLevel(logging.INFO)
            _logger.propagate = False
        _logger.info(msg, extra={"kind": kind})


class _StderrHandler(logging.Handler):
    """Writes to the current ``sys.stderr`` (which tests and notebooks replace)."""

    def emit(self, record: logging.LogRecord) -> None:
        import sys
        sys.stderr.write(self.format(record) + "\n")


_MODE_NOTES = {
    CompileMode.DEFAULT: "runs the captured graph op by op",
    CompileMode.REDUCE_OVERHEAD: "accepted; changes nothing yet (no CUDA graphs or fused "
                                 "code generation in this backend)",
    CompileMode.MAX_AUTOTUNE: "accepted; changes nothing yet (the eager backend has nothing "
                              "to tune)",
    CompileMode.MAX_AUTOTUNE_NO_CUDAGRAPHS: "accepted; changes nothing yet (the eager backend "
                                            "has nothing to tune)",
}


def list_modes(backend: Any = _DEFAULT_NAME) -> dict[str, str]:
    """What each :class:`CompileMode` does with ``backend``: mode value -> description
    (modes the backend refuses are listed as such)."""
    b = lookup_backend(backend)
    notes = getattr(b, "mode_notes", None) or (_MODE_NOTES if isinstance(b, EagerBackend)
                                                else {})
    return {m.value: (notes.get(m, "accepted") if b.supports(m) else
                      f"refused by backend {b.name!r}") for m in CompileMode}


# ---------------------------------------------------------------------------
# compile
# ---------------------------------------------------------------------------

_compiling = threading.local()
_all_codes: weakref.WeakSet = weakref.WeakSet()
_state = threading.local()


def is_compiling() -> bool:
    """Whether ember is capturing or compiling a graph on this thread (True inside the
    function while ``ember.compile`` captures it, as ``torch.compiler.is_compiling``)."""
    return getattr(_compiling, "depth", 0) > 0


def _disabled_depth() -> int:
    return getattr(_state, "disabled", 0)


def _rerunning() -> bool:
    """Whether a compiled call is starting over after a failed check on this thread."""
    return getattr(_state, "replay_memo", None) is not None


def _active_capture() -> Any:
    stack = getattr(_state, "captures", None)
    return stack[-1] if stack else None


def _capturing_here() -> bool:
    """Whether ``ember.compile`` is capturing a call on this thread, outside any step it
    runs eagerly (training-loop calls then become eager steps of the program)."""
    cap = _active_capture()
    return (cap is not None and cap.break_reason is None and not cap.suspended and
            not _disabled_depth() and cap.thread == threading.get_ident())


def _eager_step(name: str, fn: Callable, *args: Any, owner: Any = None, **kwargs: Any) -> Any:
    """Run ``fn(*args, **kwargs)`` as an eager step of the call being captured: the
    program is split there and ``fn`` runs between its graphs on every call, with
    the Python state it changes (``.grad``, optimizer state) changed again on every
    call.  ``loss.backward()``, ``optimizer.zero_grad()`` and ``optimizer.step()``
    come here, so a whole training step compiles (the forward and its generated
    backward as graphs).  Arguments are tensors and Python scalars; ``fn`` carries
    anything else (a bound optimizer).  ``owner`` (an optimizer) has Python state the
    capture then watches: the traced code changing it breaks the graph."""
    def run_step(*a: Any, **k: Any) -> Any:
        return fn(*a, **k)
    run_step.__name__ = name
    run_step._ember_step_reason = f"{name}() runs eagerly between graphs"  # type: ignore
    run_step._ember_step_owner = owner  # type: ignore
    run_step._ember_step_fn = fn  # type: ignore
    # the same step in another capture of the function (a call run again past a failed
    # check takes its result from the call's memo; programs compare their steps)
    run_step._ember_step_key = (name, id(owner) if owner is not None else  # type: ignore
                                id(getattr(fn, "func", fn)))
    return disable(run_step)(*args, **kwargs)


def _on_capture(code: Any, entry: Any) -> None:
    code.last_entry = entry


class CompiledFunction:
    """What ``ember.compile`` returns for a function: calls the guarded compiled code,
    keeps the original (``_orig_mod``, ``__wrapped__``)."""

    def __init__(self, orig: Callable, compiled: Callable, backend: Backend,
                 mode: CompileMode, fullgraph: bool, dynamic: bool | None) -> None:
        object.__setattr__(self, "_orig_mod", orig)
        object.__setattr__(self, "_compiled", compiled)
        object.__setattr__(self, "backend", backend)
        object.__setattr__(self, "mode", mode)
        object.__setattr__(self, "fullgraph", fullgraph)
        object.__setattr__(self, "dynamic", dynamic)
        # Name, qualname, doc and __wrapped__ only: copying the original's
        # __dict__ would freeze the callable's state in the wrapper.
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


def _optimized_module_class() -> type:
    from ember.nn import Module

    class OptimizedModule(Module):
        """``ember.compile(module)``: a Module wrapping the original as ``_orig_mod``
        (so ``state_dict()`` keys carry the ``_orig_mod.`` prefix, as torch's do);
        other attributes are read from the original module."""

        def __init__(self, mod: Module, code: Callable, backend: Backend, mode: CompileMode,
                     fullgraph: bool, dynamic: bool | None) -> None:
            super().__init__()
            self._orig_mod = mod
            self.__dict__.update(_compiled=code, backend=backend, mode=mode,
                                 fullgraph=fullgraph, dynamic=dynamic)
            self.training = mod.training

        def forward(self, *args: Any, **kwargs: Any) -> Any:
            return self.__dict__["_compiled"](*args, **kwargs)

        def __getattr__(self, name: str) -> Any:
            try:
                return super().__getattr__(name)
            except AttributeError:
                return getattr(self.__dict__["_modules"]["_orig_mod"], name)

        def __repr__(self) -> str:
            return f"OptimizedModule(\n  (_orig_mod): {self._orig_mod!r}\n)"

    OptimizedModule.__module__ = __name__
    return OptimizedModule


_classes: dict[str, type] = {}


def __getattr__(name: str) -> Any:
    if name == "OptimizedModule":
        if name not in _classes:
            _classes[name] = _optimized_module_class()
        return _classes[name]
    if name == "GraphBreakError":
        from ember.compiler.capture import GraphBreakError
        return GraphBreakError
    raise AttributeError(f"module 'ember.compiler' has no attribute {name!r}")


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
        from ember.compiler.capture import CompiledCode, _is_module
        code = CompiledCode(fn, strategy, cmode, dict(options or {}), fullgraph, dynamic)
        if _is_module(fn):
            cls = __getattr__("OptimizedModule")
            return cls(fn, code, strategy, cmode, fullgraph, dynamic)
        return CompiledFunction(fn, code, strategy, cmode, fullgraph, dynamic)

    if model is None:
        return apply
    return apply(model)


def disable(fn: Callable | None = None, recursive: bool = True) -> Any:
    """Run ``fn`` uncompiled: compiled functions called inside it run eagerly, and
    calling it while a function is being captured is a graph break (its ops are
    never baked into a graph).  Usable as a decorator."""
    if fn is None:
        return lambda f: disable(f, recursive)
    if not callable(fn):
        raise TypeError(f"ember.compiler.disable(): expected a callable, got "
                        f"{type(fn).__name__}")

    @functools.wraps(fn)
    def run_eagerly(*args: Any, **kwargs: Any) -> Any:
        cap = _active_capture()
        # (inside another disable'd function: that one's result is what is reused)
        memo = None if _disabled_depth() else getattr(_state, "replay_memo", None)

        def run() -> Any:
            if memo is not None:
                # a call starting over after a failed check: what fn returned when the
                # replay ran it is its result (it runs once per call)
                return memo.call(fn, lambda: fn(*args, **kwargs))
            return fn(*args, **kwargs)
        _state.disabled = _disabled_depth() + 1
        try:
            if cap is not None and cap.break_reason is None and not cap.suspended:
                # run between two graphs on every replay (or break the graph)
                return cap.call_eagerly(getattr(fn, "__name__", "fn"), fn, args, kwargs, run)
            return run()
        finally:
            _state.disabled -= 1
    run_eagerly._ember_disabled = True  # type: ignore[attr-defined]
    return run_eagerly


def allow_in_graph(fn: Callable) -> Callable:
    """Record calls of ``fn`` as one ``call_function`` node of the captured graph
    (replays call ``fn`` itself) instead of recording the ops inside it.

    ``fn`` must be a function of its tensor arguments (no hidden state).  Returns
    a wrapper: ember captures through the dispatcher, so it needs to see the call.
    """
    if not callable(fn):
        raise TypeError(f"ember.compiler.allow_in_graph(): expected a callable, got "
                        f"{type(fn).__name__}")

    @functools.wraps(fn)
    def in_graph(*args: Any, **kwargs: Any) -> Any:
        cap = _active_capture()
        if cap is None or cap.break_reason is not None or cap.suspended:
            return fn(*args, **kwargs)
        name = getattr(fn, "__name__", "fn")
        reason = cap._check(name, args, kwargs)
        if reason is not None:
            cap.graph_break(name, reason)
            return fn(*args, **kwargs)
        cap.suspended += 1
        try:
            out = fn(*args, **kwargs)
        finally:
            cap.suspended -= 1
        cap.ff_ok = False      # (a fast-forward counts the dispatcher's ops only)
        cap._record(name, fn, args, kwargs, out)
        return out
    return in_graph


def reset() -> None:
    """Forget every captured graph and guard set (and clear ``counters``), like
    ``torch.compiler.reset()``; the next call of each compiled function re-captures."""
    for code in list(_all_codes):
        code.reset()
    counters.clear()


class ExplainOutput:
    """What :func:`explain` found: ``graphs``, ``graph_count``, ``graph_break_count``,
    ``break_reasons``, ``op_count``, ``ops_per_graph`` and ``out_guards``."""

    def __init__(self, graphs: list, break_reasons: list[str], out_guards: list[str],
                 compile_time_s: float) -> None:
        self.graphs = graphs
        self.graph_count = len(graphs)
        self.graph_break_count = len(break_reasons)
        self.break_reasons = break_reasons
        self.ops_per_graph = [[n for n in gm.graph.nodes
                               if n.op in ("call_function", "call_method", "call_module")]
                              for gm in graphs]
        self.op_count = sum(len(o) for o in self.ops_per_graph)
        self.out_guards = out_guards
        self.compile_times = f"capture: {compile_time_s:.6f} s"

    def __str__(self) -> str:
        lines = [f"Graph Count: {self.graph_count}",
                 f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {self.op_count}", "Break Reasons:"]
        lines += [f"  Break Reason {i + 1}:\n    {r}" for i, r in enumerate(self.break_reasons)]
        lines.append("Ops per Graph:")
        for i, ops in enumerate(self.ops_per_graph):
            lines.append(f"  Ops {i + 1}:")
            lines += [f"    {n.format_node()}" for n in ops]
        lines.append("Out Guards:")
        lines += [f"  {g}" for g in self.out_guards]
        lines.append(f"Compile Times: {self.compile_times}")
        return "\n".join(lines)


def explain(fn: Callable) -> Callable[..., ExplainOutput]:
    """``explain(fn)(*args, **kwargs)``: capture ``fn`` once on those arguments and
    report the graphs, graph breaks and guards (``torch._dynamo.explain``)."""
    if not callable(fn):
        raise TypeError(f"explain(): expected a callable, got {type(fn).__name__}")

    def run(*args: Any, **kwargs: Any) -> ExplainOutput:
        import time
        import warnings as _w

        from ember.compiler.capture import CompiledCode
        graphs: list = []

        def record(gm: Any, example_inputs: list) -> Callable:
            graphs.append(gm)
            return gm.forward
        code = CompiledCode(fn, CallableBackend("explain", record), CompileMode.DEFAULT, {},
                            False, None)
        t0 = time.perf_counter()
        with _w.catch_warnings():
            _w.simplefilter("ignore")
            code(*args, **kwargs)
        entry = getattr(code, "last_entry", None)
        reasons = []
        guards: list[str] = []
        if entry is not None:
            reasons += entry.split_reasons
            if entry.reason is not None and entry.reason != "no tensor ops":
                reasons.append(entry.reason)
            spec, leaves, alias, sw = entry.key
            guards.append(f"global state: grad_enabled={sw[0]}, default_dtype={sw[1]}, "
                          f"deterministic={sw[2]}, default_device={sw[3]}")
            for name, k in zip(getattr(code, "_leaf_names", []), leaves):
                guards.append(f"{name}: {k!r}")
            if getattr(entry, "program", False):     # the checks between the graphs
                guards += entry.compiled.describe_checks()
            for _, k, v in entry.guards.items + entry.module_guards.items:
                if isinstance(v, tuple):
                    guards.append(f"{k}: {list(v)}")
                elif callable(v):
                    guards.append(f"{k} is the same {type(v).__name__}")
                else:
                    guards.append(f"{k} == {v!r}")
        return ExplainOutput(graphs, reasons, guards, time.perf_counter() - t0)
    return run


def _register_codegen() -> None:
    from .codegen import InductorBackend
    register_backend(InductorBackend())


_register_codegen()
