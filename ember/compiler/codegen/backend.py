"""The ``"inductor"`` backend: lowering, fusion, C code generation, the runtime.

The compiled callable runs the graph as a list of steps: eager nodes through
the dispatcher (matmul, linear, convolution, views and every op the lowering
table does not cover: their existing kernels) and fused kernels through one
generated shared object, each called through its native entry point
(:class:`ember._C.cgrun.Kernel`).  A graph made only of kernels runs as one
native plan, a mixed one as one generated Python function; ``reduce-overhead``
fixes the kernels' buffers and ``max-autotune`` picks each kernel's thread
count (:class:`CompiledGraph`).
Graphs whose inputs need gradients are compiled for training by :mod:`.aot`.
"""
from __future__ import annotations

import ctypes
import operator
import threading
import warnings
from pathlib import Path
from typing import Any, Callable

import ember
from ember._C import cgrun as _cgrun
from ember.fx import Graph, GraphModule, Node
from ember.fx.node import INPUT_OP, map_arg

from .. import Backend, CompileMode
from . import cache
from .cgen import _PAR_MIN, module_source
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
    """One kernel of a graph: the nodes it reads and writes, and its native entry
    point (:class:`ember._C.cgrun.Kernel`: outputs allocated and the function called
    with the GIL released, no ctypes on the way)."""

    __slots__ = ("k", "ins", "outs", "static", "gemm", "variants", "variant")

    def __init__(self, fns: list, k: Kernel) -> None:
        self.gemm = k.gemm is not None      # a GEMM with a fused epilogue
        self.ins = list(k.inputs)
        self.outs = list(k.outputs)
        specs = [(tuple(_meta(n).shape), getattr(ember, _dtype(_meta(n)))) for n in self.outs]
        # the leading size is a run-time argument of the code
        n0 = k.vshape[0] if k.vshape else 1
        # the code's variants (a GEMM kernel: epilogue per block, or after the GEMM);
        # max-autotune times them, the first runs otherwise
        self.variants = [_cgrun.Kernel(ctypes.cast(fn, ctypes.c_void_p).value, len(self.ins),
                                       specs, n0, k.sizes) for fn in fns]
        self.variant = 0
        self.k = self.variants[0]
        self.static: list | None = None    # reduce-overhead: outputs allocated once

    @property
    def nt(self) -> int:
        """The thread count max-autotune chose (0: all)."""
        return self.k.nt

    @nt.setter
    def nt(self, v: int) -> None:
        self.k.nt = v

    def choose(self, variant: int, nt: int) -> None:
        """Run variant ``variant`` of the code with ``nt`` threads (0: all)."""
        self.variant = variant
        self.k = self.variants[variant]
        self.k.nt = nt

    def run(self, env: dict, static: bool) -> list:
        ins = [env[n] for n in self.ins]
        outs = self.static
        if static and outs is not None and not any(
                t._storage_id() == o._storage_id() for t in ins for o in outs):
            return self.k.run_into(ins, outs)
        outs = self.k.run(ins)
        if static and self.static is None:
            self.static = outs
        return outs

    def tune(self, env: dict, nt: int) -> None:
        """Time each variant of the kernel on this call's inputs at each thread count;
        keep the fastest (the kernel is a pure function of its inputs, so reruns change
        nothing)."""
        import time
        ins = [env[n] for n in self.ins]
        outs = self.k.run(ins)
        best = None
        for v, k in enumerate(self.variants):
            k.nt = 0
            for c in sorted({1, max(1, nt // 2), nt}):
                k.run_into(ins, outs, c)
                ts = []
                for _ in range(5):
                    t0 = time.perf_counter()
                    k.run_into(ins, outs, c)
                    ts.append(time.perf_counter() - t0)
                t = sorted(ts)[2]
                if best is None or t < best[0]:
                    best = (t, v, c)
        self.choose(best[1], best[2])


class CompiledGraph:
    """A captured graph's runtime: eager steps and generated kernels, in graph order.

    ``static`` (reduce-overhead): each kernel writes the same output buffers on every
    call, allocated once, so results of one call are overwritten by the next (as with
    CUDA graphs: clone what you keep).  ``tune_file`` (max-autotune): per-kernel thread
    counts, measured on the first call and kept in that file.  A graph made only of
    kernels runs through one native plan (:class:`ember._C.cgrun.Plan`).
    """

    def __init__(self, gm: Any, steps: list, lib: Any, static: bool = False,
                 tune_file: Path | None = None) -> None:
        self.gm = gm
        self.lib = lib          # the kernels' code stays mapped while this graph lives
        self.graph_inputs = gm.graph.find_nodes(op=INPUT_OP)
        self.output = next(n for n in gm.graph.nodes if n.op == "output")
        self.steps = []
        ki = 0
        for kind, obj in steps:
            if kind == "kernel":
                fns = [getattr(lib, f"k{ki}")]
                if obj.gemm is not None:
                    fns.append(getattr(lib, f"k{ki}_after"))
                self.steps.append((True, _KernelCall(fns, obj)))
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
            if n not in keep and n.op != INPUT_OP:
                self.free[i].append(n)

    @property
    def kernel_threads(self) -> list:
        """The thread count each kernel runs with (0: ``ember.get_num_threads()``)."""
        return [obj.nt for is_k, obj in self.steps if is_k]

    @property
    def kernel_variants(self) -> list:
        """The code variant each kernel runs (GEMM kernels: 0 epilogue per block,
        1 epilogue after the GEMM; others have only 0)."""
        return [obj.variant for is_k, obj in self.steps if is_k]

    def _load_tuning(self) -> bool:
        import json
        nt = str(ember.get_num_threads())
        try:
            saved = json.loads(self.tune_file.read_text())
            choice = saved.get(nt)
            variants = saved.get(f"{nt}:variants")
        except (OSError, ValueError, AttributeError):
            return False
        kernels = [obj for is_k, obj in self.steps if is_k]
        if not isinstance(choice, list) or len(choice) != len(kernels):
            return False
        if not isinstance(variants, list) or len(variants) != len(kernels) or any(
                not isinstance(v, int) or not 0 <= v < len(k.variants)
                for v, k in zip(variants, kernels)):
            variants = [0] * len(kernels)
        for k, c, v in zip(kernels, choice, variants):
            k.choose(v, int(c))
        return True

    def _save_tuning(self) -> None:
        import json
        try:
            old = json.loads(self.tune_file.read_text())
        except (OSError, ValueError):
            old = {}
        old[str(ember.get_num_threads())] = self.kernel_threads
        old[f"{ember.get_num_threads()}:variants"] = self.kernel_variants
        self.tune_file.parent.mkdir(parents=True, exist_ok=True)
        cache._write_atomic(self.tune_file, json.dumps(old).encode())

    def _native_plan(self, static: bool) -> Any:
        """A graph of kernels only, as one native plan: where each kernel's inputs come
        from (an argument or an earlier kernel's output, by slot) and after which step
        each intermediate (and, run owned, each argument) is dead; ``static`` plans
        write the buffers of the first call."""
        if not all(is_k for is_k, _ in self.steps) or type(self.output.args[0]) is not tuple:
            return None
        if static and not all(k.static is not None for _, k in self.steps):
            return None
        slot = {n: i for i, n in enumerate(self.graph_inputs)}
        nxt = len(slot)
        kernels, reads, writes, last = [], [], [], {}
        for i, (_, k) in enumerate(self.steps):
            if any(n not in slot for n in k.ins):
                return None
            reads.append([slot[n] for n in k.ins])
            for n in k.ins:
                last[slot[n]] = i
            w = []
            for n in k.outs:
                slot[n] = nxt
                w.append(nxt)
                nxt += 1
            writes.append(w)
            kernels.append(k.k)
        outs = self.output.args[0]
        if not all(isinstance(n, Node) and n in slot for n in outs):
            return None
        results = [slot[n] for n in outs]
        frees: list = [[] for _ in kernels]
        arg_frees: list = [[] for _ in kernels]
        if not static:
            for s, i in last.items():
                if s not in results:
                    (frees if s >= len(self.graph_inputs) else arg_frees)[i].append(s)
        buffers = [t for _, k in self.steps for t in k.static] if static else None
        return _cgrun.Plan(kernels, reads, writes, frees, len(self.graph_inputs), results,
                           buffers, arg_frees)

    def _python_plan(self, owned: bool = False) -> Callable:
        """Kernels and eager nodes as one generated Python function (``ember.fx``'s code
        generation): each kernel is a call of its native entry point, each eager node
        a direct call, and values are dropped after their last use.  ``owned``: the
        function takes one list of the arguments and takes them out of it, so they
        are dropped after their last use too."""
        g = Graph()
        env: dict = {}
        if owned:       # one input node, the list; each argument is taken out of it
            lst = g.placeholder("args")
            for i, n in enumerate(self.graph_inputs):
                env[n] = g.call_function(_take, (lst, i))
        else:
            for n in self.graph_inputs:
                env[n] = g.node_copy(n, env.__getitem__)
        for is_k, obj in self.steps:
            if is_k:
                call = g.call_function(obj.k.run, (tuple(env[n] for n in obj.ins),))
                for j, o in enumerate(obj.outs):
                    env[o] = g.call_function(operator.getitem, (call, j))
            else:
                env[obj] = g.node_copy(obj, env.__getitem__)
        g.node_copy(self.output, env.__getitem__)
        return GraphModule(self.gm, g).forward

    def run_owned(self, args: list) -> Any:
        """The graph on the arguments in the list ``args``, taken out of it (the list
        keeps no reference), so each is freed after its last use: a training graph's
        backward frees the saved activations as it goes, as eager autograd does."""
        if self.static or not self.tuned:
            a = tuple(args)
            del args[:]
            return self(*a)
        run = self.__dict__.get("owned")
        if run is None:
            plan = self._native_plan(False)
            run = self.owned = plan.run_owned if plan is not None else \
                self._python_plan(owned=True)
        return run(args)

    def __call__(self, *args: Any) -> Any:
        static, tuning = self.static, not self.tuned
        if not tuning:
            plan = self.__dict__.get("plan", False)
            if plan:
                if not static:
                    return plan(*args)
                # static buffers serve one call at a time: a concurrent call, or one
                # fed an earlier result, runs with fresh buffers
                if self.lock.acquire(blocking=False):
                    try:
                        r = plan(*args)
                    finally:
                        self.lock.release()
                    if r is not None:
                        return r
                return self._run(args, False, False)
            if plan is False:
                if static:
                    self.lock = threading.Lock()
                    with self.lock:
                        r = self._run(args, True, False)
                self.plan = self._native_plan(static)
                if not static:
                    if self.plan is None:
                        self.plan = self._python_plan()
                    return self.plan(*args)
                return r
            if static and self.lock.acquire(blocking=False):
                try:
                    return self._run(args, True, False)
                finally:
                    self.lock.release()
            return self._run(args, False, False)
        return self._run(args, static, tuning)

    def _run(self, args: tuple, static: bool, tuning: bool) -> Any:
        env: dict = dict(zip(self.graph_inputs, args))
        nt = ember.get_num_threads()
        for (is_k, obj), dead in zip(self.steps, self.free):
            if is_k:
                if tuning:
                    obj.tune(env, nt)
                env.update(zip(obj.outs, obj.run(env, static)))
            else:
                env[obj] = _run_node(self.gm, obj, env)
            for n in dead:
                env.pop(n, None)
        if tuning:
            self.tuned = True
            self._save_tuning()
        return map_arg(self.output.args[0], env.__getitem__)


def _take(args: list, i: int) -> Any:
    v = args[i]
    args[i] = None
    return v


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
            def plain(g: Any) -> Callable:
                # the forward and backward graphs: code for every size too (dynamic=True)
                if gm.meta.get("dynamic_sizes"):
                    g.meta["dynamic_sizes"] = True
                return _compile_plain(g, CompileMode.MAX_AUTOTUNE_NO_CUDAGRAPHS
                                      if mode in _TUNED else CompileMode.DEFAULT)
            return aot.compile_training(gm, example_inputs, plain)
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
    # dynamic=True: one shared object for every size (they are read at run time)
    dyn = bool(gm.meta.get("dynamic_sizes"))
    source = module_source(kernels, header, par_min=1 if tune else _PAR_MIN, dyn=dyn)
    lib = cache.load(source, argv)
    if any(k.gemm is not None for k in kernels):
        from ember._C import matmul as _matmul
        lib.em_cg_set_gemm(ctypes.c_void_p(_matmul._sgemm_epi_address()))
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
        CompileMode.MAX_AUTOTUNE: "times each kernel at 1, half and all threads (GEMM "
                                  "kernels also with the epilogue per block or after the "
                                  "GEMM) on the first call and keeps the fastest (cached on "
                                  "disk), plus reduce-overhead's static buffers",
        CompileMode.MAX_AUTOTUNE_NO_CUDAGRAPHS: "max-autotune's per-kernel choices without "
                                                "static buffers",
    }

    def compile(self, gm: Any, example_inputs: list, *, mode: CompileMode,
                options: dict) -> Callable:
        return compile_graph(gm, example_inputs, mode)

    def persist(self, code: Any, entry: Any, key: tuple, leaves: list) -> bool:
        """A capture finished: keep it on disk for later processes (:mod:`.persist`) and
        learn the function's shape-generic graph from it (:mod:`.dynamic`)."""
        from . import dynamic, persist
        dynamic.observe(code, entry, key, leaves)
        return persist.save(code, entry, key, leaves)

    def restore(self, code: Any, key: tuple, leaves: list) -> Any:
        """An entry for a call no cached guard set accepts, without a capture run: one
        an earlier process kept on disk, or the shape-generic graph at these sizes."""
        from . import dynamic, persist
        return persist.restore(code, key, leaves) or dynamic.resize(code, key, leaves)


