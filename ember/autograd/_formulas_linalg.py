"""Backward formulas for the ops in ember/_C/linalg.pyx.

Convention (adapt to the autograd engine's if it differs): core.record(name,
inputs, output, attrs) is called by the op; FORMULAS[name](grad, inputs,
output, attrs) returns one gradient per input (None where not needed or the
input does not require grad).  Formulas use only ember's public tensor API
and the linalg entry points, so they are differentiable themselves."""
from ember.autograd._table import formula


def _L():
    from ember._C import linalg
    return linalg


def _rg(t):
    return t is not None and getattr(t, "requires_grad", False)


def _sum_to(g, shape):
    """reduce a broadcast gradient back to `shape`"""
    shape = tuple(shape)
    if tuple(g.shape) == shape:
        return g
    lead = g.ndim - len(shape)
    if lead > 0:
        g = g.sum(dim=tuple(range(lead)))
    dims = tuple(i for i, s in enumerate(shape) if s == 1 and g.shape[i] != 1)
    if dims:
        g = g.sum(dim=dims, keepdim=True)
    return g.reshape(shape)


def _mm(grad, inputs, out, attrs):
    a, b = inputs
    L = _L()
    return (L.mm(grad, b.t()) if _rg(a) else None, L.mm(a.t(), grad) if _rg(b) else None)


def _bmm(grad, inputs, out, attrs):
    a, b = inputs
    L = _L()
    return (L.bmm(grad, b.transpose(1, 2)) if _rg(a) else None,
            L.bmm(a.transpose(1, 2), grad) if _rg(b) else None)


def _matmul(grad, inputs, out, attrs):
    a, b = inputs
    L = _L()
    a2 = a.unsqueeze(0) if a.ndim == 1 else a
    b2 = b.unsqueeze(-1) if b.ndim == 1 else b
    g = grad
    if a.ndim == 1:
        g = g.unsqueeze(-2)
    if b.ndim == 1:
        g = g.unsqueeze(-1)
    ga = gb = None
    if _rg(a):
        ga = _sum_to(L.matmul(g, b2.transpose(-1, -2)), a2.shape).reshape(a.shape)
    if _rg(b):
        gb = _sum_to(L.matmul(a2.transpose(-1, -2), g), b2.shape).reshape(b.shape)
    return ga, gb


def _addmm(grad, inputs, out, attrs):
    i, a, b = inputs
    L = _L()
    beta, alpha = attrs["beta"], attrs["alpha"]
    return (_sum_to(grad * beta, i.shape) if _rg(i) else None,
            L.mm(grad, b.t()) * alpha if _rg(a) else None,
            L.mm(a.t(), grad) * alpha if _rg(b) else None)


def _baddbmm(grad, inputs, out, attrs):
    i, a, b = inputs
    L = _L()
    beta, alpha = attrs["beta"], attrs["alpha"]
    return (_sum_to(grad * beta, i.shape) if _rg(i) else None,
            L.bmm(grad, b.transpose(1, 2)) * alpha if _rg(a) else None,
            L.bmm(a.transpose(1, 2), grad) * alpha if _rg(b) else None)


def _addmv(grad, inputs, out, attrs):
    i, a, v = inputs
    L = _L()
    beta, alpha = attrs["beta"], attrs["alpha"]
    return (_sum_to(grad * beta, i.shape) if _rg(i) else None,
            L.outer(grad, v) * alpha if _rg(a) else None,
            L.mv(a.t(), grad) * alpha if _rg(v) else None)


def _mv(grad, inputs, out, attrs):
    a, v = inputs
    L = _L()
    return (L.outer(grad, v) if _rg(a) else None, L.mv(a.t(), grad) if _rg(v) else None)


def _dot(grad, inputs, out, attrs):
    a, b = inputs
    return (b * grad if _rg(a) else None, a * grad if _rg(b) else None)


def _outer(grad, inputs, out, attrs):
    a, b = inputs
    L = _L()
    return (L.mv(grad, b) if _rg(a) else None, L.mv(grad.t(), a) if _rg(b) else None)


def _linear(grad, inputs, out, attrs):
    x, w = inputs[0], inputs[1]
    bias = inputs[2] if len(inputs) > 2 else None
    L = _L()
    g2 = grad.reshape(-1, w.shape[0]) if w.ndim == 2 else grad.reshape(-1, 1)
    x2 = x.reshape(-1, x.shape[-1])
    w2 = w if w.ndim == 2 else w.unsqueeze(0)
    gx = L.mm(g2, w2).reshape(x.shape) if _rg(x) else None
    gw = L.mm(g2.t(), x2).reshape(w.shape) if _rg(w) else None
    gb = _sum_to(grad, bias.shape) if _rg(bias) else None
    return (gx, gw) if bias is None else (gx, gw, gb)


def _conv(nd):
    def f(grad, inputs, out, attrs):
        x, w = inputs[0], inputs[1]
        bias = inputs[2] if len(inputs) > 2 else None
        L = _L()
        kw = dict(stride=attrs["stride"], padding=attrs["padding"],
                  dilation=attrs["dilation"], groups=attrs["groups"])
        if _rg(x) and (_rg(w) or _rg(bias)):
            grad = grad.contiguous()  # both kernels need it so: copy an expanded grad once
        gx = L.conv2d_input_grad(tuple(x.shape), w, grad, **kw) if _rg(x) else None
        gw = gb = None
        if _rg(w) or _rg(bias):
            gw, gb = L.conv2d_weight_grad(x, tuple(w.shape), grad, bias_grad=True, **kw)
        return (gx, gw) if bias is None else (gx, gw, gb)
    return f


def _conv_transpose(grad, inputs, out, attrs):
    # y = conv_transpose(x, w) is conv2d's input-grad with (x as grad_output):
    #   dx = conv2d(grad, w), dw = conv2d_weight_grad(grad, w.shape, x)
    x, w = inputs[0], inputs[1]
    bias = inputs[2] if len(inputs) > 2 else None
    L = _L()
    kw = dict(stride=attrs["stride"], padding=attrs["padding"], dilation=attrs["dilation"],
              groups=attrs["groups"])
    conv = L.conv2d if w.ndim == 4 else L.conv1d
    gx = conv(grad, w, None, **kw) if _rg(x) else None
    gw = L.conv2d_weight_grad(grad, tuple(w.shape), x, **kw) if _rg(w) else None
    gb = None
    if _rg(bias):
        dims = (0,) + tuple(range(2, grad.ndim)) if grad.ndim == w.ndim else \
            tuple(range(1, grad.ndim))
        gb = grad.sum(dim=dims)
    return (gx, gw) if bias is None else (gx, gw, gb)


def _max_pool(grad, inputs, out, attrs):
    (x,) = inputs
    return (_L().max_pool2d_backward(grad, x, attrs["indices"]),)


def _adaptive_max_pool(grad, inputs, out, attrs):
    (x,) = inputs
    return (_L().adaptive_max_pool2d_backward(grad, x, attrs["indices"]),)


def _avg_pool(grad, inputs, out, attrs):
    (x,) = inputs
    return (_L().avg_pool2d_backward(grad, x, attrs["kernel_size"], attrs["stride"],
                                     attrs["padding"], attrs["ceil_mode"],
                                     attrs["count_include_pad"], attrs["divisor_override"]),)


def _adaptive_avg_pool(grad, inputs, out, attrs):
    (x,) = inputs
    return (_L().adaptive_avg_pool2d_backward(grad, x),)


# unfold (im2col) and fold (col2im) are each other's gradient.  Neither reads the
# input's values (saves=False: later in-place changes to it are fine, as in PyTorch)
# and each returns exactly the input's shape and dtype.
@formula("im2col", node_name="Im2ColBackward0", exact=True, saves=False)
def _im2col(ctx, grad):
    a = ctx.attrs
    return (_L().fold(grad, a["input_size"], a["kernel_size"], a["dilation"], a["padding"],
                      a["stride"]),)


@formula("col2im", node_name="Col2ImBackward0", exact=True, saves=False)
def _col2im(ctx, grad):
    a = ctx.attrs
    return (_L().unfold(grad, a["kernel_size"], a["dilation"], a["padding"], a["stride"]),)


FORMULAS = {
    "mm": _mm, "bmm": _bmm, "matmul": _matmul, "addmm": _addmm, "baddbmm": _baddbmm,
    "addmv": _addmv, "mv": _mv, "dot": _dot, "outer": _outer, "linear": _linear,
    "conv2d": _conv(2), "conv1d": _conv(1),
    "conv_transpose2d": _conv_transpose, "conv_transpose1d": _conv_transpose,
    "max_pool2d": _max_pool, "adaptive_max_pool2d": _adaptive_max_pool,
    "avg_pool2d": _avg_pool, "adaptive_avg_pool2d": _adaptive_avg_pool,
}
