"""Higher-level autograd: ``vjp``, ``jvp``, ``jacobian``, ``hessian``, ``hvp``, ``vhp``
(PyTorch's ``torch.autograd.functional``), built on ``ember.autograd.grad``.

Loaded on first access of ``ember.autograd.functional``."""
from __future__ import annotations

from ember._C.core import TensorBase, ones_like, zeros, zeros_like
from ember.autograd import grad as _grad
from ember.autograd.grad_mode import enable_grad

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


def _as_tuple(x, arg_name, fn_name):
    if isinstance(x, tuple):
        is_tuple = True
    elif isinstance(x, list):
        x, is_tuple = tuple(x), True
    else:
        x, is_tuple = (x,), False
    for i, el in enumerate(x):
        if not isinstance(el, TensorBase):
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a "
                            f"tuple of Tensors but the value at index {i} has type "
                            f"{type(el)}.")
    return is_tuple, x


def _tuple_postprocess(res, to_unpack):
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _prep_inputs(inputs, create_graph):
    res = []
    for x in inputs:
        if create_graph and x.requires_grad:
            res.append(x.view_as(x))        # keep the graph to the caller's inputs
        else:
            res.append(x.detach().requires_grad_(x.is_floating_point()))
    return tuple(res)


def _post(outs, create_graph):
    return tuple(o if (o is None or create_graph) else o.detach() for o in outs)


def _grads_or_zeros(grads, inputs, strict, what):
    res = []
    for i, (g, x) in enumerate(zip(grads, inputs)):
        if g is None:
            if strict:
                raise RuntimeError(f"The output of the user-provided function is independent "
                                   f"of input {i}. This is not allowed in strict mode.")
            g = zeros_like(x)
        res.append(g)
    return tuple(res)


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    outs, gos = [], []
    grad_outputs = grad_outputs or (None,) * len(outputs)
    for o, g in zip(outputs, grad_outputs):
        if o is not None and o.requires_grad:
            outs.append(o)
            gos.append(g)
    if not outs:
        return (None,) * len(inputs)
    return _grad(outs, inputs, gos, retain_graph=retain_graph, create_graph=create_graph,
                 allow_unused=True)


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J)."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _prep_inputs(inputs, create_graph)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function",
                                              "vjp")
        if v is not None:
            _, v = _as_tuple(v, "v", "vjp")
            if len(v) != len(outputs):
                raise RuntimeError(f"v has invalid size: should be {len(outputs)} but got "
                                   f"{len(v)}")
        else:
            if len(outputs) != 1 or outputs[0].numel() != 1:
                raise RuntimeError("The vector v can only be None if the user-provided "
                                   "function returns a single Tensor with a single element.")
            v = (ones_like(outputs[0]),)
        grads = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        vjp_ = _grads_or_zeros(grads, inputs, strict, "vjp")
    return (_tuple_postprocess(_post(outputs, create_graph), is_outputs_tuple),
            _tuple_postprocess(_post(vjp_, create_graph), is_inputs_tuple))


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v), by the double-vjp trick."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _prep_inputs(inputs, create_graph)
        if v is not None:
            _, v = _as_tuple(v, "v", "jvp")
            if len(v) != len(inputs):
                raise RuntimeError(f"v has invalid size: should be {len(inputs)} but got "
                                   f"{len(v)}")
        else:
            if len(inputs) != 1 or inputs[0].numel() != 1:
                raise RuntimeError("The vector v can only be None if the input to the "
                                   "user-provided function is a single Tensor with a single "
                                   "element.")
            v = (ones_like(inputs[0]),)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function",
                                              "jvp")
        grad_outputs = tuple(zeros_like(o).requires_grad_(True) for o in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        gi = [(g, vv) for g, vv in zip(grad_inputs, v) if g is not None and g.requires_grad]
        if gi:
            res = _grad([g for g, _ in gi], list(grad_outputs), [vv for _, vv in gi],
                        create_graph=create_graph, allow_unused=True)
        else:
            res = (None,) * len(outputs)
        jvp_ = []
        for i, (r, o) in enumerate(zip(res, outputs)):
            if r is None:
                if strict:
                    raise RuntimeError(f"The output of the user-provided function is "
                                       f"independent of input {i}. This is not allowed in "
                                       f"strict mode.")
                r = zeros_like(o)
            jvp_.append(r)
    return (_tuple_postprocess(_post(outputs, create_graph), is_outputs_tuple),
            _tuple_postprocess(_post(tuple(jvp_), create_graph), is_outputs_tuple))


def _assemble(rows, out_shape, in_shape, dtype):
    """Stack per-output-element gradient rows into a tensor of shape out + in,
    differentiably (rows may carry a graph under create_graph)."""
    import ember
    shape = tuple(out_shape) + tuple(in_shape)
    if not rows:
        return zeros(shape, dtype=dtype)
    stack = getattr(ember, "stack", None)
    if stack is not None:
        return stack(rows, 0).reshape(shape)
    n = len(rows)
    inner = tuple(in_shape)
    if not any(r.requires_grad for r in rows):
        res = zeros((n,) + inner, dtype=dtype)
        for k, r in enumerate(rows):
            res.select(0, k).copy_(r)
        return res.reshape(shape)
    # differentiable: sum_k onehot_k (x) row_k
    res = None
    for k, r in enumerate(rows):
        e = zeros((n,) + (1,) * len(inner), dtype=dtype)
        e.select(0, k).fill_(1.0)
        term = e * r.unsqueeze(0)
        res = term if res is None else res + term
    return res.reshape(shape)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: for output i and input j a tensor of shape
    ``outputs[i].shape + inputs[j].shape`` (tuples are unpacked like PyTorch)."""
    if strategy not in ("reverse-mode", "forward-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode".')
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _prep_inputs(inputs, create_graph)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function",
                                              "jacobian")
        jac = []
        for i, out in enumerate(outputs):
            rows = [[] for _ in inputs]
            flat = out.reshape(-1)
            for k in range(out.numel()):
                gs = _autograd_grad((flat.select(0, k),), inputs, retain_graph=True,
                                    create_graph=create_graph)
                for j, (g, x) in enumerate(zip(gs, inputs)):
                    if g is None:
                        if strict:
                            raise RuntimeError(f"Output {i} of the user-provided function is "
                                               f"independent of input {j}. This is not "
                                               f"allowed in strict mode.")
                        g = zeros_like(x)
                    rows[j].append(g)
            jac.append(tuple(_assemble(rows[j], out.shape, x.shape, x.dtype)
                             for j, x in enumerate(inputs)))
        jac = tuple(tuple(t if create_graph else t.detach() for t in row) for row in jac)
    return _tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar function ``func`` at ``inputs``."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")

    def ensure_single_output(*inp):
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function",
                                        "hessian")
        if is_out_tuple or not isinstance(out, TensorBase):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should "
                               "contain a single element")
        return out.squeeze()

    def jac_func(*inp):
        jac = jacobian(ensure_single_output, inp, create_graph=True, strict=strict)
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict)
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H)."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vhp")
        inputs = _prep_inputs(inputs, create_graph)
        _, v = _as_tuple(v, "v", "vhp") if v is not None else (False, None)
        outputs = func(*inputs)
        _, outs = _as_tuple(outputs, "outputs of the user-provided function", "vhp")
        if len(outs) != 1 or outs[0].numel() != 1:
            raise RuntimeError("The function given to vhp should return a single Tensor with "
                               "a single element")
        jac = _autograd_grad(outs, inputs, create_graph=True)
        jac = _grads_or_zeros(jac, inputs, strict, "vhp")
        if v is None:
            v = tuple(ones_like(x) for x in inputs)
        pairs = [(j, vv) for j, vv in zip(jac, v) if j.requires_grad]
        res = _grad([j for j, _ in pairs], list(inputs), [vv for _, vv in pairs],
                    create_graph=create_graph, allow_unused=True) if pairs else \
            (None,) * len(inputs)
        res = _grads_or_zeros(res, inputs, strict, "vhp")
    return (_post(outs, create_graph)[0], _tuple_postprocess(_post(res, create_graph),
                                                             is_inputs_tuple))


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v); the Hessian is symmetric, so this equals vhp."""
    return vhp(func, inputs, v, create_graph, strict)
