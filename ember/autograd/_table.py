"""The one table: op name -> backward formula.

A formula is ``def backward(ctx, grad) -> tuple`` with one gradient (or None) per
entry of the op's ``inputs``. ``ctx`` is the graph node: ``ctx.inputs`` (the op's
operands as passed, version-checked), ``ctx.input(i)``, ``ctx.attrs``,
``ctx.output`` (only with ``save_output=True``), ``ctx.needs(i)`` /
``ctx.needs_input_grad``. For a multi-output op ``grad`` is a tuple with None
where no gradient arrived. Formulas use public ember ops, so they are recorded
again under ``create_graph=True``. Gradients are summed back to each input's
shape (and cast to its dtype) by the engine, never by a formula.

Register with the decorator (the one form)::

    @formula("mul")
    def _(ctx, grad): ...

The area modules are imported lazily when the table is first needed; missing
ones are skipped."""
from __future__ import annotations

import importlib
import threading

from ember.autograd import _engine

FORMULAS = {}      # op name -> backward(ctx, grad)
_OPTIONS = {}      # op name -> (save_output, node class name or None)
_FLAGS = {}        # op name -> (exact, saves): see formula()

# PyTorch's node names where they do not follow "<CamelName>Backward0"
_NODE_NAMES = {
    "copy_": "CopyBackwards", "to_dtype": "ToCopyBackward0", "narrow": "SliceBackward0",
    "clamp": "ClampBackward1", "floor_divide": "DivBackward3", "relu_backward":
    "ThresholdBackwardBackward0", "as_strided": "AsStridedBackward0",
}

_AREA_MODULES = ("_formulas_elementwise", "_formulas_views", "_formulas_reduce",
                 "_formulas_index", "_formulas_linalg", "_formulas_random",
                 "_formulas_complex", "_formulas_special", "_formulas_norm")
_loaded = [False]
_loading = [False]
# Threads whose first backward starts together must all see the full table: the
# area modules are imported under this lock and the table is marked loaded after.
_load_lock = threading.RLock()


def formula(name, save_output=False, node_name=None, exact=False, saves=True):
    """Register ``fn`` as the backward of op ``name``.

    save_output: the formula reads ``ctx.output``. exact: the gradients it returns
    always have the shape and dtype of the inputs (the engine then skips its
    broadcast/dtype fix-up). saves=False: it never reads input *values* (no version
    tracking of the inputs; ``ctx.inputs[i].shape`` still works)."""
    def deco(fn):
        FORMULAS[name] = fn
        _OPTIONS[name] = (save_output, node_name)
        _FLAGS[name] = (exact, saves)
        _engine._CLASSES.pop(name, None)
        return fn
    return deco


def _load():
    if _loaded[0]:
        return
    with _load_lock:
        # loaded by another thread meanwhile, or re-entered from an area module's import
        if _loaded[0] or _loading[0]:
            return
        _loading[0] = True
        try:
            _import_areas()
        finally:
            _loading[0] = False
        _loaded[0] = True


def _import_areas():
    for m in _AREA_MODULES:
        try:
            importlib.import_module("ember.autograd." + m)
        except ModuleNotFoundError as e:
            if e.name == "ember.autograd." + m:
                continue          # that area has no formulas yet
            _warn_area(m, e)
            continue
        except Exception as e:    # a broken area module must not break all of autograd
            _warn_area(m, e)
            continue


def _warn_area(m, e):
    import warnings
    warnings.warn(f"ember.autograd: formulas of {m} could not be loaded ({type(e).__name__}: "
                  f"{e}); those ops will not be differentiable", RuntimeWarning, stacklevel=3)


def _camel(name):
    return "".join(p[:1].upper() + p[1:] for p in name.strip("_").split("_"))


def node_class(name):
    """The Node subclass for op ``name`` (created once, named like PyTorch's)."""
    cls = _engine._CLASSES.get(name)
    if cls is not None:
        return cls
    _load()
    fn = FORMULAS.get(name)
    save_output, node_name = _OPTIONS.get(name, (False, None))
    if fn is None:
        fn = _engine._unimplemented_formula(name)
    exact, saves = _FLAGS.get(name, (False, True))
    cls = type(node_name or _NODE_NAMES.get(name) or _camel(name) + "Backward0",
               (_engine.Node,), {"__slots__": (), "_apply": fn, "_save_out": save_output,
                                 "_exact": exact, "_saves": saves, "_op": name,
                                 "__module__": "ember.autograd.graph"})
    _engine._CLASSES[name] = cls
    return cls


_engine._class_for = node_class
