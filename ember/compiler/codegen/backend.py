"""The ``"inductor"`` backend: lowering, fusion, C code generation, the runtime.

The compiled callable runs the graph as a list of steps: eager nodes through
the dispatcher (matmul, linear, convolution, views and every op the lowering
table does not cover: their existing kernels) and fused kernels through one
generated shared object, called with a per-kernel argument array built once
(only the data pointers change between calls).  A graph made only of kernels
runs through a precomputed plan; ``reduce-overhead`` fixes its buffers and
``max-autotune`` picks each kernel's thread count (:class:`CompiledGraph`).
Graphs whose inputs need gradients are compiled for training by :mod:`.aot`.
"""
from __future__ import annotations

import ctypes
import threading
import warnings
from pathlib import Path
from typing import Any, Callable

import ember
from ember.fx import Node
from ember.fx.node import map_arg

from .. import Backend, CompileMode
from . import cache
from .cgen import module_source
from .scheduler import Kernel, _dtype, _meta, partition

_warned = threading.Event()


def _math_header() -> str | None:
    # an installed package carries a copy beside this module (setup.py puts it there);
    # a checkout reads the one the kernels are built from
    for p in (Path(__file__).resolve().parent / "ember_math.h",
              Path(ember.__file__).resolve().parent.parent / "src_c" / "include" / "ember_math.h"):
        try:
            return p.read_text()
        except OSError:
            pass
    return None


def _eager_note(reason: str) -> None:
    if not _warned.is_set():
        _warned.set()
        warnings.warn(f"ember.compile: {reason}; running captured graphs through the eager "
                      f"kernels.", UserWarning, stacklevel=4)


def _no_compiler_note() -> None:
    import os
    _eager_note(f"no C compiler found (CC={os.environ.get('CC')!r}, and none from Python's "
                f"build configuration is on PATH). Install gcc or clang, or set CC")


class _KernelCall:
    __slots__ = ("fn", "args", "ins", "outs", "n_in", "specs", "busy", "static", "nt", "n0")

    def __init__(self, fn: Any, k: Kernel) -> None:
        self.fn = fn
        self.ins = list(k.inputs)
        self.outs = list(k.outputs)
        self.n_in = len(self.ins)
        self.args = (ctypes.c_void_p * (len(self.ins) + len(self.outs)))()
        self.specs = [(tuple(_meta(n).shape), getattr(ember, _dtype(_meta(n))))
                      for n in self.outs]
        # the prebuilt array serves one call at a time; a concurrent call from
        # another thread gets its own
        self.busy = threading.Lock()
        self.static: list | None = None    # reduce-overhead: outputs allocated once
        self.nt = 0                        # max-autotune: the thread count chosen (0: all)
        self.n0 = k.vshape[0] if k.vshape else 1     # the size the code takes at run time
        fn.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int64]
        fn.restype = None

    def run(self, env: dict, nt: int, static: bool) -> list:
        ins = [env[n] for n in self.ins]
        if self.nt:
            nt = min(nt, self.nt)
        if not self.busy.acquire(blocking=False):
            outs = [ember.empty(s, dtype=d) for s, d in self.specs]
            self.fn(type(self.args)(*[t.data_ptr() for t in ins + outs]), nt, self.n0)
            return outs
        try:
            a = self.args
            outs = self.static
            if static and outs is not None and not any(
                    t._storage_id() == o._storage_id() for t in ins for o in outs):
                # the same buffers every call: only input addresses can change
                for i, t in enumerate(ins):
                    a[i] = t.data_ptr()
            else:
                outs = [ember.empty(s, dtype=d) for s, d in self.specs]
                a[:] = [t.data_ptr() for t in ins + outs]
                if static and self.static is None:
                    self.static = outs
            self.fn(a, nt, self.n0)
            return outs
        finally:
            self.busy.release()

    def tune(self, env: dict, nt: int) -> None:
        """Time the kernel on this call's inputs at each thread count; keep the fastest
        (the kernel is a pure function of its inputs, so reruns change nothing)."""
        import time
        outs = [ember.empty(s, dtype=d) for s, d in self.specs]
        a = type(self.args)(*[env[n].data_ptr() for n in self.ins] +
                            [t.data_ptr() for t in outs])
        best = None
        for c in sorted({1, max(1, nt // 2), nt}):
            self.fn(a, c, self.n0)
            ts = []
            for _ in range(5):
                t0 = time.perf_counter()
                self.fn(a, c, self.n0)
                ts.append(time.perf_counter() - t0)
            t = sorted(ts)[2]
            if best is None or t < best[0]:
                best = (t, c)
        self.nt = best[1]


class CompiledGraph:
    """A captured graph's runtime: eager steps and generated kernels, in graph order.

    ``static`` (reduce-overhead): each kernel writes the same output buffers on every
    call, allocated once, so a call only patches input addresses into prebuilt
    argument arrays; results of one call are overwritten by the next (as with CUDA
    graphs: clone what you keep).  ``tune_file`` (max-autotune): per-kernel thread
    counts, measured on the first call and kept in that file.
    """

    def __init__(self, gm: Any, steps: list, lib: Any, static: bool = False,
                 tune_file: Path | None = None) -> None:
        self.gm = gm
        self.placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        self.output = next(n for n in gm.graph.nodes if n.op == "output")
        self.steps = []
        ki = 0
        for kind, obj in steps:
            if kind == "kernel":
                self.steps.append((True, _KernelCall(getattr(lib, f"k{ki}"), obj)))
                ki += 1
            else:
                self.steps.append((False, obj))
        self.n_kernels = ki
        self.static = static
        self.tune_file = tune_file
        self.tuned = tune_file is None or self._load_tuning()
        # the last step reading each value, so dead intermediates are freed early
        last: dict = {}
        for i, (is_k, obj) in enumerate(self.steps):
            for n in (obj.ins if is_k else obj.all_input_nodes):
                last[n] = i
        keep = set(self.output.all_input_nodes)
        self.free = [[] for _ in self.steps]
        for n, i in last.items():
            if n not in keep and n.op != "placeholder":
                self.free[i].append(n)

    @property
    def kernel_threads(self) -> list:
        """The thread count each kernel runs with (0: ``ember.get_num_threads()``)."""
        return [obj.nt for is_k, obj in self.steps if is_k]

    def _load_tuning(self) -> bool:
        import json
        try:
            choice = json.loads(self.tune_file.read_text()).get(str(ember.get_num_threads()))
        except (OSError, ValueError, AttributeError):
            return False
        kernels = [obj for is_k, obj in self.steps if is_k]
        if not isinstance(choice, list) or len(choice) != len(kernels):
            return False
        for k, c in zip(kernels, choice):
            k.nt = int(c)
        return True

    def _save_tuning(self) -> None:
        import json
        try:
            old = json.loads(self.tune_file.read_text())
        except (OSError, ValueError):
            old = {}
        old[str(ember.get_num_threads())] = self.kernel_threads
        self.tune_file.parent.mkdir(parents=True, exist_ok=True)
        cache._write_atomic(self.tune_file, json.dumps(old).encode())

    def _make_plan(self) -> None:
        """reduce-overhead on a graph of kernels only: after the first call every buffer
        is fixed, so a call is: patch the argument addresses, call each kernel."""
        self.plan = None
        if not all(is_k and obj.static is not None for is_k, obj in self.steps):
            return
        where = {n: i for i, n in enumerate(self.placeholders)}
        made: dict = {}
        plan = []
        for _, k in self.steps:
            slots = []
            for j, n in enumerate(k.ins):
                if n in where:
                    slots.append((j, where[n]))
                elif n not in made:
                    return
            made.update(zip(k.outs, k.static))
            plan.append((k.fn, k.args, slots, k.nt, k.n0))
        outs = self.output.args[0]
        if not all(isinstance(n, Node) and n in made for n in outs):
            return
        self.static_sids = {t._storage_id() for t in made.values()}
        self.static_out = tuple(made[n] for n in outs)
        self.plan = plan
        self.lock = threading.Lock()

    def _run_plan(self, args: tuple) -> Any:
        sids = self.static_sids
        for t in args:
            if t._storage_id() in sids:
                return None       # an earlier result fed back in: fresh buffers this call
        ptrs = [t.data_ptr() for t in args]
        nt = ember.get_num_threads()
        for fn, a, slots, knt, n0 in self.plan:
            for j, i in slots:
                a[j] = ptrs[i]
            fn(a, min(nt, knt) if knt else nt, n0)
        return self.static_out

    def _make_fresh_plan(self) -> None:
        """A graph of kernels only, fresh outputs every call: the plan says where each
        kernel's inputs come from (an argument, an earlier kernel's output) and when
        an intermediate is dead, so a call needs no dictionary of values."""
        self.fresh = None
        if not all(is_k for is_k, _ in self.steps) or type(self.output.args[0]) is not tuple:
            return
        where = {n: i for i, n in enumerate(self.placeholders)}
        made: dict = {}
        plan = []
        last: dict = {}
        for ki, (_, k) in enumerate(self.steps):
            srcs = []
            for n in k.ins:
                if n in where:
                    srcs.append(where[n])
                elif n in made:
                    srcs.append(made[n])
                    last[made[n]] = ki
                else:
                    return
            made.update((n, (ki, oi)) for oi, n in enumerate(k.outs))
            plan.append((k, srcs, []))
        outs = self.output.args[0]
        if not all(isinstance(n, Node) and n in made for n in outs):
            return
        keep = {made[n] for n in outs}
        for src, ki in last.items():
            if src not in keep:
                plan[ki][2].append(src)
        self.fresh_out = [made[n] for n in outs]
        self.fresh = plan

    def _run_fresh(self, args: tuple) -> tuple:
        nt = ember.get_num_threads()
        produced: list = []
        for k, srcs, dead in self.fresh:
            outs = [ember.empty(s, dtype=d) for s, d in k.specs]
            ptrs = [args[s].data_ptr() if type(s) is int else produced[s[0]][s[1]].data_ptr()
                    for s in srcs]
            ptrs += [t.data_ptr() for t in outs]
            knt = min(nt, k.nt) if k.nt else nt
            if k.busy.acquire(blocking=False):
                try:
                    a = k.args
                    a[:] = ptrs
                    k.fn(a, knt, k.n0)
                finally:
                    k.busy.release()
            else:
                k.fn(type(k.args)(*ptrs), knt, k.n0)
            produced.append(outs)
            for i, j in dead:
                produced[i][j] = None
        return tuple([produced[i][j] for i, j in self.fresh_out])

    def __call__(self, *args: Any) -> Any:
        static, tuning = self.static, not self.tuned
        if not static and not tuning:
            fresh = getattr(self, "fresh", False)
            if fresh:
                return self._run_fresh(args)
            if fresh is False:
                self._make_fresh_plan()
                if self.fresh:
                    return self._run_fresh(args)
        if static:
            plan = getattr(self, "plan", False)
            if plan:
                if self.lock.acquire(blocking=False):
                    try:
                        r = self._run_plan(args)
                    finally:
                        self.lock.release()
                    if r is not None:
                        return r
                static = False     # another thread holds the buffers, or aliasing
            elif plan is False and not tuning:
                r = self._run(args, True, False)
                self._make_plan()
                return r
        return self._run(args, static, tuning)

    def _run(self, args: tuple, static: bool, tuning: bool) -> Any:
        env: dict = dict(zip(self.placeholders, args))
        nt = ember.get_num_threads()
        for (is_k, obj), dead in zip(self.steps, self.free):
            if is_k:
                if tuning:
                    obj.tune(env, nt)
                env.update(zip(obj.outs, obj.run(env, nt, static)))
            else:
                env[obj] = _run_node(self.gm, obj, env)
            for n in dead:
                env.pop(n, None)
        if tuning:
            self.tuned = True
            self._save_tuning()
        return map_arg(self.output.args[0], env.__getitem__)


def _run_node(gm: Any, n: Node, env: dict) -> Any:
    args = map_arg(n.args, env.__getitem__)
    kwargs = map_arg(n.kwargs, env.__getitem__)
    if n.op == "call_function":
        return n.target(*args, **kwargs)
    if n.op == "call_method":
        return getattr(args[0], n.target)(*args[1:], **kwargs)
    if n.op == "call_module":
        return gm.get_submodule(n.target)(*args, **kwargs)
    obj = gm
    for part in n.target.split("."):
        obj = getattr(obj, part)
    return obj


def compile_graph(gm: Any, example_inputs: list,
                  mode: CompileMode = CompileMode.DEFAULT) -> Callable:
    """Lower, fuse and generate code for ``gm``; the callable runs it.

    Graphs whose inputs need gradients (with grad mode on) are compiled for
    training: a generated forward and a generated backward joined by an
    autograd Function (:mod:`.aot`); when their backward cannot be traced they
    run op by op, so autograd records them.  Graphs on other devices run op by op.
    """
    tensors = [t for t in example_inputs if isinstance(t, ember.Tensor)]
    if any(t.device.type != "cpu" for t in tensors):
        return gm.forward
    if ember.is_grad_enabled() and any(t.requires_grad for t in tensors):
        from . import aot
        try:
            # no static buffers: saved activations must outlive the next forward
            return aot.compile_training(gm, example_inputs, lambda g: _compile_plain(
                g, CompileMode.MAX_AUTOTUNE_NO_CUDAGRAPHS if mode in _TUNED else
                CompileMode.DEFAULT))
        except aot.JointTraceError as e:
            gm.meta["joint_error"] = str(e)
            return gm.forward
    return _compile_plain(gm, mode)


_TUNED = (CompileMode.MAX_AUTOTUNE, CompileMode.MAX_AUTOTUNE_NO_CUDAGRAPHS)
_STATIC = (CompileMode.REDUCE_OVERHEAD, CompileMode.MAX_AUTOTUNE)


def _compile_plain(gm: Any, mode: CompileMode = CompileMode.DEFAULT) -> Callable:
    """The runtime of a graph that needs no autograd recording."""
    steps = partition(gm.graph)
    kernels = [k for kind, k in steps if kind == "kernel"]
    if not kernels:
        return gm.forward
    argv = cache.compiler_command()
    header = _math_header()
    if argv is None:
        _no_compiler_note()
        return gm.forward
    if header is None:
        _eager_note("ember_math.h, the header generated code includes, is missing from this "
                    "installation")
        return gm.forward
    tune = mode in _TUNED
    source = module_source(kernels, header, par_min=1) if tune else \
        module_source(kernels, header)
    lib = cache.load(source, argv)
    tune_file = None
    if tune:
        key = cache.cache_key(source, argv)
        tune_file = cache.cache_dir() / key[:2] / f"{key}.threads.json"
    cg = CompiledGraph(gm, steps, lib, static=mode in _STATIC, tune_file=tune_file)
    gm.meta["codegen_kernels"] = len(kernels)
    return cg


class InductorBackend(Backend):
    """Fused C code generation (the default backend); see docs/compile.rst."""

    name = "inductor"
    modes = frozenset(CompileMode)
    mode_notes = {
        CompileMode.DEFAULT: "fuses pointwise chains and row reductions into generated C "
                             "(OpenMP), cached on disk",
        CompileMode.REDUCE_OVERHEAD: "static buffers: each kernel writes the same outputs "
                                     "every call (allocated once; a call only patches input "
                                     "addresses), so results are overwritten by the next "
                                     "call, as with CUDA graphs; training graphs keep "
                                     "fresh buffers",
        CompileMode.MAX_AUTOTUNE: "times each kernel at 1, half and all threads on the "
                                  "first call and keeps the fastest (cached on disk), plus "
                                  "reduce-overhead's static buffers",
        CompileMode.MAX_AUTOTUNE_NO_CUDAGRAPHS: "max-autotune's per-kernel thread choice "
                                                "without static buffers",
    }

    def compile(self, gm: Any, example_inputs: list, *, mode: CompileMode,
                options: dict) -> Callable:
        return compile_graph(gm, example_inputs, mode)

    def persist(self, code: Any, entry: Any, key: tuple, leaves: list) -> bool:
        """A capture finished: keep it on disk for later processes (:mod:`.persist`) and
        learn the function's shape-generic graph from it (:mod:`.dynamic`)."""
        from . import dynamic, persist
        dynamic.observe(code, entry, key)
        return persist.save(code, entry, key, leaves)

    def restore(self, code: Any, key: tuple, leaves: list) -> Any:
        """An entry for a call no cached guard set accepts, without a capture run: one
        an earlier process kept on disk, or the shape-generic graph at these sizes."""
        from . import dynamic, persist
        return persist.restore(code, key, leaves) or dynamic.resize(code, key, leaves)


