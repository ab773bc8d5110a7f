"""``ember.onnx``: write a model as an ONNX file, like ``torch.onnx.export``.

The model is captured with :func:`ember.export.export` (one graph of ember's
dispatcher ops, parameters and buffers lifted to graph inputs) and each op is
translated to ONNX nodes with the ``onnx`` package, an optional dependency
(``pip install ember[onnx]``).  Parameters and buffers become initializers.
"""

from __future__ import annotations

import os
from typing import IO, Any

__all__ = ["export", "is_in_onnx_export"]

_exporting = False


def is_in_onnx_export() -> bool:
    """True while :func:`export` is capturing a model."""
    return _exporting


def export(model: Any, args: Any, f: str | os.PathLike | IO[bytes], *,
           kwargs: dict | None = None, input_names: list[str] | None = None,
           output_names: list[str] | None = None,
           dynamic_axes: dict[str, Any] | None = None, opset_version: int | None = None
           ) -> None:
    """Export ``model`` run on ``args`` as an ONNX model written to ``f``.

    Parameters
    ----------
    model : nn.Module
        The module to export; it runs once on ``args`` in eval mode (as
        torch's default ``TrainingMode.EVAL``), its training flags restored after.
    args : Tensor or tuple
        Example inputs.
    f : str, path or binary file
        Where the ``.onnx`` file is written.
    kwargs : dict, optional
        Example keyword inputs.
    input_names, output_names : list of str, optional
        Names of the graph's user inputs and outputs, in order.
    dynamic_axes : dict, optional
        ``{name: [axis, ...]}`` or ``{name: {axis: "dim_name"}}``: axes of the
        named inputs/outputs left symbolic in the ONNX graph.
    opset_version : int, optional
        The ONNX opset (default 17; 17 or newer).

    Raises
    ------
    ImportError
        If the ``onnx`` package is not installed.
    RuntimeError
        If the model uses an op with no ONNX translation (the message names it).

    Notes
    -----
    Translated ops: linear/matmul/addmm, elementwise arithmetic and comparisons,
    ``where``, relu/gelu/silu/tanh/sigmoid, softmax/log_softmax, layer and
    batch norm (eval), conv1d/conv2d, max/avg/adaptive-avg pooling,
    sum/mean/amax, views (reshape, permute, transpose, (un)squeeze, expand,
    slicing, narrow), cat, embedding/index_select, scaled_dot_product_attention
    (``is_causal`` and ``attn_mask``), conv3d and conv_transpose1d/2d/3d,
    ``*_like`` and ``new_*`` fills, tril/triu, masked_fill, select, repeat, casts;
    tensors built inside ``forward`` from constants become initializers.

    With ``dynamic_axes``, the model is captured again with each dynamic input
    axis at 2x and 3x the example's size (inputs tiled along it) and at one
    less (or, where it refuses larger sizes, at 1, 2 and 3 less): every size
    the model computes from an input's shape (``x.view(x.size(0), -1)``,
    ``x.shape[1] * 2``, a reshape splitting ``batch * heads``,
    ``ember.zeros(x.shape[0], 4)``) is fitted to ``const + coef *
    product(axes)`` and computed in the ONNX graph from ``Shape`` of the
    inputs.  A model whose Python code branches on a dynamic
    size, or computes a float from one, is refused with an error naming the
    node.  Where the model runs at no other size, sizes follow the inputs
    through reshapes only, with a warning.
    """
    global _exporting
    try:
        import onnx  # noqa: F401
    except ImportError as e:
        raise ImportError("ember.onnx.export needs the 'onnx' package, which is not installed: "
                          "pip install onnx (or pip install ember[onnx])") from e
    from ember.export import export as _capture
    from ember.onnx._translate import build_model

    opset = 17 if opset_version is None else int(opset_version)
    if opset < 17:
        raise ValueError(f"ember.onnx.export(): opset_version={opset} is not supported; "
                         "use 17 or newer")
    if not isinstance(args, tuple):
        args = (args,)
    # Like torch's default TrainingMode.EVAL: capture in eval mode, then restore.
    modes = [(m, m.training) for m in model.modules()] if hasattr(model, "modules") else []
    _exporting = True
    try:
        if modes:
            model.eval()
        ep = _capture(model, args, kwargs or {})
        sizes = _symbolic_sizes(model, args, kwargs or {}, ep, input_names,
                                dynamic_axes or {}, _capture)
    finally:
        _exporting = False
        for m, training in modes:
            m.training = training
    proto = build_model(ep, input_names, output_names, dynamic_axes or {}, opset, sizes)
    onnx.checker.check_model(proto)
    if isinstance(f, (str, os.PathLike)):
        onnx.save_model(proto, os.fspath(f))
    else:
        f.write(proto.SerializeToString())


def _symbolic_sizes(model: Any, args: tuple, kwargs: dict, ep: Any,
                    input_names: list[str] | None, dynamic_axes: dict,
                    capture: Any) -> Any:
    """The sizes ``ep``'s graph computes from dynamic input axes (see export's Notes),
    or None when no input axis is dynamic or the model cannot run at other sizes."""
    import warnings

    import ember
    from ember.compiler.capture import flatten, unflatten
    from ember.onnx._symbolic import SCALES, annotate, resized
    from ember.onnx._translate import _dim_param

    leaves: list = []
    spec = flatten((args, kwargs), leaves)
    user = list(ep.graph_signature.user_inputs)
    names = list(input_names or []) + user[len(input_names or []):]
    tensor_leaves = []
    for i, x in enumerate(leaves):
        if isinstance(x, ember.Tensor) and all(x is not leaves[j] for j in tensor_leaves):
            tensor_leaves.append(i)
    axes_of: dict[str, list[tuple[int, int]]] = {}   # symbol -> (leaf index, axis)
    base: dict[str, int] = {}
    for name, li in zip(names, tensor_leaves):
        spec_axes = dynamic_axes.get(name)
        if spec_axes is None:
            continue
        for ax in range(leaves[li].dim()):
            sym = _dim_param(spec_axes, name, ax)
            if sym:
                axes_of.setdefault(sym, []).append((li, ax))
                base.setdefault(sym, int(leaves[li].shape[ax]))
    if not axes_of:
        return None

    def run(sym: str, size_of: Any) -> Any:
        new = list(leaves)
        for li, ax in axes_of[sym]:
            new[li] = size_of(new[li], ax)
        a, kw = unflatten(spec, iter(new))
        return capture(model, a, kw)
    variants: dict[str, list] = {}
    for sym in axes_of:
        b = base[sym]
        # larger sizes (the inputs tiled) and one less as a check; where the model
        # refuses larger sizes (a fixed maximum length), smaller ones (inputs cut)
        plans = [[k * b for k in SCALES] + ([b - 1] if b > 1 else []),
                 [b - 1, b - 2, b - 3] if b > 3 else []]
        for sizes in plans:
            got = []
            for n in sizes:
                try:
                    got.append((n, run(sym, lambda x, ax, n=n: resized(x, ax, n))))
                except Exception:      # this size is refused: the next plan
                    break
            if len(got) >= 2:
                variants[sym] = got
                break
        else:
            warnings.warn(f"ember.onnx.export(): the model does not run with dynamic axis "
                          f"'{sym}' at other sizes than {b}; sizes it computes from that "
                          f"axis stay as in the example", UserWarning, stacklevel=3)
    return annotate(ep, variants, base) if variants else None
