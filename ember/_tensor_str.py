"""Printing tensors the way PyTorch does: ``tensor([[1., 2.]], dtype=ember.float64)``."""
from __future__ import annotations

import math

PRECISION = 4
THRESHOLD = 1000
EDGEITEMS = 3
LINEWIDTH = 80


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    """Set the print options used by ``repr(tensor)`` (as ``torch.set_printoptions``)."""
    global PRECISION, THRESHOLD, EDGEITEMS, LINEWIDTH
    if profile == "default":
        PRECISION, THRESHOLD, EDGEITEMS, LINEWIDTH = 4, 1000, 3, 80
    elif profile == "short":
        PRECISION, THRESHOLD, EDGEITEMS, LINEWIDTH = 2, 1000, 2, 80
    elif profile == "full":
        PRECISION, THRESHOLD, EDGEITEMS, LINEWIDTH = 4, math.inf, 3, 80
    if precision is not None:
        PRECISION = precision
    if threshold is not None:
        THRESHOLD = threshold
    if edgeitems is not None:
        EDGEITEMS = edgeitems
    if linewidth is not None:
        LINEWIDTH = linewidth


def _summarized(values, shape, summarize):
    """Nested lists with only the edge items kept along long dimensions (None = '...')."""
    if not shape:
        return values
    n = shape[0]
    if summarize and n > 2 * EDGEITEMS:
        idx = list(range(EDGEITEMS)) + [None] + list(range(n - EDGEITEMS, n))
    else:
        idx = list(range(n))
    return [None if i is None else _summarized(values[i], shape[1:], summarize) for i in idx]


def _flat(v, out):
    if isinstance(v, list):
        for x in v:
            _flat(x, out)
    elif v is not None:
        out.append(v)


class _Formatter:
    def __init__(self, values, is_float, is_bool):
        self.is_float = is_float
        self.is_bool = is_bool
        self.int_mode = True
        self.sci_mode = False
        self.width = 1
        if is_bool:
            self.width = max([len(str(v)) for v in values] or [1])
            return
        if not is_float:
            self.width = max([len(str(v)) for v in values] or [1])
            return
        finite = [abs(v) for v in values if math.isfinite(v)]
        self.int_mode = all(float(v).is_integer() for v in values if math.isfinite(v))
        nonzero = [v for v in finite if v != 0]
        if nonzero:
            mx, mn = max(nonzero), min(nonzero)
            if self.int_mode:
                self.sci_mode = mx / mn > 1000.0 or mx > 1e8
            else:
                self.sci_mode = mx / mn > 1000.0 or mx > 1e8 or mn < 1e-4
        self.width = max([len(self._fmt(v)) for v in values] or [1])

    def _fmt(self, v):
        if not self.is_float:
            return str(v)
        if not math.isfinite(v):
            return "nan" if v != v else ("inf" if v > 0 else "-inf")
        if self.sci_mode:
            return f"{v:.{PRECISION}e}"
        if self.int_mode:
            return f"{v:.0f}."
        return f"{v:.{PRECISION}f}"

    def format(self, v):
        return self._fmt(v).rjust(self.width)


class _ComplexFormatter:
    """torch's complex layout: the real and imaginary parts are formatted apart (each with
    its own int/sci mode), the real part right-aligned, the imaginary part signed."""

    def __init__(self, values):
        self.real = _Formatter([v.real for v in values], True, False)
        self.imag = _Formatter([v.imag for v in values], True, False)
        self.width = 1
        self.width = max([len(self._fmt(v)) for v in values] or [1])

    def _fmt(self, v):
        im = self.imag._fmt(v.imag) + "j"
        return self.real.format(v.real) + (im if im[0] in "+-" else "+" + im)

    def format(self, v):
        return self._fmt(v).rjust(self.width)


def _render(v, fmt, indent, ndim):
    if ndim == 0:
        return fmt.format(v)
    if ndim == 1:
        items = [" ..." if x is None else fmt.format(x) for x in v]
        per_line = max(1, (LINEWIDTH - indent) // (fmt.width + 2))
        lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    sep = "," + "\n" * (ndim - 1) + " " * (indent + 1)
    parts = ["..." if x is None else _render(x, fmt, indent + 1, ndim - 1) for x in v]
    return "[" + sep.join(parts) + "]"


def tensor_str(t) -> str:
    from ember._C import core

    shape = tuple(t.shape)
    dtype = t.dtype
    numel = t.numel()
    suffixes = []
    summarize = numel > THRESHOLD
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")
        body_t = t.to("cpu") if t.device.type != "meta" else None
    else:
        body_t = t
    if body_t is None:
        body = "..."
    elif numel == 0:
        body = "[]"
    else:
        vals = body_t.detach()
        if dtype in (core.float16, core.bfloat16):
            vals = vals.float()
        nested = vals.tolist()
        nested = _summarized(nested, shape, summarize)
        flat = []
        _flat(nested, flat)
        fmt = _ComplexFormatter(flat) if dtype.is_complex else \
            _Formatter(flat, dtype.is_floating_point, dtype is core.bool_)
        body = _render(nested, fmt, len("tensor("), len(shape))
    if numel == 0 and len(shape) != 1:
        suffixes.append(f"size={tuple(shape)}")
    if dtype not in (core._get_default_dtype(), core.int64, core.bool_,
                     core._get_default_dtype().to_complex()):
        suffixes.append(f"dtype={dtype!r}")
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{type(t.grad_fn).__name__}>" if not hasattr(
            t.grad_fn, "name") else f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    prefix = "tensor("
    out = prefix + body
    for s in suffixes:
        out += ", " + s
    return out + ")"
