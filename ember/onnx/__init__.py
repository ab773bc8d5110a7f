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
    (no causal flag); tensors built inside ``forward`` from constants become
    initializers.  A dynamic axis is followed through reshapes that merge it
    with other dims (``batch * heads``); sizes the model computes itself from
    an input's shape (an ``expand`` to the batch size) stay as in the example.
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
    finally:
        _exporting = False
        for m, training in modes:
            m.training = training
    proto = build_model(ep, input_names, output_names, dynamic_axes or {}, opset)
    onnx.checker.check_model(proto)
    if isinstance(f, (str, os.PathLike)):
        onnx.save_model(proto, os.fspath(f))
    else:
        f.write(proto.SerializeToString())
