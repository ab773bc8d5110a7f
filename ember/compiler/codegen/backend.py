"""The ``"inductor"`` backend: lowering, fusion, C code generation, the runtime.

The compiled callable runs the graph as a list of steps: eager nodes through
the dispatcher (matmul, linear, convolution, views and every op the lowering
table does not cover: their existing kernels) and fused kernels through one
generated shared object, called with a per-kernel argument array built once
(only the data pointers change between calls).
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
    __slots__ = ("fn", "args", "ins", "outs", "n_in", "specs", "busy")

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
        fn.argtypes = [ctypes.c_void_p, ctypes.c_int]
        fn.restype = None


class CompiledGraph:
    """A captured graph's runtime: eager steps and generated kernels, in graph order."""

    def __init__(self, gm: Any, steps: list, lib: Any) -> None:
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

    def __call__(self, *args: Any) -> Any:
        env: dict = dict(zip(self.placeholders, args))
        nt = ember.get_num_threads()
        for (is_k, obj), dead in zip(self.steps, self.free):
            if is_k:
                outs = [ember.empty(s, dtype=d) for s, d in obj.specs]
                ptrs = [env[n].data_ptr() for n in obj.ins] + [t.data_ptr() for t in outs]
                if obj.busy.acquire(blocking=False):
                    try:
                        a = obj.args
                        a[:] = ptrs
                        obj.fn(a, nt)
                    finally:
                        obj.busy.release()
                else:
                    obj.fn(type(obj.args)(*ptrs), nt)
                env.update(zip(obj.outs, outs))
            else:
                env[obj] = _run_node(self.gm, obj, env)
            for n in dead:
                env.pop(n, None)
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


def compile_graph(gm: Any, example_inputs: list) -> Callable:
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
            return aot.compile_training(gm, example_inputs, _compile_plain)
        except aot.JointTraceError as e:
            gm.meta["joint_error"] = str(e)
            return gm.forward
    return _compile_plain(gm)


def _compile_plain(gm: Any) -> Callable:
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
    lib = cache.load(module_source(kernels, header), argv)
    cg = CompiledGraph(gm, steps, lib)
    gm.meta["codegen_kernels"] = len(kernels)
    return cg


class InductorBackend(Backend):
    """Fused C code generation (the default backend); see docs/compile.rst."""

    name = "inductor"
    modes = frozenset(CompileMode)
    mode_notes = {
        CompileMode.DEFAULT: "fuses pointwise chains and row reductions into generated C "
                             "(OpenMP), cached on disk",
        CompileMode.REDUCE_OVERHEAD: "accepted; changes nothing yet beyond default "
                                     "(kernels already use argument arrays built once)",
        CompileMode.MAX_AUTOTUNE: "accepted; changes nothing yet (no variant search)",
        CompileMode.MAX_AUTOTUNE_NO_CUDAGRAPHS: "accepted; changes nothing yet (no variant "
                                                "search)",
    }

    def compile(self, gm: Any, example_inputs: list, *, mode: CompileMode,
                options: dict) -> Callable:
        return compile_graph(gm, example_inputs)

    def persist(self, code: Any, entry: Any, key: tuple, leaves: list) -> bool:
        """Keep a compiled guard set on disk for later processes (see :mod:`.persist`)."""
        from . import persist
        return persist.save(code, entry, key, leaves)

    def restore(self, code: Any, key: tuple, leaves: list) -> Any:
        """A guard set an earlier process kept on disk, ready to run, or None."""
        from . import persist
        return persist.restore(code, key, leaves)


